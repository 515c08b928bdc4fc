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

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row, Table, Wrap};
use tui_term::vt100;
use tui_term::widget::{Cell as _, PseudoTerminal};

use super::keymap::{KEYS, UNZOOM_KEY};
use super::state::{MemberRow, MemberStatus, Modal, Panel, RequestKind, TeamView, UiState, age};
use crate::mailbox::Entry;
use crate::protocol::Message;
use crate::tasks::{Status, Task};
use crate::text::escape_line;

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

/// Styles, or none of their colours under NO_COLOR.
#[derive(Debug, Clone, Copy)]
struct Theme {
    color: bool,
}

impl Theme {
    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// A member's palette colour.
    fn member(self, color: Option<&str>) -> Style {
        let c = match color {
            Some("red") => Color::Red,
            Some("blue") => Color::Blue,
            Some("green") => Color::Green,
            Some("yellow") => Color::Yellow,
            Some("purple") => Color::Magenta,
            Some("orange") => Color::Indexed(208),
            Some("pink") => Color::Indexed(205),
            Some("cyan") => Color::Cyan,
            _ => return Style::new(),
        };
        self.fg(c)
    }

    fn status(self, s: &MemberStatus) -> Style {
        match s {
            MemberStatus::Running => self.fg(Color::Green),
            MemberStatus::Idle => Style::new(),
            MemberStatus::WaitingForApproval => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            MemberStatus::Stopping { .. } => self.fg(Color::Magenta),
            MemberStatus::Dead { .. } => self.fg(Color::Red).add_modifier(Modifier::BOLD),
        }
    }

    fn task(self, s: Status) -> Style {
        match s {
            Status::Pending => Style::new(),
            Status::InProgress => self.fg(Color::Green),
            Status::Completed => self.fg(Color::DarkGray),
        }
    }

    fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    fn border(self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            self.dim()
        }
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
        draw_zoom(buf, area, view, name, screens, theme);
        return;
    }
    let [top, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    Paragraph::new(view.status_line())
        .style(Style::new().add_modifier(Modifier::BOLD))
        .render_into(top, buf);
    if view.in_process && ui.grid {
        draw_grid(buf, body, view, ui, screens, theme);
    } else {
        draw_panels(buf, body, view, ui, theme);
    }
    draw_footer(buf, footer, view, ui, theme);
    draw_modal(buf, area, view, ui, theme);
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

fn panel_block(title: Line<'_>, focused: bool, theme: Theme) -> Block<'_> {
    Block::new()
        .borders(Borders::ALL)
        .border_style(theme.border(focused))
        .title(title)
}

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
    let [members, requests, lower] = Layout::vertical([
        Constraint::Length(members_h),
        Constraint::Length(requests_h),
        Constraint::Min(0),
    ])
    .areas(area);
    draw_members(buf, members, view, ui, theme);
    if requests_h > 0 {
        draw_requests(buf, requests, view, ui, theme);
    }
    if lower.height >= 3 {
        let [tasks, inbox] = if lower.width >= 100 {
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(lower)
        } else {
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(lower)
        };
        draw_tasks(buf, tasks, view, ui, theme);
        draw_inbox(buf, inbox, view, ui, theme);
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

fn draw_members(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let focused = ui.panel == Panel::Members;
    let title = Line::from(format!(
        " members · {} · {} ",
        escape_line(&view.team),
        escape_line(&view.backend_name)
    ));
    let block = panel_block(title, focused, theme);
    let inner = block.inner(area);
    block.render_into(area, buf);
    let name_w = view
        .members
        .iter()
        .map(|m| escape_line(&m.name).chars().count() + if m.hidden { 8 } else { 1 })
        .max()
        .unwrap_or(4)
        .clamp(8, 24) as u16;
    let cols = member_columns(inner.width, name_w);
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c {
            Col::Task => Constraint::Fill(1),
            c => Constraint::Length(c.width(name_w)),
        })
        .collect();
    let all_selected = ui.member_row == 0;
    let head: Vec<Cow<str>> = cols
        .iter()
        .map(|c| match c {
            Col::Mark => Cow::Borrowed(if all_selected { "▸" } else { " " }),
            Col::Name => Cow::Owned(format!("all ({})", view.members.len())),
            c => Cow::Borrowed(c.header()),
        })
        .collect();
    let mut header = Row::new(head).style(theme.dim().add_modifier(Modifier::BOLD));
    if all_selected && focused {
        header = header.style(theme.selected());
    }
    let visible = inner.height.saturating_sub(1) as usize;
    let sel = ui.member_row.saturating_sub(1);
    let range = window(sel, view.members.len(), visible);
    let first = range.start;
    let rows: Vec<Row> = view.members[range]
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let selected = ui.member_row == first + i + 1;
            member_row(m, selected, focused, &cols, theme)
        })
        .collect();
    let empty = rows.is_empty();
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .render_into(inner, buf);
    if empty && inner.height > 1 {
        let hint = "no teammates yet: `swarm spawn NAME`, or `swarm up SPEC`";
        let room = inner.width.saturating_sub(2) as usize;
        buf.set_stringn(inner.x + 2, inner.y + 1, hint, room, theme.dim());
    }
}

/// A column of the members list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Mark,
    Name,
    Agent,
    Model,
    Mode,
    Status,
    Task,
    Act,
    Mail,
}

impl Col {
    const ALL: [Col; 9] = [
        Col::Mark,
        Col::Name,
        Col::Agent,
        Col::Model,
        Col::Mode,
        Col::Status,
        Col::Task,
        Col::Act,
        Col::Mail,
    ];
    /// What goes first when the list is too narrow, least needed first:
    /// the name and the status always stay.
    const DROP_ORDER: [Col; 6] = [
        Col::Model,
        Col::Mode,
        Col::Agent,
        Col::Mail,
        Col::Act,
        Col::Task,
    ];
    /// The narrowest the task column may get before it is dropped.
    const TASK_MIN: u16 = 12;

    fn width(self, name_w: u16) -> u16 {
        match self {
            Col::Mark => 1,
            Col::Name => name_w,
            Col::Agent => 7,
            Col::Model => 14,
            Col::Mode => 11,
            Col::Status => 16,
            Col::Task => Col::TASK_MIN,
            Col::Act | Col::Mail => 4,
        }
    }

    fn header(self) -> &'static str {
        match self {
            Col::Mark | Col::Name => "",
            Col::Agent => "agent",
            Col::Model => "model",
            Col::Mode => "mode",
            Col::Status => "status",
            Col::Task => "task",
            Col::Act => "act",
            Col::Mail => "mail",
        }
    }
}

/// The members list's columns for `width` cells: all of them when they
/// fit (the model from 100 cells), else without the least needed ones, so
/// names are never cut to make room for an empty mode column.
fn member_columns(width: u16, name_w: u16) -> Vec<Col> {
    let mut cols: Vec<Col> = Col::ALL.to_vec();
    if width < 100 {
        cols.retain(|c| *c != Col::Model);
    }
    let need = |cols: &[Col]| -> u16 {
        cols.iter().map(|c| c.width(name_w)).sum::<u16>() + cols.len().saturating_sub(1) as u16
    };
    for drop in Col::DROP_ORDER {
        if need(&cols) <= width {
            break;
        }
        cols.retain(|c| *c != drop);
    }
    cols
}

fn member_row<'a>(
    m: &'a MemberRow,
    selected: bool,
    focused: bool,
    cols: &[Col],
    theme: Theme,
) -> Row<'a> {
    let colour = theme.member(m.color.as_deref());
    let cells: Vec<ratatui::widgets::Cell> = cols
        .iter()
        .map(|c| match c {
            Col::Mark => Span::styled(if selected { "▸" } else { "●" }, colour).into(),
            Col::Name => {
                let mut name = vec![Span::styled(format!("@{}", escape_line(&m.name)), colour)];
                if m.hidden {
                    name.push(Span::styled(" hidden", theme.dim()));
                }
                Line::from(name).into()
            }
            Col::Agent => Span::raw(escape_line(&m.agent)).into(),
            Col::Model => Span::raw(escape_line(m.model.as_deref().unwrap_or(""))).into(),
            Col::Mode => Span::raw(escape_line(m.mode.as_deref().unwrap_or(""))).into(),
            Col::Status => Span::styled(m.status.label(), theme.status(&m.status)).into(),
            Col::Task => Span::raw(match &m.current_task {
                Some((id, subject)) => {
                    format!("#{} {}", escape_line(id), escape_line(subject))
                }
                None => String::new(),
            })
            .into(),
            Col::Act => {
                Span::styled(m.last_activity.map(age).unwrap_or_default(), theme.dim()).into()
            }
            Col::Mail => Span::styled(
                if m.unread > 0 {
                    format!("✉{}", m.unread)
                } else {
                    String::new()
                },
                theme.fg(Color::Yellow),
            )
            .into(),
        })
        .collect();
    let row = Row::new(cells);
    if selected && focused {
        row.style(theme.selected())
    } else if selected {
        row.style(Style::new().add_modifier(Modifier::BOLD))
    } else {
        row
    }
}

fn draw_tasks(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let focused = ui.panel == Panel::Tasks;
    let t = view.totals();
    let title = Line::from(format!(" tasks {}/{} ", t.tasks_done, t.tasks));
    let block = panel_block(title, focused, theme);
    let inner = block.inner(area);
    block.render_into(area, buf);
    let visible = inner.height.saturating_sub(1) as usize;
    let range = window(ui.task_row, t.tasks, visible);
    let start = range.start;
    // In a narrow lead pane the subject gets the blocked-by column's room;
    // a waiting task shows its blockers as its status (`⊘ #3,#4`).
    let narrow = inner.width < 64;
    let rows: Vec<Row> = view
        .visible_tasks()
        .skip(range.start)
        .take(range.len())
        .enumerate()
        .map(|(i, task)| {
            let row = task_row(task, view, narrow, theme);
            if start + i == ui.task_row && focused {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();
    let mut widths = vec![
        Constraint::Length(5),
        Constraint::Length(11),
        Constraint::Length(12),
        Constraint::Length(9),
        Constraint::Fill(1),
    ];
    let mut head = vec!["id", "status", "owner", "blocked", "subject"];
    if narrow {
        widths.remove(3);
        head.remove(3);
    }
    let header = Row::new(head).style(theme.dim().add_modifier(Modifier::BOLD));
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .render_into(inner, buf);
}

fn task_row<'a>(task: &'a Task, view: &TeamView, narrow: bool, theme: Theme) -> Row<'a> {
    // The runtime leaves a task whose command failed pending, still owned,
    // with `metadata.failed` (reassign or unassign it to retry).
    let failed = task.status == Status::Pending
        && task
            .metadata
            .as_ref()
            .and_then(|m| m.get("failed"))
            .and_then(|f| f.as_bool())
            == Some(true);
    let status = match task.status {
        _ if failed => "failed",
        Status::Pending => "pending",
        Status::InProgress => "in progress",
        Status::Completed => "done",
    };
    let owner = match &task.owner {
        Some(o) => {
            let colour = view.member(o).and_then(|m| m.color.as_deref());
            Span::styled(format!("@{}", escape_line(o)), theme.member(colour))
        }
        None => Span::raw(""),
    };
    let blocked = if task.blocked_by.is_empty() {
        String::new()
    } else {
        task.blocked_by
            .iter()
            .map(|id| format!("#{}", escape_line(id)))
            .collect::<Vec<_>>()
            .join(",")
    };
    // Narrow: a waiting task's blockers take the place of `pending`.
    let status = if narrow && !blocked.is_empty() && task.status == Status::Pending {
        Span::styled(format!("⊘ {blocked}"), theme.fg(Color::Red))
    } else if failed {
        Span::styled(status, theme.fg(Color::Red).add_modifier(Modifier::BOLD))
    } else {
        Span::styled(status, theme.task(task.status))
    };
    let mut cells = vec![
        ratatui::widgets::Cell::from(format!("#{}", escape_line(&task.id))),
        status.into(),
        owner.into(),
    ];
    if !narrow {
        cells.push(Span::styled(blocked, theme.fg(Color::Red)).into());
    }
    cells.push(Span::raw(escape_line(&task.subject)).into());
    Row::new(cells)
}

/// One readable line for an inbox entry: the protocol frame's summary, or
/// the plain message's summary or text, flattened and escaped.
pub fn entry_line(entry: &Entry) -> String {
    match Message::parse(&entry.text) {
        Some(m) => escape_line(&m.one_line()).into_owned(),
        None => plain_line(entry),
    }
}

/// A plain message's summary, or its text, on one line, escaped.
fn plain_line(entry: &Entry) -> String {
    let text = entry.summary.as_deref().unwrap_or(&entry.text);
    let mut flat = String::with_capacity(text.len().min(240));
    for word in text.split_whitespace() {
        if flat.len() > 240 {
            flat.push('…');
            break;
        }
        if !flat.is_empty() {
            flat.push(' ');
        }
        flat.push_str(word);
    }
    // Whitespace (newlines, tabs) is flattened first; what remains unsafe is
    // shown escaped.
    escape_line(&flat).into_owned()
}

fn draw_inbox(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let focused = ui.panel == Panel::Inbox;
    let title = Line::from(format!(" inbox ({}) ", view.lead_inbox.len()));
    let block = panel_block(title, focused, theme);
    let inner = block.inner(area);
    block.render_into(area, buf);
    let visible = inner.height as usize;
    let len = view.lead_inbox.len();
    // Rows counted from the newest: window over "back" positions.
    let back = window(ui.inbox_back, len, visible);
    let lines: Vec<Line> = back
        .rev()
        .map(|b| {
            let entry = &view.lead_inbox[len - 1 - b];
            let time = escape_line(entry.timestamp.get(11..19).unwrap_or(""));
            let frame = Message::parse(&entry.text);
            let is_frame = frame.is_some();
            let colour = theme.member(entry.color.as_deref());
            let text_style = if is_frame {
                theme.dim().add_modifier(Modifier::ITALIC)
            } else {
                Style::new()
            };
            let line = Line::from(vec![
                Span::styled(format!("{time} "), theme.dim()),
                Span::styled(format!("@{}", escape_line(&entry.from)), colour),
                Span::raw(if is_frame { " · " } else { ": " }),
                Span::styled(
                    frame.map_or_else(
                        || plain_line(entry),
                        |m| escape_line(&m.one_line()).into_owned(),
                    ),
                    text_style,
                ),
            ]);
            if b == ui.inbox_back && focused {
                line.style(theme.selected())
            } else {
                line
            }
        })
        .collect();
    Paragraph::new(lines).render_into(inner, buf);
}

fn draw_requests(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let focused = ui.panel == Panel::Requests;
    let title = Line::from(vec![
        Span::styled(
            format!(" waiting for you ({}) ", view.requests.len()),
            theme.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        ),
        Span::styled("a approve · r reject ", theme.dim()),
    ]);
    let block = panel_block(title, focused, theme);
    let inner = block.inner(area);
    block.render_into(area, buf);
    // The list takes at most half, the selected request's content the rest.
    // (All of it when the content would get less than a line under its rule.)
    let n = view.requests.len() as u16;
    let list_h = if inner.height >= n.saturating_add(2) {
        n.min(inner.height.div_ceil(2))
    } else {
        inner.height
    };
    let [list, content] =
        Layout::vertical([Constraint::Length(list_h), Constraint::Min(0)]).areas(inner);
    let range = window(ui.request_row, view.requests.len(), list_h as usize);
    let lines: Vec<Line> = view.requests[range.clone()]
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let selected = range.start + i == ui.request_row;
            let colour = theme.member(view.member(&r.from).and_then(|m| m.color.as_deref()));
            let summary = match &r.kind {
                RequestKind::Plan { content } => escape_line(
                    content
                        .lines()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim(),
                )
                .into_owned(),
                RequestKind::Permission { tool, description } => {
                    format!("{}: {}", escape_line(tool), escape_line(description))
                }
            };
            let line = Line::from(vec![
                Span::raw(if selected { "▸ " } else { "  " }),
                Span::styled(format!("[{}] ", r.kind.label()), theme.fg(Color::Yellow)),
                Span::styled(format!("@{}", escape_line(&r.from)), colour),
                Span::styled(
                    r.age.map(|a| format!(" {}", age(a))).unwrap_or_default(),
                    theme.dim(),
                ),
                Span::raw(" "),
                Span::raw(summary),
            ]);
            if selected && focused {
                line.style(theme.selected())
            } else {
                line
            }
        })
        .collect();
    Paragraph::new(lines).render_into(list, buf);
    if let Some(r) = ui.selected_request(view).filter(|_| content.height > 0) {
        let text: Vec<Line> = match &r.kind {
            RequestKind::Plan { content } => content
                .lines()
                .take(area.height as usize)
                .map(|l| Line::raw(escape_line(l).into_owned()))
                .collect(),
            RequestKind::Permission { tool, description } => vec![
                Line::from(vec![
                    Span::styled("tool: ", theme.dim()),
                    Span::raw(escape_line(tool).into_owned()),
                ]),
                Line::raw(escape_line(description).into_owned()),
            ],
        };
        Paragraph::new(text)
            .block(Block::new().borders(Borders::TOP).border_style(theme.dim()))
            .wrap(Wrap { trim: false })
            .render_into(content, buf);
    }
}

fn draw_footer(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let line = match ui.notice.as_deref().or(view.notice.as_deref()) {
        Some(n) => Line::styled(escape_line(n).into_owned(), theme.fg(Color::Yellow)),
        None => {
            let grid = if view.in_process { " · g grid" } else { "" };
            Line::styled(
                format!(
                    "? help · ↑↓ select · Tab panel · Enter focus · k kill · s shutdown · \
                     p prune · m message · t task · a/r answer{grid} · q quit"
                ),
                theme.dim(),
            )
        }
    };
    Paragraph::new(line).render_into(area, buf);
}

fn draw_grid(
    buf: &mut Buffer,
    area: Rect,
    view: &TeamView,
    ui: &UiState,
    screens: &dyn ScreenSource,
    theme: Theme,
) {
    let n = view.members.len();
    if n == 0 || area.height < 3 {
        Paragraph::new(Line::styled("no teammates", theme.dim())).render_into(area, buf);
        return;
    }
    // Roughly square tiles in screen space (a cell is about twice as tall
    // as it is wide), never narrower than 20 columns or lower than 4 rows.
    let max_cols = (area.width / 20).max(1) as usize;
    let max_rows = (area.height / 4).max(1) as usize;
    let ratio = f64::from(area.width) / (2.0 * f64::from(area.height));
    let cols = ((n as f64 * ratio).sqrt().ceil() as usize).clamp(1, max_cols.min(n));
    let rows = n.div_ceil(cols).min(max_rows);
    let shown = (rows * cols).min(n);
    // Keep the selected teammate on screen.
    let sel = ui.member_row.saturating_sub(1);
    let first = if sel >= shown {
        (sel + 1 - shown).div_ceil(cols) * cols
    } else {
        0
    };
    let row_areas = Layout::vertical(vec![Constraint::Fill(1); rows]).split(area);
    for (r, row_area) in row_areas.iter().enumerate() {
        let col_areas = Layout::horizontal(vec![Constraint::Fill(1); cols]).split(*row_area);
        for (c, tile) in col_areas.iter().enumerate() {
            let index = first + r * cols + c;
            let Some(m) = view.members.get(index) else {
                continue;
            };
            let selected = ui.member_row == index + 1;
            let title = Line::from(vec![
                Span::raw(if selected { " ▸" } else { "" }),
                Span::styled(
                    format!(" @{} ", escape_line(&m.name)),
                    theme
                        .member(m.color.as_deref())
                        .add_modifier(Modifier::BOLD),
                ),
                Span::styled(m.status.label(), theme.status(&m.status)),
                Span::raw(" "),
            ]);
            let block = panel_block(title, selected, theme);
            let inner = block.inner(*tile);
            block.render_into(*tile, buf);
            let found = screens.with_screen(&m.name, &mut |screen| {
                draw_screen_tail(screen, inner, buf, theme)
            });
            if !found {
                Paragraph::new(Line::styled("no screen", theme.dim())).render_into(inner, buf);
            }
        }
    }
    if shown < n {
        let more = format!(" +{} more (↑/↓) ", n - shown);
        let x = area.right().saturating_sub(more.chars().count() as u16);
        buf.set_string(x, area.bottom().saturating_sub(1), more, theme.dim());
    }
}

/// The rows of `screen` ending at its cursor line, as many as fit in
/// `area`: the part of a teammate's pane that is changing.
fn draw_screen_tail(screen: &vt100::Screen, area: Rect, buf: &mut Buffer, theme: Theme) {
    let (rows, cols) = screen.size();
    let (cursor_row, _) = screen.cursor_position();
    let bottom = (cursor_row + 1).min(rows).max(area.height.min(rows));
    let start = bottom.saturating_sub(area.height);
    for r in 0..area.height.min(bottom - start) {
        for c in 0..area.width.min(cols) {
            if let Some(cell) = screen.cell(start + r, c) {
                let target = &mut buf[(area.x + c, area.y + r)];
                cell.apply(target);
                if !theme.color {
                    target.fg = Color::Reset;
                    target.bg = Color::Reset;
                }
            }
        }
    }
}

fn draw_zoom(
    buf: &mut Buffer,
    area: Rect,
    view: &TeamView,
    name: &str,
    screens: &dyn ScreenSource,
    theme: Theme,
) {
    let status = view
        .member(name)
        .map(|m| m.status.label())
        .unwrap_or_default();
    let colour = theme.member(view.member(name).and_then(|m| m.color.as_deref()));
    let header = Line::from(vec![
        Span::styled(
            format!("@{}", escape_line(name)),
            colour.add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(" {status} · ")),
        Span::styled(format!("{UNZOOM_KEY} returns · "), theme.dim()),
        Span::styled(view.status_line(), theme.dim()),
    ]);
    Paragraph::new(header).render_into(Rect { height: 1, ..area }, buf);
    let body = zoom_area(area);
    let found = screens.with_screen(name, &mut |screen| {
        PseudoTerminal::new(screen).render_into(body, buf);
    });
    if !found {
        Paragraph::new(Line::styled("no screen for this pane", theme.dim())).render_into(body, buf);
    } else if !theme.color {
        strip_colour(buf, body);
    }
}

fn strip_colour(buf: &mut Buffer, area: Rect) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            cell.fg = Color::Reset;
            cell.bg = Color::Reset;
        }
    }
}

/// A `w`×`h` rectangle centred in `area`, clamped to it.
fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_modal(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let warn = theme.fg(Color::Red).add_modifier(Modifier::BOLD);
    let (title, lines, width): (&str, Vec<Line>, u16) = match &ui.modal {
        Modal::None => return,
        Modal::ConfirmKill { name } => (
            " kill ",
            vec![
                Line::styled(format!("Kill @{}? y/N", escape_line(name)), warn),
                Line::styled("forced; its tasks go back to the board", theme.dim()),
            ],
            46,
        ),
        Modal::ConfirmPrune { names } => {
            let who = names
                .iter()
                .map(|n| format!("@{}", escape_line(n)))
                .collect::<Vec<_>>()
                .join(" ");
            (
                " prune ",
                vec![
                    Line::styled(format!("Prune {} idle teammates? y/N", names.len()), warn),
                    Line::raw(who),
                ],
                50,
            )
        }
        Modal::ConfirmQuit { ending } => (
            " quit ",
            vec![
                Line::styled(format!("Quit and end {ending} teammates? y/N"), warn),
                Line::styled("in-process panes live inside the lead", theme.dim()),
            ],
            46,
        ),
        Modal::ShutdownCountdown { name, left } => {
            let lines = if left.is_zero() {
                vec![
                    Line::styled(
                        format!(
                            "@{} has not stopped after {}",
                            escape_line(name),
                            age(super::state::SHUTDOWN_GRACE)
                        ),
                        warn,
                    ),
                    Line::raw("k kill · Esc close"),
                ]
            } else {
                let status = view
                    .member(name)
                    .map(|m| m.status.label())
                    .unwrap_or_default();
                vec![
                    Line::from(vec![
                        Span::raw(format!("Shutting down @{}… ", escape_line(name))),
                        Span::styled(
                            format!("{}s", left.as_secs_f64().ceil() as u64),
                            Style::new().add_modifier(Modifier::BOLD),
                        ),
                    ]),
                    Line::styled(format!("{status} · Esc close · k kill now"), theme.dim()),
                ]
            };
            (" shutdown ", lines, 50)
        }
        Modal::Compose { to, text } => {
            let to_line = if to == "*" {
                "To: * (every teammate) · Tab: one teammate".to_owned()
            } else {
                format!("To: @{} · Tab: everyone (*)", escape_line(to))
            };
            (
                " message ",
                vec![
                    Line::raw(to_line),
                    Line::raw(format!("> {}▏", escape_line(text))),
                    Line::styled("Enter send · Esc cancel", theme.dim()),
                ],
                60,
            )
        }
        Modal::NewTask { subject } => (
            " new task ",
            vec![
                Line::raw(format!("Subject: {}▏", escape_line(subject))),
                Line::styled("Enter create · Esc cancel", theme.dim()),
            ],
            60,
        ),
        Modal::Help => {
            let mut lines: Vec<Line> = KEYS
                .iter()
                .map(|(k, what)| {
                    Line::from(vec![
                        Span::styled(
                            format!("{k:>10}  "),
                            Style::new().add_modifier(Modifier::BOLD),
                        ),
                        Span::raw(*what),
                    ])
                })
                .collect();
            lines.push(Line::styled("any key closes this help", theme.dim()));
            (" keys ", lines, 66)
        }
    };
    let height = lines.len() as u16 + 2;
    let popup = centered(area, width, height);
    Clear.render_into(popup, buf);
    Paragraph::new(lines)
        .block(
            Block::new()
                .borders(Borders::ALL)
                .border_style(theme.fg(Color::Cyan).add_modifier(Modifier::BOLD))
                .title(title),
        )
        .wrap(Wrap { trim: false })
        .render_into(popup, buf);
}
