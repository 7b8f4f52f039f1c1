//! Two-input operators: `connect` with a `KeyedCoProcessFunction` (Flink's
//! `ConnectedStreams.keyBy(..).process(KeyedCoProcessFunction)`), and the window co-group
//! and window join built on it (Flink's `coGroup` / `join` `.where(..).equalTo(..)
//! .window(..).apply(..)`).
//!
//! What it is: `first.connect(&second)` pairs two streams of different types;
//! `.key_by(first_key, second_key)` keys both by the same key type, so one key's state and
//! timers are shared by records of both inputs (Flink's `KeyedCoProcessOperator`); and
//! `.process(function)` calls `process_element1` for records of the first input,
//! `process_element2` for those of the second, `on_timer` for due timers (in timestamp
//! order, never during a record). The operator's watermark is the minimum of both inputs'
//! (idle inputs excluded): the executor's `StatusWatermarkValve` combines them, as for
//! `union`, and calls `advance_watermark` with the result. State and timers are
//! checkpointed per key group like a `KeyedProcessOperator`'s, so state values are serde
//! types.
//!
//! `first.co_group(&second).where_key(..).equal_to(..).window(assigner)` then
//! `.apply(CoGroupFunction)` (each key's records of both inputs per window) or
//! `.join(|a, b| ..)` (every pair): a `KeyedCoProcessFunction` that buffers records per
//! window in `MapState` and fires at the window's last millisecond, as Flink's window
//! join (a co-group over the windowed union of both inputs) does; late records are
//! dropped. Deviations: `where` is a Rust keyword, hence `where_key`; the join is a
//! terminal `.join(function)` on the co-group instead of a separate `JoinedStreams` type;
//! only event-time tumbling and sliding windows (no session or processing-time windows,
//! no triggers, evictors or allowed lateness), and the dropped late records are not
//! counted in `num_late_records_dropped`.
//!
//! It exists because Nexmark's joins need one keyed scope over two inputs: q3's
//! incremental join and q4's auction/bid join are `KeyedCoProcessFunction`s, q8 a window
//! co-group (`nexmark::queries`).
//!
//! What it is not (yet): a non-keyed `CoProcessFunction`, `CoMapFunction`, broadcast
//! state, or `intervalJoin`.
//!
//! Cost: as `KeyedProcessOperator`: one box per record, a key extraction and the state
//! accesses the function makes; the window co-group clones a record once per window it
//! belongs to and reads and writes its window's buffer once per record (whole buffers:
//! the map cell is the window's pair of vectors).

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::checkpoint::KeyedStateSnapshot;
use crate::datastream::DataStream;
use crate::environment::keyed_edge;
use crate::error::StreamError;
use crate::functions::{Collector, Context, TimeDomain};
use crate::operator::{Operator, OperatorSetup, Output, unbox};
use crate::state::{
    KeyedStateStore, MapState, MapStateDescriptor, RuntimeContext, StateKey, StateValue,
};
use crate::time::{Clock, MIN_WATERMARK};
use crate::timer::InternalTimerService;
use crate::window::{TimeWindow, WindowAssigner};

/// Processes the records of two connected, keyed streams with keyed state and timers
/// shared by both (Flink's `KeyedCoProcessFunction`).
pub trait KeyedCoProcessFunction<K, I1, I2, O>: 'static {
    /// Called once before the first record: obtain state handles here.
    fn open(&mut self, _runtime: &RuntimeContext) -> Result<(), StreamError> {
        Ok(())
    }
    /// A record of the first input.
    fn process_element1(
        &mut self,
        value: I1,
        ctx: &mut Context<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError>;
    /// A record of the second input.
    fn process_element2(
        &mut self,
        value: I2,
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

/// Two streams connected for a two-input operator (Flink's `ConnectedStreams`).
pub struct ConnectedStreams<I1, I2> {
    pub(crate) first: DataStream<I1>,
    pub(crate) second: DataStream<I2>,
}

impl<I1: Clone + 'static, I2: Clone + 'static> ConnectedStreams<I1, I2> {
    /// Keys the first input by `first_key` and the second by `second_key` (Flink's
    /// `ConnectedStreams.keyBy(KeySelector, KeySelector)`).
    pub fn key_by<K: StateKey>(
        self,
        first_key: impl Fn(&I1) -> K + 'static,
        second_key: impl Fn(&I2) -> K + 'static,
    ) -> KeyedConnectedStreams<I1, I2, K> {
        KeyedConnectedStreams {
            streams: self,
            first_key: Rc::new(first_key),
            second_key: Rc::new(second_key),
        }
    }
}

/// Two connected streams keyed by the same key type.
pub struct KeyedConnectedStreams<I1, I2, K> {
    streams: ConnectedStreams<I1, I2>,
    first_key: Rc<dyn Fn(&I1) -> K>,
    second_key: Rc<dyn Fn(&I2) -> K>,
}

impl<I1: Clone + Send + 'static, I2: Clone + Send + 'static, K: StateKey>
    KeyedConnectedStreams<I1, I2, K>
{
    /// Flink's `ConnectedStreams.process(KeyedCoProcessFunction)`.
    pub fn process<O: Clone + 'static>(
        self,
        function: impl KeyedCoProcessFunction<K, I1, I2, O>,
    ) -> DataStream<O> {
        let edges = vec![
            keyed_edge(self.first_key.clone()),
            keyed_edge(self.second_key.clone()),
        ];
        let operator = KeyedCoProcessOperator {
            first_key: self.first_key,
            second_key: self.second_key,
            function,
            runtime: None,
            _types: PhantomData,
        };
        let ConnectedStreams { first, second } = self.streams;
        first.add_keyed_two_input_operator("KeyedCoProcess", Box::new(operator), &second, edges)
    }
}

struct KeyedCoProcessOperator<K, I1, I2, O, F> {
    first_key: Rc<dyn Fn(&I1) -> K>,
    second_key: Rc<dyn Fn(&I2) -> K>,
    function: F,
    runtime: Option<CoProcessRuntime<K>>,
    _types: PhantomData<fn(I1, I2) -> O>,
}

struct CoProcessRuntime<K> {
    store: Rc<RefCell<KeyedStateStore<K>>>,
    timers: InternalTimerService<K>,
    clock: Rc<dyn Clock>,
    current_watermark: i64,
}

/// Which input a record came from, unboxed.
enum Element<I1, I2> {
    First(I1),
    Second(I2),
}

impl<K, I1, I2, O, F> KeyedCoProcessOperator<K, I1, I2, O, F>
where
    K: StateKey,
    I1: 'static,
    I2: 'static,
    O: 'static,
    F: KeyedCoProcessFunction<K, I1, I2, O>,
{
    fn runtime(&mut self) -> &mut CoProcessRuntime<K> {
        self.runtime
            .as_mut()
            .expect("the executor opens operators before use")
    }

    fn fire_timers(
        &mut self,
        domain: TimeDomain,
        up_to: i64,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        let runtime = self
            .runtime
            .as_mut()
            .expect("the executor opens operators before use");
        while let Some((time, key, _)) = runtime.timers.pop_due(domain, up_to) {
            runtime
                .store
                .borrow_mut()
                .set_current_key(Some(key.clone()));
            let mut context = Context {
                key: &key,
                timestamp: Some(time),
                time_domain: Some(domain),
                timers: &mut runtime.timers,
                current_watermark: runtime.current_watermark,
                current_processing_time: runtime.clock.now_ms(),
                side: &mut out.side,
            };
            // As Flink: outputs of an event-time timer carry its time, of a processing-time
            // timer none.
            let output_timestamp = match domain {
                TimeDomain::EventTime => Some(time),
                TimeDomain::ProcessingTime => None,
            };
            let mut collector = Collector::new(&mut out.main, output_timestamp);
            let result = self.function.on_timer(time, &mut context, &mut collector);
            runtime.store.borrow_mut().set_current_key(None);
            result?;
        }
        Ok(())
    }
}

impl<K, I1, I2, O, F> Operator for KeyedCoProcessOperator<K, I1, I2, O, F>
where
    K: StateKey,
    I1: 'static,
    I2: 'static,
    O: 'static,
    F: KeyedCoProcessFunction<K, I1, I2, O>,
{
    fn open(&mut self, setup: &OperatorSetup) -> Result<(), StreamError> {
        let store = Rc::new(RefCell::new(KeyedStateStore::new(
            setup
                .state_backend
                .create::<K>(setup.max_parallelism, &setup.operator_id)?,
            setup.max_parallelism,
            setup.clock.clone(),
        )));
        self.function.open(&RuntimeContext::new(store.clone()))?;
        self.runtime = Some(CoProcessRuntime {
            store,
            timers: InternalTimerService::default(),
            clock: setup.clock.clone(),
            current_watermark: MIN_WATERMARK,
        });
        Ok(())
    }

    fn process_record(
        &mut self,
        input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        let (element, key) = match input {
            0 => {
                let value = unbox::<I1>(value);
                let key = (self.first_key)(&value);
                (Element::First(value), key)
            }
            1 => {
                let value = unbox::<I2>(value);
                let key = (self.second_key)(&value);
                (Element::Second(value), key)
            }
            _ => unreachable!("a two-input operator is built with exactly two inputs"),
        };
        let runtime = self
            .runtime
            .as_mut()
            .expect("the executor opens operators before use");
        runtime
            .store
            .borrow_mut()
            .set_current_key(Some(key.clone()));
        let mut context = Context {
            key: &key,
            timestamp,
            time_domain: None,
            timers: &mut runtime.timers,
            current_watermark: runtime.current_watermark,
            current_processing_time: runtime.clock.now_ms(),
            side: &mut out.side,
        };
        let mut collector = Collector::new(&mut out.main, timestamp);
        let result = match element {
            Element::First(value) => {
                self.function
                    .process_element1(value, &mut context, &mut collector)
            }
            Element::Second(value) => {
                self.function
                    .process_element2(value, &mut context, &mut collector)
            }
        };
        runtime.store.borrow_mut().set_current_key(None);
        result
    }

    fn advance_watermark(&mut self, watermark: i64, out: &mut Output) -> Result<(), StreamError> {
        self.runtime().current_watermark = watermark;
        self.fire_timers(TimeDomain::EventTime, watermark, out)
    }

    fn advance_processing_time(
        &mut self,
        now_ms: i64,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        self.fire_timers(TimeDomain::ProcessingTime, now_ms, out)
    }

    fn snapshot_state(
        &mut self,
        _checkpoint_id: u64,
    ) -> Result<Option<KeyedStateSnapshot>, StreamError> {
        let runtime = self.runtime();
        let store = runtime.store.borrow();
        let mut snapshot = store.snapshot()?;
        runtime
            .timers
            .snapshot_into(store.max_parallelism(), &mut snapshot)?;
        Ok(Some(snapshot))
    }

    fn restore_state(
        &mut self,
        snapshot: &KeyedStateSnapshot,
        key_groups: std::ops::Range<u32>,
    ) -> Result<(), StreamError> {
        let runtime = self.runtime();
        let max_parallelism = runtime.store.borrow().max_parallelism();
        runtime
            .store
            .borrow_mut()
            .restore(snapshot, key_groups.clone())?;
        runtime
            .timers
            .restore(snapshot, key_groups, max_parallelism)?;
        Ok(())
    }
}

/// Records of both inputs with the same key in the same window (Flink's
/// `CoGroupFunction`): called once per key and window that received any record, either
/// side possibly empty.
pub trait CoGroupFunction<K, I1, I2, O>: 'static {
    fn co_group(
        &mut self,
        key: &K,
        window: &TimeWindow,
        first: &[I1],
        second: &[I2],
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError>;
}

impl<K, I1, I2, O, F> CoGroupFunction<K, I1, I2, O> for F
where
    F: FnMut(&K, &TimeWindow, &[I1], &[I2], &mut Collector<'_, O>) -> Result<(), StreamError>
        + 'static,
{
    fn co_group(
        &mut self,
        key: &K,
        window: &TimeWindow,
        first: &[I1],
        second: &[I2],
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        self(key, window, first, second, out)
    }
}

/// Flink's `coGroup(other)` / `join(other)`: waits for the key selectors and the window.
pub struct CoGroupedStreams<I1, I2> {
    streams: ConnectedStreams<I1, I2>,
}

impl<I1: Clone + 'static, I2: Clone + 'static> CoGroupedStreams<I1, I2> {
    pub(crate) fn new(first: DataStream<I1>, second: DataStream<I2>) -> Self {
        Self {
            streams: ConnectedStreams { first, second },
        }
    }

    /// The first input's key (Flink's `where`, a Rust keyword).
    pub fn where_key<K: StateKey>(
        self,
        first_key: impl Fn(&I1) -> K + 'static,
    ) -> CoGroupWhere<I1, I2, K> {
        CoGroupWhere {
            streams: self.streams,
            first_key: Rc::new(first_key),
        }
    }
}

/// A co-group with the first input's key, waiting for the second's.
pub struct CoGroupWhere<I1, I2, K> {
    streams: ConnectedStreams<I1, I2>,
    first_key: Rc<dyn Fn(&I1) -> K>,
}

impl<I1: Clone + 'static, I2: Clone + 'static, K: StateKey> CoGroupWhere<I1, I2, K> {
    /// The second input's key (Flink's `equalTo`).
    pub fn equal_to(self, second_key: impl Fn(&I2) -> K + 'static) -> CoGroupEqualTo<I1, I2, K> {
        CoGroupEqualTo {
            keyed: KeyedConnectedStreams {
                streams: self.streams,
                first_key: self.first_key,
                second_key: Rc::new(second_key),
            },
        }
    }
}

/// A keyed co-group waiting for its window.
pub struct CoGroupEqualTo<I1, I2, K> {
    keyed: KeyedConnectedStreams<I1, I2, K>,
}

impl<I1: Clone + 'static, I2: Clone + 'static, K: StateKey> CoGroupEqualTo<I1, I2, K> {
    /// The windows both inputs are cut into. Event-time, non-merging assigners only
    /// (tumbling, sliding): a session or processing-time assigner fails the job at
    /// `execute` with `InvalidConfiguration`.
    pub fn window(self, assigner: impl WindowAssigner) -> WindowedCoGroup<I1, I2, K> {
        let error = if let Err(error) = assigner.validate() {
            Some(error)
        } else if assigner.is_merging() || !assigner.is_event_time() {
            Some("window join / co-group: only event-time tumbling or sliding windows".into())
        } else {
            None
        };
        if let Some(error) = error {
            self.keyed.streams.first.report_error(error);
        }
        WindowedCoGroup {
            keyed: self.keyed,
            assigner: Box::new(assigner),
        }
    }
}

/// Two keyed inputs cut into the same windows (Flink's `WithWindow`).
pub struct WindowedCoGroup<I1, I2, K> {
    keyed: KeyedConnectedStreams<I1, I2, K>,
    assigner: Box<dyn WindowAssigner>,
}

impl<I1, I2, K> WindowedCoGroup<I1, I2, K>
where
    I1: Clone + Send + StateValue,
    I2: Clone + Send + StateValue,
    K: StateKey,
{
    /// Flink's `CoGroupedStreams.WithWindow.apply(CoGroupFunction)`: when the watermark
    /// passes a window's last millisecond, `function` gets each key's records of both
    /// inputs in that window (its outputs carry that millisecond as timestamp). Records
    /// are buffered in keyed state until then (hence `StateValue`); a record whose every
    /// window the watermark already passed is dropped as late, as in Flink.
    pub fn apply<O: Clone + 'static>(
        self,
        function: impl CoGroupFunction<K, I1, I2, O>,
    ) -> DataStream<O> {
        self.keyed
            .process(WindowCoGroup {
                assigner: self.assigner,
                function,
                windows: None,
                _types: PhantomData,
            })
            .name("Window(CoGroup)")
    }

    /// Flink's `JoinedStreams.WithWindow.apply(JoinFunction)`: `function` for every pair
    /// of records of the two inputs with the same key in the same window.
    pub fn join<O: Clone + 'static>(
        self,
        mut function: impl FnMut(&I1, &I2) -> O + 'static,
    ) -> DataStream<O> {
        self.apply(
            move |_: &K,
                  _: &TimeWindow,
                  first: &[I1],
                  second: &[I2],
                  out: &mut Collector<'_, O>| {
                for left in first {
                    for right in second {
                        out.collect(function(left, right));
                    }
                }
                Ok(())
            },
        )
        .name("Window(Join)")
    }
}

/// The buffered records of one key and window.
type WindowBuffer<I1, I2> = (Vec<I1>, Vec<I2>);

struct WindowCoGroup<K, I1, I2, O, F> {
    assigner: Box<dyn WindowAssigner>,
    function: F,
    windows: Option<MapState<TimeWindow, WindowBuffer<I1, I2>>>,
    _types: PhantomData<fn(K, I1, I2) -> O>,
}

impl<K, I1, I2, O, F> WindowCoGroup<K, I1, I2, O, F>
where
    K: StateKey,
    I1: Clone + StateValue,
    I2: Clone + StateValue,
    O: 'static,
    F: CoGroupFunction<K, I1, I2, O>,
{
    fn buffer(
        &self,
        ctx: &mut Context<'_, K>,
        add: impl Fn(&mut WindowBuffer<I1, I2>),
    ) -> Result<(), StreamError> {
        let timestamp = ctx
            .timestamp()
            .ok_or_else(|| StreamError::MissingTimestamp {
                operator: "Window(CoGroup)".to_string(),
            })?;
        let windows = self
            .windows
            .as_ref()
            .expect("the operator calls open before any record");
        let mut timers = ctx.timer_service();
        for window in self.assigner.assign_windows(timestamp) {
            if window.max_timestamp() <= timers.current_watermark() {
                continue;
            }
            timers.register_event_time_timer(window.max_timestamp());
            let mut buffer = windows.get(&window)?.unwrap_or_default();
            add(&mut buffer);
            windows.put(window, buffer)?;
        }
        Ok(())
    }
}

impl<K, I1, I2, O, F> KeyedCoProcessFunction<K, I1, I2, O> for WindowCoGroup<K, I1, I2, O, F>
where
    K: StateKey,
    I1: Clone + StateValue,
    I2: Clone + StateValue,
    O: 'static,
    F: CoGroupFunction<K, I1, I2, O>,
{
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        self.windows = Some(runtime.get_map_state(&MapStateDescriptor::new("window-contents"))?);
        Ok(())
    }

    fn process_element1(
        &mut self,
        value: I1,
        ctx: &mut Context<'_, K>,
        _out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        self.buffer(ctx, |buffer| buffer.0.push(value.clone()))
    }

    fn process_element2(
        &mut self,
        value: I2,
        ctx: &mut Context<'_, K>,
        _out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        self.buffer(ctx, |buffer| buffer.1.push(value.clone()))
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        ctx: &mut Context<'_, K>,
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        let windows = self
            .windows
            .as_ref()
            .expect("the operator calls open before any record");
        // A key has few open windows (size / slide of them), so a scan is cheap.
        let mut due: Vec<(TimeWindow, WindowBuffer<I1, I2>)> = windows
            .entries()?
            .into_iter()
            .filter(|(window, _)| window.max_timestamp() == timestamp)
            .collect();
        due.sort_by_key(|(window, _)| *window);
        for (window, (first, second)) in due {
            windows.remove(&window)?;
            self.function
                .co_group(ctx.get_current_key(), &window, &first, &second, out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::KeyedCoProcessFunction;
    use crate::{
        CollectSink, CollectionSource, Collector, Context, EventTimeSessionWindows, ManualClock,
        RuntimeContext, SinkEvent, SourceEvent, StreamError, StreamExecutionEnvironment,
        TumblingEventTimeWindows, ValueState, ValueStateDescriptor, WatermarkEmission,
        WatermarkStrategy,
    };

    /// Counts the records of both inputs per key (one state for both) and sets a timer
    /// 50 ms after each; a timer reports (key, time, count, operator watermark).
    #[derive(Default)]
    struct CountBoth {
        count: Option<ValueState<u32>>,
    }

    type Record = (char, i64);
    type Fired = (char, i64, u32, i64);

    impl CountBoth {
        fn on_record(
            &self,
            record: Record,
            ctx: &mut Context<'_, char>,
        ) -> Result<(), StreamError> {
            let count = self.count.as_ref().expect("opened");
            count.update(count.value()?.unwrap_or(0) + 1)?;
            ctx.timer_service().register_event_time_timer(record.1 + 50);
            Ok(())
        }
    }

    impl KeyedCoProcessFunction<char, Record, Record, Fired> for CountBoth {
        fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
            self.count = Some(runtime.get_state(&ValueStateDescriptor::new("count"))?);
            Ok(())
        }
        fn process_element1(
            &mut self,
            record: Record,
            ctx: &mut Context<'_, char>,
            _out: &mut Collector<'_, Fired>,
        ) -> Result<(), StreamError> {
            self.on_record(record, ctx)
        }
        fn process_element2(
            &mut self,
            record: Record,
            ctx: &mut Context<'_, char>,
            _out: &mut Collector<'_, Fired>,
        ) -> Result<(), StreamError> {
            self.on_record(record, ctx)
        }
        fn on_timer(
            &mut self,
            timestamp: i64,
            ctx: &mut Context<'_, char>,
            out: &mut Collector<'_, Fired>,
        ) -> Result<(), StreamError> {
            let count = self.count.as_ref().expect("opened").value()?.unwrap_or(0);
            let watermark = ctx.timer_service().current_watermark();
            out.collect((*ctx.get_current_key(), timestamp, count, watermark));
            Ok(())
        }
    }

    fn run(first: Vec<SourceEvent<Record>>, second: Vec<SourceEvent<Record>>) -> Vec<Fired> {
        let mut env = StreamExecutionEnvironment::new();
        env.set_processing_time_clock(ManualClock::new(0))
            .set_watermark_emission(WatermarkEmission::AfterEveryEvent);
        let strategy = || {
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|record: &Record, _| record.1)
        };
        let first = env.from_source(CollectionSource::from_events(first), strategy(), "first");
        let second = env.from_source(CollectionSource::from_events(second), strategy(), "second");
        let sink = CollectSink::new();
        first
            .connect(&second)
            .key_by(|record: &Record| record.0, |record: &Record| record.0)
            .process(CountBoth::default())
            .sink_to(sink.clone());
        env.execute("co-process").expect("runs");
        sink.records()
    }

    /// Round robin, one step each, watermark = max − 1 per input:
    ///   first ('a', 10): 9 / MIN → MIN | second ('a', 20): 9 / 19 → 9 |
    ///   first ('b', 100): 99 / 19 → 19 | second ('b', 30): 99 / 29 → 29 |
    ///   first ('a', 200): 199 / 29 → 29 | second ends: 199 / MAX → 199 fires a@60, a@70,
    ///   b@80, b@150 in time order — none earlier, though the first input's watermark passed
    ///   60, 70 and 80 steps before, because the slower input held the operator back |
    ///   first ends: MAX fires a@250. Counts are per key over both inputs: a has 3
    ///   records, b 2.
    #[test]
    fn watermark_is_the_minimum_of_both_inputs_and_state_is_shared_per_key() {
        let fired = run(
            vec![
                SourceEvent::Record(('a', 10)),
                SourceEvent::Record(('b', 100)),
                SourceEvent::Record(('a', 200)),
            ],
            vec![
                SourceEvent::Record(('a', 20)),
                SourceEvent::Record(('b', 30)),
            ],
        );
        assert_eq!(
            fired,
            vec![
                ('a', 60, 3, 199),
                ('a', 70, 3, 199),
                ('b', 80, 2, 199),
                ('b', 150, 2, 199),
                ('a', 250, 3, i64::MAX),
            ]
        );
    }

    /// The second input catches up: once both watermarks pass a timer it fires, before the
    /// input ends. first: ('a', 10), ('a', 300); second: ('a', 20), watermark 200.
    ///   ('a', 10): 9 / MIN | ('a', 20): 9 / 19 → 9 | ('a', 300): 299 / 19 → 19 |
    ///   second's watermark 200: 299 / 200 → 200 fires a@60 and a@70 with count 3 (all
    ///   three records are in) | the ends fire a@350.
    #[test]
    fn timers_fire_when_both_inputs_pass_them() {
        let fired = run(
            vec![
                SourceEvent::Record(('a', 10)),
                SourceEvent::Record(('a', 300)),
            ],
            vec![SourceEvent::Record(('a', 20)), SourceEvent::Watermark(200)],
        );
        assert_eq!(
            fired,
            vec![
                ('a', 60, 3, 200),
                ('a', 70, 3, 200),
                ('a', 350, 3, i64::MAX)
            ]
        );
    }

    /// Tumbling 10 ms windows, keyed by the char, monotonous timestamps per input.
    /// first: a@1, a@5, b@12, a@14, a@3; second: a@2, a@15, b@25.
    /// Steps (watermark first / second → operator): a@1: 0/MIN | a@2: 0/1 → 0 |
    /// a@5: 4/1 → 1 | a@15: 4/14 → 4 | b@12: 11/14 → 11 fires [0,10) for a:
    /// pairs (1,2), (5,2) | b@25: 11/24 → 11 | a@14: 13/24 → 13 | second ends:
    /// 13/MAX → 13 | a@3: late for [0,10) (9 ≤ 13), dropped | first ends: MAX fires [10,20)
    /// for a: (14,15) and for b: nothing (b@12 has no partner in [10,20); b@25 is in
    /// [20,30) alone).
    #[test]
    fn window_join_pairs_records_of_the_same_key_and_window_and_drops_late_ones() {
        let mut env = StreamExecutionEnvironment::new();
        env.set_processing_time_clock(ManualClock::new(0))
            .set_watermark_emission(WatermarkEmission::AfterEveryEvent);
        let strategy = || {
            WatermarkStrategy::for_monotonous_timestamps()
                .with_timestamp_assigner(|record: &Record, _| record.1)
        };
        let first = env.from_source(
            CollectionSource::of(vec![('a', 1), ('a', 5), ('b', 12), ('a', 14), ('a', 3)]),
            strategy(),
            "first",
        );
        let second = env.from_source(
            CollectionSource::of(vec![('a', 2), ('a', 15), ('b', 25)]),
            strategy(),
            "second",
        );
        let sink = CollectSink::new();
        first
            .co_group(&second)
            .where_key(|record: &Record| record.0)
            .equal_to(|record: &Record| record.0)
            .window(TumblingEventTimeWindows::of(Duration::from_millis(10)))
            .join(|left: &Record, right: &Record| (left.0, left.1, right.1))
            .sink_to(sink.clone());
        env.execute("window join").expect("runs");
        assert_eq!(
            sink.events(),
            vec![
                SinkEvent::Watermark(0),
                SinkEvent::Watermark(1),
                SinkEvent::Watermark(4),
                SinkEvent::Record {
                    value: ('a', 1, 2),
                    timestamp: Some(9)
                },
                SinkEvent::Record {
                    value: ('a', 5, 2),
                    timestamp: Some(9)
                },
                SinkEvent::Watermark(11),
                SinkEvent::Watermark(13),
                SinkEvent::Record {
                    value: ('a', 14, 15),
                    timestamp: Some(19)
                },
                SinkEvent::Watermark(i64::MAX),
            ]
        );
    }

    #[test]
    fn window_join_rejects_session_windows() {
        let env = StreamExecutionEnvironment::new();
        let first = env.from_collection(vec![('a', 1_i64)]);
        let second = env.from_collection(vec![('a', 2_i64)]);
        first
            .co_group(&second)
            .where_key(|record: &Record| record.0)
            .equal_to(|record: &Record| record.0)
            .window(EventTimeSessionWindows::with_gap(Duration::from_millis(10)))
            .join(|left: &Record, right: &Record| (left.1, right.1))
            .sink_to(CollectSink::new());
        assert!(matches!(
            env.execute("session join"),
            Err(StreamError::InvalidConfiguration(_))
        ));
    }
}
