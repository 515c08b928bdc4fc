//! Wake-ups when an inbox changes: [`InboxWatcher`] watches a team's
//! inboxes directory with `notify` (inotify on Linux, FSEvents/kqueue or
//! notify's own poller elsewhere) and falls back to polling file metadata
//! once a second when no watcher can be created. Either way a waiting
//! thread sleeps while nothing happens: no busy polling.
//!
//! Only inbox files (`*.json`) count: lock directories, temp files and
//! quarantined copies beside them are ignored.

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How often the fallback looks at the directory.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// Wakes its owner when an inbox file in one directory changes.
pub struct InboxWatcher {
    dir: PathBuf,
    how: How,
}

enum How {
    Notify {
        /// Kept alive for as long as the watcher: dropping it stops the events.
        _watcher: RecommendedWatcher,
        /// File name of the inbox that changed; `None` when unknown (an error
        /// or an overflow), which wakes every waiter.
        changes: Receiver<Option<OsString>>,
    },
    Poll {
        last: Mutex<Snapshot>,
    },
}

/// Identity of every inbox file: (mtime ns, size, inode).
type Snapshot = BTreeMap<OsString, (i128, u64, u64)>;

impl InboxWatcher {
    /// Watches `dir` (which must exist), polling if `notify` cannot.
    pub fn new(dir: &Path) -> InboxWatcher {
        match Self::notify(dir) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot watch inboxes; polling every second");
                Self::polling(dir)
            }
        }
    }

    fn notify(dir: &Path) -> notify::Result<InboxWatcher> {
        let (tx, changes) = channel();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
                Ok(event) => {
                    if matches!(event.kind, EventKind::Access(_)) {
                        return;
                    }
                    for p in &event.paths {
                        if let Some(name) = p.file_name().filter(|n| is_inbox_file(n)) {
                            let _ = tx.send(Some(name.to_owned()));
                        }
                    }
                    if event.need_rescan() {
                        let _ = tx.send(None);
                    }
                }
                Err(_) => {
                    let _ = tx.send(None);
                }
            })?;
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(InboxWatcher {
            dir: dir.to_path_buf(),
            how: How::Notify {
                _watcher: watcher,
                changes,
            },
        })
    }

    /// A watcher that only polls (what [`InboxWatcher::new`] falls back to).
    pub fn polling(dir: &Path) -> InboxWatcher {
        let last = Mutex::new(snapshot(dir));
        InboxWatcher {
            dir: dir.to_path_buf(),
            how: How::Poll { last },
        }
    }

    /// Whether this watcher polls instead of receiving events.
    pub fn is_polling(&self) -> bool {
        matches!(self.how, How::Poll { .. })
    }

    /// The watched directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Blocks until any inbox file in the directory changes (`true`) or
    /// `timeout` passes (`false`). Changes that happened since the previous
    /// call count, so none is missed between two waits.
    pub fn wait(&self, timeout: Duration) -> bool {
        self.wait_matching(timeout, None)
    }

    /// Like [`InboxWatcher::wait`], for one inbox file (e.g. `bob.json`, the
    /// file name of `Root::inbox(team, "bob")`).
    pub fn wait_for(&self, file_name: &OsStr, timeout: Duration) -> bool {
        self.wait_matching(timeout, Some(file_name))
    }

    fn wait_matching(&self, timeout: Duration, want: Option<&OsStr>) -> bool {
        let deadline = Instant::now() + timeout;
        match &self.how {
            How::Notify { changes, .. } => {
                let matches = |c: &Option<OsString>| match (c, want) {
                    (None, _) | (_, None) => true,
                    (Some(name), Some(w)) => name == w,
                };
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match changes.recv_timeout(left) {
                        Ok(c) if matches(&c) => {
                            // Coalesce the burst: every queued change happened
                            // before the caller's next read, which will see it.
                            while changes.try_recv().is_ok() {}
                            return true;
                        }
                        Ok(_) => continue,
                        Err(RecvTimeoutError::Timeout) => return false,
                        Err(RecvTimeoutError::Disconnected) => {
                            std::thread::sleep(left);
                            return false;
                        }
                    }
                }
            }
            How::Poll { last } => loop {
                let now = snapshot(&self.dir);
                {
                    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                    let changed = match want {
                        None => *last != now,
                        Some(w) => last.get(w) != now.get(w),
                    };
                    if changed {
                        *last = now;
                        return true;
                    }
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return false;
                }
                std::thread::sleep(left.min(POLL_EVERY));
            },
        }
    }
}

impl std::fmt::Debug for InboxWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InboxWatcher")
            .field("dir", &self.dir)
            .field("polling", &self.is_polling())
            .finish()
    }
}

/// `<name>.json`, not a temp file, lock or quarantined copy beside it.
fn is_inbox_file(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.ends_with(".json") && !name.starts_with('.')
}

fn snapshot(dir: &Path) -> Snapshot {
    let mut snap = Snapshot::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return snap;
    };
    for entry in rd.flatten() {
        let name = entry.file_name();
        if !is_inbox_file(&name) {
            continue;
        }
        if let Ok(m) = entry.metadata() {
            let mtime = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
            snap.insert(name, (mtime, m.size(), m.ino()));
        }
    }
    snap
}

#[cfg(test)]
mod tests {
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
    fn a_rewritten_inbox_wakes_the_watcher_and_quiet_times_out() {
        for (t, w) in both() {
            assert!(
                !w.wait(Duration::from_millis(50)),
                "nothing changed yet ({w:?})"
            );
            rewrite(&t.path().join("bob.json"), b"[]");
            let start = Instant::now();
            assert!(w.wait(Duration::from_secs(5)), "change not seen ({w:?})");
            assert!(
                start.elapsed() < Duration::from_millis(2500),
                "{w:?} took {:?}",
                start.elapsed()
            );
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
