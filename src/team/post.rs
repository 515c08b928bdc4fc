//! Sending within a team: the policies above the raw mailbox.
//!
//! - A send to a name not on the roster is refused with the member list
//!   (`force` allows it), so a misspelt name never creates a phantom inbox.
//! - `*` broadcasts to every member but the sender, each inbox on its own:
//!   one that cannot be written does not keep it from the others
//!   ([`Incomplete`] says who got it and who did not).
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

/// A broadcast that some recipients did not get (yet): every other one
/// got it. Says per recipient what happened, in one line: sent, pending
/// (a stopped writer took it and delivers it once when it resumes: not to
/// be sent again) or failed (not sent).
#[derive(Debug)]
pub struct Incomplete {
    pub delivered: Vec<Delivered>,
    /// Each recipient that did not get it, and why.
    pub missed: Vec<(String, anyhow::Error)>,
}

impl Incomplete {
    /// Whether the message is still pending for a recipient (none failed
    /// outright is not implied).
    pub fn any_pending(&self) -> bool {
        self.missed
            .iter()
            .any(|(_, e)| crate::mailbox::MailboxError::still_pending_in(e))
    }

    /// The [`Incomplete`] in `e`'s chain, if it is one.
    pub fn in_error(e: &anyhow::Error) -> Option<&Incomplete> {
        e.chain().find_map(|c| c.downcast_ref::<Incomplete>())
    }
}

impl std::fmt::Display for Incomplete {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the broadcast reached ")?;
        if self.delivered.is_empty() {
            write!(f, "nobody")?;
        } else {
            let names: Vec<&str> = self.delivered.iter().map(|d| d.to.as_str()).collect();
            write!(f, "{}", names.join(", "))?;
        }
        for (to, e) in &self.missed {
            let what = if crate::mailbox::MailboxError::still_pending_in(e) {
                "pending (delivered once when the writer holding its inbox resumes; do not send again)"
            } else {
                "failed (not sent)"
            };
            write!(f, "; {to}: {what}: {e:#}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Incomplete {}

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
        let entry =
            |_: &str| Entry::new(from, text.to_string(), Some(summary.clone()), color.clone());
        if to != "*" {
            return targets
                .iter()
                .map(|target| self.deliver(target, entry(target)))
                .collect();
        }
        // A broadcast: every recipient at once, each inbox on its own, so
        // one wedged inbox (its lock held by a stopped process) neither
        // stops nor delays the others.
        let outcomes: Vec<(String, Result<Delivered>)> = std::thread::scope(|s| {
            let running: Vec<_> = targets
                .iter()
                .map(|target| {
                    let e = entry(target);
                    (target, s.spawn(move || self.deliver(target, e)))
                })
                .collect();
            running
                .into_iter()
                .map(|(target, h)| {
                    let r = h
                        .join()
                        .unwrap_or_else(|_| Err(anyhow::anyhow!("sending to {target:?} panicked")));
                    (target.clone(), r)
                })
                .collect()
        });
        let mut delivered = Vec::new();
        let mut missed = Vec::new();
        for (to, r) in outcomes {
            match r {
                Ok(d) => delivered.push(d),
                Err(e) => missed.push((to, e)),
            }
        }
        if missed.is_empty() {
            return Ok(delivered);
        }
        Err(Incomplete { delivered, missed }.into())
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

#[cfg(test)]
mod broadcast_tests {
    use super::*;
    use crate::mailbox::MailboxError;

    fn delivered(to: &str) -> Delivered {
        Delivered {
            to: to.into(),
            entry: Entry::new("team-lead", "x".into(), None, None),
            appended: Appended {
                msg_id: "m".into(),
                quarantined: None,
                dropped: 0,
            },
        }
    }

    /// Issue 24, item 7: a broadcast names each recipient it missed, and it
    /// is pending (exit 3, do not resend) when any missed one is pending.
    #[test]
    fn an_incomplete_broadcast_names_each_recipient_and_is_pending_if_any_is() {
        let pending = || -> anyhow::Error {
            anyhow::Error::new(MailboxError::StillPending {
                inbox: "bob.json".into(),
                msg_id: "m1".into(),
                spool_file: "spool/m1.json".into(),
                waited: std::time::Duration::from_secs(1),
            })
            .context("sending to \"bob\"")
        };
        let failed = || anyhow::anyhow!("timed out").context("sending to \"cat\"");
        let b = Incomplete {
            delivered: vec![delivered("ann")],
            missed: vec![("bob".into(), pending()), ("cat".into(), failed())],
        };
        assert!(b.any_pending());
        let line = b.to_string();
        assert!(
            line.starts_with("the broadcast reached ann; bob: pending ("),
            "{line}"
        );
        assert!(
            line.contains("; cat: failed (not sent): sending to \"cat\": timed out"),
            "{line}"
        );
        let e: anyhow::Error = b.into();
        assert!(Incomplete::in_error(&e.context("swarm send")).is_some());

        let only_failed = Incomplete {
            delivered: Vec::new(),
            missed: vec![("cat".into(), failed())],
        };
        assert!(!only_failed.any_pending());
        assert!(
            only_failed
                .to_string()
                .starts_with("the broadcast reached nobody; cat: failed")
        );
    }
}
