//! Time: event-time timestamps, watermark bounds and the processing-time clock.
//!
//! Timestamps are milliseconds since the epoch as `i64`, as Flink's `long` timestamps, so
//! negative timestamps (before 1970) are valid event times. `i64::MIN` is the watermark
//! before any progress and `i64::MAX` the watermark a bounded source emits at its end, which
//! fires every pending event-time window and timer (Flink's `Watermark.MAX_WATERMARK`).
//!
//! Processing time comes from a [`Clock`]. Production code uses [`SystemClock`]; tests inject
//! a [`ManualClock`] and move it from a source script, so processing-time windows, idleness
//! and state TTL are deterministic. This is not a timer wheel: the executor polls the clock
//! between source events (see `executor`).

use std::cell::Cell;
use std::fmt::Debug;
use std::rc::Rc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The watermark before any progress (Flink: `Long.MIN_VALUE`).
pub const MIN_WATERMARK: i64 = i64::MIN;
/// The watermark at the end of a bounded input (Flink: `Watermark.MAX_WATERMARK`).
pub const MAX_WATERMARK: i64 = i64::MAX;

/// Milliseconds of a `Duration`, saturating at `i64::MAX`.
pub fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A source of processing time in epoch milliseconds.
pub trait Clock: Debug {
    fn now_ms(&self) -> i64;
    /// The manual clock behind this one, if tests may move it.
    fn as_manual(&self) -> Option<&ManualClock> {
        None
    }
}

/// The machine's wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(duration_ms)
            .unwrap_or(0)
    }
}

/// A clock that only moves when told to. Clones share the same time, so a test keeps one
/// clone and hands another to the environment.
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    now_ms: Rc<Cell<i64>>,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        Self {
            now_ms: Rc::new(Cell::new(start_ms)),
        }
    }

    /// Moves the clock to `now_ms`; it never goes backwards (returns false and stays put).
    pub fn set_ms(&self, now_ms: i64) -> bool {
        if now_ms < self.now_ms.get() {
            return false;
        }
        self.now_ms.set(now_ms);
        true
    }

    pub fn advance(&self, by: Duration) {
        self.now_ms
            .set(self.now_ms.get().saturating_add(duration_ms(by)));
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now_ms.get()
    }
    fn as_manual(&self) -> Option<&ManualClock> {
        Some(self)
    }
}
