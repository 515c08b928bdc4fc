//! `swarm down`: every teammate asked to shut down (killed with
//! `--force` when it does not answer in time), then the lead and the team;
//! what each did, the worktrees kept and the scratchpad kept are said.

use super::open::open_own;
use super::{Context, Exit};
use crate::cli::DownArgs;
use crate::ops::depart as teardown;
use crate::text::{escape_line as esc, shell_word};
use anyhow::{Result, bail};
use std::time::Duration;

pub(super) async fn down(ctx: &Context, args: DownArgs) -> Result<Exit> {
    let (team, opened) = open_own(ctx, &args.backend, "take it down")?;
    let r = teardown::down(&team, &opened, Duration::from_secs(args.wait), args.force).await?;
    for line in &r.worktrees {
        println!("{}", esc(line));
    }
    if !r.stayed.is_empty() || !r.declined.is_empty() {
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
    println!("team {} deleted", team.name);
    if let Some(kept) = &r.kept {
        println!(
            "its scratchpad is kept in {} (remove it with: rm -r {})",
            esc(&kept.display().to_string()),
            shell_word(&kept.display().to_string())
        );
    }
    Ok(Exit::Ok)
}
