//! The runtime's view of an operator, and the stateless operators.
//!
//! The typed API (`datastream`) wraps user functions into `Operator`s, which see records
//! as `Box<dyn Any>`: the job graph holds operators of different types side by side and the
//! executor routes records between them without knowing their types. The typed API makes
//! every edge well-typed, so a failed downcast is a bug in this crate, not in user code.
//!
//! What an operator does not do: combine the watermarks of its inputs (the executor's
//! `StatusWatermarkValve` does, and calls `advance_watermark` with the combined value) or
//! forward watermarks (the executor forwards them after `advance_watermark` has fired
//! the timers they make due, so outputs of those timers precede the watermark downstream,
//! as in Flink).
//!
//! Cost: one allocation per record per operator (the box). Chaining without boxing, as
//! Flink's operator chains do, is the obvious next step when benchmarks ask for it.

use std::any::{Any, TypeId};
use std::marker::PhantomData;
use std::rc::Rc;

use crate::checkpoint::KeyedStateSnapshot;
use crate::error::StreamError;
use crate::state::StateBackendKind;
use crate::time::Clock;

/// An output port of an operator: its main output or a side output (tag id and type).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Port {
    Main,
    Side(String, TypeId),
}

/// A record an operator emitted.
pub(crate) struct Emitted {
    pub(crate) port: Port,
    pub(crate) value: Box<dyn Any>,
    pub(crate) timestamp: Option<i64>,
}

/// Records emitted by one operator call: main output and side outputs kept apart so a
/// function's `Collector` and `Context` can borrow them at the same time.
#[derive(Default)]
pub(crate) struct Output {
    pub(crate) main: Vec<Emitted>,
    pub(crate) side: Vec<Emitted>,
}

/// What an operator gets when the job starts (or restarts: `open` is called again on
/// the same instance, which must then drop everything it held).
pub(crate) struct OperatorSetup {
    pub(crate) clock: Rc<dyn Clock>,
    pub(crate) max_parallelism: u32,
    pub(crate) state_backend: StateBackendKind,
    /// Names the operator's state (its fjall directory).
    pub(crate) operator_id: String,
    /// The key groups this instance owns (all of them unless it is one of several
    /// parallel instances).
    pub(crate) key_groups: std::ops::Range<u32>,
    /// This instance's index among the operator's parallel instances, and their number.
    pub(crate) subtask: u32,
    pub(crate) parallelism: u32,
}

pub(crate) trait Operator {
    fn open(&mut self, _setup: &OperatorSetup) -> Result<(), StreamError> {
        Ok(())
    }
    fn process_record(
        &mut self,
        input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError>;
    /// The operator's combined input watermark moved to `watermark`: fire due timers.
    fn advance_watermark(&mut self, _watermark: i64, _out: &mut Output) -> Result<(), StreamError> {
        Ok(())
    }
    /// Processing time moved to `now_ms`: fire due processing-time timers.
    fn advance_processing_time(
        &mut self,
        _now_ms: i64,
        _out: &mut Output,
    ) -> Result<(), StreamError> {
        Ok(())
    }
    /// All inputs ended (after their final watermark).
    fn finish(&mut self, _out: &mut Output) -> Result<(), StreamError> {
        Ok(())
    }
    fn num_late_records_dropped(&self) -> u64 {
        0
    }
    /// Whether `finish` commits output (a sink): a parallel job defers it until every
    /// task drained its input, so a failing job commits nothing at its end.
    fn commits_on_finish(&self) -> bool {
        false
    }
    /// The checkpoint's barrier arrived on every input: snapshot keyed state and timers
    /// (`None`: nothing keyed). A sink pre-commits here.
    fn snapshot_state(
        &mut self,
        _checkpoint_id: u64,
    ) -> Result<Option<KeyedStateSnapshot>, StreamError> {
        Ok(None)
    }
    /// After `open`, before any record: take back the key groups `key_groups` of a
    /// checkpoint's snapshot of this operator.
    fn restore_state(
        &mut self,
        _snapshot: &KeyedStateSnapshot,
        _key_groups: std::ops::Range<u32>,
    ) -> Result<(), StreamError> {
        Ok(())
    }
    /// Checkpoint `checkpoint_id` is durable (a two-phase-commit sink commits).
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> Result<(), StreamError> {
        Ok(())
    }
}

/// Unboxes a record on an edge the typed API built for `T`.
pub(crate) fn unbox<T: 'static>(value: Box<dyn Any>) -> T {
    *value
        .downcast::<T>()
        .expect("the typed API connects operators of matching types")
}

/// Applies a function to each record (Flink's `StreamMap`).
pub(crate) struct MapOperator<T, U, F> {
    pub(crate) function: F,
    pub(crate) _types: PhantomData<fn(T) -> U>,
}

impl<T: 'static, U: 'static, F: FnMut(T) -> U> Operator for MapOperator<T, U, F> {
    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        let mapped = (self.function)(unbox::<T>(value));
        out.main.push(Emitted {
            port: Port::Main,
            value: Box::new(mapped),
            timestamp,
        });
        Ok(())
    }
}

/// Keeps the records a predicate accepts (Flink's `StreamFilter`).
pub(crate) struct FilterOperator<T, F> {
    pub(crate) predicate: F,
    pub(crate) _types: PhantomData<fn(T)>,
}

impl<T: 'static, F: FnMut(&T) -> bool> Operator for FilterOperator<T, F> {
    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        let keep = {
            let typed = value
                .downcast_ref::<T>()
                .expect("the typed API connects operators of matching types");
            (self.predicate)(typed)
        };
        if keep {
            out.main.push(Emitted {
                port: Port::Main,
                value,
                timestamp,
            });
        }
        Ok(())
    }
}

/// Turns each record into zero or more (Flink's `StreamFlatMap`).
pub(crate) struct FlatMapOperator<T, I, F> {
    pub(crate) function: F,
    pub(crate) _types: PhantomData<fn(T) -> I>,
}

impl<T, I, F> Operator for FlatMapOperator<T, I, F>
where
    T: 'static,
    I: IntoIterator,
    I::Item: 'static,
    F: FnMut(T) -> I,
{
    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        for item in (self.function)(unbox::<T>(value)) {
            out.main.push(Emitted {
                port: Port::Main,
                value: Box::new(item),
                timestamp,
            });
        }
        Ok(())
    }
}

/// Passes records of all inputs through; the executor combines the inputs' watermarks
/// (Flink's union is not an operator but a multi-input edge; here it is a node so the
/// valve has a place to live).
pub(crate) struct UnionOperator;

impl Operator for UnionOperator {
    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        out.main.push(Emitted {
            port: Port::Main,
            value,
            timestamp,
        });
        Ok(())
    }
}
