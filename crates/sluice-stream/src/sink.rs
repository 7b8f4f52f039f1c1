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
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use crate::checkpoint::{CellSnapshot, KeyGroupSnapshot, KeyedStateSnapshot};
use crate::error::StreamError;
use crate::operator::{Operator, OperatorSetup, Output, unbox};
use crate::state::Namespace;

/// Receives a stream's records.
pub trait Sink<T>: 'static {
    /// Before `open`: this instance's index among the sink's parallel instances and their
    /// number (0 and 1 on the single-threaded executor). A sink naming things per
    /// instance (a Kafka sink's transactional ids) keeps it.
    fn set_subtask(&mut self, _subtask: u32, _parallelism: u32) {}
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

/// What the clones of a `CollectSink` share: the committed events, and the
/// pre-committed transactions by id (the "external system" of this sink).
#[derive(Debug)]
struct Shared<T> {
    committed: Vec<SinkEvent<T>>,
    transactions: BTreeMap<u64, Vec<SinkEvent<T>>>,
    next_transaction: u64,
}

impl<T> Default for Shared<T> {
    fn default() -> Self {
        Self {
            committed: Vec::new(),
            transactions: BTreeMap::new(),
            next_transaction: 0,
        }
    }
}

impl<T> Shared<T> {
    /// Commits a pre-committed transaction; one committed (or never pre-committed)
    /// already is a no-op, so a restore may commit again what a notify committed.
    fn commit(&mut self, transaction: u64) {
        if let Some(events) = self.transactions.remove(&transaction) {
            self.committed.extend(events);
        }
    }
}

/// Collects records and watermarks in memory. Clones share what was committed (keep one,
/// give another to `sink_to`; with `execute_parallel` every task's instance is a clone)
/// and each keeps its own open transaction. Readers see committed events only.
///
/// Exactly-once as Flink's two-phase-commit sinks: at a barrier the open transaction is
/// pre-committed under an id kept in the shared store and named in the checkpoint
/// (`checkpoint_state`); `notify_checkpoint_complete` commits it, and so does a restore
/// from that checkpoint if the notify never ran (a failure between the checkpoint's
/// completion and the notify, which parallel tasks make possible).
#[derive(Debug)]
pub struct CollectSink<T> {
    shared: Arc<Mutex<Shared<T>>>,
    exactly_once: bool,
    /// Exactly-once: written since the last barrier.
    open_transaction: Vec<SinkEvent<T>>,
    /// Exactly-once: pre-committed transactions by checkpoint, waiting for it to complete.
    pre_committed: BTreeMap<u64, u64>,
}

impl<T> Clone for CollectSink<T> {
    fn clone(&self) -> Self {
        Self::sharing(self.shared.clone(), self.exactly_once)
    }
}

impl<T> Default for CollectSink<T> {
    fn default() -> Self {
        Self::sharing(Arc::default(), false)
    }
}

impl<T> CollectSink<T> {
    fn sharing(shared: Arc<Mutex<Shared<T>>>, exactly_once: bool) -> Self {
        Self {
            shared,
            exactly_once,
            open_transaction: Vec::new(),
            pre_committed: BTreeMap::new(),
        }
    }

    fn shared(&self) -> std::sync::MutexGuard<'_, Shared<T>> {
        // A panic elsewhere while holding the lock leaves complete events behind.
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&mut self, event: SinkEvent<T>) {
        if self.exactly_once {
            self.open_transaction.push(event);
        } else {
            self.shared().committed.push(event);
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
        Self::sharing(Arc::default(), true)
    }

    /// Committed records and watermarks in arrival order.
    pub fn events(&self) -> Vec<SinkEvent<T>> {
        self.shared().committed.clone()
    }

    /// Committed records only, in arrival order.
    pub fn records(&self) -> Vec<T> {
        self.shared()
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
        self.shared()
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
        // What an earlier attempt left open or pre-committed stays uncommitted unless a
        // restored checkpoint names it.
        self.open_transaction.clear();
        self.pre_committed.clear();
        Ok(())
    }

    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError> {
        self.push(SinkEvent::Record { value, timestamp });
        Ok(())
    }

    fn on_watermark(&mut self, watermark: i64) -> Result<(), StreamError> {
        self.push(SinkEvent::Watermark(watermark));
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        if self.exactly_once {
            let events = std::mem::take(&mut self.open_transaction);
            let mut shared = self.shared();
            let transaction = shared.next_transaction;
            shared.next_transaction += 1;
            shared.transactions.insert(transaction, events);
            drop(shared);
            self.pre_committed.insert(checkpoint_id, transaction);
        }
        Ok(())
    }

    fn checkpoint_state(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        if !self.exactly_once {
            return Ok(None);
        }
        // Every transaction not known to be committed: the checkpoint being taken covers
        // them all.
        let transactions: Vec<u64> = self.pre_committed.values().copied().collect();
        Ok(Some(serde_json::json!(transactions)))
    }

    fn restore_checkpoint_state(&mut self, state: &serde_json::Value) -> Result<(), StreamError> {
        let transactions: Vec<u64> = serde_json::from_value(state.clone()).map_err(|error| {
            StreamError::Checkpoint(format!("collect sink state {state}: {error}"))
        })?;
        let mut shared = self.shared();
        for transaction in transactions {
            shared.commit(transaction);
        }
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let later = self.pre_committed.split_off(&(checkpoint_id + 1));
        let done = std::mem::replace(&mut self.pre_committed, later);
        let mut shared = self.shared();
        for (_, transaction) in done {
            shared.commit(transaction);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), StreamError> {
        let done = std::mem::take(&mut self.pre_committed);
        let open = std::mem::take(&mut self.open_transaction);
        let mut shared = self.shared();
        for (_, transaction) in done {
            shared.commit(transaction);
        }
        shared.committed.extend(open);
        Ok(())
    }
}

pub(crate) struct SinkOperator<T, S> {
    pub(crate) sink: S,
    /// Where the sink's state goes in a snapshot: the first key group this instance owns,
    /// so parallel instances do not collide and a rescaled job hands each state to the
    /// instance whose range holds it.
    pub(crate) state_key_group: u32,
    pub(crate) _type: PhantomData<fn(T)>,
}

impl<T: 'static, S: Sink<T>> Operator for SinkOperator<T, S> {
    fn open(&mut self, setup: &OperatorSetup) -> Result<(), StreamError> {
        self.state_key_group = setup.key_groups.start;
        self.sink.set_subtask(setup.subtask, setup.parallelism);
        self.sink.open()
    }

    fn commits_on_finish(&self) -> bool {
        true
    }

    fn snapshot_state(
        &mut self,
        checkpoint_id: u64,
    ) -> Result<Option<KeyedStateSnapshot>, StreamError> {
        self.sink.snapshot_state(checkpoint_id)?;
        // A sink's state is not keyed: one cell in the first key group the instance owns.
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
            self.state_key_group,
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
        key_groups: std::ops::Range<u32>,
    ) -> Result<(), StreamError> {
        // Every sink state in this instance's range: after a rescale, one instance may
        // take over the pending transactions of several.
        let cells = snapshot
            .key_groups
            .range(key_groups)
            .flat_map(|(_, group)| group.cells.iter())
            .filter(|cell| cell.state == SINK_STATE_NAME);
        for cell in cells {
            self.sink.restore_checkpoint_state(&cell.value)?;
        }
        Ok(())
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
