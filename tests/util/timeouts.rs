//! The suite's one timeout knob. Every budget a test waits on is written
//! as what it takes on a developer's machine ([`WAIT`], or a named
//! multiple or fraction of it) and stretched here by [`scale`]:
//!
//! - `SWARM_TEST_TIMEOUT_SCALE=F` (a positive number: `0.5`, `4`) multiplies
//!   every budget by `F`;
//! - otherwise `CI` set to anything but empty, `0` or `false` (`.ci/run`
//!   sets `CI=true`) multiplies it by [`CI_SCALE`];
//! - otherwise budgets are as written.
//!
//! A budget is a deadline for something that should happen, never a figure
//! asserted: a slow machine may take longer, a test only fails when the
//! thing does not happen at all. Figures live in `benches/` and `scripts/bench*`.
//!
//! Self-contained (std only), so the backend contract suite, a test crate
//! of its own, includes this very file:
//! `#[path = "../../tests/util/timeouts.rs"] mod timeouts;`.

use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a test waits for anything before it fails, on a developer's
/// machine (scaled by [`scale`]).
pub const WAIT: Duration = Duration::from_secs(20);

/// The stretch on CI when `SWARM_TEST_TIMEOUT_SCALE` is not set.
pub const CI_SCALE: f64 = 3.0;

/// The environment variable that sets the stretch explicitly.
pub const SCALE_VAR: &str = "SWARM_TEST_TIMEOUT_SCALE";

/// The factor every budget is multiplied by (read once per test binary).
pub fn scale() -> f64 {
    static SCALE: OnceLock<f64> = OnceLock::new();
    *SCALE.get_or_init(|| {
        scale_from(
            std::env::var(SCALE_VAR).ok().as_deref(),
            std::env::var("CI").ok().as_deref(),
        )
    })
}

/// The rule behind [`scale`], from the two variables' values.
pub fn scale_from(explicit: Option<&str>, ci: Option<&str>) -> f64 {
    if let Some(v) = explicit {
        match v.trim().parse::<f64>() {
            Ok(f) if f.is_finite() && f > 0.0 => return f,
            _ => panic!("{SCALE_VAR}={v:?}: expected a positive number such as 0.5 or 3"),
        }
    }
    match ci.map(str::trim) {
        None | Some("" | "0" | "false") => 1.0,
        Some(_) => CI_SCALE,
    }
}

/// `base` stretched by [`scale`].
pub fn scaled(base: Duration) -> Duration {
    base.mul_f64(scale())
}

/// `base` stretched by [`scale`], in whole seconds (at least one) for a
/// command-line budget such as `swarm shutdown --wait SECS`.
pub fn secs_arg(base: Duration) -> String {
    scaled(base).as_secs_f64().ceil().max(1.0).to_string()
}

/// A deadline `base` (scaled) from now; its `Display` says how long that
/// was and why, for failure messages.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    base: Duration,
    budget: Duration,
}

impl Deadline {
    pub fn after(base: Duration) -> Deadline {
        let budget = scaled(base);
        Deadline {
            at: Instant::now() + budget,
            base,
            budget,
        }
    }

    pub fn passed(&self) -> bool {
        Instant::now() >= self.at
    }

    /// What is left (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// The scaled budget.
    pub fn budget(&self) -> Duration {
        self.budget
    }
}

impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.budget == self.base {
            write!(f, "{:?}", self.budget)
        } else {
            write!(
                f,
                "{:?} ({:?} x {} from {SCALE_VAR} / CI)",
                self.budget,
                self.base,
                scale()
            )
        }
    }
}

/// The pause between two looks of a poll: 2 ms doubling to 50 ms, so a
/// quick answer is seen at once and a slow one costs little.
pub fn next_pause(pause: Duration) -> Duration {
    (pause * 2).min(Duration::from_millis(50))
}

/// The first pause of a poll.
pub const FIRST_PAUSE: Duration = Duration::from_millis(2);
