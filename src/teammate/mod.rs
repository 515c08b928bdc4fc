//! The teammate runtime: the first process in every teammate pane.

use crate::cli::TeammateArgs;
use crate::commands::{Context, Exit};
use anyhow::{Result, bail};

/// Runs the runtime for one member until it shuts down.
pub fn run(_ctx: &Context, args: TeammateArgs) -> Result<Exit> {
    bail!("teammate runtime for {:?} is being built", args.name)
}
