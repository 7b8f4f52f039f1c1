//! A metadata log read (and, for tests and tools, written) on its own: a Sluice partition
//! log `__cluster_metadata-0` whose records are metadata records (key null, value the
//! record in Kafka's framing), and the image replayed from it.
//!
//! The broker does not write through this type: its metadata log is the Raft log of the
//! metadata quorum (`sluice-broker`'s `quorum::LogStore`, same directory and record
//! format, with a `sluice.raft` header on each entry's first record, which replay here
//! ignores). This type opens such a log and replays it, as Kafka's metadata shell would.
//!
//! Writes made here are validated against the image before they reach the log (a batch
//! that would not replay is refused whole), appended as one batch, and fsynced before
//! they are applied.

use std::path::Path;

use bytes::Bytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions, StorageError};

use crate::MetadataError;
use crate::image::{ApplyError, MetadataImage};
use crate::record::MetadataRecord;

/// The directory name of the metadata log, as Kafka's.
pub const METADATA_LOG_DIR: &str = "__cluster_metadata-0";

#[derive(Debug, thiserror::Error)]
pub enum MetadataLogError {
    #[error("metadata log storage: {0}")]
    Storage(#[from] StorageError),
    #[error("metadata log record at offset {offset}: {source}")]
    Record {
        offset: i64,
        #[source]
        source: MetadataError,
    },
    #[error("metadata log record at offset {offset} does not replay: {source}")]
    Replay {
        offset: i64,
        #[source]
        source: ApplyError,
    },
    #[error("refused metadata change: {0}")]
    Refused(#[from] ApplyError),
    #[error("a metadata batch holds at least one record")]
    Empty,
    #[error("the metadata log is closed (the node is shutting down)")]
    Closed,
}

pub struct MetadataLog {
    log: Log,
    image: MetadataImage,
    epoch: i32,
}

impl MetadataLog {
    /// Opens (or creates) the metadata log under `log_dir` and replays it into the image.
    pub fn open(
        log_dir: &Path,
        clean_shutdown: bool,
        epoch: i32,
    ) -> Result<MetadataLog, MetadataLogError> {
        let options = LogOpenOptions {
            clean_shutdown,
            ..LogOpenOptions::default()
        };
        let log = Log::open(
            &log_dir.join(METADATA_LOG_DIR),
            LogConfig::default(),
            options,
        )?;
        let mut image = MetadataImage::default();
        let mut offset = log.log_start_offset();
        while offset < log.log_end_offset() {
            let data = log.read(offset, 1 << 20, None, true)?;
            for batch in batches(data.records) {
                let batch = batch.map_err(StorageError::from)?;
                for record in batch.records().map_err(StorageError::from)? {
                    let record = record.map_err(StorageError::from)?;
                    let record_offset = batch.base_offset() + i64::from(record.offset_delta);
                    let value = record.value.unwrap_or_default();
                    let (metadata, _) = MetadataRecord::decode(&value).map_err(|source| {
                        MetadataLogError::Record {
                            offset: record_offset,
                            source,
                        }
                    })?;
                    image
                        .apply(&metadata)
                        .map_err(|source| MetadataLogError::Replay {
                            offset: record_offset,
                            source,
                        })?;
                }
                offset = batch.next_offset();
            }
        }
        Ok(MetadataLog { log, image, epoch })
    }

    /// The leader epoch this log appends at (the quorum's epoch).
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    pub fn image(&self) -> &MetadataImage {
        &self.image
    }

    /// The offset the next record gets.
    pub fn end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    /// Appends `records` as one batch, all or nothing: they must replay on the current
    /// image, they are fsynced, then applied. Returns the offset of the first.
    pub fn append(
        &mut self,
        records: &[MetadataRecord],
        now_ms: i64,
    ) -> Result<i64, MetadataLogError> {
        if records.is_empty() {
            return Err(MetadataLogError::Empty);
        }
        let mut next = self.image.clone();
        for record in records {
            next.apply(record)?;
        }
        let mut builder = RecordBatchBuilder::new(Compression::None);
        for record in records {
            let value = record
                .encode(record.latest_version())
                .expect("records Sluice builds encode at their latest version");
            builder
                .append(&NewRecord {
                    timestamp: now_ms,
                    key: None,
                    value: Some(Bytes::from(value)),
                    headers: vec![],
                })
                .map_err(StorageError::from)?;
        }
        let mut bytes = builder.build().to_vec();
        let info = self.log.append_as_leader(&mut bytes, self.epoch, now_ms)?;
        self.log.flush()?;
        self.image = next;
        Ok(info.first_offset)
    }

    /// Flushes and closes the log (a clean shutdown).
    pub fn close(mut self) -> Result<(), MetadataLogError> {
        self.log.close()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{PartitionRecord, TopicRecord};

    fn topic(name: &str, id: u8, partitions: i32) -> Vec<MetadataRecord> {
        let topic_id = [id; 16];
        let mut records = vec![MetadataRecord::Topic(TopicRecord {
            name: name.into(),
            topic_id,
        })];
        for partition_id in 0..partitions {
            records.push(MetadataRecord::Partition(PartitionRecord::new_partition(
                topic_id,
                partition_id,
                vec![1],
                vec![[9; 16]],
            )));
        }
        records
    }

    #[test]
    fn appended_records_survive_a_restart_clean_or_not() {
        let dir = tempfile::tempdir().unwrap();
        for clean in [true, false] {
            let mut log = MetadataLog::open(dir.path(), clean, 1).unwrap();
            let before = log.image().topics().count();
            let name = format!("orders-{clean}");
            let first = log
                .append(&topic(&name, before as u8 + 1, 3), 1000)
                .unwrap();
            assert_eq!(log.end_offset(), first + 4);
            let image = log.image().clone();
            if clean {
                log.close().unwrap();
            } else {
                drop(log); // no close: the append was fsynced
            }
            let reopened = MetadataLog::open(dir.path(), false, 1).unwrap();
            assert_eq!(reopened.image(), &image);
            assert_eq!(reopened.image().topic(&name).unwrap().partitions.len(), 3);
        }
    }

    #[test]
    fn a_change_that_does_not_replay_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = MetadataLog::open(dir.path(), false, 1).unwrap();
        log.append(&topic("orders", 1, 1), 1000).unwrap();
        let end = log.end_offset();
        // A new topic followed by a duplicate of an existing one: nothing is written.
        let mut records = topic("fresh", 2, 1);
        records.extend(topic("orders", 3, 1));
        assert!(matches!(
            log.append(&records, 1000),
            Err(MetadataLogError::Refused(_))
        ));
        assert_eq!(log.end_offset(), end);
        assert!(log.image().topic("fresh").is_none());
        assert!(matches!(
            log.append(&[], 1000),
            Err(MetadataLogError::Empty)
        ));
        drop(log);
        let reopened = MetadataLog::open(dir.path(), false, 1).unwrap();
        assert!(reopened.image().topic("fresh").is_none());
        assert!(reopened.image().topic("orders").is_some());
    }
}
