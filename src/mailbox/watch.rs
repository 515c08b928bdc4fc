//! Wake-ups when a file of the team changes: swarm's one file-watching
//! stack. [`InboxWatcher`] watches one or more directories (a team's
//! inboxes, its roster's directory, its task list) and says which counted
//! files changed. The lead's watcher (inboxes, roster and board in one,
//! `lead::watch`), `swarm inbox --follow` and the other waits on an inbox,
//! and the team watcher of the teammate runtimes (`teammate::wake`) are
//! each one. (`lead::view::watch_board`, on `notify` directly, is left
//! over: nothing but its own test calls it.)
//!
//! Its events come from one source per platform, chosen at one line
//! (`PlatformEvents`): on Linux one inotify instance asked only for the
//! ends of changes (`linux`: a file closed after writing, renamed in or
//! out, deleted, a directory going), whose waits are `poll(2)` in the
//! waiter's own thread; elsewhere `notify` (FSEvents, kqueue; `portable`),
//! whose thread passes every event on: there is no inotify there, and
//! polling would make every write by Claude Code wait up to a second. The
//! lead's CPU per task update at 10,000 tasks is why Linux does not go
//! through `notify` (9af977f: its watchers were woken by every open and
//! write call). When no source can
//! be created (no inotify instance left) it polls file metadata once a
//! second, keeping the reason ([`InboxWatcher::polling_reason`]) so the
//! fallback is never silent. Either way a waiting thread sleeps while
//! nothing happens: no busy polling.
//!
//! Only `*.json` files count (inboxes, the roster and task files): lock
//! directories, temp files, `.highwatermark` and quarantined copies beside
//! them are ignored.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(any(not(target_os = "linux"), test))]
mod portable;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// This platform's source of file events: inotify on Linux, `notify`
/// elsewhere.
#[cfg(target_os = "linux")]
use linux::Events as PlatformEvents;
#[cfg(not(target_os = "linux"))]
use portable::Events as PlatformEvents;

/// The suite's one timeout knob (`SWARM_TEST_TIMEOUT_SCALE`, or x3 on CI),
/// included from the integration tests' util/ as the backend contract suite
/// includes it, for this module's tests and the mailbox's.
#[cfg(test)]
#[allow(dead_code)]
#[allow(
    clippy::duplicate_mod,
    reason = "one file owns the knob; each test module that waits includes it, as the \
              crate has no crate-wide test module to hold it once"
)]
#[path = "../../tests/util/timeouts.rs"]
pub(super) mod timeouts;

/// How often the fallback looks at the directories.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// A source of file events over a watcher's directories (by index).
trait Source: Send + Sync {
    /// The next burst of changes to counted files, within `timeout`;
    /// `None` when it passed first, or once the source is closed.
    fn next(&self, timeout: Duration) -> Option<Changes>;
    /// Whether directory `dir` still has its watch (not after it went, nor
    /// after [`Source::close`]).
    fn watching(&self, dir: usize) -> bool;
    /// Ends the watch: a wait in progress returns `None` at once, as does
    /// every later one.
    fn close(&self);
}

/// Wakes its owner when a `*.json` file in one of its directories changes.
pub struct InboxWatcher {
    dirs: Vec<PathBuf>,
    how: How,
    /// Set by [`InboxWatcher::close`]; the poller's naps wait on `woken`.
    closed: Mutex<bool>,
    woken: Condvar,
}

enum How {
    Events(Box<dyn Source>, Option<Looks>),
    Poll {
        last: Mutex<Snapshot>,
        /// Why this watcher polls.
        why: String,
    },
}

/// Looks beside the events, for writes this kernel reports no event of:
/// a team with members on other machines shares its files over a network
/// filesystem, whose writes made there raise no inotify event here.
struct Looks {
    last: Mutex<Snapshot>,
    every: Duration,
    next: Mutex<Instant>,
}

/// One changed file: the index of its directory and its file name.
pub type Changed = (usize, OsString);

/// What [`InboxWatcher::changes`] saw: the files that changed, or `All`
/// when the watcher cannot tell (an overflow, an error, a watched
/// directory going).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    Files(BTreeSet<Changed>),
    All,
}

/// Identity of every counted file: (mtime ns, size, inode).
type Snapshot = BTreeMap<Changed, (i128, u64, u64)>;

/// This platform's event source over `dirs`, or why there is none.
fn events(dirs: &[PathBuf]) -> Result<Box<dyn Source>, String> {
    refused_by_fault()?;
    match PlatformEvents::new(dirs) {
        Ok(e) => Ok(Box::new(e)),
        Err(e) => Err(e.to_string()),
    }
}

impl InboxWatcher {
    /// Watches `dir` (which must exist), polling if no events can be had.
    pub fn new(dir: &Path) -> InboxWatcher {
        Self::over(&[dir.to_path_buf()])
    }

    /// Watches every directory of `dirs` (which must exist) with one
    /// source of events (one inotify instance), polling if none can be had.
    pub fn over(dirs: &[PathBuf]) -> InboxWatcher {
        Self::over_looking(dirs, None)
    }

    /// Like [`InboxWatcher::over`], and with `looks` it also looks at the
    /// directories itself that often, for writes no event here reports
    /// (a team with members on other machines, DESIGN §13). A file found
    /// changed by a look may have had its event already: it is reported
    /// again (a reader reads it once more).
    pub fn over_looking(dirs: &[PathBuf], looks: Option<Duration>) -> InboxWatcher {
        let looks = looks.map(|every| Looks {
            last: Mutex::new(snapshot(dirs)),
            every,
            next: Mutex::new(Instant::now() + every),
        });
        match events(dirs) {
            Ok(source) => Self::with(dirs, How::Events(source, looks)),
            Err(e) => {
                let why = format!("cannot watch files ({e})");
                tracing::warn!(dirs = ?dirs, %why, "polling every second");
                Self::polling_over(dirs, &why)
            }
        }
    }

    fn with(dirs: &[PathBuf], how: How) -> InboxWatcher {
        InboxWatcher {
            dirs: dirs.to_vec(),
            how,
            closed: Mutex::new(false),
            woken: Condvar::new(),
        }
    }

    /// A watcher of `dir` that only polls (what [`InboxWatcher::new`] falls
    /// back to).
    pub fn polling(dir: &Path) -> InboxWatcher {
        Self::polling_over(&[dir.to_path_buf()], "asked to poll")
    }

    /// A watcher of `dirs` that only polls, because of `why`.
    pub fn polling_over(dirs: &[PathBuf], why: &str) -> InboxWatcher {
        let last = Mutex::new(snapshot(dirs));
        Self::with(
            dirs,
            How::Poll {
                last,
                why: why.to_owned(),
            },
        )
    }

    /// Whether this watcher polls instead of receiving events.
    pub fn is_polling(&self) -> bool {
        matches!(self.how, How::Poll { .. })
    }

    /// Why this watcher polls, if it does.
    pub fn polling_reason(&self) -> Option<&str> {
        match &self.how {
            How::Poll { why, .. } => Some(why),
            How::Events(..) => None,
        }
    }

    /// The first watched directory.
    pub fn dir(&self) -> &Path {
        &self.dirs[0]
    }

    /// Whether the events of directory `dir` (its index in the watcher's
    /// directories) still come: false once that directory went (its
    /// changes then come as [`Changes::All`]) or the watcher closed. A
    /// poller looks at every directory each time, gone or back: always
    /// true until closed.
    pub fn is_watching(&self, dir: usize) -> bool {
        match &self.how {
            How::Events(source, _) => source.watching(dir),
            How::Poll { .. } => dir < self.dirs.len() && !self.is_closed(),
        }
    }

    /// Ends the watch, from any thread: a wait in progress returns at
    /// once, and every later one returns "nothing changed" at once.
    pub fn close(&self) {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.woken.notify_all();
        if let How::Events(source, _) = &self.how {
            source.close();
        }
    }

    /// Whether [`InboxWatcher::close`] was called.
    pub fn is_closed(&self) -> bool {
        *self.closed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Blocks until any counted file changes (`true`) or `timeout` passes
    /// (`false`). Changes that happened since the previous call count, so
    /// none is missed between two waits.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.changes(timeout).is_some()
    }

    /// Like [`InboxWatcher::wait`], for one file name (e.g. `bob.json`, the
    /// file name of `Root::inbox(team, "bob")`) in any watched directory.
    pub fn wait_for(&self, file_name: &OsStr, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.changes(left) {
                None => return false,
                Some(Changes::All) => return true,
                Some(Changes::Files(f)) if f.iter().any(|(_, n)| n == file_name) => return true,
                Some(Changes::Files(_)) if left.is_zero() => return false,
                Some(Changes::Files(_)) => {}
            }
        }
    }

    /// Blocks until counted files change and says which (a burst is one
    /// answer), or `None` once `timeout` passes (at once once closed).
    pub fn changes(&self, timeout: Duration) -> Option<Changes> {
        let deadline = Instant::now() + timeout;
        match &self.how {
            How::Events(source, Some(looks)) => loop {
                // Its look when due, even while events keep coming.
                let next = *looks.next.lock().unwrap_or_else(PoisonError::into_inner);
                if Instant::now() >= next {
                    *looks.next.lock().unwrap_or_else(PoisonError::into_inner) =
                        Instant::now() + looks.every;
                    let now = snapshot(&self.dirs);
                    let mut last = looks.last.lock().unwrap_or_else(PoisonError::into_inner);
                    let files = differences(&last, &now);
                    *last = now;
                    if !files.is_empty() {
                        return Some(Changes::Files(files));
                    }
                    continue;
                }
                let wait = deadline.min(next).saturating_duration_since(Instant::now());
                if let Some(got) = source.next(wait) {
                    return Some(got);
                }
                if self.is_closed() || Instant::now() >= deadline {
                    return None;
                }
            },
            How::Events(source, None) => {
                let got = source.next(timeout);
                #[cfg(test)]
                wakes::count(|w| match got {
                    Some(_) => w.events += 1,
                    None => w.timeouts += 1,
                });
                got
            }
            How::Poll { last, .. } => loop {
                if self.is_closed() {
                    return None;
                }
                let now = snapshot(&self.dirs);
                #[cfg(test)]
                wakes::count(|w| w.looks += 1);
                {
                    let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
                    let files = differences(&last, &now);
                    if !files.is_empty() {
                        *last = now;
                        #[cfg(test)]
                        wakes::count(|w| w.polled += 1);
                        return Some(Changes::Files(files));
                    }
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    #[cfg(test)]
                    wakes::count(|w| w.timeouts += 1);
                    return None;
                }
                #[cfg(test)]
                wakes::count(|w| w.naps += 1);
                let closed = self.closed.lock().unwrap_or_else(PoisonError::into_inner);
                drop(
                    self.woken
                        .wait_timeout_while(closed, left.min(POLL_EVERY), |c| !*c)
                        .unwrap_or_else(PoisonError::into_inner),
                );
            },
        }
    }
}

impl std::fmt::Debug for InboxWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxWatcher")
            .field("dirs", &self.dirs)
            .field("polling", &self.polling_reason())
            .finish()
    }
}

/// Whether a watcher of `dir` can be created now (`Err` says why not),
/// made and dropped at once.
pub fn watch_available(dir: &Path) -> Result<(), String> {
    events(&[dir.to_path_buf()]).map(drop)
}

/// With the `fault-injection` feature (test builds only),
/// `SWARM_FAULT_NO_WATCH=1` makes every watcher creation fail, as an
/// exhausted `fs.inotify.max_user_instances` does.
fn refused_by_fault() -> Result<(), String> {
    #[cfg(feature = "fault-injection")]
    if std::env::var_os("SWARM_FAULT_NO_WATCH").is_some_and(|v| v == "1") {
        return Err("no inotify instance left (SWARM_FAULT_NO_WATCH=1)".into());
    }
    Ok(())
}

/// `<name>.json`, not a temp file, lock or quarantined copy beside it.
fn counts(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.ends_with(".json") && !name.starts_with('.')
}

fn differences(a: &Snapshot, b: &Snapshot) -> BTreeSet<Changed> {
    let mut out: BTreeSet<Changed> = a
        .iter()
        .filter(|(k, v)| b.get(*k) != Some(*v))
        .map(|(k, _)| k.clone())
        .collect();
    out.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    out
}

fn snapshot(dirs: &[PathBuf]) -> Snapshot {
    let mut snap = Snapshot::new();
    for (i, dir) in dirs.iter().enumerate() {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            if !counts(&name) {
                continue;
            }
            if let Ok(m) = entry.metadata() {
                let mtime = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
                snap.insert((i, name), (mtime, m.size(), m.ino()));
            }
        }
    }
    snap
}

/// Test hook: how the waits of the calling thread ended, so a test can
/// check that a waiter was woken by the change it waited for (a file
/// event, or the poller's look) and not by its timeout, without timing it.
/// Per thread (a wait runs on its caller's thread), so tests running in
/// parallel never see each other's waits.
#[cfg(test)]
pub(super) mod wakes {
    use std::cell::Cell;

    /// Counts since the thread's last [`take`].
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct Wakes {
        /// Waits ended by file events (of inotify or `notify`).
        pub events: u32,
        /// Waits ended by the poller finding a file changed.
        pub polled: u32,
        /// Directory snapshots the poller compared.
        pub looks: u32,
        /// Sleeps of the poller between two looks.
        pub naps: u32,
        /// Waits that ended at their timeout with nothing changed.
        pub timeouts: u32,
    }

    thread_local! {
        static WAKES: Cell<Wakes> = const {
            Cell::new(Wakes {
                events: 0,
                polled: 0,
                looks: 0,
                naps: 0,
                timeouts: 0,
            })
        };
    }

    pub(super) fn count(f: impl FnOnce(&mut Wakes)) {
        WAKES.with(|c| {
            let mut w = c.get();
            f(&mut w);
            c.set(w);
        });
    }

    /// This thread's counts, reset to zero.
    pub fn take() -> Wakes {
        WAKES.with(Cell::take)
    }
}

#[cfg(test)]
mod tests {
    use super::wakes::{self, Wakes};
    use super::*;
    use std::io::Write;

    fn rewrite(path: &Path, bytes: &[u8]) {
        crate::atomic_file::write_atomic(path, bytes).unwrap();
    }

    /// How long something that must come is waited for.
    fn budget() -> Duration {
        timeouts::scaled(timeouts::WAIT)
    }

    /// A watcher of `dirs` on `notify` (what other platforms use; on Linux
    /// `notify` runs on inotify).
    fn on_portable(dirs: &[PathBuf]) -> InboxWatcher {
        let source = portable::Events::new(dirs).expect("a notify watcher");
        InboxWatcher::with(dirs, How::Events(Box::new(source), None))
    }

    /// A source that reports nothing: what a network filesystem's writes
    /// made on another machine raise here.
    struct Deaf;

    impl Source for Deaf {
        fn next(&self, timeout: Duration) -> Option<Changes> {
            std::thread::sleep(timeout);
            None
        }
        fn watching(&self, _: usize) -> bool {
            true
        }
        fn close(&self) {}
    }

    /// A write no event reports is found by the watcher's own look, within
    /// its period, when it looks (a team with members on other machines);
    /// without looks it is never found. A look is made even while events
    /// keep coming.
    #[test]
    fn a_write_no_event_reports_is_found_by_the_watchers_own_looks() {
        let t = tempfile::tempdir().unwrap();
        let dirs = [t.path().to_path_buf()];
        let looking = Looks {
            last: Mutex::new(snapshot(&dirs)),
            every: Duration::from_millis(100),
            next: Mutex::new(Instant::now() + Duration::from_millis(100)),
        };
        let w = InboxWatcher::with(&dirs, How::Events(Box::new(Deaf), Some(looking)));
        let deaf = InboxWatcher::with(&dirs, How::Events(Box::new(Deaf), None));
        assert_eq!(w.changes(Duration::from_millis(300)), None, "nothing yet");
        rewrite(&t.path().join("far.json"), b"[]");
        next_is(&w, &["far.json"], "found by a look");
        assert_eq!(
            deaf.changes(Duration::from_millis(300)),
            None,
            "no look, no event: never found"
        );
        // Events all the time: the look still comes when due.
        struct Chatty;
        impl Source for Chatty {
            fn next(&self, _: Duration) -> Option<Changes> {
                std::thread::sleep(Duration::from_millis(5));
                Some(Changes::Files(BTreeSet::from([(
                    0,
                    OsString::from("x.json"),
                )])))
            }
            fn watching(&self, _: usize) -> bool {
                true
            }
            fn close(&self) {}
        }
        let looking = Looks {
            last: Mutex::new(snapshot(&dirs)),
            every: Duration::from_millis(100),
            next: Mutex::new(Instant::now() + Duration::from_millis(100)),
        };
        let chatty = InboxWatcher::with(&dirs, How::Events(Box::new(Chatty), Some(looking)));
        rewrite(&t.path().join("far.json"), b"[1]");
        let far = Changes::Files(BTreeSet::from([(0, OsString::from("far.json"))]));
        let found = (0..200).any(|_| chatty.changes(budget()) == Some(far.clone()));
        assert!(found, "the look came between the events");
    }

    /// Each kind of watcher (this platform's events, `notify`'s, the
    /// poller), each on a fresh directory.
    fn every_kind() -> Vec<(tempfile::TempDir, InboxWatcher)> {
        let fresh = || tempfile::tempdir().unwrap();
        let (a, b, c) = (fresh(), fresh(), fresh());
        let (wa, wb, wc) = (
            InboxWatcher::new(a.path()),
            on_portable(&[b.path().to_path_buf()]),
            InboxWatcher::polling(c.path()),
        );
        vec![(a, wa), (b, wb), (c, wc)]
    }

    /// The changes `w` reports next: exactly the counted `files` of its
    /// first directory (whatever else happened before wakes nobody).
    fn next_is(w: &InboxWatcher, files: &[&str], what: &str) {
        let want = Changes::Files(files.iter().map(|f| (0, OsString::from(f))).collect());
        assert_eq!(w.changes(budget()), Some(want), "{what} ({w:?})");
    }

    #[test]
    fn a_rewritten_inbox_wakes_the_watcher_at_once_and_quiet_times_out() {
        for (t, w) in every_kind() {
            assert!(
                !w.wait(Duration::from_millis(50)),
                "nothing changed yet ({w:?})"
            );
            assert_eq!(wakes::take().timeouts, 1, "{w:?}");
            rewrite(&t.path().join("bob.json"), b"[]");
            // The budget only bounds a failure: the change ends the wait.
            assert!(
                w.wait(budget()),
                "change not seen within {:?} ({w:?})",
                budget()
            );
            // Ended by the change itself: the event it raised, or (polling)
            // the look the wait starts with, before any nap.
            let woken = if w.is_polling() {
                Wakes {
                    polled: 1,
                    looks: 1,
                    ..Wakes::default()
                }
            } else {
                Wakes {
                    events: 1,
                    ..Wakes::default()
                }
            };
            assert_eq!(wakes::take(), woken, "{w:?}");
        }
        let t = tempfile::tempdir().unwrap();
        if InboxWatcher::new(t.path()).is_polling() {
            eprintln!("note: no file watcher here; the polling fallback is in use");
        }
    }

    #[test]
    fn locks_temp_files_copies_and_reads_do_not_wake_anyone() {
        for (t, w) in every_kind() {
            rewrite(&t.path().join("bob.json"), b"[]");
            next_is(&w, &["bob.json"], "bob's inbox made");
            std::fs::create_dir(t.path().join("bob.json.lock")).unwrap();
            std::fs::write(t.path().join("bob.json.corrupt-1"), b"x").unwrap();
            std::fs::write(t.path().join(".bob.json.tmp.1"), b"x").unwrap();
            std::fs::remove_dir(t.path().join("bob.json.lock")).unwrap();
            std::fs::remove_file(t.path().join("bob.json.corrupt-1")).unwrap();
            std::fs::remove_file(t.path().join(".bob.json.tmp.1")).unwrap();
            // A reader's own look at what it was told about.
            std::fs::read(t.path().join("bob.json")).unwrap();
            // The next change reported is the next counted one alone.
            rewrite(&t.path().join("carol.json"), b"[]");
            next_is(&w, &["carol.json"], "locks, temp files, copies and reads");
        }
    }

    #[test]
    fn a_file_rewritten_in_place_or_removed_wakes_the_watcher() {
        for (t, w) in every_kind() {
            let bob = t.path().join("bob.json");
            rewrite(&bob, b"[]");
            next_is(&w, &["bob.json"], "bob's inbox made");
            // Claude Code's write: the file truncated and written in place.
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&bob)
                .unwrap();
            f.write_all(b"[{}]").unwrap();
            drop(f);
            next_is(&w, &["bob.json"], "bob's inbox rewritten in place");
            std::fs::remove_file(&bob).unwrap();
            next_is(&w, &["bob.json"], "bob's inbox removed");
        }
    }

    #[test]
    fn wait_for_ignores_other_inboxes() {
        for (t, w) in every_kind() {
            rewrite(&t.path().join("alice.json"), b"[]");
            assert!(
                !w.wait_for(OsStr::new("bob.json"), Duration::from_millis(1200)),
                "{w:?}"
            );
            rewrite(&t.path().join("bob.json"), b"[]");
            assert!(w.wait_for(OsStr::new("bob.json"), budget()), "{w:?}");
        }
    }

    #[test]
    fn one_watcher_names_the_directory_of_each_change() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dirs = [a.path().to_path_buf(), b.path().to_path_buf()];
        for w in [InboxWatcher::over(&dirs), on_portable(&dirs)] {
            rewrite(&b.path().join("3.json"), b"{}");
            let want = Changes::Files([(1, OsString::from("3.json"))].into());
            assert_eq!(w.changes(budget()), Some(want), "{w:?}");
            std::fs::remove_file(b.path().join("3.json")).unwrap();
            assert!(w.changes(budget()).is_some(), "{w:?}");
        }
    }

    #[test]
    fn a_watched_directory_going_is_every_change_and_ends_its_watch_only() {
        let parent = tempfile::tempdir().unwrap();
        for (i, make) in [
            InboxWatcher::over as fn(&[PathBuf]) -> InboxWatcher,
            on_portable,
        ]
        .into_iter()
        .enumerate()
        {
            let (kept, going) = (
                parent.path().join(format!("kept{i}")),
                parent.path().join(format!("going{i}")),
            );
            std::fs::create_dir(&kept).unwrap();
            std::fs::create_dir(&going).unwrap();
            let w = make(&[kept.clone(), going.clone()]);
            assert!(w.is_watching(0) && w.is_watching(1), "{w:?}");
            std::fs::remove_dir(&going).unwrap();
            assert_eq!(w.changes(budget()), Some(Changes::All), "{w:?}");
            assert!(w.is_watching(0) && !w.is_watching(1), "{w:?}");
            rewrite(&kept.join("bob.json"), b"[]");
            assert!(
                w.wait_for(OsStr::new("bob.json"), budget()),
                "the other directory is still watched ({w:?})"
            );
        }
    }

    /// A thread waiting (for an hour) on each kind of watcher returns
    /// once the watcher is closed, and later waits return at once.
    #[test]
    fn closing_a_watcher_ends_a_wait_in_progress() {
        for (_t, w) in every_kind() {
            let w = std::sync::Arc::new(w);
            let (done, waited) = std::sync::mpsc::channel();
            let waiter = std::thread::spawn({
                let w = w.clone();
                move || {
                    let got = w.changes(Duration::from_secs(3600));
                    done.send(()).unwrap();
                    (got, w.changes(Duration::from_secs(3600)))
                }
            });
            w.close();
            assert!(
                waited.recv_timeout(budget()).is_ok(),
                "a closed watcher still waits ({w:?})"
            );
            let (got, later) = waiter.join().unwrap();
            assert_eq!((got, later), (None, None), "{w:?}");
            assert!(w.is_closed() && !w.is_watching(0), "{w:?}");
        }
    }
}
