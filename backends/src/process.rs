//! Signals to processes and process groups, and the kill ladder built on
//! them: SIGTERM to the group, poll every 20 ms up to a grace period, SIGKILL
//! the group. Guarded so that a bad pid can never signal init, every
//! process (`kill(-1)`) or our own group.

use std::time::Duration;

/// How often the ladder checks whether a group has died.
pub const POLL: Duration = Duration::from_millis(20);

/// How a ladder ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LadderOutcome {
    /// The group was already gone before any signal.
    AlreadyGone,
    /// The group left after SIGTERM, within the grace period.
    Terminated,
    /// The group needed SIGKILL.
    Killed,
}

#[cfg(unix)]
mod imp {
    use std::io;

    /// True when a pid is safe to signal (not 0, not init, not ours).
    fn safe(pid: i32) -> bool {
        // SAFETY: getpid/getpgrp take no arguments and cannot fail.
        let (me, my_group) = unsafe { (libc::getpid(), libc::getpgrp()) };
        pid > 1 && pid != me && pid != my_group
    }

    /// The process group of `pid`, if the process exists.
    pub fn process_group(pid: u32) -> Option<i32> {
        let pid = i32::try_from(pid).ok()?;
        // SAFETY: getpgid only reads kernel state for the given pid.
        let pgid = unsafe { libc::getpgid(pid) };
        (pgid > 0).then_some(pgid)
    }

    /// Sends `signal` to every process of group `pgid`.
    pub fn signal_group(pgid: i32, signal: i32) -> io::Result<()> {
        if !safe(pgid) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("refusing to signal process group {pgid}"),
            ));
        }
        // SAFETY: kill with a negative pid signals a group; pgid was checked above.
        if unsafe { libc::kill(-pgid, signal) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Sends `signal` to one process.
    pub fn signal_process(pid: i32, signal: i32) -> io::Result<()> {
        if !safe(pid) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("refusing to signal process {pid}"),
            ));
        }
        // SAFETY: kill on a checked positive pid.
        if unsafe { libc::kill(pid, signal) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn exists(target: i32) -> bool {
        // SAFETY: signal 0 only checks existence and permission.
        if unsafe { libc::kill(target, 0) } == 0 {
            return true;
        }
        io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }

    /// True while any process (zombies included) is in group `pgid`.
    pub fn group_alive(pgid: i32) -> bool {
        safe(pgid) && exists(-pgid)
    }

    /// True while process `pid` exists (zombies included).
    pub fn process_alive(pid: u32) -> bool {
        i32::try_from(pid).is_ok_and(|pid| safe(pid) && exists(pid))
    }

    pub const SIGTERM: i32 = libc::SIGTERM;
    pub const SIGKILL: i32 = libc::SIGKILL;
}

#[cfg(not(unix))]
mod imp {
    use std::io;

    fn unsupported() -> io::Error {
        io::Error::new(io::ErrorKind::Unsupported, "process groups are Unix-only")
    }
    pub fn process_group(_pid: u32) -> Option<i32> {
        None
    }
    pub fn signal_group(_pgid: i32, _signal: i32) -> io::Result<()> {
        Err(unsupported())
    }
    pub fn signal_process(_pid: i32, _signal: i32) -> io::Result<()> {
        Err(unsupported())
    }
    pub fn group_alive(_pgid: i32) -> bool {
        false
    }
    pub fn process_alive(_pid: u32) -> bool {
        false
    }
    pub const SIGTERM: i32 = 15;
    pub const SIGKILL: i32 = 9;
}

pub use imp::*;

/// The fields of `/proc/<pid>/stat` after `comm` (field 3, the state,
/// first); `None` where there is no such process or no `/proc`. The one
/// parser of that file.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ...": comm may hold spaces and ')'; the rest follows
    // the last ')'.
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// Whether `pid` is a zombie (exited, not yet reaped by its parent); `None`
/// where the platform does not say (no `/proc`).
pub fn is_zombie(pid: u32) -> Option<bool> {
    Some(stat_fields(pid)?.first()? == "Z")
}

/// The start time of `pid` (field 22 of `/proc/<pid>/stat`, clock ticks
/// since boot, as Claude Code records it): with the pid, it names one
/// process for good, since a recycled pid starts later.
pub fn start_time(pid: u32) -> Option<String> {
    stat_fields(pid)?.get(19).cloned()
}

/// True when `pid` runs, is no zombie, and (when `start` is given) is the
/// process that started then.
pub fn same_process_alive(pid: u32, start: Option<&str>) -> bool {
    process_alive(pid)
        && is_zombie(pid) != Some(true)
        && start.is_none_or(|s| start_time(pid).as_deref() == Some(s))
}

/// A one-line description of a process for error messages: its
/// `/proc/<pid>/stat` head on Linux (`pid (comm) state ppid pgrp`), else the pid.
pub fn describe(pid: u32) -> String {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let head: Vec<&str> = stat.split_whitespace().take(5).collect();
            let parent = head
                .get(3)
                .and_then(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).ok())
                .map(|c| c.replace('\0', " "))
                .unwrap_or_default();
            let sig = head
                .get(3)
                .and_then(|p| std::fs::read_to_string(format!("/proc/{p}/status")).ok())
                .map(|st| {
                    st.lines()
                        .filter(|l| l.starts_with("Sig") || l.starts_with("State"))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            format!("{}; parent: {} [{sig}]", head.join(" "), parent.trim())
        }
        Err(_) => format!("pid {pid}"),
    }
}

/// Runs the ladder on group `pgid`: SIGTERM, wait up to `grace` (polling
/// every [`POLL`], calling `reap` each time so a parent can collect its
/// zombie), SIGKILL, then wait up to `settle` for the group to vanish.
/// Returns an error message when the group outlives SIGKILL.
pub async fn terminate_group<F>(
    pgid: i32,
    grace: Duration,
    settle: Duration,
    mut reap: impl FnMut() -> F + Send,
) -> Result<LadderOutcome, String>
where
    F: std::future::Future<Output = ()> + Send,
{
    reap().await;
    if !group_alive(pgid) {
        return Ok(LadderOutcome::AlreadyGone);
    }
    if let Err(err) = signal_group(pgid, SIGTERM) {
        if !group_alive(pgid) {
            return Ok(LadderOutcome::AlreadyGone);
        }
        return Err(format!("SIGTERM to group {pgid}: {err}"));
    }
    if wait_gone(pgid, grace, &mut reap).await {
        return Ok(LadderOutcome::Terminated);
    }
    if let Err(err) = signal_group(pgid, SIGKILL) {
        if !group_alive(pgid) {
            return Ok(LadderOutcome::Terminated);
        }
        return Err(format!("SIGKILL to group {pgid}: {err}"));
    }
    if wait_gone(pgid, settle, &mut reap).await {
        Ok(LadderOutcome::Killed)
    } else {
        Err(format!(
            "process group {pgid} still alive {settle:?} after SIGKILL"
        ))
    }
}

/// The ladder for several groups at once: SIGTERM to each, one shared
/// `grace` for all to end, SIGKILL to the survivors, `settle` for those.
/// One result per group, in order (an error names what survived).
pub async fn terminate_groups<F>(
    pgids: &[i32],
    grace: Duration,
    settle: Duration,
    mut reap: impl FnMut() -> F + Send,
) -> Vec<Result<LadderOutcome, String>>
where
    F: std::future::Future<Output = ()> + Send,
{
    reap().await;
    let mut out: Vec<Option<Result<LadderOutcome, String>>> = pgids
        .iter()
        .map(|&g| (!group_alive(g)).then_some(Ok(LadderOutcome::AlreadyGone)))
        .collect();
    for (i, &g) in pgids.iter().enumerate() {
        if out[i].is_none()
            && let Err(err) = signal_group(g, SIGTERM)
            && group_alive(g)
        {
            out[i] = Some(Err(format!("SIGTERM to group {g}: {err}")));
        }
    }
    let pending = |out: &[Option<Result<LadderOutcome, String>>]| -> Vec<usize> {
        (0..pgids.len()).filter(|&i| out[i].is_none()).collect()
    };
    let deadline = tokio::time::Instant::now() + grace;
    loop {
        reap().await;
        for i in pending(&out) {
            if !group_alive(pgids[i]) {
                out[i] = Some(Ok(LadderOutcome::Terminated));
            }
        }
        if pending(&out).is_empty() || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    let stubborn = pending(&out);
    for &i in &stubborn {
        let _ = signal_group(pgids[i], SIGKILL);
    }
    let deadline = tokio::time::Instant::now() + settle;
    loop {
        reap().await;
        for &i in &stubborn {
            if out[i].is_none() && !group_alive(pgids[i]) {
                out[i] = Some(Ok(LadderOutcome::Killed));
            }
        }
        if pending(&out).is_empty() || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    out.into_iter()
        .zip(pgids)
        .map(|(r, g)| {
            r.unwrap_or_else(|| {
                Err(format!(
                    "process group {g} still alive {settle:?} after SIGKILL"
                ))
            })
        })
        .collect()
}

async fn wait_gone<F>(pgid: i32, within: Duration, reap: &mut (impl FnMut() -> F + Send)) -> bool
where
    F: std::future::Future<Output = ()> + Send,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        reap().await;
        if !group_alive(pgid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn refuses_dangerous_targets() {
        assert!(signal_group(0, 0).is_err());
        assert!(signal_group(1, 0).is_err());
        assert!(signal_group(-5, 0).is_err());
        // SAFETY: getpgrp cannot fail.
        let mine = unsafe { libc::getpgrp() };
        assert!(signal_group(mine, 0).is_err());
        assert!(!group_alive(1));
    }

    #[tokio::test]
    async fn the_ladder_escalates_for_a_process_that_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let ready = dir.path().join("ready");
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; : > \"$0\"; sleep 30 & wait"])
            .arg(&ready)
            .process_group(0)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !ready.exists() {
            assert!(
                std::time::Instant::now() < deadline,
                "sh never set its trap"
            );
            tokio::time::sleep(POLL).await;
        }
        let pid = child.id();
        let pgid = process_group(pid).unwrap();
        assert_eq!(pgid as u32, pid);
        let outcome = terminate_group(
            pgid,
            Duration::from_millis(200),
            Duration::from_secs(2),
            || {
                let _ = child.try_wait();
                async {}
            },
        )
        .await
        .unwrap();
        assert_eq!(outcome, LadderOutcome::Killed);
        assert!(!group_alive(pgid));
    }

    #[tokio::test]
    async fn a_polite_process_stops_at_sigterm() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id() as i32;
        let outcome = terminate_group(pgid, Duration::from_secs(5), Duration::from_secs(1), || {
            let _ = child.try_wait();
            async {}
        })
        .await
        .unwrap();
        assert_eq!(outcome, LadderOutcome::Terminated);
    }
}
