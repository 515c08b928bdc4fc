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
