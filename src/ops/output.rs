//! What a teammate's pane printed, as text: the tail of the output log its
//! backend appends to, or (when swarm recorded none, as for a pane another
//! tool opened) the pane's screen as the backend captures it; terminal
//! escapes stripped either way, so nothing read reaches a terminal or a
//! model as a control sequence.

use super::TeamOps;
use anyhow::{Result, bail};
use serde::Serialize;
use std::io::{Read, Seek, SeekFrom};

/// The most lines [`TeamOps::output`] returns.
pub const MAX_LINES: usize = 1000;

/// A teammate's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Output {
    pub text: String,
    /// Where it came from: `log` (swarm's record of the pane) or `screen`
    /// (the pane as it shows now).
    pub source: &'static str,
}

/// Bytes read from the end of a log per line asked for.
const BYTES_PER_LINE: u64 = 512;

/// The last `lines` lines of `bytes`, escapes stripped, carriage returns'
/// overwrites applied, trailing blank lines dropped.
pub fn last_lines(bytes: &[u8], lines: usize) -> String {
    let text = crate::team::status::strip_escapes(&String::from_utf8_lossy(bytes));
    let mut all: Vec<&str> = text
        .split('\n')
        .map(|l| {
            let l = l.trim_end_matches('\r');
            l.rsplit('\r').next().unwrap_or(l).trim_end()
        })
        .collect();
    while all.last().is_some_and(|l| l.is_empty()) {
        all.pop();
    }
    let from = all.len().saturating_sub(lines);
    all[from..].join("\n")
}

impl TeamOps {
    /// The last `lines` (at most [`MAX_LINES`]) lines `name`'s pane printed.
    pub async fn output(&self, name: &str, lines: usize) -> Result<Output> {
        let lines = lines.clamp(1, MAX_LINES);
        let team = self.team().clone();
        let m = self.member(name)?;
        let path = team.root.output(&team.name, name)?;
        if let Some(bytes) = tail(&path, lines as u64 * BYTES_PER_LINE)? {
            return Ok(Output {
                text: last_lines(&bytes, lines),
                source: "log",
            });
        }
        // No log: the pane's screen, when the backend can show it.
        let pane = crate::session::member_pane(&m);
        if let (Some(pane), Some(session)) = (pane, self.session_if_reachable())
            && let Some(text) = session.backend.pane_text()
        {
            let screen = text.capture(&pane.id).await?;
            return Ok(Output {
                text: last_lines(screen.as_bytes(), lines),
                source: "screen",
            });
        }
        bail!(
            "no output recorded for {name} yet ({}), and its pane cannot be read from here",
            path.display()
        )
    }
}

/// The last `max` bytes of the file at `path`, `None` when it does not exist.
fn tail(path: &std::path::Path, max: u64) -> Result<Option<Vec<u8>>> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let len = f.metadata()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(max)))?;
    let mut out = Vec::new();
    f.take(max).read_to_end(&mut out)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::last_lines;

    #[test]
    fn the_last_lines_come_without_escapes_or_overwritten_text() {
        let log = b"one\r\n\x1b[31mtwo\x1b[0m\r\n 10%\r 90%\r\n\x1b]0;t\x07three\r\n\r\n";
        assert_eq!(last_lines(log, 10), "one\ntwo\n 90%\nthree");
        assert_eq!(last_lines(log, 2), " 90%\nthree");
    }
}
