//! Every team verb, once (DESIGN §11): the operations the front ends (the
//! CLI in `commands/`, the TeamsDialog through `lead::control`, `swarm
//! mcp`) call, each returning a typed result that the front end renders
//! (a text line, JSON, a notice, MCP content). No front end reads the
//! roster to finish a verb's job.
//!
//! [`TeamOps`] is the handle: one team, the member acting, and the team's
//! [`Session`] (its pane backend), opened on first need, so a verb that
//! touches no pane (a send, a task) never pays for finding the backend.
//!
//! - [`ai_lead`]: the AI lead's seat: a coding agent leading the team,
//!   what reaches its conversation (messages handed over, the user's,
//!   `<task-notification>`s) and its instructions.
//! - [`snapshot`]: [`TeamSnapshot`], everything a front end shows about
//!   a team, derived from the files plus one backend status call.
//! - [`requests`]: plan, permission and shutdown requests with no answer
//!   yet, derived from the inboxes and histories, and answering one.
//! - [`spawn`]: adding a teammate (roster entry, first prompt, pane).
//! - [`depart`]: leaving the team, one path for kill, shutdown, prune,
//!   down and a shutdown approved through the lead: the pane closed, the
//!   member off the roster, its tasks back on the board, its worktree
//!   retired.
//! - [`panes`]: a member's pane: its liveness, the kill ladder, the wait
//!   for its end.
//! - [`doctor`]: what is wrong with a team, each with a fix that is true
//!   for it.
//! - [`hosts`]: another machine of a spec (`[[host]]`) checked: ssh,
//!   tmux, swarm's version, the shared state root, the wake-up path.
//! - [`ring`]: a teammate on another machine rung through its host
//!   (`swarm ring` over ssh), batched per host.
//! - [`mail`]: sending, reading and waiting on an inbox.
//! - [`board`]: the task verbs (create, list, get, update, claim, delete).
//! - [`output`]: what a teammate's pane printed, escapes stripped.
//! - [`teams`]: the teams under a root: create, delete, list (with whose
//!   each is).
//! - [`up`]: bringing a team up, the team's part: created, a spec applied,
//!   an interrupted start recovered, every reserved member spawned.
//! - [`work`]: a teammate's worktree: its diff, merging it.
//! - [`revive`]: a teammate that left (its conversation recorded) brought
//!   back by a message sent to it.
//! - [`recover`]: what an interrupted `up` or `spawn`, or a rebuilt
//!   roster, left: marked panes adopted or closed.
//! - [`resume`]: a team whose panes are all gone brought back (`up
//!   --resume` / `--fresh`), each teammate's conversation where its CLI
//!   can resume one.
//!
//! A verb that changes, stops or deletes anything refuses a team swarm did
//! not start (see `team::owner`) before it does anything.

pub mod ai_lead;
pub mod board;
pub mod depart;
pub mod doctor;
pub mod hosts;
pub mod mail;
pub mod output;
pub mod panes;
pub mod recover;
pub mod requests;
pub mod resume;
pub mod revive;
pub mod ring;
pub mod snapshot;
pub mod spawn;
pub mod teams;
pub mod up;
pub mod work;

pub use snapshot::TeamSnapshot;

use crate::names::LEAD_NAME;
use crate::session::{Location, Session};
use crate::team::Team;
use anyhow::Result;
use std::sync::{Arc, Mutex};

/// One team, as one member acts on it.
pub struct TeamOps {
    team: Team,
    me: String,
    location: Location,
    session: Mutex<Option<Arc<Session>>>,
    /// The acting `team-lead` is the team's AI lead (its MCP server), not
    /// the human: see [`TeamOps::for_ai_lead`].
    ai_lead: bool,
}

impl std::fmt::Debug for TeamOps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamOps")
            .field("team", &self.team.name)
            .field("me", &self.me)
            .finish_non_exhaustive()
    }
}

impl TeamOps {
    /// The team at `location`, acting as `me`; its session is opened when
    /// a verb first needs the backend.
    pub fn new(location: Location, me: &str) -> TeamOps {
        TeamOps {
            team: Team::new(&location.root, &location.team),
            me: me.to_string(),
            location,
            session: Mutex::new(None),
            ai_lead: false,
        }
    }

    /// [`TeamOps::new`] for a team that must exist: its roster is read
    /// now, so a missing or unreadable team is the error (a misspelt team
    /// is said at once, never taken for an empty one).
    pub fn existing(location: Location, me: &str) -> Result<TeamOps> {
        let ops = TeamOps::new(location, me);
        ops.team.roster().read()?;
        Ok(ops)
    }

    /// `name`'s roster entry; one that is not there is
    /// [`crate::team::RosterError::NoSuchMember`] (exit 1 in every command).
    pub fn member(&self, name: &str) -> Result<crate::team::Member> {
        let tf = self.team.roster().read()?;
        tf.member(name).cloned().ok_or_else(|| {
            crate::team::RosterError::NoSuchMember {
                team: self.team.name.clone(),
                name: name.to_string(),
                members: tf.member_names(),
            }
            .into()
        })
    }

    /// The names on the roster, lead first (for "did you mean" notes).
    pub fn member_names(&self) -> Result<Vec<String>> {
        Ok(self.team.roster().read()?.member_names())
    }

    /// Whether `name` has left the team or its pane process ended (as the
    /// roster records it).
    pub fn member_gone(&self, name: &str) -> bool {
        self.team
            .roster()
            .read()
            .map(|tf| {
                tf.member(name)
                    .is_none_or(|m| crate::team::status::recorded_exit(m).is_some())
            })
            .unwrap_or(true)
    }

    /// The team on an already open session (the lead's), acting as `me`.
    pub fn with_session(team: Team, me: &str, session: Arc<Session>) -> TeamOps {
        TeamOps {
            location: Location::of(&team.root, &team.name),
            team,
            me: me.to_string(),
            session: Mutex::new(Some(session)),
            ai_lead: false,
        }
    }

    /// The same, acting for the team's AI lead: as `team-lead`, but
    /// answering teammates' requests only when its `[lead]` says
    /// `approves`, each answer recorded as the AI lead's.
    pub fn for_ai_lead(mut self) -> TeamOps {
        self.ai_lead = true;
        self
    }

    /// Whether the acting lead is the team's AI lead.
    pub fn is_ai_lead(&self) -> bool {
        self.ai_lead
    }

    /// The team as the lead acts on it.
    pub fn as_lead(team: Team, session: Arc<Session>) -> TeamOps {
        TeamOps::with_session(team, LEAD_NAME, session)
    }

    pub fn team(&self) -> &Team {
        &self.team
    }

    /// Who acts (`--as`; `team-lead` by default).
    pub fn me(&self) -> &str {
        &self.me
    }

    /// The team's session, opened now if it was not.
    pub fn session(&self) -> Result<Arc<Session>> {
        let mut s = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = &*s {
            return Ok(s.clone());
        }
        let opened = Arc::new(Session::open(&self.location)?);
        *s = Some(opened.clone());
        Ok(opened)
    }

    /// The session if one is open or can be opened; `None` (logged) when
    /// the backend cannot be reached from here (a reader then goes by the
    /// roster's records).
    pub fn session_if_reachable(&self) -> Option<Arc<Session>> {
        crate::dropped::ignore(self.session(), "opening the team's backend")
    }

    /// The refusal of `action` on a team swarm did not start.
    pub fn require_own(&self, action: &str) -> Result<()> {
        Ok(self.team.require_own(action)?)
    }

    /// Runs blocking file work (a lock wait, an fsync) off the async worker.
    pub(crate) async fn blocking<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Team) -> Result<T> + Send + 'static,
    {
        let team = self.team.clone();
        tokio::task::spawn_blocking(move || work(team))
            .await
            .map_err(|e| anyhow::anyhow!("a file operation panicked: {e}"))?
    }
}
