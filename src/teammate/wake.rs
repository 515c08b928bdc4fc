//! Wake-ups for a teammate runtime: one `notify` watcher over the team's
//! inboxes directory and its task list directory, so a message or a task
//! that becomes claimable wakes the runtime at once. Where no watcher can be
//! created it polls both directories' metadata once a second. Either way an
//! idle runtime sleeps in a blocking receive: no busy polling.
//!
//! Only `*.json` files count (inboxes and task files); lock directories,
//! temp files, `.highwatermark` and quarantined copies are ignored.

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How often the fallback looks at the directories.
pub const POLL_EVERY: Duration = Duration::from_secs(1);

/// Wakes the runtime when an inbox or a task file changes.
pub struct Wakeups {
    how: How,
}

enum How {
    Notify {
        _watcher: RecommendedWatcher,
        changes: Receiver<()>,
    },
    Poll {
        dirs: Vec<PathBuf>,
        last: Snapshot,
    },
}

type Snapshot = BTreeMap<PathBuf, (i128, u64, u64)>;

impl Wakeups {
    /// Watches `dirs` (which must exist), polling if `notify` cannot.
    pub fn new(dirs: &[PathBuf]) -> Wakeups {
        match Self::notify(dirs) {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the team's files; polling every second");
                Self::polling(dirs)
            }
        }
    }

    fn notify(dirs: &[PathBuf]) -> notify::Result<Wakeups> {
        let (tx, changes) = channel();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
                Ok(event) => {
                    if matches!(event.kind, EventKind::Access(_)) {
                        return;
                    }
                    let relevant = event.need_rescan()
                        || event
                            .paths
                            .iter()
                            .any(|p| p.file_name().is_some_and(counts));
                    if relevant {
                        let _ = tx.send(());
                    }
                }
                Err(_) => {
                    let _ = tx.send(());
                }
            })?;
        for d in dirs {
            watcher.watch(d, RecursiveMode::NonRecursive)?;
        }
        Ok(Wakeups {
            how: How::Notify {
                _watcher: watcher,
                changes,
            },
        })
    }

    /// A watcher that only polls.
    pub fn polling(dirs: &[PathBuf]) -> Wakeups {
        Wakeups {
            how: How::Poll {
                dirs: dirs.to_vec(),
                last: snapshot(dirs),
            },
        }
    }

    pub fn is_polling(&self) -> bool {
        matches!(self.how, How::Poll { .. })
    }

    /// Blocks until something changed since the previous call (`true`) or
    /// `timeout` passed (`false`). A burst of changes is one wake-up.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        match &mut self.how {
            How::Notify { changes, .. } => match changes.recv_timeout(timeout) {
                Ok(()) => {
                    while changes.try_recv().is_ok() {}
                    true
                }
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(timeout.min(POLL_EVERY));
                    true
                }
            },
            How::Poll { dirs, last } => loop {
                let now = snapshot(dirs);
                if *last != now {
                    *last = now;
                    return true;
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

/// `<name>.json`, not a temp file, lock or copy beside it.
fn counts(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.ends_with(".json") && !name.starts_with('.')
}

fn snapshot(dirs: &[PathBuf]) -> Snapshot {
    let mut snap = Snapshot::new();
    for dir in dirs {
        add_dir(dir, &mut snap);
    }
    snap
}

fn add_dir(dir: &Path, snap: &mut Snapshot) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        if !counts(&entry.file_name()) {
            continue;
        }
        if let Ok(m) = entry.metadata() {
            let mtime = i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec());
            snap.insert(entry.path(), (mtime, m.size(), m.ino()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_change_in_either_directory_wakes_and_quiet_times_out() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        let makers: [fn(&[PathBuf]) -> Wakeups; 2] = [Wakeups::new, Wakeups::polling];
        for make in makers {
            let mut w = make(&dirs);
            assert!(!w.wait(Duration::from_millis(50)));
            for d in [&a, &b] {
                crate::atomic_file::write_atomic(&d.path().join("7.json"), b"{}").unwrap();
                assert!(
                    w.wait(Duration::from_secs(5)),
                    "no wake-up (polling: {})",
                    w.is_polling()
                );
            }
            std::fs::create_dir(a.path().join("7.json.lock")).unwrap();
            std::fs::remove_dir(a.path().join("7.json.lock")).unwrap();
            std::fs::write(b.path().join(".highwatermark"), b"3").unwrap();
            assert!(
                !w.wait(Duration::from_millis(1200)),
                "locks and marks must not wake"
            );
        }
    }
}
