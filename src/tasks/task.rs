//! One task as it sits in `tasks/<team>/<id>.json`, and the id rule.
//!
//! The file is `JSON.stringify(task, null, 2)` with no trailing newline and
//! the keys in schema order `id, subject, description, activeForm, owner,
//! status, blocks, blockedBy, metadata`, absent optionals omitted, then any
//! key swarm does not know (kept from the file it read, in their order).
//! Reading accepts any key order, because Claude Code's shallow-merge update
//! appends a new `owner` at the end of the object.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

impl Status {
    /// The string Claude Code writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Completed => "completed",
        }
    }

    fn parse(s: &str) -> Option<Status> {
        match s {
            "pending" => Some(Status::Pending),
            "in_progress" => Some(Status::InProgress),
            "completed" => Some(Status::Completed),
            _ => None,
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: String,
    pub subject: String,
    pub description: String,
    /// `activeForm`: the present-continuous label shown while it runs.
    pub active_form: Option<String>,
    /// The owner's member **name** (not the agent id).
    pub owner: Option<String>,
    pub status: Status,
    /// Ids of the tasks this one blocks.
    pub blocks: Vec<String>,
    /// `blockedBy`: ids of the tasks that block this one.
    pub blocked_by: Vec<String>,
    pub metadata: Option<Map<String, Value>>,
    /// Keys swarm does not know, preserved on rewrite.
    pub extra: Map<String, Value>,
}

/// The keys of the schema, in the order they are written.
const KNOWN_KEYS: [&str; 9] = [
    "id",
    "subject",
    "description",
    "activeForm",
    "owner",
    "status",
    "blocks",
    "blockedBy",
    "metadata",
];

impl Task {
    /// A fresh pending, ownerless task.
    pub fn new(id: impl Into<String>, subject: impl Into<String>) -> Task {
        Task {
            id: id.into(),
            subject: subject.into(),
            description: String::new(),
            active_form: None,
            owner: None,
            status: Status::Pending,
            blocks: Vec::new(),
            blocked_by: Vec::new(),
            metadata: None,
            extra: Map::new(),
        }
    }

    /// The id as a number, for ordering. Ids that passed [`parse_id`] always
    /// have one; anything else sorts last.
    pub fn number(&self) -> u64 {
        parse_id(&self.id).unwrap_or(u64::MAX)
    }

    /// Whether it failed: its runtime leaves a task whose command failed
    /// pending, still owned, with `metadata.failed` (the one rule the
    /// dialog, `status` and `task list` show "failed" by).
    pub fn failed(&self) -> bool {
        self.status == Status::Pending
            && self
                .metadata
                .as_ref()
                .and_then(|m| m.get("failed"))
                .and_then(|f| f.as_bool())
                == Some(true)
    }

    /// The shell command the task carries (`metadata.command`, a string
    /// that is not blank): what a shell teammate runs, and the only tasks
    /// it takes. Its subject and description are words for people and
    /// agents, never run.
    pub fn command(&self) -> Option<&str> {
        self.metadata
            .as_ref()
            .and_then(|m| m.get("command"))
            .and_then(Value::as_str)
            .filter(|c| !c.trim().is_empty())
    }

    /// A truthy `metadata._internal` hides a task from Claude Code's TaskList.
    pub fn is_internal(&self) -> bool {
        match self.metadata.as_ref().and_then(|m| m.get("_internal")) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Number(n)) => n.as_f64() != Some(0.0),
            Some(_) => true,
        }
    }

    /// The file bytes: `JSON.stringify(task, null, 2)`, no trailing newline.
    pub fn to_file_bytes(&self) -> Vec<u8> {
        crate::json_text::to_pretty(self)
    }

    /// Parses file bytes (either key order, lone surrogates tolerated).
    /// The error says what is wrong, for the quarantine log.
    pub fn from_file_bytes(bytes: &[u8]) -> Result<Task, String> {
        let map: Map<String, Value> =
            crate::json_text::parse_lenient(bytes).map_err(|e| e.to_string())?;
        Task::try_from(map)
    }
}

impl Serialize for Task {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("subject", &self.subject)?;
        m.serialize_entry("description", &self.description)?;
        if let Some(a) = &self.active_form {
            m.serialize_entry("activeForm", a)?;
        }
        if let Some(o) = &self.owner {
            m.serialize_entry("owner", o)?;
        }
        m.serialize_entry("status", &self.status)?;
        m.serialize_entry("blocks", &self.blocks)?;
        m.serialize_entry("blockedBy", &self.blocked_by)?;
        if let Some(md) = &self.metadata {
            m.serialize_entry("metadata", md)?;
        }
        for (k, v) in &self.extra {
            if !KNOWN_KEYS.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Task {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Task, D::Error> {
        let map = Map::deserialize(d)?;
        Task::try_from(map).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<Map<String, Value>> for Task {
    type Error = String;

    /// Strict on what decides behaviour (`id`, `status`, the id lists),
    /// lenient on text: a missing `subject` or `description` reads as empty.
    fn try_from(mut map: Map<String, Value>) -> Result<Task, String> {
        let id = match map.remove("id") {
            Some(Value::String(s)) => s,
            // A hand-written file may carry a number; the file stays readable.
            Some(Value::Number(n)) if n.is_u64() => n.to_string(),
            Some(other) => return Err(format!("\"id\" is not a string: {other}")),
            None => return Err("no \"id\"".into()),
        };
        if parse_id(&id).is_none() {
            return Err(format!("\"id\" {id:?} is not a task id"));
        }
        let text = |map: &mut Map<String, Value>, key: &str| -> Result<Option<String>, String> {
            match map.remove(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(other) => Err(format!("{key:?} is not a string: {other}")),
            }
        };
        let subject = text(&mut map, "subject")?.unwrap_or_default();
        let description = text(&mut map, "description")?.unwrap_or_default();
        let active_form = text(&mut map, "activeForm")?;
        let owner = text(&mut map, "owner")?.filter(|o| !o.is_empty());
        let status = match map.remove("status") {
            Some(Value::String(s)) => {
                Status::parse(&s).ok_or_else(|| format!("unknown \"status\" {s:?}"))?
            }
            Some(other) => return Err(format!("\"status\" is not a string: {other}")),
            None => return Err("no \"status\"".into()),
        };
        let ids = |map: &mut Map<String, Value>, key: &str| -> Result<Vec<String>, String> {
            match map.remove(key) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(Value::Array(items)) => items
                    .into_iter()
                    .map(|v| match v {
                        Value::String(s) => Ok(s),
                        Value::Number(n) if n.is_u64() => Ok(n.to_string()),
                        other => Err(format!("{key:?} holds a non-id {other}")),
                    })
                    .collect(),
                Some(other) => Err(format!("{key:?} is not an array: {other}")),
            }
        };
        let blocks = ids(&mut map, "blocks")?;
        let blocked_by = ids(&mut map, "blockedBy")?;
        let metadata = match map.remove("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(other) => return Err(format!("\"metadata\" is not an object: {other}")),
        };
        Ok(Task {
            id,
            subject,
            description,
            active_form,
            owner,
            status,
            blocks,
            blocked_by,
            metadata,
            // Rebuilt to its size: what is left of the file's object keeps
            // the capacity of the whole (about 730 bytes a task, 7 MB of a
            // lead's heap at 10,000 tasks).
            extra: map.into_iter().collect(),
        })
    }
}

/// The largest task id: 2^53 − 1, the largest integer Claude Code (whose ids
/// are JavaScript numbers) can count to and past exactly. A number beyond it
/// in a task file name, a task's `id` or `.highwatermark` did not come from
/// counting: it parses, but trusting it would break every id after it
/// (`u64::MAX + 1` wraps to the invalid id `0`), so it is treated as corrupt.
pub const MAX_ID: u64 = (1 << 53) - 1;

/// A task id is a decimal string matching `^[1-9]\d*$`, at most [`MAX_ID`].
/// Returns its number, or `None` for anything else: such a string must never
/// become a path.
pub fn parse_id(id: &str) -> Option<u64> {
    match digits(id) {
        Some(d) => d.parse().ok().filter(|n| *n <= MAX_ID),
        None => None,
    }
}

/// `s` if it is shaped like a task id (`^[1-9]\d*$`), whatever its size.
fn digits(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'1'..=b'9') if b.iter().all(u8::is_ascii_digit) => Some(s),
        _ => None,
    }
}

/// The id of a directory entry that is a task file (`<n>.json`), or `None`
/// for everything else in the directory: dotfiles (`.lock`, `.highwatermark`),
/// lock directories and their sidecars, temp files, quarantined copies.
pub fn task_file_id(file_name: &str) -> Option<u64> {
    parse_id(file_name.strip_suffix(".json")?)
}

/// Whether a directory entry is named like a task file (`<n>.json`) but its
/// number is past [`MAX_ID`]: not a task anyone counted to, so it is
/// quarantined like an unreadable one instead of being read or counted.
pub fn absurd_task_file(file_name: &str) -> bool {
    file_name
        .strip_suffix(".json")
        .and_then(digits)
        .is_some_and(|d| parse_id(d).is_none())
}

/// The id a file name was *used* for: a task file or a quarantined copy of
/// one (`<n>.json.corrupt-<ms>`). Such ids are never handed out again.
pub fn used_id(file_name: &str) -> Option<u64> {
    if let Some(id) = task_file_id(file_name) {
        return Some(id);
    }
    let (stem, _) = file_name.split_once(".json.corrupt-")?;
    parse_id(stem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const FIXTURE_1: &str = "{\n  \"id\": \"1\",\n  \"subject\": \"Task 1\",\n  \"description\": \"Example task 1, created by the lead.\",\n  \"activeForm\": \"Working on task 1\",\n  \"owner\": \"researcher\",\n  \"status\": \"completed\",\n  \"blocks\": [\n    \"2\"\n  ],\n  \"blockedBy\": []\n}";

    #[test]
    fn writes_schema_order_exactly_like_json_stringify() {
        let t = Task::from_file_bytes(FIXTURE_1.as_bytes()).unwrap();
        assert_eq!(String::from_utf8(t.to_file_bytes()).unwrap(), FIXTURE_1);
    }

    #[test]
    fn reads_an_owner_appended_by_a_shallow_merge_and_puts_it_back_in_place() {
        let merged = r#"{"id":"4","subject":"s","description":"d","status":"in_progress",
            "blocks":[],"blockedBy":[],"owner":"bob"}"#;
        let t = Task::from_file_bytes(merged.as_bytes()).unwrap();
        assert_eq!(t.owner.as_deref(), Some("bob"));
        let text = String::from_utf8(t.to_file_bytes()).unwrap();
        assert!(
            text.find("\"owner\"").unwrap() < text.find("\"status\"").unwrap(),
            "{text}"
        );
    }

    #[test]
    fn unknown_keys_survive_a_rewrite_after_the_schema_keys() {
        let src = r#"{"future":{"x":1},"id":"2","subject":"s","description":"d","status":"pending",
            "blocks":[],"blockedBy":[],"metadata":{"_internal":true},"zzz":[1]}"#;
        let t = Task::from_file_bytes(src.as_bytes()).unwrap();
        assert!(t.is_internal());
        let v: Value = serde_json::from_slice(&t.to_file_bytes()).unwrap();
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "id",
                "subject",
                "description",
                "status",
                "blocks",
                "blockedBy",
                "metadata",
                "future",
                "zzz"
            ]
        );
        assert_eq!(v["future"]["x"], 1);
    }

    #[test]
    fn a_file_without_id_or_status_is_not_a_task() {
        for bad in [
            r#"{"subject":"s","status":"pending"}"#,
            r#"{"id":"1","subject":"s"}"#,
            r#"{"id":"01","status":"pending"}"#,
            r#"{"id":"1","status":"done"}"#,
            r#"{"id":"1","status":"pending","blocks":"2"}"#,
            r#"[]"#,
            r#"{"id":"1","#,
        ] {
            assert!(
                Task::from_file_bytes(bad.as_bytes()).is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn ids_are_positive_decimals_without_leading_zeros() {
        for ok in ["1", "9", "10", "123456"] {
            assert!(parse_id(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "0",
            "01",
            "-1",
            "1a",
            "../1",
            "1.json",
            " 1",
            "99999999999999999999999",
        ] {
            assert_eq!(parse_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn only_task_files_are_listed_but_quarantined_ids_count_as_used() {
        assert_eq!(task_file_id("12.json"), Some(12));
        for skipped in [
            ".lock",
            ".highwatermark",
            "3.json.lock",
            "3.json.lock.flock",
            "3.json.tmp.0a1b2c3d",
            "3.json.corrupt-1796022927589",
            ".3.json",
            "x.json",
        ] {
            assert_eq!(task_file_id(skipped), None, "{skipped}");
        }
        assert_eq!(used_id("7.json.corrupt-1796022927589"), Some(7));
        assert_eq!(used_id("7.json.lock"), None);
    }

    proptest! {
        #[test]
        fn any_task_round_trips_through_its_file(
            id in 1u64..100_000,
            subject in ".*",
            owner in proptest::option::of("[a-z][a-z0-9-]{0,8}"),
            status in prop_oneof![Just(Status::Pending), Just(Status::InProgress), Just(Status::Completed)],
            blocks in proptest::collection::vec(1u64..50, 0..4),
            extra_val in ".*",
        ) {
            let mut t = Task::new(id.to_string(), subject);
            t.owner = owner;
            t.status = status;
            t.blocks = blocks.iter().map(u64::to_string).collect();
            t.extra.insert("x-extra".into(), Value::String(extra_val));
            let back = Task::from_file_bytes(&t.to_file_bytes()).unwrap();
            prop_assert_eq!(back, t);
        }
    }
}
