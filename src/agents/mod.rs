//! Agents: how a unit of work (a task, or a batch of messages) reaches a
//! CLI. A member's `swarmAgent` picks one:
//!
//! - `shell` (the default): [`shell`]; a task's command, or a message, runs
//!   with `sh -c`.
//! - `codex`, `gemini`, `aider`, `claude-print`, `command`: [`exec`]; one
//!   non-interactive run per unit, with the prompt as the last argument.
//! - `claude`: [`claude`]; real Claude Code in teammate mode, supervised.
//!
//! [`process`] runs the processes; [`signing`] holds the lead keys Claude
//! Code teammates verify.

pub mod claude;
pub mod exec;
pub mod process;
pub mod shell;
pub mod signing;

pub use claude::{ClaudeLaunch, claude_launch, write_initial_prompt};
pub use exec::Preset;
pub use process::{Ended, Finished, Invocation};

use crate::mailbox::Entry;
use crate::tasks::Task;
use crate::team::{Member, SwarmField};
use anyhow::{Result, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Every agent name a member may have.
pub const AGENT_NAMES: [&str; 7] = [
    "shell",
    "claude",
    "codex",
    "gemini",
    "aider",
    "claude-print",
    "command",
];

/// The kind of agent a member runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    Shell,
    Exec(Preset),
    Claude,
}

impl Agent {
    /// `None` (no `swarmAgent`) is `shell`.
    pub fn from_name(name: Option<&str>) -> Result<Agent> {
        Ok(match name.unwrap_or("shell") {
            "shell" | "" => Agent::Shell,
            "claude" => Agent::Claude,
            other => match Preset::from_name(other) {
                Some(p) => Agent::Exec(p),
                None => bail!(
                    "unknown agent {other:?}; pick one of {}",
                    AGENT_NAMES.join(", ")
                ),
            },
        })
    }

    pub fn of(member: &Member) -> Result<Agent> {
        Agent::from_name(member.agent())
    }

    pub fn name(self) -> &'static str {
        match self {
            Agent::Shell => "shell",
            Agent::Claude => "claude",
            Agent::Exec(p) => p.name(),
        }
    }
}

/// The member's `swarmCommand` (an array of strings), if any.
pub fn member_command(member: &Member) -> Result<Option<Vec<String>>> {
    let Some(v) = member.swarm_field(SwarmField::Command) else {
        return Ok(None);
    };
    match serde_json::from_value::<Vec<String>>(v.clone()) {
        Ok(c) => Ok(Some(c)),
        Err(_) => bail!(
            "{}'s swarmCommand is not an array of strings: {v}",
            member.name
        ),
    }
}

/// Checks that `agent`'s program can be found before a pane is created for
/// it, so a missing CLI is a clear error at spawn, not a dead pane.
/// `command` is the member's command override (required for `command`).
pub fn check_available(agent: &str, command: Option<&[String]>) -> Result<()> {
    let agent = Agent::from_name(Some(agent))?;
    let program = match (agent, command.and_then(|c| c.first())) {
        (Agent::Shell, _) => return Ok(()),
        (_, Some(p)) => p.clone(),
        (Agent::Claude, None) => "claude".to_string(),
        (Agent::Exec(Preset::Command), None) => {
            bail!(
                "agent \"command\" needs a command: `swarm spawn NAME --agent command -- PROG ARGS…` or `command = [...]` in swarm.toml"
            )
        }
        (Agent::Exec(p), None) => p.default_prefix()[0].to_string(),
    };
    if find_program(&program).is_some() {
        return Ok(());
    }
    let shown = match agent {
        Agent::Claude | Agent::Exec(Preset::ClaudePrint) => "Claude Code",
        Agent::Exec(Preset::Codex) => "Codex CLI",
        Agent::Exec(Preset::Gemini) => "Gemini CLI",
        Agent::Exec(Preset::Aider) => "Aider",
        _ => "it",
    };
    bail!("{program} is not installed (not found on PATH); install {shown} or pick --agent shell")
}

/// `program` resolved like `execvp` does: a path with `/` as is, else the
/// first executable file of that name on `PATH`.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
}

/// Everything needed to run units of work for one member.
#[derive(Debug, Clone)]
pub struct Runner {
    pub agent: Agent,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub command: Option<Vec<String>>,
    pub model: Option<String>,
    pub role_prompt: Option<String>,
}

/// Where a run's output goes live: the pane.
pub type Pane = Arc<Mutex<dyn Write + Send>>;

impl Runner {
    fn invocation(&self, argv: Vec<String>) -> Invocation {
        Invocation {
            argv,
            cwd: self.cwd.clone(),
            env: self.env.clone(),
        }
    }

    /// What a task will run, shown in a plan approval request and the pane.
    pub fn task_plan(&self, task: &Task, mode: Option<&str>) -> String {
        match self.agent {
            Agent::Shell => shell::task_command(task),
            _ => shown_argv(&self.task_argv(task, mode)),
        }
    }

    fn task_argv(&self, task: &Task, mode: Option<&str>) -> Vec<String> {
        match self.agent {
            Agent::Shell | Agent::Claude => shell::argv(&shell::task_command(task)),
            Agent::Exec(p) => p.argv(
                self.command.as_deref(),
                self.model.as_deref(),
                mode,
                &exec::task_prompt(self.role_prompt.as_deref(), task),
            ),
        }
    }

    /// Runs a task.
    pub fn run_task(&self, task: &Task, mode: Option<&str>, pane: Pane) -> Finished {
        self.invocation(self.task_argv(task, mode))
            .run_captured(pane)
    }

    /// Runs one batch of messages: for `shell` the batch must be one message
    /// (its text is the command); exec presets get them all in one prompt.
    pub fn run_messages(&self, batch: &[Entry], mode: Option<&str>, pane: Pane) -> Finished {
        let argv = match self.agent {
            Agent::Shell | Agent::Claude => {
                let text = batch.iter().map(|e| e.text.as_str()).collect::<Vec<_>>();
                shell::argv(&text.join("\n"))
            }
            Agent::Exec(p) => p.argv(
                self.command.as_deref(),
                self.model.as_deref(),
                mode,
                &exec::messages_prompt(self.role_prompt.as_deref(), batch),
            ),
        };
        self.invocation(argv).run_captured(pane)
    }

    /// Whether each message is its own unit (`shell`: one command each).
    pub fn one_message_per_run(&self) -> bool {
        matches!(self.agent, Agent::Shell | Agent::Claude)
    }
}

/// An argv for humans: each element quoted only when it needs to be,
/// long ones cut.
pub fn shown_argv(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            let a: String = if a.chars().count() > 80 {
                let mut s: String = a.chars().take(77).collect();
                s.push('…');
                s
            } else {
                a.clone()
            };
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=@%+:,".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''").replace('\n', "\\n"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_parse_and_unknown_ones_are_refused_with_the_list() {
        assert_eq!(Agent::from_name(None).unwrap(), Agent::Shell);
        assert_eq!(
            Agent::from_name(Some("claude-print")).unwrap(),
            Agent::Exec(Preset::ClaudePrint)
        );
        let err = Agent::from_name(Some("gpt")).unwrap_err().to_string();
        assert!(
            err.contains("\"gpt\"") && err.contains("shell, claude"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_cli_is_a_clear_error() {
        assert!(check_available("shell", None).is_ok());
        let bogus = vec!["/nonexistent/claude".to_string()];
        let err = check_available("claude", Some(&bogus))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "/nonexistent/claude is not installed (not found on PATH); install Claude Code or pick --agent shell"
        );
        let sh = vec!["sh".to_string()];
        assert!(check_available("command", Some(&sh)).is_ok());
        assert!(check_available("command", None).is_err());
    }
}
