//! The KIP-848 consumer group (`group.protocol=consumer`) as a pure state machine.
//!
//! The broker's coordinator holds one [`ConsumerGroup`] per group and calls
//! [`ConsumerGroup::heartbeat`] for each ConsumerGroupHeartbeat request,
//! [`ConsumerGroup::expire`] from a timer, [`ConsumerGroup::describe`] for
//! ConsumerGroupDescribe and [`ConsumerGroup::validate_offset_commit`] for
//! OffsetCommit/OffsetFetch. Nothing here does I/O or reads a clock: the caller
//! passes the time and the topics of the metadata image.
//!
//! Members of the classic protocol may live in the group too (online migration,
//! see [`crate::migration`]): [`ConsumerGroup::classic_join`],
//! [`ConsumerGroup::classic_sync`], [`ConsumerGroup::classic_heartbeat`] and
//! [`ConsumerGroup::classic_leave`] serve them; [`ConsumerGroup::from_classic`] and
//! [`ConsumerGroup::to_classic`] convert between group kinds. After any removal
//! (a consumer member's leave, [`ConsumerGroup::expire`]) or a classic join, the
//! broker checks [`ConsumerGroup::to_classic`] for a downgrade.
//!
//! The group is persisted as Kafka persists it: after each operation the broker
//! appends [`ConsumerGroup::take_records`] (ConsumerGroup* records of
//! `__consumer_offsets`) and waits for them to commit before answering; loading a
//! partition replays them ([`ConsumerGroup::replay`], then
//! [`ConsumerGroup::finish_load`]), so the members keep their ids, epochs and
//! assignments across a coordinator move.
//!
//! The behaviour follows Kafka's `GroupMetadataManager.consumerGroupHeartbeat`,
//! `ConsumerGroup` and `CurrentAssignmentBuilder`:
//!
//! 1. the member is created (epoch 0) or looked up, its fields updated with the
//!    non-null fields of the request; the group epoch is bumped when the
//!    membership, a subscription (names or regex) or the metadata of the
//!    subscribed topics (ids, partition counts, topics created or deleted)
//!    changes;
//! 2. when the group epoch is above the assignment epoch, the target assignment is
//!    recomputed by the group's assignor (the one most members ask for with
//!    `serverAssignor`, else the configured default);
//! 3. the member reconciles toward its target: it first revokes what it must give
//!    up (staying in its epoch until `topicPartitions` shows the revocation done),
//!    then gets the new epoch and the partitions that are free; partitions still
//!    owned by another member are given once that member has released them.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribeAssignment, DescribedGroup, Member as DescribeMember,
    TopicPartitions as DescribeTopicPartitions,
};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
use kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment as ResponseAssignment, TopicPartitions as ResponseTopicPartitions,
};
use kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use regex::Regex;
use sluice_protocol::consumer_protocol::{self, Assignment as ProtocolAssignment};
use uuid::Uuid;

use crate::assignor::{self, AssignmentMember, TopicPartitions};
use crate::migration::{
    self, CONSUMER_PROTOCOL_TYPE, ClassicJoin, ClassicJoinResult, ClassicMemberSnapshot,
    ClassicSnapshot,
};
use crate::records::{
    self, ClassicMemberMetadata, ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataValue,
    OffsetsKey, RecordError,
};

/// Member epoch of a heartbeat that leaves the group.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// Member epoch of a static member leaving temporarily (it keeps its assignment
/// until its session times out).
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;
/// From this ConsumerGroupHeartbeat version on, the client generates its member id
/// (KIP-1082): an empty member id is refused even when joining.
pub const CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION: i16 = 1;
/// `memberType` of ConsumerGroupDescribe for a member of the consumer protocol.
const MEMBER_TYPE_CONSUMER: i8 = 1;
/// `memberType` of ConsumerGroupDescribe for a member of the classic protocol.
const MEMBER_TYPE_CLASSIC: i8 = 0;

/// The topics the metadata image has, as the group sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Topics {
    by_name: BTreeMap<String, (Uuid, i32)>,
    by_id: HashMap<Uuid, String>,
}

impl Topics {
    /// From `(name, topic id, partition count)` triples.
    pub fn new(topics: impl IntoIterator<Item = (String, Uuid, i32)>) -> Topics {
        let mut result = Topics::default();
        for (name, id, partitions) in topics {
            result.by_id.insert(id, name.clone());
            result.by_name.insert(name, (id, partitions));
        }
        result
    }

    /// The id and partition count of the topic called `name`.
    pub fn get(&self, name: &str) -> Option<(Uuid, i32)> {
        self.by_name.get(name).copied()
    }

    /// The name of the topic with id `id`.
    pub fn name(&self, id: &Uuid) -> Option<&str> {
        self.by_id.get(id).map(String::as_str)
    }

    /// The partition count of the topic with id `id`.
    pub fn partition_count(&self, id: &Uuid) -> Option<i32> {
        self.name(id)
            .and_then(|name| self.get(name))
            .map(|(_, count)| count)
    }

    /// Every topic: name, id, partition count, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Uuid, i32)> {
        self.by_name
            .iter()
            .map(|(name, (id, count))| (name.as_str(), *id, *count))
    }
}

/// The group settings the broker applies (Kafka's `group.consumer.*` configs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.session.timeout.ms`: a member that does not heartbeat for
    /// this long is fenced.
    pub session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`, sent to the members.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub max_size: i32,
    /// `group.consumer.assignors`: the first is the default. Names other than
    /// `uniform` and `range` are ignored.
    pub assignors: Vec<String>,
}

impl Default for ConsumerGroupConfig {
    /// Kafka's defaults: 45 s session, 5 s heartbeat, no practical size limit,
    /// `uniform` then `range`.
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            max_size: i32::MAX,
            assignors: vec![assignor::UNIFORM.to_string(), assignor::RANGE.to_string()],
        }
    }
}

impl ConsumerGroupConfig {
    /// The configured assignors this crate implements, in order; both when none is.
    fn supported_assignors(&self) -> Vec<&str> {
        let names: Vec<&str> = self
            .assignors
            .iter()
            .map(String::as_str)
            .filter(|name| assignor::is_supported(name))
            .collect();
        if names.is_empty() {
            assignor::SUPPORTED_ASSIGNORS.to_vec()
        } else {
            names
        }
    }
}

/// The state of a consumer group, as ListGroups and the describe APIs name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch is ahead of the target assignment.
    Assigning,
    /// Some member has not reached the target assignment yet.
    Reconciling,
    /// Every member has its target assignment.
    Stable,
    /// The group was deleted.
    Dead,
}

impl ConsumerGroupState {
    /// `Empty`, `Assigning`, `Reconciling`, `Stable` or `Dead`, as Kafka prints them.
    pub fn as_str(&self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
            ConsumerGroupState::Dead => "Dead",
        }
    }
}

impl std::fmt::Display for ConsumerGroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a member is in its reconciliation (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// The member has its target assignment at the target epoch.
    Stable,
    /// The member must revoke partitions before it advances.
    UnrevokedPartitions,
    /// The member waits for partitions other members have not released yet.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's names: `STABLE`, `UNREVOKED_PARTITIONS`, `UNRELEASED_PARTITIONS`.
    pub fn as_str(&self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    member_id: String,
    instance_id: Option<String>,
    rack_id: Option<String>,
    client_id: String,
    client_host: String,
    rebalance_timeout_ms: i32,
    subscribed_topic_names: BTreeSet<String>,
    subscribed_topic_regex: Option<String>,
    server_assignor: Option<String>,
    member_epoch: i32,
    previous_member_epoch: i32,
    state: MemberState,
    assigned: TopicPartitions,
    pending_revocation: TopicPartitions,
    session_deadline_ms: i64,
    rebalance_deadline_ms: Option<i64>,
    /// Set for a member that uses the classic protocol (JoinGroup/SyncGroup/
    /// Heartbeat) in this consumer group (Kafka's `classicMemberMetadata`).
    classic: Option<ClassicMetadata>,
    /// Classic members: fenced unless they rejoin by then (set when they are told
    /// REBALANCE_IN_PROGRESS; Kafka's join timeout).
    join_deadline_ms: Option<i64>,
    /// Classic members: fenced unless they send SyncGroup by then (set by their
    /// JoinGroup; Kafka's sync timeout).
    sync_deadline_ms: Option<i64>,
}

/// What a classic member sent in its last JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClassicMetadata {
    session_timeout_ms: i32,
    /// Its protocols (name, ConsumerProtocolSubscription bytes), in its order.
    protocols: Vec<(String, Bytes)>,
}

impl Member {
    fn new(member_id: String) -> Member {
        Member {
            member_id,
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: None,
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            assigned: BTreeMap::new(),
            pending_revocation: BTreeMap::new(),
            session_deadline_ms: i64::MAX,
            rebalance_deadline_ms: None,
            classic: None,
            join_deadline_ms: None,
            sync_deadline_ms: None,
        }
    }

    fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }

    fn update_member_epoch(&mut self, epoch: i32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }
}

/// A read-only view of one member, for DescribeGroups, ListGroups and the CLI.
#[derive(Debug, Clone, Copy)]
pub struct MemberView<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub rack_id: Option<&'a str>,
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub member_epoch: i32,
    pub state: MemberState,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<&'a str>,
    /// The subscribed topic names (sorted).
    pub subscribed_topic_names: &'a BTreeSet<String>,
    pub subscribed_topic_regex: Option<&'a str>,
    /// The partitions the member owns now, by topic id.
    pub assigned: &'a TopicPartitions,
    /// The partitions the member has been asked to revoke and still owns.
    pub pending_revocation: &'a TopicPartitions,
    /// The member's target assignment, by topic id.
    pub target: Option<&'a TopicPartitions>,
    /// Whether the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat)
    /// inside this consumer group. Such a member may commit offsets with
    /// OffsetCommit versions below 9, and its generation is its member epoch.
    pub uses_classic_protocol: bool,
    /// A classic member's session timeout (from its JoinGroup).
    pub classic_session_timeout_ms: Option<i32>,
    /// A classic member's protocols (name, ConsumerProtocolSubscription bytes).
    pub classic_protocols: Option<&'a [(String, Bytes)]>,
}

/// A heartbeat error: the Kafka error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Refusal {
    code: i16,
    message: String,
}

fn refuse<T>(error: ResponseError, message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        code: error.code(),
        message: message.into(),
    })
}

/// Java's `String.trim().isEmpty()`: every character at or below U+0020.
fn is_blank(value: &str) -> bool {
    value.chars().all(|c| c <= ' ')
}

/// A KIP-848 consumer group.
#[derive(Debug)]
pub struct ConsumerGroup {
    group_id: String,
    group_epoch: i32,
    assignment_epoch: i32,
    dead: bool,
    members: BTreeMap<String, Member>,
    /// Instance id -> member id of the static members.
    static_members: HashMap<String, String>,
    /// The target assignment of each member.
    target: BTreeMap<String, TopicPartitions>,
    /// Partition -> the member that owns it (assigned or pending revocation);
    /// Kafka's `currentPartitionEpoch` map.
    owners: HashMap<(Uuid, i32), String>,
    /// Subscribed topic name -> (id, partition count), as last seen.
    subscription_metadata: BTreeMap<String, (Uuid, i32)>,
    /// Compiled subscription regexes (anchored: a topic must match in full).
    regexes: HashMap<String, Regex>,
    default_assignor: String,
    member_id_counter: u64,
    /// Topic id -> name of the topics the members own or are assigned, as last
    /// seen in the metadata; kept only while classic members are there, to encode
    /// their assignments (SyncGroup, downgrade) without a metadata image.
    topic_names: HashMap<Uuid, String>,
    /// The hash of `subscription_metadata` written in the group metadata record
    /// (Kafka 4.1's `metadataHash`); 0 when there is none.
    metadata_hash: i64,
    /// False after a replay until a heartbeat computed the subscription metadata
    /// again: the replayed `metadata_hash` then tells whether it changed.
    metadata_known: bool,
    /// A ConsumerGroupPartitionMetadata value (written by Kafka before 4.1) was
    /// replayed and not tombstoned yet: the next group epoch record comes with its
    /// tombstone (Kafka's `hasSubscriptionMetadataRecord`).
    has_subscription_metadata_record: bool,
    /// The group epoch and metadata hash last written (or replayed); `None` when
    /// none was.
    written_epoch: Option<(i32, i64)>,
    /// The target assignment epoch last written (or replayed).
    written_assignment_epoch: Option<i32>,
    /// What changed since the last [`ConsumerGroup::take_records`].
    changes: Changes,
}

/// The changes not yet turned into records (see [`ConsumerGroup::take_records`]).
#[derive(Debug, Default)]
struct Changes {
    /// Members removed, in removal order: their records are tombstoned.
    removed: Vec<String>,
    /// Members whose metadata (subscription, client, classic metadata) changed.
    metadata: BTreeSet<String>,
    /// Members whose target assignment changed.
    target: BTreeSet<String>,
    /// Members whose current assignment or epochs changed.
    current: BTreeSet<String>,
    /// Set when the group was deleted: the members whose records to tombstone.
    deleted: Option<BTreeSet<String>>,
}

impl ConsumerGroup {
    /// An empty group at epoch 0.
    pub fn new(group_id: String) -> ConsumerGroup {
        ConsumerGroup {
            group_id,
            group_epoch: 0,
            assignment_epoch: 0,
            dead: false,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            target: BTreeMap::new(),
            owners: HashMap::new(),
            subscription_metadata: BTreeMap::new(),
            regexes: HashMap::new(),
            default_assignor: assignor::UNIFORM.to_string(),
            member_id_counter: 0,
            topic_names: HashMap::new(),
            metadata_hash: 0,
            metadata_known: true,
            has_subscription_metadata_record: false,
            written_epoch: Some((0, 0)),
            written_assignment_epoch: Some(0),
            changes: Changes::default(),
        }
    }

    /// The group id.
    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    /// The group epoch: bumped on every membership, subscription or subscribed
    /// metadata change.
    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }

    /// The epoch of the current target assignment.
    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }

    /// Whether the group has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The state, as Kafka's `ConsumerGroup.maybeUpdateGroupState` computes it.
    pub fn state(&self) -> ConsumerGroupState {
        if self.dead {
            ConsumerGroupState::Dead
        } else if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// Marks the group deleted (DeleteGroups, or a downgrade to a classic group once
    /// [`ConsumerGroup::to_classic`] was taken): its members are dropped and its state
    /// is `Dead` from then on. The next [`ConsumerGroup::take_records`] gives the
    /// tombstones of all its records.
    pub fn mark_dead(&mut self) {
        let deleted = self.changes.deleted.get_or_insert_with(BTreeSet::new);
        deleted.extend(self.members.keys().cloned());
        deleted.extend(self.target.keys().cloned());
        self.members.clear();
        self.static_members.clear();
        self.target.clear();
        self.owners.clear();
        self.dead = true;
    }

    /// The members, in member id order.
    pub fn members(&self) -> impl Iterator<Item = MemberView<'_>> {
        self.members.values().map(|m| MemberView {
            member_id: &m.member_id,
            instance_id: m.instance_id.as_deref(),
            rack_id: m.rack_id.as_deref(),
            client_id: &m.client_id,
            client_host: &m.client_host,
            member_epoch: m.member_epoch,
            state: m.state,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: m.server_assignor.as_deref(),
            subscribed_topic_names: &m.subscribed_topic_names,
            subscribed_topic_regex: m.subscribed_topic_regex.as_deref(),
            assigned: &m.assigned,
            pending_revocation: &m.pending_revocation,
            target: self.target.get(&m.member_id),
            uses_classic_protocol: m.classic.is_some(),
            classic_session_timeout_ms: m.classic.as_ref().map(|c| c.session_timeout_ms),
            classic_protocols: m.classic.as_ref().map(|c| c.protocols.as_slice()),
        })
    }

    /// The assignor the group uses: the supported one most members ask for (ties
    /// go to the earlier one in the config), else the configured default.
    pub fn assignor_name(&self) -> &str {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = member.server_assignor.as_deref()
                && assignor::is_supported(name)
            {
                *counts.entry(name).or_default() += 1;
            }
        }
        let rank = |name: &str| {
            if name == self.default_assignor {
                0
            } else if name == assignor::UNIFORM {
                1
            } else {
                2
            }
        };
        counts
            .into_iter()
            .max_by(|(a, ca), (b, cb)| ca.cmp(cb).then(rank(b).cmp(&rank(a))))
            .map(|(name, _)| name)
            .unwrap_or(&self.default_assignor)
    }

    /// Removes a member (an admin LeaveGroup, or the broker dropping it), bumping
    /// the group epoch as Kafka's fencing does. False if there is no such member.
    pub fn remove_member(&mut self, member_id: &str) -> bool {
        if self.members.contains_key(member_id) {
            self.fence(member_id);
            true
        } else {
            false
        }
    }

    /// Fences members whose session expired (no heartbeat for the session timeout;
    /// a classic member's own session timeout), consumer-protocol members that did
    /// not revoke partitions within their rebalance timeout, and classic members
    /// that did not rejoin (after REBALANCE_IN_PROGRESS) or sync (after their
    /// JoinGroup) within their rebalance timeout. Returns the ids fenced, sorted.
    /// When it fenced someone, the broker checks [`ConsumerGroup::to_classic`].
    pub fn expire(&mut self, now_ms: i64) -> Vec<String> {
        let expired: Vec<String> = self
            .members
            .values()
            .filter(|m| {
                let due = |deadline: Option<i64>| deadline.is_some_and(|d| d <= now_ms);
                m.session_deadline_ms <= now_ms
                    || (m.classic.is_none()
                        && m.state == MemberState::UnrevokedPartitions
                        && due(m.rebalance_deadline_ms))
                    || due(m.join_deadline_ms)
                    || due(m.sync_deadline_ms)
            })
            .map(|m| m.member_id.clone())
            .collect();
        for member_id in &expired {
            tracing::info!(group = %self.group_id, member = %member_id, "member fenced: session or rebalance timeout");
            self.fence(member_id);
        }
        expired
    }

    /// The earliest time at which [`ConsumerGroup::expire`] has something to do,
    /// if any member is there; lets the broker schedule its timer.
    pub fn next_deadline_ms(&self) -> Option<i64> {
        self.members
            .values()
            .flat_map(|m| {
                let rebalance = m
                    .rebalance_deadline_ms
                    .filter(|_| m.classic.is_none() && m.state == MemberState::UnrevokedPartitions);
                std::iter::once(m.session_deadline_ms)
                    .chain(rebalance)
                    .chain(m.join_deadline_ms)
                    .chain(m.sync_deadline_ms)
            })
            .min()
    }

    /// OffsetCommit/OffsetFetch checks (Kafka's `ConsumerGroup.validateOffsetCommit`):
    /// a negative epoch (admin or unmanaged consumer) is allowed only when the
    /// group is empty; otherwise the member must exist (`UNKNOWN_MEMBER_ID`) and the
    /// epoch match its epoch (`STALE_MEMBER_EPOCH`; `ILLEGAL_GENERATION` for a
    /// classic member, whose generation is its member epoch). The instance id is
    /// not checked, as in Kafka. The OffsetCommit version check (v9+ for
    /// consumer-protocol members, see [`MemberView::uses_classic_protocol`]) is the
    /// broker's.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        group_instance_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), i16> {
        let _ = group_instance_id;
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let Some(member) = self.members.get(member_id) else {
            return Err(ResponseError::UnknownMemberId.code());
        };
        if member.member_epoch != member_epoch {
            return Err(if member.classic.is_some() {
                ResponseError::IllegalGeneration.code()
            } else {
                ResponseError::StaleMemberEpoch.code()
            });
        }
        Ok(())
    }

    /// The group for ConsumerGroupDescribe. `authorized_operations` is left at its
    /// default for the broker to fill; topics missing from `topics` are left out
    /// of the assignments.
    pub fn describe(&self, topics: &Topics) -> DescribedGroup {
        let to_describe = |assignment: Option<&TopicPartitions>| {
            let mut result = DescribeAssignment::default();
            result.topic_partitions = assignment
                .into_iter()
                .flatten()
                .filter_map(|(id, partitions)| {
                    topics.name(id).map(|name| {
                        let mut tp = DescribeTopicPartitions::default();
                        tp.topic_id = *id;
                        tp.topic_name = TopicName(StrBytes::from_string(name.to_string()));
                        tp.partitions = partitions.iter().copied().collect();
                        tp
                    })
                })
                .collect();
            result
        };
        let mut group = DescribedGroup::default();
        group.group_id = GroupId(StrBytes::from_string(self.group_id.clone()));
        group.group_state = StrBytes::from_static_str(self.state().as_str());
        group.group_epoch = self.group_epoch;
        group.assignment_epoch = self.assignment_epoch;
        group.assignor_name = StrBytes::from_string(self.assignor_name().to_string());
        group.members = self
            .members
            .values()
            .map(|m| {
                let mut member = DescribeMember::default();
                member.member_id = StrBytes::from_string(m.member_id.clone());
                member.instance_id = m.instance_id.clone().map(StrBytes::from_string);
                member.rack_id = m.rack_id.clone().map(StrBytes::from_string);
                member.member_epoch = m.member_epoch;
                member.client_id = StrBytes::from_string(m.client_id.clone());
                member.client_host = StrBytes::from_string(m.client_host.clone());
                member.subscribed_topic_names = m
                    .subscribed_topic_names
                    .iter()
                    .map(|name| TopicName(StrBytes::from_string(name.clone())))
                    .collect();
                member.subscribed_topic_regex =
                    m.subscribed_topic_regex.clone().map(StrBytes::from_string);
                member.assignment = to_describe(Some(&m.assigned));
                member.target_assignment = to_describe(self.target.get(&m.member_id));
                member.member_type = if m.classic.is_some() {
                    MEMBER_TYPE_CLASSIC
                } else {
                    MEMBER_TYPE_CONSUMER
                };
                member
            })
            .collect();
        group
    }

    /// Serves one ConsumerGroupHeartbeat. `version` is the request version;
    /// `client_id` and `client_host` come from the request header and the
    /// connection (Kafka shows the host as `/a.b.c.d`). Errors are in the
    /// response's `error_code`/`error_message`, with the rest of the response at
    /// its defaults; a refused request changes nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn heartbeat(
        &mut self,
        version: i16,
        request: &ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> ConsumerGroupHeartbeatResponse {
        if let Some(default) = config.supported_assignors().first() {
            self.default_assignor = default.to_string();
        }
        let result = validate_request(version, request, config).and_then(|()| {
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
                || request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
            {
                self.leave(request, config, now_ms)
            } else {
                self.regular_heartbeat(request, client_id, client_host, topics, config, now_ms)
            }
        });
        self.refresh_topic_names(topics);
        match result {
            Ok(response) => response,
            Err(refusal) => {
                let mut response = ConsumerGroupHeartbeatResponse::default();
                response.error_code = refusal.code;
                response.error_message = Some(StrBytes::from_string(refusal.message));
                response
            }
        }
    }

    fn leave(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let member_id = request.member_id.as_str();
        match request.instance_id.as_deref() {
            None => {
                if !self.members.contains_key(member_id) {
                    return self.unknown_member(member_id);
                }
                tracing::info!(group = %self.group_id, member = %member_id, "member left the consumer group");
                self.fence(member_id);
            }
            Some(instance_id) => {
                let existing = self.static_member(instance_id, member_id)?;
                if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    // The static member keeps its assignment (and its target) until
                    // it comes back or its session expires.
                    tracing::info!(group = %self.group_id, member = %member_id, instance = %instance_id, "static member temporarily left the consumer group");
                    self.unindex(&existing);
                    let mut member = self
                        .members
                        .get(&existing)
                        .cloned()
                        .unwrap_or_else(|| Member::new(existing.clone()));
                    member.update_member_epoch(LEAVE_GROUP_STATIC_MEMBER_EPOCH);
                    member.pending_revocation.clear();
                    member.state = MemberState::Stable;
                    member.rebalance_deadline_ms = None;
                    member.session_deadline_ms =
                        now_ms.saturating_add(i64::from(config.session_timeout_ms));
                    self.index(&member);
                    self.put_member(member);
                } else {
                    tracing::info!(group = %self.group_id, member = %member_id, instance = %instance_id, "static member left the consumer group");
                    self.fence(&existing);
                }
            }
        }
        let mut response = ConsumerGroupHeartbeatResponse::default();
        response.member_id = Some(request.member_id.clone());
        response.member_epoch = request.member_epoch;
        Ok(response)
    }

    fn unknown_member<T>(&self, member_id: &str) -> Result<T, Refusal> {
        refuse(
            ResponseError::UnknownMemberId,
            format!(
                "Member {member_id} is not a member of group {}.",
                self.group_id
            ),
        )
    }

    /// The member id of the static member `instance_id`, which must be
    /// `member_id` (Kafka's `throwIfStaticMemberIsUnknown` and
    /// `throwIfInstanceIdIsFenced`).
    fn static_member(&self, instance_id: &str, member_id: &str) -> Result<String, Refusal> {
        let Some(existing) = self.static_members.get(instance_id) else {
            return refuse(
                ResponseError::UnknownMemberId,
                format!("Instance id {instance_id} is unknown."),
            );
        };
        if existing != member_id {
            return refuse(
                ResponseError::FencedInstanceId,
                format!(
                    "Static member {member_id} with instance id {instance_id} was fenced by member {existing}."
                ),
            );
        }
        Ok(existing.clone())
    }

    fn regular_heartbeat(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let member_epoch = request.member_epoch;
        let owned = request.topic_partitions.as_deref();
        let joining = member_epoch == 0;

        // The group's capacity.
        let requested_id = request.member_id.as_str();
        if self.members.len() as i64 >= i64::from(config.max_size)
            && (requested_id.is_empty() || !self.members.contains_key(requested_id))
        {
            return refuse(
                ResponseError::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    config.max_size
                ),
            );
        }

        // Get or create the member; nothing changes until every check passed.
        let member_id = if requested_id.is_empty() {
            self.generate_member_id(now_ms)
        } else {
            requested_id.to_string()
        };
        let mut replaced: Option<String> = None;
        let member: Member = match request.instance_id.as_deref() {
            None => match self.members.get(&member_id) {
                Some(existing) => {
                    check_member_epoch(existing, member_epoch, owned)?;
                    existing.clone()
                }
                None if joining => Member::new(member_id.clone()),
                None => return self.unknown_member(&member_id),
            },
            Some(instance_id) => {
                let existing = self
                    .static_members
                    .get(instance_id)
                    .and_then(|id| self.members.get(id));
                if joining {
                    match existing {
                        None => self
                            .members
                            .get(&member_id)
                            .cloned()
                            .unwrap_or_else(|| Member::new(member_id.clone())),
                        Some(existing) => {
                            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                                return refuse(
                                    ResponseError::UnreleasedInstanceId,
                                    format!(
                                        "Static member {member_id} with instance id {instance_id} cannot join the group because the instance id is owned by {} member.",
                                        existing.member_id
                                    ),
                                );
                            }
                            // The member comes back: it takes over the previous
                            // instance's assignment under its new member id.
                            let mut copy = existing.clone();
                            copy.member_id = member_id.clone();
                            copy.member_epoch = 0;
                            copy.previous_member_epoch = 0;
                            copy.state = MemberState::Stable;
                            copy.rebalance_deadline_ms = None;
                            if existing.member_id != member_id {
                                replaced = Some(existing.member_id.clone());
                            }
                            copy
                        }
                    }
                } else {
                    let existing_id = self.static_member(instance_id, &member_id)?;
                    let existing = &self.members[&existing_id];
                    check_member_epoch(existing, member_epoch, owned)?;
                    existing.clone()
                }
            }
        };

        // The member with the request's fields.
        let mut updated = member.clone();
        if let Some(instance_id) = &request.instance_id {
            updated.instance_id = Some(instance_id.to_string());
        }
        if let Some(rack_id) = &request.rack_id {
            updated.rack_id = Some(rack_id.to_string());
        }
        if request.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        if let Some(name) = &request.server_assignor {
            updated.server_assignor = Some(name.to_string());
        }
        if let Some(names) = &request.subscribed_topic_names {
            updated.subscribed_topic_names = names.iter().map(|name| name.to_string()).collect();
        }
        if let Some(regex) = &request.subscribed_topic_regex {
            updated.subscribed_topic_regex = (!regex.is_empty()).then(|| regex.to_string());
        }
        updated.client_id = client_id.to_string();
        updated.client_host = client_host.to_string();
        // A ConsumerGroupHeartbeat makes the member a consumer-protocol member.
        updated.classic = None;
        updated.join_deadline_ms = None;
        updated.sync_deadline_ms = None;

        let regex_changed = updated.subscribed_topic_regex != member.subscribed_topic_regex;
        if regex_changed && let Some(regex) = &updated.subscribed_topic_regex {
            self.compile_regex(regex)?;
        }
        let subscription_changed =
            updated.subscribed_topic_names != member.subscribed_topic_names || regex_changed;

        // Every check passed: apply.
        self.apply_member(
            &member_id,
            replaced.as_deref(),
            updated,
            subscription_changed,
            topics,
        );

        // Reconcile the member toward its target.
        let current = self.members[&member_id].clone();
        let mut reconciled = if current.is_reconciled_to(self.assignment_epoch) {
            current.clone()
        } else {
            let target = self.target.get(&member_id).cloned().unwrap_or_default();
            self.reconcile(&current, self.assignment_epoch, &target, owned)
        };
        if reconciled != current {
            if reconciled.state == MemberState::UnrevokedPartitions {
                reconciled.rebalance_deadline_ms =
                    Some(now_ms.saturating_add(i64::from(reconciled.rebalance_timeout_ms.max(0))));
            } else {
                reconciled.rebalance_deadline_ms = None;
            }
        }
        reconciled.session_deadline_ms =
            now_ms.saturating_add(i64::from(config.session_timeout_ms));
        self.unindex(&member_id);
        self.index(&reconciled);

        let full_request = request.rebalance_timeout_ms != -1
            && (request.subscribed_topic_names.is_some()
                || request.subscribed_topic_regex.is_some())
            && request.topic_partitions.is_some();
        let assignment =
            (joining || full_request || reconciled.assigned != member.assigned).then(|| {
                let mut assignment = ResponseAssignment::default();
                assignment.topic_partitions = reconciled
                    .assigned
                    .iter()
                    .map(|(id, partitions)| {
                        let mut tp = ResponseTopicPartitions::default();
                        tp.topic_id = *id;
                        tp.partitions = partitions.iter().copied().collect();
                        tp
                    })
                    .collect();
                assignment
            });
        let mut response = ConsumerGroupHeartbeatResponse::default();
        response.member_id = Some(StrBytes::from_string(member_id.clone()));
        response.member_epoch = reconciled.member_epoch;
        response.heartbeat_interval_ms = config.heartbeat_interval_ms;
        response.assignment = assignment;
        self.put_member(reconciled);
        Ok(response)
    }

    /// Kafka's `CurrentAssignmentBuilder.build`.
    fn reconcile(
        &self,
        member: &Member,
        target_epoch: i32,
        target: &TopicPartitions,
        owned: Option<&[RequestTopicPartitions]>,
    ) -> Member {
        match member.state {
            MemberState::UnrevokedPartitions => {
                if owns_any(owned, &member.pending_revocation) {
                    return member.clone();
                }
                let epoch = member.member_epoch.saturating_add(1).min(target_epoch);
                self.compute_next_assignment(member, epoch, target_epoch, target, owned)
            }
            MemberState::UnreleasedPartitions | MemberState::Stable => {
                if member.is_reconciled_to(target_epoch) {
                    return member.clone();
                }
                self.compute_next_assignment(
                    member,
                    member.member_epoch,
                    target_epoch,
                    target,
                    owned,
                )
            }
        }
    }

    /// Kafka's `CurrentAssignmentBuilder.computeNextAssignment`.
    fn compute_next_assignment(
        &self,
        member: &Member,
        member_epoch: i32,
        target_epoch: i32,
        target: &TopicPartitions,
        owned: Option<&[RequestTopicPartitions]>,
    ) -> Member {
        let mut has_unreleased = false;
        let mut new_assigned: TopicPartitions = BTreeMap::new();
        let mut new_revocation: TopicPartitions = BTreeMap::new();
        let mut new_pending_assignment: TopicPartitions = BTreeMap::new();
        let empty = BTreeSet::new();
        let topic_ids: BTreeSet<Uuid> = target
            .keys()
            .chain(member.assigned.keys())
            .copied()
            .collect();
        for topic_id in topic_ids {
            let target_partitions = target.get(&topic_id).unwrap_or(&empty);
            let current = member.assigned.get(&topic_id).unwrap_or(&empty);
            let own_revocation = member.pending_revocation.get(&topic_id).unwrap_or(&empty);
            let kept: BTreeSet<i32> = current.intersection(target_partitions).copied().collect();
            let revoke: BTreeSet<i32> = current.difference(&kept).copied().collect();
            let mut pending: BTreeSet<i32> = target_partitions.difference(&kept).copied().collect();
            let before = pending.len();
            pending.retain(|p| {
                !self.owners.contains_key(&(topic_id, *p)) || own_revocation.contains(p)
            });
            has_unreleased |= pending.len() != before;
            if !kept.is_empty() {
                new_assigned.insert(topic_id, kept);
            }
            if !revoke.is_empty() {
                new_revocation.insert(topic_id, revoke);
            }
            if !pending.is_empty() {
                new_pending_assignment.insert(topic_id, pending);
            }
        }

        let mut next = member.clone();
        if !new_revocation.is_empty() && owns_any(owned, &new_revocation) {
            // Revoke first: the member stays in its epoch until it acknowledges.
            next.state = MemberState::UnrevokedPartitions;
            next.update_member_epoch(member_epoch);
            next.assigned = new_assigned;
            next.pending_revocation = new_revocation;
        } else {
            for (topic_id, partitions) in new_pending_assignment {
                new_assigned.entry(topic_id).or_default().extend(partitions);
            }
            next.state = if has_unreleased {
                MemberState::UnreleasedPartitions
            } else {
                MemberState::Stable
            };
            next.update_member_epoch(target_epoch);
            next.assigned = new_assigned;
            next.pending_revocation = BTreeMap::new();
        }
        next
    }

    /// Recomputes the target assignment at the group epoch.
    fn update_target_assignment(&mut self, topics: &Topics) {
        let name = self.assignor_name().to_string();
        let mut inputs: BTreeMap<String, AssignmentMember> = BTreeMap::new();
        let mut counts: BTreeMap<Uuid, i32> = BTreeMap::new();
        for member in self.members.values() {
            let subscribed = self.member_topics(member, topics);
            let mut ids = BTreeSet::new();
            for name in subscribed {
                if let Some((id, count)) = topics.get(&name) {
                    ids.insert(id);
                    counts.insert(id, count);
                }
            }
            inputs.insert(
                member.member_id.clone(),
                AssignmentMember {
                    subscribed_topic_ids: ids,
                    current: self
                        .target
                        .get(&member.member_id)
                        .cloned()
                        .unwrap_or_default(),
                },
            );
        }
        let result = assignor::assign(&name, &inputs, &counts)
            .unwrap_or_else(|| assignor::uniform(&inputs, &counts));
        for (member_id, partitions) in &result {
            if self.target.get(member_id) != Some(partitions) {
                self.changes.target.insert(member_id.clone());
            }
        }
        self.target = result;
        self.assignment_epoch = self.group_epoch;
        tracing::debug!(group = %self.group_id, epoch = self.group_epoch, assignor = %name, "computed target assignment");
    }

    /// The topic names a member subscribes to: its names and the topics its regex
    /// matches.
    fn member_topics(&self, member: &Member, topics: &Topics) -> BTreeSet<String> {
        let mut names = member.subscribed_topic_names.clone();
        if let Some(regex) = member
            .subscribed_topic_regex
            .as_ref()
            .and_then(|r| self.regexes.get(r))
        {
            for (name, _, _) in topics.iter() {
                if regex.is_match(name) {
                    names.insert(name.to_string());
                }
            }
        }
        names
    }

    fn compute_subscription_metadata(&self, topics: &Topics) -> BTreeMap<String, (Uuid, i32)> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut regexes: BTreeSet<&str> = BTreeSet::new();
        for member in self.members.values() {
            names.extend(member.subscribed_topic_names.iter().cloned());
            if let Some(regex) = &member.subscribed_topic_regex {
                regexes.insert(regex);
            }
        }
        let compiled: Vec<&Regex> = regexes
            .iter()
            .filter_map(|r| self.regexes.get(*r))
            .collect();
        if !compiled.is_empty() {
            for (name, _, _) in topics.iter() {
                if compiled.iter().any(|regex| regex.is_match(name)) {
                    names.insert(name.to_string());
                }
            }
        }
        names
            .into_iter()
            .filter_map(|name| topics.get(&name).map(|metadata| (name, metadata)))
            .collect()
    }

    /// Compiles `regex` (RE2 syntax like Kafka's RE2/J; a topic must match it in
    /// full) or answers INVALID_REGULAR_EXPRESSION.
    fn compile_regex(&mut self, regex: &str) -> Result<(), Refusal> {
        if self.regexes.contains_key(regex) {
            return Ok(());
        }
        if let Err(error) = Regex::new(regex) {
            return refuse(
                ResponseError::InvalidRegularExpression,
                format!(
                    "SubscribedTopicRegex `{regex}` is not a valid regular expression: {error}."
                ),
            );
        }
        match Regex::new(&format!("^(?:{regex})$")) {
            Ok(anchored) => {
                self.regexes.insert(regex.to_string(), anchored);
                Ok(())
            }
            Err(error) => refuse(
                ResponseError::InvalidRegularExpression,
                format!(
                    "SubscribedTopicRegex `{regex}` is not a valid regular expression: {error}."
                ),
            ),
        }
    }

    /// Drops the compiled regexes no member uses any more.
    fn prune_regexes(&mut self) {
        if self.regexes.is_empty() {
            return;
        }
        let used: BTreeSet<&String> = self
            .members
            .values()
            .filter_map(|m| m.subscribed_topic_regex.as_ref())
            .collect();
        self.regexes.retain(|regex, _| used.contains(regex));
    }

    /// Removes a member and bumps the group epoch (Kafka's
    /// `consumerGroupFenceMember`).
    fn fence(&mut self, member_id: &str) {
        self.unindex(member_id);
        if self.members.contains_key(member_id) {
            self.changes.removed.push(member_id.to_string());
        }
        if let Some(member) = self.members.remove(member_id)
            && let Some(instance_id) = &member.instance_id
            && self
                .static_members
                .get(instance_id)
                .is_some_and(|id| id == member_id)
        {
            self.static_members.remove(instance_id);
        }
        self.target.remove(member_id);
        self.prune_regexes();
        // Drop the topics only this member subscribed to, as Kafka recomputes the
        // subscription metadata without the fenced member; otherwise the next
        // heartbeat would see a metadata change and bump the epoch once more.
        let keep: BTreeSet<String> = self
            .subscription_metadata
            .keys()
            .filter(|name| {
                self.members.values().any(|m| {
                    m.subscribed_topic_names.contains(*name)
                        || m.subscribed_topic_regex
                            .as_ref()
                            .and_then(|r| self.regexes.get(r))
                            .is_some_and(|regex| regex.is_match(name))
                })
            })
            .cloned()
            .collect();
        self.subscription_metadata
            .retain(|name, _| keep.contains(name));
        if self.metadata_known {
            self.metadata_hash = metadata_hash(&self.subscription_metadata);
        }
        self.group_epoch += 1;
        tracing::info!(group = %self.group_id, member = %member_id, epoch = self.group_epoch, "member removed, bumped group epoch");
    }

    /// Records the partitions a member owns (assigned and pending revocation).
    fn index(&mut self, member: &Member) {
        for assignment in [&member.assigned, &member.pending_revocation] {
            for (topic_id, partitions) in assignment {
                for partition in partitions {
                    self.owners
                        .insert((*topic_id, *partition), member.member_id.clone());
                }
            }
        }
    }

    /// Forgets the partitions the stored member `member_id` owns.
    fn unindex(&mut self, member_id: &str) {
        let Some(member) = self.members.get(member_id) else {
            return;
        };
        for assignment in [&member.assigned, &member.pending_revocation] {
            for (topic_id, partitions) in assignment {
                for partition in partitions {
                    let key = (*topic_id, *partition);
                    if self
                        .owners
                        .get(&key)
                        .is_some_and(|owner| owner == member_id)
                    {
                        self.owners.remove(&key);
                    }
                }
            }
        }
    }

    /// A new member id in Kafka's `Uuid.toString` form (22 characters of URL-safe
    /// base64), random, never starting with `-`.
    fn generate_member_id(&mut self, now_ms: i64) -> String {
        loop {
            self.member_id_counter = self.member_id_counter.wrapping_add(1);
            let mut bytes = [0u8; 16];
            for (half, chunk) in bytes.chunks_mut(8).enumerate() {
                let mut hasher = RandomState::new().build_hasher();
                hasher.write(self.group_id.as_bytes());
                hasher.write_u64(self.member_id_counter);
                hasher.write_i64(now_ms);
                hasher.write_usize(half);
                chunk.copy_from_slice(&hasher.finish().to_le_bytes());
            }
            let id = base64_url(&bytes);
            if !id.starts_with('-') && !self.members.contains_key(&id) {
                return id;
            }
        }
    }
}

/// Classic-protocol members inside a consumer group, and the online migration
/// between classic and consumer groups (KIP-848 "Upgrade & Downgrade", Kafka's
/// `group.consumer.migration.policy=bidirectional`). The types and the protocol
/// helpers are in [`crate::migration`].
impl ConsumerGroup {
    /// Kafka's `validateOnlineUpgrade`: whether the classic group `group_id` may
    /// become a consumer group when a ConsumerGroupHeartbeat joins it. Refused
    /// (GROUP_ID_NOT_FOUND, Kafka's messages) when it does not use the `consumer`
    /// protocol type or has more members than `group.consumer.max.size`. The
    /// migration policy (`group.consumer.migration.policy`) is the broker's; Kafka
    /// does not require the classic group to be Stable.
    pub fn validate_online_upgrade(
        group_id: &str,
        classic: &ClassicSnapshot,
        config: &ConsumerGroupConfig,
    ) -> Result<(), (i16, String)> {
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE {
            return Err(migration::upgrade_refusal(
                group_id,
                "the group does not use the consumer embedded protocol",
            ));
        }
        if classic.members.len() as i64 > i64::from(config.max_size) {
            return Err(migration::upgrade_refusal(
                group_id,
                "the group size exceeds the consumer group maximum size",
            ));
        }
        Ok(())
    }

    /// Online upgrade (Kafka's `ConsumerGroup.fromClassicGroup`): the consumer
    /// group a classic group becomes. Group epoch and target assignment epoch are
    /// the classic generation; every classic member keeps its id, instance id,
    /// client, timeouts and protocols, is Stable at epoch = generation, and its last
    /// assignment becomes both its current and its target assignment (topics
    /// missing from `topics` are dropped; empty assignment bytes mean none).
    ///
    /// Refused with GROUP_ID_NOT_FOUND when the protocol type is not `consumer`,
    /// when a subscription or assignment does not decode, or when an assignment has
    /// user data (a custom client-side assignor, whose data would be lost). The
    /// size check needs the config: see [`ConsumerGroup::validate_online_upgrade`].
    ///
    /// If the classic group's `protocol` is empty (no generation completed yet), a
    /// member's first protocol is used (Kafka would fail with an internal error).
    pub fn from_classic(
        group_id: String,
        classic: &ClassicSnapshot,
        topics: &Topics,
        now_ms: i64,
    ) -> Result<ConsumerGroup, (i16, String)> {
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE {
            return Err(migration::upgrade_refusal(
                &group_id,
                "the group does not use the consumer embedded protocol",
            ));
        }
        let malformed =
            || migration::upgrade_refusal(&group_id, "the embedded consumer protocol is malformed");
        let mut members = Vec::with_capacity(classic.members.len());
        for m in &classic.members {
            let assigned: TopicPartitions = if m.assignment.is_empty() {
                BTreeMap::new()
            } else {
                let assignment =
                    consumer_protocol::decode_assignment(&m.assignment).map_err(|_| malformed())?;
                if assignment.user_data.as_ref().is_some_and(|d| !d.is_empty()) {
                    return Err((
                        ResponseError::GroupIdNotFound.code(),
                        format!(
                            "Cannot upgrade classic group {group_id} to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."
                        ),
                    ));
                }
                migration::to_topic_ids(&assignment.partitions, topics)
            };
            let metadata = m
                .protocols
                .iter()
                .find(|(name, _)| *name == classic.protocol)
                .or_else(|| {
                    classic
                        .protocol
                        .is_empty()
                        .then(|| m.protocols.first())
                        .flatten()
                })
                .ok_or_else(malformed)?;
            let subscription =
                consumer_protocol::decode_subscription(&metadata.1).map_err(|_| malformed())?;
            let mut member = Member::new(m.member_id.clone());
            member.instance_id = m.group_instance_id.clone();
            member.rack_id = subscription.rack_id.filter(|rack| !rack.is_empty());
            member.client_id = m.client_id.clone();
            member.client_host = m.client_host.clone();
            member.rebalance_timeout_ms = m.rebalance_timeout_ms;
            member.subscribed_topic_names = subscription.topics.into_iter().collect();
            member.member_epoch = classic.generation;
            member.previous_member_epoch = classic.generation;
            member.assigned = assigned;
            member.session_deadline_ms =
                now_ms.saturating_add(i64::from(m.session_timeout_ms.max(0)));
            member.classic = Some(ClassicMetadata {
                session_timeout_ms: m.session_timeout_ms,
                protocols: m.protocols.clone(),
            });
            members.push(member);
        }

        let mut group = ConsumerGroup::new(group_id);
        group.group_epoch = classic.generation;
        group.assignment_epoch = classic.generation;
        // Nothing of the new group is written yet (Kafka's `createConsumerGroupRecords`).
        group.written_epoch = None;
        group.written_assignment_epoch = None;
        for member in members {
            if let Some(instance_id) = &member.instance_id {
                group
                    .static_members
                    .insert(instance_id.clone(), member.member_id.clone());
            }
            group
                .target
                .insert(member.member_id.clone(), member.assigned.clone());
            group.changes.target.insert(member.member_id.clone());
            group.index(&member);
            group.put_member(member);
        }
        let metadata = group.compute_subscription_metadata(topics);
        group.update_subscription_metadata(metadata);
        group.refresh_topic_names(topics);
        tracing::info!(group = %group.group_id, epoch = group.group_epoch, members = group.members.len(), "converted the classic group to a consumer group");
        Ok(group)
    }

    /// Online downgrade (Kafka's `validateOnlineDowngrade*` + `ClassicGroup.fromConsumerGroup`):
    /// when the group still has members and all of them use the classic protocol
    /// (the last consumer-protocol member left, was fenced, or was replaced by a
    /// classic static member), the classic group it becomes: generation = group
    /// epoch, protocol type `consumer`, the protocol the members' votes select
    /// (among those all support), no leader, and each member with its protocols and
    /// its target assignment encoded as a ConsumerProtocolAssignment of the version
    /// of its subscription. `None` otherwise. The policy and the
    /// `group.classic.max.size` check are the broker's.
    pub fn to_classic(&self) -> Option<ClassicSnapshot> {
        if self.dead
            || self.members.is_empty()
            || self.members.values().any(|m| m.classic.is_none())
        {
            return None;
        }
        let protocol = migration::select_protocol(
            self.members
                .values()
                .filter_map(|m| m.classic.as_ref())
                .map(|c| c.protocols.as_slice()),
        )?;
        let empty = BTreeMap::new();
        let members = self
            .members
            .values()
            .filter_map(|m| {
                let classic = m.classic.as_ref()?;
                let metadata = classic
                    .protocols
                    .iter()
                    .find(|(name, _)| *name == protocol)
                    .map(|(_, metadata)| metadata.clone())
                    .unwrap_or_default();
                let target = self.target.get(&m.member_id).unwrap_or(&empty);
                Some(ClassicMemberSnapshot {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: classic.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    protocols: classic.protocols.clone(),
                    assignment: self.encode_assignment(target, &metadata),
                })
            })
            .collect();
        Some(ClassicSnapshot {
            generation: self.group_epoch,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            protocol,
            leader: None,
            members,
        })
    }

    /// Serves a JoinGroup (protocol type `consumer`) sent to this consumer group
    /// (Kafka's `classicGroupJoinToConsumerGroup`). It is answered at once, never
    /// waiting for other members: the member is created or updated from its
    /// subscription, the group epoch bumped if its subscription changed, the target
    /// assignment recomputed, and the member reconciled with the owned partitions of
    /// its subscription. The answer: generation = the member's epoch (still the old
    /// one while it must revoke partitions), protocol type `consumer`, protocol name
    /// = the member's first protocol, leader `""` (every classic member is a
    /// follower: it sends SyncGroup without assignments), no member list.
    ///
    /// Errors (with generation -1 and the request's member id): GROUP_MAX_SIZE_REACHED,
    /// INCONSISTENT_GROUP_PROTOCOL (type not `consumer`, or none of its protocols
    /// supported by all classic members), MEMBER_ID_REQUIRED (v4+, no member id nor
    /// instance id; the answer carries the new member id), UNKNOWN_MEMBER_ID /
    /// FENCED_INSTANCE_ID (static member with a member id the group does not know
    /// under its instance id), UNKNOWN_SERVER_ERROR (undecodable subscription).
    /// The session timeout bounds (INVALID_SESSION_TIMEOUT) and the group id checks
    /// are the broker's, before calling this.
    ///
    /// Sets the member's session deadline (its own session timeout) and its sync
    /// deadline (its rebalance timeout). Afterwards the broker checks
    /// [`ConsumerGroup::to_classic`]: a classic static member replacing the last
    /// consumer-protocol member downgrades the group.
    pub fn classic_join(
        &mut self,
        join: &ClassicJoin,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> ClassicJoinResult {
        if let Some(default) = config.supported_assignors().first() {
            self.default_assignor = default.to_string();
        }
        let result = self.try_classic_join(join, topics, config, now_ms);
        self.refresh_topic_names(topics);
        match result {
            Ok(result) => result,
            Err((code, member_id)) => ClassicJoinResult {
                error: code,
                member_id,
                generation: -1,
                protocol_type: None,
                protocol_name: None,
                leader: String::new(),
                skip_assignment: false,
            },
        }
    }

    fn try_classic_join(
        &mut self,
        join: &ClassicJoin,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> Result<ClassicJoinResult, (i16, String)> {
        let refuse = |error: ResponseError| Err((error.code(), join.member_id.clone()));
        let unknown = join.member_id.is_empty();
        let member_id = if unknown {
            self.generate_member_id(now_ms)
        } else {
            join.member_id.clone()
        };
        if self.members.len() as i64 >= i64::from(config.max_size)
            && (unknown || !self.members.contains_key(&member_id))
        {
            return refuse(ResponseError::GroupMaxSizeReached);
        }
        if !self.supports_classic_protocols(&join.protocol_type, &join.protocols) {
            return refuse(ResponseError::InconsistentGroupProtocol);
        }
        if unknown && join.group_instance_id.is_none() && join.version >= 4 {
            tracing::info!(group = %self.group_id, member = %member_id, "classic member with unknown member id joins the consumer group: asking it to rejoin with a new id");
            return Err((ResponseError::MemberIdRequired.code(), member_id));
        }
        let Some((protocol_name, metadata)) = join.protocols.first() else {
            return refuse(ResponseError::InconsistentGroupProtocol);
        };
        let Ok(subscription) = consumer_protocol::decode_subscription(metadata) else {
            return refuse(ResponseError::UnknownServerError);
        };

        // Get or create the member.
        let mut replaced: Option<String> = None;
        let member: Member = match join.group_instance_id.as_deref() {
            None => self
                .members
                .get(&member_id)
                .cloned()
                .unwrap_or_else(|| Member::new(member_id.clone())),
            Some(instance_id) if unknown => {
                match self
                    .static_members
                    .get(instance_id)
                    .and_then(|id| self.members.get(id))
                {
                    None => Member::new(member_id.clone()),
                    Some(existing) => {
                        // A classic static member takes over the instance at once,
                        // whatever the previous one's state (as in Kafka).
                        let mut copy = existing.clone();
                        copy.member_id = member_id.clone();
                        copy.member_epoch = 0;
                        copy.previous_member_epoch = 0;
                        copy.rebalance_deadline_ms = None;
                        replaced = Some(existing.member_id.clone());
                        copy
                    }
                }
            }
            Some(instance_id) => {
                let existing = self
                    .static_member(instance_id, &member_id)
                    .map_err(|refusal| (refusal.code, join.member_id.clone()))?;
                self.members[&existing].clone()
            }
        };

        let mut updated = member.clone();
        if let Some(instance_id) = &join.group_instance_id {
            updated.instance_id = Some(instance_id.clone());
        }
        if let Some(rack_id) = subscription.rack_id.as_ref().filter(|r| !r.is_empty()) {
            updated.rack_id = Some(rack_id.clone());
        }
        if join.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = join.rebalance_timeout_ms;
        }
        updated.subscribed_topic_names = subscription.topics.iter().cloned().collect();
        updated.client_id = join.client_id.clone();
        updated.client_host = join.client_host.clone();
        updated.classic = Some(ClassicMetadata {
            session_timeout_ms: join.session_timeout_ms,
            protocols: join.protocols.clone(),
        });
        let subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex;

        // Apply.
        self.apply_member(
            &member_id,
            replaced.as_deref(),
            updated,
            subscription_changed,
            topics,
        );

        // Reconcile with what the member says it owns.
        let owned: Vec<RequestTopicPartitions> =
            migration::to_topic_ids(&subscription.owned_partitions, topics)
                .into_iter()
                .map(|(topic_id, partitions)| {
                    let mut tp = RequestTopicPartitions::default();
                    tp.topic_id = topic_id;
                    tp.partitions = partitions.into_iter().collect();
                    tp
                })
                .collect();
        let current = self.members[&member_id].clone();
        let mut reconciled = if current.is_reconciled_to(self.assignment_epoch) {
            current
        } else {
            let target = self.target.get(&member_id).cloned().unwrap_or_default();
            self.reconcile(&current, self.assignment_epoch, &target, Some(&owned))
        };
        // Classic members have join and sync timeouts instead of the rebalance one.
        reconciled.rebalance_deadline_ms = None;
        reconciled.join_deadline_ms = None;
        reconciled.sync_deadline_ms =
            Some(now_ms.saturating_add(i64::from(join.rebalance_timeout_ms.max(0))));
        reconciled.session_deadline_ms =
            now_ms.saturating_add(i64::from(join.session_timeout_ms.max(0)));
        self.unindex(&member_id);
        self.index(&reconciled);
        let generation = reconciled.member_epoch;
        self.put_member(reconciled);

        Ok(ClassicJoinResult {
            error: 0,
            member_id,
            generation,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(protocol_name.clone()),
            leader: String::new(),
            skip_assignment: false,
        })
    }

    /// Serves a SyncGroup from a classic member (Kafka's
    /// `classicGroupSyncToConsumerGroup`), at once: its current assignment (without
    /// the partitions it must revoke) as ConsumerProtocolAssignment bytes of the
    /// version of its subscription. Errors: UNKNOWN_MEMBER_ID (unknown member or
    /// instance, or a consumer-protocol member), FENCED_INSTANCE_ID,
    /// ILLEGAL_GENERATION (generation != member epoch), INCONSISTENT_GROUP_PROTOCOL
    /// (protocol type not `consumer` or name not the one its JoinGroup was answered),
    /// REBALANCE_IN_PROGRESS (the group epoch moved past the member's and it is not
    /// revoking: it must rejoin; its join deadline starts). On success the sync
    /// deadline is cleared and the session deadline renewed. The broker answers with
    /// the request's protocol type and name.
    pub fn classic_sync(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        now_ms: i64,
    ) -> Result<Bytes, i16> {
        let id = self.classic_member(member_id, instance)?;
        let group_epoch = self.group_epoch;
        let member = &self.members[&id];
        if member.member_epoch != generation {
            return Err(ResponseError::IllegalGeneration.code());
        }
        let (session_timeout_ms, first_protocol) = match &member.classic {
            Some(classic) => (
                classic.session_timeout_ms,
                classic.protocols.first().cloned(),
            ),
            None => return Err(ResponseError::UnknownMemberId.code()),
        };
        let (name, metadata) = first_protocol.unwrap_or_default();
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || protocol_name.is_some_and(|n| n != name)
        {
            return Err(ResponseError::InconsistentGroupProtocol.code());
        }
        let must_rejoin =
            group_epoch > member.member_epoch && member.state != MemberState::UnrevokedPartitions;
        let assignment =
            (!must_rejoin).then(|| self.encode_assignment(&member.assigned, &metadata));
        let member = self
            .members
            .get_mut(&id)
            .expect("the member was looked up above");
        match assignment {
            None => {
                let rebalance_timeout_ms = member.rebalance_timeout_ms.max(0);
                member
                    .join_deadline_ms
                    .get_or_insert(now_ms.saturating_add(i64::from(rebalance_timeout_ms)));
                Err(ResponseError::RebalanceInProgress.code())
            }
            Some(assignment) => {
                member.sync_deadline_ms = None;
                member.session_deadline_ms =
                    now_ms.saturating_add(i64::from(session_timeout_ms.max(0)));
                Ok(assignment)
            }
        }
    }

    /// Serves a Heartbeat from a classic member (Kafka's
    /// `classicGroupHeartbeatToConsumerGroup`). Errors: UNKNOWN_MEMBER_ID,
    /// FENCED_INSTANCE_ID, ILLEGAL_GENERATION (generation != member epoch). Otherwise
    /// the session deadline is renewed and the answer is REBALANCE_IN_PROGRESS when
    /// the member must rejoin — its epoch is behind the group epoch, it must revoke
    /// partitions, or partitions it waited for are now free — (its join deadline
    /// starts unless already running), else NONE.
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now_ms: i64,
    ) -> i16 {
        let id = match self.classic_member(member_id, instance) {
            Ok(id) => id,
            Err(code) => return code,
        };
        let group_epoch = self.group_epoch;
        let member = &self.members[&id];
        if member.member_epoch != generation {
            return ResponseError::IllegalGeneration.code();
        }
        let must_rejoin = member.member_epoch < group_epoch
            || member.state == MemberState::UnrevokedPartitions
            || (member.state == MemberState::UnreleasedPartitions
                && !self.waiting_on_unreleased_partition(member));
        let member = self
            .members
            .get_mut(&id)
            .expect("the member was looked up above");
        let session_timeout_ms = member.classic.as_ref().map_or(0, |c| c.session_timeout_ms);
        member.session_deadline_ms = now_ms.saturating_add(i64::from(session_timeout_ms.max(0)));
        if must_rejoin {
            let rebalance_timeout_ms = member.rebalance_timeout_ms.max(0);
            member
                .join_deadline_ms
                .get_or_insert(now_ms.saturating_add(i64::from(rebalance_timeout_ms)));
            ResponseError::RebalanceInProgress.code()
        } else {
            0
        }
    }

    /// Serves one member of a LeaveGroup (Kafka's `classicGroupLeaveToConsumerGroup`):
    /// the classic member is removed and the group epoch bumped. With an instance
    /// id, an empty member id is allowed (an admin removing a static member).
    /// Errors: UNKNOWN_MEMBER_ID (unknown member or instance, or a member of the
    /// consumer protocol), FENCED_INSTANCE_ID. No downgrade follows a classic
    /// member's leave in Kafka.
    pub fn classic_leave(&mut self, member_id: &str, instance: Option<&str>, now_ms: i64) -> i16 {
        let _ = now_ms;
        let id = match instance {
            None => member_id.to_string(),
            Some(instance_id) => match self.static_members.get(instance_id) {
                None => return ResponseError::UnknownMemberId.code(),
                Some(existing) if !member_id.is_empty() && existing != member_id => {
                    return ResponseError::FencedInstanceId.code();
                }
                Some(existing) => existing.clone(),
            },
        };
        match self.members.get(&id) {
            Some(member) if member.classic.is_some() => {
                tracing::info!(group = %self.group_id, member = %id, "classic member left the consumer group through LeaveGroup");
                self.fence(&id);
                0
            }
            _ => ResponseError::UnknownMemberId.code(),
        }
    }

    /// Kafka's `validateConsumerGroupMember` + `throwIfMemberDoesNotUseClassicProtocol`:
    /// the id of the classic member the request is about.
    fn classic_member(&self, member_id: &str, instance: Option<&str>) -> Result<String, i16> {
        let id = match instance {
            None => member_id.to_string(),
            Some(instance_id) => match self.static_members.get(instance_id) {
                None => return Err(ResponseError::UnknownMemberId.code()),
                Some(existing) if existing != member_id => {
                    return Err(ResponseError::FencedInstanceId.code());
                }
                Some(existing) => existing.clone(),
            },
        };
        match self.members.get(&id) {
            Some(member) if member.classic.is_some() => Ok(id),
            _ => Err(ResponseError::UnknownMemberId.code()),
        }
    }

    /// Kafka's `ConsumerGroup.supportsClassicProtocols`: the type is `consumer` and
    /// (the group is empty and the member has protocols, or) one of its protocols is
    /// supported by every classic member.
    fn supports_classic_protocols(
        &self,
        protocol_type: &str,
        protocols: &[(String, Bytes)],
    ) -> bool {
        if protocol_type != CONSUMER_PROTOCOL_TYPE {
            return false;
        }
        if self.members.is_empty() {
            return !protocols.is_empty();
        }
        protocols.iter().any(|(name, _)| {
            self.members
                .values()
                .filter_map(|m| m.classic.as_ref())
                .all(|c| c.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// Kafka's `waitingOnUnreleasedPartition`: a partition of the member's target it
    /// does not have is still owned by another member.
    fn waiting_on_unreleased_partition(&self, member: &Member) -> bool {
        if member.state != MemberState::UnreleasedPartitions {
            return false;
        }
        let empty = BTreeSet::new();
        self.target
            .get(&member.member_id)
            .into_iter()
            .flatten()
            .any(|(topic_id, partitions)| {
                let assigned = member.assigned.get(topic_id).unwrap_or(&empty);
                partitions
                    .iter()
                    .any(|p| !assigned.contains(p) && self.owners.contains_key(&(*topic_id, *p)))
            })
    }

    /// `partitions` as ConsumerProtocolAssignment bytes (topics by name, sorted; no
    /// user data), in the version of `subscription` (its first two bytes).
    fn encode_assignment(&self, partitions: &TopicPartitions, subscription: &[u8]) -> Bytes {
        let mut by_name: Vec<(String, Vec<i32>)> = partitions
            .iter()
            .filter_map(|(topic_id, ps)| {
                self.topic_names
                    .get(topic_id)
                    .map(|name| (name.clone(), ps.iter().copied().collect()))
            })
            .collect();
        by_name.sort();
        Bytes::from(consumer_protocol::encode_assignment(&ProtocolAssignment {
            version: migration::protocol_version(subscription),
            partitions: by_name,
            user_data: None,
        }))
    }

    /// Remembers the names of the topics the members own or are assigned, while
    /// there are classic members (their assignments are encoded by name).
    fn refresh_topic_names(&mut self, topics: &Topics) {
        if self.members.values().all(|m| m.classic.is_none()) {
            self.topic_names.clear();
            return;
        }
        let mut names = HashMap::new();
        let ids = self
            .members
            .values()
            .flat_map(|m| m.assigned.keys().chain(m.pending_revocation.keys()))
            .chain(self.target.values().flat_map(|t| t.keys()));
        for topic_id in ids {
            if !names.contains_key(topic_id)
                && let Some(name) = topics.name(topic_id)
            {
                names.insert(*topic_id, name.to_string());
            }
        }
        self.topic_names = names;
    }
}

/// Persistence in `__consumer_offsets`, as Kafka's group coordinator does it: every
/// change is described by ConsumerGroup* records ([`ConsumerGroup::take_records`]) and a
/// group is rebuilt from them ([`ConsumerGroup::replay`], then
/// [`ConsumerGroup::finish_load`]).
impl ConsumerGroup {
    /// The records (encoded key, encoded value or `None` for a tombstone) describing
    /// what changed since the last call, in the order Kafka's coordinator writes them:
    ///
    /// 1. for each member removed (left, fenced, replaced by a static member): the
    ///    tombstones of its current assignment, target assignment and metadata;
    /// 2. the metadata of the members whose metadata or subscription changed;
    /// 3. the group epoch (ConsumerGroupMetadata, with the tombstone of a
    ///    ConsumerGroupPartitionMetadata record written by an older Kafka first);
    /// 4. the target assignment of the members whose target changed, then the
    ///    target assignment epoch;
    /// 5. the current assignment of the members whose assignment or epochs changed.
    ///
    /// After [`ConsumerGroup::mark_dead`]: the tombstones of every record of the
    /// group (current assignments, target assignments, target assignment epoch,
    /// member metadata, partition metadata, group metadata last), as Kafka's
    /// `createGroupTombstoneRecords`. A refused request changes nothing and yields
    /// no record. The broker appends them after each operation, before answering.
    pub fn take_records(&mut self) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let changes = std::mem::take(&mut self.changes);
        let group = self.group_id.clone();
        let mut out: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
        let tombstone = |key: OffsetsKey, out: &mut Vec<_>| {
            out.push((records::encode_key(&key), None));
        };
        let current_key = |member: &str| OffsetsKey::ConsumerGroupCurrentMemberAssignment {
            group: group.clone(),
            member: member.to_string(),
        };
        let target_key = |member: &str| OffsetsKey::ConsumerGroupTargetAssignmentMember {
            group: group.clone(),
            member: member.to_string(),
        };
        let metadata_key = |member: &str| OffsetsKey::ConsumerGroupMemberMetadata {
            group: group.clone(),
            member: member.to_string(),
        };

        if let Some(mut deleted) = changes.deleted {
            deleted.extend(changes.removed);
            for member in &deleted {
                tombstone(current_key(member), &mut out);
            }
            for member in &deleted {
                tombstone(target_key(member), &mut out);
            }
            tombstone(
                OffsetsKey::ConsumerGroupTargetAssignmentMetadata {
                    group: group.clone(),
                },
                &mut out,
            );
            for member in &deleted {
                tombstone(metadata_key(member), &mut out);
            }
            tombstone(
                OffsetsKey::ConsumerGroupPartitionMetadata {
                    group: group.clone(),
                },
                &mut out,
            );
            tombstone(
                OffsetsKey::ConsumerGroupMetadata {
                    group: group.clone(),
                },
                &mut out,
            );
            self.has_subscription_metadata_record = false;
            self.written_epoch = None;
            self.written_assignment_epoch = None;
            return out;
        }

        for member in &changes.removed {
            tombstone(current_key(member), &mut out);
            tombstone(target_key(member), &mut out);
            tombstone(metadata_key(member), &mut out);
        }
        for member_id in &changes.metadata {
            if let Some(member) = self.members.get(member_id) {
                out.push((
                    records::encode_key(&metadata_key(member_id)),
                    Some(records::encode_consumer_group_member_metadata_value(
                        &member_metadata_value(member),
                    )),
                ));
            }
        }
        let epoch = (self.group_epoch, self.metadata_hash);
        if self.written_epoch != Some(epoch) {
            if self.has_subscription_metadata_record {
                tombstone(
                    OffsetsKey::ConsumerGroupPartitionMetadata {
                        group: group.clone(),
                    },
                    &mut out,
                );
                self.has_subscription_metadata_record = false;
            }
            out.push((
                records::encode_key(&OffsetsKey::ConsumerGroupMetadata {
                    group: group.clone(),
                }),
                Some(records::encode_consumer_group_metadata_value(
                    &ConsumerGroupMetadataValue {
                        epoch: self.group_epoch,
                        metadata_hash: self.metadata_hash,
                    },
                )),
            ));
            self.written_epoch = Some(epoch);
        }
        for member_id in &changes.target {
            if let Some(target) = self.target.get(member_id) {
                out.push((
                    records::encode_key(&target_key(member_id)),
                    Some(
                        records::encode_consumer_group_target_assignment_member_value(
                            &ConsumerGroupTargetAssignmentMemberValue {
                                topic_partitions: to_pairs(target),
                            },
                        ),
                    ),
                ));
            }
        }
        if self.written_assignment_epoch != Some(self.assignment_epoch) {
            out.push((
                records::encode_key(&OffsetsKey::ConsumerGroupTargetAssignmentMetadata {
                    group: group.clone(),
                }),
                Some(
                    records::encode_consumer_group_target_assignment_metadata_value(
                        &ConsumerGroupTargetAssignmentMetadataValue {
                            assignment_epoch: self.assignment_epoch,
                        },
                    ),
                ),
            ));
            self.written_assignment_epoch = Some(self.assignment_epoch);
        }
        for member_id in &changes.current {
            if let Some(member) = self.members.get(member_id) {
                out.push((
                    records::encode_key(&current_key(member_id)),
                    Some(
                        records::encode_consumer_group_current_member_assignment_value(
                            &current_assignment_value(member),
                        ),
                    ),
                ));
            }
        }
        out
    }

    /// Applies one record of this group read back from `__consumer_offsets` (a
    /// `None` value is a tombstone), as Kafka's `GroupMetadataManager.replay`:
    ///
    /// - ConsumerGroupMetadata: the group epoch (and metadata hash); its tombstone
    ///   deletes the group: everything is reset and the state is `Dead` until another
    ///   record of the group is replayed (the broker drops the group);
    /// - ConsumerGroupPartitionMetadata: only noted, to be tombstoned by the next
    ///   group epoch record (Kafka 4.1 no longer uses it);
    /// - ConsumerGroupMemberMetadata: creates or updates the member (its tombstone
    ///   removes it);
    /// - ConsumerGroupTargetAssignmentMetadata / ConsumerGroupTargetAssignmentMember:
    ///   the target assignment epoch / one member's target;
    /// - ConsumerGroupCurrentMemberAssignment: creates or updates the member's epochs,
    ///   state and assignment (its tombstone empties them, epoch -1).
    ///
    /// Records of other kinds or other groups are ignored. Errors only when the value
    /// does not decode (the group is unchanged then). Replayed records are not
    /// written again by [`ConsumerGroup::take_records`]. Call
    /// [`ConsumerGroup::finish_load`] once every record is replayed.
    pub fn replay(&mut self, key: &OffsetsKey, value: Option<&[u8]>) -> Result<(), RecordError> {
        if key.group_id() != Some(self.group_id.as_str()) || !key.is_consumer_group_record() {
            tracing::warn!(group = %self.group_id, ?key, "ignoring a record of another group or kind");
            return Ok(());
        }
        if value.is_some() {
            self.dead = false;
        }
        match (key, value) {
            (OffsetsKey::ConsumerGroupMetadata { .. }, Some(bytes)) => {
                let value = records::decode_consumer_group_metadata_value(bytes)?;
                self.group_epoch = value.epoch;
                self.metadata_hash = value.metadata_hash;
                self.metadata_known = false;
                self.written_epoch = Some((value.epoch, value.metadata_hash));
            }
            (OffsetsKey::ConsumerGroupMetadata { .. }, None) => {
                let mut fresh = ConsumerGroup::new(std::mem::take(&mut self.group_id));
                fresh.dead = true;
                *self = fresh;
            }
            (OffsetsKey::ConsumerGroupPartitionMetadata { .. }, Some(bytes)) => {
                records::decode_consumer_group_partition_metadata_value(bytes)?;
                self.has_subscription_metadata_record = true;
            }
            (OffsetsKey::ConsumerGroupPartitionMetadata { .. }, None) => {
                self.has_subscription_metadata_record = false;
            }
            (OffsetsKey::ConsumerGroupMemberMetadata { member, .. }, Some(bytes)) => {
                let value = records::decode_consumer_group_member_metadata_value(bytes)?;
                let entry = self
                    .members
                    .entry(member.clone())
                    .or_insert_with(|| Member::new(member.clone()));
                apply_member_metadata(entry, value);
            }
            (OffsetsKey::ConsumerGroupMemberMetadata { member, .. }, None) => {
                self.members.remove(member);
            }
            (OffsetsKey::ConsumerGroupTargetAssignmentMetadata { .. }, Some(bytes)) => {
                let value = records::decode_consumer_group_target_assignment_metadata_value(bytes)?;
                self.assignment_epoch = value.assignment_epoch;
                self.written_assignment_epoch = Some(value.assignment_epoch);
            }
            (OffsetsKey::ConsumerGroupTargetAssignmentMetadata { .. }, None) => {
                self.assignment_epoch = 0;
                self.written_assignment_epoch = Some(0);
            }
            (OffsetsKey::ConsumerGroupTargetAssignmentMember { member, .. }, Some(bytes)) => {
                let value = records::decode_consumer_group_target_assignment_member_value(bytes)?;
                self.target
                    .insert(member.clone(), from_pairs(value.topic_partitions));
            }
            (OffsetsKey::ConsumerGroupTargetAssignmentMember { member, .. }, None) => {
                self.target.remove(member);
            }
            (OffsetsKey::ConsumerGroupCurrentMemberAssignment { member, .. }, Some(bytes)) => {
                let value = records::decode_consumer_group_current_member_assignment_value(bytes)?;
                let entry = self
                    .members
                    .entry(member.clone())
                    .or_insert_with(|| Member::new(member.clone()));
                entry.member_epoch = value.member_epoch;
                entry.previous_member_epoch = value.previous_member_epoch;
                entry.state = member_state_from_byte(value.state);
                entry.assigned = from_pairs(value.assigned_partitions);
                entry.pending_revocation = from_pairs(value.partitions_pending_revocation);
            }
            (OffsetsKey::ConsumerGroupCurrentMemberAssignment { member, .. }, None) => {
                if let Some(entry) = self.members.get_mut(member) {
                    entry.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    entry.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    entry.assigned.clear();
                    entry.pending_revocation.clear();
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends a load with Kafka's default group settings: see
    /// [`ConsumerGroup::finish_load_with`].
    pub fn finish_load(&mut self, now_ms: i64) {
        self.finish_load_with(now_ms, &ConsumerGroupConfig::default());
    }

    /// Ends a load (Kafka's `onLoaded`): rebuilds what the records do not carry —
    /// the static member index, the partition owners, the compiled regexes, the
    /// default assignor — and starts every member's session timer (the configured
    /// session timeout; a classic member's own one) and, for a member still revoking
    /// partitions, its rebalance timer. The subscribed topics' metadata is computed
    /// again by the next heartbeat, which bumps the group epoch only if its hash
    /// differs from the replayed one. Classic members' assignments are encoded by
    /// topic name: call [`ConsumerGroup::refresh_topics`] too when the group has
    /// some.
    pub fn finish_load_with(&mut self, now_ms: i64, config: &ConsumerGroupConfig) {
        if let Some(default) = config.supported_assignors().first() {
            self.default_assignor = default.to_string();
        }
        self.static_members.clear();
        self.owners.clear();
        let members: Vec<Member> = self.members.values().cloned().collect();
        for mut member in members {
            if let Some(instance_id) = &member.instance_id {
                self.static_members
                    .insert(instance_id.clone(), member.member_id.clone());
            }
            self.index(&member);
            if let Some(regex) = member.subscribed_topic_regex.clone()
                && self.compile_regex(&regex).is_err()
            {
                tracing::warn!(group = %self.group_id, member = %member.member_id, %regex, "replayed an invalid subscription regex");
            }
            let session_timeout_ms = member
                .classic
                .as_ref()
                .map_or(config.session_timeout_ms, |c| c.session_timeout_ms);
            member.session_deadline_ms =
                now_ms.saturating_add(i64::from(session_timeout_ms.max(0)));
            member.rebalance_deadline_ms = (member.classic.is_none()
                && member.state == MemberState::UnrevokedPartitions)
                .then(|| now_ms.saturating_add(i64::from(member.rebalance_timeout_ms.max(0))));
            member.join_deadline_ms = None;
            member.sync_deadline_ms = None;
            self.members.insert(member.member_id.clone(), member);
        }
        self.subscription_metadata.clear();
        self.metadata_known = self.members.is_empty();
        self.changes = Changes::default();
        tracing::info!(group = %self.group_id, epoch = self.group_epoch, members = self.members.len(), "loaded the consumer group");
    }

    /// Remembers the names of the topics the members own or are assigned, to encode
    /// the assignments of classic members (SyncGroup, downgrade) before any heartbeat
    /// or JoinGroup passes the topics (after a load).
    pub fn refresh_topics(&mut self, topics: &Topics) {
        self.refresh_topic_names(topics);
    }

    /// Stores `member`, noting which of its records changed.
    /// Applies a joining or updated member (in place of a static member's old
    /// incarnation, `replaced`), then moves the group epoch on when its subscription or
    /// the subscribed topics changed, and the target assignment with it.
    fn apply_member(
        &mut self,
        member_id: &str,
        replaced: Option<&str>,
        updated: Member,
        subscription_changed: bool,
        topics: &Topics,
    ) {
        if let Some(old_id) = replaced {
            tracing::info!(group = %self.group_id, member = %member_id, replaced = %old_id, "static member re-joins the consumer group");
            self.replace_member(old_id, member_id);
        } else if !self.members.contains_key(member_id) {
            tracing::info!(group = %self.group_id, member = %member_id, "member joins the consumer group");
        }
        self.unindex(member_id);
        if let Some(instance_id) = &updated.instance_id {
            self.static_members
                .insert(instance_id.clone(), member_id.to_string());
        }
        self.index(&updated);
        self.put_member(updated);
        self.prune_regexes();

        let metadata = self.compute_subscription_metadata(topics);
        let mut bump = self.group_epoch == 0 || subscription_changed;
        if self.update_subscription_metadata(metadata) {
            bump = true;
        }
        if bump {
            self.group_epoch += 1;
            tracing::info!(group = %self.group_id, epoch = self.group_epoch, "bumped group epoch");
        }
        if self.group_epoch > self.assignment_epoch {
            self.update_target_assignment(topics);
        }
    }

    fn put_member(&mut self, member: Member) {
        let (metadata_changed, current_changed) = match self.members.get(&member.member_id) {
            None => (true, true),
            Some(old) => (
                !same_metadata(old, &member),
                !same_current_assignment(old, &member),
            ),
        };
        if metadata_changed {
            self.changes.metadata.insert(member.member_id.clone());
        }
        if current_changed {
            self.changes.current.insert(member.member_id.clone());
        }
        self.members.insert(member.member_id.clone(), member);
    }

    /// Removes the static member `old_id` that `new_id` replaces, moving its target
    /// assignment (Kafka's `replaceMember`).
    fn replace_member(&mut self, old_id: &str, new_id: &str) {
        self.unindex(old_id);
        if self.members.remove(old_id).is_some() {
            self.changes.removed.push(old_id.to_string());
        }
        if let Some(target) = self.target.remove(old_id) {
            self.target.insert(new_id.to_string(), target);
            self.changes.target.insert(new_id.to_string());
        }
    }

    /// Stores the subscribed topics' metadata; true if it changed. After a load, the
    /// first computation is compared through the replayed hash.
    fn update_subscription_metadata(&mut self, metadata: BTreeMap<String, (Uuid, i32)>) -> bool {
        let hash = metadata_hash(&metadata);
        let changed = if self.metadata_known {
            metadata != self.subscription_metadata
        } else {
            self.metadata_known = true;
            hash != self.metadata_hash
        };
        self.subscription_metadata = metadata;
        self.metadata_hash = hash;
        changed
    }
}

/// The hash of the subscribed topics' metadata written as the group metadata's
/// `metadataHash`: 64-bit FNV-1a over each topic's name, id and partition count, in
/// name order; 0 when there are none (as Kafka). It is not Kafka's hash (which covers
/// partition racks Sluice does not know), so a Kafka coordinator loading it would
/// only bump the group epoch once, and vice versa.
fn metadata_hash(metadata: &BTreeMap<String, (Uuid, i32)>) -> i64 {
    if metadata.is_empty() {
        return 0;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, (id, partitions)) in metadata {
        feed(&(name.len() as u32).to_be_bytes());
        feed(name.as_bytes());
        feed(id.as_bytes());
        feed(&partitions.to_be_bytes());
    }
    match hash as i64 {
        0 => 1,
        hash => hash,
    }
}

fn same_metadata(a: &Member, b: &Member) -> bool {
    a.instance_id == b.instance_id
        && a.rack_id == b.rack_id
        && a.client_id == b.client_id
        && a.client_host == b.client_host
        && a.rebalance_timeout_ms == b.rebalance_timeout_ms
        && a.subscribed_topic_names == b.subscribed_topic_names
        && a.subscribed_topic_regex == b.subscribed_topic_regex
        && a.server_assignor == b.server_assignor
        && a.classic == b.classic
}

fn same_current_assignment(a: &Member, b: &Member) -> bool {
    a.member_epoch == b.member_epoch
        && a.previous_member_epoch == b.previous_member_epoch
        && a.state == b.state
        && a.assigned == b.assigned
        && a.pending_revocation == b.pending_revocation
}

fn member_metadata_value(member: &Member) -> ConsumerGroupMemberMetadataValue {
    ConsumerGroupMemberMetadataValue {
        instance_id: member.instance_id.clone(),
        rack_id: member.rack_id.clone(),
        client_id: member.client_id.clone(),
        client_host: member.client_host.clone(),
        subscribed_topic_names: member.subscribed_topic_names.iter().cloned().collect(),
        subscribed_topic_regex: member.subscribed_topic_regex.clone(),
        rebalance_timeout_ms: member.rebalance_timeout_ms,
        server_assignor: member.server_assignor.clone(),
        classic_member_metadata: member.classic.as_ref().map(|c| ClassicMemberMetadata {
            session_timeout_ms: c.session_timeout_ms,
            supported_protocols: c.protocols.clone(),
        }),
    }
}

fn apply_member_metadata(member: &mut Member, value: ConsumerGroupMemberMetadataValue) {
    member.instance_id = value.instance_id;
    member.rack_id = value.rack_id;
    member.client_id = value.client_id;
    member.client_host = value.client_host;
    member.subscribed_topic_names = value.subscribed_topic_names.into_iter().collect();
    member.subscribed_topic_regex = value.subscribed_topic_regex;
    member.rebalance_timeout_ms = value.rebalance_timeout_ms;
    member.server_assignor = value.server_assignor;
    member.classic = value.classic_member_metadata.map(|c| ClassicMetadata {
        session_timeout_ms: c.session_timeout_ms,
        protocols: c.supported_protocols,
    });
}

fn current_assignment_value(member: &Member) -> ConsumerGroupCurrentMemberAssignmentValue {
    ConsumerGroupCurrentMemberAssignmentValue {
        member_epoch: member.member_epoch,
        previous_member_epoch: member.previous_member_epoch,
        state: member_state_byte(member.state),
        assigned_partitions: to_pairs(&member.assigned),
        partitions_pending_revocation: to_pairs(&member.pending_revocation),
    }
}

/// Kafka's `MemberState` values.
fn member_state_byte(state: MemberState) -> i8 {
    match state {
        MemberState::Stable => 0,
        MemberState::UnrevokedPartitions => 1,
        MemberState::UnreleasedPartitions => 2,
    }
}

/// The state of a `MemberState` byte; an unknown one (Kafka's UNKNOWN, 127) reads as
/// UNRELEASED_PARTITIONS, which makes the member's next heartbeat recompute its
/// assignment.
fn member_state_from_byte(state: i8) -> MemberState {
    match state {
        0 => MemberState::Stable,
        1 => MemberState::UnrevokedPartitions,
        _ => MemberState::UnreleasedPartitions,
    }
}

fn to_pairs(partitions: &TopicPartitions) -> Vec<(Uuid, Vec<i32>)> {
    partitions
        .iter()
        .map(|(topic_id, ps)| (*topic_id, ps.iter().copied().collect()))
        .collect()
}

/// Partitions by topic id; topics without partitions are dropped.
fn from_pairs(pairs: Vec<(Uuid, Vec<i32>)>) -> TopicPartitions {
    let mut result: TopicPartitions = BTreeMap::new();
    for (topic_id, partitions) in pairs {
        if !partitions.is_empty() {
            result.entry(topic_id).or_default().extend(partitions);
        }
    }
    result
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: an epoch ahead of the
/// member's is fenced; one behind is fenced unless it is the previous epoch and the
/// member owns only partitions of its current assignment (a lost response).
fn check_member_epoch(
    member: &Member,
    received: i32,
    owned: Option<&[RequestTopicPartitions]>,
) -> Result<(), Refusal> {
    if received > member.member_epoch {
        return refuse(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a greater member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        );
    }
    if received < member.member_epoch
        && (received != member.previous_member_epoch || !is_subset(owned, &member.assigned))
    {
        return refuse(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a smaller member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        );
    }
    Ok(())
}

/// Whether the owned partitions (null = unknown = no) are all in `assigned`.
fn is_subset(owned: Option<&[RequestTopicPartitions]>, assigned: &TopicPartitions) -> bool {
    let Some(owned) = owned else { return false };
    owned.iter().all(|tp| {
        tp.partitions.is_empty()
            || assigned
                .get(&tp.topic_id)
                .is_some_and(|set| tp.partitions.iter().all(|p| set.contains(p)))
    })
}

/// Whether the member still owns any of `partitions` (Kafka's
/// `ownsRevokedPartitions`): a request without owned partitions is assumed to.
fn owns_any(owned: Option<&[RequestTopicPartitions]>, partitions: &TopicPartitions) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|tp| {
        partitions
            .get(&tp.topic_id)
            .is_some_and(|set| tp.partitions.iter().any(|p| set.contains(p)))
    })
}

/// Kafka's `GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate_request(
    version: i16,
    request: &ConsumerGroupHeartbeatRequest,
    config: &ConsumerGroupConfig,
) -> Result<(), Refusal> {
    let invalid = |message: &str| refuse(ResponseError::InvalidRequest, message);
    let epoch = request.member_epoch;
    if (version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        || epoch > 0
        || epoch == LEAVE_GROUP_MEMBER_EPOCH)
        && is_blank(&request.member_id)
    {
        return invalid("MemberId can't be empty.");
    }
    if is_blank(&request.group_id) {
        return invalid("GroupId can't be empty.");
    }
    if request.instance_id.as_deref().is_some_and(is_blank) {
        return invalid("InstanceId can't be empty.");
    }
    if request.rack_id.as_deref().is_some_and(is_blank) {
        return invalid("RackId can't be empty.");
    }
    if epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if request
            .topic_partitions
            .as_ref()
            .is_none_or(|tps| !tps.is_empty())
        {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if request.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(name) = request.server_assignor.as_deref() {
        let supported = config.supported_assignors();
        if !supported.contains(&name) {
            return refuse(
                ResponseError::UnsupportedAssignor,
                format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    supported.join(", ")
                ),
            );
        }
    }
    Ok(())
}

fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// Test support shared with the migration tests.
#[cfg(test)]
impl ConsumerGroup {
    /// A group rebuilt from `records` (decoded keys, replayed in order).
    pub(crate) fn replayed(
        group_id: &str,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
        now_ms: i64,
    ) -> ConsumerGroup {
        let mut group = ConsumerGroup::new(group_id.to_string());
        for (key, value) in records {
            let key = records::decode_key(key).unwrap();
            group.replay(&key, value.as_deref()).unwrap();
        }
        group.finish_load(now_ms);
        group
    }

    /// What the records carry: epochs, the members without their timers, targets.
    #[allow(clippy::type_complexity)]
    pub(crate) fn persisted_state(
        &self,
    ) -> (
        i32,
        i32,
        Vec<Member>,
        BTreeMap<String, TopicPartitions>,
        BTreeMap<String, String>,
    ) {
        let members = self
            .members
            .values()
            .map(|m| Member {
                session_deadline_ms: 0,
                rebalance_deadline_ms: None,
                join_deadline_ms: None,
                sync_deadline_ms: None,
                ..m.clone()
            })
            .collect();
        (
            self.group_epoch,
            self.assignment_epoch,
            members,
            self.target.clone(),
            self.static_members
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T1: Uuid = Uuid::from_bytes([1; 16]);
    const T2: Uuid = Uuid::from_bytes([2; 16]);

    fn topics(foo: i32) -> Topics {
        Topics::new([("foo".to_string(), T1, foo), ("bar".to_string(), T2, 2)])
    }

    fn config() -> ConsumerGroupConfig {
        ConsumerGroupConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
            ..Default::default()
        }
    }

    fn owned(parts: &[(Uuid, &[i32])]) -> Option<Vec<RequestTopicPartitions>> {
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

    fn join(
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

    fn beat(
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

    fn hb(
        g: &mut ConsumerGroup,
        r: &ConsumerGroupHeartbeatRequest,
        t: &Topics,
        now: i64,
    ) -> ConsumerGroupHeartbeatResponse {
        g.heartbeat(1, r, "client", "/127.0.0.1", t, &config(), now)
    }

    fn assigned(response: &ConsumerGroupHeartbeatResponse) -> Option<Vec<(Uuid, Vec<i32>)>> {
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

    #[test]
    fn one_member_gets_everything() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(4);
        let r = hb(&mut g, &join("m1", None, &["foo", "bar"]), &t, 0);
        assert_eq!(r.error_code, 0);
        assert_eq!(r.member_id.as_deref(), Some("m1"));
        assert_eq!(r.member_epoch, 1);
        assert_eq!(r.heartbeat_interval_ms, 5_000);
        assert_eq!(
            assigned(&r),
            Some(vec![(T1, vec![0, 1, 2, 3]), (T2, vec![0, 1])])
        );
        assert_eq!(g.group_epoch(), 1);
        assert_eq!(g.assignment_epoch(), 1);
        assert_eq!(g.state(), ConsumerGroupState::Stable);
        // A plain heartbeat: no change, no assignment in the response.
        let r = hb(&mut g, &beat("m1", 1, None), &t, 1000);
        assert_eq!(
            (r.error_code, r.member_epoch, r.assignment.is_none()),
            (0, 1, true)
        );
        assert_eq!(g.group_epoch(), 1);
    }

    #[test]
    fn v0_generates_member_id_and_v1_requires_one() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(1);
        let r = g.heartbeat(0, &join("", None, &["foo"]), "c", "/h", &t, &config(), 0);
        assert_eq!(r.error_code, 0);
        let id = r.member_id.unwrap().to_string();
        assert_eq!(id.len(), 22);
        assert!(g.members().any(|m| m.member_id == id));
        let r = g.heartbeat(1, &join("", None, &["foo"]), "c", "/h", &t, &config(), 0);
        assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
        assert_eq!(r.error_message.as_deref(), Some("MemberId can't be empty."));
    }

    #[test]
    fn second_member_waits_for_revocation() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(4);
        let r = hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1, 2, 3])]));

        // b joins: epoch 2, but its partitions are still a's.
        let r = hb(&mut g, &join("b", None, &["foo"]), &t, 10);
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![]));
        assert_eq!(g.state(), ConsumerGroupState::Reconciling);

        // a is asked to revoke two partitions and stays at epoch 1.
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1, 2, 3])])), &t, 20);
        assert_eq!(r.member_epoch, 1);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));

        // b still waits.
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 30);
        assert_eq!((r.member_epoch, r.assignment.is_none()), (2, true));

        // a acknowledges the revocation: epoch 2.
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 40);
        assert_eq!((r.member_epoch, r.assignment.is_none()), (2, true));

        // b now gets the released partitions.
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 50);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![2, 3])]));
        assert_eq!(g.state(), ConsumerGroupState::Stable);
    }

    #[test]
    fn leave_bumps_epoch_and_frees_partitions() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        hb(&mut g, &join("b", None, &["foo"]), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0])])), &t, 0);
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![1])]));

        let r = hb(&mut g, &beat("b", -1, None), &t, 0);
        assert_eq!(
            (r.error_code, r.member_epoch, r.member_id.as_deref()),
            (0, -1, Some("b"))
        );
        assert_eq!(g.group_epoch(), 3);
        assert_eq!(g.state(), ConsumerGroupState::Assigning);
        let r = hb(&mut g, &beat("a", 2, Some(&[(T1, &[0])])), &t, 0);
        assert_eq!(r.member_epoch, 3);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
        let r = hb(&mut g, &beat("a", -1, None), &t, 0);
        assert_eq!(r.error_code, 0);
        assert!(g.is_empty());
        assert_eq!(g.state(), ConsumerGroupState::Empty);
        assert_eq!(g.group_epoch(), 4);
    }

    #[test]
    fn session_expiry_fences() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        hb(&mut g, &join("b", None, &["foo"]), &t, 10_000);
        assert_eq!(g.next_deadline_ms(), Some(45_000));
        assert_eq!(g.expire(44_999), Vec::<String>::new());
        assert_eq!(g.expire(45_000), vec!["a".to_string()]);
        assert_eq!(g.group_epoch(), 3);
        let r = hb(&mut g, &beat("a", 1, None), &t, 45_001);
        assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
        // b gets everything.
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 45_001);
        assert_eq!(r.member_epoch, 3);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
    }

    #[test]
    fn rebalance_timeout_fences_unrevoking_member() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        hb(&mut g, &join("b", None, &["foo"]), &t, 0);
        // a is asked to revoke at t=1000 with a 30 s rebalance timeout.
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 1_000);
        // a keeps heartbeating without revoking.
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 30_000);
        hb(&mut g, &beat("b", 2, Some(&[])), &t, 30_000);
        assert_eq!(g.expire(30_999), Vec::<String>::new());
        assert_eq!(g.expire(31_000), vec!["a".to_string()]);
    }

    #[test]
    fn static_member_rejoins_with_same_partitions() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", Some("i-a"), &["foo"]), &t, 0);
        hb(&mut g, &join("b", Some("i-b"), &["foo"]), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0])])), &t, 0);
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![1])]));
        assert_eq!(g.group_epoch(), 2);

        // b leaves temporarily.
        let mut leave = beat("b", -2, None);
        leave.instance_id = Some(StrBytes::from_static_str("i-b"));
        let r = hb(&mut g, &leave, &t, 1_000);
        assert_eq!((r.error_code, r.member_epoch), (0, -2));
        assert_eq!(g.group_epoch(), 2);

        // Another member can't take the instance id of an active member.
        let r = hb(&mut g, &join("x", Some("i-a"), &["foo"]), &t, 2_000);
        assert_eq!(r.error_code, ResponseError::UnreleasedInstanceId.code());

        // b comes back with a new member id: same partitions, same group epoch.
        let r = hb(&mut g, &join("b2", Some("i-b"), &["foo"]), &t, 2_000);
        assert_eq!(r.error_code, 0);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![1])]));
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(
            g.members()
                .map(|m| m.member_id.to_string())
                .collect::<Vec<_>>(),
            vec!["a", "b2"]
        );

        // The old member id is fenced by the new one.
        let mut old = beat("b", 2, None);
        old.instance_id = Some(StrBytes::from_static_str("i-b"));
        let r = hb(&mut g, &old, &t, 3_000);
        assert_eq!(r.error_code, ResponseError::FencedInstanceId.code());
    }

    #[test]
    fn static_member_gone_after_session_timeout() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", Some("i-a"), &["foo"]), &t, 0);
        let mut leave = beat("a", -2, None);
        leave.instance_id = Some(StrBytes::from_static_str("i-a"));
        hb(&mut g, &leave, &t, 1_000);
        assert_eq!(g.expire(46_000), vec!["a".to_string()]);
        assert!(g.is_empty());
        let r = hb(&mut g, &join("a2", Some("i-a"), &["foo"]), &t, 47_000);
        assert_eq!((r.error_code, r.member_epoch), (0, 3));
    }

    #[test]
    fn fenced_member_epoch() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        let r = hb(&mut g, &beat("a", 5, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
        assert_eq!(
            r.error_message.as_deref(),
            Some(
                "The consumer group member has a greater member epoch (5) than the one known by the group coordinator (1). The member must abandon all its partitions and rejoin."
            )
        );
        hb(&mut g, &join("b", None, &["bar"]), &t, 0);
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        assert_eq!(r.member_epoch, 2);
        // The previous epoch with a subset of the assignment is accepted (lost response)...
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0])])), &t, 0);
        assert_eq!((r.error_code, r.member_epoch), (0, 2));
        // ... but not without the owned partitions, nor an older one.
        let r = hb(&mut g, &beat("a", 1, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
        let r = hb(&mut g, &beat("a", 0, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    }

    #[test]
    fn unknown_member_and_invalid_requests() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        let r = hb(&mut g, &beat("ghost", 3, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
        assert_eq!(
            r.error_message.as_deref(),
            Some("Member ghost is not a member of group g.")
        );
        let r = hb(&mut g, &beat("ghost", -1, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());

        let mut bad = join("a", None, &["foo"]);
        bad.server_assignor = Some(StrBytes::from_static_str("sticky"));
        let r = hb(&mut g, &bad, &t, 0);
        assert_eq!(r.error_code, ResponseError::UnsupportedAssignor.code());
        assert_eq!(
            r.error_message.as_deref(),
            Some("ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
        );
        let mut bad = join("a", None, &["foo"]);
        bad.rebalance_timeout_ms = -1;
        let r = hb(&mut g, &bad, &t, 0);
        assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
        let mut bad = join("a", None, &["foo"]);
        bad.subscribed_topic_regex = Some(StrBytes::from_static_str("foo("));
        let r = hb(&mut g, &bad, &t, 0);
        assert_eq!(r.error_code, ResponseError::InvalidRegularExpression.code());
        assert!(g.is_empty());
        assert_eq!(g.group_epoch(), 0);

        let limited = ConsumerGroupConfig {
            max_size: 1,
            ..config()
        };
        g.heartbeat(1, &join("a", None, &["foo"]), "c", "/h", &t, &limited, 0);
        let r = g.heartbeat(1, &join("b", None, &["foo"]), "c", "/h", &t, &limited, 0);
        assert_eq!(r.error_code, ResponseError::GroupMaxSizeReached.code());
    }

    #[test]
    fn new_partitions_and_topics_are_assigned() {
        let mut g = ConsumerGroup::new("g".into());
        let r = hb(&mut g, &join("a", None, &["foo", "baz"]), &topics(2), 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
        // foo grows to 3 partitions.
        let r = hb(
            &mut g,
            &beat("a", 1, Some(&[(T1, &[0, 1])])),
            &topics(3),
            10,
        );
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1, 2])]));
        // baz is created.
        let t3 = Uuid::from_bytes([3; 16]);
        let mut t = topics(3);
        t = Topics::new(t.iter().map(|(n, id, c)| (n.to_string(), id, c)).chain([(
            "baz".to_string(),
            t3,
            1,
        )]));
        let r = hb(&mut g, &beat("a", 2, Some(&[(T1, &[0, 1, 2])])), &t, 20);
        assert_eq!(r.member_epoch, 3);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1, 2]), (t3, vec![0])]));
    }

    #[test]
    fn fencing_a_member_with_its_own_topic_bumps_once() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        hb(&mut g, &join("b", None, &["bar"]), &t, 0);
        assert_eq!(g.group_epoch(), 2);
        assert!(g.remove_member("b"));
        assert_eq!(g.group_epoch(), 3);
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        assert_eq!((r.member_epoch, g.group_epoch()), (3, 3));
    }

    #[test]
    fn regex_subscription() {
        let mut g = ConsumerGroup::new("g".into());
        let mut req = join("a", None, &[]);
        req.subscribed_topic_names = None;
        req.subscribed_topic_regex = Some(StrBytes::from_static_str("fo+"));
        let r = hb(&mut g, &req, &topics(2), 0);
        assert_eq!(r.error_code, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
        assert_eq!(g.group_epoch(), 1);
        // A new topic matching the regex (in full) is picked up; a partial match is not.
        let t3 = Uuid::from_bytes([3; 16]);
        let t = Topics::new([
            ("foo".to_string(), T1, 2),
            ("bar".to_string(), T2, 2),
            ("fooo".to_string(), t3, 1),
            ("foobar".to_string(), Uuid::from_bytes([4; 16]), 1),
        ]);
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 10);
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1]), (t3, vec![0])]));
        let d = g.describe(&t);
        assert_eq!(d.members[0].subscribed_topic_regex.as_deref(), Some("fo+"));
    }

    #[test]
    fn range_assignor_when_members_ask_for_it() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(3);
        let mut req = join("a", None, &["foo", "bar"]);
        req.server_assignor = Some(StrBytes::from_static_str("range"));
        let r = hb(&mut g, &req, &t, 0);
        assert_eq!(g.assignor_name(), "range");
        assert_eq!(
            assigned(&r),
            Some(vec![(T1, vec![0, 1, 2]), (T2, vec![0, 1])])
        );
        let mut req = join("b", None, &["foo", "bar"]);
        req.server_assignor = Some(StrBytes::from_static_str("range"));
        hb(&mut g, &req, &t, 0);
        let targets: Vec<Vec<(Uuid, Vec<i32>)>> = g
            .members()
            .map(|m| {
                m.target
                    .unwrap()
                    .iter()
                    .map(|(id, ps)| (*id, ps.iter().copied().collect()))
                    .collect()
            })
            .collect();
        assert_eq!(targets[0], vec![(T1, vec![0, 1]), (T2, vec![0])]);
        assert_eq!(targets[1], vec![(T1, vec![2]), (T2, vec![1])]);
    }

    #[test]
    fn describe_output() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        let mut req = join("a", Some("inst"), &["foo"]);
        req.rack_id = Some(StrBytes::from_static_str("r1"));
        hb(&mut g, &req, &t, 0);
        let d = g.describe(&t);
        assert_eq!(d.group_id.as_str(), "g");
        assert_eq!(d.group_state.as_str(), "Stable");
        assert_eq!((d.group_epoch, d.assignment_epoch), (1, 1));
        assert_eq!(d.assignor_name.as_str(), "uniform");
        assert_eq!(d.members.len(), 1);
        let m = &d.members[0];
        assert_eq!(m.member_id.as_str(), "a");
        assert_eq!(m.instance_id.as_deref(), Some("inst"));
        assert_eq!(m.rack_id.as_deref(), Some("r1"));
        assert_eq!(m.member_epoch, 1);
        assert_eq!(
            (m.client_id.as_str(), m.client_host.as_str()),
            ("client", "/127.0.0.1")
        );
        assert_eq!(
            m.subscribed_topic_names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>(),
            vec!["foo"]
        );
        assert_eq!(m.member_type, 1);
        assert_eq!(m.assignment.topic_partitions.len(), 1);
        assert_eq!(m.assignment.topic_partitions[0].topic_name.as_str(), "foo");
        assert_eq!(m.assignment.topic_partitions[0].partitions, vec![0, 1]);
        assert_eq!(
            m.target_assignment.topic_partitions[0].partitions,
            vec![0, 1]
        );
        assert_eq!(
            ConsumerGroup::new("e".into())
                .describe(&t)
                .group_state
                .as_str(),
            "Empty"
        );
    }

    #[test]
    fn offset_commit_validation() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        assert_eq!(g.validate_offset_commit("", None, -1), Ok(()));
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        assert_eq!(g.validate_offset_commit("a", None, 1), Ok(()));
        assert_eq!(g.validate_offset_commit("a", None, 0), Err(113));
        assert_eq!(g.validate_offset_commit("", None, -1), Err(25));
        assert_eq!(g.validate_offset_commit("zz", None, 1), Err(25));
        assert!(g.remove_member("a"));
        assert!(!g.remove_member("a"));
        assert_eq!(g.validate_offset_commit("", None, -1), Ok(()));
    }

    // ---- Persistence ----

    type Records = Vec<(Vec<u8>, Option<Vec<u8>>)>;

    /// The key types (and whether a tombstone) of records, for order checks.
    fn kinds(records: &Records) -> Vec<(OffsetsKey, bool)> {
        records
            .iter()
            .map(|(k, v)| (records::decode_key(k).unwrap(), v.is_some()))
            .collect()
    }

    fn key_type(key: &OffsetsKey) -> i16 {
        match key {
            OffsetsKey::ConsumerGroupMetadata { .. } => 3,
            OffsetsKey::ConsumerGroupPartitionMetadata { .. } => 4,
            OffsetsKey::ConsumerGroupMemberMetadata { .. } => 5,
            OffsetsKey::ConsumerGroupTargetAssignmentMetadata { .. } => 6,
            OffsetsKey::ConsumerGroupTargetAssignmentMember { .. } => 7,
            OffsetsKey::ConsumerGroupCurrentMemberAssignment { .. } => 8,
            _ => -1,
        }
    }

    /// (key type, member id, is a value) of each record.
    fn summary(records: &Records) -> Vec<(i16, String, bool)> {
        kinds(records)
            .into_iter()
            .map(|(key, value)| {
                let member = match &key {
                    OffsetsKey::ConsumerGroupMemberMetadata { member, .. }
                    | OffsetsKey::ConsumerGroupTargetAssignmentMember { member, .. }
                    | OffsetsKey::ConsumerGroupCurrentMemberAssignment { member, .. } => {
                        member.clone()
                    }
                    _ => String::new(),
                };
                (key_type(&key), member, value)
            })
            .collect()
    }

    fn s(kind: i16, member: &str, value: bool) -> (i16, String, bool) {
        (kind, member.to_string(), value)
    }

    /// Takes the records and checks every one is of group `g`.
    fn take(g: &mut ConsumerGroup, log: &mut Records) -> Records {
        let records = g.take_records();
        for (key, _) in &records {
            let key = records::decode_key(key).unwrap();
            assert_eq!(key.group_id(), Some(g.group_id()));
            assert!(key.is_consumer_group_record());
        }
        log.extend(records.iter().cloned());
        records
    }

    #[test]
    fn heartbeat_records_in_kafka_order() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        let mut log = Vec::new();
        // A refused heartbeat writes nothing.
        hb(&mut g, &beat("x", 3, None), &t, 0);
        assert!(g.take_records().is_empty());

        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        let records = take(&mut g, &mut log);
        assert_eq!(
            summary(&records),
            vec![
                s(5, "a", true),
                s(3, "", true),
                s(7, "a", true),
                s(6, "", true),
                s(8, "a", true)
            ]
        );
        // Nothing changed since.
        assert!(g.take_records().is_empty());
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 10);
        assert!(g.take_records().is_empty());

        // b joins: a's target changes too, but only b is reconciled in this call.
        hb(&mut g, &join("b", None, &["foo"]), &t, 20);
        assert_eq!(
            summary(&take(&mut g, &mut log)),
            vec![
                s(5, "b", true),
                s(3, "", true),
                s(7, "a", true),
                s(7, "b", true),
                s(6, "", true),
                s(8, "b", true)
            ]
        );
        // a revokes: only its current assignment changes.
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 30);
        assert_eq!(summary(&take(&mut g, &mut log)), vec![s(8, "a", true)]);

        // b leaves: Kafka's removeMember tombstones, then the epoch bump.
        hb(&mut g, &beat("b", LEAVE_GROUP_MEMBER_EPOCH, None), &t, 40);
        assert_eq!(
            summary(&take(&mut g, &mut log)),
            vec![
                s(8, "b", false),
                s(7, "b", false),
                s(5, "b", false),
                s(3, "", true)
            ]
        );

        // Deleting the group tombstones everything, group metadata last.
        g.mark_dead();
        assert_eq!(
            summary(&take(&mut g, &mut log)),
            vec![
                s(8, "a", false),
                s(7, "a", false),
                s(6, "", false),
                s(5, "a", false),
                s(4, "", false),
                s(3, "", false)
            ]
        );
        // Replaying the whole log ends with a dead, empty group.
        let replayed = ConsumerGroup::replayed("g", &log, 100);
        assert_eq!(replayed.state(), ConsumerGroupState::Dead);
        assert!(replayed.is_empty());
    }

    #[test]
    fn static_member_records() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        let mut log = Vec::new();
        hb(&mut g, &join("a", Some("i"), &["foo"]), &t, 0);
        take(&mut g, &mut log);
        // A temporary leave (-2) only rewrites the current assignment.
        hb(
            &mut g,
            &beat("a", LEAVE_GROUP_STATIC_MEMBER_EPOCH, None)
                .with_instance_id(Some(StrBytes::from_static_str("i"))),
            &t,
            10,
        );
        assert_eq!(summary(&take(&mut g, &mut log)), vec![s(8, "a", true)]);
        let replayed = ConsumerGroup::replayed("g", &log, 10);
        assert_eq!(replayed.persisted_state(), g.persisted_state());

        // The instance comes back under a new member id: Kafka's replaceMember.
        hb(&mut g, &join("a2", Some("i"), &["foo"]), &t, 20);
        assert_eq!(
            summary(&take(&mut g, &mut log)),
            vec![
                s(8, "a", false),
                s(7, "a", false),
                s(5, "a", false),
                s(5, "a2", true),
                s(7, "a2", true),
                s(8, "a2", true)
            ]
        );
        let mut replayed = ConsumerGroup::replayed("g", &log, 20);
        assert_eq!(replayed.persisted_state(), g.persisted_state());
        // The static member index is rebuilt: a2 may heartbeat with its instance id.
        let request = beat("a2", 1, Some(&[(T1, &[0, 1])]))
            .with_instance_id(Some(StrBytes::from_static_str("i")));
        let r = hb(&mut replayed, &request, &t, 30);
        assert_eq!((r.error_code, r.member_epoch), (0, 1));
        assert!(replayed.take_records().is_empty());
    }

    #[test]
    fn replayed_group_behaves_like_the_original() {
        let t = topics(4);
        let mut g = ConsumerGroup::new("g".into());
        let mut log: Records = Vec::new();
        let mut now = 0;
        // Every step: (request, and what the member owns afterwards per the response).
        let steps: Vec<ConsumerGroupHeartbeatRequest> = vec![
            join("a", None, &["foo", "bar"]),
            join("b", Some("ib"), &["foo"]),
            beat("a", 1, Some(&[(T1, &[0, 1, 2, 3]), (T2, &[0, 1])])),
            {
                let mut r = join("c", None, &[]);
                r.subscribed_topic_names = None;
                r.subscribed_topic_regex = Some(StrBytes::from_static_str("b.*"));
                r.server_assignor = Some(StrBytes::from_static_str("range"));
                r.rack_id = Some(StrBytes::from_static_str("rack-1"));
                r
            },
        ];
        for request in &steps {
            now += 10;
            let r = hb(&mut g, request, &t, now);
            assert_eq!(r.error_code, 0, "{request:?}");
            take(&mut g, &mut log);
            // The log so far rebuilds the group exactly.
            let replayed = ConsumerGroup::replayed("g", &log, now);
            assert_eq!(replayed.persisted_state(), g.persisted_state());
            assert_eq!(replayed.describe(&t), g.describe(&t));
        }
        assert!(g.members().any(|m| m.state != MemberState::Stable));

        // From here both groups get the same heartbeats: the members carry on with
        // their epochs and the answers, states and records are the same.
        let mut replayed = ConsumerGroup::replayed("g", &log, now);
        let mut replayed_log: Records = Vec::new();
        let ids: Vec<String> = g.members().map(|m| m.member_id.to_string()).collect();
        let owned_now = |g: &ConsumerGroup, id: &str| -> Vec<RequestTopicPartitions> {
            let m = g.members().find(|m| m.member_id == id).unwrap();
            let mut all = m.assigned.clone();
            for (topic, ps) in m.pending_revocation {
                all.entry(*topic).or_default().extend(ps.iter().copied());
            }
            all.into_iter()
                .map(|(topic_id, ps)| {
                    let mut tp = RequestTopicPartitions::default();
                    tp.topic_id = topic_id;
                    tp.partitions = ps.into_iter().collect();
                    tp
                })
                .collect()
        };
        for round in 0..4 {
            for id in &ids {
                now += 10;
                let epoch = g
                    .members()
                    .find(|m| m.member_id == id)
                    .unwrap()
                    .member_epoch;
                let mut request = beat(id, epoch, None);
                // Acknowledge revocations by sending only the assigned partitions.
                let m = g.members().find(|m| m.member_id == id).unwrap();
                request.topic_partitions = Some(if round % 2 == 0 {
                    owned_now(&g, id)
                } else {
                    m.assigned
                        .iter()
                        .map(|(topic_id, ps)| {
                            let mut tp = RequestTopicPartitions::default();
                            tp.topic_id = *topic_id;
                            tp.partitions = ps.iter().copied().collect();
                            tp
                        })
                        .collect()
                });
                if id == "b" {
                    request.instance_id = Some(StrBytes::from_static_str("ib"));
                }
                let original = hb(&mut g, &request, &t, now);
                let again = hb(&mut replayed, &request, &t, now);
                assert_eq!(original.error_code, 0, "{id} round {round}");
                assert_eq!(again, original, "{id} round {round}");
                let records = take(&mut g, &mut log);
                assert_eq!(take(&mut replayed, &mut replayed_log), records);
                assert_eq!(replayed.describe(&t), g.describe(&t));
            }
        }
        assert_eq!(g.state(), ConsumerGroupState::Stable);
        assert_eq!(replayed.persisted_state(), g.persisted_state());
        assert_eq!(replayed.group_epoch(), g.group_epoch());
        assert_eq!(replayed.assignment_epoch(), g.assignment_epoch());

        // Sessions restart at load: the replayed members expire a session after it.
        let mut replayed = ConsumerGroup::replayed("g", &log, now);
        assert_eq!(replayed.next_deadline_ms(), Some(now + 45_000));
        assert!(replayed.expire(now + 44_999).is_empty());
        assert_eq!(replayed.expire(now + 45_000).len(), 3);
        let records = replayed.take_records();
        assert_eq!(
            summary(&records).iter().filter(|r| !r.2).count(),
            9,
            "three tombstones per member"
        );
        assert_eq!(summary(&records).last(), Some(&s(3, "", true)));
    }

    #[test]
    fn topic_changes_after_a_load_still_bump_the_epoch() {
        let mut g = ConsumerGroup::new("g".into());
        let mut log = Vec::new();
        hb(&mut g, &join("a", None, &["foo"]), &topics(2), 0);
        take(&mut g, &mut log);
        let mut replayed = ConsumerGroup::replayed("g", &log, 0);
        // Same topics: no bump.
        hb(
            &mut replayed,
            &beat("a", 1, Some(&[(T1, &[0, 1])])),
            &topics(2),
            10,
        );
        assert_eq!(replayed.group_epoch(), 1);
        assert!(replayed.take_records().is_empty());
        // foo grew: the hash differs, so the group epoch moves on.
        let mut replayed = ConsumerGroup::replayed("g", &log, 0);
        let r = hb(
            &mut replayed,
            &beat("a", 1, Some(&[(T1, &[0, 1])])),
            &topics(3),
            10,
        );
        assert_eq!((r.error_code, r.member_epoch), (0, 2));
        assert_eq!(
            summary(&replayed.take_records()),
            vec![
                s(3, "", true),
                s(7, "a", true),
                s(6, "", true),
                s(8, "a", true)
            ]
        );
    }

    #[test]
    fn old_partition_metadata_is_tombstoned_with_the_next_epoch() {
        let mut g = ConsumerGroup::new("g".into());
        let mut log = Vec::new();
        hb(&mut g, &join("a", None, &["foo"]), &topics(2), 0);
        take(&mut g, &mut log);
        // A record Kafka 4.0 wrote.
        log.push((
            records::encode_key(&OffsetsKey::ConsumerGroupPartitionMetadata { group: "g".into() }),
            Some(records::encode_consumer_group_partition_metadata_value(
                &records::ConsumerGroupPartitionMetadataValue::default(),
            )),
        ));
        let mut replayed = ConsumerGroup::replayed("g", &log, 0);
        hb(&mut replayed, &join("b", None, &["foo"]), &topics(2), 10);
        let records = summary(&replayed.take_records());
        assert_eq!(
            &records[..3],
            &[s(5, "b", true), s(4, "", false), s(3, "", true)]
        );
        hb(&mut replayed, &join("c", None, &["foo"]), &topics(2), 20);
        assert!(!summary(&replayed.take_records()).contains(&s(4, "", false)));
    }

    #[test]
    fn replay_errors_and_foreign_records() {
        let mut g = ConsumerGroup::new("g".into());
        let key = OffsetsKey::ConsumerGroupMetadata { group: "g".into() };
        assert!(g.replay(&key, Some(&[0, 0, 0])).is_err());
        // Another group's or a non-consumer-group record is ignored.
        let other = OffsetsKey::ConsumerGroupMetadata { group: "h".into() };
        let value = records::encode_consumer_group_metadata_value(&ConsumerGroupMetadataValue {
            epoch: 9,
            metadata_hash: 0,
        });
        g.replay(&other, Some(&value)).unwrap();
        g.replay(
            &OffsetsKey::GroupMetadata { group: "g".into() },
            Some(&value),
        )
        .unwrap();
        assert_eq!(g.group_epoch(), 0);
        g.replay(&key, Some(&value)).unwrap();
        assert_eq!(g.group_epoch(), 9);
        // Tombstones of unknown members are no-ops.
        for key in [
            OffsetsKey::ConsumerGroupMemberMetadata {
                group: "g".into(),
                member: "x".into(),
            },
            OffsetsKey::ConsumerGroupCurrentMemberAssignment {
                group: "g".into(),
                member: "x".into(),
            },
            OffsetsKey::ConsumerGroupTargetAssignmentMember {
                group: "g".into(),
                member: "x".into(),
            },
        ] {
            g.replay(&key, None).unwrap();
        }
        g.finish_load(0);
        assert!(g.is_empty());
        assert!(g.take_records().is_empty());
    }
}
