//! A member's status, derived in one place from the facts every reader has
//! (the roster record, its pane's liveness, the task board, its mail, and
//! — in the lead — requests and shutdowns in flight), and the one rule of
//! who `prune` takes. `swarm status`, `swarm prune`, the TeamsDialog and
//! the lead's plain view all call [`MemberStatus::of`] and
//! [`MemberStatus::prunable`].

use std::time::Duration;

/// Where a teammate's process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberStatus {
    /// Working on something.
    Running,
    /// Alive, waiting for work.
    Idle,
    /// Blocked on a plan or permission request to the lead.
    WaitingForApproval,
    /// A shutdown was requested `since` ago.
    Stopping { since: Duration },
    /// Its process ended.
    Dead { exit_code: Option<i32> },
}

/// Liveness of a member's pane as its reader saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaneSeen {
    /// Not looked at (a reader without the backend) or not yet known.
    Unknown,
    Running,
    /// Ended (`None`: by a signal, or it vanished) or no longer swarm's.
    Dead(Option<i32>),
}

/// The facts a member's status is derived from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The roster's record of its end (`swarmExit`): its exit code.
    pub recorded_exit: Option<Option<i32>>,
    pub pane: PaneSeen,
    /// `isActive` on the roster: in a turn.
    pub active: bool,
    /// It owns a task in progress.
    pub has_task: bool,
    /// A plan or permission request of its waits for the lead.
    pub waiting: bool,
    /// A shutdown was requested this long ago.
    pub stopping: Option<Duration>,
}

impl MemberStatus {
    /// The one rule: dead (recorded, or its pane seen dead) > stopping >
    /// waiting for approval > running (in a turn, or owning a task in
    /// progress) > idle.
    pub fn of(f: &Facts) -> Self {
        match (f.recorded_exit, f.pane, f.stopping) {
            (Some(code), _, _) => MemberStatus::Dead { exit_code: code },
            (_, PaneSeen::Dead(code), _) => MemberStatus::Dead { exit_code: code },
            (_, _, Some(since)) => MemberStatus::Stopping { since },
            _ if f.waiting => MemberStatus::WaitingForApproval,
            _ if f.active || f.has_task => MemberStatus::Running,
            _ => MemberStatus::Idle,
        }
    }

    /// Its process still runs (anything but dead).
    pub fn is_alive(&self) -> bool {
        !matches!(self, MemberStatus::Dead { .. })
    }

    /// Whether `prune` takes it: idle (so alive, not stopping, not waiting
    /// for an approval, not in a turn), no task in progress, no unread mail.
    pub fn prunable(&self, has_task: bool, unread: usize) -> bool {
        *self == MemberStatus::Idle && !has_task && unread == 0
    }
}

/// The exit code the roster records for `m` (`swarmExit.code`), if it
/// records an end at all. A record that does not read as one
/// ([`Member::exit`](super::Member::exit)'s error, logged) still says the
/// pane ended, its code unknown: a status must not show a dead member
/// alive because its record is damaged.
pub fn recorded_exit(m: &super::Member) -> Option<Option<i32>> {
    match m.exit() {
        Ok(exit) => exit.map(|e| e.code),
        Err(e) => {
            tracing::warn!("{e}");
            Some(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle() -> Facts {
        Facts {
            recorded_exit: None,
            pane: PaneSeen::Running,
            active: false,
            has_task: false,
            waiting: false,
            stopping: None,
        }
    }

    #[test]
    fn the_status_rule_orders_dead_stopping_waiting_running_idle() {
        assert_eq!(MemberStatus::of(&idle()), MemberStatus::Idle);
        let f = Facts {
            has_task: true,
            ..idle()
        };
        assert_eq!(MemberStatus::of(&f), MemberStatus::Running);
        let f = Facts { waiting: true, ..f };
        assert_eq!(MemberStatus::of(&f), MemberStatus::WaitingForApproval);
        let since = Duration::from_secs(2);
        let f = Facts {
            stopping: Some(since),
            ..f
        };
        assert_eq!(MemberStatus::of(&f), MemberStatus::Stopping { since });
        let f = Facts {
            pane: PaneSeen::Dead(Some(3)),
            ..f
        };
        assert_eq!(
            MemberStatus::of(&f),
            MemberStatus::Dead { exit_code: Some(3) }
        );
        let f = Facts {
            recorded_exit: Some(None),
            pane: PaneSeen::Running,
            ..idle()
        };
        assert_eq!(MemberStatus::of(&f), MemberStatus::Dead { exit_code: None });
    }

    #[test]
    fn prune_takes_only_the_idle_with_nothing_owed() {
        let idle_status = MemberStatus::of(&idle());
        assert!(idle_status.prunable(false, 0));
        assert!(!idle_status.prunable(true, 0));
        assert!(!idle_status.prunable(false, 1));
        for f in [
            Facts {
                waiting: true,
                ..idle()
            },
            Facts {
                stopping: Some(Duration::ZERO),
                ..idle()
            },
            Facts {
                active: true,
                ..idle()
            },
            Facts {
                pane: PaneSeen::Dead(None),
                ..idle()
            },
        ] {
            assert!(!MemberStatus::of(&f).prunable(false, 0), "{f:?}");
        }
    }
}
