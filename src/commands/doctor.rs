//! `swarm doctor`: the state root, the backends and why one is chosen,
//! tmux's version, and the problems found (unsafe directories, dead
//! members, teams without a lead).

use super::lifecycle::esc;
use super::{Context, Exit, print_json};
use crate::cli::DoctorArgs;
use crate::lead::lead_pid_alive;
use crate::lead::lock::lead_holder;
use crate::team::Team;
use anyhow::Result;
use swarm_backends::BackendKind;

pub(super) async fn doctor(ctx: &Context, args: DoctorArgs) -> Result<Exit> {
    let facts = swarm_backends::EnvFacts::from_process_env();
    let detection = swarm_backends::detect(&facts);
    let tmux_version = if facts.tmux_on_path {
        let server = match &args.backend.tmux_socket {
            Some(s) => swarm_backends::tmux::TmuxServer::socket(s),
            None => swarm_backends::tmux::TmuxServer::default_server(),
        };
        swarm_backends::tmux::TmuxBackend::new(server)
            .check_version()
            .await
            .map(|(a, b)| format!("{a}.{b}"))
            .map_err(|e| e.to_string())
    } else {
        Err("tmux is not on PATH".to_string())
    };
    // Links and directories others can write, where swarm refuses to work.
    let mut problems: Vec<String> = ctx.root.problems().iter().map(|p| p.to_string()).collect();
    let teams = crate::team::list_teams(&ctx.root).unwrap_or_default();
    for t in &teams {
        let team = Team::new(&ctx.root, t);
        problems.extend(crate::teammate::wake::report(&team));
        if let Ok(tf) = team.roster().read() {
            for m in tf.teammates() {
                if let Some(exit) = m.swarm_field(crate::team::SwarmField::Exit) {
                    problems.push(format!(
                        "team {t}: {} is dead ({exit}); `swarm kill {}` removes it",
                        m.name, m.name
                    ));
                }
            }
            if tf.teammates().count() > 0
                && lead_holder(&team).ok().flatten().is_none()
                && lead_pid_alive(&team).ok().flatten().is_none()
            {
                problems.push(format!(
                    "team {t}: no live lead; `swarm up --team {t}` takes the team back"
                ));
            }
        }
    }
    let kinds = [
        BackendKind::Tmux,
        BackendKind::ITerm2,
        BackendKind::WindowsTerminal,
        BackendKind::InProcess,
    ];
    let available: Vec<(String, String)> = kinds
        .iter()
        .map(|k| {
            let mut f = facts.clone();
            f.requested = Some(*k);
            let why = match swarm_backends::detect(&f) {
                Ok(_) => "available".to_string(),
                Err(e) => e.to_string(),
            };
            (k.as_str().to_string(), why)
        })
        .collect();
    let (chosen, reason) = match &detection {
        Ok(d) => (d.kind.as_str().to_string(), d.reason.clone()),
        Err(e) => ("none".to_string(), e.to_string()),
    };
    if args.json {
        print_json(&serde_json::json!({
            "root": ctx.root.dir(), "rootSource": format!("{:?}", ctx.root_source),
            "backend": chosen, "reason": reason,
            "backends": available.iter().map(|(k, w)| serde_json::json!({"name": k, "status": w})).collect::<Vec<_>>(),
            "tmuxVersion": tmux_version.as_ref().ok(), "teams": teams, "problems": problems,
        }));
        return Ok(Exit::Ok);
    }
    println!(
        "state root: {} (from {:?})",
        ctx.root.dir().display(),
        ctx.root_source
    );
    println!("backend (auto): {chosen}: {reason}");
    for (k, w) in &available {
        println!("  {k:<17} {w}");
    }
    match &tmux_version {
        Ok(v) => println!("tmux: {v}"),
        Err(e) => println!("tmux: {e}"),
    }
    println!(
        "teams: {}",
        if teams.is_empty() {
            "none".to_string()
        } else {
            teams.join(", ")
        }
    );
    if problems.is_empty() {
        println!("no problems found");
    } else {
        for p in &problems {
            println!("problem: {}", esc(p));
        }
    }
    Ok(Exit::Ok)
}
