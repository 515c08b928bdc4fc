//! Claims: the one operation that must have exactly one winner among any
//! number of racing threads and processes. The decision is always made under
//! the task's own lock on a fresh read, with the checks of
//! [`rules::check_claim`]; a claim without id walks the candidates in id
//! order and moves on when it loses a race. A claimant that runs only
//! commands (a shell teammate, [`Takes::Commands`]) passes over a task that
//! carries none, which stays on the board for another teammate: the index
//! says which open tasks carry one, so it reads no more files for that.

use super::{ListLock, Loaded, TaskError, TaskStore};
use crate::atomic_file::{FileLock, LockError};
use crate::tasks::cache::Stamp;
use crate::tasks::index::{self, Candidate, Open};
use crate::tasks::rules::{self, Refusal, Takes};
use crate::tasks::task::{Status, Task, parse_id};
use std::cell::Cell;
use std::collections::HashMap;
use std::fs;
use std::time::Duration;

/// The outcome of a claim. A successful claim is an owner change: the
/// claimant is owed a `task_assignment` unless it is the one who asked.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per claim call; boxing would only burden every caller"
)]
pub enum Claim {
    Claimed(Task),
    Refused(Refusal),
}

/// One candidate of a claim without id.
#[allow(
    clippy::large_enum_variant,
    reason = "short-lived, never stored in bulk"
)]
enum Attempt {
    Won(Task),
    /// Gone, taken, blocked or unreadable by now.
    Lost,
    /// Its lock was not free within the wait.
    Busy,
}

impl TaskStore {
    /// Claims task `id`, or with `None` the lowest-id pending, ownerless,
    /// unblocked task. Exactly one of any number of racing claimants (threads
    /// or processes) wins a task: the decision is made under the task's lock
    /// on a fresh read. With `busy_check` the list lock is held throughout and
    /// a claimant that owns another open task is refused.
    pub fn claim(
        &self,
        id: Option<&str>,
        claimant: &str,
        busy_check: bool,
    ) -> Result<Claim, TaskError> {
        self.claim_as(id, claimant, busy_check, Takes::Any)
    }

    /// [`TaskStore::claim`] by a claimant that takes only some tasks
    /// (`takes`): one it does not take is refused by id
    /// ([`Refusal::NoCommand`]) and passed over without, left as it was.
    pub fn claim_as(
        &self,
        id: Option<&str>,
        claimant: &str,
        busy_check: bool,
        takes: Takes,
    ) -> Result<Claim, TaskError> {
        if let Some(id) = id {
            self.check_id(id)?;
        }
        let list = if busy_check {
            Some(self.lock_list()?)
        } else {
            None
        };
        match id {
            Some(id) => self.claim_one(id, claimant, list.as_ref(), takes),
            None => self.claim_next(claimant, list.as_ref(), takes),
        }
    }

    fn claim_one(
        &self,
        id: &str,
        claimant: &str,
        list: Option<&ListLock>,
        takes: Takes,
    ) -> Result<Claim, TaskError> {
        if fs::symlink_metadata(self.path(id)?).is_err() {
            return Ok(Claim::Refused(Refusal::NotFound));
        }
        let busy = match list {
            Some(l) => rules::owned_open(claimant, &self.scan(Some(l))?.tasks, id),
            None => Vec::new(),
        };
        let (_lock, task) = self.locked_read(id, list)?;
        let Some(mut task) = task else {
            return Ok(Claim::Refused(Refusal::NotFound));
        };
        let blockers = self.open_blockers(&task)?;
        if let Err(refusal) = rules::check_claim(Some(&task), claimant, blockers, busy) {
            return Ok(Claim::Refused(refusal));
        }
        if !takes.takes(&task) {
            return Ok(Claim::Refused(Refusal::NoCommand));
        }
        rules::claim(&mut task, claimant);
        self.write(&task)?;
        Ok(Claim::Claimed(task))
    }

    /// Picks candidates from a snapshot (a young board index when no list
    /// lock is held, then a fresh look before saying "nothing claimable");
    /// each is
    /// re-checked under its own lock, in id order, so a claimant that loses
    /// a race on one candidate moves on to the next.
    fn claim_next(
        &self,
        claimant: &str,
        list: Option<&ListLock>,
        takes: Takes,
    ) -> Result<Claim, TaskError> {
        let asked = index::now_ns();
        let mut tried = None;
        if list.is_none()
            && let Some((began, open)) = self.suggestions()?
        {
            if let Some(task) = self.claim_from(&open, claimant, takes)? {
                return Ok(Claim::Claimed(task));
            }
            tried = Some(began);
        }
        // The candidates ran out: a look that began after this claim did
        // decides, shared with the claimants that lost the same race (if
        // this claim already lost that look's candidates, its own does).
        if list.is_none()
            && let Some((began, open)) = self.open_since(asked)?
        {
            if !open.iter().any(|o| o.claimable && takes_open(takes, o)) {
                return Ok(Claim::Refused(Refusal::NothingClaimable));
            }
            if tried != Some(began)
                && let Some(task) = self.claim_from(&open, claimant, takes)?
            {
                return Ok(Claim::Claimed(task));
            }
        }
        let snapshot = self.scan(list)?.tasks;
        if list.is_some() {
            let busy = rules::owned_open(claimant, &snapshot, "");
            if !busy.is_empty() {
                return Ok(Claim::Refused(Refusal::Busy { owns: busy }));
            }
        }
        Ok(
            match self.claim_among(&claimable(&snapshot), claimant, list, None, takes)? {
                Some(task) => Claim::Claimed(task),
                None => Claim::Refused(Refusal::NothingClaimable),
            },
        )
    }

    /// Tries `candidates` in id order. With `lower` (candidates from an
    /// index, not a fresh look) it stops, answering `None`, at the first
    /// candidate below which some task may have become claimable since.
    fn claim_among(
        &self,
        candidates: &[Candidate],
        claimant: &str,
        list: Option<&ListLock>,
        lower: Option<&Lower>,
        takes: Takes,
    ) -> Result<Option<Task>, TaskError> {
        // First pass: only candidates whose lock is free at once. A held lock
        // most likely means another claimant is taking that very task, so
        // queueing behind it would only form a convoy; come back to it last.
        let mut deferred = Vec::new();
        for c in candidates {
            // As the board last showed it; checked again under its lock.
            if takes == Takes::Commands && !c.command {
                continue;
            }
            if let Some(lower) = lower
                && !lower.unchanged_below(self, c.id)?
            {
                return Ok(None);
            }
            let id = c.id.to_string();
            // Racing claimants walk the same list: a look without the lock
            // (one `stat` when unchanged) skips what was taken meanwhile.
            let unchanged = c.seen.is_some() && self.stamp(&id)? == c.seen;
            if !unchanged {
                let now = self.peek(c.id)?;
                if now.is_none_or(|t| t.status != Status::Pending || t.owner.is_some()) {
                    continue;
                }
            }
            match self.try_candidate(&id, claimant, list, Duration::ZERO, takes)? {
                Attempt::Won(task) => return Ok(Some(task)),
                Attempt::Lost => {}
                Attempt::Busy => deferred.push(id),
            }
        }
        for id in deferred {
            // Its holder most likely took it: wait for the holder to let go
            // (a shared hold, granted to every waiter at once) and look
            // without the lock. Queueing for the lock itself, each claimant
            // that lost made and removed the lock directory in turn (a third
            // of the CPU of 100 runtimes woken for one freed task).
            if self.taken_meanwhile(&id)? {
                continue;
            }
            match self.try_candidate(&id, claimant, list, self.lock_timeout, takes)? {
                Attempt::Won(task) => return Ok(Some(task)),
                // A timeout with a real wait is an error, returned above.
                Attempt::Lost | Attempt::Busy => {}
            }
        }
        Ok(None)
    }

    /// Whether candidate `id`, whose lock was held, is no longer pending and
    /// ownerless once no swarm process holds its lock (waiting for that at
    /// most the lock timeout; a Claude Code holder is not waited for here).
    fn taken_meanwhile(&self, id: &str) -> Result<bool, TaskError> {
        let path = self.path(id)?;
        let held =
            FileLock::wait_shared(&path, self.lock_timeout).map_err(|error| TaskError::Lock {
                team: self.team.clone(),
                what: format!("task {id}"),
                error,
            })?;
        let Some(_shared) = held else {
            return Ok(false);
        };
        let now = self.peek(self.check_id(id)?)?;
        Ok(now.is_none_or(|t| t.status != Status::Pending || t.owner.is_some()))
    }

    /// Claims one candidate of a claim without id if, under its lock and on
    /// a fresh read, it is still pending, ownerless and unblocked.
    fn try_candidate(
        &self,
        id: &str,
        claimant: &str,
        list: Option<&ListLock>,
        wait: Duration,
        takes: Takes,
    ) -> Result<Attempt, TaskError> {
        let (_lock, task) = match self.locked_read_within(id, list, wait) {
            Ok(found) => found,
            Err(TaskError::Corrupt { .. }) => return Ok(Attempt::Lost),
            Err(TaskError::Lock {
                error: LockError::Timeout { .. },
                ..
            }) if wait.is_zero() => {
                return Ok(Attempt::Busy);
            }
            Err(e) => return Err(e),
        };
        let Some(mut task) = task else {
            return Ok(Attempt::Lost);
        };
        if task.status != Status::Pending || task.owner.is_some() || !takes.takes(&task) {
            return Ok(Attempt::Lost);
        }
        if !self.open_blockers(&task)?.is_empty() {
            return Ok(Attempt::Lost);
        }
        rules::claim(&mut task, claimant);
        self.write(&task)?;
        Ok(Attempt::Won(task))
    }

    /// Task file `id` as it reads now, without salvaging a corrupt one:
    /// what the team watcher's dispatcher (`teammate::dispatch`) learns of
    /// a file it got an event for.
    pub(crate) fn load_task(&self, id: &str) -> Result<Loaded, TaskError> {
        self.load(id)
    }

    /// The lowest candidate of an index's open tasks this claimant wins,
    /// each checked afresh under its lock, while no task below it can have
    /// become claimable since the index was taken ([`Lower`]).
    fn claim_from(
        &self,
        open: &[Open],
        claimant: &str,
        takes: Takes,
    ) -> Result<Option<Task>, TaskError> {
        let candidates: Vec<Candidate> = open
            .iter()
            .filter(|o| o.claimable)
            .map(|o| Candidate {
                id: o.id,
                seen: o.seen,
                command: o.command,
            })
            .collect();
        let lower = Lower::new(open);
        self.claim_among(&candidates, claimant, None, Some(&lower), takes)
    }

    /// The blockers of `task` that are still open, from fresh reads. A
    /// blocker that cannot be read counts as open: claiming too early is the
    /// worse mistake.
    fn open_blockers(&self, task: &Task) -> Result<Vec<String>, TaskError> {
        let mut status = HashMap::new();
        for b in &task.blocked_by {
            if parse_id(b).is_none() {
                continue;
            }
            match self.load(b)? {
                Loaded::Missing => {}
                Loaded::Found(t) => {
                    status.insert(b.as_str(), t.status);
                }
                Loaded::Corrupt(_) => {
                    status.insert(b.as_str(), Status::Pending);
                }
            }
        }
        Ok(rules::open_blockers(task, |b| status.get(b).copied()))
    }
}

/// The claimable tasks of a fresh snapshot (sorted by id), in id order.
pub(super) fn claimable(snapshot: &[Task]) -> Vec<Candidate> {
    let status_of = |b: &str| {
        let n = parse_id(b)?;
        let at = snapshot.binary_search_by_key(&n, Task::number).ok()?;
        Some(snapshot[at].status)
    };
    snapshot
        .iter()
        .filter(|t| rules::is_claimable(t, status_of))
        .map(|t| Candidate {
            id: t.number(),
            seen: None,
            command: t.command().is_some(),
        })
        .collect()
}

/// Whether an open task of the index is one `takes` takes.
fn takes_open(takes: Takes, o: &Open) -> bool {
    takes == Takes::Any || o.command
}

/// The open tasks of an index a claim walks: those not claimable then are
/// vouched for in id order, so that a candidate is taken only while no task
/// below it can have become claimable since: one that changed is read again
/// and must not be pending and ownerless now; a blocked one's blockers that
/// changed must still be open. Else a fresh look decides.
pub(super) struct Lower<'a> {
    open: &'a [Open],
    /// How many of `open` are vouched for.
    done: Cell<usize>,
}

impl<'a> Lower<'a> {
    pub(super) fn new(open: &'a [Open]) -> Lower<'a> {
        Lower {
            open,
            done: Cell::new(0),
        }
    }

    /// Whether no task below `id` that was open and unclaimable when the
    /// index was taken can be claimable now.
    fn unchanged_below(&self, store: &TaskStore, id: u64) -> Result<bool, TaskError> {
        let mut k = self.done.get();
        while let Some(o) = self.open.get(k).filter(|o| o.id < id) {
            if !o.claimable && !self.still_unclaimable(store, o)? {
                return Ok(false);
            }
            k += 1;
            self.done.set(k);
        }
        Ok(true)
    }

    fn still_unclaimable(&self, store: &TaskStore, o: &Open) -> Result<bool, TaskError> {
        if !self.same(store, o.id, o.seen)? {
            let now = store.peek(o.id)?;
            if now.is_some_and(|t| t.status == Status::Pending && t.owner.is_none()) {
                return Ok(false);
            }
            // Taken, finished or gone: its blockers no longer matter.
            return Ok(true);
        }
        for &b in &o.blockers {
            let Ok(at) = self.open.binary_search_by_key(&b, |x| x.id) else {
                continue; // not open then: it was not what blocked this one
            };
            if !self.same(store, b, self.open[at].seen)?
                && !store
                    .peek(b)?
                    .is_some_and(|t| t.status != Status::Completed)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether task `id`'s file is the version the index read (a settled
    /// stamp, so no later write can have left it as it is).
    fn same(&self, store: &TaskStore, id: u64, seen: Option<Stamp>) -> Result<bool, TaskError> {
        Ok(seen.is_some() && store.stamp(&id.to_string())? == seen)
    }
}
