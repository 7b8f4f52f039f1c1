//! Consumer-lag monitoring the way LinkedIn's Burrow does it: committed offsets read from
//! `__consumer_offsets`, log end offsets from ListOffsets, a sliding window of the last
//! commits per partition, and Burrow's rules turning each window into a status (OK, WARN,
//! STOP, STALL, REWIND) that its HTTP API serves and its notifiers alert on.
//!
//! This crate is the monitor, not a broker feature: it works against any Kafka-protocol
//! cluster, Apache Kafka included, through `sluice-client`. The node runs it in-process
//! with `sluice server --with-monitor`; `sluice monitor --config burrow.toml` runs it alone.
//!
//! Burrow is the spec for behaviour and JSON shapes (its source at commit
//! ced55ba90f6b833a45a124d411fd5eef63a70933); none of its code is carried over, only its
//! rules and its tests' data.

pub mod cluster;
pub mod config;
pub mod consumer;
pub mod evaluator;
pub mod http;
pub mod metrics;
pub mod monitor;
pub mod notifier;
pub mod storage;
pub mod types;
