//! The view's tests: the incremental board against full listings, the shared
//! board's reuse, which events count, and the consumed ring.

use super::*;
use crate::paths::Root;
use crate::tasks::{NewTask, Status, TaskUpdate};
use std::sync::Mutex;

/// The board as a full listing reads it.
fn full(store: &TaskStore) -> Vec<Task> {
    store.list().unwrap().tasks
}

/// Refreshes `state` until it equals a full listing, or fails naming
/// the difference after a deadline (events arrive asynchronously).
fn settles(state: &mut TeamState, store: &TaskStore, shared: &Mutex<Shared>, step: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        state.refresh_board(store, shared).unwrap();
        let mine: Vec<Task> = state.tasks().cloned().collect();
        let all = full(store);
        // The shared board too: changed task by task, it must equal
        // one built whole in every part (what shows, what is done,
        // each owner's tasks).
        let whole = Board::from(all.clone());
        if mine == all && state.board().same_in_every_part(&whole) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after {step}: the incremental board differs from a full listing\n\
             incremental: {mine:#?}\nfull: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_incremental_board_equals_a_full_listing_after_every_kind_of_write() {
    let t = tempfile::tempdir().unwrap();
    let root = Root::new(t.path());
    let store = TaskStore::new(&root, "demo");
    let dir = store.dir().unwrap();
    crate::atomic_file::ensure_dir(&dir).unwrap();
    let shared = Arc::new(Mutex::new(Shared::default()));
    let _w = watch_board(&dir, shared.clone(), || {}).unwrap();
    let mut state = TeamState::default();
    settles(&mut state, &store, &shared, "start");
    // A small deterministic sequence mixing swarm's writes with the
    // ones made behind its back.
    let mut seed: u64 = 0x5eed;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for step in 0..120 {
        let ids: Vec<u64> = full(&store).iter().map(Task::number).collect();
        let pick = |i: u64| ids.get(i as usize % ids.len().max(1)).copied();
        let what = match next(10) {
            0..=3 | 9 => {
                store
                    .create(NewTask {
                        subject: format!("task {step}"),
                        ..Default::default()
                    })
                    .unwrap();
                "create"
            }
            4 => {
                store.claim(None, &format!("m{}", next(3)), false).unwrap();
                "claim"
            }
            5 => match pick(next(1000)) {
                Some(id) => {
                    let upd = TaskUpdate {
                        status: Some(Status::Completed),
                        ..Default::default()
                    };
                    store.update(&id.to_string(), upd, "m0").unwrap();
                    "update"
                }
                None => "nothing",
            },
            6 => match pick(next(1000)) {
                Some(id) => {
                    // Claude Code's in-place write: truncate and write.
                    let path = dir.join(format!("{id}.json"));
                    let mut task = store.get(&id.to_string()).unwrap().unwrap();
                    task.subject = format!("edited behind its back at {step}");
                    task.owner = Some(format!("m{}", next(3)));
                    task.status =
                        [Status::Pending, Status::InProgress, Status::Completed][next(3) as usize];
                    // Failed, internal, or neither.
                    task.metadata = match next(4) {
                        0 => Some(serde_json::json!({"failed": true})),
                        1 => Some(serde_json::json!({"_internal": true})),
                        _ => None,
                    }
                    .and_then(|v| v.as_object().cloned());
                    std::fs::write(&path, task.to_file_bytes()).unwrap();
                    "in-place write"
                }
                None => "nothing",
            },
            7 => match pick(next(1000)) {
                Some(id) => {
                    let _ = std::fs::remove_file(dir.join(format!("{id}.json")));
                    "delete behind its back"
                }
                None => "nothing",
            },
            _ => match pick(next(1000)) {
                Some(id) => {
                    std::fs::write(dir.join(format!("{id}.json")), b"{\"id\": ").unwrap();
                    "corrupt"
                }
                None => "nothing",
            },
        };
        if next(3) == 0 {
            settles(
                &mut state,
                &store,
                &shared,
                &format!("step {step} ({what})"),
            );
        }
    }
    settles(&mut state, &store, &shared, "the end");
    let left = full(&store).len();
    assert!(
        left > 3,
        "the sequence left a board to compare: {left} task(s)"
    );
}

#[test]
fn only_events_about_task_files_count() {
    use notify::event::{AccessKind, AccessMode, CreateKind, Flag, ModifyKind};
    use notify::{Event, EventKind};
    let dir = Path::new("/r/tasks/t");
    let ev = |kind: EventKind, name: &str| Event::new(kind).add_path(dir.join(name));
    let mut c = BoardChanges {
        watched: true,
        ..BoardChanges::default()
    };
    c.take();
    let create = EventKind::Create(CreateKind::Any);
    for name in [
        "3.json.lock",
        "3.json.tmp.0a1b2c3d",
        ".highwatermark",
        ".lock",
    ] {
        assert!(!c.note_event(dir, &ev(create, name)), "{name}");
    }
    let read = EventKind::Access(AccessKind::Close(AccessMode::Read));
    assert!(!c.note_event(dir, &ev(read, "3.json")), "a read");
    assert_eq!(c.take(), (false, BTreeSet::new()));
    let written = EventKind::Access(AccessKind::Close(AccessMode::Write));
    assert!(c.note_event(dir, &ev(written, "3.json")));
    assert!(c.note_event(dir, &ev(EventKind::Modify(ModifyKind::Any), "12.json")));
    assert_eq!(c.take(), (false, BTreeSet::from([3, 12])));
    let overflow = Event::new(EventKind::Other).set_flag(Flag::Rescan);
    assert!(c.note_event(dir, &overflow));
    assert!(c.take().0, "an overflow reads everything again");
    assert!(c.note_event(
        dir,
        &Event::new(EventKind::Remove(notify::event::RemoveKind::Any)).add_path(dir.to_path_buf())
    ));
    assert!(c.take().0, "the directory itself changed");
}

#[test]
fn without_a_watcher_every_refresh_is_a_full_listing() {
    let t = tempfile::tempdir().unwrap();
    let store = TaskStore::new(&Root::new(t.path()), "demo");
    let shared = Mutex::new(Shared::default());
    let mut state = TeamState::default();
    state.refresh_board(&store, &shared).unwrap();
    store.create(NewTask::default()).unwrap();
    state.refresh_board(&store, &shared).unwrap();
    assert_eq!(state.tasks().count(), 1);
    // A listing that found nothing new keeps the shared board.
    let first = state.board();
    state.refresh_board(&store, &shared).unwrap();
    assert!(state.board().shares(&first), "an unchanged listing");
    store.create(NewTask::default()).unwrap();
    state.refresh_board(&store, &shared).unwrap();
    assert!(!state.board().shares(&first), "a new task");
    assert_eq!(state.board().len(), 2);
}

#[test]
fn the_shared_board_is_reused_until_a_task_changes() {
    let t = tempfile::tempdir().unwrap();
    let store = TaskStore::new(&Root::new(t.path()), "demo");
    let mut shared = Shared::default();
    shared.board.watched = true; // the events are the test's own
    let shared = Mutex::new(shared);
    let mut state = TeamState::default();
    let (a, _) = (
        store.create(NewTask::default()).unwrap(),
        store.create(NewTask::default()).unwrap(),
    );
    state.refresh_board(&store, &shared).unwrap();
    let first = state.board();
    assert_eq!(first.iter().cloned().collect::<Vec<_>>(), full(&store));
    let event = |id: &str| lock(&shared).board.task(id.parse().unwrap());
    // Nothing happened, then a write that changed nothing.
    state.refresh_board(&store, &shared).unwrap();
    assert!(state.board().shares(&first), "no change: the same board");
    event(&a.id);
    state.refresh_board(&store, &shared).unwrap();
    assert!(state.board().shares(&first), "an identical rewrite");
    // A task changed: a new board, the old one (an old view's) intact.
    let upd = TaskUpdate {
        status: Some(Status::Completed),
        ..Default::default()
    };
    store.update(&a.id, upd, "m0").unwrap();
    event(&a.id);
    state.refresh_board(&store, &shared).unwrap();
    let second = state.board();
    assert!(!second.shares(&first), "a changed task: a new board");
    assert_eq!(second.iter().cloned().collect::<Vec<_>>(), full(&store));
    assert_eq!(first.iter().next().unwrap().status, Status::Pending);
    assert!(state.board().shares(&second), "and that one is kept");
    // A task removed behind its back.
    std::fs::remove_file(store.dir().unwrap().join(format!("{}.json", a.id))).unwrap();
    event(&a.id);
    state.refresh_board(&store, &shared).unwrap();
    let third = state.board();
    assert!(!third.shares(&second), "a removed task: a new board");
    assert_eq!(third.len(), 1);
}

/// A team `demo` under `dir`.
fn team_in(dir: &tempfile::TempDir) -> Team {
    Team {
        root: Root::new(dir.path()),
        name: "demo".into(),
    }
}

#[test]
fn consumed_entries_follow_the_history_once_each() {
    let t = tempfile::tempdir().unwrap();
    let team = team_in(&t);
    let shared = Mutex::new(Shared::default());
    let e = |s: &str| Entry::new("bob", s.into(), None, None);
    consumed(&mut lock(&shared), &[e("before the view")]);
    assert_eq!(
        consumed_shown(&team, &shared).unwrap(),
        Vec::<Arc<Entry>>::new()
    );
    let (a, b) = (e("a"), e("b"));
    consumed(&mut lock(&shared), &[a.clone(), b.clone()]);
    consumed(&mut lock(&shared), std::slice::from_ref(&b));
    assert_eq!(
        consumed_shown(&team, &shared).unwrap(),
        vec![Arc::new(a), Arc::new(b)]
    );
    let many: Vec<Entry> = (0..INBOX_SHOWN + 3).map(|i| e(&i.to_string())).collect();
    consumed(&mut lock(&shared), &many);
    let shown = consumed_shown(&team, &shared).unwrap();
    assert_eq!(shown.len(), INBOX_SHOWN);
    assert_eq!(shown.last().unwrap().text, (INBOX_SHOWN + 2).to_string());
    // A batch of thousands leaves the ring no larger than it shows.
    let batch: Vec<Entry> = (0..20 * INBOX_SHOWN).map(|i| e(&format!("b{i}"))).collect();
    consumed(&mut lock(&shared), &batch);
    let shown = consumed_shown(&team, &shared).unwrap();
    assert_eq!(
        shown.first().unwrap().text,
        format!("b{}", 19 * INBOX_SHOWN)
    );
    let held = lock(&shared).consumed.as_ref().unwrap().capacity();
    assert!(
        held < 4 * INBOX_SHOWN,
        "the ring holds room for {held} entries"
    );
}

#[test]
fn a_burst_of_unread_messages_shows_only_its_newest() {
    let t = tempfile::tempdir().unwrap();
    let team = team_in(&t);
    let burst: Vec<Entry> = (0..INBOX_SHOWN + 50)
        .map(|i| Entry::new("bob", format!("m{i}"), None, None))
        .collect();
    team.mailbox().append_all(LEAD_NAME, burst).unwrap();
    let mut state = TeamState::default();
    let unread = state.lead_unread(&team).unwrap();
    assert_eq!(unread.len(), INBOX_SHOWN);
    assert_eq!(unread[0].text, "m50");
    assert_eq!(
        unread.last().unwrap().text,
        format!("m{}", INBOX_SHOWN + 49)
    );
}
