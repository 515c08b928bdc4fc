//! The tmux backend's looks at its panes' processes and its signals to
//! them, on the machine the server runs on: here through [`crate::process`],
//! on another host through [`crate::host::SshHost`] (its `/proc`, its
//! `kill`), never mixed: a remote pane's pid is never read or signalled
//! here, where the same number names some other process.

use std::time::Duration;

use super::TmuxBackend;
use crate::process::{self, LadderOutcome};

/// How often a wait looks again at another host's processes (each look is
/// an ssh call over the shared connection).
const REMOTE_POLL: Duration = Duration::from_millis(100);

impl TmuxBackend {
    /// How often a wait looks again.
    pub(super) fn poll(&self) -> Duration {
        if self.host.is_some() {
            REMOTE_POLL
        } else {
            process::POLL
        }
    }

    /// The process group of `pid`; `None` when it is gone (there: or a
    /// zombie); an error when the host cannot be asked.
    pub(super) async fn group_of(&self, pid: u32) -> crate::Result<Option<i32>> {
        match &self.host {
            None => Ok(process::process_group(pid)),
            Some(h) => Ok(h
                .stats(&[pid])
                .await?
                .into_iter()
                .next()
                .flatten()
                .filter(|s| !s.is_zombie())
                .map(|s| s.pgrp)),
        }
    }

    /// Whether `pid` still runs (here: any process, a zombie included, as
    /// `kill(pid, 0)` says; there: one that is not a zombie). A host that
    /// cannot be asked counts it as running: nothing is taken for gone
    /// that was not seen gone.
    pub(super) async fn alive(&self, pid: u32) -> bool {
        match &self.host {
            None => process::process_alive(pid),
            Some(h) => match h.stats(&[pid]).await {
                Ok(s) => s
                    .into_iter()
                    .next()
                    .flatten()
                    .is_some_and(|s| !s.is_zombie()),
                Err(_) => true,
            },
        }
    }

    /// Whether `pid` is a zombie (`None`: no such process, or unknown).
    pub(super) async fn zombie(&self, pid: u32) -> Option<bool> {
        match &self.host {
            None => process::is_zombie(pid),
            Some(h) => h
                .stats(&[pid])
                .await
                .ok()?
                .into_iter()
                .next()
                .flatten()
                .map(|s| s.is_zombie()),
        }
    }

    /// Whether group `pgid` has a process (there: one not a zombie). A
    /// host that cannot be asked counts it as alive.
    pub(super) async fn group_alive(&self, pgid: i32) -> bool {
        match &self.host {
            None => process::group_alive(pgid),
            Some(h) => h
                .groups_alive(&[pgid])
                .await
                .map_or(true, |a| a.first().copied().unwrap_or(true)),
        }
    }

    /// The signal ladder on `pgids` (their pane processes `pids`, for the
    /// server to reap here), one result per group. There, the whole ladder
    /// is one ssh call; a host that cannot be reached fails every group.
    pub(super) async fn ladder(
        &self,
        pgids: &[i32],
        pids: &[u32],
        grace: Duration,
    ) -> Vec<Result<LadderOutcome, String>> {
        let settle = Duration::from_secs(2);
        match &self.host {
            None => {
                process::terminate_groups(pgids, grace, settle, || async {
                    self.reap_lost_children(pids).await;
                })
                .await
            }
            Some(h) => match h.terminate_groups(pgids, grace, settle).await {
                Ok(out) => out,
                Err(e) => pgids
                    .iter()
                    .map(|g| Err(format!("the ladder on {} for group {g}: {e}", h.name)))
                    .collect(),
            },
        }
    }

    /// A process for an error message.
    pub(super) async fn describe(&self, pid: u32) -> String {
        match &self.host {
            None => process::describe(pid),
            Some(h) => match h.stats(&[pid]).await {
                Ok(s) => match s.into_iter().next().flatten() {
                    Some(s) => format!(
                        "{} ({}) {} {} {} on {}",
                        s.pid, s.comm, s.state, s.ppid, s.pgrp, h.name
                    ),
                    None => format!("pid {pid} on {}: gone", h.name),
                },
                Err(e) => format!("pid {pid} on {}: not readable ({e})", h.name),
            },
        }
    }
}
