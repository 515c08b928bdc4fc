//! A teammate's conversation across units of work: each exec preset that
//! can resume its own session does so, so the second message a member gets
//! reaches a model that has its first exchange in front of it.
//!
//! The session is recorded per member in `<state>/runtime/<member>.session.json`
//! (`{"agent": "codex", "id": "…", "memberSince": JOINED_AT}`, 0600,
//! written atomically; the path from `paths.rs`, [`Store::of`]);
//! [`recorded`] is the one lookup (a runtime that starts again, after a
//! crash or a reboot, continues the same conversation). A record belongs
//! to the member whose roster `joinedAt` it carries: a new member of the
//! same name starts afresh.
//!
//! | preset | first run | later runs | the id |
//! |---|---|---|---|
//! | `codex` | `codex exec …` | `codex exec resume … ID PROMPT` | the `session id: UUID` Codex prints, read from the run's output |
//! | `claude-print` | `claude -p --session-id ID …` | `claude -p --resume ID …` | a UUID swarm picks |
//! | `gemini` | `gemini --session-id ID …` | `gemini --resume ID …` | a UUID swarm picks |
//! | `aider` | `aider --chat-history-file F …` | `… --restore-chat-history` | F = `<state>/runtime/<member>.aider-chat.md` |
//! | `command` | the command | the same | none: a program of the user's own |
//!
//! An id is recorded only after a run that exited 0 (a first run that
//! failed may have left no session to resume). A resumed run that fails
//! drops the record: the next unit starts a fresh conversation (with the
//! role prompt and the team instructions again) rather than failing on a
//! session that may be gone. Codex resumes by id only (never `--last`,
//! which would pick another member's session in the same directory); a
//! member `command` without an `exec` word cannot take `resume`, so it runs
//! fresh each time.

use super::exec::{Preset, Turn};
use crate::team::{Member, Team};
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What is recorded for a member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// The preset that made it (a member whose agent changed starts afresh).
    pub agent: String,
    /// Codex's session id, the UUID given to Claude Code or Gemini CLI, or
    /// aider's chat history file.
    pub id: String,
    /// The roster's `joinedAt` of the member it belongs to: a new member of
    /// the same name (spawned again after a kill) starts afresh.
    #[serde(default)]
    pub member_since: Option<u64>,
}

/// Where a member's session is recorded, and for which member.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
    member_since: Option<u64>,
}

/// The session recorded for `member` of `team`, if it is this member's:
/// the one lookup (the runtime's, and a restart's).
pub fn recorded(team: &Team, member: &Member) -> Result<Option<Session>> {
    Store::of(team, member)?.recorded()
}

impl Store {
    /// `member`'s store: `<state>/runtime/<member>.session.json` (`paths.rs`).
    pub fn of(team: &Team, member: &Member) -> Result<Store> {
        let path = team
            .root
            .runtime_file(&team.name, &member.name, "session.json")?;
        Ok(Store::new(path, member.joined_at))
    }

    pub fn new(path: PathBuf, member_since: Option<u64>) -> Store {
        Store { path, member_since }
    }

    /// The session recorded here, if it is this member's; a file that
    /// cannot be parsed counts as none (the next run's replaces it).
    pub fn recorded(&self) -> Result<Option<Session>> {
        let s = match std::fs::read(&self.path) {
            Ok(b) => serde_json::from_slice::<Session>(&b).ok(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", self.path.display())),
        };
        Ok(s.filter(|s| s.member_since == self.member_since))
    }

    fn write(&self, s: &Session) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            crate::atomic_file::ensure_dir(dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        let bytes = serde_json::to_vec(s).context("encoding the session record")?;
        crate::atomic_file::write_atomic(&self.path, &bytes)
            .with_context(|| format!("writing {}", self.path.display()))
    }

    /// Drops the record: the member's next run starts a new conversation
    /// (`swarm up --fresh`).
    pub fn forget(&self) -> Result<()> {
        remove(&self.path)
    }

    /// How the next run of `preset` continues; `command` is the member's
    /// command override (codex resumes only through an `exec` word). A
    /// fresh aider session starts with an empty history file.
    pub fn next_turn(&self, preset: Preset, command: Option<&[String]>) -> Result<Turn> {
        let rec = self.recorded()?.filter(|s| s.agent == preset.name());
        Ok(match (preset, rec) {
            (Preset::Command, _) => Turn::Fresh { id: None },
            (Preset::Codex, _) if !codex_can_resume(command) => Turn::Fresh { id: None },
            (_, Some(s)) => Turn::Resume(s.id),
            (Preset::Codex, None) => Turn::Fresh { id: None },
            (Preset::Aider, None) => {
                let history = aider_history(&self.path);
                remove(&history)?;
                Turn::Fresh {
                    id: Some(history.to_string_lossy().into_owned()),
                }
            }
            (Preset::ClaudePrint | Preset::Gemini, None) => Turn::Fresh {
                id: Some(uuid::Uuid::new_v4().to_string()),
            },
        })
    }

    /// Records what a run of `preset` that ended (`ok`: exit 0) leaves to
    /// continue; `output` is what it printed (Codex prints its session id).
    pub fn after_run(&self, preset: Preset, turn: &Turn, ok: bool, output: &str) -> Result<()> {
        let keep = |id: String| {
            self.write(&Session {
                agent: preset.name().to_string(),
                id,
                member_since: self.member_since,
            })
        };
        match (turn, ok) {
            (Turn::Resume(_), true) => Ok(()),
            (Turn::Resume(id), false) => {
                tracing::warn!(session = %id, "a resumed run failed; the next one starts afresh");
                self.forget()
            }
            (Turn::Fresh { .. }, false) => Ok(()),
            (Turn::Fresh { id: Some(id) }, true) => keep(id.clone()),
            (Turn::Fresh { id: None }, true) => match (preset, codex_session_id(output)) {
                (Preset::Codex, Some(id)) => keep(id),
                _ => Ok(()),
            },
        }
    }
}

fn remove(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// aider's chat history file, beside the record.
fn aider_history(record: &Path) -> PathBuf {
    record.with_file_name(
        record
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .replace(".session.json", ".aider-chat.md")
            })
            .unwrap_or_else(|| "aider-chat.md".into()),
    )
}

/// The `session id: UUID` line Codex prints in its header.
pub fn codex_session_id(output: &str) -> Option<String> {
    output.lines().find_map(|l| {
        let id = l.trim().strip_prefix("session id: ")?.trim();
        uuid::Uuid::parse_str(id).ok().map(|u| u.to_string())
    })
}

/// Codex resumes with `exec resume`: the member's command must hold the
/// `exec` word to put `resume` after (the default prefix does).
fn codex_can_resume(command: Option<&[String]>) -> bool {
    match command {
        Some(c) if !c.is_empty() => c.iter().any(|a| a == "exec"),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_preset_starts_then_resumes_its_own_session() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime/alice.session.json");
        let store = Store::new(path.clone(), Some(7));
        // Codex: no id until its output names one.
        let t = store.next_turn(Preset::Codex, None).unwrap();
        assert_eq!(t, Turn::Fresh { id: None });
        let out = "OpenAI Codex v0.171.0\nsession id: 01a23377-71f3-7253-b2d4-6f784de9e5bf\n";
        store.after_run(Preset::Codex, &t, true, out).unwrap();
        assert_eq!(
            store.next_turn(Preset::Codex, None).unwrap(),
            Turn::Resume("01a23377-71f3-7253-b2d4-6f784de9e5bf".into())
        );
        // Another agent's record is not this one's.
        let t = store.next_turn(Preset::Gemini, None).unwrap();
        let Turn::Fresh { id: Some(id) } = &t else {
            panic!("gemini starts with an id of swarm's: {t:?}")
        };
        assert!(uuid::Uuid::parse_str(id).is_ok());
        store.after_run(Preset::Gemini, &t, true, "").unwrap();
        assert_eq!(
            store.next_turn(Preset::Gemini, None).unwrap(),
            Turn::Resume(id.clone())
        );
        // A resumed run that failed: the next one is fresh.
        let t = store.next_turn(Preset::Gemini, None).unwrap();
        store.after_run(Preset::Gemini, &t, false, "").unwrap();
        assert!(store.next_turn(Preset::Gemini, None).unwrap().is_fresh());
        // A fresh run that failed records nothing.
        let t = store.next_turn(Preset::ClaudePrint, None).unwrap();
        store.after_run(Preset::ClaudePrint, &t, false, "").unwrap();
        assert_eq!(store.recorded().unwrap(), None);
        // Aider's history file is the member's own, beside the record.
        let t = store.next_turn(Preset::Aider, None).unwrap();
        assert_eq!(
            t,
            Turn::Fresh {
                id: Some(
                    dir.path()
                        .join("runtime/alice.aider-chat.md")
                        .to_string_lossy()
                        .into_owned()
                )
            }
        );
        assert_eq!(
            store.next_turn(Preset::Command, None).unwrap(),
            Turn::Fresh { id: None }
        );
        // A new member of the same name does not resume the old one's.
        store.after_run(Preset::Aider, &t, true, "").unwrap();
        std::fs::write(dir.path().join("runtime/alice.aider-chat.md"), "old").unwrap();
        assert!(!store.next_turn(Preset::Aider, None).unwrap().is_fresh());
        let again = Store::new(path.clone(), Some(8));
        assert!(again.next_turn(Preset::Aider, None).unwrap().is_fresh());
        assert!(
            !dir.path().join("runtime/alice.aider-chat.md").exists(),
            "a fresh aider session starts with no history"
        );
    }

    #[test]
    fn codex_resumes_by_id_only_and_only_through_an_exec_word() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path().join("s.session.json"), None);
        let id = "01a23377-71f3-7253-b2d4-6f784de9e5bf";
        store
            .write(&Session {
                agent: "codex".into(),
                id: id.into(),
                member_since: None,
            })
            .unwrap();
        let wrapper = vec!["my-codex-wrapper".to_string()];
        assert!(
            store
                .next_turn(Preset::Codex, Some(&wrapper))
                .unwrap()
                .is_fresh()
        );
        let own = vec!["/opt/codex".to_string(), "exec".to_string()];
        assert_eq!(
            store.next_turn(Preset::Codex, Some(&own)).unwrap(),
            Turn::Resume(id.into())
        );
        assert_eq!(codex_session_id("session id: not-a-uuid"), None);
        assert_eq!(codex_session_id("no header"), None);
    }
}
