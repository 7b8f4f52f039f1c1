//! Per-log configuration with Kafka's topic-level keys, defaults and units.
//!
//! Only the keys the log itself reads live here; the broker maps broker-level synonyms
//! (`log.segment.bytes` → `segment.bytes`, ...) onto them (issue 7 completes the set).

use sluice_protocol::TimestampType;

use crate::error::{Result, StorageError};

/// Kafka's `segment.index.bytes` default: 10 MiB per index file.
pub const DEFAULT_SEGMENT_INDEX_BYTES: u32 = 10 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would exceed this (default 1 GiB).
    pub segment_bytes: u32,
    /// `segment.ms`: roll when the active segment's time span exceeds this (default 7 days).
    pub segment_ms: i64,
    /// `segment.jitter.ms`: subtracted from `segment.ms` (default 0).
    pub segment_jitter_ms: i64,
    /// `segment.index.bytes`: the largest an offset or time index may grow (default 10 MiB).
    pub segment_index_bytes: u32,
    /// `index.interval.bytes`: bytes between offset-index entries (default 4096).
    pub index_interval_bytes: u32,
    /// `retention.ms`: delete segments older than this; -1 keeps them (default 7 days).
    pub retention_ms: i64,
    /// `retention.bytes`: delete the oldest segments past this size; -1 = no limit.
    pub retention_bytes: i64,
    /// `flush.messages`: fsync after this many records (default: never, i64::MAX).
    pub flush_messages: i64,
    /// `flush.ms`: fsync when this long has passed since the last flush (default: never).
    pub flush_ms: i64,
    /// `max.message.bytes`: the largest batch accepted (default 1048588).
    pub max_message_bytes: u32,
    /// `message.timestamp.type`: CreateTime (default) or LogAppendTime.
    pub message_timestamp_type: TimestampType,
    /// `producer.id.expiration.ms` (a broker key in Kafka): an idempotent producer
    /// whose last batch is this old loses its state (default 1 day).
    pub producer_id_expiration_ms: i64,
    /// `cleanup.policy` contains `delete`: time and size retention apply (default).
    /// A topic that is `compact` only keeps every segment until the cleaner rewrites it.
    pub cleanup_delete: bool,
    /// `cleanup.policy` contains `compact`: records must have keys, and the log cleaner
    /// keeps only the latest record of each key ([`crate::cleaner`]).
    pub cleanup_compact: bool,
    /// `min.cleanable.dirty.ratio`: the cleaner takes a log only when its dirty bytes are
    /// at least this share of its cleanable bytes (default 0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: records younger than this are not cleaned (default 0).
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a log whose first dirty record is older than this is
    /// cleaned whatever its dirty ratio (default: never forced).
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms`: how long a tombstone (and a removable transaction marker)
    /// stays after the cleaner first passes it (default 1 day).
    pub delete_retention_ms: i64,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            segment_jitter_ms: 0,
            segment_index_bytes: DEFAULT_SEGMENT_INDEX_BYTES,
            index_interval_bytes: 4096,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            max_message_bytes: 1024 * 1024 + 12,
            message_timestamp_type: TimestampType::CreateTime,
            producer_id_expiration_ms: crate::producer_state::DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            cleanup_delete: true,
            cleanup_compact: false,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 24 * 60 * 60 * 1000,
        }
    }
}

impl LogConfig {
    /// Checks ranges as Kafka's `LogConfig` validation does, naming the key at fault.
    pub fn validate(&self) -> Result<()> {
        fn invalid(key: &'static str, value: impl ToString, reason: &str) -> StorageError {
            StorageError::InvalidConfig {
                key,
                value: value.to_string(),
                reason: reason.to_string(),
            }
        }
        // Kafka's minimum segment.bytes is 1 MiB (LegacyRecord.RECORD_OVERHEAD_V0 ... 14 in
        // old versions); tests need small segments, so Sluice accepts any size that holds a
        // batch header.
        if self.segment_bytes < 61 {
            return Err(invalid(
                "segment.bytes",
                self.segment_bytes,
                "must be at least 61",
            ));
        }
        if self.segment_ms < 1 {
            return Err(invalid("segment.ms", self.segment_ms, "must be at least 1"));
        }
        if self.segment_jitter_ms < 0 {
            return Err(invalid(
                "segment.jitter.ms",
                self.segment_jitter_ms,
                "must be at least 0",
            ));
        }
        if self.segment_index_bytes < 12 {
            return Err(invalid(
                "segment.index.bytes",
                self.segment_index_bytes,
                "must hold at least one entry (12 bytes)",
            ));
        }
        if self.retention_ms < -1 {
            return Err(invalid(
                "retention.ms",
                self.retention_ms,
                "must be -1 or at least 0",
            ));
        }
        if self.flush_messages < 1 {
            return Err(invalid(
                "flush.messages",
                self.flush_messages,
                "must be at least 1",
            ));
        }
        if self.flush_ms < 0 {
            return Err(invalid("flush.ms", self.flush_ms, "must be at least 0"));
        }
        if self.max_message_bytes < 61 {
            return Err(invalid(
                "max.message.bytes",
                self.max_message_bytes,
                "must hold a batch header (61 bytes)",
            ));
        }
        if self.producer_id_expiration_ms < 1 {
            return Err(invalid(
                "producer.id.expiration.ms",
                self.producer_id_expiration_ms,
                "must be at least 1",
            ));
        }
        Ok(())
    }

    pub(crate) fn max_offset_index_entries(&self) -> usize {
        (self.segment_index_bytes / 8) as usize
    }

    pub(crate) fn max_time_index_entries(&self) -> usize {
        (self.segment_index_bytes / 12) as usize
    }
}
