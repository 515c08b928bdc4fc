//! `swarm up --demo` end to end: on a private tmux server, three shell
//! teammates complete every task of the embedded board exactly once, in
//! dependency order; the summary reaches the lead; `swarm down` leaves
//! nothing behind. And the same teammates hosted in-process by the lead,
//! their output readable with `swarm output`.

use crate::util::tmux::{TmuxTeam, group_alive, lock_dirs};
use crate::util::{Sandbox, WAIT, pid_alive, timeouts, wait_until};
use serde_json::Value;
use std::time::Duration;

const DEMO_TIMEOUT: Duration = Duration::from_secs(60);

/// The demo's pauses scaled down (SWARM_DEMO_PACE, passed by name to its
/// teammates): the same commands, streaming the same way, in a fifth of
/// the time.
const PACE: &str = "0.2";

/// Waits for the demo's plan approval request in the lead's inbox (or its
/// history, once the lead took it into its queue), approves it as the
/// TeamsDialog's `a` would, and returns the plan's text.
fn approve_the_plan(t: &TmuxTeam, already: &[String]) -> String {
    let mut found: Option<(String, String, String)> = None;
    wait_until(
        "the demo asks the lead to approve a plan",
        DEMO_TIMEOUT,
        || {
            let r = t.run(&["inbox", "--all", "--json"]);
            let all: Vec<Value> = serde_json::from_str(&r.stdout).unwrap_or_default();
            found = all.iter().find_map(|e| {
                let frame: Value = serde_json::from_str(e["text"].as_str()?).ok()?;
                let id = frame["requestId"].as_str()?.to_string();
                (frame["type"] == "plan_approval_request" && !already.contains(&id)).then(|| {
                    let plan = frame["planContent"].as_str().unwrap_or("").to_string();
                    (id, frame["from"].as_str().unwrap_or("").to_string(), plan)
                })
            });
            found.is_some()
        },
        || format!("{:#?}\n{}", tasks(t), t.explain()),
    );
    let (id, from, plan) = found.expect("found above");
    t.ok(&["send", "--to", &from, "--plan-response", &id, "--approve"]);
    format!("{id}\n{plan}")
}

fn wait_all_completed(t: &TmuxTeam, what: &str) {
    wait_until(
        what,
        DEMO_TIMEOUT,
        || {
            let ts = tasks(t);
            !ts.is_empty() && ts.iter().all(|x| x["status"] == "completed")
        },
        || format!("{:#?}\n{}", tasks(t), t.explain()),
    );
}

fn tasks(t: &TmuxTeam) -> Vec<Value> {
    let r = t.run(&["task", "list", "--json"]);
    serde_json::from_str::<Value>(&r.stdout)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

#[test]
fn the_demo_finishes_every_task_in_order_and_down_leaves_nothing() {
    let Some(t) = TmuxTeam::new("the_demo_finishes_every_task", "demo") else {
        return;
    };
    let up = |t: &TmuxTeam| {
        let mut c = t.cmd(&["up", "--demo", "--no-attach"]);
        c.env("SWARM_DEMO_PACE", PACE);
        let r = crate::util::Run::of(c, &["up", "--demo"]);
        r.assert_code(0);
        r
    };
    // Something to look over: words, a marker, two identical files.
    let w = |rel: &str, text: &str| {
        let p = t.work.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "README.md",
        "swarmdemo words: teammates teammates teammates panes panes\n",
    );
    w(
        "src/main.rs",
        "// TODO: a marker the demo finds\nfn main() {}\n",
    );
    w("src/copy.txt", "the same bytes\n");
    w("docs/copy.txt", "the same bytes\n");
    let first = up(&t);
    // `swarm` is not on PATH here: the hint names this executable.
    let exe = crate::util::swarm_bin();
    assert!(
        first
            .stderr
            .contains(&format!("end the team: {exe} down --team demo")),
        "{}",
        first.explain()
    );
    let lead = t.wait_lead();
    let asked = approve_the_plan(&t, &[]);
    assert!(
        asked.contains("TODO"),
        "the plan says what it will do: {asked}"
    );
    wait_all_completed(&t, "every demo task is completed");
    let ts = tasks(&t);
    assert!(ts.len() >= 8, "about ten tasks: {}", ts.len());
    let finished = |id: &str| -> (u64, u64) {
        let t = ts.iter().find(|t| t["id"] == id).expect("task exists");
        let ms = |k: &str| {
            t["metadata"][k]
                .as_str()
                .and_then(swarm::clock::ms_from_iso)
                .unwrap_or(0)
        };
        (ms("startedAt"), ms("finishedAt"))
    };
    for task in &ts {
        let id = task["id"].as_str().unwrap();
        assert!(task["owner"].is_string(), "task {id} has an owner: {task}");
        assert_eq!(
            task["metadata"]["exitCode"], 0,
            "task {id} succeeded: {task}"
        );
        let (start, _) = finished(id);
        for b in task["blockedBy"].as_array().unwrap() {
            let (_, blocker_end) = finished(b.as_str().unwrap());
            assert!(
                blocker_end <= start,
                "task {id} started before its blocker {b} finished"
            );
        }
    }
    // Each task ran once: one "▶ task N:" line across all panes' output.
    let mut runs = std::collections::HashMap::<String, usize>::new();
    for name in ["alpha", "bravo", "charlie"] {
        let out = t.ok(&["output", name]).stdout;
        for line in out.lines() {
            if let Some(rest) = line.split("▶ task ").nth(1) {
                *runs
                    .entry(rest.split(':').next().unwrap_or("").to_string())
                    .or_default() += 1;
            }
        }
    }
    for task in &ts {
        let id = task["id"].as_str().unwrap();
        assert_eq!(
            runs.get(id),
            Some(&1),
            "task {id} ran exactly once: {runs:?}"
        );
    }
    // The summary reached the lead (the lead consumes its inbox into history).
    let mut summary = String::new();
    wait_until(
        "the demo summary is in the lead's inbox or history",
        Duration::from_secs(10),
        || {
            let all: Vec<Value> =
                serde_json::from_str(&t.run(&["inbox", "--all", "--json"]).stdout)
                    .unwrap_or_default();
            summary = all
                .iter()
                .find(|e| e["summary"] == "demo summary")
                .and_then(|e| e["text"].as_str())
                .unwrap_or("")
                .to_string();
            !summary.is_empty()
        },
        || t.explain(),
    );
    for fact in [
        "TODO/FIXME markers: 1",
        "2 copies of",
        "teammates",
        "files  .rs",
    ] {
        assert!(
            summary.contains(fact),
            "the summary has {fact:?}:\n{summary}"
        );
    }

    // A second `up --demo` on the finished board runs the demo again.
    let again = up(&t);
    assert!(
        again
            .stderr
            .contains(&format!("created {} task(s)", ts.len())),
        "{}",
        again.explain()
    );
    approve_the_plan(&t, &[asked.lines().next().unwrap_or("").to_string()]);
    wait_all_completed(&t, "every task of the second run is completed");
    let second = tasks(&t);
    assert!(
        second
            .iter()
            .all(|x| !ts.iter().any(|y| y["id"] == x["id"])),
        "new tasks, new ids"
    );

    let pids: Vec<u32> = ["alpha", "bravo", "charlie"]
        .iter()
        .map(|n| t.pid_of(n))
        .collect();
    let r = t.ok(&["down", "--wait", &timeouts::secs_arg(WAIT / 2)]);
    assert!(r.stdout.contains("team demo deleted"), "{}", r.explain());
    assert!(
        !t.tmux.has_session("swarm-demo"),
        "session closed\n{}",
        t.explain()
    );
    for pid in pids {
        wait_until(
            &format!("teammate group {pid} is gone"),
            Duration::from_secs(5),
            || !group_alive(pid),
            || t.explain(),
        );
    }
    wait_until(
        "the lead exits",
        Duration::from_secs(5),
        || !group_alive(lead),
        || t.explain(),
    );
    assert!(
        lock_dirs(t.sb.root()).is_empty(),
        "lock dirs left: {:?}",
        lock_dirs(t.sb.root())
    );
    assert!(
        !t.sb.path("teams/demo").exists() && !t.sb.path("tasks/demo").exists(),
        "{:?}",
        t.sb.tree()
    );
    assert!(t.tmux.canary_alive(), "the canary session survived");
}

/// Stops the lead politely (SIGTERM: its panes die with it), then surely.
struct Reap(std::process::Child);
impl Drop for Reap {
    fn drop(&mut self) {
        // SAFETY: signalling the child we started, by its pid.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = timeouts::Deadline::after(Duration::from_secs(5));
        while !deadline.passed() && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `swarm ARGS` as an in-process lead with no terminal (it prints its plain
/// status view and hosts the PTYs), stopped when dropped.
fn hosted_lead(s: &Sandbox, args: &[&str]) -> Reap {
    Reap(
        s.cmd(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[test]
fn an_in_process_team_comes_back_with_its_teammates_running() {
    let s = Sandbox::new();
    let spec = s.path("swarm.toml");
    std::fs::write(
        &spec,
        "team = \"back\"\nbackend = \"in-process\"\n[[teammate]]\nname = \"solo\"\nagent = \"shell\"\n\
         [[task]]\nsubject = \"first\"\ncommand = \"echo first\"\n",
    )
    .unwrap();
    let done = |id: &str| {
        s.run(&["task", "get", id, "--team", "back", "--json"])
            .stdout
            .contains("\"completed\"")
    };
    let lead = hosted_lead(&s, &["up", spec.to_str().unwrap()]);
    wait_until(
        "the first lead's teammate completes task 1",
        Duration::from_secs(30),
        || done("1"),
        || format!("{:?}", s.tree()),
    );
    drop(lead);
    // The lead quit: its hosted teammate ended with it. The next `up`
    // starts it again, and it works.
    s.ok(&[
        "task",
        "create",
        "second",
        "--command",
        "echo second",
        "--team",
        "back",
    ]);
    let _lead = hosted_lead(&s, &["up", "--team", "back", "--backend", "in-process"]);
    wait_until(
        "the teammate is running again and completes task 2",
        Duration::from_secs(30),
        || done("2"),
        || {
            format!(
                "{}\n{:?}",
                s.run(&["status", "--team", "back"]).stdout,
                s.tree()
            )
        },
    );
    let st = s.ok(&["status", "--team", "back", "--json"]).json();
    assert_eq!(st["members"][1]["name"], "solo");
    assert_eq!(st["members"][1]["alive"], true, "{st}");
}

/// An in-process lead hosts its teammates' PTYs, and they die with it:
/// `down` tells such a lead to stop only once its teammates have ended,
/// not as soon as all of them have approved (as it does a lead in tmux).
/// Here the one teammate approves and is held before it ends
/// (`SWARM_FAULT_SHUTDOWN_GATE`): the lead, and the teammate, still run
/// while it is held; once it is let through, the team goes.
#[test]
fn down_keeps_an_in_process_lead_until_its_teammates_have_ended() {
    let s = Sandbox::new();
    let door = s.path("door");
    let spec = s.path("swarm.toml");
    std::fs::write(
        &spec,
        format!(
            "team = \"hosting\"\nbackend = \"in-process\"\n[[teammate]]\nname = \"held\"\n\
             agent = \"shell\"\nenv = {{ SWARM_FAULT_SHUTDOWN_GATE = {:?} }}\n",
            door.display().to_string()
        ),
    )
    .unwrap();
    let mut lead = hosted_lead(&s, &["up", spec.to_str().unwrap()]);
    // Held's pid as the roster records it (none while the roster is not
    // written yet).
    let held = || {
        let text = std::fs::read_to_string(s.path("teams/hosting/config.json")).ok()?;
        let cfg: Value = serde_json::from_str(&text).ok()?;
        cfg["members"][1]["swarmPid"].as_u64().map(|p| p as u32)
    };
    let mut runtime = 0;
    wait_until(
        "held's runtime is up",
        WAIT,
        || {
            runtime = held().unwrap_or(0);
            runtime != 0 && pid_alive(runtime)
        },
        || format!("{:?}", s.tree()),
    );
    let budget = (timeouts::scaled(WAIT) * 10).as_secs().to_string();
    let mut down = s
        .cmd(&["down", "--team", "hosting", "--wait", &budget])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("starting swarm down");
    let approved = || {
        std::fs::read_to_string(s.path("teams/hosting/inboxes/team-lead.json"))
            .is_ok_and(|t| t.contains("shutdown_approved"))
    };
    wait_until("held approves", WAIT, approved, || {
        format!("{:?}", s.tree())
    });
    // Time for a `down` that stops the lead at the approvals to do so
    // (within milliseconds), short of the 2 s an approving teammate has.
    std::thread::sleep(Duration::from_millis(500));
    let lead_runs = matches!(lead.0.try_wait(), Ok(None));
    let held_runs = pid_alive(runtime);
    std::fs::write(&door, b"").unwrap();
    let mut status = None;
    wait_until(
        "down ends",
        WAIT,
        || {
            status = down.try_wait().expect("down's status");
            status.is_some()
        },
        || format!("{:?}", s.tree()),
    );
    assert!(lead_runs, "the lead hosting held ran while held was held");
    assert!(held_runs, "held ran until let through");
    assert!(status.is_some_and(|st| st.success()), "{status:?}");
    assert!(!s.path("teams/hosting").exists(), "{:?}", s.tree());
}

#[test]
fn an_in_process_lead_hosts_the_teammates_and_their_output_is_readable() {
    let s = Sandbox::new();
    let spec = s.path("swarm.toml");
    std::fs::write(
        &spec,
        "team = \"hosted\"\nbackend = \"in-process\"\n[[teammate]]\nname = \"solo\"\nagent = \"shell\"\n\
         [[task]]\nsubject = \"count\"\ncommand = \"for i in $(seq 1 40); do echo line-$i; done\"\n",
    )
    .unwrap();
    let _lead = hosted_lead(&s, &["up", spec.to_str().unwrap()]);
    wait_until(
        "the in-process teammate completes its task",
        Duration::from_secs(30),
        || {
            s.run(&["task", "get", "1", "--team", "hosted", "--json"])
                .stdout
                .contains("\"completed\"")
        },
        || format!("{:?}", s.tree()),
    );
    let out = s.ok(&["output", "solo", "--team", "hosted"]).stdout;
    assert!(
        !out.contains('\r'),
        "LF line ends, not the PTY's CRLF: {out:?}"
    );
    let lines: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("line-"))
        .collect();
    let expect: Vec<String> = (1..=40).map(|i| i.to_string()).collect();
    assert_eq!(
        lines, expect,
        "every line, in order, from the PTY stream:\n{out}"
    );
    let cfg = s.read_json("teams/hosted/config.json");
    assert_eq!(cfg["members"][1]["backendType"], "in-process");
}
