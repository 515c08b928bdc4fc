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
    let refusals: [(&[&str], &str); 10] = [
        (&["down", "--force"], "swarm will not take it down"),
        (&["up", "--no-attach"], "swarm will not lead it"),
        (
            &["team", "delete", CC_TEAM, "--force"],
            "swarm will not delete it",
        ),
        (&["kill", "researcher"], "swarm will not kill its members"),
        (
            &["shutdown", "researcher"],
            "swarm will not shut its members down",
        ),
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
