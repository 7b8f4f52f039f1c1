//! Admin calls for consumer groups and partition offsets, as Kafka's Java `Admin` offers
//! them: `listGroups`, `describeConsumerGroups`, `listConsumerGroupOffsets`,
//! `deleteConsumerGroups`, `alterConsumerGroupOffsets`, `deleteConsumerGroupOffsets` and
//! `listOffsets`.
//!
//! Group requests go to the group's coordinator, found with FindCoordinator (key type 0);
//! a coordinator that moved or is still loading (NOT_COORDINATOR,
//! COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) is looked up again after
//! `retry.backoff.ms`, until `request.timeout.ms` has passed, as Kafka's admin client does.
//! ListOffsets goes to each partition's leader; ListGroups to every broker.
//!
//! These APIs negotiate their versions from [`GROUP_API_VERSIONS`] on a connection of
//! their own, opened for the call and closed after it: the shared
//! [`IMPLEMENTED_VERSIONS`](crate::IMPLEMENTED_VERSIONS) table does not list them yet.
//! A call costs one TCP connect and one ApiVersions round trip more than a pooled
//! connection would, which is nothing next to a CLI's process start.
//!
//! Not here: share and streams groups.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::{
    ApiKey, BrokerId, ConsumerGroupDescribeRequest, DeleteGroupsRequest, DescribeGroupsRequest,
    FindCoordinatorRequest, GroupId, ListGroupsRequest, ListOffsetsRequest, OffsetCommitRequest,
    OffsetFetchRequest,
};
use kafka_protocol::protocol::{Request, StrBytes};

use crate::admin::Admin;
use crate::client::topic_name;
use crate::connection::{Connection, api_key, negotiate};
use crate::error::{ApiError, Error, ErrorCode};

/// The versions of each API this module fills and reads: (API, lowest, highest).
pub const GROUP_API_VERSIONS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::FindCoordinator, 0, 6),
    // v4 adds the states filter, v5 the types filter.
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    // v2 is the first where a null topic list asks for every committed offset.
    (ApiKey::OffsetFetch, 2, 9),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    // v1 is the first with one offset per partition (v0 returned a list).
    (ApiKey::ListOffsets, 1, 10),
];

/// FindCoordinator's key type for a group.
const COORDINATOR_TYPE_GROUP: i8 = 0;
/// ListOffsets' special timestamps.
const EARLIEST_TIMESTAMP: i64 = -2;
const LATEST_TIMESTAMP: i64 = -1;
/// Kafka's `retry.backoff.ms` default: the pause before asking for a coordinator again.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// The protocol type of classic groups that consumers (not Connect workers) form.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// GROUP_ID_NOT_FOUND: also what ConsumerGroupDescribe answers for a classic group.
pub const GROUP_ID_NOT_FOUND: ErrorCode = ErrorCode::GROUP_ID_NOT_FOUND;
/// NON_EMPTY_GROUP: DeleteGroups on a group with members.
pub const NON_EMPTY_GROUP: ErrorCode = ErrorCode::NON_EMPTY_GROUP;

/// A partition of a topic, ordered by topic then partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> TopicPartition {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl std::fmt::Display for TopicPartition {
    /// Kafka's form, `topic-partition`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// The broker that coordinates a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupCoordinator {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
}

impl GroupCoordinator {
    /// `host:port`, with an IPv6 host in brackets.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Which groups `list_groups` returns. Empty lists do not filter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroupsFilter {
    /// Group states, any case (`Stable`, `empty`, ...).
    pub states: Vec<String>,
    /// Group types, any case (`classic`, `consumer`, ...).
    pub types: Vec<String>,
    /// Protocol types (`consumer`, `""` for groups that only commit offsets); filtered
    /// here, as Kafka's admin client does.
    pub protocol_types: Vec<String>,
}

impl ListGroupsFilter {
    /// The groups Kafka's `listGroups(ListGroupsOptions.forConsumerGroups())` returns:
    /// classic and consumer groups whose protocol type is `consumer` or empty.
    pub fn consumer_groups() -> ListGroupsFilter {
        ListGroupsFilter {
            states: Vec::new(),
            types: vec!["Classic".to_string(), "Consumer".to_string()],
            protocol_types: vec![String::new(), CONSUMER_PROTOCOL_TYPE.to_string()],
        }
    }
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    pub protocol_type: String,
    /// The group's state (ListGroups v4+), as the broker spells it.
    pub state: Option<String>,
    /// The group's type (ListGroups v5+), as the broker spells it.
    pub group_type: Option<String>,
}

/// Which protocol a consumer group runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    /// JoinGroup/SyncGroup, assignments computed by the group's leader.
    Classic,
    /// KIP-848's ConsumerGroupHeartbeat, assignments computed by the coordinator.
    Consumer,
}

/// One member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub host: String,
    /// The partitions the member owns.
    pub assignment: BTreeSet<TopicPartition>,
    /// The partitions the coordinator is moving the member to (consumer groups only).
    pub target_assignment: Option<BTreeSet<TopicPartition>>,
    /// The member's epoch (consumer groups only).
    pub member_epoch: Option<i32>,
    /// Whether the member uses the consumer protocol (true) or joined a consumer group
    /// with the classic protocol (false); `None` for classic groups and older brokers.
    pub upgraded: Option<bool>,
}

/// A consumer group, from ConsumerGroupDescribe or DescribeGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    pub group_id: String,
    /// A classic group with an empty protocol type: it only commits offsets.
    pub is_simple_consumer_group: bool,
    pub members: Vec<MemberDescription>,
    /// The assignor (consumer groups) or the classic group's protocol (`range`, ...).
    pub partition_assignor: String,
    pub group_type: GroupType,
    /// The state as the broker spells it (`Stable`, `Empty`, `PreparingRebalance`,
    /// `Dead`, ...).
    pub state: String,
    pub coordinator: GroupCoordinator,
    /// Consumer groups only.
    pub group_epoch: Option<i32>,
    /// Consumer groups only.
    pub target_assignment_epoch: Option<i32>,
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: String,
}

/// Which offset `list_offsets` asks for (Kafka's `OffsetSpec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The high watermark (the log end offset consumers see).
    Latest,
    /// The first offset whose timestamp is at or after this time (ms since the epoch).
    Timestamp(i64),
}

impl OffsetSpec {
    fn timestamp(self) -> i64 {
        match self {
            OffsetSpec::Earliest => EARLIEST_TIMESTAMP,
            OffsetSpec::Latest => LATEST_TIMESTAMP,
            OffsetSpec::Timestamp(timestamp) => timestamp,
        }
    }
}

/// A partition's offset as ListOffsets returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOffsetsResultInfo {
    /// -1 when no record is at or after a requested timestamp.
    pub offset: i64,
    pub timestamp: i64,
    pub leader_epoch: Option<i32>,
}

/// One result per partition.
pub type PartitionResults<T> = BTreeMap<TopicPartition, Result<T, ApiError>>;

impl Admin {
    /// The coordinator of `key` (a group id for key type 0, a transactional id for 1).
    pub async fn find_coordinator(
        &self,
        key: &str,
        key_type: i8,
    ) -> Result<GroupCoordinator, Error> {
        let connection = self.connect_any().await?;
        let response = send(&connection, |version| {
            let request = FindCoordinatorRequest::default().with_key_type(key_type);
            // v4 batches keys; earlier versions carry one.
            if version >= 4 {
                request.with_coordinator_keys(vec![StrBytes::from_string(key.to_string())])
            } else {
                request.with_key(StrBytes::from_string(key.to_string()))
            }
        })
        .await?;
        if let Some(coordinator) = response.coordinators.into_iter().next() {
            ErrorCode(coordinator.error_code).check(coordinator.error_message.as_deref())?;
            return Ok(GroupCoordinator {
                node_id: coordinator.node_id.0,
                host: coordinator.host.to_string(),
                port: coordinator.port,
            });
        }
        ErrorCode(response.error_code).check(response.error_message.as_deref())?;
        Ok(GroupCoordinator {
            node_id: response.node_id.0,
            host: response.host.to_string(),
            port: response.port,
        })
    }

    /// Every group of the cluster that passes `filter`, asking every broker, sorted by
    /// group id.
    pub async fn list_groups(&self, filter: &ListGroupsFilter) -> Result<Vec<GroupListing>, Error> {
        // Refreshes the broker list.
        self.client().metadata(Some(&[])).await?;
        let addresses: Vec<String> = self.client().brokers().into_values().collect();
        let lowercase = |values: &[String]| -> BTreeSet<String> {
            values.iter().map(|value| value.to_lowercase()).collect()
        };
        let states = lowercase(&filter.states);
        let types = lowercase(&filter.types);
        let mut groups = Vec::new();
        for address in addresses {
            let connection = self.connect_to(&address).await?;
            let response = send(&connection, |_| {
                ListGroupsRequest::default()
                    .with_states_filter(
                        filter
                            .states
                            .iter()
                            .cloned()
                            .map(StrBytes::from_string)
                            .collect(),
                    )
                    .with_types_filter(
                        filter
                            .types
                            .iter()
                            .cloned()
                            .map(StrBytes::from_string)
                            .collect(),
                    )
            })
            .await?;
            ErrorCode(response.error_code).check(None)?;
            for group in response.groups {
                let listing = GroupListing {
                    group_id: group.group_id.to_string(),
                    protocol_type: group.protocol_type.to_string(),
                    state: Some(group.group_state.to_string()).filter(|state| !state.is_empty()),
                    group_type: Some(group.group_type.to_string()).filter(|kind| !kind.is_empty()),
                };
                // A broker older than the filter's version ignores it: filter here too.
                let passes = |wanted: &BTreeSet<String>, value: &Option<String>| {
                    wanted.is_empty()
                        || value
                            .as_ref()
                            .is_none_or(|value| wanted.contains(&value.to_lowercase()))
                };
                if passes(&states, &listing.state)
                    && passes(&types, &listing.group_type)
                    && (filter.protocol_types.is_empty()
                        || filter.protocol_types.contains(&listing.protocol_type))
                {
                    groups.push(listing);
                }
            }
        }
        groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        groups.dedup_by(|a, b| a.group_id == b.group_id);
        Ok(groups)
    }

    /// A consumer group as Kafka's `describeConsumerGroups` gives it: ConsumerGroupDescribe
    /// first, and DescribeGroups when the coordinator does not serve it or answers that
    /// the group is not a consumer group (GROUP_ID_NOT_FOUND: a classic group, or none).
    /// A group that does not exist is described as `Dead` with no members (classic
    /// coordinators) or fails with GROUP_ID_NOT_FOUND (Kafka 4's coordinator).
    pub async fn describe_consumer_group(
        &self,
        group_id: &str,
    ) -> Result<ConsumerGroupDescription, Error> {
        self.at_coordinator(
            group_id,
            move |coordinator, connection: Arc<Connection>| async move {
                if connection
                    .broker_versions(ApiKey::ConsumerGroupDescribe)
                    .is_some()
                {
                    match consumer_group_describe(&connection, &coordinator, group_id).await {
                        Err(Error::Api(error)) if error.code == GROUP_ID_NOT_FOUND => {}
                        Err(Error::Api(error)) if error.code == ErrorCode::UNSUPPORTED_VERSION => {}
                        result => return result,
                    }
                }
                describe_groups(&connection, &coordinator, group_id).await
            },
        )
        .await
    }

    /// The group as ConsumerGroupDescribe (KIP-848) reports it.
    pub async fn consumer_group_describe(
        &self,
        group_id: &str,
    ) -> Result<ConsumerGroupDescription, Error> {
        self.at_coordinator(
            group_id,
            move |coordinator, connection: Arc<Connection>| async move {
                consumer_group_describe(&connection, &coordinator, group_id).await
            },
        )
        .await
    }

    /// The group as DescribeGroups (classic protocol) reports it.
    pub async fn describe_groups(&self, group_id: &str) -> Result<ConsumerGroupDescription, Error> {
        self.at_coordinator(
            group_id,
            move |coordinator, connection: Arc<Connection>| async move {
                describe_groups(&connection, &coordinator, group_id).await
            },
        )
        .await
    }

    /// Every offset the group has committed (OffsetFetch for all partitions).
    pub async fn list_group_offsets(
        &self,
        group_id: &str,
    ) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>, Error> {
        self.at_coordinator(group_id, move |_, connection: Arc<Connection>| async move {
            let response = send(&connection, |version| {
                if version >= 8 {
                    OffsetFetchRequest::default().with_groups(vec![
                        OffsetFetchRequestGroup::default()
                            .with_group_id(group_name(group_id))
                            .with_topics(None),
                    ])
                } else {
                    OffsetFetchRequest::default()
                        .with_group_id(group_name(group_id))
                        .with_topics(None)
                }
            })
            .await?;
            committed_offsets(response)
        })
        .await
    }

    /// Deletes groups (DeleteGroups at each group's coordinator): one result per group,
    /// NON_EMPTY_GROUP for a group with members, GROUP_ID_NOT_FOUND for none.
    pub async fn delete_groups(
        &self,
        group_ids: &[String],
    ) -> Result<BTreeMap<String, Result<(), ApiError>>, Error> {
        let mut results = BTreeMap::new();
        for group_id in group_ids {
            let result = self
                .at_coordinator(group_id, move |_, connection: Arc<Connection>| async move {
                    let response = send(&connection, |_| {
                        DeleteGroupsRequest::default().with_groups_names(vec![group_name(group_id)])
                    })
                    .await?;
                    let result = response
                        .results
                        .into_iter()
                        .find(|result| result.group_id.as_str() == group_id.as_str())
                        .ok_or_else(|| no_result("DeleteGroups", group_id))?;
                    ErrorCode(result.error_code).check(None)?;
                    Ok(())
                })
                .await;
            match result {
                Ok(()) => results.insert(group_id.clone(), Ok(())),
                Err(Error::Api(error)) => results.insert(group_id.clone(), Err(error)),
                Err(error) => return Err(error),
            };
        }
        Ok(results)
    }

    /// Deletes the group's committed offsets of `partitions` (OffsetDelete, Kafka's
    /// `deleteConsumerGroupOffsets`, `kafka-consumer-groups.sh --delete-offsets`): one
    /// result per partition; GROUP_SUBSCRIBED_TO_TOPIC while a member consumes the topic,
    /// GROUP_ID_NOT_FOUND for no such group (the whole call fails then).
    pub async fn delete_group_offsets(
        &self,
        group_id: &str,
        partitions: &[TopicPartition],
    ) -> Result<PartitionResults<()>, Error> {
        use kafka_protocol::messages::OffsetDeleteRequest;
        use kafka_protocol::messages::offset_delete_request::{
            OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
        };
        let mut topics: BTreeMap<&str, Vec<OffsetDeleteRequestPartition>> = BTreeMap::new();
        for partition in partitions {
            topics.entry(&partition.topic).or_default().push(
                OffsetDeleteRequestPartition::default().with_partition_index(partition.partition),
            );
        }
        let topics: Vec<OffsetDeleteRequestTopic> = topics
            .into_iter()
            .map(|(name, partitions)| {
                OffsetDeleteRequestTopic::default()
                    .with_name(topic_name(name))
                    .with_partitions(partitions)
            })
            .collect();
        let topics = &topics;
        self.at_coordinator(group_id, move |_, connection: Arc<Connection>| async move {
            let response = send(&connection, |_| {
                OffsetDeleteRequest::default()
                    .with_group_id(group_name(group_id))
                    .with_topics(topics.clone())
            })
            .await?;
            ErrorCode(response.error_code).check(None)?;
            let mut results: PartitionResults<()> = partitions
                .iter()
                .map(|partition| {
                    let error = no_result("OffsetDelete", &partition.to_string());
                    (partition.clone(), Err(api_error(error)))
                })
                .collect();
            for topic in response.topics {
                for partition in topic.partitions {
                    results.insert(
                        TopicPartition::new(topic.name.to_string(), partition.partition_index),
                        ErrorCode(partition.error_code).check(None),
                    );
                }
            }
            Ok(results)
        })
        .await
    }

    /// Commits `offsets` for the group as an admin does (OffsetCommit with generation -1
    /// and no member id), which the coordinator accepts only while the group has no
    /// members. One result per partition.
    pub async fn alter_group_offsets(
        &self,
        group_id: &str,
        offsets: &BTreeMap<TopicPartition, i64>,
    ) -> Result<PartitionResults<()>, Error> {
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (partition, offset) in offsets {
            topics.entry(&partition.topic).or_default().push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(partition.partition)
                    .with_committed_offset(*offset)
                    .with_committed_leader_epoch(-1)
                    .with_committed_metadata(Some(StrBytes::from_static_str(""))),
            );
        }
        let topics: Vec<OffsetCommitRequestTopic> = topics
            .into_iter()
            .map(|(name, partitions)| {
                OffsetCommitRequestTopic::default()
                    .with_name(topic_name(name))
                    .with_partitions(partitions)
            })
            .collect();
        let topics = &topics;
        self.at_coordinator(group_id, move |_, connection: Arc<Connection>| async move {
            let response = send(&connection, |_| {
                OffsetCommitRequest::default()
                    .with_group_id(group_name(group_id))
                    .with_generation_id_or_member_epoch(-1)
                    .with_member_id(StrBytes::from_static_str(""))
                    .with_topics(topics.clone())
            })
            .await?;
            let mut results: PartitionResults<()> = offsets
                .keys()
                .map(|partition| {
                    let error = no_result("OffsetCommit", &partition.to_string());
                    (partition.clone(), Err(api_error(error)))
                })
                .collect();
            for topic in response.topics {
                for partition in topic.partitions {
                    let code = ErrorCode(partition.error_code);
                    // A moved coordinator fails every partition: look it up again.
                    if [
                        ErrorCode::NOT_COORDINATOR,
                        ErrorCode::COORDINATOR_NOT_AVAILABLE,
                        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                    ]
                    .contains(&code)
                    {
                        code.check(None)?;
                    }
                    results.insert(
                        TopicPartition::new(topic.name.to_string(), partition.partition_index),
                        code.check(None),
                    );
                }
            }
            Ok(results)
        })
        .await
    }

    /// The offsets `specs` ask for, from each partition's leader. A partition whose
    /// topic does not exist or that has no leader gets UNKNOWN_TOPIC_OR_PARTITION or
    /// LEADER_NOT_AVAILABLE.
    pub async fn list_offsets(
        &self,
        specs: &BTreeMap<TopicPartition, OffsetSpec>,
    ) -> Result<PartitionResults<ListOffsetsResultInfo>, Error> {
        self.list_offsets_isolated(specs, false).await
    }

    /// [`Admin::list_offsets`] with Java's `ListOffsetsOptions.isolationLevel`: with
    /// `read_committed`, `Latest` is the last stable offset (what a read_committed
    /// consumer can reach), not the high watermark.
    pub async fn list_offsets_isolated(
        &self,
        specs: &BTreeMap<TopicPartition, OffsetSpec>,
        read_committed: bool,
    ) -> Result<PartitionResults<ListOffsetsResultInfo>, Error> {
        let topics: Vec<String> = specs
            .keys()
            .map(|partition| partition.topic.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let descriptions = self.describe_topics(&topics).await?;
        let mut results: PartitionResults<ListOffsetsResultInfo> = BTreeMap::new();
        let mut by_leader: BTreeMap<i32, Vec<(&TopicPartition, OffsetSpec)>> = BTreeMap::new();
        for (partition, spec) in specs {
            let leader = match descriptions.get(&partition.topic) {
                Some(Ok(description)) => description
                    .partitions
                    .iter()
                    .find(|info| info.partition == partition.partition)
                    .map(|info| info.leader.ok_or(ErrorCode::LEADER_NOT_AVAILABLE))
                    .unwrap_or(Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)),
                Some(Err(error)) => Err(error.code),
                None => Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            };
            match leader {
                Ok(leader) => by_leader
                    .entry(leader)
                    .or_default()
                    .push((partition, *spec)),
                Err(code) => {
                    let error = ApiError {
                        code,
                        message: None,
                    };
                    results.insert(partition.clone(), Err(error));
                }
            }
        }
        let brokers = self.client().brokers();
        let timeout_ms =
            i32::try_from(self.client().config().request_timeout_ms).unwrap_or(i32::MAX);
        for (leader, partitions) in by_leader {
            let address = brokers
                .get(&leader)
                .ok_or(Error::UnknownNode { node_id: leader })?;
            let connection = self.connect_to(address).await?;
            let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
            for (partition, spec) in &partitions {
                topics.entry(&partition.topic).or_default().push(
                    ListOffsetsPartition::default()
                        .with_partition_index(partition.partition)
                        .with_timestamp(spec.timestamp()),
                );
            }
            let response = send(&connection, |_| {
                ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_isolation_level(i8::from(read_committed))
                    .with_timeout_ms(timeout_ms)
                    .with_topics(
                        topics
                            .into_iter()
                            .map(|(name, partitions)| {
                                ListOffsetsTopic::default()
                                    .with_name(topic_name(name))
                                    .with_partitions(partitions)
                            })
                            .collect(),
                    )
            })
            .await?;
            for (partition, _) in &partitions {
                results.insert(
                    (*partition).clone(),
                    Err(api_error(no_result("ListOffsets", &partition.to_string()))),
                );
            }
            for topic in response.topics {
                for partition in topic.partitions {
                    let result = ErrorCode(partition.error_code).check(None).map(|()| {
                        ListOffsetsResultInfo {
                            offset: partition.offset,
                            timestamp: partition.timestamp,
                            leader_epoch: (partition.leader_epoch >= 0)
                                .then_some(partition.leader_epoch),
                        }
                    });
                    results.insert(
                        TopicPartition::new(topic.name.to_string(), partition.partition_index),
                        result,
                    );
                }
            }
        }
        Ok(results)
    }

    /// Runs `call` at the group's coordinator, finding it again (after
    /// `retry.backoff.ms`) while the answer is that it moved, is loading or is not
    /// available, until `request.timeout.ms` has passed.
    async fn at_coordinator<T, F, Fut>(&self, group_id: &str, call: F) -> Result<T, Error>
    where
        F: Fn(GroupCoordinator, Arc<Connection>) -> Fut,
        Fut: std::future::Future<Output = Result<T, Error>>,
    {
        let deadline =
            Instant::now() + Duration::from_millis(self.client().config().request_timeout_ms);
        loop {
            let attempt = async {
                let coordinator = self
                    .find_coordinator(group_id, COORDINATOR_TYPE_GROUP)
                    .await?;
                let connection = Arc::new(self.connect_to(&coordinator.address()).await?);
                call(coordinator, connection).await
            };
            match attempt.await {
                Err(Error::Api(error))
                    if [
                        ErrorCode::NOT_COORDINATOR,
                        ErrorCode::COORDINATOR_NOT_AVAILABLE,
                        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                    ]
                    .contains(&error.code)
                        && Instant::now() + RETRY_BACKOFF < deadline =>
                {
                    tracing::debug!(group_id, %error, "looking the coordinator up again");
                    tokio::time::sleep(RETRY_BACKOFF).await;
                }
                result => return result,
            }
        }
    }

    /// A new connection to `address`.
    async fn connect_to(&self, address: &str) -> Result<Connection, Error> {
        Connection::connect(address, self.client().config()).await
    }

    /// A new connection to any broker: the known ones, then the bootstrap servers.
    async fn connect_any(&self) -> Result<Connection, Error> {
        let mut candidates: Vec<String> = self.client().brokers().into_values().collect();
        candidates.extend(self.client().config().bootstrap_servers.iter().cloned());
        let mut last_error = None;
        for address in &candidates {
            match self.connect_to(address).await {
                Ok(connection) => return Ok(connection),
                Err(error) => last_error = Some(error),
            }
        }
        Err(Error::NoBrokerAvailable {
            tried: candidates.join(", "),
            last: Box::new(
                last_error.unwrap_or(Error::Config("no broker address known".to_string())),
            ),
        })
    }
}

/// Sends the request `build` makes for the version negotiated from
/// [`GROUP_API_VERSIONS`] and the broker's ApiVersions.
async fn send<R: Request>(
    connection: &Connection,
    build: impl FnOnce(i16) -> R,
) -> Result<R::Response, Error> {
    let api = api_key::<R>();
    let client = GROUP_API_VERSIONS
        .iter()
        .find(|(key, _, _)| *key == api)
        .map_or((0, -1), |(_, min, max)| (*min, *max));
    let broker = connection.broker_versions(api);
    let version = broker
        .and_then(|broker| negotiate(client, broker))
        .ok_or_else(|| Error::UnsupportedVersion {
            api,
            address: connection.address().to_string(),
            client_min: client.0,
            client_max: client.1,
            broker: broker.map_or("none".to_string(), |(min, max)| format!("v{min}-{max}")),
        })?;
    connection.send(version, &build(version)).await
}

async fn consumer_group_describe(
    connection: &Connection,
    coordinator: &GroupCoordinator,
    group_id: &str,
) -> Result<ConsumerGroupDescription, Error> {
    let response = send(connection, |_| {
        ConsumerGroupDescribeRequest::default().with_group_ids(vec![group_name(group_id)])
    })
    .await?;
    let group = response
        .groups
        .into_iter()
        .find(|group| group.group_id.as_str() == group_id)
        .ok_or_else(|| no_result("ConsumerGroupDescribe", group_id))?;
    ErrorCode(group.error_code).check(group.error_message.as_deref())?;
    let partitions =
        |assignment: kafka_protocol::messages::consumer_group_describe_response::Assignment| {
            assignment
                .topic_partitions
                .into_iter()
                .flat_map(|topic| {
                    let name = topic.topic_name.to_string();
                    topic
                        .partitions
                        .into_iter()
                        .map(move |partition| TopicPartition::new(name.clone(), partition))
                })
                .collect::<BTreeSet<_>>()
        };
    let members = group
        .members
        .into_iter()
        .map(|member| MemberDescription {
            member_id: member.member_id.to_string(),
            group_instance_id: member.instance_id.map(|id| id.to_string()),
            client_id: member.client_id.to_string(),
            host: member.client_host.to_string(),
            assignment: partitions(member.assignment),
            target_assignment: Some(partitions(member.target_assignment)),
            member_epoch: Some(member.member_epoch),
            // v1's member type: 0 classic, 1 consumer, -1 unknown.
            upgraded: match member.member_type {
                0 => Some(false),
                1 => Some(true),
                _ => None,
            },
        })
        .collect();
    Ok(ConsumerGroupDescription {
        group_id: group.group_id.to_string(),
        is_simple_consumer_group: false,
        members,
        partition_assignor: group.assignor_name.to_string(),
        group_type: GroupType::Consumer,
        state: group.group_state.to_string(),
        coordinator: coordinator.clone(),
        group_epoch: Some(group.group_epoch),
        target_assignment_epoch: Some(group.assignment_epoch),
    })
}

async fn describe_groups(
    connection: &Connection,
    coordinator: &GroupCoordinator,
    group_id: &str,
) -> Result<ConsumerGroupDescription, Error> {
    let response = send(connection, |_| {
        DescribeGroupsRequest::default().with_groups(vec![group_name(group_id)])
    })
    .await?;
    let group = response
        .groups
        .into_iter()
        .find(|group| group.group_id.as_str() == group_id)
        .ok_or_else(|| no_result("DescribeGroups", group_id))?;
    ErrorCode(group.error_code).check(group.error_message.as_deref())?;
    let protocol_type = group.protocol_type.to_string();
    if !(protocol_type.is_empty() || protocol_type == CONSUMER_PROTOCOL_TYPE) {
        return Err(Error::Api(ApiError {
            code: ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
            message: Some(format!(
                "GroupId {group_id} is not a consumer group ({protocol_type})."
            )),
        }));
    }
    let mut members = Vec::with_capacity(group.members.len());
    for member in group.members {
        let mut assignment = BTreeSet::new();
        if !member.member_assignment.is_empty() {
            let decoded = sluice_protocol::consumer_protocol::decode_assignment(
                &member.member_assignment,
            )
            .map_err(|error| Error::Protocol {
                address: connection.address().to_string(),
                reason: format!(
                    "member {} of group {group_id} has an assignment that does not decode: {error}",
                    member.member_id.as_str()
                ),
            })?;
            for (topic, partitions) in decoded.partitions {
                for partition in partitions {
                    assignment.insert(TopicPartition::new(topic.clone(), partition));
                }
            }
        }
        members.push(MemberDescription {
            member_id: member.member_id.to_string(),
            group_instance_id: member.group_instance_id.map(|id| id.to_string()),
            client_id: member.client_id.to_string(),
            host: member.client_host.to_string(),
            assignment,
            target_assignment: None,
            member_epoch: None,
            upgraded: None,
        });
    }
    Ok(ConsumerGroupDescription {
        group_id: group.group_id.to_string(),
        is_simple_consumer_group: protocol_type.is_empty(),
        members,
        partition_assignor: group.protocol_data.to_string(),
        group_type: GroupType::Classic,
        state: group.group_state.to_string(),
        coordinator: coordinator.clone(),
        group_epoch: None,
        target_assignment_epoch: None,
    })
}

fn group_name(group_id: &str) -> GroupId {
    GroupId(StrBytes::from_string(group_id.to_string()))
}

/// A broker that leaves a requested key out of its response has not handled it.
fn no_result(api: &str, key: &str) -> Error {
    Error::Api(ApiError {
        code: ErrorCode::UNKNOWN_SERVER_ERROR,
        message: Some(format!("the {api} response has no result for '{key}'")),
    })
}

fn api_error(error: Error) -> ApiError {
    match error {
        Error::Api(error) => error,
        other => ApiError {
            code: ErrorCode::UNKNOWN_SERVER_ERROR,
            message: Some(other.to_string()),
        },
    }
}

/// The committed offsets an OffsetFetch response carries, for one group: the v8+ `groups`
/// form or the older top-level one. A partition or group error fails the whole call; -1
/// (nothing committed) leaves the partition out, as Kafka's clients do.
pub(crate) fn committed_offsets(
    response: kafka_protocol::messages::OffsetFetchResponse,
) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>, Error> {
    let mut offsets = BTreeMap::new();
    let mut record = |topic: &str,
                      partition: i32,
                      offset: i64,
                      epoch: i32,
                      metadata: Option<StrBytes>,
                      error_code: i16|
     -> Result<(), Error> {
        ErrorCode(error_code).check(None)?;
        if offset >= 0 {
            offsets.insert(
                TopicPartition::new(topic, partition),
                OffsetAndMetadata {
                    offset,
                    leader_epoch: (epoch >= 0).then_some(epoch),
                    metadata: metadata.map(|m| m.to_string()).unwrap_or_default(),
                },
            );
        }
        Ok(())
    };
    if let Some(group) = response.groups.into_iter().next() {
        ErrorCode(group.error_code).check(None)?;
        for topic in group.topics {
            for p in topic.partitions {
                record(
                    &topic.name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata,
                    p.error_code,
                )?;
            }
        }
    } else {
        ErrorCode(response.error_code).check(None)?;
        for topic in response.topics {
            for p in topic.partitions {
                record(
                    &topic.name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata,
                    p.error_code,
                )?;
            }
        }
    }
    Ok(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_partitions_show_and_sort_as_kafkas() {
        let mut partitions = [
            TopicPartition::new("orders", 10),
            TopicPartition::new("audit", 3),
            TopicPartition::new("orders", 2),
        ];
        partitions.sort();
        let shown: Vec<String> = partitions.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["audit-3", "orders-2", "orders-10"]);
    }

    #[test]
    fn offset_specs_use_listoffsets_special_timestamps() {
        assert_eq!(OffsetSpec::Earliest.timestamp(), -2);
        assert_eq!(OffsetSpec::Latest.timestamp(), -1);
        assert_eq!(
            OffsetSpec::Timestamp(1_700_000_000_000).timestamp(),
            1_700_000_000_000
        );
    }

    #[test]
    fn coordinator_addresses_bracket_ipv6() {
        let coordinator = |host: &str| GroupCoordinator {
            node_id: 1,
            host: host.to_string(),
            port: 9092,
        };
        assert_eq!(coordinator("127.0.0.1").address(), "127.0.0.1:9092");
        assert_eq!(coordinator("::1").address(), "[::1]:9092");
    }
}
