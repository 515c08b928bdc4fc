//! `swarm diff NAME [--stat]`: what a teammate changed in its worktree
//! since its branch left the lead's (see [`crate::ops::TeamOps::diff`]).

use super::{Context, Exit, print_acted};
use crate::cli::DiffArgs;
use crate::ops::TeamOps;
use crate::session::Location;
use anyhow::Result;
use std::io::Write;

pub(super) fn run(ctx: &Context, args: DiffArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let ops = TeamOps::new(Location::of(&ctx.root, &team.name), ctx.me()?);
    let out = ops.diff(&args.name, args.stat)?;
    if args.json {
        print_acted(serde_json::json!({ "name": args.name, "diff": out }));
    } else {
        // A patch is printed as git wrote it: its bytes are the answer.
        std::io::stdout().write_all(out.as_bytes())?;
    }
    Ok(Exit::Ok)
}
