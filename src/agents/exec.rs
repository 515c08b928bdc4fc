//! Exec presets: CLIs driven one non-interactive run per unit of work.
//!
//! Exact command lines (`[…]` parts appear only when set). A prompt that
//! fits in one argument (at most [`MAX_ARG_BYTES`], Linux's per-argument
//! limit `MAX_ARG_STRLEN` less its NUL, and no NUL byte of its own) is the
//! last argument, with stdin `/dev/null`. A longer one goes where each CLI
//! reads a prompt from instead, through the member's prompt file (written
//! 0600 for the run, removed after it; its path is also in
//! `$SWARM_PROMPT_FILE`):
//!
//! | preset | prompt that fits | longer prompt |
//! |---|---|---|
//! | `codex` | `codex exec [resume] --skip-git-repo-check [--model M] [MODE FLAGS] -c mcp_servers.swarm.… [SESSION] PROMPT` | same, `-` for `PROMPT` (`codex exec` reads the prompt from stdin), stdin = the file |
//! | `gemini` | `gemini [--model M] [MODE FLAGS] -p PROMPT` | no `-p PROMPT`, stdin = the file (Gemini CLI runs non-interactively on a stdin that is not a terminal and takes it as the prompt) |
//! | `aider` | `aider --yes-always --no-pretty [--model M] --message PROMPT` | `--message-file FILE` for `--message PROMPT` |
//! | `claude-print` | `claude -p [--model M] [--permission-mode MODE] PROMPT` | no `PROMPT`, stdin = the file (`claude -p` reads the prompt from stdin) |
//! | `command` | `ARGV…`, always: the prompt is never an argument | the same |
//!
//! A `command` agent gets its prompt the same way whatever its size: on
//! stdin (the prompt file, so reading it never blocks and ends at EOF) and
//! as the file named by `$SWARM_PROMPT_FILE`; its argv is the member's
//! command exactly.
//!
//! Should an exec still be refused as too long (`E2BIG`: argv and
//! environment together past `ARG_MAX`), the run is retried once with the
//! longer-prompt form (see `Runner` in the parent module).
//!
//! The member's `command` (spec `command = [...]`, roster `swarmCommand`)
//! replaces the preset's prefix (everything before the first `[…]`), so
//! `command = ["/opt/codex/bin/codex", "exec"]` keeps the model and mode
//! flags and the prompt.
//!
//! Permission modes (the roster's `mode`: set at spawn by `--mode` or the
//! spec's `mode`, changed by a `mode_set_request` for the next run) map to
//! each CLI's own flags where it has them (checked against Codex 0.171.0,
//! which has no `--full-auto` any more, and Gemini CLI 0.61.0; Codex's
//! sandbox goes by `-c sandbox_mode=…` because `codex exec resume` takes no
//! `--sandbox`):
//!
//! | mode | codex | gemini | claude-print | aider, command |
//! |---|---|---|---|---|
//! | `bypassPermissions` | `--dangerously-bypass-approvals-and-sandbox` | `--yolo` | `--permission-mode bypassPermissions` | none |
//! | `acceptEdits` | `-c sandbox_mode="workspace-write"` | `--approval-mode auto_edit` | `--permission-mode acceptEdits` | none |
//! | `plan` | `-c sandbox_mode="read-only"` | `--approval-mode plan` | `--permission-mode plan` | none |
//! | `default`, none | none (its own config) | none (its own config) | `--permission-mode default` for `default` | none |
//! | `dontAsk`, `auto` | none | none | `--permission-mode MODE` | none |
//!
//! Aider has no permission modes (it runs `--yes-always`); a `command` is
//! the user's own, so neither gets a flag: the mode does not apply.
//!
//! Codex and Gemini CLI also get swarm's own MCP server in their launch
//! ([`TeamServer`]: `swarm mcp` for the member's team and name): Codex by
//! `-c mcp_servers.swarm.command=…`, `….args=["mcp"]` and `….env={…}` after
//! the mode flags, Gemini CLI by a home of its own in the member's private
//! state (`GEMINI_CLI_HOME`), its settings the user's with the server
//! added. The user's own configuration (`~/.codex`, `~/.gemini`) is never
//! written.
//!
//! Session flags (`--session-id`/`--resume ID`, aider's
//! `--chat-history-file F [--restore-chat-history]`, codex's `resume … ID`)
//! come after the mode flags: see [`super::session`].
//!
//! The prompt of a run that starts a session is the member's role prompt
//! and (all presets but `command`) [`team_instructions`] (Codex and Gemini
//! CLI: and [`TEAM_TOOLS`], the MCP tools they have), a blank line,
//! then either the
//! incoming messages, each wrapped as Claude Code shows them to its model
//! (reference §8.4: `<teammate-message teammate_id="FROM">\nTEXT\n</teammate-message>`,
//! joined by a blank line), or the task (`Task #ID: SUBJECT`, a blank line,
//! the description). A resumed run gets only the messages or the task:
//! the session has the rest.

use crate::mailbox::Entry;
use crate::tasks::Task;
use std::path::{Path, PathBuf};

/// The longest prompt passed as one argument: Linux refuses an exec whose
/// argument is longer than `MAX_ARG_STRLEN` (32 pages, 128 KiB, counting
/// the terminating NUL) with `E2BIG`.
pub const MAX_ARG_BYTES: usize = 128 * 1024 - 1;

/// Where one run's prompt goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// The last argument.
    Argv,
    /// Standard input, read from the prompt file.
    Stdin,
    /// A file named in argv (aider's `--message-file FILE`).
    File,
}

/// One run of a preset: its argv and how the prompt reaches it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub delivery: Delivery,
    /// The prompt file, when the prompt is not in argv: written before the
    /// run, named in `SWARM_PROMPT_FILE`, and stdin for [`Delivery::Stdin`].
    pub prompt_file: Option<PathBuf>,
    /// Variables the run gets beyond the member's environment (Gemini CLI:
    /// where the settings naming swarm's MCP server are).
    pub env: Vec<(String, String)>,
}

/// How one run continues the member's conversation: what
/// [`super::session`] decides and the presets' flags carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// A new conversation; `id` is the one to start it with, when the CLI
    /// takes one (`--session-id`, aider's history file).
    Fresh { id: Option<String> },
    /// Continue this session.
    Resume(String),
}

impl Turn {
    pub fn is_fresh(&self) -> bool {
        matches!(self, Turn::Fresh { .. })
    }
}

/// The exec presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Codex,
    Gemini,
    Aider,
    ClaudePrint,
    Command,
}

impl Preset {
    pub fn from_name(name: &str) -> Option<Preset> {
        Some(match name {
            "codex" => Preset::Codex,
            "gemini" => Preset::Gemini,
            "aider" => Preset::Aider,
            "claude-print" => Preset::ClaudePrint,
            "command" => Preset::Command,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::Codex => "codex",
            Preset::Gemini => "gemini",
            Preset::Aider => "aider",
            Preset::ClaudePrint => "claude-print",
            Preset::Command => "command",
        }
    }

    /// The argv prefix when the member names no command (`command` has none).
    pub fn default_prefix(self) -> &'static [&'static str] {
        match self {
            Preset::Codex => &["codex", "exec", "--skip-git-repo-check"],
            Preset::Gemini => &["gemini"],
            Preset::Aider => &["aider", "--yes-always", "--no-pretty"],
            Preset::ClaudePrint => &["claude", "-p"],
            Preset::Command => &[],
        }
    }

    /// The CLI's flags for a permission mode (see the module table).
    pub fn mode_flags(self, mode: &str) -> Vec<String> {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        match (self, mode) {
            (Preset::Codex, "bypassPermissions") => {
                v(&["--dangerously-bypass-approvals-and-sandbox"])
            }
            // `-c`, not `--sandbox`: `codex exec resume` takes no `--sandbox`.
            (Preset::Codex, "acceptEdits") => v(&["-c", "sandbox_mode=\"workspace-write\""]),
            (Preset::Codex, "plan") => v(&["-c", "sandbox_mode=\"read-only\""]),
            (Preset::Gemini, "bypassPermissions") => v(&["--yolo"]),
            (Preset::Gemini, "acceptEdits") => v(&["--approval-mode", "auto_edit"]),
            (Preset::Gemini, "plan") => v(&["--approval-mode", "plan"]),
            (Preset::ClaudePrint, m) if !m.is_empty() => v(&["--permission-mode", m]),
            _ => Vec::new(),
        }
    }

    /// Whether the CLI gets swarm's MCP server in its launch ([`TeamServer`]).
    pub fn gets_team_server(self) -> bool {
        matches!(self, Preset::Codex | Preset::Gemini | Preset::ClaudePrint)
    }

    /// Where a prompt goes: the last argument when it fits, else what the
    /// CLI reads instead (see the module table). `command` always stdin.
    pub fn delivery(self, prompt: &str) -> Delivery {
        let fits = prompt.len() <= MAX_ARG_BYTES && !prompt.contains('\0');
        match self {
            Preset::Command => Delivery::Stdin,
            _ if fits => Delivery::Argv,
            _ => self.long_delivery(),
        }
    }

    /// Whether a successful run's answer is its stdout alone: Codex,
    /// Gemini CLI and `claude -p` print only the final answer there (Codex
    /// echoes its header and the whole prompt on stderr); Aider prints its
    /// banner and answer together on stdout, and a `command`'s output is
    /// all its own.
    pub fn answers_on_stdout(self) -> bool {
        matches!(self, Preset::Codex | Preset::Gemini | Preset::ClaudePrint)
    }

    /// Where a prompt goes when argv cannot carry it.
    pub fn long_delivery(self) -> Delivery {
        match self {
            Preset::Aider => Delivery::File,
            _ => Delivery::Stdin,
        }
    }

    /// One run with `prompt` sent as `delivery` (`command` ignores it: its
    /// prompt is always on stdin); `file` is where the prompt file goes;
    /// `turn` says whether it starts or resumes the member's session (see
    /// [`super::session`]); `server`, swarm's MCP server for the CLIs that
    /// get it ([`Preset::gets_team_server`]).
    #[allow(clippy::too_many_arguments, reason = "one run's parts, each its own")]
    pub fn launch(
        self,
        command: Option<&[String]>,
        model: Option<&str>,
        mode: Option<&str>,
        prompt: &str,
        delivery: Delivery,
        file: &Path,
        turn: &Turn,
        server: Option<&TeamServer>,
    ) -> Launch {
        let delivery = match (self, delivery) {
            (Preset::Command, _) => Delivery::Stdin,
            (_, Delivery::Argv) => Delivery::Argv,
            _ => self.long_delivery(),
        };
        let mut argv: Vec<String> = match command {
            Some(c) if !c.is_empty() => c.to_vec(),
            _ => self
                .default_prefix()
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        if let (Preset::Codex, Turn::Resume(_)) = (self, turn) {
            // `codex exec resume …`: the subcommand right after `exec`.
            let at = argv
                .iter()
                .position(|a| a == "exec")
                .map_or(argv.len(), |i| i + 1);
            argv.insert(at, "resume".into());
        }
        if let Some(m) = model.filter(|m| !m.is_empty())
            && self != Preset::Command
        {
            argv.extend(["--model".to_string(), m.to_string()]);
        }
        if let Some(mode) = mode {
            argv.extend(self.mode_flags(mode));
        }
        let mut env = Vec::new();
        match (self, server) {
            (Preset::Codex, Some(server)) => argv.extend(server.codex_flags()),
            (Preset::ClaudePrint, Some(server)) => argv.extend(server.claude_flags()),
            (Preset::Gemini, Some(server)) => env.push((
                GEMINI_HOME_VAR.to_string(),
                server.gemini_home.to_string_lossy().into_owned(),
            )),
            _ => {}
        }
        argv.extend(self.session_args(turn));
        let path = || file.to_string_lossy().into_owned();
        match (self, delivery) {
            (Preset::Command, _) => {}
            (Preset::Gemini, Delivery::Argv) => argv.extend(["-p".into(), prompt.to_string()]),
            (Preset::Aider, Delivery::Argv) => {
                argv.extend(["--message".into(), prompt.to_string()])
            }
            (Preset::Aider, _) => argv.extend(["--message-file".into(), path()]),
            (_, Delivery::Argv) => argv.push(prompt.to_string()),
            (Preset::Codex, _) => argv.push("-".into()),
            (Preset::Gemini | Preset::ClaudePrint, _) => {}
        }
        Launch {
            argv,
            delivery,
            prompt_file: (delivery != Delivery::Argv).then(|| file.to_path_buf()),
            env,
        }
    }
}

/// A coordinator AI lead has the team tools only (DESIGN §12): its CLI's
/// own tools, those that read, edit or run, are taken away for the run.
/// Claude Code: `--tools=` (no built-in tool; MCP tools stay), in one
/// argument: `--tools` takes a list, so as `--tools ""` it would take the
/// prompt after it as one more tool name and run with no prompt. Codex:
/// its shell and patch tools disabled, and its own sub-agents (a
/// coordinator's workers are swarm's teammates). Gemini CLI: its core tools
/// excluded in the member's own settings (see `TeamServer`).
pub fn coordinator_only(p: Preset, launch: &mut Launch) {
    let extra: &[&str] = match p {
        Preset::ClaudePrint => &["--tools="],
        Preset::Codex => &[
            "--disable",
            "shell_tool",
            "--disable",
            "unified_exec",
            "-c",
            "include_apply_patch_tool=false",
            // Codex's own sub-agents (spawn_agent …) and its image viewer.
            "--disable",
            "multi_agent",
            "--disable",
            "view_image",
        ],
        _ => &[],
    };
    // Before the prompt when argv carries it (the last argument), and
    // before Codex's `-` (the prompt on stdin).
    let last_is_prompt =
        launch.delivery == Delivery::Argv || launch.argv.last().is_some_and(|a| a == "-");
    let at = launch.argv.len() - usize::from(last_is_prompt && !launch.argv.is_empty());
    for (i, a) in extra.iter().enumerate() {
        launch.argv.insert(at + i, a.to_string());
    }
}

/// The variable naming Gemini CLI's home (`$GEMINI_CLI_HOME/.gemini` is its
/// user configuration, in place of `~/.gemini`).
pub const GEMINI_HOME_VAR: &str = "GEMINI_CLI_HOME";

/// What `swarm mcp` reads to know its team, its member and where the panes
/// are, taken from the member's environment into the server's.
const SERVER_ENV: [&str; 7] = [
    "SWARM_HOME",
    "SWARM_TEAM",
    "SWARM_AGENT_NAME",
    AI_LEAD_VAR,
    "SWARM_TMUX_SOCKET",
    "SWARM_BACKEND",
    "SWARM_LOG",
];

/// Set (to `1`) in the environment of the AI lead's MCP server: it acts
/// as `team-lead`, but answers teammates' requests only when its `[lead]`
/// says `approves`, and its answers are recorded as the AI lead's.
pub const AI_LEAD_VAR: &str = "SWARM_AI_LEAD";

/// The approval mode that lets Codex call an MCP server's tools without
/// asking (Codex's `AppToolApproval::Approve`).
pub const CODEX_APPROVE: &str = "\"approve\"";

/// swarm's MCP server (DESIGN §12) as a teammate's CLI starts it, under
/// the name `swarm`: `swarm mcp` for the member's own team and name (the
/// `SWARM_*` variables of its environment, given to the server whole:
/// Codex passes an MCP server only a few variables of its own).
///
/// Gemini CLI 0.61.0 reads MCP servers from its settings files only, and
/// takes a system defaults file (`GEMINI_CLI_SYSTEM_DEFAULTS_PATH`) only
/// when it and every directory above it belong to root: so the member's
/// Gemini CLI gets a home of its own ([`TeamServer::prepare_gemini_home`],
/// `GEMINI_CLI_HOME`) whose `.gemini` links to every entry of the user's
/// own `.gemini` (credentials, trusted folders, sessions, …) but
/// `settings.json`, which is the user's settings with the server added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamServer {
    /// swarm's executable, by absolute path.
    pub program: String,
    /// The server's environment (`SERVER_ENV` as the member has them).
    pub env: Vec<(String, String)>,
    /// The member's Gemini CLI home, in its private state
    /// (`<state>/runtime/<member>.gemini-home`).
    pub gemini_home: PathBuf,
    /// The user's own Gemini CLI configuration (`$GEMINI_CLI_HOME/.gemini`,
    /// else `~/.gemini`), read and linked to, never written.
    pub user_gemini: Option<PathBuf>,
}

impl TeamServer {
    /// The server for the member whose environment is `env`, swarm being
    /// `program`; `None` without the member's identity in it.
    pub fn of(program: &str, env: &[(String, String)]) -> Option<TeamServer> {
        let get = |k: &str| {
            env.iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty())
        };
        let (home, team, name) = (
            get("SWARM_HOME")?,
            get("SWARM_TEAM")?,
            get("SWARM_AGENT_NAME")?,
        );
        let gemini_home = crate::paths::Root::new(&home)
            .runtime_file(&team, &name, "gemini-home")
            .ok()?;
        Some(TeamServer {
            program: program.to_string(),
            env: SERVER_ENV
                .iter()
                .filter_map(|k| Some((k.to_string(), get(k)?)))
                .collect(),
            gemini_home,
            user_gemini: get(GEMINI_HOME_VAR)
                .or_else(|| get("HOME"))
                .map(|h| PathBuf::from(h).join(".gemini")),
        })
    }

    /// Claude Code's flags registering the server for one run (an inline
    /// `--mcp-config`; the user's own MCP servers stay) and allowing its
    /// tools without a permission prompt (`--allowedTools mcp__swarm`:
    /// every tool of the server), since a print-mode run cannot ask.
    pub fn claude_flags(&self) -> Vec<String> {
        let env: serde_json::Map<String, serde_json::Value> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        let config = serde_json::json!({"mcpServers": {"swarm": {
            "type": "stdio", "command": self.program, "args": ["mcp"], "env": env,
        }}});
        vec![
            "--mcp-config".into(),
            config.to_string(),
            "--allowedTools".into(),
            "mcp__swarm".into(),
        ]
    }

    /// Codex's `-c` overrides registering the server (values in TOML) and
    /// allowing its tools without an approval (`default_tools_approval_mode`
    /// [`CODEX_APPROVE`]): `codex exec` cannot ask, and without it Codex
    /// 0.171.0 fails every call of a tool that is not read-only ("MCP tool
    /// call requires approval, but approval policy is never") unless the
    /// member runs `bypassPermissions` (the AI lead never does). Claude
    /// Code's members have the same (`--allowedTools mcp__swarm`).
    pub fn codex_flags(&self) -> Vec<String> {
        let toml_str = |s: &str| toml::Value::String(s.to_string()).to_string();
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k} = {}", toml_str(v)))
            .collect();
        vec![
            "-c".into(),
            format!("mcp_servers.swarm.command={}", toml_str(&self.program)),
            "-c".into(),
            "mcp_servers.swarm.args=[\"mcp\"]".into(),
            "-c".into(),
            format!("mcp_servers.swarm.env={{{}}}", env.join(", ")),
            "-c".into(),
            format!("mcp_servers.swarm.default_tools_approval_mode={CODEX_APPROVE}"),
        ]
    }

    /// Gemini CLI's settings: `base` (the user's own) with the server added
    /// to its `mcpServers`.
    pub fn gemini_settings_json(&self, base: Option<serde_json::Value>) -> serde_json::Value {
        use serde_json::{Value, json};
        let env: serde_json::Map<String, Value> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let server = json!({"command": self.program, "args": ["mcp"], "env": env});
        let mut out = match base {
            Some(Value::Object(m)) => Value::Object(m),
            _ => json!({}),
        };
        if !out["mcpServers"].is_object() {
            out["mcpServers"] = json!({});
        }
        out["mcpServers"]["swarm"] = server;
        out
    }

    /// Makes the member's Gemini CLI home: `.gemini` of links to the
    /// user's own entries (as [`super::claude::build_linked_dir`] does for
    /// Claude Code) and `settings.json`, theirs with the server added.
    /// Returns whether the server is in it: settings of the user's that do
    /// not read as JSON (comments aside) are linked as they are, without it.
    pub fn prepare_gemini_home(&self) -> anyhow::Result<bool> {
        use anyhow::Context as _;
        let dir = self.gemini_home.join(".gemini");
        crate::atomic_file::ensure_dir(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let mut want = Vec::new();
        if let Some(user) = &self.user_gemini
            && let Ok(entries) = std::fs::read_dir(user)
        {
            for e in entries.flatten() {
                if e.file_name() != "settings.json" {
                    want.push(e.file_name());
                    super::claude::link(&dir.join(e.file_name()), &user.join(e.file_name()))?;
                }
            }
        }
        // Links to what the user has since removed.
        if let Some(user) = &self.user_gemini {
            for e in std::fs::read_dir(&dir)?.flatten() {
                let stale = e.file_type().is_ok_and(|t| t.is_symlink())
                    && e.file_name() != "settings.json"
                    && !want.contains(&e.file_name())
                    && std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(user));
                if stale {
                    crate::dropped::ignore(
                        std::fs::remove_file(e.path()),
                        "removing a link to a Gemini CLI entry the user removed",
                    );
                }
            }
        }
        let settings = dir.join("settings.json");
        let theirs = self.user_gemini.as_ref().map(|u| u.join("settings.json"));
        let base = match theirs.as_deref().map(std::fs::read) {
            None => None,
            Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
            Some(Err(e)) => {
                return Err(e)
                    .with_context(|| format!("reading {}", shown_path(theirs.as_deref())));
            }
            Some(Ok(bytes)) => match json_with_comments(&bytes) {
                Some(v) => Some(v),
                None => {
                    tracing::warn!(file = %shown_path(theirs.as_deref()), "Gemini CLI settings that do not read as JSON: linked as they are, without swarm's MCP server");
                    crate::atomic_file::remove_if_there(&settings)?;
                    super::claude::link(&settings, theirs.as_deref().expect("read above"))?;
                    return Ok(false);
                }
            },
        };
        if std::fs::symlink_metadata(&settings).is_ok_and(|m| m.file_type().is_symlink()) {
            // Theirs, linked when it did not read: now it does.
            crate::atomic_file::remove_if_there(&settings)?;
        }
        let json = self.gemini_settings_json(base);
        crate::atomic_file::write_atomic(
            &settings,
            &serde_json::to_vec_pretty(&json).expect("JSON serializes"),
        )
        .with_context(|| format!("writing {}", settings.display()))?;
        Ok(true)
    }
}

fn shown_path(p: Option<&Path>) -> String {
    p.map(|p| p.display().to_string()).unwrap_or_default()
}

/// JSON as Gemini CLI reads its settings: `//` and `/* */` comments
/// outside strings allowed.
fn json_with_comments(bytes: &[u8]) -> Option<serde_json::Value> {
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Some(v);
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    serde_json::from_str(&out).ok()
}

impl Preset {
    /// The flags that start or resume the member's session (see
    /// [`super::session`]); Codex's id is positional, before the prompt.
    fn session_args(self, turn: &Turn) -> Vec<String> {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        match (self, turn) {
            (Preset::Codex, Turn::Resume(id)) => v(&[id]),
            (Preset::ClaudePrint | Preset::Gemini, Turn::Fresh { id: Some(id) }) => {
                v(&["--session-id", id])
            }
            (Preset::ClaudePrint | Preset::Gemini, Turn::Resume(id)) => v(&["--resume", id]),
            (Preset::Aider, Turn::Fresh { id: Some(f) }) => v(&["--chat-history-file", f]),
            (Preset::Aider, Turn::Resume(f)) => {
                v(&["--chat-history-file", f, "--restore-chat-history"])
            }
            _ => Vec::new(),
        }
    }
}

/// What a teammate that is not Claude Code is told about its team, after
/// its role prompt: how to answer, message and work the task list from its
/// own shell with `swarm` at `swarm` (its absolute path: a login shell may
/// reset `PATH`, as Debian's `/etc/profile` does, and Codex runs its
/// commands in one), its identity being in the environment
/// (`SWARM_AGENT_NAME`, `SWARM_TEAM`, `SWARM_HOME`).
pub fn team_instructions(name: &str, team: &str, swarm: &str) -> String {
    let swarm = shell_word(swarm);
    format!(
        "You are {name}, a teammate in the swarm team {team:?}; the lead is team-lead. \
         Your final answer to each turn is sent back to whoever wrote to you. \
         To reach the team yourself, run these in your shell (your identity is set in \
         your environment, so they need no other flags):\n\
         - message someone: {swarm} send --to NAME \"TEXT\" (NAME: team-lead or a teammate)\n\
         - see the tasks: {swarm} task list\n\
         - claim one: {swarm} task claim ID\n\
         - update one: {swarm} task update ID --status in-progress|completed"
    )
}

/// What the team instructions add for a CLI that has swarm's MCP server.
pub const TEAM_TOOLS: &str = "\nThe same is at hand as tools, without a shell: the swarm MCP \
    server's send_message (to, text), read_inbox, wait_for_messages, task_list, task_get, \
    task_claim, task_update and team_status act for you in your team; its other tools \
    (spawn_teammate, shutdown_teammate, kill_teammate, teammate_output, answer_request) \
    are the lead's.";

/// `word` as one shell word: as it is when plain, else single-quoted.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=@%+:,".contains(c))
    {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', "'\\''"))
}

/// What opens the prompt of a run that starts a session: the member's
/// role prompt and, for every preset but `command` (a program of the
/// user's own, whose prompt is its input), [`team_instructions`].
pub fn opening(
    preset: Preset,
    role: Option<&str>,
    name: &str,
    team: &str,
    swarm: &str,
) -> Option<String> {
    let role = role.map(str::trim).filter(|r| !r.is_empty());
    if preset == Preset::Command {
        return role.map(str::to_string);
    }
    let mut team = team_instructions(name, team, swarm);
    if preset.gets_team_server() {
        team.push_str(TEAM_TOOLS);
    }
    Some(match role {
        Some(r) => format!("{r}\n\n{team}"),
        None => team,
    })
}

/// A prompt written to a private file for one run; removed on drop.
#[derive(Debug)]
pub struct PromptFile {
    path: PathBuf,
}

impl PromptFile {
    /// Writes `prompt` to `path` atomically (0600, its directory 0700).
    pub fn write(path: &Path, prompt: &str) -> std::io::Result<PromptFile> {
        if let Some(dir) = path.parent() {
            crate::atomic_file::ensure_dir(dir)?;
        }
        crate::atomic_file::write_atomic(path, prompt.as_bytes())?;
        Ok(PromptFile {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for PromptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// `<teammate-message teammate_id="FROM"[ color="C"][ summary="S"]>\nTEXT\n</teammate-message>`.
pub fn wrap_message(entry: &Entry) -> String {
    let mut open = format!("<teammate-message teammate_id=\"{}\"", attr(&entry.from));
    if let Some(c) = entry
        .color
        .as_deref()
        .filter(|c| crate::team::colors::is_palette(c))
    {
        open.push_str(&format!(" color=\"{}\"", attr(c)));
    }
    // A summary that is the text's own beginning (the default one: its
    // first line, cut) would carry the text twice (issue 24, item 10: 1802
    // markers for 901 messages); only a summary of its own is shown.
    if let Some(s) = entry
        .summary
        .as_deref()
        .filter(|s| !s.is_empty() && !entry.text.starts_with(s))
    {
        let s: String = s.chars().take(200).collect();
        open.push_str(&format!(" summary=\"{}\"", attr(&s)));
    }
    format!("{open}>\n{}\n</teammate-message>", entry.text)
}

fn attr(v: &str) -> String {
    v.replace('"', "&quot;").replace('\'', "&apos;")
}

/// Role prompt + the wrapped messages.
pub fn messages_prompt(role: Option<&str>, entries: &[Entry]) -> String {
    let body = entries
        .iter()
        .map(wrap_message)
        .collect::<Vec<_>>()
        .join("\n\n");
    with_role(role, body)
}

/// Role prompt + the task.
pub fn task_prompt(role: Option<&str>, task: &Task) -> String {
    let mut body = format!("Task #{}: {}", task.id, task.subject);
    if !task.description.is_empty() {
        body.push_str("\n\n");
        body.push_str(&task.description);
    }
    with_role(role, body)
}

fn with_role(role: Option<&str>, body: String) -> String {
    match role.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("{r}\n\n{body}"),
        None => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// The argv of a run whose prompt fits.
    fn argv(
        p: Preset,
        command: Option<&[String]>,
        model: Option<&str>,
        mode: Option<&str>,
    ) -> Vec<String> {
        let fresh = Turn::Fresh { id: None };
        let l = p.launch(
            command,
            model,
            mode,
            "P",
            Delivery::Argv,
            Path::new("/s/p"),
            &fresh,
            None,
        );
        assert_eq!(l.prompt_file.is_some(), p == Preset::Command);
        l.argv
    }

    #[test]
    fn each_preset_builds_its_documented_command_line() {
        assert_eq!(
            argv(Preset::Codex, None, Some("o3"), None),
            s(&[
                "codex",
                "exec",
                "--skip-git-repo-check",
                "--model",
                "o3",
                "P"
            ])
        );
        assert_eq!(
            argv(Preset::Gemini, None, None, Some("bypassPermissions")),
            s(&["gemini", "--yolo", "-p", "P"])
        );
        assert_eq!(
            argv(Preset::Aider, None, None, None),
            s(&["aider", "--yes-always", "--no-pretty", "--message", "P"])
        );
        assert_eq!(
            argv(Preset::ClaudePrint, None, Some("m"), Some("acceptEdits")),
            s(&[
                "claude",
                "-p",
                "--model",
                "m",
                "--permission-mode",
                "acceptEdits",
                "P"
            ])
        );
        let cmd = s(&["my-agent", "--flag"]);
        assert_eq!(
            argv(
                Preset::Command,
                Some(&cmd),
                Some("ignored"),
                Some("bypassPermissions")
            ),
            s(&["my-agent", "--flag"]),
            "a command agent's prompt is never an argument"
        );
        let over = s(&["/opt/codex", "exec"]);
        assert_eq!(
            argv(Preset::Codex, Some(&over), None, Some("acceptEdits")),
            s(&[
                "/opt/codex",
                "exec",
                "-c",
                "sandbox_mode=\"workspace-write\"",
                "P"
            ])
        );
        assert_eq!(
            argv(Preset::Codex, None, None, Some("plan"))[3..],
            s(&["-c", "sandbox_mode=\"read-only\"", "P"])
        );
        assert_eq!(
            argv(Preset::Gemini, None, None, Some("plan")),
            s(&["gemini", "--approval-mode", "plan", "-p", "P"])
        );
        assert_eq!(
            argv(Preset::Aider, None, None, Some("acceptEdits")),
            argv(Preset::Aider, None, None, None),
            "aider has no modes"
        );
    }

    #[test]
    fn a_prompt_past_max_arg_strlen_goes_through_stdin_or_a_file_as_each_cli_reads_it() {
        let long = "x".repeat(MAX_ARG_BYTES + 1);
        let file = Path::new("/state/runtime/alice.prompt");
        let run = |p: Preset| {
            let d = p.delivery(&long);
            p.launch(
                None,
                Some("m"),
                None,
                &long,
                d,
                file,
                &Turn::Fresh { id: None },
                None,
            )
        };
        let codex = run(Preset::Codex);
        assert_eq!(
            (codex.argv, codex.delivery),
            (
                s(&[
                    "codex",
                    "exec",
                    "--skip-git-repo-check",
                    "--model",
                    "m",
                    "-"
                ]),
                Delivery::Stdin
            )
        );
        let gemini = run(Preset::Gemini);
        assert_eq!(
            (gemini.argv, gemini.delivery),
            (s(&["gemini", "--model", "m"]), Delivery::Stdin)
        );
        let aider = run(Preset::Aider);
        assert_eq!(
            (aider.argv, aider.delivery),
            (
                s(&[
                    "aider",
                    "--yes-always",
                    "--no-pretty",
                    "--model",
                    "m",
                    "--message-file",
                    "/state/runtime/alice.prompt"
                ]),
                Delivery::File
            )
        );
        let claude = run(Preset::ClaudePrint);
        assert_eq!(
            (claude.argv, claude.delivery),
            (s(&["claude", "-p", "--model", "m"]), Delivery::Stdin)
        );
        for l in [run(Preset::Codex), run(Preset::Aider)] {
            assert_eq!(l.prompt_file.as_deref(), Some(file));
        }
        assert_eq!(
            Preset::Codex.delivery(&"x".repeat(MAX_ARG_BYTES)),
            Delivery::Argv
        );
        assert_eq!(
            Preset::Codex.delivery("a\0b"),
            Delivery::Stdin,
            "a NUL cannot be in an argument"
        );
        assert_eq!(Preset::Command.delivery("short"), Delivery::Stdin);
    }

    #[test]
    fn the_team_instructions_name_swarm_by_a_path_a_login_shell_keeps() {
        let t = team_instructions("bob", "web", "/opt/my tools/swarm");
        assert!(
            t.contains("'/opt/my tools/swarm' send --to NAME") && t.contains("You are bob"),
            "{t}"
        );
        assert_eq!(shell_word("/usr/bin/swarm"), "/usr/bin/swarm");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(
            opening(Preset::Command, Some(" r "), "b", "w", "s"),
            Some("r".into())
        );
        assert_eq!(opening(Preset::Command, None, "b", "w", "s"), None);
    }

    fn server(env: &[(&str, &str)]) -> TeamServer {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        TeamServer::of("/opt/sw\"arm/swarm", &env).expect("a member's identity")
    }

    #[test]
    fn codex_gets_swarms_mcp_server_for_its_own_team_and_name_in_its_argv() {
        let s = server(&[
            ("PATH", "/bin"),
            ("SWARM_HOME", "/r"),
            ("SWARM_TEAM", "web"),
            ("SWARM_AGENT_NAME", "bob"),
            ("SWARM_AGENT_ID", "bob@web"),
        ]);
        let flags = vec![
            "-c".to_string(),
            // TOML's literal string: the path holds a `"`.
            "mcp_servers.swarm.command='/opt/sw\"arm/swarm'".into(),
            "-c".into(),
            "mcp_servers.swarm.args=[\"mcp\"]".into(),
            "-c".into(),
            "mcp_servers.swarm.env={SWARM_HOME = \"/r\", SWARM_TEAM = \"web\", \
             SWARM_AGENT_NAME = \"bob\"}"
                .into(),
            "-c".into(),
            "mcp_servers.swarm.default_tools_approval_mode=\"approve\"".into(),
        ];
        let fresh = Turn::Fresh { id: None };
        let run = |p: Preset, turn: &Turn| {
            p.launch(
                None,
                None,
                Some("acceptEdits"),
                "P",
                Delivery::Argv,
                Path::new("/s/p"),
                turn,
                Some(&s),
            )
        };
        let mut want = s_of(&["codex", "exec", "--skip-git-repo-check", "-c"]);
        want.push("sandbox_mode=\"workspace-write\"".into());
        want.extend(flags.clone());
        want.push("P".into());
        assert_eq!(run(Preset::Codex, &fresh).argv, want);
        // Resumed: the same server, before the session id.
        let resumed = run(Preset::Codex, &Turn::Resume("ID".into())).argv;
        assert_eq!(resumed[..3], s_of(&["codex", "exec", "resume"]));
        assert_eq!(resumed[resumed.len() - 10..resumed.len() - 2], flags[..]);
        assert_eq!(resumed[resumed.len() - 2..], s_of(&["ID", "P"]));
        // Each value is TOML Codex reads back as it was.
        for f in flags.iter().skip(1).step_by(2) {
            let (key, value) = f.split_once('=').unwrap();
            let parsed: toml::Table = toml::from_str(&format!("v = {value}")).unwrap();
            match key {
                "mcp_servers.swarm.command" => {
                    assert_eq!(parsed["v"].as_str(), Some("/opt/sw\"arm/swarm"))
                }
                "mcp_servers.swarm.env" => {
                    assert_eq!(parsed["v"]["SWARM_AGENT_NAME"].as_str(), Some("bob"))
                }
                "mcp_servers.swarm.default_tools_approval_mode" => {
                    assert_eq!(parsed["v"].as_str(), Some("approve"))
                }
                _ => assert_eq!(parsed["v"][0].as_str(), Some("mcp")),
            }
        }
        // The others get no flags for it.
        let gemini = run(Preset::Gemini, &fresh);
        assert_eq!(
            gemini.argv,
            s_of(&["gemini", "--approval-mode", "auto_edit", "-p", "P"])
        );
        assert_eq!(
            gemini.env,
            [(
                GEMINI_HOME_VAR.to_string(),
                "/r/swarm/web/runtime/bob.gemini-home".to_string()
            )]
        );
        let aider = run(Preset::Aider, &fresh);
        assert!(
            !aider.argv.iter().any(|a| a.contains("mcp")) && aider.env.is_empty(),
            "{aider:?}"
        );
        // Claude Code: an inline --mcp-config with the same server, and its
        // tools allowed (a print-mode run cannot ask).
        let claude = run(Preset::ClaudePrint, &fresh).argv;
        let at = claude.iter().position(|a| a == "--mcp-config").unwrap();
        let config: serde_json::Value = serde_json::from_str(&claude[at + 1]).unwrap();
        let server = &config["mcpServers"]["swarm"];
        assert_eq!(server["command"], "/opt/sw\"arm/swarm");
        assert_eq!(server["args"], serde_json::json!(["mcp"]));
        assert_eq!(server["env"]["SWARM_AGENT_NAME"], "bob");
        assert_eq!(
            claude[at + 2..at + 4],
            s_of(&["--allowedTools", "mcp__swarm"])
        );
        assert_eq!(claude.last().unwrap(), "P");
        assert!(TeamServer::of("swarm", &[("SWARM_HOME".into(), "/r".into())]).is_none());
    }

    #[test]
    fn a_coordinator_keeps_the_team_tools_and_loses_its_own() {
        let env = [
            ("SWARM_HOME", "/r"),
            ("SWARM_TEAM", "web"),
            ("SWARM_AGENT_NAME", "lead"),
            (AI_LEAD_VAR, "1"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let s = TeamServer::of("swarm", &env).unwrap();
        assert!(
            s.env.iter().any(|(k, v)| k == AI_LEAD_VAR && v == "1"),
            "the AI lead's server knows it serves the AI lead: {:?}",
            s.env
        );
        let run = |p: Preset, d: Delivery| {
            let mut l = p.launch(
                None,
                None,
                None,
                "P",
                d,
                Path::new("/s/p"),
                &Turn::Fresh { id: None },
                Some(&s),
            );
            coordinator_only(p, &mut l);
            l.argv
        };
        let claude = run(Preset::ClaudePrint, Delivery::Argv);
        assert!(claude.contains(&"--mcp-config".to_string()), "{claude:?}");
        assert_eq!(claude[claude.len() - 2..], s_of(&["--tools=", "P"]));
        let codex = run(Preset::Codex, Delivery::Stdin);
        assert!(codex.iter().any(|a| a.starts_with("mcp_servers.swarm")));
        assert_eq!(
            codex[codex.len() - 11..],
            s_of(&[
                "--disable",
                "shell_tool",
                "--disable",
                "unified_exec",
                "-c",
                "include_apply_patch_tool=false",
                "--disable",
                "multi_agent",
                "--disable",
                "view_image",
                "-"
            ])
        );
    }

    #[test]
    fn gemini_gets_a_home_of_links_to_the_users_own_with_the_server_in_its_settings() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let user = d.path().join("home/.gemini");
        std::fs::create_dir_all(user.join("tmp")).unwrap();
        std::fs::write(user.join("oauth_creds.json"), "{}").unwrap();
        let theirs = "{\n  // the user's own\n  \"ui\": {\"theme\": \"a//b\"},\n  \
                      /* servers */ \"mcpServers\": {\"mine\": {\"command\": \"m\"}}\n}\n";
        std::fs::write(user.join("settings.json"), theirs).unwrap();
        let root = d.path().join("root").to_string_lossy().into_owned();
        let home = d.path().join("home").to_string_lossy().into_owned();
        let s = server(&[
            ("HOME", &home),
            ("SWARM_HOME", &root),
            ("SWARM_TEAM", "web"),
            ("SWARM_AGENT_NAME", "bob"),
            ("SWARM_TMUX_SOCKET", "/tmp/s"),
        ]);
        assert_eq!(
            s.gemini_home,
            d.path().join("root/swarm/web/runtime/bob.gemini-home")
        );
        assert!(s.prepare_gemini_home().unwrap());
        let dir = s.gemini_home.join(".gemini");
        let written: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("settings.json")).unwrap()).unwrap();
        assert_eq!(
            written,
            serde_json::json!({
                "ui": {"theme": "a//b"},
                "mcpServers": {
                    "mine": {"command": "m"},
                    "swarm": {"command": "/opt/sw\"arm/swarm", "args": ["mcp"], "env": {
                        "SWARM_HOME": root, "SWARM_TEAM": "web", "SWARM_AGENT_NAME": "bob",
                        "SWARM_TMUX_SOCKET": "/tmp/s"}}
                }
            })
        );
        let mode = std::fs::metadata(dir.join("settings.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        for entry in ["tmp", "oauth_creds.json"] {
            assert_eq!(
                std::fs::read_link(dir.join(entry)).unwrap(),
                user.join(entry)
            );
        }
        assert_eq!(
            std::fs::read(user.join("settings.json")).unwrap(),
            theirs.as_bytes(),
            "theirs untouched"
        );
        // An entry the user removes goes; settings that do not read are theirs, linked.
        std::fs::remove_file(user.join("oauth_creds.json")).unwrap();
        std::fs::write(user.join("settings.json"), "{ not json").unwrap();
        assert!(!s.prepare_gemini_home().unwrap());
        assert!(std::fs::symlink_metadata(dir.join("oauth_creds.json")).is_err());
        assert_eq!(
            std::fs::read_link(dir.join("settings.json")).unwrap(),
            user.join("settings.json")
        );
        // No settings of their own: the server alone.
        std::fs::remove_file(user.join("settings.json")).unwrap();
        assert!(s.prepare_gemini_home().unwrap());
        let alone: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("settings.json")).unwrap()).unwrap();
        assert_eq!(alone["mcpServers"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn the_team_instructions_name_the_tools_where_the_cli_has_them() {
        for (p, has) in [
            (Preset::Codex, true),
            (Preset::Gemini, true),
            (Preset::Aider, false),
            (Preset::ClaudePrint, true),
        ] {
            let o = opening(p, None, "bob", "web", "swarm").unwrap();
            assert_eq!(
                o.contains("swarm MCP server's send_message"),
                has,
                "{p:?}: {o}"
            );
        }
    }

    fn s_of(v: &[&str]) -> Vec<String> {
        s(v)
    }

    #[test]
    fn a_prompt_file_is_private_and_removed_after_the_run() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runtime/alice.prompt");
        {
            let _f = PromptFile::write(&path, "hello").unwrap();
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "hello");
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(!path.exists());
    }

    #[test]
    fn messages_are_wrapped_as_claude_code_shows_them() {
        let mut e = Entry::new(
            "bob",
            "say \"hi\"".into(),
            Some("it's".into()),
            Some("blue".into()),
        );
        e.color = Some("blue".into());
        assert_eq!(
            wrap_message(&e),
            "<teammate-message teammate_id=\"bob\" color=\"blue\" summary=\"it&apos;s\">\nsay \"hi\"\n</teammate-message>"
        );
        // The default summary (the first line) is not said again.
        let sent = Entry::new(
            "bob",
            "MARK-1 done\nall green".into(),
            Some("MARK-1 done".into()),
            None,
        );
        assert_eq!(wrap_message(&sent).matches("MARK-1").count(), 1);
        let lead = Entry::new("team-lead", "go".into(), None, None);
        assert_eq!(
            messages_prompt(Some("You review code."), &[lead.clone(), lead]),
            "You review code.\n\n<teammate-message teammate_id=\"team-lead\">\ngo\n</teammate-message>\n\n\
             <teammate-message teammate_id=\"team-lead\">\ngo\n</teammate-message>"
        );
    }
}
