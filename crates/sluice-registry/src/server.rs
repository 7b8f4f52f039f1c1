//! Running a registry: its configuration (Confluent's keys: `listeners`,
//! `kafkastore.bootstrap.servers`, `kafkastore.topic`, `schema.compatibility.level`, ...),
//! start-up (the store reads `_schemas` to its end before the port opens) and shutdown.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::compatibility::CompatibilityLevel;
use crate::http::{App, router};
use crate::kafka_store::{KafkaStore, KafkaStoreConfig, StoreError};
use crate::leader::{ElectionConfig, Identity, Leadership};
use crate::registry::{Registry, RegistrySettings};

/// A registry's settings.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// `listeners`: the address to serve HTTP on (`http://127.0.0.1:8081`; port 0 picks one).
    pub listen: SocketAddr,
    pub store: KafkaStoreConfig,
    pub settings: RegistrySettings,
    /// `schema.registry.group.id` (default `schema-registry`).
    pub group_id: String,
    /// `leader.eligibility` (default true): whether this instance may be elected to write.
    pub leader_eligibility: bool,
    /// `host.name`: the host other instances reach this one at (default: the listen
    /// address, or 127.0.0.1 when that is the wildcard).
    pub host_name: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{key}: {reason}")]
    Invalid { key: String, reason: String },
    #[error("unknown registry config key {0}")]
    Unknown(String),
}

/// Why a registry did not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The store could not read or create `_schemas`.
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {address}: {source}")]
    Listen {
        address: SocketAddr,
        source: std::io::Error,
    },
    /// The client that forwards writes to the elected leader could not be built.
    #[error("cannot build the HTTP client for forwarding to the leader: {0}")]
    ForwardingClient(#[from] reqwest::Error),
}

/// Keys of Confluent's registry that are accepted and have no effect here (they configure
/// its Jetty server, its JVM or features Sluice leaves to the broker).
const IGNORED_KEYS: &[&str] = &[
    "debug",
    "kafkastore.security.protocol",
    "schema.registry.inter.instance.protocol",
    "access.control.allow.origin",
    "access.control.allow.methods",
];

impl RegistryConfig {
    pub fn new(bootstrap_servers: Vec<String>, listen: SocketAddr) -> RegistryConfig {
        RegistryConfig {
            listen,
            store: KafkaStoreConfig::new(bootstrap_servers),
            settings: RegistrySettings::default(),
            group_id: "schema-registry".to_string(),
            leader_eligibility: true,
            host_name: None,
        }
    }

    /// Reads Confluent's keys from a map (a `schema-registry.properties` file's entries).
    pub fn from_map(entries: &BTreeMap<String, String>) -> Result<RegistryConfig, ConfigError> {
        let invalid = |key: &str, reason: String| ConfigError::Invalid {
            key: key.to_string(),
            reason,
        };
        let mut config =
            RegistryConfig::new(Vec::new(), "0.0.0.0:8081".parse().expect("a valid address"));
        for (key, value) in entries {
            let value = value.trim();
            let millis = |value: &str| {
                value
                    .parse::<u64>()
                    .map(Duration::from_millis)
                    .map_err(|e| invalid(key, e.to_string()))
            };
            match key.as_str() {
                "listeners" => {
                    let first = value.split(',').next().unwrap_or("").trim();
                    let address = first
                        .strip_prefix("http://")
                        .ok_or_else(|| invalid(key, format!("{first}: only http:// is served")))?;
                    config.listen = parse_listen(address).map_err(|e| invalid(key, e))?;
                }
                "kafkastore.bootstrap.servers" => {
                    config.store.bootstrap_servers = value
                        .split(',')
                        .map(|server| server.trim().trim_start_matches("PLAINTEXT://").to_string())
                        .filter(|server| !server.is_empty())
                        .collect();
                }
                "kafkastore.topic" => {
                    if value.is_empty() {
                        return Err(invalid(key, "must not be empty".into()));
                    }
                    config.store.topic = value.to_string();
                }
                "kafkastore.topic.replication.factor" => {
                    config.store.replication_factor = value
                        .parse::<i16>()
                        .ok()
                        .filter(|factor| *factor >= 1)
                        .ok_or_else(|| invalid(key, format!("{value}: not a positive number")))?;
                }
                "kafkastore.timeout.ms" => config.store.timeout = millis(value)?,
                "kafkastore.init.timeout.ms" => config.store.init_timeout = millis(value)?,
                "schema.compatibility.level" | "avro.compatibility.level" => {
                    config.settings.default_compatibility = CompatibilityLevel::parse(value)
                        .ok_or_else(|| {
                            invalid(key, format!("{value}: not a compatibility level"))
                        })?;
                }
                "mode.mutability" => {
                    config.settings.mode_mutability = value
                        .parse::<bool>()
                        .map_err(|e| invalid(key, e.to_string()))?;
                }
                "schema.registry.group.id" => config.group_id = value.to_string(),
                "leader.eligibility" | "master.eligibility" => {
                    config.leader_eligibility = value
                        .parse::<bool>()
                        .map_err(|e| invalid(key, e.to_string()))?;
                }
                "host.name" => config.host_name = Some(value.to_string()),
                other if IGNORED_KEYS.contains(&other) => {}
                other => return Err(ConfigError::Unknown(other.to_string())),
            }
        }
        if config.store.bootstrap_servers.is_empty() {
            return Err(invalid(
                "kafkastore.bootstrap.servers",
                "required (the Kafka cluster that holds _schemas)".into(),
            ));
        }
        Ok(config)
    }
}

fn parse_listen(address: &str) -> Result<SocketAddr, String> {
    let address = address.trim_end_matches('/');
    if let Ok(parsed) = address.parse() {
        return Ok(parsed);
    }
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| format!("{address}: expected host:port"))?;
    let host = if host == "localhost" {
        "127.0.0.1"
    } else {
        host
    };
    format!("{host}:{port}")
        .parse()
        .map_err(|e| format!("{address}: {e}"))
}

/// A registry serving HTTP.
pub struct RunningRegistry {
    pub address: SocketAddr,
    pub app: Arc<App>,
    shutdown: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
}

impl RunningRegistry {
    /// `http://address`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Stops serving, waits for the requests in flight, and leaves the election group
    /// (another instance takes over at once).
    pub async fn shutdown(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        let _ = (&mut self.server).await;
        self.app.leadership.shutdown().await;
    }

    /// Waits until the server stops (it only stops on `shutdown` or an IO error).
    pub async fn wait(mut self) {
        let _ = (&mut self.server).await;
    }
}

/// Starts a registry: the store reads `_schemas` to its end, then the port opens.
pub async fn start(config: RegistryConfig) -> Result<RunningRegistry, StartError> {
    let store = KafkaStore::start(config.store.clone()).await?;
    let registry = Registry::new(store, config.settings.clone());
    let listen_error = |source| StartError::Listen {
        address: config.listen,
        source,
    };
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(listen_error)?;
    let address = listener.local_addr().map_err(listen_error)?;
    let host = config.host_name.clone().unwrap_or_else(|| {
        if address.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            address.ip().to_string()
        }
    });
    let leadership = Leadership::elect(ElectionConfig {
        bootstrap_servers: config.store.bootstrap_servers.clone(),
        group_id: config.group_id.clone(),
        identity: Identity {
            version: 1,
            host,
            port: address.port(),
            scheme: "http".to_string(),
            leader_eligibility: config.leader_eligibility,
        },
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(10),
        heartbeat_interval: Duration::from_secs(1),
    });
    let app = Arc::new(App {
        registry,
        leadership,
        http: reqwest::Client::builder()
            .timeout(config.store.timeout + Duration::from_secs(5))
            .build()?,
    });
    let (shutdown, signal) = oneshot::channel::<()>();
    let router = router(app.clone());
    let server = tokio::spawn(async move {
        let served = axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = signal.await;
            })
            .await;
        if let Err(e) = served {
            tracing::error!("registry HTTP server stopped: {e}");
        }
    });
    Ok(RunningRegistry {
        address,
        app,
        shutdown: Some(shutdown),
        server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confluent_keys_load_and_bad_values_are_named() {
        let entries: BTreeMap<String, String> = [
            ("listeners", "http://localhost:18081"),
            ("kafkastore.bootstrap.servers", "PLAINTEXT://127.0.0.1:9092"),
            ("schema.compatibility.level", "full_transitive"),
            ("kafkastore.topic", "_schemas2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let config = RegistryConfig::from_map(&entries).unwrap();
        assert_eq!(config.listen, "127.0.0.1:18081".parse().unwrap());
        assert_eq!(config.store.bootstrap_servers, ["127.0.0.1:9092"]);
        assert_eq!(
            config.settings.default_compatibility,
            CompatibilityLevel::FullTransitive
        );
        assert_eq!(config.store.topic, "_schemas2");

        for (key, value) in [
            ("schema.compatibility.level", "sideways"),
            ("listeners", "https://0.0.0.0:1"),
            ("kafkastore.timeout.ms", "soon"),
            ("no.such.key", "1"),
        ] {
            let mut bad = entries.clone();
            bad.insert(key.to_string(), value.to_string());
            let message = RegistryConfig::from_map(&bad).unwrap_err().to_string();
            assert!(message.contains(key), "{message}");
        }
        assert!(RegistryConfig::from_map(&BTreeMap::new()).is_err());
    }
}
