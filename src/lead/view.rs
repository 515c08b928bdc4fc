//! The team as the lead shows it ([`TeamView`]), kept up to date from what
//! changed instead of rebuilt from every file on every event.
//!
//! - The board: a watcher on `tasks/<team>/` names the task files that
//!   changed ([`BoardChanges`], in the lead's [`Shared`]); only those are
//!   read again, each through [`TaskStore::get`] (so an unreadable file is
//!   quarantined exactly as a full listing would). An event that names no
//!   file (an overflow, an error), a lead without a working watcher, or a
//!   failed read makes the next refresh a full listing: when unsure, rebuild.
//!   The view's [`Board`] is shared, not copied: it is built again (from
//!   the kept tasks' `Arc`s, no task cloned) only when a task changed since
//!   the last view, and the views in between hand out the same one.
//! - The roster and the inboxes: each file is read again only when its
//!   `Stamp` changed (inboxes are replaced by rename, so every write is a
//!   new inode; the roster is written in place, so a stamp too recent to be
//!   trusted, within [`SETTLE`] of now, is read again next time).
//! - The lead's inbox as shown: the newest [`INBOX_SHOWN`] consumed entries
//!   (read from the history once, then the entries the lead consumes
//!   itself, which it hands over in [`Shared::consumed`]) and the unread
//!   ones.
//!
//! [`member_row`] gathers one teammate's row; a new per-member column goes
//! there.

use super::{Seen, Shared};
use crate::mailbox::{Entry, EntryKeyRef};
use crate::names::LEAD_NAME;
use crate::protocol::Message;
use crate::tasks::cache::Stamp;
use crate::tasks::task::task_file_id;
use crate::tasks::{Task, TaskError, TaskStore};
use crate::team::status::{Facts, PaneSeen, recorded_exit};
use crate::team::{Member, SwarmField, Team, TeamFile};
use crate::tui::state::Board;
use crate::tui::{MemberRow, MemberStatus, PendingRequest, RequestKind, TeamView};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// How many consumed lead messages the dialog shows.
pub const INBOX_SHOWN: usize = 200;

/// A file stamp younger than this may hide a second write in the same
/// timestamp tick (file times advance by the kernel's coarse clock): such a
/// file is read again next time rather than trusted.
pub const SETTLE: Duration = Duration::from_millis(50);

/// Which task files changed since the view last looked.
#[derive(Debug)]
pub struct BoardChanges {
    ids: BTreeSet<u64>,
    /// Read the whole board again.
    all: bool,
    /// A watcher feeds these; without one every refresh is a full listing.
    watched: bool,
}

impl Default for BoardChanges {
    fn default() -> Self {
        BoardChanges {
            ids: BTreeSet::new(),
            all: true,
            watched: false,
        }
    }
}

impl BoardChanges {
    /// Task file `id` changed (written, replaced, removed).
    pub fn task(&mut self, id: u64) {
        self.ids.insert(id);
    }

    /// Something changed that no file name says: read everything again.
    pub fn unsure(&mut self) {
        self.all = true;
    }

    /// A watcher feeds these from now on; whatever happened before it
    /// began is read whole once.
    pub fn watched(&mut self) {
        self.watched = true;
        self.all = true;
    }

    /// The watcher stopped (its directory went): every refresh reads the
    /// whole board again.
    pub fn unwatched(&mut self) {
        self.watched = false;
        self.all = true;
    }

    /// What changed since the last call; everything when no watcher runs.
    pub(super) fn take(&mut self) -> (bool, BTreeSet<u64>) {
        let all = std::mem::replace(&mut self.all, false) || !self.watched;
        (all, std::mem::take(&mut self.ids))
    }

    /// Records what one file event on the task directory `dir` says;
    /// false when it concerns no task file (a lock, a temp file, a read).
    pub fn note_event(&mut self, dir: &Path, event: &notify::Event) -> bool {
        use notify::EventKind;
        use notify::event::{AccessKind, AccessMode};
        match event.kind {
            // Reads (the view's own among them) change nothing.
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => {}
            EventKind::Access(_) => return false,
            _ => {}
        }
        if event.need_rescan() || event.paths.is_empty() {
            self.unsure();
            return true;
        }
        let mut any = false;
        for p in &event.paths {
            if p == dir {
                self.unsure(); // the directory itself went or moved
                return true;
            }
            if let Some(id) = p
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(task_file_id)
            {
                self.task(id);
                any = true;
            }
        }
        any
    }
}

/// Starts the watcher that feeds `shared`'s [`BoardChanges`] and calls
/// `wake` after each event that concerns a task file. Dropping the returned
/// watcher stops it.
pub fn watch_board(
    dir: &Path,
    shared: std::sync::Arc<std::sync::Mutex<Shared>>,
    wake: impl Fn() + Send + 'static,
) -> notify::Result<notify::RecommendedWatcher> {
    use notify::Watcher;
    let owned = dir.to_path_buf();
    let feed = shared.clone();
    let mut w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let relevant = {
            let mut sh = feed.lock().unwrap_or_else(|e| e.into_inner());
            match &res {
                Ok(event) => sh.board.note_event(&owned, event),
                Err(_) => {
                    sh.board.unsure();
                    true
                }
            }
        };
        if relevant {
            wake();
        }
    })?;
    w.watch(dir, notify::RecursiveMode::NonRecursive)?;
    lock(&shared).board.watched();
    Ok(w)
}

/// Changes to the board past which it is built whole rather than changed
/// task by task (each change copies the board's pointers once).
const REBUILD_AFTER: usize = 32;

/// What changed on the board since the view last built it.
#[derive(Debug, Default)]
enum Changed {
    #[default]
    Nothing,
    /// These tasks (by number).
    Tasks(BTreeSet<u64>),
    /// Anything: build it whole.
    All,
}

impl Changed {
    fn task(&mut self, n: u64) {
        match self {
            Changed::Nothing => *self = Changed::Tasks(BTreeSet::from([n])),
            Changed::Tasks(ids) => {
                ids.insert(n);
            }
            Changed::All => {}
        }
    }
}

/// A value read from a file, with the stamp it was read at.
#[derive(Debug)]
struct Cached<T> {
    stamp: Option<Stamp>,
    value: T,
}

/// The file's stamp if it is old enough to be trusted, `None` when it is
/// missing, unreadable or too fresh (read it again).
fn settled_stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    let modified = meta.modified().ok()?;
    let age = SystemTime::now().duration_since(modified).ok()?;
    (age >= SETTLE).then(|| Stamp::of(&meta))
}

/// The team's files as last read, and what the board looked like.
#[derive(Debug, Default)]
pub struct TeamState {
    roster: Option<Cached<TeamFile>>,
    tasks: BTreeMap<u64, Arc<Task>>,
    /// The board the last view showed, and what changed since.
    board: Board,
    board_changed: Changed,
    unread: HashMap<String, Cached<usize>>,
    lead_unread: Option<Cached<Vec<Arc<Entry>>>>,
    /// The notice of the last refresh's trouble (an unreadable inbox).
    trouble: Vec<String>,
}

/// What the view needs besides the files.
pub struct Context<'a> {
    pub team: &'a Team,
    pub shared: &'a std::sync::Mutex<Shared>,
    pub backend_name: String,
    pub can_hide: bool,
    pub in_process: bool,
    pub notice: Option<String>,
}

impl TeamState {
    /// The roster, read again only when its file changed.
    fn roster(&mut self, team: &Team) -> Result<&TeamFile> {
        let path = team.root.config(&team.name)?;
        let stamp = settled_stamp(&path);
        let fresh = matches!((&self.roster, stamp), (Some(c), Some(s)) if c.stamp == Some(s));
        if !fresh {
            let value = team.roster().read()?;
            self.roster = Some(Cached { stamp, value });
        }
        Ok(&self.roster.as_ref().expect("just filled").value)
    }

    /// Reads again the task files that changed (all of them when unsure).
    /// A failed read leaves the board marked unsure, so nothing is missed.
    fn refresh_board(
        &mut self,
        store: &TaskStore,
        shared: &std::sync::Mutex<Shared>,
    ) -> Result<()> {
        let (all, ids) = lock(shared).board.take();
        let done = if all {
            store.list().map(|list| {
                self.replace_all(list.tasks);
                trim_heap();
            })
        } else {
            ids.iter()
                .try_for_each(|&n| match store.get(&n.to_string()) {
                    Ok(Some(t)) => {
                        // A rewrite that changed nothing (a lock's touch)
                        // keeps the board.
                        if self.tasks.get(&n).is_none_or(|old| **old != t) {
                            self.tasks.insert(n, Arc::new(t));
                            self.board_changed.task(n);
                        }
                        Ok(())
                    }
                    Ok(None) | Err(TaskError::Corrupt { .. }) => {
                        if self.tasks.remove(&n).is_some() {
                            self.board_changed.task(n);
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                })
        };
        if done.is_err() {
            lock(shared).board.unsure();
        }
        Ok(done?)
    }

    /// The board becomes `tasks` (a full listing); a task equal to the one
    /// kept keeps its `Arc`, so a listing that changed nothing keeps the
    /// shared board.
    fn replace_all(&mut self, tasks: Vec<Task>) {
        let mut old = std::mem::take(&mut self.tasks);
        let mut changed = false;
        self.tasks = tasks
            .into_iter()
            .map(|t| {
                let n = t.number();
                let task = match old.remove(&n) {
                    Some(kept) if *kept == t => kept,
                    _ => {
                        changed = true;
                        Arc::new(t)
                    }
                };
                (n, task)
            })
            .collect();
        if changed || !old.is_empty() {
            self.board_changed = Changed::All;
        }
    }

    /// The board as last refreshed, shared: changed task by task when a
    /// few tasks changed since the last call ([`Board::with_task`]), built
    /// again after a full listing or many changes.
    fn board(&mut self) -> Board {
        match std::mem::take(&mut self.board_changed) {
            Changed::Nothing => {}
            Changed::Tasks(ids) if ids.len() <= REBUILD_AFTER => {
                for n in ids {
                    self.board = self.board.with_task(n, self.tasks.get(&n).cloned());
                }
            }
            Changed::Tasks(_) | Changed::All => {
                self.board = Board::new(self.tasks.values().cloned());
            }
        }
        self.board.clone()
    }

    /// `name`'s unread count, its inbox read again only when it changed.
    fn unread_of(&mut self, team: &Team, name: &str) -> Result<usize> {
        let mb = team.mailbox();
        let stamp = settled_stamp(&mb.inbox_path(name)?);
        if let Some(c) = self.unread.get(name)
            && stamp.is_some()
            && c.stamp == stamp
        {
            return Ok(c.value);
        }
        let value = mb
            .read(name)?
            .entries
            .iter()
            .filter(|e| e.is_unread())
            .count();
        self.unread
            .insert(name.to_string(), Cached { stamp, value });
        Ok(value)
    }

    /// The lead's newest [`INBOX_SHOWN`] unread entries, its inbox read again
    /// only when it changed.
    fn lead_unread(&mut self, team: &Team) -> Result<Vec<Arc<Entry>>> {
        let mb = team.mailbox();
        let stamp = settled_stamp(&mb.inbox_path(LEAD_NAME)?);
        if let Some(c) = &self.lead_unread
            && stamp.is_some()
            && c.stamp == stamp
        {
            return Ok(c.value.clone());
        }
        let read = mb.read(LEAD_NAME)?.entries;
        let large = read.len() > INBOX_SHOWN;
        let mut value: Vec<Arc<Entry>> = read
            .into_iter()
            .filter(Entry::is_unread)
            .map(Arc::new)
            .collect();
        // The dialog shows the newest: thousands of unread entries (a
        // burst the lead has not consumed yet) are not all kept and copied
        // into every view.
        if value.len() > INBOX_SHOWN {
            value.drain(..value.len() - INBOX_SHOWN);
            value.shrink_to_fit();
        }
        if large {
            trim_heap();
        }
        self.lead_unread = Some(Cached {
            stamp,
            value: value.clone(),
        });
        Ok(value)
    }

    /// The team as it is now.
    pub fn view(&mut self, cx: &Context<'_>) -> Result<TeamView> {
        let team = cx.team;
        let tf = self.roster(team)?.clone();
        self.refresh_board(&team.tasks(), cx.shared)?;
        let mut lead_inbox = consumed_shown(team, cx.shared)?;
        lead_inbox.extend(self.lead_unread(team)?);
        self.trouble.clear();
        let mut unread = Vec::new();
        for m in tf.teammates() {
            // An inbox that cannot be read shows 0 unread and says so in
            // the notice, never a silent 0.
            unread.push(self.unread_of(team, &m.name).unwrap_or_else(|e| {
                self.trouble
                    .push(format!("cannot read @{}'s inbox: {e}", m.name));
                0
            }));
        }
        let tasks = self.board();
        let owners = tasks.owners();
        let sh = lock(cx.shared);
        let mut members: Vec<_> = tf
            .teammates()
            .zip(unread)
            .map(|(m, unread)| member_row(m, &sh, unread, owners.current(&m.name)))
            .collect();
        crate::tui::state::annotate(
            &mut members,
            team,
            owners,
            crate::team::status::stall_after(&tf),
        );
        let notice = self
            .trouble
            .first()
            .cloned()
            .or_else(|| cx.notice.clone())
            .or_else(|| sh.events.last().cloned());
        Ok(TeamView {
            team: team.name.clone(),
            backend_name: cx.backend_name.clone(),
            members,
            tasks,
            lead_inbox,
            requests: pending_requests(&sh),
            notice,
            can_hide: cx.can_hide,
            in_process: cx.in_process,
        })
    }

    /// The board as last refreshed, in id order.
    pub fn tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.values().map(|t| &**t)
    }

    /// Refreshes the roster and the board (for the plain status view).
    pub fn refresh(&mut self, team: &Team, shared: &std::sync::Mutex<Shared>) -> Result<TeamFile> {
        let tf = self.roster(team)?.clone();
        self.refresh_board(&team.tasks(), shared)?;
        Ok(tf)
    }
}

/// Hands the heap's free pages back to the system after a full listing:
/// parsing every task file leaves megabytes freed between the kept tasks,
/// which glibc would otherwise hold on to (the lead's RSS at 10,000 tasks).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim_heap() {
    // SAFETY: malloc_trim takes no pointer and only walks the allocator's
    // own free lists, under its locks; it is safe from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim_heap() {}

pub(super) fn lock(shared: &std::sync::Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// The newest consumed entries of the lead's inbox: read from the history
/// the first time, then kept from what the lead hands over as it consumes.
fn consumed_shown(team: &Team, shared: &std::sync::Mutex<Shared>) -> Result<Vec<Arc<Entry>>> {
    if let Some(ring) = &lock(shared).consumed {
        return Ok(ring.iter().cloned().collect());
    }
    let mut history = team.mailbox().history(LEAD_NAME)?;
    if history.len() > INBOX_SHOWN {
        history.drain(..history.len() - INBOX_SHOWN);
    }
    let mut sh = lock(shared);
    // Entries consumed while the history was read were handed over
    // meanwhile (or are in the history): keep each once.
    let ring = sh.consumed.get_or_insert_with(VecDeque::new);
    let seen: HashSet<EntryKeyRef<'_>> = ring.iter().map(|e| e.key_ref()).collect();
    let mut all: VecDeque<Arc<Entry>> = history
        .into_iter()
        .filter(|e| !seen.contains(&e.key_ref()))
        .map(Arc::new)
        .collect();
    all.extend(ring.drain(..));
    while all.len() > INBOX_SHOWN {
        all.pop_front();
    }
    all.shrink_to_fit();
    *ring = all;
    Ok(ring.iter().cloned().collect())
}

/// Hands entries the lead just consumed to the view (kept only once the
/// view has read the history; before that the history holds them).
pub fn consumed(shared: &mut Shared, entries: &[Entry]) {
    if let Some(ring) = &mut shared.consumed {
        // Only the newest can be shown: a batch of thousands must not
        // leave the ring that large (it keeps its capacity).
        let newest = &entries[entries.len().saturating_sub(INBOX_SHOWN)..];
        // Identities borrowed: copying the texts of the 200 kept entries
        // for each message consumed was a twentieth of the lead's work.
        let seen: HashSet<EntryKeyRef<'_>> = ring.iter().map(|e| e.key_ref()).collect();
        let fresh: Vec<Arc<Entry>> = newest
            .iter()
            .filter(|e| !seen.contains(&e.key_ref()))
            .map(|e| Arc::new(e.clone()))
            .collect();
        ring.extend(fresh);
        while ring.len() > INBOX_SHOWN {
            ring.pop_front();
        }
    }
    // Reading and rewriting an inbox this large left megabytes freed
    // between what is kept, as a full listing does.
    if entries.len() > INBOX_SHOWN {
        trim_heap();
    }
}

/// One teammate's row: the roster's record, the supervisor's knowledge of
/// its pane and messages, its unread count and current task.
pub fn member_row(m: &Member, sh: &Shared, unread: usize, current: Option<&Task>) -> MemberRow {
    let current = current.map(|t| (t.id.clone(), t.subject.clone()));
    let status = MemberStatus::of(&Facts {
        never_started: crate::team::status::never_started(m),
        recorded_exit: recorded_exit(m),
        pane: match sh.seen.get(&m.name) {
            Some(Seen::Running) => PaneSeen::Running,
            Some(Seen::Dead(code)) => PaneSeen::Dead(*code),
            Some(Seen::Lost) => PaneSeen::Dead(None),
            None => PaneSeen::Unknown,
        },
        active: m.is_active == Some(true),
        has_task: current.is_some(),
        waiting: sh.requests.iter().any(|r| r.from == m.name),
        stopping: sh.stopping.get(&m.name).map(Instant::elapsed),
    });
    let mut row = MemberRow::new(m.name.clone());
    row.color = m.color.clone();
    row.agent = m.agent_label().unwrap_or("-").to_string();
    row.model = m.model.clone();
    row.status = status;
    row.current_task = current;
    row.last_activity = sh.heard.get(&m.name).map(Instant::elapsed);
    row.unread = unread;
    row.hidden = m.swarm_field(SwarmField::Hidden).is_some();
    row.apart = m.apart().map(str::to_owned);
    row.mode = m.mode.clone();
    row.worktree = crate::worktree::member_line_cached(m);
    row
}

/// The requests waiting for the user, oldest first.
fn pending_requests(sh: &Shared) -> Vec<PendingRequest> {
    sh.requests
        .iter()
        .map(|r| PendingRequest {
            id: r.id.clone(),
            from: r.from.clone(),
            kind: match &r.message {
                Message::PlanApprovalRequest(p) => RequestKind::Plan {
                    content: p.plan_content.clone(),
                },
                Message::PermissionRequest(p) => RequestKind::Permission {
                    tool: p.tool_name.clone(),
                    description: p.description.clone(),
                },
                other => RequestKind::Plan {
                    content: other.one_line(),
                },
            },
            age: r.age(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
