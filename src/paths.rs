//! The on-disk layout under the state root: the directories and the
//! files swarm names there come from [`Root`], except these, named by their
//! owners below a path taken from here:
//!
//! - a file's lock directory `<file>.lock` and its sidecar
//!   `<file>.lock.flock`: the lock protocol (`atomic_file::lock_dir_for`,
//!   `sidecar_for`), which [`Root::config_lock`] repeats for the roster;
//! - a temp file `<file>.tmp.<8 hex>` and a quarantined copy
//!   `<file>.corrupt-<ms>` beside a file: `atomic_file`; a deleted team's
//!   directory renamed `….deleted-<uuid>` first: `team::roster`;
//! - in a directory named here, a file named by its owner: the AI lead's
//!   ledger `ai-lead.json` in the team's state (`ops::ai_lead`), a signing
//!   key `keys/<name>.key` (`mailbox::signing`), `swarm mcp`'s log
//!   `logs/mcp-<member>.log` (`commands::mcp`); and the doorbells
//!   (`<member>.wake`) and polling notes (`<member>.polling`) that
//!   `teammate::wake` finds by their suffix in the directory of
//!   [`Root::team_watcher_lock`];
//! - Claude Code's own `projects/` under its configuration directory, which
//!   `agents::claude` reads for a session's transcript.
//!
//! ```text
//! <root>/teams/<S1(team)>/config.json              roster (Claude Code's TeamFile)
//! <root>/teams/<S1(team)>/config.json.lock/        roster lock directory
//! <root>/teams/<S2(team)>/inboxes/<S2(name)>.json  one inbox per member
//! <root>/tasks/<S2(team)>/<id>.json                one file per task
//! <root>/tasks/<S2(team)>/.highwatermark           highest id ever used
//! <root>/tasks/<S2(team)>/.lock, .lock.lock/       task-list lock
//! <root>/swarm/.board/<S2(team)>.index, .issued    board index (a cache), highest
//!                                                  task id swarm ever issued
//! <root>/swarm/<S2(team)>/                         swarm's own state: owner.json
//!                                                  (swarm created the team),
//!                                                  session.json, lead.lock,
//!                                                  lifecycle.lock, history/,
//!                                                  logs/, keys/, output/, pids/,
//!                                                  runtime/, departed/,
//!                                                  claude-config/, scratchpad/,
//!                                                  spool/<S2(name)>/ (sends waiting
//!                                                  for an inbox's group commit),
//!                                                  hosts.json (its [[host]]s),
//!                                                  away/<host>.away (a host that
//!                                                  did not answer)
//! <root>/swarm/.board/<S2(team)>.index, .look      the board index and its look lock
//! <root>/swarm-results/<S2(team)>-<time>/          a scratchpad `swarm down` kept
//! <root>/worktrees/<team>/<name>/                  a teammate's git worktree (kept
//!                                                  when its team is deleted)
//! <root>/worktrees/<team>/<name>.retire-lock       held while it is retired
//! ```
//!
//! Root = `--home` / `$SWARM_HOME`, else `$CLAUDE_CONFIG_DIR`, else
//! `~/.claude`. swarm's own state lives outside `teams/` because a Claude Code
//! lead removes its team directory when it exits. Every name passes through
//! a sanitiser before it becomes a component, so no input escapes the root.
//!
//! The root itself may be a symbolic link (`~/.claude` → a disk with room):
//! [`Root::new`] resolves it once, to its real path, and every path built
//! here starts from that. Below the root nothing is followed: a link, or a
//! directory other users can write or own, where a swarm file or directory
//! belongs is refused where it is used (`atomic_file::check_dir`), and
//! [`Root::problems`] lists every one of them.

use crate::names::{NameError, component, sanitize_s1, sanitize_s2};
use std::path::{Path, PathBuf};

/// The state root and every path under it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    dir: PathBuf,
}

/// Where the root came from, for `swarm doctor` and errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootSource {
    Flag,
    ClaudeConfigDir,
    Home,
}

impl Root {
    /// The root at `dir`, resolved to its real path: a link the user made
    /// for the root itself (or any of its ancestors) is followed here, once,
    /// so nothing below needs to be. The part of `dir` that does not exist
    /// yet is kept as given.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Root {
            dir: real_path(&absolute(&dir.into())),
        }
    }

    /// Everything under the root that swarm would refuse to use, for
    /// `swarm doctor`: the root or one of its ancestors if it is unsafe
    /// (then nothing below is looked at), else every link, directory others
    /// can write or another user owns, and file others can write, under
    /// `teams/`, `tasks/` and `swarm/`, sorted by path. Each names the path
    /// and the fix (`chmod 700 DIR`, remove the link) in its `Display`.
    /// Empty when all is well (or nothing exists yet).
    pub fn problems(&self) -> Vec<crate::atomic_file::UnsafePath> {
        if let Some(p) = crate::atomic_file::first_problem(&self.dir) {
            return vec![p];
        }
        let mut found: Vec<_> = [self.teams_dir(), self.tasks_root(), self.dir.join("swarm")]
            .iter()
            .flat_map(|d| match std::fs::symlink_metadata(d) {
                Err(_) => Vec::new(),
                Ok(meta) => match crate::atomic_file::problem_of(&meta, true) {
                    Some(problem) => vec![crate::atomic_file::UnsafePath::new(d, problem)],
                    None => crate::atomic_file::problems_below(d),
                },
            })
            .collect();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        found
    }

    /// Resolves the root from `--home`/`SWARM_HOME` (clap folds the two),
    /// `CLAUDE_CONFIG_DIR` and `HOME`, in that order. Empty values count as
    /// unset.
    pub fn resolve(
        flag: Option<&Path>,
        claude_config_dir: Option<&str>,
        home: Option<&Path>,
    ) -> anyhow::Result<(Self, RootSource)> {
        if let Some(f) = flag.filter(|p| !p.as_os_str().is_empty()) {
            return Ok((Root::new(absolute(f)), RootSource::Flag));
        }
        if let Some(c) = claude_config_dir.filter(|s| !s.is_empty()) {
            return Ok((
                Root::new(absolute(Path::new(c))),
                RootSource::ClaudeConfigDir,
            ));
        }
        match home.filter(|p| !p.as_os_str().is_empty()) {
            Some(h) => Ok((Root::new(absolute(h).join(".claude")), RootSource::Home)),
            None => anyhow::bail!(
                "cannot find the state root: set --home DIR, SWARM_HOME or CLAUDE_CONFIG_DIR (HOME is unset)"
            ),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn teams_dir(&self) -> PathBuf {
        self.dir.join("teams")
    }

    pub fn tasks_root(&self) -> PathBuf {
        self.dir.join("tasks")
    }

    /// `teams/<S1(team)>`: holds `config.json`.
    pub fn team_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self
            .teams_dir()
            .join(component("team", team, sanitize_s1(team))?))
    }

    pub fn config(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.team_dir(team)?.join("config.json"))
    }

    /// `config.json.lock`, the roster's lock directory (`realpath:false`).
    pub fn config_lock(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.team_dir(team)?.join("config.json.lock"))
    }

    /// `teams/<S2(team)>/inboxes`.
    pub fn inboxes_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        let t = component("team", team, sanitize_s2(team))?;
        Ok(self.teams_dir().join(t).join("inboxes"))
    }

    pub fn inbox(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self.inboxes_dir(team)?.join(format!("{m}.json")))
    }

    /// `tasks/<S2(team)>`: the task list of a team (its id equals the team name).
    pub fn tasks_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self
            .tasks_root()
            .join(component("team", team, sanitize_s2(team))?))
    }

    /// `tasks/<team>/<id>.json`. Ids are validated by the task store; this
    /// sanitises anyway.
    pub fn task(&self, team: &str, id: &str) -> Result<PathBuf, NameError> {
        let id = component("task id", id, sanitize_s2(id))?;
        Ok(self.tasks_dir(team)?.join(format!("{id}.json")))
    }

    pub fn highwatermark(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.tasks_dir(team)?.join(".highwatermark"))
    }

    /// The task-list lock: Claude Code creates the empty file `.lock` and
    /// locks it as the directory `.lock.lock`.
    pub fn task_list_lock_file(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.tasks_dir(team)?.join(".lock"))
    }

    /// swarm's own per-team state, outside `teams/`.
    pub fn state_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        let t = component("team", team, sanitize_s2(team))?;
        Ok(self.dir.join("swarm").join(t))
    }

    /// The task board index (`tasks::index`): swarm's own, outside the
    /// task directory so that writing it never changes that directory, and
    /// outside the team's state (`<root>/swarm/.board/`; no team's state
    /// directory has a dot in its name), so that a process saving it while
    /// the team is deleted never leaves that directory half removed.
    pub fn board_index(&self, team: &str) -> Result<PathBuf, NameError> {
        let t = component("team", team, sanitize_s2(team))?;
        Ok(self
            .dir
            .join("swarm")
            .join(".board")
            .join(format!("{t}.index")))
    }

    /// The highest task id swarm ever issued in the team (`tasks::store`),
    /// beside the board index: a `.highwatermark` found corrupt is rebuilt
    /// from the task files and this, so a deleted id never comes back. Not
    /// in the task directory, so a tool that mangles that directory's mark
    /// does not reach it; removed with the team, as the index is.
    pub fn issued_mark(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.board_index(team)?.with_extension("issued"))
    }

    /// Held (an OS lock) by the one process refreshing the board index for
    /// the claims waiting on it; beside the index.
    pub fn board_look_lock(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.board_index(team)?.with_extension("look"))
    }

    /// A teammate's git worktree: outside the team's state, which `swarm
    /// down` deletes, because a worktree holding work outlives its team.
    /// Only names that pass the member and team rules become components.
    pub fn worktree(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        crate::names::validate_team(team)?;
        crate::names::validate_member(member)?;
        Ok(self.dir.join("worktrees").join(team).join(member))
    }

    /// The OS lock held while a teammate's worktree is retired (kept,
    /// saved or removed), beside the worktree: `swarm shutdown` and the
    /// lead may both act on one shutdown approval.
    pub fn worktree_lock(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let wt = self.worktree(team, member)?;
        Ok(wt.with_file_name(format!("{member}.retire-lock")))
    }

    /// Bounded history of messages a member has consumed.
    pub fn history(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self
            .state_dir(team)?
            .join("history")
            .join(format!("{m}.json")))
    }

    /// Sends waiting to be merged into `member`'s inbox (see `mailbox::spool`).
    pub fn spool(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self.state_dir(team)?.join("spool").join(m))
    }

    pub fn logs_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("logs"))
    }

    pub fn keys_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("keys"))
    }

    pub fn output(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self
            .state_dir(team)?
            .join("output")
            .join(format!("{m}.log")))
    }

    pub fn scratchpad(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("scratchpad"))
    }

    /// Where `swarm down` moves a team's scratchpad, so the results its
    /// teammates left outlive the team: one directory per `down`, named by
    /// the team and `stamp` (a UTC time); the user deletes it.
    pub fn kept_scratchpad(&self, team: &str, stamp: &str) -> Result<PathBuf, NameError> {
        let t = component("team", team, sanitize_s2(team))?;
        Ok(self.dir.join("swarm-results").join(format!("{t}-{stamp}")))
    }

    /// The record that swarm created the team (see `team::owner`): a team
    /// without it, or whose roster names another lead session, is not
    /// swarm's to change.
    pub fn owner_record(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("owner.json"))
    }

    /// A teammate that left but can come back (`ops::revive`): its roster
    /// entry as it was.
    pub fn departed(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self
            .state_dir(team)?
            .join("departed")
            .join(format!("{m}.json")))
    }

    /// The team's session record: which backend, server and session it
    /// lives on, and the lead's pane (see `session`).
    pub fn session_record(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("session.json"))
    }

    /// The team's other machines, as its spec's `[[host]]`s last named them
    /// (`swarm up SPEC`; DESIGN §13).
    pub fn hosts_record(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("hosts.json"))
    }

    /// Where the team's processes note a host that did not answer
    /// (`<host>.away`, `swarm_backends::hosted`), so the others do not ask
    /// it again meanwhile.
    pub fn away_dir(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("away"))
    }

    /// Held (an OS lock) by the team's lead for its whole life; holds the
    /// lead's pid and start time.
    pub fn lead_lock(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("lead.lock"))
    }

    /// Held (an OS lock) while `up` or `spawn` changes which panes the
    /// team has, so two of them never race.
    pub fn lifecycle_lock(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("lifecycle.lock"))
    }

    /// Held (an OS lock) by `swarm down` while it takes the team down
    /// (`team::locks::DownLock`).
    pub fn down_lock(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("down.lock"))
    }

    /// Created by the backend once `member`'s new pane is set up; its
    /// program waits for it (`swarm pane-exec --ready`).
    pub fn ready_file(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self
            .state_dir(team)?
            .join("output")
            .join(format!("{m}.ready")))
    }

    /// Where the pane of `member` records its pid, for backends that cannot
    /// list their panes (iTerm2).
    pub fn pid_file(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self.state_dir(team)?.join("pids").join(format!("{m}.pid")))
    }

    /// The lead's log.
    pub fn lead_log(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.logs_dir(team)?.join("lead.log"))
    }

    /// The log of `member`'s teammate runtime.
    pub fn teammate_log(&self, team: &str, member: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self.logs_dir(team)?.join(format!("teammate-{m}.log")))
    }

    /// A file of `member`'s runtime under `<state>/runtime/`: `inflight.json`
    /// (the unit of work in flight) or `prompt` (a prompt too long for argv).
    pub fn runtime_file(&self, team: &str, member: &str, ext: &str) -> Result<PathBuf, NameError> {
        let m = member_component(member)?;
        Ok(self
            .state_dir(team)?
            .join("runtime")
            .join(format!("{m}.{ext}")))
    }

    /// The team watcher's lock (`<state>/runtime/.team-watcher.lock`): the
    /// one teammate runtime holding it watches the team's files for all
    /// (see `teammate::wake`). Never a member's file: member stems never
    /// start with a dot.
    pub fn team_watcher_lock(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self
            .state_dir(team)?
            .join("runtime")
            .join(".team-watcher.lock"))
    }

    /// What the team watcher records about itself (pid, member, whether and
    /// why it polls), beside its lock.
    pub fn team_watcher_status(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self
            .state_dir(team)?
            .join("runtime")
            .join(".team-watcher.json"))
    }

    /// The Claude Code configuration directory swarm builds for the team's
    /// Claude Code teammates when the root is not the user's own Claude
    /// config dir (see `agents::claude`): links to the user's files, and
    /// `teams`/`tasks` linked to this root's.
    pub fn claude_config(&self, team: &str) -> Result<PathBuf, NameError> {
        Ok(self.state_dir(team)?.join("claude-config"))
    }
}

/// The file-name part of `member`'s files: the name itself when it is
/// plain (every name swarm creates, every name Claude Code writes), else a
/// reversible `%XX` encoding, so two distinct names never share a file
/// (see `team::names::member_file_stem`).
fn member_component(member: &str) -> Result<String, NameError> {
    crate::names::member_file_stem(member)
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `p` with its longest existing prefix canonicalized (links followed,
/// `..` resolved) and the rest appended as given.
fn real_path(p: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut cur = p;
    loop {
        if let Ok(real) = std::fs::canonicalize(cur) {
            return rest.iter().rev().fold(real, |acc, c| acc.join(c));
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                cur = parent;
            }
            _ => return p.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_resolution_order() {
        let h = Path::new("/h");
        let (r, s) = Root::resolve(Some(Path::new("/f")), Some("/c"), Some(h)).unwrap();
        assert_eq!((r.dir(), s), (Path::new("/f"), RootSource::Flag));
        let (r, s) = Root::resolve(None, Some("/c"), Some(h)).unwrap();
        assert_eq!((r.dir(), s), (Path::new("/c"), RootSource::ClaudeConfigDir));
        let (r, s) = Root::resolve(None, Some(""), Some(h)).unwrap();
        assert_eq!((r.dir(), s), (Path::new("/h/.claude"), RootSource::Home));
        assert!(Root::resolve(None, None, None).is_err());
    }

    #[test]
    fn layout_matches_claude_code() {
        let r = Root::new("/r");
        assert_eq!(
            r.config("demo").unwrap(),
            Path::new("/r/teams/demo/config.json")
        );
        assert_eq!(
            r.inbox("demo", "bob").unwrap(),
            Path::new("/r/teams/demo/inboxes/bob.json")
        );
        assert_eq!(
            r.task("demo", "7").unwrap(),
            Path::new("/r/tasks/demo/7.json")
        );
        assert_eq!(
            crate::atomic_file::lock_dir_for(&r.config("demo").unwrap()),
            r.config_lock("demo").unwrap()
        );
        // Odd names written by others: the roster and inbox directories differ.
        assert_eq!(
            r.team_dir("My Team").unwrap(),
            Path::new("/r/teams/my-team")
        );
        assert_eq!(
            r.inboxes_dir("My Team").unwrap(),
            Path::new("/r/teams/My-Team/inboxes")
        );
    }

    #[test]
    fn nothing_escapes_the_root() {
        let r = Root::new("/r");
        let long = "x".repeat(10 * 1024);
        for hostile in [
            "../x",
            "a/b",
            ".",
            "..",
            "a;b",
            "a\0b",
            "ünï/../..",
            "/etc/passwd",
        ] {
            for p in [
                r.config(hostile).unwrap(),
                r.inbox(hostile, hostile).unwrap(),
                r.task(hostile, hostile).unwrap(),
                r.history(hostile, hostile).unwrap(),
            ] {
                assert!(p.starts_with("/r/"), "{p:?}");
                assert!(
                    p.components().all(|c| matches!(
                        c,
                        std::path::Component::Normal(_) | std::path::Component::RootDir
                    )),
                    "{p:?}"
                );
            }
        }
        assert!(r.inbox("t", &long).is_err());
        assert!(r.config("").is_err());
    }
}
