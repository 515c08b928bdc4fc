//! Inboxes: one JSON array per member at `Root::inbox(team, member)`, in
//! Claude Code's format (reference §3, §5), made durable and bounded.
//!
//! * [`Mailbox::append`] sends: under the inbox lock (Claude Code's
//!   `<file>.lock` directory plus an OS lock) it re-reads, validates, pushes,
//!   compacts if a cap is reached, writes atomically, and returns only once
//!   the new `msg_id` is in the file on disk.
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
mod view;
mod watch;

#[cfg(test)]
mod tests;

pub use entry::{Entry, EntryKey, InvalidEntry};
pub use watch::{InboxWatcher, POLL_EVERY};

use crate::atomic_file::{self, DEFAULT_LOCK_TIMEOUT, FileLock, LockError};
use crate::paths::Root;
use crate::team::names::NameError;
use inbox::{Limits, Parsed, Stored};
use std::collections::HashSet;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
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
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Name(#[from] NameError),
}

impl MailboxError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> MailboxError {
        MailboxError::Io {
            path: path.to_path_buf(),
            source,
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
}

impl Mailbox {
    pub fn new(root: &Root, team: &str) -> Mailbox {
        Mailbox {
            root: root.clone(),
            team: team.to_owned(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
        }
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
        let _lock = FileLock::acquire(&path, self.lock_timeout)?;
        let (mut stored, quarantined) = load_locked(&path, inbox::parse_lazy)?;

        if let Some(old) = stored.iter().find(|s| s.msg_id() == Some(&msg_id)) {
            if old.entry().key() != entry.key() {
                return Err(MailboxError::DuplicateMsgId {
                    inbox: path,
                    msg_id,
                });
            }
            if quarantined.is_some() {
                write_inbox(&path, &stored)?;
            }
            return Ok(Appended {
                msg_id,
                quarantined,
                dropped: 0,
            });
        }

        stored.push(Stored::new(entry));
        let dropped = inbox::compact(&mut stored, Limits::INBOX).map_err(|detail| {
            MailboxError::InboxFull {
                inbox: path.clone(),
                detail,
            }
        })?;
        if !dropped.is_empty() {
            tracing::info!(
                inbox = %path.display(),
                dropped = dropped.len(),
                "inbox compacted; the oldest read and protocol entries moved to history"
            );
            history::record(&self.root.history(&self.team, to)?, &dropped)?;
        }
        let rendered = inbox::render(&stored);
        atomic_file::write_atomic(&path, &rendered).map_err(|e| MailboxError::io(&path, e))?;

        // Read back: the file at the inbox path must hold the new entry. It
        // normally holds exactly what was written (one compare); if someone
        // else (a writer that does not lock) replaced it since, search it.
        if !holds_exactly(&path, &rendered).map_err(|e| MailboxError::io(&path, e))? {
            let on_disk = std::fs::read(&path).map_err(|e| MailboxError::io(&path, e))?;
            let needle = format!("\"msg_id\": {}", crate::json_text::to_compact(&msg_id));
            if !contains(&on_disk, needle.as_bytes()) {
                return Err(MailboxError::NotPersisted {
                    inbox: path,
                    msg_id,
                });
            }
        }
        Ok(Appended {
            msg_id,
            quarantined,
            dropped: dropped.len(),
        })
    }

    /// Every entry of `member`'s inbox, in file order. A missing inbox is
    /// empty. A corrupt one is repaired under the lock (copied aside, then
    /// rewritten with the entries that could be salvaged) and reported.
    pub fn read(&self, member: &str) -> Result<InboxRead, MailboxError> {
        let path = self.inbox_path(member)?;
        let Some(bytes) =
            atomic_file::read_optional(&path).map_err(|e| MailboxError::io(&path, e))?
        else {
            return Ok(InboxRead {
                entries: Vec::new(),
                quarantined: None,
            });
        };
        if let Parsed::Clean(stored) = inbox::parse(&bytes) {
            return Ok(InboxRead {
                entries: entries(stored),
                quarantined: None,
            });
        }
        let _lock = FileLock::acquire(&path, self.lock_timeout)?;
        let (stored, quarantined) = load_locked(&path, inbox::parse)?;
        if quarantined.is_some() {
            write_inbox(&path, &stored)?;
        }
        Ok(InboxRead {
            entries: entries(stored),
            quarantined,
        })
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
        let _lock = FileLock::acquire(&path, self.lock_timeout)?;
        let (stored, quarantined) = load_locked(&path, inbox::parse)?;
        let wanted: HashSet<&EntryKey> = keys.iter().collect();
        let (taken, kept): (Vec<Stored>, Vec<Stored>) = stored
            .into_iter()
            .partition(|s| wanted.contains(&s.entry().key()));
        if taken.is_empty() && quarantined.is_none() {
            return Ok(0);
        }
        history::record(&self.root.history(&self.team, member)?, &taken)?;
        write_inbox(&path, &kept)?;
        Ok(taken.len())
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

fn write_inbox(path: &Path, stored: &[Stored]) -> Result<(), MailboxError> {
    atomic_file::write_atomic(path, &inbox::render(stored)).map_err(|e| MailboxError::io(path, e))
}

/// Whether the file at `path` holds exactly `expected`, compared a chunk at
/// a time (no copy of the whole file).
fn holds_exactly(path: &Path, expected: &[u8]) -> std::io::Result<bool> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
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
