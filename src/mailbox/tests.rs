//! The mailbox's behaviour, as specs: format, limits, corruption,
//! consumption, history, follow, concurrency and Claude Code fixtures.

use super::*;
use crate::protocol::{IdleNotification, IdleReason, Message};
use proptest::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

/// A private state root with one team, `demo`.
struct Sandbox {
    _dir: tempfile::TempDir,
    root: Root,
    mailbox: Mailbox,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        let mailbox = Mailbox::new(&root, "demo");
        Sandbox {
            _dir: dir,
            root,
            mailbox,
        }
    }

    fn inbox(&self, member: &str) -> PathBuf {
        self.root.inbox("demo", member).unwrap()
    }

    fn bytes(&self, member: &str) -> Vec<u8> {
        std::fs::read(self.inbox(member)).unwrap()
    }

    fn put(&self, member: &str, bytes: &[u8]) {
        let p = self.inbox(member);
        atomic_file::ensure_dir(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    fn texts(&self, member: &str) -> Vec<String> {
        self.mailbox
            .read(member)
            .unwrap()
            .entries
            .into_iter()
            .map(|e| e.text)
            .collect()
    }

    fn send(&self, to: &str, from: &str, text: &str) -> Appended {
        self.mailbox
            .append(to, Entry::new(from, text.to_owned(), None, None))
            .unwrap()
    }

    fn corrupt_copies(&self) -> Vec<PathBuf> {
        let dir = self.root.inboxes_dir("demo").unwrap();
        let mut v: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".corrupt-"))
            .collect();
        v.sort();
        v
    }
}

fn fixture(name: &str) -> Option<Vec<u8>> {
    let path = format!(
        "{}/tests/fixtures/claude-code/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(_) => {
            eprintln!("SKIP fixture test: {path} not found");
            None
        }
    }
}

/// A real protocol frame whose `result` carries `label`.
fn idle_frame(from: &str, label: &str) -> String {
    Message::IdleNotification(IdleNotification {
        from: from.into(),
        timestamp: crate::clock::now_iso(),
        idle_reason: Some(IdleReason::Available),
        summary: None,
        completed_task_id: None,
        completed_status: None,
        failure_reason: None,
        result: Some(label.into()),
    })
    .to_text()
}

/// `sender:n` of a test message, plain or carried in a frame.
fn label(e: &Entry) -> String {
    match e.protocol() {
        Some(Message::IdleNotification(i)) => i.result.unwrap_or_default(),
        _ => e.text.clone(),
    }
}

// ---- format -------------------------------------------------------------

#[test]
fn a_sent_message_is_pretty_json_in_claude_code_key_order_with_private_modes() {
    let s = Sandbox::new();
    let mut e = Entry::new(
        "alice",
        "hello".into(),
        Some("hi".into()),
        Some("blue".into()),
    );
    e.extra.insert("x_custom".into(), Value::from(7));
    let a = s.mailbox.append("bob", e.clone()).unwrap();
    assert_eq!(
        a,
        Appended {
            msg_id: e.msg_id.clone().unwrap(),
            quarantined: None,
            dropped: 0
        }
    );
    let text = String::from_utf8(s.bytes("bob")).unwrap();
    let expected = format!(
        "[\n  {{\n    \"from\": \"alice\",\n    \"text\": \"hello\",\n    \"summary\": \"hi\",\n    \"timestamp\": \"{}\",\n    \"color\": \"blue\",\n    \"msgV\": 1,\n    \"msg_id\": \"{}\",\n    \"type\": \"message\",\n    \"read\": false,\n    \"x_custom\": 7\n  }}\n]",
        e.timestamp, a.msg_id
    );
    assert_eq!(text, expected);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.inbox("bob")), 0o600);
    assert_eq!(mode(s.inbox("bob").parent().unwrap()), 0o700);
    assert_eq!(s.mailbox.read("bob").unwrap().entries, vec![e]);
}

#[test]
fn a_consumed_out_inbox_is_exactly_two_bytes_and_a_missing_one_reads_empty() {
    let s = Sandbox::new();
    assert!(s.mailbox.read("nobody").unwrap().entries.is_empty());
    assert!(
        !s.inbox("nobody").exists(),
        "reading does not create an inbox"
    );
    s.send("bob", "alice", "one");
    let keys: Vec<_> = s
        .mailbox
        .read("bob")
        .unwrap()
        .entries
        .iter()
        .map(Entry::key)
        .collect();
    assert_eq!(s.mailbox.consume("bob", &keys).unwrap(), 1);
    assert_eq!(s.bytes("bob"), b"[]");
}

/// An append that would cross a 4 KiB block (a pwrite could be cut there)
/// copies the file up to its closing `\n]` instead of reading and laying out
/// the entries again: the bytes before it are kept as they are (here laid
/// out otherwise than a rewrite would, which a rewrite would change), the
/// file is renamed in, and its record lets the next send append in place.
#[test]
fn an_append_across_a_block_copies_the_file_and_the_next_send_appends_in_place() {
    use std::os::unix::fs::MetadataExt;
    let s = Sandbox::new();
    let ino = || std::fs::metadata(s.inbox("bob")).unwrap().ino();
    s.send("bob", "alice", "one");
    s.send("bob", "alice", "two");
    let Parsed::Clean(stored) = inbox::parse(&s.bytes("bob")) else {
        panic!("not a clean array");
    };
    let rendered = inbox::render(&stored);
    // The first entry compact, padded to the same length: the same entries,
    // the same last bytes, another layout.
    let first = inbox::render(&stored[..1]);
    let compact = format!(
        "[{}",
        serde_json::to_string(&serde_json::from_slice::<Value>(&first).unwrap()[0]).unwrap()
    );
    let pretty_first = first.len() - 2;
    assert!(compact.len() < pretty_first);
    let mut theirs = compact.into_bytes();
    theirs.resize(pretty_first, b' ');
    theirs.extend_from_slice(&rendered[pretty_first..]);
    assert_eq!(theirs.len(), rendered.len());
    std::fs::write(s.inbox("bob"), &theirs).unwrap();
    let file = std::fs::File::open(s.inbox("bob")).unwrap();
    super::last_write::LastWrite::of(&file, &stored, &rendered)
        .unwrap()
        .save(&s.mailbox.last_write_path("bob").unwrap());
    let before = ino();

    let big = "x".repeat(5_000);
    s.send("bob", "alice", &big);
    let now = s.bytes("bob");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert_eq!(
        text(&now[..theirs.len() - 2]),
        text(&theirs[..theirs.len() - 2]),
        "the bytes before the closing `\\n]` copied as they were, not laid out again"
    );
    assert_ne!(
        ino(),
        before,
        "a copy renamed in, not a pwrite across a block"
    );
    assert_eq!(s.texts("bob"), ["one", "two", big.as_str()]);
    let copied = ino();
    s.send("bob", "alice", "three");
    assert_eq!(
        ino(),
        copied,
        "the copy's record: the next send appends in place"
    );
    assert_eq!(s.texts("bob"), ["one", "two", big.as_str(), "three"]);
    assert!(
        s.bytes("bob").starts_with(&theirs[..theirs.len() - 2]),
        "still the first layout"
    );
}

#[test]
fn a_send_after_a_consumption_appends_in_place_as_a_rewrite_would_lay_out() {
    use std::os::unix::fs::MetadataExt;
    let s = Sandbox::new();
    let ino = || std::fs::metadata(s.inbox("bob")).unwrap().ino();
    let consume_first = |n: usize| {
        let keys: Vec<_> = s.mailbox.read("bob").unwrap().entries[..n]
            .iter()
            .map(Entry::key)
            .collect();
        assert_eq!(s.mailbox.consume("bob", &keys).unwrap(), n);
    };
    let laid_out_as_a_rewrite = |when: &str| {
        let bytes = s.bytes("bob");
        let Parsed::Clean(stored) = inbox::parse(&bytes) else {
            panic!("{when}: not a clean array");
        };
        assert_eq!(
            inbox::render(&stored),
            bytes,
            "{when}: as a rewrite lays out"
        );
    };
    s.send("bob", "alice", "one");
    s.send("bob", "alice", "two");
    // A part consumed: the rest stays, and the next send appends to it.
    consume_first(1);
    let after = ino();
    s.send("bob", "alice", "three");
    assert_eq!(
        ino(),
        after,
        "appended in place after a partial consumption"
    );
    assert_eq!(s.texts("bob"), ["two", "three"]);
    laid_out_as_a_rewrite("after a partial consumption");
    // All consumed (`[]`): the next send writes the array over it in place.
    consume_first(2);
    assert_eq!(s.bytes("bob"), b"[]");
    let after = ino();
    s.send("bob", "alice", "four");
    assert_eq!(ino(), after, "written in place over `[]`");
    assert_eq!(s.texts("bob"), ["four"]);
    laid_out_as_a_rewrite("after a whole consumption");
    s.send("bob", "alice", "five");
    assert_eq!(ino(), after, "and appended to after that");
    assert_eq!(s.texts("bob"), ["four", "five"]);
    // A power cut can tear the first entry written over `[]`: no whole
    // entry is left, the bytes are kept aside, and sends go on.
    let full = s.bytes("bob");
    consume_first(2);
    s.put("bob", &full[..full.len() / 3]);
    let read = s.mailbox.read("bob").unwrap();
    assert!(read.entries.is_empty(), "nothing whole was torn");
    assert!(read.quarantined.is_some(), "the torn bytes are kept aside");
    s.send("bob", "alice", "six");
    assert_eq!(s.texts("bob"), ["six"]);
}

#[test]
fn swarm_never_writes_read_true_and_completes_the_envelope() {
    let s = Sandbox::new();
    let mut e = Entry::new("alice", "x".into(), None, None);
    e.read = Some(true);
    e.msg_id = None;
    e.msg_v = None;
    e.kind = None;
    let a = s.mailbox.append("bob", e).unwrap();
    let got = &s.mailbox.read("bob").unwrap().entries[0];
    assert_eq!(got.read, Some(false));
    assert_eq!(got.msg_id.as_deref(), Some(a.msg_id.as_str()));
    assert_eq!((got.msg_v, got.kind.as_deref()), (Some(1), Some("message")));
}

#[test]
fn unknown_keys_and_foreign_layouts_survive_a_rewrite() {
    let s = Sandbox::new();
    // A 2.1.88 entry (its own key order, read:true) and an entry from a newer
    // writer with keys this version does not know.
    let foreign = "[\n  {\n    \"from\": \"old\",\n    \"text\": \"legacy\",\n    \"timestamp\": \"2025-01-01T00:00:00.000Z\",\n    \"read\": true,\n    \"color\": \"green\"\n  },\n  {\n    \"from\": \"new\",\n    \"text\": \"caf\\u00e9\",\n    \"timestamp\": \"2026-01-01T00:00:00.000Z\",\n    \"msgV\": 2,\n    \"msg_id\": \"m-1\",\n    \"type\": \"message\",\n    \"read\": false,\n    \"priority\": {\n      \"level\": 3\n    }\n  }\n]";
    s.put("bob", foreign.as_bytes());
    let a = s.send("bob", "alice", "new one");
    let after = String::from_utf8(s.bytes("bob")).unwrap();
    assert!(after.starts_with(&foreign[..foreign.len() - 2]), "{after}");
    let got = s.mailbox.read("bob").unwrap().entries;
    assert_eq!(
        got[1].extra.get("priority"),
        Some(&serde_json::json!({"level": 3}))
    );
    assert_eq!(got[1].text, "café");
    // Consuming the new entry gives back the original bytes exactly.
    let new_key = got
        .iter()
        .find(|e| e.msg_id.as_deref() == Some(&a.msg_id))
        .unwrap()
        .key();
    s.mailbox.consume("bob", &[new_key]).unwrap();
    assert_eq!(String::from_utf8(s.bytes("bob")).unwrap(), foreign);
}

// ---- Claude Code fixtures -----------------------------------------------

#[test]
fn the_claude_code_inbox_fixture_reads_correctly_and_survives_a_rewrite_byte_for_byte() {
    let Some(original) = fixture("inbox-file-example.json") else {
        return;
    };
    let s = Sandbox::new();
    s.put("team-lead", &original);
    let read = s.mailbox.read("team-lead").unwrap();
    assert_eq!(read.quarantined, None);
    let e = &read.entries;
    assert_eq!(e.len(), 3);
    assert_eq!(e[1].text, "PONG-14-1796022892.362543");
    assert_eq!(e[1].summary.as_deref(), Some("pong 14"));
    assert_eq!(
        e[1].msg_id.as_deref(),
        Some("f44d0e78-4b94-453b-b3fb-ecd901779838")
    );
    assert!(
        e.iter()
            .all(|e| e.from == "researcher" && e.is_unread() && e.msg_v == Some(1))
    );
    assert!(matches!(
        e[0].protocol(),
        Some(Message::IdleNotification(_))
    ));
    assert_eq!(e[1].protocol(), None);

    // Consuming nothing leaves it alone; a send then consuming that send
    // rewrites the file twice and gives back the very same bytes.
    assert_eq!(
        s.mailbox
            .consume(
                "team-lead",
                &[Entry::new("x", "y".into(), None, None).key()]
            )
            .unwrap(),
        0
    );
    assert_eq!(s.bytes("team-lead"), original);
    let a = s.send("team-lead", "bob", "late");
    let late = s.mailbox.read("team-lead").unwrap().entries.pop().unwrap();
    assert_eq!(late.msg_id.as_deref(), Some(a.msg_id.as_str()));
    s.mailbox.consume("team-lead", &[late.key()]).unwrap();
    assert_eq!(s.bytes("team-lead"), original);
}

#[test]
fn every_claude_code_sample_entry_reads_with_its_fields_and_rewrites_identically() {
    let Some(samples) = fixture("inbox-samples.json") else {
        return;
    };
    let samples: serde_json::Map<String, Value> = serde_json::from_slice(&samples).unwrap();
    let array: Vec<Value> = samples.values().cloned().collect();
    let bytes = crate::json_text::to_pretty(&array);
    let s = Sandbox::new();
    s.put("researcher", &bytes);
    let got = s.mailbox.read("researcher").unwrap().entries;
    assert_eq!(got.len(), samples.len());
    for ((label, want), e) in samples.iter().zip(&got) {
        assert_eq!(e.from, want["from"].as_str().unwrap(), "{label}");
        assert_eq!(e.text, want["text"].as_str().unwrap(), "{label}");
        assert_eq!(e.timestamp, want["timestamp"].as_str().unwrap(), "{label}");
        assert_eq!(
            e.summary.as_deref(),
            want.get("summary").and_then(Value::as_str),
            "{label}"
        );
        assert_eq!(
            e.color.as_deref(),
            want.get("color").and_then(Value::as_str),
            "{label}"
        );
        assert_eq!(
            e.lead_sig.as_deref(),
            want.get("lead_sig").and_then(Value::as_str),
            "{label}"
        );
        assert_eq!(e.msg_id.as_deref(), want["msg_id"].as_str(), "{label}");
        assert_eq!(
            (e.msg_v, e.read, e.kind.as_deref()),
            (Some(1), Some(false), Some("message"))
        );
        assert!(e.extra.is_empty(), "{label}: {:?}", e.extra);
        let is_frame = !label.contains("message");
        assert_eq!(e.protocol().is_some(), is_frame, "{label}");
        // Written again by swarm, each entry is what Claude Code wrote.
        assert_eq!(serde_json::to_value(e).unwrap(), *want, "{label}");
        assert_eq!(
            crate::json_text::to_pretty(e),
            crate::json_text::to_pretty(want),
            "{label}"
        );
    }
    let a = s.send("researcher", "bob", "x");
    let k = s
        .mailbox
        .read("researcher")
        .unwrap()
        .entries
        .pop()
        .unwrap()
        .key();
    assert_eq!(k.msg_id.as_deref(), Some(a.msg_id.as_str()));
    s.mailbox.consume("researcher", &[k]).unwrap();
    assert_eq!(s.bytes("researcher"), bytes);
}

// ---- limits -------------------------------------------------------------

#[test]
fn a_text_over_64_kb_is_refused_and_nothing_is_written() {
    let s = Sandbox::new();
    let err = s
        .mailbox
        .append(
            "bob",
            Entry::new("alice", "x".repeat(MAX_TEXT_BYTES + 1), None, None),
        )
        .unwrap_err();
    assert!(matches!(
        err,
        MailboxError::TextTooLong { bytes: 65537, .. }
    ));
    let msg = err.to_string();
    assert!(msg.contains("65537") && msg.contains("bob.json"), "{msg}");
    assert!(!s.inbox("bob").exists());
    s.send("bob", "alice", &"x".repeat(MAX_TEXT_BYTES));
}

/// An inbox already holding `n` unread entries of about `size` bytes each,
/// written directly (much faster than `n` sends).
fn prefill(s: &Sandbox, member: &str, texts: impl Iterator<Item = (String, bool)>) {
    let stored: Vec<_> = texts
        .map(|(t, read)| {
            let mut e = Entry::new("alice", t, None, None);
            e.read = Some(read);
            Stored::new(e)
        })
        .collect();
    s.put(member, &inbox::render(&stored));
}

#[test]
fn an_oversized_inbox_drops_old_protocol_frames_to_history_never_unread_plain_ones() {
    let s = Sandbox::new();
    let pad = "p".repeat(60_000);
    let frame = |i: usize| {
        Message::ShutdownRejected(crate::protocol::ShutdownRejected {
            request_id: format!("r{i}"),
            from: "alice".into(),
            reason: pad.clone(),
            timestamp: "t".into(),
        })
        .to_text()
    };
    // 3 plain + 69 protocol frames of 60 KB: just over 4 MB with the next send.
    let items = (0..3)
        .map(|i| (format!("plain {i}"), false))
        .chain((0..69).map(|i| (frame(i), false)));
    prefill(&s, "bob", items);
    let before = s.bytes("bob").len();
    assert!(
        before < MAX_FILE_BYTES && before + 60_100 > MAX_FILE_BYTES,
        "{before}"
    );
    let a = s
        .mailbox
        .append("bob", Entry::new("alice", frame(999), None, None))
        .unwrap();
    assert!(a.dropped > 30, "{a:?}");
    let after = s.bytes("bob").len();
    assert!(after <= COMPACT_TARGET_BYTES, "{after}");
    let texts = s.texts("bob");
    assert_eq!(&texts[..3], ["plain 0", "plain 1", "plain 2"]);
    assert_eq!(texts.last().unwrap(), &frame(999));
    assert_eq!(
        texts.len() + a.dropped,
        73,
        "every entry kept or counted as dropped"
    );
    assert_eq!(texts[3], frame(a.dropped), "the oldest frames went first");
    // They went to history, which keeps the newest of them within its 1 MB.
    let history = s.mailbox.history("bob").unwrap();
    assert!(
        history.len() > 10 && history.len() <= a.dropped,
        "{}",
        history.len()
    );
    assert_eq!(history.last().unwrap().text, frame(a.dropped - 1));
}

#[test]
fn an_inbox_of_unread_plain_messages_at_4_mb_is_full_and_stays_untouched() {
    let s = Sandbox::new();
    let pad = "u".repeat(60_000);
    prefill(&s, "bob", (0..69).map(|i| (format!("{i} {pad}"), false)));
    let before = s.bytes("bob");
    assert!(before.len() < MAX_FILE_BYTES);
    let err = s
        .mailbox
        .append("bob", Entry::new("alice", pad.clone(), None, None))
        .unwrap_err();
    assert!(matches!(err, MailboxError::InboxFull { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("inbox full") && msg.contains("bob.json") && msg.contains("70 unread"),
        "{msg}"
    );
    assert_eq!(s.bytes("bob"), before, "nothing written");
    assert!(s.mailbox.history("bob").unwrap().is_empty());
}

#[test]
fn unread_plain_messages_are_never_refused_for_their_count_but_read_ones_are_trimmed() {
    let s = Sandbox::new();
    prefill(&s, "bob", (0..MAX_PLAIN).map(|i| (i.to_string(), false)));
    let a = s.send("bob", "alice", "one more");
    assert_eq!(a.dropped, 0, "no unread message dropped");
    assert_eq!(s.mailbox.read("bob").unwrap().entries.len(), MAX_PLAIN + 1);
    prefill(&s, "bob", (0..MAX_PLAIN).map(|i| (i.to_string(), i < 300)));
    let a = s.send("bob", "alice", "one more");
    // 300 read: one goes for the plain cap, then 99 more for the read cap.
    assert_eq!(a.dropped, 100);
    let got = s.mailbox.read("bob").unwrap().entries;
    assert_eq!(got.iter().filter(|e| !e.is_unread()).count(), MAX_READ);
    assert_eq!(got[0].text, "100");
    assert_eq!(s.mailbox.history("bob").unwrap().len(), 100);
}

// ---- corruption ---------------------------------------------------------

#[test]
fn a_corrupt_inbox_is_copied_aside_reported_and_never_read_as_empty() {
    let s = Sandbox::new();
    let garbage = b"[{\"from\": \"alice\", \"text\": \"lost?\"";
    s.put("bob", garbage);
    let a = s.send("bob", "carol", "after");
    let q = a.quarantined.expect("the corrupt inbox is reported");
    assert_eq!(std::fs::read(&q).unwrap(), garbage, "its bytes are kept");
    assert!(q.to_string_lossy().contains("bob.json.corrupt-"));
    assert_eq!(s.texts("bob"), ["after"]);
    assert_eq!(s.corrupt_copies(), vec![q]);
}

#[test]
fn invalid_entries_are_quarantined_and_the_valid_ones_salvaged() {
    let s = Sandbox::new();
    let file = r#"[{"from":"a","text":"keep me","timestamp":"t"},{"from":"a","text":42,"timestamp":"t"},"junk"]"#;
    s.put("bob", file.as_bytes());
    let r = s.mailbox.read("bob").unwrap();
    assert_eq!(
        r.entries
            .iter()
            .map(|e| e.text.as_str())
            .collect::<Vec<_>>(),
        ["keep me"]
    );
    let q = r.quarantined.expect("reported");
    assert_eq!(std::fs::read(q).unwrap(), file.as_bytes());
    // The inbox is repaired: the next read is clean.
    let again = s.mailbox.read("bob").unwrap();
    assert_eq!((again.entries.len(), again.quarantined), (1, None));
}

#[test]
fn a_non_array_inbox_is_quarantined_not_silently_emptied() {
    let s = Sandbox::new();
    s.put("bob", br#"{"from":"a","text":"b","timestamp":"c"}"#);
    let r = s.mailbox.read("bob").unwrap();
    assert!(r.entries.is_empty());
    assert!(r.quarantined.is_some());
    assert_eq!(s.bytes("bob"), b"[]");
    assert_eq!(s.corrupt_copies().len(), 1);
}

#[test]
fn lone_surrogates_written_by_javascript_are_tolerated_and_kept() {
    let s = Sandbox::new();
    let file = "[\n  {\n    \"from\": \"a\",\n    \"text\": \"half \\ud83d emoji\",\n    \"timestamp\": \"t\"\n  }\n]";
    s.put("bob", file.as_bytes());
    let r = s.mailbox.read("bob").unwrap();
    assert_eq!(r.quarantined, None);
    assert_eq!(r.entries[0].text, "half \u{fffd} emoji");
    let a = s.send("bob", "c", "x");
    assert!(
        String::from_utf8(s.bytes("bob"))
            .unwrap()
            .contains("half \\ud83d emoji"),
        "kept as written"
    );
    let k = s.mailbox.read("bob").unwrap().entries.pop().unwrap();
    assert_eq!(k.msg_id.as_deref(), Some(a.msg_id.as_str()));
}

// ---- locking ------------------------------------------------------------

#[test]
fn a_lock_timeout_is_an_error_never_a_silent_skip() {
    let s = Sandbox::new();
    s.put("bob", b"[]");
    let lock_dir = crate::atomic_file::lock_dir_for(&s.inbox("bob"));
    std::fs::create_dir(&lock_dir).unwrap(); // a live Claude Code holder
    let mb = s
        .mailbox
        .clone()
        .with_lock_timeout(Duration::from_millis(200));
    let err = mb
        .append("bob", Entry::new("a", "x".into(), None, None))
        .unwrap_err();
    assert!(matches!(err, MailboxError::Lock(_)), "{err}");
    assert!(err.to_string().contains("timed out"), "{err}");
    let k = Entry::new("a", "x".into(), None, None).key();
    assert!(matches!(
        mb.consume("bob", &[k]),
        Err(MailboxError::Lock(_))
    ));
    assert_eq!(s.bytes("bob"), b"[]");
}

#[test]
fn a_retried_send_is_not_duplicated_and_a_reused_msg_id_is_refused() {
    let s = Sandbox::new();
    let e = Entry::new("alice", "once".into(), None, None);
    s.mailbox.append("bob", e.clone()).unwrap();
    s.mailbox.append("bob", e.clone()).unwrap();
    assert_eq!(s.texts("bob"), ["once"]);
    let mut other = Entry::new("alice", "different".into(), None, None);
    other.msg_id = e.msg_id.clone();
    let err = s.mailbox.append("bob", other).unwrap_err();
    assert!(matches!(err, MailboxError::DuplicateMsgId { .. }), "{err}");
}

// ---- consumption and history --------------------------------------------

#[test]
fn consume_removes_by_identity_only_and_keeps_later_arrivals() {
    let s = Sandbox::new();
    s.send("bob", "alice", "first");
    s.send("bob", "carol", "second");
    let seen = s.mailbox.read("bob").unwrap().entries;
    s.send("bob", "alice", "late"); // arrives after bob's read
    // The same text re-sent is a different message (new msg_id, timestamp).
    s.send("bob", "alice", "first");
    let n = s.mailbox.consume("bob", &[seen[0].key()]).unwrap();
    assert_eq!(n, 1);
    assert_eq!(s.texts("bob"), ["second", "late", "first"]);
    assert_eq!(
        s.mailbox.consume("bob", &[seen[0].key()]).unwrap(),
        0,
        "already gone"
    );
    let h = s.mailbox.history("bob").unwrap();
    assert_eq!(h, vec![seen[0].clone()]);
}

#[test]
fn read_true_entries_of_claude_code_2_1_88_are_returned_and_consumable() {
    let s = Sandbox::new();
    s.put(
        "bob",
        br#"[{"from":"lead","text":"old","timestamp":"2025-01-01T00:00:00.000Z","read":true},{"from":"lead","text":"new","timestamp":"2025-01-01T00:00:01.000Z","read":false}]"#,
    );
    let all = s.mailbox.read("bob").unwrap().entries;
    assert_eq!(all.len(), 2);
    let unread: Vec<_> = all
        .iter()
        .filter(|e| e.is_unread())
        .map(|e| e.text.as_str())
        .collect();
    assert_eq!(unread, ["new"]);
    assert_eq!(s.mailbox.consume("bob", &[all[0].key()]).unwrap(), 1);
    assert_eq!(s.texts("bob"), ["new"]);
    assert_eq!(s.mailbox.history("bob").unwrap()[0].text, "old");
}

#[test]
fn history_is_a_bounded_record_of_what_was_consumed() {
    let s = Sandbox::new();
    for i in 0..5 {
        s.send("bob", "alice", &format!("m{i}"));
    }
    let e = s.mailbox.read("bob").unwrap().entries;
    s.mailbox.consume("bob", &[e[3].key(), e[1].key()]).unwrap();
    let h: Vec<_> = s
        .mailbox
        .history("bob")
        .unwrap()
        .into_iter()
        .map(|e| e.text)
        .collect();
    assert_eq!(h, ["m1", "m3"], "oldest first, in inbox order");
    assert!(s.mailbox.history("nobody").unwrap().is_empty());
}

/// A reader that looked at the inbox before a consumption took a message
/// out of it, and at the history after the consumption wrote it there,
/// showed that message twice (tests/ai_lead.rs, under load: "SECOND-2"
/// once consumed, once not). Beside that look at the inbox, the history
/// leaves it out.
#[test]
fn a_message_being_consumed_is_in_the_history_besides_the_inbox_once() {
    let s = Sandbox::new();
    s.send("bob", "alice", "m0");
    s.send("bob", "alice", "m1");
    let looked = s.mailbox.read("bob").unwrap().entries;
    s.mailbox.consume("bob", &[looked[0].key()]).unwrap();
    let texts = |v: Vec<Entry>| v.into_iter().map(|e| e.text).collect::<Vec<_>>();
    assert_eq!(texts(s.mailbox.history("bob").unwrap()), ["m0"]);
    assert!(
        texts(s.mailbox.history_besides("bob", &looked).unwrap()).is_empty(),
        "m0 is shown once, from the inbox looked at"
    );
    let now = s.mailbox.read("bob").unwrap().entries;
    assert_eq!(
        texts(s.mailbox.history_besides("bob", &now).unwrap()),
        ["m0"]
    );
}

// ---- follow and watch ---------------------------------------------------

#[test]
fn poll_new_reports_each_entry_exactly_once_even_as_entries_leave() {
    let s = Sandbox::new();
    let mut seen = HashSet::new();
    let mut got = Vec::new();
    s.send("bob", "a", "1");
    s.send("bob", "a", "2");
    s.mailbox
        .poll_new("bob", &mut seen, |e| got.push(e.text.clone()))
        .unwrap();
    s.mailbox
        .poll_new("bob", &mut seen, |e| got.push(e.text.clone()))
        .unwrap();
    let first = s.mailbox.read("bob").unwrap().entries[0].key();
    s.mailbox.consume("bob", &[first]).unwrap();
    s.send("bob", "a", "3");
    assert_eq!(
        s.mailbox
            .poll_new("bob", &mut seen, |e| got.push(e.text.clone()))
            .unwrap(),
        1
    );
    assert_eq!(got, ["1", "2", "3"]);
    assert_eq!(seen.len(), 2, "seen is pruned to what is still in the file");
}

/// A re-stamped entry (same msg_id, a new timestamp: a Claude Code
/// teammate's start) is the message already reported, not a new one.
#[test]
fn poll_new_does_not_report_a_re_stamped_entry_again() {
    let s = Sandbox::new();
    let mut seen = HashSet::new();
    let mut got = Vec::new();
    s.send("bob", "a", "1");
    s.mailbox
        .poll_new("bob", &mut seen, |e| got.push(e.text.clone()))
        .unwrap();
    let restamped = s
        .mailbox
        .ready_for_start(
            "bob",
            None,
            |_| false,
            |e| {
                let mut e = e.clone();
                e.timestamp = "2099-01-01T00:00:00.000Z".into();
                Some(e)
            },
        )
        .unwrap();
    assert_eq!(restamped, 0, "nothing moved to the history");
    assert_eq!(
        s.mailbox.read("bob").unwrap().entries[0].timestamp,
        "2099-01-01T00:00:00.000Z"
    );
    s.send("bob", "a", "2");
    s.mailbox
        .poll_new("bob", &mut seen, |e| got.push(e.text.clone()))
        .unwrap();
    assert_eq!(got, ["1", "2"]);
}

/// Follow sleeps on the inbox watcher between arrivals; its wait also ends
/// after a minute with nothing seen, which must never be how it learns of
/// a message (the watcher counts, on this thread, how each wait ended).
#[test]
fn follow_delivers_messages_as_they_arrive_and_stops_when_asked() {
    let s = Sandbox::new();
    s.send("bob", "a", "before");
    let mb = s.mailbox.clone();
    // The live messages are sent once follow has delivered "before", so
    // the read that found it cannot hold them: follow must wait for them.
    let (first_seen, go) = std::sync::mpsc::channel::<()>();
    let sender = std::thread::spawn(move || {
        if go.recv().is_err() {
            return; // follow failed before its first delivery
        }
        for i in 0..3 {
            mb.append("bob", Entry::new("a", format!("live {i}"), None, None))
                .unwrap();
        }
    });
    let mut got = Vec::new();
    let mut seen = HashSet::new();
    watch::wakes::take();
    s.mailbox
        .follow("bob", &mut seen, |e| {
            got.push(e.text.clone());
            if got.len() == 1 {
                first_seen.send(()).unwrap();
            }
            if got.len() == 4 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    let waits = watch::wakes::take();
    sender.join().unwrap();
    assert_eq!(got, ["before", "live 0", "live 1", "live 2"]);
    assert_eq!(
        waits.timeouts, 0,
        "follow sat out its wait instead of being woken: {waits:?}"
    );
    assert!(
        waits.events + waits.polled >= 1,
        "follow never waited for the live messages: {waits:?}"
    );
}

#[test]
fn a_send_wakes_the_team_watcher_by_its_own_change() {
    let s = Sandbox::new();
    let w = s.mailbox.watch().unwrap();
    assert!(!w.wait(Duration::from_millis(20)));
    watch::wakes::take();
    s.send("bob", "a", "ping");
    // The budget only bounds a failure: the send's change ends the wait.
    let budget = watch::timeouts::scaled(watch::timeouts::WAIT);
    assert!(w.wait(budget), "the send not seen within {budget:?}");
    let waits = watch::wakes::take();
    if w.is_polling() {
        // No file watcher here: the look the wait starts with sees it.
        assert_eq!((waits.polled, waits.naps), (1, 0), "{w:?}: {waits:?}");
    } else {
        assert_eq!(
            (waits.events, waits.timeouts),
            (1, 0),
            "woken by the send's event: {waits:?}"
        );
    }
    assert_eq!(s.mailbox.inboxes().unwrap(), ["bob"]);
}

#[test]
fn append_all_writes_a_batch_in_order_and_refuses_entry_by_entry() {
    let s = Sandbox::new();
    let mut taken = Entry::new("a", "first".into(), None, None);
    taken.msg_id = Some("same-id".into());
    s.mailbox.append("bob", taken.clone()).unwrap();
    let mut clash = Entry::new("a", "another text".into(), None, None);
    clash.msg_id = Some("same-id".into());
    let batch = vec![
        Entry::new("a", "b1".into(), None, None),
        clash,
        taken, // a retried send: already there, a no-op
        Entry::new("a", "b2".into(), None, None),
    ];
    let sent = s.mailbox.append_all("bob", batch).unwrap();
    assert!(
        sent[0].is_ok() && sent[2].is_ok() && sent[3].is_ok(),
        "{sent:?}"
    );
    assert!(
        matches!(sent[1], Err(MailboxError::DuplicateMsgId { .. })),
        "{sent:?}"
    );
    let texts: Vec<String> = s
        .mailbox
        .read("bob")
        .unwrap()
        .entries
        .into_iter()
        .map(|e| e.text)
        .collect();
    assert_eq!(texts, ["first", "b1", "b2"]);
}

#[test]
fn read_since_on_a_10k_inbox_parses_appends_only_and_loses_nothing() {
    use super::{Since, Tail};
    let s = Sandbox::new();
    let old: Vec<serde_json::Value> = (0..10_000)
        .map(|i| {
            serde_json::json!({"from": "a", "text": format!("old {i}"), "timestamp": "t",
                "read": false, "msg_id": format!("old-{i}")})
        })
        .collect();
    s.put("bob", &serde_json::to_vec_pretty(&old).unwrap());
    let texts = |v: &[Entry]| v.iter().map(|e| e.text.clone()).collect::<Vec<_>>();
    let mut tail = Tail::default();
    let whole = |since| match since {
        Since::Whole(r) => r,
        other => panic!("expected a whole read, got {other:?}"),
    };
    assert_eq!(
        whole(s.mailbox.read_since("bob", &mut tail).unwrap())
            .entries
            .len(),
        10_000
    );
    for i in 0..3 {
        s.send("bob", "a", &format!("new {i}"));
    }
    match s.mailbox.read_since("bob", &mut tail).unwrap() {
        Since::Appended(v) => assert_eq!(texts(&v), ["new 0", "new 1", "new 2"]),
        other => panic!("expected the three appended, got {other:?}"),
    }
    assert!(matches!(
        s.mailbox.read_since("bob", &mut tail).unwrap(),
        Since::Same
    ));
    // A consumption is not an append: the whole inbox, without the entry.
    let first = s.mailbox.read("bob").unwrap().entries[0].key();
    s.mailbox.consume("bob", &[first]).unwrap();
    s.send("bob", "a", "after consume");
    let r = whole(s.mailbox.read_since("bob", &mut tail).unwrap());
    assert_eq!(r.entries.len(), 10_003);
    assert_eq!(r.entries[0].text, "old 1");
    assert_eq!(r.entries.last().unwrap().text, "after consume");
    // A rewrite in another layout (as Claude Code writes), then a corrupt file.
    let mut all: Vec<serde_json::Value> = serde_json::from_slice(&s.bytes("bob")).unwrap();
    all.push(serde_json::json!({"from": "cc", "text": "direct", "timestamp": "t"}));
    s.put("bob", &serde_json::to_vec(&all).unwrap());
    let r = whole(s.mailbox.read_since("bob", &mut tail).unwrap());
    assert_eq!(r.entries.last().unwrap().text, "direct");
    let mut torn = s.bytes("bob");
    torn.truncate(torn.len() - 2);
    s.put("bob", &torn);
    let r = whole(s.mailbox.read_since("bob", &mut tail).unwrap());
    assert!(
        r.quarantined.is_some(),
        "a corrupt inbox is copied aside and reported"
    );
}

// ---- concurrency and properties -----------------------------------------

/// Checks that `texts` holds every `(sender, n)` sent exactly once and in
/// each sender's order.
fn assert_each_once_in_order(texts: &[String], senders: usize, per_sender: usize) {
    let mut next: HashMap<String, usize> = HashMap::new();
    for t in texts {
        let (who, n) = t.split_once(':').unwrap();
        let want = next.entry(who.to_owned()).or_default();
        assert_eq!(
            n.parse::<usize>().unwrap(),
            *want,
            "{who} out of order or duplicated"
        );
        *want += 1;
    }
    assert_eq!(next.len(), senders);
    assert!(next.values().all(|&n| n == per_sender), "{next:?}");
}

#[test]
fn eight_threads_appending_fifty_each_lose_and_duplicate_nothing() {
    let s = Arc::new(Sandbox::new());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    s.mailbox
                        .append(
                            "bob",
                            Entry::new(&format!("s{t}"), format!("s{t}:{i}"), None, None),
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let texts = s.texts("bob");
    assert_eq!(texts.len(), 400);
    assert_each_once_in_order(&texts, 8, 50);
    let _: Vec<Value> = serde_json::from_slice(&s.bytes("bob")).unwrap();
}

#[derive(Debug, Clone)]
enum Op {
    Send(usize),
    /// Consume the entries at these positions (modulo the inbox length).
    Consume(Vec<usize>),
    Frame(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..3usize).prop_map(Op::Send),
        1 => (0..3usize).prop_map(Op::Frame),
        2 => proptest::collection::vec(0..20usize, 0..4).prop_map(Op::Consume),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_sends_and_consumes_lose_nothing_duplicate_nothing_and_keep_order(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let s = Sandbox::new();
        let mut sent = [0usize; 3];
        let mut consumed: Vec<String> = Vec::new();
        for op in ops {
            match op {
                Op::Send(who) | Op::Frame(who) => {
                    let tag = format!("s{who}:{}", sent[who]);
                    let text = if matches!(op, Op::Frame(_)) { idle_frame("x", &tag) } else { tag };
                    s.mailbox.append("bob", Entry::new(&format!("s{who}"), text, None, None)).unwrap();
                    sent[who] += 1;
                }
                Op::Consume(picks) => {
                    let now = s.mailbox.read("bob").unwrap().entries;
                    if now.is_empty() { continue; }
                    let keys: Vec<_> = picks.iter().map(|p| now[p % now.len()].key()).collect();
                    let unique: HashSet<_> = keys.iter().cloned().collect();
                    let n = s.mailbox.consume("bob", &keys).unwrap();
                    prop_assert_eq!(n, unique.len());
                    consumed.extend(now.iter().filter(|e| unique.contains(&e.key())).map(label));
                }
            }
            let bytes = s.bytes("bob");
            prop_assert!(serde_json::from_slice::<Vec<Value>>(&bytes).is_ok(), "not valid JSON");
        }
        let left: Vec<String> = s.mailbox.read("bob").unwrap().entries.iter().map(label).collect();
        let history: Vec<String> = s.mailbox.history("bob").unwrap().iter().map(label).collect();
        prop_assert_eq!(&history, &consumed, "history holds exactly what was consumed, in order");
        // Every message sent is in exactly one place, and each place keeps
        // each sender's order.
        let mut all: Vec<String> = left.iter().chain(&consumed).cloned().collect();
        prop_assert_eq!(all.len(), sent.iter().sum::<usize>());
        let order = |v: &[String]| -> bool {
            let mut last: HashMap<&str, usize> = HashMap::new();
            v.iter().all(|t| {
                let (who, n) = t.split_once(':').unwrap();
                let n = n.parse::<usize>().unwrap();
                last.insert(who, n).is_none_or(|prev| prev < n)
            })
        };
        prop_assert!(order(&left), "inbox out of order: {:?}", left);
        all.sort();
        all.dedup();
        prop_assert_eq!(all.len(), sent.iter().sum::<usize>(), "a duplicate");
    }
}

// ---- group commit ----------------------------------------------------------

impl Sandbox {
    fn spool(&self, member: &str) -> Spool {
        Spool::new(self.root.spool("demo", member).unwrap())
    }

    /// Every file left in `member`'s spool.
    fn spool_files(&self, member: &str) -> Vec<String> {
        let dir = self.root.spool("demo", member).unwrap();
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// Temp files left beside the inboxes.
    fn temp_files(&self) -> Vec<String> {
        std::fs::read_dir(self.root.inboxes_dir("demo").unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp."))
            .collect()
    }

    fn wait_for_pending(&self, member: &str, n: usize) {
        let deadline = watch::timeouts::Deadline::after(watch::timeouts::WAIT);
        let mut pause = watch::timeouts::FIRST_PAUSE;
        while self.spool(member).list().unwrap().pending.len() < n {
            assert!(
                !deadline.passed(),
                "never saw {n} pending sends within {deadline}: {:?}",
                self.spool_files(member)
            );
            std::thread::sleep(pause);
            pause = watch::timeouts::next_pause(pause);
        }
    }
}

#[test]
fn every_acknowledged_send_is_already_in_the_file_and_each_lands_once_in_order() {
    let s = Arc::new(Sandbox::new());
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..40 {
                    let e = Entry::new(&format!("s{t}"), format!("s{t}:{i}"), None, None);
                    let id = s.mailbox.append("bob", e).unwrap().msg_id;
                    // No lock: exactly what Claude Code would see now.
                    let bytes = std::fs::read(s.inbox("bob")).unwrap();
                    let v: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
                    assert!(
                        v.iter().any(|e| e["msg_id"] == id.as_str()),
                        "s{t}:{i} acknowledged before it was in the inbox"
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let texts = s.texts("bob");
    assert_eq!(texts.len(), 16 * 40);
    assert_each_once_in_order(&texts, 16, 40);
    assert_eq!(s.spool_files("bob"), Vec::<String>::new(), "spool settled");
    assert_eq!(s.temp_files(), Vec::<String>::new(), "no temp file left");
}

#[test]
fn a_waiter_that_times_out_before_any_merge_sends_nothing_ever() {
    let s = Sandbox::new();
    s.put("bob", b"[]");
    let lock = FileLock::acquire(&s.inbox("bob"), Duration::from_secs(5)).unwrap();
    let mb = s
        .mailbox
        .clone()
        .with_lock_timeout(Duration::from_millis(300));
    let err = mb
        .append("bob", Entry::new("a", "too late".into(), None, None))
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    assert_eq!(s.spool_files("bob"), Vec::<String>::new(), "withdrawn");
    drop(lock);
    s.mailbox
        .append("bob", Entry::new("a", "later".into(), None, None))
        .unwrap();
    assert_eq!(
        s.texts("bob"),
        ["later"],
        "a failed send is never delivered"
    );
}

/// A waiter's answer comes by its deadline, even while a holder that has
/// claimed its entry dawdles (or is stopped): not a failure, which could be
/// false, but "still pending"; and the entry is then delivered, once.
#[test]
fn a_waiter_whose_deadline_passes_while_its_entry_is_merged_answers_still_pending_by_then() {
    let s = Arc::new(Sandbox::new());
    s.put("bob", b"[]");
    let path = s.inbox("bob");
    let lock = FileLock::acquire(&path, Duration::from_secs(5)).unwrap();
    let (answer, answered) = std::sync::mpsc::channel();
    let waiter = {
        let s = s.clone();
        std::thread::spawn(move || {
            let mb = s
                .mailbox
                .clone()
                .with_lock_timeout(Duration::from_millis(400));
            let r = mb.append("bob", Entry::new("w", "merged late".into(), None, None));
            answer.send(r).unwrap();
        })
    };
    s.wait_for_pending("bob", 1);
    // This thread is the holder, and stands still after claiming until the
    // waiter has answered: only the waiter's own deadline can end its wait.
    let answered = std::sync::Mutex::new(answered);
    let got = Arc::new(std::sync::Mutex::new(None));
    let holder = s.mailbox.clone().with_hook({
        let got = got.clone();
        move |stage| {
            if stage == Stage::Claimed {
                let budget = watch::timeouts::scaled(watch::timeouts::WAIT);
                let r = answered
                    .lock()
                    .unwrap()
                    .recv_timeout(budget)
                    .unwrap_or_else(|_| {
                        panic!(
                            "the waiter did not answer within {budget:?} while the \
                             holder stood still with its entry claimed"
                        )
                    });
                *got.lock().unwrap() = Some(r);
            }
        }
    });
    let own = holder.commit("bob", &path, &lock, &[]).unwrap().own;
    assert!(own.is_empty());
    drop(lock);
    waiter.join().unwrap();
    let r = got
        .lock()
        .unwrap()
        .take()
        .expect("the holder claimed the entry");
    match r {
        Err(MailboxError::StillPending { msg_id, .. }) => {
            let read = s.mailbox.read("bob").unwrap();
            assert_eq!(read.entries.len(), 1, "delivered once all the same");
            assert_eq!(read.entries[0].msg_id.as_deref(), Some(&*msg_id));
        }
        other => panic!("expected still pending, got {other:?}"),
    }
    assert_eq!(s.spool_files("bob"), Vec::<String>::new());
}

/// A holder that died leaves claims tagged with its temp file; whether that
/// file is still there says whether its rename happened.
fn dead_holder_claim(s: &Sandbox, text: &str, renamed: bool) -> Entry {
    let mut e = Entry::new("alice", text.into(), None, None);
    e.msg_id = Some(uuid::Uuid::new_v4().to_string());
    e.msg_v = Some(1);
    e.kind = Some("message".into());
    e.read = Some(false);
    let spool = s.spool("bob");
    let key = spool.put(&e).unwrap();
    let tag = format!("{:08x}", rand_tag());
    spool.write_batch(&tag, &[&key]).unwrap();
    std::fs::rename(spool.pending_path(&key), spool.claimed_path(&key)).unwrap();
    if !renamed {
        std::fs::write(atomic_file::temp_path(&s.inbox("bob"), &tag), b"").unwrap();
    }
    e
}

fn rand_tag() -> u32 {
    uuid::Uuid::new_v4().as_u128() as u32
}

#[test]
fn claims_of_a_holder_that_died_before_its_rename_are_delivered_once() {
    let s = Sandbox::new();
    s.put("bob", b"[]");
    dead_holder_claim(&s, "claimed, never written", false);
    s.mailbox
        .append("bob", Entry::new("a", "next".into(), None, None))
        .unwrap();
    assert_eq!(s.texts("bob"), ["claimed, never written", "next"]);
    assert_eq!(s.spool_files("bob"), Vec::<String>::new());
    assert_eq!(s.temp_files(), Vec::<String>::new(), "its temp file went");
}

#[test]
fn claims_of_a_holder_that_died_after_its_rename_are_never_delivered_again() {
    let s = Sandbox::new();
    // The dead holder's rename put the entry in the inbox...
    let e = dead_holder_claim(&s, "already in", true);
    s.put("bob", &inbox::render(&[Stored::new(e.clone())]));
    s.mailbox
        .append("bob", Entry::new("a", "next".into(), None, None))
        .unwrap();
    assert_eq!(s.texts("bob"), ["already in", "next"], "not duplicated");
    // ...and even when a consumer (Claude Code, after the 10 s stale rule)
    // took it out before anyone settled the claim, it does not come back.
    dead_holder_claim(&s, "consumed meanwhile", true);
    s.put("bob", b"[]");
    s.mailbox
        .append("bob", Entry::new("a", "after".into(), None, None))
        .unwrap();
    assert_eq!(
        s.texts("bob"),
        ["after"],
        "a consumed entry is not redelivered"
    );
    assert_eq!(s.spool_files("bob"), Vec::<String>::new());
}

#[test]
fn a_spooled_send_refused_by_the_holder_reports_why_and_is_not_written() {
    let s = Arc::new(Sandbox::new());
    let first = Entry::new("alice", "original".into(), None, None);
    let id = s.mailbox.append("bob", first).unwrap().msg_id;
    let path = s.inbox("bob");
    let lock = FileLock::acquire(&path, Duration::from_secs(5)).unwrap();
    let waiter = {
        let s = s.clone();
        std::thread::spawn(move || {
            let mut reuse = Entry::new("alice", "same id, other text".into(), None, None);
            reuse.msg_id = Some(id);
            s.mailbox.append("bob", reuse)
        })
    };
    s.wait_for_pending("bob", 1);
    s.mailbox.commit("bob", &path, &lock, &[]).unwrap();
    drop(lock);
    let err = waiter.join().unwrap().unwrap_err();
    assert!(matches!(err, MailboxError::DuplicateMsgId { .. }), "{err}");
    assert_eq!(s.texts("bob"), ["original"]);
    assert_eq!(
        s.spool_files("bob"),
        Vec::<String>::new(),
        "refusal collected"
    );
}

// ---- links and open directories inside the root ----

#[test]
fn a_symlinked_inboxes_directory_is_refused_not_written_through() {
    let s = Sandbox::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let inboxes = s.root.inboxes_dir("demo").unwrap();
    std::fs::create_dir_all(inboxes.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &inboxes).unwrap();
    let err = s
        .mailbox
        .append("bob", Entry::new("team-lead", "hi".into(), None, None))
        .unwrap_err();
    assert!(matches!(err, MailboxError::Unsafe(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&inboxes.display().to_string()) && msg.contains("symbolic link"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_dir(elsewhere.path()).unwrap().count(),
        0,
        "an inbox was written where the link points"
    );
    assert!(s.mailbox.read("bob").is_err(), "nor read through it");
}

#[test]
fn a_symlinked_inbox_file_is_refused_not_read_or_replaced() {
    let s = Sandbox::new();
    s.send("bob", "team-lead", "first");
    let secret = s._dir.path().join("secret");
    std::fs::write(&secret, b"not an inbox").unwrap();
    let inbox = s.inbox("bob");
    std::fs::remove_file(&inbox).unwrap();
    std::os::unix::fs::symlink(&secret, &inbox).unwrap();
    for err in [
        s.mailbox
            .append("bob", Entry::new("team-lead", "x".into(), None, None))
            .unwrap_err(),
        s.mailbox.read("bob").unwrap_err(),
    ] {
        assert!(matches!(err, MailboxError::Unsafe(_)), "{err}");
    }
    assert_eq!(std::fs::read(&secret).unwrap(), b"not an inbox");
    assert!(
        std::fs::symlink_metadata(&inbox)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced, hiding the problem"
    );
    assert!(
        s.corrupt_copies().is_empty(),
        "the target was copied into the root"
    );
}

#[test]
fn an_inboxes_directory_others_can_write_is_refused_with_the_fix() {
    let s = Sandbox::new();
    s.send("bob", "team-lead", "first");
    let inboxes = s.root.inboxes_dir("demo").unwrap();
    std::fs::set_permissions(&inboxes, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = s
        .mailbox
        .append("bob", Entry::new("team-lead", "x".into(), None, None))
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("chmod 700 {}", inboxes.display())),
        "{msg}"
    );
    let problems: Vec<PathBuf> = s.root.problems().into_iter().map(|p| p.path).collect();
    assert_eq!(problems, std::slice::from_ref(&inboxes));
    std::fs::set_permissions(&inboxes, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert!(s.root.problems().is_empty());
    s.send("bob", "team-lead", "second");
}

#[test]
fn a_consumer_that_lost_its_lock_reads_again_and_keeps_what_another_writer_appended() {
    let s = Sandbox::new();
    s.send("bob", "team-lead", "old");
    let path = s.inbox("bob");
    let mut lock = FileLock::acquire(&path, Duration::from_secs(1)).unwrap();
    // It read the inbox ("old"), and means to consume all of it. Suspended past the stale rule: a Claude Code writer breaks the lock,
    // appends, and lets go.
    let dir = lock.dir().to_path_buf();
    std::fs::remove_dir(&dir).unwrap();
    std::thread::sleep(Duration::from_millis(20)); // a new directory, a new ctime
    std::fs::create_dir(&dir).unwrap();
    let mut v: Vec<Value> = serde_json::from_slice(&s.bytes("bob")).unwrap();
    v.push(serde_json::json!({"from": "claude", "text": "late", "timestamp": "t"}));
    std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    std::fs::remove_dir(&dir).unwrap();

    assert!(
        s.mailbox
            .write_locked(&path, &[], &mut lock)
            .unwrap()
            .is_lost(),
        "a lost lock was written under"
    );
    assert_eq!(s.texts("bob"), ["old", "late"], "nothing overwritten");
    lock.verify().expect("taken back");
}

/// Issue 25 item 3: an append cut short (a power cut before its
/// `fdatasync`; a `kill -9` cannot tear a write within one page) leaves a
/// torn array. The next swarm reader or sender cuts it back to the last
/// whole entry, which is the file before the append, and the sends after
/// it go on; never an empty inbox with the rest copied aside.
#[test]
fn a_torn_append_is_cut_back_to_its_whole_entries_and_sends_go_on() {
    let s = Sandbox::new();
    s.send("bob", "ann", "a");
    s.send("bob", "ann", "b");
    let before = s.bytes("bob");
    s.send("bob", "ann", "torn");
    let full = s.bytes("bob");
    // Where the appended entry's closing `\n  }` ends: a tear from there
    // on holds it whole.
    let whole_from = full.len() - 2;
    for tear in before.len() - 2..full.len() - 1 {
        let torn = [&before[..before.len() - 2], &full[before.len() - 2..tear]].concat();
        s.put("bob", &torn);
        let read = s.mailbox.read("bob").unwrap();
        let texts: Vec<&str> = read.entries.iter().map(|e| e.text.as_str()).collect();
        let (want, file): (&[&str], &[u8]) = if tear >= whole_from {
            (&["a", "b", "torn"], &full)
        } else {
            (&["a", "b"], &before)
        };
        assert_eq!(texts, want, "torn after {tear} of {} bytes", full.len());
        assert!(read.quarantined.is_some(), "the torn bytes are kept aside");
        assert_eq!(
            s.bytes("bob"),
            file,
            "repaired to its whole entries, laid out"
        );
    }
    s.send("bob", "ann", "c");
    assert_eq!(s.texts("bob"), ["a", "b", "torn", "c"]);
}

/// A send appended in place rings its recipient as soon as readers see the
/// entry: before it is made durable, while the sender still holds the lock,
/// so the recipient starts on it meanwhile. A send that rewrites the inbox
/// rings once it is done. One ring per send either way.
#[test]
fn a_send_rings_its_recipient_once_and_in_place_before_the_entry_is_durable() {
    use std::time::Duration;
    let s = Sandbox::new();
    let bell = doorbell::Doorbell::open(&s.mailbox.doorbell_path("bob").unwrap()).unwrap();
    let bell = Arc::new(bell);
    let rung_at = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mailbox = s.mailbox.clone().with_hook({
        let (bell, rung_at) = (bell.clone(), rung_at.clone());
        move |stage| {
            if bell.wait(Duration::ZERO) {
                rung_at.lock().unwrap().push(stage);
            }
        }
    });
    let send = |text: &str| {
        mailbox
            .append("bob", Entry::new("alice", text.into(), None, None))
            .unwrap()
    };
    // The first send makes the inbox: a rewrite, rung once it is done.
    send("one");
    assert_eq!(*rung_at.lock().unwrap(), Vec::<Stage>::new());
    assert!(bell.wait(Duration::ZERO), "rung once the send is done");
    // The next ones are appended in place: rung before the fdatasync.
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(s.inbox("bob")).unwrap().ino();
    send("two");
    send("three");
    assert_eq!(
        std::fs::metadata(s.inbox("bob")).unwrap().ino(),
        inode,
        "appended in place"
    );
    assert_eq!(
        *rung_at.lock().unwrap(),
        vec![Stage::Appended, Stage::Appended]
    );
    assert!(!bell.wait(Duration::ZERO), "and not rung again after");
    assert_eq!(s.texts("bob"), ["one", "two", "three"]);
}
