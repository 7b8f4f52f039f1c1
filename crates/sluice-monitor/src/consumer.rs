//! Burrow's `kafka` consumer module: committed offsets and group membership, read by
//! consuming `__consumer_offsets` from its beginning (Burrow's `start-latest = false`), as
//! storage requests.
//!
//! What each record means, by key type (Kafka's `__consumer_offsets` schema, decoded by
//! `sluice_group::records`):
//! - 0/1, a committed offset: a [`StorageRequest::SetConsumerOffset`] with the commit's
//!   timestamp and, as Burrow's order, the record's own offset. Its tombstone (an offset
//!   deleted or expired) is dropped, as Burrow drops it: the group's history stays until
//!   the group goes or `expire-group` passes.
//! - 2, a classic group's metadata: owners from each member's ConsumerProtocol assignment
//!   (`client_host`, `client_id`); its tombstone deletes the group.
//! - 3 to 8, a KIP-848 consumer group's records (Burrow predates them): the group
//!   metadata tombstone deletes the group; member metadata and current assignments give
//!   owners, topic ids resolved through the cluster's metadata.
//!
//! Read with `read_committed`, so a transactional offset commit counts once its
//! transaction commits, as the group coordinator applies it; an aborted one never does.
//! A cluster that cannot be reached is retried every `RETRY_INTERVAL`; nothing here
//! panics on a record it cannot decode (it is logged and skipped, as Burrow does).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sluice_client::consumer::{
    AutoOffsetReset, Consumer, ConsumerConfig as ClientConsumerConfig, IsolationLevel,
};
use sluice_client::{Admin, ApiError, Client, ClientConfig, OffsetSpec, TopicPartition};
use sluice_group::records::{self, OffsetsKey};
use tokio::sync::watch;

use crate::monitor::{StorageSink, StorageStopped};

use crate::config::ConsumerConfig;
use crate::types::StorageRequest;

/// How long to wait before reconnecting to a cluster that could not be reached.
const RETRY_INTERVAL: Duration = Duration::from_secs(5);
/// How long one poll of `__consumer_offsets` waits for records.
const POLL_TIMEOUT: Duration = Duration::from_millis(500);
/// Fewest seconds between two metadata fetches made to name unknown topic ids.
const TOPIC_ID_REFRESH: Duration = Duration::from_secs(10);

/// A KIP-848 group's members as its records describe them.
#[derive(Default)]
struct ConsumerGroupMembers {
    /// member id → (client id, client host).
    members: BTreeMap<String, (String, String)>,
    /// member id → assigned partitions by topic id.
    assignments: BTreeMap<String, Vec<(uuid::Uuid, Vec<i32>)>>,
}

/// Turns `__consumer_offsets` records into storage requests; pure, so a test feeds it
/// records written by the broker's own encoders.
pub struct OffsetsDecoder {
    cluster: String,
    allowlist: Option<regex::Regex>,
    denylist: Option<regex::Regex>,
    consumer_groups: BTreeMap<String, ConsumerGroupMembers>,
    /// Topic id → name, from the cluster's metadata.
    topic_names: BTreeMap<uuid::Uuid, String>,
    /// Topic ids seen in assignments and not yet named.
    unnamed_topic_ids: BTreeSet<uuid::Uuid>,
}

impl OffsetsDecoder {
    pub fn new(cluster: &str, config: &ConsumerConfig) -> OffsetsDecoder {
        // The config module validated both patterns; an empty one means none, as in Burrow.
        let pattern = |source: &Option<String>| {
            source
                .as_deref()
                .filter(|pattern| !pattern.is_empty())
                .and_then(|pattern| regex::Regex::new(pattern).ok())
        };
        OffsetsDecoder {
            cluster: cluster.to_string(),
            allowlist: pattern(&config.group_allowlist),
            denylist: pattern(&config.group_denylist),
            consumer_groups: BTreeMap::new(),
            topic_names: BTreeMap::new(),
            unnamed_topic_ids: BTreeSet::new(),
        }
    }

    fn accepts(&self, group: &str) -> bool {
        self.allowlist
            .as_ref()
            .is_none_or(|allow| allow.is_match(group))
            && !self
                .denylist
                .as_ref()
                .is_some_and(|deny| deny.is_match(group))
    }

    /// Whether an assignment names a topic id the decoder cannot name yet.
    pub fn needs_topic_names(&self) -> bool {
        !self.unnamed_topic_ids.is_empty()
    }

    /// New topic names from metadata; returns the owner requests of the groups whose
    /// assignments they complete.
    pub fn learn_topic_names(
        &mut self,
        names: impl IntoIterator<Item = (uuid::Uuid, String)>,
    ) -> Vec<StorageRequest> {
        self.topic_names.extend(names);
        let before = std::mem::take(&mut self.unnamed_topic_ids);
        let resolved: BTreeSet<uuid::Uuid> = before
            .iter()
            .filter(|id| self.topic_names.contains_key(id))
            .copied()
            .collect();
        self.unnamed_topic_ids = before.difference(&resolved).copied().collect();
        if resolved.is_empty() {
            return Vec::new();
        }
        let groups: Vec<String> = self
            .consumer_groups
            .iter()
            .filter(|(_, members)| {
                members
                    .assignments
                    .values()
                    .flatten()
                    .any(|(id, _)| resolved.contains(id))
            })
            .map(|(group, _)| group.clone())
            .collect();
        groups
            .iter()
            .flat_map(|group| self.consumer_group_owners(group))
            .collect()
    }

    /// The requests one `__consumer_offsets` record makes; `offset` is its offset there.
    pub fn decode(
        &mut self,
        key: &[u8],
        value: Option<&[u8]>,
        offset: i64,
        now_ms: i64,
    ) -> Vec<StorageRequest> {
        let key = match records::decode_key(key) {
            Ok(key) => key,
            Err(error) => {
                tracing::warn!(offset, %error, "monitor: a __consumer_offsets key that does not decode, skipped");
                return Vec::new();
            }
        };
        let Some(group) = key.group_id() else {
            return Vec::new();
        };
        if !self.accepts(group) {
            return Vec::new();
        }
        let group = group.to_string();
        let cluster = self.cluster.clone();
        match (key, value) {
            (OffsetsKey::Offset { .. }, None) => Vec::new(),
            (
                OffsetsKey::Offset {
                    topic, partition, ..
                },
                Some(value),
            ) => match records::decode_offset_value(value) {
                Ok(committed) => vec![StorageRequest::SetConsumerOffset {
                    cluster,
                    group,
                    topic,
                    partition,
                    offset: committed.offset,
                    order: offset,
                    timestamp_ms: committed.commit_timestamp,
                    observed_ms: now_ms,
                }],
                Err(error) => {
                    tracing::warn!(offset, %group, %error, "monitor: an offset commit value that does not decode, skipped");
                    Vec::new()
                }
            },
            (OffsetsKey::GroupMetadata { .. }, None)
            | (OffsetsKey::ConsumerGroupMetadata { .. }, None) => {
                self.consumer_groups.remove(&group);
                vec![StorageRequest::DeleteGroup { cluster, group }]
            }
            (OffsetsKey::GroupMetadata { .. }, Some(value)) => {
                self.classic_group_owners(&group, value, offset)
            }
            (OffsetsKey::ConsumerGroupMemberMetadata { member, .. }, value) => {
                let members = self.consumer_groups.entry(group.clone()).or_default();
                match value.map(records::decode_consumer_group_member_metadata_value) {
                    None => {
                        members.members.remove(&member);
                    }
                    Some(Ok(metadata)) => {
                        members
                            .members
                            .insert(member, (metadata.client_id, metadata.client_host));
                    }
                    Some(Err(error)) => {
                        tracing::warn!(offset, %group, %error, "monitor: a member metadata value that does not decode, skipped");
                        return Vec::new();
                    }
                }
                self.consumer_group_owners(&group)
            }
            (OffsetsKey::ConsumerGroupCurrentMemberAssignment { member, .. }, value) => {
                let decoded =
                    value.map(records::decode_consumer_group_current_member_assignment_value);
                let members = self.consumer_groups.entry(group.clone()).or_default();
                match decoded {
                    None => {
                        members.assignments.remove(&member);
                    }
                    Some(Ok(assignment)) => {
                        members
                            .assignments
                            .insert(member, assignment.assigned_partitions);
                    }
                    Some(Err(error)) => {
                        tracing::warn!(offset, %group, %error, "monitor: a member assignment value that does not decode, skipped");
                        return Vec::new();
                    }
                }
                self.consumer_group_owners(&group)
            }
            // Epochs, target assignments and subscription metadata say nothing about
            // offsets or owners.
            _ => Vec::new(),
        }
    }

    fn classic_group_owners(&self, group: &str, value: &[u8], offset: i64) -> Vec<StorageRequest> {
        let metadata = match records::decode_group_value(value) {
            Ok(metadata) => metadata,
            Err(error) => {
                tracing::warn!(offset, %group, %error, "monitor: a group metadata value that does not decode, skipped");
                return Vec::new();
            }
        };
        let mut requests = vec![StorageRequest::ClearConsumerOwners {
            cluster: self.cluster.clone(),
            group: group.to_string(),
        }];
        // Only the consumer protocol's assignments name partitions (Connect's do not).
        if metadata.protocol_type != "consumer" {
            return requests;
        }
        for member in &metadata.members {
            if member.assignment.is_empty() {
                continue;
            }
            let assignment = match sluice_protocol::consumer_protocol::decode_assignment(
                &member.assignment,
            ) {
                Ok(assignment) => assignment,
                Err(error) => {
                    tracing::warn!(offset, %group, member = %member.member_id, %error, "monitor: a member assignment that does not decode, skipped");
                    continue;
                }
            };
            for (topic, partitions) in assignment.partitions {
                for partition in partitions {
                    requests.push(StorageRequest::SetConsumerOwner {
                        cluster: self.cluster.clone(),
                        group: group.to_string(),
                        topic: topic.clone(),
                        partition,
                        owner: member.client_host.clone(),
                        client_id: member.client_id.clone(),
                    });
                }
            }
        }
        requests
    }

    fn consumer_group_owners(&mut self, group: &str) -> Vec<StorageRequest> {
        let Some(members) = self.consumer_groups.get(group) else {
            return Vec::new();
        };
        let mut requests = vec![StorageRequest::ClearConsumerOwners {
            cluster: self.cluster.clone(),
            group: group.to_string(),
        }];
        for (member, assigned) in &members.assignments {
            let (client_id, host) = members.members.get(member).cloned().unwrap_or_default();
            for (topic_id, partitions) in assigned {
                let Some(topic) = self.topic_names.get(topic_id) else {
                    self.unnamed_topic_ids.insert(*topic_id);
                    continue;
                };
                for partition in partitions {
                    requests.push(StorageRequest::SetConsumerOwner {
                        cluster: self.cluster.clone(),
                        group: group.to_string(),
                        topic: topic.clone(),
                        partition: *partition,
                        owner: host.clone(),
                        client_id: client_id.clone(),
                    });
                }
            }
        }
        requests
    }
}

/// Why reading the offsets topic stopped; [`run`] logs it and starts again.
#[derive(Debug, thiserror::Error)]
enum ReadError {
    /// A call to the cluster failed.
    #[error(transparent)]
    Client(#[from] sluice_client::Error),
    #[error(transparent)]
    Storage(#[from] StorageStopped),
    #[error("{topic} does not exist yet (it is created when the first group commits)")]
    NoOffsetsTopic { topic: String },
    /// The last stable offset of a partition, the catch-up target, could not be read.
    #[error("cannot read the last stable offset of {partition}: {error}")]
    LastStableOffset {
        partition: TopicPartition,
        error: ApiError,
    },
}

/// Consumes `config.offsets_topic` on `config.servers` until `stop`, sending what it
/// reads to storage. Never returns early: an unreachable cluster or a missing topic is
/// logged and retried. `caught_up` turns true once everything committed when reading
/// began has been read (what a one-shot view waits for).
pub async fn run(
    cluster: String,
    config: ConsumerConfig,
    client_id: String,
    storage: StorageSink,
    caught_up: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let mut decoder = OffsetsDecoder::new(&cluster, &config);
    // Where each partition was read up to, kept across reconnections.
    let mut positions: BTreeMap<i32, i64> = BTreeMap::new();
    loop {
        if *stop.borrow() {
            return;
        }
        let outcome = tokio::select! {
            outcome = consume(&config, &client_id, &mut decoder, &mut positions, &storage, &caught_up) => outcome,
            _ = stop.changed() => return,
        };
        if let Err(error) = outcome {
            tracing::warn!(%cluster, topic = %config.offsets_topic, error = %error, "monitor: reading committed offsets failed; retrying");
        }
        tokio::select! {
            _ = tokio::time::sleep(RETRY_INTERVAL) => {}
            _ = stop.changed() => return,
        }
    }
}

async fn consume(
    config: &ConsumerConfig,
    client_id: &str,
    decoder: &mut OffsetsDecoder,
    positions: &mut BTreeMap<i32, i64>,
    storage: &StorageSink,
    caught_up: &watch::Sender<bool>,
) -> Result<(), ReadError> {
    let consumer_config = ClientConsumerConfig::new(config.servers.clone())
        .client_id(client_id)
        .auto_offset_reset(if config.start_latest && !config.backfill_earliest {
            AutoOffsetReset::Latest
        } else {
            AutoOffsetReset::Earliest
        })
        .isolation_level(IsolationLevel::ReadCommitted);
    let mut client_config = ClientConfig::new(config.servers.clone());
    client_config.client_id = client_id.to_string();
    let admin = Admin::connect(client_config).await?;
    let client = admin.client();
    let topic = config.offsets_topic.clone();
    let partition_count = offsets_topic_partitions(client, &topic).await?;
    let mut consumer = Consumer::new(consumer_config).await?;
    let partitions: Vec<TopicPartition> = (0..partition_count)
        .map(|partition| TopicPartition::new(topic.clone(), partition))
        .collect();
    consumer.assign(partitions.iter().cloned())?;
    for partition in &partitions {
        if let Some(position) = positions.get(&partition.partition) {
            consumer.seek(partition, *position)?;
        }
    }
    // What was committed (the last stable offsets) when reading began.
    let mut targets: BTreeMap<TopicPartition, i64> = BTreeMap::new();
    if !*caught_up.borrow() {
        let specs = partitions
            .iter()
            .map(|partition| (partition.clone(), OffsetSpec::Latest))
            .collect();
        for (partition, result) in admin.list_offsets_isolated(&specs, true).await? {
            let offset = match result {
                Ok(info) => info.offset,
                Err(error) => return Err(ReadError::LastStableOffset { partition, error }),
            };
            targets.insert(partition, offset);
        }
    }
    let mut last_topic_refresh: Option<tokio::time::Instant> = None;
    loop {
        let polled = consumer.poll(POLL_TIMEOUT).await?;
        let now_ms = now_ms();
        if let (Some(first), Some(last)) = (polled.first(), polled.last()) {
            tracing::debug!(
                records = polled.len(),
                first_partition = first.partition,
                first_offset = first.offset,
                last_partition = last.partition,
                last_offset = last.offset,
                "monitor: read __consumer_offsets"
            );
        }
        for record in polled {
            positions.insert(record.partition, record.offset + 1);
            let Some(key) = record.key.as_deref() else {
                continue;
            };
            for request in decoder.decode(key, record.value.as_deref(), record.offset, now_ms) {
                storage.send(request).await?;
            }
            if let Some(group) = &config.reported_consumer_group {
                storage
                    .send(StorageRequest::SetConsumerOffset {
                        cluster: decoder.cluster.clone(),
                        group: group.clone(),
                        topic: topic.clone(),
                        partition: record.partition,
                        offset: record.offset + 1,
                        order: record.offset,
                        timestamp_ms: now_ms,
                        observed_ms: now_ms,
                    })
                    .await?;
            }
        }
        if !targets.is_empty() {
            let mut reached = Vec::new();
            for (partition, target) in &targets {
                if consumer.position(partition).await? >= *target {
                    reached.push(partition.clone());
                }
            }
            for partition in reached {
                targets.remove(&partition);
            }
            if targets.is_empty() {
                caught_up.send_replace(true);
            }
        }
        if decoder.needs_topic_names()
            && last_topic_refresh.is_none_or(|at| at.elapsed() >= TOPIC_ID_REFRESH)
        {
            last_topic_refresh = Some(tokio::time::Instant::now());
            for request in decoder.learn_topic_names(topic_ids(client).await?) {
                storage.send(request).await?;
            }
        }
    }
}

async fn offsets_topic_partitions(client: &Client, topic: &str) -> Result<i32, ReadError> {
    let metadata = client.metadata(Some(&[topic.to_string()])).await?;
    let found = metadata.topics.iter().find(|entry| {
        entry
            .name
            .as_ref()
            .is_some_and(|name| name.as_str() == topic)
    });
    match found {
        Some(entry) if entry.error_code == 0 && !entry.partitions.is_empty() => {
            Ok(i32::try_from(entry.partitions.len()).unwrap_or(i32::MAX))
        }
        _ => Err(ReadError::NoOffsetsTopic {
            topic: topic.to_string(),
        }),
    }
}

async fn topic_ids(client: &Client) -> Result<Vec<(uuid::Uuid, String)>, ReadError> {
    let metadata = client.metadata(None).await?;
    Ok(metadata
        .topics
        .iter()
        .filter_map(|entry| {
            let name = entry.name.as_ref()?.to_string();
            Some((uuid::Uuid::from_bytes(*entry.topic_id.as_bytes()), name))
        })
        .collect())
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use sluice_group::records::{
        ConsumerGroupCurrentMemberAssignmentValue, ConsumerGroupMemberMetadataValue,
        GroupMetadataValue, MemberMetadata, OffsetValue,
    };

    fn decoder(denylist: Option<&str>) -> OffsetsDecoder {
        let config = ConsumerConfig {
            class_name: "kafka".into(),
            cluster: "local".into(),
            servers: vec!["127.0.0.1:9092".into()],
            client_profile: None,
            offsets_topic: "__consumer_offsets".into(),
            start_latest: false,
            backfill_earliest: false,
            group_allowlist: Some(String::new()),
            group_denylist: denylist.map(str::to_string),
            reported_consumer_group: None,
            zookeeper_path: None,
            zookeeper_timeout: None,
        };
        OffsetsDecoder::new("local", &config)
    }

    fn offset_key(group: &str, topic: &str, partition: i32) -> Vec<u8> {
        records::encode_key(&OffsetsKey::Offset {
            group: group.into(),
            topic: topic.into(),
            partition,
        })
    }

    fn commit(offset: i64, timestamp: i64) -> Vec<u8> {
        records::encode_offset_value(&OffsetValue {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: timestamp,
            expire_timestamp: None,
        })
    }

    #[test]
    fn a_commit_becomes_a_consumer_offset_ordered_by_its_position() {
        let mut decoder = decoder(None);
        let requests = decoder.decode(
            &offset_key("g", "orders", 2),
            Some(&commit(150, 1_000)),
            42,
            5_000,
        );
        assert_eq!(
            requests,
            [StorageRequest::SetConsumerOffset {
                cluster: "local".into(),
                group: "g".into(),
                topic: "orders".into(),
                partition: 2,
                offset: 150,
                order: 42,
                timestamp_ms: 1_000,
                observed_ms: 5_000,
            }]
        );
        // An offset's tombstone is dropped, as Burrow drops it.
        assert!(
            decoder
                .decode(&offset_key("g", "orders", 2), None, 43, 5_000)
                .is_empty()
        );
    }

    #[test]
    fn a_classic_group_gives_owners_and_its_tombstone_deletes_it() {
        let mut decoder = decoder(None);
        let assignment = sluice_protocol::consumer_protocol::encode_assignment(
            &sluice_protocol::consumer_protocol::Assignment {
                version: 0,
                partitions: vec![("orders".into(), vec![0, 1])],
                user_data: None,
            },
        );
        let value = records::encode_group_value(&GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 1,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 0,
            members: vec![MemberMetadata {
                member_id: "m1".into(),
                group_instance_id: None,
                client_id: "app-1".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 30_000,
                session_timeout_ms: 10_000,
                subscription: Bytes::new(),
                assignment: Bytes::from(assignment),
            }],
        });
        let key = records::encode_key(&OffsetsKey::GroupMetadata { group: "g".into() });
        let requests = decoder.decode(&key, Some(&value), 7, 0);
        let owners: Vec<(String, i32, String, String)> = requests
            .iter()
            .filter_map(|request| match request {
                StorageRequest::SetConsumerOwner {
                    topic,
                    partition,
                    owner,
                    client_id,
                    ..
                } => Some((topic.clone(), *partition, owner.clone(), client_id.clone())),
                _ => None,
            })
            .collect();
        assert!(matches!(
            requests[0],
            StorageRequest::ClearConsumerOwners { .. }
        ));
        assert_eq!(
            owners,
            [
                ("orders".into(), 0, "/127.0.0.1".into(), "app-1".into()),
                ("orders".into(), 1, "/127.0.0.1".into(), "app-1".into())
            ]
        );
        assert_eq!(
            decoder.decode(&key, None, 8, 0),
            [StorageRequest::DeleteGroup {
                cluster: "local".into(),
                group: "g".into()
            }]
        );
    }

    #[test]
    fn a_kip_848_group_names_its_owners_once_topic_ids_are_known() {
        let mut decoder = decoder(None);
        let topic_id = uuid::Uuid::from_u128(7);
        let member_key = records::encode_key(&OffsetsKey::ConsumerGroupMemberMetadata {
            group: "g".into(),
            member: "m1".into(),
        });
        let member = records::encode_consumer_group_member_metadata_value(
            &ConsumerGroupMemberMetadataValue {
                instance_id: None,
                rack_id: None,
                client_id: "app-2".into(),
                client_host: "/10.0.0.2".into(),
                subscribed_topic_names: vec!["orders".into()],
                subscribed_topic_regex: None,
                rebalance_timeout_ms: 30_000,
                server_assignor: Some("uniform".into()),
                classic_member_metadata: None,
            },
        );
        decoder.decode(&member_key, Some(&member), 1, 0);
        let assignment_key =
            records::encode_key(&OffsetsKey::ConsumerGroupCurrentMemberAssignment {
                group: "g".into(),
                member: "m1".into(),
            });
        let assignment = records::encode_consumer_group_current_member_assignment_value(
            &ConsumerGroupCurrentMemberAssignmentValue {
                member_epoch: 1,
                previous_member_epoch: 0,
                state: 0,
                assigned_partitions: vec![(topic_id, vec![3])],
                partitions_pending_revocation: Vec::new(),
            },
        );
        let before = decoder.decode(&assignment_key, Some(&assignment), 2, 0);
        assert!(
            !before
                .iter()
                .any(|request| matches!(request, StorageRequest::SetConsumerOwner { .. }))
        );
        assert!(decoder.needs_topic_names());
        let after = decoder.learn_topic_names([(topic_id, "orders".to_string())]);
        assert!(after.contains(&StorageRequest::SetConsumerOwner {
            cluster: "local".into(),
            group: "g".into(),
            topic: "orders".into(),
            partition: 3,
            owner: "/10.0.0.2".into(),
            client_id: "app-2".into(),
        }));
        assert!(!decoder.needs_topic_names());
        let tombstone =
            records::encode_key(&OffsetsKey::ConsumerGroupMetadata { group: "g".into() });
        assert_eq!(
            decoder.decode(&tombstone, None, 3, 0),
            [StorageRequest::DeleteGroup {
                cluster: "local".into(),
                group: "g".into()
            }]
        );
    }

    #[test]
    fn denied_groups_and_undecodable_records_make_no_requests() {
        let mut decoder = decoder(Some("^console-consumer-"));
        assert!(
            decoder
                .decode(
                    &offset_key("console-consumer-1", "t", 0),
                    Some(&commit(1, 1)),
                    1,
                    1
                )
                .is_empty()
        );
        assert!(
            decoder
                .decode(&[0xff], Some(&commit(1, 1)), 2, 1)
                .is_empty()
        );
        assert!(
            decoder
                .decode(&offset_key("g", "t", 0), Some(&[0, 3, 1]), 3, 1)
                .is_empty()
        );
        let key = records::encode_key(&OffsetsKey::GroupMetadata { group: "g".into() });
        assert!(decoder.decode(&key, Some(&[0, 9, 0, 0]), 4, 1).is_empty());
    }
}
