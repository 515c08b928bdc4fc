//! Running a program as argv, never through a shell: swarm's one
//! child-process runner. The backends' multiplexer CLIs (tmux, `it2`,
//! `osascript`, `wt`, `tasklist`) run through [`Invocation`] here, git
//! through it in `swarm::worktree`, and an agent's unit of work through
//! [`Running`] in `swarm::agents::process`, which streams its output to the
//! pane as it comes.
//!
//! Each output pipe is drained by a thread of its own, so a full pipe never
//! stalls the child, and once the child exited its pipes are waited for at
//! most [`DRAIN_WAIT`]: a grandchild that keeps them open (a background job
//! of an agent's shell) never holds the run, and an answer cut short that
//! way is an error ([`BackendError::OutputHeld`]), never taken for the whole
//! answer. A timeout kills the child; a failure keeps the program, its argv
//! and its stderr in the error. The wait for the child's exit blocks in a
//! thread of its own (`waitid` without reaping, so the child can still be
//! killed by its pid); an async caller runs the whole call on tokio's
//! blocking pool, and a call it drops kills the child, as
//! `tokio::process`'s `kill_on_drop` did.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{BackendError, Result};

/// The suite's one timeout knob (`SWARM_TEST_TIMEOUT_SCALE`, or x3 on CI),
/// included from the integration tests' util/ as the contract suite
/// includes it.
#[cfg(test)]
#[allow(dead_code)]
#[path = "../../tests/util/timeouts.rs"]
pub(crate) mod timeouts;

/// The default timeout for one call of a multiplexer CLI.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a run waits for the output pipes to close after the child
/// exited (a background grandchild may hold them open forever).
pub const DRAIN_WAIT: Duration = Duration::from_millis(300);

/// Which output pipe bytes came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// What a running child's output pipes are given to, chunk by chunk, from
/// the threads that drain them.
pub type Sink = Arc<dyn Fn(Stream, &[u8]) + Send + Sync>;

/// How waiting for a child ended.
#[derive(Debug)]
pub enum Waited {
    /// It exited (or was killed by a signal) on its own.
    Exited(ExitStatus),
    /// The timeout passed first: it was killed and reaped.
    TimedOut,
    /// The run was cancelled ([`Cancel`]): it was killed and reaped.
    Cancelled,
}

/// Cancels a [`Running::wait`] from another thread: the child is killed.
#[derive(Clone, Debug)]
pub struct Cancel {
    tx: mpsc::Sender<Event>,
}

impl Cancel {
    pub fn cancel(&self) {
        // The run may be over: nobody to tell then.
        let _ = self.tx.send(Event::Cancelled);
    }
}

/// What the waiting side of a run hears.
#[derive(Debug)]
enum Event {
    Exited,
    Cancelled,
}

/// A started child whose output pipes are being drained.
pub struct Running {
    child: std::process::Child,
    /// How many pumps run, and where each says it ended (`true`: its pipe
    /// was read to its end).
    pumps: usize,
    pumped: mpsc::Receiver<bool>,
    events: (mpsc::Sender<Event>, mpsc::Receiver<Event>),
}

impl Running {
    /// Starts `cmd` with its stdout and stderr piped (its stdin is the
    /// caller's choice); `sink` gets each pipe's bytes as they come.
    pub fn start(cmd: &mut Command, sink: Sink) -> std::io::Result<Running> {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
        let (done, pumped) = mpsc::channel();
        let mut pumps = 0;
        let pipes: [(Stream, Option<Box<dyn Read + Send>>); 2] = [
            (
                Stream::Stdout,
                child
                    .stdout
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
            ),
            (
                Stream::Stderr,
                child
                    .stderr
                    .take()
                    .map(|p| Box::new(p) as Box<dyn Read + Send>),
            ),
        ];
        for (stream, pipe) in pipes {
            let Some(pipe) = pipe else { continue };
            let (sink, done) = (sink.clone(), done.clone());
            let started = std::thread::Builder::new()
                .name("output-pump".into())
                .spawn(move || {
                    let whole = pump(pipe, stream, &*sink);
                    // The receiver may have stopped waiting (its drain
                    // time passed).
                    let _ = done.send(whole);
                });
            match started {
                Ok(_) => pumps += 1,
                Err(e) => {
                    kill_and_reap(&mut child);
                    return Err(e);
                }
            }
        }
        Ok(Running {
            child,
            pumps,
            pumped,
            events: mpsc::channel(),
        })
    }

    /// The child's pid.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// What cancels this run's [`Running::wait`].
    pub fn canceller(&self) -> Cancel {
        Cancel {
            tx: self.events.0.clone(),
        }
    }

    /// Waits for the child to exit. With a `timeout`, or when the run is
    /// `cancellable` (by its [`Running::canceller`]), the child is killed
    /// and reaped when the time passes or the run is cancelled first.
    pub fn wait(
        &mut self,
        timeout: Option<Duration>,
        cancellable: bool,
    ) -> std::io::Result<Waited> {
        if timeout.is_none() && !cancellable {
            return self.child.wait().map(Waited::Exited);
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let event = self.next_event(deadline)?;
        match event {
            Some(Event::Exited) => self.child.wait().map(Waited::Exited),
            Some(Event::Cancelled) => {
                kill_and_reap(&mut self.child);
                Ok(Waited::Cancelled)
            }
            None => {
                kill_and_reap(&mut self.child);
                Ok(Waited::TimedOut)
            }
        }
    }

    /// The child's exit or a cancellation, whichever comes first; `None`
    /// at `deadline`. The exit is awaited in a thread of its own that
    /// leaves the child unreaped (`waitid` with `WNOWAIT`), so that until
    /// this run reaps it, its pid is its own to kill.
    #[cfg(unix)]
    fn next_event(&mut self, deadline: Option<Instant>) -> std::io::Result<Option<Event>> {
        let pid = self.child.id();
        let tx = self.events.0.clone();
        std::thread::Builder::new()
            .name("child-wait".into())
            .spawn(move || {
                exited(pid);
                // The run may be over (killed): nobody to tell then.
                let _ = tx.send(Event::Exited);
            })?;
        Ok(match deadline {
            Some(d) => match self
                .events
                .1
                .recv_timeout(d.saturating_duration_since(Instant::now()))
            {
                Ok(e) => Some(e),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(Event::Exited),
            },
            None => Some(self.events.1.recv().unwrap_or(Event::Exited)),
        })
    }

    /// Without `waitid`: the exit is polled for every 5 ms.
    #[cfg(not(unix))]
    fn next_event(&mut self, deadline: Option<Instant>) -> std::io::Result<Option<Event>> {
        loop {
            if self.child.try_wait()?.is_some() {
                return Ok(Some(Event::Exited));
            }
            if let Ok(e) = self.events.1.try_recv() {
                return Ok(Some(e));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits at most `within` for the output pipes to end; true when every
    /// pipe was read to its end.
    pub fn drain(self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        let mut whole = true;
        for _ in 0..self.pumps {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.pumped.recv_timeout(left) {
                Ok(w) => whole &= w,
                Err(_) => return false,
            }
        }
        whole
    }
}

/// Kills `child` and reaps it. Either may fail only because it already
/// ended, which is what is wanted.
fn kill_and_reap(child: &mut std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Copies a pipe to `sink` until its end; false when reading failed.
fn pump(
    mut pipe: Box<dyn Read + Send>,
    stream: Stream,
    sink: &(dyn Fn(Stream, &[u8]) + Send + Sync),
) -> bool {
    let mut buf = [0u8; 8192];
    loop {
        match pipe.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) => sink(stream, &buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Blocks until child `pid` has exited, without reaping it (`waitid` with
/// `WNOWAIT`), so its pid stays its own until the runner reaps it; returns
/// at once once it is reaped or is not a child of this process.
#[cfg(unix)]
fn exited(pid: u32) {
    let id = libc::id_t::from(pid);
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-parameter for waitid,
        // which writes into it and reads nothing from it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid on one pid with a valid siginfo_t pointer; WNOWAIT
        // leaves the child to be reaped by its owner.
        let r = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// One external program call: program, argv, working directory,
/// environment edits, standard input and timeout.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    /// The working directory; `None`: the caller's.
    pub cwd: Option<PathBuf>,
    /// Variables set for the call, over the inherited environment.
    pub env: Vec<(String, String)>,
    /// Variables removed from the inherited environment of the call.
    pub env_remove: Vec<String>,
    pub timeout: Duration,
}

/// What a finished program printed and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
}

impl Output {
    /// True when the program exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl Invocation {
    /// A call of `program` with `args` and the default timeout.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            program: program.into(),
            args,
            cwd: None,
            env: Vec::new(),
            env_remove: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The command this invocation runs, stdin from `/dev/null`.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).stdin(Stdio::null());
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        for key in &self.env_remove {
            cmd.env_remove(key);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs the program in this thread and returns its output whatever
    /// its exit status.
    pub fn output_blocking(&self) -> Result<Output> {
        self.output_until(None)
    }

    /// [`Invocation::output_blocking`], killed early once `cancel` (when
    /// given) is told to.
    fn output_until(&self, cancel: Option<&Mutex<Slot>>) -> Result<Output> {
        let launch = |source| BackendError::Launch {
            program: self.program.clone(),
            argv: self.args.clone(),
            source,
        };
        let out = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        let sink: Sink = {
            let out = out.clone();
            Arc::new(move |stream, bytes| {
                let mut o = out.lock().unwrap_or_else(PoisonError::into_inner);
                match stream {
                    Stream::Stdout => o.0.extend_from_slice(bytes),
                    Stream::Stderr => o.1.extend_from_slice(bytes),
                }
            })
        };
        let mut running = Running::start(&mut self.command(), sink).map_err(launch)?;
        if let Some(slot) = cancel {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            let canceller = running.canceller();
            if matches!(*slot, Slot::Dropped) {
                canceller.cancel();
            }
            *slot = Slot::Running(canceller);
        }
        let status = match running
            .wait(Some(self.timeout), cancel.is_some())
            .map_err(launch)?
        {
            Waited::Exited(status) => status,
            Waited::TimedOut | Waited::Cancelled => {
                return Err(BackendError::Timeout {
                    program: self.program.clone(),
                    argv: self.args.clone(),
                    after: self.timeout,
                });
            }
        };
        if !running.drain(DRAIN_WAIT) {
            return Err(BackendError::OutputHeld {
                program: self.program.clone(),
                argv: self.args.clone(),
                within: DRAIN_WAIT,
            });
        }
        let (stdout, stderr) =
            std::mem::take(&mut *out.lock().unwrap_or_else(PoisonError::into_inner));
        Ok(Output {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            code: status.code(),
        })
    }

    /// Runs the program on tokio's blocking pool and returns its output
    /// whatever its exit status. Dropping the call kills the program.
    pub async fn output(&self) -> Result<Output> {
        let slot = Arc::new(Mutex::new(Slot::Starting));
        let mut guard = CancelOnDrop {
            slot: slot.clone(),
            armed: true,
        };
        let inv = self.clone();
        let joined = tokio::task::spawn_blocking(move || inv.output_until(Some(&slot))).await;
        guard.armed = false;
        joined.unwrap_or_else(|e| {
            Err(BackendError::Launch {
                program: self.program.clone(),
                argv: self.args.clone(),
                source: std::io::Error::other(format!("the call's thread failed: {e}")),
            })
        })
    }

    /// Runs the program; a non-zero exit is an error carrying stderr.
    pub async fn run(&self) -> Result<Output> {
        let out = self.output().await?;
        if out.success() {
            Ok(out)
        } else {
            Err(self.failed(&out))
        }
    }

    /// The error describing a failed run of this invocation.
    pub fn failed(&self, out: &Output) -> BackendError {
        BackendError::CommandFailed {
            program: self.program.clone(),
            argv: self.args.clone(),
            status: match out.code {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_string(),
            },
            stderr: out.stderr.trim().to_string(),
        }
    }
}

/// Where an [`Invocation::output`] on the blocking pool and its caller
/// meet, so that a call dropped before its run started still kills it.
enum Slot {
    Starting,
    Running(Cancel),
    Dropped,
}

/// Kills the run of an [`Invocation::output`] whose caller dropped it
/// (while `armed`: until the run came back).
struct CancelOnDrop {
    slot: Arc<Mutex<Slot>>,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slot {
            Slot::Running(c) => c.cancel(),
            Slot::Starting => *slot = Slot::Dropped,
            Slot::Dropped => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failure_keeps_argv_and_stderr() {
        let inv = Invocation::new("sh", vec!["-c".into(), "echo oops >&2; exit 3".into()]);
        let err = inv.run().await.unwrap_err().to_string();
        assert!(err.contains("exit code 3"), "{err}");
        assert!(err.contains("oops"), "{err}");
        assert!(err.contains("echo oops"), "{err}");
    }

    #[tokio::test]
    async fn a_slow_program_times_out() {
        let mut inv = Invocation::new("sleep", vec!["5".into()]);
        inv.timeout = Duration::from_millis(100);
        let err = inv.run().await.unwrap_err();
        assert!(matches!(err, BackendError::Timeout { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_launch_error() {
        let inv = Invocation::new("/nonexistent/swarm-no-such-tool", vec![]);
        assert!(matches!(inv.run().await, Err(BackendError::Launch { .. })));
    }

    #[test]
    fn the_working_directory_and_environment_are_the_calls() {
        let dir = tempfile::tempdir().unwrap();
        let mut inv = Invocation::new("sh", vec!["-c".into(), "pwd; echo \"$SWARM_X\"".into()]);
        inv.cwd = Some(dir.path().to_path_buf());
        inv.env = vec![("SWARM_X".into(), "set for the call".into())];
        let out = inv.output_blocking().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            out.stdout,
            format!("{}\nset for the call\n", real.display())
        );
        assert!(out.success());
    }

    /// The pid a shell wrote to `file`, once it did.
    fn pid_in(file: &std::path::Path) -> u32 {
        let deadline = timeouts::Deadline::after(timeouts::WAIT);
        loop {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return pid;
            }
            assert!(
                !deadline.passed(),
                "no pid in {} {deadline}",
                file.display()
            );
            std::thread::sleep(timeouts::FIRST_PAUSE);
        }
    }

    /// The grandchild holds the output pipes until the test ends it, after
    /// the call returned: the call can only return by giving up on them.
    #[test]
    fn a_grandchild_holding_the_output_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let script = format!("sleep 600 & echo $! > '{}'; echo partial", file.display());
        let inv = Invocation::new("sh", vec!["-c".into(), script]);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || tx.send(inv.output_blocking()));
        let grandchild = pid_in(&file);
        let budget = timeouts::scaled(timeouts::WAIT);
        let got = rx.recv_timeout(budget);
        crate::process::signal_process(grandchild as i32, crate::process::SIGKILL).unwrap();
        let got = got.unwrap_or_else(|_| panic!("the call waited {budget:?} for a held pipe"));
        assert!(
            matches!(got, Err(BackendError::OutputHeld { .. })),
            "{got:?}"
        );
    }

    #[tokio::test]
    async fn a_call_dropped_by_its_caller_kills_its_program() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pid");
        let script = format!("echo $$ > '{}'; exec sleep 600", file.display());
        let mut inv = Invocation::new("sh", vec!["-c".into(), script]);
        // Long enough that only a kill ends it before the check below gives
        // up; short enough that a failed check is not held by the run.
        inv.timeout = timeouts::scaled(timeouts::WAIT) * 2;
        let call = tokio::spawn(async move { inv.output().await });
        let pid = tokio::task::spawn_blocking(move || pid_in(&file))
            .await
            .unwrap();
        call.abort();
        let deadline = timeouts::Deadline::after(timeouts::WAIT);
        while crate::process::process_alive(pid) {
            assert!(
                !deadline.passed(),
                "sleep {pid} outlived its dropped call {deadline}"
            );
            tokio::time::sleep(timeouts::FIRST_PAUSE).await;
        }
    }
}
