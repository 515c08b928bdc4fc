//! A private tmux server per test ([`TmuxServer`]): `tmux -S <tmpdir>/sock
//! -f /dev/null` with `TMUX`/`TMUX_PANE` removed from every call, so no test
//! ever reaches the developer's tmux. It starts with a `canary` session
//! that must survive every teardown; on drop every pane's process group is
//! killed, then the server.
//!
//! Self-contained (std, libc, tempfile), so the backend contract suite, a
//! test crate of its own, includes this very file:
//! `#[path = "../../tests/util/tmux_server.rs"] mod tmux_server;`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// True when tmux can run here; otherwise prints `SKIP` (or panics when
/// `SWARM_REQUIRE_TMUX=1`).
pub fn tmux_available(test: &str) -> bool {
    let found = Command::new("tmux")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var("SWARM_REQUIRE_TMUX").as_deref() == Ok("1") {
            panic!("{test}: tmux not found and SWARM_REQUIRE_TMUX=1");
        }
        println!("SKIP {test}: tmux not found");
    }
    found
}

/// One pane as `list-panes -a` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pane {
    pub id: String,
    pub session: String,
    pub window: String,
    pub pid: u32,
    pub dead: bool,
    pub title: String,
    pub color: String,
}

/// A private tmux server with a `canary` session; killed on drop.
pub struct TmuxServer {
    pub dir: tempfile::TempDir,
    pub sock: PathBuf,
}

impl TmuxServer {
    /// Starts the server with its canary session.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("swarm-tmux-")
            .tempdir()
            .expect("tempdir");
        let sock = dir.path().join("sock");
        let s = TmuxServer { dir, sock };
        s.new_session("canary", (80, 24), &["sleep", "100000"]);
        s
    }

    /// `tmux -S sock -f /dev/null ARGS` with `TMUX`/`TMUX_PANE` removed.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S")
            .arg(&self.sock)
            .arg("-f")
            .arg("/dev/null")
            .args(args)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("running tmux")
    }

    /// stdout of `tmux ARGS`, panicking with stderr on failure.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A detached session `name` of `size` (columns, rows) running
    /// `command` (argv, no shell); returns its pane's id.
    pub fn new_session(&self, name: &str, size: (u16, u16), command: &[&str]) -> String {
        self.open_session(name, size, None, command)
    }

    /// [`TmuxServer::new_session`] with its pane started in `cwd`.
    pub fn new_session_in(
        &self,
        name: &str,
        size: (u16, u16),
        cwd: &Path,
        command: &[&str],
    ) -> String {
        self.open_session(name, size, Some(cwd), command)
    }

    fn open_session(
        &self,
        name: &str,
        size: (u16, u16),
        cwd: Option<&Path>,
        command: &[&str],
    ) -> String {
        let (x, y) = (size.0.to_string(), size.1.to_string());
        let cwd = cwd.map(|c| c.to_string_lossy().into_owned());
        let mut args = vec![
            "new-session",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "-s",
            name,
            "-x",
            &x,
            "-y",
            &y,
        ];
        if let Some(c) = &cwd {
            args.extend(["-c", c.as_str()]);
        }
        args.push("--");
        args.extend_from_slice(command);
        self.ok(&args).trim().to_string()
    }

    /// `display-message -p -t TARGET FORMAT`, trimmed.
    pub fn display(&self, target: &str, format: &str) -> String {
        self.ok(&["display-message", "-p", "-t", target, format])
            .trim()
            .to_string()
    }

    /// What pane `pane` shows now (empty when it is gone).
    pub fn capture(&self, pane: &str) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", pane]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Presses keys in `pane` (tmux key names: `Up`, `Enter`, `BTab`, `q`…).
    pub fn send_keys(&self, pane: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", pane];
        args.extend_from_slice(keys);
        self.ok(&args);
    }

    /// Types `text` literally into `pane`.
    pub fn type_text(&self, pane: &str, text: &str) {
        self.ok(&["send-keys", "-t", pane, "-l", text]);
    }

    /// Every pane on the server (empty when the server is gone).
    pub fn panes(&self) -> Vec<Pane> {
        let out = self.run(&[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id}\t#{session_name}\t#{window_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_title}\t#{@swarm_color}",
        ]);
        if !out.status.success() {
            return Vec::new();
        }
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f.len() == 7).then(|| Pane {
                    id: f[0].into(),
                    session: f[1].into(),
                    window: f[2].into(),
                    pid: f[3].parse().unwrap_or(0),
                    dead: f[4] == "1",
                    title: f[5].into(),
                    color: f[6].into(),
                })
            })
            .collect()
    }

    pub fn pane(&self, id: &str) -> Option<Pane> {
        self.panes().into_iter().find(|p| p.id == id)
    }

    /// Pane `id` is on the server and its program has not exited.
    pub fn pane_alive(&self, id: &str) -> bool {
        self.pane(id).is_some_and(|p| !p.dead)
    }

    /// The server process's pid (while it runs).
    pub fn server_pid(&self) -> u32 {
        let pid = self.ok(&["display-message", "-p", "#{pid}"]);
        pid.trim()
            .parse()
            .unwrap_or_else(|_| panic!("tmux reports its pid as {pid:?}"))
    }

    pub fn has_session(&self, name: &str) -> bool {
        self.run(&["has-session", "-t", &format!("={name}")])
            .status
            .success()
    }

    /// The canary session's pane is still there, running, and its process
    /// exists.
    pub fn canary_alive(&self) -> bool {
        self.panes().iter().any(|p| {
            // SAFETY: signal 0 sends nothing; it only checks the process exists.
            p.session == "canary" && !p.dead && unsafe { libc::kill(p.pid as i32, 0) } == 0
        })
    }

    /// Each pane's listing and screen, for failure messages.
    pub fn dump(&self) -> String {
        let mut s = String::new();
        let panes = self.panes();
        if panes.is_empty() {
            s.push_str("(no tmux panes: server absent or empty)\n");
        }
        for p in panes {
            s.push_str(&format!("--- pane {p:?} ---\n"));
            let cap = self.run(&["capture-pane", "-p", "-J", "-t", &p.id]);
            let text = String::from_utf8_lossy(&cap.stdout);
            for l in text
                .trim_end()
                .lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                s.push_str(&format!("    | {l}\n"));
            }
        }
        s
    }
}

impl Drop for TmuxServer {
    fn drop(&mut self) {
        // Every pane's process group goes first, by the pids this server
        // reports (processes the test started): a lead whose server simply
        // vanished would otherwise outlive the test.
        if let Ok(out) = self
            .command(&["list-panes", "-a", "-F", "#{pane_pid}"])
            .output()
        {
            for pid in String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter_map(|l| l.trim().parse::<i32>().ok())
            {
                if pid > 1 {
                    // SAFETY: signalling a pane process (and its group) this server started.
                    unsafe {
                        libc::kill(-pid, libc::SIGKILL);
                        libc::kill(pid, libc::SIGKILL);
                    }
                }
            }
        }
        let _ = self
            .command(&["kill-server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
