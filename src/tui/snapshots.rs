//! Snapshot tests of the pure view: the main states rendered into ratatui's
//! `TestBackend` and compared as text with `insta` (the `.snap` files under
//! `snapshots/` are the reviewed renderings). Plus the properties a snapshot
//! cannot say: NO_COLOR sets no colour, protocol frames never show as JSON.

use std::sync::Arc;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Color;
use tui_term::vt100;

use super::state::{
    MemberRow, MemberStatus, Modal, Panel, PendingRequest, RequestKind, TeamView, UiState,
};
use super::view::{NoScreens, ScreenSource, draw};
use crate::mailbox::Entry;
use crate::protocol::{Message, ShutdownApproved};
use crate::tasks::{Status, Task};

/// The buffer as text, one line per row, trailing blanks trimmed.
pub(super) fn text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    buf.content
        .chunks(w)
        .map(|row| {
            let line: String = row.iter().map(|c| c.symbol()).collect();
            line.trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn render_with(
    view: &TeamView,
    ui: &UiState,
    screens: &dyn ScreenSource,
    color: bool,
    (w, h): (u16, u16),
) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
    terminal
        .draw(|f| draw(f, view, ui, screens, color))
        .unwrap();
    terminal.backend().buffer().clone()
}

pub(super) fn render(view: &TeamView, ui: &UiState, size: (u16, u16)) -> String {
    text(&render_with(view, ui, &NoScreens, true, size))
}

pub(super) fn entry(
    from: &str,
    color: Option<&str>,
    text: &str,
    summary: Option<&str>,
    t: &str,
) -> Arc<Entry> {
    let mut e = Entry::new(
        from,
        text.to_owned(),
        summary.map(str::to_owned),
        color.map(str::to_owned),
    );
    e.timestamp = format!("2026-11-30T{t}.000Z");
    Arc::new(e)
}

pub(super) fn member(name: &str, color: &str, status: MemberStatus) -> MemberRow {
    MemberRow {
        color: Some(color.into()),
        status,
        ..MemberRow::new(name)
    }
}

pub(super) fn task(
    id: &str,
    subject: &str,
    status: Status,
    owner: Option<&str>,
    blocked: &[&str],
) -> Task {
    let mut t = Task::new(id, subject);
    t.status = status;
    t.owner = owner.map(str::to_owned);
    t.blocked_by = blocked.iter().map(|s| s.to_string()).collect();
    t
}

pub(super) fn empty_team() -> TeamView {
    TeamView {
        team: "demo".into(),
        backend_name: "tmux".into(),
        can_hide: true,
        ..TeamView::default()
    }
}

/// Four teammates at work, a board, a mixed inbox.
pub(super) fn busy_team() -> TeamView {
    let mut alice = member("alice", "blue", MemberStatus::Running);
    alice.model = Some("sonnet".into());
    alice.agent = "claude".into();
    alice.mode = Some("acceptEdits".into());
    alice.current_task = Some(("2".into(), "Write the parser".into()));
    alice.last_activity = Some(Duration::from_secs(4));
    let mut bob = member("bob", "green", MemberStatus::Running);
    bob.current_task = Some(("3".into(), "Run the test suite".into()));
    bob.last_activity = Some(Duration::from_secs(12));
    bob.unread = 2;
    bob.progress = Some(super::state::Progress {
        elapsed: Some(Duration::from_secs(12)),
        last_line: Some("test tui::view ... ok".into()),
        quiet: Some(Duration::from_secs(1)),
    });
    let mut carol = member("carol", "yellow", MemberStatus::Idle);
    carol.last_activity = Some(Duration::from_secs(190));
    let mut dave = member("dave", "purple", MemberStatus::Idle);
    dave.hidden = true;
    dave.agent = "codex".into();
    dave.last_activity = Some(Duration::from_secs(3 * 3600));
    let approved = Message::ShutdownApproved(ShutdownApproved {
        request_id: "shutdown-1@erin".into(),
        from: "erin".into(),
        timestamp: "2026-11-30T07:15:28.205Z".into(),
        pane_id: Some("%3".into()),
        backend_type: None,
    });
    TeamView {
        members: vec![alice, bob, carol, dave],
        tasks: vec![
            task(
                "1",
                "Sketch the design",
                Status::Completed,
                Some("carol"),
                &[],
            ),
            task(
                "2",
                "Write the parser",
                Status::InProgress,
                Some("alice"),
                &[],
            ),
            task(
                "3",
                "Run the test suite",
                Status::InProgress,
                Some("bob"),
                &[],
            ),
            task("4", "Benchmark", Status::Pending, None, &["2", "3"]),
            task("5", "Release notes", Status::Pending, None, &["4"]),
        ]
        .into(),
        lead_inbox: vec![
            entry(
                "carol",
                Some("yellow"),
                "The design is in scratch/design.md",
                Some("design done"),
                "07:10:02",
            ),
            entry("erin", Some("cyan"), &approved.to_text(), None, "07:15:28"),
            entry(
                "bob",
                Some("green"),
                "3 tests fail\nin tui::view; looking",
                None,
                "07:16:40",
            ),
        ],
        ..empty_team()
    }
}

pub(super) fn with_plan(mut view: TeamView) -> TeamView {
    view.members[0].status = MemberStatus::WaitingForApproval;
    view.members[0].attention = Some(super::state::Attention::Approval);
    view.requests.push(PendingRequest {
        id: "plan_approval-1796022927589@alice@demo".into(),
        from: "alice".into(),
        kind: RequestKind::Plan {
            content:
                "# Plan: parser\n1. Tokenise the input\n2. Build the tree\n3. Tests for every rule"
                    .into(),
        },
        age: Some(Duration::from_secs(35)),
    });
    view.requests.push(PendingRequest {
        id: "perm-1796022927600-x".into(),
        from: "bob".into(),
        kind: RequestKind::Permission {
            tool: "Bash".into(),
            description: "cargo test --all".into(),
        },
        age: Some(Duration::from_secs(3)),
    });
    view
}

#[test]
fn an_empty_team() {
    let v = empty_team();
    insta::assert_snapshot!(render(&v, &UiState::new(&v), (100, 20)));
}

#[test]
fn a_busy_team() {
    let v = busy_team();
    insta::assert_snapshot!(render(&v, &UiState::new(&v), (120, 30)));
}

#[test]
fn dead_member() {
    let mut v = busy_team();
    v.members[1].status = MemberStatus::Dead { exit_code: Some(3) };
    v.members[1].attention = Some(super::state::Attention::Dead);
    v.members[1].current_task = None;
    v.members[1].progress = None;
    v.members[2].status = MemberStatus::Stopping {
        since: Duration::from_secs(4),
    };
    let out = render(&v, &UiState::new(&v), (120, 30));
    assert!(out.contains("! dead (exit 3)") && out.contains("stopping 4s"));
    assert!(
        out.starts_with("4 teammates · 1 running · 1 idle · tasks 1/5 · 0 waiting · ! 1 needs you")
    );
    insta::assert_snapshot!(out);
}

#[test]
fn pending_plan_approval() {
    let v = with_plan(busy_team());
    let ui = UiState {
        panel: Panel::Requests,
        ..UiState::new(&v)
    };
    let out = render(&v, &ui, (120, 34));
    assert!(out.contains("1. Tokenise the input"), "plan content shown");
    assert!(out.contains("2 waiting"));
    insta::assert_snapshot!(out);
}

#[test]
fn kill_confirmation() {
    let v = busy_team();
    let ui = UiState {
        member_row: 2,
        modal: Modal::ConfirmKill { name: "bob".into() },
        ..UiState::new(&v)
    };
    let out = render(&v, &ui, (100, 24));
    assert!(out.contains("Kill @bob? y/N"));
    insta::assert_snapshot!(out);
}

#[test]
fn shutdown_countdown_and_prune_confirmation() {
    let v = busy_team();
    let mut ui = UiState {
        modal: Modal::ShutdownCountdown {
            name: "bob".into(),
            left: Duration::from_millis(6200),
        },
        ..UiState::new(&v)
    };
    assert!(render(&v, &ui, (100, 24)).contains("Shutting down @bob… kill offered in 7s"));
    ui.tick(Duration::from_secs(10));
    assert!(render(&v, &ui, (100, 24)).contains("k kill · Esc close"));
    ui.modal = Modal::ConfirmPrune {
        names: vec!["carol".into(), "dave".into()],
    };
    let out = render(&v, &ui, (100, 24));
    assert!(out.contains("Prune 2 idle teammates? y/N") && out.contains("@carol @dave"));
}

#[test]
fn help_overlay_lists_every_key() {
    let v = busy_team();
    let ui = UiState {
        modal: Modal::Help,
        ..UiState::new(&v)
    };
    let out = render(&v, &ui, (80, 24));
    for (key, what) in super::keymap::KEYS {
        assert!(out.contains(key) && out.contains(what), "{key} missing");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn narrow_80x24_keeps_status_members_tasks_and_inbox() {
    let v = with_plan(busy_team());
    let out = render(&v, &UiState::new(&v), (80, 24));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "4 teammates · 1 running · 2 idle · tasks 1/5 · 2 waiting · ! 1 needs you"
    );
    for name in ["@alice", "@bob", "@carol", "@dave"] {
        assert!(out.contains(name), "{name} visible");
    }
    assert!(out.contains("tasks 1/5") && out.contains("inbox (3)"));
    insta::assert_snapshot!(out);
}

#[test]
fn a_narrow_lead_pane_keeps_whole_names_and_statuses() {
    // The lead's pane beside its teammates' panes in one tmux window is
    // about a third of it: names are not cut for columns that do not fit.
    let mut v = busy_team();
    v.members[0].name = "charlie-the-long".into();
    for width in [40, 56, 70] {
        let out = render(&v, &UiState::new(&v), (width, 30));
        for m in &v.members {
            assert!(
                out.contains(&format!("@{} ", m.name)),
                "@{} at width {width}\n{out}",
                m.name
            );
            assert!(
                out.contains(&m.status.label()),
                "{:?} at {width}\n{out}",
                m.status
            );
        }
    }
    // The task board gives the subject the blocked-by column's room at
    // 56 cells and shows a waiting task's blockers as its status.
    let out = render(&v, &UiState::new(&v), (56, 30));
    for t in v.tasks.iter() {
        let shown: String = t.subject.chars().take(18).collect();
        assert!(out.contains(&shown), "{shown:?}\n{out}");
        if t.status == Status::Pending && !t.blocked_by.is_empty() {
            assert!(out.contains(&format!("⊘ #{}", t.blocked_by[0])), "{out}");
        }
    }
}

#[test]
fn a_failed_task_reads_failed_not_pending() {
    let mut v = busy_team();
    let mut tasks: Vec<Task> = v.tasks.iter().cloned().collect();
    let t = tasks
        .iter_mut()
        .find(|t| t.status == Status::Pending)
        .expect("a pending task");
    let id = t.id.clone();
    let mut md = serde_json::Map::new();
    md.insert("failed".into(), serde_json::json!(true));
    t.metadata = Some(md);
    v.tasks = tasks.into();
    let out = render(&v, &UiState::new(&v), (120, 40));
    let line = out
        .lines()
        .find(|l| l.contains(&format!("#{id} ")))
        .expect("the task's row");
    assert!(
        line.contains("failed") && !line.contains("pending"),
        "{line}"
    );
}

#[test]
fn compose_and_new_task_dialogs() {
    let v = busy_team();
    let mut ui = UiState {
        modal: Modal::Compose {
            to: "bob".into(),
            text: "rerun with --nocapture".into(),
        },
        ..UiState::new(&v)
    };
    let out = render(&v, &ui, (100, 24));
    assert!(out.contains("To: @bob") && out.contains("> rerun with --nocapture"));
    ui.modal = Modal::NewTask {
        subject: "Fix the flaky test".into(),
    };
    assert!(render(&v, &ui, (100, 24)).contains("Subject: Fix the flaky test"));
}

#[test]
fn no_color_sets_no_colour_anywhere() {
    let v = with_plan(busy_team());
    let ui = UiState::new(&v);
    let coloured = |buf: &Buffer| {
        buf.content
            .iter()
            .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
            .count()
    };
    let with = render_with(&v, &ui, &NoScreens, true, (120, 34));
    assert!(coloured(&with) > 0, "colour is on by default");
    let without = render_with(&v, &ui, &NoScreens, false, (120, 34));
    assert_eq!(coloured(&without), 0);
    assert_eq!(text(&with), text(&without), "same text either way");
    // The grid of live screens too, even when the programs print colours.
    let mut v = busy_team();
    v.in_process = true;
    let screens = FakeScreens::new(&v);
    let ui = UiState::new(&v);
    let without = render_with(&v, &ui, &screens, false, (120, 30));
    assert_eq!(coloured(&without), 0);
}

#[test]
fn a_protocol_frame_in_the_inbox_reads_as_one_line_not_json() {
    let v = busy_team();
    let out = render(&v, &UiState::new(&v), (120, 30));
    assert!(
        out.contains("@erin · shutdown approved by erin (pane %3)"),
        "{out}"
    );
    assert!(!out.contains("{\"type\""), "raw JSON shown:\n{out}");
    assert!(
        out.contains("@bob: 3 tests fail in tui::view; looking"),
        "flattened"
    );
    assert!(out.contains("@carol: design done"), "summary preferred");
}

/// vt100 screens fed with a few lines of output per teammate.
pub(super) struct FakeScreens(Vec<(String, vt100::Parser)>);

impl FakeScreens {
    pub(super) fn new(view: &TeamView) -> FakeScreens {
        FakeScreens(
            view.members
                .iter()
                .map(|m| {
                    let mut p = vt100::Parser::new(24, 80, 0);
                    for i in 1..=30 {
                        p.process(format!("\x1b[32m{}\x1b[0m line {i}\r\n", m.name).as_bytes());
                    }
                    p.process(b"$ ");
                    (m.name.clone(), p)
                })
                .collect(),
        )
    }
}

impl ScreenSource for FakeScreens {
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

#[test]
fn in_process_grid_shows_every_live_screen_and_zoom_shows_one() {
    let mut v = busy_team();
    v.in_process = true;
    v.backend_name = "in-process".into();
    let screens = FakeScreens::new(&v);
    let ui = UiState::new(&v);
    let grid = text(&render_with(&v, &ui, &screens, true, (120, 30)));
    for m in &v.members {
        assert!(grid.contains(&format!("{} line 30", m.name)), "{}", m.name);
    }
    insta::assert_snapshot!(grid);
    let zoomed = UiState {
        zoomed: Some("bob".into()),
        ..ui
    };
    let zoom = text(&render_with(&v, &zoomed, &screens, true, (80, 24)));
    assert!(zoom.starts_with("@bob running · Ctrl-] returns"));
    assert!(zoom.contains("bob line 30") && !zoom.contains("alice line"));
}

#[test]
fn hostile_names_subjects_and_messages_are_shown_escaped_in_the_dialog() {
    let mut v = empty_team();
    let mut m = member("evil\u{202e}dab", "blue", MemberStatus::Running);
    m.current_task = Some(("1".into(), "\x1b]0;pwned\x07".into()));
    v.members = vec![m];
    v.tasks = vec![task(
        "1",
        "\x1b]0;TITLE\x07\x1b[2Jsubject",
        Status::InProgress,
        Some("evil\u{202e}dab"),
        &[],
    )]
    .into();
    v.lead_inbox = vec![entry(
        "bob\u{9b}",
        None,
        "\x1b[2Jhello\nworld",
        None,
        "07:15:00",
    )];
    let buf = render_with(&v, &UiState::new(&v), &NoScreens, true, (140, 30));
    let out = text(&buf);
    for shown in [
        "@evil\\u{202e}dab",
        "\\x1b]0;TITLE\\x07\\x1b[2Jsubject",
        "@bob\\u{9b}: \\x1b[2Jhello world",
    ] {
        assert!(out.contains(shown), "{shown:?} not shown in:\n{out}");
    }
    let raw: Vec<char> = out
        .chars()
        .filter(|c| c.is_control() && *c != '\n' || ('\u{202a}'..='\u{202e}').contains(c))
        .collect();
    assert!(raw.is_empty(), "raw controls reach the screen: {raw:?}");
}

/// A team whose lead inbox ends with the demo's long summary and whose
/// board has a task waiting for four others (issue 14, items 1–9).
fn issue_team() -> TeamView {
    let mut v = busy_team();
    v.tasks = v
        .tasks
        .iter()
        .cloned()
        .chain([task(
            "9",
            "Merge everything",
            Status::Pending,
            None,
            &["3", "5", "7", "9"],
        )])
        .collect();
    v.notice = Some("killed @erin; 1 task(s) back on the board".into());
    v
}

#[test]
fn the_footer_keeps_the_key_hints_beside_the_latest_event() {
    let v = issue_team();
    for (w, h) in [(28, 23), (80, 24), (200, 50)] {
        let out = render(&v, &UiState::new(&v), (w, h));
        let footer = out.lines().last().unwrap_or_default();
        assert!(footer.contains("? help"), "{w}×{h}: {footer:?}");
        assert!(footer.starts_with("killed @"), "{w}×{h}: {footer:?}");
    }
    let out = render(&v, &UiState::new(&v), (200, 50));
    let footer = out.lines().last().unwrap_or_default();
    assert!(
        footer.contains("q quit") && footer.contains("Enter focus"),
        "{footer}"
    );
}

#[test]
fn blockers_are_listed_whole_at_70_and_200_columns() {
    let v = issue_team();
    for w in [70, 120, 200] {
        let out = render(&v, &UiState::new(&v), (w, 40));
        assert!(out.contains("#3,#5,#7,#9"), "{w} columns:\n{out}");
    }
}

#[test]
fn a_28_column_lead_pane_keeps_subjects_and_a_whole_status_line() {
    // An 80×24 terminal split by tmux: the lead's pane is 28×23.
    let v = issue_team();
    let out = render(&v, &UiState::new(&v), (28, 23));
    let first = out.lines().next().unwrap_or_default();
    assert_eq!(first, "4 teammates · tasks 1/6", "{out}");
    for subject in ["Sketch the", "Write the", "Benchmark"] {
        assert!(out.contains(subject), "{subject}:\n{out}");
    }
    insta::assert_snapshot!(out);
}

#[test]
fn counts_agree_with_their_nouns() {
    let mut v = busy_team();
    v.members.truncate(1);
    assert!(
        v.status_line().starts_with("1 teammate · "),
        "{}",
        v.status_line()
    );
    let ui = UiState {
        modal: Modal::ConfirmPrune {
            names: vec!["carol".into()],
        },
        ..UiState::new(&v)
    };
    assert!(render(&v, &ui, (80, 24)).contains("Prune 1 idle teammate? y/N"));
}

#[test]
fn a_long_message_scrolls_in_its_box_and_the_send_hint_stays() {
    let v = busy_team();
    let text: String = (0..40).map(|i| format!("word{i} ")).collect::<String>() + "THE-END";
    for size in [(80, 24), (200, 50)] {
        let ui = UiState {
            modal: Modal::Compose {
                to: "bob".into(),
                text: text.clone(),
            },
            ..UiState::new(&v)
        };
        let out = render(&v, &ui, size);
        assert!(out.contains("THE-END▏"), "{size:?}\n{out}");
        assert!(out.contains("Enter send · Esc cancel"), "{size:?}\n{out}");
    }
}

#[test]
fn the_countdown_and_the_row_tell_the_same_time() {
    let mut v = busy_team();
    v.members[1].status = MemberStatus::Stopping {
        since: Duration::from_millis(1400),
    };
    let mut ui = UiState {
        member_row: 2,
        modal: Modal::ShutdownCountdown {
            name: "bob".into(),
            // The dialog's own clock has drifted (a late tick).
            left: Duration::from_secs(4),
        },
        ..UiState::new(&v)
    };
    ui.sync(&v);
    let out = render(&v, &ui, (100, 30));
    assert!(out.contains("stopping 1s"), "{out}");
    assert!(out.contains("kill offered in 9s"), "{out}");
    // At 7 s the dialog has not given up yet.
    v.members[1].status = MemberStatus::Stopping {
        since: Duration::from_secs(7),
    };
    ui.sync(&v);
    let out = render(&v, &ui, (100, 30));
    assert!(out.contains("kill offered in 3s") && !out.contains("has not stopped"));
}

#[test]
fn enter_on_a_message_opens_it_whole() {
    let mut v = busy_team();
    let summary = (1..=30)
        .map(|i| format!("result {i}: ok"))
        .collect::<Vec<_>>()
        .join("\n");
    v.lead_inbox.push(entry(
        "bob",
        None,
        &format!("All results:\n{summary}"),
        Some("all done"),
        "07:20:00",
    ));
    let mut ui = UiState {
        panel: Panel::Inbox,
        ..UiState::new(&v)
    };
    let enter = crossterm::event::KeyEvent::new(
        crossterm::event::KeyCode::Enter,
        crossterm::event::KeyModifiers::NONE,
    );
    assert_eq!(super::keymap::handle(enter, &v, &mut ui), None);
    let out = render(&v, &ui, (80, 24));
    assert!(
        out.contains("message from @bob") && out.contains("All results:"),
        "{out}"
    );
    assert!(out.contains("result 12: ok"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn a_kill_ladder_in_flight_shows_on_its_row() {
    let v = busy_team();
    let mut ui = UiState::new(&v);
    ui.killing.insert("bob".into(), Duration::from_millis(2500));
    for size in [(80, 24), (200, 50)] {
        let out = render(&v, &ui, size);
        let row = out
            .lines()
            .find(|l| l.contains("@bob "))
            .unwrap_or_default();
        assert!(row.contains("killing 2s…"), "{size:?}: {row}");
    }
}

#[test]
fn a_teammate_in_a_worktree_shows_its_branch_and_progress() {
    let mut v = busy_team();
    v.members[1].worktree = Some("swarm/demo/bob +2 -1, 3 changed".into());
    v.members[2].worktree = Some("swarm/demo/carol +0 -0, 0 changed".into());
    let out = render(&v, &UiState::new(&v), (160, 30));
    assert!(
        out.contains("#3 Run the test suite · ⎇ swarm/demo/bob +2 -1, 3 changed"),
        "beside its task:\n{out}"
    );
    assert!(
        out.contains("⎇ swarm/demo/carol +0 -0, 0 changed"),
        "no task:\n{out}"
    );
}

/// A teammate the lead's full window sent to another window says where it
/// is (issue 14 item 4).
#[test]
fn a_teammate_in_an_overflow_window_says_where_it_is() {
    let mut v = busy_team();
    v.members[1].apart = Some("window 2".into());
    for size in [(80, 24), (200, 50)] {
        let out = render(&v, &UiState::new(&v), size);
        assert!(out.contains("@bob in window 2"), "{size:?}:\n{out}");
    }
}
