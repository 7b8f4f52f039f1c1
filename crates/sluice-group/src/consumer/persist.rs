//! The group's records in `__consumer_offsets`, as Kafka's group coordinator writes
//! them: the changes since the last write turned into ConsumerGroup* records, the
//! replay of those records when a partition is loaded, and the end of the load.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::assignor::TopicPartitions;
use crate::records::{
    self, ClassicMemberMetadata, ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataValue,
    OffsetsKey, RecordError,
};

use super::member::{ClassicMetadata, Member, MemberState};
use super::{ConsumerGroup, ConsumerGroupConfig, LEAVE_GROUP_MEMBER_EPOCH, Topics};

/// The changes not yet turned into records (see [`ConsumerGroup::take_records`]).
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Members removed, in removal order: their records are tombstoned.
    pub(super) removed: Vec<String>,
    /// Members whose metadata (subscription, client, classic metadata) changed.
    pub(super) metadata: BTreeSet<String>,
    /// Members whose target assignment changed.
    pub(super) target: BTreeSet<String>,
    /// Members whose current assignment or epochs changed.
    pub(super) current: BTreeSet<String>,
    /// Set when the group was deleted: the members whose records to tombstone.
    pub(super) deleted: Option<BTreeSet<String>>,
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
}

pub(super) fn same_metadata(a: &Member, b: &Member) -> bool {
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

pub(super) fn same_current_assignment(a: &Member, b: &Member) -> bool {
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
    use crate::consumer::test_support::*;
    use crate::consumer::{ConsumerGroupState, LEAVE_GROUP_STATIC_MEMBER_EPOCH};
    use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;
    use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
    use kafka_protocol::protocol::StrBytes;

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
