//! What each command does. `run` resolves the state root, the team and the
//! acting member once, then hands off to one module per command group.
//!
//! A command returns [`Exit::Ok`] or [`Exit::No`] ("ran fine, the answer is
//! no": nothing to claim, no such task, team not found by `status`); any
//! error becomes exit code 2 in `main`.

mod attach;
mod diff;
mod doctor;
mod inbox;
mod lifecycle;
mod merge;
mod output;
mod send;
mod spawn;
mod status;
mod task;
mod team;

use crate::cli::{Cli, Command};
use anyhow::Result;

pub use crate::context::{Context, Exit};

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    let ctx = Context::from_global(cli.global)?;
    match cli.command {
        Command::Team(cmd) => team::run(&ctx, cmd),
        Command::Status(args) => status::run(&ctx, args),
        Command::Send(args) => send::run(&ctx, args),
        Command::Inbox(args) => inbox::run(&ctx, args),
        Command::Task(cmd) => task::run(&ctx, cmd),
        Command::Diff(args) => diff::run(&ctx, args),
        Command::Merge(args) => merge::run(&ctx, args),
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
