//! Produce: validate each partition's batch as Kafka 4.1 does, append it as the leader,
//! answer with the offsets once the request's `acks` are satisfied.
//!
//! Only the partition's leader appends; any other replica answers NOT_LEADER_OR_FOLLOWER
//! (v10+: with the leader it knows, KIP-951's `current_leader` and `node_endpoints`).
//!
//! Durability (what an acknowledgement promises):
//!
//! - acks=0: nothing is promised and nothing is answered.
//! - acks=1: the response is sent after the batch is written to the leader's active
//!   segment file, i.e. in the leader's page cache: it survives the leader process being
//!   killed (SIGKILL), survives power loss only once flushed (`flush.messages` /
//!   `flush.ms`, or the periodic and shutdown flushes), and is lost if the leader's
//!   machine fails before a follower copied it and another replica is elected — exactly
//!   Kafka's promise.
//! - acks=-1 (all): refused with NOT_ENOUGH_REPLICAS before anything is written when the
//!   ISR is smaller than the topic's `min.insync.replicas` (capped at the replica count,
//!   Kafka's effective min ISR); else appended, and answered once the high watermark
//!   passes the batch, i.e. once every replica in the ISR has the batch in its log (page
//!   cache): it survives the failure of all but one of them. If the ISR shrank below min
//!   ISR meanwhile the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND (the batch is written
//!   but under-replicated); if `timeout_ms` passes first, REQUEST_TIMED_OUT (the batch
//!   may still commit). With a single replica, acks=-1 and acks=1 promise the same.

use std::time::Duration;

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::*;

use super::common::{from_uuid, str_bytes, topic_name};
use crate::append::{Refused, await_high_watermark, refused};
use crate::broker::{Broker, Replica};
use crate::request::RequestContext;
use crate::{errors, replication};

/// Produce. `None` means no response (acks=0).
pub async fn produce(context: &RequestContext, request: ProduceRequest) -> Option<ProduceResponse> {
    let version = context.version;
    let broker = &context.broker;
    let acks = request.acks;
    let timeout_ms = request.timeout_ms;
    let image = broker.image();
    let ProduceRequest {
        topic_data,
        transactional_id,
        ..
    } = request;
    // Copied out so that the frame can be the records' only user.
    let transactional_id = transactional_id.map(|id| id.0.to_string());
    let mut responses = Vec::with_capacity(topic_data.len());
    // acks=all partitions waiting for the high watermark: (topic index, partition
    // index, replica, offset to reach).
    let mut waits = Vec::new();
    // Leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951, v10+).
    let mut leaders: Vec<i32> = Vec::new();
    for topic in topic_data {
        // The name is a slice of the request frame: copy it out and drop it, so a
        // partition's records can be the frame's only user (appended without a copy).
        let produce_request::TopicProduceData {
            name: wire_name,
            topic_id,
            partition_data,
            ..
        } = topic;
        let name = wire_name.0.to_string();
        drop(wire_name);
        // v13 names topics by id.
        let found = if version >= 13 {
            image.topic_by_id(&from_uuid(&topic_id))
        } else {
            image.topic(&name)
        };
        let unknown_topic = if version >= 13 {
            errors::UNKNOWN_TOPIC_ID
        } else {
            errors::UNKNOWN_TOPIC_OR_PARTITION
        };
        let mut partitions = Vec::with_capacity(partition_data.len());
        for partition in partition_data {
            let index = partition.index;
            let mut waiting = None;
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
                    Some(replica) => {
                        replication::ensure_current(
                            &broker.replication,
                            &t.name,
                            index,
                            &replica,
                            &image,
                        );
                        let verified = verify_transaction(
                            broker,
                            version,
                            transactional_id.as_deref(),
                            (&t.name, index),
                            &replica,
                            partition.records.as_ref(),
                        )
                        .await;
                        let appended = match verified {
                            Ok(()) => broker.replication.append_records(
                                version,
                                (&t.name, index),
                                &replica,
                                acks,
                                partition.records,
                            ),
                            Err(refusal) => Err(refusal),
                        };
                        if let Ok(done) = &appended
                            && acks == -1
                        {
                            waiting = Some((replica, done.required_offset));
                        }
                        appended
                    }
                }
            } else {
                Err(refused(
                    unknown_topic,
                    "This server does not host this topic.",
                ))
            };
            let response = PartitionProduceResponse::default().with_index(index);
            if let Some((replica, required)) = waiting {
                waits.push((responses.len(), partitions.len(), replica, required));
            }
            partitions.push(match result {
                Ok(appended) => response
                    .with_base_offset(appended.base_offset)
                    .with_log_append_time_ms(appended.log_append_time_ms)
                    .with_log_start_offset(appended.log_start_offset),
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
                    if version >= 10
                        && refusal.code == errors::NOT_LEADER_OR_FOLLOWER
                        && let Some(p) = found.and_then(|t| t.partitions.get(&index))
                    {
                        response = response.with_current_leader(
                            LeaderIdAndEpoch::default()
                                .with_leader_id(p.leader.into())
                                .with_leader_epoch(p.leader_epoch),
                        );
                        if p.leader >= 0 && !leaders.contains(&p.leader) {
                            leaders.push(p.leader);
                        }
                    }
                    response
                }
            });
        }
        let mut response = TopicProduceResponse::default().with_partition_responses(partitions);
        response = if version >= 13 {
            response.with_topic_id(topic_id)
        } else {
            response.with_name(topic_name(name))
        };
        responses.push(response);
    }
    // acks=all: every partition waits for its high watermark, under one deadline (Kafka's
    // DelayedProduce); the offsets stay in the answer whatever the outcome.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(timeout_ms.max(0) as u64);
    for (topic, partition, replica, required) in waits {
        let code = await_high_watermark(&replica, required, deadline).await;
        responses[topic].partition_responses[partition].error_code = code;
    }
    if acks == 0 {
        return None;
    }
    let mut response = ProduceResponse::default().with_responses(responses);
    if version >= 10 {
        response.node_endpoints = leaders
            .into_iter()
            .filter_map(|id| {
                let endpoint = Broker::endpoint_of(&image, id, &context.listener)?;
                Some(
                    NodeEndpoint::default()
                        .with_node_id(id.into())
                        .with_host(str_bytes(endpoint.host))
                        .with_port(i32::from(endpoint.port))
                        .with_rack(image.broker(id).and_then(|b| b.rack.clone()).map(str_bytes)),
                )
            })
            .collect();
    }
    Some(response)
}

/// KIP-890: before a producer's first transactional batch in a partition is appended,
/// the leader makes sure the partition is in the producer's transaction, so a late or
/// stray batch cannot open a transaction that nothing will ever end (a hanging
/// transaction). Transactions v1 clients added the partition themselves: the leader
/// asks the coordinator to verify it (part 1, `transaction.partition.verification.enable`).
/// Transactions v2 clients (Produce v12+ on a cluster at `transaction.version` 2) do
/// not add partitions: the leader adds it for them (part 2).
async fn verify_transaction(
    broker: &std::sync::Arc<Broker>,
    version: i16,
    transactional_id: Option<&str>,
    (topic, partition): (&str, i32),
    replica: &Replica,
    records: Option<&bytes::Bytes>,
) -> Result<(), Refused> {
    let Some(header) = records.and_then(|r| sluice_protocol::BatchHeader::new(r)) else {
        return Ok(());
    };
    if !header.is_transactional() || header.is_control() {
        return Ok(());
    }
    let producer_id = header.producer_id();
    let epoch = header.producer_epoch();
    let Some(transactional_id) = transactional_id else {
        return Err(refused(
            errors::INVALID_REQUEST,
            "Transactional records must be produced with a transactional id",
        ));
    };
    let tv2 = version >= 12 && crate::features::transaction_version(&broker.image()) >= 2;
    if !tv2 && !broker.config.settings().transaction_partition_verification {
        return Ok(());
    }
    let first_sequence = header.base_sequence();
    let (ongoing, known) = {
        let log = sluice_storage::lock(&replica.log);
        let state = log.producer_state();
        (
            state.ongoing_transaction_at(producer_id, epoch).is_some(),
            state.contains(producer_id),
        )
    };
    if ongoing {
        return Ok(());
    }
    // Transactions v2 start every transaction at sequence 0 (the epoch is bumped at
    // each end), so a first batch that does not, from a producer this partition does
    // not know, follows a lost one: Kafka 4.1 refuses it rather than treat it as new.
    if tv2 && !known && first_sequence != 0 {
        return Err(refused(
            errors::OUT_OF_ORDER_SEQUENCE_NUMBER,
            format!(
                "Out of order sequence number for producer {producer_id}: the first batch of a transaction has sequence {first_sequence}, expected 0"
            ),
        ));
    }
    let code = super::txn::add_or_verify(
        broker,
        transactional_id,
        (producer_id, epoch),
        &[(topic.to_string(), partition)],
        !tv2,
    )
    .await;
    match code {
        errors::NONE => Ok(()),
        // Kafka answers coordinator trouble with a retriable error of Produce's own.
        errors::COORDINATOR_NOT_AVAILABLE
        | errors::COORDINATOR_LOAD_IN_PROGRESS
        | errors::NOT_COORDINATOR
        | errors::CONCURRENT_TRANSACTIONS => Err(refused(
            errors::NOT_ENOUGH_REPLICAS,
            format!(
                "Unable to verify the partition has been added to the transaction (coordinator error {code})"
            ),
        )),
        errors::PRODUCER_FENCED | errors::INVALID_PRODUCER_EPOCH => Err(refused(
            errors::INVALID_PRODUCER_EPOCH,
            "The producer's epoch is stale: it has been fenced",
        )),
        _ => Err(refused(
            errors::INVALID_TXN_STATE,
            "The partition was not added to the transaction",
        )),
    }
}

#[cfg(test)]
mod frame_tests {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::{ProduceRequest, RequestHeader, TopicName};
    use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

    #[test]
    fn decoded_records_of_a_one_partition_request_are_unique() {
        let request = ProduceRequest::default().with_acks(1).with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(Bytes::from(vec![1u8; 500]))),
                ]),
        ]);
        let mut out = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(0)
            .with_request_api_version(9)
            .with_client_id(Some(StrBytes::from_static_str("c")))
            .encode(&mut out, 2)
            .unwrap();
        request.encode(&mut out, 9).unwrap();
        let mut frame = BytesMut::with_capacity(out.len());
        frame.extend_from_slice(&out);
        let mut body = frame.freeze();
        let header = RequestHeader::decode(&mut body, 2).unwrap();
        drop(header);
        let decoded = ProduceRequest::decode(&mut body, 9).unwrap();
        drop(body);
        let ProduceRequest {
            topic_data,
            transactional_id,
            ..
        } = decoded;
        drop(transactional_id);
        let mut records = None;
        for topic in topic_data {
            let TopicProduceData {
                name,
                partition_data,
                ..
            } = topic;
            drop(name);
            for partition in partition_data {
                records = partition.records;
            }
        }
        assert!(records.unwrap().try_into_mut().is_ok());
    }
}
