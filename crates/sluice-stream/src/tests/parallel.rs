//! `execute_parallel`: a keyed window job on parallel tasks computes what the
//! single-threaded executor computes, its keyed stage really runs on `parallelism`
//! threads, and a job that fails after checkpoints restarts from the latest one, also at
//! another parallelism, committing exactly what a clean run commits.
//!
//! The job: 3,000 records (key = 7·i mod 40, value i, event time 10·i plus a jitter of at
//! most 9 ms), bounded out-of-orderness 10 ms (no record is late), a filter dropping
//! multiples of 11, `key_by(key)`, tumbling 100 ms event-time windows reducing to (key,
//! sum of values, largest event time), a map (in the keyed stage: it notes its thread),
//! and an exactly-once `CollectSink`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

use crate::{
    CollectSink, CollectionSource, InMemoryCheckpointStorage, RestartStrategy, Sink, SourceEvent,
    StreamError, StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkEmission,
    WatermarkStrategy,
};

const RECORDS: u64 = 3_000;
const KEYS: u64 = 40;

/// (key, value or sum, event time or largest event time)
type Record = (u64, u64, i64);

fn script() -> Vec<SourceEvent<Record>> {
    const JITTER_MS: [i64; 5] = [0, 7, 3, 9, 1];
    (0..RECORDS)
        .map(|i| {
            let timestamp = i as i64 * 10 + JITTER_MS[i as usize % 5];
            SourceEvent::Record(((i * 7) % KEYS, i, timestamp))
        })
        .collect()
}

/// Fails one write, once, after `after` writes over all instances and once a checkpoint
/// completed (the sink of every task is a clone sharing the counters), then writes
/// through.
#[derive(Clone)]
struct FailOnce<S> {
    inner: S,
    after: u64,
    writes: Arc<AtomicU64>,
    completed: Arc<AtomicU64>,
    failed: Arc<AtomicBool>,
}

impl<S> FailOnce<S> {
    fn new(inner: S, after: u64) -> Self {
        Self {
            inner,
            after,
            writes: Arc::default(),
            completed: Arc::default(),
            failed: Arc::default(),
        }
    }
}

impl<S: Sink<Record>> Sink<Record> for FailOnce<S> {
    fn open(&mut self) -> Result<(), StreamError> {
        self.inner.open()
    }
    fn write(&mut self, value: Record, timestamp: Option<i64>) -> Result<(), StreamError> {
        // Slow, so the sink backpressures the source and checkpoints fall in between.
        std::thread::sleep(Duration::from_millis(2));
        if self.writes.fetch_add(1, Ordering::SeqCst) >= self.after
            && self.completed.load(Ordering::SeqCst) > 0
            && !self.failed.swap(true, Ordering::SeqCst)
        {
            return Err(StreamError::Function("injected failure".into()));
        }
        self.inner.write(value, timestamp)
    }
    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.inner.snapshot_state(checkpoint_id)
    }
    fn checkpoint_state(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        self.inner.checkpoint_state()
    }
    fn restore_checkpoint_state(&mut self, state: &serde_json::Value) -> Result<(), StreamError> {
        self.inner.restore_checkpoint_state(state)
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.completed.fetch_add(1, Ordering::SeqCst);
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> Result<(), StreamError> {
        self.inner.finish()
    }
}

fn build(
    env: &StreamExecutionEnvironment,
    sink: impl Sink<Record>,
    threads: Arc<Mutex<HashSet<ThreadId>>>,
) {
    let strategy = WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(10))
        .with_timestamp_assigner(|record: &Record, _| record.2);
    env.from_source(CollectionSource::from_events(script()), strategy, "numbers")
        .filter(|record: &Record| !record.1.is_multiple_of(11))
        .key_by(|record: &Record| record.0)
        .window(TumblingEventTimeWindows::of(Duration::from_millis(100)))
        .reduce(|a: Record, b: Record| (a.0, a.1 + b.1, a.2.max(b.2)))
        .map(move |record: Record| {
            threads.lock().unwrap().insert(std::thread::current().id());
            record
        })
        .sink_to(sink);
}

fn sorted(mut records: Vec<Record>) -> Vec<Record> {
    records.sort_unstable();
    records
}

/// Asserts `actual` equals `expected` as multisets, naming the first differences.
fn assert_same(actual: Vec<Record>, expected: &[Record], context: &str) {
    let actual = sorted(actual);
    if actual == expected {
        return;
    }
    let mut missing = expected.to_vec();
    let mut extra = Vec::new();
    for record in actual {
        match missing.iter().position(|candidate| *candidate == record) {
            Some(index) => {
                missing.swap_remove(index);
            }
            None => extra.push(record),
        }
    }
    missing.sort_unstable();
    panic!(
        "{context}: {} missing (first {:?}), {} extra (first {:?})",
        missing.len(),
        &missing[..missing.len().min(10)],
        extra.len(),
        &extra[..extra.len().min(10)]
    );
}

/// What the single-threaded executor commits.
fn expected() -> Vec<Record> {
    let env = StreamExecutionEnvironment::new();
    let sink = CollectSink::exactly_once();
    build(&env, sink.clone(), Arc::default());
    env.execute("single").unwrap();
    let records = sorted(sink.records());
    assert!(records.len() > 1_000, "{}", records.len());
    records
}

#[test]
fn a_parallel_window_job_computes_what_the_single_threaded_one_does() {
    let expected = expected();
    for parallelism in [1, 2, 4] {
        let mut env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism).set_channel_capacity(8);
        let sink = CollectSink::exactly_once();
        let threads = Arc::new(Mutex::new(HashSet::new()));
        let result = env
            .execute_parallel("parallel", |env| build(env, sink.clone(), threads.clone()))
            .unwrap();
        assert_eq!(
            sorted(sink.records()),
            expected,
            "parallelism {parallelism}"
        );
        // The map after the window runs in the keyed stage: one thread per task.
        assert_eq!(
            threads.lock().unwrap().len(),
            parallelism as usize,
            "parallelism {parallelism}"
        );
        // Metrics are summed over tasks, per node in graph order.
        let names: Vec<&str> = result.operators.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names[0], "numbers");
        assert_eq!(result.operators[0].num_records_out, RECORDS);
        assert_eq!(
            result.operators.last().unwrap().num_records_in as usize,
            expected.len()
        );
    }
}

/// Fails after checkpoints; restarts at the same parallelism (restart strategy), then a
/// second job at another parallelism resumes from the first one's latest checkpoint.
#[test]
fn a_failed_parallel_job_restarts_from_its_checkpoint_at_any_parallelism() {
    let expected = expected();
    let storage = InMemoryCheckpointStorage::new(1);
    let mut env = StreamExecutionEnvironment::new();
    // Watermarks after every record: windows fire while the source runs, the slow sink
    // backpressures it through the small channels, and checkpoints fall throughout.
    env.set_parallelism(2)
        .set_channel_capacity(4)
        .set_watermark_emission(WatermarkEmission::AfterEveryEvent)
        .enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_storage(storage.clone())
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    let sink = CollectSink::exactly_once();
    let failing = FailOnce::new(sink.clone(), 300);
    let result = env
        .execute_parallel("restarts", |env| {
            build(env, failing.clone(), Arc::default())
        })
        .unwrap();
    assert_eq!(result.num_restarts, 1, "{result:?}");
    assert!(result.restored_checkpoint_id.is_some(), "{result:?}");
    assert_same(sink.records(), &expected, "restarted");

    // Rescaling: a job of parallelism 2 fails without restarts after some checkpoints;
    // the same job at parallelism 3 (then 1) takes over from its latest checkpoint. The
    // output of all attempts together is the clean run's, each record once.
    for rescaled in [3, 1] {
        let storage = InMemoryCheckpointStorage::new(1);
        let sink = CollectSink::exactly_once();
        let mut env = StreamExecutionEnvironment::new();
        env.set_parallelism(2)
            .set_channel_capacity(4)
            .set_watermark_emission(WatermarkEmission::AfterEveryEvent)
            .enable_checkpointing(Duration::from_millis(20))
            .set_checkpoint_storage(storage.clone());
        let failing = FailOnce::new(sink.clone(), 300);
        let first = env.execute_parallel("rescaled", |env| {
            build(env, failing.clone(), Arc::default())
        });
        assert!(matches!(first, Err(StreamError::Function(_))), "{first:?}");
        let committed_before = sink.records().len();
        assert!(
            committed_before > 0,
            "a checkpoint completed before the failure"
        );
        env.set_parallelism(rescaled);
        let result = env
            .execute_parallel("rescaled", |env| build(env, sink.clone(), Arc::default()))
            .unwrap();
        assert!(result.restored_checkpoint_id.is_some(), "{result:?}");
        assert_same(
            sink.records(),
            &expected,
            &format!("rescaled to {rescaled}"),
        );
    }
}

#[test]
fn what_cannot_run_in_parallel_is_a_configuration_error() {
    let mut env = StreamExecutionEnvironment::new();
    env.set_parallelism(2);
    // A union of a keyed stage's output with the source stage's stream.
    let result = env.execute_parallel("union", |env| {
        let numbers = env.from_collection((0..10_u64).collect());
        let summed = numbers
            .key_by(|n: &u64| n % 2)
            .process(crate::tests::parallel::PassThrough);
        summed.union(&[numbers]).sink_to(CollectSink::new());
    });
    assert!(
        matches!(&result, Err(StreamError::InvalidConfiguration(message)) if message.contains("union")),
        "{result:?}"
    );
    // A collection source cannot be split.
    let result = env.execute_parallel("split collection", |env| {
        env.from_collection((0..10_u64).collect())
            .set_parallelism(2)
            .sink_to(CollectSink::new());
    });
    assert!(
        matches!(&result, Err(StreamError::InvalidConfiguration(message)) if message.contains("cannot be split")),
        "{result:?}"
    );
    // Operators chained by forward edges share their tasks: their parallelism must agree.
    let result = env.execute_parallel("conflict", |env| {
        env.from_collection((0..10_u64).collect())
            .key_by(|n: &u64| n % 2)
            .process(PassThrough)
            .set_parallelism(3)
            .map(|n: u64| n + 1)
            .set_parallelism(2)
            .sink_to(CollectSink::new());
    });
    assert!(
        matches!(&result, Err(StreamError::InvalidConfiguration(message)) if message.contains("shares a task")),
        "{result:?}"
    );
    env.set_parallelism(0);
    let result = env.execute_parallel("zero", |env| {
        env.from_collection(vec![1_u64]).sink_to(CollectSink::new())
    });
    assert!(
        matches!(result, Err(StreamError::InvalidConfiguration(_))),
        "{result:?}"
    );
}

/// Emits each record.
pub(crate) struct PassThrough;

impl crate::KeyedProcessFunction<u64, u64, u64> for PassThrough {
    fn process_element(
        &mut self,
        value: u64,
        _ctx: &mut crate::Context<'_, u64>,
        out: &mut crate::Collector<'_, u64>,
    ) -> Result<(), StreamError> {
        out.collect(value);
        Ok(())
    }
}

/// Backpressure: with a slow sink, the source runs at most what the channels hold ahead
/// of it. The job passes records straight through a keyed operator to a sink taking
/// 1 ms per record; the source stage counts what it emitted, the sink what it wrote, and
/// the gap can never exceed what the keyed tasks' input channels buffer (capacity 4 per
/// task) plus the record each task has in hand and the one the source is sending.
#[test]
fn a_slow_sink_backpressures_the_source_through_bounded_channels() {
    const CAPACITY: usize = 4;
    const PARALLELISM: u32 = 2;

    #[derive(Clone)]
    struct SlowSink {
        emitted: Arc<AtomicU64>,
        written: Arc<AtomicU64>,
        largest_gap: Arc<AtomicU64>,
    }
    impl Sink<u64> for SlowSink {
        fn write(&mut self, _value: u64, _timestamp: Option<i64>) -> Result<(), StreamError> {
            std::thread::sleep(Duration::from_millis(1));
            let written = self.written.fetch_add(1, Ordering::SeqCst) + 1;
            let gap = self.emitted.load(Ordering::SeqCst).saturating_sub(written);
            self.largest_gap.fetch_max(gap, Ordering::SeqCst);
            Ok(())
        }
    }

    let sink = SlowSink {
        emitted: Arc::default(),
        written: Arc::default(),
        largest_gap: Arc::default(),
    };
    let mut env = StreamExecutionEnvironment::new();
    env.set_parallelism(PARALLELISM)
        .set_channel_capacity(CAPACITY);
    let result = env
        .execute_parallel("backpressure", |env| {
            let emitted = sink.emitted.clone();
            env.from_collection((0..600_u64).collect())
                .map(move |value: u64| {
                    emitted.fetch_add(1, Ordering::SeqCst);
                    value
                })
                .key_by(|value: &u64| value % 7)
                .process(PassThrough)
                .sink_to(sink.clone());
        })
        .unwrap();
    assert_eq!(sink.written.load(Ordering::SeqCst), 600, "{result:?}");
    let bound = PARALLELISM as u64 * (CAPACITY as u64 + 1) + 1;
    let largest_gap = sink.largest_gap.load(Ordering::SeqCst);
    assert!(
        largest_gap <= bound,
        "the source ran {largest_gap} records ahead of the sink (bound {bound})"
    );
    // Without backpressure the 600 records would all be emitted before the first
    // millisecond-long writes finished.
    assert!(largest_gap >= CAPACITY as u64, "{largest_gap}");
}

/// Both state backends on parallel tasks: each task keeps its key groups on the heap or in
/// a fjall directory of its own (the operator id names the task), snapshots them, and a
/// failure after checkpoints restores them, with the clean run's output.
#[test]
fn both_state_backends_run_on_parallel_tasks() {
    let expected = expected();
    for backend in super::state_backends() {
        let mut env = StreamExecutionEnvironment::new();
        env.set_parallelism(2)
            .set_channel_capacity(4)
            .set_state_backend(backend.clone())
            .set_watermark_emission(WatermarkEmission::AfterEveryEvent)
            .enable_checkpointing(Duration::from_millis(20))
            .set_checkpoint_storage(InMemoryCheckpointStorage::new(1))
            .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
        let sink = CollectSink::exactly_once();
        let failing = FailOnce::new(sink.clone(), 300);
        let result = env
            .execute_parallel("backends", |env| {
                build(env, failing.clone(), Arc::default())
            })
            .unwrap();
        assert_eq!(result.num_restarts, 1, "{backend:?}: {result:?}");
        assert_same(sink.records(), &expected, &format!("{backend:?}"));
    }
}
