//! swarm's own per-member roster fields (`swarm…` keys, which Claude Code
//! keeps and ignores), and their typed view: one reader per field on
//! [`Member`], each turning a bad value into the same error ([`FieldError`]:
//! the member, the field, what it should be, what it is), so no reader
//! empties, skips or half-reads a field its own way. Fields others wrote
//! that swarm does not know stay in `Member::extra`, untouched.

use super::roster::Member;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// swarm's own per-member fields in `config.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwarmField {
    /// Agent name (string): `agents::Agent::of`.
    Agent,
    /// Command argv for `command` and `process` agents or an override
    /// (array of strings).
    Command,
    /// Variables the spec names for the pane (object of strings).
    Env,
    /// The member's pane process exited: [`ExitRecord`].
    Exit,
    /// tmux socket the member's pane lives on (string), when not the default.
    TmuxSocket,
    /// The pane is hidden (any value but `null`: Claude Code's own readers
    /// never see it, and swarm has written `true`).
    Hidden,
    /// Pid of the pane's first process (number), for backends whose panes
    /// another process cannot list (in-process, Windows Terminal).
    Pid,
    /// Start time of that process (`/proc/<pid>/stat` field 22, string), so
    /// a recycled pid is never taken for it.
    PidStart,
    /// The nonce the member's pane was marked with (string), recorded
    /// before the pane opens: only a pane carrying it is this member's.
    Nonce,
    /// Names of variables whose values the member's pane takes from the
    /// environment of whoever opens it (`swarm spawn --env K`, the spec's
    /// `pass_env`): an array of strings. Values are never stored.
    PassEnv,
    /// Where the member's pane went when not beside the lead (string,
    /// `window 2`: the lead's window was full).
    Apart,
    /// The member is the team's AI lead: [`AiLead`] (`{"mode":
    /// "team"|"coordinator", "approves": bool}`).
    Lead,
    /// The machine its pane runs on (string: one of the team's hosts;
    /// absent: this one).
    Host,
}

impl SwarmField {
    pub fn as_str(self) -> &'static str {
        match self {
            SwarmField::Agent => "swarmAgent",
            SwarmField::Command => "swarmCommand",
            SwarmField::Env => "swarmEnv",
            SwarmField::Exit => "swarmExit",
            SwarmField::TmuxSocket => "swarmTmuxSocket",
            SwarmField::Hidden => "swarmHidden",
            SwarmField::Apart => "swarmApart",
            SwarmField::Pid => "swarmPid",
            SwarmField::PidStart => "swarmPidStart",
            SwarmField::Nonce => "swarmNonce",
            SwarmField::PassEnv => "swarmPassEnv",
            SwarmField::Lead => "swarmLead",
            SwarmField::Host => "swarmHost",
        }
    }
}

/// A `swarm…` field holding what it cannot: the one error every reader
/// of that field gives.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{member}'s {} is not {expected}: {value}", field.as_str())]
pub struct FieldError {
    pub member: String,
    pub field: SwarmField,
    pub expected: String,
    /// The value as found (JSON, escaped for a terminal, cut if long).
    pub value: String,
}

impl FieldError {
    pub fn new(member: &Member, field: SwarmField, expected: &str, value: &Value) -> FieldError {
        let mut shown = value.to_string();
        if shown.chars().count() > 120 {
            shown = shown.chars().take(117).collect::<String>() + "…";
        }
        FieldError {
            member: crate::text::escape_line(&member.name).into_owned(),
            field,
            expected: expected.to_string(),
            value: crate::text::escape_line(&shown).into_owned(),
        }
    }
}

/// `swarmLead`: the member is the team's AI lead (DESIGN §12), and how it
/// leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AiLead {
    pub mode: LeadMode,
    /// Teammates' plan and permission requests go to it (through
    /// `answer_request`), not to the human.
    #[serde(default)]
    pub approves: bool,
}

/// What an AI lead may do itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LeadMode {
    /// It plans, delegates and works too.
    #[default]
    Team,
    /// It only orchestrates: its own tools are the team tools.
    Coordinator,
}

impl LeadMode {
    pub fn parse(s: &str) -> Result<LeadMode, String> {
        match s {
            "team" => Ok(LeadMode::Team),
            "coordinator" => Ok(LeadMode::Coordinator),
            other => Err(format!(
                "unknown lead mode {:?}: pick team (it works too) or coordinator (it only \
                 delegates)",
                crate::text::escape_line(other)
            )),
        }
    }
}

/// `swarmExit`: how a member's pane ended, as the lead recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitRecord {
    /// The exit code; `None` when a signal ended it or it is not known.
    pub code: Option<i32>,
    /// When it was recorded, in epoch milliseconds.
    pub at: u64,
    /// The pane id that no longer carried the member's mark (a restarted
    /// tmux server reused it): the member was lost, not seen to exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// The last lines its pane printed, escapes stripped (why it ended,
    /// when it said): shown beside the death in the dialog and `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub said: Option<String>,
}

impl Member {
    /// A swarm-only field as stored (`null` is absent).
    pub fn swarm_field(&self, key: SwarmField) -> Option<&Value> {
        self.extra.get(key.as_str()).filter(|v| !v.is_null())
    }

    /// Sets (or with `Value::Null`, removes) a swarm-only field.
    pub fn set_swarm_field(&mut self, key: SwarmField, value: Value) {
        if value.is_null() {
            self.extra.remove(key.as_str());
        } else {
            self.extra.insert(key.as_str().to_string(), value);
        }
    }

    /// Field `key` read as a `T` (absent or `null`: `None`).
    fn typed<T: DeserializeOwned>(
        &self,
        key: SwarmField,
        expected: &str,
    ) -> Result<Option<T>, FieldError> {
        match self.swarm_field(key) {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone())
                .map(Some)
                .map_err(|_| FieldError::new(self, key, expected, v)),
        }
    }

    /// The agent name as stored (`swarmAgent`), unchecked: for display.
    pub fn agent(&self) -> Option<&str> {
        self.swarm_field(SwarmField::Agent).and_then(Value::as_str)
    }

    /// The agent to show for this member: `swarmAgent`; else `shell` for
    /// a teammate swarm started (it has swarm's mark); else `claude` for a
    /// teammate Claude Code started (it writes `agentType` / `backendType`
    /// and no `swarm*` field); else unknown. One rule for the dialog,
    /// `swarm status` and MCP.
    pub fn agent_label(&self) -> Option<&str> {
        if let Some(a) = self.agent() {
            return Some(a);
        }
        if self.is_lead() {
            return None;
        }
        if self.nonce().ok().flatten().is_some() {
            return Some("shell");
        }
        (self.agent_type.is_some() || self.backend_type.is_some()).then_some("claude")
    }

    /// `swarmCommand`: the member's argv, if it has one.
    pub fn command(&self) -> Result<Option<Vec<String>>, FieldError> {
        self.typed(SwarmField::Command, "an array of strings")
    }

    /// `swarmEnv` as pairs, in the object's order (names not yet checked
    /// against swarm's own: see `pane_env`).
    pub fn env(&self) -> Result<Vec<(String, String)>, FieldError> {
        let env: Option<serde_json::Map<String, Value>> =
            self.typed(SwarmField::Env, "an object of strings")?;
        let mut out = Vec::new();
        for (k, v) in env.unwrap_or_default() {
            let Some(s) = v.as_str() else {
                let whole = self.swarm_field(SwarmField::Env).unwrap_or(&Value::Null);
                return Err(FieldError::new(
                    self,
                    SwarmField::Env,
                    "an object of strings",
                    whole,
                ));
            };
            out.push((k, s.to_string()));
        }
        Ok(out)
    }

    /// `swarmPassEnv`: names of variables passed from the opener.
    pub fn pass_env(&self) -> Result<Vec<String>, FieldError> {
        Ok(self
            .typed(SwarmField::PassEnv, "an array of names")?
            .unwrap_or_default())
    }

    /// `swarmExit`: how its pane ended, if the lead recorded an end.
    pub fn exit(&self) -> Result<Option<ExitRecord>, FieldError> {
        self.typed(SwarmField::Exit, "an exit record {\"code\", \"at\"}")
    }

    /// Records (or with `None`, forgets) how its pane ended.
    pub fn set_exit(&mut self, exit: Option<&ExitRecord>) {
        let v = exit.map_or(Value::Null, |e| {
            serde_json::to_value(e).expect("an ExitRecord is plain JSON")
        });
        self.set_swarm_field(SwarmField::Exit, v);
    }

    /// `swarmNonce`: the mark its pane carries, if one was recorded.
    pub fn nonce(&self) -> Result<Option<String>, FieldError> {
        self.typed(SwarmField::Nonce, "a string")
    }

    /// `swarmHost`: the machine its pane runs on (`None`: this one).
    pub fn host(&self) -> Option<&str> {
        self.swarm_field(SwarmField::Host)
            .and_then(serde_json::Value::as_str)
            .filter(|h| *h != swarm_backends::host::LOCAL)
    }

    /// `swarmApart`: where the pane went when not beside the lead.
    pub fn apart(&self) -> Option<&str> {
        self.swarm_field(SwarmField::Apart)
            .and_then(serde_json::Value::as_str)
    }

    /// `swarmTmuxSocket`: the tmux server its pane was opened on, when that
    /// is not tmux's default server.
    pub fn tmux_socket(&self) -> Result<Option<std::path::PathBuf>, FieldError> {
        self.typed(SwarmField::TmuxSocket, "a socket path")
    }

    /// `swarmHidden`: the pane is hidden.
    pub fn hidden(&self) -> bool {
        self.swarm_field(SwarmField::Hidden).is_some()
    }

    /// `swarmLead`: how this member leads the team, if it is its AI lead.
    pub fn ai_lead(&self) -> Result<Option<AiLead>, FieldError> {
        self.typed(
            SwarmField::Lead,
            "an AI lead record {\"mode\", \"approves\"}",
        )
    }

    /// Whether this member is the team's AI lead (a damaged record still
    /// says so: it is never taken for a plain teammate).
    pub fn is_ai_lead(&self) -> bool {
        self.swarm_field(SwarmField::Lead).is_some()
    }

    /// `swarmPid` and `swarmPidStart`: the pane's first process, if recorded.
    pub fn pid(&self) -> Result<Option<(u32, Option<String>)>, FieldError> {
        let Some(pid) = self.typed::<u32>(SwarmField::Pid, "a pid")? else {
            return Ok(None);
        };
        Ok(Some((pid, self.typed(SwarmField::PidStart, "a string")?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bob() -> Member {
        Member::teammate("t", "bob", "blue", "/")
    }

    #[test]
    fn the_agent_shown_is_swarms_field_else_who_started_the_member() {
        let mut m = bob();
        assert_eq!(m.agent_label(), None, "nobody known started it");
        m.backend_type = Some("tmux".into());
        assert_eq!(m.agent_label(), Some("claude"), "Claude Code's own");
        m.set_swarm_field(SwarmField::Nonce, json!("n"));
        assert_eq!(m.agent_label(), Some("shell"), "swarm's, before swarmAgent");
        m.set_swarm_field(SwarmField::Agent, json!("codex"));
        assert_eq!(m.agent_label(), Some("codex"));
        let mut lead = bob();
        lead.name = crate::names::LEAD_NAME.into();
        lead.agent_type = Some(crate::names::LEAD_NAME.into());
        assert_eq!(lead.agent_label(), None, "a human lead runs no agent");
    }

    #[test]
    fn every_bad_field_is_the_same_error_naming_member_and_field() {
        let mut m = bob();
        m.set_swarm_field(SwarmField::Agent, json!("gpt"));
        m.set_swarm_field(SwarmField::Command, json!("ls -l"));
        m.set_swarm_field(SwarmField::Env, json!({"A": 1}));
        m.set_swarm_field(SwarmField::PassEnv, json!("PATH"));
        m.set_swarm_field(SwarmField::Exit, json!({"code": "x"}));
        m.set_swarm_field(SwarmField::Nonce, json!(7));
        m.set_swarm_field(SwarmField::Pid, json!(-1));
        let errs = [
            m.command().unwrap_err(),
            m.env().unwrap_err(),
            m.pass_env().unwrap_err(),
            m.exit().unwrap_err(),
            m.nonce().unwrap_err(),
            m.pid().unwrap_err(),
        ];
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            shown,
            [
                "bob's swarmCommand is not an array of strings: \"ls -l\"",
                "bob's swarmEnv is not an object of strings: {\"A\":1}",
                "bob's swarmPassEnv is not an array of names: \"PATH\"",
                "bob's swarmExit is not an exit record {\"code\", \"at\"}: {\"code\":\"x\"}",
                "bob's swarmNonce is not a string: 7",
                "bob's swarmPid is not a pid: -1",
            ]
        );
    }

    #[test]
    fn absent_and_null_fields_are_none_and_good_ones_read_typed() {
        let mut m = bob();
        assert_eq!(m.exit().unwrap(), None);
        m.extra.insert("swarmExit".into(), Value::Null);
        assert_eq!(m.exit().unwrap(), None);
        let e = ExitRecord {
            code: Some(3),
            at: 5,
            lost: None,
            said: None,
        };
        m.set_exit(Some(&e));
        assert_eq!(
            m.swarm_field(SwarmField::Exit),
            Some(&json!({"code": 3, "at": 5}))
        );
        assert_eq!(m.exit().unwrap(), Some(e));
        m.set_exit(None);
        assert!(!m.extra.contains_key("swarmExit"));
        m.set_swarm_field(SwarmField::Agent, json!("process"));
        m.set_swarm_field(SwarmField::Pid, json!(42));
        assert_eq!(m.pid().unwrap(), Some((42, None)));
    }

    #[test]
    fn unknown_fields_others_wrote_are_not_swarms_and_stay() {
        let mut m = bob();
        m.extra.insert("swarmFuture".into(), json!({"x": 1}));
        m.extra.insert("claudeNew".into(), json!([1]));
        m.set_swarm_field(SwarmField::Nonce, json!("n"));
        m.set_exit(None);
        assert_eq!(m.extra["swarmFuture"], json!({"x": 1}));
        assert_eq!(m.extra["claudeNew"], json!([1]));
    }
}
