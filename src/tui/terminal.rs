//! The terminal guard: raw mode and the alternate screen for as long as a
//! [`TerminalGuard`] lives, and the terminal restored whatever way the TUI
//! ends: on drop, on panic (a hook that restores, logs the panic, then
//! chains to the previous hook) and on SIGTERM, SIGHUP or SIGINT (a flag the
//! event loop checks, so it leaves through the same drop). The handler also
//! writes the signal's number to a pipe, whose read end
//! ([`TerminalGuard::take_signal_pipe`]) lets a thread sleep in `poll(2)`
//! instead of checking the flag on a timer.

use std::io::{self, Stdout};
use std::os::fd::{FromRawFd, OwnedFd};
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

/// The write end of the signal pipe, -1 when no guard lives.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// A guard holds the terminal: the panic hook restores it only then.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The signals that end the TUI.
const SIGNALS: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT];

/// Raw mode + alternate screen + hidden cursor, restored on drop.
pub struct TerminalGuard {
    /// `None` only while dropping.
    terminal: Option<Terminal<CrosstermBackend<Stdout>>>,
    previous: Vec<(libc::c_int, libc::sigaction)>,
    signals: SignalPipe,
}

/// The pipe the signal handler writes to. Dropping `write` (with the
/// guard) hangs up the read end, which ends a thread polling it.
struct SignalPipe {
    read: Option<OwnedFd>,
    /// Only held: the handler writes through [`SIGNAL_PIPE`].
    _write: OwnedFd,
}

impl TerminalGuard {
    /// Takes over the terminal. Installs the restoring panic hook (once per
    /// process) and the signal flags (until drop).
    pub fn enter() -> Result<TerminalGuard> {
        install_panic_hook();
        SIGNALLED.store(0, Ordering::SeqCst);
        let signals = signal_pipe().context("create the signal pipe")?;
        let previous = install_signal_flags().context("install SIGTERM/SIGHUP handlers")?;
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
                previous,
                signals,
            }),
            Err(e) => {
                restore();
                restore_signals(&previous);
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
    /// SIGHUP or SIGINT arrived (one byte, the signal's number); hung up
    /// once the guard is dropped.
    pub fn take_signal_pipe(&mut self) -> Option<OwnedFd> {
        self.signals.read.take()
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
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
        restore_signals(&self.previous);
        // The handlers are gone: the write end can close (hanging up the
        // read end) without a handler writing to a reused descriptor.
        // (`self.signals` drops after this.)
        SIGNAL_PIPE.store(-1, Ordering::SeqCst);
    }
}

/// A pipe whose write end the signal handler uses (non-blocking: a full
/// pipe drops the byte, the flag still holds the signal).
fn signal_pipe() -> io::Result<SignalPipe> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe fills the two-element array it is given.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here only.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for (fd, flags) in [(fds[0], 0), (fds[1], libc::O_NONBLOCK)] {
        // SAFETY: fcntl on descriptors owned above.
        let ok = unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == 0
                && libc::fcntl(fd, libc::F_SETFL, flags) == 0
        };
        if !ok {
            return Err(io::Error::last_os_error());
        }
    }
    SIGNAL_PIPE.store(fds[1], Ordering::SeqCst);
    Ok(SignalPipe {
        read: Some(read),
        _write: write,
    })
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
    // An atomic store and a write(2): both async-signal-safe. errno is
    // kept for the code the signal interrupted.
    SIGNALLED.store(sig, Ordering::SeqCst);
    let fd = SIGNAL_PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        let errno = io::Error::last_os_error().raw_os_error();
        let byte = sig as u8;
        // SAFETY: one byte from a live local to a pipe we own.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
        if let Some(e) = errno {
            set_errno(e);
        }
    }
}

#[cfg(target_os = "linux")]
fn set_errno(e: libc::c_int) {
    // SAFETY: the calling thread's errno location.
    unsafe { *libc::__errno_location() = e };
}

#[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
fn set_errno(e: libc::c_int) {
    // SAFETY: the calling thread's errno location.
    unsafe { *libc::__error() = e };
}

#[cfg(not(any(
    target_os = "linux",
    target_os = "macos",
    target_os = "ios",
    target_os = "freebsd"
)))]
fn set_errno(_: libc::c_int) {}

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
    fn a_signal_sets_the_flag_and_writes_its_number_to_the_pipe() {
        use std::io::Read;
        let _serial = SIGNAL_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // Handlers and the pipe only; the terminal is not touched (tests
        // have no tty).
        let mut pipe = signal_pipe().unwrap();
        let previous = install_signal_flags().unwrap();
        assert_eq!(termination_signal(), None);
        // SAFETY: raising a signal whose handler we just installed.
        unsafe {
            libc::raise(libc::SIGHUP);
        }
        assert_eq!(termination_signal(), Some(libc::SIGHUP));
        SIGNALLED.store(0, Ordering::SeqCst);
        restore_signals(&previous);
        SIGNAL_PIPE.store(-1, Ordering::SeqCst);
        let mut read = std::fs::File::from(pipe.read.take().unwrap());
        drop(pipe); // the write end: read_to_end then ends
        let mut got = Vec::new();
        read.read_to_end(&mut got).unwrap();
        assert_eq!(got, [libc::SIGHUP as u8]);
    }
}
