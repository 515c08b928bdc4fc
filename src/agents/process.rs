//! Running one agent process for one unit of work: argv exec'd directly (no
//! shell built from strings), the given cwd and environment, stdin from a
//! file or `/dev/null`, stdout and stderr streamed live to the pane (the
//! runtime's own stdout) and captured into a bounded tail by swarm's one
//! child-process runner (`swarm_backends::command::Running`: a thread per
//! pipe, and pipes a background grandchild keeps open given up on once the
//! agent exited), and an honest
//! [`Ended`]: an exit code, a signal, or "could not start" with the `errno`
//! that says whether trying again can help.
//!
//! The child stays in the runtime's process group, so the lead's kill ladder
//! (which signals the pane's group) stops it with the runtime. What escapes
//! the group is ended too ([`guard_descendants`]): a CLI may run its tools
//! in sessions of their own (Codex 0.171.0 runs each shell command on a pty
//! of its own, `setsid`), which a signal to the pane's group never reaches
//! and which outlive the CLI. The runtime is the reaper of every orphan
//! below it (`PR_SET_CHILD_SUBREAPER`), so they stay under it, and on
//! SIGTERM, SIGHUP or SIGINT, and when it ends, it ends them all (found in
//! `/proc`: on Linux; elsewhere the pane's group is all that is signalled).
//! An agent ended that way ended with its runtime: its run is never
//! reported (no crash, no task handed back; see `unless_ending`).

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use swarm_backends::command::{DRAIN_WAIT, Running, Sink, Stream, Waited};
use swarm_backends::process::is_zombie;

/// The suite's one timeout knob (`SWARM_TEST_TIMEOUT_SCALE`, or x3 on CI),
/// included from the integration tests' util/ as the backend contract suite
/// includes it.
#[cfg(test)]
#[allow(dead_code)]
#[allow(
    clippy::duplicate_mod,
    reason = "one file owns the knob; each test module that waits includes it, as the \
              crate has no crate-wide test module to hold it once"
)]
#[path = "../../tests/util/timeouts.rs"]
mod timeouts;

/// Most bytes of output kept (the tail).
pub const CAPTURE_BYTES: usize = 256 * 1024;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// Exited normally with this code.
    Exit(i32),
    /// Killed by this signal.
    Signal(i32),
    /// Never started (program missing, not executable, bad cwd, argv too
    /// long, out of processes or file descriptors). `errno` is the OS error
    /// when there was one.
    NotStarted { why: String, errno: Option<i32> },
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
            Ended::NotStarted { why, .. } => format!("could not start: {why}"),
        }
    }

    /// The exit code for task metadata (`128 + signal` for a signal, as a
    /// shell reports it; `127` when it never started).
    pub fn code(&self) -> i32 {
        match self {
            Ended::Exit(c) => *c,
            Ended::Signal(s) => 128 + s,
            Ended::NotStarted { .. } => 127,
        }
    }

    /// The exec was refused because argv and environment are too long
    /// (`E2BIG`: one argument over `MAX_ARG_STRLEN`, or all over `ARG_MAX`).
    pub fn is_too_big(&self) -> bool {
        matches!(self, Ended::NotStarted { errno: Some(e), .. } if *e == libc::E2BIG)
    }

    /// It never started, for a reason that passes on its own: out of file
    /// descriptors (`EMFILE`, `ENFILE`), processes (`EAGAIN`) or memory
    /// (`ENOMEM`), the executable being written (`ETXTBSY`), a full disk
    /// for the prompt file (`ENOSPC`, `EDQUOT`), or an interrupted call.
    /// Running the same unit again later is right; giving up is not.
    pub fn may_start_later(&self) -> bool {
        matches!(
            self,
            Ended::NotStarted { errno: Some(e), .. } if [
                libc::EMFILE,
                libc::ENFILE,
                libc::EAGAIN,
                libc::ENOMEM,
                libc::ETXTBSY,
                libc::ENOSPC,
                libc::EDQUOT,
                libc::EINTR,
            ]
            .contains(e)
        )
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
    /// The tail of stdout alone (what a CLI that prints its progress on
    /// stderr gives as its answer), and whether it was cut.
    pub stdout: String,
    pub stdout_truncated: bool,
    pub elapsed: Duration,
}

/// One process to run.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub argv: Vec<String>,
    pub cwd: Option<std::path::PathBuf>,
    /// Added to (and overriding) the runtime's own environment.
    pub env: Vec<(String, String)>,
    /// A file to read as standard input ([`Invocation::run_captured`] only);
    /// `None` is `/dev/null`.
    pub stdin: Option<PathBuf>,
}

impl Invocation {
    pub fn new(argv: Vec<String>) -> Invocation {
        Invocation {
            argv,
            cwd: None,
            env: Vec::new(),
            stdin: None,
        }
    }

    fn command(&self) -> Option<Command> {
        use std::os::unix::process::CommandExt;
        let (prog, args) = self.argv.split_first()?;
        let mut c = match self.found_on_path(prog) {
            Some(found) => {
                let mut c = Command::new(found);
                c.arg0(prog);
                c
            }
            None => Command::new(prog),
        };
        c.args(args);
        if let Some(cwd) = &self.cwd {
            c.current_dir(cwd);
        }
        for (k, v) in &self.env {
            c.env(k, v);
        }
        Some(c)
    }

    /// `prog`, a bare name, found on the `PATH` this invocation sets, as
    /// the child's `execvp` would find it (a relative directory from the
    /// child's cwd). Found here, the child is started by `posix_spawn` (the
    /// runtime is not copied, and no `execve` fails per directory before
    /// the right one): the standard library forks instead whenever the
    /// child's `PATH` is set and the program is a bare name, which is every
    /// run, as a member's environment always sets `PATH`. `None`: a path,
    /// no `PATH` set, or not found (the spawn says why).
    fn found_on_path(&self, prog: &str) -> Option<PathBuf> {
        if prog.contains('/') {
            return None;
        }
        let (_, path) = self.env.iter().rev().find(|(k, _)| k == "PATH")?;
        let cwd = match &self.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir().ok()?,
        };
        which::which_in(prog, Some(path), cwd).ok()
    }

    /// Runs to the end, streaming output to `pane` and capturing its tail.
    pub fn run_captured(&self, pane: Arc<Mutex<dyn Write + Send>>) -> Finished {
        self.run_captured_then(pane, &mut || {})
    }

    /// [`Invocation::run_captured`], calling `started` as soon as the
    /// process runs (it has exec'd: `spawn` returns once it has), before
    /// waiting for it: what need not come before the agent starts is done
    /// while it runs, not in its way (`teammate::work`). Not called when
    /// the process could not be started.
    pub fn run_captured_then(
        &self,
        pane: Arc<Mutex<dyn Write + Send>>,
        started: &mut dyn FnMut(),
    ) -> Finished {
        let start = Instant::now();
        let Some(mut cmd) = self.command() else {
            return not_started("empty command".into(), None, start);
        };
        let stdin = match &self.stdin {
            None => Stdio::null(),
            Some(path) => match std::fs::File::open(path) {
                Ok(f) => Stdio::from(f),
                Err(e) => {
                    let why = format!("opening its stdin {}: {e}", path.display());
                    return not_started(why, e.raw_os_error(), start);
                }
            },
        };
        cmd.stdin(stdin);
        let tail = Arc::new(Mutex::new(Tail::default()));
        let out_tail = Arc::new(Mutex::new(Tail::default()));
        let sink = output_sink(&pane, &tail, &out_tail);
        let mut running = match Running::start(&mut cmd, sink) {
            Ok(r) => r,
            Err(e) => {
                let why = spawn_error(&self.argv[0], self.cwd.as_deref(), &e);
                return not_started(why, e.raw_os_error(), start);
            }
        };
        started();
        let status = running.wait(None, false).and_then(|w| match w {
            Waited::Exited(status) => Ok(status),
            other => Err(std::io::Error::other(format!("{other:?}"))),
        });
        unless_ending();
        // A background grandchild may hold the pipes open forever: what
        // came before the drain wait is the output.
        running.drain(DRAIN_WAIT);
        let ended = ended_by(status);
        if GUARDED.load(std::sync::atomic::Ordering::SeqCst) {
            // Orphans adopted during the run that have exited since; the
            // runtime runs one unit at a time, so no other run is waiting.
            reap_children(std::process::id());
        }
        let (output, output_truncated) = tail.lock().unwrap_or_else(|e| e.into_inner()).text();
        let (stdout, stdout_truncated) = out_tail.lock().unwrap_or_else(|e| e.into_inner()).text();
        Finished {
            ended,
            output,
            output_truncated,
            stdout,
            stdout_truncated,
            elapsed: start.elapsed(),
        }
    }

    /// Runs with the pane's own terminal as stdin/stdout/stderr (an
    /// interactive agent such as Claude Code) and waits for it.
    pub fn run_attached(&self) -> Ended {
        let Some(mut cmd) = self.command() else {
            return Ended::NotStarted {
                why: "empty command".into(),
                errno: None,
            };
        };
        match cmd.status() {
            Ok(s) => ended_by(Ok(s)),
            Err(e) => Ended::NotStarted {
                why: spawn_error(&self.argv[0], self.cwd.as_deref(), &e),
                errno: e.raw_os_error(),
            },
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

fn not_started(why: String, errno: Option<i32>, start: Instant) -> Finished {
    Finished::not_started(why, errno, start.elapsed())
}

impl Finished {
    /// A run that never started, with no output.
    pub fn not_started(why: String, errno: Option<i32>, elapsed: Duration) -> Finished {
        Finished {
            ended: Ended::NotStarted { why, errno },
            output: String::new(),
            output_truncated: false,
            stdout: String::new(),
            stdout_truncated: false,
            elapsed,
        }
    }
}

/// Where a run's output goes as it comes: to `pane`, and into the tail of
/// both streams (stdout's also into its own).
fn output_sink(
    pane: &Arc<Mutex<dyn Write + Send>>,
    tail: &Arc<Mutex<Tail>>,
    out_tail: &Arc<Mutex<Tail>>,
) -> Sink {
    let (pane, tail, out_tail) = (pane.clone(), tail.clone(), out_tail.clone());
    Arc::new(move |stream, bytes| {
        {
            let mut p = pane.lock().unwrap_or_else(|e| e.into_inner());
            crate::dropped::ignore(
                p.write_all(bytes).and_then(|()| p.flush()),
                "showing the agent's output in the pane (its capture goes on)",
            );
        }
        tail.lock().unwrap_or_else(|e| e.into_inner()).push(bytes);
        if stream == Stream::Stdout {
            out_tail
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(bytes);
        }
    })
}

/// How the agent ended, from its wait status.
fn ended_by(status: std::io::Result<std::process::ExitStatus>) -> Ended {
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => Ended::Exit(c),
            (None, Some(sig)) => Ended::Signal(sig),
            (None, None) => Ended::NotStarted {
                why: "no exit status".into(),
                errno: None,
            },
        },
        Err(e) => Ended::NotStarted {
            why: format!("waiting for the agent: {e}"),
            errno: e.raw_os_error(),
        },
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

/// How long descendants get between SIGTERM and SIGKILL.
pub const DESCENDANTS_GRACE: Duration = Duration::from_millis(500);

/// Set once this process reaps orphans ([`guard_descendants`]): only then
/// does a finished run reap the zombies it adopted.
static GUARDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Signals that end the runtime, and first everything under it.
const ENDING: [i32; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// The ending signal this process caught (0: none), set by the signal
/// handler itself, so it is set before anything the signal ends is seen
/// to end ([`guard_descendants`]).
static CAUGHT: std::sync::LazyLock<Arc<std::sync::atomic::AtomicUsize>> =
    std::sync::LazyLock::new(|| Arc::new(std::sync::atomic::AtomicUsize::new(0)));

/// The ending signal (SIGTERM, SIGHUP, SIGINT) this process is dying of,
/// once [`guard_descendants`] caught one.
fn ending_signal() -> Option<i32> {
    let sig = CAUGHT.load(std::sync::atomic::Ordering::SeqCst);
    i32::try_from(sig).ok().filter(|s| *s != 0)
}

/// Makes this process the reaper of orphans below it, and on SIGTERM,
/// SIGHUP or SIGINT ends every descendant ([`end_descendants`]) before it
/// dies of the signal. Once per process (the runtime's).
pub fn guard_descendants() -> std::io::Result<()> {
    adopt_orphans()?;
    GUARDED.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut read, write) = std::io::pipe()?;
    for sig in ENDING {
        let n = usize::try_from(sig).expect("signal numbers are positive");
        // Stored before the byte wakes the thread (actions run in order).
        signal_hook::flag::register_usize(sig, Arc::clone(&CAUGHT), n)?;
        signal_hook::low_level::pipe::register(sig, write.try_clone()?)?;
    }
    std::thread::Builder::new()
        .name("descendants".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            while read.read(&mut byte).is_ok_and(|n| n > 0) {
                let Some(sig) = ending_signal() else {
                    continue;
                };
                let ended = end_descendants(DESCENDANTS_GRACE);
                tracing::info!(signal = sig, ended, "ending: descendants ended");
                crate::logging::fault_delay("SWARM_FAULT_ENDING_DELAY_MS");
                // Dies of the signal, as it would have without the guard.
                crate::dropped::ignore(
                    signal_hook::low_level::emulate_default_handler(sig),
                    "dying of the ending signal (the process exits below if not)",
                );
            }
        })?;
    Ok(())
}

/// Called when a run's agent has ended: if this process is dying of an
/// ending signal, the agent ended because the runtime (its pane, its tmux
/// server) is going away, not by its own failure, and nothing of it may
/// be reported: no crash, no task handed back, its in-flight record kept
/// for the next runtime to report as interrupted. So this never returns
/// then: it waits for the signal's thread to end the process (its
/// descendants first), and past that thread's grace and a second dies of
/// the signal itself.
fn unless_ending() {
    let Some(sig) = ending_signal() else {
        return;
    };
    tracing::info!(
        signal = sig,
        "the agent ended with this runtime: nothing of the run is reported"
    );
    std::thread::sleep(DESCENDANTS_GRACE + Duration::from_secs(1));
    crate::dropped::ignore(
        signal_hook::low_level::emulate_default_handler(sig),
        "dying of the ending signal (exits with its code instead)",
    );
    std::process::exit(128 + sig);
}

/// Makes this process the reaper of orphans below it (Linux's
/// `PR_SET_CHILD_SUBREAPER`). Elsewhere there is no such call: what an
/// agent orphans goes to init, and only what is still below a living
/// parent is found.
#[cfg(target_os = "linux")]
fn adopt_orphans() -> std::io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument
    // and touches no memory of ours.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn adopt_orphans() -> std::io::Result<()> {
    Ok(())
}

/// Ends every process below this one: SIGTERM, then SIGKILL for any left
/// after `grace`, reaping those that are its children (orphans it adopted
/// included). Returns how many there were.
pub fn end_descendants(grace: Duration) -> usize {
    let me = std::process::id();
    let first = descendants_of(me);
    for p in &first {
        signal(*p, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        reap_children(me);
        let left = descendants_of(me);
        if left.is_empty() {
            return first.len();
        }
        if Instant::now() >= deadline {
            for p in &left {
                signal(*p, libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(20));
            reap_children(me);
            return first.len().max(left.len());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, sig: i32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) with a pid read from /proc and a valid signal.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Every living (not zombie) process below `root`.
fn descendants_of(root: u32) -> Vec<u32> {
    below(root)
        .into_iter()
        .filter(|(_, zombie)| !zombie)
        .map(|(pid, _)| pid)
        .collect()
}

/// Every process below `root`, with whether it is a zombie. Each one's
/// children are read from its `/proc/<pid>/task/<tid>/children` files, so
/// only the subtree is read: the whole process table (every process's
/// `stat` on the machine) was a fifth of the CPU of a `swarm down` of 32,
/// each ending runtime reading it twice. Where the kernel has no such files
/// (built without `CONFIG_PROC_CHILDREN`), from the whole table.
fn below(root: u32) -> Vec<(u32, bool)> {
    let Some(mut stack) = children_of(root) else {
        return below_by_table(root);
    };
    let mut out = Vec::new();
    while let Some(pid) = stack.pop() {
        // Gone meanwhile: nothing to end or reap.
        let Some(zombie) = is_zombie(pid) else {
            continue;
        };
        out.push((pid, zombie));
        if !zombie {
            stack.extend(children_of(pid).unwrap_or_default());
        }
    }
    out
}

/// The children of every thread of `pid`; `None` when none of its
/// threads has a `children` file (the kernel has none, or `pid` is gone).
fn children_of(pid: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let mut read_one = false;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        // A thread that ended since the listing has no file: skipped.
        if let Ok(list) = std::fs::read_to_string(t.path().join("children")) {
            read_one = true;
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    read_one.then_some(out)
}

/// [`below`] from the whole process table.
fn below_by_table(root: u32) -> Vec<(u32, bool)> {
    let procs = proc_table();
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        for (pid, ppid, zombie) in &procs {
            if *ppid == p {
                stack.push(*pid);
                out.push((*pid, *zombie));
            }
        }
    }
    out
}

/// (pid, parent pid, is a zombie) of every process.
fn proc_table() -> Vec<(u32, u32, bool)> {
    swarm_backends::process::all_processes()
        .into_iter()
        .map(|st| (st.pid, st.ppid, st.is_zombie()))
        .collect()
}

/// Reaps this process's zombie children by pid (never `waitpid(-1)`, which
/// could take the exit status a running [`Invocation`] waits for).
fn reap_children(me: u32) {
    let children: Vec<(u32, bool)> = match children_of(me) {
        Some(pids) => pids
            .into_iter()
            .filter_map(|p| Some((p, is_zombie(p)?)))
            .collect(),
        None => proc_table()
            .into_iter()
            .filter(|(_, ppid, _)| *ppid == me)
            .map(|(pid, _, zombie)| (pid, zombie))
            .collect(),
    };
    for (pid, zombie) in children {
        if zombie && let Ok(pid) = i32::try_from(pid) {
            let mut status = 0;
            // SAFETY: waitpid on a zombie child of ours, WNOHANG.
            unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    fn sink() -> Arc<Mutex<dyn Write + Send>> {
        Arc::new(Mutex::new(Vec::<u8>::new()))
    }

    fn sh(script: &str) -> Invocation {
        Invocation::new(vec!["sh".into(), "-c".into(), script.into()])
    }

    /// A bare program name is found on the `PATH` the invocation sets (not
    /// the runtime's own), a relative directory of it from the child's
    /// cwd, as `execvp` would; the child still gets the name it was given
    /// as its `argv[0]`.
    #[test]
    fn a_bare_name_is_found_on_the_path_the_invocation_sets() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (bin, work) = (dir.path().join("bin"), dir.path().join("work"));
        for d in [&bin, &work.join("rel")] {
            std::fs::create_dir_all(d).unwrap();
        }
        let put = |path: &Path, body: &str| {
            std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        put(&bin.join("swarm-test-tool"), "echo \"abs $1\"");
        put(&work.join("rel/swarm-test-rel"), "echo rel");
        // Not executable: skipped, as execvp skips it.
        std::fs::write(work.join("rel/swarm-test-tool"), "not a program").unwrap();
        // A shell under another name: its `$0` is the `argv[0]` it got.
        std::os::unix::fs::symlink("/bin/sh", bin.join("swarm-test-sh")).unwrap();
        let path = format!("rel:{}:/usr/bin:/bin", bin.display());
        let deadline = std::time::Instant::now() + timeouts::scaled(timeouts::WAIT);
        let run = |argv: &[&str]| loop {
            let mut inv = Invocation::new(argv.iter().map(|a| a.to_string()).collect());
            inv.cwd = Some(work.clone());
            inv.env = vec![("PATH".into(), path.clone())];
            let f = inv.run_captured(sink());
            // Another test's child, forked while a script here was being
            // written, holds its write descriptor until that child's exec:
            // `ETXTBSY` for a moment (CI saw it). A runtime starts such a
            // unit again later (`may_start_later`); so does the test.
            let busy =
                matches!(f.ended, Ended::NotStarted { errno: Some(e), .. } if e == libc::ETXTBSY);
            if busy && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            break (f.ended, f.output);
        };
        assert_eq!(
            run(&["swarm-test-tool", "x"]),
            (Ended::Exit(0), "abs x\n".into())
        );
        assert_eq!(run(&["swarm-test-rel"]), (Ended::Exit(0), "rel\n".into()));
        assert_eq!(
            run(&["swarm-test-sh", "-c", "echo \"$0\""]),
            (Ended::Exit(0), "swarm-test-sh\n".into())
        );
        let (ended, _) = run(&["swarm-test-missing"]);
        assert!(
            matches!(ended, Ended::NotStarted { ref why, .. } if why.contains("not found")),
            "{ended:?}"
        );
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
        assert_eq!(f.stdout, "out\n", "stdout alone too");
        let shown = String::from_utf8(pane.lock().unwrap().clone()).unwrap();
        assert!(shown.contains("out") && shown.contains("err"), "{shown:?}");
    }

    /// Issue 25, item 2: what need not come before an agent starts is
    /// done once it runs (`teammate::work`): `started` is called as soon
    /// as the process runs, while it runs, once; never for one that could
    /// not start.
    #[test]
    fn started_is_called_once_the_process_runs_and_never_when_it_cannot_start() {
        let dir = tempfile::tempdir().unwrap();
        let gate = dir.path().join("gate");
        let script = format!(
            "i=0; while [ ! -e '{g}' ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done; \
             [ -e '{g}' ] && echo through",
            g = gate.display()
        );
        let mut calls = 0;
        let f = sh(&script).run_captured_then(sink(), &mut || {
            calls += 1;
            // The process waits for this file: it runs, and is waited for
            // only after this call.
            std::fs::write(&gate, b"").unwrap();
        });
        assert_eq!(f.ended, Ended::Exit(0), "{f:?}");
        assert_eq!(f.output, "through\n");
        assert_eq!(calls, 1);
        let mut calls = 0;
        let f = Invocation::new(vec!["/nonexistent/agent".into()])
            .run_captured_then(sink(), &mut || calls += 1);
        assert!(matches!(f.ended, Ended::NotStarted { .. }), "{f:?}");
        assert_eq!(calls, 0, "called for a process that never ran");
    }

    #[test]
    fn a_signal_and_a_missing_program_are_crashes_not_exit_codes() {
        let f = sh("kill -9 $$").run_captured(sink());
        assert_eq!(f.ended, Ended::Signal(9));
        assert!(f.ended.is_crash());
        let f = Invocation::new(vec!["/nonexistent/agent".into()]).run_captured(sink());
        assert!(
            matches!(f.ended, Ended::NotStarted { ref why, .. } if why.contains("not found")),
            "{f:?}"
        );
        assert!(
            !f.ended.may_start_later(),
            "a missing program stays missing"
        );
    }

    #[test]
    fn an_argument_past_max_arg_strlen_is_too_big_not_a_missing_program() {
        let huge = "x".repeat(128 * 1024);
        let f = Invocation::new(vec!["true".into(), huge]).run_captured(sink());
        assert!(f.ended.is_too_big(), "{:?}", f.ended);
        assert!(f.ended.is_crash() && !f.ended.may_start_later());
    }

    #[test]
    fn stdin_comes_from_the_named_file() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, "from the file\n").unwrap();
        let mut inv = sh("cat");
        inv.stdin = Some(input);
        let f = inv.run_captured(sink());
        assert_eq!(
            (f.ended, f.output.as_str()),
            (Ended::Exit(0), "from the file\n")
        );
        let mut inv = sh("cat");
        inv.stdin = Some(dir.path().join("missing"));
        let f = inv.run_captured(sink());
        assert!(
            matches!(f.ended, Ended::NotStarted { errno: Some(e), .. } if e == libc::ENOENT),
            "{:?}",
            f.ended
        );
    }

    #[test]
    fn the_capture_keeps_a_bounded_tail() {
        let f = sh("head -c 600000 /dev/zero | tr '\\0' a; echo END").run_captured(sink());
        assert!(f.output_truncated);
        assert_eq!(f.output.len(), CAPTURE_BYTES);
        assert!(f.output.ends_with("END\n"));
    }

    /// The grandchild holds the output pipes until the test ends it, after
    /// the run returned: the run can only return by giving up on them.
    #[test]
    fn a_background_grandchild_holding_the_pipe_does_not_hang_the_run() {
        let pane: Arc<Mutex<Vec<u8>>> = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = mpsc::channel();
        std::thread::spawn({
            let pane: Arc<Mutex<dyn Write + Send>> = pane.clone();
            move || done.send(sh("sleep 600 & echo $!").run_captured(pane))
        });
        let grandchild = || -> Option<u32> {
            let shown = String::from_utf8(pane.lock().unwrap().clone()).unwrap();
            shown.trim().parse().ok()
        };
        let budget = timeouts::scaled(timeouts::WAIT);
        let Ok(f) = finished.recv_timeout(budget) else {
            if let Some(pid) = grandchild() {
                signal(pid, libc::SIGKILL);
            }
            panic!("the run waited {budget:?} for pipes its agent's grandchild holds");
        };
        assert_eq!(f.ended, Ended::Exit(0));
        let pid = grandchild().unwrap_or_else(|| panic!("no pid in the output: {f:?}"));
        // SAFETY: kill(2) with signal 0 only checks that the pid exists.
        let alive = unsafe { libc::kill(i32::try_from(pid).unwrap(), 0) } == 0;
        signal(pid, libc::SIGKILL);
        assert!(alive, "the grandchild {pid} had let go of the pipes");
    }

    #[test]
    fn the_subtree_read_from_children_files_is_the_one_in_the_process_table() {
        let mut child = std::process::Command::new("sh")
            .args([
                "-c",
                "sleep 100 & (sleep 100 & sleep 100; :) & echo up; wait",
            ])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
            &mut line,
        )
        .unwrap();
        let sh = child.id();
        let (mut fast, mut full) = (Vec::new(), Vec::new());
        // The subshell's sleeps may still be starting: until the whole tree
        // is there (sleep, subshell, two sleeps) in both readings.
        for _ in 0..500 {
            fast = below(sh);
            full = below_by_table(sh);
            fast.sort_unstable();
            full.sort_unstable();
            if fast == full && fast.len() == 4 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(children_of(sh).is_some(), "this kernel has children files");
        assert_eq!(fast, full);
        assert_eq!(fast.len(), 4, "sleep, subshell, two sleeps: {fast:?}");
        let tree: Vec<u32> = fast.iter().map(|(p, _)| *p).collect();
        for p in &tree {
            signal(*p, libc::SIGKILL);
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn tail_of_cuts_on_a_char_boundary() {
        assert_eq!(tail_of("héllo", 4), ("llo", true));
        assert_eq!(tail_of("abc", 10), ("abc", false));
    }
}
