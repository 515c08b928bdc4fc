//! Pane safety end to end (issue 9): on a private tmux server, swarm never
//! touches a pane it did not start — the user's shell pane the lead ran
//! in, the user's programs in panes whose ids a restarted server reused —
//! and races between `spawn`s and `up`s leave one runtime per name and one
//! lead per team.

use crate::util::tmux::{TmuxTeam, WAIT, agent};
use crate::util::{pid_alive, swarm_bin, wait_until};
use std::time::Duration;

/// A user's interactive shell in its own session of the private server,
/// with `swarm` reachable and this team's root: the user's own pane.
fn users_shell(t: &TmuxTeam, session: &str) -> (String, u32) {
    let root = t.sb.root().to_string_lossy().into_owned();
    let sock = t.tmux.sock.to_string_lossy().into_owned();
    let bin_dir = std::path::Path::new(swarm_bin())
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let pane = t.tmux.new_session_in(
        session,
        (200, 50),
        &t.work,
        &[
            // Not `env -i`: the shell keeps the TMUX and TMUX_PANE tmux gave it.
            "/usr/bin/env",
            "-u",
            "CLAUDE_CONFIG_DIR",
            "-u",
            "SWARM_AGENT_NAME",
            &format!("PATH={bin_dir}:/usr/bin:/bin"),
            &format!("HOME={root}"),
            &format!("SWARM_HOME={root}"),
            &format!("SWARM_TMUX_SOCKET={sock}"),
            &format!("SWARM_TEAM={}", t.team),
            "TERM=xterm-256color",
            "PS1=user$ ",
            "/bin/sh",
        ],
    );
    let pid = t.tmux.pane(&pane).expect("the user's pane").pid;
    (pane, pid)
}

fn type_line(t: &TmuxTeam, pane: &str, line: &str) {
    t.tmux.type_text(pane, line);
    t.tmux.send_keys(pane, &["Enter"]);
}

fn window_options(t: &TmuxTeam, pane: &str) -> String {
    t.tmux.ok(&["show-options", "-w", "-t", pane])
}

fn screen(t: &TmuxTeam, pane: &str) -> String {
    t.tmux.capture(pane)
}

/// `swarm up` typed in the user's shell; a teammate spawned; `q`; then
/// `swarm down` typed in the same pane: the pane and its shell survive,
/// with their window's options as before. The user's session is the only
/// session of the server, so killing that pane would end the server.
#[test]
fn the_users_shell_pane_survives_q_then_down_typed_in_it() {
    let Some(t) = TmuxTeam::new("users_pane_survives_down", "mine") else {
        return;
    };
    let (pane, shell) = users_shell(&t, "user");
    t.tmux.ok(&["kill-session", "-t", "=canary"]);
    let before = window_options(&t, &pane);
    type_line(&t, &pane, "swarm up");
    let lead = t.wait_lead();
    t.spawn("helper", &[&agent("recorder")]);
    wait_until(
        "the dialog lists @helper",
        WAIT,
        || screen(&t, &pane).contains("@helper"),
        || t.explain(),
    );
    t.tmux.send_keys(&pane, &["q"]);
    wait_until("the lead exits", WAIT, || !pid_alive(lead), || t.explain());
    // The marker is not in the typed line itself.
    type_line(&t, &pane, "swarm down --force; echo \"down\"-rc=$?");
    wait_until(
        "down finishes in the user's pane",
        WAIT * 3,
        || screen(&t, &pane).contains("down-rc="),
        || format!("{}\n{}", screen(&t, &pane), t.explain()),
    );
    let text = screen(&t, &pane);
    assert!(text.contains("down-rc=0"), "{text}\n{}", t.explain());
    assert!(
        t.tmux.pane_alive(&pane),
        "the user's pane lives\n{}",
        t.explain()
    );
    assert_eq!(t.tmux.pane(&pane).unwrap().pid, shell, "the same shell");
    assert!(pid_alive(shell), "the user's shell lives");
    assert!(t.config().is_none(), "the team is deleted\n{}", t.explain());
    assert_eq!(
        t.tmux.panes().len(),
        1,
        "only the user's pane is left\n{}",
        t.explain()
    );
    assert_eq!(
        window_options(&t, &pane),
        before,
        "the window's own options are as before"
    );
}

/// The lead still running in the user's pane; `swarm down` from another
/// shell: the lead ends, the user's shell gets its pane back.
#[test]
fn down_from_elsewhere_ends_the_lead_and_gives_the_pane_back() {
    let Some(t) = TmuxTeam::new("down_gives_the_pane_back", "away") else {
        return;
    };
    let (pane, shell) = users_shell(&t, "user");
    let before = window_options(&t, &pane);
    type_line(&t, &pane, "swarm up");
    let lead = t.wait_lead();
    t.spawn("helper", &[&agent("recorder")]);
    t.ok(&["down", "--force"]);
    wait_until("the lead exits", WAIT, || !pid_alive(lead), || t.explain());
    assert!(
        t.tmux.pane_alive(&pane),
        "the user's pane lives\n{}",
        t.explain()
    );
    assert!(pid_alive(shell), "the user's shell lives");
    type_line(&t, &pane, "echo still-mine");
    wait_until(
        "the shell answers in its pane",
        WAIT,
        || screen(&t, &pane).contains("still-mine\n"),
        || screen(&t, &pane),
    );
    assert_eq!(window_options(&t, &pane), before);
    assert!(t.tmux.canary_alive());
}

/// After the tmux server restarts, pane ids start again at `%0`: the
/// user's programs now sit in the panes the team had recorded. `swarm up`
/// and `swarm down --force` kill none of them.
#[test]
fn a_restarted_server_reusing_pane_ids_loses_none_of_the_users_programs() {
    let Some(t) = TmuxTeam::new("restart_reuses_ids", "rs") else {
        return;
    };
    t.up();
    for n in ["alice", "bob"] {
        t.spawn(n, &[&agent("recorder")]);
        t.wait_ready(n);
    }
    let recorded: Vec<String> = ["alice", "bob"].iter().map(|n| t.pane_of(n)).collect();
    let server = t.tmux.server_pid();
    t.tmux.ok(&["kill-server"]);
    // Its process, not only its answers: a dying server still holding the
    // socket would take the next client down with it.
    wait_until(
        "the server is gone",
        WAIT,
        || t.tmux.panes().is_empty() && !pid_alive(server),
        || t.explain(),
    );
    // A new server on the same socket: the user's programs take %0 … %5.
    t.tmux
        .new_session("canary", (200, 50), &["sleep", "100000"]);
    for _ in 0..5 {
        t.tmux
            .ok(&["split-window", "-d", "-t", "=canary:", "sleep 100000"]);
        t.tmux.ok(&["select-layout", "-t", "=canary:", "tiled"]);
    }
    let users: Vec<(String, u32)> = t.tmux.panes().into_iter().map(|p| (p.id, p.pid)).collect();
    for id in &recorded {
        assert!(
            users.iter().any(|(p, _)| p == id),
            "the user's panes reuse {id}\n{}",
            t.explain()
        );
    }
    let up = t.ok(&["up", "--no-attach"]);
    t.wait_lead();
    wait_until(
        "the lead records alice and bob as lost",
        WAIT,
        || {
            ["alice", "bob"].iter().all(|n| {
                t.member(n)
                    .is_some_and(|m| m.get("swarmExit").is_some_and(|e| e.get("lost").is_some()))
            })
        },
        || format!("{}\n{}", up.explain(), t.explain()),
    );
    t.ok(&["down", "--force"]);
    for (id, pid) in &users {
        assert!(
            t.tmux.pane_alive(id),
            "user pane {id} lives\n{}",
            t.explain()
        );
        assert!(pid_alive(*pid), "user program {pid} lives");
    }
    assert!(t.config().is_none(), "the team is deleted\n{}", t.explain());
}

fn runtime_count(t: &TmuxTeam, name: &str) -> usize {
    t.tmux
        .panes()
        .iter()
        .filter(|p| p.title == name && !p.dead)
        .count()
}

/// Two `swarm spawn twin` at once, ten times: one wins, the other fails
/// with one clear line; one runtime per name; none after `swarm kill`.
#[test]
fn two_concurrent_spawns_of_one_name_leave_one_runtime() {
    let Some(t) = TmuxTeam::new("concurrent_spawns", "cs") else {
        return;
    };
    t.up();
    let rec = agent("recorder");
    for round in 0..10 {
        let name = format!("twin-{round}");
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let mut c = t.cmd(&["spawn", &name, "--", &rec]);
                c.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                c.spawn().expect("spawn swarm")
            })
            .collect();
        let outs: Vec<_> = runs
            .into_iter()
            .map(|c| c.wait_with_output().expect("wait"))
            .collect();
        let ok = outs.iter().filter(|o| o.status.success()).count();
        let why: Vec<String> = outs
            .iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect();
        assert_eq!(ok, 1, "round {round}: exactly one spawn wins: {why:?}");
        let lost = outs.iter().find(|o| !o.status.success()).unwrap();
        assert_eq!(lost.status.code(), Some(2));
        let err = String::from_utf8_lossy(&lost.stderr);
        assert!(
            err.contains(&format!("{name} is already running in pane")) && err.lines().count() == 1,
            "round {round}: one clear line: {err}"
        );
        wait_until(
            "the winner's pane runs",
            WAIT,
            || runtime_count(&t, &name) == 1,
            || t.explain(),
        );
        t.ok(&["kill", &name]);
        assert_eq!(
            runtime_count(&t, &name),
            0,
            "round {round}\n{}",
            t.explain()
        );
    }
}

/// Two `swarm up` at once on a team whose lead was killed, three times:
/// exactly one lead, and neither `up` dumps tmux argv.
#[test]
fn two_concurrent_ups_on_a_dead_lead_start_exactly_one() {
    let Some(t) = TmuxTeam::new("concurrent_ups", "cu") else {
        return;
    };
    t.up();
    t.spawn("helper", &[&agent("recorder")]);
    for round in 0..3 {
        let old = t.wait_lead();
        // SAFETY: signalling the lead this test's team recorded.
        assert_eq!(unsafe { libc::kill(old as i32, libc::SIGKILL) }, 0);
        wait_until(
            "the old lead is dead",
            WAIT,
            || !pid_alive(old),
            || t.explain(),
        );
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let mut c = t.cmd(&["up", "--no-attach"]);
                c.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped());
                c.spawn().expect("up")
            })
            .collect();
        let outs: Vec<_> = runs
            .into_iter()
            .map(|c| c.wait_with_output().expect("wait"))
            .collect();
        for o in &outs {
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(o.status.success(), "round {round}: {err}\n{}", t.explain());
            assert!(!err.contains("[\""), "round {round}: no argv dump: {err}");
        }
        t.wait_new_lead(old);
        std::thread::sleep(Duration::from_millis(300));
        let leads = t
            .tmux
            .panes()
            .into_iter()
            .filter(|p| p.title == "lead" && !p.dead && pid_alive(p.pid))
            .count();
        assert_eq!(leads, 1, "round {round}: one lead\n{}", t.explain());
        assert_eq!(runtime_count(&t, "helper"), 1, "round {round}: one helper");
    }
}

/// A program that cannot start fails the spawn: exit 2, the OS error, no
/// pane, no member.
#[test]
fn a_program_that_cannot_start_fails_the_spawn() {
    let Some(t) = TmuxTeam::new("unstartable", "gh") else {
        return;
    };
    t.up();
    let panes = t.tmux.panes().len();
    let r = t.run(&["spawn", "ghost", "--", "./does-not-exist.sh"]);
    r.assert_code(2);
    r.assert_error("cannot start \"./does-not-exist.sh\": No such file or directory");
    assert_eq!(
        t.tmux.panes().len(),
        panes,
        "no pane opened\n{}",
        t.explain()
    );
    assert!(!t.members().contains(&"ghost".to_string()));
    std::fs::write(t.work.join("not-exec.sh"), "#!/bin/sh\n").unwrap();
    let r = t.run(&["spawn", "ghost", "--", "./not-exec.sh"]);
    r.assert_code(2);
    r.assert_error("not executable");
    let r = t.run(&["spawn", "ghost", "--", "no-such-program-anywhere"]);
    r.assert_code(2);
    r.assert_error("not found on the pane's PATH");
}

/// A lead whose terminal goes away (its tmux server killed) exits cleanly:
/// logged, never through a panic ("failed printing to stderr").
#[test]
fn a_lead_whose_terminal_goes_away_exits_without_a_panic() {
    let Some(t) = TmuxTeam::new("terminal_lost_no_panic", "tl") else {
        return;
    };
    t.up();
    t.spawn("helper", &[&agent("recorder")]);
    let lead = t.wait_lead();
    t.tmux.ok(&["kill-server"]);
    wait_until("the lead exits", WAIT, || !pid_alive(lead), || t.explain());
    let log = std::fs::read_to_string(t.lead_log()).unwrap_or_default();
    assert!(!log.contains("panic"), "the lead panicked:\n{log}");
    assert!(
        log.contains("terminal went away") || log.contains("SIGHUP") || log.contains("signal"),
        "the lead logs why it exits:\n{log}"
    );
}
