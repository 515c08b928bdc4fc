//! `swarm spawn NAME [--agent A] [-- CMD ARGS]`: one more teammate, in a
//! pane of the team's backend (see `ops::spawn`).

use super::open::team_ops;
use super::{Context, Exit, print_acted};
use crate::cli::SpawnArgs;
use crate::ops::spawn::{SpawnRequest, apart_note, passed_note};
use anyhow::Result;

pub(super) async fn spawn(ctx: &Context, args: SpawnArgs) -> Result<Exit> {
    let ops = team_ops(ctx, &args.backend)?;
    if let Some(host) = &args.host {
        let team = ops.team();
        crate::ops::hosts::check_spawn_host(&team.root, &team.name, host)?;
    }
    let crate::pane_env::EnvArgs {
        set: env,
        pass: pass_env,
    } = crate::pane_env::EnvArgs::parse(&args.env, |k| std::env::var_os(k).is_some())?;
    let req = SpawnRequest {
        name: args.name,
        agent: args.agent,
        prompt: args.prompt,
        model: args.model,
        color: args.color,
        cwd: match args.cwd {
            Some(c) => c,
            None => std::env::current_dir()?,
        },
        plan_mode_required: args.plan_mode_required,
        mode: args.mode,
        command: args.command,
        env,
        pass_env,
        worktree: args.worktree,
        host: args.host,
    };
    let s = ops.spawn(&req).await?;
    if args.json {
        print_acted(serde_json::json!({ "spawned": s }));
        return Ok(Exit::Ok);
    }
    let apart = apart_note(s.apart.as_deref());
    match s.pid {
        Some(pid) => println!("spawned {} in pane {} (pid {pid}){apart}", s.name, s.pane),
        None => println!("spawned {} in pane {}{apart}", s.name, s.pane),
    }
    if !s.passed.is_empty() {
        eprintln!("{}", passed_note(&s.passed).trim_start_matches("; "));
    }
    Ok(Exit::Ok)
}
