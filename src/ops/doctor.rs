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
}
