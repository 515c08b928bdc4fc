//! A team that comes back after its panes are gone (the tmux server ended,
//! the machine rebooted): `swarm up` on such a team offers to bring every
//! teammate back, `swarm up --resume` does it without asking, `--fresh`
//! starts them anew.
//!
//! Brought back, a teammate gets a new pane in its own worktree if it had
//! one (see [`crate::worktree`]); its inbox and its claimed tasks are
//! untouched files, so its runtime finds them as it left them (a unit it
//! was running when it died is reported as interrupted, never re-run). Its
//! conversation comes back where its CLI can resume one:
//! [`resumable_session`] is the one place that says how, per agent.
//!
//! What resume needs is recorded as members are spawned
//! ([`record_at_spawn`]): a Claude Code teammate is started with
//! `--session-id <uuid>`, the uuid kept as the member's `sessionId` (the
//! member field Claude Code itself reads for it), and later started with
//! `--resume <uuid>` once Claude Code has written that session's
//! transcript (`<config dir>/projects/*/<uuid>.jsonl`); those flags and
//! the field are Claude Code's, so they live in [`crate::agents::claude`].
//! Nothing else of the formats other tools read changes.

use crate::agents::claude::{SESSION_KEY, session_id};
use crate::agents::{Agent, Preset};
use crate::session::Session;
use crate::team::{Member, SwarmField, Team};
use anyhow::{Context, Result};
use serde_json::Value;
use swarm_backends::PaneStatus;

/// What `up` does with a team whose panes are all gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comeback {
    /// Ask on a terminal; elsewhere say how and leave the team as it is.
    Ask,
    /// `--resume`: bring every teammate back as it was.
    Resume,
    /// `--fresh`: start them anew, their claimed tasks back on the board.
    Fresh,
}

/// How a teammate's conversation comes back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    /// Its CLI resumes it: what to tell the user.
    Resumed(String),
    /// It cannot be resumed: why (the teammate starts fresh).
    Fresh(String),
}

/// Records, on a member about to be spawned, what a later resume needs.
/// A Claude Code teammate gets its session id now (kept across respawns
/// until `--fresh` clears it). True when it already had one: it continues
/// that conversation, which holds its first prompt already (so the prompt
/// is not sent again). Started anew, it gets the prompt again, ahead of
/// the unread mail that waits for it
/// ([`crate::agents::write_initial_prompt`]).
pub fn record_at_spawn(m: &mut Member, agent: Agent) -> bool {
    if agent != Agent::Claude {
        return false;
    }
    if session_id(m).is_some() {
        return true;
    }
    m.extra.insert(
        SESSION_KEY.into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    false
}

/// The one answer to "can this member's conversation be resumed, and how".
pub fn resumable_session(team: &Team, m: &Member) -> Conversation {
    let agent = match Agent::of(m) {
        Ok(a) => a,
        Err(e) => return Conversation::Fresh(format!("{e:#}; started fresh")),
    };
    match agent {
        Agent::Claude => match session_id(m) {
            Some(id) => Conversation::Resumed(format!("its Claude Code conversation {id} resumes")),
            None => {
                Conversation::Fresh("no Claude Code session was recorded; started fresh".into())
            }
        },
        Agent::Shell => Conversation::Fresh(
            "the shell agent keeps no conversation; started fresh (its mail and tasks are kept)"
                .into(),
        ),
        Agent::Process | Agent::Exec(Preset::Command) => Conversation::Fresh(
            "its program's conversation is its own business; started fresh".into(),
        ),
        Agent::Exec(preset) => exec_preset_session(team, m, preset),
    }
}

/// The exec presets (codex, gemini, aider, claude-print): their runtime
/// records each member's CLI session between units of work
/// ([`crate::agents::session`]) and resumes it by itself on its next run;
/// this says whether one is recorded for `m`.
fn exec_preset_session(team: &Team, m: &Member, preset: Preset) -> Conversation {
    match crate::agents::session::recorded(team, m) {
        Ok(Some(s)) if s.agent == preset.name() => Conversation::Resumed(format!(
            "its {} conversation {} resumes",
            preset.name(),
            s.id
        )),
        Ok(_) => Conversation::Fresh(format!(
            "no {} conversation was recorded; started fresh",
            preset.name()
        )),
        Err(e) => Conversation::Fresh(format!("{e:#}; started fresh")),
    }
}

/// Called by `up` under the lifecycle lock, before it spawns the members
/// without a pane: when every teammate's pane is gone, brings them back
/// (`Resume`, or `Ask` answered yes) or starts them anew (`Fresh`) by
/// clearing their pane records, so that `up` spawns them again. Returns
/// the lines to show, one per teammate.
pub async fn comeback(team: &Team, opened: &Session, how: Comeback) -> Result<Vec<String>> {
    let tf = team.roster().read()?;
    // Those that ran: a pane recorded, or an end (a lead that saw a pane
    // go to another program forgets its id but records the end). The
    // others were never started: `up` spawns them as it always does.
    let gone: Vec<Member> = tf
        .teammates()
        .filter(|m| !m.tmux_pane_id.is_empty() || m.swarm_field(SwarmField::Exit).is_some())
        .cloned()
        .collect();
    if gone.is_empty() {
        return Ok(Vec::new());
    }
    let statuses = super::panes::pane_statuses(opened, &gone).await?;
    if statuses
        .iter()
        .any(|s| matches!(s, PaneStatus::Running { .. }))
    {
        return Ok(Vec::new());
    }
    let names: Vec<String> = gone.iter().map(|m| m.name.clone()).collect();
    let how = match how {
        Comeback::Ask => match ask(&team.name, &names)? {
            Some(h) => h,
            None => return Ok(Vec::new()),
        },
        h => h,
    };
    let lines = gone
        .iter()
        .map(|m| match how {
            Comeback::Fresh => start_fresh(team, m),
            _ => bring_back(team, m),
        })
        .collect::<Result<Vec<String>>>()?;
    let fresh = how == Comeback::Fresh;
    team.roster()
        .update(|tf| {
            for m in tf.members.iter_mut().filter(|m| names.contains(&m.name)) {
                m.tmux_pane_id = String::new();
                m.set_swarm_field(SwarmField::Exit, Value::Null);
                if fresh {
                    m.extra.remove(SESSION_KEY);
                }
            }
            Ok(())
        })
        .context("clearing the gone panes from the roster")?;
    Ok(lines)
}

/// `--fresh` for one teammate: its recorded conversation forgotten, its
/// claimed tasks back on the board; the line that says so.
fn start_fresh(team: &Team, m: &Member) -> Result<String> {
    crate::agents::session::Store::of(team, m)?
        .forget()
        .with_context(|| format!("forgetting {}'s conversation", m.name))?;
    let back = team.tasks().unassign_all_of(&m.name)?;
    let ids: Vec<String> = back.iter().map(|t| format!("#{}", t.id)).collect();
    Ok(match ids.is_empty() {
        true => format!("{}: started fresh", m.name),
        false => format!(
            "{}: started fresh; task(s) {} back on the board",
            m.name,
            ids.join(", ")
        ),
    })
}

/// `--resume` for one teammate: the line saying what resumes. A Claude
/// Code teammate resumes with no first prompt, so the lead's mail that came
/// meanwhile is stamped afresh for it to trust
/// ([`crate::agents::claude::restamp_signed_mail`]).
fn bring_back(team: &Team, m: &Member) -> Result<String> {
    if Agent::of(m).ok() == Some(Agent::Claude) && session_id(m).is_some() {
        crate::agents::claude::restamp_signed_mail(team, &m.name)?;
    }
    Ok(match resumable_session(team, m) {
        Conversation::Resumed(how) => format!("{}: back; {how}", m.name),
        Conversation::Fresh(why) => format!("{}: back; {why}", m.name),
    })
}

/// Asks on a terminal; elsewhere says what to run and answers `None`.
fn ask(team: &str, names: &[String]) -> Result<Option<Comeback>> {
    use std::io::{BufRead, IsTerminal, Write};
    let who = names.join(", ");
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "the panes of {who} are gone; `swarm up --team {team} --resume` brings them back, \
             `--fresh` starts them anew"
        );
        return Ok(None);
    }
    eprint!("team {team}: the panes of {who} are gone. Bring them back? [Y]es / [f]resh / [n]o: ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .context("reading the answer")?;
    Ok(match answer.trim().to_ascii_lowercase().as_str() {
        "" | "y" | "yes" => Some(Comeback::Resume),
        "f" | "fresh" => Some(Comeback::Fresh),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::claude::claude_session_args;

    #[test]
    fn a_claude_teammate_starts_with_its_recorded_session_then_resumes_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Member::teammate("t", "alice", "blue", "/tmp");
        assert!(!record_at_spawn(&mut m, Agent::Shell));
        assert_eq!(session_id(&m), None);
        assert!(
            !record_at_spawn(&mut m, Agent::Claude),
            "a new conversation"
        );
        let id = session_id(&m).unwrap().to_string();
        assert!(
            record_at_spawn(&mut m, Agent::Claude),
            "the same one continues"
        );
        assert_eq!(session_id(&m), Some(id.as_str()), "kept across respawns");
        assert_eq!(
            claude_session_args(&m, Some(dir.path())),
            ["--session-id", id.as_str()]
        );
        let project = dir.path().join("projects/-tmp");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join(format!("{id}.jsonl")), "{}\n").unwrap();
        assert_eq!(
            claude_session_args(&m, Some(dir.path())),
            ["--resume", id.as_str()]
        );
    }
}
