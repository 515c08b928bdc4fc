//! One in-process pane: a PTY whose child runs the spec's argv, a reader
//! thread feeding a `vt100` screen and an output log readable by offset, and
//! answers to the terminal queries the program sends.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};

use portable_pty::{Child, MasterPty};

use super::queries::QueryScanner;

/// The most output bytes kept per pane; older bytes are dropped and the
/// log's base offset advances.
pub const LOG_CAP: usize = 4 << 20;

/// Output bytes with stable offsets.
#[derive(Debug, Default)]
pub struct OutputLog {
    base: u64,
    bytes: VecDeque<u8>,
}

impl OutputLog {
    pub fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend(chunk);
        if self.bytes.len() > LOG_CAP {
            let drop = self.bytes.len() - LOG_CAP / 2;
            self.bytes.drain(..drop);
            self.base += drop as u64;
        }
    }

    /// The offset just past the last byte.
    pub fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// Bytes from `offset` (or from the oldest kept byte if `offset` was
    /// dropped), and the offset to read from next.
    pub fn read_from(&self, offset: u64) -> (Vec<u8>, u64) {
        let start = offset.max(self.base).min(self.end());
        let skip = (start - self.base) as usize;
        (self.bytes.iter().skip(skip).copied().collect(), self.end())
    }
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it (the
/// screen and log stay usable for diagnostics).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// State shared between the backend and the pane's reader thread.
pub struct Shared {
    pub screen: Mutex<vt100::Parser>,
    pub log: Mutex<OutputLog>,
    pub writer: Mutex<Box<dyn Write + Send>>,
    /// The log's end offset, for followers.
    pub progress: tokio::sync::watch::Sender<u64>,
}

/// A live pane.
pub struct Pane {
    pub pid: u32,
    /// The mark the pane was spawned with.
    pub mark: crate::PaneMark,
    pub master: Mutex<Box<dyn MasterPty + Send>>,
    pub child: Mutex<Box<dyn Child + Send + Sync>>,
    pub shared: Arc<Shared>,
    pub title: String,
}

/// Reads the PTY until EOF: feeds the log, the screen and the output file
/// (if any; a failed write stops only the file copy), answers queries.
pub fn reader_loop(
    mut reader: Box<dyn Read + Send>,
    shared: Arc<Shared>,
    mut output: Option<std::fs::File>,
) {
    let mut buf = [0u8; 8192];
    let mut scanner = QueryScanner::default();
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break, // EIO once the child side is closed
        };
        let chunk = &buf[..n];
        // The log and its followers first: whatever the screen shows is
        // already in the log, so a reader that saw text on the screen finds
        // it by offset.
        let end = {
            let mut log = lock(&shared.log);
            log.push(chunk);
            log.end()
        };
        shared.progress.send_replace(end);
        let mut answers = Vec::new();
        {
            let mut screen = lock(&shared.screen);
            let mut done = 0;
            // Process up to each query so the cursor is where the program
            // expects it when asking.
            for (end, query) in scanner.feed(chunk) {
                screen.process(&chunk[done..end]);
                done = end;
                answers.push(query.answer(screen.screen().cursor_position()));
            }
            screen.process(&chunk[done..]);
        }
        if let Some(file) = &mut output
            && file.write_all(chunk).is_err()
        {
            output = None;
        }
        if !answers.is_empty() {
            let mut w = lock(&shared.writer);
            for a in answers {
                let _ = w.write_all(&a);
            }
            let _ = w.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_reads_by_offset_and_survives_dropping() {
        let mut log = OutputLog::default();
        log.push(b"hello ");
        log.push(b"world");
        assert_eq!(log.read_from(0), (b"hello world".to_vec(), 11));
        assert_eq!(log.read_from(6), (b"world".to_vec(), 11));
        assert_eq!(log.read_from(99), (Vec::new(), 11));
        let big = vec![b'x'; LOG_CAP];
        log.push(&big);
        assert!(log.base > 0);
        let (bytes, end) = log.read_from(0);
        assert_eq!(end, 11 + LOG_CAP as u64);
        assert_eq!(bytes.len() as u64, end - log.base);
    }

    /// The in-process contract test `keys_are_forwarded_and_output_is_logged_by_offset`
    /// waits for text on the screen, then reads it from the log and expects
    /// the followers' offset past it: the reader must put a chunk in the log
    /// and tell the followers before it shows it on the screen.
    #[test]
    fn a_chunk_is_in_the_log_and_told_before_it_is_on_the_screen() {
        use crate::command::timeouts;
        let shared = Arc::new(Shared {
            screen: Mutex::new(vt100::Parser::new(24, 80, 0)),
            log: Mutex::new(OutputLog::default()),
            writer: Mutex::new(Box::new(std::io::sink())),
            progress: tokio::sync::watch::channel(0).0,
        });
        let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
        struct Chunks(std::sync::mpsc::Receiver<Vec<u8>>);
        impl Read for Chunks {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Ok(chunk) = self.0.recv() else {
                    return Ok(0);
                };
                buf[..chunk.len()].copy_from_slice(&chunk);
                Ok(chunk.len())
            }
        }
        let reader = {
            let shared = shared.clone();
            std::thread::spawn(move || reader_loop(Box::new(Chunks(rx)), shared, None))
        };
        {
            // While the log is held, the reader must not get to the screen.
            let held = lock(&shared.log);
            tx.send(b"ready".to_vec()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(100));
            let screen = lock(&shared.screen).screen().contents();
            assert!(!screen.contains("ready"), "on the screen, not in the log");
            drop(held);
        }
        let deadline = timeouts::Deadline::after(timeouts::WAIT);
        while !lock(&shared.screen).screen().contents().contains("ready") {
            assert!(!deadline.passed(), "never on the screen");
            std::thread::sleep(timeouts::FIRST_PAUSE);
        }
        {
            // While the screen is held, the log and its followers get the next chunk.
            let held = lock(&shared.screen);
            let mut progress = shared.progress.subscribe();
            tx.send(b" set".to_vec()).unwrap();
            let told = std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap()
                    .block_on(async {
                        tokio::time::timeout(
                            timeouts::scaled(timeouts::WAIT),
                            progress.wait_for(|end| *end == 9),
                        )
                        .await
                        .is_ok()
                    })
            });
            assert!(
                told.join().unwrap(),
                "the followers were not told while the screen was held"
            );
            assert_eq!(lock(&shared.log).read_from(0).0, b"ready set");
            drop(held);
        }
        drop(tx);
        reader.join().unwrap();
        assert_eq!(lock(&shared.log).read_from(0).0, b"ready set");
        assert!(lock(&shared.screen).screen().contents().contains("ready"));
    }
}
