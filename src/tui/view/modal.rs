//! The dialog drawn over the rest of the frame: the y/N confirmations,
//! the shutdown countdown, the compose and new-task boxes, and the help.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::{RenderInto, Theme};
use crate::text::escape_line;
use crate::tui::keymap::KEYS;
use crate::tui::state::{Modal, SHUTDOWN_GRACE, TeamView, UiState, age};

/// What a modal shows: its title, its lines and its width (the height
/// follows from the lines).
struct Dialog {
    title: &'static str,
    lines: Vec<Line<'static>>,
    width: u16,
}

/// Draws the open modal, if any, centred over the frame.
pub(super) fn draw(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let Some(Dialog {
        title,
        lines,
        width,
    }) = dialog(&ui.modal, view, theme)
    else {
        return;
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

/// The dialog for `modal`; `None` when no modal is open.
fn dialog(modal: &Modal, view: &TeamView, theme: Theme) -> Option<Dialog> {
    let warn = theme.fg(Color::Red).add_modifier(Modifier::BOLD);
    let (title, lines, width) = match modal {
        Modal::None => return None,
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
            (" shutdown ", countdown(name, *left, view, theme), 50)
        }
        Modal::Compose { to, text } => (" message ", compose(to, text, theme), 60),
        Modal::NewTask { subject } => (
            " new task ",
            vec![
                Line::raw(format!("Subject: {}▏", escape_line(subject))),
                Line::styled("Enter create · Esc cancel", theme.dim()),
            ],
            60,
        ),
        Modal::Help => (" keys ", help(theme), 66),
    };
    Some(Dialog {
        title,
        lines,
        width,
    })
}

/// The shutdown countdown for `name`, `left` to go; past zero, the offer
/// to kill.
fn countdown(name: &str, left: Duration, view: &TeamView, theme: Theme) -> Vec<Line<'static>> {
    if left.is_zero() {
        return vec![
            Line::styled(
                format!(
                    "@{} has not stopped after {}",
                    escape_line(name),
                    age(SHUTDOWN_GRACE)
                ),
                theme.fg(Color::Red).add_modifier(Modifier::BOLD),
            ),
            Line::raw("k kill · Esc close"),
        ];
    }
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
}

/// The message box: to whom (`*`: every teammate) and the text so far.
fn compose(to: &str, text: &str, theme: Theme) -> Vec<Line<'static>> {
    let to_line = if to == "*" {
        "To: * (every teammate) · Tab: one teammate".to_owned()
    } else {
        format!("To: @{} · Tab: everyone (*)", escape_line(to))
    };
    vec![
        Line::raw(to_line),
        Line::raw(format!("> {}▏", escape_line(text))),
        Line::styled("Enter send · Esc cancel", theme.dim()),
    ]
}

/// Every key of [`KEYS`] and what it does.
fn help(theme: Theme) -> Vec<Line<'static>> {
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
    lines
}
