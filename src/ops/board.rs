//! The task verbs, as the acting member: create, list, get, update
//! (an owner change tells the new owner, as Claude Code does), claim (the
//! claimant told as any assignee is) and delete. Reading works on any
//! team; a change is refused on a team swarm did not start.

use super::TeamOps;
use crate::tasks::{Claim, NewTask, Task, TaskError, TaskList, TaskUpdate};
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

    /// The whole board (and the task files that did not read, set aside).
    pub fn task_list(&self) -> Result<TaskList> {
        Ok(self.team().tasks().list()?)
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
        Ok(match team.tasks().claim(id, me, busy_check)? {
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
