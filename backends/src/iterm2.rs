//! The iTerm2 backend (macOS): the `it2` CLI (`session split`, `session run`,
//! `session close -f`, `session focus`), or AppleScript through `osascript`
//! when `it2` is missing. iTerm2 starts a login shell in a new session, so
//! the program is started through one line that every common shell (sh,
//! bash, zsh, fish) reads the same way: `exec /bin/sh -c SCRIPT sh CWD
//! PIDFILE K=V … PROGRAM ARGS`, each word quoted by [`shell_quote`]. The
//! script records its pid (`SpawnSpec::pid_file`, required) and execs
//! `env -i`, so the pane's process has the exact environment and the pid on
//! record; status and kill go through that record.
//!
//! Not exercised live (no macOS here): argv building, quoting, AppleScript
//! escaping and output parsing are unit-tested.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::command::Invocation;
use crate::error::{BackendError, Result};
use crate::{
    BackendKind, Capabilities, ENV_PROGRAM, PaneBackendExecutor, PaneFocus, PaneId, PaneRef,
    PaneStatus, Placement, SpawnSpec, pidfile, process,
};

/// The script run by `/bin/sh` in the new session: `$1` cwd, `$2` pid file,
/// then the `env -i` arguments.
pub const LAUNCH_SCRIPT: &str =
    r#"cd "$1" || exit 127; echo "$$" > "$2" || exit 127; shift 2; exec /usr/bin/env -i -- "$@""#;

/// How iTerm2 is driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    It2,
    AppleScript,
}

/// Quotes one word for sh, bash, zsh and fish alike: single-quoted runs,
/// with `'` and `\` escaped outside the quotes (fish treats `\\` inside
/// single quotes specially, so no backslash is ever put inside them).
/// Control characters are refused: the line is typed into a shell.
pub fn shell_quote(word: &str) -> Result<String> {
    if let Some(c) = word.chars().find(|c| c.is_control()) {
        return Err(BackendError::invalid(
            "iTerm2 argument",
            word,
            format!("contains the control character {c:?}"),
        ));
    }
    if word.is_empty() {
        return Ok("''".to_string());
    }
    let mut out = String::new();
    let mut open = false;
    for c in word.chars() {
        if c == '\'' || c == '\\' {
            if open {
                out.push('\'');
                open = false;
            }
            out.push('\\');
            out.push(c);
        } else {
            if !open {
                out.push('\'');
                open = true;
            }
            out.push(c);
        }
    }
    if open {
        out.push('\'');
    }
    Ok(out)
}

/// The command line typed into (or given to) the new session.
pub fn launch_line(spec: &SpawnSpec, pid_file: &Path) -> Result<String> {
    let mut words = vec![
        "exec".to_string(),
        "/bin/sh".to_string(),
        "-c".to_string(),
        shell_quote(LAUNCH_SCRIPT)?,
        "sh".to_string(),
        shell_quote(&spec.cwd.to_string_lossy())?,
        shell_quote(&pid_file.to_string_lossy())?,
    ];
    // exact_env_argv() starts with "/usr/bin/env -i --", which the script supplies.
    for word in spec.exact_env_argv().iter().skip(3) {
        words.push(shell_quote(word)?);
    }
    debug_assert_eq!(ENV_PROGRAM, "/usr/bin/env");
    Ok(words.join(" "))
}

/// Escapes text for an AppleScript string literal (`"…"`).
pub fn applescript_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The session id part that AppleScript uses: `w0t0p1:UUID` → `UUID`.
pub fn bare_session_id(id: &str) -> &str {
    id.rsplit_once(':').map_or(id, |(_, uuid)| uuid)
}

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Finds the new session's id in `it2 session split` or `osascript` output:
/// the last word shaped like `w0t0p1:UUID` or a bare UUID.
pub fn parse_session_id(output: &str) -> Result<String> {
    output
        .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
        .rfind(|w| is_uuid(bare_session_id(w)))
        .map(String::from)
        .ok_or_else(|| BackendError::Parse {
            what: "iTerm2 session id",
            output: output.to_string(),
        })
}

/// `it2 session split [-v] [-s SESSION]`.
pub fn it2_split(target: Option<&str>, vertical: bool) -> Vec<String> {
    let mut argv = vec!["session".to_string(), "split".to_string()];
    if vertical {
        argv.push("-v".to_string());
    }
    if let Some(t) = target {
        argv.extend(["-s".to_string(), t.to_string()]);
    }
    argv
}

/// `it2 session run -s SESSION LINE`.
pub fn it2_run(session: &str, line: &str) -> Vec<String> {
    ["session", "run", "-s", session, line]
        .map(String::from)
        .to_vec()
}

/// `it2 session close -f -s SESSION`.
pub fn it2_close(session: &str) -> Vec<String> {
    ["session", "close", "-f", "-s", session]
        .map(String::from)
        .to_vec()
}

/// `it2 session focus SESSION`.
pub fn it2_focus(session: &str) -> Vec<String> {
    ["session", "focus", session].map(String::from).to_vec()
}

fn find_session(id: &str, body: &str) -> String {
    format!(
        "tell application \"iTerm2\"\n\
         repeat with w in windows\n\
         repeat with t in tabs of w\n\
         repeat with s in sessions of t\n\
         if id of s is {} then\n\
         {body}\n\
         return id of s\n\
         end if\n\
         end repeat\n\
         end repeat\n\
         end repeat\n\
         end tell",
        applescript_string(bare_session_id(id))
    )
}

/// `osascript -e SCRIPT` splitting `target` (or the current session) and
/// running `line` as the new session's command; prints the new session id.
pub fn osascript_split(target: Option<&str>, line: &str) -> Vec<String> {
    let split = format!(
        "set s to (split vertically with default profile command {})",
        applescript_string(line)
    );
    let script = match target {
        Some(id) => find_session(id, &split),
        None => format!(
            "tell application \"iTerm2\"\n\
             tell current session of current window\n\
             {split}\n\
             end tell\n\
             return id of s\n\
             end tell"
        ),
    };
    vec!["-e".to_string(), script]
}

/// `osascript -e SCRIPT` closing a session.
pub fn osascript_close(id: &str) -> Vec<String> {
    vec!["-e".to_string(), find_session(id, "close s")]
}

/// `osascript -e SCRIPT` selecting a session.
pub fn osascript_focus(id: &str) -> Vec<String> {
    vec!["-e".to_string(), find_session(id, "select s")]
}

/// The pane id: `iterm2:SESSION|PIDFILE`.
pub fn pane_id(session: &str, pid_file: &Path) -> PaneId {
    PaneId::new(format!("iterm2:{session}|{}", pid_file.display()))
}

/// Splits a pane id into (session, pid file).
pub fn parse_pane_id(pane: &PaneId) -> Result<(String, PathBuf)> {
    pane.as_str()
        .strip_prefix("iterm2:")
        .and_then(|rest| rest.split_once('|'))
        .map(|(s, p)| (s.to_string(), PathBuf::from(p)))
        .ok_or_else(|| BackendError::UnknownPane {
            backend: BackendKind::ITerm2,
            pane: pane.clone(),
        })
}

/// The iTerm2 backend.
#[derive(Debug)]
pub struct ITerm2Backend {
    driver: Driver,
    /// How long spawn waits for the pid record.
    pub start_timeout: Duration,
}

impl ITerm2Backend {
    pub fn new(driver: Driver) -> Self {
        Self {
            driver,
            start_timeout: Duration::from_secs(10),
        }
    }

    fn call(&self, args: Vec<String>) -> Invocation {
        match self.driver {
            Driver::It2 => Invocation::new("it2", args),
            Driver::AppleScript => Invocation::new("osascript", args),
        }
    }
}

#[async_trait::async_trait]
impl PaneBackendExecutor for ITerm2Backend {
    fn kind(&self) -> BackendKind {
        BackendKind::ITerm2
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            panes_outlive_lead: true,
            exact_env: true,
            ..Capabilities::default()
        }
    }

    fn pane_focus(&self) -> Option<&dyn PaneFocus> {
        Some(self)
    }

    /// iTerm2 session ids are UUIDs that iTerm2 never reuses, so the id
    /// itself proves the pane is the one swarm opened; the nonce is kept
    /// only in the ref.
    async fn spawn(&self, spec: &SpawnSpec) -> Result<PaneRef> {
        spec.validate()?;
        let pid_file = spec.pid_file.clone().ok_or_else(|| {
            BackendError::invalid("pid_file", "", "the iTerm2 backend needs a pid file")
        })?;
        let line = launch_line(spec, &pid_file)?;
        let target = match &spec.placement {
            Placement::RightOfLead { lead } => Some(lead.as_str().to_string()),
            _ => None,
        };
        let session = match self.driver {
            Driver::It2 => {
                let out = self.call(it2_split(target.as_deref(), true)).run().await?;
                let session = parse_session_id(&out.stdout)?;
                self.call(it2_run(&session, &line)).run().await?;
                session
            }
            Driver::AppleScript => {
                let out = self
                    .call(osascript_split(target.as_deref(), &line))
                    .run()
                    .await?;
                parse_session_id(&out.stdout)?
            }
        };
        pidfile::wait_pid(&pid_file, self.start_timeout).await?;
        Ok(PaneRef::new(
            pane_id(&session, &pid_file),
            spec.mark.nonce.clone(),
        ))
    }

    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        panes
            .iter()
            .map(|pane| {
                let (_, pid_file) = parse_pane_id(&pane.id)?;
                Ok((pane.id.clone(), status_from_record(&pid_file)))
            })
            .collect()
    }

    async fn kill(&self, pane: &PaneRef, grace: Duration) -> Result<()> {
        let pane = &pane.id;
        let (session, pid_file) = parse_pane_id(pane)?;
        if let Some(pid) = pidfile::read_pid(&pid_file)
            && process::process_group(pid) == Some(pid as i32)
        {
            process::terminate_group(pid as i32, grace, Duration::from_secs(2), || async {})
                .await
                .map_err(|reason| BackendError::KillFailed {
                    pane: pane.clone(),
                    reason,
                })?;
        }
        let close = match self.driver {
            Driver::It2 => it2_close(&session),
            Driver::AppleScript => osascript_close(&session),
        };
        // The session may already be closed by its profile when the process ended.
        let _ = self.call(close).output().await?;
        let _ = std::fs::remove_file(&pid_file);
        Ok(())
    }
}

#[async_trait::async_trait]
impl PaneFocus for ITerm2Backend {
    async fn focus(&self, pane: &PaneId) -> Result<()> {
        let (session, _) = parse_pane_id(pane)?;
        let args = match self.driver {
            Driver::It2 => it2_focus(&session),
            Driver::AppleScript => osascript_focus(&session),
        };
        self.call(args).run().await.map(drop)
    }
}

/// Status from a pid record: no record → Gone; a live pid → Running; a dead
/// one → Exited with no code (iTerm2 does not report it).
pub fn status_from_record(pid_file: &Path) -> PaneStatus {
    match pidfile::read_pid(pid_file) {
        None => PaneStatus::Gone,
        Some(pid) if process::process_alive(pid) => PaneStatus::Running { pid: Some(pid) },
        Some(_) => PaneStatus::Exited { code: None },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_every_shell_metacharacter() {
        assert_eq!(shell_quote("plain").unwrap(), "'plain'");
        assert_eq!(shell_quote("").unwrap(), "''");
        assert_eq!(shell_quote("it's").unwrap(), "'it'\\''s'");
        assert_eq!(shell_quote("a\\b").unwrap(), "'a'\\\\'b'");
        assert_eq!(shell_quote("$(x); `y` \"z\"").unwrap(), "'$(x); `y` \"z\"'");
        assert!(shell_quote("a\nb").is_err());
    }

    #[test]
    fn quoted_words_round_trip_through_sh() {
        let words = ["it's", "a\\b", "$(touch pwned)", "", ";", "ünï ✳", "'\\'"];
        let quoted: Vec<String> = words.iter().map(|w| shell_quote(w).unwrap()).collect();
        let script = format!("printf '%s\\n' {}", quoted.join(" "));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        let seen: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(seen, words);
    }

    #[test]
    fn the_launch_line_records_the_pid_and_clears_the_env() {
        let spec = SpawnSpec::new("agent", ["--name", "it's"], "/work dir").env("K", "v");
        let line = launch_line(&spec, Path::new("/run/a.pid")).unwrap();
        assert_eq!(
            line,
            format!(
                "exec /bin/sh -c {} sh '/work dir' '/run/a.pid' 'K=v' 'agent' '--name' 'it'\\''s'",
                shell_quote(LAUNCH_SCRIPT).unwrap()
            )
        );
    }

    #[test]
    fn the_launch_line_really_runs() {
        let dir = tempfile::tempdir().unwrap();
        let pid = dir.path().join("pid");
        let out = dir.path().join("out");
        let spec = SpawnSpec::new(
            "sh",
            ["-c", "env > \"$0\"; pwd >> \"$0\"", out.to_str().unwrap()],
            dir.path(),
        )
        .env("ONLY", "this one");
        let line = launch_line(&spec, &pid).unwrap();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(&line)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(pidfile::read_pid(&pid).is_some());
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("ONLY=this one"), "{text}");
        assert!(!text.contains("HOME="), "{text}");
        assert!(text.contains(&dir.path().canonicalize().unwrap().display().to_string()));
    }

    #[test]
    fn applescript_literals_are_escaped() {
        assert_eq!(applescript_string(r#"a "b" \c"#), r#""a \"b\" \\c""#);
        let argv = osascript_split(None, "exec 'x'");
        assert_eq!(argv[0], "-e");
        assert!(argv[1].contains(r#"split vertically with default profile command "exec 'x'""#));
        let close = osascript_close("w0t0p1:12345678-1234-1234-1234-123456789abc");
        assert!(close[1].contains(r#"if id of s is "12345678-1234-1234-1234-123456789abc" then"#));
        assert!(close[1].contains("close s"));
        assert!(osascript_focus("x")[1].contains("select s"));
    }

    #[test]
    fn it2_argv() {
        assert_eq!(
            it2_split(Some("w0t0p0:A"), true),
            ["session", "split", "-v", "-s", "w0t0p0:A"]
        );
        assert_eq!(it2_split(None, false), ["session", "split"]);
        assert_eq!(
            it2_run("S", "exec x"),
            ["session", "run", "-s", "S", "exec x"]
        );
        assert_eq!(it2_close("S"), ["session", "close", "-f", "-s", "S"]);
        assert_eq!(it2_focus("S"), ["session", "focus", "S"]);
    }

    #[test]
    fn parses_session_ids() {
        let uuid = "12345678-1234-1234-1234-123456789ABC";
        assert_eq!(
            parse_session_id(&format!("Created new pane: w0t0p1:{uuid}\n")).unwrap(),
            format!("w0t0p1:{uuid}")
        );
        assert_eq!(parse_session_id(&format!("{uuid}\n")).unwrap(), uuid);
        assert!(parse_session_id("error: no session").is_err());
    }

    #[test]
    fn pane_ids_carry_the_session_and_the_record() {
        let id = pane_id("w0t0p1:U", Path::new("/tmp/a|b.pid"));
        assert_eq!(id.as_str(), "iterm2:w0t0p1:U|/tmp/a|b.pid");
        let (s, p) = parse_pane_id(&id).unwrap();
        assert_eq!((s.as_str(), p), ("w0t0p1:U", PathBuf::from("/tmp/a|b.pid")));
        assert!(parse_pane_id(&PaneId::new("%1")).is_err());
    }

    #[test]
    fn status_follows_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("pid");
        assert_eq!(status_from_record(&rec), PaneStatus::Gone);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(&rec, child.id().to_string()).unwrap();
        assert_eq!(
            status_from_record(&rec),
            PaneStatus::Running {
                pid: Some(child.id())
            }
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(status_from_record(&rec), PaneStatus::Exited { code: None });
    }
}
