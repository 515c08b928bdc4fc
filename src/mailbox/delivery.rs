//! Sending: [`Mailbox::append`], the group commit of an inbox's waiting
//! sends by whoever holds its lock (the protocol is in `spool.rs`), and the
//! faults tests inject into it.

use super::entry::Entry;
use super::inbox::{self, Limits, Stored};
use super::spool::{self, Fate, Refusal, Spool};
use super::{Appended, MAX_TEXT_BYTES, Mailbox, MailboxError, history, load_locked};
use crate::atomic_file::{self, FileLock, LockError, TempFile};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The last part of a send's deadline (at most a tenth of it) is kept for
/// a sender whose entry a holder has claimed: it stops competing for the
/// lock and waits for that holder's outcome (a live holder has only its own
/// I/O left). Past the deadline it answers [`MailboxError::StillPending`].
const CLAIMED_GRACE: Duration = Duration::from_secs(1);
/// How long a waiter whose entry missed a commit pauses before it tries
/// for the lock again (see `Mailbox::await_commit`).
const WAITER_NAP: Duration = Duration::from_millis(1);
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
pub(super) struct Hooks {
    pub(super) callback: Option<Arc<dyn Fn(Stage) + Send + Sync>>,
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
    /// Sends `entry` to `to`'s inbox and returns once it is on disk.
    ///
    /// The envelope is completed as Claude Code 2.1.328 writes it: a fresh
    /// `msg_id` if none, `msgV:1`, `type:"message"`, and always `read:false`
    /// (swarm never writes `read:true`). Appending an entry whose `msg_id` is
    /// already in the inbox with the same identity is a no-op (a retried
    /// send); with a different identity it is refused.
    ///
    /// Once the entry is on disk, `to`'s doorbell rings (if its runtime
    /// listens), so the recipient and nobody else wakes at once.
    pub fn append(&self, to: &str, entry: Entry) -> Result<Appended, MailboxError> {
        let sent = self.append_quietly(to, entry)?;
        self.ring(to);
        Ok(sent)
    }

    /// Sends `entries` to `to`'s inbox, in order, in one durable write (with
    /// whatever other sends wait), and returns how each fared once they are
    /// on disk: each as [`Mailbox::append`] would (the envelope completed, a
    /// refusal per entry). Waits for the lock instead of spooling: one
    /// process's batch (`swarm send --stdin`) costs one write, not one each.
    pub fn append_all(
        &self,
        to: &str,
        entries: Vec<Entry>,
    ) -> Result<Vec<Result<Appended, MailboxError>>, MailboxError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let path = self.inbox_path(to)?;
        let entries = entries
            .into_iter()
            .map(|e| envelope(&path, e))
            .collect::<Result<Vec<_>, _>>()?;
        self.ensure_inbox(&path)?;
        let mut lock = FileLock::acquire(&path, self.lock_timeout)?;
        let sent = self.commit_holding(to, &path, &mut lock, &entries)?;
        drop(lock);
        self.ring(to);
        Ok(sent)
    }

    fn ensure_inbox(&self, path: &Path) -> Result<(), MailboxError> {
        let dir = self.root.inboxes_dir(&self.team)?;
        atomic_file::ensure_dir(&dir).map_err(|e| MailboxError::io(&dir, e))?;
        atomic_file::create_new(path, b"[]").map_err(|e| MailboxError::io(path, e))?;
        Ok(())
    }

    fn append_quietly(&self, to: &str, entry: Entry) -> Result<Appended, MailboxError> {
        let path = self.inbox_path(to)?;
        let entry = envelope(&path, entry)?;
        let msg_id = entry.msg_id.clone().unwrap_or_default();
        self.ensure_inbox(&path)?;

        // Nobody holds the lock: commit this entry, and any waiting ones.
        if let Some(os) = FileLock::try_os_lock(&path)? {
            let mut lock = os.take_dir(self.lock_timeout)?;
            let mut own =
                self.commit_holding(to, &path, &mut lock, std::slice::from_ref(&entry))?;
            return own
                .pop()
                .expect("a commit with an entry of its own reports on it");
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
                        if let Err(e) = self.commit_holding(to, path, &mut lock, &[]) {
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
        own: &[Entry],
    ) -> Result<Vec<Result<Appended, MailboxError>>, MailboxError> {
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
    /// `own` (last, in order) into the inbox in one durable write, then
    /// settles the spool. Returns how each of `own` fared. See [`spool`] for the protocol and
    /// why each step comes where it does. The lock is verified just before
    /// the rename; a lost one fails the commit with [`LockError::Lost`]
    /// before anything was written (the claims go back to pending).
    pub(super) fn commit(
        &self,
        to: &str,
        path: &Path,
        lock: &FileLock,
        own: &[Entry],
    ) -> Result<Vec<Result<Appended, MailboxError>>, MailboxError> {
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
        let own_from = batch.len();
        batch.extend(own.iter().map(|e| (None, e.clone())));

        let (mut stored, quarantined) = load_locked(path, inbox::parse_lazy)?;
        let mut ids: HashSet<Box<str>> = stored
            .iter()
            .filter_map(|s| s.msg_id())
            .map(Into::into)
            .collect();
        let mut fates: Vec<Option<Refusal>> = Vec::with_capacity(batch.len());
        let mut added: Vec<String> = Vec::new();
        let mut dropped: Vec<Stored> = Vec::new();
        let mut own_dropped = vec![0; own.len()];
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
                    if let Some(i) = fates.len().checked_sub(own_from) {
                        own_dropped[i] = d.len();
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

        Ok((own_from..batch.len())
            .map(|i| {
                let msg_id = batch[i].1.msg_id.clone().unwrap_or_default();
                match &fates[i] {
                    Some(why) => Err(why.clone().into_error(path, &msg_id)),
                    None if not_persisted.contains(&msg_id) => {
                        Err(Refusal::NotPersisted.into_error(path, &msg_id))
                    }
                    None => Ok(Appended {
                        msg_id,
                        quarantined: quarantined.clone(),
                        dropped: own_dropped[i - own_from],
                    }),
                }
            })
            .collect())
    }
}

/// `entry` completed as Claude Code 2.1.328 writes it (see
/// [`Mailbox::append`]), or refused for its length.
fn envelope(inbox: &Path, mut entry: Entry) -> Result<Entry, MailboxError> {
    if entry.text.len() > MAX_TEXT_BYTES {
        return Err(MailboxError::TextTooLong {
            inbox: inbox.to_path_buf(),
            bytes: entry.text.len(),
            limit: MAX_TEXT_BYTES,
        });
    }
    entry
        .msg_id
        .get_or_insert_with(|| uuid::Uuid::new_v4().to_string());
    entry.msg_v.get_or_insert(1);
    entry.kind.get_or_insert_with(|| "message".to_owned());
    entry.read = Some(false);
    Ok(entry)
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
