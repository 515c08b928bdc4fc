//! The command line, as clap derive types: parsing only, no logic.
//!
//! Every command takes the global `--home`, `--team` and `--as`; every
//! listing takes `--json`. The commands themselves live in
//! [`crate::commands`].

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use swarm_backends::BackendKind;

#[derive(Debug, Parser)]
#[command(
    name = "swarm",
    version,
    about = "Run a team of coding agents in terminal panes, coordinated through files",
    long_about = "Run a team of coding agents in terminal panes, coordinated through files.\n\n\
        Teammates talk only through one inbox file per member and a shared task list, in the \
        same formats as Claude Code's agent teams, so real Claude Code teammates can join.\n\n\
        Quick start:\n  \
        swarm up --demo                 three shell teammates work a task board (no AI needed)\n  \
        swarm up swarm.toml             your team: teammates (shell, claude, codex, …) and tasks\n  \
        swarm spawn rev --agent claude --prompt 'Review the diff'   one more teammate\n  \
        swarm task create \"count lines\" --command 'wc -l src/*.rs'\n  \
        swarm send --to rev \"look at #1\"    swarm status    swarm down\n\n\
        Inside tmux the panes open in your window; outside, swarm starts a tmux session (or \
        hosts the panes itself: --backend in-process).\n\n\
        Exit codes: 0 ok, 1 the answer is no (nothing to claim, a plan rejected, or no such \
        team, task or member), 2 error, \
        3 a send is still pending (its inbox's writer stopped; it will land once: do not resend).",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args, Clone)]
pub struct Global {
    /// State root [default: $CLAUDE_CONFIG_DIR, else ~/.claude]
    #[arg(long, global = true, env = "SWARM_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Team to act on [default: the only team, if there is exactly one]
    #[arg(long, global = true, env = "SWARM_TEAM", value_name = "NAME")]
    pub team: Option<String>,
    /// Who is acting: messages are sent from, and tasks claimed by, this member
    #[arg(
        long = "as",
        global = true,
        env = "SWARM_AGENT_NAME",
        value_name = "NAME",
        default_value = "team-lead"
    )]
    pub as_name: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create, delete or list teams
    #[command(subcommand)]
    Team(TeamCmd),
    /// Show the roster, unread counts and task counts of a team
    Status(StatusArgs),
    /// Send a message (or a protocol response) to a member's inbox
    Send(SendArgs),
    /// Show a member's inbox; consume it with --mark-read; watch it with --follow
    Inbox(InboxArgs),
    /// Work with the shared task list
    #[command(subcommand)]
    Task(TaskCmd),
    /// Ask the lead to approve a plan and wait: exit 0 approved, 1 rejected
    Ask(AskArgs),
    /// Start the team (or come back to it): the lead in a pane, one pane per teammate
    Up(UpArgs),
    /// Shut every teammate down gracefully, then delete the team
    Down(DownArgs),
    /// Add a teammate: a roster entry, a pane, and its first prompt in its inbox
    Spawn(SpawnArgs),
    /// Kill a teammate now: SIGTERM, SIGKILL after a grace period, pane closed, tasks back to the board
    Kill(KillArgs),
    /// Ask a teammate to shut down; on approval its pane closes and its tasks return to the board
    Shutdown(ShutdownArgs),
    /// Kill idle teammates (no task in progress, no unread mail)
    Prune(PruneArgs),
    /// Print a teammate's pane output without attaching
    Output(OutputArgs),
    /// Attach to the team's tmux session
    Attach(BackendArgs),
    /// Show what a teammate changed in its worktree since it left the lead's branch
    Diff(DiffArgs),
    /// Merge (or rebase) a teammate's worktree branch into the lead's branch
    Merge(MergeArgs),
    /// Check which backends work here, the tmux version and the state root
    Doctor(DoctorArgs),
    /// Serve the team's verbs to an AI agent: an MCP (Model Context Protocol) server on stdio
    #[command(long_about = MCP_ABOUT, after_long_help = MCP_REGISTER)]
    Mcp(McpArgs),
    /// The lead process (run by `swarm up` inside its pane)
    #[command(hide = true)]
    Lead(LeadArgs),
    /// The teammate runtime (the first process in every teammate pane)
    #[command(hide = true)]
    Teammate(TeammateArgs),
    /// Waits until the pane's output is being captured, then execs the program
    #[command(hide = true)]
    PaneExec(PaneExecArgs),
    /// Rings teammates' doorbells on this machine (run over ssh by a sender
    /// on the lead's machine, DESIGN §13)
    #[command(hide = true)]
    Ring(RingArgs),
}

#[derive(Debug, Args)]
pub struct RingArgs {
    /// The members of --team whose doorbells ring here
    #[arg(value_name = "MEMBER")]
    pub members: Vec<String>,
    /// Instead: check that a doorbell can be made and rung under this state
    /// root here (what `swarm doctor --host` asks), and say so
    #[arg(long, conflicts_with = "members")]
    pub probe: bool,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
}

/// `swarm mcp --help`: what the server is.
const MCP_ABOUT: &str = "Serve the team's verbs to an AI agent: an MCP (Model Context Protocol) \
    server on stdio, for one team (--team / SWARM_TEAM) and one acting member (--as / \
    SWARM_AGENT_NAME, default team-lead).\n\n\
    Its 14 tools are the commands you know: team_status (what `swarm status --json` prints), \
    spawn_teammate, send_message, read_inbox, wait_for_messages (waits at most 50 s, hands \
    each message out once), task_create, task_list, task_get, task_update, task_claim, \
    shutdown_teammate, kill_teammate, teammate_output (escapes stripped) and answer_request. \
    A call that fails is a tool result marked isError carrying the line this CLI would print; \
    the server keeps answering. Started by the agent's CLI, not by you: stdout is the \
    protocol, the log goes to <state>/logs/mcp-<member>.log.";

/// `swarm mcp --help`: how each agent CLI is told about the server.
const MCP_REGISTER: &str = "Registering it (use the full path of swarm if it is not on the \
    agent's PATH; add SWARM_HOME and, for a private tmux server, SWARM_TMUX_SOCKET to its env):\n\n\
    Claude Code:\n  \
    claude mcp add swarm -- swarm mcp --team T\n  \
    or for one run: claude --mcp-config swarm-mcp.json, the file holding\n  \
    {\"mcpServers\": {\"swarm\": {\"command\": \"swarm\", \"args\": [\"mcp\", \"--team\", \"T\"]}}}\n  \
    (its tools are mcp__swarm__team_status, …; --allowedTools mcp__swarm allows them all)\n\n\
    Codex:\n  \
    codex mcp add swarm -- swarm mcp --team T\n  \
    or in ~/.codex/config.toml:\n  \
    [mcp_servers.swarm]\n  \
    command = \"swarm\"\n  \
    args = [\"mcp\", \"--team\", \"T\"]\n  \
    or for one run: codex exec -c 'mcp_servers.swarm.command=\"swarm\"' \\\n      \
    -c 'mcp_servers.swarm.args=[\"mcp\", \"--team\", \"T\"]' …\n\n\
    Gemini CLI:\n  \
    gemini mcp add swarm swarm mcp --team T\n  \
    or in .gemini/settings.json (the project's) or ~/.gemini/settings.json:\n  \
    {\"mcpServers\": {\"swarm\": {\"command\": \"swarm\", \"args\": [\"mcp\", \"--team\", \"T\"]}}}\n\n\
    swarm's own codex and gemini teammates get this server in their launch, for their team \
    and name, with none of the above.";

#[derive(Debug, Args)]
pub struct PaneExecArgs {
    /// Created by the spawner once `pipe-pane` is attached
    #[arg(long, value_name = "FILE")]
    pub ready: PathBuf,
    /// Variables passed by name (a private JSON object the spawner wrote):
    /// read, deleted, and set for the program
    #[arg(long, value_name = "FILE")]
    pub env_file: Option<PathBuf>,
    /// The program and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "PROGRAM")]
    pub command: Vec<String>,
}

/// `--backend`, `SWARM_BACKEND` and a spec's `backend`: `auto` or one of
/// the backends crate's kinds, by the names the roster's `backendType` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Kind(BackendKind),
}

impl BackendChoice {
    /// `auto`, then every kind ([`BackendKind::ALL`]).
    const ALL: [BackendChoice; 5] = [
        BackendChoice::Auto,
        BackendChoice::Kind(BackendKind::ALL[0]),
        BackendChoice::Kind(BackendKind::ALL[1]),
        BackendChoice::Kind(BackendKind::ALL[2]),
        BackendChoice::Kind(BackendKind::ALL[3]),
    ];

    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Kind(k) => k.as_str(),
        }
    }

    /// The kind asked for; `None` is auto-detection.
    pub fn kind(self) -> Option<BackendKind> {
        match self {
            BackendChoice::Auto => None,
            BackendChoice::Kind(k) => Some(k),
        }
    }

    /// Every name, for error messages.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("backend {s:?} is unknown; pick one of {}", Self::names()))
    }
}

impl ValueEnum for BackendChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &Self::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

/// Where panes live.
#[derive(Debug, Args, Clone, Default)]
pub struct BackendArgs {
    /// Pane backend [default: auto: tmux inside tmux, iTerm2, Windows Terminal, tmux if installed, else in-process]
    #[arg(long, value_enum, env = "SWARM_BACKEND")]
    pub backend: Option<BackendChoice>,
    /// tmux server socket [default: the team's recorded server, else the tmux you are in, else tmux's default server]; one that is not the team's running server is an error
    #[arg(long, env = "SWARM_TMUX_SOCKET", value_name = "PATH")]
    pub tmux_socket: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UpArgs {
    /// Team spec (swarm.toml): team name, teammates, initial tasks
    pub spec: Option<PathBuf>,
    /// Run the embedded demo: three shell teammates and a small task board, no AI needed
    #[arg(long, conflicts_with = "spec")]
    pub demo: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Outside tmux: create the session but do not attach to it
    #[arg(long)]
    pub no_attach: bool,
    /// Panes all gone (tmux ended, reboot): bring every teammate back without asking
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    /// Panes all gone: start the teammates anew, their claimed tasks back on the board
    #[arg(long)]
    pub fresh: bool,
    /// A coding agent leads the team in a pane of its own beside the TeamsDialog: claude, codex
    /// or gemini (it plans, spawns and delegates through swarm's MCP tools; you keep every key)
    #[arg(long, value_name = "AGENT")]
    pub lead: Option<String>,
    /// The AI lead's first turn, started at once (what the team is to do)
    #[arg(long, value_name = "TEXT")]
    pub lead_prompt: Option<String>,
    /// team (the default): the AI lead works too; coordinator: it only delegates (its own tools are the team tools)
    #[arg(long, value_name = "MODE")]
    pub lead_mode: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The teammate whose worktree to compare
    pub name: String,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    /// Only the summary of changed files
    #[arg(long)]
    pub stat: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The teammate whose branch to merge
    pub name: String,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    /// Rebase the teammate's branch onto the lead's, then fast-forward
    #[arg(long)]
    pub rebase: bool,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    /// Seconds to wait for teammates to approve their shutdown
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub wait: u64,
    /// Kill whoever did not shut down in time, and delete the team anyway
    #[arg(long)]
    pub force: bool,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct SpawnArgs {
    /// Member name: lowercase letters, digits and '-'
    #[arg(allow_hyphen_values = true)]
    pub name: String,
    /// shell, claude, codex, gemini, aider, claude-print, command (with -- CMD ARGS),
    /// or process (the default with -- CMD ARGS: CMD is the teammate's program)
    #[arg(long)]
    pub agent: Option<String>,
    /// The teammate's first instructions. claude and shell teammates get them
    /// in their inbox (a shell teammate runs them as a command and sends the
    /// output to the lead); other agents take them as their role prompt, put
    /// before each unit of work
    #[arg(long)]
    pub prompt: Option<String>,
    /// The model the agent runs with (passed to claude, codex, gemini and
    /// aider as their own `--model`; shown in the TeamsDialog)
    #[arg(long)]
    pub model: Option<String>,
    /// Palette colour: red, blue, green, yellow, purple, orange, pink, cyan [default: next free]
    #[arg(long)]
    pub color: Option<String>,
    /// Working directory of the teammate [default: the current directory]
    #[arg(long)]
    pub cwd: Option<PathBuf>,
    /// The machine it runs on: `local` (the default) or one of the team's
    /// hosts (its spec's `[[host]]` tables, recorded by `swarm up SPEC`)
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// The teammate must have each plan approved before it acts
    #[arg(long)]
    pub plan_mode_required: bool,
    /// Permission mode at launch: default, acceptEdits, plan, bypassPermissions,
    /// dontAsk, auto (Claude Code's --permission-mode; codex and gemini get
    /// their own flags) [default: default]
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,
    /// K=V sets K for the teammate (kept in the roster); a bare K passes K's
    /// value from this shell by name (never written anywhere). Repeatable.
    /// The agent's own API variables are passed without asking (see README)
    #[arg(long = "env", value_name = "K=V|K")]
    pub env: Vec<String>,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    /// Work in a git worktree of its own, on branch swarm/TEAM/NAME
    #[arg(long)]
    pub worktree: bool,
    /// Run this command in the pane instead of the teammate runtime
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct KillArgs {
    /// The teammate to kill
    pub name: String,
    /// Seconds between SIGTERM and SIGKILL
    #[arg(long, default_value_t = 2.0, value_name = "SECS")]
    pub grace: f64,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct ShutdownArgs {
    /// The teammate to ask
    pub name: String,
    /// Why, as the teammate will read it in the request
    #[arg(long)]
    pub reason: Option<String>,
    /// Seconds to wait for the answer
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub wait: u64,
    /// Kill the teammate if it has not approved after SECS
    #[arg(long, value_name = "SECS")]
    pub force_after: Option<u64>,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Only list who would be pruned
    #[arg(long)]
    pub dry_run: bool,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct OutputArgs {
    /// The teammate whose pane output to print
    pub name: String,
    /// Keep printing new output as it arrives
    #[arg(long)]
    pub follow: bool,
    /// Only the last N lines, terminal escapes stripped
    #[arg(long, value_name = "N", conflicts_with = "follow")]
    pub lines: Option<usize>,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
    #[arg(long, conflicts_with = "follow")]
    pub json: bool,
    /// Start at this byte offset of the output log
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub from_offset: u64,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print the findings as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Check another machine of the spec instead (its `[[host]]` NAME): ssh in batch
    /// mode, tmux's version, swarm's version (equal to this one), this state
    /// root seen at the host's `root`, and the wake-up path (a doorbell made
    /// and rung there over ssh; its runtimes also look every `poll` seconds);
    /// each failed check with its fix, exit 1
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// The spec holding the `[[host]]` (default: ./swarm.toml)
    #[arg(long, value_name = "FILE", requires = "host")]
    pub spec: Option<PathBuf>,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct LeadArgs {
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
pub struct TeammateArgs {
    /// The member this runtime speaks for
    #[arg(long)]
    pub name: String,
}

#[derive(Debug, Subcommand)]
pub enum TeamCmd {
    /// Create a team: a roster with the lead, an inbox directory and a task list
    Create {
        /// Team name: lowercase letters, digits and '-', at most 64 characters
        #[arg(allow_hyphen_values = true)]
        name: String,
        /// What the team is for (the roster's description)
        #[arg(long)]
        description: Option<String>,
        /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
        #[arg(long)]
        json: bool,
    },
    /// Delete a team's roster, inboxes, task list and swarm state
    Delete {
        /// The team to delete
        #[arg(allow_hyphen_values = true)]
        name: String,
        /// Delete even while teammates are active
        #[arg(long)]
        force: bool,
        /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
        #[arg(long)]
        json: bool,
    },
    /// List the teams under the state root
    List {
        /// Print the names as a JSON array
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the team, its members and its board as one JSON object
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("kind").args(["shutdown_request", "shutdown_response", "plan_response", "mode_set"])))]
pub struct SendArgs {
    /// Recipient: a member name, or '*' for every member but yourself
    ///
    /// A broadcast goes to every inbox it can: one that cannot be written
    /// (its lock held by a stopped process) does not keep it from the
    /// others. It prints "sent to NAME" for each that got it and, if any
    /// did not, one error line naming each (pending or failed): exit 3 if
    /// it is pending for any (do not send it again), else 2.
    #[arg(long, value_name = "NAME|*", required_unless_present = "stdin")]
    pub to: Option<String>,
    /// Message text; '-' reads it from standard input
    #[arg(value_name = "TEXT", required_unless_present_any = ["kind", "stdin"])]
    pub text: Option<String>,
    /// Send many messages from one process: one per line of standard input,
    /// either a JSON object {"to": NAME, "text": TEXT, "summary": S} ("to"
    /// defaults to --to, "summary" is optional) or, for a line not starting
    /// with '{', the line itself as the text to --to. Stops at the first
    /// failure (exit 2, a recipient not on the roster too) after printing
    /// what was sent.
    #[arg(long, conflicts_with_all = ["text", "kind"])]
    pub stdin: bool,
    /// Short preview shown in lists (default: the text's first line, cut to 200 characters)
    #[arg(long)]
    pub summary: Option<String>,
    /// Send even if the recipient is not on the roster (creates its inbox), or a
    /// --mode-set its agent ignores
    #[arg(long)]
    pub force: bool,
    /// Send a shutdown_request (lead only)
    #[arg(long)]
    pub shutdown_request: bool,
    /// Answer a shutdown request by its id (with --approve or --reject --reason)
    #[arg(long, value_name = "REQUEST_ID")]
    pub shutdown_response: Option<String>,
    /// Ask a teammate to switch permission mode (lead only): default, acceptEdits,
    /// plan, bypassPermissions, dontAsk, auto
    #[arg(long, value_name = "MODE")]
    pub mode_set: Option<String>,
    /// Answer a plan approval request by its id (with --approve or --reject [--feedback])
    #[arg(long, value_name = "REQUEST_ID")]
    pub plan_response: Option<String>,
    /// Approve (with --shutdown-response or --plan-response)
    #[arg(long, conflicts_with = "reject")]
    pub approve: bool,
    /// Reject (with --shutdown-response and --reason, or --plan-response)
    #[arg(long)]
    pub reject: bool,
    /// Reason for a shutdown request or a rejection
    #[arg(long)]
    pub reason: Option<String>,
    /// Feedback with a plan response
    #[arg(long)]
    pub feedback: Option<String>,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, "sent": [{"to", "msg_id", "entry"}]} (see README)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The plan, as the lead will read it in its approval queue
    #[arg(long)]
    pub plan: String,
    /// Seconds to wait for the answer
    #[arg(long, default_value_t = 900, value_name = "SECS")]
    pub timeout: u64,
    /// Print the answer as one JSON object: {"schema": 1, "ok": true, "asked": {…}} (see README)
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct InboxArgs {
    /// Whose inbox [default: --as]
    pub name: Option<String>,
    /// Only messages not yet consumed (legacy `read:true` entries hidden)
    #[arg(long)]
    pub unread: bool,
    /// Consume the shown messages: they leave the inbox for the member's history
    #[arg(long)]
    pub mark_read: bool,
    /// Also show consumed messages from the history, oldest first
    #[arg(long)]
    pub all: bool,
    /// Keep running and print each new message the moment it arrives
    #[arg(long)]
    pub follow: bool,
    /// JSON: an array, or one object per line with --follow
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Subcommand)]
pub enum TaskCmd {
    /// Create a task; prints its id
    ///
    /// A shell teammate takes only a task that carries a command (--command,
    /// metadata.command) and runs that; it never runs the subject or the
    /// description. A task without one stays on the board for another
    /// teammate (an agent reads its subject and description), and one
    /// assigned to a shell teammate goes back to the board.
    Create {
        /// One line saying what is to be done
        subject: String,
        /// The details a teammate needs to do it
        #[arg(long, default_value = "")]
        description: String,
        /// Present-tense label shown while the task runs ("Counting lines")
        #[arg(long)]
        active_form: Option<String>,
        /// Ids this task waits for, comma-separated
        #[arg(long, value_delimiter = ',', value_name = "IDS")]
        blocked_by: Vec<String>,
        /// Shell command a shell teammate runs for this task (metadata.command); without it no shell teammate takes the task
        #[arg(long)]
        command: Option<String>,
        /// Extra metadata as a JSON object
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
        /// Print the result as one JSON object: {"schema": 1, "ok": true, "task": {…}} (see README)
        #[arg(long)]
        json: bool,
    },
    /// List tasks in id order
    List {
        /// Print the tasks as a JSON array
        #[arg(long)]
        json: bool,
    },
    /// Show one task (exit 1 if there is no such task)
    Get {
        /// The task's id
        id: String,
        /// Print the task as JSON
        #[arg(long)]
        json: bool,
    },
    /// Change a task; an owner change notifies the new owner
    Update(TaskUpdateArgs),
    /// Delete a task (its id is never reused)
    Delete {
        /// The task's id
        id: String,
        /// Print the result as one JSON object: {"schema": 1, "ok": true, …} (see README)
        #[arg(long)]
        json: bool,
    },
    /// Claim a task for --as (the lowest-id claimable one if no id); prints its id, exit 1 if none
    Claim {
        /// The task to claim [default: the lowest-id claimable one]
        id: Option<String>,
        /// Refuse if the claimant already owns another open task
        #[arg(long)]
        busy_check: bool,
        /// Print the result as one JSON object: {"schema": 1, "ok": true, "task": {…}} (see README)
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct TaskUpdateArgs {
    /// The task's id
    pub id: String,
    /// New subject
    #[arg(long)]
    pub subject: Option<String>,
    /// New description
    #[arg(long)]
    pub description: Option<String>,
    /// New present-tense label shown while the task runs
    #[arg(long)]
    pub active_form: Option<String>,
    /// New status; in-progress with no owner makes --as the owner
    #[arg(long, value_enum)]
    pub status: Option<StatusArg>,
    /// New owner (a member name); notifies them with a task_assignment
    #[arg(long, conflicts_with = "unassign")]
    pub owner: Option<String>,
    /// Remove the owner
    #[arg(long)]
    pub unassign: bool,
    /// Metadata to merge, as a JSON object; a null value deletes the key
    #[arg(long, value_name = "JSON")]
    pub metadata: Option<String>,
    /// Ids this task blocks, comma-separated
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub add_blocks: Vec<String>,
    /// Ids this task waits for, comma-separated
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    pub add_blocked_by: Vec<String>,
    /// Allow an owner that is not on the roster
    #[arg(long)]
    pub force: bool,
    /// Print the result as one JSON object: {"schema": 1, "ok": true, "task": {…}} (see README)
    #[arg(long)]
    pub json: bool,
}

impl Cli {
    /// This process's command line, parsed. `swarm send …` (one process per
    /// message, so the one command run by the thousand) and the two
    /// processes of every teammate pane are parsed by a parser built of
    /// their own subcommand only ([`Cli::lean`]): the full parser builds
    /// all ~40 subcommands first. Anything else, and a line that does not
    /// parse that way (help, version, a mistake), goes through the full
    /// parser, so every message and exit code is the full parser's.
    pub fn from_env() -> Cli {
        Cli::lean(std::env::args_os())
            .unwrap_or_else(|| Cli::parse_args(std::env::args_os()).unwrap_or_else(|e| e.exit()))
    }

    /// `args` parsed by the full parser. A mistake's message offers only
    /// the commands `--help` lists: clap also names the hidden ones (`lead`,
    /// `teammate`, `pane-exec`) in its list of subcommands and its "similar
    /// subcommands" tip, and nobody types those.
    pub fn parse_args(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Cli, clap::Error> {
        use clap::CommandFactory;
        use clap::error::{ContextKind, ContextValue};
        Cli::try_parse_from(args).map_err(|mut e| {
            let hidden: Vec<String> = Cli::command()
                .get_subcommands()
                .filter(|c| c.is_hide_set())
                .map(|c| c.get_name().to_string())
                .collect();
            for kind in [
                ContextKind::ValidSubcommand,
                ContextKind::SuggestedSubcommand,
            ] {
                let Some(ContextValue::Strings(names)) = e.get(kind) else {
                    continue;
                };
                let shown: Vec<String> = names
                    .iter()
                    .filter(|n| !hidden.contains(n))
                    .cloned()
                    .collect();
                if shown.is_empty() {
                    e.remove(kind);
                } else {
                    e.insert(kind, ContextValue::Strings(shown));
                }
            }
            e
        })
    }

    /// `args` parsed by a parser built of their subcommand only, when it
    /// is one of those a process is started for by the dozen (`send`: one
    /// process per message; `pane-exec` and the `teammate` it runs: one
    /// per teammate pane, all at once at `swarm up`) and they parse. Building the full
    /// parser costs about four times the parse of a send.
    pub fn lean(args: impl IntoIterator<Item = std::ffi::OsString>) -> Option<Cli> {
        use clap::{ArgMatches, FromArgMatches};
        type Make = fn(&ArgMatches) -> Option<Command>;
        let args: Vec<std::ffi::OsString> = args.into_iter().collect();
        let (name, sub, make): (&str, fn(clap::Command) -> clap::Command, Make) =
            match args.get(1)?.to_str()? {
                "send" => ("send", SendArgs::augment_args, |m| {
                    Some(Command::Send(SendArgs::from_arg_matches(m).ok()?))
                }),
                "teammate" => ("teammate", TeammateArgs::augment_args, |m| {
                    Some(Command::Teammate(TeammateArgs::from_arg_matches(m).ok()?))
                }),
                "pane-exec" => ("pane-exec", PaneExecArgs::augment_args, |m| {
                    Some(Command::PaneExec(PaneExecArgs::from_arg_matches(m).ok()?))
                }),
                _ => return None,
            };
        // The name shows only in messages, and those come from the full parser.
        let parser = Global::augment_args(clap::Command::new("swarm"))
            .subcommand_required(true)
            .subcommand(sub(clap::Command::new(name)));
        let matches = parser.try_get_matches_from(args).ok()?;
        let (_, sub) = matches.subcommand()?;
        Some(Cli {
            global: Global::from_arg_matches(&matches).ok()?,
            command: make(sub)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every argument of every command, with the command's path, and
    /// every command's path with its one-line help.
    fn every_arg(
        cmd: &clap::Command,
        path: &str,
        out: &mut Vec<(String, clap::Arg)>,
        commands: &mut Vec<(String, String)>,
    ) {
        let path = format!("{path} {}", cmd.get_name());
        if !cmd.is_hide_set() {
            let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
            commands.push((path.clone(), about));
        }
        out.extend(cmd.get_arguments().map(|a| (path.clone(), a.clone())));
        for sub in cmd.get_subcommands() {
            every_arg(sub, &path, out, commands);
        }
    }

    /// `--help` teaches every command and argument: each has its own line
    /// of help (the `-- CMD` of `spawn` had none, its doc comment glued
    /// onto `--worktree`'s), and no help runs two sentences together.
    #[test]
    fn every_argument_of_every_command_has_its_own_help() {
        use clap::CommandFactory;
        let mut args = Vec::new();
        let mut commands = Vec::new();
        every_arg(&Cli::command(), "", &mut args, &mut commands);
        assert!(args.len() > 50, "{} arguments", args.len());
        let mut wrong = Vec::new();
        for (path, arg) in args {
            if arg.is_hide_set() || ["help", "version"].contains(&arg.get_id().as_str()) {
                continue;
            }
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            if help.trim().is_empty() {
                wrong.push(format!("{path}: {} has no help", arg.get_id()));
            }
            // Two doc lines glued: "…the runtime Work in a…".
            let glued = help
                .split_whitespace()
                .collect::<Vec<_>>()
                .windows(2)
                .any(|w| {
                    w[1].len() > 1
                        && w[0].chars().all(|c| c.is_ascii_lowercase())
                        && w[1].chars().next().is_some_and(|c| c.is_ascii_uppercase())
                        && w[1].chars().skip(1).all(|c| c.is_ascii_lowercase())
                });
            if glued {
                wrong.push(format!(
                    "{path}: {}'s help runs two lines together: {help}",
                    arg.get_id()
                ));
            }
        }
        for (path, about) in commands {
            if about.trim().is_empty() {
                wrong.push(format!("{path} has no one-line help"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// Issue 24, item 10: `swarm --home DIR` with no command listed the
    /// hidden `lead`, `teammate` and `pane-exec` among its subcommands, and
    /// a near miss (`swarm lea`) offered them as a tip.
    #[test]
    fn a_mistake_never_offers_the_hidden_commands() {
        for line in [
            &["--home", "/h"][..],
            &["lea"],
            &["teammat"],
            &["pane"],
            &[],
        ] {
            let shown = match Cli::parse_args(argv(line)) {
                Ok(cli) => panic!("{line:?} parsed: {cli:?}"),
                Err(e) => e.render().to_string(),
            };
            for hidden in [
                " lead,",
                "'lead'",
                "\n  lead ",
                " teammate,",
                "'teammate'",
                "\n  teammate ",
                "pane-exec",
            ] {
                assert!(
                    !shown.contains(hidden),
                    "swarm {line:?} offers {hidden}:\n{shown}"
                );
            }
        }
        let shown = Cli::parse_args(argv(&["--home", "/h"]))
            .unwrap_err()
            .render()
            .to_string();
        assert!(shown.contains("team, status, send"), "{shown}");
    }

    fn argv(line: &[&str]) -> Vec<std::ffi::OsString> {
        std::iter::once("swarm")
            .chain(line.iter().copied())
            .map(Into::into)
            .collect()
    }

    #[test]
    fn the_lean_parser_reads_a_send_or_a_pane_s_process_as_the_full_parser_does() {
        let sends: &[&[&str]] = &[
            &["send", "--to", "bob", "hi"],
            &["send", "--as", "m0", "--to", "team-lead", "hello"],
            &[
                "send", "--to", "bob", "--team", "t", "--home", "/h", "--json", "x y",
            ],
            &[
                "send",
                "--to",
                "*",
                "--summary",
                "s",
                "--force",
                "--",
                "-a dash",
            ],
            &["send", "--stdin", "--to", "bob"],
            &["send", "--stdin"],
            &["send", "--to", "bob", "-"],
            &[
                "send",
                "--shutdown-request",
                "--to",
                "bob",
                "--reason",
                "done",
            ],
            &[
                "send",
                "--to",
                "team-lead",
                "--shutdown-response",
                "r1",
                "--approve",
            ],
            &[
                "send",
                "--to",
                "bob",
                "--plan-response",
                "p1",
                "--reject",
                "--feedback",
                "no",
            ],
            &["send", "--to", "bob", "--mode-set", "plan"],
            &["teammate", "--name", "m0"],
            &["teammate", "--name", "m0", "--team", "t", "--home", "/h"],
            &[
                "pane-exec",
                "--ready",
                "/r",
                "--",
                "swarm",
                "teammate",
                "--name",
                "m0",
            ],
            &[
                "pane-exec",
                "--ready",
                "/r",
                "--env-file",
                "/e",
                "--",
                "sh",
                "-c",
                "--x",
            ],
        ];
        for line in sends {
            let lean = Cli::lean(argv(line)).unwrap_or_else(|| panic!("{line:?}"));
            let full = Cli::try_parse_from(argv(line)).unwrap_or_else(|e| panic!("{line:?}: {e}"));
            assert_eq!(format!("{lean:?}"), format!("{full:?}"), "{line:?}");
        }
    }

    #[test]
    fn the_full_parser_answers_what_the_lean_parser_does_not_parse() {
        let others: &[&[&str]] = &[
            &["send"],
            &["send", "--to", "bob"],
            &["send", "--help"],
            &["send", "-h"],
            &["send", "--version"],
            &["send", "--to", "bob", "hi", "--no-such-flag"],
            &["send", "--stdin", "hi"],
            &["send", "--to", "bob", "--approve", "--reject", "x"],
            &["--team", "t", "send", "--to", "bob", "hi"],
            &["status"],
            &["teammate"],
            &["teammate", "--help"],
            &["pane-exec", "--ready", "/r"],
            &["pane-exec", "--", "sh"],
            &["lead"],
            &[],
        ];
        for line in others {
            assert!(Cli::lean(argv(line)).is_none(), "{line:?}");
        }
    }
}
