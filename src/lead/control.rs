//! The TeamsDialog's view of the lead ([`LeadUi`], a [`LeadControl`]):
//! snapshots gathered from the files and the supervisor's shared state, and
//! each key's action carried out through the same code the `swarm`
//! commands use (kill ladder, shutdown request, sends, tasks, protocol
//! responses), so the TUI and the command line cannot drift apart.
//!
//! Actions that wait on panes (a kill ladder takes seconds for a teammate
//! that ignores SIGTERM) run as tasks on the lead's runtime: the dialog
//! gets "killing @x…" at once and keeps drawing and taking keys; the
//! outcome arrives as an event.

use super::{Lead, Request, Shared, view};
use crate::ops::depart as teardown;
use crate::protocol::{self, Message};
use crate::session::{Session, member_pane};
use crate::tasks::NewTask;
use crate::team::names::LEAD_NAME;
use crate::team::{SwarmField, Team};
use crate::tui::{Action, LeadControl, ScreenSource, TeamView};
use anyhow::{Result, bail};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use swarm_backends::PaneRef;

/// The lead as the TUI sees it.
pub struct LeadUi {
    team: Team,
    opened: Arc<Session>,
    shared: Arc<Mutex<Shared>>,
    rt: tokio::runtime::Handle,
    notice: Option<String>,
    /// The files as last read (see [`view`]).
    state: view::TeamState,
    /// Held by a background hide or show from its pane move to its roster
    /// write: `H` right after `h` found the roster not yet saying hidden
    /// and left the pane parked.
    hiding: Arc<tokio::sync::Mutex<()>>,
    /// The lead's ring for the dialog, told when a snapshot is taken.
    wake: Option<super::wake::Wake>,
}

impl LeadUi {
    pub fn new(lead: &Lead, rt: tokio::runtime::Handle) -> Self {
        LeadUi {
            team: lead.team.clone(),
            opened: lead.opened.clone(),
            shared: lead.shared.clone(),
            rt,
            notice: None,
            state: view::TeamState::default(),
            hiding: Arc::default(),
            wake: lead.wake.clone(),
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pane_of(&self, name: &str) -> Result<PaneRef> {
        let tf = self.team.roster().read()?;
        match tf.member(name) {
            Some(m) => match member_pane(m) {
                Some(p) => Ok(p),
                None => bail!("{name} has no pane"),
            },
            None => bail!("{name} is not on the roster"),
        }
    }

    /// True when the teammates' screens live in this process.
    fn screens(&self) -> bool {
        self.opened.caps().screens
    }

    /// Runs `work` on the lead's runtime; its outcome (or error) becomes
    /// an event of the dialog.
    fn in_background<F>(&self, work: F)
    where
        F: std::future::Future<Output = Result<String>> + Send + 'static,
    {
        let shared = self.shared.clone();
        self.rt.spawn(async move {
            let text = match work.await {
                Ok(t) => t,
                Err(e) => format!("error: {e:#}"),
            };
            shared.lock().unwrap_or_else(|e| e.into_inner()).event(text);
        });
    }

    fn take_request(&self, id: &str) -> Result<Request> {
        let mut sh = self.shared();
        let Some(i) = sh
            .requests
            .iter()
            .position(|r| r.message.request_id() == Some(id))
        else {
            bail!("no pending request {id}");
        };
        Ok(sh.requests.remove(i))
    }

    fn answer(&self, id: &str, approve: bool) -> Result<Option<String>> {
        let req = self.take_request(id)?;
        let now = crate::clock::now_iso();
        let msg = match &req.message {
            Message::PlanApprovalRequest(p) => {
                Message::PlanApprovalResponse(protocol::PlanApprovalResponse::answering(
                    &p.request_id,
                    Some(p),
                    approve,
                    None,
                    now,
                ))
            }
            Message::PermissionRequest(p) => {
                Message::PermissionResponse(protocol::PermissionResponse {
                    request_id: p.request_id.clone(),
                    tool_use_id: Some(p.tool_use_id.clone()),
                    approved_request: None,
                    outcome: if approve {
                        protocol::PermissionOutcome::Success {
                            updated_input: None,
                            permission_updates: None,
                        }
                    } else {
                        protocol::PermissionOutcome::Error {
                            error: "rejected by the lead".into(),
                        }
                    },
                })
            }
            other => bail!("request {id} is a {}, which needs no answer", other.kind()),
        };
        self.team.send_protocol(LEAD_NAME, &req.from, &msg, false)?;
        let verb = if approve { "approved" } else { "rejected" };
        Ok(Some(format!(
            "{verb} {} of @{}",
            req.message.kind(),
            req.from
        )))
    }
}

/// Records whether `name`'s pane is hidden, off the async worker (the
/// roster write may wait on its lock).
async fn set_hidden(team: &Team, name: &str, hidden: Value) -> Result<()> {
    let (team, name) = (team.clone(), name.to_string());
    tokio::task::spawn_blocking(move || {
        team.roster()
            .update_member(&name, |m| m.set_swarm_field(SwarmField::Hidden, hidden))
    })
    .await
    .map_err(|e| anyhow::anyhow!("recording a hidden pane panicked: {e}"))??;
    Ok(())
}

/// " (its pane %3 was no longer swarm's: left untouched)", or nothing.
fn not_ours(r: &teardown::Released) -> String {
    match &r.pane_not_ours {
        Some(p) => format!(" (its pane {p} was no longer swarm's: left untouched)"),
        None => String::new(),
    }
}

impl ScreenSource for LeadUi {
    fn with_screen(&self, name: &str, f: &mut dyn FnMut(&tui_term::vt100::Screen)) -> bool {
        if !self.screens() {
            return false;
        }
        let Ok(pane) = self.pane_of(name) else {
            return false;
        };
        self.opened.backend.with_screen(&pane.id, f).is_ok()
    }
}

impl LeadUi {
    /// Kills `name` in the background; the notice shown meanwhile.
    fn kill(&self, team: Team, opened: Arc<Session>, name: String) -> String {
        let shown = format!("killing @{name}…");
        let shared = self.shared.clone();
        self.in_background(async move {
            let before = team.roster().read()?.member(&name).cloned();
            let r = teardown::kill_member(&team, &opened, &name, Duration::from_secs(2)).await?;
            shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .seen
                .remove(&name);
            // A worktree holding work is kept and named, never lost.
            let t = team.clone();
            let worktree = tokio::task::spawn_blocking(move || {
                crate::worktree::retire(&t, before.as_slice(), false)
            })
            .await
            .unwrap_or_default();
            Ok(format!(
                "killed @{name}; {} task(s) back on the board{}{}",
                r.returned.len(),
                not_ours(&r),
                worktree
                    .iter()
                    .map(|l| format!("; {l}"))
                    .collect::<String>()
            ))
        });
        shown
    }

    /// Kills `names` in the background; the notice shown meanwhile.
    fn prune(&self, team: Team, opened: Arc<Session>, names: Vec<String>) -> String {
        let shown = names
            .iter()
            .map(|n| format!("@{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        let done = shown.clone();
        self.in_background(async move {
            for n in &names {
                teardown::kill_member(&team, &opened, n, Duration::from_secs(1)).await?;
            }
            Ok(format!("pruned {done}"))
        });
        format!("pruning {shown}…")
    }

    /// Shows every hidden pane, in the background.
    fn show_all(&self, team: Team, opened: Arc<Session>) {
        let hiding = self.hiding.clone();
        self.in_background(async move {
            let _one_at_a_time = hiding.lock().await;
            let tf = team.roster().read()?;
            for m in tf.teammates().filter(|m| m.hidden()) {
                if let Some(pane) = member_pane(m) {
                    opened.backend.show(&pane).await?;
                }
                set_hidden(&team, &m.name, Value::Null).await?;
            }
            Ok("showing every pane".to_string())
        });
    }
}

/// Asks `target` (or every teammate) to switch to `mode`: only those whose
/// agent applies it (Claude Code drops `mode_set_request` from its inbox);
/// the others are named with the reason, never reported as changed.
fn cycle_mode(team: &Team, target: Option<String>, mode: &str) -> Result<String> {
    let tf = team.roster().read()?;
    let targets: Vec<String> = match target {
        Some(t) => vec![t],
        None => tf.teammates().map(|m| m.name.clone()).collect(),
    };
    let msg = Message::ModeSetRequest(protocol::ModeSetRequest {
        mode: mode.to_string(),
        from: LEAD_NAME.into(),
    });
    let mut sent = Vec::new();
    let mut not = Vec::new();
    for t in &targets {
        match tf.member(t).map(crate::agents::mode_change) {
            Some(crate::agents::ModeChange::Unsupported(why)) => not.push(why),
            _ => {
                team.send_protocol(LEAD_NAME, t, &msg, false)?;
                sent.push(t.clone());
            }
        }
    }
    let mut text = if sent.is_empty() {
        format!("mode {mode} not requested")
    } else {
        format!("mode {mode} requested for {}", sent.join(", "))
    };
    if let Some(first) = not.first() {
        text.push_str(&format!("; not for {first}"));
        if not.len() > 1 {
            text.push_str(&format!(" (and {} more)", not.len() - 1));
        }
    }
    Ok(text)
}

impl LeadControl for LeadUi {
    fn snapshot(&mut self) -> TeamView {
        // Before reading: a change from now on rings again.
        if let Some(w) = &self.wake {
            w.taken();
        }
        let cx = view::Context {
            team: &self.team,
            shared: &self.shared,
            backend_name: self.opened.kind().to_string(),
            can_hide: self.opened.caps().hide_show,
            in_process: self.opened.caps().screens,
            notice: self.notice.clone(),
        };
        match self.state.view(&cx) {
            Ok(v) => v,
            Err(e) => TeamView {
                team: self.team.name.clone(),
                backend_name: self.opened.kind().to_string(),
                notice: Some(format!("cannot read the team: {e:#}")),
                ..TeamView::default()
            },
        }
    }

    fn perform(&mut self, action: Action) -> Result<Option<String>> {
        let team = self.team.clone();
        let opened = self.opened.clone();
        match action {
            Action::Focus(name) => {
                if self.screens() {
                    return Ok(None); // the dialog zooms itself
                }
                let pane = self.pane_of(&name)?;
                self.in_background(async move {
                    opened.backend.focus(&pane.id).await?;
                    Ok(format!("focused @{name}"))
                });
                Ok(None)
            }
            Action::Input { to, bytes } => {
                if self.screens() {
                    self.opened
                        .backend
                        .write_input(&self.pane_of(&to)?.id, &bytes)?;
                }
                Ok(None)
            }
            Action::ResizePane { name, rows, cols } => {
                if self.screens() {
                    self.opened
                        .backend
                        .resize(&self.pane_of(&name)?.id, rows, cols)?;
                }
                Ok(None)
            }
            Action::Kill(name) => Ok(Some(self.kill(team, opened, name))),
            Action::Shutdown(name) => {
                teardown::send_shutdown_request(
                    &team,
                    &name,
                    Some("requested from the TeamsDialog".into()),
                )?;
                self.shared().stopping.insert(name.clone(), Instant::now());
                Ok(Some(format!("asked @{name} to shut down")))
            }
            Action::Prune(names) => Ok(Some(self.prune(team, opened, names))),
            Action::Hide(name) => {
                let pane = self.pane_of(&name)?;
                let hiding = self.hiding.clone();
                self.in_background(async move {
                    let _one_at_a_time = hiding.lock().await;
                    opened.backend.hide(&pane).await?;
                    set_hidden(&team, &name, Value::Bool(true)).await?;
                    Ok(format!("hid @{name}"))
                });
                Ok(None)
            }
            Action::ShowAll => {
                self.show_all(team, opened);
                Ok(None)
            }
            Action::CycleMode { target, mode } => cycle_mode(&team, target, &mode).map(Some),
            Action::Send { to, text } => {
                let d = team.send_text(LEAD_NAME, &to, &text, None, false)?;
                Ok(Some(format!(
                    "sent to {}",
                    d.iter()
                        .map(|d| format!("@{}", d.to))
                        .collect::<Vec<_>>()
                        .join(" ")
                )))
            }
            Action::CreateTask { subject } => {
                let t = team.tasks().create(NewTask {
                    subject,
                    description: String::new(),
                    active_form: None,
                    blocked_by: Vec::new(),
                    metadata: None,
                })?;
                Ok(Some(format!("created task #{}", t.id)))
            }
            Action::Approve(id) => self.answer(&id, true),
            Action::Reject(id) => self.answer(&id, false),
            Action::Quit => Ok(None),
        }
        .inspect(|n| self.notice.clone_from(n))
    }
}
