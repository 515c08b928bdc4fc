//! `swarm inbox --follow` on a 10,000-entry inbox (issue 13 item 5): after
//! the first read it parses only what sends append, and still prints every
//! new message exactly once, across a consumption, a Claude Code-style
//! rewrite and a re-stamp in between.

use crate::util::{KillOnDrop, Sandbox, WAIT, wait_until};
use std::io::BufRead;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use swarm::team::Team;

const T: &str = "t";

#[test]
fn inbox_follow_on_a_10k_inbox_prints_each_new_message_once() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let inbox = sb.path(&format!("teams/{T}/inboxes/team-lead.json"));
    let old: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            serde_json::json!({"from": "alice", "text": format!("old {i}"), "timestamp": "t",
                "read": false, "msg_id": format!("old-{i}")})
        })
        .collect();
    std::fs::write(&inbox, serde_json::to_vec_pretty(&old).expect("json")).expect("inbox");
    let mut cmd = sb.cmd(&["inbox", "--team", T, "--follow", "--json"]);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("swarm inbox --follow");
    let out = child.stdout.take().expect("stdout");
    let _follower = KillOnDrop(child);
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            sink.lock().expect("lines").push(l);
        }
    });
    let count = |needle: &str| {
        let quoted = format!("\"{needle}\"");
        lines
            .lock()
            .expect("lines")
            .iter()
            .filter(|l| l.contains(&quoted))
            .count()
    };
    let printed = || lines.lock().expect("lines").len();
    let explain = || format!("{} lines printed", printed());
    wait_until(
        "the 10,000 entries are printed",
        WAIT,
        || printed() == 10_000,
        explain,
    );
    let send = |text: &str| crate::inbox_append::send_in(&sb, T, text);
    send("new 0");
    send("new 1");
    wait_until(
        "the two sends are printed",
        WAIT,
        || count("new 1") == 1,
        explain,
    );
    let team = Team::new(&swarm::paths::Root::new(sb.root()), T);
    let first = team.mailbox().read("team-lead").expect("read").entries[0].key();
    team.mailbox()
        .consume("team-lead", &[first])
        .expect("consume");
    send("new 2");
    wait_until(
        "the send after a consumption",
        WAIT,
        || count("new 2") == 1,
        explain,
    );
    let mut all: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&inbox).expect("inbox")).expect("json");
    all.push(serde_json::json!({"from": "cc", "text": "direct", "timestamp": "t"}));
    let tmp = inbox.with_extension("json.tmp-cc");
    std::fs::write(&tmp, serde_json::to_vec(&all).expect("json")).expect("write");
    std::fs::rename(&tmp, &inbox).expect("rename");
    wait_until("the direct write", WAIT, || count("direct") == 1, explain);
    // A re-stamp (a Claude Code teammate's start stamps swarm's signed mail
    // afresh: the same msg_id, a new timestamp) is the same message.
    team.mailbox()
        .ready_for_start(
            "team-lead",
            None,
            |_| false,
            |e| {
                (e.text == "new 1").then(|| {
                    let mut e = e.clone();
                    e.timestamp = "2099-01-01T00:00:00.000Z".into();
                    e
                })
            },
        )
        .expect("re-stamp");
    send("new 3");
    wait_until("the last send", WAIT, || count("new 3") == 1, explain);
    for t in [
        "new 0", "new 1", "new 2", "new 3", "direct", "old 0", "old 9999",
    ] {
        assert_eq!(count(t), 1, "{t:?} printed once\n{}", explain());
    }
    assert_eq!(printed(), 10_005, "nothing printed twice");
}

/// `swarm inbox` on a 10,000-entry inbox (issue 25 item 3) shows each entry
/// as it is read: the same bytes as the array printed whole (`--json` is
/// exactly the pretty array, each entry's keys in file order), `--unread`
/// and `--mark-read` on the entries shown, and an inbox with one entry the
/// one-pass reader does not take shown by the careful reader, each entry
/// once.
#[test]
fn inbox_shows_a_10k_inbox_once_each_in_file_order() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let inbox = sb.path(&format!("teams/{T}/inboxes/team-lead.json"));
    let entry = |i: usize| {
        let mut e = serde_json::json!({"from": "alice",
            "text": format!("line {i}\n\"quoted\" \\ tab\tünï {{\"type\":\"x\"}}"),
            "summary": format!("s{i}"), "timestamp": "2026-01-01T00:00:00.000Z",
            "msg_id": format!("m-{i}"), "type": "message", "read": i.is_multiple_of(3)});
        if i.is_multiple_of(7) {
            e["custom"] = serde_json::json!({"nested": [1, 2, {"k": null}]});
        }
        // Optional fields on some entries only: one entry's must not show
        // in the next (the reader reuses one entry's buffers).
        if i.is_multiple_of(5) {
            e.as_object_mut().expect("object").shift_remove("summary");
        }
        if i.is_multiple_of(11) {
            e.as_object_mut()
                .expect("object")
                .insert("color".into(), serde_json::json!("blue"));
        }
        e
    };
    let old: Vec<serde_json::Value> = (0..10_000).map(entry).collect();
    std::fs::write(&inbox, serde_json::to_vec_pretty(&old).expect("json")).expect("inbox");
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).expect("json") + "\n";
    // Compared one by one: a failure names the first that differs, not
    // 10,000 of them.
    fn same<T: PartialEq + std::fmt::Debug>(shown: &[T], want: &[T], what: &str) {
        let n = shown.len().max(want.len());
        if let Some(i) = (0..n).find(|&i| shown.get(i) != want.get(i)) {
            panic!(
                "{what}: entry {i} of {} differs (expected {})\nshown: {:?}\nexpected: {:?}",
                shown.len(),
                want.len(),
                shown.get(i),
                want.get(i)
            );
        }
    }
    let array = |v: serde_json::Value| match v {
        serde_json::Value::Array(a) => a,
        other => panic!("not an array: {:.200}", other.to_string()),
    };

    let shown = sb.ok(&["inbox", "--team", T, "--json"]);
    same(&array(shown.json()), &old, "--json");
    assert!(
        shown.stdout == pretty(&shown.json()),
        "--json is the pretty array, byte for byte"
    );
    let text = sb.ok(&["inbox", "--team", T]).stdout;
    assert_eq!(text.matches(" from alice").count(), 10_000);
    assert!(
        text.ends_with("  line 9999\n  \"quoted\" \\ tab\tünï {\"type\":\"x\"}\n"),
        "the text of the last entry, last\n{}",
        &text[text.len() - 300..]
    );

    let unread: Vec<serde_json::Value> =
        old.iter().filter(|e| e["read"] == false).cloned().collect();
    let shown = sb.ok(&["inbox", "--team", T, "--json", "--unread", "--mark-read"]);
    same(&array(shown.json()), &unread, "--unread");
    let left = array(sb.ok(&["inbox", "--team", T, "--json"]).json());
    let read: Vec<serde_json::Value> = old.iter().filter(|e| e["read"] == true).cloned().collect();
    same(
        &left,
        &read,
        "left by --mark-read (only the shown are consumed)",
    );
    let all = array(sb.ok(&["inbox", "--team", T, "--json", "--all"]).json());
    // The history keeps the newest it can hold, before the inbox's entries.
    let cap = swarm::mailbox::HISTORY_MAX_ENTRIES.min(unread.len());
    assert_eq!(
        all.len(),
        read.len() + cap,
        "the consumed are in the history"
    );
    assert_eq!(all[0]["msg_id"], unread[unread.len() - cap]["msg_id"]);
    assert_eq!(all[0]["consumed"], true);

    // One entry the one-pass reader does not take (a summary that is not a
    // string), in the middle: what it showed of the entries before is
    // discarded, not printed beside the careful reader's.
    let mut odd = old.clone();
    odd[5_000]["summary"] = serde_json::json!(5);
    std::fs::write(&inbox, serde_json::to_vec_pretty(&odd).expect("json")).expect("inbox");
    let shown = sb.ok(&["inbox", "--team", T, "--json"]);
    let ids: Vec<String> = array(shown.json())
        .iter()
        .filter_map(|e| e["msg_id"].as_str().map(str::to_owned))
        .collect();
    let kept = ids.iter().any(|id| id == "m-5000");
    let expected: Vec<String> = (0..10_000)
        .filter(|&i| i != 5_000 || kept)
        .map(|i| format!("m-{i}"))
        .collect();
    same(&ids, &expected, "each entry once, in file order");
}
