//! Many real processes on one inbox and one task list: nothing lost, nothing
//! duplicated, order kept, exactly one winner per claim.

use crate::util::Sandbox;
use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Pins a19eb46: the reader caught a newly created inbox empty (it is now
/// linked into place from a fsynced temp file).
#[test]
fn thirty_two_processes_times_a_hundred_sends_lose_nothing_and_keep_order() {
    const WRITERS: usize = 32;
    const SENDS: usize = 100;
    let _heavy = crate::util::heavy();
    let s = Arc::new(Sandbox::new());
    s.team_with("load", &[]);
    let inbox = s.path("teams/load/inboxes/team-lead.json");

    // A reader that parses the file as often as it can while writers run:
    // it must be a whole JSON array every time, never shrinking.
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (done, inbox) = (done.clone(), inbox.clone());
        std::thread::spawn(move || {
            let (mut looks, mut last) = (0usize, 0usize);
            while !done.load(Ordering::Relaxed) {
                if let Ok(bytes) = std::fs::read(&inbox) {
                    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                        panic!("reader saw a torn inbox ({e}): {} bytes", bytes.len())
                    });
                    let n = v.as_array().expect("inbox is an array").len();
                    assert!(n >= last, "inbox shrank from {last} to {n}");
                    last = n;
                    looks += 1;
                }
                // Look often, but leave the cores to the writers.
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            looks
        })
    };

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let s = s.clone();
            std::thread::spawn(move || {
                for i in 0..SENDS {
                    let text = format!("w{w:02}-{i:03}");
                    s.ok(&[
                        "send",
                        "--team",
                        "load",
                        "--to",
                        "team-lead",
                        "--force",
                        &text,
                    ]);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer thread");
    }
    done.store(true, Ordering::Relaxed);
    let looks = reader.join().expect("reader thread");
    assert!(looks > 10, "the reader looked only {looks} times");

    let v = s.read_json("teams/load/inboxes/team-lead.json");
    let entries = v.as_array().unwrap();
    assert_eq!(
        entries.len(),
        WRITERS * SENDS,
        "every acknowledged send is present"
    );
    let mut seen = HashSet::new();
    let mut last_seq: HashMap<String, usize> = HashMap::new();
    for e in entries {
        let text = e["text"].as_str().unwrap();
        assert!(seen.insert(text.to_string()), "duplicate {text}");
        let (w, i) = text.split_once('-').unwrap();
        let i: usize = i.parse().unwrap();
        if let Some(prev) = last_seq.insert(w.to_string(), i) {
            assert!(i > prev, "{w}: {i} after {prev}: per-sender order broken");
        }
    }
    let ids: HashSet<_> = entries
        .iter()
        .map(|e| e["msg_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), entries.len(), "msg_ids are unique");
    assert!(
        !s.path("teams/load/inboxes/team-lead.json.lock").exists(),
        "no lock directory left"
    );
}

#[test]
fn sixteen_claimants_racing_over_five_hundred_tasks_claim_each_exactly_once() {
    const CLAIMANTS: usize = 16;
    const TASKS: usize = 500;
    let _heavy = crate::util::heavy();
    let s = Arc::new(Sandbox::new());
    s.team_with("race", &[]);
    let root = swarm::paths::Root::new(s.root());
    let store = swarm::tasks::TaskStore::new(&root, "race");
    for i in 0..TASKS {
        store
            .create(swarm::tasks::NewTask {
                subject: format!("task {i}"),
                description: String::new(),
                active_form: None,
                blocked_by: Vec::new(),
                metadata: None,
            })
            .expect("create task");
    }
    // A claim that gave tasks back (a claimant taken for dead) would make
    // this race go round for ever: it has a deadline.
    let deadline = crate::util::timeouts::Deadline::after(std::time::Duration::from_secs(120));
    let claimants: Vec<_> = (0..CLAIMANTS)
        .map(|c| {
            let s = s.clone();
            std::thread::spawn(move || {
                let me = format!("claimant-{c}");
                let mut won = Vec::new();
                loop {
                    assert!(
                        !deadline.passed(),
                        "{me}: still claiming after {:?} ({} won); are claimed tasks coming back?",
                        deadline.budget(),
                        won.len()
                    );
                    let r = s.run(&["task", "claim", "--team", "race", "--as", &me]);
                    match r.code {
                        Some(0) => won.push(r.stdout.trim().to_string()),
                        Some(1) => return (me, won),
                        _ => panic!("claim failed\n{}", r.explain()),
                    }
                }
            })
        })
        .collect();
    let mut owner_of: HashMap<String, String> = HashMap::new();
    for c in claimants {
        let (me, won) = c.join().expect("claimant thread");
        for id in won {
            if let Some(other) = owner_of.insert(id.clone(), me.clone()) {
                panic!("task {id} claimed by both {other} and {me}");
            }
        }
    }
    assert_eq!(owner_of.len(), TASKS, "every task claimed");
    for t in store.list().unwrap().tasks {
        assert_eq!(
            t.owner.as_ref(),
            owner_of.get(&t.id),
            "file owner of task {}",
            t.id
        );
        assert_eq!(t.status, swarm::tasks::Status::InProgress);
    }
}

/// Six `swarm send`s queue behind a held inbox lock; the first of them to
/// become the holder dies (`abort`, as `kill -9` would) at `stage` of its
/// merge of the others' entries. The survivors must finish, every
/// acknowledged message must be in the inbox once, and the spool and temp
/// files must be cleaned up.
fn a_holder_dying_mid_merge(stage: &str) {
    const SENDERS: usize = 6;
    let _heavy = crate::util::heavy();
    let s = Sandbox::new();
    s.team_with("gc", &["bob"]);
    let inbox = s.path("teams/gc/inboxes/bob.json");
    let spool = s.path("swarm/gc/spool/bob");
    let marker = s.path("fault-fired");
    let files_in = |dir: &std::path::Path, pat: &str| -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains(pat))
                    .collect()
            })
            .unwrap_or_default()
    };

    let held = swarm::atomic_file::FileLock::acquire(
        &inbox,
        crate::util::timeouts::scaled(std::time::Duration::from_secs(5)),
    )
    .expect("hold the inbox lock");
    let children: Vec<_> = (0..SENDERS)
        .map(|i| {
            let text = format!("queued-{i}");
            let child = s
                .cmd(&["send", "--team", "gc", "--to", "bob", &text])
                .env("SWARM_FAULT", format!("{stage}:{}", marker.display()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn swarm send");
            (text, child)
        })
        .collect();
    crate::util::wait_until(
        "every sender has spooled its message",
        std::time::Duration::from_secs(30),
        || files_in(&spool, ".json").len() == SENDERS,
        || format!("spool: {:?}", files_in(&spool, "")),
    );
    drop(held);

    let mut acked = Vec::new();
    let mut died = 0;
    for (text, child) in children {
        let out = child.wait_with_output().expect("wait for swarm send");
        if out.status.success() {
            acked.push(text);
        } else {
            use std::os::unix::process::ExitStatusExt;
            assert_eq!(
                out.status.signal(),
                Some(6),
                "{text} failed without being killed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            died += 1;
        }
    }
    assert!(
        marker.exists(),
        "the fault never fired: the test proved nothing"
    );
    assert_eq!(died, 1, "exactly the faulty holder died");

    let v = s.read_json("teams/gc/inboxes/bob.json");
    let texts: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    for t in &acked {
        assert!(
            texts.contains(&t.as_str()),
            "acknowledged {t} missing: {texts:?}"
        );
    }
    let distinct: HashSet<_> = texts.iter().collect();
    assert_eq!(distinct.len(), texts.len(), "duplicated: {texts:?}");
    // The dead holder had claimed every queued entry, its own included, so
    // the next holder delivers all of them.
    assert_eq!(texts.len(), SENDERS, "{texts:?}");
    assert_eq!(files_in(&spool, ""), Vec::<String>::new(), "spool settled");
    assert_eq!(
        files_in(&s.path("teams/gc/inboxes"), ".tmp."),
        Vec::<String>::new(),
        "temp files cleaned up"
    );
    // And the inbox is still writable.
    s.ok(&["send", "--team", "gc", "--to", "bob", "after"]);
}

#[test]
fn a_holder_killed_after_claiming_the_queue_loses_and_duplicates_nothing() {
    a_holder_dying_mid_merge("claimed");
}

#[test]
fn a_holder_killed_after_its_commit_before_clean_up_duplicates_nothing() {
    a_holder_dying_mid_merge("committed");
}
