//! Cluster metadata: KRaft's metadata records, encoded exactly as Kafka writes them in
//! its `__cluster_metadata` log (see `docs/design/kraft-metadata-records.md`), so
//! Kafka's DumpLogSegments `--cluster-metadata-decoder` and metadata shell read Sluice's
//! metadata log.
//!
//! This crate holds the records, their codec, the image they build ([`MetadataImage`],
//! replayed with Kafka's rules, and written back as records for snapshots) and a
//! reader of a metadata log on disk ([`MetadataLog`]). The broker's metadata log is the
//! Raft log of its quorum (`sluice-broker`'s `quorum` module), in the same format.

pub mod acl;
mod codec;
pub mod image;
pub mod metadata_log;
pub mod record;

pub use codec::Uuid;
pub use image::{ApplyError, MetadataImage, PartitionImage, TopicImage};
pub use metadata_log::{METADATA_LOG_DIR, MetadataLog, MetadataLogError};
pub use record::{
    BROKER_RESOURCE, BrokerEndpoint, ConfigRecord, MetadataRecord, PartitionChangeRecord,
    PartitionRecord, RegisterBrokerRecord, TOPIC_RESOURCE, TopicRecord, UserScramCredentialRecord,
};

/// Why a metadata record could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    #[error("metadata record truncated in {0}")]
    Truncated(&'static str),
    #[error("malformed metadata record: {0}")]
    Malformed(String),
    #[error("unsupported frame version {0} (Kafka's metadata records use frame version 1)")]
    FrameVersion(u32),
    #[error("unsupported version {version} of metadata record type {api_key}")]
    Version { api_key: u32, version: u32 },
}
