//! The AI lead's seat (DESIGN §12): a coding agent that leads the team from
//! a pane of its own, while the TeamsDialog stays the human's seat.
//!
//! The AI lead is a member of the roster named [`AI_LEAD_NAME`] (`lead`),
//! marked `swarmLead` ([`AiLead`]: its mode, whether it answers requests),
//! run by the same runtime as an exec teammate (Claude Code's print mode,
//! Codex or Gemini CLI, each unit of work one resumed turn of its own
//! conversation), with swarm's MCP server in its launch acting as
//! [`LEAD_NAME`](crate::names::LEAD_NAME). What reaches its conversation:
//!
//! - every message addressed to [`LEAD_NAME`](crate::names::LEAD_NAME): the lead process's
//!   supervisor hands each one over to the AI lead's inbox
//!   ([`hand_over`]; once, by message id, so a supervisor that dies in
//!   between never hands one over twice) and keeps acting itself on the
//!   frames it must (shutdown approvals);
//! - the human's messages (`m` on its row, [`TeamOps::tell_ai_lead`]),
//!   from `user`;
//! - a `<task-notification>` ([`Notification`]) when a task completes or
//!   fails and when a teammate dies or is killed, each once
//!   ([`TeamOps::notify_ai_lead`] records what it told).
//!
//! Its runtime takes each batch when it is idle (woken by its inbox at
//! once) and the next one at its next turn when busy, and consumes a
//! message only once its turn has run, so none is lost or given twice.

use super::TeamOps;
use crate::atomic_file;
use crate::config::LeadSpec;
use crate::json_text;
use crate::mailbox::Entry;
use crate::names::AI_LEAD_NAME;
use crate::team::{AiLead, LeadMode, Member, SwarmField, Team};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Who a notification comes from in the AI lead's inbox.
pub const NOTIFIER: &str = "swarm";

/// The instructions an AI lead works by: the coordinator rules of the
/// reference design, in swarm's words and tools.
pub fn instructions(team: &str, mode: LeadMode, approves: bool) -> String {
    let mut s = format!(
        "You are the lead of team {team}, a team of coding agents that swarm runs in terminal \
         panes. You lead it through swarm's MCP tools (mcp server `swarm`): team_status, \
         spawn_teammate, send_message, task_create, task_list, task_get, task_update, \
         shutdown_teammate, kill_teammate, teammate_output and answer_request. Messages from \
         your teammates and from the user, and a <task-notification> when a task completes or \
         fails or a teammate dies, arrive in your conversation by themselves: do not poll for \
         them (do not call read_inbox or wait_for_messages).\n\n\
         How you lead:\n\
         - Plan first, then split the work into tasks a teammate can finish on its own.\n\
         - Give each teammate a self-contained prompt: the files and lines, the error, what to \
         change, how to check it and what to report back. Your teammates never see this \
         conversation: never write \"based on your findings\" or \"as discussed\".\n\
         - Prefer tasks on the board (task_create, with a `command` for a shell teammate) for \
         work that can be checked; send_message for questions and follow-ups.\n\
         - Synthesize what teammates report into your own answer; do not forward their words.\n\
         - Verify before you report: read the teammate's output or the files, run the check.\n\
         - Shut a teammate down (shutdown_teammate) when its work is done; kill_teammate only \
         one that is stuck.\n\
         - When the work is done, say what was done and how it was verified, in a few lines.\n"
    );
    s.push_str(match mode {
        LeadMode::Coordinator => {
            "\nYou are a coordinator: your own tools are the team tools only. You do not read, \
             edit or run anything yourself; a teammate does, and tells you.\n"
        }
        LeadMode::Team => {
            "\nYou may work yourself too (read, edit, run), but delegate whatever a teammate can \
             do in parallel.\n"
        }
    });
    if approves {
        s.push_str(
            "\nTeammates' plan and permission requests come to you: read each, then call \
             answer_request with approve true or false (and feedback when you reject).\n",
        );
    } else {
        s.push_str("\nTeammates' plan and permission requests go to the user, not to you.\n");
    }
    s
}

impl TeamOps {
    /// Puts the AI lead `lead` on the roster, reserved (its pane opens with
    /// the team's other reserved members), unless the team has one; its
    /// prompt, if given, goes to its inbox from `user`: its first turn,
    /// started as soon as its runtime runs. A team that has its AI lead
    /// takes a new prompt as one more message. Returns what was done.
    pub fn apply_lead(&self, lead: &LeadSpec, cwd: &Path) -> Result<Vec<String>> {
        self.require_own("give it an AI lead")?;
        lead.validate()?;
        let agent = lead.agent()?;
        crate::agents::check_available(agent, lead.command.as_deref()).context("the AI lead")?;
        let team = self.team();
        let mut said = Vec::new();
        let roster = team.roster().read()?;
        match roster.member(AI_LEAD_NAME) {
            Some(m) if !m.is_ai_lead() => anyhow::bail!(
                "team {} has a teammate named {AI_LEAD_NAME:?}, which is the AI lead's name; \
                 remove it first",
                team.name
            ),
            Some(_) => {}
            None => {
                let mode = lead.mode()?;
                let mut m =
                    Member::teammate(&team.name, AI_LEAD_NAME, "red", &cwd.to_string_lossy());
                m.agent_type = Some("ai-lead".to_string());
                m.model = lead.model.clone();
                m.prompt = Some(instructions(&team.name, mode, lead.approves));
                m.set_swarm_field(SwarmField::Agent, serde_json::json!(agent.name()));
                if let Some(c) = &lead.command {
                    m.set_swarm_field(SwarmField::Command, serde_json::json!(c));
                }
                m.set_swarm_field(
                    SwarmField::Lead,
                    serde_json::to_value(AiLead {
                        mode,
                        approves: lead.approves,
                    })?,
                );
                team.roster().add_member(m)?;
                // What is done already is not news to it.
                Ledger::start(team)?;
                said.push(format!(
                    "the AI lead ({}) leads team {}",
                    lead.agent, team.name
                ));
            }
        }
        if let Some(p) = lead.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            self.tell_ai_lead(p)?;
        }
        Ok(said)
    }

    /// The team's AI lead, if it has one.
    pub fn ai_lead(&self) -> Result<Option<(Member, AiLead)>> {
        let tf = self.team().roster().read()?;
        let Some(m) = tf.member(AI_LEAD_NAME).filter(|m| m.is_ai_lead()).cloned() else {
            return Ok(None);
        };
        let how = m.ai_lead()?.unwrap_or(AiLead {
            mode: LeadMode::Team,
            approves: false,
        });
        Ok(Some((m, how)))
    }

    /// The user's message to the AI lead (from `user`: the dialog's `m`
    /// on its row, a new `--lead-prompt`).
    pub fn tell_ai_lead(&self, text: &str) -> Result<()> {
        super::mail::check_length(text)?;
        let tf = self.team().roster().read()?;
        self.team()
            .send_text_on(&tf, "user", AI_LEAD_NAME, text, None, false)?;
        Ok(())
    }

    /// Tells the AI lead, once each, what `ns` say (a task that completed
    /// or failed, a teammate that died or was killed). Nothing when the
    /// team has no AI lead; what it was told already is not told again.
    /// Returns how many were told.
    pub fn notify_ai_lead(&self, ns: &[Notification]) -> Result<usize> {
        if ns.is_empty() || self.ai_lead()?.is_none() {
            return Ok(0);
        }
        let team = self.team();
        // One teller at a time (the supervisor, a `swarm kill`): what one
        // told, the other sees told.
        let path = Ledger::path(team)?;
        if let Some(d) = path.parent() {
            atomic_file::ensure_dir(d)?;
        }
        let _lock = atomic_file::FileLock::acquire_dir(
            &atomic_file::lock_dir_for(&path),
            atomic_file::DEFAULT_LOCK_TIMEOUT,
        )?;
        let mut ledger = Ledger::load(team)?;
        let fresh: Vec<&Notification> = ns
            .iter()
            .filter(|n| !ledger.told.contains_key(&n.key()))
            .collect();
        if fresh.is_empty() {
            return Ok(0);
        }
        let tf = team.roster().read()?;
        for n in &fresh {
            team.send_text_on(
                &tf,
                NOTIFIER,
                AI_LEAD_NAME,
                &n.xml(),
                Some(&n.summary),
                true,
            )?;
            ledger.told.insert(n.key(), crate::clock::now_ms());
        }
        ledger.save(team)?;
        Ok(fresh.len())
    }

    /// The tasks that completed or failed since the AI lead was last told,
    /// told now (the supervisor calls this when the board changed).
    pub fn notify_ai_lead_of_tasks(&self) -> Result<usize> {
        if self.ai_lead()?.is_none() {
            return Ok(0);
        }
        let ns: Vec<Notification> = self
            .team()
            .tasks()
            .list()?
            .tasks
            .iter()
            .filter_map(Notification::task)
            .collect();
        self.notify_ai_lead(&ns)
    }

    /// The last three lines `name`'s pane printed with something on
    /// them, escapes stripped, on one line (at most 300 characters): what
    /// a teammate that ended said last.
    pub fn last_words(&self, name: &str) -> Option<String> {
        let text = self.last_output(name);
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let words = lines[lines.len().saturating_sub(3)..].join(" | ");
        (!words.is_empty()).then(|| words.chars().take(300).collect())
    }

    /// The last lines `name`'s pane printed (for a notification), or
    /// nothing when none were recorded.
    pub fn last_output(&self, name: &str) -> String {
        let Ok(path) = self.team().root.output(&self.team().name, name) else {
            return String::new();
        };
        match std::fs::read(&path) {
            Ok(b) => super::output::last_lines(&b[b.len().saturating_sub(16 * 1024)..], 20),
            Err(_) => String::new(),
        }
    }
}

/// Hands the lead's plain messages over to the AI lead's inbox, each once
/// (a message already in its inbox or history, by id, is not handed again):
/// the supervisor calls this before it consumes them. Returns how many
/// were handed over.
pub fn hand_over(team: &Team, entries: &[Entry]) -> Result<usize> {
    if entries.is_empty() {
        return Ok(0);
    }
    let mb = team.mailbox();
    let mut seen: std::collections::HashSet<String> = mb
        .read(AI_LEAD_NAME)?
        .entries
        .iter()
        .chain(mb.history(AI_LEAD_NAME)?.iter())
        .filter_map(|e| e.msg_id.clone())
        .collect();
    let fresh: Vec<Entry> = entries
        .iter()
        .filter(|e| e.msg_id.as_ref().is_none_or(|id| seen.insert(id.clone())))
        .cloned()
        .collect();
    if fresh.is_empty() {
        return Ok(0);
    }
    let n = fresh.len();
    for r in mb.append_all(AI_LEAD_NAME, fresh)? {
        r?;
    }
    Ok(n)
}

/// What happened, for the AI lead: `<task-notification>` (reference §10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// A task's id, or `agent-<name>` for a teammate.
    pub id: String,
    /// `completed`, `failed` or `killed`.
    pub status: &'static str,
    pub summary: String,
    /// The teammate's reply or the task's last output lines (bounded).
    pub result: String,
}

/// The most characters of a notification's result.
const RESULT_MAX: usize = 4000;

impl Notification {
    /// A task that completed or failed, with its output's tail.
    pub fn task(t: &crate::tasks::Task) -> Option<Notification> {
        let failed = t.failed();
        let status = match (t.status, failed) {
            (crate::tasks::Status::Completed, _) => "completed",
            (_, true) => "failed",
            _ => return None,
        };
        let by = t.owner.as_deref().unwrap_or("a teammate");
        let output = t
            .metadata
            .as_ref()
            .and_then(|m| m.get("output").or_else(|| m.get("lastFailure")))
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .unwrap_or_default();
        Some(Notification {
            id: t.id.clone(),
            status,
            summary: format!("Task #{} \"{}\" {status} ({by})", t.id, t.subject),
            result: output,
        })
    }

    /// A teammate that died (`killed`: ended by a signal or a kill).
    pub fn member(name: &str, status: &'static str, how: &str, output: String) -> Notification {
        Notification {
            id: format!("agent-{name}"),
            status,
            summary: format!("Teammate {name} {how}"),
            result: output,
        }
    }

    /// What the ledger remembers it by.
    fn key(&self) -> String {
        format!("{}:{}", self.id, self.status)
    }

    /// The message text.
    pub fn xml(&self) -> String {
        let mut result = crate::text::escape_text(&self.result).into_owned();
        if result.chars().count() > RESULT_MAX {
            let skip = result.chars().count() - RESULT_MAX;
            result = format!("…{}", result.chars().skip(skip).collect::<String>());
        }
        let esc = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        format!(
            "<task-notification><task-id>{}</task-id><status>{}</status><summary>{}</summary>\
             <result>{}</result></task-notification>",
            esc(&self.id),
            self.status,
            esc(&self.summary),
            esc(&result)
        )
    }
}

/// What the AI lead was told already (`<state>/ai-lead.json`), so a lead
/// process that restarts never tells it twice.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Ledger {
    told: BTreeMap<String, u64>,
}

impl Ledger {
    fn path(team: &Team) -> Result<std::path::PathBuf> {
        Ok(team.root.state_dir(&team.name)?.join("ai-lead.json"))
    }

    fn load(team: &Team) -> Result<Ledger> {
        let path = Self::path(team)?;
        Ok(match atomic_file::read_optional(&path)? {
            None => Ledger::default(),
            Some(b) => json_text::parse_lenient(&b).unwrap_or_default(),
        })
    }

    /// A new AI lead: the tasks already completed or failed are not news.
    fn start(team: &Team) -> Result<()> {
        let mut l = Ledger::default();
        let now = crate::clock::now_ms();
        for t in team.tasks().list()?.tasks {
            if let Some(n) = Notification::task(&t) {
                l.told.insert(n.key(), now);
            }
        }
        l.save(team)
    }

    fn save(&self, team: &Team) -> Result<()> {
        let path = Self::path(team)?;
        if let Some(d) = path.parent() {
            atomic_file::ensure_dir(d)?;
        }
        atomic_file::write_atomic(&path, &json_text::to_pretty(self))?;
        Ok(())
    }
}
