//! The team's session: which pane backend it uses and where on it — the
//! session record (`<state>/session.json`, owned here: one writer,
//! [`Session::update_record`], every update under the record's lock) and
//! the code that opens the same backend again from any process (`swarm
//! kill` in another shell, a restarted lead, `swarm mcp`).
//!
//! The record holds the backend kind, the tmux socket (when it is not the
//! default server, or when the team lives inside the user's own tmux), the
//! session name and the lead's pane (with its nonce when swarm made it).
//! Members carry `backendType`, their pane id and the nonce their pane was
//! marked with (`swarmNonce`) in the roster; the record says how to reach
//! their server. [`Session::open`] is the only code that names a concrete
//! backend: everything else holds the `dyn PaneBackendExecutor` it returns.
//! A session is opened from a plain [`Location`], never from command-line
//! types, so every front end (CLI, TeamsDialog, MCP) opens it the same way.

use crate::atomic_file;
use crate::json_text;
use crate::paths::Root;
use crate::team::Member;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use swarm_backends::hosted::Hosted;
use swarm_backends::in_process::InProcessBackend;
use swarm_backends::iterm2::{Driver, ITerm2Backend};
use swarm_backends::tmux::{TmuxBackend, TmuxServer};
use swarm_backends::windows_terminal::WindowsTerminalBackend;
use swarm_backends::{
    BackendKind, Capabilities, EnvFacts, PaneBackendExecutor, PaneId, PaneRef, PaneStatus,
    Placement,
};

/// `<state>/session.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub backend: Option<BackendKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_socket: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_pane: Option<PaneId>,
    /// The nonce of the lead's pane (and of the home session it opened)
    /// when swarm created them. `None` with a `lead_pane`: the lead ran in
    /// the user's own pane, which swarm never closes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_nonce: Option<String>,
    /// The nonce the team's home session was marked with when swarm
    /// created it: a lead started again in a new window of that session
    /// has a nonce of its own, and the session stays swarm's to close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home_nonce: Option<String>,
    /// The tmux version a swarm process of this team checked (3.2 or newer),
    /// so that later processes skip `tmux -V`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_version: Option<(u32, u32)>,
}

impl SessionRecord {
    /// The record, or an empty one when there is none (or it is unreadable,
    /// which is logged: it only caches what detection would find again).
    pub fn load(root: &Root, team: &str) -> Result<Self> {
        let path = root.session_record(team)?;
        let read = atomic_file::read_optional(&path);
        match read.with_context(|| format!("reading {}", path.display()))? {
            None => Ok(Self::default()),
            Some(bytes) => Ok(json_text::parse_lenient(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), %e, "unreadable session record ignored");
                Self::default()
            })),
        }
    }

    fn save(&self, root: &Root, team: &str) -> Result<()> {
        let path = root.session_record(team)?;
        if let Some(dir) = path.parent() {
            atomic_file::ensure_dir(dir)?;
        }
        atomic_file::write_atomic(&path, &json_text::to_pretty(self))
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The mark of the home session swarm created (records from before
    /// `home_nonce` carry it as the lead's).
    pub fn home_mark(&self) -> Option<&str> {
        self.home_nonce.as_deref().or(self.lead_nonce.as_deref())
    }

    /// The lead's pane as swarm may act on it: only when swarm created it.
    pub fn lead_ref(&self) -> Option<PaneRef> {
        Some(PaneRef::new(
            self.lead_pane.clone()?,
            self.lead_nonce.clone()?,
        ))
    }
}

/// The tmux session name of a team.
pub fn session_name(team: &str) -> String {
    format!("swarm-{team}")
}

/// Where a team's panes are to be found: the plain facts a front end
/// gives (`--backend`, `--tmux-socket` / `SWARM_TMUX_SOCKET`), with the
/// root and the team. `None`: what the team's record says, else detection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub root: Root,
    pub team: String,
    pub backend: Option<BackendKind>,
    pub tmux_socket: Option<PathBuf>,
}

impl Location {
    /// The team's recorded place (or detection), nothing asked for.
    pub fn of(root: &Root, team: &str) -> Location {
        Location {
            root: root.clone(),
            team: team.to_string(),
            backend: None,
            tmux_socket: None,
        }
    }
}

/// The team's backend and its session record: what every pane operation
/// goes through. Shared (`Arc`) between the lead's supervisor, the
/// TeamsDialog and the operations they run; the record and the placement
/// cache are behind their own small locks.
pub struct Session {
    root: Root,
    team: String,
    /// The one backend every pane operation goes through.
    pub backend: Arc<dyn PaneBackendExecutor>,
    record: Mutex<SessionRecord>,
    pub reason: String,
    /// The pane this process runs in, when it runs inside the chosen tmux.
    pub own_pane: Option<PaneId>,
    /// Where this process's next teammate goes, once known (saves a
    /// liveness check per spawn when `up` spawns a whole team).
    placement: Mutex<Option<Placement>>,
    /// The team's other machines (its recorded `[[host]]`s), when it has
    /// any: `backend` is then this [`Hosted`], over the local backend and a
    /// tmux backend per host (DESIGN §13).
    pub hosted: Option<Arc<Hosted>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("team", &self.team)
            .field("backend", &self.backend.kind())
            .field("record", &self.record())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session on `backend` with an empty record (tests, the fake backend).
    pub fn with_backend(root: &Root, team: &str, backend: Arc<dyn PaneBackendExecutor>) -> Self {
        let record = SessionRecord {
            backend: Some(backend.kind()),
            ..SessionRecord::default()
        };
        Session {
            root: root.clone(),
            team: team.to_string(),
            backend,
            record: Mutex::new(record),
            reason: "given".to_string(),
            own_pane: None,
            placement: Mutex::new(None),
            hosted: None,
        }
    }

    pub fn team(&self) -> &str {
        &self.team
    }

    pub fn kind(&self) -> BackendKind {
        self.backend.kind()
    }

    pub fn caps(&self) -> Capabilities {
        self.backend.capabilities()
    }

    /// The session record as this process knows it.
    pub fn record(&self) -> SessionRecord {
        self.record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The one writer of `session.json`: under the record's lock, the file
    /// is read again, this session's backend and tmux socket (where it was
    /// opened) put in, `f` applied, and the file written when it changed;
    /// this process's copy is then what the file holds.
    pub fn update_record(&self, f: impl FnOnce(&mut SessionRecord)) -> Result<()> {
        let path = self.root.session_record(&self.team)?;
        if let Some(dir) = path.parent() {
            atomic_file::ensure_dir(dir)?;
        }
        let _lock = atomic_file::FileLock::acquire_dir(
            &crate::atomic_file::lock_dir_for(&path),
            atomic_file::DEFAULT_LOCK_TIMEOUT,
        )
        .with_context(|| format!("locking {}", path.display()))?;
        let mut mine = self.record.lock().unwrap_or_else(|e| e.into_inner());
        let on_disk = SessionRecord::load(&self.root, &self.team)?;
        let mut next = on_disk.clone();
        next.backend = mine.backend;
        next.tmux_socket = mine.tmux_socket.clone();
        f(&mut next);
        if next != on_disk {
            next.save(&self.root, &self.team)?;
        }
        *mine = next;
        Ok(())
    }

    /// Where this process puts its next teammate, when known.
    pub fn placement(&self) -> Option<Placement> {
        self.placement
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_placement(&self, p: Option<Placement>) {
        *self.placement.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }
}

/// A member's pane as swarm addresses it: its id and the nonce recorded
/// when swarm opened it. A member with no nonce on record (a team Claude
/// Code made, or one from before marks) gets an empty nonce, which no
/// pane carries: such a pane is reported, never touched.
pub fn member_pane(m: &Member) -> Option<PaneRef> {
    if m.tmux_pane_id.is_empty() || m.tmux_pane_id == "leader" {
        return None;
    }
    // A nonce that is not a string is no nonce: every reader of a pane's
    // identity then leaves the pane alone (it is reported, never touched),
    // so the roster's error is logged here rather than stopping them all.
    let nonce = m.nonce().unwrap_or_else(|e| {
        tracing::warn!("{e}; its pane is left alone");
        None
    });
    Some(PaneRef::new(
        PaneId::new(m.tmux_pane_id.clone()),
        nonce.unwrap_or_default(),
    ))
}

/// The socket of the tmux server this process runs inside (`$TMUX` is
/// `socket,pid,session`).
fn current_tmux_socket() -> Option<PathBuf> {
    let t = std::env::var("TMUX").ok().filter(|t| !t.is_empty())?;
    t.split(',').next().map(PathBuf::from)
}

/// The tmux server a team's panes were opened on, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordedServer {
    /// The server at this socket.
    Socket(PathBuf),
    /// tmux's default server (opened on tmux with no socket recorded).
    Default,
}

impl RecordedServer {
    /// Its socket: tmux's default one is `$TMUX_TMPDIR` (else `/tmp`)
    /// `/tmux-<uid>/default`, as tmux itself finds it.
    fn socket(&self) -> PathBuf {
        match self {
            RecordedServer::Socket(s) => s.clone(),
            RecordedServer::Default => {
                let dir = std::env::var_os("TMUX_TMPDIR")
                    .filter(|d| !d.is_empty())
                    .map_or_else(|| PathBuf::from("/tmp"), PathBuf::from);
                // SAFETY: getuid takes no arguments and cannot fail.
                let uid = unsafe { libc::getuid() };
                dir.join(format!("tmux-{uid}")).join("default")
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            RecordedServer::Socket(s) => format!("the tmux server at {}", s.display()),
            RecordedServer::Default => {
                format!("tmux's default server ({})", self.socket().display())
            }
        }
    }
}

/// The tmux server the team's panes were opened on, as recorded: the
/// session record's socket, else the one its roster records on the
/// members that have a pane (`swarmTmuxSocket`), else tmux's default
/// server when the record says the team was opened on tmux; so that a
/// command run later from another shell, without `SWARM_TMUX_SOCKET`,
/// reaches that server, never another by accident. `None`: nothing says
/// (a team not yet opened, or not on tmux).
pub fn recorded_tmux_server(
    root: &Root,
    team: &str,
    record: &SessionRecord,
) -> Result<Option<RecordedServer>> {
    if let Some(s) = &record.tmux_socket {
        return Ok(Some(RecordedServer::Socket(s.clone())));
    }
    let roster = crate::team::Team::new(root, team).roster();
    if roster.exists() {
        let tf = roster.read()?;
        for m in tf.teammates().filter(|m| !m.tmux_pane_id.is_empty()) {
            if let Some(s) = m.tmux_socket()? {
                return Ok(Some(RecordedServer::Socket(s)));
            }
        }
    }
    let opened_on_tmux = record.backend == Some(BackendKind::Tmux)
        && (record.session.is_some() || record.lead_pane.is_some());
    Ok(opened_on_tmux.then_some(RecordedServer::Default))
}

/// The one error when an explicit socket (`--tmux-socket` /
/// `SWARM_TMUX_SOCKET`) names another server than the one the team is
/// recorded on while that one still answers (a team whose server is gone
/// may be started again elsewhere).
pub fn socket_conflict(team: &str, asked: &Path, recorded: &RecordedServer) -> Option<String> {
    let known = recorded.socket();
    let same = match (std::fs::canonicalize(asked), std::fs::canonicalize(&known)) {
        (Ok(a), Ok(b)) => a == b,
        _ => asked == known,
    };
    // Asked only when they differ: a server that answers on its socket.
    let answers = || std::os::unix::net::UnixStream::connect(&known).is_ok();
    (!same && answers()).then(|| {
        format!(
            "team {team} runs on {} (recorded when its panes were opened), but \
             --tmux-socket/SWARM_TMUX_SOCKET names {}; unset it (the team's server is found \
             from its record) or name that socket",
            recorded.describe(),
            asked.display()
        )
    })
}

/// Opens the team's backend: an explicit `--backend` wins, then the team's
/// record, then detection. The tmux server is `--tmux-socket` (an error if
/// it is not the team's recorded server while that one runs), else the
/// recorded one ([`recorded_tmux_server`]), else the one this process runs
/// inside, else the default. The only place a concrete backend is named.
impl Session {
    pub fn open(loc: &Location) -> Result<Session> {
        open(loc)
    }
}

fn open(loc: &Location) -> Result<Session> {
    let (root, team) = (&loc.root, loc.team.as_str());
    let mut record = SessionRecord::load(root, team)?;
    let recorded = recorded_tmux_server(root, team, &record)?;
    if let (Some(asked), Some(known)) = (&loc.tmux_socket, &recorded)
        && let Some(e) = socket_conflict(team, asked, known)
    {
        bail!(e);
    }
    let mut facts = EnvFacts::from_process_env();
    facts.requested = loc
        .backend
        .or(record.backend)
        .or(recorded.is_some().then_some(BackendKind::Tmux));
    // With an explicit or recorded socket, "inside tmux" only counts if it
    // is that server.
    let socket = loc.tmux_socket.clone().or(match recorded {
        Some(RecordedServer::Socket(s)) => Some(s),
        _ => None,
    });
    if let (Some(sock), Some(cur)) = (socket.as_ref(), current_tmux_socket())
        && sock != &cur
    {
        facts.in_tmux = false;
        facts.tmux_pane = None;
    }
    // Inside tmux (no other server named or recorded) with no pane to
    // split beside: say so, rather than tmux's own nested-attach error.
    if socket.is_none() && facts.in_tmux && facts.tmux_pane.is_none() {
        bail!(
            "TMUX is set but TMUX_PANE is not, so swarm cannot tell which tmux pane it runs in: \
             run it from a tmux pane, or unset TMUX to give the team a tmux session of its own"
        );
    }
    let detection = swarm_backends::detect(&facts).context("choosing a pane backend")?;
    let own_pane = detection.lead_pane.clone();
    let backend: Arc<dyn PaneBackendExecutor> = match detection.kind {
        BackendKind::Tmux => {
            let socket = socket.or_else(|| facts.in_tmux.then(current_tmux_socket).flatten());
            record.tmux_socket = socket.clone();
            let server = match socket {
                Some(s) => TmuxServer::socket(s),
                None => TmuxServer::default_server(),
            };
            let mut backend = TmuxBackend::new(server).with_lead(record.lead_pane.clone());
            if let Some(v) = record.tmux_version {
                backend = backend.with_known_version(v);
            }
            Arc::new(backend)
        }
        BackendKind::InProcess => Arc::new(InProcessBackend::new()),
        BackendKind::ITerm2 => Arc::new(ITerm2Backend::new(Driver::It2)),
        BackendKind::WindowsTerminal => Arc::new(WindowsTerminalBackend::new()),
    };
    record.backend = Some(detection.kind);
    let hosted = hosted_over(root, team, &backend)?;
    let backend = match &hosted {
        Some(h) => h.clone() as Arc<dyn PaneBackendExecutor>,
        None => backend,
    };
    Ok(Session {
        root: root.clone(),
        team: team.to_string(),
        backend,
        record: Mutex::new(record),
        reason: detection.reason,
        own_pane,
        placement: Mutex::new(None),
        hosted,
    })
}

/// The team's backend over its other machines, when it has recorded
/// hosts: a tmux server of its own on each (`-L swarm-<team>`), reached
/// through the user's ssh with one shared connection per host.
fn hosted_over(
    root: &Root,
    team: &str,
    local: &Arc<dyn PaneBackendExecutor>,
) -> Result<Option<Arc<Hosted>>> {
    let hosts = crate::hosts::recorded(root, team)?;
    if hosts.is_empty() {
        return Ok(None);
    }
    let mut backends = std::collections::BTreeMap::new();
    for h in &hosts {
        let ssh = crate::hosts::ssh_of(root, h)?;
        let server = TmuxServer::named(session_name(team));
        backends.insert(h.name.clone(), Arc::new(TmuxBackend::on_host(server, ssh)));
    }
    // Hosts that did not answer, noted for the team's other processes.
    let away = root.away_dir(team)?;
    crate::atomic_file::ensure_dir(&away)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", away.display()))?;
    Ok(Some(Arc::new(
        Hosted::new(local.clone(), backends).noting_in(away),
    )))
}

/// Where a new teammate pane goes on this backend: beside the recorded
/// lead pane if there is one (not checked here: the split lists the lead's
/// window anyway, and a spawn that fails there asks [`lead_running`] and
/// falls back to [`placement_apart`]), else in the team's session.
pub async fn placement(session: &Session, team: &str) -> Result<Placement> {
    if let (true, Some(lead)) = (
        session.backend.homes().is_some(),
        session.record().lead_pane,
    ) {
        return Ok(Placement::RightOfLead { lead });
    }
    placement_apart(session, team).await
}

/// True when the recorded lead pane runs: swarm's own lead pane proves it
/// by its mark; the user's pane the lead ran in can only be looked up.
pub async fn lead_running(session: &Session) -> Result<bool> {
    let record = session.record();
    let Some(lead) = &record.lead_pane else {
        return Ok(false);
    };
    let pane = record
        .lead_ref()
        .unwrap_or_else(|| PaneRef::new(lead.clone(), ""));
    let st = session.backend.status(std::slice::from_ref(&pane)).await?;
    Ok(matches!(
        st.first(),
        Some((_, PaneStatus::Running { .. } | PaneStatus::Foreign))
    ))
}

/// Where a new teammate pane goes when it cannot go beside the lead.
pub async fn placement_apart(s: &Session, team: &str) -> Result<Placement> {
    let Some(homes) = s.backend.homes() else {
        return Ok(Placement::NewWindow { session: None });
    };
    let session = s.record().session.unwrap_or_else(|| session_name(team));
    if homes.home_exists(&session).await? {
        Ok(Placement::NewWindow {
            session: Some(session),
        })
    } else {
        Ok(Placement::Session { name: session })
    }
}

/// The tokio runtime of one command: one worker thread, so the lead's
/// supervisor runs beside the TeamsDialog on the main thread.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Refuses a backend that cannot reach panes from outside the lead.
pub fn require_shared(session: &Session, what: &str) -> Result<()> {
    if !session.caps().panes_outlive_lead {
        bail!(
            "{what}: this team's panes live inside its lead ({} backend); \
             use the lead's TUI, or run the team on tmux",
            session.kind()
        );
    }
    Ok(())
}
