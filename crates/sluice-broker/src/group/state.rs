//! What a shard holds: its groups (classic or KIP-848 consumer groups) and their
//! committed offsets, rebuilt from `__consumer_offsets` by [`ShardState::replay`].

use std::collections::HashMap;

use sluice_group::consumer::{ConsumerGroup, ConsumerGroupConfig, Topics};
use sluice_group::records::{self, OffsetValue, OffsetsKey};
use sluice_protocol::ErrorCode;

use super::classic::{ClassicConfig, ClassicGroup};
use super::{OffsetMap, OffsetsRecord, group_record, offset_record};
use crate::errors;

/// A committed offset and where its record is in the log (later records win).
#[derive(Debug, Clone)]
pub struct Committed {
    pub value: OffsetValue,
    pub log_offset: i64,
}

/// The protocol a group's members use.
#[derive(Debug)]
pub enum GroupKind {
    Classic(Box<ClassicGroup>),
    /// KIP-848 (`group.protocol=consumer`).
    Consumer(Box<ConsumerGroup>),
}

/// One group: its membership and its committed offsets.
#[derive(Debug)]
pub struct Group {
    pub group_id: String,
    pub kind: GroupKind,
    pub offsets: OffsetMap,
    /// Deleted (DeleteGroups, or every offset expired from an empty group).
    pub dead: bool,
    /// Records to write before the group's own next ones (the tombstones of the kind it
    /// was before a migration).
    pub pending_records: Vec<OffsetsRecord>,
}

impl Group {
    /// A new, empty classic group (what a simple consumer's commit creates).
    pub fn new(group_id: &str, now: i64) -> Group {
        Group {
            group_id: group_id.to_string(),
            kind: GroupKind::Classic(Box::new(ClassicGroup::new(group_id.to_string(), now))),
            offsets: OffsetMap::new(),
            dead: false,
            pending_records: Vec::new(),
        }
    }

    pub fn is_dead(&self) -> bool {
        self.dead
    }

    /// Whether the group has no members.
    pub fn is_empty(&self) -> bool {
        match &self.kind {
            GroupKind::Classic(group) => group.is_empty(),
            GroupKind::Consumer(group) => group.is_empty(),
        }
    }

    /// The state as ListGroups and DescribeGroups name it.
    pub fn state_name(&self) -> &'static str {
        if self.dead {
            return "Dead";
        }
        match &self.kind {
            GroupKind::Classic(group) => group.state.as_str(),
            GroupKind::Consumer(group) => group.state().as_str(),
        }
    }

    /// ListGroups' protocol type: the classic group's, or "consumer".
    pub fn protocol_type(&self) -> String {
        match &self.kind {
            GroupKind::Classic(group) => group.protocol_type.clone().unwrap_or_default(),
            GroupKind::Consumer(_) => "consumer".into(),
        }
    }

    /// ListGroups v5's group type.
    pub fn type_name(&self) -> &'static str {
        match &self.kind {
            GroupKind::Classic(_) => "classic",
            GroupKind::Consumer(_) => "consumer",
        }
    }

    pub fn classic_mut(&mut self) -> Option<&mut ClassicGroup> {
        match &mut self.kind {
            GroupKind::Classic(group) => Some(group),
            GroupKind::Consumer(_) => None,
        }
    }

    /// Kafka's offset-commit checks for this group's kind.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        instance: Option<&str>,
        generation_or_epoch: i32,
    ) -> Result<(), ErrorCode> {
        match &self.kind {
            GroupKind::Classic(group) => {
                group.validate_offset_commit(member_id, instance, generation_or_epoch)
            }
            GroupKind::Consumer(group) => {
                if generation_or_epoch < 0 && member_id.is_empty() && group.is_empty() {
                    return Ok(());
                }
                group.validate_offset_commit(member_id, instance, generation_or_epoch)
            }
        }
    }

    pub fn tick(&mut self, config: &ClassicConfig, now: i64) {
        match &mut self.kind {
            GroupKind::Classic(group) => {
                group.tick(config, now);
            }
            GroupKind::Consumer(group) => {
                let fenced = group.expire(now);
                let any = !fenced.is_empty();
                for member in fenced {
                    tracing::info!(group = %self.group_id, %member, "session expired; member fenced");
                }
                if any {
                    self.maybe_downgrade(config, now);
                }
            }
        }
    }

    /// KIP-848's online downgrade: a consumer group whose last consumer-protocol member
    /// left, with classic members still in it, becomes a classic group again (when
    /// `group.consumer.migration.policy` allows), which rebalances at once.
    pub fn maybe_downgrade(&mut self, config: &ClassicConfig, now: i64) -> bool {
        if !config.downgrade_allowed {
            return false;
        }
        let GroupKind::Consumer(group) = &self.kind else {
            return false;
        };
        let Some(snapshot) = group.to_classic() else {
            return false;
        };
        if snapshot.members.len() > config.max_size {
            return false;
        }
        tracing::info!(group = %self.group_id, members = snapshot.members.len(), "consumer group downgraded to a classic group");
        if let GroupKind::Consumer(group) = &mut self.kind {
            // Its records go: what changed, then its tombstones (Kafka's order).
            self.pending_records.extend(group.take_records());
            group.mark_dead();
            self.pending_records.extend(group.take_records());
        }
        self.kind = GroupKind::Classic(Box::new(ClassicGroup::from_downgrade(
            self.group_id.clone(),
            &snapshot,
            config,
            now,
        )));
        true
    }

    /// The records of what changed in the group since the last call, in the order to
    /// write them: a classic group's metadata when it changed, a consumer group's
    /// member, epoch and assignment records (Kafka's), after any pending ones.
    pub fn take_records(&mut self) -> Vec<OffsetsRecord> {
        let mut records = std::mem::take(&mut self.pending_records);
        match &mut self.kind {
            GroupKind::Classic(group) => {
                if group.dirty {
                    group.dirty = false;
                    records.push(group_record(&self.group_id, Some(&group.stored_value())));
                }
            }
            GroupKind::Consumer(group) => records.extend(group.take_records()),
        }
        records
    }

    /// Becomes a consumer group (KIP-848's upgrade, or an empty classic group taken
    /// over): the classic group's metadata is tombstoned first.
    pub fn become_consumer(&mut self, group: ConsumerGroup) {
        if matches!(&self.kind, GroupKind::Classic(classic) if classic.generation > 0) {
            self.pending_records
                .push(group_record(&self.group_id, None));
        }
        self.kind = GroupKind::Consumer(Box::new(group));
    }

    /// Offsets retention (`offsets.retention.minutes`): an empty group's offsets expire
    /// once the group has been empty and the commit is older than the retention
    /// (or at an explicit expire timestamp, OffsetCommit v1); tombstones for them, and
    /// the group itself when nothing is left of it.
    pub fn expire_offsets(&mut self, retention_ms: i64, now: i64) -> Vec<OffsetsRecord> {
        let empty_since = match &self.kind {
            GroupKind::Classic(group) if group.is_idle() => Some(group.state_timestamp),
            GroupKind::Consumer(group) if group.is_empty() => Some(i64::MIN),
            _ => None,
        };
        let expired: Vec<(String, i32)> = self
            .offsets
            .iter()
            .filter(|(_, c)| match c.value.expire_timestamp {
                Some(at) => at <= now,
                None => empty_since
                    .is_some_and(|since| since.max(c.value.commit_timestamp) + retention_ms <= now),
            })
            .map(|(k, _)| k.clone())
            .collect();
        let mut records: Vec<OffsetsRecord> = expired
            .iter()
            .map(|(topic, partition)| offset_record(&self.group_id, topic, *partition, None))
            .collect();
        for key in &expired {
            self.offsets.remove(key);
        }
        if !expired.is_empty() {
            tracing::info!(group = %self.group_id, count = expired.len(), "expired committed offsets");
        }
        // An empty group with nothing committed is forgotten (Kafka's cleanup).
        if self.offsets.is_empty() && empty_since.is_some() {
            self.dead = true;
            if let GroupKind::Consumer(group) = &mut self.kind {
                group.mark_dead();
                records.extend(group.take_records());
            }
            records.push(group_record(&self.group_id, None));
        }
        records
    }
}

/// A transactional offset commit (TxnOffsetCommit) waiting for its transaction's
/// marker: it counts only once the transaction commits.
#[derive(Debug, Clone)]
pub struct PendingTxnOffset {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub value: OffsetValue,
    pub log_offset: i64,
}

/// A shard's groups.
#[derive(Debug, Default)]
pub struct ShardState {
    pub groups: HashMap<String, Group>,
    /// Transactional offset commits by producer id, until their COMMIT or ABORT marker.
    pub pending_txn: HashMap<i64, Vec<PendingTxnOffset>>,
}

impl ShardState {
    /// Applies one record of `__consumer_offsets` (loading).
    pub fn replay(&mut self, key: &[u8], value: Option<&[u8]>, log_offset: i64, now: i64) {
        let key = match records::decode_key(key) {
            Ok(key) => key,
            Err(error) => {
                tracing::warn!(log_offset, %error, "skipping an unreadable key in __consumer_offsets");
                return;
            }
        };
        match key {
            OffsetsKey::Offset {
                group,
                topic,
                partition,
            } => match value {
                None => {
                    if let Some(g) = self.groups.get_mut(&group) {
                        g.offsets.remove(&(topic, partition));
                    }
                }
                Some(bytes) => match records::decode_offset_value(bytes) {
                    Ok(value) => {
                        self.groups
                            .entry(group.clone())
                            .or_insert_with(|| Group::new(&group, now))
                            .offsets
                            .insert((topic, partition), Committed { value, log_offset });
                    }
                    Err(error) => {
                        tracing::warn!(log_offset, %error, "skipping an unreadable offset in __consumer_offsets")
                    }
                },
            },
            OffsetsKey::GroupMetadata { group } => match value {
                // The group's membership is gone; offsets have their own tombstones.
                None => {
                    if let Some(g) = self
                        .groups
                        .get_mut(&group)
                        .filter(|g| matches!(g.kind, GroupKind::Classic(_)))
                    {
                        if g.offsets.is_empty() {
                            self.groups.remove(&group);
                        } else {
                            *g = Group {
                                offsets: std::mem::take(&mut g.offsets),
                                ..Group::new(&group, now)
                            };
                        }
                    }
                }
                Some(bytes) => match records::decode_group_value(bytes) {
                    Ok(value) => {
                        let entry = self
                            .groups
                            .entry(group.clone())
                            .or_insert_with(|| Group::new(&group, now));
                        entry.kind = GroupKind::Classic(Box::new(ClassicGroup::from_stored(
                            group, &value, now,
                        )));
                    }
                    Err(error) => {
                        tracing::warn!(log_offset, %error, "skipping unreadable group metadata in __consumer_offsets")
                    }
                },
            },
            key if key.is_consumer_group_record() => self.replay_consumer_group(&key, value, now),
            _ => {}
        }
    }

    /// Applies a KIP-848 record to its consumer group (created by the first value; its
    /// ConsumerGroupMetadata tombstone, the last of a deleted group, removes it and
    /// leaves only its offsets).
    fn replay_consumer_group(&mut self, key: &OffsetsKey, value: Option<&[u8]>, now: i64) {
        let Some(group_id) = key.group_id().map(str::to_string) else {
            return;
        };
        if value.is_some() {
            let group = self
                .groups
                .entry(group_id.clone())
                .or_insert_with(|| Group::new(&group_id, now));
            if !matches!(group.kind, GroupKind::Consumer(_)) {
                group.kind = GroupKind::Consumer(Box::new(ConsumerGroup::new(group_id.clone())));
            }
        }
        let Some(group) = self.groups.get_mut(&group_id) else {
            return;
        };
        let GroupKind::Consumer(consumer) = &mut group.kind else {
            return;
        };
        if let Err(error) = consumer.replay(key, value) {
            tracing::warn!(group = %group_id, %error, "skipping an unreadable consumer group record");
        }
        if consumer.state() == sluice_group::consumer::ConsumerGroupState::Dead {
            if group.offsets.is_empty() {
                self.groups.remove(&group_id);
            } else {
                group.kind = GroupKind::Classic(Box::new(ClassicGroup::new(group_id, now)));
            }
        }
    }

    /// After a load: consumer groups start their members' session timers and resolve
    /// their topics.
    pub fn finish_load(&mut self, now: i64, config: &ConsumerGroupConfig, topics: &Topics) {
        for group in self.groups.values_mut() {
            if let GroupKind::Consumer(consumer) = &mut group.kind {
                consumer.finish_load_with(now, config);
                consumer.refresh_topics(topics);
            }
        }
    }

    /// Applies a record of a transactional batch (loading): an offset commit waits for
    /// its producer's marker.
    pub fn replay_transactional(
        &mut self,
        producer_id: i64,
        key: &[u8],
        value: Option<&[u8]>,
        log_offset: i64,
    ) {
        let (
            Ok(OffsetsKey::Offset {
                group,
                topic,
                partition,
            }),
            Some(bytes),
        ) = (records::decode_key(key), value)
        else {
            return;
        };
        match records::decode_offset_value(bytes) {
            Ok(value) => self.add_pending_txn(
                producer_id,
                group,
                vec![((topic, partition), value)],
                log_offset,
            ),
            Err(error) => {
                tracing::warn!(log_offset, %error, "skipping an unreadable transactional offset in __consumer_offsets")
            }
        }
    }

    /// Records transactional offset commits of `producer_id` (written at `log_offset`).
    pub fn add_pending_txn(
        &mut self,
        producer_id: i64,
        group: String,
        offsets: Vec<((String, i32), OffsetValue)>,
        log_offset: i64,
    ) {
        let pending = self.pending_txn.entry(producer_id).or_default();
        for ((topic, partition), value) in offsets {
            pending.push(PendingTxnOffset {
                group: group.clone(),
                topic,
                partition,
                value,
                log_offset,
            });
        }
    }

    /// A transaction's marker reached this partition: its offsets become committed
    /// (COMMIT; a later record still wins) or are dropped (ABORT). Returns how many.
    pub fn complete_txn(&mut self, producer_id: i64, commit: bool, now: i64) -> usize {
        let Some(pending) = self.pending_txn.remove(&producer_id) else {
            return 0;
        };
        let count = pending.len();
        if commit {
            for offset in pending {
                self.apply_offsets(
                    &offset.group,
                    vec![((offset.topic, offset.partition), Some(offset.value))],
                    offset.log_offset,
                    now,
                );
            }
        }
        count
    }

    /// Whether a transaction still pending holds an offset for the partition (OffsetFetch
    /// with `require_stable` answers UNSTABLE_OFFSET_COMMIT then).
    pub fn has_pending_txn(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn
            .values()
            .flatten()
            .any(|p| p.group == group && p.topic == topic && p.partition == partition)
    }

    /// Whether a transaction still pending holds an offset of the group.
    pub fn group_has_pending_txn(&self, group: &str) -> bool {
        self.pending_txn
            .values()
            .flatten()
            .any(|p| p.group == group)
    }

    /// This node stopped coordinating the shard: waiting requests get NOT_COORDINATOR.
    pub fn unload(&mut self) {
        self.pending_txn.clear();
        for group in self.groups.values_mut() {
            if let GroupKind::Classic(classic) = &mut group.kind {
                classic.fail_all(errors::NOT_COORDINATOR);
            }
        }
        self.groups.clear();
    }

    /// Applies committed offsets after their write committed (a later record wins).
    pub fn apply_offsets(
        &mut self,
        group_id: &str,
        offsets: Vec<((String, i32), Option<OffsetValue>)>,
        log_offset: i64,
        now: i64,
    ) {
        let group = self
            .groups
            .entry(group_id.to_string())
            .or_insert_with(|| Group::new(group_id, now));
        for (key, value) in offsets {
            let newer = group
                .offsets
                .get(&key)
                .is_none_or(|c| c.log_offset <= log_offset);
            if !newer {
                continue;
            }
            match value {
                Some(value) => {
                    group.offsets.insert(key, Committed { value, log_offset });
                }
                None => {
                    group.offsets.remove(&key);
                }
            }
        }
    }
}
