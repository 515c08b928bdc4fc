//! What waits for the user: plan and permission requests, the selected
//! one's content under the list.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::{RenderInto, Theme, panel_block, window};
use crate::text::escape_line;
use crate::tui::state::{Panel, PendingRequest, RequestKind, TeamView, UiState, age};

/// Draws the panel: the list (at most half), the selected request's
/// content under a rule in the rest.
pub(super) fn draw(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
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
            let line = request_line(r, selected, view, theme);
            if selected && focused {
                line.style(theme.selected())
            } else {
                line
            }
        })
        .collect();
    Paragraph::new(lines).render_into(list, buf);
    if let Some(r) = ui.selected_request(view).filter(|_| content.height > 0) {
        Paragraph::new(request_content(r, area.height as usize, theme))
            .block(Block::new().borders(Borders::TOP).border_style(theme.dim()))
            .wrap(Wrap { trim: false })
            .render_into(content, buf);
    }
}

/// One row of the list: kind, who, how long ago, and the plan's first line
/// or the tool and what it is for.
fn request_line<'a>(r: &PendingRequest, selected: bool, view: &TeamView, theme: Theme) -> Line<'a> {
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
    Line::from(vec![
        Span::raw(if selected { "▸ " } else { "  " }),
        Span::styled(format!("[{}] ", r.kind.label()), theme.fg(Color::Yellow)),
        Span::styled(format!("@{}", escape_line(&r.from)), colour),
        Span::styled(
            r.age.map(|a| format!(" {}", age(a))).unwrap_or_default(),
            theme.dim(),
        ),
        Span::raw(" "),
        Span::raw(summary),
    ])
}

/// The selected request in full: the plan's first `max_lines` lines, or
/// the tool and its description.
fn request_content<'a>(r: &PendingRequest, max_lines: usize, theme: Theme) -> Vec<Line<'a>> {
    match &r.kind {
        RequestKind::Plan { content } => content
            .lines()
            .take(max_lines)
            .map(|l| Line::raw(escape_line(l).into_owned()))
            .collect(),
        RequestKind::Permission { tool, description } => vec![
            Line::from(vec![
                Span::styled("tool: ", theme.dim()),
                Span::raw(escape_line(tool).into_owned()),
            ]),
            Line::raw(escape_line(description).into_owned()),
        ],
    }
}
