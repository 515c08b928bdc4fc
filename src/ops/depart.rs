//! Leaving the team, one path ([`leave`]) for every way a teammate goes:
//! `kill` (the forced ladder), `shutdown` (asked, then closed once it
//! approves), `prune` (every idle teammate), `down` (the whole team, then
//! the team itself) and a shutdown approved through the lead (the
//! supervisor's). Each ends the same way: the pane is closed and verified
//! gone (a pane no longer carrying the member's mark is never touched),
//! the member leaves the roster, its open tasks go back to the board and
//! its worktree is retired (removed when nothing in it is unmerged, else
//! kept and named, or with `down --force` saved on a branch first). Each
//! step is idempotent, so the lead and a `swarm` command racing on the
//! same member (the lead saw the approval, the command waited for it) both
//! finish cleanly.

use super::TeamOps;
pub use super::panes::{
    Closed, close_pane, close_panes, pane_status, pane_statuses, wait_for_exit, wait_for_exits,
};
use crate::mailbox::Entry;
use crate::names::LEAD_NAME;
use crate::protocol::{self, Message};
use crate::session::Session;
use crate::tasks::Task;
use crate::team::{Member, SwarmField, Team};
use anyhow::{Context, Result, bail};
use std::time::{Duration, Instant};
use swarm_backends::{BackendError, PaneStatus};

/// A member that left: what became of its tasks, pane and worktree.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Left {
    pub name: String,
    /// Its open tasks, back on the board.
    pub returned_tasks: Vec<super::board::TaskRef>,
    /// Its recorded pane was no longer swarm's and was left alone.
    pub pane_not_ours: Option<String>,
    /// What became of its worktree, one line (none without a worktree).
    pub worktree: Option<String>,
}

impl Left {
    fn of(name: &str, returned: &[Task]) -> Left {
        Left {
            name: name.to_string(),
            returned_tasks: returned
                .iter()
                .map(|t| super::board::TaskRef {
                    id: t.id.clone(),
                    subject: t.subject.clone(),
                })
                .collect(),
            pane_not_ours: None,
            worktree: None,
        }
    }
}

/// How a graceful shutdown ended.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ShutdownOutcome {
    Approved(Left),
    Rejected {
        reason: String,
    },
    /// No answer in time (and no `--force-after`): it keeps running.
    TimedOut,
    /// A team swarm did not start: swarm cannot sign as its lead, so its
    /// own lead was asked (a message to its inbox); nothing was stopped.
    Requested {
        to: String,
    },
    /// No answer in time (or it ended without one); closed.
    Killed(Left),
}

/// Why members leave, for [`leave`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaving {
    /// A teammate leaves a team that goes on (kill, shutdown, prune): it
    /// is remembered, to come back when a message is sent to it.
    Member,
    /// The whole team goes (`down`): its members are not remembered.
    TeamGoes {
        /// `down --force`: the work a worktree holds is saved on a branch
        /// before the worktree goes.
        save_work: bool,
        /// Every teammate went, so the team's files are deleted next: the
        /// roster, spools and runtime files are left to that deletion (a
        /// roster write and some forty unlinks in a `down` of 8, 3-4 ms).
        deleted: bool,
    },
}

/// The one end of every departure: the members' panes closed (each set in
/// one backend call, the ladder's SIGKILL after `grace`), the members off
/// the roster in one write (unless the team is deleted next) with their
/// open tasks back on the board, and their worktrees retired (when the
/// team goes with `down --force`, work a worktree holds is saved on a
/// branch before it goes); a teammate that leaves a team that goes on is
/// remembered (see [`Leaving`]). Members already off the roster are still
/// closed and retired (a lead and a command racing on one member). A name
/// back on the roster in another pane by then (a message revived it while
/// the lead was still releasing its approval) is left alone: only its old
/// pane is closed.
pub async fn leave(
    team: &Team,
    session: &Session,
    members: &[Member],
    grace: Duration,
    how: Leaving,
) -> Result<Vec<Left>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    let (save_work, deleted) = match how {
        Leaving::Member => (false, false),
        Leaving::TeamGoes { save_work, deleted } => (save_work, deleted),
    };
    let closed = close_panes(session, members, grace).await?;
    let (t, gone) = (team.clone(), members.to_vec());
    let mut left = tokio::task::spawn_blocking(move || -> Result<Vec<Left>> {
        // A name that came back meanwhile (revived by a message, spawned
        // again) is another pane's now: it keeps its place, its tasks, its
        // files and its worktree. Seen first here, then again in the write.
        let before = t.roster().read()?;
        let mut replaced: Vec<String> = gone
            .iter()
            .filter(|g| before.member(&g.name).is_some_and(|m| !same_pane(m, g)))
            .map(|g| g.name.clone())
            .collect();
        if how == Leaving::Member {
            // Remembered: a message to it later brings it back, with its
            // conversation (`TeamOps::send_or_revive`).
            for m in gone.iter().filter(|g| !replaced.contains(&g.name)) {
                super::revive::remember(&t, m)?;
            }
        }
        if !deleted {
            let (_, late) = t.roster().update(|tf| {
                let late: Vec<String> = gone
                    .iter()
                    .filter(|g| tf.member(&g.name).is_some_and(|m| !same_pane(m, g)))
                    .map(|g| g.name.clone())
                    .collect();
                tf.members
                    .retain(|m| !gone.iter().any(|g| g.name == m.name && same_pane(m, g)));
                Ok(late)
            })?;
            replaced.extend(late);
        }
        let names: Vec<String> = gone
            .iter()
            .map(|m| m.name.clone())
            .filter(|n| !replaced.contains(n))
            .collect();
        // Its runtime ended with its pane: its doorbell, polling note,
        // idle mark and task offer go with it, and its spool's leftovers
        // (issue 24, item 10: they stayed). What a revival or a resume
        // reads (its session, its departure record) stays, and so does a
        // send still pending. A team being deleted loses them all anyway.
        if !deleted {
            tidy_departed(&t, &names);
        }
        let each: Vec<&str> = names.iter().map(String::as_str).collect();
        let returned = t.tasks().unassign_all_of_each(&each)?;
        Ok(gone
            .iter()
            .map(|m| {
                if replaced.contains(&m.name) {
                    return Left::of(&m.name, &[]);
                }
                let mine: Vec<Task> = returned
                    .iter()
                    .filter(|(from, _)| from == &m.name)
                    .map(|(_, task)| task.clone())
                    .collect();
                let mut l = Left::of(&m.name, &mine);
                l.worktree = crate::worktree::retire(&t, std::slice::from_ref(m), save_work)
                    .into_iter()
                    .next();
                l
            })
            .collect())
    })
    .await
    .context("releasing members panicked")??;
    for (l, c) in left.iter_mut().zip(closed) {
        if c == Closed::NotOurs {
            l.pane_not_ours = members
                .iter()
                .find(|m| m.name == l.name)
                .map(|m| m.tmux_pane_id.clone());
        }
    }
    Ok(left)
}

/// What the runtimes of members that left kept in the team's files and
/// no one reads after them: their spools' leftovers and their doorbells,
/// polling notes, idle marks and task offers.
fn tidy_departed(team: &Team, names: &[String]) {
    let mailbox = team.mailbox();
    for n in names {
        crate::dropped::ignore(
            mailbox.tidy_spool_of_departed(n),
            "clearing a departed member's spool",
        );
        for ext in ["wake", "polling", "idle.json", "turn"] {
            if let Ok(p) = team.root.runtime_file(&team.name, n, ext) {
                crate::dropped::ignore(
                    crate::atomic_file::remove_if_there(&p),
                    "removing a departed member's runtime file",
                );
            }
        }
    }
}

/// Whether the roster's `now` is still the member `was` (the pane mark it
/// was given at its spawn), not the same name back in another pane.
fn same_pane(now: &Member, was: &Member) -> bool {
    now.swarm_field(SwarmField::Nonce) == was.swarm_field(SwarmField::Nonce)
}

/// `name` as a teammate on the roster (the lead is refused: `down` stops
/// it with the team).
fn member(ops: &TeamOps, name: &str) -> Result<Member> {
    if name == LEAD_NAME {
        bail!("the lead is not a teammate; use `swarm down` to stop the whole team");
    }
    ops.member(name)
}

/// Finds the answer to `request_id` in the lead's inbox or, if the lead
/// already consumed it, in the lead's history.
fn find_answer(team: &Team, request_id: &str) -> Result<Option<Message>> {
    Ok(shutdown_answers(team)?.remove(request_id))
}

impl TeamOps {
    /// `swarm kill NAME`: the forced ladder (SIGKILL after `grace`), then
    /// [`leave`].
    pub async fn kill(&self, name: &str, grace: Duration) -> Result<Left> {
        self.require_own(&format!(
            "kill its members (its own lead can: `swarm shutdown {name}` asks it to)"
        ))?;
        let m = member(self, name)?;
        let session = self.session()?;
        let left = leave(self.team(), &session, &[m], grace, Leaving::Member)
            .await?
            .remove(0);
        self.tell_ai_lead_killed(std::slice::from_ref(&left));
        Ok(left)
    }

    /// Tells the team's AI lead (if it has one) which teammates were
    /// killed; a failure to tell is logged, the kill stands.
    fn tell_ai_lead_killed(&self, left: &[Left]) {
        let ns: Vec<super::ai_lead::Notification> = left
            .iter()
            .filter(|l| l.name != crate::names::AI_LEAD_NAME)
            .map(|l| {
                super::ai_lead::Notification::member(
                    &l.name,
                    "killed",
                    "was killed",
                    self.last_output(&l.name),
                )
            })
            .collect();
        crate::dropped::ignore(self.notify_ai_lead(&ns), "telling the AI lead of a kill");
    }

    /// Asks `name` to shut down (a `shutdown_request` from the lead);
    /// returns the request id. The answer is carried out by whoever sees it
    /// (the lead's supervisor, or [`TeamOps::shutdown`] waiting for it).
    pub fn request_shutdown(&self, name: &str, reason: Option<String>) -> Result<String> {
        member(self, name)?;
        if !self.team().ownership().is_swarm() {
            self.ask_own_lead(name, reason.as_deref())?;
            return Ok(String::new());
        }
        send_shutdown_request(self.team(), name, reason)
    }

    /// A team swarm did not start has a lead of its own, whose signature
    /// its teammates check: swarm cannot ask them itself, so it asks that
    /// lead, in a plain message to its inbox from `swarm` (a sender its
    /// lead reads, never one posing as the lead, the user or the system).
    fn ask_own_lead(&self, name: &str, reason: Option<&str>) -> Result<()> {
        let text = match reason {
            Some(r) => format!("The user asks you to shut down {name} (via swarm): {r}"),
            None => format!("The user asks you to shut down {name} (via swarm)."),
        };
        let tf = self.team().roster().read()?;
        self.team()
            .send_text_on(&tf, FOREIGN_SENDER, LEAD_NAME, &text, None, false)?;
        Ok(())
    }

    /// `swarm shutdown NAME`: asks, waits up to `wait` for the answer, then
    /// closes its pane and [`leave`]s once it approves. With `force_after`
    /// a member that has not answered by then is killed instead.
    pub async fn shutdown(
        &self,
        name: &str,
        reason: Option<String>,
        wait: Duration,
        force_after: Option<Duration>,
    ) -> Result<ShutdownOutcome> {
        let team = self.team();
        let m = member(self, name)?;
        if !team.ownership().is_swarm() {
            self.ask_own_lead(name, reason.as_deref())?;
            return Ok(ShutdownOutcome::Requested {
                to: LEAD_NAME.to_string(),
            });
        }
        let session = self.session()?;
        let request_id = send_shutdown_request(team, name, reason)?;
        let deadline = Instant::now() + force_after.unwrap_or(wait);
        let watcher = team.mailbox().watch()?;
        let gone = |l: Vec<Left>| l.into_iter().next().unwrap_or_else(|| Left::of(name, &[]));
        loop {
            match find_answer(team, &request_id)? {
                Some(Message::ShutdownApproved(_)) => {
                    wait_for_exit(&session, &m, Duration::from_secs(2)).await?;
                    let l = leave(
                        team,
                        &session,
                        &[m],
                        Duration::from_secs(1),
                        Leaving::Member,
                    )
                    .await?;
                    return Ok(ShutdownOutcome::Approved(gone(l)));
                }
                Some(Message::ShutdownRejected(r)) => {
                    return Ok(ShutdownOutcome::Rejected { reason: r.reason });
                }
                _ => {}
            }
            if matches!(
                pane_status(&session, &m).await?,
                PaneStatus::Gone | PaneStatus::Exited { .. }
            ) && find_answer(team, &request_id)?.is_none()
            {
                // It died without answering: that is not an approval, but
                // there is nothing left to ask. Cleaned up as a kill is.
                let l = leave(
                    team,
                    &session,
                    &[m],
                    Duration::from_secs(1),
                    Leaving::Member,
                )
                .await?;
                return Ok(ShutdownOutcome::Killed(gone(l)));
            }
            let now = Instant::now();
            if now >= deadline {
                if force_after.is_some() {
                    let l = leave(
                        team,
                        &session,
                        &[m],
                        Duration::from_secs(2),
                        Leaving::Member,
                    )
                    .await?;
                    return Ok(ShutdownOutcome::Killed(gone(l)));
                }
                return Ok(ShutdownOutcome::TimedOut);
            }
            watcher.wait((deadline - now).min(Duration::from_millis(200)));
        }
    }

    /// The teammates `prune` takes: idle by the one rule of
    /// [`crate::team::status::MemberStatus::prunable`] (the dialog's too),
    /// in the snapshot's words.
    pub async fn idle_members(&self) -> Result<Vec<String>> {
        let snap = self.snapshot().await?;
        // The AI lead leads: idle between turns, never pruned.
        let ai = snap.lead.ai.as_ref().map(|a| a.name.clone());
        Ok(snap
            .members
            .iter()
            .filter(|m| Some(&m.name) != ai.as_ref())
            .filter(|m| {
                m.state
                    .is_some_and(|s| s.prunable(m.task.is_some(), m.unread))
            })
            .map(|m| m.name.clone())
            .collect())
    }

    /// `swarm prune` and the dialog's `p`: `names` (the idle teammates
    /// when `None`) killed and [`leave`]n, in one departure.
    pub async fn prune(&self, names: Option<Vec<String>>) -> Result<Vec<Left>> {
        self.require_own("prune its members")?;
        let names = match names {
            Some(n) => n,
            None => self.idle_members().await?,
        };
        let tf = self.team().roster().read()?;
        let members: Vec<Member> = names
            .iter()
            .filter_map(|n| tf.member(n).filter(|m| !m.is_lead()).cloned())
            .collect();
        let session = self.session()?;
        let left = leave(
            self.team(),
            &session,
            &members,
            Duration::from_secs(1),
            Leaving::Member,
        )
        .await?;
        self.tell_ai_lead_killed(&left);
        if left.len() > 1
            && let Some(layout) = session.backend.layout()
        {
            // Several panes closed at once: the column they leave is laid
            // out evenly again (a courtesy; the prune is done either way).
            crate::dropped::ignore(layout.rebalance().await, "rebalancing the panes");
        }
        Ok(left)
    }

    /// The members that approved their shutdown to the lead (the
    /// supervisor saw the approvals): each given up to 2 s to end by
    /// itself (all in one wait), then [`leave`]n.
    pub async fn depart_approved(&self, members: &[Member]) -> Result<Vec<Left>> {
        let session = self.session()?;
        // The teammates exit by themselves after approving; let them. The
        // ladder at once would SIGTERM a group while the `swarm send` that
        // carried the approval may still be releasing the lead's inbox lock.
        wait_for_exits(&session, members, Duration::from_secs(2)).await?;
        leave(
            self.team(),
            &session,
            members,
            Duration::from_secs(1),
            Leaving::Member,
        )
        .await
    }

    /// `swarm down`: see [`down`].
    pub async fn down(&self, wait: Duration, force: bool) -> Result<DownReport> {
        self.require_own("take it down")?;
        let session = self.session()?;
        down(self.team(), &session, wait, force).await
    }
}

/// Writes a `shutdown_request` to `name`; returns its request id.
pub fn send_shutdown_request(team: &Team, name: &str, reason: Option<String>) -> Result<String> {
    let request_id = protocol::shutdown_request_id(crate::clock::now_ms(), name);
    let msg = Message::ShutdownRequest(protocol::ShutdownRequest {
        request_id: request_id.clone(),
        from: LEAD_NAME.to_string(),
        reason,
        timestamp: crate::clock::now_iso(),
    });
    team.send_protocol(LEAD_NAME, name, &msg, false)?;
    Ok(request_id)
}

/// What `down` did.
#[derive(Debug, Default, serde::Serialize)]
pub struct DownReport {
    pub approved: Vec<String>,
    pub killed: Vec<String>,
    pub stayed: Vec<String>,
    /// Answered `shutdown_rejected` (and `force` was off): kept at once,
    /// without waiting out `wait`.
    pub declined: Vec<String>,
    /// Were no longer running when `down` looked (their pane had exited or
    /// was gone): released without a request.
    pub gone: Vec<String>,
    /// Requests that waited for an answer, answered for the team going
    /// down (a plan or permission rejected), by id.
    pub answered: Vec<String>,
    /// The team was deleted (no teammate stayed or declined).
    pub deleted: bool,
    /// Where the team's scratchpad was kept (see `keep_scratchpad`).
    pub kept: Option<std::path::PathBuf>,
    /// Everyone that left, with their tasks and worktrees.
    pub left: Vec<Left>,
}

impl DownReport {
    /// What became of the released teammates' worktrees, one line each.
    pub fn worktrees(&self) -> impl Iterator<Item = &str> {
        self.left.iter().filter_map(|l| l.worktree.as_deref())
    }
}

/// Who swarm writes as in a team it did not start (see
/// `TeamOps::request_shutdown`).
pub const FOREIGN_SENDER: &str = "swarm";

/// The reason `down` gives a request it answers for a teammate.
pub const SHUTTING_DOWN: &str = "the team is shutting down";

/// How long a teammate that approved its shutdown has to end by itself
/// before its pane is closed for it.
const EXIT_AFTER_APPROVAL: Duration = Duration::from_secs(2);

/// How often `down`, waiting for teammates whose pane processes it checks
/// by pid, lists the panes anyway: for what no process exit shows (a pane
/// closed while its process lives on, a pid reused).
const RELIST_EVERY: Duration = Duration::from_millis(200);

/// Every shutdown answer (`shutdown_approved` / `shutdown_rejected`) in
/// the lead's inbox and, if the lead already consumed it, its history, by
/// request id.
fn shutdown_answers(team: &Team) -> Result<std::collections::HashMap<String, Message>> {
    let mb = team.mailbox();
    let mut all: Vec<Entry> = mb.read(LEAD_NAME)?.entries;
    all.extend(mb.history(LEAD_NAME)?);
    Ok(all
        .iter()
        .filter_map(Entry::protocol)
        .filter_map(|m| match &m {
            Message::ShutdownApproved(a) => Some((a.request_id.clone(), m)),
            Message::ShutdownRejected(r) => Some((r.request_id.clone(), m)),
            _ => None,
        })
        .collect())
}

/// `swarm down`: ask every teammate to shut down, wait up to `wait`, kill
/// the rest when `force`, close the lead's session, delete the team.
/// Refuses (deleting nothing) when teammates stay and `force` is off.
///
/// Everything is done for all teammates at once: the requests go out
/// together (each to its own inbox), each look reads the lead's inbox once
/// and asks the backend once about every pane, and the roster is written
/// once. A teammate that approved is waited for until its process ends
/// (an event where the backend has them, else a look every 10 ms);
/// otherwise the loop sleeps on the lead's inbox's file events.
pub async fn down(
    team: &Team,
    opened: &Session,
    wait: Duration,
    force: bool,
) -> Result<DownReport> {
    // The lead leaves the teammates' ends and its inbox to this `down`
    // until it returns (see `DownLock`).
    let _down = crate::team::locks::DownLock::acquire(team, wait).await?;
    let mut report = DownReport::default();
    // A teammate blocked on the lead's answer (a plan in `swarm ask`)
    // cannot finish its unit and answer a shutdown: its request is
    // answered for it first.
    let (t, mut answered) = (team.clone(), Vec::new());
    for r in tokio::task::spawn_blocking(move || super::requests::pending(&t))
        .await
        .context("reading the requests panicked")??
        .into_iter()
        .filter(|r| r.for_lead())
    {
        super::requests::answer(
            team,
            &r.id,
            false,
            Some(SHUTTING_DOWN.to_string()),
            super::requests::Answerer::User,
        )?;
        answered.push(r.id);
    }
    report.answered = answered;
    let tf = team.roster().read()?;
    let members: Vec<Member> = tf.teammates().cloned().collect();
    // A teammate that ends as asked takes its pane with it: no pane is
    // left to close for it (8 dead panes were a kill chain behind a
    // tmux server busy with their ends, 5-15 ms). Put back for those
    // that stay, should the team stay.
    let statuses = super::panes::pane_statuses_closing_on_exit(opened, &members).await?;
    let settled = settle(team, opened, &members, statuses, wait, force, &mut report).await;
    let stopping = match settled {
        Ok(Settled::TeamGoes { lead }) => lead,
        Ok(Settled::TeamStays) => {
            super::panes::keep_on_exit(opened, &members).await?;
            return Ok(report);
        }
        Err(e) => {
            crate::dropped::ignore(
                super::panes::keep_on_exit(opened, &members).await,
                "keeping the teammates' panes open on exit",
            );
            return Err(e);
        }
    };
    // Once the lead has ended, its session closes while the team's files
    // go: neither waits for the other (a tmux call, and some hundred
    // unlinks).
    if let Some(pid) = stopping {
        opened.backend.await_ended(pid, LEAD_ENDS_WITHIN).await;
    }
    let t = team.clone();
    let files = tokio::task::spawn_blocking(move || -> Result<Option<std::path::PathBuf>> {
        let kept = keep_scratchpad(&t)?;
        t.roster().delete(true)?;
        Ok(kept)
    });
    let (closed, files) = tokio::join!(close_lead(opened, stopping), files);
    report.kept = files.context("deleting the team panicked")??;
    report.deleted = true;
    closed?;
    Ok(report)
}

/// What [`settle`] leaves of the team.
enum Settled {
    /// No teammate stayed or declined: the team goes, and its lead was
    /// told to stop (`lead`: its pid, when one ran).
    TeamGoes { lead: Option<u32> },
    /// A teammate stayed or declined: the team and its lead stay.
    TeamStays,
}

/// The part of [`down`] that asks, waits and closes: every teammate asked
/// (or killed, or found gone), the panes of those that left closed, the
/// lead signalled when the team goes.
async fn settle(
    team: &Team,
    opened: &Session,
    members: &[Member],
    statuses: Vec<PaneStatus>,
    wait: Duration,
    force: bool,
    report: &mut DownReport,
) -> Result<Settled> {
    let mut done: Vec<Member> = Vec::new();
    let mut asking: Vec<(Member, PaneStatus)> = Vec::new();
    let mut killed: Vec<Member> = Vec::new();
    for (m, status) in members.iter().cloned().zip(statuses) {
        match status {
            // A program that is its own teammate has no runtime to answer
            // a request: with --force it is not waited for.
            PaneStatus::Running { .. } if force && !answers_shutdown(&m) => {
                report.killed.push(m.name.clone());
                killed.push(m);
            }
            PaneStatus::Running { .. } => asking.push((m, status)),
            _ => {
                report.gone.push(m.name.clone());
                done.push(m);
            }
        }
    }
    let (asking, seen): (Vec<Member>, Vec<PaneStatus>) = asking.into_iter().unzip();
    let mut pending = ask_all(team, asking)?;
    for (a, status) in pending.iter_mut().zip(seen) {
        a.seen = Some(status);
    }
    let mut lead = LeadStop::of(members);
    let answered = await_answers(team, opened, pending, wait, force, report, &mut lead).await?;
    done.extend(answered.done);
    for m in answered.pending {
        if force {
            report.killed.push(m.name.clone());
            killed.push(m);
        } else {
            report.stayed.push(m.name.clone());
        }
    }
    // The team is going: the lead is told to stop now (unless it was as
    // soon as every answer was in), so that it ends while the panes
    // close, before its own is closed (see `close_lead`).
    let deleting = report.stayed.is_empty() && report.declined.is_empty();
    let stopping = match (deleting, lead) {
        (true, LeadStop::Signalled(pid)) => pid,
        (true, LeadStop::Running | LeadStop::Hosting) => signal_lead(team)?,
        // The lead runs: it is told to stop early only once every
        // teammate has approved with time left to end, and such a team
        // always goes.
        (false, _) => None,
    };
    // Panes of those that ended are closed at once (a dead pane kept by
    // remain-on-exit); the others get the kill ladder.
    let going = Leaving::TeamGoes {
        save_work: force,
        deleted: deleting,
    };
    report.left = leave(team, opened, &done, Duration::from_millis(200), going).await?;
    report
        .left
        .extend(leave(team, opened, &killed, Duration::from_secs(1), going).await?);
    Ok(if deleting {
        Settled::TeamGoes { lead: stopping }
    } else {
        Settled::TeamStays
    })
}

/// Whether `m`'s pane answers a shutdown request: a swarm runtime or Claude
/// Code does; a program that is its own teammate (`process`) need not.
fn answers_shutdown(m: &Member) -> bool {
    !matches!(
        crate::agents::Agent::of(m),
        Ok(crate::agents::Agent::Process)
    )
}

/// One teammate `down` waits for: its request id and when it approved.
pub(crate) struct Asked {
    pub(crate) member: Member,
    pub(crate) request: String,
    approved_at: Option<Instant>,
    /// Its pane as last seen (`None`: not looked at yet).
    seen: Option<PaneStatus>,
}

/// How many shutdown requests `down` writes at once. Each is a few
/// creates, renames and fsyncs in the one inboxes directory (some 10 ms,
/// most of it waiting on the journal): a thread per teammate (32) spent
/// more CPU spinning on that directory's lock than writing, while 8 keep
/// the fsyncs overlapped and ask a team of 8 in one round.
const ASKING_AT_ONCE: usize = 8;

/// Sends every member a shutdown request, [`ASKING_AT_ONCE`] at a time
/// (each to its own inbox, so they do not queue on one lock).
pub(crate) fn ask_all(team: &Team, asking: Vec<Member>) -> Result<Vec<Asked>> {
    let reason = Some("the team is going down".to_string());
    // Each thread sends one run of the list, in order.
    let run = asking.len().div_ceil(ASKING_AT_ONCE).max(1);
    let ids: Vec<Result<String>> = std::thread::scope(|s| {
        let senders: Vec<_> = asking
            .chunks(run)
            .map(|part| {
                let reason = &reason;
                s.spawn(move || {
                    part.iter()
                        .map(|m| send_shutdown_request(team, &m.name, reason.clone()))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        senders
            .into_iter()
            .zip(asking.chunks(run))
            .flat_map(|(h, part)| {
                h.join().unwrap_or_else(|_| {
                    part.iter()
                        .map(|_| Err(anyhow::anyhow!("a send panicked")))
                        .collect()
                })
            })
            .collect()
    });
    asking
        .into_iter()
        .zip(ids)
        .map(|(member, id)| {
            Ok(Asked {
                member,
                request: id?,
                approved_at: None,
                seen: None,
            })
        })
        .collect()
}

/// Whether [`await_answers`] has told the lead to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LeadStop {
    /// Not yet: it is told once every teammate has approved.
    Running,
    /// The lead hosts teammates' panes (in-process): they die with it, so
    /// it is told only once they have ended, after the wait.
    Hosting,
    /// Signalled (its pid, when one ran).
    Signalled(Option<u32>),
}

impl LeadStop {
    /// Where the lead of a team of `members` stands before any answer.
    fn of(members: &[Member]) -> LeadStop {
        if members
            .iter()
            .any(|m| m.backend_kind() == Some(swarm_backends::BackendKind::InProcess))
        {
            LeadStop::Hosting
        } else {
            LeadStop::Running
        }
    }
}

/// What waiting for the answers left: the members that are done (approved
/// and ended, or gone) and those still there at the deadline.
struct Answered {
    done: Vec<Member>,
    pending: Vec<Member>,
}

/// Waits up to `wait` for every asked member to approve and end, or to
/// decline (recorded in `report.declined` unless `force`). Each look reads
/// the lead's inbox once and asks the backend once about every pane; an
/// approved member is waited for until its process ends (its exit an
/// event where the backend has them, else a look every 10 ms), otherwise
/// the loop sleeps on the lead's inbox's file events.
///
/// Once every member still waited for has approved (none declined) with
/// time left for each to end or be closed ([`EXIT_AFTER_APPROVAL`]), the
/// team is going: the lead is told to stop then (`lead`), so that it ends
/// while the teammates do, not after them (0-14 ms of a `down` of 8);
/// unless it hosts their panes ([`LeadStop::Hosting`]).
async fn await_answers(
    team: &Team,
    opened: &Session,
    mut pending: Vec<Asked>,
    wait: Duration,
    force: bool,
    report: &mut DownReport,
    lead: &mut LeadStop,
) -> Result<Answered> {
    let mut done = Vec::new();
    let deadline = Instant::now() + wait;
    let watcher = team.mailbox().watch()?;
    let lead_inbox = team
        .root
        .inbox(&team.name, LEAD_NAME)?
        .file_name()
        .map(std::ffi::OsStr::to_os_string)
        .context("the lead's inbox has a file name")?;
    // Where every pane process is of this kernel (their exits are events;
    // no teammate on another machine), a pane seen running is checked by
    // its pid, and the backend is asked again only every `RELIST_EVERY`:
    // a listing waits behind a tmux server busy closing the panes that
    // just ended (30 ms for 8), and the loop learnt of the last exits that
    // much later.
    let by_pid = opened.caps().exit_events && opened.hosted.is_none();
    let mut listed = Instant::now();
    while !pending.is_empty() {
        let answers = shutdown_answers(team)?;
        let relist =
            !by_pid || listed.elapsed() >= RELIST_EVERY || pending.iter().any(|a| a.seen.is_none());
        if relist {
            let members: Vec<Member> = pending.iter().map(|a| a.member.clone()).collect();
            let statuses = pane_statuses(opened, &members).await?;
            listed = Instant::now();
            for (a, status) in pending.iter_mut().zip(statuses) {
                // A runtime lets go of its pane as it approves (its pane
                // may close then): it has ended when its process has.
                let outlives_its_pane = matches!(a.seen, Some(PaneStatus::Running { pid: Some(pid) })
                    if by_pid && swarm_backends::process::same_process_alive(pid, None));
                if !outlives_its_pane || matches!(status, PaneStatus::Running { .. }) {
                    a.seen = Some(status);
                }
            }
        } else {
            for a in &mut pending {
                if let Some(PaneStatus::Running { pid: Some(pid) }) = a.seen
                    && !swarm_backends::process::same_process_alive(pid, None)
                {
                    a.seen = Some(PaneStatus::Exited { code: None });
                }
            }
        }
        let now = Instant::now();
        let mut still = Vec::new();
        let mut exiting = false;
        for mut a in pending {
            let running = matches!(a.seen, Some(PaneStatus::Running { .. }));
            let approved = match answers.get(&a.request) {
                Some(Message::ShutdownApproved(_)) => Some(true),
                Some(_) => Some(false),
                None => None,
            };
            let finished = match (approved, running) {
                // It said no: no point waiting, unless --force will kill it.
                (Some(false), _) if !force => {
                    report.declined.push(a.member.name.clone());
                    continue;
                }
                (Some(false), _) | (None, true) => false,
                // Approved and gone, or gone without answering (nothing
                // left to ask: counted with the approved, as before).
                (_, false) => true,
                (Some(true), true) => {
                    let at = *a.approved_at.get_or_insert(now);
                    exiting |= now.duration_since(at) < EXIT_AFTER_APPROVAL;
                    now.duration_since(at) >= EXIT_AFTER_APPROVAL
                }
            };
            if finished {
                report.approved.push(a.member.name.clone());
                done.push(a.member);
            } else {
                still.push(a);
            }
        }
        pending = still;
        if pending.is_empty() || Instant::now() >= deadline {
            break;
        }
        if *lead == LeadStop::Running
            && report.declined.is_empty()
            && deadline.saturating_duration_since(Instant::now()) >= EXIT_AFTER_APPROVAL
            && pending.iter().all(|a| a.approved_at.is_some())
        {
            *lead = LeadStop::Signalled(signal_lead(team)?);
        }
        if exiting {
            // A teammate that approved ends by itself: its end is an event
            // where the backend has them, else the next look is at 10 ms.
            let exits = async {
                if opened.caps().exit_events {
                    opened.backend.changes().await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                () = exits => {}
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
            }
        } else {
            // Answers come to the lead's inbox: the teammates' own inboxes
            // (each takes its request out of it) are no reason to look.
            watcher.wait_for(
                &lead_inbox,
                deadline
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
            );
        }
    }
    let pending = pending.into_iter().map(|a| a.member).collect();
    Ok(Answered { done, pending })
}

/// Moves a scratchpad that holds anything out of the team's state, which
/// `down` deletes, to [`crate::paths::Root::kept_scratchpad`]: what the
/// teammates left there (the demo's results) is the user's to read. Once
/// every teammate and the lead have stopped, so nothing writes to it.
fn keep_scratchpad(team: &Team) -> Result<Option<std::path::PathBuf>> {
    let from = team.root.scratchpad(&team.name)?;
    let empty = match std::fs::read_dir(&from) {
        Ok(mut d) => d.next().is_none(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(e) => return Err(e).with_context(|| format!("reading {}", from.display())),
    };
    if empty {
        return Ok(None);
    }
    let stamp = crate::clock::now_iso().replace([':', '.'], "-");
    let to = team.root.kept_scratchpad(&team.name, &stamp)?;
    if let Some(parent) = to.parent() {
        crate::atomic_file::ensure_dir(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::rename(&from, &to)
        .with_context(|| format!("keeping {} as {}", from.display(), to.display()))?;
    Ok(Some(to))
}

/// SIGTERM to the team's lead process (found through its lock), unless it
/// is this process or no longer runs; its pid when signalled.
fn signal_lead(team: &Team) -> Result<Option<u32>> {
    let holder = crate::team::locks::lead_holder(team)?;
    let Some(pid) = holder.as_ref().and_then(|h| h.pid).filter(|pid| {
        *pid != std::process::id()
            && swarm_backends::process::same_process_alive(
                *pid,
                holder.as_ref().and_then(|h| h.start.as_deref()),
            )
    }) else {
        return Ok(None);
    };
    // It may have exited since it was checked: nothing left to stop.
    crate::dropped::ignore(
        swarm_backends::process::signal_process(pid as i32, libc::SIGTERM),
        "stopping the lead",
    );
    Ok(Some(pid))
}

/// Closes what swarm made for the lead: the home session swarm created
/// (proved by its mark), or the lead pane swarm opened; the user's own
/// pane the lead ran in is never closed: its window's options are put
/// back. The lead signalled (`stopping`) is first seen to end (2 s at
/// most): closed under a lead still ending, its pane went first, and tmux
/// could miss the lead's end and keep it a zombie of the server (the
/// backend makes the server reap it then, [`PaneBackendExecutor::await_ended`]).
///
/// [`PaneBackendExecutor::await_ended`]: swarm_backends::PaneBackendExecutor::await_ended
async fn close_lead(opened: &Session, stopping: Option<u32>) -> Result<()> {
    if let Some(pid) = stopping {
        opened.backend.await_ended(pid, LEAD_ENDS_WITHIN).await;
    }
    let record = &opened.record();
    let homes = opened.backend.homes();
    match (&record.session, record.lead_ref(), &record.lead_pane, homes) {
        (Some(session), Some(_), _, Some(homes)) => {
            // The session swarm made holds the lead's pane: closing it
            // closes that pane too. A session of that name without the
            // mark is not swarm's: left alone.
            let mark = record.home_mark().unwrap_or_default();
            if let Err(e) = homes.close_home(session, mark).await {
                tracing::warn!(%session, %e, "home session left alone");
                eprintln!("swarm: left tmux session {session} alone: {e}");
            }
        }
        (_, Some(lead), _, _) => match opened.backend.kill(&lead, Duration::from_secs(1)).await {
            Ok(()) | Err(BackendError::NotOurs { .. }) => {}
            Err(e) => return Err(e).context("closing the lead's pane"),
        },
        (_, None, Some(host), _) => {
            // The user's pane: it stays, with its window as it was (a
            // backend without the layout facet changed nothing there).
            if let Some(layout) = opened.backend.layout() {
                layout
                    .restore_host(host)
                    .await
                    .context("putting the lead's window options back")?;
            }
        }
        (_, None, None, _) => {}
    }
    // A lead that had not ended by then ends with its pane: seen to.
    if let Some(pid) = stopping {
        opened.backend.await_ended(pid, LEAD_ENDS_WITHIN).await;
    }
    // The team's tmux server on each other machine, and its connection.
    if let Some(hosted) = &opened.hosted {
        hosted.shut_hosts().await;
    }
    Ok(())
}

/// How long `down` waits for the lead it stopped to end.
const LEAD_ENDS_WITHIN: Duration = Duration::from_secs(2);
