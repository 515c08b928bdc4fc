//! Rules that once drifted between copies (issue 10), each now derived in
//! one place: a member's status and who `prune` takes (`swarm status`,
//! `swarm prune` and the TeamsDialog), and the lead's answer to a plan
//! (`swarm send --plan-response` and the dialog's `a`/`r`); and the rule
//! that keeps them so (issue 21): no front end reads the roster or
//! finishes a departure itself, every verb is in `src/ops/`.

use crate::util::tmux::{TmuxTeam, WAIT, agent};
use crate::util::wait_until;
use sha2::Digest;

fn status_of(t: &TmuxTeam, name: &str) -> String {
    let s = t.ok(&["status", "--json"]).json();
    s["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .and_then(|m| m["status"].as_str())
        .unwrap_or("?")
        .to_string()
}

/// A member whose plan waits for the lead is not idle for `swarm prune`
/// (it once was: the CLI's rule skipped only busy members, the dialog's
/// also those waiting for approval or stopping), and `swarm status` says
/// what the dialog says.
#[test]
fn prune_and_status_follow_the_dialogs_rule() {
    let Some(t) = TmuxTeam::new("one_rule_prune", "or") else {
        return;
    };
    t.up();
    let rec = agent("recorder");
    for n in ["idle", "asker", "busy"] {
        t.spawn(n, &[&rec]);
        t.wait_ready(n);
    }
    let plan = serde_json::json!({
        "type": "plan_approval_request",
        "from": "asker",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "planFilePath": "/tmp/plan.md",
        "planContent": "1. look\n2. change",
        "requestId": "plan_approval-1@asker@or",
    });
    t.ok(&[
        "send",
        "--as",
        "asker",
        "--to",
        "team-lead",
        &plan.to_string(),
    ]);
    t.task_in_progress("work", "busy");
    wait_until(
        "the lead has taken the plan request",
        WAIT,
        || {
            t.ok(&["inbox", "team-lead", "--unread", "--json"])
                .json()
                .as_array()
                .is_some_and(|a| a.is_empty())
        },
        || t.explain(),
    );
    let pruned = t.ok(&["prune", "--dry-run"]);
    assert_eq!(
        pruned.stdout.trim(),
        "would prune idle",
        "{}\n{}",
        pruned.explain(),
        t.explain()
    );
    assert_eq!(status_of(&t, "idle"), "idle");
    assert_eq!(status_of(&t, "asker"), "waiting approval");
    assert_eq!(status_of(&t, "busy"), "running");
    // The CLI's answer is the dialog's: it carries the plan's digest.
    t.ok(&[
        "send",
        "--to",
        "asker",
        "--plan-response",
        "plan_approval-1@asker@or",
        "--approve",
    ]);
    let inbox = t.ok(&["inbox", "asker", "--json"]).json();
    let answer: serde_json::Value = inbox
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| serde_json::from_str(e["text"].as_str()?).ok())
        .find(|m: &serde_json::Value| m["type"] == "plan_approval_response")
        .expect("the answer");
    let digest: String = sha2::Sha256::digest(b"1. look\n2. change")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(answer["planDigest"], digest.as_str());
    assert_eq!(answer["approved"], true);
    assert_eq!(
        status_of(&t, "asker"),
        "idle",
        "answered: no longer waiting"
    );
    // A dead member is dead for `swarm status` as for the dialog.
    let pid = t.pid_of("idle");
    // SAFETY: signalling the pane process this test's team started.
    unsafe { libc::kill(-(pid as i32), libc::SIGKILL) };
    wait_until(
        "swarm status says the killed member is dead",
        WAIT,
        || status_of(&t, "idle").starts_with("dead"),
        || t.explain(),
    );
}

/// A mode change a teammate's agent would ignore (Claude Code drops
/// `mode_set_request` from its inbox) is refused with the reason, from the
/// CLI as from the dialog's Shift+Tab, instead of being reported as done.
#[test]
fn a_mode_change_claude_code_ignores_is_refused_not_reported_done() {
    let sb = crate::util::Sandbox::new();
    sb.team_with("md", &["coder", "shelly"]);
    let root = swarm::paths::Root::new(sb.root());
    swarm::team::Roster::new(&root, "md")
        .update_member("coder", |m| {
            m.set_swarm_field(swarm::team::SwarmField::Agent, serde_json::json!("claude"))
        })
        .unwrap();
    let r = sb.run(&[
        "send",
        "--team",
        "md",
        "--to",
        "coder",
        "--mode-set",
        "acceptEdits",
    ]);
    r.assert_code(2);
    r.assert_error("cannot change the mode of coder");
    r.assert_error("Shift+Tab in its pane");
    let inbox = sb.path("teams/md/inboxes/coder.json");
    assert!(
        std::fs::read_to_string(&inbox).map_or(true, |t| !t.contains("mode_set_request")),
        "nothing was sent"
    );
    sb.ok(&[
        "send",
        "--team",
        "md",
        "--to",
        "shelly",
        "--mode-set",
        "acceptEdits",
    ]);
    sb.ok(&[
        "send",
        "--team",
        "md",
        "--to",
        "coder",
        "--mode-set",
        "acceptEdits",
        "--force",
    ]);
}

/// `swarm send --mode-set` takes the modes `swarm spawn --mode` and the
/// spec's `mode` take (the CLI's own list of four had drifted from them):
/// all six of Claude Code's names, `manual` written as `default`.
#[test]
fn mode_set_takes_the_modes_spawn_takes() {
    let sb = crate::util::Sandbox::new();
    sb.team_with("ms", &["shelly"]);
    for mode in ["dontAsk", "auto", "manual"] {
        sb.ok(&["send", "--team", "ms", "--to", "shelly", "--mode-set", mode]);
    }
    let inbox = std::fs::read_to_string(sb.path("teams/ms/inboxes/shelly.json")).unwrap();
    for written in [
        "\\\"mode\\\":\\\"dontAsk\\\"",
        "\\\"mode\\\":\\\"auto\\\"",
        "\\\"mode\\\":\\\"default\\\"",
    ] {
        assert!(inbox.contains(written), "{written} in {inbox}");
    }
    assert!(!inbox.contains("manual"), "{inbox}");
    let r = sb.run(&[
        "send",
        "--team",
        "ms",
        "--to",
        "shelly",
        "--mode-set",
        "yolo",
    ]);
    r.assert_code(2);
    r.assert_error("unknown permission mode \"yolo\"; pick one of default, acceptEdits, plan, bypassPermissions, dontAsk, auto");
}

/// What needs the user and how a task goes are derived once
/// (`team::status::{Attention, Progress}`): `swarm status` shows a failed
/// task and the last line a running task printed, from the tail of its
/// pane's output log (written here as a pane would, escapes and all).
#[test]
fn status_shows_attention_and_live_progress_by_the_dialogs_rule() {
    let s = crate::util::Sandbox::new();
    s.team_with("ap", &["ann", "bob"]);
    s.ok(&["task", "create", "long job", "--team", "ap"]);
    s.ok(&["task", "create", "broken job", "--team", "ap"]);
    let up = |args: &[&str]| {
        let mut a = vec!["task", "update", "--team", "ap"];
        a.extend(args);
        s.ok(&a);
    };
    up(&["1", "--owner", "ann", "--status", "in-progress"]);
    up(&["2", "--owner", "bob", "--metadata", r#"{"failed":true}"#]);
    let root = swarm::paths::Root::new(s.root());
    let log = root.output("ap", "ann").unwrap();
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let mut out = "step 1\r\n".repeat(5000);
    out.push_str("\x1b[1mcompiling\x1b[0m parser.rs\r\n");
    std::fs::write(&log, out).unwrap();
    let plain = s.ok(&["status", "--team", "ap"]).stdout;
    let line = |name: &str| {
        plain
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}:\n{plain}"))
            .to_owned()
    };
    assert!(line("ann").contains("› compiling parser.rs"), "{plain}");
    assert!(line("bob").contains("! task #2 failed"), "{plain}");
    let json = s.ok(&["status", "--team", "ap", "--json"]).json();
    let m = |name: &str| {
        json["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(m("ann")["progress"]["lastLine"], "compiling parser.rs");
    assert!(m("ann")["progress"]["elapsedSecs"].is_u64(), "{json}");
    assert_eq!(m("bob")["attention"], "task #2 failed");
    assert!(m("ann")["attention"].is_null());
}

/// The front ends (the CLI's commands, the TeamsDialog and its lead-side
/// adapter, the MCP server) parse and render: every verb is written once,
/// in `src/ops/` (issue 21). What would mean a front end finishing a verb
/// itself, in code (comments aside):
const FRONT_END_MUST_NOT: [(&str, &str); 12] = [
    (".roster()", "reads or writes the roster"),
    ("Roster::", "reads or writes the roster"),
    ("list_teams", "lists the teams itself"),
    ("release_member", "takes a member off the roster itself"),
    ("remove_member", "takes a member off the roster itself"),
    ("unassign_all_of", "hands a member's tasks back itself"),
    ("close_pane", "closes a pane itself"),
    ("kill_all(", "closes panes itself"),
    ("backend.kill(", "closes a pane itself"),
    ("worktree::retire", "retires a worktree itself"),
    ("send_shutdown_request", "asks for a shutdown itself"),
    ("depart::leave", "finishes a departure itself"),
];

/// The front ends' source files.
fn front_end_files() -> Vec<std::path::PathBuf> {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = vec![src.join("lead/control.rs")];
    let mut dirs = vec![src.join("commands"), src.join("tui"), src.join("mcp")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Each line of `code` that does one of [`FRONT_END_MUST_NOT`], with what
/// it does (comments are not code: `//` to the end of a line is dropped).
fn verbs_finished_by_hand(code: &str) -> Vec<String> {
    code.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.split("//").next().unwrap_or("");
            FRONT_END_MUST_NOT
                .iter()
                .find(|(token, _)| code.contains(token))
                .map(|(token, what)| format!("line {}: {what} ({token}): {}", i + 1, line.trim()))
        })
        .collect()
}

/// Issue 21: leaving the team was assembled in five places and a member's
/// status three times; commands read the roster to finish their verbs.
/// Now no front end reads the roster or finishes a departure itself: it
/// calls `ops::TeamOps`.
#[test]
fn no_front_end_reads_the_roster_or_finishes_a_departure_itself() {
    // The rule can fail: what a front end once did is caught.
    let once = "let tf = team.roster().read()?; // reads it\n\
                teardown::close_pane(&opened, &m, grace).await?;\n\
                // team.roster() in a comment is fine\n";
    assert_eq!(verbs_finished_by_hand(once).len(), 2, "{once}");
    let mut found = Vec::new();
    let files = front_end_files();
    assert!(files.len() > 20, "the front ends' files: {files:?}");
    for f in files {
        let code = std::fs::read_to_string(&f).unwrap();
        for v in verbs_finished_by_hand(&code) {
            found.push(format!("{}: {v}", f.display()));
        }
    }
    assert!(
        found.is_empty(),
        "front ends finishing a verb themselves (call ops::TeamOps instead):\n{}",
        found.join("\n")
    );
}
