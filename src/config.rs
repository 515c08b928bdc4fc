//! The team spec, `swarm.toml`: the team's name, its backend, its
//! teammates and its initial tasks; and the embedded demo spec.
//!
//! ```toml
//! team = "demo"
//! backend = "auto"            # optional: auto, tmux, iterm2, windows-terminal, in-process
//! worktree = false            # optional: every teammate in a git worktree of its own
//!
//! [[teammate]]
//! name = "alice"              # required; ^[a-z0-9][a-z0-9-]{0,63}$
//! agent = "shell"             # optional: shell (default), claude, codex, gemini, aider, claude-print, command,
//!                             # process (the default when `command` is given: the command is the program)
//! prompt = "You count lines." # optional role prompt (an agent's; a shell teammate takes none)
//! model = "o3"                # optional
//! color = "blue"              # optional palette colour
//! cwd = "src"                 # optional, relative to the spec's directory
//! plan_mode_required = false  # optional
//! mode = "acceptEdits"        # optional permission mode at launch (default: "default")
//! command = ["prog", "arg"]   # optional: argv prefix (required for agent = "command")
//! env = { K = "V" }           # optional: variables written for the teammate (kept in the roster)
//! pass_env = ["K"]            # optional: variables passed by name from the environment of
//!                             # whoever opens the pane (`swarm up`); never written anywhere
//! worktree = true             # optional: this teammate in a git worktree (default: the team's)
//! host = "local"              # optional: the [[host]] it runs on (default: local, this machine)
//!
//! [lead]                      # optional: a coding agent leads the team (DESIGN §12)
//! agent = "claude"            # required: claude, codex or gemini (or command, with `command`)
//! prompt = "Ship the parser"  # optional: its first turn, at once
//! mode = "team"               # optional: team (it works too) or coordinator (it only delegates)
//! model = "opus"              # optional
//! approves = false            # optional: teammates' plan and permission requests go to it
//! command = ["prog", "arg"]   # only for agent = "command": the exec contract's program
//!
//! [[host]]                    # optional: another machine (DESIGN §13; `swarm doctor --host NAME`)
//! name = "box"                # required; like a teammate's name; "local" is this machine
//! ssh = "me@box"              # required: any destination `ssh` takes (~/.ssh/config honoured)
//! root = "/mnt/team"          # required: where this state root is mounted on that host
//! swarm = "/opt/bin/swarm"    # optional: its swarm binary (default: `swarm` on its PATH)
//! timeout = 10                # optional: seconds one call to it may take, connecting included
//! unreachable_grace = 300     # optional: seconds it may not answer before its teammates' tasks go back
//! poll = 1                    # optional: seconds between a runtime's own looks there (it is also rung over ssh)
//!
//! [[task]]
//! subject = "count lines"     # required
//! description = "..."         # optional
//! command = "wc -l *.rs"      # optional: what a shell teammate runs (metadata.command)
//! blocked_by = [1]            # optional: 1-based indices of tasks in this file
//! ```
//!
//! Unknown keys are refused with their name. [`TeamSpec::apply`] creates
//! the tasks only on an empty task list, so running `swarm up` again never
//! duplicates them.

use crate::agents::{Agent, PermissionMode};
use crate::cli::BackendChoice;
use crate::names;
use crate::tasks::{NewTask, Status, Task};
use crate::team::{Member, SwarmField, Team, colors};
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A parsed and validated `swarm.toml`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    pub team: String,
    #[serde(default)]
    pub backend: Option<String>,
    /// Every teammate works in a git worktree of its own (see `worktree`).
    #[serde(default)]
    pub worktree: bool,
    #[serde(default, rename = "teammate")]
    pub teammates: Vec<TeammateSpec>,
    #[serde(default, rename = "task")]
    pub tasks: Vec<TaskSpec>,
    /// Other machines (`[[host]]`).
    #[serde(default, rename = "host")]
    pub hosts: Vec<HostSpec>,
    /// A coding agent that leads the team (`[lead]`).
    #[serde(default)]
    pub lead: Option<LeadSpec>,
    /// Seconds a teammate running a task may print nothing, its task
    /// unchanged, before the TeamsDialog and `swarm status` call it
    /// stalled (default 120). Nothing is killed for it.
    #[serde(default)]
    pub stall_after: Option<u64>,
    /// The lead sends a stalled teammate one reminder per task (an agent
    /// that reads words: never a shell teammate, which would run it).
    #[serde(default)]
    pub nudge: bool,
    /// The directory relative `cwd`s are resolved against (the spec file's
    /// directory; the current directory for a spec from a string).
    #[serde(skip)]
    pub dir: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TeammateSpec {
    pub name: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub color: Option<String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub plan_mode_required: bool,
    /// Permission mode at launch (see `agents::PermissionMode`).
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub command: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables passed by name from the environment of the process that
    /// opens the pane (see `pane_env`).
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// A git worktree of its own (`None`: the team's `worktree`).
    #[serde(default)]
    pub worktree: Option<bool>,
    /// The `[[host]]` it runs on (`None` or `"local"`: this machine).
    #[serde(default)]
    pub host: Option<String>,
}

pub use crate::hosts::HostSpec;

/// `[lead]`: the team's AI lead (or `swarm up --lead AGENT`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeadSpec {
    /// `claude`, `codex` or `gemini` (or `command`, with `command`).
    pub agent: String,
    /// Its first turn, started at once.
    #[serde(default)]
    pub prompt: Option<String>,
    /// `team` (the default) or `coordinator`.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Teammates' plan and permission requests go to it.
    #[serde(default)]
    pub approves: bool,
    /// For `agent = "command"`: the program of the exec contract.
    #[serde(default)]
    pub command: Option<Vec<String>>,
}

impl LeadSpec {
    /// The agents an AI lead can be.
    pub const AGENTS: [&str; 4] = ["claude", "codex", "gemini", "command"];

    /// The exec agent it runs as: Claude Code's print mode, Codex, Gemini
    /// CLI, or any program of the exec contract.
    pub fn agent(&self) -> Result<Agent> {
        use crate::agents::exec::Preset;
        Ok(match self.agent.as_str() {
            "claude" => Agent::Exec(Preset::ClaudePrint),
            "codex" => Agent::Exec(Preset::Codex),
            "gemini" => Agent::Exec(Preset::Gemini),
            "command" => Agent::Exec(Preset::Command),
            other => bail!(
                "an AI lead is claude, codex or gemini, not {:?}",
                crate::text::escape_line(other)
            ),
        })
    }

    pub fn mode(&self) -> Result<crate::team::LeadMode> {
        match &self.mode {
            None => Ok(crate::team::LeadMode::Team),
            Some(m) => crate::team::LeadMode::parse(m).map_err(anyhow::Error::msg),
        }
    }

    /// Checks its agent, mode and command.
    pub fn validate(&self) -> Result<()> {
        let agent = self.agent()?;
        self.mode()?;
        match (&self.command, agent.needs_command()) {
            (None, true) => bail!("agent \"command\" needs command = [\"prog\", …]"),
            (Some(c), true) if c.is_empty() || c[0].is_empty() => {
                bail!("command must name a program")
            }
            (Some(_), false) => bail!(
                "command is for agent = \"command\"; {} runs its own CLI",
                self.agent
            ),
            _ => Ok(()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    pub subject: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub blocked_by: Vec<usize>,
}

/// What [`TeamSpec::apply`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// The tasks were created (in the spec's order where dependencies allow).
    Created(Vec<Task>),
    /// The task list already had this many tasks; nothing was created.
    AlreadyHadTasks(usize),
}

impl TeamSpec {
    /// Reads and validates a spec file.
    pub fn load(path: &Path) -> Result<TeamSpec> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the team spec {}", path.display()))?;
        let mut spec = Self::parse(&text).with_context(|| format!("in {}", path.display()))?;
        spec.dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(spec)
    }

    /// Parses and validates a spec; relative `cwd`s resolve against `.`.
    #[allow(
        clippy::should_implement_trait,
        reason = "returns anyhow, with validation"
    )]
    pub fn from_str(text: &str) -> Result<TeamSpec> {
        Self::parse(text)
    }

    fn parse(text: &str) -> Result<TeamSpec> {
        let mut spec: TeamSpec =
            toml::from_str(text).map_err(|e| anyhow::anyhow!(toml_error(text, &e)))?;
        spec.dir = PathBuf::from(".");
        spec.validate()?;
        Ok(spec)
    }

    /// The spec's `backend`, parsed as `--backend` is (`None` when unset).
    pub fn backend_choice(&self) -> Result<Option<BackendChoice>> {
        let Some(b) = &self.backend else {
            return Ok(None);
        };
        match b.parse() {
            Ok(c) => Ok(Some(c)),
            Err(e) => bail!("{}", crate::text::escape_line(&e)),
        }
    }

    /// Checks names, agents, colours, commands and task dependencies, and
    /// names every problem found, not only the first (one fix per run of
    /// `swarm up` was a slow way to learn a spec).
    pub fn validate(&self) -> Result<()> {
        let problems = self.problems();
        match problems.as_slice() {
            [] => Ok(()),
            [one] => bail!("{one}"),
            all => bail!("{} problems: {}", all.len(), all.join("; ")),
        }
    }

    /// The `[[host]]` named `name`.
    pub fn host(&self, name: &str) -> Option<&HostSpec> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// The names of the hosts a teammate may name, `local` first.
    pub fn host_names(&self) -> String {
        let mut names: Vec<&str> = vec![swarm_backends::host::LOCAL];
        names.extend(self.hosts.iter().map(|h| h.name.as_str()));
        names.join(", ")
    }

    /// Every problem of the spec, in the order of the file, one line each.
    fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                out.push(format!("{e:#}"));
            }
        };
        note(names::validate_team(&self.team).map_err(|e| anyhow::anyhow!("team: {e}")));
        note(self.backend_choice().map(|_| ()));
        if let Some(lead) = &self.lead {
            note(lead.validate().context("[lead]"));
        }
        let mut hosts = BTreeSet::new();
        for (i, h) in self.hosts.iter().enumerate() {
            let at = format!("host {} ({:?})", i + 1, h.name);
            out.extend(h.problems(&at));
            if !hosts.insert(h.name.to_ascii_lowercase()) {
                out.push(format!("{at}: the name {:?} is used twice", h.name));
            }
        }
        let mut note = |r: Result<()>| {
            if let Err(e) = r {
                out.push(format!("{e:#}"));
            }
        };
        let mut seen = BTreeSet::new();
        for (i, t) in self.teammates.iter().enumerate() {
            let at = format!("teammate {} ({:?})", i + 1, t.name);
            if let Some(h) = t.host.as_deref()
                && h != swarm_backends::host::LOCAL
                && self.host(h).is_none()
            {
                note(Err(anyhow::anyhow!(
                    "{at}: host {:?} is not a [[host]] of this spec (hosts: {})",
                    h,
                    self.host_names()
                )));
            }
            note(names::validate_member(&t.name).map_err(|e| anyhow::anyhow!("{at}: {e}")));
            if !seen.insert(t.name.to_ascii_lowercase()) {
                note(Err(anyhow::anyhow!(
                    "{at}: the name {:?} is used twice",
                    t.name
                )));
            }
            if self.lead.is_some() && t.name == names::AI_LEAD_NAME {
                note(Err(anyhow::anyhow!(
                    "{at}: {:?} is the AI lead's name in a team with [lead]; pick another",
                    t.name
                )));
            }
            if let Some(c) = &t.color
                && !colors::is_palette(c)
            {
                note(Err(anyhow::anyhow!(
                    "{at}: colour {c:?} is not one of {}",
                    colors::PALETTE.join(", ")
                )));
            }
            if let Some(m) = &t.mode {
                note(
                    PermissionMode::parse(m)
                        .map(|_| ())
                        .with_context(|| at.clone()),
                );
            }
            for k in t.env.keys().chain(&t.pass_env) {
                note(crate::pane_env::check_name(k).with_context(|| format!("{at}: env")));
            }
            let agent = match t.agent() {
                Ok(a) => a,
                Err(e) => {
                    note(Err(e).with_context(|| at.clone()));
                    continue;
                }
            };
            match &t.command {
                Some(c) if c.is_empty() || c[0].is_empty() => {
                    note(Err(anyhow::anyhow!("{at}: command must name a program")));
                }
                None if agent.needs_command() => note(Err(anyhow::anyhow!(
                    "{at}: agent {:?} needs command = [\"prog\", \"args\", …]",
                    agent.name()
                ))),
                Some(_) if agent == Agent::Shell => note(Err(anyhow::anyhow!(
                    "{at}: the shell agent runs the tasks' commands and takes no command; \
                     leave `agent` out to run the command as the teammate's program"
                ))),
                _ => {}
            }
            // Issue 24, item 10: a role prompt for a shell teammate was
            // silently ignored (and `spawn --prompt` runs its text).
            if agent == Agent::Shell && t.prompt.is_some() {
                note(Err(anyhow::anyhow!(
                    "{at}: a shell teammate takes no prompt: it runs commands, never words; \
                     give its work as a [[task]] with command = \"…\", or pick an agent \
                     (claude, codex, gemini, …) to give it a prompt"
                )));
            }
        }
        let n = self.tasks.len();
        let mut dependencies_read = true;
        for (i, t) in self.tasks.iter().enumerate() {
            let at = format!("task {} ({:?})", i + 1, t.subject);
            if t.subject.trim().is_empty() {
                note(Err(anyhow::anyhow!("task {}: subject is empty", i + 1)));
            }
            for &b in &t.blocked_by {
                if b == 0 || b > n {
                    dependencies_read = false;
                    note(Err(anyhow::anyhow!(
                        "{at}: blocked_by {b} is out of range (tasks are numbered 1 to {n})"
                    )));
                } else if b == i + 1 {
                    dependencies_read = false;
                    note(Err(anyhow::anyhow!(
                        "{at}: a task cannot be blocked by itself"
                    )));
                }
            }
        }
        // A cycle is looked for only among dependencies that all name
        // another task of the file.
        if dependencies_read {
            note(self.creation_order().map(|_| ()));
        }
        out
    }

    /// Task indices (0-based) in an order where every blocker comes first,
    /// the spec's order wherever dependencies allow; a cycle is an error.
    fn creation_order(&self) -> Result<Vec<usize>> {
        let n = self.tasks.len();
        let mut done = vec![false; n];
        let mut order = Vec::with_capacity(n);
        while order.len() < n {
            let next =
                (0..n).find(|&i| !done[i] && self.tasks[i].blocked_by.iter().all(|&b| done[b - 1]));
            match next {
                Some(i) => {
                    done[i] = true;
                    order.push(i);
                }
                None => {
                    let stuck: Vec<String> = (0..n)
                        .filter(|&i| !done[i])
                        .map(|i| (i + 1).to_string())
                        .collect();
                    bail!(
                        "tasks {} block each other in a cycle (blocked_by)",
                        stuck.join(", ")
                    );
                }
            }
        }
        Ok(order)
    }

    /// Creates the spec's tasks on `team`'s empty task list (blockers
    /// first, `blocked_by` indices mapped to the real ids, `command` in
    /// `metadata.command`). A list that already has tasks is left alone.
    pub fn apply(&self, team: &Team) -> Result<Applied> {
        let store = team.tasks();
        let existing = store.list()?.tasks.len();
        if existing > 0 {
            return Ok(Applied::AlreadyHadTasks(existing));
        }
        self.create_tasks(team)
    }

    /// As [`TeamSpec::apply`], but a board whose every task is completed
    /// is cleared first (ids are never reused), so the spec's tasks run
    /// again: what `swarm up --demo` does on a finished demo. A board with
    /// work still open is left alone.
    pub fn apply_again(&self, team: &Team) -> Result<Applied> {
        let store = team.tasks();
        let tasks = store.list()?.tasks;
        if tasks.iter().any(|t| t.status != Status::Completed) {
            return Ok(Applied::AlreadyHadTasks(tasks.len()));
        }
        for t in &tasks {
            store
                .delete(&t.id)
                .with_context(|| format!("clearing finished task {}", t.id))?;
        }
        self.create_tasks(team)
    }

    fn create_tasks(&self, team: &Team) -> Result<Applied> {
        let store = team.tasks();
        let mut ids: Vec<Option<String>> = vec![None; self.tasks.len()];
        let mut created = Vec::new();
        for i in self.creation_order()? {
            let t = &self.tasks[i];
            let metadata = t.command.as_ref().map(|c| {
                let mut m = Map::new();
                m.insert("command".into(), Value::String(c.clone()));
                m
            });
            let blocked_by = t
                .blocked_by
                .iter()
                .map(|&b| ids[b - 1].clone().expect("blockers are created first"))
                .collect();
            let task = store
                .create(NewTask {
                    subject: t.subject.clone(),
                    description: t.description.clone(),
                    active_form: None,
                    blocked_by,
                    metadata,
                })
                .with_context(|| format!("creating task {:?}", t.subject))?;
            ids[i] = Some(task.id.clone());
            created.push(task);
        }
        Ok(Applied::Created(created))
    }
}

/// A TOML error as one line: where (line and column, from the error's
/// span) and what. toml's own text draws the line with a caret over
/// several lines, which an error line (escaped for the terminal) would show
/// as literal `\n`s.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
            format!("invalid team spec at line {line}, column {column}: {message}")
        }
        None => format!("invalid team spec: {message}"),
    }
}

impl TeammateSpec {
    /// The agent it names; none named: its command as its program
    /// (`process`, as `swarm spawn NAME -- CMD`) when it has one, else `shell`.
    pub fn agent(&self) -> Result<Agent> {
        match &self.agent {
            Some(a) => Agent::parse(a),
            None => Ok(Agent::unnamed(self.command.is_some())),
        }
    }

    /// The roster entry for this teammate, the `index`-th (0-based) of the
    /// team (for the default colour), with a relative `cwd` resolved
    /// against `dir`. Its pane does not exist yet (`tmuxPaneId` is `""`).
    pub fn member(&self, team: &str, index: usize, dir: &Path) -> Member {
        let color = self
            .color
            .clone()
            .unwrap_or_else(|| colors::for_teammate(index).to_string());
        let cwd = match &self.cwd {
            Some(c) => dir.join(c),
            None => dir.to_path_buf(),
        };
        let mut m = Member::teammate(team, &self.name, &color, &cwd.to_string_lossy());
        m.model = self.model.clone();
        m.prompt = self.prompt.clone();
        m.plan_mode_required = Some(self.plan_mode_required);
        m.mode = self
            .mode
            .as_deref()
            .map(|x| match PermissionMode::parse(x) {
                Ok(mode) => mode.name().to_string(),
                Err(_) => x.to_string(),
            });
        let agent = match self.agent() {
            Ok(a) => json!(a.name()),
            Err(_) => json!(self.agent),
        };
        m.set_swarm_field(SwarmField::Agent, agent);
        if let Some(c) = &self.command {
            m.set_swarm_field(SwarmField::Command, json!(c));
        }
        if !self.env.is_empty() {
            m.set_swarm_field(SwarmField::Env, json!(self.env));
        }
        if !self.pass_env.is_empty() {
            m.set_swarm_field(SwarmField::PassEnv, json!(self.pass_env));
        }
        if let Some(h) = self
            .host
            .as_deref()
            .filter(|h| *h != swarm_backends::host::LOCAL)
        {
            m.set_swarm_field(SwarmField::Host, json!(h));
        }
        m
    }
}

/// The embedded demo (`swarm up --demo`): three shell teammates and ten
/// small real tasks over the current directory, using only POSIX tools.
/// Results go to `$SWARM_SCRATCHPAD/demo/`; the last task summarises them
/// and sends the summary to the lead.
pub const DEMO_SPEC: &str = include_str!("config/demo.toml");

impl TeamSpec {
    /// The demo spec, its teammates working in `cwd`.
    pub fn demo(cwd: &Path) -> TeamSpec {
        let mut spec = TeamSpec::from_str(DEMO_SPEC).expect("the embedded demo spec is valid");
        spec.dir = cwd.to_path_buf();
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_spec_parses() {
        let spec = TeamSpec::from_str(
            r#"
            team = "web"
            backend = "tmux"
            [[teammate]]
            name = "alice"
            agent = "codex"
            prompt = "You write tests."
            model = "o3"
            color = "green"
            cwd = "sub"
            plan_mode_required = true
            mode = "acceptEdits"
            command = ["codex", "exec"]
            env = { FOO = "bar" }
            pass_env = ["OPENAI_ORG_ID"]
            [[teammate]]
            name = "bob"
            [[task]]
            subject = "a"
            command = "true"
            [[task]]
            subject = "b"
            blocked_by = [1]
            "#,
        )
        .unwrap();
        assert_eq!(spec.teammates.len(), 2);
        assert_eq!(spec.tasks[1].blocked_by, vec![1]);
        let m = spec.teammates[0].member("web", 0, Path::new("/p"));
        assert_eq!(m.cwd.as_deref(), Some("/p/sub"));
        assert_eq!(m.agent(), Some("codex"));
        assert_eq!(m.color.as_deref(), Some("green"));
        assert_eq!(m.plan_mode_required, Some(true));
        assert_eq!(m.swarm_field(SwarmField::Env), Some(&json!({"FOO": "bar"})));
        assert_eq!(m.mode.as_deref(), Some("acceptEdits"));
        assert_eq!(
            m.swarm_field(SwarmField::PassEnv),
            Some(&json!(["OPENAI_ORG_ID"]))
        );
        let b = spec.teammates[1].member("web", 1, Path::new("/p"));
        assert_eq!(b.agent(), Some("shell"));
        assert_eq!(b.color.as_deref(), Some(colors::for_teammate(1)));
    }

    #[test]
    fn apply_again_runs_a_finished_board_again_and_leaves_open_work_alone() {
        let t = tempfile::tempdir().unwrap();
        let root = crate::paths::Root::new(t.path());
        crate::team::Roster::new(&root, "d")
            .create(None, "/w")
            .unwrap();
        let team = Team::new(&root, "d");
        let spec = TeamSpec::from_str(
            "team = \"d\"\n[[task]]\nsubject = \"a\"\n[[task]]\nsubject = \"b\"\nblocked_by = [1]\n",
        )
        .unwrap();
        spec.apply(&team).unwrap();
        let done = |id: &str| {
            let upd = crate::tasks::TaskUpdate {
                status: Some(Status::Completed),
                ..Default::default()
            };
            team.tasks().update(id, upd, "x").unwrap();
        };
        done("1");
        assert_eq!(
            spec.apply_again(&team).unwrap(),
            Applied::AlreadyHadTasks(2)
        );
        done("2");
        let Applied::Created(again) = spec.apply_again(&team).unwrap() else {
            panic!("a finished board runs again");
        };
        let ids: Vec<&str> = again.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["3", "4"], "new ids");
        assert_eq!(again[1].blocked_by, ["3"]);
        assert_eq!(
            team.tasks().list().unwrap().tasks.len(),
            2,
            "the old ones are gone"
        );
    }

    #[test]
    fn a_toml_error_is_one_line_with_its_place() {
        let e = err("team = \"x\"\n[[teammate]]\nname = \"a\"\nbogus = 1\n");
        assert!(!e.contains('\n'), "one line: {e}");
        assert!(
            e.starts_with("invalid team spec at line 4, column 1: unknown field `bogus`"),
            "{e}"
        );
        let e = err("team = \"x\"\nname = = 2\n");
        assert!(!e.contains('\n') && e.contains("line 2"), "{e}");
    }

    fn err(text: &str) -> String {
        format!("{:#}", TeamSpec::from_str(text).unwrap_err())
    }

    #[test]
    fn a_command_without_an_agent_is_the_teammates_program() {
        let spec = TeamSpec::from_str(
            "team = \"t\"\n[[teammate]]\nname = \"a\"\ncommand = [\"sleep\", \"9\"]\n\
             [[teammate]]\nname = \"b\"\nagent = \"process\"\ncommand = [\"top\"]\n",
        )
        .unwrap();
        let a = spec.teammates[0].member("t", 0, Path::new("/p"));
        assert_eq!(a.agent(), Some("process"));
        assert_eq!(
            a.swarm_field(SwarmField::Command),
            Some(&json!(["sleep", "9"]))
        );
        let b = spec.teammates[1].member("t", 1, Path::new("/p"));
        assert_eq!(b.agent(), Some("process"));
        let e = err("team = \"t\"\n[[teammate]]\nname = \"a\"\nagent = \"process\"\n");
        assert!(e.contains("agent \"process\" needs command"), "{e}");
        let e =
            err("team = \"t\"\n[[teammate]]\nname = \"a\"\nagent = \"shell\"\ncommand = [\"x\"]\n");
        assert!(
            e.contains("shell agent") && e.contains("takes no command"),
            "{e}"
        );
    }

    #[test]
    fn unknown_keys_are_refused_with_their_name() {
        let e = err("team = \"t\"\ncolour = \"red\"\n");
        assert!(e.contains("unknown field `colour`"), "{e}");
        let e = err("team = \"t\"\n[[teammate]]\nname = \"a\"\nagnet = \"shell\"\n");
        assert!(e.contains("unknown field `agnet`"), "{e}");
        let e = err("team = \"t\"\n[[task]]\nsubject = \"a\"\nblockedBy = [1]\n");
        assert!(e.contains("unknown field `blockedBy`"), "{e}");
    }

    #[test]
    fn bad_names_duplicates_and_dependencies_are_clear_errors() {
        assert!(err("team = \"Web\"").contains("team"));
        let dup = "team = \"t\"\n[[teammate]]\nname = \"a\"\n[[teammate]]\nname = \"a\"\n";
        assert!(err(dup).contains("used twice"), "{}", err(dup));
        let lead = "team = \"t\"\n[[teammate]]\nname = \"team-lead\"\n";
        assert!(err(lead).contains("teammate 1"), "{}", err(lead));
        let agent = "team = \"t\"\n[[teammate]]\nname = \"a\"\nagent = \"gpt\"\n";
        assert!(
            err(agent).contains("unknown agent \"gpt\""),
            "{}",
            err(agent)
        );
        let cmd = "team = \"t\"\n[[teammate]]\nname = \"a\"\nagent = \"command\"\n";
        assert!(err(cmd).contains("needs command"), "{}", err(cmd));
        let mode = "team = \"t\"\n[[teammate]]\nname = \"a\"\nmode = \"yolo\"\n";
        assert!(
            err(mode).contains("unknown permission mode"),
            "{}",
            err(mode)
        );
        let env = "team = \"t\"\n[[teammate]]\nname = \"a\"\npass_env = [\"A-B\"]\n";
        assert!(err(env).contains("not a variable name"), "{}", err(env));
        let id = "team = \"t\"\n[[teammate]]\nname = \"a\"\nenv = { SWARM_TEAM = \"x\" }\n";
        assert!(err(id).contains("set by swarm"), "{}", err(id));
        let range = "team = \"t\"\n[[task]]\nsubject = \"a\"\nblocked_by = [2]\n";
        assert!(err(range).contains("out of range"), "{}", err(range));
        let me = "team = \"t\"\n[[task]]\nsubject = \"a\"\nblocked_by = [1]\n";
        assert!(err(me).contains("by itself"), "{}", err(me));
        let cycle = "team = \"t\"\n[[task]]\nsubject = \"a\"\nblocked_by = [2]\n\
                     [[task]]\nsubject = \"b\"\nblocked_by = [1]\n";
        assert!(err(cycle).contains("cycle"), "{}", err(cycle));
    }

    /// Issue 24, item 10: a spec with several problems named only the
    /// first, so each `swarm up` taught one more.
    #[test]
    fn a_spec_with_several_problems_names_every_one() {
        let e = err("team = \"Web\"\n\
             [[teammate]]\nname = \"a\"\nagent = \"gpt\"\n\
             [[teammate]]\nname = \"a\"\ncolor = \"mauve\"\nmode = \"yolo\"\n\
             [[task]]\nsubject = \" \"\nblocked_by = [3]\n");
        for problem in [
            "team:",
            "unknown agent \"gpt\"",
            "used twice",
            "colour \"mauve\"",
            "unknown permission mode",
            "task 1: subject is empty",
            "blocked_by 3 is out of range",
        ] {
            assert!(e.contains(problem), "{problem:?} is not named in: {e}");
        }
        assert!(e.starts_with("7 problems: "), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    /// Issue 24, item 10: a spec's `prompt` for a shell teammate was
    /// silently ignored; it is refused by name (an agent's is kept).
    #[test]
    fn a_prompt_for_a_shell_teammate_is_refused_by_name() {
        let e = err("team = \"w\"\n[[teammate]]\nname = \"sh\"\nprompt = \"count lines\"\n");
        assert!(
            e.contains("teammate 1 (\"sh\"): a shell teammate takes no prompt"),
            "{e}"
        );
        TeamSpec::from_str("team = \"w\"\n[[teammate]]\nname = \"cx\"\nagent = \"codex\"\nprompt = \"count lines\"\n")
            .expect("an agent's prompt");
        TeamSpec::from_str(DEMO_SPEC).expect("the demo spec is valid");
    }

    #[test]
    fn apply_maps_indices_to_ids_and_never_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::paths::Root::new(dir.path());
        let team = Team::new(&root, "t");
        team.roster().create(None, "/").unwrap();
        // Task 1 is blocked by task 2, written later: 2 is created first.
        let spec = TeamSpec::from_str(
            "team = \"t\"\n[[task]]\nsubject = \"late\"\nblocked_by = [2]\n\
             [[task]]\nsubject = \"early\"\ncommand = \"echo hi\"\n",
        )
        .unwrap();
        let Applied::Created(tasks) = spec.apply(&team).unwrap() else {
            panic!("expected tasks to be created")
        };
        assert_eq!(tasks[0].subject, "early");
        assert_eq!(tasks[1].subject, "late");
        assert_eq!(tasks[1].blocked_by, vec![tasks[0].id.clone()]);
        assert_eq!(
            tasks[0].metadata.as_ref().unwrap()["command"],
            json!("echo hi")
        );
        assert_eq!(spec.apply(&team).unwrap(), Applied::AlreadyHadTasks(2));
        assert_eq!(team.tasks().list().unwrap().tasks.len(), 2);
    }

    #[test]
    fn the_demo_is_valid_three_shell_teammates_and_about_ten_tasks() {
        let spec = TeamSpec::demo(Path::new("/somewhere"));
        assert_eq!(spec.team, "demo");
        assert_eq!(spec.teammates.len(), 3);
        assert!(
            spec.teammates
                .iter()
                .all(|t| t.agent.as_deref() == Some("shell"))
        );
        assert!((8..=12).contains(&spec.tasks.len()));
        let last = spec.tasks.last().unwrap();
        assert!(last.blocked_by.len() >= 2);
        assert!(
            last.command
                .as_deref()
                .unwrap()
                .contains("swarm send --to team-lead")
        );
        assert_eq!(
            spec.teammates[0]
                .member("demo", 0, &spec.dir)
                .cwd
                .as_deref(),
            Some("/somewhere")
        );
    }

    #[test]
    fn a_specs_backend_is_one_of_the_backend_kinds_or_auto() {
        use clap::ValueEnum;
        let spec = |b: &str| TeamSpec::parse(&format!("team = \"t\"\nbackend = \"{b}\"\n"));
        let kind = |b: &str| spec(b).unwrap().backend_choice().unwrap().unwrap();
        assert_eq!(kind("auto"), BackendChoice::Auto);
        // Every kind the backends crate has is a choice, by its roster name.
        for k in swarm_backends::BackendKind::ALL {
            assert_eq!(kind(k.as_str()), BackendChoice::Kind(k));
            assert!(BackendChoice::value_variants().contains(&BackendChoice::Kind(k)));
        }
        let err = spec("screen").unwrap_err().to_string();
        assert_eq!(
            err,
            "backend \"screen\" is unknown; pick one of auto, tmux, iterm2, windows-terminal, in-process"
        );
    }
}
