//! TUI figure (DESIGN §10: a frame with 100 members ≤ 2 ms), printed, not
//! asserted: the time to render one TeamsDialog frame into a ratatui
//! `TestBackend` with 100 teammates, 1000 tasks, 500 inbox entries (a third
//! of them protocol frames) and 5 pending requests, at 200×60 and 80×24,
//! median and p99 over 200 frames; plus the in-process grid of 16 live
//! 24×80 screens.
//!
//! Run with `cargo bench --bench tui` (release build).

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use swarm::mailbox::Entry;
use swarm::protocol::{IdleNotification, IdleReason, Message};
use swarm::tasks::{Status, Task};
use swarm::team::colors;
use swarm::tui::{
    MemberRow, MemberStatus, NoScreens, PendingRequest, RequestKind, ScreenSource, TeamView,
    UiState, draw,
};
use tui_term::vt100;

const FRAMES: usize = 200;

fn team(members: usize, tasks: usize) -> TeamView {
    let members: Vec<MemberRow> = (0..members)
        .map(|i| {
            let mut m = MemberRow::new(format!("worker-{i:03}"));
            m.color = Some(colors::for_teammate(i).to_owned());
            m.status = match i % 5 {
                0 | 1 => MemberStatus::Running,
                2 => MemberStatus::Idle,
                3 => MemberStatus::WaitingForApproval,
                _ => MemberStatus::Dead { exit_code: Some(1) },
            };
            m.current_task = Some((format!("{}", i + 1), format!("Task number {}", i + 1)));
            m.last_activity = Some(Duration::from_secs(i as u64 * 7));
            m.unread = i % 3;
            m.mode = Some("default".into());
            m
        })
        .collect();
    let tasks = (1..=tasks)
        .map(|i| {
            let mut t = Task::new(
                i.to_string(),
                format!("Task number {i} with a longer subject"),
            );
            t.status = [Status::Pending, Status::InProgress, Status::Completed][i % 3];
            t.owner = (t.status != Status::Pending).then(|| format!("worker-{:03}", i % 100));
            if i > 2 && i % 4 == 0 {
                t.blocked_by = vec![(i - 1).to_string(), (i - 2).to_string()];
            }
            t
        })
        .collect();
    let lead_inbox = (0..500)
        .map(|i| {
            let from = format!("worker-{:03}", i % 100);
            let text = if i % 3 == 0 {
                Message::IdleNotification(IdleNotification {
                    from: from.clone(),
                    timestamp: "2026-11-30T07:15:27.589Z".into(),
                    idle_reason: Some(IdleReason::Available),
                    summary: Some(format!("finished task {i}")),
                    completed_task_id: Some(i.to_string()),
                    completed_status: None,
                    failure_reason: None,
                    result: None,
                })
                .to_text()
            } else {
                format!("progress report {i}: all good so far, moving on to the next step")
            };
            let mut e = Entry::new(&from, text, None, Some("blue".into()));
            e.timestamp = "2026-11-30T07:15:27.589Z".into();
            std::sync::Arc::new(e)
        })
        .collect();
    let requests = (0..5)
        .map(|i| PendingRequest {
            id: format!("plan_approval-{i}@worker-{i:03}@bench"),
            from: format!("worker-{i:03}"),
            kind: RequestKind::Plan {
                content: "# Plan\n1. read\n2. change\n3. test\n4. report".into(),
            },
            age: Some(Duration::from_secs(30)),
        })
        .collect();
    TeamView {
        team: "bench".into(),
        backend_name: "tmux".into(),
        members,
        tasks,
        lead_inbox,
        requests,
        can_hide: true,
        ..TeamView::default()
    }
}

struct Screens(Vec<(String, vt100::Parser)>);

impl ScreenSource for Screens {
    fn with_screen(&self, name: &str, f: &mut dyn FnMut(&vt100::Screen)) -> bool {
        match self.0.iter().find(|(n, _)| n == name) {
            Some((_, p)) => {
                f(p.screen());
                true
            }
            None => false,
        }
    }
}

fn measure(
    label: &str,
    view: &TeamView,
    ui: &UiState,
    screens: &dyn ScreenSource,
    (w, h): (u16, u16),
) {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    let mut times: Vec<Duration> = (0..FRAMES + 10)
        .map(|_| {
            let start = Instant::now();
            terminal
                .draw(|f| draw(f, view, ui, screens, true))
                .expect("draw");
            start.elapsed()
        })
        .skip(10) // warm-up
        .collect();
    times.sort();
    let median = times[times.len() / 2];
    let p99 = times[times.len() * 99 / 100];
    println!(
        "{label:<44} {w:>3}x{h:<3} median {:>7.3} ms  p99 {:>7.3} ms",
        median.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3
    );
}

fn main() {
    println!("== one TUI frame (target ≤ 2 ms), {FRAMES} frames ==");
    let view = team(100, 1000);
    let mut ui = UiState::new(&view);
    for size in [(200, 60), (80, 24)] {
        measure(
            "100 members, 1000 tasks, 500 inbox",
            &view,
            &ui,
            &NoScreens,
            size,
        );
    }
    ui.member_row = 60;
    ui.task_row = 700;
    ui.panel = swarm::tui::Panel::Tasks;
    measure(
        "  same, scrolled to member 60 / task 700",
        &view,
        &ui,
        &NoScreens,
        (200, 60),
    );

    let mut grid = team(16, 1000);
    grid.in_process = true;
    let screens = Screens(
        grid.members
            .iter()
            .map(|m| {
                let mut p = vt100::Parser::new(24, 80, 0);
                for i in 0..40 {
                    p.process(
                        format!(
                            "\x1b[1;32m{}\x1b[0m compiling crate {i} of 40 …\r\n",
                            m.name
                        )
                        .as_bytes(),
                    );
                }
                (m.name.clone(), p)
            })
            .collect(),
    );
    let ui = UiState::new(&grid);
    for size in [(200, 60), (80, 24)] {
        measure(
            "in-process grid, 16 live 24x80 screens",
            &grid,
            &ui,
            &screens,
            size,
        );
    }
}
