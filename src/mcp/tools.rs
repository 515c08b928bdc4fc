//! The 14 tools: each parses its arguments ([`super::args`]), calls one
//! verb of [`TeamOps`] and renders its typed result as JSON (DESIGN §12's
//! table: names, arguments and result shapes are a contract). What a verb
//! refuses is the tool's error, in the CLI's words ([`Server::call`]).

use super::Server;
use super::args::*;
use crate::ops::board::{Claimed, TaskLine};
use crate::ops::mail::{MAX_WAIT, Message, Sent};
use crate::ops::spawn::SpawnRequest;
use crate::tasks::{NewTask, Status, TaskUpdate};
use anyhow::{Result, bail};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use serde_json::{Map, Value, json};
use std::time::Duration;

/// The tools, as `tools/list` names them.
pub const TOOLS: [&str; 14] = [
    "team_status",
    "spawn_teammate",
    "send_message",
    "read_inbox",
    "wait_for_messages",
    "task_create",
    "task_list",
    "task_get",
    "task_update",
    "task_claim",
    "shutdown_teammate",
    "kill_teammate",
    "teammate_output",
    "answer_request",
];

/// How long `shutdown_teammate` waits for the teammate's answer: with the
/// 2 s it is then given to end and the closing of its pane, the call stays
/// under [`MAX_WAIT`] (MCP clients give up near 60 s).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(40);

/// `kill_teammate`'s grace between SIGTERM and SIGKILL (`swarm kill`'s default).
const KILL_GRACE: Duration = Duration::from_secs(2);

/// `teammate_output`'s lines when the call names none.
const OUTPUT_LINES: u32 = 100;

/// `wait_for_messages`'s wait when the call names none.
const DEFAULT_WAIT: Duration = Duration::from_secs(30);

#[tool_router(vis = "pub(super)")]
impl Server {
    #[tool(
        description = "The team now: each member's status, pane, current task and unread \
        count, the task counts and the requests waiting for an answer (what `swarm status \
        --json` prints)."
    )]
    async fn team_status(&self) -> CallToolResult {
        self.call("team_status", |ops, _| async move {
            Ok(serde_json::to_value(ops.snapshot().await?)?)
        })
        .await
    }

    #[tool(
        description = "Adds a teammate in a new pane running the agent named (shell by \
        default) and returns its name and pane."
    )]
    async fn spawn_teammate(&self, Parameters(a): Parameters<SpawnArgs>) -> CallToolResult {
        self.call("spawn_teammate", move |ops, cwd| async move {
            let req = SpawnRequest {
                name: a.name,
                agent: a.agent,
                prompt: a.prompt,
                model: a.model,
                cwd,
                mode: a.mode,
                command: a.command.unwrap_or_default(),
                worktree: a.worktree.unwrap_or(false),
                ..SpawnRequest::default()
            };
            let s = ops.spawn(&req).await?;
            Ok(json!({ "name": s.name, "pane": s.pane.id.as_str() }))
        })
        .await
    }

    #[tool(
        description = "Sends a message to a member's inbox (or to every member with to \
        \"*\") and returns the id of each delivery."
    )]
    async fn send_message(&self, Parameters(a): Parameters<SendArgs>) -> CallToolResult {
        self.call("send_message", move |ops, _| async move {
            let done = ops
                .send_or_revive(&a.to, &a.text, a.summary.as_deref(), false)
                .await?;
            let sent: Vec<Sent> = done.delivered.iter().map(Sent::of).collect();
            Ok(match done.revived {
                Some(note) => json!({ "sent": sent, "revived": note }),
                None => json!({ "sent": sent }),
            })
        })
        .await
    }

    #[tool(
        description = "Your inbox: the messages not yet read (with unread_only false, also \
        those read before), marked read only when mark_read is true."
    )]
    async fn read_inbox(&self, Parameters(a): Parameters<ReadInboxArgs>) -> CallToolResult {
        self.call("read_inbox", move |ops, _| async move {
            let messages =
                ops.read_inbox(a.unread_only.unwrap_or(true), a.mark_read.unwrap_or(false))?;
            Ok(json!({ "messages": messages }))
        })
        .await
    }

    #[tool(
        description = "Waits (default 30 s, at most 50 s) until messages come to your inbox \
        and returns them, each only once; [] when none came in time."
    )]
    async fn wait_for_messages(&self, Parameters(a): Parameters<WaitArgs>) -> CallToolResult {
        self.call("wait_for_messages", move |ops, _| async move {
            let wait = match a.timeout_s {
                None => DEFAULT_WAIT,
                Some(s) if s.is_finite() && s >= 0.0 => {
                    Duration::from_secs_f64(s.min(MAX_WAIT.as_secs_f64()))
                }
                Some(s) => bail!("timeout_s must be a number of seconds from 0 to 50, not {s}"),
            };
            let messages: Vec<Message> = ops.wait_for_messages(wait)?;
            Ok(json!({ "messages": messages }))
        })
        .await
    }

    #[tool(
        description = "Puts a new task on the team's board (optionally with a shell command \
        that does it, tasks that must finish first, and an owner) and returns its id."
    )]
    async fn task_create(&self, Parameters(a): Parameters<TaskCreateArgs>) -> CallToolResult {
        self.call("task_create", move |ops, _| async move {
            let metadata = a.command.map(|c| {
                let mut m = Map::new();
                m.insert("command".into(), Value::String(c));
                m
            });
            let task = ops.task_create(NewTask {
                subject: a.subject,
                description: a.description.unwrap_or_default(),
                active_form: None,
                blocked_by: a.blocked_by.unwrap_or_default(),
                metadata,
            })?;
            if let Some(owner) = a.owner {
                let assign = TaskUpdate {
                    owner: Some(Some(owner)),
                    ..TaskUpdate::default()
                };
                if let Err(e) = ops.task_update(&task.id, assign, false) {
                    // The task is not left on the board half made.
                    crate::dropped::ignore(
                        ops.task_delete(&task.id),
                        "deleting a task whose owner was refused",
                    );
                    return Err(e);
                }
            }
            Ok(json!({ "id": task.id }))
        })
        .await
    }

    #[tool(
        description = "The team's tasks (id, subject, status, owner, blocked_by), only those \
        in one status or of one owner when asked."
    )]
    async fn task_list(&self, Parameters(a): Parameters<TaskListArgs>) -> CallToolResult {
        self.call("task_list", move |ops, _| async move {
            let status = a.status.as_deref().map(status).transpose()?;
            let tasks: Vec<TaskLine> = ops
                .task_list()?
                .tasks
                .iter()
                .filter(|t| status.is_none_or(|s| t.status == s))
                .filter(|t| {
                    a.owner
                        .as_deref()
                        .is_none_or(|o| t.owner.as_deref() == Some(o))
                })
                .map(TaskLine::of)
                .collect();
            Ok(json!({ "tasks": tasks }))
        })
        .await
    }

    #[tool(description = "One task, whole: subject, description, status, owner, \
        dependencies and metadata.")]
    async fn task_get(&self, Parameters(a): Parameters<TaskIdArgs>) -> CallToolResult {
        self.call("task_get", move |ops, _| async move {
            Ok(serde_json::to_value(ops.task_get(&a.id)?)?)
        })
        .await
    }

    #[tool(
        description = "Changes a task (status, owner, subject, description, more blocking \
        tasks) and returns it; a new owner is told."
    )]
    async fn task_update(&self, Parameters(a): Parameters<TaskUpdateArgs>) -> CallToolResult {
        self.call("task_update", move |ops, _| async move {
            let upd = TaskUpdate {
                subject: a.subject,
                description: a.description,
                status: a.status.as_deref().map(status).transpose()?,
                owner: a.owner.map(Some),
                add_blocked_by: a.add_blocked_by.unwrap_or_default(),
                ..TaskUpdate::default()
            };
            Ok(serde_json::to_value(ops.task_update(&a.id, upd, false)?)?)
        })
        .await
    }

    #[tool(
        description = "Claims a task for you (the one named, else the lowest-id claimable \
        one) and returns it, or says \"nothing claimable\" and why."
    )]
    async fn task_claim(&self, Parameters(a): Parameters<TaskClaimArgs>) -> CallToolResult {
        self.call("task_claim", move |ops, _| async move {
            Ok(match ops.task_claim(a.id.as_deref(), false)? {
                Claimed::Task(t) => serde_json::to_value(t)?,
                Claimed::Nothing(why) => Value::String(format!(
                    "nothing claimable: {}",
                    why.strip_prefix("nothing claimed: ").unwrap_or(&why)
                )),
            })
        })
        .await
    }

    #[tool(
        description = "Asks a teammate to shut down and waits (at most 40 s) for its answer: \
        approved (its pane closed, its tasks back on the board), rejected with its reason, \
        or timed_out."
    )]
    async fn shutdown_teammate(&self, Parameters(a): Parameters<ShutdownArgs>) -> CallToolResult {
        self.call("shutdown_teammate", move |ops, _| async move {
            let outcome = ops.shutdown(&a.name, a.reason, SHUTDOWN_WAIT, None).await?;
            Ok(serde_json::to_value(outcome)?)
        })
        .await
    }

    #[tool(
        description = "Kills a teammate now (its pane closed, it leaves the team) and returns \
        the tasks that went back on the board."
    )]
    async fn kill_teammate(&self, Parameters(a): Parameters<NameArgs>) -> CallToolResult {
        self.call("kill_teammate", move |ops, _| async move {
            Ok(serde_json::to_value(ops.kill(&a.name, KILL_GRACE).await?)?)
        })
        .await
    }

    #[tool(
        description = "The last lines (default 100, at most 1000) a teammate's pane printed, \
        as plain text without terminal escapes."
    )]
    async fn teammate_output(&self, Parameters(a): Parameters<OutputArgs>) -> CallToolResult {
        self.call("teammate_output", move |ops, _| async move {
            let lines = a.lines.unwrap_or(OUTPUT_LINES) as usize;
            Ok(serde_json::to_value(ops.output(&a.name, lines).await?)?)
        })
        .await
    }

    #[tool(
        description = "Approves or rejects a teammate's plan or permission request (by the id \
        team_status lists), with feedback for the asker."
    )]
    async fn answer_request(&self, Parameters(a): Parameters<AnswerArgs>) -> CallToolResult {
        self.call("answer_request", move |ops, _| async move {
            let answered = ops.answer(&a.request_id, a.approve, a.feedback)?;
            let mut out = serde_json::to_value(answered)?;
            out["done"] = Value::Bool(true);
            Ok(out)
        })
        .await
    }
}

/// A task status by its name (`in-progress` as the CLI writes it too).
fn status(s: &str) -> Result<Status> {
    match s.replace('-', "_").as_str() {
        "pending" => Ok(Status::Pending),
        "in_progress" => Ok(Status::InProgress),
        "completed" => Ok(Status::Completed),
        _ => bail!(
            "unknown status {:?}: pick one of pending, in_progress, completed",
            crate::text::escape_line(s)
        ),
    }
}
