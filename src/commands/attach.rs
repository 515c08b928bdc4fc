//! `swarm attach`: the user's terminal onto the team's home session.

use super::lifecycle::open;
use super::{Context, Exit};
use crate::cli::BackendArgs;
use crate::lead::session;
use anyhow::{Context as _, Result, bail};

pub(super) async fn attach(ctx: &Context, args: BackendArgs) -> Result<Exit> {
    let (team, opened) = open(ctx, &args)?;
    if !opened.caps().home_sessions {
        bail!(
            "team {} does not run on tmux (backend {}); nothing to attach to",
            team.name,
            opened.kind()
        );
    }
    let session = opened
        .record
        .session
        .clone()
        .unwrap_or_else(|| session::session_name(&team.name));
    if !opened.backend.home_exists(&session).await? {
        bail!(
            "no tmux session {session} for team {}; start it with `swarm up --team {}`",
            team.name,
            team.name
        );
    }
    exec_attach(opened.backend.attach_argv(&session)?)
}

pub(super) fn exec_attach(argv: Vec<String>) -> Result<Exit> {
    use std::os::unix::process::CommandExt;
    let err = std::process::Command::new(&argv[0]).args(&argv[1..]).exec();
    Err(err).with_context(|| format!("running {}", argv.join(" ")))
}
