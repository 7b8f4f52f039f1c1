//! Leader append (Kafka's `ReplicaManager.appendRecords` and `LogValidator`): the checks
//! a partition's leader makes on a producer's batch, the append under the partition's
//! state lock, the high watermark of a sole in-sync replica, and waiting for acks=all.
//! The produce handler and the coordinators append only through here.
//!
//! What an acknowledgement promises for each `acks` is stated in `handlers/produce.rs`.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::BytesMut;
use sluice_protocol::{BatchError, Compression, ErrorCode, RecordBatch, TimestampType, batches};
use sluice_storage::StorageError;
use sluice_storage::producer_state::SequenceError;
use tokio::sync::watch;

use crate::coordinator::{CommitWait, Origin, PartitionWriter};
use crate::errors;
use crate::replica::Replica;
use crate::replication::ReplicaManager;

/// A refused partition: error code, message, and the index of the bad batch when one is.
pub(crate) struct Refused {
    pub code: i16,
    pub message: String,
    pub batch_index: Option<i32>,
}

pub(crate) fn refused(code: i16, message: impl Into<String>) -> Refused {
    Refused {
        code,
        message: message.into(),
        batch_index: None,
    }
}

/// A partition's batch, appended by the leader.
pub(crate) struct Appended {
    pub base_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    /// The offset the high watermark must reach for acks=all (last offset + 1).
    pub required_offset: i64,
}

/// Waits until an acks=all batch is committed (the high watermark reaches
/// `required_offset`) and answers Kafka's code for it, or REQUEST_TIMED_OUT at the
/// deadline.
pub(crate) async fn await_high_watermark(
    replica: &Replica,
    required_offset: i64,
    deadline: tokio::time::Instant,
) -> i16 {
    // Subscribed before the check, so a change after it is not missed.
    let mut high_watermark = replica.subscribe_high_watermark();
    loop {
        if let Some(code) = replica.state().acks_all_outcome(required_offset) {
            return code;
        }
        match tokio::time::timeout_at(deadline, high_watermark.changed()).await {
            Err(_) => return errors::REQUEST_TIMED_OUT,
            // The replica was deleted.
            Ok(Err(_)) => return errors::NOT_LEADER_OR_FOLLOWER,
            Ok(Ok(())) => {}
        }
    }
}

/// Validates and appends one partition's records as its leader.
impl ReplicaManager {
    /// (Kafka's `ReplicaManager.appendRecords` with its `LogValidator` checks.)
    pub(crate) fn append_records(
        &self,
        version: i16,
        (topic, partition): (&str, i32),
        replica: &Replica,
        acks: i16,
        records: Option<bytes::Bytes>,
    ) -> Result<Appended, Refused> {
        // Kafka looks the leader up before it looks at the records.
        if !replica.state().is_leader() {
            return Err(refused(
                errors::NOT_LEADER_OR_FOLLOWER,
                "This server is not the leader for that topic-partition.",
            ));
        }
        let records = records.unwrap_or_default();
        // v3+: exactly one batch of magic 2.
        let mut found = batches(records.clone());
        let batch = match (found.next(), found.next()) {
            (Some(Ok(batch)), None) => batch,
            (Some(Err(BatchError::WrongMagic(magic))), _) => {
                return Err(refused(
                    errors::INVALID_RECORD,
                    format!(
                        "Produce requests with version {version} must have a single record batch with magic 2, not {magic}"
                    ),
                ));
            }
            (Some(Err(error)), _) => return Err(corrupt(error)),
            (None, _) | (Some(Ok(_)), Some(_)) => {
                return Err(refused(
                    errors::INVALID_RECORD,
                    format!(
                        "Produce requests with version {version} must have exactly one record batch"
                    ),
                ));
            }
        };
        let (max_message_bytes, timestamp_type, compacted) = {
            let log = sluice_storage::lock(&replica.log);
            let config = log.config();
            (
                config.max_message_bytes as usize,
                config.message_timestamp_type,
                config.cleanup_compact,
            )
        };
        if batch.size_bytes() > max_message_bytes {
            return Err(refused(
                errors::MESSAGE_TOO_LARGE,
                format!(
                    "The record batch size in the append is {} bytes which exceeds the maximum configured value of {max_message_bytes}.",
                    batch.size_bytes()
                ),
            ));
        }
        if matches!(batch.compression(), Ok(Compression::Zstd)) && version < 7 {
            return Err(refused(
                errors::UNSUPPORTED_COMPRESSION_TYPE,
                "Produce requests with version below 7 cannot use ZStandard compression",
            ));
        }
        if batch.is_control() {
            return Err(refused(
                errors::INVALID_RECORD,
                "Control records cannot be produced by clients",
            ));
        }
        // validate() checks the CRC first, then every record.
        batch.validate().map_err(corrupt)?;
        // Kafka's LogValidator: a compacted topic keeps the latest record per key, so a
        // record without one is refused (the index is the record's within the batch).
        if compacted
            && let Ok(records) = batch.records()
            && let Some(index) = records
                .enumerate()
                .find(|(_, r)| r.as_ref().is_ok_and(|r| r.key.is_none()))
                .map(|(i, _)| i as i32)
        {
            return Err(Refused {
                code: errors::INVALID_RECORD,
                message: format!(
                    "Compacted topic cannot accept message without key in topic partition {topic}-{partition}."
                ),
                batch_index: Some(index),
            });
        }
        if timestamp_type == TimestampType::CreateTime {
            let (before_max, after_max) = replica.timestamp_bounds();
            check_timestamps(&batch, before_max, after_max)?;
        }
        // `batch` shares the records; drop it so `records` can be unique, and take the bytes
        // over without a copy when it is (a request with one partition), else copy them.
        drop(batch);
        drop(found);
        let bytes = records.try_into_mut().unwrap_or_else(|shared| {
            tracing::debug!(
                bytes = shared.len(),
                "records shared with the frame: copied"
            );
            BytesMut::from(&shared[..])
        });
        self.append_validated(replica, acks, bytes)
    }

    /// Appends a validated batch as the partition's leader (a client's, or one the broker
    /// writes itself, such as a coordinator's): the leader and min-ISR checks under the
    /// partition's state lock, the append, the high watermark for a sole replica.
    fn append_validated(
        &self,
        replica: &Replica,
        acks: i16,
        bytes: BytesMut,
    ) -> Result<Appended, Refused> {
        self.append_validated_from(replica, acks, Write::Client(bytes))
    }

    fn append_validated_from(
        &self,
        replica: &Replica,
        acks: i16,
        write: Write,
    ) -> Result<Appended, Refused> {
        let now = sluice_storage::now_ms();
        // The state stays locked across the append so that leadership cannot change
        // between the check and the write (Kafka's leaderIsrUpdateLock read lock).
        let mut state = replica.state();
        if !state.is_leader() {
            return Err(refused(
                errors::NOT_LEADER_OR_FOLLOWER,
                "This server is not the leader for that topic-partition.",
            ));
        }
        let min_isr = state.effective_min_isr();
        if acks == -1 && state.isr.committed().len() < min_isr {
            return Err(refused(
                errors::NOT_ENOUGH_REPLICAS,
                format!(
                    "The size of the current ISR {:?} is insufficient to satisfy the min.isr requirement of {min_isr}",
                    state.isr.committed()
                ),
            ));
        }
        let mut log = sluice_storage::lock(&replica.log);
        let appended = match write {
            Write::Client(mut bytes) => log.append_as_leader(&mut bytes, state.leader_epoch, now),
            Write::Coordinator(mut bytes) => {
                log.append_as_coordinator(&mut bytes, state.leader_epoch, now)
            }
            Write::Marker(marker) => log.append_control_marker(&marker, state.leader_epoch, now),
        };
        let info = appended.map_err(storage_refusal)?;
        let end = log.log_end_offset();
        let log_start = log.log_start_offset();
        drop(log);
        // A single replica (or an ISR of one) commits at once.
        let lag_max_ms = self.settings().lag_time_max_ms;
        if state.maybe_increment_high_watermark(end, now, lag_max_ms) {
            replica.publish_high_watermark(&state);
        }
        drop(state);
        replica.appended(end);
        let traffic = &self.traffic;
        traffic
            .messages_in
            .fetch_add(info.record_count as u64, Ordering::Relaxed);
        traffic
            .bytes_in
            .fetch_add(info.size_bytes, Ordering::Relaxed);
        let log_append_time_ms = if info.log_append_time_ms >= 0 {
            info.log_append_time_ms
        } else {
            -1
        };
        Ok(Appended {
            base_offset: info.first_offset,
            log_append_time_ms,
            log_start_offset: log_start,
            required_offset: info.last_offset + 1,
        })
    }

    /// Appends a batch the broker itself writes (a coordinator's records) as the
    /// partition's leader for acks=all; returns the offset the high watermark must reach
    /// (see [`await_committed`]), or Kafka's error code for the partition. Synchronous, so
    /// a caller holding its own lock appends in the order it decided.
    pub(crate) fn append_internal(
        &self,
        replica: &Replica,
        records: BytesMut,
    ) -> Result<i64, ErrorCode> {
        self.append_validated(replica, -1, records)
            .map(|appended| appended.required_offset)
            .map_err(|refusal| ErrorCode(refusal.code))
    }

    /// [`append_internal`] for a coordinator's transactional batch (base sequence -1):
    /// the log skips the sequence checks (Kafka's AppendOrigin.COORDINATOR) and still
    /// tracks the transaction.
    pub(crate) fn append_internal_as_coordinator(
        &self,
        replica: &Replica,
        records: BytesMut,
    ) -> Result<i64, ErrorCode> {
        self.append_validated_from(replica, -1, Write::Coordinator(records))
            .map(|appended| appended.required_offset)
            .map_err(|refusal| ErrorCode(refusal.code))
    }

    /// Writes a transaction marker (a COMMIT or ABORT control batch) as the partition's
    /// leader, for the transaction coordinator (WriteTxnMarkers); returns the offset the
    /// high watermark must reach, or Kafka's error code for the partition.
    pub(crate) fn append_marker(
        &self,
        replica: &Replica,
        marker: sluice_storage::TxnMarker,
    ) -> Result<i64, ErrorCode> {
        self.append_validated_from(replica, -1, Write::Marker(marker))
            .map(|appended| appended.required_offset)
            .map_err(|refusal| ErrorCode(refusal.code))
    }
}

/// What the leader appends, and who wrote it.
enum Write {
    /// A producer's validated batch.
    Client(BytesMut),
    /// A coordinator's batch (sequence checks skipped).
    Coordinator(BytesMut),
    /// A transaction marker the log builds.
    Marker(sluice_storage::TxnMarker),
}

/// Waits until the high watermark reaches `required_offset` (acks=all): NONE, or the
/// error code (REQUEST_TIMED_OUT after `timeout`).
pub(crate) async fn await_committed(
    replica: &Replica,
    required_offset: i64,
    timeout: Duration,
) -> i16 {
    let deadline = tokio::time::Instant::now() + timeout;
    await_high_watermark(replica, required_offset, deadline).await
}

/// The coordinators' way to their internal topics' partitions on this node.
impl PartitionWriter for ReplicaManager {
    fn leads(&self, topic: &str, partition: i32, leader_epoch: i32) -> bool {
        self.replica(topic, partition).is_some_and(|replica| {
            replica.state().is_leader() && replica.leader_epoch() == leader_epoch
        })
    }

    fn role_changes(&self) -> watch::Receiver<u64> {
        self.subscribe_role_changes()
    }

    fn append(
        &self,
        topic: &str,
        partition: i32,
        leader_epoch: i32,
        batch: BytesMut,
        origin: Origin,
    ) -> Result<i64, ErrorCode> {
        let replica = self
            .replica(topic, partition)
            .filter(|replica| replica.leader_epoch() == leader_epoch)
            .ok_or(ErrorCode::NOT_LEADER_OR_FOLLOWER)?;
        match origin {
            Origin::Coordinator => self.append_internal(&replica, batch),
            Origin::CoordinatorTransactional => {
                self.append_internal_as_coordinator(&replica, batch)
            }
        }
    }

    fn await_committed(
        &self,
        topic: &str,
        partition: i32,
        required_offset: i64,
        timeout: Duration,
    ) -> CommitWait {
        let replica = self.replica(topic, partition);
        Box::pin(async move {
            match replica {
                Some(replica) => await_committed(&replica, required_offset, timeout).await,
                None => errors::NOT_LEADER_OR_FOLLOWER,
            }
        })
    }

    fn replay(
        &self,
        topic: &str,
        partition: i32,
        apply: &mut dyn FnMut(&RecordBatch),
    ) -> Result<(), String> {
        let replica = self
            .replica(topic, partition)
            .ok_or_else(|| format!("{topic}-{partition} is not hosted here"))?;
        let log = sluice_storage::lock(&replica.log);
        let end = log.log_end_offset();
        let mut offset = log.log_start_offset();
        while offset < end {
            let data = log
                .read(offset, 1 << 20, None, true)
                .map_err(|e| e.to_string())?;
            if data.records.is_empty() {
                break;
            }
            let mut next = offset;
            for batch in batches(data.records) {
                let batch = batch.map_err(|e| e.to_string())?;
                next = batch.next_offset();
                if batch.next_offset() > offset {
                    apply(&batch);
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        Ok(())
    }
}

/// Kafka's answer for an append the log refused.
fn storage_refusal(error: StorageError) -> Refused {
    match error {
        StorageError::InvalidBatch(error) => corrupt(error),
        StorageError::BatchTooLarge { .. } => refused(errors::MESSAGE_TOO_LARGE, error.to_string()),
        StorageError::Sequence(SequenceError::OutOfOrder { .. }) => {
            refused(errors::OUT_OF_ORDER_SEQUENCE_NUMBER, error.to_string())
        }
        StorageError::Sequence(SequenceError::StaleEpoch { .. }) => {
            refused(errors::INVALID_PRODUCER_EPOCH, error.to_string())
        }
        StorageError::Sequence(SequenceError::InvalidTxnState { .. }) => {
            refused(errors::INVALID_TXN_STATE, error.to_string())
        }
        StorageError::Sequence(SequenceError::TransactionCoordinatorFenced { .. }) => {
            refused(errors::TRANSACTION_COORDINATOR_FENCED, error.to_string())
        }
        other => {
            tracing::error!(error = %other, "append failed");
            refused(errors::KAFKA_STORAGE_ERROR, other.to_string())
        }
    }
}

fn corrupt(error: BatchError) -> Refused {
    let code = match error {
        BatchError::WrongMagic(_) => errors::INVALID_RECORD,
        BatchError::InvalidRecord { .. } | BatchError::RecordCountMismatch { .. } => {
            errors::INVALID_RECORD
        }
        _ => errors::CORRUPT_MESSAGE,
    };
    Refused {
        code,
        message: error.to_string(),
        batch_index: Some(0),
    }
}

/// CreateTime batches must lie within `message.timestamp.before.max.ms` before and
/// `message.timestamp.after.max.ms` after the broker's clock (KIP-937), else
/// INVALID_TIMESTAMP. The batch's first and max timestamps bound its records.
fn check_timestamps(batch: &RecordBatch, before_max: i64, after_max: i64) -> Result<(), Refused> {
    let now = sluice_storage::now_ms();
    for timestamp in [batch.base_timestamp(), batch.max_timestamp()] {
        if timestamp < 0 {
            continue;
        }
        let too_old = now.saturating_sub(timestamp) > before_max;
        let too_new = timestamp.saturating_sub(now) > after_max;
        if too_old || too_new {
            let (bound, which) = if too_old {
                (before_max, "message.timestamp.before.max.ms")
            } else {
                (after_max, "message.timestamp.after.max.ms")
            };
            return Err(Refused {
                code: errors::INVALID_TIMESTAMP,
                message: format!(
                    "Timestamp {timestamp} of message with offset 0 is out of range. The timestamp should be within [{}, {}] ({which}={bound})",
                    now.saturating_sub(before_max),
                    now.saturating_add(after_max)
                ),
                batch_index: Some(0),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use bytes::{Bytes, BytesMut};

    /// What `append` relies on to skip a copy: the records of a request's only
    /// partition, once nothing else refers to the frame, become mutable in place.
    #[test]
    fn a_unique_slice_of_a_frame_is_taken_over_without_a_copy() {
        let mut frame = BytesMut::with_capacity(1024);
        frame.extend_from_slice(&[7u8; 1024]);
        let mut frame: Bytes = frame.freeze();
        let header = frame.split_to(24);
        let records = frame.split_to(1000);
        let address = records.as_ptr();
        let shared = records.clone();
        let records = records.try_into_mut().expect_err("shared: must copy");
        drop((shared, header, frame));
        let records = records.try_into_mut().expect("unique now");
        assert_eq!(records.as_ptr(), address, "the same memory, not a copy");
    }
}

#[cfg(test)]
mod leader_tests {
    //! The replica manager without a node or a network: real logs in a temporary
    //! directory, a fixed metadata image, no controller.

    use std::sync::Arc;

    use bytes::Bytes;
    use sluice_metadata::MetadataImage;

    use super::*;
    use crate::config::{BrokerConfig, EMBEDDED_SERVER_PROPERTIES};
    use crate::coordinator::PartitionWriter;
    use crate::coordinator::testing::{self, topic_image};
    use crate::image::{ImageView, MetadataPublisher};

    /// Topic `t`: partition 0 on this node alone (it leads at `epoch`), partition 1
    /// led by node 2 with this node following.
    fn image(epoch: i32) -> MetadataImage {
        topic_image("t", [5; 16], &[(0, &[1], 1, epoch), (1, &[2, 1], 2, 0)])
    }

    fn batch(values: &[&str]) -> Bytes {
        testing::batch(values).freeze()
    }

    fn manager(dir: &std::path::Path, image: &MetadataImage) -> Arc<ReplicaManager> {
        let config = BrokerConfig::load(EMBEDDED_SERVER_PROPERTIES, &[])
            .unwrap()
            .config;
        let logs = sluice_storage::LogManager::open(dir, config.log_config()).unwrap();
        ReplicaManager::new(1, config, ImageView::fixed(image.clone()), vec![logs])
    }

    #[tokio::test]
    async fn the_leader_validates_appends_and_commits_and_a_follower_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let image = Arc::new(image(0));
        let manager = manager(dir.path(), &image);
        let mut roles = manager.subscribe_role_changes();
        manager.sync_replicas(&image).unwrap();
        manager.publish(&image);
        assert!(roles.has_changed().unwrap(), "role changes are signalled");
        roles.mark_unchanged();
        assert!(manager.leads("t", 0, 0));
        assert!(!manager.leads("t", 1, 0), "node 2 leads partition 1");

        let leader = manager.replica("t", 0).unwrap();
        let appended = manager
            .append_records(9, ("t", 0), &leader, -1, Some(batch(&["a", "b"])))
            .unwrap_or_else(|refused| panic!("refused: {}", refused.message));
        assert_eq!(appended.base_offset, 0);
        assert_eq!(appended.required_offset, 2);
        // A sole in-sync replica commits at once: acks=all is answered now.
        let code = await_committed(&leader, 2, Duration::from_millis(100)).await;
        assert_eq!(code, errors::NONE);
        assert_eq!(leader.high_watermark(), 2);
        let next = manager
            .append_records(9, ("t", 0), &leader, 1, Some(batch(&["c"])))
            .unwrap_or_else(|refused| panic!("refused: {}", refused.message));
        assert_eq!(next.base_offset, 2);

        // A flipped byte fails the CRC; nothing is written.
        let mut corrupt = batch(&["d"]).to_vec();
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        let refused = manager
            .append_records(9, ("t", 0), &leader, 1, Some(Bytes::from(corrupt)))
            .err()
            .expect("a corrupt batch is refused");
        assert_eq!(refused.code, errors::CORRUPT_MESSAGE);
        assert_eq!(refused.batch_index, Some(0));
        // Two batches in one partition's records: v3+ takes exactly one.
        let two = [batch(&["e"]), batch(&["f"])].concat();
        let refused = manager
            .append_records(9, ("t", 0), &leader, 1, Some(Bytes::from(two)))
            .err()
            .expect("two batches are refused");
        assert_eq!(refused.code, errors::INVALID_RECORD);
        assert_eq!(sluice_storage::lock(&leader.log).log_end_offset(), 3);

        // The follower of partition 1 does not append.
        let follower = manager.replica("t", 1).unwrap();
        let refused = manager
            .append_records(9, ("t", 1), &follower, 1, Some(batch(&["g"])))
            .err()
            .expect("a follower refuses");
        assert_eq!(refused.code, errors::NOT_LEADER_OR_FOLLOWER);

        // A coordinator's write through the PartitionWriter, fenced by the epoch.
        let coordinator_batch = bytes::BytesMut::from(&batch(&["h"])[..]);
        assert_eq!(
            PartitionWriter::append(
                &*manager,
                "t",
                0,
                7,
                coordinator_batch.clone(),
                crate::coordinator::Origin::Coordinator
            ),
            Err(ErrorCode::NOT_LEADER_OR_FOLLOWER)
        );
        let required = PartitionWriter::append(
            &*manager,
            "t",
            0,
            0,
            coordinator_batch,
            crate::coordinator::Origin::Coordinator,
        )
        .unwrap();
        assert_eq!(required, 4);
        let mut replayed = Vec::new();
        manager
            .replay("t", 0, &mut |batch| replayed.push(batch.base_offset()))
            .unwrap();
        assert_eq!(replayed, [0, 2, 3]);

        // A new leader epoch: the role changes and is signalled again.
        let next_image = Arc::new(super::leader_tests::image(1));
        manager.sync_replicas(&next_image).unwrap();
        manager.publish(&next_image);
        assert!(roles.has_changed().unwrap());
        assert!(manager.leads("t", 0, 1));
        assert!(!manager.leads("t", 0, 0));

        // A clean stop checkpoints the high watermark.
        crate::replication::shutdown(&manager).await;
        let checkpoint = std::fs::read_to_string(
            dir.path()
                .join(crate::replication::REPLICATION_OFFSET_CHECKPOINT),
        )
        .unwrap();
        assert!(
            checkpoint.lines().any(|line| line == "t 0 4"),
            "{checkpoint}"
        );
    }
}
