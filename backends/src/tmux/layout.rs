//! The shape of a window: `list-panes -F WINDOW_FORMAT` rows
//! ([`WindowPane`]: each pane's size, its window's size, index and
//! session), which the placement plans from, and the commands that reshape
//! it (`select-layout`, `resize-pane`).

use super::commands::check_pane_id;
use crate::PaneId;
use crate::error::{BackendError, Result};

/// `-F` format describing the panes of one window (session name last: it
/// may contain spaces).
pub const WINDOW_FORMAT: &str = "#{pane_id} #{pane_width} #{pane_height} #{window_id} \
     #{window_width} #{window_height} #{window_index} #{session_name}";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tmux::commands::testing::s;

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
    fn layout_argv() {
        assert_eq!(
            select_layout_even(&PaneId::new("%7")).unwrap(),
            s(&["select-layout", "-E", "-t", "%7"])
        );
    }
}
