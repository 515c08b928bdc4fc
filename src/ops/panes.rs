//! A member's pane as the operations reach it: its liveness (one backend
//! call for all the panes it asks about), the kill ladder that closes it
//! (never a pane without the member's mark), and the wait for a pane
//! process to end. In-process panes another process hosts are reached
//! through their recorded pid and start time.

use crate::session::{Session, member_pane};
use crate::team::Member;
use anyhow::{Context, Result};
use std::time::{Duration, Instant};
use swarm_backends::{BackendError, PaneStatus};

/// The live status of a member's pane, `Gone` when it has none.
pub async fn pane_status(opened: &Session, m: &Member) -> Result<PaneStatus> {
    Ok(pane_statuses(opened, std::slice::from_ref(m)).await?[0])
}

/// An in-process pane hosted by another process (the lead): reachable only
/// through its recorded pid (and start time, so a recycled pid is never
/// taken for it).
fn foreign_in_process_pid(opened: &Session, m: &Member) -> Option<(u32, Option<String>)> {
    if m.backend_kind() != Some(swarm_backends::BackendKind::InProcess)
        || opened
            .backend
            .screens()
            .is_some_and(|s| s.hosts(&PaneIdOf(m).id()))
    {
        return None;
    }
    // A pid that does not read is no pane this process can reach.
    crate::dropped::ignore(m.pid(), "reading a hosted pane's pid").flatten()
}

/// The session's layout facet, or the one-line refusal of `operation`.
fn layout_of<'a>(
    session: &'a Session,
    operation: &'static str,
) -> Result<&'a dyn swarm_backends::Layout> {
    Ok(session
        .backend
        .layout()
        .ok_or_else(|| BackendError::unsupported(session.kind(), operation))?)
}

/// A member's pane id (for lookups that prove nothing).
struct PaneIdOf<'a>(&'a Member);

impl PaneIdOf<'_> {
    fn id(&self) -> swarm_backends::PaneId {
        swarm_backends::PaneId::new(self.0.tmux_pane_id.clone())
    }
}

/// How closing a member's pane ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Closed {
    /// Closed and verified gone, or it had none.
    Done,
    /// The pane with the recorded id is not the one swarm opened for the
    /// member (its mark differs): left untouched.
    NotOurs,
}

/// Closes the member's pane (the kill ladder: SIGTERM to its process group,
/// SIGKILL after `grace`, pane closed and verified gone). A pane that does
/// not carry the member's mark is never touched ([`Closed::NotOurs`]).
pub async fn close_pane(opened: &Session, m: &Member, grace: Duration) -> Result<Closed> {
    let Some(pane) = member_pane(m) else {
        return Ok(Closed::Done);
    };
    if let Some((pid, start)) = foreign_in_process_pid(opened, m) {
        if !swarm_backends::process::same_process_alive(pid, start.as_deref()) {
            return Ok(Closed::Done);
        }
        if let Some(pgid) = swarm_backends::process::process_group(pid)
            && pgid == pid as i32
        {
            swarm_backends::process::terminate_group(
                pgid,
                grace,
                Duration::from_secs(2),
                || async {},
            )
            .await
            .map_err(|e| anyhow::anyhow!("killing {} (pid {pid}): {e}", m.name))?;
        }
        return Ok(Closed::Done);
    }
    match opened.backend.kill(&pane, grace).await {
        Ok(()) => Ok(Closed::Done),
        Err(BackendError::NotOurs { .. }) => {
            tracing::warn!(member = %m.name, pane = %pane, "pane no longer carries its mark; left untouched");
            Ok(Closed::NotOurs)
        }
        Err(e) => Err(e).with_context(|| format!("closing the pane {} of {}", pane, m.name)),
    }
}

/// [`close_pane`] for several members: the backend's panes in one
/// [`kill_all`](swarm_backends::PaneBackendExecutor::kill_all) (one ladder
/// for all), in-process panes of another process by pid.
pub async fn close_panes(
    opened: &Session,
    members: &[Member],
    grace: Duration,
) -> Result<Vec<Closed>> {
    if let [one] = members {
        // One pane: the backend's own kill, which also spreads the column
        // it leaves out evenly.
        return Ok(vec![close_pane(opened, one, grace).await?]);
    }
    let mut out = vec![Closed::Done; members.len()];
    let mut refs = Vec::new();
    let mut whose = Vec::new();
    for (i, m) in members.iter().enumerate() {
        if foreign_in_process_pid(opened, m).is_some() {
            out[i] = close_pane(opened, m, grace).await?;
        } else if let Some(pane) = member_pane(m) {
            refs.push(pane);
            whose.push(i);
        }
    }
    if refs.is_empty() {
        return Ok(out);
    }
    for ((&i, pane), result) in whose
        .iter()
        .zip(&refs)
        .zip(opened.backend.kill_all(&refs, grace).await)
    {
        let m = &members[i];
        match result {
            Ok(()) => {}
            Err(BackendError::NotOurs { .. }) => {
                tracing::warn!(member = %m.name, pane = %pane, "pane no longer carries its mark; left untouched");
                out[i] = Closed::NotOurs;
            }
            Err(e) => {
                return Err(e).with_context(|| format!("closing the pane {} of {}", pane, m.name));
            }
        }
    }
    Ok(out)
}

/// Waits up to `within` for the member's pane process to stop running.
pub async fn wait_for_exit(opened: &Session, m: &Member, within: Duration) -> Result<()> {
    wait_for_exits(opened, std::slice::from_ref(m), within).await
}

/// Waits up to `within` for every one of the members' pane processes to
/// stop running, asking the backend once a look for all of them.
pub async fn wait_for_exits(opened: &Session, members: &[Member], within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        let statuses = pane_statuses(opened, members).await?;
        if !statuses
            .iter()
            .any(|s| matches!(s, PaneStatus::Running { .. }))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// The live status of each member's pane, in order, with one backend call
/// for the panes this backend hosts.
pub async fn pane_statuses(opened: &Session, members: &[Member]) -> Result<Vec<PaneStatus>> {
    statuses(opened, members, false).await
}

/// [`pane_statuses`], and each pane found running then closes by itself
/// when its process ends, instead of staying as a dead pane
/// (`PaneBackendExecutor::status_closing_on_exit`; undone by
/// [`keep_on_exit`]): `down` takes the panes of the teammates it asks to
/// shut down this way.
pub async fn pane_statuses_closing_on_exit(
    opened: &Session,
    members: &[Member],
) -> Result<Vec<PaneStatus>> {
    statuses(opened, members, true).await
}

/// Each of the members' panes still there stays as a dead pane again when
/// its process ends (after [`pane_statuses_closing_on_exit`]).
pub async fn keep_on_exit(opened: &Session, members: &[Member]) -> Result<()> {
    let panes: Vec<_> = Panes::of(opened, members)
        .backend
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    Ok(opened.backend.keep_on_exit(&panes).await?)
}

/// The members' panes, each with its member's index, as they are read.
struct Panes {
    /// Those `opened`'s backend addresses.
    backend: Vec<(usize, swarm_backends::PaneRef)>,
    /// Those of another lead's in-process backend: each a process, read
    /// by its pid (and start time).
    foreign: Vec<(usize, u32, Option<String>)>,
}

impl Panes {
    fn of(opened: &Session, members: &[Member]) -> Self {
        let mut panes = Panes {
            backend: Vec::new(),
            foreign: Vec::new(),
        };
        for (i, m) in members.iter().enumerate() {
            let Some(pane) = member_pane(m) else {
                continue;
            };
            match foreign_in_process_pid(opened, m) {
                Some((pid, start)) => panes.foreign.push((i, pid, start)),
                None => panes.backend.push((i, pane)),
            }
        }
        panes
    }
}

async fn statuses(opened: &Session, members: &[Member], closing: bool) -> Result<Vec<PaneStatus>> {
    let mut out = vec![PaneStatus::Gone; members.len()];
    let Panes {
        backend: asked,
        foreign,
    } = Panes::of(opened, members);
    for (i, pid, start) in foreign {
        if swarm_backends::process::same_process_alive(pid, start.as_deref()) {
            out[i] = PaneStatus::Running { pid: Some(pid) };
        }
    }
    if !asked.is_empty() {
        let ids: Vec<_> = asked.iter().map(|(_, p)| p.clone()).collect();
        let got = if closing {
            opened.backend.status_closing_on_exit(&ids).await?
        } else {
            opened.backend.status(&ids).await?
        };
        for ((i, _), (_, status)) in asked.iter().zip(got) {
            out[*i] = status;
        }
    }
    Ok(out)
}

impl super::TeamOps {
    /// `name`'s pane as swarm addresses it (its id and mark).
    pub fn pane_of(&self, name: &str) -> Result<swarm_backends::PaneRef> {
        let tf = self.team().roster().read()?;
        match tf.member(name) {
            Some(m) => match member_pane(m) {
                Some(p) => Ok(p),
                None => anyhow::bail!("{name} has no pane"),
            },
            None => anyhow::bail!("{name} is not on the roster"),
        }
    }

    /// Hides `name`'s pane (parked out of the lead's window) and records
    /// it on the roster; refused in one line on a backend without the
    /// layout facet.
    pub async fn hide(&self, name: &str) -> Result<()> {
        self.require_own("hide its panes")?;
        let session = self.session()?;
        let layout = layout_of(&session, "hiding panes")?;
        let pane = self.pane_of(name)?;
        layout.hide(&pane).await?;
        self.set_hidden(name, true).await
    }

    /// Shows every hidden pane again; how many. Refused in one line on a
    /// backend without the layout facet.
    pub async fn show_all(&self) -> Result<usize> {
        self.require_own("show its panes")?;
        let session = self.session()?;
        let layout = layout_of(&session, "showing panes")?;
        let tf = self.team().roster().read()?;
        let hidden: Vec<&Member> = tf.teammates().filter(|m| m.hidden()).collect();
        for m in &hidden {
            if let Some(pane) = member_pane(m) {
                layout.show(&pane).await?;
            }
            self.set_hidden(&m.name, false).await?;
        }
        Ok(hidden.len())
    }

    /// Makes `name`'s pane the current one; refused in one line on a
    /// backend without the focus facet.
    pub async fn focus(&self, name: &str) -> Result<()> {
        let session = self.session()?;
        let focus = session
            .backend
            .pane_focus()
            .ok_or_else(|| BackendError::unsupported(session.kind(), "focusing a pane"))?;
        let pane = self.pane_of(name)?;
        Ok(focus.focus(&pane.id).await?)
    }

    /// Records whether `name`'s pane is hidden, off the async worker (the
    /// roster write may wait on its lock).
    async fn set_hidden(&self, name: &str, hidden: bool) -> Result<()> {
        let name = name.to_string();
        let value = if hidden {
            serde_json::Value::Bool(true)
        } else {
            serde_json::Value::Null
        };
        self.blocking(move |team| {
            team.roster().update_member(&name, |m| {
                m.set_swarm_field(crate::team::SwarmField::Hidden, value)
            })?;
            Ok(())
        })
        .await
    }
}
