//! Teams: names, colours, the roster (`config.json`) and the typed view of
//! swarm's own fields in it ([`fields`]), member status ([`status`]), whose
//! team it is ([`owner`]: swarm changes only the teams it started), the
//! tasks of owners provably dead given back to the board ([`orphans`]),
//! and [`Team`], the
//! handle that ties a team's roster, mailbox and task list together with the
//! policies that span them (see [`post`]).

pub mod colors;
pub mod fields;
pub mod locks;
pub mod orphans;
pub mod owner;
pub mod post;
pub mod roster;
pub mod status;

pub use fields::{AiLead, ExitRecord, FieldError, LeadMode, SwarmField};
pub use owner::{ForeignTeam, Ownership};
pub use roster::{Member, Roster, RosterError, TeamFile, list_teams};

use crate::mailbox::Mailbox;
use crate::paths::Root;
use crate::tasks::TaskStore;

/// One team under one state root.
#[derive(Debug, Clone)]
pub struct Team {
    pub root: Root,
    pub name: String,
}

impl Team {
    pub fn new(root: &Root, name: &str) -> Self {
        Team {
            root: root.clone(),
            name: name.to_string(),
        }
    }

    pub fn roster(&self) -> Roster {
        Roster::new(&self.root, &self.name)
    }

    pub fn mailbox(&self) -> Mailbox {
        Mailbox::new(&self.root, &self.name)
    }

    pub fn tasks(&self) -> TaskStore {
        TaskStore::new(&self.root, &self.name)
    }

    /// Whether swarm started this team (see [`owner`]).
    pub fn ownership(&self) -> Ownership {
        Ownership::of(&self.root, &self.name)
    }

    /// `Ok` when swarm started this team, else the refusal of `action`
    /// ("delete it", "stop its members"): the one check before anything
    /// that changes, stops or deletes a team.
    pub fn require_own(&self, action: &str) -> Result<(), ForeignTeam> {
        self.ownership().require(&self.name, action)
    }
}
