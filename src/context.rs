//! Where and as whom a command runs ([`Context`]: the state root, the
//! team, the acting member) and how one that did not fail ended ([`Exit`]).
//! A leaf: the commands, the lead and the teammate runtime all take it, so
//! none of them needs another's module.

use crate::cli::Global;
use crate::names;
use crate::paths::{Root, RootSource};
use crate::team::{Ownership, Team, list_teams};
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

    /// The team named by `--team`/`SWARM_TEAM`, else the only team swarm
    /// started there. A team swarm did not start (Claude Code's, under the
    /// same root) is never picked without its name: it is named, and the
    /// user asked for `--team`.
    pub fn team_name(&self) -> Result<String> {
        if let Some(t) = self.global.team.as_deref().filter(|t| !t.is_empty()) {
            return Ok(t.to_string());
        }
        let (teams, foreign): (Vec<String>, Vec<String>) = list_teams(&self.root)?
            .into_iter()
            .partition(|t| Ownership::of(&self.root, t).is_swarm());
        match teams.as_slice() {
            [one] => Ok(one.clone()),
            [] if !foreign.is_empty() => bail!(
                "no team swarm started under {}; {} not swarm's (Claude Code's?): name it with \
                 --team to read it or send to it",
                self.root.dir().display(),
                match foreign.as_slice() {
                    [one] => format!("team {} is", names::shown(one)),
                    many => format!(
                        "teams {} are",
                        many.iter()
                            .map(|t| names::shown(t))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }
            ),
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
