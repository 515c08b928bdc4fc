//! The pure view: [`draw`] renders a [`TeamView`] and a [`UiState`] into a
//! ratatui frame and does nothing else, so it is snapshot-tested on a
//! `TestBackend`. Live in-process screens come through [`ScreenSource`], a
//! callback the lead implements over its backend.
//!
//! Layout, by priority when space is short (80×24 stays usable): the
//! TeamStatus line on top, the members list, the pending requests (what
//! waits for the user), then the task board and the lead's inbox side by
//! side (stacked below 100 columns), a footer with the notice or key hints.
//! Only the rows that fit are built, so a frame costs the same with 1000
//! tasks as with 10. With `color` false (NO_COLOR) no colour is ever set:
//! selection and emphasis use reverse video and bold only. Every string from
//! outside (names, subjects, messages, requests, notices) goes through
//! [`escape_line`], so control and bidi characters are shown, never obeyed
//! and never silently dropped.
//!
//! # Parts
//!
//! - `theme`: the styles, and none of their colours under NO_COLOR.
//! - `members`, `requests`, `tasks`, `inbox`: one panel each.
//! - `screen`: live in-process screens, the grid and the zoomed pane.
//! - `modal`: the dialog drawn over the rest (confirmations, countdown,
//!   compose, new task, help).
//! - here: [`draw`], the frame's layout and footer, and what the panels
//!   share (their block, the window of rows that fits).

mod inbox;
mod members;
mod modal;
mod requests;
mod screen;
mod tasks;
mod theme;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use tui_term::vt100;

use super::state::{TeamView, UiState};
use crate::text::escape_line;
use theme::Theme;

pub use inbox::entry_line;

/// Live screens of in-process panes, by teammate name.
pub trait ScreenSource {
    /// Calls `f` with `name`'s screen; false when it has none.
    fn with_screen(&self, name: &str, f: &mut dyn FnMut(&vt100::Screen)) -> bool;
}

/// No live screens (tmux and the other pane backends).
pub struct NoScreens;

impl ScreenSource for NoScreens {
    fn with_screen(&self, _: &str, _: &mut dyn FnMut(&vt100::Screen)) -> bool {
        false
    }
}

/// Renders one frame.
pub fn draw(
    frame: &mut Frame,
    view: &TeamView,
    ui: &UiState,
    screens: &dyn ScreenSource,
    color: bool,
) {
    let theme = Theme { color };
    let area = frame.area();
    let buf = frame.buffer_mut();
    if let Some(name) = ui.zoomed.as_deref().filter(|_| view.in_process) {
        screen::draw_zoom(buf, area, view, name, screens, theme);
        return;
    }
    let [top, body, footer] = frame_rows(area);
    Paragraph::new(view.status_line_in(area.width as usize))
        .style(Style::new().add_modifier(Modifier::BOLD))
        .render_into(top, buf);
    if view.in_process && ui.grid {
        screen::draw_grid(buf, body, view, ui, screens, theme);
    } else {
        draw_panels(buf, body, view, ui, theme);
    }
    draw_footer(buf, footer, view, ui, theme);
    modal::draw(buf, area, view, ui, theme);
}

/// The size each in-process pane is shown at in a frame of `area`: the
/// zoomed one's, or every grid tile's inside its border. The lead resizes
/// each PTY to it, so a screen is never cropped nor half empty.
pub fn pane_areas(area: Rect, view: &TeamView, ui: &UiState) -> Vec<(String, Rect)> {
    if !view.in_process {
        return Vec::new();
    }
    if let Some(name) = &ui.zoomed {
        return vec![(name.clone(), zoom_area(area))];
    }
    if !ui.grid {
        return Vec::new();
    }
    let [_, body, _] = frame_rows(area);
    screen::grid_tiles(body, view, ui)
        .into_iter()
        .map(|(i, tile)| (view.members[i].name.clone(), screen::tile_inner(tile)))
        .collect()
}

/// The status line, the body and the footer of a frame.
fn frame_rows(area: Rect) -> [Rect; 3] {
    Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area)
}

/// The area a zoomed pane's screen fills in a frame of `area` (the lead
/// resizes the pane to it).
pub fn zoom_area(area: Rect) -> Rect {
    Rect {
        y: area.y.saturating_add(1),
        height: area.height.saturating_sub(1),
        ..area
    }
}

/// `widget.render(area, buf)` without importing `Widget` everywhere.
trait RenderInto {
    fn render_into(self, area: Rect, buf: &mut Buffer);
}

impl<W: ratatui::widgets::Widget> RenderInto for W {
    fn render_into(self, area: Rect, buf: &mut Buffer) {
        self.render(area, buf);
    }
}

/// A panel's bordered block, its border bright while it has focus.
fn panel_block(title: Line<'_>, focused: bool, theme: Theme) -> Block<'_> {
    Block::new()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(title)
}

/// The members, the requests, then tasks and inbox side by side (stacked
/// below 100 columns), each given the room it needs when space is short.
fn draw_panels(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    // Members first: header ("all") row + one per member + borders, at most
    // half the body (but never less than 5 rows) when others need room.
    let want_members = view.members.len().max(1) as u16 + 3;
    let cap = (area.height / 2).max(5);
    let members_h = want_members.min(cap).min(area.height);
    let rest_h = area.height - members_h;
    let requests_h = if view.requests.is_empty() {
        0
    } else {
        // Stacked panels below 100 columns need the room: a third, not half.
        let share = if area.width >= 100 {
            rest_h / 2
        } else {
            rest_h / 3
        };
        let want = view.requests.len() as u16 + 2 + 4;
        want.min(share.max(3)).min(10)
    };
    let [members_area, requests_area, lower] = Layout::vertical([
        Constraint::Length(members_h),
        Constraint::Length(requests_h),
        Constraint::Min(0),
    ])
    .areas(area);
    members::draw(buf, members_area, view, ui, theme);
    if requests_h > 0 {
        requests::draw(buf, requests_area, view, ui, theme);
    }
    if lower.height >= 3 {
        let [tasks_area, inbox_area] = if lower.width >= 100 {
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(lower)
        } else {
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(lower)
        };
        tasks::draw(buf, tasks_area, view, ui, theme);
        inbox::draw(buf, inbox_area, view, ui, theme);
    }
}

/// First row to show so that `selected` is visible in `visible` rows.
fn window(selected: usize, len: usize, visible: usize) -> std::ops::Range<usize> {
    if visible == 0 {
        return 0..0;
    }
    let start = (selected + 1)
        .saturating_sub(visible)
        .min(len.saturating_sub(visible));
    start..(start + visible).min(len)
}

/// The notice, if any, then the key hints that fit after it: `? help`
/// always shows, so a notice never hides how to get help.
fn draw_footer(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let width = area.width as usize;
    let hints = key_hints(view, ui);
    let mut spans = Vec::new();
    let mut room = width;
    if let Some(n) = ui.notice.as_deref().or(view.notice.as_deref()) {
        // Leave the notice at most what the first hint does not need.
        let keep = width.saturating_sub(hints[0].chars().count() + 3);
        let text = clip(&escape_line(n), keep);
        room = room.saturating_sub(text.chars().count() + 3);
        spans.push(Span::styled(text, theme.fg(Color::Yellow)));
        spans.push(Span::styled(" │ ", theme.dim()));
    }
    let mut shown: Vec<&str> = Vec::new();
    for h in &hints {
        let need = h.chars().count() + if shown.is_empty() { 0 } else { 3 };
        if need > room {
            continue;
        }
        room -= need;
        shown.push(h);
    }
    spans.push(Span::styled(shown.join(" · "), theme.dim()));
    Paragraph::new(Line::from(spans)).render_into(area, buf);
}

/// The key hints for where the user is, most needed first.
fn key_hints(view: &TeamView, ui: &UiState) -> Vec<&'static str> {
    use super::state::Panel;
    let mut hints = vec!["? help", "q quit"];
    match ui.panel {
        Panel::Members => hints.extend(["Enter focus", "k kill", "s stop", "m msg"]),
        Panel::Tasks => hints.push("Enter read"),
        Panel::Inbox => hints.push("Enter read"),
        Panel::Requests => hints.extend(["Enter read", "a approve", "r reject"]),
    }
    hints.extend(["Tab panel", "↑↓ select", "t task", "p prune"]);
    if view.in_process {
        hints.push("g grid");
    }
    hints
}

/// `text` cut to `max` characters, the cut marked with `…`.
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}
