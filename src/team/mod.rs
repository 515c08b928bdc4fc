//! Teams: member and team names, colours, and the roster (`config.json`).

pub mod colors;
pub mod names;
pub mod roster;

pub use roster::{Member, Roster, RosterError, TeamFile, list_teams};
