//! ListOffsets, OffsetForLeaderEpoch and DeleteRecords: offsets of a partition's log,
//! answered by its leader (ListOffsets with the debugging replica id -2: by any
//! replica). Consumers see offsets below the high watermark; replicas (a follower's
//! ListOffsets after OFFSET_OUT_OF_RANGE) see the log end.

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
use sluice_protocol::ErrorCode;
use sluice_storage::{Log, StorageError};

use std::sync::Arc;

use crate::broker::{Broker, Replica};
use crate::replica::{Role, end_offset_for_epoch, leader_epoch_entries};
use crate::request::RequestContext;
use crate::{errors, replication};

/// ListOffsets' special timestamps.
const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
const LATEST_TIERED: i64 = -5;

/// A replica id that may read any replica's offsets (Kafka's DEBUGGING_REPLICA_ID).
const DEBUGGING_REPLICA_ID: i32 = -2;
/// The replica id of a consumer.
const CONSUMER_REPLICA_ID: i32 = -1;

/// The local replica of a partition that may answer (the leader, unless
/// `leader_only` is false), or the error a client gets for it (Kafka's
/// `localLogWithEpochOrThrow`: the epoch check first, then the role).
fn local_replica(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    current_leader_epoch: i32,
    leader_only: bool,
) -> Result<Arc<Replica>, ErrorCode> {
    let replica = broker
        .replica(topic, partition)
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    replication::ensure_current(
        &broker.replication,
        topic,
        partition,
        &replica,
        &broker.image(),
    );
    let state = replica.state();
    let epoch = state.leader_epoch;
    match current_leader_epoch {
        requested if requested < 0 || requested == epoch => {}
        requested if requested < epoch => return Err(ErrorCode::FENCED_LEADER_EPOCH),
        _ => return Err(ErrorCode::UNKNOWN_LEADER_EPOCH),
    }
    let serves = match state.role {
        Role::Leader => true,
        Role::Follower { .. } => !leader_only,
        Role::None => false,
    };
    drop(state);
    if serves {
        Ok(replica)
    } else {
        Err(ErrorCode::NOT_LEADER_OR_FOLLOWER)
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
                    match lookup(
                        broker,
                        &topic.name.0,
                        p,
                        version,
                        request.replica_id.0,
                        request.isolation_level == 1,
                    ) {
                        Ok((timestamp, offset, epoch)) => response
                            .with_timestamp(timestamp)
                            .with_offset(offset)
                            .with_leader_epoch(if version >= 4 { epoch } else { -1 }),
                        Err(code) => response
                            .with_error_code(code.0)
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

/// (timestamp, offset, leader epoch) for one partition's query (Kafka's
/// `fetchOffsetForTimestamp`). A consumer sees offsets below the high watermark only
/// (read_uncommitted; read_committed is the same until transactions); a replica sees
/// the whole log.
fn lookup(
    broker: &Arc<Broker>,
    topic: &str,
    query: &list_offsets_request::ListOffsetsPartition,
    version: i16,
    replica_id: i32,
    read_committed: bool,
) -> Result<(i64, i64, i32), ErrorCode> {
    let replica = local_replica(
        broker,
        topic,
        query.partition_index,
        query.current_leader_epoch,
        replica_id != DEBUGGING_REPLICA_ID,
    )?;
    let state = replica.state();
    let log = sluice_storage::lock(&replica.log);
    let from_consumer = replica_id == CONSUMER_REPLICA_ID;
    // Kafka's lastFetchableOffset: the last stable offset for read_committed
    // consumers, the high watermark for the others, the log end for brokers.
    let last_fetchable = if from_consumer && read_committed {
        log.first_unstable_offset()
            .map_or(state.high_watermark, |first| {
                first.min(state.high_watermark)
            })
    } else if from_consumer {
        state.high_watermark
    } else {
        log.log_end_offset()
    };
    // After an election the new leader's HW may lag the start of its epoch: a consumer
    // must not see offsets it could not read yet.
    let lagging = from_consumer
        && state
            .leader_epoch_start_offset
            .is_some_and(|start| start > state.high_watermark);
    let leader_epoch = state.leader_epoch;
    drop(state);
    let storage_error = |error: StorageError| {
        tracing::error!(%error, %topic, "offset lookup failed");
        errors::KAFKA_STORAGE_ERROR
    };
    let found = match query.timestamp {
        LATEST if lagging => return Err(ErrorCode::OFFSET_NOT_AVAILABLE),
        LATEST => return Ok((-1, last_fetchable, leader_epoch)),
        EARLIEST => Some((-1, log.log_start_offset())),
        EARLIEST_LOCAL if version >= 8 => Some((-1, log.log_start_offset())),
        _ if lagging => return Err(ErrorCode::OFFSET_NOT_AVAILABLE),
        MAX_TIMESTAMP if version >= 7 => log
            .max_timestamp_offset()
            .map_err(storage_error)?
            .filter(|(offset, _)| *offset < last_fetchable)
            .map(|(offset, timestamp)| (timestamp, offset)),
        LATEST_TIERED if version >= 9 => None,
        timestamp => log
            .offset_for_timestamp(timestamp)
            .map_err(storage_error)?
            .filter(|(offset, _)| *offset < last_fetchable)
            .map(|(offset, timestamp)| (timestamp, offset)),
    };
    Ok(match found {
        Some((timestamp, offset)) => (timestamp, offset, epoch_of(&log, offset)),
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
                    match local_replica(
                        broker,
                        &topic.topic.0,
                        p.partition,
                        p.current_leader_epoch,
                        true,
                    ) {
                        Ok(replica) => {
                            let state = replica.state();
                            let log = sluice_storage::lock(&replica.log);
                            let entries = leader_epoch_entries(
                                log.leader_epochs().entries(),
                                state.leader_epoch,
                                state.leader_epoch_start_offset,
                            );
                            match end_offset_for_epoch(
                                &entries,
                                p.leader_epoch,
                                log.log_end_offset(),
                            ) {
                                Some((epoch, end)) => {
                                    response.with_leader_epoch(epoch).with_end_offset(end)
                                }
                                None => response.with_leader_epoch(-1).with_end_offset(-1),
                            }
                        }
                        Err(code) => response
                            .with_error_code(code.0)
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
                    let result = local_replica(broker, &topic.name.0, p.partition_index, -1, true)
                        .and_then(|replica| {
                            let high_watermark = replica.state().high_watermark;
                            let mut log = sluice_storage::lock(&replica.log);
                            // -1: everything up to the high watermark.
                            let target = if p.offset == -1 {
                                high_watermark
                            } else {
                                p.offset
                            };
                            if target < 0 || target > high_watermark {
                                return Err(ErrorCode::OFFSET_OUT_OF_RANGE);
                            }
                            log.delete_records(target).map_err(|error| {
                                tracing::error!(%error, "delete records failed");
                                ErrorCode::KAFKA_STORAGE_ERROR
                            })
                        });
                    match result {
                        Ok(low_watermark) => response.with_low_watermark(low_watermark),
                        Err(code) => response.with_error_code(code.0).with_low_watermark(-1),
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
