//! Logging through `tracing`, filtered by `SWARM_LOG` (then `RUST_LOG`).
//!
//! Short-lived commands log to stderr, and only when a filter is set: the
//! problems a user must see are reported by the commands themselves, once.
//! Long-running processes (the lead, teammate runtimes) log to their own file
//! under the team's state, never to a terminal a TUI draws on.

use tracing_subscriber::EnvFilter;

fn filter() -> Option<EnvFilter> {
    let spec = std::env::var("SWARM_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()?;
    EnvFilter::try_new(spec).ok()
}

/// Logs to stderr when `SWARM_LOG`/`RUST_LOG` is set; otherwise not at all.
pub fn init_stderr() {
    if let Some(f) = filter() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(f)
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// Logs to `file` (appending, 0600), at `info` unless a filter is set.
pub fn init_file(file: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = file.parent() {
        crate::atomic_file::ensure_dir(dir)?;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    let filter = filter().unwrap_or_else(|| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(f))
        .try_init();
    Ok(())
}
