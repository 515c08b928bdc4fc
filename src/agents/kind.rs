//! The names swarm gives a member's agent and its permission mode: the
//! [`Agent`] enum (with `process`, a plain program as teammate) and
//! [`PermissionMode`] (Claude Code's names and the dialog's cycle order).
//! Each list is the enum itself; every name list shown to a user, every
//! parse and every check is derived from it. A leaf: it knows no member,
//! roster or file, so the roster's typed view can name these kinds.

use super::exec::Preset;
use anyhow::{Result, bail};

/// The kind of agent a member runs (the roster's `swarmAgent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// `shell` (the default): a task's command, or a message, runs with `sh -c`.
    Shell,
    /// `codex`, `gemini`, `aider`, `claude-print`, `command`: one
    /// non-interactive run per unit of work.
    Exec(Preset),
    /// `claude`: real Claude Code in teammate mode, supervised.
    Claude,
    /// `process`: the pane runs the member's command itself (`swarm spawn
    /// NAME -- CMD`, or a spec teammate with a command and no agent); no
    /// runtime, the program reads its inbox if it wants to.
    Process,
}

impl Agent {
    /// Every agent, in the order help texts list them.
    pub const ALL: [Agent; 8] = [
        Agent::Shell,
        Agent::Claude,
        Agent::Exec(Preset::Codex),
        Agent::Exec(Preset::Gemini),
        Agent::Exec(Preset::Aider),
        Agent::Exec(Preset::ClaudePrint),
        Agent::Exec(Preset::Command),
        Agent::Process,
    ];

    /// `name` as a member's agent; `""` is `shell`, as an absent one is.
    pub fn parse(name: &str) -> Result<Agent> {
        if name.is_empty() {
            return Ok(Agent::Shell);
        }
        match Agent::ALL.into_iter().find(|a| a.name() == name) {
            Some(a) => Ok(a),
            None => bail!(
                "unknown agent {:?}; pick one of {}",
                crate::text::escape_line(name),
                Agent::names()
            ),
        }
    }

    /// `None` (no `swarmAgent`) is `shell`.
    pub fn from_name(name: Option<&str>) -> Result<Agent> {
        Agent::parse(name.unwrap_or(""))
    }

    /// The agent when a spawn or a spec names none: the command as the
    /// teammate's program when one is given, else `shell`.
    pub fn unnamed(has_command: bool) -> Agent {
        if has_command {
            Agent::Process
        } else {
            Agent::Shell
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Agent::Shell => "shell",
            Agent::Claude => "claude",
            Agent::Exec(p) => p.name(),
            Agent::Process => "process",
        }
    }

    /// Every name, for messages: `shell, claude, …`.
    pub fn names() -> String {
        Agent::ALL.map(Agent::name).join(", ")
    }

    /// Whether it cannot run without the member's command (`command`,
    /// `process`).
    pub fn needs_command(self) -> bool {
        matches!(self, Agent::Exec(Preset::Command) | Agent::Process)
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A permission mode, by Claude Code's names (the roster's `mode`,
/// `swarm spawn --mode`, the spec's `mode`, a `mode_set_request`). Claude
/// Code 2.1.332 shows `default` as "manual" and takes either; swarm writes
/// `default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionMode {
    Default,
    AcceptEdits,
    Plan,
    BypassPermissions,
    DontAsk,
    Auto,
}

impl PermissionMode {
    /// Every mode, in the order messages list them.
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
        PermissionMode::DontAsk,
        PermissionMode::Auto,
    ];

    /// The modes the dialog's mode key steps through, in order (Claude
    /// Code's Shift+Tab cycle).
    pub const CYCLE: [PermissionMode; 4] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Auto => "auto",
        }
    }

    /// `mode` by name; `manual` is `default`.
    pub fn parse(mode: &str) -> Result<PermissionMode> {
        let mode = if mode == "manual" { "default" } else { mode };
        match PermissionMode::ALL.into_iter().find(|m| m.name() == mode) {
            Some(m) => Ok(m),
            None => bail!(
                "unknown permission mode {:?}; pick one of {}",
                crate::text::escape_line(mode),
                PermissionMode::ALL.map(PermissionMode::name).join(", ")
            ),
        }
    }

    /// The mode after `current` in [`CYCLE`](Self::CYCLE); an unknown or
    /// absent mode counts as `default`.
    pub fn next(current: Option<&str>) -> PermissionMode {
        let current = current.and_then(|c| PermissionMode::parse(c).ok());
        let i = PermissionMode::CYCLE
            .iter()
            .position(|m| Some(*m) == current)
            .unwrap_or(0);
        PermissionMode::CYCLE[(i + 1) % PermissionMode::CYCLE.len()]
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_parses_by_its_own_name_and_unknown_ones_list_them_all() {
        for a in Agent::ALL {
            assert_eq!(Agent::parse(a.name()).unwrap(), a);
        }
        assert_eq!(Agent::from_name(None).unwrap(), Agent::Shell);
        assert_eq!(Agent::parse("process").unwrap(), Agent::Process);
        let err = Agent::parse("gpt").unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown agent \"gpt\"; pick one of shell, claude, codex, gemini, aider, claude-print, command, process"
        );
    }

    #[test]
    fn modes_are_claude_codes_names_and_manual_is_default() {
        for m in PermissionMode::ALL {
            assert_eq!(PermissionMode::parse(m.name()).unwrap(), m);
        }
        assert_eq!(
            PermissionMode::parse("manual").unwrap(),
            PermissionMode::Default
        );
        let err = PermissionMode::parse("yolo").unwrap_err().to_string();
        assert!(
            err.contains("\"yolo\"") && err.contains("bypassPermissions, dontAsk, auto"),
            "{err}"
        );
    }

    /// The command line's help names them by hand (clap doc comments):
    /// every name must be there.
    #[test]
    fn the_help_names_every_agent_and_mode() {
        use clap::CommandFactory;
        let mut cli = crate::cli::Cli::command();
        let help = |cli: &mut clap::Command, sub: &str| {
            let sub = cli.find_subcommand_mut(sub).expect("a subcommand");
            sub.render_long_help().to_string()
        };
        let spawn = help(&mut cli, "spawn");
        let send = help(&mut cli, "send");
        for a in Agent::ALL {
            assert!(spawn.contains(a.name()), "spawn --help lacks {a}:\n{spawn}");
        }
        for m in PermissionMode::ALL {
            assert!(spawn.contains(m.name()), "spawn --help lacks {m}:\n{spawn}");
            assert!(send.contains(m.name()), "send --help lacks {m}:\n{send}");
        }
    }

    #[test]
    fn the_mode_key_cycles_in_claude_codes_order() {
        let next = |m: Option<&str>| PermissionMode::next(m).name();
        assert_eq!(next(None), "acceptEdits");
        assert_eq!(next(Some("default")), "acceptEdits");
        assert_eq!(next(Some("manual")), "acceptEdits");
        assert_eq!(next(Some("acceptEdits")), "plan");
        assert_eq!(next(Some("plan")), "bypassPermissions");
        assert_eq!(next(Some("bypassPermissions")), "default");
        assert_eq!(next(Some("weird")), "acceptEdits");
        // Modes outside the cycle count as default, as an unknown one does.
        assert_eq!(next(Some("dontAsk")), "acceptEdits");
    }
}
