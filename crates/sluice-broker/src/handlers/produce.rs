//! Produce: validate each partition's batch as Kafka 4.1 does, append it as the leader,
//! answer with the offsets.
//!
//! Durability (what an acknowledgement promises): with acks=1 or acks=-1 the response is
//! sent after the batch is written to the partition's active segment file, i.e. in the
//! operating system's page cache; it survives the broker process being killed (SIGKILL),
//! and survives power loss only once flushed (`flush.messages` / `flush.ms`, or the
//! periodic and shutdown flushes), exactly Kafka's default promise. On a single node the
//! leader is the whole ISR, so acks=-1 and acks=1 promise the same. With acks=0 nothing
//! is promised and nothing is answered.

use bytes::BytesMut;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::*;
use sluice_protocol::{BatchError, Compression, RecordBatch, TimestampType, batches};
use sluice_storage::StorageError;

use super::{from_uuid, str_bytes, topic_name};
use crate::apis::RequestContext;
use crate::errors;

/// A refused partition: error code, message, and the index of the bad batch when one is.
struct Refused {
    code: i16,
    message: String,
    batch_index: Option<i32>,
}

fn refused(code: i16, message: impl Into<String>) -> Refused {
    Refused {
        code,
        message: message.into(),
        batch_index: None,
    }
}

/// Produce. `None` means no response (acks=0).
pub async fn produce(context: &RequestContext, request: ProduceRequest) -> Option<ProduceResponse> {
    let version = context.version;
    let broker = &context.broker;
    let acks = request.acks;
    let image = broker.image();
    let mut responses = Vec::with_capacity(request.topic_data.len());
    for topic in request.topic_data {
        // v13 names topics by id.
        let found = if version >= 13 {
            image.topic_by_id(&from_uuid(&topic.topic_id))
        } else {
            image.topic(&topic.name.0)
        };
        let unknown_topic = if version >= 13 {
            errors::UNKNOWN_TOPIC_ID
        } else {
            errors::UNKNOWN_TOPIC_OR_PARTITION
        };
        let mut partitions = Vec::with_capacity(topic.partition_data.len());
        for partition in topic.partition_data {
            let index = partition.index;
            let result = if !matches!(acks, -1..=1) {
                Err(refused(
                    errors::INVALID_REQUIRED_ACKS,
                    "Invalid required acks: only -1, 0 and 1 are allowed",
                ))
            } else if let Some(t) = found {
                match broker.replica(&t.name, index) {
                    None if t.partitions.contains_key(&index) => Err(refused(
                        errors::NOT_LEADER_OR_FOLLOWER,
                        "This server is not the leader for that topic-partition.",
                    )),
                    None => Err(refused(
                        errors::UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    )),
                    Some(replica) => append(version, &replica, partition.records),
                }
            } else {
                Err(refused(
                    unknown_topic,
                    "This server does not host this topic.",
                ))
            };
            let response = PartitionProduceResponse::default().with_index(index);
            partitions.push(match result {
                Ok((base_offset, log_append_time_ms, log_start_offset)) => response
                    .with_base_offset(base_offset)
                    .with_log_append_time_ms(log_append_time_ms)
                    .with_log_start_offset(log_start_offset),
                Err(refusal) => {
                    let mut response = response
                        .with_error_code(refusal.code)
                        .with_base_offset(-1)
                        .with_log_append_time_ms(-1)
                        .with_log_start_offset(-1);
                    if version >= 8 {
                        if let Some(batch_index) = refusal.batch_index {
                            response = response.with_record_errors(vec![
                                BatchIndexAndErrorMessage::default()
                                    .with_batch_index(batch_index)
                                    .with_batch_index_error_message(Some(str_bytes(
                                        refusal.message.clone(),
                                    ))),
                            ]);
                        }
                        response = response.with_error_message(Some(str_bytes(refusal.message)));
                    }
                    response
                }
            });
        }
        let mut response = TopicProduceResponse::default().with_partition_responses(partitions);
        response = if version >= 13 {
            response.with_topic_id(topic.topic_id)
        } else {
            response.with_name(topic_name(topic.name.0.to_string()))
        };
        responses.push(response);
    }
    if acks == 0 {
        return None;
    }
    Some(ProduceResponse::default().with_responses(responses))
}

/// Validates and appends one partition's records; returns (base offset, log append time
/// or -1, log start offset).
fn append(
    version: i16,
    replica: &crate::broker::Replica,
    records: Option<bytes::Bytes>,
) -> Result<(i64, i64, i64), Refused> {
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
    let (max_message_bytes, timestamp_type) = {
        let log = sluice_storage::lock(&replica.log);
        let config = log.config();
        (
            config.max_message_bytes as usize,
            config.message_timestamp_type,
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
    batch.verify_crc().map_err(corrupt)?;
    batch.validate().map_err(corrupt)?;
    if timestamp_type == TimestampType::CreateTime {
        let (before_max, after_max) = replica.timestamp_bounds();
        check_timestamps(&batch, before_max, after_max)?;
    }
    let mut bytes = BytesMut::from(&records[..]);
    let now = sluice_storage::now_ms();
    let mut log = sluice_storage::lock(&replica.log);
    let info = log
        .append_as_leader(&mut bytes, replica.leader_epoch(), now)
        .map_err(|error| match error {
            StorageError::InvalidBatch(error) => corrupt(error),
            StorageError::BatchTooLarge { .. } => {
                refused(errors::MESSAGE_TOO_LARGE, error.to_string())
            }
            other => {
                tracing::error!(error = %other, "append failed");
                refused(errors::KAFKA_STORAGE_ERROR, other.to_string())
            }
        })?;
    let end = log.log_end_offset();
    let log_start = log.log_start_offset();
    drop(log);
    replica.appended(end);
    let append_time = if info.log_append_time_ms >= 0 {
        info.log_append_time_ms
    } else {
        -1
    };
    Ok((info.first_offset, append_time, log_start))
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
