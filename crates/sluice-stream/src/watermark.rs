//! Watermark strategies: how a source turns record timestamps into watermarks.
//!
//! Follows Flink's `WatermarkStrategy` / `WatermarkGenerator` (FLIP-126):
//! - `for_bounded_out_of_orderness(d)`: the watermark is `max timestamp seen − d − 1 ms`,
//!   emitted periodically (every `auto_watermark_interval` of processing time) and never
//!   before the first record (Flink's `BoundedOutOfOrdernessWatermarks`);
//! - `for_monotonous_timestamps()`: the same with `d = 0`, i.e. `max − 1`
//!   (Flink's `AscendingTimestampsWatermarks`);
//! - `with_timestamp_assigner(f)`: the event time of each record;
//! - `with_idleness(t)`: a source that has produced no record for `t` of processing time is
//!   marked idle, so downstream multi-input operators stop waiting for it; its next record
//!   makes it active again. Flink's `WatermarksWithIdleness` checks inactivity at periodic
//!   emission; so does this one: the source is idle at the first periodic check at which
//!   `now − processing time of its last record ≥ t`.
//!
//! What it is not: the executor, not the strategy, decides when periodic emission happens
//! (see [`WatermarkEmission`]), and the end-of-input `MAX_WATERMARK` is emitted by the
//! source runner whatever the strategy.

use std::fmt;
use std::rc::Rc;
use std::time::Duration;

use crate::time::{MIN_WATERMARK, duration_ms};

/// Generates watermarks from the timestamps a source sees (Flink's `WatermarkGenerator`).
pub trait WatermarkGenerator {
    /// Called for every record; a punctuated generator returns a watermark here.
    fn on_event(&mut self, timestamp: i64) -> Option<i64>;
    /// Called every auto-watermark interval; a periodic generator returns a watermark here.
    fn on_periodic_emit(&mut self) -> Option<i64>;
}

/// `max timestamp − out_of_orderness − 1`, periodically.
#[derive(Debug, Clone)]
pub struct BoundedOutOfOrdernessWatermarks {
    max_timestamp: i64,
    out_of_orderness_ms: i64,
}

impl BoundedOutOfOrdernessWatermarks {
    pub fn new(out_of_orderness: Duration) -> Self {
        let out_of_orderness_ms = duration_ms(out_of_orderness);
        Self {
            // Flink starts at Long.MIN_VALUE + d + 1 so the first watermark is Long.MIN_VALUE.
            max_timestamp: MIN_WATERMARK
                .saturating_add(out_of_orderness_ms)
                .saturating_add(1),
            out_of_orderness_ms,
        }
    }
}

impl WatermarkGenerator for BoundedOutOfOrdernessWatermarks {
    fn on_event(&mut self, timestamp: i64) -> Option<i64> {
        self.max_timestamp = self.max_timestamp.max(timestamp);
        None
    }
    fn on_periodic_emit(&mut self) -> Option<i64> {
        Some(
            self.max_timestamp
                .saturating_sub(self.out_of_orderness_ms)
                .saturating_sub(1),
        )
    }
}

type GeneratorFactory = Rc<dyn Fn() -> Box<dyn WatermarkGenerator>>;
type TimestampAssigner<T> = Rc<dyn Fn(&T, Option<i64>) -> i64>;

/// How a source assigns timestamps and generates watermarks.
pub struct WatermarkStrategy<T> {
    pub(crate) generator: Option<GeneratorFactory>,
    pub(crate) timestamp_assigner: Option<TimestampAssigner<T>>,
    pub(crate) idle_timeout_ms: Option<i64>,
}

impl<T> Clone for WatermarkStrategy<T> {
    fn clone(&self) -> Self {
        Self {
            generator: self.generator.clone(),
            timestamp_assigner: self.timestamp_assigner.clone(),
            idle_timeout_ms: self.idle_timeout_ms,
        }
    }
}

impl<T> fmt::Debug for WatermarkStrategy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatermarkStrategy")
            .field("generates_watermarks", &self.generator.is_some())
            .field("assigns_timestamps", &self.timestamp_assigner.is_some())
            .field("idle_timeout_ms", &self.idle_timeout_ms)
            .finish()
    }
}

impl<T> WatermarkStrategy<T> {
    /// No watermarks except `MAX_WATERMARK` at the end of a bounded input.
    pub fn no_watermarks() -> Self {
        Self {
            generator: None,
            timestamp_assigner: None,
            idle_timeout_ms: None,
        }
    }

    pub fn for_bounded_out_of_orderness(max_out_of_orderness: Duration) -> Self {
        Self::for_generator(move || BoundedOutOfOrdernessWatermarks::new(max_out_of_orderness))
    }

    pub fn for_monotonous_timestamps() -> Self {
        Self::for_bounded_out_of_orderness(Duration::ZERO)
    }

    /// A custom generator; the factory is called once per source instance.
    pub fn for_generator<G>(factory: impl Fn() -> G + 'static) -> Self
    where
        G: WatermarkGenerator + 'static,
    {
        Self {
            generator: Some(Rc::new(move || {
                Box::new(factory()) as Box<dyn WatermarkGenerator>
            })),
            timestamp_assigner: None,
            idle_timeout_ms: None,
        }
    }

    /// The event time of a record; the second argument is the timestamp the record already
    /// carries, if any (Flink passes `Long.MIN_VALUE` for none).
    pub fn with_timestamp_assigner(
        mut self,
        assigner: impl Fn(&T, Option<i64>) -> i64 + 'static,
    ) -> Self {
        self.timestamp_assigner = Some(Rc::new(assigner));
        self
    }

    pub fn with_idleness(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout_ms = Some(duration_ms(idle_timeout));
        self
    }
}

/// When sources call their generator's `on_periodic_emit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatermarkEmission {
    /// Every interval of processing time (Flink's `pipeline.auto-watermark-interval`,
    /// default 200 ms).
    Periodic(Duration),
    /// After every source event. Not a Flink setting: a deterministic mode for tests and
    /// examples, equivalent to a periodic interval shorter than the gap between records.
    AfterEveryEvent,
    /// Never (Flink: an interval of 0); only explicit and end-of-input watermarks flow.
    Disabled,
}

impl Default for WatermarkEmission {
    fn default() -> Self {
        WatermarkEmission::Periodic(Duration::from_millis(200))
    }
}
