//! Teams: member and team names, colours, and the roster (`config.json`).

pub mod names;
