//! The watcher's events where there is no inotify (macOS, the BSDs):
//! `notify`'s recommended watcher (FSEvents, kqueue), whose own thread
//! passes each event on through a channel. It cannot be asked for the ends
//! of changes only, as inotify can on Linux, so a reader is woken by more
//! than a finished write (reads are skipped here). Compiled on Linux too,
//! for its tests, where `notify` runs on inotify.

use super::{Changed, Changes, Source, counts};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// What `notify`'s thread passes on.
enum Event {
    /// A counted file changed.
    File(Changed),
    /// Something changed that no file name says (an error, a rescan).
    Unsure,
    /// A watched directory went.
    Gone(usize),
    /// [`Source::close`] was called.
    Closed,
}

/// What a watcher's callback was doing when its receiver is gone (the
/// watcher is being dropped: nobody is left to tell).
const PASSING_ON: &str = "passing a file change on";

/// `notify`'s watcher over the directories, and what it passed on.
pub(super) struct Events {
    /// Kept alive until closed: dropping it stops the events.
    watcher: Mutex<Option<RecommendedWatcher>>,
    events: Mutex<Receiver<Event>>,
    /// Tells a wait in progress that the watcher closed.
    tx: Sender<Event>,
    live: Vec<AtomicBool>,
    closed: AtomicBool,
}

impl Events {
    /// Watches each of `dirs` (which must exist) with one `notify` watcher.
    pub(super) fn new(dirs: &[PathBuf]) -> notify::Result<Events> {
        let (tx, events) = channel();
        let owned = dirs.to_vec();
        let to_waiter = tx.clone();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                let send = |e| crate::dropped::ignore(to_waiter.send(e), PASSING_ON);
                let Ok(event) = res else {
                    send(Event::Unsure);
                    return;
                };
                // Reads (the reader's own among them) change nothing.
                if matches!(event.kind, EventKind::Access(_)) {
                    return;
                }
                for p in &event.paths {
                    if let Some(dir) = owned.iter().position(|d| d == p) {
                        if matches!(event.kind, EventKind::Remove(_)) {
                            send(Event::Gone(dir));
                        }
                    } else if let Some(c) = changed_of(&owned, p) {
                        send(Event::File(c));
                    }
                }
                if event.need_rescan() {
                    send(Event::Unsure);
                }
            })?;
        for d in dirs {
            watcher.watch(d, RecursiveMode::NonRecursive)?;
        }
        Ok(Events {
            watcher: Mutex::new(Some(watcher)),
            events: Mutex::new(events),
            tx,
            live: dirs.iter().map(|_| AtomicBool::new(true)).collect(),
            closed: AtomicBool::new(false),
        })
    }
}

impl Source for Events {
    fn next(&self, timeout: Duration) -> Option<Changes> {
        let events = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        if self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let first = match events.recv_timeout(timeout) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => return None,
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                return None;
            }
        };
        // Coalesce the burst: every queued change happened before the
        // caller's next read, which will see it.
        let mut files = BTreeSet::new();
        let mut all = false;
        for e in std::iter::once(first).chain(events.try_iter()) {
            match e {
                Event::File(c) => {
                    files.insert(c);
                }
                Event::Unsure => all = true,
                Event::Gone(dir) => {
                    self.live[dir].store(false, Ordering::SeqCst);
                    all = true;
                }
                Event::Closed => return None,
            }
        }
        Some(if all {
            Changes::All
        } else {
            Changes::Files(files)
        })
    }

    fn watching(&self, dir: usize) -> bool {
        self.live.get(dir).is_some_and(|l| l.load(Ordering::SeqCst))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for live in &self.live {
            live.store(false, Ordering::SeqCst);
        }
        drop(
            self.watcher
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        crate::dropped::ignore(
            self.tx.send(Event::Closed),
            "waking a closed watcher's waiter",
        );
    }
}

/// The counted file `path` is, in one of `dirs`.
fn changed_of(dirs: &[PathBuf], path: &Path) -> Option<Changed> {
    let name = path.file_name().filter(|n| counts(n))?;
    let parent = path.parent()?;
    let i = dirs.iter().position(|d| d == parent).unwrap_or(0);
    Some((i, name.to_owned()))
}
