//! The inbox of a teammate runtime: reading its unread entries, consuming
//! them, picking the next unit of work in the order the loop documents
//! ([`super`]), and applying the protocol frames that are not units of work
//! by themselves (a shutdown request not from the lead, `mode_set_request`,
//! `task_assignment`).

use super::{LOCK_PATIENCE, Runtime, Work, is_lead};
use crate::clock;
use crate::mailbox::{Entry, Mailbox};
use crate::names::LEAD_NAME;
use crate::protocol::{Message, ModeSetRequest, ShutdownRejected};
use crate::tasks::{Claim, Refusal, parse_id};
use crate::teammate::inflight::MessageRef;
use anyhow::Result;

impl Runtime {
    /// This team's mailbox, waiting at most [`LOCK_PATIENCE`] for a lock.
    pub(super) fn mailbox(&self) -> Mailbox {
        self.team.mailbox().with_lock_timeout(LOCK_PATIENCE)
    }

    /// Unread entries of this member's inbox.
    pub(super) fn unread(&self) -> Result<Vec<Entry>> {
        let read = self.mailbox().read(&self.me)?;
        if let Some(q) = &read.quarantined {
            tracing::warn!(copy = %q.display(), "my inbox was corrupt; copied aside");
        }
        Ok(read.entries.into_iter().filter(Entry::is_unread).collect())
    }

    pub(super) fn consume(&self, entries: &[Entry]) -> Result<()> {
        let keys: Vec<_> = entries.iter().map(Entry::key).collect();
        self.mailbox().consume(&self.me, &keys)?;
        Ok(())
    }

    /// Consumes the entries of the inbox that are these messages (those
    /// already gone are fine).
    pub(super) fn consume_refs(&self, refs: &[MessageRef]) -> Result<()> {
        let read = self.mailbox().read(&self.me)?;
        let mine: Vec<Entry> = read
            .entries
            .into_iter()
            .filter(|e| refs.iter().any(|r| r.is(e)))
            .collect();
        self.consume(&mine)
    }

    pub(super) fn next_work(&mut self) -> Result<Work> {
        let entries = self.unread()?;
        if !entries.is_empty() {
            // `benches/runtime.rs` measures delivery from this line.
            tracing::debug!(
                unread = entries.len(),
                at_us = crate::clock::now_us(),
                "inbox read"
            );
        }
        if let Some((e, r)) = entries.iter().find_map(|e| match e.protocol() {
            Some(Message::ShutdownRequest(r)) if e.from == LEAD_NAME => Some((e.clone(), r)),
            _ => None,
        }) {
            return Ok(Work::Shutdown(e, r));
        }
        let (mut lead, mut peers, mut handled) = (Vec::new(), Vec::new(), Vec::new());
        for e in entries {
            match e.protocol() {
                None if is_lead(&e.from) => lead.push(e),
                None => peers.push(e),
                Some(msg) => {
                    self.apply_frame(&e, msg)?;
                    handled.push(e);
                }
            }
        }
        self.consume(&handled)?;
        for batch in [lead, peers] {
            if !batch.is_empty() {
                return Ok(Work::Messages(batch));
            }
        }
        // The AI lead hands tasks out; it never takes one off the board.
        if self.member.is_ai_lead() {
            return Ok(Work::Nothing);
        }
        // A shell teammate takes only tasks that carry a command.
        let takes = self.runner.takes();
        // An id leaves the set only once its claim has been decided.
        while let Some(&id) = self.assigned.first() {
            let id_text = id.to_string();
            let claim = self
                .team
                .tasks()
                .claim_as(Some(&id_text), &self.me, false, takes)?;
            match claim {
                Claim::Claimed(t) => {
                    self.assigned.remove(&id);
                    return Ok(Work::Task(t));
                }
                Claim::Refused(Refusal::NoCommand) => self.decline(&id_text)?,
                Claim::Refused(_) => {}
            }
            self.assigned.remove(&id);
        }
        // The task the team watcher offered this runtime: claimed by id,
        // reading that task's file (and its blockers') only.
        let offered = self.available.as_ref().and_then(|a| a.take_turn());
        let mut claimed = None;
        if let Some(id) = offered {
            let id = id.to_string();
            if let Claim::Claimed(t) =
                self.team
                    .tasks()
                    .claim_as(Some(&id), &self.me, false, takes)?
            {
                claimed = Some(t);
            }
        }
        // Else a claim without id, only when no team watcher offers this
        // runtime work, or as its own slow check (see `look`).
        if claimed.is_none()
            && (std::mem::take(&mut self.look) || self.available.is_none())
            && let Claim::Claimed(t) = self.team.tasks().claim_as(None, &self.me, false, takes)?
        {
            claimed = Some(t);
        }
        let Some(t) = claimed else {
            return Ok(Work::Nothing);
        };
        if let Err(e) = self.team.notify_assignment(&t, &self.me, &self.me) {
            tracing::warn!(error = %format!("{e:#}"), task = %t.id, "task_assignment not sent");
        }
        Ok(Work::Task(t))
    }

    /// A task assigned to this member that it does not take (a shell
    /// teammate, a task without a command): back on the board for another
    /// teammate, and the lead told why. Nothing is run.
    fn decline(&self, id: &str) -> Result<()> {
        let Some(t) = self.team.tasks().unassign(id, &self.me)? else {
            return Ok(());
        };
        let why = crate::tasks::Refusal::NoCommand;
        self.say(&format!("↩ task {id} not taken: {why}"));
        let text = format!(
            "{}: task {id} ({}) handed back to the board, not run: {why}; give it a command \
             (swarm task update {id} --metadata '{{\"command\": \"…\"}}') or leave it to another \
             teammate",
            self.me,
            crate::text::escape_line(&t.subject)
        );
        let summary = format!("{}: task {id} not taken (no command)", self.me);
        self.team
            .send_text(&self.me, LEAD_NAME, &text, Some(&summary), true)?;
        Ok(())
    }

    /// A protocol frame that is not a unit of work by itself.
    pub(super) fn apply_frame(&mut self, e: &Entry, msg: Message) -> Result<()> {
        match msg {
            Message::ShutdownRequest(r) => {
                let reason = format!(
                    "only {LEAD_NAME} may ask me to shut down (this request came from {:?})",
                    e.from
                );
                self.say(&format!("✘ shutdown request from {} rejected", e.from));
                self.team.send_protocol(
                    &self.me,
                    LEAD_NAME,
                    &Message::ShutdownRejected(ShutdownRejected {
                        request_id: r.request_id,
                        from: self.me.clone(),
                        reason,
                        timestamp: clock::now_iso(),
                    }),
                    true,
                )?;
            }
            Message::ModeSetRequest(m) if e.from == LEAD_NAME => self.apply_mode(&m)?,
            Message::TaskAssignment(a) if a.assigned_by != self.me => {
                if let Some(n) = parse_id(&a.task_id) {
                    self.assigned.insert(n);
                }
            }
            other => tracing::info!(from = %e.from, frame = %other.one_line(), "consumed"),
        }
        Ok(())
    }

    pub(super) fn apply_mode(&mut self, m: &ModeSetRequest) -> Result<()> {
        self.team.roster().set_mode(&self.me, &m.mode)?;
        self.mode = Some(m.mode.clone());
        self.say(&format!("⚙ permission mode: {}", m.mode));
        Ok(())
    }
}
