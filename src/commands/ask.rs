//! `swarm ask --plan TEXT`: a teammate asks the lead to approve a plan and
//! waits for the answer. It is how an agent with no protocol of its own (a
//! shell task's command, a script) puts a request in the lead's approval
//! queue: the same `plan_approval_request` the runtime's plan mode sends,
//! answered with `a` / `r` in the TeamsDialog or `swarm send
//! --plan-response ID --approve|--reject`. Exit 0 approved, 1 rejected
//! (the feedback on stderr), 2 no answer in time. `--json` prints the
//! answer as the envelope of a command that acts.

use super::{Context, Exit};
use crate::cli::AskArgs;
use crate::names::LEAD_NAME;
use crate::text::escape_line;
use anyhow::{Result, bail};
use std::time::Duration;

pub fn run(ctx: &Context, args: AskArgs) -> Result<Exit> {
    let ops = super::open::team_ops_here(ctx)?;
    let request_id = ops.ask_plan(&args.plan)?;
    let asked = format!(
        "asked {LEAD_NAME} to approve the plan ({}); waiting up to {} s",
        escape_line(&request_id),
        args.timeout
    );
    // With --json, stdout holds the one envelope; the wait is said on stderr.
    if args.json {
        eprintln!("{asked}");
    } else {
        println!("{asked}");
    }
    match ops.wait_plan_answer(&request_id, Duration::from_secs(args.timeout))? {
        Some(r) if r.approved => {
            if args.json {
                super::print_acted(serde_json::json!({
                    "asked": { "request_id": request_id, "approved": true, "feedback": r.feedback }
                }));
            } else {
                println!("approved");
            }
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
