//! A per-store cache of parsed task files, keyed by each file's stamp
//! (device, inode, size, modification and change times), so a claim without
//! id that looks at a candidate again (racing claimants walk the same list)
//! pays one `stat` for an unchanged file. The stamp is also what the board
//! index (`tasks::index`) keeps per task.
//!
//! The cache only ever *suggests*: every claim decision is made on a fresh
//! read under the task's lock, and a claim that finds nothing through the
//! cache looks again without it before answering "nothing claimable". A
//! stale entry can therefore cost a wasted lock, never a wrong claim.

use super::task::Task;
use std::collections::HashMap;
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex};

/// What identifies one version of a file. swarm replaces files by rename
/// (new inode); Claude Code writes in place (new mtime/ctime, usually a new
/// size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    pub fn of(meta: &Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The same stamp from a raw `stat` (as [`Stamp::of`] reads it from
    /// the `Metadata` of the same file).
    pub fn of_stat(st: &libc::stat) -> Stamp {
        Stamp {
            dev: st.st_dev,
            ino: st.st_ino,
            len: st.st_size as u64,
            mtime: (st.st_mtime, st.st_mtime_nsec),
            ctime: (st.st_ctime, st.st_ctime_nsec),
        }
    }

    /// When the file last changed (seconds, nanoseconds).
    pub fn changed(&self) -> (i64, i64) {
        self.ctime
    }

    /// The stamp as seven words, for the board index.
    pub fn words(&self) -> [i64; 7] {
        [
            self.dev as i64,
            self.ino as i64,
            self.len as i64,
            self.mtime.0,
            self.mtime.1,
            self.ctime.0,
            self.ctime.1,
        ]
    }

    /// The inverse of [`Stamp::words`].
    pub fn from_words(w: [i64; 7]) -> Stamp {
        Stamp {
            dev: w[0] as u64,
            ino: w[1] as u64,
            len: w[2] as u64,
            mtime: (w[3], w[4]),
            ctime: (w[5], w[6]),
        }
    }
}

/// Shared by clones of one store (threads of one process).
#[derive(Debug, Clone, Default)]
pub struct ReadCache {
    entries: Arc<Mutex<HashMap<u64, (Stamp, Task)>>>,
}

impl ReadCache {
    /// The task parsed from exactly this version of file `id`, if cached.
    pub fn get(&self, id: u64, stamp: Stamp) -> Option<Task> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .get(&id)
            .filter(|(s, _)| *s == stamp)
            .map(|(_, t)| t.clone())
    }

    /// Remembers `task` as parsed from the version `stamp` (taken *before*
    /// the read, so a write racing the read leaves a stamp that no longer
    /// matches, and the next look re-reads).
    pub fn put(&self, id: u64, stamp: Stamp, task: Task) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.insert(id, (stamp, task));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_stat_and_metadata_give_the_same_stamp() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("1.json");
        std::fs::write(&f, "abc").unwrap();
        let path = std::ffi::CString::new(f.as_os_str().as_bytes()).unwrap();
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a NUL-terminated path and a buffer lstat fills.
        assert_eq!(unsafe { libc::lstat(path.as_ptr(), st.as_mut_ptr()) }, 0);
        // SAFETY: lstat succeeded.
        let raw = Stamp::of_stat(unsafe { st.assume_init_ref() });
        assert_eq!(raw, Stamp::of(&std::fs::symlink_metadata(&f).unwrap()));
    }

    #[test]
    fn an_entry_is_returned_only_for_the_same_file_version() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("1.json");
        std::fs::write(&f, "a").unwrap();
        let before = Stamp::of(&std::fs::metadata(&f).unwrap());
        let cache = ReadCache::default();
        cache.put(1, before, Task::new("1", "s"));
        assert_eq!(cache.get(1, before).map(|t| t.subject), Some("s".into()));
        crate::atomic_file::write_atomic(&f, b"a").unwrap();
        let after = Stamp::of(&std::fs::metadata(&f).unwrap());
        assert_eq!(cache.get(1, after), None, "a rename is a new version");
    }
}
