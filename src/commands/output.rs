//! `swarm output NAME [--follow]`: a pane's output, from the file its
//! backend appends it to, without attaching; with `--lines N` or `--json`
//! (or when swarm recorded none) the last lines as text, escapes
//! stripped ([`crate::ops::TeamOps::output`]).

use super::{Context, Exit, print_acted};
use crate::cli::OutputArgs;
use anyhow::{Context as _, Result, bail};
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

pub(super) fn output(ctx: &Context, args: OutputArgs) -> Result<Exit> {
    let ops = super::open::team_ops_here(ctx)?;
    let team = ops.team().clone();
    let path = ctx.root.output(&team.name, &args.name)?;
    if args.json || args.lines.is_some() || !path.exists() && !args.follow {
        // The last lines as text (escapes stripped), from the log or, when
        // swarm recorded none, the pane's screen.
        let lines = args.lines.unwrap_or(crate::ops::output::MAX_LINES);
        let out = crate::session::runtime()?.block_on(ops.output(&args.name, lines))?;
        if args.json {
            print_acted(serde_json::json!({ "name": args.name, "output": out }));
        } else {
            println!("{}", out.text);
        }
        return Ok(Exit::Ok);
    }
    if !path.exists() {
        // Followed before its pane printed anything: the member must exist.
        ops.member(&args.name)?;
        bail!(
            "no output recorded for {} yet ({})",
            args.name,
            path.display()
        );
    }
    let mut f =
        std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut offset = args.from_offset;
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut quiet_since: Option<Instant> = None;
    loop {
        f.seek(SeekFrom::Start(offset))?;
        let n = f.read(&mut buf)?;
        // A pane is a terminal: its output ends lines with CRLF. A `\r` at
        // the end of a read waits for the next one, so a CRLF split across
        // two reads still loses its CR.
        let (text, held) = lf_lines(&buf[..n]);
        if n > held {
            out.write_all(&text)?;
            out.flush()?;
            offset += (n - held) as u64;
            quiet_since = None;
            continue;
        }
        if !args.follow {
            // A lone `\r` held back at the very end is output too.
            if f.seek(SeekFrom::Start(offset))? < f.metadata()?.len() {
                out.write_all(b"\r")?;
            }
            return Ok(Exit::Ok);
        }
        // Stop following once the member is gone and its output drained.
        let gone = ops.member_gone(&args.name);
        let since = *quiet_since.get_or_insert_with(Instant::now);
        if gone && since.elapsed() > Duration::from_millis(500) {
            return Ok(Exit::Ok);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `bytes` with every CRLF turned into LF, and how many trailing bytes were
/// held back (1 when `bytes` ends in `\r`, whose `\n` may come next).
fn lf_lines(bytes: &[u8]) -> (Vec<u8>, usize) {
    let held = usize::from(bytes.last() == Some(&b'\r'));
    let body = &bytes[..bytes.len() - held];
    let mut out = Vec::with_capacity(body.len());
    for (i, &b) in body.iter().enumerate() {
        if b == b'\r' && body.get(i + 1) == Some(&b'\n') {
            continue;
        }
        out.push(b);
    }
    (out, held)
}

#[cfg(test)]
mod tests {
    use super::lf_lines;

    #[test]
    fn crlf_becomes_lf_and_a_trailing_cr_waits() {
        assert_eq!(lf_lines(b"a\r\nb\r\n"), (b"a\nb\n".to_vec(), 0));
        assert_eq!(lf_lines(b"50%\r60%\r\n"), (b"50%\r60%\n".to_vec(), 0));
        assert_eq!(lf_lines(b"a\r"), (b"a".to_vec(), 1));
        assert_eq!(lf_lines(b"\r"), (Vec::new(), 1));
    }
}
