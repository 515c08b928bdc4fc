//! Removing whole directory trees (a team's state when it is deleted),
//! many entries at a time.
//!
//! On the ext4 this project runs on (mounted `discard`), unlinking a file
//! that holds blocks (every file swarm wrote with `write_atomic` and
//! fsynced) waits for the journal: 3–4 ms each, and a team of 8 holds
//! some 70 such files and directories, so `std::fs::remove_dir_all`, one
//! entry after another, took 130 ms of `swarm down` (issue 25, item 5).
//! Those waits overlap: the files are unlinked by a few threads at once,
//! then the directories, deepest first, a level at a time. Whatever the
//! parallel pass leaves (a file created meanwhile) is removed by
//! `remove_dir_all` after it, so the end state and the errors are
//! `remove_dir_all`'s. Symbolic links are removed, never followed.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many entries are unlinked at once.
const REMOVING_AT_ONCE: usize = 16;

/// Removes each tree of `roots` (a root that does not exist is done).
/// One result per root, in order.
pub fn remove_trees(roots: &[PathBuf]) -> Vec<io::Result<()>> {
    let mut files = Vec::new();
    let mut dirs: Vec<(usize, PathBuf)> = Vec::new();
    for root in roots {
        collect(root, 0, &mut files, &mut dirs);
    }
    // Failures here are left to `remove_dir_all` below, which meets the
    // same entry and reports it with its own error.
    in_parallel(&files, |f| drop(std::fs::remove_file(f)));
    dirs.sort_by_key(|d| std::cmp::Reverse(d.0));
    for level in dirs.chunk_by(|a, b| a.0 == b.0) {
        in_parallel(level, |(_, d)| drop(std::fs::remove_dir(d)));
    }
    roots
        .iter()
        .map(|root| match std::fs::remove_dir_all(root) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        })
        .collect()
}

/// Every file (and symbolic link) below `dir`, and `dir` with every
/// directory below it at its depth. What cannot be read is skipped.
fn collect(dir: &Path, depth: usize, files: &mut Vec<PathBuf>, dirs: &mut Vec<(usize, PathBuf)>) {
    // A root that is a link is `remove_dir_all`'s to refuse or remove.
    let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    let Ok(entries) = std::fs::read_dir(dir)
        .map_err(drop)
        .and_then(|e| if is_dir { Ok(e) } else { Err(()) })
    else {
        return;
    };
    dirs.push((depth, dir.to_path_buf()));
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect(&path, depth + 1, files, dirs),
            _ => files.push(path),
        }
    }
}

/// Runs `f` on every item, [`REMOVING_AT_ONCE`] threads taking the next
/// item in turn (on this thread alone when there are only a few).
fn in_parallel<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let next = AtomicUsize::new(0);
    let work = || {
        while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
            f(item);
        }
    };
    let threads = items.len().min(REMOVING_AT_ONCE);
    if threads <= 1 {
        return work();
    }
    std::thread::scope(|s| {
        for _ in 1..threads {
            // A thread that cannot start leaves its share to the others.
            if std::thread::Builder::new().spawn_scoped(s, work).is_err() {
                break;
            }
        }
        work();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(root: &Path) {
        for d in ["a/b/c", "a/d", "e"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for (i, f) in ["a/1", "a/b/2", "a/b/c/3", "a/d/4", "e/5", "6"]
            .iter()
            .enumerate()
        {
            std::fs::write(root.join(f), vec![b'x'; 100 * (i + 1)]).unwrap();
        }
        std::os::unix::fs::symlink(root.join("a"), root.join("e/link")).unwrap();
    }

    #[test]
    fn every_tree_goes_and_nothing_beside_them() {
        let tmp = tempfile::tempdir().unwrap();
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        tree(&one);
        tree(&two);
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("kept"), b"kept").unwrap();
        std::os::unix::fs::symlink(&outside, one.join("a/to-outside")).unwrap();
        let missing = tmp.path().join("missing");
        let done = remove_trees(&[one.clone(), missing, two.clone()]);
        assert!(done.iter().all(Result::is_ok), "{done:?}");
        assert!(!one.exists() && !two.exists());
        // A link is removed, never followed.
        assert_eq!(std::fs::read(outside.join("kept")).unwrap(), b"kept");
    }

    #[test]
    fn a_root_that_is_a_link_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        tree(&target);
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let _ = remove_trees(std::slice::from_ref(&link));
        assert!(target.join("a/b/c/3").exists());
    }

    #[test]
    fn a_root_that_is_a_file_is_remove_dir_all_s_error() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let done = remove_trees(std::slice::from_ref(&file));
        assert!(done[0].is_err(), "{done:?}");
        assert!(file.exists());
    }
}
