//! The teammate runtime, end to end without tmux: real `swarm teammate`
//! processes on a private root, the lead played by the test through the
//! CLI and the library, fake CLIs from `tests/agents/` on PATH.

use crate::util::live::swarm_exe;
use crate::util::{Sandbox, WAIT, json_keys, wait_until};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use swarm::agents::{Preset, exec, session};
use swarm::mailbox::Entry;
use swarm::protocol::{Message, ModeSetRequest};
use swarm::tasks::{NewTask, Status, Task};
use swarm::team::{Member, SwarmField, Team};

const T: &str = "t";

/// Teammate runtimes started by a test, killed when it ends; their pane
/// output is kept in files for failure reports.
struct Panes<'a> {
    sb: &'a Sandbox,
    team: String,
    running: Vec<(String, Child, PathBuf)>,
    extra_path: Option<PathBuf>,
    env: Vec<(String, String)>,
}

impl<'a> Panes<'a> {
    fn new(sb: &'a Sandbox, team: &str) -> Self {
        Panes {
            sb,
            team: team.into(),
            running: Vec::new(),
            extra_path: None,
            env: Vec::new(),
        }
    }

    fn start(&mut self, name: &str) {
        let out = self
            .sb
            .path(&format!("pane-{name}-{}.txt", self.running.len()));
        let mut cmd: Command = self.sb.cmd(&["teammate", "--name", name]);
        cmd.env("SWARM_TEAM", &self.team)
            .stdout(std::fs::File::create(&out).expect("pane file"))
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&out)
                    .expect("pane file"),
            ));
        if let Some(dir) = &self.extra_path {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let mut dirs = vec![dir.clone()];
            dirs.extend(std::env::split_paths(&path));
            cmd.env("PATH", std::env::join_paths(dirs).expect("PATH"));
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("starting swarm teammate");
        self.running.push((name.into(), child, out));
    }

    /// The exit code of `name`'s runtime once it has exited.
    fn wait_exit(&mut self, name: &str) -> Option<i32> {
        let i = self
            .running
            .iter()
            .position(|(n, _, _)| n == name)
            .expect("started");
        let mut code = None;
        let explain = self.explain();
        wait_until(
            &format!("{name}'s runtime exits"),
            WAIT,
            || match self.running[i].1.try_wait() {
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

    fn is_running(&mut self, name: &str) -> bool {
        self.running
            .iter_mut()
            .filter(|(n, _, _)| n == name)
            .any(|(_, c, _)| matches!(c.try_wait(), Ok(None)))
    }

    fn output(&self, name: &str) -> String {
        self.running
            .iter()
            .filter(|(n, _, _)| n == name)
            .map(|(_, _, p)| std::fs::read_to_string(p).unwrap_or_default())
            .collect()
    }

    fn explain(&self) -> String {
        let team = Team::new(&swarm::paths::Root::new(self.sb.root()), &self.team);
        let mut s = String::new();
        for (n, _, p) in &self.running {
            s += &format!(
                "--- pane {n} ---\n{}\n",
                std::fs::read_to_string(p).unwrap_or_default()
            );
            let log = self
                .sb
                .root()
                .join(format!("swarm/{}/logs/teammate-{n}.log", self.team));
            s += &format!(
                "--- log {n} ---\n{}\n",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        s += &format!(
            "--- tasks ---\n{}\n",
            serde_json::to_string_pretty(&team.tasks().list().map(|l| l.tasks).unwrap_or_default())
                .unwrap_or_default()
        );
        s += &format!(
            "--- team-lead inbox ---\n{:#?}\n",
            inbox(self.sb, &self.team, "team-lead")
        );
        s
    }
}

impl Drop for Panes<'_> {
    fn drop(&mut self) {
        for (_, c, _) in &mut self.running {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn team(sb: &Sandbox, name: &str) -> Team {
    Team::new(&swarm::paths::Root::new(sb.root()), name)
}

/// A team `t` with these teammates, each adjusted by `f`.
fn team_of(sb: &Sandbox, members: &[&str], f: impl Fn(&mut Member)) -> Team {
    sb.team_with(T, members);
    let t = team(sb, T);
    for m in members {
        t.roster().update_member(m, &f).expect("update member");
    }
    t
}

fn inbox(sb: &Sandbox, team_name: &str, member: &str) -> Vec<Entry> {
    team(sb, team_name)
        .mailbox()
        .read(member)
        .map(|r| r.entries)
        .unwrap_or_default()
}

fn frames(sb: &Sandbox, member: &str, kind: &str) -> Vec<Value> {
    inbox(sb, T, member)
        .iter()
        .filter_map(|e| e.protocol())
        .filter(|m| m.kind() == kind)
        .map(|m| serde_json::to_value(m).expect("frame"))
        .collect()
}

fn plain_from(sb: &Sandbox, member: &str, from: &str) -> Vec<Entry> {
    inbox(sb, T, member)
        .into_iter()
        .filter(|e| e.from == from && e.protocol().is_none())
        .collect()
}

fn task_with(t: &Team, subject: &str, command: &str, blocked_by: &[&Task]) -> Task {
    let mut md = serde_json::Map::new();
    md.insert("command".into(), json!(command));
    t.tasks()
        .create(NewTask {
            subject: subject.into(),
            blocked_by: blocked_by.iter().map(|b| b.id.clone()).collect(),
            metadata: Some(md),
            ..NewTask::default()
        })
        .expect("create task")
}

fn get(t: &Team, id: &str) -> Task {
    t.tasks().get(id).expect("read task").expect("task exists")
}

fn md(task: &Task, key: &str) -> Value {
    task.metadata
        .as_ref()
        .and_then(|m| m.get(key).cloned())
        .unwrap_or(Value::Null)
}

fn lead_send(sb: &Sandbox, args: &[&str]) {
    let mut a = vec!["send", "--team", T];
    a.extend_from_slice(args);
    sb.ok(&a);
}

#[test]
fn a_message_to_an_idle_shell_teammate_is_run_and_answered_with_one_idle_notification() {
    let sb = Sandbox::new();
    team_of(&sb, &["alice"], |_| {});
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    lead_send(&sb, &["--to", "alice", "echo hello from $((40 + 2))"]);
    wait_until(
        "alice's reply reaches the lead",
        WAIT,
        || {
            plain_from(&sb, "team-lead", "alice")
                .iter()
                .any(|e| e.text.contains("hello from 42"))
        },
        || panes.explain(),
    );
    wait_until(
        "alice goes idle",
        WAIT,
        || frames(&sb, "team-lead", "idle_notification").len() == 1,
        || panes.explain(),
    );
    assert!(
        inbox(&sb, T, "alice")
            .iter()
            .all(|e| e.protocol().is_some()),
        "the handled message must leave alice's inbox\n{}",
        panes.explain()
    );
    let roster = team(&sb, T).roster().read().unwrap();
    assert_eq!(roster.member("alice").unwrap().is_active, Some(false));

    // A failing command is answered too, with its exit status.
    lead_send(&sb, &["--to", "alice", "echo oops >&2; exit 4"]);
    wait_until(
        "the second reply and the second idle notification",
        WAIT,
        || {
            plain_from(&sb, "team-lead", "alice")
                .iter()
                .any(|e| e.text.contains("oops\n[exit 4]"))
                && frames(&sb, "team-lead", "idle_notification").len() == 2
        },
        || panes.explain(),
    );
    assert_eq!(
        frames(&sb, "team-lead", "idle_notification").len(),
        2,
        "exactly one idle notification per transition to idle\n{}",
        panes.explain()
    );
}

/// Issue 25, item 2: a message's command starts without waiting for the
/// roster. `isActive` is written once the command runs: the roster's lock,
/// held here as a lead in the middle of a long write would hold it, delays
/// only that write. (The runtime took that lock, and wrote the roster
/// durably, before it started anything.)
#[test]
fn a_message_runs_without_waiting_for_the_roster_and_is_active_follows_once_it_runs() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    wait_until(
        "alice waits for work",
        WAIT,
        || panes.output("alice").contains("waiting for messages"),
        || panes.explain(),
    );
    let active = || {
        t.roster()
            .read()
            .unwrap()
            .member("alice")
            .unwrap()
            .is_active
    };
    wait_until(
        "alice's roster entry says idle",
        WAIT,
        || active() == Some(false),
        || panes.explain(),
    );
    let config_lock = swarm::paths::Root::new(sb.root()).config_lock(T).unwrap();
    let held = swarm::atomic_file::FileLock::acquire_dir(&config_lock, Duration::from_secs(5))
        .expect("the roster's lock");
    let ran = sb.path("RAN");
    let gate = sb.path("GATE");
    let command = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; echo done",
        ran.display(),
        gate.display()
    );
    lead_send(&sb, &["--to", "alice", &command]);
    wait_until(
        "alice runs the message while the roster is locked",
        WAIT,
        || ran.exists(),
        || panes.explain(),
    );
    assert_eq!(active(), Some(false), "nothing wrote the locked roster");
    drop(held);
    wait_until(
        "the roster says alice is active while her command runs",
        WAIT,
        || active() == Some(true),
        || panes.explain(),
    );
    std::fs::write(&gate, b"").unwrap();
    wait_until(
        "alice replies and the roster says idle again",
        WAIT,
        || {
            plain_from(&sb, "team-lead", "alice")
                .iter()
                .any(|e| e.text.contains("done"))
                && active() == Some(false)
                && frames(&sb, "team-lead", "idle_notification").len() == 1
        },
        || panes.explain(),
    );
}

/// A member removed from the roster while its runtime idles still leaves
/// at its next message, now that the roster is written only once the
/// message's command runs: that write finds no member, and the step fails
/// once the unit is settled (answered, consumed), so the runtime ends
/// cleanly instead of serving an inbox nobody is a member for.
#[test]
fn a_runtime_whose_member_was_removed_leaves_at_its_next_message() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    wait_until(
        "alice waits for work",
        WAIT,
        || panes.output("alice").contains("waiting for messages"),
        || panes.explain(),
    );
    t.roster().remove_member("alice").unwrap();
    lead_send(&sb, &["--force", "--to", "alice", "echo still here"]);
    assert_eq!(
        panes.wait_exit("alice"),
        Some(0),
        "removed from the roster: a clean exit\n{}",
        panes.explain()
    );
    assert!(
        panes
            .output("alice")
            .contains("alice was removed from team"),
        "{}",
        panes.explain()
    );
    assert!(
        inbox(&sb, T, "alice")
            .iter()
            .all(|e| e.protocol().is_some()),
        "a message it ran is consumed, not left to run again\n{}",
        panes.explain()
    );
}

/// Issue 24, item 1: `swarm task create "touch SUBJECT_RAN"` with a shell
/// teammate on the team created the file, and `--description manual` ran
/// `manual`. A shell teammate claims only tasks that carry a command (one
/// assigned to it included): the others stay on the board, one assigned
/// to it goes back there, and the lead hears why.
#[test]
fn a_shell_teammate_never_runs_a_tasks_words_and_leaves_such_a_task_for_others() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let ran = |what: &str| sb.path(&format!("{what}_RAN"));
    let touch = |what: &str| format!("touch '{}'", ran(what).display());
    let create = |args: &[&str]| {
        let mut a = vec!["task", "create", "--team", T];
        a.extend_from_slice(args);
        sb.ok(&a);
    };
    create(&[&touch("SUBJECT")]);
    create(&["read the manual", "--description", &touch("DESCRIPTION")]);
    create(&[&touch("ASSIGNED"), "--description", &touch("ASSIGNED")]);
    sb.ok(&["task", "update", "--team", T, "3", "--owner", "alice"]);
    create(&["the real one", "--command", &touch("COMMAND")]);
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    wait_until(
        "alice runs task 4's command and hands task 3 back, telling the lead",
        WAIT,
        || {
            get(&t, "4").status == Status::Completed
                && get(&t, "3").owner.is_none()
                && plain_from(&sb, "team-lead", "alice")
                    .iter()
                    .any(|e| e.text.contains("task 3") && e.text.contains("no command"))
        },
        || panes.explain(),
    );
    assert!(ran("COMMAND").exists(), "{}", panes.explain());
    for words in ["SUBJECT", "DESCRIPTION", "ASSIGNED"] {
        assert!(
            !ran(words).exists(),
            "a task's {words} was run as a command\n{}",
            panes.explain()
        );
    }
    for id in ["1", "2", "3"] {
        let x = get(&t, id);
        assert_eq!(
            (x.status, x.owner.as_deref()),
            (Status::Pending, None),
            "task {id} stays on the board for another teammate\n{}",
            panes.explain()
        );
    }
}

#[test]
fn tasks_are_done_once_each_in_dependency_order_and_a_failure_is_reported_not_completed() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice", "bob", "carol"], |_| {});
    let log = sb.path("order.log");
    let step = |n: &str| format!("echo {n} >> '{}'; echo did {n}", log.display());
    let a = task_with(&t, "first", &step("a"), &[]);
    let b = task_with(&t, "second", &format!("sleep 0.2; {}", step("b")), &[&a]);
    let c = task_with(&t, "third", &step("c"), &[&a]);
    let d = task_with(&t, "last", &step("d"), &[&b, &c]);
    let bad = task_with(&t, "broken", "echo about to fail; exit 3", &[]);
    let mut panes = Panes::new(&sb, T);
    for m in ["alice", "bob", "carol"] {
        panes.start(m);
    }
    wait_until(
        "tasks a-d completed and the broken one failed",
        WAIT,
        || {
            [&a, &b, &c, &d]
                .iter()
                .all(|x| get(&t, &x.id).status == Status::Completed)
                && md(&get(&t, &bad.id), "failed") == json!(true)
        },
        || panes.explain(),
    );
    let order = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = order.lines().collect();
    assert_eq!(lines.len(), 4, "each task ran exactly once: {order:?}");
    assert_eq!(lines[0], "a", "{order:?}");
    assert_eq!(lines[3], "d", "{order:?}");
    for x in [&a, &b, &c, &d] {
        let done = get(&t, &x.id);
        assert_eq!(md(&done, "exitCode"), json!(0));
        assert_eq!(md(&done, "completedBy"), json!(done.owner.clone().unwrap()));
        assert!(
            md(&done, "output").as_str().unwrap().starts_with("did "),
            "{done:?}"
        );
    }
    let failed = get(&t, &bad.id);
    assert_eq!(
        failed.status,
        Status::Pending,
        "a failed task is never completed"
    );
    assert_eq!(md(&failed, "exitCode"), json!(3));
    assert!(
        md(&failed, "output")
            .as_str()
            .unwrap()
            .contains("about to fail")
    );
    assert!(
        md(&failed, "lastFailure")
            .as_str()
            .unwrap()
            .starts_with("exit 3")
    );
    wait_until(
        "the lead is told about the failure",
        WAIT,
        || {
            inbox(&sb, T, "team-lead").iter().any(|e| {
                e.text
                    .contains(&format!("Task {} (broken) failed: exit 3", bad.id))
            })
        },
        || panes.explain(),
    );
    let started = panes.output("alice") + &panes.output("bob") + &panes.output("carol");
    for x in [&a, &b, &c, &d, &bad] {
        let n = started.matches(&format!("▶ task {}:", x.id)).count();
        assert_eq!(n, 1, "task {} started {n} times\n{}", x.id, panes.explain());
    }
}

#[test]
fn shutdown_is_approved_when_idle_deferred_until_a_task_ends_and_rejected_from_a_peer() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice", "bob"], |m| {
        m.tmux_pane_id = format!("%{}", m.name.len());
        m.backend_type = Some("tmux".into());
    });
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    panes.start("bob");

    // From a peer: rejected with a reason; alice keeps running.
    let forged = Message::ShutdownRequest(swarm::protocol::ShutdownRequest {
        request_id: "shutdown-1@alice".into(),
        from: "bob".into(),
        reason: None,
        timestamp: swarm::clock::now_iso(),
    });
    t.send_protocol("bob", "alice", &forged, false).unwrap();
    wait_until(
        "alice rejects bob's shutdown request",
        WAIT,
        || !frames(&sb, "team-lead", "shutdown_rejected").is_empty(),
        || panes.explain(),
    );
    let rej = &frames(&sb, "team-lead", "shutdown_rejected")[0];
    assert!(
        rej["reason"].as_str().unwrap().contains("only team-lead"),
        "{rej}"
    );
    assert!(panes.is_running("alice"));

    // Idle: approved at once, exit 0, pane id and backend from the roster.
    lead_send(
        &sb,
        &["--to", "alice", "--shutdown-request", "--reason", "done"],
    );
    assert_eq!(panes.wait_exit("alice"), Some(0), "{}", panes.explain());
    let ok = frames(&sb, "team-lead", "shutdown_approved");
    assert_eq!(ok.len(), 1);
    assert_eq!(ok[0]["from"], "alice");
    assert_eq!(ok[0]["paneId"], "%5");
    assert_eq!(ok[0]["backendType"], "tmux");
    assert!(
        inbox(&sb, T, "alice").is_empty(),
        "the request was consumed"
    );

    // Mid-task: answered once the task has finished (and been reported).
    let slow = task_with(&t, "slow", "sleep 1; echo finished", &[]);
    wait_until(
        "bob is running the slow task",
        WAIT,
        || get(&t, &slow.id).status == Status::InProgress,
        || panes.explain(),
    );
    lead_send(&sb, &["--to", "bob", "--shutdown-request"]);
    assert_eq!(panes.wait_exit("bob"), Some(0), "{}", panes.explain());
    assert_eq!(
        get(&t, &slow.id).status,
        Status::Completed,
        "the task in flight finishes before the shutdown is approved"
    );
    assert_eq!(frames(&sb, "team-lead", "shutdown_approved").len(), 2);
}

#[test]
fn an_agent_killed_mid_task_hands_the_task_back_tells_the_lead_and_the_runtime_fails() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let doomed = task_with(&t, "doomed", "echo going down; kill -9 $$", &[]);
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    let code = panes.wait_exit("alice");
    assert_ne!(
        code,
        Some(0),
        "a crashed agent must not look like a clean exit"
    );
    let back = get(&t, &doomed.id);
    assert_eq!(back.status, Status::Pending, "{back:?}");
    assert_eq!(back.owner, None, "the task is back on the board");
    let idle = frames(&sb, "team-lead", "idle_notification");
    assert_eq!(idle.len(), 1, "{}", panes.explain());
    assert_eq!(idle[0]["idleReason"], "failed");
    assert_eq!(idle[0]["completedTaskId"], json!(doomed.id));
    assert!(
        idle[0]["failureReason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{}",
        idle[0]
    );
}

#[test]
fn plan_mode_waits_for_approval_runs_when_approved_and_hands_back_when_rejected() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |m| m.plan_mode_required = Some(true));
    let marker = sb.path("ran.txt");
    let first = task_with(
        &t,
        "planned",
        &format!("echo ran > '{}'", marker.display()),
        &[],
    );
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    wait_until(
        "alice asks the lead to approve her plan",
        WAIT,
        || !frames(&sb, "team-lead", "plan_approval_request").is_empty(),
        || panes.explain(),
    );
    let req = frames(&sb, "team-lead", "plan_approval_request").remove(0);
    let id = req["requestId"].as_str().unwrap().to_string();
    assert!(
        id.starts_with("plan_approval-") && id.ends_with("@alice@t"),
        "{id}"
    );
    assert!(
        req["planContent"].as_str().unwrap().contains("echo ran"),
        "{req}"
    );
    assert!(!marker.exists(), "nothing runs before the plan is approved");
    assert_eq!(get(&t, &first.id).status, Status::InProgress);

    lead_send(&sb, &["--to", "alice", "--plan-response", &id, "--approve"]);
    wait_until(
        "the approved task runs",
        WAIT,
        || get(&t, &first.id).status == Status::Completed,
        || panes.explain(),
    );
    assert!(marker.exists());

    let second = task_with(&t, "risky", "echo should not run", &[]);
    wait_until(
        "a second plan request",
        WAIT,
        || frames(&sb, "team-lead", "plan_approval_request").len() == 2,
        || panes.explain(),
    );
    let id2 = frames(&sb, "team-lead", "plan_approval_request")[1]["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    lead_send(
        &sb,
        &[
            "--to",
            "alice",
            "--plan-response",
            &id2,
            "--reject",
            "--feedback",
            "too risky",
        ],
    );
    wait_until(
        "the rejected task is handed back with the feedback",
        WAIT,
        || md(&get(&t, &second.id), "planRejected") == json!("too risky"),
        || panes.explain(),
    );
    assert_eq!(get(&t, &second.id).status, Status::Pending);
    wait_until(
        "the lead is told the plan was rejected",
        WAIT,
        || {
            frames(&sb, "team-lead", "idle_notification")
                .iter()
                .any(|f| {
                    f["failureReason"]
                        .as_str()
                        .is_some_and(|r| r.contains("plan rejected: too risky"))
                })
        },
        || panes.explain(),
    );
}

/// A temp bin directory with the fake CLI installed under `names`.
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

/// The `-c mcp_servers.swarm.…` flags a codex teammate `name` of team `T`
/// gets (see `agents::exec::TeamServer`).
pub fn swarm_mcp_flags(sb: &Sandbox, name: &str) -> Vec<String> {
    let env = [
        ("SWARM_HOME", sb.root().to_string_lossy().into_owned()),
        ("SWARM_TEAM", T.to_string()),
        ("SWARM_AGENT_NAME", name.to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v));
    exec::TeamServer::of(&swarm_exe(), &env)
        .expect("a member's identity")
        .codex_flags()
}

fn recorded_argv(rec: &Path, name: &str) -> Vec<String> {
    let bytes = std::fs::read(rec.join(format!("{name}.argv"))).unwrap_or_default();
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

#[test]
fn exec_presets_get_exactly_the_documented_argv_and_their_output_is_the_reply() {
    let sb = Sandbox::new();
    let presets = ["codex", "gemini", "aider"];
    let t = team_of(&sb, &presets, |m| {
        m.set_swarm_field(SwarmField::Agent, json!(m.name.clone()));
        m.prompt = Some("You are a tester.".into());
    });
    let (bin, rec) = fake_bin(&sb, &presets);
    let mut panes = Panes::new(&sb, T);
    panes.extra_path = Some(bin);
    panes
        .env
        .push(("FAKE_CLI_DIR".into(), rec.to_string_lossy().into()));
    for p in presets {
        panes.start(p);
    }
    // gemini is switched to bypassPermissions first: its CLI flag is --yolo.
    t.send_protocol(
        "team-lead",
        "gemini",
        &Message::ModeSetRequest(ModeSetRequest {
            mode: "bypassPermissions".into(),
            from: "team-lead".into(),
        }),
        false,
    )
    .unwrap();
    wait_until(
        "gemini records its new mode in the roster",
        WAIT,
        || {
            t.roster()
                .read()
                .unwrap()
                .member("gemini")
                .unwrap()
                .mode
                .as_deref()
                == Some("bypassPermissions")
        },
        || panes.explain(),
    );
    for p in presets {
        lead_send(&sb, &["--to", p, &format!("ping {p}")]);
    }
    wait_until(
        "every preset replied",
        WAIT,
        || {
            presets.iter().all(|p| {
                plain_from(&sb, "team-lead", p)
                    .iter()
                    .any(|e| e.text == format!("FAKE {p} says: ping {p}\n"))
            })
        },
        || panes.explain(),
    );
    // The first run of each starts its session: the role prompt and the
    // team instructions open the prompt.
    // Its summary is its own first line: not said twice.
    let message = |text: &str| {
        format!("<teammate-message teammate_id=\"team-lead\">\n{text}\n</teammate-message>")
    };
    let prompt = |p: &str| {
        let preset = Preset::from_name(p).unwrap();
        let opening = exec::opening(preset, Some("You are a tester."), p, T, &swarm_exe()).unwrap();
        format!("{opening}\n\n{}", message(&format!("ping {p}")))
    };
    let gemini = t
        .roster()
        .read()
        .unwrap()
        .member("gemini")
        .cloned()
        .unwrap();
    let gemini_session = session::recorded(&t, &gemini).unwrap().unwrap().id;
    let history = sb
        .path("swarm/t/runtime/aider.aider-chat.md")
        .to_string_lossy()
        .into_owned();
    let expected: BTreeMap<&str, Vec<String>> = [
        (
            "codex",
            [
                vec!["exec".into(), "--skip-git-repo-check".into()],
                // swarm's MCP server, for its own team and name.
                swarm_mcp_flags(&sb, "codex"),
                vec![prompt("codex")],
            ]
            .concat(),
        ),
        (
            "gemini",
            vec![
                "--yolo".into(),
                "--session-id".into(),
                gemini_session.clone(),
                "-p".into(),
                prompt("gemini"),
            ],
        ),
        (
            "aider",
            vec![
                "--yes-always".into(),
                "--no-pretty".into(),
                "--chat-history-file".into(),
                history.clone(),
                "--message".into(),
                prompt("aider"),
            ],
        ),
    ]
    .into();
    for (p, argv) in expected {
        assert_eq!(
            recorded_argv(&rec, p),
            argv,
            "argv of {p}\n{}",
            panes.explain()
        );
    }
    // The second message resumes each session: only the message is sent.
    for p in ["gemini", "aider"] {
        lead_send(&sb, &["--to", p, &format!("again {p}")]);
    }
    wait_until(
        "gemini and aider answer again",
        WAIT,
        || {
            ["gemini", "aider"].iter().all(|p| {
                plain_from(&sb, "team-lead", p)
                    .iter()
                    .any(|e| e.text == format!("FAKE {p} says: again {p}\n"))
            })
        },
        || panes.explain(),
    );
    assert_eq!(
        recorded_argv(&rec, "gemini"),
        [
            "--yolo",
            "--resume",
            &gemini_session,
            "-p",
            &message("again gemini")
        ],
        "{}",
        panes.explain()
    );
    assert_eq!(
        recorded_argv(&rec, "aider"),
        [
            "--yes-always",
            "--no-pretty",
            "--chat-history-file",
            &history,
            "--restore-chat-history",
            "--message",
            &message("again aider")
        ],
        "{}",
        panes.explain()
    );
    let env = std::fs::read_to_string(rec.join("codex.env")).unwrap();
    for want in [
        "SWARM_AGENT_NAME=codex",
        "SWARM_AGENT_ID=codex@t",
        "SWARM_TEAM=t",
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing from\n{env}");
    }
}

#[test]
fn an_exec_agent_that_kills_itself_is_a_crash() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["codex"], |m| {
        m.set_swarm_field(SwarmField::Agent, json!("codex"));
    });
    let (bin, rec) = fake_bin(&sb, &["codex"]);
    let task = t
        .tasks()
        .create(NewTask {
            subject: "explode".into(),
            description: "CRASH-ME".into(),
            ..NewTask::default()
        })
        .unwrap();
    let mut panes = Panes::new(&sb, T);
    panes.extra_path = Some(bin);
    panes
        .env
        .push(("FAKE_CLI_DIR".into(), rec.to_string_lossy().into()));
    panes.start("codex");
    assert_ne!(panes.wait_exit("codex"), Some(0));
    let back = get(&t, &task.id);
    assert_eq!(
        (back.status, back.owner.clone()),
        (Status::Pending, None),
        "{back:?}"
    );
    let idle = frames(&sb, "team-lead", "idle_notification");
    assert_eq!(idle[0]["idleReason"], "failed", "{}", panes.explain());
    let opening = exec::opening(Preset::Codex, None, "codex", T, &swarm_exe()).unwrap();
    assert_eq!(
        recorded_argv(&rec, "codex").last(),
        Some(&format!("{opening}\n\nTask #1: explode\n\nCRASH-ME"))
    );
}

#[test]
fn inside_an_agent_swarm_send_and_task_claim_work_with_no_flags() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |m| {
        m.set_swarm_field(SwarmField::Env, json!({"EXTRA": "from-spec"}));
    });
    let env_file = sb.path("env.txt");
    let cmd = format!(
        "env | grep -E '^(SWARM_|EXTRA=)' | sort > '{}'; swarm send --to team-lead hi-from-task",
        env_file.display()
    );
    let first = task_with(&t, "identity", &cmd, &[]);
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    wait_until(
        "the identity task is completed",
        WAIT,
        || get(&t, &first.id).status == Status::Completed,
        || panes.explain(),
    );
    assert!(
        plain_from(&sb, "team-lead", "alice")
            .iter()
            .any(|e| e.text == "hi-from-task"),
        "{}",
        panes.explain()
    );
    let env = std::fs::read_to_string(&env_file).unwrap();
    let root = sb.root().to_string_lossy();
    for want in [
        format!("SWARM_HOME={root}"),
        "SWARM_TEAM=t".into(),
        "SWARM_AGENT_NAME=alice".into(),
        "SWARM_AGENT_ID=alice@t".into(),
        "SWARM_AGENT_COLOR=blue".into(),
        format!("SWARM_SCRATCHPAD={root}/swarm/t/scratchpad"),
        "EXTRA=from-spec".into(),
    ] {
        assert!(env.lines().any(|l| l == want), "{want} missing from\n{env}");
    }
    assert!(sb.path("swarm/t/scratchpad").is_dir());
}

#[test]
fn swarm_task_claim_from_inside_a_task_claims_for_the_teammate() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["alice"], |_| {});
    let gate = sb.path("gate");
    // Both tasks exist before the runtime starts, so it takes task 1 (the
    // lowest id) first; task 1's command claims task 2 as alice.
    let one = task_with(&t, "claimer", "swarm task claim 2 && echo claimed", &[]);
    let two = task_with(&t, "target", &format!("touch '{}'", gate.display()), &[]);
    let mut panes = Panes::new(&sb, T);
    panes.start("alice");
    wait_until(
        "task 1 done",
        WAIT,
        || get(&t, &one.id).status == Status::Completed,
        || panes.explain(),
    );
    let claimed = get(&t, &two.id);
    assert_eq!(
        claimed.owner.as_deref(),
        Some("alice"),
        "{}",
        panes.explain()
    );
    assert!(
        md(&get(&t, &one.id), "output")
            .as_str()
            .unwrap()
            .contains("claimed"),
        "{}",
        panes.explain()
    );
}

#[test]
fn the_demo_runs_every_task_once_in_dependency_order_and_reports_to_the_lead() {
    let sb = Sandbox::new();
    let work = sb.path("project");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(
        work.join("README.md"),
        "swarm demo words words words teammates\n",
    )
    .unwrap();
    std::fs::write(work.join("src/a.rs"), "fn a() {}\n// TODO: more\n").unwrap();
    std::fs::write(work.join("src/b.rs"), "fn a() {}\n// TODO: more\n").unwrap();
    std::fs::write(work.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let spec = swarm::config::TeamSpec::demo(&work);
    sb.ok(&["team", "create", "demo"]);
    let t = team(&sb, "demo");
    for (i, m) in spec.teammates.iter().enumerate() {
        t.roster()
            .add_member(m.member("demo", i, &spec.dir))
            .unwrap();
    }
    let swarm::config::Applied::Created(tasks) = spec.apply(&t).unwrap() else {
        panic!("a fresh team gets the demo tasks")
    };
    assert_eq!(
        spec.apply(&t).unwrap(),
        swarm::config::Applied::AlreadyHadTasks(tasks.len())
    );
    let mut panes = Panes::new(&sb, "demo");
    // The demo's pauses, a fifth as long (passed by name in a real pane).
    panes.env.push(("SWARM_DEMO_PACE".into(), "0.2".into()));
    for m in &spec.teammates {
        panes.start(&m.name);
    }
    // One demo task waits for the lead to approve its plan: approve it as
    // the TeamsDialog's `a` does.
    let mut approved: Vec<String> = Vec::new();
    let mut approve = || {
        for e in inbox(&sb, "demo", "team-lead") {
            if let Some(swarm::protocol::Message::PlanApprovalRequest(p)) = e.protocol()
                && !approved.contains(&p.request_id)
            {
                sb.ok(&[
                    "send",
                    "--team",
                    "demo",
                    "--to",
                    &p.from,
                    "--plan-response",
                    &p.request_id,
                    "--approve",
                ]);
                approved.push(p.request_id);
            }
        }
    };
    let done = |t: &Team| {
        t.tasks()
            .list()
            .unwrap()
            .tasks
            .iter()
            .filter(|x| x.status == Status::Completed)
            .count()
    };
    wait_until(
        "every demo task is completed",
        Duration::from_secs(60),
        || {
            approve();
            done(&t) == tasks.len()
        },
        || panes.explain(),
    );
    let summary = wait_for_summary(&sb, &panes);
    let all = t.tasks().list().unwrap().tasks;
    let by_id: BTreeMap<&str, &Task> = all.iter().map(|x| (x.id.as_str(), x)).collect();
    let outputs: String = spec
        .teammates
        .iter()
        .map(|m| panes.output(&m.name))
        .collect();
    for x in &all {
        assert_eq!(md(x, "exitCode"), json!(0), "{x:?}");
        assert_eq!(
            outputs.matches(&format!("▶ task {}:", x.id)).count(),
            1,
            "task {} ran exactly once\n{}",
            x.id,
            panes.explain()
        );
        for b in &x.blocked_by {
            let blocker = by_id[b.as_str()];
            assert!(
                md(x, "startedAt").as_u64() >= md(blocker, "finishedAt").as_u64(),
                "task {} started before its blocker {b} finished",
                x.id
            );
        }
    }
    assert!(
        summary.contains("src/a.rs") || summary.contains(".rs"),
        "{summary}"
    );
    assert!(
        summary.contains("words"),
        "README word counts in the summary: {summary}"
    );
}

/// A runtime that approves a shutdown lets go of its terminal first, so
/// that its pane can close while the approval and the consumption are
/// written; the hang-up that comes with the pane's close then does not
/// stop it. Held after its approval (`SWARM_FAULT_SHUTDOWN_GATE`), it has
/// closed its output and still runs, and a SIGHUP there leaves it to
/// consume its request and end with 0.
#[test]
fn a_runtime_lets_go_of_its_terminal_as_it_approves_a_shutdown_and_a_hang_up_does_not_stop_it() {
    let sb = Sandbox::new();
    team_of(&sb, &["alice"], |_| {});
    let door = sb.path("door");
    let mut child = sb
        .cmd(&["teammate", "--name", "alice"])
        .env("SWARM_TEAM", T)
        .env("SWARM_FAULT_SHUTDOWN_GATE", &door)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting swarm teammate");
    let kill = |c: &mut Child| {
        let _ = c.kill();
        let _ = c.wait();
    };
    let mut out = child.stdout.take().expect("its output");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut said = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut said);
        let _ = tx.send(said);
    });
    lead_send(
        &sb,
        &["--to", "alice", "--shutdown-request", "--reason", "done"],
    );
    let Ok(said) = rx.recv_timeout(crate::util::timeouts::scaled(WAIT)) else {
        kill(&mut child);
        panic!("alice never let go of its terminal");
    };
    assert!(said.contains("■ shutting down (done)"), "{said}");
    wait_until(
        "alice's approval is written",
        WAIT,
        || frames(&sb, "team-lead", "shutdown_approved").len() == 1,
        || said.clone(),
    );
    assert!(
        child.try_wait().expect("its status").is_none(),
        "alice runs on, held before consuming its request: {said}"
    );
    let hung_up = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .expect("kill -HUP the runtime");
    assert!(hung_up.success());
    std::fs::write(&door, b"").unwrap();
    let mut status = None;
    wait_until(
        "alice ends",
        WAIT,
        || {
            status = child.try_wait().expect("its status");
            status.is_some()
        },
        || said.clone(),
    );
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{status:?}");
    assert!(
        inbox(&sb, T, "alice").is_empty(),
        "the request was consumed"
    );
    assert_eq!(frames(&sb, "team-lead", "shutdown_approved").len(), 1);
}

fn wait_for_summary(sb: &Sandbox, panes: &Panes) -> String {
    let mut text = String::new();
    wait_until(
        "the demo summary reaches the lead",
        WAIT,
        || match inbox(sb, "demo", "team-lead")
            .into_iter()
            .find(|e| e.summary.as_deref() == Some("demo summary"))
        {
            Some(e) => {
                text = e.text;
                true
            }
            None => false,
        },
        || panes.explain(),
    );
    text
}

#[test]
fn the_claude_preset_launches_with_the_references_argv_env_and_a_signed_first_prompt() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["researcher"], |m| {
        m.set_swarm_field(SwarmField::Agent, json!("claude"));
        m.model = Some("claude-opus-5-5".into());
        m.mode = Some("bypassPermissions".into());
    });
    let member = t
        .roster()
        .read()
        .unwrap()
        .member("researcher")
        .unwrap()
        .clone();
    let session = t.roster().read().unwrap().lead_session_id.unwrap();
    // The user's Claude Code setup lives in a home of its own, so the
    // sandbox root is not their config dir: a linked one is built.
    let home = sb.path("user-home");
    let user = swarm::agents::claude::UserClaude::with_home(&home);
    let launch =
        swarm::agents::claude::claude_launch_for(&t, &member, 1796022860317, &user).unwrap();

    // The fixture's argv, with this team's name, session and key put in.
    let fixture: Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/claude-code/teammate-launch.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let key_arg = launch.argv[launch
        .argv
        .iter()
        .position(|a| a == "--lead-verify-key")
        .unwrap()
        + 1]
    .clone();
    assert!(
        key_arg.starts_with("1796022860317.MCowBQYDK2VwAyEA"),
        "{key_arg}"
    );
    let expected: Vec<String> = fixture["teammate_argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            v.as_str()
                .unwrap()
                .replace("/usr/local/bin/claude", "claude")
                .replace("session-6c171e4f", T)
                .replace("6c171e4f-9b0e-4111-8c88-ab3c60a0cbbc", &session)
                .replace(fixture["lead_verify_key"].as_str().unwrap(), &key_arg)
        })
        .collect();
    assert_eq!(launch.argv, expected);
    let env: BTreeMap<_, _> = launch.env.iter().cloned().collect();
    assert_eq!(env["CLAUDECODE"], "1");
    assert_eq!(env["CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"], "1");
    assert_eq!(env["CLAUDE_CODE_ENABLE_TODO_TOOLS"], "1");
    let linked = sb.path("swarm/t/claude-config");
    assert_eq!(env["CLAUDE_CONFIG_DIR"], linked.to_string_lossy());
    assert_eq!(env["CLAUDE_SECURESTORAGE_CONFIG_DIR"], "");
    assert_eq!(
        std::fs::read_link(linked.join("teams")).unwrap(),
        sb.path("teams")
    );
    assert_eq!(
        std::fs::read_link(linked.join(".claude.json")).unwrap(),
        home.join(".claude.json")
    );

    // The first prompt: a signed plain entry from team-lead, in the
    // reference's key order, verifying with the key on the command line.
    swarm::agents::write_initial_prompt(&t, "researcher", "You are researcher.").unwrap();
    let raw: Value = sb.read_json("teams/t/inboxes/researcher.json");
    let entries = raw.as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let keys = json_keys(&entries[0]);
    assert_eq!(
        keys,
        [
            "from",
            "text",
            "timestamp",
            "msgV",
            "msg_id",
            "type",
            "read",
            "lead_sig"
        ]
    );
    let entry = Entry::from_value(entries[0].clone()).unwrap();
    assert_eq!(
        (entry.from.as_str(), entry.text.as_str()),
        ("team-lead", "You are researcher.")
    );
    let verifier = swarm::mailbox::signing::LeadVerifier::parse(&key_arg).unwrap();
    assert!(
        verifier.verifies(&entry),
        "lead_sig must verify with --lead-verify-key"
    );
    let other =
        swarm::mailbox::signing::LeadVerifier::parse(fixture["lead_verify_key"].as_str().unwrap())
            .unwrap();
    assert!(!other.verifies(&entry));
    assert!(
        swarm::agents::write_initial_prompt(&t, "researcher", "{\"type\":\"shutdown_request\",\"requestId\":\"x\",\"from\":\"team-lead\",\"timestamp\":\"t\"}")
            .is_err(),
        "a protocol frame is refused as a prompt"
    );
}

#[test]
fn the_runtime_supervises_claude_and_reports_a_failed_exit() {
    let sb = Sandbox::new();
    let t = team_of(&sb, &["researcher"], |m| {
        m.set_swarm_field(SwarmField::Agent, json!("claude"));
    });
    let (bin, rec) = fake_bin(&sb, &["claude"]);
    let mut panes = Panes::new(&sb, T);
    panes.extra_path = Some(bin);
    panes
        .env
        .push(("FAKE_CLI_DIR".into(), rec.to_string_lossy().into()));
    panes.start("researcher");
    assert_eq!(
        panes.wait_exit("researcher"),
        Some(0),
        "{}",
        panes.explain()
    );
    let argv = recorded_argv(&rec, "claude");
    assert_eq!(
        &argv[..4],
        ["--agent-id", "researcher@t", "--agent-name", "researcher"]
    );
    let env = std::fs::read_to_string(rec.join("claude.env")).unwrap();
    assert!(
        env.contains("CLAUDECODE=1") && env.contains("SWARM_AGENT_NAME=researcher"),
        "{env}"
    );
    assert!(frames(&sb, "team-lead", "idle_notification").is_empty());

    // Exits 1 with a task it owned: the task goes back, the lead is told.
    let task = task_with(&t, "held", "true", &[]);
    t.tasks()
        .claim(Some(&task.id), "researcher", false)
        .unwrap();
    panes.env.push(("FAKE_CLI_EXIT".into(), "1".into()));
    panes.start("researcher");
    let code = panes.running.last_mut().unwrap().1.wait().unwrap().code();
    assert_ne!(code, Some(0));
    assert_eq!(get(&t, &task.id).owner, None);
    let idle = frames(&sb, "team-lead", "idle_notification");
    assert_eq!(idle.len(), 1);
    assert_eq!(idle[0]["idleReason"], "failed");
    assert!(
        idle[0]["failureReason"]
            .as_str()
            .unwrap()
            .contains("exit 1")
    );
}
