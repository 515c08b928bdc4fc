//! `swarm merge NAME [--rebase]`: a teammate's worktree branch into the
//! lead's branch; a conflict is aborted and reported with its files (see
//! [`crate::worktree::merge`]).

use super::{Context, Exit};
use crate::cli::MergeArgs;
use crate::worktree::MergeMode;
use anyhow::Result;

pub(super) fn run(ctx: &Context, args: MergeArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let wt = crate::worktree::required(&team, &args.name)?;
    let mode = match args.rebase {
        true => MergeMode::Rebase,
        false => MergeMode::Merge,
    };
    let line = crate::worktree::merge(&wt, &args.name, mode)?;
    println!("{}", crate::text::escape_line(&line));
    let left = crate::worktree::progress(&wt)?.changed;
    if left > 0 {
        eprintln!(
            "note: {} has {left} uncommitted file(s) in its worktree, not merged",
            args.name
        );
    }
    Ok(Exit::Ok)
}
