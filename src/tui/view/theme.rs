//! The styles the view draws with, and none of their colours under
//! NO_COLOR (selection and emphasis then use reverse video and bold only).

use ratatui::style::{Color, Modifier, Style};

use crate::tasks::Status;
use crate::tui::state::MemberStatus;

/// Styles, or none of their colours under NO_COLOR.
#[derive(Debug, Clone, Copy)]
pub(super) struct Theme {
    /// Colours are drawn (false under NO_COLOR).
    pub(super) color: bool,
}

impl Theme {
    pub(super) fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }

    /// A member's palette colour.
    pub(super) fn member(self, color: Option<&str>) -> Style {
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

    pub(super) fn status(self, s: &MemberStatus) -> Style {
        match s {
            MemberStatus::Running => self.fg(Color::Green),
            MemberStatus::Idle => Style::new(),
            MemberStatus::WaitingForApproval => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            MemberStatus::Stopping { .. } => self.fg(Color::Magenta),
            MemberStatus::Dead { .. } => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            MemberStatus::NotStarted => self.fg(Color::Yellow),
            MemberStatus::Unreachable => self.fg(Color::Magenta).add_modifier(Modifier::BOLD),
        }
    }

    pub(super) fn task(self, s: Status) -> Style {
        match s {
            Status::Pending => Style::new(),
            Status::InProgress => self.fg(Color::Green),
            Status::Completed => self.fg(Color::DarkGray),
        }
    }

    pub(super) fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    pub(super) fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub(super) fn border(self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
        } else {
            self.dim()
        }
    }
}
