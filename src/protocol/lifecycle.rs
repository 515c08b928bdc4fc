//! Frames about a teammate's life: shutdown request / approval / rejection,
//! idle notifications, task assignments and permission-mode changes.
//!
//! Field order is the order Claude Code writes (reference §6); serde writes
//! struct fields in declaration order, after the `type` tag.

use serde::{Deserialize, Serialize};

/// Lead → teammate: please stop. `type, requestId, from, reason?, timestamp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownRequest {
    pub request_id: String,
    pub from: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub timestamp: String,
}

/// Teammate → lead: stopping now.
/// `type, requestId, from, timestamp, paneId?, backendType?`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownApproved {
    pub request_id: String,
    pub from: String,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
}

/// Teammate → lead: not now. `type, requestId, from, reason, timestamp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShutdownRejected {
    pub request_id: String,
    pub from: String,
    pub reason: String,
    pub timestamp: String,
}

/// Why a teammate went idle. Values Claude Code does not write yet are kept
/// as [`IdleReason::Other`], so a newer writer never breaks a reader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdleReason {
    Available,
    Interrupted,
    Failed,
    #[serde(untagged)]
    Other(String),
}

/// How the task a teammate just finished ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompletedStatus {
    Resolved,
    Blocked,
    Failed,
    #[serde(untagged)]
    Other(String),
}

/// Teammate → lead at the end of every turn.
/// `type, from, timestamp, idleReason?, summary?, completedTaskId?,
/// completedStatus?, failureReason?, result?`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdleNotification {
    pub from: String,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_reason: Option<IdleReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_status: Option<CompletedStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// The turn's final answer (Claude Code caps it at 4000 chars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// Whoever sets a task's owner → the new owner.
/// `type, taskId, subject, description, assignedBy, timestamp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskAssignment {
    pub task_id: String,
    pub subject: String,
    pub description: String,
    pub assigned_by: String,
    pub timestamp: String,
}

/// Lead → teammate: switch permission mode (2.1.88 shape `{type, mode,
/// from}`). Claude Code 2.1.328 drops it from the inbox; swarm's own runtime
/// honours it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeSetRequest {
    pub mode: String,
    pub from: String,
}
