//! The lead's TeamsDialog: a full-screen TUI to watch and steer the team.
//!
//! - [`state`]: [`TeamView`], the plain-data snapshot the lead gathers, and
//!   [`UiState`], where the user is (selection, modal, zoom).
//! - [`view`]: [`draw`], a pure function of the two (snapshot-tested), and
//!   [`ScreenSource`], how in-process panes' live screens reach it.
//! - [`keymap`]: [`handle`], a pure function from a key to the next
//!   [`UiState`] and an [`Action`] for the lead; [`KEYS`] for the help.
//! - [`reading`]: what Enter opens on an inbox, task or request row.
//! - [`terminal`]: [`TerminalGuard`], raw mode and the alternate screen,
//!   restored on drop, panic and SIGTERM/SIGHUP/SIGINT (through signal-hook).
//! - [`app`]: [`LeadControl`], what the TUI needs from the lead, and [`run`],
//!   the event loop.
//!
//! How the lead gathers the snapshot (file watching, liveness) is not this
//! module's business: it implements [`LeadControl`] and signals changes
//! through the waker of the loop's [`Inputs`].

pub mod app;
mod chunked;
pub mod keymap;
pub mod reading;
pub mod state;
pub mod terminal;
pub mod view;

#[cfg(test)]
mod sizes;
#[cfg(test)]
mod snapshots;

pub use app::{Exit, Inputs, LeadControl, RunOptions, run};
pub use keymap::{Action, KEYS, handle};
pub use state::{
    MemberRow, MemberStatus, Modal, Panel, PendingRequest, RequestKind, TeamView, UiState,
};
pub use terminal::TerminalGuard;
pub use view::{NoScreens, ScreenSource, draw};
