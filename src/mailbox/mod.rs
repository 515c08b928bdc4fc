//! Inboxes: one JSON array per member at `Root::inbox(team, member)`, in
//! Claude Code's format (reference §3, §5), made durable and bounded.
//!
//! * [`Mailbox::append`] sends: under the inbox lock (Claude Code's
//!   `<file>.lock` directory plus an OS lock) it re-reads, validates, pushes,
//!   compacts if a cap is reached, writes atomically, and returns only once
//!   the new `msg_id` is in the file on disk. Sends that find the lock held
//!   are group-committed: each hands its entry to the holder through the
//!   inbox's spool and waits until the holder's one durable write holds it
//!   (`mailbox/spool.rs` has the protocol and its crash cases).
//! * [`Mailbox::read`] returns every entry in file order, `read:true` ones
//!   included (callers filter with [`Entry::is_unread`]).
//! * [`Mailbox::consume`] removes entries by identity only, after copying
//!   them to the member's bounded history ([`Mailbox::history`]).
//! * [`Mailbox::watch`], [`Mailbox::poll_new`], [`Mailbox::follow`]: wake-ups
//!   and "each new entry exactly once".
//!
//! Nothing is lost silently: a corrupt inbox is copied aside
//! (`<file>.corrupt-<ms>`) and reported, never read as empty; entries that
//! compaction drops go to history; a send that could only succeed by
//! dropping an unread plain message fails with "inbox full".

mod entry;
mod history;
mod inbox;
mod spool;
mod view;
mod watch;

#[cfg(test)]
mod tests;

pub use entry::{Entry, EntryKey, InvalidEntry};
pub use watch::{InboxWatcher, POLL_EVERY};

use crate::atomic_file::{self, DEFAULT_LOCK_TIMEOUT, FileLock, LockError, TempFile, UnsafePath};
use crate::paths::Root;
use crate::team::names::NameError;
use inbox::{Limits, Parsed, Stored, Streamed};
use spool::{Fate, Refusal, Spool};
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// Longest `text` of one entry, in bytes.
pub const MAX_TEXT_BYTES: usize = 64 * 1024;
/// Largest inbox file; a send that would pass it compacts first.
pub const MAX_FILE_BYTES: usize = 4 * 1024 * 1024;
/// What compaction brings an oversized inbox down to.
pub const COMPACT_TARGET_BYTES: usize = 2 * 1024 * 1024;
/// Most plain (non-protocol) messages kept: read ones beyond it move to
/// history; unread ones are never dropped (only the byte cap refuses a send).
pub const MAX_PLAIN: usize = 1000;
/// Most `read:true` entries kept (only Claude Code 2.1.88 writes them).
pub const MAX_READ: usize = 200;
/// Most unread protocol frames kept; older ones move to history.
pub const MAX_UNREAD_PROTOCOL: usize = 2000;
/// The last part of a send's deadline (at most a tenth of it) is kept for
/// a sender whose entry a holder has claimed: it stops competing for the
/// lock and waits for that holder's outcome (a live holder has only its own
/// I/O left). Past the deadline it answers [`MailboxError::StillPending`].
const CLAIMED_GRACE: Duration = Duration::from_secs(1);
/// How long a waiter whose entry missed a commit pauses before it tries
/// for the lock again (see `Mailbox::await_commit`).
const WAITER_NAP: Duration = Duration::from_millis(1);
/// Bounds of a member's history.
pub use history::{MAX_BYTES as HISTORY_MAX_BYTES, MAX_ENTRIES as HISTORY_MAX_ENTRIES};

/// Why a mailbox operation failed. Messages name the inbox and the number.
#[derive(Debug, Error)]
pub enum MailboxError {
    #[error(
        "message text is {bytes} bytes, over the limit of {limit} bytes; nothing was sent to {}",
        inbox.display()
    )]
    TextTooLong {
        inbox: PathBuf,
        bytes: usize,
        limit: usize,
    },
    #[error("inbox full: {}: {detail}; nothing was sent", inbox.display())]
    InboxFull { inbox: PathBuf, detail: String },
    #[error(
        "msg_id {msg_id} is already in {} with different content; a msg_id is never reused",
        inbox.display()
    )]
    DuplicateMsgId { inbox: PathBuf, msg_id: String },
    #[error("the message {msg_id} was written to {} but is not there on reading it back", inbox.display())]
    NotPersisted { inbox: PathBuf, msg_id: String },
    #[error("the message {msg_id} could not be read back from {}'s spool ({problem}); nothing was sent", inbox.display())]
    Unreadable {
        inbox: PathBuf,
        msg_id: String,
        problem: String,
    },
    /// The send's deadline passed while a holder (another swarm process
    /// writing the inbox, which had taken this message into its write) had
    /// not finished: it is stopped, or very slow. Nothing is lost and
    /// nothing will be duplicated: the message is delivered once when that
    /// process resumes, or by the next send to the inbox if it died. The
    /// CLI maps this to its own exit code (the outcome is unknown, not a
    /// failure).
    #[error(
        "the message {msg_id} is still pending in the spool ({}): the process writing {} took it \
         and has not finished within {waited:?} (is it stopped?); it will be delivered once, when \
         that process resumes or, if it died, with the next send to this inbox; do not send it again",
        spool_file.display(),
        inbox.display()
    )]
    StillPending {
        inbox: PathBuf,
        msg_id: String,
        spool_file: PathBuf,
        waited: Duration,
    },
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A link, a directory others can write or another user's, where the
    /// inbox, its directory, spool or history belongs.
    #[error(transparent)]
    Unsafe(#[from] UnsafePath),
    /// The cause is in the message, not `source()`, so that a chain
    /// printed whole (`{:#}`) says it once.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    Name(#[from] NameError),
}

impl MailboxError {
    /// An I/O failure on `path`, or the refusal or lost lock it carries.
    pub(crate) fn io(path: &Path, source: std::io::Error) -> MailboxError {
        if let Some(u) = UnsafePath::of(&source) {
            return MailboxError::Unsafe(u.clone());
        }
        if LockError::lost_in(&source) {
            let lost = source
                .into_inner()
                .and_then(|e| e.downcast::<LockError>().ok())
                .expect("lost_in found a LockError inside");
            return MailboxError::Lock(*lost);
        }
        MailboxError::Io {
            path: path.to_path_buf(),
            error: source,
        }
    }
}

/// What [`Mailbox::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The `msg_id` of the entry now in the inbox.
    pub msg_id: String,
    /// Where a corrupt inbox found on the way was copied.
    pub quarantined: Option<PathBuf>,
    /// Entries compaction moved from the inbox to the member's history.
    pub dropped: usize,
}

/// What [`Mailbox::read`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxRead {
    /// Every valid entry, in file order, `read:true` ones included.
    pub entries: Vec<Entry>,
    /// Where a corrupt inbox was copied before it was repaired.
    pub quarantined: Option<PathBuf>,
}

/// The inboxes of one team.
#[derive(Debug, Clone)]
pub struct Mailbox {
    root: Root,
    team: String,
    lock_timeout: Duration,
    hooks: Hooks,
}

/// Points of a holder's commit where tests stop or kill it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Spooled entries renamed to claims; the inbox not yet written.
    Claimed,
    /// The new inbox written to its temp file and fsynced; the lock not yet
    /// checked, the temp file not yet renamed over the inbox.
    Written,
    /// The inbox renamed in and durable; the claims not yet removed.
    Committed,
}

/// Fault injection for tests. Unit tests add a callback; with the
/// `fault-injection` feature (test builds only, never a release binary)
/// `SWARM_FAULT=<fault>:<marker file>` makes the first holder (across
/// processes: whoever creates the marker) that reaches the fault's stage
/// misbehave:
///
/// * `claimed`, `committed`: with at least one spooled entry claimed, abort
///   on the spot, as a `kill -9` would;
/// * `stop-claimed`: with at least one spooled entry claimed, stop itself
///   (`SIGSTOP`), as a suspended process would, until a `SIGCONT`;
/// * `stop-written`: stop itself with the inbox written to its temp file.
///
/// With the same feature, `SWARM_FAULT_LOCK_TIMEOUT_MS` replaces the default
/// lock timeout (a send's deadline) of every [`Mailbox`], so tests of what
/// happens at the deadline need not wait a minute.
#[derive(Clone, Default)]
struct Hooks {
    callback: Option<Arc<dyn Fn(Stage) + Send + Sync>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.callback.is_some() {
            "Hooks(callback)"
        } else {
            "Hooks"
        })
    }
}

impl Hooks {
    fn at(&self, stage: Stage, claimed: usize) {
        if let Some(cb) = &self.callback {
            cb(stage);
        }
        #[cfg(feature = "fault-injection")]
        env_fault(stage, claimed);
        #[cfg(not(feature = "fault-injection"))]
        let _ = claimed;
    }
}

/// The `SWARM_FAULT` of [`Hooks`].
#[cfg(feature = "fault-injection")]
fn env_fault(stage: Stage, claimed: usize) {
    let Some(spec) = std::env::var_os("SWARM_FAULT") else {
        return;
    };
    let spec = spec.to_string_lossy();
    let Some((name, marker)) = spec.split_once(':') else {
        return;
    };
    let fires = match (name, stage) {
        ("claimed", Stage::Claimed) | ("committed", Stage::Committed) => claimed > 0,
        ("stop-claimed", Stage::Claimed) => claimed > 0,
        ("stop-written", Stage::Written) => true,
        _ => false,
    };
    if !fires || !atomic_file::create_new(Path::new(marker), b"").unwrap_or(false) {
        return;
    }
    if name.starts_with("stop-") {
        // SAFETY: raise has no memory-safety preconditions; SIGSTOP stops
        // the whole process until a SIGCONT.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    } else {
        std::process::abort();
    }
}

impl Mailbox {
    pub fn new(root: &Root, team: &str) -> Mailbox {
        #[cfg(feature = "fault-injection")]
        let lock_timeout = std::env::var("SWARM_FAULT_LOCK_TIMEOUT_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
            .map_or(DEFAULT_LOCK_TIMEOUT, Duration::from_millis);
        #[cfg(not(feature = "fault-injection"))]
        let lock_timeout = DEFAULT_LOCK_TIMEOUT;
        Mailbox {
            root: root.clone(),
            team: team.to_owned(),
            lock_timeout,
            hooks: Hooks::default(),
        }
    }

    /// The same mailbox, calling `callback` at each [`Stage`] of a commit.
    #[cfg(test)]
    pub(crate) fn with_hook(mut self, callback: impl Fn(Stage) + Send + Sync + 'static) -> Mailbox {
        self.hooks.callback = Some(Arc::new(callback));
        self
    }

    /// The same mailbox, waiting at most `timeout` for an inbox lock
    /// (default [`DEFAULT_LOCK_TIMEOUT`]). A timeout is always an error.
    pub fn with_lock_timeout(mut self, timeout: Duration) -> Mailbox {
        self.lock_timeout = timeout;
        self
    }

    pub fn team(&self) -> &str {
        &self.team
    }

    /// The inbox file of `member`.
    pub fn inbox_path(&self, member: &str) -> Result<PathBuf, MailboxError> {
        Ok(self.root.inbox(&self.team, member)?)
    }

    /// Names of the inbox files present (file stems, sorted): every member
    /// with an inbox, including names not on the roster.
    pub fn inboxes(&self) -> Result<Vec<String>, MailboxError> {
        let dir = self.root.inboxes_dir(&self.team)?;
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(MailboxError::io(&dir, e)),
        };
        let mut names: Vec<String> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".json")
                    .map(str::to_owned)
            })
            .filter(|n| !n.is_empty() && !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Sends `entry` to `to`'s inbox and returns once it is on disk.
    ///
    /// The envelope is completed as Claude Code 2.1.328 writes it: a fresh
    /// `msg_id` if none, `msgV:1`, `type:"message"`, and always `read:false`
    /// (swarm never writes `read:true`). Appending an entry whose `msg_id` is
    /// already in the inbox with the same identity is a no-op (a retried
    /// send); with a different identity it is refused.
    pub fn append(&self, to: &str, mut entry: Entry) -> Result<Appended, MailboxError> {
        let path = self.inbox_path(to)?;
        if entry.text.len() > MAX_TEXT_BYTES {
            return Err(MailboxError::TextTooLong {
                inbox: path,
                bytes: entry.text.len(),
                limit: MAX_TEXT_BYTES,
            });
        }
        let msg_id = entry
            .msg_id
            .get_or_insert_with(|| uuid::Uuid::new_v4().to_string())
            .clone();
        entry.msg_v.get_or_insert(1);
        entry.kind.get_or_insert_with(|| "message".to_owned());
        entry.read = Some(false);

        let dir = self.root.inboxes_dir(&self.team)?;
        atomic_file::ensure_dir(&dir).map_err(|e| MailboxError::io(&dir, e))?;
        atomic_file::create_new(&path, b"[]").map_err(|e| MailboxError::io(&path, e))?;

        // Nobody holds the lock: commit this entry, and any waiting ones.
        if let Some(os) = FileLock::try_os_lock(&path)? {
            let mut lock = os.take_dir(self.lock_timeout)?;
            let own = self.commit_holding(to, &path, &mut lock, Some(&entry))?;
            return own.expect("a commit with an entry of its own reports on it");
        }
        // Someone does: hand the entry over and wait for its commit.
        let spool = Spool::new(self.root.spool(&self.team, to)?);
        let key = spool
            .put(&entry)
            .map_err(|e| MailboxError::io(spool_dir(&spool), e))?;
        self.await_commit(to, &path, &spool, &key, msg_id)
    }

    /// Waits until the spooled entry `key` is in the inbox (or refused),
    /// becoming the holder whenever the lock is free and the entry still
    /// waits, and answers by the send's deadline (`lock_timeout`), whatever
    /// the holder does. See [`spool`] for the protocol.
    fn await_commit(
        &self,
        to: &str,
        path: &Path,
        spool: &Spool,
        key: &spool::Key,
        msg_id: String,
    ) -> Result<Appended, MailboxError> {
        let spool_err = |e| MailboxError::io(spool_dir(spool), e);
        let start = Instant::now();
        let deadline = start + self.lock_timeout;
        // The last part of the wait is kept for an entry a holder has
        // claimed by then: a live holder has only its own I/O left.
        let grace = (self.lock_timeout / 10).min(CLAIMED_GRACE);
        let mut until = deadline - grace;
        let settled = |fate: Fate| match fate {
            Fate::Delivered => Some(Ok(Appended {
                msg_id: msg_id.clone(),
                quarantined: None,
                dropped: 0,
            })),
            Fate::Failed(why) => Some(Err(why.into_error(path, &msg_id))),
            Fate::Pending | Fate::Claimed => None,
        };
        // Wait for the current holder to let go: a shared lock is granted
        // to every waiter at once, and most find their entry delivered. One
        // whose entry still waits tries for the lock itself; failing that (a
        // new holder, or other waiters still looking), it naps before
        // looking again. It must not go straight back to the shared lock:
        // waiters that kept re-taking it would keep each other from ever
        // getting the lock. Nor queue for the lock exclusively: each waiter
        // would then hold the lock in turn only to find its entry delivered,
        // one wake-up of every other waiter per turn.
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let os = if left.is_zero() {
                None
            } else if let Some(os) = FileLock::try_os_lock(path)? {
                Some(os)
            } else {
                match FileLock::wait_shared(path, left)? {
                    Some(shared) => {
                        if let Some(done) = settled(spool.fate(key).map_err(spool_err)?) {
                            return done;
                        }
                        drop(shared);
                        std::thread::sleep(WAITER_NAP.min(left));
                        continue;
                    }
                    None => None,
                }
            };
            if let Some(os) = os {
                if let Some(done) = settled(spool.fate(key).map_err(spool_err)?) {
                    return done;
                }
                match os.take_dir(left) {
                    Ok(mut lock) => {
                        if let Err(e) = self.commit_holding(to, path, &mut lock, None) {
                            drop(lock);
                            if spool.withdraw(key).map_err(spool_err)? {
                                return Err(e);
                            }
                        }
                        continue;
                    }
                    Err(LockError::Timeout { .. }) => {}
                    Err(e) => {
                        if spool.withdraw(key).map_err(spool_err)? {
                            return Err(e.into());
                        }
                        continue;
                    }
                }
            }
            // `until` passed. Still pending: taken back, nothing was sent.
            let timeout = || {
                MailboxError::from(LockError::Timeout {
                    path: crate::paths::lock_dir_for(path),
                    waited: start.elapsed(),
                    holder: "another process",
                })
            };
            if spool.withdraw(key).map_err(spool_err)? {
                return Err(timeout());
            }
            if until < deadline {
                // Claimed: its holder holds every lock, and has only its own
                // I/O left unless it is stopped; wait for it, not past the
                // deadline.
                tracing::warn!(inbox = %path.display(), %msg_id, "deadline near while the message was being written; waiting for the outcome");
                until = deadline;
                continue;
            }
            // The deadline: answer with what the spool says, without the
            // lock (its holder may be stopped while holding it). A claim it
            // renamed back to pending (its commit failed) is withdrawn by
            // the second withdraw, which a false "delivered" needs to pass.
            return match spool.fate(key).map_err(spool_err)? {
                Fate::Failed(why) => Err(why.into_error(path, &msg_id)),
                Fate::Delivered if !spool.withdraw(key).map_err(spool_err)? => Ok(Appended {
                    msg_id,
                    quarantined: None,
                    dropped: 0,
                }),
                Fate::Pending if !spool.withdraw(key).map_err(spool_err)? => {
                    Err(self.still_pending(path, spool, key, msg_id, start))
                }
                Fate::Delivered | Fate::Pending => Err(timeout()),
                Fate::Claimed => Err(self.still_pending(path, spool, key, msg_id, start)),
            };
        }
    }

    fn still_pending(
        &self,
        path: &Path,
        spool: &Spool,
        key: &spool::Key,
        msg_id: String,
        start: Instant,
    ) -> MailboxError {
        tracing::warn!(inbox = %path.display(), %msg_id, "send deadline passed with the message claimed by a holder that has not finished");
        MailboxError::StillPending {
            inbox: path.to_path_buf(),
            msg_id,
            spool_file: spool.claimed_path(key),
            waited: start.elapsed(),
        }
    }

    /// [`Mailbox::commit`] by the holder of `lock`, again from the start
    /// (re-reading the inbox and the spool) each time it finds that it lost
    /// the lock while suspended, after taking it back: whatever the writer
    /// that broke the lock appended stays.
    fn commit_holding(
        &self,
        to: &str,
        path: &Path,
        lock: &mut FileLock,
        own: Option<&Entry>,
    ) -> Result<Option<Result<Appended, MailboxError>>, MailboxError> {
        loop {
            match self.commit(to, path, lock, own) {
                Err(MailboxError::Lock(LockError::Lost { .. })) => {
                    tracing::warn!(inbox = %path.display(), "lost the inbox lock before writing; merging again");
                    lock.retake(self.lock_timeout)?;
                }
                done => return done,
            }
        }
    }

    /// The holder's work: merges every waiting entry of `to`'s spool and
    /// `own` (last) into the inbox in one durable write, then settles the
    /// spool. Returns how `own` fared. See [`spool`] for the protocol and
    /// why each step comes where it does. The lock is verified just before
    /// the rename; a lost one fails the commit with [`LockError::Lost`]
    /// before anything was written (the claims go back to pending).
    fn commit(
        &self,
        to: &str,
        path: &Path,
        lock: &FileLock,
        own: Option<&Entry>,
    ) -> Result<Option<Result<Appended, MailboxError>>, MailboxError> {
        let spool = Spool::new(self.root.spool(&self.team, to)?);
        let spool_err = |e| MailboxError::io(spool_dir(&spool), e);
        let listing = spool.list().map_err(spool_err)?;
        let mut tmp = TempFile::create(path).map_err(|e| MailboxError::io(path, e))?;

        // What dead holders left. A claim listed in a batch whose temp file
        // is gone was renamed into the inbox: delivered, only its clean-up is
        // left (after a directory fsync: that holder may have died before its
        // own). Any other claim is taken over.
        let committed: HashSet<&spool::Key> = listing
            .batches
            .iter()
            .filter(|(tag, _)| !atomic_file::temp_path(path, tag).exists())
            .flat_map(|(_, keys)| keys)
            .collect();
        let (delivered_before, taken_over): (Vec<&spool::Key>, Vec<&spool::Key>) =
            listing.claimed.iter().partition(|k| committed.contains(k));
        // Settled before their batch goes: a claim with no batch would be
        // taken over, and merged again were it consumed meanwhile.
        if !delivered_before.is_empty() {
            atomic_file::sync_dir(parent_of(path)).map_err(|e| MailboxError::io(path, e))?;
            for k in &delivered_before {
                spool::remove(&spool.claimed_path(k)).map_err(spool_err)?;
            }
        }
        let mut batch_keys: Vec<&spool::Key> = listing
            .pending
            .iter()
            .chain(taken_over.iter().copied())
            .collect();
        batch_keys.sort();
        let mut claims = Claims {
            spool: &spool,
            tag: tmp.tag().to_owned(),
            held: Vec::new(),
        };
        if !batch_keys.is_empty() {
            spool
                .write_batch(tmp.tag(), &batch_keys)
                .map_err(spool_err)?;
        }
        // Only now may the dead holders' records go: the keys they claimed
        // and did not commit are in this holder's batch.
        for (tag, _) in &listing.batches {
            spool.remove_batch(tag).map_err(spool_err)?;
            spool::remove(&atomic_file::temp_path(path, tag)).map_err(spool_err)?;
        }
        for key in batch_keys {
            let claim = spool.claimed_path(key);
            if taken_over.contains(&key) {
                claims.held.push((key.clone(), claim));
                continue;
            }
            match std::fs::rename(spool.pending_path(key), &claim) {
                Ok(()) => claims.held.push((key.clone(), claim)),
                // Withdrawn by its sender at its deadline.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(spool_err(e)),
            }
        }
        self.hooks.at(Stage::Claimed, claims.held.len());

        // The batch, oldest first, the holder's own entry last.
        let mut batch: Vec<(Option<usize>, Entry)> = Vec::new();
        for (i, (key, claim)) in claims.held.iter().enumerate() {
            match spool.read(claim).map_err(spool_err)? {
                Ok(e) => batch.push((Some(i), e)),
                Err(problem) => {
                    tracing::warn!(spool = %claim.display(), %problem, "unreadable spooled send set aside");
                    spool.set_aside(key, claim).map_err(spool_err)?;
                }
            }
        }
        let own_at = own.map(|e| {
            batch.push((None, e.clone()));
            batch.len() - 1
        });

        let (mut stored, quarantined) = load_locked(path, inbox::parse_lazy)?;
        let mut ids: HashSet<Box<str>> = stored
            .iter()
            .filter_map(|s| s.msg_id())
            .map(Into::into)
            .collect();
        let mut fates: Vec<Option<Refusal>> = Vec::with_capacity(batch.len());
        let mut added: Vec<String> = Vec::new();
        let mut dropped: Vec<Stored> = Vec::new();
        let mut own_dropped = 0;
        for (_, entry) in &batch {
            let msg_id = entry.msg_id.clone().unwrap_or_default();
            if ids.contains(msg_id.as_str())
                && let Some(old) = stored.iter().find(|s| s.msg_id() == Some(msg_id.as_str()))
            {
                // Already there: a retried send, or a claim delivered before
                // a crash. Only a different entry under the same id is refused.
                fates.push((old.entry().key() != entry.key()).then_some(Refusal::DuplicateMsgId));
                continue;
            }
            stored.push(Stored::new(entry.clone()));
            match inbox::compact(&mut stored, Limits::INBOX) {
                Ok(d) => {
                    if fates.len() == own_at.unwrap_or(usize::MAX) {
                        own_dropped = d.len();
                    }
                    dropped.extend(d);
                    ids.insert(msg_id.clone().into());
                    added.push(msg_id);
                    fates.push(None);
                }
                Err(detail) => {
                    stored.pop();
                    fates.push(Some(Refusal::InboxFull { detail }));
                }
            }
        }
        if !dropped.is_empty() {
            tracing::info!(
                inbox = %path.display(),
                dropped = dropped.len(),
                "inbox compacted; the oldest read and protocol entries moved to history"
            );
            history::record(&self.root.history(&self.team, to)?, &dropped)?;
        }
        // Refusals are recorded before the commit: a crash after it must
        // never make a refused entry look delivered.
        for ((slot, _), fate) in batch.iter().zip(&fates) {
            if let (Some(i), Some(why)) = (slot, fate) {
                let (key, claim) = &claims.held[*i];
                spool.refuse(key, claim, why).map_err(spool_err)?;
            }
        }

        let mut not_persisted: HashSet<String> = HashSet::new();
        if !added.is_empty() || quarantined.is_some() || !dropped.is_empty() {
            let rendered = inbox::render(&stored);
            tmp.write_synced(&rendered)
                .map_err(|e| MailboxError::io(path, e))?;
            self.hooks.at(Stage::Written, claims.held.len());
            if let Err(e) = tmp.rename_over(path, Some(lock)) {
                if e.renamed {
                    // In the inbox but perhaps not durable: the claims stay,
                    // and the next holder (seeing the temp file gone) makes
                    // the directory durable before settling them.
                    claims.held.clear();
                }
                return Err(MailboxError::io(path, e.source));
            }
            // Read back: the file at the inbox path must hold the new
            // entries. It normally holds exactly what was written (one
            // compare); if a writer that does not lock replaced it since,
            // search it.
            if !holds_exactly(path, &rendered).map_err(|e| MailboxError::io(path, e))? {
                let on_disk =
                    atomic_file::read_nofollow(path).map_err(|e| MailboxError::io(path, e))?;
                for id in &added {
                    let needle = format!("\"msg_id\": {}", crate::json_text::to_compact(id));
                    if !contains(&on_disk, needle.as_bytes()) {
                        not_persisted.insert(id.clone());
                    }
                }
            }
        }
        self.hooks.at(Stage::Committed, claims.held.len());

        // Durable: settle the spool. Claims go before the temp file does.
        for ((slot, entry), fate) in batch.iter().zip(&fates) {
            let Some(i) = slot else { continue };
            let (key, claim) = &claims.held[*i];
            let lost = entry
                .msg_id
                .as_ref()
                .is_some_and(|id| not_persisted.contains(id));
            if lost {
                spool
                    .refuse(key, claim, &Refusal::NotPersisted)
                    .map_err(spool_err)?;
            } else if fate.is_none() {
                spool::remove(claim).map_err(spool_err)?;
            }
        }
        claims.held.clear();
        spool.remove_batch(tmp.tag()).map_err(spool_err)?;
        drop(tmp);

        Ok(own_at.map(|i| {
            let msg_id = batch[i].1.msg_id.clone().unwrap_or_default();
            match &fates[i] {
                Some(why) => Err(why.clone().into_error(path, &msg_id)),
                None if not_persisted.contains(&msg_id) => {
                    Err(Refusal::NotPersisted.into_error(path, &msg_id))
                }
                None => Ok(Appended {
                    msg_id,
                    quarantined,
                    dropped: own_dropped,
                }),
            }
        }))
    }

    /// Every entry of `member`'s inbox, in file order. A missing inbox is
    /// empty. A corrupt one is repaired under the lock (copied aside, then
    /// rewritten with the entries that could be salvaged) and reported.
    pub fn read(&self, member: &str) -> Result<InboxRead, MailboxError> {
        let path = self.inbox_path(member)?;
        // Streamed: each element becomes its entry as it is read, so memory
        // is the entries, not the file and its copies as well.
        let mut found = Vec::new();
        let streamed = inbox::stream_file(&path, |raw| match inbox::entry_of(raw) {
            Ok(e) => {
                found.push(e);
                Ok(true)
            }
            Err(_) => Ok(false),
        })
        .map_err(|e| MailboxError::io(&path, e))?;
        match streamed {
            Streamed::Missing | Streamed::Clean => {
                return Ok(InboxRead {
                    entries: found,
                    quarantined: None,
                });
            }
            Streamed::Unsure => drop(found),
        }
        let mut lock = FileLock::acquire(&path, self.lock_timeout)?;
        loop {
            let (stored, quarantined) = load_locked(&path, inbox::parse)?;
            if quarantined.is_some() && self.write_locked(&path, &stored, &mut lock)?.is_lost() {
                continue;
            }
            return Ok(InboxRead {
                entries: entries(stored),
                quarantined,
            });
        }
    }

    /// Removes the entries whose identity is in `keys` from `member`'s
    /// inbox, after adding them to the member's history. Entries appended
    /// since the caller's read, and any not named, stay. Returns how many
    /// entries left the inbox.
    pub fn consume(&self, member: &str, keys: &[EntryKey]) -> Result<usize, MailboxError> {
        let path = self.inbox_path(member)?;
        if keys.is_empty() || !path.exists() {
            return Ok(0);
        }
        let mut lock = FileLock::acquire(&path, self.lock_timeout)?;
        let wanted: HashSet<&EntryKey> = keys.iter().collect();
        loop {
            match self.consume_streaming(member, &path, &wanted, &mut lock)? {
                Pass::Done(taken) => return Ok(taken),
                Pass::Lost => continue,
                // Not a clean file: the path below salvages and repairs it.
                Pass::Unsure => {}
            }
            let (stored, quarantined) = load_locked(&path, inbox::parse)?;
            let (taken, kept): (Vec<Stored>, Vec<Stored>) = stored
                .into_iter()
                .partition(|s| wanted.contains(&s.entry().key()));
            if taken.is_empty() && quarantined.is_none() {
                return Ok(0);
            }
            history::record(&self.root.history(&self.team, member)?, &taken)?;
            if self.write_locked(&path, &kept, &mut lock)?.is_lost() {
                continue;
            }
            return Ok(taken.len());
        }
    }

    /// [`Mailbox::consume`] of a clean inbox in one streaming pass under
    /// `lock`: each entry is read, and either copied to the new inbox (its
    /// bytes as they were) or, when `wanted`, counted and kept for the
    /// history, which holds only the newest [`HISTORY_MAX_ENTRIES`] (and
    /// [`HISTORY_MAX_BYTES`]) anyway. Memory is bounded by the history, not
    /// by the inbox: a 100 000-entry inbox is consumed in a few megabytes.
    /// [`Pass::Unsure`] for a file that is not clean (nothing written).
    fn consume_streaming(
        &self,
        member: &str,
        path: &Path,
        wanted: &HashSet<&EntryKey>,
        lock: &mut FileLock,
    ) -> Result<Pass, MailboxError> {
        let io = |e| MailboxError::io(path, e);
        let mut tmp = TempFile::create(path).map_err(io)?;
        let mut out =
            inbox::Renderer::new(std::io::BufWriter::with_capacity(64 * 1024, tmp.file()));
        let mut for_history = history::Tail::default();
        let mut taken = 0;
        let streamed = inbox::stream_file(path, |raw| {
            let Ok(s) = inbox::stored_of(raw) else {
                return Ok(false);
            };
            if wanted.contains(&s.entry().key()) {
                taken += 1;
                for_history.push(s);
            } else {
                out.push(&s)?;
            }
            Ok(true)
        })
        .map_err(io)?;
        match streamed {
            Streamed::Clean => {}
            Streamed::Missing => return Ok(Pass::Done(0)),
            Streamed::Unsure => return Ok(Pass::Unsure),
        }
        if taken == 0 {
            return Ok(Pass::Done(0));
        }
        out.finish()
            .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
            .and_then(|_| tmp.sync())
            .map_err(io)?;
        history::record(
            &self.root.history(&self.team, member)?,
            for_history.entries(),
        )?;
        match tmp.rename_over(path, Some(lock)) {
            Ok(()) => Ok(Pass::Done(taken)),
            Err(e) if LockError::lost_in(&e.source) => {
                tracing::warn!(inbox = %path.display(), "lost the inbox lock before writing; reading again");
                lock.retake(self.lock_timeout)?;
                Ok(Pass::Lost)
            }
            Err(e) => Err(io(e.source)),
        }
    }

    /// Rewrites the inbox at `path` under `lock` (verified before the
    /// rename). A lock lost while this process was suspended is taken back,
    /// and the caller told to start again from its read, so entries another
    /// writer appended meanwhile are never overwritten.
    fn write_locked(
        &self,
        path: &Path,
        stored: &[Stored],
        lock: &mut FileLock,
    ) -> Result<Written, MailboxError> {
        match atomic_file::write_atomic_locked(path, &inbox::render(stored), lock) {
            Ok(()) => Ok(Written::Done),
            Err(e) if LockError::lost_in(&e) => {
                tracing::warn!(inbox = %path.display(), "lost the inbox lock before writing; reading again");
                lock.retake(self.lock_timeout)?;
                Ok(Written::Lost)
            }
            Err(e) => Err(MailboxError::io(path, e)),
        }
    }

    /// The messages `member` has consumed (and any compaction moved aside),
    /// oldest first, bounded to the newest [`HISTORY_MAX_ENTRIES`].
    pub fn history(&self, member: &str) -> Result<Vec<Entry>, MailboxError> {
        history::read(&self.root.history(&self.team, member)?)
    }

    /// Wake-ups for every inbox of the team (the directory is created if
    /// missing, so a watcher can start before the first message).
    pub fn watch(&self) -> Result<InboxWatcher, MailboxError> {
        let dir = self.root.inboxes_dir(&self.team)?;
        atomic_file::ensure_dir(&dir).map_err(|e| MailboxError::io(&dir, e))?;
        Ok(InboxWatcher::new(&dir))
    }

    /// Reads `member`'s inbox once and calls `on_new` for every entry whose
    /// identity is not in `seen`, in file order, then records it there.
    /// `seen` is pruned to the entries still in the file (an entry that left
    /// by consumption never comes back), so it stays small. Returns how many
    /// entries were new. `read:true` entries are reported too; filter with
    /// [`Entry::is_unread`].
    pub fn poll_new(
        &self,
        member: &str,
        seen: &mut HashSet<EntryKey>,
        mut on_new: impl FnMut(&Entry),
    ) -> Result<usize, MailboxError> {
        let mut n = 0;
        let _always_continues = self.deliver(member, seen, |e| {
            n += 1;
            on_new(e);
            ControlFlow::Continue(())
        })?;
        Ok(n)
    }

    /// Calls `on_new` for each new entry of `member`'s inbox as it arrives,
    /// exactly once each (see [`Mailbox::poll_new`]), until `on_new` breaks.
    /// Sleeps on an [`InboxWatcher`] between arrivals.
    pub fn follow(
        &self,
        member: &str,
        seen: &mut HashSet<EntryKey>,
        mut on_new: impl FnMut(&Entry) -> ControlFlow<()>,
    ) -> Result<(), MailboxError> {
        // Watch before the first read, so nothing written in between is missed.
        let watcher = self.watch()?;
        let path = self.inbox_path(member)?;
        let file = path.file_name().unwrap_or_default().to_owned();
        loop {
            if self.deliver(member, seen, &mut on_new)?.is_break() {
                return Ok(());
            }
            watcher.wait_for(&file, Duration::from_secs(60));
        }
    }

    fn deliver(
        &self,
        member: &str,
        seen: &mut HashSet<EntryKey>,
        mut on_new: impl FnMut(&Entry) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, MailboxError> {
        let read = self.read(member)?;
        let present: HashSet<EntryKey> = read.entries.iter().map(Entry::key).collect();
        seen.retain(|k| present.contains(k));
        for e in &read.entries {
            let key = e.key();
            if seen.contains(&key) {
                continue;
            }
            let flow = on_new(e);
            seen.insert(key);
            if flow.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

fn entries(stored: Vec<Stored>) -> Vec<Entry> {
    stored.into_iter().map(Stored::into_entry).collect()
}

/// Reads the inbox while its lock is held. A corrupt file is re-read once
/// (a writer that does not lock, such as Claude Code 2.1.88, may be half
/// way through), then copied aside and reported; the caller must then
/// rewrite the inbox with the salvaged entries returned. `parse` is
/// [`inbox::parse`] or [`inbox::parse_lazy`].
fn load_locked(
    path: &Path,
    parse: fn(&[u8]) -> Parsed,
) -> Result<(Vec<Stored>, Option<PathBuf>), MailboxError> {
    let read = || atomic_file::read_optional(path).map_err(|e| MailboxError::io(path, e));
    let mut bytes = read()?.unwrap_or_else(|| b"[]".to_vec());
    let mut retried = false;
    loop {
        match parse(&bytes) {
            Parsed::Clean(stored) => return Ok((stored, None)),
            Parsed::Corrupt { salvaged, problem } => {
                if !retried {
                    retried = true;
                    std::thread::sleep(Duration::from_millis(20));
                    let again = read()?.unwrap_or_else(|| b"[]".to_vec());
                    if again != bytes {
                        bytes = again;
                        continue;
                    }
                }
                let copy = atomic_file::quarantine(path).map_err(|e| MailboxError::io(path, e))?;
                tracing::warn!(
                    inbox = %path.display(),
                    copy = %copy.display(),
                    salvaged = salvaged.len(),
                    %problem,
                    "corrupt inbox copied aside and rewritten with the entries that could be read"
                );
                return Ok((salvaged, Some(copy)));
            }
        }
    }
}

/// Renames the claims it still holds back to pending when a commit fails
/// before its rename, so that the temp file, which goes next, never looks
/// like a commit of entries it did not write.
struct Claims<'a> {
    spool: &'a Spool,
    tag: String,
    held: Vec<(spool::Key, PathBuf)>,
}

impl Drop for Claims<'_> {
    fn drop(&mut self) {
        if self.held.is_empty() {
            return;
        }
        for (key, claim) in &self.held {
            let back = self.spool.pending_path(key);
            if let Err(e) = std::fs::rename(claim, &back)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::error!(claim = %claim.display(), error = %e, "cannot release a claim");
                return;
            }
        }
        // Every claim released: the batch no longer speaks for any.
        let _ = self.spool.remove_batch(&self.tag);
    }
}

impl Refusal {
    fn into_error(self, inbox: &Path, msg_id: &str) -> MailboxError {
        let (inbox, msg_id) = (inbox.to_path_buf(), msg_id.to_owned());
        match self {
            Refusal::InboxFull { detail } => MailboxError::InboxFull { inbox, detail },
            Refusal::DuplicateMsgId => MailboxError::DuplicateMsgId { inbox, msg_id },
            Refusal::NotPersisted => MailboxError::NotPersisted { inbox, msg_id },
            Refusal::Unreadable { problem } => MailboxError::Unreadable {
                inbox,
                msg_id,
                problem,
            },
        }
    }
}

fn spool_dir(spool: &Spool) -> &Path {
    spool.dir()
}

fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new("."))
}

/// How [`Mailbox::consume_streaming`] went.
enum Pass {
    /// Written (or nothing to write); this many entries left the inbox.
    Done(usize),
    /// The lock had been lost; nothing was written; it is held again.
    Lost,
    /// The file is not clean; nothing was written.
    Unsure,
}

/// How [`Mailbox::write_locked`] went.
#[must_use]
enum Written {
    Done,
    /// The lock had been lost; nothing was written; it is held again.
    Lost,
}

impl Written {
    fn is_lost(&self) -> bool {
        matches!(self, Written::Lost)
    }
}

/// Whether the file at `path` holds exactly `expected`, compared a chunk at
/// a time (no copy of the whole file).
fn holds_exactly(path: &Path, expected: &[u8]) -> std::io::Result<bool> {
    use std::io::Read;
    let mut file = atomic_file::open_nofollow(path)?;
    if file.metadata()?.len() != expected.len() as u64 {
        return Ok(false);
    }
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = 0;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(at == expected.len());
        }
        if expected.get(at..at + n) != Some(&buf[..n]) {
            return Ok(false);
        }
        at += n;
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}
