//! `swarm up` and `swarm lead`: a team from a spec (or the demo) on the
//! roster and board, its backend opened, its lead started (here, or in its
//! own pane of the team's home session and attached to), every member
//! without a pane spawned, and a team whose panes are all gone brought
//! back (`--resume` / `--fresh`).

use super::open::open_own;
use super::{Context, Exit, print_acted};
use crate::cli::{BackendArgs, UpArgs};
use crate::dropped::ignore;
use crate::lead::Lead;
use crate::ops::TeamOps;
use crate::session::{self, Session};
use crate::team::Team;
use crate::team::locks::{LifecycleLock, lead_holder, lead_pid_alive};
use crate::text::{escape_line as esc, shell_word};
use anyhow::{Context as _, Result, bail};
use std::time::{Duration, Instant};
use swarm_backends::{HomeSessions, PaneMark, SpawnSpec};

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
            "members": TeamOps::new(crate::session::Location::of(&team.root, &team.name), crate::names::LEAD_NAME).member_names()?,
        }));
    }
    Ok(next)
}

async fn up_team(ctx: &Context, args: UpArgs) -> Result<(Next, Team)> {
    let started = Instant::now();
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let (spec, name) = up_spec_and_name(ctx, &args, &cwd)?;
    // A team swarm did not start (Claude Code's lead runs it): the
    // TeamsDialog watches it, and nothing of it is changed or brought back.
    if spec.is_none() && crate::ops::teams::is_foreign(&ctx.root, &name) {
        use std::io::IsTerminal;
        if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
            bail!(
                "team {} is not swarm's: swarm only watches it, in the TeamsDialog, which needs \
                 a terminal; `swarm status --team {}` shows it once",
                esc(&name),
                esc(&name)
            );
        }
        let team = Team::new(&ctx.root, &name);
        let opened = Session::open(&super::open::location(ctx, &name, &args.backend))?;
        eprintln!(
            "team {} is not swarm's: watching it (m sends, s asks its own lead; nothing else \
             of it is changed)",
            esc(&name)
        );
        return Ok((
            Next::RunLead(Box::new(Lead::watching(team.clone(), opened))),
            team,
        ));
    }
    let lead = lead_spec_of(&args, spec.as_ref())?;
    let up = crate::ops::up::prepare(
        super::open::location(ctx, &name, &args.backend),
        spec.as_ref(),
        lead.as_ref(),
        args.demo,
        &cwd,
    )?;
    if up.created {
        eprintln!("created team {name}");
    }
    if let Some(tasks) = &up.tasks {
        eprintln!("{tasks}");
    }
    let (ops, opened) = (up.ops, up.session);
    let team = ops.team().clone();
    crate::teammate::wake::preflight(&team);
    // One `up` or `spawn` of the team at a time: a second `up` waits here,
    // then finds the lead this one started.
    let lifecycle = LifecycleLock::acquire(&team).await?;
    if let Some(pid) = lead_pid_alive(&team)? {
        if args.resume || args.fresh {
            // The lead came back without its teammates: they come now.
            say(ops.bring_back(&opened, comeback(&args)).await?);
        }
        // Members an interrupted `up` left without a pane (it was killed
        // after the lead's pane opened) start now: no flag needed.
        say(ops.complete(&opened).await?);
        drop(lifecycle);
        eprintln!("{}", already_running(&name, pid, &opened.record()));
        let done = reattach(&team, &opened, args.no_attach).await?;
        return Ok((Next::Done(done), team));
    }
    // Before the lead starts: it would take their gone panes for deaths
    // and hand their tasks back.
    say(ops.bring_back(&opened, comeback(&args)).await?);
    // A backend with home sessions (tmux) runs a lead started outside it
    // in the team's home session; any other lead runs here.
    let backend = opened.backend.clone();
    let next = match backend.homes() {
        Some(homes) if opened.own_pane.is_none() => {
            up_in_home(&ops, homes, opened, args, lifecycle, started).await?
        }
        _ => up_here(&ops, opened, lifecycle).await?,
    };
    Ok((next, team))
}

/// The AI lead `up` was asked for: `--lead AGENT` (with `--lead-prompt`,
/// `--lead-mode`) over the spec's `[lead]`; a prompt or mode alone applies
/// to the spec's lead (or to the AI lead the team has).
fn lead_spec_of(
    args: &UpArgs,
    spec: Option<&crate::config::TeamSpec>,
) -> Result<Option<crate::config::LeadSpec>> {
    let from_spec = spec.and_then(|s| s.lead.clone());
    let mut lead = match (&args.lead, from_spec) {
        (Some(agent), from) => crate::config::LeadSpec {
            agent: agent.clone(),
            ..from.unwrap_or(crate::config::LeadSpec {
                agent: agent.clone(),
                prompt: None,
                mode: None,
                model: None,
                approves: false,
                command: None,
            })
        },
        (None, Some(l)) => l,
        (None, None) if args.lead_prompt.is_some() || args.lead_mode.is_some() => {
            bail!(
                "--lead-prompt and --lead-mode need --lead AGENT (claude, codex or gemini) or a spec with [lead]"
            )
        }
        (None, None) => return Ok(None),
    };
    if let Some(p) = &args.lead_prompt {
        lead.prompt = Some(p.clone());
    }
    if let Some(m) = &args.lead_mode {
        lead.mode = Some(m.clone());
    }
    lead.validate().context("--lead")?;
    Ok(Some(lead))
}

/// Lines for the user, each escaped for the terminal, on stderr.
fn say(lines: Vec<String>) {
    for line in lines {
        eprintln!("{}", esc(&line));
    }
}

/// How a team whose panes are all gone comes back: `--resume`, `--fresh`,
/// or the user is asked.
fn comeback(args: &UpArgs) -> crate::ops::resume::Comeback {
    use crate::ops::resume::Comeback;
    match (args.resume, args.fresh) {
        (true, _) => Comeback::Resume,
        (_, true) => Comeback::Fresh,
        _ => Comeback::Ask,
    }
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

/// `up` on a backend with home sessions: the lead starts in its own pane
/// of the team's session (a new window when the session outlived its
/// lead), and this process attaches to it.
async fn up_in_home(
    ops: &TeamOps,
    homes: &dyn HomeSessions,
    opened: Session,
    args: UpArgs,
    lifecycle: LifecycleLock,
    started: Instant,
) -> Result<Next> {
    let team = ops.team().clone();
    let name = team.name.clone();
    let spec = lead_spec(&team, &opened)?;
    let lead_pane = ops.open_lead_home(&opened, homes, spec).await?;
    say(ops.complete(&opened).await?);
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
async fn up_here(ops: &TeamOps, opened: Session, lifecycle: LifecycleLock) -> Result<Next> {
    let team = ops.team().clone();
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
        say(ops.respawn_hosted()?);
    }
    say(ops.complete(&opened).await?);
    drop(lifecycle);
    eprintln!("{}", come_back_hint(&name));
    Ok(Next::RunLead(Box::new(
        Lead::new(team, opened).with_lock(lead_lock),
    )))
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

/// "the lead of team k is already running (pid 4242, pane %3 of tmux
/// session swarm-k)": where to find it, as the session record says.
fn already_running(team: &str, pid: u32, record: &session::SessionRecord) -> String {
    let mut at = Vec::new();
    if pid != 0 {
        at.push(format!("pid {pid}"));
    }
    match (&record.lead_pane, &record.session) {
        (Some(pane), Some(s)) => at.push(format!("pane {pane} of tmux session {}", esc(s))),
        (Some(pane), None) => at.push(format!("pane {pane} of your own tmux session")),
        (None, _) => at.push("in the terminal it was started in".to_string()),
    }
    format!(
        "the lead of team {} is already running ({})",
        esc(team),
        at.join(", ")
    )
}

async fn reattach(team: &Team, opened: &Session, no_attach: bool) -> Result<Exit> {
    if opened.backend.homes().is_none() {
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
            if let Some(focus) = opened.backend.pane_focus() {
                ignore(focus.focus(lead).await, "focusing the lead's pane");
            }
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
