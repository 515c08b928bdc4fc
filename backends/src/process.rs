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

/// What `/proc/<pid>/stat` says of a process (Linux), as far as swarm
/// reads it. [`Stat::parse`] is the one parser of that file in the code of
/// both crates: liveness, zombies, start times, the runtime's process tree
/// (`swarm::agents::process`) and the descriptions in error messages all
/// come through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub pid: u32,
    /// The command name (field 2) without its parentheses; it may hold
    /// spaces and `)`.
    pub comm: String,
    /// The state letter (field 3): `R`, `S`, `D`, `T`, `Z`, ...
    pub state: char,
    /// The parent's pid (field 4).
    pub ppid: u32,
    /// The process group (field 5).
    pub pgrp: i32,
    /// The start time (field 22, clock ticks since boot), as text, as
    /// Claude Code records it: with the pid, it names one process for
    /// good, since a recycled pid starts later.
    pub start_time: String,
}

impl Stat {
    /// The stat of `pid`; `None` where there is no such process or no
    /// `/proc`.
    pub fn of(pid: u32) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }

    /// Parses one `/proc/<pid>/stat` line: `pid (comm) state ppid pgrp ...`.
    /// The comm may hold spaces and parentheses, so the fields after it
    /// follow the last `)`.
    pub fn parse(text: &str) -> Option<Stat> {
        let (head, rest) = text.rsplit_once(')')?;
        let (pid, comm) = head.split_once(" (")?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let mut state = f.first()?.chars();
        Some(Stat {
            pid: pid.trim().parse().ok()?,
            comm: comm.to_string(),
            state: state.next().filter(|_| state.next().is_none())?,
            ppid: f.get(1)?.parse().ok()?,
            pgrp: f.get(2)?.parse().ok()?,
            start_time: (*f.get(19)?).to_string(),
        })
    }

    /// Exited and not yet reaped by its parent.
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z'
    }
}

/// Every process in `/proc` (the whole table, one file per process): for
/// what no narrower reading finds, such as the children of a process on a
/// kernel without `/proc/<pid>/task/<tid>/children`. Empty without `/proc`.
pub fn all_processes() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        // Gone since the listing: not in the table.
        .filter_map(Stat::of)
        .collect()
}

/// Whether `pid` is a zombie (exited, not yet reaped by its parent); `None`
/// where there is no such process or the platform does not say (no
/// `/proc`).
pub fn is_zombie(pid: u32) -> Option<bool> {
    Some(Stat::of(pid)?.is_zombie())
}

/// The start time of `pid` ([`Stat::start_time`]).
pub fn start_time(pid: u32) -> Option<String> {
    Some(Stat::of(pid)?.start_time)
}

/// True when `pid` runs, is no zombie, and (when `start` is given) is the
/// process that started then.
pub fn same_process_alive(pid: u32, start: Option<&str>) -> bool {
    process_alive(pid)
        && is_zombie(pid) != Some(true)
        && start.is_none_or(|s| start_time(pid).as_deref() == Some(s))
}

/// A one-line description of a process for error messages: on Linux its
/// `/proc/<pid>/stat` head (`pid (comm) state ppid pgrp`), its parent's
/// command line and the parent's state and signal masks; else the pid.
pub fn describe(pid: u32) -> String {
    let Some(st) = Stat::of(pid) else {
        return format!("pid {pid}");
    };
    let p = st.ppid;
    let parent = std::fs::read_to_string(format!("/proc/{p}/cmdline"))
        .map(|c| c.replace('\0', " "))
        .unwrap_or_default();
    let sig = std::fs::read_to_string(format!("/proc/{p}/status"))
        .map(|status| {
            status
                .lines()
                .filter(|l| l.starts_with("Sig") || l.starts_with("State"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    format!(
        "{} ({}) {} {} {}; parent: {} [{sig}]",
        st.pid,
        st.comm,
        st.state,
        st.ppid,
        st.pgrp,
        parent.trim()
    )
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
    fn a_stat_line_is_parsed_past_a_comm_with_spaces_and_parentheses() {
        // A line as Linux writes it for a process named "a) (b c" (the
        // fields past the start time cut).
        let line = "4242 (a) (b c) S 4200 4242 4200 34816 4242 4194304 1101 0 0 0 \
                    3 1 0 0 20 0 1 0 987654 8192000 900\n";
        assert_eq!(
            Stat::parse(line),
            Some(Stat {
                pid: 4242,
                comm: "a) (b c".into(),
                state: 'S',
                ppid: 4200,
                pgrp: 4242,
                start_time: "987654".into(),
            })
        );
        let zombie = line.replace(") S ", ") Z ");
        assert!(Stat::parse(&zombie).unwrap().is_zombie());
        assert_eq!(Stat::parse("4242 (x) S 1"), None, "cut short");
        assert_eq!(Stat::parse(""), None);
    }

    #[test]
    fn this_process_reads_as_itself() {
        let me = std::process::id();
        let st = Stat::of(me).expect("/proc is there on unix test hosts");
        // SAFETY: getppid and getpgrp take no arguments and cannot fail.
        let (ppid, pgrp) = unsafe { (libc::getppid(), libc::getpgrp()) };
        assert_eq!((st.pid, st.ppid as i32, st.pgrp), (me, ppid, pgrp));
        assert_eq!(is_zombie(me), Some(false));
        assert_eq!(start_time(me), Some(st.start_time.clone()));
        assert!(
            all_processes()
                .iter()
                .any(|p| (p.pid, &p.start_time) == (me, &st.start_time)),
            "in the table too"
        );
        assert!(describe(me).starts_with(&format!("{me} ({}) ", st.comm)));
    }

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
