//! A Sluice node: opens its log directories (stamping each with Kafka's
//! `meta.properties`: cluster id, node id, directory id), replays the metadata log,
//! binds its listeners (and the Prometheus `metrics.listener`), serves until told to
//! stop, then shuts down cleanly (with other brokers in the cluster, a controlled
//! shutdown first moves its leaderships away; then logs flushed, checkpoints and the
//! clean-shutdown marker written), as `kafka.Kafka` does on SIGTERM.
//!
//! The node keeps its metadata log (`__cluster_metadata-0`, the Raft log of the
//! metadata quorum) in the first log directory (Kafka's default for
//! `metadata.log.dir`). A node with the controller role binds its controller listeners
//! and, when it is among `controller.quorum.voters`, votes; a controller with no voters
//! configured is a quorum of one. A node that is not a voter (a broker-only node) joins
//! the quorum as a learner, through the voters or `controller.quorum.bootstrap.servers`.
//! A voter that finds no `metadata.version` in the image bootstraps the cluster as
//! `kafka-storage format` does: the feature levels (`metadata.version` and
//! [`crate::features::BOOTSTRAP_LEVELS`]), the cluster-wide `min.insync.replicas`, and
//! the SCRAM credentials of `sluice server --add-scram` (`kafka-storage format
//! --add-scram`).

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use sluice_metadata::{MetadataLogError, MetadataRecord};
use sluice_storage::LogManager;
use tokio::sync::watch;

use crate::broker::{Broker, BrokerError, Endpoint, random_uuid};
use crate::config::{BrokerConfig, Listener, Role};
use crate::metrics::{MetricsServer, RequestMetrics};
use crate::network::{NetworkConfig, Server};

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("log directory {dir}: {source}")]
    LogDir {
        dir: PathBuf,
        #[source]
        source: sluice_storage::StorageError,
    },
    #[error("{path}: {reason}")]
    MetaProperties { path: PathBuf, reason: String },
    #[error("listener {listener}: {reason}")]
    Listener { listener: String, reason: String },
    #[error("no broker listener: listeners has only controller listeners")]
    NoBrokerListener,
    #[error("metadata log: {0}")]
    Metadata(#[from] MetadataLogError),
    #[error("metadata quorum: {0}")]
    Quorum(#[from] crate::quorum::QuorumStartError),
    #[error("{0}")]
    Broker(#[from] BrokerError),
}

pub use crate::features::{METADATA_VERSION_LEVEL, MIN_METADATA_VERSION_LEVEL};
/// How long a node waits at start for the quorum (a leader, joining as a learner):
/// `initial.broker.registration.timeout.ms`, 60 s by default as in Kafka.
fn startup_timeout(config: &BrokerConfig) -> Duration {
    config.settings().quorum.startup_timeout
}
const STARTUP_TIMEOUT_KEY: &str = "initial.broker.registration.timeout.ms";
/// How long a stopping broker waits for its leaderships to move.
const CONTROLLED_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);
/// A shutdown step that takes this long is logged as a warning.
const SLOW_SHUTDOWN_STEP_MS: u64 = 1000;

/// How often time-based flushes (`flush.ms`) are checked, at most.
const FLUSH_CHECK_INTERVAL_MS: u64 = 1_000;

/// Kafka's base64 form of a UUID (URL-safe, no padding: 22 characters).
fn uuid_base64(id: [u8; 16]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}

/// The cluster id the nodes of one configured quorum agree on without talking:
/// derived from `controller.quorum.voters` (or the bootstrap servers), which they
/// share. `None` without voters (a standalone controller, or a broker that knows only
/// the bootstrap servers).
fn shared_cluster_id(config: &BrokerConfig) -> Option<String> {
    // (A controller with bootstrap servers only is a standalone quorum; a broker with
    // bootstrap servers only asks them, `cluster_id_from_bootstrap_servers`.)
    let quorum = &config.settings().quorum.voters;
    if quorum.is_empty() {
        return None;
    }
    let mut normalized: Vec<&str> = quorum.split(',').map(str::trim).collect();
    normalized.sort_unstable();
    let text = normalized.join(",");
    let mut id = [0u8; 16];
    for (i, chunk) in id.chunks_mut(4).enumerate() {
        let salted = format!("sluice-cluster-{i}:{text}");
        chunk.copy_from_slice(&crc32c::crc32c(salted.as_bytes()).to_be_bytes());
    }
    // A version-4 UUID shape, as Kafka's ids.
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    Some(uuid_base64(id))
}

/// A broker-only node that knows only `controller.quorum.bootstrap.servers` asks them for
/// the cluster id (as Kafka's operator would pass it to `kafka-storage format`). `None`
/// for every other node.
async fn cluster_id_from_bootstrap_servers(
    config: &BrokerConfig,
) -> Result<Option<String>, NodeError> {
    let quorum = &config.settings().quorum;
    if config.process_roles().contains(&Role::Controller) || !quorum.voters.is_empty() {
        return Ok(None);
    }
    let servers = &quorum.bootstrap_servers;
    if servers.is_empty() {
        return Ok(None);
    }
    let deadline = tokio::time::Instant::now() + startup_timeout(config);
    let mut last = String::new();
    while tokio::time::Instant::now() < deadline {
        for server in servers {
            match crate::quorum::rpc::call(
                server,
                &crate::quorum::RpcRequest::ClusterId,
                Duration::from_secs(5),
            )
            .await
            {
                Ok(crate::quorum::RpcResponse::ClusterId(id)) if !id.is_empty() => {
                    return Ok(Some(id));
                }
                Ok(other) => last = format!("{other:?}"),
                Err(error) => last = format!("{server}: {error}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(NodeError::Listener {
        listener: "controller.quorum.bootstrap.servers".into(),
        reason: format!("no controller told the cluster id: {last}"),
    })
}

/// Reads or writes `meta.properties` in `dir`; returns the cluster id and directory id
/// it holds. A directory stamped for another node or cluster (`cluster_id`, from the
/// directories before it) is refused, as Kafka refuses it; a new one is stamped with
/// `cluster_id`, else `new_cluster_id`, else a random id.
fn stamp_log_dir(
    dir: &Path,
    node_id: i32,
    cluster_id: Option<&str>,
    new_cluster_id: Option<&str>,
) -> Result<(String, [u8; 16]), NodeError> {
    let path = dir.join("meta.properties");
    let error = |reason: String| NodeError::MetaProperties {
        path: path.clone(),
        reason,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let entries = crate::properties::parse(&text).map_err(|e| error(e.to_string()))?;
            let get = |key: &str| {
                entries
                    .iter()
                    .find(|(_, k, _)| k == key)
                    .map(|(_, _, v)| v.clone())
            };
            let stored_node = get("node.id").and_then(|v| v.parse::<i32>().ok());
            if stored_node != Some(node_id) {
                return Err(error(format!(
                    "stored node.id {stored_node:?} does not match this node's node.id {node_id}"
                )));
            }
            let stored = get("cluster.id").ok_or_else(|| error("no cluster.id".into()))?;
            if let Some(expected) = cluster_id
                && expected != stored
            {
                return Err(error(format!(
                    "cluster.id {stored} does not match {expected} of the other log directories"
                )));
            }
            let directory = get("directory.id")
                .and_then(|id| {
                    base64::engine::general_purpose::URL_SAFE_NO_PAD
                        .decode(id)
                        .ok()
                })
                .and_then(|bytes| <[u8; 16]>::try_from(bytes).ok())
                .ok_or_else(|| error("no valid directory.id".into()))?;
            Ok((stored, directory))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let cluster = cluster_id
                .or(new_cluster_id)
                .map(str::to_string)
                .unwrap_or_else(|| uuid_base64(random_uuid()));
            let directory = random_uuid();
            let text = format!(
                "#\n#Written by Sluice\ncluster.id={cluster}\ndirectory.id={}\nnode.id={node_id}\nversion=1\n",
                uuid_base64(directory)
            );
            sluice_storage::checkpoint::write_atomically(&path, text.as_bytes()).map_err(
                |source| NodeError::LogDir {
                    dir: dir.to_path_buf(),
                    source,
                },
            )?;
            Ok((cluster, directory))
        }
        Err(e) => Err(error(e.to_string())),
    }
}

/// Binds `metrics.listener`, unless it is empty. A port that cannot be bound fails the
/// start when the key was set, and only logs an error when it is the default: several
/// nodes on one host (tests, a laptop cluster) would otherwise all refuse to start over
/// a port nobody asked for, and serving Kafka matters more than being scraped.
async fn bind_metrics(
    config: &BrokerConfig,
    broker: &Arc<Broker>,
    request_metrics: &Arc<RequestMetrics>,
    extra_collectors: Vec<Box<dyn prometheus_client::collector::Collector>>,
) -> Result<Option<MetricsServer>, NodeError> {
    let key = "metrics.listener";
    let error = |reason: String| NodeError::Listener {
        listener: key.into(),
        reason,
    };
    let Some(address) =
        crate::metrics::configured_address(config.get(key).unwrap_or("")).map_err(error)?
    else {
        return Ok(None);
    };
    let bound = MetricsServer::bind(
        address,
        broker.clone(),
        request_metrics.clone(),
        extra_collectors,
    )
    .await
    .and_then(|server| Ok((server.local_addr()?, server)));
    match bound {
        Ok((bound, server)) => {
            tracing::info!("sluice: metrics on http://{bound}/metrics");
            Ok(Some(server))
        }
        Err(bind_error) if config.is_explicit(key) => {
            Err(error(format!("cannot bind {address}: {bind_error}")))
        }
        Err(bind_error) => {
            tracing::error!(%address, error = %bind_error, "metrics not served: cannot bind the default metrics.listener");
            Ok(None)
        }
    }
}

/// Runs the node until `shutdown` turns true. `on_listening` is told each bound address
/// (the port is the real one when the configuration asked for port 0).
pub async fn run(
    config: BrokerConfig,
    shutdown: watch::Receiver<bool>,
    on_listening: impl Fn(&Listener, SocketAddr),
) -> Result<(), NodeError> {
    run_with_collectors(config, shutdown, on_listening, Vec::new()).await
}

/// [`run`], with more metrics on the node's `/metrics` (what an in-process companion such
/// as the lag monitor of `sluice server --with-monitor` exports).
pub async fn run_with_collectors(
    config: BrokerConfig,
    mut shutdown: watch::Receiver<bool>,
    on_listening: impl Fn(&Listener, SocketAddr),
    extra_collectors: Vec<Box<dyn prometheus_client::collector::Collector>>,
) -> Result<(), NodeError> {
    let OpenedBroker {
        broker,
        metadata_dir,
        clean_start,
        directory_ids,
    } = open_broker(&config).await?;
    let roles = config.process_roles();
    let is_broker = roles.contains(&Role::Broker);
    let is_controller = roles.contains(&Role::Controller);
    let request_metrics = Arc::new(RequestMetrics::default());
    let BoundListeners {
        servers,
        endpoints,
        controller_endpoints,
    } = bind_listeners(&config, &broker, &request_metrics, is_controller).await?;
    if is_broker && endpoints.is_empty() {
        return Err(NodeError::NoBrokerListener);
    }
    let QuorumAddresses {
        raft_address,
        voters,
        join_targets,
    } = quorum_addresses(&config, is_controller, &endpoints, &controller_endpoints)?;
    let quorum = start_quorum(
        &config,
        &broker,
        &metadata_dir,
        clean_start,
        raft_address.clone(),
        voters,
    )
    .await?;
    let mut tasks: Tasks = Vec::new();
    let mut bound_listeners = Vec::new();
    for (listener, bound, server, is_controller_listener) in servers {
        tasks.push(("listener", tokio::spawn(server.run(shutdown.clone()))));
        bound_listeners.push((listener, bound, is_controller_listener));
    }
    wait_for_quorum(&config, &broker, &quorum, &join_targets, raft_address).await?;
    if is_broker {
        start_broker_tasks(
            &broker,
            &endpoints,
            &directory_ids,
            clean_start,
            &shutdown,
            &mut tasks,
        )
        .await?;
    }
    if quorum.is_voter() {
        tasks.push((
            "controller",
            tokio::spawn(crate::controller::run(broker.clone(), shutdown.clone())),
        ));
    }
    if let Some(metrics) =
        bind_metrics(&config, &broker, &request_metrics, extra_collectors).await?
    {
        tasks.push(("metrics", tokio::spawn(metrics.run(shutdown.clone()))));
    }
    announce_listeners(&bound_listeners, &on_listening);
    // The log cleaner: `log.cleaner.threads` passes at a time (a dynamic config).
    if is_broker && config.settings().log_cleaner_enable {
        tasks.push((
            "log cleaner",
            tokio::spawn(crate::log_cleaner::run(broker.clone(), shutdown.clone())),
        ));
    }
    serve_until_shutdown(&config, &broker, &mut shutdown).await;
    stop(&config, &broker, &quorum, is_broker, tasks).await
}

/// The node's background tasks, each named for the shutdown log.
type Tasks = Vec<(&'static str, tokio::task::JoinHandle<()>)>;

/// What [`open_broker`] returns.
struct OpenedBroker {
    broker: Arc<Broker>,
    /// The first log directory, which holds the metadata log.
    metadata_dir: PathBuf,
    /// Whether the first log directory had been shut down cleanly.
    clean_start: bool,
    directory_ids: Vec<sluice_metadata::Uuid>,
}

/// Opens and stamps the log directories and builds the broker on them.
async fn open_broker(config: &BrokerConfig) -> Result<OpenedBroker, NodeError> {
    let node_id = config.node_id();
    let mut managers = Vec::new();
    // Kafka's nodes share the id `kafka-storage format --cluster-id` wrote; Sluice's
    // nodes format themselves, so those of one quorum derive it from the quorum's
    // configuration, which they all share (a standalone node picks a random one).
    // (An id already stamped in a directory wins: a node formatted by other means,
    // e.g. with Kafka's tools, keeps its id.)
    let derived_cluster_id = match shared_cluster_id(config) {
        Some(id) => Some(id),
        None => cluster_id_from_bootstrap_servers(config).await?,
    };
    let mut cluster_id: Option<String> = None;
    let mut directory_ids = Vec::new();
    for dir in config.log_dirs() {
        let manager =
            LogManager::open(&dir, config.log_config()).map_err(|source| NodeError::LogDir {
                dir: dir.clone(),
                source,
            })?;
        let (cluster, directory) = stamp_log_dir(
            &dir,
            node_id,
            cluster_id.as_deref(),
            derived_cluster_id.as_deref(),
        )?;
        cluster_id = Some(cluster);
        directory_ids.push(directory);
        tracing::info!(dir = %dir.display(), clean = manager.was_clean_start(), partitions = manager.partitions().count(), "opened log directory");
        managers.push(manager);
    }
    let first = managers.first().ok_or_else(|| NodeError::Listener {
        listener: "log.dirs".into(),
        reason: "no log directory configured".into(),
    })?;
    let metadata_dir = first.dir().to_path_buf();
    let clean_start = first.was_clean_start();
    // The one place the node's services are wired together: the replica manager and
    // the coordinators on it (Services::new), the broker holding them, and the
    // replica manager's channel to the active controller.
    let services = crate::broker::Services::new(config, managers);
    let broker = Broker::new(config.clone(), cluster_id.unwrap_or_default(), services);
    broker
        .replication
        .connect_controller(Arc::new(crate::controller::IsrChannel(Arc::downgrade(
            &broker,
        ))));
    Ok(OpenedBroker {
        broker,
        metadata_dir,
        clean_start,
        directory_ids,
    })
}

/// What [`bind_listeners`] returns.
struct BoundListeners {
    /// Each bound listener: its bound address, its server (not yet running), and
    /// whether it is a controller listener.
    servers: Vec<(Listener, SocketAddr, Server, bool)>,
    /// The advertised endpoints of the broker listeners.
    endpoints: Vec<Endpoint>,
    /// The advertised endpoints of the controller listeners.
    controller_endpoints: Vec<Endpoint>,
}

/// The connection limits, idle timeout and request pool of the node's listeners.
fn network_config(config: &BrokerConfig) -> NetworkConfig {
    let settings = &config.settings().network;
    NetworkConfig {
        socket_request_max_bytes: settings.socket_request_max_bytes,
        quotas: Arc::new(crate::connection_quotas::ConnectionQuotas::new(
            settings.max_connections,
            settings.max_connections_per_ip,
            settings.max_connections_per_ip_overrides.clone(),
        )),
        connections_max_idle: settings.connections_max_idle,
        requests: Arc::new(crate::network::RequestPool::new(
            settings.queued_max_requests,
            settings.queued_max_request_bytes,
        )),
        ..NetworkConfig::default()
    }
}

/// Binds the node's listeners (the controller listeners only on a controller) and
/// works out the endpoint each advertises.
async fn bind_listeners(
    config: &BrokerConfig,
    broker: &Arc<Broker>,
    request_metrics: &Arc<RequestMetrics>,
    is_controller: bool,
) -> Result<BoundListeners, NodeError> {
    let listener_settings = &config.settings().listeners;
    let controller_listeners = &listener_settings.controller_listener_names;
    let network = network_config(config);
    let advertised = config.advertised_listeners();
    let mut servers = Vec::new();
    let mut endpoints = Vec::new();
    let mut controller_endpoints = Vec::new();
    let inter_broker_listener = &listener_settings.inter_broker_listener_name;
    let broker_listener_count = config
        .listeners()
        .iter()
        .filter(|listener| !controller_listeners.contains(&listener.name))
        .count();
    for listener in config.listeners() {
        let is_controller_listener = controller_listeners.contains(&listener.name);
        if is_controller_listener && !is_controller {
            continue;
        }
        let host = if listener.host.is_empty() {
            "0.0.0.0"
        } else {
            listener.host.as_str()
        };
        let address = (host, listener.port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut addresses| addresses.next())
            .ok_or_else(|| NodeError::Listener {
                listener: listener.name.clone(),
                reason: format!("cannot resolve {host}"),
            })?;
        // The cluster's own listeners are counted under max.connections but never
        // held back by it: the controller listeners, and the inter-broker listener when
        // clients have another one (Kafka protects it only then).
        let held_back_at_max_connections = !is_controller_listener
            && (&listener.name != inter_broker_listener || broker_listener_count == 1);
        let server = Server::bind(address, network.clone(), broker.clone(), &listener.name)
            .await
            .map_err(|error| NodeError::Listener {
                listener: listener.name.clone(),
                reason: format!("cannot bind {address}: {error}"),
            })?
            .with_request_metrics(request_metrics.clone())
            .held_back_at_max_connections(held_back_at_max_connections)
            .bounded_by_request_pool(held_back_at_max_connections);
        let bound = server.local_addr().map_err(|error| NodeError::Listener {
            listener: listener.name.clone(),
            reason: error.to_string(),
        })?;
        // The advertised endpoint: `advertised.listeners` when it names this listener
        // (port 0 there means the bound port), else the bound address.
        let (adv_host, adv_port) = match advertised.iter().find(|a| a.name == listener.name) {
            Some(a) if !a.host.is_empty() => (
                a.host.clone(),
                if a.port == 0 { bound.port() } else { a.port },
            ),
            _ => (bound.ip().to_string(), bound.port()),
        };
        let endpoint = Endpoint {
            listener: listener.name.clone(),
            host: adv_host,
            port: adv_port,
        };
        if is_controller_listener {
            controller_endpoints.push(endpoint);
        } else {
            endpoints.push(endpoint);
        }
        servers.push((listener, bound, server, is_controller_listener));
    }
    Ok(BoundListeners {
        servers,
        endpoints,
        controller_endpoints,
    })
}

/// A problem with `controller.quorum.voters` or with reaching the voters it names.
fn quorum_error(reason: String) -> NodeError {
    NodeError::Listener {
        listener: "controller.quorum.voters".into(),
        reason,
    }
}

/// What [`quorum_addresses`] returns.
struct QuorumAddresses {
    /// The address this node's Raft client is reached at.
    raft_address: String,
    /// The voters: `controller.quorum.voters`, or this controller alone.
    voters: BTreeMap<crate::quorum::NodeId, String>,
    /// Where a broker-only node asks to join: the voters, else the bootstrap servers.
    join_targets: BTreeMap<crate::quorum::NodeId, String>,
}

/// Works out this node's Raft address, the quorum's voters and where a learner joins.
fn quorum_addresses(
    config: &BrokerConfig,
    is_controller: bool,
    endpoints: &[Endpoint],
    controller_endpoints: &[Endpoint],
) -> Result<QuorumAddresses, NodeError> {
    let node_id = config.node_id();
    // The quorum: `controller.quorum.voters`, or this controller alone.
    let mut voters =
        crate::quorum::parse_voters(&config.settings().quorum.voters).map_err(quorum_error)?;
    let inter_broker = &config.settings().listeners.inter_broker_listener_name;
    let raft_address = if is_controller {
        match (voters.get(&(node_id as u64)), controller_endpoints.first()) {
            (Some(address), _) => address.clone(),
            (None, Some(e)) => format!("{}:{}", e.host, e.port),
            (None, None) => {
                return Err(quorum_error(
                    "a controller needs a listener named in controller.listener.names".into(),
                ));
            }
        }
    } else {
        endpoints
            .iter()
            .find(|e| &e.listener == inter_broker)
            .or(endpoints.first())
            .map(|e| format!("{}:{}", e.host, e.port))
            .unwrap_or_default()
    };
    // Where a broker-only node asks to join: the voters, else the bootstrap servers.
    let mut join_targets = voters.clone();
    if voters.is_empty() {
        if is_controller {
            voters.insert(node_id as u64, raft_address.clone());
        } else {
            for (i, server) in config
                .settings()
                .quorum
                .bootstrap_servers
                .iter()
                .enumerate()
            {
                join_targets.insert(i as u64, server.clone());
            }
            if join_targets.is_empty() {
                return Err(quorum_error(
                    "a broker-only node needs controller.quorum.voters or controller.quorum.bootstrap.servers".into(),
                ));
            }
        }
    }
    Ok(QuorumAddresses {
        raft_address,
        voters,
        join_targets,
    })
}

/// Starts the metadata quorum, which applies each image to the broker, and attaches it
/// to the broker.
async fn start_quorum(
    config: &BrokerConfig,
    broker: &Arc<Broker>,
    metadata_dir: &Path,
    clean_start: bool,
    raft_address: String,
    voters: BTreeMap<crate::quorum::NodeId, String>,
) -> Result<Arc<crate::quorum::Quorum>, NodeError> {
    let weak = Arc::downgrade(broker);
    let on_apply: crate::quorum::OnApply = Arc::new(move |image| {
        if let Some(broker) = weak.upgrade() {
            broker.apply_image(image);
        }
    });
    let quorum = Arc::new(
        crate::quorum::Quorum::start(
            config,
            metadata_dir,
            clean_start,
            raft_address,
            voters,
            on_apply,
        )
        .await?,
    );
    broker.attach_quorum(quorum.clone());
    Ok(quorum)
}

/// Joins the quorum as a learner when this node is not a voter, waits until the quorum
/// is ready, and on a voter bootstraps a cluster that has no `metadata.version` yet.
async fn wait_for_quorum(
    config: &BrokerConfig,
    broker: &Arc<Broker>,
    quorum: &crate::quorum::Quorum,
    join_targets: &BTreeMap<crate::quorum::NodeId, String>,
    raft_address: String,
) -> Result<(), NodeError> {
    let node_id = config.node_id();
    if !quorum.is_voter() {
        crate::controller::join_as_learner(
            join_targets,
            node_id as u64,
            raft_address,
            startup_timeout(config),
        )
        .await
        .map_err(|reason| quorum_error(format!("cannot join the quorum: {reason}")))?;
    }
    quorum
        .wait_ready(startup_timeout(config))
        .await
        .map_err(|e| {
            quorum_error(format!(
                "{e} ({STARTUP_TIMEOUT_KEY}); start the other voters within it"
            ))
        })?;
    if quorum.is_voter() && broker.image().feature_level("metadata.version").is_none() {
        // What `kafka-storage format` writes: the metadata version, and the cluster-wide
        // `min.insync.replicas` as a dynamic default (Kafka 4.x does so for KIP-966).
        let mut records = vec![MetadataRecord::FeatureLevel {
            name: "metadata.version".into(),
            level: METADATA_VERSION_LEVEL,
        }];
        records.extend(
            crate::features::BOOTSTRAP_LEVELS
                .iter()
                .map(|(name, level)| MetadataRecord::FeatureLevel {
                    name: (*name).into(),
                    level: *level,
                }),
        );
        records.push(MetadataRecord::Config(sluice_metadata::ConfigRecord {
            resource_type: crate::broker::BROKER_RESOURCE,
            resource_name: String::new(),
            name: "min.insync.replicas".into(),
            value: Some(config.int_value("min.insync.replicas").to_string()),
        }));
        // `kafka-storage format --add-scram`'s credentials: the first users of a
        // cluster whose listeners all authenticate with SCRAM.
        records.extend(
            config
                .bootstrap_scram()
                .iter()
                .cloned()
                .map(MetadataRecord::UserScramCredential),
        );
        broker.write_metadata(&records).await?;
    } else if !config.bootstrap_scram().is_empty() {
        tracing::warn!(
            "--add-scram is ignored: this node did not bootstrap the cluster (it existed \
             already, or the node is not a voter); kafka-configs.sh --alter --add-config \
             'SCRAM-SHA-256=[...]' --entity-type users adds credentials"
        );
    }
    tracing::info!(
        voters = ?quorum.voters,
        leader = ?quorum.leader().map(|l| l.0),
        topics = broker.image().topics().count(),
        "joined the metadata quorum"
    );
    Ok(())
}

/// Registers the broker with the controller (after an unclean shutdown, leaving the
/// ISRs first) and starts its heartbeats, group coordinator and transaction
/// coordinator.
async fn start_broker_tasks(
    broker: &Arc<Broker>,
    endpoints: &[Endpoint],
    directory_ids: &[sluice_metadata::Uuid],
    clean_start: bool,
    shutdown: &watch::Receiver<bool>,
    tasks: &mut Tasks,
) -> Result<(), NodeError> {
    broker.register(endpoints, directory_ids.to_vec()).await?;
    if !clean_start {
        // Kafka's unclean-shutdown registration (KIP-966): until it has caught up
        // again this broker is in no ISR and leads nothing.
        match crate::controller::leave_isrs_after_unclean_shutdown(broker).await {
            Ok(0) => {}
            Ok(left) => tracing::info!(
                partitions = left,
                "started after an unclean shutdown: left the ISRs until caught up"
            ),
            Err(error) => {
                tracing::warn!(%error, "could not leave the ISRs after an unclean shutdown")
            }
        }
    }
    let registration = {
        let broker = broker.clone();
        let endpoints = endpoints.to_vec();
        let directory_ids = directory_ids.to_vec();
        move || {
            let broker = broker.clone();
            let endpoints = endpoints.clone();
            let directory_ids = directory_ids.clone();
            Box::pin(async move { broker.register(&endpoints, directory_ids).await })
                as std::pin::Pin<
                    Box<dyn std::future::Future<Output = Result<(), BrokerError>> + Send>,
                >
        }
    };
    tasks.push((
        "broker heartbeats",
        tokio::spawn(crate::controller::run_heartbeats(
            broker.clone(),
            shutdown.clone(),
            registration,
        )),
    ));
    tasks.push((
        "group coordinator",
        tokio::spawn(crate::group::run(broker.groups.clone(), shutdown.clone())),
    ));
    tasks.push((
        "transaction coordinator",
        tokio::spawn(crate::txn::run(
            broker.transactions.clone(),
            shutdown.clone(),
        )),
    ));
    Ok(())
}

/// Tells `on_listening` each bound listener (the bool: a controller listener). Broker
/// listeners first: callers take the first address as the node's.
fn announce_listeners(
    bound_listeners: &[(Listener, SocketAddr, bool)],
    on_listening: &impl Fn(&Listener, SocketAddr),
) {
    for (listener, bound, _) in bound_listeners.iter().filter(|l| !l.2) {
        on_listening(listener, *bound);
    }
    for (listener, bound, _) in bound_listeners.iter().filter(|l| l.2) {
        on_listening(listener, *bound);
    }
}

/// Runs the periodic log tasks until `shutdown` turns true: retention and checkpoints
/// every log.retention.check.interval.ms; time-based flushes (flush.ms) and deferred
/// flushes of rolled segments every second.
async fn serve_until_shutdown(
    config: &BrokerConfig,
    broker: &Arc<Broker>,
    shutdown: &mut watch::Receiver<bool>,
) {
    let retention_every = config.log_retention_check_interval_ms().max(1) as u64;
    let mut flush_timer = tokio::time::interval(Duration::from_millis(FLUSH_CHECK_INTERVAL_MS));
    let mut retention_timer = tokio::time::interval(Duration::from_millis(retention_every));
    retention_timer.tick().await;
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    break;
                }
            }
            _ = retention_timer.tick() => {
                let broker = broker.clone();
                match tokio::task::spawn_blocking(move || broker.run_periodic_tasks()).await {
                    Ok(Ok(deleted)) if deleted > 0 => tracing::info!(deleted, "retention deleted segments"),
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => tracing::error!(%error, "periodic log tasks failed"),
                    Err(error) => tracing::error!(%error, "periodic log tasks panicked"),
                }
            }
            _ = flush_timer.tick() => {
                let broker = broker.clone();
                let _ = tokio::task::spawn_blocking(move || broker.flush_due_logs()).await;
            }
        }
    }
}

/// Stops the node: a controlled shutdown first when other brokers can take its
/// leaderships, then the background tasks, replication, the quorum and the logs.
async fn stop(
    config: &BrokerConfig,
    broker: &Arc<Broker>,
    quorum: &crate::quorum::Quorum,
    is_broker: bool,
    tasks: Tasks,
) -> Result<(), NodeError> {
    if is_broker
        && broker.image().brokers().count() > 1
        && config.settings().controller.controlled_shutdown
    {
        // Bounded by the session timeout too: past it the controller fences this broker
        // (and moves its leaderships) anyway.
        let session = config.settings().controller.broker_session_timeout;
        let moved = crate::controller::controlled_shutdown(
            broker,
            CONTROLLED_SHUTDOWN_TIMEOUT.min(session),
        )
        .await;
        tracing::info!(moved, "controlled shutdown");
    }
    // Each step's time is logged, as Kafka logs each component's shutdown: a stop that
    // hangs names the step it hangs in.
    let stopping = std::time::Instant::now();
    let mut step = std::time::Instant::now();
    let mut stopped = |what: &str| {
        let ms = step.elapsed().as_millis() as u64;
        if ms >= SLOW_SHUTDOWN_STEP_MS {
            tracing::warn!(ms, "stopped: {what} (slowly)");
        } else {
            tracing::info!(ms, "stopped: {what}");
        }
        step = std::time::Instant::now();
    };
    for (name, task) in tasks {
        let _ = task.await;
        stopped(name);
    }
    crate::replication::shutdown(&broker.replication).await;
    stopped("replication");
    quorum.shutdown().await;
    stopped("metadata quorum");
    broker.shutdown()?;
    stopped("logs flushed, checkpoints written");
    tracing::info!(
        ms = stopping.elapsed().as_millis() as u64,
        "shut down cleanly"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> BrokerConfig {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BrokerConfig::load(crate::EMBEDDED_SERVER_PROPERTIES, &pairs)
            .unwrap()
            .config
    }

    #[test]
    fn the_nodes_of_one_quorum_derive_one_cluster_id() {
        let a = config(&[("controller.quorum.voters", "1@h:1,2@h:2,3@h:3")]);
        let b = config(&[
            ("node.id", "2"),
            ("controller.quorum.voters", "3@h:3, 1@h:1,2@h:2"),
        ]);
        let broker = config(&[
            ("node.id", "4"),
            ("process.roles", "broker"),
            ("listeners", "PLAINTEXT://127.0.0.1:9092"),
            ("controller.quorum.voters", "1@h:1,2@h:2,3@h:3"),
        ]);
        let id = shared_cluster_id(&a).unwrap();
        assert_eq!(id.len(), 22);
        assert_eq!(shared_cluster_id(&b).unwrap(), id);
        assert_eq!(shared_cluster_id(&broker).unwrap(), id);
        let other = config(&[("controller.quorum.voters", "1@h:1,2@h:2,3@h:4")]);
        assert_ne!(shared_cluster_id(&other).unwrap(), id);
        // A standalone controller (bootstrap servers only, the default) picks its own.
        assert_eq!(shared_cluster_id(&config(&[])), None);
    }
}
