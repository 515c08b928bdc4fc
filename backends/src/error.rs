//! `BackendError`: every way a pane backend can fail, typed where a caller
//! branches (unsupported operation, a refused argument, a tmux too old, a
//! timeout) and carrying the program, argv and stderr where an external tool
//! failed, so that a failure reads like a bug report.

use std::path::PathBuf;
use std::time::Duration;

use crate::{BackendKind, PaneId};

/// The crate's result type.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

/// A failure of a pane backend.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The backend cannot do this at all: it lacks the facet or the
    /// [`crate::Capabilities`] fact the operation needs.
    #[error("the {backend} backend does not support {operation}")]
    Unsupported {
        backend: BackendKind,
        operation: &'static str,
    },

    /// The backend cannot be used here (tool missing, wrong platform, …).
    #[error("the {backend} backend is unavailable: {reason}")]
    Unavailable {
        backend: BackendKind,
        reason: String,
    },

    /// An argument was refused before anything ran.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidArgument {
        what: &'static str,
        value: String,
        reason: String,
    },

    /// The installed tmux is older than the backend needs.
    #[error("tmux {found} is too old: swarm needs tmux {needed} or newer")]
    TmuxTooOld { found: String, needed: &'static str },

    /// An external program could not be started.
    #[error("could not run {program:?} (argv {argv:?}): {source}")]
    Launch {
        program: String,
        argv: Vec<String>,
        #[source]
        source: std::io::Error,
    },

    /// An external program ran and failed.
    #[error("{program} {argv:?} failed ({status}): {stderr}")]
    CommandFailed {
        program: String,
        argv: Vec<String>,
        status: String,
        stderr: String,
    },

    /// An external program did not finish in time; it was killed.
    #[error("{program} {argv:?} did not finish within {after:?}")]
    Timeout {
        program: String,
        argv: Vec<String>,
        after: Duration,
    },

    /// An external program exited, but a process it left behind still held
    /// its output open: what it printed may be cut short.
    #[error(
        "{program} {argv:?} exited, but its output was still held open {within:?} later (by a \
         process it left behind): its answer may be cut short"
    )]
    OutputHeld {
        program: String,
        argv: Vec<String>,
        within: Duration,
    },

    /// Output of an external program was not what its parser expects.
    #[error("could not parse {what} from {output:?}")]
    Parse { what: &'static str, output: String },

    /// A pane could not be created.
    #[error("could not spawn {program:?}: {reason}")]
    Spawn { program: String, reason: String },

    /// The kill ladder ran but the pane or its processes are still there.
    #[error("pane {pane} survived the kill: {reason}")]
    KillFailed { pane: PaneId, reason: String },

    /// A pane with this id exists but does not carry swarm's mark for it:
    /// it was not started by swarm (or not as this member), so it is left
    /// untouched.
    #[error(
        "pane {pane} does not carry swarm's mark (not started by swarm as this member); left untouched"
    )]
    NotOurs { pane: PaneId },

    /// The pane id does not belong to this backend or is malformed.
    #[error("unknown pane {pane} for the {backend} backend")]
    UnknownPane { backend: BackendKind, pane: PaneId },

    /// A filesystem operation failed.
    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BackendError {
    /// Shorthand for [`BackendError::Unsupported`].
    pub fn unsupported(backend: BackendKind, operation: &'static str) -> Self {
        Self::Unsupported { backend, operation }
    }

    /// Shorthand for [`BackendError::InvalidArgument`].
    pub fn invalid(what: &'static str, value: &str, reason: impl Into<String>) -> Self {
        Self::InvalidArgument {
            what,
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}
