//! What the TUI shows and where the user is in it: [`TeamView`], a plain-data
//! snapshot of the team the lead gathers (roster, liveness, tasks, the lead's
//! inbox, pending requests), and [`UiState`], the selection, the open modal
//! and the zoomed pane. Neither knows where the data came from, so the view
//! and the keymap stay pure functions of these two values.

use std::sync::Arc;
use std::time::Duration;

use super::chunked::Chunked;
pub use super::reading::Reading;
use crate::mailbox::Entry;
use crate::tasks::{Status, Task};
use crate::team::status::ByOwner;

/// Everything one frame shows, gathered by the lead.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TeamView {
    pub team: String,
    /// `tmux`, `in-process`, … shown in the title.
    pub backend_name: String,
    /// Teammates, in roster order; the lead is not one of them.
    pub members: Vec<MemberRow>,
    /// The board, in the order to show (the lead sorts by id).
    pub tasks: Board,
    /// The lead's inbox, newest last (shared with the lead's own copy: a
    /// snapshot copies pointers, not hundreds of messages).
    pub lead_inbox: Vec<Arc<Entry>>,
    /// Plan approvals and permission requests waiting for the user, oldest first.
    pub requests: Vec<PendingRequest>,
    /// A line from the lead (the result of the last action, an error).
    pub notice: Option<String>,
    /// The backend can hide and show panes (`h` / `H`).
    pub can_hide: bool,
    /// Panes live inside the lead: the grid and zoom views are available.
    pub in_process: bool,
}

/// The task board a view shows, shared rather than copied: the lead builds
/// a new one only when a task changed, and the views in between share it.
/// With it, built once, what each frame asks: the visible tasks (internal
/// ones left out) and how many of them are done, and each owner's tasks
/// ([`ByOwner`]). Two boards are equal when their tasks are.
#[derive(Debug, Clone, Default)]
pub struct Board {
    tasks: Chunked<Arc<Task>>,
    /// Where the visible tasks are in `tasks`.
    visible: Arc<[usize]>,
    /// Visible tasks completed.
    done: usize,
    owners: Arc<ByOwner>,
}

impl Board {
    /// The board of `tasks`, in the order to show.
    pub fn new(tasks: impl IntoIterator<Item = Arc<Task>>) -> Board {
        let tasks: Chunked<Arc<Task>> = tasks.into_iter().collect();
        let visible: Arc<[usize]> = tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.is_internal())
            .map(|(i, _)| i)
            .collect();
        let done = tasks
            .iter()
            .filter(|t| !t.is_internal() && t.status == Status::Completed)
            .count();
        let owners = Arc::new(ByOwner::of(tasks.iter()));
        Board {
            tasks,
            visible,
            done,
            owners,
        }
    }

    /// This board with task number `n` replaced by `task`, added, or
    /// (`None`) taken out: equal in every part to [`Board::new`] of the
    /// changed tasks, but built from this one. The tasks are copied as
    /// pointers; what shows, what is done and each owner's tasks are
    /// adjusted for the one task, not found again. The board must be in
    /// number order (the lead's).
    pub fn with_task(&self, n: u64, task: Option<Arc<Task>>) -> Board {
        let at = self.position(n);
        let old = at.ok().and_then(|i| self.tasks.get(i).cloned());
        if old.as_deref() == task.as_deref() {
            return self.clone();
        }
        // A task replaced copies one chunk of the board; one that comes or
        // goes moves every position after it, so the board is laid anew.
        let (tasks, place) = match (at, &task) {
            (Ok(i), Some(t)) => match self.tasks.with(i, t.clone()) {
                Some(tasks) => (tasks, None),
                None => return self.clone(),
            },
            (Ok(i), None) => {
                let rest = self.tasks.iter().enumerate().filter(|&(k, _)| k != i);
                (rest.map(|(_, t)| t.clone()).collect(), Some(i))
            }
            (Err(i), Some(t)) => {
                let (before, after) = (self.tasks.iter().take(i), self.tasks.iter().skip(i));
                let all = before.chain(std::iter::once(t)).chain(after);
                (all.cloned().collect(), Some(i))
            }
            (Err(_), None) => return self.clone(),
        };
        let shows = |t: Option<&Task>| t.is_some_and(|t| !t.is_internal());
        let (was, is) = (shows(old.as_deref()), shows(task.as_deref()));
        // Positions move only when a task comes or goes.
        let visible = if place.is_none() && old.is_some() && was == is {
            self.visible.clone()
        } else {
            tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| !t.is_internal())
                .map(|(i, _)| i)
                .collect()
        };
        let done_of = |t: Option<&Task>, shown: bool| {
            usize::from(shown && t.is_some_and(|t| t.status == Status::Completed))
        };
        let done = self.done + done_of(task.as_deref(), is) - done_of(old.as_deref(), was);
        let mut owners = self.owners.clone();
        if [old.as_deref(), task.as_deref()]
            .into_iter()
            .flatten()
            .any(ByOwner::counts)
        {
            let index = Arc::make_mut(&mut owners);
            if let Some(old) = &old {
                index.remove(old);
            }
            if let Some(t) = &task {
                index.add(t);
            }
        }
        Board {
            tasks,
            visible,
            done,
            owners,
        }
    }

    /// Whether every part of `other` (tasks, what shows, what is done,
    /// each owner's tasks) equals this board's.
    #[cfg(test)]
    pub fn same_in_every_part(&self, other: &Board) -> bool {
        self.tasks == other.tasks
            && self.visible == other.visible
            && self.done == other.done
            && self.owners == other.owners
    }

    /// Where task number `n` is (or would go), the board being in number
    /// order.
    fn position(&self, n: u64) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.tasks.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.tasks.get(mid).map_or(u64::MAX, |t| t.number()).cmp(&n) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// The tasks the board shows (internal ones left out), in order.
    pub fn visible(&self) -> impl Iterator<Item = &Task> {
        self.visible
            .iter()
            .filter_map(|&i| self.tasks.get(i))
            .map(|t| &**t)
    }

    /// How many tasks the board shows.
    pub fn visible_len(&self) -> usize {
        self.visible.len()
    }

    /// The tasks, in the order to show.
    pub fn iter(&self) -> impl Iterator<Item = &Task> {
        self.tasks.iter().map(|t| &**t)
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Each owner's task in progress and failed task.
    pub fn owners(&self) -> &ByOwner {
        &self.owners
    }

    /// Whether `other` is this very board (shared, not an equal copy).
    pub fn shares(&self, other: &Board) -> bool {
        self.tasks.ptr_eq(&other.tasks)
    }
}

impl PartialEq for Board {
    fn eq(&self, other: &Board) -> bool {
        self.shares(other) || self.tasks == other.tasks
    }
}

impl From<Vec<Task>> for Board {
    fn from(tasks: Vec<Task>) -> Board {
        Board::new(tasks.into_iter().map(Arc::new))
    }
}

impl FromIterator<Task> for Board {
    fn from_iter<I: IntoIterator<Item = Task>>(tasks: I) -> Board {
        Board::new(tasks.into_iter().map(Arc::new))
    }
}

/// One teammate's row.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberRow {
    pub name: String,
    /// Palette colour name (`blue`, `green`, …).
    pub color: Option<String>,
    /// `shell`, `claude`, `codex`, …
    pub agent: String,
    pub model: Option<String>,
    pub status: MemberStatus,
    /// `(task id, subject)` of the task it is working on.
    pub current_task: Option<(String, String)>,
    /// Time since its last message, output or task change.
    pub last_activity: Option<Duration>,
    /// Messages in its inbox it has not consumed yet.
    pub unread: usize,
    /// Its pane is hidden.
    pub hidden: bool,
    /// Where its pane went when not beside the lead (`window 2`).
    pub apart: Option<String>,
    /// Permission mode (`default`, `acceptEdits`, `plan`, `bypassPermissions`).
    pub mode: Option<String>,
    /// Why it needs the user, if it does ([`Attention::of`]).
    pub attention: Option<Attention>,
    /// How its task in progress is going ([`Progress::of`]).
    pub progress: Option<Progress>,
    /// Its worktree's branch, ahead/behind the lead's and changed files
    /// (`crate::worktree::Progress::line`), when it has one.
    pub worktree: Option<String>,
}

impl MemberRow {
    /// A running shell teammate with nothing else set; tests and the bench
    /// build on it.
    pub fn new(name: impl Into<String>) -> MemberRow {
        MemberRow {
            name: name.into(),
            color: None,
            agent: "shell".to_owned(),
            model: None,
            status: MemberStatus::Running,
            current_task: None,
            last_activity: None,
            unread: 0,
            hidden: false,
            apart: None,
            mode: None,
            attention: None,
            progress: None,
            worktree: None,
        }
    }
}

/// Fills each row's [`MemberRow::attention`] and [`MemberRow::progress`]
/// by the rules of [`crate::team::status`] (the lead calls this once per
/// snapshot, after the statuses are set). Reads the tail of each running
/// teammate's output log and its task file's time, nothing more.
/// A running teammate that printed nothing and whose task did not change
/// for `stall_after` is [`Attention::Stalled`].
pub fn annotate(
    rows: &mut [MemberRow],
    team: &crate::team::Team,
    board: &ByOwner,
    stall_after: std::time::Duration,
) {
    for row in rows {
        row.progress = Progress::of(team, &row.name, board);
        row.attention = Attention::of(&row.status, &row.name, board).or_else(|| {
            let p = row.progress.as_ref()?;
            Attention::stalled(&row.status, p, stall_after)
        });
    }
}

pub use crate::team::status::{Attention, MemberStatus, Progress};

/// A request waiting for the user's yes or no.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingRequest {
    /// The protocol request id the response must carry.
    pub id: String,
    /// The teammate asking.
    pub from: String,
    pub kind: RequestKind,
    /// Age of the request.
    pub age: Option<Duration>,
}

/// What is being asked.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestKind {
    /// A plan to approve (`plan_approval_request`): its markdown.
    Plan { content: String },
    /// A tool use to allow (`permission_request`).
    Permission { tool: String, description: String },
}

impl RequestKind {
    /// `plan` or `permission`.
    pub fn label(&self) -> &'static str {
        match self {
            RequestKind::Plan { .. } => "plan",
            RequestKind::Permission { .. } => "permission",
        }
    }
}

/// The figures of the TeamStatus line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub teammates: usize,
    pub running: usize,
    pub idle: usize,
    pub tasks_done: usize,
    pub tasks: usize,
    pub waiting: usize,
    /// Teammates that need the user ([`MemberRow::attention`]).
    pub attention: usize,
}

impl TeamView {
    /// Counts for the status line. Internal tasks (hidden from Claude Code's
    /// TaskList) are not counted.
    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            teammates: self.members.len(),
            running: 0,
            idle: 0,
            tasks_done: 0,
            tasks: 0,
            waiting: self.requests.len(),
            attention: self
                .members
                .iter()
                .filter(|m| m.attention.is_some())
                .count(),
        };
        for m in &self.members {
            match m.status {
                MemberStatus::Running => t.running += 1,
                MemberStatus::Idle => t.idle += 1,
                _ => {}
            }
        }
        t.tasks = self.tasks.visible_len();
        t.tasks_done = self.tasks.done;
        t
    }

    /// The TeamStatus line: `N teammates · R running · I idle · tasks D/T · Q waiting`.
    pub fn status_line(&self) -> String {
        self.status_line_in(usize::MAX)
    }

    /// The TeamStatus line in at most `width` cells: the parts a user
    /// needs most (how many, the board, what waits for them) kept, the
    /// running and idle counts dropped first, so a 28-column lead pane
    /// still reads whole words.
    pub fn status_line_in(&self, width: usize) -> String {
        let t = self.totals();
        let parts = [
            count(t.teammates, "teammate"),
            format!("{} running", t.running),
            format!("{} idle", t.idle),
            format!("tasks {}/{}", t.tasks_done, t.tasks),
            format!("{} waiting", t.waiting),
            if t.attention == 1 {
                "! 1 needs you".to_owned()
            } else {
                format!("! {} need you", t.attention)
            },
        ];
        // Index sets from fullest to barest; what needs the user stays
        // longest.
        let choices: [&[usize]; 5] = if t.attention > 0 {
            [
                &[0, 1, 2, 3, 4, 5],
                &[0, 1, 3, 4, 5],
                &[0, 3, 4, 5],
                &[0, 3, 5],
                &[0, 5],
            ]
        } else {
            [
                &[0, 1, 2, 3, 4],
                &[0, 1, 3, 4],
                &[0, 3, 4],
                &[0, 3],
                &[0, 3],
            ]
        };
        let join = |idx: &[usize]| {
            idx.iter()
                .map(|i| parts[*i].as_str())
                .collect::<Vec<_>>()
                .join(" · ")
        };
        choices
            .iter()
            .map(|idx| join(idx))
            .find(|line| line.chars().count() <= width)
            .unwrap_or_else(|| join(choices[4]))
    }

    /// Teammates `p` would prune ([`MemberStatus::prunable`], the rule
    /// `swarm prune` uses too).
    pub fn prunable(&self) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| {
                let has_task =
                    m.current_task.is_some() || self.tasks.owners().current(&m.name).is_some();
                m.status.prunable(has_task, m.unread)
            })
            .map(|m| m.name.clone())
            .collect()
    }

    /// The teammate called `name`.
    pub fn member(&self, name: &str) -> Option<&MemberRow> {
        self.members.iter().find(|m| m.name == name)
    }

    /// Tasks the board shows (internal ones left out).
    pub fn visible_tasks(&self) -> impl Iterator<Item = &Task> {
        self.tasks.visible()
    }
}

/// `1 teammate`, `3 teammates`: a count and its noun, agreeing.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

pub use crate::clock::age;

/// The panels Tab moves between, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Panel {
    #[default]
    Members,
    Tasks,
    Inbox,
    Requests,
}

impl Panel {
    /// The panel after this one; the requests panel only when it is
    /// shown (`requests`: some request waits).
    pub fn next(self, requests: bool) -> Panel {
        match self {
            Panel::Members => Panel::Tasks,
            Panel::Tasks => Panel::Inbox,
            Panel::Inbox if requests => Panel::Requests,
            Panel::Inbox | Panel::Requests => Panel::Members,
        }
    }
}

/// The dialog over the panels, if any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Modal {
    #[default]
    None,
    /// `Kill @name? y/N`.
    ConfirmKill { name: String },
    /// `Prune N idle teammates? y/N` with their names.
    ConfirmPrune { names: Vec<String> },
    /// A shutdown was requested; `left` counts down to zero, then `k` is offered.
    ShutdownCountdown { name: String, left: Duration },
    /// A message being typed; `to` is a name or `*`.
    Compose { to: String, text: String },
    /// A task subject being typed.
    NewTask { subject: String },
    /// `q` with in-process teammates, whose panes live in the lead:
    /// quitting ends them, so it is asked (`Quit and end N teammates? y/N`).
    ConfirmQuit { ending: usize },
    /// Every key.
    Help,
    /// A message, task or request opened with Enter, to read whole.
    Read(Reading),
}

/// How long the shutdown countdown runs before `k` is offered.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Where the user is: focused panel, selected rows, modal, zoom.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct UiState {
    pub panel: Panel,
    /// Row in the members list: 0 is the "all teammates" row, `i + 1` is
    /// `members[i]`.
    pub member_row: usize,
    /// Row in the task board (among the visible tasks).
    pub task_row: usize,
    /// Entries back from the newest in the lead's inbox (0: the newest).
    pub inbox_back: usize,
    /// Row in the requests queue.
    pub request_row: usize,
    pub modal: Modal,
    /// In-process: the teammate whose pane fills the screen, keys forwarded.
    pub zoomed: Option<String>,
    /// In-process: show every teammate's live screen in a grid.
    pub grid: bool,
    /// A line from the TUI itself (e.g. "hide is not supported").
    pub notice: Option<String>,
    /// Teammates whose kill (or prune) the user confirmed, and for how long
    /// the ladder has run: shown on their rows until they leave the roster,
    /// so a teammate that ignores SIGTERM is not silent for seconds.
    pub killing: std::collections::BTreeMap<String, Duration>,
}

impl UiState {
    /// The starting state for `view`: the first teammate selected, the grid
    /// on when the panes are in-process.
    pub fn new(view: &TeamView) -> UiState {
        UiState {
            member_row: usize::from(!view.members.is_empty()),
            grid: view.in_process,
            ..UiState::default()
        }
    }

    /// The selected teammate (none when the "all" row is selected).
    pub fn selected_member<'v>(&self, view: &'v TeamView) -> Option<&'v MemberRow> {
        self.member_row
            .checked_sub(1)
            .and_then(|i| view.members.get(i))
    }

    /// The selected request.
    pub fn selected_request<'v>(&self, view: &'v TeamView) -> Option<&'v PendingRequest> {
        view.requests.get(self.request_row)
    }

    /// Brings the state in line with a new snapshot: selections clamped, a
    /// zoom or modal about a teammate who left closed, the countdown closed
    /// when its teammate is gone.
    pub fn sync(&mut self, view: &TeamView) {
        self.member_row = self.member_row.min(view.members.len());
        self.task_row = self
            .task_row
            .min(view.tasks.visible_len().saturating_sub(1));
        self.inbox_back = self.inbox_back.min(view.lead_inbox.len().saturating_sub(1));
        self.request_row = self.request_row.min(view.requests.len().saturating_sub(1));
        if self.panel == Panel::Requests && view.requests.is_empty() {
            // The panel is no longer drawn: focus must not stay on it.
            self.panel = Panel::Members;
        }
        if let Some(z) = &self.zoomed
            && (!view.in_process || view.member(z).is_none())
        {
            self.zoomed = None;
        }
        self.sync_countdown(view);
        let gone = |name: &str| view.member(name).is_none();
        self.killing.retain(|name, _| !gone(name));
        match &self.modal {
            Modal::ConfirmKill { name } | Modal::ShutdownCountdown { name, .. } if gone(name) => {
                self.modal = Modal::None;
            }
            _ => {}
        }
    }

    /// The countdown runs on the lead's clock: what is left is the grace
    /// less the `stopping` age its row shows, so the dialog and the row
    /// never disagree, however late a tick comes.
    fn sync_countdown(&mut self, view: &TeamView) {
        if let Modal::ShutdownCountdown { name, left } = &mut self.modal
            && let Some(MemberStatus::Stopping { since }) = view.member(name).map(|m| m.status)
        {
            *left = SHUTDOWN_GRACE.saturating_sub(since);
        }
    }

    /// Advances the shutdown countdown and the kill ladders' ages by `dt`;
    /// true if either was running.
    pub fn tick(&mut self, dt: Duration) -> bool {
        for age in self.killing.values_mut() {
            *age += dt;
        }
        if let Modal::ShutdownCountdown { left, .. } = &mut self.modal
            && !left.is_zero()
        {
            *left = left.saturating_sub(dt);
            return true;
        }
        !self.killing.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(members: Vec<MemberRow>) -> TeamView {
        TeamView {
            team: "demo".into(),
            backend_name: "tmux".into(),
            members,
            ..TeamView::default()
        }
    }

    #[test]
    fn ages_use_their_largest_unit() {
        assert_eq!(age(Duration::from_secs(4)), "4s");
        assert_eq!(age(Duration::from_secs(185)), "3m");
        assert_eq!(age(Duration::from_secs(7300)), "2h");
        assert_eq!(age(Duration::from_secs(3 * 86400)), "3d");
    }

    #[test]
    fn the_status_line_counts_members_tasks_and_requests() {
        let mut v = view(vec![MemberRow::new("a"), MemberRow::new("b")]);
        v.members[1].status = MemberStatus::Idle;
        let mut done = Task::new("1", "x");
        done.status = Status::Completed;
        v.tasks = vec![done, Task::new("2", "y")].into();
        v.requests.push(PendingRequest {
            id: "r".into(),
            from: "a".into(),
            kind: RequestKind::Plan {
                content: "p".into(),
            },
            age: None,
        });
        assert_eq!(
            v.status_line(),
            "2 teammates · 1 running · 1 idle · tasks 1/2 · 1 waiting"
        );
    }

    #[test]
    fn internal_tasks_are_neither_shown_nor_counted() {
        let mut v = view(Vec::new());
        let internal = |id: &str, status: Status| {
            let mut t = Task::new(id, "internal");
            t.status = status;
            let mut md = serde_json::Map::new();
            md.insert("_internal".into(), serde_json::json!(true));
            t.metadata = Some(md);
            t
        };
        let mut done = Task::new("2", "done");
        done.status = Status::Completed;
        v.tasks = vec![
            internal("1", Status::Completed),
            done,
            internal("3", Status::Pending),
            Task::new("4", "open"),
        ]
        .into();
        let shown: Vec<&str> = v.visible_tasks().map(|t| t.id.as_str()).collect();
        assert_eq!(shown, ["2", "4"]);
        let t = v.totals();
        assert_eq!((t.tasks_done, t.tasks), (1, 2));
        let mut ui = UiState::new(&v);
        ui.task_row = 9;
        ui.sync(&v);
        assert_eq!(ui.task_row, 1, "the selection stays among the shown");
    }

    /// One change: task `n` becomes this (status, owner, failed, internal)
    /// or (`None`) goes.
    type Change = (u64, Option<(usize, usize, bool, bool)>);

    fn task_of(
        n: u64,
        step: usize,
        (status, owner, failed, internal): (usize, usize, bool, bool),
    ) -> Task {
        let mut t = Task::new(n.to_string(), format!("task {n} at {step}"));
        t.status = [Status::Pending, Status::InProgress, Status::Completed][status];
        t.owner = ["ann", "bob", "cy"].get(owner).map(|o| o.to_string());
        let mut md = serde_json::Map::new();
        if failed {
            md.insert("failed".into(), serde_json::json!(true));
        }
        if internal {
            md.insert("_internal".into(), serde_json::json!(true));
        }
        t.metadata = (!md.is_empty()).then_some(md);
        t
    }

    proptest::proptest! {
        #[test]
        fn a_board_changed_task_by_task_equals_one_built_whole(
            changes in proptest::collection::vec(
                (1u64..40, proptest::option::weighted(
                    0.85,
                    (0usize..3, 0usize..4, proptest::bool::weighted(0.25), proptest::bool::weighted(0.2)),
                )),
                1..300,
            )
        ) {
            let changes: Vec<Change> = changes;
            let mut tasks: std::collections::BTreeMap<u64, Arc<Task>> = Default::default();
            let mut board = Board::default();
            for (step, (n, change)) in changes.into_iter().enumerate() {
                let change = change.map(|c| Arc::new(task_of(n, step, c)));
                match &change {
                    Some(t) => tasks.insert(n, t.clone()),
                    None => tasks.remove(&n),
                };
                board = board.with_task(n, change);
                let whole = Board::new(tasks.values().cloned());
                proptest::prop_assert!(
                    board.same_in_every_part(&whole),
                    "step {step}, task {n}:\n{board:#?}\nwhole:\n{whole:#?}"
                );
            }
        }
    }

    #[test]
    fn only_idle_members_without_work_or_mail_are_prunable() {
        let mut v = view(
            ["busy", "mail", "free", "owner"]
                .map(MemberRow::new)
                .to_vec(),
        );
        for m in &mut v.members[1..] {
            m.status = MemberStatus::Idle;
        }
        v.members[1].unread = 2;
        let mut t = Task::new("1", "x");
        t.status = Status::InProgress;
        t.owner = Some("owner".into());
        v.tasks = vec![t].into();
        assert_eq!(v.prunable(), ["free"]);
    }

    #[test]
    fn sync_clamps_selection_and_closes_what_refers_to_a_departed_member() {
        let v = view(vec![MemberRow::new("a")]);
        let mut ui = UiState {
            member_row: 5,
            modal: Modal::ConfirmKill {
                name: "gone".into(),
            },
            zoomed: Some("gone".into()),
            ..UiState::default()
        };
        ui.sync(&v);
        assert_eq!(
            (ui.member_row, &ui.modal, &ui.zoomed),
            (1, &Modal::None, &None)
        );
    }

    #[test]
    fn the_countdown_ticks_down_to_zero_and_stops() {
        let mut ui = UiState {
            modal: Modal::ShutdownCountdown {
                name: "a".into(),
                left: Duration::from_secs(1),
            },
            ..UiState::default()
        };
        assert!(ui.tick(Duration::from_millis(600)));
        assert!(ui.tick(Duration::from_millis(600)));
        assert!(!ui.tick(Duration::from_millis(600)), "stopped at zero");
    }
}
