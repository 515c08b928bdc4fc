//! Sessions and windows: a team's detached session (`new-session`, its
//! mark), new windows when a column is full, whether a session exists and
//! its panes, attach and kill, and the `swarm-hidden` windows a hidden pane
//! is parked in (`break-pane`, `join-pane`).

use super::commands::{
    PANE_ID_FORMAT, check_arg, check_pane_id, check_session_name, session_target, window_target,
};
use super::panes::Launch;
use crate::PaneId;
use crate::error::{BackendError, Result};

/// `new-window -d -P -F '#{pane_id}' -t =SESSION:INDEX -n NAME -c CWD -e K=V … -- ARGV`.
pub fn new_window(
    session: &str,
    index: u32,
    name: &str,
    launch: &Launch<'_>,
) -> Result<Vec<String>> {
    let mut argv = vec![
        "new-window".to_string(),
        "-d".to_string(),
        "-P".to_string(),
        "-F".to_string(),
        PANE_ID_FORMAT.to_string(),
        "-t".to_string(),
        window_target(session, Some(index))?,
        "-n".to_string(),
        name.to_string(),
    ];
    launch.push_into(&mut argv);
    Ok(argv)
}

/// `new-session -d -s NAME -P -F '#{pane_id}' -c CWD -e K=V … -- ARGV`.
pub fn new_session(name: &str, launch: &Launch<'_>) -> Result<Vec<String>> {
    let mut argv = vec![
        "new-session".to_string(),
        "-d".to_string(),
        "-s".to_string(),
        check_session_name(name)?.to_string(),
        // A detached session is 80x24 by default: too small for a lead and
        // its teammates. An attaching client resizes it to its terminal.
        "-x".to_string(),
        SESSION_COLS.to_string(),
        "-y".to_string(),
        SESSION_ROWS.to_string(),
        "-P".to_string(),
        "-F".to_string(),
        PANE_ID_FORMAT.to_string(),
    ];
    launch.push_into(&mut argv);
    Ok(argv)
}

/// The size of a session created detached (before anyone attaches).
pub const SESSION_COLS: u32 = 200;

pub const SESSION_ROWS: u32 = 50;

/// `set-option -t =NAME: @swarm_nonce NONCE`: marks a session swarm
/// created (options need the `=NAME:` form; `=NAME` is refused).
pub fn mark_session(name: &str, nonce: &str) -> Result<Vec<String>> {
    Ok(vec![
        "set-option".to_string(),
        "-t".to_string(),
        window_target(name, None)?,
        "@swarm_nonce".to_string(),
        check_arg(nonce)?,
    ])
}

/// `show-options -t =NAME: -qv @swarm_nonce`: a session's mark (empty
/// output, and success, for an unmarked or missing session).
pub fn session_mark(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "show-options".to_string(),
        "-t".to_string(),
        window_target(name, None)?,
        "-qv".to_string(),
        "@swarm_nonce".to_string(),
    ])
}

/// `list-windows -t =SESSION -F '#{window_index}'`.
pub fn list_window_indexes(session: &str) -> Result<Vec<String>> {
    Ok(vec![
        "list-windows".to_string(),
        "-t".to_string(),
        session_target(session)?,
        "-F".to_string(),
        "#{window_index}".to_string(),
    ])
}

/// Parses `#{window_index}` lines and returns the next free index after the
/// highest.
pub fn parse_next_window_index(output: &str) -> Result<u32> {
    let mut max: Option<u32> = None;
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let i = line
            .trim()
            .parse::<u32>()
            .map_err(|_| BackendError::Parse {
                what: "window indexes",
                output: output.to_string(),
            })?;
        max = Some(max.map_or(i, |m| m.max(i)));
    }
    Ok(max.map_or(0, |m| m + 1))
}

/// `has-session -t =NAME`.
pub fn has_session(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "has-session".to_string(),
        "-t".to_string(),
        session_target(name)?,
    ])
}

/// `list-panes -s -t =NAME -F '#{pane_id}'`: every pane of a session, first
/// window first.
pub fn list_session_panes(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "list-panes".to_string(),
        "-s".to_string(),
        "-t".to_string(),
        session_target(name)?,
        "-F".to_string(),
        PANE_ID_FORMAT.to_string(),
    ])
}

/// `attach-session -t =NAME`.
pub fn attach_session(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "attach-session".to_string(),
        "-t".to_string(),
        session_target(name)?,
    ])
}

/// `list-clients -t =NAME -F '#{client_pid}<TAB>#{client_name}'`: who is
/// attached to a session.
pub fn list_clients(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "list-clients".to_string(),
        "-t".to_string(),
        session_target(name)?,
        "-F".to_string(),
        "#{client_pid}\t#{client_name}".to_string(),
    ])
}

/// The name of the client whose process is `pid` in `list-clients` output
/// (see [`list_clients`]).
pub fn client_of_pid(output: &str, pid: u32) -> Option<String> {
    output.lines().find_map(|line| {
        let (p, name) = line.split_once('\t')?;
        (p.trim().parse::<u32>().ok()? == pid && !name.is_empty()).then(|| name.to_string())
    })
}

/// `detach-client -t CLIENT`.
pub fn detach_client(client: &str) -> Vec<String> {
    vec![
        "detach-client".to_string(),
        "-t".to_string(),
        client.to_string(),
    ]
}

/// `kill-session -t =NAME`.
pub fn kill_session(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "kill-session".to_string(),
        "-t".to_string(),
        session_target(name)?,
    ])
}

/// The name of the windows hidden panes are parked in.
pub const HIDDEN_WINDOW: &str = "swarm-hidden";

/// `break-pane -d -s PANE -n swarm-hidden`: park a pane in a window of its own.
pub fn break_pane(pane: &PaneId) -> Result<Vec<String>> {
    Ok(vec![
        "break-pane".to_string(),
        "-d".to_string(),
        "-s".to_string(),
        check_pane_id(pane)?.to_string(),
        "-n".to_string(),
        HIDDEN_WINDOW.to_string(),
    ])
}

/// `join-pane -d -v -s PANE -t TARGET_PANE`: bring a parked pane back.
pub fn join_pane(pane: &PaneId, target: &PaneId) -> Result<Vec<String>> {
    Ok(vec![
        "join-pane".to_string(),
        "-d".to_string(),
        "-v".to_string(),
        "-s".to_string(),
        check_pane_id(pane)?.to_string(),
        "-t".to_string(),
        check_pane_id(target)?.to_string(),
    ])
}

/// `join-pane -d -h -s PANE -t TARGET_PANE`: bring a parked pane back to
/// the right of `target` (the lead: a pane rejoining an empty teammate
/// column goes beside the lead, not under it).
pub fn join_pane_right(pane: &PaneId, target: &PaneId) -> Result<Vec<String>> {
    let mut argv = join_pane(pane, target)?;
    argv[2] = "-h".to_string();
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::commands::testing::s;
    use std::path::Path;

    #[test]
    fn session_and_window_argv() {
        let prog = s(&["/usr/bin/env", "-i", "--", "swarm", "lead"]);
        let launch = Launch {
            cwd: Path::new("/w"),
            env: Vec::new(),
            argv: prog,
        };
        assert_eq!(
            new_session("swarm-demo", &launch).unwrap(),
            s(&[
                "new-session",
                "-d",
                "-s",
                "swarm-demo",
                "-x",
                "200",
                "-y",
                "50",
                "-P",
                "-F",
                "#{pane_id}",
                "-c",
                "/w",
                "--",
                "/usr/bin/env",
                "-i",
                "--",
                "swarm",
                "lead"
            ])
        );
        assert!(new_session("bad:name", &launch).is_err());
        assert_eq!(
            new_window("swarm-demo", 4, "swarm", &launch).unwrap()[..9],
            s(&[
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                "=swarm-demo:4",
                "-n",
                "swarm"
            ])[..]
        );
        assert_eq!(
            attach_session("swarm-demo").unwrap(),
            s(&["attach-session", "-t", "=swarm-demo"])
        );
        assert_eq!(has_session("x").unwrap(), s(&["has-session", "-t", "=x"]));
    }

    #[test]
    fn hiding_argv() {
        let p = PaneId::new("%7");
        assert_eq!(
            break_pane(&p).unwrap(),
            s(&["break-pane", "-d", "-s", "%7", "-n", "swarm-hidden"])
        );
        assert_eq!(
            join_pane(&p, &PaneId::new("%1")).unwrap(),
            s(&["join-pane", "-d", "-v", "-s", "%7", "-t", "%1"])
        );
        assert_eq!(
            join_pane_right(&p, &PaneId::new("%1")).unwrap(),
            s(&["join-pane", "-d", "-h", "-s", "%7", "-t", "%1"])
        );
    }

    #[test]
    fn a_session_is_marked_with_a_session_option() {
        assert_eq!(
            mark_session("swarm-t", "n1").unwrap(),
            s(&["set-option", "-t", "=swarm-t:", "@swarm_nonce", "n1"])
        );
    }

    #[test]
    fn the_next_window_index_follows_the_highest() {
        assert_eq!(parse_next_window_index("0\n1\n3\n").unwrap(), 4);
        assert_eq!(parse_next_window_index("").unwrap(), 0);
        assert!(parse_next_window_index("x\n").is_err());
    }

    #[test]
    fn the_client_to_detach_is_found_by_its_pid() {
        let out = "4242\t/dev/pts/7\n17\t/dev/pts/3\n";
        assert_eq!(client_of_pid(out, 17).as_deref(), Some("/dev/pts/3"));
        assert_eq!(client_of_pid(out, 4242).as_deref(), Some("/dev/pts/7"));
        assert_eq!(client_of_pid(out, 424), None);
        assert_eq!(client_of_pid("", 17), None);
        assert_eq!(
            list_clients("swarm-demo").unwrap(),
            s(&[
                "list-clients",
                "-t",
                "=swarm-demo",
                "-F",
                "#{client_pid}\t#{client_name}"
            ])
        );
        assert_eq!(
            detach_client("/dev/pts/3"),
            s(&["detach-client", "-t", "/dev/pts/3"])
        );
    }
}
