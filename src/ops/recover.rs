//! What an interrupted `up` or `spawn`, or a roster rebuilt after
//! corruption, left behind, made whole again from the one thing that
//! cannot lie about ownership: the marks on the backend's panes.
//!
//! Run by `up` under the team's lifecycle lock, before it spawns the
//! members that still have no pane. For each live pane carrying this
//! team's mark:
//!
//! - its member is on the roster with the same nonce and no pane id (a
//!   spawn died between opening the pane and recording it): **adopted**;
//! - its member is not on the roster at all (the roster was rebuilt):
//!   **recovered** as a member record holding that pane, so no second copy
//!   is started;
//! - its member is on the roster with another nonce or another pane (a
//!   duplicate nobody tracks): **closed** — it carries this team's mark, so
//!   it is swarm's to close.
//!
//! Panes without this team's mark are never looked at.

use crate::names::LEAD_NAME;
use crate::session::Session;
use crate::team::{Member, SwarmField, Team};
use anyhow::{Context, Result};
use serde_json::Value;
use std::time::Duration;
use swarm_backends::{PaneMark, PaneRef, PaneStatus};

/// What [`reconcile`] did, one line each.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reconciled {
    pub adopted: Vec<String>,
    pub recovered: Vec<String>,
    pub closed: Vec<String>,
}

impl Reconciled {
    /// One line per thing done, for the user.
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for a in &self.adopted {
            out.push(format!("adopted {a} (its spawn was interrupted)"));
        }
        for r in &self.recovered {
            out.push(format!(
                "recovered {r} from its pane's mark (the roster had lost it)"
            ));
        }
        for c in &self.closed {
            out.push(format!("closed {c}: a second pane nobody tracked"));
        }
        out
    }
}

/// Puts adopted panes on the roster: a member's pane id (its recorded end
/// forgotten), or a member the roster lost, rebuilt from its pane's mark.
fn record_adopted(
    team: &Team,
    opened: &Session,
    tf: &crate::team::TeamFile,
    adopt: &[(PaneRef, PaneMark)],
) -> Result<()> {
    let kind = opened.kind().as_str().to_string();
    let cwd = tf
        .members
        .first()
        .and_then(|m| m.cwd.clone())
        .unwrap_or_default();
    team.roster().update(|tf| {
        for (pane, mark) in adopt {
            let nonce = Value::String(mark.nonce.clone());
            match tf.member_mut(&mark.member) {
                Some(m) => {
                    m.tmux_pane_id = pane.id.as_str().to_string();
                    m.set_exit(None);
                }
                None => {
                    let color = crate::team::colors::for_teammate(tf.members.len());
                    let mut m = Member::teammate(&tf.name, &mark.member, color, &cwd);
                    m.tmux_pane_id = pane.id.as_str().to_string();
                    m.backend_type = Some(kind.clone());
                    m.set_swarm_field(SwarmField::Nonce, nonce);
                    tf.members.push(m);
                }
            }
        }
        Ok(())
    })?;
    Ok(())
}

/// Adopts, recovers or closes this team's marked panes (see the module).
pub async fn reconcile(team: &Team, opened: &Session) -> Result<Reconciled> {
    let mut done = Reconciled::default();
    if !opened.caps().list_marked {
        return Ok(done);
    }
    let marked: Vec<(PaneRef, PaneMark, PaneStatus)> = opened
        .backend
        .list_marked()
        .await
        .context("listing swarm's panes")?
        .into_iter()
        .filter(|(_, mark, status)| {
            mark.team == team.name
                && mark.member != LEAD_NAME
                && matches!(status, PaneStatus::Running { .. })
        })
        .collect();
    if marked.is_empty() {
        return Ok(done);
    }
    let tf = team.roster().read()?;
    let mut adopt: Vec<(PaneRef, PaneMark)> = Vec::new();
    let mut close: Vec<(PaneRef, PaneMark)> = Vec::new();
    for (pane, mark, _) in marked {
        match tf.member(&mark.member) {
            Some(m) if m.nonce()?.as_ref() == Some(&mark.nonce) => {
                if m.tmux_pane_id != pane.id.as_str() {
                    adopt.push((pane, mark));
                }
            }
            Some(_) => close.push((pane, mark)),
            None => adopt.push((pane, mark)),
        }
    }
    if !adopt.is_empty() {
        record_adopted(team, opened, &tf, &adopt)?;
        for (pane, mark) in &adopt {
            let line = format!("{} (pane {})", mark.member, pane.id);
            if tf.member(&mark.member).is_some() {
                done.adopted.push(line);
            } else {
                done.recovered.push(line);
            }
        }
    }
    for (pane, mark) in close {
        opened
            .backend
            .kill(&pane, Duration::from_secs(1))
            .await
            .with_context(|| {
                format!("closing the untracked pane {} of {}", pane.id, mark.member)
            })?;
        done.closed
            .push(format!("pane {} of {}", pane.id, mark.member));
    }
    Ok(done)
}
