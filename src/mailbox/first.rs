//! A member's inbox made ready for a new session of its agent
//! ([`Mailbox::ready_for_start`]): a first prompt put at its head and the
//! waiting mail kept after it, rewritten where the new session needs it
//! (a Claude Code teammate's launch, see `agents::claude`).

use super::entry::Entry;
use super::inbox::{self, Stored};
use super::{Mailbox, MailboxError, history, load_locked};
use crate::atomic_file::FileLock;

impl Mailbox {
    /// Readies `member`'s inbox for a new session, in one write under its
    /// lock: `first`, if given, goes at its head; entries already consumed
    /// (`read:true`) and those `superseded` names (an unread copy of the
    /// same prompt) move to the member's history; every other entry stays
    /// unread, in its order, as it was or as `refresh` rewrites it
    /// (`Some`). Nothing is written when nothing changes. Returns how many
    /// entries moved to history.
    pub fn ready_for_start(
        &self,
        member: &str,
        first: Option<Entry>,
        superseded: impl Fn(&Entry) -> bool,
        refresh: impl Fn(&Entry) -> Option<Entry>,
    ) -> Result<usize, MailboxError> {
        let path = self.inbox_path(member)?;
        if !path.exists() {
            if let Some(first) = first {
                self.append(member, first)?;
            }
            return Ok(0);
        }
        let mut lock = FileLock::acquire(&path, self.lock_timeout)?;
        loop {
            let (stored, _quarantined) = load_locked(&path, inbox::parse)?;
            let (moved, kept): (Vec<Stored>, Vec<Stored>) = stored
                .into_iter()
                .partition(|s| !s.is_unread() || superseded(s.entry()));
            let mut changed = first.is_some() || !moved.is_empty();
            let mut all: Vec<Stored> = first.iter().cloned().map(Stored::new).collect();
            for s in kept {
                match refresh(s.entry()) {
                    Some(e) => {
                        changed = true;
                        all.push(Stored::new(e));
                    }
                    None => all.push(s),
                }
            }
            if !changed {
                return Ok(0);
            }
            history::record(&self.root.history(&self.team, member)?, &moved)?;
            if self.write_locked(&path, &all, &mut lock)?.is_lost() {
                continue;
            }
            drop(lock);
            self.ring(member);
            return Ok(moved.len());
        }
    }
}
