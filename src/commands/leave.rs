//! `swarm kill | shutdown | prune`: teammates leaving the team, one at a
//! time (forced, asked, or every idle one), over
//! [`crate::ops::depart`]; what each leaves behind (its tasks back on the
//! board, a worktree kept or removed) is said in one line.

use super::open::team_ops;
use super::{Context, Exit, print_acted};
use crate::cli::{KillArgs, PruneArgs, ShutdownArgs};
use crate::ops::depart::{Left, ShutdownOutcome};
use crate::text::escape_line as esc;
use anyhow::{Result, bail};
use serde_json::json;
use std::time::Duration;

pub(super) async fn kill(ctx: &Context, args: KillArgs) -> Result<Exit> {
    let ops = team_ops(ctx, &args.backend)?;
    let grace = Duration::from_secs_f64(args.grace.max(0.0));
    let left = ops.kill(&args.name, grace).await?;
    if args.json {
        print_acted(json!({ "killed": left }));
    } else {
        println!(
            "killed {}{}{}",
            esc(&args.name),
            returned(&left),
            not_ours(&left)
        );
        say_worktree(&left);
    }
    Ok(Exit::Ok)
}

pub(super) async fn shutdown(ctx: &Context, args: ShutdownArgs) -> Result<Exit> {
    let ops = team_ops(ctx, &args.backend)?;
    let wait = Duration::from_secs(args.wait);
    let force = args.force_after.map(Duration::from_secs);
    let outcome = ops
        .shutdown(&args.name, args.reason.clone(), wait, force)
        .await?;
    if args.json {
        return Ok(match &outcome {
            ShutdownOutcome::Rejected { reason } => {
                Exit::No(format!("{} declined to shut down: {reason}", args.name))
            }
            ShutdownOutcome::TimedOut => Exit::No(no_answer(&args)),
            done => {
                print_acted(json!({ "name": args.name, "shutdown": done }));
                Exit::Ok
            }
        });
    }
    match outcome {
        ShutdownOutcome::Approved(left) => {
            println!("{} shut down{}", esc(&args.name), returned(&left));
            say_worktree(&left);
            Ok(Exit::Ok)
        }
        ShutdownOutcome::Rejected { reason } => Ok(Exit::No(format!(
            "{} declined to shut down: {reason}",
            args.name
        ))),
        ShutdownOutcome::Killed(left) => {
            println!(
                "{} did not approve in time and was killed{}",
                esc(&args.name),
                returned(&left)
            );
            say_worktree(&left);
            Ok(Exit::Ok)
        }
        ShutdownOutcome::TimedOut => bail!(no_answer(&args)),
        ShutdownOutcome::Requested { to } => {
            println!(
                "requested: asked {} of team {} to shut down {} (the team is not swarm's; its own \
                 lead stops its members)",
                esc(&to),
                esc(&ops.team().name),
                esc(&args.name)
            );
            Ok(Exit::Ok)
        }
    }
}

fn no_answer(args: &ShutdownArgs) -> String {
    format!(
        "no answer from {} within {} s; it keeps running (add --force-after SECS to kill it then)",
        args.name, args.wait
    )
}

pub(super) async fn prune(ctx: &Context, args: PruneArgs) -> Result<Exit> {
    let ops = team_ops(ctx, &args.backend)?;
    ops.require_own("prune its members")?;
    let idle = ops.idle_members().await?;
    if args.dry_run {
        if args.json {
            print_acted(json!({ "would_prune": idle }));
        } else if idle.is_empty() {
            println!("no idle teammates");
        }
        for name in idle.iter().filter(|_| !args.json) {
            println!("would prune {}", esc(name));
        }
        return Ok(Exit::Ok);
    }
    let left = ops.prune(Some(idle)).await?;
    if args.json {
        print_acted(json!({ "pruned": left }));
        return Ok(Exit::Ok);
    }
    if left.is_empty() {
        println!("no idle teammates");
    }
    for l in &left {
        println!("pruned {}{}", esc(&l.name), returned(l));
        say_worktree(l);
    }
    Ok(Exit::Ok)
}

/// What became of the worktree of a teammate that left, if it had one.
fn say_worktree(left: &Left) {
    if let Some(line) = &left.worktree {
        println!("{}", esc(line));
    }
}

/// "; its pane %3 was no longer swarm's (left untouched)", or nothing.
fn not_ours(left: &Left) -> String {
    match &left.pane_not_ours {
        Some(p) => format!("; its pane {p} was no longer swarm's (left untouched)"),
        None => String::new(),
    }
}

/// "; task(s) #1, #2 back on the board", or nothing.
fn returned(left: &Left) -> String {
    if left.returned_tasks.is_empty() {
        String::new()
    } else {
        let ids: Vec<String> = left
            .returned_tasks
            .iter()
            .map(|t| format!("#{}", t.id))
            .collect();
        format!("; task(s) {} back on the board", ids.join(", "))
    }
}
