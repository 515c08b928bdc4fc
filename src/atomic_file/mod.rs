//! Crash-safe, private files and the locks that guard them.
//!
//! * [`write_atomic`]: temp file in the same directory (`<file>.tmp.<8 hex>`,
//!   the pattern Claude Code also uses and skips), fsync, rename over the
//!   target, fsync the directory. A reader never sees a torn file written by
//!   swarm, and after a crash the old or the new content is there, whole.
//!   [`write_atomic_locked`] also verifies, just before the rename, that the
//!   lock guarding the file is still the writer's ([`FileLock::verify`]).
//! * [`ensure_dir`]: directories 0700, files 0600, whatever the umask.
//! * [`write_cache`] / [`map_cache`]: a cache file (the board index)
//!   replaced by rename without a sync, and read mapped instead of copied.
//! * Safe paths (`safe_path.rs`): nothing is created, read or written
//!   through a symbolic link, or in a directory that other users can write
//!   or own ([`check_dir`], [`UnsafePath`]); files are opened `O_NOFOLLOW`.
//! * [`quarantine`]: an unreadable file is copied aside as
//!   `<file>.corrupt-<epoch ms>` before anyone replaces it.
//! * [`FileLock`] (`lock.rs`): Claude Code's lock protocol (a `<file>.lock`
//!   directory, stale after 10 s, mtime refreshed every 5 s while held) plus
//!   an OS lock (`flock` through `std::fs::File::lock`) on a sidecar file
//!   `<file>.lock.flock`. The sidecar is never replaced by rename and never
//!   inside the lock directory (Claude Code releases with `rmdir`). Every
//!   swarm holder holds the sidecar while it holds the directory, and records
//!   the directory's identity in the sidecar; so a swarm waiter that holds the
//!   sidecar and finds a lock directory whose recorded holder is gone knows
//!   the holder died and takes over at once. A directory with no swarm record
//!   may be Claude Code's and gets the 10 s rule. A holder suspended past
//!   that rule may find its lock broken and taken: it knows its directory's
//!   identity, so it notices ([`LockError::Lost`]) instead of writing.
//! * [`remove_trees`] (`remove.rs`): whole directory trees removed, many
//!   entries at a time (each unlink of a written file waits on the journal).

mod lock;
mod remove;
mod safe_path;

pub use lock::{
    DEFAULT_LOCK_TIMEOUT, FileLock, LockError, OsLock, REFRESH_EVERY, STALE_AFTER, SharedOsLock,
    lock_dir_for, lock_within, sidecar_for,
};
pub use remove::remove_trees;
pub use safe_path::{PathProblem, UnsafePath, check_dir, hold_checks};
pub(crate) use safe_path::{first_problem, problem_of, problems_below};

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Private directory mode.
pub const DIR_MODE: u32 = 0o700;
/// Private file mode.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and any missing parents with mode 0700, after checking
/// that every component already there is one swarm may use (a real
/// directory, yours, that others cannot write: see `safe_path`). Modes are
/// set explicitly after creation, because the umask may have narrowed them.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    safe_path::ensure_dir(dir)
}

/// Replaces `path` with `bytes` atomically and durably, with mode 0600.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    TempFile::create(path)?
        .commit(path, bytes, None)
        .map_err(|e| e.source)
}

/// Replaces `path` with `bytes` atomically but not durably (no fsync): a
/// reader sees the old bytes or the new, never a mix, but a crash may leave
/// either, or an empty file. Only for caches that check what they read and
/// can be rebuilt (the task board index), and for a record made durable
/// right after by its writer (a teammate's unit in flight, synced once its
/// agent runs: `teammate::inflight`). A process killed after the rename
/// leaves the new bytes: only the machine's crash can lose them.
pub fn write_cache(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = TempFile::create(path)?;
    (&tmp.file).write_all(bytes)?;
    tmp.rename_unsynced(path)
}

/// Writes `bytes` over `path` in place (made, mode 0600, if missing; cut to
/// their length), without syncing, in a directory that passes
/// [`check_dir`], refusing a link in its place. No temp file and no rename:
/// nothing changes in the directory once the file is there. A reader may
/// see a mix of the old bytes and the new (while it is written, or after a
/// crash), so only for a cache whose bytes say their own length and hash
/// (the record of an inbox as last written, `mailbox::last_write`).
pub fn write_cache_in_place(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    check_dir(parent_of(path))?;
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| safe_path::refused_link(path, e))?;
    f.write_all_at(bytes, 0)?;
    f.set_len(bytes.len() as u64)
}

/// [`write_atomic`] of a file guarded by `lock`: between the durable temp
/// file and the rename, the lock is verified ([`FileLock::verify`]), so a
/// holder that lost its lock while suspended never replaces what another
/// writer wrote meanwhile. Then the error carries [`LockError::Lost`] (see
/// [`LockError::lost_in`]) and nothing was written.
pub fn write_atomic_locked(path: &Path, bytes: &[u8], lock: &FileLock) -> io::Result<()> {
    TempFile::create(path)?
        .commit(path, bytes, Some(lock))
        .map_err(|e| e.source)
}

/// Creates `path` with `bytes` only if it does not exist yet, mode 0600,
/// durably. Returns `false` when it already existed. The bytes are written
/// and fsynced in a temp file that is then hard-linked to `path` (which, like
/// O_EXCL, fails if `path` exists): a reader never sees the file empty or
/// half written, as it could between an O_EXCL create and its write.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(UnsafePath::new(path, PathProblem::Symlink).into_io());
        }
        Ok(_) => return Ok(false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let tmp = TempFile::create(path)?;
    {
        let mut f = &tmp.file;
        f.write_all(bytes)?;
        f.sync_data()?;
    }
    match fs::hard_link(&tmp.path, path) {
        Ok(()) => {
            sync_dir(parent_of(path))?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        // A filesystem without hard links: O_EXCL, then write and fsync
        // (a reader may see the file empty for that moment).
        Err(_) => create_new_excl(path, bytes),
    }
    // `tmp` goes on drop; `path` keeps the inode.
}

fn create_new_excl(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(e),
    };
    f.write_all(bytes)?;
    f.sync_data()?;
    sync_dir(parent_of(path))?;
    Ok(true)
}

/// Reads a whole file; `Ok(None)` when it does not exist. Its directory
/// must pass [`check_dir`], and the file itself must not be a link.
pub fn read_optional(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match read_nofollow(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Reads a whole file in a directory that passes [`check_dir`], refusing a
/// link in its place.
pub fn read_nofollow(path: &Path) -> io::Result<Vec<u8>> {
    check_dir(parent_of(path))?;
    let mut f = open_nofollow(path)?;
    let mut bytes = Vec::new();
    io::Read::read_to_end(&mut f, &mut bytes)?;
    Ok(bytes)
}

/// The bytes of a cache file that is only ever replaced by rename
/// ([`write_cache`]), mapped read-only instead of copied, in a directory
/// that passes [`check_dir`], refusing a link in its place; `Ok(None)` when
/// it does not exist. For a big file read whole at once (the board index,
/// 1.3 MB at 10,000 tasks): the pages come straight from the page cache,
/// mapped all in one call, where a read first has to allocate and fault in
/// as many fresh pages and copy into them (a fifth of a `task list`).
///
/// The map is of the file that was there when it was opened: a rename
/// over it later leaves those bytes as they were. Only a write in place
/// or a truncation could change them under the reader (a cut one would
/// fault), and nothing writes such a file in place.
pub fn map_cache(path: &Path) -> io::Result<Option<Mapped>> {
    let Some(file) = open_optional(path)? else {
        return Ok(None);
    };
    Mapped::of(&file).map(Some)
}

/// A file's bytes mapped read-only ([`map_cache`]); unmapped on drop.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; shared
// references only read it.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    fn of(file: &File) -> io::Result<Mapped> {
        use std::os::fd::AsRawFd;
        let len = usize::try_from(file.metadata()?.len()).map_err(io::Error::other)?;
        if len == 0 {
            // mmap refuses an empty length; an empty map needs no pages.
            return Ok(Mapped {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a fresh private read-only mapping of an open file; the
        // kernel checks the descriptor and the length.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_POPULATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapped { ptr, len })
    }
}

impl std::ops::Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self`
        // lives (see `map_cache` for why they do not change).
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping `of` made, unmapped once.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}

/// Opens a file for reading in a directory that passes [`check_dir`],
/// refusing a link in its place; `Ok(None)` when it does not exist.
pub fn open_optional(path: &Path) -> io::Result<Option<File>> {
    check_dir(parent_of(path))?;
    match open_nofollow(path) {
        Ok(f) => Ok(Some(f)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens (creating it, 0600, empty) a file that is only ever locked with
/// the OS's locks, never written, in a directory that passes
/// [`check_dir`], refusing a link in its place.
pub fn open_lock_file(path: &Path) -> io::Result<File> {
    check_dir(parent_of(path))?;
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| safe_path::refused_link(path, e))
}

/// Opens an existing file for writing in place, in a directory that passes
/// [`check_dir`], refusing a link in its place. Only for a file whose
/// readers can tell a torn write (the history's appends).
pub fn open_for_write_in_place(path: &Path) -> io::Result<File> {
    check_dir(parent_of(path))?;
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| safe_path::refused_link(path, e))
}

/// Opens a file for reading, refusing a link in its place.
pub fn open_nofollow(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| safe_path::refused_link(path, e))
}

/// Copies an unreadable file aside as `<file>.corrupt-<epoch ms>` (0600) and
/// returns the copy's path. The original stays until its owner replaces it.
pub fn quarantine(path: &Path) -> io::Result<PathBuf> {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".corrupt-{}", crate::clock::now_ms()));
    let mut dest = PathBuf::from(name);
    let mut n = 1;
    while dest.exists() {
        let mut s = dest.as_os_str().to_owned();
        s.push(format!("-{n}"));
        dest = PathBuf::from(s);
        n += 1;
    }
    let bytes = read_nofollow(path)?;
    write_atomic(&dest, &bytes)?;
    Ok(dest)
}

/// fsync a directory so a rename or create in it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The temp file `<target>.tmp.<tag>` of a write in progress.
pub fn temp_path(target: &Path, tag: &str) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(format!(".tmp.{tag}"));
    PathBuf::from(name)
}

/// A temp file beside its target (`<target>.tmp.<8 hex tag>`), removed on
/// drop unless renamed over the target. Its existence is evidence: while it
/// is there, the write it belongs to has not replaced the target (the
/// group commit of inboxes relies on this, see `mailbox::spool`).
pub(crate) struct TempFile {
    path: PathBuf,
    tag: String,
    file: File,
    armed: bool,
}

/// Why [`TempFile::commit`] failed, and whether the rename had happened.
#[derive(Debug)]
pub(crate) struct CommitError {
    pub renamed: bool,
    pub source: io::Error,
}

impl TempFile {
    pub(crate) fn create(target: &Path) -> io::Result<Self> {
        check_dir(parent_of(target))?;
        loop {
            let tag = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
            let path = temp_path(target, &tag);
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(FILE_MODE)
                .open(&path)
            {
                Ok(file) => {
                    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
                    return Ok(TempFile {
                        path,
                        tag,
                        file,
                        armed: true,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The 8 hex digits that name this temp file.
    pub(crate) fn tag(&self) -> &str {
        &self.tag
    }

    /// Writes `bytes`, fsyncs, renames over `target` and fsyncs the
    /// directory: [`write_atomic`] in steps ([`TempFile::write_synced`],
    /// then [`TempFile::rename_over`]).
    ///
    /// On a failure before the rename the temp file is still there, and
    /// goes when `self` is dropped: a caller whose claims point at this tag
    /// releases them first.
    pub(crate) fn commit(
        &mut self,
        target: &Path,
        bytes: &[u8],
        lock: Option<&FileLock>,
    ) -> Result<(), CommitError> {
        self.write_synced(bytes).map_err(|source| CommitError {
            renamed: false,
            source,
        })?;
        self.rename_over(target, lock)
    }

    /// The temp file, for a caller that writes it in pieces; it then makes
    /// them durable with [`TempFile::sync`] before the rename.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Makes what was written through [`TempFile::file`] durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    /// Writes `bytes` to the temp file and makes them durable.
    pub(crate) fn write_synced(&mut self, bytes: &[u8]) -> io::Result<()> {
        #[cfg(test)]
        fault::check("write")?;
        let mut f = &self.file;
        f.write_all(bytes)?;
        f.sync_data()
    }

    /// Renames the (written) temp file over `target` and fsyncs the
    /// directory. With the `lock` that guards `target`, verifies it first:
    /// a lost lock fails before the rename (see [`write_atomic_locked`]).
    pub(crate) fn rename_over(
        &mut self,
        target: &Path,
        lock: Option<&FileLock>,
    ) -> Result<(), CommitError> {
        let before = |source| CommitError {
            renamed: false,
            source,
        };
        if let Some(lock) = lock {
            lock.verify().map_err(|e| before(io::Error::other(e)))?;
        }
        // rename would replace a link rather than write through it, but a
        // link where a swarm file belongs is a mistake to report, not undo.
        if fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(before(
                UnsafePath::new(target, PathProblem::Symlink).into_io(),
            ));
        }
        fs::rename(&self.path, target).map_err(before)?;
        self.armed = false;
        sync_dir(parent_of(target)).map_err(|source| CommitError {
            renamed: true,
            source,
        })
    }
}

impl TempFile {
    /// Renames the temp file over `target` without syncing anything (see
    /// [`write_cache`]); a link in `target`'s place is refused.
    fn rename_unsynced(&mut self, target: &Path) -> io::Result<()> {
        if fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(UnsafePath::new(target, PathProblem::Symlink).into_io());
        }
        fs::rename(&self.path, target)?;
        self.armed = false;
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if self.armed {
            // A temp file left behind names no commit (its batch, if any,
            // is gone first) and is removed with its owner's next clean-up.
            crate::dropped::ignore(remove_if_there(&self.path), "removing a temp file");
        }
    }
}

/// Removes `path` if it is there: only a file that exists and cannot be
/// removed is an error.
pub fn remove_if_there(path: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Failures injected into this thread's next file operation, for unit
/// tests of the paths a full disk takes.
#[cfg(test)]
pub(crate) mod fault {
    use std::cell::Cell;
    use std::io;

    thread_local! {
        static NEXT: Cell<Option<(&'static str, io::ErrorKind)>> = const { Cell::new(None) };
    }

    /// Makes the next `step` (`"record"`: a lock's sidecar record;
    /// `"clear"`: clearing it on release; `"touch"`: refreshing a held
    /// lock; `"write"`: a temp file's
    /// contents) on this thread fail with `kind`.
    pub(crate) fn inject(step: &'static str, kind: io::ErrorKind) {
        NEXT.with(|f| f.set(Some((step, kind))));
    }

    /// The injected failure of `step`, if there is one (it fires once).
    pub(crate) fn check(step: &str) -> io::Result<()> {
        match NEXT.with(Cell::get) {
            Some((s, kind)) if s == step => {
                NEXT.with(|f| f.set(None));
                Err(io::Error::from(kind))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_mapped_cache_keeps_the_bytes_it_was_opened_with() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("cache");
        assert!(map_cache(&f).unwrap().is_none());
        write_cache(&f, b"").unwrap();
        assert_eq!(&*map_cache(&f).unwrap().unwrap(), b"");
        write_cache(&f, b"first bytes").unwrap();
        let first = map_cache(&f).unwrap().unwrap();
        // Replaced by rename, as a cache is: the map still holds the old.
        write_cache(&f, b"second, longer bytes").unwrap();
        assert_eq!(&*first, b"first bytes");
        assert_eq!(&*map_cache(&f).unwrap().unwrap(), b"second, longer bytes");
        // Read on another thread (a board look decodes beside its listing).
        std::thread::scope(|s| {
            assert_eq!(s.spawn(|| first.len()).join().unwrap(), 11);
        });
        // A link in its place is refused, its target not mapped.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(map_cache(&link).is_err());
    }

    #[test]
    fn modes_are_private_whatever_the_umask() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("a/b/c");
        ensure_dir(&d).unwrap();
        assert_eq!(mode(&d), 0o700);
        assert_eq!(mode(&t.path().join("a")), 0o700);
        let f = d.join("f.json");
        write_atomic(&f, b"[]").unwrap();
        assert_eq!(mode(&f), 0o600);
        assert_eq!(fs::read(&f).unwrap(), b"[]");
        write_atomic(&f, b"[1]").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"[1]");
        let leftovers: Vec<_> = fs::read_dir(&d).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temp file left behind");
    }

    #[test]
    fn create_new_without_links_still_never_overwrites() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("x");
        assert!(create_new_excl(&f, b"[]").unwrap());
        assert!(!create_new_excl(&f, b"{}").unwrap());
        assert_eq!(fs::read(&f).unwrap(), b"[]");
    }

    #[test]
    fn create_new_never_overwrites() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("x");
        assert!(create_new(&f, b"[]").unwrap());
        assert!(!create_new(&f, b"other").unwrap());
        assert_eq!(fs::read(&f).unwrap(), b"[]");
    }

    #[test]
    fn quarantine_keeps_the_bytes() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("inbox.json");
        fs::write(&f, b"[{garbage").unwrap();
        let q = quarantine(&f).unwrap();
        assert!(q.to_string_lossy().contains("inbox.json.corrupt-"));
        assert_eq!(fs::read(&q).unwrap(), b"[{garbage");
        assert_ne!(
            quarantine(&f).unwrap(),
            q,
            "a second copy does not overwrite the first"
        );
    }
}
