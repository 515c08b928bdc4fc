//! The roster: `teams/<team>/config.json`, Claude Code's TeamFile.
//!
//! Written as `JSON.stringify(obj, null, 2)` with no trailing newline, every
//! update under the `config.json.lock` directory (with swarm's OS lock beside
//! it), re-read under the lock, mutated, and replaced atomically (temp +
//! rename, where Claude Code writes in place). Unknown fields, at the top
//! level and in members, are kept on rewrite. Readers never lock; a read that
//! fails to parse is retried (Claude Code's in-place writes can be seen half
//! done), and a file still unreadable is quarantined and rebuilt from the
//! team's inboxes, never taken as "no team".

use crate::atomic_file::{self, FileLock};
use crate::clock;
use crate::json_text;
use crate::names::{self, LEAD_NAME, NameError};
use crate::paths::Root;
use crate::team::owner::{OwnerRecord, Ownership};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;
use thiserror::Error;

/// One member of `members`. Field order is Claude Code's write order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub agent_id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joined_at: Option<u64>,
    #[serde(default)]
    pub tmux_pane_id: String,
    #[serde(default)]
    pub subscriptions: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_mode_required: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_active: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Fields swarm does not know (Claude Code's newer ones, swarm's own
    /// `swarm*` extensions); kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Member {
    /// A new teammate entry, as Claude Code reserves one before its pane exists.
    pub fn teammate(team: &str, name: &str, color: &str, cwd: &str) -> Member {
        Member {
            agent_id: format!("{name}@{team}"),
            name: name.to_string(),
            agent_type: None,
            color: Some(color.to_string()),
            joined_at: Some(clock::now_ms()),
            tmux_pane_id: String::new(),
            subscriptions: Vec::new(),
            model: None,
            prompt: None,
            plan_mode_required: Some(false),
            cwd: Some(cwd.to_string()),
            backend_type: None,
            is_active: None,
            mode: None,
            extra: Map::new(),
        }
    }

    pub fn is_lead(&self) -> bool {
        self.name == LEAD_NAME
    }

    /// The backend its pane lives in, when `backendType` names one swarm
    /// knows (Claude Code's own values are kept as written, never refused).
    pub fn backend_kind(&self) -> Option<swarm_backends::BackendKind> {
        self.backend_type.as_deref()?.parse().ok()
    }
}

/// The whole `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamFile {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
    #[serde(default)]
    pub lead_agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_session_id: Option<String>,
    /// `{pid, pidSpace, claimedAt, procStart?}`, kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_process: Option<Value>,
    #[serde(default)]
    pub members: Vec<Member>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TeamFile {
    pub fn member(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    pub fn member_mut(&mut self, name: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.name == name)
    }

    /// Members other than the lead.
    pub fn teammates(&self) -> impl Iterator<Item = &Member> {
        self.members.iter().filter(|m| !m.is_lead())
    }

    /// Names of every member, lead first, for "did you mean" errors.
    pub fn member_names(&self) -> Vec<String> {
        self.members.iter().map(|m| m.name.clone()).collect()
    }
}

#[derive(Debug, Error)]
pub enum RosterError {
    #[error("team {team:?} not found under {root}{}", list_hint(existing))]
    NotFound {
        team: String,
        root: PathBuf,
        /// The teams there are, or why they cannot be listed.
        existing: Result<Vec<String>, String>,
    },
    #[error("team {0:?} already exists")]
    Exists(String),
    #[error("{0:?} is already a member of team {1:?}")]
    DuplicateMember(String, String),
    #[error("{} is not a member of team {team:?} (members: {})", names::shown(name), members.join(", "))]
    NoSuchMember {
        team: String,
        name: String,
        members: Vec<String>,
    },
    #[error(
        "team {team:?} still has active members ({}); shut them down first or pass --force",
        active.join(", ")
    )]
    Active { team: String, active: Vec<String> },
    #[error(transparent)]
    Name(#[from] NameError),
    /// A write or delete refused: swarm did not start the team.
    #[error(transparent)]
    Foreign(#[from] super::owner::ForeignTeam),
    /// A lock that could not be taken, or one lost while this process was
    /// suspended ([`atomic_file::LockError::Lost`]): then nothing was
    /// written, and the update may simply be tried again.
    #[error(transparent)]
    Lock(#[from] atomic_file::LockError),
    /// A link, a directory others can write or another user's, where the
    /// team's files belong.
    #[error(transparent)]
    Unsafe(#[from] atomic_file::UnsafePath),
    /// The cause is in the message, not `source()`, so that a chain
    /// printed whole (`{:#}`) says it once.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

fn list_hint(existing: &Result<Vec<String>, String>) -> String {
    match existing {
        Err(e) => format!(" (the teams there cannot be listed: {e})"),
        Ok(teams) if teams.is_empty() => {
            " (there are no teams; create one with `swarm team create NAME` or `swarm up`)".into()
        }
        Ok(teams) => format!(" (teams: {})", teams.join(", ")),
    }
}

/// What a roster read had to repair, for the caller to report.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    pub quarantined: PathBuf,
    pub rebuilt_members: usize,
}

/// Reads and writes one team's roster.
#[derive(Debug, Clone)]
pub struct Roster {
    root: Root,
    team: String,
}

impl Roster {
    pub fn new(root: &Root, team: &str) -> Self {
        Roster {
            root: root.clone(),
            team: team.to_string(),
        }
    }

    pub fn team(&self) -> &str {
        &self.team
    }

    /// An I/O failure on `path`, or the refusal or lost lock it carries.
    fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> RosterError + '_ {
        move |source| {
            if let Some(u) = atomic_file::UnsafePath::of(&source) {
                return RosterError::Unsafe(u.clone());
            }
            if atomic_file::LockError::lost_in(&source) {
                return RosterError::Lock(atomic_file::LockError::Lost {
                    path: crate::atomic_file::lock_dir_for(path),
                });
            }
            RosterError::Io {
                path: path.to_path_buf(),
                error: source,
            }
        }
    }

    /// Creates the team: a roster holding only the lead, and its inbox and
    /// task directories. Refuses an existing team. A creation that fails
    /// (a full disk, say) leaves no directory of the team behind, so the
    /// team does not half exist.
    pub fn create(
        &self,
        description: Option<&str>,
        lead_cwd: &str,
    ) -> Result<TeamFile, RosterError> {
        self.create_with(description, lead_cwd, Vec::new())
    }

    /// [`Roster::create`] with `members` on the roster after the lead, in
    /// the one write that creates it (`up` of a spec: a durable write, some
    /// 4 ms, fewer than creating and then adding them).
    pub fn create_with(
        &self,
        description: Option<&str>,
        lead_cwd: &str,
        members: Vec<Member>,
    ) -> Result<TeamFile, RosterError> {
        names::validate_team(&self.team)?;
        let team_dir = self.root.team_dir(&self.team)?;
        let tasks_dir = self.root.tasks_dir(&self.team)?;
        let state_dir = self.root.state_dir(&self.team)?;
        let missing = |d: &std::path::Path| std::fs::symlink_metadata(d).is_err();
        let (new_team_dir, new_tasks_dir, new_state_dir) =
            (missing(&team_dir), missing(&tasks_dir), missing(&state_dir));
        let created = self.create_files(description, lead_cwd, members);
        if let Err(e) = &created
            && !matches!(e, RosterError::Exists(_))
        {
            crate::dropped::ignore(
                atomic_file::remove_if_there(&self.root.owner_record(&self.team)?),
                "removing the owner record of a team whose creation failed",
            );
            if new_state_dir {
                crate::dropped::ignore(
                    std::fs::remove_dir(&state_dir),
                    "removing the state directory of a team whose creation failed",
                );
            }
            if new_team_dir {
                self.remove_new_team_dir(&team_dir);
            }
            if new_tasks_dir {
                // Only if empty: not empty, another process wrote there.
                crate::dropped::ignore(
                    std::fs::remove_dir(&tasks_dir),
                    "removing the task directory of a team whose creation failed",
                );
            }
        }
        created
    }

    /// Undoes a failed [`Roster::create`] that made `dir`: what the attempt
    /// puts there (the inbox directory, the lock's sidecar), then `dir`,
    /// each only if empty, so nothing another process wrote meanwhile goes.
    fn remove_new_team_dir(&self, dir: &std::path::Path) {
        if let Ok(inboxes) = self.root.inboxes_dir(&self.team) {
            crate::dropped::ignore(
                std::fs::remove_dir(inboxes),
                "removing the inbox directory of a team whose creation failed",
            );
        }
        if let Ok(lock) = self.root.config_lock(&self.team) {
            crate::dropped::ignore(
                std::fs::remove_file(crate::atomic_file::sidecar_for(&lock)),
                "removing the roster lock's sidecar of a team whose creation failed",
            );
        }
        if let Err(e) = std::fs::remove_dir(dir) {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot remove the directory of a team whose creation failed");
        }
    }

    fn create_files(
        &self,
        description: Option<&str>,
        lead_cwd: &str,
        members: Vec<Member>,
    ) -> Result<TeamFile, RosterError> {
        let path = self.root.config(&self.team)?;
        let dir = self.root.team_dir(&self.team)?;
        atomic_file::ensure_dir(&dir).map_err(Self::io(&dir))?;
        let lock = FileLock::acquire_dir(
            &self.root.config_lock(&self.team)?,
            atomic_file::DEFAULT_LOCK_TIMEOUT,
        )?;
        if std::fs::symlink_metadata(&path).is_ok() {
            return Err(RosterError::Exists(self.team.clone()));
        }
        let now = clock::now_ms();
        let session = uuid::Uuid::new_v4().to_string();
        // The record first: a roster never exists without the proof that
        // swarm made it (a crash in between leaves a record and no team,
        // which the next create of that name overwrites).
        let record = self.root.owner_record(&self.team)?;
        OwnerRecord::new(&session, now)
            .save(&self.root, &self.team)
            .map_err(Self::io(&record))?;
        let mut tf = TeamFile {
            name: self.team.clone(),
            description: description.map(str::to_string),
            created_at: Some(now),
            lead_agent_id: format!("{LEAD_NAME}@{}", self.team),
            lead_session_id: Some(session),
            lead_process: None,
            members: vec![Member {
                agent_id: format!("{LEAD_NAME}@{}", self.team),
                name: LEAD_NAME.to_string(),
                agent_type: Some(LEAD_NAME.to_string()),
                color: None,
                joined_at: Some(now),
                tmux_pane_id: "leader".to_string(),
                subscriptions: Vec::new(),
                model: None,
                prompt: None,
                plan_mode_required: None,
                cwd: Some(lead_cwd.to_string()),
                backend_type: None,
                is_active: None,
                mode: None,
                extra: Map::new(),
            }],
            extra: Map::new(),
        };
        tf.members.extend(members);
        for d in [
            self.root.inboxes_dir(&self.team)?,
            self.root.tasks_dir(&self.team)?,
        ] {
            atomic_file::ensure_dir(&d).map_err(Self::io(&d))?;
        }
        atomic_file::write_atomic_locked(&path, &json_text::to_pretty(&tf), &lock)
            .map_err(Self::io(&path))?;
        Ok(tf)
    }

    pub fn exists(&self) -> bool {
        self.root
            .config(&self.team)
            .map(|p| p.is_file())
            .unwrap_or(false)
    }

    /// Reads the roster without a lock. A file that does not parse is read
    /// again after a short pause (an in-place write may have been in
    /// progress); if it still does not parse it is repaired under the lock.
    pub fn load(&self) -> Result<(TeamFile, Option<Repaired>), RosterError> {
        let path = self.root.config(&self.team)?;
        for attempt in 0..3 {
            match atomic_file::read_optional(&path).map_err(Self::io(&path))? {
                None => return Err(self.not_found()),
                Some(bytes) => {
                    if let Ok(tf) = json_text::parse_lenient::<TeamFile>(&bytes) {
                        return Ok((tf, None));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20 * (attempt + 1)));
        }
        let mut repaired = None;
        let tf = self.update_inner(|_| Ok(()), &mut repaired)?;
        Ok((tf, repaired))
    }

    /// Reads, ignoring any repair report (it was logged).
    pub fn read(&self) -> Result<TeamFile, RosterError> {
        Ok(self.load()?.0)
    }

    /// Under the roster lock: re-read, apply `f`, write atomically.
    pub fn update<T>(
        &self,
        f: impl FnOnce(&mut TeamFile) -> Result<T, RosterError>,
    ) -> Result<(TeamFile, T), RosterError> {
        let mut out = None;
        let mut repaired = None;
        let tf = self.update_inner(
            |tf| {
                out = Some(f(tf)?);
                Ok(())
            },
            &mut repaired,
        )?;
        Ok((tf, out.expect("update closure ran")))
    }

    fn update_inner(
        &self,
        f: impl FnOnce(&mut TeamFile) -> Result<(), RosterError>,
        repaired: &mut Option<Repaired>,
    ) -> Result<TeamFile, RosterError> {
        let path = self.root.config(&self.team)?;
        let lock = FileLock::acquire_dir(
            &self.root.config_lock(&self.team)?,
            atomic_file::DEFAULT_LOCK_TIMEOUT,
        )
        .map_err(|e| self.gone_or(e.into()))?;
        let bytes = atomic_file::read_optional(&path)
            .map_err(Self::io(&path))?
            .ok_or_else(|| self.not_found())?;
        let parsed = json_text::parse_lenient::<TeamFile>(&bytes);
        // Only swarm's own roster is written, repairs included (see
        // `owner`): a team another tool started is read, never rewritten.
        let record = OwnerRecord::load(&self.root, &self.team);
        let action = match &parsed {
            Ok(_) => "change its roster",
            Err(_) => "repair its roster, which does not parse",
        };
        Ownership::judge(
            record.as_ref(),
            parsed.as_ref().ok().map(|tf| tf.lead_session_id.as_deref()),
        )
        .require(&self.team, action)
        .map_err(|e| self.gone_or(e.into()))?;
        let mut tf = match parsed {
            Ok(tf) => tf,
            Err(err) => {
                // Rebuilt first: a rebuild that fails leaves the file where
                // it is (the next read tries again), never a team without
                // a roster. It keeps the lead session swarm recorded, so
                // the team stays swarm's.
                let mut tf = self.rebuild_from_inboxes()?;
                tf.lead_session_id = record.map(|r| r.lead_session_id);
                let quarantined = atomic_file::quarantine(&path).map_err(Self::io(&path))?;
                tracing::warn!(
                    config = %path.display(),
                    copy = %quarantined.display(),
                    %err,
                    "unreadable roster quarantined and rebuilt from inboxes"
                );
                *repaired = Some(Repaired {
                    quarantined,
                    rebuilt_members: tf.members.len() - 1,
                });
                tf
            }
        };
        let before = tf.clone();
        f(&mut tf)?;
        if tf != before || repaired.is_some() {
            // Verified before the rename: a holder suspended past the stale
            // rule must not replace what a Claude Code lead wrote since. It
            // cannot apply `f` again, so it reports the lost lock.
            atomic_file::write_atomic_locked(&path, &json_text::to_pretty(&tf), &lock)
                .map_err(Self::io(&path))?;
        }
        Ok(tf)
    }

    /// A roster holding the lead and one inactive member per inbox file.
    fn rebuild_from_inboxes(&self) -> Result<TeamFile, RosterError> {
        let now = clock::now_ms();
        let mut tf = TeamFile {
            name: self.team.clone(),
            description: None,
            created_at: Some(now),
            lead_agent_id: format!("{LEAD_NAME}@{}", self.team),
            lead_session_id: Some(uuid::Uuid::new_v4().to_string()),
            lead_process: None,
            members: Vec::new(),
            extra: Map::new(),
        };
        let mut lead = Member::teammate(&self.team, LEAD_NAME, "red", "");
        lead.color = None;
        lead.agent_type = Some(LEAD_NAME.to_string());
        lead.tmux_pane_id = "leader".into();
        lead.plan_mode_required = None;
        lead.cwd = None;
        tf.members.push(lead);
        let dir = self.root.inboxes_dir(&self.team)?;
        // An inbox directory that cannot be listed fails the rebuild: a
        // roster rebuilt without the members it holds would lose them.
        let entries = match std::fs::read_dir(&dir) {
            Ok(rd) => rd.collect::<std::io::Result<Vec<_>>>(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        };
        let mut found: Vec<String> = entries
            .map_err(Self::io(&dir))?
            .into_iter()
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter_map(|n| n.strip_suffix(".json").map(str::to_string))
            .filter(|n| n != LEAD_NAME && names::validate_member(n).is_ok())
            .collect();
        found.sort();
        for (i, name) in found.iter().enumerate() {
            let mut m =
                Member::teammate(&self.team, name, crate::team::colors::for_teammate(i), "");
            m.cwd = None;
            m.is_active = Some(false);
            tf.members.push(m);
        }
        Ok(tf)
    }

    /// `e`, unless the team is gone by now (another `swarm down` deleted
    /// it meanwhile: its lock directory could not be made, its owner record
    /// went before the roster was judged): then the one "team not found"
    /// every command answers for a team that is not there.
    fn gone_or(&self, e: RosterError) -> RosterError {
        match self.root.team_dir(&self.team) {
            Ok(dir) if !dir.exists() => self.not_found(),
            _ => e,
        }
    }

    fn not_found(&self) -> RosterError {
        RosterError::NotFound {
            team: self.team.clone(),
            root: self.root.dir().to_path_buf(),
            existing: list_teams(&self.root).map_err(|e| format!("{e:#}")),
        }
    }

    /// Adds a member; refuses a duplicate name (any case).
    pub fn add_member(&self, member: Member) -> Result<TeamFile, RosterError> {
        self.add_members(vec![member])
    }

    /// Adds members in one write; refuses (adding none) a name already
    /// taken, on the roster or earlier in `members` (any case).
    pub fn add_members(&self, members: Vec<Member>) -> Result<TeamFile, RosterError> {
        let team = self.team.clone();
        Ok(self
            .update(|tf| {
                for member in members {
                    if tf
                        .members
                        .iter()
                        .any(|m| m.name.eq_ignore_ascii_case(&member.name))
                    {
                        return Err(RosterError::DuplicateMember(member.name, team));
                    }
                    tf.members.push(member);
                }
                Ok(())
            })?
            .0)
    }

    /// Removes a member; returns the removed entry.
    pub fn remove_member(&self, name: &str) -> Result<Member, RosterError> {
        let team = self.team.clone();
        Ok(self
            .update(|tf| match tf.members.iter().position(|m| m.name == name) {
                Some(i) => Ok(tf.members.remove(i)),
                None => Err(RosterError::NoSuchMember {
                    team,
                    name: name.to_string(),
                    members: tf.member_names(),
                }),
            })?
            .1)
    }

    /// Applies `f` to one member.
    pub fn update_member(
        &self,
        name: &str,
        f: impl FnOnce(&mut Member),
    ) -> Result<TeamFile, RosterError> {
        let team = self.team.clone();
        Ok(self
            .update(|tf| {
                let members = tf.member_names();
                match tf.member_mut(name) {
                    Some(m) => {
                        f(m);
                        Ok(())
                    }
                    None => Err(RosterError::NoSuchMember {
                        team,
                        name: name.to_string(),
                        members,
                    }),
                }
            })?
            .0)
    }

    pub fn set_active(&self, name: &str, active: bool) -> Result<TeamFile, RosterError> {
        self.update_member(name, |m| m.is_active = Some(active))
    }

    pub fn set_mode(&self, name: &str, mode: &str) -> Result<TeamFile, RosterError> {
        self.update_member(name, |m| m.mode = Some(mode.to_string()))
    }

    /// Deletes the team: roster directory (renamed to `<dir>.deleted-<uuid>`
    /// first, as Claude Code does, so a half-finished delete never looks like
    /// a live team), task list and swarm state. Refused while a teammate is
    /// active unless `force`.
    pub fn delete(&self, force: bool) -> Result<(), RosterError> {
        let tf = self.read()?;
        Ownership::of(&self.root, &self.team)
            .require(&self.team, "delete it")
            .map_err(|e| self.gone_or(e.into()))?;
        let active: Vec<String> = tf
            .teammates()
            .filter(|m| m.is_active == Some(true))
            .map(|m| m.name.clone())
            .collect();
        if !active.is_empty() && !force {
            return Err(RosterError::Active {
                team: self.team.clone(),
                active,
            });
        }
        let team_dir = self.root.team_dir(&self.team)?;
        let mut doomed = team_dir.as_os_str().to_owned();
        doomed.push(format!(".deleted-{}", uuid::Uuid::new_v4()));
        let doomed = PathBuf::from(doomed);
        std::fs::rename(&team_dir, &doomed).map_err(|e| self.gone_or(Self::io(&team_dir)(e)))?;
        // Every tree at once (see `atomic_file::remove_trees`): the team's
        // directory, its task list and swarm's state; the first error is
        // the delete's.
        let mut trees = vec![doomed];
        trees.extend(
            [
                self.root
                    .inboxes_dir(&self.team)?
                    .parent()
                    .map(PathBuf::from),
                Some(self.root.tasks_dir(&self.team)?),
                Some(self.root.state_dir(&self.team)?),
            ]
            .into_iter()
            .flatten(),
        );
        let removed = crate::atomic_file::remove_trees(&trees);
        for (dir, result) in trees.into_iter().zip(removed) {
            result.map_err(Self::io(&dir))?;
        }
        // The board index is a cache another team of this name would
        // rebuild anyway (its task directory is new); it goes with the
        // team, as does the record of the ids it issued (a new team of
        // this name starts at 1).
        for cache in [
            self.root.board_index(&self.team)?,
            self.root.board_look_lock(&self.team)?,
            self.root.issued_mark(&self.team)?,
        ] {
            crate::dropped::ignore(
                crate::atomic_file::remove_if_there(&cache),
                "removing the board index of a deleted team",
            );
        }
        Ok(())
    }
}

/// Names of the teams under the root (directories holding a `config.json`),
/// sorted; half-deleted ones are skipped.
pub fn list_teams(root: &Root) -> std::io::Result<Vec<String>> {
    let dir = root.teams_dir();
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for e in rd {
        let e = e?;
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.contains(".deleted-") || !e.path().join("config.json").is_file() {
            continue;
        }
        // The directory is S1(team); the real name is inside.
        let real = std::fs::read(e.path().join("config.json"))
            .ok()
            .and_then(|b| json_text::parse_lenient::<Value>(&b).ok())
            .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string))
            .unwrap_or(name);
        out.push(real);
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/claude-code")
            .join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    #[test]
    fn a_team_whose_creation_failed_leaves_no_directory() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let roster = Roster::new(&root, "doomed");
        crate::atomic_file::fault::inject("write", std::io::ErrorKind::StorageFull);
        let err = roster.create(None, "/").unwrap_err();
        assert!(err.to_string().contains("owner.json"), "{err}");
        for gone in ["teams/doomed", "tasks/doomed", "swarm/doomed"] {
            assert!(!t.path().join(gone).exists(), "{gone} left behind");
        }
        assert!(!roster.exists());
        // The name is free: creating it again works.
        roster.create(None, "/").unwrap();
        assert!(roster.exists());
    }

    #[test]
    fn the_claude_code_roster_fixture_reads_and_round_trips() {
        let bytes = fixture("config.json");
        let tf: TeamFile = json_text::parse_lenient(&bytes).unwrap();
        assert_eq!(tf.name, "session-6c171e4f");
        assert_eq!(tf.members.len(), 4);
        let r = tf.member("researcher").unwrap();
        assert_eq!(r.tmux_pane_id, "%1");
        assert_eq!(r.color.as_deref(), Some("blue"));
        assert_eq!(r.backend_type.as_deref(), Some("tmux"));
        assert_eq!(r.is_active, Some(false));
        assert_eq!(tf.member("team-lead").unwrap().tmux_pane_id, "leader");
        assert!(tf.lead_process.is_some());
        // Teammate entries round-trip byte for byte (field order is
        // Claude Code's); the lead entry differs only in where `cwd` sits.
        let again: TeamFile = json_text::parse_lenient(&json_text::to_pretty(&tf)).unwrap();
        assert_eq!(again, tf);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        let ours: Value = serde_json::from_slice(&json_text::to_pretty(&tf)).unwrap();
        assert_eq!(v, ours, "no field lost or changed");
        let after: TeamFile =
            json_text::parse_lenient(&fixture("config-after-shutdown.json")).unwrap();
        assert_eq!(after.member_names(), vec!["team-lead"]);
    }

    #[test]
    fn unknown_fields_survive_an_update() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let roster = Roster::new(&root, "alpha");
        roster.create(Some("d"), "/w").unwrap();
        let path = root.config("alpha").unwrap();
        let mut v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        v["futureTop"] = serde_json::json!({"x": 1});
        v["members"][0]["futureMember"] = serde_json::json!([1, 2]);
        std::fs::write(&path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        roster
            .add_member(Member::teammate("alpha", "bob", "blue", "/w"))
            .unwrap();
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v["futureTop"]["x"], 1);
        assert_eq!(v["members"][0]["futureMember"][1], 2);
        assert_eq!(v["members"][1]["name"], "bob");
    }

    #[test]
    fn a_team_created_with_members_has_them_after_its_lead_on_disk() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let roster = Roster::new(&root, "alpha");
        let members = ["bob", "carol"].map(|n| Member::teammate("alpha", n, "blue", "/w"));
        let made = roster.create_with(None, "/w", members.to_vec()).unwrap();
        let (read, _) = roster.load().unwrap();
        assert_eq!(read, made);
        let names: Vec<_> = read.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["team-lead", "bob", "carol"]);
        // Created once: a second creation is refused, the members kept.
        assert!(matches!(
            roster.create_with(None, "/w", Vec::new()),
            Err(RosterError::Exists(_))
        ));
        assert_eq!(roster.load().unwrap().0.members.len(), 3);
    }

    #[test]
    fn create_writes_the_reference_shape_privately() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let tf = Roster::new(&root, "alpha").create(None, "/w").unwrap();
        assert_eq!(tf.lead_agent_id, "team-lead@alpha");
        let path = root.config("alpha").unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.starts_with(b"{\n  \"name\": \"alpha\""));
        assert_ne!(bytes.last(), Some(&b'\n'), "no trailing newline");
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let dir = root.team_dir("alpha").unwrap();
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert!(matches!(
            Roster::new(&root, "alpha").create(None, "/w"),
            Err(RosterError::Exists(_))
        ));
    }

    #[test]
    fn members_add_remove_and_flags() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let roster = Roster::new(&root, "alpha");
        roster.create(None, "/w").unwrap();
        roster
            .add_member(Member::teammate("alpha", "bob", "blue", "/w"))
            .unwrap();
        assert!(matches!(
            roster.add_member(Member::teammate("alpha", "BOB", "blue", "/w")),
            Err(RosterError::DuplicateMember(..))
        ));
        roster.set_active("bob", true).unwrap();
        roster.set_mode("bob", "acceptEdits").unwrap();
        let tf = roster.read().unwrap();
        assert_eq!(tf.member("bob").unwrap().is_active, Some(true));
        assert_eq!(
            tf.member("bob").unwrap().mode.as_deref(),
            Some("acceptEdits")
        );
        let err = roster.delete(false).unwrap_err();
        assert!(err.to_string().contains("bob"), "{err}");
        let gone = roster.remove_member("bob").unwrap();
        assert_eq!(gone.name, "bob");
        let err = roster.remove_member("bob").unwrap_err().to_string();
        assert!(err.contains("members: team-lead"), "{err}");
        roster.delete(false).unwrap();
        assert!(!root.team_dir("alpha").unwrap().exists());
        assert!(matches!(roster.read(), Err(RosterError::NotFound { .. })));
    }

    /// Issue 24, item 10: of two concurrent `swarm down`, the one that
    /// lost the race read the roster, then found the team deleted under it
    /// and failed on its next roster write with the raw error of the lock
    /// directory it could not make; it is the one "team not found".
    #[test]
    fn a_roster_write_on_a_team_deleted_meanwhile_is_team_not_found() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let loser = Roster::new(&root, "alpha");
        loser.create(None, "/w").unwrap();
        loser
            .add_member(Member::teammate("alpha", "bob", "blue", "/w"))
            .unwrap();
        assert!(loser.read().is_ok(), "the loser saw the team");
        Roster::new(&root, "alpha").delete(true).unwrap();
        let err = loser
            .update_member("bob", |m| m.is_active = Some(false))
            .unwrap_err();
        assert!(
            matches!(err, RosterError::NotFound { .. }),
            "a raw error instead of team not found: {err}"
        );
        let err = loser.delete(true).unwrap_err();
        assert!(matches!(err, RosterError::NotFound { .. }), "{err}");
    }

    /// Team alpha with bob's inbox and a roster cut off mid-write.
    fn corrupt_roster_with_bobs_inbox() -> (tempfile::TempDir, Root, Roster, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        let roster = Roster::new(&root, "alpha");
        roster.create(None, "/w").unwrap();
        let inboxes = root.inboxes_dir("alpha").unwrap();
        std::fs::write(inboxes.join("bob.json"), "[]").unwrap();
        let path = root.config("alpha").unwrap();
        std::fs::write(&path, b"{\"name\": \"alpha\", \"members\": [").unwrap();
        (t, root, roster, path)
    }

    #[test]
    fn a_corrupt_roster_is_quarantined_and_rebuilt_not_lost() {
        let (_t, _root, roster, _path) = corrupt_roster_with_bobs_inbox();
        let (tf, repaired) = roster.load().unwrap();
        let repaired = repaired.expect("repair reported");
        assert_eq!(
            std::fs::read(&repaired.quarantined).unwrap(),
            b"{\"name\": \"alpha\", \"members\": ["
        );
        assert_eq!(tf.member_names(), vec!["team-lead", "bob"]);
        assert_eq!(repaired.rebuilt_members, 1);
        assert!(
            roster.load().unwrap().1.is_none(),
            "repaired once, readable after"
        );
    }

    #[test]
    fn a_roster_is_not_rebuilt_without_the_members_an_unlistable_inbox_dir_holds() {
        let (t, root, roster, path) = corrupt_roster_with_bobs_inbox();
        let inboxes = root.inboxes_dir("alpha").unwrap();
        // The inbox directory cannot be listed (here: it is a file now).
        let aside = t.path().join("inboxes-aside");
        std::fs::rename(&inboxes, &aside).unwrap();
        std::fs::write(&inboxes, b"").unwrap();
        let err = roster.load().unwrap_err().to_string();
        assert!(err.contains("inboxes"), "{err}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            b"{\"name\": \"alpha\", \"members\": ["
        );
        // Listable again: rebuilt with bob, not without him.
        std::fs::remove_file(&inboxes).unwrap();
        std::fs::rename(&aside, &inboxes).unwrap();
        let (tf, _) = roster.load().unwrap();
        assert_eq!(tf.member_names(), vec!["team-lead", "bob"]);
    }

    #[test]
    fn hostile_team_names_create_nothing() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::new(t.path());
        for bad in [
            "../x",
            "a/b",
            ".",
            "..",
            "a;b",
            "a\0b",
            "ünï",
            &"a".repeat(10 * 1024),
        ] {
            assert!(
                Roster::new(&root, bad).create(None, "/w").is_err(),
                "{bad:?}"
            );
        }
        assert_eq!(
            std::fs::read_dir(t.path()).unwrap().count(),
            0,
            "nothing created"
        );
    }
}
