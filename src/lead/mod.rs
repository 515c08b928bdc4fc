//! The lead: owns the roster, spawns and supervises panes through a
//! backend, consumes the `team-lead` inbox, and shows the team.
//!
//! - [`control`]: the TeamsDialog's view of the lead: snapshots and actions.
//! - [`view`]: the team as shown, kept up to date from what changed.
//! - [`watch`]: what wakes the lead's loop and the dialog (one inotify
//!   watcher on Linux), and [`wake`]: the dialog rung once per snapshot.
//! - this file: the lead process itself ([`run_lead`]): it records itself in
//!   `leadProcess`, re-discovers live panes after a restart, notices a pane
//!   whose process exited or vanished within about a second, handles
//!   `shutdown_approved` and the other messages sent to the lead, and draws
//!   the TeamsDialog (or, without a terminal, a plain status view). It never
//!   learns state by reading pane contents.

pub mod control;
pub mod view;
pub mod wake;
pub mod watch;

use crate::mailbox::Entry;
use crate::names::LEAD_NAME;
use crate::protocol::{self, Message};
use crate::session::{self, Session};
use crate::team::status::recorded_exit;
use crate::team::{ExitRecord, Member, Team};
use anyhow::Result;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use swarm_backends::{PaneRef, PaneStatus};

/// How often the lead checks pane liveness where the backend reports no
/// exits (a dead pane is noticed within this plus one backend call).
pub const SUPERVISE_EVERY: Duration = Duration::from_millis(700);

/// How often a lead whose team has panes on other machines looks at them
/// (one ssh call a host, over its shared connection).
pub const REMOTE_EVERY: Duration = Duration::from_secs(2);
/// How often panes that report their exits are checked anyway (and the
/// lead's inbox read, and the team's existence checked, should a watcher
/// miss a change). The only periodic work of an idle lead on such a
/// backend: what an exit event cannot show is noticed within this. For
/// tmux (a pidfd per pane process, see `swarm_backends::exits`) that is a
/// pane whose pid was reused before it was watched, a pane closed while
/// its process ignores SIGHUP, and a tmux server restarted under the team.
pub const SAFETY_TICK: Duration = Duration::from_secs(30);

/// [`SAFETY_TICK`]; with the `fault-injection` feature (test builds only),
/// `SWARM_FAULT_SAFETY_TICK_MS` replaces it, so that a test can put it
/// out of reach and show that a pane's end is noticed by its event.
fn safety_tick() -> Duration {
    #[cfg(feature = "fault-injection")]
    if let Some(ms) = std::env::var_os("SWARM_FAULT_SAFETY_TICK_MS").and_then(|ms| {
        crate::dropped::ignore(
            ms.to_string_lossy().parse::<u64>(),
            "reading SWARM_FAULT_SAFETY_TICK_MS (the default applies)",
        )
    }) {
        return Duration::from_millis(ms);
    }
    SAFETY_TICK
}

/// Writes a line to stderr, ignoring a terminal that went away (the lead's
/// last words must never become a panic).
pub fn note(text: &str) {
    crate::dropped::ignore(writeln!(std::io::stderr(), "{text}"), "writing to stderr");
}

/// What the lead knows of one member between ticks.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    Running,
    Dead(Option<i32>),
    /// The recorded pane is no longer swarm's (its mark differs).
    Lost,
}

/// What the supervisor learns and the TeamsDialog shows, shared between
/// the two (held only for short, synchronous updates).
#[derive(Debug, Default)]
pub struct Shared {
    pub seen: HashMap<String, Seen>,
    pub events: Vec<String>,
    /// How many events were ever recorded (a notice set before the latest
    /// event is superseded by it).
    pub events_seen: u64,
    /// Requests waiting for an answer, as the files say (see
    /// `ops::requests`): read whole when the lead starts and whenever an
    /// inbox changed under it, and a request the lead consumes is added
    /// as it comes.
    pub requests: Vec<crate::ops::requests::PendingRequest>,
    /// Members being shut down, and since when.
    pub stopping: HashMap<String, Instant>,
    /// Last time each member was heard from (message, idle notification).
    pub heard: HashMap<String, Instant>,
    /// The task files changed since the view last looked (fed by the
    /// board's watcher).
    pub board: view::BoardChanges,
    /// The newest entries the lead consumed, as the view shows them
    /// (`None` until the view has read the history).
    pub consumed: Option<std::collections::VecDeque<Arc<Entry>>>,
}

impl Shared {
    /// Records an event (shown by the dialog and the plain view); outside
    /// text in it is escaped here, once, so no control sequence reaches a
    /// terminal.
    fn event(&mut self, text: String) {
        let text = crate::text::escape_line(&text).into_owned();
        tracing::info!("{text}");
        self.events_seen += 1;
        self.events
            .push(format!("{} {text}", &crate::clock::now_iso()[11..19]));
        if self.events.len() > 200 {
            self.events.drain(..100);
        }
    }
}

/// The lead process's supervisor.
pub struct Lead {
    pub team: Team,
    pub opened: Arc<Session>,
    pub shared: Arc<Mutex<Shared>>,
    /// Rings the TeamsDialog (when it runs) after a change it shows.
    wake: Option<wake::Wake>,
    dirty: bool,
    /// The files as the plain status view last read them.
    state: view::TeamState,
    /// Held for the lead's whole life (see [`lock`]).
    lead_lock: Option<crate::team::locks::LeadLock>,
    /// Watching a team swarm did not start (Claude Code's): the dialog
    /// only; nothing recorded, no mail consumed, no lock taken, no roster
    /// written, no pane touched.
    pub watching: bool,
    /// The panes the last [`Lead::supervise`] looked at.
    looked_at: Vec<PaneRef>,
    /// How often stalled members are looked for, when the spec asks for
    /// reminders (`nudge = true`): half its `stall_after`, at most the
    /// safety tick. A stall is a matter of time, so this is a timer; a team
    /// without reminders has none.
    nudge_every: Option<Duration>,
    /// Members on a machine that has not answered for its grace, whose
    /// tasks went back on the board (once per time away).
    given_back: std::collections::BTreeSet<String>,
    /// Test hook: the next death recordings fail, as a full disk would.
    #[cfg(test)]
    fail_records: usize,
}

impl Lead {
    pub fn new(team: Team, opened: Session) -> Self {
        Lead {
            team,
            opened: Arc::new(opened),
            shared: Arc::new(Mutex::new(Shared::default())),
            wake: None,
            dirty: true,
            state: view::TeamState::default(),
            lead_lock: None,
            watching: false,
            looked_at: Vec::new(),
            nudge_every: None,
            given_back: std::collections::BTreeSet::new(),
            #[cfg(test)]
            fail_records: 0,
        }
    }

    /// A watcher of a team swarm did not start: the TeamsDialog over its
    /// files and panes, read-only but for the messages the user sends.
    pub fn watching(team: Team, opened: Session) -> Self {
        Lead {
            watching: true,
            ..Lead::new(team, opened)
        }
    }

    /// [`Lead::supervise`] for a watcher: each member's pane looked at by
    /// id (the team's own lead opened it, so it carries no swarm mark),
    /// what it shows kept for the dialog, nothing written.
    pub async fn watch_panes(&mut self) -> Result<()> {
        let tf = self.team.roster().read()?;
        let members: Vec<Member> = tf
            .teammates()
            .filter(|m| {
                !m.tmux_pane_id.is_empty() && m.backend_type.as_deref() != Some("in-process")
            })
            .cloned()
            .collect();
        let ids: Vec<swarm_backends::PaneId> = members
            .iter()
            .map(|m| swarm_backends::PaneId::new(m.tmux_pane_id.clone()))
            .collect();
        let seen = if ids.is_empty() {
            Vec::new()
        } else {
            self.opened.backend.observe(&ids).await?
        };
        let lead_alive = tf
            .lead_process
            .as_ref()
            .and_then(crate::team::locks::lead_process_alive)
            .is_some();
        let mut changed = false;
        {
            let mut sh = self.shared();
            let before = sh.seen.clone();
            sh.seen.clear();
            for (m, (_, status)) in members.iter().zip(seen) {
                let now = match status {
                    PaneStatus::Running { .. } => Seen::Running,
                    PaneStatus::Exited { code } => Seen::Dead(code),
                    PaneStatus::Gone | PaneStatus::Foreign => Seen::Dead(None),
                };
                sh.seen.insert(m.name.clone(), now);
            }
            // Claude Code's in-process teammates live inside its lead.
            for m in tf
                .teammates()
                .filter(|m| m.backend_type.as_deref() == Some("in-process"))
            {
                let now = if lead_alive {
                    Seen::Running
                } else {
                    Seen::Dead(None)
                };
                sh.seen.insert(m.name.clone(), now);
            }
            changed |= sh.seen != before;
        }
        if changed {
            self.changed();
        }
        Ok(())
    }

    /// Runs file work that may wait on a lock (a roster, board or inbox
    /// write) off the async worker, so the supervisor's loop and the
    /// dialog's background actions are never held up behind it.
    async fn disk<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Team) -> Result<T> + Send + 'static,
    {
        let team = self.team.clone();
        settled(tokio::task::spawn_blocking(move || work(team)).await)
    }

    /// The team's verbs, as the lead acts on them, on the lead's session.
    pub fn ops(&self) -> crate::ops::TeamOps {
        crate::ops::TeamOps::as_lead(self.team.clone(), self.opened.clone())
    }

    /// A lead that already holds the team's lead lock.
    pub fn with_lock(mut self, lock: crate::team::locks::LeadLock) -> Self {
        self.lead_lock = Some(lock);
        self
    }

    /// Takes the team's lead lock for this lead's whole life; fails when
    /// another lead runs.
    pub async fn lock(&mut self, wait: Duration) -> Result<()> {
        self.lead_lock = Some(crate::team::locks::LeadLock::acquire(&self.team, wait).await?);
        Ok(())
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event(&mut self, text: String) {
        self.shared().event(text);
        self.changed();
    }

    fn changed(&mut self) {
        self.dirty = true;
        if let Some(w) = &self.wake {
            // False only once the dialog's loop has ended.
            w.ring();
        }
    }

    /// If a `swarm down` of the team runs now (it holds the team's
    /// `DownLock`): a receiver that resolves once it has ended, however it
    /// ends. The wait is a thread of its own, not the runtime's: a lead
    /// told to stop while a down runs must not wait for it to exit.
    fn down_running(&self) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let file = match crate::team::locks::down_running(&self.team) {
            Ok(Some(file)) => file,
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "cannot tell whether a `swarm down` runs");
                return None;
            }
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let waiting = std::thread::Builder::new()
            .name("down-wait".into())
            .spawn(move || {
                // Granted once the down has let go of its lock.
                crate::dropped::ignore(file.lock_shared(), "waiting for a `swarm down` to end");
                let _ = tx.send(());
            });
        match waiting {
            Ok(_) => {
                tracing::info!(
                    "a `swarm down` runs: the teammates' ends and the lead's inbox are left to it"
                );
                Some(rx)
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot wait for a `swarm down`: the lead goes on");
                None
            }
        }
    }

    /// Checks every member's pane once; records and reports deaths. A
    /// death that could not be recorded (the roster or the board could not
    /// be written) is tried again on the next check: it is remembered only
    /// once it is on disk.
    pub async fn supervise(&mut self) -> Result<()> {
        let tf = self.team.roster().read()?;
        let mine = self.my_panes(&tf);
        self.looked_at = mine.iter().map(|(_, p)| p.clone()).collect();
        self.shared()
            .seen
            .retain(|name, _| mine.iter().any(|(m, _)| &m.name == name));
        if mine.is_empty() {
            return Ok(());
        }
        let refs: Vec<PaneRef> = mine.iter().map(|(_, p)| p.clone()).collect();
        let statuses = self.opened.backend.status(&refs).await?;
        let mut failed = None;
        for ((m, _), (_, status)) in mine.iter().zip(statuses) {
            let now = match status {
                PaneStatus::Running { .. } => Seen::Running,
                PaneStatus::Exited { code } => Seen::Dead(code),
                PaneStatus::Gone => Seen::Dead(None),
                PaneStatus::Foreign => Seen::Lost,
            };
            let before = self.shared().seen.get(&m.name).cloned();
            if before.as_ref() == Some(&now) {
                continue;
            }
            let recorded = match &now {
                Seen::Running => {
                    if before.is_none() {
                        self.event(format!("{} is running in pane {}", m.name, m.tmux_pane_id));
                    }
                    Ok(())
                }
                // Its end is on record (by an earlier lead, or by this one
                // before it closed the dead pane): recorded once, never
                // overwritten by the pane's going.
                Seen::Dead(_) if recorded_exit(m).is_some() => Ok(()),
                Seen::Dead(code) => self.record_death(m, status, *code).await,
                Seen::Lost => self.record_lost(m).await,
            };
            match recorded {
                Ok(()) => {
                    self.shared().seen.insert(m.name.clone(), now);
                }
                Err(e) => {
                    // Not remembered: the next check records it again.
                    failed.get_or_insert(e.context(format!("recording what became of {}", m.name)));
                }
            }
        }
        self.nudge(&tf, &mine).await?;
        self.give_back_the_unreachables(&mine)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A member on another machine that has not answered for its host's
    /// `unreachable_grace` (DESIGN §13) is not dead, but its tasks go back
    /// on the board, once per time away, so no task waits on a machine
    /// that may never come back; when the machine answers again the member
    /// runs on, in its pane.
    fn give_back_the_unreachables(&mut self, mine: &[(Member, PaneRef)]) -> Result<()> {
        let Some(hosted) = self.opened.hosted.clone() else {
            return Ok(());
        };
        let hosts = crate::hosts::recorded(&self.team.root, &self.team.name)?;
        for (m, _) in mine {
            let Some(host) = m.host() else {
                continue;
            };
            let Some((since, why)) = hosted.unreachable(host) else {
                self.given_back.remove(&m.name);
                continue;
            };
            let grace = hosts
                .iter()
                .find(|h| h.name == host)
                .map_or(crate::hosts::UNREACHABLE_GRACE, |h| h.unreachable_grace());
            let away = since.elapsed().unwrap_or_default();
            if away < grace || self.given_back.contains(&m.name) {
                continue;
            }
            let back = self.team.tasks().unassign_all_of(&m.name)?;
            self.given_back.insert(m.name.clone());
            self.event(format!(
                "{} on {host} has not answered for {}s ({why}): {} task(s) back on the board",
                m.name,
                away.as_secs(),
                back.len()
            ));
        }
        Ok(())
    }

    /// With the spec's `nudge = true`, reminds each running member stalled
    /// on its task, once per task (see [`nudge_stalled`]).
    async fn nudge(
        &mut self,
        tf: &crate::team::TeamFile,
        mine: &[(Member, PaneRef)],
    ) -> Result<()> {
        self.nudge_every = crate::team::status::nudges(tf)
            .then(|| (crate::team::status::stall_after(tf) / 2).min(SAFETY_TICK));
        if self.nudge_every.is_none() {
            return Ok(());
        }
        // Only agents that read a message as words: a shell teammate
        // runs a message's text as a command.
        let reads = |m: &Member| {
            matches!(
                crate::agents::Agent::of(m),
                Ok(crate::agents::Agent::Exec(_) | crate::agents::Agent::Claude)
            )
        };
        let running: Vec<String> = mine
            .iter()
            .filter(|(m, _)| reads(m))
            .filter(|(m, _)| self.shared().seen.get(&m.name) == Some(&Seen::Running))
            .map(|(m, _)| m.name.clone())
            .collect();
        let stall_after = crate::team::status::stall_after(tf);
        let nudged = self
            .disk(move |team| nudge_stalled(&team, &running, stall_after))
            .await?;
        for line in nudged {
            self.event(line);
        }
        Ok(())
    }

    /// [`nudge`](Self::nudge) on its own timer, between looks at the panes
    /// (a lead whose panes' exits are events looks at them rarely).
    async fn nudge_now(&mut self) -> Result<()> {
        let tf = self.team.roster().read()?;
        let mine = self.my_panes(&tf);
        self.nudge(&tf, &mine).await
    }

    /// The members whose panes this lead supervises (on its backend), each
    /// with its pane.
    fn my_panes(&self, tf: &crate::team::TeamFile) -> Vec<(Member, PaneRef)> {
        let kind = self.opened.kind();
        tf.teammates()
            .filter(|m| m.backend_kind() == Some(kind))
            .filter_map(|m| Some((m.clone(), session::member_pane(m)?)))
            .collect()
    }

    /// True when the roster names panes other than those the last
    /// [`supervise`](Self::supervise) looked at (a teammate spawned or
    /// gone): with exit events, a pane is watched only once looked at.
    fn panes_changed(&self) -> Result<bool> {
        let tf = self.team.roster().read()?;
        let now: Vec<PaneRef> = self.my_panes(&tf).into_iter().map(|(_, p)| p).collect();
        Ok(now != self.looked_at)
    }

    /// A pane whose id no longer carries its member's mark (a restarted
    /// tmux server reused it for the user's own program): never touched.
    /// The member is recorded as lost, its pane id forgotten, and its tasks
    /// go back to the board.
    async fn record_lost(&mut self, m: &Member) -> Result<()> {
        self.check_record_fault()?;
        let at = crate::clock::now_ms();
        let pane = m.tmux_pane_id.clone();
        let (name, lost) = (m.name.clone(), pane.clone());
        let returned = self
            .disk(move |team| {
                team.roster().update_member(&name, |mm| {
                    mm.is_active = Some(false);
                    mm.tmux_pane_id = String::new();
                    mm.set_exit(Some(&ExitRecord {
                        code: None,
                        at,
                        lost: Some(lost),
                        said: None,
                    }));
                })?;
                Ok(team.tasks().unassign_all_of(&name)?)
            })
            .await?;
        self.event(format!(
            "pane {pane} no longer belongs to {} (left untouched){}",
            m.name,
            tasks_back(&returned)
        ));
        Ok(())
    }

    #[cfg(test)]
    fn check_record_fault(&mut self) -> Result<()> {
        if self.fail_records > 0 {
            self.fail_records -= 1;
            anyhow::bail!("no space left on device (injected)");
        }
        Ok(())
    }

    #[cfg(not(test))]
    fn check_record_fault(&mut self) -> Result<()> {
        Ok(())
    }

    async fn record_death(
        &mut self,
        m: &Member,
        status: PaneStatus,
        code: Option<i32>,
    ) -> Result<()> {
        self.check_record_fault()?;
        let at = crate::clock::now_ms();
        let name = m.name.clone();
        // Its last words: why it ended, when it said (an agent that cannot
        // reach its API prints the cause and exits 1).
        let said = self.ops().last_words(&m.name);
        let kept = said.clone();
        let returned = self
            .disk(move |team| {
                team.roster().update_member(&name, |mm| {
                    mm.is_active = Some(false);
                    mm.set_exit(Some(&ExitRecord {
                        code,
                        at,
                        lost: None,
                        said: kept,
                    }));
                })?;
                Ok(team.tasks().unassign_all_of(&name)?)
            })
            .await?;
        if matches!(status, PaneStatus::Exited { .. }) {
            // Keep nothing half-alive: its process group and the dead pane go.
            if let Err(e) =
                crate::ops::depart::close_pane(&self.opened, m, Duration::from_millis(500)).await
            {
                self.event(format!(
                    "could not close the dead pane of {}: {e:#}",
                    m.name
                ));
            }
        }
        let how = match (status, code) {
            (PaneStatus::Gone, _) => "its pane disappeared".to_string(),
            (_, Some(c)) => format!("exited with code {c}"),
            _ => "was killed by a signal".to_string(),
        };
        if !m.is_ai_lead() {
            let (name, said) = (m.name.clone(), format!("died: {how}"));
            let status = if code.is_some() { "failed" } else { "killed" };
            let told = self
                .disk(move |team| {
                    let ops = crate::ops::TeamOps::new(
                        crate::session::Location::of(&team.root, &team.name),
                        LEAD_NAME,
                    );
                    let out = ops.last_output(&name);
                    ops.notify_ai_lead(&[crate::ops::ai_lead::Notification::member(
                        &name, status, &said, out,
                    )])
                })
                .await;
            if let Err(e) = told {
                self.event(format!("could not tell the AI lead of {}: {e:#}", m.name));
            }
        }
        self.event(format!(
            "{} is dead: {how}{}{}",
            m.name,
            said.map(|s| format!(" (its last words: {s})"))
                .unwrap_or_default(),
            tasks_back(&returned)
        ));
        Ok(())
    }

    /// Reads again which requests wait for an answer (see `ops::requests`):
    /// at the start (a request that came before this lead), and after an
    /// inbox changed (an answer another process sent).
    pub async fn refresh_requests(&mut self) -> Result<()> {
        let now = self
            .disk(|team| crate::ops::requests::pending(&team))
            .await?;
        let (changed, gone) = self.take_requests(now);
        if !gone.is_empty() {
            let on_record = self
                .disk(|team| crate::ops::requests::answers(&team))
                .await
                .unwrap_or_default();
            for r in gone {
                self.event(crate::ops::requests::answered_line(
                    &r,
                    on_record.get(&r.id),
                ));
            }
        }
        if changed {
            self.changed();
        }
        Ok(())
    }

    /// Takes `now` as the requests that wait: whether the list changed, and
    /// the requests for the lead that left it (answered meanwhile).
    fn take_requests(
        &self,
        now: Vec<crate::ops::requests::PendingRequest>,
    ) -> (bool, Vec<crate::ops::requests::PendingRequest>) {
        let mut sh = self.shared();
        let stopping: Vec<(String, Instant)> = now
            .iter()
            .filter(|r| !r.for_lead())
            .map(|r| {
                let age = r.age().unwrap_or_default();
                (
                    r.to.clone(),
                    Instant::now().checked_sub(age).unwrap_or_else(Instant::now),
                )
            })
            .collect();
        for (name, since) in stopping {
            sh.stopping.entry(name).or_insert(since);
        }
        let now: Vec<_> = now.into_iter().filter(|r| r.for_lead()).collect();
        let changed = sh.requests != now;
        // A request answered elsewhere (the AI lead's answer_request, the
        // CLI) is said with who answered it.
        let gone: Vec<_> = sh
            .requests
            .iter()
            .filter(|r| !now.iter().any(|n| n.id == r.id))
            .cloned()
            .collect();
        sh.requests = now;
        (changed, gone)
    }

    /// Handles every unread entry of the lead's inbox, then consumes them.
    pub async fn handle_inbox(&mut self) -> Result<()> {
        let read = self
            .disk(|team| Ok(team.mailbox().read(LEAD_NAME)?))
            .await?;
        if let Some(q) = &read.quarantined {
            self.event(format!(
                "the lead's inbox was corrupt; copied to {}",
                q.display()
            ));
        }
        let fresh: Vec<Entry> = read.entries.into_iter().filter(Entry::is_unread).collect();
        if fresh.is_empty() {
            return Ok(());
        }
        // Approvals are carried out together: a `down` of 32 teammates
        // brings 32 at once, and one wait, one close and one roster write
        // serve them all.
        let mut approvals = Vec::new();
        for e in &fresh {
            match e.protocol() {
                Some(Message::ShutdownApproved(a)) => {
                    self.shared().heard.insert(e.from.clone(), Instant::now());
                    approvals.push(a);
                }
                _ => self.handle(e).await?,
            }
        }
        self.release_approved(approvals).await?;
        // The AI lead's seat gets what is meant for it before anything is
        // consumed: a supervisor that dies in between hands it over again,
        // and the hand-over takes each message once.
        let seat = self.for_ai_lead(&fresh).await?;
        if !seat.is_empty() {
            let n = self
                .disk(move |team| crate::ops::ai_lead::hand_over(&team, &seat))
                .await?;
            tracing::info!(n, "handed over to the AI lead");
        }
        let keys: Vec<_> = fresh.iter().map(Entry::key).collect();
        self.disk(move |team| Ok(team.mailbox().consume(LEAD_NAME, &keys)?))
            .await?;
        view::consumed(&mut self.shared(), &fresh);
        self.changed();
        Ok(())
    }

    /// The entries of the lead's inbox meant for the team's AI lead, if it
    /// has one: every plain message (from anyone but the AI lead itself),
    /// and, when it answers them, the plan and permission requests. The
    /// frames the supervisor acts on (shutdown approvals) and the ones it
    /// only shows (idle notifications) stay with it.
    async fn for_ai_lead(&self, fresh: &[Entry]) -> Result<Vec<Entry>> {
        let ai = self.disk(|team| {
            let ops = crate::ops::TeamOps::new(
                crate::session::Location::of(&team.root, &team.name),
                LEAD_NAME,
            );
            ops.ai_lead()
        });
        let Some((_, how)) = ai.await? else {
            return Ok(Vec::new());
        };
        Ok(fresh
            .iter()
            .filter(|e| e.from != crate::names::AI_LEAD_NAME)
            .filter(|e| match e.protocol() {
                None => true,
                Some(Message::PlanApprovalRequest(_) | Message::PermissionRequest(_)) => {
                    how.approves
                }
                Some(_) => false,
            })
            .cloned()
            .collect())
    }

    /// Tells the AI lead (if the team has one) of the tasks that completed
    /// or failed since it was last told.
    async fn notify_tasks(&mut self) {
        let told = self
            .disk(|team| {
                crate::ops::TeamOps::new(
                    crate::session::Location::of(&team.root, &team.name),
                    LEAD_NAME,
                )
                .notify_ai_lead_of_tasks()
            })
            .await;
        match told {
            Ok(0) => {}
            Ok(n) => tracing::info!(n, "told the AI lead of finished tasks"),
            Err(e) => self.event(format!("could not tell the AI lead of a task: {e:#}")),
        }
    }

    /// Closes the panes of the teammates that approved their shutdown
    /// (each given up to 2 s to exit by itself, all in one wait) and takes
    /// them off the roster with their tasks back on the board.
    async fn release_approved(&mut self, approvals: Vec<protocol::ShutdownApproved>) -> Result<()> {
        if approvals.is_empty() {
            return Ok(());
        }
        let tf = self.team.roster().read()?;
        let mut members = Vec::new();
        for a in approvals {
            let Some(m) = tf.member(&a.from).cloned() else {
                continue; // already released (e.g. by `swarm shutdown`)
            };
            if a.pane_id.as_deref().is_some_and(|p| p != m.tmux_pane_id) {
                self.event(format!(
                    "ignored a shutdown approval from {} for another pane",
                    a.from
                ));
                continue;
            }
            if !members.iter().any(|x: &Member| x.name == m.name) {
                members.push(m);
            }
        }
        if members.is_empty() {
            return Ok(());
        }
        let left = self.ops().depart_approved(&members).await?;
        {
            let mut sh = self.shared();
            for l in &left {
                sh.seen.remove(&l.name);
                sh.stopping.remove(&l.name);
            }
        }
        for l in &left {
            let n = l.returned_tasks.len();
            self.event(format!(
                "{} shut down; {n} task(s) returned to the board",
                l.name
            ));
            // A worktree holding work is kept and said, as `swarm
            // shutdown` and `down` say it.
            if let Some(w) = &l.worktree {
                self.event(w.clone());
            }
        }
        Ok(())
    }
    async fn handle(&mut self, e: &Entry) -> Result<()> {
        self.shared().heard.insert(e.from.clone(), Instant::now());
        match e.protocol() {
            Some(Message::ShutdownRejected(r)) => {
                self.shared().stopping.remove(&r.from);
                self.event(format!("{} declined to shut down: {}", r.from, r.reason))
            }
            Some(msg @ (Message::PlanApprovalRequest(_) | Message::PermissionRequest(_))) => {
                let id = msg.request_id().unwrap_or("?").to_string();
                if let Some(r) = crate::ops::requests::PendingRequest::to_lead(e) {
                    let mut sh = self.shared();
                    if !sh.requests.iter().any(|x| x.id == r.id) {
                        sh.requests.push(r);
                    }
                }
                self.event(format!(
                    "{} asks: {} (request {id}; a approves, r rejects)",
                    e.from,
                    msg.one_line()
                ));
            }
            Some(msg) => self.event(format!("{}: {}", e.from, msg.one_line())),
            None => {
                let first = e.text.lines().next().unwrap_or("");
                self.event(format!(
                    "{}: {}",
                    e.from,
                    first.chars().take(200).collect::<String>()
                ));
            }
        }
        Ok(())
    }

    /// The plain status view (until the TeamsDialog TUI): members, tasks and
    /// the latest events, redrawn only when something changed.
    pub fn draw(&mut self, out: &mut impl Write) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        self.dirty = false;
        let tf = self.state.refresh(&self.team, &self.shared)?;
        let tasks: Vec<&crate::tasks::Task> = self.state.tasks().collect();
        write!(out, "\x1b[H\x1b[2J")?;
        writeln!(
            out,
            "swarm lead · team {} · {} backend",
            self.team.name,
            self.opened.kind()
        )?;
        for m in tf.teammates() {
            let state = match self.shared().seen.get(&m.name).cloned() {
                Some(Seen::Running) if m.is_active == Some(true) => "working".to_string(),
                Some(Seen::Running) => "running".to_string(),
                Some(Seen::Dead(Some(c))) => format!("dead (exit {c})"),
                Some(Seen::Dead(None)) => "dead".to_string(),
                Some(Seen::Lost) => "lost".to_string(),
                None => "starting".to_string(),
            };
            let task = tasks
                .iter()
                .find(|t| {
                    t.owner.as_deref() == Some(&m.name)
                        && t.status == crate::tasks::Status::InProgress
                })
                .map(|t| format!("#{} {}", t.id, t.subject))
                .unwrap_or_default();
            writeln!(
                out,
                "  @{:<16} {:<8} {:<14} {}",
                crate::text::escape_line(&m.name),
                crate::text::escape_line(m.agent().unwrap_or("-")),
                state,
                crate::text::escape_line(&task)
            )?;
        }
        let done = tasks
            .iter()
            .filter(|t| t.status == crate::tasks::Status::Completed)
            .count();
        writeln!(out, "tasks {done}/{} completed", tasks.len())?;
        let events: Vec<String> = self
            .shared()
            .events
            .iter()
            .rev()
            .take(12)
            .cloned()
            .collect();
        for e in events.into_iter().rev() {
            writeln!(out, "  {e}")?;
        }
        out.flush()?;
        Ok(())
    }
}

/// "; tasks #1, #2 back on the board", or nothing.
/// The task metadata key that records a stalled member's reminder, so it
/// is sent once per task (derived from the files: a new lead sends none
/// again).
pub const NUDGED_KEY: &str = "swarmNudged";

/// The spec's `nudge = true`: each of `running` (agents that read words,
/// never a shell teammate) that is stalled on a task
/// (`Attention::stalled`) gets one reminder from the lead for that task,
/// recorded in the task's metadata ([`NUDGED_KEY`]). Nothing is killed.
/// Returns a line per reminder sent, for the dialog's events.
fn nudge_stalled(team: &Team, running: &[String], stall_after: Duration) -> Result<Vec<String>> {
    use crate::team::status::{Attention, ByOwner, MemberStatus, Progress};
    let mut sent = Vec::new();
    if running.is_empty() {
        return Ok(sent);
    }
    let list = team.tasks().list()?;
    let board = ByOwner::of(&list.tasks);
    for name in running {
        let Some(task) = board.current(name) else {
            continue;
        };
        if task
            .metadata
            .as_ref()
            .is_some_and(|m| m.contains_key(NUDGED_KEY))
        {
            continue;
        }
        let Some(p) = Progress::of(team, name, &board) else {
            continue;
        };
        let Some(a) = Attention::stalled(&MemberStatus::Running, &p, stall_after) else {
            continue;
        };
        let last = p
            .last_line
            .as_deref()
            .map(|l| format!(" Your last output: {}.", crate::text::escape_line(l)))
            .unwrap_or_default();
        let text = format!(
            "[stall] You have been on task #{} ({}) with no output and no change to the task \
             for {}.{last} If you are stuck, tell the team lead what blocks you.",
            task.id,
            crate::text::escape_line(&task.subject),
            a.label().trim_start_matches("stalled "),
        );
        let summary = format!("reminder: task #{} stalled", task.id);
        team.send_text(LEAD_NAME, name, &text, Some(&summary), true)?;
        let mut md = serde_json::Map::new();
        md.insert(
            NUDGED_KEY.into(),
            serde_json::Value::from(crate::clock::now_iso()),
        );
        let upd = crate::tasks::TaskUpdate {
            metadata: Some(md),
            ..Default::default()
        };
        team.tasks().update(&task.id, upd, LEAD_NAME)?;
        sent.push(format!(
            "{name} is {} on task #{}: reminded once",
            a.label(),
            task.id
        ));
    }
    Ok(sent)
}

fn tasks_back(returned: &[crate::tasks::Task]) -> String {
    if returned.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = returned.iter().map(|t| format!("#{}", t.id)).collect();
    format!("; tasks {} back on the board", ids.join(", "))
}

/// Runs the lead until the team is deleted, the user leaves the TUI, or
/// the process is told to stop. With a terminal the TeamsDialog runs on
/// this thread and the supervisor on the runtime's worker; without one, a
/// plain status view is printed.
pub fn run_lead(mut lead: Lead, rt: &tokio::runtime::Runtime) -> Result<()> {
    use std::io::IsTerminal;
    let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if lead.watching && !terminal {
        anyhow::bail!(
            "watching team {} needs a terminal for the TeamsDialog; `swarm status --team {}` \
             shows it once",
            lead.team.name,
            lead.team.name
        );
    }
    if !lead.watching {
        if lead.lead_lock.is_none() {
            // `swarm lead` in a pane `up` just opened: `up` holds no lead
            // lock, so a short wait covers only a lead that is exiting.
            rt.block_on(lead.lock(Duration::from_secs(2)))?;
        }
        crate::team::locks::claim_lead(&lead.team)?;
    }
    if !terminal {
        return rt.block_on(supervise_loop(lead, true));
    }
    let inputs = crate::tui::Inputs::default();
    lead.wake = Some(wake::Wake::new(inputs.waker()));
    let in_process = !lead.opened.caps().panes_outlive_lead;
    let watching = lead.watching;
    let mut ui = control::LeadUi::new(&lead, rt.handle().clone());
    let supervisor = rt.spawn(supervise_loop(lead, false));
    let exit = crate::tui::run(&mut ui, crate::tui::RunOptions::from_env(inputs));
    supervisor.abort();
    match exit? {
        crate::tui::Exit::Quit if in_process => {
            note("left the TeamsDialog; its in-process teammates ended with it");
            Ok(())
        }
        crate::tui::Exit::Quit if watching => {
            note("stopped watching; the team's own lead runs it");
            Ok(())
        }
        crate::tui::Exit::Quit => {
            note("left the TeamsDialog; teammates keep running (`swarm up` comes back)");
            Ok(())
        }
        crate::tui::Exit::Signal(sig) => {
            tracing::info!(sig, "signal: the lead exits; teammates keep running");
            Ok(())
        }
        crate::tui::Exit::TerminalLost => {
            tracing::info!("the terminal went away: the lead exits; teammates keep running");
            Ok(())
        }
    }
}

/// The supervisor: inbox handling on every change, pane liveness on a tick.
async fn supervise_loop(mut lead: Lead, plain_view: bool) -> Result<()> {
    // Without the board and roster watchers a task created or a teammate
    // killed from the command line reached the dialog only on its 30 s tick.
    let (mut rx, _watching) = watch::watch_files(&lead)?;
    // With the dialog up, the TUI owns SIGTERM (with SIGHUP and SIGINT): it
    // ends tui::run with Exit::Signal and run_lead aborts this loop. Only
    // the plain view takes it here, so it is registered once.
    let mut term = if plain_view {
        Some(tokio::signal::unix::signal(
            tokio::signal::unix::SignalKind::terminate(),
        )?)
    } else {
        None
    };
    // Panes whose backend reports exits as they happen (in-process; tmux
    // with pidfds) are checked then, and when the roster names a pane not
    // looked at yet, with a slow safety tick; the others are polled. A
    // watcher observes panes by id, which no event covers: it polls.
    let exit_events = lead.opened.caps().exit_events && !lead.watching;
    // Panes on other machines report no exits here, and a machine that
    // stops answering is seen by looking: looked at every few seconds.
    let safety = match lead.opened.hosted.is_some() {
        true => safety_tick().min(REMOTE_EVERY),
        false => safety_tick(),
    };
    let mut tick = tokio::time::interval(if exit_events { safety } else { SUPERVISE_EVERY });
    if exit_events {
        tracing::info!(
            safety_tick_s = safety.as_secs(),
            "pane exits are events; panes are listed only then, when the roster changes, and on the safety tick"
        );
    } else {
        let why = if lead.watching {
            "a watcher looks at panes by id"
        } else {
            "this backend reports no pane exits here (tmux needs pidfds: Linux 5.3 or later)"
        };
        tracing::info!(
            backend = %lead.opened.kind(),
            "pane liveness is polled every {SUPERVISE_EVERY:?}: {why}"
        );
    }
    // Reminders to stalled members, where the spec asks for them, on a
    // timer of their own (a polling loop reminds on each look already).
    let mut nudge_tick: Option<(Duration, tokio::time::Interval)> = None;
    let mut stdout = std::io::stdout();
    let started = Instant::now();
    // The inbox is read at the start, after each tick (a safety net for an
    // event that never came) and when it changed; not for a change to
    // another inbox, the roster or the board.
    let mut inbox_due = true;
    // Requests that came before this lead (its predecessor consumed them,
    // or none ran) wait in the files: read them once now.
    if let Err(e) = lead.refresh_requests().await {
        lead.event(format!("error reading the pending requests: {e:#}"));
    }
    // While a `swarm down` runs, the teammates' ends and the lead's inbox
    // are its own (see `DownLock`): the lead leaves both alone, and looks
    // again when it ends (this resolves then).
    let mut down_ends: Option<tokio::sync::oneshot::Receiver<()>> = None;
    loop {
        if !lead.team.roster().exists() {
            tracing::info!("the team was deleted; the lead exits");
            return Ok(());
        }
        if down_ends.is_none() {
            down_ends = lead.down_running();
        }
        let aside = down_ends.is_some();
        // A watcher reads the lead's inbox (the view does) but never
        // consumes it: it is the team's own lead's.
        if !aside
            && std::mem::take(&mut inbox_due)
            && !lead.watching
            && let Err(e) = lead.handle_inbox().await
        {
            lead.event(format!("error reading the lead's inbox: {e:#}"));
        }
        if plain_view {
            lead.draw(&mut stdout)?;
        }
        let every = lead.nudge_every.filter(|_| exit_events);
        if nudge_tick.as_ref().map(|(d, _)| *d) != every {
            nudge_tick = every.map(|d| {
                (
                    d,
                    tokio::time::interval_at(tokio::time::Instant::now() + d, d),
                )
            });
        }
        tokio::select! {
            _ = tick.tick() => {
                inbox_due = true;
                if aside {
                    continue;
                }
                let looked = if lead.watching {
                    lead.watch_panes().await
                } else {
                    lead.supervise().await
                };
                if let Err(e) = looked {
                    lead.event(format!("error checking panes: {e:#}"));
                }
                // An answer another process sent (`swarm send
                // --plan-response`, `answer_request` over MCP) takes a
                // request off the list: looked for only while one waits.
                if !lead.shared().requests.is_empty()
                    && let Err(e) = lead.refresh_requests().await
                {
                    lead.event(format!("error reading the pending requests: {e:#}"));
                }
            }
            _ = lead.opened.backend.changes(), if exit_events => {
                inbox_due = true;
                if aside {
                    continue;
                }
                if let Err(e) = lead.supervise().await {
                    lead.event(format!("error checking panes: {e:#}"));
                }
            }
            Some(woke) = rx.recv() => {
                // One refresh for a burst: a write is several events.
                inbox_due |= woke == watch::Woke::LeadInbox;
                let mut shown = woke == watch::Woke::Shown;
                while let Ok(woke) = rx.try_recv() {
                    inbox_due |= woke == watch::Woke::LeadInbox;
                    shown |= woke == watch::Woke::Shown;
                }
                // A task finished is news for the AI lead, if there is one.
                if shown && !lead.watching {
                    lead.notify_tasks().await;
                }
                // A pane the roster names that no look has found yet (a
                // teammate spawned by another process) is looked at now,
                // so its exit is an event from then on.
                if shown
                    && exit_events
                    && !aside
                    && lead.panes_changed().unwrap_or(true)
                    && let Err(e) = lead.supervise().await
                {
                    lead.event(format!("error checking panes: {e:#}"));
                }
                lead.changed();
            }
            Some(_) = async { Some(nudge_tick.as_mut()?.1.tick().await) }, if nudge_tick.is_some() => {
                if let Err(e) = lead.nudge_now().await {
                    lead.event(format!("error reminding stalled members: {e:#}"));
                }
            }
            _ = async { down_ends.as_mut().expect("a down to wait for").await }, if aside => {
                // The tick, due at once, looks at the panes and the inbox.
                down_ends = None;
                tick.reset_immediately();
                tracing::info!("the `swarm down` ended: the lead looks again");
            }
            Some(_) = async { term.as_mut()?.recv().await }, if term.is_some() => {
                tracing::info!(uptime_s = started.elapsed().as_secs(), "SIGTERM: the lead exits; teammates keep running");
                return Ok(());
            }
        }
    }
}

/// What a file operation of the lead ([`Lead::disk`]) came to. One the
/// runtime cancelled (the lead is ending: its terminal went away, or it
/// was told to stop) says so; only a panic is called one.
fn settled<T>(joined: Result<Result<T>, tokio::task::JoinError>) -> Result<T> {
    match joined {
        Ok(done) => done,
        Err(e) if e.is_panic() => {
            Err(anyhow::Error::new(e).context("a file operation of the lead panicked"))
        }
        Err(e) => Err(anyhow::Error::new(e)
            .context("a file operation of the lead was cancelled: the lead is ending")),
    }
}

#[cfg(test)]
mod tests;
