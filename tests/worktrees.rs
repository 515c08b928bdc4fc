//! A git worktree per teammate, end to end on a private tmux server:
//! three shell teammates from a spec with `worktree = true`, each
//! committing a change in its own worktree; `swarm status`, `swarm diff`,
//! `swarm merge` with and without a conflict; `swarm down` keeping the
//! worktrees that hold work and listing them; `down --force` saving the
//! work on a branch before removing the worktree; and the clear error
//! outside a git repository.

use crate::util::tmux::{TmuxTeam, WAIT};
use crate::util::wait_until;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `git -C dir ARGS` as the sandbox's user (its `HOME` holds the
/// identity), insisting on success.
pub fn git(t: &TmuxTeam, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("HOME", t.sb.root())
        .env_remove("GIT_DIR")
        .output()
        .expect("running git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository in the work dir with one commit (`shared.txt`), on
/// `main`, and a git identity in the sandbox's home for every process.
pub fn repo(t: &TmuxTeam) {
    std::fs::write(
        t.sb.path(".gitconfig"),
        "[user]\n\tname = Test\n\temail = test@localhost\n",
    )
    .unwrap();
    git(t, &t.work, &["init", "-q", "-b", "main"]);
    std::fs::write(t.work.join("shared.txt"), "base\n").unwrap();
    git(t, &t.work, &["add", "shared.txt"]);
    git(t, &t.work, &["commit", "-qm", "base"]);
}

/// A spec with `worktree = true` and shell teammates working in the repo.
pub fn spec(t: &TmuxTeam, names: &[&str]) -> PathBuf {
    let mut spec = format!("team = {:?}\nworktree = true\n", t.team);
    for n in names {
        spec.push_str(&format!(
            "[[teammate]]\nname = {n:?}\nagent = \"shell\"\ncwd = {:?}\n",
            t.work.to_string_lossy()
        ));
    }
    let path = t.sb.path("swarm.toml");
    std::fs::write(&path, spec).unwrap();
    path
}

pub fn worktree_of(t: &TmuxTeam, name: &str) -> PathBuf {
    let m = t.member(name).expect("member on the roster");
    PathBuf::from(
        m["worktreePath"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has a worktreePath: {m}")),
    )
}

/// Sends a shell teammate a command (it runs it in its cwd) and waits
/// until `done` holds.
pub fn order(t: &TmuxTeam, name: &str, command: &str, what: &str, done: impl FnMut() -> bool) {
    t.ok(&["send", "--to", name, command]);
    wait_until(what, WAIT, done, || t.explain());
}

fn commits(t: &TmuxTeam, dir: &Path) -> usize {
    git(t, dir, &["rev-list", "--count", "HEAD"])
        .parse()
        .unwrap()
}

#[test]
fn three_teammates_work_in_worktrees_then_diff_merge_and_down_keep_their_work() {
    let Some(t) = TmuxTeam::new("three_teammates_work_in_worktrees", "wt") else {
        return;
    };
    repo(&t);
    let names = ["alice", "bob", "carol"];
    t.ok(&["up", "--no-attach", &spec(&t, &names).to_string_lossy()]);
    for n in names {
        let wt = worktree_of(&t, n);
        assert_eq!(
            git(&t, &wt, &["rev-parse", "--abbrev-ref", "HEAD"]),
            format!("swarm/wt/{n}")
        );
        assert_eq!(
            t.member(n).unwrap()["cwd"].as_str(),
            Some(&*wt.to_string_lossy()),
            "{n} works in its worktree"
        );
    }
    // Each commits in its own worktree; bob and carol change the same line.
    for (n, file, text) in [
        ("alice", "alice.txt", "alice"),
        ("bob", "shared.txt", "bob"),
        ("carol", "shared.txt", "carol"),
    ] {
        let wt = worktree_of(&t, n);
        order(
            &t,
            n,
            &format!("echo {text} > {file} && git add {file} && git commit -qm {n}"),
            &format!("{n} commits in its worktree"),
            || commits(&t, &wt) == 2,
        );
    }
    assert_eq!(commits(&t, &t.work), 1, "the lead's branch is untouched");
    let status = t.ok(&["status", "--json"]).json();
    for m in status["members"].as_array().unwrap().iter().skip(1) {
        let w = &m["worktree"];
        assert_eq!(
            (w["ahead"].as_u64(), w["behind"].as_u64()),
            (Some(1), Some(0)),
            "{m}"
        );
        assert_eq!(w["changed"].as_u64(), Some(0), "{m}");
    }
    let text = t.ok(&["status"]).stdout;
    assert!(text.contains("swarm/wt/alice +1 -0, 0 changed"), "{text}");

    let diff = t.ok(&["diff", "alice"]).stdout;
    assert!(
        diff.contains("+++ b/alice.txt") && diff.contains("+alice"),
        "{diff}"
    );

    let merged = t.ok(&["merge", "alice"]).stdout;
    assert!(merged.contains("merged alice's 1 commit"), "{merged}");
    assert!(t.work.join("alice.txt").exists(), "alice's file is on main");
    t.ok(&["merge", "bob"]);
    assert_eq!(
        std::fs::read_to_string(t.work.join("shared.txt")).unwrap(),
        "bob\n"
    );

    // carol's change conflicts with bob's: reported with the file, aborted.
    let main_before = git(&t, &t.work, &["rev-parse", "HEAD"]);
    let carol_before = git(&t, &t.work, &["rev-parse", "swarm/wt/carol"]);
    t.run(&["merge", "carol"])
        .assert_code(2)
        .assert_error(
            "merging carol's branch into main conflicts in shared.txt; aborted: both branches are as they were",
        );
    assert_eq!(git(&t, &t.work, &["rev-parse", "HEAD"]), main_before);
    assert_eq!(
        git(&t, &t.work, &["rev-parse", "swarm/wt/carol"]),
        carol_before
    );
    assert_eq!(
        git(&t, &t.work, &["status", "--porcelain"]),
        "",
        "main is clean"
    );
    assert!(
        !t.work.join(".git/MERGE_HEAD").exists(),
        "no merge left half done"
    );
    // So is a rebase: carol's branch and worktree stay as they were.
    t.run(&["merge", "carol", "--rebase"])
        .assert_code(2)
        .assert_error("rebasing carol's branch onto main conflicts in shared.txt; aborted");
    assert_eq!(
        git(&t, &t.work, &["rev-parse", "swarm/wt/carol"]),
        carol_before
    );
    let carol_wt = worktree_of(&t, "carol");
    assert_eq!(
        git(&t, &carol_wt, &["status", "--porcelain"]),
        "",
        "no rebase left half done"
    );
    assert_eq!(git(&t, &t.work, &["rev-parse", "HEAD"]), main_before);

    // alice leaves a file uncommitted; bob has nothing unmerged.
    let alice_wt = worktree_of(&t, "alice");
    order(
        &t,
        "alice",
        "echo wip > wip.txt",
        "alice writes wip.txt",
        || alice_wt.join("wip.txt").exists(),
    );
    let bob_wt = worktree_of(&t, "bob");
    let down = t.ok(&["down"]).stdout;
    assert!(
        down.contains("kept worktree of alice: 1 uncommitted file, 0 unmerged commits"),
        "{down}"
    );
    assert!(
        down.contains("kept worktree of carol: 0 uncommitted files, 1 unmerged commit"),
        "{down}"
    );
    assert!(down.contains("removed the worktree of bob"), "{down}");
    assert!(alice_wt.join("wip.txt").exists() && carol_wt.exists());
    assert!(!bob_wt.exists(), "bob's worktree held nothing unmerged");
}

#[test]
fn down_force_saves_the_work_on_a_branch_before_removing_the_worktree() {
    let Some(t) = TmuxTeam::new("down_force_saves_the_work", "wf") else {
        return;
    };
    repo(&t);
    t.up();
    t.ok(&["spawn", "dana", "--agent", "shell", "--worktree"]);
    let wt = worktree_of(&t, "dana");
    std::fs::write(wt.join("notes.txt"), "unsaved\n").unwrap();
    // Killed, a teammate keeps its worktree's work too (a clean one goes).
    t.ok(&["spawn", "fay", "--agent", "shell", "--worktree"]);
    t.ok(&["spawn", "gus", "--agent", "shell", "--worktree"]);
    let (fay, gus) = (worktree_of(&t, "fay"), worktree_of(&t, "gus"));
    std::fs::write(fay.join("draft.txt"), "draft\n").unwrap();
    let killed = t.ok(&["kill", "fay"]).stdout;
    assert!(
        killed.contains("kept worktree of fay: 1 uncommitted file, 0 unmerged commits"),
        "{killed}"
    );
    assert!(fay.join("draft.txt").exists());
    // A send to gus that its sender abandoned an hour ago, half written.
    let spool = t.sb.path("swarm/wf/spool/gus");
    std::fs::create_dir_all(&spool).unwrap();
    let abandoned = spool.join("00000000000000000001-feed.tmp");
    std::fs::write(&abandoned, b"{\"from\":").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&abandoned)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    let idle = t.sb.path("swarm/wf/runtime/gus.idle.json");
    wait_until(
        "gus's runtime marks itself idle",
        WAIT,
        || idle.exists(),
        || t.explain(),
    );
    let pruned = t.ok(&["shutdown", "gus"]).stdout;
    assert!(pruned.contains("removed the worktree of gus"), "{pruned}");
    assert!(!gus.exists());
    // Issue 24, item 10: nothing of gus's is left behind but what a
    // revival reads: not its worktree's lock, not its doorbell. (The lead
    // sees the same shutdown approval and may still be retiring the
    // worktree, its lock file open, when `shutdown` returns: it removes
    // the file as it finishes.)
    let lock = gus.with_file_name("gus.retire-lock");
    wait_until(
        "the retired worktree's lock file is gone",
        WAIT,
        || !lock.exists(),
        || t.explain(),
    );
    assert!(
        !t.sb.path("swarm/wf/runtime/gus.wake").exists(),
        "the departed runtime's doorbell is gone"
    );
    assert!(!idle.exists(), "so is its idle mark");
    assert!(
        !spool.exists(),
        "the departed member's spool is gone with its leftover"
    );
    // fay's worktree is kept: so is its lock file, which guards it.
    assert!(fay.with_file_name("fay.retire-lock").exists());
    let down = t.ok(&["down", "--force"]).stdout;
    let saved = down
        .lines()
        .find_map(|l| l.split("on branch ").nth(1))
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("a saved branch is named: {down}"))
        .to_string();
    assert!(saved.starts_with("swarm-saved/wf/dana-"), "{down}");
    assert!(!wt.exists(), "the worktree is removed once saved");
    assert_eq!(
        git(&t, &t.work, &["show", &format!("{saved}:notes.txt")]),
        "unsaved",
        "the uncommitted file is on the saved branch"
    );
}

#[test]
fn a_worktree_outside_a_git_repository_is_a_clear_error() {
    let Some(t) = TmuxTeam::new("a_worktree_outside_a_git_repository", "wn") else {
        return;
    };
    t.up();
    t.run(&["spawn", "eve", "--agent", "shell", "--worktree"])
        .assert_code(2)
        .assert_error("is not inside a git repository, so eve cannot have a worktree");
    assert!(
        t.member("eve").is_none(),
        "nothing half made: {}",
        t.explain()
    );
    let empty = t.work.join("empty");
    std::fs::create_dir(&empty).unwrap();
    git(&t, &empty, &["init", "-q"]);
    let cwd = empty.to_string_lossy();
    t.run(&["spawn", "eve", "--worktree", "--cwd", &cwd])
        .assert_code(2)
        .assert_error("has no commit yet for eve's branch to start from");
}

#[test]
fn the_dialog_shows_a_worktree_and_its_kill_keeps_the_work() {
    use crate::util::dialog::{Dialog, lead_pane_of};
    let Some(t) = TmuxTeam::new("tui_worktree", "tw") else {
        return;
    };
    repo(&t);
    let up = t.up();
    let pane = lead_pane_of(&t, &up.stderr);
    t.ok(&["spawn", "wes", "--agent", "shell", "--worktree"]);
    // As `Dialog::open` does: every pane open before the lead's is zoomed.
    let d = Dialog { t, pane };
    d.roomy();
    // The dialog redraws on team events (a message here), not on file
    // changes in a worktree.
    d.t.ok(&["send", "--to", "wes", "true"]);
    d.wait_screen("the dialog shows wes's branch and progress", |s| {
        s.contains("⎇ swarm/tw/wes +0 -0, 0 changed")
    });
    std::fs::write(worktree_of(&d.t, "wes").join("draft.txt"), "draft\n").unwrap();
    // Its line is asked of git at most every 2 s: a message a second
    // until a redraw comes after that.
    let mut nudged = std::time::Instant::now() - std::time::Duration::from_secs(1);
    d.wait("the dialog sees wes's uncommitted file", || {
        if d.screen().contains("⎇ swarm/tw/wes +0 -0, 1 changed") {
            return true;
        }
        if nudged.elapsed() >= std::time::Duration::from_secs(1) {
            d.t.ok(&["send", "--to", "wes", "true"]);
            nudged = std::time::Instant::now();
        }
        false
    });
    d.select("wes");
    d.keys(&["k"]);
    d.wait_screen("the kill confirmation names @wes", |s| {
        s.contains("Kill @wes? y/N")
    });
    d.keys(&["y"]);
    // The kill's outcome is one of the lead's events (its log has them all).
    d.wait("the kill says the worktree was kept", || {
        std::fs::read_to_string(d.t.lead_log())
            .is_ok_and(|l| l.contains("kept worktree of wes: 1 uncommitted file,"))
    });
    assert!(
        worktree_of_path(&d.t, "tw", "wes")
            .join("draft.txt")
            .exists()
    );
}

/// Where `name`'s worktree is, once its roster entry is gone.
fn worktree_of_path(t: &TmuxTeam, team: &str, name: &str) -> PathBuf {
    t.sb.path(&format!("worktrees/{team}/{name}"))
}

/// A shutdown the lead carries out (the dialog's `s`, or any approval that
/// reaches the lead) keeps a worktree holding work and says so, as `swarm
/// shutdown`, `kill` and `down` do.
#[test]
fn a_shutdown_approved_through_the_lead_keeps_the_work_and_says_so() {
    let Some(t) = TmuxTeam::new("wt_lead_shutdown", "tl") else {
        return;
    };
    repo(&t);
    t.up();
    t.ok(&["spawn", "sam", "--agent", "shell", "--worktree"]);
    std::fs::write(worktree_of(&t, "sam").join("draft.txt"), "draft\n").unwrap();
    t.ok(&["send", "--to", "sam", "--shutdown-request"]);
    wait_until(
        "the lead released sam and named its kept worktree",
        WAIT,
        || {
            std::fs::read_to_string(t.lead_log())
                .is_ok_and(|l| l.contains("kept worktree of sam: 1 uncommitted file,"))
        },
        || t.explain(),
    );
    assert!(worktree_of_path(&t, "tl", "sam").join("draft.txt").exists());
}
