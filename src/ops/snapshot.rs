//! [`TeamSnapshot`]: everything a front end shows about a team, derived
//! once, from the files plus one backend status call: each member (status
//! by the one rule of `team::status`, current task, unread mail, what
//! needs the user, how its task goes, its worktree), the lead, the task
//! counts and the requests waiting for an answer ([`super::requests`]).
//! `swarm status` prints it, `team_status` over MCP returns it as JSON, so
//! the two always agree.

use super::TeamOps;
use super::board::TaskRef;
use super::requests::{PendingRequest, RequestKind};
use crate::tasks::{BoardView, Status, Task};
use crate::team::status::{
    Attention, ByOwner, Facts, MemberStatus, PaneSeen, Progress, recorded_exit,
};
use crate::team::{Member, Team};
use anyhow::Result;
use serde::Serialize;
use serde_json::Value;
use std::path::PathBuf;
use swarm_backends::{BackendKind, PaneStatus};

/// The team as it is now.
#[derive(Debug, Clone, Serialize)]
pub struct TeamSnapshot {
    pub team: String,
    pub root: PathBuf,
    /// swarm did not start this team (see `team::owner`): it is read and
    /// sent to, nothing else.
    pub foreign: bool,
    pub lead: LeadSnapshot,
    /// The team's pane backend, as its session record says.
    pub backend: Option<&'static str>,
    #[serde(rename = "tmuxSession")]
    pub tmux_session: Option<String>,
    #[serde(rename = "tmuxSocket")]
    pub tmux_socket: Option<PathBuf>,
    /// Every member, the lead first (its status is `null`).
    pub members: Vec<MemberSnapshot>,
    pub tasks: TaskCounts,
    /// Requests with no answer yet, oldest first.
    pub requests: Vec<PendingRequest>,
    /// What went wrong reading the team (a file set aside), one line each.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// The team's lead.
#[derive(Debug, Clone, Serialize)]
pub struct LeadSnapshot {
    /// A lead process runs.
    pub alive: bool,
    pub pid: Option<u32>,
    /// The coding agent that leads the team, if one does (the member
    /// named `lead`), and how.
    pub ai: Option<AiLeadSnapshot>,
}

/// The team's AI lead.
#[derive(Debug, Clone, Serialize)]
pub struct AiLeadSnapshot {
    pub name: String,
    pub agent: Option<String>,
    pub mode: crate::team::LeadMode,
    pub approves: bool,
}

/// One member.
#[derive(Debug, Clone, Serialize)]
pub struct MemberSnapshot {
    pub name: String,
    #[serde(rename = "agentId")]
    pub agent_id: String,
    /// The agent it runs (`shell`, `claude`, …); `null` for the lead and
    /// for members swarm did not spawn.
    pub agent: Option<String>,
    pub color: Option<String>,
    /// `running`, `idle`, `waiting approval`, `stopping 4s`, `dead (exit
    /// 3)`, …; `null` for the lead.
    pub status: Option<String>,
    /// Its process runs (anything but dead); `null` for the lead.
    pub alive: Option<bool>,
    /// Its pane id (`null`: none yet).
    pub pane: Option<String>,
    /// The roster's `tmuxPaneId`, as written.
    #[serde(rename = "paneId")]
    pub pane_id: String,
    #[serde(rename = "backendType")]
    pub backend_type: Option<String>,
    /// The machine its pane runs on: `local`, or one of the team's hosts
    /// (DESIGN §13); `null` for the lead.
    pub host: Option<String>,
    #[serde(rename = "isActive")]
    pub is_active: Option<bool>,
    pub mode: Option<String>,
    pub model: Option<String>,
    /// Its task in progress.
    pub task: Option<TaskRef>,
    pub unread: usize,
    /// What needs the user (`needs approval`, `task #3 failed`, `dead`).
    pub attention: Option<String>,
    pub progress: Option<ProgressSnapshot>,
    /// Its worktree's branch and progress, `null` without one.
    pub worktree: Value,
    #[serde(skip)]
    pub state: Option<MemberStatus>,
}

/// How a running task goes.
#[derive(Debug, Clone, Serialize)]
pub struct ProgressSnapshot {
    #[serde(rename = "elapsedSecs")]
    pub elapsed_secs: Option<u64>,
    #[serde(rename = "lastLine")]
    pub last_line: Option<String>,
}

/// The board in numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TaskCounts {
    pub total: usize,
    pub completed: usize,
    pub in_progress: usize,
    pub pending: usize,
}

impl TaskCounts {
    /// Of the statuses of every task.
    pub fn of(statuses: impl Iterator<Item = Status>) -> TaskCounts {
        let mut counts = TaskCounts::default();
        for s in statuses {
            counts.total += 1;
            *match s {
                Status::Completed => &mut counts.completed,
                Status::InProgress => &mut counts.in_progress,
                Status::Pending => &mut counts.pending,
            } += 1;
        }
        counts
    }
}

impl TeamOps {
    /// The team as it is now: the files read once, the backend asked once
    /// about every pane (when it can be reached from here; otherwise the
    /// roster's records decide).
    pub async fn snapshot(&self) -> Result<TeamSnapshot> {
        let team = self.team().clone();
        let (roster, repaired) = {
            let t = team.clone();
            self.blocking(move |_| Ok(t.roster().load()?)).await?
        };
        let mut warnings = Vec::new();
        if let Some(r) = repaired {
            warnings.push(format!(
                "config.json of team {} was unreadable; copied to {} and rebuilt with {} member(s)",
                team.name,
                r.quarantined.display(),
                r.rebuilt_members
            ));
        }
        let members = roster.members.clone();
        let foreign = !team.ownership().is_swarm();
        // The files and the panes at once: at 10,000 tasks the board's look
        // takes as long as asking tmux for its panes.
        let files = {
            let members = members.clone();
            self.blocking(move |team| Files::read(&team, &members))
        };
        let panes = async {
            if foreign {
                self.panes_watched(&members).await
            } else {
                self.pane_seen(&members).await
            }
        };
        let (files, panes) = tokio::join!(files, panes);
        let mut files = files?;
        warnings.extend(files.warnings.iter().cloned());
        let requests = files.requests.clone();
        let record =
            crate::session::SessionRecord::load(&team.root, &team.name).unwrap_or_else(|e| {
                warnings.push(format!(
                    "{e:#}; the team's backend and tmux server not shown"
                ));
                Default::default()
            });
        // A team swarm did not start has its own lead: alive by Claude
        // Code's rule on the roster's `leadProcess`.
        let lead_pid = if foreign {
            roster
                .lead_process
                .as_ref()
                .and_then(crate::team::locks::lead_process_alive)
        } else {
            crate::dropped::ignore(
                crate::team::locks::lead_pid_alive(&team),
                "reading the lead's pid",
            )
            .flatten()
        };
        // Claude Code's in-process teammates live inside its lead.
        let panes: Vec<PaneSeen> = members
            .iter()
            .zip(panes)
            .map(|(m, p)| match (foreign, m.backend_type.as_deref()) {
                (true, Some("in-process")) if !m.is_lead() => match lead_pid {
                    Some(_) => PaneSeen::Running,
                    None => PaneSeen::Dead(None),
                },
                _ => p,
            })
            .collect();
        // Of the whole board only the open tasks with an owner are decoded:
        // all that the orphan rules and the owners' index look at.
        let mut owned = files.tasks.owned_open();
        if !foreign {
            for now in self
                .return_orphans_seen(&roster, &members, &panes, &owned)
                .await?
            {
                if let Some(t) = owned.iter_mut().find(|t| t.id == now.id) {
                    *t = now.clone();
                }
                files.tasks.replace(now);
            }
        }
        let board = ByOwner::of(&owned);
        let stall_after = crate::team::status::stall_after(&roster);
        let ms = members
            .iter()
            .zip(files.unread)
            .zip(panes)
            .map(|((m, unread), pane)| {
                member(&team, m, unread, pane, &board, &requests, stall_after)
            })
            .collect();
        Ok(TeamSnapshot {
            team: roster.name.clone(),
            root: team.root.dir().to_path_buf(),
            foreign,
            lead: LeadSnapshot {
                alive: lead_pid.is_some(),
                pid: lead_pid.filter(|p| *p != 0),
                ai: members
                    .iter()
                    .find(|m| m.is_ai_lead())
                    .map(|m| AiLeadSnapshot {
                        name: m.name.clone(),
                        agent: m.agent().map(str::to_string),
                        mode: m
                            .ai_lead()
                            .ok()
                            .flatten()
                            .map(|a| a.mode)
                            .unwrap_or_default(),
                        approves: m.ai_lead().ok().flatten().is_some_and(|a| a.approves),
                    }),
            },
            backend: record.backend.map(BackendKind::as_str),
            tmux_session: record.session,
            tmux_socket: record.tmux_socket,
            members: ms,
            tasks: TaskCounts::of(files.tasks.iter().map(|t| t.status())),
            requests,
            warnings,
        })
    }

    /// With no lead running nobody else gives a dead owner's tasks back
    /// (`team::orphans`): those of owners provably dead by the roster and
    /// the panes just looked at go back to the board. Of the open `tasks`
    /// with an owner, returns those given back, as they now are.
    async fn return_orphans_seen(
        &self,
        roster: &crate::team::TeamFile,
        members: &[Member],
        panes: &[PaneSeen],
        tasks: &[Task],
    ) -> Result<Vec<Task>> {
        let dead = crate::team::orphans::dead_owners(roster, tasks, |asked| {
            Some(
                asked
                    .iter()
                    .map(|a| {
                        members
                            .iter()
                            .zip(panes)
                            .any(|(m, p)| m.name == a.name && matches!(p, PaneSeen::Dead(_)))
                    })
                    .collect(),
            )
        });
        if dead.is_empty() {
            return Ok(Vec::new());
        }
        let theirs: Vec<Task> = tasks
            .iter()
            .filter(|t| t.owner.as_ref().is_some_and(|o| dead.contains_key(o)))
            .cloned()
            .collect();
        let returned = self
            .blocking(move |team| team.give_back(&theirs, &dead))
            .await?;
        Ok(returned.into_iter().map(|r| r.task).collect())
    }

    /// How each member's pane is, in a team swarm did not start: its pane
    /// (the roster's `tmuxPaneId`, on the server the location names)
    /// looked at by id, marks ignored, read-only; unknown where the backend
    /// cannot be reached or cannot look.
    async fn panes_watched(&self, members: &[Member]) -> Vec<PaneSeen> {
        let ids: Vec<swarm_backends::PaneId> = members
            .iter()
            .map(|m| swarm_backends::PaneId::new(m.tmux_pane_id.clone()))
            .collect();
        let looked = match self.session_if_reachable() {
            Some(s) => {
                crate::dropped::ignore(s.backend.observe(&ids).await, "looking at the panes")
            }
            None => None,
        };
        members
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let pane = m.tmux_pane_id.as_str();
                if m.is_lead() || pane.is_empty() || pane == "leader" {
                    return PaneSeen::Unknown;
                }
                match looked.as_ref().map(|l| l[i].1) {
                    Some(PaneStatus::Running { .. }) => PaneSeen::Running,
                    Some(PaneStatus::Exited { code }) => PaneSeen::Dead(code),
                    Some(PaneStatus::Gone) => PaneSeen::Dead(None),
                    _ => PaneSeen::Unknown,
                }
            })
            .collect()
    }

    /// How each member's pane is, in order: one backend call when the
    /// team's backend can be reached from here and its panes outlive their
    /// lead; otherwise unknown (in-process panes are dead once no lead
    /// runs).
    async fn pane_seen(&self, members: &[Member]) -> Vec<PaneSeen> {
        let looked = match self.session_if_reachable() {
            Some(s) if s.caps().panes_outlive_lead => crate::dropped::ignore(
                super::panes::pane_statuses(&s, members).await,
                "looking up the members' panes",
            ),
            _ => None,
        };
        let hosted = self.session_if_reachable().and_then(|s| s.hosted.clone());
        let away = |m: &Member| {
            let host = m.host()?;
            hosted.as_ref()?.unreachable(host)
        };
        let seen: Vec<PaneSeen> = match looked {
            Some(got) => got
                .into_iter()
                .zip(members)
                .map(|(p, m)| match p {
                    _ if away(m).is_some() => PaneSeen::Unreachable,
                    PaneStatus::Running { .. } => PaneSeen::Running,
                    PaneStatus::Exited { code } => PaneSeen::Dead(code),
                    PaneStatus::Gone | PaneStatus::Foreign => PaneSeen::Dead(None),
                })
                .collect(),
            None => {
                let lead_gone = crate::dropped::ignore(
                    crate::team::locks::lead_pid_alive(self.team()),
                    "reading the lead's pid",
                )
                .flatten()
                .is_none();
                members
                    .iter()
                    .map(|m| {
                        if lead_gone && m.backend_kind() == Some(BackendKind::InProcess) {
                            PaneSeen::Dead(None)
                        } else {
                            PaneSeen::Unknown
                        }
                    })
                    .collect()
            }
        };
        // A member with no pane yet is being spawned: not dead.
        members
            .iter()
            .zip(seen)
            .map(|(m, pane)| {
                if m.tmux_pane_id.is_empty() && pane == PaneSeen::Dead(None) {
                    PaneSeen::Unknown
                } else {
                    pane
                }
            })
            .collect()
    }
}

/// What the snapshot reads from the files besides the roster.
struct Files {
    tasks: BoardView,
    unread: Vec<usize>,
    requests: Vec<PendingRequest>,
    warnings: Vec<String>,
}

impl Files {
    fn read(team: &Team, members: &[Member]) -> Result<Files> {
        let mut warnings = Vec::new();
        let mailbox = team.mailbox();
        let mut unread = Vec::with_capacity(members.len());
        for m in members {
            let read = mailbox.read(&m.name)?;
            if let Some(q) = &read.quarantined {
                warnings.push(format!(
                    "inbox of {} was corrupt; copied to {}",
                    m.name,
                    q.display()
                ));
            }
            unread.push(read.entries.iter().filter(|e| e.is_unread()).count());
        }
        let list = team.tasks().glance()?;
        for q in &list.quarantined {
            warnings.push(format!("a corrupt task file was copied to {}", q.display()));
        }
        let requests = super::requests::pending(team).unwrap_or_else(|e| {
            warnings.push(format!(
                "cannot tell who waits for approval ({e:#}); not shown"
            ));
            Vec::new()
        });
        Ok(Files {
            tasks: list,
            unread,
            requests,
            warnings,
        })
    }
}

/// One member's snapshot, by the rules of `team::status`.
fn member(
    team: &Team,
    m: &Member,
    unread: usize,
    pane: PaneSeen,
    board: &ByOwner,
    requests: &[PendingRequest],
    stall_after: std::time::Duration,
) -> MemberSnapshot {
    let state = (!m.is_lead()).then(|| {
        MemberStatus::of(&Facts {
            never_started: crate::team::status::never_started(m),
            recorded_exit: recorded_exit(m),
            pane,
            active: m.is_active == Some(true),
            has_task: board.current(&m.name).is_some(),
            waiting: requests.iter().any(|r| r.for_lead() && r.from == m.name),
            stopping: requests
                .iter()
                .find(|r| r.kind == RequestKind::Shutdown && r.to == m.name)
                .map(|r| r.age().unwrap_or_default()),
        })
    });
    let progress = state
        .as_ref()
        .and_then(|_| Progress::of(team, &m.name, board));
    let attention = state.as_ref().and_then(|s| {
        Attention::of(s, &m.name, board)
            .or_else(|| Attention::stalled(s, progress.as_ref()?, stall_after))
    });
    let progress = progress.map(|p| ProgressSnapshot {
        elapsed_secs: p.elapsed.map(|e| e.as_secs()),
        last_line: p.last_line,
    });
    MemberSnapshot {
        host: (!m.is_lead()).then(|| m.host().unwrap_or(swarm_backends::host::LOCAL).to_string()),
        name: m.name.clone(),
        agent_id: m.agent_id.clone(),
        agent: m.agent_label().map(str::to_string),
        color: m.color.clone(),
        status: state.as_ref().map(MemberStatus::label),
        alive: state.as_ref().map(MemberStatus::is_alive),
        pane: Some(m.tmux_pane_id.clone()).filter(|p| !p.is_empty() && p != "leader"),
        pane_id: m.tmux_pane_id.clone(),
        backend_type: m.backend_type.clone(),
        is_active: m.is_active,
        mode: m.mode.clone(),
        model: m.model.clone(),
        task: board.current(&m.name).map(|t| TaskRef {
            id: t.id.clone(),
            subject: t.subject.clone(),
        }),
        unread,
        attention: attention
            .as_ref()
            .map(|a| match (a, m.exit().ok().flatten()) {
                // A teammate that ended says why, when it printed it.
                (Attention::Dead, Some(e)) if e.said.is_some() => {
                    format!("dead: {}", e.said.unwrap_or_default())
                }
                // A stalled one says what it last printed.
                (a @ Attention::Stalled { .. }, _) => {
                    match progress.as_ref().and_then(|p| p.last_line.as_deref()) {
                        Some(line) => format!("{}: {line}", a.label()),
                        None => a.label(),
                    }
                }
                (a, _) => a.label(),
            }),
        progress,
        worktree: crate::worktree::member_json(m),
        state,
    }
}
