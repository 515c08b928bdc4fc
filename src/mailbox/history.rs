//! The per-member history of consumed messages (`Root::history`): where an
//! entry goes when it leaves an inbox, by consumption or compaction, so
//! nothing vanishes silently.
//!
//! Same file format as an inbox, oldest first; readers get the newest
//! [`MAX_ENTRIES`] entries within [`MAX_BYTES`]. It is only written while
//! the member's *inbox* lock is held (consume and append both hold it), so
//! it needs no lock of its own; it is written, and made durable, before the
//! inbox is rewritten, and merged by identity, so a crash between the two
//! writes can never duplicate an entry or lose one.
//!
//! A history this process wrote and nobody changed since is appended to in
//! place (its closing `]` overwritten by the new entries and a new `]`,
//! then `fdatasync`): the lead consumes one message at a time, and
//! rewriting the whole file (1,000 entries) through a temp file, its fsync,
//! a rename and the directory's fsync was most of a consumption. The file
//! may then hold up to [`SLACK_ENTRIES`] entries (and [`SLACK_BYTES`])
//! past the bounds before a rewrite trims it. A crash in the middle of an
//! append leaves a torn tail; a reader keeps every whole entry before it
//! ([`inbox::torn_repaired`]): those were durable before, and the torn ones are still
//! in the inbox, which is rewritten only after the append is durable.

use super::MailboxError;
use super::entry::{Entry, EntryKeyRef};
use super::inbox::{self, Parsed, Stored};
use crate::atomic_file;
use crate::tasks::cache::Stamp;
use std::collections::HashSet;
use std::path::Path;

/// Entries kept per member.
pub const MAX_ENTRIES: usize = 1000;
/// Bytes kept per member.
pub const MAX_BYTES: usize = 1024 * 1024;
/// Entries a history appended to may hold past [`MAX_ENTRIES`] before it
/// is rewritten to its bounds (one rewrite per this many consumptions).
pub const SLACK_ENTRIES: usize = 256;
/// Bytes a history appended to may hold past [`MAX_BYTES`].
pub const SLACK_BYTES: usize = MAX_BYTES / 4;

/// Reads a history file, oldest first, within its bounds. A torn append
/// yields the whole entries before it; another corrupt file what could be
/// salvaged (it is quarantined by the next write).
pub(crate) fn read(path: &Path) -> Result<Vec<Entry>, MailboxError> {
    let Some(bytes) = atomic_file::read_optional(path).map_err(|e| MailboxError::io(path, e))?
    else {
        return Ok(Vec::new());
    };
    let mut kept = match inbox::parse(&bytes) {
        Parsed::Clean(v) => v,
        Parsed::Corrupt { salvaged, problem } => match inbox::torn_repaired(&bytes) {
            Some(v) => v,
            None => {
                tracing::warn!(history = %path.display(), %problem, "history file is corrupt");
                salvaged
            }
        },
    };
    bound(&mut kept);
    Ok(kept.into_iter().map(Stored::into_entry).collect())
}

/// Keeps the newest [`MAX_ENTRIES`] of `kept`, within [`MAX_BYTES`] (the
/// newest always, however large); returns how many went.
fn bound(kept: &mut Vec<Stored>) -> usize {
    let mut cut = kept.len().saturating_sub(MAX_ENTRIES);
    let mut size = inbox::rendered_len(&kept[cut..]);
    while size > MAX_BYTES && cut + 1 < kept.len() {
        size -= kept[cut].text.len() + 4;
        cut += 1;
    }
    kept.drain(..cut);
    cut
}

/// The newest entries of a long run of consumed ones, as many as the
/// history can keep (at most [`MAX_ENTRIES`], and [`MAX_BYTES`] plus one
/// entry): what [`record`] keeps of the run is in it. Older ones are let go
/// as newer ones come, so a consumer of a huge inbox holds a bounded tail,
/// not every entry.
#[derive(Debug, Default)]
pub(crate) struct Tail {
    entries: std::collections::VecDeque<Stored>,
    bytes: usize,
}

impl Tail {
    pub(crate) fn push(&mut self, s: Stored) {
        self.bytes += s.text.len() + 4;
        self.entries.push_back(s);
        while self.entries.len() > MAX_ENTRIES
            || self
                .entries
                .front()
                .is_some_and(|f| self.bytes - (f.text.len() + 4) > MAX_BYTES)
        {
            let gone = self.entries.pop_front().expect("not empty");
            self.bytes -= gone.text.len() + 4;
        }
    }

    /// The kept entries, oldest first.
    pub(crate) fn entries(&mut self) -> &[Stored] {
        self.entries.make_contiguous()
    }
}

/// Adds `consumed` (oldest first) to the history at `path`, skipping any
/// already there, then trims it to its bounds. The caller holds the inbox
/// lock of the member the history belongs to.
pub(crate) fn record(path: &Path, consumed: &[Stored]) -> Result<(), MailboxError> {
    if consumed.is_empty() {
        return Ok(());
    }
    let io = |e| MailboxError::io(path, e);
    // Only a file as this process wrote it is appended to: its bytes are
    // known to be `render(kept)`.
    let (mut kept, ours) = match take_written(path) {
        Some(kept) => (kept, true),
        None => (load(path)?, false),
    };
    let fresh: Vec<Stored> = not_in(&kept, consumed).into_iter().cloned().collect();
    if ours && fresh.is_empty() {
        keep_written(path, kept);
        return Ok(());
    }
    if ours && appendable(&kept, &fresh) {
        let meta = append(path, inbox::rendered_len(&kept), &fresh).map_err(io)?;
        kept.extend(fresh);
        remember(path, Stamp::of(&meta), kept);
        return Ok(());
    }
    kept.extend(fresh);
    let cut = bound(&mut kept);
    if cut > 0 {
        tracing::debug!(history = %path.display(), trimmed = cut, "history trimmed to its byte bound");
    }
    if let Some(dir) = path.parent() {
        atomic_file::ensure_dir(dir).map_err(|e| MailboxError::io(dir, e))?;
    }
    atomic_file::write_atomic(path, &inbox::render(&kept)).map_err(io)?;
    keep_written(path, kept);
    Ok(())
}

/// Whether `fresh` may be appended to a history holding `kept` (as this
/// process wrote it): not to an empty one (`[]`), and within the slack.
fn appendable(kept: &[Stored], fresh: &[Stored]) -> bool {
    !kept.is_empty()
        && kept.len() + fresh.len() <= MAX_ENTRIES + SLACK_ENTRIES
        && inbox::rendered_len(kept) + inbox::rendered_len(fresh) <= MAX_BYTES + SLACK_BYTES
}

/// Appends `fresh` to the history at `path`, which holds `len` bytes as
/// [`inbox::render`] laid them out (ending in `\n]`), durably; the file's
/// metadata after the write. The result is `render` of all the entries.
fn append(path: &Path, len: usize, fresh: &[Stored]) -> std::io::Result<std::fs::Metadata> {
    let f = atomic_file::open_for_write_in_place(path)?;
    inbox::append_at(&f, len as u64, &inbox::appended(fresh))?;
    f.metadata()
}

/// The history at `path` as the file holds it; a torn append keeps its
/// whole entries; another corrupt file is copied aside and what could be
/// salvaged kept.
fn load(path: &Path) -> Result<Vec<Stored>, MailboxError> {
    #[cfg(test)]
    LOADS.with(|n| n.set(n.get() + 1));
    let io = |e| MailboxError::io(path, e);
    Ok(match atomic_file::read_optional(path).map_err(io)? {
        None => Vec::new(),
        Some(bytes) => match inbox::parse(&bytes) {
            Parsed::Clean(v) => v,
            Parsed::Corrupt { .. } if let Some(v) = inbox::torn_repaired(&bytes) => {
                tracing::warn!(history = %path.display(), "history's last append was torn; its whole entries kept");
                v
            }
            Parsed::Corrupt { salvaged, problem } => {
                let copy = atomic_file::quarantine(path).map_err(io)?;
                tracing::warn!(
                    history = %path.display(),
                    copy = %copy.display(),
                    %problem,
                    "history file was corrupt; copied aside and rewritten"
                );
                salvaged
            }
        },
    })
}

/// The entries of `consumed` that `kept` does not hold yet (by `msg_id`,
/// or by identity), each once. Identities are compared borrowed; a few
/// entries (a message or two consumed at a time) are looked for one by
/// one rather than by hashing the whole history.
fn not_in<'a>(kept: &[Stored], consumed: &'a [Stored]) -> Vec<&'a Stored> {
    let same = |a: &Stored, b: &Stored| {
        a.msg_id().is_some_and(|id| b.msg_id() == Some(id))
            || a.entry().key_ref() == b.entry().key_ref()
    };
    if consumed.len() <= 8 {
        let mut fresh: Vec<&Stored> = Vec::new();
        for s in consumed {
            if !kept.iter().chain(fresh.iter().copied()).any(|k| same(k, s)) {
                fresh.push(s);
            }
        }
        return fresh;
    }
    let mut ids: HashSet<&str> = kept.iter().filter_map(Stored::msg_id).collect();
    let mut keys: HashSet<EntryKeyRef<'_>> = kept.iter().map(|s| s.entry().key_ref()).collect();
    consumed
        .iter()
        .filter(|s| {
            let seen = s.msg_id().is_some_and(|id| !ids.insert(id));
            !seen && keys.insert(s.entry().key_ref())
        })
        .collect()
}

/// The histories this process wrote last, each with the stamp of the file
/// it wrote. A consumer that takes one message at a time (the lead)
/// records into the same history again and again: when the file is still
/// the one written here, its entries are taken from memory instead of
/// being read and parsed again (4 ms for a full history of
/// [`MAX_ENTRIES`]). Any other write to the file (another process's, under
/// the same inbox lock) gives it a new inode, so a stamp that differs means
/// reading the file. At most [`KEPT_HISTORIES`] are kept.
struct Written {
    stamp: Stamp,
    kept: Vec<Stored>,
}

/// Histories kept in memory. A consumer records into its own again and
/// again; the processes that touch several (a sender compacting recipients'
/// inboxes, the lead writing first prompts at spawn) touch each once.
const KEPT_HISTORIES: usize = 8;

type WrittenList = Vec<(std::path::PathBuf, Written)>;

#[cfg(not(test))]
static LAST_WRITTEN: std::sync::Mutex<WrittenList> = std::sync::Mutex::new(Vec::new());

// One list per test thread: tests run side by side in one process, and a
// dozen others writing histories evicted a test's own entry, so its next
// record read the file and rewrote it (a rewrite counted twice in CI).
#[cfg(test)]
thread_local! {
    static LAST_WRITTEN: std::cell::RefCell<WrittenList> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
thread_local! {
    /// Histories this thread read from their files.
    static LOADS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` on the list of histories this process wrote last.
fn with_written<R>(f: impl FnOnce(&mut WrittenList) -> R) -> R {
    #[cfg(not(test))]
    return f(&mut LAST_WRITTEN.lock().unwrap_or_else(|e| e.into_inner()));
    #[cfg(test)]
    return LAST_WRITTEN.with(|all| f(&mut all.borrow_mut()));
}

/// The entries of the history at `path` if it is still as this process
/// wrote it. They leave the cache: a failed write must not leave it
/// claiming what is not on disk.
fn take_written(path: &Path) -> Option<Vec<Stored>> {
    let written = with_written(|all| {
        let i = all.iter().position(|(p, _)| p == path)?;
        Some(all.swap_remove(i).1)
    })?;
    let now = std::fs::symlink_metadata(path).ok().map(|m| Stamp::of(&m));
    (now == Some(written.stamp)).then_some(written.kept)
}

/// Remembers `kept` as what was just written to `path`.
fn keep_written(path: &Path, kept: Vec<Stored>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    remember(path, Stamp::of(&meta), kept);
}

/// Remembers `kept` as the history at `path`, whose file has `stamp`.
fn remember(path: &Path, stamp: Stamp, kept: Vec<Stored>) {
    with_written(|all| {
        all.retain(|(p, _)| p != path);
        if all.len() >= KEPT_HISTORIES {
            all.remove(0);
        }
        all.push((path.to_path_buf(), Written { stamp, kept }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(text: &str) -> Stored {
        Stored::new(Entry::new("bob", text.to_owned(), None, None))
    }

    #[test]
    fn recording_twice_does_not_duplicate() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("history/bob.json");
        let (a, b) = (stored("a"), stored("b"));
        record(&path, std::slice::from_ref(&a)).unwrap();
        record(&path, &[a.clone(), b.clone()]).unwrap();
        let texts: Vec<_> = read(&path).unwrap().into_iter().map(|e| e.text).collect();
        assert_eq!(texts, ["a", "b"]);
    }

    #[test]
    fn a_history_this_process_wrote_is_not_read_again_unless_it_changed() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.json");
        let loads = || LOADS.with(std::cell::Cell::get);
        let (a, b, c) = (stored("a"), stored("b"), stored("c"));
        record(&path, std::slice::from_ref(&a)).unwrap();
        let before = loads();
        record(&path, &[a.clone(), b.clone()]).unwrap();
        assert_eq!(loads(), before, "the file it wrote: taken from memory");
        // Another writer replaces it (as a sender's compaction does).
        let theirs = stored("theirs");
        std::fs::write(&path, inbox::render(&[a.clone(), theirs])).unwrap();
        record(&path, std::slice::from_ref(&c)).unwrap();
        assert_eq!(loads(), before + 1, "a file written elsewhere is read");
        let texts: Vec<_> = read(&path).unwrap().into_iter().map(|e| e.text).collect();
        assert_eq!(texts, ["a", "theirs", "c"]);
        // Another history in between: each is read as it is on disk.
        let other = t.path().join("ann.json");
        record(&other, std::slice::from_ref(&b)).unwrap();
        record(&path, &[a, b]).unwrap();
        let texts: Vec<_> = read(&path).unwrap().into_iter().map(|e| e.text).collect();
        assert_eq!(texts, ["a", "theirs", "c", "b"]);
    }

    #[test]
    fn a_few_and_many_consumed_entries_are_told_apart_by_the_same_rule() {
        let a = stored("a");
        let mut same_id = Entry::new("bob", "a, edited".into(), None, None);
        same_id.msg_id = a.entry().msg_id.clone();
        // Claude Code's entries carry no msg_id: the triple decides.
        let mut b = Entry::new("cc", "b".into(), None, None);
        b.msg_id = None;
        let kept = vec![a.clone(), Stored::new(b.clone())];
        let d = stored("d");
        let few = vec![Stored::new(same_id), Stored::new(b), d.clone(), d.clone()];
        let texts = |v: Vec<&Stored>| -> Vec<String> {
            v.into_iter().map(|s| s.entry().text.clone()).collect()
        };
        assert_eq!(texts(not_in(&kept, &few)), ["d"]);
        let mut many = few.clone();
        many.extend((0..10).map(|i| stored(&format!("n{i}"))));
        let mut want = vec!["d".to_owned()];
        want.extend((0..10).map(|i| format!("n{i}")));
        assert_eq!(texts(not_in(&kept, &many)), want);
    }

    #[test]
    fn history_is_bounded_by_count_and_bytes_keeping_the_newest() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.json");
        let many: Vec<_> = (0..MAX_ENTRIES + 5)
            .map(|i| stored(&i.to_string()))
            .collect();
        record(&path, &many).unwrap();
        let h = read(&path).unwrap();
        assert_eq!(h.len(), MAX_ENTRIES);
        assert_eq!(h[0].text, "5");
        let big: Vec<_> = (0..40)
            .map(|i| stored(&format!("{i}:{}", "x".repeat(60_000))))
            .collect();
        record(&path, &big).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() <= MAX_BYTES, "{} bytes", bytes.len());
        assert!(read(&path).unwrap().last().unwrap().text.starts_with("39:"));
    }

    #[test]
    fn a_tail_of_a_long_run_records_what_the_whole_run_would() {
        let t = tempfile::tempdir().unwrap();
        let run: Vec<_> = (0..MAX_ENTRIES + 500)
            .map(|i| stored(&format!("{i}:{}", "y".repeat(i % 3000))))
            .collect();
        let (whole, tailed) = (t.path().join("whole.json"), t.path().join("tailed.json"));
        record(&whole, &run).unwrap();
        let mut tail = Tail::default();
        for s in &run {
            tail.push(s.clone());
        }
        assert!(tail.entries().len() <= MAX_ENTRIES);
        record(&tailed, tail.entries()).unwrap();
        assert_eq!(
            std::fs::read(&whole).unwrap(),
            std::fs::read(&tailed).unwrap()
        );
    }

    /// The consumption the lead makes: one message at a time.
    fn one_at_a_time(path: &Path, texts: impl IntoIterator<Item = String>) -> Vec<Stored> {
        let mut all = Vec::new();
        for t in texts {
            let s = stored(&t);
            record(path, std::slice::from_ref(&s)).unwrap();
            all.push(s);
        }
        all
    }

    fn inode(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).unwrap().ino()
    }

    #[test]
    fn a_history_this_process_wrote_is_appended_to_in_place_laid_out_as_a_rewrite() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.json");
        let first = one_at_a_time(&path, ["a".to_owned()]);
        let ino = inode(&path);
        let rest = one_at_a_time(&path, (0..5).map(|i| format!("m{i}")));
        assert_eq!(inode(&path), ino, "appended in place, not replaced");
        let all: Vec<Stored> = first.into_iter().chain(rest).collect();
        assert_eq!(std::fs::read(&path).unwrap(), inbox::render(&all));
        // Consumed again (a crash before the inbox was rewritten): no copy.
        record(&path, &all[2..4]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), inbox::render(&all));
    }

    #[test]
    fn a_torn_append_keeps_every_whole_entry_and_the_next_record_completes_it() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.json");
        let before = one_at_a_time(&path, ["a".to_owned(), "b".to_owned()]);
        let old = std::fs::read(&path).unwrap();
        let (c, d) = (stored("c\n  }\n]"), stored("d"));
        let mut whole = before.clone();
        whole.extend([c.clone(), d.clone()]);
        let full = inbox::render(&whole);
        // Every tear of the append of c and d: the bytes before it, then
        // any prefix of what the append writes from the old closing `]`.
        for tear in old.len() - 2..full.len() {
            let torn = [&old[..old.len() - 2], &full[old.len() - 2..tear]].concat();
            std::fs::write(&path, &torn).unwrap();
            let texts: Vec<String> = read(&path).unwrap().into_iter().map(|e| e.text).collect();
            let c_end = old.len() - 2 + 4 + c.text.len();
            let d_end = c_end + 4 + d.text.len();
            let want = match tear {
                t if t >= d_end => vec!["a", "b", "c\n  }\n]", "d"],
                t if t >= c_end => vec!["a", "b", "c\n  }\n]"],
                _ => vec!["a", "b"],
            };
            assert_eq!(texts, want, "torn after {tear} of {} bytes", full.len());
            // The consumer, started again, records both once more.
            record(&path, &[c.clone(), d.clone()]).unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), full, "torn after {tear}");
        }
        let copies = std::fs::read_dir(t.path()).unwrap().count();
        assert_eq!(copies, 1, "a torn append is repaired, not copied aside");
    }

    #[test]
    fn an_appended_history_is_read_within_its_bounds_and_rewritten_past_its_slack() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.json");
        let many: Vec<_> = (0..MAX_ENTRIES).map(|i| stored(&i.to_string())).collect();
        record(&path, &many).unwrap();
        let mut rewrites = 0;
        let mut ino = inode(&path);
        for i in 0..SLACK_ENTRIES + 10 {
            let text = format!("n{i}");
            one_at_a_time(&path, [text.clone()]);
            let h = read(&path).unwrap();
            assert_eq!(h.len(), MAX_ENTRIES);
            assert_eq!(h.last().unwrap().text, text);
            let held = inbox::parse(&std::fs::read(&path).unwrap());
            let Parsed::Clean(held) = held else {
                panic!("the file does not parse")
            };
            assert!(held.len() <= MAX_ENTRIES + SLACK_ENTRIES);
            if inode(&path) != ino {
                rewrites += 1;
                ino = inode(&path);
                assert_eq!(held.len(), MAX_ENTRIES, "a rewrite trims to the bound");
            }
        }
        assert_eq!(rewrites, 1, "one rewrite past the slack");
    }

    #[test]
    fn a_corrupt_history_is_copied_aside_not_lost() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("bob.json");
        std::fs::write(&path, b"[{oops").unwrap();
        record(&path, &[stored("a")]).unwrap();
        assert_eq!(read(&path).unwrap().len(), 1);
        let copies = std::fs::read_dir(t.path())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .contains(".corrupt-")
            })
            .count();
        assert_eq!(copies, 1);
    }
}
