//! The environment of every process swarm starts in a pane, built in one
//! place (DESIGN §6): a teammate's pane and the agents its runtime starts
//! ([`member`], [`member_pane`]), and the lead's own pane ([`lead`]).
//!
//! # Policy
//!
//! A pane's environment is exact. It holds:
//!
//! 1. the few variables of the caller's environment a terminal program
//!    needs ([`INHERITED`]), `PATH` with swarm's own directory first;
//! 2. the `SWARM_*` identity (`SWARM_HOME`, `SWARM_TEAM`, and for a
//!    teammate `SWARM_AGENT_NAME`, `SWARM_AGENT_ID`, `SWARM_AGENT_COLOR`,
//!    `SWARM_SCRATCHPAD`);
//! 3. the variables the user wrote for the member (`swarm spawn --env
//!    K=V`, the spec's `env`; the roster's `swarmEnv`), which win over the
//!    rest;
//! 4. **passed by name**, taken from the environment of the process that
//!    opens the pane: every variable on the member's agent's forward list
//!    ([`forward_list`]) that is set and not empty (or empty where that
//!    means something, [`EVEN_EMPTY`]), and every name the user
//!    asked for (`swarm spawn --env K`, the spec's `pass_env`; the roster's
//!    `swarmPassEnv`).
//!
//! Nothing else of the caller's environment leaks in, nor of the
//! multiplexer's: a backend starts the pane's process through `env -i`,
//! except tmux with a teammate's pane, whose first process (`swarm
//! pane-exec`) is started directly and replaces its whole environment
//! with the pane's, handed to it in one variable, before anything else
//! (`ops::spawn::exact_environment`; one process less per pane).
//!
//! Passed values are secrets as far as swarm knows (API keys, tokens): they
//! never reach argv, the pane's text, a log or the roster. The spawner hands
//! them to the pane's first process (`swarm pane-exec`) in a private file
//! it deletes on reading (see `ops::spawn`), because a multiplexer's spawn
//! command (`tmux split-window -e K=V`, `env -i K=V …`) is argv, kept by
//! tmux as the pane's start command. Which process opens the pane matters:
//! `swarm up` opens the spec's teammates with the values of the shell it
//! runs in, `swarm spawn` with those of its own shell, and the lead opens
//! no teammate pane (in-process teammates are opened by `swarm up` itself,
//! which is the lead). A value missing there is simply not passed.
//!
//! # Forward lists
//!
//! What each agent's CLI needs to reach its API with the user's own setup,
//! as Claude Code's own lead forwards to its pane teammates (Claude Code
//! 2.1.332: provider switches, Bedrock/Vertex/Foundry settings, proxies,
//! certificates, telemetry switches; its credentials come from the pane's
//! inherited environment, so here they are on the list too). `NAME_*` is a
//! prefix.
//!
//! | agent | forwarded |
//! |---|---|
//! | `claude`, `claude-print` | [`CLAUDE`] + [`NETWORK`], except [`CLAUDE_NEVER`] |
//! | `codex` | `OPENAI_*`, `CODEX_*` + [`NETWORK`] |
//! | `gemini` | `GEMINI_*`, `GOOGLE_*`, `GCLOUD_PROJECT` + [`NETWORK`] |
//! | `aider` | [`AIDER`] (its provider keys) + [`NETWORK`] |
//! | `shell`, `command`, a plain program | nothing (name what it needs with `--env K`) |

use crate::agents::{Agent, Preset};
use crate::team::{Member, Team};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;

/// The variables of the caller's environment a pane inherits.
pub const INHERITED: [&str; 6] = ["PATH", "HOME", "USER", "SHELL", "TERM", "LANG"];

/// What the lead's pane also keeps: its log filter and colour choice.
const LEAD_EXTRA: [&str; 2] = ["SWARM_LOG", "NO_COLOR"];

/// The identity swarm gives every teammate pane; a user's `--env` may not
/// name these.
pub const IDENTITY: [&str; 6] = [
    "SWARM_HOME",
    "SWARM_TEAM",
    "SWARM_AGENT_NAME",
    "SWARM_AGENT_ID",
    "SWARM_AGENT_COLOR",
    "SWARM_SCRATCHPAD",
];

/// Proxies and private certificate authorities, for every AI CLI.
pub const NETWORK: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// Claude Code: endpoint and auth (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`,
/// `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_CUSTOM_HEADERS`, `ANTHROPIC_MODEL`,
/// …), its own switches (`CLAUDE_CODE_USE_BEDROCK|VERTEX|FOUNDRY`,
/// `CLAUDE_CODE_OAUTH_TOKEN`, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`,
/// …), where the user keeps its config (`CLAUDE_CONFIG_DIR`, read by the
/// launch, see `agents::claude`), Bedrock (`AWS_*`), Vertex (`GOOGLE_*`,
/// `GCLOUD_PROJECT`, `CLOUD_ML_REGION`, `VERTEX_REGION_*`,
/// `ANTHROPIC_VERTEX_*`), Foundry (`ANTHROPIC_FOUNDRY_*`, `AZURE_*`),
/// telemetry switches (`DISABLE_*`, `DO_NOT_TRACK`, `OTEL_*`) and the few
/// unprefixed settings it documents.
pub const CLAUDE: &[&str] = &[
    "ANTHROPIC_*",
    "CLAUDE_CODE_*",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_SECURESTORAGE_CONFIG_DIR",
    "AWS_*",
    "GOOGLE_*",
    "GCLOUD_PROJECT",
    "CLOUD_ML_REGION",
    "VERTEX_REGION_*",
    "AZURE_*",
    "DISABLE_*",
    "DO_NOT_TRACK",
    "OTEL_*",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "MAX_THINKING_TOKENS",
    "MCP_TIMEOUT",
    "MCP_TOOL_TIMEOUT",
    "BASH_DEFAULT_TIMEOUT_MS",
    "BASH_MAX_TIMEOUT_MS",
    "BASH_MAX_OUTPUT_LENGTH",
    "IS_SANDBOX",
];

/// Never forwarded to Claude Code, though [`CLAUDE`] matches them: they
/// belong to the caller's own Claude Code session, not to the user's setup
/// (a task list to share, the caller's IDE connection, a permission bypass
/// Claude Code's own lead blanks for its teammates), or the launch sets
/// them itself.
pub const CLAUDE_NEVER: &[&str] = &[
    "CLAUDE_CODE_TASK_LIST_ID",
    "CLAUDE_CODE_EVEN_MORE_DANGEROUSLY_SKIP_PERMISSIONS",
    "CLAUDE_CODE_SSE_PORT",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS",
    "CLAUDE_CODE_ENABLE_TODO_TOOLS",
];

/// Forwarded even when empty: Claude Code reads an empty
/// `CLAUDE_SECURESTORAGE_CONFIG_DIR` as "the default credential store"
/// (its own lead forwards it empty too).
pub const EVEN_EMPTY: &[&str] = &["CLAUDE_SECURESTORAGE_CONFIG_DIR"];

/// Codex CLI: `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `CODEX_HOME`, ….
pub const CODEX: &[&str] = &["OPENAI_*", "CODEX_*"];

/// Gemini CLI: `GEMINI_API_KEY`, `GOOGLE_GEMINI_BASE_URL`, `GOOGLE_API_KEY`,
/// `GOOGLE_CLOUD_PROJECT`, `GOOGLE_GENAI_USE_VERTEXAI`,
/// `GOOGLE_APPLICATION_CREDENTIALS`, ….
pub const GEMINI: &[&str] = &["GEMINI_*", "GOOGLE_*", "GCLOUD_PROJECT"];

/// Aider: its own settings (`AIDER_*`) and the provider keys its model
/// library reads.
pub const AIDER: &[&str] = &[
    "AIDER_*",
    "OPENAI_*",
    "ANTHROPIC_*",
    "GEMINI_*",
    "DEEPSEEK_*",
    "OPENROUTER_*",
    "GROQ_*",
    "MISTRAL_*",
    "COHERE_*",
    "XAI_*",
    "AZURE_*",
    "OLLAMA_*",
    "VERTEXAI_*",
    "AWS_*",
];

/// The forward list of `agent` (a `swarmAgent` name): the agent's own
/// patterns and whether [`NETWORK`] applies. Unknown agents forward nothing.
pub fn forward_list(agent: Agent) -> (&'static [&'static str], bool) {
    match agent {
        Agent::Claude | Agent::Exec(Preset::ClaudePrint) => (CLAUDE, true),
        Agent::Exec(Preset::Codex) => (CODEX, true),
        Agent::Exec(Preset::Gemini) => (GEMINI, true),
        Agent::Exec(Preset::Aider) => (AIDER, true),
        Agent::Shell | Agent::Process | Agent::Exec(Preset::Command) => (&[], false),
    }
}

/// Whether `agent` forwards the variable `name`.
pub fn forwards(agent: Agent, name: &str) -> bool {
    let matches = |p: &&str| match p.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => *p == name,
    };
    let (own, network) = forward_list(agent);
    if matches!(agent, Agent::Claude | Agent::Exec(Preset::ClaudePrint))
        && CLAUDE_NEVER.contains(&name)
    {
        return false;
    }
    own.iter().any(matches) || (network && NETWORK.iter().any(matches))
}

/// A pane's environment, split by where each value goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaneEnv {
    /// Set in the pane's spawn (the multiplexer's argv may show them):
    /// inherited, identity, and what the user wrote.
    pub set: Vec<(String, String)>,
    /// Taken from the caller's environment, passed by name: never in argv,
    /// logs or the roster.
    pub passed: Vec<(String, String)>,
}

impl PaneEnv {
    /// Every variable, `set` then `passed`.
    pub fn all(self) -> Vec<(String, String)> {
        let mut v = self.set;
        v.extend(self.passed);
        v
    }

    /// The names of the passed variables, sorted.
    pub fn passed_names(&self) -> Vec<String> {
        let mut n: Vec<String> = self.passed.iter().map(|(k, _)| k.clone()).collect();
        n.sort();
        n
    }
}

/// `PATH` with the directory of the running `swarm` first, each directory
/// once (the first time it appears).
pub fn path_with_swarm() -> Result<String> {
    let exe = std::env::current_exe().context("finding the swarm executable")?;
    let mut dirs: Vec<PathBuf> = exe
        .parent()
        .map(|d| vec![d.to_path_buf()])
        .unwrap_or_default();
    if let Some(p) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&p) {
            if !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    let joined = std::env::join_paths(dirs).context("building PATH for a pane")?;
    Ok(joined.to_string_lossy().into_owned())
}

/// The inherited variables and the team's identity, shared by every pane.
fn base(team: &Team) -> Result<Vec<(String, String)>> {
    let mut env: Vec<(String, String)> = Vec::new();
    for k in INHERITED {
        let v = match k {
            "PATH" => Some(path_with_swarm()?),
            "TERM" => Some(std::env::var(k).unwrap_or_else(|_| "xterm-256color".into())),
            _ => std::env::var(k).ok(),
        };
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            env.push((k.to_string(), v));
        }
    }
    env.push((
        "SWARM_HOME".into(),
        team.root.dir().to_string_lossy().into_owned(),
    ));
    env.push(("SWARM_TEAM".into(), team.name.clone()));
    Ok(env)
}

/// The lead's pane: the base and the lead's log settings. Nothing is
/// passed: the lead opens no teammate pane of its own.
pub fn lead(team: &Team) -> Result<Vec<(String, String)>> {
    let mut env = base(team)?;
    for k in LEAD_EXTRA {
        if let Ok(v) = std::env::var(k) {
            env.push((k.to_string(), v));
        }
    }
    Ok(env)
}

/// Every variable of `member`'s pane, passed ones included: what the
/// runtime in the pane gives each agent process it starts (its own
/// environment then holds the passed values, so they are found again).
pub fn member(team: &Team, member: &Member) -> Result<Vec<(String, String)>> {
    Ok(member_pane(team, member)?.all())
}

/// `member`'s pane, split into what its spawn sets and what is passed by
/// name (see the module docs): the base, its identity, the team's
/// scratchpad (created here), its `swarmEnv` (which wins over the rest),
/// then its agent's forward list and its `swarmPassEnv` from this process's
/// environment. A `swarmEnv` or `swarmPassEnv` of the wrong shape is an
/// error naming the member, never skipped.
pub fn member_pane(team: &Team, member: &Member) -> Result<PaneEnv> {
    let mut env = base(team)?;
    let agent_id = if member.agent_id.is_empty() {
        format!("{}@{}", member.name, team.name)
    } else {
        member.agent_id.clone()
    };
    env.push(("SWARM_AGENT_NAME".into(), member.name.clone()));
    env.push(("SWARM_AGENT_ID".into(), agent_id));
    env.push((
        "SWARM_AGENT_COLOR".into(),
        member.color.clone().unwrap_or_default(),
    ));
    let scratch = team.root.scratchpad(&team.name)?;
    crate::atomic_file::ensure_dir(&scratch)
        .with_context(|| format!("creating {}", scratch.display()))?;
    env.push((
        "SWARM_SCRATCHPAD".into(),
        scratch.to_string_lossy().into_owned(),
    ));
    for (k, v) in swarm_env(member)? {
        env.retain(|(key, _)| *key != k);
        env.push((k, v));
    }
    let asked = pass_env(member)?;
    let agent = Agent::of(member)?;
    let mut passed: Vec<(String, String)> = Vec::new();
    let taken = |k: &str, env: &[(String, String)], passed: &[(String, String)]| {
        env.iter().chain(passed).any(|(key, _)| key == k)
    };
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        let wanted = asked.iter().any(|a| a == k)
            || ((!v.is_empty() || EVEN_EMPTY.contains(&k)) && forwards(agent, k));
        if wanted && !taken(k, &env, &passed) && !k.contains('=') && !v.contains('\0') {
            passed.push((k.to_string(), v.to_string()));
        }
    }
    passed.sort();
    Ok(PaneEnv { set: env, passed })
}

/// `swarm spawn --env` arguments: `K=V` is written for the member, a bare
/// `K` is passed by name from the spawner's environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvArgs {
    pub set: Vec<(String, String)>,
    pub pass: Vec<String>,
}

impl EnvArgs {
    /// Parses and checks them; a bare `K` must be set where the spawn runs
    /// (`is_set`), or it could only ever pass nothing.
    pub fn parse(args: &[String], is_set: impl Fn(&str) -> bool) -> Result<EnvArgs> {
        let mut out = EnvArgs::default();
        for a in args {
            match a.split_once('=') {
                Some((k, v)) => {
                    check_name(k).context("--env")?;
                    out.set.push((k.to_string(), v.to_string()));
                }
                None => {
                    check_name(a).context("--env")?;
                    if !is_set(a) {
                        bail!(
                            "--env {a}: {a} is not set in this environment \
                             (--env {a}=VALUE writes a value instead)"
                        );
                    }
                    out.pass.push(a.clone());
                }
            }
        }
        Ok(out)
    }
}

/// Checks a variable name the user gives (`--env`, the spec's `env` and
/// `pass_env`): a portable shell name, and not one of swarm's identity.
pub fn check_name(name: &str) -> Result<()> {
    let mut chars = name.chars();
    let portable = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !portable {
        bail!(
            "{:?} is not a variable name (letters, digits and '_', not starting with a digit)",
            crate::text::escape_line(name)
        );
    }
    if IDENTITY.contains(&name) {
        bail!("{name} is set by swarm for every teammate and cannot be set or passed");
    }
    Ok(())
}

/// The member's `swarmEnv`, checked: an object of strings with valid names.
pub fn swarm_env(member: &Member) -> Result<Vec<(String, String)>> {
    let env = member.env()?;
    for (k, s) in &env {
        if k.is_empty() || k.contains('=') || k.contains('\0') || s.contains('\0') {
            bail!(
                "{}'s swarmEnv has an invalid variable {:?}",
                member.name,
                crate::text::escape_line(k)
            );
        }
    }
    Ok(env)
}

/// The member's `swarmPassEnv`, checked: an array of variable names.
pub fn pass_env(member: &Member) -> Result<Vec<String>> {
    let names = member.pass_env()?;
    for n in &names {
        if n.is_empty() || n.contains('=') || n.contains('\0') {
            bail!(
                "{}'s swarmPassEnv has an invalid name {:?}",
                member.name,
                crate::text::escape_line(n)
            );
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::SwarmField;
    use serde_json::json;

    fn a(name: &str) -> Agent {
        Agent::parse(name).expect("a known agent")
    }

    fn team() -> (tempfile::TempDir, Team) {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::paths::Root::new(dir.path().join("root"));
        (dir, Team::new(&root, "t"))
    }

    #[test]
    fn a_members_environment_is_exactly_its_identity_and_the_inherited_few() {
        let (_d, team) = team();
        let m = Member::teammate("t", "alice", "blue", "/");
        let env = member(&team, &m).unwrap();
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("SWARM_AGENT_ID").as_deref(), Some("alice@t"));
        assert_eq!(get("SWARM_AGENT_NAME").as_deref(), Some("alice"));
        assert_eq!(get("SWARM_TEAM").as_deref(), Some("t"));
        assert!(get("SWARM_SCRATCHPAD").is_some_and(|p| std::path::Path::new(&p).is_dir()));
        let exe_dir = std::env::current_exe()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let path = get("PATH").unwrap();
        let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        assert_eq!(dirs[0], exe_dir, "swarm's directory first");
        let mut uniq = dirs.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), dirs.len(), "each directory once: {path}");
        let allowed: Vec<&str> = INHERITED.iter().copied().chain(IDENTITY).collect();
        for (k, _) in &env {
            assert!(allowed.contains(&k.as_str()), "{k} leaked in");
        }
    }

    #[test]
    fn swarm_env_wins_and_bad_values_are_errors_not_skipped() {
        let (_d, team) = team();
        let mut m = Member::teammate("t", "alice", "blue", "/");
        m.set_swarm_field(SwarmField::Env, json!({"TERM": "dumb", "EXTRA": "1"}));
        let env = member(&team, &m).unwrap();
        assert_eq!(env.iter().filter(|(k, _)| k == "TERM").count(), 1);
        assert!(env.contains(&("TERM".into(), "dumb".into())));
        assert!(env.contains(&("EXTRA".into(), "1".into())));
        m.set_swarm_field(SwarmField::Env, json!({"N": 3}));
        let err = member(&team, &m).unwrap_err().to_string();
        assert_eq!(
            err,
            "alice's swarmEnv is not an object of strings: {\"N\":3}"
        );
        m.set_swarm_field(SwarmField::Env, json!(["x"]));
        assert!(member(&team, &m).is_err());
        m.set_swarm_field(SwarmField::Env, json!({"A=B": "x"}));
        assert!(member(&team, &m).is_err());
        m.set_swarm_field(SwarmField::Env, Value::Null);
        m.set_swarm_field(SwarmField::PassEnv, json!("PATH"));
        let err = member(&team, &m).unwrap_err().to_string();
        assert!(err.contains("swarmPassEnv is not an array"), "{err}");
    }

    use serde_json::Value;

    #[test]
    fn each_agent_forwards_its_own_list_and_nothing_else() {
        for k in [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_VERTEX_PROJECT_ID",
            "CLAUDE_CODE_USE_BEDROCK",
            "CLAUDE_CODE_USE_VERTEX",
            "CLAUDE_CODE_USE_FOUNDRY",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CONFIG_DIR",
            "AWS_REGION",
            "AWS_PROFILE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "CLOUD_ML_REGION",
            "HTTPS_PROXY",
            "https_proxy",
            "NO_PROXY",
            "no_proxy",
            "DISABLE_TELEMETRY",
        ] {
            assert!(forwards(a("claude"), k), "claude forwards {k}");
        }
        for k in [
            "CLAUDE_CODE_TASK_LIST_ID",
            "CLAUDE_CODE_SSE_PORT",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "CLAUDECODE",
            "SECRET",
        ] {
            assert!(!forwards(a("claude"), k), "claude does not forward {k}");
        }
        assert!(forwards(a("codex"), "OPENAI_API_KEY") && forwards(a("codex"), "CODEX_HOME"));
        assert!(forwards(a("codex"), "HTTP_PROXY") && !forwards(a("codex"), "ANTHROPIC_API_KEY"));
        assert!(forwards(a("gemini"), "GEMINI_API_KEY") && forwards(a("gemini"), "GOOGLE_API_KEY"));
        assert!(!forwards(a("gemini"), "OPENAI_API_KEY"));
        for k in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "AIDER_MODEL",
        ] {
            assert!(forwards(a("aider"), k), "aider forwards {k}");
        }
        for agent in ["shell", "command", "process"].map(a) {
            assert!(!forwards(agent, "ANTHROPIC_API_KEY") && !forwards(agent, "HTTP_PROXY"));
        }
    }

    #[test]
    fn forwarded_and_asked_names_are_passed_not_set() {
        // This test process's own environment is the caller's: PATH is set
        // everywhere, so ask for it by name (it is inherited, so already
        // set, and not passed twice) and for a name that no agent forwards.
        let (_d, team) = team();
        let mut m = Member::teammate("t", "alice", "blue", "/");
        m.set_swarm_field(SwarmField::Agent, json!("claude"));
        m.set_swarm_field(
            SwarmField::PassEnv,
            json!(["PATH", "SWARM_TEST_SURELY_UNSET"]),
        );
        let env = member_pane(&team, &m).unwrap();
        assert!(env.passed.iter().all(|(k, _)| k != "PATH"), "{env:?}");
        assert!(env.set.iter().any(|(k, _)| k == "PATH"));
        for (k, _) in &env.passed {
            assert!(forwards(a("claude"), k), "{k} passed without being asked");
        }
    }

    #[test]
    fn env_arguments_write_a_value_or_pass_a_name() {
        let args: Vec<String> = ["A=1", "B", "C=x=y"].map(String::from).to_vec();
        let parsed = EnvArgs::parse(&args, |k| k == "B").unwrap();
        assert_eq!(
            parsed.set,
            [("A".into(), "1".into()), ("C".into(), "x=y".into())]
        );
        assert_eq!(parsed.pass, ["B"]);
        let err = EnvArgs::parse(&["D".to_string()], |_| false).unwrap_err();
        assert!(format!("{err:#}").contains("D is not set"), "{err:#}");
        assert!(EnvArgs::parse(&["=1".to_string()], |_| true).is_err());
        assert!(EnvArgs::parse(&["SWARM_HOME=/x".to_string()], |_| true).is_err());
    }

    #[test]
    fn user_given_names_are_checked() {
        assert!(check_name("ANTHROPIC_API_KEY").is_ok());
        assert!(check_name("_x1").is_ok());
        for bad in ["", "1A", "A-B", "A=B", "A B", "SWARM_AGENT_NAME"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
    }
}
