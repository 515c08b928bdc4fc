//! The members panel: one row per teammate under an "all" row, its
//! columns dropped least needed first when the panel is narrow.

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Row, Table};

use super::{RenderInto, Theme, panel_block, window};
use crate::text::escape_line;
use crate::tui::state::{MemberRow, Panel, TeamView, UiState, age};

/// Draws the panel: a header with the "all" row, then the members that
/// fit around the selected one, or a hint when there are none.
pub(super) fn draw(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
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
        .map(|m| escape_line(&m.name).chars().count() + name_note_width(m))
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
            let killing = ui.killing.get(&m.name).copied();
            member_row(m, selected, focused, killing, &cols, theme)
        })
        .collect();
    let empty = rows.is_empty();
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .render_into(inner, buf);
    if empty && inner.height > 1 {
        let hint = "no teammates now: `swarm spawn NAME`, or `swarm up SPEC`";
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
            Col::Status => 18,
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

/// One member's row, in `cols`; highlighted when selected (reversed when
/// the panel has focus, bold otherwise).
fn member_row<'a>(
    m: &'a MemberRow,
    selected: bool,
    focused: bool,
    killing: Option<std::time::Duration>,
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
                } else if let Some(w) = &m.apart {
                    // Not beside the lead: the lead's window was full.
                    name.push(Span::styled(format!(" in {}", escape_line(w)), theme.dim()));
                }
                Line::from(name).into()
            }
            Col::Agent => Span::raw(escape_line(&m.agent)).into(),
            Col::Model => Span::raw(escape_line(m.model.as_deref().unwrap_or(""))).into(),
            Col::Mode => Span::raw(escape_line(m.mode.as_deref().unwrap_or(""))).into(),
            Col::Status => match (killing, &m.attention) {
                (Some(k), _) if m.status.is_alive() => {
                    Span::styled(format!("killing {}…", age(k)), theme.fg(Color::Red))
                }
                (_, Some(a @ crate::team::status::Attention::Stalled { .. })) => Span::styled(
                    format!("! {}", a.label()),
                    theme.fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                (_, Some(_)) => Span::styled(
                    format!("! {}", m.status.label()),
                    theme.fg(Color::Red).add_modifier(Modifier::BOLD),
                ),
                _ => Span::styled(m.status.label(), theme.status(&m.status)),
            }
            .into(),
            Col::Task => task_cell(m, theme).into(),
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

/// The task column: the task in progress with its elapsed time and the
/// last line of output (`#2 Parse · 12s › compiling foo`), or a failed
/// task in red.
fn task_cell(m: &MemberRow, theme: Theme) -> Line<'static> {
    let mut spans = match &m.current_task {
        Some((id, subject)) => vec![Span::raw(format!(
            "#{} {}",
            escape_line(id),
            escape_line(subject)
        ))],
        None => match &m.attention {
            Some(a @ crate::team::status::Attention::FailedTask(_)) => vec![Span::styled(
                escape_line(&a.label()).into_owned(),
                theme.fg(Color::Red),
            )],
            _ => Vec::new(),
        },
    };
    // The worktree before the progress: the last output line is the
    // longest part and the one a narrow column may cut.
    if let Some(wt) = &m.worktree {
        let sep = if spans.is_empty() { "" } else { " · " };
        spans.push(Span::raw(format!("{sep}⎇ {}", escape_line(wt))));
    }
    if let (Some(_), Some(p)) = (&m.current_task, &m.progress) {
        if let Some(e) = p.elapsed {
            spans.push(Span::styled(format!(" · {}", age(e)), theme.dim()));
        }
        if let Some(l) = &p.last_line {
            spans.push(Span::styled(format!(" › {}", escape_line(l)), theme.dim()));
        }
    }
    Line::from(spans)
}

/// The width of what follows a member's name: ` hidden`, or ` in window 2`
/// for a pane the lead's full window sent elsewhere (plus the `@`).
fn name_note_width(m: &MemberRow) -> usize {
    if m.hidden {
        8
    } else if let Some(w) = &m.apart {
        escape_line(w).chars().count() + 5
    } else {
        1
    }
}
