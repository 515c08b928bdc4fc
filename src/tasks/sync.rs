//! The team watcher's account of the board: which task files changed, so
//! that a look at the board right after a change reads those files and
//! takes the rest from the board index, instead of a `stat` of every task
//! file (issue 25, item 6: 10,006 `fstatat` at 10,000 tasks).
//!
//! The team watcher (`teammate::wake`, one runtime of the team, on file
//! events) numbers every burst of task-file events it takes in ([`Log`]):
//! `seq` counts them, within an `epoch` that is new whenever it may have
//! missed one (it took the role, its events overflowed). Writes of every
//! kind are events (swarm's renames, Claude Code's writes in place, a hand
//! edit closed after writing, a delete), so the log knows them all.
//!
//! A board index records the `(epoch, seq)` it is the board at. Another
//! process that finds the task directory changed asks the watcher, through
//! a cookie file (the way git's fsmonitor and watchman sync): it creates
//! `<state>/runtime/board-sync@<id>.json` (no member name holds an `@`,
//! and a name starting with a dot is no event) holding its index's
//! `epoch seq`; the watcher sees the cookie only after every event that
//! came before it (one inotify queue), and answers in
//! `board-sync@<id>.reply`: its epoch, its `seq` now and, when the epoch
//! is the index's, the ids changed since that `seq` (else `*`: the asker
//! looks at every file, and saves its index at the answer's point). An
//! answer is trusted only as far as it says: a watcher that does not
//! answer within [`ASK_WITHIN`], or none at all, or one that polls, leaves
//! the look to the per-file check, as before. An asker that gives up takes
//! its cookie back; of it and the watcher, the one that finds the cookie
//! already gone removes the answer, so none is left behind.

use crate::paths::Root;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an asker waits for the watcher's answer before it looks at
/// every file itself.
pub const ASK_WITHIN: Duration = Duration::from_millis(20);

/// The name of a cookie (and the stem of its answer).
const COOKIE_PREFIX: &str = "board-sync@";

/// What the team watcher took in: per task id, the `seq` of the last burst
/// that changed it.
#[derive(Debug, Default)]
pub struct Log {
    epoch: u64,
    seq: u64,
    changed: HashMap<u64, u64>,
}

/// An answer: the watcher's `(epoch, seq)` now, and the ids changed since
/// the asked `seq` (`None`: it cannot say; every file must be looked at).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub epoch: u64,
    pub seq: u64,
    pub changed: Option<Vec<u64>>,
}

impl Log {
    /// A log with a new epoch (nothing before it is known).
    pub fn new() -> Log {
        let mut log = Log::default();
        log.restart();
        log
    }

    /// Forgets everything: a new epoch (events may have been missed).
    pub fn restart(&mut self) {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        // Never 0: an index without an account says epoch 0.
        self.epoch = (nanos ^ (u64::from(std::process::id()) << 32)) | 1;
        self.seq = 0;
        self.changed.clear();
    }

    /// A burst of events changed the task files `ids`.
    pub fn note(&mut self, ids: &[u64]) {
        if ids.is_empty() {
            return;
        }
        self.seq += 1;
        for id in ids {
            self.changed.insert(*id, self.seq);
        }
    }

    /// Where the log is now.
    pub fn at(&self) -> (u64, u64) {
        (self.epoch, self.seq)
    }

    /// The answer to an index taken at `(epoch, seq)`.
    pub fn since(&self, epoch: u64, seq: u64) -> Answer {
        let changed = (epoch == self.epoch && seq <= self.seq).then(|| {
            let mut ids: Vec<u64> = self
                .changed
                .iter()
                .filter(|(_, at)| **at > seq)
                .map(|(id, _)| *id)
                .collect();
            ids.sort_unstable();
            ids
        });
        Answer {
            epoch: self.epoch,
            seq: self.seq,
            changed,
        }
    }
}

thread_local! {
    /// The log of the team watcher on the thread that runs it (set by it
    /// while it watches): that thread's own looks take their point from
    /// it, for it cannot wait for its own answer. (Other threads of its
    /// process ask as any process does.)
    static LOCAL: std::cell::RefCell<Option<(PathBuf, Arc<Mutex<Log>>)>> =
        const { std::cell::RefCell::new(None) };
}

/// This thread watches the team whose runtime directory is `runtime`,
/// with `log` (`None`: no longer).
pub fn set_local(watching: Option<(PathBuf, Arc<Mutex<Log>>)>) {
    LOCAL.with(|l| *l.borrow_mut() = watching);
}

/// Where this thread's own log is, when it watches the team of `runtime`.
pub fn local_at(runtime: &Path) -> Option<(u64, u64)> {
    LOCAL.with(|l| {
        let l = l.borrow();
        let (dir, log) = l.as_ref()?;
        (dir == runtime).then(|| log.lock().unwrap_or_else(PoisonError::into_inner).at())
    })
}

/// Whether `name` (in the runtime directory) is a cookie.
pub fn is_cookie(name: &str) -> bool {
    name.starts_with(COOKIE_PREFIX) && name.ends_with(".json")
}

/// The watcher's side: answers the cookie `name` in `runtime` from `log`
/// (its answer written beside it, then the cookie removed). A cookie gone
/// already (its asker gave up) is left unanswered.
pub fn answer(runtime: &Path, name: &str, log: &Log) {
    let cookie = runtime.join(name);
    let Ok(text) = std::fs::read_to_string(&cookie) else {
        return;
    };
    let mut words = text.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(epoch)), Some(Ok(seq))) = (words.next(), words.next()) else {
        crate::dropped::ignore(std::fs::remove_file(&cookie), "removing a bad cookie");
        return;
    };
    let a = log.since(epoch, seq);
    let mut body = format!("{} {}\n", a.epoch, a.seq);
    match &a.changed {
        None => body.push('*'),
        Some(ids) => {
            for id in ids {
                body.push_str(&id.to_string());
                body.push(' ');
            }
        }
    }
    body.push('\n');
    let stem = name.trim_end_matches(".json");
    let part = runtime.join(format!("{stem}.part"));
    let reply = runtime.join(format!("{stem}.reply"));
    let written = std::fs::write(&part, body).and_then(|()| std::fs::rename(&part, &reply));
    if let Err(e) = written {
        tracing::debug!(error = %e, "cannot answer a board sync");
        crate::dropped::ignore(std::fs::remove_file(&part), "removing a half answer");
    }
    answered(&cookie, &reply);
}

/// The watcher's last step of an answer: the cookie removed. The one of
/// the two sides whose removal finds it gone removes the reply: the other
/// has made its last move on it. Here the asker gave up (it takes its
/// cookie back, [`given_up`]) while the answer was written, so nobody
/// reads it, and it would stay in the runtime directory until the team
/// is deleted.
fn answered(cookie: &Path, reply: &Path) {
    let (result, doing) = match std::fs::remove_file(cookie) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (
            crate::atomic_file::remove_if_there(reply),
            "removing an answer its asker gave up on",
        ),
        removed => (removed, "removing an answered cookie"),
    };
    crate::dropped::ignore(result, doing);
}

/// The asker's side of [`answered`], when no answer came in time: the
/// cookie taken back, so that it is not answered. Found gone, the watcher
/// answered meanwhile: that answer is read, and removed.
fn given_up(cookie: &Path, reply: &Path) -> Option<String> {
    match std::fs::remove_file(cookie) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => take(reply).ok(),
        removed => {
            crate::dropped::ignore(removed, "removing an unanswered cookie");
            None
        }
    }
}

/// An answer read, and removed once read (never before: the watcher may
/// put it there between a read that misses it and a removal).
fn take(reply: &Path) -> std::io::Result<String> {
    let text = std::fs::read_to_string(reply)?;
    crate::dropped::ignore(
        crate::atomic_file::remove_if_there(reply),
        "removing a board sync answer",
    );
    Ok(text)
}

/// The asker's side: the answer of `team`'s watcher for an index at
/// `(epoch, seq)`, when a watcher that gets file events holds the role and
/// answers within `within`; `None` otherwise (the asker looks at every
/// file).
pub fn ask(root: &Root, team: &str, (epoch, seq): (u64, u64), within: Duration) -> Option<Answer> {
    if !watcher_status(root, team).is_some_and(|s| listens(&s)) {
        return None;
    }
    let lock = root.team_watcher_lock(team).ok()?;
    let runtime = lock.parent()?;
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let id = format!(
        "{COOKIE_PREFIX}{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let cookie = runtime.join(format!("{id}.json"));
    let reply = runtime.join(format!("{id}.reply"));
    {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&cookie)
            .ok()?;
        if f.write_all(format!("{epoch} {seq}\n").as_bytes()).is_err() {
            drop(f);
            crate::dropped::ignore(std::fs::remove_file(&cookie), "removing a cookie");
            return None;
        }
    }
    let deadline = Instant::now() + within;
    let mut pause = Duration::from_micros(50);
    let text = loop {
        match take(&reply) {
            Ok(t) => break Some(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(_) => break None,
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    };
    let Some(text) = text.or_else(|| given_up(&cookie, &reply)) else {
        tracing::debug!("the team watcher did not answer in time; looking at every task file");
        return None;
    };
    parse_answer(&text)
}

/// `"<epoch> <seq>\n<ids…|*>\n"`.
fn parse_answer(text: &str) -> Option<Answer> {
    let (head, rest) = text.split_once('\n')?;
    let mut head = head.split_whitespace().map(str::parse::<u64>);
    let (Some(Ok(epoch)), Some(Ok(seq))) = (head.next(), head.next()) else {
        return None;
    };
    let rest = rest.trim();
    let changed = if rest == "*" {
        None
    } else {
        Some(
            rest.split_whitespace()
                .map(str::parse::<u64>)
                .collect::<Result<Vec<u64>, _>>()
                .ok()?,
        )
    };
    Some(Answer {
        epoch,
        seq,
        changed,
    })
}

/// The bytes of the status record of `team`'s watcher, when a runtime
/// holds the role now (its lock is held); `None` otherwise, or when it
/// cannot be read.
pub fn watcher_status(root: &Root, team: &str) -> Option<Vec<u8>> {
    let f = std::fs::File::open(root.team_watcher_lock(team).ok()?).ok()?;
    if f.try_lock_shared().is_ok() {
        return None; // nobody holds it
    }
    std::fs::read(root.team_watcher_status(team).ok()?).ok()
}

/// Whether a watcher's `status` says it gets file events (it does not
/// poll): only such a one answers within milliseconds.
fn listens(status: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(status)
        .is_ok_and(|v| v.get("polling").is_some_and(serde_json::Value::is_null))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_names_what_changed_since_a_point_of_its_epoch_only() {
        let mut log = Log::new();
        let (epoch, start) = log.at();
        log.note(&[3, 7]);
        let (_, mid) = log.at();
        log.note(&[7, 9]);
        log.note(&[]);
        assert_eq!(log.since(epoch, start).changed, Some(vec![3, 7, 9]));
        assert_eq!(log.since(epoch, mid).changed, Some(vec![7, 9]));
        assert_eq!(log.since(epoch, log.at().1).changed, Some(vec![]));
        assert_eq!(log.since(epoch ^ 2, start).changed, None, "another epoch");
        assert_eq!(
            log.since(epoch, log.at().1 + 1).changed,
            None,
            "a point ahead"
        );
        log.restart();
        assert_ne!(log.at().0, epoch);
        assert_eq!(log.since(epoch, mid).changed, None);
    }

    #[test]
    fn the_side_that_finds_the_cookie_gone_removes_the_answer() {
        let dir = tempfile::tempdir().unwrap();
        let cookie = dir.path().join("board-sync@1-0.json");
        let reply = dir.path().join("board-sync@1-0.reply");
        // Answered as asked: the cookie goes, the answer stays for its asker.
        std::fs::write(&cookie, "1 2\n").unwrap();
        std::fs::write(&reply, "1 3\n7 \n").unwrap();
        answered(&cookie, &reply);
        assert!(!cookie.exists() && reply.exists());
        // Answered after the asker's last look: the asker takes it.
        assert_eq!(given_up(&cookie, &reply).as_deref(), Some("1 3\n7 \n"));
        assert!(!reply.exists());
        // Not answered: the cookie is taken back.
        std::fs::write(&cookie, "1 2\n").unwrap();
        assert_eq!(given_up(&cookie, &reply), None);
        assert!(!cookie.exists());
        // Answered after the asker took its cookie back: nobody reads it.
        std::fs::write(&reply, "1 3\n*\n").unwrap();
        answered(&cookie, &reply);
        assert!(!reply.exists(), "an answer nobody reads stayed");
    }

    #[test]
    fn an_answer_is_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = Log::new();
        let (epoch, seq) = log.at();
        log.note(&[12, 5]);
        let name = format!("{COOKIE_PREFIX}1-0.json");
        std::fs::write(dir.path().join(&name), format!("{epoch} {seq}\n")).unwrap();
        answer(dir.path(), &name, &log);
        assert!(!dir.path().join(&name).exists(), "the cookie is taken");
        let text =
            std::fs::read_to_string(dir.path().join(format!("{COOKIE_PREFIX}1-0.reply"))).unwrap();
        assert_eq!(
            parse_answer(&text),
            Some(Answer {
                epoch,
                seq: 1,
                changed: Some(vec![5, 12])
            })
        );
        std::fs::write(dir.path().join(&name), "1 0\n").unwrap();
        answer(dir.path(), &name, &log);
        let text =
            std::fs::read_to_string(dir.path().join(format!("{COOKIE_PREFIX}1-0.reply"))).unwrap();
        assert_eq!(parse_answer(&text).unwrap().changed, None, "{text}");
        assert!(is_cookie(&name) && !is_cookie("alice.idle.json"));
    }
}
