//! `swarm up | down | spawn | kill | shutdown | prune | output | attach |
//! doctor | lead`: the pane lifecycle, over [`crate::lead`].

use super::{Context, Exit};
use crate::cli::Command;
use anyhow::{Result, bail};

pub fn run(_ctx: &Context, cmd: Command) -> Result<Exit> {
    bail!("{cmd:?}: the pane lifecycle is being built")
}
