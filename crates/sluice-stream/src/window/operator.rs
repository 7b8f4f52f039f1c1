//! The window operator: keyed windows with Flink's default triggers, allowed lateness and
//! late-data side output.
//!
//! Follows Flink's `WindowOperator` with `EventTimeTrigger` / `ProcessingTimeTrigger`:
//! - each element is added to every window its assigner gives it, except windows that are
//!   already *late*: an event-time window is late once `end − 1 + allowed_lateness <=
//!   watermark` (its state is gone);
//! - an event-time window fires when the watermark reaches `end − 1` (a timer), and fires
//!   again, immediately, for every element added while `end − 1 <= watermark` (late
//!   firing, within the allowed lateness); each firing emits the full contents so far;
//! - its state is dropped when the watermark reaches the cleanup time `end − 1 +
//!   allowed_lateness` (a second timer, the same one when the lateness is zero);
//! - an element that went into no window and whose `timestamp + allowed_lateness <=
//!   watermark` is late: it goes to the `side_output_late_data` tag, or else increments
//!   `num_late_records_dropped`;
//! - session windows merge on arrival with every window of the key they intersect
//!   (overlap or touch); contents are merged (`AggregateFunction::merge`, the reduce
//!   function, or list concatenation) and the merged-away windows' timers deleted;
//! - processing-time windows fire and are dropped when processing time reaches `end − 1`;
//!   at the end of a bounded input pending processing-time windows are discarded, as Flink
//!   does not fire processing-time timers after end of input.
//!
//! Window contents live in the keyed state store under the window's namespace; the set of
//! a key's session windows under the void namespace. Both, and the trigger and cleanup
//! timers, are in the operator's checkpoint snapshot (per key group). Emitted records carry the window's
//! max timestamp. Not yet: custom triggers and evictors, `ProcessWindowFunction`'s
//! per-window state, merging of the window set's "state windows" (contents are moved into
//! the merged window instead, which costs a move per merge and keeps the code simple).

use std::any::Any;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::checkpoint::KeyedStateSnapshot;
use crate::error::StreamError;
use crate::functions::{
    AggregateFunction, Collector, ProcessWindowFunction, ReduceFunction, TimeDomain, WindowContext,
};
use crate::operator::{Emitted, Operator, OperatorSetup, Output, Port, unbox};
use crate::state::{KeyedStateStore, Namespace, StateId, StateKey, StateValue};
use crate::time::{Clock, MIN_WATERMARK};
use crate::timer::InternalTimerService;
use crate::window::{TimeWindow, WindowAssigner};

/// How a window's elements are kept and turned into output: incremental (reduce,
/// aggregate) or all elements (process).
pub(crate) trait WindowFunctionAdapter<K, T>: 'static {
    /// Window contents are checkpointed, hence `StateValue`.
    type Acc: StateValue;
    type Out: 'static;
    fn create(&self) -> Self::Acc;
    fn add(&self, accumulator: Self::Acc, value: T) -> Self::Acc;
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    fn emit(
        &mut self,
        key: &K,
        context: &WindowContext,
        accumulator: &Self::Acc,
        out: &mut Collector<'_, Self::Out>,
    ) -> Result<(), StreamError>;
}

pub(crate) struct ReduceAdapter<T, F> {
    pub(crate) function: F,
    pub(crate) _type: PhantomData<fn(T) -> T>,
}

impl<K, T: Clone + StateValue, F: ReduceFunction<T> + 'static> WindowFunctionAdapter<K, T>
    for ReduceAdapter<T, F>
{
    type Acc = Option<T>;
    type Out = T;
    fn create(&self) -> Option<T> {
        None
    }
    fn add(&self, accumulator: Option<T>, value: T) -> Option<T> {
        Some(match accumulator {
            Some(current) => self.function.reduce(current, value),
            None => value,
        })
    }
    fn merge(&self, a: Option<T>, b: Option<T>) -> Option<T> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.function.reduce(a, b)),
            (a, b) => a.or(b),
        }
    }
    fn emit(
        &mut self,
        _key: &K,
        _context: &WindowContext,
        accumulator: &Option<T>,
        out: &mut Collector<'_, T>,
    ) -> Result<(), StreamError> {
        if let Some(value) = accumulator {
            out.collect(value.clone());
        }
        Ok(())
    }
}

/// An `AggregateFunction`, optionally followed by a function of (key, window, result)
/// (Flink's `aggregate(AggregateFunction, ProcessWindowFunction)`).
pub(crate) struct AggregateAdapter<A, W, O> {
    pub(crate) aggregate: A,
    pub(crate) window_function: W,
    pub(crate) _type: PhantomData<fn() -> O>,
}

impl<K, A, W, O> WindowFunctionAdapter<K, A::In> for AggregateAdapter<A, W, O>
where
    A: AggregateFunction,
    W: FnMut(&K, &WindowContext, A::Out) -> O + 'static,
    O: 'static,
{
    type Acc = A::Acc;
    type Out = O;
    fn create(&self) -> A::Acc {
        self.aggregate.create_accumulator()
    }
    fn add(&self, accumulator: A::Acc, value: A::In) -> A::Acc {
        self.aggregate.add(value, accumulator)
    }
    fn merge(&self, a: A::Acc, b: A::Acc) -> A::Acc {
        self.aggregate.merge(a, b)
    }
    fn emit(
        &mut self,
        key: &K,
        context: &WindowContext,
        accumulator: &A::Acc,
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        let result = self.aggregate.get_result(accumulator);
        out.collect((self.window_function)(key, context, result));
        Ok(())
    }
}

pub(crate) struct ProcessAdapter<P, O> {
    pub(crate) function: P,
    pub(crate) _type: PhantomData<fn() -> O>,
}

impl<K, T: StateValue, O: 'static, P: ProcessWindowFunction<K, T, O>> WindowFunctionAdapter<K, T>
    for ProcessAdapter<P, O>
{
    type Acc = Vec<T>;
    type Out = O;
    fn create(&self) -> Vec<T> {
        Vec::new()
    }
    fn add(&self, mut accumulator: Vec<T>, value: T) -> Vec<T> {
        accumulator.push(value);
        accumulator
    }
    fn merge(&self, mut a: Vec<T>, mut b: Vec<T>) -> Vec<T> {
        a.append(&mut b);
        a
    }
    fn emit(
        &mut self,
        key: &K,
        context: &WindowContext,
        accumulator: &Vec<T>,
        out: &mut Collector<'_, O>,
    ) -> Result<(), StreamError> {
        self.function.process(key, context, accumulator, out)
    }
}

/// A session after merging: its window and the contents of the windows merged into it.
type MergedSession<Acc> = (TimeWindow, Option<Acc>);

pub(crate) struct WindowOperator<K, T, F> {
    pub(crate) name: String,
    pub(crate) key_selector: Rc<dyn Fn(&T) -> K>,
    pub(crate) assigner: Box<dyn WindowAssigner>,
    pub(crate) allowed_lateness_ms: i64,
    pub(crate) late_data_port: Option<Port>,
    pub(crate) function: F,
    pub(crate) runtime: Option<WindowRuntime<K>>,
    pub(crate) num_late_records_dropped: u64,
}

/// What the operator creates when the job starts.
pub(crate) struct WindowRuntime<K> {
    store: KeyedStateStore<K>,
    contents: StateId,
    session_windows: StateId,
    timers: InternalTimerService<K>,
    clock: Rc<dyn Clock>,
    current_watermark: i64,
}

impl<K, T, F> WindowOperator<K, T, F>
where
    K: StateKey,
    T: Clone + 'static,
    F: WindowFunctionAdapter<K, T>,
{
    pub(crate) fn new(
        name: String,
        key_selector: Rc<dyn Fn(&T) -> K>,
        assigner: Box<dyn WindowAssigner>,
        allowed_lateness_ms: i64,
        late_data_port: Option<Port>,
        function: F,
    ) -> Self {
        Self {
            name,
            key_selector,
            assigner,
            allowed_lateness_ms,
            late_data_port,
            function,
            runtime: None,
            num_late_records_dropped: 0,
        }
    }

    fn runtime(&mut self) -> &mut WindowRuntime<K> {
        self.runtime
            .as_mut()
            .expect("the executor opens operators before use")
    }

    /// Flink's `cleanupTime`: max timestamp + allowed lateness for event time (saturating),
    /// max timestamp for processing time.
    fn cleanup_time(&self, window: &TimeWindow) -> i64 {
        if self.assigner.is_event_time() {
            window
                .max_timestamp()
                .saturating_add(self.allowed_lateness_ms)
        } else {
            window.max_timestamp()
        }
    }

    fn is_window_late(&self, window: &TimeWindow, watermark: i64) -> bool {
        self.assigner.is_event_time() && self.cleanup_time(window) <= watermark
    }

    /// Registers the cleanup timer and, unless the window fires right away, the trigger
    /// timer; returns whether the window must fire now (Flink's `EventTimeTrigger.onElement`
    /// returns FIRE without a timer when `max timestamp <= watermark`).
    fn register_timers(&mut self, key: &K, window: TimeWindow, watermark: i64) -> bool {
        let event_time = self.assigner.is_event_time();
        let cleanup_time = self.cleanup_time(&window);
        let runtime = self.runtime();
        let namespace = Namespace::Window(window);
        if !event_time {
            runtime.timers.register(
                TimeDomain::ProcessingTime,
                key,
                namespace,
                window.max_timestamp(),
            );
            return false;
        }
        runtime
            .timers
            .register(TimeDomain::EventTime, key, namespace, cleanup_time);
        if window.max_timestamp() <= watermark {
            return true;
        }
        runtime.timers.register(
            TimeDomain::EventTime,
            key,
            namespace,
            window.max_timestamp(),
        );
        false
    }

    fn delete_timers(&mut self, key: &K, window: TimeWindow) {
        let cleanup_time = self.cleanup_time(&window);
        let domain = if self.assigner.is_event_time() {
            TimeDomain::EventTime
        } else {
            TimeDomain::ProcessingTime
        };
        let runtime = self.runtime();
        let namespace = Namespace::Window(window);
        runtime
            .timers
            .delete(domain, key, namespace, window.max_timestamp());
        runtime.timers.delete(domain, key, namespace, cleanup_time);
    }

    /// Adds `value` to `window`'s contents; `merged_contents` are contents of windows merged
    /// into it.
    fn add_to_window(
        &mut self,
        window: TimeWindow,
        value: T,
        merged_contents: Option<F::Acc>,
    ) -> Result<(), StreamError> {
        let runtime = self
            .runtime
            .as_mut()
            .expect("the executor opens operators before use");
        let namespace = Namespace::Window(window);
        let existing = runtime.store.take::<F::Acc>(runtime.contents, namespace)?;
        let accumulator = match (existing, merged_contents) {
            (Some(a), Some(b)) => self.function.merge(a, b),
            (a, b) => a.or(b).unwrap_or_else(|| self.function.create()),
        };
        let accumulator = self.function.add(accumulator, value);
        runtime
            .store
            .put_value(runtime.contents, namespace, accumulator)?;
        Ok(())
    }

    /// Emits `window`'s contents, if any, stamped with its max timestamp.
    fn fire(&mut self, key: &K, window: TimeWindow, out: &mut Output) -> Result<(), StreamError> {
        let runtime = self
            .runtime
            .as_mut()
            .expect("the executor opens operators before use");
        let context = WindowContext {
            window,
            current_watermark: runtime.current_watermark,
            current_processing_time: runtime.clock.now_ms(),
        };
        let Some(accumulator) = runtime
            .store
            .get_mut::<F::Acc>(runtime.contents, Namespace::Window(window))?
        else {
            return Ok(());
        };
        let mut collector = Collector::new(&mut out.main, Some(window.max_timestamp()));
        self.function
            .emit(key, &context, accumulator, &mut collector)
    }

    fn clear_window(&mut self, window: TimeWindow) -> Result<(), StreamError> {
        let merging = self.assigner.is_merging();
        let runtime = self.runtime();
        runtime
            .store
            .remove_value(runtime.contents, Namespace::Window(window))?;
        if merging {
            let mut windows = runtime
                .store
                .take::<Vec<TimeWindow>>(runtime.session_windows, Namespace::Void)?
                .unwrap_or_default();
            windows.retain(|existing| *existing != window);
            if !windows.is_empty() {
                runtime
                    .store
                    .put_value(runtime.session_windows, Namespace::Void, windows)?;
            }
        }
        Ok(())
    }

    /// Puts `window` into the key's session set, merging what it intersects. Returns the
    /// resulting window and the merged contents, or `None` if the window is late.
    fn merge_session(
        &mut self,
        key: &K,
        window: TimeWindow,
        watermark: i64,
    ) -> Result<Option<MergedSession<F::Acc>>, StreamError> {
        let runtime = self.runtime();
        let windows = runtime
            .store
            .take::<Vec<TimeWindow>>(runtime.session_windows, Namespace::Void)?
            .unwrap_or_default();
        let (intersecting, mut rest): (Vec<TimeWindow>, Vec<TimeWindow>) = windows
            .into_iter()
            .partition(|existing| existing.intersects(&window));
        let merged = intersecting
            .iter()
            .fold(window, |cover, existing| cover.cover(existing));
        // Merging only grows windows and existing windows are not late, so only a window
        // that merged with nothing can be late.
        if self.is_window_late(&merged, watermark) {
            debug_assert!(intersecting.is_empty());
            rest.extend(intersecting);
            let runtime = self.runtime();
            if !rest.is_empty() {
                runtime
                    .store
                    .put_value(runtime.session_windows, Namespace::Void, rest)?;
            }
            return Ok(None);
        }
        let mut merged_contents: Option<F::Acc> = None;
        for existing in &intersecting {
            self.delete_timers(key, *existing);
            let runtime = self
                .runtime
                .as_mut()
                .expect("the executor opens operators before use");
            if let Some(contents) = runtime
                .store
                .take::<F::Acc>(runtime.contents, Namespace::Window(*existing))?
            {
                merged_contents = Some(match merged_contents {
                    Some(so_far) => self.function.merge(so_far, contents),
                    None => contents,
                });
            }
        }
        rest.push(merged);
        rest.sort();
        let runtime = self.runtime();
        runtime
            .store
            .put_value(runtime.session_windows, Namespace::Void, rest)?;
        Ok(Some((merged, merged_contents)))
    }

    fn on_event_time(
        &mut self,
        time: i64,
        key: K,
        window: TimeWindow,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        let merging = self.assigner.is_merging();
        let runtime = self.runtime();
        runtime.store.set_current_key(Some(key.clone()));
        if merging {
            let alive = runtime
                .store
                .get_mut::<Vec<TimeWindow>>(runtime.session_windows, Namespace::Void)?
                .is_some_and(|windows| windows.contains(&window));
            if !alive {
                return Ok(());
            }
        }
        if time == window.max_timestamp() {
            self.fire(&key, window, out)?;
        }
        if time == self.cleanup_time(&window) {
            self.clear_window(window)?;
        }
        Ok(())
    }
}

impl<K, T, F> Operator for WindowOperator<K, T, F>
where
    K: StateKey,
    T: Clone + 'static,
    F: WindowFunctionAdapter<K, T>,
{
    fn open(&mut self, setup: &OperatorSetup) -> Result<(), StreamError> {
        let mut store = KeyedStateStore::new(
            setup
                .state_backend
                .create::<K>(setup.max_parallelism, &setup.operator_id)?,
            setup.max_parallelism,
            setup.clock.clone(),
        );
        let contents = store.register_internal::<F::Acc>("window-contents")?;
        let session_windows = store.register_internal::<Vec<TimeWindow>>("session-windows")?;
        self.runtime = Some(WindowRuntime {
            store,
            contents,
            session_windows,
            timers: InternalTimerService::default(),
            clock: setup.clock.clone(),
            current_watermark: MIN_WATERMARK,
        });
        Ok(())
    }

    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        let value = unbox::<T>(value);
        let key = (self.key_selector)(&value);
        let event_time = self.assigner.is_event_time();
        let runtime = self.runtime();
        runtime.store.set_current_key(Some(key.clone()));
        let watermark = runtime.current_watermark;
        let element_time = if event_time {
            timestamp.ok_or_else(|| StreamError::MissingTimestamp {
                operator: self.name.clone(),
            })?
        } else {
            runtime.clock.now_ms()
        };
        let windows = self.assigner.assign_windows(element_time);
        let mut skipped = true;
        for window in windows {
            let (window, merged_contents) = if self.assigner.is_merging() {
                match self.merge_session(&key, window, watermark)? {
                    Some(merged) => merged,
                    None => continue,
                }
            } else {
                if self.is_window_late(&window, watermark) {
                    continue;
                }
                (window, None)
            };
            skipped = false;
            // One copy per window (a sliding window holds the element size/slide times);
            // the original stays for the late-data output.
            self.add_to_window(window, value.clone(), merged_contents)?;
            if self.register_timers(&key, window, watermark) {
                self.fire(&key, window, out)?;
            }
        }
        let element_late =
            event_time && element_time.saturating_add(self.allowed_lateness_ms) <= watermark;
        if skipped && element_late {
            match &self.late_data_port {
                Some(port) => out.side.push(Emitted {
                    port: port.clone(),
                    value: Box::new(value),
                    timestamp,
                }),
                None => self.num_late_records_dropped += 1,
            }
        }
        Ok(())
    }

    fn advance_watermark(&mut self, watermark: i64, out: &mut Output) -> Result<(), StreamError> {
        self.runtime().current_watermark = watermark;
        while let Some((time, key, namespace)) = self
            .runtime()
            .timers
            .pop_due(TimeDomain::EventTime, watermark)
        {
            let Namespace::Window(window) = namespace else {
                continue;
            };
            self.on_event_time(time, key, window, out)?;
        }
        Ok(())
    }

    fn advance_processing_time(
        &mut self,
        now_ms: i64,
        out: &mut Output,
    ) -> Result<(), StreamError> {
        while let Some((_, key, namespace)) = self
            .runtime()
            .timers
            .pop_due(TimeDomain::ProcessingTime, now_ms)
        {
            let Namespace::Window(window) = namespace else {
                continue;
            };
            self.runtime().store.set_current_key(Some(key.clone()));
            self.fire(&key, window, out)?;
            self.clear_window(window)?;
        }
        Ok(())
    }

    fn num_late_records_dropped(&self) -> u64 {
        self.num_late_records_dropped
    }

    fn snapshot_state(
        &mut self,
        _checkpoint_id: u64,
    ) -> Result<Option<KeyedStateSnapshot>, StreamError> {
        let runtime = self.runtime();
        let mut snapshot = runtime.store.snapshot()?;
        runtime
            .timers
            .snapshot_into(runtime.store.max_parallelism(), &mut snapshot)?;
        Ok(Some(snapshot))
    }

    fn restore_state(
        &mut self,
        snapshot: &KeyedStateSnapshot,
        key_groups: std::ops::Range<u32>,
    ) -> Result<(), StreamError> {
        let runtime = self.runtime();
        let max_parallelism = runtime.store.max_parallelism();
        runtime.store.restore(snapshot, key_groups.clone())?;
        runtime
            .timers
            .restore(snapshot, key_groups, max_parallelism)?;
        Ok(())
    }
}
