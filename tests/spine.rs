//! The spine (issue 21) end to end in tmux: what used to live only in the
//! lead's memory now comes from the files (a plan request survives `q` and
//! a come-back, and `a` answers it), `swarm down` ends a team whose
//! teammate waits on the lead's answer, and the dialog's prune leaves the
//! team by the same one departure as `swarm prune` (worktrees retired).

use crate::util::dialog::{Dialog, lead_pane_of};
use crate::util::tmux::TmuxTeam;
use crate::util::{Run, WAIT, wait_until};
use crate::worktrees::{git, repo, worktree_of};

/// How fast the demo's tasks go here (its pace knob, 1 = as shipped).
const PACE: &str = "0.02";

fn demo_up(t: &TmuxTeam) -> Run {
    let mut c = t.cmd(&["up", "--demo", "--no-attach"]);
    c.env("SWARM_DEMO_PACE", PACE);
    let r = Run::of(c, &["up", "--demo", "--no-attach"]);
    r.assert_code(0);
    r
}

/// Waits until the demo's plan request waits for an answer, as `swarm
/// status --json` derives it from the files; returns its id.
fn wait_plan_request(t: &TmuxTeam) -> String {
    let mut id = String::new();
    wait_until(
        "the demo's plan request waits for the lead",
        WAIT * 2,
        || {
            let s = t.run(&["status", "--json"]);
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&s.stdout) else {
                return false;
            };
            match v["requests"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["kind"] == "plan"))
            {
                Some(r) => {
                    id = r["id"].as_str().unwrap_or_default().to_string();
                    true
                }
                None => false,
            }
        },
        || t.explain(),
    );
    id
}

/// Issue 21: a plan approval waiting in the TeamsDialog was gone after `q`
/// and `swarm up --team demo` ("0 waiting", `a` answered "no pending
/// requests", the teammate waited up to 900 s). The come-back's dialog
/// reads the request from the files, and `a` approves it.
#[test]
fn the_demos_plan_request_survives_q_and_a_come_back_and_a_approves_it() {
    let Some(t) = TmuxTeam::new("spine_plan_survives_q", "demo") else {
        return;
    };
    let up = demo_up(&t);
    let first_lead = t.wait_lead();
    let d = Dialog {
        pane: lead_pane_of(&t, &up.stderr),
        t,
    };
    d.roomy();
    let id = wait_plan_request(&d.t);
    d.wait_screen("the dialog shows the request waiting", |s| {
        s.contains("1 waiting")
    });
    d.keys(&["q"]);
    d.wait("the lead has ended", || !crate::util::pid_alive(first_lead));
    // Still waiting: nobody answered, nothing forgot it.
    assert_eq!(wait_plan_request(&d.t), id);
    let back = d.t.ok(&["up", "--team", "demo", "--no-attach"]);
    d.t.wait_new_lead(first_lead);
    let again = Dialog {
        pane: lead_pane_of(&d.t, &back.stderr),
        t: d.t,
    };
    again.roomy();
    again.wait_screen("the come-back's dialog shows the request", |s| {
        s.contains("1 waiting")
    });
    again.keys(&["a"]);
    again.wait("the asker has the approval", || {
        again
            .t
            .sb
            .tree()
            .iter()
            .any(|p| p.ends_with("demo/todos.txt"))
            && again.t.run(&["status", "--json"]).json()["requests"]
                .as_array()
                .is_some_and(|r| r.is_empty())
    });
    let todos = again
        .t
        .sb
        .tree()
        .into_iter()
        .find(|p| p.ends_with("demo/todos.txt"))
        .expect("todos.txt");
    let text = std::fs::read_to_string(again.t.sb.path(&todos)).unwrap();
    assert!(
        !text.contains("plan rejected"),
        "approved, not rejected: {text}\n{}",
        again.explain()
    );
}

/// Issue 21: `swarm down` could not end a team whose teammate waited in
/// `swarm ask` (it shut the others down, then stopped with "the team was
/// not deleted"). It answers the waiting request for the teammate (a plan
/// is rejected: "the team is shutting down"), and the team goes without
/// `--force`.
#[test]
fn down_ends_a_team_whose_teammate_waits_in_swarm_ask() {
    let Some(t) = TmuxTeam::new("spine_down_with_ask", "demo") else {
        return;
    };
    demo_up(&t);
    t.wait_lead();
    let id = wait_plan_request(&t);
    let down = t.run(&["down", "--team", "demo"]);
    down.assert_code(0);
    assert!(
        down.stdout.contains(&format!("answered request {id}"))
            && down.stdout.contains("team demo deleted"),
        "{}\n{}",
        down.explain(),
        t.explain()
    );
    assert!(t.config().is_none(), "the team is deleted");
    assert!(t.tmux.canary_alive());
}

/// Issue 21: the dialog's prune skipped the worktree retirement `swarm
/// prune` does. Both go through one departure now: a worktree with
/// nothing unmerged is removed with its branch, one holding work is kept
/// and named.
#[test]
fn the_dialogs_prune_retires_worktrees_as_swarm_prune_does() {
    let Some(t) = TmuxTeam::new("spine_prune_worktrees", "pw") else {
        return;
    };
    repo(&t);
    let up = t.up();
    let d = Dialog {
        pane: lead_pane_of(&t, &up.stderr),
        t,
    };
    for n in ["clean", "dirty"] {
        d.t.ok(&["spawn", n, "--worktree"]);
    }
    d.roomy();
    let (clean, dirty) = (worktree_of(&d.t, "clean"), worktree_of(&d.t, "dirty"));
    std::fs::write(dirty.join("notes.txt"), "work in progress\n").unwrap();
    for n in ["clean", "dirty"] {
        d.wait_screen(&format!("@{n} shows idle"), |s| {
            s.lines()
                .any(|l| l.contains(&format!("@{n} ")) && l.contains(" idle "))
        });
    }
    d.keys(&["p"]);
    d.wait_screen("the prune confirmation lists both", |s| {
        s.contains("Prune 2 idle teammates? y/N")
    });
    d.keys(&["y"]);
    d.wait("both leave the roster", || d.t.members().is_empty());
    // Its branch goes after it: the kept one's stays.
    d.wait("the clean worktree and its branch are removed", || {
        !clean.exists()
            && !git(&d.t, &d.t.work, &["branch", "--list", "swarm/pw/*"]).contains("swarm/pw/clean")
    });
    assert!(dirty.join("notes.txt").exists(), "{}", d.explain());
    let branches = git(&d.t, &d.t.work, &["branch", "--list", "swarm/pw/*"]);
    assert!(branches.contains("swarm/pw/dirty"), "{branches}");
    d.wait_screen("the dialog names the kept worktree", |s| {
        s.contains("kept worktree of dirty")
    });
}
