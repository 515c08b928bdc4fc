//! Exec presets: CLIs driven one non-interactive run per unit of work.
//!
//! Exact command lines (`PROMPT` is always the last argument; stdin is
//! `/dev/null`; `[…]` parts appear only when set):
//!
//! | preset | argv |
//! |---|---|
//! | `codex` | `codex exec --skip-git-repo-check [--model M] [MODE FLAGS] PROMPT` |
//! | `gemini` | `gemini [--model M] [MODE FLAGS] -p PROMPT` |
//! | `aider` | `aider --yes-always --no-pretty [--model M] --message PROMPT` |
//! | `claude-print` | `claude -p [--model M] [--permission-mode MODE] PROMPT` |
//! | `command` | `ARGV… PROMPT` (argv from the member's `command`) |
//!
//! The member's `command` (spec `command = [...]`, roster `swarmCommand`)
//! replaces the preset's prefix (everything before the first `[…]`), so
//! `command = ["/opt/codex/bin/codex", "exec"]` keeps the model and mode
//! flags and the prompt.
//!
//! Permission modes (from `mode_set_request`, recorded in the roster's
//! `mode`) map to each CLI's own flags where it has them:
//!
//! | mode | codex | gemini | claude-print | aider, command |
//! |---|---|---|---|---|
//! | `bypassPermissions` | `--dangerously-bypass-approvals-and-sandbox` | `--yolo` | `--permission-mode bypassPermissions` | none |
//! | `acceptEdits` | `--full-auto` | `--approval-mode auto_edit` | `--permission-mode acceptEdits` | none |
//! | other (`default`, `plan`, …) | none | none | `--permission-mode MODE` | none |
//!
//! The prompt is the member's role prompt, a blank line, then either the
//! incoming messages, each wrapped as Claude Code shows them to its model
//! (reference §8.4: `<teammate-message teammate_id="FROM">\nTEXT\n</teammate-message>`,
//! joined by a blank line), or the task (`Task #ID: SUBJECT`, a blank line,
//! the description).

use crate::mailbox::Entry;
use crate::tasks::Task;

/// The exec presets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    Codex,
    Gemini,
    Aider,
    ClaudePrint,
    Command,
}

impl Preset {
    pub fn from_name(name: &str) -> Option<Preset> {
        Some(match name {
            "codex" => Preset::Codex,
            "gemini" => Preset::Gemini,
            "aider" => Preset::Aider,
            "claude-print" => Preset::ClaudePrint,
            "command" => Preset::Command,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Preset::Codex => "codex",
            Preset::Gemini => "gemini",
            Preset::Aider => "aider",
            Preset::ClaudePrint => "claude-print",
            Preset::Command => "command",
        }
    }

    /// The argv prefix when the member names no command (`command` has none).
    pub fn default_prefix(self) -> &'static [&'static str] {
        match self {
            Preset::Codex => &["codex", "exec", "--skip-git-repo-check"],
            Preset::Gemini => &["gemini"],
            Preset::Aider => &["aider", "--yes-always", "--no-pretty"],
            Preset::ClaudePrint => &["claude", "-p"],
            Preset::Command => &[],
        }
    }

    /// The CLI's flags for a permission mode (see the module table).
    pub fn mode_flags(self, mode: &str) -> Vec<String> {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        match (self, mode) {
            (Preset::Codex, "bypassPermissions") => {
                v(&["--dangerously-bypass-approvals-and-sandbox"])
            }
            (Preset::Codex, "acceptEdits") => v(&["--full-auto"]),
            (Preset::Gemini, "bypassPermissions") => v(&["--yolo"]),
            (Preset::Gemini, "acceptEdits") => v(&["--approval-mode", "auto_edit"]),
            (Preset::ClaudePrint, m) if !m.is_empty() => v(&["--permission-mode", m]),
            _ => Vec::new(),
        }
    }

    /// The full argv of one run.
    pub fn argv(
        self,
        command: Option<&[String]>,
        model: Option<&str>,
        mode: Option<&str>,
        prompt: &str,
    ) -> Vec<String> {
        let mut argv: Vec<String> = match command {
            Some(c) if !c.is_empty() => c.to_vec(),
            _ => self
                .default_prefix()
                .iter()
                .map(|s| s.to_string())
                .collect(),
        };
        if let Some(m) = model.filter(|m| !m.is_empty())
            && self != Preset::Command
        {
            argv.extend(["--model".to_string(), m.to_string()]);
        }
        if let Some(mode) = mode {
            argv.extend(self.mode_flags(mode));
        }
        match self {
            Preset::Gemini => argv.push("-p".into()),
            Preset::Aider => argv.push("--message".into()),
            _ => {}
        }
        argv.push(prompt.to_string());
        argv
    }
}

/// `<teammate-message teammate_id="FROM"[ color="C"][ summary="S"]>\nTEXT\n</teammate-message>`.
pub fn wrap_message(entry: &Entry) -> String {
    let mut open = format!("<teammate-message teammate_id=\"{}\"", attr(&entry.from));
    if let Some(c) = entry
        .color
        .as_deref()
        .filter(|c| crate::team::colors::is_palette(c))
    {
        open.push_str(&format!(" color=\"{}\"", attr(c)));
    }
    if let Some(s) = entry.summary.as_deref().filter(|s| !s.is_empty()) {
        let s: String = s.chars().take(200).collect();
        open.push_str(&format!(" summary=\"{}\"", attr(&s)));
    }
    format!("{open}>\n{}\n</teammate-message>", entry.text)
}

fn attr(v: &str) -> String {
    v.replace('"', "&quot;").replace('\'', "&apos;")
}

/// Role prompt + the wrapped messages.
pub fn messages_prompt(role: Option<&str>, entries: &[Entry]) -> String {
    let body = entries
        .iter()
        .map(wrap_message)
        .collect::<Vec<_>>()
        .join("\n\n");
    with_role(role, body)
}

/// Role prompt + the task.
pub fn task_prompt(role: Option<&str>, task: &Task) -> String {
    let mut body = format!("Task #{}: {}", task.id, task.subject);
    if !task.description.is_empty() {
        body.push_str("\n\n");
        body.push_str(&task.description);
    }
    with_role(role, body)
}

fn with_role(role: Option<&str>, body: String) -> String {
    match role.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => format!("{r}\n\n{body}"),
        None => body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn each_preset_builds_its_documented_command_line() {
        assert_eq!(
            Preset::Codex.argv(None, Some("o3"), None, "P"),
            s(&[
                "codex",
                "exec",
                "--skip-git-repo-check",
                "--model",
                "o3",
                "P"
            ])
        );
        assert_eq!(
            Preset::Gemini.argv(None, None, Some("bypassPermissions"), "P"),
            s(&["gemini", "--yolo", "-p", "P"])
        );
        assert_eq!(
            Preset::Aider.argv(None, None, None, "P"),
            s(&["aider", "--yes-always", "--no-pretty", "--message", "P"])
        );
        assert_eq!(
            Preset::ClaudePrint.argv(None, Some("m"), Some("acceptEdits"), "P"),
            s(&[
                "claude",
                "-p",
                "--model",
                "m",
                "--permission-mode",
                "acceptEdits",
                "P"
            ])
        );
        let cmd = s(&["my-agent", "--flag"]);
        assert_eq!(
            Preset::Command.argv(Some(&cmd), Some("ignored"), Some("bypassPermissions"), "P"),
            s(&["my-agent", "--flag", "P"])
        );
        let over = s(&["/opt/codex", "exec"]);
        assert_eq!(
            Preset::Codex.argv(Some(&over), None, Some("acceptEdits"), "P"),
            s(&["/opt/codex", "exec", "--full-auto", "P"])
        );
    }

    #[test]
    fn messages_are_wrapped_as_claude_code_shows_them() {
        let mut e = Entry::new(
            "bob",
            "say \"hi\"".into(),
            Some("it's".into()),
            Some("blue".into()),
        );
        e.color = Some("blue".into());
        assert_eq!(
            wrap_message(&e),
            "<teammate-message teammate_id=\"bob\" color=\"blue\" summary=\"it&apos;s\">\nsay \"hi\"\n</teammate-message>"
        );
        let lead = Entry::new("team-lead", "go".into(), None, None);
        assert_eq!(
            messages_prompt(Some("You review code."), &[lead.clone(), lead]),
            "You review code.\n\n<teammate-message teammate_id=\"team-lead\">\ngo\n</teammate-message>\n\n\
             <teammate-message teammate_id=\"team-lead\">\ngo\n</teammate-message>"
        );
    }
}
