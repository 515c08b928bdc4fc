//! Other machines (DESIGN §13, issue 26), as far as they are built: a spec's
//! `[[host]]` checked and `swarm doctor --host NAME` against a real private
//! sshd on 127.0.0.1 ([`Sshd`]) that sees the state root at another path.

use crate::util::sshd::{Sshd, remote_view, silent_port};
use crate::util::{Run, Sandbox, swarm_bin};
use std::path::Path;
use std::time::Duration;

/// A spec with one `[[host]]` named `box`.
fn spec_with_host(sb: &Sandbox, ssh: &str, root: &Path, extra: &str) -> String {
    let spec = sb.path("swarm.toml");
    std::fs::write(
        &spec,
        format!(
            "team = \"t\"\n\n[[host]]\nname = \"box\"\nssh = \"{ssh}\"\nroot = \"{}\"\n\
             swarm = \"{}\"\n{extra}",
            root.display(),
            swarm_bin()
        ),
    )
    .unwrap();
    spec.display().to_string()
}

/// `swarm doctor --host box --spec SPEC [--json]` with PATH's `ssh` the
/// test server's.
fn doctor_host(sb: &Sandbox, sshd: &Sshd, spec: &str, json: bool) -> Run {
    let mut args = vec!["doctor", "--host", "box", "--spec", spec];
    if json {
        args.push("--json");
    }
    let mut cmd = sb.cmd(&args);
    cmd.env("PATH", sshd.path());
    Run::within(
        cmd,
        &args,
        "doctor --host returns",
        Duration::from_secs(60),
        || sshd.log(),
    )
}

fn control_sockets(sb: &Sandbox) -> Vec<String> {
    std::fs::read_dir(sb.path("swarm/.ssh"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn doctor_host_checks_ssh_tmux_swarm_and_the_shared_root_through_a_real_sshd() {
    let Some(mut sshd) = Sshd::start() else {
        return;
    };
    if !crate::util::tmux::tmux_available("doctor_host_checks") {
        return;
    }
    let sb = Sandbox::new();
    // The other machine sees this state root at a path of its own.
    let there = remote_view(sb.root(), &sshd.dir.path().join("mnt-team"));
    let spec = spec_with_host(&sb, &sshd.alias, &there, "");

    let r = doctor_host(&sb, &sshd, &spec, false);
    r.assert_code(0);
    for line in [
        "ssh    ok:",
        "tmux   ok: tmux ",
        "swarm  ok:",
        "root   ok:",
        "wake   ok: a doorbell there was rung over ssh in",
        "look every 1 s",
    ] {
        assert!(r.stdout.contains(line), "{line:?}\n{}", r.explain());
    }
    assert!(
        r.stdout.contains("one shared connection"),
        "{}",
        r.explain()
    );
    assert_eq!(
        control_sockets(&sb),
        Vec::<String>::new(),
        "the shared connection is closed when doctor is done"
    );
    let j = doctor_host(&sb, &sshd, &spec, true).json();
    assert_eq!(j["ok"], true, "{j}");
    let names: Vec<&str> = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ssh", "tmux", "swarm", "root", "wake"]);

    // The machine goes away: ssh fails, said with its fix, and nothing
    // else is tried; it comes back: all is well again.
    sshd.stop();
    let r = doctor_host(&sb, &sshd, &spec, false);
    r.assert_code(1);
    assert!(
        r.stdout.contains("ssh    FAILED") && r.stdout.contains("fix: check that box is up"),
        "{}",
        r.explain()
    );
    assert!(!r.stdout.contains("tmux   "), "{}", r.explain());
    assert!(r.stderr.contains("1 of 1 checks failed"), "{}", r.explain());
    sshd.start_again();
    doctor_host(&sb, &sshd, &spec, false).assert_code(0);
}

#[test]
fn a_root_there_that_is_not_this_state_root_fails_with_its_fix() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sb = Sandbox::new();
    let elsewhere = tempfile::tempdir().unwrap();
    let spec = spec_with_host(&sb, &sshd.alias, elsewhere.path(), "");
    let r = doctor_host(&sb, &sshd, &spec, false);
    r.assert_code(1);
    assert!(
        r.stdout
            .contains("root   FAILED: this state root is not seen at")
            && r.stdout.contains("fix: mount this state root"),
        "{}",
        r.explain()
    );
    assert!(r.stdout.contains("ssh    ok:"), "{}", r.explain());
    assert!(
        !sb.path("swarm/.hosts/box.probe").exists(),
        "the probe is removed"
    );
}

#[test]
fn a_host_that_accepts_and_never_answers_costs_its_timeout_not_a_hang() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sb = Sandbox::new();
    let (_partitioned, port) = silent_port();
    let spec = spec_with_host(
        &sb,
        &format!("ssh://nobody@127.0.0.1:{port}"),
        Path::new("/mnt/team"),
        "timeout = 1.5\n",
    );
    // `Run::within` fails the test if doctor does not return in time.
    let r = doctor_host(&sb, &sshd, &spec, false);
    r.assert_code(1);
    assert!(r.stdout.contains("ssh    FAILED"), "{}", r.explain());
    assert!(
        r.stdout.contains("fix: check that box is up"),
        "{}",
        r.explain()
    );
}

#[test]
fn a_remote_call_that_never_returns_is_stopped_at_the_hosts_timeout() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sb = Sandbox::new();
    let there = remote_view(sb.root(), &sshd.dir.path().join("mnt-team"));
    // Its "swarm" answers nothing, ever (after ssh connected: what a
    // partition mid-call looks like to the caller).
    let stuck = sshd.dir.path().join("stuck-swarm");
    std::fs::write(
        &stuck,
        "#!/bin/sh
exec sleep 30
",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stuck, std::fs::Permissions::from_mode(0o755)).unwrap();
    let spec = sb.path("swarm.toml");
    std::fs::write(
        &spec,
        format!(
            "team = \"t\"\n[[host]]\nname = \"box\"\nssh = \"{}\"\nroot = \"{}\"\n\
             swarm = \"{}\"\ntimeout = 4\n",
            sshd.alias,
            there.display(),
            stuck.display()
        ),
    )
    .unwrap();
    let r = doctor_host(&sb, &sshd, &spec.display().to_string(), false);
    r.assert_code(1);
    assert!(
        r.stdout
            .contains("swarm  FAILED: no answer within 4.0 s (the call was stopped)"),
        "{}",
        r.explain()
    );
    assert!(
        r.stdout.contains("root   ok:"),
        "the next call works: {}",
        r.explain()
    );
}

#[test]
fn a_spec_names_every_bad_host_and_a_teammate_on_a_host_it_lacks() {
    let sb = Sandbox::new();
    let spec = sb.path("swarm.toml");
    std::fs::write(
        &spec,
        "team = \"t\"\n\
         [[host]]\nname = \"local\"\nssh = \"box\"\nroot = \"/r\"\n\
         [[host]]\nname = \"b\"\nssh = \"-oProxyCommand=touch /tmp/x\"\nroot = \"rel\"\ntimeout = 0\n\
         [[host]]\nname = \"good\"\nssh = \"me@good\"\nroot = \"/r\"\npoll = 0.01\n\
         [[teammate]]\nname = \"a\"\nhost = \"nowhere\"\n\
         [[teammate]]\nname = \"c\"\nhost = \"good\"\n\
         [[teammate]]\nname = \"d\"\nhost = \"local\"\n",
    )
    .unwrap();
    let spec = spec.display().to_string();
    let r = sb.run(&["doctor", "--host", "good", "--spec", &spec]);
    r.assert_code(2);
    for needle in [
        "\"local\" is this machine and needs no [[host]]",
        "starts with '-' (ssh would read it as an option)",
        "it must be an absolute path",
        "timeout 0 is out of range",
        "poll 0.01 is out of range",
        "host \"nowhere\" is not a [[host]] of this spec (hosts: local, local, b, good)",
        "6 problems",
    ] {
        assert!(r.stderr.contains(needle), "{needle:?}\n{}", r.explain());
    }
    assert!(!r.stderr.contains("teammate 3"), "{}", r.explain());
}

#[test]
fn doctor_host_of_local_or_of_an_unknown_host_says_what_to_do() {
    let sb = Sandbox::new();
    let spec = spec_with_host(&sb, "me@box", Path::new("/r"), "");
    sb.run(&["doctor", "--host", "local", "--spec", &spec])
        .assert_code(2)
        .assert_error("`swarm doctor` without --host checks it");
    sb.run(&["doctor", "--host", "nope", "--spec", &spec])
        .assert_code(2)
        .assert_error("no [[host]] named \"nope\" in the spec (hosts: local, box)");
    Sandbox::new()
        .run(&["doctor", "--host", "box"])
        .assert_code(2)
        .assert_error("swarm.toml");
}

/// A process group started on the test's "other machine" through ssh,
/// its leader's pid (= its group: `setsid`).
fn remote_group(
    host: &swarm_backends::host::SshHost,
    rt: &tokio::runtime::Runtime,
    body: &str,
) -> u32 {
    let script = format!(
        "setsid sh -c {} </dev/null >/dev/null 2>&1 & echo $!",
        swarm_backends::host::quote_word(body)
    );
    let out = rt
        .block_on(host.output(&["sh".into(), "-c".into(), script]))
        .unwrap();
    assert!(out.success(), "{out:?}");
    out.stdout.trim().parse().expect("a pid")
}

#[test]
fn liveness_and_the_signal_ladder_of_a_remote_host_run_there_through_ssh() {
    use swarm_backends::process::LadderOutcome;
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let host = swarm_backends::host::SshHost::new("box", &sshd.alias)
        .unwrap()
        .program(sshd.dir.path().join("bin/ssh").display().to_string());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let polite = remote_group(&host, &rt, "exec sleep 300");
    let stubborn = remote_group(&host, &rt, "trap '' TERM; sleep 300; :");
    let never: u32 = 4_000_000; // above any pid_max
    let stats = rt.block_on(host.stats(&[polite, stubborn, never])).unwrap();
    assert_eq!(
        stats
            .iter()
            .map(|s| s.as_ref().map(|s| s.pgrp))
            .collect::<Vec<_>>(),
        [Some(polite as i32), Some(stubborn as i32), None],
        "read from the host's /proc, group and all"
    );
    assert!(!stats[0].as_ref().unwrap().start_time.is_empty());
    let ladder = rt
        .block_on(host.terminate_groups(
            &[polite as i32, stubborn as i32, never as i32],
            // Long enough for `sleep` to die of SIGTERM on a loaded machine;
            // the stubborn group costs the whole of it.
            Duration::from_secs(3),
            Duration::from_secs(5),
        ))
        .unwrap();
    assert_eq!(
        ladder,
        [
            Ok(LadderOutcome::Terminated),
            Ok(LadderOutcome::Killed),
            Ok(LadderOutcome::AlreadyGone)
        ]
    );
    let after = rt.block_on(host.stats(&[polite, stubborn])).unwrap();
    assert!(
        after
            .iter()
            .all(|s| s.as_ref().is_none_or(|s| s.is_zombie())),
        "both groups ended there (a zombie waits for that host's init): {after:?}"
    );
    assert!(
        rt.block_on(host.terminate_groups(&[1], Duration::ZERO, Duration::ZERO))
            .is_err(),
        "init's group is never signalled"
    );
}

/// The tmux backend on "the other machine": every tmux call, every look at
/// the pane's processes and the signal ladder go there through ssh; the
/// pane is marked, seen running, killed and gone, and its tmux server came
/// from that sshd (its environment carries the ssh connection to its port).
#[test]
fn a_pane_on_another_host_is_opened_watched_and_killed_there_through_ssh() {
    use swarm_backends::tmux::{TmuxBackend, TmuxServer};
    use swarm_backends::{PaneBackendExecutor, PaneMark, PaneStatus, Placement, SpawnSpec};
    let Some(sshd) = Sshd::start() else {
        return;
    };
    if !crate::util::tmux::tmux_available("a_pane_on_another_host") {
        return;
    }
    let control = sshd.dir.path().join("c");
    std::fs::create_dir(&control).unwrap();
    let host = swarm_backends::host::SshHost::new("box", &sshd.alias)
        .unwrap()
        .program(sshd.dir.path().join("bin/ssh").display().to_string())
        .control_dir(&control);
    let server = format!("swarm-test-{}", std::process::id());
    let backend = TmuxBackend::on_host(TmuxServer::named(&server), host.clone());
    assert!(
        !backend.capabilities().exit_events,
        "no pidfd for a remote pid"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    /// Ends the remote server and the shared connection, failing test or not.
    struct Teardown(swarm_backends::host::SshHost, String);
    impl Drop for Teardown {
        fn drop(&mut self) {
            let _ = self.0.output_blocking(&[
                "tmux".into(),
                "-L".into(),
                self.1.clone(),
                "kill-server".into(),
            ]);
            self.0.close();
        }
    }
    let _teardown = Teardown(host.clone(), server.clone());
    let work = tempfile::tempdir().unwrap();
    let ready = work.path().join("ready");
    let spec = SpawnSpec::new(
        "sh",
        ["-c", "echo hello there; exec sleep 300"],
        work.path(),
    )
    .env("PATH", "/usr/bin:/bin")
    .title("remote")
    .mark(PaneMark::new("t", "remote"))
    .ready_file(&ready)
    .placement(Placement::Session {
        name: "swarm-t".into(),
    });
    let pane = rt.block_on(backend.spawn(&spec)).expect("spawned there");
    assert!(
        ready.exists(),
        "the ready file is made there (here: the same disk)"
    );
    let status = rt
        .block_on(backend.status(std::slice::from_ref(&pane)))
        .unwrap();
    let PaneStatus::Running { pid: Some(pid) } = status[0].1 else {
        panic!("{status:?}");
    };
    // The pane's process is a child of that host's tmux server, which was
    // started over ssh: its environment names the connection to our sshd.
    let ppid = swarm_backends::process::Stat::of(pid).unwrap().ppid;
    let environ = std::fs::read(format!("/proc/{ppid}/environ")).unwrap_or_default();
    let environ = String::from_utf8_lossy(&environ);
    assert!(
        environ.contains(&format!(" {} ", sshd.port))
            || environ.contains(&format!(" {}\0", sshd.port)),
        "the server of the pane came in through the test's sshd (port {}): SSH_CONNECTION in {environ:?}",
        sshd.port
    );
    // A wrong directory there is refused by name before anything opens.
    let bad = SpawnSpec::new("true", Vec::<String>::new(), "/nonexistent/dir")
        .mark(PaneMark::new("t", "bad"))
        .placement(Placement::NewWindow {
            session: Some("swarm-t".into()),
        });
    let err = rt.block_on(backend.spawn(&bad)).unwrap_err().to_string();
    assert!(err.contains("is not an existing directory on box"), "{err}");
    rt.block_on(backend.kill(&pane, Duration::from_millis(500)))
        .expect("killed there");
    let status = rt
        .block_on(backend.status(std::slice::from_ref(&pane)))
        .unwrap();
    assert_eq!(status[0].1, PaneStatus::Gone, "{status:?}");
    let st = swarm_backends::process::Stat::of(pid);
    assert!(
        st.as_ref().is_none_or(|s| s.is_zombie()),
        "its process ended: {st:?}"
    );
}

/// `swarm up SPEC` records the spec's hosts as the team's: `swarm spawn
/// --host` knows them (an unknown one refused with the team's hosts) and
/// `swarm doctor --host` finds one without the spec.
#[test]
fn the_teams_hosts_are_recorded_by_up_and_known_to_spawn_and_doctor() {
    let Some(t) = crate::util::tmux::TmuxTeam::new("the_teams_hosts_are_recorded", "hr") else {
        return;
    };
    let spec = t.work.join("team.toml");
    std::fs::write(
        &spec,
        "team = \"hr\"\n[[host]]\nname = \"box\"\nssh = \"swarm-test-host.invalid\"\n\
         root = \"/mnt/team\"\ntimeout = 5\n[[teammate]]\nname = \"here\"\nhost = \"local\"\n",
    )
    .unwrap();
    t.ok(&["up", "--no-attach", &spec.display().to_string()]);
    t.wait_lead();
    let recorded = t.sb.read_json("swarm/hr/hosts.json");
    assert_eq!(recorded[0]["name"], "box", "{recorded}");
    assert_eq!(recorded[0]["root"], "/mnt/team", "{recorded}");
    // Known, so tried there; that machine does not exist: said, and
    // nothing of far's is left.
    t.run(&["spawn", "far", "--host", "box"])
        .assert_code(2)
        .assert_error("opening a pane for far on box");
    assert!(
        !t.ok(&["status"]).stdout.contains("\nfar "),
        "{}",
        t.explain()
    );
    t.run(&["spawn", "far", "--host", "nowhere"])
        .assert_code(2)
        .assert_error("no host \"nowhere\" in team \"hr\" (hosts: local, box)");
    t.ok(&["spawn", "near", "--host", "local"]);
    // No ./swarm.toml here: the team's record names the host.
    let r = t.run(&["doctor", "--host", "box"]);
    r.assert_code(1);
    assert!(
        r.stdout.contains("host box (ssh swarm-test-host.invalid)")
            && r.stdout.contains("ssh    FAILED"),
        "{}",
        r.explain()
    );
    t.run(&["doctor", "--host", "gone"])
        .assert_code(2)
        .assert_error("no [[host]] named \"gone\" in team \"hr\" (hosts: local, box)");
    t.ok(&["down", "--force"]);
}

/// Issue 26 end to end, as far as it is built: a spec with a local and a
/// remote shell teammate comes up; the remote one runs in the team's tmux
/// server on "the other machine", started through its sshd; a task
/// assigned to it is done by it; a message reaches it rung through its
/// host (its own looks set to 300 s); it is unreachable while the host
/// does not answer, and runs again once it does; `down` leaves nothing of
/// the team's there.
#[test]
fn a_spec_with_a_remote_teammate_comes_up_works_there_and_goes_down() {
    let Some(mut r) = RemoteTeam::up(
        "a_spec_with_a_remote_teammate",
        "rh",
        "poll = 300\n",
        &[("near", "local"), ("far", "box")],
    ) else {
        return;
    };
    crate::util::wait_until(
        "far's pane runs on box",
        crate::util::WAIT,
        || {
            r.member("far")["pane"]
                .as_str()
                .is_some_and(|p| p.starts_with("box:%"))
        },
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    // Its tmux server is the one ssh started there.
    let pid = match r.panes_there()[..] {
        [pid] => pid,
        ref other => panic!("one pane there, not {other:?}"),
    };
    let ppid = swarm_backends::process::Stat::of(pid).unwrap().ppid;
    let environ = String::from_utf8_lossy(
        &std::fs::read(format!("/proc/{ppid}/environ")).unwrap_or_default(),
    )
    .into_owned();
    assert!(
        environ.contains(&format!(" {}\0", r.sshd.port))
            || environ.contains(&format!(" {} ", r.sshd.port)),
        "far's tmux server came in through the test's sshd (port {})",
        r.sshd.port
    );
    // A task for far alone: blocked until assigned, then freed.
    let done = r.t.work.join("far-task.txt");
    r.ok(&["task", "create", "gate"]);
    r.ok(&[
        "task",
        "create",
        "far's task",
        "--command",
        &format!("echo done-by-far > '{}'", done.display()),
        "--blocked-by",
        "1",
    ]);
    r.ok(&["task", "update", "2", "--owner", "far"]);
    r.ok(&["task", "update", "1", "--status", "completed"]);
    crate::util::wait_until(
        "far does its task there",
        crate::util::WAIT,
        || {
            r.ok(&["task", "get", "2", "--json"]).json()["status"] == "completed"
                && std::fs::read_to_string(&done).is_ok_and(|s| s.contains("done-by-far"))
        },
        || format!("{}\n{}", r.ok(&["task", "list"]).stdout, r.t.explain()),
    );
    // A message: far's runtime looks itself only every 300 s (`poll`),
    // so only the ring through its host (`swarm ring` over ssh) brings it
    // within the test's wait.
    let got = r.t.work.join("far-msg.txt");
    let sent = std::time::Instant::now();
    r.ok(&[
        "send",
        "--to",
        "far",
        &format!("echo got > '{}'", got.display()),
    ]);
    crate::util::wait_until(
        "far runs a message",
        crate::util::WAIT,
        || got.exists(),
        || r.t.explain(),
    );
    println!(
        "FIGURE: a message to a teammate on another host ran after {:.0} ms (rung over ssh; its own looks every 300 s)",
        sent.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(r.member("far")["host"], "box");
    // A long task of far's, then the machine stops answering: far is
    // unreachable, not dead, and its task stays its own; the machine
    // answers again: far runs again, in the same pane, no respawn.
    r.ok(&["task", "create", "gate 2"]);
    r.ok(&[
        "task",
        "create",
        "long",
        "--command",
        "sleep 60",
        "--blocked-by",
        "3",
    ]);
    r.ok(&["task", "update", "4", "--owner", "far"]);
    r.ok(&["task", "update", "3", "--status", "completed"]);
    let task4 = |r: &RemoteTeam| r.ok(&["task", "get", "4", "--json"]).json();
    crate::util::wait_until(
        "far starts its long task",
        crate::util::WAIT,
        || task4(&r)["status"] == "in_progress",
        || r.t.explain(),
    );
    let pane_before = r.member("far")["pane"].clone();
    r.sshd.partition();
    crate::util::wait_until(
        "far is unreachable within 30 s",
        std::time::Duration::from_secs(30),
        || r.member("far")["status"] == "unreachable",
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    // A fresh `swarm status` now pays no deadline: the lead's note that
    // box does not answer is taken as its own look (no ssh call of its).
    let mut c = r.t.cmd(&["status", "--json"]);
    c.env("PATH", &r.path).env("SSH_CALLER", "fresh-status");
    let began = std::time::Instant::now();
    let st = Run::of(c, &["status"]);
    println!(
        "FIGURE: swarm status with a host behind a partition answered in {:.0} ms, asking it nothing",
        began.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(st.code, Some(0), "{}", st.explain());
    // Nor does a send to far: its message is on disk, and no ring is
    // tried through a host noted away (far looks itself meanwhile).
    let mut c = r.t.cmd(&["send", "--to", "far", "echo while-away"]);
    c.env("PATH", &r.path).env("SSH_CALLER", "send-while-away");
    Run::of(c, &["send"]).assert_code(0);
    let calls =
        std::fs::read_to_string(r.sshd.dir.path().join("ssh-calls.log")).unwrap_or_default();
    for caller in ["fresh-status", "send-while-away"] {
        assert!(
            !calls.lines().any(|l| l.starts_with(&format!("{caller} "))),
            "{caller} asked the partitioned host itself:\n{calls}"
        );
    }
    let task = task4(&r);
    assert_eq!(
        (task["owner"].as_str(), task["status"].as_str()),
        (Some("far"), Some("in_progress")),
        "its task stays its own: {task}"
    );
    r.sshd.start_again();
    crate::util::wait_until(
        "far runs again once box answers",
        crate::util::WAIT,
        || r.member("far")["status"] == "running",
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    assert_eq!(
        r.member("far")["pane"],
        pane_before,
        "the same pane: no respawn"
    );
    r.ok(&["down", "--force"]);
    let left = std::process::Command::new("tmux")
        .args(["-L", "swarm-rh", "has-session"])
        .env_remove("TMUX")
        .output()
        .unwrap();
    assert!(
        !left.status.success(),
        "down leaves no tmux server of the team there"
    );
    let st = swarm_backends::process::Stat::of(pid);
    assert!(
        st.as_ref().is_none_or(|s| s.is_zombie()),
        "far's runtime ended: {st:?}"
    );
}

/// A host that does not answer for its `unreachable_grace`: its
/// teammate's task goes back on the board (the teammate is not dead), and
/// the teammate runs on in its pane once the host answers again.
#[test]
fn after_its_grace_an_unreachable_teammates_task_goes_back_on_the_board() {
    let Some(mut r) = RemoteTeam::up(
        "after_its_grace",
        "rg",
        "unreachable_grace = 2\n",
        &[("far", "box")],
    ) else {
        return;
    };
    crate::util::wait_until(
        "far runs on box",
        crate::util::WAIT,
        || r.member("far")["status"] == "idle",
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    r.ok(&["task", "create", "long", "--command", "sleep 60"]);
    let task = |r: &RemoteTeam| r.ok(&["task", "get", "1", "--json"]).json();
    crate::util::wait_until(
        "far takes the task",
        crate::util::WAIT,
        || task(&r)["owner"] == "far" && task(&r)["status"] == "in_progress",
        || r.t.explain(),
    );
    r.sshd.partition();
    crate::util::wait_until(
        "the lead gives far's task back after box's 2 s of grace",
        crate::util::WAIT,
        || task(&r)["owner"].is_null(),
        || format!("{}\n{}", task(&r), r.t.explain()),
    );
    assert_eq!(r.member("far")["status"], "unreachable", "far is not dead");
    r.sshd.start_again();
    crate::util::wait_until(
        "far runs again once box answers",
        crate::util::WAIT,
        || r.member("far")["status"] != "unreachable",
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    r.ok(&["down", "--force"]);
}

/// A team up from a spec with one `[[host]]` named `box` (the test's
/// private sshd, seeing the state root at another path; `host_extra`
/// added to it) and `teammates` (name, host); commands run with the
/// test's `ssh` first on PATH; the team's tmux server on box is ended
/// when dropped, whatever happened.
struct RemoteTeam {
    sshd: Sshd,
    t: crate::util::tmux::TmuxTeam,
    path: std::ffi::OsString,
}

impl RemoteTeam {
    fn up(test: &str, team: &str, host_extra: &str, teammates: &[(&str, &str)]) -> Option<Self> {
        let sshd = Sshd::start()?;
        let t = crate::util::tmux::TmuxTeam::new(test, team)?;
        let there = remote_view(t.sb.root(), &sshd.dir.path().join("mnt-team"));
        let mut spec = format!(
            "team = \"{team}\"\n[[host]]\nname = \"box\"\nssh = \"{}\"\nroot = \"{}\"\n\
             swarm = \"{}\"\n{host_extra}",
            sshd.alias,
            there.display(),
            swarm_bin()
        );
        for (name, host) in teammates {
            spec += &format!("[[teammate]]\nname = \"{name}\"\nhost = \"{host}\"\n");
        }
        let file = t.work.join("team.toml");
        std::fs::write(&file, spec).unwrap();
        let r = RemoteTeam {
            path: sshd.path(),
            sshd,
            t,
        };
        r.ok(&["up", "--no-attach", &file.display().to_string()]);
        r.t.wait_lead();
        Some(r)
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut c = self.t.cmd(args);
        c.env("PATH", &self.path);
        Run::of(c, args)
    }

    fn ok(&self, args: &[&str]) -> Run {
        let r = self.run(args);
        let sshd_log =
            std::fs::read_to_string(self.sshd.dir.path().join("sshd.log")).unwrap_or_default();
        assert_eq!(
            r.code,
            Some(0),
            "{}\n{}\n--- sshd ---\n{sshd_log}",
            r.explain(),
            self.t.explain()
        );
        r
    }

    /// `name`'s entry in `swarm status --json` (null when not there).
    fn member(&self, name: &str) -> serde_json::Value {
        self.ok(&["status", "--json"]).json()["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
            .unwrap_or_default()
    }

    /// The pids of the panes of the team's tmux server on box.
    fn panes_there(&self) -> Vec<u32> {
        let out = std::process::Command::new("tmux")
            .args(["-L", &format!("swarm-{}", self.t.team)])
            .args(["list-panes", "-a", "-F", "#{pane_pid}"])
            .env_remove("TMUX")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }
}

impl Drop for RemoteTeam {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &format!("swarm-{}", self.t.team), "kill-server"])
            .env_remove("TMUX")
            .output();
    }
}

fn gone(pid: u32) -> bool {
    swarm_backends::process::Stat::of(pid).is_none_or(|s| s.is_zombie())
}

/// Issue 26, item 6: `swarm output`, `shutdown` and `kill` work on a
/// teammate on another machine as on one here: its pane's output read
/// there, a graceful shutdown answered by its runtime there, a kill that
/// ends its processes there; `swarm spawn --host` starts one more there.
#[test]
fn output_shutdown_and_kill_work_on_teammates_on_another_host() {
    let Some(r) = RemoteTeam::up(
        "output_shutdown_and_kill",
        "rk",
        "",
        &[("far", "box"), ("near", "local")],
    ) else {
        return;
    };
    crate::util::wait_until(
        "far idles on box",
        crate::util::WAIT,
        || r.member("far")["status"] == "idle",
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    let out = r.ok(&["output", "far"]);
    assert!(
        out.stdout.contains("swarm teammate far@rk") && out.stdout.contains("runs on host box"),
        "far's pane there, read through ssh:\n{}",
        out.explain()
    );
    let far_pid = r.panes_there();
    assert_eq!(far_pid.len(), 1, "one pane there");
    r.ok(&["shutdown", "far"]);
    crate::util::wait_until(
        "far shuts down: off the roster, its process there ended",
        crate::util::WAIT,
        || r.member("far").is_null() && gone(far_pid[0]),
        || format!("{}\n{}", r.member("far"), r.t.explain()),
    );
    r.ok(&["spawn", "again", "--host", "box"]);
    crate::util::wait_until(
        "again idles on box",
        crate::util::WAIT,
        || r.member("again")["status"] == "idle" && r.member("again")["host"] == "box",
        || format!("{}\n{}", r.member("again"), r.t.explain()),
    );
    let again_pid = r.panes_there();
    assert_eq!(again_pid.len(), 1, "again's pane there");
    r.ok(&["kill", "again"]);
    crate::util::wait_until(
        "again is killed: off the roster, its process there ended",
        crate::util::WAIT,
        || r.member("again").is_null() && gone(again_pid[0]),
        || format!("{}\n{}", r.member("again"), r.t.explain()),
    );
    assert_eq!(r.member("near")["status"], "idle", "near untouched");
    r.ok(&["down", "--force"]);
}

/// Issue 26, item 4: a send to teammates on another machine rings them
/// through it (`swarm ring` over ssh), batched: one call in flight per
/// host, the members rung meanwhile in the next; a broadcast to 8 there
/// takes fewer calls than 8, and rings every one of them. The send waits
/// for its rings before it exits.
#[test]
fn a_broadcast_rings_the_teammates_of_a_host_in_batched_ssh_calls() {
    let Some(sshd) = Sshd::start() else {
        return;
    };
    let sb = Sandbox::new();
    let there = remote_view(sb.root(), &sshd.dir.path().join("mnt-team"));
    let names: Vec<String> = (1..=8).map(|i| format!("far{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    sb.team_with("t", &refs);
    std::fs::write(
        sb.path("swarm/t/hosts.json"),
        serde_json::to_vec(&serde_json::json!([{
            "name": "box", "ssh": sshd.alias, "root": there, "swarm": swarm_bin(),
        }]))
        .unwrap(),
    )
    .unwrap();
    let config = sb.path("teams/t/config.json");
    let mut roster: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
    for m in roster["members"].as_array_mut().unwrap() {
        if m["name"].as_str().is_some_and(|n| n.starts_with("far")) {
            m["swarmHost"] = "box".into();
        }
    }
    std::fs::write(&config, serde_json::to_vec_pretty(&roster).unwrap()).unwrap();
    let mut c = sb.cmd(&["--team", "t", "send", "--to", "*", "hello"]);
    c.env("PATH", sshd.path());
    Run::of(c, &["send"]).assert_code(0);
    let calls = std::fs::read_to_string(sshd.dir.path().join("ssh-calls.log")).unwrap_or_default();
    let rings: Vec<&str> = calls.lines().filter(|l| l.contains(" ring -- ")).collect();
    let rung: std::collections::BTreeSet<&str> = rings
        .iter()
        .flat_map(|l| l.split(" ring -- ").nth(1).unwrap_or_default().split(' '))
        .collect();
    assert_eq!(
        rung,
        refs.iter().copied().collect(),
        "every teammate there rung: {calls}"
    );
    assert!(
        rings.len() < refs.len(),
        "{} ssh calls for {} teammates: not batched\n{calls}",
        rings.len(),
        refs.len()
    );
    println!(
        "FIGURE: a broadcast to {} teammates on one host rang them in {} ssh call(s)",
        refs.len(),
        rings.len()
    );
}
