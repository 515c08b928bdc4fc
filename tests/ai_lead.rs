//! The AI lead (issue 23), with a fake agent in its place (the exec
//! contract's `command`, `tests/agents/ai-lead`, which records each turn's
//! prompt): its first turn starts at once on the lead prompt, with the
//! lead's instructions; every message for the lead reaches its
//! conversation once, the human's `m` as the user, a teammate's while it is
//! busy at its next turn; a completed task arrives as a
//! `<task-notification>`; it never claims a task, never replies by itself;
//! `prune` leaves it and `down` ends it.

use crate::util::dialog::{Dialog, lead_pane_of};
use crate::util::tmux::{TmuxTeam, agent};
use crate::util::{WAIT, wait_until};

/// The prompts of every turn the fake AI lead ran, in order.
fn turns(t: &TmuxTeam) -> Vec<String> {
    let log = std::fs::read_to_string(t.work.join("ai-prompts.log")).unwrap_or_default();
    log.split("=== turn ")
        .skip(1)
        .map(|s| s.to_string())
        .collect()
}

/// How many turns carried the message whose text is `needle` (each
/// message shows its text once, and maybe its summary).
fn count_in_turns(t: &TmuxTeam, needle: &str) -> usize {
    let line = format!("\n{needle}\n");
    turns(t).iter().map(|p| p.matches(&line).count()).sum()
}

#[test]
fn the_ai_lead_hears_every_message_once_and_is_told_of_finished_tasks() {
    let Some(t) = TmuxTeam::new("ai_lead_hears_once", "al") else {
        return;
    };
    let spec = t.sb.path("swarm.toml");
    std::fs::write(
        &spec,
        format!(
            "team = \"al\"\n\
             [lead]\nagent = \"command\"\ncommand = [{:?}]\nprompt = \"Build the parser, PROMPT-1\"\n\
             [[teammate]]\nname = \"bob\"\nagent = \"shell\"\n",
            agent("ai-lead")
        ),
    )
    .unwrap();
    // The AI lead's first turn is held, so what comes next finds it busy.
    std::fs::write(t.work.join("ai-hold"), "").unwrap();
    let up = t.ok(&["up", spec.to_str().unwrap(), "--no-attach"]);
    t.wait_lead();
    let d = Dialog {
        pane: lead_pane_of(&t, &up.stderr),
        t,
    };
    d.roomy();
    d.wait(
        "the AI lead's first turn starts at once, on the lead prompt",
        || turns(&d.t).first().is_some_and(|p| p.contains("PROMPT-1")),
    );
    let first = turns(&d.t).remove(0);
    assert!(
        first.contains("You are the lead of team al")
            && first.contains("self-contained prompt")
            && first.contains("teammate_id=\"user\""),
        "instructions, then the user's prompt:\n{first}"
    );
    // While it is busy: a teammate writes to the lead, the human messages
    // it from the dialog, and a task finishes.
    d.t.ok(&["send", "--as", "bob", "--to", "team-lead", "BOB-SAYS-2"]);
    d.select("lead");
    d.keys(&["m"]);
    d.wait_screen("the compose box is addressed to @lead", |s| {
        s.contains("To: @lead")
    });
    d.type_text("USER-SAYS-3");
    d.keys(&["Enter"]);
    // It went as the user ("told @lead (as the user)" in the footer, which
    // a later event may replace before a loaded machine draws it: the
    // inbox is what says so for sure).
    d.wait("the AI lead's inbox has it from the user", || {
        d.t.ok(&["inbox", "lead", "--all", "--json"])
            .json()
            .as_array()
            .is_some_and(|a| {
                a.iter()
                    .any(|e| e["from"] == "user" && e["text"] == "USER-SAYS-3")
            })
    });
    d.t.ok(&["task", "create", "count", "--command", "echo TASK-OUT-4"]);
    d.wait("bob completes the task", || {
        d.t.task("1")["status"] == "completed"
    });
    assert_eq!(turns(&d.t).len(), 1, "still in its first turn");
    std::fs::remove_file(d.t.work.join("ai-hold")).unwrap();
    d.wait("each reaches the AI lead at its next turns", || {
        let all = turns(&d.t).join("\n");
        ["BOB-SAYS-2", "USER-SAYS-3", "TASK-OUT-4"]
            .iter()
            .all(|n| all.contains(n))
    });
    for n in ["Build the parser, PROMPT-1", "BOB-SAYS-2", "USER-SAYS-3"] {
        assert_eq!(count_in_turns(&d.t, n), 1, "{n} once:\n{:#?}", turns(&d.t));
    }
    assert_eq!(
        turns(&d.t)
            .iter()
            .filter(|p| p.contains("TASK-OUT-4"))
            .count(),
        1,
        "the task's notification once"
    );
    let all = turns(&d.t).join("\n");
    assert!(
        all.contains("<task-notification><task-id>1</task-id><status>completed</status>"),
        "{all}"
    );
    assert!(all.contains("teammate_id=\"bob\""), "{all}");
    // It took no task and replied to nobody; prune leaves it.
    assert_eq!(d.t.task("1")["owner"], "bob");
    assert!(
        !d.inbox("bob").iter().any(|e| e["from"] == "lead"),
        "no reply of the AI lead's turn went to bob: {:?}",
        d.inbox("bob")
    );
    let pruned = d.t.ok(&["prune", "--dry-run"]);
    assert!(!pruned.stdout.contains("lead"), "{}", pruned.explain());
    let pid = d.t.pid_of("lead");
    d.t.ok(&["down"]);
    wait_until(
        "down leaves no AI lead process",
        WAIT,
        || !crate::util::pid_alive(pid),
        || d.explain(),
    );
}

/// A temp bin directory holding the fake CLI as `claude`, and where it
/// records how it was run.
fn fake_claude(t: &TmuxTeam) -> (std::path::PathBuf, std::path::PathBuf) {
    let bin = t.sb.path("fakebin");
    let rec = t.sb.path("fakerec");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&rec).unwrap();
    std::os::unix::fs::symlink(agent("fake-cli"), bin.join("claude")).unwrap();
    (bin, rec)
}

/// The arguments the fake `claude` got on its last run.
fn claude_argv(rec: &std::path::Path) -> Vec<String> {
    std::fs::read(rec.join("claude.argv"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// Issue 23: a message to a teammate that was shut down, whose
/// conversation is recorded, brings it back with that conversation (the
/// same Claude Code session resumes), delivers the message, and says so.
#[test]
fn a_message_to_a_shut_down_teammate_brings_it_back_with_its_conversation() {
    let Some(t) = TmuxTeam::new("revive_by_message", "rv") else {
        return;
    };
    t.ok(&["team", "create", "rv"]);
    let (bin, rec) = fake_claude(&t);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        let mut c = t.cmd(args);
        c.env("PATH", &path).env("FAKE_CLI_DIR", &rec);
        crate::util::Run::of(c, args)
    };
    run(&[
        "spawn",
        "bob",
        "--agent",
        "claude-print",
        "--env",
        "FAKE_CLI_DIR",
    ])
    .assert_code(0);
    run(&["send", "--to", "bob", "FIRST-1"]).assert_code(0);
    let replied = |text: &str| {
        t.ok(&["inbox", "team-lead", "--json"])
            .json()
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["text"].as_str().is_some_and(|s| s.contains(text)))
    };
    wait_until(
        "bob answers the first",
        WAIT,
        || replied("FIRST-1"),
        || t.explain(),
    );
    let first = claude_argv(&rec);
    let at = first
        .iter()
        .position(|a| a == "--session-id")
        .expect("a session started");
    let session = first[at + 1].clone();
    run(&["shutdown", "bob"]).assert_code(0);
    assert!(t.member("bob").is_none(), "bob left");
    let back = run(&["send", "--to", "bob", "SECOND-2"]);
    back.assert_code(0);
    assert!(
        back.stderr
            .contains("bob was stopped; started again with its conversation"),
        "{}",
        back.explain()
    );
    wait_until(
        "bob answers the second",
        WAIT,
        || replied("SECOND-2"),
        || t.explain(),
    );
    let second = claude_argv(&rec);
    let at = second
        .iter()
        .position(|a| a == "--resume")
        .expect("its session resumed");
    assert_eq!(second[at + 1], session, "the same conversation: {second:?}");
    assert!(t.member("bob").is_some(), "bob is back on the roster");
    // Sent once: the message is in no inbox twice.
    let inbox = t.ok(&["inbox", "bob", "--all", "--json"]).json();
    let times = inbox
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["text"] == "SECOND-2")
        .count();
    assert_eq!(times, 1, "{inbox}");
}
