//! The terminal guard: raw mode and the alternate screen for as long as a
//! [`TerminalGuard`] lives, and the terminal restored whatever way the TUI
//! ends: on drop, on panic (a hook that restores, logs the panic, then
//! chains to the previous hook) and on SIGTERM, SIGHUP or SIGINT (a flag the
//! event loop checks, so it leaves through the same drop).

use std::io::{self, Stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{Context, Result};
use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// The signal that asked the TUI to end, 0 when none did.
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

/// A guard holds the terminal: the panic hook restores it only then.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The signals that end the TUI.
const SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// Raw mode + alternate screen + hidden cursor, restored on drop.
pub struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl TerminalGuard {
    /// Takes over the terminal. Installs the restoring panic hook (once per
    /// process) and the signal flags (until drop).
    pub fn enter() -> Result<TerminalGuard> {
        install_panic_hook();
        SIGNALLED.store(0, Ordering::SeqCst);
        let previous = install_signal_flags().context("install SIGTERM/SIGHUP handlers")?;
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = (|| -> Result<Terminal<CrosstermBackend<Stdout>>> {
            enable_raw_mode().context("enter raw mode")?;
            execute!(io::stdout(), EnterAlternateScreen, Hide)
                .context("enter the alternate screen")?;
            Terminal::new(CrosstermBackend::new(io::stdout())).context("set up the terminal")
        })();
        match setup {
            Ok(terminal) => Ok(TerminalGuard { terminal, previous }),
            Err(e) => {
                restore();
                restore_signals(&previous);
                Err(e)
            }
        }
    }

    /// The ratatui terminal to draw on.
    pub fn terminal(&mut self) -> &mut Terminal<CrosstermBackend<Stdout>> {
        &mut self.terminal
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        restore_signals(&self.previous);
    }
}

fn restore_signals(previous: &[(libc::c_int, libc::sigaction)]) {
    for (sig, old) in previous {
        // SAFETY: restoring a disposition sigaction gave us for `sig`.
        unsafe {
            libc::sigaction(*sig, old, std::ptr::null_mut());
        }
    }
}

/// Leaves the alternate screen, shows the cursor, leaves raw mode. Safe to
/// call more than once and when the terminal was never taken over.
pub fn restore() {
    ACTIVE.store(false, Ordering::SeqCst);
    let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
    let _ = disable_raw_mode();
}

/// The signal (SIGTERM, SIGHUP, SIGINT) received since the guard was
/// entered, if any.
pub fn termination_signal() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Only while a guard holds the terminal: a later panic elsewhere
            // in the lead must not write escape codes to a normal screen.
            if ACTIVE.load(Ordering::SeqCst) {
                restore();
            }
            tracing::error!("panic in the TUI: {info}");
            previous(info);
        }));
    });
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    SIGNALLED.store(sig, Ordering::SeqCst);
}

fn install_signal_flags() -> io::Result<Vec<(libc::c_int, libc::sigaction)>> {
    let mut previous = Vec::with_capacity(SIGNALS.len());
    for sig in SIGNALS {
        // SAFETY: an all-zero sigaction is a valid value to fill in; the
        // handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &action, &mut old) != 0 {
                return Err(io::Error::last_os_error());
            }
            previous.push((sig, old));
        }
    }
    Ok(previous)
}

/// Tests that raise a signal or run the loop (which reads the flag) take
/// this, so a raised signal never ends another test's loop.
#[cfg(test)]
pub(crate) static SIGNAL_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_flag_the_loop_checks() {
        let _serial = SIGNAL_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // Handlers only; the terminal is not touched (tests have no tty).
        let previous = install_signal_flags().unwrap();
        assert_eq!(termination_signal(), None);
        // SAFETY: raising a signal whose handler we just installed.
        unsafe {
            libc::raise(libc::SIGHUP);
        }
        assert_eq!(termination_signal(), Some(libc::SIGHUP));
        SIGNALLED.store(0, Ordering::SeqCst);
        restore_signals(&previous);
    }
}
