//! `sluice-client`: Sluice's native Kafka client, which talks to any Kafka-protocol
//! broker (Sluice or Apache Kafka) over the wire, as a user's program would.
//!
//! So far it holds what the `sluice` CLI needs: [`Connection`] (framing, pipelining,
//! correlation ids, timeouts, ApiVersions negotiation), [`Client`] (bootstrap, cluster
//! metadata, routing to brokers) and [`Admin`] (list, describe, create and delete topics;
//! describe and alter topic configs; add partitions; groups and offsets), the
//! [`producer`] and the [`consumer`], and their [`metrics`] with Kafka's names (read
//! through an API or a Prometheus registry). It depends on no other Sluice crate but
//! `sluice-protocol` (record batches, the consumer protocol): message types come from
//! `kafka-protocol`, IO from tokio.

mod admin;
mod client;
mod config;
mod connection;
pub mod consumer;
mod error;
mod groups;
pub mod membership;
pub mod metrics;
pub mod producer;

pub use admin::{
    Admin, AlterConfigOp, ClusterDescription, ConfigEntry, ConfigSource, CreatedTopic,
    LogDirDescription, NewTopic, PartitionInfo, QuorumInfo, QuorumReplica, TopicDescription,
    TopicId, TopicListing, TopicResults,
};
pub use client::{Client, Target};
pub use config::ClientConfig;
pub use connection::{Connection, IMPLEMENTED_VERSIONS, implemented_versions, negotiate};
pub use error::{ApiError, Error, ErrorCode};
pub use groups::*;

/// What a consumer group member is, for a transactional producer that commits a
/// consumer's offsets (`send_offsets_to_transaction`, Kafka's `ConsumerGroupMetadata`):
/// the coordinator fences a zombie by the generation and member id (KIP-447).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMetadata {
    pub group_id: String,
    /// -1 when the consumer is not in a generation (manual assignment).
    pub generation_id: i32,
    /// "" when the consumer has no member id.
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

impl ConsumerGroupMetadata {
    /// Metadata for a group the caller is not a member of (generation -1, no member id).
    pub fn new(group_id: impl Into<String>) -> ConsumerGroupMetadata {
        ConsumerGroupMetadata {
            group_id: group_id.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }
}
/// The message types [`Client::send`] takes, re-exported.
pub use kafka_protocol;
