//! `swarm-backends`: the one seam between swarm and a terminal. A backend
//! opens panes that run a program directly as argv with an exact
//! environment, reports their liveness, and kills them with a ladder
//! (SIGTERM to the process group, SIGKILL after a grace period, close, verify).
//! Backends know panes, not teams: nothing here touches a mailbox, a task or
//! the TUI.
//!
//! # Layout
//!
//! - this file: [`PaneBackendExecutor`] (the core every backend has) and
//!   its facets ([`PaneFocus`], [`PaneText`], [`Layout`], [`HomeSessions`],
//!   [`LiveScreens`]), [`SpawnSpec`], [`PaneId`], [`PaneStatus`],
//!   [`Capabilities`], [`BackendKind`] and [`detect`].
//! - [`error`] — [`BackendError`].
//! - [`command`] — running an external program with a timeout.
//! - [`process`] — signals to process groups (the kill ladder's mechanics).
//! - [`exits`] — exits of pane processes as events (a pidfd each), for
//!   backends whose panes are not this process's children.
//! - [`host`] — where a pane's processes run: this machine or another one
//!   over ssh ([`host::SshHost`]: batch mode, one shared connection, a
//!   deadline on every call, argv quoted word by word; that host's `/proc`
//!   read and its process groups signalled there, in one call each).
//!   [`tmux::TmuxBackend::on_host`] is the tmux backend on such a host
//!   (`tmux/procs.rs` routes each look and signal to the right machine).
//! - [`hosted`] — one backend over several machines: this machine's, and
//!   a tmux backend per other host; a remote pane is `HOST:%N`.
//! - [`tmux`] — the tmux backend; its command files build every tmux argv
//!   and parse every `-F` output, one per noun ([`tmux::panes`],
//!   [`tmux::sessions`], [`tmux::layout`], [`tmux::options`]) on the rules of
//!   [`tmux::commands`].
//! - [`in_process`] — panes hosted in PTYs inside the lead.
//! - [`iterm2`], [`windows_terminal`] — argv builders and parsers for macOS and
//!   Windows terminals; [`pidfile`] — the pid records they rely on.
//! - `fake` (feature `fake`): a recording backend with no processes.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use swarm_backends::{PaneBackendExecutor, Placement, SpawnSpec, in_process::InProcessBackend};
//!
//! # async fn demo() -> swarm_backends::Result<()> {
//! let backend: Box<dyn PaneBackendExecutor> = Box::new(InProcessBackend::new());
//! let spec = SpawnSpec::new("sh", ["-c", "echo hello; sleep 5"], std::env::temp_dir())
//!     .env("PATH", "/usr/bin:/bin")
//!     .title("alice")
//!     .placement(Placement::NewWindow { session: None });
//! let pane = backend.spawn(&spec).await?;
//! println!("{:?}", backend.status(&[pane.clone()]).await?);
//! backend.kill(&pane, Duration::from_millis(500)).await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod command;
pub mod error;
pub mod exits;
#[cfg(feature = "fake")]
pub mod fake;
pub mod host;
pub mod hosted;
pub mod in_process;
pub mod iterm2;
pub mod pidfile;
pub mod process;
pub mod tmux;
pub mod windows_terminal;

pub use error::{BackendError, Result};

/// The program that clears and sets a pane's environment: `env -i -- K=V … PROGRAM ARGS`.
/// An absolute path, so that it is found whatever the pane's `PATH` is.
pub const ENV_PROGRAM: &str = "/usr/bin/env";

/// A pane's identity as its backend names it: `%12` for tmux, `inproc-3` for
/// the in-process backend. Stored in the roster, so it is plain serde text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PaneId(pub String);

impl PaneId {
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PaneId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What proves a pane is swarm's: set on the pane by the very command that
/// creates it (tmux: pane user options `@swarm_team`, `@swarm_member`,
/// `@swarm_nonce`; in-process and fake: kept beside the pane). The nonce is
/// random per pane, so a pane of another server (tmux pane ids restart at
/// `%0` with every server) or of the user never matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PaneMark {
    pub team: String,
    pub member: String,
    pub nonce: String,
}

impl PaneMark {
    /// A mark with a fresh random nonce.
    pub fn new(team: impl Into<String>, member: impl Into<String>) -> Self {
        Self {
            team: team.into(),
            member: member.into(),
            nonce: new_nonce(),
        }
    }
}

/// 128 bits from the OS's random source (`getrandom(2)` on Linux, through
/// the `getrandom` crate) as 32 lowercase hex digits.
pub fn new_nonce() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .expect("the OS's random source answers (getrandom falls back to /dev/urandom itself)");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A pane as swarm addresses it for anything that changes it: its id and
/// the nonce it was marked with. A backend acts on a `PaneRef` only when
/// the pane with that id carries that nonce; otherwise the pane is
/// [`PaneStatus::Foreign`] and is never touched.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PaneRef {
    pub id: PaneId,
    pub nonce: String,
}

impl PaneRef {
    pub fn new(id: PaneId, nonce: impl Into<String>) -> Self {
        Self {
            id,
            nonce: nonce.into(),
        }
    }
    pub fn as_str(&self) -> &str {
        self.id.as_str()
    }
}

impl fmt::Display for PaneRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id.as_str())
    }
}

impl AsRef<PaneId> for PaneId {
    fn as_ref(&self) -> &PaneId {
        self
    }
}

impl AsRef<PaneId> for PaneRef {
    fn as_ref(&self) -> &PaneId {
        &self.id
    }
}

impl PartialEq<PaneRef> for PaneId {
    fn eq(&self, other: &PaneRef) -> bool {
        *self == other.id
    }
}

/// Where a new pane goes. Backends without a notion interpret it as closely as
/// they can (the in-process backend ignores it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// Beside the lead's pane: the lead pinned on the left, teammates tiled in
    /// the right column, overflowing into a new window when panes would be
    /// too small to read.
    RightOfLead { lead: PaneId },
    /// A new window, in the named session (tmux) or the current one.
    NewWindow { session: Option<String> },
    /// The first pane of a new detached session with this name.
    Session { name: String },
}

/// What to run in a new pane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpawnSpec {
    /// The program, run directly (never through a shell string).
    pub program: String,
    /// Its arguments, each passed unchanged.
    pub args: Vec<String>,
    /// The working directory; must exist.
    pub cwd: PathBuf,
    /// The EXACT environment of the pane's process: nothing else leaks in.
    pub env: Vec<(String, String)>,
    /// The pane title.
    pub title: String,
    /// A palette colour name: red, blue, green, yellow, purple, orange, pink, cyan.
    pub color: Option<String>,
    pub placement: Placement,
    /// Where the pane's process records its pid. Required by backends that
    /// cannot list their panes (iTerm2, Windows Terminal); ignored by others.
    pub pid_file: Option<PathBuf>,
    /// The pane's mark (a fresh nonce by default).
    pub mark: PaneMark,
    /// A file the pane's output is appended to from its first byte, where
    /// [`Capabilities::output_file`] says so.
    pub output: Option<PathBuf>,
    /// A file the backend creates once the pane is fully set up (marked,
    /// its output piped), so a program that waits for it loses nothing.
    pub ready_file: Option<PathBuf>,
    /// The program makes its environment exactly `env` itself: started
    /// with whatever else (a backend's own variables), it replaces its
    /// whole environment with the pairs [`EXACT_ENV_VAR`] holds before
    /// anything else (`swarm pane-exec` does). A backend that sets a
    /// pane's variables by its own means (tmux's `-e`) then starts the
    /// program directly, without `env -i`: one process less per pane
    /// ([`SpawnSpec::start_over_set_env`]). Any other backend ignores it.
    #[serde(default)]
    pub trims_env: bool,
}

/// The variable a program that trims its own environment reads (see
/// [`SpawnSpec::trims_env`]): the spec's variables, in order, as a JSON
/// array of `[name, value]` pairs. The pairs, not names to keep, because
/// tmux sets some variables after `-e` (`PATH` from its client, `SHELL`,
/// `TMUX_PANE`); JSON, because it escapes every control character, which
/// tmux refuses in an argument.
pub const EXACT_ENV_VAR: &str = "SWARM_EXACT_ENV";

/// How a backend that sets a pane's variables by its own means starts a
/// spec's process: the argv, and the variables it sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Start {
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl SpawnSpec {
    /// A spec with an empty environment, no title, no colour, a new window.
    pub fn new<I, S>(program: impl Into<String>, args: I, cwd: impl Into<PathBuf>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env: Vec::new(),
            title: String::new(),
            color: None,
            placement: Placement::NewWindow { session: None },
            pid_file: None,
            mark: PaneMark::new("", ""),
            output: None,
            ready_file: None,
            trims_env: false,
        }
    }

    /// A spec whose program trims its own environment (see
    /// [`SpawnSpec::trims_env`]).
    pub fn trims_own_env(mut self) -> Self {
        self.trims_env = true;
        self
    }

    /// Marks the pane as `member` of `team` (a fresh nonce).
    pub fn mark(mut self, mark: PaneMark) -> Self {
        self.mark = mark;
        self
    }

    /// Appends the pane's output to `file`.
    pub fn output(mut self, file: impl Into<PathBuf>) -> Self {
        self.output = Some(file.into());
        self
    }

    /// Creates `file` once the pane is set up.
    pub fn ready_file(mut self, file: impl Into<PathBuf>) -> Self {
        self.ready_file = Some(file.into());
        self
    }

    /// Creates the ready file (private, empty), if one was asked for.
    pub fn signal_ready(&self) -> Result<()> {
        let Some(path) = &self.ready_file else {
            return Ok(());
        };
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map(drop)
            .map_err(|source| BackendError::Io {
                action: "create the ready file",
                path: path.clone(),
                source,
            })
    }

    /// Adds one environment variable.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    pub fn color(mut self, color: impl Into<String>) -> Self {
        self.color = Some(color.into());
        self
    }

    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    pub fn pid_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.pid_file = Some(path.into());
        self
    }

    /// Checks what every backend needs: a program, valid variable names, an
    /// existing working directory, a known colour.
    pub fn validate(&self) -> Result<()> {
        self.validate_argv()?;
        if !self.cwd.is_dir() {
            return Err(BackendError::invalid(
                "working directory",
                &self.cwd.display().to_string(),
                "is not an existing directory",
            ));
        }
        self.validate_marks()
    }

    /// [`SpawnSpec::validate`] but for the working directory, which a pane
    /// on another machine checks there.
    pub fn validate_text(&self) -> Result<()> {
        self.validate_argv()?;
        self.validate_marks()
    }

    /// The program, its arguments and the environment.
    fn validate_argv(&self) -> Result<()> {
        if self.program.is_empty() {
            return Err(BackendError::invalid("program", "", "must not be empty"));
        }
        // `env` would read a program name containing '=' as one more variable.
        if self.program.contains('=') {
            return Err(BackendError::invalid(
                "program",
                &self.program,
                "must not contain '=' (use a path without '=')",
            ));
        }
        for (key, _) in &self.env {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                return Err(BackendError::invalid(
                    "environment variable name",
                    key,
                    "must be non-empty and contain no '=' or NUL",
                ));
            }
        }
        for text in std::iter::once(&self.program)
            .chain(&self.args)
            .chain(self.env.iter().map(|(_, v)| v))
        {
            if text.contains('\0') {
                return Err(BackendError::invalid("argument", text, "contains NUL"));
            }
        }
        Ok(())
    }

    /// The pane's mark, title, colour.
    fn validate_marks(&self) -> Result<()> {
        for (what, text) in [
            ("team in the pane mark", &self.mark.team),
            ("member in the pane mark", &self.mark.member),
            ("pane nonce", &self.mark.nonce),
        ] {
            if !text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(BackendError::invalid(
                    what,
                    text,
                    "may hold only ASCII letters, digits and '-'",
                ));
            }
        }
        if self.mark.nonce.is_empty() {
            return Err(BackendError::invalid("pane nonce", "", "must not be empty"));
        }
        if let Some(color) = &self.color
            && !PALETTE.contains(&color.as_str())
        {
            return Err(BackendError::invalid(
                "colour",
                color,
                format!("not one of {}", PALETTE.join(", ")),
            ));
        }
        Ok(())
    }

    /// How a backend that sets the pane's variables itself starts it: the
    /// program alone, with [`EXACT_ENV_VAR`] holding `env`, when the
    /// program trims its own environment; else [`SpawnSpec::exact_env_argv`]
    /// and `env`. Either way the process runs with exactly `env`.
    pub fn start_over_set_env(&self) -> Start {
        if !self.trims_env {
            return Start {
                argv: self.exact_env_argv(),
                env: self.env.clone(),
            };
        }
        let pairs = serde_json::to_string(&self.env).expect("strings serialise");
        let mut argv = vec![self.program.clone()];
        argv.extend(self.args.iter().cloned());
        Start {
            argv,
            env: vec![(EXACT_ENV_VAR.to_string(), pairs)],
        }
    }

    /// The argv that runs the program with exactly `env`:
    /// `/usr/bin/env -i -- K=V … PROGRAM ARGS`. `env` execs the program, so the
    /// pane's pid is the program's pid.
    pub fn exact_env_argv(&self) -> Vec<String> {
        let mut argv = vec![ENV_PROGRAM.to_string(), "-i".to_string(), "--".to_string()];
        argv.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        argv.push(self.program.clone());
        argv.extend(self.args.iter().cloned());
        argv
    }
}

/// The colour names a spec may use.
pub const PALETTE: [&str; 8] = [
    "red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan",
];

/// A pane's liveness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PaneStatus {
    /// The pane's process runs. `pid` is the real pid where the backend knows
    /// it; `None` only for the fake backend, which has no processes.
    Running { pid: Option<u32> },
    /// The process ended and the pane is still there; `code` is `None` when
    /// a signal ended it or the backend cannot know.
    Exited { code: Option<i32> },
    /// No such pane (closed, or its server is gone).
    Gone,
    /// A pane with this id exists but does not carry the asked mark: it is
    /// not swarm's (a restarted tmux server reused the id, or the user's own
    /// pane). Never killed, closed, adopted or respawned.
    Foreign,
}

/// The facts about a backend that every caller may need and no facet
/// carries: how its panes relate to the lead, and what [`spawn`] and
/// [`status`] can promise. What a backend can *do* beyond the core is not
/// here: it is a facet ([`PaneBackendExecutor::layout`] and its siblings),
/// and having the facet is the capability.
///
/// [`spawn`]: PaneBackendExecutor::spawn
/// [`status`]: PaneBackendExecutor::status
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Panes keep running when the lead exits (tmux, iTerm2, WT: yes;
    /// in-process: no).
    pub panes_outlive_lead: bool,
    /// The pane's process sees exactly the spec's environment.
    pub exact_env: bool,
    /// `status` can report an exit code.
    pub exit_codes: bool,
    /// [`PaneBackendExecutor::changes`] resolves when a pane's process
    /// exits, so liveness need not be polled (in-process on Linux; tmux
    /// where the kernel gives out pidfds, Linux 5.3 and later).
    pub exit_events: bool,
    /// [`PaneBackendExecutor::list_marked`]: every pane carrying a swarm
    /// mark can be listed (tmux, in-process, fake; not iTerm2 or Windows
    /// Terminal, which cannot list their panes).
    pub list_marked: bool,
    /// [`SpawnSpec::output`] is honoured: the pane's output is appended to
    /// that file from its first byte.
    pub output_file: bool,
}

/// The kinds of backend, named as the roster's `backendType` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BackendKind {
    Tmux,
    #[serde(rename = "iterm2")]
    ITerm2,
    WindowsTerminal,
    InProcess,
}

impl BackendKind {
    /// Every kind, in the order help texts list them.
    pub const ALL: [BackendKind; 4] = [
        Self::Tmux,
        Self::ITerm2,
        Self::WindowsTerminal,
        Self::InProcess,
    ];

    /// The roster's `backendType` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tmux => "tmux",
            Self::ITerm2 => "iterm2",
            Self::WindowsTerminal => "windows-terminal",
            Self::InProcess => "in-process",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for BackendKind {
    type Err = BackendError;
    fn from_str(s: &str) -> Result<Self> {
        match Self::ALL.into_iter().find(|k| k.as_str() == s) {
            Some(k) => Ok(k),
            None => Err(BackendError::invalid(
                "backend",
                s,
                format!("expected one of {}", Self::ALL.map(Self::as_str).join(", ")),
            )),
        }
    }
}

/// The seam between swarm and a terminal: the small core every backend has
/// (spawn, status, kill, list the marked panes, wait for changes) plus
/// facets a backend may have. Object-safe: the app holds a
/// `Box<dyn PaneBackendExecutor>` chosen at run time.
///
/// A facet is asked for, never assumed: [`layout`](Self::layout),
/// [`pane_focus`](Self::pane_focus), [`pane_text`](Self::pane_text),
/// [`homes`](Self::homes) and [`screens`](Self::screens) answer `None` by
/// default, and a backend that answers `Some` does every call of that
/// facet. So a caller that has the facet needs no "unsupported" branch, and
/// one that has not says in one line what this backend cannot do.
///
/// | backend           | focus | text | layout | homes | screens |
/// |-------------------|-------|------|--------|-------|---------|
/// | tmux              | yes   | yes  | yes    | yes   |         |
/// | in-process        |       | yes  |        |       | yes     |
/// | iTerm2            | yes   |      |        |       |         |
/// | Windows Terminal  |       |      |        |       |         |
/// | fake              | as the test configures it                 |
#[async_trait::async_trait]
pub trait PaneBackendExecutor: Send + Sync {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// The facts about its panes no facet carries.
    fn capabilities(&self) -> Capabilities;

    /// Opens a pane running `spec.program` + `spec.args` as argv with exactly
    /// `spec.env`, marked with `spec.mark` in the same step, and returns it.
    async fn spawn(&self, spec: &SpawnSpec) -> Result<PaneRef>;

    /// Opens the panes of `specs` in order, as [`spawn`](Self::spawn) would
    /// one after another, and stops at the first that fails: the results
    /// are those of the specs tried, in order, the last an error if one
    /// failed. A backend that opens several panes in fewer round trips does
    /// (tmux: the panes that go into the lead's column, and those of a new
    /// overflow window, in one call each).
    async fn spawn_many(&self, specs: &[SpawnSpec]) -> Vec<Result<PaneRef>> {
        let mut out = Vec::with_capacity(specs.len());
        for spec in specs {
            let opened = self.spawn(spec).await;
            let failed = opened.is_err();
            out.push(opened);
            if failed {
                break;
            }
        }
        out
    }

    /// The liveness of each pane, in the order asked. A pane whose id
    /// exists without the ref's nonce is [`PaneStatus::Foreign`].
    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>>;

    /// [`status`](Self::status), and each pane found running then closes by
    /// itself when its process ends instead of staying as a dead pane (a
    /// pane not carrying its ref's nonce is left as it is): `swarm down`
    /// asks this of the panes it is about to ask to shut down, so that a
    /// teammate that ends as asked leaves no pane to close (tmux: in the
    /// same call as the listing). [`keep_on_exit`](Self::keep_on_exit)
    /// undoes it. The default only reads the status: the caller closes the
    /// panes as before.
    async fn status_closing_on_exit(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        self.status(panes).await
    }

    /// Each of `panes` still there (and carrying its ref's nonce) stays
    /// as a dead pane again when its process ends, as it was opened: what
    /// a `down` that keeps some teammates puts back after
    /// [`status_closing_on_exit`](Self::status_closing_on_exit). The
    /// default has nothing to put back.
    async fn keep_on_exit(&self, panes: &[PaneRef]) -> Result<()> {
        let _ = panes;
        Ok(())
    }

    /// SIGTERM to the pane's process group, SIGKILL after `grace` if still
    /// alive, close the pane, verify it is gone. Killing a gone pane is Ok;
    /// a [`PaneStatus::Foreign`] pane is refused ([`BackendError::NotOurs`])
    /// and left as it is.
    async fn kill(&self, pane: &PaneRef, grace: Duration) -> Result<()>;

    /// [`kill`](Self::kill) for several panes at once, one result each in
    /// order. Backends that can (tmux) run one ladder for all: one listing,
    /// every group signalled together, one close, one verification. A pane
    /// released by [`status_closing_on_exit`](Self::status_closing_on_exit)
    /// whose process has ended closed by itself: it is not looked for, and
    /// what is left in its process group is killed.
    async fn kill_all(&self, panes: &[PaneRef], grace: Duration) -> Vec<Result<()>> {
        let mut out = Vec::with_capacity(panes.len());
        for pane in panes {
            out.push(self.kill(pane, grace).await);
        }
        out
    }

    /// Waits, at most `within`, until `pid` (a process that ran in a pane
    /// of this backend: the lead's, after its session was closed) has ended
    /// and been reaped. The default waits for it to end; tmux also makes its
    /// server reap it where the server missed its end, which otherwise left
    /// it a zombie until some other pane process ended.
    async fn await_ended(&self, pid: u32, within: Duration) {
        let deadline = std::time::Instant::now() + within;
        while process::process_alive(pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(process::POLL).await;
        }
    }

    /// Liveness of panes swarm did not open (another tool's team: Claude
    /// Code's lead opens its teammates' tmux panes), by id alone, marks
    /// ignored: `Running`, `Exited` or `Gone`, never `Foreign`. Read-only:
    /// it is what a watcher may know, and nothing may act on it (every
    /// action goes through a [`PaneRef`] and its mark).
    async fn observe(&self, panes: &[PaneId]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let _ = panes;
        Err(BackendError::unsupported(self.kind(), "observe"))
    }

    /// Every pane carrying a swarm mark, with its liveness, where
    /// [`Capabilities::list_marked`] says so.
    async fn list_marked(&self) -> Result<Vec<(PaneRef, PaneMark, PaneStatus)>> {
        Err(BackendError::unsupported(self.kind(), "list_marked"))
    }

    /// Resolves when some pane's process has exited since the last call
    /// (an exit before the call counts), where
    /// [`Capabilities::exit_events`] says so. The default never resolves:
    /// those backends' callers poll [`status`](Self::status).
    async fn changes(&self) {
        std::future::pending::<()>().await
    }

    /// The multiplexer version this backend checked, if any (recorded so
    /// that later processes of the team skip the check).
    async fn checked_version(&self) -> Option<(u32, u32)> {
        None
    }

    /// Facet: a pane can be made the one the user looks at (tmux, iTerm2).
    fn pane_focus(&self) -> Option<&dyn PaneFocus> {
        None
    }

    /// Facet: a pane's visible text can be read (tmux, in-process).
    fn pane_text(&self) -> Option<&dyn PaneText> {
        None
    }

    /// Facet: swarm arranges the panes of the lead's window: hides and
    /// shows them, titles and colours them, lays the column out (tmux).
    fn layout(&self) -> Option<&dyn Layout> {
        None
    }

    /// Facet: the team's home session, a detached session the lead runs in
    /// that the user attaches to (tmux).
    fn homes(&self) -> Option<&dyn HomeSessions> {
        None
    }

    /// Facet: the panes' screens live in this process and take key input,
    /// so the TeamsDialog draws them itself (in-process).
    fn screens(&self) -> Option<&dyn LiveScreens> {
        None
    }
}

/// The facet [`PaneBackendExecutor::pane_focus`].
#[async_trait::async_trait]
pub trait PaneFocus: Send + Sync {
    /// Makes `pane` the current pane of its window, and its window the
    /// current one.
    async fn focus(&self, pane: &PaneId) -> Result<()>;
}

/// The facet [`PaneBackendExecutor::pane_text`].
#[async_trait::async_trait]
pub trait PaneText: Send + Sync {
    /// The pane's visible text (diagnostics, `swarm output` before a log
    /// exists, tests).
    async fn capture(&self, pane: &PaneId) -> Result<String>;
}

/// The facet [`PaneBackendExecutor::layout`].
#[async_trait::async_trait]
pub trait Layout: Send + Sync {
    /// Moves a marked pane out of sight (refused for a foreign pane).
    async fn hide(&self, pane: &PaneRef) -> Result<()>;
    /// Brings a hidden marked pane back beside the lead.
    async fn show(&self, pane: &PaneRef) -> Result<()>;
    /// The title its border shows.
    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()>;
    /// The colour its border shows, a [`PALETTE`] name.
    async fn set_color(&self, pane: &PaneId, color: &str) -> Result<()>;
    /// Lays the lead's window out again: the lead on the left, the
    /// teammates' column even.
    async fn rebalance(&self) -> Result<()>;
    /// Puts back what swarm changed in the window of `host`, a pane swarm
    /// did not create (the user's pane the lead ran in).
    async fn restore_host(&self, host: &PaneId) -> Result<()>;
    /// Where a pane this backend instance opened was put when it is not
    /// beside the lead, as a user would look for it (`window 2`: the
    /// overflow window when the lead's window is full), else `None`.
    async fn placed_apart(&self, pane: &PaneId) -> Option<String>;
}

/// The facet [`PaneBackendExecutor::homes`].
#[async_trait::async_trait]
pub trait HomeSessions: Send + Sync {
    /// True when a home session named `name` exists (and carries any mark).
    async fn home_exists(&self, name: &str) -> Result<bool>;
    /// Creates the detached home session `name` with `lead` in its first
    /// pane; the session is marked with `lead.mark`.
    async fn open_home(&self, name: &str, lead: &SpawnSpec) -> Result<PaneRef>;
    /// Closes home session `name` if it carries `nonce` (refused, and left
    /// alone, otherwise); a missing session is Ok.
    async fn close_home(&self, name: &str, nonce: &str) -> Result<()>;
    /// The argv (program first) that attaches the user's terminal to home
    /// session `name`.
    fn attach_argv(&self, name: &str) -> Result<Vec<String>>;
    /// Detaches the client (started from [`HomeSessions::attach_argv`])
    /// whose process is `client_pid` from home session `name`: the client
    /// exits restoring the user's terminal, with no `[terminated]`. False
    /// when no such client is attached there.
    async fn detach(&self, name: &str, client_pid: u32) -> Result<bool>;
}

/// The facet [`PaneBackendExecutor::screens`]. Synchronous: the TeamsDialog
/// calls it while drawing.
pub trait LiveScreens: Send + Sync {
    /// True when this process hosts `pane` (in-process panes live inside
    /// their lead; another process can reach them only by pid).
    fn hosts(&self, pane: &PaneId) -> bool;
    /// Runs `f` on the pane's live screen.
    fn with_screen(&self, pane: &PaneId, f: &mut dyn FnMut(&vt100::Screen)) -> Result<()>;
    /// Forwards key bytes to the pane's program.
    fn write_input(&self, pane: &PaneId, bytes: &[u8]) -> Result<()>;
    /// Resizes the pane's terminal.
    fn resize(&self, pane: &PaneId, rows: u16, cols: u16) -> Result<()>;
}

/// The facts detection decides from, gathered by the caller.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvFacts {
    /// `TMUX` is set and non-empty.
    pub in_tmux: bool,
    /// `TMUX_PANE`, the lead's pane when inside tmux.
    pub tmux_pane: Option<String>,
    /// `TERM_PROGRAM`.
    pub term_program: Option<String>,
    /// `ITERM_SESSION_ID`.
    pub iterm_session_id: Option<String>,
    /// `WT_SESSION` is set.
    pub wt_session: bool,
    pub tmux_on_path: bool,
    pub it2_on_path: bool,
    pub wt_on_path: bool,
    /// `--backend`, `None` for auto.
    pub requested: Option<BackendKind>,
}

impl EnvFacts {
    /// Reads the facts from this process's environment and `PATH`.
    pub fn from_process_env() -> Self {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        // `which` is the one PATH lookup: an executable file, as `exec`
        // would run it (and `PATHEXT` on Windows).
        let on_path = |name: &str| which::which(name).is_ok();
        Self {
            in_tmux: var("TMUX").is_some(),
            tmux_pane: var("TMUX_PANE"),
            term_program: var("TERM_PROGRAM"),
            iterm_session_id: var("ITERM_SESSION_ID"),
            wt_session: var("WT_SESSION").is_some(),
            tmux_on_path: on_path("tmux"),
            it2_on_path: on_path("it2"),
            wt_on_path: on_path("wt"),
            requested: None,
        }
    }
}

/// The backend chosen, and why (shown by `swarm doctor`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detection {
    pub kind: BackendKind,
    pub reason: String,
    /// The lead's own pane when it already runs inside the chosen multiplexer.
    pub lead_pane: Option<PaneId>,
}

/// Chooses a backend from explicit facts. Auto order: inside tmux → tmux;
/// iTerm2 with `it2` → iTerm2; tmux installed → tmux (new session);
/// otherwise in-process. Windows Terminal is never chosen: this build
/// cannot drive it ([`windows_terminal::UNAVAILABLE`]). An explicit request
/// wins, but is refused when its tool is missing.
pub fn detect(facts: &EnvFacts) -> Result<Detection> {
    let in_iterm =
        facts.term_program.as_deref() == Some("iTerm.app") || facts.iterm_session_id.is_some();
    let tmux_lead = || {
        if facts.in_tmux {
            facts.tmux_pane.clone().map(PaneId)
        } else {
            None
        }
    };
    if let Some(kind) = facts.requested {
        let missing = match kind {
            BackendKind::Tmux if !facts.tmux_on_path => Some("tmux is not on PATH"),
            BackendKind::ITerm2 if !in_iterm => Some("this terminal is not iTerm2"),
            BackendKind::WindowsTerminal => Some(windows_terminal::UNAVAILABLE),
            _ => None,
        };
        if let Some(reason) = missing {
            return Err(BackendError::Unavailable {
                backend: kind,
                reason: reason.to_string(),
            });
        }
        let lead_pane = match kind {
            BackendKind::Tmux => tmux_lead(),
            _ => None,
        };
        return Ok(Detection {
            kind,
            reason: format!("--backend {kind} was requested"),
            lead_pane,
        });
    }
    let (kind, reason, lead_pane) = if facts.in_tmux {
        (
            BackendKind::Tmux,
            "TMUX is set: the lead runs inside tmux".to_string(),
            tmux_lead(),
        )
    } else if in_iterm && facts.it2_on_path {
        (
            BackendKind::ITerm2,
            "iTerm2 (TERM_PROGRAM/ITERM_SESSION_ID) with it2 on PATH".to_string(),
            None,
        )
    } else if facts.tmux_on_path {
        let why = if facts.wt_session {
            "tmux is installed: a new tmux session (Windows Terminal cannot be driven by this build)"
        } else {
            "tmux is installed: a new tmux session"
        };
        (BackendKind::Tmux, why.to_string(), None)
    } else {
        let why = if in_iterm {
            "iTerm2 without it2 on PATH and no tmux: in-process PTYs"
        } else {
            "no multiplexer found: in-process PTYs"
        };
        (BackendKind::InProcess, why.to_string(), None)
    };
    Ok(Detection {
        kind,
        reason,
        lead_pane,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> EnvFacts {
        EnvFacts::default()
    }

    #[test]
    fn a_nonce_is_32_lowercase_hex_digits_and_never_repeats() {
        let nonces: std::collections::BTreeSet<String> = (0..1000).map(|_| new_nonce()).collect();
        assert_eq!(nonces.len(), 1000, "a nonce came twice");
        for n in &nonces {
            assert!(
                n.len() == 32 && n.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
                "{n:?}"
            );
        }
        // Every bit is random (no version bits as in a UUID v4): each of
        // the 32 digits takes more than one value over the thousand.
        for i in 0..32 {
            let seen: std::collections::BTreeSet<u8> =
                nonces.iter().map(|n| n.as_bytes()[i]).collect();
            assert!(seen.len() > 1, "digit {i} is fixed");
        }
    }

    #[test]
    fn inside_tmux_wins_and_names_the_lead_pane() {
        let f = EnvFacts {
            in_tmux: true,
            tmux_pane: Some("%3".into()),
            term_program: Some("iTerm.app".into()),
            it2_on_path: true,
            tmux_on_path: true,
            ..facts()
        };
        let d = detect(&f).unwrap();
        assert_eq!(d.kind, BackendKind::Tmux);
        assert_eq!(d.lead_pane, Some(PaneId::new("%3")));
        assert!(d.reason.contains("TMUX"), "{}", d.reason);
    }

    #[test]
    fn iterm2_needs_it2() {
        let base = EnvFacts {
            iterm_session_id: Some("w0t0p0:ABC".into()),
            tmux_on_path: true,
            ..facts()
        };
        assert_eq!(detect(&base).unwrap().kind, BackendKind::Tmux);
        let with_it2 = EnvFacts {
            it2_on_path: true,
            ..base
        };
        assert_eq!(detect(&with_it2).unwrap().kind, BackendKind::ITerm2);
    }

    #[test]
    fn windows_terminal_is_never_chosen_then_tmux_then_in_process() {
        let wt = EnvFacts {
            wt_session: true,
            tmux_on_path: true,
            wt_on_path: true,
            ..facts()
        };
        assert_eq!(detect(&wt).unwrap().kind, BackendKind::Tmux);
        let asked = EnvFacts {
            requested: Some(BackendKind::WindowsTerminal),
            ..wt
        };
        match detect(&asked) {
            Err(BackendError::Unavailable { backend, reason }) => {
                assert_eq!(backend, BackendKind::WindowsTerminal);
                assert!(reason.contains("cannot drive Windows Terminal"), "{reason}");
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
        let tmux = EnvFacts {
            tmux_on_path: true,
            ..facts()
        };
        let d = detect(&tmux).unwrap();
        assert_eq!(d.kind, BackendKind::Tmux);
        assert_eq!(d.lead_pane, None);
        let none = detect(&facts()).unwrap();
        assert_eq!(none.kind, BackendKind::InProcess);
        assert!(none.reason.contains("in-process"));
    }

    #[test]
    fn an_explicit_request_wins_but_needs_its_tool() {
        let f = EnvFacts {
            in_tmux: true,
            tmux_on_path: true,
            requested: Some(BackendKind::InProcess),
            ..facts()
        };
        assert_eq!(detect(&f).unwrap().kind, BackendKind::InProcess);
        let f = EnvFacts {
            requested: Some(BackendKind::Tmux),
            ..facts()
        };
        assert!(matches!(
            detect(&f),
            Err(BackendError::Unavailable {
                backend: BackendKind::Tmux,
                ..
            })
        ));
    }

    #[test]
    fn backend_kind_strings_round_trip() {
        for kind in [
            BackendKind::Tmux,
            BackendKind::ITerm2,
            BackendKind::WindowsTerminal,
            BackendKind::InProcess,
        ] {
            assert_eq!(kind.as_str().parse::<BackendKind>().unwrap(), kind);
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert!("screen".parse::<BackendKind>().is_err());
    }

    #[test]
    fn pane_id_serializes_as_a_plain_string() {
        let id = PaneId::new("%12");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"%12\"");
        let back: PaneId = serde_json::from_str("\"inproc-3\"").unwrap();
        assert_eq!(back.as_str(), "inproc-3");
    }

    #[test]
    fn a_program_that_trims_its_own_env_is_started_directly_with_its_env_in_one_variable() {
        let plain = SpawnSpec::new("prog", ["a b"], "/")
            .env("K", "v=1")
            .env("L", "")
            .env("M", "tab\tnewline\n,quote\"");
        assert_eq!(
            plain.start_over_set_env(),
            Start {
                argv: plain.exact_env_argv(),
                env: plain.env.clone()
            },
            "a program that does not trim is started by env -i"
        );
        let start = plain.clone().trims_own_env().start_over_set_env();
        assert_eq!(start.argv, ["prog", "a b"]);
        let [(name, value)] = start.env.as_slice() else {
            panic!("one variable: {:?}", start.env);
        };
        assert_eq!(name, EXACT_ENV_VAR);
        assert!(
            !value.chars().any(char::is_control),
            "no control character reaches tmux: {value}"
        );
        let back: Vec<(String, String)> = serde_json::from_str(value).expect("JSON pairs");
        assert_eq!(back, plain.env, "every pair, in order");
    }

    #[test]
    fn exact_env_argv_clears_then_sets() {
        let spec = SpawnSpec::new("prog", ["a b", ";"], "/").env("K", "v=1");
        assert_eq!(
            spec.exact_env_argv(),
            ["/usr/bin/env", "-i", "--", "K=v=1", "prog", "a b", ";"]
        );
    }

    #[test]
    fn validation_refuses_what_env_would_misread() {
        let dir = std::env::temp_dir();
        assert!(
            SpawnSpec::new("a=b", Vec::<String>::new(), &dir)
                .validate()
                .is_err()
        );
        assert!(
            SpawnSpec::new("sh", Vec::<String>::new(), &dir)
                .env("A=B", "1")
                .validate()
                .is_err()
        );
        assert!(
            SpawnSpec::new("sh", Vec::<String>::new(), "/nonexistent/dir")
                .validate()
                .is_err()
        );
        assert!(
            SpawnSpec::new("sh", Vec::<String>::new(), &dir)
                .color("mauve")
                .validate()
                .is_err()
        );
        assert!(
            SpawnSpec::new("sh", Vec::<String>::new(), &dir)
                .color("purple")
                .validate()
                .is_ok()
        );
    }
}
