//! Opening the team a command names and its pane backend: what the
//! commands that drive panes (`lifecycle.rs` dispatches them) share.

use super::Context;
use crate::cli::BackendArgs;
use crate::lead::session::{self, Opened};
use crate::team::Team;
use anyhow::Result;

/// The team (its roster read, so a missing or unreadable one is the
/// error) and its backend, opened as the team's session records it.
pub(super) fn open(ctx: &Context, args: &BackendArgs) -> Result<(Team, Opened)> {
    let team = ctx.team()?;
    team.roster().read()?;
    let opened = session::open(&ctx.root, &team.name, args)?;
    Ok((team, opened))
}

/// [`open`] for a command that changes which panes the team has or who
/// is on it: refused, before anything is done, on a team swarm did not
/// start (see `team::owner`), with `action` in the one-line reason.
pub(super) fn open_own(ctx: &Context, args: &BackendArgs, action: &str) -> Result<(Team, Opened)> {
    let team = ctx.team()?;
    team.roster().read()?;
    team.require_own(action)?;
    let opened = session::open(&ctx.root, &team.name, args)?;
    Ok((team, opened))
}
