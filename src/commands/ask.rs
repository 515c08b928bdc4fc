//! `swarm ask --plan TEXT`: a teammate asks the lead to approve a plan and
//! waits for the answer. It is how an agent with no protocol of its own (a
//! shell task's command, a script) puts a request in the lead's approval
//! queue: the same `plan_approval_request` the runtime's plan mode sends,
//! answered with `a` / `r` in the TeamsDialog or `swarm send
//! --plan-response ID --approve|--reject`. Exit 0 approved, 1 rejected
//! (the feedback on stderr), 2 no answer in time.

use super::{Context, Exit};
use crate::cli::AskArgs;
use crate::clock;
use crate::mailbox::Entry;
use crate::protocol::{self, Message, PlanApprovalRequest, PlanApprovalResponse};
use crate::team::Team;
use crate::names::LEAD_NAME;
use crate::text::escape_line;
use anyhow::{Result, bail};
use std::time::{Duration, Instant};

pub fn run(ctx: &Context, args: AskArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let me = ctx.me()?;
    if me == LEAD_NAME {
        bail!("the lead approves plans; ask as a teammate (--as NAME or SWARM_AGENT_NAME)");
    }
    let request_id = protocol::plan_approval_request_id(clock::now_ms(), me, &team.name);
    let msg = Message::PlanApprovalRequest(PlanApprovalRequest {
        from: me.to_string(),
        timestamp: clock::now_iso(),
        plan_file_path: String::new(),
        plan_content: args.plan,
        request_id: request_id.clone(),
    });
    team.send_protocol(me, LEAD_NAME, &msg, false)?;
    println!(
        "asked {LEAD_NAME} to approve the plan ({}); waiting up to {} s",
        escape_line(&request_id),
        args.timeout
    );
    let answer = wait_for_answer(&team, me, &request_id, Duration::from_secs(args.timeout))?;
    match answer {
        Some(r) if r.approved => {
            println!("approved");
            Ok(Exit::Ok)
        }
        Some(r) => Ok(Exit::No(format!(
            "the lead rejected the plan: {}",
            r.feedback.as_deref().unwrap_or("no feedback given")
        ))),
        None => bail!(
            "no answer to plan request {request_id} within {} s (the lead answers with `a`/`r` in the TeamsDialog)",
            args.timeout
        ),
    }
}

/// The lead's answer to `request_id` in `me`'s inbox (consumed there) or
/// history (a runtime consumed it first), or `None` after `within`.
fn wait_for_answer(
    team: &Team,
    me: &str,
    request_id: &str,
    within: Duration,
) -> Result<Option<PlanApprovalResponse>> {
    let mb = team.mailbox();
    let watcher = mb.watch()?;
    let deadline = Instant::now() + within;
    loop {
        let inbox = mb.read(me)?.entries;
        if let Some((e, r)) = answer_in(&inbox, request_id) {
            mb.consume(me, &[e.key()])?;
            return Ok(Some(r));
        }
        if let Some((_, r)) = answer_in(&mb.history(me)?, request_id) {
            return Ok(Some(r));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        watcher.wait(left.min(Duration::from_secs(1)));
    }
}

fn answer_in(entries: &[Entry], request_id: &str) -> Option<(Entry, PlanApprovalResponse)> {
    entries.iter().find_map(|e| match e.protocol() {
        Some(Message::PlanApprovalResponse(r))
            if r.request_id == request_id && e.from == LEAD_NAME =>
        {
            Some((e.clone(), r))
        }
        _ => None,
    })
}
