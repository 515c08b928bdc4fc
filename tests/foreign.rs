//! Teams swarm did not start (Claude Code's, under the same root): swarm
//! reads them and sends to them, and never rewrites, stops or deletes them
//! (issue 22). Each team here is laid out from Claude Code's own files
//! (`tests/fixtures/claude-code`), as its lead leaves them.

use crate::util::Sandbox;
use std::collections::BTreeMap;
use std::path::Path;

pub const CC_TEAM: &str = "session-6c171e4f";

fn fixture(rel: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/claude-code")
        .join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Lays Claude Code's team out under the sandbox's root where Claude Code
/// keeps it: roster, the lead's inbox, two tasks and the id mark.
pub fn install_claude_code_team(s: &Sandbox) {
    let put = |rel: &str, bytes: &[u8]| {
        let p = s.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    put(
        &format!("teams/{CC_TEAM}/config.json"),
        &fixture("config.json"),
    );
    put(
        &format!("teams/{CC_TEAM}/inboxes/team-lead.json"),
        &fixture("inbox-file-example.json"),
    );
    put(&format!("tasks/{CC_TEAM}/1.json"), &fixture("tasks/1.json"));
    put(&format!("tasks/{CC_TEAM}/2.json"), &fixture("tasks/2.json"));
    put(
        &format!("tasks/{CC_TEAM}/.highwatermark"),
        &fixture("tasks/.highwatermark"),
    );
}

/// Every file of Claude Code's team (its team and task directories), by
/// path relative to the root, with its bytes. The empty sidecars swarm's
/// locks leave beside a lock directory (`*.flock`, DESIGN §4) are swarm's
/// own and hold no data: not counted.
pub fn claude_code_files(s: &Sandbox) -> BTreeMap<String, Vec<u8>> {
    s.tree()
        .into_iter()
        .filter(|p| {
            p.starts_with(&format!("teams/{CC_TEAM}")) || p.starts_with(&format!("tasks/{CC_TEAM}"))
        })
        .filter(|p| !p.ends_with(".flock"))
        .filter(|p| s.path(p).is_file())
        .map(|p| {
            let bytes = std::fs::read(s.path(&p)).unwrap();
            (p, bytes)
        })
        .collect()
}

/// The files that differ between two pictures, named.
fn changed(a: &BTreeMap<String, Vec<u8>>, b: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let mut out: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The data loss of issue 22: with a Claude Code team the only team under
/// the root, `swarm up` took it as "the only team" and started a lead for
/// it, and `swarm down --force` then deleted it whole. Both now name it and
/// ask for `--team`, and even with `--team` every command that would
/// change, stop or delete it refuses in one line, leaving every byte.
#[test]
fn a_claude_code_team_alone_under_the_root_is_never_taken_or_deleted() {
    let s = Sandbox::new();
    install_claude_code_team(&s);
    let before = claude_code_files(&s);
    assert!(before.len() >= 5, "{before:?}");
    // A private tmux socket, so that a broken guard could never start a
    // lead on the developer's tmux server.
    let sock = s.path("tmux.sock");
    let run = |args: &[&str]| {
        let mut c = s.cmd(args);
        c.env("SWARM_TMUX_SOCKET", &sock);
        crate::util::Run::of(c, args)
    };
    for args in [
        &["up", "--no-attach"][..],
        &["down", "--force"],
        &["down"],
        &["status"],
        &["prune"],
    ] {
        let r = run(args);
        r.assert_code(2);
        r.assert_error(&format!("team \"{CC_TEAM}\" is not swarm's"));
        r.assert_error("--team");
        assert_eq!(
            r.stderr.trim().lines().count(),
            1,
            "one line\n{}",
            r.explain()
        );
    }
    let refusals: [(&[&str], &str); 9] = [
        (&["down", "--force"], "swarm will not take it down"),
        (
            &["up", "--no-attach"],
            "swarm only watches it, in the TeamsDialog, which needs a terminal",
        ),
        (
            &["team", "delete", CC_TEAM, "--force"],
            "swarm will not delete it",
        ),
        (&["kill", "researcher"], "swarm will not kill its members"),
        (&["prune"], "swarm will not prune its members"),
        (
            &["spawn", "x", "--", "true"],
            "swarm will not add a teammate",
        ),
        (&["task", "create", "x"], "swarm will not change its tasks"),
        (
            &["task", "update", "2", "--status", "completed"],
            "swarm will not change its tasks",
        ),
        (
            &["inbox", "team-lead", "--mark-read"],
            "swarm will not consume its mail",
        ),
    ];
    for (args, why) in refusals {
        let mut a: Vec<&str> = vec!["--team", CC_TEAM];
        a.extend(args);
        let r = run(&a);
        r.assert_code(2);
        r.assert_error(why);
        assert!(
            !r.stdout.contains("killed") && !r.stdout.contains("deleted"),
            "{}",
            r.explain()
        );
    }
    assert_eq!(
        changed(&before, &claude_code_files(&s)),
        Vec::<String>::new()
    );
    assert!(
        !s.path(&format!("swarm/{CC_TEAM}/owner.json")).exists(),
        "swarm never claims it"
    );
    // Reading and sending still work.
    run(&["status", "--team", CC_TEAM]).assert_code(0);
    run(&["task", "list", "--team", CC_TEAM]).assert_code(0);
    run(&["inbox", "team-lead", "--team", CC_TEAM]).assert_code(0);
    run(&["send", "--team", CC_TEAM, "--to", "researcher", "hello"]).assert_code(0);
    let after = claude_code_files(&s);
    assert_eq!(
        changed(&before, &after),
        [format!("teams/{CC_TEAM}/inboxes/researcher.json")],
        "only the send wrote"
    );
}

/// A team swarm created is swarm's, and stays so when its roster is
/// rebuilt; the same name taken again by another tool (its roster naming
/// another lead session) is not.
#[test]
fn a_team_is_swarms_only_while_its_roster_names_the_session_swarm_started() {
    let s = Sandbox::new();
    s.ok(&["team", "create", "mine"]);
    let record = s.read_json("swarm/mine/owner.json");
    let roster = s.read_json("teams/mine/config.json");
    assert_eq!(record["leadSessionId"], roster["leadSessionId"]);
    assert_eq!(record["createdBy"], "swarm");
    // Picked as the only team swarm started, beside Claude Code's.
    install_claude_code_team(&s);
    s.ok(&["task", "create", "one"]);
    assert!(s.path("tasks/mine/1.json").exists());
    // A corrupt roster is rebuilt, and the team is still swarm's.
    std::fs::write(s.path("teams/mine/config.json"), b"{\"na").unwrap();
    s.ok(&["status", "--team", "mine"]);
    assert_eq!(
        s.read_json("teams/mine/config.json")["leadSessionId"],
        record["leadSessionId"]
    );
    s.ok(&["task", "create", "two", "--team", "mine"]);
    // Another lead session under the same name: not swarm's any more.
    let mut other = s.read_json("teams/mine/config.json");
    other["leadSessionId"] = "0f0f0f0f-1111-4222-8333-444444444444".into();
    std::fs::write(
        s.path("teams/mine/config.json"),
        serde_json::to_vec_pretty(&other).unwrap(),
    )
    .unwrap();
    let r = s.run(&["team", "delete", "mine", "--force"]);
    r.assert_code(2);
    r.assert_error("its roster names another lead session");
    assert!(s.path("teams/mine/config.json").exists());
}

/// The pid space Claude Code records in `leadProcess` (reference §2.2):
/// `<hostname>#<readlink /proc/self/ns/pid>`.
fn pid_space() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid").unwrap();
    format!("{host}#{}", ns.to_string_lossy())
}

/// Field 22 of `/proc/<pid>/stat` (its start time), as Claude Code records it.
fn proc_start(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split_whitespace().nth(19).unwrap().to_string()
}

/// A Claude Code team as its lead leaves it while it runs, on a private
/// tmux server: its lead and two teammates (`researcher`, `helper2`) in
/// panes running long-lived programs, the roster naming their pane ids and
/// the lead's live process, unread mail for the lead (three entries) and
/// for researcher (one), and two tasks.
struct ClaudeCodeTeam {
    s: Sandbox,
    tmux: crate::util::tmux::TmuxServer,
    lead_pid: u32,
    panes: Vec<(String, String, u32)>,
}

impl ClaudeCodeTeam {
    fn start() -> Option<ClaudeCodeTeam> {
        if !crate::util::tmux::tmux_available("a_claude_code_team_running_in_tmux") {
            return None;
        }
        let s = Sandbox::new();
        install_claude_code_team(&s);
        let tmux = crate::util::tmux::TmuxServer::start();
        let lead_pane = tmux.new_session("cc", (160, 40), &["sleep", "100000"]);
        let mut panes = Vec::new();
        for name in ["researcher", "helper2"] {
            let script = format!("echo '{name} is working on task 1'; exec sleep 100000");
            let id = tmux
                .ok(&[
                    "split-window",
                    "-d",
                    "-P",
                    "-F",
                    "#{pane_id}",
                    "-t",
                    &lead_pane,
                    "--",
                    "sh",
                    "-c",
                    &script,
                ])
                .trim()
                .to_string();
            let pid: u32 = tmux.display(&id, "#{pane_pid}").parse().unwrap();
            panes.push((name.to_string(), id, pid));
        }
        let lead_pid: u32 = tmux.display(&lead_pane, "#{pane_pid}").parse().unwrap();
        let config = s.path(&format!("teams/{CC_TEAM}/config.json"));
        let mut roster: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&config).unwrap()).unwrap();
        roster["leadProcess"] = serde_json::json!({
            "pid": lead_pid, "pidSpace": pid_space(),
            "claimedAt": 1796022857286u64, "procStart": proc_start(lead_pid),
        });
        let members = roster["members"].as_array_mut().unwrap();
        members.retain(|m| m["name"] != "helper3");
        for (name, id, _) in &panes {
            let m = members
                .iter_mut()
                .find(|m| m["name"] == name.as_str())
                .unwrap();
            m["tmuxPaneId"] = id.as_str().into();
        }
        // As Claude Code writes it: JSON.stringify(v, null, 2), no newline.
        std::fs::write(&config, serde_json::to_string_pretty(&roster).unwrap()).unwrap();
        let mail = serde_json::json!([{
            "from": "team-lead", "text": "PING-1 please answer", "summary": "ping 1",
            "timestamp": "2026-11-30T07:14:23.926Z", "msgV": 1,
            "msg_id": "0b7b5f55-0d9e-4e44-a2e5-1c0b0c4a2f11", "type": "message", "read": false,
        }]);
        std::fs::write(
            s.path(&format!("teams/{CC_TEAM}/inboxes/researcher.json")),
            serde_json::to_string_pretty(&mail).unwrap(),
        )
        .unwrap();
        Some(ClaudeCodeTeam {
            s,
            tmux,
            lead_pid,
            panes,
        })
    }

    /// `swarm ARGS --team <its team>` on its tmux server.
    fn run(&self, args: &[&str]) -> crate::util::Run {
        let mut a = vec!["--team", CC_TEAM];
        a.extend(args);
        let mut c = self.s.cmd(&a);
        c.env("SWARM_TMUX_SOCKET", &self.tmux.sock);
        crate::util::Run::of(c, &a)
    }

    fn inbox(&self, name: &str) -> Vec<serde_json::Value> {
        let p = self.s.path(&format!("teams/{CC_TEAM}/inboxes/{name}.json"));
        serde_json::from_slice::<Vec<serde_json::Value>>(&std::fs::read(p).unwrap()).unwrap()
    }
}

/// Issue 22: a team Claude Code's own lead runs is watched, never changed.
/// Every command a user of both tools would try leaves its roster
/// byte-identical, its lead's mail unread, its panes and processes alive;
/// `status` sees them alive (on the socket it is given), `output` reads a
/// pane's screen, `send` adds exactly one entry, `shutdown` asks the
/// team's own lead, `kill` refuses naming who can, and the TeamsDialog
/// opens as a watcher and leaves with `q`.
#[test]
fn a_claude_code_team_running_in_tmux_is_watched_and_never_changed() {
    let Some(cc) = ClaudeCodeTeam::start() else {
        return;
    };
    let config = cc.s.path(&format!("teams/{CC_TEAM}/config.json"));
    let roster_before = std::fs::read(&config).unwrap();
    let lead_mail = cc.inbox("team-lead");
    assert_eq!(lead_mail.len(), 3);
    let mut printed = Vec::new();
    let status = cc.run(&["status", "--json"]);
    status.assert_code(0);
    let snap = status.json();
    assert_eq!(snap["foreign"], true, "{}", status.explain());
    assert_eq!(
        snap["lead"]["alive"],
        true,
        "its lead runs: {}",
        status.explain()
    );
    for (name, id, _) in &cc.panes {
        let m = snap["members"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name.as_str())
            .unwrap();
        assert_eq!(m["alive"], true, "{name} in {id} runs: {m}");
        assert_eq!(m["status"], "idle", "{m}");
        assert_eq!(m["agent"], "claude", "Claude Code started {name}: {m}");
    }
    printed.push(status);
    let plain = cc.run(&["status"]);
    assert!(
        plain
            .stdout
            .contains(&format!("lead: running (pid {})", cc.lead_pid)),
        "{}",
        plain.explain()
    );
    printed.push(plain);
    for args in [&["inbox", "team-lead"][..], &["task", "list"], &["doctor"]] {
        let r = cc.run(args);
        r.assert_code(0);
        printed.push(r);
    }
    let send = cc.run(&["send", "--to", "researcher", "hello from swarm"]);
    send.assert_code(0);
    assert_eq!(cc.inbox("researcher").len(), 2, "the send added one entry");
    printed.push(send);
    let output = cc.run(&["output", "researcher"]);
    output.assert_code(0);
    assert!(
        output.stdout.contains("researcher is working on task 1"),
        "the pane's screen: {}",
        output.explain()
    );
    printed.push(output);
    // The TeamsDialog, as a watcher, in a pane of its own; left with q.
    let env = |k: &str, v: &std::path::Path| format!("{k}={}", v.display());
    let home = env("SWARM_HOME", cc.s.root());
    let sock = env("SWARM_TMUX_SOCKET", &cc.tmux.sock);
    let path = format!("PATH={}", std::env::var("PATH").unwrap_or_default());
    let watcher = cc.tmux.new_session(
        "watcher",
        (160, 48),
        &[
            "env",
            "-u",
            "TMUX",
            "-u",
            "TMUX_PANE",
            &home,
            &sock,
            &path,
            "TERM=xterm",
            crate::util::swarm_bin(),
            "up",
            "--team",
            CC_TEAM,
        ],
    );
    cc.tmux
        .ok(&["set-option", "-p", "-t", &watcher, "remain-on-exit", "on"]);
    let screen = || cc.tmux.capture(&watcher);
    crate::util::wait_until(
        "the watching dialog lists both teammates alive",
        crate::util::WAIT,
        || {
            let s = screen();
            s.contains("watching team")
                && ["@researcher ", "@helper2 "]
                    .iter()
                    .all(|n| s.lines().any(|l| l.contains(n) && l.contains(" idle ")))
        },
        screen,
    );
    cc.tmux.send_keys(&watcher, &["k"]);
    cc.tmux.send_keys(&watcher, &["y"]);
    crate::util::wait_until(
        "k says it is the team's own lead's",
        crate::util::WAIT,
        || screen().contains("swarm will not kill its members"),
        screen,
    );
    cc.tmux.send_keys(&watcher, &["q"]);
    crate::util::wait_until(
        "q leaves the watcher",
        crate::util::WAIT,
        || cc.tmux.display(&watcher, "#{pane_dead}") == "1",
        screen,
    );
    let shutdown = cc.run(&["shutdown", "researcher"]);
    shutdown.assert_code(0);
    assert!(
        shutdown.stdout.starts_with("requested:"),
        "{}",
        shutdown.explain()
    );
    let asked = cc.inbox("team-lead");
    assert_eq!(asked.len(), 4, "one request to its lead");
    assert_eq!(asked[3]["from"], "swarm");
    assert!(
        asked[3]["text"]
            .as_str()
            .unwrap()
            .contains("shut down researcher")
    );
    printed.push(shutdown);
    let kill = cc.run(&["kill", "helper2"]);
    kill.assert_code(2);
    kill.assert_error("swarm will not kill its members (its own lead can");
    printed.push(kill);

    assert_eq!(
        std::fs::read(&config).unwrap(),
        roster_before,
        "roster byte-identical"
    );
    assert_eq!(
        &cc.inbox("team-lead")[..3],
        &lead_mail[..],
        "its lead's mail unread, unchanged"
    );
    for (name, id, pid) in &cc.panes {
        assert!(cc.tmux.pane_alive(id), "{name}'s pane {id} lives");
        assert!(crate::util::pid_alive(*pid), "{name}'s process lives");
    }
    assert!(crate::util::pid_alive(cc.lead_pid));
    for r in &printed {
        for said in ["killed", "was shut down", " shut down\n", "deleted"] {
            assert!(!r.stdout.contains(said), "{said:?}: {}", r.explain());
        }
    }
}
