//! Inboxes: one JSON array per member (filled in by the mailbox work).
