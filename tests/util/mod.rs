//! Test mechanics, hidden behind names that read like the spec:
//! [`Sandbox`] (a private state root and a `swarm` command with a clean
//! environment), [`wait_until`] (a named wait that fails like a bug report,
//! its budget stretched by the one knob in [`timeouts`]), and [`Run`] (a
//! finished command with everything needed to explain it).

#![allow(dead_code)]

pub mod dialog;
pub mod live;
pub mod process;
pub mod sshd;
pub mod timeouts;
pub mod tmux;
pub mod tmux_server;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub use process::pid_alive;
pub use timeouts::WAIT;

/// The binary under test.
pub fn swarm_bin() -> &'static str {
    env!("CARGO_BIN_EXE_swarm")
}

/// A private state root. Every command it builds has an environment with
/// only what the test gives it: nothing from the developer's `SWARM_*`,
/// `CLAUDE_CONFIG_DIR` or tmux leaks in.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Self {
        Sandbox {
            dir: tempfile::Builder::new()
                .prefix("swarm-test-")
                .tempdir()
                .expect("tempdir"),
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `swarm ARGS` with `SWARM_HOME` set to this sandbox.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(swarm_bin());
        c.args(args)
            .env_clear()
            .env("SWARM_HOME", self.root())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root())
            .current_dir(self.root())
            .stdin(Stdio::null());
        c
    }

    /// Runs `swarm ARGS` to completion.
    pub fn run(&self, args: &[&str]) -> Run {
        Run::of(self.cmd(args), args)
    }

    /// Runs and insists on exit 0.
    pub fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        r.assert_code(0);
        r
    }

    /// Creates a team with the given teammates on its roster (added as
    /// Claude Code reserves them, so no panes are involved).
    pub fn team_with(&self, team: &str, members: &[&str]) {
        self.ok(&["team", "create", team]);
        let root = swarm::paths::Root::new(self.root());
        let roster = swarm::team::Roster::new(&root, team);
        for (i, m) in members.iter().enumerate() {
            roster
                .add_member(swarm::team::Member::teammate(
                    team,
                    m,
                    swarm::team::colors::for_teammate(i),
                    &self.root().to_string_lossy(),
                ))
                .expect("add member");
        }
    }

    /// Every file and directory under the root, relative, sorted.
    pub fn tree(&self) -> Vec<String> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let p = e.path();
                    out.push(
                        p.strip_prefix(base)
                            .unwrap_or(&p)
                            .to_string_lossy()
                            .into_owned(),
                    );
                    if p.is_dir() {
                        walk(base, &p, out);
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self.root(), self.root(), &mut out);
        out.sort();
        out
    }

    pub fn read_json(&self, rel: &str) -> serde_json::Value {
        let p = self.path(rel);
        let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{} is not JSON ({e}):\n{}",
                p.display(),
                String::from_utf8_lossy(&bytes)
            )
        })
    }
}

/// A finished command.
pub struct Run {
    pub argv: Vec<String>,
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn of(mut cmd: Command, args: &[&str]) -> Run {
        let out: Output = cmd.output().expect("running swarm");
        Run::from_output(out, args)
    }

    /// Runs `cmd` and insists it exits within `within` (scaled): for a
    /// command whose prompt return is the behaviour under test. Fails with
    /// `what` and `explain()` otherwise (see [`wait_for_exit`]).
    pub fn within(
        mut cmd: Command,
        args: &[&str],
        what: &str,
        within: Duration,
        explain: impl Fn() -> String,
    ) -> Run {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting swarm");
        Run::from_output(wait_for_exit(what, within, child, explain), args)
    }

    pub fn from_output(out: Output, args: &[&str]) -> Run {
        Run {
            argv: args.iter().map(|s| s.to_string()).collect(),
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "exit code of swarm {:?}\n{}",
            self.argv,
            self.explain()
        );
        self
    }

    /// Exit 2 with exactly one line on stderr, containing `needle`.
    pub fn assert_error(&self, needle: &str) -> &Self {
        self.assert_code(2);
        assert_eq!(
            self.stderr.trim_end().lines().count(),
            1,
            "one error line\n{}",
            self.explain()
        );
        assert!(self.stderr.starts_with("swarm: "), "{}", self.explain());
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}\n{}",
            self.explain()
        );
        self
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e})\n{}", self.explain()))
    }

    pub fn explain(&self) -> String {
        format!(
            "argv: {:?}\nexit: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.argv, self.code, self.stdout, self.stderr
        )
    }
}

/// Polls `check` until it returns true, failing with `what` and `explain()`
/// once `within` has passed. `within` is the budget on a developer's
/// machine: it is stretched by [`timeouts::scale`] (`SWARM_TEST_TIMEOUT_SCALE`,
/// or x3 on CI), so every caller's wait follows the one knob.
pub fn wait_until(
    what: &str,
    within: Duration,
    mut check: impl FnMut() -> bool,
    explain: impl Fn() -> String,
) {
    let deadline = timeouts::Deadline::after(within);
    let mut pause = timeouts::FIRST_PAUSE;
    loop {
        if check() {
            return;
        }
        if deadline.passed() {
            panic!(
                "timed out after {deadline} waiting until {what}\n{}",
                explain()
            );
        }
        std::thread::sleep(pause.min(deadline.remaining()));
        pause = timeouts::next_pause(pause);
    }
}

/// A child process the test started, killed (and reaped) when the guard
/// goes: a failing test leaves nothing running.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `child` exits and returns its output. For a command whose
/// prompt return is the behaviour under test (it must not sit out a
/// budget or a grace period): a child still running at the deadline fails
/// the test with `what` and `explain()`, and is killed. Its stdout and
/// stderr, when piped, must fit in a pipe's buffer until it exits.
pub fn wait_for_exit(
    what: &str,
    within: Duration,
    child: std::process::Child,
    explain: impl Fn() -> String,
) -> Output {
    let mut guard = KillOnDrop(child);
    wait_until(
        what,
        within,
        || matches!(guard.0.try_wait(), Ok(Some(_))),
        explain,
    );
    let mut out = Output {
        status: guard.0.wait().expect("the child's exit status"),
        stdout: Vec::new(),
        stderr: Vec::new(),
    };
    use std::io::Read;
    if let Some(mut o) = guard.0.stdout.take() {
        let _ = o.read_to_end(&mut out.stdout);
    }
    if let Some(mut e) = guard.0.stderr.take() {
        let _ = e.read_to_end(&mut out.stderr);
    }
    out
}

/// The keys of JSON object `v` in file order (the reference's field
/// order is part of the format).
pub fn json_keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not a JSON object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// Serialises the load tests (many processes each): run together on a
/// 2-core machine they would measure the machine, not swarm.
pub fn heavy() -> std::sync::MutexGuard<'static, ()> {
    static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// A tiny deterministic PRNG for tests (no extra dependency, reproducible
/// from the printed seed).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod knob {
    use super::timeouts::{CI_SCALE, scale_from};

    #[test]
    fn the_explicit_scale_wins_then_ci_then_one() {
        assert_eq!(scale_from(Some("0.5"), Some("true")), 0.5);
        assert_eq!(scale_from(None, Some("true")), CI_SCALE);
        assert_eq!(scale_from(None, Some("1")), CI_SCALE);
        for off in [None, Some(""), Some("0"), Some("false")] {
            assert_eq!(scale_from(None, off), 1.0, "CI={off:?}");
        }
    }

    #[test]
    #[should_panic(expected = "SWARM_TEST_TIMEOUT_SCALE")]
    fn a_scale_that_is_not_a_positive_number_is_refused() {
        scale_from(Some("-2"), None);
    }
}
