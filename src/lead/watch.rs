//! What wakes the lead's loop ([`watch_files`]): the team's inboxes, its
//! directory (the roster) and its board, watched by one
//! [`InboxWatcher`] (one inotify instance on
//! Linux, asked only for the ends of changes; polling where no watcher can
//! be had) and read by one thread, which turns each burst of changes into
//! at most one ring of the dialog and one message to the supervisor
//! ([`Woke`]):
//!
//! - a task file: named in the board's changes ([`view::BoardChanges`]),
//!   the dialog rung (the supervisor has nothing to do for it);
//! - the lead's inbox: the supervisor reads it ([`Woke::LeadInbox`]);
//! - another inbox: the dialog rung (its unread counts);
//! - the roster: the supervisor wakes ([`Woke::Shown`]) and checks that
//!   the team still exists;
//! - changes the watcher cannot name (an overflow, a directory going): all
//!   of these, the board read whole; once the board's directory went (or
//!   when the watcher polls), every refresh reads the board whole.
//!
//! Without a dialog, what would ring it wakes the supervisor instead.

use super::view::{self, BoardChanges};
use super::wake::Wake;
use super::{Lead, Shared};
use crate::mailbox::{Changes, InboxWatcher};
use crate::names::LEAD_NAME;
use crate::tasks::task::task_file_id;
use anyhow::{Context, Result};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What woke the supervisor's loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Woke {
    /// The lead's inbox changed (or maybe did): read it.
    LeadInbox,
    /// Something only the view shows (another inbox, the roster, the board).
    Shown,
}

/// The directories the lead watches, and the files in them it tells apart.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// `teams/<team>/`: the roster.
    pub team: PathBuf,
    /// `teams/<team>/inboxes/`.
    pub inboxes: PathBuf,
    /// `tasks/<team>/`: the board.
    pub tasks: PathBuf,
    /// The lead's inbox file name (`team-lead.json`).
    pub lead_inbox: OsString,
    /// How often it also looks itself (a team with members on other
    /// machines: `Root::looks_for`).
    pub looks: Option<std::time::Duration>,
}

/// The index of each directory in the watcher (the inboxes first, as
/// [`woken_by`] reads them).
const INBOXES: usize = 0;
const TEAM: usize = 1;
const TASKS: usize = 2;

/// Keeps the lead's watcher running; dropping it closes the watcher, which
/// ends its thread.
pub struct Watching {
    watcher: Arc<InboxWatcher>,
}

impl Drop for Watching {
    fn drop(&mut self) {
        self.watcher.close();
    }
}

/// Starts the watcher that wakes the lead's loop: the inboxes, and the
/// task board and the roster, which the dialog shows. The receiver gets
/// one [`Woke`] per change. With the dialog up, a change that only the
/// dialog shows (a task, another member's inbox) rings it directly: it
/// needs nothing of the supervisor.
pub fn watch_files(lead: &Lead) -> Result<(tokio::sync::mpsc::UnboundedReceiver<Woke>, Watching)> {
    let root = &lead.team.root;
    let team = &lead.team.name;
    let lead_inbox = lead.team.mailbox().inbox_path(LEAD_NAME)?;
    let dirs = Dirs {
        team: root.team_dir(team)?,
        inboxes: root.inboxes_dir(team)?,
        tasks: root.tasks_dir(team)?,
        lead_inbox: lead_inbox.file_name().unwrap_or_default().to_owned(),
        looks: crate::mailbox::looks_for(root, team),
    };
    for dir in [&dirs.inboxes, &dirs.tasks] {
        crate::atomic_file::ensure_dir(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Woke>();
    let to_loop = tx.clone();
    let watching = start(&dirs, lead.shared.clone(), lead.wake.clone(), move |w| {
        to_loop.send(w).is_ok()
    })
    .context("starting the lead's file watcher")?;
    // The full listing the watch asks for is done now, not on the first
    // change that follows.
    crate::dropped::ignore(tx.send(Woke::Shown), "waking the lead's loop");
    Ok((rx, watching))
}

/// Starts the watcher of `dirs`: task files are noted in `shared`'s board
/// changes, `dialog` is rung when the dialog shows something that changed
/// (without a dialog, `supervisor` gets [`Woke::Shown`] instead), and
/// `supervisor` gets what it must act on; it returns false once its
/// receiver is gone, which ends the thread.
pub fn start(
    dirs: &Dirs,
    shared: Arc<Mutex<Shared>>,
    dialog: Option<Wake>,
    supervisor: impl Fn(Woke) -> bool + Send + 'static,
) -> std::io::Result<Watching> {
    let mut watched = vec![PathBuf::new(); 3];
    watched[INBOXES].clone_from(&dirs.inboxes);
    watched[TEAM].clone_from(&dirs.team);
    watched[TASKS].clone_from(&dirs.tasks);
    let watcher = Arc::new(InboxWatcher::over_looking(&watched, dirs.looks));
    if watcher.is_polling() {
        tracing::warn!(why = ?watcher.polling_reason(), "the lead polls the team's files every second");
    } else {
        // Task files are named from now on; what came before is read whole
        // once.
        view::lock(&shared).board.watched();
    }
    let lead_inbox = dirs.lead_inbox.clone();
    let reader = watcher.clone();
    std::thread::Builder::new()
        .name("lead-watch".into())
        .spawn(move || run(&reader, &lead_inbox, &shared, dialog.as_ref(), &supervisor))?;
    Ok(Watching { watcher })
}

/// The watcher's thread: one burst of changes at a time, until the
/// watcher is closed or nobody listens.
fn run(
    watcher: &InboxWatcher,
    lead_inbox: &OsStr,
    shared: &Mutex<Shared>,
    dialog: Option<&Wake>,
    supervisor: &dyn Fn(Woke) -> bool,
) {
    loop {
        let Some(changes) = watcher.changes(Duration::from_secs(3600)) else {
            if watcher.is_closed() {
                return;
            }
            continue;
        };
        let batch = {
            let mut sh = view::lock(shared);
            let batch = Batch::of(&changes, lead_inbox, &mut sh.board);
            if !watcher.is_polling() && !watcher.is_watching(TASKS) {
                // The board's directory went: nothing names its changes now.
                sh.board.unwatched();
            }
            batch
        };
        if !deliver(&batch, dialog, supervisor) {
            return;
        }
    }
}

/// What one burst of changes asks for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Batch {
    /// The dialog shows something that changed.
    dialog: bool,
    /// The supervisor must read the lead's inbox.
    lead_inbox: bool,
    /// The supervisor must look (the roster changed, a directory went).
    supervisor: bool,
}

impl Batch {
    /// What `changes` ask for, noting task files in `board`.
    fn of(changes: &Changes, lead_inbox: &OsStr, board: &mut BoardChanges) -> Batch {
        let mut batch = Batch {
            lead_inbox: woken_by(changes, Some(lead_inbox)) == Woke::LeadInbox,
            ..Batch::default()
        };
        let Changes::Files(files) = changes else {
            board.unsure();
            batch.dialog = true;
            batch.supervisor = true;
            return batch;
        };
        for (dir, name) in files {
            match *dir {
                TASKS => {
                    if let Some(id) = name.to_str().and_then(task_file_id) {
                        board.task(id);
                        batch.dialog = true;
                    }
                }
                // Another member's inbox: its unread count.
                INBOXES => batch.dialog |= name != lead_inbox,
                _ => batch.supervisor = true,
            }
        }
        batch
    }
}

/// Rings and sends what `batch` asks for; false once the supervisor is gone.
fn deliver(batch: &Batch, dialog: Option<&Wake>, supervisor: &dyn Fn(Woke) -> bool) -> bool {
    let mut listening = true;
    if batch.lead_inbox {
        listening &= supervisor(Woke::LeadInbox);
    }
    if batch.supervisor || (batch.dialog && dialog.is_none()) {
        listening &= supervisor(Woke::Shown);
    }
    if batch.dialog
        && let Some(d) = dialog
    {
        d.ring();
    }
    listening
}

/// What `changes` in the inboxes' directory (the watcher's first) mean
/// for the supervisor: `lead_inbox` is the lead's inbox file name (`None`:
/// the changes are of another directory, which only the view shows).
pub(super) fn woken_by(changes: &Changes, lead_inbox: Option<&OsStr>) -> Woke {
    match (changes, lead_inbox) {
        (_, None) => Woke::Shown,
        (Changes::All, Some(_)) => Woke::LeadInbox,
        (Changes::Files(files), Some(name))
            if files.iter().any(|(d, f)| *d == INBOXES && f == name) =>
        {
            Woke::LeadInbox
        }
        (Changes::Files(_), Some(_)) => Woke::Shown,
    }
}

#[cfg(test)]
mod tests;
