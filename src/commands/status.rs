//! `swarm status`: the roster, unread counts and task counts of a team.

use super::{Context, Exit, print_json};
use crate::cli::StatusArgs;
use crate::tasks::Status;
use crate::team::RosterError;
use crate::team::status::{Facts, MemberStatus, PaneSeen, recorded_exit};
use crate::text::escape_line;
use anyhow::Result;
use serde_json::json;
use swarm_backends::PaneStatus;

/// Each member's status by the one rule ([`MemberStatus::of`]), the lead
/// (`None`) excepted. Its pane is looked up when the team's backend can be
/// reached from here; otherwise the roster's record decides.
fn member_statuses(
    ctx: &Context,
    team: &crate::team::Team,
    members: &[crate::team::Member],
    tasks: &[crate::tasks::Task],
) -> Vec<Option<MemberStatus>> {
    let panes: Vec<PaneSeen> =
        crate::lead::session::open(&ctx.root, &team.name, &crate::cli::BackendArgs::default())
            .ok()
            .filter(|o| o.caps().panes_outlive_lead)
            .and_then(|opened| {
                let rt = crate::lead::session::runtime().ok()?;
                let got = rt
                    .block_on(crate::lead::teardown::pane_statuses(&opened, members))
                    .ok()?;
                Some(
                    got.into_iter()
                        .map(|p| match p {
                            PaneStatus::Running { .. } => PaneSeen::Running,
                            PaneStatus::Exited { code } => PaneSeen::Dead(code),
                            PaneStatus::Gone | PaneStatus::Foreign => PaneSeen::Dead(None),
                        })
                        .collect(),
                )
            })
            .unwrap_or_else(|| vec![PaneSeen::Unknown; members.len()]);
    let waiting = crate::lead::teardown::waiting_for_approval(team).unwrap_or_default();
    members
        .iter()
        .zip(panes)
        .map(|(m, pane)| {
            if m.is_lead() {
                return None;
            }
            // A member with no pane yet is being spawned: not dead.
            let pane = if m.tmux_pane_id.is_empty() && pane == PaneSeen::Dead(None) {
                PaneSeen::Unknown
            } else {
                pane
            };
            Some(MemberStatus::of(&Facts {
                recorded_exit: recorded_exit(m),
                pane,
                active: m.is_active == Some(true),
                has_task: tasks
                    .iter()
                    .any(|t| t.owner.as_deref() == Some(&m.name) && t.status == Status::InProgress),
                waiting: waiting.contains(&m.name),
                stopping: None,
            }))
        })
        .collect()
}

pub fn run(ctx: &Context, args: StatusArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let (roster, repaired) = match team.roster().load() {
        Ok(r) => r,
        Err(e @ RosterError::NotFound { .. }) => return Ok(Exit::No(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    if let Some(r) = repaired {
        eprintln!(
            "swarm: warning: config.json of team {} was unreadable; copied to {} and rebuilt with {} member(s)",
            escape_line(&team.name),
            r.quarantined.display(),
            r.rebuilt_members
        );
    }
    let mailbox = team.mailbox();
    let mut members = Vec::new();
    for m in &roster.members {
        let read = mailbox.read(&m.name)?;
        if let Some(q) = &read.quarantined {
            eprintln!(
                "swarm: warning: inbox of {} was corrupt; copied to {}",
                escape_line(&m.name),
                q.display()
            );
        }
        let unread = read.entries.iter().filter(|e| e.is_unread()).count();
        members.push((m, unread));
    }
    let list = team.tasks().list()?;
    let statuses = member_statuses(ctx, &team, &roster.members, &list.tasks);
    for q in &list.quarantined {
        eprintln!(
            "swarm: warning: a corrupt task file was copied to {}",
            q.display()
        );
    }
    let count = |s: Status| list.tasks.iter().filter(|t| t.status == s).count();
    let (pending, in_progress, completed) = (
        count(Status::Pending),
        count(Status::InProgress),
        count(Status::Completed),
    );

    if args.json {
        let ms: Vec<_> = members
            .iter()
            .zip(&statuses)
            .map(|((m, unread), status)| {
                json!({
                    "name": m.name, "agentId": m.agent_id, "color": m.color,
                    "paneId": m.tmux_pane_id, "backendType": m.backend_type,
                    "isActive": m.is_active, "mode": m.mode, "model": m.model, "unread": unread,
                    "status": status.as_ref().map(|s| s.label()),
                    "worktree": crate::worktree::member_json(m),
                })
            })
            .collect();
        print_json(&json!({
            "team": roster.name, "root": ctx.root.dir(), "members": ms,
            "tasks": {"pending": pending, "in_progress": in_progress, "completed": completed,
                      "total": list.tasks.len()},
        }));
        return Ok(Exit::Ok);
    }
    // Everything below comes from files anyone may have written.
    println!(
        "team {} ({})",
        escape_line(&roster.name),
        escape_line(&ctx.root.dir().display().to_string())
    );
    println!(
        "{:<24} {:<8} {:<16} {:<10} {:<8} {:>6}  WORKTREE",
        "MEMBER", "COLOR", "STATUS", "PANE", "BACKEND", "UNREAD"
    );
    for ((m, unread), status) in members.iter().zip(&statuses) {
        let status = status
            .as_ref()
            .map(|s| s.label())
            .unwrap_or_else(|| "-".to_string());
        println!(
            "{:<24} {:<8} {:<16} {:<10} {:<8} {:>6}  {}",
            escape_line(&m.name),
            escape_line(m.color.as_deref().unwrap_or("-")),
            status,
            escape_line(if m.tmux_pane_id.is_empty() {
                "-"
            } else {
                &m.tmux_pane_id
            }),
            escape_line(m.backend_type.as_deref().unwrap_or("-")),
            unread,
            escape_line(&crate::worktree::member_line(m).unwrap_or_else(|| "-".into()))
        );
    }
    println!(
        "tasks: {completed}/{} completed · {in_progress} in progress · {pending} pending",
        list.tasks.len()
    );
    Ok(Exit::Ok)
}
