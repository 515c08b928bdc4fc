//! The terminal guard: raw mode and the alternate screen for as long as a
//! [`TerminalGuard`] lives, and the terminal restored whatever way the TUI
//! ends: on drop, on panic (a hook that restores, logs the panic, then
//! chains to the previous hook) and on SIGTERM, SIGHUP or SIGINT.
//!
//! The signals go through signal-hook. While a guard lives each of them
//! stores its number in a flag the event loop checks (so it leaves through
//! the same drop) and writes a byte to a pipe, whose read end
//! ([`TerminalGuard::take_signal_pipe`]) lets a thread sleep in `poll(2)`
//! instead of checking the flag on a timer. signal-hook's registry is the
//! one tokio's `signal()` uses too (the lead's supervisor listens for
//! SIGTERM there): each registration adds an action to the process's one
//! handler, none replaces another's. Once a guard has been entered, the
//! three signals outside a guard take their default action (ending the
//! process): signal-hook's handler stays installed for the life of the
//! process and runs no default of its own, so an action does
//! (`install_default_actions`).

use std::io::{self, PipeReader, Stdout};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Once};

use anyhow::{Context, Result};
use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use signal_hook::SigId;

/// The signal that asked the TUI to end, 0 when none did.
static SIGNALLED: LazyLock<Arc<AtomicUsize>> = LazyLock::new(Arc::default);

/// No guard watches the signals: they take their default action.
static UNWATCHED: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(true)));

/// A guard holds the terminal: the panic hook restores it only then.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The signals that end the TUI.
const SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// Raw mode + alternate screen + hidden cursor, restored on drop.
pub struct TerminalGuard {
    /// `None` only while dropping.
    terminal: Option<Terminal<CrosstermBackend<Stdout>>>,
    /// Dropped after [`TerminalGuard::drop`] has restored the terminal.
    signals: SignalWatch,
}

impl TerminalGuard {
    /// Takes over the terminal. Installs the restoring panic hook (once per
    /// process) and the signal actions (until drop).
    pub fn enter() -> Result<TerminalGuard> {
        install_panic_hook();
        let signals = SignalWatch::register().context("install SIGTERM/SIGHUP/SIGINT actions")?;
        ACTIVE.store(true, Ordering::SeqCst);
        let setup = (|| -> Result<Terminal<CrosstermBackend<Stdout>>> {
            enable_raw_mode().context("enter raw mode")?;
            execute!(io::stdout(), EnterAlternateScreen, Hide)
                .context("enter the alternate screen")?;
            Terminal::new(CrosstermBackend::new(io::stdout())).context("set up the terminal")
        })();
        match setup {
            Ok(terminal) => Ok(TerminalGuard {
                terminal: Some(terminal),
                signals,
            }),
            Err(e) => {
                restore();
                drop(signals);
                Err(e)
            }
        }
    }

    /// The ratatui terminal to draw on.
    pub fn terminal(&mut self) -> &mut Terminal<CrosstermBackend<Stdout>> {
        self.terminal
            .as_mut()
            .expect("the terminal is held until the guard drops")
    }

    /// The read end of the signal pipe (once): readable when SIGTERM,
    /// SIGHUP or SIGINT arrived (a byte; the number is in
    /// [`termination_signal`]), hung up once the guard is dropped.
    pub fn take_signal_pipe(&mut self) -> Option<PipeReader> {
        self.signals.read.take()
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        // The terminal first: a signal from here on takes its default
        // action, which must find the terminal as the user had it.
        restore();
        // ratatui's Terminal shows the cursor when dropped and reports a
        // failure with `eprintln!`, which panics when the terminal has gone
        // away (a killed tmux server): with no terminal to restore, it is
        // let go of without its drop.
        if let Some(mut terminal) = self.terminal.take()
            && terminal.show_cursor().is_err()
        {
            std::mem::forget(terminal);
        }
    }
}

/// The guard's signal actions: for each signal a flag store, then a write
/// to the pipe. Dropping it removes them; each pipe action owns a write
/// end, so the read end then hangs up, which ends a thread polling it.
struct SignalWatch {
    actions: Vec<SigId>,
    read: Option<PipeReader>,
}

impl SignalWatch {
    fn register() -> io::Result<SignalWatch> {
        install_default_actions()?;
        SIGNALLED.store(0, Ordering::SeqCst);
        let (read, write) = io::pipe()?;
        // Removes whatever was registered if a later registration fails.
        let mut watch = SignalWatch {
            actions: Vec::with_capacity(2 * SIGNALS.len()),
            read: Some(read),
        };
        for sig in SIGNALS {
            let number = usize::try_from(sig).expect("signal numbers are positive");
            // A signal's actions run in the order they were registered: the
            // number is stored before the byte wakes the watch thread.
            let flag = signal_hook::flag::register_usize(sig, Arc::clone(&SIGNALLED), number)?;
            watch.actions.push(flag);
            // The pipe action makes its end non-blocking: a full pipe drops
            // the byte, and the flag still holds the signal.
            let wake = signal_hook::low_level::pipe::register(sig, write.try_clone()?)?;
            watch.actions.push(wake);
        }
        UNWATCHED.store(false, Ordering::SeqCst);
        Ok(watch)
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        // Default actions first, so no signal falls between the two.
        UNWATCHED.store(true, Ordering::SeqCst);
        for id in self.actions.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Once per process, for each signal, an action that runs its default
/// (ending the process) while no guard watches. signal-hook's handler, once
/// installed, stays for the life of the process and does not run the
/// default itself: without these, SIGHUP and SIGINT would be ignored after
/// the TUI has ended.
fn install_default_actions() -> io::Result<()> {
    static INSTALLED: std::sync::OnceLock<io::Result<()>> = std::sync::OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        for sig in SIGNALS {
            signal_hook::flag::register_conditional_default(sig, Arc::clone(&UNWATCHED))?;
        }
        Ok(())
    });
    match installed {
        Ok(()) => Ok(()),
        Err(e) => Err(io::Error::new(e.kind(), e.to_string())),
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
        sig => i32::try_from(sig).ok(),
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

/// Tests that raise a signal or run the loop (which reads the flag) take
/// this, so a raised signal never ends another test's loop.
#[cfg(test)]
pub(crate) static SIGNAL_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_flag_and_writes_to_the_pipe_which_hangs_up_after() {
        use std::io::Read;
        let _serial = SIGNAL_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // The signal actions only; the terminal is not touched (tests have
        // no tty).
        let mut watch = SignalWatch::register().unwrap();
        assert_eq!(termination_signal(), None);
        signal_hook::low_level::raise(libc::SIGHUP).unwrap();
        assert_eq!(termination_signal(), Some(libc::SIGHUP));
        SIGNALLED.store(0, Ordering::SeqCst);
        let mut read = watch.read.take().unwrap();
        drop(watch); // the actions and their write ends: read_to_end ends
        let mut got = Vec::new();
        read.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 1, "one byte for one signal: {got:?}");
    }
}
