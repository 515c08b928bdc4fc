//! Which directories and files swarm trusts with its state, and the error it
//! gives for one it does not ([`UnsafePath`]).
//!
//! One rule, applied to every component of a path from `/` down (so to the
//! state root's ancestors as much as to what is inside it), before swarm
//! creates, reads or writes anything there:
//!
//! * **No symbolic links.** A link where a swarm file or directory belongs
//!   would send its writes wherever the link points (a sidecar opened through
//!   one truncated its target; a linked `inboxes/` directory took every
//!   inbox elsewhere). The state root itself may be a link the user made
//!   (`~/.claude` → elsewhere): `paths::Root` resolves it once, to its real
//!   path, and every path swarm builds starts there. The one exception is a
//!   link owned by root while swarm is not root (the system's own, such as
//!   macOS's `/var` → `/private/var`): only root could have planted it.
//! * **Owned by you or by root.** A directory another user owns is theirs to
//!   rearrange.
//! * **Writable only by its owner.** Anyone else who can write a directory
//!   can plant links or files in it. Two exceptions: a root-owned directory
//!   with the sticky bit (`/tmp`: others cannot replace what is yours), and
//!   group write for your own private group (a group named after you with no
//!   other members, which systems with user private groups and umask 002
//!   give every directory, Claude Code's included; the rule Debian's OpenSSH
//!   applies to `~/.ssh`).
//!
//! swarm refuses a path that breaks the rule, with an error that names the
//! path and the fix (`chmod 700 DIR`, remove the link); it never repairs
//! permissions itself, because it cannot tell a directory it made from one
//! the user opened on purpose. The directories it creates are 0700 and its
//! files 0600, so they never break it. Files are opened with `O_NOFOLLOW`.
//!
//! The checks are made before each use, not held: a process of the same
//! user that swaps a directory for a link between the check and the use can
//! still win that race. What they stop is a link or an open directory
//! planted beforehand, which is how the confusion comes about. The one
//! exception is `swarm send`'s main thread ([`hold_checks`], called by
//! `main`): there a directory that passed stays passed, so that a send,
//! one process per message, walks the ~8 components above an inbox once,
//! not five times. Only the same user or root could change a directory
//! that passed (its parents passed too, so no one else can replace it), and
//! the race above is the same one.

use std::ffi::CStr;
use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use thiserror::Error;

/// A path swarm refuses to use, and why.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", describe(path, *problem))]
pub struct UnsafePath {
    pub path: PathBuf,
    pub problem: PathProblem,
}

/// What is wrong with an [`UnsafePath`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathProblem {
    /// A symbolic link where a swarm file or directory belongs.
    Symlink,
    /// Something other than a directory where a directory belongs.
    NotADirectory,
    /// Owned by another user.
    ForeignOwner { uid: u32 },
    /// Other users can write it.
    WritableByOthers { mode: u32, dir: bool },
}

fn describe(path: &Path, problem: PathProblem) -> String {
    let p = path.display();
    match problem {
        PathProblem::Symlink => format!(
            "{p} is a symbolic link; swarm never follows a link inside its state root \
             (remove the link; to keep the state elsewhere, make the root itself a link or use --home)"
        ),
        PathProblem::NotADirectory => {
            format!("{p} is not a directory, where swarm keeps one; move it away")
        }
        PathProblem::ForeignOwner { uid } => format!(
            "{p} belongs to another user (uid {uid}; you are uid {}), who could redirect swarm's \
             files; remove it or use another state root (--home DIR)",
            euid()
        ),
        PathProblem::WritableByOthers { mode, dir } => format!(
            "{p} can be written by other users (mode {mode:04o}), who could plant links or files \
             there; fix: chmod {} {p}",
            if dir { "700" } else { "600" }
        ),
    }
}

impl UnsafePath {
    pub(crate) fn new(path: &Path, problem: PathProblem) -> UnsafePath {
        UnsafePath {
            path: path.to_path_buf(),
            problem,
        }
    }

    /// The refusal as an `io::Error` (kind `Other`), for the file functions
    /// that return one; [`UnsafePath::of`] finds it again.
    pub(crate) fn into_io(self) -> io::Error {
        io::Error::other(self)
    }

    /// The refusal inside an `io::Error` returned by this module's functions.
    pub fn of(e: &io::Error) -> Option<&UnsafePath> {
        e.get_ref()?.downcast_ref()
    }
}

/// The problem with one component, from its `lstat`, if any. `want_dir`:
/// a directory belongs there (else a regular file).
pub(crate) fn problem_of(meta: &fs::Metadata, want_dir: bool) -> Option<PathProblem> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return (meta.uid() != 0 || euid() == 0).then_some(PathProblem::Symlink);
    }
    if want_dir && !kind.is_dir() {
        return Some(PathProblem::NotADirectory);
    }
    let (uid, me) = (meta.uid(), euid());
    if uid != me && uid != 0 {
        return Some(PathProblem::ForeignOwner { uid });
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 == 0 {
        return None;
    }
    let sticky_system_dir = kind.is_dir() && mode & 0o1000 != 0 && uid == 0;
    let private_group_only = mode & 0o002 == 0 && is_own_private_group(meta.gid());
    if sticky_system_dir || private_group_only {
        return None;
    }
    Some(PathProblem::WritableByOthers {
        mode,
        dir: kind.is_dir(),
    })
}

/// Checks one existing component that must be a directory. A system link
/// ([`problem_of`] lets it pass) is checked through: its target must be a
/// safe directory too.
fn check_dir_component(p: &Path, meta: &fs::Metadata) -> io::Result<()> {
    if let Some(problem) = problem_of(meta, true) {
        return Err(UnsafePath::new(p, problem).into_io());
    }
    if meta.file_type().is_symlink() {
        let target = fs::metadata(p)?;
        if let Some(problem) = problem_of(&target, true) {
            return Err(UnsafePath::new(p, problem).into_io());
        }
    }
    Ok(())
}

/// Every component of `dir`, outermost first (`/`, `/a`, `/a/b`, …).
fn components(dir: &Path) -> Vec<&Path> {
    let mut chain: Vec<&Path> = dir
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    chain.reverse();
    chain
}

thread_local! {
    /// Directories that passed on this thread, when it holds its checks
    /// ([`hold_checks`]); `None`: every check is made afresh.
    static PASSED: std::cell::RefCell<Option<std::collections::HashSet<PathBuf>>> =
        const { std::cell::RefCell::new(None) };
}

/// From now on, on this thread, a directory that passed the rule is not
/// checked again (see the module doc): for short-lived commands only.
pub fn hold_checks() {
    PASSED.with(|p| {
        p.borrow_mut().get_or_insert_with(Default::default);
    });
}

fn passed_before(p: &Path) -> bool {
    PASSED.with(|set| set.borrow().as_ref().is_some_and(|s| s.contains(p)))
}

fn note_passed(p: &Path) {
    PASSED.with(|set| {
        if let Some(s) = set.borrow_mut().as_mut() {
            s.insert(p.to_path_buf());
        }
    });
}

/// Checks every existing component of `dir` against the rule; components
/// that do not exist yet are fine (whoever creates them makes them safe).
pub fn check_dir(dir: &Path) -> io::Result<()> {
    for p in components(dir) {
        if passed_before(p) {
            continue;
        }
        match fs::symlink_metadata(p) {
            Ok(meta) => check_dir_component(p, &meta)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        }
        note_passed(p);
    }
    Ok(())
}

/// Checks every existing component of `dir` and creates the missing ones
/// (0700, set explicitly because the umask may have narrowed it).
pub(crate) fn ensure_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let chain = components(dir);
    let mut creating = false;
    for p in &chain[held_prefix(&chain)?..] {
        if !creating {
            match fs::symlink_metadata(p) {
                Ok(meta) => {
                    check_dir_component(p, &meta)?;
                    note_passed(p);
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => creating = true,
                Err(e) => return Err(e),
            }
        }
        match fs::DirBuilder::new().mode(super::DIR_MODE).create(p) {
            // Through a descriptor opened without following links, so a
            // link swapped in meanwhile is refused, not chmodded.
            Ok(()) => {
                open_dir(p)?.set_permissions(fs::Permissions::from_mode(super::DIR_MODE))?;
                note_passed(p);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                check_dir_component(p, &fs::symlink_metadata(p)?)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How many components of `chain` (outermost first) need no walk: up to
/// the deepest that passed before on this thread ([`hold_checks`]), if it
/// is still there as the directory it was (swarm may have removed it
/// since; its parents then exist too). 0 when nothing is held.
fn held_prefix(chain: &[&Path]) -> io::Result<usize> {
    let Some(i) = chain.iter().rposition(|p| passed_before(p)) else {
        return Ok(0);
    };
    match fs::symlink_metadata(chain[i]) {
        Ok(meta) => check_dir_component(chain[i], &meta).map(|()| i + 1),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e),
    }
}

/// Opens a directory without following a link at its last component.
pub(crate) fn open_dir(p: &Path) -> io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(p)
        .map_err(|e| refused_link(p, e))
}

/// An open that `O_NOFOLLOW` refused (`ELOOP`) because `p` is a link, as
/// the refusal it stands for; any other error as it is.
pub(crate) fn refused_link(p: &Path, e: io::Error) -> io::Error {
    let is_link = || fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    if e.raw_os_error() == Some(libc::ELOOP) && is_link() {
        UnsafePath::new(p, PathProblem::Symlink).into_io()
    } else {
        e
    }
}

/// The first component of `dir` (outermost first) that breaks the rule.
pub(crate) fn first_problem(dir: &Path) -> Option<UnsafePath> {
    match check_dir(dir) {
        Ok(()) => None,
        Err(e) => UnsafePath::of(&e).cloned(),
    }
}

/// Every directory and file below `dir` that breaks the rule, without
/// following links (a link is itself the problem), sorted by path.
pub(crate) fn problems_below(dir: &Path) -> Vec<UnsafePath> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for entry in rd.flatten() {
            let p = entry.path();
            let Ok(meta) = fs::symlink_metadata(&p) else {
                continue;
            };
            let is_dir = meta.file_type().is_dir();
            if let Some(problem) = problem_of(&meta, is_dir) {
                found.push(UnsafePath::new(&p, problem));
            } else if is_dir {
                todo.push(p);
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

/// The effective uid, asked of the kernel once: swarm never changes it,
/// and a path check asks for it at every component (a short command such
/// as `swarm send` checks some 40 components).
fn euid() -> u32 {
    static EUID: OnceLock<u32> = OnceLock::new();
    // SAFETY: geteuid has no preconditions and cannot fail.
    *EUID.get_or_init(|| unsafe { libc::geteuid() })
}

/// Whether `gid` is the caller's user private group: its own primary
/// group, named after the user, with no other member.
fn is_own_private_group(gid: u32) -> bool {
    static PRIVATE: OnceLock<Option<u32>> = OnceLock::new();
    *PRIVATE.get_or_init(own_private_group) == Some(gid)
}

fn own_private_group() -> Option<u32> {
    // SAFETY: getegid has no preconditions and cannot fail.
    let gid = unsafe { libc::getegid() };
    let user = user_name(euid())?;
    let (name, members) = group(gid)?;
    (name == user && members.iter().all(|m| *m == user)).then_some(gid)
}

/// Calls a `get*_r` lookup with a buffer grown until it fits (`ERANGE`).
fn with_buffer<T>(
    mut lookup: impl FnMut(&mut [libc::c_char]) -> Result<Option<T>, i32>,
) -> Option<T> {
    let mut len = 4096;
    while len <= 1 << 20 {
        let mut buf = vec![0 as libc::c_char; len];
        match lookup(&mut buf) {
            Ok(found) => return found,
            Err(libc::ERANGE) => len *= 4,
            Err(_) => return None,
        }
    }
    None
}

fn user_name(uid: u32) -> Option<String> {
    with_buffer(|buf| {
        // SAFETY: an all-zero passwd is a valid value of a plain C struct.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call, and `buf` for
        // `buf.len()` bytes; on success the strings in `pwd` point into
        // `buf`, which outlives their use below.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
        if rc != 0 {
            return Err(rc);
        }
        if result.is_null() || pwd.pw_name.is_null() {
            return Ok(None);
        }
        // SAFETY: pw_name is a NUL-terminated string inside `buf`.
        Ok(Some(
            unsafe { CStr::from_ptr(pwd.pw_name) }
                .to_string_lossy()
                .into_owned(),
        ))
    })
}

/// A group's name and listed members.
fn group(gid: u32) -> Option<(String, Vec<String>)> {
    with_buffer(|buf| {
        // SAFETY: an all-zero group is a valid value of a plain C struct.
        let mut grp: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: as in `user_name`.
        let rc =
            unsafe { libc::getgrgid_r(gid, &mut grp, buf.as_mut_ptr(), buf.len(), &mut result) };
        if rc != 0 {
            return Err(rc);
        }
        if result.is_null() || grp.gr_name.is_null() {
            return Ok(None);
        }
        // SAFETY: gr_name is a NUL-terminated string inside `buf`.
        let name = unsafe { CStr::from_ptr(grp.gr_name) }
            .to_string_lossy()
            .into_owned();
        let mut members = Vec::new();
        let mut at = grp.gr_mem;
        // SAFETY: gr_mem is a NULL-terminated array of NUL-terminated
        // strings inside `buf`.
        unsafe {
            while !at.is_null() && !(*at).is_null() {
                members.push(CStr::from_ptr(*at).to_string_lossy().into_owned());
                at = at.add(1);
            }
        }
        Ok(Some((name, members)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_thread_that_holds_its_checks_checks_a_directory_once_and_others_always() {
        let t = tempfile::tempdir().unwrap();
        let (a, b) = (t.path().join("a"), t.path().join("a/b"));
        fs::create_dir_all(&b).unwrap();
        for d in [&a, &b] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o700)).unwrap();
        }
        let (held_a, held_b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            hold_checks();
            check_dir(&held_b).unwrap();
            // One swarm removed since is made again.
            fs::remove_dir(&held_b).unwrap();
            ensure_dir(&held_b).unwrap();
            assert!(held_b.is_dir());
            fs::set_permissions(&held_a, fs::Permissions::from_mode(0o777)).unwrap();
            check_dir(&held_b).expect("a directory that passed is not checked again");
            ensure_dir(&held_b).expect("nor when it is ensured");
        })
        .join()
        .unwrap();
        // Any other thread checks afresh.
        let e = check_dir(&b).unwrap_err();
        assert!(matches!(problem(e), PathProblem::WritableByOthers { .. }));
    }

    fn problem(e: io::Error) -> PathProblem {
        UnsafePath::of(&e)
            .unwrap_or_else(|| panic!("not a refusal: {e}"))
            .problem
    }

    #[test]
    fn a_symlinked_directory_inside_the_root_is_refused_not_followed() {
        let t = tempfile::tempdir().unwrap();
        let elsewhere = t.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        fs::create_dir_all(t.path().join("root/teams/t")).unwrap();
        symlink(&elsewhere, t.path().join("root/teams/t/inboxes")).unwrap();
        let inboxes = t.path().join("root/teams/t/inboxes");
        let e = ensure_dir(&inboxes.join("deeper")).unwrap_err();
        assert_eq!(problem(e), PathProblem::Symlink);
        let e = check_dir(&inboxes).unwrap_err();
        assert!(
            e.to_string().contains(&inboxes.display().to_string()),
            "{e}"
        );
        assert_eq!(
            fs::read_dir(&elsewhere).unwrap().count(),
            0,
            "nothing written there"
        );
    }

    #[test]
    fn a_directory_others_can_write_is_refused_with_the_fix() {
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_dir(&open.join("inboxes")).unwrap_err();
        assert_eq!(
            problem(e),
            PathProblem::WritableByOthers {
                mode: 0o777,
                dir: true
            }
        );
        let msg = check_dir(&open).unwrap_err().to_string();
        assert!(
            msg.contains(&format!("chmod 700 {}", open.display())),
            "{msg}"
        );
        assert!(!open.join("inboxes").exists());
        // Fixed as told, it is used.
        fs::set_permissions(&open, fs::Permissions::from_mode(0o700)).unwrap();
        ensure_dir(&open.join("inboxes")).unwrap();
    }

    #[test]
    fn a_directory_another_user_owns_is_refused() {
        if euid() != 0 {
            eprintln!("SKIP a_directory_another_user_owns_is_refused: needs root to chown");
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let theirs = t.path().join("theirs");
        fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(4242), None).unwrap();
        let e = ensure_dir(&theirs.join("x")).unwrap_err();
        assert_eq!(problem(e), PathProblem::ForeignOwner { uid: 4242 });
    }

    #[test]
    fn sticky_system_directories_and_private_modes_pass() {
        // /tmp: root's, world-writable, sticky.
        check_dir(&std::env::temp_dir()).unwrap();
        let t = tempfile::tempdir().unwrap();
        ensure_dir(&t.path().join("a/b")).unwrap();
        let mode = fs::metadata(t.path().join("a/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn problems_lists_links_open_modes_and_stops_at_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        fs::create_dir_all(root.join("teams/a/inboxes")).unwrap();
        fs::write(root.join("teams/a/config.json"), b"{}").unwrap();
        fs::set_permissions(
            root.join("teams/a/config.json"),
            fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        symlink("/etc", root.join("teams/b")).unwrap();
        fs::set_permissions(
            root.join("teams/a/inboxes"),
            fs::Permissions::from_mode(0o757),
        )
        .unwrap();
        assert_eq!(first_problem(&root), None);
        let found: Vec<(PathBuf, PathProblem)> = problems_below(&root)
            .into_iter()
            .map(|u| (u.path.strip_prefix(&root).unwrap().to_path_buf(), u.problem))
            .collect();
        assert_eq!(
            found,
            [
                (
                    PathBuf::from("teams/a/config.json"),
                    PathProblem::WritableByOthers {
                        mode: 0o666,
                        dir: false
                    }
                ),
                (
                    PathBuf::from("teams/a/inboxes"),
                    PathProblem::WritableByOthers {
                        mode: 0o757,
                        dir: true
                    }
                ),
                (PathBuf::from("teams/b"), PathProblem::Symlink),
            ]
        );
    }
}
