//! Real Claude Code as a native teammate (reference §8): the launch argv and
//! environment, and the signed initial prompt in its inbox. The runtime only
//! supervises such a member: Claude Code polls its own inbox.
//!
//! Launch argv (§8.1, §8.2), in this order:
//!
//! ```text
//! claude --agent-id NAME@TEAM --agent-name NAME --team-name TEAM --agent-color COLOR
//!        [--parent-session-id LEAD_SESSION] --lead-verify-key MS.SPKI
//!        [--plan-mode-required] [--permission-mode MODE | --dangerously-skip-permissions]
//!        [--model MODEL]
//! ```
//!
//! `MODE` is the member's `mode` (`plan` when plan mode is required;
//! `plan`/`dontAsk` otherwise become `default`, as Claude Code does);
//! `bypassPermissions` becomes `--dangerously-skip-permissions`. The
//! member's `command` replaces the `claude` program (its argv prefix).
//!
//! Environment: `CLAUDECODE=1`, `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`,
//! `CLAUDE_CODE_ENABLE_TODO_TOOLS=1`, `CLAUDE_CONFIG_DIR=<swarm root>` (so
//! the teammate finds the team under swarm's root).

use super::signing::LeadKey;
use crate::mailbox::Entry;
use crate::team::{Member, Team};
use anyhow::{Context, Result, bail};

/// What to exec for a Claude Code teammate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeLaunch {
    pub argv: Vec<String>,
    /// Variables to set on top of the pane's environment.
    pub env: Vec<(String, String)>,
}

/// Builds the launch of `member` of `team`. Creates (or reuses) the
/// member's signing key; `ms` is the launch time that goes into
/// `--lead-verify-key` (the teammate must start within 120 s of it).
pub fn claude_launch(team: &Team, member: &Member, ms: u64) -> Result<ClaudeLaunch> {
    let roster = team.roster().read()?;
    let key = LeadKey::load_or_create(&team.root, &team.name, &member.name)?;
    let command = super::member_command(member)?;
    let mut argv: Vec<String> = match command {
        Some(c) if !c.is_empty() => c,
        _ => vec!["claude".to_string()],
    };
    let color = member.color.clone().unwrap_or_else(|| "blue".to_string());
    argv.extend([
        "--agent-id".into(),
        format!("{}@{}", member.name, team.name),
        "--agent-name".into(),
        member.name.clone(),
        "--team-name".into(),
        team.name.clone(),
        "--agent-color".into(),
        color,
    ]);
    if let Some(session) = roster.lead_session_id.as_deref().filter(|s| !s.is_empty()) {
        argv.extend(["--parent-session-id".into(), session.to_string()]);
    }
    argv.extend(["--lead-verify-key".into(), key.verify_key_arg(ms)]);
    let plan = member.plan_mode_required == Some(true);
    if plan {
        argv.push("--plan-mode-required".into());
    }
    match (plan, member.mode.as_deref()) {
        (true, _) => argv.extend(["--permission-mode".into(), "plan".into()]),
        (false, Some("bypassPermissions")) => argv.push("--dangerously-skip-permissions".into()),
        (false, Some("plan" | "dontAsk")) => {
            argv.extend(["--permission-mode".into(), "default".into()])
        }
        (false, Some(m)) if !m.is_empty() => {
            argv.extend(["--permission-mode".into(), m.to_string()])
        }
        _ => {}
    }
    if let Some(model) = member.model.as_deref().filter(|m| !m.is_empty()) {
        argv.extend(["--model".into(), model.to_string()]);
    }
    let env = vec![
        ("CLAUDECODE".into(), "1".into()),
        ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS".into(), "1".into()),
        ("CLAUDE_CODE_ENABLE_TODO_TOOLS".into(), "1".into()),
        (
            "CLAUDE_CONFIG_DIR".into(),
            team.root.dir().to_string_lossy().into_owned(),
        ),
    ];
    Ok(ClaudeLaunch { argv, env })
}

/// Writes `prompt` as the first entry of `name`'s inbox, as Claude Code's
/// lead does before the teammate starts (reference §8.4, §8.5): the inbox
/// is cleared (anything in it is kept in the member's history), then a
/// plain entry `from: "team-lead"` with keys `from, text, timestamp, msgV,
/// msg_id, type, read, lead_sig`, signed with the member's key. A prompt
/// that is itself a protocol frame is refused.
pub fn write_initial_prompt(team: &Team, name: &str, prompt: &str) -> Result<Entry> {
    if crate::protocol::Message::parse(prompt).is_some() {
        bail!(
            "the initial prompt for {name:?} is a protocol frame; refusing to send it as a prompt"
        );
    }
    let mailbox = team.mailbox();
    let old = mailbox
        .read(name)
        .with_context(|| format!("reading {name}'s inbox before the initial prompt"))?;
    let keys: Vec<_> = old.entries.iter().map(Entry::key).collect();
    mailbox
        .consume(name, &keys)
        .with_context(|| format!("clearing {name}'s inbox"))?;
    let key = LeadKey::load_or_create(&team.root, &team.name, name)?;
    let mut entry = Entry::new(
        crate::team::names::LEAD_NAME,
        prompt.to_string(),
        None,
        None,
    );
    key.sign_entry(&mut entry);
    mailbox
        .append(name, entry.clone())
        .with_context(|| format!("writing the initial prompt to {name}'s inbox"))?;
    Ok(entry)
}
