//! Metadata, DescribeCluster and DescribeTopicPartitions: the cluster as the metadata
//! image describes it.

use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use sluice_metadata::{MetadataImage, PartitionImage, TopicImage};

use super::common::{
    from_uuid, is_internal, live_brokers, str_bytes, to_uuid, topic_name, valid_topic_name,
};
use super::topics;
use crate::errors;
use crate::request::RequestContext;

/// "Authorized operations omitted" in Kafka's responses.
const OPERATIONS_OMITTED: i32 = i32::MIN;
/// With no authorizer every operation is allowed: the bit set of a topic's operations
/// (READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
const TOPIC_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
/// The cluster's operations (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
/// ALTER_CONFIGS, IDEMPOTENT_WRITE).
const CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

/// Replicas on brokers that are not registered and unfenced.
fn offline(live: &[i32], partition: &PartitionImage) -> Vec<BrokerId> {
    partition
        .replicas
        .iter()
        .filter(|r| !live.contains(r))
        .map(|r| BrokerId(*r))
        .collect()
}

/// Ids of the registered, unfenced brokers.
fn live_ids(image: &MetadataImage) -> Vec<i32> {
    image
        .brokers()
        .filter(|b| !b.fenced)
        .map(|b| b.broker_id)
        .collect()
}

fn ids(values: &[i32]) -> Vec<BrokerId> {
    values.iter().map(|v| BrokerId(*v)).collect()
}

fn describe_partition(live: &[i32], index: i32, p: &PartitionImage) -> MetadataResponsePartition {
    MetadataResponsePartition::default()
        .with_error_code(if p.leader < 0 {
            errors::LEADER_NOT_AVAILABLE
        } else {
            errors::NONE
        })
        .with_partition_index(index)
        .with_leader_id(BrokerId(p.leader))
        .with_leader_epoch(p.leader_epoch)
        .with_replica_nodes(ids(&p.replicas))
        .with_isr_nodes(ids(&p.isr))
        .with_offline_replicas(offline(live, p))
}

fn describe_topic(
    live: &[i32],
    topic: &TopicImage,
    with_operations: bool,
) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_name(Some(topic_name(topic.name.clone())))
        .with_topic_id(to_uuid(topic.topic_id))
        .with_is_internal(is_internal(&topic.name))
        .with_partitions(
            topic
                .partitions
                .iter()
                .map(|(index, p)| describe_partition(live, *index, p))
                .collect(),
        )
        .with_topic_authorized_operations(if with_operations {
            TOPIC_OPERATIONS
        } else {
            OPERATIONS_OMITTED
        })
}

fn topic_error(name: Option<String>, id: uuid::Uuid, code: i16) -> MetadataResponseTopic {
    MetadataResponseTopic::default()
        .with_error_code(code)
        .with_name(name.map(topic_name))
        .with_topic_id(id)
}

pub async fn metadata(context: &RequestContext, request: MetadataRequest) -> MetadataResponse {
    let broker = &context.broker;
    let version = context.version;
    let with_operations = version >= 8 && request.include_topic_authorized_operations;
    // v0: an empty list means all topics; v1+: null means all, empty means none.
    let requested = match request.topics {
        None => None,
        Some(topics) if topics.is_empty() && version == 0 => None,
        Some(topics) => Some(topics),
    };
    let allow_auto_create =
        broker.config.auto_create_topics() && (version < 4 || request.allow_auto_topic_creation);
    let mut image = broker.image();
    let live = live_ids(&image);
    let topics = match requested {
        None => image
            .topics()
            .map(|t| describe_topic(&live, t, with_operations))
            .collect(),
        Some(requested) => {
            // Auto-create the missing ones first (one metadata write), then describe.
            if allow_auto_create {
                let missing: Vec<String> = requested
                    .iter()
                    .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                    .filter(|n| image.topic(n).is_none() && valid_topic_name(n).is_ok())
                    .collect();
                if !missing.is_empty() {
                    if let Err(error) = topics::auto_create(broker, &missing).await {
                        tracing::warn!(%error, topics = ?missing, "auto-creating topics failed");
                    }
                    image = broker.image();
                }
            }
            requested
                .iter()
                .map(|t| describe_requested(&live, &image, t, version, with_operations))
                .collect()
        }
    };
    let brokers = live_brokers(&image, &context.listener);
    // Kafka answers a random alive broker as the "controller" (clients send admin
    // requests there); the lowest id is as good and stable.
    let controller = brokers.first().map_or(-1, |b| b.0);
    let mut response = MetadataResponse::default()
        .with_brokers(
            brokers
                .into_iter()
                .map(|(id, host, port, rack)| {
                    MetadataResponseBroker::default()
                        .with_node_id(BrokerId(id))
                        .with_host(str_bytes(host))
                        .with_port(port)
                        .with_rack(rack.map(str_bytes))
                })
                .collect(),
        )
        .with_cluster_id(Some(str_bytes(broker.cluster_id.clone())))
        .with_controller_id(BrokerId(controller))
        .with_topics(topics);
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response = response.with_cluster_authorized_operations(CLUSTER_OPERATIONS);
    }
    response
}

fn describe_requested(
    live: &[i32],
    image: &MetadataImage,
    requested: &metadata_request::MetadataRequestTopic,
    version: i16,
    with_operations: bool,
) -> MetadataResponseTopic {
    match &requested.name {
        Some(name) => {
            let name = name.0.to_string();
            if let Err(_reason) = valid_topic_name(&name) {
                return topic_error(
                    Some(name),
                    uuid::Uuid::nil(),
                    errors::INVALID_TOPIC_EXCEPTION,
                );
            }
            match image.topic(&name) {
                Some(topic) => describe_topic(live, topic, with_operations),
                None => topic_error(
                    Some(name),
                    uuid::Uuid::nil(),
                    errors::UNKNOWN_TOPIC_OR_PARTITION,
                ),
            }
        }
        // Lookup by id works from v12 (v10-11 carried the field but did not serve it).
        None if version >= 12 => match image.topic_by_id(&from_uuid(&requested.topic_id)) {
            Some(topic) => describe_topic(live, topic, with_operations),
            None => topic_error(None, requested.topic_id, errors::UNKNOWN_TOPIC_ID),
        },
        None => topic_error(None, requested.topic_id, errors::INVALID_REQUEST),
    }
}

pub async fn describe_cluster(
    context: &RequestContext,
    request: DescribeClusterRequest,
) -> DescribeClusterResponse {
    let broker = &context.broker;
    let image = broker.image();
    let mut response = DescribeClusterResponse::default()
        .with_endpoint_type(request.endpoint_type)
        .with_cluster_id(str_bytes(broker.cluster_id.clone()));
    match request.endpoint_type {
        1 => {}
        2 => {
            return response
                .with_error_code(errors::MISMATCHED_ENDPOINT_TYPE)
                .with_error_message(Some(str_bytes(
                    "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
                )));
        }
        other => {
            return response
                .with_error_code(errors::UNSUPPORTED_ENDPOINT_TYPE)
                .with_error_message(Some(str_bytes(format!(
                    "Unsupported endpoint type {other}"
                ))));
        }
    }
    let brokers = live_brokers(&image, &context.listener);
    response = response
        .with_controller_id(BrokerId(brokers.first().map_or(-1, |b| b.0)))
        .with_brokers(
            brokers
                .into_iter()
                .map(|(id, host, port, rack)| {
                    DescribeClusterBroker::default()
                        .with_broker_id(BrokerId(id))
                        .with_host(str_bytes(host))
                        .with_port(port)
                        .with_rack(rack.map(str_bytes))
                })
                .collect(),
        );
    if request.include_cluster_authorized_operations {
        response = response.with_cluster_authorized_operations(CLUSTER_OPERATIONS);
    }
    response
}

pub async fn describe_topic_partitions(
    context: &RequestContext,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let broker = &context.broker;
    let image = broker.image();
    let live = live_ids(&image);
    let mut names: Vec<String> = if request.topics.is_empty() {
        image.topics().map(|t| t.name.clone()).collect()
    } else {
        let mut names: Vec<String> = request
            .topics
            .iter()
            .map(|t| t.name.0.to_string())
            .collect();
        names.sort();
        names.dedup();
        names
    };
    // Resume at the cursor: topics before it were sent already.
    let (cursor_topic, cursor_partition) = match &request.cursor {
        Some(cursor) => (
            Some(cursor.topic_name.0.to_string()),
            cursor.partition_index,
        ),
        None => (None, 0),
    };
    if let Some(start) = &cursor_topic {
        names.retain(|n| n >= start);
    }
    let mut budget = request.response_partition_limit.max(1) as usize;
    let mut topics = Vec::new();
    let mut next_cursor = None;
    for name in names {
        let Some(topic) = image.topic(&name) else {
            topics.push(
                DescribeTopicPartitionsResponseTopic::default()
                    .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                    .with_name(Some(topic_name(name))),
            );
            continue;
        };
        let first = if cursor_topic.as_deref() == Some(name.as_str()) {
            cursor_partition
        } else {
            0
        };
        let mut partitions = Vec::new();
        for (index, p) in topic.partitions.range(first..) {
            if budget == 0 {
                next_cursor = Some(
                    Cursor::default()
                        .with_topic_name(topic_name(name.clone()))
                        .with_partition_index(*index),
                );
                break;
            }
            budget -= 1;
            partitions.push(
                DescribeTopicPartitionsResponsePartition::default()
                    .with_partition_index(*index)
                    .with_error_code(if p.leader < 0 {
                        errors::LEADER_NOT_AVAILABLE
                    } else {
                        errors::NONE
                    })
                    .with_leader_id(BrokerId(p.leader))
                    .with_leader_epoch(p.leader_epoch)
                    .with_replica_nodes(ids(&p.replicas))
                    .with_isr_nodes(ids(&p.isr))
                    .with_eligible_leader_replicas(Some(ids(&p.eligible_leader_replicas)))
                    .with_last_known_elr(Some(ids(&p.last_known_elr)))
                    .with_offline_replicas(offline(&live, p)),
            );
        }
        topics.push(
            DescribeTopicPartitionsResponseTopic::default()
                .with_name(Some(topic_name(name.clone())))
                .with_topic_id(to_uuid(topic.topic_id))
                .with_is_internal(is_internal(&name))
                .with_partitions(partitions)
                .with_topic_authorized_operations(TOPIC_OPERATIONS),
        );
        if next_cursor.is_some() {
            break;
        }
    }
    DescribeTopicPartitionsResponse::default()
        .with_topics(topics)
        .with_next_cursor(next_cursor)
}
