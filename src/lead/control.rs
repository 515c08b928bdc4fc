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

use super::{Lead, Shared, view};
use crate::ops::TeamOps;
use crate::session::Session;
use crate::tasks::NewTask;
use crate::team::Team;
use crate::tui::{Action, LeadControl, ScreenSource, TeamView};
use anyhow::Result;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use swarm_backends::{LiveScreens, PaneRef};

/// The lead as the TUI sees it.
pub struct LeadUi {
    team: Team,
    opened: Arc<Session>,
    shared: Arc<Mutex<Shared>>,
    rt: tokio::runtime::Handle,
    /// The last action's notice, and the count of events at the time: an
    /// event after it (the action's outcome) is shown instead.
    notice: Option<(String, u64)>,
    /// The files as last read (see [`view`]).
    state: view::TeamState,
    /// Held by a background hide or show from its pane move to its roster
    /// write: `H` right after `h` found the roster not yet saying hidden
    /// and left the pane parked.
    hiding: Arc<tokio::sync::Mutex<()>>,
    /// The lead's ring for the dialog, told when a snapshot is taken.
    wake: Option<super::wake::Wake>,
    /// Watching a team swarm did not start: what the dialog says of it
    /// while nothing else is to be said.
    watching: Option<String>,
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
            watching: lead.watching.then(|| {
                format!(
                    "watching team {}, which swarm did not start: m sends and s asks its own \
                     lead; k, p, t, a, r, h and Shift+Tab are its lead's",
                    lead.team.name
                )
            }),
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pane_of(&self, name: &str) -> Result<PaneRef> {
        self.ops().pane_of(name)
    }

    /// The teammates' live screens, when they live in this process.
    fn screens(&self) -> Option<&dyn LiveScreens> {
        self.opened.backend.screens()
    }

    /// Runs `work` on the lead's runtime; its outcome (or error) becomes
    /// an event of the dialog.
    fn in_background<F>(&self, work: F)
    where
        F: std::future::Future<Output = Result<String>> + Send + 'static,
    {
        let (shared, wake) = (self.shared.clone(), self.wake.clone());
        self.rt.spawn(async move {
            let text = match work.await {
                Ok(t) => t,
                Err(e) => format!("error: {e:#}"),
            };
            shared.lock().unwrap_or_else(|e| e.into_inner()).event(text);
            // The outcome replaces the action's notice: shown at once.
            if let Some(w) = &wake {
                w.ring();
            }
        });
    }

    /// The notice of the last action, until an event came after it
    /// ("killing @x…" gives way to what became of @x).
    fn current_notice(&self) -> Option<String> {
        let (text, at) = self.notice.as_ref()?;
        (self.shared().events_seen == *at).then(|| text.clone())
    }

    /// The team's verbs, as the lead acts on them.
    fn ops(&self) -> TeamOps {
        TeamOps::as_lead(self.team.clone(), self.opened.clone())
    }

    /// `m`: a message from the lead to `to` (`*`: everyone).
    fn perform_send(&self, to: &str, text: &str) -> Result<String> {
        let d = self.ops().send(to, text, None, false)?;
        Ok(format!(
            "sent to {}",
            d.iter()
                .map(|d| format!("@{}", d.to))
                .collect::<Vec<_>>()
                .join(" ")
        ))
    }

    /// Answers request `id` through [`TeamOps::answer`] (which finds it in
    /// the files: one that arrived before this lead started too), then
    /// drops it from the dialog's list.
    fn answer(&self, id: &str, approve: bool) -> Result<Option<String>> {
        let done = self.ops().answer(id, approve, None)?;
        self.shared().requests.retain(|r| r.id != id);
        let verb = if approve { "approved" } else { "rejected" };
        let kind = serde_json::to_value(done.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Ok(Some(format!("{verb} {kind} request of @{}", done.to)))
    }
}

/// " (its pane %3 was no longer swarm's: left untouched)", or nothing.
fn not_ours(r: &crate::ops::depart::Left) -> String {
    match &r.pane_not_ours {
        Some(p) => format!(" (its pane {p} was no longer swarm's: left untouched)"),
        None => String::new(),
    }
}

impl ScreenSource for LeadUi {
    fn with_screen(&self, name: &str, f: &mut dyn FnMut(&tui_term::vt100::Screen)) -> bool {
        let Some(screens) = self.screens() else {
            return false;
        };
        let Ok(pane) = self.pane_of(name) else {
            return false;
        };
        screens.with_screen(&pane.id, f).is_ok()
    }
}

impl LeadUi {
    /// Kills `name` in the background (the one departure of
    /// [`crate::ops::depart`]); the notice shown meanwhile.
    fn kill(&self, name: String) -> String {
        let shown = format!("killing @{name}…");
        let (ops, shared) = (self.ops(), self.shared.clone());
        self.in_background(async move {
            let l = ops.kill(&name, Duration::from_secs(2)).await?;
            shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .seen
                .remove(&name);
            Ok(format!(
                "killed @{name}; {} task(s) back on the board{}{}",
                l.returned_tasks.len(),
                not_ours(&l),
                l.worktree.map(|w| format!("; {w}")).unwrap_or_default()
            ))
        });
        shown
    }

    /// Prunes `names` in the background, as `swarm prune` does (one
    /// departure, worktrees retired); the notice shown meanwhile.
    fn prune(&self, names: Vec<String>) -> String {
        let shown = names
            .iter()
            .map(|n| format!("@{n}"))
            .collect::<Vec<_>>()
            .join(" ");
        let ops = self.ops();
        self.in_background(async move {
            let left = ops.prune(Some(names)).await?;
            let mut text = format!(
                "pruned {}",
                left.iter()
                    .map(|l| format!("@{}", l.name))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            for w in left.iter().filter_map(|l| l.worktree.as_deref()) {
                text.push_str("; ");
                text.push_str(w);
            }
            Ok(text)
        });
        format!("pruning {shown}…")
    }

    /// Shows every hidden pane, in the background.
    fn show_all(&self) {
        let (hiding, ops) = (self.hiding.clone(), self.ops());
        self.in_background(async move {
            let _one_at_a_time = hiding.lock().await;
            ops.show_all().await?;
            Ok("showing every pane".to_string())
        });
    }
}

/// What the dialog says of a mode request.
fn mode_notice(done: &crate::ops::mail::ModeRequested) -> String {
    let mode = &done.mode;
    let mut text = if done.sent.is_empty() {
        format!("mode {mode} not requested")
    } else {
        format!("mode {mode} requested for {}", done.sent.join(", "))
    };
    if let Some(first) = done.not.first() {
        text.push_str(&format!("; not for {first}"));
        if done.not.len() > 1 {
            text.push_str(&format!(" (and {} more)", done.not.len() - 1));
        }
    }
    text
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
            can_hide: self.opened.backend.layout().is_some(),
            in_process: self.screens().is_some(),
            notice: self.current_notice(),
        };
        match self.state.view(&cx) {
            // Watching, the banner shows while nothing else is said.
            Ok(mut v) => {
                if v.notice.is_none() {
                    v.notice.clone_from(&self.watching);
                }
                v
            }
            Err(e) => TeamView {
                team: self.team.name.clone(),
                backend_name: self.opened.kind().to_string(),
                notice: Some(format!("cannot read the team: {e:#}")),
                ..TeamView::default()
            },
        }
    }

    fn perform(&mut self, action: Action) -> Result<Option<String>> {
        match action {
            Action::Focus(name) => {
                if self.screens().is_some() {
                    return Ok(None); // the dialog zooms itself
                }
                let ops = self.ops();
                self.in_background(async move {
                    ops.focus(&name).await?;
                    Ok(format!("focused @{name}"))
                });
                Ok(None)
            }
            Action::Input { to, bytes } => {
                if let Some(screens) = self.screens() {
                    screens.write_input(&self.pane_of(&to)?.id, &bytes)?;
                }
                Ok(None)
            }
            Action::ResizePane { name, rows, cols } => {
                if let Some(screens) = self.screens() {
                    screens.resize(&self.pane_of(&name)?.id, rows, cols)?;
                }
                Ok(None)
            }
            Action::Kill(name) => {
                // Refused at once, not in the background, on a team swarm
                // only watches.
                self.ops().require_own(&format!(
                    "kill its members (its own lead can: s asks it to stop @{name})"
                ))?;
                Ok(Some(self.kill(name)))
            }
            Action::Shutdown(name) => {
                self.ops()
                    .request_shutdown(&name, Some("requested from the TeamsDialog".into()))?;
                if self.watching.is_some() {
                    return Ok(Some(format!(
                        "requested: asked the team's own lead to shut down @{name}"
                    )));
                }
                self.shared().stopping.insert(name.clone(), Instant::now());
                Ok(Some(format!("asked @{name} to shut down")))
            }
            Action::Prune(names) => {
                self.ops()
                    .require_own("prune its members (its own lead can)")?;
                Ok(Some(self.prune(names)))
            }
            Action::Hide(name) => {
                let (hiding, ops) = (self.hiding.clone(), self.ops());
                self.in_background(async move {
                    let _one_at_a_time = hiding.lock().await;
                    ops.hide(&name).await?;
                    Ok(format!("hid @{name}"))
                });
                Ok(None)
            }
            Action::ShowAll => {
                self.show_all();
                Ok(None)
            }
            Action::CycleMode { target, mode } => self
                .ops()
                .request_mode(target.as_deref(), &mode)
                .map(|done| Some(mode_notice(&done))),
            Action::Send { to, text } if to == crate::names::AI_LEAD_NAME => {
                // The AI lead hears the human as the user.
                let ops = self.ops();
                if ops.ai_lead()?.is_none() {
                    return self.perform_send(&to, &text).map(Some);
                }
                ops.tell_ai_lead(&text)?;
                Ok(Some(format!("told @{to} (as the user)")))
            }
            Action::Send { to, text } => self.perform_send(&to, &text).map(Some),
            Action::CreateTask { subject } => {
                let t = self.ops().task_create(NewTask {
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
        .inspect(|n| {
            let seen = self.shared().events_seen;
            self.notice = n.clone().map(|n| (n, seen));
        })
    }
}
