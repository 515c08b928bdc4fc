//! A git worktree per teammate: made at spawn on a branch
//! `swarm/<team>/<name>` from the lead's HEAD, summarised for `swarm
//! status` and the dialog (branch, changed files, ahead/behind the lead's
//! branch), diffed and merged back by `swarm diff` / `swarm merge`, and
//! retired when its teammate leaves without losing work.
//!
//! git is driven by argv (never a shell) through swarm's one child-process
//! runner (`swarm_backends::command`), each call with a timeout. What a
//! member's worktree is lives on its roster entry: `worktreePath` (Claude
//! Code's own member field for it, read by its 2.1.88) and swarm's
//! `swarmWorktree` object `{branch, base, repo}` (`{}` before the worktree
//! exists: the spec or `--worktree` asked for one). This module is the only
//! code that reads or writes them.

use crate::names;
use crate::team::{Member, Team};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use swarm_backends::BackendError;
use swarm_backends::command::Invocation;

/// How long one git call may take (a checkout of a large tree is the
/// slow one).
const GIT_TIMEOUT: Duration = Duration::from_secs(120);

/// The member field Claude Code reads for a teammate's worktree.
const PATH_KEY: &str = "worktreePath";
/// swarm's record of the worktree: `{branch, base, repo}`.
const INFO_KEY: &str = "swarmWorktree";

/// A teammate's worktree as recorded on its roster entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's directory.
    pub path: PathBuf,
    /// The teammate's branch, `swarm/<team>/<name>`.
    pub branch: String,
    /// The lead's branch it was made from (or a commit, from a detached HEAD).
    pub base: String,
    /// The lead's repository (its main working tree).
    pub repo: PathBuf,
}

/// What a worktree holds that its lead's branch does not.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Progress {
    pub branch: String,
    /// Files changed and not committed (untracked ones included).
    pub changed: usize,
    /// Commits on the teammate's branch that are not on the lead's.
    pub ahead: usize,
    /// Commits on the lead's branch that are not on the teammate's.
    pub behind: usize,
}

impl Progress {
    /// `swarm/t/alice +2 -1, 3 changed`.
    pub fn line(&self) -> String {
        format!(
            "{} +{} -{}, {} changed",
            self.branch, self.ahead, self.behind, self.changed
        )
    }

    pub fn json(&self) -> Value {
        json!({"branch": self.branch, "changed": self.changed, "ahead": self.ahead,
               "behind": self.behind, "line": self.line()})
    }
}

/// The output of one git call.
struct GitOut {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `git ARGS` in `dir` with [`GIT_TIMEOUT`], through swarm's one
/// child-process runner (`swarm_backends::command`); a failure to start, a
/// timeout or an answer cut short (its output held open by a process git
/// left behind) is an error, a non-zero exit is returned.
fn git_out(dir: &Path, args: &[&str]) -> Result<GitOut> {
    let mut inv = Invocation::new("git", args.iter().map(|a| a.to_string()).collect());
    inv.cwd = Some(dir.to_path_buf());
    inv.timeout = GIT_TIMEOUT;
    inv.env = vec![
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
        // No optional locks: `git status` would otherwise take the
        // worktree's `index.lock` to refresh the index, and the teammate's
        // own `git add` in that worktree, meanwhile, failed with "Unable
        // to create index.lock: File exists" (the dialog asks every 2 s).
        ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
    ];
    match inv.output_blocking() {
        Ok(out) => Ok(GitOut {
            ok: out.success(),
            stdout: out.stdout,
            stderr: out.stderr.trim().to_string(),
        }),
        Err(BackendError::Timeout { .. }) => bail!(
            "git {} in {} took more than {} s; stopped",
            args.join(" "),
            dir.display(),
            GIT_TIMEOUT.as_secs()
        ),
        Err(e @ BackendError::Launch { .. }) => {
            Err(e).with_context(|| format!("starting git {} in {}", args.join(" "), dir.display()))
        }
        Err(e) => Err(e).with_context(|| format!("reading the output of git {}", args.join(" "))),
    }
}

/// Runs `git ARGS` in `dir`; a non-zero exit is an error carrying stderr.
fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = git_out(dir, args)?;
    if !out.ok {
        bail!(
            "git {} in {} failed: {}",
            args.join(" "),
            dir.display(),
            out.stderr
        );
    }
    Ok(out.stdout)
}

/// `swarm/<team>/<name>`, from names that pass swarm's rules (so the
/// branch is a valid ref name: lowercase letters, digits and '-').
pub fn branch_name(team: &str, member: &str) -> Result<String> {
    names::validate_team(team)?;
    names::validate_member(member)?;
    Ok(format!("swarm/{team}/{member}"))
}

/// The spec or `--worktree` asked for a worktree for this member.
pub fn wanted(m: &Member) -> bool {
    m.extra.contains_key(INFO_KEY)
}

/// Marks a member as wanting a worktree (made when its pane is opened).
pub fn want(m: &mut Member) {
    if !wanted(m) {
        m.extra.insert(INFO_KEY.into(), json!({}));
    }
}

/// The member's worktree, once made.
pub fn of(m: &Member) -> Option<Worktree> {
    let info = m.extra.get(INFO_KEY)?;
    let s = |k: &str| info.get(k).and_then(Value::as_str).map(str::to_string);
    Some(Worktree {
        path: PathBuf::from(m.extra.get(PATH_KEY)?.as_str()?),
        branch: s("branch")?,
        base: s("base")?,
        repo: PathBuf::from(s("repo")?),
    })
}

fn record(m: &mut Member, wt: &Worktree) {
    m.extra.insert(
        PATH_KEY.into(),
        Value::String(wt.path.to_string_lossy().into_owned()),
    );
    m.extra.insert(
        INFO_KEY.into(),
        json!({"branch": wt.branch, "base": wt.base, "repo": wt.repo.to_string_lossy()}),
    );
}

/// Makes (or finds again) the worktree of `m`, whose pane is about to open
/// in `cwd`, and points the member's `cwd` at the same place inside it.
/// The first time, the repository is the one holding `cwd` and the branch
/// starts at its HEAD; later (a respawn, `up --resume`) the recorded
/// worktree is reused, or added again from its branch if its directory went.
pub fn ensure(team: &Team, m: &mut Member, cwd: &Path) -> Result<Worktree> {
    let path = team.root.worktree(&team.name, &m.name)?;
    let wt = match of(m) {
        Some(wt) => {
            // Spawned again from elsewhere: it still works in its worktree.
            if !cwd.starts_with(&wt.path) {
                m.cwd = Some(wt.path.to_string_lossy().into_owned());
            }
            wt
        }
        None => {
            let branch = branch_name(&team.name, &m.name)?;
            let found = git_out(
                cwd,
                &["rev-parse", "--show-toplevel", "--abbrev-ref", "HEAD"],
            )?;
            if !found.ok && git_out(cwd, &["rev-parse", "--show-toplevel"])?.ok {
                bail!(
                    "the git repository at {} has no commit yet for {}'s branch to start from",
                    cwd.display(),
                    m.name
                );
            }
            if !found.ok {
                bail!(
                    "{} is not inside a git repository, so {} cannot have a worktree \
                     (run `git init` there, or drop `worktree`/`--worktree`)",
                    cwd.display(),
                    m.name
                );
            }
            let mut lines = found.stdout.lines();
            let repo = PathBuf::from(lines.next().unwrap_or_default());
            let mut base = lines.next().unwrap_or_default().to_string();
            if base == "HEAD" || base.is_empty() {
                base = git(&repo, &["rev-parse", "HEAD"])
                    .context("the lead's repository has no commit to branch from")?
                    .trim()
                    .to_string();
            }
            let sub = cwd
                .canonicalize()
                .ok()
                .and_then(|c| {
                    Some(
                        c.strip_prefix(repo.canonicalize().ok()?)
                            .ok()?
                            .to_path_buf(),
                    )
                })
                .unwrap_or_default();
            let dir = match sub.as_os_str().is_empty() {
                true => path.clone(),
                false => path.join(sub),
            };
            m.cwd = Some(dir.to_string_lossy().into_owned());
            Worktree {
                path,
                branch,
                base,
                repo,
            }
        }
    };
    add(&wt).with_context(|| format!("making the worktree of {}", m.name))?;
    record(m, &wt);
    Ok(wt)
}

/// `git worktree add`, unless the worktree is already there on its branch.
fn add(wt: &Worktree) -> Result<()> {
    if wt.path.join(".git").exists() {
        let head = git(&wt.path, &["rev-parse", "--abbrev-ref", "HEAD"])?;
        if head.trim() != wt.branch {
            bail!(
                "{} exists but is on {:?}, not {}; move it away first",
                wt.path.display(),
                head.trim(),
                wt.branch
            );
        }
        return Ok(());
    }
    if let Some(parent) = wt.path.parent() {
        crate::atomic_file::ensure_dir(parent)?;
    }
    let path = wt.path.to_string_lossy();
    let exists = git_out(
        &wt.repo,
        &[
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{}", wt.branch),
        ],
    )?
    .ok;
    if exists {
        // A worktree whose directory went is still registered until pruned.
        git(&wt.repo, &["worktree", "prune"])?;
        git(&wt.repo, &["worktree", "add", "--quiet", &path, &wt.branch])?;
    } else {
        git(
            &wt.repo,
            &[
                "worktree", "add", "--quiet", "-b", &wt.branch, &path, &wt.base,
            ],
        )?;
    }
    Ok(())
}

/// Uncommitted files in the worktree (untracked ones included).
fn changed_files(wt: &Worktree) -> Result<Vec<String>> {
    let out = git(
        &wt.path,
        &["status", "--porcelain", "--untracked-files=all"],
    )?;
    Ok(out
        .lines()
        .filter(|l| l.len() > 3)
        .map(|l| l[3..].to_string())
        .collect())
}

/// The one function that says how a teammate's worktree stands against
/// the lead's branch: its branch, uncommitted files, commits ahead and behind.
pub fn progress(wt: &Worktree) -> Result<Progress> {
    let changed = changed_files(wt)?.len();
    let (ahead, behind) = ahead_behind(wt)?;
    Ok(Progress {
        branch: wt.branch.clone(),
        changed,
        ahead,
        behind,
    })
}

/// Commits on the teammate's branch not on the lead's, and the reverse.
fn ahead_behind(wt: &Worktree) -> Result<(usize, usize)> {
    let range = format!("{}...{}", wt.base, wt.branch);
    let counts = git(&wt.repo, &["rev-list", "--left-right", "--count", &range])?;
    let mut it = counts
        .split_whitespace()
        .map(|n| n.parse::<usize>().unwrap_or(0));
    let behind = it.next().unwrap_or(0);
    Ok((it.next().unwrap_or(0), behind))
}

/// [`progress`] of a member, or `None` when it has no worktree; a git
/// failure is shown in the line rather than hidden.
pub fn member_line(m: &Member) -> Option<String> {
    let wt = of(m)?;
    Some(match progress(&wt) {
        Ok(p) => p.line(),
        Err(e) => format!("{} (git: {e:#})", wt.branch),
    })
}

/// How long the dialog shows a worktree's line before asking git again.
const SHOWN_FOR: Duration = Duration::from_secs(2);

/// [`member_line`] for the dialog, which redraws often: each worktree's
/// line is asked of git at most every `SHOWN_FOR`.
pub fn member_line_cached(m: &Member) -> Option<String> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, (Instant, String)>>> = OnceLock::new();
    let wt = of(m)?;
    let seen = SEEN.get_or_init(Default::default);
    if let Ok(map) = seen.lock()
        && let Some((at, line)) = map.get(&wt.path)
        && at.elapsed() < SHOWN_FOR
    {
        return Some(line.clone());
    }
    let line = member_line(m)?;
    if let Ok(mut map) = seen.lock() {
        map.insert(wt.path, (Instant::now(), line.clone()));
    }
    Some(line)
}

/// [`progress`] of a member as JSON (`null` without a worktree; `{"error"}`
/// when git failed).
pub fn member_json(m: &Member) -> Value {
    let Some(wt) = of(m) else {
        return Value::Null;
    };
    match progress(&wt) {
        Ok(p) => p.json(),
        Err(e) => json!({
            "branch": wt.branch,
            "error": format!("{e:#}"),
            "line": format!("{} (git: {e:#})", wt.branch),
        }),
    }
}

/// The member's worktree, or an error saying it has none.
pub fn required(team: &Team, name: &str) -> Result<Worktree> {
    let tf = team.roster().read()?;
    let m = tf
        .member(name)
        .ok_or_else(|| crate::team::RosterError::NoSuchMember {
            team: team.name.clone(),
            name: name.to_string(),
            members: tf.member_names(),
        })?;
    of(m).ok_or_else(|| {
        anyhow::anyhow!(
            "{name} has no worktree (spawn it with --worktree, or `worktree = true` in the spec)"
        )
    })
}

/// What the teammate changed since its branch left the lead's: committed
/// and uncommitted changes to tracked files as one patch against the fork
/// point, then the untracked files by name.
pub fn diff(wt: &Worktree, stat: bool) -> Result<String> {
    let fork = git(&wt.path, &["merge-base", &wt.base, "HEAD"])?;
    let mut args = vec!["diff", "--no-color"];
    if stat {
        args.push("--stat");
    }
    args.push(fork.trim());
    let mut out = git(&wt.path, &args)?;
    let untracked = git(&wt.path, &["ls-files", "--others", "--exclude-standard"])?;
    for f in untracked.lines() {
        out.push_str(&format!("untracked: {f}\n"));
    }
    Ok(out)
}

/// How `swarm merge` brings a teammate's branch into the lead's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeMode {
    /// A merge commit on the lead's branch (fast-forward when possible).
    Merge,
    /// The teammate's branch rebased onto the lead's, then fast-forwarded.
    Rebase,
}

/// Brings `wt.branch` into `wt.base` in the lead's checkout. The lead's
/// checkout must be on `base` with no uncommitted changes to tracked files.
/// A conflict is aborted (both branches stay as they were) and returned
/// as an error naming the files. Returns a line saying what was done.
pub fn merge(wt: &Worktree, name: &str, mode: MergeMode) -> Result<String> {
    let head = git(&wt.repo, &["rev-parse", "--abbrev-ref", "HEAD"])?;
    if head.trim() != wt.base {
        bail!(
            "the lead's checkout {} is on {:?}, not {}, the branch {name} was made from; \
             check out {} first",
            wt.repo.display(),
            head.trim(),
            wt.base,
            wt.base
        );
    }
    let dirty = git(&wt.repo, &["status", "--porcelain", "--untracked-files=no"])?;
    if !dirty.trim().is_empty() {
        bail!(
            "the lead's checkout {} has uncommitted changes; commit or stash them before merging {name}",
            wt.repo.display()
        );
    }
    let ahead = progress(wt)?.ahead;
    if ahead == 0 {
        return Ok(format!(
            "{name}'s branch {} has nothing to merge",
            wt.branch
        ));
    }
    if mode == MergeMode::Rebase {
        rebase_branch(wt, name)?;
        git(&wt.repo, &["merge", "--ff-only", "--quiet", &wt.branch])?;
        return Ok(format!(
            "rebased {name}'s {} commit(s) onto {} and fast-forwarded it",
            ahead, wt.base
        ));
    }
    let msg = format!("Merge {} ({name}) into {}", wt.branch, wt.base);
    let out = git_out(&wt.repo, &["merge", "--no-edit", "-m", &msg, &wt.branch])?;
    if out.ok {
        return Ok(format!(
            "merged {name}'s {ahead} commit(s) into {}",
            wt.base
        ));
    }
    let files = conflicted(&wt.repo);
    let aborted = git_out(&wt.repo, &["merge", "--abort"]);
    let doing = format!("merging {name}'s branch into {}", wt.base);
    conflict_error(&doing, files, &out.stderr, aborted)
}

/// Rebases the teammate's branch in its own worktree onto `base`; a
/// conflict is aborted and reported.
fn rebase_branch(wt: &Worktree, name: &str) -> Result<()> {
    if !changed_files(wt)?.is_empty() {
        bail!(
            "{name}'s worktree {} has uncommitted changes; a rebase needs them committed",
            wt.path.display()
        );
    }
    let out = git_out(&wt.path, &["rebase", "--quiet", &wt.base])?;
    if out.ok {
        return Ok(());
    }
    let files = conflicted(&wt.path);
    let aborted = git_out(&wt.path, &["rebase", "--abort"]);
    let doing = format!("rebasing {name}'s branch onto {}", wt.base);
    conflict_error(&doing, files, &out.stderr, aborted)
}

fn conflicted(dir: &Path) -> Result<Vec<String>> {
    git(dir, &["diff", "--name-only", "--diff-filter=U"])
        .map(|o| o.lines().map(str::to_string).collect())
}

/// The error of a merge or rebase (`doing`: "merging alice's branch into
/// main") that git refused, aborted.
fn conflict_error<T>(
    doing: &str,
    files: Result<Vec<String>>,
    stderr: &str,
    aborted: Result<GitOut>,
) -> Result<T> {
    let undone = match aborted {
        Ok(o) if o.ok => "aborted: both branches are as they were".to_string(),
        Ok(o) => format!(
            "and the abort failed too ({}): resolve it by hand",
            o.stderr
        ),
        Err(e) => format!("and the abort failed too ({e:#}): resolve it by hand"),
    };
    let files = match files {
        Ok(f) if !f.is_empty() => f,
        Ok(_) => bail!("{doing} failed: {stderr}; {undone}"),
        Err(e) => bail!(
            "{doing} failed: {stderr} (its conflicted files cannot be listed: {e:#}); {undone}"
        ),
    };
    bail!("{doing} conflicts in {}; {undone}", files.join(", "))
}

/// What became of a leaving teammate's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Retired {
    /// Nothing in it was not on the lead's branch: removed, with its branch.
    Removed,
    /// It holds work: left in place.
    Kept { changed: usize, unmerged: usize },
    /// `--force`: its work saved on `branch`, then removed.
    Saved {
        branch: String,
        changed: usize,
        unmerged: usize,
    },
}

/// Called when teammates leave the team (`swarm down`, kill): a worktree
/// with nothing to lose is removed; one with uncommitted files or
/// unmerged commits is kept, or with `force` saved on a branch of its own
/// first. Returns one line per worktree for the user. Never fails: a git
/// error keeps the worktree and says so.
pub fn retire(team: &Team, members: &[Member], force: bool) -> Vec<String> {
    let mut lines = Vec::new();
    for m in members {
        let Some(wt) = of(m) else { continue };
        let line = match retire_one(team, &wt, &m.name, force) {
            Ok(Retired::Removed) => {
                format!("removed the worktree of {} (nothing unmerged)", m.name)
            }
            Ok(Retired::Kept { changed, unmerged }) => format!(
                "kept worktree of {}: {} ({}, branch {})",
                m.name,
                held(changed, unmerged),
                wt.path.display(),
                wt.branch
            ),
            Ok(Retired::Saved {
                branch,
                changed,
                unmerged,
            }) => format!(
                "saved the work of {} ({}) on branch {branch}, then removed its worktree",
                m.name,
                held(changed, unmerged)
            ),
            Err(e) => format!(
                "kept worktree of {} at {}: {e:#}",
                m.name,
                wt.path.display()
            ),
        };
        tracing::info!(member = %m.name, "{line}");
        lines.push(line);
    }
    lines
}

/// What a worktree held: "1 uncommitted file, 2 unmerged commits".
fn held(changed: usize, unmerged: usize) -> String {
    format!(
        "{}, {}",
        crate::text::count(changed, "uncommitted file"),
        crate::text::count(unmerged, "unmerged commit")
    )
}

/// How long a retirement waits for another process retiring the same
/// worktree (git's own work on one worktree: seconds at most).
const RETIRE_WAIT: Duration = Duration::from_secs(30);

/// One retirement of a worktree at a time: `swarm shutdown` and the lead
/// both see the same shutdown approval and may retire it together.
fn retire_lock(team: &Team, name: &str) -> Result<std::fs::File> {
    let path = team.root.worktree_lock(&team.name, name)?;
    let file = crate::team::locks::open_lock_file(&path)?;
    let deadline = Instant::now() + RETIRE_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(file),
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => bail!(
                "another swarm process is still retiring {name}'s worktree after {} s",
                RETIRE_WAIT.as_secs()
            ),
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", path.display()));
            }
        }
    }
}

/// Whether the teammate's branch still exists in the lead's repository.
fn branch_exists(wt: &Worktree) -> bool {
    let branch = format!("refs/heads/{}", wt.branch);
    git_out(&wt.repo, &["rev-parse", "--verify", "--quiet", &branch]).is_ok_and(|o| o.ok)
}

fn retire_one(team: &Team, wt: &Worktree, name: &str, force: bool) -> Result<Retired> {
    let held = retire_lock(team, name)?;
    let retired = retire_locked(team, wt, name, force)?;
    if !matches!(retired, Retired::Kept { .. }) {
        // The worktree is gone: its lock file goes too (issue 24, item 10:
        // `<name>.retire-lock` stayed), removed while held. A process that
        // opened it before and takes it after finds nothing left to retire.
        if let Ok(path) = team.root.worktree_lock(&team.name, name) {
            crate::dropped::ignore(
                crate::atomic_file::remove_if_there(&path),
                "removing a retired worktree's lock file",
            );
        }
    }
    drop(held);
    Ok(retired)
}

/// [`retire_one`], its lock held.
fn retire_locked(team: &Team, wt: &Worktree, name: &str, force: bool) -> Result<Retired> {
    if !wt.path.exists() && !branch_exists(wt) {
        // Retired already, by the other process that saw the same leave.
        return Ok(Retired::Removed);
    }
    let unmerged = ahead_behind(wt)?.0;
    if !wt.path.exists() {
        // Its directory went by other hands: its branch alone holds work.
        crate::dropped::ignore(
            git_out(&wt.repo, &["worktree", "prune"]),
            "pruning the worktrees git still lists (the next add prunes again)",
        );
        if unmerged > 0 {
            return Ok(Retired::Kept {
                changed: 0,
                unmerged,
            });
        }
        crate::dropped::ignore(
            git_out(&wt.repo, &["branch", "-D", &wt.branch]),
            "deleting a retired worktree's merged branch (kept if git refuses)",
        );
        return Ok(Retired::Removed);
    }
    let changed = changed_files(wt)?.len();
    if changed == 0 && unmerged == 0 {
        remove(wt)?;
        return Ok(Retired::Removed);
    }
    if !force {
        return Ok(Retired::Kept { changed, unmerged });
    }
    let saved = format!(
        "swarm-saved/{}/{name}-{}",
        team.name,
        crate::clock::now_ms()
    );
    if changed > 0 {
        git(&wt.path, &["add", "--all"])?;
        git(
            &wt.path,
            &[
                "-c",
                "user.name=swarm",
                "-c",
                "user.email=swarm@localhost",
                "commit",
                "--quiet",
                "--no-verify",
                "-m",
                &format!("swarm: uncommitted work of {name}, saved when it was removed"),
            ],
        )?;
    }
    git(&wt.path, &["branch", &saved, "HEAD"])?;
    remove(wt)?;
    Ok(Retired::Saved {
        branch: saved,
        changed,
        unmerged,
    })
}

/// Removes the worktree and its branch; called only once every commit of
/// the branch is on the lead's branch or on a saved branch.
fn remove(wt: &Worktree) -> Result<()> {
    let path = wt.path.to_string_lossy();
    git(&wt.repo, &["worktree", "remove", "--force", &path])?;
    crate::dropped::ignore(
        git_out(&wt.repo, &["branch", "-D", &wt.branch]),
        "deleting a removed worktree's merged branch (kept if git refuses)",
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 24, item 10: a kept worktree said "1 files".
    #[test]
    fn a_kept_worktree_counts_one_file_and_one_commit_in_the_singular() {
        assert_eq!(held(1, 1), "1 uncommitted file, 1 unmerged commit");
        assert_eq!(held(0, 2), "0 uncommitted files, 2 unmerged commits");
    }

    /// Issue 24, item 10: `swarm merge --rebase` that conflicted said
    /// "merging … conflicts in …".
    #[test]
    fn a_rebase_that_conflicts_says_rebasing_not_merging() {
        let aborted = Ok(GitOut {
            ok: true,
            stdout: String::new(),
            stderr: String::new(),
        });
        let e = conflict_error::<()>(
            "rebasing carol's branch onto main",
            Ok(vec!["shared.txt".into()]),
            "CONFLICT",
            aborted,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "rebasing carol's branch onto main conflicts in shared.txt; aborted: both branches \
             are as they were"
        );
    }

    /// git runs through swarm's one runner: in the directory asked, and a
    /// failure carries what git said.
    #[test]
    fn a_failed_git_call_carries_what_git_said() {
        let dir = tempfile::tempdir().unwrap();
        let out = git_out(dir.path(), &["rev-parse", "--show-toplevel"]).unwrap();
        assert!(
            !out.ok && out.stderr.contains("not a git repository"),
            "{}",
            out.stderr
        );
        let err = git(dir.path(), &["rev-parse", "--show-toplevel"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a git repository"), "{err}");
        assert!(err.contains(&dir.path().display().to_string()), "{err}");
    }

    #[test]
    fn branch_names_come_only_from_valid_names() {
        assert_eq!(branch_name("t", "alice").unwrap(), "swarm/t/alice");
        assert!(branch_name("t", "../x").is_err());
        assert!(branch_name("t", "a b").is_err());
        assert!(branch_name("T", "alice").is_err());
    }

    #[test]
    fn a_wanted_worktree_is_not_a_made_one() {
        let mut m = Member::teammate("t", "alice", "blue", "/tmp");
        assert!(!wanted(&m));
        want(&mut m);
        assert!(wanted(&m));
        assert_eq!(of(&m), None);
        let wt = Worktree {
            path: "/w/t/alice".into(),
            branch: "swarm/t/alice".into(),
            base: "main".into(),
            repo: "/r".into(),
        };
        record(&mut m, &wt);
        assert_eq!(of(&m), Some(wt));
        assert_eq!(m.extra["worktreePath"], "/w/t/alice");
    }

    /// The dialog's look at a worktree (`git status` every 2 s) never
    /// writes its index: that takes the index lock a teammate's own git
    /// in the worktree needs.
    #[test]
    fn looking_at_a_worktree_never_takes_its_index_lock() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let git_in = |at: &Path, args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(at)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git_in(&work, &["init", "--quiet"]);
        git_in(
            &work,
            &["commit", "--quiet", "--allow-empty", "-m", "first"],
        );
        let team = Team::new(&crate::paths::Root::new(dir.path().join("root")), "t");
        let mut m = Member::teammate("t", "alice", "blue", &work.to_string_lossy());
        want(&mut m);
        ensure(&team, &mut m, &work).unwrap();
        let wt = of(&m).unwrap().path;
        std::fs::write(wt.join("a.txt"), "a").unwrap();
        git_in(&wt, &["add", "a.txt"]);
        git_in(&wt, &["commit", "--quiet", "-m", "a"]);
        // The file's stat no longer matches the index: a status refreshes.
        std::fs::write(wt.join("a.txt"), "a").unwrap();
        let index = PathBuf::from(
            git_in(
                &wt,
                &["rev-parse", "--path-format=absolute", "--git-path", "index"],
            )
            .trim(),
        );
        let before = std::fs::metadata(&index).unwrap();
        assert!(member_line(&m).is_some_and(|l| !l.contains("git:")));
        let after = std::fs::metadata(&index).unwrap();
        assert_eq!(
            (after.ino(), after.mtime_nsec()),
            (before.ino(), before.mtime_nsec()),
            "the index was rewritten (under its lock)"
        );
    }

    /// `swarm shutdown` and the lead both act on one shutdown approval:
    /// retiring one worktree from two places at once removes it once and
    /// says so twice, never "kept … failed" (seen in CI: one retirement
    /// deleted the branch under the other's `rev-list`).
    #[test]
    fn two_retirements_of_one_worktree_at_once_agree_it_was_removed() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .current_dir(&work)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "--quiet"]);
        run(&["commit", "--quiet", "--allow-empty", "-m", "first"]);
        let root = crate::paths::Root::new(dir.path().join("root"));
        let team = Team::new(&root, "t");
        for round in 0..8 {
            let name = format!("m{round}");
            let mut m = Member::teammate("t", &name, "blue", &work.to_string_lossy());
            want(&mut m);
            ensure(&team, &mut m, &work).unwrap();
            let lines: Vec<Vec<String>> = std::thread::scope(|s| {
                let a = s.spawn(|| retire(&team, std::slice::from_ref(&m), false));
                let b = s.spawn(|| retire(&team, std::slice::from_ref(&m), false));
                vec![a.join().unwrap(), b.join().unwrap()]
            });
            for l in lines.iter().flatten() {
                assert!(
                    l.starts_with(&format!("removed the worktree of {name}")),
                    "{l}"
                );
            }
            assert!(!root.worktree("t", &name).unwrap().exists());
        }
    }
}
