//! The task store: one team's `tasks/<team>/` directory, read and written
//! with Claude Code's locks and swarm's crash-safe writes.
//!
//! * Create and delete run under the list lock (`.lock` created O_EXCL, lock
//!   directory `.lock.lock`); updates and claims under the task's own lock
//!   (`<id>.json.lock`). Where both are needed the list lock is taken first,
//!   always, so two swarm operations can never wait on each other in a circle.
//! * Every write is `write_atomic`, so a reader never sees a torn swarm write.
//!   Claude Code writes in place, so a read that does not parse is retried;
//!   if the file is still unreadable under both locks it is quarantined
//!   (copied aside, removed), `.highwatermark` is raised to its id so the id
//!   is never handed out again, and it is reported; the other tasks carry on.
//! * Ids come from `max(highest used id, .highwatermark, issued) + 1` and
//!   are never reused; `.highwatermark` is raised before a delete unlinks a
//!   file. `issued` is swarm's own record of the highest id it ever handed
//!   out or deleted ([`Root::issued_mark`], outside the task directory): a
//!   `.highwatermark` found corrupt is rebuilt from the files *and* it, so a
//!   deleted id cannot come back through a mangled mark. Claude Code knows
//!   only `.highwatermark` and the files, so all three are read.
//! * Numbers that parse but no counting produced (past `MAX_ID`, 2^53 − 1)
//!   are corrupt: such a `.highwatermark` is quarantined and rebuilt, such a
//!   `<n>.json` quarantined, so one hostile number cannot stop every create.
//!
//! The decisions themselves (what a claim checks, what an update changes)
//! are the pure functions of [`super::rules`]; claims live in `store/claim.rs`.

mod board;
mod claim;

#[cfg(test)]
pub(crate) use board::looks as board_looks;
pub use claim::Claim;

use super::cache::{ReadCache, Stamp};
use super::error::TaskError;
use super::rules::{self, TaskUpdate};
use super::task::{MAX_ID, Status, Task, parse_id, used_id};
use super::view::BoardView;
use crate::atomic_file::{self, DEFAULT_LOCK_TIMEOUT, FileLock};
use crate::paths::Root;
use serde_json::{Map, Value};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long to wait before re-reading a file that did not parse: long
/// enough for an in-place writer to finish a task-sized write.
const REREAD_PAUSE: Duration = Duration::from_millis(5);

/// What a new task starts with (it is always pending and ownerless).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewTask {
    pub subject: String,
    pub description: String,
    pub active_form: Option<String>,
    /// Existing tasks that block the new one; their `blocks` gain its id.
    pub blocked_by: Vec<String>,
    pub metadata: Option<Map<String, Value>>,
}

/// Every readable task, in numeric id order, and the files that were not
/// readable and were copied aside by this call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskList {
    pub tasks: Vec<Task>,
    pub quarantined: Vec<PathBuf>,
}

/// The result of an update.
#[derive(Debug, Clone, PartialEq)]
pub struct Updated {
    pub task: Task,
    /// Set when the owner changed to a new name: that member is owed a
    /// `task_assignment` message (sent by the caller, which has the mailbox).
    pub new_owner: Option<String>,
}

/// One team's task list.
#[derive(Debug, Clone)]
pub struct TaskStore {
    root: Root,
    team: String,
    lock_timeout: Duration,
    cache: ReadCache,
}

/// Proof that the list lock is held.
struct ListLock(#[allow(dead_code, reason = "held for its Drop")] FileLock);

/// What reading a task file found.
#[allow(
    clippy::large_enum_variant,
    reason = "short-lived, never stored in bulk"
)]
pub(crate) enum Loaded {
    Missing,
    Found(Task),
    Corrupt(String),
}

/// What became of a file that did not parse, once looked at under the locks.
enum Salvage {
    Quarantined(PathBuf),
    Recovered,
    Gone,
}

/// `.highwatermark` as found.
enum Mark {
    Missing,
    At(u64),
    Garbage,
}

impl TaskStore {
    pub fn new(root: &Root, team: &str) -> TaskStore {
        TaskStore {
            root: root.clone(),
            team: team.to_string(),
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            cache: ReadCache::default(),
        }
    }

    /// Waits at most `timeout` for any lock (default [`DEFAULT_LOCK_TIMEOUT`]).
    pub fn with_lock_timeout(mut self, timeout: Duration) -> TaskStore {
        self.lock_timeout = timeout;
        self
    }

    pub fn team(&self) -> &str {
        &self.team
    }

    /// `tasks/<team>/`, for watchers.
    pub fn dir(&self) -> Result<PathBuf, TaskError> {
        self.root
            .tasks_dir(&self.team)
            .map_err(|e| self.name_err(e))
    }

    /// Creates a task with the next id, under the list lock.
    pub fn create(&self, new: NewTask) -> Result<Task, TaskError> {
        let mut blocked_by = Vec::new();
        for b in &new.blocked_by {
            self.check_id(b)?;
            rules::add_unique(&mut blocked_by, b);
        }
        let dir = self.dir()?;
        let list = self.lock_list()?;
        for b in &blocked_by {
            self.require(b)?;
        }
        let (mark, _) = self.mark(&list)?;
        let used = self.highest_used(&dir)?.max(self.read_issued());
        let n = rules::next_id(used, mark).ok_or_else(|| TaskError::IdsExhausted {
            team: self.team.clone(),
        })?;
        // Recorded before the task exists: a crash in between burns the
        // id, which is harmless; the other order could hand it out again.
        self.record_issued(n)?;
        let id = n.to_string();
        let mut task = Task::new(id, new.subject);
        task.description = new.description;
        task.active_form = new.active_form;
        task.blocked_by = blocked_by;
        task.metadata = new.metadata;
        self.write(&task)?;
        for b in &task.blocked_by {
            self.edit(b, Some(&list), |t| {
                rules::add_unique(&mut t.blocks, &task.id)
            })?;
        }
        Ok(task)
    }

    /// Every task in numeric id order. Unreadable files are quarantined and
    /// reported in [`TaskList::quarantined`], as is a garbage `.highwatermark`
    /// (rebuilt from the highest id in use).
    pub fn list(&self) -> Result<TaskList, TaskError> {
        Ok(self.list_saving(board::Save::Always)?.into_list())
    }

    /// [`list`](Self::list) for a process that looks once and exits
    /// (`status`, `task list`), as the look found the board (read in place
    /// from the index when that was the board: [`BoardView`]): the board
    /// index is saved only when the look learned something the next look
    /// can use (`board::Save`). The
    /// lead, the team watcher and claimants use `list`, whose index
    /// claimants woken by a change take their candidates from.
    pub fn glance(&self) -> Result<BoardView, TaskError> {
        self.list_saving(board::Save::WhenSettled)
    }

    fn list_saving(&self, save: board::Save) -> Result<BoardView, TaskError> {
        let garbage_mark = matches!(self.read_mark()?, Mark::Garbage);
        let list = if garbage_mark {
            Some(self.lock_list()?)
        } else {
            None
        };
        let mut quarantined = Vec::new();
        if let Some(l) = &list {
            quarantined.extend(self.mark(l)?.1);
        }
        let mut found = self.scan_saving(list.as_ref(), save)?;
        quarantined.append(&mut found.quarantined);
        found.quarantined = quarantined;
        Ok(found)
    }

    /// One task; `None` when there is no such file. An unreadable file is
    /// quarantined and reported as [`TaskError::Corrupt`].
    pub fn get(&self, id: &str) -> Result<Option<Task>, TaskError> {
        self.check_id(id)?;
        loop {
            match self.load(id)? {
                Loaded::Missing => return Ok(None),
                Loaded::Found(t) => return Ok(Some(t)),
                Loaded::Corrupt(reason) => match self.salvage(id, None)? {
                    Salvage::Quarantined(q) => return Err(self.corrupt(id, reason, q)?),
                    Salvage::Recovered | Salvage::Gone => continue,
                },
            }
        }
    }

    /// Applies `upd` (made by member `by`) under the task's lock. New
    /// dependencies are written on both sides, each under its own task's lock,
    /// with the list lock held so a concurrent delete cannot leave one side
    /// dangling.
    pub fn update(&self, id: &str, upd: TaskUpdate, by: &str) -> Result<Updated, TaskError> {
        self.check_id(id)?;
        let others: Vec<&String> = upd.add_blocks.iter().chain(&upd.add_blocked_by).collect();
        for o in &others {
            self.check_id(o)?;
            if *o == id {
                return Err(TaskError::SelfBlock {
                    team: self.team.clone(),
                    id: id.to_string(),
                });
            }
        }
        let list = if others.is_empty() {
            None
        } else {
            Some(self.lock_list()?)
        };
        for o in &others {
            self.require(o)?;
        }
        self.require(id)?;
        if let Some(list) = &list {
            // Under the list lock, so no other update can close the same
            // cycle from the other side meanwhile.
            let all = self.scan(Some(list))?.tasks;
            if let Some(cycle) =
                rules::dependency_cycle(&all, id, &upd.add_blocks, &upd.add_blocked_by)
            {
                return Err(TaskError::Cycle {
                    team: self.team.clone(),
                    id: id.to_string(),
                    cycle,
                });
            }
        }
        let (lock, task) = self.locked_read(id, list.as_ref())?;
        let mut task = match task {
            Some(t) => t,
            None => return Err(self.not_found(id)?),
        };
        let new_owner = rules::apply_update(&mut task, &upd, by);
        self.write(&task)?;
        drop(lock);
        for b in &upd.add_blocks {
            self.edit(b, list.as_ref(), |t| {
                rules::add_unique(&mut t.blocked_by, id)
            })?;
        }
        for b in &upd.add_blocked_by {
            self.edit(b, list.as_ref(), |t| rules::add_unique(&mut t.blocks, id))?;
        }
        Ok(Updated { task, new_owner })
    }

    /// Deletes a task: raises `.highwatermark`, unlinks the file, then strips
    /// the id from every other task. Returns whether the task existed.
    pub fn delete(&self, id: &str) -> Result<bool, TaskError> {
        let n = self.check_id(id)?;
        let path = self.path(id)?;
        let list = self.lock_list()?;
        if fs::symlink_metadata(&path).is_err() {
            return Ok(false);
        }
        self.raise_mark(n, &list)?;
        {
            // Under the task's lock too, so an update in flight cannot
            // resurrect the file by renaming over it afterwards.
            let _task_lock = self.lock_task(id)?;
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(self.io_err(format!("delete task {id}"), &path, e)),
            }
        }
        for t in self.scan(Some(&list))?.tasks {
            if t.blocks.iter().chain(&t.blocked_by).any(|b| b == id) {
                self.edit(&t.id, Some(&list), |t| rules::strip_id(t, id))?;
            }
        }
        Ok(true)
    }

    /// Returns every open task of `member` (one that left or died) to the
    /// pool: owner removed, status pending. Returns the tasks changed.
    pub fn unassign_all_of(&self, member: &str) -> Result<Vec<Task>, TaskError> {
        Ok(self
            .unassign_all_of_each(&[member])?
            .into_iter()
            .map(|(_, t)| t)
            .collect())
    }

    /// [`unassign_all_of`](Self::unassign_all_of) for several members, with
    /// one look at the board for all of them. Each task changed comes with
    /// the member it was taken from.
    pub fn unassign_all_of_each(&self, members: &[&str]) -> Result<Vec<(String, Task)>, TaskError> {
        let mut changed = Vec::new();
        for t in self.scan(None)?.tasks {
            let Some(member) = t.owner.as_deref().filter(|o| members.contains(o)) else {
                continue;
            };
            if t.status != Status::Completed {
                let member = member.to_string();
                let mut did = false;
                let after = self.edit(&t.id, None, |t| {
                    did = rules::unassign(t, &member);
                    did
                })?;
                if let (true, Some(t)) = (did, after) {
                    changed.push((member, t));
                }
            }
        }
        Ok(changed)
    }

    /// Returns task `id` to the pool (owner removed, pending) if `member`
    /// still owns it and it is open, under its lock. The task as written;
    /// `None` when it changed nothing (another owner by now, completed, or
    /// gone).
    pub fn unassign(&self, id: &str, member: &str) -> Result<Option<Task>, TaskError> {
        self.check_id(id)?;
        let mut did = false;
        let after = self.edit(id, None, |t| {
            did = rules::unassign(t, member);
            did
        })?;
        Ok(after.filter(|_| did))
    }

    /// Returns the task `seen` (as a look at the board found it) to the
    /// pool if, under its lock, it is still exactly that: a task written
    /// since (claimed again, finished, handed over) is left as it is. For
    /// the tasks of an owner found dead after that look.
    pub fn unassign_if_unchanged(&self, seen: &Task) -> Result<Option<Task>, TaskError> {
        let Some(owner) = seen.owner.as_deref() else {
            return Ok(None);
        };
        self.check_id(&seen.id)?;
        let mut did = false;
        let after = self.edit(&seen.id, None, |t| {
            did = t == seen && rules::unassign(t, owner);
            did
        })?;
        Ok(after.filter(|_| did))
    }

    /// Reads, changes and (if `f` says it changed) writes one task under its
    /// lock. `None` when the task does not exist.
    fn edit(
        &self,
        id: &str,
        list: Option<&ListLock>,
        f: impl FnOnce(&mut Task) -> bool,
    ) -> Result<Option<Task>, TaskError> {
        let (_lock, task) = self.locked_read(id, list)?;
        let Some(mut task) = task else {
            return Ok(None);
        };
        if f(&mut task) {
            self.write(&task)?;
        }
        Ok(Some(task))
    }

    /// Takes the task's lock and reads it. An unreadable file is salvaged
    /// (which needs the list lock, so the task lock is let go first) and
    /// reported as [`TaskError::Corrupt`].
    fn locked_read(
        &self,
        id: &str,
        list: Option<&ListLock>,
    ) -> Result<(FileLock, Option<Task>), TaskError> {
        self.locked_read_within(id, list, self.lock_timeout)
    }

    fn locked_read_within(
        &self,
        id: &str,
        list: Option<&ListLock>,
        wait: Duration,
    ) -> Result<(FileLock, Option<Task>), TaskError> {
        loop {
            let lock = self.lock_task_within(id, wait)?;
            match self.load(id)? {
                Loaded::Missing => return Ok((lock, None)),
                Loaded::Found(t) => return Ok((lock, Some(t))),
                Loaded::Corrupt(reason) => {
                    drop(lock);
                    match self.salvage(id, list)? {
                        Salvage::Quarantined(q) => return Err(self.corrupt(id, reason, q)?),
                        Salvage::Recovered | Salvage::Gone => continue,
                    }
                }
            }
        }
    }

    /// Task `n` as it is now, read without a lock: from the cache when the
    /// file is unchanged, else read and parsed once. `None` when missing or
    /// unreadable.
    fn peek(&self, n: u64) -> Result<Option<Task>, TaskError> {
        let id = n.to_string();
        let path = self.path(&id)?;
        let stamp = match fs::metadata(&path) {
            Ok(meta) => Stamp::of(&meta),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io_err(format!("stat task {id}"), &path, e)),
        };
        if let Some(task) = self.cache.get(n, stamp) {
            return Ok(Some(task));
        }
        Ok(match self.load_once(&id)? {
            Loaded::Found(task) => {
                self.cache.put(n, stamp, task.clone());
                Some(task)
            }
            Loaded::Missing | Loaded::Corrupt(_) => None,
        })
    }

    /// Reads a task file, once more after a pause if it does not parse (an
    /// in-place writer may have been half way).
    fn load(&self, id: &str) -> Result<Loaded, TaskError> {
        let first = self.load_once(id)?;
        if !matches!(first, Loaded::Corrupt(_)) {
            return Ok(first);
        }
        std::thread::sleep(REREAD_PAUSE);
        self.load_once(id)
    }

    fn load_once(&self, id: &str) -> Result<Loaded, TaskError> {
        let path = self.path(id)?;
        let bytes = atomic_file::read_optional(&path)
            .map_err(|e| self.io_err(format!("read task {id}"), &path, e))?;
        let Some(bytes) = bytes else {
            return Ok(Loaded::Missing);
        };
        Ok(match Task::from_file_bytes(&bytes) {
            Ok(mut t) => {
                if t.id != id {
                    tracing::warn!(team = %self.team, file = %path.display(), inner = %t.id,
                        "task file names another id; the file name wins");
                    t.id = id.to_string();
                }
                Loaded::Found(t)
            }
            Err(reason) => Loaded::Corrupt(reason),
        })
    }

    /// Looks at an unreadable task file again under the list lock and its own
    /// lock; if it is still unreadable, copies it aside, removes it, and
    /// keeps its id used.
    fn salvage(&self, id: &str, list: Option<&ListLock>) -> Result<Salvage, TaskError> {
        let own;
        let list = match list {
            Some(l) => l,
            None => {
                own = self.lock_list()?;
                &own
            }
        };
        let _task_lock = self.lock_task(id)?;
        let reason = match self.load(id)? {
            Loaded::Missing => return Ok(Salvage::Gone),
            Loaded::Found(_) => return Ok(Salvage::Recovered),
            Loaded::Corrupt(reason) => reason,
        };
        let path = self.path(id)?;
        let copy = match atomic_file::quarantine(&path) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Salvage::Gone),
            Err(e) => return Err(self.io_err(format!("quarantine task {id}"), &path, e)),
        };
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io_err(format!("remove corrupt task {id}"), &path, e)),
        }
        self.raise_mark(self.check_id(id)?, list)?;
        tracing::warn!(team = %self.team, task = id, file = %path.display(),
            copy = %copy.display(), %reason, "unreadable task file quarantined");
        Ok(Salvage::Quarantined(copy))
    }

    /// Copies aside and removes a file named like a task but numbered past
    /// [`MAX_ID`] (see [`absurd_task_file`]); `None` if it went meanwhile.
    /// Its number is not kept used: no id past `MAX_ID` is ever handed out.
    fn quarantine_absurd(
        &self,
        dir: &Path,
        name: &str,
        list: Option<&ListLock>,
    ) -> Result<Option<PathBuf>, TaskError> {
        let own;
        let _list = match list {
            Some(l) => l,
            None => {
                own = self.lock_list()?;
                &own
            }
        };
        // Not through `paths`: the name is one just read from this very
        // directory and is only digits and `.json` (no separator, no dots),
        // and `Root::task` would refuse the longest of them.
        let path = dir.join(name);
        let copy = match atomic_file::quarantine(&path) {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io_err("quarantine an absurd task file", &path, e)),
        };
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io_err("remove an absurd task file", &path, e)),
        }
        tracing::warn!(team = %self.team, file = %path.display(), copy = %copy.display(),
            "task file numbered past the id space quarantined");
        Ok(Some(copy))
    }

    /// The highest id ever used that the directory still shows: task files
    /// and quarantined copies of them.
    fn highest_used(&self, dir: &Path) -> Result<u64, TaskError> {
        Ok(self
            .file_names(dir)?
            .iter()
            .filter_map(|n| used_id(n))
            .max()
            .unwrap_or(0))
    }

    fn file_names(&self, dir: &Path) -> Result<Vec<String>, TaskError> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(self.io_err("list the task directory", dir, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| self.io_err("list the task directory", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn read_mark(&self) -> Result<Mark, TaskError> {
        let path = self.mark_path()?;
        let bytes = atomic_file::read_optional(&path)
            .map_err(|e| self.io_err("read the high-water mark", &path, e))?;
        Ok(match bytes {
            None => Mark::Missing,
            // A number past the id space is garbage too: no counting wrote it.
            Some(b) => match std::str::from_utf8(&b)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .filter(|n| *n <= MAX_ID)
            {
                Some(n) => Mark::At(n),
                None => Mark::Garbage,
            },
        })
    }

    /// The high-water mark (0 when missing). A garbage one is quarantined
    /// and rebuilt from the highest id in use; the copy's path is returned.
    fn mark(&self, _list: &ListLock) -> Result<(u64, Option<PathBuf>), TaskError> {
        let mut found = self.read_mark()?;
        if matches!(found, Mark::Garbage) {
            // Claude Code writes it in place without a lock: look again.
            std::thread::sleep(REREAD_PAUSE);
            found = self.read_mark()?;
        }
        match found {
            Mark::Missing => Ok((0, None)),
            Mark::At(n) => Ok((n, None)),
            Mark::Garbage => {
                let path = self.mark_path()?;
                let copy = atomic_file::quarantine(&path)
                    .map_err(|e| self.io_err("quarantine the high-water mark", &path, e))?;
                // The files alone forget a deleted id past the highest one
                // left; swarm's own record does not.
                let rebuilt = self.highest_used(&self.dir()?)?.max(self.read_issued());
                self.write_mark(rebuilt)?;
                tracing::warn!(team = %self.team, file = %path.display(), copy = %copy.display(),
                    rebuilt, "garbage .highwatermark quarantined and rebuilt");
                Ok((rebuilt, Some(copy)))
            }
        }
    }

    fn raise_mark(&self, to: u64, list: &ListLock) -> Result<(), TaskError> {
        if to > self.mark(list)?.0 {
            self.write_mark(to)?;
        }
        self.record_issued(to)
    }

    /// The highest id swarm recorded as issued (0 when there is no record,
    /// or one that does not read: the other two sources still count).
    fn read_issued(&self) -> u64 {
        let Ok(path) = self.root.issued_mark(&self.team) else {
            return 0;
        };
        match atomic_file::read_optional(&path) {
            Ok(None) => 0,
            Ok(Some(bytes)) => std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .filter(|n| *n <= MAX_ID)
                .unwrap_or_else(|| {
                    tracing::warn!(team = %self.team, file = %path.display(),
                        "the record of issued task ids does not read; the next create rewrites it");
                    0
                }),
            Err(e) => {
                tracing::warn!(team = %self.team, file = %path.display(), error = %e,
                    "cannot read the record of issued task ids");
                0
            }
        }
    }

    /// Raises the record of issued ids to `n` (never lowers it). Durable:
    /// it is what keeps a deleted id from coming back. Under the list lock.
    fn record_issued(&self, n: u64) -> Result<(), TaskError> {
        if n <= self.read_issued() {
            return Ok(());
        }
        let path = self
            .root
            .issued_mark(&self.team)
            .map_err(|e| self.name_err(e))?;
        if let Some(parent) = path.parent() {
            atomic_file::ensure_dir(parent)
                .map_err(|e| self.io_err("create swarm's board directory", parent, e))?;
        }
        atomic_file::write_atomic(&path, n.to_string().as_bytes())
            .map_err(|e| self.io_err("record the highest task id issued", &path, e))
    }

    fn write_mark(&self, n: u64) -> Result<(), TaskError> {
        let path = self.mark_path()?;
        atomic_file::write_atomic(&path, n.to_string().as_bytes())
            .map_err(|e| self.io_err("write the high-water mark", &path, e))
    }

    fn write(&self, task: &Task) -> Result<(), TaskError> {
        let dir = self.dir()?;
        atomic_file::ensure_dir(&dir)
            .map_err(|e| self.io_err("create the task directory", &dir, e))?;
        let path = self.path(&task.id)?;
        atomic_file::write_atomic(&path, &task.to_file_bytes())
            .map_err(|e| self.io_err(format!("write task {}", task.id), &path, e))
    }

    fn lock_list(&self) -> Result<ListLock, TaskError> {
        let dir = self.dir()?;
        atomic_file::ensure_dir(&dir)
            .map_err(|e| self.io_err("create the task directory", &dir, e))?;
        let file = self
            .root
            .task_list_lock_file(&self.team)
            .map_err(|e| self.name_err(e))?;
        atomic_file::create_new(&file, b"")
            .map_err(|e| self.io_err("create the task list lock file", &file, e))?;
        FileLock::acquire_dir(&crate::atomic_file::lock_dir_for(&file), self.lock_timeout)
            .map(ListLock)
            .map_err(|error| TaskError::Lock {
                team: self.team.clone(),
                what: "the task list".into(),
                error,
            })
    }

    fn lock_task(&self, id: &str) -> Result<FileLock, TaskError> {
        self.lock_task_within(id, self.lock_timeout)
    }

    /// The task's lock, waiting at most `wait` (zero: one try).
    fn lock_task_within(&self, id: &str, wait: Duration) -> Result<FileLock, TaskError> {
        let path = self.path(id)?;
        FileLock::acquire(&path, wait).map_err(|error| TaskError::Lock {
            team: self.team.clone(),
            what: format!("task {id}"),
            error,
        })
    }

    fn check_id(&self, id: &str) -> Result<u64, TaskError> {
        parse_id(id).ok_or_else(|| TaskError::InvalidId {
            team: self.team.clone(),
            id: id.to_string(),
        })
    }

    /// The file of a task; the id is checked first, so it is never a path.
    fn path(&self, id: &str) -> Result<PathBuf, TaskError> {
        self.check_id(id)?;
        self.root.task(&self.team, id).map_err(|e| self.name_err(e))
    }

    fn mark_path(&self) -> Result<PathBuf, TaskError> {
        self.root
            .highwatermark(&self.team)
            .map_err(|e| self.name_err(e))
    }

    /// Refuses an id whose file does not exist.
    fn require(&self, id: &str) -> Result<(), TaskError> {
        if fs::symlink_metadata(self.path(id)?).is_err() {
            return Err(self.not_found(id)?);
        }
        Ok(())
    }

    fn not_found(&self, id: &str) -> Result<TaskError, TaskError> {
        Ok(TaskError::NotFound {
            team: self.team.clone(),
            id: id.to_string(),
            path: self.path(id)?,
        })
    }

    fn corrupt(
        &self,
        id: &str,
        reason: String,
        quarantined: PathBuf,
    ) -> Result<TaskError, TaskError> {
        Ok(TaskError::Corrupt {
            team: self.team.clone(),
            id: id.to_string(),
            path: self.path(id)?,
            reason,
            quarantined,
        })
    }

    fn name_err(&self, error: crate::names::NameError) -> TaskError {
        TaskError::Name {
            team: self.team.clone(),
            error,
        }
    }

    fn io_err(&self, what: impl Into<String>, path: &Path, error: io::Error) -> TaskError {
        TaskError::Io {
            team: self.team.clone(),
            what: what.into(),
            path: path.to_path_buf(),
            error,
        }
    }
}
