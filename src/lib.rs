//! swarm: run a team of coding agents in terminal panes, coordinated only
//! through files in Claude Code's agent-team formats.
//!
//! # Layout
//!
//! - [`paths`]: the on-disk layout under the state root; the only code that
//!   builds paths.
//! - [`atomic_file`]: temp + fsync + rename writes, private modes, quarantine
//!   of corrupt files, and the lock-directory + OS-lock protocol.
//! - [`json_text`]: JSON bytes as Claude Code writes and reads them.
//! - [`names`]: team and member names: the rules, the sanitisers that make
//!   a name a path component, and how a hostile one is shown.
//! - [`clock`]: epoch milliseconds and ISO timestamps.
//! - [`text`]: outside text escaped for a terminal (control and bidi
//!   characters shown, never obeyed).
//! - [`cli`]: the command line (clap derive, parsing only).
//! - [`commands`]: what each command does; [`logging`]: tracing setup and
//!   the panic hook of every process; [`dropped`]: `ignore` for an error
//!   dropped on purpose (a leaf, so the file layer uses it too);
//!   [`context`]: where and as whom a command runs, and how it ended.
//! - [`session`]: the team's pane backend and its session record
//!   (`session.json`, one writer), opened from a plain location.
//! - [`hosts`]: the team's other machines: a spec's `[[host]]`, the team's
//!   record of them, the ssh handle of one (DESIGN §13).
//! - [`lead`]: the lead process, spawn and teardown.
//! - [`pane_env`]: the exact environment of every process swarm starts in
//!   a pane (one builder for teammates, their agents and the lead).
//! - [`team`]: names, colours, the roster (`config.json`) and the typed
//!   view of swarm's own fields in it, member status.
//! - [`mailbox`]: inboxes: append (group-committed under contention), read,
//!   consume by identity, history, follow; the lead's signatures on them.
//! - [`protocol`]: typed structured messages carried in inbox entries.
//! - [`tasks`]: the shared task list: ids, claims, dependencies, the
//!   board index that keeps listing 10,000 tasks cheap, and the view
//!   (`tasks::view`) that reads it in place for `status` and `task list`.
//! - [`teammate`]: the runtime in every teammate pane.
//! - [`agents`]: the agent kinds and permission modes (one enum each), shell,
//!   exec presets and Claude Code: how work reaches a CLI.
//! - [`config`]: the team spec (`swarm.toml`) and the embedded demo.
//! - [`tui`]: the lead's TeamsDialog: snapshot, pure view, keymap, terminal
//!   guard, event loop.
//! - [`mcp`]: `swarm mcp`, the team's verbs served to an AI agent over MCP
//!   (rmcp, stdio): a thin front end over [`ops`].
//! - [`worktree`]: a git worktree per teammate: made at spawn, its progress
//!   against the lead's branch, diff, merge, kept or saved when it leaves.
//!
//! The design lives in `DESIGN.md` of the project's shared folder; the
//! byte-level formats in its `reference/claude-code-teams.md`.

pub mod agents;
pub mod atomic_file;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod context;
pub mod dropped;
pub mod hosts;
pub mod json_text;
pub mod lead;
pub mod logging;
pub mod mailbox;
pub mod mcp;
pub mod names;
pub mod ops;
pub mod pane_env;
pub mod paths;
pub mod protocol;
pub mod session;
pub mod tasks;
pub mod team;
pub mod teammate;
pub mod text;
pub mod tui;
pub mod worktree;
