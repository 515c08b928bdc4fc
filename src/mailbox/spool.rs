//! The spool of one inbox: sends waiting for the inbox's group commit.
//!
//! # Why
//!
//! Every write of an inbox costs a full rewrite, an fsync of the file and an
//! fsync of its directory, under the inbox lock. One send per write caps an
//! inbox at a few hundred messages a second however many senders wait, and
//! less as the file grows. So a sender that finds the lock held does not
//! queue for it: it hands its entry to the holder through the spool, and the
//! holder writes every waiting entry into the inbox in its one rewrite
//! (group commit). A delivered entry is one that is in the inbox file,
//! durably: readers (swarm, the teammate runtime, Claude Code) read only
//! that file, so a sender reports success only once its entry is there.
//!
//! # Files
//!
//! `<root>/swarm/<team>/spool/<member>/`, one file per waiting send, named
//! by a key `<epoch ns, 20 digits>-<random 32 hex>` (time order is merge
//! order):
//!
//! * `<key>.tmp`: being written by its sender; ignored, removed when old.
//! * `<key>.json`: pending, the entry as JSON. Written to `.tmp` and renamed,
//!   so a holder never reads half a file. Not fsynced: until the entry is in
//!   the inbox nothing has been acknowledged, and the inbox commit is
//!   fsynced.
//! * `<key>.claimed`: taken by a holder. The claim is a rename, so a sender
//!   withdrawing (unlinking `<key>.json`) and a holder claiming cannot both
//!   win.
//! * `<tag>.batch`: the keys claimed by the holder whose inbox temp file is
//!   `<inbox>.tmp.<tag>`, written before it claims them.
//! * `<key>.failed`: refused (inbox full, `msg_id` reused); holds why.
//! * `<key>.corrupt`: unreadable (only a power cut can leave one), set aside.
//!
//! # Protocol
//!
//! Holder (holds the inbox lock: OS lock + lock directory):
//! 1. create its inbox temp file `<inbox>.tmp.<tag>` (empty);
//! 2. settle what dead holders left: a claim listed in a batch whose temp
//!    file is gone was renamed into the inbox (delivered, only its clean-up
//!    is left); any other claim is taken over. It writes its own batch (the
//!    pending keys and the taken-over claims), only then drops the dead
//!    holders' batches and temp files, and claims the pending files;
//! 3. read the inbox, drop entries whose `msg_id` is already there (a claim
//!    delivered before a crash, a retried send), apply the caps, write
//!    `.failed` for refused entries (before the commit: a crash must never
//!    make a refused entry look delivered);
//! 4. write the temp file, fsync, rename over the inbox, fsync the directory;
//! 5. only then delete the claimed files, and release the lock.
//!
//! A failure before the rename renames the claims back to pending before the
//! temp file goes; a crash anywhere leaves claims that the next holder
//! resolves by step 2. The temp file's existence is the commit record, so a
//! claim is never merged twice even if a consumer (Claude Code included)
//! took the entry out of the inbox in between.
//!
//! Sender that finds the lock held: writes its pending file, then waits for
//! the holder to let go (a shared OS lock on the inbox lock's sidecar is
//! granted to every waiter the moment no swarm process holds the lock).
//! Under it the spool is still (only holders move claims) and the sender
//! reads its fate with a few `stat`s: failed, or gone = delivered, and it
//! returns; pending or claimed (a dead holder's), and it tries for the lock
//! to become the holder itself, or naps 1 ms and looks again. At its
//! deadline it withdraws by unlinking its pending file: success means
//! nothing was sent; failure means a holder has claimed it, and such a
//! holder already holds every lock and has only its own I/O left (or died,
//! freeing the lock at once), so the sender waits for
//! the outcome instead of reporting a failure that may be false.
//!
//! A sender killed while waiting leaves its pending file: the next holder
//! delivers it (late, but never twice). Readers never look at the spool,
//! and Claude Code, which knows nothing of it, still takes the inbox lock
//! directory as before: a swarm holder takes that directory before it
//! claims anything, so Claude Code and a group commit never overlap.
//!
//! # Cost
//!
//! One inbox rewrite, file fsync and directory fsync per batch, not per
//! message; a waiting sender adds a small unsynced write and rename, and a
//! few `stat`s. `benches/coord.rs` measures it (32 writer processes × 100
//! sends to one inbox).

use super::entry::Entry;
use crate::atomic_file::{self, FILE_MODE};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A `.tmp` or `.failed` file older than this belongs to a dead sender.
const ABANDONED_AFTER: Duration = Duration::from_secs(600);

/// A leftover this old in the spool of a member that left has no sender
/// writing or reading it (a send writes and renames its `.tmp` within
/// milliseconds, and reads its `.failed` as soon as the holder lets go).
const DEPARTED_AFTER: Duration = Duration::from_secs(60);

/// A spool file a holder does not merge: a sender's `.tmp`, a holder's
/// `.batch.tmp`, a refusal's `.failed`.
fn is_leftover(suffix: &str) -> bool {
    matches!(suffix, "tmp" | "failed" | "batch.tmp")
}

/// Removes the leftover `e` when it is older than `than`. An age that cannot
/// be read (the file went meanwhile, an mtime in the future) is not old; a
/// leftover that cannot be removed is tried again the next time.
fn remove_if_older(e: &fs::DirEntry, than: Duration) {
    let doing = "removing an abandoned spool leftover";
    let age = crate::dropped::ignore(e.metadata().and_then(|m| m.modified()), doing)
        .and_then(|t| crate::dropped::ignore(t.elapsed(), doing));
    if age.is_some_and(|age| age > than) {
        crate::dropped::ignore(crate::atomic_file::remove_if_there(&e.path()), doing);
    }
}

/// One inbox's spool directory.
#[derive(Debug, Clone)]
pub(crate) struct Spool {
    dir: PathBuf,
}

/// A waiting send's name in the spool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Key(String);

/// Where a waiting send stands.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fate {
    Pending,
    Claimed,
    Failed(Refusal),
    Delivered,
}

/// Why a holder refused a spooled entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "error", rename_all = "snake_case")]
pub(crate) enum Refusal {
    InboxFull { detail: String },
    DuplicateMsgId,
    NotPersisted,
    Unreadable { problem: String },
}

/// What a holder finds in the spool.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub pending: Vec<Key>,
    /// Claims left by holders that died.
    pub claimed: Vec<Key>,
    /// Their batches: (tag, keys).
    pub batches: Vec<(String, Vec<Key>)>,
}

impl Listing {
    /// Nothing waits, and no holder left anything.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.claimed.is_empty() && self.batches.is_empty()
    }
}

impl Spool {
    pub fn new(dir: PathBuf) -> Spool {
        Spool { dir }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &Key, suffix: &str) -> PathBuf {
        self.dir.join(format!("{}.{suffix}", key.0))
    }

    pub fn pending_path(&self, key: &Key) -> PathBuf {
        self.path(key, "json")
    }

    pub fn claimed_path(&self, key: &Key) -> PathBuf {
        self.path(key, "claimed")
    }

    fn batch_path(&self, tag: &str) -> PathBuf {
        self.dir.join(format!("{tag}.batch"))
    }

    /// Records that the holder with temp-file tag `tag` claims `keys`
    /// (written whole: via a temp name and a rename).
    pub fn write_batch(&self, tag: &str, keys: &[&Key]) -> io::Result<()> {
        let text: String = keys.iter().map(|k| format!("{}\n", k.0)).collect();
        let tmp = self.dir.join(format!("{tag}.batch.tmp"));
        // Never through a link planted under the temp name.
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(text.as_bytes())?;
        fs::rename(&tmp, self.batch_path(tag))
    }

    pub fn remove_batch(&self, tag: &str) -> io::Result<()> {
        remove(&self.batch_path(tag))
    }

    /// Hands `entry` to the next holder: writes `<key>.json` (via `.tmp`).
    pub fn put(&self, entry: &Entry) -> io::Result<Key> {
        atomic_file::ensure_dir(&self.dir)?;
        let ns = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let key = Key(format!("{ns:020}-{}", uuid::Uuid::new_v4().simple()));
        let tmp = self.path(&key, "tmp");
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(FILE_MODE)
            .open(&tmp)?;
        let written = f
            .write_all(&serde_json::to_vec(entry).map_err(io::Error::other)?)
            .and_then(|()| fs::rename(&tmp, self.pending_path(&key)));
        if let Err(e) = written {
            // A temp file left behind is removed by a later listing once
            // abandoned.
            crate::dropped::ignore(
                crate::atomic_file::remove_if_there(&tmp),
                "removing a spool temp file after a failed put",
            );
            return Err(e);
        }
        Ok(key)
    }

    /// Takes a pending entry back. `true`: it was still pending and now
    /// nothing will deliver it; `false`: a holder has claimed it (or settled
    /// it already).
    pub fn withdraw(&self, key: &Key) -> io::Result<bool> {
        match fs::remove_file(self.pending_path(key)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Where `key` stands. Reliable only while the caller holds the inbox's
    /// OS lock (shared or exclusive), when no holder is moving claims. A
    /// failure is collected: its file is removed.
    pub fn fate(&self, key: &Key) -> io::Result<Fate> {
        let exists = |p: PathBuf| p.try_exists();
        if exists(self.pending_path(key))? {
            return Ok(Fate::Pending);
        }
        if exists(self.claimed_path(key))? {
            return Ok(Fate::Claimed);
        }
        let failed = self.path(key, "failed");
        match atomic_file::read_nofollow(&failed) {
            Ok(bytes) => {
                let refusal =
                    serde_json::from_slice(&bytes).unwrap_or_else(|e| Refusal::Unreadable {
                        problem: format!("unreadable refusal ({e})"),
                    });
                remove(&failed)?;
                return Ok(Fate::Failed(refusal));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        if exists(self.path(key, "corrupt"))? {
            return Ok(Fate::Failed(Refusal::Unreadable {
                problem: "its spool file was unreadable".into(),
            }));
        }
        Ok(Fate::Delivered)
    }

    /// Pending files and claims, oldest first; old `.tmp` and `.failed`
    /// files of dead senders are removed on the way.
    pub fn list(&self) -> io::Result<Listing> {
        let mut listing = Listing::default();
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(listing),
            Err(e) => return Err(e),
        };
        for e in rd {
            let e = e?;
            let name = e.file_name();
            let Some((key, suffix)) = name.to_str().and_then(|n| n.split_once('.')) else {
                continue;
            };
            let key = Key(key.to_owned());
            if suffix == "json" {
                listing.pending.push(key);
            } else if suffix == "claimed" {
                listing.claimed.push(key);
            } else if suffix == "batch" {
                let keys = String::from_utf8_lossy(&atomic_file::read_nofollow(&e.path())?)
                    .lines()
                    .map(|k| Key(k.to_owned()))
                    .collect();
                listing.batches.push((key.0, keys));
            } else if is_leftover(suffix) {
                remove_if_older(&e, ABANDONED_AFTER);
            }
        }
        listing.pending.sort();
        listing.claimed.sort();
        Ok(listing)
    }

    /// After its member left the team: removes the leftovers older than
    /// [`DEPARTED_AFTER`] (no holder lists this spool again to remove them),
    /// then the directory when nothing else is in it. A pending send stays
    /// (its inbox outlives the member: a revival's first holder merges it).
    pub fn tidy_after_departure(&self) -> io::Result<()> {
        let rd = match fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for e in rd {
            let e = e?;
            let name = e.file_name();
            if name
                .to_str()
                .and_then(|n| n.split_once('.'))
                .is_some_and(|(_, suffix)| is_leftover(suffix))
            {
                remove_if_older(&e, DEPARTED_AFTER);
            }
        }
        match fs::remove_dir(&self.dir) {
            Ok(()) => Ok(()),
            // Something still waits in it, or it went meanwhile.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::NotFound
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The entry in a claimed file, or why it cannot be read.
    pub fn read(&self, claimed: &Path) -> io::Result<Result<Entry, String>> {
        let bytes = atomic_file::read_nofollow(claimed)?;
        Ok(crate::json_text::parse_lenient::<serde_json::Value>(&bytes)
            .map_err(|e| e.to_string())
            .and_then(|v| Entry::from_value(v).map_err(|e| e.0)))
    }

    /// Records a refusal for `key`'s sender, then drops the claim.
    pub fn refuse(&self, key: &Key, claimed: &Path, why: &Refusal) -> io::Result<()> {
        let bytes = serde_json::to_vec(why).map_err(io::Error::other)?;
        atomic_file::write_atomic(&self.path(key, "failed"), &bytes)?;
        remove(claimed)
    }

    /// Sets an unreadable claimed file aside as `<key>.corrupt`.
    pub fn set_aside(&self, key: &Key, claimed: &Path) -> io::Result<()> {
        fs::rename(claimed, self.path(key, "corrupt"))
    }
}

/// Removes a file that may already be gone.
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(path: &Path, ago: Duration) {
        fs::write(path, b"x").unwrap();
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - ago).unwrap();
    }

    #[test]
    fn a_departed_members_spool_loses_its_old_leftovers_and_keeps_a_pending_send() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::new(tmp.path().join("gus"));
        fs::create_dir(spool.dir()).unwrap();
        let old = Duration::from_secs(120);
        for name in ["a.tmp", "b.failed", "c.batch.tmp"] {
            aged(&spool.dir().join(name), old);
        }
        aged(&spool.dir().join("young.tmp"), Duration::ZERO);
        aged(&spool.dir().join("d.json"), old);
        spool.tidy_after_departure().unwrap();
        let mut left: Vec<String> = fs::read_dir(spool.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["d.json", "young.tmp"],
            "a send being written or still owed stays"
        );
    }

    #[test]
    fn a_departed_members_spool_with_only_leftovers_goes_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let spool = Spool::new(tmp.path().join("gus"));
        fs::create_dir(spool.dir()).unwrap();
        aged(&spool.dir().join("a.tmp"), Duration::from_secs(120));
        spool.tidy_after_departure().unwrap();
        assert!(!spool.dir().exists());
        // A member that never had a spool: nothing to do.
        spool.tidy_after_departure().unwrap();
    }
}
