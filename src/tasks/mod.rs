//! The shared task list: one JSON file per task under `tasks/<team>/`, in
//! Claude Code's format, with its locks, so Claude Code teammates and swarm
//! processes share one list.
//!
//! - [`task`] holds the task value, its exact file bytes, and the id rule.
//! - [`rules`] holds the state machine as pure functions (claim checks,
//!   updates, unassigning, id arithmetic).
//! - [`store`] holds [`TaskStore`], the files and locks: create, list, get,
//!   update, delete, claim, unassign.
//! - `index` is the board index: every task as last read, in one file of
//!   swarm's own, trusted whole only while the task directory provably has
//!   not changed (every writer, Claude Code included, changes it), else
//!   checked file by file; `store/board.rs` reads and saves it, so `list`,
//!   `status` and a claim without id cost about the same at 10,000 tasks
//!   as at 10. `cache` keeps parsed files by their `stat` within a process.
//! - [`sync`] is the team watcher's account of which task files changed:
//!   a look right after a change reads those and takes the rest from the
//!   index, instead of a `stat` of every file.
//! - [`view`] is the board as a look found it ([`BoardView`]): when the
//!   index was the board, its bytes read in place (`status` counts and
//!   `task list` prints 10,000 tasks without decoding them), with the
//!   files read again over them.
//! - [`error`] holds [`TaskError`].
//!
//! An owner change (an update naming a new owner, or a claim) is reported to
//! the caller, which owes the new owner a `task_assignment` message; this
//! module does not know the mailbox.
//!
//! ```no_run
//! use swarm::paths::Root;
//! use swarm::tasks::{Claim, NewTask, TaskStore};
//!
//! let store = TaskStore::new(&Root::new("/tmp/swarm-home"), "demo");
//! let t = store.create(NewTask { subject: "Write the parser".into(), ..Default::default() })?;
//! if let Claim::Claimed(mine) = store.claim(None, "alice", true)? {
//!     assert_eq!(mine.id, t.id);
//! }
//! # Ok::<(), swarm::tasks::TaskError>(())
//! ```

pub(crate) mod cache;
pub mod error;
pub(crate) mod index;
pub mod rules;
pub mod store;
pub mod sync;
pub mod task;
pub mod view;

pub use error::TaskError;
pub use rules::{Refusal, Takes, TaskUpdate};
pub use store::{Claim, NewTask, TaskList, TaskStore, Updated};
pub use task::{MAX_ID, Status, Task, parse_id};
pub use view::{BoardView, TaskView};

#[cfg(test)]
mod board_tests;
#[cfg(test)]
mod tests;
