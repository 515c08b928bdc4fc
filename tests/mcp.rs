//! `swarm mcp` driven by a real MCP client: the official Python SDK (`mcp`
//! from PyPI, pinned and installed into the agent cache by
//! `scripts/install-agents`) runs `tests/mcp/client.py`, which starts
//! `swarm mcp` over stdio and makes one request per line the test writes
//! ([`Mcp`]). The team lives on a private tmux server, created with `swarm
//! team create` (no lead: the team-lead inbox is the MCP client's alone).
//!
//! Without the SDK installed a test prints `SKIP`; with
//! `SWARM_REQUIRE_AGENTS=1` (CI) it fails instead.

use crate::foreign::{CC_TEAM, claude_code_files, install_claude_code_team};
use crate::util::live::{agent_cache, installed};
use crate::util::timeouts::scaled;
use crate::util::tmux::{TmuxTeam, WAIT};
use crate::util::{KillOnDrop, swarm_bin, wait_until};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

/// The tools of DESIGN §12, and the arguments of each: a contract, since
/// clients outside the project call them by these names.
const CONTRACT: [(&str, &[&str], &[&str]); 14] = [
    ("team_status", &[], &[]),
    (
        "spawn_teammate",
        &["name"],
        &["agent", "prompt", "command", "model", "mode", "worktree"],
    ),
    ("send_message", &["to", "text"], &["summary"]),
    ("read_inbox", &[], &["unread_only", "mark_read"]),
    ("wait_for_messages", &[], &["timeout_s"]),
    (
        "task_create",
        &["subject"],
        &["description", "command", "blocked_by", "owner"],
    ),
    ("task_list", &[], &["status", "owner"]),
    ("task_get", &["id"], &[]),
    (
        "task_update",
        &["id"],
        &[
            "status",
            "owner",
            "subject",
            "description",
            "add_blocked_by",
        ],
    ),
    ("task_claim", &[], &["id"]),
    ("shutdown_teammate", &["name"], &["reason"]),
    ("kill_teammate", &["name"], &[]),
    ("teammate_output", &["name"], &["lines"]),
    ("answer_request", &["request_id", "approve"], &["feedback"]),
];

/// The `mcp` pin of `scripts/install-agents` (`"mcp mcp==X python X"`).
fn sdk_version() -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install-agents");
    let text = std::fs::read_to_string(&script).expect("scripts/install-agents");
    text.lines()
        .find_map(|l| l.trim().strip_prefix("\"mcp mcp=="))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no \"mcp mcp==VERSION\" pin in {}", script.display()))
        .to_string()
}

/// The SDK's Python (its venv in the agent cache), with tmux; `None` after
/// `SKIP` when either is missing (a failure with `SWARM_REQUIRE_AGENTS=1`).
fn sdk(test: &str) -> Option<PathBuf> {
    let v = sdk_version();
    installed(
        test,
        agent_cache().join(format!("mcp-{v}/bin/python")),
        &format!("the MCP Python SDK (mcp {v})"),
    )
}

/// One `swarm mcp` server and the SDK's client connected to it, as the
/// test's team and one of its members.
struct Mcp<'a> {
    t: &'a TmuxTeam,
    team: String,
    stdin: RefCell<Option<ChildStdin>>,
    lines: Receiver<String>,
    /// The client's stderr, which the server's stderr goes to as well.
    stderr: PathBuf,
    child: KillOnDrop,
}

impl<'a> Mcp<'a> {
    /// Starts the client (and through it `swarm mcp`) for `team`, as
    /// `as_name` (team-lead when `None`), in the team's work directory.
    fn start(t: &'a TmuxTeam, python: &Path, team: &str, as_name: Option<&str>) -> Mcp<'a> {
        let stderr = t.sb.path(&format!("mcp-client-{team}.err"));
        let mut c = Command::new(python);
        c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py"))
            .args(["--", swarm_bin(), "mcp"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", t.sb.root())
            .env("SWARM_HOME", t.sb.root())
            .env("SWARM_TEAM", team)
            .env("SWARM_TMUX_SOCKET", &t.tmux.sock)
            .current_dir(&t.work)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).expect("stderr file"));
        if let Some(me) = as_name {
            c.env("SWARM_AGENT_NAME", me);
        }
        let mut child = c.spawn().expect("starting tests/mcp/client.py");
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("piped stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Mcp {
            t,
            team: team.to_string(),
            stdin: RefCell::new(stdin),
            lines,
            stderr,
            child: KillOnDrop(child),
        }
    }

    /// Sends one request line and waits (up to `within`, scaled) for its answer.
    fn request(&self, req: Value, within: Duration) -> Value {
        {
            let mut stdin = self.stdin.borrow_mut();
            let stdin = stdin.as_mut().expect("the client's stdin is open");
            writeln!(stdin, "{req}").expect("writing to the client");
            stdin.flush().expect("flushing the client's stdin");
        }
        let line = self
            .lines
            .recv_timeout(scaled(within))
            .unwrap_or_else(|e| panic!("no answer to {req} ({e})\n{}", self.explain()));
        let answer: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the client printed {line:?} ({e})\n{}", self.explain()));
        if let Some(x) = answer.get("exception") {
            panic!("{req} failed in the SDK: {x}\n{}", self.explain());
        }
        answer
    }

    fn tools(&self) -> Vec<Value> {
        let r = self.request(json!({"list_tools": true}), WAIT);
        r["tools"].as_array().cloned().unwrap_or_default()
    }

    /// Calls `tool`: whether it is an error, and its text.
    fn call(&self, tool: &str, args: Value) -> (bool, String) {
        self.call_within(tool, args, WAIT)
    }

    fn call_within(&self, tool: &str, args: Value, within: Duration) -> (bool, String) {
        let r = self.request(json!({"call": tool, "args": args}), within);
        (
            r["isError"].as_bool().unwrap_or(false),
            r["text"].as_str().unwrap_or_default().to_string(),
        )
    }

    /// Calls `tool` and insists it works; its JSON result (a sentence comes
    /// as a JSON string).
    fn ok(&self, tool: &str, args: Value) -> Value {
        self.ok_within(tool, args, WAIT)
    }

    fn ok_within(&self, tool: &str, args: Value, within: Duration) -> Value {
        let (err, text) = self.call_within(tool, args.clone(), within);
        if err {
            panic!(
                "{tool} {args} should work; isError: {text}\n{}",
                self.explain()
            );
        }
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }

    /// Calls `tool` and insists it is refused (`isError`); then insists the
    /// server still answers. Returns the error's text.
    fn refused(&self, tool: &str, args: Value) -> String {
        let (err, text) = self.call(tool, args.clone());
        if !err {
            panic!(
                "{tool} {args} should be refused (isError), it gave {text}\n{}",
                self.explain()
            );
        }
        assert!(
            !text.contains('\n') && !text.is_empty(),
            "one line: {text:?}"
        );
        self.ok("task_list", json!({}));
        text
    }

    /// Closes the client's stdin: it disconnects, and ends.
    fn close(self) {
        drop(self.stdin.borrow_mut().take());
        let last = self
            .lines
            .recv_timeout(scaled(WAIT))
            .unwrap_or_else(|e| panic!("the client did not close ({e})\n{}", self.explain()));
        assert!(last.contains("\"closed\""), "{last}\n{}", self.explain());
        let mut child = self.child;
        wait_until(
            "the MCP client has ended",
            WAIT,
            || matches!(child.0.try_wait(), Ok(Some(_))),
            String::new,
        );
    }

    fn explain(&self) -> String {
        let log = self
            .t
            .sb
            .path(&format!("swarm/{}/logs/mcp-team-lead.log", self.team));
        format!(
            "=== client + server stderr ===\n{}\n=== {} ===\n{}\n{}",
            std::fs::read_to_string(&self.stderr).unwrap_or_default(),
            log.display(),
            std::fs::read_to_string(&log).unwrap_or_default(),
            self.t.explain()
        )
    }
}

/// What `swarm ARGS` printed as its error, without `swarm: `: the line a
/// refused MCP call must carry.
fn cli_error(t: &TmuxTeam, args: &[&str]) -> String {
    let r = t.run(args);
    assert_ne!(r.code, Some(0), "{}", r.explain());
    r.stderr
        .lines()
        .last()
        .and_then(|l| l.strip_prefix("swarm: "))
        .unwrap_or_else(|| panic!("no error line\n{}", r.explain()))
        .to_string()
}

/// The members of a snapshot as `(name, agent, status, pane, task,
/// unread, attention)` rows, and its task counts and request ids.
fn picture(snap: &Value) -> Value {
    let members: Vec<Value> = snap["members"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|m| {
            json!([
                m["name"],
                m["agent"],
                m["status"],
                m["pane"],
                m["task"],
                m["unread"],
                m["attention"]
            ])
        })
        .collect();
    let requests: Vec<&Value> = snap["requests"]
        .as_array()
        .map(|r| r.iter().map(|r| &r["id"]).collect())
        .unwrap_or_default();
    json!({"team": snap["team"], "members": members, "tasks": snap["tasks"], "requests": requests})
}

#[test]
fn help_says_how_to_register_it_with_each_agent_cli() {
    let sb = crate::util::Sandbox::new();
    let r = sb.ok(&["mcp", "--help"]);
    for needle in [
        "Model Context Protocol",
        "claude mcp add swarm -- swarm mcp --team T",
        "--mcp-config",
        "[mcp_servers.swarm]",
        "-c 'mcp_servers.swarm.command=\"swarm\"'",
        "\"mcpServers\"",
        "settings.json",
        "isError",
    ] {
        assert!(r.stdout.contains(needle), "{needle:?}\n{}", r.explain());
    }
}

/// Every tool, called by the SDK against a team on a private tmux server:
/// the board worked without a teammate (owner, dependencies, claim), a
/// shell teammate spawned that completes a task and runs a message (its
/// reply read once by wait_for_messages, its output without escapes),
/// team_status as `swarm status --json` has it, a plan request answered, a
/// shutdown approved and a kill, each leaving no pane; each bad input
/// refused with the CLI's line while the server goes on answering.
#[test]
fn the_python_sdk_works_a_team_through_every_tool() {
    const TEST: &str = "mcp_every_tool";
    let Some(t) = TmuxTeam::new(TEST, "mc") else {
        return;
    };
    let Some(python) = sdk(TEST) else {
        return;
    };
    t.ok(&["team", "create", "mc"]);
    let c = Mcp::start(&t, &python, "mc", None);

    // tools/list: exactly the contract, each tool described in a sentence.
    let tools = c.tools();
    let names: BTreeSet<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let want: BTreeSet<&str> = CONTRACT.iter().map(|(n, _, _)| *n).collect();
    assert_eq!(names, want, "tools/list");
    assert_eq!(tools.len(), 14, "no tool twice");
    for (name, required, optional) in CONTRACT {
        let tool = tools.iter().find(|t| t["name"] == name).unwrap();
        let d = tool["description"].as_str().unwrap_or_default();
        assert!(d.len() > 20 && d.ends_with('.'), "{name}: {d:?}");
        let schema = &tool["inputSchema"];
        let props: BTreeSet<&str> = schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let all: BTreeSet<&str> = required.iter().chain(optional).copied().collect();
        assert_eq!(props, all, "{name}'s arguments");
        let req: BTreeSet<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert_eq!(req, required.iter().copied().collect(), "{name}'s required");
    }

    // The board, with no teammate to take anything.
    let gate = c.ok(
        "task_create",
        json!({"subject": "gate", "owner": "team-lead"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(c.ok("task_get", json!({"id": gate}))["owner"], "team-lead");
    let after = c.ok(
        "task_create",
        json!({"subject": "after", "description": "after the gate", "blocked_by": [gate]}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = c.ok("task_list", json!({"status": "pending"}));
    assert_eq!(
        listed["tasks"],
        json!([
            {"id": gate, "subject": "gate", "status": "pending", "owner": "team-lead", "blocked_by": []},
            {"id": after, "subject": "after", "status": "pending", "owner": null, "blocked_by": [gate]},
        ])
    );
    let nothing = c.ok("task_claim", json!({}));
    assert!(
        nothing
            .as_str()
            .is_some_and(|s| s.starts_with("nothing claimable")),
        "{nothing}"
    );
    let blocked = c.ok("task_claim", json!({"id": after}));
    assert!(
        blocked
            .as_str()
            .is_some_and(|s| s.starts_with("nothing claimable") && s.contains("blocked")),
        "{blocked}"
    );
    let done = c.ok("task_update", json!({"id": gate, "status": "completed"}));
    assert_eq!(done["status"], "completed");
    let claimed = c.ok("task_claim", json!({}));
    assert_eq!(
        (&claimed["id"], &claimed["owner"], &claimed["status"]),
        (&json!(after), &json!("team-lead"), &json!("in_progress"))
    );
    let renamed = c.ok(
        "task_update",
        json!({"id": after, "subject": "after, renamed", "status": "completed"}),
    );
    assert_eq!(
        (&renamed["subject"], &renamed["status"]),
        (&json!("after, renamed"), &json!("completed"))
    );
    assert_eq!(
        c.ok("task_list", json!({"owner": "nobody"}))["tasks"],
        json!([])
    );

    // A shell teammate, in a pane of the private server.
    let spawned = c.ok("spawn_teammate", json!({"name": "sh1"}));
    let pane = spawned["pane"].as_str().unwrap_or_default().to_string();
    assert_eq!(spawned["name"], "sh1");
    assert_eq!(
        pane,
        t.pane_of("sh1"),
        "the pane it returns is the roster's"
    );
    assert!(
        t.tmux.pane(&pane).is_some(),
        "{pane} on the server\n{}",
        t.explain()
    );

    // A task with a command: the teammate claims and completes it.
    let work = c.ok(
        "task_create",
        json!({"subject": "work", "command": "echo task-$((40+2)) > task.out"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = RefCell::new(Value::Null);
    wait_until(
        "sh1 completes the task made over MCP",
        WAIT,
        || {
            *task.borrow_mut() = c.ok("task_get", json!({"id": work}));
            task.borrow()["status"] == "completed"
        },
        || format!("{}\n{}", task.borrow(), c.explain()),
    );
    let task = task.into_inner();
    assert_eq!(task["owner"], "sh1");
    assert_eq!(
        task["metadata"]["command"],
        "echo task-$((40+2)) > task.out"
    );
    assert_eq!(
        std::fs::read_to_string(t.work.join("task.out")).unwrap_or_default(),
        "task-42\n"
    );

    // A message it runs; its reply comes back once.
    let sent = c.ok(
        "send_message",
        json!({"to": "sh1", "text": "printf '\\033[31mmcp-red-%s\\033[0m\\n' $((6*7))", "summary": "red"}),
    );
    assert_eq!(sent["sent"][0]["to"], "sh1", "{sent}");
    assert!(sent["sent"][0]["msg_id"].is_string(), "{sent}");
    let got: RefCell<Vec<Value>> = RefCell::default();
    wait_until(
        "wait_for_messages returns sh1's reply",
        WAIT,
        || {
            let r = c.ok_within("wait_for_messages", json!({"timeout_s": 5}), WAIT);
            let mut got = got.borrow_mut();
            got.extend(r["messages"].as_array().cloned().unwrap_or_default());
            got.iter().any(|m| {
                m["from"] == "sh1" && m["text"].as_str().is_some_and(|t| t.contains("mcp-red-42"))
            })
        },
        || format!("{:?}\n{}", got.borrow(), c.explain()),
    );
    let mut got = got.into_inner();
    // The team goes quiet: each later wait ends at its timeout with [].
    let mut quiet = false;
    for _ in 0..10 {
        let r = c.ok("wait_for_messages", json!({"timeout_s": 1}));
        let more = r["messages"].as_array().cloned().unwrap_or_default();
        if more.is_empty() {
            quiet = true;
            break;
        }
        got.extend(more);
    }
    assert!(quiet, "wait_for_messages never came back empty: {got:?}");
    // (Its idle notification quotes the reply too: the reply is the plain message.)
    let replies = got
        .iter()
        .filter(|m| {
            m["summary"]
                .as_str()
                .is_some_and(|s| s.starts_with("reply:"))
        })
        .filter(|m| m["text"].as_str().is_some_and(|t| t.contains("mcp-red-42")))
        .count();
    assert_eq!(replies, 1, "the reply, once: {got:?}");
    let ids: BTreeSet<&str> = got.iter().filter_map(|m| m["msg_id"].as_str()).collect();
    assert_eq!(ids.len(), got.len(), "no message twice: {got:?}");
    assert!(
        c.ok("read_inbox", json!({}))["messages"] == json!([]),
        "nothing unread is left"
    );
    let all = c.ok("read_inbox", json!({"unread_only": false}));
    let kept = all["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["read"] == true
                && m["summary"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("reply:"))
        })
        .count();
    assert_eq!(kept, 1, "the reply is kept in the history: {all}");

    // What its pane printed, escapes stripped.
    let out = RefCell::new(String::new());
    wait_until(
        "teammate_output shows what sh1 printed",
        WAIT,
        || {
            *out.borrow_mut() =
                c.ok("teammate_output", json!({"name": "sh1", "lines": 1000}))["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
            out.borrow().contains("mcp-red-42")
        },
        || format!("{:?}\n{}", out.borrow(), c.explain()),
    );
    let out = out.into_inner();
    assert!(!out.contains('\u{1b}'), "no escape bytes: {out:?}");
    let raw = std::fs::read(t.sb.path("swarm/mc/output/sh1.log")).unwrap_or_default();
    assert!(raw.contains(&0x1b), "the pane's log had escapes to strip");
    let two = c.ok("teammate_output", json!({"name": "sh1", "lines": 2}));
    assert!(two["text"].as_str().unwrap().lines().count() <= 2, "{two}");

    // A plan request from sh1: team_status lists it, answer_request answers it.
    let plan = json!({
        "type": "plan_approval_request",
        "from": "sh1",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "planFilePath": "/tmp/plan.md",
        "planContent": "1. look\n2. change",
        "requestId": "plan_approval-1@sh1@mc",
    });
    t.ok(&[
        "send",
        "--as",
        "sh1",
        "--to",
        "team-lead",
        &plan.to_string(),
    ]);
    let waiting = c.ok("team_status", json!({}));
    assert_eq!(
        waiting["requests"][0]["id"], "plan_approval-1@sh1@mc",
        "{waiting}"
    );

    // team_status is `swarm status --json`.
    let both = RefCell::new((Value::Null, Value::Null));
    wait_until(
        "team_status agrees with swarm status --json",
        WAIT,
        || {
            let mcp = picture(&c.ok("team_status", json!({})));
            let cli = picture(&t.ok(&["status", "--json"]).json());
            let same = mcp == cli;
            *both.borrow_mut() = (mcp, cli);
            same
        },
        || {
            let b = both.borrow();
            format!("team_status: {}\nswarm status --json: {}", b.0, b.1)
        },
    );
    let both = both.into_inner();
    assert_eq!(both.0["members"][1][0], "sh1", "{}", both.0);
    assert_eq!(
        both.0["tasks"],
        json!({"total": 3, "completed": 3, "in_progress": 0, "pending": 0})
    );

    let answered = c.ok(
        "answer_request",
        json!({"request_id": "plan_approval-1@sh1@mc", "approve": true, "feedback": "go"}),
    );
    assert_eq!(answered["done"], true, "{answered}");
    let inbox = t.ok(&["inbox", "sh1", "--all", "--json"]).json();
    let response = inbox
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str::<Value>(e["text"].as_str()?).ok())
        .find(|m| m["type"] == "plan_approval_response")
        .unwrap_or_else(|| panic!("no answer in sh1's inbox: {inbox}"));
    assert_eq!(
        (&response["requestId"], &response["approved"]),
        (&json!("plan_approval-1@sh1@mc"), &json!(true))
    );
    assert_eq!(c.ok("team_status", json!({}))["requests"], json!([]));

    // Bad inputs: each refused with the CLI's line; the server goes on.
    for (tool, args, cli) in [
        (
            "send_message",
            json!({"to": "nobody", "text": "hi"}),
            &["send", "--to", "nobody", "hi"][..],
        ),
        ("kill_teammate", json!({"name": "../x"}), &["kill", "../x"]),
        (
            "teammate_output",
            json!({"name": "a;b"}),
            &["output", "a;b", "--lines", "5"],
        ),
        ("spawn_teammate", json!({"name": "a;b"}), &["spawn", "a;b"]),
        (
            "spawn_teammate",
            json!({"name": "../x"}),
            &["spawn", "../x"],
        ),
        ("task_get", json!({"id": "999"}), &["task", "get", "999"]),
        (
            "task_update",
            json!({"id": "999", "status": "completed"}),
            &["task", "update", "999", "--status", "completed"],
        ),
        (
            "shutdown_teammate",
            json!({"name": "ghost"}),
            &["shutdown", "ghost"],
        ),
    ] {
        let got = c.refused(tool, args.clone());
        assert_eq!(got, cli_error(&t, cli), "{tool} {args}");
    }
    let e = c.refused(
        "answer_request",
        json!({"request_id": "nope", "approve": true}),
    );
    assert!(e.contains("no request \"nope\" waits"), "{e}");
    let e = c.refused("task_list", json!({"status": "done"}));
    assert!(e.contains("unknown status \"done\""), "{e}");
    let e = c.refused("teammate_output", json!({"name": "sh1", "lines": "many"}));
    assert!(e.contains("\"many\""), "{e}");
    let e = c.refused("read_inbox", json!({"unread": false}));
    assert!(e.contains("unknown field `unread`"), "{e}");
    let e = c.refused("send_message", json!({"to": "sh1"}));
    assert!(e.contains("text"), "{e}");

    // A shutdown it approves: its pane is gone, and so is it.
    let bye = c.ok_within(
        "shutdown_teammate",
        json!({"name": "sh1", "reason": "done"}),
        Duration::from_secs(60),
    );
    assert_eq!(bye["outcome"], "approved", "{bye}");
    assert!(
        t.tmux.pane(&pane).is_none(),
        "{pane} is gone\n{}",
        t.explain()
    );
    assert!(!t.members().contains(&"sh1".to_string()));

    // A kill while it works: its task goes back on the board.
    let sh2 = c.ok("spawn_teammate", json!({"name": "sh2", "agent": "shell"}));
    let pane2 = sh2["pane"].as_str().unwrap().to_string();
    let long = c.ok(
        "task_create",
        json!({"subject": "long", "command": "sleep 30"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_until(
        "sh2 works on the long task",
        WAIT,
        || {
            let t = c.ok("task_get", json!({"id": long}));
            t["status"] == "in_progress" && t["owner"] == "sh2"
        },
        || c.explain(),
    );
    let killed = c.ok("kill_teammate", json!({"name": "sh2"}));
    assert_eq!(killed["returned_tasks"][0]["id"], long, "{killed}");
    assert!(
        t.tmux.pane(&pane2).is_none(),
        "{pane2} is gone\n{}",
        t.explain()
    );
    let back = c.ok("task_get", json!({"id": long}));
    assert_eq!(
        (&back["status"], &back["owner"]),
        (&json!("pending"), &Value::Null)
    );
    assert!(t.tmux.canary_alive(), "the canary session survives");
    c.close();
}

/// On a team swarm did not start (Claude Code's), the server reads and
/// refuses every change with the CLI's line, and its files stay as they were.
#[test]
fn a_team_swarm_did_not_start_is_read_never_changed() {
    const TEST: &str = "mcp_foreign";
    let Some(t) = TmuxTeam::new(TEST, CC_TEAM) else {
        return;
    };
    let Some(python) = sdk(TEST) else {
        return;
    };
    install_claude_code_team(&t.sb);
    let before = claude_code_files(&t.sb);
    let c = Mcp::start(&t, &python, CC_TEAM, None);
    let snap = c.ok("team_status", json!({}));
    assert_eq!(
        (&snap["team"], &snap["foreign"]),
        (&json!(CC_TEAM), &json!(true))
    );
    assert!(
        c.ok("task_list", json!({}))["tasks"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    for (tool, args, cli) in [
        (
            "task_create",
            json!({"subject": "x"}),
            &["task", "create", "x"][..],
        ),
        (
            "task_update",
            json!({"id": "1", "status": "completed"}),
            &["task", "update", "1", "--status", "completed"],
        ),
        ("task_claim", json!({}), &["task", "claim"]),
        ("spawn_teammate", json!({"name": "new"}), &["spawn", "new"]),
        (
            "kill_teammate",
            json!({"name": "researcher"}),
            &["kill", "researcher"],
        ),
    ] {
        let got = c.refused(tool, args.clone());
        assert_eq!(got, cli_error(&t, cli), "{tool} {args}");
    }
    // The CLI's wording names its flag (--mark-read); the line is otherwise one.
    let e = c.refused("read_inbox", json!({"mark_read": true}));
    let cli = cli_error(&t, &["inbox", "--mark-read"]);
    assert_eq!(e, cli.replace("(--mark-read)", "(mark_read)"));
    let e = c.refused("wait_for_messages", json!({"timeout_s": 1}));
    assert_eq!(e, cli.replace(" (--mark-read)", ""));
    c.close();
    assert_eq!(
        claude_code_files(&t.sb),
        before,
        "Claude Code's files unchanged"
    );
}
