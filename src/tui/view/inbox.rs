//! The lead's inbox, newest at the bottom: a protocol frame as its
//! one-line summary, a plain message as its summary or flattened text.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{RenderInto, Theme, panel_block, window};
use crate::mailbox::Entry;
use crate::protocol::Message;
use crate::text::escape_line;
use crate::tui::state::{Panel, TeamView, UiState};

/// One readable line for an inbox entry: the protocol frame's summary, or
/// the plain message's summary or text, flattened and escaped.
pub fn entry_line(entry: &Entry) -> String {
    summarise(entry).0
}

/// [`entry_line`], and whether the entry is a protocol frame.
fn summarise(entry: &Entry) -> (String, bool) {
    match Message::parse(&entry.text) {
        Some(m) => (escape_line(&m.one_line()).into_owned(), true),
        None => (plain_line(entry), false),
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

/// Draws the panel, the selected entry kept in view.
pub(super) fn draw(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
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
            let (text, is_frame) = summarise(entry);
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
                Span::styled(text, text_style),
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
