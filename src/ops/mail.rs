//! Sending, reading and waiting on an inbox, as the acting member: a plain
//! message to one member or everyone (`*`), the acting member's inbox
//! read (and consumed into its history when asked), and a wait for its
//! next unread messages that hands each one out once.

use super::TeamOps;
use crate::mailbox::{Entry, EntryKey};
use crate::team::post::Delivered;
use crate::team::{RosterError, TeamFile};
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::time::{Duration, Instant};

/// The longest [`TeamOps::wait_for_messages`] waits: MCP clients give up
/// on a call near 60 s.
pub const MAX_WAIT: Duration = Duration::from_secs(50);

/// One message as a front end shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Message {
    pub from: String,
    pub text: String,
    pub summary: Option<String>,
    pub timestamp: String,
    pub msg_id: Option<String>,
    /// Consumed before this read (it came from the history).
    pub read: bool,
}

impl Message {
    pub fn of(e: &Entry, read: bool) -> Message {
        Message {
            from: e.from.clone(),
            text: e.text.clone(),
            summary: e.summary.clone(),
            timestamp: e.timestamp.clone(),
            msg_id: e.msg_id.clone(),
            read,
        }
    }
}

/// One delivery of a send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sent {
    pub to: String,
    pub msg_id: Option<String>,
}

impl Sent {
    pub fn of(d: &Delivered) -> Sent {
        Sent {
            to: d.to.clone(),
            msg_id: d.entry.msg_id.clone(),
        }
    }
}

/// The refusal of a text longer than an inbox takes.
pub fn check_length(text: &str) -> Result<()> {
    if text.len() > crate::mailbox::MAX_TEXT_BYTES {
        bail!(
            "message is {} bytes; the limit is {} bytes (64 KB): put large content in a file \
             (e.g. under $SWARM_SCRATCHPAD) and send its path",
            text.len(),
            crate::mailbox::MAX_TEXT_BYTES
        );
    }
    Ok(())
}

/// What a mode request did: sent to the members whose agent applies it,
/// not sent (with the reason) to the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModeRequested {
    pub mode: String,
    pub sent: Vec<String>,
    /// Why each other member was not asked (its agent would ignore it).
    pub not: Vec<String>,
}

impl TeamOps {
    /// Asks `target` (or every teammate) to switch to permission mode
    /// `mode` (a `mode_set_request` from the lead): only those whose agent
    /// applies it (Claude Code drops the request from its inbox); the
    /// others are named with the reason, never reported as changed.
    pub fn request_mode(&self, target: Option<&str>, mode: &str) -> Result<ModeRequested> {
        self.require_own("change its members' permission modes")?;
        let tf = self.team().roster().read()?;
        let targets: Vec<String> = match target {
            Some(t) => vec![t.to_string()],
            None => tf.teammates().map(|m| m.name.clone()).collect(),
        };
        let msg = crate::protocol::Message::ModeSetRequest(crate::protocol::ModeSetRequest {
            mode: mode.to_string(),
            from: self.me().to_string(),
        });
        let mut done = ModeRequested {
            mode: mode.to_string(),
            sent: Vec::new(),
            not: Vec::new(),
        };
        for t in &targets {
            match tf.member(t).map(crate::agents::mode_change) {
                Some(crate::agents::ModeChange::Unsupported(why)) => done.not.push(why),
                _ => {
                    self.team().send_protocol(self.me(), t, &msg, false)?;
                    done.sent.push(t.clone());
                }
            }
        }
        Ok(done)
    }

    /// The roster, with the acting member on it: a message signed by a
    /// name nobody answers to would mislead its reader, and its replies
    /// would go nowhere.
    pub fn roster_with_me(&self) -> Result<TeamFile> {
        let roster = self.team().roster().read()?;
        if roster.member(self.me()).is_none() {
            return Err(RosterError::NoSuchMember {
                team: roster.name.clone(),
                name: self.me().to_string(),
                members: roster.member_names(),
            })
            .context("--as");
        }
        Ok(roster)
    }

    /// Sends `text` to `to` (a member, or `*` for every member but the
    /// sender). A name off the roster is refused with the member list
    /// unless `force`. Returns what is on disk, one delivery per recipient.
    pub fn send(
        &self,
        to: &str,
        text: &str,
        summary: Option<&str>,
        force: bool,
    ) -> Result<Vec<Delivered>> {
        let roster = self.roster_with_me()?;
        self.send_on(&roster, to, text, summary, force)
    }

    /// [`TeamOps::send`] on a roster the caller has just read with
    /// [`TeamOps::roster_with_me`] (`swarm send` reads it once).
    pub fn send_on(
        &self,
        roster: &TeamFile,
        to: &str,
        text: &str,
        summary: Option<&str>,
        force: bool,
    ) -> Result<Vec<Delivered>> {
        check_length(text)?;
        self.team()
            .send_text_on(roster, self.me(), to, text, summary, force)
    }

    /// The acting member's messages: its unread ones, and with
    /// `!unread_only` also those it consumed before (from its history,
    /// `read: true`, oldest first). With `mark_read` the unread ones shown
    /// are consumed into the history (by identity, so one that arrives
    /// meanwhile is kept).
    pub fn read_inbox(&self, unread_only: bool, mark_read: bool) -> Result<Vec<Message>> {
        if mark_read {
            self.require_own("consume its mail (mark_read)")?;
        }
        let me = self.me();
        {
            let mb = self.team().mailbox();
            let mut out = Vec::new();
            let fresh: Vec<Entry> = mb
                .read(me)?
                .entries
                .into_iter()
                .filter(Entry::is_unread)
                .collect();
            if !unread_only {
                // A message being consumed right now is shown once.
                out.extend(
                    mb.history_besides(me, &fresh)?
                        .iter()
                        .map(|e| Message::of(e, true)),
                );
            }
            out.extend(fresh.iter().map(|e| Message::of(e, false)));
            if mark_read && !fresh.is_empty() {
                let keys: Vec<EntryKey> = fresh.iter().map(Entry::key).collect();
                mb.consume(me, &keys)?;
            }
            Ok(out)
        }
    }

    /// Waits up to `timeout` (at most [`MAX_WAIT`]) for unread messages in
    /// the acting member's inbox, then returns them, each consumed into
    /// its history so that no later wait returns it again. `[]` at the
    /// timeout. Woken by the inbox's file events, not by polling.
    pub fn wait_for_messages(&self, timeout: Duration) -> Result<Vec<Message>> {
        self.require_own("consume its mail")?;
        let timeout = timeout.min(MAX_WAIT);
        let me = self.me();
        {
            let mb = self.team().mailbox();
            let watcher = mb.watch()?;
            let file = mb.inbox_path(me)?;
            let name = file.file_name().map(|n| n.to_owned()).unwrap_or_default();
            let deadline = Instant::now() + timeout;
            loop {
                let fresh: Vec<Entry> = mb
                    .read(me)?
                    .entries
                    .into_iter()
                    .filter(Entry::is_unread)
                    .collect();
                if !fresh.is_empty() {
                    let keys: Vec<EntryKey> = fresh.iter().map(Entry::key).collect();
                    mb.consume(me, &keys)?;
                    return Ok(fresh.iter().map(|e| Message::of(e, false)).collect());
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(Vec::new());
                }
                watcher.wait_for(&name, left);
            }
        }
    }
}
