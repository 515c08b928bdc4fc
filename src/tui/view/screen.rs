//! Live in-process screens: the grid of every teammate's screen (the
//! rows ending at its cursor) and one zoomed pane, drawn whole.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use tui_term::vt100;
use tui_term::widget::{Cell as _, PseudoTerminal};

use super::{RenderInto, ScreenSource, Theme, panel_block, zoom_area};
use crate::text::escape_line;
use crate::tui::keymap::UNZOOM_KEY;
use crate::tui::state::{TeamView, UiState};

/// The grid's tiles in `area`: `(member index, tile)` for each teammate
/// shown, roughly square, the selected one kept in view; and how many
/// are shown.
pub(super) fn grid_tiles(area: Rect, view: &TeamView, ui: &UiState) -> Vec<(usize, Rect)> {
    let n = view.members.len();
    if n == 0 || area.height < 3 {
        return Vec::new();
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
    let mut tiles = Vec::with_capacity(shown);
    let row_areas = Layout::vertical(vec![Constraint::Fill(1); rows]).split(area);
    for (r, row_area) in row_areas.iter().enumerate() {
        let col_areas = Layout::horizontal(vec![Constraint::Fill(1); cols]).split(*row_area);
        for (c, tile) in col_areas.iter().enumerate() {
            let index = first + r * cols + c;
            if index < n {
                tiles.push((index, *tile));
            }
        }
    }
    tiles
}

/// The screen area inside a grid tile (its border taken off): the size
/// the teammate's PTY is given, so its screen is shown whole.
pub(super) fn tile_inner(tile: Rect) -> Rect {
    Block::new().borders(Borders::ALL).inner(tile)
}

/// Every teammate's live screen in roughly square tiles, the selected
/// one kept in view, and how many did not fit.
pub(super) fn draw_grid(
    buf: &mut Buffer,
    area: Rect,
    view: &TeamView,
    ui: &UiState,
    screens: &dyn ScreenSource,
    theme: Theme,
) {
    let tiles = grid_tiles(area, view, ui);
    if tiles.is_empty() {
        Paragraph::new(Line::styled("no teammates", theme.dim())).render_into(area, buf);
        return;
    }
    for &(index, tile) in &tiles {
        let m = &view.members[index];
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
        let inner = tile_inner(tile);
        block.render_into(tile, buf);
        let found = screens.with_screen(&m.name, &mut |screen| {
            draw_screen_tail(screen, inner, buf, theme)
        });
        if !found {
            Paragraph::new(Line::styled("no screen", theme.dim())).render_into(inner, buf);
        }
    }
    let n = view.members.len();
    if tiles.len() < n {
        let more = format!(" +{} more (↑/↓) ", n - tiles.len());
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

/// One teammate's pane, drawn whole under a header line.
pub(super) fn draw_zoom(
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

/// Clears the colours in `area` (NO_COLOR), keeping the other attributes.
fn strip_colour(buf: &mut Buffer, area: Rect) {
    for y in area.top()..area.bottom() {
        for x in area.left()..area.right() {
            let cell = &mut buf[(x, y)];
            cell.fg = Color::Reset;
            cell.bg = Color::Reset;
        }
    }
}
