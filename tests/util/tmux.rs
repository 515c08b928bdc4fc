//! A team living on a private tmux server ([`TmuxTeam`] on a
//! [`TmuxServer`], from `tmux_server.rs`): every `swarm` command it builds
//! names the private socket (`SWARM_TMUX_SOCKET`) and runs without
//! `TMUX`/`TMUX_PANE`, so no test ever reaches the developer's tmux. The
//! server starts with a `canary` session that must survive every teardown,
//! and is killed on drop.
//!
//! Failures explain themselves: [`TmuxTeam::explain`] prints every pane
//! (id, session, title, colour, pid, dead), each pane's capture, the tail
//! of the lead's log and the roster.

use super::{Run, Sandbox, pid_alive, wait_until};
use std::path::{Path, PathBuf};
use std::process::Command;

pub use super::WAIT;
pub use super::process::group_alive;
pub use super::tmux_server::{TmuxServer, tmux_available};
// Where `Pane` was before it moved: kept for callers that name it here.
#[allow(unused_imports)]
pub use super::tmux_server::Pane;

/// The directory of the fake agents.
pub fn agents_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents")
}

/// The path of fake agent `name` as a string (for `-- CMD`).
pub fn agent(name: &str) -> String {
    agents_dir().join(name).to_string_lossy().into_owned()
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
    /// Dropped first (fields drop in this order): every pane's processes
    /// are killed before the state root is removed. The other way round, a
    /// runtime still running wrote its lock files into a tree it made anew,
    /// and a `swarm-test-*` directory was left in the temp directory by
    /// every run (the demo's and `revive_by_message`'s).
    pub tmux: TmuxServer,
    pub sb: Sandbox,
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

    /// Waits until a live lead other than `old` is recorded (after the old
    /// one was killed or quit and `swarm up` ran again).
    pub fn wait_new_lead(&self, old: u32) -> u32 {
        let mut pid = 0;
        wait_until(
            &format!("a new lead (not {old}) records itself and runs"),
            WAIT,
            || {
                pid = self.lead_pid().unwrap_or(0);
                pid != 0 && pid != old && pid_alive(pid)
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

    /// Entries of `name`'s inbox file (unconsumed), as read.
    pub fn inbox(&self, name: &str) -> Vec<serde_json::Value> {
        let p = self
            .sb
            .path(&format!("teams/{}/inboxes/{name}.json", self.team));
        let Ok(bytes) = std::fs::read(&p) else {
            return Vec::new();
        };
        serde_json::from_slice::<Vec<serde_json::Value>>(&bytes).unwrap_or_default()
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
