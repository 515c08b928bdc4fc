//! What the live tests (`tests/live_*.rs`) share: the pinned CLIs in the
//! agent cache (`scripts/install-agents`) and the rule for a missing one
//! ([`installed`]: `SKIP` line, or a failure when `SWARM_REQUIRE_AGENTS=1`),
//! one live test at a time ([`serial`]), the scripted model servers under
//! `tests/models/` ([`ModelServer`]: started on 127.0.0.1, every request
//! recorded, the script rewritten while the CLI runs) and the process
//! probes that prove what a real CLI left behind ([`children`],
//! [`cmdline`], [`alive`]); [`LiveTeam`] gives a live team its waits and
//! its failure report.

use super::tmux::{TmuxTeam, WAIT, tmux_available};
use super::{Run, wait_until};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long a live step may take (a cold CLI start is seconds here, more
/// on a loaded 2-core machine).
pub const LIVE_WAIT: Duration = Duration::from_secs(60);

/// Where `scripts/install-agents` installs the pinned CLIs.
pub fn agent_cache() -> PathBuf {
    match std::env::var_os("SWARM_AGENT_CACHE").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/swarm-agents")
        }
    }
}

fn python_found() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `bin` (a pinned CLI, `what` names it) when it, tmux and python3 (the
/// scripted model server) are there; else `None` after printing `SKIP
/// <test>: …`, or a panic with `SWARM_REQUIRE_AGENTS=1` (CI).
pub fn installed(test: &str, bin: PathBuf, what: &str) -> Option<PathBuf> {
    if !tmux_available(test) {
        return None;
    }
    let missing = if !bin.is_file() {
        Some(format!(
            "{what} is not installed at {} (run scripts/install-agents)",
            bin.display()
        ))
    } else if !python_found() {
        Some("python3 (the scripted model server) not found".to_string())
    } else {
        None
    };
    match missing {
        None => Some(bin),
        Some(why) => {
            if std::env::var("SWARM_REQUIRE_AGENTS").as_deref() == Ok("1") {
                panic!("{test}: {why}, and SWARM_REQUIRE_AGENTS=1");
            }
            println!("SKIP {test}: {why}");
            None
        }
    }
}

/// One live test at a time: each real CLI takes a core for its first seconds.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LIVE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scripted model server (`tests/models/<program>`), killed on drop.
pub struct ModelServer {
    child: Child,
    pub dir: tempfile::TempDir,
    pub port: u16,
}

impl ModelServer {
    /// Starts `tests/models/<program>` with `script` and waits until it listens.
    pub fn start(program: &str, script: &Value) -> ModelServer {
        let dir = tempfile::Builder::new()
            .prefix("swarm-model-")
            .tempdir()
            .expect("tempdir");
        ModelServer::write(&dir.path().join("script.json"), script);
        let port_file = dir.path().join("port");
        let child = Command::new("python3")
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/models")
                    .join(program),
            )
            .arg("--script")
            .arg(dir.path().join("script.json"))
            .arg("--record")
            .arg(dir.path().join("requests.jsonl"))
            .arg("--port-file")
            .arg(&port_file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("server.err")).expect("stderr file"))
            .spawn()
            .unwrap_or_else(|e| panic!("starting python3 tests/models/{program}: {e}"));
        let mut s = ModelServer {
            child,
            dir,
            port: 0,
        };
        wait_until(
            "the scripted model server listens",
            WAIT,
            || {
                s.port = std::fs::read_to_string(&port_file)
                    .ok()
                    .and_then(|p| p.trim().parse().ok())
                    .unwrap_or(0);
                s.port != 0
            },
            || std::fs::read_to_string(s.dir.path().join("server.err")).unwrap_or_default(),
        );
        s
    }

    /// Writes a script whole (temp + rename): the server re-reads it when it changes.
    pub fn write(path: &Path, script: &Value) {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(script).expect("json")).expect("script");
        std::fs::rename(&tmp, path).expect("script rename");
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.path().join("requests.jsonl"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The agent-loop requests (those offering tools).
    pub fn main_requests(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|r| r["main"] == true)
            .collect()
    }

    /// One line per request (`text` tails the request's text), and the
    /// server's stderr, for failure messages.
    pub fn summary(&self, text: impl Fn(&Value) -> String) -> String {
        let mut s = String::new();
        for r in self.requests() {
            let t = text(&r);
            let tail: String = t
                .chars()
                .rev()
                .take(160)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            s.push_str(&format!(
                "  {:.3} {} main={} rule={} last=…{}\n",
                r["t"].as_f64().unwrap_or(0.0),
                r["path"].as_str().unwrap_or(""),
                r["main"],
                r["rule"],
                tail.replace('\n', "⏎")
            ));
        }
        s.push_str(
            &std::fs::read_to_string(self.dir.path().join("server.err")).unwrap_or_default(),
        );
        s
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The epoch time a request was recorded at.
pub fn at(r: &Value) -> f64 {
    r["t"].as_f64().unwrap_or(0.0)
}

/// Now, as an epoch time comparable with [`at`].
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

/// Direct children of `pid`.
pub fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        // pid (comm) state ppid …: the comm may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|x| x.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(p);
        }
    }
    out
}

/// Every descendant of `pid`.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        for c in children(p) {
            out.push(c);
            stack.push(c);
        }
    }
    out
}

pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// Running (a zombie is not).
pub fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// `swarm ARGS` on `t` as a user whose home is `home` runs it: `bin_dir`
/// (the CLI's) first on `PATH`, and every request but loopback sent to a
/// closed proxy port, so nothing reaches the network.
pub fn user_command(t: &TmuxTeam, args: &[&str], home: &Path, bin_dir: &Path) -> Command {
    let mut c = t.cmd(args);
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    c.env("HOME", home)
        .env("PATH", path)
        .env("USER", "swarm-live")
        .env("TERM", "xterm-256color")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("NO_PROXY", "127.0.0.1,localhost");
    c
}

/// A live team: a team on a private tmux server, a scripted model and the
/// user's `swarm` command line; the waits and the failure report every
/// live test uses come with it.
pub trait LiveTeam {
    fn team(&self) -> &TmuxTeam;
    fn server(&self) -> &ModelServer;
    /// `swarm ARGS` as the user runs it (their home, settings, `PATH`).
    fn cmd(&self, args: &[&str]) -> Command;
    /// A request's conversation, to match needles against.
    fn request_text(&self, r: &Value) -> String;
    /// What a failure report shows of a request (its last message).
    fn shown_text(&self, r: &Value) -> String {
        self.request_text(r)
    }

    /// Runs and insists on exit 0 (failing with the whole picture).
    fn ok(&self, args: &[&str]) -> Run {
        let r = Run::of(self.cmd(args), args);
        if r.code != Some(0) {
            panic!(
                "swarm {args:?} should succeed\n{}\n{}",
                r.explain(),
                self.explain()
            );
        }
        r
    }

    /// Waits for the first agent-loop request after the first `after`
    /// ones whose conversation contains `needle`.
    fn wait_request(&self, what: &str, after: usize, needle: &str) -> Value {
        let mut found = None;
        wait_until(
            what,
            LIVE_WAIT,
            || {
                found = self
                    .server()
                    .main_requests()
                    .into_iter()
                    .skip(after)
                    .find(|r| self.request_text(r).contains(needle));
                found.is_some()
            },
            || self.explain(),
        );
        found.expect("found")
    }

    /// Every entry the lead received (consumed ones included).
    fn lead_entries(&self) -> Vec<Value> {
        let args = ["inbox", "--all", "--json"];
        let r = Run::of(self.cmd(&args), &args);
        serde_json::from_str::<Value>(&r.stdout)
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    /// Waits until the lead has an entry from `from` whose text contains
    /// `needle`; returns it and when it was seen.
    fn wait_lead_entry(&self, what: &str, from: &str, needle: &str) -> (Value, f64) {
        let mut found = None;
        wait_until(
            what,
            LIVE_WAIT,
            || {
                found = self.lead_entries().into_iter().find(|e| {
                    e["from"] == from && e["text"].as_str().is_some_and(|t| t.contains(needle))
                });
                found.is_some()
            },
            || self.explain(),
        );
        (found.expect("found"), now())
    }

    /// The team's picture, every model request, the tail of every pane's output.
    fn explain(&self) -> String {
        let t = self.team();
        let mut s = t.explain();
        s.push_str("=== model requests ===\n");
        s.push_str(&self.server().summary(|r| self.shown_text(r)));
        let out = t.sb.path(&format!("swarm/{}/output", t.team));
        for e in std::fs::read_dir(&out).into_iter().flatten().flatten() {
            let text =
                String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default()).into_owned();
            let tail: String = text
                .chars()
                .rev()
                .take(2000)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            s.push_str(&format!("=== {} (tail) ===\n{tail}\n", e.path().display()));
        }
        s
    }
}

/// The swarm binary as a running runtime sees itself (`current_exe`), the
/// path the team instructions give an agent.
pub fn swarm_exe() -> String {
    std::fs::canonicalize(super::swarm_bin())
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| super::swarm_bin().to_string())
}

/// A directory to put first on a live CLI's `PATH`: its `ssh` fails at
/// once (`tests/agents/offline/ssh`), so a CLI that probes a git host
/// over ssh stays on the machine.
pub fn offline_bin_dir() -> PathBuf {
    super::tmux::agents_dir().join("offline")
}

/// Makes `tmux`'s global environment exactly `vars`: every variable the
/// server copied from the test process when it started goes first. A
/// program that opens panes itself (Claude Code's own tmux backend starts
/// a teammate with `respawn-pane`) gives them the server's environment,
/// not its own (reference §8.3): without this a teammate would run with
/// the developer's `HOME`, credentials and config dir.
pub fn set_server_environment(tmux: &super::tmux_server::TmuxServer, vars: &[(&str, String)]) {
    let shown = tmux.ok(&["show-environment", "-g"]);
    for line in shown.lines() {
        // `NAME=value`, or `-NAME` for one marked as removed.
        let name = line.trim_start_matches('-').split('=').next().unwrap_or("");
        if !name.is_empty() {
            tmux.ok(&["set-environment", "-g", "-u", name]);
        }
    }
    for (name, value) in vars {
        tmux.ok(&["set-environment", "-g", name, value]);
    }
}
