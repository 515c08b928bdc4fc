//! Taking teammates down: the forced kill ladder, the graceful shutdown
//! handshake, pruning idle members, and `down` for the whole team.
//!
//! Every path ends the same way ([`release_member`]): the pane is closed
//! and verified gone, the member leaves the roster, and its open tasks go
//! back to the board. Each step is idempotent, so the lead and a `swarm`
//! command racing on the same member (the lead saw the approval, the command
//! waited for it) both finish cleanly.

use super::panes::{Opened, Panes};
use crate::mailbox::Entry;
use crate::protocol::{self, Message};
use crate::tasks::{Status, Task};
use crate::team::names::LEAD_NAME;
use crate::team::{Member, RosterError, SwarmField, Team};
use anyhow::{Context, Result, bail};
use std::time::{Duration, Instant};
use swarm_backends::{PaneBackendExecutor, PaneId, PaneStatus};

/// What happened to a member's tasks when it left.
#[derive(Debug, Default)]
pub struct Released {
    pub returned: Vec<Task>,
}

/// How a graceful shutdown ended.
#[derive(Debug)]
pub enum ShutdownOutcome {
    Approved(Released),
    Rejected(String),
    /// No answer in time (and no `--force-after`).
    NoAnswer,
    /// No answer in time; killed.
    Killed(Released),
}

/// The live status of a member's pane, `Gone` when it has none.
pub async fn pane_status(opened: &Opened, m: &Member) -> Result<PaneStatus> {
    if m.tmux_pane_id.is_empty() {
        return Ok(PaneStatus::Gone);
    }
    if let Some(pid) = foreign_in_process_pid(opened, m) {
        return Ok(if swarm_backends::process::process_alive(pid) {
            PaneStatus::Running { pid: Some(pid) }
        } else {
            PaneStatus::Gone
        });
    }
    let pane = PaneId::new(m.tmux_pane_id.clone());
    Ok(opened
        .panes
        .exec()
        .status(&[pane])
        .await?
        .first()
        .map(|(_, s)| *s)
        .unwrap_or(PaneStatus::Gone))
}

/// An in-process pane hosted by another process (the lead): reachable only
/// through its recorded pid.
fn foreign_in_process_pid(opened: &Opened, m: &Member) -> Option<u32> {
    if m.backend_type.as_deref() != Some("in-process") {
        return None;
    }
    if let Panes::InProcess(b) = &opened.panes
        && b.panes().iter().any(|p| p.as_str() == m.tmux_pane_id)
    {
        return None;
    }
    m.swarm_field(SwarmField::Pid)
        .and_then(|v| v.as_u64())
        .map(|p| p as u32)
}

/// Closes the member's pane (the kill ladder: SIGTERM to its process group,
/// SIGKILL after `grace`, pane closed and verified gone).
pub async fn close_pane(opened: &Opened, m: &Member, grace: Duration) -> Result<()> {
    if m.tmux_pane_id.is_empty() || m.tmux_pane_id == "leader" {
        return Ok(());
    }
    if let Some(pid) = foreign_in_process_pid(opened, m) {
        if let Some(pgid) = swarm_backends::process::process_group(pid) {
            swarm_backends::process::terminate_group(
                pgid,
                grace,
                Duration::from_secs(2),
                || async {},
            )
            .await
            .map_err(|e| anyhow::anyhow!("killing {} (pid {pid}): {e}", m.name))?;
        }
        return Ok(());
    }
    let pane = PaneId::new(m.tmux_pane_id.clone());
    opened
        .panes
        .exec()
        .kill(&pane, grace)
        .await
        .with_context(|| format!("closing the pane {} of {}", m.tmux_pane_id, m.name))
}

/// Removes `name` from the roster and returns its open tasks to the board.
pub fn release_member(team: &Team, name: &str) -> Result<Released> {
    match team.roster().remove_member(name) {
        Ok(_) | Err(RosterError::NoSuchMember { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let returned = team.tasks().unassign_all_of(name)?;
    Ok(Released { returned })
}

fn member(team: &Team, name: &str) -> Result<Member> {
    let tf = team.roster().read()?;
    if name == LEAD_NAME {
        bail!("the lead is not a teammate; use `swarm down` to stop the whole team");
    }
    tf.member(name).cloned().ok_or_else(|| {
        RosterError::NoSuchMember {
            team: team.name.clone(),
            name: name.to_string(),
            members: tf.member_names(),
        }
        .into()
    })
}

/// `swarm kill NAME`: the forced ladder, then release.
pub async fn kill_member(
    team: &Team,
    opened: &Opened,
    name: &str,
    grace: Duration,
) -> Result<Released> {
    let m = member(team, name)?;
    close_pane(opened, &m, grace).await?;
    release_member(team, name)
}

/// Finds the answer to `request_id` from `name` in the lead's inbox or, if
/// the lead already consumed it, in the lead's history.
fn find_answer(team: &Team, request_id: &str) -> Result<Option<Message>> {
    let mb = team.mailbox();
    let mut all: Vec<Entry> = mb.read(LEAD_NAME)?.entries;
    all.extend(mb.history(LEAD_NAME)?);
    Ok(all.iter().filter_map(Entry::protocol).find(|m| match m {
        Message::ShutdownApproved(a) => a.request_id == request_id,
        Message::ShutdownRejected(r) => r.request_id == request_id,
        _ => false,
    }))
}

/// `swarm shutdown NAME`: ask, wait for the answer, then close and release.
pub async fn shutdown_member(
    team: &Team,
    opened: &Opened,
    name: &str,
    reason: Option<String>,
    wait: Duration,
    force_after: Option<Duration>,
) -> Result<ShutdownOutcome> {
    let m = member(team, name)?;
    let request_id = send_shutdown_request(team, name, reason)?;
    let deadline = Instant::now() + force_after.unwrap_or(wait);
    let watcher = team.mailbox().watch()?;
    loop {
        match find_answer(team, &request_id)? {
            Some(Message::ShutdownApproved(_)) => {
                wait_for_exit(opened, &m, Duration::from_secs(2)).await?;
                close_pane(opened, &m, Duration::from_secs(1)).await?;
                return Ok(ShutdownOutcome::Approved(release_member(team, name)?));
            }
            Some(Message::ShutdownRejected(r)) => return Ok(ShutdownOutcome::Rejected(r.reason)),
            _ => {}
        }
        if matches!(
            pane_status(opened, &m).await?,
            PaneStatus::Gone | PaneStatus::Exited { .. }
        ) && find_answer(team, &request_id)?.is_none()
        {
            // It died without answering: that is not an approval, but there
            // is nothing left to ask. Clean up as a kill would.
            close_pane(opened, &m, Duration::from_secs(1)).await?;
            return Ok(ShutdownOutcome::Killed(release_member(team, name)?));
        }
        let now = Instant::now();
        if now >= deadline {
            if force_after.is_some() {
                close_pane(opened, &m, Duration::from_secs(2)).await?;
                return Ok(ShutdownOutcome::Killed(release_member(team, name)?));
            }
            return Ok(ShutdownOutcome::NoAnswer);
        }
        watcher.wait((deadline - now).min(Duration::from_millis(200)));
    }
}

/// Writes a `shutdown_request` to `name`; returns its request id.
pub fn send_shutdown_request(team: &Team, name: &str, reason: Option<String>) -> Result<String> {
    let request_id = protocol::shutdown_request_id(crate::clock::now_ms(), name);
    let msg = Message::ShutdownRequest(protocol::ShutdownRequest {
        request_id: request_id.clone(),
        from: LEAD_NAME.to_string(),
        reason,
        timestamp: crate::clock::now_iso(),
    });
    team.send_protocol(LEAD_NAME, name, &msg, false)?;
    Ok(request_id)
}

/// Waits up to `within` for the member's pane process to stop running.
pub async fn wait_for_exit(opened: &Opened, m: &Member, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !matches!(pane_status(opened, m).await?, PaneStatus::Running { .. }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Members `prune` would take: a live pane, no task in progress, no unread
/// mail, not in a turn.
pub async fn idle_members(team: &Team, opened: &Opened) -> Result<Vec<String>> {
    let tf = team.roster().read()?;
    let tasks = team.tasks().list()?.tasks;
    let mb = team.mailbox();
    let mut out = Vec::new();
    for m in tf.teammates() {
        if m.is_active == Some(true) || m.swarm_field(SwarmField::Exit).is_some() {
            continue;
        }
        let busy = tasks
            .iter()
            .any(|t| t.owner.as_deref() == Some(&m.name) && t.status == Status::InProgress);
        let unread = mb.read(&m.name)?.entries.iter().any(Entry::is_unread);
        if busy || unread {
            continue;
        }
        if matches!(pane_status(opened, m).await?, PaneStatus::Running { .. }) {
            out.push(m.name.clone());
        }
    }
    Ok(out)
}

/// What `down` did.
#[derive(Debug, Default)]
pub struct DownReport {
    pub approved: Vec<String>,
    pub killed: Vec<String>,
    pub stayed: Vec<String>,
}

/// `swarm down`: ask every teammate to shut down, wait up to `wait`, kill
/// the rest when `force`, close the lead's session, delete the team.
/// Refuses (deleting nothing) when teammates stay and `force` is off.
pub async fn down(team: &Team, opened: &Opened, wait: Duration, force: bool) -> Result<DownReport> {
    let tf = team.roster().read()?;
    let mut report = DownReport::default();
    let mut pending: Vec<(Member, String)> = Vec::new();
    for m in tf.teammates() {
        match pane_status(opened, m).await? {
            PaneStatus::Running { .. } => {
                let id =
                    send_shutdown_request(team, &m.name, Some("the team is going down".into()))?;
                pending.push((m.clone(), id));
            }
            _ => {
                close_pane(opened, m, Duration::from_millis(200)).await?;
                release_member(team, &m.name)?;
            }
        }
    }
    let deadline = Instant::now() + wait;
    let watcher = team.mailbox().watch()?;
    while !pending.is_empty() {
        let mut still = Vec::new();
        for (m, id) in pending {
            let answer = find_answer(team, &id)?;
            let status = pane_status(opened, &m).await?;
            match (answer, status) {
                (Some(Message::ShutdownApproved(_)), _)
                | (None, PaneStatus::Gone | PaneStatus::Exited { .. }) => {
                    wait_for_exit(opened, &m, Duration::from_secs(2)).await?;
                    close_pane(opened, &m, Duration::from_secs(1)).await?;
                    release_member(team, &m.name)?;
                    report.approved.push(m.name.clone());
                }
                _ => still.push((m, id)),
            }
        }
        pending = still;
        if pending.is_empty() || Instant::now() >= deadline {
            break;
        }
        watcher.wait(Duration::from_millis(100));
    }
    for (m, _) in pending {
        if force {
            close_pane(opened, &m, Duration::from_secs(1)).await?;
            release_member(team, &m.name)?;
            report.killed.push(m.name.clone());
        } else {
            report.stayed.push(m.name.clone());
        }
    }
    if !report.stayed.is_empty() {
        return Ok(report);
    }
    stop_lead(team, opened).await?;
    team.roster().delete(true)?;
    Ok(report)
}

/// Closes the lead's pane (and the team's tmux session, if swarm made one).
pub async fn stop_lead(team: &Team, opened: &Opened) -> Result<()> {
    if let Some(pid) = super::lead_pid_alive(team)?
        && pid != std::process::id()
    {
        // SIGTERM the lead process itself; its pane closes with it.
        let _ = swarm_backends::process::signal_process(pid as i32, libc::SIGTERM);
    }
    if let Panes::Tmux(tmux) = &opened.panes {
        if let Some(lead) = &opened.record.lead_pane {
            tmux.kill(lead, Duration::from_secs(1)).await.ok();
        }
        if let Some(session) = &opened.record.session {
            tmux.kill_session(session).await?;
        }
    }
    Ok(())
}
