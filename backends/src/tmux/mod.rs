//! The tmux backend: panes on a tmux server (the default one, or a private
//! socket), created with `split-window`/`new-window`/`new-session … -- ARGV`
//! (no keystrokes, no shell), addressed by `%id`, styled with a per-pane
//! `@swarm_color` read by a window-level border format, and killed with the
//! signal ladder on the pane's process group. Every call goes through
//! [`crate::command::Invocation`] with a timeout; every argv comes from
//! the command files, one per noun: [`panes`], [`sessions`] (and windows),
//! [`layout`], [`options`], on the rules of [`commands`].

pub mod commands;
mod kill;
pub mod layout;
pub mod options;
pub mod panes;
mod place;
mod procs;
pub mod sessions;

use place::rejoin_target;
pub use place::{SplitPlan, plan_split, tiled_fits};

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::Mutex;

use crate::command::{Invocation, Output};
use crate::error::{BackendError, Result};
use crate::process;
use crate::{
    BackendKind, Capabilities, HomeSessions, Layout, PaneBackendExecutor, PaneFocus, PaneId,
    PaneMark, PaneRef, PaneStatus, PaneText, Placement, SpawnSpec,
};
use layout::WindowPane;
use panes::Launch;

/// Builds the commands that finish a new pane (see [`panes::finish_pane`])
/// for a target: `None` is the command list's current pane.
type Finish<'a> = dyn Fn(Option<&str>) -> Result<Vec<Vec<String>>> + Send + Sync + 'a;

/// A spawn's command list failed.
#[derive(Debug)]
enum SplitError {
    /// Before any pane was created: planning again may succeed.
    NotCreated(BackendError),
    /// After (the new pane was killed again), or while preparing it.
    Other(BackendError),
}

impl SplitError {
    fn into_inner(self) -> BackendError {
        match self {
            SplitError::NotCreated(e) | SplitError::Other(e) => e,
        }
    }
}

impl From<BackendError> for SplitError {
    fn from(e: BackendError) -> Self {
        SplitError::Other(e)
    }
}

impl From<SplitError> for BackendError {
    fn from(e: SplitError) -> Self {
        e.into_inner()
    }
}

/// The smallest pane swarm keeps readable; below it a new window is used.
pub const MIN_ROWS: u32 = 8;
pub const MIN_COLS: u32 = 40;
/// The share of the window width the lead keeps.
pub const LEAD_PERCENT: u32 = 35;

/// Which tmux server to talk to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TmuxServer {
    /// `-S PATH`; `None` is the default server (the one `TMUX` names when
    /// inside tmux).
    pub socket: Option<PathBuf>,
    /// `-f FILE` when a new server is started (tests pass `/dev/null`).
    pub config: Option<PathBuf>,
    /// `-L NAME`: a server of its own by name, on a machine where swarm
    /// names no socket path (another host's).
    pub name: Option<String>,
}

impl TmuxServer {
    /// The user's default server.
    pub fn default_server() -> Self {
        Self::default()
    }

    /// A server on its own socket.
    pub fn socket(path: impl Into<PathBuf>) -> Self {
        Self {
            socket: Some(path.into()),
            config: None,
            name: None,
        }
    }

    /// A server of its own named `name` (`-L`), for another host.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            ..Self::default()
        }
    }

    /// The global options before any subcommand.
    pub fn global_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(sock) = &self.socket {
            args.push("-S".to_string());
            args.push(sock.to_string_lossy().into_owned());
        }
        if let Some(name) = &self.name {
            args.push("-L".to_string());
            args.push(name.clone());
        }
        if let Some(cfg) = &self.config {
            args.push("-f".to_string());
            args.push(cfg.to_string_lossy().into_owned());
        }
        args
    }
}

/// The status of `pane` in a `list-panes` listing.
fn row_status(rows: &[panes::PaneRow], pane: &PaneRef) -> PaneStatus {
    match rows.iter().find(|r| r.pane == pane.id) {
        None => PaneStatus::Gone,
        Some(r) if !r.carries(&pane.nonce) => PaneStatus::Foreign,
        Some(r) if r.dead => PaneStatus::Exited {
            code: r.dead_status,
        },
        Some(r) => PaneStatus::Running { pid: Some(r.pid) },
    }
}

#[derive(Debug, Default)]
struct State {
    version: Option<(u32, u32)>,
    /// The lead pane of the last `RightOfLead` spawn (for rebalance and show).
    lead: Option<PaneId>,
    /// The window id (`@N`) teammates overflow into.
    overflow: Option<String>,
    /// That window as the last spawn into it left it (listed in that
    /// spawn's own invocation). Taken by the spawn that uses it.
    overflow_panes: Option<Vec<WindowPane>>,
    /// Hidden panes and the pane they were beside.
    hidden: HashMap<PaneId, PaneId>,
    /// Panes a `RightOfLead` spawn put in the overflow window, with that
    /// window as a user finds it (`window 2`).
    apart: HashMap<PaneId, String>,
    /// The lead's window as the last split left it (listed in that split's
    /// own invocation), so the next split of a burst skips a `list-panes`.
    /// Taken by the split that uses it; a failed split lists afresh.
    window: Option<(PaneId, Vec<WindowPane>)>,
    /// The window of the home session this backend opened: swarm set its
    /// options itself, so a first split there saves none of them.
    home_window: Option<String>,
    /// The session this backend last opened a window in (or its home), and
    /// the index after that window's: the next window there is tried at
    /// that index before the session's windows are listed.
    next_window: Option<(String, u32)>,
    /// Panes that close by themselves when their process ends: listed
    /// running with their nonce by `status_closing_on_exit`, in the call
    /// that released them. Taken back by `keep_on_exit`, forgotten by
    /// `kill_all` and `kill`.
    released: HashMap<PaneId, Released>,
}

/// A pane released to close by itself (see [`State::released`]).
#[derive(Debug, Clone)]
struct Released {
    nonce: String,
    /// Its process, as listed then, and that process's start time (a
    /// recycled pid is never taken for it).
    pid: u32,
    start: Option<String>,
}

impl Released {
    /// The process group of a released pane's process that runs on (it
    /// let go of its terminal: its pane may have closed before it ended).
    /// The pane's first process leads its group.
    fn running_group(&self) -> Option<i32> {
        process::same_process_alive(self.pid, self.start.as_deref())
            .then(|| i32::try_from(self.pid).ok())
            .flatten()
    }
}

/// The tmux backend.
#[derive(Debug)]
pub struct TmuxBackend {
    server: TmuxServer,
    /// The tmux binary, found on `PATH` once (see [`TmuxBackend::new`]).
    program: String,
    timeout: Duration,
    state: Mutex<State>,
    /// The pane processes a listing found running, watched for their
    /// exits once someone listens ([`PaneBackendExecutor::changes`]).
    exits: crate::exits::ExitWatch,
    /// The machine the server runs on: `None` is this one; else every
    /// tmux call, every look at a pane's processes and every signal goes
    /// there over ssh ([`TmuxBackend::on_host`]), and nothing here is read
    /// or signalled for its panes.
    host: Option<crate::host::SshHost>,
}

impl TmuxBackend {
    /// A backend driving `tmux` from `PATH` against `server`. The binary is
    /// looked up once, here: a bare `tmux` made every call walk `PATH`
    /// with one failed `execve` per directory before it (8 on a usual
    /// `PATH`, 120 of an idle lead's 135 `execve` in 10 s). A `tmux` not on
    /// `PATH` stays the bare name, so the first call fails as before.
    pub fn new(server: TmuxServer) -> Self {
        let program = which::which("tmux")
            .ok()
            .and_then(|p| p.into_os_string().into_string().ok())
            .unwrap_or_else(|| "tmux".to_string());
        Self {
            server,
            program,
            timeout: crate::command::DEFAULT_TIMEOUT,
            state: Mutex::new(State::default()),
            exits: crate::exits::ExitWatch::new(),
            host: None,
        }
    }

    /// The same backend driving `program` as its tmux (tests wrap tmux to
    /// see each call it makes).
    pub fn with_program(mut self, program: impl Into<String>) -> Self {
        self.program = program.into();
        self
    }

    /// A backend driving the tmux of another machine (`tmux` on that
    /// host's PATH) against `server` there, through `host` (DESIGN §13).
    /// Pane exits are not events there (a pidfd is of this kernel):
    /// [`Capabilities::exit_events`] is false and callers poll.
    pub fn on_host(server: TmuxServer, host: crate::host::SshHost) -> Self {
        Self {
            server,
            program: "tmux".to_string(),
            timeout: crate::command::DEFAULT_TIMEOUT,
            state: Mutex::new(State::default()),
            exits: crate::exits::ExitWatch::new(),
            host: Some(host),
        }
    }

    /// The machine this backend's panes run on (`None`: this one).
    pub fn host(&self) -> Option<&crate::host::SshHost> {
        self.host.as_ref()
    }

    /// Ends the server (`kill-server`): for a server swarm started for a
    /// team on another host, once its panes are closed. Quiet when there
    /// is none; never the user's server here (refused without a socket or
    /// a name of swarm's own).
    pub async fn kill_server(&self) {
        if self.server.socket.is_none() && self.server.name.is_none() {
            return;
        }
        // Deliberate ignore: a server already gone is the end wanted.
        let _ = self
            .invocation(vec!["kill-server".to_string()])
            .output()
            .await;
    }

    /// A backend that takes `version` as already checked (a version another
    /// swarm process of the team checked and recorded): no `tmux -V` call.
    /// A version below [`commands::MIN_VERSION`] is ignored and checked again.
    pub fn with_known_version(self, version: (u32, u32)) -> Self {
        if version >= commands::MIN_VERSION {
            self.state
                .try_lock()
                .expect("a new backend's state is not shared yet")
                .version = Some(version);
        }
        self
    }

    /// A backend that knows the team's lead pane (from the session record)
    /// before it spawns anything: a lead that re-attached, or a command run
    /// from another process, then rejoins shown panes and rebalances the
    /// lead's window as the spawning process would.
    pub fn with_lead(self, lead: Option<PaneId>) -> Self {
        if lead.is_some() {
            self.state
                .try_lock()
                .expect("a new backend's state is not shared yet")
                .lead = lead;
        }
        self
    }

    /// The server this backend drives.
    pub fn server(&self) -> &TmuxServer {
        &self.server
    }

    fn invocation(&self, args: Vec<String>) -> Invocation {
        let mut all = self.server.global_args();
        all.extend(args);
        if let Some(host) = &self.host {
            all.insert(0, self.program.clone());
            // The host's deadline covers connecting and the call: a host
            // that does not answer costs that, not more.
            return host.invocation(&all);
        }
        let mut inv = Invocation::new(self.program.clone(), all);
        inv.timeout = self.timeout;
        if self.server.socket.is_some() {
            // An explicit socket wins anyway; drop the variables so that no
            // client ever mistakes which server it talks to.
            inv.env_remove = vec!["TMUX".to_string(), "TMUX_PANE".to_string()];
        }
        inv
    }

    /// Runs one subcommand (elements checked) and fails on a non-zero exit.
    async fn tmux(&self, args: Vec<String>) -> Result<Output> {
        self.tmux_chain(vec![args]).await
    }

    /// Runs chained subcommands in one invocation.
    async fn tmux_chain(&self, commands: Vec<Vec<String>>) -> Result<Output> {
        self.invocation(commands::chain(commands)?).run().await
    }

    /// Checks `tmux -V` once: tmux 3.2 or newer.
    pub async fn check_version(&self) -> Result<(u32, u32)> {
        let mut state = self.state.lock().await;
        if let Some(v) = state.version {
            return Ok(v);
        }
        let version = match &self.host {
            Some(host) => {
                let mut argv = vec![self.program.clone()];
                argv.extend(commands::version());
                host.invocation(&argv)
            }
            None => Invocation::new(self.program.clone(), commands::version()),
        };
        let out = version.run().await.map_err(|e| match e {
            BackendError::Launch { .. } => BackendError::Unavailable {
                backend: BackendKind::Tmux,
                reason: format!("tmux is not installed or not runnable: {e}"),
            },
            other => other,
        })?;
        let v = commands::parse_version(&out.stdout)?;
        if v < commands::MIN_VERSION {
            return Err(BackendError::TmuxTooOld {
                found: out.stdout.trim().to_string(),
                needed: "3.2",
            });
        }
        state.version = Some(v);
        Ok(v)
    }

    /// Opens a pane like [`PaneBackendExecutor::spawn`]: one `tmux` call
    /// creates, marks, pipes (to `spec.output`, from its first byte),
    /// titles and colours the pane; then the ready file is created.
    async fn spawn_marked(&self, spec: &SpawnSpec) -> Result<PaneRef> {
        match &self.host {
            None => spec.validate()?,
            Some(host) => {
                spec.validate_text()?;
                if !host.is_dir(&spec.cwd).await? {
                    return Err(BackendError::invalid(
                        "working directory",
                        &spec.cwd.display().to_string(),
                        format!("is not an existing directory on {}", host.name),
                    ));
                }
            }
        }
        self.check_version().await?;
        let launch = Launch::of(spec);
        let output = spec.output.as_deref();
        let finish = |target: Option<&str>| {
            panes::finish_pane(
                target,
                &spec.mark,
                &spec.title,
                spec.color.as_deref(),
                output,
            )
        };
        let pane = match &spec.placement {
            Placement::RightOfLead { lead } => self.spawn_beside(lead, &launch, &finish).await?,
            Placement::NewWindow {
                session: Some(session),
            } => self.spawn_window(session, &launch, &finish).await?,
            Placement::NewWindow { session: None } => {
                return Err(BackendError::invalid(
                    "placement",
                    "NewWindow without a session",
                    "the tmux backend needs the session to open a window in",
                ));
            }
            Placement::Session { name } => {
                if self.home_exists(name).await? {
                    return Err(BackendError::invalid(
                        "tmux session",
                        name,
                        "already exists on this server",
                    ));
                }
                let target = commands::window_target(name, None)?;
                let mut cmds = vec![
                    sessions::new_session(name, &launch)?,
                    sessions::mark_session(name, &spec.mark.nonce)?,
                    options::set_window_remain_on_exit(&target, true),
                    options::border_status_top(Some(&target)),
                ];
                cmds.extend(finish(Some(&target))?);
                self.run_spawn(cmds).await?.0
            }
        };
        match (&self.host, &spec.ready_file) {
            (Some(host), Some(file)) => host.create_private_file(file).await?,
            _ => spec.signal_ready()?,
        }
        Ok(PaneRef::new(pane, spec.mark.nonce.clone()))
    }

    /// Creates the ready file of each spec whose pane `panes` names (same
    /// order), pushing each pane to `out`; on the first that cannot be
    /// created, its error, and the panes from there on are closed (nothing
    /// would start them). True when one failed.
    async fn signal_all(
        &self,
        specs: &[SpawnSpec],
        panes: &[PaneId],
        out: &mut Vec<Result<PaneRef>>,
    ) -> bool {
        for (i, (spec, pane)) in specs.iter().zip(panes).enumerate() {
            if let Err(e) = spec.signal_ready() {
                let kills: Result<Vec<_>> = panes[i..].iter().map(panes::kill_pane).collect();
                if let Ok(chain) = kills.and_then(commands::chain) {
                    // The ready file's error is the one reported.
                    let _ = self.invocation(chain).output().await;
                }
                out.push(Err(e));
                return true;
            }
            out.push(Ok(PaneRef::new(pane.clone(), spec.mark.nonce.clone())));
        }
        false
    }

    /// The row of `pane` if it carries `nonce`; `Ok(None)` when the pane is
    /// gone; [`BackendError::NotOurs`] when a pane with that id lacks it.
    async fn own_row(&self, pane: &PaneRef) -> Result<Option<panes::PaneRow>> {
        commands::check_pane_id(&pane.id)?;
        let rows = self.rows().await?;
        match rows.into_iter().find(|r| r.pane == pane.id) {
            None => Ok(None),
            Some(r) if r.carries(&pane.nonce) => Ok(Some(r)),
            Some(_) => Err(BackendError::NotOurs {
                pane: pane.id.clone(),
            }),
        }
    }

    /// Runs a command list whose first command prints a new pane's id, and
    /// returns that id and what the list printed after it. If a later
    /// command fails, the new pane is killed: nothing half-made stays.
    async fn run_spawn(
        &self,
        cmds: Vec<Vec<String>>,
    ) -> std::result::Result<(PaneId, String), SplitError> {
        let inv = self.invocation(commands::chain(cmds)?);
        let out = inv.output().await?;
        let pane = commands::parse_pane_id(&out.stdout);
        if !out.success() {
            let Ok(pane) = pane else {
                return Err(SplitError::NotCreated(inv.failed(&out)));
            };
            let kill = commands::chain(vec![panes::kill_pane(&pane)?])?;
            // Deliberate ignore (swarm's `logging::ignore` is out of this
            // crate's reach): the split's own failure is the error reported.
            let _ = self.invocation(kill).output().await;
            return Err(SplitError::Other(inv.failed(&out)));
        }
        let rest = out.stdout.split_once('\n').map_or("", |(_, r)| r);
        Ok((pane?, rest.to_string()))
    }

    /// True when the server has a session with exactly this name. The
    /// same call asks a running server its version, which then spares the
    /// `tmux -V` of [`TmuxBackend::check_version`] (a client of its own);
    /// an older one is left for that check to refuse.
    async fn session_exists(&self, name: &str) -> Result<bool> {
        let out = self
            .invocation(commands::chain(vec![
                commands::server_version(),
                sessions::has_session(name)?,
            ])?)
            .output()
            .await?;
        let first = out.stdout.lines().next().unwrap_or_default();
        if let Ok(v) = commands::parse_version(first)
            && v >= commands::MIN_VERSION
        {
            self.state.lock().await.version.get_or_insert(v);
        }
        Ok(out.success())
    }

    /// Each pane's status in `rows` (a listing just made), the pidfds of
    /// those running noted for [`PaneBackendExecutor::changes`].
    async fn status_of(
        &self,
        panes: &[PaneRef],
        mut rows: Vec<panes::PaneRow>,
    ) -> Result<Vec<(PaneId, PaneStatus)>> {
        // A pane process that has ended but was not reaped when the panes
        // were listed: the row is read again once it is, so the pane shows
        // what happened, with its exit code. Two cases:
        // - dead without a status: tmux closes a pane when its pty ends and
        //   reads the status only when it reaps the process, a moment
        //   later (a listing between the two read "killed by a signal" for
        //   an `exit 3`). Read after the process is gone, a dead pane
        //   without a status was killed by a signal;
        // - listed as running while an unreaped zombie: tmux missed its
        //   SIGCHLD (see `reap_lost_child`).
        // The wait has a deadline: a process that ignores the hang-up and
        // lives on past its pane's end reads dead without a status.
        // (On another host its processes are not read on every listing:
        // a pane whose process is gone shows once the server reaps it.)
        let unsettled: Vec<u32> = rows
            .iter()
            .filter(|r| {
                self.host.is_none()
                    && panes.iter().any(|p| p.id == r.pane && r.carries(&p.nonce))
                    && if r.dead {
                        r.dead_status.is_none()
                    } else {
                        process::is_zombie(r.pid) == Some(true)
                    }
            })
            .map(|r| r.pid)
            .collect();
        if !unsettled.is_empty() {
            self.reap_lost_children(&unsettled).await;
            let deadline = tokio::time::Instant::now() + SETTLED_WITHIN;
            for &pid in &unsettled {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                self.await_ended(pid, left).await;
            }
            rows = self.rows().await?;
        }
        let status: Vec<(PaneId, PaneStatus)> = panes
            .iter()
            .map(|pane| (pane.id.clone(), row_status(&rows, pane)))
            .collect();
        let running: Vec<u32> = status
            .iter()
            .filter_map(|(_, s)| match s {
                PaneStatus::Running { pid } => *pid,
                _ => None,
            })
            .collect();
        if self.host.is_none() {
            // A pidfd names a process of this kernel only.
            self.exits.note(&running);
        }
        Ok(status)
    }

    /// Every pane row on the server; an absent server, or one with no
    /// session left (it is exiting, or kept with `exit-empty off`), has no
    /// panes.
    async fn rows(&self) -> Result<Vec<panes::PaneRow>> {
        let inv = self.invocation(commands::chain(vec![panes::list_panes_all()])?);
        let out = inv.output().await?;
        if out.success() {
            panes::parse_pane_rows(&out.stdout)
        } else if commands::is_no_server(&out.stderr) || commands::is_no_sessions(&out.stderr) {
            Ok(Vec::new())
        } else {
            Err(inv.failed(&out))
        }
    }

    /// The pane process's group id once it leads its own group. tmux's child
    /// calls `setsid` just after the fork, so right after a split the pid may
    /// not lead a group yet: wait for it (never signal a group we do not own).
    /// `None` when the process is already gone.
    async fn group_leader(&self, pane: &PaneId, pid: u32) -> Result<Option<i32>> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
        loop {
            match self.group_of(pid).await? {
                None => return Ok(None),
                Some(pgid) if pgid as u32 == pid => return Ok(Some(pgid)),
                Some(pgid) if tokio::time::Instant::now() >= deadline => {
                    return Err(BackendError::KillFailed {
                        pane: pane.clone(),
                        reason: format!(
                            "pid {pid} does not lead its process group (group {pgid}); \
                             refusing to signal a group it does not own"
                        ),
                    });
                }
                Some(_) => tokio::time::sleep(self.poll()).await,
            }
        }
    }

    /// tmux 3.3a can miss the SIGCHLD of a pane process that dies just after
    /// the split (seen here about one kill in three when the kill follows the
    /// spawn at once): the process stays a zombie, keeping its process group
    /// alive, until the server's next SIGCHLD. `run-shell true` makes the
    /// server fork and wait, and its wait loop reaps every zombie.
    async fn reap_lost_child(&self, pid: u32) -> Poke {
        self.reap_lost_children(&[pid]).await
    }

    /// [`Self::reap_lost_child`] for several processes with one poke at
    /// most: the server's wait loop reaps every zombie it has, so one
    /// `run-shell true` serves all of them. A poke is a tmux client and a
    /// shell the server forks: one per zombie made a `down` of 8, whose
    /// runtimes had just ended, wait 12-15 ms on 3 or 4 of them in a row.
    async fn reap_lost_children(&self, pids: &[u32]) -> Poke {
        let mut poke = false;
        for &pid in pids {
            poke = match &self.host {
                None => process::is_zombie(pid).unwrap_or_else(|| process::process_alive(pid)),
                // There, a process is read once; a zombie is the case to poke.
                Some(_) => self.zombie(pid).await == Some(true),
            };
            if poke {
                break;
            }
        }
        if !poke {
            return Poke::NotNeeded;
        }
        let args = vec!["run-shell".to_string(), "true".to_string()];
        let Ok(args) = commands::chain(vec![args]) else {
            return Poke::Made;
        };
        match self.invocation(args).output().await {
            Ok(out) if !out.success() && commands::is_no_server(&out.stderr) => Poke::NoServer,
            // Otherwise a poke, answered or not: the caller checks what is left.
            _ => Poke::Made,
        }
    }

    /// Waits until `pane` is off the server and `pid` is dead.
    async fn verify_gone(&self, pane: &PaneId, pid: u32) -> Result<()> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        loop {
            self.reap_lost_child(pid).await;
            let listed = self.rows().await?.iter().any(|r| &r.pane == pane);
            let alive = self.alive(pid).await;
            if !listed && !alive {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::KillFailed {
                    pane: pane.clone(),
                    reason: format!(
                        "after the ladder: pane listed={listed}, pid {pid} alive={alive} ({})",
                        self.describe(pid).await
                    ),
                });
            }
            tokio::time::sleep(self.poll()).await;
        }
    }
}

/// What [`TmuxBackend::reap_lost_children`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Poke {
    /// No process asked about was a zombie.
    NotNeeded,
    /// The server was made to reap (or the call failed some other way).
    Made,
    /// There is no server on the socket: none of its zombies will ever be
    /// reaped by tmux.
    NoServer,
}

/// True once `pid`, a pane process, has been reaped by the server: at once
/// when it is gone, by `deadline` when it has just ended (a zombie; a
/// server that missed its end is not made to reap it here).
async fn reaped_by(pid: u32, deadline: tokio::time::Instant) -> bool {
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    !process::process_alive(pid)
        || (process::is_zombie(pid) == Some(true) && reaped_within(pid, left).await)
}

/// How long [`TmuxBackend::status`] waits for the processes of panes
/// listed dead without a status to be reaped (their statuses are then
/// read); a process ends within a few ms of its pty's end, as a rule.
const SETTLED_WITHIN: Duration = Duration::from_millis(500);

/// How long an ended pane process is given to be reaped by the server's
/// own SIGCHLD handling before the server is made to reap it.
const REAPED_WITHIN: Duration = Duration::from_millis(5);

/// True once `pid` is reaped (no longer a process), checked every
/// millisecond for at most `within`.
async fn reaped_within(pid: u32, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if !process::process_alive(pid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[async_trait::async_trait]
impl PaneBackendExecutor for TmuxBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Tmux
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            panes_outlive_lead: true,
            exact_env: true,
            exit_codes: true,
            exit_events: self.host.is_none() && crate::exits::available(),
            list_marked: true,
            output_file: true,
        }
    }

    fn pane_focus(&self) -> Option<&dyn PaneFocus> {
        Some(self)
    }

    fn pane_text(&self) -> Option<&dyn PaneText> {
        Some(self)
    }

    fn layout(&self) -> Option<&dyn Layout> {
        Some(self)
    }

    fn homes(&self) -> Option<&dyn HomeSessions> {
        Some(self)
    }

    async fn spawn(&self, spec: &SpawnSpec) -> Result<PaneRef> {
        self.spawn_marked(spec).await
    }

    /// Specs placed beside the same lead go into its column with one tmux
    /// call (`TmuxBackend::spawn_column`: an `up` of 8 opened 8 panes
    /// with 8 clients), then into overflow windows with one call each
    /// (`TmuxBackend::spawn_overflow_window`); what does not go there,
    /// and any other spec, opens one by one.
    async fn spawn_many(&self, specs: &[SpawnSpec]) -> Vec<Result<PaneRef>> {
        let mut out = Vec::with_capacity(specs.len());
        let mut at = 0;
        // The lead's column first (once), then overflow windows while
        // they take two or more; what they do not take opens one by one.
        let (mut column_tried, mut windows_done) = (false, false);
        while at < specs.len() {
            if !windows_done
                && self.host.is_none()
                && let Placement::RightOfLead { lead } = &specs[at].placement
            {
                let run = specs[at..]
                    .iter()
                    .take_while(
                        |s| matches!(&s.placement, Placement::RightOfLead { lead: l } if l == lead),
                    )
                    .count();
                let some = &specs[at..at + run];
                let column = !column_tried;
                column_tried = true;
                let opened = match (run >= 2 && self.check_version().await.is_ok(), column) {
                    (false, _) => Ok(Vec::new()),
                    (true, true) => self.spawn_column(lead, some).await,
                    (true, false) => self.spawn_overflow_window(lead, some).await,
                };
                // Nothing opened, or a failure (every pane of it closed):
                // one by one, which reports each spec's own error.
                if let Ok(panes) = opened
                    && !panes.is_empty()
                {
                    let n = panes.len();
                    let failed = self.signal_all(&specs[at..at + n], &panes, &mut out).await;
                    if failed {
                        return out;
                    }
                    at += n;
                    continue;
                }
                if column {
                    // The column took none: the overflow windows next.
                    continue;
                }
                windows_done = true;
            }
            let opened = self.spawn(&specs[at]).await;
            let failed = opened.is_err();
            out.push(opened);
            if failed {
                break;
            }
            at += 1;
        }
        out
    }

    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let rows = self.rows().await?;
        self.status_of(panes, rows).await
    }

    /// One call: the listing, then, for each pane, `remain-on-exit off`
    /// if it still carries its nonce and runs (see
    /// [`options::remain_on_exit_if_ours`]). A pane with a nonce tmux
    /// cannot be asked about safely is only listed.
    async fn status_closing_on_exit(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let mut cmds = vec![panes::list_panes_all()];
        let mut released = Vec::new();
        for p in panes {
            if let Ok(cmd) = options::remain_on_exit_if_ours(&p.id, &p.nonce, false) {
                cmds.push(cmd);
                released.push(p.id.clone());
            }
        }
        let inv = self.invocation(commands::chain(cmds)?);
        let out = inv.output().await?;
        let rows = if out.success() {
            panes::parse_pane_rows(&out.stdout)?
        } else if commands::is_no_server(&out.stderr) || commands::is_no_sessions(&out.stderr) {
            Vec::new()
        } else {
            // Closing on exit saves a kill later and is not worth failing
            // for: the panes are listed on their own, and closed as before
            // (`status` reports a listing that fails).
            return self.status(panes).await;
        };
        if self.host.is_none() {
            let mut state = self.state.lock().await;
            for p in panes.iter().filter(|p| released.contains(&p.id)) {
                if let Some(r) = rows
                    .iter()
                    .find(|r| r.pane == p.id && !r.dead && r.carries(&p.nonce))
                {
                    let released = Released {
                        nonce: p.nonce.clone(),
                        pid: r.pid,
                        start: process::start_time(r.pid),
                    };
                    state.released.insert(p.id.clone(), released);
                }
            }
        }
        self.status_of(panes, rows).await
    }

    async fn keep_on_exit(&self, panes: &[PaneRef]) -> Result<()> {
        {
            let mut state = self.state.lock().await;
            for p in panes {
                state.released.remove(&p.id);
            }
        }
        let cmds: Vec<Vec<String>> = panes
            .iter()
            .filter_map(|p| options::remain_on_exit_if_ours(&p.id, &p.nonce, true).ok())
            .collect();
        if cmds.is_empty() {
            return Ok(());
        }
        let inv = self.invocation(commands::chain(cmds)?);
        let out = inv.output().await?;
        if out.success() || commands::is_no_server(&out.stderr) {
            Ok(())
        } else {
            Err(inv.failed(&out))
        }
    }

    /// When a pane process this backend found running (in a
    /// [`status`](PaneBackendExecutor::status) answer) has exited: a pidfd
    /// per process ([`crate::exits`]), so a teammate that ends, or whose
    /// pane the user kills (its process gets SIGHUP), is an event. Where
    /// the kernel has no pidfds, `exit_events` is false and this never
    /// resolves. What no process exit shows (a restarted server, a pid
    /// reused before it was watched, a pane whose process survives its
    /// closing) is left to the caller's slow safety check.
    async fn changes(&self) {
        if self.host.is_none() && crate::exits::available() {
            self.exits.changes().await
        } else {
            std::future::pending::<()>().await
        }
    }

    async fn observe(&self, panes: &[PaneId]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let rows = self.rows().await?;
        Ok(panes
            .iter()
            .map(|id| {
                let status = match rows.iter().find(|r| &r.pane == id) {
                    None => PaneStatus::Gone,
                    Some(r) if r.dead => PaneStatus::Exited {
                        code: r.dead_status,
                    },
                    Some(r) => PaneStatus::Running { pid: Some(r.pid) },
                };
                (id.clone(), status)
            })
            .collect())
    }

    async fn list_marked(&self) -> Result<Vec<(PaneRef, PaneMark, PaneStatus)>> {
        let rows = self.rows().await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let mark = r.mark.clone()?;
                let pane = PaneRef::new(r.pane.clone(), mark.nonce.clone());
                let status = row_status(&rows, &pane);
                Some((pane, mark, status))
            })
            .collect())
    }

    async fn kill(&self, pane: &PaneRef, grace: Duration) -> Result<()> {
        let released = self.state.lock().await.released.remove(&pane.id);
        let Some(row) = self.own_row(pane).await? else {
            // Released, and closed while its process runs on: no pane to
            // close, and that process's group gets the ladder (as in
            // `kill_all`).
            let outlived = released
                .filter(|r| self.host.is_none() && r.nonce == pane.nonce)
                .and_then(|r| Some((r.running_group()?, r.pid)));
            if let Some((pgid, pid)) = outlived
                && let Some(Err(reason)) = self.ladder(&[pgid], &[pid], grace).await.pop()
            {
                return Err(BackendError::KillFailed {
                    pane: pane.id.clone(),
                    reason,
                });
            }
            return Ok(());
        };
        let pane = &pane.id;
        let pgid = if row.dead {
            // The pane's process is gone, but what it started may still run in
            // its group (the id stays reserved while the group has members).
            let pgid = row.pid as i32;
            self.group_alive(pgid).await.then_some(pgid)
        } else {
            self.group_leader(pane, row.pid).await?
        };
        if let Some(pgid) = pgid {
            let ladder = self.ladder(&[pgid], &[row.pid], grace).await;
            if let Some(Err(reason)) = ladder.into_iter().next() {
                return Err(BackendError::KillFailed {
                    pane: pane.clone(),
                    reason: format!("{reason} ({})", self.describe(row.pid).await),
                });
            }
        }
        let sibling = self.column_sibling(pane).await;
        let inv = self.invocation(commands::chain(vec![panes::kill_pane(pane)?])?);
        let out = inv.output().await?;
        if !out.success()
            && !commands::is_missing_target(&out.stderr)
            && !commands::is_no_server(&out.stderr)
        {
            return Err(inv.failed(&out));
        }
        self.state.lock().await.hidden.remove(pane);
        self.verify_gone(pane, row.pid).await?;
        self.even_out(sibling).await;
        Ok(())
    }

    /// One ladder for all: one listing, every group signalled together,
    /// one `kill-pane` chain, one verification (a `down` of 32 panes was
    /// 32 sequential ladders, each listing the server three times).
    /// A pane released at its status (see `status_closing_on_exit`) whose
    /// process the server has reaped closed by itself (or closes once its
    /// output is piped out): it is not listed again (a `down` of 8 waited
    /// 11-24 ms here for a listing behind a server busy with the panes that
    /// had just ended), and what is left in its process group gets the
    /// ladder. The others are listed and killed as one; a released pane
    /// that closed while its process runs on (it let go of its terminal)
    /// is not found there, and its group gets the ladder too.
    async fn kill_all(&self, panes: &[PaneRef], grace: Duration) -> Vec<Result<()>> {
        let released: Vec<Option<Released>> = {
            let mut state = self.state.lock().await;
            panes.iter().map(|p| state.released.remove(&p.id)).collect()
        };
        let mut out: Vec<Option<Result<()>>> = panes.iter().map(|_| None).collect();
        let mut groups: Vec<(usize, i32, u32)> = Vec::new();
        let mut rest: Vec<usize> = Vec::new();
        // Released panes whose process had not ended: (index, its record).
        let mut running: Vec<(usize, Released)> = Vec::new();
        // One wait for all: the server reaps every ended pane process in
        // one pass of its own.
        let reaped = tokio::time::Instant::now() + REAPED_WITHIN;
        for (i, (p, r)) in panes.iter().zip(released).enumerate() {
            let Some(r) = r.filter(|r| self.host.is_none() && r.nonce == p.nonce) else {
                rest.push(i);
                continue;
            };
            if !reaped_by(r.pid, reaped).await {
                running.push((i, r));
                rest.push(i);
                continue;
            }
            match i32::try_from(r.pid)
                .ok()
                .filter(|g| process::group_alive(*g))
            {
                Some(pgid) => groups.push((i, pgid, r.pid)),
                None => out[i] = Some(Ok(())),
            }
        }
        if !rest.is_empty() {
            let rows = self.rows().await;
            if let Ok(rows) = &rows {
                // Closed, its process running on: no pane left to close,
                // and its group gets the ladder with the others.
                for (i, r) in &running {
                    if !rows.iter().any(|row| row.pane == panes[*i].id)
                        && let Some(pgid) = r.running_group()
                    {
                        groups.push((*i, pgid, r.pid));
                        rest.retain(|j| j != i);
                    }
                }
            }
            let listed: Vec<PaneRef> = rest.iter().map(|&i| panes[i].clone()).collect();
            let killed = match rows {
                _ if listed.is_empty() => Vec::new(),
                Ok(rows) => self.kill_listed(&listed, &rows, grace).await,
                Err(_) => {
                    // Listing failed: each pane on its own, with its own error.
                    let mut each = Vec::new();
                    for p in &listed {
                        each.push(self.kill(p, grace).await);
                    }
                    each
                }
            };
            for (i, r) in rest.into_iter().zip(killed) {
                out[i] = Some(r);
            }
        }
        if !groups.is_empty() {
            let pgids: Vec<i32> = groups.iter().map(|(_, g, _)| *g).collect();
            let pids: Vec<u32> = groups.iter().map(|(_, _, p)| *p).collect();
            for ((i, _, _), ladder) in groups.iter().zip(self.ladder(&pgids, &pids, grace).await) {
                out[*i] = Some(ladder.map(drop).map_err(|reason| BackendError::KillFailed {
                    pane: panes[*i].id.clone(),
                    reason,
                }));
            }
        }
        out.into_iter().map(|r| r.unwrap_or(Ok(()))).collect()
    }

    /// The end of a running `pid` is an event (its pidfd, see
    /// [`crate::exits::exited_within`]), not a 20 ms poll: `down` waits
    /// here for the lead it stopped. Once it has ended, the server reaps
    /// it at its SIGCHLD; if it is still a zombie a moment later, the
    /// server missed that and is made to reap it (`reap_lost_child`). A
    /// zombie whose server is gone has ended: no server is left to make
    /// reap it, and whoever adopted it may take its time (a `swarm down`
    /// whose team's own server exited with the lead's pane waited out
    /// its 2 s there, poking a server that was not there).
    async fn await_ended(&self, pid: u32, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        if self.host.is_some() {
            while self.alive(pid).await && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(self.poll()).await;
            }
            return;
        }
        while process::process_alive(pid) && tokio::time::Instant::now() < deadline {
            if process::is_zombie(pid) != Some(true) {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                if crate::exits::exited_within(pid, left).await == Some(true) {
                    if reaped_within(pid, REAPED_WITHIN).await {
                        return;
                    }
                } else {
                    // No pidfd here, or the deadline: as before, a poll.
                    tokio::time::sleep(process::POLL.min(left)).await;
                    continue;
                }
            }
            if self.reap_lost_child(pid).await == Poke::NoServer {
                // Its server is gone (the lead's pane was its last): the
                // process was left to whatever adopted it, which may never
                // reap it (a container's init): ended, as far as tmux goes.
                return;
            }
            // Reaped at once after the poke, as a rule: no fixed pause.
            reaped_within(pid, process::POLL).await;
        }
    }

    async fn checked_version(&self) -> Option<(u32, u32)> {
        self.state.lock().await.version
    }
}

#[async_trait::async_trait]
impl PaneFocus for TmuxBackend {
    async fn focus(&self, pane: &PaneId) -> Result<()> {
        self.tmux_chain(panes::focus(pane)?).await.map(drop)
    }
}

#[async_trait::async_trait]
impl PaneText for TmuxBackend {
    async fn capture(&self, pane: &PaneId) -> Result<String> {
        Ok(self.tmux(panes::capture_pane(pane, false)?).await?.stdout)
    }
}

#[async_trait::async_trait]
impl Layout for TmuxBackend {
    async fn hide(&self, pane: &PaneRef) -> Result<()> {
        if self.own_row(pane).await?.is_none() {
            return Err(BackendError::UnknownPane {
                backend: BackendKind::Tmux,
                pane: pane.id.clone(),
            });
        }
        let pane = &pane.id;
        let window = self.window_of(pane).await?;
        let beside = rejoin_target(&window, pane);
        self.tmux(sessions::break_pane(pane)?).await?;
        self.forget_layouts().await;
        if let Some(beside) = beside {
            self.state.lock().await.hidden.insert(pane.clone(), beside);
        }
        Ok(())
    }

    async fn show(&self, pane: &PaneRef) -> Result<()> {
        if self.own_row(pane).await?.is_none() {
            return Err(BackendError::UnknownPane {
                backend: BackendKind::Tmux,
                pane: pane.id.clone(),
            });
        }
        let pane = &pane.id;
        let target = {
            let state = self.state.lock().await;
            state
                .hidden
                .get(pane)
                .cloned()
                .or_else(|| state.lead.clone())
        };
        let Some(target) = target else {
            return Err(BackendError::invalid(
                "pane",
                pane.as_str(),
                "was not hidden by this backend and no lead pane is known",
            ));
        };
        // The first pane of a window is its main one (the lead): a pane
        // rejoining it goes to its right, into the teammates' column.
        let main = self
            .window_of(&target)
            .await?
            .first()
            .map(|p| p.pane.clone());
        let join = if main.as_ref() == Some(&target) {
            sessions::join_pane_right(pane, &target)?
        } else {
            sessions::join_pane(pane, &target)?
        };
        self.tmux(join).await?;
        self.forget_layouts().await;
        self.state.lock().await.hidden.remove(pane);
        if self.state.lock().await.lead.is_some() {
            return self.rebalance().await;
        }
        self.tmux(layout::select_layout_even(pane)?).await.map(drop)
    }

    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()> {
        self.tmux(options::set_title(pane, title)?).await.map(drop)
    }

    async fn set_color(&self, pane: &PaneId, color: &str) -> Result<()> {
        if !crate::PALETTE.contains(&color) {
            return Err(BackendError::invalid("colour", color, "not a palette name"));
        }
        self.tmux(options::set_color(pane, color)?).await.map(drop)
    }

    async fn rebalance(&self) -> Result<()> {
        let Some(lead) = self.state.lock().await.lead.clone() else {
            return Ok(());
        };
        let window = self.window_of(&lead).await?;
        let Some(row) = window.first() else {
            return Ok(());
        };
        if window.len() < 2 {
            return Ok(());
        }
        self.tmux_chain(vec![
            layout::select_layout(&row.window_id, "main-vertical"),
            layout::resize_pane_width(&lead, row.window_width * LEAD_PERCENT / 100)?,
        ])
        .await
        .map(drop)
    }

    async fn restore_host(&self, host: &PaneId) -> Result<()> {
        let inv = self.invocation(commands::chain(vec![options::show_window_options(host)?])?);
        let out = inv.output().await?;
        if !out.success() {
            // The pane or the server is gone: nothing left to put back.
            if commands::is_missing_target(&out.stderr) || commands::is_no_server(&out.stderr) {
                return Ok(());
            }
            return Err(inv.failed(&out));
        }
        let cmds = options::restore_window(host, &out.stdout)?;
        if cmds.is_empty() {
            return Ok(());
        }
        self.tmux_chain(cmds).await.map(drop)
    }

    async fn placed_apart(&self, pane: &PaneId) -> Option<String> {
        self.state.lock().await.apart.get(pane).cloned()
    }
}

#[async_trait::async_trait]
impl HomeSessions for TmuxBackend {
    async fn home_exists(&self, name: &str) -> Result<bool> {
        self.session_exists(name).await
    }

    /// The lead's pane closes when the lead exits (`remain-on-exit off` on
    /// that pane); teammate panes of its window stay (dead) so their exit
    /// codes can be read.
    async fn open_home(&self, name: &str, lead: &SpawnSpec) -> Result<PaneRef> {
        self.check_version().await?;
        lead.validate()?;
        let launch = Launch::of(lead);
        let target = commands::window_target(name, None)?;
        let mut cmds = vec![
            sessions::new_session(name, &launch)?,
            sessions::mark_session(name, &lead.mark.nonce)?,
            options::set_window_remain_on_exit(&target, true),
            options::border_status_top(Some(&target)),
        ];
        cmds.extend(panes::finish_pane(
            Some(&target),
            &lead.mark,
            &lead.title,
            lead.color.as_deref(),
            lead.output.as_deref(),
        )?);
        // The pane target "=name:" is the session's only pane: the lead.
        cmds.push(
            ["set-option", "-p", "-t", &target, "remain-on-exit", "off"]
                .map(String::from)
                .to_vec(),
        );
        // The window as it is made, for the first split beside the lead.
        cmds.push(layout::list_panes_window(&target));
        let (pane, rest) = self.run_spawn(cmds).await?;
        if let Ok(window) = layout::parse_window_panes(&rest)
            && let Some(row) = window.iter().find(|p| p.pane == pane)
        {
            let mut state = self.state.lock().await;
            state.home_window = Some(row.window_id.clone());
            state.next_window = Some((name.to_string(), row.window_index + 1));
            state.window = Some((pane.clone(), window));
        }
        lead.signal_ready()?;
        Ok(PaneRef::new(pane, lead.mark.nonce.clone()))
    }

    async fn close_home(&self, name: &str, nonce: &str) -> Result<()> {
        // `has-session` first in the same call: `show-options -q` answers ""
        // for a missing session too, and the chain stops at a missing one.
        let inv = self.invocation(commands::chain(vec![
            sessions::has_session(name)?,
            sessions::session_mark(name)?,
        ])?);
        let out = inv.output().await?;
        if !out.success() {
            if commands::is_missing_target(&out.stderr) || commands::is_no_server(&out.stderr) {
                return Ok(());
            }
            return Err(inv.failed(&out));
        }
        if nonce.is_empty() || out.stdout.trim() != nonce {
            return Err(BackendError::invalid(
                "tmux session",
                name,
                "does not carry swarm's mark for this team (not created by it); left untouched",
            ));
        }
        let inv = self.invocation(commands::chain(vec![sessions::kill_session(name)?])?);
        let out = inv.output().await?;
        if out.success()
            || commands::is_missing_target(&out.stderr)
            || commands::is_no_server(&out.stderr)
        {
            Ok(())
        } else {
            Err(inv.failed(&out))
        }
    }

    fn attach_argv(&self, session: &str) -> Result<Vec<String>> {
        let mut argv = vec![self.program.clone()];
        argv.extend(self.server.global_args());
        argv.extend(commands::chain(vec![sessions::attach_session(session)?])?);
        Ok(argv)
    }

    async fn detach(&self, session: &str, client_pid: u32) -> Result<bool> {
        let inv = self.invocation(commands::chain(vec![sessions::list_clients(session)?])?);
        let out = inv.output().await?;
        if !out.success() {
            if commands::is_missing_target(&out.stderr) || commands::is_no_server(&out.stderr) {
                return Ok(false);
            }
            return Err(inv.failed(&out));
        }
        let Some(client) = sessions::client_of_pid(&out.stdout, client_pid) else {
            return Ok(false);
        };
        self.tmux_chain(vec![sessions::detach_client(&client)])
            .await
            .map(|_| true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use layout::parse_window_panes;

    #[test]
    fn a_hidden_pane_rejoins_its_column_not_the_lead() {
        let pane = |id: &str| WindowPane {
            pane: PaneId::new(id),
            width: 10,
            height: 10,
            window_id: "@1".into(),
            window_width: 100,
            window_height: 40,
            window_index: 0,
            session: "s".into(),
        };
        let window = [pane("%0"), pane("%1"), pane("%2")];
        assert_eq!(
            rejoin_target(&window, &PaneId::new("%1")),
            Some(PaneId::new("%2"))
        );
        assert_eq!(
            rejoin_target(&window, &PaneId::new("%2")),
            Some(PaneId::new("%1"))
        );
        assert_eq!(
            rejoin_target(&window[..2], &PaneId::new("%1")),
            Some(PaneId::new("%0")),
            "alone beside the lead: back beside the lead"
        );
        assert_eq!(rejoin_target(&window[..1], &PaneId::new("%0")), None);
    }

    #[test]
    fn a_lone_lead_is_split_side_by_side() {
        let w = parse_window_panes("%0 200 50 @0 200 50 0 s\n").unwrap();
        assert_eq!(plan_split(&w, &PaneId::new("%0")), SplitPlan::First);
    }

    #[test]
    fn later_teammates_stack_in_the_right_column() {
        let w = parse_window_panes(
            "%0 70 50 @0 200 50 0 s\n%1 129 24 @0 200 50 0 s\n%2 129 25 @0 200 50 0 s\n",
        )
        .unwrap();
        assert_eq!(
            plan_split(&w, &PaneId::new("%0")),
            SplitPlan::Column {
                below: PaneId::new("%2")
            }
        );
    }

    #[test]
    fn small_windows_overflow() {
        // 80x24: a third teammate would get 6 rows.
        let w = parse_window_panes(
            "%0 27 24 @0 80 24 0 s\n%1 52 11 @0 80 24 0 s\n%2 52 12 @0 80 24 0 s\n",
        )
        .unwrap();
        assert_eq!(plan_split(&w, &PaneId::new("%0")), SplitPlan::Overflow);
        // Too narrow for a 40-column right column.
        let narrow = parse_window_panes("%0 60 50 @0 60 50 0 s\n").unwrap();
        assert_eq!(plan_split(&narrow, &PaneId::new("%0")), SplitPlan::Overflow);
    }

    #[test]
    fn tiled_overflow_windows_fill_up() {
        assert!(tiled_fits(200, 50, 1));
        assert!(tiled_fits(200, 50, 3));
        assert!(!tiled_fits(80, 24, 4));
    }

    #[tokio::test]
    async fn a_recorded_version_spares_the_tmux_v_call_unless_too_old() {
        let missing = |v| {
            let mut b = TmuxBackend::new(TmuxServer::socket("/nonexistent/sock"));
            b.program = "/nonexistent/swarm-no-such-tmux".to_string();
            b.with_known_version(v)
        };
        // No tmux runs: the recorded version answers.
        assert_eq!(missing((3, 3)).check_version().await.unwrap(), (3, 3));
        // A version too old to trust is checked again (and tmux is missing).
        let err = missing((2, 9)).check_version().await.unwrap_err();
        assert!(matches!(err, BackendError::Unavailable { .. }), "{err}");
    }

    #[test]
    fn global_args_name_the_socket() {
        let mut s = TmuxServer::socket("/tmp/x/sock");
        s.config = Some("/dev/null".into());
        assert_eq!(s.global_args(), ["-S", "/tmp/x/sock", "-f", "/dev/null"]);
        assert!(TmuxServer::default_server().global_args().is_empty());
        let b = TmuxBackend::new(s);
        // tmux, found on PATH once: an absolute path where it is installed.
        let tmux = which::which("tmux")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| "tmux".into());
        assert_eq!(b.program, tmux);
        assert!(
            which::which("tmux").is_err() || std::path::Path::new(&b.program).is_absolute(),
            "{}",
            b.program
        );
        assert_eq!(
            b.attach_argv("swarm-x").unwrap(),
            [
                tmux.as_str(),
                "-S",
                "/tmp/x/sock",
                "-f",
                "/dev/null",
                "attach-session",
                "-t",
                "=swarm-x"
            ]
        );
    }
}
