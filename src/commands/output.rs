//! `swarm output NAME [--follow]`: a pane's output, from the file its
//! backend appends it to, without attaching.

use super::{Context, Exit};
use crate::cli::OutputArgs;
use crate::team::names;
use anyhow::{Context as _, Result, bail};
use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

pub(super) fn output(ctx: &Context, args: OutputArgs) -> Result<Exit> {
    let team = ctx.team()?;
    let tf = team.roster().read()?;
    let path = ctx.root.output(&team.name, &args.name)?;
    if !path.exists() {
        if tf.member(&args.name).is_none() {
            bail!(
                "{} is not a member of team {} (members: {})",
                names::shown(&args.name),
                team.name,
                tf.member_names().join(", ")
            );
        }
        bail!(
            "no output recorded for {} yet ({})",
            args.name,
            path.display()
        );
    }
    let mut f =
        std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut offset = args.from_offset;
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut quiet_since: Option<Instant> = None;
    loop {
        f.seek(SeekFrom::Start(offset))?;
        let n = f.read(&mut buf)?;
        if n > 0 {
            out.write_all(&buf[..n])?;
            out.flush()?;
            offset += n as u64;
            quiet_since = None;
            continue;
        }
        if !args.follow {
            return Ok(Exit::Ok);
        }
        // Stop following once the member is gone and its output drained.
        let gone = team
            .roster()
            .read()
            .map(|tf| {
                tf.member(&args.name)
                    .is_none_or(|m| m.swarm_field(crate::team::SwarmField::Exit).is_some())
            })
            .unwrap_or(true);
        let since = *quiet_since.get_or_insert_with(Instant::now);
        if gone && since.elapsed() > Duration::from_millis(500) {
            return Ok(Exit::Ok);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
