//! What wakes the lead's loop ([`watch_files`]): the team's directory (the
//! roster), its inboxes and its board. On Linux one inotify watcher
//! ([`linux`]) serves all three; elsewhere, or when no inotify instance is
//! left, the `notify` watchers do (polling where they cannot run). Either
//! way a change that only the dialog shows rings the dialog, and only a
//! change to the lead's own inbox makes the supervisor read it
//! ([`Woke`]).

#[cfg(target_os = "linux")]
pub mod linux;

use super::{Lead, view};
use crate::names::LEAD_NAME;
use anyhow::{Context, Result};
use std::time::Duration;

/// What woke the supervisor's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// The lead's inbox changed (or maybe did): read it.
    LeadInbox,
    /// Something only the view shows (another inbox, the roster, the board).
    Shown,
}

/// What keeps the lead's watchers running (dropped with its loop).
pub enum Watching {
    #[cfg(target_os = "linux")]
    One(#[allow(dead_code)] linux::LeadWatch),
    /// The `notify` watchers' threads run for the process's life; the
    /// board's watcher (if it runs) must be kept.
    Notify(#[allow(dead_code)] Option<notify::RecommendedWatcher>),
}

/// Starts the watchers that wake the lead's loop: the inboxes, and the
/// task board and the roster, which the dialog shows. The receiver gets
/// one [`Woke`] per change. With the dialog up, a change that only the
/// dialog shows (a task, another member's inbox) rings it directly: it
/// needs nothing of the supervisor.
pub fn watch_files(lead: &Lead) -> Result<(tokio::sync::mpsc::UnboundedReceiver<Woke>, Watching)> {
    let root = &lead.team.root;
    let team = &lead.team.name;
    let tasks_dir = root.tasks_dir(team)?;
    crate::atomic_file::ensure_dir(&tasks_dir)
        .with_context(|| format!("creating {}", tasks_dir.display()))?;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Woke>();
    #[cfg(target_os = "linux")]
    {
        let inboxes = root.inboxes_dir(team)?;
        crate::atomic_file::ensure_dir(&inboxes)
            .with_context(|| format!("creating {}", inboxes.display()))?;
        let lead_inbox = lead.team.mailbox().inbox_path(LEAD_NAME)?;
        let dirs = linux::Dirs {
            team: root.team_dir(team)?,
            inboxes,
            tasks: tasks_dir.clone(),
            lead_inbox: lead_inbox.file_name().unwrap_or_default().to_owned(),
        };
        let to_loop = tx.clone();
        match linux::start(&dirs, lead.shared.clone(), lead.wake.clone(), move |w| {
            to_loop.send(w).is_ok()
        }) {
            Ok(w) => {
                // The full listing the watch asks for is done now, not on
                // the first change that follows.
                crate::dropped::ignore(tx.send(Woke::Shown), "waking the lead's loop");
                return Ok((rx, Watching::One(w)));
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the team with inotify; using notify");
            }
        }
    }
    let board = watch_with_notify(lead, &tasks_dir, tx)?;
    Ok((rx, Watching::Notify(board)))
}

/// [`watch_files`] through the `notify` watchers (polling where they
/// cannot run): one per directory, each with a thread that passes its
/// changes on to `tx`.
fn watch_with_notify(
    lead: &Lead,
    tasks_dir: &std::path::Path,
    tx: tokio::sync::mpsc::UnboundedSender<Woke>,
) -> Result<Option<notify::RecommendedWatcher>> {
    let root = &lead.team.root;
    let lead_inbox = lead.team.mailbox().inbox_path(LEAD_NAME)?;
    let lead_inbox = lead_inbox.file_name().map(std::ffi::OsStr::to_owned);
    let mut watchers = vec![
        (
            lead.team
                .mailbox()
                .watch()
                .context("watching the inboxes")?,
            lead_inbox,
        ),
        (
            crate::mailbox::InboxWatcher::new(&root.team_dir(&lead.team.name)?),
            None,
        ),
    ];
    // The board's watcher names the task files that changed, so the view
    // reads only those; where it cannot run, the directory is polled and
    // every refresh reads the whole board.
    let board_tx = tx.clone();
    let dialog = lead.wake.clone();
    let ring = move || match &dialog {
        Some(dialog) => {
            dialog.ring();
        }
        None => {
            crate::dropped::ignore(board_tx.send(Woke::Shown), "waking the lead's loop");
        }
    };
    let board = match view::watch_board(tasks_dir, lead.shared.clone(), ring) {
        Ok(w) => {
            // The full listing the watch asks for is done now, not on the
            // first change that follows.
            crate::dropped::ignore(tx.send(Woke::Shown), "waking the lead's loop");
            Some(w)
        }
        Err(e) => {
            tracing::warn!(dir = %tasks_dir.display(), error = %e, "cannot watch the board; polling it");
            watchers.push((crate::mailbox::InboxWatcher::new(tasks_dir), None));
            None
        }
    };
    for (watcher, inbox) in watchers {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name("file-watch".into())
            .spawn(move || {
                loop {
                    let woke = match watcher.changes(Duration::from_secs(3600)) {
                        None => continue,
                        Some(changes) => woken_by(&changes, inbox.as_deref()),
                    };
                    if tx.send(woke).is_err() {
                        return;
                    }
                }
            })
            .context("starting a file watcher")?;
    }
    Ok(board)
}

/// What `changes` in a watched directory mean for the supervisor:
/// `lead_inbox` is the lead's inbox file name in the inboxes directory
/// (`None` for the other directories).
pub(super) fn woken_by(
    changes: &crate::mailbox::Changes,
    lead_inbox: Option<&std::ffi::OsStr>,
) -> Woke {
    use crate::mailbox::Changes;
    match (changes, lead_inbox) {
        (_, None) => Woke::Shown,
        (Changes::All, Some(_)) => Woke::LeadInbox,
        (Changes::Files(files), Some(name)) if files.iter().any(|(_, f)| f == name) => {
            Woke::LeadInbox
        }
        (Changes::Files(_), Some(_)) => Woke::Shown,
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
