//! Running one agent process for one unit of work: argv exec'd directly (no
//! shell built from strings), the given cwd and environment, stdout and
//! stderr streamed live to the pane (the runtime's own stdout) and captured
//! into a bounded tail, and an honest [`Ended`]: an exit code, a signal, or
//! "could not start".
//!
//! The child stays in the runtime's process group, so the lead's kill ladder
//! (which signals the pane's group) stops it with the runtime.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Most bytes of output kept (the tail).
pub const CAPTURE_BYTES: usize = 256 * 1024;

/// How long to wait for the output pipes to close after the child exited
/// (a background grandchild may hold them open forever).
const DRAIN_WAIT: Duration = Duration::from_millis(300);

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Exited normally with this code.
    Exit(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Never started (program missing, not executable, bad cwd).
    NotStarted(String),
}

impl Ended {
    pub fn success(&self) -> bool {
        *self == Ended::Exit(0)
    }

    /// The agent died or never ran: a crash, not a task that failed.
    pub fn is_crash(&self) -> bool {
        !matches!(self, Ended::Exit(_))
    }

    /// `exit 2`, `killed by signal 9`, `could not start: …`.
    pub fn describe(&self) -> String {
        match self {
            Ended::Exit(c) => format!("exit {c}"),
            Ended::Signal(s) => format!("killed by signal {s}"),
            Ended::NotStarted(why) => format!("could not start: {why}"),
        }
    }

    /// The exit code for task metadata (`128 + signal` for a signal, as a
    /// shell reports it; `127` when it never started).
    pub fn code(&self) -> i32 {
        match self {
            Ended::Exit(c) => *c,
            Ended::Signal(s) => 128 + s,
            Ended::NotStarted(_) => 127,
        }
    }
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct Finished {
    pub ended: Ended,
    /// The tail of stdout and stderr interleaved as they arrived, at most
    /// [`CAPTURE_BYTES`].
    pub output: String,
    /// Whether earlier output was dropped to keep the tail bounded.
    pub output_truncated: bool,
    pub elapsed: Duration,
}

/// One process to run.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub argv: Vec<String>,
    pub cwd: Option<std::path::PathBuf>,
    /// Added to (and overriding) the runtime's own environment.
    pub env: Vec<(String, String)>,
}

impl Invocation {
    pub fn new(argv: Vec<String>) -> Invocation {
        Invocation {
            argv,
            cwd: None,
            env: Vec::new(),
        }
    }

    fn command(&self) -> Option<Command> {
        let (prog, args) = self.argv.split_first()?;
        let mut c = Command::new(prog);
        c.args(args);
        if let Some(cwd) = &self.cwd {
            c.current_dir(cwd);
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        Some(c)
    }

    /// Runs to the end, streaming output to `pane` and capturing its tail.
    pub fn run_captured(&self, pane: Arc<Mutex<dyn Write + Send>>) -> Finished {
        let start = Instant::now();
        let Some(mut cmd) = self.command() else {
            return not_started("empty command".into(), start);
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                return not_started(spawn_error(&self.argv[0], self.cwd.as_deref(), &e), start);
            }
        };
        let tail = Arc::new(Mutex::new(Tail::default()));
        let (done_tx, done_rx) = mpsc::channel();
        let mut readers = 0;
        for pipe in [
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            readers += 1;
            let (tail, pane, done) = (tail.clone(), pane.clone(), done_tx.clone());
            std::thread::spawn(move || {
                pump(pipe, &tail, &pane);
                let _ = done.send(());
            });
        }
        let status = child.wait();
        let deadline = Instant::now() + DRAIN_WAIT;
        for _ in 0..readers {
            let left = deadline.saturating_duration_since(Instant::now());
            if done_rx.recv_timeout(left).is_err() {
                break;
            }
        }
        let ended = match status {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => Ended::Exit(c),
                (None, Some(sig)) => Ended::Signal(sig),
                (None, None) => Ended::NotStarted("no exit status".into()),
            },
            Err(e) => Ended::NotStarted(format!("waiting for the agent: {e}")),
        };
        let (output, output_truncated) = tail.lock().unwrap_or_else(|e| e.into_inner()).text();
        Finished {
            ended,
            output,
            output_truncated,
            elapsed: start.elapsed(),
        }
    }

    /// Runs with the pane's own terminal as stdin/stdout/stderr (an
    /// interactive agent such as Claude Code) and waits for it.
    pub fn run_attached(&self) -> Ended {
        let Some(mut cmd) = self.command() else {
            return Ended::NotStarted("empty command".into());
        };
        match cmd.status() {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => Ended::Exit(c),
                (None, Some(sig)) => Ended::Signal(sig),
                (None, None) => Ended::NotStarted("no exit status".into()),
            },
            Err(e) => Ended::NotStarted(spawn_error(&self.argv[0], self.cwd.as_deref(), &e)),
        }
    }
}

fn spawn_error(prog: &str, cwd: Option<&Path>, e: &std::io::Error) -> String {
    match (e.kind(), cwd) {
        (std::io::ErrorKind::NotFound, Some(cwd)) if !cwd.is_dir() => {
            format!("working directory {} does not exist", cwd.display())
        }
        (std::io::ErrorKind::NotFound, _) => format!("{prog:?} not found on PATH"),
        _ => format!("{prog:?}: {e}"),
    }
}

fn not_started(why: String, start: Instant) -> Finished {
    Finished {
        ended: Ended::NotStarted(why),
        output: String::new(),
        output_truncated: false,
        elapsed: start.elapsed(),
    }
}

fn pump(mut pipe: Box<dyn Read + Send>, tail: &Mutex<Tail>, pane: &Mutex<dyn Write + Send>) {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                {
                    let mut p = pane.lock().unwrap_or_else(|e| e.into_inner());
                    // The pane going away must not stop the capture.
                    let _ = p.write_all(&buf[..n]).and_then(|()| p.flush());
                }
                tail.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The last [`CAPTURE_BYTES`] bytes seen.
#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
    dropped: bool,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        while self.bytes.len() > CAPTURE_BYTES {
            let extra = self.bytes.len() - CAPTURE_BYTES;
            self.bytes.drain(..extra);
            self.dropped = true;
        }
    }

    fn text(&self) -> (String, bool) {
        let v: Vec<u8> = self.bytes.iter().copied().collect();
        (String::from_utf8_lossy(&v).into_owned(), self.dropped)
    }
}

/// The last `max_bytes` of `text` (cut on a char boundary), and whether it
/// was cut.
pub fn tail_of(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    (&text[start..], true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink() -> Arc<Mutex<dyn Write + Send>> {
        Arc::new(Mutex::new(Vec::<u8>::new()))
    }

    fn sh(script: &str) -> Invocation {
        Invocation::new(vec!["sh".into(), "-c".into(), script.into()])
    }

    #[test]
    fn output_is_streamed_and_captured_and_the_exit_code_kept() {
        let pane: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(Vec::new()));
        let f = sh("echo out; echo err >&2; exit 3").run_captured(pane.clone());
        assert_eq!(f.ended, Ended::Exit(3));
        assert!(
            f.output.contains("out\n") && f.output.contains("err\n"),
            "{f:?}"
        );
        let shown = String::from_utf8(pane.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("out") && shown.contains("err"), "{shown:?}");
    }

    #[test]
    fn a_signal_and_a_missing_program_are_crashes_not_exit_codes() {
        let f = sh("kill -9 $$").run_captured(sink());
        assert_eq!(f.ended, Ended::Signal(9));
        assert!(f.ended.is_crash());
        let f = Invocation::new(vec!["/nonexistent/agent".into()]).run_captured(sink());
        assert!(
            matches!(f.ended, Ended::NotStarted(ref w) if w.contains("not found")),
            "{f:?}"
        );
    }

    #[test]
    fn the_capture_keeps_a_bounded_tail() {
        let f = sh("head -c 600000 /dev/zero | tr '\\0' a; echo END").run_captured(sink());
        assert!(f.output_truncated);
        assert_eq!(f.output.len(), CAPTURE_BYTES);
        assert!(f.output.ends_with("END\n"));
    }

    #[test]
    fn a_background_grandchild_holding_the_pipe_does_not_hang_the_run() {
        let f = sh("sleep 5 & echo started").run_captured(sink());
        assert_eq!(f.ended, Ended::Exit(0));
        assert!(f.elapsed < Duration::from_secs(3), "{:?}", f.elapsed);
    }

    #[test]
    fn tail_of_cuts_on_a_char_boundary() {
        assert_eq!(tail_of("héllo", 4), ("llo", true));
        assert_eq!(tail_of("abc", 10), ("abc", false));
    }
}
