//! The state root under hostile conditions: a full disk, links and open
//! permissions planted inside it, a holder suspended while it holds a lock,
//! a huge inbox. Each test is named after the failure it pins.

use crate::util::{Sandbox, wait_until};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// A small tmpfs mounted for one test (needs the privilege to mount; where
/// there is none the test says SKIP, or fails if `SWARM_REQUIRE_MOUNT=1`).
/// Unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str, test: &str) -> Option<Tmpfs> {
        let dir = tempfile::Builder::new()
            .prefix("swarm-tmpfs-")
            .tempdir()
            .expect("tempdir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={size},mode=0700"))
            .arg("tmpfs")
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            other => {
                let why = match other {
                    Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
                    Err(e) => e.to_string(),
                };
                if std::env::var_os("SWARM_REQUIRE_MOUNT").is_some_and(|v| v == "1") {
                    panic!("{test}: cannot mount a tmpfs: {why}");
                }
                eprintln!("SKIP {test}: cannot mount a tmpfs ({why})");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the filesystem: a file grown until the disk refuses more.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let p = self.path().join("filler");
        let mut f = std::fs::File::create(&p).expect("create filler");
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        p
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Every `*.lock` directory under `dir`.
fn lock_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                if p.extension().is_some_and(|x| x == "lock") {
                    out.push(p.clone());
                }
                todo.push(p);
            }
        }
    }
    out
}

#[test]
fn a_full_disk_leaves_no_lock_directory_and_no_half_created_team() {
    let Some(fs) = Tmpfs::mount("256k", "a_full_disk_leaves_no_lock_directory") else {
        return;
    };
    let s = Sandbox::new();
    let root = fs.path().join("root");
    let swarm = |args: &[&str]| {
        let mut c = s.cmd(args);
        c.env("SWARM_HOME", &root);
        crate::util::Run::of(c, args)
    };
    swarm(&["team", "create", "full"]).assert_code(0);
    swarm(&["send", "--team", "full", "--to", "team-lead", "before"]).assert_code(0);
    let filler = fs.fill();
    // No time to wait for the inbox lock: a send that found a lock
    // directory left behind would fail with "timed out", not with the
    // disk's error.
    let send_at_once = |text: &str| {
        let args = ["send", "--team", "full", "--to", "team-lead", text];
        let mut c = s.cmd(&args);
        c.env("SWARM_HOME", &root)
            .env("SWARM_FAULT_LOCK_TIMEOUT_MS", "0");
        crate::util::Run::of(c, &args)
    };

    for attempt in ["first", "second"] {
        let r = send_at_once(attempt);
        r.assert_code(2);
        assert!(
            r.stderr.contains("No space left") && !r.stderr.contains("timed out"),
            "the {attempt} send on a full disk fails with the disk's error, not \
             after waiting for a lock directory an earlier command left\n{}",
            r.explain()
        );
        assert_eq!(
            lock_dirs(&root),
            Vec::<PathBuf>::new(),
            "after the {attempt} send"
        );
    }
    let r = swarm(&["team", "create", "never"]);
    r.assert_code(2);
    for gone in ["teams/never", "tasks/never"] {
        assert!(
            !root.join(gone).exists(),
            "{gone} outlived a failed creation"
        );
    }
    assert_eq!(lock_dirs(&root), Vec::<PathBuf>::new());

    std::fs::remove_file(filler).unwrap();
    send_at_once("after").assert_code(0);
    let inbox = std::fs::read(root.join("teams/full/inboxes/team-lead.json")).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&inbox).unwrap();
    let texts: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["before", "after"]);
}

/// The texts of an inbox file, in order.
fn texts(inbox: &Path) -> Vec<String> {
    let bytes = std::fs::read(inbox).unwrap_or_else(|e| panic!("{}: {e}", inbox.display()));
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect()
}

// ---- links and open directories ----

#[test]
fn a_symlinked_inboxes_directory_is_refused_and_nothing_lands_where_it_points() {
    let s = Sandbox::new();
    s.team_with("t", &["bob"]);
    let elsewhere = tempfile::tempdir().unwrap();
    let inboxes = s.path("teams/t/inboxes");
    std::fs::remove_dir_all(&inboxes).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), &inboxes).unwrap();
    s.run(&["send", "--team", "t", "--to", "bob", "hi"])
        .assert_error(&format!("{} is a symbolic link", inboxes.display()));
    let landed: Vec<_> = std::fs::read_dir(elsewhere.path())
        .unwrap()
        .flatten()
        .collect();
    assert!(landed.is_empty(), "written through the link: {landed:?}");
}

#[test]
fn a_symlink_planted_as_a_lock_sidecar_never_truncates_its_target() {
    let s = Sandbox::new();
    s.team_with("t", &["bob"]);
    s.ok(&["send", "--team", "t", "--to", "bob", "first"]);
    let precious = s.path("precious");
    std::fs::write(&precious, b"twenty-four bytes here!\n").unwrap();
    let sidecar = s.path("teams/t/inboxes/bob.json.lock.flock");
    std::fs::remove_file(&sidecar).unwrap();
    std::os::unix::fs::symlink(&precious, &sidecar).unwrap();
    s.run(&["send", "--team", "t", "--to", "bob", "second"])
        .assert_error(&format!("{} is a symbolic link", sidecar.display()));
    assert_eq!(
        std::fs::read(&precious).unwrap(),
        b"twenty-four bytes here!\n"
    );
    // A dangling one creates nothing outside the root.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("created");
    std::fs::remove_file(&sidecar).unwrap();
    std::os::unix::fs::symlink(&target, &sidecar).unwrap();
    s.run(&["send", "--team", "t", "--to", "bob", "third"])
        .assert_code(2);
    assert!(
        !target.exists(),
        "a file was created through a dangling link"
    );
    assert_eq!(texts(&s.path("teams/t/inboxes/bob.json")), ["first"]);
}

#[test]
fn a_state_root_that_is_itself_a_link_is_followed_once() {
    let s = Sandbox::new();
    let real = s.path("real-root");
    std::fs::create_dir(&real).unwrap();
    let link = s.path("linked-root");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let swarm = |args: &[&str]| {
        let mut c = s.cmd(args);
        c.env("SWARM_HOME", &link);
        crate::util::Run::of(c, args)
    };
    swarm(&["team", "create", "t"]).assert_code(0);
    swarm(&["send", "--team", "t", "--to", "team-lead", "via the link"]).assert_code(0);
    assert_eq!(
        texts(&real.join("teams/t/inboxes/team-lead.json")),
        ["via the link"]
    );
}

#[test]
fn a_team_directory_others_can_write_is_refused_with_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let s = Sandbox::new();
    s.team_with("t", &["bob"]);
    let team_dir = s.path("teams/t");
    std::fs::set_permissions(&team_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    s.run(&["send", "--team", "t", "--to", "bob", "hi"])
        .assert_error(&format!("fix: chmod 700 {}", team_dir.display()));
    let root = swarm::paths::Root::new(s.root());
    let listed: Vec<String> = root.problems().iter().map(|p| p.to_string()).collect();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(
        listed[0].contains(&team_dir.display().to_string()),
        "{listed:?}"
    );
    // `swarm doctor` says so too (it said "no problems found").
    let doctor = s.ok(&["doctor"]);
    assert!(
        doctor.stdout.contains(&format!("problem: {}", listed[0])),
        "{}",
        doctor.explain()
    );
    assert!(!doctor.stdout.contains("no problems found"));
    std::fs::set_permissions(&team_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    s.ok(&["send", "--team", "t", "--to", "bob", "hi"]);
    assert!(root.problems().is_empty());
}

// ---- suspended holders ----

/// A `swarm` child that the test may stop and continue; killed on drop so a
/// failing test never leaves a stopped process holding a lock.
struct Proc {
    child: Option<Child>,
    what: String,
}

impl Proc {
    fn spawn(mut cmd: Command, what: &str) -> Proc {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn swarm");
        Proc {
            child: Some(child),
            what: what.to_owned(),
        }
    }

    fn pid(&self) -> i32 {
        self.child.as_ref().expect("running").id() as i32
    }

    /// The process state letter of `/proc/<pid>/stat` (`T`: stopped).
    fn state(&self) -> char {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        stat.rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next())
            .unwrap_or('?')
    }

    fn wait_stopped(&self) {
        wait_until(
            &format!("{} stops itself", self.what),
            Duration::from_secs(30),
            || self.state() == 'T',
            || format!("state {}", self.state()),
        );
    }

    fn resume(&self) {
        // SAFETY: kill has no memory-safety preconditions; the pid is our
        // own child's, not yet waited for.
        assert_eq!(unsafe { libc::kill(self.pid(), libc::SIGCONT) }, 0);
    }

    fn finish(mut self) -> crate::util::Run {
        let out = self
            .child
            .take()
            .expect("running")
            .wait_with_output()
            .expect("wait for swarm");
        crate::util::Run {
            argv: vec![self.what.clone()],
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Waits at most `timeout` for the process to exit.
    fn finish_within(self, timeout: Duration) -> crate::util::Run {
        let start = Instant::now();
        let pid = self.pid();
        wait_until(
            &format!("{} answers", self.what),
            timeout,
            || {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                stat.rsplit_once(") ")
                    .is_some_and(|(_, r)| r.starts_with('Z'))
            },
            || format!("still running after {:?}", start.elapsed()),
        );
        self.finish()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Appends one entry the way Claude Code 2.1.328 does (reference §5.1,
/// §5.2): `mkdir <inbox>.lock`; on EEXIST, a lock directory whose mtime is
/// older than `stale_after` is broken (`rmdir`, and `mkdir` again at once),
/// a younger one waited for (5 → 100 ms); then re-read, push, write
/// `<inbox>.tmp.<8 hex>` and rename it over the inbox; `rmdir` the lock.
/// Claude Code's window is 10 s; a test passes less to stand for a holder
/// that has been stopped for longer than that.
fn claude_code_append(inbox: &Path, text: &str, stale_after: Duration) {
    let lock = PathBuf::from(format!("{}.lock", inbox.display()));
    let deadline = crate::util::timeouts::Deadline::after(crate::util::WAIT);
    let mut pause = Duration::from_millis(5);
    loop {
        match std::fs::create_dir(&lock) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let age = std::fs::metadata(&lock)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| SystemTime::now().duration_since(t).ok())
                    .unwrap_or_default();
                if age > stale_after {
                    let _ = std::fs::remove_dir(&lock);
                    continue;
                }
            }
            Err(e) => panic!("claude code cannot lock {}: {e}", lock.display()),
        }
        assert!(
            !deadline.passed(),
            "claude code never got the lock within {deadline}"
        );
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
    let mut entries: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(inbox).unwrap()).unwrap();
    entries.push(serde_json::json!({
        "from": "claude", "text": text, "timestamp": "2026-11-30T07:14:23.941Z",
        "msgV": 1, "msg_id": uuid::Uuid::new_v4().to_string(), "type": "message", "read": false
    }));
    let tmp = PathBuf::from(format!("{}.tmp.0badc0de", inbox.display()));
    std::fs::write(&tmp, serde_json::to_vec_pretty(&entries).unwrap()).unwrap();
    std::fs::rename(&tmp, inbox).unwrap();
    std::fs::remove_dir(&lock).unwrap();
}

#[test]
fn a_holder_stopped_past_the_stale_rule_never_overwrites_what_claude_code_appended() {
    let s = Sandbox::new();
    s.team_with("cc", &["bob"]);
    s.ok(&["send", "--team", "cc", "--to", "bob", "before"]);
    let inbox = s.path("teams/cc/inboxes/bob.json");
    let marker = s.path("fault-fired");
    let mut cmd = s.cmd(&["send", "--team", "cc", "--to", "bob", "from swarm"]);
    cmd.env("SWARM_FAULT", format!("stop-written:{}", marker.display()));
    let holder = Proc::spawn(cmd, "swarm send, stopped holding the inbox lock");
    holder.wait_stopped();
    // Its refresher is stopped too, so the lock ages; Claude Code breaks
    // it (here at 200 ms instead of 10 s) and appends.
    claude_code_append(&inbox, "from claude code", Duration::from_millis(200));
    holder.resume();
    holder.finish().assert_code(0);
    assert_eq!(
        texts(&inbox),
        ["before", "from claude code", "from swarm"],
        "every acknowledged message is in the inbox"
    );
    assert!(
        marker.exists(),
        "the fault never fired: the test proved nothing"
    );
    assert_eq!(lock_dirs(s.root()), Vec::<PathBuf>::new());
}

#[test]
fn a_sender_whose_message_a_stopped_holder_claimed_answers_by_its_deadline() {
    const DEADLINE_MS: u64 = 2000;
    let s = Sandbox::new();
    s.team_with("gc", &["bob"]);
    let inbox = s.path("teams/gc/inboxes/bob.json");
    let spool = s.path("swarm/gc/spool/bob");
    let marker = s.path("fault-fired");
    let spooled = || {
        std::fs::read_dir(&spool)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .count()
            })
            .unwrap_or(0)
    };
    s.ok(&["send", "--team", "gc", "--to", "bob", "before"]);
    // Both senders queue behind a held lock; whichever becomes the holder
    // first stops itself right after claiming the other's message.
    let held = swarm::atomic_file::FileLock::acquire(&inbox, Duration::from_secs(5)).unwrap();
    let procs: Vec<Proc> = ["one", "two"]
        .iter()
        .map(|text| {
            let mut cmd = s.cmd(&["send", "--team", "gc", "--to", "bob", text]);
            cmd.env("SWARM_FAULT", format!("stop-claimed:{}", marker.display()))
                .env("SWARM_FAULT_LOCK_TIMEOUT_MS", DEADLINE_MS.to_string());
            Proc::spawn(cmd, &format!("swarm send {text}"))
        })
        .collect();
    wait_until(
        "both senders have spooled their message",
        Duration::from_secs(30),
        || spooled() == 2,
        || format!("{} spooled", spooled()),
    );
    drop(held);
    wait_until(
        "one sender became the holder and stopped",
        Duration::from_secs(30),
        || procs.iter().any(|p| p.state() == 'T'),
        String::new,
    );
    let (mut stopped, mut waiting): (Vec<Proc>, Vec<Proc>) =
        procs.into_iter().partition(|p| p.state() == 'T');
    let (stopped, waiting) = (stopped.remove(0), waiting.remove(0));
    // The holder stays stopped until the other has answered: nothing but
    // that sender's own deadline can end its wait.
    let answer = waiting.finish_within(Duration::from_millis(DEADLINE_MS) * 5);
    // Its own exit code (3): not failed, not delivered yet; do not resend.
    answer.assert_code(3);
    assert!(
        answer.stderr.contains("still pending in the spool") && answer.stderr.lines().count() == 1,
        "{}",
        answer.explain()
    );
    // Nothing lost, nothing twice: once resumed, the holder delivers both.
    stopped.resume();
    stopped.finish().assert_code(0);
    let mut got = texts(&inbox);
    got.sort();
    assert_eq!(got, ["before", "one", "two"]);
}

/// Issue 24, item 7: with one inbox's lock held (by a stopped process, or
/// here by the test), `swarm send --to '*'` waited its whole deadline, then
/// exited 2 naming that one only: the member before it got the message,
/// the one after never did, and the output said neither. Every other
/// inbox gets it, each is said, and the one left out is named.
#[test]
fn a_broadcast_reaches_every_inbox_it_can_and_names_the_one_it_could_not() {
    const DEADLINE_MS: u64 = 1500;
    let s = Sandbox::new();
    s.team_with("gc", &["ann", "bob", "cat"]);
    let inbox = |m: &str| s.path(&format!("teams/gc/inboxes/{m}.json"));
    s.ok(&["send", "--team", "gc", "--to", "bob", "before"]);
    let held =
        swarm::atomic_file::FileLock::acquire(&inbox("bob"), Duration::from_secs(5)).unwrap();
    let mut cmd = s.cmd(&["send", "--team", "gc", "--to", "*", "standup"]);
    cmd.env("SWARM_FAULT_LOCK_TIMEOUT_MS", DEADLINE_MS.to_string());
    let r = crate::util::Run::of(cmd, &["send", "--to", "*"]);
    drop(held);
    r.assert_code(2);
    for m in ["ann", "cat"] {
        assert_eq!(texts(&inbox(m)), ["standup"], "{m} got it\n{}", r.explain());
        assert!(
            r.stdout.contains(&format!("sent to {m} (")),
            "{}",
            r.explain()
        );
    }
    assert_eq!(texts(&inbox("bob")), ["before"], "bob did not");
    assert!(!r.stdout.contains("sent to bob"), "{}", r.explain());
    assert_eq!(r.stderr.lines().count(), 1, "one line\n{}", r.explain());
    assert!(
        r.stderr
            .contains("the broadcast reached ann, cat; bob: failed (not sent)"),
        "{}",
        r.explain()
    );
}

// ---- a huge inbox ----

/// Writes an inbox of `n` entries as Claude Code lays them out, about 150
/// bytes each (100 000 make the 15 MB inbox of the report).
fn write_huge_inbox(inbox: &Path, n: usize) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(inbox).unwrap());
    for i in 0..n {
        let sep = if i == 0 { "[\n" } else { ",\n" };
        write!(
            out,
            "{sep}  {{\n    \"from\": \"bob\",\n    \"text\": \"message {i:06}\",\n    \
             \"timestamp\": \"2026-11-30T07:14:23.941Z\",\n    \"msgV\": 1,\n    \
             \"type\": \"message\",\n    \"read\": false\n  }}"
        )
        .unwrap();
    }
    out.write_all(b"\n]").unwrap();
    out.flush().unwrap();
}

/// Runs `argv` with exactly the environment `env` and returns whether it
/// succeeded and its peak resident set size in MB. Measured by a helper
/// process (this test binary, running [`helper_measure_peak_rss`]) rather
/// than here: a child's `ru_maxrss` counts the memory of whichever process
/// it was spawned from, up to its `exec`, and this one has held many
/// tests' worth.
fn peak_rss_mb(argv: &[&std::ffi::OsStr], env: &[(&str, &std::ffi::OsStr)]) -> (bool, u64) {
    let lossy = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    let argv: Vec<String> = argv.iter().map(|a| lossy(a)).collect();
    let env: std::collections::BTreeMap<&str, String> =
        env.iter().map(|(k, v)| (*k, lossy(v))).collect();
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "state_safety::helper_measure_peak_rss"])
        .args(["--ignored", "--test-threads=1", "--nocapture"])
        .env("SWARM_MEASURE_ARGV", serde_json::to_string(&argv).unwrap())
        .env("SWARM_MEASURE_ENV", serde_json::to_string(&env).unwrap())
        .output()
        .expect("run the measuring helper");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // libtest prints the test's name on the same line, before it.
    let mut said = stdout
        .split_once("peak-rss-kb ")
        .unwrap_or_else(|| panic!("the helper measured nothing: {stdout}"))
        .1
        .split_whitespace();
    let kb: u64 = said.next().and_then(|n| n.parse().ok()).expect("a figure");
    (said.next() == Some("ok"), kb / 1024)
}

/// The measuring process of [`peak_rss_mb`]: runs the command it is given
/// and prints `peak-rss-kb <N> ok|failed` for it.
#[test]
#[ignore = "a helper process of peak_rss_mb"]
fn helper_measure_peak_rss() {
    let argv: Vec<String> =
        serde_json::from_str(&std::env::var("SWARM_MEASURE_ARGV").expect("run by peak_rss_mb"))
            .unwrap();
    let env: std::collections::BTreeMap<String, String> =
        serde_json::from_str(&std::env::var("SWARM_MEASURE_ENV").unwrap()).unwrap();
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait4 below, which std cannot see"
    )]
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of a plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our child's, not yet waited for; both pointers
    // are valid for the call.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4");
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    println!(
        "peak-rss-kb {} {}",
        usage.ru_maxrss,
        if ok { "ok" } else { "failed" }
    );
}

/// The lead's way through its inbox (read, keep the unread, consume them by
/// identity), run by [`a_huge_inbox_is_read_and_consumed_in_bounded_memory`]
/// in a child process of its own so that its peak memory can be measured.
#[test]
#[ignore = "a child process of a_huge_inbox_is_read_and_consumed_in_bounded_memory"]
fn probe_the_lead_consuming_a_huge_inbox() {
    let home = std::env::var_os("SWARM_MEMORY_PROBE_HOME").expect("run by the memory test");
    let mailbox = swarm::mailbox::Mailbox::new(&swarm::paths::Root::new(home), "huge");
    let read = mailbox.read("team-lead").unwrap();
    let fresh: Vec<swarm::mailbox::Entry> = read
        .entries
        .into_iter()
        .filter(swarm::mailbox::Entry::is_unread)
        .collect();
    let keys: Vec<_> = fresh.iter().map(swarm::mailbox::Entry::key).collect();
    assert_eq!(mailbox.consume("team-lead", &keys).unwrap(), fresh.len());
}

#[test]
fn a_huge_inbox_is_read_and_consumed_in_bounded_memory() {
    const ENTRIES: usize = 100_000;
    let _heavy = crate::util::heavy();
    let s = Sandbox::new();
    s.team_with("huge", &[]);
    let inbox = s.path("teams/huge/inboxes/team-lead.json");

    write_huge_inbox(&inbox, ENTRIES);
    let mb = std::fs::metadata(&inbox).unwrap().len() / 1_000_000;
    let me = std::env::current_exe().unwrap();
    let (ok, peak) = peak_rss_mb(
        &[
            me.as_os_str(),
            "--exact".as_ref(),
            "state_safety::probe_the_lead_consuming_a_huge_inbox".as_ref(),
            "--ignored".as_ref(),
        ],
        &[("SWARM_MEMORY_PROBE_HOME", s.root().as_os_str())],
    );
    assert!(
        ok,
        "the probe failed: run it with --ignored --nocapture to see why"
    );
    eprintln!("the lead's consumption of {mb} MB peaked at {peak} MB");
    assert_eq!(texts(&inbox), Vec::<String>::new(), "every entry consumed");
    assert!(
        peak < 100,
        "consuming a {ENTRIES}-entry ({mb} MB) inbox as the lead does peaked at {peak} MB"
    );
    let history = s.read_json("swarm/huge/history/team-lead.json");
    assert_eq!(
        history.as_array().unwrap().len(),
        1000,
        "the newest 1000 kept"
    );
    assert_eq!(
        history[999]["text"],
        format!("message {:06}", ENTRIES - 1),
        "the newest last"
    );

    // The real binary, showing and consuming it. Its own copies of the
    // entries (commands/inbox.rs) add to the mailbox's share.
    write_huge_inbox(&inbox, ENTRIES);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let (ok, peak) = peak_rss_mb(
        &[
            crate::util::swarm_bin().as_ref(),
            "inbox".as_ref(),
            "--team".as_ref(),
            "huge".as_ref(),
            "--mark-read".as_ref(),
            "team-lead".as_ref(),
        ],
        &[
            ("SWARM_HOME", s.root().as_os_str()),
            ("HOME", s.root().as_os_str()),
            ("PATH", &path),
        ],
    );
    assert!(ok, "swarm inbox --mark-read failed");
    eprintln!("swarm inbox --mark-read of {mb} MB peaked at {peak} MB");
    assert_eq!(texts(&inbox), Vec::<String>::new(), "every entry consumed");
    assert!(
        peak < 160,
        "swarm inbox --mark-read of {mb} MB peaked at {peak} MB"
    );
}

// ---- fault injection ----

/// The fault hooks (`SWARM_FAULT`) exist in test builds only. Building the
/// release binary takes minutes, so this runs on request:
/// `cargo test --test integration -- --ignored a_release_binary`.
#[test]
#[ignore = "builds the release binary (minutes); run with --ignored"]
fn a_release_binary_never_reads_swarm_fault() {
    let contains = |bin: &Path, needle: &[u8]| {
        let bytes = std::fs::read(bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        bytes.windows(needle.len()).any(|w| w == needle)
    };
    assert!(
        contains(Path::new(crate::util::swarm_bin()), b"SWARM_FAULT"),
        "the test binary has the hooks the other tests rely on"
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--bin",
            "swarm",
            "--message-format=short",
        ])
        .current_dir(manifest)
        .status()
        .expect("run cargo");
    assert!(built.success(), "cargo build --release failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target"));
    let release = target.join("release/swarm");
    assert!(
        !contains(&release, b"SWARM_FAULT"),
        "{} reads SWARM_FAULT",
        release.display()
    );
}

#[test]
fn state_that_does_not_read_is_one_warning_line_never_an_empty_value() {
    let sb = Sandbox::new();
    sb.team_with("t", &["alice"]);
    // The lead's history and the session record: directories where their
    // files go, so reading either fails.
    std::fs::create_dir_all(sb.path("swarm/t/history/team-lead.json/x")).unwrap();
    std::fs::create_dir_all(sb.path("swarm/t/session.json/x")).unwrap();
    let status = sb.ok(&["status", "--team", "t"]);
    for said in [
        "swarm: warning: cannot tell who waits for approval (",
        "swarm: warning: reading ",
    ] {
        assert!(status.stderr.contains(said), "{}", status.explain());
    }
    assert!(
        status
            .stderr
            .contains("history/team-lead.json: Is a directory")
            && status.stderr.contains("session.json: Is a directory"),
        "each warning names the file and the error\n{}",
        status.explain()
    );

    // A teams directory that cannot be listed: a problem, not "no teams".
    std::fs::remove_dir_all(sb.path("teams")).unwrap();
    std::fs::write(sb.path("teams"), "").unwrap();
    let doctor = sb.ok(&["doctor"]);
    assert!(
        doctor.stdout.contains("problem: cannot list the teams in "),
        "{}",
        doctor.explain()
    );
}
