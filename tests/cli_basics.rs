//! The command line over the coordination core: teams, messages, tasks,
//! identity, exit codes and errors.

use crate::util::{Run, Sandbox, json_keys};
use serde_json::Value;

#[test]
fn a_team_is_created_listed_and_deleted() {
    let s = Sandbox::new();
    s.ok(&["team", "create", "alpha", "--description", "first"]);
    s.ok(&["team", "create", "beta"]);
    let list = s.ok(&["team", "list", "--json"]).json();
    assert_eq!(list, serde_json::json!(["alpha", "beta"]));
    s.run(&["team", "create", "alpha"])
        .assert_error("already exists");
    let cfg = s.read_json("teams/alpha/config.json");
    assert_eq!(cfg["leadAgentId"], "team-lead@alpha");
    assert_eq!(cfg["description"], "first");
    assert_eq!(cfg["members"][0]["name"], "team-lead");
    s.ok(&["team", "delete", "beta"]);
    assert_eq!(
        s.ok(&["team", "list", "--json"]).json(),
        serde_json::json!(["alpha"])
    );
    assert!(!s.path("teams/beta").exists() && !s.path("tasks/beta").exists());
}

#[test]
fn deleting_a_team_with_an_active_member_needs_force() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    let root = swarm::paths::Root::new(s.root());
    swarm::team::Roster::new(&root, "alpha")
        .set_active("bob", true)
        .unwrap();
    s.run(&["team", "delete", "alpha"])
        .assert_error("active members (bob)");
    assert!(s.path("teams/alpha/config.json").exists());
    s.ok(&["team", "delete", "alpha", "--force"]);
    assert!(!s.path("teams/alpha").exists());
}

#[test]
fn hostile_names_get_one_clear_line_and_create_nothing() {
    let s = Sandbox::new();
    let long = "a".repeat(10 * 1024);
    for bad in [
        "../x",
        "a/b",
        ".",
        "..",
        "a;b",
        "ünïcödé",
        "-x",
        "Team",
        &long,
    ] {
        let r = s.run(&["team", "create", bad]);
        r.assert_error("^[a-z0-9][a-z0-9-]{0,63}$");
        assert!(
            r.stderr.len() < 500,
            "error for a {}-byte name is {} bytes",
            bad.len(),
            r.stderr.len()
        );
    }
    s.run(&["team", "create", "session-abc"])
        .assert_error("Claude Code");
    assert!(s.tree().is_empty(), "nothing created: {:?}", s.tree());

    s.team_with("alpha", &["bob"]);
    let before = s.tree();
    for bad in ["../x", "a/b", "..", "a;b", "ünï", &long] {
        assert_no(
            &s.run(&["send", "--team", "alpha", "--to", bad, "hi"]),
            "not a member",
        );
        s.run(&["send", "--team", "alpha", "--as", bad, "--to", "bob", "hi"])
            .assert_error("--as");
        s.run(&["task", "get", bad, "--team", "alpha"])
            .assert_error("invalid task id");
    }
    // A NUL byte cannot even reach argv; a newline in a name is refused and
    // the error stays on one line.
    s.run(&[
        "send", "--team", "alpha", "--as", "a\nb", "--to", "bob", "hi",
    ])
    .assert_error("--as");
    assert_eq!(s.tree(), before, "hostile input created nothing");
}

#[test]
fn oversized_messages_are_refused_and_nothing_is_written() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    let big = "x".repeat(64 * 1024 + 1);
    s.run(&["send", "--team", "alpha", "--to", "bob", &big])
        .assert_error("limit");
    assert!(
        !s.path("teams/alpha/inboxes/bob.json").exists()
            || s.read_json("teams/alpha/inboxes/bob.json") == serde_json::json!([])
    );
    let exact = "y".repeat(64 * 1024);
    s.ok(&["send", "--team", "alpha", "--to", "bob", &exact]);
}

#[test]
fn a_send_to_a_name_off_the_roster_lists_the_members_unless_forced() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob", "carol"]);
    let r = s.run(&["send", "--team", "alpha", "--to", "bbo", "hi"]);
    assert_no(&r, "members: team-lead, bob, carol");
    assert!(
        !s.path("teams/alpha/inboxes/bbo.json").exists(),
        "no phantom inbox"
    );
    s.ok(&["send", "--team", "alpha", "--to", "bbo", "--force", "hi"]);
    assert_eq!(s.read_json("teams/alpha/inboxes/bbo.json")[0]["text"], "hi");
}

#[test]
fn a_message_carries_the_claude_code_envelope_and_is_consumed_by_identity() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob", "carol"]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "--summary",
        "hello",
        "line one\nline two",
    ]);
    let inbox = s.read_json("teams/alpha/inboxes/team-lead.json");
    let e = &inbox[0];
    let keys = json_keys(e);
    assert_eq!(
        keys,
        [
            "from",
            "text",
            "summary",
            "timestamp",
            "color",
            "msgV",
            "msg_id",
            "type",
            "read"
        ]
    );
    assert_eq!(e["from"], "bob");
    assert_eq!(e["color"], "blue");
    assert_eq!(e["read"], false);
    assert_eq!(e["msgV"], 1);
    assert_eq!(e["msg_id"].as_str().unwrap().len(), 36);

    let shown = s.ok(&["inbox", "--team", "alpha", "--json"]).json();
    assert_eq!(
        shown.as_array().unwrap().len(),
        1,
        "showing does not consume"
    );
    assert_eq!(
        s.read_json("teams/alpha/inboxes/team-lead.json")
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let human = s.ok(&["inbox", "--team", "alpha", "--mark-read"]);
    assert!(
        human
            .stdout
            .contains(" from bob:\n  line one\n  line two\n"),
        "a header line, then each line of the text indented\n{}",
        human.explain()
    );
    assert_eq!(
        s.read_json("teams/alpha/inboxes/team-lead.json"),
        serde_json::json!([])
    );
    let all = s
        .ok(&["inbox", "--team", "alpha", "--all", "--json"])
        .json();
    assert_eq!(all[0]["text"], "line one\nline two");
    assert_eq!(all[0]["consumed"], true, "history keeps consumed messages");
    let keys: Vec<&str> = all[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys.last(), Some(&"consumed"), "after the entry's own keys");
    let human = s.ok(&["inbox", "--team", "alpha", "--all"]);
    assert!(
        human
            .stdout
            .contains(" from bob (read):\n  line one\n  line two\n"),
        "{}",
        human.explain()
    );
}

#[test]
fn broadcast_reaches_everyone_but_the_sender() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob", "carol", "dave"]);
    s.ok(&[
        "send", "--team", "alpha", "--as", "carol", "--to", "*", "standup",
    ]);
    for m in ["team-lead", "bob", "dave"] {
        let inbox = s.read_json(&format!("teams/alpha/inboxes/{m}.json"));
        assert_eq!(inbox[0]["text"], "standup", "{m}");
    }
    assert!(!s.path("teams/alpha/inboxes/carol.json").exists());
}

#[test]
fn identity_and_team_come_from_the_environment() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.team_with("beta", &[]);
    let mut c = s.cmd(&["send", "--to", "team-lead", "hi from env"]);
    c.env("SWARM_TEAM", "alpha").env("SWARM_AGENT_NAME", "bob");
    crate::util::Run::of(c, &["send"]).assert_code(0);
    assert_eq!(
        s.read_json("teams/alpha/inboxes/team-lead.json")[0]["from"],
        "bob"
    );
    // Two teams and no --team: a clear error naming them.
    s.run(&["status"]).assert_error("teams: alpha, beta");
}

#[test]
fn status_reports_members_unread_and_tasks_and_says_no_for_a_missing_team() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.ok(&["send", "--team", "alpha", "--to", "bob", "one"]);
    s.ok(&["send", "--team", "alpha", "--to", "bob", "two"]);
    s.ok(&["task", "create", "--team", "alpha", "a"]);
    s.ok(&["task", "create", "--team", "alpha", "b"]);
    s.ok(&["task", "claim", "--team", "alpha", "--as", "bob"]);
    let st = s.ok(&["status", "--team", "alpha", "--json"]).json();
    let bob = st["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "bob")
        .unwrap();
    assert_eq!(bob["unread"], 3, "two messages and one task_assignment");
    assert_eq!(st["tasks"]["in_progress"], 1);
    assert_eq!(st["tasks"]["pending"], 1);
    assert_eq!(st["tasks"]["total"], 2);
    let human = s.ok(&["status", "--team", "alpha"]);
    assert!(
        human.stdout.contains("tasks: 0/2 completed"),
        "{}",
        human.explain()
    );
    let r = s.run(&["status", "--team", "nope"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("team \"nope\" not found"),
        "{}",
        r.explain()
    );
}

#[test]
fn tasks_are_created_claimed_updated_and_deleted_with_the_right_exit_codes() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob", "carol"]);
    let t = |args: &[&str]| {
        let mut a = vec!["task"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--team", "alpha"]);
        s.run(&a)
    };
    assert_eq!(t(&["create", "build"]).stdout.trim(), "1");
    assert_eq!(
        t(&[
            "create",
            "test",
            "--blocked-by",
            "1",
            "--command",
            "echo hi"
        ])
        .stdout
        .trim(),
        "2"
    );
    let two = t(&["get", "2", "--json"]).json();
    assert_eq!(two["blockedBy"], serde_json::json!(["1"]));
    assert_eq!(two["metadata"]["command"], "echo hi");
    assert_eq!(
        t(&["get", "1", "--json"]).json()["blocks"],
        serde_json::json!(["2"])
    );

    // Task 2 is blocked: claiming it by id says no with the reason.
    let r = t(&["claim", "2", "--as", "bob"]);
    r.assert_code(1);
    assert!(r.stderr.contains("blocked"), "{}", r.explain());
    assert_eq!(t(&["claim", "--as", "bob"]).stdout.trim(), "1");
    let r = t(&["claim", "--as", "carol"]);
    r.assert_code(1);
    assert!(r.stderr.contains("nothing"), "{}", r.explain());
    // The claim told bob about it in his own inbox.
    let inbox = s.read_json("teams/alpha/inboxes/bob.json");
    let frame: Value = serde_json::from_str(inbox[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(frame["type"], "task_assignment");
    assert_eq!(frame["taskId"], "1");

    t(&["update", "1", "--status", "completed", "--as", "bob"]).assert_code(0);
    assert_eq!(
        t(&["claim", "--as", "carol", "--busy-check"]).stdout.trim(),
        "2"
    );
    t(&["create", "docs"]).assert_code(0);
    let r = t(&["claim", "--as", "carol", "--busy-check"]);
    r.assert_code(1);
    assert!(
        r.stderr.contains("busy") || r.stderr.contains("owns"),
        "{}",
        r.explain()
    );

    // Reassigning notifies the new owner, from whoever reassigned.
    t(&["update", "3", "--owner", "bob", "--as", "carol"]).assert_code(0);
    let inbox = s.read_json("teams/alpha/inboxes/bob.json");
    let last = inbox.as_array().unwrap().last().unwrap();
    assert_eq!(last["from"], "carol");
    assert!(last["text"].as_str().unwrap().contains("\"taskId\":\"3\""));
    assert_no(&t(&["update", "3", "--owner", "nobody"]), "not a member");

    t(&["update", "3", "--metadata", r#"{"k":1,"j":2}"#]).assert_code(0);
    t(&["update", "3", "--metadata", r#"{"k":null}"#]).assert_code(0);
    assert_eq!(
        t(&["get", "3", "--json"]).json()["metadata"],
        serde_json::json!({"j": 2})
    );

    t(&["delete", "3"]).assert_code(0);
    t(&["get", "3"]).assert_code(1);
    t(&["delete", "3"]).assert_code(1);
    assert_eq!(
        t(&["create", "again"]).stdout.trim(),
        "4",
        "ids are never reused"
    );
    let list = t(&["list", "--json"]).json();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "4"]);
}

#[test]
fn protocol_messages_are_sent_with_the_reference_fields() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--to",
        "bob",
        "--shutdown-request",
        "--reason",
        "done",
    ]);
    let inbox = s.read_json("teams/alpha/inboxes/bob.json");
    let req: Value = serde_json::from_str(inbox[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(req["type"], "shutdown_request");
    assert_eq!(req["reason"], "done");
    let id = req["requestId"].as_str().unwrap().to_string();
    assert!(id.starts_with("shutdown-") && id.ends_with("@bob"), "{id}");

    s.run(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "--shutdown-request",
    ])
    .assert_error("only team-lead");
    s.run(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "--shutdown-response",
        &id,
        "--reject",
    ])
    .assert_error("--reason");
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "--shutdown-response",
        &id,
        "--reject",
        "--reason",
        "busy",
    ]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "--shutdown-response",
        &id,
        "--approve",
    ]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--to",
        "bob",
        "--plan-response",
        "plan_approval-1@bob@alpha",
        "--approve",
    ]);
    let lead = s.read_json("teams/alpha/inboxes/team-lead.json");
    let rej: Value = serde_json::from_str(lead[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        (rej["type"].as_str(), rej["reason"].as_str()),
        (Some("shutdown_rejected"), Some("busy"))
    );
    let ok: Value = serde_json::from_str(lead[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(ok["type"], "shutdown_approved");
    assert_eq!(ok["requestId"], id.as_str());
    let bob = s.read_json("teams/alpha/inboxes/bob.json");
    let plan: Value = serde_json::from_str(bob[1]["text"].as_str().unwrap()).unwrap();
    assert_eq!(plan["type"], "plan_approval_response");
    assert_eq!(plan["approved"], true);
    // Readable, not raw JSON, for people.
    let human = s.ok(&["inbox", "--team", "alpha"]);
    assert!(!human.stdout.contains("{\"type\""), "{}", human.explain());
}

#[test]
fn help_teaches_the_commands() {
    let s = Sandbox::new();
    let h = s.ok(&["--help"]);
    for word in ["team", "status", "send", "inbox", "task", "Exit codes"] {
        assert!(h.stdout.contains(word), "--help lacks {word}\n{}", h.stdout);
    }
    s.run(&["frobnicate"]).assert_code(2);
}

/// Exit 1 ("ran fine, the answer is no") with one line on stderr holding
/// `needle`.
fn assert_no(r: &Run, needle: &str) {
    r.assert_code(1);
    assert_eq!(
        r.stderr.trim_end().lines().count(),
        1,
        "one line\n{}",
        r.explain()
    );
    assert!(
        r.stderr.starts_with("swarm: ") && r.stderr.contains(needle),
        "{needle:?}\n{}",
        r.explain()
    );
}

#[test]
fn not_found_is_exit_1_with_one_wording_in_every_command() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.ok(&["task", "create", "--team", "alpha", "a"]);
    let root = s.root().display().to_string();
    let no_team = format!("team \"nope\" not found under {root}");
    let no_task = "no task 99 in team alpha";
    let no_member = "\"ghost\" is not a member of team \"alpha\"";
    let cases: &[(&[&str], &str)] = &[
        // A missing team, whatever the command.
        (&["status", "--team", "nope"], &no_team),
        (&["send", "--team", "nope", "--to", "bob", "hi"], &no_team),
        (&["inbox", "--team", "nope"], &no_team),
        (&["task", "list", "--team", "nope"], &no_team),
        (&["task", "get", "1", "--team", "nope"], &no_team),
        (&["task", "create", "x", "--team", "nope"], &no_team),
        (&["output", "bob", "--team", "nope"], &no_team),
        (&["team", "delete", "nope"], &no_team),
        (&["kill", "bob", "--team", "nope"], &no_team),
        (&["shutdown", "bob", "--team", "nope"], &no_team),
        (&["prune", "--team", "nope"], &no_team),
        (&["down", "--team", "nope"], &no_team),
        (&["spawn", "x", "--team", "nope", "--", "true"], &no_team),
        (
            &["ask", "--plan", "p", "--as", "bob", "--team", "nope"],
            &no_team,
        ),
        // A missing task.
        (&["task", "get", "99", "--team", "alpha"], no_task),
        (
            &[
                "task",
                "update",
                "99",
                "--status",
                "completed",
                "--team",
                "alpha",
            ],
            no_task,
        ),
        (&["task", "delete", "99", "--team", "alpha"], no_task),
        (
            &[
                "task",
                "update",
                "1",
                "--add-blocked-by",
                "99",
                "--team",
                "alpha",
            ],
            no_task,
        ),
        // A missing member.
        (
            &["send", "--to", "ghost", "hi", "--team", "alpha"],
            no_member,
        ),
        (
            &[
                "send", "--as", "ghost", "--to", "bob", "hi", "--team", "alpha",
            ],
            no_member,
        ),
        (
            &["task", "update", "1", "--owner", "ghost", "--team", "alpha"],
            no_member,
        ),
        (&["output", "ghost", "--team", "alpha"], no_member),
        (&["kill", "ghost", "--team", "alpha"], no_member),
        (&["shutdown", "ghost", "--team", "alpha"], no_member),
    ];
    for (args, needle) in cases {
        // A socket with no server: nothing here reaches a real tmux.
        let mut c = s.cmd(args);
        c.env("SWARM_TMUX_SOCKET", s.path("no-server.sock"));
        assert_no(&Run::of(c, args), needle);
    }
    // Not a lookup: an id that is no task id at all is an error (exit 2).
    s.run(&["task", "get", "abc", "--team", "alpha"])
        .assert_error("invalid task id");
}

#[test]
fn a_send_as_someone_off_the_roster_is_refused_and_writes_nothing() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    let before = s.tree();
    let r = s.run(&[
        "send", "--team", "alpha", "--as", "ghost", "--to", "bob", "boo",
    ]);
    assert_no(&r, "--as");
    assert_eq!(s.tree(), before, "nothing written");
    // A member, and the lead, still send.
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "hi",
    ]);
    s.ok(&["send", "--team", "alpha", "--to", "bob", "hi"]);
}

#[test]
fn a_dependency_cycle_is_refused_as_the_spec_loader_refuses_it() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    let t = |args: &[&str]| {
        let mut a = vec!["task"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--team", "alpha"]);
        s.run(&a)
    };
    t(&["create", "a"]).assert_code(0);
    t(&["create", "b", "--blocked-by", "1"]).assert_code(0);
    t(&["create", "c", "--blocked-by", "2"]).assert_code(0);
    t(&["update", "1", "--add-blocked-by", "2"])
        .assert_error("task 1 would wait for itself (1 waits for 2 waits for 1)");
    t(&["update", "3", "--add-blocks", "1"]).assert_error("would wait for itself");
    t(&["update", "1", "--add-blocked-by", "3"]).assert_error("would wait for itself");
    // Nothing was written: 1 is still claimable, on both sides unchanged.
    let one = t(&["get", "1", "--json"]).json();
    assert_eq!(one["blockedBy"], serde_json::json!([]));
    assert_eq!(one["blocks"], serde_json::json!(["2"]));
    assert_eq!(t(&["claim", "--as", "team-lead"]).stdout.trim(), "1");
    // A dependency that closes no cycle is still fine.
    t(&["update", "3", "--add-blocked-by", "1"]).assert_code(0);
}

#[test]
fn a_failed_up_leaves_no_team_behind() {
    let s = Sandbox::new();
    let spec = s.path("bad.toml");
    std::fs::write(
        &spec,
        "team = \"bad\"\nbackend = \"in-process\"\n[[teammate]]\nname = \"a\"\n\
         agent = \"command\"\ncommand = [\"/nonexistent/swarm-test-agent\"]\n",
    )
    .unwrap();
    let r = s.run(&["up", spec.to_str().unwrap()]);
    r.assert_error("not installed");
    assert!(!r.stderr.contains("created team"), "{}", r.explain());
    assert!(
        !s.path("teams/bad").exists() && !s.path("tasks/bad").exists(),
        "{:?}",
        s.tree()
    );
    // A TOML error is one line with its place, not a literal "\n".
    std::fs::write(&spec, "team = \"bad\"\nbogus = 1\n").unwrap();
    let r = s.run(&["up", spec.to_str().unwrap()]);
    r.assert_error("at line 2, column 1: unknown field `bogus`");
    assert!(!r.stderr.contains("\\n"), "{}", r.explain());
}

#[test]
fn ask_puts_a_plan_in_the_leads_queue_and_waits_for_the_answer() {
    use std::process::Stdio;
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    // The request the lead's queue shows (the lead's inbox).
    let request = || -> Option<String> {
        let all: Vec<Value> =
            serde_json::from_str(&s.run(&["inbox", "--team", "alpha", "--json"]).stdout).ok()?;
        all.iter().rev().find_map(|e| {
            let f: Value = serde_json::from_str(e["text"].as_str()?).ok()?;
            (f["type"] == "plan_approval_request" && f["planContent"] == "scan the tree")
                .then(|| f["requestId"].as_str().unwrap_or("").to_string())
        })
    };
    for (answer, json, code, said) in [
        ("--approve", false, 0, "approved"),
        ("--reject", false, 1, "the lead rejected the plan: not now"),
        ("--approve", true, 0, r#""approved": true"#),
        (
            "--reject",
            true,
            1,
            r#""reason": "the lead rejected the plan: not now""#,
        ),
    ] {
        let mut ask = vec![
            "ask",
            "--team",
            "alpha",
            "--as",
            "bob",
            "--plan",
            "scan the tree",
        ];
        if json {
            ask.push("--json");
        }
        let child = s
            .cmd(&ask)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut id = None;
        let before: Vec<String> = Vec::new();
        crate::util::wait_until(
            "the plan request reaches the lead",
            std::time::Duration::from_secs(10),
            || {
                id = request().filter(|i| !before.contains(i));
                id.is_some()
            },
            || format!("{:?}", s.tree()),
        );
        let id = id.unwrap();
        let mut args = vec![
            "send",
            "--team",
            "alpha",
            "--to",
            "bob",
            "--plan-response",
            &id,
            answer,
        ];
        if answer == "--reject" {
            args.extend(["--feedback", "not now"]);
        }
        s.ok(&args);
        let out = crate::util::wait_for_exit(
            "swarm ask returns once answered",
            std::time::Duration::from_secs(10),
            child,
            || format!("{:?}", s.tree()),
        );
        let r = Run::from_output(out, &["ask"]);
        r.assert_code(code);
        assert!(
            r.stdout.contains(said) || r.stderr.contains(said),
            "{said:?}\n{}",
            r.explain()
        );
        if json {
            // stdout is the one envelope, naming the request.
            let v: Value = serde_json::from_str(&r.stdout).expect("one JSON object on stdout");
            assert_eq!(
                (v["schema"].as_u64(), v["ok"].as_bool()),
                (Some(1), Some(code == 0))
            );
            if code == 0 {
                assert_eq!(v["asked"]["request_id"], id.as_str(), "{}", r.explain());
            }
        }
        // The answer was consumed from bob's inbox.
        let inbox = s.run(&["inbox", "bob", "--team", "alpha", "--json"]).stdout;
        assert!(!inbox.contains(&id), "{inbox}");
        s.ok(&["inbox", "--team", "alpha", "--mark-read"]);
    }
    // No answer in time: an error, not a yes or a no.
    s.run(&[
        "ask",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--plan",
        "p",
        "--timeout",
        "0",
    ])
    .assert_error("no answer to plan request");
}

#[test]
fn status_shows_the_lead_where_panes_live_dead_hosted_members_and_aligned_columns() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob", "carol"]);
    let root = swarm::paths::Root::new(s.root());
    swarm::team::Roster::new(&root, "alpha")
        .update_member("bob", |m| {
            m.backend_type = Some("in-process".into());
            m.tmux_pane_id = "in-process-1".into();
        })
        .unwrap();
    let status = |json: bool| {
        let mut args = vec!["status", "--team", "alpha"];
        if json {
            args.push("--json");
        }
        // A socket with no server: nothing here reaches a real tmux.
        let mut c = s.cmd(&args);
        c.env("SWARM_TMUX_SOCKET", s.path("no-server.sock"));
        let r = Run::of(c, &args);
        r.assert_code(0);
        r
    };
    let r = status(false);
    assert!(
        r.stdout
            .contains("lead: not running (`swarm up --team alpha` takes the team back)"),
        "{}",
        r.explain()
    );
    let lines: Vec<&str> = r.stdout.lines().collect();
    let header = lines.iter().find(|l| l.starts_with("MEMBER")).unwrap();
    let bob = lines.iter().find(|l| l.starts_with("bob")).unwrap();
    // The lead gone, its in-process teammate cannot be alive.
    assert!(bob.contains("dead"), "{}", r.explain());
    // Columns line up, `in-process` included; UNREAD ends at one edge.
    assert_eq!(
        header.find("BACKEND"),
        bob.rfind("in-process"),
        "{}",
        r.stdout
    );
    let carol = lines.iter().find(|l| l.starts_with("carol")).unwrap();
    // UNREAD is right-aligned under its header, and the next column starts
    // where its header does, in every row.
    let unread_end = header.find("UNREAD").unwrap() + "UNREAD".len() - 1;
    let next = header.find("WORKTREE").unwrap();
    for row in [bob, carol] {
        let cells: Vec<char> = row.chars().collect();
        assert_eq!(cells.get(unread_end), Some(&'0'), "{}", r.stdout);
        assert_eq!(cells.get(next - 1), Some(&' '), "{}", r.stdout);
        assert_ne!(cells.get(next), Some(&' '), "{}", r.stdout);
    }
    let j = status(true).json();
    assert_eq!(j["lead"]["alive"], false, "{j}");
    assert_eq!(j["members"][1]["alive"], false, "{j}");
}

/// Issue 24, item 10: doctor printed tmux "3.3" for 3.3a (the numbers the
/// backend compares, not tmux's own word). A fake tmux on PATH says 3.3a.
#[test]
fn doctor_shows_tmuxs_version_as_tmux_says_it() {
    use std::os::unix::fs::PermissionsExt;
    let s = Sandbox::new();
    let bin = s.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let tmux = bin.join("tmux");
    std::fs::write(&tmux, "#!/bin/sh\necho 'tmux 3.3a'\n").unwrap();
    std::fs::set_permissions(&tmux, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = std::ffi::OsString::from(&bin);
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let mut cmd = s.cmd(&["doctor"]);
    cmd.env("PATH", path);
    let r = Run::of(cmd, &["doctor"]);
    r.assert_code(0);
    assert!(r.stdout.contains("tmux: 3.3a\n"), "{}", r.explain());
}

#[test]
fn doctor_names_where_the_root_came_from_and_a_dead_member_in_words() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    let root = swarm::paths::Root::new(s.root());
    swarm::team::Roster::new(&root, "alpha")
        .update_member("bob", |m| {
            m.set_swarm_field(
                swarm::team::SwarmField::Exit,
                serde_json::json!({"code": 3, "at": 1}),
            );
        })
        .unwrap();
    let sock = s.path("no-server.sock");
    let sock = sock.to_str().unwrap();
    // The sandbox sets SWARM_HOME.
    let r = s.ok(&["doctor", "--tmux-socket", sock]);
    assert!(r.stdout.contains("(from SWARM_HOME)"), "{}", r.explain());
    assert!(
        r.stdout
            .contains("problem: team alpha: bob is dead (exited with code 3)"),
        "{}",
        r.explain()
    );
    assert!(
        !r.stdout.contains("\"code\""),
        "no raw JSON: {}",
        r.explain()
    );
    let home = s.root().to_str().unwrap();
    let r = s.ok(&["doctor", "--home", home, "--tmux-socket", sock]);
    assert!(r.stdout.contains("(from --home)"), "{}", r.explain());
}

/// The binary carries GCC's unwinder itself (`build.rs`): it does not load
/// `libgcc_s.so.1` at start, which cost every `swarm` process about
/// 0.2 ms. Checked where the build can do that: Linux with glibc and a C
/// compiler that names its `libgcc_eh.a` (said, not silent, elsewhere).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_does_not_load_libgcc_s_at_start() {
    use std::process::Command;
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let named = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .ok()
        .filter(|p| p.is_absolute() && p.is_file());
    if named.is_none() {
        eprintln!("not checked: the C compiler names no libgcc_eh.a, so libgcc_s is linked");
        return;
    }
    let bin = env!("CARGO_BIN_EXE_swarm");
    let ldd = Command::new("ldd").arg(bin).output().expect("running ldd");
    let libs = String::from_utf8_lossy(&ldd.stdout);
    assert!(ldd.status.success(), "ldd {bin}: {libs}");
    assert!(libs.contains("libc.so"), "ldd lists the libraries: {libs}");
    assert!(!libs.contains("libgcc_s"), "{bin} loads libgcc_s: {libs}");
}
