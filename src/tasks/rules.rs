//! The task state machine as pure functions over [`Task`] values: what a
//! claim must check and in which order, what an update changes, what
//! unassigning a departed member does, and the id arithmetic. No files and
//! no locks here; the store calls these under the right lock on freshly read
//! values, and the tests below read like the rules themselves.

use super::task::{MAX_ID, Status, Task};
use serde_json::{Map, Value};

/// Why a claim was refused. The reference's `claimTask` codes are in
/// [`Refusal::code`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No task with that id.
    NotFound,
    /// Someone else owns it.
    AlreadyClaimed { owner: String },
    /// It is completed.
    AlreadyResolved,
    /// These `blockedBy` tasks exist and are not completed.
    Blocked { by: Vec<String> },
    /// (busy check) The claimant already owns these open tasks.
    Busy { owns: Vec<String> },
    /// (claim without id) No pending, ownerless, unblocked task (that the
    /// claimant takes).
    NothingClaimable,
    /// The claimant runs only tasks that carry a command (a shell
    /// teammate) and this one carries none.
    NoCommand,
}

/// Which tasks a claimant takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// Any task (an agent reads its subject and description).
    Any,
    /// Only a task that carries a command ([`Task::command`]): a shell
    /// teammate runs commands, and a task's words are no command.
    Commands,
}

impl Takes {
    pub fn takes(self, task: &Task) -> bool {
        match self {
            Takes::Any => true,
            Takes::Commands => task.command().is_some(),
        }
    }
}

impl Refusal {
    /// Claude Code's reason string for the same refusal.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NotFound => "task_not_found",
            Refusal::AlreadyClaimed { .. } => "already_claimed",
            Refusal::AlreadyResolved => "already_resolved",
            Refusal::Blocked { .. } => "blocked",
            Refusal::Busy { .. } => "agent_busy",
            Refusal::NothingClaimable => "nothing_claimable",
            // swarm's own: Claude Code's claimants take any task.
            Refusal::NoCommand => "no_command",
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotFound => write!(f, "no such task"),
            Refusal::AlreadyClaimed { owner } => write!(f, "already claimed by {owner}"),
            Refusal::AlreadyResolved => write!(f, "already completed"),
            Refusal::Blocked { by } => write!(f, "blocked by task(s) {}", by.join(", ")),
            Refusal::Busy { owns } => {
                write!(f, "claimant still owns open task(s) {}", owns.join(", "))
            }
            Refusal::NothingClaimable => write!(f, "no pending, ownerless, unblocked task"),
            Refusal::NoCommand => write!(
                f,
                "it carries no command (metadata.command), and a shell teammate runs only that"
            ),
        }
    }
}

/// The changes an update asks for (the per-field part of `TaskUpdate`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskUpdate {
    pub subject: Option<String>,
    pub description: Option<String>,
    pub active_form: Option<String>,
    pub status: Option<Status>,
    /// `Some(None)` unassigns.
    pub owner: Option<Option<String>>,
    /// Shallow-merged into the task's metadata; a `null` value deletes the key.
    pub metadata: Option<Map<String, Value>>,
    /// This task blocks these (both sides are kept consistent by the store).
    pub add_blocks: Vec<String>,
    /// These block this task (both sides are kept consistent by the store).
    pub add_blocked_by: Vec<String>,
}

/// The `blockedBy` ids of `task` that still block it: the blocker exists
/// (`status_of` returns its status) and is not completed. A blocker that was
/// deleted no longer blocks.
pub fn open_blockers(task: &Task, status_of: impl Fn(&str) -> Option<Status>) -> Vec<String> {
    task.blocked_by
        .iter()
        .filter(|b| status_of(b).is_some_and(|s| s != Status::Completed))
        .cloned()
        .collect()
}

/// The open (not completed) tasks `claimant` owns, other than `except`.
pub fn owned_open<'a>(
    claimant: &str,
    tasks: impl IntoIterator<Item = &'a Task>,
    except: &str,
) -> Vec<String> {
    tasks
        .into_iter()
        .filter(|t| t.id != except && t.status != Status::Completed)
        .filter(|t| t.owner.as_deref() == Some(claimant))
        .map(|t| t.id.clone())
        .collect()
}

/// The reference's claim checks, in its order: not found, owned by someone
/// else, completed, blocked, busy. Re-claiming one's own task is allowed.
pub fn check_claim(
    task: Option<&Task>,
    claimant: &str,
    open_blockers: Vec<String>,
    busy_with: Vec<String>,
) -> Result<(), Refusal> {
    let task = task.ok_or(Refusal::NotFound)?;
    if let Some(owner) = task.owner.as_deref().filter(|o| *o != claimant) {
        return Err(Refusal::AlreadyClaimed {
            owner: owner.to_string(),
        });
    }
    if task.status == Status::Completed {
        return Err(Refusal::AlreadyResolved);
    }
    if !open_blockers.is_empty() {
        return Err(Refusal::Blocked { by: open_blockers });
    }
    if !busy_with.is_empty() {
        return Err(Refusal::Busy { owns: busy_with });
    }
    Ok(())
}

/// What a claim without an id looks for: pending, ownerless, unblocked.
pub fn is_claimable(task: &Task, status_of: impl Fn(&str) -> Option<Status>) -> bool {
    task.status == Status::Pending
        && task.owner.is_none()
        && open_blockers(task, status_of).is_empty()
}

/// The cycle that new dependencies of task `id` would close, if any:
/// `id` waiting (through `blockedBy`, transitively) for itself. The ids
/// start and end with `id` (`["1", "2", "1"]`: 1 waits for 2, which waits
/// for 1). `tasks` is the whole list as it is now; `add_blocked_by` are
/// the tasks `id` is to wait for, `add_blocks` those to wait for `id`.
/// Such a cycle leaves every task on it blocked forever, so the update is
/// refused, as the spec loader refuses the same cycle.
pub fn dependency_cycle(
    tasks: &[Task],
    id: &str,
    add_blocks: &[String],
    add_blocked_by: &[String],
) -> Option<Vec<String>> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut waits: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for t in tasks {
        waits
            .entry(t.id.as_str())
            .or_default()
            .extend(t.blocked_by.iter().map(String::as_str));
    }
    for b in add_blocked_by {
        waits.entry(id).or_default().insert(b);
    }
    for b in add_blocks {
        waits.entry(b.as_str()).or_default().insert(id);
    }
    // Depth-first from `id` along "waits for"; a path back to `id` is the cycle.
    let mut path = vec![id];
    let mut seen = BTreeSet::new();
    fn walk<'a>(
        waits: &BTreeMap<&'a str, BTreeSet<&'a str>>,
        start: &str,
        path: &mut Vec<&'a str>,
        seen: &mut BTreeSet<&'a str>,
    ) -> bool {
        let here = *path.last().expect("the path starts with the task");
        for &next in waits.get(here).into_iter().flatten() {
            if next == start {
                path.push(next);
                return true;
            }
            if seen.insert(next) {
                path.push(next);
                if walk(waits, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    walk(&waits, id, &mut path, &mut seen).then(|| path.iter().map(|s| s.to_string()).collect())
}

/// A successful claim: owner = claimant, status = in_progress.
pub fn claim(task: &mut Task, claimant: &str) {
    task.owner = Some(claimant.to_string());
    task.status = Status::InProgress;
}

/// Applies the per-field part of an update made by `by` and this task's own
/// side of any new dependency. Returns the new owner when the owner changed
/// to a (different) name: the caller owes that member a `task_assignment`.
///
/// Setting `in_progress` without naming an owner on an ownerless task makes
/// `by` the owner (reference §7.3); an explicit unassign in the same update
/// wins.
pub fn apply_update(task: &mut Task, upd: &TaskUpdate, by: &str) -> Option<String> {
    let before = task.owner.clone();
    if let Some(s) = &upd.subject {
        task.subject = s.clone();
    }
    if let Some(d) = &upd.description {
        task.description = d.clone();
    }
    if let Some(a) = &upd.active_form {
        task.active_form = Some(a.clone());
    }
    if let Some(s) = upd.status {
        task.status = s;
    }
    if let Some(o) = &upd.owner {
        task.owner = o.clone().filter(|o| !o.is_empty());
    }
    if upd.status == Some(Status::InProgress) && upd.owner.is_none() && task.owner.is_none() {
        task.owner = Some(by.to_string());
    }
    if let Some(patch) = &upd.metadata {
        merge_metadata(task, patch);
    }
    for b in &upd.add_blocks {
        add_unique(&mut task.blocks, b);
    }
    for b in &upd.add_blocked_by {
        add_unique(&mut task.blocked_by, b);
    }
    match &task.owner {
        Some(now) if before.as_ref() != Some(now) => Some(now.clone()),
        _ => None,
    }
}

/// Shallow merge; a `null` value deletes the key (reference §7.1).
pub fn merge_metadata(task: &mut Task, patch: &Map<String, Value>) {
    let md = task.metadata.get_or_insert_with(Map::new);
    for (k, v) in patch {
        if v.is_null() {
            md.remove(k);
        } else {
            md.insert(k.clone(), v.clone());
        }
    }
}

/// Returns an open task of a departed member to the pool: owner removed,
/// status pending. Completed tasks keep their owner (the record of who did
/// them). Returns whether anything changed.
pub fn unassign(task: &mut Task, member: &str) -> bool {
    if task.owner.as_deref() != Some(member) || task.status == Status::Completed {
        return false;
    }
    task.owner = None;
    task.status = Status::Pending;
    true
}

/// Removes every mention of a deleted task. Returns whether anything changed.
pub fn strip_id(task: &mut Task, id: &str) -> bool {
    let before = task.blocks.len() + task.blocked_by.len();
    task.blocks.retain(|b| b != id);
    task.blocked_by.retain(|b| b != id);
    before != task.blocks.len() + task.blocked_by.len()
}

/// Pushes `id` unless already there. Returns whether it was added.
pub fn add_unique(list: &mut Vec<String>, id: &str) -> bool {
    if list.iter().any(|x| x == id) {
        return false;
    }
    list.push(id.to_string());
    true
}

/// The next id: one past both the highest id in use and the high-water mark,
/// or `None` when that is past [`MAX_ID`] (the id space is used up).
pub fn next_id(highest_used: u64, highwatermark: u64) -> Option<u64> {
    highest_used
        .max(highwatermark)
        .checked_add(1)
        .filter(|n| *n <= MAX_ID)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, status: Status, owner: Option<&str>, blocked_by: &[&str]) -> Task {
        let mut t = Task::new(id, format!("task {id}"));
        t.status = status;
        t.owner = owner.map(str::to_string);
        t.blocked_by = blocked_by.iter().map(|s| s.to_string()).collect();
        t
    }

    fn statuses<'a>(tasks: &'a [Task]) -> impl Fn(&str) -> Option<Status> + 'a {
        move |id| tasks.iter().find(|t| t.id == id).map(|t| t.status)
    }

    #[test]
    fn a_missing_task_cannot_be_claimed() {
        assert_eq!(
            check_claim(None, "alice", vec![], vec![]),
            Err(Refusal::NotFound)
        );
    }

    #[test]
    fn a_task_owned_by_someone_else_is_already_claimed_but_ones_own_is_fine() {
        let t = task("1", Status::InProgress, Some("bob"), &[]);
        assert_eq!(
            check_claim(Some(&t), "alice", vec![], vec![]),
            Err(Refusal::AlreadyClaimed {
                owner: "bob".into()
            })
        );
        assert_eq!(check_claim(Some(&t), "bob", vec![], vec![]), Ok(()));
    }

    #[test]
    fn a_completed_task_is_already_resolved() {
        let t = task("1", Status::Completed, None, &[]);
        assert_eq!(
            check_claim(Some(&t), "alice", vec![], vec![]),
            Err(Refusal::AlreadyResolved)
        );
    }

    #[test]
    fn only_existing_unfinished_blockers_block() {
        let all = [
            task("1", Status::Completed, None, &[]),
            task("2", Status::InProgress, Some("bob"), &[]),
            task("3", Status::Pending, None, &["1", "2", "99"]),
        ];
        assert_eq!(open_blockers(&all[2], statuses(&all)), ["2"]);
        assert!(!is_claimable(&all[2], statuses(&all)));
        let by = open_blockers(&all[2], statuses(&all));
        assert_eq!(
            check_claim(Some(&all[2]), "alice", by, vec![]),
            Err(Refusal::Blocked {
                by: vec!["2".into()]
            })
        );
    }

    #[test]
    fn a_busy_claimant_is_refused_only_after_the_task_checks() {
        let all = [
            task("1", Status::InProgress, Some("alice"), &[]),
            task("2", Status::Completed, Some("alice"), &[]),
            task("3", Status::Pending, None, &[]),
        ];
        let busy = owned_open("alice", &all, "3");
        assert_eq!(busy, ["1"]);
        assert_eq!(
            check_claim(Some(&all[2]), "alice", vec![], busy.clone()),
            Err(Refusal::Busy {
                owns: vec!["1".into()]
            })
        );
        assert_eq!(
            check_claim(Some(&all[1]), "alice", vec![], busy),
            Err(Refusal::AlreadyResolved)
        );
        assert!(
            owned_open("alice", &all, "1").is_empty(),
            "the task itself does not count"
        );
    }

    #[test]
    fn claiming_sets_owner_and_in_progress() {
        let mut t = task("1", Status::Pending, None, &[]);
        claim(&mut t, "alice");
        assert_eq!(
            (t.owner.as_deref(), t.status),
            (Some("alice"), Status::InProgress)
        );
    }

    #[test]
    fn in_progress_without_an_owner_makes_the_caller_the_owner() {
        let mut t = task("1", Status::Pending, None, &[]);
        let upd = TaskUpdate {
            status: Some(Status::InProgress),
            ..Default::default()
        };
        assert_eq!(apply_update(&mut t, &upd, "carol"), Some("carol".into()));
        assert_eq!(t.owner.as_deref(), Some("carol"));

        let mut owned = task("2", Status::Pending, Some("bob"), &[]);
        assert_eq!(apply_update(&mut owned, &upd, "carol"), None);
        assert_eq!(owned.owner.as_deref(), Some("bob"));

        let mut explicit = task("3", Status::Pending, None, &[]);
        let unassign_too = TaskUpdate {
            owner: Some(None),
            ..upd
        };
        assert_eq!(apply_update(&mut explicit, &unassign_too, "carol"), None);
        assert_eq!(explicit.owner, None);
    }

    #[test]
    fn a_new_owner_is_reported_only_when_the_owner_changes_to_a_name() {
        let mut t = task("1", Status::Pending, Some("bob"), &[]);
        let to = |o: Option<&str>| TaskUpdate {
            owner: Some(o.map(str::to_string)),
            ..Default::default()
        };
        assert_eq!(apply_update(&mut t, &to(Some("bob")), "x"), None);
        assert_eq!(
            apply_update(&mut t, &to(Some("dave")), "x"),
            Some("dave".into())
        );
        assert_eq!(apply_update(&mut t, &to(None), "x"), None);
        assert_eq!(t.owner, None);
    }

    #[test]
    fn metadata_merges_shallowly_and_null_deletes() {
        let mut t = task("1", Status::Pending, None, &[]);
        let patch = |v: Value| TaskUpdate {
            metadata: Some(v.as_object().unwrap().clone()),
            ..Default::default()
        };
        apply_update(
            &mut t,
            &patch(serde_json::json!({"a": 1, "b": {"x": 1}})),
            "x",
        );
        apply_update(
            &mut t,
            &patch(serde_json::json!({"a": null, "b": {"y": 2}, "c": 3})),
            "x",
        );
        assert_eq!(
            Value::Object(t.metadata.unwrap()),
            serde_json::json!({"b": {"y": 2}, "c": 3})
        );
    }

    #[test]
    fn own_side_dependencies_are_added_once() {
        let mut t = task("1", Status::Pending, None, &["2"]);
        let upd = TaskUpdate {
            add_blocks: vec!["3".into(), "3".into()],
            add_blocked_by: vec!["2".into(), "4".into()],
            ..Default::default()
        };
        apply_update(&mut t, &upd, "x");
        assert_eq!(
            (t.blocks, t.blocked_by),
            (vec!["3".into()], vec!["2".into(), "4".into()])
        );
    }

    #[test]
    fn unassign_returns_open_tasks_to_the_pool_and_keeps_finished_ones() {
        let mut open = task("1", Status::InProgress, Some("bob"), &[]);
        assert!(unassign(&mut open, "bob"));
        assert_eq!((open.owner, open.status), (None, Status::Pending));
        let mut done = task("2", Status::Completed, Some("bob"), &[]);
        assert!(!unassign(&mut done, "bob"));
        assert_eq!(done.owner.as_deref(), Some("bob"));
        let mut other = task("3", Status::InProgress, Some("carol"), &[]);
        assert!(!unassign(&mut other, "bob"));
    }

    #[test]
    fn stripping_a_deleted_id_touches_both_lists() {
        let mut t = task("1", Status::Pending, None, &["5", "6"]);
        t.blocks = vec!["5".into()];
        assert!(strip_id(&mut t, "5"));
        assert_eq!(
            (t.blocks.len(), t.blocked_by.as_slice()),
            (0, &["6".to_string()][..])
        );
        assert!(!strip_id(&mut t, "5"));
    }

    #[test]
    fn a_dependency_that_closes_a_cycle_is_found_with_its_path() {
        let tasks = [
            task("1", Status::Pending, None, &[]),
            task("2", Status::Pending, None, &["1"]),
            task("3", Status::Pending, None, &["2"]),
        ];
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // 1 waiting for 2 (which waits for 1): the case.
        assert_eq!(
            dependency_cycle(&tasks, "1", &[], &ids(&["2"])),
            Some(ids(&["1", "2", "1"]))
        );
        // Transitively: 1 waiting for 3 (3 → 2 → 1).
        assert_eq!(
            dependency_cycle(&tasks, "1", &[], &ids(&["3"])),
            Some(ids(&["1", "3", "2", "1"]))
        );
        // The other side: 3 blocks 1, i.e. 1 waits for 3.
        assert_eq!(
            dependency_cycle(&tasks, "3", &ids(&["1"]), &[]),
            Some(ids(&["3", "2", "1", "3"]))
        );
        // No cycle: 3 waits for 1 as well, or 1 blocks 3.
        assert_eq!(dependency_cycle(&tasks, "3", &[], &ids(&["1"])), None);
        assert_eq!(dependency_cycle(&tasks, "1", &ids(&["3"]), &[]), None);
    }

    #[test]
    fn the_next_id_passes_both_the_files_and_the_high_water_mark() {
        assert_eq!(next_id(0, 0), Some(1));
        assert_eq!(next_id(2, 3), Some(4));
        assert_eq!(next_id(7, 3), Some(8));
    }

    #[test]
    fn the_next_id_never_wraps_or_leaves_the_id_space() {
        assert_eq!(next_id(MAX_ID - 1, 0), Some(MAX_ID));
        assert_eq!(next_id(MAX_ID, 0), None);
        assert_eq!(next_id(0, MAX_ID), None);
        assert_eq!(
            next_id(u64::MAX, 0),
            None,
            "u64::MAX + 1 must not wrap to 0"
        );
    }
}
