//! The ends of a teammate runtime's turn: `isActive` set when a unit
//! starts, the transition to idle with its one `idle_notification`, an
//! approved shutdown, and a crash reported to the lead.

use super::{RESULT_CHARS, Runtime};
use crate::clock;
use crate::context::Exit;
use crate::mailbox::Entry;
use crate::names::LEAD_NAME;
use crate::protocol::{
    CompletedStatus, IdleNotification, IdleReason, Message, ShutdownApproved, ShutdownRequest,
};
use anyhow::{Result, anyhow};

impl Runtime {
    pub(super) fn start(&mut self) -> Result<()> {
        if !self.active {
            self.team.roster().set_active(&self.me, true)?;
            self.active = true;
            // A transition to idle the lead never heard of is over.
            self.idle_owed = false;
        }
        Ok(())
    }

    /// The transition to idle: the roster first, then the lead hears it,
    /// once. Each half is done once, whichever fails and is retried.
    pub(super) fn go_idle(&mut self) -> Result<()> {
        if self.active {
            self.team.roster().set_active(&self.me, false)?;
            self.active = false;
            self.idle_owed = true;
        }
        if !self.idle_owed {
            return Ok(());
        }
        let (task, failure, result) = match &self.last {
            Some(o) => (o.task.clone(), o.failure.clone(), o.result.clone()),
            None => (None, None, "Teammate idle.".to_string()),
        };
        let status = task.as_ref().map(|_| match failure {
            Some(_) => CompletedStatus::Failed,
            None => CompletedStatus::Resolved,
        });
        self.send_idle(IdleReason::Available, task, status, failure, result)?;
        self.idle_owed = false;
        self.last = None;
        self.say("· idle");
        Ok(())
    }

    pub(super) fn send_idle(
        &self,
        reason: IdleReason,
        task: Option<String>,
        status: Option<CompletedStatus>,
        failure: Option<String>,
        result: String,
    ) -> Result<()> {
        let msg = Message::IdleNotification(IdleNotification {
            from: self.me.clone(),
            timestamp: clock::now_iso(),
            idle_reason: Some(reason),
            summary: None,
            completed_task_id: task,
            completed_status: status,
            failure_reason: failure,
            result: Some(result.chars().take(RESULT_CHARS).collect()),
        });
        self.team.send_protocol(&self.me, LEAD_NAME, &msg, true)?;
        Ok(())
    }

    pub(super) fn approve_shutdown(
        &mut self,
        entry: &Entry,
        req: &ShutdownRequest,
    ) -> Result<Exit> {
        let roster = self.team.roster().read()?;
        let mine = roster.member(&self.me);
        let msg = Message::ShutdownApproved(ShutdownApproved {
            request_id: req.request_id.clone(),
            from: self.me.clone(),
            timestamp: clock::now_iso(),
            pane_id: mine
                .map(|m| m.tmux_pane_id.clone())
                .filter(|p| !p.is_empty()),
            backend_type: mine.and_then(|m| m.backend_type.clone()),
        });
        let active = mine.is_some_and(|m| m.is_active == Some(true));
        self.team.send_protocol(&self.me, LEAD_NAME, &msg, true)?;
        self.consume(std::slice::from_ref(entry))?;
        // Whoever asked removes the member from the roster; an idle one
        // (already `isActive:false`) does not take the roster's lock to
        // find nothing to change: in a `down` of 32 the runtimes queued on
        // that lock, one after another, before their panes could end.
        if active {
            self.team.roster().set_active(&self.me, false)?;
        }
        let why = req.reason.as_deref().unwrap_or("no reason given");
        self.say(&format!("■ shutdown approved ({why}); bye"));
        Ok(Exit::Ok)
    }

    /// Reports a dead agent and returns the error the runtime exits with.
    pub(super) fn crash(&mut self, task: Option<String>, reason: &str) -> anyhow::Error {
        self.say(&format!("✘ {reason}"));
        tracing::error!(reason, "agent crashed");
        if let Some(id) = &task
            && let Err(e) = self.hand_back(id, reason)
        {
            tracing::error!(error = %format!("{e:#}"), task = %id, "could not hand the task back");
        }
        let status = task.as_ref().map(|_| CompletedStatus::Failed);
        if let Err(e) = self.send_idle(
            IdleReason::Failed,
            task.clone(),
            status,
            Some(reason.to_string()),
            format!("{} stopped: {reason}", self.me),
        ) {
            tracing::error!(error = %format!("{e:#}"), "could not tell the lead");
        }
        if let Err(e) = self.team.roster().set_active(&self.me, false) {
            tracing::warn!(%e, "could not record that this teammate stopped its turn");
        }
        match task {
            Some(id) => anyhow!("{reason}; task {id} was returned to the board"),
            None => anyhow!("{reason}"),
        }
    }
}
