//! A Sluice node: opens its log directories, binds its broker listeners, serves until
//! told to stop, then shuts down cleanly (logs flushed, checkpoints and the clean-shutdown
//! marker written), as `kafka.Kafka` does on SIGTERM.
//!
//! The node keeps its metadata log (`__cluster_metadata-0`) in the first log directory
//! (Kafka's default for `metadata.log.dir`) and bootstraps it with the
//! `metadata.version` feature level on first start, as `kafka-storage format` does.
//!
//! Issue 3 in progress: the listeners answer ApiVersions only; the controller listener
//! is not bound yet.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use sluice_metadata::{MetadataLog, MetadataLogError, MetadataRecord};
use sluice_storage::LogManager;
use tokio::sync::watch;

use crate::config::{BrokerConfig, Listener};
use crate::network::{NetworkConfig, Server};

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("log directory {dir}: {source}")]
    LogDir {
        dir: PathBuf,
        #[source]
        source: sluice_storage::StorageError,
    },
    #[error("listener {listener}: {reason}")]
    Listener { listener: String, reason: String },
    #[error("no broker listener: listeners has only controller listeners")]
    NoBrokerListener,
    #[error("metadata log: {0}")]
    Metadata(#[from] MetadataLogError),
}

/// Kafka 4.1's `metadata.version` feature level (4.1-IV1), written at bootstrap.
pub const METADATA_VERSION_LEVEL: i16 = 27;
/// The controller epoch of a single-node quorum until the Raft quorum (issue 4).
const SINGLE_NODE_EPOCH: i32 = 1;

/// Runs the node until `shutdown` turns true. `on_listening` is told each bound address
/// (the port is the real one when the configuration asked for port 0).
pub async fn run(
    config: BrokerConfig,
    shutdown: watch::Receiver<bool>,
    on_listening: impl Fn(&Listener, SocketAddr),
) -> Result<(), NodeError> {
    let mut managers = Vec::new();
    for dir in config.log_dirs() {
        let manager =
            LogManager::open(&dir, config.log_config()).map_err(|source| NodeError::LogDir {
                dir: dir.clone(),
                source,
            })?;
        tracing::info!(dir = %dir.display(), clean = manager.was_clean_start(), partitions = manager.partitions().count(), "opened log directory");
        managers.push(manager);
    }
    let first = managers.first().ok_or_else(|| NodeError::Listener {
        listener: "log.dirs".into(),
        reason: "no log directory configured".into(),
    })?;
    let mut metadata = MetadataLog::open(first.dir(), first.was_clean_start(), SINGLE_NODE_EPOCH)?;
    if metadata.image().feature_level("metadata.version").is_none() {
        metadata.append(
            &[MetadataRecord::FeatureLevel {
                name: "metadata.version".into(),
                level: METADATA_VERSION_LEVEL,
            }],
            sluice_storage::now_ms(),
        )?;
    }
    tracing::info!(
        end_offset = metadata.end_offset(),
        topics = metadata.image().topics().count(),
        "replayed the metadata log"
    );
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
    let mut servers = Vec::new();
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
        let server = Server::bind(address, network.clone())
            .await
            .map_err(|error| NodeError::Listener {
                listener: listener.name.clone(),
                reason: format!("cannot bind {address}: {error}"),
            })?;
        let bound = server.local_addr().map_err(|error| NodeError::Listener {
            listener: listener.name.clone(),
            reason: error.to_string(),
        })?;
        on_listening(&listener, bound);
        servers.push(tokio::spawn(server.run(shutdown.clone())));
    }
    if servers.is_empty() {
        return Err(NodeError::NoBrokerListener);
    }
    for server in servers {
        let _ = server.await;
    }
    metadata.close()?;
    for manager in managers {
        let dir = manager.dir().to_path_buf();
        manager
            .shutdown()
            .map_err(|source| NodeError::LogDir { dir, source })?;
    }
    tracing::info!("shut down cleanly");
    Ok(())
}
