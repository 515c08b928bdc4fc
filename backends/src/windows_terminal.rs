//! The Windows Terminal backend, as far as this build goes: it cannot be
//! used. WT's CLI cannot list or close panes, so liveness and kill would
//! have to go through a pid record the pane's program writes, and nothing
//! this build starts in a WT pane writes one: [`spawn`] is refused
//! ([`UNAVAILABLE`]), [`kill`] refuses every pane (it never signals a pid
//! from a record it did not write), and `status` reads a pane id's pid
//! record (`wt:PIDFILE`) and asks `tasklist`.
//!
//! What stays for a build that wraps the launch, unit-tested (no Windows
//! here): the argv of `wt -w 0 split-pane -H|-V --title TITLE -d CWD --
//! PROGRAM ARGS` with WT's `;` escaped, `tasklist`'s argv and the parser of
//! its CSV, and `taskkill /T [/F]`'s argv. Its [`Capabilities`] are the
//! defaults but for panes outliving the lead: no exact environment (WT
//! passes its own), no exit codes; and it has no facet, not even focus
//! (`wt focus-pane -t` takes an index that shifts as panes close).
//!
//! [`spawn`]: PaneBackendExecutor::spawn
//! [`kill`]: PaneBackendExecutor::kill

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::command::Invocation;
use crate::error::{BackendError, Result};
use crate::{
    BackendKind, Capabilities, PaneBackendExecutor, PaneId, PaneRef, PaneStatus, Placement,
    SpawnSpec, pidfile,
};

/// Escapes one argument for `wt`: WT splits its command line into
/// subcommands at `;` anywhere, so every `;` is written `\;`. Control
/// characters are refused.
pub fn wt_arg(arg: &str) -> Result<String> {
    if let Some(c) = arg.chars().find(|c| c.is_control() && *c != '\t') {
        return Err(BackendError::invalid(
            "Windows Terminal argument",
            arg,
            format!("contains the control character {c:?}"),
        ));
    }
    Ok(arg.replace(';', "\\;"))
}

/// `wt -w 0 split-pane -H|-V --title TITLE -d CWD -- PROGRAM ARGS`
/// (`-V`: side by side, for the right-of-lead column; `-H` otherwise).
pub fn split_pane(spec: &SpawnSpec) -> Result<Vec<String>> {
    let orientation = match spec.placement {
        Placement::RightOfLead { .. } => "-V",
        _ => "-H",
    };
    let mut argv = vec![
        "-w".to_string(),
        "0".to_string(),
        "split-pane".to_string(),
        orientation.to_string(),
        "--title".to_string(),
        wt_arg(&spec.title)?,
        "-d".to_string(),
        wt_arg(&spec.cwd.to_string_lossy())?,
        "--".to_string(),
        wt_arg(&spec.program)?,
    ];
    for a in &spec.args {
        argv.push(wt_arg(a)?);
    }
    Ok(argv)
}

/// `tasklist /FI "PID eq N" /FO CSV /NH`.
pub fn tasklist(pid: u32) -> Vec<String> {
    vec![
        "/FI".to_string(),
        format!("PID eq {pid}"),
        "/FO".to_string(),
        "CSV".to_string(),
        "/NH".to_string(),
    ]
}

/// Parses `tasklist /FO CSV /NH` output: true when a row names `pid`.
pub fn parse_tasklist(output: &str, pid: u32) -> bool {
    let want = format!("\"{pid}\"");
    output
        .lines()
        .filter(|l| l.starts_with('"'))
        .any(|l| l.split(',').nth(1) == Some(want.as_str()))
}

/// `taskkill /PID N /T [/F]`: the polite step asks the process tree to close;
/// `/F` forces it.
pub fn taskkill(pid: u32, force: bool) -> Vec<String> {
    let mut argv = vec!["/PID".to_string(), pid.to_string(), "/T".to_string()];
    if force {
        argv.push("/F".to_string());
    }
    argv
}

/// The pane id: `wt:PIDFILE`.
pub fn pane_id(pid_file: &Path) -> PaneId {
    PaneId::new(format!("wt:{}", pid_file.display()))
}

/// The pid file of a pane id.
pub fn parse_pane_id(pane: &PaneId) -> Result<PathBuf> {
    pane.as_str()
        .strip_prefix("wt:")
        .map(PathBuf::from)
        .ok_or_else(|| BackendError::UnknownPane {
            backend: BackendKind::WindowsTerminal,
            pane: pane.clone(),
        })
}

/// The Windows Terminal backend.
#[derive(Debug)]
pub struct WindowsTerminalBackend {
    /// How long spawn waits for the pid record.
    pub start_timeout: Duration,
}

impl Default for WindowsTerminalBackend {
    fn default() -> Self {
        Self {
            start_timeout: Duration::from_secs(10),
        }
    }
}

impl WindowsTerminalBackend {
    pub fn new() -> Self {
        Self::default()
    }

    async fn alive(&self, pid: u32) -> Result<bool> {
        let out = Invocation::new("tasklist", tasklist(pid)).run().await?;
        Ok(parse_tasklist(&out.stdout, pid))
    }
}

#[async_trait::async_trait]
impl PaneBackendExecutor for WindowsTerminalBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::WindowsTerminal
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            panes_outlive_lead: true,
            ..Capabilities::default()
        }
    }

    /// Refused at once: nothing in a pane started by `wt` writes the pid
    /// record that liveness and kill depend on (the WT CLI cannot list or
    /// close panes), and this build does not run on Windows. The argv
    /// builders above stay, unit-tested, for a build that wraps the launch.
    async fn spawn(&self, _spec: &SpawnSpec) -> Result<PaneRef> {
        Err(BackendError::Unavailable {
            backend: BackendKind::WindowsTerminal,
            reason: UNAVAILABLE.to_string(),
        })
    }

    async fn status(&self, panes: &[PaneRef]) -> Result<Vec<(PaneId, PaneStatus)>> {
        let mut out = Vec::new();
        for pane in panes {
            let status = match pidfile::read_pid(&parse_pane_id(&pane.id)?) {
                None => PaneStatus::Gone,
                Some(pid) if self.alive(pid).await? => PaneStatus::Running { pid: Some(pid) },
                Some(_) => PaneStatus::Exited { code: None },
            };
            out.push((pane.id.clone(), status));
        }
        Ok(out)
    }

    async fn kill(&self, pane: &PaneRef, _grace: Duration) -> Result<()> {
        // Nothing this build spawned can be here; never signal a pid from
        // a record it did not write.
        Err(BackendError::NotOurs {
            pane: pane.id.clone(),
        })
    }
}

/// Why the Windows Terminal backend cannot be used by this build.
pub const UNAVAILABLE: &str = "this build cannot drive Windows Terminal (its CLI cannot list or close \
     panes, and nothing would record a pane's pid); run swarm with tmux, e.g. inside WSL";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_pane_argv_is_exact() {
        let spec = SpawnSpec::new("swarm.exe", ["teammate", "a;b", "x;"], r"C:\work dir")
            .title("alice; bob")
            .placement(Placement::RightOfLead {
                lead: PaneId::new("wt:lead"),
            });
        assert_eq!(
            split_pane(&spec).unwrap(),
            [
                "-w",
                "0",
                "split-pane",
                "-V",
                "--title",
                "alice\\; bob",
                "-d",
                r"C:\work dir",
                "--",
                "swarm.exe",
                "teammate",
                "a\\;b",
                "x\\;"
            ]
        );
        let other = SpawnSpec::new("p", Vec::<String>::new(), "C:\\");
        assert_eq!(split_pane(&other).unwrap()[3], "-H");
        assert!(wt_arg("a\nb").is_err());
    }

    #[test]
    fn kill_and_liveness_argv() {
        assert_eq!(taskkill(42, false), ["/PID", "42", "/T"]);
        assert_eq!(taskkill(42, true), ["/PID", "42", "/T", "/F"]);
        assert_eq!(tasklist(42), ["/FI", "PID eq 42", "/FO", "CSV", "/NH"]);
    }

    #[test]
    fn parses_tasklist_output() {
        let found = "\"swarm.exe\",\"4242\",\"Console\",\"1\",\"12,345 K\"\r\n";
        assert!(parse_tasklist(found, 4242));
        assert!(!parse_tasklist(found, 424));
        let none = "INFO: No tasks are running which match the specified criteria.\r\n";
        assert!(!parse_tasklist(none, 4242));
    }

    #[test]
    fn pane_ids_name_the_record() {
        let id = pane_id(Path::new(r"C:\swarm\alice.pid"));
        assert_eq!(id.as_str(), r"wt:C:\swarm\alice.pid");
        assert_eq!(
            parse_pane_id(&id).unwrap(),
            PathBuf::from(r"C:\swarm\alice.pid")
        );
        assert!(parse_pane_id(&PaneId::new("%3")).is_err());
    }
}
