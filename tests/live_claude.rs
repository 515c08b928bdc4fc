//! Live: the real Claude Code CLI (pinned 2.1.332, installed into a cache
//! by `scripts/install-agents`) as a swarm teammate on a private tmux
//! server, against a scripted model on 127.0.0.1 (`tests/models/anthropic.py`)
//! that records every request. What is checked is what the real process
//! does: its requests, the files it writes, its process and its pane.
//!
//! The user it runs for has a home of their own (onboarding done, the API
//! key approved, the work dir trusted, a `settings.json` naming a model) and
//! the swarm root elsewhere (`SWARM_HOME`), or, in one test, the root is
//! their `CLAUDE_CONFIG_DIR`. Nothing reaches the network: the API is the
//! scripted server, and every other request goes to a closed proxy port.
//!
//! A test needing the CLI prints `SKIP` when it is not installed, and fails
//! instead when `SWARM_REQUIRE_AGENTS=1` (CI). The live tests run one at a
//! time: each Claude Code takes a core for its first seconds.
//!
//! Figures (spawn → first model request, `swarm send` → the next request,
//! the model's SendMessage → the lead has it) are printed as `FIGURE …`
//! lines; `cargo test live_claude::measure -- --ignored --nocapture` prints
//! medians over several runs.

use crate::util::live::{
    LIVE_WAIT, LiveTeam, ModelServer, agent_cache, alive, at, children, cmdline, installed, now,
    serial, user_command,
};
use crate::util::tmux::{TmuxTeam, WAIT, group_alive};
use crate::util::{Run, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The pinned version `scripts/install-agents` installs.
pub(crate) const CLAUDE_VERSION: &str = "2.1.332";

/// The API key the user has; Claude Code accepts it without asking
/// because `.claude.json` approves its last 20 characters.
pub(crate) const KEY: &str = "sk-ant-api03-swarm-live-0123456789abcdefghijKLMNOP";

/// The model the user's own `settings.json` names: seen in a request, it
/// proves the teammate read the user's settings.
const USER_MODEL: &str = "claude-users-settings-model";

/// The installed `claude`, where `scripts/install-agents` puts it.
fn claude_bin() -> PathBuf {
    agent_cache().join(format!(
        "claude-code-{CLAUDE_VERSION}/node_modules/.bin/claude"
    ))
}

/// The installed CLI, or `None` after printing SKIP (a panic with
/// `SWARM_REQUIRE_AGENTS=1`).
fn live_claude(test: &str) -> Option<PathBuf> {
    installed(test, claude_bin(), &format!("Claude Code {CLAUDE_VERSION}"))
}

/// The scripted Anthropic Messages API server.
fn anthropic(script: &Value) -> ModelServer {
    ModelServer::start("anthropic.py", script)
}

/// Every piece of text in a request's messages.
fn conversation(body: &Value) -> String {
    let mut out = String::new();
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    if let Some(m) = body.get("messages") {
        walk(m, &mut out);
    }
    out
}

/// A reply calling `tool` with `input`, then one ending the turn.
fn calls(tool: &str, input: Value) -> Value {
    json!([[{"type": "tool_use", "name": tool, "input": input}], [{"type": "text", "text": "done"}]])
}

fn send_message(to: &str, text: &str) -> Value {
    json!({"to": to, "message": text, "summary": text})
}

/// A rule answering the first agent-loop request whose conversation
/// contains `needle`.
fn rule(name: &str, needle: &str, replies: Value) -> Value {
    json!({"name": name, "when": {"contains": needle}, "replies": replies})
}

/// The rule that approves any shutdown request, as the model is told to.
fn approve_shutdown() -> Value {
    json!({"name": "approve-shutdown", "when": {"contains": "shutdown_request"},
           "capture": "shutdown-[0-9]+@[A-Za-z0-9_.-]+",
           "replies": [[{"type": "tool_use", "name": "SendMessage", "input": {"to": "team-lead",
               "message": {"type": "shutdown_response", "request_id": "{{capture}}", "approve": true}}}]]})
}

/// A user's home where Claude Code is set up: onboarding done, [`KEY`]
/// approved, `work` trusted, and `settings.json` naming [`USER_MODEL`] in
/// `config_dir` (`~/.claude` or the user's `CLAUDE_CONFIG_DIR`), with the
/// global config in `global_dir` (`~` or `CLAUDE_CONFIG_DIR`).
pub(crate) fn set_up_claude_user(global_dir: &Path, config_dir: &Path, work: &Path) {
    std::fs::create_dir_all(config_dir).unwrap();
    let tail = &KEY[KEY.len() - 20..];
    let work = work.to_string_lossy().into_owned();
    let global = json!({
        "hasCompletedOnboarding": true,
        "lastOnboardingVersion": CLAUDE_VERSION,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [tail], "rejected": []},
        "projects": {work: {"hasTrustDialogAccepted": true, "allowedTools": []}},
    });
    std::fs::write(
        global_dir.join(".claude.json"),
        serde_json::to_vec_pretty(&global).unwrap(),
    )
    .unwrap();
    std::fs::write(
        config_dir.join("settings.json"),
        serde_json::to_vec_pretty(&json!({"model": USER_MODEL})).unwrap(),
    )
    .unwrap();
}

/// Where the user's Claude Code setup lives in a test.
enum UserSetup {
    /// A home of its own (`~/.claude.json`, `~/.claude/`); `SWARM_HOME` is the sandbox.
    OwnHome,
    /// `CLAUDE_CONFIG_DIR` is the sandbox root, which is also the swarm
    /// root (no `SWARM_HOME`).
    ConfigDirIsRoot,
}

/// A team on a private tmux server, a scripted model, and a user set up
/// for Claude Code.
struct Live {
    t: TmuxTeam,
    server: ModelServer,
    home: tempfile::TempDir,
    claude_dir: PathBuf,
    setup: UserSetup,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Live {
    fn new(test: &str, team: &str, setup: UserSetup, rules: Vec<Value>) -> Option<Live> {
        let claude = live_claude(test)?;
        let serial = serial();
        let t = TmuxTeam::new(test, team)?;
        let home = tempfile::Builder::new()
            .prefix("swarm-user-")
            .tempdir()
            .expect("tempdir");
        match setup {
            UserSetup::OwnHome => {
                set_up_claude_user(home.path(), &home.path().join(".claude"), &t.work)
            }
            UserSetup::ConfigDirIsRoot => set_up_claude_user(t.sb.root(), t.sb.root(), &t.work),
        }
        let server =
            anthropic(&json!({"rules": rules, "default": [{"type": "text", "text": "ok"}]}));
        Some(Live {
            t,
            server,
            home,
            claude_dir: claude.parent().expect("bin dir").to_path_buf(),
            setup,
            _serial: serial,
        })
    }

    fn up(&self) {
        self.ok(&["up", "--no-attach"]);
        self.t.wait_lead();
    }

    /// `swarm spawn NAME --agent claude --prompt PROMPT EXTRA…`.
    fn spawn(&self, name: &str, prompt: &str, extra: &[&str]) -> Run {
        let mut args = vec!["spawn", name, "--agent", "claude", "--prompt", prompt];
        args.extend_from_slice(extra);
        self.ok(&args)
    }

    /// The pid of `name`'s Claude Code: the child of its pane's runtime.
    /// `name`'s `sessionId` on the roster (recorded at spawn), once there.
    /// Claude Code rewrites config.json in place: a read may land mid-write.
    fn session_id(&self, name: &str) -> String {
        let mut session = String::new();
        wait_until(
            &format!("{name}'s sessionId is on the roster (recorded at spawn)"),
            WAIT,
            || {
                session = self
                    .t
                    .member(name)
                    .and_then(|m| m["sessionId"].as_str().map(str::to_string))
                    .unwrap_or_default();
                !session.is_empty()
            },
            || self.explain(),
        );
        session
    }

    fn claude_pid(&self, name: &str) -> u32 {
        let runtime = self.t.pid_of(name);
        let mut pid = None;
        wait_until(
            &format!("{name}'s Claude Code process runs under its runtime (pid {runtime})"),
            LIVE_WAIT,
            || {
                pid = children(runtime)
                    .into_iter()
                    .find(|p| cmdline(*p).iter().any(|a| a == "--agent-name"));
                pid.is_some()
            },
            || self.explain(),
        );
        pid.expect("found")
    }

    fn output_log(&self, name: &str) -> PathBuf {
        self.t
            .sb
            .path(&format!("swarm/{}/output/{name}.log", self.t.team))
    }
}

impl LiveTeam for Live {
    fn team(&self) -> &TmuxTeam {
        &self.t
    }

    fn server(&self) -> &ModelServer {
        &self.server
    }

    /// `swarm ARGS` as the user would run it: their home, `claude` on
    /// `PATH`, the API at the scripted server, everything else to a closed
    /// proxy port.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = user_command(&self.t, args, self.home.path(), &self.claude_dir);
        c.env("ANTHROPIC_BASE_URL", self.server.base_url())
            .env("ANTHROPIC_API_KEY", KEY)
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        if let UserSetup::ConfigDirIsRoot = self.setup {
            c.env_remove("SWARM_HOME")
                .env("CLAUDE_CONFIG_DIR", self.t.sb.root());
        }
        c
    }

    fn request_text(&self, r: &Value) -> String {
        conversation(&r["body"])
    }

    /// The request's last message.
    fn shown_text(&self, r: &Value) -> String {
        r.pointer("/body/messages")
            .and_then(Value::as_array)
            .and_then(|m| m.last())
            .map(|m| conversation(&json!({"messages": [m]})))
            .unwrap_or_default()
    }
}

/// Every file under `dir` containing `needle`, outside `except`.
fn files_containing(dir: &Path, needle: &str, except: &Path) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if d.starts_with(except) {
            continue;
        }
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file()
                && std::fs::read(&p)
                    .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            {
                hits.push(p);
            }
        }
    }
    hits
}

fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0)
}

/// Spawn → first request → reply → `swarm send` → next request → reply →
/// a task claimed and completed → shutdown, with the figures of one run.
#[test]
fn a_claude_teammate_works_the_team_with_the_users_own_setup_and_keeps_the_key_secret() {
    let rules = vec![
        rule(
            "hello",
            "ROLE-7q",
            calls("SendMessage", send_message("team-lead", "HELLO-7q")),
        ),
        rule(
            "pong",
            "PING-7q",
            calls("SendMessage", send_message("team-lead", "PONG-7q")),
        ),
        rule(
            "task",
            "CLAIM-7q",
            json!([
                [{"type": "tool_use", "name": "TaskUpdate", "input": {"taskId": "1", "owner": "worker", "status": "in_progress"}}],
                [{"type": "tool_use", "name": "TaskUpdate", "input": {"taskId": "1", "status": "completed"}}],
                [{"type": "tool_use", "name": "SendMessage", "input": send_message("team-lead", "DONE-7q")}],
                [{"type": "text", "text": "task done"}]
            ]),
        ),
        approve_shutdown(),
    ];
    let Some(l) = Live::new(
        "live_claude_works_the_team",
        "live",
        UserSetup::OwnHome,
        rules,
    ) else {
        return;
    };
    l.up();
    let prompt = "You are worker, the team's reviewer (ROLE-7q). TASK: say hello to the lead.";
    let spawned = Instant::now();
    let t0 = now();
    let r = l.spawn("worker", prompt, &["--env", "ANTHROPIC_API_KEY"]);
    let spawn_cmd = spawned.elapsed().as_secs_f64();
    assert!(
        r.stderr.contains("passed by name: ") && r.stderr.contains("ANTHROPIC_API_KEY"),
        "the spawn names what it passed\n{}",
        r.explain()
    );

    // Its first request: the role prompt and the task, as Claude Code wraps
    // an inbox message from the lead; the user's key and settings; no
    // onboarding in the way.
    let first = l.wait_request(
        "worker's first model request carries its prompt",
        0,
        "ROLE-7q",
    );
    let spawn_to_first = at(&first) - t0;
    let text = conversation(&first["body"]);
    assert!(
        text.contains("<teammate-message teammate_id=\"team-lead\"") && text.contains(prompt),
        "the prompt reaches the model as a message from the lead\n{text}"
    );
    assert_eq!(first["headers"]["x-api-key"], KEY, "{}", l.explain());
    assert_eq!(
        first["body"]["model"], USER_MODEL,
        "the user's settings.json is read"
    );
    let system = first["body"]["system"].to_string();
    assert!(
        system.contains("Agent Teammate Communication"),
        "teammate mode"
    );

    // Its reply reaches the lead.
    let (_, seen) = l.wait_lead_entry("worker's hello reaches the lead", "worker", "HELLO-7q");
    let hello = l
        .server
        .requests()
        .into_iter()
        .find(|r| r["rule"] == "hello")
        .expect("the hello reply");
    let reply_to_lead = seen - at(&hello);

    // A message from the lead shows up in its next request.
    let before = l.server.main_requests().len();
    let sent = now();
    l.ok(&["send", "--to", "worker", "PING-7q please answer"]);
    let next = l.wait_request(
        "the lead's PING reaches worker's next request",
        before,
        "PING-7q",
    );
    let send_to_request = at(&next) - sent;
    l.wait_lead_entry("worker's PONG reaches the lead", "worker", "PONG-7q");

    // A task claimed and completed.
    let id = l
        .ok(&["task", "create", "review the diff"])
        .stdout
        .trim()
        .to_string();
    assert_eq!(id, "1");
    l.ok(&[
        "send",
        "--to",
        "worker",
        "CLAIM-7q: claim task 1, then complete it",
    ]);
    l.wait_lead_entry("worker reports the task done", "worker", "DONE-7q");
    let task = l.t.task("1");
    assert_eq!(
        (task["owner"].as_str(), task["status"].as_str()),
        (Some("worker"), Some("completed")),
        "{task}"
    );

    // The key was passed by name: not in argv, the pane's command, its
    // output, the logs or the roster (which keeps the name only).
    let pid = l.claude_pid("worker");
    let argv = cmdline(pid).join(" ");
    assert!(argv.contains("--permission-mode default"), "{argv}");
    for p in std::iter::once(pid).chain([l.t.pid_of("worker")]) {
        assert!(
            !cmdline(p).join(" ").contains(KEY),
            "the key is in the argv of {p}"
        );
    }
    let start_cmd =
        l.t.tmux
            .ok(&["list-panes", "-a", "-F", "#{pane_start_command}"]);
    assert!(
        !start_cmd.contains(KEY),
        "the key is in a pane's start command"
    );
    let leaks = files_containing(l.t.sb.root(), KEY, &l.t.work);
    assert!(leaks.is_empty(), "the key is written in {leaks:?}");
    assert!(l.output_log("worker").is_file());
    let member = l.t.member("worker").expect("worker on the roster");
    assert_eq!(member["swarmPassEnv"], json!(["ANTHROPIC_API_KEY"]));
    assert!(member.get("swarmEnv").is_none(), "{member}");
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    assert!(
        environ.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "the key reached Claude Code's environment"
    );

    // The user's files are what it read, and the team's files are the
    // root's: its config dir is swarm's linked one.
    let env = String::from_utf8_lossy(&environ).into_owned();
    let linked = l.t.sb.path("swarm/live/claude-config");
    assert!(
        env.split('\0')
            .any(|kv| kv == format!("CLAUDE_CONFIG_DIR={}", linked.display())),
        "{env}"
    );
    assert_eq!(
        std::fs::read_link(linked.join("teams")).unwrap(),
        l.t.sb.path("teams")
    );
    assert!(
        std::fs::symlink_metadata(linked.join(".claude.json"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "Claude Code wrote its global config through the link, not over it"
    );
    let global: Value =
        serde_json::from_slice(&std::fs::read(l.home.path().join(".claude.json")).unwrap())
            .unwrap();
    assert!(
        global["numStartups"].as_u64().is_some_and(|n| n >= 1),
        "the user's .claude.json was updated: {global}"
    );
    assert!(
        !l.t.sb.path(".claude.json").exists(),
        "nothing written as the root's own .claude.json"
    );

    // Inboxes Claude Code rewrote: its temp + rename leaves 0644, inside
    // swarm's 0700 directory (nothing is readable by others); swarm's next
    // write of that inbox makes it 0600 again.
    let inboxes = l.t.sb.path("teams/live/inboxes");
    assert_eq!(mode_of(&inboxes), 0o700);
    let worker_inbox = inboxes.join("worker.json");
    println!(
        "NOTE inbox rewritten by Claude Code: mode {:o}",
        mode_of(&worker_inbox)
    );
    assert!(
        matches!(mode_of(&worker_inbox), 0o644 | 0o600),
        "{:o}",
        mode_of(&worker_inbox)
    );

    // Shutdown: approved by the model, the process exits, the pane closes.
    let pane = l.t.pane_of("worker");
    let r = l.ok(&["shutdown", "worker", "--wait", "30"]);
    assert!(r.stdout.contains("worker shut down"), "{}", r.explain());
    wait_until(
        "worker's Claude Code has exited",
        WAIT,
        || !alive(pid),
        || l.explain(),
    );
    assert!(
        l.t.tmux.pane(&pane).is_none(),
        "pane closed\n{}",
        l.explain()
    );
    assert!(
        l.t.member("worker").is_none(),
        "member removed\n{}",
        l.explain()
    );

    println!(
        "FIGURE claude {CLAUDE_VERSION}: spawn → first model request {spawn_to_first:.2} s \
         (the spawn command {spawn_cmd:.2} s); send → next request {send_to_request:.3} s; \
         SendMessage reply → the lead has it {reply_to_lead:.3} s"
    );
}

/// Default mode: a tool that needs permission becomes a permission request
/// in the lead's approval queue and does not run; `swarm kill` then leaves
/// no process and no pane.
#[test]
fn a_claude_teammate_in_default_mode_asks_the_lead_and_kill_leaves_no_process() {
    let marker = "ran-without-asking";
    let rules = vec![rule(
        "bash",
        "ROLE-3k",
        calls(
            "Bash",
            json!({"command": format!("touch {marker}"), "description": "touch a file"}),
        ),
    )];
    let Some(l) = Live::new(
        "live_claude_default_mode",
        "asks",
        UserSetup::OwnHome,
        rules,
    ) else {
        return;
    };
    l.up();
    l.spawn("careful", "You are careful (ROLE-3k).", &[]);
    let (req, _) = l.wait_lead_entry(
        "careful's Bash call reaches the lead as a permission request",
        "careful",
        "permission_request",
    );
    let frame: Value = serde_json::from_str(req["text"].as_str().unwrap()).unwrap();
    assert_eq!(frame["tool_name"], "Bash", "{frame}");
    assert_eq!(frame["agent_id"], "careful");
    assert!(
        !l.t.work.join(marker).exists(),
        "the tool waits for the lead"
    );

    let pid = l.claude_pid("careful");
    let runtime = l.t.pid_of("careful");
    let pane = l.t.pane_of("careful");
    l.ok(&["kill", "careful"]);
    wait_until(
        "careful's Claude Code, its runtime and their process group are gone",
        WAIT,
        || !alive(pid) && !alive(runtime) && !group_alive(runtime),
        || l.explain(),
    );
    assert!(
        l.t.tmux.pane(&pane).is_none(),
        "pane closed\n{}",
        l.explain()
    );
    assert!(l.t.member("careful").is_none());
}

/// The swarm root is the user's own `CLAUDE_CONFIG_DIR`: the teammate runs
/// with it as the user does, no linked dir, and reads the user's
/// `.claude.json` there (no onboarding) and `settings.json`.
#[test]
fn a_root_that_is_the_users_claude_config_dir_is_used_as_it_is() {
    let rules = vec![rule(
        "hello",
        "ROLE-9m",
        calls("SendMessage", send_message("team-lead", "HELLO-9m")),
    )];
    let Some(l) = Live::new(
        "live_claude_root_is_config_dir",
        "own",
        UserSetup::ConfigDirIsRoot,
        rules,
    ) else {
        return;
    };
    l.up();
    l.spawn("native", "You are native (ROLE-9m).", &[]);
    let first = l.wait_request("native's first request", 0, "ROLE-9m");
    assert_eq!(first["body"]["model"], USER_MODEL);
    l.wait_lead_entry("native's hello reaches the lead", "native", "HELLO-9m");
    let pid = l.claude_pid("native");
    let environ = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap())
        .into_owned();
    let vars: Vec<&str> = environ.split('\0').collect();
    assert!(
        vars.contains(&format!("CLAUDE_CONFIG_DIR={}", l.t.sb.root().display()).as_str()),
        "the user's own CLAUDE_CONFIG_DIR: {vars:?}"
    );
    assert!(
        !vars
            .iter()
            .any(|v| v.starts_with("CLAUDE_SECURESTORAGE_CONFIG_DIR=")),
        "{vars:?}"
    );
    assert!(
        !l.t.sb.path("swarm/own/claude-config").exists(),
        "no linked dir"
    );
    l.ok(&["kill", "native"]);
    wait_until(
        "native's Claude Code is gone",
        WAIT,
        || !alive(pid),
        || l.explain(),
    );
}

/// Claude Code teammates can read their roster mid-write and then send a
/// `shutdown_approved` without `paneId`/`backendType` (3 of 16 in the
/// issue): swarm takes it like any other approval.
#[test]
fn a_shutdown_approval_without_pane_id_or_backend_is_accepted() {
    let Some(t) = TmuxTeam::new("shutdown_approved_without_pane", "bare") else {
        return;
    };
    t.up();
    t.spawn("quiet", &["sleep", "100000"]);
    let pane = t.pane_of("quiet");
    let pgid = t.pid_of("quiet");
    let task = t.task_in_progress("held", "quiet");
    let args = ["shutdown", "quiet", "--wait", "20"];
    let shutdown = t
        .cmd(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("swarm shutdown");
    let team = swarm::team::Team::new(&swarm::paths::Root::new(t.sb.root()), "bare");
    let mut request = None;
    wait_until(
        "quiet's inbox holds the shutdown request",
        WAIT,
        || {
            request = team.mailbox().read("quiet").ok().and_then(|r| {
                r.entries.iter().find_map(|e| match e.protocol() {
                    Some(swarm::protocol::Message::ShutdownRequest(s)) => Some(s.request_id),
                    _ => None,
                })
            });
            request.is_some()
        },
        || t.explain(),
    );
    let approved = swarm::protocol::Message::ShutdownApproved(swarm::protocol::ShutdownApproved {
        request_id: request.expect("found"),
        from: "quiet".into(),
        timestamp: swarm::clock::now_iso(),
        pane_id: None,
        backend_type: None,
    });
    team.send_protocol("quiet", "team-lead", &approved, false)
        .expect("approval sent");
    let out = shutdown.wait_with_output().expect("swarm shutdown ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("quiet shut down"),
        "{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        t.explain()
    );
    wait_until(
        "quiet's pane is closed",
        WAIT,
        || t.tmux.pane(&pane).is_none(),
        || t.explain(),
    );
    wait_until(
        "quiet's process group is gone",
        WAIT,
        || !group_alive(pgid),
        || t.explain(),
    );
    assert!(t.member("quiet").is_none(), "{}", t.explain());
    let back = t.task(&task);
    assert_eq!(
        (back["status"].as_str(), back.get("owner")),
        (Some("pending"), None),
        "{back}"
    );
}

/// `swarm spawn --env K` passes K's value by name to any teammate: the
/// program has it; argv, the pane's start command, the roster, the logs and
/// the state root do not (the hand-off file is gone once the pane starts;
/// the work dir, where the recorder writes what it saw, aside).
/// Needs tmux only.
#[test]
fn a_value_passed_by_name_reaches_the_program_and_is_written_nowhere() {
    let Some(t) = TmuxTeam::new("passed_by_name", "pass") else {
        return;
    };
    t.up();
    let secret = "s3cr3t-value-passed-by-name-5f0c";
    let args = [
        "spawn",
        "rec",
        "--env",
        "SWARM_TEST_TOKEN",
        "--env",
        "PLAIN=visible",
        "--",
        &crate::util::tmux::agent("recorder"),
    ];
    let mut c = t.cmd(&args);
    c.env("SWARM_TEST_TOKEN", secret)
        .env("ANTHROPIC_API_KEY", "not-for-a-plain-program");
    let r = Run::of(c, &args);
    assert_eq!(r.code, Some(0), "{}\n{}", r.explain(), t.explain());
    assert!(
        r.stderr.contains("passed by name: SWARM_TEST_TOKEN"),
        "{}",
        r.explain()
    );
    t.wait_ready("rec");
    let env = std::fs::read(t.work.join("rec.env")).expect("recorded env");
    let vars: Vec<String> = env
        .split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect();
    assert!(
        vars.contains(&format!("SWARM_TEST_TOKEN={secret}")),
        "{vars:?}"
    );
    assert!(vars.contains(&"PLAIN=visible".to_string()), "{vars:?}");
    assert!(
        !vars.iter().any(|v| v.starts_with("ANTHROPIC_API_KEY=")),
        "a plain program forwards nothing unasked: {vars:?}"
    );
    let member = t.member("rec").expect("on the roster");
    assert_eq!(member["swarmPassEnv"], json!(["SWARM_TEST_TOKEN"]));
    assert_eq!(member["swarmEnv"], json!({"PLAIN": "visible"}));
    let start = t
        .tmux
        .ok(&["list-panes", "-a", "-F", "#{pane_start_command}"]);
    assert!(
        !start.contains(secret),
        "in a pane's start command: {start}"
    );
    assert!(start.contains("--env-file"), "{start}");
    assert!(!cmdline(t.pid_of("rec")).join(" ").contains(secret));
    let leaks = files_containing(t.sb.root(), secret, &t.work);
    assert!(leaks.is_empty(), "written in {leaks:?}\n{}", t.explain());
    let missing = [
        "spawn",
        "rec2",
        "--env",
        "SWARM_TEST_UNSET_VAR",
        "--",
        "true",
    ];
    let r = Run::of(t.cmd(&missing), &missing);
    r.assert_error("SWARM_TEST_UNSET_VAR is not set");
}

/// True when Claude Code's transcript of `session`, under its config
/// directory `config` (`projects/<its cwd>/<session>.jsonl`), holds
/// `needle`.
fn transcript_holds(config: &Path, session: &str, needle: &str) -> bool {
    let Ok(projects) = std::fs::read_dir(config.join("projects")) else {
        return false;
    };
    projects.flatten().any(|p| {
        std::fs::read_to_string(p.path().join(format!("{session}.jsonl")))
            .is_ok_and(|t| t.contains(needle))
    })
}

/// Medians over a few runs (not part of the suite: `-- --ignored`).
/// Issue 15: the tmux server ends under a Claude Code teammate; `swarm up
/// --resume` starts it again with `--resume <its sessionId>`, so its next
/// model request carries the conversation it had before.
#[test]
fn a_claude_teammate_resumes_its_conversation_after_the_tmux_server_ends() {
    let Some(l) = Live::new(
        "live_claude_resume",
        "resumed",
        UserSetup::OwnHome,
        vec![approve_shutdown()],
    ) else {
        return;
    };
    l.up();
    l.spawn("keeper", "You keep things (ROLE-rz).", &[]);
    l.wait_request("keeper's first request", 0, "ROLE-rz");
    l.ok(&["send", "--to", "keeper", "FIRST-77 remember this"]);
    l.wait_request("keeper hears FIRST-77", 0, "FIRST-77");
    let session = l.session_id("keeper");
    let pid = l.claude_pid("keeper");
    let argv = cmdline(pid).join(" ");
    assert!(argv.contains(&format!("--session-id {session}")), "{argv}");
    // What a resume reads is Claude Code's transcript, written as it goes:
    // the server ends once FIRST-77 is in it (under load the transcript
    // lagged the request, and the resumed conversation lacked it).
    // (Under the config dir swarm keeps for the team: the root is not the
    // user's config dir here.)
    let config = l.t.sb.path("swarm/resumed/claude-config");
    wait_until(
        "keeper's transcript holds FIRST-77",
        WAIT,
        || transcript_holds(&config, &session, "FIRST-77"),
        || l.explain(),
    );
    l.t.tmux.run(&["kill-server"]);
    wait_until(
        "keeper's Claude Code ends with the server",
        WAIT,
        || !alive(pid),
        || l.explain(),
    );

    l.ok(&["send", "--to", "keeper", "SECOND-88 what came first?"]);
    let seen = l.server.main_requests().len();
    let up = l.ok(&["up", "--resume", "--no-attach"]);
    assert!(
        up.stderr.contains(&format!(
            "keeper: back; its Claude Code conversation {session} resumes"
        )),
        "{}",
        up.explain()
    );
    let req = l.wait_request("keeper's request after the resume", seen, "SECOND-88");
    assert!(
        conversation(&req["body"]).contains("FIRST-77"),
        "the resumed request carries the earlier conversation\n{}",
        l.explain()
    );
    let argv = cmdline(l.claude_pid("keeper")).join(" ");
    assert!(argv.contains(&format!("--resume {session}")), "{argv}");
    l.ok(&["down", "--force", "--wait", "5"]);
}

/// Issue 23: a Claude Code teammate that was shut down (the model
/// approved) is brought back by a message to it: `swarm send` says so, its
/// Claude Code starts with `--resume <its sessionId>`, and its next model
/// request carries the earlier exchange and the new message.
#[test]
fn a_message_to_a_shut_down_claude_teammate_brings_it_back_with_its_conversation() {
    let rules = vec![
        rule(
            "first",
            "FIRST-rv4",
            calls("SendMessage", send_message("team-lead", "ANSWER-rv4 heron")),
        ),
        approve_shutdown(),
    ];
    let Some(l) = Live::new("live_claude_revive", "revived", UserSetup::OwnHome, rules) else {
        return;
    };
    l.up();
    l.spawn("keeper", "You keep things (ROLE-rv4).", &[]);
    l.wait_request("keeper's first request", 0, "ROLE-rv4");
    l.ok(&[
        "send",
        "--to",
        "keeper",
        "FIRST-rv4 remember the word heron",
    ]);
    l.wait_lead_entry("keeper answers the first", "keeper", "ANSWER-rv4");
    let session = l.session_id("keeper");
    let pid = l.claude_pid("keeper");
    let r = l.ok(&["shutdown", "keeper", "--wait", "30"]);
    assert!(r.stdout.contains("keeper shut down"), "{}", r.explain());
    wait_until(
        "keeper's Claude Code has exited",
        WAIT,
        || !alive(pid),
        || l.explain(),
    );
    assert!(
        l.t.member("keeper").is_none(),
        "keeper left\n{}",
        l.explain()
    );

    let seen = l.server.main_requests().len();
    let sent = now();
    let back = l.ok(&["send", "--to", "keeper", "SECOND-rv4 what was the word?"]);
    assert!(
        back.stderr
            .contains("keeper was stopped; started again with its conversation"),
        "{}",
        back.explain()
    );
    let req = l.wait_request("keeper's request after it came back", seen, "SECOND-rv4");
    let said = conversation(&req["body"]);
    assert!(
        said.contains("FIRST-rv4 remember the word heron") && said.contains("ANSWER-rv4 heron"),
        "the revived teammate's request carries the earlier exchange\n{said}\n{}",
        l.explain()
    );
    let argv = cmdline(l.claude_pid("keeper")).join(" ");
    assert!(argv.contains(&format!("--resume {session}")), "{argv}");
    println!(
        "FIGURE claude {CLAUDE_VERSION}: swarm send to a shut-down teammate → its next model \
         request {:.2} s (revived with its conversation)",
        at(&req) - sent
    );
    l.ok(&["down", "--force", "--wait", "5"]);
}

#[test]
#[ignore = "a measurement, run with --ignored --nocapture"]
fn measure_claude_latencies() {
    const RUNS: usize = 5;
    let rules: Vec<Value> = (0..RUNS)
        .flat_map(|i| {
            [
                rule(
                    &format!("hello{i}"),
                    &format!("ROLE-m{i}x"),
                    calls(
                        "SendMessage",
                        send_message("team-lead", &format!("HELLO-m{i}x")),
                    ),
                ),
                rule(
                    &format!("pong{i}"),
                    &format!("PING-m{i}x"),
                    calls(
                        "SendMessage",
                        send_message("team-lead", &format!("PONG-m{i}x")),
                    ),
                ),
            ]
        })
        .collect();
    let Some(l) = Live::new(
        "measure_claude_latencies",
        "measure",
        UserSetup::OwnHome,
        rules,
    ) else {
        return;
    };
    l.up();
    let (mut spawn, mut send, mut reply) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..RUNS {
        let name = format!("m{i}");
        let t0 = now();
        l.spawn(&name, &format!("You are {name} (ROLE-m{i}x)."), &[]);
        let first = l.wait_request("first request", 0, &format!("ROLE-m{i}x"));
        spawn.push(at(&first) - t0);
        let (_, seen) = l.wait_lead_entry("hello", &name, &format!("HELLO-m{i}x"));
        let hello = l
            .server
            .requests()
            .into_iter()
            .find(|r| r["rule"] == format!("hello{i}"))
            .expect("hello");
        reply.push(seen - at(&hello));
        // Idle first, as a teammate between messages is.
        wait_until(
            &format!("{name} is idle"),
            LIVE_WAIT,
            || l.t.member(&name).is_some_and(|m| m["isActive"] == false),
            || l.explain(),
        );
        let before = l.server.main_requests().len();
        let sent = now();
        l.ok(&["send", "--to", &name, &format!("PING-m{i}x")]);
        let next = l.wait_request("next request", before, &format!("PING-m{i}x"));
        send.push(at(&next) - sent);
        l.wait_lead_entry("pong", &name, &format!("PONG-m{i}x"));
        l.ok(&["kill", &name]);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        v[v.len() / 2]
    };
    println!(
        "FIGURE claude {CLAUDE_VERSION}, median of {RUNS}: spawn → first model request {:.2} s {spawn:.2?}; \
         swarm send → next request {:.3} s {send:.3?}; SendMessage reply → the lead has it {:.3} s {reply:.3?}",
        median(&mut spawn.clone()),
        median(&mut send.clone()),
        median(&mut reply.clone()),
    );
}
