//! Semantics acceptance tests of issue 10, through the public API only, each with
//! hand-computed expectations (the derivations are in the comments).

mod api;
mod guide;
mod keyed;
mod lateness;
mod watermarks;
mod windows;

use crate::{ManualClock, SinkEvent, StreamExecutionEnvironment, WatermarkEmission};

/// An environment with a manual clock at 0 and a watermark check after every source
/// event, so watermark progress is a function of the script alone.
fn deterministic_env() -> (StreamExecutionEnvironment, ManualClock) {
    let clock = ManualClock::new(0);
    let mut env = StreamExecutionEnvironment::new();
    env.set_processing_time_clock(clock.clone())
        .set_watermark_emission(WatermarkEmission::AfterEveryEvent);
    (env, clock)
}

fn record<T>(value: T, timestamp: i64) -> SinkEvent<T> {
    SinkEvent::Record {
        value,
        timestamp: Some(timestamp),
    }
}

fn watermark<T>(watermark: i64) -> SinkEvent<T> {
    SinkEvent::Watermark(watermark)
}
