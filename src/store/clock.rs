//! The time source of the stores, injected so tests control LRU order and
//! staleness.

use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The time source stores use for access times and for the age of temp
/// files; injected so tests control the LRU order and staleness.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told to, or by a fixed step on every read.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<SystemTime>,
    step: Duration,
}

impl ManualClock {
    /// A clock standing at `start`.
    pub fn new(start: SystemTime) -> Self {
        Self::ticking(start, Duration::ZERO)
    }

    /// A clock at `start` that advances by `step` after every reading, so
    /// consecutive operations get distinct, ordered times.
    pub fn ticking(start: SystemTime, step: Duration) -> Self {
        ManualClock {
            now: Mutex::new(start),
            step,
        }
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        *self.now.lock().unwrap_or_else(|p| p.into_inner()) += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        let t = *now;
        *now += self.step;
        t
    }
}
