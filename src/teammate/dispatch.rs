//! Claimable tasks handed to idle runtimes one at a time: the team
//! watcher's dispatcher ([`Dispatch`]) and a runtime's side of it
//! ([`Available`]). Issue 25, item 1: a claimable task woke every idle
//! runtime and each looked at the whole board (10,000 `statx` a look),
//! so draining a board of B tasks cost about B².
//!
//! The files, under the team's `<state>/runtime/` (one owner: this module):
//!
//! * `<member>.idle.json`: the runtime is idle and takes tasks while it
//!   holds an exclusive OS lock on it (the kernel lets go when it dies);
//!   it writes what it takes (`any` or `commands`) on each turn to idle,
//!   so the team watcher, which watches this directory, hears of it. A
//!   busy or dead runtime holds no lock: its file stays and counts for
//!   nothing.
//! * `<member>.turn`: the id of the task offered to it, written by the
//!   team watcher before it rings that member's bell; the runtime reads
//!   and removes it and claims that task by id (its own lock, a fresh
//!   read, O(1) task files), so exactly one claimant wins it as before.
//!
//! The team watcher keeps the board's open tasks in memory: read whole
//! when it starts watching (and after an overflow, and as the slow check
//! below), then only the task files whose events it gets, Claude Code's
//! in-place writes included. A completion unblocks what its model says
//! waited for it, with no look at the board. Each claimable task gets
//! one offer, in id order, to an idle runtime that takes it and holds no
//! other offer. An offer runs out after [`OFFER_FOR`]: a task still
//! claimable then (its runtime died, went busy, or lost the file) goes to
//! another idle runtime, or to the same again when there is none. So a
//! teammate never sits idle beside a claimable task for longer than that
//! while a team watcher runs; and as slow safety nets, the watcher reads
//! the board whole every [`RECHECK_EVERY`] while it holds anything
//! claimable or any runtime idles, and a runtime whose wait ran out (or
//! that polls, having no team watcher) claims without an id, as before.

use crate::names::member_from_file_stem;
use crate::tasks::rules::Takes;
use crate::tasks::store::Loaded;
use crate::tasks::{Status, Task, TaskStore, parse_id};
use crate::team::Team;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long an offered task waits for its runtime's claim before it is
/// offered again.
pub const OFFER_FOR: Duration = Duration::from_secs(1);

/// How often the team watcher reads the board whole while a runtime
/// idles: a write that reached it without an event (none is known) waits
/// this long at worst.
pub const RECHECK_EVERY: Duration = Duration::from_secs(60);

const IDLE_SUFFIX: &str = ".idle.json";

/// An open task as the team watcher last read it.
#[derive(Debug, Clone, PartialEq)]
struct OpenTask {
    /// Pending and ownerless.
    free: bool,
    /// Its numeric `blockedBy` ids: it waits while one of them is open.
    blockers: Vec<u64>,
    /// It carries a command (a shell teammate takes it).
    command: bool,
    /// Pending and this member's: rung when it becomes workable.
    owner: Option<String>,
}

impl OpenTask {
    fn of(t: &Task) -> OpenTask {
        OpenTask {
            free: t.status == Status::Pending && t.owner.is_none(),
            blockers: t.blocked_by.iter().filter_map(|b| parse_id(b)).collect(),
            command: t.command().is_some(),
            owner: t
                .owner
                .as_deref()
                .filter(|_| t.status == Status::Pending)
                .map(str::to_owned),
        }
    }

    /// A file that does not read: open (it may block others, as a claim
    /// counts it), offered to nobody.
    fn unreadable() -> OpenTask {
        OpenTask {
            free: false,
            blockers: Vec::new(),
            command: false,
            owner: None,
        }
    }
}

#[derive(Debug)]
struct Offer {
    member: String,
    until: Instant,
    /// Members it was offered to before, that did not take it.
    passed: BTreeSet<String>,
}

/// The team watcher's model of the board's open tasks, and its offers.
#[derive(Debug, Default)]
pub struct Dispatch {
    open: BTreeMap<u64, OpenTask>,
    offers: BTreeMap<u64, Offer>,
    /// Open tasks that were blocked at the last look (or are owed a
    /// turn): handed to their owner, if they have one, once unblocked.
    blocked: BTreeSet<u64>,
}

impl Dispatch {
    /// Reads the board whole again; `false` (and the model kept) when it
    /// cannot be read.
    pub fn reload(&mut self, store: &TaskStore) -> bool {
        match store.list() {
            Ok(list) => {
                self.open = list
                    .tasks
                    .iter()
                    .filter(|t| t.status != Status::Completed)
                    .map(|t| (t.number(), OpenTask::of(t)))
                    .collect();
                true
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the board to offer its tasks");
                false
            }
        }
    }

    /// Reads task file `id` again after an event on it.
    pub fn changed(&mut self, store: &TaskStore, id: u64) {
        match store.load_task(&id.to_string()) {
            Ok(Loaded::Found(t)) if t.status != Status::Completed => {
                self.open.insert(id, OpenTask::of(&t));
            }
            Ok(Loaded::Found(_) | Loaded::Missing) => {
                self.open.remove(&id);
            }
            Ok(Loaded::Corrupt(_)) | Err(_) => {
                self.open.insert(id, OpenTask::unreadable());
            }
        }
    }

    /// The claimable tasks, in id order, and whether each carries a
    /// command.
    fn claimable(&self) -> Vec<(u64, bool)> {
        self.open
            .iter()
            .filter(|(_, t)| t.free && t.blockers.iter().all(|b| !self.open.contains_key(b)))
            .map(|(id, t)| (*id, t.command))
            .collect()
    }

    /// Hands each pending task that has an owner and was blocked, and is
    /// no longer (its blockers done), to its owner, as a turn (the task's
    /// id, then its bell): no offer is made for a task with an owner, and
    /// its owner's runtime, refused it while it was blocked, would
    /// otherwise sleep beside it until its own wait ran out (300 s). Only
    /// that change hands it: a task given to an owner unblocked comes with
    /// its `task_assignment` message, and one its owner ran and failed
    /// stays with it, not run again.
    fn tell_owners(&mut self, team: &Team) {
        let open = &self.open;
        let blocked_now = |t: &OpenTask| t.blockers.iter().any(|b| open.contains_key(b));
        let now = Instant::now();
        let mut handed = BTreeSet::new();
        let mut still = BTreeSet::new();
        for (id, t) in open {
            if blocked_now(t) {
                // Owned or not: it may be given to one before it frees.
                still.insert(*id);
                continue;
            }
            let Some(owner) = t.owner.as_deref() else {
                continue;
            };
            if !self.blocked.contains(id) {
                continue;
            }
            let offered = self
                .offers
                .values()
                .any(|o| o.until > now && o.member == owner);
            if offered || !handed.insert(owner) {
                // One turn file per member: told at a later call, once its
                // offer is decided or runs out.
                still.insert(*id);
                continue;
            }
            hand(team, owner, *id);
        }
        self.blocked = still;
    }

    /// Offers each claimable task that holds no live offer to one idle
    /// runtime that takes it, and rings the owner of a task of its that
    /// became workable. Returns when the first live offer runs out.
    pub fn offer(&mut self, team: &Team) -> Option<Instant> {
        self.tell_owners(team);
        let now = Instant::now();
        let claimable = self.claimable();
        self.offers
            .retain(|id, _| claimable.iter().any(|(c, _)| c == id));
        let want: Vec<(u64, bool)> = claimable
            .into_iter()
            .filter(|(id, _)| self.offers.get(id).is_none_or(|o| o.until <= now))
            .collect();
        if !want.is_empty() {
            let mut idle = idle_runtimes(team);
            idle.retain(|(m, _)| {
                !self
                    .offers
                    .values()
                    .any(|o| o.until > now && o.member == *m)
            });
            for (id, command) in want {
                let takes = |t: &Takes| command || *t == Takes::Any;
                let passed = match self.offers.get(&id) {
                    Some(o) => {
                        let mut p = o.passed.clone();
                        p.insert(o.member.clone());
                        p
                    }
                    None => BTreeSet::new(),
                };
                let pick = idle
                    .iter()
                    .position(|(m, t)| takes(t) && !passed.contains(m))
                    // Everyone idle passed it: offer it again all the same.
                    .or_else(|| idle.iter().position(|(_, t)| takes(t)));
                let Some(at) = pick else {
                    continue;
                };
                let (member, _) = idle.swap_remove(at);
                hand(team, &member, id);
                self.offers.insert(
                    id,
                    Offer {
                        member,
                        until: now + OFFER_FOR,
                        passed,
                    },
                );
            }
        }
        self.offers
            .values()
            .map(|o| o.until)
            .filter(|u| *u > now)
            .min()
    }
}

/// Writes `member`'s turn and rings its bell.
fn hand(team: &Team, member: &str, id: u64) {
    let Ok(turn) = team.root.runtime_file(&team.name, member, "turn") else {
        return;
    };
    if let Err(e) = crate::atomic_file::write_cache(&turn, id.to_string().as_bytes()) {
        tracing::warn!(%member, task = id, error = %e, "cannot offer a task");
        return;
    }
    tracing::debug!(%member, task = id, "offered");
    team.mailbox().ring(member);
}

/// The runtimes idle now (holding their idle file's lock), by name, with
/// what each takes.
fn idle_runtimes(team: &Team) -> Vec<(String, Takes)> {
    let Some(dir) = runtime_dir(team) else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut idle: Vec<(String, Takes)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let member = member_from_file_stem(name.strip_suffix(IDLE_SUFFIX)?)?;
            let mut f = File::open(e.path()).ok()?;
            if f.try_lock_shared().is_ok() {
                return None; // nobody holds it: busy, or gone
            }
            let mut what = String::new();
            f.read_to_string(&mut what).ok()?;
            let takes = if what.trim() == "commands" {
                Takes::Commands
            } else {
                Takes::Any
            };
            Some((member, takes))
        })
        .collect();
    idle.sort_by(|a, b| a.0.cmp(&b.0));
    idle
}

/// The directory of runtime files, which the team watcher watches for
/// idle files.
pub fn runtime_dir(team: &Team) -> Option<PathBuf> {
    let lock = team.root.team_watcher_lock(&team.name).ok()?;
    lock.parent().map(PathBuf::from)
}

/// A runtime's side: its idle file and lock, and its turn.
pub struct Available {
    idle: PathBuf,
    turn: PathBuf,
    takes: Takes,
    /// The idle file, locked, while the runtime is idle.
    held: Option<File>,
}

impl Available {
    pub fn new(team: &Team, me: &str, takes: Takes) -> anyhow::Result<Available> {
        Ok(Available {
            idle: team.root.runtime_file(&team.name, me, "idle.json")?,
            turn: team.root.runtime_file(&team.name, me, "turn")?,
            takes,
            held: None,
        })
    }

    /// The runtime is idle and takes tasks: locks its idle file and
    /// writes it, which the team watcher hears of. Once per turn to idle.
    pub fn idle(&mut self) {
        if self.held.is_some() {
            return;
        }
        let what: &[u8] = match self.takes {
            Takes::Any => b"any",
            Takes::Commands => b"commands",
        };
        let marked = open_private(&self.idle, false).and_then(|f| {
            f.lock()?;
            // A write of its own, closed: the event the watcher gets.
            open_private(&self.idle, true)?.write_all(what)?;
            Ok(f)
        });
        match marked {
            Ok(f) => self.held = Some(f),
            // Then no task is offered to it: its own checks still claim.
            Err(e) => tracing::warn!(file = %self.idle.display(), error = %e,
                "cannot say I am idle; tasks reach me only by my own looks"),
        }
    }

    /// The runtime works: no task is offered to it until it idles again.
    pub fn busy(&mut self) {
        self.held = None;
    }

    /// The task offered to this runtime, if any (read once).
    pub fn take_turn(&self) -> Option<u64> {
        let text = std::fs::read_to_string(&self.turn).ok()?;
        crate::dropped::ignore(
            crate::atomic_file::remove_if_there(&self.turn),
            "removing my turn",
        );
        parse_id(text.trim())
    }
}

/// Opens (creating it, 0600) a runtime file, refusing a link in its
/// place; emptied with `truncate`.
fn open_private(path: &std::path::Path, truncate: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(test)]
impl Available {
    /// As a `kill -9` leaves it: the lock let go, the idle file left.
    pub fn die(mut self) {
        self.held = None;
    }
}

impl Drop for Available {
    fn drop(&mut self) {
        if self.held.take().is_some() {
            crate::dropped::ignore(
                crate::atomic_file::remove_if_there(&self.idle),
                "removing my idle file",
            );
        }
    }
}
