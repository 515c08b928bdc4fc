//! Inboxes: one JSON array per member at `Root::inbox(team, member)`, in
//! Claude Code's format (reference §3, §5), made durable and bounded.
//!
//! * [`Mailbox::append`] sends: under the inbox lock (Claude Code's
//!   `<file>.lock` directory plus an OS lock) it re-reads, validates, pushes,
//!   compacts if a cap is reached, writes atomically, and returns only once
//!   the new `msg_id` is in the file on disk. Sends that find the lock held
//!   are group-committed: each hands its entry to the holder through the
//!   inbox's spool and waits until the holder's one durable write holds it
//!   (`mailbox/spool.rs` has the protocol and its crash cases, `delivery.rs`
//!   the code).
//! * [`Mailbox::read`] returns every entry in file order, `read:true` ones
//!   included (callers filter with [`Entry::is_unread`]).
//! * [`Mailbox::consume`] removes entries by identity only, after copying
//!   them to the member's bounded history ([`Mailbox::history`]).
//! * [`Mailbox::watch`], [`Mailbox::poll_new`], [`Mailbox::follow`]: wake-ups
//!   and "each new entry exactly once"; [`Mailbox::read_since`] parses only
//!   what was appended since a reader's previous read (`tail.rs`).
//! * Every send rings the recipient's doorbell ([`doorbell`]), a FIFO its
//!   teammate runtime sleeps on, so a message wakes its recipient only.
//! * [`signing`]: the lead's signature (`lead_sig`) on the entries a Claude
//!   Code teammate verifies, and the per-inbox keys that make it.
//!
//! Nothing is lost silently: a corrupt inbox is copied aside
//! (`<file>.corrupt-<ms>`) and reported, never read as empty; entries that
//! compaction drops go to history; a send that could only succeed by
//! dropping an unread plain message fails with "inbox full".

mod delivery;
pub mod doorbell;
mod entry;
mod fault;
mod first;
mod history;
mod inbox;
mod last_write;
pub mod signing;
mod spool;
mod tail;
mod view;
mod watch;

#[cfg(test)]
mod tests;

pub use entry::{Entry, EntryKey, EntryKeyRef, InvalidEntry};
pub use watch::{Changes, InboxWatcher, POLL_EVERY, watch_available};

/// How often a watcher of `team`'s files here also looks at them itself:
/// every [`POLL_EVERY`] when the team has members on other machines (it
/// has a hosts record), whose writes over a shared filesystem raise no
/// file event on this kernel; `None` otherwise.
pub fn looks_for(root: &Root, team: &str) -> Option<std::time::Duration> {
    let record = root.hosts_record(team).ok()?;
    std::fs::symlink_metadata(record)
        .is_ok()
        .then_some(POLL_EVERY)
}

/// Rings a member whose runtime is on another machine, through its host:
/// given the root, the team and the member, it answers `true` when it took
/// the ring over (the member is remote), `false` to ring here.
pub type FarRing = fn(&crate::paths::Root, &str, &str) -> bool;

static FAR_RING: std::sync::OnceLock<FarRing> = std::sync::OnceLock::new();

/// Installs how members on other machines are rung (`ops::ring`, by the
/// binary at its start; this layer knows no hosts). Once per process.
pub fn ring_far_with(far: FarRing) {
    let _ = FAR_RING.set(far);
}

use crate::atomic_file::{self, DEFAULT_LOCK_TIMEOUT, FileLock, LockError, TempFile, UnsafePath};
use crate::names::NameError;
use crate::paths::Root;
use fault::Hooks;
#[cfg(test)]
use fault::Stage;
use inbox::{Parsed, Stored, Streamed};
use spool::Spool;
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use tail::Change;
pub use tail::Tail;

use std::time::Duration;
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
    /// Whether a send failed with [`MailboxError::StillPending`] somewhere
    /// in `e`'s chain: not failed, not delivered yet (the CLI's exit 3).
    pub fn still_pending_in(e: &anyhow::Error) -> bool {
        e.chain().any(|c| {
            matches!(
                c.downcast_ref::<MailboxError>(),
                Some(MailboxError::StillPending { .. })
            )
        })
    }

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
#[derive(Debug, Clone, Default, PartialEq)]
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

impl Mailbox {
    pub fn new(root: &Root, team: &str) -> Mailbox {
        #[cfg(feature = "fault-injection")]
        let lock_timeout = std::env::var_os("SWARM_FAULT_LOCK_TIMEOUT_MS")
            .and_then(|ms| {
                crate::dropped::ignore(
                    ms.to_string_lossy().parse(),
                    "reading SWARM_FAULT_LOCK_TIMEOUT_MS (the default applies)",
                )
            })
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
        self.hooks.callback = Some(std::sync::Arc::new(callback));
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

    /// The doorbell of `member`'s runtime (see [`doorbell`]).
    pub fn doorbell_path(&self, member: &str) -> Result<PathBuf, MailboxError> {
        Ok(self.root.runtime_file(&self.team, member, "wake")?)
    }

    /// Where the record of `member`'s inbox as swarm last wrote it is kept
    /// (`last_write`).
    fn last_write_path(&self, member: &str) -> Result<PathBuf, MailboxError> {
        Ok(self.root.runtime_file(&self.team, member, "inbox-last")?)
    }

    /// Rings `member`'s doorbell: wakes its runtime if one listens. One
    /// that is not a FIFO is logged (something was put in its place); so,
    /// at debug, is one that is missing (most members without a swarm
    /// runtime have none). Either way its runtime, if it runs, finds its
    /// doorbell gone within `doorbell::CHECK_EVERY`, makes it again and
    /// reads its inbox: that is the wake-up this message gets.
    pub fn ring(&self, member: &str) {
        if let Some(far) = FAR_RING.get()
            && far(&self.root, &self.team, member)
        {
            return;
        }
        self.ring_here(member);
    }

    /// Rings `member`'s doorbell on this machine only: what `swarm ring`
    /// does on the host a sender reached over ssh.
    pub fn ring_here(&self, member: &str) {
        let Ok(p) = self.doorbell_path(member) else {
            return;
        };
        match doorbell::ring(&p) {
            doorbell::Rung::Rang => {}
            doorbell::Rung::Missing => tracing::debug!(
                %member, bell = %p.display(),
                "no doorbell to ring (no swarm runtime, or it was removed: a runtime makes it again within a second)"
            ),
            doorbell::Rung::NotAFifo => tracing::warn!(
                %member, bell = %p.display(),
                "the doorbell is not a FIFO (something was put in its place) and was not rung; its runtime replaces it and reads its inbox within a second"
            ),
        }
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
                let stem = e.file_name().to_str()?.strip_suffix(".json")?.to_owned();
                // Only stems `member_file_stem` writes name a member.
                crate::names::member_from_file_stem(&stem)
            })
            .filter(|n| !n.is_empty() && !n.starts_with('.'))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Every entry of `member`'s inbox, in file order. A missing inbox is
    /// empty. A corrupt one is repaired under the lock (copied aside, then
    /// rewritten with the entries that could be salvaged) and reported.
    pub fn read(&self, member: &str) -> Result<InboxRead, MailboxError> {
        let path = self.inbox_path(member)?;
        // The common case in one pass: a file of plain entries within the
        // size read whole (one that is not, or that does not parse, is read
        // as below, element by element, never held whole if larger).
        if let Some(bytes) = read_whole(&path)?
            && let Some(entries) = Entry::all_plain(&bytes)
        {
            return Ok(InboxRead {
                entries,
                quarantined: None,
            });
        }
        // Element by element: each becomes its entry as it is read.
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

    /// Hands `member`'s entries to `each` one at a time, in file order,
    /// keeping none: [`Mailbox::read`] for a reader that needs each entry
    /// once (`swarm inbox` printing 10,000 of them). `Ok(false)` when the
    /// file is not one `read` takes in one pass (missing, larger than twice
    /// the cap, or an entry not plain): `each` may have seen some of its
    /// entries; the caller discards what it made of them and calls `read`,
    /// which decides (and repairs and reports).
    pub fn read_each(
        &self,
        member: &str,
        each: impl FnMut(&Entry) -> std::io::Result<()>,
    ) -> Result<bool, MailboxError> {
        let path = self.inbox_path(member)?;
        let Some(bytes) = read_whole(&path)? else {
            return Ok(false);
        };
        Entry::each_plain(&bytes, each).map_err(|e| MailboxError::io(&path, e))
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
        let record = self.last_write_path(member)?;
        let mut tmp = TempFile::create(path).map_err(io)?;
        let mut out =
            inbox::Renderer::new(std::io::BufWriter::with_capacity(64 * 1024, tmp.file()));
        let mut for_history = history::Tail::default();
        let mut kept = last_write::Tally::new();
        let mut taken = 0;
        let streamed = inbox::stream_file(path, |raw| {
            let Ok(s) = inbox::stored_of(raw) else {
                return Ok(false);
            };
            if wanted.contains(&s.entry().key()) {
                taken += 1;
                for_history.push(s);
            } else {
                kept.add(&s);
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
            Ok(()) => {
                // Recorded, so that the next send appends in place: a
                // runtime consumes every message it is sent, and without
                // the record each send to it would rewrite the file.
                match kept.written(tmp.file()) {
                    Ok(last) => last.save(&record),
                    Err(e) => {
                        tracing::debug!(inbox = %path.display(), error = %e, "inbox record not made")
                    }
                }
                Ok(Pass::Done(taken))
            }
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
    /// Clears what a member that left the team leaves in its inbox's spool
    /// (see `spool::Spool::tidy_after_departure`), and the record of its
    /// inbox as last written.
    pub fn tidy_spool_of_departed(&self, member: &str) -> Result<(), MailboxError> {
        let record = self.last_write_path(member)?;
        atomic_file::remove_if_there(&record).map_err(|e| MailboxError::io(&record, e))?;
        let spool = Spool::new(self.root.spool(&self.team, member)?);
        spool
            .tidy_after_departure()
            .map_err(|e| MailboxError::io(spool.dir(), e))
    }

    pub fn history(&self, member: &str) -> Result<Vec<Entry>, MailboxError> {
        history::read(&self.root.history(&self.team, member)?)
    }

    /// `member`'s history without the messages `inbox` (a read of its
    /// inbox) still holds: a consumption writes the history first and
    /// takes the entries out of the inbox after, so a reader that looks in
    /// between would show such a message twice (once consumed, once not).
    /// Shown once, as the inbox has it.
    pub fn history_besides(
        &self,
        member: &str,
        inbox: &[Entry],
    ) -> Result<Vec<Entry>, MailboxError> {
        let mut history = self.history(member)?;
        if !inbox.is_empty() {
            let there: std::collections::HashSet<EntryKey> =
                inbox.iter().map(Entry::message_key).collect();
            history.retain(|e| !there.contains(&e.message_key()));
        }
        Ok(history)
    }

    /// Wake-ups for every inbox of the team (the directory is created if
    /// missing, so a watcher can start before the first message); with
    /// looks of its own when the team has members on other machines.
    pub fn watch(&self) -> Result<InboxWatcher, MailboxError> {
        let dir = self.root.inboxes_dir(&self.team)?;
        atomic_file::ensure_dir(&dir).map_err(|e| MailboxError::io(&dir, e))?;
        Ok(InboxWatcher::over_looking(
            &[dir],
            looks_for(&self.root, &self.team),
        ))
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
        let _always_continues = self.deliver(member, seen, &mut Tail::default(), |e| {
            n += 1;
            on_new(e);
            ControlFlow::Continue(())
        })?;
        Ok(n)
    }

    /// Calls `on_new` for each new entry of `member`'s inbox as it arrives,
    /// exactly once each (see [`Mailbox::poll_new`]), until `on_new` breaks.
    /// Sleeps on an [`InboxWatcher`] between arrivals; after the first read
    /// it parses only the entries appended since the previous one whenever
    /// the file grew by appends alone (`tail`).
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
        let mut tail = Tail::default();
        loop {
            if self
                .deliver(member, seen, &mut tail, &mut on_new)?
                .is_break()
            {
                return Ok(());
            }
            watcher.wait_for(&file, Duration::from_secs(60));
        }
    }

    fn deliver(
        &self,
        member: &str,
        seen: &mut HashSet<EntryKey>,
        tail: &mut Tail,
        mut on_new: impl FnMut(&Entry) -> ControlFlow<()>,
    ) -> Result<ControlFlow<()>, MailboxError> {
        let all = match self.read_since(member, tail)? {
            Since::Same => Vec::new(),
            Since::Appended(added) => added,
            Since::Whole(read) => {
                let present: HashSet<EntryKey> =
                    read.entries.iter().map(Entry::message_key).collect();
                seen.retain(|k| present.contains(k));
                read.entries
            }
        };
        for e in &all {
            let key = e.message_key();
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

    /// What changed in `member`'s inbox since the read `tail` remembers
    /// (see `tail`): nothing, entries appended (only those parsed), or
    /// anything else, answered with a whole read ([`Mailbox::read`]: a
    /// corrupt file is repaired and reported). `tail` then remembers this
    /// read: the caller handles what it returns before asking again.
    pub fn read_since(&self, member: &str, tail: &mut Tail) -> Result<Since, MailboxError> {
        let path = self.inbox_path(member)?;
        let bytes = atomic_file::read_optional(&path).map_err(|e| MailboxError::io(&path, e))?;
        let Some(bytes) = bytes else {
            tail.forget();
            return Ok(Since::Whole(InboxRead::default()));
        };
        let since = match tail.compare(&bytes) {
            Change::Same => Since::Same,
            Change::Appended(added) => Since::Appended(added),
            Change::Unknown => match inbox::parse(&bytes) {
                Parsed::Clean(stored) => Since::Whole(InboxRead {
                    entries: entries(stored),
                    quarantined: None,
                }),
                Parsed::Corrupt { .. } => {
                    tail.forget();
                    return Ok(Since::Whole(self.read(member)?));
                }
            },
        };
        tail.remember(&bytes);
        Ok(since)
    }
}

/// What [`Mailbox::read_since`] found.
#[derive(Debug)]
pub enum Since {
    /// The same entries as the previous read.
    Same,
    /// The previous read's entries, then these.
    Appended(Vec<Entry>),
    /// Every entry (the file changed otherwise, or there was no previous read).
    Whole(InboxRead),
}

/// The bytes of the inbox at `path` when it is no larger than
/// [`inbox::WHOLE_UP_TO`]; `None` when it is missing or larger.
fn read_whole(path: &Path) -> Result<Option<Vec<u8>>, MailboxError> {
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.len() <= inbox::WHOLE_UP_TO) {
        return Ok(None);
    }
    atomic_file::read_optional(path).map_err(|e| MailboxError::io(path, e))
}

fn entries(stored: Vec<Stored>) -> Vec<Entry> {
    stored.into_iter().map(Stored::into_entry).collect()
}

/// Reads the inbox while its lock is held. A corrupt file is re-read once
/// (a writer that does not lock, such as Claude Code 2.1.88, may be half
/// way through), then copied aside and reported; the caller must then
/// rewrite the inbox with the salvaged entries returned (for a torn
/// append, every whole entry before the tear). `parse` is
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
                // An append in place cut short (only a power cut can: see
                // `Mailbox::append_in_place`): every whole entry before the
                // tear was durable; the torn ones were never acknowledged.
                let salvaged = match inbox::torn_repaired(&bytes) {
                    Some(whole) if salvaged.is_empty() => whole,
                    _ => salvaged,
                };
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
