//! Trouble: errors a runtime outlives. An error in one step of the work
//! loop (an inbox lock held by a stopped writer, a full disk, no file
//! descriptors left, a file that vanished) starts an episode, or continues
//! the one under way: the runtime logs it, pauses (100 ms, doubling, at most
//! [`MAX_PAUSE`]) and tries the step again. The lead is told once per
//! episode (until one note is delivered); the episode ends with the first
//! step that succeeds. What is fatal (the team deleted, this member removed
//! from the roster) is decided by the runtime, not here.

use std::time::{Duration, Instant};

/// The first pause after an error.
pub const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// The longest pause between tries.
pub const MAX_PAUSE: Duration = Duration::from_secs(5);

/// The episode under way, if any.
#[derive(Debug, Default)]
pub struct Trouble {
    episode: Option<Episode>,
}

#[derive(Debug)]
struct Episode {
    since: Instant,
    failures: u32,
    pause: Duration,
    told: bool,
}

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovered {
    pub after: Duration,
    pub failures: u32,
}

impl Trouble {
    /// Counts one failed step; returns the pause before the next try.
    pub fn failed(&mut self) -> Duration {
        let e = self.episode.get_or_insert_with(|| Episode {
            since: Instant::now(),
            failures: 0,
            pause: Duration::ZERO,
            told: false,
        });
        e.failures += 1;
        e.pause = if e.pause.is_zero() {
            FIRST_PAUSE
        } else {
            (e.pause * 2).min(MAX_PAUSE)
        };
        e.pause
    }

    /// Failures so far in this episode.
    pub fn failures(&self) -> u32 {
        self.episode.as_ref().map_or(0, |e| e.failures)
    }

    /// Whether the lead still has to hear about this episode.
    pub fn owes_note(&self) -> bool {
        self.episode.as_ref().is_some_and(|e| !e.told)
    }

    /// The lead has heard about this episode.
    pub fn noted(&mut self) {
        if let Some(e) = &mut self.episode {
            e.told = true;
        }
    }

    /// A step succeeded: the episode, if one was under way, is over.
    pub fn recovered(&mut self) -> Option<Recovered> {
        self.episode.take().map(|e| Recovered {
            after: e.since.elapsed(),
            failures: e.failures,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_from_100_ms_up_to_the_cap_and_reset_after_a_success() {
        let mut t = Trouble::default();
        let pauses: Vec<u64> = (0..9).map(|_| t.failed().as_millis() as u64).collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        assert_eq!(t.failures(), 9);
        let r = t.recovered().expect("an episode was under way");
        assert_eq!(r.failures, 9);
        assert_eq!(t.recovered(), None, "one success ends it");
        assert_eq!(t.failed(), FIRST_PAUSE, "a new episode starts over");
    }

    #[test]
    fn the_lead_is_owed_one_note_per_episode() {
        let mut t = Trouble::default();
        assert!(!t.owes_note(), "no trouble, no note");
        t.failed();
        assert!(t.owes_note());
        t.failed();
        assert!(t.owes_note(), "still owed while no note got through");
        t.noted();
        t.failed();
        assert!(!t.owes_note(), "once per episode");
        t.recovered();
        t.failed();
        assert!(t.owes_note(), "a new episode is news again");
    }
}
