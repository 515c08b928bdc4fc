//! Claude Code compatibility: swarm reads the files a real Claude Code team
//! wrote (tests/fixtures/claude-code, captured from 2.1.328), and what swarm
//! writes passes the checks Claude Code's readers apply (reference §2, §3.2,
//! §7.1), with the reference's key order and serialisation.

use crate::util::{Sandbox, json_keys};
use serde_json::Value;
use std::path::Path;

const TEAM: &str = "session-6c171e4f";

fn fixture(rel: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Lays the fixture team out under the sandbox root exactly where Claude
/// Code keeps it.
fn install_fixture_team(s: &Sandbox) {
    let put = |rel: &str, bytes: &[u8]| {
        let p = s.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    put(
        &format!("teams/{TEAM}/config.json"),
        &fixture("config.json"),
    );
    put(
        &format!("teams/{TEAM}/inboxes/team-lead.json"),
        &fixture("inbox-file-example.json"),
    );
    put(&format!("tasks/{TEAM}/1.json"), &fixture("tasks/1.json"));
    put(&format!("tasks/{TEAM}/2.json"), &fixture("tasks/2.json"));
    put(
        &format!("tasks/{TEAM}/.highwatermark"),
        &fixture("tasks/.highwatermark"),
    );
}

/// Claude Code's inbox-entry validation (reference §3.2) plus the 2.1.328
/// envelope swarm promises to write.
fn assert_valid_entry(e: &Value) {
    let o = e.as_object().expect("entry is an object");
    for k in ["from", "text", "timestamp"] {
        assert!(
            o.get(k).is_some_and(Value::is_string),
            "{k} must be a string: {e}"
        );
    }
    for k in ["type", "color", "summary", "from_plugin"] {
        assert!(
            o.get(k).is_none_or(Value::is_string),
            "{k} must be a string if present: {e}"
        );
    }
    assert_eq!(
        o.get("read"),
        Some(&Value::Bool(false)),
        "swarm writes read:false: {e}"
    );
    assert_eq!(o.get("msgV"), Some(&Value::from(1)), "{e}");
    assert_eq!(o.get("type"), Some(&Value::from("message")), "{e}");
    let id = o["msg_id"].as_str().expect("msg_id");
    assert!(
        uuid::Uuid::parse_str(id).is_ok_and(|u| u.get_version_num() == 4),
        "msg_id is a UUID v4: {id}"
    );
    let ts = o["timestamp"].as_str().unwrap();
    assert!(
        swarm::clock::ms_from_iso(ts).is_some() && ts.len() == 24,
        "toISOString shape: {ts}"
    );
    let order = [
        "from",
        "text",
        "summary",
        "timestamp",
        "color",
        "from_plugin",
        "msgV",
        "msg_id",
        "type",
        "read",
        "lead_sig",
    ];
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    let mut positions: Vec<usize> = keys
        .iter()
        .filter_map(|k| order.iter().position(|o| o == k))
        .collect();
    let sorted = {
        let mut p = positions.clone();
        p.sort();
        p
    };
    assert_eq!(positions, sorted, "key order {keys:?}");
    positions.dedup();
}

/// `JSON.stringify(v, null, 2)`: two-space indent, no trailing newline.
fn assert_js_pretty(bytes: &[u8]) {
    assert_ne!(bytes.last(), Some(&b'\n'), "no trailing newline");
    let v: Value = serde_json::from_slice(bytes).unwrap();
    let mut expect = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"  ");
    let mut ser = serde_json::Serializer::with_formatter(&mut expect, fmt);
    serde::Serialize::serialize(&v, &mut ser).unwrap();
    assert_eq!(
        String::from_utf8_lossy(bytes),
        String::from_utf8_lossy(&expect),
        "JSON.stringify(v, null, 2) bytes"
    );
}

#[test]
fn a_claude_code_team_is_read_correctly() {
    let s = Sandbox::new();
    install_fixture_team(&s);
    let st = s.ok(&["status", "--team", TEAM, "--json"]).json();
    let names: Vec<&str> = st["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team-lead", "researcher", "helper2", "helper3"]);
    let researcher = &st["members"][1];
    assert_eq!(
        (researcher["paneId"].as_str(), researcher["color"].as_str()),
        (Some("%1"), Some("blue"))
    );
    assert_eq!(st["members"][0]["unread"], 3);
    assert_eq!(
        (
            st["tasks"]["completed"].as_u64(),
            st["tasks"]["pending"].as_u64()
        ),
        (Some(1), Some(1))
    );

    let inbox = s.ok(&["inbox", "--team", TEAM, "--json"]).json();
    assert_eq!(inbox[1]["text"], "PONG-14-1796022892.362543");
    assert_eq!(inbox[1]["summary"], "pong 14");
    assert_eq!(inbox[1]["msg_id"], "f44d0e78-4b94-453b-b3fb-ecd901779838");
    let human = s.ok(&["inbox", "--team", TEAM]);
    assert!(
        human.stdout.contains("idle"),
        "idle notifications rendered readably\n{}",
        human.explain()
    );

    let one = s.ok(&["task", "get", "1", "--team", TEAM, "--json"]).json();
    assert_eq!(one["owner"], "researcher");
    assert_eq!(one["blocks"], serde_json::json!(["2"]));
    assert_eq!(one["activeForm"], "Working on task 1");
    let two = s.ok(&["task", "get", "2", "--team", TEAM, "--json"]).json();
    assert_eq!(two["blockedBy"], serde_json::json!(["1"]));
    // The team is Claude Code's: swarm reads its board, never writes it.
    let r = s.run(&["task", "create", "--team", TEAM, "next"]);
    r.assert_code(2);
    r.assert_error("swarm will not change its tasks");
}

/// A `.highwatermark` as Claude Code writes it (3: task 3 was created and
/// deleted) is honoured on swarm's own board: the next id is 4.
#[test]
fn claude_codes_highwatermark_is_honoured() {
    let s = Sandbox::new();
    s.ok(&["team", "create", "marks"]);
    std::fs::write(
        s.path("tasks/marks/.highwatermark"),
        fixture("tasks/.highwatermark"),
    )
    .unwrap();
    assert_eq!(
        s.ok(&["task", "create", "--team", "marks", "next"])
            .stdout
            .trim(),
        "4"
    );
}

#[test]
fn every_fixture_entry_kind_is_read_and_survives_a_rewrite() {
    let samples: Value = serde_json::from_slice(&fixture("inbox-samples.json")).unwrap();
    let s = Sandbox::new();
    install_fixture_team(&s);
    let entries: Vec<Value> = samples.as_object().unwrap().values().cloned().collect();
    let path = s.path(&format!("teams/{TEAM}/inboxes/researcher.json"));
    std::fs::write(&path, serde_json::to_vec_pretty(&entries).unwrap()).unwrap();
    let shown = s
        .ok(&["inbox", "researcher", "--team", TEAM, "--json"])
        .json();
    assert_eq!(shown.as_array().unwrap().len(), entries.len());
    assert_eq!(
        shown[0]["lead_sig"], samples["lead_message_signed"]["lead_sig"],
        "unknown-to-2.1.88 fields kept"
    );
    // Appending rewrites the file: every earlier entry survives unchanged.
    s.ok(&["send", "--team", TEAM, "--to", "researcher", "new"]);
    let after: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(&after.as_array().unwrap()[..entries.len()], &entries[..]);
    assert_js_pretty(&std::fs::read(&path).unwrap());
}

#[test]
fn what_swarm_writes_passes_claude_codes_checks() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--to",
        "bob",
        "--summary",
        "s",
        "plain \"quoted\" ünï\ncode",
    ]);
    s.ok(&[
        "send",
        "--team",
        "alpha",
        "--as",
        "bob",
        "--to",
        "team-lead",
        "back",
    ]);
    s.ok(&[
        "task",
        "create",
        "--team",
        "alpha",
        "t",
        "--description",
        "d",
        "--active-form",
        "Doing t",
    ]);
    s.ok(&["task", "claim", "--team", "alpha", "--as", "bob"]);

    for inbox in [
        "teams/alpha/inboxes/bob.json",
        "teams/alpha/inboxes/team-lead.json",
    ] {
        let bytes = std::fs::read(s.path(inbox)).unwrap();
        assert_js_pretty(&bytes);
        for e in serde_json::from_slice::<Value>(&bytes)
            .unwrap()
            .as_array()
            .unwrap()
        {
            assert_valid_entry(e);
        }
    }
    let bob = s.read_json("teams/alpha/inboxes/bob.json");
    assert!(bob[0].get("color").is_none(), "the lead has no colour");
    assert_eq!(
        s.read_json("teams/alpha/inboxes/team-lead.json")[0]["color"],
        "blue"
    );
    // The task_assignment frame: compact JSON, reference field order.
    let frame = bob[1]["text"].as_str().unwrap();
    assert!(frame.starts_with("{\"type\":\"task_assignment\",\"taskId\":\"1\",\"subject\":\"t\",\"description\":\"d\",\"assignedBy\":\"bob\",\"timestamp\":\""), "{frame}");

    let task_bytes = std::fs::read(s.path("tasks/alpha/1.json")).unwrap();
    assert_js_pretty(&task_bytes);
    let task: Value = serde_json::from_slice(&task_bytes).unwrap();
    let keys = json_keys(&task);
    assert_eq!(
        keys,
        [
            "id",
            "subject",
            "description",
            "activeForm",
            "owner",
            "status",
            "blocks",
            "blockedBy"
        ]
    );
    assert_eq!(task["status"], "in_progress");

    let cfg_bytes = std::fs::read(s.path("teams/alpha/config.json")).unwrap();
    assert_js_pretty(&cfg_bytes);
    let cfg: Value = serde_json::from_slice(&cfg_bytes).unwrap();
    assert_eq!(cfg["leadAgentId"], "team-lead@alpha");
    assert!(uuid::Uuid::parse_str(cfg["leadSessionId"].as_str().unwrap()).is_ok());
    for m in cfg["members"].as_array().unwrap() {
        assert!(m["agentId"].is_string() && m["name"].is_string(), "{m}");
        assert_eq!(
            m["agentId"],
            format!("{}@alpha", m["name"].as_str().unwrap())
        );
        assert!(m["subscriptions"].is_array());
    }
}

#[test]
fn files_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let s = Sandbox::new();
    let with_umask_000 = |args: &[&str]| {
        let mut sh = std::process::Command::new("sh");
        sh.args([
            "-c",
            "umask 000 && exec \"$0\" \"$@\"",
            crate::util::swarm_bin(),
        ])
        .args(args)
        .env_clear()
        .env("SWARM_HOME", s.root())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        crate::util::Run::of(sh, args).assert_code(0);
    };
    with_umask_000(&["team", "create", "alpha"]);
    with_umask_000(&["send", "--team", "alpha", "--to", "team-lead", "hi"]);
    with_umask_000(&["task", "create", "--team", "alpha", "t"]);
    with_umask_000(&["inbox", "--team", "alpha", "--mark-read"]);
    let tree = s.tree();
    assert!(tree.len() > 5, "{tree:?}");
    for rel in tree {
        let p = s.path(&rel);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{rel} has mode {mode:o}");
    }
}
