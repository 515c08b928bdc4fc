//! `swarm ring` (hidden): rings doorbells on this machine, for a sender on
//! the lead's machine that reached it over ssh (`ops::ring`, DESIGN §13).
//! `--probe` checks that a doorbell can be made and rung under the state
//! root here (what `swarm doctor --host` asks).

use super::Exit;
use crate::cli::RingArgs;
use crate::context::Context;
use crate::mailbox::doorbell::{self, Doorbell};
use anyhow::{Result, anyhow};
use std::time::Duration;

pub fn run(ctx: &Context, args: RingArgs) -> Result<Exit> {
    if args.probe {
        return probe(ctx);
    }
    let team = ctx.team()?;
    let mailbox = team.mailbox();
    for m in &args.members {
        crate::names::validate_member(m).map_err(|e| anyhow!("{e}"))?;
        // Here only: the sender already chose this machine.
        mailbox.ring_here(m);
    }
    Ok(Exit::Ok)
}

/// A doorbell made under `<root>/swarm/.hosts/`, rung and heard.
fn probe(ctx: &Context) -> Result<Exit> {
    let dir = ctx.root.dir().join("swarm").join(".hosts");
    crate::atomic_file::ensure_dir(&dir).map_err(|e| anyhow!("creating {}: {e}", dir.display()))?;
    let path = dir.join(format!("ring-probe-{}.wake", std::process::id()));
    let bell = Doorbell::open(&path)
        .map_err(|e| anyhow!("cannot make a doorbell (a FIFO) at {}: {e}", path.display()));
    let heard = bell.map(|b| {
        let rung = doorbell::ring(&path);
        (rung, b.wait(Duration::from_secs(2)))
    });
    crate::dropped::ignore(
        crate::atomic_file::remove_if_there(&path),
        "removing the ring probe",
    );
    match heard? {
        (doorbell::Rung::Rang, true) => {
            println!(
                "a doorbell was made and rung under {}",
                ctx.root.dir().display()
            );
            Ok(Exit::Ok)
        }
        (rung, _) => Err(anyhow!(
            "a doorbell made at {} was not heard when rung ({rung:?})",
            path.display()
        )),
    }
}
