//! Agents: how a unit of work (a task, or a batch of messages) reaches a
//! CLI. A member's `swarmAgent` picks one:
//!
//! - `shell` (the default): [`shell`]; a task's command, or a message, runs
//!   with `sh -c`.
//! - `codex`, `gemini`, `aider`, `claude-print`, `command`: [`exec`]; one
//!   non-interactive run per unit; the prompt is the last argument when it
//!   fits, else on stdin or in a file as each CLI reads one (`command`:
//!   always stdin and `$SWARM_PROMPT_FILE`).
//! - `claude`: [`claude`]; real Claude Code in teammate mode, supervised.
//! - `process`: no runtime; the pane runs the member's command itself.
//!
//! [`kind`] names them ([`Agent`]) and the permission modes
//! ([`PermissionMode`]); [`process`] runs the processes. The lead keys
//! Claude Code teammates verify are signed mailbox entries: they live in
//! [`crate::mailbox::signing`].

pub mod claude;
pub mod exec;
pub mod kind;
pub mod process;
pub mod session;
pub mod shell;

pub use claude::{ClaudeLaunch, claude_launch, write_initial_prompt};
pub use exec::{Delivery, Preset};
pub use kind::{Agent, PermissionMode};
pub use process::{Ended, Finished, Invocation};

use crate::mailbox::Entry;
use crate::tasks::Task;
use crate::team::Member;
use anyhow::{Result, bail};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

impl Agent {
    /// The member's `swarmAgent` (absent: `shell`); a value that names no
    /// agent is the roster's one field error.
    pub fn of(member: &Member) -> Result<Agent, crate::team::FieldError> {
        use crate::team::SwarmField;
        let Some(v) = member.swarm_field(SwarmField::Agent) else {
            return Ok(Agent::Shell);
        };
        v.as_str()
            .and_then(|name| Agent::parse(name).ok())
            .ok_or_else(|| {
                let expected = format!("one of {}", Agent::names());
                crate::team::FieldError::new(member, SwarmField::Agent, &expected, v)
            })
    }
}

/// What a `mode_set_request` does to a member that is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModeChange {
    /// The runtime records it (roster `mode`) and its agent's next run uses
    /// it (shell: no effect on commands; exec presets: their flags).
    NextRun,
    /// It reaches the member's own program, which decides (a `process`
    /// teammate: any program may read its inbox).
    ItsProgramDecides,
    /// Nothing will apply it; the reason says why and what to do instead.
    Unsupported(String),
}

/// Whether a `mode_set_request` can change `member`'s mode while it runs.
///
/// Claude Code 2.1.332 drops `mode_set_request` from its inbox ("permission
/// mode changes are never accepted from the inbox", in its inbox poller and
/// its in-process runner alike), and offers no other way in from outside its
/// pane: its mode is the `--permission-mode` it started with, then whatever
/// the user picks with Shift+Tab in its own pane. A plain program
/// (`process`) gets the request in its inbox and may or may not act on it.
pub fn mode_change(member: &Member) -> ModeChange {
    match Agent::of(member) {
        Ok(Agent::Claude) => ModeChange::Unsupported(format!(
            "{} runs Claude Code, which ignores mode changes sent to its inbox; \
             press Shift+Tab in its pane, or restart it in the mode you want \
             (`swarm kill {}` then `swarm spawn {} --agent claude --mode MODE`)",
            member.name, member.name, member.name
        )),
        Ok(Agent::Process) => ModeChange::ItsProgramDecides,
        Ok(_) => ModeChange::NextRun,
        Err(e) => ModeChange::Unsupported(format!("{e:#}")),
    }
}

/// The member's `swarmCommand` (an array of strings), if any.
pub fn member_command(member: &Member) -> Result<Option<Vec<String>>> {
    Ok(member.command()?)
}

/// Checks that `agent`'s program can be found before a pane is created for
/// it, so a missing CLI is a clear error at spawn, not a dead pane.
/// `command` is the member's command override (required for `command`).
/// A `process` member's program is checked when it starts (`pane-exec`),
/// where a relative path means the pane's cwd.
pub fn check_available(agent: Agent, command: Option<&[String]>) -> Result<()> {
    let program = match (agent, command.and_then(|c| c.first())) {
        (Agent::Shell | Agent::Process, _) => return Ok(()),
        (_, Some(p)) => p.clone(),
        (Agent::Claude, None) => "claude".to_string(),
        (Agent::Exec(Preset::Command), None) => {
            bail!(
                "agent \"command\" needs a command: `swarm spawn NAME --agent command -- PROG ARGS…` or `command = [...]` in swarm.toml"
            )
        }
        (Agent::Exec(p), None) => p.default_prefix()[0].to_string(),
    };
    if which::which(&program).is_ok() {
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

/// Everything needed to run units of work for one member.
#[derive(Debug, Clone)]
pub struct Runner {
    pub agent: Agent,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub command: Option<Vec<String>>,
    pub model: Option<String>,
    pub role_prompt: Option<String>,
    /// Where an exec preset's prompt is written when argv does not carry
    /// it (one run at a time, so one file per member).
    pub prompt_file: PathBuf,
    /// Where the member's session is recorded ([`session::Store::of`]).
    pub session: session::Store,
    /// The member is the team's AI lead, leading this way: its MCP server
    /// acts as the team's lead, and a coordinator has no tools of its own.
    pub lead: Option<crate::team::LeadMode>,
}

/// What a shell teammate says of a task that carries no command.
const NO_COMMAND: &str = "carries no command (metadata.command): nothing to run";

/// Where a run's output goes live: the pane.
pub type Pane = Arc<Mutex<dyn Write + Send>>;

impl Runner {
    fn invocation(&self, argv: Vec<String>) -> Invocation {
        Invocation {
            argv,
            cwd: self.cwd.clone(),
            env: self.env.clone(),
            stdin: None,
        }
    }

    /// Which tasks this member claims: a shell teammate only those that
    /// carry a command (it runs nothing else), every other agent any.
    pub fn takes(&self) -> crate::tasks::Takes {
        match self.agent {
            Agent::Shell => crate::tasks::Takes::Commands,
            _ => crate::tasks::Takes::Any,
        }
    }

    /// What a task will run, shown in a plan approval request and the pane.
    pub fn task_plan(&self, task: &Task, mode: Option<&str>) -> String {
        match self.agent {
            Agent::Shell | Agent::Process => {
                shell::task_command(task).unwrap_or(NO_COMMAND).to_string()
            }
            Agent::Claude => match shell::task_command(task) {
                Some(c) => shown_argv(&shell::argv(c)),
                None => NO_COMMAND.to_string(),
            },
            Agent::Exec(p) => {
                let turn = self.turn(p);
                let prompt = exec::task_prompt(self.preamble(p, &turn).as_deref(), task);
                let launch = self.launch(p, mode, &prompt, p.delivery(&prompt), &turn);
                let shown = shown_argv(&launch.argv);
                match launch.delivery {
                    Delivery::Argv => shown,
                    Delivery::Stdin => format!("{shown} < PROMPT ({} bytes)", prompt.len()),
                    Delivery::File => format!("{shown}  (PROMPT: {} bytes)", prompt.len()),
                }
            }
        }
    }

    /// Runs a task. A task without a command never reaches a shell
    /// teammate (it does not claim one); if one does, it is not run.
    /// `started` is called once the agent's process runs (again for a
    /// second process of the same run: see [`Runner::run_messages`]).
    pub fn run_task(
        &self,
        task: &Task,
        mode: Option<&str>,
        pane: Pane,
        started: &mut dyn FnMut(),
    ) -> Finished {
        match self.agent {
            Agent::Shell | Agent::Claude | Agent::Process => match shell::task_command(task) {
                Some(c) => self
                    .invocation(shell::argv(c))
                    .run_captured_then(pane, started),
                None => Finished {
                    ended: Ended::NotStarted {
                        why: format!("task {} {NO_COMMAND}", task.id),
                        errno: None,
                    },
                    output: String::new(),
                    output_truncated: false,
                    stdout: String::new(),
                    stdout_truncated: false,
                    elapsed: std::time::Duration::ZERO,
                },
            },
            Agent::Exec(p) => {
                let prompt = |pre: Option<&str>| exec::task_prompt(pre, task);
                self.run_exec(p, mode, prompt, pane, started)
            }
        }
    }

    /// Runs one batch of messages: for `shell` the batch must be one message
    /// (its text is the command); exec presets get them all in one prompt.
    /// `started` is called once the agent's process runs: again if a
    /// preset's first process could not take the prompt in its argv and a
    /// second one runs.
    pub fn run_messages(
        &self,
        batch: &[Entry],
        mode: Option<&str>,
        pane: Pane,
        started: &mut dyn FnMut(),
    ) -> Finished {
        match self.agent {
            Agent::Shell | Agent::Claude | Agent::Process => {
                let text = batch.iter().map(|e| e.text.as_str()).collect::<Vec<_>>();
                self.invocation(shell::argv(&text.join("\n")))
                    .run_captured_then(pane, started)
            }
            Agent::Exec(p) => {
                let prompt = |pre: Option<&str>| exec::messages_prompt(pre, batch);
                self.run_exec(p, mode, prompt, pane, started)
            }
        }
    }

    fn launch(
        &self,
        p: Preset,
        mode: Option<&str>,
        prompt: &str,
        d: Delivery,
        turn: &exec::Turn,
    ) -> exec::Launch {
        let mut launch = p.launch(
            self.command.as_deref(),
            self.model.as_deref(),
            mode,
            prompt,
            d,
            &self.prompt_file,
            turn,
            self.team_server(p).as_ref(),
        );
        if self.lead == Some(crate::team::LeadMode::Coordinator) {
            exec::coordinator_only(p, &mut launch);
        }
        launch
    }

    /// swarm's MCP server for the member, when its CLI gets one
    /// ([`exec::TeamServer`]): `swarm mcp` as this very executable.
    fn team_server(&self, p: Preset) -> Option<exec::TeamServer> {
        if !p.gets_team_server() {
            return None;
        }
        let mut env = self.env.clone();
        // The user's own Gemini CLI home reaches the runtime passed by
        // name (the pane's environment), not in the member's list.
        if let Some(v) = std::env::var_os(exec::GEMINI_HOME_VAR) {
            env.insert(
                0,
                (
                    exec::GEMINI_HOME_VAR.to_string(),
                    v.to_string_lossy().into_owned(),
                ),
            );
        }
        // The AI lead acts on the team as its lead (its sends signed as the
        // lead's, its answers to requests the lead's).
        // It says so (SWARM_AI_LEAD): the human's answers to requests are
        // the lead's too, and only a spec's `approves` lets it give them.
        if self.lead.is_some() {
            env.push((
                "SWARM_AGENT_NAME".to_string(),
                crate::names::LEAD_NAME.to_string(),
            ));
            env.push((exec::AI_LEAD_VAR.to_string(), "1".to_string()));
        }
        exec::TeamServer::of(&swarm_exe(), &env)
    }

    /// Whether the next run starts or resumes the member's session (an
    /// unreadable record: a fresh one, logged).
    fn turn(&self, p: Preset) -> exec::Turn {
        self.session
            .next_turn(p, self.command.as_deref())
            .unwrap_or_else(|e| {
                tracing::warn!(error = %format!("{e:#}"), "no session to resume");
                exec::Turn::Fresh { id: None }
            })
    }

    /// What opens the prompt of a run that starts a session: the role
    /// prompt and, but for `command`, how to reach the team.
    fn preamble(&self, p: Preset, turn: &exec::Turn) -> Option<String> {
        if !turn.is_fresh() {
            return None;
        }
        let var = |k: &str| {
            self.env
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .map_or("", |(_, v)| v.as_str())
        };
        let role = self.role_prompt.as_deref();
        exec::opening(
            p,
            role,
            var("SWARM_AGENT_NAME"),
            var("SWARM_TEAM"),
            &swarm_exe(),
        )
    }

    /// One run of an exec preset, the whole prompt delivered: in argv when
    /// it fits, else through the prompt file; an exec refused as too long
    /// (`E2BIG`, argv and environment past `ARG_MAX`) is retried once with
    /// the prompt out of argv. The member's session is started or resumed
    /// and recorded ([`session`]).
    fn run_exec(
        &self,
        p: Preset,
        mode: Option<&str>,
        build: impl Fn(Option<&str>) -> String,
        pane: Pane,
        started: &mut dyn FnMut(),
    ) -> Finished {
        let turn = self.turn(p);
        let prompt = build(self.preamble(p, &turn).as_deref());
        if p == Preset::Gemini
            && let Some(server) = self.team_server(p)
            && let Err(e) = server.prepare_gemini_home()
        {
            // The run goes on; without its home Gemini CLI falls back on
            // the user's own (its shell still reaches the team).
            tracing::warn!(dir = %server.gemini_home.display(), error = %format!("{e:#}"), "cannot prepare Gemini CLI's home with swarm's MCP server");
        }
        let first = p.delivery(&prompt);
        let launch = self.launch(p, mode, &prompt, first, &turn);
        let mut f = self.run_launch(&launch, &prompt, pane.clone(), started);
        if first == Delivery::Argv && f.ended.is_too_big() {
            tracing::warn!(
                bytes = prompt.len(),
                "the command line was too long for exec; passing the prompt outside argv"
            );
            let second = self.launch(p, mode, &prompt, p.long_delivery(), &turn);
            f = self.run_launch(&second, &prompt, pane, started);
        }
        if let Err(e) = self
            .session
            .after_run(p, &turn, f.ended.success(), &f.output)
        {
            tracing::warn!(error = %format!("{e:#}"), "could not record the session");
        }
        if f.ended.success() && p.answers_on_stdout() {
            // The answer, without the CLI's progress (the pane shows both).
            f.output = std::mem::take(&mut f.stdout);
            f.output_truncated = f.stdout_truncated;
        }
        f
    }

    fn run_launch(
        &self,
        launch: &exec::Launch,
        prompt: &str,
        pane: Pane,
        started: &mut dyn FnMut(),
    ) -> Finished {
        let mut inv = self.invocation(launch.argv.clone());
        inv.env.extend(launch.env.iter().cloned());
        // Held until the run is over, then removed.
        let _file = match &launch.prompt_file {
            None => None,
            Some(path) => match exec::PromptFile::write(path, prompt) {
                Ok(f) => {
                    inv.env.push((
                        "SWARM_PROMPT_FILE".into(),
                        path.to_string_lossy().into_owned(),
                    ));
                    if launch.delivery == Delivery::Stdin {
                        inv.stdin = Some(path.clone());
                    }
                    Some(f)
                }
                Err(e) => {
                    let why = format!("writing the prompt file {}: {e}", path.display());
                    return Finished::not_started(why, e.raw_os_error(), Default::default());
                }
            },
        };
        inv.run_captured_then(pane, started)
    }

    /// Whether each message is its own unit (`shell`: one command each).
    pub fn one_message_per_run(&self) -> bool {
        matches!(self.agent, Agent::Shell | Agent::Claude | Agent::Process)
    }
}

/// This executable by absolute path, as an agent's shell or MCP client
/// starts it (a login shell may reset `PATH`).
fn swarm_exe() -> String {
    std::env::current_exe()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "swarm".into())
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
    use crate::team::SwarmField;

    #[test]
    fn a_members_agent_reads_from_its_field_and_a_bad_one_is_the_field_error() {
        let mut m = Member::teammate("t", "bob", "blue", "/");
        assert_eq!(Agent::of(&m).unwrap(), Agent::Shell);
        m.set_swarm_field(SwarmField::Agent, serde_json::json!("process"));
        assert_eq!(Agent::of(&m).unwrap(), Agent::Process);
        m.set_swarm_field(SwarmField::Agent, serde_json::json!("gpt"));
        assert_eq!(
            Agent::of(&m).unwrap_err().to_string(),
            "bob's swarmAgent is not one of shell, claude, codex, gemini, aider, claude-print, \
             command, process: \"gpt\""
        );
    }

    #[test]
    fn a_missing_cli_is_a_clear_error() {
        assert!(check_available(Agent::Shell, None).is_ok());
        let bogus = vec!["/nonexistent/claude".to_string()];
        let err = check_available(Agent::Claude, Some(&bogus))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "/nonexistent/claude is not installed (not found on PATH); install Claude Code or pick --agent shell"
        );
        let sh = vec!["sh".to_string()];
        assert!(check_available(Agent::Exec(Preset::Command), Some(&sh)).is_ok());
        assert!(check_available(Agent::Exec(Preset::Command), None).is_err());
    }

    #[test]
    fn a_bad_swarm_agent_is_named_not_taken_for_shell() {
        let mut m = Member::teammate("t", "bob", "blue", "/");
        m.set_swarm_field(SwarmField::Agent, serde_json::json!(["codex"]));
        let err = Agent::of(&m).unwrap_err().to_string();
        assert!(
            err.starts_with("bob's swarmAgent is not one of shell"),
            "{err}"
        );
        let ModeChange::Unsupported(why) = mode_change(&m) else {
            panic!("a bad agent is no mode change")
        };
        assert_eq!(why, err);
    }

    #[test]
    fn a_running_claude_teammate_cannot_change_mode_from_its_inbox() {
        let mut m = Member::teammate("t", "bob", "blue", "/");
        m.set_swarm_field(SwarmField::Agent, serde_json::json!("claude"));
        let ModeChange::Unsupported(why) = mode_change(&m) else {
            panic!("claude members cannot change mode at run time")
        };
        assert!(why.contains("Shift+Tab") && why.contains("--mode"), "{why}");
        m.set_swarm_field(SwarmField::Agent, serde_json::json!("codex"));
        assert_eq!(mode_change(&m), ModeChange::NextRun);
        // A program of its own gets the request; it decides.
        m.set_swarm_field(SwarmField::Agent, serde_json::json!("process"));
        assert_eq!(mode_change(&m), ModeChange::ItsProgramDecides);
    }
}
