//! The operator running a `KeyedProcessFunction` (Flink's `KeyedProcessOperator`).
//!
//! For each record it sets the current key (so state handles address that key's cells),
//! then calls `process_element` with a `Context` (key, record timestamp, timer service,
//! side outputs). When the watermark or the clock advances it pops due timers in timestamp
//! order and calls `on_timer` with the timer's key set. Outputs of `process_element` carry
//! the record's timestamp; outputs of an event-time timer carry the timer's timestamp and
//! those of a processing-time timer none, as in Flink. Outside those calls there is no
//! current key, so a handle used elsewhere fails with `NoKeyContext`.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::checkpoint::KeyedStateSnapshot;
use crate::error::StreamError;
use crate::functions::{Collector, Context, KeyedProcessFunction, TimeDomain};
use crate::operator::{Operator, OperatorSetup, Output, unbox};
use crate::state::{KeyedStateStore, RuntimeContext, StateKey};
use crate::time::{Clock, MIN_WATERMARK};
use crate::timer::InternalTimerService;

pub(crate) struct KeyedProcessOperator<K, I, O, F> {
    pub(crate) key_selector: Rc<dyn Fn(&I) -> K>,
    pub(crate) function: F,
    pub(crate) runtime: Option<ProcessRuntime<K>>,
    pub(crate) _types: PhantomData<fn(I) -> O>,
}

pub(crate) struct ProcessRuntime<K> {
    store: Rc<RefCell<KeyedStateStore<K>>>,
    timers: InternalTimerService<K>,
    clock: Rc<dyn Clock>,
    current_watermark: i64,
}

impl<K, I, O, F> KeyedProcessOperator<K, I, O, F>
where
    K: StateKey,
    I: 'static,
    O: 'static,
    F: KeyedProcessFunction<K, I, O>,
{
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

impl<K, I, O, F> Operator for KeyedProcessOperator<K, I, O, F>
where
    K: StateKey,
    I: 'static,
    O: 'static,
    F: KeyedProcessFunction<K, I, O>,
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
        self.runtime = Some(ProcessRuntime {
            store,
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
        let value = unbox::<I>(value);
        let key = (self.key_selector)(&value);
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
        let result = self
            .function
            .process_element(value, &mut context, &mut collector);
        runtime.store.borrow_mut().set_current_key(None);
        result
    }

    fn advance_watermark(&mut self, watermark: i64, out: &mut Output) -> Result<(), StreamError> {
        if let Some(runtime) = self.runtime.as_mut() {
            runtime.current_watermark = watermark;
        }
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
        let runtime = self
            .runtime
            .as_ref()
            .expect("the executor opens operators before use");
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
        let runtime = self
            .runtime
            .as_mut()
            .expect("the executor opens operators before use");
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
