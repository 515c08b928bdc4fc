//! A pane's tmux commands: its creation by `split-window` (with the
//! [`Launch`] every spawn shares), the commands that finish it in the same
//! invocation (mark, output pipe, title, colour), focus, capture, kill, and
//! the server-wide `list-panes` whose rows ([`PaneRow`]) say which panes
//! run, which exited, and which are swarm's.

use std::path::Path;

use super::commands::{PANE_ID_FORMAT, check_arg, check_pane_id, escape_format, targeted};
use super::options::{BORDER_FORMAT, tmux_colour};
use crate::error::{BackendError, Result};
use crate::{PaneId, PaneMark};

/// `-F` format for `status`: one line per pane on the server, with the
/// pane's swarm mark (empty fields for a pane swarm did not mark).
pub const STATUS_FORMAT: &str = "#{pane_id} #{pane_pid} #{pane_dead} #{pane_dead_status} \
     #{@swarm_nonce} #{@swarm_team} #{@swarm_member}";

/// The program part of a spawn: working directory, environment, argv.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    /// The full argv of the pane's process (`env -i -- … PROGRAM ARGS`,
    /// or the program alone where it trims its own environment).
    pub argv: Vec<String>,
}

impl<'a> Launch<'a> {
    /// The launch of `spec`, as [`crate::SpawnSpec::start_over_set_env`]
    /// starts it: its variables are set with `-e`.
    pub fn of(spec: &'a crate::SpawnSpec) -> Self {
        let crate::Start { argv, env } = spec.start_over_set_env();
        Launch {
            cwd: &spec.cwd,
            env,
            argv,
        }
    }

    pub(super) fn push_into(&self, argv: &mut Vec<String>) {
        argv.push("-c".to_string());
        argv.push(escape_format(&self.cwd.to_string_lossy()));
        for (k, v) in &self.env {
            argv.push("-e".to_string());
            argv.push(format!("{k}={v}"));
        }
        argv.push("--".to_string());
        argv.extend(self.argv.iter().cloned());
    }
}

/// How a split lays out the new pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Side by side (`-h`), the new pane taking `percent` of the width.
    Horizontal { percent: u8 },
    /// Stacked (`-v`).
    Vertical,
}

/// `split-window -P -F '#{pane_id}' -t PANE -h|-v [-l N%] -c CWD -e K=V … -- ARGV`.
///
/// Without `-d`: the new pane becomes the current pane of the command list,
/// so the [`finish_pane`] commands chained after it (no `-t`) reach it
/// before its id is known to swarm. It also becomes its window's active
/// pane; [`restore_focus`] gives the focus back in the same list, so the
/// user never sees it move (the window's session is not switched).
pub fn split_window(target: &PaneId, split: Split, launch: &Launch<'_>) -> Result<Vec<String>> {
    Ok(split_at(check_pane_id(target)?, split, launch))
}

/// `split-window -P -F '#{pane_id}' -t TARGET` (`target` checked by the
/// caller) split as `split` says, then the launch.
fn split_at(target: &str, split: Split, launch: &Launch<'_>) -> Vec<String> {
    let mut argv = vec![
        "split-window".to_string(),
        "-P".to_string(),
        "-F".to_string(),
        PANE_ID_FORMAT.to_string(),
        "-t".to_string(),
        target.to_string(),
    ];
    match split {
        Split::Horizontal { percent } => {
            argv.extend(["-h".to_string(), "-l".to_string(), format!("{percent}%")])
        }
        Split::Vertical => argv.push("-v".to_string()),
    }
    launch.push_into(&mut argv);
    argv
}

/// `last-pane`: after a [`split_window`] (which focused the new pane), the
/// window's previously active pane is active again.
pub fn restore_focus() -> Vec<String> {
    vec!["last-pane".to_string()]
}

/// [`restore_focus`] in the window `window` names (an id `@N`, or
/// `=session:index`): the new pane becomes that window's last pane
/// (`{last}`).
pub fn restore_focus_in(window: &str) -> Result<Vec<String>> {
    Ok(vec![
        "last-pane".to_string(),
        "-t".to_string(),
        check_window(window)?.to_string(),
    ])
}

/// `split-window -v` below the last pane of the window `window` names (as
/// for [`restore_focus_in`]): in a command list, after a split and
/// [`restore_focus_in`], the pane that split made, whose id the list
/// cannot name.
pub fn split_below_last(window: &str, launch: &Launch<'_>) -> Result<Vec<String>> {
    let target = format!("{}.{{last}}", check_window(window)?);
    Ok(split_at(&target, Split::Vertical, launch))
}

/// `split-window -v` of the active pane of the window `window` names: a
/// window just opened, whose only pane has no id the list can name.
pub fn split_below_active(window: &str, launch: &Launch<'_>) -> Result<Vec<String>> {
    Ok(split_at(check_window(window)?, Split::Vertical, launch))
}

/// A window target swarm made: a tmux window id (`@` and digits) or
/// `=session:index` ([`super::commands::window_target`]).
fn check_window(target: &str) -> Result<&str> {
    let id = target
        .strip_prefix('@')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
    let indexed = target
        .strip_prefix('=')
        .and_then(|t| t.rsplit_once(':'))
        .is_some_and(|(session, index)| {
            !session.is_empty()
                && !session.contains(['.', ':'])
                && !index.is_empty()
                && index.bytes().all(|b| b.is_ascii_digit())
        });
    if id || indexed {
        check_arg(target).map(|_| target)
    } else {
        Err(BackendError::invalid(
            "tmux window",
            target,
            "expected @ and digits, or =session:index",
        ))
    }
}

/// The pane ids a command list of splits printed (each `-P -F
/// '#{pane_id}'` line alone), in order; other lines (listings) skipped.
pub fn printed_pane_ids(stdout: &str) -> Vec<PaneId> {
    stdout
        .lines()
        .filter(|l| {
            l.strip_prefix('%')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(PaneId::new)
        .collect()
}

/// In a command list that opens several panes, after the split that made
/// `spec`'s pane in window `window`: the pane finished as `spec` says and
/// the focus given back, so that the new pane is the window's `{last}`
/// (the next split's target); the caller lays the window out after.
pub fn joined(window: &str, spec: &crate::SpawnSpec) -> Result<Vec<Vec<String>>> {
    let mut cmds = finish_spec(None, spec)?;
    cmds.push(restore_focus_in(window)?);
    Ok(cmds)
}

/// [`finish_pane`] with `spec`'s mark, title, colour and output file.
pub fn finish_spec(target: Option<&str>, spec: &crate::SpawnSpec) -> Result<Vec<Vec<String>>> {
    finish_pane(
        target,
        &spec.mark,
        &spec.title,
        spec.color.as_deref(),
        spec.output.as_deref(),
    )
}

/// The commands that finish a new pane in the very invocation that created
/// it: its mark (`@swarm_team`, `@swarm_member`, `@swarm_nonce`), its
/// output appended to `output` (`pipe-pane -O`), `remain-on-exit` (so its
/// exit code can be read), its title, its colour and the border format
/// that shows them — all pane options, so nothing of the window it joins
/// changes. `target` is the new pane (a window target such as `=s:3` names
/// a new window's only pane); `None` means the command list's current
/// pane, which a [`split_window`] just set.
///
/// The mark and the pipe are in place before anything else can see the
/// pane: the tmux server is single-threaded and runs the whole command list
/// before its event loop reads the new pane's terminal or its exit.
pub fn finish_pane(
    target: Option<&str>,
    mark: &PaneMark,
    title: &str,
    color: Option<&str>,
    output: Option<&Path>,
) -> Result<Vec<Vec<String>>> {
    let mut cmds = Vec::new();
    for (option, value) in [
        ("@swarm_team", &mark.team),
        ("@swarm_member", &mark.member),
        ("@swarm_nonce", &mark.nonce),
    ] {
        cmds.push(targeted(
            "set-option",
            &["-p"],
            target,
            &[option, &check_arg(&escape_format(value))?],
        ));
    }
    if let Some(file) = output {
        let shell = pipe_command(file)?;
        cmds.push(targeted("pipe-pane", &["-O"], target, &[&shell]));
    }
    cmds.push(targeted(
        "set-option",
        &["-p"],
        target,
        &["remain-on-exit", "on"],
    ));
    if !title.is_empty() {
        cmds.push(targeted(
            "select-pane",
            &[],
            target,
            &["-T", &escape_format(title)],
        ));
    }
    if let Some(c) = color {
        cmds.push(targeted(
            "set-option",
            &["-p"],
            target,
            &["@swarm_color", tmux_colour(c)],
        ));
    }
    cmds.push(targeted(
        "set-option",
        &["-p"],
        target,
        &["pane-border-format", BORDER_FORMAT],
    ));
    Ok(cmds)
}

/// `list-panes -a -F STATUS_FORMAT`: every pane on the server.
pub fn list_panes_all() -> Vec<String> {
    ["list-panes", "-a", "-F", STATUS_FORMAT]
        .map(String::from)
        .to_vec()
}

/// One line of [`STATUS_FORMAT`] output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneRow {
    pub pane: PaneId,
    pub pid: u32,
    pub dead: bool,
    /// The exit status of a dead pane; `None` if killed by a signal.
    pub dead_status: Option<i32>,
    /// The pane's swarm mark; `None` for a pane swarm did not mark.
    pub mark: Option<PaneMark>,
}

impl PaneRow {
    /// True when the pane carries `nonce`.
    pub fn carries(&self, nonce: &str) -> bool {
        !nonce.is_empty() && self.mark.as_ref().is_some_and(|m| m.nonce == nonce)
    }
}

/// Parses `list-panes -a -F STATUS_FORMAT` output.
pub fn parse_pane_rows(output: &str) -> Result<Vec<PaneRow>> {
    let bad = || BackendError::Parse {
        what: "list-panes status rows",
        output: output.to_string(),
    };
    let mut rows = Vec::new();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.len() != 7 {
            return Err(bad());
        }
        let pane = PaneId::new(fields[0]);
        check_pane_id(&pane).map_err(|_| bad())?;
        let pid = fields[1].parse::<u32>().map_err(|_| bad())?;
        let dead = match fields[2] {
            "0" | "" => false,
            "1" => true,
            _ => return Err(bad()),
        };
        let dead_status = match fields[3] {
            "" => None,
            code => Some(code.parse::<i32>().map_err(|_| bad())?),
        };
        let mark = (!fields[4].is_empty()).then(|| PaneMark {
            nonce: fields[4].to_string(),
            team: fields[5].to_string(),
            member: fields[6].to_string(),
        });
        rows.push(PaneRow {
            pane,
            pid,
            dead,
            dead_status: if dead { dead_status } else { None },
            mark,
        });
    }
    Ok(rows)
}

/// `kill-pane -t PANE`.
pub fn kill_pane(pane: &PaneId) -> Result<Vec<String>> {
    Ok(vec![
        "kill-pane".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
    ])
}

/// Quotes `text` as one word for `/bin/sh`: single quotes, with each `'`
/// written as `'\''`. The only place a shell string is built: tmux's
/// `pipe-pane` takes a shell command, and the file path must reach it intact.
pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `pipe-pane -O -t PANE 'exec cat >> FILE'`: append everything the pane
/// prints to `file` (`-O`: output only; replaces an earlier pipe).
pub fn pipe_pane_to_file(pane: &PaneId, file: &std::path::Path) -> Result<Vec<String>> {
    Ok(vec![
        "pipe-pane".to_string(),
        "-O".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
        pipe_command(file)?,
    ])
}

/// `exec cat >> 'FILE'`, as tmux must receive it: quoted for `/bin/sh`, and
/// with `#` doubled, because tmux expands the command as a format first (a
/// path holding `#(cmd)` would otherwise run cmd).
fn pipe_command(file: &std::path::Path) -> Result<String> {
    let path = file.to_str().ok_or_else(|| {
        BackendError::invalid("output file", &file.to_string_lossy(), "is not valid UTF-8")
    })?;
    if path.chars().any(|c| c.is_control()) {
        return Err(BackendError::invalid(
            "output file",
            path,
            "contains a control character",
        ));
    }
    Ok(escape_format(&format!("exec cat >> {}", sh_quote(path))))
}

/// `capture-pane -p -J -t PANE [-S -]` (history from its start with `history`).
pub fn capture_pane(pane: &PaneId, history: bool) -> Result<Vec<String>> {
    let mut argv = vec![
        "capture-pane".to_string(),
        "-p".to_string(),
        "-J".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
    ];
    if history {
        argv.extend(["-S".to_string(), "-".to_string()]);
    }
    Ok(argv)
}

/// `select-window -t PANE ; select-pane -t PANE`.
pub fn focus(pane: &PaneId) -> Result<Vec<Vec<String>>> {
    let p = check_pane_id(pane)?.to_string();
    Ok(vec![
        vec!["select-window".to_string(), "-t".to_string(), p.clone()],
        vec!["select-pane".to_string(), "-t".to_string(), p],
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::commands::chain;
    use crate::tmux::commands::testing::{s, test_mark};

    #[test]
    fn pipe_pane_quotes_the_path_for_the_shell() {
        let argv = pipe_pane_to_file(
            &PaneId::new("%3"),
            std::path::Path::new("/tmp/it's $(x); a.log"),
        )
        .unwrap();
        assert_eq!(argv[..4], ["pipe-pane", "-O", "-t", "%3"]);
        assert_eq!(argv[4], "exec cat >> '/tmp/it'\\''s $(x); a.log'");
        // The quoted word reads back as the path through a real shell.
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                &format!("printf %s {}", sh_quote("/tmp/it's $(x); a.log")),
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "/tmp/it's $(x); a.log"
        );
        assert!(pipe_pane_to_file(&PaneId::new("%3"), std::path::Path::new("/tmp/a\nb")).is_err());
    }

    #[test]
    fn pipe_pane_doubles_hashes_for_the_format_expander() {
        // tmux expands the pipe command as a format before /bin/sh sees it:
        // `#(...)` in a path would run a command, `#{...}` would be replaced.
        let argv = pipe_pane_to_file(
            &PaneId::new("%3"),
            std::path::Path::new("/tmp/#(touch x)/#{pane_id}/o.log"),
        )
        .unwrap();
        assert_eq!(argv[4], "exec cat >> '/tmp/##(touch x)/##{pane_id}/o.log'");
    }

    #[test]
    fn finish_pane_targets_the_current_pane_or_a_named_one() {
        let out = Path::new("/o/a#b.log");
        let cmds = finish_pane(None, &test_mark(), "alice #1;", Some("purple"), Some(out)).unwrap();
        assert_eq!(
            cmds,
            vec![
                s(&["set-option", "-p", "@swarm_team", "t"]),
                s(&["set-option", "-p", "@swarm_member", "alice"]),
                s(&["set-option", "-p", "@swarm_nonce", "n1"]),
                s(&["pipe-pane", "-O", "exec cat >> '/o/a##b.log'"]),
                s(&["set-option", "-p", "remain-on-exit", "on"]),
                s(&["select-pane", "-T", "alice ##1;"]),
                s(&["set-option", "-p", "@swarm_color", "magenta"]),
                s(&["set-option", "-p", "pane-border-format", BORDER_FORMAT]),
            ]
        );
        // Chained, a title ending in ';' is escaped, never a separator.
        let argv = chain(cmds).unwrap();
        assert!(argv.contains(&"alice ##1\\;".to_string()), "{argv:?}");
        assert_eq!(argv.iter().filter(|a| *a == ";").count(), 7);
        let named = finish_pane(Some("=s:3"), &test_mark(), "", None, None).unwrap();
        assert_eq!(named.len(), 5);
        assert!(
            named
                .iter()
                .all(|c| c[1] == "-p" && c[2] == "-t" && c[3] == "=s:3")
        );
        assert_eq!(
            named[4],
            s(&[
                "set-option",
                "-p",
                "-t",
                "=s:3",
                "pane-border-format",
                BORDER_FORMAT
            ])
        );
    }

    #[test]
    fn split_window_argv() {
        let env = vec![("A".to_string(), "1 2".to_string())];
        let prog = s(&["/usr/bin/env", "-i", "--", "A=1 2", "sh", "-c", "echo hi;"]);
        let launch = Launch {
            cwd: Path::new("/tmp/my #dir"),
            env,
            argv: prog,
        };
        let argv = split_window(
            &PaneId::new("%0"),
            Split::Horizontal { percent: 65 },
            &launch,
        )
        .unwrap();
        assert_eq!(
            argv,
            s(&[
                "split-window",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                "%0",
                "-h",
                "-l",
                "65%",
                "-c",
                "/tmp/my ##dir",
                "-e",
                "A=1 2",
                "--",
                "/usr/bin/env",
                "-i",
                "--",
                "A=1 2",
                "sh",
                "-c",
                "echo hi;"
            ])
        );
        // The checker runs when chained: the trailing ';' is escaped.
        let checked = chain(vec![argv]).unwrap();
        assert_eq!(checked.last().unwrap(), "echo hi\\;");
        let v = split_window(&PaneId::new("%3"), Split::Vertical, &launch).unwrap();
        assert_eq!(&v[4..7], &s(&["-t", "%3", "-v"])[..]);
        // No -d: the finishing commands reach the new pane as the current one.
        assert!(!v.contains(&"-d".to_string()));
        assert!(split_window(&PaneId::new("bad"), Split::Vertical, &launch).is_err());
    }

    // Recorded from tmux 3.3a: the user's running pane (no mark), a marked
    // running one, a marked exited one, a marked signalled one.
    const STATUS_OUTPUT: &str = "%0 13482 0    \n%2 13490 0  9f3a t alice\n\
        %3 41233 1 3 77ab t bob\n%4 41250 1  88cd t carol\n";

    #[test]
    fn parses_status_rows_with_their_marks() {
        let rows = parse_pane_rows(STATUS_OUTPUT).unwrap();
        let mark = |nonce: &str, member: &str| {
            Some(PaneMark {
                team: "t".into(),
                member: member.into(),
                nonce: nonce.into(),
            })
        };
        assert_eq!(
            rows,
            vec![
                PaneRow {
                    pane: PaneId::new("%0"),
                    pid: 13482,
                    dead: false,
                    dead_status: None,
                    mark: None,
                },
                PaneRow {
                    pane: PaneId::new("%2"),
                    pid: 13490,
                    dead: false,
                    dead_status: None,
                    mark: mark("9f3a", "alice"),
                },
                PaneRow {
                    pane: PaneId::new("%3"),
                    pid: 41233,
                    dead: true,
                    dead_status: Some(3),
                    mark: mark("77ab", "bob"),
                },
                PaneRow {
                    pane: PaneId::new("%4"),
                    pid: 41250,
                    dead: true,
                    dead_status: None,
                    mark: mark("88cd", "carol"),
                },
            ]
        );
        assert!(rows[1].carries("9f3a"));
        assert!(!rows[0].carries(""), "an unmarked pane carries no nonce");
        assert!(!rows[1].carries("other"));
        assert!(parse_pane_rows("").unwrap().is_empty());
        assert!(parse_pane_rows("%0 x 0    \n").is_err());
        assert!(
            parse_pane_rows("%0 1 0 \n").is_err(),
            "the old 4-field rows"
        );
        assert!(parse_pane_rows("garbage\n").is_err());
    }

    #[test]
    fn a_new_pane_is_marked_with_pane_options_only() {
        let cmds = finish_pane(None, &test_mark(), "alice", None, None).unwrap();
        assert_eq!(cmds[0], s(&["set-option", "-p", "@swarm_team", "t"]));
        assert_eq!(cmds[1], s(&["set-option", "-p", "@swarm_member", "alice"]));
        assert_eq!(cmds[2], s(&["set-option", "-p", "@swarm_nonce", "n1"]));
        assert!(
            cmds.iter().all(|c| !c.contains(&"-w".to_string())),
            "no window option on a pane that may join the user's window: {cmds:?}"
        );
    }

    #[test]
    fn other_pane_argv() {
        let p = PaneId::new("%7");
        assert_eq!(kill_pane(&p).unwrap(), s(&["kill-pane", "-t", "%7"]));
        assert_eq!(
            capture_pane(&p, true).unwrap(),
            s(&["capture-pane", "-p", "-J", "-t", "%7", "-S", "-"])
        );
        assert_eq!(
            focus(&p).unwrap(),
            vec![
                s(&["select-window", "-t", "%7"]),
                s(&["select-pane", "-t", "%7"])
            ]
        );
        assert_eq!(
            list_panes_all(),
            s(&[
                "list-panes",
                "-a",
                "-F",
                "#{pane_id} #{pane_pid} #{pane_dead} #{pane_dead_status} \
                 #{@swarm_nonce} #{@swarm_team} #{@swarm_member}"
            ])
        );
    }
}
