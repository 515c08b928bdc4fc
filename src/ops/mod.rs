//! Every team verb, once (DESIGN §11): the operations the front ends (the
//! CLI in `commands/`, the TeamsDialog through `lead::control`, `swarm
//! mcp`) call, each returning a typed result that the front end renders
//! (a text line, JSON, a notice, MCP content). No front end reads the
//! roster to finish a verb's job.
//!
//! - [`spawn`]: adding a teammate (roster entry, first prompt, pane).
//! - [`depart`]: leaving the team, one path for kill, shutdown, prune,
//!   down and a shutdown approved through the lead: the pane closed, the
//!   member off the roster, its tasks back on the board, its worktree
//!   retired.
//! - [`recover`]: what an interrupted `up` or `spawn`, or a rebuilt
//!   roster, left: marked panes adopted or closed.

pub mod depart;
pub mod recover;
pub mod spawn;
