//! Corrupted files are quarantined and reported, never read as empty, and
//! work continues without reusing an id.

use crate::util::Sandbox;

fn corrupt_copies(s: &Sandbox, prefix: &str) -> Vec<String> {
    s.tree()
        .into_iter()
        .filter(|p| p.starts_with(prefix) && p.contains(".corrupt-"))
        .collect()
}

#[test]
fn a_corrupt_inbox_is_copied_aside_reported_and_a_fresh_one_continues() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    let inbox = s.path("teams/alpha/inboxes/bob.json");
    std::fs::write(&inbox, b"[{\"from\": \"team-lead\", \"text\": \"half").unwrap();

    let r = s.ok(&["inbox", "bob", "--team", "alpha"]);
    assert!(
        r.stderr.contains("corrupt") || r.stderr.contains("unreadable"),
        "{}",
        r.explain()
    );
    let copies = corrupt_copies(&s, "teams/alpha/inboxes/bob.json");
    assert_eq!(copies.len(), 1, "{:?}", s.tree());
    assert_eq!(
        std::fs::read(s.path(&copies[0])).unwrap(),
        b"[{\"from\": \"team-lead\", \"text\": \"half"
    );

    let r = s.ok(&["send", "--team", "alpha", "--to", "bob", "after"]);
    assert!(
        !r.stderr.contains("corrupt"),
        "reported once, not on every send\n{}",
        r.explain()
    );
    let v = s.read_json("teams/alpha/inboxes/bob.json");
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["text"], "after");
}

#[test]
fn a_send_into_a_corrupt_inbox_reports_the_copy() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    std::fs::write(s.path("teams/alpha/inboxes/bob.json"), b"not json at all").unwrap();
    let r = s.ok(&["send", "--team", "alpha", "--to", "bob", "hello"]);
    assert!(r.stderr.contains(".corrupt-"), "{}", r.explain());
    assert_eq!(
        s.read_json("teams/alpha/inboxes/bob.json")[0]["text"],
        "hello"
    );
    assert_eq!(corrupt_copies(&s, "teams/alpha/inboxes").len(), 1);
}

#[test]
fn a_corrupt_task_file_is_quarantined_and_its_id_never_reused() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    for subject in ["one", "two", "three"] {
        s.ok(&["task", "create", "--team", "alpha", subject]);
    }
    std::fs::write(s.path("tasks/alpha/3.json"), b"{\"id\": \"3\", \"subj").unwrap();
    let r = s.ok(&["task", "list", "--team", "alpha", "--json"]);
    assert!(r.stderr.contains(".corrupt-"), "{}", r.explain());
    let ids: Vec<String> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["1", "2"]);
    assert_eq!(
        corrupt_copies(&s, "tasks/alpha/3.json").len(),
        1,
        "{:?}",
        s.tree()
    );
    assert_eq!(
        s.ok(&["task", "create", "--team", "alpha", "four"])
            .stdout
            .trim(),
        "4"
    );
}

#[test]
fn a_garbage_or_missing_highwatermark_is_rebuilt_from_the_task_files() {
    let s = Sandbox::new();
    s.team_with("alpha", &[]);
    for subject in ["one", "two"] {
        s.ok(&["task", "create", "--team", "alpha", subject]);
    }
    std::fs::write(s.path("tasks/alpha/.highwatermark"), b"\x00garbage").unwrap();
    assert_eq!(
        s.ok(&["task", "create", "--team", "alpha", "three"])
            .stdout
            .trim(),
        "3"
    );
    std::fs::remove_file(s.path("tasks/alpha/.highwatermark")).ok();
    assert_eq!(
        s.ok(&["task", "create", "--team", "alpha", "four"])
            .stdout
            .trim(),
        "4"
    );
    s.ok(&["task", "delete", "--team", "alpha", "4"]);
    assert_eq!(
        s.ok(&["task", "create", "--team", "alpha", "five"])
            .stdout
            .trim(),
        "5"
    );
}

#[test]
fn a_corrupt_roster_is_quarantined_and_rebuilt_from_the_inboxes() {
    let s = Sandbox::new();
    s.team_with("alpha", &["bob"]);
    s.ok(&["send", "--team", "alpha", "--to", "bob", "hi"]);
    std::fs::write(
        s.path("teams/alpha/config.json"),
        b"{\"name\": \"alpha\", \"mem",
    )
    .unwrap();
    let r = s.ok(&["status", "--team", "alpha", "--json"]);
    assert!(r.stderr.contains(".corrupt-"), "{}", r.explain());
    let names: Vec<String> = r.json()["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["team-lead", "bob"]);
    assert_eq!(corrupt_copies(&s, "teams/alpha/config.json").len(), 1);
    // Work continues: bob still gets mail, and his inbox kept its message.
    s.ok(&["send", "--team", "alpha", "--to", "bob", "still here"]);
    assert_eq!(
        s.read_json("teams/alpha/inboxes/bob.json")
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
