//! Checkpoints, restore and restarts: a job that fails and restarts from its checkpoints
//! commits exactly what a clean run commits.
//!
//! The job: 150 records (key = i mod 3, value i, event time i·10 plus a jitter of at most
//! 9 ms, plus 200 ms every 20 records so sessions split), bounded out-of-orderness 10 ms
//! (so no record is ever late: the watermark stays 12 ms behind the newest timestamp),
//! processing time +100 ms every 5 records, a checkpoint every 250 ms of processing time.
//! Three branches, each into an exactly-once `CollectSink`:
//! - a `KeyedProcessFunction` keeping a running sum per key in `ValueState`, emitting it per
//!   record, and an event-time timer per key and 100 ms bucket that reports itself; it
//!   fails once at an injected record;
//! - tumbling 100 ms windows summing values (window contents and timers);
//! - session windows with a 50 ms gap counting records (the merging-window set).
//!
//! Watermarks are not checkpointed (as in Flink), so after a restore timers may fire at a
//! different point relative to records; the outputs are compared as multisets, which is
//! what exactly-once promises.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use super::deterministic_env;
use crate::{
    AggregateFunction, CheckpointStorage, CollectSink, CollectionSource, Collector, Context,
    DirectoryCheckpointStorage, EventTimeSessionWindows, InMemoryCheckpointStorage,
    KeyedProcessFunction, RestartStrategy, RuntimeContext, SourceEvent, StateBackendKind,
    StreamError, StreamExecutionEnvironment, TumblingEventTimeWindows, ValueState,
    ValueStateDescriptor, WatermarkStrategy,
};

const RECORDS: u64 = 150;

/// (key, value, event time)
type Record = (u8, u64, i64);

fn script() -> Vec<SourceEvent<Record>> {
    const JITTER_MS: [i64; 5] = [0, 7, 3, 9, 1];
    let mut events = Vec::new();
    for i in 0..RECORDS {
        if i % 5 == 0 {
            events.push(SourceEvent::ProcessingTime(i as i64 / 5 * 100));
        }
        let timestamp = i as i64 * 10 + JITTER_MS[i as usize % 5] + (i as i64 / 20) * 200;
        events.push(SourceEvent::Record(((i % 3) as u8, i, timestamp)));
    }
    events
}

/// Running sum per key; fails at `fail_at_value` while `failures_left` is positive.
struct RunningSum {
    sum: Option<ValueState<u64>>,
    fail_at_value: Option<u64>,
    failures_left: Rc<Cell<u32>>,
}

/// (key, running sum or timer timestamp, from a timer)
type SumOutput = (u8, i64, bool);

impl KeyedProcessFunction<u8, Record, SumOutput> for RunningSum {
    fn open(&mut self, runtime: &RuntimeContext) -> Result<(), StreamError> {
        self.sum = Some(runtime.get_state(&ValueStateDescriptor::new("sum"))?);
        Ok(())
    }

    fn process_element(
        &mut self,
        (key, value, timestamp): Record,
        ctx: &mut Context<'_, u8>,
        out: &mut Collector<'_, SumOutput>,
    ) -> Result<(), StreamError> {
        if Some(value) == self.fail_at_value && self.failures_left.get() > 0 {
            self.failures_left.set(self.failures_left.get() - 1);
            return Err(StreamError::Function(format!(
                "injected failure at {value}"
            )));
        }
        let state = self.sum.as_ref().expect("opened");
        let sum = state.value()?.unwrap_or(0) + value;
        state.update(sum)?;
        out.collect((key, sum as i64, false));
        ctx.timer_service()
            .register_event_time_timer(timestamp / 100 * 100 + 99);
        Ok(())
    }

    fn on_timer(
        &mut self,
        timestamp: i64,
        ctx: &mut Context<'_, u8>,
        out: &mut Collector<'_, SumOutput>,
    ) -> Result<(), StreamError> {
        out.collect((*ctx.get_current_key(), timestamp, true));
        Ok(())
    }
}

struct Count;

impl AggregateFunction for Count {
    type In = Record;
    type Acc = u64;
    type Out = u64;
    fn create_accumulator(&self) -> u64 {
        0
    }
    fn add(&self, _: Record, count: u64) -> u64 {
        count + 1
    }
    fn get_result(&self, count: &u64) -> u64 {
        *count
    }
    fn merge(&self, a: u64, b: u64) -> u64 {
        a + b
    }
}

/// (key, session start, session end, records)
type Session = (u8, i64, i64, u64);
type Committed = (Vec<SumOutput>, Vec<Record>, Vec<Session>);

struct Sinks {
    sums: CollectSink<SumOutput>,
    tumbling: CollectSink<Record>,
    sessions: CollectSink<Session>,
}

impl Sinks {
    fn exactly_once() -> Self {
        Self {
            sums: CollectSink::exactly_once(),
            tumbling: CollectSink::exactly_once(),
            sessions: CollectSink::exactly_once(),
        }
    }

    /// Every sink's committed records, sorted (multisets).
    fn sorted(&self) -> Committed {
        let mut sums = self.sums.records();
        let mut tumbling = self.tumbling.records();
        let mut sessions = self.sessions.records();
        sums.sort_unstable();
        tumbling.sort_unstable();
        sessions.sort_unstable();
        (sums, tumbling, sessions)
    }
}

fn build(env: &StreamExecutionEnvironment, function: RunningSum, sinks: &Sinks) {
    let records = env.from_source(
        CollectionSource::from_events(script()),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(10))
            .with_timestamp_assigner(|record: &Record, _| record.2),
        "records",
    );
    records
        .key_by(|record| record.0)
        .process(function)
        .sink_to(sinks.sums.clone());
    records
        .key_by(|record| record.0)
        .window(TumblingEventTimeWindows::of(Duration::from_millis(100)))
        .reduce(|a: Record, b: Record| (a.0, a.1 + b.1, a.2.max(b.2)))
        .sink_to(sinks.tumbling.clone());
    records
        .key_by(|record| record.0)
        .window(EventTimeSessionWindows::with_gap(Duration::from_millis(50)))
        .aggregate_with(Count, |key, context, count| {
            (*key, context.window.start, context.window.end, count)
        })
        .sink_to(sinks.sessions.clone());
}

fn running_sum(fail_at_value: Option<u64>, failures_left: &Rc<Cell<u32>>) -> RunningSum {
    RunningSum {
        sum: None,
        fail_at_value,
        failures_left: failures_left.clone(),
    }
}

/// A deterministic environment checkpointing every 250 ms into `storage`.
fn checkpointed_env(
    storage: impl CheckpointStorage + 'static,
    restart: RestartStrategy,
) -> StreamExecutionEnvironment {
    checkpointed_env_on(storage, restart, StateBackendKind::HashMap)
}

fn checkpointed_env_on(
    storage: impl CheckpointStorage + 'static,
    restart: RestartStrategy,
    backend: StateBackendKind,
) -> StreamExecutionEnvironment {
    let (mut env, _clock) = deterministic_env();
    env.enable_checkpointing(Duration::from_millis(250))
        .set_checkpoint_storage(storage)
        .set_restart_strategy(restart)
        .set_state_backend(backend);
    env
}

#[test]
fn a_failing_job_restarted_from_checkpoints_commits_what_a_clean_run_commits() {
    let clean = Sinks::exactly_once();
    let env = checkpointed_env(
        InMemoryCheckpointStorage::new(1),
        RestartStrategy::NoRestart,
    );
    build(&env, running_sum(None, &Rc::new(Cell::new(0))), &clean);
    let result = env.execute("clean").unwrap();
    assert!(result.num_completed_checkpoints >= 8, "{result:?}");
    let expected = clean.sorted();
    assert_eq!(
        expected.0.len() as u64,
        RECORDS + expected.0.iter().filter(|o| o.2).count() as u64
    );

    // Failure points: both ends, and a fixed pseudo-random spread in between.
    let mut failure_points = vec![0, RECORDS - 1];
    let mut seed = 0x2545_f491_u64;
    for _ in 0..8 {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        failure_points.push((seed >> 33) % RECORDS);
    }
    let runs = failure_points
        .iter()
        .flat_map(|fail_at| super::state_backends().map(move |backend| (*fail_at, backend)));
    for (fail_at, backend) in runs {
        let sinks = Sinks::exactly_once();
        let env = checkpointed_env_on(
            InMemoryCheckpointStorage::new(2),
            RestartStrategy::fixed_delay(2, Duration::ZERO),
            backend.clone(),
        );
        build(
            &env,
            running_sum(Some(fail_at), &Rc::new(Cell::new(1))),
            &sinks,
        );
        let result = env.execute("failing").unwrap();
        assert_eq!(result.num_restarts, 1, "fail at {fail_at}");
        // Checkpoint 1 is triggered at 250 ms, before record 15.
        assert_eq!(
            result.restored_checkpoint_id.is_some(),
            fail_at >= 15,
            "fail at {fail_at}: {result:?}"
        );
        assert_eq!(sinks.sorted(), expected, "fail at {fail_at} on {backend:?}");
    }
}

#[test]
fn an_at_least_once_sink_sees_replayed_records_again() {
    let clean = CollectSink::new();
    let env = checkpointed_env(
        InMemoryCheckpointStorage::new(1),
        RestartStrategy::NoRestart,
    );
    build_sums_only(&env, running_sum(None, &Rc::new(Cell::new(0))), &clean);
    env.execute("clean").unwrap();

    let sink = CollectSink::new();
    let env = checkpointed_env(
        InMemoryCheckpointStorage::new(1),
        RestartStrategy::fixed_delay(1, Duration::ZERO),
    );
    build_sums_only(&env, running_sum(Some(100), &Rc::new(Cell::new(1))), &sink);
    env.execute("failing").unwrap();
    let (mut once, mut replayed) = (clean.records(), sink.records());
    assert!(
        replayed.len() > once.len(),
        "records after the checkpoint come twice"
    );
    once.sort_unstable();
    replayed.sort_unstable();
    replayed.dedup();
    assert_eq!(replayed, once, "but nothing is lost");
}

fn build_sums_only(
    env: &StreamExecutionEnvironment,
    function: RunningSum,
    sink: &CollectSink<SumOutput>,
) {
    env.from_source(
        CollectionSource::from_events(script()),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(10))
            .with_timestamp_assigner(|record: &Record, _| record.2),
        "records",
    )
    .key_by(|record| record.0)
    .process(function)
    .sink_to(sink.clone());
}

#[test]
fn restarts_are_bounded() {
    let sinks = Sinks::exactly_once();
    let env = checkpointed_env(
        InMemoryCheckpointStorage::new(1),
        RestartStrategy::fixed_delay(3, Duration::ZERO),
    );
    let failures_left = Rc::new(Cell::new(u32::MAX));
    build(&env, running_sum(Some(40), &failures_left), &sinks);
    assert_eq!(
        env.execute("always failing"),
        Err(StreamError::Function("injected failure at 40".into()))
    );
    assert_eq!(
        u32::MAX - failures_left.get(),
        4,
        "the first attempt and three restarts"
    );
}

/// A process killed mid-job (here: a failure without restarts) and started again with the
/// same checkpoint directory resumes from its latest checkpoint; a `chk-N` directory
/// without `_metadata` (a crash while writing it) is ignored.
#[test]
fn a_new_process_resumes_from_the_checkpoint_directory() {
    let clean = Sinks::exactly_once();
    let env = checkpointed_env(
        InMemoryCheckpointStorage::new(1),
        RestartStrategy::NoRestart,
    );
    build(&env, running_sum(None, &Rc::new(Cell::new(0))), &clean);
    env.execute("clean").unwrap();

    let root = tempfile::tempdir().unwrap();
    let first = Sinks::exactly_once();
    let env = checkpointed_env(
        DirectoryCheckpointStorage::new(root.path(), 3).unwrap(),
        RestartStrategy::NoRestart,
    );
    build(&env, running_sum(Some(97), &Rc::new(Cell::new(1))), &first);
    assert!(env.execute("killed").is_err());
    let storage = DirectoryCheckpointStorage::new(root.path(), 3).unwrap();
    let latest = storage.latest().unwrap().expect("checkpoints were taken");
    let torn = storage.checkpoint_directory(latest.checkpoint_id + 1);
    std::fs::create_dir_all(&torn).unwrap();
    std::fs::write(torn.join("state.json"), b"partial").unwrap();

    let second = Sinks::exactly_once();
    let env = checkpointed_env(storage, RestartStrategy::NoRestart);
    build(&env, running_sum(None, &Rc::new(Cell::new(0))), &second);
    let result = env.execute("resumed").unwrap();
    assert_eq!(result.restored_checkpoint_id, Some(latest.checkpoint_id));

    // What the killed process committed plus what the new one committed: the clean run.
    let (mut sums, mut tumbling, mut sessions) = first.sorted();
    let more = second.sorted();
    sums.extend(more.0);
    tumbling.extend(more.1);
    sessions.extend(more.2);
    sums.sort_unstable();
    tumbling.sort_unstable();
    sessions.sort_unstable();
    assert_eq!((sums, tumbling, sessions), clean.sorted());
}

#[test]
fn a_checkpoint_of_another_graph_is_refused() {
    let storage = InMemoryCheckpointStorage::new(1);
    let env = checkpointed_env(storage.clone(), RestartStrategy::NoRestart);
    build(
        &env,
        running_sum(None, &Rc::new(Cell::new(0))),
        &Sinks::exactly_once(),
    );
    env.execute("three branches").unwrap();

    let env = checkpointed_env(storage, RestartStrategy::fixed_delay(3, Duration::ZERO));
    build_sums_only(
        &env,
        running_sum(None, &Rc::new(Cell::new(0))),
        &CollectSink::new(),
    );
    assert!(matches!(
        env.execute("one branch"),
        Err(StreamError::Checkpoint(message)) if message.contains("another job graph")
    ));
}
