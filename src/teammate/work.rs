//! The work loop of a teammate runtime (every agent but `claude`).
//!
//! Each time it picks work, in this order: a unit left in flight (see
//! below) > a `shutdown_request` from the lead > plain messages from the
//! lead > plain messages from peers > a task assigned to it by someone
//! else > the lowest-id claimable task (claimed atomically, then a
//! `task_assignment` to itself, as the CLI does). Other protocol frames are
//! applied on the way (`mode_set_request` from the lead is recorded in the
//! roster and used on the next run) or consumed and logged. A message is
//! consumed only after its unit ran and the reply was sent.
//!
//! Every unit is recorded before it reaches the agent, and its results
//! before they are delivered ([`super::inflight`]): a runtime that restarts
//! after its predecessor died mid-unit reports the unit to the lead as
//! interrupted and does not run it again; one that finds results not yet
//! delivered delivers them.
//!
//! After each unit: results go back (a reply to each sender; a task is
//! completed with `metadata.exitCode`, `output` (bounded tail),
//! `completedBy`, `durationMs`, `startedAt` and `finishedAt` (epoch ms)).
//! When no work is left: exactly one `idle_notification` to the lead for
//! this transition to idle, describing the last unit, and `isActive:false`
//! (set `true` when a unit starts).
//!
//! Decisions, documented:
//! * **A failed task** (non-zero exit) is never completed. It stays on the
//!   board `pending` and still owned by this member, with
//!   `metadata.failed:true`, `exitCode`, `output`, `failedBy` and
//!   `lastFailure`, so nobody re-runs it blindly in a loop; the lead gets a
//!   plain message saying so. The lead retries by re-assigning it (the new
//!   owner's runtime runs tasks assigned to it) or by unassigning it (then
//!   anyone may claim it); a member that leaves returns it to the pool.
//! * **An interrupted unit** (the runtime died while the agent ran it): the
//!   next runtime of this member tells the lead "NAME: interrupted while
//!   running …; not re-run" (and each peer whose message it was), consumes
//!   the messages, and leaves a task as a failed one is (pending, owned,
//!   `metadata.interrupted:true`, `lastFailure`), unless it changed hands
//!   meanwhile.
//! * **A crash** (the agent killed by a signal, or not startable): the task
//!   goes back to the board (owner removed, `pending`, `lastFailure`), the
//!   lead gets `idle_notification` with `idleReason:"failed"` and a
//!   `failureReason`, and the runtime exits non-zero. Messages the agent
//!   could not be started for stay unread.
//! * **Errors** in a step (a lock that times out, a full disk, no file
//!   descriptors, a file that vanished, an agent that cannot start *yet*)
//!   do not end the runtime: it logs, pauses (100 ms doubling to 5 s), tells
//!   the lead once per episode in a plain message ("NAME: ERROR; retrying
//!   …"), and tries again; the record of the unit in flight makes the retry
//!   settle the unit, not run it twice ([`super::trouble`]). Only a deleted
//!   team or the member's removal from the roster ends it, cleanly (exit 0).
//! * **Shutdown**: the runtime runs one unit at a time, so a request that
//!   arrives mid-unit is answered when the unit has finished (and its result
//!   is reported): then nothing is in flight and it is approved
//!   (`shutdown_approved` with the roster's `paneId` and `backendType`, exit
//!   0). While a task waits for plan approval, the task is handed back to
//!   the board first. A request not from `team-lead` is rejected with a
//!   reason (`shutdown_rejected` to the lead).
//! * **Plan mode**: before a task runs, a `plan_approval_request` whose
//!   `planContent` is what will run goes to the lead; the runtime waits for
//!   the matching response (still answering a shutdown). Rejected: the task
//!   stays pending and owned, with `metadata.planRejected` holding the
//!   feedback, and the idle notification says why.
//!
//! The code, by noun: this file holds the loop and its decisions;
//! `work/inbox.rs` reads the inbox and picks the next unit;
//! `work/messages.rs` and `work/task.rs` run the two kinds of unit (a task
//! with its plan gate); `work/turn.rs` the turn's ends (active, idle,
//! shutdown approved, crash); `work/recovery.rs` the record of the unit in
//! flight and what a restart does with it.

mod inbox;
mod messages;
mod recovery;
mod task;
mod turn;

use super::Wakeups;
use super::dispatch::Available;
use super::inflight::{Inflight, Journal, Outcome, Unit};
use super::trouble::{MAX_PAUSE, Trouble};
use crate::agents::{Pane, Runner};
use crate::context::Exit;
use crate::mailbox::Entry;
use crate::names::LEAD_NAME;
use crate::protocol::ShutdownRequest;
use crate::tasks::Task;
use crate::team::{Member, Team};
use anyhow::{Result, anyhow};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long an idle runtime sleeps before looking again on its own (file
/// events wake it at once; this is only a safety net).
const IDLE_WAIT: Duration = Duration::from_secs(300);
/// Most bytes of output kept in a task's metadata.
const OUTPUT_META_BYTES: usize = 4000;
/// Most characters of `result` in an idle notification (as Claude Code).
const RESULT_CHARS: usize = 4000;
/// Room left in a reply for the truncation note and the exit line.
const REPLY_SLACK: usize = 512;
/// How long the runtime waits for its own inbox's lock before it counts
/// the wait as a failed step (then it pauses and tries again, and the lead
/// hears of it). Far below the 60 s default: a runtime that sits in one
/// call cannot say it is stuck, and a live holder keeps a lock for
/// milliseconds.
const LOCK_PATIENCE: Duration = Duration::from_secs(3);

/// Senders whose plain messages count as the lead's.
fn is_lead(from: &str) -> bool {
    matches!(from, LEAD_NAME | "user" | "system")
}

/// What the loop does next.
enum Work {
    Shutdown(Entry, ShutdownRequest),
    Messages(Vec<Entry>),
    Task(Task),
    Nothing,
}

/// How a step ended, for the loop.
enum Flow {
    /// Something was done; look for more at once.
    Continue,
    /// Nothing to do: wait for a change.
    Idle,
    Exit(Exit),
    Crashed {
        task: Option<String>,
        reason: String,
    },
}

/// What the plan gate decided.
#[allow(
    clippy::large_enum_variant,
    reason = "one short-lived value per plan request"
)]
enum Gate {
    Approved,
    Rejected(String),
    Shutdown(Entry, ShutdownRequest),
}

pub struct Runtime {
    team: Team,
    me: String,
    member: Member,
    runner: Runner,
    pane: Pane,
    mode: Option<String>,
    active: bool,
    /// The roster says idle but the lead has not heard it yet.
    idle_owed: bool,
    /// The roster's `isActive` is to be set false and the in-flight record
    /// read: the first step's work.
    fresh: bool,
    last: Option<Outcome>,
    /// Tasks someone else assigned to this member (from `task_assignment`).
    assigned: BTreeSet<u64>,
    /// This member's record of the unit in flight, and the unit itself.
    journal: Journal,
    inflight: Option<Inflight>,
    /// Says when this runtime idles, and reads the task offered to it
    /// (`teammate::dispatch`); `None` until the loop starts.
    available: Option<Available>,
    /// The next look for work claims without an id: the first, one after a
    /// wait that ran out, and every one while the runtime polls (no team
    /// watcher offers it tasks then).
    look: bool,
    /// Why the roster's `isActive` could not be set when the agent started
    /// (`turn::Started`): the step fails with it once the unit is settled.
    start_failed: Option<anyhow::Error>,
}

impl Runtime {
    /// `journal` is where this member's unit in flight is recorded.
    pub fn new(team: Team, member: Member, runner: Runner, journal: Journal) -> Runtime {
        Runtime {
            me: member.name.clone(),
            mode: member.mode.clone(),
            team,
            member,
            runner,
            pane: Arc::new(Mutex::new(std::io::stdout())),
            active: false,
            idle_owed: false,
            fresh: true,
            last: None,
            assigned: BTreeSet::new(),
            journal,
            inflight: None,
            available: None,
            look: true,
            start_failed: None,
        }
    }

    /// Runs until the teammate leaves; then ends whatever its agents left
    /// running below it (see [`crate::agents::process::guard_descendants`]).
    pub fn run(self) -> Result<Exit> {
        if let Err(e) = crate::agents::process::guard_descendants() {
            tracing::warn!(error = %e, "cannot adopt what the agent leaves behind");
        }
        let r = self.work();
        let ended =
            crate::agents::process::end_descendants(crate::agents::process::DESCENDANTS_GRACE);
        if ended > 0 {
            tracing::info!(ended, "ended what the agent left running");
        }
        r
    }

    fn work(mut self) -> Result<Exit> {
        let inboxes = self.team.root.inboxes_dir(&self.team.name)?;
        let tasks = self.team.tasks().dir()?;
        for d in [&inboxes, &tasks] {
            crate::atomic_file::ensure_dir(d)
                .map_err(|e| anyhow!("creating {}: {e}", d.display()))?;
        }
        // Watch before the first look, so nothing written in between is missed.
        let mut wake = Wakeups::new(&self.team, &self.me, &[inboxes, tasks])?;
        if !self.member.is_ai_lead() {
            self.available = Some(Available::new(&self.team, &self.me, self.runner.takes())?);
        }
        self.banner(wake.polling_reason(), wake.is_remote());
        let mut trouble = Trouble::default();
        loop {
            let flow = match self.step(&mut wake) {
                Ok(flow) => flow,
                Err(e) => {
                    if let Some(why) = self.gone() {
                        return Ok(self.leave(&why));
                    }
                    self.failed(&e, &mut trouble);
                    continue;
                }
            };
            if let Some(r) = trouble.recovered() {
                let secs = r.after.as_secs_f64();
                tracing::info!(failures = r.failures, secs, "recovered");
                self.say(&format!(
                    "✔ recovered after {secs:.1} s ({} failed tries)",
                    r.failures
                ));
            }
            match flow {
                Flow::Continue => {}
                Flow::Idle => {
                    tracing::debug!("idle: waiting for a wake-up");
                    let rung = wake.wait(IDLE_WAIT);
                    self.look = !rung || wake.polling_reason().is_some();
                }
                Flow::Exit(exit) => return Ok(exit),
                Flow::Crashed { task, reason } => return Err(self.crash(task, &reason)),
            }
        }
    }

    /// A step failed for a reason that may pass: log it, tell the lead
    /// once per episode, pause, and let the loop try again.
    fn failed(&mut self, e: &anyhow::Error, trouble: &mut Trouble) {
        let pause = trouble.failed();
        tracing::warn!(
            error = %format!("{e:#}"),
            failures = trouble.failures(),
            pause_ms = pause.as_millis() as u64,
            "step failed; retrying"
        );
        if trouble.owes_note() {
            self.say(&format!("⚠ {e:#}; retrying"));
            let text = format!(
                "{}: {e:#}; retrying (pausing up to {} s between tries; you hear of this \
                 once until it recovers)",
                self.me,
                MAX_PAUSE.as_secs()
            );
            let summary = format!("{}: retrying after an error", self.me);
            match self
                .team
                .send_text(&self.me, LEAD_NAME, &text, Some(&summary), true)
            {
                Ok(_) => trouble.noted(),
                Err(n) => tracing::warn!(error = %format!("{n:#}"), "could not tell the lead"),
            }
        }
        std::thread::sleep(pause);
    }

    /// Why this runtime has nothing left to do after a failed step: its
    /// team deleted, or itself removed from the roster. `None` when the
    /// roster cannot be read (that may pass too).
    fn gone(&self) -> Option<String> {
        let roster = self.team.roster();
        if !roster.exists() {
            return Some(format!("team {:?} was deleted", self.team.name));
        }
        match roster.read() {
            Ok(tf) if tf.member(&self.me).is_none() => Some(format!(
                "{} was removed from team {:?}",
                self.me, self.team.name
            )),
            _ => None,
        }
    }

    /// Ends the runtime cleanly because its team or its place is gone.
    fn leave(&mut self, why: &str) -> Exit {
        tracing::info!(why, "leaving");
        self.say(&format!("■ {why}; bye"));
        if self.team.roster().exists() {
            // Whatever was in flight is the lead's now; a later member of
            // this name must not inherit it.
            self.forget();
        }
        Exit::Ok
    }

    /// One pass of the loop: settle what is in flight, else pick and run
    /// the next unit.
    fn step(&mut self, wake: &mut Wakeups) -> Result<Flow> {
        if self.fresh {
            self.team.roster().set_active(&self.me, false)?;
            self.load_inflight()?;
            self.fresh = false;
        }
        if let Some(rec) = self.inflight.clone() {
            return self.resume(rec, wake);
        }
        let work = self.next_work()?;
        if let Some(a) = self.available.as_mut() {
            match work {
                Work::Nothing => a.idle(),
                _ => a.busy(),
            }
        }
        match work {
            Work::Shutdown(entry, req) => Ok(Flow::Exit(self.approve_shutdown(&entry, &req)?)),
            Work::Messages(batch) => self.handle_messages(batch),
            Work::Task(task) => {
                self.pick(Unit::Task {
                    id: task.id.clone(),
                    subject: task.subject.clone(),
                })?;
                self.handle_task(task, wake)
            }
            Work::Nothing => {
                self.go_idle()?;
                Ok(Flow::Idle)
            }
        }
    }

    fn say(&self, line: &str) {
        let mut p = self.pane.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(p, "{line}").and_then(|()| p.flush());
    }

    fn banner(&self, polling: Option<&str>, remote: bool) {
        let cwd = self
            .runner
            .cwd
            .as_ref()
            .map(|c| c.display().to_string())
            .unwrap_or_else(|| ".".into());
        self.say(&format!(
            "swarm teammate {}@{} · agent {} · cwd {cwd}",
            self.me,
            self.team.name,
            self.runner.agent.name()
        ));
        let how = match polling {
            Some(why) if remote => {
                super::wake::tell_lead(&self.team, &self.me, &format!("my runtime {why}"));
                why.to_owned()
            }
            Some(why) => {
                super::wake::tell_lead(
                    &self.team,
                    &self.me,
                    &format!("my runtime polls every second for messages and tasks: {why}"),
                );
                format!("polling every second: {why}")
            }
            None => "doorbell".to_owned(),
        };
        self.say(&format!("  waiting for messages and tasks ({how})"));
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut c: String = s.chars().take(max - 1).collect();
    c.push('…');
    c
}
