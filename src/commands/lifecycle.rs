//! The dispatch of the commands that open the team's backend (`up` and
//! `lead` in `up.rs`, `down`, `kill`/`shutdown`/`prune` in `leave.rs`,
//! `spawn`, `output`, `attach`, `doctor`: one file each), on one tokio
//! runtime. What they share is in `open.rs` (the team and its backend) and
//! `crate::text` (outside text made safe for the terminal or a shell).

use super::{Context, Exit};
use crate::cli::Command;
use crate::lead::run_lead;
use crate::session;
use anyhow::{Result, bail};

pub fn run(ctx: &Context, cmd: Command) -> Result<Exit> {
    let rt = session::runtime()?;
    let next = match cmd {
        Command::Up(args) => rt.block_on(super::up::up(ctx, args))?,
        Command::Lead(args) => rt.block_on(super::up::lead(ctx, args.backend))?,
        other => return run_other(ctx, &rt, other),
    };
    match next {
        super::up::Next::Done(exit) => Ok(exit),
        super::up::Next::RunLead(lead) => {
            run_lead(*lead, &rt)?;
            Ok(Exit::Ok)
        }
    }
}

fn run_other(ctx: &Context, rt: &tokio::runtime::Runtime, cmd: Command) -> Result<Exit> {
    match cmd {
        Command::Down(args) => rt.block_on(super::down::down(ctx, args)),
        Command::Spawn(args) => rt.block_on(super::spawn::spawn(ctx, args)),
        Command::Kill(args) => rt.block_on(super::leave::kill(ctx, args)),
        Command::Shutdown(args) => rt.block_on(super::leave::shutdown(ctx, args)),
        Command::Prune(args) => rt.block_on(super::leave::prune(ctx, args)),
        Command::Output(args) => super::output::output(ctx, args),
        Command::Attach(args) => rt.block_on(super::attach::attach(ctx, args)),
        Command::Doctor(args) => rt.block_on(super::doctor::doctor(ctx, args)),
        other => bail!("{other:?} is not a lifecycle command"),
    }
}
