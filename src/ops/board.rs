//! The task verbs, as the acting member: create, list, get, update
//! (an owner change tells the new owner, as Claude Code does), claim (the
//! claimant told as any assignee is) and delete. Reading works on any
//! team; a change is refused on a team swarm did not start.
//!
//! A list, and a claim that finds nothing (or the task named owned by
//! another), first give back to the board the open tasks of owners
//! provably dead (`team::orphans`): with no lead running, nobody else
//! does. Their panes are looked at only when their runtime's process is
//! gone, on the team's backend when it can be reached from here.

use super::TeamOps;
use crate::tasks::{BoardView, Claim, NewTask, Refusal, Task, TaskError, TaskList, TaskUpdate};
use crate::team::Member;
use crate::team::orphans::Returned;
use crate::team::post::recipients;
use anyhow::{Context, Result};
use serde::Serialize;

/// A task named by id and subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskRef {
    pub id: String,
    pub subject: String,
}

/// A task as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskLine {
    pub id: String,
    pub subject: String,
    pub status: &'static str,
    pub owner: Option<String>,
    pub blocked_by: Vec<String>,
}

impl TaskLine {
    pub fn of(t: &Task) -> TaskLine {
        TaskLine {
            id: t.id.clone(),
            subject: t.subject.clone(),
            status: t.status.as_str(),
            owner: t.owner.clone(),
            blocked_by: t.blocked_by.clone(),
        }
    }
}

/// How a claim ended.
#[derive(Debug, Clone, PartialEq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per claim call; boxing would only burden every caller"
)]
pub enum Claimed {
    Task(Task),
    /// Nothing was claimed, and why.
    Nothing(String),
}

impl TeamOps {
    /// A new task on the board.
    pub fn task_create(&self, new: NewTask) -> Result<Task> {
        self.require_own("change its tasks")?;
        Ok(self.team().tasks().create(new)?)
    }

    /// The whole board (and the task files that did not read, set aside),
    /// the tasks of owners provably dead given back first.
    pub fn task_list(&self) -> Result<TaskList> {
        Ok(self.task_board()?.0.into_list())
    }

    /// [`TeamOps::task_list`] as the look found it (decoded only as far as
    /// its reader goes), and the tasks it gave back to the board because
    /// their owner is dead (`team::orphans`), as they now are.
    pub fn task_board(&self) -> Result<(BoardView, Vec<Returned>)> {
        let mut board = self.team().tasks().glance()?;
        let returned = self.return_orphans(&board.owned_open())?;
        for r in &returned {
            board.replace(r.task.clone());
        }
        Ok((board, returned))
    }

    /// Gives back the open tasks of `board` whose owner is provably dead.
    fn return_orphans(&self, board: &[Task]) -> Result<Vec<Returned>> {
        self.team()
            .return_tasks_of_the_dead(board, |members| self.panes_gone(members))
    }

    /// Whether each member's pane is gone, asked of the team's backend when
    /// it can be reached from here and its panes outlive their lead; `None`
    /// otherwise (they may be alive). On a thread of its own: a caller may
    /// be inside an async runtime already (`swarm mcp`'s verbs are).
    pub(super) fn panes_gone(&self, members: &[Member]) -> Option<Vec<bool>> {
        let look = || {
            let session = self.session_if_reachable()?;
            if !session.caps().panes_outlive_lead {
                return None;
            }
            let rt = crate::dropped::ignore(crate::session::runtime(), "starting a runtime")?;
            let statuses = crate::dropped::ignore(
                rt.block_on(super::panes::pane_statuses(&session, members)),
                "looking at the panes of owners whose runtime is gone",
            )?;
            Some(
                statuses
                    .iter()
                    .map(|s| !matches!(s, swarm_backends::PaneStatus::Running { .. }))
                    .collect(),
            )
        };
        std::thread::scope(|s| s.spawn(look).join().ok().flatten())
    }

    /// One task; a missing one is [`TaskError::NotFound`].
    pub fn task_get(&self, id: &str) -> Result<Task> {
        let team = self.team();
        team.tasks().get(id)?.ok_or_else(|| {
            TaskError::NotFound {
                team: team.name.clone(),
                path: team.root.task(&team.name, id).unwrap_or_default(),
                id: id.to_string(),
            }
            .into()
        })
    }

    /// Changes a task as the acting member; a new owner must be on the
    /// roster (unless `force`) and is told of it.
    pub fn task_update(&self, id: &str, upd: TaskUpdate, force: bool) -> Result<Task> {
        self.require_own("change its tasks")?;
        let (team, me) = (self.team(), self.me());
        if let Some(Some(owner)) = &upd.owner {
            let roster = team.roster().read()?;
            recipients(&roster, me, owner, force).context("--owner")?;
        }
        let updated = team.tasks().update(id, upd, me)?;
        if let Some(owner) = &updated.new_owner {
            team.notify_assignment(&updated.task, owner, me)?;
        }
        Ok(updated.task)
    }

    /// Claims task `id`, or with `None` the lowest-id claimable task, for
    /// the acting member (with `busy_check`, refused while it owns another
    /// open task).
    pub fn task_claim(&self, id: Option<&str>, busy_check: bool) -> Result<Claimed> {
        self.require_own("change its tasks")?;
        let (team, me) = (self.team(), self.me());
        let mut claim = team.tasks().claim(id, me, busy_check)?;
        // Nothing for it, or the task named is another's: a dead owner's
        // task goes back to the board first, then the claim is tried again.
        if let Claim::Refused(Refusal::NothingClaimable | Refusal::AlreadyClaimed { .. }) = claim
            && !self.task_board()?.1.is_empty()
        {
            claim = team.tasks().claim(id, me, busy_check)?;
        }
        Ok(match claim {
            Claim::Claimed(task) => {
                team.notify_assignment(&task, me, me)?;
                Claimed::Task(task)
            }
            Claim::Refused(why) => Claimed::Nothing(format!("nothing claimed: {why}")),
        })
    }

    /// Deletes a task; `false` when there was none.
    pub fn task_delete(&self, id: &str) -> Result<bool> {
        self.require_own("change its tasks")?;
        Ok(self.team().tasks().delete(id)?)
    }
}
