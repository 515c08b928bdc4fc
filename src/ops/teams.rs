//! The teams under a root: creating one (swarm's own from then on, see
//! `team::owner`), deleting one swarm started, and listing them all with
//! whose each is.

use crate::paths::Root;
use crate::team::{Ownership, Roster};
use anyhow::{Context, Result};
use serde::Serialize;
use std::path::Path;

/// A team under the root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamEntry {
    pub name: String,
    /// swarm did not start it (Claude Code's, say): read-only to swarm.
    pub foreign: bool,
}

/// Creates team `name`: a roster holding only the lead (working in `cwd`),
/// its inbox and task directories, and swarm's record that it started it.
pub fn create(root: &Root, name: &str, description: Option<&str>, cwd: &Path) -> Result<()> {
    create_with(root, name, description, cwd, Vec::new())
}

/// [`create`] with `members` on the roster from the start.
pub fn create_with(
    root: &Root,
    name: &str,
    description: Option<&str>,
    cwd: &Path,
    members: Vec<crate::team::Member>,
) -> Result<()> {
    Roster::new(root, name)
        .create_with(description, &cwd.to_string_lossy(), members)
        .with_context(|| format!("creating team {}", crate::names::shown(name)))?;
    Ok(())
}

/// Deletes team `name` (refused while a teammate is active unless
/// `force`, and always for a team swarm did not start).
pub fn delete(root: &Root, name: &str, force: bool) -> Result<()> {
    Roster::new(root, name)
        .delete(force)
        .with_context(|| format!("deleting team {}", crate::names::shown(name)))?;
    Ok(())
}

/// Whether team `name` exists and is not swarm's (see `team::owner`).
pub fn is_foreign(root: &Root, name: &str) -> bool {
    Roster::new(root, name).exists() && !Ownership::of(root, name).is_swarm()
}

/// Every team under the root, sorted by name.
pub fn list(root: &Root) -> Result<Vec<TeamEntry>> {
    let teams = crate::team::list_teams(root)
        .with_context(|| format!("listing teams under {}", root.dir().display()))?;
    Ok(teams
        .into_iter()
        .map(|name| TeamEntry {
            foreign: !Ownership::of(root, &name).is_swarm(),
            name,
        })
        .collect())
}
