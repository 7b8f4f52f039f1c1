//! Kafka connectors: Flink's `KafkaSource` and `KafkaSink` on Sluice's native client
//! (`sluice-client`), for Sluice and Apache Kafka brokers alike.
//!
//! - [`KafkaSource`]: reads a list of topics or every topic matching a pattern, with
//!   `isolation.level=read_committed`, from earliest, latest, the group's committed
//!   offsets (falling back to earliest) or a timestamp; every partition is assigned to
//!   the job's single source instance, and partition discovery adds new topics and
//!   partitions while it runs. Bounded (`with_bounded`) it stops at the end it saw when
//!   it started and emits the final watermark. Its checkpointed position is the next
//!   offset of every partition, and (unlike Flink) the partition's watermark; a restored
//!   source seeks there and re-emits that watermark; with a group id the offsets of each
//!   completed checkpoint are committed to the group. Watermarks are generated per
//!   partition and combined as Flink does (minimum over partitions, idle partitions left
//!   out when the strategy has idleness). See `source` for what it does not do yet.
//! - [`KafkaSink`]: delivery guarantee none, at-least-once (flush on every checkpoint) or
//!   exactly-once (one transaction per checkpoint, with a transactional id from a prefix
//!   and the checkpoint id, committed when the checkpoint completes, and committed on
//!   restore if the crash fell between "checkpoint stored" and "transaction committed").
//!   See `sink` for the protocol and its limits.
//!
//! Both are synchronous to the executor: each owns a small tokio runtime and blocks on it
//! from the job's thread. A job using them must therefore not run inside a tokio runtime
//! thread (run `execute` on a plain thread, as `examples/order_stats.rs` does).
//!
//! Tests, against a real in-process broker: `tests/kafka_exactly_once.rs` (round trip,
//! at-least-once, per-partition watermarks, and issue 10's fault test on
//! `examples/order_stats.rs`) and `tests/kafka_source.rs` (bounded mode and its restore,
//! timestamps, patterns and discovery, offset commits, invalid settings); the watermark
//! combination and positions beside the code.
//!
//! Errors from the client fail the job as `StreamError::Function` with the connector's
//! name in the message (the restart strategy then applies, as in Flink, where connector
//! exceptions fail the task).

mod sink;
mod source;

pub use sink::{DeliveryGuarantee, KafkaSink};
pub use source::{KafkaSource, StartingOffsets, StoppingOffsets, split_owner};

use crate::error::StreamError;

/// A runtime for one connector: a single worker thread, so a producer's sender task makes
/// progress between the executor's calls.
fn connector_runtime(name: &str) -> Result<tokio::runtime::Runtime, StreamError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name(format!("sluice-stream-{name}"))
        .enable_all()
        .build()
        .map_err(|error| connector_error(name, error))
}

fn connector_error(name: &str, error: impl std::fmt::Display) -> StreamError {
    StreamError::Function(format!("kafka connector {name}: {error}"))
}
