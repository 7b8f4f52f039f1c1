//! Partition replication, Kafka's model (`ReplicaManager`, `Partition`,
//! `ReplicaFetcherManager`, `AbstractFetcherThread`): follower fetchers, the leader's
//! view of its followers, the high watermark and the in-sync replica set.
//!
//! - The metadata image says who leads each partition; [`on_image_change`] (and, for
//!   one partition, [`ensure_current`] on the request path) turns that into this node's
//!   role: a new leader starts at its log end offset's epoch with the followers' state
//!   reset; a new follower stops leading and (re)starts fetching from the new leader.
//! - Followers fetch with `num.replica.fetchers` tasks per source broker; a partition
//!   goes to fetcher `abs(31 * topic.hashCode() + partition) % num.replica.fetchers`,
//!   as Kafka's `getFetcherId`. Each task sends one Fetch (replica id = this node,
//!   sessionless) at a time to the leader's endpoint on `inter.broker.listener.name`,
//!   appends what it gets with `append_as_follower`, takes min(leader HW, own log end)
//!   as its HW, truncates when the leader answers a diverging epoch (KIP-320/595
//!   truncation on fetch) and handles OFFSET_OUT_OF_RANGE as Kafka's
//!   `fetchOffsetAndTruncate`. Errors back off `replica.fetch.backoff.ms`.
//! - The leader shrinks the ISR every `replica.lag.time.max.ms / 2` (followers not
//!   caught up for that long) and expands it when a follower's fetch reaches the HW,
//!   each through the [`AlterPartitionChannel`] to the active controller, one change in
//!   flight per partition.
//! - High watermarks are checkpointed per log directory in `replication-offset-checkpoint`
//!   every `replica.high.watermark.checkpoint.interval.ms` and at [`shutdown`]; a replica
//!   starts from its checkpointed HW.
//!
//! Costs per follower fetch round: one request and response per source broker and
//! fetcher, the records appended once (no copy beyond the socket read: they are slices of
//! the response frame, whose buffer grows as it arrives, see `sluice_protocol::frame`),
//! one state lock per partition.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use sluice_metadata::{MetadataImage, PartitionImage, Uuid};
use sluice_protocol::ErrorCode;
use sluice_protocol::connection::{ConnectionError, ConnectionSettings, FrameConnection};
use sluice_protocol::frame;
use sluice_storage::{StorageError, TopicId, TopicPartition};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::BrokerConfig;
use crate::errors;
use crate::image::{ImageView, MetadataPublisher};
use crate::replica::Replica;
use crate::replica::{IsrState, PartitionState, Role};

/// The high-watermark checkpoint file of a log directory (Kafka's name).
pub const REPLICATION_OFFSET_CHECKPOINT: &str = "replication-offset-checkpoint";
/// The Fetch version followers send (topic ids, diverging epochs, replica state).
const FETCH_VERSION: i16 = 17;
const LIST_OFFSETS_VERSION: i16 = 9;
/// How long a failed AlterPartition waits before it is sent again (Kafka's
/// controller channel retries after `retry.backoff.ms`, 100 ms).
const ALTER_PARTITION_RETRY_BACKOFF_MS: u64 = 100;
/// ListOffsets timestamps.
const LATEST_TIMESTAMP: i64 = -1;
const EARLIEST_TIMESTAMP: i64 = -2;

/// A leader's ISR change for the active controller (Kafka's AlterPartition).
#[derive(Debug, Clone)]
pub struct IsrChange {
    pub topic_id: Uuid,
    pub partition: i32,
    /// What the leader last saw: a stale leader or partition epoch is fenced.
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<i32>,
}

/// The controller's answer: the partition as it now has it, or Kafka's error code
/// (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, NOT_CONTROLLER...).
pub type AlterPartitionReply =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<PartitionImage, ErrorCode>> + Send>>;

/// How replication reaches the active controller (set once by the node's wiring).
pub trait AlterPartitionChannel: Send + Sync + std::fmt::Debug {
    fn alter_partition(&self, change: IsrChange) -> AlterPartitionReply;
}

/// Replication settings, from the broker configuration with Kafka's defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    pub lag_time_max_ms: i64,
    pub num_fetchers: usize,
    pub fetch_max_bytes: i32,
    pub fetch_wait_max_ms: i32,
    pub fetch_min_bytes: i32,
    pub fetch_backoff_ms: u64,
    pub fetch_response_max_bytes: i32,
    pub socket_timeout_ms: u64,
    pub checkpoint_interval_ms: u64,
    pub listener: String,
    pub frame_max_bytes: usize,
}

impl Settings {
    /// Parsed once, when the node starts ([`ReplicaManager::new`]): none of these keys
    /// is dynamic.
    pub fn from_config(config: &crate::config::BrokerConfig) -> Settings {
        // Kafka's defaults are in the key definitions (`crate::config`).
        let int = |key: &str| config.int_value(key);
        Settings {
            lag_time_max_ms: int("replica.lag.time.max.ms").max(1),
            num_fetchers: int("num.replica.fetchers").clamp(1, 1024) as usize,
            fetch_max_bytes: int("replica.fetch.max.bytes").clamp(0, i32::MAX as i64) as i32,
            fetch_wait_max_ms: int("replica.fetch.wait.max.ms").clamp(0, i32::MAX as i64) as i32,
            fetch_min_bytes: int("replica.fetch.min.bytes").clamp(0, i32::MAX as i64) as i32,
            fetch_backoff_ms: int("replica.fetch.backoff.ms").max(0) as u64,
            fetch_response_max_bytes: int("replica.fetch.response.max.bytes")
                .clamp(0, i32::MAX as i64) as i32,
            socket_timeout_ms: int("replica.socket.timeout.ms").max(1) as u64,
            checkpoint_interval_ms: int("replica.high.watermark.checkpoint.interval.ms").max(1)
                as u64,
            listener: config
                .settings()
                .listeners
                .inter_broker_listener_name
                .clone(),
            frame_max_bytes: config.socket_request_max_bytes(),
        }
    }
}

/// Kafka's `BrokerTopicMetrics` for all topics: what produce appended and fetch served.
#[derive(Debug, Default)]
pub struct TopicTraffic {
    pub messages_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub bytes_out: AtomicU64,
}

/// The node's replication machinery: fetchers by (source broker, fetcher id), the
/// background tasks, and the ISR change counters the metrics report.
#[derive(Debug)]
pub struct ReplicaManager {
    node_id: i32,
    settings: Settings,
    /// The static configuration (a topic's `min.insync.replicas` falls back to it).
    config: BrokerConfig,
    image: ImageView,
    /// The log directories, in the order of their managers (checkpoint files).
    log_dirs: Vec<std::path::PathBuf>,
    /// One log manager per log directory: the logs of the hosted replicas.
    pub(crate) managers: Mutex<Vec<sluice_storage::LogManager>>,
    /// This manager, for the tasks it starts (fetchers, the ISR shrink and checkpoint
    /// timers).
    me: Weak<ReplicaManager>,
    /// The replicas this node hosts, created and deleted to follow the metadata image.
    /// The hot path takes this lock only to read (a lookup), never across an append.
    pub(crate) replicas: RwLock<HashMap<TopicPartition, Arc<Replica>>>,
    /// What produce appended and fetch served, for the metrics.
    pub traffic: TopicTraffic,
    /// Bumped after replicas on this node change role (the coordinators wait on it).
    roles: watch::Sender<u64>,
    /// The active controller, for ISR changes ([`ReplicaManager::connect_controller`]).
    controller: std::sync::OnceLock<Arc<dyn AlterPartitionChannel>>,
    fetchers: Mutex<HashMap<(i32, usize), Fetcher>>,
    background: Mutex<Vec<JoinHandle<()>>>,
    started: AtomicBool,
    stopped: AtomicBool,
    /// Checkpointed high watermarks by (log dir index, topic, partition), read once.
    checkpoints: Mutex<Option<CheckpointedHighWatermarks>>,
    /// Kafka's `IsrShrinksPerSec` / `IsrExpandsPerSec` / `FailedIsrUpdatesPerSec`.
    pub isr_shrinks: AtomicU64,
    pub isr_expands: AtomicU64,
    pub failed_isr_updates: AtomicU64,
}

impl ReplicaManager {
    pub fn new(
        node_id: i32,
        config: BrokerConfig,
        image: ImageView,
        managers: Vec<sluice_storage::LogManager>,
    ) -> Arc<ReplicaManager> {
        let log_dirs = managers.iter().map(|m| m.dir().to_path_buf()).collect();
        Arc::new_cyclic(|me| ReplicaManager {
            managers: Mutex::new(managers),
            node_id,
            settings: Settings::from_config(&config),
            config,
            image,
            log_dirs,
            me: me.clone(),
            replicas: Default::default(),
            traffic: Default::default(),
            roles: watch::Sender::new(0),
            controller: Default::default(),
            fetchers: Default::default(),
            background: Default::default(),
            started: Default::default(),
            stopped: Default::default(),
            checkpoints: Default::default(),
            isr_shrinks: Default::default(),
            isr_expands: Default::default(),
            failed_isr_updates: Default::default(),
        })
    }

    /// The local replica of a partition.
    pub fn replica(&self, topic: &str, partition: i32) -> Option<Arc<Replica>> {
        self.replicas
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&TopicPartition::new(topic, partition))
            .cloned()
    }

    /// Every local replica, in topic-partition order.
    pub fn replicas(&self) -> Vec<(TopicPartition, Arc<Replica>)> {
        let mut all: Vec<_> = self
            .replicas
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(tp, r)| (tp.clone(), r.clone()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Creates local logs for partitions the image assigns to this node, deletes those
    /// of topics it no longer has, and applies topic config changes to open logs.
    pub(crate) fn sync_replicas(&self, image: &MetadataImage) -> Result<(), StorageError> {
        let mut managers = guard(&self.managers);
        let mut replicas = self
            .replicas
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // Replicas whose topic is gone (or was re-created with a new id).
        let gone: Vec<TopicPartition> = replicas
            .iter()
            .filter(|(tp, replica)| {
                image.topic(&tp.topic).is_none_or(|t| {
                    t.topic_id != replica.topic_id
                        || !t
                            .partitions
                            .get(&tp.partition)
                            .is_some_and(|p| p.replicas.contains(&self.node_id))
                })
            })
            .map(|(tp, _)| tp.clone())
            .collect();
        for tp in gone {
            if let Some(replica) = replicas.remove(&tp) {
                managers[replica.dir_index].delete(&tp)?;
                tracing::info!(partition = %tp, "deleted the replica of a removed topic");
            }
        }
        for topic in image.topics() {
            let overrides = image.configs(crate::topic_config::TOPIC_RESOURCE, &topic.name);
            let layers = crate::topic_config::BrokerLayers::new(&self.config, image);
            let config = crate::topic_config::log_config(&layers, overrides);
            let (before_max, after_max) = crate::topic_config::timestamp_bounds(&layers, overrides);
            for (index, partition) in &topic.partitions {
                if !partition.replicas.contains(&self.node_id) {
                    continue;
                }
                let tp = TopicPartition::new(topic.name.clone(), *index);
                if let Some(replica) = replicas.get(&tp) {
                    replica
                        .leader_epoch
                        .store(partition.leader_epoch, Ordering::Release);
                    replica
                        .timestamp_before_max_ms
                        .store(before_max, Ordering::Relaxed);
                    replica
                        .timestamp_after_max_ms
                        .store(after_max, Ordering::Relaxed);
                    let mut log = sluice_storage::lock(&replica.log);
                    if log.config() != &config {
                        log.set_config(config.clone())?;
                    }
                    continue;
                }
                let topic_id = TopicId(topic.topic_id);
                let dir_index = match managers.iter().position(|m| m.get(&tp).is_some()) {
                    Some(index) => {
                        // A log left from an earlier topic of the same name goes.
                        let stale = managers[index].get(&tp).is_some_and(|log| {
                            sluice_storage::lock(&log)
                                .topic_id()
                                .is_some_and(|id| id != topic_id)
                        });
                        if stale {
                            managers[index].delete(&tp)?;
                        }
                        index
                    }
                    None => managers
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, m)| m.partitions().count())
                        .map(|(i, _)| i)
                        .unwrap_or(0),
                };
                let log =
                    managers[dir_index].get_or_create(&tp, Some(topic_id), Some(config.clone()))?;
                {
                    let mut locked = sluice_storage::lock(&log);
                    if locked.config() != &config {
                        locked.set_config(config.clone())?;
                    }
                }
                let end = sluice_storage::lock(&log).log_end_offset();
                replicas.insert(
                    tp,
                    Arc::new(Replica {
                        topic_id: topic.topic_id,
                        log,
                        dir_index,
                        leader_epoch: AtomicI32::new(partition.leader_epoch),
                        timestamp_before_max_ms: AtomicI64::new(before_max),
                        timestamp_after_max_ms: AtomicI64::new(after_max),
                        end_offset: watch::Sender::new(end),
                        replication: Default::default(),
                    }),
                );
            }
        }
        Ok(())
    }

    /// Connects the channel to the active controller (once, when the node is wired).
    pub fn connect_controller(&self, channel: Arc<dyn AlterPartitionChannel>) {
        let _ = self.controller.set(channel);
    }

    /// A signal that changes after replicas on this node change role.
    pub fn subscribe_role_changes(&self) -> watch::Receiver<u64> {
        self.roles.subscribe()
    }

    fn roles_changed(&self) {
        self.roles.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The replication settings, parsed at start.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }
}

impl MetadataPublisher for ReplicaManager {
    fn publish(&self, image: &Arc<MetadataImage>) {
        if let Some(manager) = self.me.upgrade() {
            on_image_change(&manager, image);
        }
    }
}

/// High watermarks by (log dir index, topic, partition).
type CheckpointedHighWatermarks = HashMap<(usize, String, i32), i64>;

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One fetcher task and the partitions it fetches.
#[derive(Debug)]
struct Fetcher {
    partitions: Arc<Mutex<BTreeMap<TopicPartition, FetchPartitionState>>>,
    wake: Arc<Notify>,
    task: JoinHandle<()>,
}

/// Where a follower is in fetching one partition (Kafka's `PartitionFetchState`).
#[derive(Debug, Clone)]
struct FetchPartitionState {
    topic_id: Uuid,
    replica: Arc<Replica>,
    /// The leader epoch this fetch state belongs to (sent as `current_leader_epoch`).
    leader_epoch: i32,
    fetch_offset: i64,
    last_fetched_epoch: Option<i32>,
    /// No epoch to check divergence with: truncate to the HW before fetching.
    truncating: bool,
    delayed_until: Option<Instant>,
}

/// What applying the image to one partition asks of the fetchers.
enum FetchChange {
    Start { leader: i32, leader_epoch: i32 },
    Stop,
}

/// Called after every change of the metadata image on this node (from the metadata
/// apply path; it does not block: it updates replica states, starts and stops fetcher
/// tasks, and returns).
pub fn on_image_change(manager: &Arc<ReplicaManager>, image: &Arc<MetadataImage>) {
    if manager.stopped.load(Ordering::Acquire) {
        return;
    }
    start_background(manager);
    let mut min_insync: HashMap<String, i32> = HashMap::new();
    let mut changes = Vec::new();
    let local = manager.replicas();
    for (tp, replica) in &local {
        let Some(topic) = image
            .topic(&tp.topic)
            .filter(|t| t.topic_id == replica.topic_id)
        else {
            changes.push((tp.clone(), replica.clone(), FetchChange::Stop));
            continue;
        };
        let Some(partition) = topic.partitions.get(&tp.partition) else {
            changes.push((tp.clone(), replica.clone(), FetchChange::Stop));
            continue;
        };
        let min_isr = *min_insync
            .entry(tp.topic.clone())
            .or_insert_with(|| topic_min_insync_replicas(&manager.config, image, &tp.topic));
        if let Some(change) = apply_partition(manager, tp, replica, partition, image, min_isr) {
            changes.push((tp.clone(), replica.clone(), change));
        }
    }
    // Fetch states for partitions no longer hosted here.
    let hosted: std::collections::HashSet<&TopicPartition> =
        local.iter().map(|(tp, _)| tp).collect();
    let orphans: Vec<TopicPartition> = guard(&manager.fetchers)
        .values()
        .flat_map(|f| guard(&f.partitions).keys().cloned().collect::<Vec<_>>())
        .filter(|tp| !hosted.contains(tp))
        .collect();
    for tp in orphans {
        remove_fetch_partition(manager, &tp);
    }
    for (tp, replica, change) in changes {
        apply_fetch_change(manager, &tp, &replica, change);
    }
    manager.roles_changed();
}

/// Brings one partition's replication state up to `image` if the image is newer than
/// what the state was built from: the request path calls this so that a handler never
/// acts on a role older than the image it read (the image-change hook may still be on
/// its way).
pub fn ensure_current(
    manager: &Arc<ReplicaManager>,
    topic: &str,
    partition: i32,
    replica: &Arc<Replica>,
    image: &MetadataImage,
) {
    let Some(found) = image
        .topic(topic)
        .filter(|t| t.topic_id == replica.topic_id)
        .and_then(|t| t.partitions.get(&partition))
    else {
        return;
    };
    {
        let state = replica.state();
        if state.role != Role::None
            && (found.partition_epoch < state.partition_epoch
                || (found.partition_epoch == state.partition_epoch
                    && found.leader_epoch == state.leader_epoch))
        {
            return;
        }
    }
    if manager.stopped.load(Ordering::Acquire) {
        return;
    }
    start_background(manager);
    let tp = TopicPartition::new(topic, partition);
    let min_isr = topic_min_insync_replicas(&manager.config, image, topic);
    if let Some(change) = apply_partition(manager, &tp, replica, found, image, min_isr) {
        apply_fetch_change(manager, &tp, replica, change);
    }
    manager.roles_changed();
}

/// The topic's effective `min.insync.replicas` (topic override, dynamic broker
/// configs, static configuration, Kafka's default of 1).
pub(crate) fn topic_min_insync_replicas(
    config: &BrokerConfig,
    image: &MetadataImage,
    topic: &str,
) -> i32 {
    let layers = crate::topic_config::BrokerLayers::new(config, image);
    let overrides = image.configs(crate::topic_config::TOPIC_RESOURCE, topic);
    crate::topic_config::value_of(&layers, overrides, "min.insync.replicas")
        .trim()
        .parse::<i32>()
        .unwrap_or(1)
}

/// Applies the image's view of one partition to its replica (Kafka's `makeLeader` /
/// `makeFollower`); returns what the fetchers must do.
fn apply_partition(
    manager: &Arc<ReplicaManager>,
    tp: &TopicPartition,
    replica: &Arc<Replica>,
    partition: &PartitionImage,
    image: &MetadataImage,
    min_insync_replicas: i32,
) -> Option<FetchChange> {
    let settings = manager.settings();
    let now = sluice_storage::now_ms();
    let node_id = manager.node_id;
    let eligible = |id: i32| {
        image
            .broker(id)
            .is_some_and(|b| !b.fenced && !b.in_controlled_shutdown)
    };
    let mut state = replica.state();
    state.min_insync_replicas = min_insync_replicas;
    for follower in &mut state.followers {
        follower.eligible = eligible(follower.broker_id);
    }
    let stale = state.role != Role::None
        && (partition.partition_epoch < state.partition_epoch
            || (partition.partition_epoch == state.partition_epoch
                && partition.leader_epoch == state.leader_epoch));
    if stale {
        // Only configs or broker registrations changed: the HW may move (min ISR,
        // eligibility), nothing else.
        if state.is_leader() {
            let end = sluice_storage::lock(&replica.log).log_end_offset();
            if state.maybe_increment_high_watermark(end, now, settings.lag_time_max_ms) {
                replica.publish_high_watermark(&state);
            }
        }
        return None;
    }
    let was = state.role;
    let is_new_leader_epoch = partition.leader_epoch > state.leader_epoch;
    let (log_end_offset, log_start_offset) = {
        let log = sluice_storage::lock(&replica.log);
        (log.log_end_offset(), log.log_start_offset())
    };
    if was == Role::None {
        let checkpointed = checkpointed_high_watermark(manager, replica.dir_index, tp).unwrap_or(0);
        state.high_watermark = checkpointed.clamp(log_start_offset, log_end_offset);
    }
    state.replicas = partition.replicas.clone();
    state.partition_epoch = partition.partition_epoch;
    if partition.leader == node_id {
        let is_new_leader = was != Role::Leader;
        let previous = if is_new_leader {
            Vec::new()
        } else {
            std::mem::take(&mut state.followers)
        };
        state.followers = partition
            .replicas
            .iter()
            .filter(|id| **id != node_id)
            .map(|id| {
                let mut follower = previous
                    .iter()
                    .find(|f| f.broker_id == *id)
                    .cloned()
                    .unwrap_or_else(|| crate::replica::FollowerState::new(*id));
                follower.eligible = eligible(*id);
                follower
            })
            .collect();
        state.isr = IsrState::Committed(partition.isr.clone());
        if is_new_leader_epoch {
            for follower in &mut state.followers {
                let in_sync = partition.isr.contains(&follower.broker_id);
                follower.reset(now, log_end_offset, is_new_leader, in_sync);
            }
            state.leader_epoch = partition.leader_epoch;
            state.leader_epoch_start_offset = Some(log_end_offset);
            tracing::info!(partition = %tp, leader_epoch = partition.leader_epoch, start_offset = log_end_offset, high_watermark = state.high_watermark, isr = ?partition.isr, "leading");
        }
        state.role = Role::Leader;
        state.maybe_increment_high_watermark(log_end_offset, now, settings.lag_time_max_ms);
        replica.publish_high_watermark(&state);
        Some(FetchChange::Stop)
    } else {
        state.role = Role::Follower {
            leader: partition.leader,
        };
        state.leader_epoch = partition.leader_epoch;
        state.leader_epoch_start_offset = None;
        state.followers.clear();
        state.isr = IsrState::Committed(partition.isr.clone());
        // Wakes acks=all produces and consumer fetches: they see the new role.
        replica.publish_high_watermark(&state);
        let restart = is_new_leader_epoch || !matches!(was, Role::Follower { .. });
        if is_new_leader_epoch {
            tracing::info!(partition = %tp, leader = partition.leader, leader_epoch = partition.leader_epoch, log_end_offset, high_watermark = state.high_watermark, "following");
        }
        match (restart, partition.leader) {
            (false, _) => None,
            (true, leader) if leader < 0 => Some(FetchChange::Stop),
            (true, leader) => Some(FetchChange::Start {
                leader,
                leader_epoch: partition.leader_epoch,
            }),
        }
    }
}

fn apply_fetch_change(
    manager: &Arc<ReplicaManager>,
    tp: &TopicPartition,
    replica: &Arc<Replica>,
    change: FetchChange,
) {
    remove_fetch_partition(manager, tp);
    let FetchChange::Start {
        leader,
        leader_epoch,
    } = change
    else {
        return;
    };
    let settings = manager.settings();
    let (fetch_offset, last_fetched_epoch) = {
        let log = sluice_storage::lock(&replica.log);
        (log.log_end_offset(), log.leader_epochs().latest_epoch())
    };
    let state = FetchPartitionState {
        topic_id: replica.topic_id,
        replica: replica.clone(),
        leader_epoch,
        fetch_offset,
        last_fetched_epoch,
        truncating: last_fetched_epoch.is_none(),
        delayed_until: None,
    };
    let key = (
        leader,
        fetcher_id(&tp.topic, tp.partition, settings.num_fetchers),
    );
    let mut fetchers = guard(&manager.fetchers);
    let fetcher = fetchers.entry(key).or_insert_with(|| {
        let partitions = Arc::new(Mutex::new(BTreeMap::new()));
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn(run_fetcher(
            Arc::downgrade(manager),
            leader,
            key.1,
            partitions.clone(),
            wake.clone(),
        ));
        Fetcher {
            partitions,
            wake,
            task,
        }
    });
    guard(&fetcher.partitions).insert(tp.clone(), state);
    fetcher.wake.notify_one();
}

/// Stops fetching `tp` (from whichever leader); an idle fetcher task ends.
fn remove_fetch_partition(manager: &ReplicaManager, tp: &TopicPartition) {
    let mut fetchers = guard(&manager.fetchers);
    let mut idle = Vec::new();
    for (key, fetcher) in fetchers.iter() {
        let mut partitions = guard(&fetcher.partitions);
        if partitions.remove(tp).is_some() && partitions.is_empty() {
            idle.push(*key);
        }
    }
    for key in idle {
        if let Some(fetcher) = fetchers.remove(&key) {
            fetcher.task.abort();
        }
    }
}

/// Kafka's `AbstractFetcherManager.getFetcherId`: `abs(31 * topic.hashCode() +
/// partition) % num.replica.fetchers`, with Java's `String.hashCode`.
pub fn fetcher_id(topic: &str, partition: i32, num_fetchers: usize) -> usize {
    let hash = topic.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let value = hash.wrapping_mul(31).wrapping_add(partition);
    // Kafka's Utils.abs maps i32::MIN to 0.
    let value = if value == i32::MIN { 0 } else { value.abs() };
    value as usize % num_fetchers.max(1)
}

/// Starts the ISR-shrink and HW-checkpoint tasks once.
fn start_background(manager: &Arc<ReplicaManager>) {
    if manager.started.swap(true, Ordering::AcqRel) {
        return;
    }
    let settings = manager.settings();
    let weak = Arc::downgrade(manager);
    let shrink_every = Duration::from_millis((settings.lag_time_max_ms as u64 / 2).max(1));
    let shrink = tokio::spawn(async move {
        let mut timer = tokio::time::interval(shrink_every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            timer.tick().await;
            let Some(manager) = weak.upgrade() else {
                return;
            };
            maybe_shrink_isrs(&manager);
        }
    });
    let weak = Arc::downgrade(manager);
    let checkpoint_every = Duration::from_millis(settings.checkpoint_interval_ms);
    let checkpoint = tokio::spawn(async move {
        let mut timer = tokio::time::interval(checkpoint_every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        loop {
            timer.tick().await;
            let Some(manager) = weak.upgrade() else {
                return;
            };
            let _ = tokio::task::spawn_blocking(move || checkpoint_high_watermarks(&manager)).await;
        }
    });
    guard(&manager.background).extend([shrink, checkpoint]);
}

/// Stops every fetcher and background task (so nothing appends to a log after this
/// returns) and checkpoints the high watermarks. The node calls this before
/// [`crate::broker::Broker::shutdown`].
pub async fn shutdown(manager: &Arc<ReplicaManager>) {
    manager.stopped.store(true, Ordering::Release);
    let fetchers: Vec<Fetcher> = guard(&manager.fetchers).drain().map(|(_, f)| f).collect();
    let background: Vec<JoinHandle<()>> = guard(&manager.background).drain(..).collect();
    let tasks: Vec<JoinHandle<()>> = fetchers
        .into_iter()
        .map(|f| f.task)
        .chain(background)
        .collect();
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    checkpoint_high_watermarks(manager);
}

/// Writes every log directory's `replication-offset-checkpoint`: the HW of each
/// partition it holds (leader or follower), as Kafka's `checkpointHighWatermarks`.
pub fn checkpoint_high_watermarks(manager: &ReplicaManager) {
    let dirs = manager.log_dirs.clone();
    let mut by_dir: Vec<Vec<(String, i32, i64)>> = vec![Vec::new(); dirs.len()];
    for (tp, replica) in manager.replicas() {
        let state = replica.state();
        if state.role == Role::None {
            continue;
        }
        if let Some(entries) = by_dir.get_mut(replica.dir_index) {
            entries.push((tp.topic.clone(), tp.partition, state.high_watermark));
        }
    }
    for (dir, entries) in dirs.iter().zip(by_dir) {
        let path = dir.join(REPLICATION_OFFSET_CHECKPOINT);
        if let Err(error) = sluice_storage::checkpoint::write_offset_checkpoint(&path, &entries) {
            tracing::error!(path = %path.display(), %error, "high watermark checkpoint failed");
        }
    }
}

/// A partition's HW from its log directory's checkpoint (read once per node).
fn checkpointed_high_watermark(
    manager: &ReplicaManager,
    dir_index: usize,
    tp: &TopicPartition,
) -> Option<i64> {
    let mut checkpoints = guard(&manager.checkpoints);
    let loaded = checkpoints.get_or_insert_with(|| {
        let mut all = HashMap::new();
        for (index, dir) in manager.log_dirs.clone().iter().enumerate() {
            let path = dir.join(REPLICATION_OFFSET_CHECKPOINT);
            if !path.exists() {
                continue;
            }
            match sluice_storage::checkpoint::read_offset_checkpoint(&path) {
                Ok(entries) => {
                    for (topic, partition, offset) in entries {
                        all.insert((index, topic, partition), offset);
                    }
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "unreadable high watermark checkpoint; starting from 0");
                }
            }
        }
        all
    });
    loaded
        .get(&(dir_index, tp.topic.clone(), tp.partition))
        .copied()
}

/// The ISR-shrink check (Kafka's `maybeShrinkIsr`, every `replica.lag.time.max.ms / 2`).
fn maybe_shrink_isrs(manager: &Arc<ReplicaManager>) {
    let settings = manager.settings();
    let now = sluice_storage::now_ms();
    for (tp, replica) in manager.replicas() {
        let proposal = {
            let mut state = replica.state();
            if !state.is_leader() || state.isr.is_inflight() {
                continue;
            }
            let end = sluice_storage::lock(&replica.log).log_end_offset();
            let out =
                state.out_of_sync_replicas(manager.node_id, end, now, settings.lag_time_max_ms);
            if out.is_empty() {
                continue;
            }
            tracing::info!(partition = %tp, isr = ?state.isr.committed(), out_of_sync = ?out, high_watermark = state.high_watermark, end_offset = end, "shrinking the ISR");
            let (sequence, proposed) = state.prepare_shrink(out);
            (
                sequence,
                state.leader_epoch,
                state.partition_epoch,
                proposed,
            )
        };
        submit_alter_partition(manager, &tp, &replica, proposal);
    }
}

/// Expands the ISR with `follower` if it now qualifies (the leader, after recording its
/// fetch).
pub(crate) fn maybe_expand_isr(
    manager: &Arc<ReplicaManager>,
    tp: &TopicPartition,
    replica: &Arc<Replica>,
    state: &mut PartitionState,
    follower: i32,
) -> Option<(u64, i32, i32, Vec<i32>)> {
    let _ = (manager, replica);
    if !state.needs_expand(follower) {
        return None;
    }
    tracing::info!(partition = %tp, isr = ?state.isr.committed(), joining = follower, high_watermark = state.high_watermark, "expanding the ISR");
    let (sequence, proposed) = state.prepare_expand(follower);
    Some((
        sequence,
        state.leader_epoch,
        state.partition_epoch,
        proposed,
    ))
}

/// Sends an ISR change to the controller and applies its answer (Kafka's
/// `submitAlterPartition` with `handleAlterPartitionUpdate` / `...Error`): retried
/// after a backoff on retriable errors; left pending until new metadata on
/// FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION and the like; reset to the committed
/// ISR on INELIGIBLE_REPLICA / OPERATION_NOT_ATTEMPTED.
pub(crate) fn submit_alter_partition(
    manager: &Arc<ReplicaManager>,
    tp: &TopicPartition,
    replica: &Arc<Replica>,
    (sequence, leader_epoch, partition_epoch, proposed): (u64, i32, i32, Vec<i32>),
) {
    let weak = Arc::downgrade(manager);
    let replica = replica.clone();
    let tp = tp.clone();
    tokio::spawn(async move {
        loop {
            let Some(manager) = weak.upgrade() else {
                return;
            };
            let change = IsrChange {
                topic_id: replica.topic_id,
                partition: tp.partition,
                leader_epoch,
                partition_epoch,
                new_isr: proposed.clone(),
            };
            let result = match manager.controller.get() {
                Some(controller) => controller.alter_partition(change).await,
                None => Err(ErrorCode::NOT_CONTROLLER),
            };
            let retry = {
                let mut state = replica.state();
                if state.isr.sequence() != Some(sequence) {
                    // Replaced by newer metadata or leadership: this answer is stale.
                    return;
                }
                let counters = &manager;
                match result {
                    Ok(partition) => {
                        if partition.leader_epoch != state.leader_epoch
                            || partition.partition_epoch < state.partition_epoch
                        {
                            counters.failed_isr_updates.fetch_add(1, Ordering::Relaxed);
                            tracing::debug!(partition = %tp, "ignoring a stale AlterPartition answer");
                            return;
                        }
                        let counter = match state.isr {
                            IsrState::PendingExpand { .. } => &counters.isr_expands,
                            _ => &counters.isr_shrinks,
                        };
                        counter.fetch_add(1, Ordering::Relaxed);
                        state.isr = IsrState::Committed(partition.isr.clone());
                        state.partition_epoch = partition.partition_epoch;
                        tracing::info!(partition = %tp, isr = ?partition.isr, partition_epoch = partition.partition_epoch, under_min_isr = state.is_under_min_isr(), "ISR updated");
                        let settings = manager.settings();
                        let end = sluice_storage::lock(&replica.log).log_end_offset();
                        state.maybe_increment_high_watermark(
                            end,
                            sluice_storage::now_ms(),
                            settings.lag_time_max_ms,
                        );
                        // Also wakes acks=all waiters to recheck min ISR.
                        replica.publish_high_watermark(&state);
                        false
                    }
                    Err(ErrorCode(code)) => {
                        counters.failed_isr_updates.fetch_add(1, Ordering::Relaxed);
                        match code {
                            errors::OPERATION_NOT_ATTEMPTED | errors::INELIGIBLE_REPLICA => {
                                let committed = state.isr.committed().to_vec();
                                state.isr = IsrState::Committed(committed);
                                tracing::info!(partition = %tp, code, "ISR change refused; back to the committed ISR");
                                false
                            }
                            errors::UNKNOWN_TOPIC_OR_PARTITION
                            | errors::UNKNOWN_TOPIC_ID
                            | errors::FENCED_LEADER_EPOCH
                            | errors::INVALID_UPDATE_VERSION
                            | errors::INVALID_REQUEST
                            | errors::NEW_LEADER_ELECTED => {
                                tracing::debug!(partition = %tp, code, "ISR change failed; awaiting new metadata");
                                false
                            }
                            _ => {
                                tracing::debug!(partition = %tp, code, "ISR change failed; retrying");
                                true
                            }
                        }
                    }
                }
            };
            drop(manager);
            if !retry {
                return;
            }
            tokio::time::sleep(Duration::from_millis(ALTER_PARTITION_RETRY_BACKOFF_MS)).await;
        }
    });
}

// ---------------------------------------------------------------------------------------
// The follower's fetcher.

/// A connection to another broker (the leader, for a follower): one request at a time
/// (the fetcher waits for each answer before sending the next, as Kafka's fetcher thread
/// does), over `sluice-protocol`'s [`FrameConnection`], the client's connection too.
/// The transaction coordinator and AddPartitionsToTxn verification use it as well. A
/// response is decoded from its frame in place: a Fetch response's records are slices
/// of the frame, not copies. Any error closes it; callers drop it and open another.
pub(crate) struct LeaderConnection {
    frames: FrameConnection,
    client_id: StrBytes,
}

impl LeaderConnection {
    /// Connects to `host:port` within `timeout`; responses larger than
    /// `frame_max_bytes` close the connection.
    pub(crate) async fn connect(
        host: &str,
        port: u16,
        timeout: Duration,
        frame_max_bytes: usize,
        client_id: String,
    ) -> Result<Self, ConnectionError> {
        // An IPv6 literal goes in brackets, as a socket address writes it.
        let address = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let settings = ConnectionSettings {
            response_max_bytes: frame_max_bytes,
            max_in_flight_requests: 1,
        };
        let frames = FrameConnection::connect(&address, timeout, settings, None).await?;
        Ok(LeaderConnection {
            frames,
            client_id: StrBytes::from_string(client_id),
        })
    }

    /// Sends `request` at `version` and waits up to `timeout` for its response.
    pub(crate) async fn call<R: Request>(
        &mut self,
        request: &R,
        version: i16,
        timeout: Duration,
    ) -> Result<R::Response, ConnectionError> {
        let api_key =
            ApiKey::try_from(R::KEY).expect("kafka-protocol's request types have known API keys");
        let correlation_id = self.frames.next_correlation_id();
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(self.client_id.clone()));
        let encode_failed = |error: String| ConnectionError::Disconnected {
            address: self.frames.address().to_string(),
            reason: format!("{api_key:?} v{version} does not encode: {error}"),
        };
        let mut frame = frame::size_prefix(256);
        header
            .encode(&mut frame, api_key.request_header_version(version))
            .map_err(|error| encode_failed(error.to_string()))?;
        request
            .encode(&mut frame, version)
            .map_err(|error| encode_failed(error.to_string()))?;
        let frame = frame::finish_frame(frame).map_err(|error| encode_failed(error.to_string()))?;
        let mut body = self.frames.request(correlation_id, frame, timeout).await?;
        let decoded = ResponseHeader::decode(&mut body, api_key.response_header_version(version))
            .and_then(|_| R::Response::decode(&mut body, version));
        decoded.map_err(|error| {
            let reason = format!("{api_key:?} v{version} response does not decode: {error}");
            self.frames.close(reason.clone());
            ConnectionError::Disconnected {
                address: self.frames.address().to_string(),
                reason,
            }
        })
    }
}

/// One fetcher: fetches its partitions from `leader` until aborted (the manager aborts
/// it when it has no partition left) or the broker is gone.
async fn run_fetcher(
    weak: Weak<ReplicaManager>,
    leader: i32,
    fetcher_id: usize,
    partitions: Arc<Mutex<BTreeMap<TopicPartition, FetchPartitionState>>>,
    wake: Arc<Notify>,
) {
    let mut connection: Option<LeaderConnection> = None;
    loop {
        let Some(manager) = weak.upgrade() else {
            return;
        };
        let settings = manager.settings().clone();
        let backoff = Duration::from_millis(settings.fetch_backoff_ms);
        truncate_to_high_watermarks(&partitions);
        let now = Instant::now();
        let sent: Vec<(TopicPartition, FetchPartitionState)> = guard(&partitions)
            .iter()
            .filter(|(_, p)| p.delayed_until.is_none_or(|until| until <= now))
            .map(|(tp, p)| (tp.clone(), p.clone()))
            .collect();
        if sent.is_empty() {
            let next = guard(&partitions)
                .values()
                .filter_map(|p| p.delayed_until)
                .min()
                .unwrap_or(now + backoff);
            drop(manager);
            let _ = tokio::time::timeout_at(next, wake.notified()).await;
            continue;
        }
        let image = manager.image.current();
        let Some(endpoint) = crate::endpoint::endpoint_of(&image, leader, &settings.listener)
        else {
            tracing::debug!(leader, listener = %settings.listener, "no endpoint for the leader; backing off");
            drop(manager);
            tokio::time::sleep(backoff).await;
            continue;
        };
        let replica_epoch = image.broker(manager.node_id).map_or(-1, |b| b.broker_epoch);
        let request = fetch_request(manager.node_id, replica_epoch, &settings, &sent);
        let client_id = format!("broker-{}-fetcher-{fetcher_id}", manager.node_id);
        drop(image);
        drop(manager);
        if connection.is_none() {
            match LeaderConnection::connect(
                &endpoint.host,
                endpoint.port,
                Duration::from_millis(settings.socket_timeout_ms),
                settings.frame_max_bytes,
                client_id,
            )
            .await
            {
                Ok(opened) => connection = Some(opened),
                Err(error) => {
                    tracing::debug!(leader, %error, "cannot reach the leader; backing off");
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            }
        }
        let Some(open) = connection.as_mut() else {
            continue;
        };
        let timeout =
            Duration::from_millis(settings.socket_timeout_ms + settings.fetch_wait_max_ms as u64);
        let response = match open.call(&request, FETCH_VERSION, timeout).await {
            Ok(response) => response,
            Err(error) => {
                tracing::debug!(leader, %error, "fetch failed; backing off");
                connection = None;
                tokio::time::sleep(backoff).await;
                continue;
            }
        };
        if response.error_code != errors::NONE {
            tracing::debug!(
                leader,
                code = response.error_code,
                "fetch refused; backing off"
            );
            tokio::time::sleep(backoff).await;
            continue;
        }
        let Some(manager) = weak.upgrade() else {
            return;
        };
        let mut out_of_range = Vec::new();
        for topic in &response.responses {
            let topic_id = *topic.topic_id.as_bytes();
            for data in &topic.partitions {
                let Some((tp, sent_state)) = sent
                    .iter()
                    .find(|(tp, p)| p.topic_id == topic_id && tp.partition == data.partition_index)
                else {
                    continue;
                };
                if !still_current(&partitions, tp, sent_state) {
                    continue;
                }
                match process_partition(&manager, tp, sent_state, data) {
                    Processed::Next(offset, last_epoch) => {
                        update(&partitions, tp, sent_state, |p| {
                            p.fetch_offset = offset;
                            p.last_fetched_epoch = last_epoch;
                            p.delayed_until = None;
                        })
                    }
                    Processed::Delay => update(&partitions, tp, sent_state, |p| {
                        p.delayed_until = Some(Instant::now() + backoff);
                    }),
                    Processed::Remove => {
                        let mut map = guard(&partitions);
                        if map
                            .get(tp)
                            .is_some_and(|p| p.leader_epoch == sent_state.leader_epoch)
                        {
                            map.remove(tp);
                        }
                    }
                    Processed::OutOfRange => out_of_range.push((tp.clone(), sent_state.clone())),
                }
            }
        }
        drop(manager);
        for (tp, sent_state) in out_of_range {
            let Some(open) = connection.as_mut() else {
                break;
            };
            match handle_out_of_range(&weak, open, leader, &tp, &sent_state, &settings).await {
                Ok(Some((offset, last_epoch))) => update(&partitions, &tp, &sent_state, |p| {
                    p.fetch_offset = offset;
                    p.last_fetched_epoch = last_epoch;
                    p.delayed_until = None;
                }),
                Ok(None) => update(&partitions, &tp, &sent_state, |p| {
                    p.delayed_until = Some(Instant::now() + backoff);
                }),
                Err(error) => {
                    tracing::debug!(leader, partition = %tp, %error, "offset lookup failed; backing off");
                    connection = None;
                    update(&partitions, &tp, &sent_state, |p| {
                        p.delayed_until = Some(Instant::now() + backoff);
                    });
                }
            }
        }
    }
}

/// Whether the fetch state is the one a request was built from (Kafka checks the fetch
/// offset and the epoch before processing an answer).
fn still_current(
    partitions: &Mutex<BTreeMap<TopicPartition, FetchPartitionState>>,
    tp: &TopicPartition,
    sent: &FetchPartitionState,
) -> bool {
    guard(partitions).get(tp).is_some_and(|p| {
        p.leader_epoch == sent.leader_epoch
            && p.fetch_offset == sent.fetch_offset
            && Arc::ptr_eq(&p.replica, &sent.replica)
    })
}

fn update(
    partitions: &Mutex<BTreeMap<TopicPartition, FetchPartitionState>>,
    tp: &TopicPartition,
    sent: &FetchPartitionState,
    change: impl FnOnce(&mut FetchPartitionState),
) {
    let mut map = guard(partitions);
    if let Some(current) = map.get_mut(tp)
        && current.leader_epoch == sent.leader_epoch
        && Arc::ptr_eq(&current.replica, &sent.replica)
    {
        change(current);
    }
}

/// Partitions without a leader epoch in their log truncate to their HW before their
/// first fetch (Kafka's `Truncating` state without epochs).
fn truncate_to_high_watermarks(partitions: &Mutex<BTreeMap<TopicPartition, FetchPartitionState>>) {
    let mut map = guard(partitions);
    for (tp, p) in map.iter_mut().filter(|(_, p)| p.truncating) {
        let mut state = p.replica.state();
        let mut log = sluice_storage::lock(&p.replica.log);
        let target = state.high_watermark.max(log.log_start_offset());
        if target < log.log_end_offset() {
            tracing::info!(partition = %tp, offset = target, "truncating to the high watermark");
            if let Err(error) = log.truncate_to(target) {
                tracing::error!(partition = %tp, %error, "truncation failed");
                continue;
            }
        }
        state.high_watermark = state.high_watermark.min(log.log_end_offset());
        p.fetch_offset = log.log_end_offset();
        p.last_fetched_epoch = log.leader_epochs().latest_epoch();
        p.truncating = false;
        drop(log);
        p.replica.publish_high_watermark(&state);
    }
}

fn fetch_request(
    node_id: i32,
    replica_epoch: i64,
    settings: &Settings,
    sent: &[(TopicPartition, FetchPartitionState)],
) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, p) in sent {
        let log_start_offset = sluice_storage::lock(&p.replica.log).log_start_offset();
        let partition = FetchPartition::default()
            .with_partition(tp.partition)
            .with_current_leader_epoch(p.leader_epoch)
            .with_fetch_offset(p.fetch_offset)
            .with_last_fetched_epoch(p.last_fetched_epoch.unwrap_or(-1))
            .with_log_start_offset(log_start_offset)
            .with_partition_max_bytes(settings.fetch_max_bytes);
        let id = uuid::Uuid::from_bytes(p.topic_id);
        match topics.iter_mut().find(|t| t.topic_id == id) {
            Some(topic) => topic.partitions.push(partition),
            None => topics.push(
                FetchTopic::default()
                    .with_topic_id(id)
                    .with_topic(TopicName(StrBytes::from_string(tp.topic.clone())))
                    .with_partitions(vec![partition]),
            ),
        }
    }
    FetchRequest::default()
        .with_replica_state(
            ReplicaState::default()
                .with_replica_id(node_id.into())
                .with_replica_epoch(replica_epoch),
        )
        .with_max_wait_ms(settings.fetch_wait_max_ms)
        .with_min_bytes(settings.fetch_min_bytes)
        .with_max_bytes(settings.fetch_response_max_bytes)
        .with_isolation_level(0)
        .with_session_id(0)
        .with_session_epoch(-1)
        .with_topics(topics)
}

/// What the fetcher does next with a partition after the leader's answer.
enum Processed {
    /// Fetch next from this offset, with this last epoch.
    Next(i64, Option<i32>),
    Delay,
    /// Fenced: wait for new metadata (which restarts the fetch).
    Remove,
    OutOfRange,
}

/// Kafka's `processPartitionData` and the per-partition error handling of
/// `processFetchRequest`.
fn process_partition(
    manager: &Arc<ReplicaManager>,
    tp: &TopicPartition,
    sent: &FetchPartitionState,
    data: &kafka_protocol::messages::fetch_response::PartitionData,
) -> Processed {
    let replica = &sent.replica;
    // The replica may have been deleted (topic deleted) since the request.
    if !manager
        .replica(&tp.topic, tp.partition)
        .is_some_and(|current| Arc::ptr_eq(&current, replica))
    {
        return Processed::Remove;
    }
    match data.error_code {
        errors::NONE => {}
        errors::OFFSET_OUT_OF_RANGE => return Processed::OutOfRange,
        errors::FENCED_LEADER_EPOCH => {
            tracing::info!(partition = %tp, leader_epoch = sent.leader_epoch, "fenced by the leader; awaiting new metadata");
            return Processed::Remove;
        }
        code => {
            tracing::debug!(partition = %tp, code, "fetch error; backing off");
            return Processed::Delay;
        }
    }
    let now = sluice_storage::now_ms();
    let mut state = replica.state();
    if !matches!(state.role, Role::Follower { .. }) || state.leader_epoch != sent.leader_epoch {
        return Processed::Remove;
    }
    let mut log = sluice_storage::lock(&replica.log);
    let diverging = &data.diverging_epoch;
    if diverging.epoch >= 0 || diverging.end_offset >= 0 {
        let log_end = log.log_end_offset();
        let own = crate::replica::end_offset_for_epoch(
            log.leader_epochs().entries(),
            diverging.epoch,
            log_end,
        );
        let (offset, _complete) = crate::replica::truncation_offset(
            diverging.epoch,
            diverging.end_offset,
            own,
            log_end,
            sent.fetch_offset,
        );
        tracing::info!(partition = %tp, leader_epoch = diverging.epoch, leader_end_offset = diverging.end_offset, offset, "truncating a diverging log");
        if let Err(error) = log.truncate_to(offset) {
            tracing::error!(partition = %tp, %error, "truncation failed");
            return Processed::Delay;
        }
        let end = log.log_end_offset();
        state.high_watermark = state.high_watermark.min(end);
        let next = Processed::Next(end, log.leader_epochs().latest_epoch());
        drop(log);
        replica.publish_high_watermark(&state);
        replica.appended(end);
        return next;
    }
    let records = data.records.clone().unwrap_or_default();
    if !records.is_empty() {
        let appended = match log.append_as_follower(&records, now) {
            Err(StorageError::UnexpectedAppendOffset {
                first_offset,
                log_end_offset,
            }) if log_end_offset == log.log_start_offset() && first_offset < log_end_offset => {
                // The leader's log start is inside this batch (DeleteRecords): start the
                // empty log at the batch's base offset, as Kafka does.
                log.truncate_fully_and_start_at(first_offset)
                    .and_then(|()| log.append_as_follower(&records, now))
            }
            other => other,
        };
        if let Err(error) = appended {
            tracing::error!(partition = %tp, %error, "follower append failed");
            return Processed::Delay;
        }
    }
    let end = log.log_end_offset();
    let start = log.log_start_offset();
    let high_watermark = data.high_watermark.clamp(start, end);
    if data.log_start_offset > start
        && data.log_start_offset <= high_watermark
        && let Err(error) = log.delete_records(data.log_start_offset)
    {
        tracing::warn!(partition = %tp, %error, "cannot follow the leader's log start offset");
    }
    let next = Processed::Next(end, log.leader_epochs().latest_epoch());
    drop(log);
    if state.high_watermark != high_watermark {
        state.high_watermark = high_watermark;
        replica.publish_high_watermark(&state);
    }
    drop(state);
    if !records.is_empty() {
        replica.appended(end);
    }
    next
}

/// Kafka's `fetchOffsetAndTruncate` after OFFSET_OUT_OF_RANGE: if the leader's log ends
/// before ours, truncate to its end; else if its log starts after ours ends, restart
/// ours empty at its start; fetch from there. `Ok(None)`: retry later.
async fn handle_out_of_range(
    weak: &Weak<ReplicaManager>,
    connection: &mut LeaderConnection,
    leader: i32,
    tp: &TopicPartition,
    sent: &FetchPartitionState,
    settings: &Settings,
) -> Result<Option<(i64, Option<i32>)>, String> {
    let Some(node_id) = weak.upgrade().map(|b| b.node_id) else {
        return Ok(None);
    };
    let timeout = Duration::from_millis(settings.socket_timeout_ms);
    let Some(leader_end) = list_offset(
        connection,
        node_id,
        tp,
        sent.leader_epoch,
        LATEST_TIMESTAMP,
        timeout,
    )
    .await?
    else {
        return Ok(None);
    };
    let replica = &sent.replica;
    let local_end = sluice_storage::lock(&replica.log).log_end_offset();
    if leader_end < local_end {
        let Some(_broker) = weak.upgrade() else {
            return Ok(None);
        };
        let mut state = replica.state();
        let mut log = sluice_storage::lock(&replica.log);
        tracing::warn!(partition = %tp, leader, leader_end, local_end, "the leader's log ends before ours: truncating");
        log.truncate_to(leader_end).map_err(|e| e.to_string())?;
        let end = log.log_end_offset();
        state.high_watermark = state.high_watermark.min(end);
        let epoch = log.leader_epochs().latest_epoch();
        drop(log);
        replica.publish_high_watermark(&state);
        return Ok(Some((end, epoch)));
    }
    let Some(leader_start) = list_offset(
        connection,
        node_id,
        tp,
        sent.leader_epoch,
        EARLIEST_TIMESTAMP,
        timeout,
    )
    .await?
    else {
        return Ok(None);
    };
    let Some(_broker) = weak.upgrade() else {
        return Ok(None);
    };
    let mut state = replica.state();
    let mut log = sluice_storage::lock(&replica.log);
    let local_end = log.log_end_offset();
    if leader_start > local_end {
        tracing::warn!(partition = %tp, leader, leader_start, local_end, "the leader's log starts after ours ends: restarting ours there");
        log.truncate_fully_and_start_at(leader_start)
            .map_err(|e| e.to_string())?;
        state.high_watermark = leader_start;
        replica.publish_high_watermark(&state);
    }
    Ok(Some((
        log.log_end_offset(),
        log.leader_epochs().latest_epoch(),
    )))
}

/// ListOffsets from the leader as a replica (LATEST answers the log end offset).
async fn list_offset(
    connection: &mut LeaderConnection,
    node_id: i32,
    tp: &TopicPartition,
    leader_epoch: i32,
    timestamp: i64,
    timeout: Duration,
) -> Result<Option<i64>, String> {
    let request = ListOffsetsRequest::default()
        .with_replica_id(node_id.into())
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(tp.topic.clone())))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(tp.partition)
                        .with_current_leader_epoch(leader_epoch)
                        .with_timestamp(timestamp),
                ]),
        ]);
    let response = connection
        .call(&request, LIST_OFFSETS_VERSION, timeout)
        .await
        .map_err(|error| error.to_string())?;
    let found = response
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == tp.partition);
    Ok(found
        .filter(|p| p.error_code == errors::NONE && p.offset >= 0)
        .map(|p| p.offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetcher_ids_match_kafkas_hash() {
        // Java: Math.abs(31 * "orders".hashCode() + 2) % 3, with "orders".hashCode() =
        // -1008770331.
        let java_hash: i32 = "orders"
            .chars()
            .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(c as i32));
        assert_eq!(java_hash, -1008770331);
        let expected = (java_hash.wrapping_mul(31).wrapping_add(2)).unsigned_abs() as usize % 3;
        assert_eq!(fetcher_id("orders", 2, 3), expected);
        assert_eq!(fetcher_id("orders", 2, 1), 0);
        // Consecutive partitions spread over the fetchers.
        let ids: std::collections::BTreeSet<usize> =
            (0..6).map(|p| fetcher_id("t", p, 3)).collect();
        assert_eq!(ids.len(), 3);
    }
}
