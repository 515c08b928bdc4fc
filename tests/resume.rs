//! A team that survives the end of its tmux server: `tmux kill-server`,
//! then `swarm up --resume` brings the same three shell teammates back, in
//! new panes, in their worktrees, with the mail that came meanwhile and
//! their claimed tasks; `--fresh` hands the claimed tasks back instead.
//! And a team on a private tmux server is found from its record by
//! commands run later from another shell, without `SWARM_TMUX_SOCKET`.

use crate::util::tmux::{TmuxTeam, WAIT};
use crate::util::{Run, wait_until};
use crate::worktrees::{repo, spec, worktree_of};

/// Ends the private tmux server and waits until the panes' processes
/// (the teammates' runtimes, and the lead) are gone.
fn kill_server(t: &TmuxTeam, names: &[&str]) {
    let mut pids: Vec<u32> = names.iter().map(|n| t.pid_of(n)).collect();
    pids.push(t.wait_lead());
    t.tmux.run(&["kill-server"]);
    wait_until(
        "every teammate's process ended with the tmux server",
        WAIT,
        || pids.iter().all(|p| !crate::util::pid_alive(*p)),
        || t.explain(),
    );
}

fn task_id(out: &str) -> String {
    out.trim()
        .rsplit(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .expect("a task id")
        .to_string()
}

#[test]
fn up_resume_after_kill_server_brings_the_same_three_back_with_mail_and_tasks() {
    let Some(t) = TmuxTeam::new("up_resume_after_kill_server", "rs") else {
        return;
    };
    repo(&t);
    let names = ["alice", "bob", "carol"];
    t.ok(&["up", "--no-attach", &spec(&t, &names).to_string_lossy()]);
    let before: Vec<(String, std::path::PathBuf)> = names
        .iter()
        .map(|n| (t.pane_of(n), worktree_of(&t, n)))
        .collect();
    kill_server(&t, &names);

    // While nothing runs: mail for each, and a task carol has claimed.
    for n in names {
        t.ok(&["send", "--to", n, &format!("echo {n} > back-{n}.txt")]);
    }
    // Blocked by a task no shell teammate takes (it has no command): once
    // back on the board nobody claims it, so the test can see it there
    // (the fresh teammates start together and may claim a free task at
    // once, carol among them).
    let gate = task_id(&t.ok(&["task", "create", "a gate nobody takes"]).stdout);
    let id = task_id(
        &t.ok(&[
            "task",
            "create",
            "carol's task",
            "--command",
            "sleep 60",
            "--blocked-by",
            &gate,
        ])
        .stdout,
    );
    t.ok(&["task", "update", &id, "--owner", "carol"]);

    // Every pane recorded on the roster 300 ms after it opens, as a team
    // past the registrar's first 8 has them: a teammate running before its
    // pane is recorded keeps its claim all the same.
    let mut late = t.cmd(&["up", "--resume", "--no-attach"]);
    late.env("SWARM_FAULT_REGISTER_LATE_MS", "300");
    let up = crate::util::Run::of(late, &["up", "--resume", "--no-attach"]);
    up.assert_code(0);
    for n in names {
        assert!(
            up.stderr
                .contains(&format!("{n}: back; the shell agent keeps no conversation")),
            "what was resumed is said per teammate\n{}",
            up.explain()
        );
    }
    for (n, (old_pane, wt)) in names.iter().zip(&before) {
        assert_eq!(worktree_of(&t, n), *wt, "{n} keeps its worktree");
        // Its unread mail was waiting: run in its worktree by its new runtime.
        wait_until(
            &format!("{n} reads the mail that came while it was gone"),
            WAIT,
            || wt.join(format!("back-{n}.txt")).exists(),
            || t.explain(),
        );
        let pane = t.pane_of(n);
        assert!(
            t.tmux.pane(&pane).is_some_and(|p| !p.dead),
            "{n} runs in a new pane (was {old_pane}, now {pane})\n{}",
            t.explain()
        );
    }
    let task = t.ok(&["task", "get", &id, "--json"]).json();
    assert_eq!(task["owner"], "carol", "carol's claim is intact: {task}");

    // --fresh: the claim goes back to the board.
    kill_server(&t, &names);
    let fresh = t.ok(&["up", "--fresh", "--no-attach"]);
    assert!(
        fresh.stderr.contains(&format!(
            "carol: started fresh; task(s) #{id} back on the board"
        )),
        "{}",
        fresh.explain()
    );
    let task = t.ok(&["task", "get", &id, "--json"]).json();
    // Back on the board: no owner, pending.
    assert!(
        task.get("owner").is_none_or(|o| o.is_null() || o == ""),
        "carol's task went back to the board: {task}"
    );
    assert_eq!(task["status"], "pending", "{task}");

    // Without a terminal and without a flag, `up` only says how.
    let old_lead = t.wait_lead();
    kill_server(&t, &names);
    let asked = t.ok(&["up", "--no-attach"]);
    assert!(
        asked
            .stderr
            .contains("are gone; `swarm up --team rs --resume` brings them back"),
        "{}",
        asked.explain()
    );
    // On a terminal it asks; "y" brings them back.
    let lead = t.wait_new_lead(old_lead);
    t.tmux.run(&["kill-server"]);
    wait_until(
        "the lead ends with the server",
        WAIT,
        || !crate::util::pid_alive(lead),
        || t.explain(),
    );
    let answered = on_a_terminal(&t, "up --no-attach", "y\n");
    assert!(
        answered.contains("the panes of alice, bob, carol are gone. Bring them back?")
            && answered.contains("alice: back;"),
        "{answered}\n{}",
        t.explain()
    );
    for n in names {
        let pane = t.pane_of(n);
        assert!(
            t.tmux.pane(&pane).is_some_and(|p| !p.dead),
            "{n} is back\n{}",
            t.explain()
        );
    }
    t.ok(&["down", "--force"]);
}

/// Runs `swarm ARGS` (space-separated, no quoting) on a terminal of its
/// own (`script`), typing `input`; returns what the terminal showed.
fn on_a_terminal(t: &TmuxTeam, args: &str, input: &str) -> String {
    use std::io::Write;
    let c = t.cmd(&[]);
    let line = format!("{} {args}", crate::util::swarm_bin());
    let mut child = std::process::Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_clear()
        .envs(c.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(c.get_current_dir().expect("a work dir"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running script(1)");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("typing");
    // Kept open until it exits: an end of input could end the terminal.
    let out =
        crate::util::wait_for_exit(&format!("swarm {args} on a terminal"), WAIT, child, || {
            t.explain()
        });
    drop(stdin);
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn a_team_on_a_private_server_is_found_from_its_record_without_the_variable() {
    let Some(t) = TmuxTeam::new("private_server_found_from_record", "ps") else {
        return;
    };
    let spec = t.sb.path("swarm.toml");
    std::fs::write(
        &spec,
        "team = \"ps\"\n[[teammate]]\nname = \"alice\"\nagent = \"shell\"\n",
    )
    .unwrap();
    t.ok(&["up", "--no-attach", &spec.to_string_lossy()]);
    t.wait_lead();
    let alice = t.pane_of("alice");
    // Another shell: no SWARM_TMUX_SOCKET, and tmux's default server
    // there is one of the sandbox's (so nothing here, fixed or not, can
    // reach the developer's).
    let elsewhere = |args: &[&str], socket: Option<&std::path::Path>| {
        let mut c = t.cmd(args);
        c.env_remove("SWARM_TMUX_SOCKET")
            .env("TMUX_TMPDIR", t.sb.path("default-tmux"));
        if let Some(s) = socket {
            c.env("SWARM_TMUX_SOCKET", s);
        }
        Run::of(c, args)
    };
    std::fs::create_dir_all(t.sb.path("default-tmux")).unwrap();

    // A socket that is not the team's: one error naming both, nothing done.
    let other = t.sb.path("other.sock");
    let refused = elsewhere(&["kill", "alice"], Some(&other));
    refused.assert_error(&t.tmux.sock.to_string_lossy());
    assert!(
        refused.stderr.contains(&*other.to_string_lossy()),
        "{}",
        refused.explain()
    );
    assert!(t.tmux.pane_alive(&alice), "{}", t.explain());
    let doctor = elsewhere(&["doctor"], Some(&other));
    assert!(
        doctor
            .stdout
            .contains("problem: team ps runs on the tmux server at"),
        "doctor names the disagreement\n{}",
        doctor.explain()
    );

    // The session record lost (say, a team from before it kept the socket):
    // the roster's swarmTmuxSocket still names the server.
    std::fs::remove_file(t.sb.path("swarm/ps/session.json")).unwrap();
    let status = elsewhere(&["status", "--json"], None);
    status.assert_code(0);
    let row = status.json()["members"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == "alice").cloned())
        .unwrap_or_else(|| panic!("alice in status\n{}", status.explain()));
    assert_ne!(
        row["status"],
        "dead",
        "alice's pane is looked up on the team's server\n{}",
        status.explain()
    );
    elsewhere(&["down", "--force"], None).assert_code(0);
    wait_until(
        "down from another shell ends alice's pane on the team's server",
        WAIT,
        || t.tmux.pane(&alice).is_none(),
        || t.explain(),
    );
}

#[test]
fn a_claude_teammate_started_afresh_or_resumed_gets_the_mail_that_came_meanwhile() {
    let Some(t) = TmuxTeam::new("up_fresh_claude_keeps_mail", "cf") else {
        return;
    };
    let spec = t.sb.path("swarm.toml");
    std::fs::write(
        &spec,
        format!(
            "team = \"cf\"\n[[teammate]]\nname = \"cc\"\nagent = \"claude\"\n\
             prompt = \"You are cc.\"\ncommand = [{:?}]\ncwd = {:?}\n",
            crate::util::tmux::agent("recorder"),
            t.work.to_string_lossy()
        ),
    )
    .unwrap();
    t.ok(&["up", "--no-attach", &spec.to_string_lossy()]);
    t.wait_ready("cc");
    kill_server(&t, &["cc"]);
    // While it is down (and before it ever read its prompt): mail for it.
    t.ok(&["send", "--to", "cc", "while you were down"]);
    t.ok(&["up", "--fresh", "--no-attach"]);
    let inbox = t.ok(&["inbox", "cc", "--json"]).json();
    let texts: Vec<&str> = inbox
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["read"] != true)
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        ["You are cc.", "while you were down"],
        "the prompt once, first, then the mail, all unread\n{}",
        t.explain()
    );

    // --resume: no prompt, but the lead's signed mail that came meanwhile,
    // however old, is stamped afresh and signed again for the resumed
    // session to trust (reference §4.5: 120 s).
    kill_server(&t, &["cc"]);
    let root = swarm::paths::Root::new(t.sb.root());
    let key = swarm::mailbox::signing::LeadKey::load(&root, "cf", "cc")
        .unwrap()
        .expect("cc's signing key");
    let old = "2026-01-01T00:00:00.000Z";
    let mut signed = swarm::mailbox::Entry::new("team-lead", "signed meanwhile".into(), None, None);
    signed.timestamp = old.into();
    key.sign_entry(&mut signed);
    swarm::mailbox::Mailbox::new(&root, "cf")
        .append("cc", signed)
        .unwrap();
    t.ok(&["up", "--resume", "--no-attach"]);
    let inbox = swarm::mailbox::Mailbox::new(&root, "cf")
        .read("cc")
        .unwrap();
    let e = inbox
        .entries
        .iter()
        .find(|e| e.text == "signed meanwhile")
        .unwrap_or_else(|| panic!("the mail is kept\n{}", t.explain()));
    let verifier = swarm::mailbox::signing::LeadVerifier::parse(&key.verify_key_arg(0)).unwrap();
    assert!(
        e.timestamp != old && verifier.verifies(e),
        "stamped afresh and signed again: {e:?}"
    );
    // The fake never answers a shutdown request.
    t.ok(&["down", "--force", "--wait", "0"]);
}

#[test]
fn a_team_on_the_default_server_refuses_another_socket_named_later() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(t) = TmuxTeam::new("default_server_refuses_another_socket", "ds") else {
        return;
    };
    // tmux's default server, as seen in this sandbox: its socket
    // ($TMUX_TMPDIR/tmux-<uid>/default) links to the test's private server.
    let tmpdir = t.sb.path("tmux-tmpdir");
    let uid = std::fs::metadata(t.sb.root()).unwrap().uid();
    let dir = tmpdir.join(format!("tmux-{uid}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&t.tmux.sock, dir.join("default")).unwrap();
    let run = |args: &[&str], socket: Option<&std::path::Path>| {
        let mut c = t.cmd(args);
        c.env_remove("SWARM_TMUX_SOCKET")
            .env("TMUX_TMPDIR", &tmpdir);
        if let Some(s) = socket {
            c.env("SWARM_TMUX_SOCKET", s);
        }
        Run::of(c, args)
    };
    let spec = t.sb.path("swarm.toml");
    std::fs::write(
        &spec,
        "team = \"ds\"\n[[teammate]]\nname = \"alice\"\nagent = \"shell\"\n",
    )
    .unwrap();
    run(&["up", "--no-attach", &spec.to_string_lossy()], None).assert_code(0);
    t.wait_lead();
    let alice = t.pane_of("alice");
    assert!(t.tmux.pane_alive(&alice), "{}", t.explain());

    // Another server named later (a stray SWARM_TMUX_SOCKET): refused,
    // rather than finding alice "gone" there and removing her.
    let refused = run(&["kill", "alice"], Some(&t.sb.path("other.sock")));
    refused.assert_error("team ds runs on tmux's default server (");
    assert!(
        t.tmux.pane_alive(&alice) && t.member("alice").is_some(),
        "alice is untouched\n{}",
        t.explain()
    );
    run(&["down", "--force"], None).assert_code(0);
}
