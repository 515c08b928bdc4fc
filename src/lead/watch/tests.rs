//! The lead's watcher on real directories: which writes ring the dialog,
//! which wake the supervisor, and which (the lead's own reads, temp files,
//! locks) wake nobody. Nothing is timed: what must come is awaited within
//! the suite's budget, and "nothing came" is shown by what a later write
//! brings alone.

use super::*;
use crate::lead::Shared;
use crate::lead::wake::Wake;
use std::io::Write;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};

/// The suite's one timeout knob.
#[allow(dead_code)]
#[allow(
    clippy::duplicate_mod,
    reason = "one file owns the knob; each test module that waits includes it, as the \
              crate has no crate-wide test module to hold it once"
)]
#[path = "../../../tests/util/timeouts.rs"]
mod timeouts;

/// How long something that must come is waited for.
fn soon() -> Duration {
    timeouts::scaled(timeouts::WAIT)
}

struct Setup {
    _dir: tempfile::TempDir,
    dirs: Dirs,
    shared: Arc<Mutex<Shared>>,
    wake: Wake,
    rings: Receiver<()>,
    woke: Receiver<Woke>,
    watch: Option<Watching>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let team = dir.path().join("team");
    let dirs = Dirs {
        inboxes: team.join("inboxes"),
        team,
        tasks: dir.path().join("tasks"),
        lead_inbox: "team-lead.json".into(),
        looks: None,
    };
    std::fs::create_dir_all(&dirs.inboxes).unwrap();
    std::fs::create_dir_all(&dirs.tasks).unwrap();
    let shared = Arc::new(Mutex::new(Shared::default()));
    let (wake, rings) = Wake::channel();
    let (tx, woke) = channel();
    let watch = start(&dirs, shared.clone(), Some(wake.clone()), move |w| {
        tx.send(w).is_ok()
    })
    .unwrap();
    let s = Setup {
        _dir: dir,
        dirs,
        shared,
        wake,
        rings,
        woke,
        watch: Some(watch),
    };
    assert_eq!(s.board(), (true, vec![]), "the board is read whole first");
    s
}

impl Setup {
    /// What the board's changes name, taken as the dialog's snapshot
    /// takes them (which rearms its ring).
    fn board(&self) -> (bool, Vec<u64>) {
        self.wake.taken();
        let (all, ids) = crate::lead::view::lock(&self.shared).board.take();
        (all, ids.into_iter().collect())
    }

    /// The dialog was rung (and the supervisor told nothing but to look).
    fn rung(&self, what: &str) {
        assert!(
            self.rings.recv_timeout(soon()).is_ok(),
            "{what}: the dialog was not rung"
        );
        let woke: Vec<Woke> = self.woke.try_iter().collect();
        assert!(
            !woke.contains(&Woke::LeadInbox),
            "{what}: the supervisor was made to read its inbox"
        );
    }

    /// The supervisor got `want` (and whatever else came with it).
    fn woke(&self, want: Woke, what: &str) {
        let deadline = std::time::Instant::now() + soon();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.woke.recv_timeout(left) {
                Ok(w) if w == want => return,
                Ok(_) => {}
                Err(e) => panic!("{what}: the supervisor never got {want:?} ({e})"),
            }
        }
    }

    /// Nothing `what` did woke anyone: a task written after it is the
    /// dialog's next ring, and the board names that task alone; the
    /// supervisor was told nothing.
    fn quiet(&self, what: &str) {
        std::fs::write(self.task(99), b"{}").unwrap();
        self.rung(&format!("{what}, then task 99"));
        assert_eq!(self.board(), (false, vec![99]), "{what} named a task");
        assert_eq!(
            self.woke.try_iter().collect::<Vec<_>>(),
            [],
            "{what} woke the supervisor"
        );
    }

    fn task(&self, n: u64) -> std::path::PathBuf {
        self.dirs.tasks.join(format!("{n}.json"))
    }
}

#[test]
fn every_kind_of_task_write_rings_the_dialog_and_names_the_task() {
    let s = setup();
    // swarm's write: a temp file renamed over the task.
    let tmp = s.dirs.tasks.join(".3.json.tmp.1");
    std::fs::write(&tmp, b"{}").unwrap();
    std::fs::rename(&tmp, s.task(3)).unwrap();
    s.rung("a task renamed into place");
    assert_eq!(s.board(), (false, vec![3]));
    // Claude Code's: the file rewritten in place.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(s.task(3))
        .unwrap();
    f.write_all(b"{\"id\":\"3\"}").unwrap();
    drop(f);
    s.rung("a task rewritten in place");
    assert_eq!(s.board(), (false, vec![3]));
    std::fs::write(s.task(4), b"{}").unwrap();
    s.rung("a task created");
    assert_eq!(s.board(), (false, vec![4]));
    std::fs::remove_file(s.task(3)).unwrap();
    s.rung("a task deleted");
    assert_eq!(s.board(), (false, vec![3]));
}

#[test]
fn reads_temp_files_and_locks_wake_nobody() {
    let s = setup();
    std::fs::write(s.task(5), b"{}").unwrap();
    s.rung("a task made");
    s.board();
    std::fs::write(s.dirs.inboxes.join("team-lead.json"), b"[]").unwrap();
    s.woke(Woke::LeadInbox, "the lead's inbox made");
    // The lead's own reads of what it was told about.
    std::fs::read(s.task(5)).unwrap();
    std::fs::read(s.dirs.inboxes.join("team-lead.json")).unwrap();
    // A writer's lock directories and a temp file not yet renamed.
    for dir in [&s.dirs.tasks, &s.dirs.inboxes] {
        std::fs::create_dir(dir.join("x.json.lock")).unwrap();
        std::fs::remove_dir(dir.join("x.json.lock")).unwrap();
        std::fs::write(dir.join(".x.json.tmp.2"), b"{}").unwrap();
    }
    s.quiet("reads, locks and temp files");
}

#[test]
fn the_leads_inbox_wakes_the_supervisor_another_inbox_only_the_dialog() {
    let s = setup();
    let tmp = s.dirs.inboxes.join(".team-lead.json.tmp.3");
    std::fs::write(&tmp, b"[]").unwrap();
    std::fs::rename(&tmp, s.dirs.inboxes.join("team-lead.json")).unwrap();
    s.woke(Woke::LeadInbox, "a message to the lead");
    std::fs::write(s.dirs.inboxes.join("bob.json"), b"[]").unwrap();
    s.rung("a message to bob (his unread count)");
    std::fs::write(s.dirs.team.join("config.json"), b"{}").unwrap();
    s.woke(Woke::Shown, "the roster written");
}

#[test]
fn the_board_directory_going_makes_every_refresh_read_it_whole() {
    let s = setup();
    std::fs::remove_dir(&s.dirs.tasks).unwrap();
    s.woke(Woke::Shown, "the board's directory removed");
    assert_eq!(s.board(), (true, vec![]));
    assert_eq!(s.board(), (true, vec![]), "and every time after");
}

#[test]
fn dropping_the_watch_ends_its_thread() {
    let mut s = setup();
    drop(s.watch.take());
    // The thread owned the supervisor's sender: it is gone with it.
    loop {
        match s.woke.recv_timeout(soon()) {
            Ok(_) => {}
            Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => panic!("the watcher's thread still runs"),
        }
    }
}

#[test]
fn a_burst_is_one_ring_and_one_message_at_most() {
    let mut board = BoardChanges::default();
    board.watched();
    board.take();
    let lead = OsStr::new("team-lead.json");
    let changes = Changes::Files(
        [
            (INBOXES, OsString::from("team-lead.json")),
            (INBOXES, OsString::from("bob.json")),
            (TASKS, OsString::from("7.json")),
            (TASKS, OsString::from("8.json")),
            (TEAM, OsString::from("config.json")),
        ]
        .into(),
    );
    assert_eq!(
        Batch::of(&changes, lead, &mut board),
        Batch {
            dialog: true,
            lead_inbox: true,
            supervisor: true,
        }
    );
    assert_eq!(board.take(), (false, [7, 8].into()));
    let only_lead = Changes::Files([(INBOXES, OsString::from("team-lead.json"))].into());
    assert_eq!(
        Batch::of(&only_lead, lead, &mut board),
        Batch {
            lead_inbox: true,
            ..Batch::default()
        },
        "the lead's own inbox rings no dialog"
    );
    assert_eq!(
        Batch::of(&Changes::All, lead, &mut board),
        Batch {
            dialog: true,
            lead_inbox: true,
            supervisor: true,
        }
    );
    assert!(board.take().0, "what no file names: the board read whole");
}

#[test]
fn a_polling_lead_reads_the_board_whole_and_still_hears_its_inbox() {
    let dir = tempfile::tempdir().unwrap();
    let team = dir.path().join("team");
    let dirs = [team.join("inboxes"), team.clone(), dir.path().join("tasks")];
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    let shared = Arc::new(Mutex::new(Shared::default()));
    let (tx, woke) = channel();
    let watcher = Arc::new(InboxWatcher::polling_over(&dirs, "asked to poll"));
    let reader = watcher.clone();
    let feed = shared.clone();
    std::thread::spawn(move || {
        run(
            &reader,
            OsStr::new("team-lead.json"),
            &feed,
            None,
            &move |w| tx.send(w).is_ok(),
        )
    });
    std::fs::write(dirs[INBOXES].join("team-lead.json"), b"[]").unwrap();
    let deadline = std::time::Instant::now() + soon();
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match woke.recv_timeout(left) {
            Ok(Woke::LeadInbox) => break,
            Ok(Woke::Shown) => {}
            Err(e) => panic!("the polling lead never read its inbox ({e})"),
        }
    }
    let (all, _) = crate::lead::view::lock(&shared).board.take();
    assert!(all, "nothing names the board's changes to a poller");
    watcher.close();
}
