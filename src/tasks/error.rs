//! What can go wrong in the task store. Every message names the team, and
//! the task id and file where there is one, so a failure reads as a bug
//! report. A refused claim is not an error: see `Refusal`.

use crate::atomic_file::LockError;
use crate::names::NameError;
use std::io;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum TaskError {
    #[error(
        "invalid task id {id:?} in team {team}: task ids are decimal numbers from 1 \
         (^[1-9][0-9]*$)"
    )]
    InvalidId { team: String, id: String },

    #[error(
        "team {team}: no task id is left to hand out: ids stop at {max} (the highest task file \
         or .highwatermark has reached it)",
        max = crate::tasks::task::MAX_ID
    )]
    IdsExhausted { team: String },

    /// The cause of this and the variants below is in the message, not
    /// `source()`, so that a chain printed whole (`{:#}`) says it once.
    #[error("team {team}: no task list can live there: {error}")]
    Name { team: String, error: NameError },

    #[error("no task {id} in team {team}")]
    NotFound {
        team: String,
        id: String,
        /// Where its file would be (not shown: the one wording of a
        /// missing task, in every command, is the line above).
        path: PathBuf,
    },

    #[error("team {team}: task {id} cannot block itself")]
    SelfBlock { team: String, id: String },

    #[error(
        "team {team}: refused: task {id} would wait for itself ({}), so none of them could \
         ever be claimed",
        cycle.join(" waits for ")
    )]
    Cycle {
        team: String,
        id: String,
        cycle: Vec<String>,
    },

    #[error(
        "team {team}: task {id} ({path}) is unreadable ({reason}); its bytes were copied to \
         {quarantined} and the id stays used"
    )]
    Corrupt {
        team: String,
        id: String,
        path: PathBuf,
        reason: String,
        quarantined: PathBuf,
    },

    #[error("team {team}: cannot {what} ({path}): {error}")]
    Io {
        team: String,
        what: String,
        path: PathBuf,
        error: io::Error,
    },

    #[error("team {team}: cannot lock {what}: {error}")]
    Lock {
        team: String,
        what: String,
        error: LockError,
    },
}
