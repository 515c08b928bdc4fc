//! Options and styling: a pane's title and colour, the window-level border
//! format that shows them, `remain-on-exit`, and the border status of a
//! window swarm did not create, saved before swarm sets it and put back
//! after (`show-options` parsed by [`parse_option`]).

use super::commands::{check_arg, check_pane_id, escape_format, set_option, targeted};
use crate::PaneId;
use crate::error::Result;

/// The window option in which swarm keeps the `pane-border-status` a window
/// it did not create had before swarm set it (`-` for "not set"), so that
/// [`restore_window`] can put it back.
pub const SAVED_BORDER_OPTION: &str = "@swarm_saved_border";

/// The window-level border format that shows each pane's title in its
/// `@swarm_color` (per-pane border styles need tmux 3.7).
pub const BORDER_FORMAT: &str = "#[fg=#{@swarm_color},bold] #{pane_title} #[default]";

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

/// `if-shell -F -t PANE COND 'set-option -p -t PANE remain-on-exit on|off'`,
/// COND true only while PANE carries `nonce` (and, for `off`, its process
/// still runs): a pane that is not swarm's, or no longer the one meant, is
/// left as it is. tmux evaluates COND itself (a format, no shell), and the
/// command it runs names only the checked pane id; a nonce that is not
/// plain hex, as swarm makes them, is refused.
///
/// With `off`, the pane closes by itself when its process ends, instead of
/// staying as a dead pane: `swarm down` asks this of the panes of the
/// teammates it asks to shut down, so that no pane is left to close for
/// one that ends as asked.
pub fn remain_on_exit_if_ours(pane: &PaneId, nonce: &str, on: bool) -> Result<Vec<String>> {
    let pane = check_pane_id(pane)?;
    if nonce.is_empty() || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(crate::BackendError::invalid(
            "pane nonce",
            nonce,
            "expected hex digits",
        ));
    }
    let ours = format!("#{{==:#{{@swarm_nonce}},{nonce}}}");
    let (cond, value) = if on {
        (ours, "on")
    } else {
        (format!("#{{&&:{ours},#{{!:#{{pane_dead}}}}}}"), "off")
    };
    Ok(vec![
        "if-shell".to_string(),
        "-F".to_string(),
        "-t".to_string(),
        pane.to_string(),
        cond,
        format!("set-option -p -t {pane} remain-on-exit {value}"),
    ])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::commands::testing::s;

    #[test]
    fn remain_on_exit_if_ours_is_one_checked_pane_and_hex_nonce() {
        assert_eq!(
            remain_on_exit_if_ours(&PaneId::new("%7"), "9f3a", false).unwrap(),
            s(&[
                "if-shell",
                "-F",
                "-t",
                "%7",
                "#{&&:#{==:#{@swarm_nonce},9f3a},#{!:#{pane_dead}}}",
                "set-option -p -t %7 remain-on-exit off",
            ])
        );
        assert_eq!(
            remain_on_exit_if_ours(&PaneId::new("%7"), "9f3a", true).unwrap(),
            s(&[
                "if-shell",
                "-F",
                "-t",
                "%7",
                "#{==:#{@swarm_nonce},9f3a}",
                "set-option -p -t %7 remain-on-exit on",
            ])
        );
        for nonce in ["", "9f;kill-server", "a}b", "#{pane_pid}", "9f 3a"] {
            assert!(
                remain_on_exit_if_ours(&PaneId::new("%7"), nonce, false).is_err(),
                "{nonce:?}"
            );
        }
        for pane in ["7", "%7;kill-server", "%7 %8"] {
            assert!(
                remain_on_exit_if_ours(&PaneId::new(pane), "9f3a", false).is_err(),
                "{pane:?}"
            );
        }
    }

    #[test]
    fn colours_map_to_tmux_names() {
        assert_eq!(tmux_colour("purple"), "magenta");
        assert_eq!(tmux_colour("orange"), "colour208");
        assert_eq!(tmux_colour("pink"), "colour205");
        assert_eq!(tmux_colour("cyan"), "cyan");
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
}
