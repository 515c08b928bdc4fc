//! The in-process backend: each pane is a PTY (`portable-pty`) hosted by the
//! lead, with a reader thread per pane feeding a `vt100` screen and an output
//! log, answers to terminal status queries, resize and key input. The pane's
//! program runs as `env -i -- K=V … PROGRAM ARGS` so its environment is
//! exactly the spec's. Panes die with the host: dropping the backend kills
//! every pane's process group.

mod pane;
pub mod queries;

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

use crate::error::{BackendError, Result};
use crate::process;
use crate::{
    BackendKind, Capabilities, LiveScreens, PaneBackendExecutor, PaneId, PaneMark, PaneRef,
    PaneStatus, PaneText, SpawnSpec,
};
pub use pane::{LOG_CAP, OutputLog};
use pane::{Pane, Shared, lock};

/// The size of a new pane.
pub const DEFAULT_SIZE: (u16, u16) = (24, 80);
/// Lines of scrollback kept by each pane's screen.
pub const SCROLLBACK: usize = 1000;

/// Panes hosted in PTYs inside this process.
pub struct InProcessBackend {
    panes: Mutex<HashMap<PaneId, Arc<Pane>>>,
    next: AtomicU64,
    size: (u16, u16),
    /// Notified by each pane's exit watcher (see [`watch_exit`]).
    exits: Arc<tokio::sync::Notify>,
}

impl Default for InProcessBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl InProcessBackend {
    pub fn new() -> Self {
        Self::with_size(DEFAULT_SIZE.0, DEFAULT_SIZE.1)
    }

    /// A backend whose new panes have `rows` x `cols`.
    pub fn with_size(rows: u16, cols: u16) -> Self {
        Self {
            panes: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            size: (rows, cols),
            exits: Arc::new(tokio::sync::Notify::new()),
        }
    }

    fn pane(&self, id: &PaneId) -> Result<Arc<Pane>> {
        lock(&self.panes)
            .get(id)
            .cloned()
            .ok_or_else(|| BackendError::UnknownPane {
                backend: BackendKind::InProcess,
                pane: id.clone(),
            })
    }

    /// The ids of the live panes, in creation order.
    pub fn panes(&self) -> Vec<PaneId> {
        let mut ids: Vec<PaneId> = lock(&self.panes).keys().cloned().collect();
        ids.sort_by_key(|p| {
            p.as_str()
                .trim_start_matches("inproc-")
                .parse::<u64>()
                .unwrap_or(0)
        });
        ids
    }

    /// The current screen text.
    pub fn screen(&self, id: &PaneId) -> Result<String> {
        Ok(lock(&self.pane(id)?.shared.screen).screen().contents())
    }

    /// Runs `f` on the pane's screen (for the TUI, which draws cells).
    pub fn with_screen<R>(&self, id: &PaneId, f: impl FnOnce(&vt100::Screen) -> R) -> Result<R> {
        Ok(f(lock(&self.pane(id)?.shared.screen).screen()))
    }

    /// Output bytes from `offset`, and the offset to read from next.
    pub fn read_output(&self, id: &PaneId, offset: u64) -> Result<(Vec<u8>, u64)> {
        Ok(lock(&self.pane(id)?.shared.log).read_from(offset))
    }

    /// A receiver of the output log's end offset, for `--follow`.
    pub fn subscribe_output(&self, id: &PaneId) -> Result<tokio::sync::watch::Receiver<u64>> {
        Ok(self.pane(id)?.shared.progress.subscribe())
    }

    /// Forwards key bytes to the pane's program.
    pub fn write_input(&self, id: &PaneId, bytes: &[u8]) -> Result<()> {
        let pane = self.pane(id)?;
        let mut w = lock(&pane.shared.writer);
        w.write_all(bytes)
            .and_then(|_| w.flush())
            .map_err(|source| BackendError::Io {
                action: "write input to pane",
                path: id.as_str().into(),
                source,
            })
    }

    /// Resizes the PTY (the program gets SIGWINCH) and the screen.
    pub fn resize(&self, id: &PaneId, rows: u16, cols: u16) -> Result<()> {
        let pane = self.pane(id)?;
        lock(&pane.master)
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .map_err(|e| {
                BackendError::invalid("pane size", &format!("{rows}x{cols}"), e.to_string())
            })?;
        lock(&pane.shared.screen).screen_mut().set_size(rows, cols);
        Ok(())
    }

    /// The pane's title as spawned (nothing shows it: the TeamsDialog
    /// names panes by member).
    pub fn title(&self, id: &PaneId) -> Result<String> {
        Ok(self.pane(id)?.title.clone())
    }

    fn exit_status(pane: &Pane) -> Option<Option<i32>> {
        peek_exit(pane)
    }

    fn status_of(pane: &Pane) -> PaneStatus {
        match Self::exit_status(pane) {
            Some(code) => PaneStatus::Exited { code },
            None => PaneStatus::Running {
                pid: Some(pane.pid),
            },
        }
    }

    /// The pane if it carries `nonce`; `Ok(None)` when it is not hosted
    /// here; [`BackendError::NotOurs`] when its mark differs.
    fn own(&self, pane: &PaneRef) -> Result<Option<Arc<Pane>>> {
        match lock(&self.panes).get(&pane.id) {
            None => Ok(None),
            Some(p) if p.mark.nonce == pane.nonce => Ok(Some(Arc::clone(p))),
            Some(_) => Err(BackendError::NotOurs {
                pane: pane.id.clone(),
            }),
        }
    }
}

/// The pane's exit, if its process has ended, WITHOUT reaping it on Linux:
/// the zombie keeps the pid (and so the process group id) reserved until
/// `kill` reaps it, so the kill ladder can never signal a recycled id.
#[cfg(target_os = "linux")]
fn peek_exit(pane: &Pane) -> Option<Option<i32>> {
    let Ok(info) = wait_no_reap(pane.pid, libc::WNOHANG) else {
        // Already reaped (ECHILD): ask the child handle.
        return reaped_exit(pane);
    };
    // SAFETY: si_pid/si_status are valid to read after a successful waitid.
    let (pid, status) = unsafe { (info.si_pid(), info.si_status()) };
    if pid == 0 {
        return None;
    }
    Some((info.si_code == libc::CLD_EXITED).then_some(status))
}

#[cfg(not(target_os = "linux"))]
fn peek_exit(pane: &Pane) -> Option<Option<i32>> {
    reaped_exit(pane)
}

/// Opens a pane's output file to append to (0600, never through a
/// symlink).
fn open_output(path: &std::path::Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|source| BackendError::Io {
            action: "open the pane's output file",
            path: path.to_path_buf(),
            source,
        })
}

/// A child started in a PTY: the master side, the child, its pid.
type Started = (Box<dyn MasterPty + Send>, Box<dyn Child + Send + Sync>, u32);

/// The PTY's master side and the child `spec` started on its other side
/// (with exactly `spec`'s environment), and the child's pid; or why not.
fn start_in_pty(
    spec: &SpawnSpec,
    (rows, cols): (u16, u16),
) -> std::result::Result<Started, String> {
    let pair = native_pty_system()
        .openpty(PtySize {
            rows,
            cols,
            pixel_width: 0,
            pixel_height: 0,
        })
        .map_err(|e| format!("openpty: {e}"))?;
    let mut cmd = CommandBuilder::from_argv(
        spec.exact_env_argv()
            .into_iter()
            .map(std::ffi::OsString::from)
            .collect(),
    );
    cmd.env_clear();
    cmd.cwd(&spec.cwd);
    let child = pair.slave.spawn_command(cmd).map_err(|e| e.to_string())?;
    // The parent must not keep the child's side open, or EOF never comes.
    drop(pair.slave);
    let pid = child
        .process_id()
        .ok_or_else(|| "the PTY child has no pid".to_string())?;
    Ok((pair.master, child, pid))
}

/// The exit the child handle reports (reaping the child), if it has
/// ended: its code, or `None` when a signal ended it.
fn reaped_exit(pane: &Pane) -> Option<Option<i32>> {
    lock(&pane.child)
        .try_wait()
        .ok()
        .flatten()
        .map(|s| s.signal().is_none().then_some(s.exit_code() as i32))
}

/// `waitid(P_PID, pid, WEXITED | WNOWAIT | flags)`: the state of our child
/// `pid` once it has ended (`si_pid` 0 when `WNOHANG` found it running),
/// its zombie left for `kill` to reap.
#[cfg(target_os = "linux")]
fn wait_no_reap(pid: u32, flags: libc::c_int) -> std::io::Result<libc::siginfo_t> {
    // SAFETY: an all-zero siginfo_t is a valid value for waitid to fill.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: waitid on our own child's pid with WNOWAIT only reads its
    // state into `info`, a live local.
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | flags,
        )
    };
    if rc == 0 {
        Ok(info)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Starts a thread that sleeps until the child `pid` ends, then notifies
/// `exits`: the lead learns of an exit at once without polling (a
/// thread blocked in `waitid` costs no CPU). `WNOWAIT` leaves the zombie
/// for `kill` to reap, as [`peek_exit`] does.
#[cfg(target_os = "linux")]
fn watch_exit(id: &PaneId, pid: u32, exits: Arc<tokio::sync::Notify>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(format!("swarm-exit-{id}"))
        .stack_size(64 * 1024)
        .spawn(move || {
            // Until it exited, or was already reaped (ECHILD).
            while let Err(e) = wait_no_reap(pid, 0) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    break;
                }
            }
            // A stored permit if nobody waits now: the next wait sees it.
            exits.notify_one();
        })
        .map(|_| ())
}

/// Without a non-reaping blocking wait, exits are polled
/// (`exit_events` is false).
#[cfg(not(target_os = "linux"))]
fn watch_exit(_: &PaneId, _: u32, _: Arc<tokio::sync::Notify>) -> std::io::Result<()> {
    Ok(())
}

impl Drop for InProcessBackend {
    fn drop(&mut self) {
        // Panes die with their host.
        for (_, pane) in lock(&self.panes).drain() {
            // Deliberate ignores: a drop has no one to report to, and a
            // group already gone needs no signal.
            let _ = process::signal_group(pane.pid as i32, process::SIGKILL);
            let _ = lock(&pane.child).wait();
        }
    }
}

#[async_trait::async_trait]
impl PaneBackendExecutor for InProcessBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::InProcess
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            panes_outlive_lead: false,
            exact_env: true,
            exit_codes: true,
            exit_events: cfg!(target_os = "linux"),
            list_marked: true,
            output_file: true,
        }
    }

    fn pane_text(&self) -> Option<&dyn PaneText> {
        Some(self)
    }

    fn screens(&self) -> Option<&dyn LiveScreens> {
        Some(self)
    }

    async fn spawn(&self, spec: &SpawnSpec) -> Result<PaneRef> {
        spec.validate()?;
        let output = spec.output.as_deref().map(open_output).transpose()?;
        let fail = |reason: String| BackendError::Spawn {
            program: spec.program.clone(),
            reason,
        };
        let (rows, cols) = self.size;
        let (master, child, pid) = start_in_pty(spec, self.size).map_err(fail)?;
        let reader = master
            .try_clone_reader()
            .map_err(|e| fail(format!("PTY reader: {e}")))?;
        let writer = master
            .take_writer()
            .map_err(|e| fail(format!("PTY writer: {e}")))?;
        let (progress, _) = tokio::sync::watch::channel(0);
        let shared = Arc::new(Shared {
            screen: Mutex::new(vt100::Parser::new(rows, cols, SCROLLBACK)),
            log: Mutex::new(OutputLog::default()),
            writer: Mutex::new(writer),
            progress,
        });
        let id = PaneId::new(format!(
            "inproc-{}",
            self.next.fetch_add(1, Ordering::Relaxed)
        ));
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(format!("swarm-pty-{id}"))
            .spawn(move || pane::reader_loop(reader, thread_shared, output))
            .map_err(|e| fail(format!("reader thread: {e}")))?;
        watch_exit(&id, pid, Arc::clone(&self.exits))
            .map_err(|e| fail(format!("exit watcher thread: {e}")))?;
        let pane = Pane {
            pid,
            mark: spec.mark.clone(),
            master: Mutex::new(master),
            child: Mutex::new(child),
            shared,
            title: spec.title.clone(),
        };
        lock(&self.panes).insert(id.clone(), Arc::new(pane));
        spec.signal_ready()?;
        Ok(PaneRef::new(id, spec.mark.nonce.clone()))
    }

    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let map = lock(&self.panes).clone();
        Ok(panes
            .iter()
            .map(|pane| {
                let status = match map.get(&pane.id) {
                    None => PaneStatus::Gone,
                    Some(p) if p.mark.nonce != pane.nonce => PaneStatus::Foreign,
                    Some(p) => Self::status_of(p),
                };
                (pane.id.clone(), status)
            })
            .collect())
    }

    async fn list_marked(&self) -> Result<Vec<(PaneRef, PaneMark, PaneStatus)>> {
        let ids = self.panes();
        let map = lock(&self.panes).clone();
        Ok(ids
            .into_iter()
            .filter_map(|id| {
                let p = map.get(&id)?;
                let pane = PaneRef::new(id, p.mark.nonce.clone());
                Some((pane, p.mark.clone(), Self::status_of(p)))
            })
            .collect())
    }

    /// On Linux: when some pane's process has exited (a thread per pane
    /// waits for it), never on a timer. Elsewhere: never (polled).
    async fn changes(&self) {
        if cfg!(target_os = "linux") {
            self.exits.notified().await
        } else {
            std::future::pending::<()>().await
        }
    }

    async fn kill(&self, pane_ref: &PaneRef, grace: Duration) -> Result<()> {
        let Some(pane) = self.own(pane_ref)? else {
            return Ok(());
        };
        let id = &pane_ref.id;
        // portable-pty makes the child a session leader (setsid): its group id is its pid.
        let pgid = pane.pid as i32;
        let reap_pane = Arc::clone(&pane);
        process::terminate_group(pgid, grace, Duration::from_secs(2), move || {
            // Deliberate ignore: a reap; the ladder checks the group itself.
            let _ = lock(&reap_pane.child).try_wait();
            async {}
        })
        .await
        .map_err(|reason| BackendError::KillFailed {
            pane: id.clone(),
            reason,
        })?;
        // Deliberate ignore: a reap; liveness is checked just below.
        let _ = lock(&pane.child).try_wait();
        lock(&self.panes).remove(id);
        if process::process_alive(pane.pid) || process::group_alive(pgid) {
            return Err(BackendError::KillFailed {
                pane: id.clone(),
                reason: format!("pid {} or its group still alive after the ladder", pane.pid),
            });
        }
        Ok(())
    }
}

/// The screens the TeamsDialog draws and the keys it forwards: the
/// inherent methods, for a caller holding only the trait object.
impl LiveScreens for InProcessBackend {
    fn hosts(&self, pane: &PaneId) -> bool {
        lock(&self.panes).contains_key(pane)
    }

    fn with_screen(&self, pane: &PaneId, f: &mut dyn FnMut(&vt100::Screen)) -> Result<()> {
        InProcessBackend::with_screen(self, pane, |s| f(s))
    }

    fn write_input(&self, pane: &PaneId, bytes: &[u8]) -> Result<()> {
        InProcessBackend::write_input(self, pane, bytes)
    }

    fn resize(&self, pane: &PaneId, rows: u16, cols: u16) -> Result<()> {
        InProcessBackend::resize(self, pane, rows, cols)
    }
}

/// The visible text, as the screen shows it now.
#[async_trait::async_trait]
impl PaneText for InProcessBackend {
    async fn capture(&self, id: &PaneId) -> Result<String> {
        self.screen(id)
    }
}
