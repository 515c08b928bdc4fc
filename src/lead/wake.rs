//! Wake-ups that coalesce ([`Wake`]): one change to the team is several
//! file events (a task file written, a message about it, the lead's own
//! consumption of that message), and each woke the dialog's thread again
//! although the snapshot it was about to take would see them all. A
//! [`Wake`] rings its receiver once and stays quiet until the receiver
//! says it is about to look ([`Wake::taken`]); whatever changes after that
//! rings again, so nothing is missed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rings a receiver at most once between two of its looks.
#[derive(Clone)]
pub struct Wake {
    send: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Rung and not looked at since.
    pending: Arc<AtomicBool>,
}

impl Wake {
    /// A wake-up that calls `send` to ring (`send` returns false once the
    /// receiver is gone).
    pub fn new(send: impl Fn() -> bool + Send + Sync + 'static) -> Wake {
        Wake {
            send: Arc::new(send),
            pending: Arc::new(AtomicBool::new(false)),
        }
    }

    /// A wake-up over a channel, and its receiver.
    pub fn channel() -> (Wake, std::sync::mpsc::Receiver<()>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (Wake::new(move || tx.send(()).is_ok()), rx)
    }

    /// Something the receiver shows changed (call after the change is
    /// made): rings unless a ring is already waiting for the receiver's
    /// next look. False when the receiver is gone.
    pub fn ring(&self) -> bool {
        // SeqCst with `taken`: a change made before a ring that found one
        // pending is made before the receiver's `taken`, so its look sees it.
        if self.pending.swap(true, Ordering::SeqCst) {
            return true;
        }
        (self.send)()
    }

    /// The receiver is about to look at everything (call before reading):
    /// the next change rings again.
    pub fn taken(&self) {
        self.pending.store(false, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for Wake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wake")
            .field("pending", &self.pending.load(Ordering::SeqCst))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_before_a_look_ring_once_and_a_change_after_it_rings_again() {
        let (wake, rx) = Wake::channel();
        assert!(wake.ring());
        assert!(wake.ring());
        assert!(wake.clone().ring(), "a clone shares the pending ring");
        assert_eq!(rx.try_iter().count(), 1, "one ring for three changes");
        wake.taken();
        assert!(wake.ring());
        assert_eq!(rx.try_iter().count(), 1, "a change after the look rings");
        assert!(wake.ring());
        assert_eq!(rx.try_iter().count(), 0, "not looked at yet: quiet");
    }

    #[test]
    fn a_receiver_gone_is_said() {
        let (wake, rx) = Wake::channel();
        drop(rx);
        assert!(!wake.ring());
    }
}
