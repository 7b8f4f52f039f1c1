//! Cluster administration through the controller, as Kafka 4.1 serves it:
//! AlterPartitionReassignments and ListPartitionReassignments (what
//! `kafka-reassign-partitions.sh` uses), ElectLeaders (`kafka-leader-election.sh`) and
//! UnregisterBroker (`kafka-cluster.sh unregister`, to remove a broker for good).
//!
//! They are served by the active controller ([`crate::forwarding`] relays them there
//! from any other node): the changes are planned on its image under the controller
//! lock, each partition change carries the partition epoch it was planned on, and the
//! write is never forwarded to a successor (a controller deposed meanwhile answers
//! NOT_CONTROLLER, which the client retries).

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::*;
use sluice_metadata::{MetadataRecord, PartitionChangeRecord};

use super::common::{str_bytes, topic_name};
use crate::controller;
use crate::errors;
use crate::request::RequestContext;

pub async fn alter_partition_reassignments(
    context: &RequestContext,
    request: AlterPartitionReassignmentsRequest,
) -> AlterPartitionReassignmentsResponse {
    let broker = &context.broker;
    // v0 had no flag: the replication factor may change.
    let allow_change = context.version == 0 || request.allow_replication_factor_change;
    let _controller = broker.controller_lock().await;
    let mut responses = Vec::new();
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let mut partitions = Vec::new();
        for p in &topic.partitions {
            let image = broker.image();
            let target: Option<Vec<i32>> =
                p.replicas.as_ref().map(|r| r.iter().map(|b| b.0).collect());
            let outcome = match image.topic(&name) {
                None => Err((
                    errors::UNKNOWN_TOPIC_OR_PARTITION,
                    "Unknown topic or partition".to_string(),
                )),
                Some(t) => controller::reassign(
                    &image,
                    t.topic_id,
                    p.partition_index,
                    target.as_deref(),
                    allow_change,
                ),
            };
            let outcome = match outcome {
                Ok(Some(change)) => broker
                    .write_as_controller(&[MetadataRecord::PartitionChange(change)], &image)
                    .await
                    .map_err(|e| (e.code(), e.to_string())),
                Ok(None) => Ok(()),
                Err(refusal) => Err(refusal),
            };
            if outcome.is_ok() {
                tracing::info!(topic = %name, partition = p.partition_index, replicas = ?target, "reassignment requested");
            }
            let mut result =
                ReassignablePartitionResponse::default().with_partition_index(p.partition_index);
            if let Err((code, message)) = outcome {
                result = result
                    .with_error_code(code)
                    .with_error_message(Some(str_bytes(message)));
            }
            partitions.push(result);
        }
        responses.push(
            ReassignableTopicResponse::default()
                .with_name(topic.name.clone())
                .with_partitions(partitions),
        );
    }
    AlterPartitionReassignmentsResponse::default()
        .with_allow_replication_factor_change(allow_change)
        .with_responses(responses)
}

pub async fn list_partition_reassignments(
    context: &RequestContext,
    request: ListPartitionReassignmentsRequest,
) -> ListPartitionReassignmentsResponse {
    let image = context.broker.image();
    let wanted = |topic: &str, partition: i32| match &request.topics {
        None => true,
        Some(topics) => topics
            .iter()
            .any(|t| t.name.0.as_str() == topic && t.partition_indexes.contains(&partition)),
    };
    let ids = |ids: &[i32]| ids.iter().map(|id| BrokerId(*id)).collect::<Vec<_>>();
    let topics = image
        .topics()
        .filter_map(|topic| {
            let partitions: Vec<_> = topic
                .partitions
                .iter()
                .filter(|(index, p)| {
                    wanted(&topic.name, **index)
                        && (!p.adding_replicas.is_empty() || !p.removing_replicas.is_empty())
                })
                .map(|(index, p)| {
                    OngoingPartitionReassignment::default()
                        .with_partition_index(*index)
                        .with_replicas(ids(&p.replicas))
                        .with_adding_replicas(ids(&p.adding_replicas))
                        .with_removing_replicas(ids(&p.removing_replicas))
                })
                .collect();
            (!partitions.is_empty()).then(|| {
                OngoingTopicReassignment::default()
                    .with_name(topic_name(topic.name.clone()))
                    .with_partitions(partitions)
            })
        })
        .collect();
    ListPartitionReassignmentsResponse::default().with_topics(topics)
}

/// ElectLeaders: PREFERRED (0) moves leadership to the first replica when it is alive
/// and in sync; UNCLEAN (1) elects any live replica of a partition without a leader.
pub async fn elect_leaders(
    context: &RequestContext,
    request: ElectLeadersRequest,
) -> ElectLeadersResponse {
    let broker = &context.broker;
    let unclean = context.version >= 1 && request.election_type == 1;
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    let wanted: Vec<(String, i32)> = match &request.topic_partitions {
        Some(topics) => topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
            .collect(),
        // All partitions: those whose election could change something.
        None => image
            .topics()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(|(_, p)| {
                        if unclean {
                            p.leader < 0
                        } else {
                            p.replicas.first() != Some(&p.leader)
                        }
                    })
                    .map(|(i, _)| (t.name.clone(), *i))
                    .collect::<Vec<_>>()
            })
            .collect(),
    };
    let mut records = Vec::new();
    let mut results: Vec<(String, i32, i16, Option<String>)> = Vec::new();
    for (topic, index) in wanted {
        let Some((topic_id, partition)) = image
            .topic(&topic)
            .and_then(|t| t.partitions.get(&index).map(|p| (t.topic_id, p)))
        else {
            results.push((
                topic,
                index,
                errors::UNKNOWN_TOPIC_OR_PARTITION,
                Some("The partition does not exist.".into()),
            ));
            continue;
        };
        let mut change = PartitionChangeRecord::new(topic_id, index);
        let outcome = if unclean {
            if partition.leader >= 0 && controller::can_lead(&image, partition.leader) {
                Err(errors::ELECTION_NOT_NEEDED)
            } else if let Some(any) = partition
                .replicas
                .iter()
                .copied()
                .find(|r| controller::can_lead(&image, *r))
            {
                change.leader = any;
                if !partition.isr.contains(&any) {
                    change.isr = Some(vec![any]);
                    change.leader_recovery_state = 1;
                }
                Ok(())
            } else {
                Err(errors::ELIGIBLE_LEADERS_NOT_AVAILABLE)
            }
        } else {
            let preferred = partition.replicas.first().copied().unwrap_or(-1);
            if preferred == partition.leader {
                Err(errors::ELECTION_NOT_NEEDED)
            } else if partition.isr.contains(&preferred) && controller::can_lead(&image, preferred)
            {
                change.leader = preferred;
                Ok(())
            } else {
                Err(errors::PREFERRED_LEADER_NOT_AVAILABLE)
            }
        };
        match outcome {
            Ok(()) => {
                records.push(MetadataRecord::PartitionChange(change));
                results.push((topic, index, errors::NONE, None));
            }
            Err(code) => results.push((topic, index, code, None)),
        }
    }
    let mut top_error = errors::NONE;
    if !records.is_empty()
        && let Err(error) = broker.write_as_controller(&records, &image).await
    {
        tracing::warn!(%error, "leader election not written");
        for result in results.iter_mut().filter(|r| r.2 == errors::NONE) {
            result.2 = error.code();
            result.3 = Some(error.to_string());
        }
        top_error = errors::NONE;
    }
    let mut by_topic: std::collections::BTreeMap<String, Vec<PartitionResult>> = Default::default();
    for (topic, index, code, message) in results {
        by_topic.entry(topic).or_default().push(
            PartitionResult::default()
                .with_partition_id(index)
                .with_error_code(code)
                .with_error_message(message.map(str_bytes)),
        );
    }
    ElectLeadersResponse::default()
        .with_error_code(top_error)
        .with_replica_election_results(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    ReplicaElectionResult::default()
                        .with_topic(topic_name(topic))
                        .with_partition_result(partitions)
                })
                .collect(),
        )
}

/// UnregisterBroker: removes a broker that is gone (fenced) from the cluster metadata.
pub async fn unregister_broker(
    context: &RequestContext,
    request: UnregisterBrokerRequest,
) -> UnregisterBrokerResponse {
    let broker = &context.broker;
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    let id = request.broker_id.0;
    let refuse = |code: i16, message: String| {
        UnregisterBrokerResponse::default()
            .with_error_code(code)
            .with_error_message(Some(str_bytes(message)))
    };
    let Some(registration) = image.broker(id) else {
        return refuse(
            errors::BROKER_ID_NOT_REGISTERED,
            format!("Broker ID {id} is not currently registered"),
        );
    };
    if !registration.fenced {
        return refuse(
            errors::INVALID_REQUEST,
            format!(
                "Broker {id} is still active: stop it (it is fenced once its session times out) before unregistering it"
            ),
        );
    }
    match broker
        .write_as_controller(
            &[MetadataRecord::UnregisterBroker {
                broker_id: id,
                broker_epoch: registration.broker_epoch,
            }],
            &image,
        )
        .await
    {
        Ok(()) => {
            tracing::info!(broker_id = id, "unregistered a broker");
            UnregisterBrokerResponse::default()
        }
        Err(error) => refuse(error.code(), error.to_string()),
    }
}
