//! The keymap: a pure function from a key press, the snapshot and the UI
//! state to the next UI state and at most one [`Action`] for the lead.
//! Nothing destructive happens on one key: `k` and `p` open a y/N
//! confirmation and any key but `y` cancels, so j/k habits never kill.
//! [`KEYS`] is the single list the help overlay shows.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::reading;
use super::state::{Modal, Panel, SHUTDOWN_GRACE, TeamView, UiState};
use crate::agents::PermissionMode;

/// What the lead is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Focus the teammate's pane (tmux `select-pane`; in-process: zoom).
    Focus(String),
    /// Key bytes for the zoomed in-process pane.
    Input {
        to: String,
        bytes: Vec<u8>,
    },
    /// Resize an in-process pane (zoomed, or a grid tile) to the area it
    /// is shown in (sent by the event loop, not by a key).
    ResizePane {
        name: String,
        rows: u16,
        cols: u16,
    },
    /// The forced kill ladder; its tasks go back to the board.
    Kill(String),
    /// A graceful `shutdown_request`.
    Shutdown(String),
    /// Remove these idle teammates.
    Prune(Vec<String>),
    /// Hide one pane.
    Hide(String),
    /// Show every hidden pane.
    ShowAll,
    /// Send `mode_set_request { mode }` to `target`, or to every teammate
    /// when `None`.
    CycleMode {
        target: Option<String>,
        mode: String,
    },
    /// A plain message; `to` is a name or `*` (broadcast).
    Send {
        to: String,
        text: String,
    },
    CreateTask {
        subject: String,
    },
    /// Approve the request with this id (plan or permission).
    Approve(String),
    /// Reject the request with this id.
    Reject(String),
    /// Leave the TUI; teammates keep running.
    Quit,
}

/// The key that leaves a zoomed pane (every other key goes to the pane).
pub const UNZOOM_KEY: &str = "Ctrl-]";

/// Every key and what it does, as the help overlay lists them.
pub const KEYS: &[(&str, &str)] = &[
    ("↑/↓", "select a row in the focused panel"),
    ("Tab", "next panel (members, tasks, inbox, requests)"),
    ("Enter", "focus the pane (in-process: zoom) / read the row"),
    (UNZOOM_KEY, "leave the zoomed pane (keys go to the pane)"),
    ("g", "in-process: grid of every live screen / panels"),
    ("k", "kill the teammate (asks y/N)"),
    ("s", "graceful shutdown, with a countdown; then k"),
    ("p", "prune idle teammates (asks y/N, lists who)"),
    ("h / H", "hide the teammate's pane / show all panes"),
    (
        "Shift+Tab",
        "cycle permission mode (the 'all' row: everyone)",
    ),
    ("m", "message the teammate (Tab in the box: '*' all)"),
    ("t", "new task"),
    ("a / r", "approve / reject the selected request"),
    ("Esc", "close a dialog"),
    ("q", "leave; teammates run on (in-process: asks)"),
    ("?", "this help"),
];

/// Applies one key press. Returns the action for the lead, if any.
pub fn handle(key: KeyEvent, view: &TeamView, ui: &mut UiState) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    if let Some(name) = ui.zoomed.clone() {
        if is_unzoom(&key) {
            ui.zoomed = None;
            return None;
        }
        return key_bytes(&key).map(|bytes| Action::Input { to: name, bytes });
    }
    ui.notice = None;
    match std::mem::take(&mut ui.modal) {
        Modal::None => {}
        modal => return in_modal(key, view, ui, modal),
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c') if ctrl => Some(Action::Quit),
        KeyCode::Up => {
            select(view, ui, -1);
            None
        }
        KeyCode::Down => {
            select(view, ui, 1);
            None
        }
        KeyCode::Tab => {
            ui.panel = ui.panel.next(!view.requests.is_empty());
            None
        }
        KeyCode::BackTab => cycle_mode(view, ui),
        KeyCode::Enter => enter(view, ui),
        KeyCode::Char(c) => on_char(c, view, ui),
        _ => None,
    }
}

/// Enter: on a teammate, focus its pane (in-process: zoom in), saying how
/// to come back; on a message, a task or a request, open it to read.
fn enter(view: &TeamView, ui: &mut UiState) -> Option<Action> {
    let reading = match ui.panel {
        Panel::Members => {
            let name = member(view, ui)?;
            if view.in_process {
                ui.zoomed = Some(name.clone());
            } else {
                ui.notice = Some(format!(
                    "keys go to @{name}'s pane now · back here: tmux prefix then ; (last pane)"
                ));
            }
            return Some(Action::Focus(name));
        }
        Panel::Tasks => view.visible_tasks().nth(ui.task_row).map(reading::task),
        Panel::Inbox => view
            .lead_inbox
            .len()
            .checked_sub(ui.inbox_back + 1)
            .map(|i| reading::entry(&view.lead_inbox[i])),
        Panel::Requests => ui.selected_request(view).map(reading::request),
    };
    match reading {
        Some(r) => ui.modal = Modal::Read(r),
        None => ui.notice = Some("nothing to open here".to_owned()),
    }
    None
}

/// A letter key outside a modal (whatever the modifiers, but Ctrl-C).
fn on_char(c: char, view: &TeamView, ui: &mut UiState) -> Option<Action> {
    match c {
        'g' if view.in_process => {
            ui.grid = !ui.grid;
            None
        }
        'g' => notice(
            ui,
            &format!("the grid needs in-process panes ({})", view.backend_name),
        ),
        'k' => {
            let name = member(view, ui)?;
            ui.modal = Modal::ConfirmKill { name };
            None
        }
        's' => {
            let name = member(view, ui)?;
            ui.modal = Modal::ShutdownCountdown {
                name: name.clone(),
                left: SHUTDOWN_GRACE,
            };
            Some(Action::Shutdown(name))
        }
        'p' => {
            let names = view.prunable();
            if names.is_empty() {
                return notice(ui, "no idle teammates to prune");
            }
            ui.modal = Modal::ConfirmPrune { names };
            None
        }
        'h' | 'H' if !view.can_hide => cannot_hide(view, ui),
        'h' => member(view, ui).map(Action::Hide),
        'H' => Some(Action::ShowAll),
        'm' => {
            let to = ui
                .selected_member(view)
                .map_or_else(|| "*".to_owned(), |m| m.name.clone());
            ui.modal = Modal::Compose {
                to,
                text: String::new(),
            };
            None
        }
        't' => {
            ui.modal = Modal::NewTask {
                subject: String::new(),
            };
            None
        }
        'a' | 'r' => answer(c == 'a', view, ui),
        'q' => quit(view, ui),
        '?' => {
            ui.modal = Modal::Help;
            None
        }
        _ => None,
    }
}

/// Shift+Tab: the selected teammate's next permission mode, or everyone's
/// from the "all" row (moving together, from the first teammate's mode).
fn cycle_mode(view: &TeamView, ui: &mut UiState) -> Option<Action> {
    let (target, current) = match ui.selected_member(view) {
        Some(m) => (Some(m.name.clone()), m.mode.as_deref()),
        None => (None, view.members.first().and_then(|m| m.mode.as_deref())),
    };
    if target.is_none() && view.members.is_empty() {
        return notice(ui, "no teammates");
    }
    let mode = PermissionMode::next(current).name().to_owned();
    Some(Action::CycleMode { target, mode })
}

/// `a` (`approve`) or `r`: answers the selected request.
fn answer(approve: bool, view: &TeamView, ui: &mut UiState) -> Option<Action> {
    let Some(req) = ui.selected_request(view) else {
        return notice(ui, "no pending requests");
    };
    let id = req.id.clone();
    Some(if approve {
        Action::Approve(id)
    } else {
        Action::Reject(id)
    })
}

/// `q`: leaves at once, unless in-process teammates would end with the
/// lead: then it asks.
fn quit(view: &TeamView, ui: &mut UiState) -> Option<Action> {
    let ending = view.members.iter().filter(|m| m.status.is_alive()).count();
    if view.in_process && ending > 0 {
        ui.modal = Modal::ConfirmQuit { ending };
        return None;
    }
    Some(Action::Quit)
}

/// Keys while a modal is open; `modal` has been taken out of `ui` and is
/// put back unless the key closes it.
fn in_modal(key: KeyEvent, view: &TeamView, ui: &mut UiState, modal: Modal) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let yes = key.code == KeyCode::Char('y') && !ctrl;
    match modal {
        Modal::None | Modal::Help => None,
        Modal::ConfirmKill { name } if yes => {
            ui.killing.insert(name.clone(), Duration::ZERO);
            Some(Action::Kill(name))
        }
        Modal::ConfirmPrune { names } if yes => {
            ui.killing
                .extend(names.iter().map(|n| (n.clone(), Duration::ZERO)));
            Some(Action::Prune(names))
        }
        Modal::ConfirmKill { .. } | Modal::ConfirmPrune { .. } => None,
        Modal::ConfirmQuit { .. } => yes.then_some(Action::Quit),
        Modal::ShutdownCountdown { name, left } => {
            match key.code {
                KeyCode::Char('k') => ui.modal = Modal::ConfirmKill { name },
                KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') => {}
                _ => ui.modal = Modal::ShutdownCountdown { name, left },
            }
            None
        }
        Modal::Compose { to, text } => in_compose(key, view, ui, to, text),
        Modal::NewTask { mut subject } => match key.code {
            KeyCode::Esc => None,
            KeyCode::Enter if !subject.trim().is_empty() => Some(Action::CreateTask {
                subject: subject.trim().to_owned(),
            }),
            code => {
                edit(&mut subject, code, ctrl);
                ui.modal = Modal::NewTask { subject };
                None
            }
        },
        Modal::Read(mut r) => {
            let delta = match key.code {
                KeyCode::Up => -1,
                KeyCode::Down => 1,
                KeyCode::PageUp => -10,
                KeyCode::PageDown | KeyCode::Char(' ') => 10,
                // Any other key closes it.
                _ => return None,
            };
            r.scroll_by(delta);
            ui.modal = Modal::Read(r);
            None
        }
    }
}

/// Keys in the message box: Enter sends, Tab toggles broadcast, Esc
/// cancels, the rest edits.
fn in_compose(
    key: KeyEvent,
    view: &TeamView,
    ui: &mut UiState,
    mut to: String,
    mut text: String,
) -> Option<Action> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Esc => None,
        KeyCode::Enter if !text.trim().is_empty() => Some(Action::Send { to, text }),
        KeyCode::Tab => {
            to = if to == "*" {
                ui.selected_member(view)
                    .map_or_else(|| "*".to_owned(), |m| m.name.clone())
            } else {
                "*".to_owned()
            };
            ui.modal = Modal::Compose { to, text };
            None
        }
        code => {
            edit(&mut text, code, ctrl);
            ui.modal = Modal::Compose { to, text };
            None
        }
    }
}

/// Line editing in a text field: characters, Backspace, Ctrl-U clears.
fn edit(text: &mut String, code: KeyCode, ctrl: bool) {
    match code {
        KeyCode::Char('u') if ctrl => text.clear(),
        KeyCode::Char(c) if !ctrl => text.push(c),
        KeyCode::Backspace => {
            text.pop();
        }
        _ => {}
    }
}

/// Moves the selection of the focused panel by `delta` rows.
fn select(view: &TeamView, ui: &mut UiState, delta: isize) {
    let step = |row: usize, len: usize, delta: isize| -> usize {
        row.saturating_add_signed(delta).min(len.saturating_sub(1))
    };
    match ui.panel {
        // Row 0 is "all teammates", so there is one more row than members.
        Panel::Members => ui.member_row = step(ui.member_row, view.members.len() + 1, delta),
        Panel::Tasks => ui.task_row = step(ui.task_row, view.tasks.visible_len(), delta),
        // The newest entry is at the bottom: Up goes back in time.
        Panel::Inbox => ui.inbox_back = step(ui.inbox_back, view.lead_inbox.len(), -delta),
        Panel::Requests => ui.request_row = step(ui.request_row, view.requests.len(), delta),
    }
}

/// The selected teammate's name, or a notice asking to select one.
fn member(view: &TeamView, ui: &mut UiState) -> Option<String> {
    match ui.selected_member(view) {
        Some(m) => Some(m.name.clone()),
        None => notice(ui, "select a teammate first (↑/↓)"),
    }
}

fn cannot_hide(view: &TeamView, ui: &mut UiState) -> Option<Action> {
    notice(
        ui,
        &format!(
            "the {} backend cannot hide or show panes",
            view.backend_name
        ),
    )
}

fn notice<T>(ui: &mut UiState, text: &str) -> Option<T> {
    ui.notice = Some(text.to_owned());
    None
}

fn is_unzoom(key: &KeyEvent) -> bool {
    // Terminals report Ctrl-] as ']' with CONTROL, some as '5' with CONTROL,
    // and some as the raw GS character.
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    matches!(key.code, KeyCode::Char(']' | '5') if ctrl) || key.code == KeyCode::Char('\x1d')
}

/// The bytes a terminal sends for `key`, for forwarding to a pane.
pub fn key_bytes(key: &KeyEvent) -> Option<Vec<u8>> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let mut bytes = match key.code {
        KeyCode::Char(c) if ctrl && c.is_ascii_alphabetic() => {
            vec![(c.to_ascii_lowercase() as u8) & 0x1f]
        }
        KeyCode::Char(c) => c.to_string().into_bytes(),
        KeyCode::Enter => b"\r".to_vec(),
        KeyCode::Backspace => vec![0x7f],
        KeyCode::Tab => b"\t".to_vec(),
        KeyCode::BackTab => b"\x1b[Z".to_vec(),
        KeyCode::Esc => vec![0x1b],
        KeyCode::Up => b"\x1b[A".to_vec(),
        KeyCode::Down => b"\x1b[B".to_vec(),
        KeyCode::Right => b"\x1b[C".to_vec(),
        KeyCode::Left => b"\x1b[D".to_vec(),
        KeyCode::Home => b"\x1b[H".to_vec(),
        KeyCode::End => b"\x1b[F".to_vec(),
        KeyCode::PageUp => b"\x1b[5~".to_vec(),
        KeyCode::PageDown => b"\x1b[6~".to_vec(),
        KeyCode::Delete => b"\x1b[3~".to_vec(),
        KeyCode::Insert => b"\x1b[2~".to_vec(),
        _ => return None,
    };
    if alt {
        bytes.insert(0, 0x1b);
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::state::{MemberRow, MemberStatus, PendingRequest, RequestKind};

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ch(c: char) -> KeyEvent {
        press(KeyCode::Char(c))
    }

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    /// alice (running), bob (idle, mode plan), carol (idle, 1 unread); one plan request.
    fn team() -> TeamView {
        let mut bob = MemberRow::new("bob");
        bob.status = MemberStatus::Idle;
        bob.mode = Some("plan".into());
        let mut carol = MemberRow::new("carol");
        carol.status = MemberStatus::Idle;
        carol.unread = 1;
        TeamView {
            team: "demo".into(),
            backend_name: "tmux".into(),
            members: vec![MemberRow::new("alice"), bob, carol],
            requests: vec![PendingRequest {
                id: "plan_approval-1@alice@demo".into(),
                from: "alice".into(),
                kind: RequestKind::Plan {
                    content: "1. x".into(),
                },
                age: None,
            }],
            can_hide: true,
            ..TeamView::default()
        }
    }

    /// Presses `keys` in order from the starting state; the actions returned.
    fn keys(view: &TeamView, ui: &mut UiState, keys: &[KeyEvent]) -> Vec<Action> {
        keys.iter().filter_map(|k| handle(*k, view, ui)).collect()
    }

    #[test]
    fn arrows_select_members_including_the_all_row_and_stop_at_the_ends() {
        let v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(ui.selected_member(&v).map(|m| &*m.name), Some("alice"));
        keys(&v, &mut ui, &[press(KeyCode::Down), press(KeyCode::Down)]);
        assert_eq!(ui.member_row, 3);
        keys(&v, &mut ui, &[press(KeyCode::Down)]);
        assert_eq!(ui.member_row, 3, "stops at the last");
        keys(&v, &mut ui, &[press(KeyCode::Up); 5]);
        assert_eq!(ui.member_row, 0, "the 'all' row");
        assert_eq!(ui.selected_member(&v), None);
    }

    #[test]
    fn tab_cycles_the_panels_and_arrows_move_within_the_focused_one() {
        let mut v = team();
        v.tasks = vec![
            crate::tasks::Task::new("1", "a"),
            crate::tasks::Task::new("2", "b"),
        ]
        .into();
        let mut ui = UiState::new(&v);
        let tab = press(KeyCode::Tab);
        keys(&v, &mut ui, &[tab]);
        assert_eq!(ui.panel, Panel::Tasks);
        keys(&v, &mut ui, &[press(KeyCode::Down)]);
        assert_eq!((ui.task_row, ui.member_row), (1, 1));
        keys(&v, &mut ui, &[tab, tab]);
        assert_eq!(ui.panel, Panel::Requests);
        keys(&v, &mut ui, &[tab]);
        assert_eq!(ui.panel, Panel::Members);
    }

    #[test]
    fn enter_focuses_and_zooms_only_in_process() {
        let mut v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(
            keys(&v, &mut ui, &[press(KeyCode::Enter)]),
            [Action::Focus("alice".into())]
        );
        assert_eq!(ui.zoomed, None, "tmux focuses the pane, no zoom");
        v.in_process = true;
        keys(&v, &mut ui, &[press(KeyCode::Enter)]);
        assert_eq!(ui.zoomed.as_deref(), Some("alice"));
    }

    #[test]
    fn a_zoomed_pane_gets_every_key_until_ctrl_bracket() {
        let mut v = team();
        v.in_process = true;
        let mut ui = UiState::new(&v);
        ui.zoomed = Some("alice".into());
        let got = keys(
            &v,
            &mut ui,
            &[
                ch('k'),
                ch('q'),
                press(KeyCode::Enter),
                ctrl('c'),
                press(KeyCode::Up),
            ],
        );
        let bytes: Vec<u8> = got
            .into_iter()
            .flat_map(|a| match a {
                Action::Input { to, bytes } if to == "alice" => bytes,
                other => panic!("not forwarded: {other:?}"),
            })
            .collect();
        assert_eq!(bytes, b"kq\r\x03\x1b[A");
        assert_eq!(ui.modal, Modal::None, "k did not open a kill dialog");
        keys(&v, &mut ui, &[ctrl(']')]);
        assert_eq!(ui.zoomed, None);
    }

    #[test]
    fn q_quits_at_once_unless_in_process_teammates_would_end() {
        let v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(keys(&v, &mut ui, &[ch('q')]), [Action::Quit]);
        let mut v = team();
        v.in_process = true;
        v.members[2].status = MemberStatus::Dead { exit_code: Some(0) };
        let mut ui = UiState::new(&v);
        assert_eq!(keys(&v, &mut ui, &[ch('q')]), []);
        assert_eq!(ui.modal, Modal::ConfirmQuit { ending: 2 });
        assert_eq!(keys(&v, &mut ui, &[ch('n')]), []);
        assert_eq!(ui.modal, Modal::None);
        assert_eq!(keys(&v, &mut ui, &[ch('q'), ch('y')]), [Action::Quit]);
        // Nobody left alive: nothing to end, nothing to ask.
        for m in &mut v.members {
            m.status = MemberStatus::Dead { exit_code: None };
        }
        let mut ui = UiState::new(&v);
        assert_eq!(keys(&v, &mut ui, &[ch('q')]), [Action::Quit]);
    }

    /// The kill confirmation for alice is open, and `y` kills her.
    fn confirm_kills_alice_on_y(v: &TeamView, ui: &mut UiState) {
        let alice = Modal::ConfirmKill {
            name: "alice".into(),
        };
        assert_eq!(ui.modal, alice);
        assert_eq!(keys(v, ui, &[ch('y')]), [Action::Kill("alice".into())]);
        assert_eq!(ui.modal, Modal::None);
    }

    #[test]
    fn k_asks_and_only_y_kills() {
        let v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(keys(&v, &mut ui, &[ch('k')]), []);
        assert!(ui.killing.is_empty());
        confirm_kills_alice_on_y(&v, &mut ui);
    }

    #[test]
    fn a_confirmed_kill_is_shown_as_running_until_the_teammate_leaves() {
        let mut v = team();
        let mut ui = UiState::new(&v);
        keys(&v, &mut ui, &[ch('k'), ch('y')]);
        assert!(ui.tick(Duration::from_secs(2)), "ticks while a kill runs");
        assert_eq!(ui.killing.get("alice"), Some(&Duration::from_secs(2)));
        v.members.remove(0);
        ui.sync(&v);
        assert!(ui.killing.is_empty());
    }

    #[test]
    fn any_other_key_cancels_the_kill_so_jk_habits_never_kill() {
        let v = team();
        let mut ui = UiState::new(&v);
        for cancel in [ch('k'), ch('j'), ch('n'), press(KeyCode::Enter), ch('Y')] {
            assert_eq!(keys(&v, &mut ui, &[ch('k'), cancel]), [], "{cancel:?}");
            assert_eq!(ui.modal, Modal::None);
        }
        let mut ui = UiState::new(&v);
        assert_eq!(keys(&v, &mut ui, &[ch('k'), ch('k'), ch('k')]), []);
    }

    #[test]
    fn s_requests_shutdown_shows_the_countdown_then_offers_k() {
        let v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(
            keys(&v, &mut ui, &[ch('s')]),
            [Action::Shutdown("alice".into())]
        );
        assert!(matches!(&ui.modal, Modal::ShutdownCountdown { name, left }
            if name == "alice" && *left == SHUTDOWN_GRACE));
        assert_eq!(keys(&v, &mut ui, &[ch('x')]), []);
        assert!(
            matches!(ui.modal, Modal::ShutdownCountdown { .. }),
            "stays open"
        );
        ui.tick(Duration::from_secs(60));
        assert_eq!(keys(&v, &mut ui, &[ch('k')]), []);
        confirm_kills_alice_on_y(&v, &mut ui);
        let mut ui = UiState::new(&v);
        keys(&v, &mut ui, &[ch('s'), press(KeyCode::Esc)]);
        assert_eq!(ui.modal, Modal::None, "Esc closes the countdown");
    }

    #[test]
    fn p_lists_only_idle_teammates_and_prunes_on_y() {
        let v = team();
        let mut ui = UiState::new(&v);
        keys(&v, &mut ui, &[ch('p')]);
        assert_eq!(
            ui.modal,
            Modal::ConfirmPrune {
                names: vec!["bob".into()]
            },
            "carol has unread mail, alice runs"
        );
        assert_eq!(
            keys(&v, &mut ui, &[ch('y')]),
            [Action::Prune(vec!["bob".into()])]
        );
        assert_eq!(keys(&v, &mut ui, &[ch('p'), ch('n')]), []);
        let mut busy = team();
        busy.members.truncate(1);
        let mut ui = UiState::new(&busy);
        assert_eq!(keys(&busy, &mut ui, &[ch('p')]), []);
        assert_eq!((ui.modal, ui.notice.is_some()), (Modal::None, true));
    }

    #[test]
    fn h_and_shift_h_hide_and_show_only_where_the_backend_can() {
        let mut v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(
            keys(&v, &mut ui, &[ch('h'), ch('H')]),
            [Action::Hide("alice".into()), Action::ShowAll]
        );
        v.can_hide = false;
        assert_eq!(keys(&v, &mut ui, &[ch('h')]), []);
        assert!(ui.notice.as_deref().is_some_and(|n| n.contains("cannot")));
        assert_eq!(keys(&v, &mut ui, &[ch('H')]), []);
    }

    #[test]
    fn shift_tab_cycles_the_selected_members_mode_or_everyones_from_the_all_row() {
        let v = team();
        let mut ui = UiState::new(&v);
        let backtab = KeyEvent::new(KeyCode::BackTab, KeyModifiers::SHIFT);
        // alice has no mode (default), bob is in plan; the "all" row moves
        // everyone on from the first teammate's mode.
        for (row, target, mode) in [
            (1, Some("alice"), "acceptEdits"),
            (2, Some("bob"), "bypassPermissions"),
            (0, None, "acceptEdits"),
        ] {
            ui.member_row = row;
            assert_eq!(
                keys(&v, &mut ui, &[backtab]),
                [Action::CycleMode {
                    target: target.map(String::from),
                    mode: mode.into()
                }],
                "row {row}"
            );
        }
    }

    #[test]
    fn m_composes_to_the_selected_member_and_tab_toggles_broadcast() {
        let v = team();
        let mut ui = UiState::new(&v);
        let typed: Vec<KeyEvent> = "hi!".chars().map(ch).collect();
        let mut seq = vec![ch('m')];
        seq.extend(&typed);
        seq.push(press(KeyCode::Backspace));
        seq.push(press(KeyCode::Enter));
        assert_eq!(
            keys(&v, &mut ui, &seq),
            [Action::Send {
                to: "alice".into(),
                text: "hi".into()
            }]
        );
        let mut seq = vec![ch('m'), press(KeyCode::Tab)];
        seq.extend(&typed);
        seq.push(press(KeyCode::Enter));
        assert_eq!(
            keys(&v, &mut ui, &seq),
            [Action::Send {
                to: "*".into(),
                text: "hi!".into()
            }]
        );
        assert_eq!(
            keys(&v, &mut ui, &[ch('m'), press(KeyCode::Enter)]),
            [],
            "an empty message is not sent"
        );
        keys(&v, &mut ui, &[press(KeyCode::Esc)]);
        assert_eq!(ui.modal, Modal::None);
        ui.member_row = 0;
        keys(&v, &mut ui, &[ch('m')]);
        assert!(matches!(&ui.modal, Modal::Compose { to, .. } if to == "*"));
    }

    #[test]
    fn typing_in_a_text_box_does_not_trigger_commands() {
        let v = team();
        let mut ui = UiState::new(&v);
        let mut seq = vec![ch('t')];
        seq.extend("kill q?".chars().map(ch));
        seq.push(press(KeyCode::Enter));
        assert_eq!(
            keys(&v, &mut ui, &seq),
            [Action::CreateTask {
                subject: "kill q?".into()
            }]
        );
        assert_eq!(ui.modal, Modal::None);
        assert_eq!(
            keys(&v, &mut ui, &[ch('t'), ch('x'), press(KeyCode::Esc)]),
            []
        );
    }

    #[test]
    fn a_and_r_answer_the_selected_request() {
        let v = team();
        let mut ui = UiState::new(&v);
        let id = "plan_approval-1@alice@demo".to_owned();
        assert_eq!(
            keys(&v, &mut ui, &[ch('a'), ch('r')]),
            [Action::Approve(id.clone()), Action::Reject(id)]
        );
        let mut none = team();
        none.requests.clear();
        assert_eq!(keys(&none, &mut ui, &[ch('a')]), []);
        assert!(ui.notice.is_some());
    }

    #[test]
    fn q_and_ctrl_c_quit_and_question_mark_opens_help_which_any_key_closes() {
        let v = team();
        let mut ui = UiState::new(&v);
        assert_eq!(keys(&v, &mut ui, &[ch('q')]), [Action::Quit]);
        assert_eq!(keys(&v, &mut ui, &[ctrl('c')]), [Action::Quit]);
        assert_eq!(keys(&v, &mut ui, &[ch('?')]), []);
        assert_eq!(ui.modal, Modal::Help);
        assert_eq!(keys(&v, &mut ui, &[ch('q')]), [], "closes help only");
        assert_eq!(ui.modal, Modal::None);
    }

    #[test]
    fn g_toggles_the_grid_in_process_only() {
        let mut v = team();
        let mut ui = UiState::new(&v);
        keys(&v, &mut ui, &[ch('g')]);
        assert!(!ui.grid && ui.notice.is_some());
        v.in_process = true;
        let mut ui = UiState::new(&v);
        assert!(ui.grid, "on by default in-process");
        keys(&v, &mut ui, &[ch('g')]);
        assert!(!ui.grid);
    }

    #[test]
    fn member_keys_on_the_all_row_ask_for_a_teammate() {
        let v = team();
        let mut ui = UiState::new(&v);
        ui.member_row = 0;
        for key in ['k', 's', 'h'] {
            assert_eq!(keys(&v, &mut ui, &[ch(key)]), [], "{key}");
            assert_eq!(ui.modal, Modal::None);
            assert!(ui.notice.is_some());
        }
        assert_eq!(keys(&v, &mut ui, &[press(KeyCode::Enter)]), []);
    }

    #[test]
    fn key_releases_are_ignored() {
        let v = team();
        let mut ui = UiState::new(&v);
        let mut k = ch('q');
        k.kind = KeyEventKind::Release;
        assert_eq!(keys(&v, &mut ui, &[k]), []);
    }

    #[test]
    fn every_help_line_names_a_distinct_key() {
        let mut names: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), KEYS.len());
        for key in [
            "↑/↓",
            "Tab",
            "Enter",
            "k",
            "s",
            "p",
            "h / H",
            "Shift+Tab",
            "m",
            "t",
            "a / r",
            "q",
            "?",
        ] {
            assert!(names.contains(&key), "{key} missing from help");
        }
    }

    #[test]
    fn tab_skips_the_requests_panel_while_it_is_not_shown() {
        let mut v = team();
        v.requests.clear();
        let mut ui = UiState::new(&v);
        let tab = press(KeyCode::Tab);
        let mut seen = vec![];
        for _ in 0..4 {
            keys(&v, &mut ui, &[tab]);
            seen.push(ui.panel);
        }
        assert_eq!(
            seen,
            [Panel::Tasks, Panel::Inbox, Panel::Members, Panel::Tasks]
        );
        // Focus left on it when the last request goes moves back.
        let mut ui = UiState {
            panel: Panel::Requests,
            ..UiState::new(&v)
        };
        ui.sync(&v);
        assert_eq!(ui.panel, Panel::Members);
    }

    #[test]
    fn enter_on_a_task_or_a_request_opens_it_and_arrows_scroll_it() {
        let mut v = team();
        let mut t = crate::tasks::Task::new("1", "build");
        let mut md = serde_json::Map::new();
        md.insert("output".into(), serde_json::json!("line 1\nline 2\nline 3"));
        t.metadata = Some(md);
        v.tasks = vec![t].into();
        let mut ui = UiState {
            panel: Panel::Tasks,
            ..UiState::new(&v)
        };
        assert_eq!(keys(&v, &mut ui, &[press(KeyCode::Enter)]), []);
        let Modal::Read(r) = &ui.modal else {
            panic!("not opened: {:?} {:?}", ui.modal, ui.notice);
        };
        assert_eq!(r.title, "task #1");
        assert!(r.lines.contains(&"line 3".to_owned()), "{r:?}");
        keys(&v, &mut ui, &[press(KeyCode::Down)]);
        assert!(matches!(&ui.modal, Modal::Read(r) if r.scroll == 1));
        keys(&v, &mut ui, &[ch('x')]);
        assert_eq!(ui.modal, Modal::None, "any other key closes");
        ui.panel = Panel::Requests;
        keys(&v, &mut ui, &[press(KeyCode::Enter)]);
        assert!(
            matches!(&ui.modal, Modal::Read(r) if r.lines.iter().any(|l| l == "1. x")),
            "{:?}",
            ui.modal
        );
    }

    #[test]
    fn enter_on_a_tmux_teammate_says_how_to_come_back() {
        let v = team();
        let mut ui = UiState::new(&v);
        keys(&v, &mut ui, &[press(KeyCode::Enter)]);
        let n = ui.notice.as_deref().unwrap_or_default();
        assert!(n.contains("@alice") && n.contains("back here"), "{n}");
    }
}
