//! Sending: [`Mailbox::append`], the group commit of an inbox's waiting
//! sends by whoever holds its lock (the protocol is in `spool.rs`; the
//! faults tests inject into it are in `fault.rs`).

use super::entry::Entry;
use super::fault::Stage;
use super::inbox::{self, Limits, Stored};
use super::last_write::LastWrite;
use super::spool::{self, Fate, Refusal, Spool};
use super::{Appended, MAX_TEXT_BYTES, Mailbox, MailboxError, history, load_locked};
use crate::atomic_file::{self, FileLock, LockError, TempFile};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a commit did for its holder.
pub(super) struct Committed {
    /// How each of the holder's own entries fared, in order.
    pub(super) own: Vec<Result<Appended, MailboxError>>,
    /// The recipient's doorbell already rang (an append in place rings as
    /// soon as readers see the entries); `false`: the sender rings it.
    pub(super) rung: bool,
}

/// The last part of a send's deadline (at most a tenth of it) is kept for
/// a sender whose entry a holder has claimed: it stops competing for the
/// lock and waits for that holder's outcome (a live holder has only its own
/// I/O left). Past the deadline it answers [`MailboxError::StillPending`].
const CLAIMED_GRACE: Duration = Duration::from_secs(1);
/// How long a waiter whose entry missed a commit pauses before it tries
/// for the lock again (see `Mailbox::await_commit`).
const WAITER_NAP: Duration = Duration::from_millis(1);
impl Mailbox {
    /// Sends `entry` to `to`'s inbox and returns once it is on disk.
    ///
    /// The envelope is completed as Claude Code 2.1.328 writes it: a fresh
    /// `msg_id` if none, `msgV:1`, `type:"message"`, and always `read:false`
    /// (swarm never writes `read:true`). Appending an entry whose `msg_id` is
    /// already in the inbox with the same identity is a no-op (a retried
    /// send); with a different identity it is refused.
    ///
    /// `to`'s doorbell rings (if its runtime listens), so the recipient
    /// and nobody else wakes at once: as soon as the entry is where
    /// readers look when it is appended in place (the recipient starts on
    /// it while it is made durable; the send still answers only once it
    /// is), else once it is on disk.
    pub fn append(&self, to: &str, entry: Entry) -> Result<Appended, MailboxError> {
        let (sent, rung) = self.append_quietly(to, entry)?;
        if !rung {
            self.ring(to);
        }
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
        self.ensure_inbox_dir()?;
        let mut lock = FileLock::acquire(&path, self.lock_timeout)?;
        let sent = self.commit_holding(to, &path, &mut lock, &entries)?;
        drop(lock);
        if !sent.rung {
            self.ring(to);
        }
        Ok(sent.own)
    }

    /// The inboxes directory, made if missing. A missing inbox is not
    /// made first as `[]` (Claude Code does, with `O_EXCL`): it reads as
    /// `[]` everywhere, and the commit's rename makes it with the entry.
    /// Made first, each new inbox cost a temp file, a hard link, an unlink
    /// and two fsyncs more, in one directory every sender of the team
    /// writes to (a `swarm down` of 32 spent half its CPU queued on that
    /// directory's lock).
    fn ensure_inbox_dir(&self) -> Result<(), MailboxError> {
        let dir = self.root.inboxes_dir(&self.team)?;
        atomic_file::ensure_dir(&dir).map_err(|e| MailboxError::io(&dir, e))?;
        Ok(())
    }

    /// The entry sent, and whether `to`'s doorbell already rang for it.
    fn append_quietly(&self, to: &str, entry: Entry) -> Result<(Appended, bool), MailboxError> {
        let path = self.inbox_path(to)?;
        let entry = envelope(&path, entry)?;
        let msg_id = entry.msg_id.clone().unwrap_or_default();
        self.ensure_inbox_dir()?;

        // Nobody holds the lock: commit this entry, and any waiting ones.
        if let Some(os) = FileLock::try_os_lock(&path)? {
            let mut lock = os.take_dir(self.lock_timeout)?;
            let mut done =
                self.commit_holding(to, &path, &mut lock, std::slice::from_ref(&entry))?;
            let own = done
                .own
                .pop()
                .expect("a commit with an entry of its own reports on it");
            return own.map(|sent| (sent, done.rung));
        }
        // Someone does: hand the entry over and wait for its commit.
        let spool = Spool::new(self.root.spool(&self.team, to)?);
        let key = spool.put(&entry).map_err(spool_err(&spool))?;
        let sent = self.await_commit(to, &path, &spool, &key, msg_id)?;
        Ok((sent, false))
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
        let start = Instant::now();
        let deadline = start + self.lock_timeout;
        // The last part of the wait is kept for an entry a holder has
        // claimed by then: a live holder has only its own I/O left.
        let grace = (self.lock_timeout / 10).min(CLAIMED_GRACE);
        let mut until = deadline - grace;
        loop {
            if let Some(sent) = self.take_turns(to, path, spool, key, &msg_id, until)? {
                return Ok(sent);
            }
            // `until` passed. Still pending: taken back, nothing was sent.
            if spool.withdraw(key).map_err(spool_err(spool))? {
                return Err(timeout(path, start));
            }
            if until < deadline {
                // Claimed: its holder holds every lock, and has only its own
                // I/O left unless it is stopped; wait for it, not past the
                // deadline.
                tracing::warn!(inbox = %path.display(), %msg_id, "deadline near while the message was being written; waiting for the outcome");
                until = deadline;
                continue;
            }
            return self.answer_at_deadline(path, spool, key, msg_id, start);
        }
    }

    /// Waits for the spooled entry `key` to be settled until `until`,
    /// committing it (and whatever else waits) itself whenever it can take
    /// the lock: returns it delivered, its refusal, or `None` once `until`
    /// passed with it unsettled.
    ///
    /// It waits for the current holder to let go: a shared lock is granted
    /// to every waiter at once, and most find their entry delivered. One
    /// whose entry still waits tries for the lock itself; failing that (a
    /// new holder, or other waiters still looking), it naps before looking
    /// again. It must not go straight back to the shared lock: waiters that
    /// kept re-taking it would keep each other from ever getting the lock.
    /// Nor queue for the lock exclusively: each waiter would then hold the
    /// lock in turn only to find its entry delivered, one wake-up of every
    /// other waiter per turn.
    fn take_turns(
        &self,
        to: &str,
        path: &Path,
        spool: &Spool,
        key: &spool::Key,
        msg_id: &str,
        until: Instant,
    ) -> Result<Option<Appended>, MailboxError> {
        let fate = || spool.fate(key).map_err(spool_err(spool));
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let Some(os) = FileLock::try_os_lock(path)? else {
                let Some(shared) = FileLock::wait_shared(path, left)? else {
                    return Ok(None);
                };
                if let Some(done) = settled(fate()?, path, msg_id) {
                    return done.map(Some);
                }
                drop(shared);
                std::thread::sleep(WAITER_NAP.min(left));
                continue;
            };
            if let Some(done) = settled(fate()?, path, msg_id) {
                return done.map(Some);
            }
            let failed = match os.take_dir(left) {
                Ok(mut lock) => match self.commit_holding(to, path, &mut lock, &[]) {
                    Ok(_) => continue,
                    Err(e) => e,
                },
                Err(LockError::Timeout { .. }) => return Ok(None),
                Err(e) => e.into(),
            };
            // The commit failed: taken back, the send fails with it; already
            // claimed by another holder, it is that holder's to settle.
            if spool.withdraw(key).map_err(spool_err(spool))? {
                return Err(failed);
            }
        }
    }

    /// The send's deadline passed with the entry claimed: answers with what
    /// the spool says, without the lock (its holder may be stopped while
    /// holding it). A claim it renamed back to pending (its commit failed)
    /// is withdrawn by the second withdraw, which a false "delivered" needs
    /// to pass.
    fn answer_at_deadline(
        &self,
        path: &Path,
        spool: &Spool,
        key: &spool::Key,
        msg_id: String,
        start: Instant,
    ) -> Result<Appended, MailboxError> {
        let withdraw = || spool.withdraw(key).map_err(spool_err(spool));
        match spool.fate(key).map_err(spool_err(spool))? {
            Fate::Failed(why) => Err(why.into_error(path, &msg_id)),
            Fate::Delivered if !withdraw()? => Ok(Appended {
                msg_id,
                quarantined: None,
                dropped: 0,
            }),
            Fate::Pending if !withdraw()? => {
                Err(self.still_pending(path, spool, key, msg_id, start))
            }
            Fate::Delivered | Fate::Pending => Err(timeout(path, start)),
            Fate::Claimed => Err(self.still_pending(path, spool, key, msg_id, start)),
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
    ) -> Result<Committed, MailboxError> {
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
    /// settles the spool. Returns how each of `own` fared. See [`spool`] for
    /// the protocol and why each step comes where it does. The lock is
    /// verified just before the rename; a lost one fails the commit with
    /// [`LockError::Lost`] before anything was written (the claims go back
    /// to pending).
    pub(super) fn commit(
        &self,
        to: &str,
        path: &Path,
        lock: &FileLock,
        own: &[Entry],
    ) -> Result<Committed, MailboxError> {
        let spool = Spool::new(self.root.spool(&self.team, to)?);
        let listing = spool.list().map_err(spool_err(&spool))?;
        let record = self.last_write_path(to)?;
        // Nothing in the spool: only the holder's own entries, appended in
        // place when the inbox is as swarm last wrote it (no temp file
        // made). Claims keep the rewrite, whose rename is their commit
        // record (see `Mailbox::append_in_place`). A commit of nothing of
        // its own (a waiter's turn) writes nothing in place, and rings
        // nobody.
        if listing.is_empty() && !own.is_empty() {
            let batch = Batch::own(own);
            if let Some((merged, lost)) = self.append_in_place(to, path, lock, &record, &batch)? {
                self.hooks.at(Stage::Committed, 0);
                return Ok(Committed {
                    own: batch.outcomes(path, &merged, &lost, &None),
                    rung: true,
                });
            }
        }
        // `tmp` before `claims`: a failed commit drops the claims (back to
        // pending) before the temp file goes.
        let mut tmp = TempFile::create(path).map_err(|e| MailboxError::io(path, e))?;
        let mut claims = claim_waiting(path, &spool, &listing, tmp.tag())?;
        self.hooks.at(Stage::Claimed, claims.held.len());

        let batch = Batch::read(&claims, own)?;
        let (mut stored, quarantined) = load_locked(path, inbox::parse_lazy)?;
        let merged = batch.merge_into(&mut stored);
        if !merged.dropped.is_empty() {
            tracing::info!(
                inbox = %path.display(),
                dropped = merged.dropped.len(),
                "inbox compacted; the oldest read and protocol entries moved to history"
            );
            history::record(&self.root.history(&self.team, to)?, &merged.dropped)?;
        }
        // Refusals are recorded before the commit: a crash after it must
        // never make a refused entry look delivered.
        for ((slot, _), fate) in batch.entries.iter().zip(&merged.fates) {
            if let (Some(i), Some(why)) = (slot, fate) {
                let (key, claim) = &claims.held[*i];
                spool.refuse(key, claim, why).map_err(spool_err(&spool))?;
            }
        }

        let changed =
            !merged.added.is_empty() || quarantined.is_some() || !merged.dropped.is_empty();
        let not_persisted = if changed {
            let rendered = inbox::render(&stored);
            self.write_inbox(path, lock, &mut tmp, &mut claims, &rendered)?;
            // The descriptor of the inode now at the path, as written.
            match LastWrite::of(tmp.file(), &stored, &rendered) {
                Ok(last) => last.save(&record),
                Err(e) => {
                    tracing::debug!(inbox = %path.display(), error = %e, "inbox record not made")
                }
            }
            not_persisted(path, &rendered, &merged.added)?
        } else {
            HashSet::new()
        };
        self.hooks.at(Stage::Committed, claims.held.len());

        settle(&mut claims, &batch, &merged.fates, &not_persisted)?;
        spool.remove_batch(tmp.tag()).map_err(spool_err(&spool))?;
        drop(tmp);
        Ok(Committed {
            own: batch.outcomes(path, &merged, &not_persisted, &quarantined),
            rung: false,
        })
    }

    /// The holder's own entries of `batch` appended to the inbox at `path`
    /// in place, durably, when that needs no decision the file's contents
    /// could change: the inbox is as swarm last wrote it ([`LastWrite`]:
    /// a send's or a consumption's write), no `msg_id` of the batch may be
    /// in it already, and no cap is near. `None` (nothing written)
    /// otherwise: the caller reads and rewrites it.
    ///
    /// The bytes are those a rewrite would lay out ([`inbox::appended`]),
    /// written by one `pwrite` that stays within one 4 KiB block, then
    /// `fdatasync` (bytes that would not are written by a copy of the
    /// file, [`Mailbox::append_by_copy`]). `to`'s doorbell rings between
    /// the two, as soon as readers see the entries: the recipient reads
    /// them from the page cache while they are made durable (the send
    /// still answers only once they are; a reader that takes no lock
    /// could see them there before the `fdatasync` anyway).
    ///
    /// Why within one block: the kernel copies a write into the page cache
    /// a page (or folio) at a time and gives up between pages on a fatal
    /// signal, so a `kill -9` can cut a write that spans pages, leaving a
    /// torn array on disk that Claude Code would read as `[]` (and its next
    /// send would erase the rest). A write within one page is copied whole
    /// or not at all. An append that would cross a block boundary (about
    /// one send in twelve with entries of a few hundred bytes) copies the
    /// file instead. A power cut before the `fdatasync` can still tear it;
    /// the next swarm holder, or any swarm read, cuts a torn tail back to
    /// the last whole entry (`load_locked`), which is the file as it was
    /// before: the torn entries were not acknowledged.
    ///
    /// While the `pwrite` runs, a reader that takes no lock may see the
    /// array half written (the page cache is not locked against reads):
    /// Claude Code's poll then reads `[]` for that one poll and reads again
    /// a second later (it consumes only under the lock, which this holder
    /// has); swarm's readers take the lock and read again whenever a file
    /// does not parse.
    ///
    /// Spooled claims are never appended: their commit record is the temp
    /// file, whose disappearance by rename says "delivered" atomically; an
    /// append has no such record that survives a consumer rewriting the
    /// inbox before the next holder looks.
    fn append_in_place(
        &self,
        to: &str,
        path: &Path,
        lock: &FileLock,
        record: &Path,
        batch: &Batch,
    ) -> Result<Option<(Merged, HashSet<String>)>, MailboxError> {
        use std::os::unix::fs::MetadataExt;
        /// The smallest page Linux uses: a larger one only holds more.
        const BLOCK: u64 = 4096;
        let io = |e| MailboxError::io(path, e);
        let file = match atomic_file::open_for_write_in_place(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        // Its last bytes are read through a descriptor of its own (the one
        // above only writes), of the same inode.
        let reading = atomic_file::open_nofollow(path).map_err(io)?;
        let same = |a: &std::fs::File, b: &std::fs::File| -> std::io::Result<bool> {
            let (a, b) = (a.metadata()?, b.metadata()?);
            Ok((a.dev(), a.ino()) == (b.dev(), b.ino()))
        };
        if !same(&file, &reading).map_err(io)? {
            return Ok(None);
        }
        let Some(last) = LastWrite::load(record, &reading) else {
            return Ok(None);
        };
        let mut counts = last.counts;
        let mut fresh: Vec<Stored> = Vec::with_capacity(batch.entries.len());
        for (_, entry) in &batch.entries {
            let Some(id) = entry.msg_id.as_deref() else {
                return Ok(None);
            };
            if last.may_hold(id) || fresh.iter().any(|s| s.msg_id() == Some(id)) {
                return Ok(None);
            }
            let s = Stored::new(entry.clone());
            counts.add(&s);
            fresh.push(s);
        }
        if !counts.surely_under(Limits::INBOX) {
            return Ok(None);
        }
        // Over the closing `\n]`; an empty inbox's `[]` is overwritten whole.
        let bytes = if last.counts.entries == 0 {
            inbox::render(&fresh)
        } else {
            inbox::appended(&fresh)
        };
        let at = last.counts.bytes - 2;
        // Only where the rewrite it stands for would fit: an append is a
        // shortcut that changes no outcome, so on a disk too full for the
        // rewrite the send fails with the disk's error as it always did
        // (and the consumer, who must rewrite the file, is not handed an
        // inbox grown past what it can write).
        if free_bytes(&file).map_err(io)? < counts.bytes {
            return Ok(None);
        }
        let copy;
        let written_to = if at / BLOCK == (at + bytes.len() as u64 - 1) / BLOCK {
            self.hooks.at(Stage::Written, 0);
            lock.verify()?;
            inbox::write_at(&file, last.counts.bytes, &bytes).map_err(io)?;
            self.ring(to);
            self.hooks.at(Stage::Appended, 0);
            file.sync_data().map_err(io)?;
            &file
        } else {
            let Some(renamed) = self.append_by_copy(path, lock, &reading, at, &bytes)? else {
                return Ok(None);
            };
            self.ring(to);
            copy = renamed;
            copy.file()
        };
        match last.appended(written_to, &fresh, &bytes) {
            Ok(last) => last.save(record),
            Err(e) => {
                tracing::debug!(inbox = %path.display(), error = %e, "inbox record not made")
            }
        }
        let added: Vec<String> = fresh
            .iter()
            .filter_map(|s| s.msg_id())
            .map(str::to_owned)
            .collect();
        // Read back: the inode written is still the inbox (a writer that
        // broke the lock between its check and the write would have
        // replaced it); if not, the file now there is searched.
        let written = written_to.metadata().map_err(io)?;
        let there = std::fs::symlink_metadata(path).map_err(io)?;
        let lost = if (there.dev(), there.ino()) == (written.dev(), written.ino()) {
            HashSet::new()
        } else {
            not_persisted(path, &[], &added)?
        };
        let merged = Merged {
            fates: vec![None; batch.entries.len()],
            added,
            dropped: Vec::new(),
            own_dropped: vec![0; batch.entries.len() - batch.own_from],
        };
        Ok(Some((merged, lost)))
    }

    /// [`Mailbox::append_in_place`] for `bytes` that would cross a block
    /// boundary (one pwrite could be cut there): the inbox at `path`, open
    /// as `reading` and as swarm last wrote it, is copied up to `at` (its
    /// closing `\n]`) into a temp file by the kernel, `bytes` follow, and
    /// the temp file is made durable and renamed over the inbox. The same
    /// bytes a rewrite lays out, without reading the entries or laying them
    /// out again: at 10,000 entries the parse and layout were most of the
    /// one send in sixteen that crossed a block (38-55 ms from the send to
    /// a follower, against 5 ms for the others). `None` (nothing changed)
    /// when the file is not the one checked any more.
    fn append_by_copy(
        &self,
        path: &Path,
        lock: &FileLock,
        reading: &std::fs::File,
        at: u64,
        bytes: &[u8],
    ) -> Result<Option<TempFile>, MailboxError> {
        use std::io::{Read, Seek, Write};
        use std::os::unix::fs::MetadataExt;
        let io = |e| MailboxError::io(path, e);
        let mut tmp = TempFile::create(path).map_err(io)?;
        let mut from = reading;
        from.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
        let mut to = tmp.file();
        if std::io::copy(&mut from.take(at), &mut to).map_err(io)? != at {
            return Ok(None);
        }
        to.write_all(bytes).map_err(io)?;
        tmp.sync().map_err(io)?;
        let (was, there) = (
            reading.metadata().map_err(io)?,
            std::fs::symlink_metadata(path).map_err(io)?,
        );
        if (was.dev(), was.ino(), was.len()) != (there.dev(), there.ino(), at + 2) {
            return Ok(None);
        }
        self.hooks.at(Stage::Written, 0);
        tmp.rename_over(path, Some(lock))
            .map_err(|e| MailboxError::io(path, e.source))?;
        Ok(Some(tmp))
    }

    /// Writes `rendered` over the inbox at `path` through `tmp`: durably,
    /// the lock verified just before the rename.
    fn write_inbox(
        &self,
        path: &Path,
        lock: &FileLock,
        tmp: &mut TempFile,
        claims: &mut Claims<'_>,
        rendered: &[u8],
    ) -> Result<(), MailboxError> {
        tmp.write_synced(rendered)
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
        Ok(())
    }
}

/// Claims, for the batch `tag`, every entry of `listing` still waiting:
/// what dead holders left and every pending entry, oldest first. A claim
/// listed in a dead holder's batch whose temp file is gone was renamed into
/// the inbox: delivered, only its clean-up is left (after a directory fsync:
/// that holder may have died before its own). Any other claim is taken over.
fn claim_waiting<'a>(
    path: &Path,
    spool: &'a Spool,
    listing: &spool::Listing,
    tag: &str,
) -> Result<Claims<'a>, MailboxError> {
    let spool_err = spool_err(spool);
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
            spool::remove(&spool.claimed_path(k)).map_err(&spool_err)?;
        }
    }
    let mut batch_keys: Vec<&spool::Key> = listing
        .pending
        .iter()
        .chain(taken_over.iter().copied())
        .collect();
    batch_keys.sort();
    let mut claims = Claims {
        spool,
        tag: tag.to_owned(),
        held: Vec::new(),
    };
    if !batch_keys.is_empty() {
        spool.write_batch(tag, &batch_keys).map_err(&spool_err)?;
    }
    // Only now may the dead holders' records go: the keys they claimed
    // and did not commit are in this holder's batch.
    for (tag, _) in &listing.batches {
        spool.remove_batch(tag).map_err(&spool_err)?;
        spool::remove(&atomic_file::temp_path(path, tag)).map_err(&spool_err)?;
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
    Ok(claims)
}

/// Read back after the rename: the ids of `added` that the file at the
/// inbox path does not hold. It normally holds exactly what was written
/// (one compare); if a writer that does not lock replaced it since, it is
/// searched.
fn not_persisted(
    path: &Path,
    rendered: &[u8],
    added: &[String],
) -> Result<HashSet<String>, MailboxError> {
    let io = |e| MailboxError::io(path, e);
    if holds_exactly(path, rendered).map_err(io)? {
        return Ok(HashSet::new());
    }
    let on_disk = atomic_file::read_nofollow(path).map_err(io)?;
    Ok(added
        .iter()
        .filter(|id| {
            let needle = format!("\"msg_id\": {}", crate::json_text::to_compact(id));
            !contains(&on_disk, needle.as_bytes())
        })
        .cloned()
        .collect())
}

/// The commit is durable: settles the spool. A claim whose entry went in
/// is removed, one that did not persist is refused (refusals are already
/// recorded). Claims go before the temp file does.
fn settle(
    claims: &mut Claims<'_>,
    batch: &Batch,
    fates: &[Option<Refusal>],
    not_persisted: &HashSet<String>,
) -> Result<(), MailboxError> {
    let spool = claims.spool;
    for ((slot, entry), fate) in batch.entries.iter().zip(fates) {
        let Some(i) = slot else { continue };
        let (key, claim) = &claims.held[*i];
        let lost = entry
            .msg_id
            .as_ref()
            .is_some_and(|id| not_persisted.contains(id));
        if lost {
            spool
                .refuse(key, claim, &Refusal::NotPersisted)
                .map_err(spool_err(spool))?;
        } else if fate.is_none() {
            spool::remove(claim).map_err(spool_err(spool))?;
        }
    }
    claims.held.clear();
    Ok(())
}

/// A commit's entries, oldest first, the holder's own last: each with the
/// index of its claim in [`Claims::held`] (`None` for the holder's own).
struct Batch {
    entries: Vec<(Option<usize>, Entry)>,
    /// Where the holder's own entries start.
    own_from: usize,
}

/// What merging a [`Batch`] into the inbox did.
struct Merged {
    /// Per entry of the batch: `None` if it is in the inbox (added, or
    /// already there as a retried send), else why it was refused.
    fates: Vec<Option<Refusal>>,
    /// The ids added.
    added: Vec<String>,
    /// The entries compaction moved out, for the history.
    dropped: Vec<Stored>,
    /// How many entries compaction dropped to make room for each own entry.
    own_dropped: Vec<usize>,
}

impl Batch {
    /// Reads the held claims (setting aside the unreadable), then `own`.
    fn read(claims: &Claims<'_>, own: &[Entry]) -> Result<Batch, MailboxError> {
        let spool = claims.spool;
        let mut entries: Vec<(Option<usize>, Entry)> = Vec::new();
        for (i, (key, claim)) in claims.held.iter().enumerate() {
            match spool.read(claim).map_err(spool_err(spool))? {
                Ok(e) => entries.push((Some(i), e)),
                Err(problem) => {
                    tracing::warn!(spool = %claim.display(), %problem, "unreadable spooled send set aside");
                    spool.set_aside(key, claim).map_err(spool_err(spool))?;
                }
            }
        }
        let own_from = entries.len();
        entries.extend(own.iter().map(|e| (None, e.clone())));
        Ok(Batch { entries, own_from })
    }

    /// `own` alone: nothing was claimed.
    fn own(own: &[Entry]) -> Batch {
        Batch {
            entries: own.iter().map(|e| (None, e.clone())).collect(),
            own_from: 0,
        }
    }

    /// Adds the batch's entries to `stored`, in order, compacting as each
    /// goes in; an entry already there (same `msg_id` and identity) is not
    /// added again, one under a taken id or with no room is refused.
    fn merge_into(&self, stored: &mut Vec<Stored>) -> Merged {
        let mut ids: HashSet<Box<str>> = stored
            .iter()
            .filter_map(|s| s.msg_id())
            .map(Into::into)
            .collect();
        let mut merged = Merged {
            fates: Vec::with_capacity(self.entries.len()),
            added: Vec::new(),
            dropped: Vec::new(),
            own_dropped: vec![0; self.entries.len() - self.own_from],
        };
        for (_, entry) in &self.entries {
            let msg_id = entry.msg_id.clone().unwrap_or_default();
            if ids.contains(msg_id.as_str())
                && let Some(old) = stored.iter().find(|s| s.msg_id() == Some(msg_id.as_str()))
            {
                // Already there: a retried send, or a claim delivered before
                // a crash. Only a different entry under the same id is refused.
                let refused = old.entry().key() != entry.key();
                merged
                    .fates
                    .push(refused.then_some(Refusal::DuplicateMsgId));
                continue;
            }
            stored.push(Stored::new(entry.clone()));
            match inbox::compact(stored, Limits::INBOX) {
                Ok(d) => {
                    if let Some(i) = merged.fates.len().checked_sub(self.own_from) {
                        merged.own_dropped[i] = d.len();
                    }
                    merged.dropped.extend(d);
                    ids.insert(msg_id.clone().into());
                    merged.added.push(msg_id);
                    merged.fates.push(None);
                }
                Err(detail) => {
                    stored.pop();
                    merged.fates.push(Some(Refusal::InboxFull { detail }));
                }
            }
        }
        merged
    }

    /// How each of the holder's own entries fared.
    fn outcomes(
        &self,
        path: &Path,
        merged: &Merged,
        not_persisted: &HashSet<String>,
        quarantined: &Option<PathBuf>,
    ) -> Vec<Result<Appended, MailboxError>> {
        (self.own_from..self.entries.len())
            .map(|i| {
                let msg_id = self.entries[i].1.msg_id.clone().unwrap_or_default();
                match &merged.fates[i] {
                    Some(why) => Err(why.clone().into_error(path, &msg_id)),
                    None if not_persisted.contains(&msg_id) => {
                        Err(Refusal::NotPersisted.into_error(path, &msg_id))
                    }
                    None => Ok(Appended {
                        msg_id,
                        quarantined: quarantined.clone(),
                        dropped: merged.own_dropped[i - self.own_from],
                    }),
                }
            })
            .collect()
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
        // Every claim released: the batch no longer speaks for any. One
        // left behind is harmless: it lists only pending keys now, which no
        // holder takes for delivered, and the next holder removes it.
        crate::dropped::ignore(
            self.spool.remove_batch(&self.tag),
            "removing the batch record of a failed commit",
        );
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

/// How a spooled entry with this fate was settled, if it was.
fn settled(fate: Fate, path: &Path, msg_id: &str) -> Option<Result<Appended, MailboxError>> {
    match fate {
        Fate::Delivered => Some(Ok(Appended {
            msg_id: msg_id.to_owned(),
            quarantined: None,
            dropped: 0,
        })),
        Fate::Failed(why) => Some(Err(why.into_error(path, msg_id))),
        Fate::Pending | Fate::Claimed => None,
    }
}

/// A send that ran out of time waiting for the lock of the inbox at `path`.
fn timeout(path: &Path, start: Instant) -> MailboxError {
    MailboxError::from(LockError::Timeout {
        path: crate::atomic_file::lock_dir_for(path),
        waited: start.elapsed(),
        holder: "another process",
    })
}

/// An I/O error in `spool`, as a [`MailboxError`] naming its directory.
fn spool_err(spool: &Spool) -> impl Fn(std::io::Error) -> MailboxError + '_ {
    |e| MailboxError::io(spool.dir(), e)
}

/// The bytes an unprivileged writer may still use on `file`'s file system.
fn free_bytes(file: &std::fs::File) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `st` is a valid place for one `statvfs`, written by the call
    // before it is read, and only read when the call succeeded; the
    // descriptor is open for the call's duration (borrowed from `file`).
    let st = unsafe {
        if libc::fstatvfs(file.as_raw_fd(), st.as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        st.assume_init()
    };
    Ok(st.f_bavail.saturating_mul(st.f_frsize))
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
