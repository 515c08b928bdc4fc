//! Coordination-core figures (DESIGN §10), printed, not asserted:
//!
//! - sends/s to one inbox with 1, 8 and 32 writers: library calls from
//!   threads (each with its own locks, as separate processes would have),
//!   library calls from as many processes (the DESIGN figure: 32 processes
//!   × 100 sends), and real `swarm send` processes (one process per send:
//!   bound by process start-up, about 4 ms of CPU each on 2 cores);
//! - claims/s with 16 claimants racing over the task list (`swarm task claim`
//!   processes) and in-process;
//! - delivery latency p50/p99 from the start of a send to a running
//!   `swarm inbox --follow --json` reader printing it.
//!
//! Run with `scripts/bench` (release build). `SWARM_BENCH_QUICK=1` shrinks
//! the workloads for a smoke run; `SWARM_BENCH_ONLY=sends` stops after the
//! sends.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use swarm::mailbox::{Entry, Mailbox};
use swarm::paths::Root;
use swarm::tasks::{Claim, NewTask, TaskStore};
use swarm::team::Roster;

fn quick() -> bool {
    std::env::var_os("SWARM_BENCH_QUICK").is_some()
}

fn swarm(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_swarm"))
        .args(args)
        .env_clear()
        .env("SWARM_HOME", root)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run swarm")
}

fn fresh_team(name: &str) -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Root::new(dir.path());
    Roster::new(&root, name)
        .create(None, "/")
        .expect("create team");
    (dir, root)
}

fn sends_library(writers: usize, per_writer: usize) -> f64 {
    let (_dir, root) = fresh_team("bench");
    let start = Instant::now();
    let hs: Vec<_> = (0..writers)
        .map(|w| {
            let root = root.clone();
            std::thread::spawn(move || {
                write_messages(&Mailbox::new(&root, "bench"), w, per_writer);
            })
        })
        .collect();
    for h in hs {
        h.join().expect("writer");
    }
    (writers * per_writer) as f64 / start.elapsed().as_secs_f64()
}

/// Env var that turns this bench binary into one writer process of
/// [`sends_library_processes`]: `<state root> <writer number> <sends>`.
const WRITER_ENV: &str = "SWARM_BENCH_WRITER";

fn writer_process(spec: &str) {
    let mut it = spec.split('\x1f');
    let (Some(root), Some(w), Some(n)) = (it.next(), it.next(), it.next()) else {
        panic!("bad {WRITER_ENV}: {spec:?}");
    };
    let n = n.parse::<usize>().expect("sends");
    write_messages(&Mailbox::new(&Root::new(root), "bench"), w, n);
}

/// Writer `w`'s `n` messages to the lead's inbox, one append each.
fn write_messages(mb: &Mailbox, w: impl std::fmt::Display, n: usize) {
    for i in 0..n {
        let e = Entry::new(
            &format!("w{w}"),
            format!("message {i} from writer {w}"),
            None,
            None,
        );
        mb.append("team-lead", e).expect("append");
    }
}

/// `writers` processes each appending `per_writer` entries through the
/// library; checks that every entry arrived once.
fn sends_library_processes(writers: usize, per_writer: usize) -> f64 {
    let (dir, root) = fresh_team("bench");
    let me = std::env::current_exe().expect("bench binary");
    let start = Instant::now();
    let children: Vec<_> = (0..writers)
        .map(|w| {
            let spec = format!("{}\x1f{w}\x1f{per_writer}", dir.path().display());
            Command::new(&me)
                .env(WRITER_ENV, spec)
                .spawn()
                .expect("spawn writer")
        })
        .collect();
    for mut c in children {
        assert!(c.wait().expect("writer").success(), "a writer failed");
    }
    let rate = (writers * per_writer) as f64 / start.elapsed().as_secs_f64();
    let got = Mailbox::new(&root, "bench")
        .read("team-lead")
        .expect("read")
        .entries;
    let distinct: std::collections::HashSet<_> = got.iter().map(|e| e.text.clone()).collect();
    assert_eq!(
        got.len(),
        writers * per_writer,
        "entries lost or duplicated"
    );
    assert_eq!(distinct.len(), got.len(), "entries duplicated");
    rate
}

fn sends_processes(writers: usize, per_writer: usize) -> f64 {
    let (dir, _root) = fresh_team("bench");
    let root = Arc::new(dir.path().to_path_buf());
    let start = Instant::now();
    let hs: Vec<_> = (0..writers)
        .map(|w| {
            let root = root.clone();
            std::thread::spawn(move || {
                for i in 0..per_writer {
                    let text = format!("message {i} from writer {w}");
                    let out = swarm(
                        &root,
                        &["send", "--team", "bench", "--to", "team-lead", &text],
                    );
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("writer");
    }
    let rate = (writers * per_writer) as f64 / start.elapsed().as_secs_f64();
    drop(dir);
    rate
}

fn claims(claimants: usize, tasks: usize, processes: bool) -> f64 {
    let (dir, root) = fresh_team("bench");
    let store = TaskStore::new(&root, "bench");
    for i in 0..tasks {
        store
            .create(NewTask {
                subject: format!("task {i}"),
                description: String::new(),
                active_form: None,
                blocked_by: Vec::new(),
                metadata: None,
            })
            .expect("create");
    }
    let path = Arc::new(dir.path().to_path_buf());
    let start = Instant::now();
    let hs: Vec<_> = (0..claimants)
        .map(|c| {
            let (root, path) = (root.clone(), path.clone());
            std::thread::spawn(move || {
                let me = format!("c{c}");
                let store = TaskStore::new(&root, "bench");
                loop {
                    if processes {
                        let out = swarm(&path, &["task", "claim", "--team", "bench", "--as", &me]);
                        if out.status.code() == Some(1) {
                            return;
                        }
                        assert!(
                            out.status.success(),
                            "{}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                    } else if !matches!(
                        store.claim(None, &me, false).expect("claim"),
                        Claim::Claimed(_)
                    ) {
                        return;
                    }
                }
            })
        })
        .collect();
    for h in hs {
        h.join().expect("claimant");
    }
    tasks as f64 / start.elapsed().as_secs_f64()
}

fn delivery_latency(samples: usize) -> (Duration, Duration, Duration) {
    let (dir, root) = fresh_team("bench");
    let mut child = Command::new(env!("CARGO_BIN_EXE_swarm"))
        .args(["inbox", "--team", "bench", "--follow", "--json"])
        .env_clear()
        .env("SWARM_HOME", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn follower");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mb = Mailbox::new(&root, "bench");
    // Warm up: the follower is ready once it has printed the first message.
    mb.append(
        "team-lead",
        Entry::new("bench", "warm-up".into(), None, None),
    )
    .expect("append");
    lines.next().expect("follower output").expect("line");
    let mut lat = Vec::with_capacity(samples);
    for i in 0..samples {
        std::thread::sleep(Duration::from_millis(5));
        let start = Instant::now();
        mb.append(
            "team-lead",
            Entry::new("bench", format!("ping {i}"), None, None),
        )
        .expect("append");
        let line = lines.next().expect("follower output").expect("line");
        lat.push(start.elapsed());
        assert!(line.contains(&format!("ping {i}")), "{line}");
    }
    let _ = child.kill();
    let _ = child.wait();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    (pct(0.5), pct(0.99), *lat.last().expect("samples"))
}

fn main() {
    if let Ok(spec) = std::env::var(WRITER_ENV) {
        return writer_process(&spec);
    }
    let q = quick();
    println!(
        "swarm coordination benchmarks ({} cores)",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("\n== sends to one inbox ==");
    for writers in [1, 8, 32] {
        let per = if q { 10 } else { 100 };
        let lib = sends_library(writers, per);
        let lib_procs = sends_library_processes(writers, per);
        let procs = sends_processes(writers, if q { 5 } else { 50.min(per) });
        println!(
            "{writers:>2} writers: {lib:>7.0} msg/s (library threads, {n} msgs)   {lib_procs:>7.0} msg/s (library processes, {n} msgs)   {procs:>7.0} msg/s (swarm send processes)",
            n = writers * per
        );
    }
    if std::env::var("SWARM_BENCH_ONLY").as_deref() == Ok("sends") {
        return;
    }
    println!("\n== claims, 16 claimants ==");
    let tasks = if q { 50 } else { 500 };
    println!(
        "library:   {:>7.0} claims/s over {tasks} tasks",
        claims(16, tasks, false)
    );
    println!(
        "processes: {:>7.0} claims/s over {tasks} tasks",
        claims(16, tasks, true)
    );
    println!("\n== delivery latency: send -> `swarm inbox --follow` prints it ==");
    let (p50, p99, max) = delivery_latency(if q { 20 } else { 200 });
    println!(
        "p50 {:.2} ms   p99 {:.2} ms   max {:.2} ms",
        ms(p50),
        ms(p99),
        ms(max)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
