//! Teammates that left can come back (issue 23): a teammate that was shut
//! down, pruned or killed while its team went on, and whose conversation
//! its CLI can resume ([`super::resume::resumable_session`]), is
//! remembered as it was (`<state>/departed/<name>.json`, its roster entry).
//! A message sent to it later ([`TeamOps::send_or_revive`]: `swarm send`,
//! the dialog's `m`, MCP's `send_message`) brings it back first: the same
//! name, agent, model, working directory, worktree and `joinedAt` (so its
//! recorded session is its own and resumes), in a new pane; then the
//! message is delivered, and the sender is told ("bob was stopped; started
//! again with its conversation"). A `down` forgets them with the team.

use super::TeamOps;
use super::resume::{Conversation, resumable_session};
use crate::atomic_file;
use crate::json_text;
use crate::team::post::Delivered;
use crate::team::{Member, SwarmField, Team};
use anyhow::{Context, Result};

/// Where `name`'s departed record is.
fn record_path(team: &Team, name: &str) -> Result<std::path::PathBuf> {
    Ok(team.root.departed(&team.name, name)?)
}

/// Remembers `m`, which leaves a team that goes on, if its conversation
/// can be resumed (a teammate with none would come back a stranger).
pub fn remember(team: &Team, m: &Member) -> Result<()> {
    if m.is_ai_lead() || !matches!(resumable_session(team, m), Conversation::Resumed(_)) {
        return Ok(());
    }
    let path = record_path(team, &m.name)?;
    if let Some(d) = path.parent() {
        atomic_file::ensure_dir(d)?;
    }
    atomic_file::write_atomic(&path, &json_text::to_pretty(m))
        .with_context(|| format!("remembering {}", m.name))
}

/// `name`'s record, if it left and can come back.
pub fn recall(team: &Team, name: &str) -> Result<Option<Member>> {
    // A name that cannot be a file name was never remembered: the caller
    // says what is wrong with it ("not a member"), not the file system.
    let Ok(path) = record_path(team, name) else {
        return Ok(None);
    };
    Ok(match atomic_file::read_optional(&path)? {
        None => None,
        Some(b) => json_text::parse_lenient::<Member>(&b).ok(),
    })
}

/// Forgets `name`'s record (it came back, or its name was taken again).
pub fn forget(team: &Team, name: &str) -> Result<()> {
    Ok(atomic_file::remove_if_there(&record_path(team, name)?)?)
}

/// A send, and whether it brought its recipient back first.
#[derive(Debug)]
pub struct SentTo {
    pub delivered: Vec<Delivered>,
    /// "bob was stopped; started again with its conversation".
    pub revived: Option<String>,
}

impl TeamOps {
    /// Whether `name` left and a message to it would bring it back.
    pub fn can_revive(&self, name: &str) -> Result<bool> {
        Ok(recall(self.team(), name)?.is_some())
    }

    /// [`TeamOps::send`], but a recipient that left (shut down, pruned or
    /// killed, its conversation recorded) is brought back first, with its
    /// conversation, and the message then delivered to it.
    pub async fn send_or_revive(
        &self,
        to: &str,
        text: &str,
        summary: Option<&str>,
        force: bool,
    ) -> Result<SentTo> {
        let revived = self.revive_for_message(to).await?;
        let delivered = self.send(to, text, summary, force)?;
        Ok(SentTo { delivered, revived })
    }

    /// Brings `to` back if it left and can: `None` when it is on the
    /// roster (or `*`, or never left), else what was done.
    pub async fn revive_for_message(&self, to: &str) -> Result<Option<String>> {
        if to == "*" || self.team().roster().read()?.member(to).is_some() {
            return Ok(None);
        }
        let Some(was) = recall(self.team(), to)? else {
            return Ok(None);
        };
        self.require_own("bring a teammate back")?;
        let session = self.session()?;
        let mut m = was.clone();
        m.tmux_pane_id.clear();
        m.is_active = Some(false);
        for f in [
            SwarmField::Exit,
            SwarmField::Pid,
            SwarmField::PidStart,
            SwarmField::Nonce,
            SwarmField::Hidden,
            SwarmField::Apart,
        ] {
            m.set_swarm_field(f, serde_json::Value::Null);
        }
        // Back as it was: its joinedAt keeps its recorded session its own.
        self.team().roster().add_member(m.clone())?;
        let req = super::up::reserved_request(&m)?;
        let _lock = crate::team::locks::LifecycleLock::acquire(self.team()).await?;
        if let Err(e) = super::spawn::spawn_members_locked(self.team(), &session, &[req]).await {
            // Not back: off the roster again, still remembered.
            crate::dropped::ignore(
                self.team().roster().remove_member(to),
                "taking a teammate that did not come back off the roster",
            );
            return Err(e.context(format!("bringing {to} back")));
        }
        forget(self.team(), to)?;
        Ok(Some(format!(
            "{to} was stopped; started again with its conversation"
        )))
    }
}
