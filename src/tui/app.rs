//! The event loop: the one place that joins the lead ([`LeadControl`]), the
//! keys, the clock and the terminal. It redraws only when something changed
//! (a wake-up from the lead, a key, a resize, a countdown or activity-age
//! tick), at most once per [`RunOptions::min_frame`] and, after a wake-up,
//! once the change has settled; it asks the lead for a snapshot only when a
//! frame or a key needs one. Between changes it
//! sleeps on one channel. It never prints: notices go to the footer, logs to
//! the lead's log file.

use std::collections::HashMap;
use std::io::{PipeReader, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::{self, Event};
use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::layout::Rect;

use super::keymap::{self, Action};
use super::state::{MemberStatus, Modal, TeamView, UiState};
use super::terminal::{TerminalGuard, termination_signal};
use super::view::{self, ScreenSource};

/// What the TUI needs from the lead. Everything it does goes through
/// [`LeadControl::perform`]; everything it shows comes from
/// [`LeadControl::snapshot`]. Live in-process screens come through the
/// [`ScreenSource`] supertrait (backends without them return `false`).
pub trait LeadControl: ScreenSource {
    /// The team as it is now.
    fn snapshot(&mut self) -> TeamView;
    /// Carries out an action; `Ok(Some(text))` is a notice for the footer
    /// (e.g. `sent to @bob`), `Err` is shown there too.
    fn perform(&mut self, action: Action) -> Result<Option<String>>;
}

/// How [`run`] behaves.
pub struct RunOptions {
    /// Draw colours (false under NO_COLOR).
    pub color: bool,
    /// The loop's inputs, whose [`Inputs::waker`] the lead calls whenever a
    /// file it watches or a pane's liveness changes; the loop re-snapshots.
    /// Several wake-ups coalesce into one redraw.
    pub inputs: Inputs,
    /// The shortest time between two frames.
    pub min_frame: Duration,
    /// Ring the terminal bell once per new attention event (false under
    /// `NO_BELL`).
    pub bell: bool,
}

impl RunOptions {
    /// Colours unless `NO_COLOR` is set to a non-empty value
    /// (<https://no-color.org>), the bell unless `NO_BELL` is, 100 ms
    /// between frames.
    pub fn from_env(inputs: Inputs) -> RunOptions {
        let unset = |var: &str| std::env::var_os(var).is_none_or(|v| v.is_empty());
        RunOptions {
            color: unset("NO_COLOR"),
            inputs,
            min_frame: Duration::from_millis(100),
            bell: unset("NO_BELL"),
        }
    }
}

/// The one channel the loop sleeps on: keys, the terminal's hang-up,
/// signals and the lead's wake-ups. The lead's wake-up goes straight into
/// it ([`Inputs::waker`]): a channel of its own needed a thread to pass each
/// one on, two thread wake-ups per change instead of one.
pub struct Inputs {
    tx: Sender<Input>,
    rx: Receiver<Input>,
}

impl Default for Inputs {
    fn default() -> Self {
        let (tx, rx) = mpsc::channel();
        Inputs { tx, rx }
    }
}

impl Inputs {
    /// Wakes the loop (it re-snapshots); false once the loop has ended.
    pub fn waker(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        let tx = self.tx.clone();
        move || tx.send(Input::Wake).is_ok()
    }
}

/// Why [`run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The user pressed `q` (teammates keep running).
    Quit,
    /// SIGTERM, SIGHUP or SIGINT arrived.
    Signal(i32),
    /// The terminal went away (its tmux server or window was killed): the
    /// kernel does not always send SIGHUP to a process that is not the
    /// session leader, so this is watched for separately.
    TerminalLost,
}

/// One thing the loop wakes up for.
#[derive(Debug)]
pub enum Input {
    Term(Event),
    Wake,
    Signal(i32),
    /// The terminal hung up (see `watch_terminal`).
    HungUp,
    Failed(std::io::Error),
}

/// Activity ages under a minute are shown in seconds: tick every second.
const FAST_TICK: Duration = Duration::from_secs(1);
const SLOW_TICK: Duration = Duration::from_secs(30);

/// Takes over the terminal and runs the TeamsDialog until `q` or a signal.
/// The terminal is restored whatever happens.
pub fn run(control: &mut dyn LeadControl, opts: RunOptions) -> Result<Exit> {
    let mut guard = TerminalGuard::enter()?;
    let RunOptions {
        color,
        inputs: Inputs { tx, rx },
        min_frame,
        bell,
    } = opts;
    spawn_input(tx.clone())?;
    spawn_watch(tx, guard.take_signal_pipe())?;
    let mut signal = |alert: &Alert| {
        if let Err(e) = signal_attention(alert, bell) {
            tracing::warn!("signal attention on the terminal: {e}");
        }
    };
    let result = event_loop(
        guard.terminal(),
        control,
        &rx,
        (color, min_frame),
        &mut signal,
    );
    // The watch thread ends when the guard hangs up its signal pipe.
    drop(guard);
    result
}

/// Starts the thread that reads keys. It sleeps in crossterm's blocking
/// read and is not joined: once the loop has gone its next event finds
/// the channel closed, or the process ends first. (A thread that woke on
/// a timer to look for a stop flag cost a wake-up four times a second for
/// the whole life of the lead.) crossterm is built with `use-dev-tty`
/// (Cargo.toml): its default reader polls edge-triggered and lost a key
/// typed as a SIGWINCH came (`regression::a_key_typed_while_the_terminal_resizes_is_not_lost`).
/// With this reader a terminal that hung up keeps its `poll` returning at
/// once, so the thread spins until [`watch_terminal`] ends the loop.
fn spawn_input(tx: Sender<Input>) -> Result<()> {
    thread::Builder::new()
        .name("tui-input".into())
        .spawn(move || {
            loop {
                let sent = match event::read() {
                    Ok(ev) => tx.send(Input::Term(ev)),
                    Err(e) => {
                        let _ = tx.send(Input::Failed(e));
                        return;
                    }
                };
                if sent.is_err() {
                    return;
                }
            }
        })
        .context("spawn the TUI input thread")?;
    Ok(())
}

/// What [`watch_terminal`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// The terminal hung up (or its descriptor failed).
    HungUp,
    /// A byte on the signal pipe: a termination signal arrived.
    Signalled,
    /// The signal pipe hung up: the TUI is over.
    Stopped,
    /// `poll` itself failed.
    Failed,
}

/// Starts the thread that turns a hang-up of the terminal and the
/// termination signals into [`Input`]s (see [`watch_terminal`]).
fn spawn_watch(tx: Sender<Input>, signals: Option<PipeReader>) -> Result<()> {
    thread::Builder::new()
        .name("tui-watch".into())
        .spawn(move || {
            let input = loop {
                match watch_terminal(libc::STDIN_FILENO, signals.as_ref()) {
                    Watched::HungUp => break Input::HungUp,
                    // The signal's flag is stored before its byte is
                    // written (see `terminal`), so it is there.
                    Watched::Signalled => {
                        if let Some(sig) = termination_signal() {
                            break Input::Signal(sig);
                        }
                    }
                    Watched::Stopped | Watched::Failed => return,
                }
            };
            let _ = tx.send(input);
        })
        .context("spawn the TUI watch thread")?;
    Ok(())
}

/// Sleeps in `poll(2)` until the terminal `tty` hangs up or the signal
/// pipe `signals` has a byte or hangs up.
///
/// crossterm's reader, given a terminal whose other end is gone, never
/// returns (it read end-of-file in a loop: a lead whose tmux server was
/// killed spun a core that way), and the kernel sends SIGHUP only to the
/// session leader. The terminal is polled for no events: `poll` then
/// reports only POLLHUP, POLLERR and POLLNVAL, so typed keys do not wake
/// this thread and are left to crossterm.
fn watch_terminal(tty: RawFd, signals: Option<&PipeReader>) -> Watched {
    let broken = libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: tty,
                events: 0,
                revents: 0,
            },
            libc::pollfd {
                // A negative descriptor is ignored by poll.
                fd: signals.map_or(-1, |p| p.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a live array of two initialised pollfds and 2 is
        // its length; poll only writes their `revents`. -1: no timeout.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Watched::Failed;
        }
        if let Some(mut pipe) = signals.filter(|_| fds[1].revents & libc::POLLIN != 0)
            && pipe.read(&mut [0u8]).is_ok_and(|n| n == 1)
        {
            return Watched::Signalled;
        }
        if fds[1].revents & broken != 0 {
            return Watched::Stopped;
        }
        if fds[0].revents & broken != 0 {
            return Watched::HungUp;
        }
    }
}

/// What needs the user, for the terminal to signal: the events that are
/// new since the last frame (each signalled once) and how many teammates
/// need the user now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    /// `@bob: task #3 failed`, sorted.
    pub fresh: Vec<String>,
    pub count: usize,
}

/// The attention events already signalled, so that each rings once; an
/// event that ends is forgotten, so one that comes back rings again.
#[derive(Debug, Default)]
struct Alerts {
    seen: std::collections::BTreeSet<String>,
    count: Option<usize>,
}

impl Alerts {
    /// What to signal for `view`, if anything changed.
    fn next(&mut self, view: &TeamView) -> Option<Alert> {
        let now: std::collections::BTreeSet<String> = view
            .members
            .iter()
            .filter_map(|m| {
                let a = m.attention.as_ref()?;
                Some(format!("@{}: {}", m.name, a.label()))
            })
            .collect();
        let fresh: Vec<String> = now.difference(&self.seen).cloned().collect();
        let count = view.totals().attention;
        let changed = !fresh.is_empty() || self.count != Some(count);
        self.seen = now;
        self.count = Some(count);
        changed.then_some(Alert { fresh, count })
    }
}

/// Rings the terminal bell for fresh events (when `bell`). In tmux the
/// bell marks the lead's window in the status line (`monitor-bell`), so a
/// user looking at another window sees that the team needs them. The
/// title is left alone: it is the pane's name swarm (or the user, when the
/// lead runs in their own pane) gave it.
fn signal_attention(alert: &Alert, bell: bool) -> std::io::Result<()> {
    use std::io::Write;
    if !bell || alert.fresh.is_empty() {
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    out.write_all(b"\x07")?;
    out.flush()
}

/// Whether some shown age changes every second.
fn ages_in_seconds(view: &TeamView) -> bool {
    view.members.iter().any(|m| {
        m.last_activity.is_some_and(|a| a < Duration::from_secs(60))
            || m.progress.is_some()
            || matches!(m.status, MemberStatus::Stopping { .. })
    }) || view
        .requests
        .iter()
        .any(|r| r.age.is_some_and(|a| a < Duration::from_secs(60)))
}

/// What the loop shows: the last snapshot, where the user is, whether the
/// frame on screen is out of date, and whether the snapshot is.
struct Shown {
    view: TeamView,
    ui: UiState,
    dirty: bool,
    /// The lead said something changed since the snapshot: a new one is
    /// taken when it is next needed (a frame drawn, a key handled), so the
    /// wake-ups between two frames cost one snapshot, not one each.
    stale: bool,
    /// When the first wake-up since the snapshot came: the frame waits
    /// [`settle`] after it, so the several writes of one change (a task
    /// file, then a message, then its consumption) make one frame.
    woke: Option<Instant>,
    /// The lead's own notice when the last action's notice was set: once
    /// the lead says something else (the outcome of "killing @x…"), the
    /// action's notice gives way to it.
    notice_over: Option<Option<String>>,
}

/// How long a frame waits after the first wake-up of a change: half the
/// shortest time between frames.
fn settle(min_frame: Duration) -> Duration {
    min_frame / 2
}

impl Shown {
    /// A fresh snapshot, the UI state kept in step with it.
    fn refresh(&mut self, control: &mut dyn LeadControl) {
        self.view = control.snapshot();
        self.ui.sync(&self.view);
        if let Some(over) = &self.notice_over
            && *over != self.view.notice
        {
            self.ui.notice = None;
            self.notice_over = None;
        }
        self.stale = false;
        self.woke = None;
    }

    /// A fresh snapshot if the lead said something changed since the last.
    fn catch_up(&mut self, control: &mut dyn LeadControl) {
        if self.stale {
            self.refresh(control);
        }
    }
}

/// The loop proper, over any ratatui backend and any source of [`Input`]
/// (the tests drive it with a `TestBackend` and a channel).
/// `(color, min_frame)`: draw colours, the shortest time between frames;
/// `alert` is told what needs the user whenever that changes.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    control: &mut dyn LeadControl,
    inputs: &Receiver<Input>,
    (color, min_frame): (bool, Duration),
    alert: &mut dyn FnMut(&Alert),
) -> Result<Exit>
where
    B::Error: Send + Sync + 'static,
{
    let view = control.snapshot();
    let ui = UiState::new(&view);
    let mut shown = Shown {
        view,
        ui,
        dirty: true,
        stale: false,
        woke: None,
        notice_over: None,
    };
    let mut last_draw: Option<Instant> = None;
    let mut last_tick = Instant::now();
    let mut pane_sizes: HashMap<String, (u16, u16)> = HashMap::new();
    let mut alerts = Alerts::default();
    // An input taken out of the channel while coalescing wake-ups, handled
    // next: a key pressed during a burst of wake-ups must not be lost.
    let mut stashed: Option<Input> = None;
    loop {
        if let Some(sig) = termination_signal() {
            return Ok(Exit::Signal(sig));
        }
        let now = Instant::now();
        let fast = ages_in_seconds(&shown.view)
            || !shown.ui.killing.is_empty()
            || matches!(shown.ui.modal, Modal::ShutdownCountdown { .. });
        let tick_every = if fast { FAST_TICK } else { SLOW_TICK };
        if now >= last_tick + tick_every {
            shown.ui.tick(now - last_tick);
            last_tick = now;
            shown.stale |= fast;
            shown.dirty = true;
        }
        let mut wait = (last_tick + tick_every).saturating_duration_since(now);
        if shown.dirty {
            let due = last_draw
                .map_or(now, |t| t + min_frame)
                .max(shown.woke.map_or(now, |w| w + settle(min_frame)));
            if now >= due {
                shown.catch_up(control);
                if let Some(a) = alerts.next(&shown.view) {
                    alert(&a);
                }
                resize_panes(terminal, control, &shown, &mut pane_sizes)?;
                let screens: &dyn ScreenSource = &*control;
                terminal
                    .draw(|f| view::draw(f, &shown.view, &shown.ui, screens, color))
                    .context("draw the TUI")?;
                last_draw = Some(now);
                shown.dirty = false;
            } else {
                wait = wait.min(due - now);
            }
        }
        let input = match stashed.take() {
            Some(input) => input,
            None => match inputs.recv_timeout(wait) {
                Ok(input) => input,
                Err(RecvTimeoutError::Timeout) => continue,
                // Every sender gone: no more keys can come.
                Err(RecvTimeoutError::Disconnected) => return Ok(Exit::Quit),
            },
        };
        if let Some(exit) = apply(input, control, inputs, &mut shown, &mut stashed)? {
            return Ok(exit);
        }
    }
}

/// Applies one input to what is shown; `Some` ends the loop. A wake-up
/// only marks the snapshot stale (the next frame or key takes a new one);
/// whatever was queued behind a burst of them (a key press) is put in
/// `stashed`, to be applied next.
fn apply(
    input: Input,
    control: &mut dyn LeadControl,
    inputs: &Receiver<Input>,
    shown: &mut Shown,
    stashed: &mut Option<Input>,
) -> Result<Option<Exit>> {
    match input {
        Input::Term(Event::Key(key)) => {
            // A key acts on the team as it is now.
            shown.catch_up(control);
            if let Some(action) = keymap::handle(key, &shown.view, &mut shown.ui) {
                if action == Action::Quit {
                    return Ok(Some(Exit::Quit));
                }
                let forwarded = matches!(action, Action::Input { .. });
                // Who the action would kill: no longer shown "killing…"
                // when it is refused outright.
                let doomed: Vec<String> = match &action {
                    Action::Kill(n) => vec![n.clone()],
                    Action::Prune(ns) => ns.clone(),
                    _ => Vec::new(),
                };
                let notice = match control.perform(action) {
                    Ok(n) => n,
                    Err(e) => {
                        for n in &doomed {
                            shown.ui.killing.remove(n);
                        }
                        Some(format!("{e:#}"))
                    }
                };
                if !forwarded {
                    shown.refresh(control);
                }
                if let Some(n) = notice {
                    shown.ui.notice = Some(n);
                    shown.notice_over = Some(shown.view.notice.clone());
                }
            }
            shown.dirty = true;
        }
        Input::Term(Event::Resize(..)) => shown.dirty = true,
        Input::Term(_) => {}
        Input::Wake => {
            while let Ok(next) = inputs.try_recv() {
                if !matches!(next, Input::Wake) {
                    *stashed = Some(next);
                    break;
                }
            }
            shown.stale = true;
            shown.woke.get_or_insert_with(Instant::now);
            shown.dirty = true;
        }
        Input::Signal(sig) => return Ok(Some(Exit::Signal(sig))),
        Input::HungUp => return Ok(Some(Exit::TerminalLost)),
        Input::Failed(e) => return Err(e).context("read the terminal"),
    }
    Ok(None)
}

/// Keeps each shown in-process pane's PTY the size of the area it is
/// drawn in (the zoomed pane, or every grid tile), asking the lead only
/// when a size changed.
fn resize_panes<B: Backend>(
    terminal: &mut Terminal<B>,
    control: &mut dyn LeadControl,
    shown: &Shown,
    sizes: &mut HashMap<String, (u16, u16)>,
) -> Result<()>
where
    B::Error: Send + Sync + 'static,
{
    let size = terminal.size().context("read the terminal size")?;
    let frame = Rect::new(0, 0, size.width, size.height);
    for (name, area) in view::pane_areas(frame, &shown.view, &shown.ui) {
        let want = (area.height, area.width);
        if area.is_empty() || sizes.get(&name) == Some(&want) {
            continue;
        }
        sizes.insert(name.clone(), want);
        if let Err(e) = control.perform(Action::ResizePane {
            name: name.clone(),
            rows: area.height,
            cols: area.width,
        }) {
            tracing::warn!("resize the pane of {name}: {e:#}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
