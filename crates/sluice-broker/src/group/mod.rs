//! The group coordinator: consumer groups and their committed offsets.
//!
//! A group belongs to one partition of `__consumer_offsets` (Kafka's `partitionFor`:
//! the group id's Java hash modulo `offsets.topic.num.partitions`), and its coordinator
//! is that partition's leader. Everything a coordinator must remember is a record in
//! that partition, in Kafka's formats ([`sluice_group::records`]): committed offsets
//! (OffsetCommit key/value), classic groups' metadata (members, generation,
//! assignments) and KIP-848 consumer groups' records (group epoch, member metadata,
//! target and current assignments). The shards, their loading and the writes run on
//! [`crate::coordinator::CoordinatorRuntime`]: when this node becomes a partition's
//! leader it replays the partition into a [`Shard`] (requests meanwhile get
//! COORDINATOR_LOAD_IN_PROGRESS); when it stops being the leader it drops the shard
//! (NOT_COORDINATOR), and the new leader loads it.
//!
//! Durability: an OffsetCommit, a TxnOffsetCommit, a leader's SyncGroup, an
//! OffsetDelete, a DeleteGroups and a ConsumerGroupHeartbeat that changed its group are
//! answered after their records are committed in `__consumer_offsets` (appended with
//! acks=all: in every in-sync replica's log), so an answered change survives the
//! coordinator's crash and a failover. KIP-848 members keep their epochs and
//! assignments across a failover: the new coordinator replays them at load.

mod state;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use sluice_group::consumer::{ConsumerGroupConfig, Topics as ConsumerTopics};
use sluice_group::records::{self, OffsetValue, OffsetsKey};
use sluice_metadata::MetadataImage;
use sluice_protocol::{Compression, ErrorCode, NewRecord, RecordBatchBuilder};

use crate::config::BrokerConfig;
use crate::coordinator::{CoordinatorRuntime, Origin, PartitionWriter};
use crate::errors;
use crate::image::{ImageView, MetadataPublisher};

pub use classic::{ClassicConfig, ClassicGroup, ClassicState};
/// The classic group state machine lives in `sluice-group`, beside the KIP-848 one.
pub use sluice_group::classic;
pub use state::{Committed, Group, GroupKind, PendingTxnOffset, ShardState};

/// Kafka's internal topic for committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// How often the coordinator checks its deadlines (sessions, join and sync phases).
pub const TICK: Duration = Duration::from_millis(50);

/// The groups of one `__consumer_offsets` partition this node leads.
pub type Shard = crate::coordinator::Shard<ShardState>;

/// The coordinator's shards, one per led partition of `__consumer_offsets`.
#[derive(Debug)]
pub struct GroupCoordinator {
    runtime: Arc<CoordinatorRuntime<ShardState>>,
    image: ImageView,
    settings: Arc<GroupSettings>,
    /// The offsets-expiry period (monotonic: a wall-clock jump must not stall it).
    retention_check: sluice_storage::clock::Period,
}

/// The group coordinator's settings, parsed once from the broker's config (none of
/// these keys is dynamic).
#[derive(Debug, Clone)]
pub struct GroupSettings {
    pub classic: ClassicConfig,
    pub consumer: ConsumerGroupConfig,
    /// `offsets.commit.timeout.ms`: how long a write waits to commit.
    pub commit_timeout: Duration,
    /// `offsets.retention.check.interval.ms`.
    pub retention_check_interval: Duration,
    /// `offsets.retention.minutes`, in ms.
    pub retention_ms: i64,
}

impl GroupSettings {
    pub fn from_config(config: &BrokerConfig) -> GroupSettings {
        let policy = config
            .get("group.consumer.migration.policy")
            .unwrap_or("bidirectional");
        GroupSettings {
            classic: ClassicConfig {
                min_session_timeout_ms: config.int_value("group.min.session.timeout.ms") as i32,
                max_session_timeout_ms: config.int_value("group.max.session.timeout.ms") as i32,
                max_size: config.int_value("group.max.size") as usize,
                initial_rebalance_delay_ms: config.int_value("group.initial.rebalance.delay.ms")
                    as i32,
                upgrade_allowed: matches!(policy, "upgrade" | "bidirectional"),
                downgrade_allowed: matches!(policy, "downgrade" | "bidirectional"),
            },
            consumer: ConsumerGroupConfig {
                session_timeout_ms: config.int_value("group.consumer.session.timeout.ms") as i32,
                heartbeat_interval_ms: config.int_value("group.consumer.heartbeat.interval.ms")
                    as i32,
                max_size: config.int_value("group.consumer.max.size") as i32,
                assignors: config
                    .get("group.consumer.assignors")
                    .unwrap_or("uniform,range")
                    .split(',')
                    .map(|a| a.trim().to_string())
                    .filter(|a| !a.is_empty())
                    .collect(),
            },
            commit_timeout: Duration::from_millis(
                config.int_value("offsets.commit.timeout.ms").max(1) as u64,
            ),
            retention_check_interval: Duration::from_millis(
                config
                    .int_value("offsets.retention.check.interval.ms")
                    .max(1) as u64,
            ),
            retention_ms: config.int_value("offsets.retention.minutes") * 60_000,
        }
    }
}

/// Counts for the metrics ([`GroupCoordinator::counts`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GroupCounts {
    pub offsets: i64,
    pub groups: Vec<(&'static str, &'static str, i64)>,
}

impl GroupCounts {
    /// Groups of `protocol` ("classic" or "consumer"), in `state` when given.
    pub fn groups(&self, protocol: &str, state: Option<&str>) -> i64 {
        self.groups
            .iter()
            .filter(|(p, s, _)| *p == protocol && state.is_none_or(|state| *s == state))
            .map(|(_, _, n)| n)
            .sum()
    }
}

/// A record for `__consumer_offsets`: key and value (None = tombstone).
pub type OffsetsRecord = (Vec<u8>, Option<Vec<u8>>);

impl GroupCoordinator {
    /// The coordinator of `node_id`, writing through `writer`.
    pub fn new(
        node_id: i32,
        settings: GroupSettings,
        image: ImageView,
        writer: Arc<dyn PartitionWriter>,
    ) -> GroupCoordinator {
        GroupCoordinator {
            runtime: Arc::new(CoordinatorRuntime::new(OFFSETS_TOPIC, node_id, writer)),
            image,
            settings: Arc::new(settings),
            retention_check: Default::default(),
        }
    }

    /// The settings, parsed at start.
    pub fn settings(&self) -> &GroupSettings {
        &self.settings
    }

    /// The classic-group settings.
    pub fn classic_config(&self) -> &ClassicConfig {
        &self.settings.classic
    }

    /// The `group.consumer.*` settings.
    pub fn consumer_config(&self) -> &ConsumerGroupConfig {
        &self.settings.consumer
    }

    /// The topics of the current image as a consumer group sees them.
    pub fn topics(&self) -> ConsumerTopics {
        group_topics(&self.image.current())
    }

    /// The shard holding `group_id`, or why this node cannot serve it:
    /// NOT_COORDINATOR (another node leads its partition, or the topic does not exist
    /// yet) or COORDINATOR_LOAD_IN_PROGRESS.
    pub fn shard_for(&self, group_id: &str) -> Result<Arc<Shard>, ErrorCode> {
        self.runtime.shard_for(&self.image.current(), group_id)
    }

    /// Every loaded shard (ListGroups, the timer).
    pub fn loaded_shards(&self) -> Vec<Arc<Shard>> {
        self.runtime.loaded_shards()
    }

    /// What the coordinator holds now, for the metrics: committed offsets, and groups
    /// by protocol and state (`(protocol, state, count)`, states as DescribeGroups
    /// names them).
    pub fn counts(&self) -> GroupCounts {
        let mut counts = GroupCounts::default();
        for shard in self.loaded_shards() {
            let state = shard.lock();
            for group in state.groups.values().filter(|g| !g.is_dead()) {
                counts.offsets += group.offsets.len() as i64;
                let key = (group.type_name(), group.state_name());
                match counts.groups.iter_mut().find(|(p, s, _)| (*p, *s) == key) {
                    Some(entry) => entry.2 += 1,
                    None => counts.groups.push((key.0, key.1, 1)),
                }
            }
        }
        counts
    }

    /// Follows leadership of `__consumer_offsets`: loads the partitions this node now
    /// leads, drops those it no longer leads.
    pub fn on_image_change(&self, image: &MetadataImage) {
        let changes = self
            .runtime
            .on_image_change(image, |_, _| ShardState::default());
        for shard in changes.dropped {
            tracing::info!(
                partition = shard.partition,
                "no longer the group coordinator of __consumer_offsets-{}",
                shard.partition
            );
            shard.lock().unload();
        }
        for shard in changes.added {
            let runtime = self.runtime.clone();
            let settings = self.settings.clone();
            let image = self.image.clone();
            tokio::spawn(async move { load(runtime, settings, image, shard).await });
        }
    }

    /// Checks every group's deadlines, writes what changed, and expires offsets.
    pub fn tick(&self) {
        let now = sluice_storage::now_ms();
        let config = &self.settings.classic;
        let expire_offsets = self
            .retention_check
            .due(self.settings.retention_check_interval);
        let retention_ms = self.settings.retention_ms;
        for shard in self.loaded_shards() {
            let mut state = shard.lock();
            let mut records = Vec::new();
            for group in state.groups.values_mut() {
                group.tick(config, now);
                records.extend(group.take_records());
                if expire_offsets {
                    records.extend(group.expire_offsets(retention_ms, now));
                }
            }
            state.groups.retain(|_, g| !g.is_dead());
            if !records.is_empty() {
                self.spawn_write(&shard, records);
            }
        }
    }

    /// Appends records to the shard's partition as its leader (in the order of the
    /// calls: callers hold the shard's lock). Returns the partition and the offset the
    /// high watermark must reach for the records to be committed ([`GroupCoordinator::await_commit`]).
    pub fn append(
        &self,
        shard: &Shard,
        records: &[OffsetsRecord],
    ) -> Result<(i32, i64), ErrorCode> {
        self.append_batch(shard, records, None)
    }

    /// Appends a transaction's offset commits (TxnOffsetCommit) as a transactional batch
    /// of `producer`: they count once the transaction's COMMIT marker reaches the
    /// partition. Returns what [`GroupCoordinator::append`] returns.
    pub fn append_transactional(
        &self,
        shard: &Shard,
        records: &[OffsetsRecord],
        producer: (i64, i16),
    ) -> Result<(i32, i64), ErrorCode> {
        self.append_batch(shard, records, Some(producer))
    }

    /// A transaction's marker was written to `__consumer_offsets-{partition}`: its
    /// pending offset commits there are applied (commit) or dropped (abort).
    pub fn complete_transaction(&self, partition: i32, producer_id: i64, commit: bool) {
        if let Some(shard) = self.runtime.shard(partition) {
            let now = sluice_storage::now_ms();
            let count = shard.lock().complete_txn(producer_id, commit, now);
            tracing::debug!(
                partition,
                producer_id,
                commit,
                count,
                "transactional offsets completed"
            );
        }
    }

    fn append_batch(
        &self,
        shard: &Shard,
        records: &[OffsetsRecord],
        producer: Option<(i64, i16)>,
    ) -> Result<(i32, i64), ErrorCode> {
        let now = sluice_storage::now_ms();
        let mut builder = RecordBatchBuilder::new(Compression::None);
        if let Some((producer_id, epoch)) = producer {
            // Kafka's group coordinator writes transactional offsets at sequence 0 (the
            // log does not check a coordinator's sequences).
            builder = builder.producer(producer_id, epoch, 0).transactional(true);
        }
        for (key, value) in records {
            builder
                .append(&NewRecord {
                    timestamp: now,
                    key: Some(Bytes::copy_from_slice(key)),
                    value: value.as_ref().map(|v| Bytes::copy_from_slice(v)),
                    headers: Vec::new(),
                })
                .map_err(|_| ErrorCode::INVALID_COMMIT_OFFSET_SIZE)?;
        }
        let bytes = BytesMut::from(&builder.build()[..]);
        let origin = if producer.is_some() {
            Origin::CoordinatorTransactional
        } else {
            Origin::Coordinator
        };
        let required = self
            .runtime
            .append(shard, bytes, origin)
            .map_err(|code| ErrorCode(write_error(code.0)))?;
        Ok((shard.partition, required))
    }
}

/// The coordinator's timer: every [`TICK`], deadlines and offsets retention.
pub async fn run(groups: Arc<GroupCoordinator>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
            _ = tokio::time::sleep(TICK) => {}
        }
        groups.tick();
    }
}

impl GroupCoordinator {
    /// Waits for an append of [`GroupCoordinator::append`] to `partition` to commit;
    /// Kafka's error code for the coordinator's client when it does not.
    pub async fn await_commit(&self, partition: i32, required: i64) -> i16 {
        let wait = self
            .runtime
            .await_committed(partition, required, self.settings.commit_timeout);
        match wait.await {
            errors::NONE => errors::NONE,
            code => write_error(code),
        }
    }

    /// Writes records no request waits for (group metadata after a timer's change,
    /// expired offsets): appended now, their commit awaited in the background.
    pub fn spawn_write(&self, shard: &Shard, records: Vec<OffsetsRecord>) {
        match self.append(shard, &records) {
            Ok((partition, required)) => {
                let wait =
                    self.runtime
                        .await_committed(partition, required, self.settings.commit_timeout);
                tokio::spawn(async move {
                    let code = write_error(wait.await);
                    if code != errors::NONE {
                        tracing::warn!(code, "group metadata write did not commit");
                    }
                });
            }
            Err(code) => tracing::warn!(code = code.0, "group metadata write refused"),
        }
    }
}

impl MetadataPublisher for GroupCoordinator {
    fn publish(&self, image: &Arc<MetadataImage>) {
        self.on_image_change(image);
    }
}

/// Kafka's mapping of a failed `__consumer_offsets` write to the coordinator's answer.
fn write_error(code: i16) -> i16 {
    match code {
        errors::UNKNOWN_TOPIC_OR_PARTITION
        | errors::NOT_ENOUGH_REPLICAS
        | errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        | errors::REQUEST_TIMED_OUT => errors::COORDINATOR_NOT_AVAILABLE,
        errors::NOT_LEADER_OR_FOLLOWER | errors::KAFKA_STORAGE_ERROR => errors::NOT_COORDINATOR,
        errors::MESSAGE_TOO_LARGE | errors::RECORD_LIST_TOO_LARGE | errors::INVALID_FETCH_SIZE => {
            errors::INVALID_COMMIT_OFFSET_SIZE
        }
        other => other,
    }
}

/// The topics of the image as a consumer group sees them (internal topics left out).
pub fn group_topics(image: &MetadataImage) -> ConsumerTopics {
    ConsumerTopics::new(
        image
            .topics()
            .filter(|t| !crate::topic_config::is_internal(&t.name))
            .map(|t| {
                (
                    t.name.clone(),
                    uuid::Uuid::from_bytes(t.topic_id),
                    t.partitions.len() as i32,
                )
            }),
    )
}

/// Replays a partition of `__consumer_offsets` into its shard, once this node's replica
/// is its leader.
async fn load(
    runtime: Arc<CoordinatorRuntime<ShardState>>,
    settings: Arc<GroupSettings>,
    image: ImageView,
    shard: Arc<Shard>,
) {
    let started = std::time::Instant::now();
    let now = sluice_storage::now_ms();
    let replay = move |state: &mut ShardState, batch: &sluice_protocol::RecordBatch| {
        replay_batch(state, batch, now)
    };
    let Some(mut state) = runtime.load(&shard, ShardState::default(), replay).await else {
        return;
    };
    state.finish_load(
        sluice_storage::now_ms(),
        &settings.consumer,
        &group_topics(&image.current()),
    );
    let groups = state.groups.len();
    runtime.install(&shard, state);
    tracing::info!(
        partition = shard.partition,
        groups,
        ms = started.elapsed().as_millis() as u64,
        "loaded groups of __consumer_offsets-{}",
        shard.partition
    );
}

/// Applies one batch of `__consumer_offsets`, read back at load.
fn replay_batch(state: &mut ShardState, batch: &sluice_protocol::RecordBatch, now: i64) {
    if batch.is_control() {
        if let Some(commit) = control_marker(batch) {
            state.complete_txn(batch.producer_id(), commit, now);
        }
        return;
    }
    let transactional = batch.is_transactional().then(|| batch.producer_id());
    let Ok(records) = batch.records() else {
        tracing::warn!(
            offset = batch.base_offset(),
            "skipping an unreadable batch of __consumer_offsets"
        );
        return;
    };
    for record in records {
        let Ok(record) = record else {
            break;
        };
        let log_offset = batch.base_offset() + i64::from(record.offset_delta);
        match (record.key, transactional) {
            (Some(key), Some(producer_id)) => {
                state.replay_transactional(producer_id, &key, record.value.as_deref(), log_offset)
            }
            (Some(key), None) => state.replay(&key, record.value.as_deref(), log_offset, now),
            (None, _) => {}
        }
    }
}

/// The marker a control batch carries: Some(true) COMMIT, Some(false) ABORT, None for
/// anything else (Kafka's EndTransactionMarker key: version i16, type i16).
pub fn control_marker(batch: &sluice_protocol::RecordBatch) -> Option<bool> {
    let record = batch.records().ok()?.next()?.ok()?;
    let key = record.key?;
    match key.get(2..4)? {
        [0, 0] => Some(false),
        [0, 1] => Some(true),
        _ => None,
    }
}

/// The record of a committed offset.
pub fn offset_record(
    group: &str,
    topic: &str,
    partition: i32,
    value: Option<&OffsetValue>,
) -> OffsetsRecord {
    (
        records::encode_key(&OffsetsKey::Offset {
            group: group.to_string(),
            topic: topic.to_string(),
            partition,
        }),
        value.map(records::encode_offset_value),
    )
}

/// The record of a classic group's metadata (None = the group is deleted).
pub fn group_record(group: &str, value: Option<&records::GroupMetadataValue>) -> OffsetsRecord {
    (
        records::encode_key(&OffsetsKey::GroupMetadata {
            group: group.to_string(),
        }),
        value.map(records::encode_group_value),
    )
}

/// Committed offsets of one group, by topic and partition.
pub type OffsetMap = BTreeMap<(String, i32), Committed>;

#[cfg(test)]
mod tests {

    use super::*;
    use crate::coordinator::testing::{MemoryWriter, topic_image};

    fn image(leader_epoch: i32) -> MetadataImage {
        topic_image(OFFSETS_TOPIC, [7; 16], &[(0, &[1], 1, leader_epoch)])
    }

    fn committed(offset: i64) -> OffsetValue {
        OffsetValue {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 1_000,
            expire_timestamp: None,
        }
    }

    /// Committed offsets, plain and transactional, go through the runtime to the
    /// (in-memory) log; the next coordinator replays the plain ones, holds the
    /// transactional ones until their marker, and the new shard's epoch fences writes
    /// planned under the old one.
    #[tokio::test]
    async fn committed_offsets_are_replayed_by_the_next_coordinator() {
        let writer = MemoryWriter::new();
        writer.set_leader(OFFSETS_TOPIC, 0, Some(1));
        let config = BrokerConfig::load(crate::config::EMBEDDED_SERVER_PROPERTIES, &[])
            .unwrap()
            .config;
        let coordinator = GroupCoordinator::new(
            1,
            GroupSettings::from_config(&config),
            ImageView::fixed(image(1)),
            writer.clone(),
        );
        let changes = coordinator
            .runtime
            .on_image_change(&image(1), |_, _| ShardState::default());
        let shard = changes.added[0].clone();
        coordinator.runtime.install(&shard, ShardState::default());
        let plain = [offset_record("g", "t", 0, Some(&committed(42)))];
        let (partition, required) = coordinator.append(&shard, &plain).unwrap();
        assert_eq!((partition, required), (0, 1));
        let pending = [offset_record("g", "t", 1, Some(&committed(7)))];
        coordinator
            .append_transactional(&shard, &pending, (5_000, 0))
            .unwrap();
        assert_eq!(writer.batches(OFFSETS_TOPIC, 0).len(), 2);

        writer.set_leader(OFFSETS_TOPIC, 0, Some(2));
        let changes = coordinator
            .runtime
            .on_image_change(&image(2), |_, _| ShardState::default());
        assert_eq!(changes.dropped.len(), 1);
        let shard = changes.added[0].clone();
        let now = 2_000;
        let state = coordinator
            .runtime
            .load(&shard, ShardState::default(), move |state, batch| {
                replay_batch(state, batch, now)
            })
            .await
            .expect("leads at epoch 2");
        let group = &state.groups["g"];
        assert_eq!(group.offsets[&("t".to_string(), 0)].value.offset, 42);
        assert!(!group.offsets.contains_key(&("t".to_string(), 1)));
        assert_eq!(state.pending_txn[&5_000].len(), 1);

        // The old shard's epoch no longer leads: its writes are refused.
        let stale = changes.dropped[0].clone();
        assert_eq!(
            coordinator.append(&stale, &plain).unwrap_err(),
            ErrorCode::NOT_COORDINATOR
        );
    }
}
