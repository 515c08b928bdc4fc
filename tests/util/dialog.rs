//! The lead's TeamsDialog on a private tmux server ([`Dialog`]): a
//! [`TmuxTeam`] whose lead pane shows the dialog, with keys pressed through
//! `send-keys`, the screen read with `capture-pane`, and waits that fail
//! with the dialog's screen beside the team's whole picture.

use super::tmux::{TmuxTeam, WAIT};
use super::wait_until;

/// A team on a private tmux server whose lead pane shows the dialog.
pub struct Dialog {
    pub t: TmuxTeam,
    /// The lead's pane (`%N`).
    pub pane: String,
}

/// The pane `swarm up` reports for the lead (`team T: lead in pane %N`;
/// not a teammate named `lead`, `spawned lead in pane %M`).
pub fn lead_pane_of(t: &TmuxTeam, stderr: &str) -> String {
    stderr
        .split(": lead in pane ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .unwrap_or_else(|| panic!("`swarm up` names no lead pane: {stderr}\n{}", t.explain()))
}

impl Dialog {
    /// Starts the team; the teammates are spawned before the dialog is
    /// looked at, so its first snapshot already lists them.
    pub fn open(test: &str, team: &str, spawn: &[(&str, &[&str])]) -> Option<Dialog> {
        let t = TmuxTeam::new(test, team)?;
        let up = t.up();
        let pane = lead_pane_of(&t, &up.stderr);
        let d = Dialog { t, pane };
        for (name, cmd) in spawn {
            d.t.spawn(name, cmd);
        }
        d.roomy();
        d.wait_screen("the dialog shows its status line", |s| {
            s.contains(" teammate")
        });
        for (name, _) in spawn {
            d.wait_screen(&format!("the dialog lists @{name}"), |s| {
                s.contains(&format!("@{name} "))
            });
        }
        Some(d)
    }

    /// Gives the lead's window room (160×48) and the lead's pane all of it.
    pub fn roomy(&self) {
        let session = format!("=swarm-{}", self.t.team);
        self.t
            .tmux
            .ok(&["resize-window", "-t", &session, "-x", "160", "-y", "48"]);
        let zoom = self
            .t
            .tmux
            .display(&self.pane, "#{window_panes} #{window_zoomed_flag}");
        let mut f = zoom.split_whitespace();
        let (panes, zoomed) = (f.next().unwrap_or("1"), f.next().unwrap_or("0"));
        if panes != "1" && zoomed != "1" {
            self.t.tmux.ok(&["resize-pane", "-Z", "-t", &self.pane]);
        }
    }

    /// What the lead's pane shows now.
    pub fn screen(&self) -> String {
        self.t.tmux.capture(&self.pane)
    }

    /// Presses keys in the lead's pane (tmux key names: `Up`, `Enter`, `BTab`…).
    pub fn keys(&self, keys: &[&str]) {
        self.t.tmux.send_keys(&self.pane, keys);
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        self.t.tmux.type_text(&self.pane, text);
    }

    pub fn explain(&self) -> String {
        format!(
            "=== the dialog (pane {}) ===\n{}\n{}",
            self.pane,
            self.screen(),
            self.t.explain()
        )
    }

    pub fn wait_screen(&self, what: &str, check: impl Fn(&str) -> bool) {
        wait_until(what, WAIT, || check(&self.screen()), || self.explain());
    }

    pub fn wait(&self, what: &str, check: impl FnMut() -> bool) {
        wait_until(what, WAIT, check, || self.explain());
    }

    /// Selects teammate `name` in the members list (row 0 is "all").
    pub fn select(&self, name: &str) {
        let i = self
            .t
            .members()
            .iter()
            .position(|m| m == name)
            .unwrap_or_else(|| panic!("{name} not on the roster\n{}", self.explain()));
        let ups = vec!["Up"; self.t.members().len() + 1];
        self.keys(&ups);
        self.keys(&vec!["Down"; i + 1]);
        self.wait_screen(&format!("@{name} is selected"), |s| {
            s.lines().any(|l| l.contains(&format!("▸ @{name} ")))
        });
    }

    /// Entries of `name`'s inbox file (unconsumed), each with its `text`
    /// parsed when it is a protocol frame.
    pub fn inbox(&self, name: &str) -> Vec<serde_json::Value> {
        self.t.inbox(name)
    }

    /// Protocol frames (the parsed `text`) in `name`'s inbox of type `kind`.
    pub fn frames(&self, name: &str, kind: &str) -> Vec<serde_json::Value> {
        self.inbox(name)
            .iter()
            .filter_map(|e| e.get("text").and_then(|t| t.as_str()))
            .filter_map(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .filter(|f| f.get("type").and_then(|t| t.as_str()) == Some(kind))
            .collect()
    }

    pub fn pane_alive(&self, pane: &str) -> bool {
        self.t.tmux.pane_alive(pane)
    }
}
