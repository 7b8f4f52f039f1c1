//! Feature flags (KIP-584): the versioned features this broker supports and the levels
//! the cluster has finalized in the metadata log.
//!
//! ApiVersions v3+ lists both, as Kafka 4.1 does: clients read the finalized
//! `transaction.version` from it (level 2 turns on transactions v2, KIP-890 part 2, in
//! the Java client). UpdateFeatures (`kafka-features.sh upgrade|downgrade`) writes a
//! FeatureLevelRecord through the metadata quorum; the bootstrap levels are those a
//! `kafka-storage format` of Kafka 4.1 writes ([`BOOTSTRAP_LEVELS`]).

use kafka_protocol::messages::ApiVersionsResponse;
use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::protocol::StrBytes;
use sluice_metadata::MetadataImage;

/// Kafka 4.1's `metadata.version` feature level (4.1-IV1), written at bootstrap.
pub const METADATA_VERSION_LEVEL: i16 = 27;
/// The lowest `metadata.version` level a 4.1 broker supports (3.3-IV3).
pub const MIN_METADATA_VERSION_LEVEL: i16 = 7;

/// `transaction.version`: 0 none, 1 flexible transaction state records, 2 transactions
/// v2 (KIP-890 part 2: an epoch bump per transaction, partitions added by the leader).
pub const TRANSACTION_VERSION: &str = "transaction.version";

/// (feature, lowest supported level, highest supported level).
pub const SUPPORTED: &[(&str, i16, i16)] = &[
    (
        "metadata.version",
        MIN_METADATA_VERSION_LEVEL,
        METADATA_VERSION_LEVEL,
    ),
    ("group.version", 0, 1),
    (TRANSACTION_VERSION, 0, 2),
    (crate::elr::FEATURE, 0, 1),
];

/// The levels written when a cluster is first formatted besides `metadata.version`
/// (Kafka 4.1's defaults for a new cluster).
pub const BOOTSTRAP_LEVELS: &[(&str, i16)] = &[
    ("group.version", 1),
    (TRANSACTION_VERSION, 2),
    (crate::elr::FEATURE, 1),
];

/// The cluster's finalized `transaction.version` (0 when none is finalized).
pub fn transaction_version(image: &MetadataImage) -> i16 {
    image.feature_level(TRANSACTION_VERSION).unwrap_or(0)
}

/// Fills ApiVersions v3+'s feature fields. v3 leaves out supported features whose
/// lowest level is 0, as Kafka 4.1 does (KAFKA-17011: older clients could not parse a
/// range starting at 0); v4 lists them all.
pub fn describe(
    response: &mut ApiVersionsResponse,
    version: i16,
    image: &MetadataImage,
    epoch: i64,
) {
    response.supported_features = SUPPORTED
        .iter()
        .filter(|(_, min, _)| version >= 4 || *min > 0)
        .map(|(name, min, max)| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(name))
                .with_min_version(*min)
                .with_max_version(*max)
        })
        .collect();
    response.finalized_features_epoch = epoch;
    response.finalized_features = image
        .features()
        .filter(|(name, level)| *level > 0 && SUPPORTED.iter().any(|(n, _, _)| n == name))
        .map(|(name, level)| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_string(name.to_string()))
                .with_min_version_level(level)
                .with_max_version_level(level)
        })
        .collect();
}
