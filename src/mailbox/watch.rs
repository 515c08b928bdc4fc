//! Wake-ups when a file of the team changes: [`InboxWatcher`] watches one
//! or more directories (a team's inboxes, its task list) with `notify`
//! (inotify on Linux, FSEvents/kqueue or notify's own poller elsewhere) and
//! falls back to polling file metadata once a second when no watcher can be
//! created, keeping the reason ([`InboxWatcher::polling_reason`]) so the
//! fallback is never silent. Either way a waiting thread sleeps while
//! nothing happens: no busy polling. This is swarm's one watcher wrapper:
//! the lead, `swarm inbox --follow` and the team watcher of the teammate
//! runtimes (`teammate::wake`) all use it.
//!
//! Only `*.json` files count (inboxes and task files): lock directories,
//! temp files, `.highwatermark` and quarantined copies beside them are
//! ignored.

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

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

/// What a watcher's callback was doing when its receiver is gone (the
/// watcher is being dropped: nobody is left to tell).
const PASSING_ON: &str = "passing an inbox change on";

/// How often the fallback looks at the directories.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// Wakes its owner when a `*.json` file in one of its directories changes.
pub struct InboxWatcher {
    dirs: Vec<PathBuf>,
    how: How,
}

enum How {
    Notify {
        /// Kept alive for as long as the watcher: dropping it stops the events.
        _watcher: RecommendedWatcher,
        /// What changed; `None` when unknown (an error or an overflow),
        /// which counts as every file changing.
        changes: Receiver<Option<Changed>>,
    },
    Poll {
        last: Mutex<Snapshot>,
        /// Why this watcher polls.
        why: String,
    },
}

/// One changed file: the index of its directory and its file name.
pub type Changed = (usize, OsString);

/// What [`InboxWatcher::changes`] saw: the files that changed, or `All`
/// when the watcher cannot tell (an overflow, an error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Changes {
    Files(BTreeSet<Changed>),
    All,
}

/// Identity of every counted file: (mtime ns, size, inode).
type Snapshot = BTreeMap<Changed, (i128, u64, u64)>;

impl InboxWatcher {
    /// Watches `dir` (which must exist), polling if `notify` cannot.
    pub fn new(dir: &Path) -> InboxWatcher {
        Self::over(&[dir.to_path_buf()])
    }

    /// Watches every directory of `dirs` (which must exist) with one
    /// watcher (one inotify instance), polling if `notify` cannot.
    pub fn over(dirs: &[PathBuf]) -> InboxWatcher {
        match Self::notify(dirs) {
            Ok(w) => w,
            Err(e) => {
                let why = format!("cannot watch files ({e})");
                tracing::warn!(dirs = ?dirs, %why, "polling every second");
                Self::polling_over(dirs, &why)
            }
        }
    }

    fn notify(dirs: &[PathBuf]) -> notify::Result<InboxWatcher> {
        refused_by_fault()?;
        let (tx, changes) = channel();
        let owned = dirs.to_vec();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
                Ok(event) => {
                    if matches!(event.kind, EventKind::Access(_)) {
                        return;
                    }
                    for p in &event.paths {
                        if let Some(c) = changed_of(&owned, p) {
                            crate::dropped::ignore(tx.send(Some(c)), PASSING_ON);
                        }
                    }
                    if event.need_rescan() {
                        crate::dropped::ignore(tx.send(None), PASSING_ON);
                    }
                }
                Err(_) => {
                    crate::dropped::ignore(tx.send(None), PASSING_ON);
                }
            })?;
        for d in dirs {
            watcher.watch(d, RecursiveMode::NonRecursive)?;
        }
        Ok(InboxWatcher {
            dirs: dirs.to_vec(),
            how: How::Notify {
                _watcher: watcher,
                changes,
            },
        })
    }

    /// A watcher of `dir` that only polls (what [`InboxWatcher::new`] falls
    /// back to).
    pub fn polling(dir: &Path) -> InboxWatcher {
        Self::polling_over(&[dir.to_path_buf()], "asked to poll")
    }

    /// A watcher of `dirs` that only polls, because of `why`.
    pub fn polling_over(dirs: &[PathBuf], why: &str) -> InboxWatcher {
        let last = Mutex::new(snapshot(dirs));
        InboxWatcher {
            dirs: dirs.to_vec(),
            how: How::Poll {
                last,
                why: why.to_owned(),
            },
        }
    }

    /// Whether this watcher polls instead of receiving events.
    pub fn is_polling(&self) -> bool {
        matches!(self.how, How::Poll { .. })
    }

    /// Why this watcher polls, if it does.
    pub fn polling_reason(&self) -> Option<&str> {
        match &self.how {
            How::Poll { why, .. } => Some(why),
            How::Notify { .. } => None,
        }
    }

    /// The first watched directory.
    pub fn dir(&self) -> &Path {
        &self.dirs[0]
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
    /// answer), or `None` once `timeout` passes.
    pub fn changes(&self, timeout: Duration) -> Option<Changes> {
        let deadline = Instant::now() + timeout;
        match &self.how {
            How::Notify { changes, .. } => {
                let first = match changes.recv_timeout(timeout) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => {
                        #[cfg(test)]
                        wakes::count(|w| w.timeouts += 1);
                        return None;
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        std::thread::sleep(timeout);
                        #[cfg(test)]
                        wakes::count(|w| w.timeouts += 1);
                        return None;
                    }
                };
                #[cfg(test)]
                wakes::count(|w| w.events += 1);
                // Coalesce the burst: every queued change happened before
                // the caller's next read, which will see it.
                let mut files = BTreeSet::new();
                let mut all = false;
                for c in std::iter::once(first).chain(changes.try_iter()) {
                    match c {
                        Some(c) => {
                            files.insert(c);
                        }
                        None => all = true,
                    }
                }
                Some(if all {
                    Changes::All
                } else {
                    Changes::Files(files)
                })
            }
            How::Poll { last, .. } => loop {
                let now = snapshot(&self.dirs);
                #[cfg(test)]
                wakes::count(|w| w.looks += 1);
                {
                    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
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
                std::thread::sleep(left.min(POLL_EVERY));
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
    match InboxWatcher::notify(&[dir.to_path_buf()]) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// With the `fault-injection` feature (test builds only),
/// `SWARM_FAULT_NO_WATCH=1` makes every watcher creation fail, as an
/// exhausted `fs.inotify.max_user_instances` does.
fn refused_by_fault() -> notify::Result<()> {
    #[cfg(feature = "fault-injection")]
    if std::env::var_os("SWARM_FAULT_NO_WATCH").is_some_and(|v| v == "1") {
        return Err(notify::Error::generic(
            "no inotify instance left (SWARM_FAULT_NO_WATCH=1)",
        ));
    }
    Ok(())
}

/// The counted file `path` is, in one of `dirs`.
fn changed_of(dirs: &[PathBuf], path: &Path) -> Option<Changed> {
    let name = path.file_name().filter(|n| counts(n))?;
    let parent = path.parent()?;
    let i = dirs.iter().position(|d| d == parent).unwrap_or(0);
    Some((i, name.to_owned()))
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
/// check that a waiter was woken by the change it waited for (a `notify`
/// event, or the poller's look) and not by its timeout, without timing it.
/// Per thread (a wait runs on its caller's thread), so tests running in
/// parallel never see each other's waits.
#[cfg(test)]
pub(super) mod wakes {
    use std::cell::Cell;

    /// Counts since the thread's last [`take`].
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct Wakes {
        /// Waits ended by a `notify` event.
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

    fn rewrite(path: &Path, bytes: &[u8]) {
        crate::atomic_file::write_atomic(path, bytes).unwrap();
    }

    /// An event-driven and a polling watcher, each on a fresh directory.
    fn both() -> [(tempfile::TempDir, InboxWatcher); 2] {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (wa, wb) = (InboxWatcher::new(a.path()), InboxWatcher::polling(b.path()));
        [(a, wa), (b, wb)]
    }

    #[test]
    fn a_rewritten_inbox_wakes_the_watcher_at_once_and_quiet_times_out() {
        for (t, w) in both() {
            assert!(
                !w.wait(Duration::from_millis(50)),
                "nothing changed yet ({w:?})"
            );
            assert_eq!(wakes::take().timeouts, 1, "{w:?}");
            rewrite(&t.path().join("bob.json"), b"[]");
            // The budget only bounds a failure: the change ends the wait.
            let budget = timeouts::scaled(timeouts::WAIT);
            assert!(w.wait(budget), "change not seen within {budget:?} ({w:?})");
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
    fn locks_temp_files_and_copies_do_not_wake_anyone() {
        for (t, w) in both() {
            std::fs::create_dir(t.path().join("bob.json.lock")).unwrap();
            std::fs::write(t.path().join("bob.json.corrupt-1"), b"x").unwrap();
            std::fs::remove_dir(t.path().join("bob.json.lock")).unwrap();
            std::fs::remove_file(t.path().join("bob.json.corrupt-1")).unwrap();
            assert!(!w.wait(Duration::from_millis(300)), "{w:?}");
        }
    }

    #[test]
    fn wait_for_ignores_other_inboxes() {
        for (t, w) in both() {
            rewrite(&t.path().join("alice.json"), b"[]");
            assert!(
                !w.wait_for(OsStr::new("bob.json"), Duration::from_millis(1200)),
                "{w:?}"
            );
            rewrite(&t.path().join("bob.json"), b"[]");
            assert!(
                w.wait_for(OsStr::new("bob.json"), Duration::from_secs(5)),
                "{w:?}"
            );
        }
    }
}
