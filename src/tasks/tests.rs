//! The task store's behaviour, as specs: file format and ids, dependencies,
//! claims (including races between threads and between processes), corrupt
//! files, locks, the Claude Code fixtures, and property tests over random
//! operation sequences.

use super::*;
use crate::paths::Root;
use proptest::prelude::*;
use serde_json::json;
use std::collections::{BTreeSet, HashMap};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TEAM: &str = "demo";

/// A private state root with one team's task store.
struct Sandbox {
    _tmp: tempfile::TempDir,
    root: Root,
    store: TaskStore,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().expect("temp dir");
        let root = Root::new(tmp.path());
        let store = TaskStore::new(&root, TEAM);
        Sandbox {
            _tmp: tmp,
            root,
            store,
        }
    }

    fn dir(&self) -> PathBuf {
        self.root.tasks_dir(TEAM).unwrap()
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    fn create(&self, subject: &str) -> Task {
        self.create_blocked(subject, &[])
    }

    fn create_blocked(&self, subject: &str, by: &[&str]) -> Task {
        let new = NewTask {
            subject: subject.into(),
            description: format!("about {subject}"),
            blocked_by: by.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        self.store
            .create(new)
            .unwrap_or_else(|e| panic!("creating {subject:?}: {e}"))
    }

    fn task(&self, id: &str) -> Task {
        match self.store.get(id) {
            Ok(Some(t)) => t,
            other => panic!("task {id} should be readable, got {other:?}"),
        }
    }

    fn ids(&self) -> Vec<String> {
        self.store
            .list()
            .unwrap()
            .tasks
            .into_iter()
            .map(|t| t.id)
            .collect()
    }

    fn mark(&self) -> Option<String> {
        fs::read_to_string(self.file(".highwatermark")).ok()
    }

    fn update(&self, id: &str, upd: TaskUpdate) -> Updated {
        self.store
            .update(id, upd, "lead")
            .unwrap_or_else(|e| panic!("updating {id}: {e}"))
    }

    fn claim(&self, id: Option<&str>, who: &str, busy: bool) -> Claim {
        self.store
            .claim(id, who, busy)
            .unwrap_or_else(|e| panic!("{who} claiming {id:?}: {e}"))
    }

    fn claimed(&self, id: Option<&str>, who: &str) -> Task {
        match self.claim(id, who, false) {
            Claim::Claimed(t) => t,
            Claim::Refused(r) => panic!("{who} should have claimed {id:?}, refused: {r}"),
        }
    }
}

fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_new_task_is_written_exactly_as_claude_code_writes_it() {
    let s = Sandbox::new();
    let t = s.store.create(NewTask {
        subject: "Task 1".into(),
        description: "d".into(),
        active_form: Some("Working on task 1".into()),
        ..Default::default()
    });
    assert_eq!(t.unwrap().id, "1");
    let text = fs::read_to_string(s.file("1.json")).unwrap();
    assert_eq!(
        text,
        "{\n  \"id\": \"1\",\n  \"subject\": \"Task 1\",\n  \"description\": \"d\",\n  \
         \"activeForm\": \"Working on task 1\",\n  \"status\": \"pending\",\n  \"blocks\": [],\n  \
         \"blockedBy\": []\n}"
    );
    assert_eq!(mode(&s.file("1.json")), 0o600);
    assert_eq!(mode(&s.dir()), 0o700);
    assert!(s.file(".lock").exists(), "the list lock file is created");
    assert!(!s.file(".lock.lock").exists(), "the list lock is released");
    assert_eq!(
        s.mark(),
        None,
        "creating writes no .highwatermark, like Claude Code"
    );
}

#[test]
fn ids_increase_and_are_never_reused_even_after_deletes() {
    let s = Sandbox::new();
    for n in 1..=3 {
        assert_eq!(s.create("t").id, n.to_string());
    }
    assert!(s.store.delete("3").unwrap());
    assert_eq!(
        s.mark().as_deref(),
        Some("3"),
        "raised before the unlink, bare decimal"
    );
    assert_eq!(s.create("t").id, "4");
    assert!(s.store.delete("4").unwrap());
    assert!(s.store.delete("2").unwrap());
    assert_eq!(s.mark().as_deref(), Some("4"), "never lowered");
    assert_eq!(s.create("t").id, "5");
    assert!(
        !s.store.delete("2").unwrap(),
        "deleting a missing task reports false"
    );
    assert_eq!(s.ids(), ["1", "5"]);
}

#[test]
fn a_missing_high_water_mark_is_rebuilt_from_the_highest_file() {
    let s = Sandbox::new();
    s.create("a");
    s.create("b");
    fs::write(
        s.file("9.json"),
        s.task("1").to_file_bytes().replace_id("9"),
    )
    .unwrap();
    assert_eq!(s.create("c").id, "10");
}

#[test]
fn a_garbage_high_water_mark_is_quarantined_reported_and_rebuilt() {
    let s = Sandbox::new();
    s.create("a");
    s.create("b");
    fs::write(s.file(".highwatermark"), "not a number").unwrap();
    let listed = s.store.list().unwrap();
    assert_eq!(listed.tasks.len(), 2);
    assert_eq!(listed.quarantined.len(), 1, "{listed:?}");
    assert!(
        listed.quarantined[0]
            .to_string_lossy()
            .contains(".highwatermark.corrupt-")
    );
    assert_eq!(
        fs::read_to_string(&listed.quarantined[0]).unwrap(),
        "not a number"
    );
    assert_eq!(s.mark().as_deref(), Some("2"));
    assert_eq!(s.create("c").id, "3");
}

/// Issue 24, item 9: create 1, 2, 3; delete 3; garbage in the mark; the
/// next id is 4, never 3 again (the files alone would say 2 is the highest).
#[test]
fn a_deleted_id_never_comes_back_through_a_garbage_high_water_mark() {
    let s = Sandbox::new();
    for n in 1..=3 {
        assert_eq!(s.create("t").id, n.to_string());
    }
    assert!(s.store.delete("3").unwrap());
    fs::write(s.file(".highwatermark"), "x7").unwrap();
    assert_eq!(s.create("after").id, "4", "id 3 was issued once already");
    assert_eq!(
        s.mark().as_deref(),
        Some("3"),
        "the mark is rebuilt from the files and swarm's record, so Claude Code does not reuse 3 either"
    );
    fs::remove_file(s.file(".highwatermark")).unwrap();
    assert!(s.store.delete("4").unwrap());
    fs::write(s.file(".highwatermark"), "garbage").unwrap();
    assert_eq!(s.create("again").id, "5");
}

#[test]
fn an_invalid_id_is_a_clear_error_and_never_a_path() {
    let s = Sandbox::new();
    s.create("a");
    for bad in ["../1", "0", "01", "", "1.json", "abc", "-3"] {
        let err = s.store.get(bad).unwrap_err().to_string();
        assert!(err.contains(&format!("invalid task id {bad:?}")), "{err}");
        assert!(err.contains(TEAM), "{err}");
        assert!(s.store.delete(bad).is_err());
        assert!(s.store.claim(Some(bad), "x", false).is_err());
        assert!(s.store.update(bad, TaskUpdate::default(), "x").is_err());
    }
    let blocked = NewTask {
        blocked_by: ids(&["../../etc"]),
        ..Default::default()
    };
    assert!(
        s.store
            .create(blocked)
            .unwrap_err()
            .to_string()
            .contains("invalid task id")
    );
}

#[test]
fn listing_is_in_numeric_order_and_skips_everything_that_is_not_a_task() {
    let s = Sandbox::new();
    for _ in 0..11 {
        s.create("t");
    }
    for junk in [
        "3.json.tmp.0a1b2c3d",
        "4.json.corrupt-17",
        ".hidden.json",
        "x.json",
        "notes",
    ] {
        fs::write(s.file(junk), "{garbage").unwrap();
    }
    fs::create_dir(s.file("5.json.lock")).unwrap();
    let listed = s.store.list().unwrap();
    let got: Vec<_> = listed.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        got,
        ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11"]
    );
    assert!(listed.quarantined.is_empty(), "{:?}", listed.quarantined);
}

#[test]
fn an_update_changes_fields_merges_metadata_and_reports_a_new_owner() {
    let s = Sandbox::new();
    let id = s.create("a").id;
    let u = s.update(
        &id,
        TaskUpdate {
            subject: Some("renamed".into()),
            owner: Some(Some("bob".into())),
            metadata: Some(json!({"k": 1, "gone": 2}).as_object().unwrap().clone()),
            ..Default::default()
        },
    );
    assert_eq!(u.new_owner.as_deref(), Some("bob"));
    let u = s.update(
        &id,
        TaskUpdate {
            status: Some(Status::Completed),
            metadata: Some(json!({"gone": null}).as_object().unwrap().clone()),
            ..Default::default()
        },
    );
    assert_eq!(u.new_owner, None, "owner unchanged");
    let t = s.task(&id);
    assert_eq!(
        (t.subject.as_str(), t.owner.as_deref()),
        ("renamed", Some("bob"))
    );
    assert_eq!(t.status, Status::Completed);
    assert_eq!(
        serde_json::Value::Object(t.metadata.unwrap()),
        json!({"k": 1})
    );
}

#[test]
fn setting_in_progress_on_an_ownerless_task_makes_the_caller_its_owner() {
    let s = Sandbox::new();
    let id = s.create("a").id;
    let upd = TaskUpdate {
        status: Some(Status::InProgress),
        ..Default::default()
    };
    let u = s.store.update(&id, upd, "carol").unwrap();
    assert_eq!(u.new_owner.as_deref(), Some("carol"));
    assert_eq!(s.task(&id).owner.as_deref(), Some("carol"));
}

#[test]
fn dependencies_are_kept_on_both_sides_without_duplicates() {
    let s = Sandbox::new();
    let a = s.create("a").id;
    let b = s.create_blocked("b", &[&a]).id;
    assert_eq!(
        s.task(&a).blocks,
        [b.as_str()],
        "create writes the blocker's side"
    );
    let c = s.create("c").id;
    for _ in 0..2 {
        s.update(
            &a,
            TaskUpdate {
                add_blocks: ids(&[&b, &c]),
                add_blocked_by: vec![],
                ..Default::default()
            },
        );
    }
    s.update(
        &c,
        TaskUpdate {
            add_blocked_by: ids(&[&b]),
            ..Default::default()
        },
    );
    assert_eq!(s.task(&a).blocks, [b.clone(), c.clone()]);
    assert_eq!(s.task(&b).blocked_by, [a.as_str()]);
    assert_eq!(s.task(&b).blocks, [c.as_str()]);
    assert_eq!(s.task(&c).blocked_by, [a.clone(), b.clone()]);
}

#[test]
fn self_blocking_and_unknown_dependencies_are_refused_and_change_nothing() {
    let s = Sandbox::new();
    let a = s.create("a").id;
    let before = fs::read(s.file("1.json")).unwrap();
    let err = s
        .store
        .update(
            &a,
            TaskUpdate {
                add_blocks: ids(&[&a]),
                ..Default::default()
            },
            "x",
        )
        .unwrap_err();
    assert!(matches!(err, TaskError::SelfBlock { .. }), "{err}");
    let err = s
        .store
        .update(
            &a,
            TaskUpdate {
                add_blocked_by: ids(&["42"]),
                ..Default::default()
            },
            "x",
        )
        .unwrap_err();
    assert!(err.to_string().contains("no task 42 in team"), "{err}");
    assert_eq!(fs::read(s.file("1.json")).unwrap(), before);
    let new = NewTask {
        blocked_by: ids(&["42"]),
        ..Default::default()
    };
    assert!(matches!(
        s.store.create(new),
        Err(TaskError::NotFound { .. })
    ));
    assert_eq!(s.ids(), ["1"], "a refused create makes no file");
}

#[test]
fn deleting_a_task_strips_it_from_every_other_task() {
    let s = Sandbox::new();
    let a = s.create("a").id;
    let b = s.create_blocked("b", &[&a]).id;
    let c = s.create_blocked("c", &[&b]).id;
    assert!(s.store.delete(&b).unwrap());
    assert!(s.task(&a).blocks.is_empty());
    assert!(s.task(&c).blocked_by.is_empty());
    assert_eq!(s.store.get(&b).unwrap(), None);
}

#[test]
fn a_claim_refuses_missing_owned_completed_and_blocked_tasks() {
    let s = Sandbox::new();
    let a = s.create("a").id;
    let b = s.create_blocked("b", &[&a]).id;
    let c = s.create("c").id;
    assert_eq!(
        s.claim(Some("99"), "x", false),
        Claim::Refused(Refusal::NotFound)
    );
    assert_eq!(
        s.claim(Some(&b), "x", false),
        Claim::Refused(Refusal::Blocked {
            by: vec![a.clone()]
        })
    );
    let t = s.claimed(Some(&a), "alice");
    assert_eq!(
        (t.owner.as_deref(), t.status),
        (Some("alice"), Status::InProgress)
    );
    assert_eq!(s.task(&a), t, "the claim is on disk");
    assert_eq!(
        s.claim(Some(&a), "bob", false),
        Claim::Refused(Refusal::AlreadyClaimed {
            owner: "alice".into()
        })
    );
    s.update(
        &c,
        TaskUpdate {
            status: Some(Status::Completed),
            ..Default::default()
        },
    );
    assert_eq!(
        s.claim(Some(&c), "bob", false),
        Claim::Refused(Refusal::AlreadyResolved)
    );
    s.update(
        &a,
        TaskUpdate {
            status: Some(Status::Completed),
            ..Default::default()
        },
    );
    assert_eq!(
        s.claimed(Some(&b), "bob").owner.as_deref(),
        Some("bob"),
        "unblocked now"
    );
}

#[test]
fn a_busy_check_refuses_a_claimant_that_owns_another_open_task() {
    let s = Sandbox::new();
    let a = s.create("a").id;
    let b = s.create("b").id;
    s.claimed(Some(&a), "alice");
    assert_eq!(
        s.claim(Some(&b), "alice", true),
        Claim::Refused(Refusal::Busy {
            owns: vec![a.clone()]
        })
    );
    assert_eq!(
        s.claim(None, "alice", true),
        Claim::Refused(Refusal::Busy { owns: vec![a] })
    );
    assert!(
        matches!(s.claim(Some(&b), "alice", false), Claim::Claimed(_)),
        "no check, no refusal"
    );
}

#[test]
fn a_claim_without_id_takes_the_lowest_pending_ownerless_unblocked_task() {
    let s = Sandbox::new();
    let a = s.create("a").id;
    let _b = s.create_blocked("b", &[&a]).id;
    let c = s.create("c").id;
    s.update(
        &a,
        TaskUpdate {
            owner: Some(Some("bob".into())),
            ..Default::default()
        },
    );
    assert_eq!(
        s.claimed(None, "alice").id,
        c,
        "1 is owned, 2 is blocked by 1"
    );
    assert_eq!(
        s.claim(None, "carol", false),
        Claim::Refused(Refusal::NothingClaimable)
    );
}

#[test]
fn unassigning_a_departed_member_returns_its_open_tasks_to_pending() {
    let s = Sandbox::new();
    for _ in 0..3 {
        s.create("t");
    }
    s.claimed(Some("1"), "bob");
    s.claimed(Some("2"), "bob");
    s.claimed(Some("3"), "carol");
    s.update(
        "2",
        TaskUpdate {
            status: Some(Status::Completed),
            ..Default::default()
        },
    );
    let back = s.store.unassign_all_of("bob").unwrap();
    assert_eq!(
        back.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["1"]
    );
    assert_eq!(
        (s.task("1").owner, s.task("1").status),
        (None, Status::Pending)
    );
    assert_eq!(
        s.task("2").owner.as_deref(),
        Some("bob"),
        "finished work keeps its owner"
    );
    assert_eq!(s.task("3").owner.as_deref(), Some("carol"));
}

#[test]
fn a_corrupt_task_file_is_quarantined_reported_and_its_id_never_reused() {
    let s = Sandbox::new();
    for _ in 0..3 {
        s.create("t");
    }
    fs::write(s.file("3.json"), "{\"id\": \"3\", \"subj").unwrap();
    let listed = s.store.list().unwrap();
    assert_eq!(
        listed
            .tasks
            .iter()
            .map(|t| t.id.as_str())
            .collect::<Vec<_>>(),
        ["1", "2"]
    );
    assert_eq!(listed.quarantined.len(), 1);
    let copy = &listed.quarantined[0];
    assert!(
        copy.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("3.json.corrupt-")
    );
    assert_eq!(fs::read_to_string(copy).unwrap(), "{\"id\": \"3\", \"subj");
    assert!(
        !s.file("3.json").exists(),
        "removed so it is not reported again"
    );
    assert!(s.store.list().unwrap().quarantined.is_empty());
    assert_eq!(s.mark().as_deref(), Some("3"));
    assert_eq!(s.create("t").id, "4");

    fs::write(s.file("2.json"), "").unwrap();
    let err = s.store.get("2").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, TaskError::Corrupt { .. }), "{msg}");
    assert!(
        msg.contains("task 2") && msg.contains("2.json") && msg.contains(TEAM),
        "{msg}"
    );
    fs::write(s.file("1.json"), "[]").unwrap();
    assert_eq!(
        s.claimed(None, "alice").id,
        "4",
        "claims carry on past a corrupt file"
    );
}

#[test]
fn a_high_water_mark_past_the_id_space_is_quarantined_and_rebuilt_not_trusted() {
    for absurd in ["18446744073709551615", "9007199254740992"] {
        let s = Sandbox::new();
        s.create("a");
        s.create("b");
        fs::write(s.file(".highwatermark"), absurd).unwrap();
        assert_eq!(
            s.create("c").id,
            "3",
            "a .highwatermark of {absurd} must not stop every create"
        );
        let copies: Vec<_> = fs::read_dir(s.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".highwatermark.corrupt-"))
            .collect();
        assert_eq!(copies.len(), 1, "{copies:?}");
        assert_eq!(fs::read_to_string(s.file(&copies[0])).unwrap(), absurd);
        assert_eq!(s.mark().as_deref(), Some("2"), "rebuilt from the files");

        fs::write(s.file(".highwatermark"), absurd).unwrap();
        let listed = s.store.list().unwrap();
        assert_eq!(listed.quarantined.len(), 1, "reported by list: {listed:?}");
        assert_eq!(listed.tasks.len(), 3);
    }
}

#[test]
fn a_task_file_numbered_past_the_id_space_is_quarantined_and_not_counted() {
    let s = Sandbox::new();
    s.create("a");
    let bytes = s.task("1").to_file_bytes();
    fs::write(s.file("18446744073709551615.json"), &bytes).unwrap();
    fs::write(s.file("99999999999999999999999.json"), &bytes).unwrap();
    assert_eq!(s.create("b").id, "2", "the absurd files are not counted");
    let listed = s.store.list().unwrap();
    assert_eq!(listed.quarantined.len(), 2, "{listed:?}");
    for q in &listed.quarantined {
        let name = q.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.contains(".json.corrupt-"), "{name}");
        assert_eq!(fs::read(q).unwrap(), bytes);
    }
    assert!(!s.file("18446744073709551615.json").exists());
    assert_eq!(s.ids(), ["1", "2"]);
    assert_eq!(s.create("c").id, "3", "quarantined copies are not counted");
}

#[test]
fn a_task_whose_own_id_is_past_the_id_space_is_corrupt() {
    let s = Sandbox::new();
    s.create("a");
    s.create("b");
    let text = String::from_utf8(s.task("2").to_file_bytes())
        .unwrap()
        .replace("\"id\": \"2\"", "\"id\": 18446744073709551615");
    fs::write(s.file("2.json"), text).unwrap();
    let listed = s.store.list().unwrap();
    assert_eq!(s.ids(), ["1"]);
    assert_eq!(listed.quarantined.len(), 1, "{listed:?}");
    assert_eq!(s.create("c").id, "3", "its file's id stays used");
}

#[test]
fn ids_that_reach_the_end_of_the_id_space_stop_with_a_clear_error() {
    let s = Sandbox::new();
    s.create("a");
    fs::write(s.file(".highwatermark"), MAX_ID.to_string()).unwrap();
    let err = s.store.create(NewTask::default()).unwrap_err();
    assert!(matches!(err, TaskError::IdsExhausted { .. }), "{err}");
    assert!(err.to_string().contains("9007199254740991"), "{err}");
    assert!(parse_id(&MAX_ID.to_string()).is_some());
    assert!(parse_id(&(MAX_ID + 1).to_string()).is_none());
}

#[test]
fn a_held_lock_times_out_with_an_error_naming_the_lock() {
    let s = Sandbox::new();
    s.create("a");
    let store = s
        .store
        .clone()
        .with_lock_timeout(Duration::from_millis(200));
    fs::create_dir(s.file("1.json.lock")).unwrap(); // a live foreign holder
    let err = store
        .claim(Some("1"), "alice", false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("task 1") && err.contains("1.json.lock") && err.contains("timed out"));
    fs::create_dir(s.file(".lock.lock")).unwrap();
    let err = store.create(NewTask::default()).unwrap_err().to_string();
    assert!(
        err.contains("the task list") && err.contains(".lock.lock"),
        "{err}"
    );
    assert!(err.contains(TEAM), "{err}");
}

/// Issue 24, item 10: `swarm: {err:#}` printed a lock timeout's cause
/// twice ("timed out after 60.0s …: timed out after 60.0s …").
#[test]
fn a_task_errors_cause_is_said_once_when_its_chain_is_printed_whole() {
    let s = Sandbox::new();
    s.create("a");
    let store = s
        .store
        .clone()
        .with_lock_timeout(Duration::from_millis(100));
    fs::create_dir(s.file("1.json.lock")).unwrap();
    let timeout = store.claim(Some("1"), "alice", false).unwrap_err();
    let other = Sandbox::new();
    fs::create_dir_all(other.dir().parent().unwrap()).unwrap();
    fs::write(other.dir(), "a file where the task directory belongs").unwrap();
    let io = other.store.create(NewTask::default()).unwrap_err();
    let name = TaskStore::new(&s.root, "").list().unwrap_err();
    for (err, cause) in [
        (timeout, "timed out"),
        (io, "not a directory"),
        (name, "team"),
    ] {
        let whole = format!("{:#}", anyhow::Error::from(err));
        assert!(whole.contains(cause), "{whole}");
        let tail = whole.rsplit(": ").next().unwrap_or_default();
        assert_eq!(
            whole.matches(tail).count(),
            1,
            "the cause is said once: {whole}"
        );
    }
}

#[test]
fn the_claude_code_fixture_tasks_read_correctly_and_rewrite_unchanged() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/claude-code/tasks");
    if !fixtures.is_dir() {
        eprintln!("SKIP fixture test: {} not found", fixtures.display());
        return;
    }
    let s = Sandbox::new();
    fs::create_dir_all(s.dir()).unwrap();
    for name in ["1.json", "2.json", ".highwatermark"] {
        fs::copy(fixtures.join(name), s.file(name)).unwrap();
        fs::set_permissions(s.file(name), fs::Permissions::from_mode(0o600)).unwrap();
    }
    let one = s.task("1");
    assert_eq!(
        (one.subject.as_str(), one.owner.as_deref()),
        ("Task 1", Some("researcher"))
    );
    assert_eq!(
        (one.status, one.blocks.clone()),
        (Status::Completed, ids(&["2"]))
    );
    assert_eq!(one.active_form.as_deref(), Some("Working on task 1"));
    let two = s.task("2");
    assert_eq!((two.status, two.owner.clone()), (Status::Pending, None));
    assert_eq!(two.blocked_by, ["1"]);
    for id in ["1", "2"] {
        s.update(id, TaskUpdate::default());
        let before: serde_json::Value =
            serde_json::from_slice(&fs::read(fixtures.join(format!("{id}.json"))).unwrap())
                .unwrap();
        let after_bytes = fs::read(s.file(&format!("{id}.json"))).unwrap();
        let after: serde_json::Value = serde_json::from_slice(&after_bytes).unwrap();
        assert_eq!(after, before, "task {id} changed on a no-op rewrite");
        assert_eq!(
            after_bytes,
            fs::read(fixtures.join(format!("{id}.json"))).unwrap()
        );
    }
    assert_eq!(
        s.claimed(None, "alice").id,
        "2",
        "1 is completed, so 2 is unblocked"
    );
    assert_eq!(
        s.create("t").id,
        "4",
        "the fixture's .highwatermark of 3 holds"
    );
}

/// Issue 24, item 1: a task assigned to a shell teammate that carries no
/// command is refused by id, not claimed, and left as it was.
#[test]
fn a_shell_claimant_is_refused_a_task_without_a_command_even_its_own() {
    let s = Sandbox::new();
    s.create("write the report");
    s.update(
        "1",
        TaskUpdate {
            owner: Some(Some("sh".into())),
            ..Default::default()
        },
    );
    let before = s.task("1");
    assert_eq!(
        s.store
            .claim_as(Some("1"), "sh", false, Takes::Commands)
            .unwrap(),
        Claim::Refused(Refusal::NoCommand)
    );
    assert_eq!(s.task("1"), before, "left as it was");
    assert_eq!(
        s.store.unassign("1", "someone-else").unwrap(),
        None,
        "only its owner's"
    );
    let back = s.store.unassign("1", "sh").unwrap().expect("handed back");
    assert_eq!((back.status, back.owner), (Status::Pending, None));
    assert_eq!(s.claimed(Some("1"), "agent").id, "1", "an agent takes it");
}

#[test]
fn eight_threads_racing_claim_every_one_of_100_tasks_exactly_once() {
    let s = Sandbox::new();
    for n in 0..100 {
        s.create(&format!("t{n}"));
    }
    let won: Vec<Vec<String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let store = s.store.clone();
                scope.spawn(move || {
                    let me = format!("worker-{i}");
                    let mut mine = Vec::new();
                    loop {
                        match store.claim(None, &me, false).unwrap() {
                            Claim::Claimed(t) => mine.push(t.id),
                            Claim::Refused(Refusal::NothingClaimable) => return mine,
                            Claim::Refused(r) => panic!("{me}: unexpected refusal {r}"),
                        }
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_exactly_once(&s, &won, 100);
}

/// Each of `n` tasks was won by exactly one claimant, and the file agrees.
fn assert_exactly_once(s: &Sandbox, won: &[Vec<String>], n: usize) {
    let mut winner: HashMap<String, usize> = HashMap::new();
    for (who, ids) in won.iter().enumerate() {
        for id in ids {
            if let Some(other) = winner.insert(id.clone(), who) {
                panic!("task {id} claimed by both worker-{other} and worker-{who}");
            }
        }
    }
    assert_eq!(winner.len(), n, "every task claimed");
    for t in s.store.list().unwrap().tasks {
        assert_eq!(
            t.owner,
            Some(format!("worker-{}", winner[&t.id])),
            "task {}",
            t.id
        );
    }
}

/// Runs as a child process of the cross-process test (and does nothing when
/// run directly): claims until nothing is left, printing each win.
#[test]
#[ignore = "run by claims_are_exclusive_across_processes as a child process"]
fn child_claimant() {
    let (Ok(home), Ok(me)) = (
        std::env::var("SWARM_TASKS_CHILD_HOME"),
        std::env::var("SWARM_TASKS_CHILD_NAME"),
    ) else {
        return;
    };
    let store = TaskStore::new(&Root::new(home), TEAM);
    while let Claim::Claimed(t) = store.claim(None, &me, false).unwrap() {
        println!("CLAIMED {}", t.id);
    }
}

#[test]
fn claims_are_exclusive_across_processes() {
    let s = Sandbox::new();
    for n in 0..40 {
        s.create(&format!("t{n}"));
    }
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..4)
        .map(|i| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "tasks::tests::child_claimant",
                    "--ignored",
                    "--nocapture",
                ])
                .args(["--test-threads", "1"])
                .env("SWARM_TASKS_CHILD_HOME", s.root.dir())
                .env("SWARM_TASKS_CHILD_NAME", format!("worker-{i}"))
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let won: Vec<Vec<String>> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "child failed: {text}");
            // The harness prints "test … ... " before the first line.
            let wins = text
                .lines()
                .filter_map(|l| l.split_once("CLAIMED ").map(|(_, id)| id));
            wins.map(|id| id.trim().to_string()).collect()
        })
        .collect();
    assert_exactly_once(&s, &won, 40);
}

/// Replaces the id inside task file bytes (for hand-made files).
trait ReplaceId {
    fn replace_id(self, id: &str) -> Vec<u8>;
}

impl ReplaceId for Vec<u8> {
    fn replace_id(self, id: &str) -> Vec<u8> {
        let mut t = Task::from_file_bytes(&self).unwrap();
        t.id = id.to_string();
        t.to_file_bytes()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Create(Vec<prop::sample::Index>),
    Delete(prop::sample::Index),
    Claim(Option<prop::sample::Index>, usize, bool),
    Block(prop::sample::Index, prop::sample::Index),
    Complete(prop::sample::Index),
    Unassign(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let idx = any::<prop::sample::Index>;
    prop_oneof![
        3 => prop::collection::vec(idx(), 0..3).prop_map(Op::Create),
        1 => idx().prop_map(Op::Delete),
        3 => (prop::option::of(idx()), 0..3usize, any::<bool>()).prop_map(|(i, w, b)| Op::Claim(i, w, b)),
        2 => (idx(), idx()).prop_map(|(a, b)| Op::Block(a, b)),
        1 => idx().prop_map(Op::Complete),
        1 => (0..3usize).prop_map(Op::Unassign),
    ]
}

const WHO: [&str; 3] = ["ann", "ben", "cat"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Over any sequence of operations: ids strictly increase and are never
    /// reused, blocks/blockedBy stay symmetric and point at live tasks, and
    /// no task is ever won by two claimants while it stays claimed.
    #[test]
    fn the_task_list_invariants_hold_over_random_operations(ops in prop::collection::vec(op(), 1..25)) {
        let s = Sandbox::new();
        let mut issued: Vec<u64> = Vec::new();
        let mut holder: HashMap<String, String> = HashMap::new();
        for op in ops {
            let live = s.ids();
            let pick = |i: &prop::sample::Index| (!live.is_empty()).then(|| i.get(&live).clone());
            match &op {
                Op::Create(by) => {
                    let by: BTreeSet<String> = by.iter().filter_map(pick).collect();
                    let by: Vec<&str> = by.iter().map(String::as_str).collect();
                    let n = s.create_blocked("p", &by).number();
                    prop_assert!(issued.last().is_none_or(|last| n > *last), "{n} after {issued:?}");
                    issued.push(n);
                }
                Op::Delete(i) => if let Some(id) = pick(i) {
                    prop_assert!(s.store.delete(&id).unwrap());
                    holder.remove(&id);
                },
                Op::Claim(i, w, busy) => {
                    let id = i.as_ref().and_then(pick);
                    if let Claim::Claimed(t) = s.claim(id.as_deref(), WHO[*w], *busy)
                        && let Some(prev) = holder.insert(t.id.clone(), WHO[*w].to_string())
                    {
                        prop_assert_eq!(&prev, WHO[*w], "task {} won twice", t.id);
                    }
                }
                Op::Block(a, b) => if let (Some(a), Some(b)) = (pick(a), pick(b)) {
                    // Refused when it would close a dependency cycle.
                    let now = s.store.list().unwrap().tasks;
                    let cycle = super::rules::dependency_cycle(&now, &a, std::slice::from_ref(&b), &[]);
                    let upd = TaskUpdate { add_blocks: vec![b.clone()], ..Default::default() };
                    let r = s.store.update(&a, upd, "lead");
                    prop_assert_eq!(r.is_err(), a == b || cycle.is_some(), "{:?}", r);
                },
                Op::Complete(i) => if let Some(id) = pick(i) {
                    s.update(&id, TaskUpdate { status: Some(Status::Completed), ..Default::default() });
                },
                Op::Unassign(w) => {
                    for t in s.store.unassign_all_of(WHO[*w]).unwrap() {
                        holder.remove(&t.id);
                    }
                }
            }
            let tasks = s.store.list().unwrap().tasks;
            let by_id: HashMap<&str, &Task> = tasks.iter().map(|t| (t.id.as_str(), t)).collect();
            for t in &tasks {
                prop_assert!(issued.contains(&t.number()));
                for b in &t.blocks {
                    prop_assert!(by_id.get(b.as_str()).is_some_and(|o| o.blocked_by.contains(&t.id)),
                        "after {:?}: {} blocks {} but not the reverse", op, t.id, b);
                }
                for b in &t.blocked_by {
                    prop_assert!(by_id.get(b.as_str()).is_some_and(|o| o.blocks.contains(&t.id)),
                        "after {:?}: {} blockedBy {} but not the reverse", op, t.id, b);
                }
                if let Some(h) = holder.get(&t.id) {
                    prop_assert_eq!(t.owner.as_ref(), Some(h));
                }
            }
        }
    }
}
