//! The unit of work in flight, recorded before it reaches the agent, so a
//! runtime that restarts (or retries after an error) never runs it again
//! silently.
//!
//! One small file per member, `<state>/runtime/<name>.inflight.json`
//! (`super::runtime_file`), replaced atomically at each stage and removed
//! once the unit is settled. Each stage is durable when written, but one:
//! `running` is renamed into place before the agent starts (whole for any
//! runtime killed from then on) and synced once the agent runs, so that no
//! fsync stands between a message and the start of its work
//! ([`Journal::save_unsynced`]).
//!
//! - `picked`: a task claimed and not yet handed to the agent. A runtime
//!   that finds it runs the task: it never ran.
//! - `running`: handed to the agent. A runtime that finds this on starting
//!   knows its predecessor died mid-unit: it tells the lead (and any other
//!   sender) "NAME: interrupted while running …; not re-run", consumes the
//!   messages, leaves a task pending and assigned to it (as a failed task
//!   is), and runs nothing again.
//! - `ran`: the agent finished; `posts` are the results to deliver in order
//!   (replies, the task update, the note to the lead) and `delivered` how
//!   many are out. A runtime that finds it (after an error, or restarted)
//!   delivers the rest, then consumes the messages.
//!
//! Messages are recorded by identity (`msg_id`, `from`, `timestamp` and the
//! SHA-256 of the text), not by content: their texts stay in the inbox until
//! they are consumed, and the record stays small.

use crate::mailbox::Entry;
use crate::tasks::Status;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Digest;
use std::path::{Path, PathBuf};

/// The record of the unit in flight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inflight {
    pub unit: Unit,
    pub stage: Stage,
    /// The runtime process that picked the unit.
    pub pid: u32,
    /// When it was picked (epoch ms).
    pub picked_at: u64,
}

/// What was picked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Unit {
    /// A batch of plain messages, run as one prompt.
    Messages {
        messages: Vec<MessageRef>,
    },
    Task {
        id: String,
        subject: String,
    },
}

/// One message of a unit, by identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageRef {
    pub msg_id: Option<String>,
    pub from: String,
    pub timestamp: String,
    pub text_sha256: String,
    /// Its summary (else its first line), cut, for reports.
    pub summary: String,
}

/// How far the unit got.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "camelCase")]
pub enum Stage {
    /// Claimed (a task), not handed to the agent yet; in plan mode, the
    /// plan approval request sent for it, and whether it was approved.
    #[serde(rename_all = "camelCase")]
    Picked {
        plan_approved: bool,
        #[serde(default)]
        plan_request: Option<String>,
    },
    /// Handed to the agent.
    #[serde(rename_all = "camelCase")]
    Running { started_at: u64 },
    /// Finished; results being delivered.
    #[serde(rename_all = "camelCase")]
    Ran {
        posts: Vec<Post>,
        delivered: usize,
        outcome: Outcome,
        /// Set when the agent died: the runtime stops once this is settled.
        crash: Option<String>,
    },
}

/// One result to deliver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "post", rename_all = "camelCase")]
pub enum Post {
    /// A plain message from this member. Without `force`, a recipient no
    /// longer on the roster is skipped (nobody reads that inbox).
    Send {
        to: String,
        text: String,
        summary: String,
        force: bool,
    },
    /// A task update by this member: status, metadata merged, and the
    /// owner removed when `unassign`.
    #[serde(rename_all = "camelCase")]
    TaskUpdate {
        id: String,
        status: Status,
        unassign: bool,
        metadata: Map<String, Value>,
    },
}

/// The last unit, for the idle notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    pub task: Option<String>,
    pub failure: Option<String>,
    pub result: String,
}

impl MessageRef {
    pub fn of(entry: &Entry, summary: String) -> MessageRef {
        MessageRef {
            msg_id: entry.msg_id.clone(),
            from: entry.from.clone(),
            timestamp: entry.timestamp.clone(),
            text_sha256: sha256_hex(&entry.text),
            summary,
        }
    }

    /// Whether `entry` is this message.
    pub fn is(&self, entry: &Entry) -> bool {
        entry.msg_id == self.msg_id
            && entry.from == self.from
            && entry.timestamp == self.timestamp
            && sha256_hex(&entry.text) == self.text_sha256
    }
}

fn sha256_hex(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Unit {
    /// "message from bob: SUMMARY", "3 messages from bob, team-lead:
    /// SUMMARY", "task 4 (SUBJECT)".
    pub fn describe(&self) -> String {
        match self {
            Unit::Task { id, subject } => format!("task {id} ({subject})"),
            Unit::Messages { messages } => {
                let mut from: Vec<&str> = messages.iter().map(|m| m.from.as_str()).collect();
                from.sort_unstable();
                from.dedup();
                let first = messages.first().map(|m| m.summary.as_str()).unwrap_or("");
                match messages.len() {
                    1 => format!("message from {}: {first}", from.join(", ")),
                    n => format!("{n} messages from {}: {first}", from.join(", ")),
                }
            }
        }
    }
}

/// What [`Journal::load`] found.
#[derive(Debug)]
pub enum Found {
    Nothing,
    Record(Inflight),
    /// Unreadable: copied aside to this path and removed.
    Corrupt(PathBuf),
}

/// Reads and writes one member's record.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
}

impl Journal {
    pub fn new(path: PathBuf) -> Journal {
        Journal { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn load(&self) -> Result<Found> {
        let Some(bytes) = crate::atomic_file::read_optional(&self.path)
            .with_context(|| format!("reading {}", self.path.display()))?
        else {
            return Ok(Found::Nothing);
        };
        if let Ok(rec) = serde_json::from_slice(&bytes) {
            return Ok(Found::Record(rec));
        }
        let copy = crate::atomic_file::quarantine(&self.path)
            .with_context(|| format!("copying aside the unreadable {}", self.path.display()))?;
        self.clear()?;
        Ok(Found::Corrupt(copy))
    }

    /// Replaces the record (atomically and durably, 0600 in a 0700
    /// directory).
    pub fn save(&self, rec: &Inflight) -> Result<()> {
        self.write(rec, crate::atomic_file::write_atomic)
    }

    /// Replaces the record atomically but not yet durably: renamed into
    /// place, so a runtime killed from here on (`kill -9`: the kernel keeps
    /// what was written) finds it whole; [`Journal::sync`] makes it survive
    /// a crash of the machine too. For the record that must be in place
    /// before the agent starts, and need only be durable once it runs.
    pub fn save_unsynced(&self, rec: &Inflight) -> Result<()> {
        self.write(rec, crate::atomic_file::write_cache)
    }

    /// Makes the record on disk durable (its data, then its directory's
    /// entry for it): what [`Journal::save`] does after its rename.
    pub fn sync(&self) -> Result<()> {
        let f = crate::atomic_file::open_nofollow(&self.path)
            .with_context(|| format!("opening {}", self.path.display()))?;
        f.sync_data()
            .with_context(|| format!("syncing {}", self.path.display()))?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        crate::atomic_file::sync_dir(dir).with_context(|| format!("syncing {}", dir.display()))
    }

    /// Writes the record with `write`. The directory is made only when the
    /// write finds it missing (the runtime made it at its start, for its
    /// doorbell): a record needs no walk of its directory's components
    /// beyond the one the write itself makes (`atomic_file`'s safe-path
    /// check, kept whole).
    fn write(&self, rec: &Inflight, write: fn(&Path, &[u8]) -> std::io::Result<()>) -> Result<()> {
        let bytes = serde_json::to_vec(rec).expect("a record serialises");
        let written = match write(&self.path, &bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = self.path.parent() {
                    crate::atomic_file::ensure_dir(dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                }
                write(&self.path, &bytes)
            }
            r => r,
        };
        written.with_context(|| format!("recording the unit in flight in {}", self.path.display()))
    }

    /// Removes the record (none is fine).
    pub fn clear(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("removing {}", self.path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> Inflight {
        let e = Entry::new("bob", "run it".into(), Some("the one".into()), None);
        Inflight {
            unit: Unit::Messages {
                messages: vec![MessageRef::of(&e, "the one".into())],
            },
            stage: Stage::Ran {
                posts: vec![
                    Post::Send {
                        to: "bob".into(),
                        text: "done".into(),
                        summary: "reply: run it".into(),
                        force: false,
                    },
                    Post::TaskUpdate {
                        id: "3".into(),
                        status: Status::Pending,
                        unassign: true,
                        metadata: json!({"lastFailure": "x"}).as_object().unwrap().clone(),
                    },
                ],
                delivered: 1,
                outcome: Outcome {
                    task: None,
                    failure: None,
                    result: "done".into(),
                },
                crash: None,
            },
            pid: 42,
            picked_at: 7,
        }
    }

    #[test]
    fn a_record_round_trips_and_is_replaced_then_removed() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("runtime/alice.inflight.json"));
        assert!(matches!(j.load().unwrap(), Found::Nothing));
        let rec = record();
        j.save(&rec).unwrap();
        match j.load().unwrap() {
            Found::Record(r) => assert_eq!(r, rec),
            other => panic!("{other:?}"),
        }
        let v: Value = serde_json::from_slice(&std::fs::read(j.path()).unwrap()).unwrap();
        assert_eq!(v["stage"]["stage"], "ran");
        assert_eq!(v["unit"]["kind"], "messages");
        assert_eq!(v["stage"]["posts"][1]["post"], "taskUpdate");
        j.clear().unwrap();
        j.clear().unwrap();
        assert!(matches!(j.load().unwrap(), Found::Nothing));
    }

    /// Issue 25, item 2: the record a unit needs before its agent starts
    /// is renamed into place at once (whole for a runtime killed from then
    /// on) and synced after; its directory is made when it is missing.
    #[test]
    fn a_record_saved_unsynced_is_whole_at_once_then_synced() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("runtime/alice.inflight.json"));
        let rec = record();
        j.save_unsynced(&rec).unwrap();
        match j.load().unwrap() {
            Found::Record(r) => assert_eq!(r, rec),
            other => panic!("{other:?}"),
        }
        j.sync().unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path().join("runtime"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["alice.inflight.json"], "no temp file left");
        j.clear().unwrap();
        assert!(j.sync().is_err(), "nothing to sync once cleared");
    }

    #[test]
    fn an_unreadable_record_is_copied_aside_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path().join("alice.inflight.json"));
        std::fs::write(j.path(), b"{\"unit\": tor").unwrap();
        let Found::Corrupt(copy) = j.load().unwrap() else {
            panic!("a torn record must be reported")
        };
        assert_eq!(std::fs::read(copy).unwrap(), b"{\"unit\": tor");
        assert!(!j.path().exists());
    }

    #[test]
    fn a_message_is_known_by_its_identity_and_text() {
        let e = Entry::new("bob", "run it".into(), None, None);
        let r = MessageRef::of(&e, "run it".into());
        assert!(r.is(&e));
        let mut other = e.clone();
        other.text.push('!');
        assert!(!r.is(&other), "same envelope, other text");
        let mut other = e.clone();
        other.msg_id = None;
        assert!(!r.is(&other));
    }

    #[test]
    fn units_describe_themselves_for_reports() {
        let one = Entry::new("bob", "x".into(), None, None);
        let two = Entry::new("team-lead", "y".into(), None, None);
        let unit = |es: &[&Entry]| Unit::Messages {
            messages: es
                .iter()
                .map(|e| MessageRef::of(e, e.text.clone()))
                .collect(),
        };
        assert_eq!(unit(&[&one]).describe(), "message from bob: x");
        assert_eq!(
            unit(&[&two, &one, &one]).describe(),
            "3 messages from bob, team-lead: y"
        );
        let task = Unit::Task {
            id: "4".into(),
            subject: "build".into(),
        };
        assert_eq!(task.describe(), "task 4 (build)");
    }
}
