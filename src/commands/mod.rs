//! What each command does. `run` resolves the state root, the team and the
//! acting member once, then hands off to one module per command group.
//!
//! A command returns [`Exit::Ok`] or [`Exit::No`] ("ran fine, the answer is
//! no": nothing to claim, no such task, team not found by `status`); any
//! error becomes exit code 2 in `main`.

mod inbox;
mod lifecycle;
mod send;
mod status;
mod task;
mod team;

use crate::cli::{Cli, Command, Global};
use crate::paths::{Root, RootSource};
use crate::team::{Team, list_teams, names};
use anyhow::{Result, bail};

/// How a command that did not fail ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Exit {
    Ok,
    /// Exit code 1, with this line on stderr.
    No(String),
}

/// Everything a command needs to know about where and who.
pub struct Context {
    pub global: Global,
    pub root: Root,
    pub root_source: RootSource,
}

impl Context {
    pub fn from_global(global: Global) -> Result<Self> {
        let (root, root_source) = Root::resolve(
            global.home.as_deref(),
            std::env::var("CLAUDE_CONFIG_DIR").ok().as_deref(),
            std::env::home_dir().as_deref(),
        )?;
        Ok(Context {
            global,
            root,
            root_source,
        })
    }

    /// The team named by `--team`/`SWARM_TEAM`, else the only team there is.
    pub fn team_name(&self) -> Result<String> {
        if let Some(t) = self.global.team.as_deref().filter(|t| !t.is_empty()) {
            return Ok(t.to_string());
        }
        let teams = list_teams(&self.root)?;
        match teams.as_slice() {
            [one] => Ok(one.clone()),
            [] => bail!(
                "no team under {}: create one with `swarm team create NAME` (or `swarm up`)",
                self.root.dir().display()
            ),
            many => bail!(
                "several teams under {}; pick one with --team NAME or SWARM_TEAM (teams: {})",
                self.root.dir().display(),
                many.join(", ")
            ),
        }
    }

    pub fn team(&self) -> Result<Team> {
        Ok(Team::new(&self.root, &self.team_name()?))
    }

    /// The acting member (`--as` / `SWARM_AGENT_NAME`).
    pub fn me(&self) -> Result<&str> {
        let me = self.global.as_name.as_str();
        if me != names::LEAD_NAME {
            names::validate_member(me).map_err(|e| anyhow::anyhow!("--as: {e}"))?;
        }
        Ok(me)
    }
}

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    let ctx = Context::from_global(cli.global)?;
    match cli.command {
        Command::Team(cmd) => team::run(&ctx, cmd),
        Command::Status(args) => status::run(&ctx, args),
        Command::Send(args) => send::run(&ctx, args),
        Command::Inbox(args) => inbox::run(&ctx, args),
        Command::Task(cmd) => task::run(&ctx, cmd),
        Command::Teammate(args) => crate::teammate::run(&ctx, args),
        Command::PaneExec(args) => crate::lead::spawn::pane_exec(args),
        other => lifecycle::run(&ctx, other),
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("plain data serializes")
    );
}
