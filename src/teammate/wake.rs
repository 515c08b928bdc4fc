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
//!   task file rings every bell when it may offer work to a claim (it is
//!   claimable now, or was completed or removed: `TaskStore::may_offer_work`),
//!   none when it is a claim, progress or metadata. A file whose bytes are
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

use crate::mailbox::doorbell::{self, Doorbell};
use crate::mailbox::{Changes, InboxWatcher};
use crate::names::member_from_file_stem;
use crate::tasks::parse_id;
use crate::team::Team;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often the team watcher checks that its team still exists when
/// nothing happens.
const TEAM_CHECK_EVERY: Duration = Duration::from_secs(60);

/// Wakes one runtime when its inbox or the task list changes.
pub struct Wakeups {
    how: How,
    /// Set by the team watcher's thread if it stops for good.
    broken: Arc<Mutex<Option<String>>>,
    dirs: Vec<PathBuf>,
    note: PathBuf,
}

enum How {
    Bell(Doorbell),
    Poll(InboxWatcher),
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
        let how = match enter_election(team, me, dirs, broken.clone()) {
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
        };
        let w = Wakeups {
            how,
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
            How::Poll(w) => w.polling_reason(),
            How::Bell(_) => None,
        }
    }

    /// Blocks until something of this member's changed since the previous
    /// call (`true`) or `timeout` passed (`false`). A burst is one wake-up.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        self.check_watcher();
        let woken = match &self.how {
            How::Bell(_) => self.wait_on_bell(timeout),
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
    /// it was gone rang nothing.
    fn wait_on_bell(&mut self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let How::Bell(bell) = &self.how else {
                return true;
            };
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if bell.wait(left.min(doorbell::CHECK_EVERY)) {
                return true;
            }
            if !bell.intact() {
                let path = bell.path().to_path_buf();
                match Doorbell::open(&path) {
                    Ok(bell) => {
                        tracing::warn!(bell = %path.display(), "my doorbell was removed or replaced; made it again");
                        self.how = How::Bell(bell);
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
            if left <= doorbell::CHECK_EVERY {
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
}

impl PollingNote {
    /// A note by this process.
    fn mine(why: &str) -> PollingNote {
        let pid = std::process::id();
        PollingNote {
            pid,
            start: swarm_backends::process::start_time(pid),
            why: why.to_owned(),
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
    let (team, me, dirs) = (team.clone(), me.to_owned(), dirs.to_vec());
    std::thread::Builder::new()
        .name("team-watcher".into())
        .spawn(move || {
            if let Err(e) = lock.lock() {
                let why = format!("cannot wait for the team watcher's lock ({e})");
                *broken.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
                return;
            }
            watch_for_team(&team, &me, &dirs);
            drop(lock);
        })
        .context("starting the team watcher's thread")?;
    Ok(())
}

/// The team watcher, holding the lock: rings the bell of each member whose
/// inbox changes (every bell when a task change may offer work to a claim)
/// until the team is gone.
fn watch_for_team(team: &Team, me: &str, dirs: &[PathBuf]) {
    let watcher = InboxWatcher::over(dirs);
    tracing::info!(polling = ?watcher.polling_reason(), "watching the team's files for its runtimes");
    // Writes between the previous holder's end and this watch: look again.
    ring_all(team);
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
    loop {
        match watcher.changes(TEAM_CHECK_EVERY) {
            None => {
                if !team.roster().exists() {
                    return;
                }
            }
            Some(Changes::All) => {
                seen.forget();
                ring_all(team);
            }
            Some(Changes::Files(files)) => {
                let mut tasks: Vec<String> = Vec::new();
                let mut task_files: Vec<PathBuf> = Vec::new();
                for (dir, name) in files {
                    let path = dirs[dir].join(&name);
                    if !seen.changed(&path) {
                        continue;
                    }
                    let name = name.to_string_lossy();
                    let stem = name.strip_suffix(".json");
                    if dir != 0 {
                        // Task files only: temp files, locks and the
                        // high-water mark end in a write of one of them.
                        if let Some(id) = stem.filter(|s| parse_id(s).is_some())
                            && !tasks.iter().any(|t| t == id)
                        {
                            tasks.push(id.to_owned());
                            task_files.push(path);
                        }
                        continue;
                    }
                    if let Some(m) = stem.and_then(member_from_file_stem) {
                        team.mailbox().ring(&m);
                    }
                }
                let ids: Vec<&str> = tasks.iter().map(String::as_str).collect();
                if !ids.is_empty() && team.tasks().may_offer_work(&ids) {
                    ring_all(team);
                }
                // The look read the task files again: a write since the
                // team watcher's read was not what it decided on.
                for path in &task_files {
                    seen.confirm(path);
                }
            }
        }
    }
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
    let summary = format!("{me}: polling for messages");
    if let Err(e) = team.send_text(me, lead, &format!("{me}: {text}"), Some(&summary), true) {
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
        lines.push(format!(
            "team {t}: {m}'s runtime polls every second: {}",
            why.trim()
        ));
    }
    lines
}

/// The team watcher's status, if a runtime holds the lock now.
fn live_watcher(team: &Team) -> Option<WatcherStatus> {
    // Whatever cannot be read shows as no watcher: this only adds a line.
    let doing = "reading the team watcher's status";
    let lock = crate::dropped::ignore(team.root.team_watcher_lock(&team.name), doing)?;
    let f = crate::dropped::ignore(File::open(&lock), doing)?;
    if f.try_lock_shared().is_ok() {
        return None; // nobody holds it
    }
    let status = crate::dropped::ignore(team.root.team_watcher_status(&team.name), doing)?;
    let bytes = crate::dropped::ignore(std::fs::read(status), doing)?;
    crate::dropped::ignore(serde_json::from_slice(&bytes), doing)
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

    fn team() -> (tempfile::TempDir, Team, Vec<PathBuf>) {
        let t = tempfile::tempdir().unwrap();
        let team = Team::new(&Root::new(t.path()), "t");
        let dirs = vec![
            team.root.inboxes_dir("t").unwrap(),
            team.root.tasks_dir("t").unwrap(),
        ];
        for d in &dirs {
            crate::atomic_file::ensure_dir(d).unwrap();
        }
        (t, team, dirs)
    }

    #[test]
    fn a_direct_inbox_write_wakes_its_member_only_and_a_task_that_offers_work_wakes_all() {
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
        // A claimable task (a Claude Code-style write too) wakes all.
        let write = |id: &str, status: &str, owner: Option<&str>, blocked_by: &[&str]| {
            let t = serde_json::json!({
                "id": id, "subject": format!("task {id}"), "description": "",
                "status": status, "owner": owner, "blocks": [], "blockedBy": blocked_by,
            });
            let path = team.root.task("t", id).unwrap();
            crate::atomic_file::write_atomic(&path, t.to_string().as_bytes()).unwrap();
        };
        write("1", "pending", None, &[]);
        assert!(a.wait(Duration::from_secs(5)) && b.wait(Duration::from_secs(5)));
        assert!(report(&team).is_empty(), "{:?}", report(&team));

        // Task writes that offer nothing to a claim wake nobody; one that
        // does (claimable, or a completion that unblocked one) wakes all.
        let quiet = |w: &mut Wakeups, what: &str| {
            assert!(!w.wait(Duration::from_millis(300)), "woken by {what}");
        };
        write("1", "in_progress", Some("carol"), &[]);
        write("2", "pending", None, &["1"]);
        write("3", "pending", Some("carol"), &[]);
        quiet(&mut a, "a claim, a blocked task and an owned one");
        quiet(&mut b, "a claim, a blocked task and an owned one");
        write("3", "completed", Some("carol"), &[]);
        quiet(&mut a, "a completion that unblocked nothing");
        quiet(&mut b, "a completion that unblocked nothing");
        write("1", "completed", Some("carol"), &[]);
        assert!(a.wait(Duration::from_secs(5)) && b.wait(Duration::from_secs(5)));
        write("4", "pending", None, &[]);
        assert!(a.wait(Duration::from_secs(5)) && b.wait(Duration::from_secs(5)));
        std::fs::remove_file(team.root.task("t", "3").unwrap()).unwrap();
        assert!(a.wait(Duration::from_secs(5)) && b.wait(Duration::from_secs(5)));
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
