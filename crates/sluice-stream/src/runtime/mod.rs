//! The parallel runtime: a job's operators as tasks on worker threads, joined by bounded
//! channels.
//!
//! What it is: the first slice of issue 10's runtime, next to (not instead of) the
//! deterministic single-threaded `executor`, which stays the default for
//! `StreamExecutionEnvironment::execute`. A `ParallelStream` is a linear pipeline
//! (source → stages → collecting sink) run with `parallelism` tasks per stage, each task
//! a std thread with its own operator instance built by a factory:
//! - edges are `std::sync::mpsc::sync_channel`s of `channel_capacity` messages, one per
//!   (upstream task, downstream task) pair, so a slow task fills its input channels and
//!   blocks its producers, and backpressure reaches the sources;
//! - partitioning is forward (task i → task i; every stage has the same parallelism),
//!   rebalance (round robin) or by key group
//!   after `key_by` (record → `assign_to_key_group` → `operator_index_for_key_group`, the
//!   inverse of `key_group_range_for_operator`);
//! - watermarks are broadcast to every downstream channel and combined per task by a
//!   `StatusWatermarkValve` (minimum over its input channels); a source task's watermark
//!   is the minimum over its splits' bounded-out-of-orderness watermarks (Flink's
//!   per-split watermarks); end of input is a final `i64::MAX` watermark, then `End`;
//! - checkpoints: every source task injects barrier `n` after each
//!   `checkpoint_every_records` records it emitted (a record count rather than a timer,
//!   so tests are deterministic), reporting its split offsets; an operator task blocks
//!   each input channel after its barrier until every live channel delivered it (aligned
//!   checkpoints; an ended channel counts as aligned), snapshots its state per key group
//!   and forwards the barrier; the last stage pre-commits the records it produced since
//!   the previous barrier. The coordinator (the calling thread) completes a checkpoint
//!   when every task acknowledged it (a finished source acknowledges with its final
//!   offsets), stores it in the `ParallelCheckpointStore` and commits the pre-committed
//!   records to the `ParallelSink`: exactly-once output across restarts;
//! - restore with another parallelism: source task i of p takes the splits s with
//!   `s % p == i` at their checkpointed offsets; operator task i takes the key groups of
//!   `key_group_range_for_operator(max_parallelism, p, i)`.
//!
//! What it is not (yet): reachable from the `DataStream` API (whose operators hold
//! non-`Send` user functions and `Rc` state; moving them here means factories of
//! `Clone + Send` functions); a general DAG (one input edge per stage, so no union or
//! joins); time-triggered checkpoints, timeouts or concurrent-checkpoint bounds; durable
//! checkpoint storage (the store is in memory); a restart strategy (a failed `execute`
//! returns the first task's error; executing the job again restores the latest
//! checkpoint); idleness; processing time. Operators: `map` and keyed tumbling
//! event-time windows with `reduce`. A task waiting for input wakes every
//! `PEER_CHECK_INTERVAL` to notice a failed peer, so a failure never hangs the job.
//!
//! Bounds: `parallelism` ≤ `PARALLELISM_MAX` (threads = parallelism × (stages + 1));
//! channel memory ≤ parallelism² × stages × `channel_capacity` messages; beyond its
//! channels a task holds what one operator call emitted (one record for `map`, every
//! window a watermark fires for the window stage). Checkpoints in flight are bounded by
//! the barriers that fit in the channels (sources inject them without waiting for
//! completion: no `max_concurrent_checkpoints` yet), and the coordinator receives one
//! report per task per checkpoint plus one at the end. The last stage holds its output
//! from one barrier to the next (the exactly-once sink's open transaction), so that
//! buffer is bounded by the checkpoint interval, and without checkpoints by the job's
//! output. Cost per record per edge: one boxed record moved through a channel (a mutex
//! and possibly a wake-up), no copies; not benchmarked yet.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{StateError, StreamError};
use crate::key_group::{
    DEFAULT_MAX_PARALLELISM, UPPER_BOUND_MAX_PARALLELISM, assign_to_key_group,
    key_group_range_for_operator, operator_index_for_key_group,
};
use crate::valve::{StatusWatermarkValve, ValveOutput};
use crate::window::window_start;

#[cfg(test)]
mod tests;

/// The most tasks per stage (each is a thread).
pub const PARALLELISM_MAX: u32 = 256;
/// Messages buffered per channel by default (Flink's buffers per channel, in records).
pub const CHANNEL_CAPACITY_DEFAULT: usize = 64;

/// How often an idle task checks its input channels for a failed producer.
const PEER_CHECK_INTERVAL: Duration = Duration::from_millis(20);

type Record = Box<dyn Any + Send>;
type Emitted = Vec<(Record, Option<i64>)>;
type KeyGroupState = BTreeMap<u32, serde_json::Value>;

/// How a parallel job runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParallelConfig {
    /// Tasks per stage (sources included).
    pub parallelism: u32,
    /// Key groups; fixed for the lifetime of the job's state.
    pub max_parallelism: u32,
    /// Messages (records, watermarks, barriers) per channel before the sender blocks.
    pub channel_capacity: usize,
    /// Each source task injects a barrier after this many of its records (`None`: no
    /// checkpoints).
    pub checkpoint_every_records: Option<u64>,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        Self {
            parallelism: 1,
            max_parallelism: DEFAULT_MAX_PARALLELISM,
            channel_capacity: CHANNEL_CAPACITY_DEFAULT,
            checkpoint_every_records: None,
        }
    }
}

impl ParallelConfig {
    fn validate(&self) -> Result<(), StreamError> {
        let invalid = |message: String| Err(StreamError::InvalidConfiguration(message));
        if !(1..=UPPER_BOUND_MAX_PARALLELISM).contains(&self.max_parallelism) {
            return invalid(format!(
                "max_parallelism must be in 1..={UPPER_BOUND_MAX_PARALLELISM}, got {}",
                self.max_parallelism
            ));
        }
        if self.parallelism == 0
            || self.parallelism > PARALLELISM_MAX
            || self.parallelism > self.max_parallelism
        {
            return invalid(format!(
                "parallelism must be in 1..={} (and at most max_parallelism {}), got {}",
                PARALLELISM_MAX, self.max_parallelism, self.parallelism
            ));
        }
        if self.channel_capacity == 0 {
            return invalid("channel_capacity must be positive".into());
        }
        if self.checkpoint_every_records == Some(0) {
            return invalid("checkpoint_every_records must be positive".into());
        }
        Ok(())
    }
}

/// A completed checkpoint of a parallel job: independent of the parallelism that took it.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelCheckpoint {
    pub checkpoint_id: u64,
    pub max_parallelism: u32,
    /// Offset of every source split.
    pub split_offsets: BTreeMap<usize, usize>,
    /// Per stage (after the source), its state by key group.
    pub stage_states: Vec<BTreeMap<u32, serde_json::Value>>,
}

/// Where a parallel job keeps its latest completed checkpoint (in memory; clones share).
#[derive(Debug, Clone, Default)]
pub struct ParallelCheckpointStore {
    latest: Arc<Mutex<Option<ParallelCheckpoint>>>,
}

impl ParallelCheckpointStore {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn latest(&self) -> Option<ParallelCheckpoint> {
        self.latest
            .lock()
            .expect("no task panics holding it")
            .clone()
    }
    fn store(&self, checkpoint: ParallelCheckpoint) {
        *self.latest.lock().expect("no task panics holding it") = Some(checkpoint);
    }
}

/// The committed output of a parallel job (clones share): records of completed
/// checkpoints, and at the end of input the rest.
#[derive(Debug)]
pub struct ParallelSink<T> {
    records: Arc<Mutex<Vec<T>>>,
}

impl<T> Clone for ParallelSink<T> {
    fn clone(&self) -> Self {
        Self {
            records: self.records.clone(),
        }
    }
}

impl<T> Default for ParallelSink<T> {
    fn default() -> Self {
        Self {
            records: Arc::default(),
        }
    }
}

impl<T: Clone> ParallelSink<T> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn records(&self) -> Vec<T> {
        self.records
            .lock()
            .expect("no task panics holding it")
            .clone()
    }
}

/// What a finished parallel job reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParallelJobResult {
    pub num_completed_checkpoints: u64,
    pub restored_checkpoint_id: Option<u64>,
    pub num_late_records_dropped: u64,
}

/// An operator as a task runs it: records and watermarks in, records out, state by key
/// group.
trait TaskOperator: Send {
    /// Before anything else: the key groups this task owns (every group for a task that
    /// is not keyed).
    fn open(&mut self, _key_groups: Range<u32>) {}
    fn process_record(
        &mut self,
        record: Record,
        timestamp: Option<i64>,
        out: &mut Emitted,
    ) -> Result<(), StreamError>;
    fn advance_watermark(
        &mut self,
        _watermark: i64,
        _out: &mut Emitted,
    ) -> Result<(), StreamError> {
        Ok(())
    }
    fn snapshot_key_groups(&self) -> Result<KeyGroupState, StreamError> {
        Ok(KeyGroupState::new())
    }
    /// Called before any record with the checkpoint's groups of this task's range.
    fn restore_key_groups(&mut self, _groups: KeyGroupState) -> Result<(), StreamError> {
        Ok(())
    }
    fn num_late_records_dropped(&self) -> u64 {
        0
    }
}

type OperatorFactory = Arc<dyn Fn() -> Box<dyn TaskOperator> + Send + Sync>;
/// The key group of a record, given max_parallelism.
type KeyGroupOf = Arc<dyn Fn(&(dyn Any + Send), u32) -> u32 + Send + Sync>;
/// The record at (split, offset), or `None` past the split's end.
type SplitReader = Arc<dyn Fn(usize, usize) -> Option<(Record, i64)> + Send + Sync>;

#[derive(Clone)]
enum Partitioning {
    Forward,
    Rebalance,
    KeyGroups(KeyGroupOf),
}

struct Stage {
    partitioning: Partitioning,
    factory: OperatorFactory,
}

struct SourceSpec {
    split_count: usize,
    reader: SplitReader,
    out_of_orderness_ms: i64,
}

struct JobSpec {
    config: ParallelConfig,
    source: SourceSpec,
    stages: Vec<Stage>,
    next_partitioning: Partitioning,
    source_records_emitted: Arc<AtomicU64>,
    cancel_after_checkpoint: Option<u64>,
}

/// A typed stream of a parallel job (a linear pipeline under construction).
pub struct ParallelStream<T> {
    job: JobSpec,
    _type: PhantomData<fn() -> T>,
}

/// A stream partitioned by key group.
pub struct KeyedParallelStream<T, K> {
    stream: ParallelStream<T>,
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
}

impl<T: Send + 'static> ParallelStream<T> {
    /// A source of `splits` (each `(record, event timestamp)` in order of reading) with
    /// bounded out-of-orderness watermarks per split (max timestamp − bound − 1 ms).
    pub fn from_splits(
        config: ParallelConfig,
        splits: Vec<Vec<(T, i64)>>,
        out_of_orderness: Duration,
    ) -> Self
    where
        T: Clone + Sync,
    {
        let split_count = splits.len();
        let splits = Arc::new(splits);
        let reader: SplitReader = Arc::new(move |split, offset| {
            let (record, timestamp) = splits.get(split)?.get(offset)?;
            Some((Box::new(record.clone()) as Record, *timestamp))
        });
        Self {
            job: JobSpec {
                config,
                source: SourceSpec {
                    split_count,
                    reader,
                    out_of_orderness_ms: crate::time::duration_ms(out_of_orderness),
                },
                stages: Vec::new(),
                next_partitioning: Partitioning::Forward,
                source_records_emitted: Arc::default(),
                cancel_after_checkpoint: None,
            },
            _type: PhantomData,
        }
    }

    /// Records the source tasks emitted so far (all attempts share it).
    pub fn source_records_emitted(&self) -> Arc<AtomicU64> {
        self.job.source_records_emitted.clone()
    }

    /// Fault injection for tests: the sources fail once checkpoint `checkpoint_id` has
    /// completed, as a crash would.
    #[cfg(test)]
    pub(crate) fn cancel_after_checkpoint(mut self, checkpoint_id: u64) -> Self {
        self.job.cancel_after_checkpoint = Some(checkpoint_id);
        self
    }

    /// The next stage reads round robin from every task of this one.
    pub fn rebalance(mut self) -> Self {
        self.job.next_partitioning = Partitioning::Rebalance;
        self
    }

    pub fn map<U: Send + 'static>(
        self,
        function: impl Fn(T) -> U + Send + Sync + 'static,
    ) -> ParallelStream<U> {
        let function = Arc::new(function);
        self.add_stage(Arc::new(move || {
            Box::new(MapTask {
                function: function.clone(),
            })
        }))
    }

    pub fn key_by<K: Hash + 'static>(
        self,
        key: impl Fn(&T) -> K + Send + Sync + 'static,
    ) -> KeyedParallelStream<T, K> {
        KeyedParallelStream {
            stream: self,
            key: Arc::new(key),
        }
    }

    fn add_stage<U>(mut self, factory: OperatorFactory) -> ParallelStream<U> {
        let partitioning =
            std::mem::replace(&mut self.job.next_partitioning, Partitioning::Forward);
        self.job.stages.push(Stage {
            partitioning,
            factory,
        });
        ParallelStream {
            job: self.job,
            _type: PhantomData,
        }
    }

    /// Runs the job to the end of its input, starting from the store's latest checkpoint
    /// if there is one; committed records go to `sink`.
    pub fn execute(
        self,
        sink: &ParallelSink<T>,
        store: &ParallelCheckpointStore,
    ) -> Result<ParallelJobResult, StreamError> {
        let records = sink.records.clone();
        let mut commit = move |batch: Vec<Record>| {
            let mut records = records.lock().expect("no task panics holding it");
            records.extend(batch.into_iter().map(|record| {
                *record
                    .downcast::<T>()
                    .expect("the typed API ends the pipeline in records of T")
            }));
        };
        run(self.job, store, &mut commit)
    }
}

impl<T, K> KeyedParallelStream<T, K>
where
    T: Send + Serialize + DeserializeOwned + 'static,
    K: Hash + Eq + Send + 'static,
{
    /// Tumbling event-time windows of `size`, reduced incrementally; each fires when the
    /// watermark reaches its end − 1 and emits the reduced record with timestamp end − 1.
    pub fn tumbling_window_reduce(
        self,
        size: Duration,
        reduce: impl Fn(T, T) -> T + Send + Sync + 'static,
    ) -> ParallelStream<T> {
        let size_ms = crate::time::duration_ms(size);
        let key = self.key.clone();
        let reduce = Arc::new(reduce);
        let key_for_routing = self.key.clone();
        let mut stream = self.stream;
        stream.job.next_partitioning = Partitioning::KeyGroups(Arc::new(
            move |record: &(dyn Any + Send), max_parallelism| {
                let record = record
                    .downcast_ref::<T>()
                    .expect("the typed API routes records of T");
                assign_to_key_group(&key_for_routing(record), max_parallelism)
            },
        ));
        let max_parallelism = stream.job.config.max_parallelism;
        stream.add_stage(Arc::new(move || {
            Box::new(TumblingReduceTask {
                key: key.clone(),
                reduce: reduce.clone(),
                size_ms,
                max_parallelism,
                key_groups: 0..max_parallelism,
                windows: BTreeMap::new(),
                watermark: i64::MIN,
                num_late_records_dropped: 0,
            })
        }))
    }
}

struct MapTask<T, U> {
    function: Arc<dyn Fn(T) -> U + Send + Sync>,
}

impl<T: 'static, U: Send + 'static> TaskOperator for MapTask<T, U> {
    fn process_record(
        &mut self,
        record: Record,
        timestamp: Option<i64>,
        out: &mut Emitted,
    ) -> Result<(), StreamError> {
        let record = *record
            .downcast::<T>()
            .expect("the typed API connects stages of matching types");
        out.push((Box::new((self.function)(record)), timestamp));
        Ok(())
    }
}

/// One task's windows: window start → key → (key group, reduced record). Ordered by
/// start so a watermark fires a prefix.
struct TumblingReduceTask<T, K> {
    key: Arc<dyn Fn(&T) -> K + Send + Sync>,
    reduce: Arc<dyn Fn(T, T) -> T + Send + Sync>,
    size_ms: i64,
    max_parallelism: u32,
    key_groups: Range<u32>,
    windows: BTreeMap<i64, HashMap<K, (u32, T)>>,
    watermark: i64,
    num_late_records_dropped: u64,
}

impl<T, K> TaskOperator for TumblingReduceTask<T, K>
where
    T: Send + Serialize + DeserializeOwned + 'static,
    K: Hash + Eq + Send + 'static,
{
    fn open(&mut self, key_groups: Range<u32>) {
        self.key_groups = key_groups;
    }

    fn process_record(
        &mut self,
        record: Record,
        timestamp: Option<i64>,
        _out: &mut Emitted,
    ) -> Result<(), StreamError> {
        let Some(timestamp) = timestamp else {
            return Err(StreamError::MissingTimestamp {
                operator: "Window(Reduce)".into(),
            });
        };
        let record = *record
            .downcast::<T>()
            .expect("the typed API connects stages of matching types");
        let start = window_start(timestamp, 0, self.size_ms);
        if window_max_timestamp(start, self.size_ms) <= self.watermark {
            self.num_late_records_dropped += 1;
            return Ok(());
        }
        let key = (self.key)(&record);
        let window = self.windows.entry(start).or_default();
        let merged = match window.remove(&key) {
            Some((key_group, accumulated)) => (key_group, (self.reduce)(accumulated, record)),
            None => (assign_to_key_group(&key, self.max_parallelism), record),
        };
        // The sender routed by the same function: check the receiving end too.
        debug_assert!(
            self.key_groups.contains(&merged.0),
            "key group {} routed to the task owning {:?}",
            merged.0,
            self.key_groups
        );
        window.insert(key, merged);
        Ok(())
    }

    fn advance_watermark(&mut self, watermark: i64, out: &mut Emitted) -> Result<(), StreamError> {
        self.watermark = watermark;
        while let Some(entry) = self.windows.first_entry() {
            let end_inclusive = window_max_timestamp(*entry.key(), self.size_ms);
            if end_inclusive > watermark {
                break;
            }
            for (_, (_, record)) in entry.remove() {
                out.push((Box::new(record), Some(end_inclusive)));
            }
        }
        Ok(())
    }

    fn snapshot_key_groups(&self) -> Result<KeyGroupState, StreamError> {
        let mut groups: BTreeMap<u32, Vec<(i64, &T)>> = BTreeMap::new();
        for (start, window) in &self.windows {
            for (key_group, record) in window.values() {
                groups.entry(*key_group).or_default().push((*start, record));
            }
        }
        groups
            .into_iter()
            .map(|(key_group, entries)| {
                let value = serde_json::to_value(entries)
                    .map_err(|error| StreamError::Checkpoint(error.to_string()))?;
                Ok((key_group, value))
            })
            .collect()
    }

    fn restore_key_groups(&mut self, groups: KeyGroupState) -> Result<(), StreamError> {
        for (key_group, value) in groups {
            let entries: Vec<(i64, T)> = serde_json::from_value(value)
                .map_err(|error| StreamError::Checkpoint(error.to_string()))?;
            for (start, record) in entries {
                let key = (self.key)(&record);
                let actual = assign_to_key_group(&key, self.max_parallelism);
                if actual != key_group {
                    return Err(StateError::KeyGroupMismatch {
                        state: "Window(Reduce)".into(),
                        expected: key_group,
                        actual,
                    }
                    .into());
                }
                debug_assert!(
                    self.key_groups.contains(&key_group),
                    "only the task's own key groups are restored"
                );
                self.windows
                    .entry(start)
                    .or_default()
                    .insert(key, (key_group, record));
            }
        }
        Ok(())
    }

    fn num_late_records_dropped(&self) -> u64 {
        self.num_late_records_dropped
    }
}

/// A window's last timestamp (end − 1), saturating at the end of time.
fn window_max_timestamp(start: i64, size_ms: i64) -> i64 {
    start.saturating_add(size_ms).saturating_sub(1)
}

/// What flows along a channel.
enum Message {
    Record(Record, Option<i64>),
    Watermark(i64),
    Barrier(u64),
    End,
}

/// A task's input channels (one per upstream task) and the doorbell its producers ring.
type TaskInputs = (Vec<Receiver<Message>>, Receiver<()>);

/// What tasks tell the coordinator.
enum Report {
    /// A source task injected the barrier (with its split offsets), or an operator task
    /// aligned and snapshotted it (with its state and, in the last stage, the records it
    /// produced since the previous barrier).
    Acknowledge {
        checkpoint_id: u64,
        stage: usize,
        task: usize,
        split_offsets: Vec<(usize, usize)>,
        state: KeyGroupState,
        output: Vec<Record>,
    },
    /// The task reached the end of its input.
    Finished {
        stage: usize,
        task: usize,
        split_offsets: Vec<(usize, usize)>,
        output: Vec<Record>,
        num_late_records_dropped: u64,
    },
}

/// Why a task stopped early.
enum TaskExit {
    Failed(StreamError),
    /// A peer task stopped (its channel closed): a consequence, not a cause.
    PeerGone,
}

impl From<StreamError> for TaskExit {
    fn from(error: StreamError) -> Self {
        Self::Failed(error)
    }
}

/// A task's outgoing edge: one channel per downstream task, or (last stage) the records
/// held for the next checkpoint's pre-commit.
struct TaskOutput {
    task: usize,
    channels: Vec<SyncSender<Message>>,
    doorbells: Vec<SyncSender<()>>,
    partitioning: Partitioning,
    max_parallelism: u32,
    next_rebalance: usize,
    held: Vec<Record>,
}

impl TaskOutput {
    fn send(&self, target: usize, message: Message) -> Result<(), TaskExit> {
        self.channels[target]
            .send(message)
            .map_err(|_| TaskExit::PeerGone)?;
        // Full: a wake-up is already pending; closed: the next send reports it.
        let _ = self.doorbells[target].try_send(());
        Ok(())
    }

    fn record(&mut self, record: Record, timestamp: Option<i64>) -> Result<(), TaskExit> {
        if self.channels.is_empty() {
            self.held.push(record);
            return Ok(());
        }
        let target = match &self.partitioning {
            Partitioning::Forward => self.task,
            Partitioning::Rebalance => {
                self.next_rebalance = (self.next_rebalance + 1) % self.channels.len();
                self.next_rebalance
            }
            Partitioning::KeyGroups(key_group_of) => {
                let key_group = key_group_of(record.as_ref(), self.max_parallelism);
                operator_index_for_key_group(
                    key_group,
                    self.channels.len() as u32,
                    self.max_parallelism,
                ) as usize
            }
        };
        self.send(target, Message::Record(record, timestamp))
    }

    fn broadcast(&self, message: impl Fn() -> Message) -> Result<(), TaskExit> {
        for target in 0..self.channels.len() {
            self.send(target, message())?;
        }
        Ok(())
    }

    fn emit(&mut self, emitted: &mut Emitted) -> Result<(), TaskExit> {
        for (record, timestamp) in emitted.drain(..) {
            self.record(record, timestamp)?;
        }
        Ok(())
    }
}

struct SourceTask {
    reader: SplitReader,
    out_of_orderness_ms: i64,
    /// (split, next offset, max timestamp so far, finished).
    splits: Vec<(usize, usize, i64, bool)>,
    checkpoint_every_records: Option<u64>,
    next_checkpoint_id: u64,
    records_emitted: Arc<AtomicU64>,
    cancel: Arc<AtomicBool>,
    reports: Sender<Report>,
    output: TaskOutput,
}

impl SourceTask {
    fn split_offsets(&self) -> Vec<(usize, usize)> {
        self.splits
            .iter()
            .map(|(split, offset, _, _)| (*split, *offset))
            .collect()
    }

    /// Minimum over unfinished splits of max timestamp − bound − 1.
    fn watermark(&self) -> Option<i64> {
        self.splits
            .iter()
            .filter(|(_, _, _, finished)| !finished)
            .map(|(_, _, max_timestamp, _)| {
                max_timestamp
                    .saturating_sub(self.out_of_orderness_ms)
                    .saturating_sub(1)
            })
            .min()
    }

    fn run(mut self) -> Result<(), TaskExit> {
        let mut last_watermark = i64::MIN;
        let mut records_since_barrier = 0_u64;
        let mut next_split = 0;
        while self.splits.iter().any(|(_, _, _, finished)| !finished) {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(TaskExit::Failed(StreamError::Function(
                    "job cancelled by fault injection".into(),
                )));
            }
            next_split = (next_split + 1) % self.splits.len();
            let (split, offset, max_timestamp, finished) = &mut self.splits[next_split];
            if *finished {
                continue;
            }
            let Some((record, timestamp)) = (self.reader)(*split, *offset) else {
                *finished = true;
                continue;
            };
            *offset += 1;
            *max_timestamp = (*max_timestamp).max(timestamp);
            self.output.record(record, Some(timestamp))?;
            self.records_emitted.fetch_add(1, Ordering::Relaxed);
            records_since_barrier += 1;
            if let Some(watermark) = self.watermark().filter(|w| *w > last_watermark) {
                last_watermark = watermark;
                self.output.broadcast(|| Message::Watermark(watermark))?;
            }
            if self
                .checkpoint_every_records
                .is_some_and(|every| records_since_barrier >= every)
            {
                records_since_barrier = 0;
                let checkpoint_id = self.next_checkpoint_id;
                self.next_checkpoint_id += 1;
                self.reports
                    .send(Report::Acknowledge {
                        checkpoint_id,
                        stage: 0,
                        task: self.output.task,
                        split_offsets: self.split_offsets(),
                        state: KeyGroupState::new(),
                        output: Vec::new(),
                    })
                    .map_err(|_| TaskExit::PeerGone)?;
                self.output.broadcast(|| Message::Barrier(checkpoint_id))?;
            }
        }
        self.output.broadcast(|| Message::Watermark(i64::MAX))?;
        self.output.broadcast(|| Message::End)?;
        self.reports
            .send(Report::Finished {
                stage: 0,
                task: self.output.task,
                split_offsets: self.split_offsets(),
                output: Vec::new(),
                num_late_records_dropped: 0,
            })
            .map_err(|_| TaskExit::PeerGone)
    }
}

struct OperatorTask {
    stage: usize,
    operator: Box<dyn TaskOperator>,
    inputs: Vec<Receiver<Message>>,
    doorbell: Receiver<()>,
    reports: Sender<Report>,
    output: TaskOutput,
}

/// Barrier alignment of one task: the checkpoint being aligned and the channels blocked
/// after delivering its barrier.
struct Alignment {
    checkpoint_id: Option<u64>,
    blocked: Vec<bool>,
    ended: Vec<bool>,
}

impl OperatorTask {
    fn run(mut self) -> Result<(), TaskExit> {
        let channel_count = self.inputs.len();
        let mut valve = StatusWatermarkValve::new(channel_count);
        let mut alignment = Alignment {
            checkpoint_id: None,
            blocked: vec![false; channel_count],
            ended: vec![false; channel_count],
        };
        let mut emitted = Emitted::new();
        let mut decisions = Vec::new();
        while !alignment.ended.iter().all(|ended| *ended) {
            let mut progressed = false;
            for channel in 0..channel_count {
                if alignment.blocked[channel] || alignment.ended[channel] {
                    continue;
                }
                let message = match self.inputs[channel].try_recv() {
                    Ok(message) => message,
                    Err(TryRecvError::Empty) => continue,
                    Err(TryRecvError::Disconnected) => return Err(TaskExit::PeerGone),
                };
                progressed = true;
                match message {
                    Message::Record(record, timestamp) => {
                        self.operator
                            .process_record(record, timestamp, &mut emitted)?;
                        self.output.emit(&mut emitted)?;
                    }
                    Message::Watermark(watermark) => {
                        valve.input_watermark(channel, watermark, &mut decisions);
                        for decision in decisions.drain(..) {
                            // Sources of this runtime are never idle.
                            if let ValveOutput::Watermark(watermark) = decision {
                                self.operator.advance_watermark(watermark, &mut emitted)?;
                                self.output.emit(&mut emitted)?;
                                self.output.broadcast(|| Message::Watermark(watermark))?;
                            }
                        }
                    }
                    Message::Barrier(checkpoint_id) => {
                        debug_assert!(
                            alignment.checkpoint_id.is_none_or(|id| id == checkpoint_id),
                            "a channel delivers barriers in order and is blocked after one"
                        );
                        alignment.checkpoint_id = Some(checkpoint_id);
                        alignment.blocked[channel] = true;
                        self.complete_alignment(&mut alignment)?;
                    }
                    Message::End => {
                        alignment.ended[channel] = true;
                        self.complete_alignment(&mut alignment)?;
                    }
                }
            }
            if progressed {
                continue;
            }
            // The timeout only bounds how long a task blocked in an alignment takes to
            // notice that a peer failed (its other producers still hold the doorbell).
            match self.doorbell.recv_timeout(PEER_CHECK_INTERVAL) {
                Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(TaskExit::PeerGone),
            }
        }
        self.output.broadcast(|| Message::End)?;
        self.reports
            .send(Report::Finished {
                stage: self.stage,
                task: self.output.task,
                split_offsets: Vec::new(),
                output: std::mem::take(&mut self.output.held),
                num_late_records_dropped: self.operator.num_late_records_dropped(),
            })
            .map_err(|_| TaskExit::PeerGone)
    }

    /// Once every live channel delivered the barrier: snapshot, acknowledge, forward,
    /// unblock.
    fn complete_alignment(&mut self, alignment: &mut Alignment) -> Result<(), TaskExit> {
        let Some(checkpoint_id) = alignment.checkpoint_id else {
            return Ok(());
        };
        let aligned = alignment
            .blocked
            .iter()
            .zip(&alignment.ended)
            .all(|(blocked, ended)| *blocked || *ended);
        if !aligned {
            return Ok(());
        }
        self.reports
            .send(Report::Acknowledge {
                checkpoint_id,
                stage: self.stage,
                task: self.output.task,
                split_offsets: Vec::new(),
                state: self.operator.snapshot_key_groups()?,
                output: std::mem::take(&mut self.output.held),
            })
            .map_err(|_| TaskExit::PeerGone)?;
        self.output.broadcast(|| Message::Barrier(checkpoint_id))?;
        alignment.checkpoint_id = None;
        alignment.blocked.fill(false);
        Ok(())
    }
}

/// A checkpoint collecting acknowledgements.
#[derive(Default)]
struct PendingCheckpoint {
    acknowledgements: usize,
    split_offsets: BTreeMap<usize, usize>,
    stage_states: Vec<KeyGroupState>,
    output: Vec<Record>,
}

/// Builds the tasks, runs the coordinator on the calling thread, joins the tasks.
fn run(
    job: JobSpec,
    store: &ParallelCheckpointStore,
    commit: &mut dyn FnMut(Vec<Record>),
) -> Result<ParallelJobResult, StreamError> {
    job.config.validate()?;
    let JobSpec {
        config,
        source,
        stages,
        next_partitioning: _,
        source_records_emitted,
        cancel_after_checkpoint,
    } = job;
    let restore = store.latest();
    if let Some(checkpoint) = &restore
        && (checkpoint.max_parallelism != config.max_parallelism
            || checkpoint.stage_states.len() != stages.len())
    {
        return Err(StreamError::Checkpoint(format!(
            "checkpoint {} is of another job: max_parallelism {}, {} stages; job: {}, {}",
            checkpoint.checkpoint_id,
            checkpoint.max_parallelism,
            checkpoint.stage_states.len(),
            config.max_parallelism,
            stages.len()
        )));
    }
    let parallelism = config.parallelism as usize;
    let stage_count = stages.len() + 1;
    let task_count = parallelism * stage_count;
    let cancel = Arc::new(AtomicBool::new(false));
    let (reports_sender, reports) = mpsc::channel();

    // Channels into stage s ≥ 1: senders[s][upstream][downstream], receivers[s][downstream].
    let mut senders: Vec<Vec<Vec<SyncSender<Message>>>> = vec![Vec::new()];
    let mut doorbell_senders: Vec<Vec<SyncSender<()>>> = vec![Vec::new()];
    let mut receivers: Vec<Vec<TaskInputs>> = vec![Vec::new()];
    for _ in 1..stage_count {
        let mut stage_senders = vec![Vec::with_capacity(parallelism); parallelism];
        let mut stage_doorbells = Vec::with_capacity(parallelism);
        let mut stage_receivers = Vec::with_capacity(parallelism);
        for _ in 0..parallelism {
            let (doorbell_sender, doorbell) = mpsc::sync_channel(1);
            stage_doorbells.push(doorbell_sender);
            let mut inputs = Vec::with_capacity(parallelism);
            for upstream in stage_senders.iter_mut() {
                let (sender, receiver) = mpsc::sync_channel(config.channel_capacity);
                upstream.push(sender);
                inputs.push(receiver);
            }
            stage_receivers.push((inputs, doorbell));
        }
        senders.push(stage_senders);
        doorbell_senders.push(stage_doorbells);
        receivers.push(stage_receivers);
    }
    senders.push(vec![Vec::new(); parallelism]);
    doorbell_senders.push(Vec::new());
    let output_of =
        |stage: usize, task: usize, senders: &mut Vec<Vec<Vec<SyncSender<Message>>>>| TaskOutput {
            task,
            channels: std::mem::take(&mut senders[stage + 1][task]),
            doorbells: doorbell_senders[stage + 1].clone(),
            partitioning: stages
                .get(stage)
                .map_or(Partitioning::Forward, |next| next.partitioning.clone()),
            max_parallelism: config.max_parallelism,
            next_rebalance: task,
            held: Vec::new(),
        };

    let mut handles = Vec::with_capacity(task_count);
    let first_checkpoint_id = restore.as_ref().map_or(1, |c| c.checkpoint_id + 1);
    for task in 0..parallelism {
        let splits = (0..source.split_count)
            .filter(|split| split % parallelism == task)
            .map(|split| {
                let offset = restore
                    .as_ref()
                    .and_then(|c| c.split_offsets.get(&split).copied())
                    .unwrap_or(0);
                (split, offset, i64::MIN, false)
            })
            .collect::<Vec<_>>();
        let source_task = SourceTask {
            reader: source.reader.clone(),
            out_of_orderness_ms: source.out_of_orderness_ms,
            splits,
            checkpoint_every_records: config.checkpoint_every_records,
            next_checkpoint_id: first_checkpoint_id,
            records_emitted: source_records_emitted.clone(),
            cancel: cancel.clone(),
            reports: reports_sender.clone(),
            output: output_of(0, task, &mut senders),
        };
        handles.push(spawn_task(format!("source-{task}"), move || {
            source_task.run()
        })?);
    }
    for (index, stage) in stages.iter().enumerate() {
        let stage_number = index + 1;
        for (task, (inputs, doorbell)) in std::mem::take(&mut receivers[stage_number])
            .into_iter()
            .enumerate()
        {
            let mut operator = (stage.factory)();
            let range = key_group_range_for_operator(
                config.max_parallelism,
                config.parallelism,
                task as u32,
            );
            operator.open(range.clone());
            if let Some(checkpoint) = &restore {
                let groups = checkpoint.stage_states[index]
                    .range(range)
                    .map(|(group, value)| (*group, value.clone()))
                    .collect();
                operator.restore_key_groups(groups)?;
            }
            let operator_task = OperatorTask {
                stage: stage_number,
                operator,
                inputs,
                doorbell,
                reports: reports_sender.clone(),
                output: output_of(stage_number, task, &mut senders),
            };
            handles.push(spawn_task(
                format!("stage-{stage_number}-{task}"),
                move || operator_task.run(),
            )?);
        }
    }
    drop(reports_sender);
    drop(doorbell_senders);

    // The coordinator.
    let mut pending: BTreeMap<u64, PendingCheckpoint> = BTreeMap::new();
    let mut finished_sources: Vec<Option<Vec<(usize, usize)>>> = vec![None; parallelism];
    let mut source_last_acknowledged = vec![first_checkpoint_id - 1; parallelism];
    let mut finished_tasks = 0;
    let mut final_output = Vec::new();
    let mut result = ParallelJobResult {
        num_completed_checkpoints: 0,
        restored_checkpoint_id: restore.as_ref().map(|c| c.checkpoint_id),
        num_late_records_dropped: 0,
    };
    let new_pending = |finished_sources: &[Option<Vec<(usize, usize)>>]| {
        let mut checkpoint = PendingCheckpoint {
            stage_states: vec![KeyGroupState::new(); stage_count - 1],
            ..PendingCheckpoint::default()
        };
        // A finished source acknowledges every later checkpoint with its final offsets.
        for offsets in finished_sources.iter().flatten() {
            checkpoint.acknowledgements += 1;
            checkpoint.split_offsets.extend(offsets.iter().copied());
        }
        checkpoint
    };
    while let Ok(report) = reports.recv() {
        match report {
            Report::Acknowledge {
                checkpoint_id,
                stage,
                task,
                split_offsets,
                state,
                output,
            } => {
                if stage == 0 {
                    source_last_acknowledged[task] = checkpoint_id;
                }
                let checkpoint = pending
                    .entry(checkpoint_id)
                    .or_insert_with(|| new_pending(&finished_sources));
                checkpoint.acknowledgements += 1;
                checkpoint.split_offsets.extend(split_offsets);
                if stage > 0 {
                    checkpoint.stage_states[stage - 1].extend(state);
                }
                checkpoint.output.extend(output);
            }
            Report::Finished {
                stage,
                task,
                split_offsets,
                output,
                num_late_records_dropped,
            } => {
                finished_tasks += 1;
                final_output.extend(output);
                result.num_late_records_dropped += num_late_records_dropped;
                if stage == 0 {
                    for (id, checkpoint) in pending.iter_mut() {
                        if *id > source_last_acknowledged[task] {
                            checkpoint.acknowledgements += 1;
                            checkpoint
                                .split_offsets
                                .extend(split_offsets.iter().copied());
                        }
                    }
                    finished_sources[task] = Some(split_offsets);
                }
                continue;
            }
        };
        // Checkpoints complete in order: every task acknowledges them in order.
        while let Some(entry) = pending.first_entry() {
            // A cancelled job completes nothing more, as a crashed process would not.
            if cancel.load(Ordering::Relaxed) || entry.get().acknowledgements < task_count {
                break;
            }
            let id = *entry.key();
            let checkpoint = entry.remove();
            store.store(ParallelCheckpoint {
                checkpoint_id: id,
                max_parallelism: config.max_parallelism,
                split_offsets: checkpoint.split_offsets,
                stage_states: checkpoint.stage_states,
            });
            commit(checkpoint.output);
            result.num_completed_checkpoints += 1;
            if cancel_after_checkpoint == Some(id) {
                cancel.store(true, Ordering::Relaxed);
            }
        }
    }
    let mut failure = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(TaskExit::Failed(error))) => {
                failure.get_or_insert(error);
            }
            Ok(Err(TaskExit::PeerGone)) => {}
            Err(_) => {
                failure.get_or_insert(StreamError::Function("a task panicked".into()));
            }
        }
    }
    if let Some(error) = failure {
        return Err(error);
    }
    assert_eq!(
        finished_tasks, task_count,
        "no task failed, so all finished"
    );
    // The end of input commits what no checkpoint covered.
    for checkpoint in pending.into_values() {
        commit(checkpoint.output);
    }
    commit(final_output);
    Ok(result)
}

fn spawn_task(
    name: String,
    body: impl FnOnce() -> Result<(), TaskExit> + Send + 'static,
) -> Result<thread::JoinHandle<Result<(), TaskExit>>, StreamError> {
    thread::Builder::new()
        .name(name)
        .spawn(body)
        .map_err(|error| StreamError::Function(format!("cannot start a task thread: {error}")))
}
