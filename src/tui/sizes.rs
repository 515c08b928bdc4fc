//! Every panel and every dialog at the two sizes a user is likely to have:
//! an 80×24 terminal and a 200×50 one (issue 14). One snapshot per size
//! holds every frame, and each frame is checked for what must never be
//! lost to a small screen: the whole status line, the key hints, and the
//! words of the open dialog.

use std::time::Duration;

use super::reading;
use super::snapshots::{FakeScreens, busy_team, render, render_with, text, with_plan};
use super::state::{Modal, Panel, TeamView, UiState};

/// The frames to draw: a name, the view and where the user is, and a
/// phrase the frame must show.
fn frames() -> Vec<(&'static str, TeamView, UiState, &'static str)> {
    let mut v = with_plan(busy_team());
    v.notice = Some("killed @erin; 1 task(s) back on the board".into());
    let at = |panel: Panel| UiState {
        panel,
        ..UiState::new(&v)
    };
    let modal = |modal: Modal| UiState {
        modal,
        ..UiState::new(&v)
    };
    let inbox_entry = reading::entry(&v.lead_inbox[2]);
    let mut frames = vec![
        ("members", v.clone(), at(Panel::Members), "@alice"),
        ("tasks", v.clone(), at(Panel::Tasks), "Enter read"),
        ("inbox", v.clone(), at(Panel::Inbox), "design done"),
        ("requests", v.clone(), at(Panel::Requests), "a approve"),
        (
            "kill",
            v.clone(),
            modal(Modal::ConfirmKill { name: "bob".into() }),
            "Kill @bob? y/N",
        ),
        (
            "prune",
            v.clone(),
            modal(Modal::ConfirmPrune {
                names: vec!["carol".into()],
            }),
            "Prune 1 idle teammate? y/N",
        ),
        (
            "quit",
            v.clone(),
            modal(Modal::ConfirmQuit { ending: 3 }),
            "Quit and end 3 teammates? y/N",
        ),
        (
            "shutdown",
            v.clone(),
            modal(Modal::ShutdownCountdown {
                name: "bob".into(),
                left: Duration::from_secs(6),
            }),
            "kill offered in 6s",
        ),
        (
            "message",
            v.clone(),
            modal(Modal::Compose {
                to: "bob".into(),
                text: "rerun the failing test with --nocapture please".into(),
            }),
            "Enter send · Esc cancel",
        ),
        (
            "new task",
            v.clone(),
            modal(Modal::NewTask {
                subject: "Fix the flaky test".into(),
            }),
            "Enter create · Esc cancel",
        ),
        (
            "help",
            v.clone(),
            modal(Modal::Help),
            "any key closes this help",
        ),
        (
            "read",
            v.clone(),
            modal(Modal::Read(inbox_entry)),
            "3 tests fail",
        ),
    ];
    let mut ip = v.clone();
    ip.in_process = true;
    ip.backend_name = "in-process".into();
    let grid = UiState::new(&ip);
    let zoom = UiState {
        zoomed: Some("bob".into()),
        ..UiState::new(&ip)
    };
    frames.push(("grid", ip.clone(), grid, "bob line 30"));
    frames.push(("zoom", ip, zoom, "Ctrl-] returns"));
    frames
}

/// Draws every frame at `size`, checks each, and returns them as one text.
fn every_frame_at(size: (u16, u16)) -> String {
    let mut all = String::new();
    for (name, view, ui, must) in frames() {
        let out = if view.in_process {
            let screens = FakeScreens::new(&view);
            text(&render_with(&view, &ui, &screens, true, size))
        } else {
            render(&view, &ui, size)
        };
        assert!(out.contains(must), "{name} at {size:?}: {must:?}\n{out}");
        let lines: Vec<&str> = out.lines().collect();
        if ui.zoomed.is_none() {
            assert_eq!(
                lines[0],
                view.status_line_in(size.0 as usize),
                "{name} at {size:?}: the status line"
            );
            let footer = lines.last().copied().unwrap_or_default();
            assert!(footer.contains("? help"), "{name} at {size:?}: {footer}");
        }
        all.push_str(&format!("=== {name} ===\n{out}\n"));
    }
    all
}

#[test]
fn every_panel_and_dialog_at_80x24() {
    insta::assert_snapshot!(every_frame_at((80, 24)));
}

#[test]
fn every_panel_and_dialog_at_200x50() {
    insta::assert_snapshot!(every_frame_at((200, 50)));
}
