//! Exits of pane processes as events, for backends whose panes are not
//! this process's children (tmux: the server forks them): a pidfd per
//! process (`pidfd_open(2)`, Linux 5.3 and later), which becomes readable
//! when the process exits, waited on by a small thread of its own, as the
//! in-process backend waits on its children. Nothing is polled.
//!
//! [`ExitWatch`] is told the pids a listing found running
//! ([`ExitWatch::note`]) and arms them only once someone listens
//! ([`ExitWatch::changes`]): a command that lists the panes once opens no
//! pidfd and starts no thread; the lead, which listens, watches every pane
//! it has looked at since.
//!
//! What an exit event cannot cover is the caller's slow safety check
//! (the lead's `SAFETY_TICK`): a pane whose pid ended and was reused
//! between the listing and the `pidfd_open` (the pidfd then watches the
//! newcomer), a pane that outlives its process in a way no process exit
//! shows (a tmux server restarted, a pane closed while its process ignores
//! SIGHUP), and a pane the caller never looked at.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// True when this kernel gives out pidfds (Linux 5.3 and later), checked
/// once per process on its own pid.
pub fn available() -> bool {
    static AVAILABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AVAILABLE.get_or_init(|| match imp::open(std::process::id()) {
        Ok(fd) => {
            drop(fd);
            true
        }
        Err(_) => false,
    })
}

/// Waits at most `within` for `pid` to exit, as an event (its pidfd, on a
/// thread of the blocking pool): `Some(true)` once it has exited (or is
/// no more), `Some(false)` at the deadline, `None` when it cannot be
/// watched (no pidfds here), for the caller to poll instead. A process
/// that has exited and is not yet reaped (a zombie) counts as exited.
pub async fn exited_within(pid: u32, within: std::time::Duration) -> Option<bool> {
    let fd = match imp::open(pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Some(true),
        Err(_) => return None,
    };
    tokio::task::spawn_blocking(move || imp::wait_within(&fd, Some(within)))
        .await
        .ok()
}

/// What became of a pid [`ExitWatch`] was told of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// Noted, not armed: nobody listened yet.
    Noted,
    /// A thread waits on its pidfd.
    Armed,
    /// It ended (or could not be watched): never armed again while a
    /// listing still shows it, so a pid that stays listed can never make
    /// the events spin. Forgotten once a listing no longer shows it.
    Ended,
}

/// The pane processes watched for their exits, and the one notification
/// they share.
#[derive(Debug, Default)]
pub struct ExitWatch {
    pids: Arc<Mutex<HashMap<u32, Watch>>>,
    /// Set once [`changes`](Self::changes) was first called.
    listening: std::sync::atomic::AtomicBool,
    /// One stored permit when an exit came while nobody waited.
    exits: Arc<tokio::sync::Notify>,
}

impl ExitWatch {
    pub fn new() -> Self {
        Self::default()
    }

    fn pids(&self) -> MutexGuard<'_, HashMap<u32, Watch>> {
        self.pids.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `running` as every pid a full listing shows running now:
    /// each new one is watched (once someone listens), and an ended pid
    /// the listing no longer shows is forgotten.
    pub fn note(&self, running: &[u32]) {
        {
            let mut pids = self.pids();
            pids.retain(|pid, w| *w != Watch::Ended || running.contains(pid));
            for pid in running {
                pids.entry(*pid).or_insert(Watch::Noted);
            }
        }
        if self.listening.load(std::sync::atomic::Ordering::Acquire) {
            self.arm();
        }
    }

    /// Resolves once some watched process has exited since the last call
    /// (an exit before the call counts). The first call arms every pid
    /// noted so far.
    pub async fn changes(&self) {
        if !self
            .listening
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            self.arm();
        }
        self.exits.notified().await
    }

    /// Starts a waiting thread for every noted pid.
    fn arm(&self) {
        let mut pids = self.pids();
        for (pid, w) in pids.iter_mut().filter(|(_, w)| **w == Watch::Noted) {
            *w = match self.wait_for(*pid) {
                Ok(()) => Watch::Armed,
                // Gone already (or no pidfd, no thread): the caller looks
                // now, and its listing says what became of the pane.
                Err(_) => {
                    self.exits.notify_one();
                    Watch::Ended
                }
            };
        }
    }

    /// A thread that waits for `pid`'s exit, then marks it ended and
    /// notifies.
    fn wait_for(&self, pid: u32) -> std::io::Result<()> {
        let fd = imp::open(pid)?;
        let (pids, exits) = (Arc::clone(&self.pids), Arc::clone(&self.exits));
        std::thread::Builder::new()
            .name(format!("swarm-exit-{pid}"))
            .stack_size(64 * 1024)
            .spawn(move || {
                imp::wait(&fd);
                drop(fd);
                if let Some(w) = pids
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get_mut(&pid)
                {
                    *w = Watch::Ended;
                }
                // A stored permit if nobody waits now: the next wait sees it.
                exits.notify_one();
            })
            .map(drop)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::os::fd::{FromRawFd, OwnedFd};

    /// A pidfd for `pid`.
    pub fn open(pid: u32) -> std::io::Result<OwnedFd> {
        let pid = libc::pid_t::try_from(pid)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: pidfd_open takes a pid and flags and returns a new file
        // descriptor or -1; no memory is passed.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = i32::try_from(fd).expect("a file descriptor fits an int");
        // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Blocks until the pidfd is readable: its process has exited.
    pub fn wait(fd: &OwnedFd) {
        wait_within(fd, None);
    }

    /// Blocks until the pidfd is readable (true: its process has exited)
    /// or `within` has passed (false); `None` waits for ever.
    pub fn wait_within(fd: &OwnedFd, within: Option<std::time::Duration>) -> bool {
        use std::os::fd::AsRawFd;
        let deadline = within.map(|w| std::time::Instant::now() + w);
        let mut p = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            let ms = match deadline {
                None => -1,
                Some(d) => {
                    let left = d.saturating_duration_since(std::time::Instant::now());
                    // Rounded up: a wait never ends before its deadline.
                    i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
                }
            };
            // SAFETY: one valid pollfd, owned by this frame, for the call.
            let n = unsafe { libc::poll(&mut p, 1, ms) };
            if n > 0 {
                return true;
            }
            if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return n != 0;
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    /// No pidfds here: [`super::available`] is false, and callers poll.
    pub fn open(_pid: u32) -> std::io::Result<std::convert::Infallible> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    pub fn wait(fd: &std::convert::Infallible) {
        match *fd {}
    }

    pub fn wait_within(fd: &std::convert::Infallible, _: Option<std::time::Duration>) -> bool {
        match *fd {}
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::command::timeouts;

    #[tokio::test]
    async fn an_exit_of_a_noted_process_is_an_event_once_someone_listens() {
        assert!(available(), "this Linux gives out pidfds (5.3+)");
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        let watch = ExitWatch::new();
        watch.note(&[child.id()]);
        assert_eq!(
            watch.pids()[&child.id()],
            Watch::Noted,
            "not armed before a listener"
        );
        let listener = async {
            watch.changes().await;
        };
        tokio::pin!(listener);
        // Armed by the first poll; nothing has exited yet.
        assert!(futures_poll_once(listener.as_mut()).await.is_none());
        assert_eq!(watch.pids()[&child.id()], Watch::Armed);
        child.kill().unwrap();
        tokio::time::timeout(timeouts::scaled(timeouts::WAIT), listener)
            .await
            .expect("the exit was an event");
        child.wait().unwrap();
        assert_eq!(watch.pids()[&child.id()], Watch::Ended);
        // No longer listed: forgotten.
        watch.note(&[]);
        assert!(watch.pids().is_empty());
    }

    #[tokio::test]
    async fn an_exit_awaited_by_pid_ends_the_wait_and_a_deadline_ends_it_too() {
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        let short = std::time::Duration::from_millis(20);
        assert_eq!(exited_within(child.id(), short).await, Some(false));
        child.kill().unwrap();
        // Exited, not yet reaped: counted as exited.
        assert_eq!(
            exited_within(child.id(), timeouts::scaled(timeouts::WAIT)).await,
            Some(true)
        );
        child.wait().unwrap();
    }

    /// Polls `f` once; `Some` if it finished.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = f;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }
}
