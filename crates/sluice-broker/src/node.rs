//! A Sluice node: opens its log directories (stamping each with Kafka's
//! `meta.properties`: cluster id, node id, directory id), replays the metadata log,
//! binds its broker listeners (and the Prometheus `metrics.listener`), serves until
//! told to stop, then shuts down cleanly (logs flushed, checkpoints and the
//! clean-shutdown marker written), as `kafka.Kafka` does on SIGTERM.
//!
//! The node keeps its metadata log (`__cluster_metadata-0`) in the first log directory
//! (Kafka's default for `metadata.log.dir`) and bootstraps it with the
//! `metadata.version` feature level on first start, as `kafka-storage format` does.
//! It is its own controller (a quorum of one until issue 4); the controller listener is
//! not bound yet, as nothing but other nodes would talk to it.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use sluice_metadata::{MetadataLog, MetadataLogError, MetadataRecord};
use sluice_storage::LogManager;
use tokio::sync::watch;

use crate::broker::{Broker, BrokerError, Endpoint, random_uuid};
use crate::config::{BrokerConfig, Listener};
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
    #[error("{0}")]
    Broker(#[from] BrokerError),
}

/// Kafka 4.1's `metadata.version` feature level (4.1-IV1), written at bootstrap.
pub const METADATA_VERSION_LEVEL: i16 = 27;
/// The lowest `metadata.version` level a 4.1 broker supports (3.3-IV3).
pub const MIN_METADATA_VERSION_LEVEL: i16 = 7;
/// The controller epoch of a single-node quorum until the Raft quorum (issue 4).
const SINGLE_NODE_EPOCH: i32 = 1;
/// How often time-based flushes (`flush.ms`) are checked, at most.
const FLUSH_CHECK_INTERVAL_MS: u64 = 1_000;

/// Kafka's base64 form of a UUID (URL-safe, no padding: 22 characters).
fn uuid_base64(id: [u8; 16]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id)
}

/// Reads or writes `meta.properties` in `dir`; returns the cluster id and directory id
/// it holds. A directory stamped for another node or cluster is refused, as Kafka
/// refuses it.
fn stamp_log_dir(
    dir: &Path,
    node_id: i32,
    cluster_id: Option<&str>,
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
    let bound = MetricsServer::bind(address, broker.clone(), request_metrics.clone())
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
    mut shutdown: watch::Receiver<bool>,
    on_listening: impl Fn(&Listener, SocketAddr),
) -> Result<(), NodeError> {
    let node_id = config.node_id();
    let mut managers = Vec::new();
    let mut cluster_id: Option<String> = None;
    let mut directory_ids = Vec::new();
    for dir in config.log_dirs() {
        let manager =
            LogManager::open(&dir, config.log_config()).map_err(|source| NodeError::LogDir {
                dir: dir.clone(),
                source,
            })?;
        let (cluster, directory) = stamp_log_dir(&dir, node_id, cluster_id.as_deref())?;
        cluster_id = Some(cluster);
        directory_ids.push(directory);
        tracing::info!(dir = %dir.display(), clean = manager.was_clean_start(), partitions = manager.partitions().count(), "opened log directory");
        managers.push(manager);
    }
    let first = managers.first().ok_or_else(|| NodeError::Listener {
        listener: "log.dirs".into(),
        reason: "no log directory configured".into(),
    })?;
    let mut metadata = MetadataLog::open(first.dir(), first.was_clean_start(), SINGLE_NODE_EPOCH)?;
    if metadata.image().feature_level("metadata.version").is_none() {
        // What `kafka-storage format` writes: the metadata version, and the cluster-wide
        // `min.insync.replicas` as a dynamic default (Kafka 4.x does so for KIP-966).
        metadata.append(
            &[
                MetadataRecord::FeatureLevel {
                    name: "metadata.version".into(),
                    level: METADATA_VERSION_LEVEL,
                },
                MetadataRecord::Config(sluice_metadata::ConfigRecord {
                    resource_type: crate::broker::BROKER_RESOURCE,
                    resource_name: String::new(),
                    name: "min.insync.replicas".into(),
                    value: Some(config.get("min.insync.replicas").unwrap_or("1").to_string()),
                }),
            ],
            sluice_storage::now_ms(),
        )?;
    }
    tracing::info!(
        end_offset = metadata.end_offset(),
        topics = metadata.image().topics().count(),
        "replayed the metadata log"
    );
    let broker = Arc::new(Broker::new(
        config.clone(),
        cluster_id.unwrap_or_default(),
        managers,
        metadata,
    )?);
    let controller_listeners: Vec<String> = config
        .get("controller.listener.names")
        .unwrap_or("")
        .split(',')
        .map(|name| name.trim().to_string())
        .collect();
    let network = NetworkConfig {
        socket_request_max_bytes: config.socket_request_max_bytes(),
        ..NetworkConfig::default()
    };
    let request_metrics = Arc::new(RequestMetrics::default());
    let advertised = config.advertised_listeners();
    let mut servers = Vec::new();
    let mut endpoints = Vec::new();
    for listener in config
        .listeners()
        .into_iter()
        .filter(|l| !controller_listeners.contains(&l.name))
    {
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
        let server = Server::bind(address, network.clone(), broker.clone(), &listener.name)
            .await
            .map_err(|error| NodeError::Listener {
                listener: listener.name.clone(),
                reason: format!("cannot bind {address}: {error}"),
            })?
            .with_request_metrics(request_metrics.clone());
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
        endpoints.push(Endpoint {
            listener: listener.name.clone(),
            host: adv_host,
            port: adv_port,
        });
        servers.push((listener, bound, server));
    }
    if servers.is_empty() {
        return Err(NodeError::NoBrokerListener);
    }
    broker.register(&endpoints, directory_ids)?;
    let mut tasks = Vec::new();
    if let Some(metrics) = bind_metrics(&config, &broker, &request_metrics).await? {
        tasks.push(tokio::spawn(metrics.run(shutdown.clone())));
    }
    for (listener, bound, server) in servers {
        tasks.push(tokio::spawn(server.run(shutdown.clone())));
        on_listening(&listener, bound);
    }
    // Retention and checkpoints every log.retention.check.interval.ms; time-based
    // flushes (flush.ms) and deferred flushes of rolled segments every second.
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
    for task in tasks {
        let _ = task.await;
    }
    broker.shutdown()?;
    tracing::info!("shut down cleanly");
    Ok(())
}
