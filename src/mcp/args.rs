//! The arguments of each tool, by the names DESIGN §12 gives them (a
//! contract: clients outside the project call them). Each type is both what
//! a call's `arguments` deserialize into and, through `schemars`, the input
//! schema `tools/list` shows; a field's doc comment is its description.
//!
//! An argument the tool does not take is refused by name (a misspelt
//! optional argument would otherwise be its default, silently). Two
//! leniencies, for what models write: a task id may come as a number
//! (`7`) as well as a string (`"7"`), and an optional argument may come as
//! `null`. The schemas still say plainly `string`: a type list such as
//! `["string", "null"]` is JSON Schema, but not every client's schema reader
//! takes it ([`plain`]).

use rmcp::schemars::{self, JsonSchema, Schema};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `spawn_teammate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct SpawnArgs {
    /// The new teammate's name: lowercase letters, digits and '-'.
    pub name: String,
    /// shell (the default), claude, codex, gemini, aider, claude-print, command (runs
    /// `command` per unit of work) or process (`command` is the teammate's program; the
    /// default when `command` is given).
    pub agent: Option<String>,
    /// Its first instructions (a shell teammate runs them as a command; other agents take
    /// them as their role).
    pub prompt: Option<String>,
    /// The program and its arguments, one string each (for agent command or process).
    pub command: Option<Vec<String>>,
    /// The model its agent runs with.
    pub model: Option<String>,
    /// Permission mode at launch: default, acceptEdits, plan, bypassPermissions, dontAsk or
    /// auto.
    pub mode: Option<String>,
    /// Work in a git worktree of its own (branch swarm/TEAM/NAME).
    pub worktree: Option<bool>,
}

/// `send_message`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct SendArgs {
    /// A member's name, or "*" for every member but you.
    pub to: String,
    /// The message (at most 64 KB: put more in a file and send its path).
    pub text: String,
    /// A few words shown in place of the text in listings.
    pub summary: Option<String>,
}

/// `read_inbox`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct ReadInboxArgs {
    /// Only the messages not yet read (default true); false adds those read before.
    pub unread_only: Option<bool>,
    /// Mark the unread messages returned as read (default false).
    pub mark_read: Option<bool>,
}

/// `wait_for_messages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct WaitArgs {
    /// Seconds to wait for a message (default 30, at most 50).
    pub timeout_s: Option<f64>,
}

/// `task_create`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct TaskCreateArgs {
    /// One line saying what is to be done.
    pub subject: String,
    /// Everything the one who takes it needs to know.
    pub description: Option<String>,
    /// A shell command that does the task (a shell teammate runs it with sh -c).
    pub command: Option<String>,
    /// Ids of the tasks that must be completed first.
    #[serde(default, deserialize_with = "ids")]
    #[schemars(with = "Option<Vec<String>>")]
    pub blocked_by: Option<Vec<String>>,
    /// The member to assign it to (they are told).
    pub owner: Option<String>,
}

/// `task_list`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct TaskListArgs {
    /// Only tasks in this status: pending, in_progress or completed.
    pub status: Option<String>,
    /// Only tasks owned by this member.
    pub owner: Option<String>,
}

/// `task_get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct TaskIdArgs {
    /// The task's id.
    #[serde(deserialize_with = "id")]
    #[schemars(with = "String")]
    pub id: String,
}

/// `task_update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct TaskUpdateArgs {
    /// The task's id.
    #[serde(deserialize_with = "id")]
    #[schemars(with = "String")]
    pub id: String,
    /// pending, in_progress or completed.
    pub status: Option<String>,
    /// The member to assign it to (they are told).
    pub owner: Option<String>,
    /// A new subject.
    pub subject: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// Ids of more tasks that must be completed first.
    #[serde(default, deserialize_with = "ids")]
    #[schemars(with = "Option<Vec<String>>")]
    pub add_blocked_by: Option<Vec<String>>,
}

/// `task_claim`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct TaskClaimArgs {
    /// The task to claim; without it, the lowest-id task that is pending, unowned and
    /// unblocked.
    #[serde(default, deserialize_with = "some_id")]
    #[schemars(with = "Option<String>")]
    pub id: Option<String>,
}

/// `shutdown_teammate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct ShutdownArgs {
    /// The teammate.
    pub name: String,
    /// Why, for the teammate.
    pub reason: Option<String>,
}

/// `kill_teammate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct NameArgs {
    /// The teammate.
    pub name: String,
}

/// `teammate_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct OutputArgs {
    /// The teammate.
    pub name: String,
    /// How many of the last lines (default 100, at most 1000).
    pub lines: Option<u32>,
}

/// `answer_request`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(transform = plain)]
pub struct AnswerArgs {
    /// The request's id (team_status lists the requests waiting).
    pub request_id: String,
    /// true approves the plan or allows the tool use; false rejects it.
    pub approve: bool,
    /// What the asker should know (why it was rejected, what to change).
    pub feedback: Option<String>,
}

/// A task id written as a string or a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum IdForm {
    Text(String),
    Number(u64),
}

impl IdForm {
    fn text(self) -> String {
        match self {
            IdForm::Text(s) => s,
            IdForm::Number(n) => n.to_string(),
        }
    }
}

fn id<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    IdForm::deserialize(d)
        .map(IdForm::text)
        .map_err(|_| serde::de::Error::custom("a task id is a string such as \"3\""))
}

fn some_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Option::<IdForm>::deserialize(d)
        .map(|v| v.map(IdForm::text))
        .map_err(|_| serde::de::Error::custom("a task id is a string such as \"3\""))
}

fn ids<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    Option::<Vec<IdForm>>::deserialize(d)
        .map(|v| v.map(|v| v.into_iter().map(IdForm::text).collect()))
        .map_err(|_| serde::de::Error::custom("task ids are a list of strings such as [\"3\"]"))
}

/// An input schema as every client reads it: an optional argument's type
/// list (`["string", "null"]`, from an `Option`) becomes its one type, as
/// being left out of `required` already makes it optional.
pub fn plain(schema: &mut Schema) {
    let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for prop in props.values_mut() {
        if let Some(Value::Array(types)) = prop.get_mut("type") {
            types.retain(|t| t != "null");
            if let [one] = types.as_slice() {
                let one = one.clone();
                prop["type"] = one;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_arguments_have_one_type_and_are_not_required() {
        let schema = schemars::schema_for!(TaskCreateArgs);
        let v = serde_json::to_value(&schema).unwrap();
        assert_eq!(v["properties"]["description"]["type"], "string");
        assert_eq!(v["properties"]["blocked_by"]["type"], "array");
        assert_eq!(v["required"], serde_json::json!(["subject"]));
    }

    #[test]
    fn a_task_id_may_be_a_number() {
        let a: TaskUpdateArgs =
            serde_json::from_value(serde_json::json!({"id": 7, "add_blocked_by": [1, "2"]}))
                .unwrap();
        assert_eq!(a.id, "7");
        assert_eq!(a.add_blocked_by, Some(vec!["1".into(), "2".into()]));
        let c: TaskClaimArgs = serde_json::from_value(serde_json::json!({"id": null})).unwrap();
        assert_eq!(c.id, None);
        let e = serde_json::from_value::<TaskIdArgs>(serde_json::json!({"id": [1]})).unwrap_err();
        assert!(e.to_string().contains("a task id is a string"), "{e}");
    }
}
