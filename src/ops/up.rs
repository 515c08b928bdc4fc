//! Bringing a team up, the part that is the team's and not the terminal's
//! (`commands/up.rs` starts the lead and attaches): the team created when
//! it is missing, a spec's teammates reserved on the roster and its tasks
//! put on the board, its session opened; later, under the lifecycle lock,
//! whatever an interrupted `up` or `spawn` left recovered and every
//! member without a pane spawned. Each returns the lines to tell the user.

use super::TeamOps;
use super::spawn::{SpawnRequest, spawn_members_locked};
use crate::config::{Applied, TeamSpec};
use crate::session::{Location, Session};
use crate::team::{Member, SwarmField, TeamFile};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use swarm_backends::{HomeSessions, PaneRef, Placement, SpawnSpec};

/// What [`prepare`] did before any pane opened.
pub struct Prepared {
    pub ops: TeamOps,
    pub session: Session,
    /// This `up` created the team.
    pub created: bool,
    /// What became of the spec's tasks, one line.
    pub tasks: Option<String>,
}

/// The part of `up` that opens no pane: the team created when missing
/// (`cwd` the lead's), the spec's teammates and tasks on the roster and
/// board (`demo`: its tasks again on a finished board), the backend chosen
/// (the location's, else the spec's, else the record's or detection) and
/// opened. Nothing half-made stays: a team this call created is deleted
/// again when the rest fails, so the error is the whole story. A team
/// swarm did not start is refused before anything is written.
pub fn prepare(
    mut location: Location,
    spec: Option<&TeamSpec>,
    lead: Option<&crate::config::LeadSpec>,
    demo: bool,
    cwd: &Path,
) -> Result<Prepared> {
    let ops = TeamOps::new(location.clone(), crate::names::LEAD_NAME);
    let team = ops.team().clone();
    let created = !team.roster().exists();
    if created {
        crate::names::validate_team(&team.name)?;
        // The spec's teammates go on the roster as it is created.
        let members = match spec {
            Some(spec) => ops.new_members(spec, None)?,
            None => Vec::new(),
        };
        super::teams::create_with(&team.root, &team.name, None, cwd, members)?;
    } else {
        ops.require_own("lead it or start anything in it")?;
    }
    let done = (|| -> Result<(Session, Option<String>)> {
        let mut tasks = None;
        if let Some(spec) = spec {
            if location.backend.is_none() {
                location.backend = spec
                    .backend_choice()?
                    .and_then(crate::cli::BackendChoice::kind);
            }
            tasks = Some(ops.apply_spec(spec, demo)?);
        }
        let session = Session::open(&location)?;
        if let Some(lead) = lead.or(spec.and_then(|s| s.lead.as_ref())) {
            for line in ops.apply_lead(lead, cwd)? {
                tracing::info!("{line}");
            }
        }
        Ok((session, tasks))
    })();
    match done {
        Ok((session, tasks)) => Ok(Prepared {
            ops,
            session,
            created,
            tasks,
        }),
        Err(e) => {
            if created && let Err(d) = team.roster().delete(true) {
                tracing::warn!("could not delete the half-made team {}: {d:#}", team.name);
            }
            Err(e)
        }
    }
}

impl TeamOps {
    /// Puts the spec's teammates on the roster (reserved: no pane yet) and
    /// its tasks on an empty board; what already exists is kept, so `up`
    /// again on a running team creates nothing twice. Each teammate's agent
    /// must be installed. Returns what became of the tasks.
    pub fn apply_spec(&self, spec: &TeamSpec, demo: bool) -> Result<String> {
        let team = self.team();
        crate::hosts::record(&team.root, &team.name, &spec.hosts)?;
        let tf = team.roster().read()?;
        let new = self.new_members(spec, Some(&tf))?;
        if !new.is_empty() {
            // One roster write for the whole spec.
            team.roster().add_members(new)?;
        }
        // The spec's stall bound and nudge (`team::status::stall_after`),
        // written only when they change.
        let stall = spec.stall_after.map(serde_json::Value::from);
        let nudge = spec.nudge.then_some(serde_json::Value::Bool(true));
        let field = |name: &str| tf.extra.get(name).cloned();
        use crate::team::status::{NUDGE_FIELD, STALL_AFTER_FIELD};
        if field(STALL_AFTER_FIELD) != stall || field(NUDGE_FIELD) != nudge {
            team.roster().update(|tf| {
                for (name, v) in [(STALL_AFTER_FIELD, &stall), (NUDGE_FIELD, &nudge)] {
                    match v {
                        Some(v) => tf.extra.insert(name.to_string(), v.clone()),
                        None => tf.extra.remove(name),
                    };
                }
                Ok::<_, crate::team::RosterError>(())
            })?;
        }
        // The demo runs again on a finished board; a spec's tasks run once.
        let applied = if demo {
            spec.apply_again(team)?
        } else {
            spec.apply(team)?
        };
        Ok(match applied {
            Applied::Created(tasks) => format!("created {} task(s)", tasks.len()),
            Applied::AlreadyHadTasks(n) => {
                format!("the task board already has {n} task(s); none added")
            }
        })
    }

    /// The spec's teammates that are not on the roster `tf` yet (`None`:
    /// no roster yet, all of them), reserved (no pane yet); each one's
    /// agent must be installed.
    pub fn new_members(&self, spec: &TeamSpec, tf: Option<&TeamFile>) -> Result<Vec<Member>> {
        let team = self.team();
        let mut new = Vec::new();
        for (i, t) in spec.teammates.iter().enumerate() {
            if tf.is_some_and(|tf| tf.member(&t.name).is_some()) {
                continue;
            }
            let mut m = t.member(&team.name, i, &spec.dir);
            if t.worktree.unwrap_or(spec.worktree) {
                crate::worktree::want(&mut m);
            }
            crate::agents::check_available(t.agent()?, t.command.as_deref())
                .with_context(|| format!("teammate {}", t.name))?;
            new.push(m);
        }
        Ok(new)
    }

    /// A lead that hosts its teammates' panes (in-process) takes over a
    /// team whose previous lead ended: those panes ended with it, so its
    /// in-process members are put back to "no pane yet" (pane, pid, mark
    /// and exit record cleared) and [`TeamOps::complete`] starts them
    /// again. Called holding the lead lock, so no other lead hosts them.
    pub fn respawn_hosted(&self) -> Result<Vec<String>> {
        let (_, again) = self.team().roster().update(|tf| {
            let mut again = Vec::new();
            for m in tf.members.iter_mut().filter(|m| !m.is_lead()) {
                if m.backend_type.as_deref() != Some("in-process") || m.tmux_pane_id.is_empty() {
                    continue;
                }
                m.tmux_pane_id.clear();
                m.is_active = Some(false);
                for f in [
                    SwarmField::Exit,
                    SwarmField::Pid,
                    SwarmField::PidStart,
                    SwarmField::Nonce,
                ] {
                    m.set_swarm_field(f, serde_json::Value::Null);
                }
                again.push(m.name.clone());
            }
            Ok(again)
        })?;
        Ok(if again.is_empty() {
            Vec::new()
        } else {
            vec![format!(
                "{} ended with the previous lead; starting them again",
                again.join(", ")
            )]
        })
    }

    /// Under the lifecycle lock: adopts, recovers or closes what an earlier
    /// interrupted `up`/`spawn` left (see [`super::recover`]), then spawns
    /// every member that was never started, on `session`. One whose end is
    /// recorded has no pane either (a lead that finds its pane another
    /// program's forgets the id and records it lost) but is not started
    /// here: `up --resume`/`--fresh` brings it back, as `up` says. (A new
    /// lead recording a loss just before this look had `up` start that one
    /// member anew and not the others.)
    pub async fn complete(&self, session: &Session) -> Result<Vec<String>> {
        let team = self.team();
        let mut lines = super::recover::reconcile(team, session).await?.lines();
        let tf = team.roster().read()?;
        let reqs = tf
            .teammates()
            .filter(|m| crate::team::status::never_started(m))
            .map(reserved_request)
            .collect::<Result<Vec<_>>>()?;
        if reqs.is_empty() {
            return Ok(lines);
        }
        for s in spawn_members_locked(team, session, &reqs).await? {
            lines.push(format!(
                "spawned {} in pane {}{}{}",
                s.name,
                s.pane,
                super::spawn::apart_note(s.apart.as_deref()),
                super::spawn::passed_note(&s.passed)
            ));
        }
        Ok(lines)
    }

    /// Starts the lead's pane (`lead`) in the team's home session: the
    /// session made for it (marked with the lead's nonce), or a new window
    /// of it when the session outlived its last lead (e.g. kill -9, or
    /// `q`). The session record then names the session, the lead's pane and
    /// the home's mark, and new teammates go beside the lead.
    pub async fn open_lead_home(
        &self,
        opened: &Session,
        homes: &dyn HomeSessions,
        lead: SpawnSpec,
    ) -> Result<PaneRef> {
        let session = opened
            .record()
            .session
            .unwrap_or_else(|| crate::session::session_name(&self.team().name));
        let (lead_pane, made_home) = if homes.home_exists(&session).await? {
            let spec = lead.placement(Placement::NewWindow {
                session: Some(session.clone()),
            });
            (opened.backend.spawn(&spec).await?, false)
        } else {
            (homes.open_home(&session, &lead).await?, true)
        };
        let version = opened.backend.checked_version().await;
        opened.update_record(|r| {
            r.session = Some(session);
            r.lead_pane = Some(lead_pane.id.clone());
            // The session keeps the mark it was made with; a session of
            // before `home_nonce` was marked with its first lead's nonce.
            if made_home {
                r.home_nonce = Some(lead_pane.nonce.clone());
            } else if r.home_nonce.is_none() {
                r.home_nonce = r.lead_nonce.clone();
            }
            r.lead_nonce = Some(lead_pane.nonce.clone());
            r.tmux_version = version.or(r.tmux_version);
        })?;
        opened.set_placement(Some(Placement::RightOfLead {
            lead: lead_pane.id.clone(),
        }));
        Ok(lead_pane)
    }

    /// A team whose panes are all gone: its teammates brought back, or
    /// started anew, as `how` says (see [`super::resume`]);
    /// [`TeamOps::complete`] then opens their panes.
    pub async fn bring_back(
        &self,
        session: &Session,
        how: super::resume::Comeback,
    ) -> Result<Vec<String>> {
        super::resume::comeback(self.team(), session, how).await
    }
}

/// The spawn of a member the roster holds with no pane yet.
pub(crate) fn reserved_request(m: &Member) -> Result<SpawnRequest> {
    Ok(SpawnRequest {
        name: m.name.clone(),
        agent: m.agent().map(str::to_string),
        prompt: None,
        model: m.model.clone(),
        color: m.color.clone(),
        cwd: match &m.cwd {
            Some(c) => PathBuf::from(c),
            None => std::env::current_dir().context("reading the current directory")?,
        },
        plan_mode_required: m.plan_mode_required == Some(true),
        mode: None,
        // An array of strings, or absent; anything else is the member's
        // field error, never an empty command.
        command: m.command()?.unwrap_or_default(),
        env: crate::pane_env::swarm_env(m)?,
        pass_env: crate::pane_env::pass_env(m)?,
        worktree: crate::worktree::wanted(m),
        host: m.host().map(str::to_string),
    })
}
