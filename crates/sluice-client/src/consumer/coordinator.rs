//! The consumer's side of the classic group protocol (Java's `ConsumerCoordinator`):
//! finding the coordinator, JoinGroup (with the MEMBER_ID_REQUIRED retry), SyncGroup,
//! the background heartbeat, LeaveGroup, OffsetCommit and OffsetFetch.
//!
//! What runs where: the application's `poll` drives joins and syncs (so rebalance
//! listeners run in the application's task, as in Java). A background task heartbeats
//! every `heartbeat.interval.ms` while the member is stable, so a slow poll loop keeps
//! its session; it notices a rebalance (REBALANCE_IN_PROGRESS) or a lost membership
//! (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION) and flags it for the next `poll`; and when
//! the application has not polled for `max.poll.interval.ms` it leaves the group, as
//! Java's heartbeat thread does, so the partitions move to members that are alive.
//!
//! Group requests go through a [`Client`] of their own whose request timeout covers
//! the rebalance timeout (JoinGroup waits for every member), so a slow rebalance never
//! times out a connection that fetches use.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    OffsetCommitRequest, OffsetFetchRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::metrics::CoordinatorMetrics;
use crate::client::{Client, Target, topic_name};
use crate::error::{ApiError, Error, ErrorCode};
use crate::groups::{OffsetAndMetadata, TopicPartition};

/// The protocol type of consumer groups.
const PROTOCOL_TYPE: &str = "consumer";

/// Where the member stands, shared by `poll` and the heartbeat task.
#[derive(Debug)]
pub(crate) struct MemberState {
    pub coordinator: Option<i32>,
    pub member_id: String,
    /// -1 when not in a generation.
    pub generation: i32,
    /// The assignor the coordinator chose for this generation.
    pub protocol_name: Option<String>,
    /// Joined and synced: the heartbeat task runs.
    pub stable: bool,
    /// A rebalance is needed (the heartbeat saw one, or a cooperative revocation).
    pub rejoin_needed: bool,
    /// The generation was lost (session expired, fenced, poll timeout): the owned
    /// partitions are lost, not revoked.
    pub lost: bool,
    /// When the application last called poll.
    pub last_poll: Instant,
    /// An error the heartbeat task saw that `poll` must report (FENCED_INSTANCE_ID).
    pub fatal: Option<ApiError>,
    // group.protocol=consumer only:
    /// A target assignment from the coordinator not yet reconciled: (topic id,
    /// partitions).
    pub pending_assignment: Option<Vec<([u8; 16], Vec<i32>)>>,
    /// What the next ConsumerGroupHeartbeat carries: owned partitions and topics.
    pub heartbeat_owned:
        Vec<kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions>,
    pub heartbeat_topics: Vec<String>,
    /// The interval the coordinator asks for (starts at `heartbeat.interval.ms`).
    pub heartbeat_interval_ms: u64,
    /// What the coordinator last acknowledged (None: send in full next time).
    pub sent_owned:
        Option<Vec<kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions>>,
    pub sent_topics: Option<Vec<String>>,
}

impl MemberState {
    fn reset_generation(&mut self, reset_member_id: bool) {
        self.generation = -1;
        self.stable = false;
        self.rejoin_needed = true;
        self.lost = true;
        if reset_member_id {
            self.member_id.clear();
        }
    }
}

/// A group member's identity and settings, shared with the background tasks.
pub(crate) struct Group {
    pub client: Arc<Client>,
    /// `consumer-coordinator-metrics`.
    pub metrics: Arc<CoordinatorMetrics>,
    pub group_id: String,
    pub group_instance_id: Option<String>,
    pub session_timeout_ms: u64,
    pub rebalance_timeout_ms: u64,
    pub heartbeat_interval_ms: u64,
    pub retry_backoff_ms: u64,
    pub default_api_timeout_ms: u64,
    /// `group.remote.assignor` (consumer protocol).
    pub remote_assignor: Option<String>,
    /// Wakes the consumer-protocol heartbeat task when `poll` changed what it sends.
    pub wake: tokio::sync::Notify,
    pub state: Mutex<MemberState>,
}

/// What JoinGroup answered.
pub(crate) struct Joined {
    pub generation: i32,
    pub member_id: String,
    pub protocol_name: String,
    pub leader: bool,
    /// (member id, group instance id, subscription bytes); only the leader gets them.
    pub members: Vec<(String, Option<String>, bytes::Bytes)>,
}

/// Whether a join attempt must be repeated, and how.
pub(crate) enum JoinError {
    /// Try again (after finding the coordinator again if it moved).
    Retry,
    /// Cannot continue.
    Fatal(Error),
}

impl Group {
    pub fn lock(&self) -> std::sync::MutexGuard<'_, MemberState> {
        // Every update is a few field stores that keep the state valid.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn group_name(&self) -> GroupId {
        GroupId(StrBytes::from_string(self.group_id.clone()))
    }

    fn instance_id(&self) -> Option<StrBytes> {
        self.group_instance_id.clone().map(StrBytes::from_string)
    }

    /// The coordinator's node id, finding it if unknown.
    pub async fn coordinator(&self) -> Result<i32, Error> {
        if let Some(node) = self.lock().coordinator {
            return Ok(node);
        }
        let deadline = Instant::now() + Duration::from_millis(self.default_api_timeout_ms);
        loop {
            let result = self.find_coordinator().await;
            match result {
                Ok(node) => {
                    if !self.client.brokers().contains_key(&node) {
                        self.client.metadata(Some(&[])).await?;
                    }
                    self.lock().coordinator = Some(node);
                    return Ok(node);
                }
                Err(error) if retriable(&error) && Instant::now() < deadline => {
                    tracing::debug!(group = %self.group_id, %error, "finding the coordinator again");
                    tokio::time::sleep(Duration::from_millis(self.retry_backoff_ms)).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    async fn find_coordinator(&self) -> Result<i32, Error> {
        let key = StrBytes::from_string(self.group_id.clone());
        let response = self
            .client
            .send(Target::Any, |version| {
                let request = FindCoordinatorRequest::default().with_key_type(0);
                if version >= 4 {
                    request.with_coordinator_keys(vec![key.clone()])
                } else {
                    request.with_key(key.clone())
                }
            })
            .await?;
        if let Some(coordinator) = response.coordinators.first() {
            ErrorCode(coordinator.error_code).check(coordinator.error_message.as_deref())?;
            return Ok(coordinator.node_id.0);
        }
        ErrorCode(response.error_code).check(response.error_message.as_deref())?;
        Ok(response.node_id.0)
    }

    /// Forgets the coordinator after an error that says it moved or is unreachable.
    pub fn coordinator_failed(&self, error: &Error) {
        let moved = match error.code() {
            Some(code) => {
                code == ErrorCode::NOT_COORDINATOR || code == ErrorCode::COORDINATOR_NOT_AVAILABLE
            }
            None => true,
        };
        if moved {
            self.lock().coordinator = None;
        }
    }

    /// One JoinGroup round: `protocols` are (assignor name, subscription bytes).
    pub async fn join(&self, protocols: &[(String, Vec<u8>)]) -> Result<Joined, JoinError> {
        let node = self.coordinator().await.map_err(JoinError::Fatal)?;
        let member_id = self.lock().member_id.clone();
        let protocols: Vec<JoinGroupRequestProtocol> = protocols
            .iter()
            .map(|(name, metadata)| {
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_string(name.clone()))
                    .with_metadata(bytes::Bytes::from(metadata.clone()))
            })
            .collect();
        self.metrics.rebalance_started();
        let started = Instant::now();
        let result = self
            .client
            .send(Target::Node(node), |version| {
                let mut request = JoinGroupRequest::default()
                    .with_group_id(self.group_name())
                    .with_session_timeout_ms(clamp_i32(self.session_timeout_ms))
                    .with_member_id(StrBytes::from_string(member_id.clone()))
                    .with_protocol_type(StrBytes::from_static_str(PROTOCOL_TYPE))
                    .with_protocols(protocols.clone());
                if version >= 1 {
                    request =
                        request.with_rebalance_timeout_ms(clamp_i32(self.rebalance_timeout_ms));
                }
                if version >= 5 {
                    request = request.with_group_instance_id(self.instance_id());
                }
                request
            })
            .await;
        let response = match result {
            Ok(response) => response,
            Err(error) => return Err(self.transient(error).await),
        };
        let code = ErrorCode(response.error_code);
        if code == ErrorCode::NONE {
            self.metrics.joined(started.elapsed());
        }
        match code {
            ErrorCode::NONE => Ok(Joined {
                generation: response.generation_id,
                member_id: response.member_id.to_string(),
                protocol_name: response
                    .protocol_name
                    .map(|name| name.to_string())
                    .unwrap_or_default(),
                leader: response.leader == response.member_id,
                members: response
                    .members
                    .into_iter()
                    .map(|member| {
                        (
                            member.member_id.to_string(),
                            member.group_instance_id.map(|id| id.to_string()),
                            member.metadata,
                        )
                    })
                    .collect(),
            }),
            ErrorCode::MEMBER_ID_REQUIRED => {
                // KIP-394: the coordinator names us; join again with that id.
                self.lock().member_id = response.member_id.to_string();
                Err(JoinError::Retry)
            }
            ErrorCode::UNKNOWN_MEMBER_ID => {
                self.lock().member_id.clear();
                Err(JoinError::Retry)
            }
            ErrorCode::ILLEGAL_GENERATION => {
                self.lock().generation = -1;
                Err(JoinError::Retry)
            }
            ErrorCode::REBALANCE_IN_PROGRESS => Err(JoinError::Retry),
            _ => Err(self.transient(api_error(code)).await),
        }
    }

    /// SyncGroup: the leader sends `assignments`; every member gets its own back.
    pub async fn sync(
        &self,
        joined: &Joined,
        assignments: Vec<(String, Vec<u8>)>,
    ) -> Result<bytes::Bytes, JoinError> {
        let node = self.coordinator().await.map_err(JoinError::Fatal)?;
        let assignments: Vec<SyncGroupRequestAssignment> = assignments
            .into_iter()
            .map(|(member, assignment)| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(StrBytes::from_string(member))
                    .with_assignment(bytes::Bytes::from(assignment))
            })
            .collect();
        let started = Instant::now();
        let result = self
            .client
            .send(Target::Node(node), |version| {
                let mut request = SyncGroupRequest::default()
                    .with_group_id(self.group_name())
                    .with_generation_id(joined.generation)
                    .with_member_id(StrBytes::from_string(joined.member_id.clone()))
                    .with_assignments(assignments);
                if version >= 3 {
                    request = request.with_group_instance_id(self.instance_id());
                }
                if version >= 5 {
                    request = request
                        .with_protocol_type(Some(StrBytes::from_static_str(PROTOCOL_TYPE)))
                        .with_protocol_name(Some(StrBytes::from_string(
                            joined.protocol_name.clone(),
                        )));
                }
                request
            })
            .await;
        let response = match result {
            Ok(response) => response,
            Err(error) => return Err(self.transient(error).await),
        };
        let code = ErrorCode(response.error_code);
        match code {
            ErrorCode::NONE => {
                self.metrics.synced(started.elapsed());
                self.metrics.rebalance_completed();
                Ok(response.assignment)
            }
            ErrorCode::REBALANCE_IN_PROGRESS => Err(JoinError::Retry),
            ErrorCode::UNKNOWN_MEMBER_ID => {
                self.lock().reset_generation(true);
                Err(JoinError::Retry)
            }
            ErrorCode::ILLEGAL_GENERATION => {
                self.lock().reset_generation(false);
                Err(JoinError::Retry)
            }
            _ => Err(self.transient(api_error(code)).await),
        }
    }

    /// Sorts an error into retry (after a backoff; the coordinator is looked up again
    /// when it moved) or fatal.
    async fn transient(&self, error: Error) -> JoinError {
        if retriable(&error) {
            self.coordinator_failed(&error);
            tokio::time::sleep(Duration::from_millis(self.retry_backoff_ms)).await;
            JoinError::Retry
        } else {
            JoinError::Fatal(error)
        }
    }

    /// LeaveGroup for a dynamic member (static members stay until their session
    /// expires, as in Java); forgets the member id and generation either way.
    pub async fn leave(&self, reason: &str) {
        let (member_id, coordinator) = {
            let mut state = self.lock();
            let member_id = std::mem::take(&mut state.member_id);
            state.generation = -1;
            state.stable = false;
            state.rejoin_needed = true;
            (member_id, state.coordinator)
        };
        if self.group_instance_id.is_some() || member_id.is_empty() {
            return;
        }
        let Some(node) = coordinator else {
            return;
        };
        let result = self
            .client
            .send(Target::Node(node), |version| {
                let request = LeaveGroupRequest::default().with_group_id(self.group_name());
                if version >= 3 {
                    let mut identity = MemberIdentity::default()
                        .with_member_id(StrBytes::from_string(member_id.clone()));
                    if version >= 5 {
                        identity =
                            identity.with_reason(Some(StrBytes::from_string(reason.to_string())));
                    }
                    request.with_members(vec![identity])
                } else {
                    request.with_member_id(StrBytes::from_string(member_id.clone()))
                }
            })
            .await;
        match result {
            Ok(response) if response.error_code != 0 => {
                tracing::debug!(group = %self.group_id, code = response.error_code, "LeaveGroup failed")
            }
            Ok(_) => tracing::debug!(group = %self.group_id, %member_id, reason, "left the group"),
            Err(error) => tracing::debug!(group = %self.group_id, %error, "LeaveGroup failed"),
        }
    }

    /// One Heartbeat; its error code.
    async fn heartbeat(
        &self,
        node: i32,
        generation: i32,
        member_id: &str,
    ) -> Result<ErrorCode, Error> {
        self.metrics.heartbeat_sent();
        let started = Instant::now();
        let response = self
            .client
            .send(Target::Node(node), |version| {
                let request = HeartbeatRequest::default()
                    .with_group_id(self.group_name())
                    .with_generation_id(generation)
                    .with_member_id(StrBytes::from_string(member_id.to_string()));
                if version >= 3 {
                    request.with_group_instance_id(self.instance_id())
                } else {
                    request
                }
            })
            .await?;
        self.metrics.heartbeat_response(started.elapsed());
        Ok(ErrorCode(response.error_code))
    }

    /// Commits `offsets` with the member's generation (or as a non-member: generation
    /// -1, no member id), looking the coordinator up again while it moves, until
    /// `default.api.timeout.ms`.
    pub async fn commit(
        &self,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        as_member: bool,
    ) -> Result<(), Error> {
        if offsets.is_empty() {
            return Ok(());
        }
        let mut topics: BTreeMap<&str, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
        for (partition, offset) in offsets {
            topics.entry(&partition.topic).or_default().push(
                OffsetCommitRequestPartition::default()
                    .with_partition_index(partition.partition)
                    .with_committed_offset(offset.offset)
                    .with_committed_leader_epoch(offset.leader_epoch.unwrap_or(-1))
                    .with_committed_metadata(Some(StrBytes::from_string(offset.metadata.clone()))),
            );
        }
        let deadline = Instant::now() + Duration::from_millis(self.default_api_timeout_ms);
        loop {
            let (generation, member_id) = {
                let state = self.lock();
                if as_member {
                    (state.generation, state.member_id.clone())
                } else {
                    (-1, String::new())
                }
            };
            let attempt = async {
                let node = self.coordinator().await?;
                let started = Instant::now();
                let response = self
                    .client
                    .send(Target::Node(node), |version| {
                        let partitions = |list: &Vec<OffsetCommitRequestPartition>| {
                            list.iter()
                                .map(|p| {
                                    if version >= 6 {
                                        p.clone()
                                    } else {
                                        p.clone().with_committed_leader_epoch(-1)
                                    }
                                })
                                .collect()
                        };
                        let mut request = OffsetCommitRequest::default()
                            .with_group_id(self.group_name())
                            .with_generation_id_or_member_epoch(generation)
                            .with_member_id(StrBytes::from_string(member_id.clone()))
                            .with_topics(
                                topics
                                    .iter()
                                    .map(|(name, list)| {
                                        OffsetCommitRequestTopic::default()
                                            .with_name(topic_name(name))
                                            .with_partitions(partitions(list))
                                    })
                                    .collect(),
                            );
                        if version >= 7 && as_member {
                            request = request.with_group_instance_id(self.instance_id());
                        }
                        request
                    })
                    .await?;
                // Every answer counts, whatever its errors (as Java records it).
                self.metrics.commit_response(started.elapsed());
                for topic in response.topics {
                    for partition in topic.partitions {
                        ErrorCode(partition.error_code).check(None)?;
                    }
                }
                Ok::<(), Error>(())
            };
            match attempt.await {
                Ok(()) => return Ok(()),
                Err(error) => {
                    if let Some(code) = error.code() {
                        if code == ErrorCode::UNKNOWN_MEMBER_ID
                            || code == ErrorCode::ILLEGAL_GENERATION
                        {
                            self.lock()
                                .reset_generation(code == ErrorCode::UNKNOWN_MEMBER_ID);
                        } else if code == ErrorCode::REBALANCE_IN_PROGRESS {
                            self.lock().rejoin_needed = true;
                        } else if code == ErrorCode::STALE_MEMBER_EPOCH && Instant::now() < deadline
                        {
                            // KIP-848: the next heartbeat brings the current epoch.
                            tokio::time::sleep(Duration::from_millis(self.retry_backoff_ms)).await;
                            continue;
                        }
                    }
                    if retriable(&error) && Instant::now() < deadline {
                        self.coordinator_failed(&error);
                        tokio::time::sleep(Duration::from_millis(self.retry_backoff_ms)).await;
                        continue;
                    }
                    return Err(error);
                }
            }
        }
    }

    /// The group's committed offsets for `partitions` (absent: nothing committed).
    /// `require_stable` waits out pending transactional commits (KIP-447).
    pub async fn committed(
        &self,
        partitions: &[TopicPartition],
        require_stable: bool,
    ) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>, Error> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for partition in partitions {
            by_topic
                .entry(&partition.topic)
                .or_default()
                .push(partition.partition);
        }
        let deadline = Instant::now() + Duration::from_millis(self.default_api_timeout_ms);
        loop {
            let attempt = async {
                let node = self.coordinator().await?;
                let response = self
                    .client
                    .send(Target::Node(node), |version| {
                        let request = if version >= 8 {
                            OffsetFetchRequest::default().with_groups(vec![
                                OffsetFetchRequestGroup::default()
                                    .with_group_id(self.group_name())
                                    .with_topics(Some(
                                        by_topic
                                            .iter()
                                            .map(|(name, list)| {
                                                OffsetFetchRequestTopics::default()
                                                    .with_name(topic_name(name))
                                                    .with_partition_indexes(list.clone())
                                            })
                                            .collect(),
                                    )),
                            ])
                        } else {
                            OffsetFetchRequest::default()
                                .with_group_id(self.group_name())
                                .with_topics(Some(
                                    by_topic
                                        .iter()
                                        .map(|(name, list)| {
                                            OffsetFetchRequestTopic::default()
                                                .with_name(topic_name(name))
                                                .with_partition_indexes(list.clone())
                                        })
                                        .collect(),
                                ))
                        };
                        if version >= 7 {
                            request.with_require_stable(require_stable)
                        } else {
                            request
                        }
                    })
                    .await?;
                crate::groups::committed_offsets(response)
            };
            match attempt.await {
                Ok(offsets) => return Ok(offsets),
                Err(error) if retriable(&error) && Instant::now() < deadline => {
                    self.coordinator_failed(&error);
                    tokio::time::sleep(Duration::from_millis(self.retry_backoff_ms)).await;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// Whether a group request may succeed if sent again: a retriable Kafka error
/// (including UNSTABLE_OFFSET_COMMIT) or a connection failure.
pub(crate) fn retriable(error: &Error) -> bool {
    match error {
        Error::Api(api) => api.code.is_retriable(),
        Error::Disconnected { .. }
        | Error::Timeout { .. }
        | Error::Connect { .. }
        | Error::NoBrokerAvailable { .. }
        | Error::UnknownNode { .. } => true,
        _ => false,
    }
}

fn api_error(code: ErrorCode) -> Error {
    Error::Api(ApiError {
        code,
        message: None,
    })
}

fn clamp_i32(value: u64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// The heartbeat task: runs until the group is dropped (the consumer aborts it).
pub(crate) async fn heartbeat_loop(group: Arc<Group>, max_poll_interval: Duration) {
    let interval = Duration::from_millis(group.heartbeat_interval_ms.max(1));
    loop {
        tokio::time::sleep(interval).await;
        let (stable, generation, member_id, last_poll) = {
            let state = group.lock();
            (
                state.stable,
                state.generation,
                state.member_id.clone(),
                state.last_poll,
            )
        };
        if !stable {
            continue;
        }
        if last_poll.elapsed() > max_poll_interval {
            tracing::warn!(
                group = %group.group_id,
                "consumer poll timeout has expired (max.poll.interval.ms={}): leaving the group",
                max_poll_interval.as_millis()
            );
            group.leave("consumer poll timeout has expired").await;
            group.lock().lost = true;
            continue;
        }
        let node = match group.coordinator().await {
            Ok(node) => node,
            Err(error) => {
                tracing::debug!(group = %group.group_id, %error, "no coordinator for the heartbeat");
                continue;
            }
        };
        let result = group.heartbeat(node, generation, &member_id).await;
        // A response about an older generation, or one that arrives while `poll` is
        // already rejoining, says nothing about the current one (Java's check too):
        // acting on it would start a needless rebalance.
        let current = {
            let state = group.lock();
            state.stable && state.generation == generation
        };
        if !current {
            continue;
        }
        match result {
            Ok(ErrorCode::NONE) => {}
            Ok(ErrorCode::REBALANCE_IN_PROGRESS) => group.lock().rejoin_needed = true,
            Ok(code)
                if code == ErrorCode::UNKNOWN_MEMBER_ID
                    || code == ErrorCode::ILLEGAL_GENERATION =>
            {
                group
                    .lock()
                    .reset_generation(code == ErrorCode::UNKNOWN_MEMBER_ID);
            }
            Ok(ErrorCode::FENCED_INSTANCE_ID) => {
                let mut state = group.lock();
                state.fatal = Some(ApiError {
                    code: ErrorCode::FENCED_INSTANCE_ID,
                    message: None,
                });
                state.stable = false;
            }
            Ok(code) => {
                let error = Error::Api(ApiError {
                    code,
                    message: None,
                });
                group.coordinator_failed(&error);
                tracing::debug!(group = %group.group_id, %error, "heartbeat failed");
            }
            Err(error) => {
                group.coordinator_failed(&error);
                tracing::debug!(group = %group.group_id, %error, "heartbeat failed");
            }
        }
    }
}
