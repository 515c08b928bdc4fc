//! Logging through `tracing`, filtered by `SWARM_LOG` (then `RUST_LOG`).
//!
//! Short-lived commands log to stderr, and only when a filter is set: the
//! problems a user must see are reported by the commands themselves, once.
//! Long-running processes (the lead, teammate runtimes) log to their own file
//! under the team's state, never to a terminal a TUI draws on.
//!
//! # The filter
//!
//! A comma-separated list of directives, each one of
//!
//! - `LEVEL`: the level for every target, e.g. `info` or `debug`;
//! - `TARGET=LEVEL`: the level for a target, e.g. `swarm=debug,swarm_backends=trace`
//!   or `info,swarm::teammate=debug`;
//! - `TARGET`: every level for that target.
//!
//! `LEVEL` is `off`, `error`, `warn`, `info`, `debug` or `trace` (any case),
//! or `0` (off) to `5` (trace). A target is a prefix of a module path, so
//! `swarm` also covers `swarm::lead` and `swarm_backends`; where several
//! match, the longest wins. Blank directives are skipped; a filter of none
//! at all (`SWARM_LOG=`) logs nothing. This is `EnvFilter`'s syntax without its span
//! and field directives (`[span]`, `{field=value}`), which need the regex
//! engine this build leaves out: `tracing_subscriber::filter::Targets` reads
//! it. A filter that does not parse is ignored (stderr: no logs; the log
//! files: `info`).

use crate::dropped::ignore;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The filter `SWARM_LOG` (then `RUST_LOG`) sets, if either is set and
/// parses.
fn filter() -> Option<Targets> {
    let spec = std::env::var("SWARM_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .ok()?;
    parse_filter(&spec)
}

/// `spec` read as described in the [module docs](self).
fn parse_filter(spec: &str) -> Option<Targets> {
    let directives: Vec<&str> = spec
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect();
    if directives.is_empty() {
        // `"".parse::<Targets>()` would enable every target at every level.
        return Some(Targets::new());
    }
    directives.join(",").parse().ok()
}

/// Logs to stderr when `SWARM_LOG`/`RUST_LOG` is set; otherwise not at all.
pub fn init_stderr() {
    if let Some(f) = filter() {
        let init = tracing_subscriber::fmt()
            // Everything reaches the `Targets` layer, which decides.
            .with_max_level(LevelFilter::TRACE)
            .with_writer(std::io::stderr)
            .finish()
            .with(f)
            .try_init();
        // Only a second init fails (tests; a command that runs another):
        // the first subscriber stays.
        ignore(init, "setting up stderr logging");
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
    let filter = filter().unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    let init = tracing_subscriber::fmt()
        .with_max_level(LevelFilter::TRACE)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(f))
        .finish()
        .with(filter)
        .try_init();
    ignore(
        init,
        "setting up file logging (a subscriber is already set)",
    );
    Ok(())
}

/// Installs, once per process, the panic hook every swarm process has: the
/// panic (its message, where, the thread) goes to the process's log through
/// `tracing` (a runtime's `teammate-<name>.log`, the lead's `lead.log`, a
/// command's stderr when `SWARM_LOG` is set), then the hook installed
/// before it runs (Rust's default, which prints to stderr). The TUI's own
/// hook, installed later, restores the terminal first and then chains to
/// this one.
pub fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current();
            tracing::error!(thread = thread.name().unwrap_or("unnamed"), "panic: {info}");
            previous(info);
        }));
    });
}

/// A place a test can make this process panic: with the `fault-injection`
/// feature (test builds only), `SWARM_FAULT=panic:<marker file>` panics the
/// first process (whoever creates the marker) that reaches one, naming
/// `at`. Without the feature it does nothing.
pub fn fault_point(at: &str) {
    #[cfg(feature = "fault-injection")]
    if let Some(spec) = std::env::var_os("SWARM_FAULT")
        && let Some(marker) = spec.to_string_lossy().strip_prefix("panic:")
        && crate::atomic_file::create_new(std::path::Path::new(marker), b"").unwrap_or(false)
    {
        panic!("injected panic (SWARM_FAULT) at {at}");
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = at;
}

/// A door a test holds shut: with the `fault-injection` feature (test
/// builds only), the environment variable `var` naming a file makes this
/// process wait here until that file exists (a minute at most), to hold a
/// window open for as long as the test needs it. Without the feature it
/// does nothing.
pub fn fault_gate(var: &str) {
    #[cfg(feature = "fault-injection")]
    if let Some(door) = std::env::var_os(var) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !std::path::Path::new(&door).exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = var;
}

/// A wait a test can stretch: with the `fault-injection` feature (test
/// builds only), the environment variable `var` holding N makes this
/// process sleep N ms here, to hold a race's window open. Without the
/// feature it does nothing.
pub fn fault_delay(var: &str) {
    #[cfg(feature = "fault-injection")]
    if let Some(ms) = std::env::var_os(var).and_then(|ms| {
        ignore(
            ms.to_string_lossy().parse::<u64>(),
            "reading a fault-injection delay (none applies)",
        )
    }) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    #[cfg(not(feature = "fault-injection"))]
    let _ = var;
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn enables(spec: &str, target: &str, level: Level) -> bool {
        parse_filter(spec)
            .unwrap_or_else(|| panic!("{spec:?} does not parse"))
            .would_enable(target, &level)
    }

    #[test]
    fn a_bare_level_applies_to_every_target() {
        assert!(enables("info", "swarm::lead", Level::INFO));
        assert!(!enables("info", "swarm::lead", Level::DEBUG));
        assert!(enables("DEBUG", "tokio", Level::DEBUG));
        assert!(!enables("off", "swarm", Level::ERROR));
    }

    #[test]
    fn targets_are_module_path_prefixes_and_the_longest_wins() {
        let spec = "swarm=debug,swarm_backends=trace";
        assert!(enables(spec, "swarm::teammate", Level::DEBUG));
        assert!(!enables(spec, "swarm::teammate", Level::TRACE));
        assert!(enables(spec, "swarm_backends::tmux", Level::TRACE));
        assert!(!enables(spec, "tokio", Level::ERROR), "no default: off");
        let spec = "info,swarm::teammate=debug";
        assert!(enables(spec, "swarm::teammate::run", Level::DEBUG));
        assert!(!enables(spec, "swarm::lead", Level::DEBUG));
        assert!(enables(spec, "swarm::lead", Level::INFO));
    }

    #[test]
    fn blanks_are_skipped_and_an_empty_filter_logs_nothing() {
        assert!(enables(" info , ", "swarm", Level::INFO));
        assert!(!enables("", "swarm", Level::ERROR));
        assert!(!enables(" , ", "swarm", Level::ERROR));
    }

    #[test]
    fn a_malformed_filter_is_refused() {
        assert!(parse_filter("swarm=loud").is_none());
        assert!(parse_filter("a=b=c").is_none());
    }
}
