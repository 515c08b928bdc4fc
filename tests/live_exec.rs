//! Live: the real exec-preset CLIs (pinned, installed into a cache by
//! `scripts/install-agents`) as swarm teammates on a private tmux server,
//! each against a scripted model on 127.0.0.1 that speaks its API with
//! streaming and records every request: Codex 0.171.0 (OpenAI Responses,
//! `tests/models/openai.py`), Gemini CLI 0.61.0 (`streamGenerateContent`,
//! `tests/models/gemini.py`) and Aider (Chat Completions, `openai.py`).
//!
//! One team per CLI goes through every check in sequence ([`works_the_team`]):
//! spawn → its first model request carries the role prompt, the team
//! instructions and the lead's message; the model calls the CLI's shell
//! tool with `swarm send --to team-lead …` and the lead has it; the run's
//! answer reaches the lead; a `swarm send` shows up in its next request,
//! which also carries the first exchange (the session was resumed); a task
//! is claimed and completed; a shutdown leaves no process; a `swarm kill`
//! while the CLI runs a tool leaves no process either.
//!
//! The user it runs for has a home of their own with the CLI's settings
//! pointing at the scripted server; every other request goes to a closed
//! proxy port. A test needing a CLI prints `SKIP` when it is not installed,
//! and fails instead when `SWARM_REQUIRE_AGENTS=1` (CI). Figures (spawn →
//! first model request, `swarm send` → the next request, the answer → the
//! lead) are printed as `FIGURE …` lines.

use crate::util::live::{
    LIVE_WAIT, LiveTeam, ModelServer, agent_cache, alive, at, cmdline, descendants, installed, now,
    serial, swarm_exe, user_command,
};
use crate::util::tmux::{TmuxTeam, WAIT, group_alive};
use crate::util::wait_until;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A shell tool's name and its input for a command line.
type ShellTool = (&'static str, fn(&str) -> Value);

/// One CLI under test.
pub(crate) struct Cli {
    /// The preset (`swarm spawn --agent`).
    pub(crate) agent: &'static str,
    /// Shown in messages: "Codex 0.171.0".
    shown: &'static str,
    /// Its binary under the agent cache.
    bin: &'static str,
    /// The scripted server under `tests/models/`.
    server: &'static str,
    /// The permission mode it is spawned in (`swarm spawn --mode`): one
    /// that lets the model's shell commands run.
    mode: &'static str,
    /// The model's shell tool, and its input for a command line; `None`
    /// when the CLI offers the model no tools (Aider).
    shell: Option<ShellTool>,
    /// Writes the user's settings under `home` (`work` is the directory
    /// they trust) and returns the environment the user's shell has.
    user: fn(home: &Path, work: &Path, server: &ModelServer) -> Vec<(String, String)>,
}

/// The API key the user has.
const KEY: &str = "sk-swarm-live-0123456789abcdefghijKLMNOP";

pub(crate) const CODEX: Cli = Cli {
    agent: "codex",
    shown: "Codex 0.171.0",
    bin: "codex-0.171.0/node_modules/.bin/codex",
    server: "openai.py",
    mode: "bypassPermissions",
    shell: Some(("exec_command", |cmd| json!({"cmd": cmd}))),
    user: codex_user,
};

/// Codex reads `$CODEX_HOME/config.toml`: a provider of the user's own at
/// the scripted server (its key from `OPENAI_API_KEY`), no WebSocket.
fn codex_user(home: &Path, _work: &Path, server: &ModelServer) -> Vec<(String, String)> {
    let codex_home = home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let config = format!(
        "model = \"scripted-model\"\nmodel_provider = \"scripted\"\n\n\
         [model_providers.scripted]\nname = \"scripted\"\nbase_url = \"{}/v1\"\n\
         env_key = \"OPENAI_API_KEY\"\nwire_api = \"responses\"\n",
        server.base_url()
    );
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    vec![
        ("OPENAI_API_KEY".into(), KEY.into()),
        ("CODEX_HOME".into(), codex_home.to_string_lossy().into()),
    ]
}

const GEMINI: Cli = Cli {
    agent: "gemini",
    shown: "Gemini CLI 0.61.0",
    bin: "gemini-cli-0.61.0/node_modules/.bin/gemini",
    server: "gemini.py",
    mode: "bypassPermissions",
    shell: Some(("run_shell_command", |cmd| json!({"command": cmd}))),
    user: gemini_user,
};

/// Gemini CLI reads `~/.gemini/settings.json` (the API-key auth chosen,
/// no update checks or usage statistics) and `trustedFolders.json` (the
/// work dir trusted: in an untrusted folder it drops `--yolo`); the
/// endpoint is `GOOGLE_GEMINI_BASE_URL`.
fn gemini_user(home: &Path, work: &Path, server: &ModelServer) -> Vec<(String, String)> {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"disableAutoUpdate": true, "disableUpdateNag": true},
        "privacy": {"usageStatisticsEnabled": false},
    });
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let trusted = json!({work.to_string_lossy(): "TRUST_FOLDER"});
    std::fs::write(dir.join("trustedFolders.json"), trusted.to_string()).unwrap();
    vec![
        ("GEMINI_API_KEY".into(), KEY.into()),
        ("GOOGLE_GEMINI_BASE_URL".into(), server.base_url()),
    ]
}

const AIDER: Cli = Cli {
    agent: "aider",
    shown: "Aider 0.86.2",
    bin: "aider-chat-0.86.2/bin/aider",
    server: "openai.py",
    mode: "default",
    shell: None,
    user: aider_user,
};

/// Aider reads `~/.aider.conf.yml`: an OpenAI-compatible model at the
/// scripted server (`openai-api-base`, its key from `OPENAI_API_KEY`), no
/// git, no update or analytics calls.
fn aider_user(home: &Path, _work: &Path, server: &ModelServer) -> Vec<(String, String)> {
    let config = format!(
        "model: openai/scripted-model\nopenai-api-base: {}/v1\ngit: false\n\
         check-update: false\nanalytics-disable: true\nshow-release-notes: false\n\
         detect-urls: false\nshow-model-warnings: false\n",
        server.base_url()
    );
    std::fs::write(home.join(".aider.conf.yml"), config).unwrap();
    vec![("OPENAI_API_KEY".into(), KEY.into())]
}

pub(crate) const CLAUDE_PRINT: Cli = Cli {
    agent: "claude-print",
    shown: "Claude Code 2.1.332 (claude -p)",
    bin: "claude-code-2.1.332/node_modules/.bin/claude",
    server: "anthropic.py",
    mode: "default",
    shell: Some((
        "Bash",
        |cmd| json!({"command": cmd, "description": "run it"}),
    )),
    user: claude_print_user,
};

/// Claude Code set up as for `live_claude` (onboarding done, the key
/// approved, the work dir trusted), its `settings.json` allowing the
/// team's commands (`swarm …`) and the test's long command without asking: swarm starts it
/// in `default` mode, and `bypassPermissions` is refused to root.
fn claude_print_user(home: &Path, work: &Path, server: &ModelServer) -> Vec<(String, String)> {
    let config = home.join(".claude");
    crate::live_claude::set_up_claude_user(home, &config, work);
    let settings = json!({"permissions": {"allow": [
        format!("Bash({}:*)", swarm_exe()), "Bash(python3:*)", "Bash(echo:*)"
    ]}});
    std::fs::write(config.join("settings.json"), settings.to_string()).unwrap();
    vec![
        ("ANTHROPIC_BASE_URL".into(), server.base_url()),
        ("ANTHROPIC_API_KEY".into(), crate::live_claude::KEY.into()),
        (
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
            "1".into(),
        ),
    ]
}

/// A team on a private tmux server, a scripted model, and a user set up
/// for the CLI.
pub(crate) struct Live {
    pub(crate) t: TmuxTeam,
    pub(crate) server: ModelServer,
    home: tempfile::TempDir,
    bin_dir: PathBuf,
    env: Vec<(String, String)>,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl Live {
    pub(crate) fn new(test: &str, cli: &Cli, rules: Vec<Value>) -> Option<Live> {
        let bin = installed(test, agent_cache().join(cli.bin), cli.shown)?;
        let serial = serial();
        let t = TmuxTeam::new(test, "live")?;
        let home = tempfile::Builder::new()
            .prefix("swarm-user-")
            .tempdir()
            .expect("tempdir");
        let server = ModelServer::start(
            cli.server,
            &json!({"rules": rules, "default": [{"type": "text", "text": "ok"}]}),
        );
        let env = (cli.user)(home.path(), &t.work, &server);
        Some(Live {
            t,
            server,
            home,
            bin_dir: bin.parent().expect("bin dir").to_path_buf(),
            env,
            _serial: serial,
        })
    }

    /// The first request answered by `rule`'s `n`th reply.
    fn answered(&self, rule: &str, n: usize) -> Value {
        self.server
            .requests()
            .into_iter()
            .filter(|r| r["rule"] == rule)
            .nth(n)
            .unwrap_or_else(|| panic!("no reply {n} of rule {rule}\n{}", self.explain()))
    }
}

impl LiveTeam for Live {
    fn team(&self) -> &TmuxTeam {
        &self.t
    }

    fn server(&self) -> &ModelServer {
        &self.server
    }

    /// `swarm ARGS` as the user would run it: their home and settings, the
    /// CLI on `PATH`, everything but loopback to a closed proxy port.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = user_command(&self.t, args, self.home.path(), &self.bin_dir);
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    fn request_text(&self, r: &Value) -> String {
        r["text"].as_str().unwrap_or("").to_string()
    }
}

/// A rule answering the requests whose text contains every `needles` with
/// `replies` in turn.
pub(crate) fn rule(name: &str, needles: &[&str], replies: Value) -> Value {
    json!({"name": name, "when": {"contains": needles}, "replies": replies})
}

pub(crate) fn text(t: &str) -> Value {
    json!([{"type": "text", "text": t}])
}

/// The model runs `command` with the CLI's shell tool, then ends its turn
/// with `then` (Aider has no tools: `then` alone).
fn shell_then(cli: &Cli, command: &str, then: &str) -> Value {
    match cli.shell {
        Some((tool, input)) => json!([
            [{"type": "tool_use", "name": tool, "input": input(command)}],
            text(then)
        ]),
        None => json!([text(then)]),
    }
}

/// Every check, in sequence, on one team (see the module docs).
fn works_the_team(test: &str, cli: &Cli) {
    let Some(l) = Live::new(test, cli, script(cli)) else {
        return;
    };
    l.ok(&["up", "--no-attach"]);
    l.t.wait_lead();
    let (spawn_to_first, answer_to_lead) = first_contact(&l, cli);
    let send_to_request = resumes(&l);
    if cli.agent == "codex" {
        comes_back_after_the_server_ends(&l);
    }
    works_a_task(&l);
    shuts_down(&l);
    kill_leaves_nothing(&l, cli);

    println!(
        "FIGURE {}: spawn → first model request {spawn_to_first:.2} s (spawn + send); \
         send → next request {send_to_request:.3} s; answer → the lead has it {answer_to_lead:.3} s",
        cli.shown
    );
}

/// What the scripted model answers, by the token in the request.
fn script(cli: &Cli) -> Vec<Value> {
    // As the team instructions say: swarm by its path (a login shell, as
    // Codex may use, can reset PATH).
    let via_shell = format!(
        "{} send --to team-lead 'SHELL-REPLY-x1 from my shell'",
        swarm::agents::exec::shell_word(&swarm_exe())
    );
    vec![
        rule(
            "hello",
            &["HELLO-x1", "ROLE-x1"],
            shell_then(cli, &via_shell, "HELLO-DONE-x1"),
        ),
        rule("pong", &["PING-x1"], json!([text("PONG-x1")])),
        rule(
            "task",
            &["Task #1: review the diff"],
            json!([text("TASK-DONE-x1")]),
        ),
        rule(
            "slow",
            &["SLOW-x1"],
            shell_then(
                cli,
                "python3 -c 'import time; time.sleep(300)'; echo SLEEPER-x1",
                "never",
            ),
        ),
    ]
}

/// Spawn → the first request carries the role prompt, the team
/// instructions and the message; the model's shell `swarm send` and the
/// run's answer reach the lead. Returns (spawn → first request, answer →
/// the lead) in seconds.
fn first_contact(l: &Live, cli: &Cli) -> (f64, f64) {
    let role = "You are worker, the team's reviewer (ROLE-x1).";
    let t0 = now();
    l.ok(&[
        "spawn", "worker", "--agent", cli.agent, "--mode", cli.mode, "--prompt", role,
    ]);
    l.ok(&["send", "--to", "worker", "HELLO-x1: say hello"]);

    // Its first request: the role prompt, how to reach the team, the message.
    let first = l.wait_request("worker's first model request", 0, "HELLO-x1");
    let spawn_to_first = at(&first) - t0;
    let said = first["text"].as_str().unwrap_or("");
    for want in [role, "send --to NAME", "task claim ID", "HELLO-x1"] {
        assert!(
            said.contains(want),
            "{want:?} not in the first request\n{said}"
        );
    }

    // The model's shell call reaches the lead, and so does the run's answer.
    if cli.shell.is_some() {
        l.wait_lead_entry(
            "the shell's swarm send reaches the lead",
            "worker",
            "SHELL-REPLY-x1",
        );
    }
    let (answer, seen) = l.wait_lead_entry(
        "worker's answer reaches the lead",
        "worker",
        "HELLO-DONE-x1",
    );
    if cli.agent != "aider" {
        assert!(
            !answer["text"]
                .as_str()
                .unwrap_or("")
                .contains("task claim ID"),
            "the answer is the CLI's answer, not its progress and its echo of the prompt\n{answer}"
        );
    }
    let last_hello = l.answered("hello", if cli.shell.is_some() { 1 } else { 0 });
    let answer_to_lead = seen - at(&last_hello);
    (spawn_to_first, answer_to_lead)
}

/// A `swarm send` shows up in the next request, with the first exchange
/// (the session was resumed). Returns send → that request in seconds.
fn resumes(l: &Live) -> f64 {
    // A message shows up in its next request, with the first exchange.
    let before = l.server.main_requests().len();
    let sent = now();
    l.ok(&["send", "--to", "worker", "PING-x1 please answer"]);
    let next = l.wait_request(
        "the lead's PING reaches worker's next request",
        before,
        "PING-x1",
    );
    let send_to_request = at(&next) - sent;
    let said = next["text"].as_str().unwrap_or("");
    assert!(
        said.contains("HELLO-x1") && said.contains("HELLO-DONE-x1"),
        "the second request carries the first exchange (the session was resumed)\n{said}"
    );
    l.wait_lead_entry("worker's PONG reaches the lead", "worker", "PONG-x1");
    send_to_request
}

/// Issue 15: the tmux server ends (a reboot, as far as panes go); `swarm
/// up --resume` brings the teammate back and its next model request
/// carries the conversation from before.
fn comes_back_after_the_server_ends(l: &Live) {
    let runtime = l.t.pid_of("worker");
    let lead = l.t.wait_lead();
    l.t.tmux.run(&["kill-server"]);
    wait_until(
        "worker's runtime and the lead ended with the tmux server",
        WAIT,
        || !alive(runtime) && !alive(lead),
        || l.explain(),
    );
    let back = l.ok(&["up", "--resume", "--no-attach"]);
    assert!(
        back.stderr.contains("worker: back; its codex conversation"),
        "{}",
        back.explain()
    );
    l.t.wait_new_lead(lead);
    let before = l.server.main_requests().len();
    l.ok(&["send", "--to", "worker", "AGAIN-x1 are you still there"]);
    let next = l.wait_request(
        "the message after the resume reaches worker",
        before,
        "AGAIN-x1",
    );
    let said = next["text"].as_str().unwrap_or("");
    assert!(
        said.contains("HELLO-x1") && said.contains("PING-x1"),
        "after the resume the request carries the earlier conversation\n{said}"
    );
}

fn works_a_task(l: &Live) {
    // A task is claimed and completed.
    let id = l.ok(&["task", "create", "review the diff"]).stdout;
    assert_eq!(id.trim(), "1");
    wait_until(
        "worker completes task 1",
        LIVE_WAIT,
        || l.t.task("1")["status"] == "completed",
        || l.explain(),
    );
    let task = l.t.task("1");
    assert_eq!(task["owner"], "worker", "{task}");
    assert_eq!(task["metadata"]["completedBy"], "worker", "{task}");
    assert!(
        task["metadata"]["output"]
            .as_str()
            .is_some_and(|o| o.contains("TASK-DONE-x1")),
        "{task}"
    );
}

fn shuts_down(l: &Live) {
    // Shutdown: approved, the runtime gone with everything it started.
    let runtime = l.t.pid_of("worker");
    let pane = l.t.pane_of("worker");
    let r = l.ok(&["shutdown", "worker", "--wait", "30"]);
    assert!(r.stdout.contains("worker shut down"), "{}", r.explain());
    wait_until(
        "worker's runtime has exited",
        WAIT,
        || !alive(runtime) && !group_alive(runtime),
        || l.explain(),
    );
    assert!(
        l.t.tmux.pane(&pane).is_none(),
        "pane closed\n{}",
        l.explain()
    );
}

fn kill_leaves_nothing(l: &Live, cli: &Cli) {
    // Kill while the CLI runs a tool: nothing of it is left.
    l.ok(&["spawn", "sleeper", "--agent", cli.agent, "--mode", cli.mode]);
    l.ok(&["send", "--to", "sleeper", "SLOW-x1"]);
    let runtime = l.t.pid_of("sleeper");
    let mut tree = Vec::new();
    // The model's sleep, or (no tools) the CLI itself.
    let marker = if cli.shell.is_some() {
        "SLEEPER-x1"
    } else {
        "SLOW-x1"
    };
    wait_until(
        "sleeper's CLI runs the model's command",
        LIVE_WAIT,
        || {
            tree = descendants(runtime);
            tree.iter().any(|p| cmdline(*p).join(" ").contains(marker))
        },
        || l.explain(),
    );
    l.ok(&["kill", "sleeper"]);
    wait_until(
        "nothing of sleeper is left",
        WAIT,
        || !alive(runtime) && tree.iter().all(|p| !alive(*p)),
        || {
            let left: Vec<String> = tree
                .iter()
                .filter(|p| alive(**p))
                .map(|p| format!("{p}: {}", cmdline(*p).join(" ")))
                .collect();
            format!("left: {left:?}\n{}", l.explain())
        },
    );
}

#[test]
fn a_codex_teammate_works_the_team_and_keeps_its_conversation() {
    works_the_team("live_exec_codex", &CODEX);
}

#[test]
fn a_gemini_teammate_works_the_team_and_keeps_its_conversation() {
    works_the_team("live_exec_gemini", &GEMINI);
}

/// Aider offers the model no tools, and `--yes-always` refuses the shell
/// commands a reply suggests (Aider 0.86.2 asks those with
/// `explicit_yes_required`): its answer reaches the team as its output.
#[test]
fn an_aider_teammate_works_the_team_and_keeps_its_conversation() {
    works_the_team("live_exec_aider", &AIDER);
}

#[test]
fn a_claude_print_teammate_works_the_team_and_keeps_its_conversation() {
    works_the_team("live_exec_claude_print", &CLAUDE_PRINT);
}

/// Every process whose command line contains `needle`, anywhere.
fn processes_with(needle: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| alive(*p) && cmdline(*p).join(" ").contains(needle))
        .collect()
}

/// Not live: a `command` agent stands in for a CLI that runs its tools in
/// sessions of their own (as Codex does), out of reach of a signal to the
/// pane's process group. What a finished run left behind and what the
/// running one started are both ended by `swarm kill`.
#[test]
fn kill_ends_what_an_agent_started_in_sessions_of_its_own() {
    let Some(t) = TmuxTeam::new("kill_ends_setsid_children", "t") else {
        return;
    };
    let token = format!(
        "ESCAPED-{}",
        t.sb.root().file_name().unwrap().to_string_lossy()
    );
    // Reads its prompt; on "leave" it leaves a process behind and exits,
    // on "stay" it waits for the one it started.
    let script = format!(
        "case \"$(cat)\" in *stay*) m=stay;; *) m=leave;; esac; \
         setsid sh -c 'sleep 300; echo {token}' & \
         if [ $m = stay ]; then wait; fi; echo ran-$m"
    );
    t.up();
    t.ok(&[
        "spawn", "w", "--agent", "command", "--", "sh", "-c", &script,
    ]);
    let lead_has = |text: &str| {
        let r = t.run(&["inbox", "--all", "--json"]);
        r.stdout.contains(text)
    };
    t.ok(&["send", "--to", "w", "leave"]);
    wait_until(
        "w ran the first unit",
        WAIT,
        || lead_has("ran-leave"),
        || t.explain(),
    );
    t.ok(&["send", "--to", "w", "stay"]);
    // Each escaped `sh -c 'sleep …; echo TOKEN'` and its sleep... the sh
    // only: `sleep 300` does not hold the token.
    wait_until(
        "two escaped processes run",
        WAIT,
        || processes_with(&token).len() >= 2,
        || format!("{:?}\n{}", processes_with(&token), t.explain()),
    );
    let runtime = t.pid_of("w");
    t.ok(&["kill", "w"]);
    wait_until(
        "nothing w's agent started is left",
        WAIT,
        || !alive(runtime) && processes_with(&token).is_empty(),
        || {
            let left: Vec<String> = processes_with(&token)
                .iter()
                .map(|p| format!("{p}: {}", cmdline(*p).join(" ")))
                .collect();
            format!("left: {left:?}\n{}", t.explain())
        },
    );
}

/// Issue 21 item 7: a Codex teammate has swarm's MCP server in its launch
/// (`-c mcp_servers.swarm.…`, `swarm mcp` for its own team and name). Codex
/// 0.171.0 offers an MCP server's tools to the model in one namespace,
/// `mcp__swarm`; the model calls `send_message` there (a `function_call`
/// item with `namespace`), the message reaches the lead's inbox as the
/// teammate's, and the tool's result (its `msg_id`) comes back to the model.
#[test]
fn a_codex_teammate_reaches_the_lead_through_swarms_mcp_tools() {
    let send = json!({"to": "team-lead", "text": "MCP-REPLY-x1 through the tools"});
    let rules = vec![rule(
        "mcp",
        &["MCP-x1"],
        json!([
            [{"type": "tool_use", "name": "mcp__swarm/send_message", "input": send}],
            text("MCP-DONE-x1")
        ]),
    )];
    let Some(l) = Live::new("live_exec_codex_mcp", &CODEX, rules) else {
        return;
    };
    l.ok(&["up", "--no-attach"]);
    l.t.wait_lead();
    l.ok(&["spawn", "worker", "--agent", "codex", "--mode", CODEX.mode]);
    l.ok(&[
        "send",
        "--to",
        "worker",
        "MCP-x1: report through your tools",
    ]);

    // Its first request offers swarm's tools, and its instructions name them.
    let first = l.wait_request("worker's first model request", 0, "MCP-x1");
    let offered: Vec<&str> = first["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["type"] == "namespace" && t["name"] == "mcp__swarm")
        .and_then(|ns| ns["tools"].as_array())
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let mut offered = offered;
    offered.sort_unstable();
    let mut want = swarm::mcp::TOOLS.to_vec();
    want.sort_unstable();
    assert_eq!(
        offered,
        want,
        "swarm's tools in namespace mcp__swarm\n{}",
        l.explain()
    );
    let said = first["text"].as_str().unwrap_or("");
    assert!(
        said.contains("swarm MCP server's send_message"),
        "the team instructions name the tools\n{said}"
    );

    // The model's call reaches the lead, as worker's message.
    let (entry, _) = l.wait_lead_entry(
        "the model's send_message reaches the lead",
        "worker",
        "MCP-REPLY-x1",
    );
    assert_eq!(entry["text"], "MCP-REPLY-x1 through the tools", "{entry}");
    let id = entry["msg_id"]
        .as_str()
        .or(entry["msgId"].as_str())
        .unwrap_or_else(|| panic!("no msg_id in {entry}"))
        .to_string();
    // The tool's result, naming that very message, goes back to the model.
    l.wait_request("the tool's result reaches the model", 1, &id);
    l.wait_lead_entry("worker's answer reaches the lead", "worker", "MCP-DONE-x1");
    let log = l.t.sb.path("swarm/live/logs/mcp-worker.log");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        log.contains("tool=\"send_message\""),
        "swarm mcp ran as worker and logged the call\n{log}"
    );
}
