//! InitProducerId for idempotent producers: a producer id from this broker's block
//! (blocks are taken through the metadata log, so ids are unique across restarts) and
//! epoch 0. A request with a transactional id goes to the transaction coordinator
//! (`txn::init_transactional`).
//!
//! DescribeProducers (`kafka-transactions.sh describe-producers`): the producers a
//! partition's leader has state for (the idempotent producers' dedup state).

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::*;

use super::common::str_bytes;
use crate::errors;
use crate::request::RequestContext;

pub async fn describe_producers(
    context: &RequestContext,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let broker = &context.broker;
    let image = broker.image();
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let name = topic.name.0.to_string();
            let partitions = topic
                .partition_indexes
                .iter()
                .map(|&index| {
                    let response = PartitionResponse::default().with_partition_index(index);
                    let known = image
                        .topic(&name)
                        .is_some_and(|t| t.partitions.contains_key(&index));
                    let refuse = |code: i16, message: &str| {
                        response
                            .clone()
                            .with_error_code(code)
                            .with_error_message(Some(str_bytes(message)))
                    };
                    if !known {
                        return refuse(
                            errors::UNKNOWN_TOPIC_OR_PARTITION,
                            "This server does not host this topic-partition.",
                        );
                    }
                    let Some(replica) = broker.replica(&name, index) else {
                        return refuse(
                            errors::NOT_LEADER_OR_FOLLOWER,
                            "This server is not the leader for that topic-partition.",
                        );
                    };
                    if !replica.state().is_leader() {
                        return refuse(
                            errors::NOT_LEADER_OR_FOLLOWER,
                            "This server is not the leader for that topic-partition.",
                        );
                    }
                    let entries = sluice_storage::lock(&replica.log)
                        .producer_state()
                        .snapshot_entries();
                    response.with_active_producers(
                        entries
                            .into_iter()
                            .map(|entry| {
                                ProducerState::default()
                                    .with_producer_id(ProducerId(entry.producer_id))
                                    .with_producer_epoch(i32::from(entry.epoch))
                                    .with_last_sequence(entry.last_sequence)
                                    .with_last_timestamp(entry.timestamp)
                                    .with_coordinator_epoch(entry.coordinator_epoch)
                                    .with_current_txn_start_offset(entry.current_txn_first_offset)
                            })
                            .collect(),
                    )
                })
                .collect();
            TopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}

pub async fn init_producer_id(
    context: &RequestContext,
    request: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let response = InitProducerIdResponse::default();
    if let Some(transactional_id) = &request.transactional_id {
        let transactional_id = transactional_id.0.to_string();
        return super::txn::init_transactional(context, &request, transactional_id).await;
    }
    // v3+: an idempotent producer that asks to bump its epoch (after an error) gets a
    // fresh id, which Kafka 4.1 also does for producers without a transactional id.
    match context.broker.allocate_producer_id().await {
        Ok(id) => response
            .with_producer_id(ProducerId(id))
            .with_producer_epoch(0),
        Err(error) => {
            tracing::error!(%error, "producer id allocation failed");
            response
                .with_error_code(errors::UNKNOWN_SERVER_ERROR)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
        }
    }
}
