//! Semantics acceptance tests of issue 10, through the public API only, each with
//! hand-computed expectations (the derivations are in the comments).

mod api;
mod checkpoints;
mod guide;
mod keyed;
mod lateness;
mod parallel;
mod watermarks;
mod windows;

use crate::{
    ManualClock, SinkEvent, StateBackendKind, StreamExecutionEnvironment, WatermarkEmission,
};

/// An environment with a manual clock at 0 and a watermark check after every source
/// event, so watermark progress is a function of the script alone.
fn deterministic_env() -> (StreamExecutionEnvironment, ManualClock) {
    let clock = ManualClock::new(0);
    let mut env = StreamExecutionEnvironment::new();
    env.set_processing_time_clock(clock.clone())
        .set_watermark_emission(WatermarkEmission::AfterEveryEvent);
    (env, clock)
}

/// Every state backend, for tests that run against each: the heap, and fjall under a
/// scratch directory of its own (tests run in parallel), removed when the iterator is
/// dropped, i.e. after the loop that runs over it.
pub(crate) fn state_backends() -> StateBackends {
    let scratch = tempfile::Builder::new()
        .prefix("sluice-stream-")
        .tempdir()
        .expect("a scratch directory for fjall");
    StateBackends {
        kinds: vec![
            StateBackendKind::HashMap,
            StateBackendKind::Fjall {
                directory: scratch.path().to_path_buf(),
            },
        ]
        .into_iter(),
        _scratch: scratch,
    }
}

pub(crate) struct StateBackends {
    kinds: std::vec::IntoIter<StateBackendKind>,
    _scratch: tempfile::TempDir,
}

impl Iterator for StateBackends {
    type Item = StateBackendKind;
    fn next(&mut self) -> Option<StateBackendKind> {
        self.kinds.next()
    }
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
