//! The event loop's tests, driven through a `TestBackend` and a fake lead:
//! keys, coalesced wake-ups and frames, pane sizes, alerts, signals and the
//! terminal watch.

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
        let mut members: Vec<MemberRow> = self.members.iter().map(|n| MemberRow::new(*n)).collect();
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

/// Runs the loop with `min_frame` between frames over the inputs `feed`
/// sends from a thread of its own, as they come; the loop's exit.
fn run_fed(
    lead: &mut FakeLead,
    min_frame: Duration,
    feed: impl FnOnce(mpsc::Sender<Input>) + Send + 'static,
) -> Exit {
    let (tx, rx) = mpsc::channel();
    let sender = thread::spawn(move || feed(tx));
    let _serial = crate::tui::terminal::SIGNAL_TESTS
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let exit = event_loop(&mut terminal, lead, &rx, (false, min_frame), &mut |_| {});
    sender.join().unwrap();
    exit.unwrap()
}

#[test]
fn wake_ups_between_two_frames_cost_one_snapshot() {
    // Wake-ups that arrive one by one, each on its own, while the next
    // frame is not yet due: the lead is asked once, when the key that
    // follows needs the team as it is (or the frame is drawn).
    let mut lead = FakeLead::new(&["alice"], false);
    let exit = run_fed(&mut lead, Duration::from_secs(3600), |tx| {
        for _ in 0..3 {
            tx.send(Input::Wake).unwrap();
            thread::sleep(Duration::from_millis(20));
        }
        tx.send(key('q')).unwrap();
    });
    assert_eq!(exit, Exit::Quit);
    assert_eq!(lead.snapshots, 2, "the first, then one for the key");
}

#[test]
fn the_wake_ups_of_one_change_make_one_frame() {
    // The frame before is long past; three wake-ups come close
    // together (one change: a task file, a message, its consumption).
    let mut lead = FakeLead::new(&["alice"], false);
    let min_frame = Duration::from_millis(400);
    let exit = run_fed(&mut lead, min_frame, move |tx| {
        thread::sleep(min_frame + min_frame / 2);
        for _ in 0..3 {
            tx.send(Input::Wake).unwrap();
            thread::sleep(Duration::from_millis(10));
        }
        thread::sleep(min_frame * 2);
    });
    assert_eq!(exit, Exit::Quit);
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
