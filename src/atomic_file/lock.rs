//! Locks: Claude Code's `<file>.lock` directories plus swarm's OS lock on a
//! sidecar file beside each (the parent module has the protocol), and how a
//! holder knows its lock is still its own.

use super::DIR_MODE;
use super::safe_path::{self, PathProblem, UnsafePath};
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use thiserror::Error;

/// The lock directory Claude Code uses for a file: `<file>.lock`.
pub fn lock_dir_for(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// The sidecar of a lock directory, `<lock dir>.flock`: the file swarm
/// holds an OS lock on while it holds the directory (see this module).
pub fn sidecar_for(lock_dir: &Path) -> PathBuf {
    let mut s = lock_dir.as_os_str().to_owned();
    s.push(".flock");
    PathBuf::from(s)
}

/// The suite's one timeout knob (`SWARM_TEST_TIMEOUT_SCALE`, or x3 on CI),
/// included from the integration tests' util/ as the backend contract suite
/// includes it.
#[cfg(test)]
#[allow(dead_code)]
#[allow(
    clippy::duplicate_mod,
    reason = "one file owns the knob; each test module that waits includes it, as the \
              crate has no crate-wide test module to hold it once"
)]
#[path = "../../tests/util/timeouts.rs"]
mod timeouts;

/// Claude Code breaks a lock directory whose mtime is older than this.
pub const STALE_AFTER: Duration = Duration::from_secs(10);
/// Claude Code refreshes a held lock's mtime this often; so does swarm.
pub const REFRESH_EVERY: Duration = Duration::from_secs(5);
/// How long swarm waits for a lock by default. Waiting on live swarm
/// holders always makes progress (each holds a lock for milliseconds), but
/// under heavy contention on a loaded machine the kernel does not queue
/// waiters fairly, so the deadline is generous; it also outlasts a Claude
/// Code holder that died (10 s stale rule). Past it, the wait is an error.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// How recently a holder must have touched its lock directory for
/// [`FileLock::verify`] to trust a plain `lstat`; past it, the check touches
/// the directory again (through a descriptor of the one it verified), so the
/// write that follows happens under a lock that is fresh, not one about to
/// turn stale.
const VERIFY_FRESH: Duration = Duration::from_secs(1);
/// How soon the refresher tries again to touch a lock it could not touch
/// (an I/O error, the lock not known lost).
const TOUCH_RETRY: Duration = Duration::from_secs(1);

/// Why a lock could not be taken or kept.
#[derive(Debug, Error)]
pub enum LockError {
    #[error("timed out after {waited:?} waiting for the lock {path} (held by {holder})")]
    Timeout {
        path: PathBuf,
        waited: Duration,
        holder: &'static str,
    },
    /// The lock directory is no longer the one this holder made: the holder
    /// was suspended (stopped, swapped out) past the 10 s stale rule, and
    /// another process broke the lock and took it. Nothing may be written on
    /// the strength of it; [`FileLock::retake`] takes it again.
    #[error(
        "lost the lock {path}: it went unrefreshed for over 10 s (was this process stopped?) and \
         another process broke it as stale; nothing was written under it"
    )]
    Lost { path: PathBuf },
    #[error(transparent)]
    Unsafe(UnsafePath),
    /// The cause is in the message, not `source()`, so that a chain
    /// printed whole (`{:#}`) says it once.
    #[error("cannot lock {}: {error}", path.display())]
    Io { path: PathBuf, error: io::Error },
}

impl LockError {
    /// Whether `e` (from [`super::write_atomic_locked`] and the like)
    /// failed because the lock was lost, and so nothing was written.
    pub fn lost_in(e: &io::Error) -> bool {
        e.get_ref()
            .and_then(|e| e.downcast_ref::<LockError>())
            .is_some_and(|l| matches!(l, LockError::Lost { .. }))
    }

    /// An I/O failure on the lock at `path`, or the refusal it carries.
    fn io(path: &Path, source: io::Error) -> LockError {
        match UnsafePath::of(&source) {
            Some(u) => LockError::Unsafe(u.clone()),
            None => LockError::Io {
                path: path.to_path_buf(),
                error: source,
            },
        }
    }
}

/// A held lock: the `<file>.lock` directory plus the OS lock on its sidecar.
/// Released on drop (sidecar record cleared, directory removed, OS lock
/// released, in that order); a lock found lost is not removed, since the
/// directory at its path is then another holder's.
#[derive(Debug)]
pub struct FileLock {
    held: Arc<Held>,
}

/// What a holder and the [`Refresher`] share of one held lock.
#[derive(Debug)]
struct Held {
    dir: PathBuf,
    sidecar: File,
    state: Mutex<HeldState>,
}

#[derive(Debug)]
struct HeldState {
    /// The directory this holder made, as it was when last touched; `None`
    /// once the lock is known lost.
    ident: Option<DirIdent>,
    /// When this holder last set the directory's mtime (or made it).
    touched: Instant,
}

/// A directory's identity: another directory at the same path (made after
/// a `rmdir`) differs in inode or, if the inode number was reused, in
/// ctime, which every touch also moves on (so the identity is updated
/// after each touch of this holder's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirIdent {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
}

impl DirIdent {
    fn of(meta: &fs::Metadata) -> DirIdent {
        DirIdent {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }

    /// What a swarm holder writes into the sidecar (the format every swarm
    /// version shares, hence no device number).
    fn record(&self) -> String {
        format!("swarm {} {} {}\n", self.ino, self.ctime, self.ctime_nsec)
    }
}

/// Blocks on the sidecar's OS lock (exclusive, or shared) in a helper
/// thread, for at most `timeout`. If the deadline passes first, the helper
/// drops the file (and with it the lock) as soon as it gets it, so nothing
/// is left held. `Ok(None)` on timeout.
fn wait_for_os_lock(
    sidecar: File,
    dir: &Path,
    timeout: Duration,
    shared: bool,
) -> Result<Option<File>, LockError> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("lock-wait".into())
        .spawn(move || {
            let got = if shared {
                sidecar.lock_shared()
            } else {
                sidecar.lock()
            };
            // A send error means the waiter gave up; dropping `got` unlocks.
            crate::dropped::ignore(
                tx.send(got.map(|()| sidecar)),
                "handing a lock to a waiter that gave up",
            );
        })
        .map_err(|e| LockError::io(dir, e))?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(file)) => Ok(Some(file)),
        Ok(Err(e)) => Err(LockError::io(dir, e)),
        Err(_) => Ok(None),
    }
}

/// Takes the exclusive OS lock of an opened lock file `file` (at `path`),
/// waiting at most `timeout` blocked in the kernel, not polling: a holder
/// that lets go hands it on at once. `Ok(None)` on timeout.
pub fn lock_within(file: File, path: &Path, timeout: Duration) -> Result<Option<File>, LockError> {
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(fs::TryLockError::WouldBlock) => wait_for_os_lock(file, path, timeout, false),
        Err(fs::TryLockError::Error(e)) => Err(LockError::io(path, e)),
    }
}

/// Opens (creating) a lock's sidecar: never through a link (one planted
/// there would have the record truncate its target, or a dangling one
/// create a file outside the root), never truncating on open.
fn open_sidecar(dir: &Path) -> Result<File, LockError> {
    let path = sidecar_for(dir);
    super::open_lock_file(&path).map_err(|e| LockError::io(dir, e))
}

/// The OS lock on a lock directory's sidecar, held exclusively: no other
/// swarm process holds or is taking that lock. Turned into a [`FileLock`]
/// by [`OsLock::take_dir`]; released on drop.
#[derive(Debug)]
pub struct OsLock {
    dir: PathBuf,
    sidecar: File,
}

/// A shared hold on a lock's sidecar: while it is held, no swarm process
/// holds that lock (swarm holders hold the sidecar exclusively for as long
/// as they hold the directory). Released on drop.
#[derive(Debug)]
pub struct SharedOsLock {
    _sidecar: File,
}

impl FileLock {
    /// Locks `file` (which need not exist) with the directory `<file>.lock`.
    pub fn acquire(file: &Path, timeout: Duration) -> Result<Self, LockError> {
        Self::acquire_dir(&lock_dir_for(file), timeout)
    }

    /// Locks with an explicit lock directory (the roster's `config.json.lock`,
    /// the task list's `.lock.lock`).
    pub fn acquire_dir(dir: &Path, timeout: Duration) -> Result<Self, LockError> {
        let start = Instant::now();
        let sidecar = open_sidecar(dir)?;
        // 1. The OS lock: swarm against swarm. Uncontended it is one
        //    `try_lock`; contended, a helper thread blocks in the kernel (so
        //    waiters are woken the moment the holder lets go, instead of
        //    polling and starving) while this thread waits with a deadline.
        let sidecar = match sidecar.try_lock() {
            Ok(()) => sidecar,
            Err(fs::TryLockError::WouldBlock) => wait_for_os_lock(sidecar, dir, timeout, false)?
                .ok_or_else(|| LockError::Timeout {
                    path: dir.to_path_buf(),
                    waited: start.elapsed(),
                    holder: "another swarm process",
                })?,
            Err(fs::TryLockError::Error(e)) => return Err(LockError::io(dir, e)),
        };
        OsLock {
            dir: dir.to_path_buf(),
            sidecar,
        }
        .take_dir(timeout.saturating_sub(start.elapsed()))
    }

    /// The OS lock of `file`'s lock, if no swarm process holds it now
    /// (never waits).
    pub fn try_os_lock(file: &Path) -> Result<Option<OsLock>, LockError> {
        let dir = lock_dir_for(file);
        let sidecar = open_sidecar(&dir)?;
        match sidecar.try_lock() {
            Ok(()) => Ok(Some(OsLock { dir, sidecar })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(LockError::io(&dir, e)),
        }
    }

    /// Waits, at most `timeout`, until no swarm process holds `file`'s lock,
    /// and returns a shared hold that keeps it so. `None` on timeout.
    pub fn wait_shared(file: &Path, timeout: Duration) -> Result<Option<SharedOsLock>, LockError> {
        let dir = lock_dir_for(file);
        let sidecar = open_sidecar(&dir)?;
        let got = match sidecar.try_lock_shared() {
            Ok(()) => Some(sidecar),
            Err(fs::TryLockError::WouldBlock) => wait_for_os_lock(sidecar, &dir, timeout, true)?,
            Err(fs::TryLockError::Error(e)) => return Err(LockError::io(&dir, e)),
        };
        Ok(got.map(|f| SharedOsLock { _sidecar: f }))
    }

    /// The lock directory this guard holds.
    pub fn dir(&self) -> &Path {
        &self.held.dir
    }

    /// Checks that the lock is still this holder's, just before a write
    /// that relies on it (a rename over the file it guards): the directory
    /// at its path must be the one this holder made. A holder suspended
    /// past the 10 s stale rule (`SIGSTOP`, a laptop lid) may find that a
    /// Claude Code writer broke its lock and took it meanwhile; it gets
    /// [`LockError::Lost`] and must re-read before writing anything, after
    /// [`FileLock::retake`]. A lock not touched for a while is touched now,
    /// so the write that follows is made under a fresh lock.
    pub fn verify(&self) -> Result<(), LockError> {
        let held = &self.held;
        let mut st = held.state();
        if st.touched.elapsed() >= VERIFY_FRESH {
            return held.touch(&mut st);
        }
        match (st.ident, fs::symlink_metadata(&held.dir)) {
            (Some(ident), Ok(meta)) if DirIdent::of(&meta) == ident => Ok(()),
            _ => Err(held.lost(&mut st)),
        }
    }

    /// Takes the lock directory again after [`LockError::Lost`], waiting at
    /// most `timeout` for whoever holds it now (the OS lock was never let
    /// go, so no swarm process competes).
    pub fn retake(&mut self, timeout: Duration) -> Result<(), LockError> {
        let held = &self.held;
        held.state().ident = None;
        // Not under the state mutex: the refresher must not wait on a
        // holder that waits for a foreign lock.
        let ident = make_dir(&held.dir, &held.sidecar, timeout)?;
        let mut st = held.state();
        st.ident = Some(ident);
        st.touched = Instant::now();
        held.write_record(&ident);
        Ok(())
    }
}

impl Held {
    fn state(&self) -> std::sync::MutexGuard<'_, HeldState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the lock lost and says so.
    fn lost(&self, st: &mut HeldState) -> LockError {
        if st.ident.take().is_some() {
            tracing::warn!(lock = %self.dir.display(), "lost a lock: another process broke it while this one was suspended");
        }
        LockError::Lost {
            path: self.dir.clone(),
        }
    }

    /// The refresher's turn at this lock: touches it if a refresh is due,
    /// and returns when to look again (`None`: lost, its holder finds out
    /// when it verifies). A touch that fails with the lock still held (an
    /// I/O error) is tried again after [`TOUCH_RETRY`], not at once: an
    /// error that persists must not spin the refresher.
    fn refresh(&self, st: &mut HeldState) -> Option<Instant> {
        st.ident?;
        if st.touched.elapsed() >= REFRESH_EVERY
            && let Err(e) = self.touch(st)
        {
            st.ident?;
            tracing::warn!(lock = %self.dir.display(), error = %e, "cannot refresh a held lock; trying again shortly");
            return Some(Instant::now() + TOUCH_RETRY);
        }
        Some(st.touched + REFRESH_EVERY)
    }

    /// Sets the lock directory's mtime to now, if it is still the one this
    /// holder made: through a descriptor of the directory whose identity it
    /// checked, so a directory someone else made at the path is never
    /// touched (Claude Code counts a lock whose mtime moved under it as
    /// compromised). Records the new identity.
    fn touch(&self, st: &mut HeldState) -> Result<(), LockError> {
        let Some(ident) = st.ident else {
            return Err(self.lost(st));
        };
        #[cfg(test)]
        super::fault::check("touch").map_err(|e| LockError::io(&self.dir, e))?;
        let dir = match safe_path::open_dir(&self.dir) {
            Ok(d) => d,
            Err(e) if UnsafePath::of(&e).is_some() || e.kind() == io::ErrorKind::NotFound => {
                return Err(self.lost(st));
            }
            Err(e) => return Err(LockError::io(&self.dir, e)),
        };
        let io_err = |e| LockError::io(&self.dir, e);
        if DirIdent::of(&dir.metadata().map_err(io_err)?) != ident {
            return Err(self.lost(st));
        }
        dir.set_modified(SystemTime::now()).map_err(io_err)?;
        let touched = DirIdent::of(&dir.metadata().map_err(io_err)?);
        st.ident = Some(touched);
        st.touched = Instant::now();
        self.write_record(&touched);
        // The path must still name it (not a directory made after a rmdir
        // that came between the open and the touch).
        match fs::symlink_metadata(&self.dir) {
            Ok(meta) if DirIdent::of(&meta) == touched => Ok(()),
            _ => Err(self.lost(st)),
        }
    }

    /// Records the lock directory's identity in the sidecar, so a swarm
    /// waiter can tell the holder died. Best effort: the record only speeds
    /// up the takeover of a dead holder's lock; without it (a full disk
    /// cannot hold its 40 bytes) the lock is as good, and a holder that
    /// dies leaves it to the 10 s rule.
    fn write_record(&self, ident: &DirIdent) {
        let written = (|| {
            #[cfg(test)]
            super::fault::check("record")?;
            let mut s = &self.sidecar;
            s.set_len(0)?;
            s.write_all_at0(ident.record().as_bytes())
        })();
        if let Err(e) = written {
            tracing::warn!(lock = %self.dir.display(), error = %e, "cannot record the lock holder; a crash would leave the lock to the 10 s rule");
        }
    }
}

/// Makes the lock directory `dir` (swarm against Claude Code), breaking it
/// when its holder is a dead swarm process (its `sidecar` record names the
/// directory) or it is stale (10 s), waiting at most `timeout` otherwise.
/// The caller holds the sidecar's OS lock. Returns the identity of the
/// directory made; on every error path nothing of it is left.
fn make_dir(dir: &Path, sidecar: &File, timeout: Duration) -> Result<DirIdent, LockError> {
    let start = Instant::now();
    let io_err = |e| LockError::io(dir, e);
    let mut pause = Duration::from_millis(5);
    loop {
        match fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
            Ok(()) => {
                return match fs::symlink_metadata(dir) {
                    Ok(meta) if meta.is_dir() => Ok(DirIdent::of(&meta)),
                    other => {
                        // Not left behind: the next writer would wait 10 s
                        // (which is what a failed removal costs).
                        crate::dropped::ignore(
                            fs::remove_dir(dir),
                            "removing a lock directory that is not one",
                        );
                        Err(match other {
                            Ok(_) => {
                                LockError::Unsafe(UnsafePath::new(dir, PathProblem::NotADirectory))
                            }
                            Err(e) => io_err(e),
                        })
                    }
                };
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let meta = match fs::symlink_metadata(dir) {
                    Ok(m) => m,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(io_err(e)),
                };
                if let Some(problem) = safe_path::problem_of(&meta, true) {
                    return Err(LockError::Unsafe(UnsafePath::new(dir, problem)));
                }
                let mut record = String::new();
                let mut s = sidecar;
                s.seek(SeekFrom::Start(0)).map_err(io_err)?;
                // Unread, the record names no holder: the 10 s rule decides.
                crate::dropped::ignore(s.read_to_string(&mut record), "reading a lock's record");
                let dead_swarm_holder = record == DirIdent::of(&meta).record();
                let age = SystemTime::now()
                    .duration_since(meta.modified().map_err(io_err)?)
                    .unwrap_or(Duration::ZERO);
                if dead_swarm_holder || age > STALE_AFTER {
                    tracing::warn!(
                        lock = %dir.display(),
                        dead_swarm_holder,
                        age_ms = age.as_millis() as u64,
                        "breaking an abandoned lock"
                    );
                    match fs::remove_dir(dir) {
                        Ok(()) => continue,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(io_err(e)),
                    }
                }
            }
            Err(e) => return Err(io_err(e)),
        }
        if start.elapsed() >= timeout {
            return Err(LockError::Timeout {
                path: dir.to_path_buf(),
                waited: start.elapsed(),
                holder: "another process (Claude Code?)",
            });
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

impl OsLock {
    /// Takes the lock directory (swarm against Claude Code), waiting at most
    /// `timeout` for a foreign holder; the OS lock is kept for as long as the
    /// returned [`FileLock`] lives.
    pub fn take_dir(self, timeout: Duration) -> Result<FileLock, LockError> {
        let OsLock { dir, sidecar } = self;
        let ident = make_dir(&dir, &sidecar, timeout)?;
        // The directory is this process's from here on: the guard removes
        // it on every path out, failures included (a directory left behind
        // would cost the next writer the 10 s stale rule).
        let held = Arc::new(Held {
            dir,
            sidecar,
            state: Mutex::new(HeldState {
                ident: Some(ident),
                touched: Instant::now(),
            }),
        });
        held.write_record(&ident);
        refresher().register(held.clone());
        Ok(FileLock { held })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let held = &self.held;
        refresher().unregister(held);
        let st = held.state();
        let ours = st
            .ident
            .is_some_and(|i| fs::symlink_metadata(&held.dir).is_ok_and(|m| DirIdent::of(&m) == i));
        // Clear the record before removing the directory: a crash in between
        // leaves a directory with no swarm record, which the 10 s rule frees,
        // never a record that could match a later directory's identity.
        if ours {
            #[cfg(test)]
            let cleared = super::fault::check("clear").and_then(|()| held.sidecar.set_len(0));
            #[cfg(not(test))]
            let cleared = held.sidecar.set_len(0);
            // A record that stays names this directory, so the directory
            // stays too: the next writer takes it as a dead holder's at
            // once. Removed, its identity could come back with a later
            // directory, whose live holder the stale record would then
            // have broken.
            let removed = cleared.and_then(|()| fs::remove_dir(&held.dir));
            if let Err(e) = removed {
                tracing::warn!(lock = %held.dir.display(), error = %e, "cannot release the lock directory cleanly; the next writer takes it over");
            }
        }
        // Closing the sidecar, with the last handle to it, unlocks it too.
        crate::dropped::ignore(held.sidecar.unlock(), "unlocking a lock's sidecar");
    }
}

trait WriteAt0 {
    fn write_all_at0(&mut self, bytes: &[u8]) -> io::Result<()>;
}

impl WriteAt0 for &File {
    fn write_all_at0(&mut self, bytes: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        self.write_all_at(bytes, 0)
    }
}

/// One thread per process that re-touches the mtime of every lock held
/// longer than [`REFRESH_EVERY`], so Claude Code never judges a live swarm
/// lock stale (and notices a lock lost while the process was suspended). It
/// sleeps on a condition variable while nothing is held, so an idle process
/// pays nothing.
struct Refresher {
    held: Mutex<Vec<Arc<Held>>>,
    wake: Condvar,
}

fn refresher() -> &'static Refresher {
    static R: OnceLock<&'static Refresher> = OnceLock::new();
    R.get_or_init(|| {
        let r: &'static Refresher = Box::leak(Box::new(Refresher {
            held: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("lock-refresh".into())
            .spawn(move || r.run())
            .expect("spawning the lock refresher thread");
        r
    })
}

impl Refresher {
    fn list(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Held>>> {
        self.held.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, held: Arc<Held>) {
        self.list().push(held);
        self.wake.notify_one();
    }

    fn unregister(&self, held: &Arc<Held>) {
        let mut list = self.list();
        if let Some(i) = list.iter().position(|h| Arc::ptr_eq(h, held)) {
            list.swap_remove(i);
        }
    }

    fn run(&self) {
        let mut list = self.list();
        loop {
            let mut next: Option<Instant> = None;
            for held in list.iter() {
                let Some(due) = held.refresh(&mut held.state()) else {
                    continue;
                };
                next = Some(next.map_or(due, |n| n.min(due)));
            }
            list = match next {
                None => self.wake.wait(list).unwrap_or_else(|e| e.into_inner()),
                Some(due) => {
                    let d = due.saturating_duration_since(Instant::now());
                    self.wake
                        .wait_timeout(list, d)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn lock_within_waits_for_the_holder_and_gives_up_at_its_deadline() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("look");
        let open = || super::super::open_lock_file(&path).unwrap();
        let held = lock_within(open(), &path, Duration::ZERO).unwrap().unwrap();
        assert!(
            lock_within(open(), &path, Duration::from_millis(50))
                .unwrap()
                .is_none(),
            "held: none by the deadline"
        );
        let waiter = std::thread::spawn({
            let path = path.clone();
            move || {
                let file = super::super::open_lock_file(&path).unwrap();
                lock_within(file, &path, Duration::from_secs(30)).unwrap()
            }
        });
        std::thread::sleep(Duration::from_millis(50));
        drop(held);
        assert!(waiter.join().unwrap().is_some(), "handed on once let go");
    }

    #[test]
    fn lock_excludes_threads_and_cleans_up() {
        let t = tempfile::tempdir().unwrap();
        let file = Arc::new(t.path().join("inbox.json"));
        let inside = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (file, inside) = (file.clone(), inside.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let _g = FileLock::acquire(&file, Duration::from_secs(10)).unwrap();
                        assert_eq!(
                            inside.fetch_add(1, Ordering::SeqCst),
                            0,
                            "two holders at once"
                        );
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(
            !t.path().join("inbox.json.lock").exists(),
            "lock directory removed"
        );
    }

    #[test]
    fn a_fresh_foreign_lock_dir_is_respected_and_a_stale_one_broken() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("config.json");
        let dir = lock_dir_for(&file);
        fs::create_dir(&dir).unwrap(); // as Claude Code would
        let err = FileLock::acquire(&file, Duration::from_millis(300)).unwrap_err();
        assert!(err.to_string().contains("timed out"), "{err}");
        File::open(&dir)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(11))
            .unwrap();
        let g = FileLock::acquire(&file, Duration::from_millis(300)).unwrap();
        drop(g);
        assert!(!dir.exists());
    }

    #[test]
    fn a_full_disk_while_taking_a_lock_leaves_no_lock_directory() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        crate::atomic_file::fault::inject("record", io::ErrorKind::StorageFull);
        match FileLock::acquire(&file, Duration::from_secs(1)) {
            // The record is an optimisation: the lock holds without it.
            Ok(g) => drop(g),
            Err(e) => panic!("a lock whose record cannot be written: {e}"),
        }
        assert!(
            !lock_dir_for(&file).exists(),
            "the lock directory outlived its failed operation"
        );
        // Nothing left to wait for: taken with no time to wait at all.
        match FileLock::acquire(&file, Duration::ZERO) {
            Ok(g) => drop(g),
            Err(e) => panic!("the next writer could not take the lock at once: {e}"),
        }
    }

    #[test]
    fn a_record_that_cannot_be_cleared_keeps_its_directory_for_the_next_writer() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        let dir = g.dir().to_path_buf();
        crate::atomic_file::fault::inject("clear", io::ErrorKind::Other);
        drop(g);
        assert!(
            dir.exists(),
            "a lock directory removed while its record still names it"
        );
        // The record names it: taken at once, well inside the 10 s rule.
        drop(FileLock::acquire(&file, STALE_AFTER / 4).unwrap());
        assert!(!dir.exists());
    }

    #[test]
    fn a_lock_that_cannot_be_refreshed_is_tried_again_later_not_at_once() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        refresher().unregister(&g.held);
        let mut st = g.held.state();
        st.touched = Instant::now().checked_sub(REFRESH_EVERY).unwrap();
        crate::atomic_file::fault::inject("touch", io::ErrorKind::Other);
        let next = g.held.refresh(&mut st).expect("the lock is still held");
        assert!(
            next > Instant::now(),
            "a failed refresh due again at once: the refresher would spin"
        );
        drop(st);
    }

    #[test]
    fn a_dead_swarm_holder_is_taken_over_at_once() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        // Simulate death: the OS lock goes (fd closed), the directory and the
        // sidecar record stay.
        let dir = g.dir().to_path_buf();
        refresher().unregister(&g.held);
        g.held.sidecar.unlock().unwrap();
        std::mem::forget(g);
        assert!(dir.exists());
        // Its directory is fresh, so the 10 s rule cannot free it, and no
        // time is given to wait: only the record naming it can.
        let _g2 = FileLock::acquire(&file, Duration::ZERO)
            .unwrap_or_else(|e| panic!("a dead holder's lock not taken over at once: {e}"));
    }

    /// Sets a held lock's mtime to `when` as its holder would, and makes
    /// the refresher (and `verify`) think the last touch was `ago`.
    fn backdate(g: &FileLock, when: SystemTime, ago: Duration) {
        let mut st = g.held.state();
        let dir = safe_path::open_dir(g.dir()).unwrap();
        dir.set_modified(when).unwrap();
        st.ident = Some(DirIdent::of(&dir.metadata().unwrap()));
        st.touched = Instant::now() - ago;
    }

    #[test]
    fn the_refresher_touches_a_long_held_lock() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("slow.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        let old = SystemTime::now() - Duration::from_secs(8);
        // As if taken long ago, so the refresher is due at once.
        backdate(&g, old, REFRESH_EVERY);
        refresher().wake.notify_one();
        let deadline = timeouts::Deadline::after(timeouts::WAIT);
        let mut pause = timeouts::FIRST_PAUSE;
        while fs::metadata(g.dir()).unwrap().modified().unwrap() <= old {
            assert!(
                !deadline.passed(),
                "lock mtime never refreshed within {deadline}"
            );
            std::thread::sleep(pause);
            pause = timeouts::next_pause(pause);
        }
        g.verify()
            .expect("a lock its own refresher touched is still its own");
    }

    /// What a Claude Code writer does to a lock whose holder stopped
    /// refreshing it for 10 s: break it (`rmdir`) and take it (`mkdir`).
    fn break_and_take(dir: &Path) {
        fs::remove_dir(dir).unwrap();
        // Real breaks come 10 s after the holder's last touch; 20 ms keeps
        // the new directory's ctime apart even where an inode number is
        // reused at once and the clock is coarse.
        std::thread::sleep(Duration::from_millis(20));
        fs::create_dir(dir).unwrap();
    }

    #[test]
    fn a_holder_whose_lock_was_broken_while_it_was_suspended_knows_it_lost_it() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let mut g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        g.verify().unwrap();
        let dir = g.dir().to_path_buf();
        break_and_take(&dir);
        assert!(
            matches!(g.verify(), Err(LockError::Lost { .. })),
            "a broken lock still verified"
        );
        // Also when the last touch is long past (the full, touching check),
        // and without touching the other holder's directory.
        let theirs = fs::symlink_metadata(&dir).unwrap().modified().unwrap();
        g.held.state().touched = Instant::now() - REFRESH_EVERY;
        assert!(matches!(g.verify(), Err(LockError::Lost { .. })));
        assert_eq!(
            fs::symlink_metadata(&dir).unwrap().modified().unwrap(),
            theirs
        );
        // Taking it again waits for the other holder.
        assert!(matches!(
            g.retake(Duration::from_millis(200)),
            Err(LockError::Timeout { .. })
        ));
        fs::remove_dir(&dir).unwrap(); // the other writer is done
        g.retake(Duration::from_secs(1)).unwrap();
        g.verify().unwrap();
        drop(g);
        assert!(!dir.exists());
    }

    #[test]
    fn a_holder_that_lost_its_lock_leaves_the_new_holders_directory_alone() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        let dir = g.dir().to_path_buf();
        break_and_take(&dir);
        drop(g);
        assert!(
            dir.exists(),
            "the former holder removed someone else's lock"
        );
    }

    #[test]
    fn a_suspended_holder_nobody_broke_keeps_its_lock_and_refreshes_it() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        let old = SystemTime::now() - Duration::from_secs(30);
        backdate(&g, old, Duration::from_secs(30));
        let before = SystemTime::now();
        g.verify().unwrap();
        // The verify touched it: its mtime was set to the time of the touch.
        let mtime = fs::metadata(g.dir()).unwrap().modified().unwrap();
        assert!(
            mtime >= before,
            "the verify left it at {mtime:?}, not touched (set to {old:?} before)"
        );
    }

    #[test]
    fn a_link_planted_as_a_sidecar_is_refused_and_its_target_untouched() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let target = t.path().join("precious");
        fs::write(&target, b"24 bytes of precious data").unwrap();
        let sidecar = sidecar_for(&lock_dir_for(&file));
        std::os::unix::fs::symlink(&target, &sidecar).unwrap();
        let err = FileLock::acquire(&file, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(err, LockError::Unsafe(_)), "{err}");
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(fs::read(&target).unwrap(), b"24 bytes of precious data");
        // A dangling one creates nothing where it points.
        fs::remove_file(&sidecar).unwrap();
        let outside = t.path().join("outside");
        std::os::unix::fs::symlink(&outside, &sidecar).unwrap();
        assert!(FileLock::acquire(&file, Duration::from_secs(1)).is_err());
        assert!(
            !outside.exists(),
            "a file was created through a dangling link"
        );
        assert!(!lock_dir_for(&file).exists());
    }
}
