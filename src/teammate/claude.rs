//! The runtime of a `claude` member: Claude Code in teammate mode reads its
//! own inbox and speaks the protocol itself, so the runtime only runs it in
//! the pane and reports how it ended.

use crate::clock;
use crate::context::Exit;
use crate::names::LEAD_NAME;
use crate::protocol::{IdleNotification, IdleReason, Message};
use crate::team::{Member, Team};
use anyhow::{Result, anyhow};
use std::path::PathBuf;

/// Runs Claude Code in teammate mode in this pane and waits for it. Claude
/// Code reads its own inbox and speaks the protocol itself; a non-zero exit
/// or a signal is reported like a crash (idle_notification failed, its
/// tasks back to the board) and the runtime exits non-zero.
pub fn supervise_claude(
    team: &Team,
    member: &Member,
    cwd: Option<PathBuf>,
    mut env: Vec<(String, String)>,
) -> Result<Exit> {
    let launch = crate::agents::claude_launch(team, member, clock::now_ms())?;
    env.extend(launch.env);
    println!(
        "swarm teammate {}@{} · Claude Code: {}",
        member.name,
        team.name,
        crate::agents::shown_argv(&launch.argv)
    );
    let ended = crate::agents::Invocation {
        argv: launch.argv,
        cwd,
        env,
        stdin: None,
    }
    .run_attached();
    if ended.success() {
        if let Err(e) = team.roster().set_active(&member.name, false) {
            tracing::warn!(%e, "could not record that this teammate stopped its turn");
        }
        return Ok(Exit::Ok);
    }
    let reason = format!("Claude Code {}", ended.describe());
    println!("✘ {reason}");
    let back = team.tasks().unassign_all_of(&member.name)?;
    let msg = Message::IdleNotification(IdleNotification {
        from: member.name.clone(),
        timestamp: clock::now_iso(),
        idle_reason: Some(IdleReason::Failed),
        summary: None,
        completed_task_id: None,
        completed_status: None,
        failure_reason: Some(reason.clone()),
        result: None,
    });
    team.send_protocol(&member.name, LEAD_NAME, &msg, true)?;
    if let Err(e) = team.roster().set_active(&member.name, false) {
        tracing::warn!(%e, "could not record that this teammate stopped its turn");
    }
    Err(anyhow!(
        "{reason}; {} task(s) returned to the board",
        back.len()
    ))
}
