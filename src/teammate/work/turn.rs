//! The ends of a teammate runtime's turn: `isActive` set when a unit
//! starts, the transition to idle with its one `idle_notification`, an
//! approved shutdown, and a crash reported to the lead.

use super::{RESULT_CHARS, Runtime};
use crate::agents::Runner;
use crate::clock;
use crate::context::Exit;
use crate::mailbox::Entry;
use crate::names::LEAD_NAME;
use crate::protocol::{
    CompletedStatus, IdleNotification, IdleReason, Message, ShutdownApproved, ShutdownRequest,
};
use crate::team::Team;
use crate::teammate::inflight::Journal;
use anyhow::{Result, anyhow};

/// Lets go of the pane's terminal for good: standard input, output and
/// error become `/dev/null`, and the hang-up that comes when the pane
/// closes is ignored (the runtime has its last writes to finish). Nothing
/// can fail here that the runtime could do anything about: it runs on.
fn release_terminal() {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: ignoring a signal installs no handler of ours.
        unsafe { libc::signal(libc::SIGHUP, libc::SIG_IGN) };
        if let Ok(null) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
        {
            for fd in 0..=2 {
                // SAFETY: dup2 onto the standard descriptors, which stay
                // open (now on /dev/null); no Rust object owns them.
                unsafe { libc::dup2(null.as_raw_fd(), fd) };
            }
        }
    }
}

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

    /// The runner, and what follows the start of the agent it runs.
    pub(super) fn runner_and_started(&mut self) -> (&Runner, Started<'_>) {
        let started = Started {
            journal: &self.journal,
            team: &self.team,
            me: &self.me,
            active: &mut self.active,
            idle_owed: &mut self.idle_owed,
            failed: &mut self.start_failed,
            done: false,
        };
        (&self.runner, started)
    }

    /// The error the roster's `isActive` met when the agent started, if
    /// any (see [`Started`]).
    pub(super) fn start_failed(&mut self) -> Result<()> {
        match self.start_failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
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
        let why = req.reason.as_deref().unwrap_or("no reason given");
        // Its pane goes first: the runtime lets go of the pane's terminal
        // now, and tmux closes a pane released to close at its end (`swarm
        // down`) while the approval and the consumption are written, not
        // after them (the server's work on each closing pane, some 4 ms
        // here, made the tail of a `down` of 8). A pane kept shows dead
        // until the process ends.
        self.say(&format!("■ shutting down ({why})"));
        release_terminal();
        // First, so that the teardown of its watches is over by the exit.
        crate::teammate::wake::leave_team_watch();
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
        crate::logging::fault_gate("SWARM_FAULT_SHUTDOWN_GATE");
        self.consume(std::slice::from_ref(entry))?;
        // Whoever asked removes the member from the roster; an idle one
        // (already `isActive:false`) does not take the roster's lock to
        // find nothing to change: in a `down` of 32 the runtimes queued on
        // that lock, one after another, before their panes could end.
        if active {
            self.team.roster().set_active(&self.me, false)?;
        }
        tracing::info!(reason = why, "shutdown approved");
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

/// What a unit's start does once its agent runs, not before (called by
/// the runner as soon as the agent's process has exec'd): nothing here is
/// needed for the agent to start, so none of it delays it.
///
/// * The record of the unit (renamed into place before the agent started:
///   see `Runtime::run_recorded`) is made durable.
/// * The roster says the member is active (`isActive`, what the lead and
///   `swarm status` show), as `Runtime::start` does before a task. A
///   message needs no roster write before it runs: its entry stays unread
///   in the inbox until it is settled, so nobody prunes or shuts down the
///   member for idleness meanwhile (`MemberStatus::prunable`), and the
///   runtime answers a shutdown only between units. A write that fails is
///   kept ([`Runtime::start_failed`]) and fails the step once the unit is
///   settled, as it failed the step before the unit ran: a member removed
///   from the roster meanwhile then leaves.
pub(super) struct Started<'a> {
    journal: &'a Journal,
    team: &'a Team,
    me: &'a str,
    active: &'a mut bool,
    idle_owed: &'a mut bool,
    failed: &'a mut Option<anyhow::Error>,
    /// Called already (a preset may start a second process for one run).
    done: bool,
}

impl Started<'_> {
    pub(super) fn call(&mut self) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        if let Err(e) = self.journal.sync() {
            // Still whole for a runtime killed now (see `run_recorded`);
            // the record of the unit's results, next, is saved durably.
            tracing::warn!(error = %format!("{e:#}"), "could not sync the record of the unit in flight");
        }
        if !*self.active {
            match self.team.roster().set_active(self.me, true) {
                Ok(_) => {
                    *self.active = true;
                    // A transition to idle the lead never heard of is over.
                    *self.idle_owed = false;
                }
                Err(e) => {
                    let e = anyhow::Error::new(e).context("recording that this teammate is active");
                    *self.failed = Some(e);
                }
            }
        }
    }
}
