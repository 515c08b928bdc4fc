//! Typed structured messages: the protocol frames Claude Code's agent teams
//! carry as compact JSON in the `text` of an ordinary inbox entry
//! (reference §6).
//!
//! [`Message::parse`] turns an entry's text into a [`Message`], or `None` for
//! plain text, non-JSON, and JSON whose `type` is not one of the known
//! frames (or whose known frame is malformed): such an entry simply stays a
//! plain message, shown as it is, so an unknown or newer frame can never
//! crash a reader. [`Message::to_text`] writes the frame exactly as Claude
//! Code does: compact, `type` first, fields in its order, absent optionals
//! omitted. Only the known fields are written; frames are created, not
//! rewritten (an inbox keeps every entry's text untouched).

mod approval;
mod lifecycle;

pub use approval::{
    ApprovedRequest, HostPattern, PermissionOutcome, PermissionRequest, PermissionResponse,
    PlanApprovalRequest, PlanApprovalResponse, SandboxPermissionRequest, SandboxPermissionResponse,
    TeamPermissionUpdate,
};
pub use lifecycle::{
    CompletedStatus, IdleNotification, IdleReason, ModeSetRequest, ShutdownApproved,
    ShutdownRejected, ShutdownRequest, TaskAssignment,
};

use serde::{Deserialize, Serialize};

/// One structured frame, tagged by its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    ShutdownRequest(ShutdownRequest),
    ShutdownApproved(ShutdownApproved),
    ShutdownRejected(ShutdownRejected),
    IdleNotification(IdleNotification),
    TaskAssignment(TaskAssignment),
    PlanApprovalRequest(PlanApprovalRequest),
    PlanApprovalResponse(PlanApprovalResponse),
    PermissionRequest(PermissionRequest),
    PermissionResponse(PermissionResponse),
    SandboxPermissionRequest(SandboxPermissionRequest),
    SandboxPermissionResponse(SandboxPermissionResponse),
    ModeSetRequest(ModeSetRequest),
    TeamPermissionUpdate(TeamPermissionUpdate),
}

/// Longest piece of free text [`Message::one_line`] shows.
const ONE_LINE_TEXT: usize = 100;

impl Message {
    /// The frame in an entry's text, or `None` when the text is plain, not
    /// JSON, or JSON without a known `type`.
    pub fn parse(text: &str) -> Option<Message> {
        if !text.trim_start().starts_with('{') {
            return None;
        }
        crate::json_text::parse_lenient(text.as_bytes()).ok()
    }

    /// Compact JSON, `JSON.stringify(frame)`, ready to be an entry's text.
    pub fn to_text(&self) -> String {
        crate::json_text::to_compact(self)
    }

    /// The `type` value.
    pub fn kind(&self) -> &'static str {
        match self {
            Message::ShutdownRequest(_) => "shutdown_request",
            Message::ShutdownApproved(_) => "shutdown_approved",
            Message::ShutdownRejected(_) => "shutdown_rejected",
            Message::IdleNotification(_) => "idle_notification",
            Message::TaskAssignment(_) => "task_assignment",
            Message::PlanApprovalRequest(_) => "plan_approval_request",
            Message::PlanApprovalResponse(_) => "plan_approval_response",
            Message::PermissionRequest(_) => "permission_request",
            Message::PermissionResponse(_) => "permission_response",
            Message::SandboxPermissionRequest(_) => "sandbox_permission_request",
            Message::SandboxPermissionResponse(_) => "sandbox_permission_response",
            Message::ModeSetRequest(_) => "mode_set_request",
            Message::TeamPermissionUpdate(_) => "team_permission_update",
        }
    }

    /// The request id this frame asks or answers, when it has one.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Message::ShutdownRequest(m) => Some(&m.request_id),
            Message::ShutdownApproved(m) => Some(&m.request_id),
            Message::ShutdownRejected(m) => Some(&m.request_id),
            Message::PlanApprovalRequest(m) => Some(&m.request_id),
            Message::PlanApprovalResponse(m) => Some(&m.request_id),
            Message::PermissionRequest(m) => Some(&m.request_id),
            Message::PermissionResponse(m) => Some(&m.request_id),
            Message::SandboxPermissionRequest(m) => Some(&m.request_id),
            Message::SandboxPermissionResponse(m) => Some(&m.request_id),
            Message::IdleNotification(_)
            | Message::TaskAssignment(_)
            | Message::ModeSetRequest(_)
            | Message::TeamPermissionUpdate(_) => None,
        }
    }

    /// A readable one-line summary for humans, e.g.
    /// `shutdown approved by bob (pane %3)` or `idle: available — Teammate idle.`
    pub fn one_line(&self) -> String {
        match self {
            Message::ShutdownRequest(m) => match &m.reason {
                Some(r) => format!("shutdown requested by {}: {}", m.from, clip(r)),
                None => format!("shutdown requested by {}", m.from),
            },
            Message::ShutdownApproved(m) => match &m.pane_id {
                Some(p) => format!("shutdown approved by {} (pane {p})", m.from),
                None => format!("shutdown approved by {}", m.from),
            },
            Message::ShutdownRejected(m) => {
                format!("shutdown rejected by {}: {}", m.from, clip(&m.reason))
            }
            Message::IdleNotification(m) => idle_line(m),
            Message::TaskAssignment(m) => {
                format!(
                    "task #{} assigned by {}: {}",
                    m.task_id,
                    m.assigned_by,
                    clip(&m.subject)
                )
            }
            // Claude Code names its plan file; `swarm ask --plan` has none,
            // so its plan's first line says what is asked.
            Message::PlanApprovalRequest(m) => match (
                m.plan_file_path.as_str(),
                m.plan_content.lines().find(|l| !l.trim().is_empty()),
            ) {
                ("", Some(first)) => {
                    format!(
                        "plan approval requested by {}: {}",
                        m.from,
                        clip(first.trim())
                    )
                }
                ("", None) => format!("plan approval requested by {}", m.from),
                (path, _) => format!("plan approval requested by {} ({})", m.from, clip(path)),
            },
            Message::PlanApprovalResponse(m) => match (m.approved, &m.feedback) {
                (true, None) => "plan approved".to_owned(),
                (true, Some(f)) => format!("plan approved: {}", clip(f)),
                (false, None) => "plan rejected".to_owned(),
                (false, Some(f)) => format!("plan rejected: {}", clip(f)),
            },
            Message::PermissionRequest(m) => format!(
                "permission requested by {} for {}: {}",
                m.agent_id,
                m.tool_name,
                clip(&m.description)
            ),
            Message::PermissionResponse(m) => match &m.outcome {
                PermissionOutcome::Success { .. } => {
                    format!("permission granted ({})", m.request_id)
                }
                PermissionOutcome::Error { error } => {
                    format!("permission denied ({}): {}", m.request_id, clip(error))
                }
            },
            Message::SandboxPermissionRequest(m) => format!(
                "network access to {} requested by {}",
                clip(&m.host_pattern.host),
                m.worker_name
            ),
            Message::SandboxPermissionResponse(m) => format!(
                "network access to {} {}",
                clip(&m.host),
                if m.allow { "allowed" } else { "denied" }
            ),
            Message::ModeSetRequest(m) => {
                format!("permission mode set to {} by {}", clip(&m.mode), m.from)
            }
            Message::TeamPermissionUpdate(m) => format!(
                "team permission update for {} in {}",
                m.tool_name,
                clip(&m.directory_path)
            ),
        }
    }
}

fn idle_line(m: &IdleNotification) -> String {
    let reason = match &m.idle_reason {
        Some(IdleReason::Available) | None => "available",
        Some(IdleReason::Interrupted) => "interrupted",
        Some(IdleReason::Failed) => "failed",
        Some(IdleReason::Other(s)) => s.as_str(),
    };
    let mut line = format!("idle: {}", clip(reason));
    if let Some(id) = &m.completed_task_id {
        line.push_str(&format!(", task #{id}"));
        let status = match &m.completed_status {
            Some(CompletedStatus::Resolved) => Some("resolved"),
            Some(CompletedStatus::Blocked) => Some("blocked"),
            Some(CompletedStatus::Failed) => Some("failed"),
            Some(CompletedStatus::Other(s)) => Some(s.as_str()),
            None => None,
        };
        if let Some(s) = status {
            line.push_str(&format!(" {}", clip(s)));
        }
    }
    if let Some(f) = &m.failure_reason {
        line.push_str(&format!(" ({})", clip(f)));
    }
    if let Some(t) = m.summary.as_ref().or(m.result.as_ref()) {
        line.push_str(&format!(" — {}", clip(t)));
    }
    line
}

/// Free text made fit for one line: whitespace runs (newlines included)
/// become one space, and anything past [`ONE_LINE_TEXT`] chars becomes `…`.
fn clip(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= ONE_LINE_TEXT {
        return flat;
    }
    let mut cut: String = flat.chars().take(ONE_LINE_TEXT - 1).collect();
    cut.push('…');
    cut
}

/// `shutdown-<epoch ms>@<target name>`, the id Claude Code's teammates accept
/// (`^shutdown-[0-9]{1,20}@[\w.-]{1,64}$`).
pub fn shutdown_request_id(ms: u64, target: &str) -> String {
    format!("shutdown-{ms}@{target}")
}

/// `plan_approval-<epoch ms>@<name>@<team>`.
pub fn plan_approval_request_id(ms: u64, name: &str, team: &str) -> String {
    format!("plan_approval-{ms}@{name}@{team}")
}

/// `perm-<epoch ms>-<base36, ≤ 12 chars>`, random suffix.
pub fn permission_request_id(ms: u64) -> String {
    format!("perm-{ms}-{}", random_base36(12))
}

/// `sandbox-<epoch ms>-<random>`.
pub fn sandbox_request_id(ms: u64) -> String {
    format!("sandbox-{ms}-{}", random_base36(12))
}

fn random_base36(len: usize) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut n = uuid::Uuid::new_v4().as_u128();
    (0..len)
        .map(|_| {
            let d = DIGITS[(n % 36) as usize] as char;
            n /= 36;
            d
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The `text` of every entry of the Claude Code fixture
    /// `inbox-samples.json` (in the project's shared folder, when present).
    fn fixture_frames() -> Vec<(String, String)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/claude-code/inbox-samples.json"
        );
        let Ok(bytes) = std::fs::read(path) else {
            eprintln!("SKIP fixture test: {path} not found");
            return Vec::new();
        };
        let samples: serde_json::Map<String, Value> = serde_json::from_slice(&bytes).unwrap();
        samples
            .into_iter()
            .map(|(label, e)| (label, e["text"].as_str().unwrap().to_owned()))
            .collect()
    }

    /// Parsing then writing gives back exactly the same text.
    fn assert_round_trip(text: &str) -> Message {
        let m = Message::parse(text).unwrap_or_else(|| panic!("did not parse: {text}"));
        assert_eq!(m.to_text(), text, "re-serialized frame differs");
        m
    }

    #[test]
    fn every_fixture_frame_round_trips_byte_for_byte() {
        let mut kinds = Vec::new();
        for (label, text) in fixture_frames() {
            match Message::parse(&text) {
                Some(m) => {
                    assert_eq!(m.to_text(), text, "fixture {label}");
                    kinds.push(m.kind());
                }
                None => assert!(
                    label.ends_with("message") || label.ends_with("signed"),
                    "fixture {label} is a frame but did not parse: {text}"
                ),
            }
        }
        kinds.sort();
        if kinds.is_empty() {
            return; // fixture not present
        }
        assert_eq!(
            kinds,
            [
                "idle_notification",
                "shutdown_approved",
                "shutdown_approved",
                "shutdown_request",
                "task_assignment"
            ]
        );
    }

    #[test]
    fn the_fixture_frames_read_as_their_types() {
        let frames: std::collections::HashMap<_, _> = fixture_frames().into_iter().collect();
        if frames.is_empty() {
            return;
        }
        let Some(Message::ShutdownApproved(a)) = Message::parse(&frames["shutdown_approved"])
        else {
            panic!("not a shutdown_approved")
        };
        assert_eq!(
            (a.pane_id.as_deref(), a.backend_type.as_deref()),
            (Some("%2"), Some("tmux"))
        );
        let Some(Message::ShutdownApproved(b)) =
            Message::parse(&frames["shutdown_approved_without_pane"])
        else {
            panic!("not a shutdown_approved")
        };
        assert_eq!(b.pane_id, None);
        let Some(Message::IdleNotification(i)) = Message::parse(&frames["idle_notification"])
        else {
            panic!("not an idle_notification")
        };
        assert_eq!(i.idle_reason, Some(IdleReason::Available));
        assert_eq!(i.result.as_deref(), Some("Teammate idle."));
    }

    #[test]
    fn shutdown_frames_round_trip() {
        assert_round_trip(
            r#"{"type":"shutdown_request","requestId":"shutdown-1@bob","from":"team-lead","timestamp":"2026-11-30T07:15:27.589Z"}"#,
        );
        assert_round_trip(
            r#"{"type":"shutdown_rejected","requestId":"shutdown-1@bob","from":"bob","reason":"busy with #3","timestamp":"2026-11-30T07:15:27.589Z"}"#,
        );
    }

    #[test]
    fn idle_notification_with_every_field_round_trips() {
        let m = assert_round_trip(
            r#"{"type":"idle_notification","from":"bob","timestamp":"t","idleReason":"failed","summary":"s","completedTaskId":"3","completedStatus":"blocked","failureReason":"no disk","result":"r"}"#,
        );
        assert_eq!(m.one_line(), "idle: failed, task #3 blocked (no disk) — s");
        let newer = assert_round_trip(
            r#"{"type":"idle_notification","from":"bob","timestamp":"t","idleReason":"sleeping","completedTaskId":"3","completedStatus":"deferred"}"#,
        );
        assert_eq!(newer.one_line(), "idle: sleeping, task #3 deferred");
    }

    #[test]
    fn plan_frames_round_trip() {
        assert_round_trip(
            r##"{"type":"plan_approval_request","from":"bob","timestamp":"t","planFilePath":"/p/plan.md","planContent":"# Plan\n1. x","requestId":"plan_approval-1@bob@demo"}"##,
        );
        assert_round_trip(
            r#"{"type":"plan_approval_response","requestId":"plan_approval-1@bob@demo","approved":false,"feedback":"smaller steps","timestamp":"t"}"#,
        );
        assert_round_trip(
            r#"{"type":"plan_approval_response","requestId":"r","approved":true,"timestamp":"t","permissionMode":"default","planDigest":"ab12"}"#,
        );
    }

    #[test]
    fn permission_frames_round_trip_with_both_subtypes() {
        assert_round_trip(
            r#"{"type":"permission_request","request_id":"perm-1-abc","agent_id":"bob","tool_name":"Bash","tool_use_id":"toolu_1","description":"run tests","input":{"command":"cargo test","n":[1,2.5,null]},"permission_suggestions":[{"type":"addRules"}]}"#,
        );
        let ok = assert_round_trip(
            r#"{"type":"permission_response","request_id":"perm-1-abc","subtype":"success","tool_use_id":"toolu_1","approved_request":{"tool_use_id":"toolu_1","tool_name":"Bash","input_digest":"d"},"response":{"updated_input":{"command":"ls"},"permission_updates":[]}}"#,
        );
        assert!(matches!(
            &ok,
            Message::PermissionResponse(PermissionResponse {
                outcome: PermissionOutcome::Success { .. },
                ..
            })
        ));
        assert_round_trip(
            r#"{"type":"permission_response","request_id":"perm-1-abc","subtype":"success","response":{}}"#,
        );
        let err = assert_round_trip(
            r#"{"type":"permission_response","request_id":"perm-1-abc","subtype":"error","error":"denied by the lead"}"#,
        );
        assert_eq!(
            err.one_line(),
            "permission denied (perm-1-abc): denied by the lead"
        );
        assert_eq!(
            Message::parse(r#"{"type":"permission_response","request_id":"p","subtype":"maybe"}"#),
            None,
            "an unknown subtype is not a frame"
        );
    }

    #[test]
    fn sandbox_mode_and_team_permission_frames_round_trip() {
        assert_round_trip(
            r#"{"type":"sandbox_permission_request","requestId":"sandbox-1-x","workerId":"bob@demo","workerName":"bob","workerColor":"blue","hostPattern":{"host":"crates.io"},"createdAt":1796022927589}"#,
        );
        assert_round_trip(
            r#"{"type":"sandbox_permission_response","requestId":"sandbox-1-x","host":"crates.io","allow":true,"timestamp":"t"}"#,
        );
        let mode =
            assert_round_trip(r#"{"type":"mode_set_request","mode":"plan","from":"team-lead"}"#);
        assert_eq!(mode.one_line(), "permission mode set to plan by team-lead");
        assert_round_trip(
            r#"{"type":"team_permission_update","permissionUpdate":{"type":"addRules","rules":[{"toolName":"Bash"}]},"directoryPath":"/p","toolName":"Bash"}"#,
        );
    }

    #[test]
    fn plain_text_unknown_types_and_broken_frames_are_not_messages() {
        for text in [
            "hello",
            "",
            "{not json",
            "[1,2]",
            r#"{"no":"type"}"#,
            r#"{"type":"teammate_terminated","message":"gone"}"#,
            r#"{"type":"something_new","x":1}"#,
            r#"{"type":"shutdown_request","from":"team-lead"}"#,
            r#"{"type":7}"#,
        ] {
            assert_eq!(Message::parse(text), None, "{text}");
        }
    }

    #[test]
    fn a_frame_with_a_lone_surrogate_still_parses() {
        let m = Message::parse(
            r#"{"type":"shutdown_rejected","requestId":"r","from":"bob","reason":"x\ud800","timestamp":"t"}"#,
        );
        assert!(matches!(m, Some(Message::ShutdownRejected(r)) if r.reason == "x\u{fffd}"));
    }

    #[test]
    fn built_frames_serialize_in_claude_code_order_without_absent_fields() {
        let m = Message::ShutdownApproved(ShutdownApproved {
            request_id: shutdown_request_id(1_796_022_927_655, "helper2"),
            from: "helper2".into(),
            timestamp: "2026-11-30T07:15:28.205Z".into(),
            pane_id: Some("%2".into()),
            backend_type: None,
        });
        assert_eq!(
            m.to_text(),
            r#"{"type":"shutdown_approved","requestId":"shutdown-1796022927655@helper2","from":"helper2","timestamp":"2026-11-30T07:15:28.205Z","paneId":"%2"}"#
        );
        assert_eq!(m.one_line(), "shutdown approved by helper2 (pane %2)");
        let v: Value = serde_json::from_str(&m.to_text()).unwrap();
        assert_eq!(v["type"], json!("shutdown_approved"));
    }

    #[test]
    fn request_ids_have_claude_code_shapes() {
        assert_eq!(
            shutdown_request_id(1_796_022_927_589, "researcher"),
            "shutdown-1796022927589@researcher"
        );
        assert_eq!(
            plan_approval_request_id(5, "bob", "demo"),
            "plan_approval-5@bob@demo"
        );
        let p = permission_request_id(5);
        assert!(
            p.starts_with("perm-5-") && p.len() == "perm-5-".len() + 12,
            "{p}"
        );
        assert_ne!(permission_request_id(5), p, "random suffix");
        assert!(sandbox_request_id(9).starts_with("sandbox-9-"));
    }

    #[test]
    fn one_lines_are_single_lines() {
        let m = Message::IdleNotification(IdleNotification {
            from: "researcher".into(),
            timestamp: "t".into(),
            idle_reason: Some(IdleReason::Available),
            summary: None,
            completed_task_id: None,
            completed_status: None,
            failure_reason: None,
            result: Some("Teammate idle.".into()),
        });
        assert_eq!(m.one_line(), "idle: available — Teammate idle.");
        let long = Message::ShutdownRejected(ShutdownRejected {
            request_id: "r".into(),
            from: "bob".into(),
            reason: format!("line one\nline two {}", "x".repeat(500)),
            timestamp: "t".into(),
        });
        let line = long.one_line();
        assert!(
            !line.contains('\n') && line.chars().count() < 140 && line.ends_with('…'),
            "{line}"
        );
        assert!(line.starts_with("shutdown rejected by bob: line one line two"));
    }

    /// A plan from `swarm ask --plan` has no file: its first line is what
    /// the lead's inbox row shows (it read "requested by charlie ()").
    #[test]
    fn a_plan_without_a_file_is_shown_by_its_first_line() {
        let plan = |path: &str, content: &str| {
            Message::PlanApprovalRequest(PlanApprovalRequest {
                from: "charlie".into(),
                timestamp: "2026-12-01T00:00:00.000Z".into(),
                plan_file_path: path.into(),
                plan_content: content.into(),
                request_id: "plan-1".into(),
            })
            .one_line()
        };
        assert_eq!(
            plan("", "\nGrep the files for TODO\nthen keep twenty"),
            "plan approval requested by charlie: Grep the files for TODO"
        );
        assert_eq!(plan("", ""), "plan approval requested by charlie");
        assert_eq!(
            plan("/p/plan.md", "x"),
            "plan approval requested by charlie (/p/plan.md)"
        );
    }
}
