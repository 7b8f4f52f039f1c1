//! `sluice-connect`: a Kafka Connect-compatible connector runtime on `sluice-client`
//! (no broker internals). Connect's data model ([`data`]), [`converters`], single
//! message [`transforms`], the worker with its REST API and internal topics, and
//! connectors named as Kafka Connect's users know them.

use std::collections::BTreeMap;

pub mod config;
pub mod connectors;
pub mod converters;
pub mod data;
pub mod errors;
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
pub mod log;
pub mod loggers;
pub mod records;
pub mod rest;
pub mod transforms;
pub mod worker;

pub use config::WorkerConfig;
pub use worker::Worker;

/// A connector's, converter's or transform's configuration: Connect's string map.
pub type Props = BTreeMap<String, String>;

/// Configuration errors by key, as Connect's `ConfigDef` validation reports them
/// (`config/validate` answers each key's errors; creating a connector with any error
/// answers 400 with them joined).
#[derive(Debug, Clone, PartialEq, Eq, Default, thiserror::Error)]
#[error("{}", self.message())]
pub struct ConfigError {
    /// (key, message), in the order found.
    pub errors: Vec<(String, String)>,
}

impl ConfigError {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            errors: vec![(key.into(), message.into())],
        }
    }

    /// Connect's `ConfigException` text for one key: `Invalid value X for configuration
    /// K: reason`.
    pub fn invalid(key: &str, value: &str, reason: &str) -> ConfigError {
        ConfigError::new(
            key,
            format!("Invalid value {value} for configuration {key}: {reason}"),
        )
    }

    /// Connect's text for a required key with no value and no default.
    pub fn missing(key: &str) -> ConfigError {
        ConfigError::new(
            key,
            format!("Missing required configuration \"{key}\" which has no default value."),
        )
    }

    pub fn push(&mut self, other: ConfigError) {
        self.errors.extend(other.errors);
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn message(&self) -> String {
        self.errors
            .iter()
            .map(|(_, m)| m.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Runs a worker and its REST API until `shutdown` turns true: what `sluice connect
/// connect-distributed.properties` runs. Returns once the listener is closed and the
/// tasks stopped.
pub async fn serve(
    config: WorkerConfig,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    bound: Option<tokio::sync::oneshot::Sender<std::net::SocketAddr>>,
) -> Result<(), String> {
    let host = if config.rest_host.is_empty() {
        "0.0.0.0".to_string()
    } else {
        config.rest_host.clone()
    };
    let listener = tokio::net::TcpListener::bind((host.as_str(), config.rest_port))
        .await
        .map_err(|e| format!("cannot listen on {host}:{}: {e}", config.rest_port))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let mut config = config;
    if config.rest_port == 0 {
        // An ephemeral port (tests): the worker id carries the real one.
        config.rest_port = address.port();
        if !config.props.contains_key("rest.advertised.port") {
            config.advertised_port = address.port();
        }
    }
    let worker = Worker::start(config).await.map_err(|e| e.to_string())?;
    // Writes are answered 409 until the worker is in the group (as Connect's are): the
    // listening line waits for the first assignment, so a command run after it works.
    if !worker.wait_assigned(worker.config.rebalance_timeout).await {
        tracing::warn!("the worker has not joined its group yet; writes get 409 until it does");
    }
    tracing::info!(%address, worker_id = %worker.config.worker_id(), "Kafka Connect REST API listening");
    if let Some(bound) = bound {
        let _ = bound.send(address);
    }
    let router = rest::router(worker.clone());
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            while !*shutdown.borrow() {
                if shutdown.changed().await.is_err() {
                    break;
                }
            }
        })
        .await
        .map_err(|e| e.to_string())?;
    worker.shutdown().await;
    Ok(())
}
