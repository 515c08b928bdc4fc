//! Wake-ups for a teammate runtime, with no inotify instance per runtime
//! and no herd: a message wakes its recipient only.
//!
//! * Each runtime sleeps on its own doorbell (`mailbox::doorbell`, a FIFO
//!   under the team's state). swarm's senders ring the recipient's bell
//!   right after a send, so delivery needs no watcher at all.
//! * Writes that ring nothing (Claude Code teammates and leads write inboxes
//!   and task files with their own protocol) are seen by the **team
//!   watcher**: one [`InboxWatcher`] (one inotify instance on Linux) over
//!   the team's inboxes and task list, run by whichever runtime holds the
//!   team-wide OS lock `Root::team_watcher_lock`. The others block on that
//!   lock in a thread of their own (no CPU); when the holder exits the
//!   kernel hands the lock to the next, which rings every bell once to cover
//!   the hand-over.
//!   A changed `<member>.json` inbox rings that member's bell only; a changed
//!   task file is read again into the team watcher's model of the open
//!   tasks, and each claimable task is offered to one idle runtime, whose
//!   bell alone rings (`super::dispatch`): a claim, progress or metadata
//!   rings nobody. A file whose bytes are
//!   those the team watcher last acted on rings nobody again (`Seen`):
//!   one write by swarm can be two events (its rename, then its close).
//!   Latency of a Claude Code write, lead or no lead: one inotify event and
//!   one ring, about a millisecond, as long as any swarm runtime of the team
//!   runs (the lead is not needed).
//!
//! Polling is a fallback, never silent: if the team watcher cannot create a
//! watcher (no inotify instance left) it polls the directories once a second
//! (alone, for the whole team: such writes then take up to a second; swarm's
//! own sends still ring at once); if a runtime cannot make its doorbell it
//! polls its own inbox and the task list once a second. Either records why
//! (`.team-watcher.json`, `<member>.polling` under `<state>/runtime/`), logs
//! it, shows it in the pane banner and tells the lead in a message;
//! `swarm doctor` lists it ([`report`]) and `swarm up` warns beforehand
//! ([`preflight`]). Each record names its writer (the team watcher's by the
//! lock it holds, a `<member>.polling` note by pid and start time), so a
//! runtime killed without a chance to clean up is never reported as
//! polling: its note is ignored and removed.

use super::dispatch::{self, Dispatch};
use crate::mailbox::doorbell::{self, Doorbell};
use crate::mailbox::{Changes, InboxWatcher};
use crate::names::member_from_file_stem;
use crate::tasks::parse_id;
use crate::team::Team;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the team watcher checks that its team still exists when
/// nothing happens.
const TEAM_CHECK_EVERY: Duration = Duration::from_secs(60);

/// This process's part in the team watch: closed by [`leave_team_watch`]
/// when the runtime is about to exit.
static TEAM_WATCH: Mutex<Part> = Mutex::new(Part::Waiting);

/// Where this process stands in the team watcher's election.
enum Part {
    /// Not holding the role (waiting for its lock, or not standing).
    Waiting,
    /// Holding the role, watching with this.
    Watching(Arc<InboxWatcher>),
    /// Its runtime is exiting ([`leave_team_watch`]): the role, should its
    /// lock come to this process now, is let go at once.
    Left,
}

/// Whether this process's runtime has left the team watch (it is exiting).
fn has_left() -> bool {
    matches!(*team_watch(), Part::Left)
}

fn team_watch() -> std::sync::MutexGuard<'static, Part> {
    TEAM_WATCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ends this runtime's team watch, if it holds the role, as the runtime
/// is about to exit (its shutdown approved): the watches go now, and the
/// process's exit no longer waits in the kernel for their teardown (an
/// inotify instance closed with its watches waits 14-20 ms: the team
/// watcher's pane was the last of a `down` of 8 to end, by that much).
/// Its thread lets the role's lock go, and the runtime that takes it
/// looks at everything again.
///
/// A runtime still waiting for the role stands down: should the lock come
/// to it before it exits, it lets it go at once. In a `down` every
/// runtime exits, and each in turn took the role from the one before:
/// watches made, every bell rung, the board read and the watcher's record
/// written durably, by a runtime about to exit (whose exit then waited for
/// the teardown of those watches).
pub fn leave_team_watch() {
    let held = std::mem::replace(&mut *team_watch(), Part::Left);
    if let Part::Watching(watcher) = held {
        watcher.close();
    }
}

/// Wakes one runtime when its inbox or the task list changes.
pub struct Wakeups {
    how: How,
    /// When a remote runtime looks itself next.
    next_look: std::time::Instant,
    /// Set by the team watcher's thread if it stops for good.
    broken: Arc<Mutex<Option<String>>>,
    dirs: Vec<PathBuf>,
    note: PathBuf,
}

enum How {
    Bell(Doorbell),
    Poll(InboxWatcher),
    /// On another machine than the team watcher (DESIGN §13): its doorbell
    /// is rung through its host (`swarm ring` over ssh, `ops::ring`), and
    /// it looks itself every `every` for writes nobody rings there.
    Remote {
        bell: Doorbell,
        looks: InboxWatcher,
        every: Duration,
    },
}

/// The variable that says how a runtime is woken: `SWARM_WAKE=poll` (it
/// looks every second, no doorbell), `SWARM_WAKE=ring` (a teammate on
/// another machine: its doorbell is rung through its host, and it looks
/// every [`POLL_VAR`] milliseconds too). Unset: a doorbell and the team
/// watcher.
pub const WAKE_VAR: &str = "SWARM_WAKE";
/// The host a runtime runs on (`SWARM_HOST=box`), set in a remote pane;
/// unset on the lead's machine.
pub const HOST_VAR: &str = "SWARM_HOST";
/// With `SWARM_WAKE=ring`: milliseconds between the runtime's own looks.
pub const POLL_VAR: &str = "SWARM_POLL_MS";

/// Why a runtime told to poll polls.
const POLL_BY_REQUEST: &str = "SWARM_WAKE=poll: on another machine than its senders, where a \
                               doorbell rung here is not heard (a FIFO is of one kernel)";

/// How this process was told to be woken (`SWARM_WAKE`).
#[derive(Debug, Clone, PartialEq)]
enum Told {
    /// A doorbell and the team watcher.
    Bell,
    Poll,
    /// Rung through its host `host`, and looking every `every`.
    Ring {
        host: String,
        every: Duration,
    },
}

fn told() -> Told {
    match std::env::var(WAKE_VAR).as_deref() {
        Ok("poll") => Told::Poll,
        Ok("ring") => Told::Ring {
            host: this_host().unwrap_or_else(|| "?".to_owned()),
            every: std::env::var(POLL_VAR)
                .ok()
                .and_then(|ms| ms.parse::<u64>().ok())
                .map_or(crate::hosts::HOST_POLL, |ms| {
                    Duration::from_millis(ms.clamp(100, 300_000))
                }),
        },
        _ => Told::Bell,
    }
}

/// The host this process runs on, when it is not the lead's machine
/// (`SWARM_HOST`, set in a remote pane's environment).
pub fn this_host() -> Option<String> {
    std::env::var(HOST_VAR)
        .ok()
        .filter(|h| !h.is_empty() && h != swarm_backends::host::LOCAL)
}

/// How often a runtime woken `how` looks itself (only a remote one counts
/// it here).
fn every_of(how: &How) -> Duration {
    match how {
        How::Remote { every, .. } => *every,
        _ => Duration::ZERO,
    }
}

/// What a remote runtime says about how it is woken.
fn remote_reason(host: &str, every: Duration) -> String {
    format!(
        "runs on host {host}: rung over ssh by senders on the lead's machine, and it looks every \
         {} s for writes nobody rings (a FIFO and inotify are of one kernel)",
        every.as_secs_f64()
    )
}

/// What the team watcher records about itself.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatcherStatus {
    pid: u32,
    member: String,
    since_ms: u64,
    /// Why it polls; `None` while it gets file events.
    polling: Option<String>,
}

impl Wakeups {
    /// The wake-ups of `me`'s runtime in `team`, whose inboxes and task list
    /// directories are `dirs` (which must exist); also enters the election
    /// of the team watcher.
    pub fn new(team: &Team, me: &str, dirs: &[PathBuf]) -> anyhow::Result<Wakeups> {
        let note = team.root.runtime_file(&team.name, me, "polling")?;
        let broken = Arc::new(Mutex::new(None));
        let bell_path = team.mailbox().doorbell_path(me)?;
        let told = told();
        let how = if told == Told::Poll {
            // On another machine than its senders (DESIGN §13): a FIFO and
            // inotify are of one kernel, so no bell of its reaches it, and
            // it must never be the team watcher (its events would not show
            // the writes made here). It looks every second, and says so.
            if let Some(dir) = note.parent() {
                // Where its note goes (made by the doorbell otherwise).
                crate::atomic_file::ensure_dir(dir)?;
            }
            How::Poll(InboxWatcher::polling_over(dirs, POLL_BY_REQUEST))
        } else if let Told::Ring { host, every } = told {
            // On another machine: never the team watcher (see above); its
            // doorbell, a FIFO of this kernel, is rung by `swarm ring` run
            // here over ssh by the senders there, and it looks every
            // `every` itself for what no one rings.
            let why = remote_reason(&host, every);
            match Doorbell::open(&bell_path) {
                Ok(bell) => How::Remote {
                    bell,
                    looks: InboxWatcher::polling_over(dirs, &why),
                    every,
                },
                Err(e) => How::Poll(InboxWatcher::polling_over(
                    dirs,
                    &format!(
                        "on host {host}: cannot make the doorbell {} ({e}), so not rung",
                        bell_path.display()
                    ),
                )),
            }
        } else {
            match enter_election(team, me, dirs, broken.clone()) {
                Err(e) => How::Poll(InboxWatcher::polling_over(
                    dirs,
                    &format!("cannot take part in watching the team's files ({e:#})"),
                )),
                Ok(()) => match Doorbell::open(&bell_path) {
                    Ok(bell) => How::Bell(bell),
                    Err(e) => How::Poll(InboxWatcher::polling_over(
                        dirs,
                        &format!("cannot make the doorbell {} ({e})", bell_path.display()),
                    )),
                },
            }
        };
        // Its first look is the runtime's own, right after this.
        let next_look = std::time::Instant::now() + every_of(&how);
        let w = Wakeups {
            how,
            next_look,
            broken,
            dirs: dirs.to_vec(),
            note,
        };
        w.record();
        Ok(w)
    }

    /// Why this runtime polls, if it does.
    pub fn polling_reason(&self) -> Option<&str> {
        match &self.how {
            How::Poll(w) | How::Remote { looks: w, .. } => w.polling_reason(),
            How::Bell(_) => None,
        }
    }

    /// Whether this runtime runs on another machine and is rung through
    /// its host (its [`Wakeups::polling_reason`] then says all of it).
    pub fn is_remote(&self) -> bool {
        matches!(self.how, How::Remote { .. })
    }

    /// Blocks until something of this member's changed since the previous
    /// call (`true`) or `timeout` passed (`false`). A burst is one wake-up.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        self.check_watcher();
        let woken = match &self.how {
            How::Bell(_) | How::Remote { .. } => self.wait_on_bell(timeout),
            How::Poll(w) => w.wait(timeout),
        };
        if woken {
            tracing::debug!("woken");
        }
        woken
    }

    /// Sleeps on the doorbell in slices of `doorbell::CHECK_EVERY`, after
    /// each checking that it is still this runtime's (issue 24, item 5: a
    /// removed or replaced one deafened the runtime for its whole wait, 300
    /// s). One that is not is made again (or, if it cannot be, the runtime
    /// polls and says why), and the wait ends as woken: a send made while
    /// it was gone rang nothing. A remote runtime also looks itself once
    /// per its `every`, and a change it finds ends the wait as woken.
    fn wait_on_bell(&mut self, timeout: Duration) -> bool {
        let now = std::time::Instant::now;
        let deadline = now() + timeout;
        loop {
            let (bell, slice) = match &self.how {
                How::Bell(bell) => (bell, doorbell::CHECK_EVERY),
                How::Remote { bell, .. } => (
                    bell,
                    doorbell::CHECK_EVERY.min(self.next_look.saturating_duration_since(now())),
                ),
                How::Poll(_) => return true,
            };
            let left = deadline.saturating_duration_since(now());
            if bell.wait(left.min(slice)) {
                return true;
            }
            if let How::Remote { looks, every, .. } = &self.how
                && now() >= self.next_look
            {
                self.next_look = now() + *every;
                if looks.wait(Duration::ZERO) {
                    return true;
                }
            }
            let (How::Bell(bell) | How::Remote { bell, .. }) = &self.how else {
                return true;
            };
            if !bell.intact() {
                let path = bell.path().to_path_buf();
                match Doorbell::open(&path) {
                    Ok(bell) => {
                        tracing::warn!(bell = %path.display(), "my doorbell was removed or replaced; made it again");
                        match &mut self.how {
                            How::Remote { bell: mine, .. } => *mine = bell,
                            _ => self.how = How::Bell(bell),
                        }
                    }
                    Err(e) => {
                        let why =
                            format!("cannot make the doorbell {} again ({e})", path.display());
                        self.how = How::Poll(InboxWatcher::polling_over(&self.dirs, &why));
                        self.record();
                    }
                }
                return true;
            }
            if left <= slice {
                return false;
            }
        }
    }

    /// Falls back to polling if the team watcher's thread stopped for good.
    fn check_watcher(&mut self) {
        let why = self.broken.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let (Some(why), How::Bell(_)) = (why, &self.how) {
            tracing::warn!(%why, "the team watcher stopped; polling every second");
            self.how = How::Poll(InboxWatcher::polling_over(&self.dirs, &why));
            self.record();
        }
    }

    /// Keeps `<member>.polling` true to what this runtime does.
    fn record(&self) {
        let res = match self.polling_reason() {
            Some(why) => {
                tracing::warn!(%why, "polling every second for messages and tasks");
                crate::atomic_file::write_atomic(&self.note, &PollingNote::mine(why).to_bytes())
            }
            None => crate::atomic_file::remove_if_there(&self.note),
        };
        if let Err(e) = res {
            tracing::warn!(note = %self.note.display(), error = %e, "cannot record whether I poll");
        }
    }
}

impl Drop for Wakeups {
    fn drop(&mut self) {
        if self.polling_reason().is_some() {
            // A note left behind (this process killed before it got
            // here) names its writer, so readers see it is gone.
            crate::dropped::ignore(
                crate::atomic_file::remove_if_there(&self.note),
                "removing the polling note",
            );
        }
    }
}

/// `<member>.polling`: why a runtime polls, and which process wrote it
/// (pid and start time, as the lead's lock records it), so that a note a
/// killed runtime left behind is seen to be stale ([`PollingNote::live`]).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PollingNote {
    pid: u32,
    /// `None` where the platform gives no start time.
    start: Option<String>,
    why: String,
    /// The host its writer runs on (`None`: the lead's machine), whose
    /// pids cannot be looked up here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    host: Option<String>,
}

impl PollingNote {
    /// A note by this process.
    fn mine(why: &str) -> PollingNote {
        let pid = std::process::id();
        PollingNote {
            pid,
            start: swarm_backends::process::start_time(pid),
            why: why.to_owned(),
            host: this_host(),
        }
    }

    fn to_bytes(&self) -> Vec<u8> {
        crate::json_text::to_pretty(self)
    }

    /// Whether the process that wrote the note still runs. By its start
    /// time where there is one: `same_process_alive` would also say "gone"
    /// for this process's own group leader (it refuses to signal that), and
    /// a shell teammate's `swarm doctor` runs in its runtime's group.
    fn writer_runs(&self) -> bool {
        use swarm_backends::process::{is_zombie, same_process_alive, start_time};
        let pid = self.pid;
        if self.host != this_host() {
            // Of another machine: its departure tidies it.
            return true;
        }
        if pid == std::process::id() {
            return true;
        }
        match self.start.as_deref() {
            Some(s) => start_time(pid).as_deref() == Some(s) && is_zombie(pid) != Some(true),
            None => same_process_alive(pid, None),
        }
    }

    /// The note at `path` if its writer still runs. A note whose writer is
    /// gone is removed (the next runtime of that member would rewrite or
    /// remove it anyway); one that cannot be read says so as its reason.
    fn live(path: &std::path::Path) -> Option<String> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            // Removed meanwhile: nothing to say.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => return Some(format!("(its note {} is unreadable: {e})", path.display())),
        };
        let Ok(note) = serde_json::from_slice::<PollingNote>(&bytes) else {
            // Written before notes named their writer: it cannot be checked.
            return Some(String::from_utf8_lossy(&bytes).trim().to_owned());
        };
        if note.writer_runs() {
            return Some(note.why);
        }
        tracing::info!(note = %path.display(), pid = note.pid, "removing a polling note whose runtime is gone");
        crate::dropped::ignore(
            crate::atomic_file::remove_if_there(path),
            "removing a stale polling note",
        );
        None
    }
}

/// Starts the thread that waits for the team watcher's lock and, once it
/// holds it, watches for the team. Fails only if the lock file cannot be
/// opened.
fn enter_election(
    team: &Team,
    me: &str,
    dirs: &[PathBuf],
    broken: Arc<Mutex<Option<String>>>,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let lock = crate::team::locks::open_lock_file(&team.root.team_watcher_lock(&team.name)?)?;
    let (team, me, mut dirs) = (team.clone(), me.to_owned(), dirs.to_vec());
    // Where idle runtimes say so (beside the doorbells and this lock).
    if let Some(runtime) = dispatch::runtime_dir(&team) {
        crate::atomic_file::ensure_dir(&runtime)
            .with_context(|| format!("creating {}", runtime.display()))?;
        dirs.push(runtime);
    }
    std::thread::Builder::new()
        .name("team-watcher".into())
        .spawn(move || {
            if let Err(e) = lock.lock() {
                let why = format!("cannot wait for the team watcher's lock ({e})");
                *broken.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                return;
            }
            // Its runtime is exiting: the next one takes the role.
            if has_left() {
                tracing::info!("the team watcher's lock came as this runtime exits: let go");
                return;
            }
            watch_for_team(&team, &me, &dirs);
            drop(lock);
        })
        .context("starting the team watcher's thread")?;
    Ok(())
}

/// The team watcher, holding the lock: rings the bell of each member whose
/// inbox changes, and offers each claimable task to one idle runtime
/// ([`Dispatch`]), until the team is gone. `dirs` are the inboxes, the task
/// list and the runtime files (where idle runtimes say so).
fn watch_for_team(team: &Team, me: &str, dirs: &[PathBuf]) {
    let watcher = Arc::new(InboxWatcher::over_looking(
        dirs,
        crate::mailbox::looks_for(&team.root, &team.name),
    ));
    {
        let mut part = team_watch();
        if matches!(*part, Part::Left) {
            // Its runtime began to exit while the watches were made.
            drop(part);
            watcher.close();
            return;
        }
        *part = Part::Watching(watcher.clone());
    }
    tracing::info!(polling = ?watcher.polling_reason(), "watching the team's files for its runtimes");
    // Its account of the task files (`tasks::sync`), for looks at the board
    // by other processes; a new epoch: what came before this watch is not
    // in it. Only a watcher on file events gives one (a poll's answer would
    // take up to a second).
    let runtime = dirs.get(2).cloned();
    let log = Arc::new(Mutex::new(crate::tasks::sync::Log::new()));
    let account = runtime.clone().filter(|_| {
        watcher.polling_reason().is_none() && watcher.is_watching(1) && watcher.is_watching(2)
    });
    if let Some(dir) = &account {
        crate::tasks::sync::set_local(Some((dir.clone(), Arc::clone(&log))));
    }
    /// The account goes with the watch, however it ends.
    struct Unset(bool);
    impl Drop for Unset {
        fn drop(&mut self) {
            if self.0 {
                crate::tasks::sync::set_local(None);
            }
        }
    }
    let _unset = Unset(account.is_some());
    // Writes between the previous holder's end and this watch: look again.
    ring_all(team);
    let store = team.tasks();
    let mut dispatch = Dispatch::default();
    let mut loaded = dispatch.reload(&store);
    let mut due = dispatch.offer(team);
    write_status(team, me, watcher.polling_reason());
    if let Some(why) = watcher.polling_reason() {
        tell_lead(
            team,
            me,
            &format!(
                "the team watcher ({me}'s runtime) polls every second: {why}; writes by Claude \
                 Code reach swarm runtimes within about a second (swarm's own sends are not \
                 delayed)"
            ),
        );
    }
    let mut seen = Seen::default();
    let mut checked = std::time::Instant::now();
    loop {
        let now = std::time::Instant::now();
        let wait = due.map_or(TEAM_CHECK_EVERY, |d| {
            d.saturating_duration_since(now).min(TEAM_CHECK_EVERY)
        });
        let changes = watcher.changes(wait);
        if watcher.is_closed() {
            // Its runtime is exiting (`leave_team_watch`).
            return;
        }
        // The slow check: the board read whole while it offers work or a
        // runtime may be waiting for some (a board that could not be read
        // is read again at once).
        let recheck = !loaded || checked.elapsed() >= dispatch::RECHECK_EVERY;
        match changes {
            None => {
                if !team.roster().exists() {
                    return;
                }
                if recheck {
                    loaded = dispatch.reload(&store);
                    checked = std::time::Instant::now();
                }
            }
            Some(Changes::All) => {
                // Events were lost: the account starts over.
                lock_log(&log).restart();
                seen.forget();
                ring_all(team);
                loaded = dispatch.reload(&store);
                checked = std::time::Instant::now();
            }
            Some(Changes::Files(files)) => {
                // The account first, of every task file named (bytes the
                // same as before or not: an index may hold others), then
                // the cookies of this burst: every event before a cookie
                // is in its burst or an earlier one.
                let named: Vec<u64> = files
                    .iter()
                    .filter(|(dir, _)| *dir == 1)
                    .filter_map(|(_, name)| {
                        crate::tasks::task::task_file_id(&name.to_string_lossy())
                    })
                    .collect();
                lock_log(&log).note(&named);
                // Without its watch on the task list (the directory went)
                // it cannot know what changed: no answers, and an epoch
                // nobody's index has.
                if !watcher.is_watching(1) {
                    lock_log(&log).restart();
                } else if let Some(dir) = &account {
                    let log = lock_log(&log);
                    for (_, name) in files.iter().filter(|(d, _)| *d == 2) {
                        let name = name.to_string_lossy();
                        if crate::tasks::sync::is_cookie(&name) {
                            crate::tasks::sync::answer(dir, &name, &log);
                        }
                    }
                }
                // A burst of cookies alone (made, then taken) changes nothing
                // else: no offers looked at again for it, unless one is due
                // (every look at the board by a claimant asks, and was two
                // more rounds of offers here).
                let cookie = |(d, n): &(usize, std::ffi::OsString)| {
                    *d == 2 && crate::tasks::sync::is_cookie(&n.to_string_lossy())
                };
                if files.iter().all(cookie) && due.is_none_or(|d| std::time::Instant::now() < d) {
                    continue;
                }
                let mut task_files: Vec<(u64, PathBuf)> = Vec::new();
                for (dir, name) in files {
                    let path = dirs[dir].join(&name);
                    let name = name.to_string_lossy();
                    if dir >= 2 {
                        // An idle file: the offers below see who idles now.
                        continue;
                    }
                    if !seen.changed(&path) {
                        continue;
                    }
                    let stem = name.strip_suffix(".json");
                    if dir == 1 {
                        // Task files only: temp files, locks and the
                        // high-water mark end in a write of one of them.
                        if let Some(id) = stem.and_then(parse_id)
                            && !task_files.iter().any(|(t, _)| *t == id)
                        {
                            task_files.push((id, path));
                        }
                        continue;
                    }
                    if let Some(m) = stem.and_then(member_from_file_stem) {
                        team.mailbox().ring(&m);
                    }
                }
                for (id, _) in &task_files {
                    dispatch.changed(&store, *id);
                }
                // The reads above were of the files again: a write since
                // the team watcher's first read was not what it decided on.
                for (_, path) in &task_files {
                    seen.confirm(path);
                }
                if recheck {
                    loaded = dispatch.reload(&store);
                    checked = std::time::Instant::now();
                }
            }
        }
        due = dispatch.offer(team);
    }
}

/// The team watcher's account, locked (a panic elsewhere left it usable).
fn lock_log(
    log: &Mutex<crate::tasks::sync::Log>,
) -> std::sync::MutexGuard<'_, crate::tasks::sync::Log> {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The bytes (a hash of them) of each file the team watcher last acted on.
/// A change that leaves a file's bytes as they were rings nobody: whoever
/// was rung after the team watcher read them reads them or newer ones. The
/// second event of one write by swarm is such a change: `atomic_file`
/// renames its temp file over the target and closes it after the
/// directory's fsync, two events a read apart (`mailbox::watch`), and each
/// rang every idle runtime (or a member) again.
#[derive(Default)]
struct Seen {
    hashes: HashMap<PathBuf, u64>,
    keys: std::hash::RandomState,
}

impl Seen {
    /// Whether `path` holds other bytes than when last seen (or cannot be
    /// read: then it may have); records what it holds now. A file gone is
    /// forgotten, so it counts again when it comes back.
    fn changed(&mut self, path: &std::path::Path) -> bool {
        match std::fs::read(path) {
            Ok(bytes) => {
                let now = std::hash::BuildHasher::hash_one(&self.keys, &bytes);
                self.hashes.insert(path.to_path_buf(), now) != Some(now)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.hashes.remove(path);
                true
            }
            Err(_) => true,
        }
    }

    /// Forgets `path` unless it still holds the bytes last seen: what was
    /// decided on them was decided on a later write, which must count.
    fn confirm(&mut self, path: &std::path::Path) {
        let still = match (std::fs::read(path), self.hashes.get(path)) {
            (Ok(bytes), Some(h)) => std::hash::BuildHasher::hash_one(&self.keys, &bytes) == *h,
            _ => false,
        };
        if !still {
            self.hashes.remove(path);
        }
    }

    /// After a change nothing names: every file counts again.
    fn forget(&mut self) {
        self.hashes.clear();
    }
}

/// Rings every doorbell of the team.
fn ring_all(team: &Team) {
    let Ok(lock) = team.root.team_watcher_lock(&team.name) else {
        return;
    };
    let Some(Ok(rd)) = lock.parent().map(std::fs::read_dir) else {
        return;
    };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().ends_with(".wake") {
            doorbell::ring(&e.path());
        }
    }
}

fn write_status(team: &Team, me: &str, polling: Option<&str>) {
    let status = WatcherStatus {
        pid: std::process::id(),
        member: me.to_owned(),
        since_ms: crate::clock::now_ms(),
        polling: polling.map(str::to_owned),
    };
    let res = team
        .root
        .team_watcher_status(&team.name)
        .map_err(anyhow::Error::from)
        .and_then(|p| {
            let bytes = serde_json::to_vec_pretty(&status)?;
            crate::atomic_file::write_atomic(&p, &bytes)?;
            Ok(())
        });
    if let Err(e) = res {
        tracing::warn!(error = %format!("{e:#}"), "cannot record the team watcher's status");
    }
}

/// A plain message to the lead, so its dialog shows why someone polls.
pub(super) fn tell_lead(team: &Team, me: &str, text: &str) {
    let lead = crate::names::LEAD_NAME;
    // The sender is shown beside the text: not repeated in it.
    if let Err(e) = team.send_text(me, lead, text, Some("polling for messages"), true) {
        tracing::warn!(error = %format!("{e:#}"), "could not tell the lead");
    }
}

/// For `swarm doctor`: one line per member of `team` that polls, and for
/// a team watcher that polls, saying why.
pub fn report(team: &Team) -> Vec<String> {
    let mut lines = Vec::new();
    let t = &team.name;
    if let Some(s) = live_watcher(team)
        && let Some(why) = s.polling
    {
        lines.push(format!(
            "team {t}: the team watcher ({}'s runtime, pid {}) polls every second: {why}; \
             Claude Code's writes reach swarm runtimes within about a second",
            s.member, s.pid
        ));
    }
    let Ok(lock) = team.root.team_watcher_lock(t) else {
        return lines;
    };
    let Some(Ok(rd)) = lock.parent().map(std::fs::read_dir) else {
        return lines;
    };
    let mut notes: Vec<(String, String)> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let member = member_from_file_stem(name.strip_suffix(".polling")?)?;
            Some((member, PollingNote::live(&e.path())?))
        })
        .collect();
    notes.sort();
    for (m, why) in notes {
        let why = why.trim();
        lines.push(if why.starts_with("runs on host ") {
            format!("team {t}: {m}'s runtime {why}")
        } else {
            format!("team {t}: {m}'s runtime polls every second: {why}")
        });
    }
    lines
}

/// The team watcher's status, if a runtime holds the lock now.
fn live_watcher(team: &Team) -> Option<WatcherStatus> {
    // Whatever cannot be read shows as no watcher: this only adds a line.
    let bytes = crate::tasks::sync::watcher_status(&team.root, &team.name)?;
    crate::dropped::ignore(
        serde_json::from_slice(&bytes),
        "reading the team watcher's status",
    )
}

/// For `swarm up`: warns on stderr when file watching is unavailable right
/// now (no inotify instance left for this user), before runtimes fall back
/// to polling.
pub fn preflight(team: &Team) {
    let Ok(dir) = team.root.team_dir(&team.name) else {
        return;
    };
    if let Err(why) = crate::mailbox::watch_available(&dir) {
        eprintln!(
            "swarm: warning: file watching is unavailable ({why}); team {}'s watcher will poll \
             every second, so messages written by Claude Code reach swarm runtimes within about \
             a second (raise fs.inotify.max_user_instances or close other watchers; `swarm \
             doctor` shows who polls)",
            team.name
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Root;
    use crate::tasks::Takes;
    use crate::teammate::dispatch::Available;

    fn team() -> (tempfile::TempDir, Team, Vec<PathBuf>) {
        let t = tempfile::tempdir().unwrap();
        let team = Team::new(&Root::new(t.path()), "t");
        // A team whose roster is gone ends its watcher.
        team.roster().create(None, "/").unwrap();
        let dirs = vec![
            team.root.inboxes_dir("t").unwrap(),
            team.root.tasks_dir("t").unwrap(),
        ];
        for d in &dirs {
            crate::atomic_file::ensure_dir(d).unwrap();
        }
        (t, team, dirs)
    }

    /// A task file written as Claude Code writes them (no bell rung).
    fn write_task(team: &Team, id: &str, status: &str, owner: Option<&str>, blocked_by: &[&str]) {
        let t = serde_json::json!({
            "id": id, "subject": format!("task {id}"), "description": "",
            "status": status, "owner": owner, "blocks": [], "blockedBy": blocked_by,
        });
        let path = team.root.task("t", id).unwrap();
        crate::atomic_file::write_atomic(&path, t.to_string().as_bytes()).unwrap();
    }

    fn quiet(w: &mut Wakeups, what: &str) {
        assert!(!w.wait(Duration::from_millis(300)), "woken by {what}");
    }

    #[test]
    fn a_direct_inbox_write_wakes_its_member_only_and_a_task_that_offers_work_wakes_one() {
        let (_t, team, dirs) = team();
        let mut a = Wakeups::new(&team, "alice", &dirs).unwrap();
        let mut b = Wakeups::new(&team, "bob", &dirs).unwrap();
        assert_eq!(a.polling_reason(), None);
        // The hand-over ring, then quiet.
        a.wait(Duration::from_secs(5));
        b.wait(Duration::from_secs(5));
        assert!(!b.wait(Duration::from_millis(50)));
        // A Claude Code-style write: no ring, only the file.
        let inbox = team.root.inbox("t", "alice").unwrap();
        crate::atomic_file::write_atomic(&inbox, b"[]").unwrap();
        assert!(a.wait(Duration::from_secs(5)), "alice not woken");
        assert!(
            !b.wait(Duration::from_millis(300)),
            "bob woken by alice's mail"
        );
        // Both idle, taking any task.
        let mut a_idle = Available::new(&team, "alice", Takes::Any).unwrap();
        let mut b_idle = Available::new(&team, "bob", Takes::Any).unwrap();
        a_idle.idle();
        b_idle.idle();
        // A claimable task (a Claude Code-style write too) wakes one of
        // them, offered it; the other sleeps on.
        write_task(&team, "1", "pending", None, &[]);
        let first = one_woken(&mut a, &mut b, &a_idle, &b_idle, 1);
        // It claims (writes the file): nobody else is woken.
        write_task(&team, "1", "in_progress", Some(first), &[]);
        quiet(&mut a, "a claim");
        quiet(&mut b, "a claim");
        assert!(report(&team).is_empty(), "{:?}", report(&team));

        // Task writes that offer nothing to a claim wake nobody; one that
        // does (claimable, or a completion that unblocked one) wakes one.
        write_task(&team, "2", "pending", None, &["1"]);
        write_task(&team, "3", "pending", Some("carol"), &[]);
        quiet(&mut a, "a blocked task and an owned one");
        quiet(&mut b, "a blocked task and an owned one");
        write_task(&team, "3", "completed", Some("carol"), &[]);
        quiet(&mut a, "a completion that unblocked nothing");
        quiet(&mut b, "a completion that unblocked nothing");
        write_task(&team, "1", "completed", Some("carol"), &[]);
        let who = one_woken(&mut a, &mut b, &a_idle, &b_idle, 2);
        write_task(&team, "2", "in_progress", Some(who), &[]);
        write_task(&team, "4", "pending", None, &[]);
        one_woken(&mut a, &mut b, &a_idle, &b_idle, 4);
    }

    /// Issue 25, item 6: right after tasks changed, a look at the board
    /// from anywhere but the team watcher's own thread reads only the task
    /// files the watcher names (a write in place as Claude Code makes it,
    /// a rename, a create, a delete) and sees each.
    #[test]
    fn a_look_after_a_change_reads_only_the_files_the_team_watcher_names() {
        use crate::tasks::store::board_looks as looks;
        let (_t, team, dirs) = team();
        for i in 1..=40 {
            write_task(&team, &i.to_string(), "completed", None, &[]);
        }
        let mut w = Wakeups::new(&team, "alice", &dirs).unwrap();
        while w.wait(Duration::from_millis(300)) {}
        let status = team.root.team_watcher_status("t").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !status.exists() {
            assert!(std::time::Instant::now() < deadline, "no team watcher");
            std::thread::sleep(Duration::from_millis(10));
        }
        let store = team.tasks();
        let look = || {
            looks::take();
            let view = store.glance().unwrap();
            let reads = looks::take().expect("a look");
            // What `status` and `task list` read in place is what the
            // decoded list holds.
            let streamed: Vec<_> = view.iter().map(|t| t.task()).collect();
            let tasks = view.into_list().tasks;
            assert_eq!(streamed, tasks);
            (tasks, reads, looks::take_answered())
        };
        // The first look sets the index at the watcher's point.
        let (tasks, _, _) = look();
        assert_eq!(tasks.len(), 40);
        // In place (no rename), as Claude Code writes; a swarm-style
        // rename; a new task; a task deleted.
        let seven = team.root.task("t", "7").unwrap();
        let mut body = std::fs::read_to_string(&seven).unwrap();
        body = body.replace("\"task 7\"", "\"task seven\"");
        {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&seven)
                .unwrap();
            f.write_all(body.as_bytes()).unwrap();
        }
        write_task(&team, "12", "pending", None, &[]);
        write_task(&team, "41", "pending", None, &[]);
        std::fs::remove_file(team.root.task("t", "30").unwrap()).unwrap();
        let (tasks, reads, answered) = look();
        assert!(answered, "the look did not take the watcher's account");
        // (Fewer when the watcher's own look saved the index meanwhile.)
        assert!(
            reads <= 3,
            "{reads} files read for three changed (30 is gone)"
        );
        let by_id = |id: &str| tasks.iter().find(|t| t.id == id);
        assert_eq!(by_id("7").unwrap().subject, "task seven");
        assert_eq!(by_id("12").unwrap().status, crate::tasks::Status::Pending);
        assert!(by_id("41").is_some() && by_id("30").is_none());
        assert_eq!(tasks.len(), 40);
        let ids: Vec<u64> = tasks.iter().map(crate::tasks::Task::number).collect();
        assert!(ids.windows(2).all(|p| p[0] < p[1]), "in id order: {ids:?}");
        // A one-shot look left the index where it was (a short account is
        // cheaper read again than saved); a look that saves (the lead's, a
        // claimant's) moves it on, and then nothing is read.
        let (_, again, answered) = look();
        assert!(answered && again <= 3, "{again} files read again");
        store.list().unwrap();
        let (_, reads, _) = look();
        assert_eq!(reads, 0);
        // A task past the last (added at the end), then one in the gap 30
        // left (the tasks after it move up): each in its place.
        let ids = |tasks: &[crate::tasks::Task]| -> Vec<u64> {
            tasks.iter().map(crate::tasks::Task::number).collect()
        };
        write_task(&team, "42", "pending", None, &[]);
        let (tasks, reads, answered) = look();
        assert!(answered && reads == 1, "{reads} files read for one new");
        let mut want: Vec<u64> = (1..=42).filter(|&n| n != 30).collect();
        assert_eq!(ids(&tasks), want);
        write_task(&team, "30", "pending", None, &[]);
        let (tasks, _, answered) = look();
        assert!(answered);
        want.insert(29, 30);
        assert_eq!(ids(&tasks), want);
        assert_eq!(tasks[29].status, crate::tasks::Status::Pending);
        drop(w);
    }

    /// Waits until exactly one of the two idle runtimes is woken, offered
    /// task `id`; its name.
    fn one_woken(
        a: &mut Wakeups,
        b: &mut Wakeups,
        a_idle: &Available,
        b_idle: &Available,
        id: u64,
    ) -> &'static str {
        let (woken, other, idle, name) = if a.wait(Duration::from_secs(5)) {
            (a_idle, b, b_idle, "alice")
        } else {
            assert!(b.wait(Duration::from_secs(5)), "nobody woken for task {id}");
            (b_idle, a, a_idle, "bob")
        };
        assert_eq!(
            woken.take_turn(),
            Some(id),
            "{name} was not offered task {id}"
        );
        assert!(
            !other.wait(Duration::from_millis(300)),
            "both woken for task {id}"
        );
        assert_eq!(idle.take_turn(), None, "task {id} offered twice at once");
        name
    }

    /// Issue 25, item 1: no herd. Of eight idle runtimes, one is woken per
    /// claimable task; and a task written in place (as Claude Code writes,
    /// no rename, unknown to the board index) is found.
    #[test]
    fn a_claimable_task_wakes_one_idle_runtime_and_an_in_place_write_is_found() {
        let (_t, team, dirs) = team();
        let names: Vec<String> = (0..8).map(|i| format!("m{i}")).collect();
        let mut wakes: Vec<Wakeups> = names
            .iter()
            .map(|n| Wakeups::new(&team, n, &dirs).unwrap())
            .collect();
        let mut idle: Vec<Available> = names
            .iter()
            .map(|n| Available::new(&team, n, Takes::Any).unwrap())
            .collect();
        for i in &mut idle {
            i.idle();
        }
        // The hand-over rings, then quiet.
        for w in &mut wakes {
            while w.wait(Duration::from_millis(300)) {}
        }
        // The same file rewritten in place: first owned (offers nothing),
        // then freed.
        let path = team.root.task("t", "7").unwrap();
        let body = |owner: &str| {
            format!(
                "{{\n  \"id\": \"7\",\n  \"subject\": \"s\",\n  \"description\": \"\",\n  \
                 \"status\": \"pending\",{owner}\n  \"blocks\": [],\n  \"blockedBy\": []\n}}"
            )
        };
        std::fs::write(&path, body("\n  \"owner\": \"carol\",")).unwrap();
        for w in &mut wakes {
            quiet(w, "an owned task");
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, body("").as_bytes()).unwrap();
        drop(f);
        // Offered to one (claimed at once, as its runtime would, before
        // the offer runs out), rung alone.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let offered = loop {
            if let Some(i) = (0..8).find(|&i| idle[i].take_turn() == Some(7)) {
                break i;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "task 7 offered to nobody"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        std::fs::write(&path, body(&format!("\n  \"owner\": \"m{offered}\","))).unwrap();
        let woken: Vec<usize> = (0..8)
            .filter(|&i| wakes[i].wait(Duration::from_millis(300)))
            .collect();
        assert_eq!(woken, [offered], "woken beside the one offered task 7");
        assert!(
            idle.iter().all(|i| i.take_turn().is_none()),
            "offered twice"
        );
    }

    /// A runtime offered a task that dies (its idle lock let go, its file
    /// left behind) before it claims: the task goes to another idle runtime
    /// once the offer runs out, so nobody idles beside it.
    #[test]
    fn a_task_offered_to_a_runtime_that_died_goes_to_another() {
        let (_t, team, dirs) = team();
        let mut a = Wakeups::new(&team, "alice", &dirs).unwrap();
        let mut b = Wakeups::new(&team, "bob", &dirs).unwrap();
        a.wait(Duration::from_secs(5));
        b.wait(Duration::from_secs(5));
        let mut a_idle = Available::new(&team, "alice", Takes::Any).unwrap();
        let mut b_idle = Available::new(&team, "bob", Takes::Any).unwrap();
        a_idle.idle();
        b_idle.idle();
        write_task(&team, "1", "pending", None, &[]);
        let first = one_woken(&mut a, &mut b, &a_idle, &b_idle, 1);
        let (mut survivor, survivor_idle, dead) = if first == "alice" {
            (b, b_idle, a_idle)
        } else {
            (a, a_idle, b_idle)
        };
        dead.die();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while survivor_idle.take_turn().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "nobody offered the task after its runtime died"
            );
            survivor.wait(Duration::from_millis(200));
        }
    }

    /// A shell teammate (it takes only tasks with a command) is not offered
    /// a task without one while another teammate idles.
    #[test]
    fn a_task_is_offered_only_to_a_runtime_that_takes_it() {
        let (_t, team, dirs) = team();
        let mut a = Wakeups::new(&team, "alice", &dirs).unwrap();
        let mut b = Wakeups::new(&team, "bob", &dirs).unwrap();
        a.wait(Duration::from_secs(5));
        b.wait(Duration::from_secs(5));
        let mut shell = Available::new(&team, "alice", Takes::Commands).unwrap();
        let mut any = Available::new(&team, "bob", Takes::Any).unwrap();
        shell.idle();
        any.idle();
        write_task(&team, "1", "pending", None, &[]);
        assert!(b.wait(Duration::from_secs(5)), "bob not offered task 1");
        assert_eq!(any.take_turn(), Some(1));
        quiet(&mut a, "a task without a command");
        assert_eq!(shell.take_turn(), None);
    }

    #[test]
    fn a_runtime_that_cannot_make_its_doorbell_polls_and_says_so() {
        let (_t, team, dirs) = team();
        let bell = team.mailbox().doorbell_path("bob").unwrap();
        // A directory where the FIFO goes: it can be neither made nor removed.
        std::fs::create_dir_all(bell.join("x")).unwrap();
        let mut b = Wakeups::new(&team, "bob", &dirs).unwrap();
        assert!(b.polling_reason().is_some());
        let lines = report(&team);
        assert!(
            lines
                .iter()
                .any(|l| l.contains("bob's runtime polls every second")),
            "{lines:?}"
        );
        let inbox = team.root.inbox("t", "bob").unwrap();
        crate::atomic_file::write_atomic(&inbox, b"[]").unwrap();
        assert!(
            b.wait(Duration::from_secs(5)),
            "the fallback missed the write"
        );
    }

    /// Issue 24, item 5: `rm <name>.wake` (or a file or a link put in its
    /// place), then a send: consumed after 300 s. The runtime finds its
    /// doorbell gone within a second, makes it again and looks at its
    /// inbox; rings reach it again.
    #[test]
    fn a_removed_or_replaced_doorbell_is_made_again_and_the_wait_ends() {
        let (_t, team, dirs) = team();
        let mut b = Wakeups::new(&team, "bob", &dirs).unwrap();
        b.wait(Duration::from_millis(200)); // the hand-over ring
        let bell = team.mailbox().doorbell_path("bob").unwrap();
        let planted: [&dyn Fn(); 3] = [
            &|| std::fs::remove_file(&bell).unwrap(),
            &|| {
                std::fs::remove_file(&bell).unwrap();
                std::fs::write(&bell, b"").unwrap();
            },
            &|| {
                std::fs::remove_file(&bell).unwrap();
                std::os::unix::fs::symlink("/dev/null", &bell).unwrap();
            },
        ];
        for plant in planted {
            plant();
            // A send now rings nothing: only the runtime's own check ends
            // the wait (with the bug, it slept all of it).
            team.mailbox().ring("bob");
            assert!(b.wait(Duration::from_secs(60)), "the wait ran out");
            assert_eq!(doorbell::problem(&bell), None, "made again");
            assert_eq!(b.polling_reason(), None);
            team.mailbox().ring("bob");
            assert!(b.wait(Duration::from_secs(5)), "a ring reaches it again");
        }
    }
}
