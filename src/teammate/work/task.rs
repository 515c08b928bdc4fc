//! The task unit of a teammate runtime: the plan gate (a
//! `plan_approval_request` and the wait for its answer), the run, and the
//! task's update: completed with its metadata, or left pending and owned
//! when it failed; and a task handed back to the board.

use super::{Flow, Gate, IDLE_WAIT, OUTPUT_META_BYTES, Runtime, clip};
use crate::agents::process::{Finished, tail_of};
use crate::clock;
use crate::names::LEAD_NAME;
use crate::protocol::{self, Message, PlanApprovalRequest};
use crate::tasks::{Status, Task, TaskUpdate};
use crate::teammate::Wakeups;
use crate::teammate::inflight::{Outcome, Post, Stage, Unit};
use anyhow::{Result, anyhow};
use serde_json::{Map, Value, json};

impl Runtime {
    /// Runs a task this member holds, recorded as picked (a resumed one
    /// may have its plan approved, or its approval asked for, already).
    pub(super) fn handle_task(&mut self, task: Task, wake: &mut Wakeups) -> Result<Flow> {
        // Claimed with a command, which someone took out since: a shell
        // teammate runs nothing else (never the subject or description).
        if !self.runner.takes().takes(&task) {
            let why = crate::tasks::Refusal::NoCommand.to_string();
            self.hand_back(&task.id, &why)?;
            self.forget();
            self.say(&format!("↩ task {} handed back: {why}", task.id));
            return Ok(Flow::Continue);
        }
        let (approved, asked) = match self.inflight.as_ref().map(|r| &r.stage) {
            Some(Stage::Picked {
                plan_approved,
                plan_request,
            }) => (*plan_approved, plan_request.clone()),
            _ => (false, None),
        };
        self.start()?;
        self.say(&format!("▶ task {}: {}", task.id, task.subject));
        if self.member.plan_mode_required == Some(true)
            && !approved
            && let Some(flow) = self.plan_step(&task, asked, wake)?
        {
            return Ok(flow);
        }
        self.run_recorded(Unit::Task {
            id: task.id.clone(),
            subject: task.subject.clone(),
        })?;
        let started_at = clock::now_ms();
        let (mode, pane) = (self.mode.clone(), self.pane.clone());
        let (runner, mut started) = self.runner_and_started();
        let f = runner.run_task(&task, mode.as_deref(), pane, &mut || started.call());
        if let Some(flow) = self.not_run(&task, &f)? {
            return Ok(flow);
        }
        let (md, output) = run_metadata(&f, started_at);
        if f.ended.success() {
            self.task_done(&task, md, &output, &f)
        } else {
            self.task_failed(&task, md, &f)
        }
    }

    /// The plan gate's answer applied: `None` when the plan was approved
    /// (the task runs), else how the loop goes on (rejected: the task stays
    /// pending and owned; a shutdown: the task is handed back first).
    fn plan_step(
        &mut self,
        task: &Task,
        asked: Option<String>,
        wake: &mut Wakeups,
    ) -> Result<Option<Flow>> {
        match self.plan_gate(task, asked, wake)? {
            Gate::Approved => {
                self.say(&format!("✔ plan for task {} approved", task.id));
                self.restage(Stage::Picked {
                    plan_approved: true,
                    plan_request: None,
                })?;
                Ok(None)
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
                self.settle().map(Some)
            }
            Gate::Shutdown(entry, req) => {
                self.hand_back(&task.id, "the teammate shut down before running it")?;
                self.forget();
                Ok(Some(Flow::Exit(self.approve_shutdown(&entry, &req)?)))
            }
        }
    }

    /// A run that did not finish: `None` when it did. An agent that cannot
    /// start *yet* is an error (the task stays claimed, to run on the next
    /// try); one that crashed ends the runtime.
    fn not_run(&mut self, task: &Task, f: &Finished) -> Result<Option<Flow>> {
        if f.ended.may_start_later() {
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
            return Ok(Some(Flow::Crashed {
                task: Some(task.id.clone()),
                reason: format!(
                    "the agent {} while running task {}",
                    f.ended.describe(),
                    task.id
                ),
            }));
        }
        Ok(None)
    }

    /// A run that exited 0: the task is completed.
    fn task_done(
        &mut self,
        task: &Task,
        mut md: Map<String, Value>,
        output: &str,
        f: &Finished,
    ) -> Result<Flow> {
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
        let secs = f.elapsed.as_secs_f64();
        self.say(&format!("✔ task {} done (exit 0, {secs:.1} s)", task.id));
        Ok(flow)
    }

    /// A run that exited non-zero: the task stays pending and owned, marked
    /// failed, and the lead hears of it.
    fn task_failed(
        &mut self,
        task: &Task,
        mut md: Map<String, Value>,
        f: &Finished,
    ) -> Result<Flow> {
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
        let secs = f.elapsed.as_secs_f64();
        self.say(&format!("✘ task {} failed ({why}, {secs:.1} s)", task.id));
        Ok(flow)
    }

    pub(super) fn update_task(
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
    pub(super) fn hand_back(&self, id: &str, why: &str) -> Result<()> {
        let mut md = Map::new();
        md.insert(
            "lastFailure".into(),
            json!(format!("{why} ({} at {})", self.me, clock::now_iso())),
        );
        self.update_task(id, Some(Status::Pending), Some(None), md)
    }

    /// Asks the lead to approve the plan of `task` (unless the request
    /// `asked` was sent already: then its answer is awaited) and waits.
    pub(super) fn plan_gate(
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
}

/// The metadata every finished run leaves on its task (exit code,
/// bounded output, timings), and that output.
fn run_metadata(f: &Finished, started_at: u64) -> (Map<String, Value>, String) {
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
    (md, output.to_owned())
}
