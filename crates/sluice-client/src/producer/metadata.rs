//! The producer's view of topic metadata: each partition's leader, refreshed when a
//! produce answer has a retriable error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
//! NOT_ENOUGH_REPLICAS, ..., a connection failure; the retry waits for the refresh), when a
//! partition has no known leader, and every `metadata.max.age.ms`.
//!
//! Metadata requests ask with `allow_auto_topic_creation`, as the Java producer does, so
//! a broker with `auto.create.topics.enable` creates a topic on first send.

use std::collections::HashMap;
use std::time::Instant;

use kafka_protocol::messages::MetadataRequest;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;

use super::{ProducerError, Shared};
use crate::client::{Target, topic_name};
use crate::error::ErrorCode;

pub(crate) struct Metadata {
    pub(crate) topics: HashMap<String, TopicInfo>,
    pub(crate) refresh_requested: bool,
    pub(crate) last_refresh: Instant,
    /// When the last successful refresh began (a retry after a retriable error waits for
    /// one begun after the error).
    pub(crate) last_refresh_started: Instant,
}

pub(crate) struct TopicInfo {
    /// Leader per partition index; -1 while unknown.
    pub(crate) leaders: Vec<i32>,
    /// The topic's error in the last answer (UNKNOWN_TOPIC_OR_PARTITION, ...).
    pub(crate) error: ErrorCode,
}

impl Metadata {
    pub(crate) fn new() -> Metadata {
        Metadata {
            topics: HashMap::new(),
            refresh_requested: false,
            last_refresh: Instant::now(),
            last_refresh_started: Instant::now(),
        }
    }

    /// The topic's partition count, if it is known with at least one partition.
    pub(crate) fn partition_count(&self, topic: &str) -> Option<i32> {
        self.topics
            .get(topic)
            .map(|info| info.leaders.len() as i32)
            .filter(|count| *count > 0)
    }

    pub(crate) fn leader(&self, topic: &str, partition: i32) -> Option<i32> {
        self.topics
            .get(topic)?
            .leaders
            .get(partition as usize)
            .copied()
            .filter(|leader| *leader >= 0)
    }
}

/// Asks for `topics` and stores what comes back.
pub(crate) async fn refresh(shared: &Shared, topics: Vec<String>) -> Result<(), ProducerError> {
    let started = Instant::now();
    if topics.is_empty() {
        let mut state = shared.lock();
        state.metadata.last_refresh = Instant::now();
        state.metadata.last_refresh_started = state.metadata.last_refresh_started.max(started);
        return Ok(());
    }
    let request_topics: Vec<MetadataRequestTopic> = topics
        .iter()
        .map(|name| MetadataRequestTopic::default().with_name(Some(topic_name(name))))
        .collect();
    let response = shared
        .client
        .send(Target::Any, |_| {
            MetadataRequest::default()
                .with_topics(Some(request_topics))
                .with_allow_auto_topic_creation(true)
        })
        .await?;
    let known_brokers = shared.client.brokers();
    let mut unknown_broker = false;
    {
        let mut state = shared.lock();
        for topic in &response.topics {
            let Some(name) = &topic.name else { continue };
            let mut leaders = vec![-1; topic.partitions.len()];
            for partition in &topic.partitions {
                let index = partition.partition_index as usize;
                if index < leaders.len() && partition.error_code == 0 {
                    leaders[index] = partition.leader_id.0;
                    unknown_broker |= partition.leader_id.0 >= 0
                        && !known_brokers.contains_key(&partition.leader_id.0);
                }
            }
            state.metadata.topics.insert(
                name.to_string(),
                TopicInfo {
                    leaders,
                    error: ErrorCode(topic.error_code),
                },
            );
        }
        state.metadata.last_refresh = Instant::now();
        state.metadata.last_refresh_started = state.metadata.last_refresh_started.max(started);
        state.metadata.refresh_requested = false;
    }
    if unknown_broker {
        // The client routes by its own broker list; a new broker must be in it.
        shared.client.metadata(Some(&[])).await?;
    }
    Ok(())
}
