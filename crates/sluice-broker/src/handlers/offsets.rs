//! ListOffsets, OffsetForLeaderEpoch and DeleteRecords: offsets of a partition's log.

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::*;
use sluice_storage::{Log, StorageError};

use crate::apis::RequestContext;
use crate::broker::{Broker, Replica};
use crate::errors;

/// ListOffsets' special timestamps.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

/// The leader's replica of a partition, or the error a client gets for it.
fn leader_replica(
    broker: &Broker,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
) -> Result<std::sync::Arc<Replica>, i16> {
    let replica = broker
        .replica(topic, partition)
        .ok_or(errors::UNKNOWN_TOPIC_OR_PARTITION)?;
    let epoch = replica.leader_epoch();
    match current_leader_epoch {
        requested if requested < 0 || requested == epoch => Ok(replica),
        requested if requested < epoch => Err(errors::FENCED_LEADER_EPOCH),
        _ => Err(errors::UNKNOWN_LEADER_EPOCH),
    }
}

/// The leader epoch that wrote `offset` (-1 when unknown).
fn epoch_of(log: &Log, offset: i64) -> i32 {
    log.leader_epochs()
        .entries()
        .iter()
        .rev()
        .find(|(_, start)| *start <= offset)
        .map_or(-1, |(epoch, _)| *epoch)
}

pub async fn list_offsets(
    context: &RequestContext,
    request: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let version = context.version;
    let broker = &context.broker;
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let response = ListOffsetsPartitionResponse::default()
                        .with_partition_index(p.partition_index);
                    match lookup(broker, &topic.name.0, p, version) {
                        Ok((timestamp, offset, epoch)) => response
                            .with_timestamp(timestamp)
                            .with_offset(offset)
                            .with_leader_epoch(if version >= 4 { epoch } else { -1 }),
                        Err(code) => response
                            .with_error_code(code)
                            .with_timestamp(-1)
                            .with_offset(-1),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// (timestamp, offset, leader epoch) for one partition's query.
fn lookup(
    broker: &Broker,
    topic: &str,
    query: &list_offsets_request::ListOffsetsPartition,
    version: i16,
) -> Result<(i64, i64, i32), i16> {
    let replica = leader_replica(
        broker,
        topic,
        query.partition_index,
        query.current_leader_epoch,
    )?;
    let log = sluice_storage::lock(&replica.log);
    let high_watermark = log.log_end_offset();
    let storage_error = |error: StorageError| {
        tracing::error!(%error, %topic, "offset lookup failed");
        errors::KAFKA_STORAGE_ERROR
    };
    let found = match query.timestamp {
        LATEST => Some((-1, high_watermark)),
        EARLIEST => Some((-1, log.log_start_offset())),
        EARLIEST_LOCAL if version >= 8 => Some((-1, log.log_start_offset())),
        MAX_TIMESTAMP if version >= 7 => log
            .max_timestamp_offset()
            .map_err(storage_error)?
            .map(|(offset, timestamp)| (timestamp, offset)),
        LATEST_TIERED if version >= 9 => None,
        timestamp => log
            .offset_for_timestamp(timestamp)
            .map_err(storage_error)?
            .filter(|(offset, _)| *offset < high_watermark)
            .map(|(offset, timestamp)| (timestamp, offset)),
    };
    Ok(match found {
        Some((timestamp, offset)) => {
            let epoch = if query.timestamp == LATEST {
                log.leader_epochs().latest_epoch().unwrap_or(-1)
            } else {
                epoch_of(&log, offset)
            };
            (timestamp, offset, epoch)
        }
        None => (-1, -1, -1),
    })
}

pub async fn offset_for_leader_epoch(
    context: &RequestContext,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let broker = &context.broker;
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let response = EpochEndOffset::default().with_partition(p.partition);
                    match leader_replica(
                        broker,
                        &topic.topic.0,
                        p.partition,
                        p.current_leader_epoch,
                    ) {
                        Ok(replica) => {
                            let log = sluice_storage::lock(&replica.log);
                            match log
                                .leader_epochs()
                                .end_offset_for(p.leader_epoch, log.log_end_offset())
                            {
                                Some((epoch, end)) => {
                                    response.with_leader_epoch(epoch).with_end_offset(end)
                                }
                                None => response.with_leader_epoch(-1).with_end_offset(-1),
                            }
                        }
                        Err(code) => response
                            .with_error_code(code)
                            .with_leader_epoch(-1)
                            .with_end_offset(-1),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}

pub async fn delete_records(
    context: &RequestContext,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    let broker = &context.broker;
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let response = DeleteRecordsPartitionResult::default()
                        .with_partition_index(p.partition_index);
                    let result = leader_replica(broker, &topic.name.0, p.partition_index, -1)
                        .and_then(|replica| {
                            let mut log = sluice_storage::lock(&replica.log);
                            let high_watermark = log.log_end_offset();
                            // -1: everything up to the high watermark.
                            let target = if p.offset == -1 {
                                high_watermark
                            } else {
                                p.offset
                            };
                            if target < 0 || target > high_watermark {
                                return Err(errors::OFFSET_OUT_OF_RANGE);
                            }
                            log.delete_records(target).map_err(|error| {
                                tracing::error!(%error, "delete records failed");
                                errors::KAFKA_STORAGE_ERROR
                            })
                        });
                    match result {
                        Ok(low_watermark) => response.with_low_watermark(low_watermark),
                        Err(code) => response.with_error_code(code).with_low_watermark(-1),
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    DeleteRecordsResponse::default().with_topics(topics)
}
