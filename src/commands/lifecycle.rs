//! `swarm up | down | kill | shutdown | prune | lead`: the team's lifecycle,
//! over [`crate::lead`], and the dispatch of the pane commands (`spawn`,
//! `output`, `attach`, `doctor` have files of their own).

use super::spawn::passed_note;
use super::{Context, Exit};
use crate::cli::{BackendArgs, Command, DownArgs, UpArgs};
use crate::lead::lock::{LifecycleLock, lead_holder};
use crate::lead::session::{self, Opened};
use crate::lead::spawn::{SpawnRequest, spawn_members_locked};
use crate::lead::teardown::{self, ShutdownOutcome};
use crate::lead::{Lead, lead_pid_alive, run_lead};
use crate::team::{Roster, Team, names};
use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use swarm_backends::{PaneMark, SpawnSpec};

/// What `up` and `lead` leave to do once their async setup is over: either
/// nothing more, or run the lead (which needs the runtime itself, outside
/// `block_on`, to host the TUI beside the supervisor).
enum Next {
    Done(Exit),
    RunLead(Box<Lead>),
}

pub fn run(ctx: &Context, cmd: Command) -> Result<Exit> {
    let rt = session::runtime()?;
    let next = match cmd {
        Command::Up(args) => rt.block_on(up(ctx, args))?,
        Command::Lead(args) => rt.block_on(lead(ctx, args.backend))?,
        other => return run_other(ctx, &rt, other),
    };
    match next {
        Next::Done(exit) => Ok(exit),
        Next::RunLead(lead) => {
            run_lead(*lead, &rt)?;
            Ok(Exit::Ok)
        }
    }
}

fn run_other(ctx: &Context, rt: &tokio::runtime::Runtime, cmd: Command) -> Result<Exit> {
    match cmd {
        Command::Down(args) => rt.block_on(down(ctx, args)),
        Command::Spawn(args) => rt.block_on(super::spawn::spawn(ctx, args)),
        Command::Kill(args) => rt.block_on(async {
            let (team, opened) = open(ctx, &args.backend)?;
            let grace = Duration::from_secs_f64(args.grace.max(0.0));
            let r = teardown::kill_member(&team, &opened, &args.name, grace).await?;
            println!("killed {}{}{}", esc(&args.name), returned(&r.returned), not_ours(&r));
            Ok(Exit::Ok)
        }),
        Command::Shutdown(args) => rt.block_on(async {
            let (team, opened) = open(ctx, &args.backend)?;
            let wait = Duration::from_secs(args.wait);
            let force = args.force_after.map(Duration::from_secs);
            match teardown::shutdown_member(&team, &opened, &args.name, args.reason, wait, force).await? {
                ShutdownOutcome::Approved(r) => {
                    println!("{} shut down{}", esc(&args.name), returned(&r.returned));
                    Ok(Exit::Ok)
                }
                ShutdownOutcome::Rejected(reason) => {
                    Ok(Exit::No(format!("{} declined to shut down: {reason}", args.name)))
                }
                ShutdownOutcome::Killed(r) => {
                    println!("{} did not approve in time and was killed{}", esc(&args.name), returned(&r.returned));
                    Ok(Exit::Ok)
                }
                ShutdownOutcome::NoAnswer => bail!(
                    "no answer from {} within {} s; it keeps running (add --force-after SECS to kill it then)",
                    args.name,
                    args.wait
                ),
            }
        }),
        Command::Prune(args) => rt.block_on(async {
            let (team, opened) = open(ctx, &args.backend)?;
            let idle = teardown::idle_members(&team, &opened).await?;
            if idle.is_empty() {
                println!("no idle teammates");
                return Ok(Exit::Ok);
            }
            for name in &idle {
                if args.dry_run {
                    println!("would prune {}", esc(name));
                } else {
                    let r = teardown::kill_member(&team, &opened, name, Duration::from_secs(1)).await?;
                    println!("pruned {}{}", esc(name), returned(&r.returned));
                }
            }
            Ok(Exit::Ok)
        }),
        Command::Output(args) => super::output::output(ctx, args),
        Command::Attach(args) => rt.block_on(super::attach::attach(ctx, args)),
        Command::Doctor(args) => rt.block_on(super::doctor::doctor(ctx, args)),
        other => bail!("{other:?} is not a lifecycle command"),
    }
}

/// "; its pane %3 was no longer swarm's (left untouched)", or nothing.
fn not_ours(r: &teardown::Released) -> String {
    match &r.pane_not_ours {
        Some(p) => format!("; its pane {p} was no longer swarm's (left untouched)"),
        None => String::new(),
    }
}

/// Outside text (names, paths) as one line safe for the terminal.
pub(super) fn esc(text: &str) -> std::borrow::Cow<'_, str> {
    crate::text::escape_line(text)
}

fn returned(tasks: &[crate::tasks::Task]) -> String {
    if tasks.is_empty() {
        String::new()
    } else {
        let ids: Vec<String> = tasks.iter().map(|t| format!("#{}", t.id)).collect();
        format!("; task(s) {} back on the board", ids.join(", "))
    }
}

pub(super) fn open(ctx: &Context, args: &BackendArgs) -> Result<(Team, Opened)> {
    let team = ctx.team()?;
    team.roster().read()?;
    let opened = session::open(&ctx.root, &team.name, args)?;
    Ok((team, opened))
}

/// The spec of the lead's own pane: `swarm lead`, with the team's identity.
fn lead_spec(team: &Team, opened: &Opened) -> Result<SpawnSpec> {
    let exe = std::env::current_exe().context("locating the swarm executable")?;
    let mut args = vec!["lead".to_string()];
    if let Some(sock) = &opened.record.tmux_socket {
        args.push("--tmux-socket".into());
        args.push(sock.to_string_lossy().into_owned());
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut spec = SpawnSpec::new(exe.to_string_lossy().into_owned(), args, cwd)
        .title("lead")
        .mark(PaneMark::new(&team.name, crate::team::names::LEAD_NAME));
    spec.env = crate::pane_env::lead(team)?;
    Ok(spec)
}

async fn up(ctx: &Context, args: UpArgs) -> Result<Next> {
    let started = Instant::now();
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let spec = if args.demo {
        Some(crate::config::TeamSpec::demo(&cwd))
    } else {
        args.spec
            .as_deref()
            .map(crate::config::TeamSpec::load)
            .transpose()?
    };
    let name = match (&spec, &ctx.global.team) {
        (Some(s), _) => s.team.clone(),
        (None, Some(t)) => t.clone(),
        (None, None) => ctx
            .team_name()
            .context("swarm up needs a team: pass --team NAME, a spec file, or --demo")?,
    };
    let team = Team::new(&ctx.root, &name);
    if !team.roster().exists() {
        names::validate_team(&name)?;
        Roster::new(&ctx.root, &name).create(None, &cwd.to_string_lossy())?;
        eprintln!("created team {name}");
    }
    let mut backend_args = args.backend.clone();
    if let Some(spec) = &spec {
        apply_spec(&team, spec)?;
        if backend_args.backend.is_none()
            && let Some(b) = spec.backend.as_deref()
        {
            backend_args.backend = Some(clap::ValueEnum::from_str(b, true).map_err(|_| {
                anyhow::anyhow!(
                    "the spec's backend {:?} is not one of auto, tmux, in-process, iterm2, windows-terminal",
                    crate::text::escape_line(b)
                )
            })?);
        }
    }
    let args = UpArgs {
        backend: backend_args,
        ..args
    };
    let mut opened = session::open(&ctx.root, &name, &args.backend)?;
    // One `up` or `spawn` of the team at a time: a second `up` waits here,
    // then finds the lead this one started.
    let lifecycle = LifecycleLock::acquire(&team).await?;
    if let Some(pid) = lead_pid_alive(&team)? {
        drop(lifecycle);
        eprintln!("{}", already_running(&name, pid));
        return reattach(&team, &opened, args.no_attach)
            .await
            .map(Next::Done);
    }
    let home = opened.caps().home_sessions && opened.own_pane.is_none();
    if home {
        let session = opened
            .record
            .session
            .clone()
            .unwrap_or_else(|| session::session_name(&name));
        let spec = lead_spec(&team, &opened)?;
        let lead_pane = if opened.backend.home_exists(&session).await? {
            // The session outlived its lead (e.g. kill -9): a new window.
            let spec = spec.placement(swarm_backends::Placement::NewWindow {
                session: Some(session.clone()),
            });
            opened.backend.spawn(&spec).await?
        } else {
            opened.backend.open_home(&session, &spec).await?
        };
        opened.record.session = Some(session);
        opened.record.lead_pane = Some(lead_pane.id.clone());
        opened.record.lead_nonce = Some(lead_pane.nonce.clone());
        if let Some(v) = opened.backend.checked_version().await {
            opened.record.tmux_version = Some(v);
        }
        opened.placement = Some(swarm_backends::Placement::RightOfLead {
            lead: lead_pane.id.clone(),
        });
        opened.record.save(&ctx.root, &name)?;
        complete_team(&team, &mut opened).await?;
        // The lifecycle lock is let go only once the new lead holds its
        // own: a second `up` waiting for it then finds the lead running.
        wait_for_lead_lock(&team, &lead_pane).await?;
        drop(lifecycle);
        eprintln!(
            "team {name}: lead in pane {} ({:.0} ms)",
            lead_pane.id,
            started.elapsed().as_secs_f64() * 1000.0
        );
        return reattach(&team, &opened, args.no_attach)
            .await
            .map(Next::Done);
    }
    // This process is the lead (in the user's own pane, or hosting
    // in-process panes): its lock first, then the team.
    let own = opened.own_pane.clone();
    if let Some(lead) = &own {
        opened.placement = Some(swarm_backends::Placement::RightOfLead { lead: lead.clone() });
    }
    opened.record.lead_pane = own;
    opened.record.lead_nonce = None;
    start_lead_logging(&team)?;
    opened.record.save(&ctx.root, &name)?;
    let lead_lock = crate::lead::lock::LeadLock::acquire(&team, Duration::ZERO).await?;
    complete_team(&team, &mut opened).await?;
    drop(lifecycle);
    Ok(Next::RunLead(Box::new(
        Lead::new(team, opened).with_lock(lead_lock),
    )))
}

/// How long a new lead's pane may take to start the lead.
const LEAD_START: Duration = Duration::from_secs(10);

/// Waits until the lead started in `pane` holds the team's lead lock.
async fn wait_for_lead_lock(team: &Team, pane: &swarm_backends::PaneRef) -> Result<()> {
    let deadline = Instant::now() + LEAD_START;
    let mut pause = Duration::from_millis(1);
    while lead_holder(team)?.is_none() {
        if Instant::now() >= deadline {
            bail!(
                "the lead did not start in pane {} within {} s; see {}",
                pane.id,
                LEAD_START.as_secs(),
                team.root.lead_log(&team.name)?.display()
            );
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(20));
    }
    Ok(())
}

fn already_running(team: &str, pid: u32) -> String {
    if pid == 0 {
        format!("the lead of team {team} is already running")
    } else {
        format!("the lead of team {team} is already running (pid {pid})")
    }
}

/// Under the lifecycle lock: adopts, recovers or closes what an earlier
/// interrupted `up`/`spawn` left (see `lead::recover`), then spawns every
/// member that still has no pane.
async fn complete_team(team: &Team, opened: &mut Opened) -> Result<()> {
    let done = crate::lead::recover::reconcile(team, opened).await?;
    for line in done.lines() {
        eprintln!("{line}");
    }
    spawn_reserved(team, opened).await
}

/// Puts the spec's teammates on the roster (reserved: no pane yet) and its
/// tasks on an empty board. What already exists is kept, so `up` again on a
/// running team creates nothing twice.
fn apply_spec(team: &Team, spec: &crate::config::TeamSpec) -> Result<()> {
    let tf = team.roster().read()?;
    let mut new = Vec::new();
    for (i, t) in spec.teammates.iter().enumerate() {
        if tf.member(&t.name).is_some() {
            continue;
        }
        let m = t.member(&team.name, i, &spec.dir);
        let agent = m.agent().unwrap_or("shell");
        // A "process" teammate's program is checked when it starts, as
        // with `swarm spawn NAME -- CMD` (a relative path means its cwd).
        if agent != "process" {
            crate::agents::check_available(agent, t.command.as_deref())
                .with_context(|| format!("teammate {}", t.name))?;
        }
        new.push(m);
    }
    if !new.is_empty() {
        // One roster write for the whole spec.
        team.roster().add_members(new)?;
    }
    match spec.apply(team)? {
        crate::config::Applied::Created(tasks) => eprintln!("created {} task(s)", tasks.len()),
        crate::config::Applied::AlreadyHadTasks(n) => {
            eprintln!("the task board already has {n} task(s); none added")
        }
    }
    Ok(())
}

/// The member's `swarmCommand`: absent, or an array of strings (anything
/// else is an error naming the member, never an empty command).
fn swarm_command(m: &crate::team::Member) -> Result<Vec<String>> {
    match m.swarm_field(crate::team::SwarmField::Command) {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
            anyhow::anyhow!("{}'s swarmCommand is not an array of strings: {v}", m.name)
        }),
    }
}

/// Spawns members that are on the roster but were never given a pane.
async fn spawn_reserved(team: &Team, opened: &mut Opened) -> Result<()> {
    let tf = team.roster().read()?;
    let mut reqs = Vec::new();
    for m in tf.teammates().filter(|m| m.tmux_pane_id.is_empty()) {
        reqs.push(SpawnRequest {
            name: m.name.clone(),
            agent: m.agent().map(str::to_string),
            prompt: None,
            model: m.model.clone(),
            color: m.color.clone(),
            cwd: m
                .cwd
                .clone()
                .map(PathBuf::from)
                .unwrap_or(std::env::current_dir()?),
            plan_mode_required: m.plan_mode_required == Some(true),
            mode: None,
            command: swarm_command(m)?,
            env: crate::pane_env::swarm_env(m)?,
            pass_env: crate::pane_env::pass_env(m)?,
        });
    }
    if reqs.is_empty() {
        return Ok(());
    }
    for s in spawn_members_locked(team, opened, &reqs).await? {
        eprintln!(
            "spawned {} in pane {}{}",
            s.name,
            s.pane,
            passed_note(&s.passed)
        );
    }
    Ok(())
}

async fn reattach(team: &Team, opened: &Opened, no_attach: bool) -> Result<Exit> {
    if !opened.caps().home_sessions {
        bail!(
            "the lead of team {} runs in another terminal (backend {})",
            team.name,
            opened.kind()
        );
    }
    let Some(session) = opened.record.session.clone() else {
        if let Some(lead) = &opened.record.lead_pane {
            opened.backend.focus(lead).await.ok();
        }
        return Ok(Exit::Ok);
    };
    use std::io::IsTerminal;
    if no_attach || !std::io::stdin().is_terminal() {
        eprintln!("attach with: swarm attach --team {}", team.name);
        return Ok(Exit::Ok);
    }
    super::attach::attach_home(team, opened, &session).await
}

fn start_lead_logging(team: &Team) -> Result<()> {
    let log = team.root.lead_log(&team.name)?;
    crate::logging::init_file(&log).with_context(|| format!("opening {}", log.display()))
}

async fn lead(ctx: &Context, args: BackendArgs) -> Result<Next> {
    let (team, opened) = open(ctx, &args)?;
    start_lead_logging(&team)?;
    Ok(Next::RunLead(Box::new(Lead::new(team, opened))))
}

async fn down(ctx: &Context, args: DownArgs) -> Result<Exit> {
    let (team, opened) = open(ctx, &args.backend)?;
    let r = teardown::down(&team, &opened, Duration::from_secs(args.wait), args.force).await?;
    if !r.stayed.is_empty() || !r.declined.is_empty() {
        let mut why = Vec::new();
        if !r.declined.is_empty() {
            why.push(format!("declined to shut down: {}", r.declined.join(", ")));
        }
        if !r.stayed.is_empty() {
            why.push(format!(
                "still running after {} s: {}",
                args.wait,
                r.stayed.join(", ")
            ));
        }
        bail!(
            "{}; the team was not deleted (use --force to kill them and delete the team)",
            why.join("; ")
        );
    }
    for n in &r.approved {
        println!("{} shut down", esc(n));
    }
    for n in &r.killed {
        println!("{} killed (no answer in time)", esc(n));
    }
    println!("team {} deleted", team.name);
    Ok(Exit::Ok)
}
