//! `swarm down`: every teammate asked to shut down (killed with
//! `--force` when it does not answer in time), then the lead and the team;
//! what each did, the worktrees kept and the scratchpad kept are said.
//! The work is [`crate::ops::TeamOps::down`].

use super::open::team_ops;
use super::{Context, Exit, print_acted};
use crate::cli::DownArgs;
use crate::text::{escape_line as esc, shell_word};
use anyhow::{Result, bail};
use serde_json::json;
use std::time::Duration;

pub(super) async fn down(ctx: &Context, args: DownArgs) -> Result<Exit> {
    let ops = team_ops(ctx, &args.backend)?;
    let r = ops.down(Duration::from_secs(args.wait), args.force).await?;
    let team = &ops.team().name;
    if args.json && r.deleted {
        print_acted(json!({ "team": team, "down": r }));
        return Ok(Exit::Ok);
    }
    if !args.json {
        for id in &r.answered {
            println!(
                "answered request {} for the team going down (rejected)",
                esc(id)
            );
        }
        for line in r.worktrees() {
            println!("{}", esc(line));
        }
    }
    if !r.deleted {
        let mut why = Vec::new();
        if !r.declined.is_empty() {
            why.push(format!("declined to shut down: {}", r.declined.join(", ")));
        }
        if !r.stayed.is_empty() {
            why.push(format!(
                "still running after {} s: {}",
                args.wait,
                r.stayed.join(", ")
            ));
        }
        bail!(
            "{}; the team was not deleted (use --force to kill them and delete the team)",
            why.join("; ")
        );
    }
    for n in &r.approved {
        println!("{} shut down", esc(n));
    }
    for n in &r.killed {
        println!("{} killed (no answer in time)", esc(n));
    }
    for n in &r.gone {
        println!("{} had already stopped", esc(n));
    }
    println!("team {} deleted", esc(team));
    if let Some(kept) = &r.kept {
        println!(
            "its scratchpad is kept in {} (remove it with: rm -r {})",
            esc(&kept.display().to_string()),
            shell_word(&kept.display().to_string())
        );
    }
    Ok(Exit::Ok)
}
