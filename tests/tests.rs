//! One integration-test binary. Every test runs the real `swarm` binary
//! against a private state root ([`util::Sandbox`]); nothing touches the
//! developer's `~/.claude` or tmux server.

mod util;

mod ai_lead;
mod big_inbox;
mod cli_basics;
mod compat;
mod concurrency;
mod corruption;
mod crash;
mod demo;
mod foreign;
mod hosts;
mod inbox_append;
mod lifecycle;
mod live_ai_lead;
mod live_claude;
mod live_claude_lead;
mod live_exec;
mod mcp;
mod one_rule;
mod output_safety;
mod pane_safety;
mod regression;
mod resume;
mod runtime;
mod runtime_faults;
mod send_stdin;
mod spine;
mod state_safety;
mod tui_e2e;
mod wake;
mod worktrees;
