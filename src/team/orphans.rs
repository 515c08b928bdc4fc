//! Tasks whose owner is provably dead, back on the board. The lead
//! returns a teammate's tasks when it sees its pane die; with no lead
//! running (killed, or `q` outside tmux), a dead owner's task stayed in
//! progress, and no claim could ever take it. A claim that finds nothing
//! (or a task another owns) and every command that reads the board look at
//! the owners of the open tasks first ([`Team::return_tasks_of_the_dead`]),
//! by what the roster records of each ([`verdict`]):
//!
//! - a teammate whose end the roster records (`swarmExit`, see
//!   [`super::status::recorded_exit`]) is dead;
//! - a teammate whose recorded pid and start time (`swarmPid`,
//!   `swarmPidStart`: its pane's first process, the runtime) name no live
//!   process is dead once its pane is seen gone as well; an in-process
//!   pane *is* that process, so its end is the pane's. With no pid record,
//!   its pane alone decides.
//!
//! Nothing else is: the lead (`team-lead`, a person at a shell); an owner not on the roster (a person claiming with `--as`, a teammate another tool added); a teammate
//! with no pane recorded yet (starting, or not yet registered: its runtime
//! may already run and hold a claim); a teammate whose pane cannot be
//! looked at from here (no backend reachable). Those may be alive, and a
//! task of an owner that may be alive is never taken from it: two
//! teammates would run it.
//!
//! A task goes back only if, under its lock, it is still exactly as the
//! look at the board found it (`TaskStore::unassign_if_unchanged`): one a
//! new incarnation of the name took meanwhile is left alone. Only a team
//! swarm started is changed.

use super::status::recorded_exit;
use super::{Member, Team, TeamFile};
use crate::tasks::{Status, Task};
use anyhow::Result;
use std::collections::BTreeMap;

/// What the roster says of an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Provably dead, and why (one phrase: "ended, as the roster records").
    Dead(String),
    /// Its runtime's process is gone (or it has no pid record): dead only
    /// if its pane is seen gone too.
    PaneDecides,
    /// Alive, or it may be.
    Alive,
}

/// What the roster `roster` says of `owner`, a task's owner.
pub fn verdict(roster: &TeamFile, owner: &str) -> Verdict {
    // An owner not on the roster may be anyone (a person's `--as`, a
    // teammate another tool added, one that removed itself): never taken
    // for dead. A member swarm removed had its tasks given back then.
    let Some(m) = roster.member(owner) else {
        return Verdict::Alive;
    };
    if m.is_lead() {
        return Verdict::Alive;
    }
    if let Some(code) = recorded_exit(m) {
        return Verdict::Dead(match code {
            Some(c) => format!("ended (exit {c}), as the roster records"),
            None => "ended, as the roster records".to_string(),
        });
    }
    // No pane yet: it is starting, or its pane is not registered yet.
    if m.tmux_pane_id.is_empty() || m.tmux_pane_id == "leader" {
        return Verdict::Alive;
    }
    let in_process = m.backend_type.as_deref() == Some("in-process");
    match m.pid() {
        Ok(Some((pid, start))) if process_gone(pid, start.as_deref()) => {
            if in_process {
                Verdict::Dead(format!("is gone (its process, pid {pid}, ended)"))
            } else {
                Verdict::PaneDecides
            }
        }
        Ok(Some(_)) => Verdict::Alive,
        // An in-process pane is reached only through its pid.
        Ok(None) | Err(_) if in_process => Verdict::Alive,
        Ok(None) | Err(_) => Verdict::PaneDecides,
    }
}

/// Whether the process `pid` that started at `start` is gone (a zombie is
/// gone). Without a start time a live pid may be another process by now;
/// it is still taken as alive (never a false death).
pub(crate) fn process_gone(pid: u32, start: Option<&str>) -> bool {
    use swarm_backends::process::{is_zombie, same_process_alive, start_time};
    if pid == std::process::id() {
        return false;
    }
    match start {
        // By the start time, not a signal: `same_process_alive` refuses to
        // signal this process's own group leader (a command run by a
        // teammate's runtime is in its group).
        Some(s) => start_time(pid).as_deref() != Some(s) || is_zombie(pid) == Some(true),
        None => !same_process_alive(pid, None),
    }
}

/// A task given back to the board because its owner is dead.
#[derive(Debug, Clone, PartialEq)]
pub struct Returned {
    /// The task as written (pending, no owner).
    pub task: Task,
    pub owner: String,
    /// Why the owner is dead: "bob ended (exit 3), as the roster records".
    pub why: String,
}

impl Returned {
    /// One line for people: "task 3 (build) is back on the board: bob …".
    pub fn line(&self) -> String {
        format!(
            "task {} ({}) is back on the board: {}",
            self.task.id, self.task.subject, self.why
        )
    }
}

impl Team {
    /// Gives back to the board every open task of `board` (a look at it)
    /// whose owner is provably dead (see the module). `panes_gone` is asked
    /// about the teammates whose pane decides, once for all of them: for
    /// each, whether its pane is gone; `None` when their panes cannot be
    /// looked at from here (then they may be alive). The roster is read
    /// only when some open task has an owner. A team swarm did not start
    /// is never changed.
    pub fn return_tasks_of_the_dead(
        &self,
        board: &[Task],
        panes_gone: impl FnOnce(&[Member]) -> Option<Vec<bool>>,
    ) -> Result<Vec<Returned>> {
        if !board.iter().any(owned_open) || !self.ownership().is_swarm() {
            return Ok(Vec::new());
        }
        let roster = self.roster().read()?;
        let dead = dead_owners(&roster, board, panes_gone);
        self.give_back(board, &dead)
    }

    /// Gives back the open tasks of `board` whose owner `dead` names (with
    /// why it is dead), each only if it is still as `board` shows it.
    pub fn give_back(
        &self,
        board: &[Task],
        dead: &BTreeMap<String, String>,
    ) -> Result<Vec<Returned>> {
        if dead.is_empty() || !self.ownership().is_swarm() {
            return Ok(Vec::new());
        }
        let store = self.tasks();
        let mut out = Vec::new();
        for seen in board.iter().filter(|t| owned_open(t)) {
            let owner = seen.owner.as_deref().unwrap_or_default();
            let Some(why) = dead.get(owner) else {
                continue;
            };
            if let Some(task) = store.unassign_if_unchanged(seen)? {
                let r = Returned {
                    task,
                    owner: owner.to_string(),
                    why: format!("its owner {owner} {why}"),
                };
                tracing::info!(team = %self.name, task = %r.task.id, owner = %r.owner, "{}", r.line());
                out.push(r);
            }
        }
        Ok(out)
    }
}

/// A task not completed that someone owns.
fn owned_open(t: &Task) -> bool {
    t.status != Status::Completed && t.owner.is_some()
}

/// The owners of `board`'s open tasks that are provably dead by `roster`
/// (and, for those whose pane decides, by `panes_gone`), each with why.
/// Reads nothing but `/proc`.
pub fn dead_owners(
    roster: &TeamFile,
    board: &[Task],
    panes_gone: impl FnOnce(&[Member]) -> Option<Vec<bool>>,
) -> BTreeMap<String, String> {
    let mut dead = BTreeMap::new();
    let mut ask: Vec<Member> = Vec::new();
    for t in board.iter().filter(|t| owned_open(t)) {
        let owner = t.owner.as_deref().unwrap_or_default();
        if dead.contains_key(owner) || ask.iter().any(|m| m.name == owner) {
            continue;
        }
        match verdict(roster, owner) {
            Verdict::Dead(why) => {
                dead.insert(owner.to_string(), why);
            }
            Verdict::PaneDecides => ask.extend(roster.member(owner).cloned()),
            Verdict::Alive => {}
        }
    }
    if !ask.is_empty()
        && let Some(gone) = panes_gone(&ask)
    {
        for (m, gone) in ask.into_iter().zip(gone) {
            if gone {
                let why = "is gone (its runtime and its pane ended)".to_string();
                dead.insert(m.name, why);
            }
        }
    }
    dead
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Root;
    use crate::tasks::{NewTask, TaskUpdate};
    use crate::team::{ExitRecord, Roster, SwarmField};
    use serde_json::json;

    /// Team t (swarm's) with teammates, and a task owned by each, in
    /// progress.
    fn team_with(names: &[&str]) -> (tempfile::TempDir, Team) {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path());
        Roster::new(&root, "t").create(None, "/").unwrap();
        let team = Team::new(&root, "t");
        for n in names {
            let mut m = Member::teammate("t", n, "blue", "/");
            m.tmux_pane_id = format!("%{}", n.len());
            m.backend_type = Some("tmux".into());
            team.roster().add_member(m).unwrap();
            let t = team
                .tasks()
                .create(NewTask {
                    subject: format!("{n}'s work"),
                    ..Default::default()
                })
                .unwrap();
            team.tasks()
                .update(
                    &t.id,
                    TaskUpdate {
                        owner: Some(Some(n.to_string())),
                        status: Some(Status::InProgress),
                        ..Default::default()
                    },
                    "team-lead",
                )
                .unwrap();
        }
        (dir, team)
    }

    fn set(team: &Team, name: &str, f: impl FnOnce(&mut Member)) {
        team.roster().update_member(name, f).unwrap();
    }

    fn board(team: &Team) -> Vec<Task> {
        team.tasks().list().unwrap().tasks
    }

    fn owner_of(team: &Team, subject: &str) -> Option<String> {
        board(team)
            .into_iter()
            .find(|t| t.subject == subject)
            .and_then(|t| t.owner)
    }

    /// A pid that ran and is gone: a child that exited and was waited for.
    fn dead_pid() -> (u32, String) {
        let mut c = std::process::Command::new("sh")
            .args(["-c", "sleep 5"])
            .spawn()
            .unwrap();
        let pid = c.id();
        let start = swarm_backends::process::start_time(pid).expect("a start time");
        c.kill().unwrap();
        c.wait().unwrap();
        (pid, start)
    }

    /// Issue 24, item 8: with no lead running, a dead owner's task stayed
    /// in progress. Its end recorded, or its runtime and pane both gone:
    /// back on the board. Its runtime gone but its pane not looked at (no
    /// backend from here), or alive, or not started, or not on the roster
    /// (a `--as` claimant; the race in tests/concurrency.rs): kept.
    #[test]
    fn a_task_goes_back_only_when_its_owner_is_provably_dead() {
        let (_dir, team) = team_with(&["gone", "ended", "killed", "unseen", "alive", "new"]);
        team.roster().remove_member("gone").unwrap();
        set(&team, "ended", |m| {
            m.set_exit(Some(&ExitRecord {
                code: Some(3),
                at: 1,
                lost: None,
                said: None,
            }))
        });
        let (pid, start) = dead_pid();
        for n in ["killed", "unseen"] {
            set(&team, n, |m| {
                m.set_swarm_field(SwarmField::Pid, json!(pid));
                m.set_swarm_field(SwarmField::PidStart, json!(start));
            });
        }
        let me = std::process::id();
        let my_start = swarm_backends::process::start_time(me).unwrap();
        set(&team, "alive", |m| {
            m.set_swarm_field(SwarmField::Pid, json!(me));
            m.set_swarm_field(SwarmField::PidStart, json!(my_start));
        });
        set(&team, "new", |m| m.tmux_pane_id.clear());

        let mut asked = Vec::new();
        let returned = team
            .return_tasks_of_the_dead(&board(&team), |ms| {
                asked = ms.iter().map(|m| m.name.clone()).collect();
                Some(ms.iter().map(|m| m.name == "killed").collect())
            })
            .unwrap();
        assert_eq!(asked, ["killed", "unseen"], "only their panes decide");
        let mut back: Vec<&str> = returned.iter().map(|r| r.owner.as_str()).collect();
        back.sort();
        assert_eq!(back, ["ended", "killed"]);
        for r in &returned {
            assert_eq!(
                (r.task.status, r.task.owner.as_deref()),
                (Status::Pending, None)
            );
            assert!(r.line().contains(&r.owner), "{}", r.line());
        }
        for n in ["gone", "unseen", "alive", "new"] {
            assert_eq!(owner_of(&team, &format!("{n}'s work")).as_deref(), Some(n));
        }

        // No backend to look at the panes with: nobody else is dead.
        let again = team
            .return_tasks_of_the_dead(&board(&team), |_| None)
            .unwrap();
        assert!(again.is_empty(), "{again:?}");
    }

    /// A task written after the look at the board (a new incarnation of
    /// the name claimed it again) is not taken from it.
    #[test]
    fn a_task_changed_since_the_look_stays_with_its_owner() {
        let (_dir, team) = team_with(&["bob"]);
        let look = board(&team);
        team.roster().remove_member("bob").unwrap();
        team.tasks()
            .update(
                "1",
                TaskUpdate {
                    description: Some("claimed again meanwhile".into()),
                    ..Default::default()
                },
                "bob",
            )
            .unwrap();
        let returned = team.return_tasks_of_the_dead(&look, |_| None).unwrap();
        assert!(returned.is_empty(), "{returned:?}");
        assert_eq!(owner_of(&team, "bob's work").as_deref(), Some("bob"));
    }

    /// The lead is a person at a shell: its tasks are never taken.
    #[test]
    fn the_leads_tasks_are_never_taken() {
        let (_dir, team) = team_with(&[]);
        let t = team
            .tasks()
            .create(NewTask {
                subject: "mine".into(),
                ..Default::default()
            })
            .unwrap();
        team.tasks()
            .claim(Some(&t.id), crate::names::LEAD_NAME, false)
            .unwrap();
        let returned = team
            .return_tasks_of_the_dead(&board(&team), |_| Some(vec![true]))
            .unwrap();
        assert!(returned.is_empty(), "{returned:?}");
    }
}
