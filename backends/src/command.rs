//! Running an external program (tmux, `it2`, `osascript`, `wt`, `tasklist`)
//! as argv, never through a shell, with a timeout on every call. A failure
//! keeps the program, its argv and its stderr in the error.

use std::process::Stdio;
use std::time::Duration;

use crate::error::{BackendError, Result};

/// The default timeout for one call of a multiplexer CLI.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// One external program call: program, argv, environment edits and timeout.
#[derive(Clone, Debug)]
pub struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    /// Variables removed from the inherited environment of the call.
    pub env_remove: Vec<String>,
    pub timeout: Duration,
}

/// What a finished program printed and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
}

impl Output {
    /// True when the program exited with status 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl Invocation {
    /// A call of `program` with `args` and the default timeout.
    pub fn new(program: impl Into<String>, args: Vec<String>) -> Self {
        Self {
            program: program.into(),
            args,
            env_remove: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Runs the program and returns its output whatever its exit status.
    pub async fn output(&self) -> Result<Output> {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for key in &self.env_remove {
            cmd.env_remove(key);
        }
        let child = cmd.spawn().map_err(|source| BackendError::Launch {
            program: self.program.clone(),
            argv: self.args.clone(),
            source,
        })?;
        match tokio::time::timeout(self.timeout, child.wait_with_output()).await {
            Err(_) => Err(BackendError::Timeout {
                program: self.program.clone(),
                argv: self.args.clone(),
                after: self.timeout,
            }),
            Ok(Err(source)) => Err(BackendError::Launch {
                program: self.program.clone(),
                argv: self.args.clone(),
                source,
            }),
            Ok(Ok(out)) => Ok(Output {
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
                code: out.status.code(),
            }),
        }
    }

    /// Runs the program; a non-zero exit is an error carrying stderr.
    pub async fn run(&self) -> Result<Output> {
        let out = self.output().await?;
        if out.success() {
            Ok(out)
        } else {
            Err(self.failed(&out))
        }
    }

    /// The error describing a failed run of this invocation.
    pub fn failed(&self, out: &Output) -> BackendError {
        BackendError::CommandFailed {
            program: self.program.clone(),
            argv: self.args.clone(),
            status: match out.code {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_string(),
            },
            stderr: out.stderr.trim().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_failure_keeps_argv_and_stderr() {
        let inv = Invocation::new("sh", vec!["-c".into(), "echo oops >&2; exit 3".into()]);
        let err = inv.run().await.unwrap_err().to_string();
        assert!(err.contains("exit code 3"), "{err}");
        assert!(err.contains("oops"), "{err}");
        assert!(err.contains("echo oops"), "{err}");
    }

    #[tokio::test]
    async fn a_slow_program_times_out() {
        let mut inv = Invocation::new("sleep", vec!["5".into()]);
        inv.timeout = Duration::from_millis(100);
        let err = inv.run().await.unwrap_err();
        assert!(matches!(err, BackendError::Timeout { .. }), "{err}");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_launch_error() {
        let inv = Invocation::new("/nonexistent/swarm-no-such-tool", vec![]);
        assert!(matches!(inv.run().await, Err(BackendError::Launch { .. })));
    }
}
