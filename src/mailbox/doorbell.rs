//! Doorbells: a FIFO per teammate runtime, `<state>/runtime/<member>.wake`
//! (`Root::runtime_file(team, member, "wake")`), that wakes that runtime
//! and no other. The runtime owns it ([`Doorbell`]) and sleeps in `poll(2)`
//! on it; whoever changes its inbox rings it ([`ring`]): swarm's senders
//! right after a send, and the team watcher (`teammate::wake`) for writes
//! that ring nothing (Claude Code's). A ring is one byte written without
//! blocking; one nobody listens to (no runtime, a full pipe: a wake-up is
//! already pending) costs an `open` and a `write` and is dropped.
//!
//! A FIFO is a file: coordination stays through files only, and no inotify
//! instance is spent per runtime.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The listening end of a doorbell, owned by one runtime.
#[derive(Debug)]
pub struct Doorbell {
    path: PathBuf,
    /// Session read-write, so the FIFO always has a writer: no end-of-file,
    /// and no blocking `open`.
    fifo: File,
}

impl Doorbell {
    /// Makes (or takes over, after a predecessor died) the FIFO at `path`
    /// and listens on it. A non-FIFO in its place is replaced.
    pub fn open(path: &Path) -> io::Result<Doorbell> {
        if let Some(dir) = path.parent() {
            crate::atomic_file::ensure_dir(dir)?;
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_fifo() => {}
            Ok(_) => {
                std::fs::remove_file(path)?;
                mkfifo(path)?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => mkfifo(path)?,
            Err(e) => return Err(e),
        }
        let fifo = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(path)?;
        Ok(Doorbell {
            path: path.to_path_buf(),
            fifo,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether its path still names this very FIFO: `false` once it was
    /// removed, or replaced by anything else (a file, a link, another
    /// FIFO), after which no sender reaches this runtime through it.
    pub fn intact(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::symlink_metadata(&self.path), self.fifo.metadata()) {
            (Ok(there), Ok(mine)) => {
                there.file_type().is_fifo()
                    && there.dev() == mine.dev()
                    && there.ino() == mine.ino()
            }
            _ => false,
        }
    }

    /// Sleeps until the bell rings (`true`, every ring so far swallowed)
    /// or `timeout` passes (`false`).
    pub fn wait(&self, timeout: Duration) -> bool {
        let ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
        let mut pfd = libc::pollfd {
            fd: self.fifo.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd for the duration of the call,
        // and its fd is open (owned by `self.fifo`).
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        if n <= 0 {
            if n < 0 {
                // EINTR or worse: let the caller look (a spurious wake-up
                // costs one read of the inbox; a missed one costs a message).
                std::thread::sleep(Duration::from_millis(10));
                return true;
            }
            return false;
        }
        let mut buf = [0u8; 256];
        while matches!((&self.fifo).read(&mut buf), Ok(n) if n > 0) {}
        true
    }
}

/// What a ring found at the doorbell's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    /// A FIFO: rung (heard if a runtime listens).
    Rang,
    /// Nothing: no runtime made one (a Claude Code teammate, the lead),
    /// or it was removed (its runtime makes it again within
    /// [`CHECK_EVERY`]).
    Missing,
    /// Something else (a file, a link, a directory): never written; its
    /// runtime replaces it within [`CHECK_EVERY`].
    NotAFifo,
}

/// How often a listening runtime checks that its doorbell is still its own
/// (`Doorbell::intact`), making it again if not: the longest a message
/// waits when its doorbell was removed or replaced (the polling bound).
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Rings the doorbell at `path` if a runtime listens on it; never blocks,
/// never fails (see the module docs); says what it found there.
pub fn ring(path: &Path) -> Rung {
    match open_to_ring(path) {
        Some(bell) => {
            // A full pipe already rings; a ring is never an error (see above).
            crate::dropped::ignore(knock(&bell), "ringing a doorbell");
            Rung::Rang
        }
        None => match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Rung::Missing,
            // A FIFO that would not open (no room for a descriptor): as
            // good as missing for this ring.
            Ok(m) if m.file_type().is_fifo() => Rung::Missing,
            _ => Rung::NotAFifo,
        },
    }
}

/// What is wrong with the doorbell at `path`, for `swarm doctor`: `None`
/// when it is a FIFO.
pub fn problem(path: &Path) -> Option<String> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_fifo() => None,
        Ok(m) if m.file_type().is_symlink() => Some("is a symbolic link, not a FIFO".into()),
        Ok(m) if m.is_dir() => Some("is a directory, not a FIFO".into()),
        Ok(_) => Some("is a regular file, not a FIFO".into()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Some("is missing".into()),
        Err(e) => Some(format!("cannot be read ({e})")),
    }
}

/// The doorbell at `path`, opened to ring it: `None` when nothing is there
/// or it is no FIFO (a file planted in its place is never written).
///
/// Session read-write, not write-only: this end then counts as a reader
/// too, so a listener that closes between this open and [`knock`] (a
/// runtime ending just as it is rung) leaves a pipe that still has one, and
/// the write cannot fail with `EPIPE`, which raises SIGPIPE, and the
/// short-lived commands keep SIGPIPE at its default action (`main.rs`): a
/// `swarm down` ringing a teammate that had just approved and ended was
/// killed by it half-way through asking the team, and a `swarm send` whose
/// message was already on disk exited 141 without a word. With nobody
/// listening the byte lands in a pipe only this end holds, and is gone
/// when it closes.
fn open_to_ring(path: &Path) -> Option<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    f.metadata()
        .is_ok_and(|m| m.file_type().is_fifo())
        .then_some(f)
}

/// One ring on an opened doorbell.
fn knock(bell: &File) -> io::Result<()> {
    (&*bell).write_all(&[1])
}

fn mkfifo(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: `c` is a valid NUL-terminated path for the call's duration.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::AlreadyExists {
            return Ok(());
        }
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ring_wakes_the_listener_once_and_quiet_times_out() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("runtime").join("bob.wake");
        ring(&path); // nobody listens yet: dropped, no error
        let bell = Doorbell::open(&path).unwrap();
        assert!(!bell.wait(Duration::from_millis(20)));
        ring(&path);
        ring(&path);
        assert!(bell.wait(Duration::from_secs(5)));
        assert!(
            !bell.wait(Duration::from_millis(20)),
            "two rings before a wait are one wake-up"
        );
        drop(bell);
        ring(&path); // the FIFO stays, its listener gone: dropped
        let again = Doorbell::open(&path).unwrap();
        assert!(!again.wait(Duration::from_millis(20)));
    }

    #[test]
    fn a_listener_that_ends_between_open_and_ring_breaks_no_pipe() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.wake");
        let bell = Doorbell::open(&path).unwrap();
        let end = open_to_ring(&path).expect("a FIFO with a listener");
        drop(bell); // the runtime ends before the byte is written
        // Write-only, this was EPIPE (SIGPIPE, ignored by the test harness,
        // kills `swarm down` and `swarm send`).
        knock(&end).expect("no broken pipe");
        drop(end);
        let again = Doorbell::open(&path).unwrap();
        assert!(
            !again.wait(Duration::from_millis(20)),
            "a ring nobody heard is not kept for the next listener"
        );
    }

    #[test]
    fn a_regular_file_in_its_place_is_never_written_and_is_replaced() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.wake");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(ring(&path), Rung::NotAFifo);
        assert_eq!(std::fs::read(&path).unwrap(), b"");
        let bell = Doorbell::open(&path).unwrap();
        assert_eq!(ring(&path), Rung::Rang);
        assert!(bell.wait(Duration::from_secs(5)));
    }

    /// Issue 24, item 5: a doorbell removed or replaced under its runtime
    /// is no longer its own, and a ring and `swarm doctor` say what is there.
    #[test]
    fn a_removed_or_replaced_doorbell_is_not_intact_and_says_what_is_there() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.wake");
        let bell = Doorbell::open(&path).unwrap();
        assert!(bell.intact());
        assert_eq!(problem(&path), None);

        std::fs::remove_file(&path).unwrap();
        assert!(!bell.intact());
        assert_eq!(ring(&path), Rung::Missing);
        assert_eq!(problem(&path).as_deref(), Some("is missing"));

        std::os::unix::fs::symlink("/dev/null", &path).unwrap();
        assert!(!bell.intact());
        assert_eq!(ring(&path), Rung::NotAFifo);
        assert_eq!(
            problem(&path).as_deref(),
            Some("is a symbolic link, not a FIFO")
        );
        std::fs::remove_file(&path).unwrap();

        // Another FIFO in its place is not this runtime's either.
        let other = Doorbell::open(&path).unwrap();
        assert!(!bell.intact());
        assert!(other.intact());
    }
}
