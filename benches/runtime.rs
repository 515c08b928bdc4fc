//! Teammate-runtime delivery figures (DESIGN §10), printed, not asserted:
//!
//! - **wake-up**: send (library append as `team-lead`) → the runtime has
//!   woken, read the message and started its agent: the message is the
//!   shell command `date +%s%N`, so the agent prints the nanosecond it ran
//!   (an upper bound on "the runtime has it": it includes one `sh` + `date`
//!   spawn). Needs GNU `date` (Linux).
//! - **delivery**: send → the runtime has read the message from its inbox
//!   (DESIGN §10's "recipient runtime has it"): the runtime logs
//!   `inbox read at_us=…` at debug level, the bench runs it with
//!   `SWARM_LOG=…=debug` and compares that time with the send's start.
//! - **round trip**: send → the reply is in the lead's inbox.
//!
//! One idle `shell` teammate runtime (the real binary) per run; samples are
//! sequential, each sent once the previous reply arrived and the runtime
//! went idle again. `SWARM_BENCH_QUICK=1` takes fewer samples.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use swarm::mailbox::Entry;
use swarm::paths::Root;
use swarm::team::{Member, Team, colors};

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() {
    let samples = if std::env::var_os("SWARM_BENCH_QUICK").is_some() {
        20
    } else {
        200
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Root::new(dir.path());
    let team = Team::new(&root, "bench");
    team.roster().create(None, "/").expect("create team");
    team.roster()
        .add_member(Member::teammate(
            "bench",
            "alice",
            colors::for_teammate(0),
            &dir.path().to_string_lossy(),
        ))
        .expect("add alice");
    let mut child = Command::new(env!("CARGO_BIN_EXE_swarm"))
        .args(["teammate", "--name", "alice"])
        .env("SWARM_HOME", dir.path())
        .env("SWARM_TEAM", "bench")
        .env("SWARM_LOG", "info,swarm::teammate=debug")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the runtime");
    let mailbox = team.mailbox();
    let watcher = mailbox.watch().expect("watch");
    let lead_inbox = std::ffi::OsString::from("team-lead.json");
    let log = root
        .logs_dir("bench")
        .expect("logs dir")
        .join("teammate-alice.log");
    // Every `at_us=` of an "inbox read" line, in order.
    let reads = || -> Vec<u64> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("inbox read"))
            .filter_map(|l| l.split("at_us=").nth(1))
            .filter_map(|v| v.split_whitespace().next()?.parse().ok())
            .collect()
    };
    let (mut read_ms, mut wake_ms, mut trip_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    // Let the runtime start and settle before measuring.
    std::thread::sleep(Duration::from_millis(300));
    for i in 0..samples + 1 {
        let reads_before = reads().len();
        let sent_ns = now_ns();
        let start = Instant::now();
        mailbox
            .append(
                "alice",
                Entry::new("team-lead", "date +%s%N".into(), None, None),
            )
            .expect("send");
        let (mut reply, mut idle) = (None, false);
        let deadline = Instant::now() + Duration::from_secs(10);
        while (reply.is_none() || !idle) && Instant::now() < deadline {
            mailbox
                .poll_new("team-lead", &mut seen, |e| {
                    if e.text.contains("idle_notification") {
                        idle = true;
                    } else if e.from == "alice" && reply.is_none() {
                        reply = Some((e.text.clone(), start.elapsed()));
                    }
                })
                .expect("read the lead's inbox");
            if reply.is_none() || !idle {
                watcher.wait_for(&lead_inbox, Duration::from_millis(200));
            }
        }
        let Some((text, trip)) = reply else {
            eprintln!("sample {i}: no reply within 10 s");
            continue;
        };
        if i == 0 {
            continue; // warm-up
        }
        trip_ms.push(trip.as_secs_f64() * 1000.0);
        if let Some(at_us) = reads().get(reads_before) {
            let sent_us = (sent_ns / 1000) as u64;
            read_ms.push(at_us.saturating_sub(sent_us) as f64 / 1000.0);
        }
        if let Ok(ran_ns) = text.trim().parse::<u128>() {
            wake_ms.push(ran_ns.saturating_sub(sent_ns) as f64 / 1e6);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    for (name, v) in [
        ("send → runtime has read it (delivery)", &mut read_ms),
        ("send → agent running (wake-up upper bound)", &mut wake_ms),
        ("send → reply in lead inbox (round trip)", &mut trip_ms),
    ] {
        if v.is_empty() {
            println!("{name}: no samples (GNU date needed for the wake-up figure)");
            continue;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{name}: n={} p50 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
            v.len(),
            pct(v, 0.5),
            pct(v, 0.99),
            v[v.len() - 1]
        );
    }
}
