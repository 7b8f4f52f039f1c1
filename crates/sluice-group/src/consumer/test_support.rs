//! Helpers shared by the consumer group's tests: topics, settings, and
//! ConsumerGroupHeartbeat requests.

use super::*;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};

pub(crate) const T1: Uuid = Uuid::from_bytes([1; 16]);
pub(crate) const T2: Uuid = Uuid::from_bytes([2; 16]);

pub(crate) fn topics(foo: i32) -> Topics {
    Topics::new([("foo".to_string(), T1, foo), ("bar".to_string(), T2, 2)])
}

pub(crate) fn config() -> ConsumerGroupConfig {
    ConsumerGroupConfig {
        session_timeout_ms: 45_000,
        heartbeat_interval_ms: 5_000,
        ..Default::default()
    }
}

pub(crate) fn owned(parts: &[(Uuid, &[i32])]) -> Option<Vec<RequestTopicPartitions>> {
    Some(
        parts
            .iter()
            .map(|(id, ps)| {
                let mut tp = RequestTopicPartitions::default();
                tp.topic_id = *id;
                tp.partitions = ps.to_vec();
                tp
            })
            .collect(),
    )
}

pub(crate) fn join(
    member_id: &str,
    instance: Option<&str>,
    names: &[&str],
) -> ConsumerGroupHeartbeatRequest {
    let mut r = ConsumerGroupHeartbeatRequest::default();
    r.group_id = GroupId(StrBytes::from_static_str("g"));
    r.member_id = StrBytes::from_string(member_id.to_string());
    r.member_epoch = 0;
    r.instance_id = instance.map(|i| StrBytes::from_string(i.to_string()));
    r.rebalance_timeout_ms = 30_000;
    r.subscribed_topic_names = Some(
        names
            .iter()
            .map(|n| TopicName(StrBytes::from_string(n.to_string())))
            .collect(),
    );
    r.topic_partitions = Some(vec![]);
    r
}

pub(crate) fn beat(
    member_id: &str,
    epoch: i32,
    parts: Option<&[(Uuid, &[i32])]>,
) -> ConsumerGroupHeartbeatRequest {
    let mut r = ConsumerGroupHeartbeatRequest::default();
    r.group_id = GroupId(StrBytes::from_static_str("g"));
    r.member_id = StrBytes::from_string(member_id.to_string());
    r.member_epoch = epoch;
    r.topic_partitions = parts.and_then(owned);
    r
}

pub(crate) fn hb(
    g: &mut ConsumerGroup,
    r: &ConsumerGroupHeartbeatRequest,
    t: &Topics,
    now: i64,
) -> ConsumerGroupHeartbeatResponse {
    g.heartbeat(1, r, "client", "/127.0.0.1", t, &config(), now)
}

pub(crate) fn assigned(response: &ConsumerGroupHeartbeatResponse) -> Option<Vec<(Uuid, Vec<i32>)>> {
    response.assignment.as_ref().map(|a| {
        let mut v: Vec<(Uuid, Vec<i32>)> = a
            .topic_partitions
            .iter()
            .map(|tp| (tp.topic_id, tp.partitions.clone()))
            .collect();
        v.sort();
        v
    })
}
