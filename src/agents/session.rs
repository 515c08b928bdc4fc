//! A teammate's conversation across units of work: each exec preset that
//! can resume its own session does so, so the second message a member gets
//! reaches a model that has its first exchange in front of it.
//!
//! The session is recorded per member in `<state>/runtime/<member>.session.json`
//! (`{"agent": "codex", "id": "…"}`, 0600, written atomically; the path
//! from `paths.rs`, [`record_path`]); [`recorded`] is the one lookup (a
//! runtime that starts again, after a crash or a reboot, continues the
//! same conversation).
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

use super::exec::Preset;
use crate::team::Team;
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What is recorded for a member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// The preset that made it (a member whose agent changed starts afresh).
    pub agent: String,
    /// Codex's session id, the UUID given to Claude Code or Gemini CLI, or
    /// aider's chat history file.
    pub id: String,
}

/// How one run continues the member's conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// A new conversation; `id` is the one to start it with, when the CLI
    /// takes one (`--session-id`, aider's history file).
    Fresh { id: Option<String> },
    /// Continue this session.
    Resume(String),
}

impl Turn {
    pub fn is_fresh(&self) -> bool {
        matches!(self, Turn::Fresh { .. })
    }
}

/// Where `member`'s session is recorded.
pub fn record_path(team: &Team, member: &str) -> Result<PathBuf> {
    Ok(team.root.runtime_file(&team.name, member, "session.json")?)
}

/// The session recorded for `member` of `team`, if any: the one lookup
/// (the runtime's, and a restart's).
pub fn recorded(team: &Team, member: &str) -> Result<Option<Session>> {
    read(&record_path(team, member)?)
}

/// The session recorded in `path`; a file that cannot be parsed counts as
/// none (it is replaced by the next run's).
pub fn read(path: &Path) -> Result<Option<Session>> {
    match std::fs::read(path) {
        Ok(b) => Ok(serde_json::from_slice(&b).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn write(path: &Path, s: &Session) -> Result<()> {
    if let Some(dir) = path.parent() {
        crate::atomic_file::ensure_dir(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    let bytes = serde_json::to_vec(s).context("encoding the session record")?;
    crate::atomic_file::write_atomic(path, &bytes)
        .with_context(|| format!("writing {}", path.display()))
}

fn forget(path: &Path) -> Result<()> {
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

/// How the next run of `preset` continues, from the record at `path`;
/// `command` is the member's command override (codex resumes only through
/// an `exec` word).
pub fn next_turn(preset: Preset, command: Option<&[String]>, path: &Path) -> Result<Turn> {
    let rec = read(path)?.filter(|s| s.agent == preset.name());
    Ok(match (preset, rec) {
        (Preset::Command, _) => Turn::Fresh { id: None },
        (Preset::Codex, _) if !codex_can_resume(command) => Turn::Fresh { id: None },
        (_, Some(s)) => Turn::Resume(s.id),
        (Preset::Codex, None) => Turn::Fresh { id: None },
        (Preset::Aider, None) => Turn::Fresh {
            id: Some(aider_history(path).to_string_lossy().into_owned()),
        },
        (Preset::ClaudePrint | Preset::Gemini, None) => Turn::Fresh {
            id: Some(uuid::Uuid::new_v4().to_string()),
        },
    })
}

/// Records what a run of `preset` that ended (`ok`: exit 0) leaves to
/// continue; `output` is what it printed (Codex prints its session id).
pub fn after_run(preset: Preset, path: &Path, turn: &Turn, ok: bool, output: &str) -> Result<()> {
    let keep = |id: String| {
        write(
            path,
            &Session {
                agent: preset.name().to_string(),
                id,
            },
        )
    };
    match (turn, ok) {
        (Turn::Resume(_), true) => Ok(()),
        (Turn::Resume(id), false) => {
            tracing::warn!(session = %id, "a resumed run failed; the next one starts afresh");
            forget(path)
        }
        (Turn::Fresh { .. }, false) => Ok(()),
        (Turn::Fresh { id: Some(id) }, true) => keep(id.clone()),
        (Turn::Fresh { id: None }, true) => match (preset, codex_session_id(output)) {
            (Preset::Codex, Some(id)) => keep(id),
            _ => Ok(()),
        },
    }
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
        // Codex: no id until its output names one.
        let t = next_turn(Preset::Codex, None, &path).unwrap();
        assert_eq!(t, Turn::Fresh { id: None });
        let out = "OpenAI Codex v0.171.0\nsession id: 01a23377-71f3-7253-b2d4-6f784de9e5bf\n";
        after_run(Preset::Codex, &path, &t, true, out).unwrap();
        assert_eq!(
            next_turn(Preset::Codex, None, &path).unwrap(),
            Turn::Resume("01a23377-71f3-7253-b2d4-6f784de9e5bf".into())
        );
        // Another agent's record is not this one's.
        let t = next_turn(Preset::Gemini, None, &path).unwrap();
        let Turn::Fresh { id: Some(id) } = &t else {
            panic!("gemini starts with an id of swarm's: {t:?}")
        };
        assert!(uuid::Uuid::parse_str(id).is_ok());
        after_run(Preset::Gemini, &path, &t, true, "").unwrap();
        assert_eq!(
            next_turn(Preset::Gemini, None, &path).unwrap(),
            Turn::Resume(id.clone())
        );
        // A resumed run that failed: the next one is fresh.
        let t = next_turn(Preset::Gemini, None, &path).unwrap();
        after_run(Preset::Gemini, &path, &t, false, "").unwrap();
        assert!(next_turn(Preset::Gemini, None, &path).unwrap().is_fresh());
        // A fresh run that failed records nothing.
        let t = next_turn(Preset::ClaudePrint, None, &path).unwrap();
        after_run(Preset::ClaudePrint, &path, &t, false, "").unwrap();
        assert_eq!(read(&path).unwrap(), None);
        // Aider's history file is the member's own, beside the record.
        let t = next_turn(Preset::Aider, None, &path).unwrap();
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
            next_turn(Preset::Command, None, &path).unwrap(),
            Turn::Fresh { id: None }
        );
    }

    #[test]
    fn codex_resumes_by_id_only_and_only_through_an_exec_word() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.session.json");
        let id = "01a23377-71f3-7253-b2d4-6f784de9e5bf";
        write(
            &path,
            &Session {
                agent: "codex".into(),
                id: id.into(),
            },
        )
        .unwrap();
        let wrapper = vec!["my-codex-wrapper".to_string()];
        assert!(
            next_turn(Preset::Codex, Some(&wrapper), &path)
                .unwrap()
                .is_fresh()
        );
        let own = vec!["/opt/codex".to_string(), "exec".to_string()];
        assert_eq!(
            next_turn(Preset::Codex, Some(&own), &path).unwrap(),
            Turn::Resume(id.into())
        );
        assert_eq!(codex_session_id("session id: not-a-uuid"), None);
        assert_eq!(codex_session_id("no header"), None);
    }
}
