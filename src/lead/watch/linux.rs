//! The lead's watcher on Linux ([`LeadWatch`]): a single inotify
//! instance over the team's directory (the roster), its inboxes and its
//! task board, asked only for what ends a writer's change: a file closed
//! after writing (Claude Code writes in place), renamed in or out (swarm
//! writes a temp file and renames it), deleted, and the directories
//! themselves going. The `notify` watchers it replaces were three inotify
//! instances, three threads and two forwarding threads, woken as well by
//! every open (the lead's own reads of the files it was told about), every
//! write call, temp file, `fchmod` and lock directory: one task update woke
//! them a dozen times. One thread reads this one, and each batch of events
//! becomes at most one ring of the dialog and one message to the
//! supervisor.
//!
//! - a task file: named in the board's changes ([`view::BoardChanges`]),
//!   the dialog rung (the supervisor has nothing to do for it);
//! - the lead's inbox: the supervisor reads it ([`Woke::LeadInbox`]);
//! - another inbox: the dialog rung (its unread counts);
//! - the roster, or a directory going: the supervisor wakes
//!   ([`Woke::Shown`]) and checks that the team still exists;
//! - an overflow of the queue: all of these, the board read whole.
//!
//! Where inotify cannot be had (no instance left), the lead falls back to
//! the `notify` watchers, which poll when they must.

use super::Woke;
use crate::lead::Shared;
use crate::lead::view::{self, BoardChanges};
use crate::lead::wake::Wake;
use crate::tasks::task::task_file_id;
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use std::ffi::{OsStr, OsString};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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
}

/// The events that end a change (see the module docs); the directory's own
/// deletion or move comes with every watch.
fn mask() -> WatchMask {
    WatchMask::CLOSE_WRITE
        | WatchMask::MOVED_TO
        | WatchMask::MOVED_FROM
        | WatchMask::DELETE
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::ONLYDIR
}

/// The running watcher; dropping it removes its watches, which ends its
/// thread.
pub struct LeadWatch {
    watches: Watches,
    wds: Vec<WatchDescriptor>,
}

impl Drop for LeadWatch {
    fn drop(&mut self) {
        for wd in self.wds.drain(..) {
            // A directory already gone took its watch with it.
            crate::dropped::ignore(self.watches.remove(wd), "removing a watch of the lead");
        }
    }
}

/// What one batch of events asks for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Batch {
    /// The dialog shows something that changed.
    dialog: bool,
    /// The supervisor must read the lead's inbox.
    lead_inbox: bool,
    /// The supervisor must look (the roster changed, a directory went).
    supervisor: bool,
    /// Watches gone (their directory removed, or the watcher dropped).
    gone: usize,
}

/// Which watched directory an event's watch is (by watch descriptor id).
struct Watched {
    team: i32,
    inboxes: i32,
    tasks: i32,
    lead_inbox: OsString,
}

impl Watched {
    /// Adds `mask`'s events to `batch` for one event, noting task files in
    /// `board`.
    fn note(
        &self,
        batch: &mut Batch,
        board: &mut BoardChanges,
        wd: i32,
        mask: EventMask,
        name: Option<&OsStr>,
    ) {
        if mask.contains(EventMask::Q_OVERFLOW) {
            board.unsure();
            batch.dialog = true;
            batch.lead_inbox = true;
            batch.supervisor = true;
            return;
        }
        let own = mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF);
        if mask.contains(EventMask::IGNORED) {
            batch.gone += 1;
        }
        if wd == self.tasks {
            if own || mask.contains(EventMask::IGNORED) {
                // The board's directory went: nothing names its changes now.
                board.unwatched();
                batch.dialog = true;
                batch.supervisor = true;
            } else if let Some(id) = name.and_then(OsStr::to_str).and_then(task_file_id) {
                board.task(id);
                batch.dialog = true;
            }
        } else if wd == self.inboxes {
            if own || mask.contains(EventMask::IGNORED) {
                batch.supervisor = true;
            } else if name == Some(self.lead_inbox.as_os_str()) {
                batch.lead_inbox = true;
            } else if name.is_some_and(counts) {
                batch.dialog = true;
            }
        } else if wd == self.team
            && (own || mask.contains(EventMask::IGNORED) || name.is_some_and(counts))
        {
            batch.supervisor = true;
        }
    }
}

/// `<name>.json`, not a temp file or a copy beside it (as the `notify`
/// watchers count them).
fn counts(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    name.ends_with(".json") && !name.starts_with('.')
}

/// Starts the watcher: task files are noted in `shared`'s board changes,
/// `dialog` is rung when the dialog shows something that changed (without
/// a dialog, `supervisor` gets [`Woke::Shown`] instead), and `supervisor`
/// gets what it must act on; it returns false once its receiver is gone,
/// which ends the thread.
pub fn start(
    dirs: &Dirs,
    shared: Arc<Mutex<Shared>>,
    dialog: Option<Wake>,
    supervisor: impl Fn(Woke) -> bool + Send + 'static,
) -> std::io::Result<LeadWatch> {
    let inotify = Inotify::init()?;
    // One blocking read per batch (the crate opens it non-blocking).
    // SAFETY: F_GETFL/F_SETFL on a descriptor this function owns, with
    // flags read from it; no memory is passed.
    unsafe {
        let fd = inotify.as_raw_fd();
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    let mut watches = inotify.watches();
    let wds = vec![
        watches.add(&dirs.team, mask())?,
        watches.add(&dirs.inboxes, mask())?,
        watches.add(&dirs.tasks, mask())?,
    ];
    let watched = Watched {
        team: wds[0].get_watch_descriptor_id(),
        inboxes: wds[1].get_watch_descriptor_id(),
        tasks: wds[2].get_watch_descriptor_id(),
        lead_inbox: dirs.lead_inbox.clone(),
    };
    view::lock(&shared).board.watched();
    std::thread::Builder::new()
        .name("lead-watch".into())
        .spawn(move || run(inotify, &watched, &shared, dialog.as_ref(), &supervisor))?;
    Ok(LeadWatch { watches, wds })
}

/// The watcher's thread: one batch of events at a time, until every watch
/// is gone or nobody listens.
fn run(
    mut inotify: Inotify,
    watched: &Watched,
    shared: &Mutex<Shared>,
    dialog: Option<&Wake>,
    supervisor: &dyn Fn(Woke) -> bool,
) {
    // Room for many events: a burst is read in one call.
    let mut buffer = vec![0u8; 64 * 1024];
    let mut alive = 3;
    loop {
        let mut batch = Batch::default();
        match inotify.read_events(&mut buffer) {
            Ok(events) => {
                let mut sh = view::lock(shared);
                for e in events {
                    let wd = e.wd.get_watch_descriptor_id();
                    watched.note(&mut batch, &mut sh.board, wd, e.mask, e.name);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                // Nothing can be told any more: read everything once, and
                // the board whole from now on.
                tracing::warn!(error = %e, "the lead's watcher failed");
                view::lock(shared).board.unwatched();
                supervisor(Woke::LeadInbox);
                return;
            }
        }
        let listening = deliver(&batch, dialog, supervisor);
        alive -= batch.gone.min(alive);
        if !listening || alive == 0 {
            return;
        }
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
