//! The Kafka connectors against a real Sluice node started in-process:
//! - a source → exactly-once sink round trip, read_committed on both ends (an aborted
//!   record reaching the job fails it); tombstones written by the sink;
//! - at-least-once: a failure after the last checkpoint loses nothing;
//! - the source's watermark is the minimum over its partitions';
//! - issue 10's fault test on the guide's order-statistics pipeline
//!   (`examples/order_stats.rs`, included below for its `build_job`): jobs killed in the
//!   middle of a transaction and between "checkpoint stored" and "transaction committed"
//!   (without restarts, then started again on the same checkpoint directory), then the
//!   same failures survived by the restart strategy; the read_committed output must equal
//!   a batch computation over the input, without duplicates. The input is in order
//!   within 10 s per partition and ends with a trailing order per partition that pushes
//!   every partition's watermark past the last window.
//!
//! The broker runs on its own multi-thread runtime; the jobs run on the test's thread
//! (the executor is synchronous and its connectors block on runtimes of their own).

#[path = "../examples/order_stats.rs"]
mod order_stats;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_stream::kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, StoppingOffsets};
use sluice_stream::{
    CollectSink, DirectoryCheckpointStorage, RestartStrategy, StreamError,
    StreamExecutionEnvironment, WatermarkEmission, WatermarkStrategy,
};

use order_stats::{Args, Order, OrderStats};
use support::{Broker, FailOnceAfterCheckpoint, FailingSink, Failure};

fn checkpointed_env(
    directory: &std::path::Path,
    restart: RestartStrategy,
) -> StreamExecutionEnvironment {
    let mut env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(100))
        .set_checkpoint_storage(DirectoryCheckpointStorage::new(directory, 2).unwrap())
        .set_restart_strategy(restart);
    env
}

#[test]
fn a_round_trip_reads_and_writes_committed_records_only() {
    let broker = Broker::start();
    broker.create_topic("words", 3);
    broker.create_topic("shouted", 2);
    let input: Vec<(i32, i64, String)> = (0..300)
        .map(|index| (index % 3, 1_000 + i64::from(index), format!("word-{index}")))
        .collect();
    broker.produce("words", &input, 40, "ABORTED");

    let checkpoints = tempfile::tempdir().unwrap();
    let env = checkpointed_env(checkpoints.path(), RestartStrategy::NoRestart);
    let source = KafkaSource::new(broker.bootstrap(), ["words"], |value: &[u8]| {
        let value = String::from_utf8(value.to_vec()).map_err(|error| error.to_string())?;
        // An aborted record reaching the job fails it: read_committed is checked here.
        if value == "ABORTED" {
            return Err("read an aborted record".to_string());
        }
        Ok(value)
    })
    .with_stop_when_idle(Duration::from_millis(500), true);
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "words")
        .map(|word: String| word.to_uppercase())
        .sink_to(KafkaSink::new(
            broker.bootstrap(),
            "shouted",
            |word: &String| (None, word.clone().into_bytes()),
            DeliveryGuarantee::ExactlyOnce {
                transactional_id_prefix: "round-trip".to_string(),
            },
        ));
    let result = env.execute("round trip").unwrap();
    assert!(result.num_completed_checkpoints >= 1, "{result:?}");

    let mut expected: Vec<String> = input
        .iter()
        .map(|(_, _, word)| word.to_uppercase())
        .collect();
    let mut output = broker.read_committed("shouted", 2);
    expected.sort();
    output.sort();
    assert_eq!(output, expected);
}

/// `KafkaSink::with_tombstones`: a record the serializer gives no value is written as a
/// tombstone (a null value, not an empty one), in the checkpoint's transaction.
#[test]
fn a_sink_writes_tombstones() {
    let broker = Broker::start();
    broker.create_topic("changes", 1);
    broker.create_topic("changelog", 1);
    let input: Vec<(i32, i64, String)> = ["a=1", "b=2", "a=", "c=3", "b="]
        .iter()
        .enumerate()
        .map(|(index, change)| (0, 1_000 + index as i64, change.to_string()))
        .collect();
    broker.produce_plain("changes", &input);
    let checkpoints = tempfile::tempdir().unwrap();
    let env = checkpointed_env(checkpoints.path(), RestartStrategy::NoRestart);
    let source = KafkaSource::new(broker.bootstrap(), ["changes"], |value: &[u8]| {
        String::from_utf8(value.to_vec()).map_err(|error| error.to_string())
    })
    .with_stop_when_idle(Duration::from_millis(500), true);
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "changes")
        .sink_to(KafkaSink::with_tombstones(
            broker.bootstrap(),
            "changelog",
            |change: &String| {
                let (key, value) = change.split_once('=').expect("key=value");
                let value = (!value.is_empty()).then(|| value.as_bytes().to_vec());
                (Some(key.as_bytes().to_vec()), value)
            },
            DeliveryGuarantee::ExactlyOnce {
                transactional_id_prefix: "tombstones".to_string(),
            },
        ));
    env.execute("tombstones").unwrap();
    assert_eq!(
        broker.read_committed("changelog", 1),
        ["1", "2", support::TOMBSTONE, "3", support::TOMBSTONE]
    );
}

/// The sink's `transaction.timeout.ms` (15 minutes by default) above the broker's
/// `transaction.max.timeout.ms` is a configuration error naming both, not a restart loop.
#[test]
fn a_transaction_timeout_above_the_brokers_maximum_is_a_configuration_error() {
    let broker = Broker::start_with(&[("transaction.max.timeout.ms", "60000")]);
    broker.create_topic("short-in", 1);
    broker.create_topic("short-out", 1);
    broker.produce_plain("short-in", &[(0, 1_000, "x".to_string())]);

    let checkpoints = tempfile::tempdir().unwrap();
    let env = checkpointed_env(
        checkpoints.path(),
        RestartStrategy::fixed_delay(3, Duration::ZERO),
    );
    let source = KafkaSource::new(broker.bootstrap(), ["short-in"], |value: &[u8]| {
        String::from_utf8(value.to_vec()).map_err(|error| error.to_string())
    })
    .with_bounded(StoppingOffsets::Latest);
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "short-in")
        .sink_to(KafkaSink::new(
            broker.bootstrap(),
            "short-out",
            |value: &String| (None, value.clone().into_bytes()),
            DeliveryGuarantee::ExactlyOnce {
                transactional_id_prefix: "short".to_string(),
            },
        ));
    match env.execute("short timeout") {
        Err(StreamError::InvalidConfiguration(message)) => {
            assert!(
                message.contains("transaction.timeout.ms=900000")
                    && message.contains("transaction.max.timeout.ms"),
                "{message}"
            );
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

/// At-least-once: a failure after the last checkpoint replays records into the output
/// (duplicates allowed), but every record is there.
#[test]
fn at_least_once_loses_nothing_across_a_restart() {
    let broker = Broker::start();
    broker.create_topic("letters", 3);
    broker.create_topic("copied", 1);
    let input: Vec<(i32, i64, String)> = (0..200)
        .map(|index| {
            (
                index % 3,
                1_000 + i64::from(index),
                format!("letter-{index}"),
            )
        })
        .collect();
    broker.produce("letters", &input, 50, "ABORTED");

    let checkpoints = tempfile::tempdir().unwrap();
    let env = checkpointed_env(
        checkpoints.path(),
        RestartStrategy::fixed_delay(1, Duration::ZERO),
    );
    let source = KafkaSource::new(broker.bootstrap(), ["letters"], |value: &[u8]| {
        String::from_utf8(value.to_vec()).map_err(|error| error.to_string())
    })
    .with_property("max.poll.records", "10")
    .with_stop_when_idle(Duration::from_millis(300), true);
    let sink = FailingSink::new(
        KafkaSink::new(
            broker.bootstrap(),
            "copied",
            |letter: &String| (None, letter.clone().into_bytes()),
            DeliveryGuarantee::AtLeastOnce,
        ),
        vec![Failure::AtWrite(150)],
    );
    env.from_kafka_source(source, WatermarkStrategy::no_watermarks(), "letters")
        .sink_to(sink);
    let result = env.execute("at least once").unwrap();
    assert_eq!(result.num_restarts, 1, "{result:?}");

    let mut output = broker.read_committed("copied", 1);
    output.sort();
    output.dedup();
    let mut expected: Vec<String> = input.into_iter().map(|(_, _, letter)| letter).collect();
    expected.sort();
    assert_eq!(output, expected);
}

/// The source's watermark is the minimum over its partitions' watermarks (Flink's
/// per-split watermarks): partition 2's only record (500) holds it at 499 although
/// partitions 0 and 1 run far ahead, whatever order the partitions are read in.
#[test]
fn the_source_watermark_is_the_minimum_over_partitions() {
    let broker = Broker::start();
    broker.create_topic("timed", 3);
    let mut input: Vec<(i32, i64, String)> = Vec::new();
    for index in 0..100 {
        input.push((0, index * 10, format!("early-{index}")));
        input.push((1, 100_000 + index * 10, format!("late-{index}")));
    }
    input.push((2, 500, "middle".to_string()));
    broker.produce("timed", &input, 67, "ABORTED");

    let mut env = StreamExecutionEnvironment::new();
    env.set_watermark_emission(WatermarkEmission::AfterEveryEvent);
    let source = KafkaSource::new(broker.bootstrap(), ["timed"], |value: &[u8]| {
        String::from_utf8(value.to_vec()).map_err(|error| error.to_string())
    })
    .with_stop_when_idle(Duration::from_millis(300), false);
    let sink = CollectSink::new();
    env.from_kafka_source(
        source,
        WatermarkStrategy::for_monotonous_timestamps(),
        "timed",
    )
    .sink_to(sink.clone());
    env.execute("watermarks").unwrap();

    assert_eq!(sink.records().len(), input.len());
    let watermarks = sink.watermarks();
    assert_eq!(watermarks.last(), Some(&499), "{watermarks:?}");
    assert!(
        watermarks.iter().all(|watermark| *watermark <= 499),
        "{watermarks:?}"
    );
}

/// Where the failing sink fails next.
const ORDERS: i64 = 1_500;
const PARTITIONS: i32 = 3;
const REGIONS: [&str; 4] = ["EU", "US", "APAC", "LATAM"];
const STATUSES: [&str; 4] = ["COMPLETED", "COMPLETED", "PENDING", "CANCELLED"];

/// Orders 3 s apart in event time, each displaced by up to ±4 s (within the 10 s bound
/// in every partition), amounts exact in binary so sums do not depend on order; then per
/// partition a trailing order 6 minutes after the last, which pushes every partition's
/// watermark past the last window.
fn orders() -> Vec<(i32, Order)> {
    let mut seed = 0x9e37_79b9_u64;
    let mut next = |bound: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % bound
    };
    let base = 1_700_000_000_000_i64;
    let order = |index: i64, created_at: i64, status: &str, region: &str, amount: f64| Order {
        order_id: serde_json::json!(index),
        customer_id: serde_json::json!(index % 97),
        amount,
        currency: "EUR".to_string(),
        created_at,
        status: status.to_string(),
        region: region.to_string(),
    };
    let mut orders: Vec<(i32, Order)> = (0..ORDERS)
        .map(|index| {
            let jitter = next(8_001) as i64 - 4_000;
            let created_at = base + index * 3_000 + jitter;
            let status = STATUSES[next(4) as usize];
            let region = REGIONS[next(4) as usize];
            let amount = next(4_000) as f64 * 0.25;
            let partition = (index % i64::from(PARTITIONS)) as i32;
            (partition, order(index, created_at, status, region, amount))
        })
        .collect();
    let last = base + ORDERS * 3_000 + 4_000;
    for partition in 0..PARTITIONS {
        let trailing = order(-1, last + 6 * 60_000, "TRAILING", "EU", 0.0);
        orders.push((partition, trailing));
    }
    orders
}

fn to_json(order: &Order) -> String {
    serde_json::json!({
        "order_id": order.order_id,
        "customer_id": order.customer_id,
        "amount": order.amount,
        "currency": order.currency,
        "created_at": order.created_at,
        "status": order.status,
        "region": order.region,
    })
    .to_string()
}

/// The batch computation: every COMPLETED order's 5-minute window, per region.
fn batch_stats(orders: &[(i32, Order)]) -> Vec<OrderStats> {
    let size_ms = order_stats::WINDOW_SIZE.as_millis() as i64;
    let mut windows: BTreeMap<(String, i64), (u64, f64)> = BTreeMap::new();
    for (_, order) in orders
        .iter()
        .filter(|(_, order)| order.status == "COMPLETED")
    {
        let start = order.created_at - order.created_at.rem_euclid(size_ms);
        let window = windows.entry((order.region.clone(), start)).or_default();
        window.0 += 1;
        window.1 += order.amount;
    }
    windows
        .into_iter()
        .map(|((region, window_start), (count, total))| OrderStats {
            region,
            window_start,
            window_end: window_start + size_ms,
            count,
            total,
        })
        .collect()
}

fn sorted(mut stats: Vec<OrderStats>) -> Vec<OrderStats> {
    stats.sort_by(|a, b| (&a.region, a.window_start).cmp(&(&b.region, b.window_start)));
    stats
}

#[test]
fn order_stats_output_equals_the_batch_computation_despite_failures() {
    let broker = Broker::start();
    broker.create_topic("orders", PARTITIONS);
    broker.create_topic("order-stats", 1);
    let orders = orders();
    let records: Vec<(i32, i64, String)> = orders
        .iter()
        .map(|(partition, order)| (*partition, order.created_at, to_json(order)))
        .collect();
    broker.produce("orders", &records, 100, "not json: aborted");
    let checkpoints = tempfile::tempdir().unwrap();
    let args = Args {
        bootstrap: broker.bootstrap(),
        input: "orders".to_string(),
        output: "order-stats".to_string(),
        checkpoint_dir: checkpoints.path().display().to_string(),
        checkpoint_interval_ms: 10,
        exit_when_idle_ms: Some(500),
        transactional_id_prefix: "order-stats-test".to_string(),
        parallelism: 1,
    };
    // Small polls and frequent checkpoints, so the job spans many checkpoints.
    let source = || order_stats::order_source(&args).with_property("max.poll.records", "10");

    let failing =
        |failures: Vec<Failure>| FailingSink::new(order_stats::stats_sink(&args), failures);
    // The job: watermarks after every record so windows fire throughout the input, and a
    // sink that takes 3 ms per record, so checkpoints (every 10 ms) fall between its
    // writes rather than after all of them.
    let job = |failures: Vec<Failure>, restart| {
        let mut env = order_stats::build_job(&args, source(), failing(failures), restart).unwrap();
        env.set_watermark_emission(WatermarkEmission::AfterEveryEvent);
        env
    };
    // Each failure comes before the input is exhausted, as it fails at the first write
    // or the first checkpoint with output of its attempt and some 60 windows fire
    // spread over the input.
    // 1. A process killed in the middle of a transaction, and
    // 2. one killed after a checkpoint was stored but before its transaction was
    //    committed: jobs without restarts, started again on the same directory.
    for (run, failure) in [(1, Failure::AtWrite(2)), (2, Failure::BeforeCommit)] {
        let env = job(vec![failure], RestartStrategy::NoRestart);
        let killed = env.execute("order stats, killed");
        assert!(
            matches!(&killed, Err(StreamError::Function(message)) if message.contains("injected")),
            "run {run}: {killed:?}"
        );
    }
    // 3. The same failures inside one process, survived by the restart strategy.
    let env = job(
        vec![Failure::AtWrite(1), Failure::BeforeCommit],
        RestartStrategy::fixed_delay(5, Duration::ZERO),
    );
    let result = env.execute("order stats, resumed").unwrap();

    let output: Vec<OrderStats> = broker
        .read_committed("order-stats", 1)
        .iter()
        .map(|value| serde_json::from_str(value).unwrap())
        .collect();
    let expected = batch_stats(&orders);
    assert!(expected.len() > 60, "{} windows", expected.len());
    assert_eq!(sorted(output), expected);
    assert!(result.restored_checkpoint_id.is_some(), "{result:?}");
    assert_eq!(result.num_restarts, 2, "{result:?}");
}

/// The exactly-once path on parallel tasks (`execute_parallel`): a Kafka source (one task,
/// then split over two and three: partitions shared out as Flink's enumerator does) → key_by → tumbling event-time windows summing per key (two tasks) → exactly-once
/// Kafka sinks (one per task, transactional ids `{prefix}-{subtask}-{checkpoint}`). The
/// job fails once after checkpoints and restarts; then a second job fails without a
/// restart and the same job at parallelism 3 resumes from its latest checkpoint (a
/// rescale: sink states of former instances are committed and their lingering
/// transactions aborted by the instances owning their key groups). Each time the
/// read_committed output equals the batch computation, without duplicates.
#[test]
fn parallel_exactly_once_survives_a_restart_and_a_rescale() {
    use sluice_stream::TumblingEventTimeWindows;
    use std::sync::Arc;

    const EVENTS: i64 = 900;
    let broker = Broker::start();
    broker.create_topic("events", 3);
    // (key, value, timestamp) as "k:v:ts", in order per partition.
    let input: Vec<(i32, i64, String)> = (0..EVENTS)
        .map(|i| {
            let timestamp = 1_000 + i * 10;
            (
                (i % 3) as i32,
                timestamp,
                format!("{}:{}:{}", i % 12, i, timestamp),
            )
        })
        .collect();
    broker.produce("events", &input, 60, "ABORTED");
    // Windows of 1 s: key → window start → sum.
    let mut expected: Vec<String> = {
        let mut sums: BTreeMap<(u64, i64), u64> = BTreeMap::new();
        for i in 0..EVENTS {
            let timestamp = 1_000 + i * 10;
            *sums
                .entry(((i % 12) as u64, timestamp / 1_000 * 1_000))
                .or_default() += i as u64;
        }
        sums.into_iter()
            .map(|((key, start), sum)| format!("{key}:{start}:{sum}"))
            .collect()
    };
    expected.sort();

    let bootstrap = broker.bootstrap();
    let job = |output: &'static str,
               prefix: &'static str,
               failure: Option<FailOnceAfterCheckpoint<()>>,
               source_parallelism: u32| {
        let bootstrap = bootstrap.clone();
        move |env: &StreamExecutionEnvironment| {
            let source = KafkaSource::new(bootstrap.clone(), ["events"], |value: &[u8]| {
                let text = std::str::from_utf8(value).map_err(|error| error.to_string())?;
                if text == "ABORTED" {
                    return Err("read an aborted record".to_string());
                }
                let fields: Vec<u64> = text.split(':').map(|f| f.parse().unwrap()).collect();
                Ok((fields[0], fields[1], fields[2] as i64))
            })
            .with_property("max.poll.records", "10")
            .with_bounded(StoppingOffsets::Latest);
            let strategy =
                WatermarkStrategy::for_bounded_out_of_orderness(Duration::from_millis(50))
                    .with_timestamp_assigner(|event: &(u64, u64, i64), _| event.2);
            let sink = KafkaSink::new(
                bootstrap.clone(),
                output,
                |(key, sum, last): &(u64, u64, i64)| {
                    (
                        None,
                        format!("{key}:{}:{sum}", last / 1_000 * 1_000).into_bytes(),
                    )
                },
                DeliveryGuarantee::ExactlyOnce {
                    transactional_id_prefix: prefix.to_string(),
                },
            );
            let windows = env
                .from_kafka_source(source, strategy, "events")
                .set_parallelism(source_parallelism)
                // Slow the source down, so windows fire and checkpoints complete while
                // it runs.
                .map(|event: (u64, u64, i64)| {
                    std::thread::sleep(Duration::from_millis(1));
                    event
                })
                .key_by(|event: &(u64, u64, i64)| event.0)
                .window(TumblingEventTimeWindows::of(Duration::from_secs(1)))
                .reduce(|a: (u64, u64, i64), b: (u64, u64, i64)| (a.0, a.1 + b.1, a.2.max(b.2)));
            match &failure {
                Some(counters) => windows.sink_to(FailOnceAfterCheckpoint::sharing(sink, counters)),
                None => windows.sink_to(sink),
            }
        }
    };
    let counters = |after| FailOnceAfterCheckpoint {
        inner: (),
        after,
        writes: Arc::default(),
        completed: Arc::default(),
        failed: Arc::default(),
    };
    let env_at = |checkpoints: &std::path::Path, parallelism, restart| {
        let mut env = StreamExecutionEnvironment::new();
        env.set_parallelism(parallelism)
            .set_channel_capacity(8)
            .set_watermark_emission(WatermarkEmission::AfterEveryEvent)
            .enable_checkpointing(Duration::from_millis(50))
            .set_checkpoint_storage(DirectoryCheckpointStorage::new(checkpoints, 2).unwrap())
            .set_restart_strategy(restart);
        env
    };

    // 1. Fails once, restarts at the same parallelism.
    broker.create_topic("sums-restart", 1);
    let checkpoints = tempfile::tempdir().unwrap();
    let env = env_at(
        checkpoints.path(),
        2,
        RestartStrategy::fixed_delay(1, Duration::ZERO),
    );
    let result = env
        .execute_parallel(
            "parallel restart",
            job("sums-restart", "par-restart", Some(counters(40)), 1),
        )
        .unwrap();
    assert_eq!(result.num_restarts, 1, "{result:?}");
    let mut output = broker.read_committed("sums-restart", 1);
    output.sort();
    assert_eq!(output, expected);

    // 2. Fails at parallelism 2 without restarts; resumes at parallelism 3.
    broker.create_topic("sums-rescale", 1);
    let checkpoints = tempfile::tempdir().unwrap();
    let env = env_at(checkpoints.path(), 2, RestartStrategy::NoRestart);
    let failed = env.execute_parallel(
        "parallel rescale",
        job("sums-rescale", "par-rescale", Some(counters(40)), 2),
    );
    assert!(
        matches!(failed, Err(StreamError::Function(_))),
        "{failed:?}"
    );
    let env = env_at(checkpoints.path(), 3, RestartStrategy::NoRestart);
    let result = env
        .execute_parallel(
            "parallel rescale",
            job("sums-rescale", "par-rescale", None, 3),
        )
        .unwrap();
    assert!(result.restored_checkpoint_id.is_some(), "{result:?}");
    let mut output = broker.read_committed("sums-rescale", 1);
    output.sort();
    assert_eq!(output, expected);
}
