//! `swarm merge NAME [--rebase]`: a teammate's worktree branch into the
//! lead's branch; a conflict is aborted and reported with its files (see
//! [`crate::ops::TeamOps::merge`]).

use super::{Context, Exit, print_acted};
use crate::cli::MergeArgs;
use crate::ops::TeamOps;
use crate::session::Location;
use crate::worktree::MergeMode;
use anyhow::Result;

pub(super) fn run(ctx: &Context, args: MergeArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let ops = TeamOps::new(Location::of(&ctx.root, &team.name), ctx.me()?);
    let mode = match args.rebase {
        true => MergeMode::Rebase,
        false => MergeMode::Merge,
    };
    let merged = ops.merge(&args.name, mode)?;
    if args.json {
        print_acted(serde_json::json!({ "name": args.name, "merged": merged }));
        return Ok(Exit::Ok);
    }
    println!("{}", crate::text::escape_line(&merged.line));
    if merged.uncommitted > 0 {
        eprintln!(
            "note: {} has {} uncommitted file(s) in its worktree, not merged",
            args.name, merged.uncommitted
        );
    }
    Ok(Exit::Ok)
}
