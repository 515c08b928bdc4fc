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
use crate::tui::state::{Modal, Reading, SHUTDOWN_GRACE, TeamView, UiState, age, count};

/// What a modal shows: its title, its lines and its width (the height
/// follows from the lines, unless the dialog fills the frame).
struct Dialog {
    title: String,
    lines: Vec<Line<'static>>,
    width: u16,
    /// Fill the frame's height (a text to read).
    tall: bool,
}

/// Draws the open modal, if any, centred over the frame.
pub(super) fn draw(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
    let Some(Dialog {
        title,
        lines,
        width,
        tall,
    }) = dialog(&ui.modal, view, area.width, theme)
    else {
        return;
    };
    let height = if tall {
        area.height.saturating_sub(2)
    } else {
        lines.len() as u16 + 2
    };
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

/// The dialog for `modal` in a frame `frame_w` wide; `None` when no modal
/// is open.
fn dialog(modal: &Modal, view: &TeamView, frame_w: u16, theme: Theme) -> Option<Dialog> {
    let (title, lines, width) = match modal {
        Modal::None => return None,
        Modal::Read(r) => return Some(reading(r, frame_w, theme)),
        Modal::ConfirmKill { .. } | Modal::ConfirmPrune { .. } | Modal::ConfirmQuit { .. } => {
            confirmation(modal, theme)?
        }
        Modal::ShutdownCountdown { name, left } => {
            (" shutdown ", countdown(name, *left, view, theme), 50)
        }
        Modal::Compose { to, text } => {
            let inner = 60.min(frame_w).saturating_sub(2);
            (" message ", compose(to, text, inner, theme), 60)
        }
        Modal::NewTask { subject } => {
            let room = 60.min(frame_w).saturating_sub(13) as usize;
            (
                " new task ",
                vec![
                    Line::raw(format!("Subject: {}▏", tail(&escape_line(subject), room))),
                    Line::styled("Enter create · Esc cancel", theme.dim()),
                ],
                60,
            )
        }
        Modal::Help => (" keys ", help(theme), 66),
    };
    Some(Dialog {
        title: title.to_owned(),
        lines,
        width,
        tall: false,
    })
}

/// The y/N confirmations: kill, prune, quit.
fn confirmation(modal: &Modal, theme: Theme) -> Option<(&'static str, Vec<Line<'static>>, u16)> {
    let warn = theme.fg(Color::Red).add_modifier(Modifier::BOLD);
    Some(match modal {
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
            let what = count(names.len(), "idle teammate");
            (
                " prune ",
                vec![
                    Line::styled(format!("Prune {what}? y/N"), warn),
                    Line::raw(who),
                ],
                50,
            )
        }
        Modal::ConfirmQuit { ending } => (
            " quit ",
            vec![
                Line::styled(
                    format!("Quit and end {}? y/N", count(*ending, "teammate")),
                    warn,
                ),
                Line::styled("in-process panes live inside the lead", theme.dim()),
            ],
            46,
        ),
        _ => return None,
    })
}

/// A text opened to read: as many lines from its scroll position as fit,
/// in a dialog as wide as the frame allows (at most 100 columns).
fn reading(r: &Reading, frame_w: u16, theme: Theme) -> Dialog {
    let mut lines: Vec<Line<'static>> = r.lines[r.scroll.min(r.lines.len())..]
        .iter()
        .map(|l| Line::raw(escape_line(l).into_owned()))
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled("(empty)", theme.dim()));
    }
    Dialog {
        title: format!(" {} · ↑↓ scroll · any key closes ", escape_line(&r.title)),
        lines,
        width: frame_w.saturating_sub(4).clamp(20, 100),
        tall: true,
    }
}

/// The last `room` characters of `text`, a cut marked with a leading `…`:
/// the end of a line being typed stays in view.
fn tail(text: &str, room: usize) -> String {
    let n = text.chars().count();
    if n <= room {
        return text.to_owned();
    }
    let mut s = String::from("…");
    s.extend(text.chars().skip(n + 1 - room.max(1)));
    s
}

/// The shutdown countdown for `name`, `left` to go; past zero, the offer
/// to kill.
fn countdown(name: &str, left: Duration, view: &TeamView, theme: Theme) -> Vec<Line<'static>> {
    // One clock: `left` is kept in step with the row's `stopping` age by
    // `UiState::sync`, so the two always add up to the grace.
    let asked = age(SHUTDOWN_GRACE.saturating_sub(left));
    if left.is_zero() {
        return vec![
            Line::styled(
                format!("@{} has not stopped after {asked}", escape_line(name)),
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
            Span::raw(format!(
                "Shutting down @{}… kill offered in ",
                escape_line(name)
            )),
            Span::styled(
                format!("{}s", left.as_secs_f64().ceil() as u64),
                Style::new().add_modifier(Modifier::BOLD),
            ),
        ]),
        Line::styled(format!("{status} · Esc close · k kill now"), theme.dim()),
    ]
}

/// The message box, `inner` cells wide: to whom (`*`: every teammate) and
/// the end of the text so far, so a long message scrolls and the hint
/// line stays.
fn compose(to: &str, text: &str, inner: u16, theme: Theme) -> Vec<Line<'static>> {
    let to_line = if to == "*" {
        "To: * (every teammate) · Tab: one teammate".to_owned()
    } else {
        format!("To: @{} · Tab: everyone (*)", escape_line(to))
    };
    vec![
        Line::raw(to_line),
        Line::raw(format!(
            "> {}▏",
            tail(&escape_line(text), inner.saturating_sub(3) as usize)
        )),
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
