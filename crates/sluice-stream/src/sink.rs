//! Sinks: where a stream's records leave the job.
//!
//! `Sink` is the interface: Flink's `SinkWriter` with the checkpoint hooks of its
//! two-phase-commit sinks (`snapshot_state` pre-commits on the barrier,
//! `notify_checkpoint_complete` commits, `open` on a restart aborts what a failed attempt
//! left open). `CollectSink` keeps everything in memory, records and the watermarks between
//! them, so tests can assert not only what a job produced but when (which window fired
//! before which watermark). It has two delivery guarantees:
//! - `CollectSink::new()`: at-least-once. Writes are visible at once; after a restart from
//!   a checkpoint, what was written after that checkpoint is written again (duplicates).
//! - `CollectSink::exactly_once()`: writes go into a transaction per checkpoint, visible
//!   only when that checkpoint completes; a restart discards uncommitted transactions.
//!   The end of a bounded input commits everything (the role of Flink's final checkpoint).
//!
//! The Kafka sink with delivery guarantees is `kafka::KafkaSink`; it keeps its
//! pre-committed transaction in the checkpoint through `checkpoint_state` /
//! `restore_checkpoint_state` (stored as one cell of the sink node's snapshot).

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::checkpoint::{CellSnapshot, KeyGroupSnapshot, KeyedStateSnapshot};
use crate::error::StreamError;
use crate::operator::{Operator, OperatorSetup, Output, unbox};
use crate::state::Namespace;

/// Receives a stream's records.
pub trait Sink<T>: 'static {
    /// The job starts or restarts: drop what an earlier attempt left uncommitted.
    fn open(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError>;
    /// The sink's input watermark advanced.
    fn on_watermark(&mut self, _watermark: i64) -> Result<(), StreamError> {
        Ok(())
    }
    /// The barrier of `checkpoint_id` arrived: everything written since the previous
    /// barrier belongs to that checkpoint (pre-commit).
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<(), StreamError> {
        Ok(())
    }
    /// `checkpoint_id` is durable: commit what was pre-committed up to it.
    fn notify_checkpoint_complete(&mut self, _checkpoint_id: u64) -> Result<(), StreamError> {
        Ok(())
    }
    /// The input ended.
    fn finish(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    /// Called right after `snapshot_state`: what the sink needs in the checkpoint to
    /// finish its pre-commit after a crash (Flink's committables: a Kafka sink stores the
    /// transaction it pre-committed). `None`: nothing.
    fn checkpoint_state(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        Ok(None)
    }
    /// After `open`, before any record, when the job restores a checkpoint in which
    /// `checkpoint_state` returned `state`: commit what that checkpoint pre-committed.
    fn restore_checkpoint_state(&mut self, _state: &serde_json::Value) -> Result<(), StreamError> {
        Ok(())
    }
}

/// The name of the one cell a sink's `checkpoint_state` is stored in.
const SINK_STATE_NAME: &str = "sink";

/// What a `CollectSink` saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkEvent<T> {
    Record { value: T, timestamp: Option<i64> },
    Watermark(i64),
}

#[derive(Debug)]
struct Collected<T> {
    exactly_once: bool,
    committed: Vec<SinkEvent<T>>,
    /// Exactly-once: written since the last barrier.
    open_transaction: Vec<SinkEvent<T>>,
    /// Exactly-once: pre-committed at a barrier, waiting for its checkpoint to complete.
    pre_committed: BTreeMap<u64, Vec<SinkEvent<T>>>,
}

impl<T> Collected<T> {
    fn new(exactly_once: bool) -> Self {
        Self {
            exactly_once,
            committed: Vec::new(),
            open_transaction: Vec::new(),
            pre_committed: BTreeMap::new(),
        }
    }

    fn push(&mut self, event: SinkEvent<T>) {
        if self.exactly_once {
            self.open_transaction.push(event);
        } else {
            self.committed.push(event);
        }
    }
}

/// Collects records and watermarks in memory. Clones share the collection: keep one,
/// give another to `sink_to`. Readers see committed events only.
#[derive(Debug)]
pub struct CollectSink<T> {
    events: Rc<RefCell<Collected<T>>>,
}

impl<T> Clone for CollectSink<T> {
    fn clone(&self) -> Self {
        Self {
            events: self.events.clone(),
        }
    }
}

impl<T> Default for CollectSink<T> {
    fn default() -> Self {
        Self {
            events: Rc::new(RefCell::new(Collected::new(false))),
        }
    }
}

impl<T: Clone> CollectSink<T> {
    /// At-least-once: every write is visible at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// Exactly-once: writes become visible when the checkpoint after them completes (or
    /// the input ends).
    pub fn exactly_once() -> Self {
        Self {
            events: Rc::new(RefCell::new(Collected::new(true))),
        }
    }

    /// Committed records and watermarks in arrival order.
    pub fn events(&self) -> Vec<SinkEvent<T>> {
        self.events.borrow().committed.clone()
    }

    /// Committed records only, in arrival order.
    pub fn records(&self) -> Vec<T> {
        self.events
            .borrow()
            .committed
            .iter()
            .filter_map(|event| match event {
                SinkEvent::Record { value, .. } => Some(value.clone()),
                SinkEvent::Watermark(_) => None,
            })
            .collect()
    }

    /// Committed watermarks only, in arrival order.
    pub fn watermarks(&self) -> Vec<i64> {
        self.events
            .borrow()
            .committed
            .iter()
            .filter_map(|event| match event {
                SinkEvent::Watermark(watermark) => Some(*watermark),
                SinkEvent::Record { .. } => None,
            })
            .collect()
    }
}

impl<T: 'static> Sink<T> for CollectSink<T> {
    fn open(&mut self) -> Result<(), StreamError> {
        let mut events = self.events.borrow_mut();
        events.open_transaction.clear();
        events.pre_committed.clear();
        Ok(())
    }

    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError> {
        self.events
            .borrow_mut()
            .push(SinkEvent::Record { value, timestamp });
        Ok(())
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<(), StreamError> {
        self.events
            .borrow_mut()
            .push(SinkEvent::Watermark(watermark));
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let mut events = self.events.borrow_mut();
        if events.exactly_once {
            let transaction = std::mem::take(&mut events.open_transaction);
            events.pre_committed.insert(checkpoint_id, transaction);
        }
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let mut events = self.events.borrow_mut();
        let later = events.pre_committed.split_off(&(checkpoint_id + 1));
        let done = std::mem::replace(&mut events.pre_committed, later);
        for (_, mut transaction) in done {
            events.committed.append(&mut transaction);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), StreamError> {
        let mut events = self.events.borrow_mut();
        let done = std::mem::take(&mut events.pre_committed);
        for (_, mut transaction) in done {
            events.committed.append(&mut transaction);
        }
        let mut open = std::mem::take(&mut events.open_transaction);
        events.committed.append(&mut open);
        Ok(())
    }
}

pub(crate) struct SinkOperator<T, S> {
    pub(crate) sink: S,
    pub(crate) _type: PhantomData<fn(T)>,
}

impl<T: 'static, S: Sink<T>> Operator for SinkOperator<T, S> {
    fn open(&mut self, _setup: &OperatorSetup) -> Result<(), StreamError> {
        self.sink.open()
    }

    fn snapshot_state(
        &mut self,
        checkpoint_id: u64,
    ) -> Result<Option<KeyedStateSnapshot>, StreamError> {
        self.sink.snapshot_state(checkpoint_id)?;
        // A sink's state is not keyed: one cell in key group 0, which the single
        // instance of every operator owns.
        let Some(value) = self.sink.checkpoint_state()? else {
            return Ok(None);
        };
        let cell = CellSnapshot {
            key: serde_json::Value::Null,
            state: SINK_STATE_NAME.to_string(),
            namespace: Namespace::Void,
            value,
        };
        let mut snapshot = KeyedStateSnapshot::default();
        snapshot.key_groups.insert(
            0,
            KeyGroupSnapshot {
                cells: vec![cell],
                timers: Vec::new(),
            },
        );
        Ok(Some(snapshot))
    }

    fn restore_state(
        &mut self,
        snapshot: &KeyedStateSnapshot,
        _key_groups: std::ops::Range<u32>,
    ) -> Result<(), StreamError> {
        let cell = snapshot
            .key_groups
            .values()
            .flat_map(|group| group.cells.iter())
            .find(|cell| cell.state == SINK_STATE_NAME);
        match cell {
            Some(cell) => self.sink.restore_checkpoint_state(&cell.value),
            None => Ok(()),
        }
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.sink.notify_checkpoint_complete(checkpoint_id)
    }

    fn process_record(
        &mut self,
        _input: usize,
        value: Box<dyn Any>,
        timestamp: Option<i64>,
        _out: &mut Output,
    ) -> Result<(), StreamError> {
        self.sink.write(unbox::<T>(value), timestamp)
    }

    fn advance_watermark(&mut self, watermark: i64, _out: &mut Output) -> Result<(), StreamError> {
        self.sink.on_watermark(watermark)
    }

    fn finish(&mut self, _out: &mut Output) -> Result<(), StreamError> {
        self.sink.finish()
    }
}
