//! `swarm status`: the roster, unread counts and task counts of a team.

use super::{Context, Exit, print_json};
use crate::cli::StatusArgs;
use crate::tasks::Status;
use crate::team::RosterError;
use crate::text::escape_line;
use anyhow::Result;
use serde_json::json;

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
            .map(|(m, unread)| {
                json!({
                    "name": m.name, "agentId": m.agent_id, "color": m.color,
                    "paneId": m.tmux_pane_id, "backendType": m.backend_type,
                    "isActive": m.is_active, "mode": m.mode, "model": m.model, "unread": unread,
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
        "{:<24} {:<8} {:<8} {:<10} {:<8} {:>6}",
        "MEMBER", "COLOR", "ACTIVE", "PANE", "BACKEND", "UNREAD"
    );
    for (m, unread) in &members {
        let active = match m.is_active {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        println!(
            "{:<24} {:<8} {:<8} {:<10} {:<8} {:>6}",
            escape_line(&m.name),
            escape_line(m.color.as_deref().unwrap_or("-")),
            active,
            escape_line(if m.tmux_pane_id.is_empty() {
                "-"
            } else {
                &m.tmux_pane_id
            }),
            escape_line(m.backend_type.as_deref().unwrap_or("-")),
            unread
        );
    }
    println!(
        "tasks: {completed}/{} completed · {in_progress} in progress · {pending} pending",
        list.tasks.len()
    );
    Ok(Exit::Ok)
}
