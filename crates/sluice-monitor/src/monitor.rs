//! The running monitor: one storage and one evaluator shared by the cluster and consumer
//! modules that feed it, the HTTP API and the Prometheus collector that read it, and the
//! notifiers that alert from it. Burrow's coordinators, in one process.
//!
//! Data flow: modules send [`StorageRequest`]s on one bounded channel
//! (`STORAGE_QUEUE_DEPTH`, Burrow's `queue-depth` default), a single task applies them
//! in order; readers lock storage briefly (a lookup or one group's evaluation). The
//! consumer modules start once their cluster's first log end offsets are stored,
//! because storage drops a commit for a partition it has no log end offset for (as
//! Burrow's does), and the history read back from `__consumer_offsets` at start would
//! otherwise be lost.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::cluster::ClusterModule;
use crate::config::{Config, ConfigError};
use crate::consumer::now_ms;
use crate::evaluator::{Evaluator, EvaluatorConfig};
use crate::storage::{ConsumerTopics, OffsetCommit, Storage, StorageConfig};
use crate::types::{GroupStatus, StorageRequest};

/// Burrow's default `queue-depth` for requests waiting for storage.
pub const STORAGE_QUEUE_DEPTH: usize = 4096;

/// A configuration the monitor cannot start with.
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("storage.{name}: {message}")]
    Storage { name: String, message: String },
    #[error("evaluator.{name}: {message}")]
    Evaluator { name: String, message: String },
    #[error("{section}: Burrow allows exactly one {section} module, found {count}")]
    OneModule { section: &'static str, count: usize },
    #[error(transparent)]
    Notifier(#[from] crate::notifier::NotifierError),
}

/// Storage has stopped (the monitor is shutting down): a module's request was not queued.
#[derive(Debug, thiserror::Error)]
#[error("storage stopped")]
pub struct StorageStopped;

/// How long a stopping monitor lets its notifiers deliver what is queued (a close
/// most of all).
const NOTIFIER_DRAIN: Duration = Duration::from_secs(5);

/// The modules' way into storage: a bounded queue, and a count of what went in, so a
/// reader can wait until storage has applied everything sent before a moment
/// ([`Monitor::caught_up`]).
#[derive(Clone)]
pub struct StorageSink {
    sender: mpsc::Sender<StorageRequest>,
    sent: Arc<AtomicU64>,
}

impl StorageSink {
    /// Queues a request; fails only once storage has stopped.
    pub async fn send(&self, request: StorageRequest) -> Result<(), StorageStopped> {
        self.sender
            .send(request)
            .await
            .map_err(|_| StorageStopped)?;
        self.sent.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }
}

struct Shared {
    config: Config,
    storage: Mutex<Storage>,
    evaluator: Mutex<Evaluator>,
    /// Set once every cluster has had its first log end offsets stored (Burrow's
    /// `/burrow/admin/ready`).
    ready: AtomicBool,
    /// Per consumer module: whether it has read what was committed when it started.
    caught_up: Mutex<Vec<watch::Receiver<bool>>>,
    /// Requests queued for storage, and applied by it (never more than queued).
    sent: Arc<AtomicU64>,
    applied: AtomicU64,
}

/// A handle on the monitor; clones share it.
#[derive(Clone)]
pub struct Monitor {
    shared: Arc<Shared>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind, still usable.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Monitor {
    /// Builds storage and evaluator from `config`; nothing runs until [`Monitor::start`].
    pub fn new(config: Config) -> Result<Monitor, MonitorError> {
        let (storage_name, storage_body) = only_one("storage", &config.storage)?;
        let storage_config: StorageConfig = Config::module("storage", storage_name, storage_body)?;
        let mut storage = Storage::new(storage_config).map_err(|error| MonitorError::Storage {
            name: storage_name.clone(),
            message: error.to_string(),
        })?;
        let (evaluator_name, evaluator_body) = only_one("evaluator", &config.evaluators)?;
        let evaluator_config: EvaluatorConfig =
            Config::module("evaluator", evaluator_name, evaluator_body)?;
        let evaluator =
            Evaluator::new(evaluator_config).map_err(|error| MonitorError::Evaluator {
                name: evaluator_name.clone(),
                message: error.to_string(),
            })?;
        for cluster in config.clusters.keys() {
            storage.add_cluster(cluster);
        }
        Ok(Monitor {
            shared: Arc::new(Shared {
                config,
                storage: Mutex::new(storage),
                evaluator: Mutex::new(evaluator),
                ready: AtomicBool::new(false),
                caught_up: Mutex::new(Vec::new()),
                sent: Arc::new(AtomicU64::new(0)),
                applied: AtomicU64::new(0),
            }),
        })
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub fn is_ready(&self) -> bool {
        self.shared.ready.load(Ordering::Relaxed)
    }

    /// Starts the storage task and every cluster and consumer module; they run until
    /// `stop` turns true.
    pub fn start(&self, stop: watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
        let (sender, mut received) = mpsc::channel(STORAGE_QUEUE_DEPTH);
        let requests = StorageSink {
            sender,
            sent: self.shared.sent.clone(),
        };
        let mut tasks = Vec::new();
        let monitor = self.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(request) = received.recv().await {
                monitor.apply(request);
                monitor.shared.applied.fetch_add(1, Ordering::AcqRel);
            }
        }));
        let config = &self.shared.config;
        let mut first_offsets: BTreeMap<String, watch::Receiver<bool>> = BTreeMap::new();
        for (name, cluster) in &config.clusters {
            let (stored, first) = watch::channel(false);
            first_offsets.insert(name.clone(), first);
            let module = ClusterModule::new(
                name.clone(),
                cluster.clone(),
                config.client_id(cluster.client_profile.as_deref()),
            );
            let monitor = self.clone();
            let cluster_name = name.clone();
            let groups = move || monitor.groups(&cluster_name);
            let sink = requests.clone();
            let stop = stop.clone();
            tasks.push(tokio::spawn(module.run(sink, groups, stored, stop)));
        }
        let monitor = self.clone();
        let mut all_first = first_offsets.values().cloned().collect::<Vec<_>>();
        tasks.push(tokio::spawn(async move {
            for first in &mut all_first {
                if first.wait_for(|stored| *stored).await.is_err() {
                    return;
                }
            }
            monitor.shared.ready.store(true, Ordering::Relaxed);
        }));
        for consumer in config.consumers.values() {
            let mut first = first_offsets
                .get(&consumer.cluster)
                .cloned()
                .expect("the config module checked every consumer's cluster exists");
            let wait = Duration::from_secs(
                config
                    .clusters
                    .get(&consumer.cluster)
                    .map_or(10, |cluster| cluster.offset_refresh)
                    .saturating_mul(3),
            );
            let cluster = consumer.cluster.clone();
            let consumer = consumer.clone();
            let client_id = config.client_id(consumer.client_profile.as_deref());
            let sink = requests.clone();
            let stop = stop.clone();
            let (caught_up, caught_up_seen) = watch::channel(false);
            lock(&self.shared.caught_up).push(caught_up_seen);
            tasks.push(tokio::spawn(async move {
                // Bounded: a cluster with no topics yet never stores an offset.
                let _ = tokio::time::timeout(wait, first.wait_for(|stored| *stored)).await;
                crate::consumer::run(cluster, consumer, client_id, sink, caught_up, stop).await;
            }));
        }
        tasks
    }

    /// Waits until the monitor is ready and every consumer module has read what was
    /// committed when it started, or `timeout` passes; returns whether it got there.
    pub async fn caught_up(&self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        let receivers = lock(&self.shared.caught_up).clone();
        for mut receiver in receivers {
            let waited =
                tokio::time::timeout_at(deadline, receiver.wait_for(|caught_up| *caught_up)).await;
            if !matches!(waited, Ok(Ok(_))) {
                return false;
            }
        }
        // What the modules read is queued for storage: wait until it is applied.
        let sent = self.shared.sent.load(Ordering::Acquire);
        while !self.is_ready() || self.shared.applied.load(Ordering::Acquire) < sent {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    /// Starts the configured notifiers (none: no task) and the loop that evaluates every
    /// group at their `interval` and hands each evaluation to them, as Burrow's notifier
    /// coordinator does. A group that disappears (deleted, expired) is observed once
    /// more as NOTFOUND, so an open alert on it is closed, then forgotten.
    pub fn start_notifiers(
        &self,
        mut stop: watch::Receiver<bool>,
    ) -> Result<Option<JoinHandle<()>>, MonitorError> {
        let settings = crate::notifier::NotifierSettings::from_configs(&self.config().notifiers)?;
        if settings.is_empty() {
            return Ok(None);
        }
        let mut notifiers =
            crate::notifier::Notifiers::start(settings, crate::notifier::RetryPolicy::default())?;
        let monitor = self.clone();
        Ok(Some(tokio::spawn(async move {
            let mut tick = tokio::time::interval(notifiers.evaluation_interval());
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut known: BTreeMap<String, Vec<String>> = BTreeMap::new();
            loop {
                tokio::select! {
                    _ = stop.wait_for(|stopped| *stopped) => break,
                    _ = tick.tick() => {}
                }
                for cluster in monitor.clusters() {
                    let groups = monitor.groups(&cluster);
                    for group in &groups {
                        let status = monitor.group_status(&cluster, group, true);
                        notifiers.observe(&status, std::time::SystemTime::now());
                    }
                    let previous = known
                        .insert(cluster.clone(), groups.clone())
                        .unwrap_or_default();
                    for gone in previous.iter().filter(|group| !groups.contains(group)) {
                        let status = crate::evaluator::not_found(&cluster, gone);
                        notifiers.observe(&status, std::time::SystemTime::now());
                        notifiers.forget_group(&cluster, gone);
                    }
                }
            }
            let unsent = notifiers.shutdown(NOTIFIER_DRAIN).await;
            for (notifier, count) in unsent.iter().filter(|(_, count)| **count > 0) {
                tracing::warn!(%notifier, count, "monitor: notifications left unsent at shutdown");
            }
        })))
    }

    /// Applies one request; what storage drops is logged at debug level, as Burrow does.
    pub fn apply(&self, request: StorageRequest) {
        let mut storage = lock(&self.shared.storage);
        let outcome = match &request {
            StorageRequest::SetBrokerOffset {
                cluster,
                topic,
                partition,
                topic_partition_count,
                offset,
                timestamp_ms,
            } => storage.set_broker_offset(
                cluster,
                topic,
                *partition,
                *topic_partition_count,
                *offset,
                *timestamp_ms,
            ),
            StorageRequest::SetConsumerOffset {
                cluster,
                group,
                topic,
                partition,
                offset,
                order,
                timestamp_ms,
                observed_ms,
            } => storage.set_consumer_offset(
                cluster,
                group,
                topic,
                *partition,
                OffsetCommit {
                    offset: *offset,
                    order: *order,
                    timestamp_ms: *timestamp_ms,
                    observed_ms: *observed_ms,
                },
            ),
            StorageRequest::SetConsumerOwner {
                cluster,
                group,
                topic,
                partition,
                owner,
                client_id,
            } => storage.set_consumer_owner(cluster, group, topic, *partition, owner, client_id),
            StorageRequest::ClearConsumerOwners { cluster, group } => {
                storage.clear_consumer_owners(cluster, group)
            }
            StorageRequest::DeleteTopic { cluster, topic } => storage.delete_topic(cluster, topic),
            StorageRequest::DeleteGroup { cluster, group } => {
                tracing::info!(%cluster, %group, "monitor: group deleted");
                storage.delete_group(cluster, group)
            }
        };
        drop(storage);
        match &request {
            StorageRequest::DeleteGroup { cluster, group } => {
                lock(&self.shared.evaluator).forget(cluster, Some(group));
            }
            StorageRequest::DeleteTopic { cluster, .. } => {
                lock(&self.shared.evaluator).forget(cluster, None);
            }
            _ => {}
        }
        if let Err(dropped) = outcome {
            tracing::debug!(?request, %dropped, "monitor: storage dropped a request");
        }
    }

    pub fn clusters(&self) -> Vec<String> {
        lock(&self.shared.storage).clusters()
    }

    pub fn topics(&self, cluster: &str) -> Option<Vec<String>> {
        lock(&self.shared.storage).topics(cluster)
    }

    /// A topic's latest log end offset per partition.
    pub fn topic(&self, cluster: &str, topic: &str) -> Option<Vec<i64>> {
        lock(&self.shared.storage).topic(cluster, topic)
    }

    pub fn consumers_for_topic(&self, cluster: &str, topic: &str) -> Option<Vec<String>> {
        lock(&self.shared.storage).consumers_for_topic(cluster, topic)
    }

    /// The groups of a cluster (empty for an unknown cluster).
    pub fn groups(&self, cluster: &str) -> Vec<String> {
        self.consumers(cluster).unwrap_or_default()
    }

    pub fn consumers(&self, cluster: &str) -> Option<Vec<String>> {
        lock(&self.shared.storage).consumers(cluster)
    }

    /// A group's stored windows, Burrow's consumer detail.
    pub fn consumer(&self, cluster: &str, group: &str) -> Option<ConsumerTopics> {
        lock(&self.shared.storage).consumer(cluster, group, now_ms())
    }

    /// A group's evaluation; `show_all` keeps OK partitions in the list (`/lag`), else
    /// only the unhealthy ones are listed (`/status`).
    pub fn group_status(&self, cluster: &str, group: &str, show_all: bool) -> GroupStatus {
        self.group_status_at(cluster, group, show_all, now_ms())
    }

    pub fn group_status_at(
        &self,
        cluster: &str,
        group: &str,
        show_all: bool,
        now_ms: i64,
    ) -> GroupStatus {
        let mut storage = lock(&self.shared.storage);
        lock(&self.shared.evaluator).group_status(&mut storage, cluster, group, show_all, now_ms)
    }

    /// Removes a group (or, with `topic`, only its commits for that topic), as Burrow's
    /// `DELETE` does; false when the cluster is unknown.
    pub fn delete_group(&self, cluster: &str, group: &str, topic: Option<&str>) -> bool {
        let deleted = {
            let mut storage = lock(&self.shared.storage);
            match topic {
                Some(topic) => storage.delete_group_topic(cluster, group, topic).is_ok(),
                None => storage.delete_group(cluster, group).is_ok(),
            }
        };
        lock(&self.shared.evaluator).forget(cluster, Some(group));
        deleted
    }
}

fn only_one<'a>(
    section: &'static str,
    modules: &'a BTreeMap<String, serde_json::Value>,
) -> Result<(&'a String, &'a serde_json::Value), MonitorError> {
    let mut entries = modules.iter();
    match (entries.next(), entries.next()) {
        (Some(only), None) => Ok(only),
        _ => Err(MonitorError::OneModule {
            section,
            count: modules.len(),
        }),
    }
}
