//! Recording a burst's panes on the roster while more open: one roster
//! write at a time, off the async thread, and not one a pane.

use crate::team::{SwarmField, Team};
use anyhow::{Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swarm_backends::PaneId;

/// One opened pane to record: member, pane, pid, where it went apart.
type Registered = (String, PaneId, Option<u32>, Option<String>);

/// How often at most a burst of spawns writes the roster. Each write is the
/// whole roster made durable (60 KB at 100 members): one a pane (95 for an
/// `up` of 100, a pane opening every ~25 ms) took as much CPU as the panes'
/// tmux clients. A pane waits at most this long, plus a write, to be on the
/// roster; until then its reservation (with the nonce its pane carries)
/// lets an interrupted burst's pane be recognised and adopted.
const REGISTER_EVERY: Duration = Duration::from_millis(100);
/// The first panes of a burst are written as they open, as a small team's
/// always were (a pane on the roster at once); past them, every
/// [`REGISTER_EVERY`].
const REGISTER_AT_ONCE: usize = 8;

/// Records spawned panes on the roster: one write at a time, off the async
/// thread, at most one every [`REGISTER_EVERY`], each taking every pane that
/// opened since the previous write began; [`Registrar::finish`] writes the
/// rest.
pub(super) struct Registrar {
    roster: crate::team::Roster,
    socket: Option<PathBuf>,
    pending: Vec<Registered>,
    writing: Option<tokio::task::JoinHandle<Result<()>>>,
    /// When the last write began.
    began: Option<Instant>,
    /// [`REGISTER_EVERY`] (tests set another).
    every: Duration,
    /// Panes queued so far, and [`REGISTER_AT_ONCE`] (tests set another).
    added: usize,
    at_once: usize,
}

impl Registrar {
    pub(super) fn new(team: &Team, socket: Option<PathBuf>) -> Self {
        Self {
            roster: team.roster(),
            socket,
            pending: Vec::new(),
            writing: None,
            began: None,
            every: REGISTER_EVERY,
            added: 0,
            at_once: REGISTER_AT_ONCE,
        }
    }

    /// Queues a pane; starts a write unless one is running or, past the
    /// burst's first [`REGISTER_AT_ONCE`] panes, the last began less than
    /// [`REGISTER_EVERY`] ago. A finished write's failure is returned here.
    pub(super) async fn add(
        &mut self,
        name: &str,
        pane: &PaneId,
        pid: Option<u32>,
        apart: Option<String>,
    ) -> Result<()> {
        self.pending
            .push((name.to_string(), pane.clone(), pid, apart));
        self.added += 1;
        if let Some(w) = &self.writing {
            if !w.is_finished() {
                return Ok(());
            }
            if let Some(w) = self.writing.take() {
                w.await.context("recording pane ids")??;
            }
        }
        if self.added > self.at_once && self.began.is_some_and(|t| t.elapsed() < self.every) {
            return Ok(());
        }
        self.began = Some(Instant::now());
        let batch = std::mem::take(&mut self.pending);
        let (roster, socket) = (self.roster.clone(), self.socket.clone());
        self.writing = Some(tokio::task::spawn_blocking(move || {
            register(&roster, socket.as_deref(), &batch)
        }));
        Ok(())
    }

    /// Waits for the running write, then writes what is still queued.
    pub(super) async fn finish(&mut self) -> Result<()> {
        if let Some(w) = self.writing.take() {
            w.await.context("recording pane ids")??;
        }
        let batch = std::mem::take(&mut self.pending);
        if batch.is_empty() {
            return Ok(());
        }
        register(&self.roster, self.socket.as_deref(), &batch)
    }
}

/// One roster write recording each `(name, pane, pid)`. A test holds it
/// off (`SWARM_FAULT_REGISTER_LATE_MS`, see [`crate::logging::fault_delay`])
/// to have every pane of a burst recorded late, as a burst past
/// [`REGISTER_AT_ONCE`] has them.
fn register(
    roster: &crate::team::Roster,
    socket: Option<&Path>,
    batch: &[Registered],
) -> Result<()> {
    crate::logging::fault_delay("SWARM_FAULT_REGISTER_LATE_MS");
    let socket = socket
        .map(|s| Value::String(s.to_string_lossy().into_owned()))
        .unwrap_or(Value::Null);
    roster.update(|tf| {
        for (name, pane, pid, apart) in batch {
            let members = tf.member_names();
            let Some(m) = tf.member_mut(name) else {
                return Err(crate::team::RosterError::NoSuchMember {
                    team: tf.name.clone(),
                    name: name.clone(),
                    members,
                });
            };
            m.tmux_pane_id = pane.as_str().to_string();
            m.set_swarm_field(SwarmField::Pid, pid.map(Value::from).unwrap_or(Value::Null));
            let start = pid
                .and_then(swarm_backends::process::start_time)
                .map(Value::String)
                .unwrap_or(Value::Null);
            m.set_swarm_field(SwarmField::PidStart, start);
            m.set_swarm_field(SwarmField::TmuxSocket, socket.clone());
            m.set_swarm_field(
                SwarmField::Apart,
                apart.clone().map(Value::String).unwrap_or(Value::Null),
            );
        }
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Root;
    use crate::team::{Member, Roster};

    fn team_of(dir: &Path, n: usize) -> Team {
        let root = Root::new(dir.join("root"));
        Roster::new(&root, "t").create(None, "/").unwrap();
        let members = (0..n)
            .map(|i| Member::teammate("t", &format!("m{i}"), "blue", "/"))
            .collect();
        Roster::new(&root, "t").add_members(members).unwrap();
        Team::new(&root, "t")
    }

    fn registered(team: &Team) -> usize {
        let tf = team.roster().read().unwrap();
        tf.teammates()
            .filter(|m| !m.tmux_pane_id.is_empty())
            .count()
    }

    #[tokio::test]
    async fn panes_opening_within_the_interval_share_one_roster_write() {
        let dir = tempfile::tempdir().unwrap();
        let team = team_of(dir.path(), 10);
        let mut r = Registrar::new(&team, None);
        r.every = Duration::from_secs(3600);
        r.at_once = 1;
        r.add("m0", &PaneId::new("%0"), None, None).await.unwrap();
        // The first pane's write, then nine more panes while it is recent.
        if let Some(w) = r.writing.take() {
            w.await.unwrap().unwrap();
        }
        assert_eq!(registered(&team), 1);
        for i in 1..10 {
            let pane = PaneId::new(format!("%{i}"));
            r.add(&format!("m{i}"), &pane, None, None).await.unwrap();
        }
        assert!(r.writing.is_none(), "a second write within the interval");
        assert_eq!(r.pending.len(), 9);
        assert_eq!(registered(&team), 1);
        // The burst's end writes them all, at once.
        r.finish().await.unwrap();
        assert_eq!(registered(&team), 10);
        let tf = team.roster().read().unwrap();
        assert_eq!(tf.member("m7").unwrap().tmux_pane_id, "%7");
    }
}
