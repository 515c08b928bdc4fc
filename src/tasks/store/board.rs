//! The whole board at once, through the board index ([`crate::tasks::index`]):
//! from the index alone when the task directory has provably not changed,
//! else with one `stat` per task file and a read of only the files that
//! changed (the last index decoded meanwhile on another thread, on a big
//! board); the index is saved again after such a look ([`Save`]: a
//! one-shot `status` or `task list` right after a change skips a save that
//! would record nothing settled). Used by `list`, `glance`, unassigning
//! and the claim checks. A claim without id takes its
//! candidates from a young index without listing the directory at all
//! ([`TaskStore::suggestions`]): every candidate is checked afresh under its
//! lock anyway, and one is taken only while no open task below it (nor a
//! blocker of one) has changed since, so it is still the lowest claimable
//! id (`store/claim.rs`, `Lower`).

use super::{ListLock, Loaded, Salvage, TaskError, TaskList, TaskStore};
use crate::atomic_file;
use crate::tasks::cache::Stamp;
use crate::tasks::index::{self, Index, Open, Rows, Seen};
use crate::tasks::sync;
use crate::tasks::task::{Task, absurd_task_file, task_file_id};
use crate::tasks::view::{BoardView, Fresh};
use std::fs;
use std::io;
use std::path::Path;
use std::time::Duration;

/// How old an index a claim without id takes its candidates from before it
/// looks at the directory itself. Every task the index saw open is checked
/// (`claim.rs`, `Lower`); what this bounds is a task finished then and
/// reopened since, which a claim may pass over this long.
const SUGGEST_FOR: Duration = Duration::from_secs(10);

/// How long a claim waits for another process's look at the board before
/// it looks itself.
const LOOK_WAIT: Duration = Duration::from_secs(2);

/// A task file as listed: its number (its name is `<n>.json`, the only
/// spelling [`task_file_id`] accepts).
type TaskFile = u64;

/// Whether a look at the board saves the index it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Save {
    /// Always: what the lead, the team watcher and claimants look with, so
    /// that claimants woken together by a change take their candidates
    /// from the index the first look saved (`suggestions`).
    Always,
    /// Only when the look learned something the next one can take from the
    /// index without looking (a file read whose stamp is settled, a settled
    /// directory, a quarantine, no index before): a process that looks once
    /// right after a change (`status`, `task list`) does not pay for a
    /// write whose every new entry the next look must read again anyway.
    WhenSettled,
}

/// The task files of a directory listing, in id order, each with its
/// stamp, and what was quarantined on the way.
struct Listed {
    quarantined: Vec<std::path::PathBuf>,
    files: Vec<TaskFile>,
    stamps: Vec<Option<Stamp>>,
}

/// What a per-file look found: the list, what was seen of each task (its
/// stamp and whether that was settled), and whether it learned something
/// settled.
type Looked = (TaskList, Vec<(Stamp, bool)>, bool);

/// How many changed files a one-shot look through the team watcher's
/// account reads without saving the index it made (`Save::WhenSettled`).
const ACCOUNT_UNSAVED_UP_TO: usize = 64;

/// An index at least this big (about 450 tasks) is decoded on a thread of
/// its own beside the listing.
const DECODE_BESIDE_FROM: usize = 64 * 1024;

/// A board at least this big has its files looked at by several threads.
const PARALLEL_FROM: usize = 1024;
/// At most this many threads look at task files at once.
const MOST_THREADS: usize = 4;

impl TaskStore {
    /// Every readable task, in id order, quarantining the unreadable and
    /// the absurdly numbered (which changes the directory, so the next
    /// look is a per-file one again).
    pub(super) fn scan(&self, list: Option<&ListLock>) -> Result<TaskList, TaskError> {
        Ok(self.scan_saving(list, Save::Always)?.into_list())
    }

    /// [`scan`](Self::scan), saving the index as `save` says, as a
    /// [`BoardView`]: the index read in place when it is the board (whole,
    /// or with the team watcher's account of the files changed since).
    pub(super) fn scan_saving(
        &self,
        list: Option<&ListLock>,
        save: Save,
    ) -> Result<BoardView, TaskError> {
        let dir = self.dir()?;
        let began = index::now_ns();
        let Some(dir_stamp) = self.dir_stamp(&dir)? else {
            return Ok(BoardView::decoded(TaskList::default()));
        };
        let mut bytes = self.read_index_bytes();
        // A look that saves (the lead's, a claimant's) wants every task
        // decoded; a one-shot look reads the index in place.
        let in_place = save == Save::WhenSettled;
        if bytes
            .as_deref()
            .is_some_and(|b| Index::whole_in(b, dir_stamp, began))
        {
            let whole = if in_place {
                // Taken only once it checked: else a per-file look uses it.
                match bytes.as_deref().and_then(Rows::of) {
                    Some(rows) => bytes
                        .take()
                        .map(|b| BoardView::mapped(b, rows, Vec::new(), Vec::new())),
                    None => None,
                }
            } else {
                decode_index(&self.team, bytes.as_deref()).map(|ix| {
                    BoardView::decoded(TaskList {
                        tasks: ix.tasks,
                        quarantined: Vec::new(),
                    })
                })
            };
            if let Some(whole) = whole {
                #[cfg(test)]
                looks::count(0);
                return Ok(whole);
            }
        }
        // The team watcher's account of what changed since the index's
        // point: only those files are read (`read_changed`).
        let at = bytes.as_deref().and_then(Index::at_in).unwrap_or((0, 0));
        // Not asked under the list lock: a watcher that waits for it would
        // keep the asker waiting for the answer's deadline.
        let account = if list.is_none() {
            self.account(at)
        } else {
            None
        };
        if let Some(sync::Answer {
            epoch,
            seq,
            changed: Some(ids),
        }) = &account
            && at.0 != 0
        {
            // A one-shot look leaves the index where it was while the
            // account since its point is short: the next look reads those
            // few files again, for less than the save (a third of this
            // look at 10,000 tasks).
            if in_place
                && ids.len() <= ACCOUNT_UNSAVED_UP_TO
                && let Some(rows) = bytes.as_deref().and_then(Rows::of)
                && let Some(b) = bytes.take()
            {
                let (fresh, quarantined) = self.read_changed(began, ids, list)?;
                return Ok(BoardView::mapped(b, rows, fresh, quarantined));
            }
            if let Some(ix) = decode_index(&self.team, bytes.as_deref()) {
                let (fresh, quarantined) = self.read_changed(began, ids, list)?;
                let (seen, tasks) = crate::tasks::view::put_fresh(ix.seen, ix.tasks, fresh);
                let stamps = seen.iter().map(|s| (s.stamp, s.settled));
                self.save_index(dir_stamp, began, (*epoch, *seq), stamps, &tasks);
                return Ok(BoardView::decoded(TaskList { tasks, quarantined }));
            }
        }
        // The point to save the index at: the answer's (every change the
        // watcher took in before this look began is seen by it), else the
        // last index's (a look at every file is the board at least as new).
        let point = account.map_or(at, |a| (a.epoch, a.seq));
        let decode = || decode_index(&self.team, bytes.as_deref());
        let known = || decode().map(|ix| (ix.seen, ix.tasks)).unwrap_or_default();
        // On a big board the last index's tasks are decoded on another
        // thread while this one lists and stats the files: both take
        // milliseconds at 10,000 tasks, one in user space, one in the kernel.
        let (known, listed) = if bytes
            .as_ref()
            .is_some_and(|b| b.len() >= DECODE_BESIDE_FROM)
        {
            std::thread::scope(|s| {
                let decoding = s.spawn(known);
                let listed = self.list_and_stat(&dir, list);
                let known = decoding
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p));
                (known, listed)
            })
        } else {
            (known(), self.list_and_stat(&dir, list))
        };
        let (out, stamps, learned) = self.look_per_file(began, known, listed?, list)?;
        let worth_saving = match save {
            Save::Always => true,
            Save::WhenSettled => {
                learned
                    || bytes.is_none()
                    || index::settled(dir_stamp.changed(), began)
                    || (point.0 != 0 && point != at)
            }
        };
        if worth_saving {
            self.save_index(dir_stamp, began, point, stamps.into_iter(), &out.tasks);
        }
        Ok(BoardView::decoded(out))
    }

    /// The team watcher's account for an index at `at`: asked through a
    /// cookie (`crate::tasks::sync`); on the watcher's own thread, only its
    /// log's point now (it cannot wait for its own answer: its looks read
    /// every file, and save the index at that point).
    fn account(&self, at: (u64, u64)) -> Option<sync::Answer> {
        let lock = self.root.team_watcher_lock(&self.team).ok()?;
        if let Some((epoch, seq)) = sync::local_at(lock.parent()?) {
            return Some(sync::Answer {
                epoch,
                seq,
                changed: None,
            });
        }
        sync::ask(&self.root, &self.team, at, sync::ASK_WITHIN)
    }

    /// What the team watcher's account allows a look to read: the task
    /// files `changed` (ids, in order), each as it is now (a file gone:
    /// `None`; an unreadable one is salvaged or quarantined as a per-file
    /// look would), to go over the index's entries ([`BoardView`]).
    fn read_changed(
        &self,
        began: i64,
        changed: &[u64],
        list: Option<&ListLock>,
    ) -> Result<(Vec<Fresh>, Vec<std::path::PathBuf>), TaskError> {
        let mut quarantined = Vec::new();
        let mut fresh = Vec::with_capacity(changed.len());
        let mut reads = 0;
        for &n in changed {
            let stamp = self.stamp(&n.to_string())?;
            let mut got = TaskList::default();
            let mut got_seen = Vec::with_capacity(1);
            self.read_into(n, stamp, began, list, &mut reads, &mut got, &mut got_seen)?;
            quarantined.append(&mut got.quarantined);
            let now = got
                .tasks
                .pop()
                .zip(got_seen.pop())
                .map(|(task, (stamp, settled))| {
                    let seen = Seen {
                        id: n,
                        stamp,
                        settled,
                    };
                    (seen, task)
                });
            fresh.push((n, now));
        }
        #[cfg(test)]
        looks::count_answered(reads);
        let _ = reads;
        Ok((fresh, quarantined))
    }

    /// The task files in `dir` by number, each with its stamp (`None`:
    /// gone since it was listed), after quarantining the absurdly numbered.
    fn list_and_stat(&self, dir: &Path, list: Option<&ListLock>) -> Result<Listed, TaskError> {
        let (absurd, mut files) = self.task_files(dir)?;
        let mut quarantined = Vec::new();
        for name in &absurd {
            quarantined.extend(self.quarantine_absurd(dir, name, list)?);
        }
        files.sort_unstable();
        let stamps = stat_all(dir, &files).map_err(|(n, e)| {
            let path = dir.join(format!("{n}.json"));
            self.io_err(format!("stat task {n}"), &path, e)
        })?;
        Ok(Listed {
            quarantined,
            files,
            stamps,
        })
    }

    /// The per-file look, from the listing and stamps of `listed`: a read
    /// of only the files whose stamp is not the settled one `known` (the
    /// last index, in id order) has. Returns the list, what was seen of
    /// each task (for the index), and whether a file read had a settled
    /// stamp (something the next look can take from the index).
    fn look_per_file(
        &self,
        began: i64,
        (seen, tasks): (Vec<Seen>, Vec<Task>),
        listed: Listed,
        list: Option<&ListLock>,
    ) -> Result<Looked, TaskError> {
        let mut tasks = tasks;
        let mut k = 0;
        let mut out = TaskList {
            tasks: Vec::with_capacity(listed.files.len()),
            quarantined: listed.quarantined,
        };
        let mut stamps = Vec::with_capacity(listed.files.len());
        let mut reads = 0;
        let mut learned = false;
        for (n, looked) in listed.files.into_iter().zip(listed.stamps) {
            // Both in id order: walk the last index beside the listing.
            while seen.get(k).is_some_and(|s| s.id < n) {
                k += 1;
            }
            let prior = seen
                .get(k)
                .filter(|s| s.id == n && s.settled)
                .map(|s| (s.stamp, k));
            if let (Some(now), Some((was, at))) = (looked, prior)
                && was == now
            {
                stamps.push((now, true));
                out.tasks
                    .push(std::mem::replace(&mut tasks[at], Task::new("", "")));
                continue;
            }
            learned |= self.read_into(n, looked, began, list, &mut reads, &mut out, &mut stamps)?;
        }
        #[cfg(test)]
        looks::count(reads);
        let _ = reads;
        let learned = learned || !out.quarantined.is_empty();
        Ok((out, stamps, learned))
    }

    /// Reads task `n`, its file stamped `stamp` (`None`: gone), into `out`
    /// with what was seen of it in `stamps`; an unreadable file is salvaged
    /// (then read again) or quarantined (into `out`). Each read counts in
    /// `reads`. True when it was read with a settled stamp.
    #[allow(
        clippy::too_many_arguments,
        reason = "the two looks' running state, borrowed as they hold it"
    )]
    fn read_into(
        &self,
        n: u64,
        mut stamp: Option<Stamp>,
        began: i64,
        list: Option<&ListLock>,
        reads: &mut usize,
        out: &mut TaskList,
        stamps: &mut Vec<(Stamp, bool)>,
    ) -> Result<bool, TaskError> {
        let id = n.to_string();
        while let Some(now) = stamp {
            *reads += 1;
            match self.load(&id)? {
                Loaded::Missing => break,
                Loaded::Found(t) => {
                    let settled = index::settled(now.changed(), began);
                    stamps.push((now, settled));
                    out.tasks.push(t);
                    return Ok(settled);
                }
                Loaded::Corrupt(_) => match self.salvage(&id, list)? {
                    Salvage::Quarantined(q) => {
                        out.quarantined.push(q);
                        break;
                    }
                    Salvage::Recovered => stamp = self.stamp(&id)?,
                    Salvage::Gone => break,
                },
            }
        }
        Ok(false)
    }

    /// The task directory's entries: the names numbered past the id space
    /// (to quarantine), and each task file by its number.
    fn task_files(&self, dir: &Path) -> Result<(Vec<String>, Vec<TaskFile>), TaskError> {
        let listing = |e| self.io_err("list the task directory", dir, e);
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(listing(e)),
        };
        let (mut absurd, mut files) = (Vec::new(), Vec::new());
        for entry in entries {
            let entry = entry.map_err(listing)?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                continue;
            };
            if absurd_task_file(name) {
                absurd.push(name.to_owned());
            } else if let Some(n) = task_file_id(name) {
                files.push(n);
            }
        }
        Ok((absurd, files))
    }

    /// What a claim without id starts from: the open tasks of an index
    /// younger than [`SUGGEST_FOR`] (read without decoding its tasks). When
    /// there is none, one process looks at the board for all the claimants
    /// woken together (a task change that may offer work wakes every idle runtime): it holds
    /// the look lock while it looks and saves the index, the others wait
    /// for it ([`LOOK_WAIT`] at most) and take what it saved. `None` when
    /// no index could be had.
    pub(super) fn suggestions(&self) -> Result<Option<(i64, Vec<Open>)>, TaskError> {
        if let Some(open) = self.young_open() {
            return Ok(Some(open));
        }
        let _looking = self.look_lock();
        if let Some(open) = self.young_open() {
            return Ok(Some(open));
        }
        self.scan(None)?;
        Ok(self.young_open())
    }

    /// What a claim without id that found nothing among the suggestions
    /// decides on: the open tasks of a look at the board that began at or
    /// after `since` (when the claim started). Claimants woken together
    /// that lost the same task share one such look, as they share the
    /// suggestions: whoever holds the look lock looks and saves the index,
    /// the others wait for it and take what it saved (each looking by itself
    /// was 13 ms a claimant at 10,000 tasks: 1.3 s of CPU for a team of 100
    /// to learn that the one task freed was taken). `None` when no such look
    /// could be had.
    pub(super) fn open_since(&self, since: i64) -> Result<Option<(i64, Vec<Open>)>, TaskError> {
        let looked = |store: &Self| store.saved_open().filter(|(began, _)| *began >= since);
        if let Some(open) = looked(self) {
            return Ok(Some(open));
        }
        let _looking = self.look_lock();
        if let Some(open) = looked(self) {
            return Ok(Some(open));
        }
        self.scan(None)?;
        Ok(looked(self))
    }

    /// When the saved index's look began, and its open tasks, if it is
    /// young enough.
    fn young_open(&self) -> Option<(i64, Vec<Open>)> {
        let now = index::now_ns();
        let (began, open) = self.saved_open()?;
        (now >= began && ((now - began) as u128) <= SUGGEST_FOR.as_nanos()).then_some((began, open))
    }

    /// When the saved index's look began, and its open tasks.
    fn saved_open(&self) -> Option<(i64, Vec<Open>)> {
        let path = self.root.board_index(&self.team).ok()?;
        let file = match atomic_file::open_optional(&path) {
            Ok(file) => file?,
            Err(e) => {
                tracing::warn!(team = %self.team, file = %path.display(), error = %e,
                    "cannot read the board index; looking at every task file");
                return None;
            }
        };
        Index::open_in(&file)
    }

    /// The look lock, waiting [`LOOK_WAIT`] at most for the process that
    /// holds it; `None` (look anyway) when it cannot be had. The kernel
    /// releases it if its holder dies.
    fn look_lock(&self) -> Option<fs::File> {
        let path = self.root.board_look_lock(&self.team).ok()?;
        let file = path
            .parent()
            .map_or(Ok(()), atomic_file::ensure_dir)
            .and_then(|()| atomic_file::open_lock_file(&path));
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!(error = %e, "no board look lock; looking without it");
                return None;
            }
        };
        // Blocked in the kernel, not polling: claimants woken together
        // queue here, each handed the lock the moment the one before lets go.
        match atomic_file::lock_within(file, &path, LOOK_WAIT) {
            Ok(got) => got,
            Err(e) => {
                tracing::debug!(error = %e, "no board look lock; looking without it");
                None
            }
        }
    }

    /// The task directory's stamp; `None` when there is no directory.
    fn dir_stamp(&self, dir: &Path) -> Result<Option<Stamp>, TaskError> {
        match fs::symlink_metadata(dir) {
            Ok(meta) => Ok(Some(Stamp::of(&meta))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_err("look at the task directory", dir, e)),
        }
    }

    /// A task file's stamp (of the file itself, never through a link, which
    /// the read then refuses); `None` when it is gone.
    pub(super) fn stamp(&self, id: &str) -> Result<Option<Stamp>, TaskError> {
        let path = self.path(id)?;
        match fs::symlink_metadata(&path) {
            Ok(meta) => Ok(Some(Stamp::of(&meta))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_err(format!("stat task {id}"), &path, e)),
        }
    }

    fn read_index_bytes(&self) -> Option<atomic_file::Mapped> {
        let path = self.root.board_index(&self.team).ok()?;
        match atomic_file::map_cache(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!(team = %self.team, file = %path.display(), error = %e,
                    "cannot read the board index; reading every task file");
                None
            }
        }
    }

    /// Saves what a look found. A failure costs speed, not correctness:
    /// it is logged, and the next look reads the files.
    fn save_index(
        &self,
        dir: Stamp,
        began: i64,
        at: (u64, u64),
        stamps: impl ExactSizeIterator<Item = (Stamp, bool)>,
        tasks: &[Task],
    ) {
        let entries = stamps.zip(tasks).map(|((s, ok), t)| (s, ok, t));
        let bytes = Index::encode(
            dir,
            index::settled(dir.changed(), began),
            began,
            at,
            entries,
        );
        let saved = self
            .root
            .board_index(&self.team)
            .map_err(io::Error::other)
            .and_then(|path| {
                if let Some(parent) = path.parent() {
                    atomic_file::ensure_dir(parent)?;
                }
                atomic_file::write_cache(&path, &bytes)
            });
        if let Err(e) = saved {
            tracing::warn!(team = %self.team, error = %e,
                "cannot save the board index; the next look reads every task file");
        }
    }
}

/// The saved index of `team` from its bytes; `None` when there is none or
/// it does not decode (torn by a crash, another version): it is then
/// rebuilt.
fn decode_index(team: &str, bytes: Option<&[u8]>) -> Option<Index> {
    let ix = Index::decode(bytes?);
    if ix.is_none() {
        tracing::info!(team = %team, "board index unreadable; rebuilding it from the task files");
    }
    ix
}

/// The stamp of each task file `ids` names in `dir` (`None`: gone since
/// it was listed), or the first id that could not be looked at, with why.
///
/// One `stat` per file relative to one handle on the directory (no path
/// walked per file). On a big board the files are split among up to
/// [`MOST_THREADS`] threads (no more than the cores): the `stat`s are
/// nearly all the cost of a per-file look at 10,000 tasks (about 2 µs each
/// in the kernel), and independent.
fn stat_all(dir: &Path, ids: &[u64]) -> Result<Vec<Option<Stamp>>, (u64, io::Error)> {
    use std::os::unix::fs::OpenOptionsExt;
    let handle = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
        .map_err(|e| (ids.first().copied().unwrap_or(0), e))?;
    let threads = if ids.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, MOST_THREADS)
    };
    if threads == 1 {
        return stat_some(&handle, ids);
    }
    let chunk = ids.len().div_ceil(threads);
    let (first, rest) = ids.split_at(chunk);
    std::thread::scope(|s| {
        // This thread takes the first part itself.
        let others: Vec<_> = rest
            .chunks(chunk)
            .map(|part| s.spawn(|| stat_some(&handle, part)))
            .collect();
        let mut out = stat_some(&handle, first)?;
        out.reserve(rest.len());
        for part in others {
            let part = part.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            out.extend(part?);
        }
        Ok(out)
    })
}

/// [`stat_all`] on one thread.
fn stat_some(dir: &fs::File, ids: &[u64]) -> Result<Vec<Option<Stamp>>, (u64, io::Error)> {
    use std::io::Write as _;
    use std::os::fd::AsRawFd;
    let mut out = Vec::with_capacity(ids.len());
    for &n in ids {
        // "<n>.json\0" (an id has at most 20 digits).
        let mut name = [0u8; 32];
        let mut w = &mut name[..];
        let _ = write!(w, "{n}.json");
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `name` is NUL-terminated (the array is zeroed and the
        // name is shorter than it), `st` is written by the call before it
        // is read, and `dir` is an open directory for the whole call.
        let rc = unsafe {
            libc::fstatat(
                dir.as_raw_fd(),
                name.as_ptr().cast(),
                st.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if rc == 0 {
            // SAFETY: fstatat succeeded, so it filled `st`.
            out.push(Some(Stamp::of_stat(unsafe { st.assume_init_ref() })));
            continue;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::NotFound {
            return Err((n, e));
        }
        out.push(None);
    }
    Ok(out)
}

/// How many task files the last look on this thread read (`Some(0)`: the
/// whole index was used): for tests that pin when files are read.
#[cfg(test)]
pub(crate) mod looks {
    use std::cell::Cell;

    thread_local! {
        static LAST: Cell<Option<usize>> = const { Cell::new(None) };
        static ANSWERED: Cell<bool> = const { Cell::new(false) };
    }

    pub(super) fn count(reads: usize) {
        LAST.with(|c| c.set(Some(reads)));
        ANSWERED.with(|c| c.set(false));
    }

    /// A look the team watcher's account allowed, reading `reads` files.
    pub(super) fn count_answered(reads: usize) {
        LAST.with(|c| c.set(Some(reads)));
        ANSWERED.with(|c| c.set(true));
    }

    /// Whether the last look on this thread took the team watcher's
    /// account (read only the files it named), cleared.
    pub fn take_answered() -> bool {
        ANSWERED.with(|c| c.take())
    }

    /// The count of the last look, cleared.
    pub fn take() -> Option<usize> {
        LAST.with(|c| c.take())
    }
}
