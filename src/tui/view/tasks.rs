//! The task board: id, status, owner, blockers and subject, the blockers
//! folded into the status in a narrow panel.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Row, Table};

use super::{RenderInto, Theme, panel_block, window};
use crate::tasks::{Status, Task};
use crate::text::escape_line;
use crate::tui::state::{Panel, TeamView, UiState};

/// Draws the board: the visible tasks that fit around the selected one.
pub(super) fn draw(buf: &mut Buffer, area: Rect, view: &TeamView, ui: &UiState, theme: Theme) {
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
    // a waiting task shows its blockers as its status (`⊘ #3,#4`). In a
    // very narrow one (a lead pane beside its teammates in an 80-column
    // terminal) the owner goes too, so the subject always has room.
    let narrow = inner.width < 64;
    let tiny = inner.width < 44;
    let blocked_w = view
        .visible_tasks()
        .skip(range.start)
        .take(range.len())
        .map(|t| blocked_list(t).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(7, 24) as u16;
    let id_w = view
        .visible_tasks()
        .skip(range.start)
        .take(range.len())
        .map(|t| escape_line(&t.id).chars().count() + 1)
        .max()
        .unwrap_or(2)
        .clamp(2, 8) as u16;
    let rows: Vec<Row> = view
        .visible_tasks()
        .skip(range.start)
        .take(range.len())
        .enumerate()
        .map(|(i, task)| {
            let row = task_row(task, view, narrow, tiny, theme);
            if start + i == ui.task_row && focused {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();
    let mut widths = vec![
        Constraint::Length(id_w),
        Constraint::Length(11),
        Constraint::Length(12),
        Constraint::Length(blocked_w),
        Constraint::Fill(1),
    ];
    let mut head = vec!["id", "status", "owner", "blocked", "subject"];
    if narrow {
        widths.remove(3);
        head.remove(3);
    }
    if tiny {
        widths.remove(2);
        head.remove(2);
    }
    let header = Row::new(head).style(theme.dim().add_modifier(Modifier::BOLD));
    Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .render_into(inner, buf);
}

/// `#3,#5,#7,#9`: the tasks `task` waits for.
fn blocked_list(task: &Task) -> String {
    task.blocked_by
        .iter()
        .map(|id| format!("#{}", escape_line(id)))
        .collect::<Vec<_>>()
        .join(",")
}

/// One task's row; a failed task (pending, `metadata.failed`) says so.
fn task_row<'a>(
    task: &'a Task,
    view: &TeamView,
    narrow: bool,
    tiny: bool,
    theme: Theme,
) -> Row<'a> {
    let failed = task.failed();
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
    let blocked = blocked_list(task);
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
    ];
    if !tiny {
        cells.push(owner.into());
    }
    if !narrow {
        cells.push(Span::styled(blocked, theme.fg(Color::Red)).into());
    }
    cells.push(Span::raw(escape_line(&task.subject)).into());
    Row::new(cells)
}
