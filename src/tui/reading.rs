//! What Enter opens on an inbox, task or request row: the whole of it, as
//! lines to read in a scrolling dialog ([`Reading`]). Built from the
//! snapshot when the dialog opens, so a message that leaves the inbox
//! meanwhile stays readable until the dialog closes.

use crate::mailbox::Entry;
use crate::protocol::Message;
use crate::tasks::Task;
use crate::tui::state::{PendingRequest, RequestKind, age};

/// A text to read: its title and its lines (raw: the view escapes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub title: String,
    pub lines: Vec<String>,
    /// The first line shown.
    pub scroll: usize,
}

impl Reading {
    fn new(title: String, text: &str) -> Reading {
        Reading {
            title,
            lines: text.lines().map(str::to_owned).collect(),
            scroll: 0,
        }
    }

    /// Moves the first shown line by `delta`, within the text.
    pub fn scroll_by(&mut self, delta: isize) {
        let last = self.lines.len().saturating_sub(1);
        self.scroll = self.scroll.saturating_add_signed(delta).min(last);
    }
}

/// A message of the lead's inbox, whole: the sender and time, its
/// summary, its text (a protocol frame: its one-line reading, then its
/// JSON, pretty).
pub fn entry(entry: &Entry) -> Reading {
    let time = entry.timestamp.get(11..19).unwrap_or(&entry.timestamp);
    let mut text = format!("from @{} at {time}\n", entry.from);
    if let Some(s) = &entry.summary {
        text.push_str(&format!("summary: {s}\n"));
    }
    text.push('\n');
    match Message::parse(&entry.text) {
        Some(m) => {
            text.push_str(&m.one_line());
            text.push_str("\n\n");
            let pretty = serde_json::from_str::<serde_json::Value>(&entry.text)
                .ok()
                .and_then(|v| serde_json::to_string_pretty(&v).ok());
            text.push_str(pretty.as_deref().unwrap_or(&entry.text));
        }
        None => text.push_str(&entry.text),
    }
    Reading::new(format!("message from @{}", entry.from), &text)
}

/// A task, whole: status, owner, blockers, description, and the output
/// its owner recorded (`metadata.output`), which is where a result is.
pub fn task(task: &Task) -> Reading {
    let mut text = format!("status: {}", task.status.as_str());
    if let Some(o) = &task.owner {
        text.push_str(&format!(" · owner @{o}"));
    }
    if !task.blocked_by.is_empty() {
        let ids: Vec<String> = task.blocked_by.iter().map(|b| format!("#{b}")).collect();
        text.push_str(&format!(" · blocked by {}", ids.join(", ")));
    }
    text.push_str(&format!("\n\n{}\n", task.subject));
    if !task.description.is_empty() {
        text.push_str(&format!("\n{}\n", task.description));
    }
    let md = task.metadata.as_ref();
    if let Some(code) = md.and_then(|m| m.get("exitCode")) {
        text.push_str(&format!("\nexit code: {code}\n"));
    }
    if let Some(out) = md.and_then(|m| m.get("output")).and_then(|o| o.as_str()) {
        text.push_str("\noutput:\n");
        text.push_str(out);
    }
    Reading::new(format!("task #{}", task.id), &text)
}

/// A pending request, whole: who asks, how long ago, what.
pub fn request(req: &PendingRequest) -> Reading {
    let mut text = format!("from @{}", req.from);
    if let Some(a) = req.age {
        text.push_str(&format!(", {} ago", age(a)));
    }
    text.push_str("\na approve · r reject (in the requests panel)\n\n");
    match &req.kind {
        RequestKind::Plan { content } => text.push_str(content),
        RequestKind::Permission { tool, description } => {
            text.push_str(&format!("{tool}\n{description}"));
        }
    }
    Reading::new(
        format!("{} request of @{}", req.kind.label(), req.from),
        &text,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_plain_message_is_read_whole_line_by_line() {
        let e = Entry::new(
            "bob",
            "All results:\nline two\nline three".into(),
            Some("done".into()),
            None,
        );
        let r = entry(&e);
        assert_eq!(r.title, "message from @bob");
        assert!(r.lines.contains(&"summary: done".to_owned()));
        assert!(r.lines.ends_with(&[
            "All results:".into(),
            "line two".into(),
            "line three".into()
        ]));
    }

    #[test]
    fn scrolling_stays_within_the_text() {
        let mut r = Reading::new("t".into(), "a\nb\nc");
        r.scroll_by(10);
        assert_eq!(r.scroll, 2);
        r.scroll_by(-10);
        assert_eq!(r.scroll, 0);
    }
}
