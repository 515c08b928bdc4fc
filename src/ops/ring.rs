//! Ringing a teammate on another machine (DESIGN §13, issue 26 item 4).
//!
//! A doorbell is a FIFO, and a FIFO is of one kernel: a ring written here
//! wakes nothing on another machine, even when the team root is shared. So
//! a member whose roster entry names a host (`swarmHost`) is rung through
//! that host: `<its swarm> --home <its root> --team T ring M...` over the
//! host's shared ssh connection (the ControlMaster `hosts::ssh_of`
//! keeps), which rings the FIFOs there (`swarm ring`).
//!
//! Rings are batched per host, the way inbox writes are group-committed:
//! one ssh call is in flight per host and process at a time, and every
//! member rung meanwhile goes in the next call (a broadcast to 8 teammates
//! on one host is one or two calls, not 8). A host whose call failed is not
//! rung again for [`REST`] (its runtimes look themselves every `poll`, so
//! nothing waits longer than that bound; a partitioned host costs no sender
//! a deadline per ring). A short-lived command waits for its rings before
//! it exits ([`flush`], at most the host's timeout).
//!
//! Only this machine (the lead's) rings over ssh; a sender on another
//! machine rings there (a teammate of its own host), and a write it makes
//! for anyone else is found by the team watcher or the recipient's own
//! looks. The team's hosts come from `<state>/hosts.json` (`swarm up`
//! writes it): a team without hosts pays one failed `stat` per ring.

use crate::hosts::HostSpec;
use crate::paths::Root;
use crate::team::Team;
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// How long a host whose ring failed is not rung again.
pub const REST: Duration = Duration::from_secs(10);

/// Makes `Mailbox::ring` ring members on other machines through their
/// host (called once by the binary at its start).
pub fn install() {
    crate::mailbox::ring_far_with(ring_far);
}

/// One host of one team, as this process rings it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    root: PathBuf,
    team: String,
    host: String,
}

#[derive(Debug, Default)]
struct Line {
    /// Members to ring in the next call.
    waiting: BTreeSet<String>,
    /// A call is in flight (its thread takes `waiting` when it returns).
    busy: bool,
    /// Not rung until then: its last call failed.
    resting_until: Option<Instant>,
    /// The host's timeout (what [`flush`] waits at most).
    timeout: Duration,
}

struct Rings {
    lines: Mutex<HashMap<Key, Line>>,
    done: Condvar,
}

fn rings() -> &'static Rings {
    static RINGS: OnceLock<Rings> = OnceLock::new();
    RINGS.get_or_init(|| Rings {
        lines: Mutex::new(HashMap::new()),
        done: Condvar::new(),
    })
}

/// `true` when `member` of `team` runs on another machine and its ring
/// went (or will go) through its host; `false` to ring it here.
fn ring_far(root: &Root, team: &str, member: &str) -> bool {
    if crate::teammate::wake::this_host().is_some() {
        // A sender on another machine rings its own host's FIFOs.
        return false;
    }
    match host_of(root, team, member) {
        Some(host) => {
            queue(root, team, host, member);
            true
        }
        None => false,
    }
}

/// The host `member` runs on, if the team has hosts and its roster entry
/// names one of them.
fn host_of(root: &Root, team: &str, member: &str) -> Option<HostSpec> {
    let record = root.hosts_record(team).ok()?;
    if std::fs::symlink_metadata(&record).is_err() {
        return None;
    }
    let roster = crate::dropped::ignore(
        Team::new(root, team).roster().read(),
        "reading the roster to ring",
    )?;
    let host = roster.member(member)?.host()?.to_owned();
    let hosts = crate::dropped::ignore(
        crate::hosts::recorded(root, team),
        "reading the team's hosts",
    )?;
    let spec = hosts.into_iter().find(|h| h.name == host);
    if spec.is_none() {
        tracing::warn!(%member, %host, "a member's host is not among the team's hosts; rung here only");
    }
    spec
}

fn queue(root: &Root, team: &str, host: HostSpec, member: &str) {
    let key = Key {
        root: root.dir().to_path_buf(),
        team: team.to_owned(),
        host: host.name.clone(),
    };
    let r = rings();
    let mut lines = r.lines.lock().unwrap_or_else(PoisonError::into_inner);
    let line = lines.entry(key.clone()).or_default();
    if line.resting_until.is_some_and(|t| Instant::now() < t) {
        tracing::debug!(%member, host = %host.name, "not rung: its host did not answer the last ring");
        return;
    }
    if let Some((_, why)) = root
        .away_dir(team)
        .ok()
        .and_then(|d| swarm_backends::hosted::noted_away(&d, &host.name, host.timeout()))
    {
        // The lead found it not answering a moment ago: a ring would only
        // pay its deadline. Its runtimes look themselves meanwhile.
        tracing::debug!(%member, host = %host.name, %why, "not rung: its host is noted away");
        return;
    }
    line.resting_until = None;
    line.timeout = host.timeout();
    line.waiting.insert(member.to_owned());
    if line.busy {
        return;
    }
    line.busy = true;
    let root = root.clone();
    let mine = key.clone();
    let spawned = std::thread::Builder::new()
        .name("ring-far".into())
        .spawn(move || ring_line(&mine, &root, &host));
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start a thread to ring a host; its runtimes look themselves");
        if let Some(line) = lines.get_mut(&key) {
            line.busy = false;
            line.waiting.clear();
        }
    }
}

/// Rings what waits for `key`'s host, call after call, until nothing does.
fn ring_line(key: &Key, root: &Root, host: &HostSpec) {
    let r = rings();
    loop {
        let members: Vec<String> = {
            let mut lines = r.lines.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(line) = lines.get_mut(key) else {
                return;
            };
            if line.waiting.is_empty() {
                line.busy = false;
                r.done.notify_all();
                return;
            }
            std::mem::take(&mut line.waiting).into_iter().collect()
        };
        if let Err(why) = ring_there(root, &key.team, host, &members) {
            tracing::warn!(
                host = %host.name, members = ?members, %why,
                "could not ring teammates on another machine; they look themselves every {} s, and it is not rung for {} s",
                host.poll_every().as_secs_f64(),
                REST.as_secs()
            );
            let mut lines = r.lines.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(line) = lines.get_mut(key) {
                line.resting_until = Some(Instant::now() + REST);
                line.waiting.clear();
            }
        }
    }
}

/// One `swarm ring` on `host` for `members`.
fn ring_there(root: &Root, team: &str, host: &HostSpec, members: &[String]) -> Result<(), String> {
    let ssh = crate::hosts::ssh_of(root, host).map_err(|e| format!("{e:#}"))?;
    let mut argv = vec![
        host.swarm().to_string(),
        "--home".to_string(),
        host.root.display().to_string(),
        "--team".to_string(),
        team.to_string(),
        "ring".to_string(),
        "--".to_string(),
    ];
    argv.extend(members.iter().cloned());
    match ssh.output_blocking(&argv) {
        Ok(o) if o.success() => Ok(()),
        Ok(o) => Err(super::hosts::last_line(&o)),
        Err(e) => Err(super::hosts::unreachable(&e)),
    }
}

/// Waits until every ring this process queued was made (or failed), at
/// most the longest timeout of the hosts rung: a short-lived command calls
/// it before it exits, so its ring is not lost with it.
pub fn flush() {
    let r = rings();
    let mut lines = r.lines.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(longest) = lines.values().filter(|l| l.busy).map(|l| l.timeout).max() else {
        return;
    };
    // The call's own deadline, and a little for its thread to record it.
    let deadline = Instant::now() + longest + Duration::from_secs(1);
    while lines.values().any(|l| l.busy) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            tracing::warn!(
                "a ring to another machine did not finish in time; its runtime looks itself"
            );
            return;
        }
        lines = r
            .done
            .wait_timeout(lines, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
