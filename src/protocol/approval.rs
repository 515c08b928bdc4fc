//! Frames that ask the lead for a decision and carry its answer: plan
//! approval, tool permission, sandbox (network) permission, and the
//! 2.1.88 team-wide permission update.
//!
//! Field names and order are Claude Code's (reference §6), including its mix
//! of camelCase (plan, sandbox) and snake_case (tool permission) frames.
//! Where the inner shape is loose (tool input, suggestions, updates) the
//! value is kept as [`serde_json::Value`], untouched.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Teammate → lead.
/// `type, from, timestamp, planFilePath, planContent, requestId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalRequest {
    pub from: String,
    pub timestamp: String,
    pub plan_file_path: String,
    pub plan_content: String,
    pub request_id: String,
}

/// Lead → teammate.
/// `type, requestId, approved, feedback?, timestamp, permissionMode?, planDigest?`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanApprovalResponse {
    pub request_id: String,
    pub approved: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    /// Lowercase hex SHA-256 of the request's `planContent` (2.1.328).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_digest: Option<String>,
}

impl PlanApprovalResponse {
    /// The lead's answer to plan request `request_id`, built the same way
    /// by the TeamsDialog and `swarm send --plan-response`: the digest of
    /// the plan when the request is known (`request`), and on a rejection
    /// without feedback, "rejected by the lead".
    pub fn answering(
        request_id: &str,
        request: Option<&PlanApprovalRequest>,
        approved: bool,
        feedback: Option<String>,
        timestamp: String,
    ) -> Self {
        use sha2::Digest;
        let feedback = feedback.or_else(|| (!approved).then(|| "rejected by the lead".to_string()));
        let plan_digest = request.map(|r| {
            sha2::Sha256::digest(r.plan_content.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        });
        PlanApprovalResponse {
            request_id: request_id.to_string(),
            approved,
            feedback,
            timestamp,
            permission_mode: None,
            plan_digest,
        }
    }
}

/// Teammate → lead: may I run this tool?
/// `type, request_id, agent_id, tool_name, tool_use_id, description, input,
/// permission_suggestions`. `agent_id` is the worker's *name*.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    pub request_id: String,
    pub agent_id: String,
    pub tool_name: String,
    pub tool_use_id: String,
    pub description: String,
    pub input: Value,
    pub permission_suggestions: Value,
}

/// What a permission answer approved: `{tool_use_id, tool_name, input_digest}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovedRequest {
    pub tool_use_id: String,
    pub tool_name: String,
    pub input_digest: String,
}

/// How a permission request ended.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionOutcome {
    /// `subtype:"success", …, response:{updated_input?, permission_updates?}`.
    Success {
        updated_input: Option<Value>,
        permission_updates: Option<Value>,
    },
    /// `subtype:"error", …, error`.
    Error { error: String },
}

/// Lead → teammate: the answer to a [`PermissionRequest`].
/// `type, request_id, subtype, tool_use_id?, approved_request?, response | error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PermissionResponseWire", into = "PermissionResponseWire")]
pub struct PermissionResponse {
    pub request_id: String,
    pub tool_use_id: Option<String>,
    pub approved_request: Option<ApprovedRequest>,
    pub outcome: PermissionOutcome,
}

/// The flat on-disk shape of [`PermissionResponse`]; its field order is the
/// order written.
#[derive(Serialize, Deserialize)]
struct PermissionResponseWire {
    request_id: String,
    subtype: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_use_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    approved_request: Option<ApprovedRequest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    response: Option<PermissionGrant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct PermissionGrant {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    permission_updates: Option<Value>,
}

impl TryFrom<PermissionResponseWire> for PermissionResponse {
    type Error = String;

    fn try_from(w: PermissionResponseWire) -> Result<Self, String> {
        let outcome = match (w.subtype.as_str(), w.response, w.error) {
            ("success", Some(r), None) => PermissionOutcome::Success {
                updated_input: r.updated_input,
                permission_updates: r.permission_updates,
            },
            ("error", None, Some(error)) => PermissionOutcome::Error { error },
            (s, _, _) => {
                return Err(format!(
                    "permission_response with subtype {s:?} is malformed"
                ));
            }
        };
        Ok(PermissionResponse {
            request_id: w.request_id,
            tool_use_id: w.tool_use_id,
            approved_request: w.approved_request,
            outcome,
        })
    }
}

impl From<PermissionResponse> for PermissionResponseWire {
    fn from(p: PermissionResponse) -> Self {
        let (subtype, response, error) = match p.outcome {
            PermissionOutcome::Success {
                updated_input,
                permission_updates,
            } => (
                "success",
                Some(PermissionGrant {
                    updated_input,
                    permission_updates,
                }),
                None,
            ),
            PermissionOutcome::Error { error } => ("error", None, Some(error)),
        };
        PermissionResponseWire {
            request_id: p.request_id,
            subtype: subtype.to_owned(),
            tool_use_id: p.tool_use_id,
            approved_request: p.approved_request,
            response,
            error,
        }
    }
}

/// `hostPattern` of a sandbox request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPattern {
    pub host: String,
}

/// Teammate → lead: may I reach this host?
/// `type, requestId, workerId, workerName, workerColor, hostPattern:{host}, createdAt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxPermissionRequest {
    pub request_id: String,
    pub worker_id: String,
    pub worker_name: String,
    pub worker_color: String,
    pub host_pattern: HostPattern,
    /// Epoch milliseconds.
    pub created_at: u64,
}

/// Lead → teammate. `type, requestId, host, allow, timestamp`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxPermissionResponse {
    pub request_id: String,
    pub host: String,
    pub allow: bool,
    pub timestamp: String,
}

/// Lead → team (2.1.88 shape): `{type, permissionUpdate:{…}, directoryPath,
/// toolName}`. Claude Code 2.1.328 drops it from the inbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamPermissionUpdate {
    pub permission_update: Value,
    pub directory_path: String,
    pub tool_name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_carries_the_plans_digest_and_a_rejection_a_reason() {
        let req = PlanApprovalRequest {
            from: "bob".into(),
            timestamp: "t".into(),
            plan_file_path: "/p".into(),
            plan_content: "abc".into(),
            request_id: "r1".into(),
        };
        let yes = PlanApprovalResponse::answering("r1", Some(&req), true, None, "t".into());
        assert_eq!(
            yes.plan_digest.as_deref(),
            Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        );
        assert_eq!(yes.feedback, None);
        let no = PlanApprovalResponse::answering("r1", None, false, None, "t".into());
        assert_eq!(no.feedback.as_deref(), Some("rejected by the lead"));
        assert_eq!(no.plan_digest, None);
        let said =
            PlanApprovalResponse::answering("r1", None, false, Some("why".into()), "t".into());
        assert_eq!(said.feedback.as_deref(), Some("why"));
    }
}
