//! Keeping the record of the unit in flight ([`crate::teammate::inflight`])
//! and recovering from it: the record written at each stage of a unit,
//! a unit resumed after an error or a restart, an interrupted one reported
//! and settled, and the delivery of a unit's results.

use super::{Flow, Runtime, clip, is_lead};
use crate::clock;
use crate::mailbox::MAX_TEXT_BYTES;
use crate::names::LEAD_NAME;
use crate::tasks::{Status, TaskError};
use crate::team::RosterError;
use crate::teammate::Wakeups;
use crate::teammate::inflight::{Found, Inflight, Outcome, Post, Stage, Unit};
use anyhow::Result;
use serde_json::{Map, json};
use std::collections::BTreeSet;

impl Runtime {
    /// A task was claimed: it is this member's from now on, recorded as
    /// such (in memory first, so an error in the write still leaves the
    /// claim known).
    pub(super) fn pick(&mut self, unit: Unit) -> Result<()> {
        let rec = Inflight {
            unit,
            stage: Stage::Picked {
                plan_approved: false,
                plan_request: None,
            },
            pid: std::process::id(),
            picked_at: clock::now_ms(),
        };
        self.inflight = Some(rec.clone());
        self.journal.save(&rec)
    }

    /// Moves the unit in flight to `stage` (memory first, then disk).
    pub(super) fn restage(&mut self, stage: Stage) -> Result<()> {
        let rec = self
            .inflight
            .as_mut()
            .expect("a stage change follows a recorded unit");
        rec.stage = stage;
        let rec = rec.clone();
        self.journal.save(&rec)
    }

    /// Records `unit` as handed to the agent. On disk first: an agent must
    /// never run a unit that a later runtime would not know about.
    ///
    /// Renamed into place, not yet synced: a runtime killed from here on,
    /// `kill -9` included, leaves the record whole for the next one (the
    /// kernel keeps what a dead process wrote). It is synced once the agent
    /// runs (`turn::Started`), off the path from the doorbell to the
    /// agent's start. Only a crash of the machine in that moment can lose
    /// it, and the agent dies with the machine: the next runtime then finds
    /// the record before it (a task's durable `picked`; none for messages,
    /// which are still unread), or an unreadable one it reports, and the
    /// unit runs again rather than being lost.
    pub(super) fn run_recorded(&mut self, unit: Unit) -> Result<()> {
        let rec = Inflight {
            unit,
            stage: Stage::Running {
                started_at: clock::now_ms(),
            },
            pid: std::process::id(),
            picked_at: self
                .inflight
                .as_ref()
                .map_or_else(clock::now_ms, |r| r.picked_at),
        };
        self.journal.save_unsynced(&rec)?;
        self.inflight = Some(rec);
        Ok(())
    }

    /// Records the results of the unit in flight, to be delivered.
    pub(super) fn ran(
        &mut self,
        posts: Vec<Post>,
        outcome: Outcome,
        crash: Option<String>,
    ) -> Result<()> {
        self.restage(Stage::Ran {
            posts,
            delivered: 0,
            outcome,
            crash,
        })
    }

    /// Drops the unit in flight, which never ran (or was handed back). A
    /// record that cannot be removed is only logged: the next unit's
    /// record replaces it.
    pub(super) fn forget(&mut self) {
        self.inflight = None;
        if let Err(e) = self.journal.clear() {
            tracing::warn!(error = %format!("{e:#}"), "could not remove the in-flight record");
        }
    }

    /// Reads the record a previous runtime of this member left.
    pub(super) fn load_inflight(&mut self) -> Result<()> {
        match self.journal.load()? {
            Found::Nothing => {}
            Found::Record(rec) => {
                tracing::warn!(
                    record = %self.journal.path().display(),
                    unit = %rec.unit.describe(),
                    pid = rec.pid,
                    "a unit was left in flight"
                );
                self.inflight = Some(rec);
            }
            Found::Corrupt(copy) => {
                let text = format!(
                    "{}: the record of the unit I had in flight was unreadable (copied to {}); \
                     what it was cannot be known, so it may run again",
                    self.me,
                    copy.display()
                );
                self.say(&format!("✘ {text}"));
                tracing::error!(copy = %copy.display(), "unreadable in-flight record");
                // Best effort: the copy is kept and the log has it.
                let summary = format!("{}: unreadable in-flight record", self.me);
                if let Err(e) =
                    self.team
                        .send_text(&self.me, LEAD_NAME, &text, Some(&summary), true)
                {
                    tracing::warn!(error = %format!("{e:#}"), "could not tell the lead");
                }
            }
        }
        Ok(())
    }

    /// Carries on with a unit left in flight by an earlier step or an
    /// earlier runtime.
    pub(super) fn resume(&mut self, rec: Inflight, wake: &mut Wakeups) -> Result<Flow> {
        match (rec.unit, rec.stage) {
            (_, Stage::Ran { .. }) => self.settle(),
            (unit @ (Unit::Messages { .. } | Unit::Task { .. }), Stage::Running { .. }) => {
                self.interrupted(unit)
            }
            (Unit::Task { id, .. }, Stage::Picked { .. }) => match self.team.tasks().get(&id)? {
                Some(t)
                    if t.owner.as_deref() == Some(self.me.as_str())
                        && t.status == Status::InProgress =>
                {
                    self.handle_task(t, wake)
                }
                _ => {
                    tracing::info!(task = %id, "the claimed task changed hands before it ran");
                    self.forget();
                    Ok(Flow::Continue)
                }
            },
            (Unit::Messages { .. }, Stage::Picked { .. }) => {
                self.forget();
                Ok(Flow::Continue)
            }
        }
    }

    /// The previous runtime died while its agent ran `unit`: say so, settle
    /// it, and do not run it again.
    pub(super) fn interrupted(&mut self, unit: Unit) -> Result<Flow> {
        let what = unit.describe();
        let mut text = format!("{}: interrupted while running {what}; not re-run", self.me);
        let mut posts = Vec::new();
        let task = match &unit {
            Unit::Messages { messages } => {
                let peers: BTreeSet<&str> = messages
                    .iter()
                    .map(|m| m.from.as_str())
                    .filter(|f| !is_lead(f))
                    .collect();
                posts.extend(peers.into_iter().map(|to| Post::Send {
                    to: to.to_string(),
                    text: text.clone(),
                    summary: format!("{}: interrupted", self.me),
                    force: false,
                }));
                None
            }
            Unit::Task { id, .. } => {
                match self.team.tasks().get(id)? {
                    Some(t)
                        if t.owner.as_deref() == Some(self.me.as_str())
                            && t.status == Status::InProgress =>
                    {
                        text.push_str(&format!(
                            ": it stays pending and assigned to {}; reassign or unassign it to retry",
                            self.me
                        ));
                        let mut md = Map::new();
                        md.insert("interrupted".into(), json!(true));
                        md.insert(
                            "lastFailure".into(),
                            json!(format!(
                                "interrupted: {}'s runtime stopped while running it (noticed at {})",
                                self.me,
                                clock::now_iso()
                            )),
                        );
                        posts.push(Post::TaskUpdate {
                            id: id.clone(),
                            status: Status::Pending,
                            unassign: false,
                            metadata: md,
                        });
                    }
                    Some(t) => text.push_str(&format!(
                        ": it is now {} and owned by {}",
                        t.status,
                        t.owner.as_deref().unwrap_or("nobody")
                    )),
                    None => text.push_str(": it has been deleted"),
                }
                Some(id.clone())
            }
        };
        // The lead hears it after the task is settled, before any peer.
        let report = Post::Send {
            to: LEAD_NAME.into(),
            text: text.clone(),
            summary: format!(
                "{}: interrupted while running {}",
                self.me,
                clip(&what, 120)
            ),
            force: true,
        };
        match task {
            Some(_) => posts.push(report),
            None => posts.insert(0, report),
        }
        self.say(&format!("✘ {text}"));
        let outcome = Outcome {
            failure: task.as_ref().map(|id| format!("task {id} interrupted")),
            task,
            result: text,
        };
        self.ran(posts, outcome, None)?;
        self.settle()
    }

    /// Delivers the results of the unit in flight not yet out, in order,
    /// consumes its messages and removes its record.
    pub(super) fn settle(&mut self) -> Result<Flow> {
        let mut rec = self
            .inflight
            .take()
            .expect("settling follows a recorded unit");
        let settled = self.settle_record(&mut rec);
        if settled.is_err() {
            self.inflight = Some(rec);
        }
        settled
    }

    pub(super) fn settle_record(&mut self, rec: &mut Inflight) -> Result<Flow> {
        loop {
            let Stage::Ran {
                posts, delivered, ..
            } = &rec.stage
            else {
                unreachable!("only a unit that ran is settled");
            };
            let Some(post) = posts.get(*delivered).cloned() else {
                break;
            };
            self.deliver(&post)?;
            if let Stage::Ran { delivered, .. } = &mut rec.stage {
                *delivered += 1;
            }
            self.journal.save(rec)?;
        }
        if let Unit::Messages { messages } = &rec.unit {
            self.consume_refs(messages)?;
        }
        self.journal.clear()?;
        let Stage::Ran { outcome, crash, .. } = &rec.stage else {
            unreachable!("only a unit that ran is settled");
        };
        self.last = Some(outcome.clone());
        Ok(match crash {
            Some(reason) => Flow::Crashed {
                task: outcome.task.clone(),
                reason: reason.clone(),
            },
            None => Flow::Continue,
        })
    }

    /// Delivers one result. A reply to a member no longer on the roster,
    /// and an update of a task that is gone, are dropped with a warning:
    /// nobody is left to take them. A text over the inbox limit is cut to
    /// fit (it would be refused every time).
    pub(super) fn deliver(&self, post: &Post) -> Result<()> {
        match post {
            Post::Send {
                to,
                text,
                summary,
                force,
            } => match self
                .team
                .send_text(&self.me, to, &fit(text), Some(summary), *force)
            {
                Ok(_) => Ok(()),
                Err(e)
                    if caused_by(&e, |r: &RosterError| {
                        matches!(r, RosterError::NoSuchMember { .. })
                    }) =>
                {
                    self.say(&format!("✘ could not reply to {to}: {e:#}"));
                    tracing::warn!(to, error = %format!("{e:#}"), "reply not sent");
                    Ok(())
                }
                Err(e) => Err(e),
            },
            Post::TaskUpdate {
                id,
                status,
                unassign,
                metadata,
            } => {
                let owner = unassign.then_some(None);
                match self.update_task(id, Some(*status), owner, metadata.clone()) {
                    Err(e)
                        if caused_by(&e, |t: &TaskError| {
                            matches!(t, TaskError::NotFound { .. } | TaskError::Corrupt { .. })
                        }) =>
                    {
                        tracing::warn!(task = %id, error = %format!("{e:#}"), "task result dropped");
                        Ok(())
                    }
                    r => r,
                }
            }
        }
    }
}

/// Whether an error in `e`'s chain is an `E` for which `what` holds.
fn caused_by<E: std::error::Error + Send + Sync + 'static>(
    e: &anyhow::Error,
    what: impl Fn(&E) -> bool,
) -> bool {
    e.chain().any(|c| c.downcast_ref::<E>().is_some_and(&what))
}

/// `text`, cut (on a char boundary, with a note) to the inbox's text limit.
fn fit(text: &str) -> std::borrow::Cow<'_, str> {
    const NOTE: &str = "\n[cut to fit the inbox's text limit]";
    if text.len() <= MAX_TEXT_BYTES {
        return text.into();
    }
    let mut end = MAX_TEXT_BYTES - NOTE.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{NOTE}", &text[..end]).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_over_the_inbox_limit_is_cut_to_fit_not_refused_forever() {
        assert_eq!(fit("short"), "short");
        let long = "é".repeat(MAX_TEXT_BYTES);
        let cut = fit(&long);
        assert!(cut.len() <= MAX_TEXT_BYTES, "{}", cut.len());
        assert!(cut.ends_with("[cut to fit the inbox's text limit]"));
    }
}
