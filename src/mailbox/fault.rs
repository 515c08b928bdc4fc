//! The points of a holder's commit (see `delivery.rs`) where tests stop or
//! kill it: unit tests through a callback, integration tests (with the
//! `fault-injection` feature, never in a release binary) through
//! `SWARM_FAULT`.

#[cfg(feature = "fault-injection")]
use crate::atomic_file;
#[cfg(feature = "fault-injection")]
use std::path::Path;
use std::sync::Arc;

/// Points of a holder's commit where tests stop or kill it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// Spooled entries renamed to claims; the inbox not yet written.
    Claimed,
    /// The new inbox written to its temp file and fsynced; the lock not yet
    /// checked, the temp file not yet renamed over the inbox.
    Written,
    /// The holder's own entries appended in place, where readers see them;
    /// not yet made durable (`fdatasync`).
    Appended,
    /// The inbox renamed in and durable; the claims not yet removed.
    Committed,
}

/// Fault injection for tests. Unit tests add a callback; with the
/// `fault-injection` feature (test builds only, never a release binary)
/// `SWARM_FAULT=<fault>:<marker file>` makes the first holder (across
/// processes: whoever creates the marker) that reaches the fault's stage
/// misbehave:
///
/// * `claimed`, `committed`: with at least one spooled entry claimed, abort
///   on the spot, as a `kill -9` would;
/// * `stop-claimed`: with at least one spooled entry claimed, stop itself
///   (`SIGSTOP`), as a suspended process would, until a `SIGCONT`;
/// * `stop-written`: stop itself with the inbox written to its temp file.
///
/// With the same feature, `SWARM_FAULT_LOCK_TIMEOUT_MS` replaces the default
/// lock timeout (a send's deadline) of every [`super::Mailbox`], so tests of what
/// happens at the deadline need not wait a minute.
#[derive(Clone, Default)]
pub(super) struct Hooks {
    pub(super) callback: Option<Arc<dyn Fn(Stage) + Send + Sync>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.callback.is_some() {
            "Hooks(callback)"
        } else {
            "Hooks"
        })
    }
}

impl Hooks {
    pub(super) fn at(&self, stage: Stage, claimed: usize) {
        if let Some(cb) = &self.callback {
            cb(stage);
        }
        #[cfg(feature = "fault-injection")]
        env_fault(stage, claimed);
        #[cfg(not(feature = "fault-injection"))]
        let _ = claimed;
    }
}

/// The `SWARM_FAULT` of [`Hooks`].
#[cfg(feature = "fault-injection")]
fn env_fault(stage: Stage, claimed: usize) {
    let Some(spec) = std::env::var_os("SWARM_FAULT") else {
        return;
    };
    let spec = spec.to_string_lossy();
    let Some((name, marker)) = spec.split_once(':') else {
        return;
    };
    let fires = match (name, stage) {
        ("claimed", Stage::Claimed) | ("committed", Stage::Committed) => claimed > 0,
        ("stop-claimed", Stage::Claimed) => claimed > 0,
        ("stop-written", Stage::Written) => true,
        _ => false,
    };
    if !fires || !atomic_file::create_new(Path::new(marker), b"").unwrap_or(false) {
        return;
    }
    if name.starts_with("stop-") {
        // SAFETY: raise has no memory-safety preconditions; SIGSTOP stops
        // the whole process until a SIGCONT.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    } else {
        std::process::abort();
    }
}
