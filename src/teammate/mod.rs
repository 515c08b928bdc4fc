//! The teammate runtime: the first process in every teammate pane
//! (`swarm teammate --name N`, with `--team`/`SWARM_TEAM` and
//! `--home`/`SWARM_HOME`).
//!
//! It reads its member record, logs to `teammate-<name>.log` under the
//! team's state (never to the pane), ensures the team scratchpad, and builds
//! the agent's environment: `SWARM_HOME`, `SWARM_TEAM`, `SWARM_AGENT_NAME`,
//! `SWARM_AGENT_ID`, `SWARM_AGENT_COLOR`, `SWARM_SCRATCHPAD`, the member's
//! `swarmEnv`, and `PATH` with this `swarm` executable's directory first, so
//! `swarm send …` and `swarm task …` work from the agent with no flags.
//!
//! Then, for `claude`, it execs Claude Code in teammate mode and supervises
//! it (Claude Code reads its own inbox); for every other agent it runs the
//! work loop of `work`: wake on its doorbell ([`wake`]), pick the most
//! urgent unit, record it (`inflight`), run it through the agent, report,
//! go idle; outliving errors on the way (`trouble`).

mod claude;
mod dispatch;
mod inflight;
mod trouble;
pub mod wake;
mod work;

pub use wake::Wakeups;

use crate::agents::{self, Agent, Runner};
use crate::cli::TeammateArgs;
use crate::context::{Context, Exit};
use crate::names;
use crate::team::{Member, Team};
use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;

/// Runs the runtime for one member until it shuts down.
pub fn run(ctx: &Context, args: TeammateArgs) -> Result<Exit> {
    names::validate_member(&args.name).map_err(|e| anyhow::anyhow!("--name: {e}"))?;
    let team = ctx.team()?;
    let log = team.root.teammate_log(&team.name, &args.name)?;
    crate::logging::init_file(&log)
        .with_context(|| format!("opening the log file {}", log.display()))?;
    crate::logging::fault_point("the teammate runtime's start");
    let member = team
        .roster()
        .read()?
        .member(&args.name)
        .cloned()
        .with_context(|| {
            format!(
                "{:?} is not on the roster of team {:?}",
                args.name, team.name
            )
        })?;
    let agent = Agent::of(&member)?;
    if agent == Agent::Process {
        bail!(
            "{} runs its own program (agent \"process\"): it has no teammate runtime",
            member.name
        );
    }
    let scratch = team.root.scratchpad(&team.name)?;
    crate::atomic_file::ensure_dir(&scratch)
        .with_context(|| format!("creating the scratchpad {}", scratch.display()))?;
    let env = agent_env(&team, &member, &scratch)?;
    let cwd = member
        .cwd
        .as_deref()
        .filter(|c| !c.is_empty())
        .map(PathBuf::from);
    tracing::info!(member = %member.name, agent = agent.name(), "teammate runtime starting");

    if agent == Agent::Claude {
        return claude::supervise_claude(&team, &member, cwd, env);
    }
    let runner = Runner {
        agent,
        cwd,
        env,
        command: agents::member_command(&member)?,
        model: member.model.clone(),
        role_prompt: member.prompt.clone(),
        prompt_file: runtime_file(&team, &member.name, "prompt")?,
        session: agents::session::Store::of(&team, &member)?,
        lead: member.ai_lead()?.map(|l| l.mode),
    };
    let journal = inflight::Journal::new(runtime_file(&team, &member.name, "inflight.json")?);
    work::Runtime::new(team, member, runner, journal).run()
}

/// One of this member's runtime files, `<state>/runtime/<S2(name)>.<ext>`:
/// `prompt` (an exec preset's prompt for the run in progress) and
/// `inflight.json` (the unit of work in flight, see `work`).
///
/// The layout is `paths.rs`'s (`Root::runtime_file`).
fn runtime_file(team: &Team, name: &str, ext: &str) -> Result<PathBuf> {
    Ok(team.root.runtime_file(&team.name, name, ext)?)
}

/// The environment every agent process of `member` gets, on top of the
/// pane's own: the same as its pane's (see [`crate::pane_env`]).
pub fn agent_env(
    team: &Team,
    member: &Member,
    _scratch: &std::path::Path,
) -> Result<Vec<(String, String)>> {
    crate::pane_env::member(team, member)
}
