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
    /// The lead sends `()` whenever a file it watches or a pane's liveness
    /// changes; the loop re-snapshots. Several sends coalesce into one redraw.
    pub wake: Option<Receiver<()>>,
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
    pub fn from_env(wake: Option<Receiver<()>>) -> RunOptions {
        let unset = |var: &str| std::env::var_os(var).is_none_or(|v| v.is_empty());
        RunOptions {
            color: unset("NO_COLOR"),
            wake,
            min_frame: Duration::from_millis(100),
            bell: unset("NO_BELL"),
        }
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
    let (tx, rx) = mpsc::channel();
    spawn_input(tx.clone())?;
    spawn_watch(tx.clone(), guard.take_signal_pipe())?;
    let RunOptions {
        color,
        wake,
        min_frame,
        bell,
    } = opts;
    if let Some(wake) = wake {
        // Ends when the lead drops its sender or the loop has gone.
        thread::Builder::new()
            .name("tui-wake".into())
            .spawn(move || {
                while wake.recv().is_ok() {
                    if tx.send(Input::Wake).is_err() {
                        break;
                    }
                }
            })
            .context("spawn the TUI wake-up thread")?;
    } else {
        drop(tx);
    }
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
/// the whole life of the lead.)
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
/// crossterm's reader, given a terminal whose other end is gone, reads
/// end-of-file in a loop and never returns (a lead whose tmux server was
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
                match control.perform(action) {
                    Ok(Some(notice)) => shown.ui.notice = Some(notice),
                    Ok(None) => {}
                    Err(e) => shown.ui.notice = Some(format!("{e:#}")),
                }
                if !forwarded {
                    shown.refresh(control);
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
mod tests {
    use super::*;
    use crate::tui::state::{Attention, MemberRow};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::backend::TestBackend;
    use tui_term::vt100;

    /// A lead with one or two teammates that records what it was asked.
    struct FakeLead {
        members: Vec<&'static str>,
        in_process: bool,
        snapshots: usize,
        done: Vec<Action>,
        /// Members whose pane is dead, from the n-th snapshot on.
        dead_from: Option<(usize, &'static str)>,
        alerts: Vec<Alert>,
    }

    impl FakeLead {
        fn new(members: &[&'static str], in_process: bool) -> FakeLead {
            FakeLead {
                members: members.to_vec(),
                in_process,
                snapshots: 0,
                done: vec![],
                dead_from: None,
                alerts: vec![],
            }
        }
    }

    impl ScreenSource for FakeLead {
        fn with_screen(&self, _: &str, _: &mut dyn FnMut(&vt100::Screen)) -> bool {
            false
        }
    }

    impl LeadControl for FakeLead {
        fn snapshot(&mut self) -> TeamView {
            self.snapshots += 1;
            let mut members: Vec<MemberRow> =
                self.members.iter().map(|n| MemberRow::new(*n)).collect();
            for m in &mut members {
                if self
                    .dead_from
                    .is_some_and(|(n, who)| self.snapshots >= n && m.name == who)
                {
                    m.status = MemberStatus::Dead { exit_code: None };
                    m.attention = Attention::of(&m.status, &m.name, &Default::default());
                }
            }
            TeamView {
                team: "demo".into(),
                backend_name: "fake".into(),
                members,
                in_process: self.in_process,
                ..TeamView::default()
            }
        }

        fn perform(&mut self, action: Action) -> Result<Option<String>> {
            if let Action::Kill(name) = &action {
                self.members.retain(|m| m != name);
            }
            self.done.push(action);
            Ok(Some("done".into()))
        }
    }

    fn key(c: char) -> Input {
        Input::Term(Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }

    fn run_with(lead: &mut FakeLead, inputs: Vec<Input>) -> (Exit, Terminal<TestBackend>) {
        let (tx, rx) = mpsc::channel();
        for i in inputs {
            tx.send(i).unwrap();
        }
        drop(tx);
        let _serial = crate::tui::terminal::SIGNAL_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let mut alerts = vec![];
        let exit = event_loop(
            &mut terminal,
            lead,
            &rx,
            (false, Duration::ZERO),
            &mut |a: &Alert| alerts.push(a.clone()),
        )
        .unwrap();
        lead.alerts = alerts;
        (exit, terminal)
    }

    #[test]
    fn k_then_y_kills_the_selected_member_and_q_quits() {
        let mut lead = FakeLead::new(&["alice", "bob"], false);
        let (exit, _) = run_with(&mut lead, vec![key('k'), key('y'), key('q')]);
        assert_eq!(exit, Exit::Quit);
        assert_eq!(lead.done, [Action::Kill("alice".into())]);
        assert_eq!(lead.members, ["bob"]);
    }

    #[test]
    fn wake_ups_coalesce_into_one_snapshot() {
        let mut lead = FakeLead::new(&["alice"], false);
        let wakes = (0..50).map(|_| Input::Wake).collect();
        let (exit, terminal) = run_with(&mut lead, wakes);
        assert_eq!(exit, Exit::Quit, "all senders gone");
        assert_eq!(lead.snapshots, 2, "the first, then one for the burst");
        let screen = format!("{:?}", terminal.backend().buffer());
        assert!(screen.contains("1 teammate ·"), "{screen}");
    }

    #[test]
    fn wake_ups_between_two_frames_cost_one_snapshot() {
        // Wake-ups that arrive one by one, each on its own, while the next
        // frame is not yet due: the lead is asked once, when the key that
        // follows needs the team as it is (or the frame is drawn).
        let mut lead = FakeLead::new(&["alice"], false);
        let (tx, rx) = mpsc::channel();
        let sender = thread::spawn(move || {
            for _ in 0..3 {
                tx.send(Input::Wake).unwrap();
                thread::sleep(Duration::from_millis(20));
            }
            tx.send(key('q')).unwrap();
        });
        let _serial = crate::tui::terminal::SIGNAL_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let long = Duration::from_secs(3600);
        let exit = event_loop(&mut terminal, &mut lead, &rx, (false, long), &mut |_| {});
        sender.join().unwrap();
        assert_eq!(exit.unwrap(), Exit::Quit);
        assert_eq!(lead.snapshots, 2, "the first, then one for the key");
    }

    #[test]
    fn the_wake_ups_of_one_change_make_one_frame() {
        // The frame before is long past; three wake-ups come close
        // together (one change: a task file, a message, its consumption).
        let mut lead = FakeLead::new(&["alice"], false);
        let (tx, rx) = mpsc::channel();
        let min_frame = Duration::from_millis(400);
        let sender = thread::spawn(move || {
            thread::sleep(min_frame + min_frame / 2);
            for _ in 0..3 {
                tx.send(Input::Wake).unwrap();
                thread::sleep(Duration::from_millis(10));
            }
            thread::sleep(min_frame * 2);
        });
        let _serial = crate::tui::terminal::SIGNAL_TESTS
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        let exit = event_loop(
            &mut terminal,
            &mut lead,
            &rx,
            (false, min_frame),
            &mut |_| {},
        );
        sender.join().unwrap();
        assert_eq!(exit.unwrap(), Exit::Quit);
        assert_eq!(lead.snapshots, 2, "the first, then one for the change");
    }

    #[test]
    fn zooming_resizes_the_pane_to_the_zoom_area_and_forwards_keys() {
        let mut lead = FakeLead::new(&["alice"], true);
        let enter = Input::Term(Event::Key(KeyEvent::new(
            KeyCode::Enter,
            KeyModifiers::NONE,
        )));
        let (_, _) = run_with(&mut lead, vec![enter, key('x')]);
        let after_focus: Vec<&Action> = lead
            .done
            .iter()
            .skip_while(|a| !matches!(a, Action::Focus(_)))
            .collect();
        assert_eq!(
            after_focus,
            [
                &Action::Focus("alice".into()),
                &Action::ResizePane {
                    name: "alice".into(),
                    rows: 23,
                    cols: 80
                },
                &Action::Input {
                    to: "alice".into(),
                    bytes: b"x".to_vec()
                },
            ]
        );
    }

    #[test]
    fn every_grid_pane_is_sized_to_its_tile_once() {
        // 80×24: a status line and a footer leave 80×22, two tiles side by
        // side of 40×22, each 38×20 inside its border.
        let mut lead = FakeLead::new(&["alice", "bob"], true);
        run_with(&mut lead, vec![Input::Wake, Input::Wake]);
        let resized: Vec<&Action> = lead
            .done
            .iter()
            .filter(|a| matches!(a, Action::ResizePane { .. }))
            .collect();
        let tile = |name: &str| Action::ResizePane {
            name: name.into(),
            rows: 20,
            cols: 38,
        };
        assert_eq!(resized, [&tile("alice"), &tile("bob")], "{:?}", lead.done);
    }

    #[test]
    fn a_teammate_dying_is_signalled_once_however_many_frames_follow() {
        let mut lead = FakeLead::new(&["alice", "bob"], false);
        lead.dead_from = Some((2, "bob"));
        let wakes = vec![Input::Wake, key('x'), Input::Wake, key('y'), Input::Wake];
        run_with(&mut lead, wakes);
        let rang: Vec<&Vec<String>> = lead
            .alerts
            .iter()
            .filter(|a| !a.fresh.is_empty())
            .map(|a| &a.fresh)
            .collect();
        assert_eq!(rang, [&vec!["@bob: dead".to_owned()]], "{:?}", lead.alerts);
        assert_eq!(lead.alerts.last().map(|a| a.count), Some(1));
    }

    #[test]
    fn a_signal_ends_the_loop() {
        let mut lead = FakeLead::new(&[], false);
        let (exit, _) = run_with(&mut lead, vec![Input::Signal(libc::SIGTERM)]);
        assert_eq!(exit, Exit::Signal(libc::SIGTERM));
    }

    #[test]
    fn a_hang_up_ends_the_loop_as_terminal_lost() {
        let mut lead = FakeLead::new(&[], false);
        let (exit, _) = run_with(&mut lead, vec![Input::HungUp]);
        assert_eq!(exit, Exit::TerminalLost);
    }

    /// A pseudo-terminal pair: (master, slave) file descriptors.
    fn open_pty() -> (libc::c_int, libc::c_int) {
        // SAFETY: plain libc calls on descriptors this test owns.
        unsafe {
            let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(master >= 0, "posix_openpt");
            assert_eq!(libc::grantpt(master), 0);
            assert_eq!(libc::unlockpt(master), 0);
            let name = libc::ptsname(master);
            assert!(!name.is_null());
            let slave = libc::open(name, libc::O_RDWR | libc::O_NOCTTY);
            assert!(slave >= 0, "open the slave");
            (master, slave)
        }
    }

    #[test]
    fn the_watch_sleeps_while_the_terminal_lives_and_wakes_when_it_goes() {
        let (master, slave) = open_pty();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(watch_terminal(slave, None)).unwrap());
        // Typed input is not a hang-up: the watch asks for no events.
        // SAFETY: writing two bytes from a live buffer to our master.
        assert_eq!(unsafe { libc::write(master, b"q\r".as_ptr().cast(), 2) }, 2);
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "woke while the terminal was alive"
        );
        // The other end goes away, as when tmux's server is killed.
        // SAFETY: closing the master this test opened.
        unsafe { libc::close(master) };
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok(Watched::HungUp));
        // SAFETY: closing the slave this test opened.
        unsafe { libc::close(slave) };
    }

    #[test]
    fn the_watch_reports_a_signal_byte_and_ends_when_its_pipe_hangs_up() {
        use std::io::Write;
        let (master, slave) = open_pty();
        let (r, mut w) = std::io::pipe().unwrap();
        w.write_all(b"X").unwrap();
        assert_eq!(watch_terminal(slave, Some(&r)), Watched::Signalled);
        // The guard dropped: its write ends close.
        drop(w);
        assert_eq!(watch_terminal(slave, Some(&r)), Watched::Stopped);
        // SAFETY: closing descriptors this test opened.
        unsafe {
            libc::close(master);
            libc::close(slave);
        }
    }
}
