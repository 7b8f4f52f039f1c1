//! The group APIs: FindCoordinator (for groups and transactional ids, creating the
//! internal topic on first use), the classic group protocol (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup), KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe,
//! committed offsets (OffsetCommit, OffsetFetch, OffsetDelete) and group administration
//! (ListGroups, DescribeGroups, DeleteGroups). The state lives in [`crate::group`];
//! these decode, route to the group's shard and answer at the request's version, as
//! Kafka 4.1 does.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_group::consumer::ConsumerGroup;
use sluice_group::migration::CONSUMER_PROTOCOL_TYPE;
use sluice_group::records::OffsetValue;
use sluice_protocol::ErrorCode;

use super::common::{str_bytes, topic_name};
use super::topics;
use crate::broker::Broker;
use crate::errors;
use crate::group::classic::{JoinRequest, JoinResult, Reply, SyncOutcome, SyncResult};
use crate::group::{self, GroupKind, OFFSETS_TOPIC, OffsetsRecord, Shard, offset_record};
use crate::request::RequestContext;
use crate::txn::TRANSACTION_STATE_TOPIC;

fn group_id(id: &GroupId) -> String {
    id.0.to_string()
}

fn opt_string(text: &Option<StrBytes>) -> Option<String> {
    text.as_ref().map(|t| t.to_string())
}

/// The coordinator's shard for a group, or the error code to answer (INVALID_GROUP_ID
/// for an empty group id).
fn shard(context: &RequestContext, group: &str) -> Result<std::sync::Arc<Shard>, ErrorCode> {
    if group.is_empty() {
        return Err(ErrorCode::INVALID_GROUP_ID);
    }
    context.broker.groups.shard_for(group)
}

// -- FindCoordinator ---------------------------------------------------------------------

/// Makes sure `__consumer_offsets` exists (Kafka creates it on the first FindCoordinator).
pub(crate) async fn ensure_offsets_topic(broker: &Broker) -> Result<(), String> {
    if broker.image().topic(OFFSETS_TOPIC).is_some() {
        return Ok(());
    }
    let topic = broker.config.settings().offsets_topic;
    let configs = [
        ("cleanup.policy", "compact".to_string()),
        ("compression.type", "producer".to_string()),
        ("segment.bytes", topic.segment_bytes.to_string()),
    ];
    topics::create_internal(
        broker,
        OFFSETS_TOPIC,
        topic.partitions,
        topic.replication_factor,
        &configs,
    )
    .await
}

/// Makes sure `__transaction_state` exists (Kafka creates it on the first
/// FindCoordinator for a transactional id), with Kafka's settings for it.
pub(crate) async fn ensure_transaction_topic(broker: &Broker) -> Result<(), String> {
    if broker.image().topic(TRANSACTION_STATE_TOPIC).is_some() {
        return Ok(());
    }
    let topic = broker.config.settings().transaction_topic;
    let (partitions, factor) = (topic.partitions, topic.replication_factor);
    let configs = [
        ("cleanup.policy", "compact".to_string()),
        ("compression.type", "uncompressed".to_string()),
        ("unclean.leader.election.enable", "false".to_string()),
        (
            "min.insync.replicas",
            topic.min_isr.unwrap_or(1).to_string(),
        ),
        ("segment.bytes", topic.segment_bytes.to_string()),
    ];
    topics::create_internal(
        broker,
        TRANSACTION_STATE_TOPIC,
        partitions,
        factor,
        &configs,
    )
    .await
}

/// Kafka's FindCoordinator key types.
const GROUP_KEY: i8 = 0;
const TRANSACTION_KEY: i8 = 1;

/// The coordinator of one key: (node id, host, port, error code, message).
async fn find_one(
    context: &RequestContext,
    key: &str,
    key_type: i8,
) -> (i32, String, i32, i16, Option<String>) {
    let not_available = |message: String| {
        (
            -1,
            String::new(),
            -1,
            errors::COORDINATOR_NOT_AVAILABLE,
            Some(message),
        )
    };
    let broker = &context.broker;
    let (topic_name, created) = match key_type {
        GROUP_KEY => (OFFSETS_TOPIC, ensure_offsets_topic(broker).await),
        TRANSACTION_KEY => {
            if key.is_empty() {
                return (
                    -1,
                    String::new(),
                    -1,
                    errors::INVALID_REQUEST,
                    Some("Transactional id must not be empty".into()),
                );
            }
            (
                TRANSACTION_STATE_TOPIC,
                ensure_transaction_topic(broker).await,
            )
        }
        other => {
            return (
                -1,
                String::new(),
                -1,
                errors::INVALID_REQUEST,
                Some(format!(
                    "Unknown coordinator type {other} in FindCoordinator request"
                )),
            );
        }
    };
    if let Err(message) = created {
        tracing::info!(%message, topic = topic_name, "could not create the coordinator topic");
        return not_available("The coordinator is not available.".into());
    }
    let image = broker.image();
    let Some(topic) = image.topic(topic_name) else {
        return not_available("The coordinator is not available.".into());
    };
    let partition = sluice_group::records::partition_for(key, topic.partitions.len() as i32);
    let leader = topic.partitions.get(&partition).map_or(-1, |p| p.leader);
    match Broker::endpoint_of(&image, leader, &context.listener) {
        Some(endpoint) => (
            leader,
            endpoint.host,
            i32::from(endpoint.port),
            errors::NONE,
            None,
        ),
        None => not_available("The coordinator is not available.".into()),
    }
}

pub async fn find_coordinator(
    context: &RequestContext,
    request: FindCoordinatorRequest,
) -> FindCoordinatorResponse {
    let version = context.version;
    if version >= 4 {
        let mut coordinators = Vec::with_capacity(request.coordinator_keys.len());
        for key in &request.coordinator_keys {
            let (node, host, port, code, message) = find_one(context, key, request.key_type).await;
            coordinators.push(
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(node.into())
                    .with_host(str_bytes(host))
                    .with_port(port)
                    .with_error_code(code)
                    .with_error_message(message.map(str_bytes)),
            );
        }
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let (node, host, port, code, message) = find_one(context, &request.key, request.key_type).await;
    let mut response = FindCoordinatorResponse::default()
        .with_node_id(node.into())
        .with_host(str_bytes(host))
        .with_port(port)
        .with_error_code(code);
    if version >= 1 {
        response.error_message = message.map(str_bytes);
    }
    response
}

// -- The classic protocol ----------------------------------------------------------------

fn join_response(result: JoinResult) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(result.error)
        .with_generation_id(result.generation)
        .with_protocol_type(result.protocol_type.map(str_bytes))
        .with_protocol_name(result.protocol_name.map(str_bytes))
        .with_leader(str_bytes(result.leader))
        .with_skip_assignment(result.skip_assignment)
        .with_member_id(str_bytes(result.member_id))
        .with_members(
            result
                .members
                .into_iter()
                .map(|(id, instance, metadata)| {
                    JoinGroupResponseMember::default()
                        .with_member_id(str_bytes(id))
                        .with_group_instance_id(instance.map(str_bytes))
                        .with_metadata(metadata)
                })
                .collect(),
        )
}

fn join_error(code: i16, member_id: &str) -> JoinGroupResponse {
    JoinGroupResponse::default()
        .with_error_code(code)
        .with_generation_id(-1)
        .with_member_id(str_bytes(member_id))
}

/// Writes the classic groups' metadata that changed (after a join completed empty, a
/// member left, ...). Callers hold the shard's lock, so records keep their order.
fn flush(broker: &std::sync::Arc<Broker>, shard: &Shard, groups: &mut crate::group::ShardState) {
    let records: Vec<OffsetsRecord> = groups
        .groups
        .values_mut()
        .flat_map(|g| g.take_records())
        .collect();
    if !records.is_empty() {
        broker.groups.spawn_write(shard, records);
    }
}

pub async fn join_group(context: &RequestContext, request: JoinGroupRequest) -> JoinGroupResponse {
    let version = context.version;
    let broker = &context.broker;
    let group_id = group_id(&request.group_id);
    let member_id = request.member_id.to_string();
    if group_id.is_empty() {
        return join_error(errors::INVALID_GROUP_ID, &member_id);
    }
    if request
        .group_instance_id
        .as_ref()
        .is_some_and(|i| i.is_empty())
    {
        return join_error(errors::INVALID_REQUEST, &member_id);
    }
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return join_error(code.0, &member_id),
    };
    let join = JoinRequest {
        version,
        member_id: member_id.clone(),
        group_instance_id: opt_string(&request.group_instance_id),
        client_id: context.client_id.clone().unwrap_or_default(),
        client_host: context.client_host.to_string(),
        session_timeout_ms: request.session_timeout_ms,
        rebalance_timeout_ms: if version >= 1 {
            request.rebalance_timeout_ms
        } else {
            request.session_timeout_ms
        },
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .iter()
            .map(|p| (p.name.to_string(), p.metadata.clone()))
            .collect(),
    };
    let config = broker.groups.classic_config();
    // Checked before the group exists: a refused join creates nothing.
    if join.session_timeout_ms < config.min_session_timeout_ms
        || join.session_timeout_ms > config.max_session_timeout_ms
    {
        return join_error(errors::INVALID_SESSION_TIMEOUT, &member_id);
    }
    let now = sluice_storage::now_ms();
    let reply = {
        let mut state = shard.lock();
        if !state.groups.contains_key(&group_id) && !member_id.is_empty() {
            return join_error(errors::UNKNOWN_MEMBER_ID, &member_id);
        }
        let group = state
            .groups
            .entry(group_id.clone())
            .or_insert_with(|| group::Group::new(&group_id, now));
        if let GroupKind::Consumer(consumer) = &mut group.kind {
            if consumer.is_empty() {
                // An empty consumer group may be taken over by the classic protocol.
                group.kind =
                    GroupKind::Classic(Box::new(group::ClassicGroup::new(group_id.clone(), now)));
            } else if join.protocol_type != CONSUMER_PROTOCOL_TYPE {
                return join_error(errors::INCONSISTENT_GROUP_PROTOCOL, &member_id);
            } else {
                // A classic member of a consumer group (KIP-848's online migration):
                // answered at once, with the member's share of the server's assignment
                // to follow in its SyncGroup.
                let joined = consumer.classic_join(
                    &join,
                    &broker.groups.topics(),
                    broker.groups.consumer_config(),
                    now,
                );
                group.maybe_downgrade(config, now);
                flush(broker, &shard, &mut state);
                return finish_join(
                    JoinResult {
                        error: joined.error,
                        generation: joined.generation,
                        protocol_type: joined.protocol_type,
                        protocol_name: joined.protocol_name,
                        leader: joined.leader,
                        member_id: joined.member_id,
                        skip_assignment: joined.skip_assignment,
                        members: Vec::new(),
                    },
                    version,
                );
            }
        }
        let Some(classic) = group.classic_mut() else {
            return join_error(errors::INCONSISTENT_GROUP_PROTOCOL, &member_id);
        };
        let reply = classic.join(join, config, now);
        flush(broker, &shard, &mut state);
        reply
    };
    let result = match reply {
        Reply::Now(result) => result,
        Reply::Later(receiver) => match receiver.await {
            Ok(result) => result,
            Err(_) => return join_error(errors::NOT_COORDINATOR, &member_id),
        },
    };
    finish_join(result, version)
}

/// A JoinGroup answer at the request's version.
fn finish_join(result: JoinResult, version: i16) -> JoinGroupResponse {
    let mut response = join_response(result);
    if version < 7 {
        response.protocol_type = None;
    }
    if version < 9 {
        response.skip_assignment = false;
    }
    response
}

fn sync_response(result: SyncResult, version: i16) -> SyncGroupResponse {
    let mut response = SyncGroupResponse::default()
        .with_error_code(result.error)
        .with_assignment(result.assignment);
    if version >= 5 {
        response.protocol_type = result.protocol_type.map(str_bytes);
        response.protocol_name = result.protocol_name.map(str_bytes);
    }
    response
}

pub async fn sync_group(context: &RequestContext, request: SyncGroupRequest) -> SyncGroupResponse {
    let version = context.version;
    let broker = &context.broker;
    let group_id = group_id(&request.group_id);
    let error = |code| {
        sync_response(
            SyncResult {
                error: code,
                ..Default::default()
            },
            version,
        )
    };
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return error(code.0),
    };
    let member_id = request.member_id.to_string();
    let instance = opt_string(&request.group_instance_id);
    let now = sluice_storage::now_ms();
    let (outcome, write) = {
        let mut state = shard.lock();
        let Some(group) = state.groups.get_mut(&group_id) else {
            return error(errors::UNKNOWN_MEMBER_ID);
        };
        let classic = match &mut group.kind {
            GroupKind::Classic(classic) => classic,
            // A classic member of a consumer group gets its share of the server's
            // assignment at once.
            GroupKind::Consumer(consumer) => {
                let synced = consumer.classic_sync(
                    &member_id,
                    instance.as_deref(),
                    request.generation_id,
                    request.protocol_type.as_deref(),
                    request.protocol_name.as_deref(),
                    now,
                );
                return match synced {
                    Ok(assignment) => sync_response(
                        SyncResult {
                            error: errors::NONE,
                            protocol_type: opt_string(&request.protocol_type),
                            protocol_name: opt_string(&request.protocol_name),
                            assignment,
                        },
                        version,
                    ),
                    Err(code) => error(code.0),
                };
            }
        };
        let outcome = classic.sync(
            &member_id,
            instance.as_deref(),
            request.generation_id,
            request.protocol_type.as_deref(),
            request.protocol_name.as_deref(),
            request
                .assignments
                .iter()
                .map(|a| (a.member_id.to_string(), a.assignment.clone()))
                .collect(),
            now,
        );
        let write = match &outcome {
            SyncOutcome::Store(store) => Some(broker.groups.append(
                &shard,
                &[group::group_record(&group_id, Some(&store.value))],
            )),
            SyncOutcome::Reply(_) => None,
        };
        (outcome, write)
    };
    let receiver = match outcome {
        SyncOutcome::Reply(Reply::Now(result)) => return sync_response(result, version),
        SyncOutcome::Reply(Reply::Later(receiver)) => receiver,
        SyncOutcome::Store(store) => {
            let code = match write {
                Some(Ok((log_partition, required))) => {
                    broker.groups.await_commit(log_partition, required).await
                }
                Some(Err(code)) => code.0,
                None => errors::UNKNOWN_SERVER_ERROR,
            };
            let config = broker.groups.classic_config();
            let mut state = shard.lock();
            if let Some(classic) = state
                .groups
                .get_mut(&group_id)
                .and_then(|g| g.classic_mut())
            {
                classic.finish_sync(
                    &store.value,
                    store.generation,
                    code,
                    config,
                    sluice_storage::now_ms(),
                );
            }
            store.reply
        }
    };
    match receiver.await {
        Ok(result) => sync_response(result, version),
        Err(_) => error(errors::NOT_COORDINATOR),
    }
}

pub async fn heartbeat(context: &RequestContext, request: HeartbeatRequest) -> HeartbeatResponse {
    let group_id = group_id(&request.group_id);
    let respond = |code| HeartbeatResponse::default().with_error_code(code);
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return respond(code.0),
    };
    let mut state = shard.lock();
    let Some(group) = state.groups.get_mut(&group_id) else {
        return respond(errors::UNKNOWN_MEMBER_ID);
    };
    let now = sluice_storage::now_ms();
    let instance = request.group_instance_id.as_deref();
    let code = match &mut group.kind {
        GroupKind::Classic(classic) => {
            classic.heartbeat(&request.member_id, instance, request.generation_id, now)
        }
        GroupKind::Consumer(consumer) => {
            consumer.classic_heartbeat(&request.member_id, instance, request.generation_id, now)
        }
    };
    respond(code)
}

pub async fn leave_group(
    context: &RequestContext,
    request: LeaveGroupRequest,
) -> LeaveGroupResponse {
    let version = context.version;
    let broker = &context.broker;
    let group_id = group_id(&request.group_id);
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| (m.member_id.to_string(), opt_string(&m.group_instance_id)))
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let respond = |code: i16, per_member: Vec<MemberResponse>| {
        LeaveGroupResponse::default()
            .with_error_code(code)
            .with_members(if version >= 3 { per_member } else { Vec::new() })
    };
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return respond(code.0, Vec::new()),
    };
    let config = broker.groups.classic_config();
    let now = sluice_storage::now_ms();
    let mut state = shard.lock();
    let Some(group) = state.groups.get_mut(&group_id) else {
        return respond(errors::UNKNOWN_MEMBER_ID, Vec::new());
    };
    let mut codes = Vec::with_capacity(members.len());
    for (member_id, instance) in &members {
        let code = match &mut group.kind {
            GroupKind::Classic(classic) => {
                classic.leave(member_id, instance.as_deref(), config, now)
            }
            GroupKind::Consumer(consumer) => {
                consumer.classic_leave(member_id, instance.as_deref(), now)
            }
        };
        codes.push(
            MemberResponse::default()
                .with_member_id(str_bytes(member_id.clone()))
                .with_group_instance_id(instance.clone().map(str_bytes))
                .with_error_code(code),
        );
    }
    group.maybe_downgrade(config, now);
    flush(broker, &shard, &mut state);
    drop(state);
    if version >= 3 {
        respond(errors::NONE, codes)
    } else {
        let code = codes.first().map_or(errors::NONE, |c| c.error_code);
        respond(code, Vec::new())
    }
}

// -- Committed offsets -------------------------------------------------------------------

pub async fn offset_commit(
    context: &RequestContext,
    request: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let version = context.version;
    let broker = &context.broker;
    let group_id = group_id(&request.group_id);
    let all_failed = |code: i16| {
        OffsetCommitResponse::default().with_topics(
            request
                .topics
                .iter()
                .map(|t| {
                    OffsetCommitResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    OffsetCommitResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(code)
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    };
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return all_failed(code.0),
    };
    let image = broker.image();
    let max_metadata = broker.config.settings().offset_metadata_max_bytes;
    let now = sluice_storage::now_ms();
    let expire =
        (version <= 4 && request.retention_time_ms >= 0).then(|| now + request.retention_time_ms);
    // Per partition: its error, or the value to store.
    let mut results: Vec<(String, Vec<(i32, i16)>)> = Vec::new();
    let mut values: Vec<((String, i32), Option<OffsetValue>)> = Vec::new();
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let known = image.topic(&name);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for p in &topic.partitions {
            let metadata = p
                .committed_metadata
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            let code = if known.is_none_or(|t| !t.partitions.contains_key(&p.partition_index)) {
                errors::UNKNOWN_TOPIC_OR_PARTITION
            } else if metadata.len() > max_metadata {
                errors::OFFSET_METADATA_TOO_LARGE
            } else {
                values.push((
                    (name.clone(), p.partition_index),
                    Some(OffsetValue {
                        offset: p.committed_offset,
                        leader_epoch: if version >= 6 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata,
                        commit_timestamp: now,
                        expire_timestamp: expire,
                    }),
                ));
                errors::NONE
            };
            partitions.push((p.partition_index, code));
        }
        results.push((name, partitions));
    }
    let member_id = request.member_id.to_string();
    let instance = opt_string(&request.group_instance_id);
    let generation = request.generation_id_or_member_epoch;
    let written = {
        let state = shard.lock();
        let check = match state.groups.get(&group_id) {
            Some(group) => {
                group.validate_offset_commit(&member_id, instance.as_deref(), generation)
            }
            None if generation < 0 => Ok(()),
            None if version >= 9 => Err(ErrorCode::GROUP_ID_NOT_FOUND),
            None => Err(ErrorCode::ILLEGAL_GENERATION),
        };
        if let Err(code) = check {
            return all_failed(code.0);
        }
        if values.is_empty() {
            None
        } else {
            let records: Vec<OffsetsRecord> = values
                .iter()
                .map(|((topic, partition), value)| {
                    offset_record(&group_id, topic, *partition, value.as_ref())
                })
                .collect();
            Some(broker.groups.append(&shard, &records))
        }
    };
    let write_code = match written {
        None => errors::NONE,
        Some(Err(code)) => code.0,
        Some(Ok((log_partition, required))) => {
            let code = broker.groups.await_commit(log_partition, required).await;
            if code == errors::NONE {
                shard.lock().apply_offsets(&group_id, values, required, now);
            }
            code
        }
    };
    OffsetCommitResponse::default().with_topics(
        results
            .into_iter()
            .map(|(name, partitions)| {
                OffsetCommitResponseTopic::default()
                    .with_name(topic_name(name))
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(index, code)| {
                                OffsetCommitResponsePartition::default()
                                    .with_partition_index(index)
                                    .with_error_code(if code == errors::NONE {
                                        write_code
                                    } else {
                                        code
                                    })
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// One group's committed offsets for `topics` (None = all): (topic, [(partition,
/// offset, leader epoch, metadata, error)]), or the group's error code.
type FetchedTopics = Vec<(String, Vec<OffsetRow>)>;

/// A fetched offset: partition, offset, leader epoch, metadata, error code.
type OffsetRow = (i32, i64, i32, String, i16);

fn fetch_offsets(
    context: &RequestContext,
    group_id: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
    member: Option<(String, i32)>,
    require_stable: bool,
) -> Result<FetchedTopics, ErrorCode> {
    let shard = shard(context, group_id)?;
    let state = shard.lock();
    let group = state.groups.get(group_id);
    if let (Some((member_id, epoch)), Some(group)) = (&member, group)
        && let GroupKind::Consumer(consumer) = &group.kind
    {
        consumer.validate_offset_commit(member_id, None, *epoch)?;
    }
    let committed = |topic: &str, partition: i32| {
        group
            .and_then(|g| g.offsets.get(&(topic.to_string(), partition)))
            .map(|c| c.value.clone())
    };
    let fetched = match topics {
        Some(topics) => topics
            .into_iter()
            .map(|(topic, partitions)| {
                let rows = partitions
                    .into_iter()
                    .map(|p| match committed(&topic, p) {
                        // v7+: an offset a pending transaction is about to replace is
                        // not stable yet (the client retries).
                        _ if require_stable && state.has_pending_txn(group_id, &topic, p) => {
                            (p, -1, -1, String::new(), errors::UNSTABLE_OFFSET_COMMIT)
                        }
                        Some(v) => (p, v.offset, v.leader_epoch, v.metadata, errors::NONE),
                        None => (p, -1, -1, String::new(), errors::NONE),
                    })
                    .collect();
                (topic, rows)
            })
            .collect(),
        None => {
            let mut by_topic: BTreeMap<String, Vec<OffsetRow>> = BTreeMap::new();
            if let Some(group) = group {
                for ((topic, partition), c) in &group.offsets {
                    let row =
                        if require_stable && state.has_pending_txn(group_id, topic, *partition) {
                            (
                                *partition,
                                -1,
                                -1,
                                String::new(),
                                errors::UNSTABLE_OFFSET_COMMIT,
                            )
                        } else {
                            (
                                *partition,
                                c.value.offset,
                                c.value.leader_epoch,
                                c.value.metadata.clone(),
                                errors::NONE,
                            )
                        };
                    by_topic.entry(topic.clone()).or_default().push(row);
                }
            }
            by_topic.into_iter().collect()
        }
    };
    Ok(fetched)
}

/// Fetched offsets as response topics, in either of OffsetFetch's layouts (v0-7:
/// `OffsetFetchResponseTopic`/`Partition`; v8+: `...Topics`/`...Partitions`).
macro_rules! response_topics {
    ($fetched:expr, $topic:ty, $partition:ty) => {
        $fetched
            .into_iter()
            .map(|(name, rows)| {
                <$topic>::default()
                    .with_name(topic_name(name))
                    .with_partitions(
                        rows.into_iter()
                            .map(|(p, offset, epoch, metadata, code)| {
                                <$partition>::default()
                                    .with_partition_index(p)
                                    .with_committed_offset(offset)
                                    .with_committed_leader_epoch(epoch)
                                    .with_metadata(Some(str_bytes(metadata)))
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect()
    };
}

pub async fn offset_fetch(
    context: &RequestContext,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let version = context.version;
    if version >= 8 {
        let groups = request
            .groups
            .iter()
            .map(|g| {
                let id = group_id(&g.group_id);
                let topics = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
                        .collect()
                });
                let member = g
                    .member_id
                    .as_ref()
                    .filter(|m| !m.is_empty())
                    .map(|m| (m.to_string(), g.member_epoch));
                let group = OffsetFetchResponseGroup::default().with_group_id(g.group_id.clone());
                match fetch_offsets(context, &id, topics, member, request.require_stable) {
                    Ok(fetched) => group.with_topics(response_topics!(
                        fetched,
                        OffsetFetchResponseTopics,
                        OffsetFetchResponsePartitions
                    )),
                    Err(code) => group.with_error_code(code.0),
                }
            })
            .collect();
        return OffsetFetchResponse::default().with_groups(groups);
    }
    let id = group_id(&request.group_id);
    let topics: Option<Vec<(String, Vec<i32>)>> = request.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let mut response = OffsetFetchResponse::default();
    let fetched = match fetch_offsets(
        context,
        &id,
        topics.clone(),
        None,
        version >= 7 && request.require_stable,
    ) {
        Ok(fetched) => fetched,
        Err(code) if version >= 2 => return response.with_error_code(code.0),
        // v1 has no group-level error: every partition asked for carries it.
        Err(code) => topics
            .unwrap_or_default()
            .into_iter()
            .map(|(name, partitions)| {
                let rows = partitions
                    .into_iter()
                    .map(|p| (p, -1, -1, String::new(), code.0))
                    .collect();
                (name, rows)
            })
            .collect(),
    };
    response.topics = response_topics!(
        fetched,
        OffsetFetchResponseTopic,
        OffsetFetchResponsePartition
    );
    response
}

pub async fn offset_delete(
    context: &RequestContext,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let broker = &context.broker;
    let group_id = group_id(&request.group_id);
    let error = |code| OffsetDeleteResponse::default().with_error_code(code);
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return error(code.0),
    };
    let mut results: Vec<(String, Vec<(i32, i16)>)> = Vec::new();
    let mut deleted: Vec<((String, i32), Option<OffsetValue>)> = Vec::new();
    let written = {
        let state = shard.lock();
        let Some(group) = state.groups.get(&group_id) else {
            return error(errors::GROUP_ID_NOT_FOUND);
        };
        let subscribed: Option<std::collections::HashSet<String>> = match &group.kind {
            GroupKind::Classic(classic) if classic.is_empty() => None,
            // Subscriptions that cannot be read count as every topic (Kafka's rule).
            GroupKind::Classic(classic) => Some(classic.subscribed_topics().unwrap_or_default()),
            GroupKind::Consumer(consumer) if consumer.is_empty() => None,
            GroupKind::Consumer(consumer) => Some(
                consumer
                    .members()
                    .flat_map(|m| m.subscribed_topic_names.iter().cloned())
                    .collect(),
            ),
        };
        for topic in &request.topics {
            let name = topic.name.0.to_string();
            let is_subscribed = subscribed
                .as_ref()
                .is_some_and(|s| s.is_empty() || s.contains(&name));
            let rows = topic
                .partitions
                .iter()
                .map(|p| {
                    if is_subscribed {
                        (p.partition_index, errors::GROUP_SUBSCRIBED_TO_TOPIC)
                    } else {
                        if group
                            .offsets
                            .contains_key(&(name.clone(), p.partition_index))
                        {
                            deleted.push(((name.clone(), p.partition_index), None));
                        }
                        (p.partition_index, errors::NONE)
                    }
                })
                .collect();
            results.push((name, rows));
        }
        let records: Vec<OffsetsRecord> = deleted
            .iter()
            .map(|((t, p), _)| offset_record(&group_id, t, *p, None))
            .collect();
        (!records.is_empty()).then(|| broker.groups.append(&shard, &records))
    };
    let code = match written {
        None => errors::NONE,
        Some(Err(code)) => code.0,
        Some(Ok((log_partition, required))) => {
            let code = broker.groups.await_commit(log_partition, required).await;
            if code == errors::NONE {
                shard
                    .lock()
                    .apply_offsets(&group_id, deleted, required, sluice_storage::now_ms());
            }
            code
        }
    };
    if code != errors::NONE {
        return error(code);
    }
    OffsetDeleteResponse::default().with_topics(
        results
            .into_iter()
            .map(|(name, rows)| {
                OffsetDeleteResponseTopic::default()
                    .with_name(topic_name(name))
                    .with_partitions(
                        rows.into_iter()
                            .map(|(p, code)| {
                                OffsetDeleteResponsePartition::default()
                                    .with_partition_index(p)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

// -- Administration ----------------------------------------------------------------------

pub async fn list_groups(
    context: &RequestContext,
    request: ListGroupsRequest,
) -> ListGroupsResponse {
    let version = context.version;
    let states: Vec<String> = request
        .states_filter
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    let types: Vec<String> = request
        .types_filter
        .iter()
        .map(|s| s.to_lowercase())
        .collect();
    let mut groups = Vec::new();
    for shard in context.broker.groups.loaded_shards() {
        let state = shard.lock();
        for group in state.groups.values().filter(|g| !g.is_dead()) {
            let state_name = group.state_name();
            if !states.is_empty() && !states.contains(&state_name.to_lowercase()) {
                continue;
            }
            if !types.is_empty() && !types.contains(&group.type_name().to_string()) {
                continue;
            }
            let mut listed = ListedGroup::default()
                .with_group_id(GroupId(str_bytes(group.group_id.clone())))
                .with_protocol_type(str_bytes(group.protocol_type()));
            if version >= 4 {
                listed.group_state = str_bytes(state_name);
            }
            if version >= 5 {
                listed.group_type = str_bytes(group.type_name());
            }
            groups.push(listed);
        }
    }
    groups.sort_by(|a, b| a.group_id.0.cmp(&b.group_id.0));
    ListGroupsResponse::default().with_groups(groups)
}

pub async fn describe_groups(
    context: &RequestContext,
    request: DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let version = context.version;
    let described = request
        .groups
        .iter()
        .map(|id| {
            let name = group_id(id);
            let base = DescribedGroup::default()
                .with_group_id(id.clone())
                .with_authorized_operations(i32::MIN);
            let shard = match shard(context, &name) {
                Ok(shard) => shard,
                Err(code) => return base.with_error_code(code.0),
            };
            let state = shard.lock();
            match state.groups.get(&name).filter(|g| !g.is_dead()) {
                None if version >= 6 => base
                    .with_error_code(errors::GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(str_bytes(format!("Group {name} not found."))))
                    .with_group_state(str_bytes("Dead")),
                None => base.with_group_state(str_bytes("Dead")),
                Some(group) => match &group.kind {
                    GroupKind::Consumer(_) if version >= 6 => base
                        .with_error_code(errors::GROUP_ID_NOT_FOUND)
                        .with_error_message(Some(str_bytes(format!(
                            "Group {name} is not a classic group."
                        )))),
                    GroupKind::Consumer(_) => base.with_group_state(str_bytes("Dead")),
                    GroupKind::Classic(classic) => {
                        let stable = classic.state == group::ClassicState::Stable;
                        let protocol = classic.protocol.clone().unwrap_or_default();
                        let members = classic
                            .members
                            .iter()
                            .map(|m| {
                                let mut member = DescribedGroupMember::default()
                                    .with_member_id(str_bytes(m.member_id.clone()))
                                    .with_client_id(str_bytes(m.client_id.clone()))
                                    .with_client_host(str_bytes(m.client_host.clone()));
                                if version >= 4 {
                                    member.group_instance_id =
                                        m.group_instance_id.clone().map(str_bytes);
                                }
                                if stable {
                                    member.member_metadata = m.metadata(&protocol);
                                    member.member_assignment = m.assignment.clone();
                                }
                                member
                            })
                            .collect();
                        base.with_group_state(str_bytes(classic.state.as_str()))
                            .with_protocol_type(str_bytes(
                                classic.protocol_type.clone().unwrap_or_default(),
                            ))
                            .with_protocol_data(str_bytes(if stable {
                                protocol
                            } else {
                                String::new()
                            }))
                            .with_members(members)
                    }
                },
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(described)
}

pub async fn delete_groups(
    context: &RequestContext,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let broker = &context.broker;
    let mut results = Vec::with_capacity(request.groups_names.len());
    for id in &request.groups_names {
        let name = group_id(id);
        let code = delete_group(context, broker, &name).await;
        results.push(
            delete_groups_response::DeletableGroupResult::default()
                .with_group_id(id.clone())
                .with_error_code(code),
        );
    }
    DeleteGroupsResponse::default().with_results(results)
}

async fn delete_group(
    context: &RequestContext,
    broker: &std::sync::Arc<Broker>,
    name: &str,
) -> i16 {
    let shard = match shard(context, name) {
        Ok(shard) => shard,
        Err(code) => return code.0,
    };
    let written = {
        let mut state = shard.lock();
        let Some(group) = state.groups.get_mut(name).filter(|g| !g.is_dead()) else {
            return errors::GROUP_ID_NOT_FOUND;
        };
        if !group.is_empty() {
            return errors::NON_EMPTY_GROUP;
        }
        let mut records: Vec<OffsetsRecord> = group
            .offsets
            .keys()
            .map(|(t, p)| offset_record(name, t, *p, None))
            .collect();
        match &mut group.kind {
            GroupKind::Consumer(consumer) => {
                consumer.mark_dead();
                records.extend(consumer.take_records());
            }
            GroupKind::Classic(_) => records.push(group::group_record(name, None)),
        }
        match broker.groups.append(&shard, &records) {
            Ok(written) => {
                group.dead = true;
                written
            }
            Err(code) => return code.0,
        }
    };
    let (log_partition, required) = written;
    let code = broker.groups.await_commit(log_partition, required).await;
    let mut state = shard.lock();
    if code == errors::NONE {
        if state.groups.get(name).is_some_and(|g| g.is_dead()) {
            state.groups.remove(name);
        }
    } else if let Some(group) = state.groups.get_mut(name) {
        group.dead = false;
    }
    code
}

// -- The consumer protocol (KIP-848) -----------------------------------------------------

pub async fn consumer_group_heartbeat(
    context: &RequestContext,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let broker = &context.broker;
    let group_id = group_id(&request.group_id);
    let error = |code: i16, message: &str| {
        ConsumerGroupHeartbeatResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message)))
    };
    if !broker.config.settings().consumer_rebalance_protocol {
        return error(
            errors::UNSUPPORTED_VERSION,
            "The new consumer group protocol is not enabled.",
        );
    }
    if group_id.is_empty() {
        return error(errors::INVALID_REQUEST, "GroupId can't be empty.");
    }
    let shard = match shard(context, &group_id) {
        Ok(shard) => shard,
        Err(code) => return ConsumerGroupHeartbeatResponse::default().with_error_code(code.0),
    };
    let topics = broker.groups.topics();
    let config = broker.groups.consumer_config();
    let now = sluice_storage::now_ms();
    let client_id = context.client_id.as_deref().unwrap_or("");
    let classic_settings = broker.groups.classic_config();
    let (response, written) = {
        let mut state = shard.lock();
        let group = state
            .groups
            .entry(group_id.clone())
            .or_insert_with(|| group::Group::new(&group_id, now));
        let beat = |group: &mut ConsumerGroup| {
            group.heartbeat(
                context.version,
                &request,
                client_id,
                &context.client_host,
                &topics,
                config,
                now,
            )
        };
        let response = match &mut group.kind {
            // An empty classic group (committed offsets only) is converted; its offsets
            // stay.
            GroupKind::Classic(classic) if classic.is_empty() => {
                tracing::info!(group = %group_id, "empty classic group converted to a consumer group");
                let mut consumer = ConsumerGroup::new(group_id.clone());
                let response = beat(&mut consumer);
                group.become_consumer(consumer);
                response
            }
            // KIP-848's online upgrade: the classic members become classic members of
            // a consumer group, which assigns from now on.
            GroupKind::Classic(classic) => {
                if !classic_settings.upgrade_allowed || request.member_epoch != 0 {
                    return error(
                        errors::GROUP_ID_NOT_FOUND,
                        &format!("Group {group_id} is not a consumer group."),
                    );
                }
                let snapshot = classic.snapshot();
                if let Err((code, message)) =
                    ConsumerGroup::validate_online_upgrade(&group_id, &snapshot, config)
                {
                    return error(code, &message);
                }
                let mut upgraded =
                    match ConsumerGroup::from_classic(group_id.clone(), &snapshot, &topics, now) {
                        Ok(upgraded) => upgraded,
                        Err((code, message)) => return error(code, &message),
                    };
                let response = beat(&mut upgraded);
                if response.error_code != errors::NONE {
                    // Refused: the group stays classic, as if nothing happened.
                    return response;
                }
                tracing::info!(group = %group_id, members = snapshot.members.len(), "classic group upgraded to a consumer group");
                classic.fail_all(errors::REBALANCE_IN_PROGRESS);
                group.become_consumer(upgraded);
                response
            }
            GroupKind::Consumer(consumer) => {
                let response = beat(consumer);
                group.maybe_downgrade(classic_settings, now);
                response
            }
        };
        // What changed is stored before the member hears of it (Kafka's order).
        let records = group.take_records();
        let written = (!records.is_empty()).then(|| broker.groups.append(&shard, &records));
        (response, written)
    };
    let code = match written {
        None => errors::NONE,
        Some(Err(code)) => code.0,
        Some(Ok((log_partition, required))) => {
            broker.groups.await_commit(log_partition, required).await
        }
    };
    if code != errors::NONE {
        return ConsumerGroupHeartbeatResponse::default().with_error_code(code);
    }
    response
}

pub async fn consumer_group_describe(
    context: &RequestContext,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let topics = context.broker.groups.topics();
    let groups = request
        .group_ids
        .iter()
        .map(|id| {
            let name = group_id(id);
            let base = consumer_group_describe_response::DescribedGroup::default()
                .with_group_id(id.clone())
                .with_authorized_operations(i32::MIN);
            let shard = match shard(context, &name) {
                Ok(shard) => shard,
                Err(code) => return base.with_error_code(code.0),
            };
            let state = shard.lock();
            match state
                .groups
                .get(&name)
                .filter(|g| !g.is_dead())
                .map(|g| &g.kind)
            {
                Some(GroupKind::Consumer(consumer)) => consumer
                    .describe(&topics)
                    .with_group_id(id.clone())
                    .with_authorized_operations(i32::MIN),
                Some(GroupKind::Classic(_)) => base
                    .with_error_code(errors::GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(str_bytes(format!(
                        "Group {name} is not a consumer group."
                    )))),
                None => base
                    .with_error_code(errors::GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(str_bytes(format!("Group {name} not found.")))),
            }
        })
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}
