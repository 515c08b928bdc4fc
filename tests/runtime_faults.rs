//! Faults a teammate runtime must survive, or report and settle, end to end:
//! real `swarm teammate` processes on a private root, the lead played by the
//! test through the library, fake CLIs from `tests/agents/` on `PATH`.
//!
//! Each test is named after the bug it pins (issue 11): a runtime that died
//! on the first transient error, a unit re-run silently after a respawn, a
//! prompt too long for argv that killed the teammate and lost its messages.

use crate::util::live::swarm_exe;
use crate::util::{Sandbox, wait_until};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use swarm::agents::{Preset, exec};
use swarm::mailbox::{Entry, MAX_TEXT_BYTES};
use swarm::tasks::{NewTask, Status, Task};
use swarm::team::{Member, SwarmField, Team};

const T: &str = "t";
const WAIT: Duration = Duration::from_secs(30);

/// Runtimes started by a test, each with its pane output in a file; killed
/// (SIGKILL) when the test ends.
struct Runtimes<'a> {
    sb: &'a Sandbox,
    started: Vec<(String, Child, PathBuf)>,
    /// Directory put first on every runtime's `PATH` (fake CLIs).
    bin: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl<'a> Runtimes<'a> {
    fn new(sb: &'a Sandbox) -> Self {
        Runtimes {
            sb,
            started: Vec::new(),
            bin: None,
            env: Vec::new(),
        }
    }

    /// Starts `swarm teammate --name NAME` (again, if it ran before).
    fn start(&mut self, name: &str) {
        let out = self
            .sb
            .path(&format!("pane-{name}-{}.txt", self.started.len()));
        let pane = std::fs::File::create(&out).expect("pane file");
        let mut cmd: Command = self.sb.cmd(&["teammate", "--name", name]);
        cmd.env("SWARM_TEAM", T)
            .stdout(pane.try_clone().expect("pane file"))
            .stderr(Stdio::from(pane));
        if let Some(dir) = &self.bin {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = std::iter::once(dir.clone()).chain(std::env::split_paths(&path));
            cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("starting swarm teammate");
        self.started.push((name.into(), child, out));
    }

    fn latest(&mut self, name: &str) -> &mut Child {
        self.started
            .iter_mut()
            .rev()
            .find(|(n, _, _)| n == name)
            .map(|(_, c, _)| c)
            .expect("started")
    }

    fn is_running(&mut self, name: &str) -> bool {
        matches!(self.latest(name).try_wait(), Ok(None))
    }

    /// SIGKILL to `name`'s latest runtime (its agent lives on), reaped.
    fn kill_9(&mut self, name: &str) {
        let c = self.latest(name);
        c.kill().expect("kill -9 the runtime");
        c.wait().expect("reap the runtime");
    }

    /// The exit code of `name`'s latest runtime, once it has exited.
    fn wait_exit(&mut self, name: &str) -> Option<i32> {
        let explain = self.explain();
        let mut code = None;
        let c = self.latest(name);
        wait_until(
            &format!("{name}'s runtime exits"),
            WAIT,
            || match c.try_wait() {
                Ok(Some(s)) => {
                    code = Some(s.code());
                    true
                }
                _ => false,
            },
            || explain.clone(),
        );
        code.flatten()
    }

    fn explain(&self) -> String {
        let mut s = String::new();
        for (n, _, p) in &self.started {
            s += &format!(
                "--- pane {n} ({}) ---\n{}\n",
                p.display(),
                std::fs::read_to_string(p).unwrap_or_default()
            );
        }
        let mut logged: Vec<&str> = self.started.iter().map(|(n, _, _)| n.as_str()).collect();
        logged.dedup();
        for n in logged {
            let log = self.sb.path(&format!("swarm/{T}/logs/teammate-{n}.log"));
            let text = std::fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            s += &format!("--- log {n} (tail) ---\n");
            for l in tail.into_iter().rev() {
                s += l;
                s.push('\n');
            }
            s += &format!("--- {n}'s inbox ---\n{}\n", brief(&inbox(self.sb, n)));
        }
        s += &format!(
            "--- team-lead's inbox ---\n{}\n",
            brief(&inbox(self.sb, "team-lead"))
        );
        let t = team(self.sb);
        s += &format!(
            "--- tasks ---\n{}\n",
            serde_json::to_string_pretty(&t.tasks().list().map(|l| l.tasks).unwrap_or_default())
                .unwrap_or_default()
        );
        s
    }
}

impl Drop for Runtimes<'_> {
    fn drop(&mut self) {
        for (_, c, _) in &mut self.started {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Entries shown one a line, long texts cut.
fn brief(entries: &[Entry]) -> String {
    entries
        .iter()
        .map(|e| {
            let text: String = e.text.chars().take(300).collect();
            format!(
                "{} → {:?}{}\n",
                e.from,
                text,
                if e.text.len() > 300 { "…" } else { "" }
            )
        })
        .collect()
}

fn team(sb: &Sandbox) -> Team {
    Team::new(&swarm::paths::Root::new(sb.root()), T)
}

/// Team `t` with these teammates, each adjusted by `f`.
fn team_of(sb: &Sandbox, members: &[&str], f: impl Fn(&mut Member)) -> Team {
    sb.team_with(T, members);
    let t = team(sb);
    for m in members {
        t.roster().update_member(m, &f).expect("update member");
    }
    t
}

fn inbox(sb: &Sandbox, member: &str) -> Vec<Entry> {
    team(sb)
        .mailbox()
        .read(member)
        .map(|r| r.entries)
        .unwrap_or_default()
}

/// Plain messages `from` left in `member`'s inbox.
fn plain(sb: &Sandbox, member: &str, from: &str) -> Vec<Entry> {
    inbox(sb, member)
        .into_iter()
        .filter(|e| e.from == from && e.protocol().is_none())
        .collect()
}

fn frames(sb: &Sandbox, member: &str, kind: &str) -> Vec<Value> {
    inbox(sb, member)
        .iter()
        .filter_map(|e| e.protocol())
        .filter(|m| m.kind() == kind)
        .map(|m| serde_json::to_value(m).expect("frame"))
        .collect()
}

fn lead_says(t: &Team, to: &str, text: &str) {
    t.send_text("team-lead", to, text, None, false)
        .expect("the lead's send");
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A shell command that appends `word` to `marker`, writes its pid to
/// `pid_file` and then runs for a minute (until the test kills it).
fn long_command(word: &str, marker: &Path, pid_file: &Path) -> String {
    format!(
        "echo {word} >> '{}'; echo $$ > '{}'; exec sleep 60",
        marker.display(),
        pid_file.display()
    )
}

/// Waits for the agent to write its pid, then SIGKILLs `name`'s runtime
/// and then the agent (which outlives its runtime), as a crash of the
/// runtime's pane would leave things.
fn kill_runtime_mid_unit(rt: &mut Runtimes, name: &str, pid_file: &Path) {
    let mut pid = String::new();
    wait_until(
        &format!("{name}'s agent is running the unit"),
        WAIT,
        || {
            pid = std::fs::read_to_string(pid_file).unwrap_or_default();
            pid.ends_with('\n')
        },
        || rt.explain(),
    );
    rt.kill_9(name);
    let killed = Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .expect("kill the agent");
    assert!(killed.success(), "the agent {pid:?} was running");
}

/// The lead's plain messages from `from` whose text contains `needle`.
fn lead_heard(sb: &Sandbox, from: &str, needle: &str) -> Vec<String> {
    plain(sb, "team-lead", from)
        .into_iter()
        .map(|e| e.text)
        .filter(|t| t.contains(needle))
        .collect()
}

/// A task whose unit runs `command` (its `command` metadata).
fn command_task(t: &Team, subject: &str, command: String) -> Task {
    let mut md = serde_json::Map::new();
    md.insert("command".into(), json!(command));
    t.tasks()
        .create(NewTask {
            subject: subject.into(),
            metadata: Some(md),
            ..NewTask::default()
        })
        .expect("create task")
}

/// Waits for alice's new runtime to tell the lead that `task` was
/// interrupted; insists it is pending and still alice's (so nobody re-runs
/// it blindly) and returns it.
fn reported_interrupted(sb: &Sandbox, t: &Team, rt: &Runtimes, task: &Task) -> Task {
    let report = format!(
        "alice: interrupted while running task {} ({}); not re-run",
        task.id, task.subject
    );
    wait_until(
        "the lead hears the task was interrupted",
        WAIT,
        || !lead_heard(sb, "alice", &report).is_empty(),
        || rt.explain(),
    );
    let after = t.tasks().get(&task.id).unwrap().unwrap();
    assert_eq!(
        (after.status, after.owner.as_deref()),
        (Status::Pending, Some("alice")),
        "pending and still assigned, so nobody re-runs it blindly\n{}",
        rt.explain()
    );
    after
}

#[test]
fn a_message_running_when_its_runtime_is_killed_is_reported_interrupted_and_not_run_again() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let (marker, pid) = (sb.path("ran.txt"), sb.path("agent.pid"));
    t.send_text(
        "team-lead",
        "alice",
        &long_command("first", &marker, &pid),
        Some("the long one"),
        false,
    )
    .unwrap();
    let mut rt = Runtimes::new(&sb);
    rt.start("alice");
    kill_runtime_mid_unit(&mut rt, "alice", &pid);
    rt.start("alice");
    let report =
        "alice: interrupted while running message from team-lead: the long one; not re-run";
    wait_until(
        "the lead hears the message was interrupted",
        WAIT,
        || !lead_heard(&sb, "alice", report).is_empty(),
        || rt.explain(),
    );
    wait_until(
        "the interrupted message is settled, not left to run again",
        WAIT,
        || plain(&sb, "alice", "team-lead").is_empty(),
        || rt.explain(),
    );
    assert!(
        t.mailbox()
            .history("alice")
            .unwrap()
            .iter()
            .any(|e| e.text.contains("echo first")),
        "it is in alice's history"
    );
    lead_says(
        &t,
        "alice",
        &format!("echo second >> '{}'", marker.display()),
    );
    wait_until(
        "the next message is run",
        WAIT,
        || lines_of(&marker).len() >= 2,
        || rt.explain(),
    );
    assert_eq!(
        lines_of(&marker),
        ["first", "second"],
        "the interrupted message ran once\n{}",
        rt.explain()
    );
    assert_eq!(lead_heard(&sb, "alice", "interrupted").len(), 1);
    assert!(rt.is_running("alice"), "{}", rt.explain());
}

#[test]
fn a_task_running_when_its_runtime_is_killed_is_reported_interrupted_and_not_run_again() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let (marker, pid) = (sb.path("ran.txt"), sb.path("agent.pid"));
    let long = command_task(&t, "long job", long_command("first", &marker, &pid));
    let mut rt = Runtimes::new(&sb);
    rt.start("alice");
    kill_runtime_mid_unit(&mut rt, "alice", &pid);
    rt.start("alice");
    let after = reported_interrupted(&sb, &t, &rt, &long);
    let md = after.metadata.clone().unwrap_or_default();
    assert_eq!(md.get("interrupted"), Some(&json!(true)), "{md:?}");
    let next = command_task(
        &t,
        "next job",
        format!("echo second >> '{}'", marker.display()),
    );
    wait_until(
        "the next task is done",
        WAIT,
        || t.tasks().get(&next.id).unwrap().unwrap().status == Status::Completed,
        || rt.explain(),
    );
    assert_eq!(
        lines_of(&marker),
        ["first", "second"],
        "the interrupted task ran once\n{}",
        rt.explain()
    );
}

/// Kills the tmux server under a team (or closes a pane): the runtime is
/// hung up and ends its agent on the way out. Its agent's end is its own
/// ending, not a crash: the task it was running stays its own (a resumed
/// teammate finds its claim; `up --resume` lost carol's task this way) and
/// the next runtime reports it interrupted. The runtime's death is held
/// off (`SWARM_FAULT_ENDING_DELAY_MS`) so that a runtime taking its
/// agent's end for a crash always has the time to hand the task back.
#[test]
fn a_task_running_when_its_runtime_is_hung_up_stays_its_own_and_is_reported_interrupted() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let (marker, pid) = (sb.path("ran.txt"), sb.path("agent.pid"));
    let long = command_task(&t, "long job", long_command("first", &marker, &pid));
    let mut rt = Runtimes::new(&sb);
    rt.env
        .push(("SWARM_FAULT_ENDING_DELAY_MS".into(), "2000".into()));
    rt.start("alice");
    wait_until(
        "alice's agent is running the task",
        WAIT,
        || std::fs::read_to_string(&pid).is_ok_and(|p| p.ends_with('\n')),
        || rt.explain(),
    );
    let runtime = rt.latest("alice").id();
    let hung_up = Command::new("kill")
        .args(["-HUP", &runtime.to_string()])
        .status()
        .expect("kill -HUP the runtime");
    assert!(hung_up.success(), "the runtime {runtime} was running");
    rt.wait_exit("alice");
    let after = t.tasks().get(&long.id).unwrap().unwrap();
    assert_eq!(
        after.owner.as_deref(),
        Some("alice"),
        "the hung-up runtime's task is still its own: {after:?}\n{}",
        rt.explain()
    );
    assert!(
        lead_heard(&sb, "alice", "killed by signal").is_empty(),
        "its agent's end is no crash to report\n{}",
        rt.explain()
    );
    rt.env.clear();
    rt.start("alice");
    reported_interrupted(&sb, &t, &rt, &long);
    assert_eq!(lines_of(&marker), ["first"], "it ran once");
}

/// A `<inbox>.lock` directory as a Claude Code writer holds it: no swarm
/// record in the sidecar, its mtime refreshed every second (so it never goes
/// stale) until the writer lets go, here when dropped.
struct ForeignLock {
    dir: PathBuf,
    stop: Arc<AtomicBool>,
    refresher: Option<std::thread::JoinHandle<()>>,
}

impl ForeignLock {
    fn hold(file: &Path) -> ForeignLock {
        let dir = swarm::atomic_file::lock_dir_for(file);
        std::fs::create_dir(&dir).expect("take the lock directory");
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (dir.clone(), stop.clone());
        let refresher = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                if let Ok(f) = std::fs::File::open(&d) {
                    let _ = f.set_modified(std::time::SystemTime::now());
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        ForeignLock {
            dir,
            stop,
            refresher: Some(refresher),
        }
    }
}

impl Drop for ForeignLock {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.refresher.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// How many times `name`'s runtime logged a failed step it will retry.
fn retries_logged(sb: &Sandbox, name: &str) -> usize {
    let log = sb.path(&format!("swarm/{T}/logs/teammate-{name}.log"));
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("step failed; retrying")
        .count()
}

/// A message to `name`, then its inbox locked as a stuck Claude Code
/// writer would, then its runtime started: it runs the message, and then
/// cannot consume it. Returns once the lead has heard that it is retrying.
fn start_stuck(
    sb: &Sandbox,
    t: &Team,
    rt: &mut Runtimes,
    name: &str,
    command: &str,
) -> ForeignLock {
    lead_says(t, name, command);
    let lock = ForeignLock::hold(&t.mailbox().inbox_path(name).unwrap());
    rt.start(name);
    wait_until(
        &format!("the lead hears that {name} is retrying"),
        WAIT,
        || !lead_heard(sb, name, "retrying").is_empty(),
        || rt.explain(),
    );
    lock
}

#[test]
fn an_inbox_lock_held_by_a_stuck_claude_code_writer_is_survived_reported_once_and_work_resumes() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let marker = sb.path("ran.txt");
    let mut rt = Runtimes::new(&sb);
    let lock = start_stuck(
        &sb,
        &t,
        &mut rt,
        "alice",
        &format!("echo first >> '{}'", marker.display()),
    );
    let note = lead_heard(&sb, "alice", "retrying");
    assert!(
        note[0].contains("alice.json.lock"),
        "the note names what is stuck: {note:?}"
    );
    wait_until(
        "alice fails again and keeps retrying",
        WAIT,
        || retries_logged(&sb, "alice") >= 2,
        || rt.explain(),
    );
    assert!(
        rt.is_running("alice"),
        "a lock timeout must not end the runtime\n{}",
        rt.explain()
    );
    assert_eq!(
        lead_heard(&sb, "alice", "retrying").len(),
        1,
        "the lead is told once per episode\n{}",
        rt.explain()
    );
    drop(lock);
    wait_until(
        "alice settles the message once the lock is free",
        WAIT,
        || plain(&sb, "alice", "team-lead").is_empty(),
        || rt.explain(),
    );
    wait_until(
        "alice goes idle",
        WAIT,
        || frames(&sb, "team-lead", "idle_notification").len() == 1,
        || rt.explain(),
    );
    lead_says(
        &t,
        "alice",
        &format!("echo second >> '{}'", marker.display()),
    );
    let replies = || {
        plain(&sb, "team-lead", "alice")
            .iter()
            .filter(|e| e.text == "(no output)")
            .count()
    };
    wait_until(
        "alice answers the next message",
        WAIT,
        || replies() >= 2,
        || rt.explain(),
    );
    assert_eq!(
        lines_of(&marker),
        ["first", "second"],
        "retrying settled the first message, it did not run it again\n{}",
        rt.explain()
    );
    assert_eq!(replies(), 2, "one reply per message\n{}", rt.explain());
    assert_eq!(lead_heard(&sb, "alice", "retrying").len(), 1);
}

#[test]
fn a_runtime_retrying_after_an_error_still_ends_cleanly_when_removed_or_its_team_deleted() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice", "bob"], |_| {});
    let mut rt = Runtimes::new(&sb);
    let _alice_lock = start_stuck(&sb, &t, &mut rt, "alice", "true");
    let _bob_lock = start_stuck(&sb, &t, &mut rt, "bob", "true");
    t.roster().remove_member("alice").unwrap();
    assert_eq!(
        rt.wait_exit("alice"),
        Some(0),
        "removed from the roster: a clean exit\n{}",
        rt.explain()
    );
    assert!(rt.is_running("bob"), "{}", rt.explain());
    t.roster().delete(true).unwrap();
    assert_eq!(
        rt.wait_exit("bob"),
        Some(0),
        "the team deleted: a clean exit\n{}",
        rt.explain()
    );
}

/// A bin directory with `tests/agents/fake-cli` installed under `names`, and
/// the directory the fakes record into.
fn fake_bin(sb: &Sandbox, names: &[&str]) -> (PathBuf, PathBuf) {
    let bin = sb.path("fakebin");
    let rec = sb.path("fakerec");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&rec).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/fake-cli");
    for n in names {
        std::os::unix::fs::symlink(&script, bin.join(n)).unwrap();
    }
    (bin, rec)
}

/// A text of exactly the inbox limit, distinct per `tag`, every line numbered
/// (so a cut or a reordering shows in a diff).
fn max_size_text(tag: &str) -> String {
    let mut s = String::with_capacity(MAX_TEXT_BYTES);
    let mut i = 0;
    while s.len() < MAX_TEXT_BYTES {
        s += &format!("{tag} line {i:05}: \"quoted\" <angled> $dollar `tick` é\n");
        i += 1;
    }
    let mut cut = MAX_TEXT_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

#[test]
fn three_max_size_messages_reach_a_codex_agent_and_a_command_agent_whole() {
    let sb = Sandbox::new();
    let (bin, rec) = fake_bin(&sb, &["codex", "my-agent"]);
    let t = team_of(&sb, &["coder", "runner"], |m| {
        m.prompt = Some("You are a tester.".into());
        if m.name == "coder" {
            m.set_swarm_field(SwarmField::Agent, json!("codex"));
        } else {
            m.set_swarm_field(SwarmField::Agent, json!("command"));
            m.set_swarm_field(
                SwarmField::Command,
                json!([bin.join("my-agent").to_string_lossy()]),
            );
        }
    });
    let texts: Vec<String> = ["one", "two", "three"]
        .iter()
        .map(|tag| max_size_text(tag))
        .collect();
    assert!(texts.iter().all(|x| x.len() == MAX_TEXT_BYTES));
    // Sent before the runtimes start, so each reads all three as one batch.
    for to in ["coder", "runner"] {
        for text in &texts {
            lead_says(&t, to, text);
        }
    }
    let batch = |to: &str| inbox(&sb, to);
    let want = |to: &str, p: Preset| {
        let opening = exec::opening(p, Some("You are a tester."), to, T, &swarm_exe());
        exec::messages_prompt(opening.as_deref(), &batch(to))
    };
    let (want_codex, want_command) = (
        want("coder", Preset::Codex),
        want("runner", Preset::Command),
    );
    assert!(
        want_codex.len() > 128 * 1024,
        "the batch must not fit in one argument"
    );

    let mut rt = Runtimes::new(&sb);
    rt.bin = Some(bin);
    rt.env
        .push(("FAKE_CLI_DIR".into(), rec.to_string_lossy().into()));
    rt.start("coder");
    rt.start("runner");
    for (name, fake) in [("coder", "codex"), ("runner", "my-agent")] {
        wait_until(
            &format!("{name} answers the lead"),
            WAIT,
            || {
                plain(&sb, "team-lead", name)
                    .iter()
                    .any(|e| e.text.starts_with(&format!("FAKE {fake} says: three line")))
            },
            || rt.explain(),
        );
    }
    let got = |file: &str| std::fs::read(rec.join(file)).unwrap_or_default();
    assert!(
        got("codex.stdin") == want_codex.as_bytes(),
        "codex got {} bytes on stdin, want the {} bytes of the whole batch\n{}",
        got("codex.stdin").len(),
        want_codex.len(),
        rt.explain()
    );
    let argv = got("codex.argv");
    let argv: Vec<&[u8]> = argv.split(|b| *b == 0).filter(|a| !a.is_empty()).collect();
    let mcp = crate::runtime::swarm_mcp_flags(&sb, "coder");
    let mut want: Vec<&[u8]> = vec![b"exec", b"--skip-git-repo-check"];
    want.extend(mcp.iter().map(|f| f.as_bytes()));
    want.push(b"-");
    assert_eq!(
        argv, want,
        "codex exec reads its prompt from stdin when the prompt is -"
    );
    assert!(
        got("my-agent.stdin") == want_command.as_bytes(),
        "the command agent got {} bytes on stdin, want {}\n{}",
        got("my-agent.stdin").len(),
        want_command.len(),
        rt.explain()
    );
    assert!(
        got("my-agent.promptfile") == want_command.as_bytes(),
        "$SWARM_PROMPT_FILE holds the same prompt\n{}",
        rt.explain()
    );
    assert!(
        got("my-agent.argv").is_empty(),
        "a command agent's argv is its command alone"
    );
    for text in &texts {
        assert!(
            want_codex.contains(text.as_str()),
            "each message whole in the prompt"
        );
    }
    for name in ["coder", "runner"] {
        wait_until(
            &format!("{name} consumes the batch it ran"),
            WAIT,
            || plain(&sb, name, "team-lead").is_empty(),
            || rt.explain(),
        );
        assert!(rt.is_running(name), "{name} is alive\n{}", rt.explain());
    }
}

#[test]
fn an_agent_that_cannot_start_never_consumes_its_messages() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["ghost"], |m| {
        m.set_swarm_field(SwarmField::Agent, json!("command"));
        m.set_swarm_field(SwarmField::Command, json!(["/nonexistent/agent"]));
    });
    lead_says(&t, "ghost", "are you there?");
    let mut rt = Runtimes::new(&sb);
    rt.start("ghost");
    assert_ne!(rt.wait_exit("ghost"), Some(0), "{}", rt.explain());
    let left = plain(&sb, "ghost", "team-lead");
    assert_eq!(
        left.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
        ["are you there?"],
        "a message the agent never saw stays unread\n{}",
        rt.explain()
    );
    assert!(
        t.mailbox().history("ghost").unwrap().is_empty(),
        "nothing was consumed\n{}",
        rt.explain()
    );
    assert!(
        plain(&sb, "team-lead", "ghost").is_empty(),
        "no reply pretends the message was handled\n{}",
        rt.explain()
    );
    let idle = frames(&sb, "team-lead", "idle_notification");
    assert_eq!(idle.len(), 1, "{}", rt.explain());
    assert_eq!(idle[0]["idleReason"], "failed");
    assert!(
        idle[0]["failureReason"]
            .as_str()
            .unwrap_or_default()
            .contains("could not start"),
        "{}",
        idle[0]
    );
}

/// A teammate runtime's panic reached nowhere but the pane that died with
/// it: the panic hook existed only in the TUI. Every process now logs a
/// panic to its own log, then chains to the previous hook (stderr).
#[test]
fn a_runtime_panic_reaches_its_log_file() {
    let sb = Sandbox::new();
    sb.team_with("pt", &["bob"]);
    let marker = sb.path("panic.marker");
    let mut cmd = sb.cmd(&["--team", "pt", "teammate", "--name", "bob"]);
    cmd.env("SWARM_FAULT", format!("panic:{}", marker.display()));
    let r = crate::util::Run::of(cmd, &["teammate", "--name", "bob"]);
    r.assert_code(101);
    assert!(
        r.stderr.contains("panicked at") && r.stderr.contains("injected panic"),
        "the previous hook (Rust's) still prints it\n{}",
        r.explain()
    );
    let log = swarm::paths::Root::new(sb.root())
        .teammate_log("pt", "bob")
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(
        text.contains("ERROR")
            && text.contains("injected panic (SWARM_FAULT) at the teammate runtime's start"),
        "the panic is not in {}:\n{text}",
        log.display()
    );
}
