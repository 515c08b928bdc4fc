//! What each command does. `run` resolves the state root, the team and the
//! acting member once, then hands off to one module per command group.
//!
//! A command returns [`Exit::Ok`] or [`Exit::No`] ("ran fine, the answer is
//! no"); any error becomes exit code 2 in `main`.
//!
//! One rule for "not found", in every command: the team, task or member a
//! command names does not exist → exit 1, with the one wording of the typed
//! error (`team "x" not found under ROOT`, `no task 9 in team t`, `"x" is
//! not a member of team "t" (members: …)`). The command ran and the answer
//! is "there is no such thing", which a script wants to tell apart from a
//! failure (exit 2: a refusal, an I/O error, an id that is not a task id
//! at all, like `abc`) without parsing text: `swarm task get 9 || swarm
//! task create …`. A name is looked up as given: no member by that name is
//! exit 1 whatever the name looks like.

mod ask;
mod attach;
mod diff;
mod doctor;
mod down;
mod inbox;
mod leave;
mod lifecycle;
mod mcp;
mod merge;
mod open;
mod output;
mod ring;
mod send;
mod spawn;
mod status;
mod task;
mod team;
mod up;

use crate::cli::{Cli, Command};
use anyhow::Result;
use serde_json::json;

pub use crate::context::{Context, Exit};

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    let json = acts_in_json(&cli.command);
    let outcome = run_command(cli);
    if json {
        match &outcome {
            Err(e) => print_json(&envelope(false, json!({ "error": format!("{e:#}") }))),
            Ok(Exit::No(reason)) => print_json(&envelope(false, json!({ "reason": reason }))),
            Ok(Exit::Ok) => {}
        }
    }
    outcome
}

fn run_command(cli: Cli) -> Result<Exit> {
    let ctx = Context::from_global(cli.global)?;
    let outcome = match cli.command {
        Command::Team(cmd) => team::run(&ctx, cmd),
        Command::Status(args) => status::run(&ctx, args),
        Command::Send(args) => send::run(&ctx, args),
        Command::Inbox(args) => inbox::run(&ctx, args),
        Command::Ask(args) => ask::run(&ctx, args),
        Command::Task(cmd) => task::run(&ctx, cmd),
        Command::Diff(args) => diff::run(&ctx, args),
        Command::Merge(args) => merge::run(&ctx, args),
        Command::Ring(args) => ring::run(&ctx, args),
        // The long-lived processes keep their own exit codes.
        Command::Teammate(args) => return crate::teammate::run(&ctx, args),
        // `main` runs a pane's own runtime itself; here, for callers of
        // the library, the same.
        Command::PaneExec(args) => return crate::ops::spawn::pane_exec(args).and_then(run),
        Command::Mcp(args) => return mcp::run(&ctx, args),
        cmd @ (Command::Up(_) | Command::Lead(_)) => return lifecycle::run(&ctx, cmd),
        other => lifecycle::run(&ctx, other),
    };
    not_found_is_no(outcome)
}

/// The module rule: a named team, task or member that does not exist is
/// [`Exit::No`] (exit 1), whichever command looked it up.
fn not_found_is_no(outcome: Result<Exit>) -> Result<Exit> {
    match outcome {
        Err(e) if is_not_found(&e) => Ok(Exit::No(format!("{e:#}"))),
        other => other,
    }
}

fn is_not_found(e: &anyhow::Error) -> bool {
    use crate::tasks::TaskError;
    use crate::team::RosterError;
    e.chain().any(|c| {
        matches!(
            c.downcast_ref::<RosterError>(),
            Some(RosterError::NotFound { .. } | RosterError::NoSuchMember { .. })
        ) || matches!(
            c.downcast_ref::<TaskError>(),
            Some(TaskError::NotFound { .. })
        )
    })
}

/// The version of the `--json` envelope (README, "JSON output").
pub const SCHEMA: u64 = 1;

/// The one envelope of `--json` on a command that acts: `{"schema": 1,
/// "ok": …}` and the result's own fields. A failure is `"ok": false` with
/// `"error"` (exit 2) or `"reason"` (exit 1, "the answer is no").
pub fn envelope(ok: bool, fields: serde_json::Value) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    out.insert("schema".into(), SCHEMA.into());
    out.insert("ok".into(), ok.into());
    if let serde_json::Value::Object(f) = fields {
        out.extend(f);
    }
    serde_json::Value::Object(out)
}

/// Prints the envelope of a command that did what it was asked.
pub fn print_acted(fields: serde_json::Value) {
    print_json(&envelope(true, fields));
}

/// Whether the command acts and was asked for `--json`: its failures then
/// print the envelope too.
fn acts_in_json(cmd: &Command) -> bool {
    use crate::cli::{TaskCmd, TeamCmd};
    match cmd {
        Command::Up(a) => a.json,
        Command::Down(a) => a.json,
        Command::Spawn(a) => a.json,
        Command::Kill(a) => a.json,
        Command::Shutdown(a) => a.json,
        Command::Prune(a) => a.json,
        Command::Output(a) => a.json,
        Command::Diff(a) => a.json,
        Command::Merge(a) => a.json,
        Command::Send(a) => a.json,
        Command::Ask(a) => a.json,
        Command::Team(TeamCmd::Create { json, .. } | TeamCmd::Delete { json, .. }) => *json,
        Command::Task(
            TaskCmd::Create { json, .. }
            | TaskCmd::Delete { json, .. }
            | TaskCmd::Claim { json, .. },
        ) => *json,
        Command::Task(TaskCmd::Update(a)) => a.json,
        _ => false,
    }
}

/// Prints a value as pretty JSON on stdout.
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).expect("plain data serializes")
    );
}
