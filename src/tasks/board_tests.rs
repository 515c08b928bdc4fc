//! The board index (`tasks::index`, `store/board.rs`) as specs: when the
//! board is listed from the index alone, and that every write behind its
//! back (Claude Code's in-place writes under its lock, plain creates,
//! deletes, corrupt files, hand edits, a garbage or planted index) is seen,
//! down to a random sequence checked against the files themselves.

use super::index::Index;
use super::store::board_looks as looks;
use super::*;
use crate::paths::Root;
use std::fs;
use std::io::{Seek, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const TEAM: &str = "demo";

struct Board {
    _tmp: tempfile::TempDir,
    root: Root,
    store: TaskStore,
}

impl Board {
    fn with(n: usize) -> Board {
        let tmp = tempfile::tempdir().unwrap();
        let root = Root::new(tmp.path());
        let store = TaskStore::new(&root, TEAM);
        for i in 1..=n {
            store
                .create(NewTask {
                    subject: format!("task {i:04}"),
                    ..Default::default()
                })
                .unwrap();
        }
        Board {
            _tmp: tmp,
            root,
            store,
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.root.tasks_dir(TEAM).unwrap().join(name)
    }

    fn index(&self) -> PathBuf {
        self.root.board_index(TEAM).unwrap()
    }

    /// Lists, and says how many task files that read (0: the index alone).
    fn look(&self) -> (Vec<Task>, usize) {
        looks::take();
        let tasks = self.store.list().unwrap().tasks;
        (tasks, looks::take().expect("list looks at the board"))
    }

    /// Lists until the board comes from the index alone (once nothing has
    /// changed for a timestamp granule), with a deadline.
    fn settle(&self) -> Vec<Task> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (tasks, reads) = self.look();
            if reads == 0 {
                return tasks;
            }
            assert!(Instant::now() < deadline, "the index never settled");
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// What the files say, read one by one: the truth the index must match.
    fn truth(&self) -> Vec<Task> {
        let mut tasks: Vec<Task> = fs::read_dir(self.root.tasks_dir(TEAM).unwrap())
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                let id = task::task_file_id(&name)?;
                let mut t = Task::from_file_bytes(&fs::read(self.file(&name)).ok()?).ok()?;
                t.id = id.to_string();
                Some(t)
            })
            .collect();
        tasks.sort_by_key(Task::number);
        tasks
    }

    /// Writes task `id` as Claude Code does: under its lock directory, in
    /// place (truncate and write), then the lock removed.
    fn claude_write(&self, id: &str, bytes: &[u8]) {
        let lock = self.file(&format!("{id}.json.lock"));
        fs::create_dir(&lock).unwrap();
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.file(&format!("{id}.json")))
            .unwrap();
        f.set_len(0).unwrap();
        f.rewind().unwrap();
        f.write_all(bytes).unwrap();
        drop(f);
        fs::remove_dir(&lock).unwrap();
    }

    fn claude_edit(&self, id: &str, edit: impl FnOnce(&mut Task)) {
        let mut t = self.store.get(id).unwrap().unwrap();
        edit(&mut t);
        self.claude_write(id, &t.to_file_bytes());
    }

    /// A claim without id by `who` that must succeed.
    fn claim_next(&self, who: &str) -> Task {
        match self.store.claim(None, who, false).unwrap() {
            Claim::Claimed(t) => t,
            Claim::Refused(r) => panic!("{who} refused: {r}"),
        }
    }

    /// Task `id` completed, as `by` would.
    fn complete(&self, id: &str, by: &str) {
        let done = TaskUpdate {
            status: Some(Status::Completed),
            ..Default::default()
        };
        self.store.update(id, done, by).unwrap();
    }

    /// Makes the saved index look `by` older than it is.
    fn age_index(&self, by: Duration) {
        let ix = Index::decode(&fs::read(self.index()).unwrap()).unwrap();
        let began = ix.began_ns - by.as_nanos() as i64;
        let entries = ix
            .seen
            .iter()
            .zip(&ix.tasks)
            .map(|(s, t)| (s.stamp, s.settled, t));
        let bytes = Index::encode(ix.dir, ix.dir_settled, began, ix.at, entries);
        fs::write(self.index(), bytes).unwrap();
    }
}

fn subjects(tasks: &[Task]) -> Vec<(String, String)> {
    tasks
        .iter()
        .map(|t| (t.id.clone(), t.subject.clone()))
        .collect()
}

#[test]
fn a_settled_board_is_listed_from_the_index_alone_and_equals_the_files() {
    let b = Board::with(30);
    let (first, reads) = b.look();
    assert_eq!(reads, 30, "no index yet: every file is read");
    assert_eq!(first, b.truth());
    assert_eq!(b.settle(), b.truth());
    assert!(b.index().exists());
}

#[test]
fn a_claude_code_write_in_place_under_its_lock_is_seen_at_once() {
    let b = Board::with(5);
    b.settle();
    // Same length, so only the times tell the file changed.
    b.claude_edit("2", |t| t.subject = "TASK 0002".into());
    let (tasks, reads) = b.look();
    assert_eq!(reads, 1, "only the changed file is read again");
    assert_eq!(tasks[1].subject, "TASK 0002");
    assert_eq!(tasks, b.truth());
}

#[test]
fn a_plain_create_and_a_delete_behind_its_back_are_seen() {
    let b = Board::with(4);
    b.settle();
    fs::create_dir(b.file(".lock.lock")).unwrap();
    fs::write(
        b.file("9.json"),
        Task::new("9", "made by Claude Code").to_file_bytes(),
    )
    .unwrap();
    fs::remove_dir(b.file(".lock.lock")).unwrap();
    fs::remove_file(b.file("3.json")).unwrap();
    let (tasks, reads) = b.look();
    assert_eq!(reads, 1, "only the new file is read");
    let ids: Vec<_> = tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "4", "9"]);
    assert_eq!(tasks, b.truth());
}

#[test]
fn a_corrupt_write_behind_its_back_is_quarantined_not_hidden() {
    let b = Board::with(3);
    b.settle();
    b.claude_write("2", b"{ torn");
    let list = b.store.list().unwrap();
    assert_eq!(list.quarantined.len(), 1, "reported");
    assert_eq!(subjects(&list.tasks), subjects(&b.truth()));
    assert!(!b.file("2.json").exists());
}

#[test]
fn a_hand_edit_that_changes_no_directory_shows_once_the_index_is_old() {
    let b = Board::with(3);
    b.settle();
    // In place, no lock: the directory does not change.
    let mut t = b.store.get("1").unwrap().unwrap();
    t.subject = "EDITED 01".into();
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(b.file("1.json"))
        .unwrap();
    f.write_all(&t.to_file_bytes()).unwrap();
    drop(f);
    b.age_index(index::WHOLE_FOR + Duration::from_secs(1));
    let (tasks, reads) = b.look();
    assert_eq!(reads, 1);
    assert_eq!(tasks[0].subject, "EDITED 01");
}

#[test]
fn a_garbage_or_planted_index_is_rebuilt_or_refused_never_believed() {
    let b = Board::with(3);
    b.settle();
    fs::write(b.index(), b"SWBIDX01 not an index at all").unwrap();
    let (tasks, reads) = b.look();
    assert_eq!((tasks, reads), (b.truth(), 3));
    assert!(
        Index::decode(&fs::read(b.index()).unwrap()).is_some(),
        "rebuilt"
    );

    // A link in its place is neither read nor written through.
    let elsewhere = b._tmp.path().join("elsewhere");
    fs::write(&elsewhere, b"theirs").unwrap();
    fs::remove_file(b.index()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, b.index()).unwrap();
    let (tasks, reads) = b.look();
    assert_eq!((tasks, reads), (b.truth(), 3));
    assert_eq!(fs::read(&elsewhere).unwrap(), b"theirs");
}

#[test]
fn a_claim_without_id_takes_candidates_from_the_index_and_checks_each_afresh() {
    let b = Board::with(3);
    b.store.list().unwrap();
    // Behind the index's back: 1 to 3 taken, 4 made.
    for id in ["1", "2", "3"] {
        b.claude_edit(id, |t| t.owner = Some("carol".into()));
    }
    b.claude_write("4", &Task::new("4", "new").to_file_bytes());
    looks::take();
    let t = b.claim_next("bob");
    assert_eq!((t.id.as_str(), t.owner.as_deref()), ("4", Some("bob")));
    assert!(
        looks::take().is_some(),
        "the stale candidates ran out: a fresh look found 4"
    );
    for id in ["1", "2", "3"] {
        assert_eq!(
            b.store.get(id).unwrap().unwrap().owner.as_deref(),
            Some("carol")
        );
    }

    // A young index with a candidate left: no look at the board at all.
    let c = Board::with(3);
    c.store.list().unwrap();
    looks::take();
    assert_eq!(c.claim_next("bob").id, "1");
    assert_eq!(looks::take(), None, "taken from the index's candidates");
}

/// Issue 24, item 1: a shell teammate claims only a task that carries a
/// command; the index says which do, so it passes over the others without
/// reading their files, and they stay on the board for an agent.
#[test]
fn a_shell_claimant_takes_only_a_task_with_a_command_from_the_index_alone() {
    let b = Board::with(3);
    let mut md = serde_json::Map::new();
    md.insert("command".into(), "echo 4".into());
    b.store
        .create(NewTask {
            subject: "with a command".into(),
            metadata: Some(md),
            ..Default::default()
        })
        .unwrap();
    b.store.list().unwrap();
    looks::take();
    match b
        .store
        .claim_as(None, "sh", false, Takes::Commands)
        .unwrap()
    {
        Claim::Claimed(t) => assert_eq!(t.id, "4"),
        Claim::Refused(r) => panic!("refused: {r}"),
    }
    assert_eq!(looks::take(), None, "taken from the index's candidates");
    assert_eq!(
        b.store
            .claim_as(None, "sh", false, Takes::Commands)
            .unwrap(),
        Claim::Refused(Refusal::NothingClaimable),
        "1 to 3 carry no command"
    );
    for id in ["1", "2", "3"] {
        let t = b.store.get(id).unwrap().unwrap();
        assert_eq!((t.status, t.owner), (Status::Pending, None), "task {id}");
    }
    assert_eq!(b.claim_next("agent").id, "1", "left for another teammate");
}

#[test]
fn a_claim_from_the_index_still_takes_the_lowest_task_that_became_claimable() {
    let b = Board::with(3);
    let by = |ids: &[&str]| TaskUpdate {
        add_blocked_by: ids.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    b.store.update("2", by(&["1"]), "lead").unwrap();
    b.store.claim(Some("1"), "carol", false).unwrap();
    // The index: 1 in progress, 2 blocked by it, 3 the one candidate.
    b.settle();
    b.complete("1", "carol");
    assert_eq!(
        b.claim_next("bob").id,
        "2",
        "2 was freed below the candidate 3"
    );
}

#[test]
fn finishing_a_task_below_the_candidates_keeps_the_claim_on_the_index() {
    let b = Board::with(3);
    b.store.claim(Some("1"), "carol", false).unwrap();
    b.settle();
    b.complete("1", "carol");
    looks::take();
    assert_eq!(b.claim_next("carol").id, "2");
    assert_eq!(looks::take(), None, "1 was read again, not the board");
}

/// bob claims without id while another process holds the look lock (it
/// is in the middle of looking); once bob waits for it, that look is made
/// (a fresh index) and the lock let go. bob's claim, and whether bob
/// looked at the board himself.
fn claim_behind_anothers_look(b: &Board) -> (Claim, Option<usize>) {
    let lock = fs::File::create(b.root.board_look_lock(TEAM).unwrap()).unwrap();
    lock.lock().unwrap();
    let (root, done) = (b.root.clone(), std::sync::mpsc::channel());
    let claimant = std::thread::spawn(move || {
        looks::take();
        let claim = TaskStore::new(&root, TEAM)
            .claim(None, "bob", false)
            .unwrap();
        done.0.send(()).unwrap();
        (claim, looks::take())
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(done.1.try_recv().is_err(), "bob waits for the look");
    b.store.list().unwrap(); // the other process's look: a fresh index
    drop(lock);
    claimant.join().unwrap()
}

#[test]
fn claimants_woken_together_wait_for_one_look_at_the_board() {
    let b = Board::with(3);
    b.store.list().unwrap();
    // The index too old to take candidates from.
    b.age_index(Duration::from_secs(60));
    let (claim, looked) = claim_behind_anothers_look(&b);
    assert!(matches!(claim, Claim::Claimed(t) if t.id == "1"));
    assert_eq!(looked, None, "it took the index the other look saved");
}

#[test]
fn claimants_that_lost_the_last_task_share_one_look_to_find_nothing() {
    let b = Board::with(1);
    b.store.list().unwrap();
    // 1 is the index's one candidate; carol takes it first. bob woke with
    // her: he loses 1, and another loser makes the look that decides for
    // both, begun after bob's claim.
    assert_eq!(b.claim_next("carol").id, "1");
    let (claim, looked) = claim_behind_anothers_look(&b);
    assert!(
        matches!(claim, Claim::Refused(Refusal::NothingClaimable)),
        "{claim:?}"
    );
    assert_eq!(looked, None, "bob took the other loser's look");
}

#[test]
fn a_claimant_that_found_a_candidate_locked_waits_for_its_holder_not_for_its_lock() {
    let b = Board::with(1);
    b.store.list().unwrap();
    // carol's runtime is taking 1: it holds the OS lock (and the lock
    // directory, which it will hand to a Claude Code writer below).
    let file = b.file("1.json");
    let os = crate::atomic_file::FileLock::try_os_lock(&file)
        .unwrap()
        .unwrap();
    fs::create_dir(crate::atomic_file::lock_dir_for(&file)).unwrap();
    let root = b.root.clone();
    let loser = std::thread::spawn(move || {
        TaskStore::new(&root, TEAM)
            .with_lock_timeout(Duration::from_millis(500))
            .claim(None, "bob", false)
    });
    std::thread::sleep(Duration::from_millis(100));
    let mut taken = b.store.get("1").unwrap().unwrap();
    taken.owner = Some("carol".into());
    taken.status = Status::InProgress;
    crate::atomic_file::write_atomic(&file, &taken.to_file_bytes()).unwrap();
    // carol lets go; the directory stays (as a Claude Code writer's would):
    // bob, seeing 1 taken, has no reason to wait for it.
    drop(os);
    let claim = loser.join().unwrap();
    assert!(
        matches!(claim, Ok(Claim::Refused(Refusal::NothingClaimable))),
        "{claim:?}"
    );
}

#[test]
fn a_large_board_after_two_changes_reads_only_those_two_files() {
    let b = Board::with(1);
    for i in 2..=2100 {
        let t = Task::new(i.to_string(), format!("task {i:04}"));
        fs::write(b.file(&format!("{i}.json")), t.to_file_bytes()).unwrap();
    }
    let (tasks, reads) = b.look();
    assert_eq!((tasks.len(), reads), (2100, 2100));
    assert_eq!(tasks, b.truth());
    b.settle();
    b.claude_edit("3", |t| t.subject = "first half".into());
    b.claude_edit("2090", |t| t.subject = "second half".into());
    let (tasks, reads) = b.look();
    assert_eq!(reads, 2, "only the two changed files are read again");
    assert_eq!(tasks, b.truth());
}

#[test]
fn a_glance_right_after_a_change_sees_it_and_saves_the_index_only_once_it_settled() {
    // Big enough that the last index is decoded beside the listing.
    let b = Board::with(1);
    for i in 2..=600 {
        let t = Task::new(i.to_string(), format!("task {i:04}"));
        fs::write(b.file(&format!("{i}.json")), t.to_file_bytes()).unwrap();
    }
    b.settle();
    let saved = fs::read(b.index()).unwrap();
    assert!(saved.len() >= 64 * 1024, "{} bytes", saved.len());
    b.claude_edit("7", |t| t.subject = "changed".into());
    looks::take();
    let seen = b.store.glance().unwrap().into_list().tasks;
    let glanced_by = super::index::now_ns();
    assert_eq!(looks::take(), Some(1), "only the changed file is read");
    assert_eq!(seen, b.truth(), "a glance sees the change");
    // Unsettled for the glance when it ended within the granule of the
    // change: on a machine that paused the test longer the change had
    // settled, and saving it then is right (a loaded run failed so).
    let changed = {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(b.file("7.json")).unwrap();
        i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
    };
    if changed + super::index::FINE_GRANULE.as_nanos() as i128 > i128::from(glanced_by) {
        assert!(
            fs::read(b.index()).unwrap() == saved,
            "nothing settled yet: the glance leaves the index as it was"
        );
    }
    // Once the change has settled, a glance saves what it learned, and the
    // next look needs no file.
    std::thread::sleep(Duration::from_millis(120));
    b.store.glance().unwrap();
    assert_ne!(
        fs::read(b.index()).unwrap(),
        saved,
        "a settled look is saved"
    );
    assert_eq!(b.look(), (b.truth(), 0));
    // `list` (the lead, the team watcher, claimants) saves every look:
    // claimants woken by a change take their candidates from it.
    b.claude_edit("8", |t| t.subject = "changed too".into());
    let before = fs::read(b.index()).unwrap();
    assert_eq!(b.look(), (b.truth(), 1));
    assert_ne!(fs::read(b.index()).unwrap(), before);
}

/// A tiny deterministic generator (no dependence on proptest's shrinking:
/// the sequence needs real pauses to reach the index-alone path).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

#[test]
fn the_index_matches_the_files_through_a_random_sequence_of_writers() {
    let b = Board::with(8);
    let mut rng = Lcg(7);
    for step in 0..160 {
        let live: Vec<String> = b.truth().into_iter().map(|t| t.id).collect();
        let pick = |rng: &mut Lcg| live[rng.below(live.len() as u64) as usize].clone();
        match rng.below(7) {
            0 => {
                b.store
                    .create(NewTask {
                        subject: format!("new {step}"),
                        ..Default::default()
                    })
                    .unwrap();
            }
            1 if !live.is_empty() => {
                let id = pick(&mut rng);
                b.claude_edit(&id, |t| t.subject = format!("cc {step}"));
            }
            2 if !live.is_empty() => {
                let id = pick(&mut rng);
                b.complete(&id, "lead");
            }
            3 => {
                b.store.claim(None, "bob", false).unwrap();
            }
            4 if live.len() > 2 => {
                let id = pick(&mut rng);
                b.store.delete(&id).unwrap();
            }
            5 if !live.is_empty() => {
                // Same bytes rewritten in place: a new version, same content.
                let id = pick(&mut rng);
                let bytes = fs::read(b.file(&format!("{id}.json"))).unwrap();
                b.claude_write(&id, &bytes);
            }
            _ => {
                let id = pick(&mut rng);
                b.claude_edit(&id, |t| {
                    t.owner = Some("carol".into());
                    t.status = Status::InProgress;
                });
            }
        }
        if step % 20 == 19 {
            b.settle();
        }
        let (tasks, _) = b.look();
        assert_eq!(tasks, b.truth(), "after step {step}");
    }
}
