//! What `swarm doctor` finds wrong with one team: a doorbell or watcher
//! that does not work, dead members still on the roster, teammates with
//! no live lead. Each problem is one line with a fix that is true for the
//! team: a team swarm did not start is never told to use a swarm command
//! that would change it.

use super::TeamOps;
use crate::dropped::ignore;
use crate::team::locks::{lead_holder, lead_pid_alive};
use crate::team::status::recorded_exit;

impl TeamOps {
    /// The team's problems, one line each (none: all is well).
    pub fn problems(&self) -> Vec<String> {
        let team = self.team();
        let t = &team.name;
        let mut problems = crate::teammate::wake::report(team);
        let Ok(tf) = team.roster().read() else {
            return problems;
        };
        let ours = team.ownership().is_swarm();
        if ours {
            problems.extend(self.unstarted_and_deaf(&tf));
        }
        for m in tf.teammates() {
            let how = match recorded_exit(m) {
                None => continue,
                Some(Some(code)) => format!("exited with code {code}"),
                Some(None) => "ended by a signal".to_string(),
            };
            let fix = if ours {
                format!("`swarm kill {}` removes it", m.name)
            } else {
                "the team's own lead removes it (swarm does not change a team it did not start)"
                    .to_string()
            };
            problems.push(format!("team {t}: {} is dead ({how}); {fix}", m.name));
        }
        if ours
            && tf.teammates().count() > 0
            // A lead file that does not read holds no lead.
            && ignore(lead_holder(team), "reading the lead lock").flatten().is_none()
            && ignore(lead_pid_alive(team), "reading the lead's pid").flatten().is_none()
        {
            problems.push(format!(
                "team {t}: no live lead; `swarm up --team {t}` takes the team back"
            ));
        }
        problems
    }

    /// In a team swarm started: members an interrupted `up` left without a
    /// pane, and runtimes whose pane runs but whose doorbell is gone or
    /// replaced (a send rings nothing then; the runtime makes it again
    /// within a second, so one that stays means the runtime is stuck).
    fn unstarted_and_deaf(&self, tf: &crate::team::TeamFile) -> Vec<String> {
        let team = self.team();
        let t = &team.name;
        let mut lines = Vec::new();
        let mut runtimes = Vec::new();
        for m in tf.teammates() {
            if crate::team::status::never_started(m) {
                lines.push(format!(
                    "team {t}: {} was never started (on the roster, no pane: an `up` was \
                     stopped before it came to it); `swarm up --team {t}` starts it",
                    m.name
                ));
            } else if recorded_exit(m).is_none()
                // Every agent but a plain command runs in swarm's runtime,
                // which owns a doorbell.
                && matches!(crate::agents::Agent::of(m), Ok(a) if a != crate::agents::Agent::Process)
            {
                runtimes.push(m.clone());
            }
        }
        if runtimes.is_empty() {
            return lines;
        }
        // Panes that cannot be looked at from here: nothing said of them.
        let Some(gone) = self.panes_gone(&runtimes) else {
            return lines;
        };
        for (m, gone) in runtimes.iter().zip(gone) {
            let Ok(bell) = team.mailbox().doorbell_path(&m.name) else {
                continue;
            };
            if gone {
                continue;
            }
            if let Some(what) = crate::mailbox::doorbell::problem(&bell) {
                lines.push(format!(
                    "team {t}: {}'s doorbell {} {what}, so sends ring nothing; its runtime \
                     makes it again within a second, so if this stays the runtime is stuck: \
                     `swarm kill {}` and spawn it again",
                    m.name,
                    bell.display(),
                    m.name
                ));
            }
        }
        lines
    }
}
