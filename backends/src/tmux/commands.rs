//! One function per tmux subcommand: each builds the argv (after the global
//! `-S`/`-f` options) and, where tmux prints something, a parser of its `-F`
//! output. Every element bound for tmux passes [`check_arg`]: tmux reads an
//! element ending in `;` as a command separator even without a shell, so a
//! trailing `;` is escaped as `\;` (which tmux turns back into `;`), and
//! control characters other than tab are refused. Commands are chained in
//! one invocation with [`chain`], whose separators are the only raw `;`.

use std::path::Path;

use crate::error::{BackendError, Result};
use crate::{PaneId, PaneMark};

/// The oldest tmux this backend drives (`-e` on split-window, `-l N%`,
/// pane options).
pub const MIN_VERSION: (u32, u32) = (3, 2);

/// `-F` format printing a new pane's id.
pub const PANE_ID_FORMAT: &str = "#{pane_id}";

/// `-F` format for `status`: one line per pane on the server, with the
/// pane's swarm mark (empty fields for a pane swarm did not mark).
pub const STATUS_FORMAT: &str = "#{pane_id} #{pane_pid} #{pane_dead} #{pane_dead_status} \
     #{@swarm_nonce} #{@swarm_team} #{@swarm_member}";

/// The window option in which swarm keeps the `pane-border-status` a window
/// it did not create had before swarm set it (`-` for "not set"), so that
/// [`restore_window`] can put it back.
pub const SAVED_BORDER_OPTION: &str = "@swarm_saved_border";

/// `-F` format describing the panes of one window (session name last: it
/// may contain spaces).
pub const WINDOW_FORMAT: &str = "#{pane_id} #{pane_width} #{pane_height} #{window_id} \
     #{window_width} #{window_height} #{window_index} #{session_name}";

/// The window-level border format that shows each pane's title in its
/// `@swarm_color` (per-pane border styles need tmux 3.7).
pub const BORDER_FORMAT: &str = "#[fg=#{@swarm_color},bold] #{pane_title} #[default]";

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

/// The tmux colour for a palette name: purple→magenta, orange→colour208,
/// pink→colour205, others unchanged.
pub fn tmux_colour(name: &str) -> &str {
    match name {
        "purple" => "magenta",
        "orange" => "colour208",
        "pink" => "colour205",
        other => other,
    }
}

/// `tmux -V`.
pub fn version() -> Vec<String> {
    vec!["-V".to_string()]
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

/// The program part of a spawn: working directory, environment, argv.
#[derive(Clone, Debug)]
pub struct Launch<'a> {
    pub cwd: &'a Path,
    pub env: &'a [(String, String)],
    /// The full argv of the pane's process (`env -i -- … PROGRAM ARGS`).
    pub argv: &'a [String],
}

impl Launch<'_> {
    fn push_into(&self, argv: &mut Vec<String>) {
        argv.push("-c".to_string());
        argv.push(escape_format(&self.cwd.to_string_lossy()));
        for (k, v) in self.env {
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
    let mut argv = vec![
        "split-window".to_string(),
        "-P".to_string(),
        "-F".to_string(),
        PANE_ID_FORMAT.to_string(),
        "-t".to_string(),
        check_pane_id(target)?.to_string(),
    ];
    match split {
        Split::Horizontal { percent } => {
            argv.extend(["-h".to_string(), "-l".to_string(), format!("{percent}%")])
        }
        Split::Vertical => argv.push("-v".to_string()),
    }
    launch.push_into(&mut argv);
    Ok(argv)
}

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

/// `set-option -w -t TARGET remain-on-exit on|off` (window level: new panes
/// of the window inherit it).
pub fn set_window_remain_on_exit(target: &str, on: bool) -> Vec<String> {
    set_option(
        "-w",
        target,
        "remain-on-exit",
        if on { "on" } else { "off" },
    )
}

/// `set-option -p -t PANE remain-on-exit on|off`.
pub fn set_pane_remain_on_exit(pane: &PaneId, on: bool) -> Result<Vec<String>> {
    Ok(set_option(
        "-p",
        check_pane_id(pane)?,
        "remain-on-exit",
        if on { "on" } else { "off" },
    ))
}

fn set_option(scope: &str, target: &str, option: &str, value: &str) -> Vec<String> {
    ["set-option", scope, "-t", target, option, value]
        .map(String::from)
        .to_vec()
}

/// `select-pane -t PANE -T TITLE` (the title is a format: `#` is escaped).
pub fn set_title(pane: &PaneId, title: &str) -> Result<Vec<String>> {
    Ok(vec![
        "select-pane".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
        "-T".to_string(),
        escape_format(title),
    ])
}

/// `set-option -p -t PANE @swarm_color COLOUR` (palette name mapped).
pub fn set_color(pane: &PaneId, palette_name: &str) -> Result<Vec<String>> {
    Ok(set_option(
        "-p",
        check_pane_id(pane)?,
        "@swarm_color",
        tmux_colour(palette_name),
    ))
}

/// `last-pane`: after a [`split_window`] (which focused the new pane), the
/// window's previously active pane is active again.
pub fn restore_focus() -> Vec<String> {
    vec!["last-pane".to_string()]
}

/// `CMD [-t TARGET] ARGS…`.
fn targeted(cmd: &str, flags: &[&str], target: Option<&str>, rest: &[&str]) -> Vec<String> {
    let mut argv = vec![cmd.to_string()];
    argv.extend(flags.iter().map(|f| f.to_string()));
    if let Some(t) = target {
        argv.push("-t".to_string());
        argv.push(t.to_string());
    }
    argv.extend(rest.iter().map(|a| a.to_string()));
    argv
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

/// `pane-border-status top` for the window of `target` (a window-only
/// option): set on windows swarm creates, and on the lead's window once its
/// previous value is saved ([`save_border`]).
pub fn border_status_top(target: Option<&str>) -> Vec<String> {
    targeted(
        "set-option",
        &["-w"],
        target,
        &["pane-border-status", "top"],
    )
}

/// `show-options -w -t PANE`: the options set on PANE's window itself.
pub fn show_window_options(pane: &PaneId) -> Result<Vec<String>> {
    Ok(vec![
        "show-options".to_string(),
        "-w".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
    ])
}

/// The value of `option` in `show-options` output (`None`: not set there).
pub fn parse_option(output: &str, option: &str) -> Option<String> {
    output.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == option).then(|| value.trim().trim_matches('"').to_string())
    })
}

/// Before swarm sets `pane-border-status` on the window of `lead` (a window
/// it may not have created), the commands that save the window's own value
/// (`shown`: its `show-options -w` output) — unless a save is already there
/// from an earlier lead, which holds the user's original value.
pub fn save_border(lead: &PaneId, shown: &str) -> Result<Vec<Vec<String>>> {
    if parse_option(shown, SAVED_BORDER_OPTION).is_some() {
        return Ok(Vec::new());
    }
    let before = parse_option(shown, "pane-border-status").unwrap_or_else(|| "-".to_string());
    Ok(vec![set_option(
        "-w",
        check_pane_id(lead)?,
        SAVED_BORDER_OPTION,
        &check_arg(&before)?,
    )])
}

/// The commands that put the window of `host` back as [`save_border`]
/// found it (`shown`: its `show-options -w` output); none when swarm saved
/// nothing there.
pub fn restore_window(host: &PaneId, shown: &str) -> Result<Vec<Vec<String>>> {
    let Some(saved) = parse_option(shown, SAVED_BORDER_OPTION) else {
        return Ok(Vec::new());
    };
    let t = check_pane_id(host)?;
    let mut cmds = Vec::new();
    if saved == "-" {
        cmds.push(
            ["set-option", "-w", "-u", "-t", t, "pane-border-status"]
                .map(String::from)
                .to_vec(),
        );
    } else {
        cmds.push(set_option(
            "-w",
            t,
            "pane-border-status",
            &check_arg(&saved)?,
        ));
    }
    cmds.push(
        ["set-option", "-w", "-u", "-t", t, SAVED_BORDER_OPTION]
            .map(String::from)
            .to_vec(),
    );
    Ok(cmds)
}

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

/// `list-panes -t PANE -F WINDOW_FORMAT`: the panes of PANE's window.
pub fn list_window_panes(pane: &PaneId) -> Result<Vec<String>> {
    Ok(vec![
        "list-panes".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
        "-F".to_string(),
        WINDOW_FORMAT.to_string(),
    ])
}

/// One line of [`WINDOW_FORMAT`] output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowPane {
    pub pane: PaneId,
    pub width: u32,
    pub height: u32,
    pub window_id: String,
    pub window_width: u32,
    pub window_height: u32,
    pub window_index: u32,
    pub session: String,
}

/// Parses `list-panes -F WINDOW_FORMAT` output.
pub fn parse_window_panes(output: &str) -> Result<Vec<WindowPane>> {
    let bad = || BackendError::Parse {
        what: "list-panes window rows",
        output: output.to_string(),
    };
    let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
    let mut rows = Vec::new();
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.splitn(8, ' ').collect();
        if f.len() != 8 || !f[3].starts_with('@') {
            return Err(bad());
        }
        let pane = PaneId::new(f[0]);
        check_pane_id(&pane).map_err(|_| bad())?;
        rows.push(WindowPane {
            pane,
            width: num(f[1])?,
            height: num(f[2])?,
            window_id: f[3].to_string(),
            window_width: num(f[4])?,
            window_height: num(f[5])?,
            window_index: num(f[6])?,
            session: f[7].to_string(),
        });
    }
    Ok(rows)
}

/// `list-panes -t WINDOW_ID -F WINDOW_FORMAT`: the panes of a window by id (`@3`).
pub fn list_panes_window(window_id: &str) -> Vec<String> {
    ["list-panes", "-t", window_id, "-F", WINDOW_FORMAT]
        .map(String::from)
        .to_vec()
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

/// Parses the `#{pane_id}` a spawn command printed.
pub fn parse_pane_id(output: &str) -> Result<PaneId> {
    let pane = PaneId::new(output.lines().next().unwrap_or_default().trim());
    check_pane_id(&pane).map_err(|_| BackendError::Parse {
        what: "new pane id",
        output: output.to_string(),
    })?;
    Ok(pane)
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

/// `select-layout -t TARGET LAYOUT`.
pub fn select_layout(target: &str, layout: &str) -> Vec<String> {
    ["select-layout", "-t", target, layout]
        .map(String::from)
        .to_vec()
}

/// `select-layout -E -t PANE`: spread `pane` and the panes beside it in
/// its column (or row) out evenly, leaving the rest of the layout as it is
/// (the lead's width, a tiled overflow window's shape).
pub fn select_layout_even(pane: &PaneId) -> Result<Vec<String>> {
    Ok(vec![
        "select-layout".to_string(),
        "-E".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
    ])
}

/// `resize-pane -t PANE -x COLS`.
pub fn resize_pane_width(pane: &PaneId, cols: u32) -> Result<Vec<String>> {
    Ok(vec![
        "resize-pane".to_string(),
        "-t".to_string(),
        check_pane_id(pane)?.to_string(),
        "-x".to_string(),
        cols.to_string(),
    ])
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

/// `kill-session -t =NAME`.
pub fn kill_session(name: &str) -> Result<Vec<String>> {
    Ok(vec![
        "kill-session".to_string(),
        "-t".to_string(),
        session_target(name)?,
    ])
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

/// True when a failed tmux call's stderr says there is no server (so every
/// pane is gone).
pub fn is_no_server(stderr: &str) -> bool {
    stderr.contains("no server running")
        || stderr.contains("error connecting to")
        || stderr.contains("server exited unexpectedly")
}

/// True when stderr says a target (pane, window or session) does not exist.
pub fn is_missing_target(stderr: &str) -> bool {
    stderr.contains("can't find pane")
        || stderr.contains("can't find window")
        || stderr.contains("can't find session")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_mark() -> PaneMark {
        PaneMark {
            team: "t".into(),
            member: "alice".into(),
            nonce: "n1".into(),
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

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
    fn colours_map_to_tmux_names() {
        assert_eq!(tmux_colour("purple"), "magenta");
        assert_eq!(tmux_colour("orange"), "colour208");
        assert_eq!(tmux_colour("pink"), "colour205");
        assert_eq!(tmux_colour("cyan"), "cyan");
    }

    #[test]
    fn split_window_argv() {
        let env = vec![("A".to_string(), "1 2".to_string())];
        let prog = s(&["/usr/bin/env", "-i", "--", "A=1 2", "sh", "-c", "echo hi;"]);
        let launch = Launch {
            cwd: Path::new("/tmp/my #dir"),
            env: &env,
            argv: &prog,
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

    #[test]
    fn session_and_window_argv() {
        let prog = s(&["/usr/bin/env", "-i", "--", "swarm", "lead"]);
        let launch = Launch {
            cwd: Path::new("/w"),
            env: &[],
            argv: &prog,
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
    fn styling_argv() {
        let p = PaneId::new("%7");
        assert_eq!(
            set_title(&p, "alice #1").unwrap(),
            s(&["select-pane", "-t", "%7", "-T", "alice ##1"])
        );
        assert_eq!(
            set_color(&p, "purple").unwrap(),
            s(&["set-option", "-p", "-t", "%7", "@swarm_color", "magenta"])
        );
        assert_eq!(
            border_status_top(Some("%7")),
            s(&["set-option", "-w", "-t", "%7", "pane-border-status", "top"])
        );
        assert_eq!(
            set_pane_remain_on_exit(&p, false).unwrap(),
            s(&["set-option", "-p", "-t", "%7", "remain-on-exit", "off"])
        );
    }

    #[test]
    fn other_argv() {
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
        assert_eq!(
            select_layout_even(&p).unwrap(),
            s(&["select-layout", "-E", "-t", "%7"])
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

    // Recorded from tmux 3.3a: `show-options -w` of a window where swarm
    // saved the user's (unset) border status and set its own.
    const WINDOW_OPTIONS: &str = "@swarm_saved_border -\npane-border-status top\n";

    #[test]
    fn the_users_window_border_is_saved_once_and_put_back() {
        let lead = PaneId::new("%0");
        // Nothing saved yet, the user had no window-level value.
        let save = save_border(&lead, "").unwrap();
        assert_eq!(
            save,
            vec![s(&[
                "set-option",
                "-w",
                "-t",
                "%0",
                "@swarm_saved_border",
                "-"
            ])]
        );
        // The user's own value is saved as it was.
        let save = save_border(&lead, "pane-border-status bottom\n").unwrap();
        assert_eq!(save[0][5], "bottom");
        // A second lead never overwrites the user's original value.
        assert!(save_border(&lead, WINDOW_OPTIONS).unwrap().is_empty());
        assert_eq!(
            restore_window(&lead, WINDOW_OPTIONS).unwrap(),
            vec![
                s(&["set-option", "-w", "-u", "-t", "%0", "pane-border-status"]),
                s(&["set-option", "-w", "-u", "-t", "%0", "@swarm_saved_border"]),
            ]
        );
        let had = "@swarm_saved_border bottom\npane-border-status top\n";
        assert_eq!(
            restore_window(&lead, had).unwrap()[0],
            s(&[
                "set-option",
                "-w",
                "-t",
                "%0",
                "pane-border-status",
                "bottom"
            ])
        );
        assert!(
            restore_window(&lead, "pane-border-status top\n")
                .unwrap()
                .is_empty()
        );
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
        assert_eq!(
            mark_session("swarm-t", "n1").unwrap(),
            s(&["set-option", "-t", "=swarm-t:", "@swarm_nonce", "n1"])
        );
    }

    // Recorded from tmux 3.3a, an 80x24 detached session named "swarm demo".
    const WINDOW_OUTPUT: &str = "%0 27 24 @0 80 24 0 swarm demo\n%1 52 11 @0 80 24 0 swarm demo\n%2 52 12 @0 80 24 0 swarm demo\n";

    #[test]
    fn parses_window_rows() {
        let rows = parse_window_panes(WINDOW_OUTPUT).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].pane, PaneId::new("%1"));
        assert_eq!((rows[1].width, rows[1].height), (52, 11));
        assert_eq!(rows[0].window_id, "@0");
        assert_eq!((rows[0].window_width, rows[0].window_height), (80, 24));
        assert_eq!(rows[2].session, "swarm demo");
        assert!(parse_window_panes("%0 27 24 0 80 24 0 s\n").is_err());
    }

    #[test]
    fn parses_pane_ids_and_indexes() {
        assert_eq!(parse_pane_id("%14\n").unwrap(), PaneId::new("%14"));
        assert!(parse_pane_id("").is_err());
        assert!(parse_pane_id("14\n").is_err());
        assert_eq!(parse_next_window_index("0\n1\n3\n").unwrap(), 4);
        assert_eq!(parse_next_window_index("").unwrap(), 0);
        assert!(parse_next_window_index("x\n").is_err());
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
    }
}
