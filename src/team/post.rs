//! Sending within a team: the policies above the raw mailbox.
//!
//! - A send to a name not on the roster is refused with the member list
//!   (`force` allows it), so a misspelt name never creates a phantom inbox.
//! - `*` broadcasts to every member but the sender.
//! - The sender's colour comes from the roster (the lead has none).
//! - A task's new owner gets a `task_assignment` from whoever assigned it.

use crate::mailbox::{Appended, Entry, Mailbox};
use crate::protocol::{self, Message};
use crate::tasks::Task;
use crate::team::Team;
use crate::team::roster::{RosterError, TeamFile};
use anyhow::{Context, Result, bail};

/// The longest summary kept, as Claude Code cuts it.
pub const SUMMARY_MAX_CHARS: usize = 200;

/// One delivered entry.
#[derive(Debug)]
pub struct Delivered {
    pub to: String,
    pub entry: Entry,
    pub appended: Appended,
}

/// Who receives a message addressed to `to`.
pub fn recipients(roster: &TeamFile, from: &str, to: &str, force: bool) -> Result<Vec<String>> {
    if to == "*" {
        let all: Vec<String> = roster
            .members
            .iter()
            .map(|m| m.name.clone())
            .filter(|n| n != from)
            .collect();
        if all.is_empty() {
            bail!(
                "nobody to broadcast to: {from:?} is the only member of team {:?}",
                roster.name
            );
        }
        return Ok(all);
    }
    if roster.member(to).is_none() && !force {
        return Err(RosterError::NoSuchMember {
            team: roster.name.clone(),
            name: to.to_string(),
            members: roster.member_names(),
        })
        .context("refusing to create an inbox nobody reads (use --force to send anyway)");
    }
    Ok(vec![to.to_string()])
}

/// The summary for a plain text: the given one, else the first line, cut.
pub fn summary_for(text: &str, given: Option<&str>) -> String {
    let raw = given.unwrap_or_else(|| text.lines().next().unwrap_or(""));
    raw.chars().take(SUMMARY_MAX_CHARS).collect()
}

impl Team {
    /// Sends a plain message from `from` to `to` (a name or `*`).
    pub fn send_text(
        &self,
        from: &str,
        to: &str,
        text: &str,
        summary: Option<&str>,
        force: bool,
    ) -> Result<Vec<Delivered>> {
        self.send_text_on(&self.roster().read()?, from, to, text, summary, force)
    }

    /// [`Team::send_text`] on a roster the caller has just read (`swarm
    /// send` reads it once, for `--as` and the recipients both).
    pub fn send_text_on(
        &self,
        roster: &TeamFile,
        from: &str,
        to: &str,
        text: &str,
        summary: Option<&str>,
        force: bool,
    ) -> Result<Vec<Delivered>> {
        let targets = recipients(roster, from, to, force)?;
        let color = roster.member(from).and_then(|m| m.color.clone());
        let summary = summary_for(text, summary);
        let mut out = Vec::new();
        for target in targets {
            let entry = Entry::new(from, text.to_string(), Some(summary.clone()), color.clone());
            out.push(self.deliver(&target, entry)?);
        }
        Ok(out)
    }

    /// Sends a structured protocol message (compact JSON in `text`).
    pub fn send_protocol(
        &self,
        from: &str,
        to: &str,
        msg: &Message,
        force: bool,
    ) -> Result<Delivered> {
        let roster = self.roster().read()?;
        if to == "*" {
            bail!("protocol messages cannot be broadcast; name one recipient");
        }
        recipients(&roster, from, to, force)?;
        let color = roster.member(from).and_then(|m| m.color.clone());
        let entry = Entry::frame(from, msg, color);
        self.deliver(to, entry)
    }

    /// Sends plain messages `(text, summary)` from `from` to the one member
    /// `to`, in order and in one inbox write (`Mailbox::append_all`): the
    /// batches of `swarm send --stdin`. One result per message.
    pub fn send_texts(
        &self,
        from: &str,
        to: &str,
        texts: &[(String, Option<String>)],
        force: bool,
    ) -> Result<Vec<Result<Delivered>>> {
        if to == "*" {
            bail!("a batch goes to one recipient, not '*'");
        }
        let roster = self.roster().read()?;
        recipients(&roster, from, to, force)?;
        let color = roster.member(from).and_then(|m| m.color.clone());
        let key = self.lead_key(from, to)?;
        let entries: Vec<Entry> = texts
            .iter()
            .map(|(text, summary)| {
                let summary = summary_for(text, summary.as_deref());
                let mut e = Entry::new(from, text.clone(), Some(summary), color.clone());
                if let Some(k) = &key {
                    k.sign_entry(&mut e);
                }
                e
            })
            .collect();
        let context = || format!("sending to {to:?} in team {:?}", self.name);
        let sent = self
            .mailbox()
            .append_all(to, entries.clone())
            .with_context(context)?;
        Ok(entries
            .into_iter()
            .zip(sent)
            .map(|(entry, r)| {
                let appended = r.with_context(context)?;
                Ok(Delivered {
                    to: to.to_string(),
                    entry,
                    appended,
                })
            })
            .collect())
    }

    /// A Claude Code teammate started with --lead-verify-key obeys lead
    /// entries only when signed with its key (reference §4): the key that
    /// entries from `from` to `to` are signed with, if any.
    fn lead_key(&self, from: &str, to: &str) -> Result<Option<crate::mailbox::signing::LeadKey>> {
        if crate::mailbox::signing::is_signed_sender(from)
            && crate::names::validate_member(to).is_ok()
        {
            return crate::mailbox::signing::LeadKey::load(&self.root, &self.name, to);
        }
        Ok(None)
    }

    fn deliver(&self, to: &str, mut entry: Entry) -> Result<Delivered> {
        if let Some(key) = self.lead_key(&entry.from, to)? {
            key.sign_entry(&mut entry);
        }
        let mailbox: Mailbox = self.mailbox();
        let appended = mailbox
            .append(to, entry.clone())
            .with_context(|| format!("sending to {to:?} in team {:?}", self.name))?;
        Ok(Delivered {
            to: to.to_string(),
            entry,
            appended,
        })
    }

    /// Tells a task's new owner about it (`task_assignment`, from `by`).
    pub fn notify_assignment(&self, task: &Task, new_owner: &str, by: &str) -> Result<Delivered> {
        let msg = Message::TaskAssignment(protocol::TaskAssignment {
            task_id: task.id.clone(),
            subject: task.subject.clone(),
            description: task.description.clone(),
            assigned_by: by.to_string(),
            timestamp: crate::clock::now_iso(),
        });
        self.send_protocol(by, new_owner, &msg, true)
    }
}
