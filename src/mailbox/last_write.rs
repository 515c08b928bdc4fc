//! The inbox as swarm last wrote it: what a send needs to append to it in
//! place without reading it (`delivery.rs`).
//!
//! Every swarm write of an inbox by a send (a rewrite or an append) ends,
//! still under the inbox lock, by recording in the member's runtime files
//! (`Root::runtime_file(team, member, "inbox-last")`, a cache: written
//! unsynced, rebuilt by the next rewrite, removed when the member leaves) the file's stamp as `fstat` gives it on the descriptor just
//! written (device, inode, size, mtime and ctime in nanoseconds), its last
//! bytes, the [`Counts`] the caps look at, and a hash of every `msg_id` it
//! holds.
//!
//! **What proves nobody else wrote the file since:** the same stamp and the
//! same last bytes, read under the inbox lock. Claude Code writes an inbox
//! by renaming a temp file over it (a new inode); a swarm consumption or
//! repair does the same; Claude Code 2.1.88 wrote in place, which changes
//! the size, or the mtime and ctime, and the last bytes. Any of those
//! makes the record stale and the send reads the whole file and rewrites
//! it, recording afresh. A record that cannot be read is stale too.

use super::inbox::{Counts, Stored};
use crate::atomic_file;
use crate::tasks::cache::Stamp;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The first line of a record, with its format's version.
const MAGIC: &str = "swarm-inbox-last 1";
/// How many of the file's last bytes a record keeps.
const TAIL: usize = 64;

/// What swarm last wrote to one inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LastWrite {
    stamp: [i64; 7],
    tail: Vec<u8>,
    pub counts: Counts,
    /// [`id_hash`] of every `msg_id` in the file, sorted.
    ids: Vec<u64>,
}

/// A stable hash of a `msg_id` (FNV-1a, the same in every swarm version:
/// the record outlives the process that wrote it).
fn id_hash(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl LastWrite {
    /// The record of `entries`, just written to `file` (a descriptor of
    /// the inode now at the inbox path) as `rendered`.
    pub(crate) fn of(
        file: &File,
        entries: &[Stored],
        rendered: &[u8],
    ) -> std::io::Result<LastWrite> {
        let mut ids: Vec<u64> = entries
            .iter()
            .filter_map(Stored::msg_id)
            .map(id_hash)
            .collect();
        ids.sort_unstable();
        let tail = rendered[rendered.len().saturating_sub(TAIL)..].to_vec();
        LastWrite::stamped(file, tail, Counts::of(entries), ids)
    }

    fn stamped(
        file: &File,
        tail: Vec<u8>,
        counts: Counts,
        ids: Vec<u64>,
    ) -> std::io::Result<LastWrite> {
        Ok(LastWrite {
            stamp: Stamp::of(&file.metadata()?).words(),
            tail,
            counts,
            ids,
        })
    }

    /// The record at `record`, if it still describes the inbox open as
    /// `file` (see the module's note); `None` otherwise.
    pub(crate) fn load(record: &Path, file: &File) -> Option<LastWrite> {
        let bytes = match atomic_file::read_optional(record) {
            Ok(Some(b)) => b,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(record = %record.display(), error = %e, "inbox record unreadable; the inbox is read whole");
                return None;
            }
        };
        let last = LastWrite::decode(&bytes)?;
        let meta = file.metadata().ok()?;
        if Stamp::of(&meta).words() != last.stamp {
            return None;
        }
        let mut tail = vec![0; last.tail.len()];
        let from = meta.len().checked_sub(tail.len() as u64)?;
        file.read_exact_at(&mut tail, from).ok()?;
        (tail == last.tail).then_some(last)
    }

    /// Whether an entry with this `msg_id` may be in the file (a hash
    /// collision says yes: the caller then reads the file, which decides).
    pub(crate) fn may_hold(&self, id: &str) -> bool {
        self.ids.binary_search(&id_hash(id)).is_ok()
    }

    /// The record once `added` are in `file`, written over its closing
    /// `\n]` as `bytes` (`inbox::appended`).
    pub(crate) fn appended(
        mut self,
        file: &File,
        added: &[Stored],
        bytes: &[u8],
    ) -> std::io::Result<LastWrite> {
        let mut tail = self.tail[..self.tail.len().saturating_sub(2)].to_vec();
        tail.extend_from_slice(bytes);
        let tail = tail[tail.len().saturating_sub(TAIL)..].to_vec();
        for s in added {
            self.counts.add(s);
            if let Some(id) = s.msg_id() {
                let h = id_hash(id);
                let at = self.ids.partition_point(|x| *x < h);
                self.ids.insert(at, h);
            }
        }
        LastWrite::stamped(file, tail, self.counts, self.ids)
    }

    /// Writes the record to `record` (unsynced: it is a cache, and a record
    /// that was lost or torn reads as stale).
    pub(crate) fn save(&self, record: &Path) {
        let doing = "recording the inbox as written (the next send reads it whole)";
        if let Some(dir) = record.parent()
            && crate::dropped::ignore(atomic_file::ensure_dir(dir), doing).is_none()
        {
            return;
        }
        crate::dropped::ignore(atomic_file::write_cache(record, &self.encode()), doing);
    }

    fn encode(&self) -> Vec<u8> {
        let c = &self.counts;
        let s = &self.stamp;
        let mut out = format!(
            "{MAGIC}\n{} {} {} {} {} {} {}\n{} {} {} {}\n{}\n",
            s[0],
            s[1],
            s[2],
            s[3],
            s[4],
            s[5],
            s[6],
            c.entries,
            c.read,
            c.maybe_unread_frames,
            c.bytes,
            hex(&self.tail),
        )
        .into_bytes();
        out.reserve(self.ids.len() * 8);
        for id in &self.ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out
    }

    fn decode(bytes: &[u8]) -> Option<LastWrite> {
        let mut lines = bytes.splitn(5, |b| *b == b'\n');
        if lines.next()? != MAGIC.as_bytes() {
            return None;
        }
        let words = |line: &[u8]| -> Option<Vec<i64>> {
            std::str::from_utf8(line)
                .ok()?
                .split(' ')
                .map(|w| w.parse().ok())
                .collect()
        };
        let stamp: [i64; 7] = words(lines.next()?)?.try_into().ok()?;
        let c = words(lines.next()?)?;
        let [entries, read, maybe_unread_frames, bytes] = <[i64; 4]>::try_from(c).ok()?;
        let tail = unhex(lines.next()?)?;
        let raw = lines.next()?;
        if !raw.len().is_multiple_of(8) {
            return None;
        }
        let ids = raw
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("chunks of 8")))
            .collect();
        let counts = Counts {
            entries: u64::try_from(entries).ok()?,
            read: u64::try_from(read).ok()?,
            maybe_unread_frames: u64::try_from(maybe_unread_frames).ok()?,
            bytes: u64::try_from(bytes).ok()?,
        };
        Some(LastWrite {
            stamp,
            tail,
            counts,
            ids,
        })
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &[u8]) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks_exact(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mailbox::Entry;

    #[test]
    fn a_record_reads_back_and_goes_stale_when_the_file_changes() {
        let t = tempfile::tempdir().unwrap();
        let inbox = t.path().join("bob.json");
        let entries = vec![Stored::new(Entry::new("a", "x".into(), None, None))];
        let rendered = super::super::inbox::render(&entries);
        std::fs::write(&inbox, &rendered).unwrap();
        let f = File::open(&inbox).unwrap();
        let last = LastWrite::of(&f, &entries, &rendered).unwrap();
        let record = t.path().join("runtime/bob.inbox-last");
        last.save(&record);
        assert_eq!(LastWrite::load(&record, &f), Some(last.clone()));
        assert!(last.may_hold(entries[0].msg_id().unwrap()));
        assert!(!last.may_hold("another"));
        // Replaced by rename, as Claude Code writes: another inode.
        let tmp = t.path().join("tmp");
        std::fs::write(&tmp, super::super::inbox::render(&entries)).unwrap();
        std::fs::rename(&tmp, &inbox).unwrap();
        let f = File::open(&inbox).unwrap();
        assert_eq!(LastWrite::load(&record, &f), None);
    }
}
