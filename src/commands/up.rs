//! `swarm up` and `swarm lead`: a team from a spec (or the demo) on the
//! roster and board, its backend opened, its lead started (here, or in its
//! own pane of the team's home session and attached to), every member
//! without a pane spawned, and a team whose panes are all gone brought
//! back (`--resume` / `--fresh`).

use super::open::open_own;
use super::spawn::{apart_note, passed_note};
use super::{Context, Exit, print_acted};
use crate::cli::{BackendArgs, UpArgs};
use crate::dropped::ignore;
use crate::lead::Lead;
use crate::ops::spawn::{SpawnRequest, spawn_members_locked};
use crate::session::{self, Session};
use crate::team::locks::lead_pid_alive;
use crate::team::locks::{LifecycleLock, lead_holder};
use crate::names;
use crate::team::{Roster, Team};
use crate::text::{escape_line as esc, shell_word};
use anyhow::{Context as _, Result, bail};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use swarm_backends::{PaneMark, SpawnSpec};

/// What `up` and `lead` leave to do once their async setup is over: either
/// nothing more, or run the lead (which needs the runtime itself, outside
/// `block_on`, to host the TUI beside the supervisor).
pub(super) enum Next {
    Done(Exit),
    RunLead(Box<Lead>),
}

/// The spec of the lead's own pane: `swarm lead`, with the team's identity.
fn lead_spec(team: &Team, opened: &Session) -> Result<SpawnSpec> {
    let exe = std::env::current_exe().context("locating the swarm executable")?;
    let mut args = vec!["lead".to_string()];
    if let Some(sock) = &opened.record().tmux_socket {
        args.push("--tmux-socket".into());
        args.push(sock.to_string_lossy().into_owned());
    }
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let mut spec = SpawnSpec::new(exe.to_string_lossy().into_owned(), args, cwd)
        .title("lead")
        .mark(PaneMark::new(&team.name, crate::names::LEAD_NAME));
    spec.env = crate::pane_env::lead(team)?;
    Ok(spec)
}

pub(super) async fn up(ctx: &Context, args: UpArgs) -> Result<Next> {
    let json = args.json;
    let (next, team) = up_team(ctx, args).await?;
    if json {
        let record = crate::session::SessionRecord::load(&team.root, &team.name)?;
        print_acted(serde_json::json!({
            "team": team.name,
            "backend": record.backend.map(|b| b.as_str()),
            "tmuxSession": record.session,
            "leadPane": record.lead_pane,
            "members": team.roster().read()?.member_names(),
        }));
    }
    Ok(next)
}

async fn up_team(ctx: &Context, args: UpArgs) -> Result<(Next, Team)> {
    let started = Instant::now();
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let (spec, name) = up_spec_and_name(ctx, &args, &cwd)?;
    let team = Team::new(&ctx.root, &name);
    if team.roster().exists() {
        team.require_own("lead it or start anything in it")?;
    }
    let (args, opened) = create_and_prepare(ctx, &team, spec.as_ref(), args, &cwd)?;
    crate::teammate::wake::preflight(&team);
    // One `up` or `spawn` of the team at a time: a second `up` waits here,
    // then finds the lead this one started.
    let lifecycle = LifecycleLock::acquire(&team).await?;
    if let Some(pid) = lead_pid_alive(&team)? {
        if args.resume || args.fresh {
            // The lead came back without its teammates: they come now.
            bring_back(&team, &opened, &args).await?;
            complete_team(&team, &opened).await?;
        }
        drop(lifecycle);
        eprintln!("{}", already_running(&name, pid));
        let done = reattach(&team, &opened, args.no_attach).await?;
        return Ok((Next::Done(done), team));
    }
    // Before the lead starts: it would take their gone panes for deaths
    // and hand their tasks back.
    bring_back(&team, &opened, &args).await?;
    let back = team.clone();
    let next = if opened.caps().home_sessions && opened.own_pane.is_none() {
        up_in_home(team, opened, args, lifecycle, started).await?
    } else {
        up_here(team, opened, lifecycle).await?
    };
    Ok((next, back))
}

/// The spec `up` was given (a file, or `--demo`) and the team it names
/// (else `--team`, else the current team).
fn up_spec_and_name(
    ctx: &Context,
    args: &UpArgs,
    cwd: &std::path::Path,
) -> Result<(Option<crate::config::TeamSpec>, String)> {
    let spec = if args.demo {
        Some(crate::config::TeamSpec::demo(cwd))
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
    Ok((spec, name))
}

/// Creates the team if it is not there, then [`prepare`]s it. Until a
/// pane opens, a failure (a teammate whose agent is not installed, a bad
/// backend) leaves nothing behind: a team this `up` created is deleted
/// again, so the error is the whole story.
fn create_and_prepare(
    ctx: &Context,
    team: &Team,
    spec: Option<&crate::config::TeamSpec>,
    args: UpArgs,
    cwd: &std::path::Path,
) -> Result<(UpArgs, Session)> {
    let name = &team.name;
    let created = !team.roster().exists();
    if created {
        names::validate_team(name)?;
        Roster::new(&ctx.root, name).create(None, &cwd.to_string_lossy())?;
    }
    let prepared = prepare(ctx, team, spec, args);
    if prepared.is_err()
        && created
        && let Err(d) = team.roster().delete(true)
    {
        tracing::warn!("could not delete the half-made team {name}: {d:#}");
    }
    if prepared.is_ok() && created {
        eprintln!("created team {name}");
    }
    prepared
}

/// `up` on a backend with home sessions: the lead starts in its own pane
/// of the team's session (a new window when the session outlived its
/// lead), and this process attaches to it.
async fn up_in_home(
    team: Team,
    opened: Session,
    args: UpArgs,
    lifecycle: LifecycleLock,
    started: Instant,
) -> Result<Next> {
    let name = team.name.clone();
    let session = opened
        .record()
        .session
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
    let version = opened.backend.checked_version().await;
    opened.update_record(|r| {
        r.session = Some(session);
        r.lead_pane = Some(lead_pane.id.clone());
        r.lead_nonce = Some(lead_pane.nonce.clone());
        r.tmux_version = version.or(r.tmux_version);
    })?;
    opened.set_placement(Some(swarm_backends::Placement::RightOfLead {
        lead: lead_pane.id.clone(),
    }));
    complete_team(&team, &opened).await?;
    // The lifecycle lock is let go only once the new lead holds its
    // own: a second `up` waiting for it then finds the lead running.
    wait_for_lead_lock(&team, &lead_pane).await?;
    drop(lifecycle);
    eprintln!(
        "team {name}: lead in pane {} ({:.0} ms)",
        lead_pane.id,
        started.elapsed().as_secs_f64() * 1000.0
    );
    eprintln!("{}", come_back_hint(&name));
    reattach(&team, &opened, args.no_attach)
        .await
        .map(Next::Done)
}

/// `up` where this process is the lead (in the user's own pane, or
/// hosting in-process panes): its lock first, then the team.
async fn up_here(team: Team, opened: Session, lifecycle: LifecycleLock) -> Result<Next> {
    let name = team.name.clone();
    let own = opened.own_pane.clone();
    if let Some(lead) = &own {
        opened.set_placement(Some(swarm_backends::Placement::RightOfLead {
            lead: lead.clone(),
        }));
    }
    start_lead_logging(&team)?;
    opened.update_record(|r| {
        r.lead_pane = own;
        r.lead_nonce = None;
    })?;
    let lead_lock = crate::team::locks::LeadLock::acquire(&team, Duration::ZERO).await?;
    if !opened.caps().panes_outlive_lead {
        respawn_hosted(&team)?;
    }
    complete_team(&team, &opened).await?;
    drop(lifecycle);
    eprintln!("{}", come_back_hint(&name));
    Ok(Next::RunLead(Box::new(
        Lead::new(team, opened).with_lock(lead_lock),
    )))
}

/// The part of `up` that opens no pane: the spec's teammates and tasks on
/// the roster and board, the backend chosen and opened.
fn prepare(
    ctx: &Context,
    team: &Team,
    spec: Option<&crate::config::TeamSpec>,
    args: UpArgs,
) -> Result<(UpArgs, Session)> {
    let mut backend_args = args.backend.clone();
    if let Some(spec) = spec {
        if backend_args.backend.is_none() {
            backend_args.backend = spec.backend_choice()?;
        }
        apply_spec(team, spec, args.demo)?;
    }
    let args = UpArgs {
        backend: backend_args,
        ..args
    };
    let opened = Session::open(&super::open::location(ctx, &team.name, &args.backend))?;
    Ok((args, opened))
}

/// How to come back to the team and how to end it, as commands that work
/// as printed: `swarm` when that is this executable on PATH, else its full
/// path (`cargo run` puts nothing on PATH).
fn come_back_hint(team: &str) -> String {
    let exe = self_command();
    let team = esc(team);
    format!("come back: {exe} up --team {team}   end the team: {exe} down --team {team}")
}

/// This executable as the user can run it: `swarm` when that is what PATH
/// finds, else its full path as one shell word (escaped for the terminal).
fn self_command() -> String {
    // A hint only: what cannot be read is shown as the full path.
    let me = ignore(std::env::current_exe(), "reading this executable");
    let on_path = ignore(which::which("swarm"), "finding swarm on PATH");
    let same = match (&me, &on_path) {
        (Some(a), Some(b)) => {
            ignore(std::fs::canonicalize(a), "resolving this executable")
                == ignore(std::fs::canonicalize(b), "resolving swarm on PATH")
        }
        _ => false,
    };
    match (&me, same) {
        (Some(p), false) => shell_word(&p.display().to_string()),
        _ => "swarm".to_string(),
    }
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

/// A lead that hosts its teammates' panes (in-process) takes over a team
/// whose previous lead ended: those panes ended with it, so its in-process
/// members are put back to "no pane yet" (pane, pid, mark and exit record
/// cleared) and [`spawn_reserved`] starts them again. Called holding the
/// lead lock, so no other lead hosts them.
fn respawn_hosted(team: &Team) -> Result<()> {
    use crate::team::SwarmField;
    let (_, again) = team.roster().update(|tf| {
        let mut again = Vec::new();
        for m in tf.members.iter_mut().filter(|m| !m.is_lead()) {
            if m.backend_type.as_deref() != Some("in-process") || m.tmux_pane_id.is_empty() {
                continue;
            }
            m.tmux_pane_id.clear();
            m.is_active = Some(false);
            for f in [
                SwarmField::Exit,
                SwarmField::Pid,
                SwarmField::PidStart,
                SwarmField::Nonce,
            ] {
                m.set_swarm_field(f, serde_json::Value::Null);
            }
            again.push(m.name.clone());
        }
        Ok(again)
    })?;
    if !again.is_empty() {
        eprintln!(
            "{} ended with the previous lead; starting them again",
            again.join(", ")
        );
    }
    Ok(())
}

/// Under the lifecycle lock: adopts, recovers or closes what an earlier
/// interrupted `up`/`spawn` left (see `ops::recover`), then spawns every
/// member that still has no pane.
async fn complete_team(team: &Team, opened: &Session) -> Result<()> {
    let done = crate::ops::recover::reconcile(team, opened).await?;
    for line in done.lines() {
        eprintln!("{line}");
    }
    spawn_reserved(team, opened).await
}

/// A team whose panes are all gone: its teammates brought back, or
/// started anew, as `--resume` / `--fresh` or the user's answer says (see
/// `resume`); `spawn_reserved` then opens their panes.
async fn bring_back(team: &Team, opened: &Session, args: &UpArgs) -> Result<()> {
    use crate::ops::resume::Comeback;
    let how = match (args.resume, args.fresh) {
        (true, _) => Comeback::Resume,
        (_, true) => Comeback::Fresh,
        _ => Comeback::Ask,
    };
    for line in crate::ops::resume::comeback(team, opened, how).await? {
        eprintln!("{}", esc(&line));
    }
    Ok(())
}

/// Puts the spec's teammates on the roster (reserved: no pane yet) and its
/// tasks on an empty board. What already exists is kept, so `up` again on a
/// running team creates nothing twice.
fn apply_spec(team: &Team, spec: &crate::config::TeamSpec, demo: bool) -> Result<()> {
    let tf = team.roster().read()?;
    let mut new = Vec::new();
    for (i, t) in spec.teammates.iter().enumerate() {
        if tf.member(&t.name).is_some() {
            continue;
        }
        let mut m = t.member(&team.name, i, &spec.dir);
        if t.worktree.unwrap_or(spec.worktree) {
            crate::worktree::want(&mut m);
        }
        crate::agents::check_available(t.agent()?, t.command.as_deref())
            .with_context(|| format!("teammate {}", t.name))?;
        new.push(m);
    }
    if !new.is_empty() {
        // One roster write for the whole spec.
        team.roster().add_members(new)?;
    }
    // The demo runs again on a finished board; a spec's tasks run once.
    let applied = if demo {
        spec.apply_again(team)?
    } else {
        spec.apply(team)?
    };
    match applied {
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
    Ok(m.command()?.unwrap_or_default())
}

/// Spawns members that are on the roster but were never given a pane.
async fn spawn_reserved(team: &Team, opened: &Session) -> Result<()> {
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
            worktree: crate::worktree::wanted(m),
        });
    }
    if reqs.is_empty() {
        return Ok(());
    }
    for s in spawn_members_locked(team, opened, &reqs).await? {
        eprintln!(
            "spawned {} in pane {}{}{}",
            s.name,
            s.pane,
            apart_note(s.apart.as_deref()),
            passed_note(&s.passed)
        );
    }
    Ok(())
}

async fn reattach(team: &Team, opened: &Session, no_attach: bool) -> Result<Exit> {
    if !opened.caps().home_sessions {
        bail!(
            "the lead of team {} runs in another terminal (backend {})",
            team.name,
            opened.kind()
        );
    }
    let record = opened.record();
    let Some(session) = record.session.clone() else {
        if let Some(lead) = &record.lead_pane {
            // Focus is a courtesy: the lead runs either way.
            ignore(opened.backend.focus(lead).await, "focusing the lead's pane");
        }
        return Ok(Exit::Ok);
    };
    use std::io::IsTerminal;
    if no_attach || !std::io::stdin().is_terminal() {
        eprintln!(
            "attach with: {} attach --team {}",
            self_command(),
            esc(&team.name)
        );
        return Ok(Exit::Ok);
    }
    super::attach::attach_home(team, opened, &session).await
}

fn start_lead_logging(team: &Team) -> Result<()> {
    let log = team.root.lead_log(&team.name)?;
    crate::logging::init_file(&log).with_context(|| format!("opening {}", log.display()))
}

pub(super) async fn lead(ctx: &Context, args: BackendArgs) -> Result<Next> {
    let (team, opened) = open_own(ctx, &args, "lead it")?;
    start_lead_logging(&team)?;
    Ok(Next::RunLead(Box::new(Lead::new(team, opened))))
}
