//! A send appends to an inbox in place when the file is the one swarm last
//! wrote (issue 25 item 3): the bytes a rewrite would lay out, a foreign
//! rewrite noticed, and readers racing the appends always reading a whole
//! array.

use crate::util::timeouts::Deadline;
use crate::util::{Sandbox, WAIT};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use swarm::team::Team;

const T: &str = "ap";

/// One `swarm send` from alice to the lead of this file's team.
fn send(sb: &Sandbox, text: &str) {
    send_in(sb, T, text);
}

/// One `swarm send` from alice to the lead of `team`.
pub(crate) fn send_in(sb: &Sandbox, team: &str, text: &str) {
    sb.ok(&[
        "send",
        "--team",
        team,
        "--as",
        "alice",
        "--to",
        "team-lead",
        text,
    ]);
}

fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).expect("inbox").ino()
}

fn values(path: &Path) -> Vec<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).expect("inbox")).expect("a JSON array")
}

fn texts(path: &Path) -> Vec<String> {
    values(path)
        .iter()
        .map(|v| v["text"].as_str().expect("text").to_owned())
        .collect()
}

/// The bytes `JSON.stringify(entries, null, 2)` gives: how Claude Code and
/// a swarm rewrite lay an inbox out.
fn rewritten(path: &Path) -> Vec<u8> {
    serde_json::to_vec_pretty(&values(path)).expect("json")
}

#[test]
fn a_send_appends_in_place_the_bytes_a_rewrite_would_lay_out() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let inbox = sb.path(&format!("teams/{T}/inboxes/team-lead.json"));
    send(&sb, "first");
    let ino = inode(&inbox);
    for i in 0..5 {
        send(&sb, &format!("more {i}, with \"quotes\" and\na newline"));
        assert_eq!(
            inode(&inbox),
            ino,
            "send {i} appended in place, not renamed"
        );
        assert_eq!(
            String::from_utf8(std::fs::read(&inbox).expect("inbox")).expect("utf-8"),
            String::from_utf8(rewritten(&inbox)).expect("utf-8"),
            "after send {i}: byte for byte what a rewrite lays out"
        );
    }
    assert_eq!(texts(&inbox).len(), 6);
}

#[test]
fn claude_codes_rename_is_noticed_and_the_next_send_rewrites() {
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let inbox = sb.path(&format!("teams/{T}/inboxes/team-lead.json"));
    send(&sb, "a");
    send(&sb, "b");
    // Claude Code's send (reference §5.2): re-read, push, temp + rename.
    let mut all = values(&inbox);
    all.push(serde_json::json!({"from": "cc", "text": "from claude code",
        "timestamp": "2026-12-01T00:00:00.000Z", "msgV": 1, "msg_id": "cc-1",
        "type": "message", "read": false}));
    let tmp = inbox.with_extension("json.tmp.0badc0de");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&all).expect("json")).expect("temp");
    std::fs::rename(&tmp, &inbox).expect("rename");
    let theirs = inode(&inbox);
    send(&sb, "c");
    assert_ne!(
        inode(&inbox),
        theirs,
        "a file swarm did not write last is rewritten, never appended to"
    );
    assert_eq!(texts(&inbox), ["a", "b", "from claude code", "c"]);
    let ours = inode(&inbox);
    send(&sb, "d");
    assert_eq!(inode(&inbox), ours, "once rewritten, appended to again");
    assert_eq!(texts(&inbox), ["a", "b", "from claude code", "c", "d"]);
}

#[test]
fn readers_racing_appends_always_read_a_whole_array() {
    const SENDS: usize = 60;
    let sb = Sandbox::new();
    sb.team_with(T, &["alice"]);
    let inbox = sb.path(&format!("teams/{T}/inboxes/team-lead.json"));
    send(&sb, "m0");
    let deadline = Deadline::after(WAIT);
    let done = std::sync::atomic::AtomicBool::new(false);
    let team = Team::new(&swarm::paths::Root::new(sb.root()), T);
    let reads = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mb = team.mailbox();
            let mut reads = 0;
            let mut last = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let read = mb.read("team-lead").expect("swarm's read never fails");
                assert_eq!(
                    read.quarantined, None,
                    "a racing read was taken for corrupt"
                );
                let got: Vec<&str> = read.entries.iter().map(|e| e.text.as_str()).collect();
                let want: Vec<String> = (0..got.len()).map(|i| format!("m{i}")).collect();
                assert_eq!(
                    got, want,
                    "read {reads}: a whole prefix of the sends, in order"
                );
                assert!(got.len() >= last, "read {reads}: entries never go back");
                last = got.len();
                reads += 1;
                assert!(
                    !deadline.passed(),
                    "the sends did not end within {deadline}"
                );
            }
            reads
        });
        for i in 1..SENDS {
            send(&sb, &format!("m{i}"));
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        reader.join().expect("reader")
    });
    assert!(reads > 0, "the reader never read");
    assert_eq!(texts(&inbox).len(), SENDS);
    let copies: Vec<_> = std::fs::read_dir(inbox.parent().expect("dir"))
        .expect("inboxes")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert!(copies.is_empty(), "nothing copied aside: {copies:?}");
}
