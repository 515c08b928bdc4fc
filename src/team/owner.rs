//! Whose team this is. swarm's root is Claude Code's own (`~/.claude` by
//! default), so the teams under it may be Claude Code's: a user of both
//! tools has both kinds side by side, in the same formats. swarm may read
//! any of them and send to any of them, but it changes (roster, tasks,
//! consumed mail), stops or deletes only a team it can prove it started.
//!
//! The proof is the owner record, `<root>/swarm/<team>/owner.json`
//! ([`crate::paths::Root::owner_record`]), written when swarm creates the
//! roster ([`crate::team::Roster::create`]) and naming the roster's
//! `leadSessionId`. A team is swarm's ([`Ownership::Swarm`]) when the
//! record is there and the roster names the same lead session (or cannot
//! be read at all, so that swarm may repair its own roster); any other
//! team is [`Ownership::Foreign`]: no record (Claude Code made it), or a
//! roster that names another lead session (the name was taken again by
//! another tool after swarm's team of that name went).

use crate::atomic_file;
use crate::json_text;
use crate::paths::Root;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// `owner.json`: swarm created this team, with this lead session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerRecord {
    /// Always `swarm`.
    pub created_by: String,
    /// The roster's `leadSessionId` when swarm created it.
    pub lead_session_id: String,
    /// When, in epoch milliseconds.
    pub created_at: u64,
}

impl OwnerRecord {
    pub fn new(lead_session_id: &str, created_at: u64) -> Self {
        OwnerRecord {
            created_by: "swarm".to_string(),
            lead_session_id: lead_session_id.to_string(),
            created_at,
        }
    }

    /// The team's record, if there is one that reads. An unreadable record
    /// proves nothing: the team is then taken as not swarm's (logged), the
    /// safe side, never the other way round.
    pub fn load(root: &Root, team: &str) -> Option<OwnerRecord> {
        let path = root.owner_record(team).ok()?;
        let bytes = match atomic_file::read_optional(&path) {
            Ok(b) => b?,
            Err(e) => {
                tracing::warn!(path = %path.display(), %e, "owner record unreadable: the team is taken as not swarm's");
                return None;
            }
        };
        match json_text::parse_lenient::<OwnerRecord>(&bytes) {
            Ok(r) if r.created_by == "swarm" => Some(r),
            Ok(_) => None,
            Err(e) => {
                tracing::warn!(path = %path.display(), %e, "owner record does not parse: the team is taken as not swarm's");
                None
            }
        }
    }

    /// Writes the record (durably, 0600), creating the team's state
    /// directory if needed.
    pub fn save(&self, root: &Root, team: &str) -> std::io::Result<()> {
        let path = root.owner_record(team).map_err(std::io::Error::other)?;
        if let Some(dir) = path.parent() {
            atomic_file::ensure_dir(dir)?;
        }
        atomic_file::write_atomic(&path, &json_text::to_pretty(self))
    }
}

/// Whose team it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ownership {
    /// swarm started it: swarm may change, stop and delete it.
    Swarm,
    /// Not swarm's: read it and send to it, nothing else.
    Foreign(Why),
}

/// Why a team is not swarm's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// No owner record: swarm never created it (Claude Code's own lead
    /// did, or another tool).
    NoRecord,
    /// The roster names another lead session than the one swarm recorded:
    /// the name was taken again by another tool.
    OtherLead,
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Why::NoRecord => "swarm did not start it; Claude Code's own teams share this root",
            Why::OtherLead => "its roster names another lead session than the one swarm started",
        })
    }
}

impl Ownership {
    pub fn is_swarm(&self) -> bool {
        matches!(self, Ownership::Swarm)
    }

    /// The one rule: `record` is the team's owner record, `roster` the
    /// roster's `leadSessionId` as read (`None`: the roster does not parse,
    /// `Some(None)`: it names no lead session).
    pub fn judge(record: Option<&OwnerRecord>, roster: Option<Option<&str>>) -> Ownership {
        match (record, roster) {
            (None, _) => Ownership::Foreign(Why::NoRecord),
            (Some(_), None) => Ownership::Swarm,
            (Some(r), Some(Some(s))) if s == r.lead_session_id => Ownership::Swarm,
            (Some(_), Some(_)) => Ownership::Foreign(Why::OtherLead),
        }
    }

    /// The ownership of `team` under `root`, from its owner record and its
    /// roster as it reads now (never repaired here).
    pub fn of(root: &Root, team: &str) -> Ownership {
        let record = OwnerRecord::load(root, team);
        if record.is_none() {
            return Ownership::Foreign(Why::NoRecord);
        }
        let roster = root
            .config(team)
            .ok()
            .and_then(|p| atomic_file::read_optional(&p).ok().flatten())
            .and_then(|b| json_text::parse_lenient::<Value>(&b).ok());
        let session = roster.as_ref().map(|v| {
            v.get("leadSessionId")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        Ownership::judge(record.as_ref(), session.as_ref().map(|s| s.as_deref()))
    }

    /// `Ok` for swarm's team, else the refusal of `action` on it.
    pub fn require(&self, team: &str, action: &str) -> Result<(), ForeignTeam> {
        match self {
            Ownership::Swarm => Ok(()),
            Ownership::Foreign(why) => Err(ForeignTeam {
                team: team.to_string(),
                action: action.to_string(),
                why: *why,
            }),
        }
    }
}

/// The refusal of an action on a team swarm did not start: one line, what
/// was refused, why, and what swarm can still do with it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "team {} is not swarm's ({why}): swarm will not {action}; it can read the team and send to it",
    crate::names::shown(team)
)]
pub struct ForeignTeam {
    pub team: String,
    /// What was refused, as a verb phrase ("delete it", "change its roster").
    pub action: String,
    pub why: Why,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_record_naming_the_rosters_lead_session_makes_a_team_swarms() {
        let r = OwnerRecord::new("abc", 1);
        assert_eq!(
            Ownership::judge(None, Some(Some("abc"))),
            Ownership::Foreign(Why::NoRecord)
        );
        assert_eq!(
            Ownership::judge(None, None),
            Ownership::Foreign(Why::NoRecord)
        );
        assert_eq!(
            Ownership::judge(Some(&r), Some(Some("abc"))),
            Ownership::Swarm
        );
        assert_eq!(
            Ownership::judge(Some(&r), Some(Some("xyz"))),
            Ownership::Foreign(Why::OtherLead)
        );
        assert_eq!(
            Ownership::judge(Some(&r), Some(None)),
            Ownership::Foreign(Why::OtherLead)
        );
        // A roster that does not parse is repaired by its owner.
        assert_eq!(Ownership::judge(Some(&r), None), Ownership::Swarm);
    }

    #[test]
    fn a_record_that_does_not_read_proves_nothing() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        OwnerRecord::new("abc", 1).save(&root, "t").unwrap();
        assert_eq!(
            OwnerRecord::load(&root, "t").unwrap().lead_session_id,
            "abc"
        );
        std::fs::write(root.owner_record("t").unwrap(), b"{garbage").unwrap();
        assert_eq!(OwnerRecord::load(&root, "t"), None);
        std::fs::write(
            root.owner_record("t").unwrap(),
            br#"{"createdBy":"other","leadSessionId":"abc","createdAt":1}"#,
        )
        .unwrap();
        assert_eq!(OwnerRecord::load(&root, "t"), None);
    }

    #[test]
    fn the_refusal_is_one_line_naming_the_team_and_the_action() {
        let e = Ownership::Foreign(Why::NoRecord)
            .require("session-6c171e4f", "delete it")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "team \"session-6c171e4f\" is not swarm's (swarm did not start it; Claude Code's own \
             teams share this root): swarm will not delete it; it can read the team and send to it"
        );
        assert!(!e.contains('\n'));
    }
}
