//! The worker: keeps the cluster's connectors and tasks in Connect's three internal
//! topics and runs them (Connect's `DistributedHerder` and `Worker`).
//!
//! A write through the REST API goes to the config topic first; every worker's reader
//! applies it and the reconcile loop then starts, reconfigures, pauses or stops what
//! runs here, so the config topic is the only truth. This worker runs every connector
//! and task (a cluster of one); sharing them among workers through Connect's group
//! protocol is the next step (see ARCHITECTURE.md).
//!
//! Delivery (at least once): a source task's offsets are written to the offsets topic
//! only for records Kafka acknowledged (`acks=all`, idempotent producer); a sink task's
//! consumer offsets are committed only after the task flushed what it was given. A
//! worker killed in between repeats records on restart; it never skips one.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Map, Value as Json};
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Acks, Producer, ProducerConfig, ProducerError, ProducerRecord};
use sluice_client::{Admin, ClientConfig, ErrorCode, TopicPartition};
use tokio::sync::watch;

use crate::config::WorkerConfig;
use crate::connectors::{
    self, ConnectError, ConnectorPlugin, Kind, OffsetReader, SinkError, SinkTask,
};
use crate::converters::{self, Converter};
use crate::data::{Header, Record};
use crate::errors::{self, Failure, Reporter, Stage};
use crate::group::{self, Assignment, GroupConfig, Members};
use crate::log::{LogError, TopicLog, TopicSpec};
use crate::records::{
    self, ConfigRecord, ConfigState, Status, StatusKey, TargetState, TopicStatus,
    decode_offset_key, offset_key,
};
use crate::transforms::Chain;
use crate::{ConfigError, Props};

/// The config topic's key prefix for a cluster-wide log level (KIP-976).
const LOGGER_CLUSTER_PREFIX: &str = "logger-cluster-";

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// How long a write to an internal topic, or a read to its end, may take.
const STORE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connector's source offsets: (source partition as JSON text) -> (partition, offset).
type Positions = BTreeMap<String, (Map<String, Json>, Map<String, Json>)>;
type Offsets = BTreeMap<String, Positions>;
/// One entry of a KIP-875 offsets PATCH: a partition and its new offset (None: remove).
pub type OffsetChange = (Map<String, Json>, Option<Map<String, Json>>);
/// A future that need not be `Send` (see [`Worker::group_admin`]).
type LocalFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;
/// A connector's key and value converters.
type Converters = (Box<dyn Converter>, Box<dyn Converter>);

/// What a worker knows and runs.
pub struct Worker {
    pub config: WorkerConfig,
    configs: TopicLog,
    config_state: Arc<Mutex<ConfigState>>,
    config_changed: watch::Receiver<u64>,
    statuses: TopicLog,
    status_state: Arc<Mutex<BTreeMap<StatusKey, Status>>>,
    offsets: TopicLog,
    /// connector -> (source partition as JSON text) -> (partition, offset).
    offset_state: Arc<Mutex<Offsets>>,
    running: Mutex<BTreeMap<(String, Option<u32>), Running>>,
    /// KIP-558's active topics, by status-topic key.
    topic_state: Arc<Mutex<BTreeMap<String, TopicStatus>>>,
    /// Tasks whose future has not ended (running, or stopping after removal from
    /// `running`): a revocation waits for them before the group moves them.
    active: Active,
    /// Bumped on every restart request, so the reconcile loop acts at once.
    kick: watch::Sender<u64>,
    generation: i32,
    closing: std::sync::atomic::AtomicBool,
    /// What the group assigned this worker (None: between generations; nothing runs).
    assignment: watch::Receiver<Option<Assignment>>,
    stop_group: watch::Sender<bool>,
    group: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Held through a round of zombie fencing, so this worker's tasks fence once per
    /// generation of task configs.
    fencing: tokio::sync::Mutex<()>,
}

/// The tasks running or still stopping on this worker, with how many futures each has
/// (a restarted task's old one may still be ending).
type Active = Arc<Mutex<BTreeMap<(String, i32), usize>>>;

/// The config state as the group's leader assigns it, and the tasks running here.
struct Work(Arc<Mutex<ConfigState>>, Active);

impl Members for Work {
    fn config_offset(&self) -> i64 {
        lock(&self.0).offset
    }

    fn active(&self) -> BTreeSet<(String, i32)> {
        lock(&self.1).keys().cloned().collect()
    }

    fn work(&self) -> BTreeMap<String, u32> {
        let state = lock(&self.0);
        state
            .connectors
            .keys()
            .map(|c| (c.clone(), state.tasks.get(c).map_or(0, |t| t.len() as u32)))
            .collect()
    }
}

struct Running {
    /// The task config (or connector config) it runs with.
    config: Props,
    stop: watch::Sender<bool>,
    handle: tokio::task::JoinHandle<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Connect's errors as the REST API answers them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HerderError {
    #[error("Connector {0} not found")]
    NotFound(String),
    #[error("Connector {0} already exists")]
    Exists(String),
    #[error("{0}")]
    BadRequest(String),
    #[error("Connector configuration is invalid and contains the following {count} error(s):\n{}\nYou can also find the above list of errors at the endpoint `/connector-plugins/{{connectorType}}/config/validate`", .errors.message())]
    Invalid { count: usize, errors: ConfigError },
    #[error("{0}")]
    Store(String),
}

impl From<LogError> for HerderError {
    fn from(e: LogError) -> HerderError {
        HerderError::Store(e.to_string())
    }
}

impl Worker {
    /// Opens the three internal topics (creating them as Connect does) and reads them.
    pub async fn start(config: WorkerConfig) -> Result<Arc<Worker>, HerderError> {
        let client = format!("connect-{}", config.worker_id());
        let config_state = Arc::new(Mutex::new(ConfigState::default()));
        let (changed_tx, config_changed) = watch::channel(0u64);
        let apply_config = {
            let state = config_state.clone();
            Box::new(move |r: crate::log::LogRecord| {
                let key = r
                    .key
                    .as_deref()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .unwrap_or_default();
                // KIP-976: a cluster-wide log level, applied by every worker.
                if let (Some(namespace), Some(value)) =
                    (key.strip_prefix(LOGGER_CLUSTER_PREFIX), r.value.as_deref())
                {
                    let level = serde_json::from_slice::<Json>(value)
                        .ok()
                        .and_then(|v| v.get("level").and_then(Json::as_str).map(str::to_string));
                    if let Some(level) = level
                        && let Err(e) = crate::loggers::set(namespace, &level, now_ms())
                    {
                        tracing::warn!("cluster log level for {namespace}: {e}");
                    }
                }
                match ConfigRecord::decode(&key, r.value.as_deref()) {
                    Ok(record) => lock(&state).apply(record, r.offset),
                    Err(e) => {
                        tracing::warn!("skipping a config record at offset {}: {e}", r.offset)
                    }
                }
                changed_tx.send_modify(|n| *n += 1);
            })
        };
        let configs = TopicLog::start(
            &config.bootstrap_servers,
            &format!("{client}-configs"),
            &TopicSpec {
                name: config.config_storage_topic.clone(),
                partitions: 1,
                replication_factor: config.config_storage_replication_factor,
                configs: vec![],
            },
            STORE_TIMEOUT,
            apply_config,
        )
        .await?;
        let offset_state: Arc<Mutex<Offsets>> = Arc::default();
        let apply_offset = {
            let state = offset_state.clone();
            Box::new(move |r: crate::log::LogRecord| {
                let Some((connector, partition)) = r.key.as_deref().and_then(decode_offset_key)
                else {
                    return;
                };
                let id = Json::Object(partition.clone()).to_string();
                let mut state = lock(&state);
                let entry = state.entry(connector).or_default();
                match r.value.as_deref().map(serde_json::from_slice::<Json>) {
                    Some(Ok(Json::Object(offset))) => {
                        entry.insert(id, (partition, offset));
                    }
                    None => {
                        entry.remove(&id);
                    }
                    _ => tracing::warn!("skipping an offset record at offset {}", r.offset),
                }
            })
        };
        let offsets = TopicLog::start(
            &config.bootstrap_servers,
            &format!("{client}-offsets"),
            &TopicSpec {
                name: config.offset_storage_topic.clone(),
                partitions: config.offset_storage_partitions,
                replication_factor: config.offset_storage_replication_factor,
                configs: vec![],
            },
            STORE_TIMEOUT,
            apply_offset,
        )
        .await?;
        let status_state: Arc<Mutex<BTreeMap<StatusKey, Status>>> = Arc::default();
        let topic_state: Arc<Mutex<BTreeMap<String, TopicStatus>>> = Arc::default();
        let apply_status = {
            let state = status_state.clone();
            let topics = topic_state.clone();
            Box::new(move |r: crate::log::LogRecord| {
                let key = r
                    .key
                    .as_deref()
                    .map(|k| String::from_utf8_lossy(k).into_owned())
                    .unwrap_or_default();
                if key.starts_with(TopicStatus::PREFIX) {
                    let mut topics = lock(&topics);
                    match r.value.as_deref().and_then(TopicStatus::decode) {
                        Some(status) => {
                            topics.insert(key, status);
                        }
                        None => {
                            topics.remove(&key);
                        }
                    }
                    return;
                }
                let Some(key) = StatusKey::decode(&key) else {
                    return;
                };
                let mut state = lock(&state);
                match r.value.as_deref().map(Status::decode) {
                    Some(Some(status)) => {
                        state.insert(key, status);
                    }
                    _ => {
                        state.remove(&key);
                    }
                }
            })
        };
        let statuses = TopicLog::start(
            &config.bootstrap_servers,
            &format!("{client}-statuses"),
            &TopicSpec {
                name: config.status_storage_topic.clone(),
                partitions: config.status_storage_partitions,
                replication_factor: config.status_storage_replication_factor,
                configs: vec![],
            },
            STORE_TIMEOUT,
            apply_status,
        )
        .await?;
        let (kick, _) = watch::channel(0);
        let (assigned, assignment) = watch::channel(None);
        let (stop_group, group_stopped) = watch::channel(false);
        let active = Active::default();
        let group = tokio::spawn(group::run(
            GroupConfig {
                bootstrap_servers: config.bootstrap_servers.clone(),
                group_id: config.group_id.clone(),
                url: config.rest_url(),
                session_timeout: config.session_timeout,
                rebalance_timeout: config.rebalance_timeout,
                heartbeat_interval: config.heartbeat_interval,
                protocol: config.protocol,
                scheduled_rebalance_max_delay: config.scheduled_rebalance_max_delay,
            },
            Arc::new(Work(config_state.clone(), active.clone())),
            assigned,
            group_stopped,
        ));
        let worker = Arc::new(Worker {
            config,
            configs,
            config_state,
            config_changed,
            statuses,
            status_state,
            offsets,
            offset_state,
            running: Mutex::new(BTreeMap::new()),
            topic_state,
            active,
            kick,
            generation: 1,
            closing: std::sync::atomic::AtomicBool::new(false),
            assignment,
            stop_group,
            group: Mutex::new(Some(group)),
            fencing: tokio::sync::Mutex::new(()),
        });
        tokio::spawn(reconcile_loop(worker.clone()));
        Ok(worker)
    }

    pub fn cluster_id(&self) -> Option<String> {
        self.configs.admin().client().cluster_id()
    }

    /// The config state as this worker has read it.
    pub fn state(&self) -> ConfigState {
        lock(&self.config_state).clone()
    }

    /// Waits until this worker is in a generation (its first assignment), at most
    /// `timeout`.
    pub async fn wait_assigned(&self, timeout: Duration) -> bool {
        let mut assignment = self.assignment.clone();
        tokio::time::timeout(timeout, assignment.wait_for(Option::is_some))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// The current generation's assignment (None during a rebalance).
    pub fn assignment(&self) -> Option<Assignment> {
        self.assignment.borrow().clone()
    }

    /// The task ids the status topic holds for a connector.
    pub fn task_statuses(&self, connector: &str) -> Vec<u32> {
        lock(&self.status_state)
            .keys()
            .filter_map(|k| match k {
                StatusKey::Task(c, t) if c == connector => Some(*t),
                _ => None,
            })
            .collect()
    }

    pub fn status(&self, key: &StatusKey) -> Option<Status> {
        lock(&self.status_state).get(key).cloned()
    }

    /// The committed source offsets of a connector: (partition, offset) pairs.
    pub fn connector_offsets(
        &self,
        connector: &str,
    ) -> Vec<(Map<String, Json>, Map<String, Json>)> {
        lock(&self.offset_state)
            .get(connector)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// `GET /connectors/{c}/offsets` (KIP-875): a source connector's offsets from the
    /// offsets topic; a sink connector's as its consumer group (`connect-<name>`)
    /// committed them, in Connect's `{"kafka_topic","kafka_partition"}` /
    /// `{"kafka_offset"}` form.
    pub async fn offsets(
        &self,
        name: &str,
    ) -> Result<Vec<(Map<String, Json>, Map<String, Json>)>, HerderError> {
        let config = self.require(name).await?;
        if connector_type(&config) != Some("sink") {
            return Ok(self.connector_offsets(name));
        }
        let group = sink_group(name);
        let committed = self
            .group_admin(move |admin| {
                Box::pin(async move { admin.list_group_offsets(&group).await })
            })
            .await?;
        Ok(committed
            .into_iter()
            .map(|(tp, o)| {
                let mut partition = Map::new();
                partition.insert(KAFKA_TOPIC.into(), Json::from(tp.topic));
                partition.insert(KAFKA_PARTITION.into(), Json::from(tp.partition));
                let mut offset = Map::new();
                offset.insert(KAFKA_OFFSET.into(), Json::from(o.offset));
                (partition, offset)
            })
            .collect())
    }

    /// `PATCH` (`Some`: partition -> offset, a null offset removing one) and `DELETE`
    /// (`None`: every offset) of `/connectors/{c}/offsets`, only while the connector is
    /// STOPPED with no tasks, as KIP-875 has it. Answers Connect's success message.
    pub async fn modify_offsets(
        &self,
        name: &str,
        change: Option<Vec<OffsetChange>>,
    ) -> Result<&'static str, HerderError> {
        let config = self.require(name).await?;
        let stopped = {
            let state = lock(&self.config_state);
            state.target_state(name) == TargetState::Stopped
                && state.tasks.get(name).is_none_or(Vec::is_empty)
        };
        if !stopped {
            return Err(HerderError::BadRequest(format!(
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/{name}/stop' endpoint"
            )));
        }
        if connector_type(&config) == Some("sink") {
            let group = sink_group(name);
            match change {
                None => {
                    let groups = vec![group.clone()];
                    let results = self
                        .group_admin(move |admin| {
                            Box::pin(async move { admin.delete_groups(&groups).await })
                        })
                        .await?;
                    match results.get(&group) {
                        // GROUP_ID_NOT_FOUND: nothing was committed, nothing to reset.
                        Some(Err(e)) if e.code != ErrorCode(69) => {
                            return Err(HerderError::Store(format!(
                                "Failed to reset the offsets of the sink connector's consumer group {group}: {e}"
                            )));
                        }
                        _ => {}
                    }
                    Ok("The offsets for this connector have been reset successfully")
                }
                Some(change) => {
                    let parsed = parse_sink_offsets(&change)?;
                    let alter: BTreeMap<TopicPartition, i64> = parsed
                        .iter()
                        .filter_map(|(tp, o)| o.map(|o| (tp.clone(), o)))
                        .collect();
                    let remove: Vec<TopicPartition> = parsed
                        .iter()
                        .filter(|(_, o)| o.is_none())
                        .map(|(tp, _)| tp.clone())
                        .collect();
                    let failed = |results: sluice_client::PartitionResults<()>| {
                        results
                            .into_iter()
                            .find_map(|(tp, r)| r.err().map(|e| format!("{tp}: {e}")))
                    };
                    let g = group.clone();
                    if !alter.is_empty()
                        && let Some(e) = failed(
                            self.group_admin(move |admin| {
                                Box::pin(async move { admin.alter_group_offsets(&g, &alter).await })
                            })
                            .await?,
                        )
                    {
                        return Err(HerderError::Store(format!(
                            "Failed to alter consumer group offsets for connector {name}: {e}"
                        )));
                    }
                    let g = group.clone();
                    if !remove.is_empty()
                        && let Some(e) = failed(
                            self.group_admin(move |admin| {
                                Box::pin(async move {
                                    match admin.delete_group_offsets(&g, &remove).await {
                                        // GROUP_ID_NOT_FOUND: no offsets to remove.
                                        Err(sluice_client::Error::Api(e))
                                            if e.code == ErrorCode(69) =>
                                        {
                                            Ok(Default::default())
                                        }
                                        r => r,
                                    }
                                })
                            })
                            .await?,
                        )
                    {
                        return Err(HerderError::Store(format!(
                            "Failed to reset consumer group offsets for connector {name}: {e}"
                        )));
                    }
                    Ok("The offsets for this connector have been altered successfully")
                }
            }
        } else {
            let (writes, message) = match change {
                None => (
                    self.connector_offsets(name)
                        .into_iter()
                        .map(|(p, _)| (p, None))
                        .collect::<Vec<_>>(),
                    "The offsets for this connector have been reset successfully",
                ),
                Some(change) => {
                    if change.is_empty() {
                        return Err(HerderError::BadRequest(
                            "Partitions / offsets need to be provided for an alter offsets request"
                                .into(),
                        ));
                    }
                    (
                        change,
                        "The offsets for this connector have been altered successfully",
                    )
                }
            };
            for (partition, offset) in writes {
                let key = offset_key(name, &partition);
                let value = offset
                    .as_ref()
                    .map(|o| serde_json::to_vec(o).expect("json"));
                self.offsets.write(&key, value, None).await?;
                let id = Json::Object(partition.clone()).to_string();
                let mut state = lock(&self.offset_state);
                let entry = state.entry(name.to_string()).or_default();
                match offset {
                    Some(o) => {
                        entry.insert(id, (partition, o));
                    }
                    None => {
                        entry.remove(&id);
                    }
                }
            }
            Ok(message)
        }
    }

    /// Runs a group admin call (`sluice_client`'s group calls). Their futures are not
    /// provably `Send` (the coordinator retry takes an async closure over borrowed
    /// arguments) and the REST handlers' must be, so the call runs on a blocking thread,
    /// with an admin client of its own.
    async fn group_admin<T: Send + 'static>(
        &self,
        call: impl for<'a> FnOnce(&'a Admin) -> LocalFuture<'a, Result<T, sluice_client::Error>>
        + Send
        + 'static,
    ) -> Result<T, HerderError> {
        let bootstrap = self.config.bootstrap_servers.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            runtime.block_on(async move {
                let admin = Admin::connect(ClientConfig::new(bootstrap)).await?;
                call(&admin).await
            })
        })
        .await
        .map_err(|e| HerderError::Store(e.to_string()))?
        .map_err(|e| HerderError::Store(e.to_string()))
    }

    /// KIP-976: sets a logger's level on every worker, through the config topic.
    pub async fn set_cluster_logger(
        &self,
        namespace: &str,
        level: &str,
    ) -> Result<(), HerderError> {
        let value = serde_json::to_vec(&serde_json::json!({ "level": level })).expect("json");
        self.configs
            .write_and_apply(
                format!("{LOGGER_CLUSTER_PREFIX}{namespace}").as_bytes(),
                Some(value),
                Some(0),
            )
            .await?;
        Ok(())
    }

    /// KIP-558: the topics a connector's tasks used, by name.
    pub fn active_topics(&self, connector: &str) -> Vec<String> {
        let mut topics: Vec<String> = lock(&self.topic_state)
            .values()
            .filter(|t| t.connector == connector)
            .map(|t| t.topic.clone())
            .collect();
        topics.sort();
        topics.dedup();
        topics
    }

    /// Records that a task used `topic` (once per topic per connector, as Connect's
    /// `recordActiveTopic`), when topic tracking is on.
    async fn track_topic(&self, connector: &str, task: u32, topic: &str) {
        if !self.config.topic_tracking {
            return;
        }
        // Called for every record: the common case (known) allocates nothing.
        let known = lock(&self.topic_state)
            .values()
            .any(|t| t.connector == connector && t.topic == topic);
        if known {
            return;
        }
        let key = TopicStatus::key(topic, connector);
        let status = TopicStatus {
            topic: topic.to_string(),
            connector: connector.to_string(),
            task: task as i32,
            discover_timestamp: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64),
        };
        lock(&self.topic_state).insert(key.clone(), status.clone());
        if let Err(e) = self
            .statuses
            .write(key.as_bytes(), Some(status.encode()), None)
            .await
        {
            tracing::warn!("recording an active topic: {e}");
        }
    }

    /// `PUT /connectors/{c}/topics/reset`: forgets the connector's active topics.
    pub async fn reset_topics(&self, connector: &str) -> Result<(), HerderError> {
        self.require(connector).await?;
        let keys: Vec<String> = lock(&self.topic_state)
            .iter()
            .filter(|(_, t)| t.connector == connector)
            .map(|(k, _)| k.clone())
            .collect();
        for key in keys {
            self.statuses.write(key.as_bytes(), None, None).await?;
            lock(&self.topic_state).remove(&key);
        }
        Ok(())
    }

    /// Reads the config topic to its end (a write's effects are then visible here).
    pub async fn sync(&self) -> Result<(), HerderError> {
        Ok(self.configs.sync().await?)
    }

    /// Connect's validation of a connector config: the worker's keys, the converters,
    /// the transforms, then the connector's own checks.
    pub fn validate(&self, config: &Props) -> Result<Box<dyn ConnectorPlugin>, ConfigError> {
        let mut errors = ConfigError::default();
        let plugin = match config.get("connector.class") {
            None => {
                errors.push(ConfigError::missing("connector.class"));
                None
            }
            Some(class) => match connectors::plugin(class) {
                Some(plugin) => Some(plugin),
                None => {
                    errors.push(ConfigError::invalid(
                        "connector.class",
                        class,
                        &format!(
                            "Failed to find any class that implements Connector and which name matches {class}, available connectors are: {}",
                            connectors::plugins()
                                .iter()
                                .map(|p| format!("PluginDesc{{klass=class {}, name='{}', version='{}', encodedVersion={}, type={}, typeName='{}', location='classpath'}}", p.class(), p.class(), p.version(), p.version(), p.kind().name(), p.kind().name()))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                    None
                }
            },
        };
        if let Some(max) = config.get("tasks.max")
            && max.trim().parse::<i32>().map_or(true, |n| n < 1)
        {
            errors.push(ConfigError::invalid(
                "tasks.max",
                max,
                "Value must be at least 1",
            ));
        }
        if let Err(e) = self.converters_for(config) {
            errors.push(e);
        }
        if let Err(e) = Chain::from_config(config) {
            errors.push(e);
        }
        if let Some(plugin) = &plugin {
            if plugin.kind() == Kind::Sink
                && !config.contains_key("topics")
                && !config.contains_key("topics.regex")
            {
                errors.push(ConfigError::new(
                    "topics",
                    "Must configure one of topics or topics.regex",
                ));
            }
            if let Err(e) = plugin.validate(config) {
                errors.push(e);
            }
            if let Err(e) = errors::Policy::from_config(config, plugin.kind()) {
                errors.push(e);
            }
            if plugin.kind() == Kind::Source && self.config.exactly_once_source {
                errors.push(exactly_once_checks(config, plugin.as_ref()));
            }
        }
        match plugin {
            Some(plugin) if errors.is_empty() => Ok(plugin),
            _ => Err(errors),
        }
    }

    /// The class names of the key and value converters a connector uses.
    fn converter_classes(&self, config: &Props) -> (String, String) {
        (
            config
                .get("key.converter")
                .unwrap_or(&self.config.key_converter)
                .clone(),
            config
                .get("value.converter")
                .unwrap_or(&self.config.value_converter)
                .clone(),
        )
    }

    /// The key and value converters a connector uses: its own `key.converter` /
    /// `value.converter` (and their prefixed keys) over the worker's.
    fn converters_for(&self, config: &Props) -> Result<Converters, ConfigError> {
        let pick = |which: &str,
                    class: &String,
                    worker_props: &Props|
         -> Result<Box<dyn Converter>, ConfigError> {
            let (class, props) = match config.get(which) {
                Some(class) => {
                    let prefix = format!("{which}.");
                    let props: Props = config
                        .iter()
                        .filter_map(|(k, v)| {
                            k.strip_prefix(&prefix).map(|k| (k.to_string(), v.clone()))
                        })
                        .collect();
                    (class.clone(), props)
                }
                None => (class.clone(), worker_props.clone()),
            };
            converters::converter(&class, &props, which == "key.converter", which)
        };
        let key = pick(
            "key.converter",
            &self.config.key_converter,
            &self.config.key_converter_props,
        )?;
        let value = pick(
            "value.converter",
            &self.config.value_converter,
            &self.config.value_converter_props,
        )?;
        Ok((key, value))
    }

    /// Creates a connector (`POST /connectors`) or replaces its config (`PUT
    /// .../config`, `allow_replace`). Returns whether it was created.
    pub async fn put_connector(
        &self,
        name: &str,
        config: Props,
        allow_replace: bool,
        initial_state: Option<TargetState>,
    ) -> Result<bool, HerderError> {
        self.sync().await?;
        let exists = lock(&self.config_state).connectors.contains_key(name);
        if exists && !allow_replace {
            return Err(HerderError::Exists(name.to_string()));
        }
        if let Err(errors) = self.validate(&config) {
            return Err(HerderError::Invalid {
                count: errors.errors.len(),
                errors,
            });
        }
        if !exists && let Some(state) = initial_state {
            self.write_config(ConfigRecord::TargetState {
                connector: name.to_string(),
                state: Some(state),
            })
            .await?;
        }
        self.write_config(ConfigRecord::Connector {
            name: name.to_string(),
            config: Some(config),
        })
        .await?;
        Ok(!exists)
    }

    pub async fn delete_connector(&self, name: &str) -> Result<(), HerderError> {
        self.require(name).await?;
        self.write_config(ConfigRecord::Connector {
            name: name.to_string(),
            config: None,
        })
        .await?;
        self.write_config(ConfigRecord::TargetState {
            connector: name.to_string(),
            state: None,
        })
        .await?;
        Ok(())
    }

    pub async fn set_target_state(
        &self,
        name: &str,
        state: TargetState,
    ) -> Result<(), HerderError> {
        self.require(name).await?;
        self.write_config(ConfigRecord::TargetState {
            connector: name.to_string(),
            state: Some(state),
        })
        .await?;
        if state == TargetState::Stopped {
            // KIP-875: a stopped connector has no task configs.
            self.write_config(ConfigRecord::Commit {
                connector: name.to_string(),
                tasks: 0,
            })
            .await?;
        }
        Ok(())
    }

    /// Restarts the connector and/or its tasks on this worker (all of them run here).
    pub async fn restart(
        &self,
        name: &str,
        task: Option<u32>,
        include_tasks: bool,
        only_failed: bool,
    ) -> Result<(), HerderError> {
        self.require(name).await?;
        let mut running = lock(&self.running);
        let keys: Vec<(String, Option<u32>)> = running
            .keys()
            .filter(|(c, t)| {
                c == name
                    && match task {
                        Some(n) => *t == Some(n),
                        None => t.is_none() || include_tasks,
                    }
            })
            .cloned()
            .collect();
        for key in keys {
            let failed = self
                .status(&match key.1 {
                    Some(t) => StatusKey::Task(key.0.clone(), t),
                    None => StatusKey::Connector(key.0.clone()),
                })
                .is_some_and(|s| s.state == "FAILED");
            if only_failed && !failed {
                continue;
            }
            if let Some(r) = running.remove(&key) {
                let _ = r.stop.send(true);
                r.handle.abort();
            }
        }
        drop(running);
        self.kick.send_modify(|n| *n += 1);
        Ok(())
    }

    async fn require(&self, name: &str) -> Result<Props, HerderError> {
        self.sync().await?;
        lock(&self.config_state)
            .connectors
            .get(name)
            .cloned()
            .ok_or_else(|| HerderError::NotFound(name.to_string()))
    }

    async fn write_config(&self, record: ConfigRecord) -> Result<(), HerderError> {
        let (key, value) = record.encode();
        self.configs
            .write_and_apply(key.as_bytes(), value, Some(0))
            .await?;
        Ok(())
    }

    /// The transactional id of an exactly-once source task (KIP-618).
    fn transactional_id(&self, connector: &str, task: u32) -> String {
        format!("{}-{connector}-{task}", self.config.group_id)
    }

    /// Waits until no zombie fencing is pending for `connector`'s latest task configs
    /// (KIP-618), fencing them when this worker leads the group; false when the task was
    /// stopped meanwhile.
    ///
    /// A commit of new task configs makes fencing pending; a task count record
    /// (`tasks-fencing-<name>`) clears it. The leader fences: it bumps the producer epoch
    /// of every transactional id the previous generation used (`0..count` of the latest
    /// task count record, as Connect's `Admin.fenceProducers` does), which aborts their
    /// open transactions and fails their next write, then records the new task count.
    /// Only after that record may a task of the new generation start its producer, so a
    /// task that moved or went away while its old worker still runs cannot commit beside
    /// its successor. The other workers wait for the record.
    async fn await_fencing(
        &self,
        connector: &str,
        stopped: &mut watch::Receiver<bool>,
    ) -> Result<bool, ConnectError> {
        let mut changed = self.config_changed.clone();
        let mut assigned = self.assignment.clone();
        loop {
            if !lock(&self.config_state).pending_fencing.contains(connector) {
                return Ok(true);
            }
            let leading = self
                .assignment
                .borrow()
                .as_ref()
                .is_some_and(|a| a.leading());
            if leading {
                self.fence_zombies(connector).await?;
                continue;
            }
            // The task count record arrives through the config topic; leadership through
            // a new assignment. Either sender gone means the worker is shutting down.
            tokio::select! {
                r = changed.changed() => if r.is_err() { return Ok(false) },
                r = assigned.changed() => if r.is_err() { return Ok(false) },
                _ = stopped.changed() => return Ok(false),
            }
        }
    }

    /// One round of zombie fencing for `connector`, unless another task on this worker
    /// did it meanwhile.
    async fn fence_zombies(&self, connector: &str) -> Result<(), ConnectError> {
        let _round = self.fencing.lock().await;
        let (pending, previous, count) = {
            let state = lock(&self.config_state);
            (
                state.pending_fencing.contains(connector),
                state
                    .task_count_records
                    .get(connector)
                    .copied()
                    .unwrap_or(0),
                state.tasks.get(connector).map_or(0, |t| t.len() as u32),
            )
        };
        if !pending {
            return Ok(());
        }
        for task in 0..previous {
            let id = self.transactional_id(connector, task);
            self.fence_producer(&id).await.map_err(|e| {
                ConnectError(format!(
                    "Failed to fence out the producer with transactional id {id} of a previous \
                     generation of connector {connector}'s tasks: {e}"
                ))
            })?;
        }
        tracing::info!(
            connector,
            fenced = previous,
            tasks = count,
            "zombie fencing done"
        );
        self.write_config(ConfigRecord::TaskCount {
            connector: connector.to_string(),
            count,
        })
        .await
        .map_err(|e| ConnectError(format!("Failed to write the task count record: {e}")))
    }

    /// Fences out whoever holds `transactional_id`: InitProducerId bumps its epoch and
    /// aborts its open transaction.
    async fn fence_producer(&self, transactional_id: &str) -> Result<(), ProducerError> {
        let config = ProducerConfig::builder(self.config.bootstrap_servers.clone())
            .client_id(&format!("{}-fencer", self.config.group_id))
            .transactional_id(transactional_id)
            .build()?;
        let producer = Producer::connect(config).await?;
        let fenced = producer.init_transactions().await;
        producer.close().await?;
        fenced
    }

    async fn write_status(&self, key: StatusKey, state: &str, trace: Option<String>) {
        let connector = match &key {
            StatusKey::Connector(c) | StatusKey::Task(c, _) => c,
        };
        let version = lock(&self.config_state)
            .connectors
            .get(connector)
            .and_then(|c| c.get("connector.class"))
            .and_then(|class| connectors::plugin(class))
            .map(|p| p.version().to_string());
        let status = Status {
            state: state.to_string(),
            trace,
            worker_id: self.config.worker_id(),
            generation: self.generation,
            version,
        };
        if self.status(&key).as_ref() == Some(&status) {
            return;
        }
        lock(&self.status_state).insert(key.clone(), status.clone());
        if let Err(e) = self
            .statuses
            .write(key.encode().as_bytes(), Some(status.encode()), None)
            .await
        {
            tracing::warn!("writing a status: {e}");
        }
    }

    async fn remove_status(&self, key: StatusKey) {
        if lock(&self.status_state).remove(&key).is_some()
            && let Err(e) = self
                .statuses
                .write(key.encode().as_bytes(), None, None)
                .await
        {
            tracing::warn!("deleting a status: {e}");
        }
    }

    /// Writes a source task's acknowledged offsets to the offsets topic.
    async fn commit_offsets(
        &self,
        connector: &str,
        offsets: &Positions,
    ) -> Result<(), HerderError> {
        for (id, (partition, offset)) in offsets {
            let key = offset_key(connector, partition);
            let value = serde_json::to_vec(offset).expect("json");
            self.offsets.write(&key, Some(value), None).await?;
            lock(&self.offset_state)
                .entry(connector.to_string())
                .or_default()
                .insert(id.clone(), (partition.clone(), offset.clone()));
        }
        Ok(())
    }
}

struct Snapshot(BTreeMap<String, Map<String, Json>>);

impl OffsetReader for Snapshot {
    fn offset(&self, partition: &Map<String, Json>) -> Option<Map<String, Json>> {
        self.0
            .get(&Json::Object(partition.clone()).to_string())
            .cloned()
    }
}

/// Brings what runs here in line with the config topic, on every change and every
/// second (a failed task stays failed until restarted).
async fn reconcile_loop(worker: Arc<Worker>) {
    let mut changed = worker.config_changed.clone();
    let mut kicked = worker.kick.subscribe();
    let mut assigned = worker.assignment.clone();
    loop {
        if worker.closing.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        reconcile(&worker).await;
        tokio::select! {
            _ = changed.changed() => {}
            _ = kicked.changed() => {}
            _ = assigned.changed() => {}
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

async fn reconcile(worker: &Arc<Worker>) {
    let state = worker.state();
    let assignment = worker.assignment.borrow().clone().unwrap_or_default();
    // Stop what no longer belongs, or runs with an old config.
    let stale: Vec<(String, Option<u32>)> = {
        let running = lock(&worker.running);
        running
            .iter()
            .filter(|((connector, task), r)| {
                let target = state.target_state(connector);
                let mine = match task {
                    None => assignment.runs_connector(connector),
                    Some(t) => assignment.runs_task(connector, *t),
                };
                !mine
                    || match task {
                        None => {
                            state.connectors.get(connector) != Some(&r.config)
                                || target != TargetState::Started
                        }
                        Some(t) => {
                            target != TargetState::Started
                                || state
                                    .tasks
                                    .get(connector)
                                    .and_then(|tasks| tasks.get(*t as usize))
                                    != Some(&r.config)
                        }
                    }
            })
            .map(|(k, _)| k.clone())
            .collect()
    };
    for key in stale {
        let removed = lock(&worker.running).remove(&key);
        if let Some(r) = removed {
            let _ = r.stop.send(true);
            let _ = tokio::time::timeout(Duration::from_secs(10), r.handle).await;
        }
        let still = state.connectors.contains_key(&key.0);
        let status_key = match key.1 {
            Some(t) => StatusKey::Task(key.0.clone(), t),
            None => StatusKey::Connector(key.0.clone()),
        };
        if !still {
            worker.remove_status(status_key).await;
        }
    }
    // Statuses of tasks beyond the current count, or of deleted connectors.
    let known: Vec<StatusKey> = lock(&worker.status_state).keys().cloned().collect();
    for key in known {
        let gone = match &key {
            StatusKey::Connector(c) => !state.connectors.contains_key(c),
            StatusKey::Task(c, t) => state
                .tasks
                .get(c)
                .is_none_or(|tasks| *t as usize >= tasks.len()),
        };
        let ours = worker
            .status(&key)
            .is_some_and(|s| s.worker_id == worker.config.worker_id());
        if gone && ours {
            worker.remove_status(key).await;
        }
    }
    // KIP-618: the leader fences the zombies of exactly-once source connectors whose task
    // configs changed, so that their tasks may start wherever they run.
    if worker.config.exactly_once_source && assignment.leading() {
        for name in &state.pending_fencing {
            let fence = state
                .connectors
                .get(name)
                .is_some_and(|c| connector_type(c) == Some("source"))
                && state.target_state(name) == TargetState::Started
                && state.tasks.contains_key(name);
            if fence && let Err(e) = worker.fence_zombies(name).await {
                tracing::warn!(connector = %name, "zombie fencing failed; retried: {e}");
            }
        }
    }
    for (name, config) in &state.connectors {
        let target = state.target_state(name);
        let connector_key = (name.clone(), None);
        // Only what the group assigned here: the connector, and which of its tasks.
        let runs_connector = assignment.runs_connector(name);
        match target {
            TargetState::Paused => {
                if runs_connector {
                    worker
                        .write_status(StatusKey::Connector(name.clone()), "PAUSED", None)
                        .await;
                }
                for t in 0..state.tasks.get(name).map_or(0, Vec::len) {
                    if assignment.runs_task(name, t as u32) {
                        worker
                            .write_status(StatusKey::Task(name.clone(), t as u32), "PAUSED", None)
                            .await;
                    }
                }
                continue;
            }
            TargetState::Stopped => {
                if runs_connector {
                    worker
                        .write_status(StatusKey::Connector(name.clone()), "STOPPED", None)
                        .await;
                }
                continue;
            }
            TargetState::Started => {}
        }
        // The connector: its task configs, written when they differ from the committed.
        if runs_connector && !lock(&worker.running).contains_key(&connector_key) {
            let failed = worker
                .status(&StatusKey::Connector(name.clone()))
                .is_some_and(|s| s.state == "FAILED");
            match worker.validate(config) {
                Ok(plugin) => {
                    let max = config
                        .get("tasks.max")
                        .and_then(|m| m.trim().parse().ok())
                        .unwrap_or(1u32);
                    let tasks = plugin.task_configs(config, max);
                    let tasks: Vec<Props> = tasks
                        .into_iter()
                        .map(|mut t| {
                            // As Connect's: the connector's task configs plus the task class.
                            t.insert("task.class".into(), plugin.task_class().to_string());
                            t
                        })
                        .collect();
                    if state.tasks.get(name) != Some(&tasks) {
                        let mut ok = true;
                        for (i, task) in tasks.iter().enumerate() {
                            ok &= worker
                                .write_config(ConfigRecord::Task {
                                    connector: name.clone(),
                                    task: i as u32,
                                    config: task.clone(),
                                })
                                .await
                                .is_ok();
                        }
                        if ok {
                            let _ = worker
                                .write_config(ConfigRecord::Commit {
                                    connector: name.clone(),
                                    tasks: tasks.len() as u32,
                                })
                                .await;
                        }
                    }
                    let (stop, _) = watch::channel(false);
                    lock(&worker.running).insert(
                        connector_key.clone(),
                        Running {
                            config: config.clone(),
                            stop,
                            handle: tokio::spawn(async {}),
                        },
                    );
                    worker
                        .write_status(StatusKey::Connector(name.clone()), "RUNNING", None)
                        .await;
                }
                Err(errors) if !failed => {
                    worker
                        .write_status(
                            StatusKey::Connector(name.clone()),
                            "FAILED",
                            Some(format!(
                                "org.apache.kafka.connect.errors.ConnectException: {}",
                                errors.message()
                            )),
                        )
                        .await;
                }
                Err(_) => {}
            }
        }
        let Some(tasks) = state.tasks.get(name) else {
            continue;
        };
        for (i, task) in tasks.iter().enumerate() {
            let key = (name.clone(), Some(i as u32));
            // A failed task stays in `running` (its handle finished) until restarted.
            if !assignment.runs_task(name, i as u32) || lock(&worker.running).contains_key(&key) {
                continue;
            }
            start_task(worker, name, i as u32, config, task).await;
        }
    }
}

async fn start_task(
    worker: &Arc<Worker>,
    name: &str,
    task: u32,
    connector: &Props,
    config: &Props,
) {
    if worker.closing.load(std::sync::atomic::Ordering::Acquire) {
        return;
    }
    let Ok(plugin) = worker.validate(connector) else {
        return;
    };
    let converters = match worker.converters_for(connector) {
        Ok(c) => c,
        Err(_) => return,
    };
    let chain = match Chain::from_config(connector) {
        Ok(c) => c,
        Err(_) => return,
    };
    let (stop, stopped) = watch::channel(false);
    let w = worker.clone();
    let (n, c, conn) = (name.to_string(), config.clone(), connector.clone());
    let guard = ActiveGuard::new(&worker.active, name, task);
    let handle = tokio::spawn(async move {
        let _active = guard;
        let key = StatusKey::Task(n.clone(), task);
        w.write_status(key.clone(), "RUNNING", None).await;
        let outcome = match plugin.kind() {
            Kind::Source => {
                run_source(
                    &w,
                    &n,
                    task,
                    plugin.as_ref(),
                    &c,
                    &conn,
                    converters,
                    chain,
                    stopped,
                )
                .await
            }
            Kind::Sink => {
                run_sink(
                    &w,
                    &n,
                    task,
                    plugin.as_ref(),
                    &c,
                    &conn,
                    converters,
                    chain,
                    stopped,
                )
                .await
            }
        };
        if let Err(e) = outcome {
            tracing::warn!(connector = %n, task, "task failed: {e}");
            w.write_status(
                key,
                "FAILED",
                Some(format!(
                    "org.apache.kafka.connect.errors.ConnectException: {e}"
                )),
            )
            .await;
        }
    });
    lock(&worker.running).insert(
        (name.to_string(), Some(task)),
        Running {
            config: config.clone(),
            stop,
            handle,
        },
    );
}

/// Marks a task active for as long as its future lives (finished, failed or aborted).
struct ActiveGuard {
    active: Active,
    key: (String, i32),
}

impl ActiveGuard {
    fn new(active: &Active, connector: &str, task: u32) -> ActiveGuard {
        let key = (connector.to_string(), task as i32);
        *lock(active).entry(key.clone()).or_default() += 1;
        ActiveGuard {
            active: active.clone(),
            key,
        }
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let mut active = lock(&self.active);
        if let Some(n) = active.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                active.remove(&self.key);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_source(
    worker: &Arc<Worker>,
    name: &str,
    task_id: u32,
    plugin: &dyn ConnectorPlugin,
    config: &Props,
    connector: &Props,
    (key_converter, value_converter): Converters,
    chain: Chain,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), ConnectError> {
    let mut task = plugin
        .source_task()
        .ok_or_else(|| ConnectError(format!("{} has no source task", plugin.class())))?;
    let policy = errors::Policy::from_config(connector, Kind::Source)
        .map_err(|e| ConnectError(e.message()))?;
    let mut reporter =
        Reporter::start(policy, &worker.config.bootstrap_servers, name, task_id).await?;
    let (key_class, value_class) = worker.converter_classes(connector);
    let data = "org.apache.kafka.connect.errors.DataException";
    let kafka = |e: sluice_client::producer::ProducerError| ConnectError(e.to_string());
    // KIP-618: records and their source offsets in one transaction per boundary, with
    // Connect's transactional id; starting fences (and aborts) a zombie of this task.
    let boundary = if worker.config.exactly_once_source {
        Some(transaction_boundary(
            connector,
            worker.config.offset_flush_interval,
        ))
    } else {
        None
    };
    let mut producer_config = ProducerConfig::builder(worker.config.bootstrap_servers.clone())
        .client_id(&format!("connector-producer-{name}-{task_id}"))
        .acks(Acks::All)
        .enable_idempotence(true)
        .linger_ms(5);
    // The worker's `producer.*` settings, then the connector's `producer.override.*`
    // (Connect's default override policy, All); what exactly-once delivery needs stays.
    for (k, v) in client_overrides(&worker.config.props, connector, "producer") {
        let fixed = k == "transactional.id"
            || (boundary.is_some() && (k == "enable.idempotence" || k == "acks"));
        if !fixed {
            producer_config = producer_config.set(k, v);
        }
    }
    if boundary.is_some() {
        if !worker.await_fencing(name, &mut stopped).await? {
            return Ok(());
        }
        producer_config = producer_config.transactional_id(&worker.transactional_id(name, task_id));
    }
    let producer = Producer::connect(producer_config.build().map_err(kafka)?)
        .await
        .map_err(kafka)?;
    if boundary.is_some() {
        producer.init_transactions().await.map_err(kafka)?;
        // Fenced and aborted: what a previous incarnation committed is all there is;
        // read the offsets topic to its end before resuming from it.
        worker
            .offsets
            .sync()
            .await
            .map_err(|e| ConnectError(e.to_string()))?;
    }
    let snapshot = Snapshot(
        worker
            .connector_offsets(name)
            .into_iter()
            .map(|(p, o)| (Json::Object(p).to_string(), o))
            .collect(),
    );
    task.start(config, &snapshot).await?;
    let mut pending = Positions::new();
    let mut last_flush = Instant::now();
    let mut in_transaction = false;
    let mut outstanding: VecDeque<Outstanding> = VecDeque::new();
    let outcome: Result<(), ConnectError> = async {
        loop {
            if *stopped.borrow() {
                break;
            }
            let records = tokio::select! {
                records = task.poll() => records?,
                _ = stopped.changed() => break,
            };
            if boundary.is_some() && !records.is_empty() && !in_transaction {
                producer.begin_transaction().map_err(kafka)?;
                in_transaction = true;
                last_flush = Instant::now();
            }
            let mut deliveries = Vec::new();
            for record in records {
                let position = record
                    .source_partition
                    .clone()
                    .zip(record.source_offset.clone());
                // A record that fails a transform or a converter is skipped under
                // `errors.tolerance=all`; its source offset still counts as processed.
                // In order with the deliveries, so a later offset never gives way to an
                // earlier one.
                let skip = |deliveries: &mut Vec<_>| deliveries.push((None, position.clone()));
                let record = match chain.apply_staged(record) {
                    Ok(Some(record)) => record,
                    Ok(None) => {
                        skip(&mut deliveries);
                        continue;
                    }
                    Err((class, e)) => {
                        let class = class.to_string();
                        reporter
                            .report(Failure {
                                stage: Stage::Transformation,
                                class: &class,
                                exception: data,
                                message: &e.to_string(),
                                original: None,
                            })
                            .await?;
                        skip(&mut deliveries);
                        continue;
                    }
                };
                let converted = key_converter
                    .from_connect(&record.topic, record.key_schema.as_ref(), &record.key)
                    .map_err(|e| (Stage::KeyConverter, key_class.as_str(), e))
                    .and_then(|key| {
                        value_converter
                            .from_connect(
                                &record.topic,
                                record.value_schema.as_ref(),
                                &record.value,
                            )
                            .map(|value| (key, value))
                            .map_err(|e| (Stage::ValueConverter, value_class.as_str(), e))
                    });
                let (key, value) = match converted {
                    Ok(kv) => kv,
                    Err((stage, class, e)) => {
                        reporter
                            .report(Failure {
                                stage,
                                class,
                                exception: data,
                                message: &e.to_string(),
                                original: None,
                            })
                            .await?;
                        skip(&mut deliveries);
                        continue;
                    }
                };
                let mut out = ProducerRecord::new(record.topic.clone(), Bytes::new());
                out.key = key.map(Bytes::from);
                out.value = value.map(Bytes::from);
                if let Some(p) = record.partition {
                    out = out.with_partition(p);
                }
                if let Some(ts) = record.timestamp {
                    out = out.with_timestamp(ts);
                }
                for h in &record.headers {
                    out = out.with_header(Bytes::from(h.key.clone().into_bytes()), h.value.clone());
                }
                worker.track_topic(name, task_id, &record.topic).await;
                let delivery = producer
                    .send(out)
                    .await
                    .map_err(|e| ConnectError(e.to_string()))?;
                deliveries.push((Some(delivery), position));
            }
            // The next poll does not wait for these acknowledgements (only for the
            // oldest, past a bound): positions count once acknowledged, in order.
            outstanding.extend(deliveries);
            settle(&mut outstanding, &mut pending, MAX_OUTSTANDING).await?;
            match boundary {
                Some(every) => {
                    if in_transaction && every.is_none_or(|d| last_flush.elapsed() >= d) {
                        settle(&mut outstanding, &mut pending, 0).await?;
                        let committed = committed_offsets(&pending);
                        commit_transaction(worker, name, &producer, &mut pending).await?;
                        task.commit(&committed.iter().collect::<Vec<_>>());
                        in_transaction = false;
                    }
                }
                None => {
                    if (!pending.is_empty() || !outstanding.is_empty())
                        && last_flush.elapsed() >= worker.config.offset_flush_interval
                    {
                        settle(&mut outstanding, &mut pending, 0).await?;
                        worker
                            .commit_offsets(name, &pending)
                            .await
                            .map_err(|e| ConnectError(e.to_string()))?;
                        task.commit(&committed_offsets(&pending).iter().collect::<Vec<_>>());
                        pending.clear();
                        last_flush = Instant::now();
                    }
                }
            }
        }
        Ok(())
    }
    .await;
    task.stop();
    if let Err(e) = outcome {
        if in_transaction {
            let _ = producer.abort_transaction().await;
        }
        return Err(e);
    }
    settle(&mut outstanding, &mut pending, 0).await?;
    if in_transaction {
        commit_transaction(worker, name, &producer, &mut pending).await?;
    }
    producer.flush().await.map_err(kafka)?;
    if boundary.is_none() {
        worker
            .commit_offsets(name, &pending)
            .await
            .map_err(|e| ConnectError(e.to_string()))?;
    }
    Ok(())
}

/// KIP-618's checks of a source connector on a worker with exactly-once support
/// (`DistributedHerder.validateSourceConnectorConfig`).
fn exactly_once_checks(config: &Props, plugin: &dyn ConnectorPlugin) -> ConfigError {
    let mut errors = ConfigError::default();
    let one_of = |key: &str, value: &str, allowed: &[&str], errors: &mut ConfigError| {
        let ok = allowed.iter().any(|a| a.eq_ignore_ascii_case(value.trim()));
        if !ok {
            errors.push(ConfigError::invalid(
                key,
                value,
                &format!(
                    "String must be one of (case insensitive): {}",
                    allowed.join(", ")
                ),
            ));
        }
        ok
    };
    if let Some(v) = config.get("exactly.once.support")
        && one_of(
            "exactly.once.support",
            v,
            &["REQUESTED", "REQUIRED"],
            &mut errors,
        )
        && v.trim().eq_ignore_ascii_case("required")
        && !plugin.exactly_once_support()
    {
        errors.push(ConfigError::new(
            "exactly.once.support",
            "The connector does not support exactly-once semantics with the provided configuration.",
        ));
    }
    if let Some(v) = config.get("transaction.boundary")
        && one_of(
            "transaction.boundary",
            v,
            &["POLL", "INTERVAL", "CONNECTOR"],
            &mut errors,
        )
        && v.trim().eq_ignore_ascii_case("connector")
    {
        errors.push(ConfigError::new(
            "transaction.boundary",
            "The connector does not support connector-defined transaction boundaries with the given configuration. Please reconfigure it to use a different transaction boundary definition.",
        ));
    }
    errors
}

/// A task's client settings, as Connect layers them: the worker's `<client>.*`, then the
/// connector's `<client>.override.*` (the default override policy, All).
fn client_overrides<'a>(
    worker: &'a Props,
    connector: &'a Props,
    client: &str,
) -> Vec<(&'a str, &'a str)> {
    let prefix = format!("{client}.");
    let override_prefix = format!("{client}.override.");
    worker
        .iter()
        .filter_map(|(k, v)| k.strip_prefix(prefix.as_str()).map(|k| (k, v.as_str())))
        .filter(|(k, _)| !k.starts_with("override."))
        .chain(connector.iter().filter_map(|(k, v)| {
            k.strip_prefix(override_prefix.as_str())
                .map(|k| (k, v.as_str()))
        }))
        .collect()
}

/// A sent record's acknowledgement (None: a record skipped, never sent) and the source
/// position it completes.
type Outstanding = (
    Option<sluice_client::producer::DeliveryFuture>,
    Option<(Map<String, Json>, Map<String, Json>)>,
);

/// How many sent records a source task leaves unacknowledged before it waits for the
/// oldest (the producer batches and pipelines them meanwhile).
const MAX_OUTSTANDING: usize = 10_000;

/// Awaits the oldest acknowledgements until at most `keep` are outstanding, taking each
/// acknowledged record's source position (in send order, so a later position never
/// gives way to an earlier one).
async fn settle(
    outstanding: &mut VecDeque<Outstanding>,
    pending: &mut Positions,
    keep: usize,
) -> Result<(), ConnectError> {
    // Consecutive records of one source partition: only the last position counts, so
    // the partition's key (its JSON text) is made once per run of them.
    let mut last: Option<(Map<String, Json>, Map<String, Json>)> = None;
    let mut outcome = Ok(());
    while outstanding.len() > keep {
        let Some((delivery, position)) = outstanding.pop_front() else {
            break;
        };
        if let Some(delivery) = delivery
            && let Err(e) = delivery.await
        {
            outcome = Err(ConnectError(e.to_string()));
            break;
        }
        if let Some((p, o)) = position {
            match &mut last {
                Some((lp, lo)) if *lp == p => *lo = o,
                _ => {
                    if let Some((lp, lo)) = last.replace((p, o)) {
                        pending.insert(Json::Object(lp.clone()).to_string(), (lp, lo));
                    }
                }
            }
        }
    }
    if let Some((p, o)) = last {
        pending.insert(Json::Object(p.clone()).to_string(), (p, o));
    }
    outcome
}

/// `transaction.boundary`: `poll` (None: every poll's records are one transaction) or
/// `interval` (every `transaction.boundary.interval.ms`, by default the worker's
/// `offset.flush.interval.ms`).
fn transaction_boundary(connector: &Props, flush: Duration) -> Option<Duration> {
    match connector.get("transaction.boundary").map(|b| b.trim()) {
        Some(b) if b.eq_ignore_ascii_case("interval") => Some(
            connector
                .get("transaction.boundary.interval.ms")
                .and_then(|ms| ms.trim().parse::<u64>().ok())
                .map_or(flush, Duration::from_millis),
        ),
        _ => None,
    }
}

/// Writes the transaction's source offsets to the offsets topic inside it, and commits:
/// the records and the offsets after them become visible together, or neither.
/// The offsets about to be committed, for the task's `commit`.
fn committed_offsets(pending: &Positions) -> Vec<Map<String, Json>> {
    pending.values().map(|(_, offset)| offset.clone()).collect()
}

async fn commit_transaction(
    worker: &Worker,
    name: &str,
    producer: &Producer,
    pending: &mut Positions,
) -> Result<(), ConnectError> {
    let kafka = |e: sluice_client::producer::ProducerError| ConnectError(e.to_string());
    for (partition, offset) in pending.values() {
        let record = ProducerRecord::new(
            worker.offsets.topic().to_string(),
            Bytes::from(serde_json::to_vec(offset).expect("json")),
        )
        .with_key(Bytes::from(offset_key(name, partition)));
        producer.send(record).await.map_err(kafka)?;
    }
    producer.commit_transaction().await.map_err(kafka)?;
    let mut state = lock(&worker.offset_state);
    let entry = state.entry(name.to_string()).or_default();
    entry.append(pending);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn run_sink(
    worker: &Arc<Worker>,
    name: &str,
    task_id: u32,
    plugin: &dyn ConnectorPlugin,
    config: &Props,
    connector: &Props,
    (key_converter, value_converter): Converters,
    chain: Chain,
    mut stopped: watch::Receiver<bool>,
) -> Result<(), ConnectError> {
    let mut task = plugin
        .sink_task()
        .ok_or_else(|| ConnectError(format!("{} has no sink task", plugin.class())))?;
    let policy = errors::Policy::from_config(connector, Kind::Sink)
        .map_err(|e| ConnectError(e.message()))?;
    let mut backoff = Backoff::new(policy.retry_delay_max);
    let mut reporter =
        Reporter::start(policy, &worker.config.bootstrap_servers, name, task_id).await?;
    let (key_class, value_class) = worker.converter_classes(connector);
    task.start(config).await?;
    let kafka = |e: sluice_client::Error| ConnectError(e.to_string());
    let mut consumer_config = ConsumerConfig::new(worker.config.bootstrap_servers.clone());
    for (k, v) in [
        ("group.id", format!("connect-{name}")),
        ("client.id", format!("connector-consumer-{name}-{task_id}")),
        ("enable.auto.commit", "false".into()),
        ("auto.offset.reset", "earliest".into()),
        ("fetch.max.wait.ms", "200".into()),
    ] {
        consumer_config.set(k, &v).map_err(kafka)?;
    }
    // The worker's `consumer.*` settings, then the connector's `consumer.override.*`
    // (Connect's default override policy, All, allows every key).
    for (k, v) in client_overrides(&worker.config.props, connector, "consumer") {
        if k == "group.id" || k == "enable.auto.commit" {
            continue;
        }
        consumer_config.set(k, v).map_err(kafka)?;
    }
    let mut consumer = Consumer::new(consumer_config).await.map_err(kafka)?;
    match (connector.get("topics"), connector.get("topics.regex")) {
        (Some(topics), _) => consumer
            .subscribe(
                topics.split(',').map(str::trim).filter(|t| !t.is_empty()),
                None,
            )
            .map_err(kafka)?,
        (None, Some(regex)) => consumer.subscribe_pattern(regex, None).map_err(kafka)?,
        (None, None) => {
            return Err(ConnectError(
                "Must configure one of topics or topics.regex".into(),
            ));
        }
    }
    let data = "org.apache.kafka.connect.errors.DataException";
    let mut last_flush = Instant::now();
    let mut dirty = false;
    // However the loop ends, the consumer leaves the group (a failed task's partitions
    // must not wait out its session) and the task and the queue are closed.
    let outcome: Result<(), ConnectError> = async {
    loop {
        if *stopped.borrow() {
            break;
        }
        let polled = tokio::select! {
            polled = consumer.poll(Duration::from_millis(500)) => polled.map_err(kafka)?,
            _ = stopped.changed() => break,
        };
        let mut batch = Vec::new();
        // The consumed record behind each record of `batch`, for the dead letter queue.
        let mut originals = Vec::new();
        for r in polled {
            dirty = true;
            worker.track_topic(name, task_id, &r.topic).await;
            let (key_schema, key) = match key_converter.to_connect(&r.topic, r.key.as_deref()) {
                Ok(k) => k,
                Err(e) => {
                    reporter
                        .report(Failure {
                            stage: Stage::KeyConverter,
                            class: &key_class,
                            exception: data,
                            message: &e.to_string(),
                            original: Some(&r),
                        })
                        .await?;
                    continue;
                }
            };
            let (value_schema, value) =
                match value_converter.to_connect(&r.topic, r.value.as_deref()) {
                    Ok(v) => v,
                    Err(e) => {
                        reporter
                            .report(Failure {
                                stage: Stage::ValueConverter,
                                class: &value_class,
                                exception: data,
                                message: &e.to_string(),
                                original: Some(&r),
                            })
                            .await?;
                        continue;
                    }
                };
            let mut record =
                Record::new(r.topic.clone(), value_schema, value).with_key(key_schema, key);
            record.partition = Some(r.partition);
            record.kafka_offset = Some(r.offset);
            record.timestamp = Some(r.timestamp);
            record.headers = r
                .headers
                .iter()
                .map(|h| Header {
                    key: String::from_utf8_lossy(&h.key).into_owned(),
                    value: h.value.clone(),
                })
                .collect();
            match chain.apply_staged(record) {
                Ok(Some(record)) => {
                    batch.push(record);
                    originals.push(r);
                }
                Ok(None) => {}
                Err((class, e)) => {
                    let class = class.to_string();
                    reporter
                        .report(Failure {
                            stage: Stage::Transformation,
                            class: &class,
                            exception: data,
                            message: &e.to_string(),
                            original: Some(&r),
                        })
                        .await?;
                }
            }
        }
        if !batch.is_empty() {
            // A target that is down: the same records again after a backoff, nothing
            // committed past them; a stop while waiting commits nothing.
            let errant = loop {
                match task.put(&batch).await {
                    Ok(errant) => break errant,
                    Err(SinkError::Fatal(e)) => return Err(e),
                    Err(SinkError::Retriable(m)) => {
                        tracing::warn!(connector = %name, task = task_id, "put failed, retrying: {m}");
                        if !backoff.wait(&mut stopped).await {
                            return Ok(());
                        }
                    }
                }
            };
            backoff.reset();
            for e in errant {
                reporter
                    .report(Failure {
                        stage: Stage::TaskPut,
                        class: plugin.task_class(),
                        exception: "org.apache.kafka.connect.errors.ConnectException",
                        message: &e.error,
                        original: originals.get(e.index),
                    })
                    .await?;
            }
        }
        if dirty && last_flush.elapsed() >= worker.config.offset_flush_interval {
            if !flush(task.as_mut(), &mut backoff, &mut stopped, name).await? {
                return Ok(());
            }
            consumer.commit_sync().await.map_err(kafka)?;
            dirty = false;
            last_flush = Instant::now();
        }
    }
    if flush(task.as_mut(), &mut backoff, &mut stopped, name).await? && dirty {
        consumer.commit_sync().await.map_err(kafka)?;
    }
    Ok(())
    }
    .await;
    task.stop();
    reporter.close().await;
    let _ = consumer.close().await;
    outcome
}

/// Flushes a sink task, retrying a retriable failure after a backoff. `Ok(false)`: the
/// task was stopped before the flush succeeded (nothing may be committed).
async fn flush(
    task: &mut dyn SinkTask,
    backoff: &mut Backoff,
    stopped: &mut watch::Receiver<bool>,
    name: &str,
) -> Result<bool, ConnectError> {
    loop {
        match task.flush().await {
            Ok(()) => {
                backoff.reset();
                return Ok(true);
            }
            Err(SinkError::Fatal(e)) => return Err(e),
            Err(SinkError::Retriable(m)) => {
                tracing::warn!(connector = %name, "flush failed, retrying: {m}");
                if !backoff.wait(stopped).await {
                    return Ok(false);
                }
            }
        }
    }
}

/// Waits between attempts at a sink that is down: 100 ms, doubling, at most
/// `errors.retry.delay.max.ms`.
struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);

    fn new(max: Duration) -> Backoff {
        Backoff {
            next: Self::FIRST,
            max: max.max(Self::FIRST),
        }
    }

    fn reset(&mut self) {
        self.next = Self::FIRST;
    }

    /// False when the task was told to stop while waiting.
    async fn wait(&mut self, stopped: &mut watch::Receiver<bool>) -> bool {
        let delay = self.next;
        self.next = (self.next * 2).min(self.max);
        if *stopped.borrow() {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => !*stopped.borrow(),
            _ = stopped.changed() => false,
        }
    }
}

const KAFKA_TOPIC: &str = "kafka_topic";
const KAFKA_PARTITION: &str = "kafka_partition";
const KAFKA_OFFSET: &str = "kafka_offset";

/// The consumer group a sink connector's tasks share (`SinkUtils.consumerGroupId`).
pub fn sink_group(connector: &str) -> String {
    format!("connect-{connector}")
}

/// A sink connector's offsets from a PATCH body (`SinkUtils.parseSinkConnectorOffsets`):
/// numbers or numeric strings, as Connect accepts both.
fn parse_sink_offsets(
    change: &[OffsetChange],
) -> Result<BTreeMap<TopicPartition, Option<i64>>, HerderError> {
    let text = |v: &Json| match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut parsed = BTreeMap::new();
    for (partition, offset) in change {
        let (Some(topic), Some(number)) =
            (partition.get(KAFKA_TOPIC), partition.get(KAFKA_PARTITION))
        else {
            return Err(HerderError::BadRequest(format!(
                "The partition for a sink connector offset must contain the keys '{KAFKA_TOPIC}' and '{KAFKA_PARTITION}'"
            )));
        };
        let Some(topic) = topic.as_str().filter(|t| !t.is_empty()) else {
            return Err(HerderError::BadRequest(
                "Kafka topic names must be valid strings and may not be empty".into(),
            ));
        };
        let number = text(number).trim().parse::<i32>().map_err(|_| {
            HerderError::BadRequest(format!(
                "Failed to parse the following Kafka partition value in the provided offsets: '{}'. Partition values for sink connectors need to be integers.",
                text(number)
            ))
        })?;
        let offset = match offset {
            None => None,
            Some(o) => {
                let Some(value) = o.get(KAFKA_OFFSET) else {
                    return Err(HerderError::BadRequest(format!(
                        "The offset for a sink connector should either be null or contain the key '{KAFKA_OFFSET}'"
                    )));
                };
                Some(text(value).trim().parse::<i64>().map_err(|_| {
                    HerderError::BadRequest(format!(
                        "Failed to parse the following Kafka offset value in the provided offsets: '{}'. Offset values for sink connectors need to be integers.",
                        text(value)
                    ))
                })?)
            }
        };
        parsed.insert(TopicPartition::new(topic, number), offset);
    }
    Ok(parsed)
}

/// For the REST API: the statuses topic's view of a connector.
pub fn connector_type(config: &Props) -> Option<&'static str> {
    config
        .get("connector.class")
        .and_then(|c| connectors::plugin(c))
        .map(|p| p.kind().name())
}

pub use records::TargetState as State;

impl Worker {
    /// Stops every task, committing what they completed (a source task's acknowledged
    /// offsets, a sink task's flushed consumer offsets).
    pub async fn shutdown(&self) {
        self.closing
            .store(true, std::sync::atomic::Ordering::Release);
        self.kick.send_modify(|n| *n += 1);
        let running: Vec<Running> = std::mem::take(&mut *lock(&self.running))
            .into_values()
            .collect();
        for r in &running {
            let _ = r.stop.send(true);
        }
        for r in running {
            let _ = tokio::time::timeout(Duration::from_secs(10), r.handle).await;
        }
        // Then leave the group, so the others take the work over at once.
        let _ = self.stop_group.send(true);
        let group = lock(&self.group).take();
        if let Some(group) = group {
            let _ = tokio::time::timeout(Duration::from_secs(10), group).await;
        }
    }
}
