//! The team's three OS locks (`flock`-style, released by the kernel when
//! their holder dies, however it dies):
//!
//! - [`LeadLock`] (`<state>/lead.lock`): held by the team's lead for its
//!   whole life, so a team never has two leads. The file holds the lead's
//!   pid and start time, so `swarm down` finds the lead even when the
//!   roster lost `leadProcess`.
//! - [`LifecycleLock`] (`<state>/lifecycle.lock`): held while `up` or
//!   `spawn` decides which panes the team gets and opens them, so two
//!   spawns of one name, or two `up`s on a team whose lead died, never race.
//! - [`DownLock`] (`<state>/down.lock`): held by `swarm down` while it takes
//!   the team down. The lead leaves the teammates' ends and its own inbox
//!   to it meanwhile ([`down_running`]), and looks again once it ends.
//!
//! All three files are opened without following a symlink and with close-on-exec,
//! so no pane or agent a holder starts inherits the lock.
//!
//! Beside them, whether the team's lead runs ([`lead_pid_alive`]: the lock's
//! holder, else Claude Code's rule on the roster's `leadProcess`) and the
//! lead's own record there ([`claim_lead`]).

use crate::team::Team;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long `up` and `spawn` wait for another one of them to finish.
pub const LIFECYCLE_WAIT: Duration = Duration::from_secs(60);

pub(crate) fn open_lock_file(path: &Path) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        crate::atomic_file::ensure_dir(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .with_context(|| format!("opening the lock {}", path.display()))
}

/// Takes the OS lock on `file`, waiting up to `wait` (polling, so an async
/// caller is never blocked in the kernel). `Ok(None)` when still held then.
async fn lock_within(file: &File, wait: Duration) -> Result<Option<()>> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(2);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(())),
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e).context("taking an OS lock"),
        }
    }
}

/// The lead that holds a team's [`LeadLock`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadHolder {
    /// Its pid, when its lock file says (an older lead wrote none).
    pub pid: Option<u32>,
    pub start: Option<String>,
}

/// Held by the team's lead for its whole life.
#[derive(Debug)]
pub struct LeadLock {
    _file: File,
    path: PathBuf,
}

impl LeadLock {
    /// Takes the lock for this process, waiting up to `wait` for a lead
    /// that is exiting; fails naming the running lead otherwise.
    pub async fn acquire(team: &Team, wait: Duration) -> Result<Self> {
        let path = team.root.lead_lock(&team.name)?;
        let mut file = open_lock_file(&path)?;
        if lock_within(&file, wait).await?.is_none() {
            let who = match read_holder(&path).and_then(|h| h.pid) {
                Some(pid) => format!(" (pid {pid})"),
                None => String::new(),
            };
            bail!("the lead of team {} is already running{who}", team.name);
        }
        let pid = std::process::id();
        let start = swarm_backends::process::start_time(pid).unwrap_or_default();
        file.set_len(0)?;
        file.rewind()?;
        file.write_all(format!("{pid} {start}\n").as_bytes())?;
        file.sync_data()?;
        Ok(LeadLock { _file: file, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn read_holder(path: &Path) -> Option<LeadHolder> {
    let mut text = String::new();
    File::open(path).ok()?.read_to_string(&mut text).ok()?;
    let mut it = text.split_whitespace();
    let pid = it
        .next()
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|p| *p > 1);
    let start = it.next().map(str::to_string);
    Some(LeadHolder { pid, start })
}

/// How long a lock whose holder has died may stay held: a process killed
/// with SIGKILL shows as a zombie while its other threads still exit, and
/// its files (the lock with them) are released only after the last one.
const RELEASE_AFTER_DEATH: Duration = Duration::from_secs(3);

/// The team's running lead, if a process holds its [`LeadLock`] (a lead
/// that died released it, whatever killed it: a holder already dead is
/// waited for, briefly, until the kernel lets go).
pub fn lead_holder(team: &Team) -> Result<Option<LeadHolder>> {
    let path = team.root.lead_lock(&team.name)?;
    if !path.exists() {
        return Ok(None);
    }
    let file = open_lock_file(&path)?;
    let deadline = Instant::now() + RELEASE_AFTER_DEATH;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(None), // released when `file` drops
            Err(TryLockError::WouldBlock) => {
                let holder = read_holder(&path).unwrap_or(LeadHolder {
                    pid: None,
                    start: None,
                });
                let dying = holder.pid.is_some_and(|pid| {
                    !swarm_backends::process::same_process_alive(pid, holder.start.as_deref())
                });
                if !dying || Instant::now() >= deadline {
                    return Ok(Some(holder));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::Error(e)) => return Err(e).context("checking the lead's lock"),
        }
    }
}

/// Held while `up` or `spawn` changes the team's panes.
#[derive(Debug)]
pub struct LifecycleLock {
    _file: File,
}

impl LifecycleLock {
    /// Waits up to [`LIFECYCLE_WAIT`] for another `up`/`spawn` of the team.
    pub async fn acquire(team: &Team) -> Result<Self> {
        Self::acquire_within(team, LIFECYCLE_WAIT).await
    }

    pub async fn acquire_within(team: &Team, wait: Duration) -> Result<Self> {
        let path = team.root.lifecycle_lock(&team.name)?;
        let file = open_lock_file(&path)?;
        if lock_within(&file, wait).await?.is_none() {
            bail!(
                "another `swarm up` or `swarm spawn` of team {} has been busy for {} s; try again",
                team.name,
                wait.as_secs()
            );
        }
        Ok(LifecycleLock { _file: file })
    }
}

/// Held by `swarm down` from its first request to the team's deletion.
///
/// The lead, seeing the teammates approve and end, would do what `down`
/// does with them: release the approved (a wait, a close, a roster write
/// each time), record each end, consume its inbox under the lock the
/// approving runtimes write it under. In a `down` of 8 that was the lead's
/// 13 ms of CPU beside the 2 cores' real work, and the lead's tmux calls.
#[derive(Debug)]
pub struct DownLock {
    _file: File,
}

impl DownLock {
    /// Takes the lock, waiting up to `wait` for another `down` of the team.
    pub async fn acquire(team: &Team, wait: Duration) -> Result<Self> {
        let file = open_lock_file(&team.root.down_lock(&team.name)?)?;
        if lock_within(&file, wait).await?.is_none() {
            bail!(
                "another `swarm down` of team {} is still running; wait for it to end",
                team.name
            );
        }
        Ok(DownLock { _file: file })
    }
}

/// Whether a `swarm down` of `team` holds its [`DownLock`] now: if so, the
/// lock's file, for a wait until it ends ([`File::lock_shared`]). Never
/// creates the file.
pub fn down_running(team: &Team) -> Result<Option<File>> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = team.root.down_lock(&team.name)?;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
    };
    match file.try_lock_shared() {
        Ok(()) => Ok(None),
        Err(TryLockError::WouldBlock) => Ok(Some(file)),
        Err(TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("checking the lock {}", path.display()))
        }
    }
}

fn pid_space() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    match std::fs::read_link("/proc/self/ns/pid") {
        Ok(ns) => format!("{host}#{}", ns.to_string_lossy()),
        Err(_) => host,
    }
}

/// The pid of the team's lead if one runs: the holder of its lead lock
/// (whatever killed an earlier lead released it), else, for a lead of an
/// older swarm, Claude Code's liveness rule on `leadProcess` (reference
/// §2.2: same pid space, pid present, same start time).
pub fn lead_pid_alive(team: &Team) -> Result<Option<u32>> {
    if let Some(holder) = lead_holder(team)? {
        return Ok(Some(holder.pid.unwrap_or(0)));
    }
    let tf = team.roster().read()?;
    let Some(pid) = tf.lead_process.as_ref().and_then(lead_process_alive) else {
        return Ok(None);
    };
    // A pid recorded without its lock is only trusted if that process is
    // a swarm lead at all (never a stranger's recycled pid).
    let swarm = crate::dropped::ignore(
        std::fs::read_link(format!("/proc/{pid}/exe")),
        "reading a lead's executable",
    )
    .zip(crate::dropped::ignore(
        std::env::current_exe(),
        "reading this executable",
    ))
    .is_some_and(|(a, b)| a == b);
    Ok(swarm.then_some(pid))
}

/// The pid of the lead a roster's `leadProcess` names, if it is alive by
/// Claude Code's own rule (reference §2.2): the same pid space (this
/// host and pid namespace), the pid running (a zombie is dead: a lead
/// killed with SIGKILL stays one until its parent reaps it) and, when
/// recorded (Claude Code records it on Linux), the same start time.
pub fn lead_process_alive(lp: &Value) -> Option<u32> {
    let pid = u32::try_from(lp.get("pid")?.as_u64()?).ok()?;
    if lp.get("pidSpace").and_then(Value::as_str) != Some(pid_space().as_str()) {
        return None;
    }
    let start = lp.get("procStart").and_then(Value::as_str);
    swarm_backends::process::same_process_alive(pid, start).then_some(pid)
}

/// Writes this process as the team's lead.
pub fn claim_lead(team: &Team) -> Result<()> {
    let pid = std::process::id();
    let mut lp = json!({"pid": pid, "pidSpace": pid_space(), "claimedAt": crate::clock::now_ms()});
    if let Some(start) = swarm_backends::process::start_time(pid) {
        lp["procStart"] = Value::String(start);
    }
    team.roster().update(|tf| {
        tf.lead_process = Some(lp);
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team() -> (tempfile::TempDir, Team) {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::paths::Root::new(dir.path().join("root"));
        (dir, Team::new(&root, "t"))
    }

    #[tokio::test]
    async fn one_lead_at_a_time_and_the_lock_names_it() {
        let (_d, team) = team();
        assert_eq!(lead_holder(&team).unwrap(), None);
        let held = LeadLock::acquire(&team, Duration::ZERO).await.unwrap();
        let holder = lead_holder(&team).unwrap().expect("held");
        assert_eq!(holder.pid, Some(std::process::id()));
        let err = LeadLock::acquire(&team, Duration::from_millis(20))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("already running (pid"), "{err:#}");
        drop(held);
        assert_eq!(lead_holder(&team).unwrap(), None);
        LeadLock::acquire(&team, Duration::ZERO).await.unwrap();
    }

    #[tokio::test]
    async fn a_second_lifecycle_waits_then_gives_a_clear_error() {
        let (_d, team) = team();
        let first = LifecycleLock::acquire(&team).await.unwrap();
        let err = LifecycleLock::acquire_within(&team, Duration::from_millis(30))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("another `swarm up`"), "{err:#}");
        drop(first);
        LifecycleLock::acquire_within(&team, Duration::ZERO)
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_running_down_is_seen_and_a_second_one_waits_then_gives_a_clear_error() {
        let (_d, team) = team();
        assert!(down_running(&team).unwrap().is_none(), "no file, no down");
        let first = DownLock::acquire(&team, Duration::ZERO).await.unwrap();
        let seen = down_running(&team).unwrap().expect("a down runs");
        let err = DownLock::acquire(&team, Duration::from_millis(30))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("another `swarm down` of team t"),
            "{err:#}"
        );
        // The lead's wait for its end: granted once the down lets go.
        let waited = std::thread::spawn(move || seen.lock_shared().is_ok());
        drop(first);
        assert!(waited.join().unwrap());
        assert!(down_running(&team).unwrap().is_none(), "the down ended");
        DownLock::acquire(&team, Duration::ZERO).await.unwrap();
    }

    #[test]
    fn a_symlink_in_place_of_the_lock_is_refused() {
        let (d, team) = team();
        let path = team.root.lead_lock(&team.name).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let target = d.path().join("victim");
        std::fs::write(&target, "keep me").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(open_lock_file(&path).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }
}
