//! `swarm attach`: the user's terminal onto the team's home session, the
//! lead's pane (the TeamsDialog) current. While attached, the lead quitting
//! (`q`) ends the tmux client too, so the user is back at their own shell
//! with a hint, not left on the teammates' panes with no shell. A team
//! started inside tmux has no home session: its lead's pane is focused.

use std::time::{Duration, Instant};

use super::open::open;
use super::{Context, Exit};
use crate::cli::BackendArgs;
use crate::session::{self, Session};
use crate::team::Team;
use anyhow::{Context as _, Result, bail};

pub(super) async fn attach(ctx: &Context, args: BackendArgs) -> Result<Exit> {
    let (team, opened) = open(ctx, &args)?;
    let Some(homes) = opened.backend.homes() else {
        bail!(
            "team {} does not run on tmux (backend {}); nothing to attach to",
            team.name,
            opened.kind()
        );
    };
    let record = opened.record();
    let Some(session) = record.session.clone() else {
        if let Some(lead) = record.lead_pane.clone() {
            return focus_own_pane(&team, &opened, &lead).await;
        }
        let session = session::session_name(&team.name);
        bail!(
            "no tmux session {session} for team {}; start it with `swarm up --team {}`",
            team.name,
            team.name
        );
    };
    if !homes.home_exists(&session).await? {
        bail!(
            "no tmux session {session} for team {}; start it with `swarm up --team {}`",
            team.name,
            team.name
        );
    }
    // After `q` the session lives on with the teammates: attaching would
    // show them with no TeamsDialog and nothing to end the client.
    if !session::lead_running(&opened).await? {
        bail!(
            "the lead of team {0} is not running (it quit); `swarm up --team {0}` starts it again in tmux session {session} and attaches",
            team.name
        );
    }
    attach_home(&team, &opened, &session).await
}

/// A team whose lead runs in the user's own tmux pane (started inside
/// tmux): that pane is made current; outside tmux, the command that
/// attaches to it is named.
async fn focus_own_pane(
    team: &Team,
    opened: &Session,
    lead: &swarm_backends::PaneId,
) -> Result<Exit> {
    if !session::lead_running(opened).await? {
        bail!(
            "the lead of team {} (pane {lead}) is not running; start it with `swarm up --team {}`",
            team.name,
            team.name
        );
    }
    let focus = opened.backend.pane_focus().ok_or_else(|| {
        swarm_backends::BackendError::unsupported(opened.kind(), "focusing a pane")
    })?;
    focus.focus(lead).await?;
    if std::env::var_os("TMUX").is_some_and(|v| !v.is_empty()) {
        eprintln!(
            "swarm: the lead of team {} is pane {lead}: focused",
            team.name
        );
        return Ok(Exit::Ok);
    }
    let socket = opened
        .record()
        .tmux_socket
        .as_ref()
        .map(|s| format!("-S {} ", s.display()))
        .unwrap_or_default();
    bail!(
        "the lead of team {} runs in pane {lead} of your own tmux session (the team was started inside tmux); attach with `tmux {socket}attach -t {lead}`",
        team.name
    )
}

/// Attaches to `session` with the lead's pane current and waits for the
/// client; ends the client when the lead exits meanwhile; then says how to
/// come back if the team runs on.
pub(super) async fn attach_home(team: &Team, opened: &Session, session: &str) -> Result<Exit> {
    let homes = opened
        .backend
        .homes()
        .ok_or_else(|| swarm_backends::BackendError::unsupported(opened.kind(), "home sessions"))?;
    if let Some(lead) = &opened.record().lead_pane
        && let Some(focus) = opened.backend.pane_focus()
        && let Err(e) = focus.focus(lead).await
    {
        tracing::warn!("focus the lead's pane {lead} before attaching: {e}");
    }
    let argv = homes.attach_argv(session)?;
    let mut client = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .spawn()
        .with_context(|| format!("running {}", argv.join(" ")))?;
    // The lead's pane, watched while the client is attached: when the lead
    // ends (`q`), the client ends too, and the user is back in their shell
    // (never left on a dead pane, typing into nothing). Its pane is what
    // shows, so its pane is watched, not the lead's lock.
    let lead = opened.record().lead_ref();
    let watched = match &lead {
        Some(l) => lead_pane_runs(opened, l).await,
        None => false,
    };
    let status = loop {
        if let Some(st) = client.try_wait().context("waiting for tmux attach")? {
            break Some(st);
        }
        if watched
            && let Some(l) = &lead
            && !lead_pane_runs(opened, l).await
        {
            end_client(homes, session, &mut client).await?;
            break None;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    if homes.home_exists(session).await.unwrap_or(false) {
        eprintln!(
            "swarm: team {0} runs on in tmux session {session}: `swarm attach --team {0}` comes back, `swarm down --team {0}` ends it",
            team.name
        );
    }
    match status {
        Some(st) if !st.success() => bail!("{} exited with {st}", argv.join(" ")),
        _ => Ok(Exit::Ok),
    }
}

/// Whether the lead's pane runs its program (a backend that cannot tell
/// counts as running: the client is then left to the user).
async fn lead_pane_runs(opened: &Session, lead: &swarm_backends::PaneRef) -> bool {
    match opened.backend.status(std::slice::from_ref(lead)).await {
        Ok(st) => matches!(
            st.first(),
            Some((_, swarm_backends::PaneStatus::Running { .. }))
        ),
        Err(_) => true,
    }
}

/// Ends the tmux client this process started: detached from `session`
/// (it restores the terminal and says "[detached …]"); SIGTERM if it is
/// not found there or does not exit within 2 s (tmux then prints
/// "[terminated]"), SIGKILL 2 s later; then reaps it.
async fn end_client(
    homes: &dyn swarm_backends::HomeSessions,
    session: &str,
    client: &mut std::process::Child,
) -> Result<()> {
    match homes.detach(session, client.id()).await {
        Ok(true) if exited_within(client, Duration::from_secs(2)).await? => return Ok(()),
        Ok(_) => {}
        Err(e) => tracing::warn!("detach the tmux client from {session}: {e}"),
    }
    // SAFETY: kill(2) on the pid of a child this process spawned and has
    // not reaped yet, so the pid cannot have been reused.
    unsafe { libc::kill(client.id() as libc::pid_t, libc::SIGTERM) };
    if exited_within(client, Duration::from_secs(2)).await? {
        return Ok(());
    }
    client.kill().context("ending tmux attach")?;
    client.wait().context("reaping tmux attach")?;
    Ok(())
}

/// Whether `client` exits within `bound` (reaped if so).
async fn exited_within(client: &mut std::process::Child, bound: Duration) -> Result<bool> {
    let deadline = Instant::now() + bound;
    loop {
        if client
            .try_wait()
            .context("waiting for tmux attach")?
            .is_some()
        {
            return Ok(true);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
