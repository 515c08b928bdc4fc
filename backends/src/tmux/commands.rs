//! The rules every tmux argv follows, and what all commands share: each
//! function of the noun files beside it (panes, sessions and windows,
//! layout, options) builds one subcommand's argv (after the global
//! `-S`/`-f` options) and, where tmux prints something, a parser of its
//! `-F` output. Every element bound for tmux passes [`check_arg`]: tmux
//! reads an element ending in `;` as a command separator even without a
//! shell, so a trailing `;` is escaped as `\;` (which tmux turns back into
//! `;`), and control characters other than tab are refused. Commands are
//! chained in one invocation with [`chain`], whose separators are the only
//! raw `;`. Targets are exact: a pane by `%id` ([`check_pane_id`]), a
//! session by `=name` ([`session_target`]). Here too: the version check and
//! the stderr a caller branches on ([`is_no_server`], [`is_no_sessions`],
//! [`is_missing_target`]).

use crate::PaneId;
use crate::error::{BackendError, Result};

/// The oldest tmux this backend drives (`-e` on split-window, `-l N%`,
/// pane options).
pub const MIN_VERSION: (u32, u32) = (3, 2);

/// `-F` format printing a new pane's id.
pub const PANE_ID_FORMAT: &str = "#{pane_id}";

/// Checks one argv element bound for tmux and returns it as tmux must see
/// it: a trailing `;` becomes `\;`; control characters other than tab are
/// refused.
pub fn check_arg(arg: &str) -> Result<String> {
    if let Some(bad) = arg.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(BackendError::invalid(
            "tmux argument",
            arg,
            format!("contains the control character {bad:?}; tmux cannot take it safely"),
        ));
    }
    Ok(match arg.strip_suffix(';') {
        // tmux strips the final ';' and, when a '\' precedes it, turns that
        // '\' into ';'. So "x;" is sent as "x\;" and "x\;" as "x\\;".
        Some(head) => format!("{head}\\;"),
        None => arg.to_string(),
    })
}

/// Escapes `#` for options and flags that tmux expands as formats
/// (`-c` start directory, `-T` title).
pub fn escape_format(text: &str) -> String {
    text.replace('#', "##")
}

/// Joins subcommands into one tmux invocation, checking every element; the
/// separators are the only raw `;`.
pub fn chain(commands: Vec<Vec<String>>) -> Result<Vec<String>> {
    let mut argv = Vec::new();
    for (i, command) in commands.into_iter().enumerate() {
        if i > 0 {
            argv.push(";".to_string());
        }
        for arg in command {
            argv.push(check_arg(&arg)?);
        }
    }
    Ok(argv)
}

/// A pane id as tmux prints it: `%` then digits. Anything else is refused,
/// so that no target can name a pane other than the one meant.
pub fn check_pane_id(pane: &PaneId) -> Result<&str> {
    let s = pane.as_str();
    match s.strip_prefix('%') {
        Some(digits) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(s),
        _ => Err(BackendError::invalid(
            "tmux pane id",
            s,
            "expected % followed by digits",
        )),
    }
}

/// A session name swarm may create and target exactly as `=name`.
pub fn check_session_name(name: &str) -> Result<&str> {
    if name.is_empty()
        || name.contains([':', '.'])
        || name.chars().any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(BackendError::invalid(
            "tmux session name",
            name,
            "must be non-empty, without ':', '.', spaces or control characters",
        ));
    }
    Ok(name)
}

/// The exact target of a session.
pub fn session_target(name: &str) -> Result<String> {
    Ok(format!("={}", check_session_name(name)?))
}

/// The exact target of a session's window by index (`=name:3`), or of its
/// current window (`=name:`).
pub fn window_target(session: &str, index: Option<u32>) -> Result<String> {
    let s = session_target(session)?;
    Ok(match index {
        Some(i) => format!("{s}:{i}"),
        None => format!("{s}:"),
    })
}

/// `tmux -V`.
pub fn version() -> Vec<String> {
    vec!["-V".to_string()]
}

/// `display-message -p 'tmux #{version}'`: the running server's version,
/// printed as `tmux -V` prints it, in a call made anyway.
pub fn server_version() -> Vec<String> {
    ["display-message", "-p", "tmux #{version}"]
        .map(String::from)
        .to_vec()
}

/// Parses `tmux -V` output (`tmux 3.3a`, `tmux next-3.4`, `tmux 3.2-rc3`,
/// `tmux master`) into (major, minor); `master` counts as new.
pub fn parse_version(output: &str) -> Result<(u32, u32)> {
    let word = output.split_whitespace().nth(1).unwrap_or_default();
    if word == "master" {
        return Ok((u32::MAX, 0));
    }
    let word = word.strip_prefix("next-").unwrap_or(word);
    let mut parts = word.splitn(2, '.');
    let major = parts.next().and_then(|m| m.parse::<u32>().ok());
    let minor = parts.next().and_then(|rest| {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    match (major, minor) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => Err(BackendError::Parse {
            what: "tmux version",
            output: output.to_string(),
        }),
    }
}

pub(super) fn set_option(scope: &str, target: &str, option: &str, value: &str) -> Vec<String> {
    ["set-option", scope, "-t", target, option, value]
        .map(String::from)
        .to_vec()
}

/// `CMD [-t TARGET] ARGS…`.
pub(super) fn targeted(
    cmd: &str,
    flags: &[&str],
    target: Option<&str>,
    rest: &[&str],
) -> Vec<String> {
    let mut argv = vec![cmd.to_string()];
    argv.extend(flags.iter().map(|f| f.to_string()));
    if let Some(t) = target {
        argv.push("-t".to_string());
        argv.push(t.to_string());
    }
    argv.extend(rest.iter().map(|a| a.to_string()));
    argv
}

/// Parses the `#{pane_id}` a spawn command printed.
pub fn parse_pane_id(output: &str) -> Result<PaneId> {
    let pane = PaneId::new(output.lines().next().unwrap_or_default().trim());
    check_pane_id(&pane).map_err(|_| BackendError::Parse {
        what: "new pane id",
        output: output.to_string(),
    })?;
    Ok(pane)
}

/// True when a failed tmux call's stderr says there is no server (so every
/// pane is gone).
pub fn is_no_server(stderr: &str) -> bool {
    stderr.contains("no server running")
        || stderr.contains("error connecting to")
        || stderr.contains("server exited unexpectedly")
}

/// True when a server-wide listing (`list-panes -a`) failed because the
/// server holds no session: tmux resolves a current target even for `-a`,
/// and with no session there is none. Such a server has no panes; it is
/// seen while a server exits after its last session closed, and on one
/// kept with `exit-empty off`.
pub fn is_no_sessions(stderr: &str) -> bool {
    stderr.contains("no current target")
}

/// True when stderr says a target (pane, window or session) does not exist.
pub fn is_missing_target(stderr: &str) -> bool {
    stderr.contains("can't find pane")
        || stderr.contains("can't find window")
        || stderr.contains("can't find session")
}

/// What the tests of every tmux command file share.
#[cfg(test)]
pub(super) mod testing {
    use crate::PaneMark;

    /// A mark for a test pane.
    pub fn test_mark() -> PaneMark {
        PaneMark {
            team: "t".into(),
            member: "alice".into(),
            nonce: "n1".into(),
        }
    }

    /// `&["a", "b"]` as an argv.
    pub fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testing::s;

    #[test]
    fn check_arg_escapes_a_trailing_semicolon() {
        assert_eq!(check_arg(";").unwrap(), "\\;");
        assert_eq!(check_arg("a;").unwrap(), "a\\;");
        assert_eq!(check_arg("a\\;").unwrap(), "a\\\\;");
        assert_eq!(check_arg("a;b").unwrap(), "a;b");
        assert_eq!(check_arg("").unwrap(), "");
        assert_eq!(check_arg("tab\there").unwrap(), "tab\there");
        assert_eq!(check_arg("ünïcödé ✳").unwrap(), "ünïcödé ✳");
    }

    #[test]
    fn check_arg_refuses_control_characters() {
        for bad in ["a\nb", "\r", "\u{1b}[0m", "x\0", "\u{7f}"] {
            let err = check_arg(bad).unwrap_err().to_string();
            assert!(err.contains("control character"), "{bad:?}: {err}");
        }
    }

    #[test]
    fn chain_checks_every_element_and_keeps_raw_separators() {
        let argv = chain(vec![s(&["a", "x;"]), s(&["b", ";"])]).unwrap();
        assert_eq!(argv, s(&["a", "x\\;", ";", "b", "\\;"]));
        assert!(chain(vec![s(&["a\n"])]).is_err());
    }

    #[test]
    fn pane_ids_and_sessions_are_exact() {
        assert!(check_pane_id(&PaneId::new("%12")).is_ok());
        for bad in ["12", "%", "%1x", "{last}", "=%1", "%1;"] {
            assert!(check_pane_id(&PaneId::new(bad)).is_err(), "{bad}");
        }
        assert_eq!(session_target("swarm-demo").unwrap(), "=swarm-demo");
        assert_eq!(window_target("s", Some(3)).unwrap(), "=s:3");
        assert_eq!(window_target("s", None).unwrap(), "=s:");
        for bad in ["", "a:b", "a.b", "a b", "a\nb"] {
            assert!(check_session_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn versions() {
        assert_eq!(parse_version("tmux 3.3a\n").unwrap(), (3, 3));
        assert_eq!(parse_version("tmux 3.2").unwrap(), (3, 2));
        assert_eq!(parse_version("tmux next-3.4").unwrap(), (3, 4));
        assert_eq!(parse_version("tmux 3.2-rc3").unwrap(), (3, 2));
        assert_eq!(parse_version("tmux 2.9a").unwrap(), (2, 9));
        assert!(parse_version("tmux master").unwrap() >= MIN_VERSION);
        assert!(parse_version("screen 4").is_err());
        assert!(parse_version("").is_err());
    }

    #[test]
    fn recognises_server_and_target_errors() {
        assert!(is_no_server("no server running on /tmp/x/sock\n"));
        assert!(is_no_server(
            "error connecting to /tmp/x/sock (No such file or directory)\n"
        ));
        assert!(is_missing_target("can't find pane: %9\n"));
        // `kill-session -t =swarm-x` once the session closed by itself.
        assert!(is_missing_target("can't find session: swarm-x\n"));
        assert!(!is_no_server("unknown option"));
        assert!(is_no_sessions("no current target\n"));
        assert!(!is_no_sessions("can't find pane: %9\n"));
    }

    #[test]
    fn parses_a_new_panes_id() {
        assert_eq!(parse_pane_id("%14\n").unwrap(), PaneId::new("%14"));
        assert!(parse_pane_id("").is_err());
        assert!(parse_pane_id("14\n").is_err());
    }
}
