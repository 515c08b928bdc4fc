//! Adding a teammate: the roster entry, the first prompt in its inbox, and
//! its pane, in that order (as Claude Code does, so the teammate finds its
//! record and its prompt the moment it starts).
//!
//! The pane runs `swarm teammate --name NAME` (the runtime, which drives the
//! member's agent preset), or with `-- CMD ARGS` and no `--agent`, CMD itself
//! (agent `process`: any program can be a teammate; it reaches the team
//! through `swarm send` / `swarm task …`). Either way the environment is
//! exactly what [`crate::pane_env`] says: the `SWARM_*` identity (DESIGN
//! §6), the spawner's `PATH` (swarm's own directory first), `HOME`, `USER`,
//! `SHELL`, `TERM`, `LANG`, what the user wrote for the member, and, passed
//! by name, the agent's forward list and the names the user asked for.
//!
//! Passed values never go through the backend (a multiplexer's spawn is
//! argv, and tmux keeps it as the pane's start command): they are written
//! to a private hand-off file (`<state>/runtime/<name>.env`, 0600) that the
//! pane's first process, `swarm pane-exec --env-file`, reads, deletes, and
//! puts in the program's environment.

use crate::agents::{Agent, PermissionMode};
use crate::atomic_file;
use crate::names;
use crate::session::{Session, lead_running, member_pane, placement, placement_apart};
use crate::team::locks::LifecycleLock;
use crate::team::{Member, SwarmField, Team, colors};
use anyhow::{Context, Result, bail};
use registrar::Registrar;
use serde_json::Value;
use std::path::{Path, PathBuf};
use swarm_backends::{PaneMark, PaneRef, PaneStatus, SpawnSpec};

mod registrar;

/// What to spawn.
#[derive(Debug, Clone, Default)]
pub struct SpawnRequest {
    pub name: String,
    pub agent: Option<String>,
    pub prompt: Option<String>,
    pub model: Option<String>,
    pub color: Option<String>,
    pub cwd: PathBuf,
    pub plan_mode_required: bool,
    /// Permission mode at launch (`None`: the member's recorded mode, else
    /// the agent's default; Claude Code's is `default`).
    pub mode: Option<String>,
    /// `-- CMD ARGS`: the command preset's argv, or the pane's program.
    pub command: Vec<String>,
    /// Variables the user wrote for the pane (kept in the roster).
    pub env: Vec<(String, String)>,
    /// Names whose values are taken from the spawner's environment and
    /// passed by name (kept in the roster as names only).
    pub pass_env: Vec<String>,
    /// Work in a git worktree of its own (see [`crate::worktree`]).
    pub worktree: bool,
    /// The machine its pane runs on (`None`: this one; else one of the
    /// team's hosts, DESIGN §13).
    pub host: Option<String>,
}

/// A spawned teammate.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Spawned {
    pub name: String,
    /// Its pane (shown by id; the nonce that marks it stays private).
    #[serde(serialize_with = "pane_id_only")]
    pub pane: PaneRef,
    pub pid: Option<u32>,
    /// The variables passed by name from the spawner's environment.
    pub passed: Vec<String>,
    /// Where the pane went when not beside the lead (`window 2`: the lead's
    /// window was full), as the backend says.
    pub apart: Option<String>,
}

/// The exact environment of a member's pane (see [`crate::pane_env`]).
pub fn pane_env(team: &Team, member: &Member) -> Result<Vec<(String, String)>> {
    crate::pane_env::member(team, member)
}

/// Refuses, before anything is created, what could only give a dead pane.
pub fn check_request(req: &SpawnRequest) -> Result<Agent> {
    names::validate_member(&req.name)?;
    let agent = match &req.agent {
        Some(a) => Agent::parse(a)?,
        None => Agent::unnamed(!req.command.is_empty()),
    };
    if agent.needs_command() && req.command.is_empty() {
        bail!(
            "agent {:?} needs the command after `--`, e.g. `swarm spawn {} -- ./my-agent.sh`",
            agent.name(),
            req.name
        );
    }
    let command = (!req.command.is_empty()).then_some(req.command.as_slice());
    crate::agents::check_available(agent, command)?;
    if let Some(m) = &req.mode {
        PermissionMode::parse(m)?;
    }
    for k in req.env.iter().map(|(k, _)| k).chain(&req.pass_env) {
        crate::pane_env::check_name(k)?;
    }
    if let Some(c) = &req.color
        && !colors::is_palette(c)
    {
        bail!(
            "unknown colour {c:?}: pick one of {}",
            colors::PALETTE.join(", ")
        );
    }
    if !req.cwd.is_dir() {
        bail!("working directory {} does not exist", req.cwd.display());
    }
    Ok(agent)
}

/// `swarm pane-exec --ready FILE -- PROGRAM ARGS`: the first process of
/// every pane. The backend creates FILE once the pane is set up (marked,
/// its output piped), so the program waits here (at most 5 s) for it; then
/// it becomes the program (same pid, same process group), so no output is
/// ever printed uncaptured: it is exec'd, or, when it is this very
/// executable's teammate runtime (`swarm teammate ...`, every swarm
/// teammate's pane), its command line is returned for this process to run
/// (one start of this binary less per pane: about 2 ms of CPU each, 16
/// teammates starting at once at an `up` of 8). Returns only that command
/// line, or why the program could not be started.
pub fn pane_exec(args: crate::cli::PaneExecArgs) -> Result<crate::cli::Cli> {
    use std::os::unix::process::CommandExt;
    exact_environment()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut pause = std::time::Duration::from_millis(1);
    while !args.ready.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(std::time::Duration::from_millis(20));
    }
    // The backend's signal, read: a file left behind is removed at the
    // next spawn of this member (which insists on it).
    crate::dropped::ignore(std::fs::remove_file(&args.ready), "removing the ready file");
    let handed = match &args.env_file {
        Some(file) => take_handoff(file)?,
        None => Vec::new(),
    };
    if let Some(own) = own_runtime(&args.command) {
        for (k, v) in handed {
            // SAFETY: `pane-exec` runs before anything of this process
            // starts a thread (its caller, `main`, has only parsed the
            // command line), so nothing reads the environment meanwhile.
            unsafe { std::env::set_var(k, v) };
        }
        return Ok(own);
    }
    let mut cmd = std::process::Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    cmd.envs(handed);
    let err = cmd.exec();
    Err(err).with_context(|| format!("starting {}", names::shown(&args.command[0])))
}

/// Makes this process's environment exactly the pane's: a backend that
/// sets a pane's variables itself (tmux) starts `pane-exec` directly, not
/// through `env -i` (one process less per pane), with the pane's
/// variables in [`EXACT_ENV_VAR`]; they replace the whole environment (the
/// tmux server's own, its `TMUX`, `TMUX_PANE`, `SHELL` and its client's
/// `PATH`, and that variable). Without it (started by `env -i`) the
/// environment is already exact.
///
/// [`EXACT_ENV_VAR`]: swarm_backends::EXACT_ENV_VAR
fn exact_environment() -> Result<()> {
    let Some(pairs) = std::env::var_os(swarm_backends::EXACT_ENV_VAR) else {
        return Ok(());
    };
    let pairs: Vec<(String, String)> = serde_json::from_str(&pairs.to_string_lossy())
        .with_context(|| {
            format!(
                "the pane's environment ({}) does not parse",
                swarm_backends::EXACT_ENV_VAR
            )
        })?;
    let all: Vec<std::ffi::OsString> = std::env::vars_os().map(|(k, _)| k).collect();
    // SAFETY: `pane-exec` runs before anything of this process starts a
    // thread (its caller, `main`, has only parsed the command line), so
    // nothing reads the environment meanwhile.
    unsafe {
        for k in all {
            std::env::remove_var(k);
        }
        for (k, v) in pairs {
            std::env::set_var(k, v);
        }
    }
    Ok(())
}

/// `command` parsed, when it is this executable's teammate runtime (its
/// program the very file this process runs, not one rebuilt since) and
/// its arguments parse; anything else is exec'd as it is.
fn own_runtime(command: &[String]) -> Option<crate::cli::Cli> {
    use std::os::unix::fs::MetadataExt;
    if command.get(1).map(String::as_str) != Some("teammate") {
        return None;
    }
    let program = std::fs::metadata(command.first()?).ok()?;
    let me = std::fs::metadata(std::env::current_exe().ok()?).ok()?;
    if (program.dev(), program.ino()) != (me.dev(), me.ino()) {
        return None;
    }
    let cli = crate::cli::Cli::lean(command.iter().map(std::ffi::OsString::from))?;
    matches!(cli.command, crate::cli::Command::Teammate(_)).then_some(cli)
}

/// The variables passed by name to a pane being opened, in a private file
/// (0600, in the team's 0700 state) for its `swarm pane-exec --env-file`
/// to take. Removed on drop unless the pane opened: a failed spawn leaves
/// no values on disk.
struct Handoff {
    path: PathBuf,
    armed: bool,
}

impl Handoff {
    fn write(path: PathBuf, vars: &[(String, String)]) -> Result<Handoff> {
        if let Some(dir) = path.parent() {
            atomic_file::ensure_dir(dir)?;
        }
        let map: serde_json::Map<String, Value> = vars
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let bytes = serde_json::to_vec(&Value::Object(map)).expect("a map of strings serialises");
        atomic_file::write_atomic(&path, &bytes)
            .with_context(|| format!("writing the pane's hand-off file {}", path.display()))?;
        Ok(Handoff { path, armed: true })
    }

    /// The pane opened: its first process reads and deletes the file.
    fn taken_by_pane(mut self) {
        self.armed = false;
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        if self.armed
            && let Err(e) = crate::atomic_file::remove_if_there(&self.path)
        {
            // It holds values passed by name: say where they are left.
            tracing::warn!(path = %self.path.display(), error = %e, "cannot remove a failed spawn's hand-off file");
        }
    }
}

/// Reads and deletes a hand-off file: its variables, to set for the
/// program. Deleted first, so the values are on disk no longer than the
/// pane takes to start.
fn take_handoff(file: &Path) -> Result<Vec<(String, String)>> {
    let bytes = std::fs::read(file)
        .with_context(|| format!("reading the pane's hand-off file {}", file.display()))?;
    crate::atomic_file::remove_if_there(file)
        .with_context(|| format!("removing the pane's hand-off file {}", file.display()))?;
    let map: serde_json::Map<String, Value> = serde_json::from_slice(&bytes)
        .with_context(|| format!("the hand-off file {} is not a JSON object", file.display()))?;
    Ok(map
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
        .collect())
}

/// Creates (or with `truncate`, empties) a private scratch file. Not
/// fsynced: output logs and readiness markers need no crash durability.
fn touch_private(path: &Path, truncate: bool) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    Ok(())
}

/// " in window 2 (the lead's window is full)" for a pane placed apart.
pub fn apart_note(apart: Option<&str>) -> String {
    match apart {
        Some(w) => format!(
            " in {} (the lead's window is full)",
            crate::text::escape_line(w)
        ),
        None => String::new(),
    }
}

/// "; passed by name: A, B" (the variables taken from the spawner's
/// environment; names only), or nothing.
pub fn passed_note(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; passed by name: {}", names.join(", "))
    }
}

fn pane_id_only<S: serde::Serializer>(pane: &PaneRef, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(pane.id.as_str())
}

impl super::TeamOps {
    /// Adds a teammate: its roster entry, its first prompt, its pane (see
    /// [`spawn_member`]). Refused on a team swarm did not start.
    pub async fn spawn(&self, req: &SpawnRequest) -> Result<Spawned> {
        self.require_own("add a teammate to it")?;
        let session = self.session()?;
        if !session.caps().panes_outlive_lead {
            bail!(
                "in-process panes live inside the lead, so another process cannot add one: list \
                 the teammates in a spec and run `swarm up SPEC --backend in-process`, or use tmux"
            );
        }
        spawn_member(self.team(), &session, req).await
    }
}

/// Adds `req.name` to the team and opens its pane.
pub async fn spawn_member(team: &Team, opened: &Session, req: &SpawnRequest) -> Result<Spawned> {
    let mut done = spawn_members(team, opened, std::slice::from_ref(req)).await?;
    Ok(done.remove(0))
}

/// A member whose roster record is ready to be written, and what its pane runs.
struct Prepared {
    agent: Agent,
    member: Member,
    /// It was on the roster before this spawn (a reserved spec member, or a
    /// teammate spawned again).
    existed: bool,
    /// It continues a recorded conversation, which already holds its
    /// first prompt (see [`crate::ops::resume`]).
    resumed: bool,
}

/// Adds every request's member to the team and opens their panes, in order:
/// all records in one roster write (each with the nonce its pane will be
/// marked with, so an interrupted spawn's pane can be recognised and
/// adopted), then the panes: members that `opens_with_others` in one
/// backend call ([`spawn_many`]: tmux opens the lead's column in one
/// `tmux` call and each overflow window in one), the others one by one;
/// each pane id recorded as soon as the roster is free (writes coalesce
/// while panes keep opening). On a failure, the panes already open stay
/// registered, the failed member's reservation goes, as do those of
/// members this call added and never reached.
///
/// [`spawn_many`]: swarm_backends::PaneBackendExecutor::spawn_many
///
/// The team's [`LifecycleLock`] is held throughout, so a concurrent spawn
/// of the same name waits, then finds it running and fails.
pub async fn spawn_members(
    team: &Team,
    opened: &Session,
    reqs: &[SpawnRequest],
) -> Result<Vec<Spawned>> {
    let _lock = LifecycleLock::acquire(team).await?;
    spawn_members_locked(team, opened, reqs).await
}

/// [`spawn_members`] for a caller that already holds the team's
/// [`LifecycleLock`] (`up`).
pub async fn spawn_members_locked(
    team: &Team,
    opened: &Session,
    reqs: &[SpawnRequest],
) -> Result<Vec<Spawned>> {
    let roster = team.roster();
    let mut tf = roster.read()?;
    let mut prepared = Vec::with_capacity(reqs.len());
    for req in reqs {
        let p = prepare(team, opened, &tf, req).await?;
        match tf.member_mut(&p.member.name) {
            Some(m) => *m = p.member.clone(),
            None => tf.members.push(p.member.clone()),
        }
        prepared.push(p);
    }
    let records: Vec<Member> = prepared.iter().map(|p| p.member.clone()).collect();
    roster.update(|tf| {
        for record in &records {
            match tf.member_mut(&record.name) {
                Some(m) => *m = record.clone(),
                None => tf.members.push(record.clone()),
            }
        }
        Ok(())
    })?;

    let mut registrar = Registrar::new(team, opened.record().tmux_socket);
    let mut spawned = Vec::with_capacity(reqs.len());
    let mut i = 0;
    while i < reqs.len() {
        // Members that open together (one backend call for the panes of a
        // run: tmux puts a column of them in one `tmux` call), else one.
        let run = (i..reqs.len())
            .take_while(|&j| opens_with_others(opened, &reqs[j], &prepared[j]))
            .count();
        let mut openings = Vec::new();
        let mut unprepared = None;
        if run >= 2 {
            for j in i..i + run {
                match opening(team, opened, &reqs[j], &prepared[j]) {
                    Ok(o) => openings.push(o),
                    Err(e) => {
                        unprepared = Some((j, e));
                        break;
                    }
                }
            }
        }
        let single = openings.is_empty() && unprepared.is_none();
        // How many panes this turn must open (none past a member whose
        // pane could not be prepared).
        let expected = match (single, &unprepared) {
            (true, _) => 1,
            (false, Some((j, _))) => j - i,
            (false, None) => run,
        };
        let outcome = if single {
            let one = open_pane(team, opened, &reqs[i], &prepared[i]).await;
            vec![one]
        } else {
            open_together(opened, openings).await
        };
        let mut failed = None;
        let answered = outcome.len();
        for (k, one) in outcome.into_iter().enumerate() {
            let req = &reqs[i + k];
            match one {
                Ok((pane, pid, passed)) => {
                    let apart = match opened.backend.layout() {
                        Some(layout) => layout.placed_apart(&pane.id).await,
                        None => None,
                    };
                    registrar
                        .add(&req.name, &pane.id, pid, apart.clone())
                        .await?;
                    tracing::info!(member = %req.name, pane = %pane, ?pid, "spawned");
                    spawned.push(Spawned {
                        name: req.name.clone(),
                        pane,
                        pid,
                        passed,
                        apart,
                    });
                }
                Err(e) => {
                    failed = Some((i + k, e));
                    break;
                }
            }
        }
        if failed.is_none() && answered < expected {
            // A backend that stopped without an error: said, not skipped.
            let name = &reqs[i + answered].name;
            failed = Some((
                i + answered,
                anyhow::anyhow!("the backend opened no pane for {name} and gave no reason"),
            ));
        }
        let failed = failed.or(unprepared);
        let Some((at, e)) = failed else {
            i += expected;
            continue;
        };
        // Nothing half-made stays behind: the reservation goes.
        let registered = registrar.finish().await;
        let mut gone: Vec<String> = vec![reqs[at].name.clone()];
        gone.extend(
            prepared[at + 1..]
                .iter()
                .filter(|p| !p.existed)
                .map(|p| p.member.name.clone()),
        );
        let removed = roster.update(|tf| {
            tf.members.retain(|m| !gone.contains(&m.name));
            Ok(())
        });
        registered?;
        if let Err(r) = removed {
            return Err(e.context(format!(
                "and the reservations of {} could not be removed ({r}); \
                 the next `swarm up` spawns them",
                gone.join(", ")
            )));
        }
        return Err(e);
    }
    registrar.finish().await?;
    Ok(spawned)
}

/// What [`open_pane`] returns for one member: its pane, its pid where the
/// backend gives one, the variables passed by name.
type Opened = (PaneRef, Option<u32>, Vec<String>);

/// Whether a member's pane can open in one backend call with others': a
/// pane on this machine, placed where the session says, whose spawn
/// writes nothing to its inbox first (that write would outlive a call
/// that fails before its pane).
fn opens_with_others(opened: &Session, req: &SpawnRequest, p: &Prepared) -> bool {
    p.member.host().is_none() && opened.placement().is_some() && !writes_first_prompt(req, p)
}

/// Whether the spawn of `p` writes its first prompt to its inbox.
fn writes_first_prompt(req: &SpawnRequest, p: &Prepared) -> bool {
    (p.agent == Agent::Claude && (!p.resumed || req.prompt.is_some()) && p.member.prompt.is_some())
        || (p.agent == Agent::Shell && req.prompt.is_some())
}

/// A local pane ready to open: its spec, the hand-off file written for it
/// (removed again unless the pane opens), the variables passed by name.
struct Opening {
    spec: SpawnSpec,
    handoff: Option<Handoff>,
    passed: Vec<String>,
}

/// [`open_pane`]'s steps before the backend opens the pane, for a member
/// that [`opens_with_others`].
fn opening(team: &Team, opened: &Session, req: &SpawnRequest, p: &Prepared) -> Result<Opening> {
    let member = &p.member;
    let pane_env = crate::pane_env::member_pane(team, member)?;
    let passed = pane_env.passed_names();
    let cwd = PathBuf::from(member.cwd.clone().unwrap_or_default());
    let gate = Gate::build(team, req, p.agent, &cwd, &pane_env)?;
    let place = opened
        .placement()
        .context("no placement for a pane opened with others")?;
    let mut spec = pane_spec(team, opened, req, member, &gate, cwd, place)?;
    spec.env = pane_env.set;
    let handoff = match pane_env.passed.is_empty() {
        true => None,
        false => {
            tracing::info!(member = %req.name, names = ?passed, "passing variables by name");
            Some(Handoff::write(gate.handoff, &pane_env.passed)?)
        }
    };
    Ok(Opening {
        spec,
        handoff,
        passed,
    })
}

/// Opens the panes of `openings` in one backend call, in order, stopping
/// at the first that fails (its error last).
async fn open_together(opened: &Session, openings: Vec<Opening>) -> Vec<Result<Opened>> {
    let specs: Vec<SpawnSpec> = openings.iter().map(|o| o.spec.clone()).collect();
    let results = opened.backend.spawn_many(&specs).await;
    let mut out = Vec::with_capacity(results.len());
    for (o, r) in openings.into_iter().zip(results) {
        let name = o.spec.mark.member.clone();
        let pane = match r {
            Ok(pane) => pane,
            Err(e) => {
                out.push(Err(
                    anyhow::Error::from(e).context(format!("opening a pane for {name}"))
                ));
                break;
            }
        };
        if let Some(h) = o.handoff {
            h.taken_by_pane();
        }
        let pid = opened_pane(opened, &o.spec.placement, &pane).await;
        let failed = pid.is_err();
        out.push(pid.map(|pid| (pane, pid, o.passed)));
        if failed {
            break;
        }
    }
    out
}

/// Checks `req` against the roster as it will be (`tf` holds the members
/// prepared before it) and builds its record.
async fn prepare(
    team: &Team,
    opened: &Session,
    tf: &crate::team::TeamFile,
    req: &SpawnRequest,
) -> Result<Prepared> {
    let agent = check_request(req)?;
    let cwd = std::path::absolute(&req.cwd)?
        .to_string_lossy()
        .into_owned();
    let existing = tf.member(&req.name).cloned();
    if let Some(m) = &existing {
        refuse_running(opened, req, m).await?;
    }
    let color = req
        .color
        .clone()
        .or_else(|| existing.as_ref().and_then(|m| m.color.clone()))
        .unwrap_or_else(|| free_color(tf));
    let mut member = existing
        .clone()
        .unwrap_or_else(|| Member::teammate(&tf.name, &req.name, &color, &cwd));
    member.color = Some(color);
    member.cwd = Some(cwd);
    member.tmux_pane_id = String::new();
    member.model = req.model.clone().or(member.model);
    member.prompt = req.prompt.clone().or(member.prompt);
    member.plan_mode_required =
        Some(req.plan_mode_required || member.plan_mode_required == Some(true));
    if let Some(m) = &req.mode {
        member.mode = Some(PermissionMode::parse(m)?.name().to_string());
    }
    member.backend_type = Some(opened.kind().as_str().to_string());
    member.is_active = Some(false);
    set_swarm_fields(&mut member, req, agent);
    if req.worktree {
        crate::worktree::want(&mut member);
    }
    if crate::worktree::wanted(&member) {
        crate::worktree::ensure(team, &mut member, &req.cwd)?;
    }
    let resumed = crate::ops::resume::record_at_spawn(&mut member, agent);
    Ok(Prepared {
        agent,
        member,
        existed: existing.is_some(),
        resumed,
    })
}

/// A member of that name whose pane still runs is refused (so is the lead's
/// name): a second pane for one member would be two runtimes on one inbox.
async fn refuse_running(opened: &Session, req: &SpawnRequest, m: &Member) -> Result<()> {
    if m.is_lead() {
        bail!("{:?} is the lead", req.name);
    }
    if let Some(pane) = member_pane(m)
        && m.exit()?.is_none()
    {
        let st = opened.backend.status(std::slice::from_ref(&pane)).await?;
        if matches!(st.first(), Some((_, PaneStatus::Running { .. }))) {
            bail!("{} is already running in pane {}", req.name, m.tmux_pane_id);
        }
    }
    Ok(())
}

/// The first palette colour no teammate wears, else the next in turn.
fn free_color(tf: &crate::team::TeamFile) -> String {
    let used: Vec<&str> = tf.teammates().filter_map(|m| m.color.as_deref()).collect();
    (0..)
        .map(colors::for_teammate)
        .take(colors::PALETTE.len())
        .find(|c| !used.contains(c))
        .unwrap_or_else(|| colors::for_teammate(tf.teammates().count()))
        .to_string()
}

/// swarm's own fields of a member about to get a pane: its agent, no exit
/// or pid yet, a fresh mark (on the roster before the pane exists), and
/// the command and environment the request names.
fn set_swarm_fields(member: &mut Member, req: &SpawnRequest, agent: Agent) {
    member.set_swarm_field(SwarmField::Agent, Value::from(agent.name()));
    member.set_exit(None);
    member.set_swarm_field(SwarmField::Pid, Value::Null);
    member.set_swarm_field(SwarmField::PidStart, Value::Null);
    member.set_swarm_field(
        SwarmField::Nonce,
        Value::String(swarm_backends::new_nonce()),
    );
    if !req.command.is_empty() {
        member.set_swarm_field(SwarmField::Command, serde_json::json!(req.command));
    }
    if !req.env.is_empty() {
        let env: serde_json::Map<String, Value> = req
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        member.set_swarm_field(SwarmField::Env, Value::Object(env));
    }
    if !req.pass_env.is_empty() {
        member.set_swarm_field(SwarmField::PassEnv, serde_json::json!(req.pass_env));
    }
    if let Some(h) = req
        .host
        .as_deref()
        .filter(|h| *h != swarm_backends::host::LOCAL)
    {
        member.set_swarm_field(SwarmField::Host, serde_json::json!(h));
    }
}

/// Opens the pane of a member whose record is on the roster.
async fn open_pane(
    team: &Team,
    opened: &Session,
    req: &SpawnRequest,
    p: &Prepared,
) -> Result<Opened> {
    let member = &p.member;
    // Claude Code reads its first prompt from its inbox (signed by the lead);
    // the runtime's other presets take the role prompt from the roster.
    if p.agent == Agent::Claude
        && (!p.resumed || req.prompt.is_some())
        && let Some(prompt) = &member.prompt
    {
        crate::agents::write_initial_prompt(team, &req.name, prompt)
            .with_context(|| format!("writing the first prompt of {}", req.name))?;
    }
    // A shell teammate's instructions are commands: `swarm spawn --prompt`
    // puts them in its inbox as the lead's first message, so it runs them
    // at once and its output comes back to the lead (a spec's role prompt,
    // `req.prompt` being `None`, is never run).
    if p.agent == Agent::Shell
        && let Some(prompt) = &req.prompt
    {
        team.send_text(crate::names::LEAD_NAME, &req.name, prompt, None, false)
            .with_context(|| format!("writing the first prompt of {}", req.name))?;
    }
    let pane_env = crate::pane_env::member_pane(team, member)?;
    let passed = pane_env.passed_names();
    let cwd = PathBuf::from(member.cwd.clone().unwrap_or_default());
    let gate = Gate::build(team, req, p.agent, &cwd, &pane_env)?;
    let (place, guessed) = match opened.placement() {
        Some(p) => (p, false),
        None => (placement(opened, &team.name).await?, true),
    };
    let mut spec = pane_spec(team, opened, req, member, &gate, cwd, place)?;
    spec.env = pane_env.set;
    if let Some(host) = member.host() {
        return open_remote_pane(team, opened, host, spec, &gate, pane_env.passed, passed).await;
    }
    // Written last, and removed again unless the pane opens (its
    // pane-exec then takes it).
    let handoff = match pane_env.passed.is_empty() {
        true => None,
        false => {
            tracing::info!(member = %req.name, names = ?passed, "passing variables by name");
            Some(Handoff::write(gate.handoff, &pane_env.passed)?)
        }
    };
    let pane = spawn_placed(team, opened, &mut spec, guessed)
        .await
        .with_context(|| format!("opening a pane for {}", req.name))?;
    if let Some(h) = handoff {
        h.taken_by_pane();
    }
    let pid = opened_pane(opened, &spec.placement, &pane).await?;
    Ok((pane, pid, passed))
}

/// Opens the pane of a member on another machine (DESIGN §13): `spec`,
/// named for that machine (its root, its swarm, a PATH of its own, and
/// `SWARM_WAKE=poll`: no doorbell rung here reaches it), in the team's
/// tmux server there, in its session (made by the first such pane).
async fn open_remote_pane(
    team: &Team,
    opened: &Session,
    host: &str,
    mut spec: SpawnSpec,
    gate: &Gate,
    pass: Vec<(String, String)>,
    passed: Vec<String>,
) -> Result<(PaneRef, Option<u32>, Vec<String>)> {
    let name = &spec.mark.member.clone();
    let hosted = opened.hosted.as_ref().with_context(|| {
        format!(
            "{name} runs on host {host:?}, which is not one of team {:?}'s hosts",
            team.name
        )
    })?;
    let known = crate::hosts::recorded(&team.root, &team.name)?;
    let h = known
        .iter()
        .find(|h| h.name == host)
        .with_context(|| format!("host {host:?} is not one of team {:?}'s hosts", team.name))?;
    crate::ops::hosts::for_host(&mut spec, team.root.dir(), h, &gate.exe);
    let session = crate::session::session_name(&team.name);
    let there = hosted.host(host).expect("a recorded host has its backend");
    let exists = match swarm_backends::PaneBackendExecutor::homes(there.as_ref()) {
        Some(homes) => homes.home_exists(&session).await?,
        None => false,
    };
    spec.placement = if exists {
        swarm_backends::Placement::NewWindow {
            session: Some(session),
        }
    } else {
        swarm_backends::Placement::Session { name: session }
    };
    let handoff = match pass.is_empty() {
        true => None,
        false => Some(Handoff::write(gate.handoff.clone(), &pass)?),
    };
    let pane = hosted
        .spawn_on(host, &spec)
        .await
        .with_context(|| format!("opening a pane for {name} on {host}"))?;
    if let Some(h) = handoff {
        h.taken_by_pane();
    }
    Ok((pane, None, passed))
}

/// The argv a member's pane starts with: `swarm pane-exec`, which waits
/// until the backend has set the pane up (marked, output piped), then
/// becomes the member's program: a `process` member's command (exec'd),
/// else `swarm teammate` (run in that same process, see [`pane_exec`]).
struct Gate {
    exe: String,
    argv: Vec<String>,
    ready: PathBuf,
    handoff: PathBuf,
}

impl Gate {
    fn build(
        team: &Team,
        req: &SpawnRequest,
        agent: Agent,
        cwd: &Path,
        pane_env: &crate::pane_env::PaneEnv,
    ) -> Result<Gate> {
        let exe = std::env::current_exe().context("locating the swarm executable")?;
        let exe = exe.to_string_lossy().into_owned();
        let (program, args) = if agent == Agent::Process {
            check_startable(&req.command[0], cwd, &pane_env.set)?;
            (req.command[0].clone(), req.command[1..].to_vec())
        } else {
            let args = ["teammate", "--name", &req.name].map(String::from).to_vec();
            (exe.clone(), args)
        };
        let ready = team.root.ready_file(&team.name, &req.name)?;
        crate::atomic_file::remove_if_there(&ready)
            .with_context(|| format!("removing a stale ready file {}", ready.display()))?;
        let mut argv = vec![
            "pane-exec".to_string(),
            "--ready".into(),
            ready.to_string_lossy().into_owned(),
        ];
        let handoff = team.root.runtime_file(&team.name, &req.name, "env")?;
        crate::atomic_file::remove_if_there(&handoff)
            .with_context(|| format!("removing a stale hand-off file {}", handoff.display()))?;
        if !pane_env.passed.is_empty() {
            argv.extend(["--env-file".into(), handoff.to_string_lossy().into_owned()]);
        }
        argv.extend(["--".into(), program]);
        argv.extend(args);
        Ok(Gate {
            exe,
            argv,
            ready,
            handoff,
        })
    }
}

/// What the backend is asked to open (its environment aside): the gate,
/// the pane's mark, title, colour and place, its pid and output files.
fn pane_spec(
    team: &Team,
    opened: &Session,
    req: &SpawnRequest,
    member: &Member,
    gate: &Gate,
    cwd: PathBuf,
    place: swarm_backends::Placement,
) -> Result<SpawnSpec> {
    let nonce = member.nonce()?.unwrap_or_else(swarm_backends::new_nonce);
    let mark = PaneMark {
        team: team.name.clone(),
        member: req.name.clone(),
        nonce,
    };
    let mut spec = SpawnSpec::new(gate.exe.clone(), gate.argv.clone(), cwd)
        .title(req.name.clone())
        .color(member.color.clone().unwrap_or_default())
        .placement(place)
        .mark(mark)
        .ready_file(&gate.ready);
    if opened.hosted.is_none() {
        // `pane-exec` makes its own environment exact (`exact_environment`). A
        // pane on another machine may run another build of swarm there:
        // `env -i` makes its environment exact whatever that build does.
        spec = spec.trims_own_env();
    }
    let pid_file = team.root.pid_file(&team.name, &req.name)?;
    if let Some(dir) = pid_file.parent() {
        atomic_file::ensure_dir(dir)?;
    }
    spec = spec.pid_file(pid_file);
    let out_file = team.root.output(&team.name, &req.name)?;
    if let Some(dir) = out_file.parent() {
        atomic_file::ensure_dir(dir)?;
    }
    touch_private(&out_file, true)?;
    if opened.caps().output_file {
        spec = spec.output(&out_file);
    }
    Ok(spec)
}

/// Opens `spec`'s pane where it was placed; a place guessed beside a
/// recorded lead that is gone (its pane closes with it) is given up for
/// the team's session, as when no lead was ever recorded.
async fn spawn_placed(
    team: &Team,
    opened: &Session,
    spec: &mut SpawnSpec,
    guessed: bool,
) -> Result<PaneRef> {
    let backend = opened.backend.clone();
    match backend.spawn(spec).await {
        Ok(p) => Ok(p),
        Err(_)
            if guessed
                && matches!(
                    spec.placement,
                    swarm_backends::Placement::RightOfLead { .. }
                )
                && !lead_running(opened).await? =>
        {
            spec.placement = placement_apart(opened, &team.name).await?;
            Ok(backend.spawn(spec).await?)
        }
        Err(e) => Err(e.into()),
    }
}

/// After a pane opened at `place`: the session record (its session, the
/// checked tmux version) kept up to date, and the pane's pid when others
/// reach it by pid (panes that live inside this process); the other
/// backends answer liveness by pane id.
async fn opened_pane(
    opened: &Session,
    place: &swarm_backends::Placement,
    pane: &PaneRef,
) -> Result<Option<u32>> {
    let backend = opened.backend.clone();
    let before = opened.record();
    let mut after = before.clone();
    if let swarm_backends::Placement::Session { name }
    | swarm_backends::Placement::NewWindow {
        session: Some(name),
    } = place
    {
        after.session = Some(name.clone());
    }
    if let Some(v) = backend.checked_version().await {
        after.tmux_version = Some(v);
    }
    if after != before {
        opened.update_record(|r| {
            r.session = after.session;
            r.tmux_version = after.tmux_version;
        })?;
    }
    if opened.caps().panes_outlive_lead {
        return Ok(None);
    }
    Ok(
        match backend.status(std::slice::from_ref(pane)).await?.first() {
            Some((_, PaneStatus::Running { pid })) => *pid,
            _ => None,
        },
    )
}

/// Refuses a program that cannot start, before a pane is opened for it:
/// `program` is looked up as `exec` would (a path with `/` relative to
/// `cwd`, else on the pane's `PATH`) and must be an executable file.
pub fn check_startable(program: &str, cwd: &Path, env: &[(String, String)]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let pane_path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    if which::which_in(program, Some(pane_path), cwd).is_ok() {
        return Ok(());
    }
    // Not startable: say why.
    let shown = names::shown(program);
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![cwd.join(program)]
    } else {
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.as_str())
            .unwrap_or("");
        std::env::split_paths(path)
            .map(|d| d.join(program))
            .collect()
    };
    let mut last = None;
    for c in &candidates {
        match std::fs::metadata(c) {
            Ok(md) if md.is_file() && md.permissions().mode() & 0o111 != 0 => return Ok(()),
            Ok(md) if md.is_dir() => last = Some(format!("{} is a directory", c.display())),
            Ok(_) => {
                last = Some(format!(
                    "{} is not executable (permission denied)",
                    c.display()
                ))
            }
            Err(e) if last.is_none() => last = Some(e.to_string()),
            Err(_) => {}
        }
    }
    if program.contains('/') {
        bail!(
            "cannot start {shown}: {}",
            last.unwrap_or_else(|| "not found".to_string())
        );
    }
    bail!(
        "cannot start {shown}: not found on the pane's PATH{}",
        last.filter(|l| !l.contains("No such file"))
            .map(|l| format!(" ({l})"))
            .unwrap_or_default()
    )
}
