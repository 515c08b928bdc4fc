//! Real Claude Code as a native teammate (reference §8): the launch argv and
//! environment, the configuration directory it is pointed at, and the
//! signed initial prompt in its inbox. The runtime only supervises such a
//! member: Claude Code polls its own inbox.
//!
//! Launch argv (§8.1, §8.2), in this order:
//!
//! ```text
//! claude --agent-id NAME@TEAM --agent-name NAME --team-name TEAM --agent-color COLOR
//!        [--parent-session-id LEAD_SESSION] --lead-verify-key MS.SPKI
//!        [--plan-mode-required] (--permission-mode MODE | --dangerously-skip-permissions)
//!        [--model MODEL]
//! ```
//!
//! `MODE` is the member's `mode` (`swarm spawn --mode`, the spec's `mode`,
//! or what Claude Code last wrote to the roster), `default` when it has
//! none, so every permission request goes to the lead's approval queue
//! (Claude Code's own default is auto mode, which refuses SendMessage
//! behind a base URL that is not Anthropic's). Plan mode required means
//! `plan`; `bypassPermissions` is `--dangerously-skip-permissions`, as
//! Claude Code's lead writes it. The member's `command` replaces the
//! `claude` program (its argv prefix).
//!
//! Environment, on top of the pane's (which passes the user's API
//! variables by name, see [`crate::pane_env`]): `CLAUDECODE=1`,
//! `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`, `CLAUDE_CODE_ENABLE_TODO_TOOLS=1`,
//! and the configuration directory ([`ConfigHome`]).
//!
//! # Configuration directory
//!
//! Claude Code 2.1.332 derives everything from one directory, `$CLAUDE_CONFIG_DIR`
//! or else `~/.claude`: its team files (`<dir>/teams`, `<dir>/tasks`; no
//! variable or flag moves them), its settings (`<dir>/settings.json`, …) and
//! its global config (`$CLAUDE_CONFIG_DIR/.claude.json` when the variable is
//! set, else `~/.claude.json`: onboarding, trust, approved API keys).
//! Credentials are the exception: `CLAUDE_SECURESTORAGE_CONFIG_DIR` (empty:
//! `~/.claude`) names where `.credentials.json` is read, and which macOS
//! keychain entry (the default one when empty).
//!
//! So a teammate reads the user's own setup and finds the team like this:
//!
//! - The swarm root **is** the user's Claude config dir (the default root,
//!   `$CLAUDE_CONFIG_DIR` or `~/.claude`): nothing is set; the teammate runs
//!   exactly as the user's own `claude` does.
//! - The root is elsewhere (`SWARM_HOME`, `--home`): `CLAUDE_CONFIG_DIR`
//!   points at a directory swarm keeps under the team's state
//!   (`<root>/swarm/<team>/claude-config/`) holding a link to each entry of
//!   the user's config dir, `.claude.json` linked to the user's global config
//!   (Claude Code writes it through the link: `allowSymlink` in its writer),
//!   and `teams`, `tasks` linked to the root's. `CLAUDE_SECURESTORAGE_CONFIG_DIR`
//!   is the user's config dir when they set `CLAUDE_CONFIG_DIR`, else empty,
//!   so credentials (file or keychain) are the user's. What Claude Code
//!   creates there that the user's dir lacks (say `projects/` on a fresh
//!   account) stays in swarm's state.

use crate::mailbox::Entry;
use crate::mailbox::signing::LeadKey;
use crate::paths::Root;
use crate::team::{Member, Team};
use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to exec for a Claude Code teammate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaudeLaunch {
    pub argv: Vec<String>,
    /// Variables to set on top of the pane's environment.
    pub env: Vec<(String, String)>,
}

/// Where the user keeps Claude Code's configuration, as their own `claude`
/// would find it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserClaude {
    /// `$CLAUDE_CONFIG_DIR`, when set and not empty.
    pub config_dir_var: Option<PathBuf>,
    /// `$HOME`.
    pub home: Option<PathBuf>,
    /// `$CLAUDE_SECURESTORAGE_CONFIG_DIR` exactly as set (empty included).
    pub secure_storage_var: Option<String>,
}

impl UserClaude {
    /// From this process's environment (a pane's: the user's
    /// `CLAUDE_CONFIG_DIR` is on Claude Code's forward list).
    pub fn from_env() -> UserClaude {
        UserClaude {
            config_dir_var: std::env::var_os("CLAUDE_CONFIG_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            home: std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            secure_storage_var: std::env::var("CLAUDE_SECURESTORAGE_CONFIG_DIR").ok(),
        }
    }

    /// With `HOME` only (no `CLAUDE_CONFIG_DIR`), for tests.
    pub fn with_home(home: &Path) -> UserClaude {
        UserClaude {
            home: Some(home.to_path_buf()),
            ..UserClaude::default()
        }
    }

    /// The user's config dir: `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
    pub fn config_dir(&self) -> Option<PathBuf> {
        self.config_dir_var
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".claude")))
    }

    /// The user's global config: `$CLAUDE_CONFIG_DIR/.claude.json`, else
    /// `~/.claude.json`.
    pub fn global_config(&self) -> Option<PathBuf> {
        self.config_dir_var
            .as_ref()
            .or(self.home.as_ref())
            .map(|d| d.join(".claude.json"))
    }
}

/// How a Claude Code teammate is pointed at its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigHome {
    /// The root is the user's config dir: set nothing.
    Users,
    /// A directory of links swarm keeps (see the module docs).
    Linked {
        dir: PathBuf,
        /// `CLAUDE_SECURESTORAGE_CONFIG_DIR` for the teammate.
        secure_storage: String,
    },
}

impl ConfigHome {
    /// Decides, and builds the linked directory when one is needed.
    pub fn prepare(team: &Team, user: &UserClaude) -> Result<ConfigHome> {
        let root = team.root.dir();
        if user.config_dir().is_some_and(|d| same_dir(&d, root)) {
            return Ok(ConfigHome::Users);
        }
        let dir = team.root.claude_config(&team.name)?;
        build_linked_dir(&dir, user, &team.root)
            .with_context(|| format!("preparing Claude Code's config dir {}", dir.display()))?;
        let secure_storage = match (&user.secure_storage_var, &user.config_dir_var) {
            (Some(s), _) => s.clone(),
            (None, Some(d)) => d.to_string_lossy().into_owned(),
            (None, None) => String::new(),
        };
        Ok(ConfigHome::Linked {
            dir,
            secure_storage,
        })
    }

    /// The variables it sets.
    pub fn env(&self) -> Vec<(String, String)> {
        match self {
            ConfigHome::Users => Vec::new(),
            ConfigHome::Linked {
                dir,
                secure_storage,
            } => vec![
                (
                    "CLAUDE_CONFIG_DIR".into(),
                    dir.to_string_lossy().into_owned(),
                ),
                (
                    "CLAUDE_SECURESTORAGE_CONFIG_DIR".into(),
                    secure_storage.clone(),
                ),
            ],
        }
    }
}

/// Whether two paths name the same directory (by their real paths when
/// both exist).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}

/// Entries of the user's config dir that the linked directory does not
/// take from it: the team files are the root's, the global config is
/// linked on its own, and credentials are read through
/// `CLAUDE_SECURESTORAGE_CONFIG_DIR` (Claude Code opens them with
/// `O_NOFOLLOW`, so a link there would not be read).
const NOT_LINKED: [&str; 4] = ["teams", "tasks", ".claude.json", ".credentials.json"];

/// Makes `dir` a Claude Code config dir made of links: every entry of the
/// user's config dir, `.claude.json` to the user's global config, `teams`
/// and `tasks` to the root's. Idempotent and safe to run from two
/// teammates at once (each link is made beside and renamed into place); a
/// real file or directory Claude Code created there is left alone, and a
/// link to an entry the user no longer has is removed.
pub fn build_linked_dir(dir: &Path, user: &UserClaude, root: &Root) -> Result<()> {
    use crate::atomic_file::ensure_dir;
    ensure_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut want: Vec<(OsString, PathBuf)> = Vec::new();
    let user_dir = user.config_dir();
    if let Some(ud) = &user_dir
        && let Ok(rd) = std::fs::read_dir(ud)
    {
        for e in rd.flatten() {
            let name = e.file_name();
            if !NOT_LINKED.iter().any(|n| name == *n) {
                want.push((name.clone(), ud.join(&name)));
            }
        }
    }
    if let Some(g) = user.global_config() {
        want.push((".claude.json".into(), g));
    }
    for (name, target) in [("teams", root.teams_dir()), ("tasks", root.tasks_root())] {
        ensure_dir(&target).with_context(|| format!("creating {}", target.display()))?;
        want.push((name.into(), target));
    }
    for (name, target) in &want {
        link(&dir.join(name), target)?;
    }
    // Links to what the user has since removed.
    if let Some(ud) = &user_dir {
        for e in std::fs::read_dir(dir)?.flatten() {
            let path = e.path();
            let stale = e.file_type().is_ok_and(|t| t.is_symlink())
                && !want.iter().any(|(n, _)| *n == e.file_name())
                && std::fs::read_link(&path).is_ok_and(|t| t.starts_with(ud));
            if stale {
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    Ok(())
}

/// `path` becomes a symlink to `target`, unless it already is one, or is a
/// real file or directory (kept: Claude Code's own).
pub(super) fn link(path: &Path, target: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(md) if md.file_type().is_symlink() => {
            if std::fs::read_link(path).is_ok_and(|t| t == target) {
                return Ok(());
            }
        }
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    }
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(
        ".{name}.swarm-link-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::os::unix::fs::symlink(target, &tmp)
        .with_context(|| format!("linking {} to {}", tmp.display(), target.display()))?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    Ok(())
}

/// Builds the launch of `member` of `team`, for the user this process runs
/// for ([`UserClaude::from_env`]). Creates (or reuses) the member's signing
/// key; `ms` is the launch time that goes into `--lead-verify-key` (the
/// teammate must start within 120 s of it).
pub fn claude_launch(team: &Team, member: &Member, ms: u64) -> Result<ClaudeLaunch> {
    claude_launch_for(team, member, ms, &UserClaude::from_env())
}

/// [`claude_launch`] for a given user's Claude Code setup.
pub fn claude_launch_for(
    team: &Team,
    member: &Member,
    ms: u64,
    user: &UserClaude,
) -> Result<ClaudeLaunch> {
    let roster = team.roster().read()?;
    let key = LeadKey::load_or_create(&team.root, &team.name, &member.name)?;
    let command = super::member_command(member)?;
    let mut argv: Vec<String> = match command {
        Some(c) if !c.is_empty() => c,
        _ => vec!["claude".to_string()],
    };
    let color = member.color.clone().unwrap_or_else(|| "blue".to_string());
    argv.extend([
        "--agent-id".into(),
        format!("{}@{}", member.name, team.name),
        "--agent-name".into(),
        member.name.clone(),
        "--team-name".into(),
        team.name.clone(),
        "--agent-color".into(),
        color,
    ]);
    if let Some(session) = roster.lead_session_id.as_deref().filter(|s| !s.is_empty()) {
        argv.extend(["--parent-session-id".into(), session.to_string()]);
    }
    argv.extend(["--lead-verify-key".into(), key.verify_key_arg(ms)]);
    let plan = member.plan_mode_required == Some(true);
    if plan {
        argv.push("--plan-mode-required".into());
    }
    argv.extend(permission_args(plan, member.mode.as_deref()));
    if let Some(model) = member.model.as_deref().filter(|m| !m.is_empty()) {
        argv.extend(["--model".into(), model.to_string()]);
    }
    let home = ConfigHome::prepare(team, user)?;
    let config_dir = match &home {
        ConfigHome::Users => user.config_dir(),
        ConfigHome::Linked { dir, .. } => Some(dir.clone()),
    };
    argv.extend(claude_session_args(member, config_dir.as_deref()));
    let mut env: Vec<(String, String)> = vec![
        ("CLAUDECODE".into(), "1".into()),
        ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS".into(), "1".into()),
        ("CLAUDE_CODE_ENABLE_TODO_TOOLS".into(), "1".into()),
    ];
    env.extend(home.env());
    Ok(ClaudeLaunch { argv, env })
}

/// The permission flags for a member's mode (see the module docs).
fn permission_args(plan_required: bool, mode: Option<&str>) -> Vec<String> {
    let mode = match mode.filter(|m| !m.is_empty()) {
        _ if plan_required => "plan",
        Some("manual") | None => "default",
        Some(m) => m,
    };
    if mode == "bypassPermissions" {
        return vec!["--dangerously-skip-permissions".into()];
    }
    vec!["--permission-mode".into(), mode.to_string()]
}

/// The member field holding a Claude Code teammate's session id.
pub(crate) const SESSION_KEY: &str = "sessionId";

/// The member's recorded Claude Code session id.
pub fn session_id(m: &Member) -> Option<&str> {
    m.extra
        .get(SESSION_KEY)
        .and_then(serde_json::Value::as_str)
        .filter(|s| uuid::Uuid::parse_str(s).is_ok())
}

/// Whether Claude Code has written the transcript of `session` under its
/// config dir (`projects/<any project>/<session>.jsonl`).
fn transcript_exists(config_dir: &Path, session: &str) -> bool {
    let Ok(projects) = std::fs::read_dir(config_dir.join("projects")) else {
        return false;
    };
    let file = format!("{session}.jsonl");
    projects.flatten().any(|p| p.path().join(&file).is_file())
}

/// The session flags of a Claude Code teammate's launch: `--resume ID`
/// when its transcript exists in `config_dir` (the `CLAUDE_CONFIG_DIR` it
/// runs with), else `--session-id ID` so that the session it starts is the
/// one recorded.
pub fn claude_session_args(m: &Member, config_dir: Option<&Path>) -> Vec<String> {
    let Some(id) = session_id(m) else {
        return Vec::new();
    };
    if config_dir.is_some_and(|d| transcript_exists(d, id)) {
        vec!["--resume".into(), id.to_string()]
    } else {
        vec!["--session-id".into(), id.to_string()]
    }
}

/// Writes `prompt` as the first entry of `name`'s inbox, as Claude Code's
/// lead does before the teammate starts (reference §8.4, §8.5): a plain
/// entry `from: "team-lead"` with keys `from, text, timestamp, msgV,
/// msg_id, type, read, lead_sig`, signed with the member's key. A prompt
/// that is itself a protocol frame is refused.
///
/// Where Claude Code's lead clears the inbox first, swarm keeps what waits
/// there: unread mail (sent while the member was down, or before it was
/// first spawned) stays unread after the prompt, in its order, so the new
/// session reads the prompt first and then that mail. An unread copy of
/// the same prompt (a fresh start before the last one was read) and
/// entries already consumed (`read:true`) move to the member's history
/// instead: the prompt is never there twice.
///
/// A Claude Code teammate trusts a signed entry only if it is no more than
/// 120 s older than its own start (reference §4.5); an older one reaches
/// its model flagged `verified="false"` and its protocol effect (a
/// shutdown request, a plan approval) is refused. So the unread entries
/// swarm signed for this member are stamped with the prompt's time and
/// signed again: the new session verifies them as it does the prompt.
pub fn write_initial_prompt(team: &Team, name: &str, prompt: &str) -> Result<Entry> {
    if crate::protocol::Message::parse(prompt).is_some() {
        bail!(
            "the initial prompt for {name:?} is a protocol frame; refusing to send it as a prompt"
        );
    }
    let key = LeadKey::load_or_create(&team.root, &team.name, name)?;
    let lead = crate::names::LEAD_NAME;
    let mut entry = Entry::new(lead, prompt.to_string(), None, None);
    key.sign_entry(&mut entry);
    team.mailbox()
        .ready_for_start(
            name,
            Some(entry.clone()),
            |e| e.from == lead && e.text == prompt,
            restamped(&key, &entry.timestamp),
        )
        .with_context(|| format!("writing the initial prompt to {name}'s inbox"))?;
    Ok(entry)
}

/// For a Claude Code teammate about to resume its conversation (no first
/// prompt): the unread entries swarm signed for it stamped now and signed
/// again, as [`write_initial_prompt`] does, so that the resumed session
/// trusts the mail that came while it was down.
pub fn restamp_signed_mail(team: &Team, name: &str) -> Result<()> {
    let Some(key) = LeadKey::load(&team.root, &team.name, name)? else {
        return Ok(()); // nothing was ever signed for it
    };
    let now = crate::clock::now_iso();
    team.mailbox()
        .ready_for_start(name, None, |_| false, restamped(&key, &now))
        .with_context(|| format!("stamping afresh the lead's unread mail to {name}"))?;
    Ok(())
}

/// An entry `key` signed, stamped `now` and signed again; `None` for any
/// other (another sender's, or one swarm did not sign: left as it is).
fn restamped<'a>(key: &'a LeadKey, now: &'a str) -> impl Fn(&Entry) -> Option<Entry> + 'a {
    move |e: &Entry| {
        let ours = e.lead_sig.as_deref() == Some(key.sign(e).as_str());
        ours.then(|| {
            let mut e = e.clone();
            e.timestamp = now.to_owned();
            key.sign_entry(&mut e);
            e
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn team(root: &Path) -> Team {
        Team::new(&Root::new(root), "t")
    }

    #[test]
    fn a_fresh_start_puts_the_prompt_first_and_keeps_the_unread_mail_after_it() {
        let d = tempfile::tempdir().unwrap();
        let t = team(d.path());
        let mb = t.mailbox();
        // A consumed entry (`read:true`, as Claude Code 2.1.88 leaves
        // them), then mail that came while alice was down.
        let inbox = mb.inbox_path("alice").unwrap();
        std::fs::create_dir_all(inbox.parent().unwrap()).unwrap();
        std::fs::write(
            &inbox,
            r#"[{"from":"bob","text":"old news","timestamp":"2026-01-01T00:00:00.000Z","read":true}]"#,
        )
        .unwrap();
        // The lead's mail, signed for alice, sent long before her start:
        // a Claude Code teammate would not trust its stamp (reference §4.5).
        let key = LeadKey::load_or_create(&t.root, "t", "alice").unwrap();
        let old = "2026-01-01T00:00:00.000Z";
        let mut signed = Entry::new("team-lead", "and this".into(), None, None);
        signed.timestamp = old.into();
        key.sign_entry(&mut signed);
        let mut unsigned = Entry::new("team-lead", "unsigned".into(), None, None);
        unsigned.timestamp = old.into();
        for e in [
            Entry::new("bob", "while you were down".into(), None, None),
            signed,
            unsigned,
        ] {
            mb.append("alice", e).unwrap();
        }
        let texts = |v: Vec<Entry>| v.into_iter().map(|e| e.text).collect::<Vec<_>>();
        let unread = [
            "You are alice.",
            "while you were down",
            "and this",
            "unsigned",
        ];
        let first = write_initial_prompt(&t, "alice", "You are alice.").unwrap();
        let now = mb.read("alice").unwrap().entries;
        assert!(now.iter().all(Entry::is_unread), "{now:#?}");
        assert_eq!(now[0].msg_id, first.msg_id);
        let verifier =
            crate::mailbox::signing::LeadVerifier::parse(&key.verify_key_arg(0)).unwrap();
        assert_eq!(now[2].timestamp, first.timestamp, "stamped afresh");
        assert!(verifier.verifies(&now[2]), "and signed again");
        assert_eq!(
            (now[3].timestamp.as_str(), &now[3].lead_sig),
            (old, &None),
            "what swarm did not sign is left as it was"
        );
        assert_eq!(texts(now), unread, "the prompt first, then the mail");
        // A fresh start again before alice read any of it: one prompt (the
        // new one), the mail still after it.
        let again = write_initial_prompt(&t, "alice", "You are alice.").unwrap();
        let now = mb.read("alice").unwrap().entries;
        assert_eq!(now[0].msg_id, again.msg_id);
        assert_eq!(texts(now), unread, "no second copy of the prompt");
        assert_eq!(
            texts(mb.history("alice").unwrap()),
            ["old news", "You are alice."],
            "what was consumed and the superseded prompt are kept in history"
        );
    }

    #[test]
    fn the_mode_is_passed_and_defaults_to_default() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            permission_args(false, None),
            s(&["--permission-mode", "default"])
        );
        assert_eq!(
            permission_args(false, Some("manual")),
            s(&["--permission-mode", "default"])
        );
        assert_eq!(
            permission_args(false, Some("acceptEdits")),
            s(&["--permission-mode", "acceptEdits"])
        );
        assert_eq!(
            permission_args(false, Some("dontAsk")),
            s(&["--permission-mode", "dontAsk"])
        );
        assert_eq!(
            permission_args(true, Some("acceptEdits")),
            s(&["--permission-mode", "plan"])
        );
        assert_eq!(
            permission_args(false, Some("bypassPermissions")),
            s(&["--dangerously-skip-permissions"])
        );
    }

    #[test]
    fn the_users_own_config_dir_as_root_sets_nothing() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        let t = team(&home.join(".claude"));
        let user = UserClaude::with_home(&home);
        assert_eq!(ConfigHome::prepare(&t, &user).unwrap(), ConfigHome::Users);
        assert!(ConfigHome::Users.env().is_empty());
        // And through a symlinked spelling of the same directory.
        std::os::unix::fs::symlink(home.join(".claude"), d.path().join("alias")).unwrap();
        let t = team(&d.path().join("alias"));
        assert_eq!(ConfigHome::prepare(&t, &user).unwrap(), ConfigHome::Users);
        // CLAUDE_CONFIG_DIR set by the user and used as the root.
        let user = UserClaude {
            config_dir_var: Some(d.path().join("cfg")),
            ..UserClaude::with_home(&home)
        };
        std::fs::create_dir_all(d.path().join("cfg")).unwrap();
        let t = team(&d.path().join("cfg"));
        assert_eq!(ConfigHome::prepare(&t, &user).unwrap(), ConfigHome::Users);
    }

    #[test]
    fn another_root_gets_a_dir_of_links_to_the_users_files_and_the_roots_teams() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().join("home");
        let cfg = home.join(".claude");
        std::fs::create_dir_all(cfg.join("agents")).unwrap();
        std::fs::write(cfg.join("settings.json"), "{}").unwrap();
        std::fs::write(cfg.join(".credentials.json"), "{}").unwrap();
        std::fs::create_dir_all(cfg.join("teams/theirs")).unwrap();
        std::fs::write(home.join(".claude.json"), "{}").unwrap();
        let root = d.path().join("root");
        let t = team(&root);
        let user = UserClaude::with_home(&home);
        let ch = ConfigHome::prepare(&t, &user).unwrap();
        let dir = root.join("swarm/t/claude-config");
        assert_eq!(
            ch,
            ConfigHome::Linked {
                dir: dir.clone(),
                secure_storage: String::new()
            }
        );
        let env: std::collections::BTreeMap<_, _> = ch.env().into_iter().collect();
        assert_eq!(env["CLAUDE_CONFIG_DIR"], dir.to_string_lossy());
        assert_eq!(env["CLAUDE_SECURESTORAGE_CONFIG_DIR"], "");
        let target = |n: &str| std::fs::read_link(dir.join(n)).ok();
        assert_eq!(target(".claude.json"), Some(home.join(".claude.json")));
        assert_eq!(target("settings.json"), Some(cfg.join("settings.json")));
        assert_eq!(target("agents"), Some(cfg.join("agents")));
        assert_eq!(target("teams"), Some(root.join("teams")));
        assert_eq!(target("tasks"), Some(root.join("tasks")));
        assert!(
            !dir.join(".credentials.json").exists(),
            "read via secure storage"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);

        // Again: the same; Claude Code's own directory kept; a removed
        // entry's link gone; a new entry linked.
        std::fs::create_dir(dir.join("projects")).unwrap();
        std::fs::create_dir(cfg.join("projects")).unwrap();
        std::fs::remove_dir(cfg.join("agents")).unwrap();
        std::fs::write(cfg.join("CLAUDE.md"), "be nice").unwrap();
        ConfigHome::prepare(&t, &user).unwrap();
        assert!(
            std::fs::symlink_metadata(dir.join("projects"))
                .unwrap()
                .is_dir()
        );
        assert_eq!(target("agents"), None);
        assert_eq!(target("CLAUDE.md"), Some(cfg.join("CLAUDE.md")));
        assert_eq!(
            std::fs::read_to_string(dir.join("CLAUDE.md")).unwrap(),
            "be nice"
        );
        let leftovers: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("swarm-link"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn a_users_claude_config_dir_is_their_credential_store_too() {
        let d = tempfile::tempdir().unwrap();
        let cfg = d.path().join("cfg");
        std::fs::create_dir_all(&cfg).unwrap();
        let user = UserClaude {
            config_dir_var: Some(cfg.clone()),
            home: Some(d.path().join("home")),
            secure_storage_var: None,
        };
        let t = team(&d.path().join("root"));
        let ConfigHome::Linked {
            dir,
            secure_storage,
        } = ConfigHome::prepare(&t, &user).unwrap()
        else {
            panic!("a root elsewhere needs the linked dir")
        };
        assert_eq!(secure_storage, cfg.to_string_lossy());
        assert_eq!(
            std::fs::read_link(dir.join(".claude.json")).unwrap(),
            cfg.join(".claude.json")
        );
        let user = UserClaude {
            secure_storage_var: Some("/keys".into()),
            ..user
        };
        let ConfigHome::Linked { secure_storage, .. } = ConfigHome::prepare(&t, &user).unwrap()
        else {
            panic!()
        };
        assert_eq!(secure_storage, "/keys", "the user's own choice is kept");
    }
}
