//! `kafka::KafkaSource` against a real Sluice node started in-process: bounded mode
//! (stopping offsets taken when the source connects, final watermark), starting from a
//! timestamp, topic patterns with partition discovery (new topics and new partitions,
//! read from earliest), and offsets committed to the group when a checkpoint completes
//! (and not with `commit.offsets.on.checkpoint=false`); a restored bounded source keeps
//! the stopping offsets of the attempt that failed.
//!
//! The jobs run on the test's thread; where a test needs something to happen while a job
//! runs (records written after the source took its stopping offsets, a topic created
//! after the source connected), a `map` function does it when the first record passes,
//! which is after the source connected.

mod support;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use sluice_client::TopicPartition;
use sluice_stream::kafka::{KafkaSource, StartingOffsets, StoppingOffsets};
use sluice_stream::{
    CollectSink, DirectoryCheckpointStorage, RestartStrategy, StreamError,
    StreamExecutionEnvironment, WatermarkStrategy,
};
use support::{Broker, FailingSink, Failure};

fn text(value: &[u8]) -> Result<String, String> {
    String::from_utf8(value.to_vec()).map_err(|error| error.to_string())
}

fn sorted(mut values: Vec<String>) -> Vec<String> {
    values.sort();
    values
}

/// (partition, timestamp, value) records `prefix-0..count`, round robin over partitions.
fn records(
    prefix: &str,
    count: i32,
    partitions: i32,
    first_timestamp: i64,
) -> Vec<(i32, i64, String)> {
    (0..count)
        .map(|index| {
            (
                index % partitions,
                first_timestamp + i64::from(index),
                format!("{prefix}-{index}"),
            )
        })
        .collect()
}

fn values(records: &[(i32, i64, String)]) -> Vec<String> {
    sorted(records.iter().map(|(_, _, value)| value.clone()).collect())
}

/// A bounded source reads what was committed when it connected (no aborted record, no
/// record written afterwards), then ends on its own with the final watermark.
#[test]
fn a_bounded_source_stops_at_the_end_it_saw_and_emits_the_final_watermark() {
    let broker = Rc::new(Broker::start());
    broker.create_topic("bounded", 3);
    let before = records("before", 120, 3, 1_000);
    broker.produce("bounded", &before, 25, "ABORTED");

    let env = StreamExecutionEnvironment::new();
    let source = KafkaSource::new(broker.bootstrap(), ["bounded"], |value: &[u8]| {
        let value = text(value)?;
        if value == "ABORTED" {
            return Err("read an aborted record".to_string());
        }
        Ok(value)
    })
    .with_bounded(StoppingOffsets::Latest);
    let sink = CollectSink::new();
    let written_after = Rc::new(Cell::new(false));
    let writer = broker.clone();
    let flag = written_after.clone();
    env.from_kafka_source(
        source,
        WatermarkStrategy::for_monotonous_timestamps(),
        "bounded",
    )
    .map(move |value: String| {
        if !flag.get() {
            flag.set(true);
            writer.produce("bounded", &records("after", 40, 3, 5_000), 10, "ABORTED");
        }
        value
    })
    .sink_to(sink.clone());
    env.execute("bounded").unwrap();

    assert!(written_after.get());
    assert_eq!(sorted(sink.records()), values(&before));
    assert_eq!(sink.watermarks().last(), Some(&i64::MAX));
    // The later records are in the topic: the source stopped, it did not miss them.
    assert_eq!(broker.read_committed("bounded", 3).len(), 160);
}

/// A bounded job restored from a checkpoint stops at the stopping offsets the failed
/// attempt took (they are in the checkpoint), not at the end after records written since.
#[test]
fn a_restored_bounded_source_keeps_its_stopping_offsets() {
    let broker = Rc::new(Broker::start());
    broker.create_topic("replayed", 1);
    let before = records("before", 200, 1, 1_000);
    broker.produce_plain("replayed", &before);

    let checkpoints = tempfile::tempdir().unwrap();
    let mut env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(20))
        .set_checkpoint_storage(DirectoryCheckpointStorage::new(checkpoints.path(), 2).unwrap())
        .set_restart_strategy(RestartStrategy::fixed_delay(1, Duration::ZERO));
    let source = KafkaSource::new(broker.bootstrap(), ["replayed"], text)
        .with_property("max.poll.records", "10")
        .with_bounded(StoppingOffsets::Latest);
    let sink = CollectSink::exactly_once();
    let writer = broker.clone();
    let written = Rc::new(Cell::new(false));
    let flag = written.clone();
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "replayed")
        .map(move |value: String| {
            if !flag.get() {
                flag.set(true);
                writer.produce_plain("replayed", &records("after", 50, 1, 5_000));
            }
            value
        })
        // Fails once at its 120th record; 3 ms per record, so checkpoints completed before.
        .sink_to(FailingSink::new(sink.clone(), vec![Failure::AtWrite(120)]));
    let result = env.execute("replayed").unwrap();

    assert!(written.get());
    assert_eq!(result.num_restarts, 1, "{result:?}");
    assert!(result.restored_checkpoint_id.is_some(), "{result:?}");
    assert_eq!(sorted(sink.records()), values(&before));
}

/// `StartingOffsets::Timestamp`: each partition from its first record at or after the
/// time; a partition without one starts at its end.
#[test]
fn a_timestamp_start_skips_older_records_per_partition() {
    let broker = Broker::start();
    broker.create_topic("timed", 2);
    let early: Vec<(i32, i64, String)> = (0..50)
        .map(|index| (1, 900 + i64::from(index), format!("p1-{index}")))
        .collect();
    let late: Vec<(i32, i64, String)> = (0..50)
        .map(|index| (0, 1_000 + i64::from(index), format!("p0-{index}")))
        .collect();
    broker.produce_plain("timed", &early);
    broker.produce_plain("timed", &late);

    let env = StreamExecutionEnvironment::new();
    let source = KafkaSource::new(broker.bootstrap(), ["timed"], text)
        .with_starting_offsets(StartingOffsets::Timestamp(1_030))
        .with_bounded(StoppingOffsets::Latest);
    let sink = CollectSink::new();
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "timed")
        .sink_to(sink.clone());
    env.execute("timed").unwrap();

    let expected: Vec<String> = (30..50).map(|index| format!("p0-{index}")).collect();
    assert_eq!(sorted(sink.records()), sorted(expected));
}

/// A pattern subscription reads every matching topic and none other; partition
/// discovery adds a topic created and a partition added while the job runs, from their
/// earliest offsets (records written before the discovery included).
#[test]
fn a_topic_pattern_reads_matching_topics_and_discovers_new_partitions() {
    let broker = Rc::new(Broker::start());
    broker.create_topic("metrics-a", 1);
    broker.create_topic("other", 1);
    let first = records("a", 30, 1, 1_000);
    broker.produce_plain("metrics-a", &first);
    broker.produce_plain("other", &records("other", 10, 1, 1_000));
    // Not matched: the pattern matches whole names.
    broker.create_topic("xmetrics-a", 1);
    broker.produce_plain("xmetrics-a", &records("x", 10, 1, 1_000));

    let env = StreamExecutionEnvironment::new();
    let source = KafkaSource::new(broker.bootstrap(), Vec::<String>::new(), text)
        .with_topic_pattern("metrics-.*")
        .with_property("partition.discovery.interval.ms", "100")
        .with_stop_when_idle(Duration::from_millis(2_500), false);
    let sink = CollectSink::new();
    let admin = broker.clone();
    let created = Rc::new(Cell::new(false));
    let flag = created.clone();
    let added_b = records("b", 20, 1, 2_000);
    let added_a1: Vec<(i32, i64, String)> = (0..15)
        .map(|index| (1, 3_000 + i64::from(index), format!("a1-{index}")))
        .collect();
    let (b, a1) = (added_b.clone(), added_a1.clone());
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "pattern")
        .map(move |value: String| {
            if !flag.get() {
                flag.set(true);
                admin.create_topic("metrics-b", 1);
                admin.produce_plain("metrics-b", &b);
                admin.add_partitions("metrics-a", 2);
                admin.produce_plain("metrics-a", &a1);
            }
            value
        })
        .sink_to(sink.clone());
    env.execute("pattern").unwrap();

    assert!(created.get());
    let mut expected = values(&first);
    expected.extend(values(&added_b));
    expected.extend(values(&added_a1));
    assert_eq!(sorted(sink.records()), sorted(expected));
}

/// With a group id, each completed checkpoint commits the offsets it recorded (the next
/// offset to read); a later job without a checkpoint starting from the committed offsets
/// reads only what came after. `commit.offsets.on.checkpoint=false` commits nothing.
#[test]
fn offsets_are_committed_to_the_group_when_a_checkpoint_completes() {
    let broker = Broker::start();
    broker.create_topic("committed", 2);
    let first = records("first", 60, 2, 1_000);
    broker.produce_plain("committed", &first);
    let partitions = [
        TopicPartition::new("committed", 0),
        TopicPartition::new("committed", 1),
    ];

    let run = |group: &str, commit: bool, starting: StartingOffsets| -> Vec<String> {
        let checkpoints = tempfile::tempdir().unwrap();
        let mut env = StreamExecutionEnvironment::new();
        env.enable_checkpointing(Duration::from_millis(100))
            .set_checkpoint_storage(
                DirectoryCheckpointStorage::new(checkpoints.path(), 2).unwrap(),
            );
        let source = KafkaSource::new(broker.bootstrap(), ["committed"], text)
            .with_group_id(group)
            .with_starting_offsets(starting)
            .with_property("commit.offsets.on.checkpoint", commit.to_string())
            .with_stop_when_idle(Duration::from_millis(500), true);
        let sink = CollectSink::new();
        env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "committed")
            .sink_to(sink.clone());
        let result = env.execute("committed").unwrap();
        assert!(result.num_completed_checkpoints >= 1, "{result:?}");
        sorted(sink.records())
    };

    assert_eq!(
        run("readers", true, StartingOffsets::Earliest),
        values(&first)
    );
    let committed = broker.committed("readers", &partitions);
    assert_eq!(committed.get(&partitions[0]), Some(&30), "{committed:?}");
    assert_eq!(committed.get(&partitions[1]), Some(&30), "{committed:?}");

    let second = records("second", 10, 2, 2_000);
    broker.produce_plain("committed", &second);
    assert_eq!(
        run("readers", true, StartingOffsets::CommittedOrEarliest),
        values(&second)
    );
    let committed = broker.committed("readers", &partitions);
    assert_eq!(committed.get(&partitions[0]), Some(&35), "{committed:?}");

    assert_eq!(
        run("silent", false, StartingOffsets::Earliest).len(),
        first.len() + second.len()
    );
    assert!(broker.committed("silent", &partitions).is_empty());
}

/// Settings of the source itself are checked when the job starts: a clear error, not a
/// panic or a consumer error.
#[test]
fn invalid_source_settings_fail_the_job_with_a_configuration_error() {
    let broker = Broker::start();
    broker.create_topic("settings", 1);
    let cases: Vec<(&str, KafkaSource<String>)> = vec![
        (
            "partition.discovery.interval.ms",
            KafkaSource::new(broker.bootstrap(), ["settings"], text)
                .with_property("partition.discovery.interval.ms", "soon"),
        ),
        (
            "commit.offsets.on.checkpoint",
            KafkaSource::new(broker.bootstrap(), ["settings"], text)
                .with_group_id("g")
                .with_property("commit.offsets.on.checkpoint", "maybe"),
        ),
        (
            "topic pattern",
            KafkaSource::new(broker.bootstrap(), Vec::<String>::new(), text)
                .with_topic_pattern("metrics-("),
        ),
    ];
    for (what, source) in cases {
        let env = StreamExecutionEnvironment::new();
        env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "settings")
            .sink_to(CollectSink::new());
        match env.execute("settings") {
            Err(StreamError::InvalidConfiguration(message)) => {
                assert!(message.contains(what), "{what}: {message}")
            }
            other => panic!("{what}: expected a configuration error, got {other:?}"),
        }
    }
}
