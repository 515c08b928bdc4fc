//! The pane lifecycle end to end on real tmux: `up`, `spawn`, `kill`,
//! `shutdown`, `prune`, `down`, `output`, `doctor`, the lead's supervision
//! and its restart. Each test runs the real binary against a private state
//! root and a private tmux server ([`TmuxTeam`]) holding a `canary` session
//! that every teardown must leave alone. Teammates are fake agents from
//! `tests/agents/` started with `swarm spawn NAME -- CMD` (agent `process`).

use crate::util::process;
use crate::util::timeouts::{self, Deadline};
use crate::util::tmux::{TmuxTeam, WAIT, agent, group_alive, lock_dirs};
use crate::util::{KillOnDrop, Run, pid_alive, swarm_bin, wait_until};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Arguments a shell would mangle: they must reach the agent unchanged.
const HOSTILE_ARGS: [&str; 8] = [
    "two words",
    "it's \"quoted\"",
    "a;b",
    "trailing;",
    ";",
    "$(touch pwned) `touch pwned2`",
    "ünïcødé ✓ 日本",
    "--not-a-flag",
];

/// Variables a POSIX shell adds to the environment it runs `env` with.
const SHELL_ADDED: [&str; 4] = ["PWD", "OLDPWD", "SHLVL", "_"];

/// The variables every pane must have (DESIGN §6).
const PANE_ENV: [&str; 12] = [
    "SWARM_HOME",
    "SWARM_TEAM",
    "SWARM_AGENT_NAME",
    "SWARM_AGENT_ID",
    "SWARM_AGENT_COLOR",
    "SWARM_SCRATCHPAD",
    "PATH",
    "HOME",
    "USER",
    "SHELL",
    "TERM",
    "LANG",
];

fn recorder_cmd() -> Vec<String> {
    let mut c = vec![agent("recorder")];
    c.extend(HOSTILE_ARGS.iter().map(|s| s.to_string()));
    c
}

/// Reads a NUL-separated file written by the recorder.
fn nul_fields(t: &TmuxTeam, file: &str) -> Vec<String> {
    let p = t.work.join(file);
    let bytes =
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}\n{}", p.display(), t.explain()));
    let mut v: Vec<String> = bytes
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    if v.last().is_some_and(String::is_empty) {
        v.pop();
    }
    v
}

fn recorded_env(t: &TmuxTeam, name: &str) -> BTreeMap<String, String> {
    nul_fields(t, &format!("{name}.env"))
        .into_iter()
        .filter_map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

/// Checks what recorder `name` saw: argv, cwd and exactly the pane env.
fn assert_recorded(t: &TmuxTeam, name: &str, caller: &BTreeMap<&str, &str>) {
    t.wait_ready(name);
    let argv = nul_fields(t, &format!("{name}.argv"));
    assert_eq!(argv, HOSTILE_ARGS, "argv of {name}\n{}", t.explain());
    let cwd = std::fs::read_to_string(t.work.join(format!("{name}.cwd"))).expect("cwd file");
    assert_eq!(
        std::path::Path::new(cwd.trim_end()).canonicalize().ok(),
        t.work.canonicalize().ok(),
        "cwd of {name}"
    );
    let env = recorded_env(t, name);
    let keys: Vec<&str> = env
        .keys()
        .map(String::as_str)
        .filter(|k| !SHELL_ADDED.contains(k))
        .collect();
    let mut want: Vec<&str> = PANE_ENV.to_vec();
    want.sort();
    assert_eq!(keys, want, "exactly the pane env for {name}; got {env:#?}");
    let member = t.member(name).expect("on the roster");
    let field = |k: &str| {
        member
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(env["SWARM_HOME"], t.sb.root().to_string_lossy());
    assert_eq!(env["SWARM_TEAM"], t.team);
    assert_eq!(env["SWARM_AGENT_NAME"], name);
    assert_eq!(env["SWARM_AGENT_ID"], field("agentId"));
    assert_eq!(env["SWARM_AGENT_COLOR"], field("color"));
    let swarm_dir = std::path::Path::new(swarm_bin()).parent().expect("bin dir");
    assert!(
        env["PATH"].starts_with(&*swarm_dir.to_string_lossy()),
        "PATH of {name} starts with swarm's directory: {}",
        env["PATH"]
    );
    for (k, v) in caller {
        assert_eq!(env.get(*k).map(String::as_str), Some(*v), "{k} of {name}");
    }
}

/// The spawn caller's environment for the exact-env checks (`LEAKME` is not
/// in any spec and must not reach a pane).
fn caller_env() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("USER", "swarm-tester"),
        ("SHELL", "/bin/sh"),
        ("TERM", "xterm-256color"),
        ("LANG", "C.UTF-8"),
    ])
}

fn spawn_recorder(t: &TmuxTeam, name: &str) -> Run {
    let cmd = recorder_cmd();
    let mut args: Vec<&str> = vec!["spawn", name, "--"];
    args.extend(cmd.iter().map(String::as_str));
    let mut c = t.cmd(&args);
    for (k, v) in caller_env() {
        c.env(k, v);
    }
    c.env("LEAKME", "1");
    let r = Run::of(c, &args);
    if r.code != Some(0) {
        panic!("spawn {name}\n{}\n{}", r.explain(), t.explain());
    }
    r
}

/// No `*.lock` directory stays. A live lead may hold one for a moment
/// (consuming its inbox), so allow a second; a lock left by a dead holder
/// stays until someone contends for it.
fn assert_no_lock_dirs(t: &TmuxTeam) {
    wait_until(
        "no *.lock directories are left under the root",
        Duration::from_secs(1),
        || lock_dirs(t.sb.root()).is_empty(),
        || format!("left: {:?}\n{}", lock_dirs(t.sb.root()), t.explain()),
    );
}

/// The tmux colour the backend stores in `@swarm_color` for a palette name.
fn tmux_colour(palette: &str) -> &str {
    match palette {
        "purple" => "magenta",
        "orange" => "colour208",
        "pink" => "colour205",
        other => other,
    }
}

fn assert_group_dead(t: &TmuxTeam, what: &str, pgid: u32) {
    wait_until(
        &format!("the process group {pgid} of {what} is dead"),
        Duration::from_secs(3),
        || !group_alive(pgid),
        || t.explain(),
    );
}

fn assert_canary(t: &TmuxTeam, after: &str) {
    assert!(
        t.tmux.canary_alive(),
        "the canary session survives {after}\n{}",
        t.explain()
    );
}

fn task_status(t: &TmuxTeam, id: &str) -> (String, Option<String>) {
    let task = t.task(id);
    (
        task["status"].as_str().unwrap_or("?").to_string(),
        task.get("owner")
            .and_then(|o| o.as_str())
            .filter(|o| !o.is_empty())
            .map(str::to_string),
    )
}

fn assert_task_back(t: &TmuxTeam, id: &str) {
    assert_eq!(
        task_status(t, id),
        ("pending".to_string(), None),
        "task #{id} is back on the board\n{}",
        t.explain()
    );
}

// ---------------------------------------------------------------- spawn

#[test]
fn eight_teammates_spawned_from_outside_tmux_get_exact_panes() {
    let Some(t) = TmuxTeam::new("eight_teammates_spawned_from_outside_tmux", "octo") else {
        return;
    };
    t.up();
    let names: Vec<String> = (0..8).map(|i| format!("agent-{i}")).collect();
    for n in &names {
        spawn_recorder(&t, n);
    }
    let mut colors = Vec::new();
    for n in &names {
        assert_recorded(&t, n, &caller_env());
        let pane = t.pane_of(n);
        let p = t.tmux.pane(&pane).expect("pane listed");
        assert_eq!(p.session, "swarm-octo", "{n} lives in the team's session");
        assert_eq!(p.title, *n, "title of {n}\n{}", t.explain());
        let color = t.member(n).unwrap()["color"].as_str().unwrap().to_string();
        assert_eq!(p.color, tmux_colour(&color), "@swarm_color of {n}");
        colors.push(color);
    }
    colors.sort();
    colors.dedup();
    assert_eq!(colors.len(), 8, "8 distinct colours: {colors:?}");
    let team_panes: Vec<_> = t
        .tmux
        .panes()
        .into_iter()
        .filter(|p| p.session == "swarm-octo")
        .collect();
    assert_eq!(
        team_panes.len(),
        9,
        "the lead and 8 teammates\n{}",
        t.explain()
    );
    assert!(!t.work.join("pwned").exists() && !t.work.join("pwned2").exists());
    assert_canary(&t, "spawning");
}

/// What `swarm output NAME` prints (the pane's output file).
fn output_of(t: &TmuxTeam, name: &str, home: Option<&std::path::Path>) -> String {
    let mut c = t.cmd(&["output", name]);
    if let Some(h) = home {
        c.env("SWARM_HOME", h);
    }
    Run::of(c, &["output", name]).stdout
}

/// Issue 25, item 5: a swarm teammate's runtime runs in its pane's first
/// process (`swarm pane-exec` becomes it without starting swarm a second
/// time), and a variable passed by name (the hand-off file) reaches it and
/// its work all the same.
#[test]
fn a_teammate_runtime_runs_in_its_panes_first_process_with_what_was_passed() {
    let Some(t) = TmuxTeam::new("runtime_in_first_process", "rp") else {
        return;
    };
    let spec = "team = \"rp\"\n[[teammate]]\nname = \"w\"\nagent = \"shell\"\n\
                pass_env = [\"SWARM_TEST_PASSED\"]\n";
    let path = t.work.join("swarm.toml");
    std::fs::write(&path, spec).expect("spec");
    let args = ["up", "--no-attach", path.to_str().expect("a UTF-8 path")];
    let mut up = t.cmd(&args);
    up.env("SWARM_TEST_PASSED", "handed over");
    let up = Run::of(up, &args);
    assert_eq!(up.code, Some(0), "{}\n{}", up.explain(), t.explain());
    t.wait_lead();
    t.ok(&[
        "send",
        "--to",
        "w",
        "printf '%s' \"$SWARM_TEST_PASSED\" > passed.txt",
    ]);
    let passed = t.work.join("passed.txt");
    wait_until(
        "w's work sees the variable passed by name",
        WAIT,
        || std::fs::read_to_string(&passed).is_ok_and(|s| s == "handed over"),
        || t.explain(),
    );
    let pid = t.tmux.pane(&t.pane_of("w")).expect("w's pane").pid;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("the pane's process");
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    assert_eq!(
        argv.get(1).map(String::as_str),
        Some("pane-exec"),
        "the pane's first process runs the runtime itself: {argv:?}\n{}",
        t.explain()
    );
    assert!(
        argv.ends_with(&["teammate".into(), "--name".into(), "w".into()]),
        "{argv:?}"
    );
    let log = std::fs::read_to_string(t.sb.path("swarm/rp/logs/teammate-w.log")).unwrap();
    assert!(
        log.contains("teammate runtime starting"),
        "the runtime logs to its own file: {log}"
    );
}

#[test]
fn up_with_a_spec_registers_every_teammate_titled_coloured_and_piped() {
    let Some(t) = TmuxTeam::new("up_with_a_spec_registers_every_teammate", "sq") else {
        return;
    };
    // Six teammates: five fit beside the lead in a 200x50 session, the sixth
    // overflows into a window of its own. Both paths open, pipe, title and
    // colour a pane in one tmux call.
    let names: Vec<String> = (1..=6).map(|i| format!("m{i}")).collect();
    let mut spec = String::from("team = \"sq\"\n");
    for n in &names {
        spec.push_str(&format!(
            "[[teammate]]\nname = \"{n}\"\nagent = \"shell\"\n"
        ));
    }
    let path = t.work.join("swarm.toml");
    std::fs::write(&path, spec).expect("spec");
    let up = t.ok(&["up", "--no-attach", &path.to_string_lossy()]);
    // The one that overflowed is said to be elsewhere, on the roster (the
    // dialog shows it) and in `up`'s own words.
    let apart: Vec<&String> = names
        .iter()
        .filter(|n| t.member(n).unwrap()["swarmApart"].is_string())
        .collect();
    assert_eq!(apart, [&names[5]], "{}", t.explain());
    assert!(
        up.stderr.contains("(the lead's window is full)"),
        "{}",
        up.explain()
    );
    // `up` returns once every pane is open and on the roster: no waiting.
    let mut panes = Vec::new();
    let mut colors = Vec::new();
    for n in &names {
        let pane = t.pane_of(n);
        assert!(
            pane.starts_with('%'),
            "{n} is registered with a pane id: {pane:?}\n{}",
            t.explain()
        );
        let p = t
            .tmux
            .pane(&pane)
            .unwrap_or_else(|| panic!("pane {pane} of {n} is on the server\n{}", t.explain()));
        assert!(!p.dead, "{n}'s pane runs\n{}", t.explain());
        assert_eq!(p.session, "swarm-sq", "{n} lives in the team's session");
        assert_eq!(p.title, *n, "title of {n}\n{}", t.explain());
        let color = t.member(n).unwrap()["color"].as_str().unwrap().to_string();
        assert_eq!(p.color, tmux_colour(&color), "@swarm_color of {n}");
        let piped = t.tmux.display(&pane, "#{pane_pipe}");
        assert_eq!(piped, "1", "{n}'s output is piped\n{}", t.explain());
        panes.push(pane);
        colors.push(color);
    }
    panes.sort();
    panes.dedup();
    assert_eq!(panes.len(), 6, "six distinct panes: {panes:?}");
    colors.sort();
    colors.dedup();
    assert_eq!(colors.len(), 6, "six distinct colours: {colors:?}");
    // The splits never take the focus: the lead is still its window's
    // active pane, and the session still shows the lead's window.
    let lead_window = t.tmux.ok(&[
        "list-panes",
        "-t",
        "=swarm-sq:",
        "-F",
        "#{pane_active} #{pane_title}",
    ]);
    assert!(
        lead_window.lines().any(|l| l == "1 lead"),
        "the lead keeps the focus:\n{lead_window}\n{}",
        t.explain()
    );
    // Each output file holds the pane's output from its first byte: the
    // runtime's banner opens it.
    for n in &names {
        let banner = format!("swarm teammate {n}@sq");
        wait_until(
            &format!("{n}'s output starts with {banner:?}"),
            WAIT,
            || output_of(&t, n, None).starts_with(&banner),
            || format!("output: {:?}\n{}", output_of(&t, n, None), t.explain()),
        );
    }
    assert_canary(&t, "up with a spec");
}

/// Pins 373d49b: tmux expands formats in a pipe-pane command, so a state root
/// containing `#(cmd)` ran `cmd` (pipe-pane commands now double each `#`).
#[test]
fn a_state_root_full_of_format_and_shell_characters_still_gets_its_output() {
    let Some(t) = TmuxTeam::new("a_state_root_full_of_format_and_shell", "hr") else {
        return;
    };
    // tmux expands `#{…}` / `#(…)` in a pipe-pane command, /bin/sh reads
    // quotes and `$(…)`, and a tmux argument ending in ';' would end a
    // command: the root's path has all of them (SWARM_HOME ends in ';').
    let home = t.sb.path("root #{pane_id} it's $(touch pwned) a;b;");
    std::fs::create_dir_all(&home).expect("hostile root");
    let run = |args: &[&str]| {
        let mut c = t.cmd(args);
        c.env("SWARM_HOME", &home);
        let r = Run::of(c, args);
        assert_eq!(
            r.code,
            Some(0),
            "swarm {args:?}\n{}\n{}",
            r.explain(),
            t.explain()
        );
        r
    };
    run(&["team", "create", "hr"]);
    run(&["spawn", "talker", "--", &agent("printer"), "3"]);
    let member = {
        let cfg = std::fs::read_to_string(home.join("teams/hr/config.json")).expect("roster");
        let v: serde_json::Value = serde_json::from_str(&cfg).expect("roster json");
        v["members"]
            .as_array()
            .and_then(|m| m.iter().find(|m| m["name"] == "talker").cloned())
            .expect("talker on the roster")
    };
    let pane = member["tmuxPaneId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let p = t
        .tmux
        .pane(&pane)
        .unwrap_or_else(|| panic!("pane {pane:?} is on the server\n{}", t.explain()));
    assert_eq!(p.title, "talker");
    assert_eq!(
        p.color,
        tmux_colour(member["color"].as_str().unwrap_or_default())
    );
    wait_until(
        "the printer's output, from its first line, is in its output file",
        WAIT,
        || {
            let out = output_of(&t, "talker", Some(&home));
            out.starts_with("line 1") && out.contains("done")
        },
        || {
            format!(
                "output: {:?}\n{}",
                output_of(&t, "talker", Some(&home)),
                t.explain()
            )
        },
    );
    assert!(!t.work.join("pwned").exists() && !home.join("pwned").exists());
    assert_canary(&t, "a hostile state root");
}

#[test]
fn eight_teammates_spawned_inside_tmux_split_the_leads_window() {
    let Some(t) = TmuxTeam::new("eight_teammates_spawned_inside_tmux", "inner") else {
        return;
    };
    // `swarm up` inside a pane of the private server: tmux sets TMUX and
    // TMUX_PANE for it; the lead runs right there, in that pane.
    let root = t.sb.root().to_string_lossy().into_owned();
    let sock = t.tmux.sock.to_string_lossy().into_owned();
    let work = t.work.to_string_lossy().into_owned();
    // Not `env -i`: the lead must keep the TMUX and TMUX_PANE tmux gave it.
    t.tmux.new_session_in(
        "outer",
        (250, 120),
        &t.work,
        &[
            "/usr/bin/env",
            "-u",
            "SWARM_TEAM",
            "-u",
            "SWARM_AGENT_NAME",
            "-u",
            "SWARM_BACKEND",
            "-u",
            "CLAUDE_CONFIG_DIR",
            &format!("HOME={root}"),
            &format!("SWARM_HOME={root}"),
            &format!("SWARM_TMUX_SOCKET={sock}"),
            "LEAKME=1",
            swarm_bin(),
            "up",
            "--team",
            "inner",
        ],
    );
    t.wait_lead();
    let lead_pane = t
        .tmux
        .panes()
        .into_iter()
        .find(|p| p.session == "outer")
        .expect("the outer pane");
    assert_eq!(
        Some(lead_pane.pid),
        t.lead_pid(),
        "the lead runs in the pane `swarm up` was started in\n{}",
        t.explain()
    );
    // The spawns run inside tmux too (another window of the same server),
    // with TMUX, TMUX_PANE, LEAKME and the server's whole environment around
    // them: none of it may reach a teammate.
    let names: Vec<String> = (0..8).map(|i| format!("in-{i}")).collect();
    let rc = t.work.join("spawns.rc");
    let log = t.work.join("spawns.log");
    let script = r#"for n in $NAMES; do "$SWARM" spawn "$n" -- "$@" || exit 1; done > "$LOG" 2>&1; echo $? > "$RC""#;
    let mut args: Vec<String> = vec!["new-window", "-d", "-t", "=outer:5", "-c", &work]
        .into_iter()
        .map(String::from)
        .collect();
    let mut env: Vec<(String, String)> = caller_env()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.extend([
        ("LEAKME".into(), "1".into()),
        ("HOME".into(), root.clone()),
        ("SWARM_HOME".into(), root.clone()),
        ("SWARM_TEAM".into(), "inner".into()),
        ("SWARM".into(), swarm_bin().into()),
        ("NAMES".into(), names.join(" ")),
        ("LOG".into(), log.to_string_lossy().into_owned()),
        ("RC".into(), rc.to_string_lossy().into_owned()),
    ]);
    for (k, v) in env {
        args.push("-e".into());
        args.push(format!("{k}={v}"));
    }
    args.extend([
        "--".into(),
        "/bin/sh".into(),
        "-c".into(),
        script.into(),
        "sh".into(),
    ]);
    // tmux reads an argument ending in ';' as a command separator: escape
    // it here as the backend does.
    args.extend(
        recorder_cmd()
            .into_iter()
            .map(|a| match a.strip_suffix(';') {
                Some(head) => format!("{head}\\;"),
                None => a,
            }),
    );
    t.tmux
        .ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wait_until(
        "the 8 spawns run from inside tmux finish",
        WAIT * 3,
        || std::fs::read_to_string(&rc).is_ok_and(|s| !s.trim().is_empty()),
        || t.explain(),
    );
    let spawned = std::fs::read_to_string(&rc).unwrap_or_default();
    assert_eq!(
        spawned.trim(),
        "0",
        "spawns from inside tmux:\n{}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default(),
        t.explain()
    );
    for n in &names {
        // tmux sets SHELL (its default-shell) for every process it starts,
        // the spawner included, so only the others are compared.
        let mut from_spawner = caller_env();
        from_spawner.remove("SHELL");
        assert_recorded(&t, n, &from_spawner);
        let p = t.tmux.pane(&t.pane_of(n)).expect("pane listed");
        assert_eq!(
            (p.session.as_str(), p.window.as_str()),
            ("outer", lead_pane.window.as_str()),
            "{n} splits the lead's window\n{}",
            t.explain()
        );
        assert_eq!(p.title, *n);
    }
    assert!(
        !t.tmux.has_session("swarm-inner"),
        "no extra session inside tmux"
    );
    assert_canary(&t, "spawning");
}

// ------------------------------------------------------------- teardown

#[test]
fn kill_removes_the_member_its_pane_and_its_process_group() {
    let Some(t) = TmuxTeam::new("kill_removes_the_member", "kt") else {
        return;
    };
    t.up();
    spawn_recorder(&t, "victim");
    spawn_recorder(&t, "bystander");
    t.wait_ready("victim");
    let pane = t.pane_of("victim");
    let pgid = t.pid_of("victim");
    let task = t.task_in_progress("work", "victim");
    let r = t.ok(&["kill", "victim"]);
    assert!(r.stdout.contains("killed victim"), "{}", r.explain());
    assert!(
        !t.members().contains(&"victim".to_string()),
        "{}",
        t.explain()
    );
    assert!(
        t.tmux.pane(&pane).is_none(),
        "pane {pane} closed\n{}",
        t.explain()
    );
    assert_group_dead(&t, "victim", pgid);
    assert_task_back(&t, &task);
    assert!(
        t.tmux.pane(&t.pane_of("bystander")).is_some(),
        "bystander untouched"
    );
    assert_no_lock_dirs(&t);
    assert_canary(&t, "kill");
}

#[test]
fn kill_gets_through_an_agent_that_ignores_sigterm() {
    let Some(t) = TmuxTeam::new("kill_gets_through_sigterm", "stub") else {
        return;
    };
    t.up();
    t.spawn("mule", &[&agent("stubborn")]);
    t.wait_ready("mule");
    let pane = t.pane_of("mule");
    let pgid = t.pid_of("mule");
    // The ladder reaches SIGKILL: `kill` returns, it does not wait on an
    // agent that will never go politely. (What it costs: scripts/bench-lifecycle.)
    let args = ["kill", "mule", "--grace", "0.3"];
    Run::within(
        t.cmd(&args),
        &args,
        "swarm kill returns once SIGKILL ends the agent",
        WAIT,
        || t.explain(),
    )
    .assert_code(0);
    assert!(t.tmux.pane(&pane).is_none(), "pane closed\n{}", t.explain());
    assert_group_dead(&t, "mule", pgid);
    assert!(t.members().is_empty(), "{}", t.explain());
    assert_canary(&t, "kill");
}

#[test]
fn shutdown_approved_closes_the_pane_and_returns_the_task() {
    let Some(t) = TmuxTeam::new("shutdown_approved", "sa") else {
        return;
    };
    t.up();
    t.spawn("polite", &[&agent("answerer"), "approve"]);
    t.wait_ready("polite");
    let pane = t.pane_of("polite");
    let pgid = t.pid_of("polite");
    let task = t.task_in_progress("work", "polite");
    let r = t.ok(&[
        "shutdown",
        "polite",
        "--wait",
        &timeouts::secs_arg(WAIT / 2),
    ]);
    assert!(r.stdout.contains("polite shut down"), "{}", r.explain());
    assert!(t.tmux.pane(&pane).is_none(), "pane closed\n{}", t.explain());
    assert!(
        t.member("polite").is_none(),
        "member removed\n{}",
        t.explain()
    );
    assert_group_dead(&t, "polite", pgid);
    assert_task_back(&t, &task);
    assert_no_lock_dirs(&t);
    assert_canary(&t, "shutdown");
}

#[test]
fn shutdown_rejected_reports_the_reason_and_keeps_the_pane() {
    let Some(t) = TmuxTeam::new("shutdown_rejected", "sr") else {
        return;
    };
    t.up();
    t.spawn("busy", &[&agent("answerer"), "reject", "still on task #7"]);
    t.wait_ready("busy");
    let pane = t.pane_of("busy");
    let r = t.run(&["shutdown", "busy", "--wait", &timeouts::secs_arg(WAIT / 2)]);
    r.assert_code(1);
    assert!(
        r.stderr
            .contains("busy declined to shut down: still on task #7"),
        "{}",
        r.explain()
    );
    let p = t.tmux.pane(&pane).expect("pane still there");
    assert!(!p.dead, "still running\n{}", t.explain());
    assert!(t.member("busy").is_some());
    assert_no_lock_dirs(&t);
    assert_canary(&t, "a rejected shutdown");
}

#[test]
fn down_stops_at_a_refusal_without_waiting_it_out() {
    let Some(t) = TmuxTeam::new("down_refused", "dr") else {
        return;
    };
    t.up();
    t.spawn("busy", &[&agent("answerer"), "reject", "still on task #7"]);
    t.spawn("done", &[&agent("answerer"), "approve"]);
    for n in ["busy", "done"] {
        t.wait_ready(n);
    }
    let busy = t.pane_of("busy");
    // The refusal is final: `down` returns at once, not after sitting out a
    // budget ten times longer than this test waits for it.
    let budget = (timeouts::scaled(WAIT) * 10).as_secs().to_string();
    let args = ["down", "--wait", &budget];
    let r = Run::within(
        t.cmd(&args),
        &args,
        "swarm down returns at the refusal",
        WAIT,
        || t.explain(),
    );
    r.assert_error("declined to shut down: busy; the team was not deleted");
    assert_eq!(
        t.members(),
        ["busy"],
        "the polite one went\n{}",
        t.explain()
    );
    assert!(t.tmux.pane_alive(&busy), "{}", t.explain());
    // `down` had it close by itself at its end, as every teammate asked;
    // the team stays, so its pane is kept at its end again.
    assert_eq!(
        t.tmux.display(&busy, "#{remain-on-exit}"),
        "on",
        "{}",
        t.explain()
    );
    assert_no_lock_dirs(&t);
    assert_canary(&t, "a refused down");
}

/// `up`, then a shell teammate `held` whose runtime is held after it
/// approves a shutdown, until the file `door` is made
/// (`SWARM_FAULT_SHUTDOWN_GATE`): the door, its pane and its runtime.
fn up_with_a_held_teammate(t: &TmuxTeam) -> (std::path::PathBuf, String, u32) {
    t.up();
    let door = t.sb.path("door");
    t.ok(&[
        "spawn",
        "held",
        "--agent",
        "shell",
        "--env",
        &format!("SWARM_FAULT_SHUTDOWN_GATE={}", door.display()),
    ]);
    let pane = t.pane_of("held");
    let runtime = t.pid_of("held");
    wait_until(
        "held's runtime is up",
        WAIT,
        || t.tmux.capture(&pane).contains("swarm teammate held@"),
        || t.explain(),
    );
    (door, pane, runtime)
}

/// Waits until held's pane has closed while its runtime still runs (it
/// let go of its terminal as it approved).
fn pane_closed_while_its_runtime_runs(t: &TmuxTeam, pane: &str, runtime: u32) {
    wait_until(
        "held's pane closed while its runtime runs",
        WAIT,
        || t.tmux.pane(pane).is_none() && pid_alive(runtime),
        || t.explain(),
    );
}

/// `swarm down` with a generous wait, running.
fn down_in_the_background(t: &TmuxTeam) -> KillOnDrop {
    let budget = (timeouts::scaled(WAIT) * 10).as_secs().to_string();
    let mut down = t.cmd(&["down", "--wait", &budget]);
    down.stdout(Stdio::null()).stderr(Stdio::null());
    KillOnDrop(down.spawn().expect("starting swarm down"))
}

/// `down` ends well, `runtime` ended and the team is deleted.
fn down_deletes_the_team(t: &TmuxTeam, down: &mut KillOnDrop, runtime: u32) {
    let mut status = None;
    wait_until(
        "down ends",
        WAIT,
        || {
            status = down.0.try_wait().expect("down's status");
            status.is_some()
        },
        || t.explain(),
    );
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert!(!pid_alive(runtime), "held's runtime ended");
    assert!(t.config().is_none(), "the team is deleted");
}

/// A teammate lets go of its pane as it approves a shutdown, and `down`
/// released that pane to close at its end: the pane closes while the
/// runtime still writes (here held after its approval by
/// `SWARM_FAULT_SHUTDOWN_GATE`). `down` waits for the process, not the
/// pane, before it deletes the team.
#[test]
fn down_waits_for_a_teammate_whose_pane_closed_before_it_ended() {
    let Some(t) = TmuxTeam::new("down_outlived_pane", "dp") else {
        return;
    };
    let (door, pane, runtime) = up_with_a_held_teammate(&t);
    let mut down = down_in_the_background(&t);
    pane_closed_while_its_runtime_runs(&t, &pane, runtime);
    // Time for `down` to look at the panes again (every 200 ms) and, were
    // it to take the closed pane for the teammate's end, to delete the team.
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        down.0.try_wait().expect("down's status").is_none(),
        "down waits for held's runtime\n{}",
        t.explain()
    );
    assert!(t.config().is_some(), "the team is still there");
    std::fs::write(&door, b"").unwrap();
    down_deletes_the_team(&t, &mut down, runtime);
    assert_canary(&t, "a down that outlived a pane");
}

/// A teammate that approved, let go of its pane (which closed) and then
/// hung is not left behind: `down` gives an approving teammate 2 s to end,
/// then its process group gets the ladder, although no pane is left to
/// close. Here the teammate is held after its approval and never let
/// through.
#[test]
fn down_ends_a_teammate_that_approved_and_hung_after_its_pane_closed() {
    let Some(t) = TmuxTeam::new("down_hung", "dh") else {
        return;
    };
    let (_door, pane, runtime) = up_with_a_held_teammate(&t);
    let mut down = down_in_the_background(&t);
    pane_closed_while_its_runtime_runs(&t, &pane, runtime);
    down_deletes_the_team(&t, &mut down, runtime);
    assert_canary(&t, "a down that ended a hung teammate");
}

/// While `down` runs, the lead leaves the teammates' ends and its own
/// inbox to it (`DownLock`): it neither consumes their approvals nor
/// releases those that approved. Here the teammate approves and is held
/// before it ends (`SWARM_FAULT_SHUTDOWN_GATE`), and a second one, a
/// program that answers nothing, keeps `down` from taking the team for
/// gone (which would stop the lead). A lead acting on the approval
/// consumed it at once (and set out to close the teammate's pane beside
/// `down`); now the approval stays unread while `down` runs, and once the
/// teammate is let through and the program ends, the team goes.
#[test]
fn the_lead_leaves_a_running_down_its_teammates_and_its_inbox() {
    let Some(t) = TmuxTeam::new("down_lead_aside", "da") else {
        return;
    };
    let (door, _, runtime) = up_with_a_held_teammate(&t);
    t.spawn("mute", &["sleep", "100000"]);
    let mute = t.pid_of("mute");
    let mut down = down_in_the_background(&t);
    let approval_unread = || {
        t.inbox("team-lead").iter().any(|e| {
            e["from"] == "held"
                && e["read"] == false
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("shutdown_approved"))
        })
    };
    let aside = || {
        std::fs::read_to_string(t.lead_log())
            .is_ok_and(|l| l.contains("a `swarm down` runs: the teammates' ends"))
    };
    wait_until(
        "held approves, and the lead leaves it to down",
        WAIT,
        || approval_unread() && aside(),
        || t.explain(),
    );
    // Time for a lead acting on its inbox's change to consume it (within
    // milliseconds), short of the 2 s an approving teammate has to end.
    std::thread::sleep(Duration::from_millis(500));
    assert!(approval_unread(), "the approval is unread\n{}", t.explain());
    assert!(
        down.0.try_wait().expect("down's status").is_none(),
        "down waits for held\n{}",
        t.explain()
    );
    assert!(
        t.lead_pid().is_some_and(pid_alive),
        "the lead runs: not every teammate approved\n{}",
        t.explain()
    );
    std::fs::write(&door, b"").unwrap();
    // SAFETY: mute's pane process, a `sleep` this test started.
    unsafe { libc::kill(mute as i32, libc::SIGTERM) };
    down_deletes_the_team(&t, &mut down, runtime);
    assert_canary(&t, "a down the lead left alone");
}

/// Once every teammate has approved, the team is going: `down` tells the
/// lead to stop then, so that it ends while the teammates do, not after
/// them. Here the one teammate approves and is held before it ends: the
/// lead has ended while it is held (it ran until held's end before), and
/// once held is let through the team goes.
#[test]
fn down_stops_the_lead_once_every_teammate_has_approved() {
    let Some(t) = TmuxTeam::new("down_lead_early", "de") else {
        return;
    };
    let (door, pane, runtime) = up_with_a_held_teammate(&t);
    let lead = t.lead_pid().expect("the lead's pid");
    let mut down = down_in_the_background(&t);
    pane_closed_while_its_runtime_runs(&t, &pane, runtime);
    wait_until(
        "the lead ends while held is held",
        WAIT,
        || !pid_alive(lead),
        || t.explain(),
    );
    assert!(pid_alive(runtime), "held is still held\n{}", t.explain());
    assert!(
        down.0.try_wait().expect("down's status").is_none(),
        "down waits for held\n{}",
        t.explain()
    );
    std::fs::write(&door, b"").unwrap();
    down_deletes_the_team(&t, &mut down, runtime);
    assert_canary(&t, "a down that stopped the lead early");
}

/// A `down` that leaves the team standing (here its one teammate approved
/// but was held past the wait) gives the lead back its inbox and the
/// teammates' ends: the lead then carries out the approval `down` left,
/// and releases the teammate (let through, it ends).
#[test]
fn after_a_down_that_keeps_the_team_the_lead_takes_up_what_it_left() {
    let Some(t) = TmuxTeam::new("down_lead_back", "db") else {
        return;
    };
    let (door, _, runtime) = up_with_a_held_teammate(&t);
    let out = t
        .cmd(&["down", "--wait", "1"])
        .output()
        .expect("running swarm down");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("still running after 1 s: held"), "{said}");
    std::fs::write(&door, b"").unwrap();
    wait_until(
        "the lead releases held, as it approved",
        WAIT,
        || t.member("held").is_none() && !pid_alive(runtime),
        || t.explain(),
    );
    assert!(t.config().is_some(), "the team stays");
    assert_canary(&t, "a down that kept the team");
}

#[test]
fn prune_takes_only_the_idle() {
    let Some(t) = TmuxTeam::new("prune_takes_only_the_idle", "pr") else {
        return;
    };
    t.up();
    for n in ["working", "mailed", "idle"] {
        spawn_recorder(&t, n);
    }
    for n in ["working", "mailed", "idle"] {
        t.wait_ready(n);
    }
    let idle_pgid = t.pid_of("idle");
    let idle_pane = t.pane_of("idle");
    t.task_in_progress("work", "working");
    t.ok(&["send", "--to", "mailed", "please look at #1"]);
    let dry = t.ok(&["prune", "--dry-run"]);
    assert_eq!(dry.stdout.trim(), "would prune idle", "{}", dry.explain());
    let r = t.ok(&["prune"]);
    assert!(r.stdout.contains("pruned idle"), "{}", r.explain());
    assert_eq!(t.members(), ["working", "mailed"], "{}", t.explain());
    assert!(t.tmux.pane(&idle_pane).is_none());
    assert_group_dead(&t, "idle", idle_pgid);
    for n in ["working", "mailed"] {
        assert!(t.tmux.pane_alive(&t.pane_of(n)), "{n} stays");
    }
    assert_no_lock_dirs(&t);
    assert_canary(&t, "prune");
}

#[test]
fn down_leaves_nothing_of_the_team() {
    let Some(t) = TmuxTeam::new("down_leaves_nothing", "dn") else {
        return;
    };
    t.up();
    let lead = t.wait_lead();
    t.spawn("a", &[&agent("answerer"), "approve"]);
    t.spawn("b", &[&agent("answerer"), "approve"]);
    spawn_recorder(&t, "deaf");
    for n in ["a", "b", "deaf"] {
        t.wait_ready(n);
    }
    let groups: Vec<(String, u32)> = ["a", "b", "deaf"]
        .iter()
        .map(|n| (n.to_string(), t.pid_of(n)))
        .collect();
    // Without --force a member that never answers keeps the team alive.
    let refused = t.run(&["down", "--wait", "1"]);
    refused.assert_error("still running after 1 s: deaf; the team was not deleted");
    assert_eq!(
        t.members(),
        ["deaf"],
        "the polite ones went\n{}",
        t.explain()
    );
    let r = t.ok(&["down", "--wait", "1", "--force"]);
    assert!(r.stdout.contains("team dn deleted"), "{}", r.explain());
    assert!(
        !t.tmux.has_session("swarm-dn"),
        "session closed\n{}",
        t.explain()
    );
    let left: Vec<_> = t
        .tmux
        .panes()
        .into_iter()
        .filter(|p| p.session != "canary")
        .collect();
    assert!(left.is_empty(), "no team panes left: {left:?}");
    for (n, g) in &groups {
        assert_group_dead(&t, n, *g);
    }
    wait_until(
        "the lead exits",
        WAIT,
        || !group_alive(lead) && !std::path::Path::new(&format!("/proc/{lead}")).exists(),
        || format!("{}\n{}", process::describe(lead), t.explain()),
    );
    assert!(
        t.team_dirs().is_empty(),
        "team dirs deleted: {:?}",
        t.team_dirs()
    );
    assert!(!t.sb.path("swarm/dn").exists(), "swarm state deleted");
    assert_no_lock_dirs(&t);
    assert_canary(&t, "down");
}

#[test]
fn down_names_every_teammate_and_keeps_the_scratchpad() {
    let Some(t) = TmuxTeam::new("down_report", "dk") else {
        return;
    };
    t.ok(&["team", "create", "dk"]);
    t.spawn("polite", &[&agent("answerer"), "approve"]);
    t.spawn("early", &["sh", "-c", "exit 0"]);
    t.wait_ready("polite");
    let status_of = |name: &str| -> String {
        let st = t.run(&["status", "--json"]).stdout;
        serde_json::from_str::<serde_json::Value>(&st)
            .ok()
            .and_then(|v| {
                v["members"]
                    .as_array()?
                    .iter()
                    .find(|m| m["name"] == name)
                    .map(|m| m["status"].as_str().unwrap_or("").to_string())
            })
            .unwrap_or_default()
    };
    wait_until(
        "early's process has ended",
        WAIT,
        || status_of("early").starts_with("dead"),
        || t.explain(),
    );
    let scratch = t.sb.path("swarm/dk/scratchpad");
    std::fs::create_dir_all(scratch.join("demo")).unwrap();
    std::fs::write(scratch.join("demo/summary.txt"), "the results\n").unwrap();
    let r = t.ok(&["down", "--wait", "5"]);
    // Every teammate is in the report: the one that had already ended too.
    for line in [
        "polite shut down",
        "early had already stopped",
        "team dk deleted",
    ] {
        assert!(r.stdout.contains(line), "{line:?}\n{}", r.explain());
    }
    // The scratchpad outlives the team, where the report says.
    let kept = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("its scratchpad is kept in "))
        .and_then(|l| l.split(" (remove it with").next())
        .unwrap_or_else(|| panic!("no kept scratchpad\n{}", r.explain()));
    assert!(
        kept.starts_with(&t.sb.path("swarm-results/dk-").display().to_string()),
        "{kept}"
    );
    assert_eq!(
        std::fs::read_to_string(std::path::Path::new(kept).join("demo/summary.txt")).unwrap(),
        "the results\n"
    );
    assert!(!t.sb.path("swarm/dk").exists(), "the team's state is gone");
}

// ----------------------------------------------------------- supervision

/// Polls until `name` is marked dead on the roster and its `task` (if any)
/// is back on the board. Nothing but the lead's own watch can bring that
/// about. (How long it takes: scripts/bench-lifecycle.)
fn wait_marked_dead(t: &TmuxTeam, name: &str, task: Option<&str>) {
    wait_until(
        &format!(
            "the lead marks {name} dead (swarmExit set, isActive false) and returns task {task:?}"
        ),
        WAIT,
        || {
            let dead = t.member(name).is_some_and(|m| {
                m.get("swarmExit").is_some_and(|e| !e.is_null())
                    && m.get("isActive") == Some(&serde_json::Value::Bool(false))
            });
            dead && task.is_none_or(|id| task_status(t, id) == ("pending".to_string(), None))
        },
        || t.explain(),
    );
}

fn wait_log(t: &TmuxTeam, needle: &str) {
    wait_until(
        &format!("lead.log says {needle:?}"),
        WAIT,
        || std::fs::read_to_string(t.lead_log()).is_ok_and(|l| l.contains(needle)),
        || t.explain(),
    );
}

#[test]
fn a_pane_closed_by_the_user_is_noticed_and_its_task_returned() {
    let Some(t) = TmuxTeam::new("pane_closed_by_the_user", "uc") else {
        return;
    };
    t.up();
    spawn_recorder(&t, "gone");
    t.wait_ready("gone");
    let task = t.task_in_progress("work", "gone");
    wait_log(&t, "gone is running");
    let pane = t.pane_of("gone");
    let pgid = t.pid_of("gone");
    t.tmux.ok(&["kill-pane", "-t", &pane]);
    wait_marked_dead(&t, "gone", Some(&task));
    assert_task_back(&t, &task);
    wait_log(&t, "gone is dead: its pane disappeared");
    assert_group_dead(&t, "gone", pgid);
    assert_canary(&t, "a user closing a pane");
}

/// Issue 25, item 4: on tmux the lead learns of a pane's end from an event
/// (a pidfd per pane process), not by listing the server on a timer. With
/// its safety tick put out of reach (an hour), a pane the user closes is
/// still reported dead, and its task returned, within the suite's budget.
#[test]
fn a_pane_closed_by_the_user_is_noticed_by_its_exit_event() {
    let Some(t) = TmuxTeam::new("pane_closed_event", "ce") else {
        return;
    };
    t.ok(&["team", "create", "ce"]);
    spawn_recorder(&t, "gone");
    t.wait_ready("gone");
    let task = t.task_in_progress("work", "gone");
    let mut c = t.cmd(&["lead"]);
    c.env("SWARM_FAULT_SAFETY_TICK_MS", "3600000")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _lead = KillOnDrop(c.spawn().expect("starting swarm lead"));
    t.wait_lead();
    wait_log(&t, "pane exits are events");
    wait_log(&t, "gone is running");
    let pane = t.pane_of("gone");
    t.tmux.ok(&["kill-pane", "-t", &pane]);
    wait_marked_dead(&t, "gone", Some(&task));
    wait_log(&t, "gone is dead: its pane disappeared");
}

#[test]
fn a_killed_tmux_server_is_noticed_and_its_teammates_tasks_returned() {
    let Some(t) = TmuxTeam::new("killed_tmux_server", "ks") else {
        return;
    };
    // The lead must outlive the server to report it: run it outside tmux.
    t.ok(&["team", "create", "ks"]);
    spawn_recorder(&t, "doomed");
    t.wait_ready("doomed");
    let task = t.task_in_progress("work", "doomed");
    let mut c = t.cmd(&["lead"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    // A lead started directly (`swarm lead`, not in a pane).
    let _lead = KillOnDrop(c.spawn().expect("starting swarm lead"));
    t.wait_lead();
    wait_log(&t, "doomed is running");
    let pgid = t.pid_of("doomed");
    t.tmux.ok(&["kill-server"]);
    wait_marked_dead(&t, "doomed", Some(&task));
    assert_task_back(&t, &task);
    wait_log(&t, "doomed is dead");
    assert_group_dead(&t, "doomed", pgid);
}

/// Pins 35f39ac: a lead killed with SIGKILL stays a zombie until tmux reaps it,
/// and was counted alive, so `swarm up` started no new lead.
#[test]
fn a_restarted_lead_takes_the_team_back() {
    let Some(t) = TmuxTeam::new("restarted_lead", "rl") else {
        return;
    };
    t.up();
    for n in ["one", "two"] {
        spawn_recorder(&t, n);
        t.wait_ready(n);
    }
    let before: Vec<(String, u32)> = ["one", "two"]
        .iter()
        .map(|n| (t.pane_of(n), t.pid_of(n)))
        .collect();
    let old = t.wait_lead();
    // SAFETY: signalling a pid this test's team recorded and that is alive.
    assert_eq!(unsafe { libc::kill(old as i32, libc::SIGKILL) }, 0);
    wait_until(
        "the old lead is dead (a zombie or reaped)",
        WAIT,
        || !pid_alive(old),
        || t.explain(),
    );
    t.ok(&["up", "--no-attach"]);
    t.wait_new_lead(old);
    let after: Vec<(String, u32)> = ["one", "two"]
        .iter()
        .map(|n| (t.pane_of(n), t.pid_of(n)))
        .collect();
    assert_eq!(after, before, "same panes, same processes\n{}", t.explain());
    assert_eq!(t.members(), ["one", "two"]);
    // The new lead supervises: it notices a pane closed under it.
    t.tmux.ok(&["kill-pane", "-t", &after[0].0]);
    wait_marked_dead(&t, "one", None);
    assert!(
        t.member("two")
            .unwrap()
            .get("swarmExit")
            .is_none_or(|e| e.is_null())
    );
    assert_canary(&t, "a lead restart");
}

/// Issue 24, item 8: a team whose lead and then whose teammate `doomed`
/// (running a task) were killed with SIGKILL; `alive` runs a task too.
/// Returns the tasks of doomed and of alive, and doomed's task's subject.
fn dead_owner_scene(t: &TmuxTeam) -> (String, String, &'static str) {
    t.up();
    for n in ["doomed", "alive"] {
        t.ok(&["spawn", n]);
    }
    let ids: Vec<String> = ["first", "second"]
        .iter()
        .map(|s| {
            let r = t.ok(&["task", "create", s, "--command", "sleep 600"]);
            r.stdout.trim().to_string()
        })
        .collect();
    wait_until(
        "both shell teammates run a task each",
        WAIT,
        || ids.iter().all(|id| task_status(t, id).0 == "in_progress"),
        || t.explain(),
    );
    let owned_by = |name: &str| {
        ids.iter()
            .find(|id| task_status(t, id).1.as_deref() == Some(name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} owns no task\n{}", t.explain()))
    };
    let (doomed_task, alive_task) = (owned_by("doomed"), owned_by("alive"));
    let subject = if doomed_task == ids[0] {
        "first"
    } else {
        "second"
    };
    let lead = t.wait_lead();
    let runtime = t.pid_of("doomed");
    for pid in [lead, runtime] {
        // SAFETY: signalling pids this test's team recorded, alive.
        assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
        wait_until(
            &format!("pid {pid} is dead"),
            WAIT,
            || !pid_alive(pid),
            || t.explain(),
        );
    }
    let pane = t.pane_of("doomed");
    wait_until(
        "doomed's pane is gone or dead",
        WAIT,
        || t.tmux.pane(&pane).is_none_or(|p| p.dead),
        || t.explain(),
    );
    assert_eq!(
        task_status(t, &doomed_task),
        ("in_progress".to_string(), Some("doomed".to_string())),
        "nobody gave it back yet (no lead runs)\n{}",
        t.explain()
    );
    (doomed_task, alive_task, subject)
}

/// Issue 24, item 8: kill -9 the lead, then the runtime that claimed a
/// task; `task list` showed the task in progress and `claim` found
/// nothing, for good. A look at the board that finds its owner provably
/// dead (its runtime's pid and start time gone, its pane gone) gives it
/// back first; the task of a teammate still alive stays its own.
#[test]
fn a_dead_owners_task_goes_back_to_the_board_with_no_lead_running() {
    let Some(t) = TmuxTeam::new("dead_owner_no_lead", "dn") else {
        return;
    };
    let (doomed_task, alive_task, subject) = dead_owner_scene(&t);
    let list = t.ok(&["task", "list"]);
    assert!(
        list.stderr.contains(&format!(
            "task {doomed_task} ({subject}) is back on the board: its owner doomed is gone"
        )),
        "{}",
        list.explain()
    );
    // The list that gave it back shows it as it now is.
    let row = list
        .stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(doomed_task.as_str()))
        .unwrap_or_else(|| panic!("no row of task {doomed_task}\n{}", list.explain()));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..3], ["pending", "-"], "{row:?}\n{}", list.explain());
    assert_task_back(&t, &doomed_task);
    assert_eq!(
        task_status(&t, &alive_task),
        ("in_progress".to_string(), Some("alive".to_string())),
        "a live teammate's task stays its own\n{}",
        t.explain()
    );
    let claimed = t.ok(&["task", "claim"]);
    assert_eq!(claimed.stdout.trim(), doomed_task, "{}", claimed.explain());
}

/// Issue 24, item 8, the other readers of the board: `swarm status`
/// gives a dead owner's task back as `task list` does, and a claim that
/// would find nothing takes it.
#[test]
fn status_and_claim_give_a_dead_owners_task_back_with_no_lead_running() {
    let Some(t) = TmuxTeam::new("dead_owner_status", "ds") else {
        return;
    };
    let (doomed_task, alive_task, _) = dead_owner_scene(&t);
    let shown = t.ok(&["status", "--json"]);
    assert_task_back(&t, &doomed_task);
    // The status that gave it back counts it as it now is.
    let snap: serde_json::Value = serde_json::from_str(&shown.stdout).expect("status --json");
    let counts = &snap["tasks"];
    assert_eq!(
        (&counts["total"], &counts["in_progress"], &counts["pending"]),
        (&2.into(), &1.into(), &1.into()),
        "{}",
        shown.explain()
    );
    assert_eq!(task_status(&t, &alive_task).1.as_deref(), Some("alive"));

    let Some(u) = TmuxTeam::new("dead_owner_claim", "dc") else {
        return;
    };
    let (doomed_task, _, _) = dead_owner_scene(&u);
    let claimed = u.ok(&["task", "claim"]);
    assert_eq!(claimed.stdout.trim(), doomed_task, "{}", claimed.explain());
}

// --------------------------------------------------------------- output

#[test]
fn output_follow_shows_what_the_agent_prints_in_order() {
    let Some(t) = TmuxTeam::new("output_follow", "of") else {
        return;
    };
    t.ok(&["team", "create", "of"]);
    t.spawn("talker", &[&agent("printer"), "300"]);
    let mut c = t.cmd(&["output", "talker", "--follow"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut f = KillOnDrop(c.spawn().expect("swarm output --follow"));
    let stdout = f.0.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut lines: Vec<String> = Vec::new();
    let deadline = Deadline::after(WAIT);
    while !lines.iter().any(|l| l.trim_end_matches('\r') == "done") {
        match rx.recv_timeout(deadline.remaining()) {
            Ok(l) => lines.push(l),
            Err(_) => panic!(
                "timed out after {deadline} waiting for \"done\" from swarm output --follow; got {} lines: {:?}\n{}",
                lines.len(),
                lines.iter().rev().take(5).collect::<Vec<_>>(),
                t.explain()
            ),
        }
    }
    let numbered: Vec<String> = lines
        .iter()
        .map(|l| l.trim_end_matches('\r').to_string())
        .filter(|l| l.starts_with("line "))
        .collect();
    let want: Vec<String> = (1..=300).map(|i| format!("line {i}")).collect();
    assert_eq!(numbered, want, "every line, in order");
    let crlf: Vec<&String> = lines.iter().filter(|l| l.ends_with('\r')).collect();
    assert!(
        crlf.is_empty(),
        "plain LF line ends, not the pane's CRLF: {crlf:?}"
    );
    // Once the member is gone, --follow ends by itself.
    t.ok(&["kill", "talker"]);
    let mut exit = None;
    wait_until(
        "output --follow ends after the member is killed",
        WAIT,
        || {
            exit = f.0.try_wait().expect("try_wait");
            exit.is_some()
        },
        || t.explain(),
    );
    assert!(
        exit.is_some_and(|st| st.success()),
        "output --follow exit {exit:?}"
    );
}

#[test]
fn a_shell_teammate_runs_its_spawn_prompt_and_its_output_has_plain_line_ends() {
    let Some(t) = TmuxTeam::new("spawn_prompt", "sp") else {
        return;
    };
    t.ok(&["team", "create", "sp"]);
    t.ok(&[
        "spawn",
        "helper",
        "--agent",
        "shell",
        "--prompt",
        "echo prompt-ran-$((6 * 7))",
    ]);
    wait_until(
        "the prompt ran and its output reached the lead",
        WAIT,
        || t.run(&["inbox", "--json"]).stdout.contains("prompt-ran-42"),
        || t.explain(),
    );
    let out = t.ok(&["output", "helper"]).stdout;
    assert!(out.contains("prompt-ran-42\n"), "{out:?}");
    assert!(!out.contains("\r\n"), "LF line ends, not CRLF: {out:?}");
}

// ---------------------------------------------------------- hostile input

#[test]
fn hostile_names_and_unknown_members_get_one_clear_error() {
    let Some(t) = TmuxTeam::new("hostile_names", "hn") else {
        return;
    };
    t.ok(&["team", "create", "hn"]);
    spawn_recorder(&t, "real");
    t.wait_ready("real");
    let panes_before = t.tmux.panes();
    let long = "a".repeat(10 * 1024);
    for bad in ["../x", "a;b", long.as_str(), "Upper", "-rf"] {
        let r = t.run(&["spawn", bad, "--", "true"]);
        r.assert_error("member");
        assert!(
            r.stderr.len() < 400,
            "a short error line for a long name:\n{}",
            r.stderr
        );
    }
    let again = t.run(&["spawn", "real", "--", "true"]);
    again.assert_error("real is already running");
    let nobody = t.run(&["kill", "nobody"]);
    nobody.assert_code(1);
    assert!(nobody.stderr.contains("nobody"), "{}", nobody.explain());
    assert!(
        nobody.stderr.contains("real"),
        "lists the members: {}",
        nobody.stderr
    );
    assert_eq!(t.tmux.panes(), panes_before, "no pane opened or closed");
    assert_eq!(t.members(), ["real"], "nothing new on the roster");
    assert!(!t.sb.path("x").exists() && !t.sb.path("teams/x").exists());
}

// --------------------------------------------------------------- doctor

#[test]
fn doctor_names_the_backend_and_the_tmux_version() {
    let Some(t) = TmuxTeam::new("doctor", "dr") else {
        return;
    };
    let v = Command::new("tmux").arg("-V").output().expect("tmux -V");
    let v = String::from_utf8_lossy(&v.stdout);
    let version = v
        .trim()
        .trim_start_matches("tmux ")
        .trim_end_matches(char::is_alphabetic);
    let r = t.ok(&["doctor"]);
    assert!(r.stdout.contains("backend (auto): tmux"), "{}", r.explain());
    assert!(
        r.stdout.contains(&format!("tmux: {version}")),
        "tmux {version}\n{}",
        r.explain()
    );
}

/// Issue 24, item 2: with a lead running, a teammate that exits 3 on its
/// own showed `dead (signal)` in `swarm status` and "its pane disappeared"
/// in the dialog (the lead recorded exit 3, closed the dead pane, then
/// took the pane's going for a second death and overwrote the record).
/// Now its exit code stays, and what it printed last says why.
#[test]
fn a_teammate_that_exits_on_its_own_is_reported_with_its_code_and_last_words() {
    let Some(t) = TmuxTeam::new("exit_code_and_last_words", "ex") else {
        return;
    };
    t.up();
    t.spawn(
        "quitter",
        &[
            "sh",
            "-c",
            "echo 'Unable to connect: ENOTFOUND api.example'; exit 3",
        ],
    );
    let status = || t.ok(&["status", "--json"]).json();
    let quitter = |s: &serde_json::Value| {
        s["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "quitter")
            .cloned()
            .unwrap_or_default()
    };
    wait_until(
        "the lead records quitter's end",
        WAIT,
        || quitter(&status())["status"] == "dead (exit 3)",
        || t.explain(),
    );
    // The lead closes the dead pane; the record stays (the lead's later
    // looks are pinned by lead::tests::a_death_on_record_is_not_recorded_again).
    let log = t.lead_log();
    let pane = t.member("quitter").unwrap()["tmuxPaneId"]
        .as_str()
        .unwrap_or("")
        .to_string();
    wait_until(
        "the lead closes the dead pane",
        WAIT,
        || t.tmux.pane(&pane).is_none(),
        || t.explain(),
    );
    let m = quitter(&status());
    assert_eq!(m["status"], "dead (exit 3)", "{m}");
    assert_eq!(
        m["attention"], "dead: Unable to connect: ENOTFOUND api.example",
        "{m}"
    );
    let lead_said = std::fs::read_to_string(&log).unwrap();
    assert!(
        lead_said
            .contains("quitter is dead: exited with code 3 (its last words: Unable to connect")
            && !lead_said.contains("quitter is dead: its pane disappeared"),
        "{lead_said}"
    );
}

/// Issue 24, item 6: a `swarm up SPEC` killed after the lead's pane opened
/// left members on the roster with no pane: `status` called them idle,
/// and `swarm up` again only said the lead was already running. Such a
/// member is "not started", and the next `up` starts it.
#[test]
fn members_an_interrupted_up_left_without_a_pane_start_with_the_next_up() {
    let Some(t) = TmuxTeam::new("interrupted_up_members", "iu") else {
        return;
    };
    let pane = crate::util::dialog::lead_pane_of(&t, &t.up().stderr);
    // What the killed `up` left: the member reserved, its pane never made.
    let root = swarm::paths::Root::new(t.sb.root());
    swarm::team::Roster::new(&root, "iu")
        .add_member(swarm::team::Member::teammate(
            "iu",
            "late",
            "blue",
            &t.work.to_string_lossy(),
        ))
        .unwrap();
    let status_of = |name: &str| {
        t.ok(&["status", "--json"]).json()["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .map(|m| m["status"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    assert_eq!(status_of("late"), "not started");
    // Must-show: `swarm doctor` names the member that never started.
    let doctor = t.run(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains("team iu: late was never started (on the roster, no pane")
            && doctor.stdout.contains("`swarm up --team iu` starts it"),
        "{}",
        doctor.explain()
    );
    let again = t.ok(&["up", "--no-attach"]);
    assert!(
        again.stderr.contains("spawned late in pane"),
        "{}",
        again.explain()
    );
    // Item 10: where the running lead is, not only that it runs.
    let lead = t.wait_lead();
    assert!(
        again.stderr.contains(&format!(
            "the lead of team iu is already running (pid {lead}, pane {pane} of tmux session swarm-iu)"
        )),
        "{}",
        again.explain()
    );
    wait_until(
        "late runs",
        WAIT,
        || matches!(status_of("late").as_str(), "idle" | "running"),
        || t.explain(),
    );
}

/// Issue 24, item 3: an agent that makes no progress while it has work
/// (Codex without network looped "Reconnecting…" for minutes) reached
/// nobody. A teammate running a task that prints nothing and whose task
/// does not change for the spec's `stall_after` is `stalled` in `swarm
/// status` (with its last output line), and with `nudge = true` the lead
/// sends it one reminder for that task (an agent that reads words: the
/// `command` agent here, whose run prints and then hangs); nothing is
/// killed.
#[test]
fn a_teammate_stalled_on_a_task_is_said_and_reminded_once() {
    let Some(t) = TmuxTeam::new("stalled_teammate", "st") else {
        return;
    };
    let spec = "team = \"st\"\nstall_after = 1\nnudge = true\n\
                [[teammate]]\nname = \"slow\"\nagent = \"command\"\n\
                command = [\"sh\", \"-c\", \"echo waiting for network; sleep 600\", \"sh\"]\n\
                [[task]]\nsubject = \"hang\"\n";
    let path = t.work.join("swarm.toml");
    std::fs::write(&path, spec).expect("spec");
    t.ok(&["up", "--no-attach", &path.to_string_lossy()]);
    let slow = || {
        t.ok(&["status", "--json"]).json()["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "slow")
            .cloned()
            .unwrap_or_default()
    };
    wait_until(
        "slow is stalled on its task",
        WAIT,
        || {
            slow()["attention"]
                .as_str()
                .is_some_and(|a| a.starts_with("stalled ") && a.ends_with(": waiting for network"))
        },
        || format!("{}\n{}", slow(), t.explain()),
    );
    assert_eq!(slow()["status"], "running", "nothing is killed");
    let reminders = || {
        let inbox =
            std::fs::read_to_string(t.sb.path("teams/st/inboxes/slow.json")).unwrap_or_default();
        inbox
            .matches("[stall] You have been on task #1 (hang)")
            .count()
    };
    wait_until(
        "the lead reminds slow",
        WAIT,
        || reminders() == 1,
        || t.explain(),
    );
    // Several more bounds pass: still one reminder for this task.
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert_eq!(reminders(), 1, "{}", t.explain());
    let task = t.ok(&["task", "get", "1", "--json"]).json();
    assert!(task["metadata"]["swarmNudged"].is_string(), "{task}");
}

/// Issue 24, item 5: `rm <state>/runtime/NAME.wake`, then `swarm send
/// --to NAME`: rc 0, the message consumed after 300 s, status "idle",
/// doctor silent. `swarm doctor` names the missing doorbell (the runtime
/// stopped here so that it cannot make it again first), and the runtime,
/// once it runs, makes it again and reads the message sent meanwhile.
#[test]
fn a_removed_doorbell_is_named_by_doctor_and_made_again_by_its_runtime() {
    let Some(t) = TmuxTeam::new("removed_doorbell", "rd") else {
        return;
    };
    t.up();
    t.ok(&["spawn", "bell"]);
    let bell = t.sb.path("swarm/rd/runtime/bell.wake");
    wait_until(
        "bell's runtime made its doorbell",
        WAIT,
        || {
            std::fs::symlink_metadata(&bell).is_ok_and(|m| {
                use std::os::unix::fs::FileTypeExt;
                m.file_type().is_fifo()
            })
        },
        || t.explain(),
    );
    // The pane's first process is the runtime (`pane-exec` becomes it).
    let pid = t.tmux.pane(&t.pane_of("bell")).expect("bell's pane").pid as i32;
    /// Continues the stopped runtime when dropped, failing test or not.
    struct Stopped(i32);
    impl Drop for Stopped {
        fn drop(&mut self) {
            // SAFETY: plain kill(2) on the runtime this test stopped.
            unsafe { libc::kill(self.0, libc::SIGCONT) };
        }
    }
    // SAFETY: plain kill(2) on the runtime this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
    let stopped = Stopped(pid);
    std::fs::remove_file(&bell).unwrap();
    let doctor = t.run(&["doctor"]);
    assert!(
        doctor.stdout.contains("bell's doorbell")
            && doctor
                .stdout
                .contains("bell.wake is missing, so sends ring nothing"),
        "doctor does not name the missing doorbell\n{}",
        doctor.explain()
    );
    let sent = t.run(&["send", "--to", "bell", "touch RUNG_AFTER_ALL"]);
    drop(stopped);
    sent.assert_code(0);
    wait_until(
        "bell runs the message sent while its doorbell was gone",
        WAIT,
        || t.work.join("RUNG_AFTER_ALL").exists(),
        || t.explain(),
    );
    wait_until(
        "bell's doorbell is made again",
        WAIT,
        || {
            t.run(&["doctor"])
                .stdout
                .lines()
                .all(|l| !l.contains("doorbell"))
        },
        || t.explain(),
    );
}

/// Issue 24, item 4: outside tmux, after `q` and a come-back (the lead in
/// a new window of the session it made), `swarm down` left swarm's own
/// session behind ("does not carry swarm's mark": the come-back's lead had
/// a nonce of its own). The session keeps the mark it was made with.
#[test]
fn down_after_q_and_a_come_back_removes_the_session_swarm_made() {
    let Some(t) = TmuxTeam::new("down_after_comeback", "cb") else {
        return;
    };
    let up = t.up();
    let first = t.wait_lead();
    // A teammate keeps the session alive once the lead's pane closes: the
    // come-back opens a window in it rather than a session of its own.
    t.spawn("stay", &["sleep", "600"]);
    let pane = crate::util::dialog::lead_pane_of(&t, &up.stderr);
    let made = t.tmux.display("=swarm-cb:", "#{session_id}");
    t.tmux.send_keys(&pane, &["q"]);
    wait_until(
        "the first lead ends",
        WAIT,
        || !crate::util::pid_alive(first),
        || t.explain(),
    );
    let back = t.ok(&["up", "--no-attach"]);
    let second = t.wait_new_lead(first);
    let again = crate::util::dialog::lead_pane_of(&t, &back.stderr);
    assert_ne!(again, pane, "a new lead pane");
    assert_eq!(
        t.tmux.display("=swarm-cb:", "#{session_id}"),
        made,
        "the come-back used the session the first up made: {}",
        t.explain()
    );
    t.tmux.send_keys(&again, &["q"]);
    wait_until(
        "the second lead ends",
        WAIT,
        || !crate::util::pid_alive(second),
        || t.explain(),
    );
    let down = t.ok(&["down", "--force"]);
    assert!(
        !down.stderr.contains("left tmux session"),
        "{}",
        down.explain()
    );
    assert!(!t.tmux.has_session("swarm-cb"), "{}", t.explain());
    assert!(t.tmux.canary_alive());
}

/// Issue 24, item 4: with TMUX set but TMUX_PANE unset, `up` tried a nested
/// attach and failed with tmux's raw message; it says what is wrong.
#[test]
fn tmux_set_without_its_pane_is_said_plainly() {
    let s = crate::util::Sandbox::new();
    let mut c = s.cmd(&["up", "--team", "np", "--no-attach"]);
    c.env("TMUX", "/tmp/nowhere/sock,1,0");
    let r = crate::util::Run::of(c, &["up", "--team", "np", "--no-attach"]);
    r.assert_code(2);
    r.assert_error("TMUX is set but TMUX_PANE is not");
    assert!(
        !s.path("teams/np/config.json").exists(),
        "nothing is left of the team: {}",
        r.explain()
    );
}
