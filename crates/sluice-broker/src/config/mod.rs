//! The broker's configuration: Kafka's `server.properties` keys, types, defaults and
//! validation, so an operator's existing files and habits carry over.
//!
//! Sources, later ones winning: Kafka's code defaults; then either the embedded default
//! file (Kafka's shipped `config/server.properties` values where they differ from its
//! code defaults, bound to 127.0.0.1) or the operator's `--config` file; then `--set`
//! overrides. A key Sluice does not know is a warning (it may be a Kafka key Sluice does
//! not implement yet); a value that does not parse or is out of range is an error that
//! names the key and what it accepts.
//!
//! This is the static configuration only. Dynamic broker configs and topic configs are
//! `ConfigRecord`s in the metadata image, written by the config handlers (AlterConfigs,
//! IncrementalAlterConfigs); [`crate::topic_config`] layers them over this configuration
//! and holds the synonyms and sources DescribeConfigs reports.

use std::collections::BTreeMap;
use std::path::PathBuf;

use sluice_protocol::TimestampType;
use sluice_storage::LogConfig;

use crate::properties::{self, PropertiesError};

mod authorizer;
mod jaas;
mod settings;
pub use authorizer::STANDARD_AUTHORIZER;
pub use jaas::{JaasModule, ListenerSasl, parse_jaas, plain_users};
pub use settings::{
    CleanerSettings, ControllerSettings, DynamicConfig, DynamicSettings, FetchLimits,
    InternalTopicSettings, ListenerSettings, NetworkSettings, QuorumSettings, SecurityProtocol,
    Settings, TopicDefaults,
};

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value {value:?} for configuration {key}: {reason}")]
    Invalid {
        key: String,
        value: String,
        reason: String,
    },
    #[error("missing required configuration {key}: {reason}")]
    Missing {
        key: &'static str,
        reason: &'static str,
    },
    #[error("{0}")]
    Properties(#[from] PropertiesError),
}

/// What a key accepts.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A Java `int` at least `min`.
    Int {
        min: i64,
    },
    /// A Java `long` at least `min`.
    Long {
        min: i64,
    },
    /// A Java `double` in `min..=max`.
    Double {
        min: f64,
        max: f64,
    },
    Bool,
    Text,
    List,
    /// One of these (Kafka matches some case-insensitively; Sluice as Kafka does for
    /// each key: exact here).
    Choice(&'static [&'static str]),
    /// A comma-separated subset of these.
    Subset(&'static [&'static str]),
    /// `NAME://host:port,...`
    Listeners,
}

struct Definition {
    key: &'static str,
    kind: Kind,
    /// Kafka's code default; `None` when Kafka has none (unset, or required).
    default: Option<&'static str>,
}

const fn def(key: &'static str, kind: Kind, default: Option<&'static str>) -> Definition {
    Definition { key, kind, default }
}

const INT_MIN: i64 = i32::MIN as i64;
const LONG_MIN: i64 = i64::MIN;

/// The keys Sluice reads, with Kafka 4.1's types and code defaults.
/// The per-listener keys Sluice reads (`listener.name.<listener>.<key>`).
const LISTENER_KEYS: &[fn(&str) -> bool] = &[
    |key| key == "sasl.enabled.mechanisms",
    // TLS (`ssl.*`, [`crate::tls::SSL_KEYS`]), per listener and broker-wide.
    crate::tls::is_ssl_key,
    |key| {
        key.strip_suffix(".sasl.jaas.config")
            .is_some_and(|mechanism| {
                [
                    "plain",
                    "scram-sha-256",
                    "scram-sha-512",
                    "oauthbearer",
                    "gssapi",
                ]
                .contains(&mechanism)
            })
    },
];

const DEFINITIONS: &[Definition] = &[
    def("node.id", Kind::Int { min: 0 }, None),
    def(
        "process.roles",
        Kind::Subset(&["broker", "controller"]),
        None,
    ),
    def("listeners", Kind::Listeners, Some("PLAINTEXT://:9092")),
    def("advertised.listeners", Kind::Listeners, None),
    def("controller.listener.names", Kind::List, None),
    def("controller.quorum.voters", Kind::List, Some("")),
    def("controller.quorum.bootstrap.servers", Kind::List, Some("")),
    def("inter.broker.listener.name", Kind::Text, None),
    def("broker.rack", Kind::Text, None),
    // Authorization (KIP-801's StandardAuthorizer; config/authorizer.rs).
    def("authorizer.class.name", Kind::Text, Some("")),
    def("super.users", Kind::Text, Some("")),
    def("allow.everyone.if.no.acl.found", Kind::Bool, Some("false")),
    // SASL (KIP-43). Per listener: `listener.name.<listener>.sasl.enabled.mechanisms`
    // and `listener.name.<listener>.<mechanism>.sasl.jaas.config` ([`LISTENER_KEYS`]).
    def("sasl.enabled.mechanisms", Kind::List, Some("GSSAPI")),
    def(
        "sasl.mechanism.inter.broker.protocol",
        Kind::Text,
        Some("GSSAPI"),
    ),
    def(
        "sasl.mechanism.controller.protocol",
        Kind::Text,
        Some("GSSAPI"),
    ),
    def(
        "sasl.server.max.receive.size",
        Kind::Int { min: 1 },
        Some("524288"),
    ),
    def(
        "connection.failed.authentication.delay.ms",
        Kind::Int { min: 0 },
        Some("100"),
    ),
    def(
        "controller.quorum.election.timeout.ms",
        Kind::Int { min: 0 },
        Some("1000"),
    ),
    def(
        "controller.quorum.fetch.timeout.ms",
        Kind::Int { min: 0 },
        Some("2000"),
    ),
    // Sluice's: openraft counts entries between snapshots where Kafka counts bytes
    // (`metadata.log.max.record.bytes.between.snapshots`).
    def(
        "metadata.log.max.entries.between.snapshots",
        Kind::Long { min: 1 },
        Some("5000"),
    ),
    def(
        "broker.heartbeat.interval.ms",
        Kind::Int { min: 1 },
        Some("2000"),
    ),
    // How long a starting node waits for the quorum (a leader elected, or joining it as
    // a learner) before it exits, as Kafka's broker waits for its first registration.
    def(
        "initial.broker.registration.timeout.ms",
        Kind::Int { min: 1 },
        Some("60000"),
    ),
    def(
        "broker.session.timeout.ms",
        Kind::Int { min: 1 },
        Some("9000"),
    ),
    def("controlled.shutdown.enable", Kind::Bool, Some("true")),
    def("auto.leader.rebalance.enable", Kind::Bool, Some("true")),
    def(
        "leader.imbalance.check.interval.seconds",
        Kind::Long { min: 1 },
        Some("300"),
    ),
    def(
        "leader.imbalance.per.broker.percentage",
        Kind::Int { min: 0 },
        Some("10"),
    ),
    def(
        "replica.lag.time.max.ms",
        Kind::Long { min: 0 },
        Some("30000"),
    ),
    // The most a consumer's Fetch response carries, whatever its `max_bytes` asks
    // (Kafka's default, 55 MiB); a follower's is `replica.fetch.response.max.bytes`.
    def("fetch.max.bytes", Kind::Int { min: 1024 }, Some("57671680")),
    // Connection limits (Kafka's ConnectionQuotas; see `connection_quotas`).
    def("max.connections", Kind::Int { min: 0 }, Some("2147483647")),
    def(
        "max.connections.per.ip",
        Kind::Int { min: 0 },
        Some("2147483647"),
    ),
    def("max.connections.per.ip.overrides", Kind::Text, Some("")),
    // A connection with no request read and no response written for this long is
    // closed (Kafka's default, 10 minutes); a client trickling one request's bytes
    // counts as idle.
    def(
        "connections.max.idle.ms",
        Kind::Long { min: 1 },
        Some("600000"),
    ),
    // Requests held between reading and answering them (`network::RequestPool`).
    def("queued.max.requests", Kind::Int { min: 1 }, Some("500")),
    def(
        "queued.max.request.bytes",
        Kind::Long { min: -1 },
        Some("-1"),
    ),
    def("num.replica.fetchers", Kind::Int { min: 1 }, Some("1")),
    def(
        "replica.fetch.max.bytes",
        Kind::Int { min: 0 },
        Some("1048576"),
    ),
    def(
        "replica.fetch.response.max.bytes",
        Kind::Int { min: 0 },
        Some("10485760"),
    ),
    def(
        "replica.socket.timeout.ms",
        Kind::Int { min: 1 },
        Some("30000"),
    ),
    def(
        "replica.fetch.wait.max.ms",
        Kind::Int { min: 0 },
        Some("500"),
    ),
    def("replica.fetch.min.bytes", Kind::Int { min: 0 }, Some("1")),
    def(
        "replica.fetch.backoff.ms",
        Kind::Int { min: 0 },
        Some("1000"),
    ),
    def(
        "replica.high.watermark.checkpoint.interval.ms",
        Kind::Long { min: 0 },
        Some("5000"),
    ),
    def(
        "listener.security.protocol.map",
        Kind::List,
        Some(
            "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        ),
    ),
    def("log.dirs", Kind::List, None),
    def("log.dir", Kind::Text, Some("/tmp/kafka-logs")),
    def("num.partitions", Kind::Int { min: 1 }, Some("1")),
    def(
        "default.replication.factor",
        Kind::Int { min: 1 },
        Some("1"),
    ),
    def("auto.create.topics.enable", Kind::Bool, Some("true")),
    def("delete.topic.enable", Kind::Bool, Some("true")),
    def(
        "log.segment.bytes",
        Kind::Int { min: 14 },
        Some("1073741824"),
    ),
    def("log.roll.hours", Kind::Int { min: 1 }, Some("168")),
    def("log.roll.ms", Kind::Long { min: 1 }, None),
    def(
        "log.retention.hours",
        Kind::Int { min: INT_MIN },
        Some("168"),
    ),
    def("log.retention.minutes", Kind::Int { min: INT_MIN }, None),
    def("log.retention.ms", Kind::Long { min: -1 }, None),
    def(
        "log.retention.bytes",
        Kind::Long { min: LONG_MIN },
        Some("-1"),
    ),
    def(
        "log.retention.check.interval.ms",
        Kind::Long { min: 1 },
        Some("300000"),
    ),
    def(
        "log.index.interval.bytes",
        Kind::Int { min: 0 },
        Some("4096"),
    ),
    def(
        "log.index.size.max.bytes",
        Kind::Int { min: 12 },
        Some("10485760"),
    ),
    def(
        "log.flush.interval.messages",
        Kind::Long { min: 1 },
        Some("9223372036854775807"),
    ),
    def("log.flush.interval.ms", Kind::Long { min: 0 }, None),
    def(
        "log.flush.scheduler.interval.ms",
        Kind::Long { min: 0 },
        Some("9223372036854775807"),
    ),
    def(
        "log.message.timestamp.type",
        Kind::Choice(&["CreateTime", "LogAppendTime"]),
        Some("CreateTime"),
    ),
    def(
        "log.cleanup.policy",
        Kind::Subset(&["delete", "compact"]),
        Some("delete"),
    ),
    def("message.max.bytes", Kind::Int { min: 0 }, Some("1048588")),
    def(
        "socket.request.max.bytes",
        Kind::Int { min: 1 },
        Some("104857600"),
    ),
    def(
        "socket.send.buffer.bytes",
        Kind::Int { min: INT_MIN },
        Some("102400"),
    ),
    def(
        "socket.receive.buffer.bytes",
        Kind::Int { min: INT_MIN },
        Some("102400"),
    ),
    def("num.io.threads", Kind::Int { min: 1 }, Some("8")),
    def(
        "max.incremental.fetch.session.cache.slots",
        Kind::Int { min: 0 },
        Some("1000"),
    ),
    def("num.network.threads", Kind::Int { min: 1 }, Some("3")),
    // Sluice's own: where the Prometheus endpoint listens; empty turns it off.
    def("metrics.listener", Kind::Text, Some("127.0.0.1:9404")),
    def(
        "num.recovery.threads.per.data.dir",
        Kind::Int { min: 1 },
        Some("2"),
    ),
    def(
        "offsets.topic.replication.factor",
        Kind::Int { min: 1 },
        Some("3"),
    ),
    def(
        "offsets.topic.num.partitions",
        Kind::Int { min: 1 },
        Some("50"),
    ),
    def(
        "transaction.state.log.replication.factor",
        Kind::Int { min: 1 },
        Some("3"),
    ),
    def(
        "transaction.state.log.min.isr",
        Kind::Int { min: 1 },
        Some("2"),
    ),
    def(
        "transaction.state.log.num.partitions",
        Kind::Int { min: 1 },
        Some("50"),
    ),
    def(
        "transaction.state.log.segment.bytes",
        Kind::Int { min: 1 },
        Some("104857600"),
    ),
    def(
        "transaction.max.timeout.ms",
        Kind::Int { min: 1 },
        Some("900000"),
    ),
    def(
        "transactional.id.expiration.ms",
        Kind::Int { min: 1 },
        Some("604800000"),
    ),
    def(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        Kind::Int { min: 1 },
        Some("10000"),
    ),
    def(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        Kind::Int { min: 1 },
        Some("3600000"),
    ),
    def(
        "transaction.partition.verification.enable",
        Kind::Bool,
        Some("true"),
    ),
    def(
        "share.coordinator.state.topic.replication.factor",
        Kind::Int { min: 1 },
        Some("3"),
    ),
    def(
        "share.coordinator.state.topic.min.isr",
        Kind::Int { min: 1 },
        Some("2"),
    ),
    def(
        "group.initial.rebalance.delay.ms",
        Kind::Int { min: 0 },
        Some("3000"),
    ),
    def(
        "group.min.session.timeout.ms",
        Kind::Int { min: 0 },
        Some("6000"),
    ),
    def(
        "group.max.session.timeout.ms",
        Kind::Int { min: 0 },
        Some("1800000"),
    ),
    def("group.max.size", Kind::Int { min: 1 }, Some("2147483647")),
    def(
        "group.coordinator.rebalance.protocols",
        Kind::Subset(&["classic", "consumer"]),
        Some("classic,consumer"),
    ),
    def(
        "group.consumer.session.timeout.ms",
        Kind::Int { min: 1 },
        Some("45000"),
    ),
    def(
        "group.consumer.heartbeat.interval.ms",
        Kind::Int { min: 1 },
        Some("5000"),
    ),
    def(
        "group.consumer.min.session.timeout.ms",
        Kind::Int { min: 1 },
        Some("45000"),
    ),
    def(
        "group.consumer.max.session.timeout.ms",
        Kind::Int { min: 1 },
        Some("60000"),
    ),
    def(
        "group.consumer.min.heartbeat.interval.ms",
        Kind::Int { min: 1 },
        Some("5000"),
    ),
    def(
        "group.consumer.max.heartbeat.interval.ms",
        Kind::Int { min: 1 },
        Some("15000"),
    ),
    def(
        "group.consumer.max.size",
        Kind::Int { min: 1 },
        Some("2147483647"),
    ),
    def(
        "group.consumer.migration.policy",
        Kind::Choice(&["disabled", "upgrade", "downgrade", "bidirectional"]),
        Some("bidirectional"),
    ),
    def(
        "group.consumer.assignors",
        Kind::Subset(&["uniform", "range"]),
        Some("uniform,range"),
    ),
    def(
        "offsets.retention.minutes",
        Kind::Int { min: 1 },
        Some("10080"),
    ),
    def(
        "offsets.retention.check.interval.ms",
        Kind::Int { min: 1 },
        Some("600000"),
    ),
    def(
        "offsets.commit.timeout.ms",
        Kind::Int { min: 1 },
        Some("5000"),
    ),
    def(
        "offset.metadata.max.bytes",
        Kind::Int { min: 0 },
        Some("4096"),
    ),
    def(
        "offsets.topic.segment.bytes",
        Kind::Int { min: 1 },
        Some("104857600"),
    ),
    def(
        "offsets.topic.compression.codec",
        Kind::Int { min: 0 },
        Some("0"),
    ),
    def(
        "producer.id.expiration.ms",
        Kind::Int { min: 1 },
        Some("86400000"),
    ),
    def("min.insync.replicas", Kind::Int { min: 1 }, Some("1")),
    def("log.cleaner.enable", Kind::Bool, Some("true")),
    def("log.cleaner.threads", Kind::Int { min: 0 }, Some("1")),
    def(
        "log.cleaner.backoff.ms",
        Kind::Long { min: 0 },
        Some("15000"),
    ),
    def(
        "log.cleaner.dedupe.buffer.size",
        Kind::Long { min: 0 },
        Some("134217728"),
    ),
    def(
        "log.cleaner.io.buffer.size",
        Kind::Int { min: 0 },
        Some("524288"),
    ),
    def(
        "log.cleaner.io.buffer.load.factor",
        Kind::Double {
            min: 0.0,
            max: f64::MAX,
        },
        Some("0.9"),
    ),
    def(
        "log.cleaner.io.max.bytes.per.second",
        Kind::Double {
            min: 0.0,
            max: f64::MAX,
        },
        Some("1.7976931348623157E308"),
    ),
    def(
        "log.cleaner.min.cleanable.ratio",
        Kind::Double { min: 0.0, max: 1.0 },
        Some("0.5"),
    ),
    def(
        "log.cleaner.min.compaction.lag.ms",
        Kind::Long { min: 0 },
        Some("0"),
    ),
    def(
        "log.cleaner.max.compaction.lag.ms",
        Kind::Long { min: 1 },
        Some("9223372036854775807"),
    ),
    def(
        "log.cleaner.delete.retention.ms",
        Kind::Long { min: 0 },
        Some("86400000"),
    ),
    def("unclean.leader.election.enable", Kind::Bool, Some("false")),
    def(
        "compression.type",
        Kind::Choice(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        Some("producer"),
    ),
];

/// The embedded default file: Kafka 4.1's shipped `config/server.properties` (a one-node
/// KRaft cluster with both roles), bound to 127.0.0.1 and with Sluice's data directory.
pub const EMBEDDED_SERVER_PROPERTIES: &str = "\
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
inter.broker.listener.name=PLAINTEXT
advertised.listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/sluice-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
";

/// A node's role (`process.roles`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Broker,
    Controller,
}

/// One `listeners` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    /// Empty for all interfaces, as in Kafka.
    pub host: String,
    pub port: u16,
}

/// A validated broker configuration.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// Every known key that has a value (explicit or Kafka's default).
    values: BTreeMap<&'static str, String>,
    /// The keys set by the properties text or an override (not Kafka's default).
    explicit: std::collections::BTreeSet<&'static str>,
    /// Per-listener keys, `listener.name.<listener>.<key>` (the listener name in lower
    /// case, as Kafka's `ListenerName.configPrefix`).
    listener_values: BTreeMap<String, String>,
    /// The values typed, once, at load.
    settings: std::sync::Arc<Settings>,
    /// SCRAM credentials written when this node bootstraps the cluster (`sluice server
    /// --add-scram`, as `kafka-storage format --add-scram`); ignored once it exists.
    bootstrap_scram: Vec<sluice_metadata::UserScramCredentialRecord>,
}

/// A configuration and the warnings it produced (unknown keys).
#[derive(Debug)]
pub struct Loaded {
    pub config: BrokerConfig,
    pub warnings: Vec<String>,
}

impl crate::tls::SslKeySource for BrokerConfig {
    fn listener_value(&self, listener: &str, key: &str) -> Option<&str> {
        BrokerConfig::listener_value(self, listener, key)
    }

    fn security_value(&self, listener: &str, key: &str) -> Option<&str> {
        BrokerConfig::security_value(self, listener, key)
    }
}

impl From<crate::refused::Refused> for ConfigError {
    fn from(refused: crate::refused::Refused) -> Self {
        ConfigError::Invalid {
            key: refused.key,
            value: refused.value,
            reason: refused.reason,
        }
    }
}

impl BrokerConfig {
    /// Builds the configuration from a properties text (the `--config` file, or
    /// [`EMBEDDED_SERVER_PROPERTIES`]) and `--set key=value` overrides.
    pub fn load(
        properties_text: &str,
        overrides: &[(String, String)],
    ) -> Result<Loaded, ConfigError> {
        let mut values: BTreeMap<&'static str, String> = DEFINITIONS
            .iter()
            .filter_map(|d| d.default.map(|v| (d.key, v.to_string())))
            .collect();
        let mut warnings = Vec::new();
        let mut explicit_keys = std::collections::BTreeSet::new();
        let mut listener_values = BTreeMap::new();
        let explicit = properties::parse(properties_text)?
            .into_iter()
            .map(|(line, key, value)| (format!("line {line}"), key, value))
            .chain(
                overrides
                    .iter()
                    .map(|(k, v)| ("--set".to_string(), k.clone(), v.clone())),
            );
        for (origin, key, value) in explicit {
            if let Some(rest) = key.strip_prefix("listener.name.") {
                match rest.split_once('.') {
                    Some((listener, name)) if LISTENER_KEYS.iter().any(|k| k(name)) => {
                        listener_values.insert(
                            format!("listener.name.{}.{name}", listener.to_lowercase()),
                            value.trim().to_string(),
                        );
                    }
                    _ => warnings.push(format!(
                        "{origin}: unknown or unsupported configuration {key} is ignored"
                    )),
                }
                continue;
            }
            // The broker-wide `ssl.*` keys sit beside the per-listener ones (several
            // hold key material: not among DEFINITIONS, so DescribeConfigs never shows
            // them); [`BrokerConfig::security_value`] reads both.
            if crate::tls::is_ssl_key(&key) {
                listener_values.insert(key, value.trim().to_string());
                continue;
            }
            let Some(definition) = DEFINITIONS.iter().find(|d| d.key == key) else {
                warnings.push(format!(
                    "{origin}: unknown or unsupported configuration {key} is ignored"
                ));
                continue;
            };
            let value = value.trim().to_string();
            check(definition, &value)?;
            values.insert(definition.key, value);
            explicit_keys.insert(definition.key);
        }
        let mut config = BrokerConfig {
            values,
            explicit: explicit_keys,
            listener_values,
            settings: Default::default(),
            bootstrap_scram: Vec::new(),
        };
        config.check_required()?;
        config.settings = std::sync::Arc::new(Settings::parse(&config)?);
        Ok(Loaded { config, warnings })
    }

    /// Parses one `--set` argument, `key=value`.
    pub fn parse_override(argument: &str) -> Result<(String, String), ConfigError> {
        match argument.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok((key.trim().to_string(), value.to_string()))
            }
            _ => Err(ConfigError::Invalid {
                key: argument.to_string(),
                value: String::new(),
                reason: "an override is written key=value".into(),
            }),
        }
    }

    fn check_required(&self) -> Result<(), ConfigError> {
        if !self.values.contains_key("node.id") {
            return Err(ConfigError::Missing {
                key: "node.id",
                reason: "a KRaft node needs a non-negative node.id",
            });
        }
        if !self.values.contains_key("process.roles") {
            return Err(ConfigError::Missing {
                key: "process.roles",
                reason: "set broker, controller, or broker,controller",
            });
        }
        let listeners = self.listeners();
        if let Some(names) = self.values.get("controller.listener.names") {
            for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                if self.process_roles().contains(&Role::Controller)
                    && !listeners.iter().any(|l| l.name == name)
                {
                    return Err(ConfigError::Invalid {
                        key: "controller.listener.names".into(),
                        value: names.clone(),
                        reason: format!("listener {name} is not among listeners"),
                    });
                }
            }
        }
        let pool_bytes = self.int_value("queued.max.request.bytes");
        if pool_bytes > 0 && pool_bytes < self.int_value("socket.request.max.bytes") {
            return Err(ConfigError::Invalid {
                key: "queued.max.request.bytes".into(),
                value: pool_bytes.to_string(),
                reason: format!(
                    "must be -1 (no bound) or at least socket.request.max.bytes ({}), or a request of the largest size could never be read",
                    self.int_value("socket.request.max.bytes")
                ),
            });
        }
        if let Err(reason) = crate::connection_quotas::ConnectionQuotas::parse_overrides(
            self.get("max.connections.per.ip.overrides").unwrap_or(""),
        ) {
            return Err(ConfigError::Invalid {
                key: "max.connections.per.ip.overrides".into(),
                value: self
                    .get("max.connections.per.ip.overrides")
                    .unwrap_or("")
                    .to_string(),
                reason,
            });
        }
        self.check_group_timeouts()
    }

    /// Kafka's checks of the consumer-group timeouts against each other.
    fn check_group_timeouts(&self) -> Result<(), ConfigError> {
        let at_least = |key: &str, bound: &str| -> Result<(), ConfigError> {
            if self.int(key) < self.int(bound) {
                return Err(ConfigError::Invalid {
                    key: key.into(),
                    value: self.int(key).to_string(),
                    reason: format!("{key} must be greater than or equal to {bound}"),
                });
            }
            Ok(())
        };
        at_least(
            "group.max.session.timeout.ms",
            "group.min.session.timeout.ms",
        )?;
        at_least(
            "group.consumer.session.timeout.ms",
            "group.consumer.min.session.timeout.ms",
        )?;
        at_least(
            "group.consumer.max.session.timeout.ms",
            "group.consumer.session.timeout.ms",
        )?;
        at_least(
            "group.consumer.heartbeat.interval.ms",
            "group.consumer.min.heartbeat.interval.ms",
        )?;
        at_least(
            "group.consumer.max.heartbeat.interval.ms",
            "group.consumer.heartbeat.interval.ms",
        )?;
        if self.int("group.consumer.heartbeat.interval.ms")
            >= self.int("group.consumer.session.timeout.ms")
        {
            return Err(ConfigError::Invalid {
                key: "group.consumer.heartbeat.interval.ms".into(),
                value: self.int("group.consumer.heartbeat.interval.ms").to_string(),
                reason: "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms".into(),
            });
        }
        Ok(())
    }

    /// The raw value of a known key (explicit or Kafka's default).
    /// Checks `value` for the broker key `key` with the same rules as a configuration
    /// file (a dynamic broker config is checked this way before it is stored).
    pub fn validate_value(key: &str, value: &str) -> Result<(), ConfigError> {
        match DEFINITIONS.iter().find(|d| d.key == key) {
            Some(definition) => check(definition, value.trim()),
            None => Err(ConfigError::Invalid {
                key: key.to_string(),
                value: value.to_string(),
                reason: "unknown broker config".to_string(),
            }),
        }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The configuration typed into per-subsystem sections (parsed once, at load).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A per-listener key: `listener.name.<listener>.<name>` (Kafka reads a listener's
    /// key there first; [`BrokerConfig::listener_or_broker`] falls back).
    pub fn listener_value(&self, listener: &str, name: &str) -> Option<&str> {
        self.listener_values
            .get(&format!("listener.name.{}.{name}", listener.to_lowercase()))
            .map(String::as_str)
    }

    /// A listener's value of a broker key: its `listener.name.<listener>.` form, else
    /// the broker's.
    pub fn listener_or_broker(&self, listener: &str, key: &str) -> Option<&str> {
        self.listener_value(listener, key).or_else(|| self.get(key))
    }

    /// A listener's value of a security key kept out of [`DEFINITIONS`] (`ssl.*`):
    /// `listener.name.<listener>.<key>`, else the broker-wide `<key>`.
    pub fn security_value(&self, listener: &str, key: &str) -> Option<&str> {
        self.listener_value(listener, key)
            .or_else(|| self.listener_values.get(key).map(String::as_str))
    }

    /// This configuration with per-listener values (`listener.name.<l>.<key>`, the
    /// listener in lower case) set over it: a dynamic change's view of the listener keys.
    pub fn with_listener_values(
        &self,
        values: impl IntoIterator<Item = (String, String)>,
    ) -> BrokerConfig {
        let mut config = self.clone();
        config.listener_values.extend(values);
        config
    }

    /// Whether `key` was set by the configuration file or an override.
    pub fn is_explicit(&self, key: &str) -> bool {
        self.explicit.contains(key)
    }

    /// For a key Sluice knows: `Some(Kafka's default)`, which is `None` for keys whose
    /// default is null (e.g. `log.retention.ms`). `None` for an unknown key.
    pub fn definition_default(&self, key: &str) -> Option<Option<&'static str>> {
        DEFINITIONS.iter().find(|d| d.key == key).map(|d| d.default)
    }

    /// Every key Sluice knows, with its value when it has one (DescribeConfigs).
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, Option<&str>)> {
        DEFINITIONS
            .iter()
            .map(|d| (d.key, self.values.get(d.key).map(String::as_str)))
    }

    fn int(&self, key: &str) -> i64 {
        self.get(key)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{key} was validated at load"))
    }

    fn optional_int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.parse().ok())
    }

    fn bool(&self, key: &str) -> bool {
        self.get(key) == Some("true")
    }

    /// Adds SCRAM credentials for the cluster's bootstrap (`--add-scram`).
    pub fn with_bootstrap_scram(
        mut self,
        credentials: Vec<sluice_metadata::UserScramCredentialRecord>,
    ) -> BrokerConfig {
        self.bootstrap_scram = credentials;
        self
    }

    /// The SCRAM credentials the cluster's bootstrap writes.
    pub fn bootstrap_scram(&self) -> &[sluice_metadata::UserScramCredentialRecord] {
        &self.bootstrap_scram
    }

    pub fn node_id(&self) -> i32 {
        self.int("node.id") as i32
    }

    pub fn process_roles(&self) -> Vec<Role> {
        list(self.get("process.roles").unwrap_or(""))
            .filter_map(|role| match role {
                "broker" => Some(Role::Broker),
                "controller" => Some(Role::Controller),
                _ => None,
            })
            .collect()
    }

    pub fn listeners(&self) -> Vec<Listener> {
        parse_listeners(self.get("listeners").unwrap_or("")).unwrap_or_default()
    }

    /// `advertised.listeners`, or `listeners` when unset (Kafka's fallback).
    pub fn advertised_listeners(&self) -> Vec<Listener> {
        match self.get("advertised.listeners") {
            Some(text) => parse_listeners(text).unwrap_or_default(),
            None => self.listeners(),
        }
    }

    /// `log.dirs`, or `log.dir` when unset.
    pub fn log_dirs(&self) -> Vec<PathBuf> {
        match self.get("log.dirs") {
            Some(dirs) => list(dirs).map(PathBuf::from).collect(),
            None => vec![PathBuf::from(
                self.get("log.dir").unwrap_or("/tmp/kafka-logs"),
            )],
        }
    }

    pub fn num_partitions(&self) -> i32 {
        self.settings.topic_defaults.num_partitions
    }
    pub fn default_replication_factor(&self) -> i16 {
        self.settings.topic_defaults.replication_factor
    }
    /// An integer key, validated at load (Kafka's default when not set).
    pub fn int_value(&self, key: &str) -> i64 {
        self.int(key)
    }
    /// A boolean key, validated at load (Kafka's default when not set).
    pub fn bool_value(&self, key: &str) -> bool {
        self.bool(key)
    }
    pub fn auto_create_topics(&self) -> bool {
        self.settings.topic_defaults.auto_create
    }
    pub fn socket_request_max_bytes(&self) -> usize {
        self.int("socket.request.max.bytes") as usize
    }
    pub fn message_max_bytes(&self) -> u32 {
        self.int("message.max.bytes") as u32
    }
    pub fn num_io_threads(&self) -> usize {
        self.int("num.io.threads") as usize
    }
    pub fn log_retention_check_interval_ms(&self) -> i64 {
        self.int("log.retention.check.interval.ms")
    }

    /// `log.retention.ms`, else `log.retention.minutes`, else `log.retention.hours`
    /// (Kafka's precedence); a negative value means unlimited (-1).
    pub fn log_retention_ms(&self) -> i64 {
        let ms = self
            .optional_int("log.retention.ms")
            .or_else(|| {
                self.optional_int("log.retention.minutes")
                    .map(|m| m * 60_000)
            })
            .unwrap_or_else(|| self.int("log.retention.hours") * 3_600_000);
        if ms < 0 { -1 } else { ms }
    }

    /// `log.roll.ms`, else `log.roll.hours`.
    pub fn log_roll_ms(&self) -> i64 {
        self.optional_int("log.roll.ms")
            .unwrap_or_else(|| self.int("log.roll.hours") * 3_600_000)
    }

    /// The default topic configuration these broker keys give (each broker key is the
    /// synonym of a topic key: `log.segment.bytes` → `segment.bytes`, ...).
    pub fn log_config(&self) -> LogConfig {
        let defaults = LogConfig::default();
        LogConfig {
            segment_bytes: self.int("log.segment.bytes") as u32,
            segment_ms: self.log_roll_ms(),
            retention_ms: self.log_retention_ms(),
            retention_bytes: self.int("log.retention.bytes"),
            index_interval_bytes: self.int("log.index.interval.bytes") as u32,
            segment_index_bytes: self.int("log.index.size.max.bytes") as u32,
            flush_messages: self.int("log.flush.interval.messages"),
            flush_ms: self
                .optional_int("log.flush.interval.ms")
                .unwrap_or_else(|| self.int("log.flush.scheduler.interval.ms")),
            max_message_bytes: self.message_max_bytes(),
            producer_id_expiration_ms: self.int("producer.id.expiration.ms"),
            message_timestamp_type: match self.get("log.message.timestamp.type") {
                Some("LogAppendTime") => TimestampType::LogAppendTime,
                _ => TimestampType::CreateTime,
            },
            cleanup_delete: list(self.get("log.cleanup.policy").unwrap_or("delete"))
                .any(|p| p == "delete"),
            cleanup_compact: list(self.get("log.cleanup.policy").unwrap_or("delete"))
                .any(|p| p == "compact"),
            min_cleanable_dirty_ratio: self
                .get("log.cleaner.min.cleanable.ratio")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(defaults.min_cleanable_dirty_ratio),
            min_compaction_lag_ms: self.int("log.cleaner.min.compaction.lag.ms"),
            max_compaction_lag_ms: self.int("log.cleaner.max.compaction.lag.ms"),
            delete_retention_ms: self.int("log.cleaner.delete.retention.ms"),
            ..defaults
        }
    }
}

fn list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

fn check(definition: &Definition, value: &str) -> Result<(), ConfigError> {
    let invalid = |reason: String| ConfigError::Invalid {
        key: definition.key.to_string(),
        value: value.to_string(),
        reason,
    };
    match definition.kind {
        Kind::Int { min } => {
            let parsed: i32 = value
                .parse()
                .map_err(|_| invalid(format!("expected an integer from {min} to {}", i32::MAX)))?;
            if i64::from(parsed) < min {
                return Err(invalid(format!("value must be at least {min}")));
            }
        }
        Kind::Long { min } => {
            let parsed: i64 = value.parse().map_err(|_| {
                invalid(format!(
                    "expected a long integer from {min} to {}",
                    i64::MAX
                ))
            })?;
            if parsed < min {
                return Err(invalid(format!("value must be at least {min}")));
            }
        }
        Kind::Double { min, max } => {
            let parsed: f64 = value
                .parse()
                .map_err(|_| invalid("expected a number (a Java double)".into()))?;
            if !(min..=max).contains(&parsed) {
                return Err(invalid(format!("value must be between {min} and {max}")));
            }
        }
        Kind::Bool => {
            if !matches!(value.to_ascii_lowercase().as_str(), "true" | "false") {
                return Err(invalid("expected true or false".into()));
            }
        }
        Kind::Text | Kind::List => {}
        Kind::Choice(allowed) => {
            if !allowed.contains(&value) {
                return Err(invalid(format!(
                    "allowed values are {}",
                    allowed.join(", ")
                )));
            }
        }
        Kind::Subset(allowed) => {
            let items: Vec<&str> = list(value).collect();
            if items.is_empty() {
                return Err(invalid(format!(
                    "expected one or more of {}",
                    allowed.join(", ")
                )));
            }
            if let Some(bad) = items.iter().find(|item| !allowed.contains(item)) {
                return Err(invalid(format!(
                    "{bad} is not one of {}",
                    allowed.join(", ")
                )));
            }
        }
        Kind::Listeners => {
            parse_listeners(value).map_err(invalid)?;
        }
    }
    Ok(())
}

/// Parses `NAME://host:port,...` (host may be empty or a bracketed IPv6 address).
fn parse_listeners(text: &str) -> Result<Vec<Listener>, String> {
    let mut listeners: Vec<Listener> = Vec::new();
    for item in list(text) {
        let (name, address) = item
            .split_once("://")
            .ok_or_else(|| format!("listener {item:?} is not NAME://host:port"))?;
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "listener name {name:?} must be letters, digits and _"
            ));
        }
        let (host, port) = address
            .rsplit_once(':')
            .ok_or_else(|| format!("listener {item:?} has no port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("listener {item:?}: port must be 0 to 65535"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if listeners.iter().any(|l| l.name == name) {
            return Err(format!("listener name {name} appears twice"));
        }
        listeners.push(Listener {
            name: name.to_string(),
            host,
            port,
        });
    }
    Ok(listeners)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str, overrides: &[(&str, &str)]) -> Result<Loaded, ConfigError> {
        let overrides: Vec<(String, String)> = overrides
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        BrokerConfig::load(text, &overrides)
    }

    #[test]
    fn embedded_defaults_are_a_one_node_cluster_on_loopback() {
        let loaded = load(EMBEDDED_SERVER_PROPERTIES, &[]).unwrap();
        assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
        let config = loaded.config;
        assert_eq!(config.node_id(), 1);
        assert_eq!(config.process_roles(), vec![Role::Broker, Role::Controller]);
        assert_eq!(
            config.listeners()[0],
            Listener {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092
            }
        );
        assert_eq!(config.get("offsets.topic.replication.factor"), Some("1"));
        assert_eq!(config.get("transaction.state.log.min.isr"), Some("1"));
        // Kafka's code defaults fill what the file leaves out.
        assert_eq!(config.message_max_bytes(), 1_048_588);
        assert!(config.auto_create_topics());
        assert_eq!(config.log_retention_ms(), 168 * 3_600_000);
        assert_eq!(config.log_config(), LogConfig::default());
    }

    #[test]
    fn group_timeouts_are_checked_against_each_other() {
        let error = load(
            EMBEDDED_SERVER_PROPERTIES,
            &[("group.consumer.heartbeat.interval.ms", "100")],
        )
        .expect_err("below group.consumer.min.heartbeat.interval.ms");
        assert!(
            error.to_string().contains(
                "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"
            ),
            "{error}"
        );
        let loaded = load(
            EMBEDDED_SERVER_PROPERTIES,
            &[
                ("group.consumer.heartbeat.interval.ms", "100"),
                ("group.consumer.min.heartbeat.interval.ms", "100"),
            ],
        )
        .unwrap();
        assert_eq!(
            loaded
                .config
                .int_value("group.consumer.heartbeat.interval.ms"),
            100
        );
        let error = load(
            EMBEDDED_SERVER_PROPERTIES,
            &[("group.min.session.timeout.ms", "2000000")],
        )
        .expect_err("min above max");
        assert!(
            error.to_string().contains("group.max.session.timeout.ms"),
            "{error}"
        );
    }

    #[test]
    fn overrides_win_and_retention_follows_kafkas_precedence() {
        let text =
            "node.id=3\nprocess.roles=broker\nlog.retention.hours=1\nlog.retention.minutes=5\n";
        let config = load(
            text,
            &[("log.retention.ms", "1234"), ("num.partitions", "6")],
        )
        .unwrap()
        .config;
        assert_eq!(config.node_id(), 3);
        assert_eq!(config.log_retention_ms(), 1234);
        assert_eq!(config.num_partitions(), 6);
        let config = load(text, &[]).unwrap().config;
        assert_eq!(config.log_retention_ms(), 5 * 60_000);
        assert_eq!(config.log_dirs(), vec![PathBuf::from("/tmp/kafka-logs")]);
        assert_eq!(config.advertised_listeners(), config.listeners());
        let config = load(
            text,
            &[
                ("log.retention.hours", "-1"),
                ("log.retention.minutes", "-1"),
            ],
        )
        .unwrap()
        .config;
        assert_eq!(config.log_retention_ms(), -1);
    }

    #[test]
    fn broker_keys_map_onto_the_log_config() {
        let text = "node.id=1\nprocess.roles=broker\nlog.segment.bytes=1048576\nlog.roll.ms=60000\nlog.index.interval.bytes=100\nlog.flush.interval.messages=10\nlog.flush.interval.ms=500\nmessage.max.bytes=2000\nlog.message.timestamp.type=LogAppendTime\nlog.retention.bytes=99\n";
        let log = load(text, &[]).unwrap().config.log_config();
        assert_eq!(log.segment_bytes, 1_048_576);
        assert_eq!(log.segment_ms, 60_000);
        assert_eq!(log.index_interval_bytes, 100);
        assert_eq!(log.flush_messages, 10);
        assert_eq!(log.flush_ms, 500);
        assert_eq!(log.max_message_bytes, 2000);
        assert_eq!(log.retention_bytes, 99);
        assert_eq!(log.message_timestamp_type, TimestampType::LogAppendTime);
        log.validate().unwrap();
    }

    #[test]
    fn unknown_keys_warn() {
        let loaded = load(EMBEDDED_SERVER_PROPERTIES, &[("no.such.key", "1")]).unwrap();
        assert_eq!(loaded.warnings.len(), 1);
        assert!(
            loaded.warnings[0].contains("no.such.key"),
            "{:?}",
            loaded.warnings
        );
        let loaded = load("node.id=1\nprocess.roles=broker\nfancy.feature=on\n", &[]).unwrap();
        assert!(
            loaded.warnings[0].starts_with("line 3:"),
            "{:?}",
            loaded.warnings
        );
    }

    /// (key, value, a fragment the error must contain: the allowed values or range)
    #[test]
    fn invalid_values_name_the_key_and_what_it_accepts() {
        let cases = [
            ("num.partitions", "0", "at least 1"),
            ("num.partitions", "many", "integer"),
            ("num.partitions", "3000000000", "integer"),
            ("auto.create.topics.enable", "yes", "true or false"),
            (
                "log.message.timestamp.type",
                "EventTime",
                "CreateTime, LogAppendTime",
            ),
            (
                "compression.type",
                "brotli",
                "uncompressed, zstd, lz4, snappy, gzip, producer",
            ),
            (
                "process.roles",
                "broker,leader",
                "leader is not one of broker, controller",
            ),
            ("listeners", "PLAINTEXT://:99999", "port"),
            ("listeners", "localhost:9092", "NAME://host:port"),
            ("listeners", "A://:1,A://:2", "twice"),
            ("log.retention.ms", "-5", "at least -1"),
            ("socket.request.max.bytes", "0", "at least 1"),
            ("queued.max.requests", "0", "at least 1"),
            (
                "queued.max.request.bytes",
                "65536",
                "at least socket.request.max.bytes",
            ),
        ];
        for (key, value, fragment) in cases {
            let error = load(EMBEDDED_SERVER_PROPERTIES, &[(key, value)]).unwrap_err();
            let text = error.to_string();
            assert!(text.contains(key), "{key}={value}: {text}");
            assert!(text.contains(fragment), "{key}={value}: {text}");
        }
    }

    #[test]
    fn required_keys_and_listener_consistency() {
        let error = load("process.roles=broker\n", &[]).unwrap_err();
        assert!(
            matches!(error, ConfigError::Missing { key: "node.id", .. }),
            "{error}"
        );
        let error = load("node.id=1\n", &[]).unwrap_err();
        assert!(
            matches!(
                error,
                ConfigError::Missing {
                    key: "process.roles",
                    ..
                }
            ),
            "{error}"
        );
        let error = load(
            EMBEDDED_SERVER_PROPERTIES,
            &[("listeners", "PLAINTEXT://127.0.0.1:9092")],
        )
        .unwrap_err();
        assert!(
            error.to_string().contains("controller.listener.names"),
            "{error}"
        );
    }

    #[test]
    fn override_arguments_parse() {
        assert_eq!(
            BrokerConfig::parse_override("num.partitions=3").unwrap(),
            ("num.partitions".to_string(), "3".to_string())
        );
        assert_eq!(
            BrokerConfig::parse_override("listeners=PLAINTEXT://:1=x")
                .unwrap()
                .1,
            "PLAINTEXT://:1=x"
        );
        assert!(BrokerConfig::parse_override("num.partitions").is_err());
        assert!(BrokerConfig::parse_override("=3").is_err());
    }
}
