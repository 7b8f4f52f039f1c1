//! `sluice-client`: Sluice's native Kafka client, which talks to any Kafka-protocol
//! broker (Sluice or Apache Kafka) over the wire, as a user's program would.
//!
//! So far it holds what the `sluice` CLI needs: [`Connection`] (framing, pipelining,
//! correlation ids, timeouts, ApiVersions negotiation), [`Client`] (bootstrap, cluster
//! metadata, routing to brokers) and [`Admin`] (list, describe, create and delete topics;
//! describe and alter topic configs; add partitions). The producer and consumer come later. It depends on no other
//! Sluice crate: message types come from `kafka-protocol`, IO from tokio.

mod admin;
mod client;
mod config;
mod connection;
mod error;
mod groups;

pub use admin::{
    Admin, AlterConfigOp, ConfigEntry, ConfigSource, CreatedTopic, NewTopic, PartitionInfo,
    QuorumInfo, QuorumReplica, TopicDescription, TopicId, TopicListing, TopicResults,
};
pub use client::{Client, Target};
pub use config::ClientConfig;
pub use connection::{Connection, IMPLEMENTED_VERSIONS, implemented_versions, negotiate};
pub use error::{ApiError, Error, ErrorCode};
pub use groups::*;
/// The message types [`Client::send`] takes, re-exported.
pub use kafka_protocol;
