//! The guide's order-statistics pipeline as a program: Kafka source → keep COMPLETED →
//! key by region → 5-minute tumbling event-time windows (10 s bounded out-of-orderness)
//! → count and total → exactly-once Kafka sink.
//!
//! ```text
//! cargo run --release -p sluice-stream --example order_stats -- \
//!     --bootstrap HOST:PORT --input TOPIC --output TOPIC --checkpoint-dir DIR \
//!     [--checkpoint-interval-ms 1000] [--exit-when-idle-ms N] \
//!     [--transactional-id-prefix PREFIX] [--parallelism N]
//! ```
//!
//! Input: JSON orders `{"order_id","customer_id","amount","currency","created_at",
//! "status","region"}`, `created_at` in epoch ms being the event time. Output: JSON
//! `{"region","window_start","window_end","count","total"}` keyed by region, written in one
//! Kafka transaction per checkpoint (read it with `isolation.level=read_committed`).
//!
//! Checkpoints go to `--checkpoint-dir`; killed and started again with the same
//! arguments, the program resumes from its latest checkpoint (source offsets, open
//! windows, and the transaction that checkpoint pre-committed, which it commits first).
//! `--exit-when-idle-ms N` ends it once no order arrived for N ms and a checkpoint covers
//! everything it read (a stop, not a drain: windows still open stay in the checkpoint);
//! without it the program runs until killed.
//!
//! The transactional id prefix defaults to `order-stats-<output topic>`: two instances
//! writing to the same output need different prefixes.
//!
//! `--parallelism N` (default 1: the single-threaded executor) runs the job with
//! `execute_parallel`: the source split over N tasks (the input's partitions shared out),
//! the windows and the sink on N tasks. Its checkpoints restore at any parallelism, so a
//! restart may change N.

#![allow(dead_code)] // `tests/kafka_exactly_once.rs` includes this file for `build_job`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_stream::kafka::{DeliveryGuarantee, KafkaSink, KafkaSource, StartingOffsets};
use sluice_stream::{
    AggregateFunction, DirectoryCheckpointStorage, RestartStrategy, Sink,
    StreamExecutionEnvironment, TumblingEventTimeWindows, WatermarkStrategy,
};

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Order {
    #[serde(default)]
    pub order_id: serde_json::Value,
    #[serde(default)]
    pub customer_id: serde_json::Value,
    pub amount: f64,
    #[serde(default)]
    pub currency: String,
    pub created_at: i64,
    pub status: String,
    pub region: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderStats {
    pub region: String,
    pub window_start: i64,
    pub window_end: i64,
    pub count: u64,
    pub total: f64,
}

/// Count and total amount of a window's orders.
struct OrderStatsAggregator;

impl AggregateFunction for OrderStatsAggregator {
    type In = Order;
    type Acc = (u64, f64);
    type Out = (u64, f64);
    fn create_accumulator(&self) -> (u64, f64) {
        (0, 0.0)
    }
    fn add(&self, order: Order, (count, total): (u64, f64)) -> (u64, f64) {
        (count + 1, total + order.amount)
    }
    fn get_result(&self, accumulator: &(u64, f64)) -> (u64, f64) {
        *accumulator
    }
    fn merge(&self, a: (u64, f64), b: (u64, f64)) -> (u64, f64) {
        (a.0 + b.0, a.1 + b.1)
    }
}

pub const WINDOW_SIZE: Duration = Duration::from_secs(5 * 60);
pub const OUT_OF_ORDERNESS: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
pub struct Args {
    pub bootstrap: String,
    pub input: String,
    pub output: String,
    pub checkpoint_dir: String,
    pub checkpoint_interval_ms: u64,
    pub exit_when_idle_ms: Option<u64>,
    pub transactional_id_prefix: String,
    pub parallelism: u32,
}

impl Args {
    fn parse(mut arguments: impl Iterator<Item = String>) -> Result<Args, String> {
        let (mut bootstrap, mut input, mut output, mut checkpoint_dir) = (None, None, None, None);
        let mut checkpoint_interval_ms = 1000;
        let mut exit_when_idle_ms = None;
        let mut prefix = None;
        let mut parallelism = 1;
        while let Some(flag) = arguments.next() {
            let value = arguments
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))?;
            let number = |value: &str| {
                value
                    .parse::<u64>()
                    .map_err(|error| format!("{flag}: {error}"))
            };
            match flag.as_str() {
                "--bootstrap" => bootstrap = Some(value),
                "--input" => input = Some(value),
                "--output" => output = Some(value),
                "--checkpoint-dir" => checkpoint_dir = Some(value),
                "--checkpoint-interval-ms" => checkpoint_interval_ms = number(&value)?,
                "--exit-when-idle-ms" => exit_when_idle_ms = Some(number(&value)?),
                "--transactional-id-prefix" => prefix = Some(value),
                "--parallelism" => {
                    parallelism = u32::try_from(number(&value)?)
                        .ok()
                        .filter(|parallelism| *parallelism > 0)
                        .ok_or_else(|| format!("--parallelism must be positive, got {value}"))?
                }
                other => return Err(format!("unknown flag {other}")),
            }
        }
        let required =
            |value: Option<String>, flag: &str| value.ok_or(format!("{flag} is required"));
        let output = required(output, "--output")?;
        Ok(Args {
            bootstrap: required(bootstrap, "--bootstrap")?,
            input: required(input, "--input")?,
            transactional_id_prefix: prefix.unwrap_or_else(|| format!("order-stats-{output}")),
            output,
            checkpoint_dir: required(checkpoint_dir, "--checkpoint-dir")?,
            checkpoint_interval_ms,
            exit_when_idle_ms,
            parallelism,
        })
    }
}

/// The source of `args`.
pub fn order_source(args: &Args) -> KafkaSource<Order> {
    let source = KafkaSource::new(args.bootstrap.clone(), [args.input.clone()], |value| {
        serde_json::from_slice::<Order>(value).map_err(|error| error.to_string())
    })
    .with_starting_offsets(StartingOffsets::Earliest);
    match args.exit_when_idle_ms {
        Some(idle_ms) => source.with_stop_when_idle(Duration::from_millis(idle_ms), true),
        None => source,
    }
}

/// The exactly-once sink of `args`.
pub fn stats_sink(args: &Args) -> KafkaSink<OrderStats> {
    KafkaSink::new(
        args.bootstrap.clone(),
        args.output.clone(),
        |stats: &OrderStats| {
            let value = serde_json::to_vec(stats).expect("OrderStats serializes to JSON");
            (Some(stats.region.clone().into_bytes()), value)
        },
        DeliveryGuarantee::ExactlyOnce {
            transactional_id_prefix: args.transactional_id_prefix.clone(),
        },
    )
}

/// The pipeline, from `source` to `sink`, with checkpoints in `args.checkpoint_dir`.
pub fn build_job(
    args: &Args,
    source: KafkaSource<Order>,
    sink: impl Sink<OrderStats>,
    restart: RestartStrategy,
) -> Result<StreamExecutionEnvironment, sluice_stream::StreamError> {
    let env = configure(args, restart)?;
    add_pipeline(&env, source, sink, 1);
    Ok(env)
}

/// Checkpoints in `args.checkpoint_dir`, the restart strategy, the parallelism.
pub fn configure(
    args: &Args,
    restart: RestartStrategy,
) -> Result<StreamExecutionEnvironment, sluice_stream::StreamError> {
    let mut env = StreamExecutionEnvironment::new();
    env.enable_checkpointing(Duration::from_millis(args.checkpoint_interval_ms))
        .set_checkpoint_storage(DirectoryCheckpointStorage::new(&args.checkpoint_dir, 3)?)
        .set_restart_strategy(restart)
        .set_parallelism(args.parallelism);
    Ok(env)
}

/// The guide's pipeline from `source` to `sink` in `env`; the source split over
/// `source_parallelism` tasks when the job runs with `execute_parallel`.
pub fn add_pipeline(
    env: &StreamExecutionEnvironment,
    source: KafkaSource<Order>,
    sink: impl Sink<OrderStats>,
    source_parallelism: u32,
) {
    let orders = env.from_kafka_source(
        source,
        WatermarkStrategy::for_bounded_out_of_orderness(OUT_OF_ORDERNESS)
            .with_timestamp_assigner(|order: &Order, _| order.created_at),
        "Order Source",
    );
    orders
        .set_parallelism(source_parallelism)
        .filter(|order| order.status == "COMPLETED")
        .key_by(|order| order.region.clone())
        .window(TumblingEventTimeWindows::of(WINDOW_SIZE))
        .aggregate_with(OrderStatsAggregator, |region, context, (count, total)| {
            OrderStats {
                region: region.clone(),
                window_start: context.window.start,
                window_end: context.window.end,
                count,
                total,
            }
        })
        .sink_to(sink);
}

fn main() {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!(
                "order_stats: {message}\nusage: order_stats --bootstrap HOST:PORT --input TOPIC \
                 --output TOPIC --checkpoint-dir DIR [--checkpoint-interval-ms MS] \
                 [--exit-when-idle-ms MS] [--transactional-id-prefix PREFIX] \
                 [--parallelism N]"
            );
            std::process::exit(2);
        }
    };
    let restart = RestartStrategy::fixed_delay(3, Duration::from_secs(1));
    let name = "Order Statistics Pipeline";
    let result = if args.parallelism == 1 {
        build_job(&args, order_source(&args), stats_sink(&args), restart)
            .and_then(|env| env.execute(name))
    } else {
        configure(&args, restart).and_then(|env| {
            env.execute_parallel(name, |env| {
                add_pipeline(
                    env,
                    order_source(&args),
                    stats_sink(&args),
                    args.parallelism,
                )
            })
        })
    };
    match result {
        Ok(result) => println!(
            "order_stats: done after {} checkpoints (restored from {:?})",
            result.num_completed_checkpoints, result.restored_checkpoint_id
        ),
        Err(error) => {
            eprintln!("order_stats: {error}");
            std::process::exit(1);
        }
    }
}
