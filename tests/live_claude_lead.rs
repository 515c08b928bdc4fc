//! Live: the real Claude Code (the pinned version `scripts/install-agents`
//! installs) as an interactive LEAD in a pane of a private tmux server,
//! its model scripted on 127.0.0.1 (`tests/models/anthropic.py`), and swarm
//! watching the team that lead makes (issue 22). The lead's first turn
//! spawns a teammate `researcher`; Claude Code's own tmux backend opens the
//! teammate's pane on that server. swarm started none of it: it sees the
//! lead and the teammate alive (`status --json`), lists the teammate in the
//! TeamsDialog opened as a watcher, reaches it with `send`, and never
//! writes the team's `config.json`.
//!
//! What the pinned version needs to spawn a pane teammate offline (read in
//! its shipped code, then seen here): `CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1`
//! in the lead's environment (without it the same tool call starts a
//! background subagent and no team is made), `teammateMode: "tmux"` in
//! `settings.json` (the default is in-process), and the lead inside tmux
//! (`$TMUX` names the server it splits). The spawn is the Agent tool with a
//! `name` (`{"description", "prompt", "name": "researcher"}`, offered
//! directly, not deferred; `team_name` is ignored: each session has one
//! implicit team, `session-<8 hex>`). The lead runs in the `default`
//! permission mode: in auto mode, behind a base URL that is not Anthropic's,
//! it refuses classifier-gated tools.
//!
//! A teammate's process takes the tmux server's environment, not its
//! lead's, so the server's global environment is set to the user's before
//! the lead starts. Nothing leaves the machine: the API is the scripted
//! server, other HTTP goes to a closed proxy port, the plugin marketplace
//! is not installed, and `ssh` on `PATH` fails at once.

use crate::live_claude::{CLAUDE_VERSION, KEY, set_up_claude_user};
use crate::util::live::{
    LIVE_WAIT, ModelServer, agent_cache, at, installed, now, offline_bin_dir, serial,
    set_server_environment,
};
use crate::util::tmux_server::TmuxServer;
use crate::util::{Run, Sandbox, WAIT, swarm_bin, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// A random tag for this run's needles, so a request matches only this
/// run's script.
fn tag() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .subsec_nanos();
    format!("{:08x}", nanos ^ std::process::id().rotate_left(16))
}

/// Every string in a JSON value, one a line (a message's text blocks).
fn strings(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s}\n"),
        Value::Array(a) => a.iter().map(strings).collect(),
        Value::Object(o) => o.values().map(strings).collect(),
        _ => String::new(),
    }
}

/// The team Claude Code's lead made and the teammate's pane in it.
struct Spawned {
    team: String,
    pane: String,
}

/// The real Claude Code leading a team on a private tmux server, with the
/// swarm root as its config dir. Fields drop in order: the server first
/// (its drop kills every pane's process group: the lead, its teammate,
/// the watcher), then the model server, then the root.
struct ClaudeLead {
    tmux: TmuxServer,
    server: ModelServer,
    sb: Sandbox,
    /// The lead's pane.
    lead_pane: String,
    _serial: std::sync::MutexGuard<'static, ()>,
}

impl ClaudeLead {
    /// Sets the user up (onboarding done, [`KEY`] approved, the work dir
    /// trusted, `teammateMode: "tmux"`), starts the scripted model with
    /// `rules`, and the lead in a pane with `prompt` as its first message.
    /// `None` after printing SKIP when the CLI is not installed.
    fn start(test: &str, rules: Vec<Value>, prompt: &str) -> Option<ClaudeLead> {
        let claude = installed(
            test,
            agent_cache().join(format!(
                "claude-code-{CLAUDE_VERSION}/node_modules/.bin/claude"
            )),
            &format!("Claude Code {CLAUDE_VERSION}"),
        )?;
        let serial = serial();
        let sb = Sandbox::new();
        let work = sb.path("work");
        let home = sb.path("home");
        for d in [&work, &home] {
            std::fs::create_dir_all(d).expect("dir");
        }
        set_up_claude_user(sb.root(), sb.root(), &work);
        let settings = sb.path("settings.json");
        let mut s: Value = serde_json::from_slice(&std::fs::read(&settings).expect("settings"))
            .expect("settings json");
        s["teammateMode"] = json!("tmux");
        std::fs::write(&settings, serde_json::to_vec_pretty(&s).expect("json")).expect("settings");

        let server = ModelServer::start(
            "anthropic.py",
            &json!({"rules": rules, "default": [{"type": "text", "text": "ok"}]}),
        );
        let tmux = TmuxServer::start();
        let path = format!(
            "{}:{}:{}",
            offline_bin_dir().display(),
            claude.parent().expect("bin dir").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let s = |p: &Path| p.to_string_lossy().into_owned();
        set_server_environment(
            &tmux,
            &[
                ("HOME", s(&home)),
                ("PATH", path.clone()),
                ("USER", "swarm-live".into()),
                ("CLAUDE_CONFIG_DIR", s(sb.root())),
                ("ANTHROPIC_BASE_URL", server.base_url()),
                ("ANTHROPIC_API_KEY", KEY.into()),
                ("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS", "1".into()),
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into()),
                (
                    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL",
                    "1".into(),
                ),
                ("HTTPS_PROXY", "http://127.0.0.1:9".into()),
                ("HTTP_PROXY", "http://127.0.0.1:9".into()),
                ("NO_PROXY", "127.0.0.1,localhost".into()),
            ],
        );
        // tmux gives a new pane the PATH of the client that asked for it,
        // hence PATH again here; the rest is the server's environment.
        let lead_pane = tmux.new_session_in(
            "claude-lead",
            (200, 50),
            &work,
            &[
                "env",
                &format!("PATH={path}"),
                &s(&claude),
                "--permission-mode",
                "default",
                prompt,
            ],
        );
        Some(ClaudeLead {
            tmux,
            server,
            sb,
            lead_pane,
            _serial: serial,
        })
    }

    /// Waits until the lead's team is under the root with `name` on its
    /// roster in a pane (`tmuxPaneId` `%N`).
    fn wait_spawned(&self, name: &str) -> Spawned {
        let mut found = None;
        wait_until(
            &format!(
                "Claude Code's lead makes its team (teams/session-<8 hex>) and puts {name} \
                 in a pane of its tmux server"
            ),
            LIVE_WAIT,
            || {
                found = self.teams().into_iter().find_map(|team| {
                    let roster = self.roster(&team)?;
                    let pane = roster["members"]
                        .as_array()?
                        .iter()
                        .find(|m| m["name"] == name)?["tmuxPaneId"]
                        .as_str()?
                        .to_string();
                    pane.starts_with('%').then_some(Spawned { team, pane })
                });
                found.is_some()
            },
            || self.explain(None),
        );
        found.expect("found")
    }

    /// The `session-<8 hex>` teams under the root.
    fn teams(&self) -> Vec<String> {
        std::fs::read_dir(self.sb.path("teams"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| {
                n.strip_prefix("session-").is_some_and(|h| {
                    h.len() == 8 && h.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
                })
            })
            .collect()
    }

    fn config_path(&self, team: &str) -> PathBuf {
        self.sb.path(&format!("teams/{team}/config.json"))
    }

    /// The roster, when it reads whole (Claude Code rewrites it in place:
    /// a read may land mid-write).
    fn roster(&self, team: &str) -> Option<Value> {
        serde_json::from_slice(&std::fs::read(self.config_path(team)).ok()?).ok()
    }

    /// Waits for the first agent-loop request after the first `after`
    /// whose conversation holds every `contains` needle and not `absent`.
    fn wait_request(&self, what: &str, after: usize, contains: &[&str], absent: &str) -> Value {
        let mut found = None;
        wait_until(
            what,
            LIVE_WAIT,
            || {
                found = self
                    .server
                    .main_requests()
                    .into_iter()
                    .skip(after)
                    .find(|r| {
                        let text = r["text"].as_str().unwrap_or("");
                        contains.iter().all(|n| text.contains(n)) && !text.contains(absent)
                    });
                found.is_some()
            },
            || self.explain(None),
        );
        found.expect("found")
    }

    /// `swarm ARGS` as the user runs it beside Claude Code: the root is
    /// Claude Code's config dir, the tmux server is the private one.
    fn swarm(&self, args: &[&str]) -> Run {
        let mut c = self.sb.cmd(args);
        c.env("SWARM_TMUX_SOCKET", &self.tmux.sock);
        Run::of(c, args)
    }

    fn swarm_ok(&self, args: &[&str], team: &str) -> Run {
        let r = self.swarm(args);
        if r.code != Some(0) {
            panic!(
                "swarm {args:?} should succeed\n{}\n{}",
                r.explain(),
                self.explain(Some(team))
            );
        }
        r
    }

    /// Every pane and its screen, every model request, the roster.
    fn explain(&self, team: Option<&str>) -> String {
        let mut s = format!("=== tmux ===\n{}", self.tmux.dump());
        s.push_str("=== model requests ===\n");
        s.push_str(
            &self
                .server
                .summary(|r| r["text"].as_str().unwrap_or("").to_string()),
        );
        s.push_str(&format!(
            "=== teams under the root: {:?} ===\n",
            self.teams()
        ));
        if let Some(team) = team {
            s.push_str(
                &std::fs::read_to_string(self.config_path(team))
                    .unwrap_or_else(|e| format!("(config.json: {e})")),
            );
            s.push('\n');
        }
        s
    }
}

/// Issue 22, live: a team the real Claude Code leads, its teammate in a
/// tmux pane of its own making, is watched by swarm: `status` sees both
/// alive, the TeamsDialog lists @researcher alive and leaves with `q`,
/// `swarm send` reaches the teammate's next model request, and the
/// team's `config.json` is byte-identical after all of it.
#[test]
fn a_team_the_real_claude_code_leads_is_watched_and_reached_by_swarm() {
    let tag = tag();
    let spawn_needle = format!("SPAWN-{tag}");
    let role = format!("ROLE-{tag}");
    let probe = format!("PROBE-{tag}");
    let role_prompt = format!("You are researcher ({role}). Wait for messages from the lead.");
    let rules = vec![
        // The lead: spawn researcher with the Agent tool, then idle.
        json!({"name": "spawn", "when": {"contains": &spawn_needle},
               "replies": [
                   [{"type": "tool_use", "name": "Agent", "input": {
                       "description": "research", "name": "researcher", "prompt": &role_prompt}}],
                   [{"type": "text", "text": "researcher is on it"}]]}),
        // The teammate: its first turn ends quietly, as does the probe's.
        json!({"name": "researcher-ready", "when": {"contains": &role, "absent": &spawn_needle},
               "replies": [[{"type": "text", "text": "ready"}]]}),
        json!({"name": "researcher-probe", "when": {"contains": &probe, "absent": &spawn_needle},
               "replies": [[{"type": "text", "text": "noted"}]]}),
    ];
    let Some(cc) = ClaudeLead::start(
        "live_claude_lead",
        rules,
        &format!("{spawn_needle}: start a teammate named researcher"),
    ) else {
        return;
    };
    let started = now();

    // Claude Code spawns researcher: its team under the root, its pane on
    // the private server, its first model request carrying its prompt.
    let Spawned { team, pane } = cc.wait_spawned("researcher");
    let first = cc.wait_request(
        "researcher's first model request carries its prompt",
        0,
        &[&role, "<teammate-message teammate_id=\"team-lead\""],
        &spawn_needle,
    );
    assert!(
        cc.tmux.pane_alive(&pane),
        "researcher's pane {pane} runs\n{}",
        cc.explain(Some(&team))
    );

    // Before swarm's first command: researcher's first turn has ended
    // (Claude Code writes isActive:false at every turn end).
    let config = cc.config_path(&team);
    wait_until(
        "researcher's first turn ends (isActive false on the roster)",
        LIVE_WAIT,
        || {
            cc.roster(&team).is_some_and(|r| {
                r["members"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| m["name"] == "researcher" && m["isActive"] == false)
            })
        },
        || cc.explain(Some(&team)),
    );
    let before = std::fs::read(&config).expect("config.json");
    let roster: Value = serde_json::from_slice(&before).expect("config.json whole");

    // status: the lead alive (leadProcess: the process in the lead's pane),
    // researcher alive in the pane Claude Code gave it.
    let status = cc.swarm_ok(&["status", "--team", &team, "--json"], &team);
    let snap = status.json();
    let lead_pid: u64 = cc
        .tmux
        .display(&cc.lead_pane, "#{pane_pid}")
        .parse()
        .expect("pid");
    assert_eq!(snap["foreign"], true, "{}", status.explain());
    assert_eq!(
        (&snap["lead"]["alive"], snap["lead"]["pid"].as_u64()),
        (&json!(true), Some(lead_pid)),
        "the lead's Claude Code runs in its pane\n{}\n{}",
        status.explain(),
        roster["leadProcess"]
    );
    let researcher = snap["members"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == "researcher"))
        .unwrap_or_else(|| panic!("researcher in status\n{}", status.explain()));
    assert_eq!(researcher["alive"], true, "{}", status.explain());
    assert_eq!(researcher["paneId"], pane.as_str(), "{}", status.explain());
    assert!(
        matches!(researcher["status"].as_str(), Some("idle" | "running")),
        "{}",
        status.explain()
    );

    // The TeamsDialog, as a watcher, in a pane of the same server; left
    // with q. A shell around it writes its exit code to a file: here tmux
    // 3.3a at times left the watcher's exited process unreaped (a zombie
    // whose parent is the server: `pane_dead` 1, no `pane_dead_status`)
    // for the whole wait, in 3 runs of 10.
    let var = |k: &str, v: &Path| format!("{k}={}", v.display());
    let exit_file = cc.sb.path("watcher.exit");
    let watcher = cc.tmux.new_session(
        "watcher",
        (160, 40),
        &[
            "env",
            "-i",
            &var("HOME", cc.sb.root()),
            &format!("PATH={}", std::env::var("PATH").unwrap_or_default()),
            &var("SWARM_HOME", cc.sb.root()),
            &var("SWARM_TMUX_SOCKET", &cc.tmux.sock),
            "TERM=xterm",
            &var("WATCHER_EXIT", &exit_file),
            "sh",
            "-c",
            "\"$@\"; echo $? > \"$WATCHER_EXIT\"",
            "sh",
            swarm_bin(),
            "up",
            "--team",
            &team,
        ],
    );
    cc.tmux
        .ok(&["set-option", "-p", "-t", &watcher, "remain-on-exit", "on"]);
    let screen = || cc.tmux.capture(&watcher);
    wait_until(
        "the watching dialog lists @researcher alive (idle or running)",
        WAIT,
        || {
            let s = screen();
            s.contains("watching team")
                && s.lines().any(|l| {
                    l.contains("@researcher ")
                        && (l.contains(" idle ") || l.contains(" running "))
                        && !l.contains("dead")
                })
        },
        || format!("{}\n{}", screen(), cc.explain(Some(&team))),
    );
    cc.tmux.send_keys(&watcher, &["q"]);
    let mut code = String::new();
    wait_until(
        "q leaves the watcher (its exit code written)",
        WAIT,
        || {
            code = std::fs::read_to_string(&exit_file).unwrap_or_default();
            code.ends_with('\n')
        },
        || format!("{}\n{}", screen(), cc.explain(Some(&team))),
    );
    assert_eq!(code.trim(), "0", "the watcher exits 0\n{}", screen());

    // send: the teammate's next model request carries the text.
    let seen = cc.server.main_requests().len();
    let sent = now();
    let send = cc.swarm_ok(
        &["send", "--team", &team, "--to", "researcher", &probe],
        &team,
    );
    let next = cc.wait_request(
        "swarm's message reaches researcher's next model request",
        seen,
        &[&probe],
        &spawn_needle,
    );
    let send_to_request = at(&next) - sent;
    let last = next
        .pointer("/body/messages")
        .and_then(Value::as_array)
        .and_then(|m| m.last())
        .map(strings)
        .unwrap_or_default();
    assert!(
        last.contains(&probe),
        "the probe is the request's newest message\n{}\n{}",
        send.explain(),
        cc.explain(Some(&team))
    );

    // Never written by swarm: once researcher's turn on the probe has
    // ended (isActive back to false), the roster is what it was.
    wait_until(
        "config.json is byte-identical to before swarm's commands (researcher idle again)",
        LIVE_WAIT,
        || std::fs::read(&config).is_ok_and(|now| now == before),
        || {
            format!(
                "before:\n{}\nnow:\n{}\n{}",
                String::from_utf8_lossy(&before),
                String::from_utf8_lossy(&std::fs::read(&config).unwrap_or_default()),
                cc.explain(Some(&team))
            )
        },
    );
    for (who, p) in [("the lead", &cc.lead_pane), ("researcher", &pane)] {
        assert!(
            cc.tmux.pane_alive(p),
            "{who}'s pane {p} still runs\n{}",
            cc.explain(Some(&team))
        );
    }

    let opening = last
        .lines()
        .find(|l| l.starts_with("<teammate-message"))
        .unwrap_or("");
    println!("NOTE researcher's model sees swarm's message as: {opening}");
    println!(
        "NOTE claude {CLAUDE_VERSION}: lead start -> researcher's first request {:.2} s",
        at(&first) - started
    );
    println!("FIGURE send->teammate request: {send_to_request:.2} s");
}
