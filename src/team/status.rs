//! A member's status, derived in one place from the facts every reader has
//! (the roster record, its pane's liveness, the task board, its mail, and
//! — in the lead — requests and shutdowns in flight), and the one rule of
//! who `prune` takes. `swarm status`, `swarm prune`, the TeamsDialog and
//! the lead's plain view all call [`MemberStatus::of`] and
//! [`MemberStatus::prunable`].
//!
//! Beside it, derived once for the same readers: what needs the user
//! ([`Attention::of`]: an approval to give, a failed task, a dead
//! teammate) and how a running task is going ([`Progress::of`]: its
//! elapsed time and the last line of its pane's output, read from the
//! tail of the output log only). Both look a member's tasks up in a
//! [`ByOwner`] index, built in one pass over the board when it changes,
//! never by a scan of the board per member.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::tasks::{Status, Task};

/// Where a teammate's process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberStatus {
    /// Working on something.
    Running,
    /// Alive, waiting for work.
    Idle,
    /// Blocked on a plan or permission request to the lead.
    WaitingForApproval,
    /// A shutdown was requested `since` ago.
    Stopping { since: Duration },
    /// Its process ended.
    Dead { exit_code: Option<i32> },
    /// On the roster, its pane never opened (an `up` that was stopped
    /// before it came to it; the next `up` starts it).
    NotStarted,
    /// Its pane is on another machine that does not answer: not dead (its
    /// tasks stay its own), shown until the machine answers again.
    Unreachable,
}

/// Liveness of a member's pane as its reader saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneSeen {
    /// Not looked at (a reader without the backend) or not yet known.
    Unknown,
    Running,
    /// Ended (`None`: by a signal, or it vanished) or no longer swarm's.
    Dead(Option<i32>),
    /// On another machine that does not answer (DESIGN §13): not dead.
    Unreachable,
}

/// The facts a member's status is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The roster's record of its end (`swarmExit`): its exit code.
    pub recorded_exit: Option<Option<i32>>,
    pub pane: PaneSeen,
    /// `isActive` on the roster: in a turn.
    pub active: bool,
    /// It owns a task in progress.
    pub has_task: bool,
    /// A plan or permission request of its waits for the lead.
    pub waiting: bool,
    /// A shutdown was requested this long ago.
    pub stopping: Option<Duration>,
    /// Its pane was never opened (no pane id, no end recorded).
    pub never_started: bool,
}

impl MemberStatus {
    /// The one rule: dead (recorded, or its pane seen dead) > stopping >
    /// waiting for approval > running (in a turn, or owning a task in
    /// progress) > idle.
    pub fn of(f: &Facts) -> Self {
        match (f.recorded_exit, f.pane, f.stopping) {
            (Some(code), _, _) => MemberStatus::Dead { exit_code: code },
            (_, PaneSeen::Dead(code), _) => MemberStatus::Dead { exit_code: code },
            _ if f.never_started => MemberStatus::NotStarted,
            (_, PaneSeen::Unreachable, _) => MemberStatus::Unreachable,
            (_, _, Some(since)) => MemberStatus::Stopping { since },
            _ if f.waiting => MemberStatus::WaitingForApproval,
            _ if f.active || f.has_task => MemberStatus::Running,
            _ => MemberStatus::Idle,
        }
    }

    /// Its process still runs (anything but dead or never started).
    pub fn is_alive(&self) -> bool {
        !matches!(self, MemberStatus::Dead { .. } | MemberStatus::NotStarted)
    }

    /// The words shown for it: `running`, `idle`, `waiting approval`,
    /// `stopping 4s`, `dead (exit 3)`, `dead (signal)`.
    pub fn label(&self) -> String {
        match self {
            MemberStatus::Running => "running".to_owned(),
            MemberStatus::Idle => "idle".to_owned(),
            MemberStatus::WaitingForApproval => "waiting approval".to_owned(),
            MemberStatus::Stopping { since } => format!("stopping {}", crate::clock::age(*since)),
            MemberStatus::Dead {
                exit_code: Some(code),
            } => format!("dead (exit {code})"),
            MemberStatus::Dead { exit_code: None } => "dead (signal)".to_owned(),
            MemberStatus::NotStarted => "not started".to_owned(),
            MemberStatus::Unreachable => "unreachable".to_owned(),
        }
    }

    /// Whether `prune` takes it: idle (so alive, not stopping, not waiting
    /// for an approval, not in a turn), no task in progress, no unread mail.
    pub fn prunable(&self, has_task: bool, unread: usize) -> bool {
        *self == MemberStatus::Idle && !has_task && unread == 0
    }
}

/// On the roster, its pane never opened and no end recorded: an `up` was
/// stopped before it came to it ([`MemberStatus::NotStarted`]).
pub fn never_started(m: &super::Member) -> bool {
    m.tmux_pane_id.is_empty() && recorded_exit(m).is_none()
}

/// The exit code the roster records for `m` (`swarmExit.code`), if it
/// records an end at all. A record that does not read as one
/// ([`Member::exit`](super::Member::exit)'s error, logged) still says the
/// pane ended, its code unknown: a status must not show a dead member
/// alive because its record is damaged.
pub fn recorded_exit(m: &super::Member) -> Option<Option<i32>> {
    match m.exit() {
        Ok(exit) => exit.map(|e| e.code),
        Err(e) => {
            tracing::warn!("{e}");
            Some(None)
        }
    }
}

/// The tasks of one owner the rules look at, by number (then id): the
/// first of each is the one shown. Kept whole rather than the first only,
/// so that a task that stops counting hands over to the next without a
/// look at the board.
#[derive(Debug, Clone, Default, PartialEq)]
struct Owned {
    /// Its tasks in progress; the first is its current task.
    current: BTreeMap<(u64, String), Arc<Task>>,
    /// Its failed tasks ([`Task::failed`]).
    failed: BTreeMap<(u64, String), Arc<Task>>,
}

/// Each owner's task in progress and failed task, found in one pass over
/// a board; what [`Attention::of`], [`Progress::of`] and a member's
/// current task read instead of scanning the board per member.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ByOwner {
    owners: HashMap<String, Owned>,
}

impl ByOwner {
    /// The index of `tasks`, in board order (the first of each kind wins).
    pub fn of<'a, T>(tasks: impl IntoIterator<Item = &'a T>) -> ByOwner
    where
        T: Borrow<Task> + Clone + Into<Arc<Task>> + 'a,
    {
        let mut index = ByOwner::default();
        for t in tasks {
            index.add(t);
        }
        index
    }

    /// Takes `t` into the index.
    pub fn add<T>(&mut self, t: &T)
    where
        T: Borrow<Task> + Clone + Into<Arc<Task>>,
    {
        let task: &Task = t.borrow();
        let Some(owner) = task.owner.as_deref() else {
            return;
        };
        let current = task.status == Status::InProgress;
        let failed = task.failed();
        if !current && !failed {
            return;
        }
        let key = (task.number(), task.id.clone());
        let o = self.owners.entry(owner.to_owned()).or_default();
        if current {
            o.current.insert(key.clone(), t.clone().into());
        }
        if failed {
            o.failed.insert(key, t.clone().into());
        }
    }

    /// Takes `task` (as it was taken in) out of the index.
    pub fn remove(&mut self, task: &Task) {
        let Some(owner) = task.owner.as_deref() else {
            return;
        };
        let Some(o) = self.owners.get_mut(owner) else {
            return;
        };
        let key = (task.number(), task.id.clone());
        o.current.remove(&key);
        o.failed.remove(&key);
        if o.current.is_empty() && o.failed.is_empty() {
            self.owners.remove(owner);
        }
    }

    /// Whether `task` counts for its owner here (in progress, or failed).
    pub fn counts(task: &Task) -> bool {
        task.owner.is_some() && (task.status == Status::InProgress || task.failed())
    }

    /// `name`'s task in progress, if it has one.
    pub fn current(&self, name: &str) -> Option<&Task> {
        self.owners.get(name)?.current.values().next().map(|t| &**t)
    }

    /// `name`'s failed task, if it has one.
    pub fn failed(&self, name: &str) -> Option<&Task> {
        self.owners.get(name)?.failed.values().next().map(|t| &**t)
    }
}

/// Why a teammate needs the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attention {
    /// A plan or permission request of its waits for an answer.
    Approval,
    /// A task it owns failed (its id).
    FailedTask(String),
    /// Its process ended while it is still on the roster.
    Dead,
    /// Running a task, it printed nothing and the task did not change for
    /// `for_secs` (at least the team's stall bound, [`stall_after`]).
    Stalled { for_secs: u64 },
}

impl Attention {
    /// The one rule: dead > an approval to give > a failed task it owns.
    pub fn of(status: &MemberStatus, name: &str, board: &ByOwner) -> Option<Attention> {
        match status {
            MemberStatus::Dead { .. } => Some(Attention::Dead),
            MemberStatus::WaitingForApproval => Some(Attention::Approval),
            _ => board
                .failed(name)
                .map(|t| Attention::FailedTask(t.id.clone())),
        }
    }

    /// A member that runs a task (`status` running) with no output and no
    /// change of the task for `stall_after` is stalled (issue 24, item 3:
    /// Codex without network looped "Reconnecting…" for minutes and
    /// nothing said so). Nothing is killed for it.
    pub fn stalled(
        status: &MemberStatus,
        progress: &Progress,
        stall_after: Duration,
    ) -> Option<Attention> {
        if *status != MemberStatus::Running {
            return None;
        }
        let still = progress.elapsed?;
        // No output log: nothing printed since the task began.
        let quiet = progress.quiet.unwrap_or(still).min(still);
        (quiet >= stall_after).then_some(Attention::Stalled {
            for_secs: quiet.as_secs(),
        })
    }

    /// `needs approval`, `task #3 failed`, `dead`, `stalled 2m`.
    pub fn label(&self) -> String {
        match self {
            Attention::Approval => "needs approval".to_owned(),
            Attention::FailedTask(id) => format!("task #{id} failed"),
            Attention::Dead => "dead".to_owned(),
            Attention::Stalled { for_secs } => {
                format!(
                    "stalled {}",
                    crate::clock::age(Duration::from_secs(*for_secs))
                )
            }
        }
    }
}

/// How a running task is going.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// Since the task last changed (its claim, for a task being worked on).
    pub elapsed: Option<Duration>,
    /// The last line its pane printed, escapes removed.
    pub last_line: Option<String>,
    /// Since its pane last printed (its output log's modification time);
    /// `None` when it has no log.
    pub quiet: Option<Duration>,
}

/// How long a member running a task may print nothing, its task
/// unchanged, before it is [`Attention::Stalled`], unless the spec says
/// (`stall_after`, seconds, kept on the roster as `swarmStallAfter`).
pub const STALL_AFTER: Duration = Duration::from_secs(120);

/// The roster's stall bound (see [`STALL_AFTER`]).
pub fn stall_after(tf: &super::TeamFile) -> Duration {
    tf.extra
        .get(STALL_AFTER_FIELD)
        .and_then(serde_json::Value::as_u64)
        .filter(|s| *s > 0)
        .map_or(STALL_AFTER, Duration::from_secs)
}

/// Whether the lead reminds a stalled member once (the spec's `nudge`,
/// kept on the roster as `swarmNudge`).
pub fn nudges(tf: &super::TeamFile) -> bool {
    tf.extra
        .get(NUDGE_FIELD)
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// The roster fields of the spec's `stall_after` and `nudge`.
pub const STALL_AFTER_FIELD: &str = "swarmStallAfter";
pub const NUDGE_FIELD: &str = "swarmNudge";

/// How much of the output log's end is read for its last line.
const TAIL_BYTES: u64 = 4096;

impl Progress {
    /// The progress of `name`'s task in progress, if it has one: elapsed
    /// from the task file's modification time, the last line from the tail
    /// of its output log. Unreadable files leave the part out.
    pub fn of(team: &super::Team, name: &str, board: &ByOwner) -> Option<Progress> {
        let task = board.current(name)?;
        let elapsed = team
            .root
            .task(&team.name, &task.id)
            .ok()
            .and_then(|p| std::fs::metadata(p).ok())
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok());
        let log = team.root.output(&team.name, name).ok();
        let last_line = log.as_deref().and_then(last_output_line);
        let quiet = log
            .and_then(|p| std::fs::metadata(p).ok())
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok());
        Some(Progress {
            elapsed,
            last_line,
            quiet,
        })
    }
}

/// The last line with something on it in the output log at `path`,
/// reading only its last `TAIL_BYTES`: terminal escapes removed, a
/// carriage return's overwrite applied, at most 200 characters.
pub fn last_output_line(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))
        .ok()?;
    let mut bytes = Vec::with_capacity(TAIL_BYTES as usize);
    f.take(TAIL_BYTES).read_to_end(&mut bytes).ok()?;
    let text = strip_escapes(&String::from_utf8_lossy(&bytes));
    text.split('\n')
        .map(|l| {
            let l = l.trim_end_matches('\r');
            // What a carriage return overwrote is gone from the screen.
            l.rsplit('\r').next().unwrap_or(l).trim()
        })
        .rfind(|l| !l.is_empty())
        .map(|l| l.chars().take(200).collect())
}

/// `text` without terminal escape sequences (CSI, OSC, two-byte escapes)
/// and without control characters other than line ends and tabs.
pub fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters, then one final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST (ESC \\).
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\r' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Facts {
        Facts {
            never_started: false,
            recorded_exit: None,
            pane: PaneSeen::Running,
            active: false,
            has_task: false,
            waiting: false,
            stopping: None,
        }
    }

    #[test]
    fn the_status_rule_orders_dead_stopping_waiting_running_idle() {
        assert_eq!(MemberStatus::of(&idle()), MemberStatus::Idle);
        let f = Facts {
            has_task: true,
            ..idle()
        };
        assert_eq!(MemberStatus::of(&f), MemberStatus::Running);
        let f = Facts { waiting: true, ..f };
        assert_eq!(MemberStatus::of(&f), MemberStatus::WaitingForApproval);
        let since = Duration::from_secs(2);
        let f = Facts {
            stopping: Some(since),
            ..f
        };
        assert_eq!(MemberStatus::of(&f), MemberStatus::Stopping { since });
        let f = Facts {
            pane: PaneSeen::Dead(Some(3)),
            ..f
        };
        assert_eq!(
            MemberStatus::of(&f),
            MemberStatus::Dead { exit_code: Some(3) }
        );
        let f = Facts {
            recorded_exit: Some(None),
            pane: PaneSeen::Running,
            ..idle()
        };
        assert_eq!(MemberStatus::of(&f), MemberStatus::Dead { exit_code: None });
    }

    #[test]
    fn prune_takes_only_the_idle_with_nothing_owed() {
        let idle_status = MemberStatus::of(&idle());
        assert!(idle_status.prunable(false, 0));
        assert!(!idle_status.prunable(true, 0));
        assert!(!idle_status.prunable(false, 1));
        for f in [
            Facts {
                waiting: true,
                ..idle()
            },
            Facts {
                stopping: Some(Duration::ZERO),
                ..idle()
            },
            Facts {
                active: true,
                ..idle()
            },
            Facts {
                pane: PaneSeen::Dead(None),
                ..idle()
            },
        ] {
            assert!(!MemberStatus::of(&f).prunable(false, 0), "{f:?}");
        }
    }

    fn task(id: &str, owner: &str, status: Status, failed: bool) -> Task {
        let mut t = Task::new(id, "x");
        t.owner = Some(owner.into());
        t.status = status;
        if failed {
            let mut md = serde_json::Map::new();
            md.insert("failed".into(), serde_json::json!(true));
            t.metadata = Some(md);
        }
        t
    }

    /// Issue 24, item 3: running a task, nothing printed and the task
    /// unchanged for the bound: stalled; output or a task change within it,
    /// or not running: not.
    #[test]
    fn a_running_teammate_quiet_on_its_task_past_the_bound_is_stalled() {
        let secs = Duration::from_secs;
        let p = |elapsed: u64, quiet: Option<u64>| Progress {
            elapsed: Some(secs(elapsed)),
            last_line: None,
            quiet: quiet.map(secs),
        };
        let run = MemberStatus::Running;
        let bound = secs(120);
        assert_eq!(
            Attention::stalled(&run, &p(300, Some(130)), bound),
            Some(Attention::Stalled { for_secs: 130 })
        );
        assert_eq!(
            Attention::stalled(&run, &p(300, None), bound),
            Some(Attention::Stalled { for_secs: 300 }),
            "no output log: quiet since the task changed"
        );
        assert_eq!(
            Attention::stalled(&run, &p(300, Some(5)), bound),
            None,
            "it prints"
        );
        assert_eq!(
            Attention::stalled(&run, &p(30, Some(500)), bound),
            None,
            "the task moved"
        );
        assert_eq!(
            Attention::stalled(&MemberStatus::WaitingForApproval, &p(300, Some(300)), bound),
            None
        );
        assert_eq!(Attention::Stalled { for_secs: 130 }.label(), "stalled 2m");
        let mut tf: crate::team::TeamFile = serde_json::from_str(r#"{"name":"t"}"#).unwrap();
        assert_eq!(stall_after(&tf), STALL_AFTER);
        assert!(!nudges(&tf));
        tf.extra.insert(STALL_AFTER_FIELD.into(), 5.into());
        tf.extra.insert(NUDGE_FIELD.into(), true.into());
        assert_eq!(stall_after(&tf), secs(5));
        assert!(nudges(&tf));
    }

    #[test]
    fn attention_is_a_dead_teammate_an_approval_or_a_failed_task() {
        let tasks = ByOwner::of(&[
            task("1", "ann", Status::Pending, true),
            task("2", "bob", Status::InProgress, false),
        ]);
        let dead = MemberStatus::Dead { exit_code: None };
        assert_eq!(Attention::of(&dead, "bob", &tasks), Some(Attention::Dead));
        assert_eq!(
            Attention::of(&MemberStatus::WaitingForApproval, "bob", &tasks),
            Some(Attention::Approval)
        );
        assert_eq!(
            Attention::of(&MemberStatus::Idle, "ann", &tasks),
            Some(Attention::FailedTask("1".into()))
        );
        assert_eq!(Attention::of(&MemberStatus::Running, "bob", &tasks), None);
    }

    #[test]
    fn each_owner_gets_its_first_task_in_progress_and_first_failed_task() {
        let board = ByOwner::of(&[
            task("1", "bob", Status::Completed, false),
            task("2", "bob", Status::InProgress, false),
            task("3", "ann", Status::Pending, true),
            task("4", "bob", Status::InProgress, false),
            task("5", "ann", Status::Pending, true),
            task("6", "ann", Status::Pending, false),
        ]);
        let id = |t: Option<&Task>| t.map(|t| t.id.clone());
        assert_eq!(id(board.current("bob")), Some("2".into()));
        assert_eq!(id(board.failed("ann")), Some("3".into()));
        assert_eq!(id(board.current("ann")), None);
        assert_eq!(id(board.failed("bob")), None);
        assert_eq!(id(board.current("nobody")), None);
    }

    #[test]
    fn the_last_output_line_comes_from_the_tail_without_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut log = "old line\r\n".repeat(2000);
        log.push_str("\x1b[32mcompiling\x1b[0m foo\r\n");
        log.push_str("\x1b]0;title\x07 40%\r 80% done\r\n\r\n   \r\n");
        std::fs::write(&path, log).unwrap();
        assert_eq!(last_output_line(&path).as_deref(), Some("80% done"));
        std::fs::write(&path, "one\r\n\x1b[32mcompiling\x1b[0m foo\r\n").unwrap();
        assert_eq!(last_output_line(&path).as_deref(), Some("compiling foo"));
        assert_eq!(last_output_line(&dir.path().join("none")), None);
    }
}
