//! `swarm up --demo` end to end: on a private tmux server, three shell
//! teammates complete every task of the embedded board exactly once, in
//! dependency order; the summary reaches the lead; `swarm down` leaves
//! nothing behind. And the same teammates hosted in-process by the lead,
//! their output readable with `swarm output`.

use crate::util::tmux::{TmuxTeam, group_alive, lock_dirs};
use crate::util::{Sandbox, WAIT, timeouts, wait_until};
use serde_json::Value;
use std::time::Duration;

const DEMO_TIMEOUT: Duration = Duration::from_secs(60);

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
    t.ok(&["up", "--demo", "--no-attach"]);
    let lead = t.wait_lead();
    wait_until(
        "every demo task is completed",
        DEMO_TIMEOUT,
        || {
            let ts = tasks(&t);
            !ts.is_empty() && ts.iter().all(|x| x["status"] == "completed")
        },
        || format!("{:#?}\n{}", tasks(&t), t.explain()),
    );
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
    wait_until(
        "the demo summary is in the lead's inbox or history",
        Duration::from_secs(10),
        || {
            t.run(&["inbox", "--all", "--json"])
                .stdout
                .contains("demo summary")
        },
        || t.explain(),
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
    // No terminal: the lead prints its plain status view and hosts the PTYs.
    let lead = s
        .cmd(&["up", spec.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
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
    let _lead = Reap(lead);
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
