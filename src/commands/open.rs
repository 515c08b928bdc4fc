//! Opening the team a command names and its pane backend: what the
//! commands that drive panes (`lifecycle.rs` dispatches them) share.

use super::Context;
use crate::cli::BackendArgs;
use crate::ops::TeamOps;
use crate::session::{Location, Session};
use crate::team::Team;
use anyhow::Result;

/// The team (its roster read, so a missing or unreadable one is the
/// error) and its backend, opened as the team's session records it.
pub(super) fn open(ctx: &Context, args: &BackendArgs) -> Result<(Team, Session)> {
    let team = team_ops(ctx, args)?.team().clone();
    let opened = Session::open(&location(ctx, &team.name, args))?;
    Ok((team, opened))
}

/// The team's verbs ([`TeamOps`]) as this command acts on them: the team
/// named (its roster read, so a missing or unreadable one is the error),
/// `--as`, and the place `--backend`/`--tmux-socket` give, opened when a
/// verb needs it.
pub(super) fn team_ops(ctx: &Context, args: &BackendArgs) -> Result<TeamOps> {
    TeamOps::existing(location(ctx, &ctx.team_name()?, args), ctx.me()?)
}

/// [`team_ops`] for commands without backend flags: the team's recorded
/// place (or detection), or the tmux server `SWARM_TMUX_SOCKET` names, as
/// every command honours it.
pub(super) fn team_ops_here(ctx: &Context) -> Result<TeamOps> {
    let args = BackendArgs {
        backend: None,
        tmux_socket: std::env::var_os("SWARM_TMUX_SOCKET")
            .filter(|s| !s.is_empty())
            .map(std::path::PathBuf::from),
    };
    team_ops(ctx, &args)
}

/// [`open`] for a command that changes which panes the team has or who
/// is on it: refused, before anything is done, on a team swarm did not
/// start (see `team::owner`), with `action` in the one-line reason.
pub(super) fn open_own(ctx: &Context, args: &BackendArgs, action: &str) -> Result<(Team, Session)> {
    let ops = team_ops(ctx, args)?;
    ops.require_own(action)?;
    let team = ops.team().clone();
    let opened = Session::open(&location(ctx, &team.name, args))?;
    Ok((team, opened))
}

/// Where the command line says the team's panes are (`--backend`,
/// `--tmux-socket`), as the plain location a session opens from.
pub(super) fn location(ctx: &Context, team: &str, args: &BackendArgs) -> Location {
    Location {
        root: ctx.root.clone(),
        team: team.to_string(),
        backend: args.backend.and_then(crate::cli::BackendChoice::kind),
        tmux_socket: args.tmux_socket.clone(),
    }
}
