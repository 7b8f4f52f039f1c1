//! The node's state, read by every request handler, and the services it holds:
//!
//! - the metadata image (topics, partitions, configs, producer-id blocks, features),
//!   replaced whole by [`Broker::apply_image`] each time the quorum's state machine
//!   applies an entry, kept in a watch channel that services read through
//!   [`crate::image::ImageView`]; handlers read only the image, never a copy of their own;
//! - the services below it: the [`crate::replication::ReplicaManager`] (the replicas
//!   this node hosts, their logs, leader append, follower fetching), the group and
//!   transaction coordinators, each told of every new image in that order, after the
//!   dynamic broker settings ([`crate::image::MetadataPublisher`]);
//! - the ways into the metadata quorum: [`Broker::write_metadata`] (writes any node
//!   makes, forwarded to the quorum's leader) and [`Broker::write_as_controller`] (the
//!   active controller's plans, never forwarded).
//!
//! Locks: `controller` (held across a controller operation's check and write), then the
//! replica manager's log managers, then its replica map, then one partition's state,
//! then its log. The hot path reads the image and the replica map (a lookup), then takes
//! one partition's state and log mutexes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use sluice_metadata::{
    BrokerEndpoint, MetadataImage, MetadataLogError, MetadataRecord, RegisterBrokerRecord, Uuid,
};
use sluice_storage::{LogManager, StorageError, TopicPartition};
use tokio::sync::watch;

use crate::config::BrokerConfig;
use crate::fetch_session::FetchSessions;
pub use crate::replica::Replica;
pub use crate::replication::TopicTraffic;

pub use crate::topic_config::{BROKER_RESOURCE, TOPIC_RESOURCE};
/// How many producer ids a broker takes from the metadata log at once (Kafka's block).
const PRODUCER_ID_BLOCK: i64 = 1000;

pub use crate::endpoint::Endpoint;

#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    #[error("metadata log: {0}")]
    Metadata(#[from] MetadataLogError),
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    #[error("metadata quorum: {0}")]
    Quorum(#[from] crate::quorum::QuorumError),
}

impl BrokerError {
    /// The error code of a failed controller write (for responses to admin requests
    /// and heartbeats): NOT_CONTROLLER when this node lost or never had the controller
    /// role (retriable: the client finds the new one), INVALID_UPDATE_VERSION when a
    /// partition changed under the plan, REQUEST_TIMED_OUT when no majority answered.
    pub fn code(&self) -> i16 {
        use crate::errors;
        use crate::quorum::QuorumError;
        match self {
            BrokerError::Quorum(QuorumError::NotController) => errors::NOT_CONTROLLER,
            BrokerError::Quorum(QuorumError::StalePartition(_)) => errors::INVALID_UPDATE_VERSION,
            BrokerError::Quorum(QuorumError::NoLeader(_)) => errors::REQUEST_TIMED_OUT,
            _ => errors::UNKNOWN_SERVER_ERROR,
        }
    }
}

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The node's shared state.
pub struct Broker {
    pub config: BrokerConfig,
    pub node_id: i32,
    pub cluster_id: String,
    /// The metadata quorum, set once at start.
    quorum: OnceLock<Arc<crate::quorum::Quorum>>,
    /// This node's registration epoch (the time it registered, in ms).
    pub broker_epoch: std::sync::atomic::AtomicI64,
    image: watch::Sender<Arc<MetadataImage>>,
    /// The current producer-id block: next id to hand out, end (exclusive).
    producer_ids: tokio::sync::Mutex<(i64, i64)>,
    /// Serializes the controller's read-check-write operations on the metadata.
    controller: tokio::sync::Mutex<()>,
    /// The active controller's view of broker liveness (see `controller.rs`).
    pub liveness: crate::liveness::Liveness,
    /// The broker keys that change without a restart, swapped whole on a change.
    pub dynamic: Arc<crate::config::DynamicConfig>,
    /// The TLS listeners' settings, reloaded on a dynamic change of their `ssl.*` keys.
    pub tls: Arc<crate::tls_reload::TlsListeners>,
    pub fetch_sessions: FetchSessions,
    /// Follower fetchers, ISR changes and high-watermark checkpoints.
    pub replication: Arc<crate::replication::ReplicaManager>,
    /// Consumer groups and committed offsets of the `__consumer_offsets` partitions
    /// this node leads.
    pub groups: Arc<crate::group::GroupCoordinator>,
    pub transactions: Arc<crate::txn::TransactionCoordinator>,
    /// The services told of each applied image, in this order: the replicas first
    /// (their roles), then the coordinators that wait on those roles.
    publishers: Vec<Arc<dyn crate::image::MetadataPublisher>>,
    /// Partitions a log-cleaner task is cleaning now.
    cleaning: Mutex<std::collections::HashSet<TopicPartition>>,
    /// What the log cleaner last did, for Kafka's `kafka.log:type=LogCleaner` and
    /// `LogCleanerManager` metrics.
    pub cleaner_metrics: Mutex<CleanerMetrics>,
}

/// The cleaner's gauges, for the metrics endpoint.
pub(crate) fn lock_cleaner_metrics(broker: &Broker) -> MutexGuard<'_, CleanerMetrics> {
    guard(&broker.cleaner_metrics)
}

/// Kafka's log-cleaner gauges, as of the last pass (and the last scan for dirtiness).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct CleanerMetrics {
    /// `max-dirty-percent`: the highest dirty ratio of a compacted log at the last scan.
    pub max_dirty_percent: i64,
    /// `max-buffer-utilization-percent`: how full the last pass's offset map got.
    pub max_buffer_utilization_percent: i64,
    /// `cleaner-recopy-percent`: bytes written over bytes read by the last pass.
    pub cleaner_recopy_percent: i64,
    /// `max-clean-time-secs`: how long the last pass took.
    pub max_clean_time_secs: i64,
    /// When the last pass ended (ms since the epoch; 0: none yet).
    pub last_run_ms: i64,
    /// Passes that failed (a damaged segment): Kafka's `uncleanable-partitions-count`
    /// counts the partitions such passes left behind.
    pub uncleanable_partitions: std::collections::BTreeSet<String>,
}

/// The services a [`Broker`] holds, built before it: the image channel they read, the
/// replica manager, the coordinators on top of it.
pub struct Services {
    pub image: watch::Sender<Arc<MetadataImage>>,
    pub replication: Arc<crate::replication::ReplicaManager>,
    pub groups: Arc<crate::group::GroupCoordinator>,
    pub transactions: Arc<crate::txn::TransactionCoordinator>,
}

impl Services {
    /// The services of node `config.node_id()` over its opened log directories, each
    /// with its settings parsed once from `config`.
    pub fn new(config: &BrokerConfig, managers: Vec<LogManager>) -> Services {
        let image = watch::Sender::new(Arc::new(MetadataImage::default()));
        let view = crate::image::ImageView::new(image.subscribe());
        let node_id = config.node_id();
        let replication = crate::replication::ReplicaManager::new(
            node_id,
            config.clone(),
            view.clone(),
            managers,
        );
        let groups = Arc::new(crate::group::GroupCoordinator::new(
            node_id,
            crate::group::GroupSettings::from_config(config),
            view.clone(),
            replication.clone(),
        ));
        let transactions = crate::txn::TransactionCoordinator::new(
            node_id,
            crate::txn::TxnSettings::from_config(config),
            view,
            replication.clone(),
            replication.clone(),
            groups.clone(),
        );
        Services {
            image,
            replication,
            groups,
            transactions,
        }
    }
}

impl std::fmt::Debug for Broker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broker")
            .field("node_id", &self.node_id)
            .field("cluster_id", &self.cluster_id)
            .finish_non_exhaustive()
    }
}

impl Broker {
    /// The node's state around services built by the node ([`crate::node`] wires them:
    /// [`Services::new`]), with an empty image until the metadata quorum applies its
    /// log ([`Broker::attach_quorum`]).
    pub fn new(config: BrokerConfig, cluster_id: String, services: Services) -> Arc<Broker> {
        let Services {
            image,
            replication,
            groups,
            transactions,
        } = services;
        let dynamic = Arc::new(crate::config::DynamicConfig::new(config.clone()));
        let tls = Arc::new(crate::tls_reload::TlsListeners::new(&config));
        Arc::new(Broker {
            node_id: config.node_id(),
            cluster_id,
            quorum: OnceLock::new(),
            broker_epoch: std::sync::atomic::AtomicI64::new(-1),
            liveness: Default::default(),
            image,
            producer_ids: tokio::sync::Mutex::new((0, 0)),
            controller: tokio::sync::Mutex::new(()),
            groups: groups.clone(),
            publishers: vec![
                dynamic.clone(),
                tls.clone(),
                replication.clone(),
                groups,
                transactions.clone(),
            ],
            dynamic,
            tls,
            transactions,
            replication,
            cleaning: Default::default(),
            cleaner_metrics: Default::default(),
            fetch_sessions: FetchSessions::new(config.settings().fetch_session_cache_slots),
            config,
        })
    }

    /// What the metadata state machine calls after each applied change: publishes the
    /// image, brings local replicas in line and tells replication.
    pub fn apply_image(&self, image: Arc<MetadataImage>) {
        self.image.send_replace(image.clone());
        {
            if let Err(error) = self.replication.sync_replicas(&image) {
                tracing::error!(%error, "local replicas do not follow the metadata");
            }
        }
        for publisher in &self.publishers {
            publisher.publish(&image);
        }
    }

    /// Sets the metadata quorum (once, at start).
    pub fn attach_quorum(&self, quorum: Arc<crate::quorum::Quorum>) {
        let _ = self.quorum.set(quorum);
    }

    /// The metadata quorum.
    pub fn quorum(&self) -> Result<&Arc<crate::quorum::Quorum>, BrokerError> {
        self.quorum
            .get()
            .ok_or(BrokerError::Metadata(MetadataLogError::Closed))
    }

    /// Registers this node in the metadata (RegisterBrokerRecord), as a KRaft broker
    /// does at start: its advertised endpoints, supported features and log directories,
    /// with a new incarnation id and a broker epoch (the registration's offset). A
    /// single node registers unfenced; fencing by heartbeats comes with the quorum.
    pub async fn register(
        &self,
        endpoints: &[Endpoint],
        log_dirs: Vec<Uuid>,
    ) -> Result<(), BrokerError> {
        let listeners = &self.config.settings().listeners;
        // Kafka's epoch is the registration's offset; a registration time is as
        // monotonic across restarts and known before the write.
        let broker_epoch = sluice_storage::now_ms();
        self.broker_epoch.store(broker_epoch, Ordering::Release);
        let record = RegisterBrokerRecord {
            broker_id: self.node_id,
            is_migrating_zk_broker: false,
            incarnation_id: random_uuid(),
            broker_epoch,
            endpoints: endpoints
                .iter()
                .map(|e| BrokerEndpoint {
                    name: e.listener.clone(),
                    host: e.host.clone(),
                    port: e.port,
                    security_protocol: listeners.protocol_of(&e.listener).id(),
                })
                .collect(),
            features: vec![(
                "metadata.version".into(),
                crate::features::MIN_METADATA_VERSION_LEVEL,
                crate::features::METADATA_VERSION_LEVEL,
            )],
            rack: self.config.settings().rack.clone(),
            fenced: false,
            in_controlled_shutdown: false,
            log_dirs,
        };
        self.write_metadata(&[MetadataRecord::RegisterBroker(record)])
            .await
    }

    /// A registered, unfenced broker's endpoint on `listener` (the one a client
    /// connected to), from the metadata image.
    pub fn endpoint_of(image: &MetadataImage, broker_id: i32, listener: &str) -> Option<Endpoint> {
        crate::endpoint::endpoint_of(image, broker_id, listener)
    }

    /// The current metadata image.
    pub fn image(&self) -> Arc<MetadataImage> {
        self.image.borrow().clone()
    }

    /// A read handle on the image, for services that follow it.
    pub fn image_view(&self) -> crate::image::ImageView {
        crate::image::ImageView::new(self.image.subscribe())
    }

    /// The local replica of a partition.
    pub fn replica(&self, topic: &str, partition: i32) -> Option<Arc<Replica>> {
        self.replication.replica(topic, partition)
    }

    /// Every local replica, in topic-partition order.
    pub fn replicas(&self) -> Vec<(TopicPartition, Arc<Replica>)> {
        self.replication.replicas()
    }

    pub fn log_dirs(&self) -> Vec<PathBuf> {
        guard(&self.replication.managers)
            .iter()
            .map(|m| m.dir().to_path_buf())
            .collect()
    }

    /// Held across a controller operation: its checks against the image and its write.
    pub async fn controller_lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.controller.lock().await
    }

    /// Writes `records` to the metadata log as one entry through the quorum's leader
    /// (applied whole or refused whole on every node). Returns when a majority of the
    /// voters has the entry fsynced and this node has applied it (its image and
    /// replicas follow it). A partition change in it carries the partition epoch of
    /// this node's current image and is refused if the partition moved on.
    ///
    /// For writes any node makes on its own behalf; the active controller's plans go
    /// through [`Self::write_as_controller`].
    pub async fn write_metadata(&self, records: &[MetadataRecord]) -> Result<(), BrokerError> {
        if records.is_empty() {
            return Err(BrokerError::Metadata(MetadataLogError::Empty));
        }
        let quorum = self.quorum()?.clone();
        quorum
            .propose(crate::quorum::Proposal::planned(records, &self.image()))
            .await?;
        Ok(())
    }

    /// Writes records this node planned on `planned_on` as the active controller:
    /// every partition change is checked against the partition epoch it had there, and
    /// the write is refused with [`QuorumError::NotController`] (never forwarded) when
    /// this node is not, or stops being, the active controller.
    ///
    /// [`QuorumError::NotController`]: crate::quorum::QuorumError::NotController
    pub async fn write_as_controller(
        &self,
        records: &[MetadataRecord],
        planned_on: &MetadataImage,
    ) -> Result<(), BrokerError> {
        if records.is_empty() {
            return Err(BrokerError::Metadata(MetadataLogError::Empty));
        }
        let quorum = self.quorum()?.clone();
        if !quorum.is_active_controller() {
            return Err(crate::quorum::QuorumError::NotController.into());
        }
        // Every partition change carries the eligible leader replicas it implies.
        let mut records = records.to_vec();
        crate::elr::fill(planned_on, &mut records, &|topic| {
            crate::replication::topic_min_insync_replicas(&self.config, planned_on, topic)
        });
        quorum
            .propose_as_controller(crate::quorum::Proposal::planned(&records, planned_on))
            .await?;
        Ok(())
    }

    /// Hands out one producer id, taking a new block through the metadata log when the
    /// current one is used up (so ids stay unique across restarts).
    pub async fn allocate_producer_id(&self) -> Result<i64, BrokerError> {
        let mut block = self.producer_ids.lock().await;
        while block.0 >= block.1 {
            // Another broker may take the same block first: the write is then refused
            // (ids must only grow) and this one tries the next.
            let start = self.image().next_producer_id();
            let end = start + PRODUCER_ID_BLOCK;
            match self
                .write_metadata(&[MetadataRecord::ProducerIds {
                    broker_id: self.node_id,
                    broker_epoch: self.broker_epoch.load(Ordering::Acquire),
                    next_producer_id: end,
                }])
                .await
            {
                Ok(()) => *block = (start, end),
                Err(BrokerError::Quorum(crate::quorum::QuorumError::Refused(_))) => {
                    // Let this node apply the block that won before trying the next.
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error),
            }
        }
        let id = block.0;
        block.0 += 1;
        Ok(id)
    }

    /// Retention, time-based flushes and checkpoints for every log directory.
    pub fn run_periodic_tasks(&self) -> Result<usize, StorageError> {
        let now = sluice_storage::now_ms();
        // Read before the managers' lock is taken.
        let high_watermarks: HashMap<TopicPartition, i64> = self
            .replicas()
            .into_iter()
            .map(|(tp, replica)| (tp, replica.high_watermark()))
            .collect();
        let mut deleted = 0;
        for manager in guard(&self.replication.managers).iter_mut() {
            deleted += manager.run_periodic_tasks(now, |tp| {
                high_watermarks.get(tp).copied().unwrap_or(i64::MAX)
            })?;
        }
        Ok(deleted)
    }

    /// One pass of the log cleaner ([`sluice_storage::cleaner`]), as each of Kafka's
    /// `log.cleaner.threads` runs: takes the compacted log (leader or follower) with the
    /// highest dirty ratio at or above its `min.cleanable.dirty.ratio`, or one overdue
    /// (`max.compaction.lag.ms`, or a tombstone past its delete horizon), that no other
    /// task is cleaning, and cleans it up to its high watermark. The log's lock is held
    /// only to plan and to swap the output in. Returns what was cleaned.
    pub fn clean_filthiest_log(
        &self,
    ) -> Result<Option<(TopicPartition, sluice_storage::cleaner::CleanStats)>, StorageError> {
        let now = sluice_storage::now_ms();
        let cleaner = self.dynamic.current().cleaner;
        let threads = cleaner.threads.max(1) as u64;
        let map_bytes = usize::try_from(cleaner.dedupe_buffer_size / threads).unwrap_or(usize::MAX);
        let mut best: Option<(
            f64,
            TopicPartition,
            Arc<Replica>,
            sluice_storage::cleaner::Cleanable,
        )> = None;
        for (tp, replica) in self.replicas() {
            if guard(&self.cleaning).contains(&tp) {
                continue;
            }
            let first_dirty = guard(&self.replication.managers)
                .get(replica.dir_index)
                .map_or(0, |m| m.cleaner_offset(&tp));
            let high_watermark = replica.high_watermark();
            let Some(cleanable) =
                sluice_storage::lock(&replica.log).cleanable(first_dirty, high_watermark, now)
            else {
                continue;
            };
            if !cleanable.is_due() {
                continue;
            }
            let score = if cleanable.overdue || cleanable.tombstones_due {
                f64::INFINITY
            } else {
                cleanable.dirty_ratio()
            };
            if best.as_ref().is_none_or(|(s, ..)| score > *s) {
                best = Some((score, tp, replica, cleanable));
            }
        }
        {
            let mut metrics = guard(&self.cleaner_metrics);
            metrics.max_dirty_percent = best
                .as_ref()
                .map_or(0, |(_, _, _, c)| (c.dirty_ratio() * 100.0) as i64);
        }
        let Some((_, tp, replica, cleanable)) = best else {
            return Ok(None);
        };
        if !guard(&self.cleaning).insert(tp.clone()) {
            return Ok(None);
        }
        let result = (|| {
            let plan = sluice_storage::lock(&replica.log).plan_clean(&cleanable, now)?;
            let cleaned = sluice_storage::cleaner::run(&plan, map_bytes)?;
            sluice_storage::lock(&replica.log).install_cleaned(cleaned)
        })();
        guard(&self.cleaning).remove(&tp);
        let ended = sluice_storage::now_ms();
        let stats = match result {
            Ok(stats) => {
                guard(&self.cleaner_metrics)
                    .uncleanable_partitions
                    .remove(&tp.to_string());
                stats
            }
            Err(error) => {
                guard(&self.cleaner_metrics)
                    .uncleanable_partitions
                    .insert(tp.to_string());
                return Err(error);
            }
        };
        let Some(stats) = stats else {
            return Ok(None);
        };
        {
            let mut metrics = guard(&self.cleaner_metrics);
            metrics.max_buffer_utilization_percent =
                (stats.map_bytes_used as u128 * 100 / map_bytes.max(1) as u128) as i64;
            metrics.cleaner_recopy_percent = (u128::from(stats.bytes_written) * 100
                / u128::from(stats.bytes_read.max(1)))
                as i64;
            metrics.max_clean_time_secs = (ended - now).max(0) / 1000;
            metrics.last_run_ms = ended;
        }
        if let Some(manager) = guard(&self.replication.managers).get_mut(replica.dir_index) {
            manager.set_cleaner_offset(&tp, stats.next_dirty_offset);
        }
        Ok(Some((tp, stats)))
    }

    /// Time-based flushes (`flush.ms`) and the deferred fsync of rolled segments.
    pub fn flush_due_logs(&self) {
        let now = sluice_storage::now_ms();
        for (tp, replica) in self.replicas() {
            let mut log = sluice_storage::lock(&replica.log);
            if let Err(error) = log
                .flush_rolled_segments()
                .and_then(|_| log.flush_if_due(now))
            {
                tracing::error!(partition = %tp, %error, "flush failed");
            }
        }
    }

    /// Clean shutdown: closes the metadata log, then flushes and closes every log and
    /// writes the clean-shutdown markers.
    pub fn shutdown(&self) -> Result<(), BrokerError> {
        self.replication
            .replicas
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        for manager in std::mem::take(&mut *guard(&self.replication.managers)) {
            manager.shutdown()?;
        }
        Ok(())
    }
}

/// A random topic id as Kafka makes them: a version-4 UUID that is neither the zero nor
/// the sentinel id and whose base64 form does not start with '-'.
pub fn random_uuid() -> Uuid {
    loop {
        let mut id: Uuid = rand::random();
        id[6] = (id[6] & 0x0f) | 0x40;
        id[8] = (id[8] & 0x3f) | 0x80;
        // URL-safe base64 of a first byte of 0b111110xx starts with '-'.
        if id[0] >> 2 != 62 {
            return id;
        }
    }
}
