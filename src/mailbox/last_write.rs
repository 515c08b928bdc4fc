//! The inbox as swarm last wrote it: what a send needs to append to it in
//! place without reading it (`delivery.rs`).
//!
//! Every swarm write of an inbox by a send (a rewrite or an append) or by
//! a consumption (`Mailbox::consume`) ends, still under the inbox lock, by
//! recording in the member's runtime files
//! (`Root::runtime_file(team, member, "inbox-last")`, a cache: written
//! in place and unsynced, rebuilt by the next write, removed when the
//! member leaves) the file's stamp as `fstat` gives it on the descriptor
//! just written (device, inode, size, mtime and ctime in nanoseconds), its
//! last bytes, the [`Counts`] the caps look at, and a hash of every
//! `msg_id` it holds. A consumption's record is what lets the next send to
//! a runtime, which consumes every message it is sent, append in place.
//!
//! **What proves nobody else wrote the file since:** the same stamp and the
//! same last bytes, read under the inbox lock. Claude Code writes an inbox
//! by renaming a temp file over it (a new inode); a swarm repair does the
//! same (and records nothing); Claude Code 2.1.88 wrote in place, which
//! changes the size, or the mtime and ctime, and the last bytes. Any of
//! those makes the record stale and the send reads the whole file and
//! rewrites it, recording afresh. A record that cannot be read, or whose
//! length and hash do not match (torn, or mixed with the one before), is
//! stale too.

use super::inbox::{Counts, Stored};
use crate::atomic_file;
use crate::tasks::cache::Stamp;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// How a record begins, with its format's version; then, on the same
/// line, the length and [`fnv`] hash of the rest (a record is written in
/// place, and one torn or mixed with an older one reads as stale).
const MAGIC: &str = "swarm-inbox-last 2";
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

/// A stable hash of a `msg_id` (the same in every swarm version: the
/// record outlives the process that wrote it).
fn id_hash(id: &str) -> u64 {
    fnv(id.as_bytes())
}

/// FNV-1a.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// What a record needs of the entries of a file laid out as `inbox::render`
/// lays it out, gathered one entry at a time as they are written (a
/// consumption's streaming rewrite holds no list of them).
#[derive(Debug)]
pub(crate) struct Tally {
    counts: Counts,
    ids: Vec<u64>,
    /// The last bytes written so far, the array not yet closed.
    tail: Vec<u8>,
}

impl Tally {
    /// The tally of no entries (the file `[]`).
    pub(crate) fn new() -> Tally {
        Tally {
            counts: Counts::of(&[]),
            ids: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// `s`, written after the entries tallied so far.
    pub(crate) fn add(&mut self, s: &Stored) {
        self.tail.extend_from_slice(if self.counts.entries == 0 {
            b"[\n  "
        } else {
            b",\n  "
        });
        let text = s.text.as_bytes();
        self.tail
            .extend_from_slice(&text[text.len().saturating_sub(TAIL)..]);
        self.tail.drain(..self.tail.len().saturating_sub(TAIL));
        self.counts.add(s);
        if let Some(id) = s.msg_id() {
            self.ids.push(id_hash(id));
        }
    }

    /// The record of `file` (a descriptor of the inode now at the inbox
    /// path), just written with the tallied entries and nothing else.
    pub(crate) fn written(mut self, file: &File) -> std::io::Result<LastWrite> {
        let mut tail = if self.counts.entries == 0 {
            b"[]".to_vec()
        } else {
            self.tail.extend_from_slice(b"\n]");
            self.tail
        };
        tail.drain(..tail.len().saturating_sub(TAIL));
        self.ids.sort_unstable();
        LastWrite::stamped(file, tail, self.counts, self.ids)
    }
}

impl LastWrite {
    /// The record of `entries`, just written to `file` (a descriptor of
    /// the inode now at the inbox path) as `rendered`.
    pub(crate) fn of(
        file: &File,
        entries: &[Stored],
        rendered: &[u8],
    ) -> std::io::Result<LastWrite> {
        let mut tally = Tally::new();
        entries.iter().for_each(|s| tally.add(s));
        let last = tally.written(file)?;
        debug_assert!(rendered.ends_with(&last.tail), "the tail as rendered");
        Ok(last)
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

    /// Writes the record to `record`, in place and unsynced: it is a cache,
    /// and a record that was lost, torn or mixed with the one before reads
    /// as stale (its header's length and hash). In place, because it is
    /// written after every send and consumption: a temp file and a rename
    /// cost each a directory change, and the rename over the old record
    /// about as much as the inbox's own write.
    pub(crate) fn save(&self, record: &Path) {
        let doing = "recording the inbox as written (the next send reads it whole)";
        if let Some(dir) = record.parent()
            && crate::dropped::ignore(atomic_file::ensure_dir(dir), doing).is_none()
        {
            return;
        }
        crate::dropped::ignore(
            atomic_file::write_cache_in_place(record, &self.encode()),
            doing,
        );
    }

    fn encode(&self) -> Vec<u8> {
        let c = &self.counts;
        let s = &self.stamp;
        let mut body = format!(
            "{} {} {} {} {} {} {}\n{} {} {} {}\n{}\n",
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
        body.reserve(self.ids.len() * 8);
        for id in &self.ids {
            body.extend_from_slice(&id.to_le_bytes());
        }
        let mut out = format!("{MAGIC} {} {:016x}\n", body.len(), fnv(&body)).into_bytes();
        out.extend_from_slice(&body);
        out
    }

    fn decode(bytes: &[u8]) -> Option<LastWrite> {
        let end = bytes.iter().position(|b| *b == b'\n')?;
        let head = std::str::from_utf8(&bytes[..end]).ok()?;
        let (len, hash) = head
            .strip_prefix(MAGIC)?
            .strip_prefix(' ')?
            .split_once(' ')?;
        let body = bytes[end + 1..].get(..len.parse::<usize>().ok()?)?;
        if u64::from_str_radix(hash, 16).ok()? != fnv(body) {
            return None;
        }
        let mut lines = body.splitn(4, |b| *b == b'\n');
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

    #[test]
    fn a_record_torn_or_mixed_with_the_one_before_reads_as_stale() {
        let t = tempfile::tempdir().unwrap();
        let inbox = t.path().join("bob.json");
        let record = t.path().join("runtime/bob.inbox-last");
        let many: Vec<Stored> = (0..50)
            .map(|i| Stored::new(Entry::new("a", format!("m{i}"), None, None)))
            .collect();
        let write = |entries: &[Stored]| {
            let rendered = super::super::inbox::render(entries);
            std::fs::write(&inbox, &rendered).unwrap();
            let f = File::open(&inbox).unwrap();
            let last = LastWrite::of(&f, entries, &rendered).unwrap();
            last.save(&record);
            (f, last)
        };
        let (_, long) = write(&many);
        let long_bytes = std::fs::read(&record).unwrap();
        // A shorter record written over a longer one, in place: whole.
        let (f, short) = write(&many[..2]);
        let short_bytes = std::fs::read(&record).unwrap();
        assert!(short_bytes.len() < long_bytes.len());
        assert_eq!(LastWrite::load(&record, &f), Some(short.clone()));
        assert_ne!(short, long);
        // Cut short after its header, or mixed with the longer one before
        // it (a write torn by a crash, the file not yet cut to length),
        // or with a byte changed: stale.
        let mixed = [
            &short_bytes[..short_bytes.len() / 2],
            &long_bytes[short_bytes.len() / 2..],
        ]
        .concat();
        let mut flipped = short_bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        for (what, bytes) in [
            ("cut short", short_bytes[..short_bytes.len() - 1].to_vec()),
            ("mixed", mixed),
            ("a byte changed", flipped),
        ] {
            std::fs::write(&record, &bytes).unwrap();
            assert_eq!(LastWrite::load(&record, &f), None, "{what}");
        }
        // The whole short record followed by the old bytes still reads.
        let trailing = [&short_bytes[..], &long_bytes[short_bytes.len()..]].concat();
        std::fs::write(&record, trailing).unwrap();
        assert_eq!(LastWrite::load(&record, &f), Some(short));
    }
}
