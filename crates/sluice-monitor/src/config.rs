//! Burrow's configuration file, read as Burrow reads it: TOML as Burrow ships it
//! (`config/burrow.toml`) or YAML, with Burrow's sections (`general`, `logging`,
//! `zookeeper`, `client-profile`, `cluster`, `consumer`, `storage`, `evaluator`,
//! `httpserver`, `notifier`) and kebab-case keys.
//!
//! The guide's `burrow_config:` block (YAML, the sections nested under that one key, with
//! only `general`, `cluster` and `notifier`) is accepted as written: where Burrow would
//! need a section the guide leaves out, the default below stands in for it, as a reader
//! of the guide expects:
//! - no `consumer`: each cluster gets a `kafka` consumer of its own servers reading
//!   `__consumer_offsets` (the guide's monitor watches every group);
//! - no `storage`/`evaluator`: Burrow's `inmemory` storage and `caching` evaluator with
//!   Burrow's defaults;
//! - no `httpserver`: one on `:8000`, the address Burrow's sample config uses.
//!
//! A key Sluice does not know is an error naming it (`cluster.local: unknown field
//! "topic-refrsh"`), not a silently ignored typo. Keys Burrow has but Sluice does not
//! act on (log rotation, pid file) are accepted and said so in [`Config::warnings`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A configuration that could not be read, naming the file, section and key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not valid TOML: {message}")]
    Toml { path: String, message: String },
    #[error("{path}: not valid YAML: {message}")]
    Yaml { path: String, message: String },
    #[error("{section}: {message}")]
    Invalid { section: String, message: String },
}

fn invalid(section: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        section: section.into(),
        message: message.into(),
    }
}

/// `[general]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GeneralConfig {
    pub pidfile: Option<String>,
    pub stdout_logfile: Option<String>,
    /// Sent as `Access-Control-Allow-Origin` on every API response when set.
    pub access_control_allow_origin: Option<String>,
}

/// `[logging]`: accepted for compatibility; Sluice logs through `tracing` to stderr
/// (`RUST_LOG`), so only `level` is used.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LoggingConfig {
    pub filename: Option<String>,
    pub level: Option<String>,
    pub maxsize: Option<u64>,
    pub maxbackups: Option<u64>,
    pub maxage: Option<u64>,
    pub use_localtime: Option<bool>,
    pub use_compression: Option<bool>,
}

/// `[client-profile.NAME]`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClientProfile {
    pub client_id: Option<String>,
    /// Burrow pins a protocol version with this; Sluice's client negotiates versions
    /// with ApiVersions, so the value is accepted and not needed.
    pub kafka_version: Option<String>,
    pub tls: Option<String>,
    pub sasl: Option<String>,
}

/// `[cluster.NAME]`: where log end offsets and topics come from.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClusterConfig {
    #[serde(default = "default_kafka_class")]
    pub class_name: String,
    pub servers: Vec<String>,
    pub client_profile: Option<String>,
    /// Seconds between topic list refreshes (Burrow's default 60).
    #[serde(default = "default_topic_refresh")]
    pub topic_refresh: u64,
    /// Seconds between log end offset fetches (Burrow's default 10).
    #[serde(default = "default_offset_refresh")]
    pub offset_refresh: u64,
    /// Seconds between checks that dropped groups still exist (0, Burrow's default: off).
    #[serde(default)]
    pub groups_reaper_refresh: u64,
}

/// `[consumer.NAME]`: where committed offsets come from.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConsumerConfig {
    #[serde(default = "default_kafka_class")]
    pub class_name: String,
    pub cluster: String,
    pub servers: Vec<String>,
    pub client_profile: Option<String>,
    #[serde(default = "default_offsets_topic")]
    pub offsets_topic: String,
    /// Start at the end of `__consumer_offsets` instead of its beginning.
    #[serde(default)]
    pub start_latest: bool,
    /// With `start-latest`, still read the history once (Burrow's backfill).
    #[serde(default)]
    pub backfill_earliest: bool,
    pub group_allowlist: Option<String>,
    pub group_denylist: Option<String>,
    /// Burrow reports its own consumption of `__consumer_offsets` under this group.
    pub reported_consumer_group: Option<String>,
    // ZooKeeper consumers' keys, accepted so a Burrow file parses; the class is refused.
    pub zookeeper_path: Option<String>,
    pub zookeeper_timeout: Option<u64>,
}

/// `[httpserver.NAME]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HttpServerConfig {
    /// `host:port`; `:port` means every interface, as in Go.
    pub address: String,
    pub timeout: Option<u64>,
    pub tls: Option<String>,
}

fn default_kafka_class() -> String {
    "kafka".to_string()
}
fn default_topic_refresh() -> u64 {
    60
}
fn default_offset_refresh() -> u64 {
    10
}
fn default_offsets_topic() -> String {
    "__consumer_offsets".to_string()
}

/// A whole Burrow configuration. `storage`, `evaluator` and `notifier` sections are kept
/// as JSON values here and read into their modules' typed settings by those modules, so
/// each module owns its keys and their defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    pub general: GeneralConfig,
    pub logging: LoggingConfig,
    pub client_profiles: BTreeMap<String, ClientProfile>,
    pub clusters: BTreeMap<String, ClusterConfig>,
    pub consumers: BTreeMap<String, ConsumerConfig>,
    pub storage: BTreeMap<String, Value>,
    pub evaluators: BTreeMap<String, Value>,
    pub httpservers: BTreeMap<String, HttpServerConfig>,
    pub notifiers: BTreeMap<String, Value>,
    /// What the file asked for that Sluice accepts but does not act on.
    pub warnings: Vec<String>,
}

const SECTIONS: &[&str] = &[
    "general",
    "logging",
    "zookeeper",
    "client-profile",
    "cluster",
    "consumer",
    "storage",
    "evaluator",
    "httpserver",
    "notifier",
    "tls",
    "sasl",
];

impl Config {
    /// Reads a file: YAML when its name ends in `.yaml`/`.yml`, TOML otherwise (Burrow's
    /// own format).
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: name.clone(),
            source,
        })?;
        let yaml = matches!(
            path.extension().and_then(|extension| extension.to_str()),
            Some("yaml" | "yml")
        );
        if yaml {
            Config::from_yaml(&text, &name)
        } else {
            Config::from_toml(&text, &name)
        }
    }

    pub fn from_toml(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        let value: toml::Value = toml::from_str(text).map_err(|error| ConfigError::Toml {
            path: source_name.to_string(),
            message: error.to_string(),
        })?;
        let json = serde_json::to_value(value).map_err(|error| ConfigError::Toml {
            path: source_name.to_string(),
            message: error.to_string(),
        })?;
        Config::from_value(json)
    }

    pub fn from_yaml(text: &str, source_name: &str) -> Result<Config, ConfigError> {
        let value: Value = serde_yaml::from_str(text).map_err(|error| ConfigError::Yaml {
            path: source_name.to_string(),
            message: error.to_string(),
        })?;
        Config::from_value(value)
    }

    /// A configuration for one cluster at `servers` with every other section Burrow's
    /// default: what `sluice server --with-monitor` runs against its own node.
    pub fn for_servers(cluster: &str, servers: Vec<String>) -> Config {
        let mut config = Config::default();
        config.clusters.insert(
            cluster.to_string(),
            ClusterConfig {
                class_name: default_kafka_class(),
                servers,
                client_profile: None,
                topic_refresh: default_topic_refresh(),
                offset_refresh: default_offset_refresh(),
                groups_reaper_refresh: 0,
            },
        );
        config.fill_defaults();
        config
    }

    fn from_value(value: Value) -> Result<Config, ConfigError> {
        let root = match value {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            _ => return Err(invalid("(top level)", "expected a table of sections")),
        };
        // The guide nests everything under `burrow_config:`.
        let root = match root.get("burrow_config") {
            Some(Value::Object(inner)) if root.len() == 1 => inner.clone(),
            Some(_) if root.len() == 1 => {
                return Err(invalid("burrow_config", "expected a table of sections"));
            }
            _ => root,
        };
        let mut config = Config::default();
        for (section, body) in &root {
            if !SECTIONS.contains(&section.as_str()) {
                return Err(invalid(
                    section.clone(),
                    format!("unknown section (Burrow's are {})", SECTIONS.join(", ")),
                ));
            }
            match section.as_str() {
                "general" => config.general = typed(section, body)?,
                "logging" => {
                    config.logging = typed(section, body)?;
                    if config.logging.filename.is_some() {
                        config.warnings.push(
                            "logging.filename: Sluice logs to stderr (RUST_LOG sets the level)"
                                .to_string(),
                        );
                    }
                }
                "zookeeper" => config.warnings.push(
                    "zookeeper: not used (Burrow uses it only to elect one active instance)"
                        .to_string(),
                ),
                "tls" | "sasl" => {
                    return Err(invalid(
                        section.clone(),
                        "TLS and SASL client profiles are not supported by Sluice's monitor yet",
                    ));
                }
                "client-profile" => config.client_profiles = named(section, body)?,
                "cluster" => config.clusters = named(section, body)?,
                "consumer" => config.consumers = named(section, body)?,
                "storage" => config.storage = named(section, body)?,
                "evaluator" => config.evaluators = named(section, body)?,
                "httpserver" => config.httpservers = named(section, body)?,
                "notifier" => config.notifiers = named(section, body)?,
                _ => unreachable!("every name in SECTIONS is matched above"),
            }
        }
        if config.general.pidfile.is_some() || config.general.stdout_logfile.is_some() {
            config.warnings.push(
                "general.pidfile/stdout-logfile: not written (Sluice runs in the foreground)"
                    .to_string(),
            );
        }
        config.fill_defaults();
        config.validate()?;
        Ok(config)
    }

    fn fill_defaults(&mut self) {
        if self.consumers.is_empty() {
            for (name, cluster) in &self.clusters {
                self.consumers.insert(
                    name.clone(),
                    ConsumerConfig {
                        class_name: default_kafka_class(),
                        cluster: name.clone(),
                        servers: cluster.servers.clone(),
                        client_profile: cluster.client_profile.clone(),
                        offsets_topic: default_offsets_topic(),
                        start_latest: false,
                        backfill_earliest: false,
                        group_allowlist: None,
                        group_denylist: None,
                        reported_consumer_group: None,
                        zookeeper_path: None,
                        zookeeper_timeout: None,
                    },
                );
            }
        }
        if self.storage.is_empty() {
            self.storage.insert(
                "default".to_string(),
                serde_json::json!({"class-name": "inmemory"}),
            );
        }
        if self.evaluators.is_empty() {
            self.evaluators.insert(
                "default".to_string(),
                serde_json::json!({"class-name": "caching"}),
            );
        }
        if self.httpservers.is_empty() {
            self.httpservers.insert(
                "default".to_string(),
                HttpServerConfig {
                    address: ":8000".to_string(),
                    timeout: None,
                    tls: None,
                },
            );
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.clusters.is_empty() {
            return Err(invalid("cluster", "at least one cluster is needed"));
        }
        for (name, cluster) in &self.clusters {
            let section = format!("cluster.{name}");
            if cluster.class_name != "kafka" {
                return Err(invalid(
                    section,
                    format!("class-name {:?}: only \"kafka\" exists", cluster.class_name),
                ));
            }
            if cluster.servers.is_empty() {
                return Err(invalid(
                    section,
                    "servers: at least one host:port is needed",
                ));
            }
            if cluster.offset_refresh == 0 || cluster.topic_refresh == 0 {
                return Err(invalid(
                    section,
                    "offset-refresh and topic-refresh must be at least 1 second",
                ));
            }
            self.check_profile(&section, cluster.client_profile.as_deref())?;
        }
        for (name, consumer) in &self.consumers {
            let section = format!("consumer.{name}");
            match consumer.class_name.as_str() {
                "kafka" => {}
                "kafka_zk" => {
                    return Err(invalid(
                        section,
                        "class-name \"kafka_zk\": offsets kept in ZooKeeper belong to Kafka \
                         before 0.9; Sluice (and Kafka 4) keep them in __consumer_offsets, \
                         read by class-name \"kafka\"",
                    ));
                }
                other => {
                    return Err(invalid(
                        section,
                        format!("class-name {other:?}: only \"kafka\" exists"),
                    ));
                }
            }
            if !self.clusters.contains_key(&consumer.cluster) {
                return Err(invalid(
                    section,
                    format!("cluster {:?} is not a [cluster] section", consumer.cluster),
                ));
            }
            if consumer.servers.is_empty() {
                return Err(invalid(
                    section,
                    "servers: at least one host:port is needed",
                ));
            }
            for (key, pattern) in [
                ("group-allowlist", &consumer.group_allowlist),
                ("group-denylist", &consumer.group_denylist),
            ] {
                if let Some(pattern) = pattern
                    && let Err(error) = regex::Regex::new(pattern)
                {
                    return Err(invalid(section, format!("{key}: {error}")));
                }
            }
            self.check_profile(&section, consumer.client_profile.as_deref())?;
        }
        for (name, server) in &self.httpservers {
            if let Err(message) = listen_address(&server.address) {
                return Err(invalid(format!("httpserver.{name}"), message));
            }
            if server.tls.is_some() {
                return Err(invalid(
                    format!("httpserver.{name}"),
                    "tls: HTTPS for the API is not supported yet",
                ));
            }
        }
        Ok(())
    }

    fn check_profile(&self, section: &str, profile: Option<&str>) -> Result<(), ConfigError> {
        let Some(profile) = profile else {
            return Ok(());
        };
        let Some(found) = self.client_profiles.get(profile) else {
            return Err(invalid(
                section,
                format!("client-profile {profile:?} is not a [client-profile] section"),
            ));
        };
        if found.tls.is_some() || found.sasl.is_some() {
            return Err(invalid(
                format!("client-profile.{profile}"),
                "tls/sasl: not supported by Sluice's monitor yet",
            ));
        }
        Ok(())
    }

    /// The client id a module connects with: its profile's, else Burrow's `burrow-lagchecker`.
    pub fn client_id(&self, profile: Option<&str>) -> String {
        profile
            .and_then(|name| self.client_profiles.get(name))
            .and_then(|profile| profile.client_id.clone())
            .unwrap_or_else(|| "burrow-lagchecker".to_string())
    }

    /// Reads section `kind.name` (kept as JSON) into a module's typed settings.
    pub fn module<T: DeserializeOwned>(
        kind: &str,
        name: &str,
        body: &Value,
    ) -> Result<T, ConfigError> {
        typed(&format!("{kind}.{name}"), body)
    }
}

/// Go's listen address to a socket address: `:8000` is every interface.
pub fn listen_address(address: &str) -> Result<std::net::SocketAddr, String> {
    let full = if address.starts_with(':') {
        format!("0.0.0.0{address}")
    } else {
        address.to_string()
    };
    full.parse()
        .map_err(|error| format!("address {address:?}: {error} (expected host:port or :port)"))
}

fn typed<T: DeserializeOwned>(section: &str, body: &Value) -> Result<T, ConfigError> {
    T::deserialize(body).map_err(|error| invalid(section, error.to_string()))
}

fn named<T: DeserializeOwned>(
    section: &str,
    body: &Value,
) -> Result<BTreeMap<String, T>, ConfigError> {
    let Value::Object(entries) = body else {
        return Err(invalid(section, "expected named tables ([section.name])"));
    };
    entries
        .iter()
        .map(|(name, value)| Ok((name.clone(), typed(&format!("{section}.{name}"), value)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guide's `burrow_config` block, as written but for host names.
    const GUIDE: &str = r#"
burrow_config:
  general:
    pidfile: "/var/run/burrow.pid"
    stdout-logfile: "/var/log/burrow.log"

  cluster:
    kafka-prod:
      class-name: kafka
      servers: ["127.0.0.1:9092", "127.0.0.1:9093", "127.0.0.1:9094"]
      topic-refresh: 120
      offset-refresh: 30

  notifier:
    slack:
      class-name: http
      url-open: "https://hooks.slack.com/services/xxx/yyy/zzz"
      send-close: true
"#;

    #[test]
    fn the_guides_block_reads_as_written() {
        let config = Config::from_yaml(GUIDE, "guide.yaml").expect("the guide's block is valid");
        let cluster = &config.clusters["kafka-prod"];
        assert_eq!(cluster.servers.len(), 3);
        assert_eq!((cluster.topic_refresh, cluster.offset_refresh), (120, 30));
        let consumer = &config.consumers["kafka-prod"];
        assert_eq!(consumer.cluster, "kafka-prod");
        assert_eq!(consumer.offsets_topic, "__consumer_offsets");
        assert_eq!(config.notifiers["slack"]["send-close"], Value::Bool(true));
        assert_eq!(config.httpservers["default"].address, ":8000");
        assert!(
            config
                .warnings
                .iter()
                .any(|warning| warning.contains("pidfile"))
        );
    }

    #[test]
    fn burrows_shipped_toml_reads_but_for_its_zookeeper_consumer() {
        // Burrow's config/burrow.toml (commit ced55ba9), less its kafka_zk consumer,
        // which is refused (tested below), and its commented-out TLS/IAM lines.
        let shipped = r#"
[general]
pidfile="burrow.pid"
stdout-logfile="burrow.out"
access-control-allow-origin="mysite.example.com"

[logging]
filename="logs/burrow.log"
level="info"
maxsize=100
maxbackups=30
maxage=10
use-localtime=false
use-compression=true

[zookeeper]
servers=[ "zkhost01.example.com:2181", "zkhost02.example.com:2181", "zkhost03.example.com:2181" ]
timeout=6
root-path="/burrow"

[client-profile.test]
client-id="burrow-test"
kafka-version="0.10.0"

[cluster.local]
class-name="kafka"
servers=[ "kafka01.example.com:10251", "kafka02.example.com:10251", "kafka03.example.com:10251" ]
client-profile="test"
topic-refresh=120
offset-refresh=30
groups-reaper-refresh=0

[consumer.local]
class-name="kafka"
cluster="local"
servers=[ "kafka01.example.com:10251", "kafka02.example.com:10251", "kafka03.example.com:10251" ]
client-profile="test"
group-denylist="^(console-consumer-|python-kafka-consumer-|quick-).*$"
group-allowlist=""

[httpserver.default]
address=":8000"

[storage.default]
class-name="inmemory"
workers=20
intervals=15
expire-group=604800
min-distance=1

[notifier.default]
class-name="http"
url-open="http://someservice.example.com:1467/v1/event"
interval=60
timeout=5
keepalive=30
extras={ api_key="REDACTED", app="burrow", tier="STG", fabric="mydc" }
template-open="conf/default-http-post.tmpl"
template-close="conf/default-http-delete.tmpl"
method-close="DELETE"
send-close=true
threshold=1
"#;
        let config = Config::from_toml(shipped, "burrow.toml").expect("Burrow's sample parses");
        assert_eq!(
            config.client_id(config.clusters["local"].client_profile.as_deref()),
            "burrow-test"
        );
        assert_eq!(config.storage["default"]["intervals"], 15);
        assert_eq!(
            config.consumers["local"].group_denylist.as_deref(),
            Some("^(console-consumer-|python-kafka-consumer-|quick-).*$")
        );
        assert_eq!(
            listen_address(&config.httpservers["default"].address),
            Ok("0.0.0.0:8000".parse().expect("literal"))
        );
    }

    #[test]
    fn bad_files_are_refused_naming_the_key() {
        let cases: &[(&str, &str)] = &[
            (
                "[cluster.local]\nservers=[\"a:1\"]\ntopic-refrsh=5\n",
                "cluster.local: unknown field `topic-refrsh`",
            ),
            (
                "[cluster.local]\nclass-name=\"kafka\"\n",
                "cluster.local: missing field `servers`",
            ),
            (
                "[clusters.local]\nservers=[\"a:1\"]\n",
                "clusters: unknown section",
            ),
            (
                "[general]\npidfile=\"x\"\n",
                "cluster: at least one cluster is needed",
            ),
            (
                "[cluster.a]\nservers=[\"a:1\"]\n[consumer.c]\ncluster=\"b\"\nservers=[\"a:1\"]\n",
                "consumer.c: cluster \"b\" is not a [cluster] section",
            ),
            (
                "[cluster.a]\nservers=[\"a:1\"]\n[consumer.c]\nclass-name=\"kafka_zk\"\ncluster=\"a\"\nservers=[\"z:2181\"]\n",
                "consumer.c: class-name \"kafka_zk\"",
            ),
            (
                "[cluster.a]\nservers=[\"a:1\"]\n[consumer.c]\ncluster=\"a\"\nservers=[\"a:1\"]\ngroup-denylist=\"(\"\n",
                "consumer.c: group-denylist:",
            ),
            (
                "[cluster.a]\nservers=[\"a:1\"]\noffset-refresh=\"often\"\n",
                "cluster.a: invalid type: string \"often\"",
            ),
            (
                "[cluster.a]\nservers=[\"a:1\"]\n[httpserver.x]\naddress=\"nowhere\"\n",
                "httpserver.x: address \"nowhere\"",
            ),
            ("[cluster.a\nservers=1", "not valid TOML"),
        ];
        for (text, expected) in cases {
            let error = Config::from_toml(text, "t.toml")
                .expect_err(text)
                .to_string();
            assert!(
                error.contains(expected),
                "{text:?}: got {error:?}, expected {expected:?}"
            );
        }
        let error = Config::from_yaml("cluster: [1, 2", "t.yaml")
            .expect_err("bad yaml")
            .to_string();
        assert!(error.contains("t.yaml: not valid YAML"), "{error}");
    }
}
