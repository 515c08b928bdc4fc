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

mod recovery;

use super::Wakeups;
use super::inflight::{Inflight, Journal, MessageRef, Outcome, Post, Stage, Unit};
use super::trouble::{MAX_PAUSE, Trouble};
use crate::agents::process::{Ended, Finished, tail_of};
use crate::agents::{Pane, Runner};
use crate::clock;
use crate::context::Exit;
use crate::mailbox::{Entry, MAX_TEXT_BYTES, Mailbox};
use crate::protocol::{
    self, CompletedStatus, IdleNotification, IdleReason, Message, ModeSetRequest,
    PlanApprovalRequest, ShutdownApproved, ShutdownRejected, ShutdownRequest,
};
use crate::tasks::{Claim, Status, Task, TaskUpdate, parse_id};
use crate::team::names::LEAD_NAME;
use crate::team::{Member, Team};
use anyhow::{Result, anyhow};
use serde_json::{Map, Value, json};
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
        self.banner(wake.polling_reason());
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
                    wake.wait(IDLE_WAIT);
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
        match self.next_work()? {
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

    fn banner(&self, polling: Option<&str>) {
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

    /// This team's mailbox, waiting at most [`LOCK_PATIENCE`] for a lock.
    fn mailbox(&self) -> Mailbox {
        self.team.mailbox().with_lock_timeout(LOCK_PATIENCE)
    }

    /// Unread entries of this member's inbox.
    fn unread(&self) -> Result<Vec<Entry>> {
        let read = self.mailbox().read(&self.me)?;
        if let Some(q) = &read.quarantined {
            tracing::warn!(copy = %q.display(), "my inbox was corrupt; copied aside");
        }
        Ok(read.entries.into_iter().filter(Entry::is_unread).collect())
    }

    fn consume(&self, entries: &[Entry]) -> Result<()> {
        let keys: Vec<_> = entries.iter().map(Entry::key).collect();
        self.mailbox().consume(&self.me, &keys)?;
        Ok(())
    }

    /// Consumes the entries of the inbox that are these messages (those
    /// already gone are fine).
    fn consume_refs(&self, refs: &[MessageRef]) -> Result<()> {
        let read = self.mailbox().read(&self.me)?;
        let mine: Vec<Entry> = read
            .entries
            .into_iter()
            .filter(|e| refs.iter().any(|r| r.is(e)))
            .collect();
        self.consume(&mine)
    }

    fn next_work(&mut self) -> Result<Work> {
        let entries = self.unread()?;
        if !entries.is_empty() {
            // `benches/runtime.rs` measures delivery from this line.
            tracing::debug!(
                unread = entries.len(),
                at_us = crate::clock::now_us(),
                "inbox read"
            );
        }
        if let Some((e, r)) = entries.iter().find_map(|e| match e.protocol() {
            Some(Message::ShutdownRequest(r)) if e.from == LEAD_NAME => Some((e.clone(), r)),
            _ => None,
        }) {
            return Ok(Work::Shutdown(e, r));
        }
        let (mut lead, mut peers, mut handled) = (Vec::new(), Vec::new(), Vec::new());
        for e in entries {
            match e.protocol() {
                None if is_lead(&e.from) => lead.push(e),
                None => peers.push(e),
                Some(msg) => {
                    self.apply_frame(&e, msg)?;
                    handled.push(e);
                }
            }
        }
        self.consume(&handled)?;
        for batch in [lead, peers] {
            if !batch.is_empty() {
                return Ok(Work::Messages(batch));
            }
        }
        // An id leaves the set only once its claim has been decided.
        while let Some(&id) = self.assigned.first() {
            let claim = self
                .team
                .tasks()
                .claim(Some(&id.to_string()), &self.me, false)?;
            self.assigned.remove(&id);
            if let Claim::Claimed(t) = claim {
                return Ok(Work::Task(t));
            }
        }
        match self.team.tasks().claim(None, &self.me, false)? {
            Claim::Claimed(t) => {
                if let Err(e) = self.team.notify_assignment(&t, &self.me, &self.me) {
                    tracing::warn!(error = %format!("{e:#}"), task = %t.id, "task_assignment not sent");
                }
                Ok(Work::Task(t))
            }
            Claim::Refused(_) => Ok(Work::Nothing),
        }
    }

    /// A protocol frame that is not a unit of work by itself.
    fn apply_frame(&mut self, e: &Entry, msg: Message) -> Result<()> {
        match msg {
            Message::ShutdownRequest(r) => {
                let reason = format!(
                    "only {LEAD_NAME} may ask me to shut down (this request came from {:?})",
                    e.from
                );
                self.say(&format!("✘ shutdown request from {} rejected", e.from));
                self.team.send_protocol(
                    &self.me,
                    LEAD_NAME,
                    &Message::ShutdownRejected(ShutdownRejected {
                        request_id: r.request_id,
                        from: self.me.clone(),
                        reason,
                        timestamp: clock::now_iso(),
                    }),
                    true,
                )?;
            }
            Message::ModeSetRequest(m) if e.from == LEAD_NAME => self.apply_mode(&m)?,
            Message::TaskAssignment(a) if a.assigned_by != self.me => {
                if let Some(n) = parse_id(&a.task_id) {
                    self.assigned.insert(n);
                }
            }
            other => tracing::info!(from = %e.from, frame = %other.one_line(), "consumed"),
        }
        Ok(())
    }

    fn apply_mode(&mut self, m: &ModeSetRequest) -> Result<()> {
        self.team.roster().set_mode(&self.me, &m.mode)?;
        self.mode = Some(m.mode.clone());
        self.say(&format!("⚙ permission mode: {}", m.mode));
        Ok(())
    }

    fn start(&mut self) -> Result<()> {
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
    fn go_idle(&mut self) -> Result<()> {
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

    fn send_idle(
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

    fn handle_messages(&mut self, batch: Vec<Entry>) -> Result<Flow> {
        self.start()?;
        let units: Vec<Vec<Entry>> = if self.runner.one_message_per_run() {
            batch.into_iter().map(|e| vec![e]).collect()
        } else {
            vec![batch]
        };
        for unit in units {
            let senders: BTreeSet<&str> = unit.iter().map(|e| e.from.as_str()).collect();
            let who = senders.iter().copied().collect::<Vec<_>>().join(", ");
            let first = unit[0].text.lines().next().unwrap_or("");
            let refs = unit
                .iter()
                .map(|e| {
                    let summary = e
                        .summary
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| e.text.lines().next().unwrap_or(""));
                    MessageRef::of(e, clip(summary, 80))
                })
                .collect();
            self.run_recorded(Unit::Messages { messages: refs })?;
            self.say(&format!("▶ message from {who}: {}", clip(first, 100)));
            let f = self
                .runner
                .run_messages(&unit, self.mode.as_deref(), self.pane.clone());
            if let Ended::NotStarted { .. } = f.ended {
                // The agent never saw them: they stay unread, for a later
                // try or a runtime that can start it (nothing is consumed
                // unprocessed).
                self.forget();
                if f.ended.may_start_later() {
                    return Err(anyhow!("the agent {}", f.ended.describe()));
                }
                return Ok(Flow::Crashed {
                    task: None,
                    reason: format!("the agent {}", f.ended.describe()),
                });
            }
            let reply = reply_text(&f);
            let posts = senders
                .iter()
                .map(|to| Post::Send {
                    to: to.to_string(),
                    text: reply.clone(),
                    summary: format!("reply: {}", clip(first, 80)),
                    force: false,
                })
                .collect();
            let crash = f
                .ended
                .is_crash()
                .then(|| format!("the agent {}", f.ended.describe()));
            let outcome = Outcome {
                task: None,
                failure: None,
                result: reply,
            };
            self.ran(posts, outcome, crash)?;
            let flow = self.settle()?;
            self.say(&format!(
                "✔ replied to {who} ({}, {:.1} s)",
                f.ended.describe(),
                f.elapsed.as_secs_f64()
            ));
            if !matches!(flow, Flow::Continue) {
                return Ok(flow);
            }
        }
        Ok(Flow::Continue)
    }

    /// Runs a task this member holds, recorded as picked (a resumed one
    /// may have its plan approved, or its approval asked for, already).
    fn handle_task(&mut self, task: Task, wake: &mut Wakeups) -> Result<Flow> {
        let (approved, asked) = match self.inflight.as_ref().map(|r| &r.stage) {
            Some(Stage::Picked {
                plan_approved,
                plan_request,
            }) => (*plan_approved, plan_request.clone()),
            _ => (false, None),
        };
        self.start()?;
        self.say(&format!("▶ task {}: {}", task.id, task.subject));
        if self.member.plan_mode_required == Some(true) && !approved {
            match self.plan_gate(&task, asked, wake)? {
                Gate::Approved => {
                    self.say(&format!("✔ plan for task {} approved", task.id));
                    self.restage(Stage::Picked {
                        plan_approved: true,
                        plan_request: None,
                    })?;
                }
                Gate::Rejected(feedback) => {
                    let mut md = Map::new();
                    md.insert("planRejected".into(), json!(feedback));
                    self.say(&format!("✘ plan for task {} rejected: {feedback}", task.id));
                    let outcome = Outcome {
                        task: Some(task.id.clone()),
                        failure: Some(format!("plan rejected: {feedback}")),
                        result: format!("Task {} not run: the plan was rejected.", task.id),
                    };
                    let post = Post::TaskUpdate {
                        id: task.id.clone(),
                        status: Status::Pending,
                        unassign: false,
                        metadata: md,
                    };
                    self.ran(vec![post], outcome, None)?;
                    return self.settle();
                }
                Gate::Shutdown(entry, req) => {
                    self.hand_back(&task.id, "the teammate shut down before running it")?;
                    self.forget();
                    return Ok(Flow::Exit(self.approve_shutdown(&entry, &req)?));
                }
            }
        }
        self.run_recorded(Unit::Task {
            id: task.id.clone(),
            subject: task.subject.clone(),
        })?;
        let started_at = clock::now_ms();
        let f = self
            .runner
            .run_task(&task, self.mode.as_deref(), self.pane.clone());
        if f.ended.may_start_later() {
            // Never started, for now: the task stays claimed, to run on the
            // next try.
            self.restage(Stage::Picked {
                plan_approved: true,
                plan_request: None,
            })?;
            return Err(anyhow!(
                "the agent {} for task {}",
                f.ended.describe(),
                task.id
            ));
        }
        if f.ended.is_crash() {
            self.forget();
            return Ok(Flow::Crashed {
                task: Some(task.id.clone()),
                reason: format!(
                    "the agent {} while running task {}",
                    f.ended.describe(),
                    task.id
                ),
            });
        }
        let (output, cut) = tail_of(&f.output, OUTPUT_META_BYTES);
        let mut md = Map::new();
        md.insert("exitCode".into(), json!(f.ended.code()));
        md.insert("output".into(), json!(output));
        if cut || f.output_truncated {
            md.insert("outputTruncated".into(), json!(true));
        }
        md.insert("durationMs".into(), json!(f.elapsed.as_millis() as u64));
        md.insert("startedAt".into(), json!(started_at));
        md.insert("finishedAt".into(), json!(clock::now_ms()));
        let secs = f.elapsed.as_secs_f64();
        if f.ended.success() {
            md.insert("completedBy".into(), json!(self.me));
            let outcome = Outcome {
                task: Some(task.id.clone()),
                failure: None,
                result: format!("Task {} done: {}", task.id, clip(output.trim(), 200)),
            };
            let post = Post::TaskUpdate {
                id: task.id.clone(),
                status: Status::Completed,
                unassign: false,
                metadata: md,
            };
            self.ran(vec![post], outcome, None)?;
            let flow = self.settle()?;
            self.say(&format!("✔ task {} done (exit 0, {secs:.1} s)", task.id));
            return Ok(flow);
        }
        let why = f.ended.describe();
        md.insert("failed".into(), json!(true));
        md.insert("failedBy".into(), json!(self.me));
        md.insert(
            "lastFailure".into(),
            json!(format!("{why} at {}", clock::now_iso())),
        );
        let text = format!(
            "Task {} ({}) failed: {why}. It stays pending and assigned to {} with the \
             output in its metadata; reassign or unassign it to retry.\n{}",
            task.id,
            task.subject,
            self.me,
            tail_of(&f.output, 2000).0
        );
        let posts = vec![
            Post::TaskUpdate {
                id: task.id.clone(),
                status: Status::Pending,
                unassign: false,
                metadata: md,
            },
            Post::Send {
                to: LEAD_NAME.into(),
                text: text.clone(),
                summary: format!("task {} failed ({why})", task.id),
                force: true,
            },
        ];
        let outcome = Outcome {
            task: Some(task.id.clone()),
            failure: Some(format!("task {} {why}", task.id)),
            result: text,
        };
        self.ran(posts, outcome, None)?;
        let flow = self.settle()?;
        self.say(&format!("✘ task {} failed ({why}, {secs:.1} s)", task.id));
        Ok(flow)
    }

    fn update_task(
        &self,
        id: &str,
        status: Option<Status>,
        owner: Option<Option<String>>,
        metadata: Map<String, Value>,
    ) -> Result<()> {
        let upd = TaskUpdate {
            status,
            owner,
            metadata: Some(metadata),
            ..TaskUpdate::default()
        };
        self.team.tasks().update(id, upd, &self.me)?;
        Ok(())
    }

    /// Returns a task to the board: no owner, pending, the reason recorded.
    fn hand_back(&self, id: &str, why: &str) -> Result<()> {
        let mut md = Map::new();
        md.insert(
            "lastFailure".into(),
            json!(format!("{why} ({} at {})", self.me, clock::now_iso())),
        );
        self.update_task(id, Some(Status::Pending), Some(None), md)
    }

    /// Asks the lead to approve the plan of `task` (unless the request
    /// `asked` was sent already: then its answer is awaited) and waits.
    fn plan_gate(
        &mut self,
        task: &Task,
        asked: Option<String>,
        wake: &mut Wakeups,
    ) -> Result<Gate> {
        let id = match asked {
            Some(id) => id,
            None => {
                let plan = self.runner.task_plan(task, self.mode.as_deref());
                let id =
                    protocol::plan_approval_request_id(clock::now_ms(), &self.me, &self.team.name);
                let msg = Message::PlanApprovalRequest(PlanApprovalRequest {
                    from: self.me.clone(),
                    timestamp: clock::now_iso(),
                    plan_file_path: String::new(),
                    plan_content: plan,
                    request_id: id.clone(),
                });
                self.team.send_protocol(&self.me, LEAD_NAME, &msg, true)?;
                // Recorded, so a retry waits for this request's answer.
                self.restage(Stage::Picked {
                    plan_approved: false,
                    plan_request: Some(id.clone()),
                })?;
                id
            }
        };
        self.say(&format!(
            "⏸ task {}: waiting for the lead to approve the plan ({id})",
            task.id
        ));
        loop {
            for e in self.unread()? {
                match e.protocol() {
                    Some(Message::PlanApprovalResponse(r))
                        if r.request_id == id && e.from == LEAD_NAME =>
                    {
                        self.consume(std::slice::from_ref(&e))?;
                        if r.approved {
                            return Ok(Gate::Approved);
                        }
                        let fb = r.feedback.unwrap_or_else(|| "no feedback given".into());
                        return Ok(Gate::Rejected(fb));
                    }
                    Some(Message::ShutdownRequest(r)) if e.from == LEAD_NAME => {
                        return Ok(Gate::Shutdown(e, r));
                    }
                    Some(Message::ModeSetRequest(m)) if e.from == LEAD_NAME => {
                        self.apply_mode(&m)?;
                        self.consume(std::slice::from_ref(&e))?;
                    }
                    _ => {}
                }
            }
            wake.wait(IDLE_WAIT);
        }
    }

    fn approve_shutdown(&mut self, entry: &Entry, req: &ShutdownRequest) -> Result<Exit> {
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
        self.team.send_protocol(&self.me, LEAD_NAME, &msg, true)?;
        self.consume(std::slice::from_ref(entry))?;
        self.team.roster().set_active(&self.me, false)?;
        let why = req.reason.as_deref().unwrap_or("no reason given");
        self.say(&format!("■ shutdown approved ({why}); bye"));
        Ok(Exit::Ok)
    }

    /// Reports a dead agent and returns the error the runtime exits with.
    fn crash(&mut self, task: Option<String>, reason: &str) -> anyhow::Error {
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

/// The reply to a message: the run's output (tail, fitted to the inbox text
/// limit with a note when cut), and the exit status when it was not 0.
fn reply_text(f: &Finished) -> String {
    let footer = if f.ended.success() {
        String::new()
    } else {
        format!("[{}]", f.ended.describe())
    };
    let room = MAX_TEXT_BYTES - REPLY_SLACK - footer.len();
    let (tail, cut) = tail_of(&f.output, room);
    let mut text = String::new();
    if cut || f.output_truncated {
        text.push_str(&format!(
            "[output truncated: showing the last {} bytes of {}{} bytes]\n",
            tail.len(),
            if f.output_truncated { "more than " } else { "" },
            f.output.len()
        ));
    }
    text.push_str(tail);
    if text.trim().is_empty() && footer.is_empty() {
        text = "(no output)".into();
    }
    if !footer.is_empty() && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&footer);
    text
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut c: String = s.chars().take(max - 1).collect();
    c.push('…');
    c
}
