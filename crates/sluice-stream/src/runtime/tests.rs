//! The parallel runtime against the single-threaded executor, backpressure, and
//! checkpoint/restore with another parallelism.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{ParallelCheckpointStore, ParallelConfig, ParallelSink, ParallelStream};
use crate::{
    CollectSink, CollectionSource, StreamError, StreamExecutionEnvironment,
    TumblingEventTimeWindows, WatermarkEmission, WatermarkStrategy,
};

/// (key, count, event time) records, disorder within `OUT_OF_ORDERNESS_MS`.
type Event = (u32, u64, i64);

const OUT_OF_ORDERNESS_MS: u64 = 20;
const WINDOW_MS: u64 = 50;

/// `count` events over 13 keys, timestamps rising with a wobble of at most 15 ms.
fn events(count: i64) -> Vec<Event> {
    (0..count)
        .map(|i| {
            (
                (i * 7 % 13) as u32,
                1 + (i % 3) as u64,
                i * 3 + (i * 11 % 6),
            )
        })
        .collect()
}

/// Splits in read order: record i goes to split i % split_count.
fn splits(events: &[Event], split_count: usize) -> Vec<Vec<(Event, i64)>> {
    let mut splits = vec![Vec::new(); split_count];
    for (i, event) in events.iter().enumerate() {
        splits[i % split_count].push((*event, event.2));
    }
    splits
}

fn sum_counts(a: Event, b: Event) -> Event {
    (a.0, a.1 + b.1, a.2.max(b.2))
}

/// The window's key, count sum and window (timestamps are the max per window, so the
/// window start identifies it).
fn normalized(mut results: Vec<Event>) -> Vec<(u32, u64, i64)> {
    let window_ms = WINDOW_MS as i64;
    for result in &mut results {
        result.2 = result.2.div_euclid(window_ms) * window_ms;
    }
    results.sort_unstable();
    results
}

fn single_threaded(events: &[Event]) -> Vec<(u32, u64, i64)> {
    let mut env = StreamExecutionEnvironment::new();
    env.set_watermark_emission(WatermarkEmission::AfterEveryEvent);
    let sink = CollectSink::new();
    env.from_source(
        CollectionSource::of(events.to_vec()),
        WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(OUT_OF_ORDERNESS_MS))
            .with_timestamp_assigner(|event: &Event, _| event.2),
        "events",
    )
    .key_by(|event: &Event| event.0)
    .window(TumblingEventTimeWindows::of(Duration::from_millis(
        WINDOW_MS,
    )))
    .reduce(sum_counts)
    .sink_to(sink.clone());
    env.execute("single-threaded").expect("the job runs");
    normalized(sink.records())
}

fn windowed_job(config: ParallelConfig, events: &[Event]) -> ParallelStream<Event> {
    ParallelStream::from_splits(
        config,
        splits(events, 6),
        Duration::from_millis(OUT_OF_ORDERNESS_MS),
    )
    .rebalance()
    .map(|event: Event| (event.0, event.1 * 10, event.2))
    .map(|event: Event| (event.0, event.1 / 10, event.2))
    .key_by(|event: &Event| event.0)
    .tumbling_window_reduce(Duration::from_millis(WINDOW_MS), sum_counts)
}

#[test]
fn keyed_windows_match_the_single_threaded_executor_at_every_parallelism() {
    let events = events(2_000);
    let expected = single_threaded(&events);
    assert!(expected.len() > 100, "enough windows to spread over tasks");
    for parallelism in [1, 2, 4] {
        let config = ParallelConfig {
            parallelism,
            channel_capacity: 8,
            ..ParallelConfig::default()
        };
        let sink = ParallelSink::new();
        let result = windowed_job(config, &events)
            .execute(&sink, &ParallelCheckpointStore::new())
            .expect("the job runs");
        assert_eq!(
            result.num_late_records_dropped, 0,
            "parallelism {parallelism}"
        );
        assert_eq!(
            normalized(sink.records()),
            expected,
            "parallelism {parallelism}"
        );
    }
}

#[test]
fn a_slow_stage_bounds_how_far_the_source_runs_ahead() {
    const CAPACITY: usize = 4;
    let config = ParallelConfig {
        parallelism: 1,
        channel_capacity: CAPACITY,
        ..ParallelConfig::default()
    };
    let records: Vec<(u64, i64)> = (0..300).map(|i| (i, i as i64)).collect();
    let stream = ParallelStream::from_splits(config, vec![records], Duration::ZERO);
    let emitted = stream.source_records_emitted();
    let processed = Arc::new(AtomicU64::new(0));
    let most_ahead = Arc::new(AtomicU64::new(0));
    let (processed_in_sink, most_ahead_in_sink) = (processed.clone(), most_ahead.clone());
    let sink = ParallelSink::new();
    stream
        .map(|record: u64| record)
        .map(move |record: u64| {
            // Slow, so the channels before it fill up.
            std::thread::sleep(Duration::from_micros(300));
            let done = processed_in_sink.fetch_add(1, Ordering::SeqCst) + 1;
            let ahead = emitted.load(Ordering::SeqCst).saturating_sub(done);
            most_ahead_in_sink.fetch_max(ahead, Ordering::SeqCst);
            record
        })
        .execute(&sink, &ParallelCheckpointStore::new())
        .expect("the job runs");
    assert_eq!(sink.records(), (0..300).collect::<Vec<u64>>());
    // Two channels of CAPACITY messages (records and watermarks), plus one message held
    // by each of the three tasks.
    let bound = 2 * CAPACITY as u64 + 3;
    let most_ahead = most_ahead.load(Ordering::SeqCst);
    assert!(
        most_ahead <= bound,
        "the source ran {most_ahead} records ahead, bound {bound}"
    );
    assert!(most_ahead >= CAPACITY as u64, "the channels did fill up");
}

/// (parallelism of the attempt that crashes, parallelism of the restored attempt).
const RESCALINGS: [(u32, u32); 3] = [(2, 3), (4, 1), (1, 4)];

#[test]
fn restoring_with_another_parallelism_gives_the_uninterrupted_result() {
    let events = events(3_000);
    let expected = single_threaded(&events);
    let config = |parallelism| ParallelConfig {
        parallelism,
        channel_capacity: 4,
        checkpoint_every_records: Some(100),
        ..ParallelConfig::default()
    };
    for (before, after) in RESCALINGS {
        let store = ParallelCheckpointStore::new();
        let sink = ParallelSink::new();
        let crashed = windowed_job(config(before), &events)
            .cancel_after_checkpoint(3)
            .execute(&sink, &store);
        assert!(
            crashed.is_err(),
            "{before} -> {after}: the first attempt fails"
        );
        let committed_before_crash = sink.records().len();
        assert!(
            committed_before_crash > 0 && committed_before_crash < expected.len(),
            "{before} -> {after}: completed checkpoints committed some windows, not all"
        );
        let checkpoint = store.latest().expect("checkpoint 3 completed");
        assert_eq!(checkpoint.checkpoint_id, 3, "{before} -> {after}");
        assert!(
            checkpoint.stage_states[2].len() > 1,
            "{before} -> {after}: window state spread over key groups"
        );

        let result = windowed_job(config(after), &events)
            .execute(&sink, &store)
            .expect("the restored job runs");
        assert_eq!(
            result.restored_checkpoint_id,
            Some(3),
            "{before} -> {after}"
        );
        assert_eq!(result.num_late_records_dropped, 0, "{before} -> {after}");
        assert_eq!(
            normalized(sink.records()),
            expected,
            "{before} -> {after}: exactly the uninterrupted result"
        );
    }
}

#[test]
fn invalid_configurations_are_rejected() {
    let invalid = [
        ParallelConfig {
            parallelism: 0,
            ..ParallelConfig::default()
        },
        ParallelConfig {
            parallelism: 8,
            max_parallelism: 4,
            ..ParallelConfig::default()
        },
        ParallelConfig {
            channel_capacity: 0,
            ..ParallelConfig::default()
        },
        ParallelConfig {
            checkpoint_every_records: Some(0),
            ..ParallelConfig::default()
        },
    ];
    for config in invalid {
        let result = ParallelStream::from_splits(config, vec![vec![(1_u8, 1)]], Duration::ZERO)
            .execute(&ParallelSink::new(), &ParallelCheckpointStore::new());
        assert!(
            matches!(result, Err(StreamError::InvalidConfiguration(_))),
            "{config:?}: {result:?}"
        );
    }
}

#[test]
fn a_failing_task_fails_the_job_instead_of_hanging_it() {
    let config = ParallelConfig {
        parallelism: 2,
        channel_capacity: 2,
        ..ParallelConfig::default()
    };
    let events = events(1_000);
    let result = ParallelStream::from_splits(config, splits(&events, 4), Duration::ZERO)
        .map(|event: Event| {
            assert!(event.2 < 1_500, "a user function fails mid-stream");
            event
        })
        .key_by(|event: &Event| event.0)
        .tumbling_window_reduce(Duration::from_millis(WINDOW_MS), sum_counts)
        .execute(&ParallelSink::new(), &ParallelCheckpointStore::new());
    assert!(
        matches!(result, Err(StreamError::Function(_))),
        "{:?}",
        result.map(|_| ())
    );
}
