//! The watcher's events on Linux: one inotify instance over every
//! directory of a watcher, asked only for what ends a writer's change: a
//! file closed after writing (Claude Code writes in place), renamed in or
//! out (swarm writes a temp file and renames it), deleted, and the
//! directories themselves going. Opens (the readers' own reads of the files
//! they were told about), single write calls, `fchmod`, temp files being
//! filled and lock directories wake nobody: `notify` asked inotify for all
//! of them, and one task update woke the lead's three `notify` watchers a
//! dozen times (9af977f). No thread of its own: a wait is `poll(2)` on the
//! instance in the waiter's thread, then one `read` takes the whole burst.
//!
//! A write by swarm's own writer may come as two bursts: `atomic_file`
//! renames its temp file over the target while it holds it open, and closes
//! it after the directory's fsync, so the rename and (under the target's
//! name) that close can be a read apart. A reader for which a second look
//! costs more than one file read tells them apart by the bytes (the team
//! watcher, `teammate::wake`).

use super::{Changed, Changes, Source, counts};
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use std::collections::BTreeSet;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The events that end a change (see the module docs); the directory's own
/// deletion or move comes with every watch.
fn mask() -> WatchMask {
    WatchMask::CLOSE_WRITE
        | WatchMask::MOVED_TO
        | WatchMask::MOVED_FROM
        | WatchMask::DELETE
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
}

/// One inotify instance and its watches, one per directory (by index).
pub(super) struct Events {
    reader: Mutex<Reader>,
    /// A handle on the same instance, for [`Source::close`] from another
    /// thread while a wait holds the reader.
    watches: Mutex<Watches>,
    wds: Vec<WatchDescriptor>,
    /// Whether each directory still has its watch.
    live: Vec<AtomicBool>,
    closed: AtomicBool,
}

struct Reader {
    inotify: Inotify,
    /// Room for many events: a burst is read in one call.
    buffer: Vec<u8>,
    /// Reading failed for good (logged once); nothing will come.
    broken: bool,
}

impl Events {
    /// Watches each of `dirs` (which must exist) with one inotify instance.
    pub(super) fn new(dirs: &[PathBuf]) -> io::Result<Events> {
        let inotify = Inotify::init()?;
        let mut watches = inotify.watches();
        let wds = dirs
            .iter()
            .map(|d| watches.add(d, mask()))
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Events {
            reader: Mutex::new(Reader {
                inotify,
                buffer: vec![0u8; 64 * 1024],
                broken: false,
            }),
            watches: Mutex::new(watches),
            live: wds.iter().map(|_| AtomicBool::new(true)).collect(),
            wds,
            closed: AtomicBool::new(false),
        })
    }

    /// Which directory `wd` watches.
    fn dir_of(&self, wd: &WatchDescriptor) -> Option<usize> {
        self.wds.iter().position(|w| w == wd)
    }

    /// What one read of events says: `None` when nothing counted.
    fn note(&self, events: inotify::Events<'_>) -> Option<Changes> {
        let mut files: BTreeSet<Changed> = BTreeSet::new();
        let mut all = false;
        for e in events {
            if e.mask.contains(EventMask::Q_OVERFLOW) {
                all = true;
                continue;
            }
            let Some(dir) = self.dir_of(&e.wd) else {
                continue;
            };
            if e.mask
                .intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF)
                || e.mask.contains(EventMask::IGNORED)
            {
                // The directory went (or was renamed away): whatever was in
                // it changed, and nothing names its changes any more.
                self.live[dir].store(false, Ordering::SeqCst);
                all = true;
            } else if let Some(name) = e.name.filter(|n| counts(n)) {
                files.insert((dir, name.to_owned()));
            }
        }
        if all {
            Some(Changes::All)
        } else {
            (!files.is_empty()).then_some(Changes::Files(files))
        }
    }
}

impl Events {
    /// Waiting for events failed for good: everything changed once, and no
    /// directory is watched from now on.
    fn broken(&self, r: &mut Reader, e: &io::Error) -> Changes {
        tracing::warn!(error = %e, "waiting for file events failed; no more events");
        r.broken = true;
        for live in &self.live {
            live.store(false, Ordering::SeqCst);
        }
        Changes::All
    }
}

impl Source for Events {
    fn next(&self, timeout: Duration) -> Option<Changes> {
        let deadline = Instant::now() + timeout;
        let mut guard = self.reader.lock().unwrap_or_else(PoisonError::into_inner);
        let r = &mut *guard;
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return None;
            }
            if r.broken {
                std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
                return None;
            }
            // One poll and one read a burst: the poll waits (or, with no
            // time left, only looks), the read takes all that is queued.
            let left = deadline.saturating_duration_since(Instant::now());
            match readable(r.inotify.as_raw_fd(), left) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(self.broken(r, &e)),
            }
            match r.inotify.read_events(&mut r.buffer) {
                Ok(events) => {
                    if let Some(changes) = self.note(events) {
                        if self.closed.load(Ordering::SeqCst) {
                            return None;
                        }
                        return Some(changes);
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Some(self.broken(r, &e)),
            }
        }
    }

    fn watching(&self, dir: usize) -> bool {
        self.live.get(dir).is_some_and(|l| l.load(Ordering::SeqCst))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let mut watches = self.watches.lock().unwrap_or_else(PoisonError::into_inner);
        for (wd, live) in self.wds.iter().zip(&self.live) {
            if live.swap(false, Ordering::SeqCst) {
                // Its IN_IGNORED wakes a wait in progress. A directory
                // already gone took its watch with it.
                crate::dropped::ignore(watches.remove(wd.clone()), "removing a watch");
            }
        }
    }
}

/// How long after a watcher is dropped its instance is closed: by then
/// the kernel has torn its removed watches down, and the close is
/// immediate.
const LATE_CLOSE: Duration = Duration::from_millis(50);

impl Drop for Events {
    /// Closing an instance that still has watches waits in the kernel for
    /// their teardown (an RCU grace period: 14-20 ms measured here, against
    /// 0.01 ms once the watches were removed 10 ms before): `swarm up`,
    /// which only checks that a watch can be had, paid it. The watches are
    /// removed now, which waits for nothing, and the instance's last handle
    /// is closed [`LATE_CLOSE`] later on a thread of its own. A process
    /// that exits sooner closes it then, as it would have anyway.
    fn drop(&mut self) {
        self.close();
        let last = self
            .watches
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let closing = std::thread::Builder::new()
            .name("inotify-close".into())
            .spawn(move || {
                std::thread::sleep(LATE_CLOSE);
                drop(last);
            });
        crate::dropped::ignore(closing.map(drop), "closing an inotify instance late");
    }
}

/// Waits up to `within` for `fd` to become readable (with no time left,
/// only looks): `true` when it is (or a signal interrupted the wait),
/// `false` when the time passed first.
fn readable(fd: i32, within: Duration) -> io::Result<bool> {
    let ms = match within.as_millis() {
        0 if within.is_zero() => 0,
        // A wait of less than a millisecond still waits, rather than
        // spinning through looks until the deadline.
        ms => i32::try_from(ms.max(1)).unwrap_or(i32::MAX),
    };
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on the stack, valid for the call; the count is 1.
    match unsafe { libc::poll(&mut p, 1, ms) } {
        n if n > 0 => Ok(true),
        0 => Ok(false),
        _ => {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                Ok(true)
            } else {
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The inotify watches on instance `fd` (the inodes, in hex, as
    /// `/proc/self/fdinfo` lists them); empty once the descriptor is closed.
    fn watched_inodes(fd: i32) -> Vec<String> {
        std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with("inotify wd:"))
            .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("ino:")))
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_dropped_watcher_removes_its_watches_at_once_and_closes_its_instance_later() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let ino = format!("{:x}", std::fs::metadata(d.path()).unwrap().ino());
        let events = Events::new(&[d.path().to_path_buf()]).unwrap();
        let fd = events.reader.lock().unwrap().inotify.as_raw_fd();
        assert_eq!(watched_inodes(fd), [ino]);
        drop(events);
        assert!(
            watched_inodes(fd).is_empty(),
            "the watch went with the drop"
        );
        let link = || std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
        // Still ours: an inotify instance watching nothing (a number taken
        // again is a plain file, or an instance with watches of its own).
        let ours = || {
            link().is_some_and(|l| l.to_string_lossy().contains("inotify"))
                && watched_inodes(fd).is_empty()
        };
        assert!(
            ours(),
            "the instance itself is closed later, not by the drop"
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        while ours() {
            assert!(Instant::now() < deadline, "the instance was never closed");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
