//! Live: the AI lead (issue 23) as the real agent CLIs run it, each
//! against a scripted model on 127.0.0.1 (`tests/models/`) that records
//! every request: `swarm up --lead claude|codex --lead-prompt …` on a
//! private tmux server, with shell teammates. The same flows as
//! `tests/ai_lead.rs`, whose lead is a fake agent.
//!
//! The lead's first request offers swarm's MCP tools (`mcp__swarm__*` for
//! Claude Code, namespace `mcp__swarm` for Codex); the model calls
//! `spawn_teammate` (a shell teammate) and `task_create` (with a command),
//! each succeeding with no permission prompt (the results that come back
//! are not errors); the shell teammate completes the task; the completion
//! reaches the lead's next request as a `<task-notification>` without
//! anyone typing (the seconds from the task file turning completed to that
//! request are printed as a `FIGURE`); the lead's last text shows in its
//! pane, the TeamsDialog still runs in the lead's own pane, and `swarm
//! down` leaves no AI lead process. In coordinator mode the lead's tools
//! are swarm's only, and a call of one succeeds. After `tmux kill-server`,
//! `swarm up --team T --resume` brings the lead back with its conversation:
//! its next request carries its first prompt and answer.
//!
//! What the pinned CLIs do that shapes these checks: Claude Code 2.1.332
//! (`claude -p`) defers MCP tools, naming them in a message ("The following
//! deferred tools are now available via ToolSearch…") rather than in the
//! request's `tools`, and loads one with ToolSearch before calling it
//! (`tests/models/anthropic.py` makes that call); with `--tools=` (a
//! coordinator) it has no ToolSearch and offers swarm's tools directly.
//! Codex 0.171.0 fails every MCP call that needs an approval under `codex
//! exec` unless the server's `default_tools_approval_mode` is `approve`.
//!
//! The user is set up as in `tests/live_exec.rs` (its [`Live`]): a home of
//! their own, the CLI's settings pointing at the scripted server, every
//! other request to a closed proxy port. A test needing a CLI prints
//! `SKIP` when it is not installed, and fails instead when
//! `SWARM_REQUIRE_AGENTS=1`.

use crate::live_exec::{CLAUDE_PRINT, CODEX, Cli, Live, rule, text};
use crate::util::live::{LIVE_WAIT, LiveTeam, alive, at, descendants, now};
use crate::util::tmux::group_alive;
use crate::util::{WAIT, wait_until};
use serde_json::{Value, json};

/// How one CLI names swarm's tools and offers them in a request.
struct Lead {
    cli: &'static Cli,
    /// `swarm up --lead AGENT`.
    agent: &'static str,
    /// The name a script calls swarm's tool `tool` by.
    tool: fn(&str) -> String,
    /// The tool names a request offers (swarm's as [`Lead::tool`] names them).
    offered: fn(&Value) -> Vec<String>,
    /// The results of the tool calls in a request, by call id: (id, text,
    /// is an error).
    results: fn(&Value) -> Vec<(String, String, bool)>,
    /// The CLI's own tools that edit or run (offered to a lead in `team`
    /// mode, never to a coordinator).
    own: &'static [&'static str],
}

const CLAUDE_LEAD: Lead = Lead {
    cli: &CLAUDE_PRINT,
    agent: "claude",
    own: &["Bash", "Edit", "Write", "NotebookEdit"],
    tool: |t| format!("mcp__swarm__{t}"),
    offered: claude_offered,
    results: |r| {
        let mut out = Vec::new();
        for m in r["body"]["messages"].as_array().into_iter().flatten() {
            for b in m["content"].as_array().into_iter().flatten() {
                if b["type"] == "tool_result" {
                    out.push((
                        b["tool_use_id"].as_str().unwrap_or("").to_string(),
                        strings(&b["content"]),
                        b["is_error"] == true,
                    ));
                }
            }
        }
        out
    },
};

const CODEX_LEAD: Lead = Lead {
    cli: &CODEX,
    agent: "codex",
    own: &[
        "exec_command",
        "write_stdin",
        "multi_agent_v1/spawn_agent",
        "view_image",
    ],
    tool: |t| format!("mcp__swarm/{t}"),
    offered: |r| {
        let mut out = Vec::new();
        for t in r["body"]["tools"].as_array().into_iter().flatten() {
            // A tool with no name (a hosted one) goes by its type.
            let name = t["name"].as_str().or(t["type"].as_str()).unwrap_or("");
            if t["type"] == "namespace" {
                for x in t["tools"].as_array().into_iter().flatten() {
                    out.push(format!("{name}/{}", x["name"].as_str().unwrap_or("")));
                }
            } else {
                out.push(name.to_string());
            }
        }
        out
    },
    results: |r| {
        r["body"]["input"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "function_call_output")
            .map(|i| {
                let text = strings(&i["output"]);
                let error = i["output"]["success"] == false;
                (i["call_id"].as_str().unwrap_or("").to_string(), text, error)
            })
            .collect()
    },
};

/// The tools a Claude Code request offers: those in its `tools`, and the
/// deferred ones its messages announce (Claude Code 2.1.332 defers MCP
/// tools: "The following deferred tools are now available via
/// ToolSearch…", one name a line; the model loads one with ToolSearch
/// before calling it, which `tests/models/anthropic.py` does for it).
fn claude_offered(r: &Value) -> Vec<String> {
    let mut out: Vec<String> = r["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    let said = strings(&r["body"]["messages"]);
    for part in said
        .split("The following deferred tools are now available via ToolSearch")
        .skip(1)
    {
        out.extend(
            part.lines()
                .skip(1)
                .map(str::trim)
                .take_while(|l| {
                    !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                })
                .map(str::to_string),
        );
    }
    out
}

/// Every string in a JSON value, one a line.
fn strings(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s}\n"),
        Value::Array(a) => a.iter().map(strings).collect(),
        Value::Object(o) => o.values().map(strings).collect(),
        _ => String::new(),
    }
}

/// The tool calls the scripted model made (each reply's `tool_use`
/// blocks): (call id, tool name).
fn calls_made(l: &Live) -> Vec<(String, String)> {
    l.server
        .requests()
        .iter()
        .flat_map(|r| r["reply"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_use")
        .map(|b| {
            (
                b["id"].as_str().unwrap_or("").to_string(),
                b["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The pane `swarm up` reports for the lead (`…: lead in pane %N`), where
/// the TeamsDialog runs.
fn dialog_pane(l: &Live, stderr: &str) -> String {
    crate::util::dialog::lead_pane_of(&l.t, stderr)
}

/// When the task file `id` turned completed: polled, then its mtime (the
/// write that completed it) as an epoch time.
fn wait_completed(l: &Live, id: &str) -> f64 {
    let path = l.t.sb.path(&format!("tasks/{}/{id}.json", l.t.team));
    let mut when = 0.0;
    wait_until(
        &format!("the shell teammate completes task {id}"),
        LIVE_WAIT,
        || {
            let done = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .is_some_and(|t| t["status"] == "completed");
            if done {
                when = std::fs::metadata(&path)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_secs_f64())
                    .unwrap_or(0.0);
            }
            done
        },
        || l.explain(),
    );
    when
}

/// The whole flow with `lead` as the AI lead (see the module docs).
fn leads_the_team(test: &str, lead: &Lead) {
    let tool = lead.tool;
    let task_cmd = "sleep 3; echo TASK-OUT-q7 > counted.txt; echo TASK-OUT-q7";
    let rules = vec![
        // Its turn after the task completed: the notification, by itself.
        rule(
            "notified",
            &["<status>completed</status>", "TASK-OUT-q7"],
            json!([text("LEAD-FINAL-q7: bob counted, checked")]),
        ),
        rule(
            "lead",
            &["AILEAD-q7"],
            json!([
                [{"type": "tool_use", "name": tool("spawn_teammate"),
                  "input": {"name": "bob", "agent": "shell"}}],
                [{"type": "tool_use", "name": tool("task_create"),
                  "input": {"subject": "count the words", "command": task_cmd}}],
                text("LEAD-WAITING-q7")
            ]),
        ),
    ];
    let Some(l) = Live::new(test, lead.cli, rules) else {
        return;
    };
    let up = l.ok(&[
        "up",
        "--lead",
        lead.agent,
        "--lead-prompt",
        "AILEAD-q7: count the words in the repo",
        "--no-attach",
    ]);
    l.t.wait_lead();
    let dialog = dialog_pane(&l, &up.stderr);

    // Its first request: at once, on the prompt, with swarm's tools.
    let first = l.wait_request("the AI lead's first model request", 0, "AILEAD-q7");
    let offered = (lead.offered)(&first);
    for t in [
        "spawn_teammate",
        "task_create",
        "send_message",
        "team_status",
    ] {
        assert!(
            offered.contains(&tool(t)),
            "{} offered in the first request: {offered:?}\n{}",
            tool(t),
            l.explain()
        );
    }
    for t in lead.own {
        assert!(
            offered.iter().any(|o| o == t),
            "in team mode the lead may work too: {t} offered: {offered:?}"
        );
    }
    let said = l.request_text(&first);
    assert!(
        said.contains("You are the lead of team live") && said.contains("self-contained prompt"),
        "the lead's instructions come with its first turn\n{said}"
    );

    // Its calls succeed, with no prompt: bob on the roster, the task on
    // the board, and each result back to the model, not an error.
    wait_until(
        "the AI lead's spawn_teammate puts bob on the roster",
        LIVE_WAIT,
        || l.t.member("bob").is_some(),
        || l.explain(),
    );
    let completed = wait_completed(&l, "1");
    let task = l.t.task("1");
    assert_eq!(task["owner"], "bob", "{task}");
    assert_eq!(task["metadata"]["command"], task_cmd, "{task}");
    assert!(
        task["metadata"]["output"]
            .as_str()
            .is_some_and(|o| o.contains("TASK-OUT-q7")),
        "{task}"
    );
    assert_eq!(
        std::fs::read_to_string(l.t.work.join("counted.txt"))
            .unwrap_or_default()
            .trim(),
        "TASK-OUT-q7"
    );

    // The completion reaches its next request, by itself.
    let note = l.wait_request(
        "the task's <task-notification> reaches the AI lead's next request",
        0,
        "<status>completed</status>",
    );
    let latency = at(&note) - completed;
    let said = l.request_text(&note);
    assert!(
        said.contains("<task-notification><task-id>1</task-id><status>completed</status>"),
        "{said}"
    );
    let results: Vec<(String, String, bool)> = (lead.results)(&note);
    let made = calls_made(&l);
    for t in ["spawn_teammate", "task_create"] {
        assert!(
            made.iter().any(|(_, n)| *n == tool(t)),
            "the model called {t}: {made:?}"
        );
    }
    for (id, name) in made {
        if !name.contains("swarm") {
            continue;
        }
        let found = results.iter().find(|(i, _, _)| *i == id);
        let Some((_, out, error)) = found else {
            panic!(
                "no result of {name} ({id}) in the conversation: {results:?}\n{}",
                l.explain()
            );
        };
        assert!(
            !error
                && !out.contains("requires approval")
                && !out.to_lowercase().contains("permission"),
            "{name} succeeded with no permission prompt: {out}\n{}",
            l.explain()
        );
    }
    let spawn_result = results
        .iter()
        .map(|(_, o, _)| o.as_str())
        .collect::<String>();
    assert!(
        spawn_result.contains("bob") && spawn_result.contains("\"id\""),
        "spawn_teammate named bob, task_create its id: {results:?}"
    );

    // Its last text shows in its pane; the dialog runs in the lead's pane.
    let lead_pane = l.t.pane_of("lead");
    wait_until(
        "the AI lead's final text shows in its pane",
        LIVE_WAIT,
        || l.t.tmux.capture(&lead_pane).contains("LEAD-FINAL-q7"),
        || l.explain(),
    );
    assert_ne!(lead_pane, dialog, "the AI lead has a pane of its own");
    wait_until(
        "the TeamsDialog runs beside it, listing the AI lead and bob",
        WAIT,
        || {
            let s = l.t.tmux.capture(&dialog);
            s.contains(" teammate") && s.contains("@lead") && s.contains("@bob")
        },
        || {
            format!(
                "=== dialog ===\n{}\n{}",
                l.t.tmux.capture(&dialog),
                l.explain()
            )
        },
    );
    println!(
        "FIGURE ai-lead task-notification latency: {latency:.2} s ({}, task file completed → \
         the lead's next model request)",
        lead.agent
    );

    // `down` leaves no AI lead process.
    let runtime = l.t.pid_of("lead");
    let tree = descendants(runtime);
    l.ok(&["down"]);
    wait_until(
        "swarm down leaves no AI lead process",
        WAIT,
        || !alive(runtime) && !group_alive(runtime) && tree.iter().all(|p| !alive(*p)),
        || l.explain(),
    );
}

/// Claude Code (`claude -p`, one resumed turn per batch) leads.
#[test]
fn claude_code_leads_the_team_through_swarms_mcp_tools() {
    leads_the_team("live_ai_lead_claude", &CLAUDE_LEAD);
}

/// Codex (`codex exec`, one resumed turn per batch) leads.
#[test]
fn codex_leads_the_team_through_swarms_mcp_tools() {
    leads_the_team("live_ai_lead_codex", &CODEX_LEAD);
}

/// `--lead-mode coordinator`: the lead's tools are swarm's, not its own
/// editing and shell tools, and a call of one of swarm's succeeds.
fn coordinator_has_only_team_tools(test: &str, lead: &Lead) {
    let tool = lead.tool;
    let rules = vec![rule(
        "lead",
        &["COORD-q7"],
        json!([
            [{"type": "tool_use", "name": tool("team_status"), "input": {}}],
            text("COORD-DONE-q7")
        ]),
    )];
    let Some(l) = Live::new(test, lead.cli, rules) else {
        return;
    };
    l.ok(&[
        "up",
        "--lead",
        lead.agent,
        "--lead-mode",
        "coordinator",
        "--lead-prompt",
        "COORD-q7: plan the parser work",
        "--no-attach",
    ]);
    l.t.wait_lead();
    let first = l.wait_request("the coordinator's first model request", 0, "COORD-q7");
    let offered = (lead.offered)(&first);
    for t in [
        "spawn_teammate",
        "task_create",
        "send_message",
        "team_status",
    ] {
        assert!(
            offered.contains(&tool(t)),
            "{} offered: {offered:?}",
            tool(t)
        );
    }
    for t in lead.own.iter().chain(&["shell", "apply_patch", "Read"]) {
        assert!(
            !offered.iter().any(|o| o == t),
            "a coordinator has no {t}: {offered:?}"
        );
    }
    if lead.agent == "claude" {
        // Claude Code: nothing but swarm's tools (and its placeholder).
        let other: Vec<&String> = offered
            .iter()
            .filter(|o| !o.starts_with("mcp__swarm__") && *o != "DeferredToolPlaceholder")
            .collect();
        assert!(other.is_empty(), "tools not swarm's: {other:?}");
    }
    let said = l.request_text(&first);
    assert!(said.contains("You are a coordinator"), "{said}");
    // Its call of team_status comes back, not an error, naming the team.
    wait_until(
        "the model's team_status call is made",
        LIVE_WAIT,
        || {
            calls_made(&l)
                .iter()
                .any(|(_, n)| *n == tool("team_status"))
        },
        || l.explain(),
    );
    let (id, _) = calls_made(&l)
        .into_iter()
        .find(|(_, n)| *n == tool("team_status"))
        .expect("the model called team_status");
    wait_until(
        "team_status's result reaches the model",
        LIVE_WAIT,
        || {
            l.server.main_requests().iter().any(|r| {
                (lead.results)(r)
                    .iter()
                    .any(|(i, out, error)| *i == id && !error && out.contains("lead"))
            })
        },
        || l.explain(),
    );
    println!("{test}: the coordinator is offered {offered:?}");

    // Its next turn resumes its conversation, still a coordinator.
    l.ok(&["send", "--to", "lead", "COORD2-q7: and the lexer?"]);
    let next = l.wait_request("the coordinator's next turn", 1, "COORD2-q7");
    let said = l.request_text(&next);
    assert!(
        said.contains("COORD-q7: plan the parser work"),
        "the next turn resumes the conversation\n{said}"
    );
    let offered = (lead.offered)(&next);
    assert!(offered.contains(&tool("task_create")), "{offered:?}");
    for t in lead.own {
        assert!(
            !offered.iter().any(|o| o == t),
            "a resumed coordinator has no {t}: {offered:?}"
        );
    }
}

#[test]
fn a_claude_code_coordinator_has_only_the_team_tools() {
    coordinator_has_only_team_tools("live_ai_lead_claude_coordinator", &CLAUDE_LEAD);
}

#[test]
fn a_codex_coordinator_has_only_the_team_tools() {
    coordinator_has_only_team_tools("live_ai_lead_codex_coordinator", &CODEX_LEAD);
}

/// After the tmux server ends (a reboot, as far as panes go), `swarm up
/// --team T --resume` brings the AI lead back with its conversation: the
/// CLI resumes the session recorded for it (Claude Code's `--resume ID`,
/// `codex exec resume ID`), so its next model request, on the prompt the
/// same `up` gives it, carries its first prompt and its first answer.
fn comes_back_with_its_conversation(test: &str, lead: &Lead) {
    let rules = vec![
        rule("second", &["RESUME2-q8"], json!([text("ANSWER2-q8")])),
        rule(
            "first",
            &["RESUME1-q8"],
            json!([text("ANSWER1-q8: the word is heron")]),
        ),
    ];
    let Some(l) = Live::new(test, lead.cli, rules) else {
        return;
    };
    l.ok(&[
        "up",
        "--lead",
        lead.agent,
        "--lead-prompt",
        "RESUME1-q8: remember the word heron",
        "--no-attach",
    ]);
    let dialog = l.t.wait_lead();
    l.wait_request("the AI lead's first model request", 0, "RESUME1-q8");
    // Its first turn over: the answer shown, the session recorded, idle.
    let lead_pane = l.t.pane_of("lead");
    let record =
        l.t.sb
            .path(&format!("swarm/{}/runtime/lead.session.json", l.t.team));
    wait_until(
        "the AI lead's first turn ends, its conversation recorded",
        LIVE_WAIT,
        || {
            l.t.tmux.capture(&lead_pane).contains("ANSWER1-q8")
                && record.is_file()
                && l.t.member("lead").is_some_and(|m| m["isActive"] == false)
        },
        || l.explain(),
    );

    let runtime = l.t.pid_of("lead");
    l.t.tmux.run(&["kill-server"]);
    wait_until(
        "the AI lead's runtime and the TeamsDialog end with the tmux server",
        WAIT,
        || !alive(runtime) && !alive(dialog),
        || l.explain(),
    );
    let seen = l.server.main_requests().len();
    let t0 = now();
    let back = l.ok(&[
        "up",
        "--team",
        &l.t.team,
        "--resume",
        "--lead",
        lead.agent,
        "--lead-prompt",
        "RESUME2-q8: what was the word?",
        "--no-attach",
    ]);
    assert!(
        back.stderr
            .contains(&format!("lead: back; its {} conversation ", lead.cli.agent)),
        "{}",
        back.explain()
    );
    l.t.wait_new_lead(dialog);
    let next = l.wait_request(
        "the AI lead's next model request after the resume",
        seen,
        "RESUME2-q8",
    );
    let said = l.request_text(&next);
    assert!(
        said.contains("RESUME1-q8: remember the word heron")
            && said.contains("ANSWER1-q8: the word is heron"),
        "the request after the resume carries the earlier exchange\n{said}\n{}",
        l.explain()
    );
    println!(
        "FIGURE ai-lead resume: {:.2} s ({}, swarm up --resume started → the lead's next model \
         request)",
        at(&next) - t0,
        lead.agent
    );
    l.ok(&["down", "--force", "--wait", "5"]);
}

#[test]
fn a_claude_code_lead_comes_back_with_its_conversation_after_the_tmux_server_ends() {
    comes_back_with_its_conversation("live_ai_lead_claude_resume", &CLAUDE_LEAD);
}

#[test]
fn a_codex_lead_comes_back_with_its_conversation_after_the_tmux_server_ends() {
    comes_back_with_its_conversation("live_ai_lead_codex_resume", &CODEX_LEAD);
}
