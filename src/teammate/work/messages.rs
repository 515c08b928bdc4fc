//! The message unit of a teammate runtime: a batch of plain messages run
//! through the agent (one run per message when the agent takes one at a
//! time), a reply to each sender, and the reply's text fitted to the inbox.

use super::{Flow, REPLY_SLACK, Runtime, clip};
use crate::agents::process::{Ended, Finished, tail_of};
use crate::mailbox::{Entry, MAX_TEXT_BYTES};
use crate::teammate::inflight::{MessageRef, Outcome, Post, Unit};
use anyhow::{Result, anyhow};
use std::collections::BTreeSet;

impl Runtime {
    /// Runs a batch of messages. The roster's `isActive` is set once the
    /// agent runs (`turn::Started`), not before: nothing needs it first.
    pub(super) fn handle_messages(&mut self, batch: Vec<Entry>) -> Result<Flow> {
        let units: Vec<Vec<Entry>> = if self.runner.one_message_per_run() {
            batch.into_iter().map(|e| vec![e]).collect()
        } else {
            vec![batch]
        };
        for unit in units {
            let senders: BTreeSet<&str> = unit.iter().map(|e| e.from.as_str()).collect();
            let who = senders.iter().copied().collect::<Vec<_>>().join(", ");
            let first = unit[0].text.lines().next().unwrap_or("");
            let refs = unit
                .iter()
                .map(|e| {
                    let summary = e
                        .summary
                        .as_deref()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| e.text.lines().next().unwrap_or(""));
                    MessageRef::of(e, clip(summary, 80))
                })
                .collect();
            self.run_recorded(Unit::Messages { messages: refs })?;
            self.say(&format!("▶ message from {who}: {}", clip(first, 100)));
            let (mode, pane) = (self.mode.clone(), self.pane.clone());
            let (runner, mut started) = self.runner_and_started();
            let f = runner.run_messages(&unit, mode.as_deref(), pane, &mut || started.call());
            if let Ended::NotStarted { .. } = f.ended {
                // The agent never saw them: they stay unread, for a later
                // try or a runtime that can start it (nothing is consumed
                // unprocessed).
                self.forget();
                if f.ended.may_start_later() {
                    return Err(anyhow!("the agent {}", f.ended.describe()));
                }
                return Ok(Flow::Crashed {
                    task: None,
                    reason: format!("the agent {}", f.ended.describe()),
                });
            }
            let reply = reply_text(&f);
            // The AI lead's turn is shown in its pane and answers through
            // its tools (send_message): nobody gets its output as a reply.
            let to: Vec<&&str> = if self.member.is_ai_lead() {
                Vec::new()
            } else {
                senders.iter().collect()
            };
            let posts = to
                .into_iter()
                .map(|to| Post::Send {
                    to: to.to_string(),
                    text: reply.clone(),
                    summary: format!("reply: {}", clip(first, 80)),
                    force: false,
                })
                .collect();
            let crash = f
                .ended
                .is_crash()
                .then(|| format!("the agent {}", f.ended.describe()));
            let outcome = Outcome {
                task: None,
                failure: None,
                result: reply,
            };
            self.ran(posts, outcome, crash)?;
            let flow = self.settle()?;
            self.say(&format!(
                "✔ replied to {who} ({}, {:.1} s)",
                f.ended.describe(),
                f.elapsed.as_secs_f64()
            ));
            if !matches!(flow, Flow::Continue) {
                return Ok(flow);
            }
            self.start_failed()?;
        }
        Ok(Flow::Continue)
    }
}

/// The reply to a message: the run's output (tail, fitted to the inbox text
/// limit with a note when cut), and the exit status when it was not 0.
fn reply_text(f: &Finished) -> String {
    let footer = if f.ended.success() {
        String::new()
    } else {
        format!("[{}]", f.ended.describe())
    };
    let room = MAX_TEXT_BYTES - REPLY_SLACK - footer.len();
    let (tail, cut) = tail_of(&f.output, room);
    let mut text = String::new();
    if cut || f.output_truncated {
        text.push_str(&format!(
            "[output truncated: showing the last {} bytes of {}{} bytes]\n",
            tail.len(),
            if f.output_truncated { "more than " } else { "" },
            f.output.len()
        ));
    }
    text.push_str(tail);
    if text.trim().is_empty() && footer.is_empty() {
        text = "(no output)".into();
    }
    if !footer.is_empty() && !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&footer);
    text
}
