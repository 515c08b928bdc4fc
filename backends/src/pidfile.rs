//! Pid records for backends that cannot list their panes (iTerm2, Windows
//! Terminal): the pane's process (or the wrapper that execs it) writes its
//! pid to a file the caller names, and status and kill go through it.

use std::path::Path;
use std::time::Duration;

use crate::error::{BackendError, Result};

/// Parses a pid file's text: one positive decimal pid, whitespace around.
pub fn parse_pid(text: &str) -> Option<u32> {
    text.trim().parse::<u32>().ok().filter(|p| *p > 1)
}

/// Reads a pid file; `None` when it does not exist (yet) or is not a pid.
pub fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path)
        .ok()
        .as_deref()
        .and_then(parse_pid)
}

/// Waits up to `within` for the pid file to hold a pid.
pub async fn wait_pid(path: &Path, within: Duration) -> Result<u32> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(pid) = read_pid(path) {
            return Ok(pid);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(BackendError::Spawn {
                program: path.display().to_string(),
                reason: format!("no pid was written to {} within {within:?}", path.display()),
            });
        }
        tokio::time::sleep(crate::process::POLL).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pids() {
        assert_eq!(parse_pid("1234\n"), Some(1234));
        assert_eq!(parse_pid(" 77 "), Some(77));
        assert_eq!(parse_pid(""), None);
        assert_eq!(parse_pid("1"), None);
        assert_eq!(parse_pid("-5"), None);
        assert_eq!(parse_pid("12x"), None);
    }

    #[tokio::test]
    async fn waits_for_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pid");
        assert!(wait_pid(&path, Duration::from_millis(50)).await.is_err());
        std::fs::write(&path, "4242\n").unwrap();
        assert_eq!(wait_pid(&path, Duration::from_secs(1)).await.unwrap(), 4242);
    }
}
