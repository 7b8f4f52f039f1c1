//! CreateTopics, DeleteTopics and CreatePartitions, and the topics created without a
//! request for them (Metadata's `auto.create.topics.enable`, and the internal topics).
//! Each operation validates against the metadata image as Kafka's controller does
//! (names, partition counts, replication factors against the registered brokers,
//! configs), then writes the records (TopicRecord, PartitionRecords, ConfigRecords;
//! RemoveTopicRecord; PartitionRecords) through the metadata quorum and answers when
//! they are durable and applied here.
//!
//! Topic creation and deletion are served by any node ([`Broker::write_metadata`]);
//! CreatePartitions by the active controller ([`Broker::write_as_controller`]; other
//! nodes forward it there, [`crate::forwarding`]). On one node the controller lock
//! serializes a check and the write it allows. Between nodes, the quorum's state machine
//! refuses an entry that no longer replays: a topic created twice gets
//! TOPIC_ALREADY_EXISTS.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::*;
use sluice_metadata::{ConfigRecord, MetadataImage, MetadataRecord, PartitionRecord, TopicRecord};

use super::common::{from_uuid, str_bytes, to_uuid, topic_name, valid_topic_name};
use crate::broker::{Broker, BrokerError, TOPIC_RESOURCE, random_uuid};
use crate::errors;
use crate::request::RequestContext;
use crate::topic_config;

/// Kafka's controller refuses more partitions than this in one request.
const MAX_PARTITIONS_PER_REQUEST: i64 = 10_000;

/// A refused operation: Kafka's error code and message.
type Refusal = (i16, String);

fn refusal(code: i16, message: impl Into<String>) -> Refusal {
    (code, message.into())
}

fn storage_refusal(error: BrokerError) -> Refusal {
    tracing::error!(%error, "metadata write failed");
    match error {
        BrokerError::Metadata(sluice_metadata::MetadataLogError::Refused(
            sluice_metadata::ApplyError::TopicExists { name },
        ))
        | BrokerError::Quorum(crate::quorum::QuorumError::TopicExists(name)) => refusal(
            errors::TOPIC_ALREADY_EXISTS,
            format!("Topic '{name}' already exists."),
        ),
        BrokerError::Quorum(crate::quorum::QuorumError::NotController) => refusal(
            errors::NOT_CONTROLLER,
            "This is not the correct controller for this cluster.",
        ),
        other => refusal(errors::UNKNOWN_SERVER_ERROR, other.to_string()),
    }
}

/// The brokers replicas can be placed on: the registered, unfenced ones.
fn live_brokers(image: &MetadataImage) -> Vec<i32> {
    image
        .brokers()
        .filter(|b| !b.fenced)
        .map(|b| b.broker_id)
        .collect()
}

/// Replica lists for `count` new partitions numbered from `first`, spread round-robin
/// over the live brokers as Kafka's striped placement does.
fn place_replicas(
    brokers: &[i32],
    first: i32,
    count: i32,
    replication_factor: i16,
) -> Vec<Vec<i32>> {
    (0..count)
        .map(|i| {
            (0..replication_factor as usize)
                .map(|r| brokers[(first as usize + i as usize + r) % brokers.len()])
                .collect()
        })
        .collect()
}

fn check_assignment(brokers: &[i32], replicas: &[i32]) -> Result<(), Refusal> {
    if replicas.is_empty() {
        return Err(refusal(
            errors::INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        ));
    }
    let unique: HashSet<_> = replicas.iter().collect();
    if unique.len() != replicas.len() {
        return Err(refusal(
            errors::INVALID_REPLICA_ASSIGNMENT,
            format!(
                "The manual partition assignment includes the broker(s) more than once: {replicas:?}"
            ),
        ));
    }
    if let Some(missing) = replicas.iter().find(|r| !brokers.contains(r)) {
        return Err(refusal(
            errors::INVALID_REPLICA_ASSIGNMENT,
            format!(
                "The manual partition assignment includes broker {missing}, but no such broker is registered."
            ),
        ));
    }
    Ok(())
}

/// The topic names a request lists more than once (each gets INVALID_REQUEST).
fn duplicate_names<'a>(names: impl Iterator<Item = &'a TopicName>) -> HashSet<String> {
    let mut seen = HashSet::new();
    names
        .map(|n| n.0.to_string())
        .filter(|n| !seen.insert(n.clone()))
        .collect()
}

/// The records creating one topic, or why it cannot be created.
struct NewTopic {
    name: String,
    topic_id: sluice_metadata::Uuid,
    assignments: Vec<Vec<i32>>,
    configs: BTreeMap<String, String>,
}

impl NewTopic {
    fn records(&self) -> Vec<MetadataRecord> {
        let mut records = vec![MetadataRecord::Topic(TopicRecord {
            name: self.name.clone(),
            topic_id: self.topic_id,
        })];
        for (key, value) in &self.configs {
            records.push(MetadataRecord::Config(ConfigRecord {
                resource_type: TOPIC_RESOURCE,
                resource_name: self.name.clone(),
                name: key.clone(),
                value: Some(value.clone()),
            }));
        }
        for (index, replicas) in self.assignments.iter().enumerate() {
            records.push(MetadataRecord::Partition(PartitionRecord::new_partition(
                self.topic_id,
                index as i32,
                replicas.clone(),
                vec![[0; 16]; replicas.len()],
            )));
        }
        records
    }
}

fn plan_topic(
    broker: &Broker,
    image: &MetadataImage,
    topic: &create_topics_request::CreatableTopic,
) -> Result<NewTopic, Refusal> {
    let name = topic.name.0.to_string();
    valid_topic_name(&name).map_err(|m| refusal(errors::INVALID_TOPIC_EXCEPTION, m))?;
    if image.topic(&name).is_some() {
        return Err(refusal(
            errors::TOPIC_ALREADY_EXISTS,
            format!("Topic '{name}' already exists."),
        ));
    }
    let brokers = live_brokers(image);
    let assignments = if !topic.assignments.is_empty() {
        if topic.num_partitions != -1 || topic.replication_factor != -1 {
            return Err(refusal(
                errors::INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.",
            ));
        }
        let mut by_index: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
        for assignment in &topic.assignments {
            let replicas: Vec<i32> = assignment.broker_ids.iter().map(|b| b.0).collect();
            check_assignment(&brokers, &replicas)?;
            by_index.insert(assignment.partition_index, replicas);
        }
        if by_index.keys().copied().ne(0..by_index.len() as i32) {
            return Err(refusal(
                errors::INVALID_REPLICA_ASSIGNMENT,
                "Partitions should be a consecutive 0-based integer sequence",
            ));
        }
        by_index.into_values().collect()
    } else {
        let partitions = match topic.num_partitions {
            -1 => broker.config.num_partitions(),
            n if n <= 0 => {
                return Err(refusal(
                    errors::INVALID_PARTITIONS,
                    "Number of partitions was set to an invalid non-positive value.",
                ));
            }
            n => n,
        };
        if i64::from(partitions) > MAX_PARTITIONS_PER_REQUEST {
            return Err(refusal(
                errors::INVALID_PARTITIONS,
                "Excessively large number of partitions per request.",
            ));
        }
        let factor = match topic.replication_factor {
            -1 => broker.config.default_replication_factor(),
            n if n <= 0 => {
                return Err(refusal(
                    errors::INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                ));
            }
            n => n,
        };
        if factor as usize > brokers.len() {
            return Err(refusal(
                errors::INVALID_REPLICATION_FACTOR,
                format!(
                    "Unable to replicate the partition {factor} time(s): The target replication factor of {factor} cannot be reached because only {} broker(s) are registered.",
                    brokers.len()
                ),
            ));
        }
        place_replicas(&brokers, 0, partitions, factor)
    };
    let mut configs = BTreeMap::new();
    for config in &topic.configs {
        let key = config.name.to_string();
        let Some(value) = config.value.as_ref().map(|v| v.to_string()) else {
            return Err(refusal(
                errors::INVALID_CONFIG,
                format!("Null value not supported for topic configs: {key}"),
            ));
        };
        // The coordinators' topics take `segment.bytes` from `offsets.topic.segment.bytes`
        // / `transaction.state.log.segment.bytes`, broker keys Kafka checks only for
        // being at least 1, not against the topic key's 1 MiB minimum (KIP-1030).
        let internal_segment_bytes = key == "segment.bytes"
            && matches!(
                name.as_str(),
                crate::group::OFFSETS_TOPIC | crate::txn::TRANSACTION_STATE_TOPIC
            )
            && value.trim().parse::<i32>().is_ok_and(|v| v >= 61);
        if !internal_segment_bytes {
            topic_config::validate_overrides([(key.as_str(), Some(value.as_str()))])
                .map_err(|m| refusal(errors::INVALID_CONFIG, m))?;
        }
        configs.insert(key, value.trim().to_string());
    }
    Ok(NewTopic {
        name,
        topic_id: random_uuid(),
        assignments,
        configs,
    })
}

/// Creates topics that Metadata asked for (auto.create.topics.enable) with the broker's
/// defaults.
pub(crate) async fn auto_create(broker: &Broker, names: &[String]) -> Result<(), BrokerError> {
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    for name in names {
        let request = create_topics_request::CreatableTopic::default()
            .with_name(topic_name(name.clone()))
            .with_num_partitions(-1)
            .with_replication_factor(-1);
        match plan_topic(broker, &image, &request) {
            Ok(topic) => {
                broker.write_metadata(&topic.records()).await?;
                tracing::info!(topic = %name, "auto-created topic");
            }
            Err((_, message)) => tracing::debug!(topic = %name, %message, "not auto-created"),
        }
    }
    Ok(())
}

/// Creates an internal topic (`__consumer_offsets`) unless it exists, as Kafka does
/// on the first FindCoordinator: `partitions` × `factor` replicas on the live brokers,
/// with `configs`. Err: why not, as a message (too few brokers, usually).
pub(crate) async fn create_internal(
    broker: &Broker,
    name: &str,
    partitions: i32,
    factor: i16,
    configs: &[(&str, String)],
) -> Result<(), String> {
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    if image.topic(name).is_some() {
        return Ok(());
    }
    let request = create_topics_request::CreatableTopic::default()
        .with_name(topic_name(name))
        .with_num_partitions(partitions)
        .with_replication_factor(factor)
        .with_configs(
            configs
                .iter()
                .map(|(key, value)| {
                    create_topics_request::CreatableTopicConfig::default()
                        .with_name(str_bytes(*key))
                        .with_value(Some(str_bytes(value.clone())))
                })
                .collect(),
        );
    let topic = plan_topic(broker, &image, &request).map_err(|(_, message)| message)?;
    broker
        .write_metadata(&topic.records())
        .await
        .map_err(|error| error.to_string())?;
    tracing::info!(topic = %name, partitions, factor, "created internal topic");
    Ok(())
}

pub async fn create_topics(
    context: &RequestContext,
    request: CreateTopicsRequest,
) -> CreateTopicsResponse {
    let broker = &context.broker;
    let version = context.version;
    let _controller = broker.controller_lock().await;
    let duplicates = duplicate_names(request.topics.iter().map(|t| &t.name));
    let mut results = Vec::new();
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let mut result = CreatableTopicResult::default().with_name(topic.name.clone());
        let outcome = if duplicates.contains(&name) {
            Err(refusal(
                errors::INVALID_REQUEST,
                format!("Duplicate topic name {name} in the request."),
            ))
        } else {
            let image = broker.image();
            match plan_topic(broker, &image, topic) {
                Ok(planned) if !request.validate_only => {
                    match broker.write_metadata(&planned.records()).await {
                        Ok(()) => {
                            tracing::info!(topic = %planned.name, partitions = planned.assignments.len(), "created topic");
                            Ok(planned)
                        }
                        Err(error) => Err(storage_refusal(error)),
                    }
                }
                other => other,
            }
        };
        match outcome {
            Ok(planned) => {
                if version >= 5 {
                    let image = broker.image();
                    let layers = topic_config::BrokerLayers::new(&broker.config, &image);
                    let configs = topic_config::effective(&layers, Some(&planned.configs))
                        .into_iter()
                        .map(|(key, effective)| {
                            CreatableTopicConfigs::default()
                                .with_name(str_bytes(key.name))
                                .with_value(Some(str_bytes(effective.value)))
                                .with_config_source(effective.source)
                        })
                        .collect();
                    result = result
                        .with_num_partitions(planned.assignments.len() as i32)
                        .with_replication_factor(
                            planned.assignments.first().map_or(0, |r| r.len() as i16),
                        )
                        .with_configs(Some(configs));
                }
                if version >= 7 && !request.validate_only {
                    result = result.with_topic_id(to_uuid(planned.topic_id));
                }
            }
            Err((code, message)) => {
                result = result
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(message)));
                if version >= 5 {
                    result = result.with_num_partitions(-1).with_replication_factor(-1);
                }
            }
        }
        results.push(result);
    }
    CreateTopicsResponse::default().with_topics(results)
}

pub async fn delete_topics(
    context: &RequestContext,
    request: DeleteTopicsRequest,
) -> DeleteTopicsResponse {
    let broker = &context.broker;
    let version = context.version;
    let _controller = broker.controller_lock().await;
    // v0-5 name topics in TopicNames; v6 in Topics, by name or by id.
    let targets: Vec<(Option<String>, uuid::Uuid)> = if version >= 6 {
        request
            .topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .iter()
            .map(|n| (Some(n.0.to_string()), uuid::Uuid::nil()))
            .collect()
    };
    let deletion_enabled = broker.config.settings().delete_topic_enable;
    let mut responses = Vec::new();
    for (name, id) in targets {
        let image = broker.image();
        let found = match &name {
            Some(name) => image.topic(name),
            None => image.topic_by_id(&from_uuid(&id)),
        };
        let mut result = DeletableTopicResult::default()
            .with_name(name.clone().map(topic_name))
            .with_topic_id(id);
        let outcome = match found {
            _ if !deletion_enabled => Err(refusal(
                errors::TOPIC_DELETION_DISABLED,
                "Topic deletion is disabled.",
            )),
            None if name.is_some() => Err(refusal(
                errors::UNKNOWN_TOPIC_OR_PARTITION,
                "This server does not host this topic-partition.",
            )),
            None => Err(refusal(
                errors::UNKNOWN_TOPIC_ID,
                "This server does not host this topic ID.",
            )),
            Some(topic) => {
                let topic_id = topic.topic_id;
                let topic_name_found = topic.name.clone();
                broker
                    .write_metadata(&[MetadataRecord::RemoveTopic { topic_id }])
                    .await
                    .map_err(storage_refusal)
                    .map(|()| (topic_name_found, topic_id))
            }
        };
        match outcome {
            Ok((deleted_name, topic_id)) => {
                tracing::info!(topic = %deleted_name, "deleted topic");
                if version >= 6 {
                    result = result
                        .with_name(Some(topic_name(deleted_name)))
                        .with_topic_id(to_uuid(topic_id));
                }
            }
            Err((code, message)) => {
                result = result.with_error_code(code);
                if version >= 5 {
                    result = result.with_error_message(Some(str_bytes(message)));
                }
            }
        }
        responses.push(result);
    }
    DeleteTopicsResponse::default().with_responses(responses)
}

pub async fn create_partitions(
    context: &RequestContext,
    request: CreatePartitionsRequest,
) -> CreatePartitionsResponse {
    let broker = &context.broker;
    let _controller = broker.controller_lock().await;
    let duplicates = duplicate_names(request.topics.iter().map(|t| &t.name));
    let mut results = Vec::new();
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let image = broker.image();
        let brokers = live_brokers(&image);
        let planned = (|| -> Result<Vec<MetadataRecord>, Refusal> {
            if duplicates.contains(&name) {
                return Err(refusal(
                    errors::INVALID_REQUEST,
                    format!("Duplicate topic name {name} in the request."),
                ));
            }
            let existing = image.topic(&name).ok_or_else(|| {
                refusal(
                    errors::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("Topic '{name}' does not exist."),
                )
            })?;
            let current = existing.partitions.len() as i32;
            if topic.count < current {
                return Err(refusal(
                    errors::INVALID_PARTITIONS,
                    format!(
                        "The topic {name} currently has {current} partition(s); {} would not be an increase.",
                        topic.count
                    ),
                ));
            }
            if topic.count == current {
                return Err(refusal(
                    errors::INVALID_PARTITIONS,
                    format!("Topic already has {current} partition(s)."),
                ));
            }
            let added = topic.count - current;
            if i64::from(added) > MAX_PARTITIONS_PER_REQUEST {
                return Err(refusal(
                    errors::INVALID_PARTITIONS,
                    "Excessively large number of partitions per request.",
                ));
            }
            let factor = existing
                .partitions
                .values()
                .next()
                .map_or(1, |p| p.replicas.len() as i16);
            let assignments = match &topic.assignments {
                Some(assignments) => {
                    if assignments.len() as i32 != added {
                        return Err(refusal(
                            errors::INVALID_REPLICA_ASSIGNMENT,
                            format!(
                                "Attempted to add {added} additional partition(s), but only {} assignment(s) were specified.",
                                assignments.len()
                            ),
                        ));
                    }
                    let mut lists = Vec::new();
                    for assignment in assignments {
                        let replicas: Vec<i32> =
                            assignment.broker_ids.iter().map(|b| b.0).collect();
                        check_assignment(&brokers, &replicas)?;
                        lists.push(replicas);
                    }
                    lists
                }
                None if factor as usize > brokers.len() => {
                    return Err(refusal(
                        errors::INVALID_REPLICATION_FACTOR,
                        format!(
                            "Unable to replicate the partition {factor} time(s): only {} broker(s) are registered.",
                            brokers.len()
                        ),
                    ));
                }
                None => place_replicas(&brokers, current, added, factor),
            };
            if request.validate_only {
                return Ok(Vec::new());
            }
            let records: Vec<MetadataRecord> = assignments
                .into_iter()
                .enumerate()
                .map(|(i, replicas)| {
                    let dirs = vec![[0; 16]; replicas.len()];
                    MetadataRecord::Partition(PartitionRecord::new_partition(
                        existing.topic_id,
                        current + i as i32,
                        replicas,
                        dirs,
                    ))
                })
                .collect();
            Ok(records)
        })();
        let outcome = match planned {
            Ok(records) if !records.is_empty() => {
                let written = broker
                    .write_as_controller(&records, &image)
                    .await
                    .map_err(storage_refusal);
                if written.is_ok() {
                    tracing::info!(topic = %name, partitions = topic.count, "added partitions");
                }
                written
            }
            Ok(_) => Ok(()),
            Err(refusal) => Err(refusal),
        };
        let mut result = CreatePartitionsTopicResult::default().with_name(topic.name.clone());
        if let Err((code, message)) = outcome {
            result = result
                .with_error_code(code)
                .with_error_message(Some(str_bytes(message)));
        }
        results.push(result);
    }
    CreatePartitionsResponse::default().with_results(results)
}
