//! DescribeQuorum: the state of the metadata quorum (`__cluster_metadata-0`) as its
//! leader sees it, as Kafka's `KafkaRaftClient` answers it: the leader and its epoch
//! (the Raft term), the high watermark (the end of the committed entries, in log
//! offsets), each voter's and observer's (learner's) log end offset as the leader knows
//! it. Any node answers, asking the leader when it is not it. v2 lists the voters'
//! controller endpoints (KIP-853), as `controller.quorum.voters` names them.

use kafka_protocol::messages::describe_quorum_response::{PartitionData, ReplicaState, TopicData};
use kafka_protocol::messages::*;

use super::common::{to_uuid, topic_name};
use crate::errors;
use crate::request::RequestContext;

const METADATA_TOPIC: &str = "__cluster_metadata";

pub async fn describe_quorum(
    context: &RequestContext,
    request: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let broker = &context.broker;
    let version = context.version;
    let status = crate::controller::quorum_status(broker).await;
    let image = broker.image();
    let now = sluice_storage::now_ms();
    let replica = |r: &crate::quorum::ReplicaStatus| {
        let caught_up = status
            .as_ref()
            .is_some_and(|s| r.log_end_offset >= s.high_watermark);
        let mut state = ReplicaState::default()
            .with_replica_id(BrokerId(r.id))
            .with_log_end_offset(r.log_end_offset)
            .with_last_fetch_timestamp(now)
            .with_last_caught_up_timestamp(if caught_up { now } else { -1 });
        if version >= 2 {
            let directory = image
                .broker(r.id)
                .and_then(|b| b.log_dirs.first().copied())
                .unwrap_or([0; 16]);
            state = state.with_replica_directory_id(to_uuid(directory));
        }
        state
    };
    let topics = request
        .topics
        .iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let data = PartitionData::default().with_partition_index(p.partition_index);
                    if topic.topic_name.0.as_str() != METADATA_TOPIC || p.partition_index != 0 {
                        return data
                            .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                            .with_leader_id(BrokerId(-1))
                            .with_leader_epoch(-1)
                            .with_high_watermark(-1);
                    }
                    let Some(status) = &status else {
                        return data
                            .with_error_code(errors::NOT_LEADER_OR_FOLLOWER)
                            .with_leader_id(BrokerId(-1))
                            .with_leader_epoch(-1)
                            .with_high_watermark(-1);
                    };
                    data.with_leader_id(BrokerId(status.leader))
                        .with_leader_epoch(status.epoch)
                        .with_high_watermark(status.high_watermark)
                        .with_current_voters(status.voters.iter().map(replica).collect())
                        .with_observers(status.observers.iter().map(replica).collect())
                })
                .collect();
            TopicData::default()
                .with_topic_name(topic_name(topic.topic_name.0.to_string()))
                .with_partitions(partitions)
        })
        .collect();
    let mut response = DescribeQuorumResponse::default().with_topics(topics);
    if version >= 2 {
        // KIP-853: the voters' controller endpoints (`controller.quorum.voters`).
        let listener = broker
            .config
            .settings()
            .listeners
            .controller_listener_names
            .first()
            .map_or("CONTROLLER", String::as_str)
            .to_string();
        if let Ok(quorum) = broker.quorum() {
            response.nodes = quorum
                .voters
                .iter()
                .filter_map(|(id, address)| {
                    let (host, port) = address.rsplit_once(':')?;
                    Some(
                        describe_quorum_response::Node::default()
                            .with_node_id(BrokerId(*id as i32))
                            .with_listeners(vec![
                                describe_quorum_response::Listener::default()
                                    .with_name(super::common::str_bytes(listener.clone()))
                                    .with_host(super::common::str_bytes(host))
                                    .with_port(port.parse().ok()?),
                            ]),
                    )
                })
                .collect();
        }
    }
    response
}
