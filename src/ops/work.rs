//! A teammate's worktree: what it changed since its branch left the lead's
//! ([`crate::worktree::diff`]), and merging its branch into the lead's
//! ([`crate::worktree::merge`]; a conflict is aborted and named).

use super::TeamOps;
use crate::worktree::MergeMode;
use anyhow::Result;
use serde::Serialize;

/// What a merge did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Merged {
    /// The one line git's work comes to.
    pub line: String,
    /// Files still uncommitted in the worktree, left out of the merge.
    pub uncommitted: usize,
}

impl TeamOps {
    /// `name`'s changes as a patch (or with `stat`, a summary).
    pub fn diff(&self, name: &str, stat: bool) -> Result<String> {
        let wt = crate::worktree::required(self.team(), name)?;
        crate::worktree::diff(&wt, stat)
    }

    /// Merges (or rebases) `name`'s branch into the lead's branch.
    pub fn merge(&self, name: &str, mode: MergeMode) -> Result<Merged> {
        self.require_own("merge its worktrees")?;
        let wt = crate::worktree::required(self.team(), name)?;
        let line = crate::worktree::merge(&wt, name, mode)?;
        let uncommitted = crate::worktree::progress(&wt)?.changed;
        Ok(Merged { line, uncommitted })
    }
}
