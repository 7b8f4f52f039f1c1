//! The group coordinator: consumer groups and their committed offsets.
//!
//! A group belongs to one partition of `__consumer_offsets` (Kafka's `partitionFor`:
//! the group id's Java hash modulo `offsets.topic.num.partitions`), and its coordinator
//! is that partition's leader. Everything a coordinator must remember is a record in
//! that partition, in Kafka's formats ([`sluice_group::records`]): committed offsets
//! (OffsetCommit key/value) and classic groups' metadata (members, generation,
//! assignments). When this node becomes a partition's leader it replays the partition
//! into a [`Shard`] (requests meanwhile get COORDINATOR_LOAD_IN_PROGRESS); when it stops
//! being the leader it drops the shard (NOT_COORDINATOR), and the new leader loads it.
//!
//! Durability: an OffsetCommit, a leader's SyncGroup and a DeleteGroups are answered
//! after their records are committed in `__consumer_offsets` (appended with acks=all:
//! in every in-sync replica's log), so an answered commit survives the coordinator's
//! crash and a failover. KIP-848 consumer groups keep their membership in memory only
//! (their members rejoin a new coordinator); their committed offsets are stored like
//! any other.

pub mod classic;
mod state;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use sluice_group::consumer::{ConsumerGroupConfig, Topics as ConsumerTopics};
use sluice_group::records::{self, OffsetValue, OffsetsKey};
use sluice_metadata::MetadataImage;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};

use crate::broker::{Broker, Replica};
use crate::{coordinator_log, errors};

pub use classic::{ClassicConfig, ClassicGroup, ClassicState};
pub use state::{Committed, Group, GroupKind, PendingTxnOffset, ShardState};

/// Kafka's internal topic for committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// How often the coordinator checks its deadlines (sessions, join and sync phases).
pub const TICK: Duration = Duration::from_millis(50);

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The groups of one `__consumer_offsets` partition this node leads.
#[derive(Debug)]
pub struct Shard {
    pub partition: i32,
    pub leader_epoch: i32,
    loaded: AtomicBool,
    state: Mutex<ShardState>,
}

impl Shard {
    pub fn lock(&self) -> MutexGuard<'_, ShardState> {
        guard(&self.state)
    }
}

/// The coordinator's shards, one per led partition of `__consumer_offsets`.
#[derive(Debug, Default)]
pub struct GroupCoordinator {
    shards: Mutex<HashMap<i32, Arc<Shard>>>,
    /// The offsets-expiry period (monotonic: a wall-clock jump must not stall it).
    retention_check: sluice_storage::clock::Period,
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
    /// The shard holding `group_id`, or why this node cannot serve it:
    /// NOT_COORDINATOR (another node leads its partition, or the topic does not exist
    /// yet) or COORDINATOR_LOAD_IN_PROGRESS.
    pub fn shard_for(&self, broker: &Broker, group_id: &str) -> Result<Arc<Shard>, i16> {
        let partition = coordinator_log::partition_of(&broker.image(), OFFSETS_TOPIC, group_id)
            .ok_or(errors::NOT_COORDINATOR)?;
        let shard = guard(&self.shards)
            .get(&partition)
            .cloned()
            .ok_or(errors::NOT_COORDINATOR)?;
        if !shard.loaded.load(Ordering::Acquire) {
            return Err(errors::COORDINATOR_LOAD_IN_PROGRESS);
        }
        Ok(shard)
    }

    /// Every loaded shard (ListGroups, the timer).
    pub fn loaded_shards(&self) -> Vec<Arc<Shard>> {
        guard(&self.shards)
            .values()
            .filter(|s| s.loaded.load(Ordering::Acquire))
            .cloned()
            .collect()
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
    pub fn on_image_change(&self, broker: &Arc<Broker>, image: &MetadataImage) {
        let led = coordinator_log::led_partitions(image, OFFSETS_TOPIC, broker.node_id);
        let mut shards = guard(&self.shards);
        let dropped: Vec<i32> = shards
            .iter()
            .filter(|(p, s)| led.get(p) != Some(&s.leader_epoch))
            .map(|(p, _)| *p)
            .collect();
        for partition in dropped {
            if let Some(shard) = shards.remove(&partition) {
                tracing::info!(
                    partition,
                    "no longer the group coordinator of __consumer_offsets-{partition}"
                );
                shard.lock().unload();
            }
        }
        for (partition, epoch) in led {
            if shards.contains_key(&partition) {
                continue;
            }
            let shard = Arc::new(Shard {
                partition,
                leader_epoch: epoch,
                loaded: AtomicBool::new(false),
                state: Mutex::new(ShardState::default()),
            });
            shards.insert(partition, shard.clone());
            let broker = broker.clone();
            tokio::spawn(async move { load(broker, shard).await });
        }
    }

    /// Checks every group's deadlines, writes what changed, and expires offsets.
    pub fn tick(&self, broker: &Arc<Broker>) {
        let now = sluice_storage::now_ms();
        let config = classic_config(broker);
        let retention_interval = broker
            .config
            .int_value("offsets.retention.check.interval.ms");
        let expire_offsets = self.retention_check.due(std::time::Duration::from_millis(
            retention_interval.max(1) as u64,
        ));
        let retention_ms = broker.config.int_value("offsets.retention.minutes") * 60_000;
        for shard in self.loaded_shards() {
            let mut state = shard.lock();
            let mut records = Vec::new();
            for group in state.groups.values_mut() {
                group.tick(&config, now);
                records.extend(group.take_records());
                if expire_offsets {
                    records.extend(group.expire_offsets(retention_ms, now));
                }
            }
            state.groups.retain(|_, g| !g.is_dead());
            if !records.is_empty() {
                spawn_write(broker, &shard, records);
            }
        }
    }

    /// Appends records to the shard's partition as its leader (in the order of the
    /// calls: callers hold the shard's lock). Returns the replica and the offset the
    /// high watermark must reach for the records to be committed.
    pub fn append(
        &self,
        broker: &Broker,
        shard: &Shard,
        records: &[OffsetsRecord],
    ) -> Result<(Arc<Replica>, i64), i16> {
        self.append_batch(broker, shard, records, None)
    }

    /// Appends a transaction's offset commits (TxnOffsetCommit) as a transactional batch
    /// of `producer`: they count once the transaction's COMMIT marker reaches the
    /// partition. Returns what [`GroupCoordinator::append`] returns.
    pub fn append_transactional(
        &self,
        broker: &Broker,
        shard: &Shard,
        records: &[OffsetsRecord],
        producer: (i64, i16),
    ) -> Result<(Arc<Replica>, i64), i16> {
        self.append_batch(broker, shard, records, Some(producer))
    }

    /// A transaction's marker was written to `__consumer_offsets-{partition}`: its
    /// pending offset commits there are applied (commit) or dropped (abort).
    pub fn complete_transaction(&self, partition: i32, producer_id: i64, commit: bool) {
        let shard = guard(&self.shards).get(&partition).cloned();
        if let Some(shard) = shard {
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
        broker: &Broker,
        shard: &Shard,
        records: &[OffsetsRecord],
        producer: Option<(i64, i16)>,
    ) -> Result<(Arc<Replica>, i64), i16> {
        let replica = broker
            .replica(OFFSETS_TOPIC, shard.partition)
            .ok_or(errors::NOT_COORDINATOR)?;
        if replica.leader_epoch() != shard.leader_epoch {
            return Err(errors::NOT_COORDINATOR);
        }
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
                .map_err(|_| errors::INVALID_COMMIT_OFFSET_SIZE)?;
        }
        let bytes = BytesMut::from(&builder.build()[..]);
        let required = if producer.is_some() {
            broker
                .replication
                .append_internal_as_coordinator(&replica, bytes)
        } else {
            broker.replication.append_internal(&replica, bytes)
        }
        .map_err(write_error)?;
        Ok((replica, required))
    }
}

/// The coordinator's timer: every [`TICK`], deadlines and offsets retention.
pub async fn run(broker: Arc<Broker>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
            _ = tokio::time::sleep(TICK) => {}
        }
        broker.groups.tick(&broker);
    }
}

/// Waits for an append of [`GroupCoordinator::append`] to commit; Kafka's error code
/// for the coordinator's client when it does not.
pub async fn await_commit(broker: &Broker, replica: &Replica, required: i64) -> i16 {
    let timeout = broker.config.int_value("offsets.commit.timeout.ms").max(1) as u64;
    match crate::append::await_committed(replica, required, Duration::from_millis(timeout)).await {
        errors::NONE => errors::NONE,
        code => write_error(code),
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

/// Writes records no request waits for (group metadata after a timer's change,
/// expired offsets): appended now, their commit awaited in the background.
pub fn spawn_write(broker: &Arc<Broker>, shard: &Shard, records: Vec<OffsetsRecord>) {
    match broker.groups.append(broker, shard, &records) {
        Ok((replica, required)) => {
            let broker = broker.clone();
            tokio::spawn(async move {
                let code = await_commit(&broker, &replica, required).await;
                if code != errors::NONE {
                    tracing::warn!(code, "group metadata write did not commit");
                }
            });
        }
        Err(code) => tracing::warn!(code, "group metadata write refused"),
    }
}

/// The classic-group settings from the broker's config.
pub fn classic_config(broker: &Broker) -> ClassicConfig {
    let config = &broker.config;
    let policy = config
        .get("group.consumer.migration.policy")
        .unwrap_or("bidirectional");
    ClassicConfig {
        min_session_timeout_ms: config.int_value("group.min.session.timeout.ms") as i32,
        max_session_timeout_ms: config.int_value("group.max.session.timeout.ms") as i32,
        max_size: config.int_value("group.max.size") as usize,
        initial_rebalance_delay_ms: config.int_value("group.initial.rebalance.delay.ms") as i32,
        upgrade_allowed: matches!(policy, "upgrade" | "bidirectional"),
        downgrade_allowed: matches!(policy, "downgrade" | "bidirectional"),
    }
}

/// The topics of the image as a consumer group sees them (internal topics left out).
pub fn group_topics(broker: &Broker) -> ConsumerTopics {
    let image = broker.image();
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

/// The `group.consumer.*` settings from the broker's config.
pub fn consumer_config(broker: &Broker) -> ConsumerGroupConfig {
    let config = &broker.config;
    ConsumerGroupConfig {
        session_timeout_ms: config.int_value("group.consumer.session.timeout.ms") as i32,
        heartbeat_interval_ms: config.int_value("group.consumer.heartbeat.interval.ms") as i32,
        max_size: config.int_value("group.consumer.max.size") as i32,
        assignors: config
            .get("group.consumer.assignors")
            .unwrap_or("uniform,range")
            .split(',')
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect(),
    }
}

/// Replays a partition of `__consumer_offsets` into its shard, once this node's replica
/// is its leader.
async fn load(broker: Arc<Broker>, shard: Arc<Shard>) {
    let started = std::time::Instant::now();
    let current = || {
        guard(&broker.groups.shards)
            .get(&shard.partition)
            .is_some_and(|s| Arc::ptr_eq(s, &shard))
    };
    let Some(replica) = coordinator_log::await_leadership(
        &broker,
        OFFSETS_TOPIC,
        shard.partition,
        shard.leader_epoch,
        current,
    )
    .await
    else {
        return;
    };
    let loaded = tokio::task::spawn_blocking(move || read_partition(&replica)).await;
    let state = match loaded {
        Ok(Ok(state)) => state,
        Ok(Err(error)) => {
            tracing::error!(partition = shard.partition, %error, "could not load groups");
            return;
        }
        Err(error) => {
            tracing::error!(partition = shard.partition, %error, "group load task failed");
            return;
        }
    };
    let mut state = state;
    state.finish_load(
        sluice_storage::now_ms(),
        &consumer_config(&broker),
        &group_topics(&broker),
    );
    let groups = state.groups.len();
    *shard.lock() = state;
    shard.loaded.store(true, Ordering::Release);
    tracing::info!(
        partition = shard.partition,
        groups,
        ms = started.elapsed().as_millis() as u64,
        "loaded groups of __consumer_offsets-{}",
        shard.partition
    );
}

/// Reads a partition from its start to its end and replays its records.
fn read_partition(replica: &Replica) -> Result<ShardState, String> {
    let now = sluice_storage::now_ms();
    let mut state = ShardState::default();
    coordinator_log::replay(replica, |batch| {
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
                (Some(key), Some(producer_id)) => state.replay_transactional(
                    producer_id,
                    &key,
                    record.value.as_deref(),
                    log_offset,
                ),
                (Some(key), None) => state.replay(&key, record.value.as_deref(), log_offset, now),
                (None, _) => {}
            }
        }
    })?;
    Ok(state)
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
