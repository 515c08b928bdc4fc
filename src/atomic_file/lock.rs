//! Locks: Claude Code's `<file>.lock` directories plus swarm's OS lock on a
//! sidecar file beside each (see the module above for the protocol).

use super::{DIR_MODE, FILE_MODE};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use thiserror::Error;

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

/// Why a lock could not be taken.
#[derive(Debug, Error)]
pub enum LockError {
    #[error("timed out after {waited:?} waiting for the lock {path} (held by {holder})")]
    Timeout {
        path: PathBuf,
        waited: Duration,
        holder: &'static str,
    },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

/// A held lock: the `<file>.lock` directory plus the OS lock on its sidecar.
/// Released on drop (sidecar record cleared, directory removed, OS lock
/// released, in that order).
#[derive(Debug)]
pub struct FileLock {
    dir: PathBuf,
    sidecar: File,
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
            let _ = tx.send(got.map(|()| sidecar));
        })
        .map_err(|source| LockError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    match rx.recv_timeout(timeout) {
        Ok(Ok(file)) => Ok(Some(file)),
        Ok(Err(source)) => Err(LockError::Io {
            path: dir.to_path_buf(),
            source,
        }),
        Err(_) => Ok(None),
    }
}

fn open_sidecar(dir: &Path) -> Result<File, LockError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(crate::paths::sidecar_for(dir))
        .map_err(|source| LockError::Io {
            path: dir.to_path_buf(),
            source,
        })
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

/// What a swarm holder writes into the sidecar: the lock directory's identity.
fn dir_identity(meta: &fs::Metadata) -> String {
    format!(
        "swarm {} {} {}\n",
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    )
}

impl FileLock {
    /// Locks `file` (which need not exist) with the directory `<file>.lock`.
    pub fn acquire(file: &Path, timeout: Duration) -> Result<Self, LockError> {
        Self::acquire_dir(&crate::paths::lock_dir_for(file), timeout)
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
            Err(fs::TryLockError::Error(source)) => {
                return Err(LockError::Io {
                    path: dir.to_path_buf(),
                    source,
                });
            }
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
        let dir = crate::paths::lock_dir_for(file);
        let sidecar = open_sidecar(&dir)?;
        match sidecar.try_lock() {
            Ok(()) => Ok(Some(OsLock { dir, sidecar })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(source)) => Err(LockError::Io { path: dir, source }),
        }
    }

    /// Waits, at most `timeout`, until no swarm process holds `file`'s lock,
    /// and returns a shared hold that keeps it so. `None` on timeout.
    pub fn wait_shared(file: &Path, timeout: Duration) -> Result<Option<SharedOsLock>, LockError> {
        let dir = crate::paths::lock_dir_for(file);
        let sidecar = open_sidecar(&dir)?;
        let got = match sidecar.try_lock_shared() {
            Ok(()) => Some(sidecar),
            Err(fs::TryLockError::WouldBlock) => wait_for_os_lock(sidecar, &dir, timeout, true)?,
            Err(fs::TryLockError::Error(source)) => {
                return Err(LockError::Io { path: dir, source });
            }
        };
        Ok(got.map(|f| SharedOsLock { _sidecar: f }))
    }

    /// The lock directory this guard holds.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl OsLock {
    /// Takes the lock directory (swarm against Claude Code), waiting at most
    /// `timeout` for a foreign holder; the OS lock is kept for as long as the
    /// returned [`FileLock`] lives.
    pub fn take_dir(self, timeout: Duration) -> Result<FileLock, LockError> {
        let start = Instant::now();
        let OsLock { dir, sidecar } = self;
        let dir = dir.as_path();
        let io_err = |source| LockError::Io {
            path: dir.to_path_buf(),
            source,
        };
        // The lock directory: swarm against Claude Code.
        let mut pause = Duration::from_millis(5);
        loop {
            match fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
                Ok(()) => {
                    // The directory is this process's from here on: the
                    // guard removes it on every path out, failures included
                    // (a directory left behind would cost the next writer
                    // the 10 s stale rule).
                    let lock = FileLock {
                        dir: dir.to_path_buf(),
                        sidecar,
                    };
                    let meta = fs::metadata(dir).map_err(io_err)?;
                    // The record only speeds up the takeover of a dead
                    // holder's lock; without it (a full disk cannot hold
                    // its 40 bytes) the lock is as good, and a holder that
                    // dies leaves it to the 10 s rule.
                    if let Err(e) = lock.write_record(&meta) {
                        tracing::warn!(lock = %dir.display(), error = %e, "cannot record the lock holder; a crash would leave the lock to the 10 s rule");
                    }
                    refresher().register(&lock.dir);
                    return Ok(lock);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let meta = match fs::metadata(dir) {
                        Ok(m) => m,
                        Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(io_err(e)),
                    };
                    let mut record = String::new();
                    let mut s = &sidecar;
                    s.seek(SeekFrom::Start(0)).map_err(io_err)?;
                    let _ = s.read_to_string(&mut record);
                    let dead_swarm_holder = record == dir_identity(&meta);
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
}

impl FileLock {
    /// Records the lock directory's identity in the sidecar (see
    /// [`dir_identity`]).
    fn write_record(&self, meta: &fs::Metadata) -> io::Result<()> {
        #[cfg(test)]
        super::fault::check("record")?;
        let mut s = &self.sidecar;
        s.set_len(0)?;
        s.write_all_at0(dir_identity(meta).as_bytes())
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        refresher().unregister(&self.dir);
        // Clear the record before removing the directory: a crash in between
        // leaves a directory with no swarm record, which the 10 s rule frees,
        // never a record that could match a later directory's identity.
        let _ = self.sidecar.set_len(0);
        let _ = fs::remove_dir(&self.dir);
        let _ = self.sidecar.unlock();
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
/// lock stale. It sleeps on a condition variable while nothing is held, so
/// an idle process pays nothing.
struct Refresher {
    held: Mutex<Vec<(PathBuf, Instant)>>,
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
    fn register(&self, dir: &Path) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.push((dir.to_path_buf(), Instant::now()));
        self.wake.notify_one();
    }

    fn unregister(&self, dir: &Path) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = held.iter().position(|(d, _)| d == dir) {
            held.swap_remove(i);
        }
    }

    fn run(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let now = Instant::now();
            for (dir, last) in held.iter_mut() {
                if now.duration_since(*last) >= REFRESH_EVERY {
                    let _ = File::open(&*dir).and_then(|f| f.set_modified(SystemTime::now()));
                    *last = now;
                }
            }
            let next = held.iter().map(|(_, last)| *last + REFRESH_EVERY).min();
            held = match next {
                None => self.wake.wait(held).unwrap_or_else(|e| e.into_inner()),
                Some(due) => {
                    let d = due.saturating_duration_since(Instant::now());
                    self.wake
                        .wait_timeout(held, d)
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
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

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
        let dir = crate::paths::lock_dir_for(&file);
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
            !crate::paths::lock_dir_for(&file).exists(),
            "the lock directory outlived its failed operation"
        );
        let start = Instant::now();
        drop(FileLock::acquire(&file, Duration::from_secs(5)).unwrap());
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_dead_swarm_holder_is_taken_over_at_once() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("inbox.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        // Simulate death: the OS lock goes (fd closed), the directory and the
        // sidecar record stay.
        let dir = g.dir().to_path_buf();
        refresher().unregister(&dir);
        g.sidecar.unlock().unwrap();
        std::mem::forget(g);
        assert!(dir.exists());
        let start = Instant::now();
        let _g2 = FileLock::acquire(&file, Duration::from_secs(5)).unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "took {:?}",
            start.elapsed()
        );
    }

    #[test]
    fn the_refresher_touches_a_long_held_lock() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("slow.json");
        let g = FileLock::acquire(&file, Duration::from_secs(1)).unwrap();
        let old = SystemTime::now() - Duration::from_secs(8);
        File::open(g.dir()).unwrap().set_modified(old).unwrap();
        // Pretend it was taken long ago so the refresher is due at once.
        {
            let mut held = refresher().held.lock().unwrap();
            for (d, last) in held.iter_mut() {
                if d == g.dir() {
                    *last = Instant::now() - REFRESH_EVERY;
                }
            }
            refresher().wake.notify_one();
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while fs::metadata(g.dir()).unwrap().modified().unwrap() <= old {
            assert!(Instant::now() < deadline, "lock mtime never refreshed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
