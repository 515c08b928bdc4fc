//! `swarm mcp`: [`crate::mcp`]'s server on this process's stdin and
//! stdout, for the team `--team` names and the member `--as` names, until
//! the client closes stdin.
//!
//! Stdout is the protocol and nothing else: the server writes to a
//! descriptor of its own for it, and descriptor 1 becomes stderr
//! ([`protocol_stdout`]), so no stray print, of this process or of a child
//! it starts, can reach the client as a broken message. The log goes to
//! `<state>/logs/mcp-<member>.log` when the team's state exists.

use super::{Context, Exit};
use crate::cli::McpArgs;
use crate::mcp::Server;
use crate::ops::TeamOps;
use anyhow::{Context as _, Result};
use std::time::Duration;

pub(super) fn run(ctx: &Context, args: McpArgs) -> Result<Exit> {
    let team = ctx.team_name()?;
    let me = ctx.me()?.to_string();
    log_to_file(ctx, &team, &me);
    let location = super::open::location(ctx, &team, &args.backend);
    let mut ops = TeamOps::new(location, &me);
    // The AI lead's server (its launch says so) acts as team-lead, under
    // the rules of an AI lead (see TeamOps::for_ai_lead).
    let ai_lead = std::env::var(crate::agents::exec::AI_LEAD_VAR).is_ok_and(|v| v == "1");
    if ai_lead && me == crate::names::LEAD_NAME {
        ops = ops.for_ai_lead();
    }
    let server = Server::new(ops, std::env::current_dir()?);
    let out = protocol_stdout()?;
    tracing::info!(team, me, "MCP server starting");
    let rt = crate::session::runtime()?;
    let served = rt.block_on(server.serve(tokio::io::stdin(), tokio::fs::File::from_std(out)));
    // A verb still running on its thread (a wait the client gave up on)
    // does not hold the process once the client has gone.
    rt.shutdown_timeout(Duration::from_secs(1));
    served.map(|()| Exit::Ok)
}

/// Logs to `<state>/logs/mcp-<member>.log`, if the team's state directory
/// is there (a misspelt team gets no directory made for it; its calls fail
/// with the CLI's "not found" line).
fn log_to_file(ctx: &Context, team: &str, me: &str) {
    let file = (|| -> Result<Option<std::path::PathBuf>> {
        if !ctx.root.state_dir(team)?.is_dir() {
            return Ok(None);
        }
        let stem = crate::names::member_file_stem(me)?;
        Ok(Some(
            ctx.root.logs_dir(team)?.join(format!("mcp-{stem}.log")),
        ))
    })();
    if let Some(Some(file)) = crate::dropped::ignore(file, "naming the MCP server's log") {
        crate::dropped::ignore(
            crate::logging::init_file(&file),
            "opening the MCP server's log",
        );
    }
}

/// A descriptor of this process's stdout for the protocol alone (not
/// inherited by children), with descriptor 1 turned into stderr.
fn protocol_stdout() -> Result<std::fs::File> {
    use std::os::fd::AsFd;
    let out = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .context("duplicating stdout for the MCP protocol")?;
    // SAFETY: dup2 on descriptors 2 and 1, which the process holds; it
    // swaps what descriptor 1 refers to in one step. Rust's stdout handle
    // writes to descriptor 1 by number and has written nothing yet.
    if unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) } < 0 {
        // Stdout stays the protocol's and the process's both: no worse
        // than a server without this guard.
        tracing::warn!(
            error = %std::io::Error::last_os_error(),
            "cannot point descriptor 1 at stderr"
        );
    }
    Ok(std::fs::File::from(out))
}
