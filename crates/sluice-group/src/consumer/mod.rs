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
//!
//! The code is cut as Kafka's group coordinator cuts it:
//!
//! - this module: the group ([`ConsumerGroup`]) and its settings, its state, its
//!   membership (members joining, replaced or fenced, the partition owners), the
//!   timers, ConsumerGroupDescribe and the offset commit checks;
//! - `member`: one member, its epochs and its [`MemberState`] (Kafka's
//!   `ConsumerGroupMember`);
//! - `heartbeat`: ConsumerGroupHeartbeat (Kafka's
//!   `GroupMetadataManager.consumerGroupHeartbeat`);
//! - `reconciliation`: a member's current assignment moving toward its target
//!   (Kafka's `CurrentAssignmentBuilder`);
//! - `subscription`: the subscribed topics (names and regexes) and their metadata;
//! - `target_assignment`: the target assignment the server assignors compute
//!   (Kafka's `TargetAssignmentBuilder`);
//! - `classic`: classic-protocol members and the online migration;
//! - `persist`: the ConsumerGroup* records written to and replayed from
//!   `__consumer_offsets`.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, Hasher};

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribeAssignment, DescribedGroup, Member as DescribeMember,
    TopicPartitions as DescribeTopicPartitions,
};
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use regex::Regex;
use sluice_protocol::ErrorCode;
use uuid::Uuid;

use crate::assignor::{self, TopicPartitions};

use member::Member;
use persist::{Changes, same_current_assignment, same_metadata};
use subscription::metadata_hash;

mod classic;
mod heartbeat;
mod member;
mod persist;
mod reconciliation;
mod subscription;
mod target_assignment;
#[cfg(test)]
mod test_support;

pub use member::{MemberState, MemberView};

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
    ) -> Result<(), ErrorCode> {
        let _ = group_instance_id;
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let Some(member) = self.members.get(member_id) else {
            return Err(ErrorCode::UNKNOWN_MEMBER_ID);
        };
        if member.member_epoch != member_epoch {
            return Err(if member.classic.is_some() {
                ErrorCode::ILLEGAL_GENERATION
            } else {
                ErrorCode::STALE_MEMBER_EPOCH
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

    /// Stores `member`, noting which of its records changed.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::test_support::*;
    use sluice_protocol::ErrorCode;

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
        assert_eq!(r.error_code, ErrorCode::UNKNOWN_MEMBER_ID.0);
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
        assert_eq!(
            g.validate_offset_commit("a", None, 0),
            Err(ErrorCode::STALE_MEMBER_EPOCH)
        );
        assert_eq!(
            g.validate_offset_commit("", None, -1),
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        );
        assert_eq!(
            g.validate_offset_commit("zz", None, 1),
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        );
        assert!(g.remove_member("a"));
        assert!(!g.remove_member("a"));
        assert_eq!(g.validate_offset_commit("", None, -1), Ok(()));
    }
}
