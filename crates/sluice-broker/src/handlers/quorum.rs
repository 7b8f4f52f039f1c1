//! DescribeQuorum: the state of the metadata quorum (`__cluster_metadata-0`), as Kafka's
//! `KafkaRaftClient` answers it. On a single node the quorum is this node alone: it is
//! the leader and the only voter, its log end offset is the high watermark, and the
//! brokers that are not voters are the observers (none yet). The voter endpoints of v2
//! (KIP-853) are left empty until the controller listener is served (issue 4).

use kafka_protocol::messages::describe_quorum_response::{PartitionData, ReplicaState, TopicData};
use kafka_protocol::messages::*;

use super::{str_bytes, to_uuid, topic_name};
use crate::apis::RequestContext;
use crate::errors;

const METADATA_TOPIC: &str = "__cluster_metadata";

pub async fn describe_quorum(
    context: &RequestContext,
    request: DescribeQuorumRequest,
) -> DescribeQuorumResponse {
    let broker = &context.broker;
    let version = context.version;
    let Some((end_offset, epoch)) = broker.metadata_log_status() else {
        return DescribeQuorumResponse::default()
            .with_error_code(errors::UNKNOWN_SERVER_ERROR)
            .with_error_message(Some(str_bytes("the metadata log is closed")));
    };
    let image = broker.image();
    let now = sluice_storage::now_ms();
    let directory = image
        .broker(broker.node_id)
        .and_then(|b| b.log_dirs.first().copied())
        .unwrap_or([0; 16]);
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
                    let mut voter = ReplicaState::default()
                        .with_replica_id(BrokerId(broker.node_id))
                        .with_log_end_offset(end_offset)
                        .with_last_fetch_timestamp(now)
                        .with_last_caught_up_timestamp(now);
                    if version >= 2 {
                        voter = voter.with_replica_directory_id(to_uuid(directory));
                    }
                    data.with_leader_id(BrokerId(broker.node_id))
                        .with_leader_epoch(epoch)
                        .with_high_watermark(end_offset)
                        .with_current_voters(vec![voter])
                        .with_observers(Vec::new())
                })
                .collect();
            TopicData::default()
                .with_topic_name(topic_name(topic.topic_name.0.to_string()))
                .with_partitions(partitions)
        })
        .collect();
    DescribeQuorumResponse::default().with_topics(topics)
}
