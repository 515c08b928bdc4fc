//! Requests waiting for an answer, derived from the files alone: a plan or
//! permission request a teammate sent the lead, and a shutdown request the
//! lead sent a teammate, with no answer carrying its request id in the
//! inbox or history of whoever it was answered to. A lead that restarts,
//! `swarm status`, the TeamsDialog and `team_status` over MCP all derive
//! the same list here; nothing about a request lives only in a process's
//! memory.
//!
//! A request whose sender (or, for a shutdown, its target) is no longer on
//! the roster is moot and not listed. A request older than everything its
//! answerer's history still holds, in a history at its bound, may have had
//! its answer trimmed away: it is not listed either (never an answered
//! request shown again).
//!
//! [`answer`] is the lead's answer to a plan or permission request, the
//! one the dialog's `a`/`r`, `swarm send --plan-response` and MCP's
//! `answer_request` send.

use super::TeamOps;
use crate::mailbox::Entry;
use crate::mailbox::HISTORY_MAX_ENTRIES as MAX_ENTRIES;
use crate::names::LEAD_NAME;
use crate::protocol::{self, Message};
use crate::team::Team;
use anyhow::{Result, bail};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// What a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    /// A teammate's plan, to approve or reject (lead's answer).
    Plan,
    /// A teammate's tool use, to allow or deny (lead's answer).
    Permission,
    /// The lead asked a teammate to shut down (the teammate's answer).
    Shutdown,
}

/// One request with no answer yet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingRequest {
    /// Its request id (what an answer carries).
    pub id: String,
    pub kind: RequestKind,
    pub from: String,
    pub to: String,
    /// One line: the plan's first line, the tool and what it would do, the
    /// shutdown's reason.
    pub summary: String,
    /// When it was sent (as its entry says).
    pub timestamp: String,
    /// The request itself.
    #[serde(skip)]
    pub message: Message,
}

impl PendingRequest {
    /// The plan or permission request an entry of the lead's inbox
    /// carries (for a lead that consumes it as it arrives).
    pub fn to_lead(e: &Entry) -> Option<PendingRequest> {
        let msg @ (Message::PlanApprovalRequest(_) | Message::PermissionRequest(_)) =
            e.protocol()?
        else {
            return None;
        };
        let id = msg.request_id()?.to_string();
        Some(request(e, msg, id, LEAD_NAME))
    }

    /// Whether the lead answers it (plan, permission), rather than a
    /// teammate (shutdown).
    pub fn for_lead(&self) -> bool {
        self.kind != RequestKind::Shutdown
    }

    /// How long ago it was sent, when its timestamp reads.
    pub fn age(&self) -> Option<std::time::Duration> {
        let sent = crate::clock::ms_from_iso(&self.timestamp)?;
        Some(std::time::Duration::from_millis(
            crate::clock::now_ms().saturating_sub(sent),
        ))
    }
}

/// One member's inbox and history: the entries, and whether the history
/// is at its bound (then its oldest entry is the horizon).
struct Mail {
    entries: Vec<Entry>,
    /// The oldest timestamp the history still holds, when it may have
    /// trimmed older ones.
    horizon: Option<u64>,
}

impl Mail {
    fn of(team: &Team, member: &str) -> Result<Mail> {
        let mb = team.mailbox();
        let history = mb.history(member)?;
        let horizon = (history.len() >= MAX_ENTRIES)
            .then(|| {
                history
                    .first()
                    .and_then(|e| crate::clock::ms_from_iso(&e.timestamp))
            })
            .flatten();
        let mut entries = history;
        entries.extend(mb.read(member)?.entries);
        Ok(Mail { entries, horizon })
    }

    /// The request ids answered in this mail by a message of `answers`.
    fn answered(&self, answers: fn(&Message) -> bool) -> HashSet<String> {
        self.entries
            .iter()
            .filter_map(Entry::protocol)
            .filter(answers)
            .filter_map(|m| m.request_id().map(str::to_string))
            .collect()
    }

    /// Whether a request sent at `timestamp` is older than what this mail
    /// can still answer for.
    fn past_horizon(&self, timestamp: &str) -> bool {
        match (self.horizon, crate::clock::ms_from_iso(timestamp)) {
            (Some(h), Some(t)) => t < h,
            _ => false,
        }
    }
}

fn is_plan_or_permission_answer(m: &Message) -> bool {
    matches!(
        m,
        Message::PlanApprovalResponse(_) | Message::PermissionResponse(_)
    )
}

fn is_shutdown_answer(m: &Message) -> bool {
    matches!(
        m,
        Message::ShutdownApproved(_) | Message::ShutdownRejected(_)
    )
}

/// Every request of `team` with no answer yet, oldest first.
pub fn pending(team: &Team) -> Result<Vec<PendingRequest>> {
    let roster = team.roster().read()?;
    let on_roster = |n: &str| roster.member(n).is_some();
    let lead = Mail::of(team, LEAD_NAME)?;
    let mut out = Vec::new();
    // Teammates' plan and permission requests to the lead, answered (or
    // not) in the asker's own mail.
    let mut askers: HashMap<String, Mail> = HashMap::new();
    for e in &lead.entries {
        let Some(msg @ (Message::PlanApprovalRequest(_) | Message::PermissionRequest(_))) =
            e.protocol()
        else {
            continue;
        };
        if !on_roster(&e.from) || e.from == LEAD_NAME {
            continue;
        }
        let Some(id) = msg.request_id().map(str::to_string) else {
            continue;
        };
        if !askers.contains_key(&e.from) {
            askers.insert(e.from.clone(), Mail::of(team, &e.from)?);
        }
        let theirs = &askers[&e.from];
        if theirs.answered(is_plan_or_permission_answer).contains(&id)
            || theirs.past_horizon(&e.timestamp)
        {
            continue;
        }
        out.push(request(e, msg, id, LEAD_NAME));
    }
    // The lead's shutdown requests to teammates, answered in the lead's mail.
    let answered_to_lead = lead.answered(is_shutdown_answer);
    for m in roster.teammates() {
        let theirs = match askers.remove(&m.name) {
            Some(mail) => mail,
            None => Mail::of(team, &m.name)?,
        };
        for e in &theirs.entries {
            let Some(msg @ Message::ShutdownRequest(_)) = e.protocol() else {
                continue;
            };
            if e.from != LEAD_NAME {
                continue;
            }
            let Some(id) = msg.request_id().map(str::to_string) else {
                continue;
            };
            if answered_to_lead.contains(&id) || lead.past_horizon(&e.timestamp) {
                continue;
            }
            let mut r = request(e, msg, id, &m.name);
            r.from = LEAD_NAME.to_string();
            out.push(r);
        }
    }
    out.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
    // One entry per request id (an entry re-stamped or read twice).
    let mut seen = HashSet::new();
    out.retain(|r| seen.insert(r.id.clone()));
    Ok(out)
}

fn request(e: &Entry, msg: Message, id: String, to: &str) -> PendingRequest {
    let kind = match &msg {
        Message::PlanApprovalRequest(_) => RequestKind::Plan,
        Message::PermissionRequest(_) => RequestKind::Permission,
        _ => RequestKind::Shutdown,
    };
    PendingRequest {
        id,
        kind,
        from: e.from.clone(),
        to: to.to_string(),
        summary: crate::text::escape_line(&msg.one_line()).into_owned(),
        timestamp: e.timestamp.clone(),
        message: msg,
    }
}

/// What answering a request did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answered {
    pub request_id: String,
    pub kind: RequestKind,
    /// Who was answered.
    pub to: String,
    pub approved: bool,
    /// Who answered.
    pub by: Answerer,
}

/// Who answered a request for the lead: the human (the dialog, the CLI,
/// `swarm down`) or the team's AI lead (`answer_request`, when its
/// `[lead]` says `approves`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Answerer {
    User,
    AiLead,
}

impl Answerer {
    /// As the dialog says it: "you approved …", "the AI lead approved …".
    pub fn said(self) -> &'static str {
        match self {
            Answerer::User => "you",
            Answerer::AiLead => "the AI lead",
        }
    }
}

/// One answer on record (`<state>/answers.json`, by request id): what the
/// dialog says when a request it listed was answered elsewhere.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct AnswerRecord {
    pub by: Answerer,
    pub approved: bool,
    /// When, in ms since the epoch.
    pub at: u64,
}

/// Most answers kept on record (the newest): the dialog needs only the
/// last few, read soon after they are given.
const ANSWERS_KEPT: usize = 200;

fn answers_path(team: &Team) -> Result<std::path::PathBuf> {
    Ok(team.root.state_dir(&team.name)?.join("answers.json"))
}

/// What the dialog says of `r`, answered elsewhere: "the AI lead approved
/// alice's plan", or "alice's plan was answered" when nobody recorded who.
pub fn answered_line(r: &PendingRequest, rec: Option<&AnswerRecord>) -> String {
    let what = match r.kind {
        RequestKind::Plan => "plan",
        RequestKind::Permission => "permission request",
        RequestKind::Shutdown => "shutdown request",
    };
    let from = crate::text::escape_line(&r.from);
    match rec {
        Some(a) => format!(
            "{} {} {from}'s {what}",
            a.by.said(),
            if a.approved { "approved" } else { "rejected" }
        ),
        None => format!("{from}'s {what} was answered"),
    }
}

/// Every answer on record (an unreadable record: none, logged).
pub fn answers(team: &Team) -> Result<HashMap<String, AnswerRecord>> {
    let path = answers_path(team)?;
    Ok(match crate::atomic_file::read_optional(&path)? {
        None => HashMap::new(),
        Some(b) => crate::json_text::parse_lenient(&b).unwrap_or_else(|e| {
            tracing::warn!(path = %path.display(), %e, "unreadable answer record");
            HashMap::new()
        }),
    })
}

/// Records who answered `request_id` (under the record's lock: the dialog
/// and the AI lead's server may answer at once).
fn record_answer(team: &Team, request_id: &str, rec: AnswerRecord) -> Result<()> {
    use crate::atomic_file;
    let path = answers_path(team)?;
    if let Some(d) = path.parent() {
        atomic_file::ensure_dir(d)?;
    }
    let _lock = atomic_file::FileLock::acquire_dir(
        &atomic_file::lock_dir_for(&path),
        atomic_file::DEFAULT_LOCK_TIMEOUT,
    )?;
    let mut all = answers(team)?;
    all.insert(request_id.to_string(), rec);
    if all.len() > ANSWERS_KEPT {
        let mut by_age: Vec<(u64, String)> = all.iter().map(|(k, r)| (r.at, k.clone())).collect();
        by_age.sort();
        for (_, k) in by_age.iter().take(all.len() - ANSWERS_KEPT) {
            all.remove(k);
        }
    }
    let sorted: std::collections::BTreeMap<_, _> = all.into_iter().collect();
    atomic_file::write_atomic(&path, &crate::json_text::to_pretty(&sorted))?;
    Ok(())
}

impl TeamOps {
    /// Every request of the team with no answer yet (see [`pending`]).
    pub fn requests(&self) -> Result<Vec<PendingRequest>> {
        pending(self.team())
    }

    /// The lead's answer to the plan or permission request `request_id`
    /// (approve or reject, with `feedback` for the asker), sent to the
    /// asker's inbox. Only the lead answers, and only a request still
    /// waiting (one that arrived before this lead started included).
    pub fn answer(
        &self,
        request_id: &str,
        approve: bool,
        feedback: Option<String>,
    ) -> Result<Answered> {
        if self.me() != LEAD_NAME {
            bail!(
                "only {LEAD_NAME} answers plan and permission requests (you are {:?})",
                self.me()
            );
        }
        // Its teammates take an answer only from their own lead's hand.
        self.require_own("answer its requests (its own lead does)")?;
        let by = if self.is_ai_lead() {
            if !self.ai_lead()?.is_some_and(|(_, how)| how.approves) {
                bail!(
                    "teammates' plan and permission requests in team {} go to the human (the \
                     TeamsDialog); `approves = true` in the spec's [lead] lets the AI lead answer them",
                    self.team().name
                );
            }
            Answerer::AiLead
        } else {
            Answerer::User
        };
        answer(self.team(), request_id, approve, feedback, by)
    }
}

impl TeamOps {
    /// The acting teammate asks the lead to approve `plan` (a
    /// `plan_approval_request`, as the runtime's plan mode sends); returns
    /// its request id. The answer comes with [`TeamOps::wait_plan_answer`].
    pub fn ask_plan(&self, plan: &str) -> Result<String> {
        let me = self.me();
        if me == LEAD_NAME {
            bail!("the lead approves plans; ask as a teammate (--as NAME or SWARM_AGENT_NAME)");
        }
        self.roster_with_me()?;
        let team = self.team();
        let request_id = protocol::plan_approval_request_id(crate::clock::now_ms(), me, &team.name);
        let msg = Message::PlanApprovalRequest(protocol::PlanApprovalRequest {
            from: me.to_string(),
            timestamp: crate::clock::now_iso(),
            plan_file_path: String::new(),
            plan_content: plan.to_string(),
            request_id: request_id.clone(),
        });
        team.send_protocol(me, LEAD_NAME, &msg, false)?;
        Ok(request_id)
    }

    /// The lead's answer to the acting member's request `request_id`: from
    /// its inbox (consumed there) or its history (a runtime consumed it
    /// first); `None` after `within`. Woken by the inbox's file events.
    pub fn wait_plan_answer(
        &self,
        request_id: &str,
        within: std::time::Duration,
    ) -> Result<Option<protocol::PlanApprovalResponse>> {
        let (me, mb) = (self.me(), self.team().mailbox());
        let watcher = mb.watch()?;
        let deadline = std::time::Instant::now() + within;
        let answer_in = |entries: &[Entry]| {
            entries.iter().find_map(|e| match e.protocol() {
                Some(Message::PlanApprovalResponse(r))
                    if r.request_id == request_id && e.from == LEAD_NAME =>
                {
                    Some((e.key(), r))
                }
                _ => None,
            })
        };
        loop {
            if let Some((key, r)) = answer_in(&mb.read(me)?.entries) {
                mb.consume(me, &[key])?;
                return Ok(Some(r));
            }
            if let Some((_, r)) = answer_in(&mb.history(me)?) {
                return Ok(Some(r));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            watcher.wait(left.min(std::time::Duration::from_secs(1)));
        }
    }
}

/// [`TeamOps::answer`], on the files.
pub fn answer(
    team: &Team,
    request_id: &str,
    approve: bool,
    feedback: Option<String>,
    by: Answerer,
) -> Result<Answered> {
    let waiting = pending(team)?;
    let Some(req) = waiting.iter().find(|r| r.id == request_id) else {
        let ids: Vec<&str> = waiting
            .iter()
            .filter(|r| r.for_lead())
            .map(|r| r.id.as_str())
            .collect();
        bail!(
            "no request {} waits for an answer{}",
            crate::names::shown(request_id),
            if ids.is_empty() {
                " (none waits)".to_string()
            } else {
                format!(" (waiting: {})", ids.join(", "))
            }
        );
    };
    let msg = response(&req.message, approve, feedback)?;
    team.send_protocol(LEAD_NAME, &req.from, &msg, false)?;
    // Who answered is told, not needed: the answer is on disk already.
    let rec = AnswerRecord {
        by,
        approved: approve,
        at: crate::clock::now_ms(),
    };
    if let Err(e) = record_answer(team, &req.id, rec) {
        tracing::warn!(%e, request = %req.id, "who answered is not on record");
    }
    Ok(Answered {
        request_id: req.id.clone(),
        kind: req.kind,
        to: req.from.clone(),
        approved: approve,
        by,
    })
}

/// The lead's response to `request`.
pub fn response(request: &Message, approve: bool, feedback: Option<String>) -> Result<Message> {
    let now = crate::clock::now_iso();
    Ok(match request {
        Message::PlanApprovalRequest(p) => {
            Message::PlanApprovalResponse(protocol::PlanApprovalResponse::answering(
                &p.request_id,
                Some(p),
                approve,
                feedback,
                now,
            ))
        }
        Message::PermissionRequest(p) => {
            Message::PermissionResponse(protocol::PermissionResponse {
                request_id: p.request_id.clone(),
                tool_use_id: Some(p.tool_use_id.clone()),
                approved_request: None,
                outcome: if approve {
                    protocol::PermissionOutcome::Success {
                        updated_input: None,
                        permission_updates: None,
                    }
                } else {
                    protocol::PermissionOutcome::Error {
                        error: feedback.unwrap_or_else(|| "rejected by the lead".into()),
                    }
                },
            })
        }
        other => bail!(
            "request {} is a {}, which the teammate answers, not the lead",
            other.request_id().unwrap_or("?"),
            other.kind()
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Root;
    use crate::team::{Member, Roster};

    fn team_with(dir: &std::path::Path, members: &[&str]) -> Team {
        let root = Root::new(dir);
        Roster::new(&root, "t").create(None, "/").unwrap();
        for (i, m) in members.iter().enumerate() {
            Roster::new(&root, "t")
                .add_member(Member::teammate(
                    "t",
                    m,
                    crate::team::colors::for_teammate(i),
                    "/",
                ))
                .unwrap();
        }
        Team::new(&root, "t")
    }

    fn plan(from: &str, id: &str) -> Message {
        Message::PlanApprovalRequest(protocol::PlanApprovalRequest {
            from: from.into(),
            timestamp: crate::clock::now_iso(),
            plan_file_path: "/tmp/p.md".into(),
            plan_content: "1. look".into(),
            request_id: id.into(),
        })
    }

    #[test]
    fn a_request_waits_until_its_answer_is_in_the_askers_mail_even_once_consumed() {
        let d = tempfile::tempdir().unwrap();
        let team = team_with(d.path(), &["ann", "bob"]);
        team.send_protocol("ann", LEAD_NAME, &plan("ann", "p-1"), false)
            .unwrap();
        team.send_protocol("bob", LEAD_NAME, &plan("bob", "p-2"), false)
            .unwrap();
        // The lead consumed both (a lead that then ended): still waiting.
        let mb = team.mailbox();
        let keys: Vec<_> = mb
            .read(LEAD_NAME)
            .unwrap()
            .entries
            .iter()
            .map(Entry::key)
            .collect();
        mb.consume(LEAD_NAME, &keys).unwrap();
        let ids = |team: &Team| -> Vec<String> {
            pending(team).unwrap().into_iter().map(|r| r.id).collect()
        };
        assert_eq!(ids(&team), ["p-1", "p-2"]);
        let got = answer(&team, "p-1", true, None, Answerer::User).unwrap();
        assert_eq!((got.to.as_str(), got.approved), ("ann", true));
        assert_eq!(ids(&team), ["p-2"]);
        // The answer consumed by ann still answers it.
        let keys: Vec<_> = mb
            .read("ann")
            .unwrap()
            .entries
            .iter()
            .map(Entry::key)
            .collect();
        mb.consume("ann", &keys).unwrap();
        assert_eq!(ids(&team), ["p-2"]);
        // bob leaves the roster: his request is moot.
        team.roster().remove_member("bob").unwrap();
        assert!(ids(&team).is_empty());
        let e = answer(&team, "p-2", true, None, Answerer::User)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no request \"p-2\" waits"), "{e}");
    }

    #[test]
    fn the_ai_lead_answers_only_when_its_lead_table_approves_and_is_named_for_it() {
        use crate::team::{AiLead, LeadMode, SwarmField};
        let d = tempfile::tempdir().unwrap();
        let team = team_with(d.path(), &["ann"]);
        let set_lead = |approves: bool| {
            team.roster().remove_member(crate::names::AI_LEAD_NAME).ok();
            let mut m = Member::teammate("t", crate::names::AI_LEAD_NAME, "red", "/");
            let how = AiLead {
                mode: LeadMode::Team,
                approves,
            };
            m.set_swarm_field(SwarmField::Lead, serde_json::to_value(how).unwrap());
            team.roster().add_member(m).unwrap();
        };
        set_lead(false);
        team.send_protocol("ann", LEAD_NAME, &plan("ann", "p-1"), false)
            .unwrap();
        let location = crate::session::Location::of(&team.root, &team.name);
        let ai = TeamOps::new(location.clone(), LEAD_NAME).for_ai_lead();
        let e = ai.answer("p-1", true, None).unwrap_err().to_string();
        assert!(
            e.contains("go to the human") && e.contains("approves = true"),
            "{e}"
        );
        assert_eq!(
            pending(&team).unwrap().len(),
            1,
            "still waiting for the human"
        );
        let waiting = pending(&team).unwrap().remove(0);
        set_lead(true);
        let got = ai.answer("p-1", true, None).unwrap();
        assert_eq!(got.by, Answerer::AiLead);
        let rec = answers(&team).unwrap();
        assert_eq!(
            answered_line(&waiting, rec.get("p-1")),
            "the AI lead approved ann's plan"
        );
        assert_eq!(answered_line(&waiting, None), "ann's plan was answered");
        // The human answers as ever, and is said to.
        team.send_protocol("ann", LEAD_NAME, &plan("ann", "p-2"), false)
            .unwrap();
        let human = TeamOps::new(location, LEAD_NAME);
        assert_eq!(human.answer("p-2", false, None).unwrap().by, Answerer::User);
        let rec = answers(&team).unwrap();
        assert_eq!(
            answered_line(&waiting, rec.get("p-2")),
            "you rejected ann's plan"
        );
    }

    #[test]
    fn a_shutdown_request_waits_for_the_teammates_answer_to_the_lead() {
        let d = tempfile::tempdir().unwrap();
        let team = team_with(d.path(), &["ann"]);
        let req = Message::ShutdownRequest(protocol::ShutdownRequest {
            request_id: "shutdown-1@ann".into(),
            from: LEAD_NAME.into(),
            reason: Some("done".into()),
            timestamp: crate::clock::now_iso(),
        });
        team.send_protocol(LEAD_NAME, "ann", &req, false).unwrap();
        let p = pending(&team).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(
            (p[0].kind, p[0].from.as_str(), p[0].to.as_str()),
            (RequestKind::Shutdown, LEAD_NAME, "ann")
        );
        assert!(!p[0].for_lead());
        let e = answer(&team, "shutdown-1@ann", true, None, Answerer::User)
            .unwrap_err()
            .to_string();
        assert!(e.contains("which the teammate answers"), "{e}");
        let no = Message::ShutdownRejected(protocol::ShutdownRejected {
            request_id: "shutdown-1@ann".into(),
            from: "ann".into(),
            reason: "busy".into(),
            timestamp: crate::clock::now_iso(),
        });
        team.send_protocol("ann", LEAD_NAME, &no, false).unwrap();
        assert!(pending(&team).unwrap().is_empty());
    }
}
