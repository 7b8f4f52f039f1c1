//! The user-function interfaces: what a pipeline author implements.
//!
//! Named and shaped after Flink's: `AggregateFunction` (create_accumulator, add, merge,
//! get_result), `ReduceFunction`, `KeyedProcessFunction` (process_element, on_timer, with a
//! `Context` giving the current key, the record's timestamp, the timer service and side
//! outputs through typed `OutputTag`s), `ProcessWindowFunction` (a window's full contents)
//! and `Collector`. Functions return `Result` where Flink's may throw; a returned error
//! fails the job, which the environment's `RestartStrategy` may restart from the latest
//! checkpoint (on the same function instances: `open` is called again).
//!
//! What it is not: Flink's rich-function lifecycle beyond `open` (no `close`, no broadcast
//! state), and no non-keyed `ProcessFunction` yet.

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::error::StreamError;
use crate::operator::{Emitted, Port};
use crate::state::{Namespace, RuntimeContext};
use crate::timer::InternalTimerService;
use crate::window::TimeWindow;

/// Incremental aggregation with a mergeable accumulator (Flink's `AggregateFunction`).
/// `merge` is required by merging (session) windows.
pub trait AggregateFunction: 'static {
    type In;
    /// Checkpointed with the window or `AggregatingState` it lives in, hence serde.
    type Acc: serde::Serialize + serde::de::DeserializeOwned + 'static;
    type Out;
    fn create_accumulator(&self) -> Self::Acc;
    fn add(&self, value: Self::In, accumulator: Self::Acc) -> Self::Acc;
    fn get_result(&self, accumulator: &Self::Acc) -> Self::Out;
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
}

/// Combines two values into one of the same type (Flink's `ReduceFunction`).
pub trait ReduceFunction<T> {
    fn reduce(&self, a: T, b: T) -> T;
}

impl<T, F: Fn(T, T) -> T> ReduceFunction<T> for F {
    fn reduce(&self, a: T, b: T) -> T {
        self(a, b)
    }
}

/// Identifies a side output of one type (Flink's `OutputTag`). Two tags are the same
/// output when their ids and types match.
pub struct OutputTag<T> {
    id: Rc<str>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for OutputTag<T> {
    fn clone(&self) -> Self {
        Self {
            id: self.id.clone(),
            _type: PhantomData,
        }
    }
}

impl<T> fmt::Debug for OutputTag<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OutputTag({})", self.id)
    }
}

impl<T: 'static> OutputTag<T> {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: Rc::from(id.into()),
            _type: PhantomData,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn port(&self) -> Port {
        Port::Side(self.id.to_string(), TypeId::of::<T>())
    }
}

/// Emits records of a function's main output. Records carry the timestamp of the input
/// record (or of the timer or window) that produced them, as Flink's
/// `TimestampedCollector`.
pub struct Collector<'a, O> {
    buffer: &'a mut Vec<Emitted>,
    timestamp: Option<i64>,
    _type: PhantomData<fn(O)>,
}

impl<'a, O: 'static> Collector<'a, O> {
    pub(crate) fn new(buffer: &'a mut Vec<Emitted>, timestamp: Option<i64>) -> Self {
        Self {
            buffer,
            timestamp,
            _type: PhantomData,
        }
    }

    pub fn collect(&mut self, value: O) {
        self.buffer.push(Emitted {
            port: Port::Main,
            value: Box::new(value),
            timestamp: self.timestamp,
        });
    }
}

/// Which clock fired a timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimeDomain {
    EventTime,
    ProcessingTime,
}

/// What a `KeyedProcessFunction` sees besides the record: Flink's `Context` and
/// `OnTimerContext` in one.
pub struct Context<'a, K> {
    pub(crate) key: &'a K,
    pub(crate) timestamp: Option<i64>,
    pub(crate) time_domain: Option<TimeDomain>,
    pub(crate) timers: &'a mut InternalTimerService<K>,
    pub(crate) current_watermark: i64,
    pub(crate) current_processing_time: i64,
    pub(crate) side: &'a mut Vec<Emitted>,
}

impl<K: Clone + Eq + std::hash::Hash> Context<'_, K> {
    pub fn get_current_key(&self) -> &K {
        self.key
    }

    /// The timestamp of the record being processed, or of the firing timer.
    pub fn timestamp(&self) -> Option<i64> {
        self.timestamp
    }

    /// `Some` inside `on_timer`: which clock fired it.
    pub fn time_domain(&self) -> Option<TimeDomain> {
        self.time_domain
    }

    pub fn timer_service(&mut self) -> TimerService<'_, K> {
        TimerService {
            key: self.key,
            timers: self.timers,
            current_watermark: self.current_watermark,
            current_processing_time: self.current_processing_time,
        }
    }

    /// Emits `value` to the side output `tag`, with the current timestamp.
    pub fn output<T: 'static>(&mut self, tag: &OutputTag<T>, value: T) {
        self.side.push(Emitted {
            port: tag.port(),
            value: Box::new(value),
            timestamp: self.timestamp,
        });
    }
}

/// Timers of the current key (Flink's `TimerService`). Registering the same (key, time)
/// twice keeps one timer.
pub struct TimerService<'a, K> {
    key: &'a K,
    timers: &'a mut InternalTimerService<K>,
    current_watermark: i64,
    current_processing_time: i64,
}

impl<K: Clone + Eq + std::hash::Hash> TimerService<'_, K> {
    pub fn current_watermark(&self) -> i64 {
        self.current_watermark
    }
    pub fn current_processing_time(&self) -> i64 {
        self.current_processing_time
    }
    pub fn register_event_time_timer(&mut self, time: i64) {
        self.timers
            .register(TimeDomain::EventTime, self.key, Namespace::Void, time);
    }
    pub fn register_processing_time_timer(&mut self, time: i64) {
        self.timers
            .register(TimeDomain::ProcessingTime, self.key, Namespace::Void, time);
    }
    pub fn delete_event_time_timer(&mut self, time: i64) {
        self.timers
            .delete(TimeDomain::EventTime, self.key, Namespace::Void, time);
    }
    pub fn delete_processing_time_timer(&mut self, time: i64) {
        self.timers
            .delete(TimeDomain::ProcessingTime, self.key, Namespace::Void, time);
    }
}

/// Processes each record of a keyed stream with keyed state and timers (Flink's
/// `KeyedProcessFunction`).
pub trait KeyedProcessFunction<K, I, O>: 'static {
    /// Called once before the first record: obtain state handles here.
    fn open(&mut self, _runtime: &RuntimeContext) -> Result<(), StreamError> {
        Ok(())
    }
    fn process_element(
        &mut self,
        value: I,
        ctx: &mut Context<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError>;
    /// Called when a timer of `ctx.get_current_key()` fires.
    fn on_timer(
        &mut self,
        _timestamp: i64,
        _ctx: &mut Context<'_, K>,
        _out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        Ok(())
    }
}

/// What a window function knows about the window being emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowContext {
    pub window: TimeWindow,
    pub current_watermark: i64,
    pub current_processing_time: i64,
}

/// Computes a window's output from all its elements (Flink's `ProcessWindowFunction`).
pub trait ProcessWindowFunction<K, I, O>: 'static {
    fn process(
        &mut self,
        key: &K,
        context: &WindowContext,
        elements: &[I],
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError>;
}

impl<K, I, O, F> ProcessWindowFunction<K, I, O> for F
where
    F: FnMut(&K, &WindowContext, &[I], &mut Collector<'_, O>) -> Result<(), StreamError> + 'static,
{
    fn process(
        &mut self,
        key: &K,
        context: &WindowContext,
        elements: &[I],
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        self(key, context, elements, out)
    }
}
