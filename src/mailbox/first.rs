//! A teammate's first prompt put at the head of its inbox
//! ([`Mailbox::put_first`]): what a Claude Code teammate's launch needs,
//! without sweeping aside the mail that waits for it.

use super::entry::Entry;
use super::inbox::{self, Stored};
use super::{Mailbox, MailboxError, history, load_locked};
use crate::atomic_file::FileLock;

impl Mailbox {
    /// Puts `first` at the head of `member`'s inbox, in one write under its
    /// lock. Entries already consumed (`read:true`) and those `superseded`
    /// names (an unread copy of the same prompt) move to the member's
    /// history; every other entry stays unread, in its order, after
    /// `first`, as it was or as `refresh` rewrites it (`Some`). Returns how
    /// many entries moved to history.
    pub fn put_first(
        &self,
        member: &str,
        first: Entry,
        superseded: impl Fn(&Entry) -> bool,
        refresh: impl Fn(&Entry) -> Option<Entry>,
    ) -> Result<usize, MailboxError> {
        let path = self.inbox_path(member)?;
        if !path.exists() {
            self.append(member, first)?;
            return Ok(0);
        }
        let mut lock = FileLock::acquire(&path, self.lock_timeout)?;
        loop {
            let (stored, _quarantined) = load_locked(&path, inbox::parse)?;
            let (moved, kept): (Vec<Stored>, Vec<Stored>) = stored
                .into_iter()
                .partition(|s| !s.is_unread() || superseded(s.entry()));
            let mut all = Vec::with_capacity(kept.len() + 1);
            all.push(Stored::new(first.clone()));
            all.extend(
                kept.into_iter()
                    .map(|s| refresh(s.entry()).map_or(s, Stored::new)),
            );
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
