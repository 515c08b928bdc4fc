//! `swarm kill | shutdown | prune`: teammates leaving the team, one at a
//! time (forced, asked, or every idle one), over [`crate::ops::depart`];
//! what each leaves behind (its tasks back on the board, a worktree kept
//! or removed) is said in one line.

use super::open::open_own;
use super::{Context, Exit};
use crate::cli::{KillArgs, PruneArgs, ShutdownArgs};
use crate::ops::depart::{self as teardown, ShutdownOutcome};
use crate::team::Team;
use crate::text::escape_line as esc;
use anyhow::{Result, bail};
use std::time::Duration;

pub(super) async fn kill(ctx: &Context, args: KillArgs) -> Result<Exit> {
    let (team, opened) = open_own(ctx, &args.backend, "kill its members")?;
    let grace = Duration::from_secs_f64(args.grace.max(0.0));
    let before = team.roster().read()?.member(&args.name).cloned();
    let r = teardown::kill_member(&team, &opened, &args.name, grace).await?;
    println!(
        "killed {}{}{}",
        esc(&args.name),
        returned(&r.returned),
        not_ours(&r)
    );
    retire_worktree(&team, before);
    Ok(Exit::Ok)
}

pub(super) async fn shutdown(ctx: &Context, args: ShutdownArgs) -> Result<Exit> {
    let (team, opened) = open_own(ctx, &args.backend, "shut its members down")?;
    let wait = Duration::from_secs(args.wait);
    let force = args.force_after.map(Duration::from_secs);
    let before = team.roster().read()?.member(&args.name).cloned();
    match teardown::shutdown_member(&team, &opened, &args.name, args.reason, wait, force).await? {
        ShutdownOutcome::Approved(r) => {
            println!("{} shut down{}", esc(&args.name), returned(&r.returned));
            retire_worktree(&team, before);
            Ok(Exit::Ok)
        }
        ShutdownOutcome::Rejected(reason) => Ok(Exit::No(format!(
            "{} declined to shut down: {reason}",
            args.name
        ))),
        ShutdownOutcome::Killed(r) => {
            println!(
                "{} did not approve in time and was killed{}",
                esc(&args.name),
                returned(&r.returned)
            );
            retire_worktree(&team, before);
            Ok(Exit::Ok)
        }
        ShutdownOutcome::NoAnswer => bail!(
            "no answer from {} within {} s; it keeps running (add --force-after SECS to kill it then)",
            args.name,
            args.wait
        ),
    }
}

pub(super) async fn prune(ctx: &Context, args: PruneArgs) -> Result<Exit> {
    let (team, opened) = open_own(ctx, &args.backend, "prune its members")?;
    let idle = teardown::idle_members(&team, &opened).await?;
    if idle.is_empty() {
        println!("no idle teammates");
        return Ok(Exit::Ok);
    }
    for name in &idle {
        if args.dry_run {
            println!("would prune {}", esc(name));
        } else {
            let before = team.roster().read()?.member(name).cloned();
            let r = teardown::kill_member(&team, &opened, name, Duration::from_secs(1)).await?;
            println!("pruned {}{}", esc(name), returned(&r.returned));
            retire_worktree(&team, before);
        }
    }
    Ok(Exit::Ok)
}

/// A teammate that left: its worktree removed if it held nothing
/// unmerged, else kept, and said either way (see `worktree::retire`).
fn retire_worktree(team: &Team, left: Option<crate::team::Member>) {
    for line in crate::worktree::retire(team, left.as_slice(), false) {
        println!("{}", esc(&line));
    }
}

/// "; its pane %3 was no longer swarm's (left untouched)", or nothing.
fn not_ours(r: &teardown::Released) -> String {
    match &r.pane_not_ours {
        Some(p) => format!("; its pane {p} was no longer swarm's (left untouched)"),
        None => String::new(),
    }
}

fn returned(tasks: &[crate::tasks::Task]) -> String {
    if tasks.is_empty() {
        String::new()
    } else {
        let ids: Vec<String> = tasks.iter().map(|t| format!("#{}", t.id)).collect();
        format!("; task(s) {} back on the board", ids.join(", "))
    }
}
