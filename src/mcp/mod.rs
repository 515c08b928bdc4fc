//! `swarm mcp`: the team's verbs served to an AI agent over the Model
//! Context Protocol, on stdio (DESIGN §12), built on `rmcp`. One team, one
//! acting member (its `--as`), for the life of the connection.
//!
//! A front end like the CLI, and as thin: each tool (`tools.rs`) parses its
//! arguments (`args.rs`), calls one verb of [`TeamOps`] and renders its
//! typed result as JSON text. A verb's refusal (an unknown member, a
//! hostile name, a missing task, a team swarm did not start) is a tool
//! result marked `isError` carrying the line the CLI would print, and the
//! server goes on answering: no call ends it, and a call that panics is
//! one failed call (`Server::call`).
//!
//! Every verb runs on a blocking thread of its own, so a wait (an inbox, a
//! shutdown's answer, a lock) never holds up the protocol: other calls are
//! answered meanwhile, and a cancelled call's verb finishes on its thread.
//! The longest wait is [`crate::ops::mail::MAX_WAIT`] (50 s), under the
//! ~60 s after which MCP clients give up on a call.

mod args;
mod tools;

pub use tools::TOOLS;

use crate::ops::TeamOps;
use anyhow::{Context as _, Result};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool_handler};
use serde_json::Value;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// The server: the team's verbs as one member acts on them, and the
/// directory new teammates work in (the server's own, as for `swarm spawn`).
#[derive(Clone)]
pub struct Server {
    ops: Arc<TeamOps>,
    cwd: PathBuf,
    tool_router: ToolRouter<Server>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("ops", &self.ops)
            .field("cwd", &self.cwd)
            .finish_non_exhaustive()
    }
}

impl Server {
    pub fn new(ops: TeamOps, cwd: PathBuf) -> Server {
        Server {
            ops: Arc::new(ops),
            cwd,
            tool_router: Server::tool_router(),
        }
    }

    /// Serves MCP on `input`/`output` (the process's stdin and stdout)
    /// until the client closes its side.
    pub async fn serve<R, W>(self, input: R, output: W) -> Result<()>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let running = ServiceExt::serve(self, (input, output))
            .await
            .context("starting the MCP session")?;
        let reason = running.waiting().await.context("the MCP session failed")?;
        tracing::info!(?reason, "MCP session ended");
        Ok(())
    }

    /// Runs one call of `tool`: `work` on a blocking thread of its own
    /// (with the team's verbs and the server's directory), its result as
    /// text (JSON, or a plain sentence), its error as the CLI's one line
    /// marked `isError`. A panic in it fails this call only.
    async fn call<F, Fut>(&self, tool: &'static str, work: F) -> CallToolResult
    where
        F: FnOnce(Arc<TeamOps>, PathBuf) -> Fut + Send + 'static,
        Fut: Future<Output = Result<Value>>,
    {
        let (ops, cwd) = (self.ops.clone(), self.cwd.clone());
        let handle = tokio::runtime::Handle::current();
        let done = tokio::task::spawn_blocking(move || handle.block_on(work(ops, cwd))).await;
        match done {
            Ok(Ok(value)) => {
                tracing::info!(tool, "done");
                CallToolResult::success(vec![ContentBlock::text(render(&value))])
            }
            Ok(Err(e)) => {
                let line = format!("{e:#}");
                tracing::info!(tool, error = %line, "refused");
                failure(&line)
            }
            Err(e) => {
                tracing::error!(tool, error = %e, "the call panicked");
                failure(&format!(
                    "{tool} failed inside swarm ({e}); see the server's log"
                ))
            }
        }
    }
}

/// A result as the tool's text: a sentence as it is, anything else as JSON.
fn render(value: &Value) -> String {
    match value {
        Value::String(s) => crate::text::escape_line(s).into_owned(),
        other => other.to_string(),
    }
}

/// A failed call: the one line the CLI prints after `swarm: `, control
/// characters shown, never obeyed (it echoes names and text from outside).
fn failure(line: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(
        crate::text::escape_line(line).into_owned(),
    )])
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("swarm", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "The tools of swarm team {team:?}, used as its member {me:?}: team_status shows \
             the team; send_message, read_inbox and wait_for_messages carry mail; the task_* \
             tools work the shared task board; spawn_teammate, shutdown_teammate, \
             kill_teammate and teammate_output manage teammates; answer_request answers a \
             teammate's plan or permission request.",
            team = self.ops.team().name,
            me = self.ops.me()
        ));
        info
    }
}
