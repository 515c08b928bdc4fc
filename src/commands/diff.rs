//! `swarm diff NAME [--stat]`: what a teammate changed in its worktree
//! since its branch left the lead's (see [`crate::worktree::diff`]).

use super::{Context, Exit};
use crate::cli::DiffArgs;
use anyhow::Result;
use std::io::Write;

pub(super) fn run(ctx: &Context, args: DiffArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let wt = crate::worktree::required(&team, &args.name)?;
    let out = crate::worktree::diff(&wt, args.stat)?;
    // A patch is printed as git wrote it: its bytes are the answer.
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(Exit::Ok)
}
