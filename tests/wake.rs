//! Wake-ups of teammate runtimes (issue 13 items 1 and 2), end to end: real
//! `swarm teammate` processes on a private root, no lead, the lead played by
//! the test. A message wakes its recipient only; a Claude Code-style write
//! (straight into the inbox file, ringing nothing) still reaches a runtime;
//! with no file watcher to be had the team still delivers, and `swarm
//! doctor` and the lead's inbox say who polls and why.

use crate::util::{KillOnDrop, Sandbox, WAIT, wait_until};
use std::process::Stdio;
use swarm::mailbox::Entry;
use swarm::team::Team;

const T: &str = "t";

/// Runtimes of `names`, started with `env`; killed when dropped.
fn start(sb: &Sandbox, names: &[&str], env: &[(&str, &str)]) -> Vec<KillOnDrop> {
    names
        .iter()
        .map(|n| {
            let out = std::fs::File::create(sb.path(&format!("pane-{n}.txt"))).expect("pane file");
            let mut cmd = sb.cmd(&["teammate", "--name", n]);
            cmd.env("SWARM_TEAM", T)
                .env("SWARM_LOG", "swarm=debug")
                .stdout(out)
                .stderr(Stdio::null());
            for (k, v) in env {
                cmd.env(k, v);
            }
            KillOnDrop(cmd.spawn().expect("starting swarm teammate"))
        })
        .collect()
}

fn team(sb: &Sandbox) -> Team {
    Team::new(&swarm::paths::Root::new(sb.root()), T)
}

fn log(sb: &Sandbox, name: &str) -> String {
    std::fs::read_to_string(sb.path(&format!("swarm/{T}/logs/teammate-{name}.log")))
        .unwrap_or_default()
}

fn wakeups(sb: &Sandbox, name: &str) -> usize {
    log(sb, name)
        .lines()
        .filter(|l| l.ends_with(" woken"))
        .count()
}

fn lead_inbox(sb: &Sandbox) -> Vec<Entry> {
    team(sb)
        .mailbox()
        .read("team-lead")
        .map(|r| r.entries)
        .unwrap_or_default()
}

fn replies_from(sb: &Sandbox, from: &str, needle: &str) -> usize {
    lead_inbox(sb)
        .iter()
        .filter(|e| e.from == from && e.protocol().is_none() && e.text.contains(needle))
        .count()
}

fn explain(sb: &Sandbox, names: &[&str]) -> String {
    let mut s = String::new();
    for n in names {
        s += &format!(
            "--- pane {n} ---\n{}\n--- log {n} ---\n{}\n",
            std::fs::read_to_string(sb.path(&format!("pane-{n}.txt"))).unwrap_or_default(),
            log(sb, n)
        );
    }
    s + &format!("--- team-lead inbox ---\n{:#?}\n", lead_inbox(sb))
}

/// Every runtime waiting, and the team watcher elected.
fn settle(sb: &Sandbox, names: &[&str]) {
    wait_until(
        "every runtime waits and one watches the team's files",
        WAIT,
        || {
            names.iter().all(|n| {
                std::fs::read_to_string(sb.path(&format!("pane-{n}.txt")))
                    .is_ok_and(|p| p.contains("waiting for messages"))
            }) && sb
                .path(&format!("swarm/{T}/runtime/.team-watcher.json"))
                .exists()
        },
        || explain(sb, names),
    );
}

/// Appends a plain message to `to`'s inbox as Claude Code does: the file
/// rewritten, no doorbell rung.
fn write_like_claude_code(sb: &Sandbox, to: &str, text: &str) {
    let path = sb.path(&format!("teams/{T}/inboxes/{to}.json"));
    let mut entries: Vec<serde_json::Value> = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    entries.push(serde_json::json!({
        "from": "team-lead", "text": text, "timestamp": "2026-01-01T00:00:00.000Z",
        "read": false, "msg_id": format!("cc-{}", entries.len()), "msgV": 1, "type": "message",
    }));
    let tmp = path.with_extension("json.tmp-cc");
    std::fs::write(&tmp, serde_json::to_vec(&entries).expect("json")).expect("write");
    std::fs::rename(&tmp, &path).expect("rename");
}

#[test]
fn a_message_wakes_its_recipient_only() {
    let sb = Sandbox::new();
    let names = ["alice", "bob", "carol"];
    sb.team_with(T, &names);
    let _rt = start(&sb, &names, &[]);
    settle(&sb, &names);
    let before: Vec<usize> = names.iter().map(|n| wakeups(&sb, n)).collect();
    for i in 0..6 {
        sb.ok(&[
            "send",
            "--team",
            T,
            "--to",
            "alice",
            &format!("echo ping-{i}"),
        ]);
        wait_until(
            &format!("alice answers ping-{i}"),
            WAIT,
            || replies_from(&sb, "alice", &format!("ping-{i}")) == 1,
            || explain(&sb, &names),
        );
    }
    // The count is real: alice's own wake-ups show in it.
    assert!(
        wakeups(&sb, "alice") > before[0],
        "{}",
        explain(&sb, &names)
    );
    for (i, n) in names.iter().enumerate().skip(1) {
        // At most one wake-up left over from the start (the team watcher's
        // hand-over ring); six messages to alice must wake nobody else.
        assert!(
            wakeups(&sb, n) <= before[i] + 1,
            "{n} was woken {} times by alice's mail\n{}",
            wakeups(&sb, n) - before[i],
            explain(&sb, &names)
        );
    }
}

#[test]
fn a_claude_code_style_write_reaches_a_runtime_with_no_lead_running() {
    let sb = Sandbox::new();
    let names = ["alice", "bob"];
    sb.team_with(T, &names);
    let _rt = start(&sb, &names, &[]);
    settle(&sb, &names);
    for n in names {
        write_like_claude_code(&sb, n, &format!("echo direct-to-{n}"));
        wait_until(
            &format!("{n} answers a message no doorbell announced"),
            WAIT,
            || replies_from(&sb, n, &format!("direct-to-{n}")) == 1,
            || explain(&sb, &names),
        );
    }
}

#[test]
fn with_no_file_watcher_to_be_had_the_team_still_delivers_and_says_who_polls() {
    let sb = Sandbox::new();
    let names = ["alice", "bob"];
    sb.team_with(T, &names);
    let _rt = start(&sb, &names, &[("SWARM_FAULT_NO_WATCH", "1")]);
    settle(&sb, &names);
    write_like_claude_code(&sb, "bob", "echo polled-in");
    wait_until(
        "bob answers a direct write, found by the polling team watcher",
        WAIT,
        || replies_from(&sb, "bob", "polled-in") == 1,
        || explain(&sb, &names),
    );
    sb.ok(&["send", "--team", T, "--to", "alice", "echo rung"]);
    wait_until(
        "alice answers a swarm send",
        WAIT,
        || replies_from(&sb, "alice", "rung") == 1,
        || explain(&sb, &names),
    );
    let doctor = sb.ok(&["doctor"]);
    assert!(
        doctor.stdout.contains("the team watcher (")
            && doctor.stdout.contains("polls every second")
            && doctor.stdout.contains("SWARM_FAULT_NO_WATCH"),
        "doctor does not say who polls:\n{}",
        doctor.explain()
    );
    let told: Vec<Entry> = lead_inbox(&sb)
        .into_iter()
        .filter(|e| e.text.contains("polls every second"))
        .collect();
    assert_eq!(
        told.len(),
        1,
        "the lead hears once that the team watcher polls\n{}",
        explain(&sb, &names)
    );
    // The dialog shows the sender beside the text: not again in it.
    assert!(
        !told[0].text.starts_with(&format!("{}:", told[0].from)),
        "{:?}",
        told[0].text
    );
}

#[test]
fn a_polling_note_left_by_a_killed_runtime_is_not_reported() {
    let sb = Sandbox::new();
    let names = ["alice"];
    sb.team_with(T, &names);
    // A directory where alice's doorbell goes: she cannot make it, so she
    // polls, and says so in her note.
    let runtime = sb.path(&format!("swarm/{T}/runtime"));
    std::fs::create_dir_all(runtime.join("alice.wake/in-the-way")).unwrap();
    let note = runtime.join("alice.polling");
    let mut rt = start(&sb, &names, &[]);
    wait_until(
        "alice polls and leaves a note saying why",
        WAIT,
        || note.exists(),
        || explain(&sb, &names),
    );
    let polls = "alice's runtime polls every second";
    let doctor = sb.ok(&["doctor"]);
    assert!(doctor.stdout.contains(polls), "{}", doctor.explain());

    // kill -9: no Drop runs, the note stays behind.
    let child = &mut rt[0].0;
    child.kill().expect("SIGKILL alice's runtime");
    child.wait().expect("reaping alice's runtime");
    assert!(note.exists(), "a killed runtime cannot remove its note");
    let doctor = sb.ok(&["doctor"]);
    assert!(
        !doctor.stdout.contains(polls),
        "doctor still reports a dead runtime as polling:\n{}",
        doctor.explain()
    );
    assert!(!note.exists(), "the stale note is removed by its reader");
}

/// Issue 25, item 1: a claimable task wakes one idle runtime, not the
/// herd; and a task file Claude Code writes in place (no rename, no bell,
/// nothing swarm's board index knows of) is still claimed and run.
#[test]
fn a_task_written_in_place_is_run_by_one_runtime_and_wakes_no_other() {
    let sb = Sandbox::new();
    let names = ["alice", "bob", "carol", "dave"];
    sb.team_with(T, &names);
    let _rt = start(&sb, &names, &[]);
    settle(&sb, &names);
    // Quiet first: the hand-over wake-ups are over.
    let mut before: Vec<usize> = Vec::new();
    wait_until(
        "the runtimes' wake-ups settle",
        WAIT,
        || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            let now: Vec<usize> = names.iter().map(|n| wakeups(&sb, n)).collect();
            std::mem::replace(&mut before, now) == before
        },
        || explain(&sb, &names),
    );
    let path = sb.path(&format!("tasks/{T}/1.json"));
    let body = |owner: &str| {
        format!(
            "{{\n  \"id\": \"1\",\n  \"subject\": \"in place\",\n  \"description\": \"\",\n  \
             \"status\": \"pending\",{owner}\n  \"blocks\": [],\n  \"blockedBy\": [],\n  \
             \"metadata\": {{\n    \"command\": \"echo ran-in-place\"\n  }}\n}}"
        )
    };
    // Owned by someone else: nothing to claim.
    std::fs::write(&path, body("\n  \"owner\": \"erin\",")).expect("write");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // Freed by a write in place, as Claude Code's TaskUpdate does.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .expect("open in place");
    std::io::Write::write_all(&mut f, body("").as_bytes()).expect("write in place");
    drop(f);
    let task = || -> serde_json::Value {
        std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    };
    wait_until(
        "one runtime claims, runs and completes task 1",
        WAIT,
        || task()["status"] == "completed",
        || explain(&sb, &names),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let winner = task()["owner"].as_str().unwrap_or_default().to_owned();
    let others: Vec<(&str, usize)> = names
        .iter()
        .zip(&before)
        .filter(|(n, _)| **n != winner)
        .map(|(n, b)| (*n, wakeups(&sb, n) - b))
        .filter(|(_, woken)| *woken > 0)
        .collect();
    assert!(
        others.is_empty(),
        "{winner} ran task 1, and these were woken for it too: {others:?}\n{}",
        explain(&sb, &names)
    );
}

/// Issue 26, item 4: a runtime on another machine hears no doorbell rung
/// here and must not watch the team's files for others (its events would
/// not show the writes made here). With `SWARM_WAKE=poll` it stays out of
/// the team watcher's election, makes no doorbell, and finds its messages
/// and its tasks by looking every second; doctor says so, with why.
#[test]
fn a_runtime_told_to_poll_finds_its_work_by_looking_and_never_watches_the_team() {
    let sb = Sandbox::new();
    let names = ["far", "near"];
    sb.team_with(T, &names);
    let _far = start(&sb, &["far"], &[("SWARM_WAKE", "poll")]);
    wait_until(
        "far waits, polling",
        WAIT,
        || {
            std::fs::read_to_string(sb.path("pane-far.txt"))
                .is_ok_and(|p| p.contains("waiting for messages"))
                && sb.path(&format!("swarm/{T}/runtime/far.polling")).exists()
        },
        || explain(&sb, &["far"]),
    );
    let _near = start(&sb, &["near"], &[]);
    settle(&sb, &names);
    let watcher: serde_json::Value = serde_json::from_slice(
        &std::fs::read(sb.path(&format!("swarm/{T}/runtime/.team-watcher.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(
        watcher["member"], "near",
        "far never watches the team: {watcher}"
    );
    assert!(
        !sb.path(&format!("swarm/{T}/runtime/far.wake")).exists(),
        "far makes no doorbell"
    );
    sb.ok(&["send", "--team", T, "--to", "far", "echo far-got-it"]);
    write_like_claude_code(&sb, "far", "echo far-direct");
    wait_until(
        "far answers a swarm send and a direct write, both found by looking",
        WAIT,
        || {
            replies_from(&sb, "far", "far-got-it") == 1
                && replies_from(&sb, "far", "far-direct") == 1
        },
        || explain(&sb, &names),
    );
    let doctor = sb.ok(&["doctor"]);
    assert!(
        doctor.stdout.contains("far")
            && doctor.stdout.contains("SWARM_WAKE=poll")
            && doctor.stdout.contains("polls every second"),
        "doctor says who polls and why:\n{}",
        doctor.explain()
    );
}

/// Issue 26, item 4: a runtime on another machine (`SWARM_WAKE=ring`) is
/// rung through its host: it makes a doorbell there, never watches the
/// team, wakes at `swarm ring` (what a sender on the lead's machine runs
/// there over ssh), and looks itself every `SWARM_POLL_MS` for writes
/// nobody rings. Here one runtime looks only every 300 s, so only the ring
/// can wake it in time, and another every 200 ms, so only its own look
/// finds a write nobody rings; doctor and the banner say how each is woken.
#[test]
fn a_runtime_on_another_host_is_woken_by_swarm_ring_and_by_its_own_looks() {
    let sb = Sandbox::new();
    let names = ["rung", "looker"];
    sb.team_with(T, &names);
    let far = |ms: &'static str| {
        [
            ("SWARM_WAKE", "ring"),
            ("SWARM_HOST", "box"),
            ("SWARM_POLL_MS", ms),
        ]
    };
    let _rung = start(&sb, &["rung"], &far("300000"));
    let _looker = start(&sb, &["looker"], &far("200"));
    wait_until(
        "both wait, each with its doorbell",
        WAIT,
        || {
            names.iter().all(|n| {
                std::fs::read_to_string(sb.path(&format!("pane-{n}.txt")))
                    .is_ok_and(|p| p.contains("runs on host box"))
                    && sb.path(&format!("swarm/{T}/runtime/{n}.wake")).exists()
            })
        },
        || explain(&sb, &names),
    );
    assert!(
        !sb.path(&format!("swarm/{T}/runtime/.team-watcher.json"))
            .exists(),
        "no runtime on another host watches the team"
    );
    wait_until(
        "both idle",
        WAIT,
        || {
            names
                .iter()
                .all(|n| log(&sb, n).contains("idle: waiting for a wake-up"))
        },
        || explain(&sb, &names),
    );
    // Written the way Claude Code writes: nothing rings.
    write_like_claude_code(&sb, "rung", "echo rung-got-it");
    write_like_claude_code(&sb, "looker", "echo looker-got-it");
    wait_until(
        "looker finds its message by looking",
        WAIT,
        || replies_from(&sb, "looker", "looker-got-it") == 1,
        || explain(&sb, &names),
    );
    assert_eq!(
        replies_from(&sb, "rung", "rung-got-it"),
        0,
        "rung looks only every 300 s and was not rung: {}",
        explain(&sb, &names)
    );
    sb.ok(&["--team", T, "ring", "rung"]);
    wait_until(
        "rung answers once rung",
        WAIT,
        || replies_from(&sb, "rung", "rung-got-it") == 1,
        || explain(&sb, &names),
    );
    let doctor = sb.ok(&["doctor"]);
    for n in names {
        assert!(
            doctor
                .stdout
                .contains(&format!("{n}'s runtime runs on host box: rung over ssh")),
            "doctor says how {n} is woken:\n{}",
            doctor.explain()
        );
    }
    let bad = sb.run(&["--team", T, "ring", "../x"]);
    bad.assert_code(2);
    let probe = sb.ok(&["ring", "--probe"]);
    assert!(
        probe.stdout.contains("a doorbell was made and rung"),
        "{}",
        probe.explain()
    );
}

/// A task given to a member while blocked is no one's to claim (no offer
/// is made for it), so when its blocker completes the team watcher rings
/// its owner: the owner's runtime would otherwise sleep beside it until
/// its own wait ran out (300 s).
#[test]
fn a_task_of_its_own_that_becomes_unblocked_wakes_its_owner() {
    let sb = Sandbox::new();
    let names = ["alice", "bob"];
    sb.team_with(T, &names);
    let _rt = start(&sb, &names, &[]);
    settle(&sb, &names);
    let done = sb.path("alice-ran.txt");
    let task = |args: &[&str]| {
        let mut a = vec!["--team", T, "task"];
        a.extend_from_slice(args);
        sb.ok(&a)
    };
    task(&["create", "gate"]);
    task(&[
        "create",
        "alice's",
        "--command",
        &format!("echo ran > '{}'", done.display()),
        "--blocked-by",
        "1",
    ]);
    task(&["update", "2", "--owner", "alice"]);
    // Alice read her task_assignment (and was refused the blocked task);
    // both sleep now.
    wait_until(
        "both idle beside the blocked task",
        WAIT,
        || {
            log(&sb, "alice").contains("inbox read unread=1")
                && names.iter().all(|n| {
                    log(&sb, n)
                        .lines()
                        .last()
                        .is_some_and(|l| l.ends_with("idle: waiting for a wake-up"))
                })
        },
        || explain(&sb, &names),
    );
    task(&["update", "1", "--status", "completed"]);
    wait_until(
        "alice runs her task once it is unblocked",
        WAIT,
        || done.exists(),
        || explain(&sb, &names),
    );
}

/// A runtime that approved its shutdown stands down from the team
/// watcher's election: should the role's lock come to it before it exits,
/// it lets it go at once. (In a `down` each exiting runtime took the role
/// from the one before: it made watches, rang every bell, read the board
/// and wrote the watcher's record, all as it exited.) Here the runtime
/// that is not the watcher approves and is held before it exits; the
/// watcher is then killed: the lock comes to the held runtime, which lets
/// it go (the test can take it) and never watches.
#[test]
fn a_runtime_that_approved_its_shutdown_lets_the_team_watch_go() {
    let sb = Sandbox::new();
    let names = ["alice", "bob"];
    sb.team_with(T, &names);
    let gate = sb.path("gate");
    let gate_var = gate.to_str().expect("a utf-8 path").to_owned();
    let mut rts = start(
        &sb,
        &names,
        &[("SWARM_FAULT_SHUTDOWN_GATE", gate_var.as_str())],
    );
    settle(&sb, &names);
    let root = swarm::paths::Root::new(sb.root());
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(root.team_watcher_status(T).unwrap()).expect("the watcher's record"),
    )
    .expect("json");
    let (watcher, other) = match record["member"].as_str() {
        Some("alice") => (0, "bob"),
        Some("bob") => (1, "alice"),
        m => panic!("the record names {m:?}"),
    };
    sb.ok(&[
        "send",
        "--team",
        T,
        "--to",
        other,
        "--shutdown-request",
        "--reason",
        "done",
    ]);
    wait_until(
        &format!("{other} approves its shutdown"),
        WAIT,
        || {
            lead_inbox(&sb).iter().any(|e| {
                e.from == other
                    && matches!(
                        e.protocol(),
                        Some(swarm::protocol::Message::ShutdownApproved(_))
                    )
            })
        },
        || explain(&sb, &names),
    );
    // The watcher goes; the lock is the held runtime's to take.
    let killed = rts.remove(watcher);
    drop(killed);
    let lock = std::fs::File::open(root.team_watcher_lock(T).unwrap()).expect("the lock file");
    wait_until(
        "the team watcher's lock is let go",
        WAIT,
        || lock.try_lock().is_ok(),
        || explain(&sb, &names),
    );
    assert!(
        log(&sb, other).contains("the team watcher's lock came as this runtime exits: let go"),
        "{}",
        explain(&sb, &names)
    );
    assert!(
        !log(&sb, other).contains("watching the team's files"),
        "{other} watched the team as it exited\n{}",
        explain(&sb, &names)
    );
    // Let through, it consumes its request and ends well.
    std::fs::write(&gate, b"").expect("opening the gate");
    let mut status = None;
    wait_until(
        &format!("{other} ends"),
        WAIT,
        || {
            status = rts[0].0.try_wait().expect("its status");
            status.is_some()
        },
        || explain(&sb, &names),
    );
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}");
}
