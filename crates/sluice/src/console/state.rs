//! What every page and API handler shares: the cluster connection, the registry and
//! Connect endpoints, the lag monitor, the sampler's history, the console's settings;
//! and the API's one error shape.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::Context;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sluice_client::{Admin, ApiError as KafkaError, ClientConfig, Error as ClientError};
use sluice_monitor::config::Config as MonitorConfig;
use sluice_monitor::monitor::Monitor;
use tokio::sync::watch;

use super::sampler::Sampler;

/// The console's settings (`console.*` keys, and where its backends are).
#[derive(Clone, Debug)]
pub struct ConsoleConfig {
    pub bootstrap_servers: Vec<String>,
    /// `console.read.only`: no page offers, and the API refuses, any change.
    pub read_only: bool,
    /// `console.sample.interval.ms`: how often the sampler reads end offsets and group
    /// offsets (message rates, lag over time).
    pub sample_interval: Duration,
    /// `console.sample.history`: how many samples each series keeps.
    pub sample_history: usize,
    pub registry_url: Option<String>,
    pub connect_url: Option<String>,
    pub monitor_config: Option<PathBuf>,
    /// The name of the cluster in the monitor's configuration.
    pub monitor_cluster: String,
}

impl ConsoleConfig {
    pub fn new(bootstrap_servers: Vec<String>) -> ConsoleConfig {
        ConsoleConfig {
            bootstrap_servers,
            read_only: false,
            sample_interval: Duration::from_secs(5),
            sample_history: 720,
            registry_url: None,
            connect_url: None,
            monitor_config: None,
            monitor_cluster: "local".to_string(),
        }
    }

    /// Applies one `key=value` console setting; an unknown key or a bad value is an
    /// error naming it.
    pub fn set(&mut self, setting: &str) -> anyhow::Result<()> {
        let (key, value) = setting
            .split_once('=')
            .with_context(|| format!("'{setting}' is not key=value"))?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "console.read.only" => {
                self.read_only = match value {
                    "true" => true,
                    "false" => false,
                    _ => anyhow::bail!("console.read.only: '{value}' is not true or false"),
                }
            }
            "console.sample.interval.ms" => {
                let ms: u64 = value
                    .parse()
                    .ok()
                    .filter(|ms| (100..=3_600_000).contains(ms))
                    .with_context(|| {
                        format!("console.sample.interval.ms: '{value}' is not 100..3600000")
                    })?;
                self.sample_interval = Duration::from_millis(ms);
            }
            "console.sample.history" => {
                self.sample_history = value
                    .parse()
                    .ok()
                    .filter(|n| (2..=100_000).contains(n))
                    .with_context(|| {
                        format!("console.sample.history: '{value}' is not 2..100000")
                    })?;
            }
            "console.registry.url" => self.registry_url = Some(value.to_string()),
            "console.connect.url" => self.connect_url = Some(value.to_string()),
            "console.monitor.cluster" => self.monitor_cluster = value.to_string(),
            _ => anyhow::bail!(
                "unknown console setting '{key}' (known: console.read.only, \
                 console.sample.interval.ms, console.sample.history, console.registry.url, \
                 console.connect.url, console.monitor.cluster)"
            ),
        }
        Ok(())
    }
}

/// The state behind every handler.
pub struct Console {
    pub config: ConsoleConfig,
    pub admin: Admin,
    /// For the registry's and Connect's REST APIs.
    pub http: reqwest::Client,
    pub registry: Option<sluice_registry::client::SchemaRegistryClient>,
    /// Burrow's evaluation of every group; set once the monitor has started.
    pub monitor: Arc<OnceLock<Monitor>>,
    pub sampler: Sampler,
    /// Turns true when the console stops (tails and streams end).
    pub stop: watch::Receiver<bool>,
}

impl Console {
    /// Connects to the cluster, starts the monitor unless `monitor` is one this process
    /// already runs, and starts the sampler.
    pub async fn connect(
        config: ConsoleConfig,
        monitor: Option<Arc<OnceLock<Monitor>>>,
        stop: watch::Receiver<bool>,
    ) -> anyhow::Result<Arc<Console>> {
        let admin = Admin::connect(client_config(&config.bootstrap_servers))
            .await
            .with_context(|| {
                format!(
                    "connecting to the cluster at {}",
                    config.bootstrap_servers.join(",")
                )
            })?;
        let monitor = match monitor {
            Some(shared) => shared,
            None => {
                let monitor_config = match &config.monitor_config {
                    Some(path) => MonitorConfig::load(path)?,
                    None => MonitorConfig::for_servers(
                        &config.monitor_cluster,
                        config.bootstrap_servers.clone(),
                    ),
                };
                let monitor = Monitor::new(monitor_config)?;
                monitor.start(stop.clone());
                let slot = Arc::new(OnceLock::new());
                let _ = slot.set(monitor);
                slot
            }
        };
        let registry = match &config.registry_url {
            Some(url) => Some(
                sluice_registry::client::SchemaRegistryClient::from_url(url)
                    .map_err(|error| anyhow::anyhow!("the registry URL '{url}': {error}"))?,
            ),
            None => None,
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .context("building the HTTP client")?;
        let console = Arc::new(Console {
            sampler: Sampler::new(config.sample_history),
            config,
            admin,
            http,
            registry,
            monitor,
            stop,
        });
        super::sampler::start(console.clone());
        Ok(console)
    }

    /// The monitor, once it runs.
    pub fn monitor(&self) -> Option<&Monitor> {
        self.monitor.get()
    }

    /// A fresh client configuration for this cluster (consumers and producers of the
    /// message browser).
    pub fn client_config(&self) -> ClientConfig {
        client_config(&self.config.bootstrap_servers)
    }
}

fn client_config(bootstrap_servers: &[String]) -> ClientConfig {
    let mut config = ClientConfig::new(bootstrap_servers.to_vec());
    config.client_id = "sluice-console".to_string();
    config
}

/// The API's error: an HTTP status, a message for a person, the form field it is about
/// (the page shows it next to that field) and Kafka's error name when the cluster said
/// it. JSON: `{"error": {"message", "field", "code"}}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub field: Option<String>,
    pub code: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            field: None,
            code: None,
        }
    }

    /// A 400 about one field of the form.
    pub fn field(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message).on(field)
    }

    /// Points this error at a form field.
    pub fn on(mut self, field: &str) -> ApiError {
        self.field = Some(field.to_string());
        self
    }

    /// The cluster refused: Kafka's error name and message, as a 400 (409 for a topic
    /// that exists, 404 for one that does not).
    pub fn kafka(error: &KafkaError) -> ApiError {
        let name = error.code.name();
        let status = match name.as_str() {
            "TOPIC_ALREADY_EXISTS" => StatusCode::CONFLICT,
            "UNKNOWN_TOPIC_OR_PARTITION" | "GROUP_ID_NOT_FOUND" => StatusCode::NOT_FOUND,
            _ => StatusCode::BAD_REQUEST,
        };
        let message = match &error.message {
            Some(message) if !message.is_empty() => format!("{name}: {message}"),
            _ => name.clone(),
        };
        ApiError {
            status,
            message,
            field: None,
            code: Some(name),
        }
    }

    /// The request to the cluster failed (connection, timeout, protocol).
    pub fn client(error: &ClientError) -> ApiError {
        match error {
            ClientError::Api(api) => ApiError::kafka(api),
            other => ApiError::new(StatusCode::BAD_GATEWAY, format!("the cluster: {other}")),
        }
    }
}

impl From<ClientError> for ApiError {
    fn from(error: ClientError) -> ApiError {
        ApiError::client(&error)
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(error: anyhow::Error) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{error:#}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"error": {
                "message": self.message,
                "field": self.field,
                "code": self.code,
            }})),
        )
            .into_response()
    }
}

/// A handler's JSON result.
pub type ApiResult<T = Json<serde_json::Value>> = Result<T, ApiError>;
