//! `swarm doctor`: the state root and where it came from, the backends and
//! why one is chosen, tmux's version, and the problems found (unsafe
//! directories, dead members, teams without a lead).

use super::{Context, Exit, print_json};
use crate::cli::DoctorArgs;
use crate::dropped::ignore;
use crate::paths::RootSource;
use crate::text::escape_line as esc;
use anyhow::Result;
use swarm_backends::{BackendKind, EnvFacts};

pub(super) async fn doctor(ctx: &Context, args: DoctorArgs) -> Result<Exit> {
    if let Some(name) = &args.host {
        let hosts = hosts_to_check(ctx, args.spec.as_deref())?;
        let (root, name, json) = (ctx.root.clone(), name.clone(), args.json);
        return tokio::task::spawn_blocking(move || doctor_host(&root, &hosts, &name, json))
            .await
            .map_err(|e| anyhow::anyhow!("checking the host: {e}"))?;
    }
    let facts = EnvFacts::from_process_env();
    let tmux_version = tmux_version(&facts, &args).await;
    // Links and directories others can write, where swarm refuses to work.
    let mut problems: Vec<String> = ctx.root.problems().iter().map(|p| p.to_string()).collect();
    let teams: Vec<String> = crate::ops::teams::list(&ctx.root)
        .map(|ts| ts.into_iter().map(|t| t.name).collect())
        .unwrap_or_else(|e| {
            let dir = ctx.root.teams_dir();
            let e = format!("{e:#}");
            let cause = e.rsplit(": ").next().unwrap_or(&e);
            problems.push(format!(
                "cannot list the teams in {}: {cause}",
                dir.display()
            ));
            Vec::new()
        });
    problems.extend(team_problems(ctx, &teams, &args));
    let available = backends(&facts);
    let (chosen, reason) = match swarm_backends::detect(&facts) {
        Ok(d) => (d.kind.as_str().to_string(), d.reason.clone()),
        Err(e) => ("none".to_string(), e.to_string()),
    };
    let source = root_source(ctx);
    if args.json {
        print_json(&serde_json::json!({
            "root": ctx.root.dir(), "rootSource": source,
            "backend": chosen, "reason": reason,
            "backends": available.iter().map(|(k, w)| serde_json::json!({"name": k, "status": w})).collect::<Vec<_>>(),
            "tmuxVersion": ignore(tmux_version.as_ref(), "reading tmux's version (JSON: null)"), "teams": teams, "problems": problems,
        }));
        return Ok(Exit::Ok);
    }
    println!(
        "state root: {} (from {source})",
        esc(&ctx.root.dir().display().to_string())
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
            esc(&teams.join(", ")).into_owned()
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

/// `swarm doctor --host NAME`: the host's checks, one line each, a failed
/// one with its fix; exit 1 when any failed.
fn doctor_host(
    root: &crate::paths::Root,
    (hosts, whose): &(Vec<crate::hosts::HostSpec>, String),
    name: &str,
    json: bool,
) -> Result<Exit> {
    if name == swarm_backends::host::LOCAL {
        anyhow::bail!("\"local\" is this machine: `swarm doctor` without --host checks it");
    }
    let Some(host) = hosts.iter().find(|h| h.name == name) else {
        let mut names = vec![swarm_backends::host::LOCAL.to_string()];
        names.extend(hosts.iter().map(|h| h.name.clone()));
        anyhow::bail!(
            "no [[host]] named {} in {} (hosts: {})",
            esc(&format!("{name:?}")),
            esc(whose),
            esc(&names.join(", "))
        );
    };
    let checks = crate::ops::hosts::check(root, host)?;
    let failed = checks.iter().filter(|c| !c.ok).count();
    if json {
        print_json(&serde_json::json!({
            "host": host.name, "ssh": host.ssh, "root": host.root, "swarm": host.swarm(),
            "ok": failed == 0, "checks": checks,
        }));
    } else {
        println!("host {} (ssh {})", esc(&host.name), esc(&host.ssh));
        for c in &checks {
            let mark = if c.ok { "ok" } else { "FAILED" };
            println!("  {:<6} {mark}: {}", c.check, esc(&c.detail));
            if let Some(fix) = &c.fix {
                println!("         fix: {}", esc(fix));
            }
        }
        if checks.len() < 4 {
            println!("  (the other checks need ssh to work first)");
        }
    }
    Ok(if failed == 0 {
        Exit::Ok
    } else {
        Exit::No(format!(
            "host {}: {} of {} checks failed",
            esc(&host.name),
            failed,
            checks.len()
        ))
    })
}

/// The hosts `doctor --host` looks among, and whose they are: the spec
/// given (`--spec`), else `./swarm.toml` when there is one, else the
/// current team's recorded hosts (`swarm up SPEC` records them).
fn hosts_to_check(
    ctx: &Context,
    spec: Option<&std::path::Path>,
) -> Result<(Vec<crate::hosts::HostSpec>, String)> {
    let here = std::path::Path::new("swarm.toml");
    let file = match spec {
        Some(s) => Some(s),
        None => here.is_file().then_some(here),
    };
    if let Some(file) = file {
        let spec = crate::config::TeamSpec::load(file)?;
        return Ok((spec.hosts, "the spec".to_string()));
    }
    let team = ctx.team().map_err(|e| {
        anyhow::anyhow!(
            "{e:#}; or name the spec holding the [[host]] (--spec FILE, default ./swarm.toml)"
        )
    })?;
    let hosts = crate::hosts::recorded(&ctx.root, &team.name)?;
    Ok((hosts, format!("team {:?}", team.name)))
}

/// Where the state root came from, as the user would name it: `--home`,
/// `SWARM_HOME` (clap fills the same field from either), `CLAUDE_CONFIG_DIR`
/// or `~/.claude`.
fn root_source(ctx: &Context) -> &'static str {
    match ctx.root_source {
        RootSource::Flag => {
            let env = std::env::var_os("SWARM_HOME");
            let from_env = env
                .is_some_and(|e| Some(std::path::Path::new(&e)) == ctx.global.home.as_deref())
                && !std::env::args_os()
                    .any(|a| a == "--home" || a.to_string_lossy().starts_with("--home="));
            if from_env { "SWARM_HOME" } else { "--home" }
        }
        RootSource::ClaudeConfigDir => "CLAUDE_CONFIG_DIR",
        RootSource::Home => "~/.claude",
    }
}

/// tmux's version on the server doctor would use, or why there is none.
async fn tmux_version(facts: &EnvFacts, args: &DoctorArgs) -> Result<String, String> {
    if !facts.tmux_on_path {
        return Err("tmux is not on PATH".to_string());
    }
    let server = match &args.backend.tmux_socket {
        Some(s) => swarm_backends::tmux::TmuxServer::socket(s),
        None => swarm_backends::tmux::TmuxServer::default_server(),
    };
    let (major, minor) = swarm_backends::tmux::TmuxBackend::new(server)
        .check_version()
        .await
        .map_err(|e| e.to_string())?;
    // The backend keeps the numbers it compares (3.3 for tmux 3.3a); the
    // user is shown tmux's own word, which tells 3.3a from 3.3.
    let own =
        swarm_backends::command::Invocation::new("tmux", swarm_backends::tmux::commands::version())
            .run()
            .await
            .ok()
            .and_then(|out| version_word(&out.stdout));
    Ok(own.unwrap_or_else(|| format!("{major}.{minor}")))
}

/// The version word of `tmux -V` output (`tmux 3.3a` → `3.3a`, `tmux
/// next-3.4` → `next-3.4`), escaped: it comes from a program on PATH.
fn version_word(out: &str) -> Option<String> {
    let mut words = out.split_whitespace();
    words.next().filter(|w| *w == "tmux")?;
    words.next().map(|w| esc(w).into_owned())
}

/// A `--tmux-socket`/`SWARM_TMUX_SOCKET` that is not the running server
/// team `t` is recorded on (every command of that team would refuse it),
/// or a record that cannot be read.
fn tmux_server_problem(ctx: &Context, t: &str, args: &DoctorArgs) -> Option<String> {
    use crate::session::{SessionRecord, recorded_tmux_server, socket_conflict};
    let asked = args.backend.tmux_socket.as_deref()?;
    let recorded = SessionRecord::load(&ctx.root, t)
        .and_then(|r| recorded_tmux_server(&ctx.root, t, &r))
        .map_err(|e| format!("team {t}: cannot read which tmux server it is on: {e:#}"));
    match recorded {
        Err(e) => Some(e),
        Ok(known) => socket_conflict(t, asked, &known?),
    }
}

/// Each backend and whether it would work here (or why not).
fn backends(facts: &EnvFacts) -> Vec<(String, String)> {
    BackendKind::ALL
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
        .collect()
}

/// Each team's problems ([`crate::ops::TeamOps::problems`]) and a tmux
/// server that is not the team's.
fn team_problems(ctx: &Context, teams: &[String], args: &DoctorArgs) -> Vec<String> {
    let mut problems = Vec::new();
    for t in teams {
        let ops = crate::ops::TeamOps::new(
            crate::session::Location::of(&ctx.root, t),
            crate::names::LEAD_NAME,
        );
        problems.extend(ops.problems());
        problems.extend(tmux_server_problem(ctx, t, args));
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24, item 10: doctor printed tmux "3.3" for 3.3a.
    #[test]
    fn tmuxs_version_is_shown_as_tmux_says_it() {
        assert_eq!(version_word("tmux 3.3a\n").as_deref(), Some("3.3a"));
        assert_eq!(version_word("tmux next-3.4").as_deref(), Some("next-3.4"));
        assert_eq!(version_word("tmux 3.2-rc3").as_deref(), Some("3.2-rc3"));
        assert_eq!(version_word("tmux\n"), None);
        assert_eq!(version_word("bash: tmux: not found"), None);
    }
}
