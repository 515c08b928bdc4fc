//! Which pane backend a team uses, and where on it: the team's session
//! record (`<state>/session.json`) and the code that opens the same backend
//! again from any process (`swarm kill` in another shell, a restarted lead).
//!
//! The record holds the backend kind, the tmux socket (when it is not the
//! default server, or when the team lives inside the user's own tmux), the
//! session name and the lead's pane. Members carry `backendType` and their
//! pane id in the roster; the record says how to reach their server.

use crate::atomic_file;
use crate::cli::{BackendArgs, BackendChoice};
use crate::json_text;
use crate::paths::Root;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use swarm_backends::in_process::InProcessBackend;
use swarm_backends::iterm2::{Driver, ITerm2Backend};
use swarm_backends::tmux::{TmuxBackend, TmuxServer};
use swarm_backends::windows_terminal::WindowsTerminalBackend;
use swarm_backends::{BackendKind, EnvFacts, PaneBackendExecutor, PaneId, Placement};

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
    /// The tmux version a swarm process of this team checked (3.2 or newer),
    /// so that later processes skip `tmux -V`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tmux_version: Option<(u32, u32)>,
}

impl SessionRecord {
    fn path(root: &Root, team: &str) -> Result<PathBuf> {
        Ok(root.state_dir(team)?.join("session.json"))
    }

    /// The record, or an empty one when there is none (or it is unreadable,
    /// which is logged: it only caches what detection would find again).
    pub fn load(root: &Root, team: &str) -> Result<Self> {
        let path = Self::path(root, team)?;
        match atomic_file::read_optional(&path)? {
            None => Ok(Self::default()),
            Some(bytes) => Ok(json_text::parse_lenient(&bytes).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), %e, "unreadable session record ignored");
                Self::default()
            })),
        }
    }

    pub fn save(&self, root: &Root, team: &str) -> Result<()> {
        let path = Self::path(root, team)?;
        if let Some(dir) = path.parent() {
            atomic_file::ensure_dir(dir)?;
        }
        atomic_file::write_atomic(&path, &json_text::to_pretty(self))
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// The tmux session name of a team.
pub fn session_name(team: &str) -> String {
    format!("swarm-{team}")
}

/// An opened backend. tmux and in-process keep their concrete types for the
/// operations only they have (pipe-pane, attach, screens).
pub enum Panes {
    Tmux(Box<TmuxBackend>),
    InProcess(Arc<InProcessBackend>),
    ITerm2(ITerm2Backend),
    WindowsTerminal(WindowsTerminalBackend),
}

impl Panes {
    pub fn exec(&self) -> &dyn PaneBackendExecutor {
        match self {
            Panes::Tmux(b) => b.as_ref(),
            Panes::InProcess(b) => b.as_ref(),
            Panes::ITerm2(b) => b,
            Panes::WindowsTerminal(b) => b,
        }
    }

    pub fn kind(&self) -> BackendKind {
        self.exec().kind()
    }

    pub fn tmux(&self) -> Option<&TmuxBackend> {
        match self {
            Panes::Tmux(b) => Some(b.as_ref()),
            _ => None,
        }
    }
}

/// The backend a command should use, and what the detection said.
pub struct Opened {
    pub panes: Panes,
    pub record: SessionRecord,
    pub reason: String,
    /// The pane this process runs in, when it runs inside the chosen tmux.
    pub own_pane: Option<PaneId>,
    /// Where this process's next teammate goes, once known (saves a
    /// liveness check per spawn when `up` spawns a whole team).
    pub placement: Option<Placement>,
}

fn requested(choice: Option<BackendChoice>) -> Option<BackendKind> {
    match choice? {
        BackendChoice::Auto => None,
        BackendChoice::Tmux => Some(BackendKind::Tmux),
        BackendChoice::Iterm2 => Some(BackendKind::ITerm2),
        BackendChoice::WindowsTerminal => Some(BackendKind::WindowsTerminal),
        BackendChoice::InProcess => Some(BackendKind::InProcess),
    }
}

/// The socket of the tmux server this process runs inside (`$TMUX` is
/// `socket,pid,session`).
fn current_tmux_socket() -> Option<PathBuf> {
    let t = std::env::var("TMUX").ok().filter(|t| !t.is_empty())?;
    t.split(',').next().map(PathBuf::from)
}

/// Opens the team's backend: an explicit `--backend` wins, then the team's
/// record, then detection. The tmux server is `--tmux-socket`, else the
/// record's, else the one this process runs inside, else the default.
pub fn open(root: &Root, team: &str, args: &BackendArgs) -> Result<Opened> {
    let mut record = SessionRecord::load(root, team)?;
    let mut facts = EnvFacts::from_process_env();
    facts.requested = requested(args.backend).or(record.backend);
    // With an explicit socket, "inside tmux" only counts if it is that server.
    if let (Some(sock), Some(cur)) = (args.tmux_socket.as_ref(), current_tmux_socket())
        && sock != &cur
    {
        facts.in_tmux = false;
        facts.tmux_pane = None;
    }
    let detection = swarm_backends::detect(&facts).context("choosing a pane backend")?;
    let own_pane = detection.lead_pane.clone();
    let panes = match detection.kind {
        BackendKind::Tmux => {
            let socket = args
                .tmux_socket
                .clone()
                .or_else(|| record.tmux_socket.clone())
                .or_else(|| facts.in_tmux.then(current_tmux_socket).flatten());
            record.tmux_socket = socket.clone();
            let server = match socket {
                Some(s) => TmuxServer::socket(s),
                None => TmuxServer::default_server(),
            };
            let mut backend = TmuxBackend::new(server);
            if let Some(v) = record.tmux_version {
                backend = backend.with_known_version(v);
            }
            Panes::Tmux(Box::new(backend))
        }
        BackendKind::InProcess => Panes::InProcess(Arc::new(InProcessBackend::new())),
        BackendKind::ITerm2 => Panes::ITerm2(ITerm2Backend::new(Driver::It2)),
        BackendKind::WindowsTerminal => Panes::WindowsTerminal(WindowsTerminalBackend::new()),
    };
    record.backend = Some(detection.kind);
    Ok(Opened {
        panes,
        record,
        reason: detection.reason,
        own_pane,
        placement: None,
    })
}

/// Where a new teammate pane goes on this backend: beside the recorded
/// lead pane if there is one (not checked here: the split lists the lead's
/// window anyway, and a spawn that fails there asks [`lead_running`] and
/// falls back to [`placement_apart`]), else in the team's session.
pub async fn placement(opened: &Opened, team: &str) -> Result<Placement> {
    if let (Panes::Tmux(_), Some(lead)) = (&opened.panes, &opened.record.lead_pane) {
        return Ok(Placement::RightOfLead { lead: lead.clone() });
    }
    placement_apart(opened, team).await
}

/// True when the recorded lead pane runs.
pub async fn lead_running(opened: &Opened) -> Result<bool> {
    let Some(lead) = &opened.record.lead_pane else {
        return Ok(false);
    };
    let st = opened
        .panes
        .exec()
        .status(std::slice::from_ref(lead))
        .await?;
    Ok(matches!(
        st.first(),
        Some((_, swarm_backends::PaneStatus::Running { .. }))
    ))
}

/// Where a new teammate pane goes when it cannot go beside the lead.
pub async fn placement_apart(opened: &Opened, team: &str) -> Result<Placement> {
    let Panes::Tmux(tmux) = &opened.panes else {
        return Ok(Placement::NewWindow { session: None });
    };
    let session = opened
        .record
        .session
        .clone()
        .unwrap_or_else(|| session_name(team));
    if tmux.has_session(&session).await? {
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
pub fn require_shared(opened: &Opened, what: &str) -> Result<()> {
    if matches!(opened.panes, Panes::InProcess(_)) {
        bail!(
            "{what}: this team's panes live inside its lead (in-process backend); \
             use the lead's TUI, or run the team on tmux"
        );
    }
    Ok(())
}
