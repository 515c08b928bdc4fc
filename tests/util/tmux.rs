//! A private tmux server per test ([`TmuxServer`]) and a team living on it
//! ([`TmuxTeam`]): every `swarm` command it builds names the private socket
//! (`SWARM_TMUX_SOCKET`) and runs without `TMUX`/`TMUX_PANE`, so no test
//! ever reaches the developer's tmux. The server starts with a `canary`
//! session that must survive every teardown, and is killed on drop.
//!
//! Failures explain themselves: [`TmuxTeam::explain`] prints every pane
//! (id, session, title, colour, pid, dead), each pane's capture, the tail
//! of the lead's log and the roster.

use super::{Run, Sandbox, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// How long a test waits for anything on tmux before failing.
pub const WAIT: Duration = Duration::from_secs(10);

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

/// The directory of the fake agents.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// The path of fake agent `name` as a string (for `-- CMD`).
pub fn agent(name: &str) -> String {
    agents_dir().join(name).to_string_lossy().into_owned()
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

/// A private tmux server (`tmux -S <tmpdir>/sock -f /dev/null`) with a
/// `canary` session; killed on drop.
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
        let out = s.run(&[
            "new-session",
            "-d",
            "-s",
            "canary",
            "-x",
            "80",
            "-y",
            "24",
            "--",
            "sleep",
            "100000",
        ]);
        assert!(
            out.status.success(),
            "starting the private tmux server: {}",
            String::from_utf8_lossy(&out.stderr)
        );
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

    pub fn has_session(&self, name: &str) -> bool {
        self.run(&["has-session", "-t", &format!("={name}")])
            .status
            .success()
    }

    /// The canary session and its pane are still there and running.
    pub fn canary_alive(&self) -> bool {
        self.panes()
            .iter()
            .any(|p| p.session == "canary" && !p.dead)
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

impl Drop for TmuxTeam {
    fn drop(&mut self) {
        // A lead started outside the server's panes (or one that lost its
        // server) is ended by its recorded pid before the server goes.
        if let Some(pid) = self.lead_pid().filter(|p| *p > 1)
            && std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            // SAFETY: signalling the lead this test started, by its pid.
            unsafe {
                libc::kill(pid as i32, libc::SIGKILL);
            }
        }
    }
}

/// True while any process is in process group `pgid`.
pub fn group_alive(pgid: u32) -> bool {
    // SAFETY: signal 0 sends nothing; it only checks that the group exists.
    unsafe { libc::kill(-(pgid as i32), 0) == 0 }
}

/// Every `*.lock` path under `dir`.
pub fn lock_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.extension().is_some_and(|x| x == "lock") {
                    out.push(p.clone());
                }
                stack.push(p);
            }
        }
    }
    out
}

/// A sandboxed state root, a private tmux server, and one team on it.
pub struct TmuxTeam {
    pub sb: Sandbox,
    pub tmux: TmuxServer,
    pub team: String,
    /// Where fake agents run and write what they record.
    pub work: PathBuf,
}

impl TmuxTeam {
    /// `None` (after printing SKIP) when tmux is missing.
    pub fn new(test: &str, team: &str) -> Option<Self> {
        if !tmux_available(test) {
            return None;
        }
        let sb = Sandbox::new();
        let work = sb.path("work dir #1");
        std::fs::create_dir_all(&work).expect("work dir");
        Some(TmuxTeam {
            sb,
            tmux: TmuxServer::start(),
            team: team.to_string(),
            work,
        })
    }

    /// `swarm ARGS --team T` on the private server, cwd = the work dir.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.sb.cmd(args);
        c.env("SWARM_TMUX_SOCKET", &self.tmux.sock)
            .env("SWARM_TEAM", &self.team)
            .current_dir(&self.work);
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        Run::of(self.cmd(args), args)
    }

    /// Runs and insists on exit 0 (failing with the whole picture).
    pub fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        if r.code != Some(0) {
            panic!(
                "swarm {args:?} should succeed\n{}\n{}",
                r.explain(),
                self.explain()
            );
        }
        r
    }

    /// `swarm up --no-attach`, then waits for the lead to claim the team.
    pub fn up(&self) -> Run {
        let r = self.ok(&["up", "--no-attach"]);
        self.wait_lead();
        r
    }

    /// Waits until a live lead pid is recorded in config.json.
    pub fn wait_lead(&self) -> u32 {
        let mut pid = 0;
        wait_until(
            "the lead records itself in config.json (leadProcess.pid alive)",
            WAIT,
            || {
                pid = self.lead_pid().unwrap_or(0);
                pid != 0 && std::path::Path::new(&format!("/proc/{pid}")).exists()
            },
            || self.explain(),
        );
        pid
    }

    pub fn lead_pid(&self) -> Option<u32> {
        self.config()?
            .pointer("/leadProcess/pid")
            .and_then(|v| v.as_u64())
            .map(|p| p as u32)
    }

    /// `swarm spawn NAME -- CMD ARGS` with the work dir as cwd.
    pub fn spawn(&self, name: &str, command: &[&str]) -> Run {
        let mut args = vec!["spawn", name, "--"];
        args.extend_from_slice(command);
        self.ok(&args)
    }

    pub fn config_path(&self) -> PathBuf {
        self.sb.path(&format!("teams/{}/config.json", self.team))
    }

    /// The roster, `None` when the team is gone (or unreadable).
    pub fn config(&self) -> Option<serde_json::Value> {
        let bytes = std::fs::read(self.config_path()).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// The roster entry of `name`.
    pub fn member(&self, name: &str) -> Option<serde_json::Value> {
        self.config()?
            .get("members")?
            .as_array()?
            .iter()
            .find(|m| m.get("name").and_then(|n| n.as_str()) == Some(name))
            .cloned()
    }

    /// Teammate names on the roster (the lead left out).
    pub fn members(&self) -> Vec<String> {
        let Some(c) = self.config() else {
            return Vec::new();
        };
        c.get("members")
            .and_then(|m| m.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|m| m.get("name").and_then(|n| n.as_str()))
                    .filter(|n| *n != "team-lead")
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The pane id the roster records for `name`.
    pub fn pane_of(&self, name: &str) -> String {
        self.member(name)
            .and_then(|m| {
                m.get("tmuxPaneId")
                    .and_then(|p| p.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| panic!("{name} has no pane on the roster\n{}", self.explain()))
    }

    /// The pane's process id (its process group leader).
    pub fn pid_of(&self, name: &str) -> u32 {
        let pane = self.pane_of(name);
        self.tmux
            .pane(&pane)
            .unwrap_or_else(|| {
                panic!(
                    "pane {pane} of {name} is not on the server\n{}",
                    self.explain()
                )
            })
            .pid
    }

    /// Waits until fake agent `name` wrote its `.ready` file.
    pub fn wait_ready(&self, name: &str) {
        let f = self.work.join(format!("{name}.ready"));
        wait_until(
            &format!("{name} is ready ({} exists)", f.display()),
            WAIT,
            || f.exists(),
            || self.explain(),
        );
    }

    /// `task create` then `task update --owner NAME --status in_progress`.
    pub fn task_in_progress(&self, subject: &str, owner: &str) -> String {
        let id = self
            .ok(&["task", "create", subject])
            .stdout
            .trim()
            .to_string();
        let id = id
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|s| !s.is_empty())
            .unwrap_or(&id)
            .to_string();
        self.ok(&[
            "task",
            "update",
            &id,
            "--owner",
            owner,
            "--status",
            "in-progress",
        ]);
        id
    }

    pub fn task(&self, id: &str) -> serde_json::Value {
        self.sb.read_json(&format!("tasks/{}/{id}.json", self.team))
    }

    pub fn lead_log(&self) -> PathBuf {
        self.sb.path(&format!("swarm/{}/logs/lead.log", self.team))
    }

    /// The team's state directories that `down` must delete.
    pub fn team_dirs(&self) -> Vec<PathBuf> {
        [
            format!("teams/{}", self.team),
            format!("tasks/{}", self.team),
        ]
        .iter()
        .map(|p| self.sb.path(p))
        .filter(|p| p.exists())
        .collect()
    }

    /// Everything needed to explain a failure.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        s.push_str("=== tmux ===\n");
        s.push_str(&self.tmux.dump());
        s.push_str("=== lead.log (tail) ===\n");
        match std::fs::read_to_string(self.lead_log()) {
            Ok(t) => {
                let lines: Vec<&str> = t.lines().collect();
                for l in &lines[lines.len().saturating_sub(30)..] {
                    s.push_str(&format!("    {l}\n"));
                }
            }
            Err(e) => s.push_str(&format!("    ({}: {e})\n", self.lead_log().display())),
        }
        s.push_str("=== config.json ===\n");
        match std::fs::read_to_string(self.config_path()) {
            Ok(t) => s.push_str(&t),
            Err(e) => s.push_str(&format!("({e})")),
        }
        s.push('\n');
        s
    }
}
