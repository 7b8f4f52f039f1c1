//! The configuration as each subsystem reads it: parsed once, when the configuration is
//! loaded, into typed sections (as Kafka's `KafkaConfig` accessors and its per-module
//! configs). Kafka's defaults stay in the key definitions ([`super::DEFINITIONS`]);
//! nothing here or in a caller repeats one, and no request path looks a key up by name.
//!
//! The keys Sluice lets change without a restart (`kafka-configs.sh --alter
//! --entity-type brokers`) are resolved into [`DynamicSettings`] from the metadata
//! image's broker config layers each time those layers change, and swapped in whole
//! ([`DynamicConfig`]): a reader sees one consistent set, never half of an update.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use sluice_metadata::MetadataImage;
use tokio::sync::watch;

use super::{BrokerConfig, ConfigError, ListenerSasl};

pub use crate::security_protocol::SecurityProtocol;

/// The listeners' roles and protocols.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListenerSettings {
    /// `controller.listener.names`.
    pub controller_listener_names: Vec<String>,
    /// `inter.broker.listener.name` (PLAINTEXT when unset, as Kafka derives it from
    /// `security.inter.broker.protocol`'s default).
    pub inter_broker_listener_name: String,
    /// `listener.security.protocol.map`: listener name → protocol.
    pub security_protocols: BTreeMap<String, SecurityProtocol>,
    /// The SASL settings of each `SASL_PLAINTEXT` and `SASL_SSL` listener.
    pub sasl: BTreeMap<String, Arc<ListenerSasl>>,
    /// The TLS settings of each `SSL` and `SASL_SSL` listener ([`crate::tls`]).
    pub tls: BTreeMap<String, Arc<crate::tls::ListenerTls>>,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay: Duration,
    /// `sasl.server.max.receive.size`: the largest frame read before authentication.
    pub sasl_max_receive_size: usize,
}

impl ListenerSettings {
    pub fn is_controller_listener(&self, listener: &str) -> bool {
        self.controller_listener_names.iter().any(|n| n == listener)
    }

    /// The protocol of `listener`: its map entry, else the protocol its name spells
    /// (Kafka requires an entry; a listener named after a protocol needs none here),
    /// else PLAINTEXT.
    pub fn protocol_of(&self, listener: &str) -> SecurityProtocol {
        self.security_protocols
            .get(listener)
            .copied()
            .or_else(|| SecurityProtocol::parse(listener))
            .unwrap_or(SecurityProtocol::Plaintext)
    }
}

/// The socket server's limits (Kafka's `SocketServer` and `ConnectionQuotas` keys).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkSettings {
    /// `socket.request.max.bytes`.
    pub socket_request_max_bytes: usize,
    /// `max.connections` (0 for none accepted beyond the cluster's own listeners).
    pub max_connections: usize,
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: usize,
    /// `max.connections.per.ip.overrides`.
    pub max_connections_per_ip_overrides: HashMap<IpAddr, usize>,
    /// `connections.max.idle.ms`.
    pub connections_max_idle: Duration,
    /// `queued.max.requests`.
    pub queued_max_requests: usize,
    /// `queued.max.request.bytes`; `None` for no bound (-1).
    pub queued_max_request_bytes: Option<usize>,
}

/// The metadata quorum's keys.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QuorumSettings {
    /// `controller.quorum.voters`, as written (`id@host:port,...`).
    pub voters: String,
    /// `controller.quorum.bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    /// `controller.quorum.election.timeout.ms`.
    pub election_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`.
    pub fetch_timeout_ms: u64,
    /// `metadata.log.max.entries.between.snapshots` (Sluice's: openraft counts entries
    /// where Kafka counts bytes).
    pub entries_between_snapshots: u64,
    /// `initial.broker.registration.timeout.ms`: how long a starting node waits for the
    /// quorum (a leader elected, or joining it as a learner) before it exits.
    pub startup_timeout: Duration,
}

/// The active controller's keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ControllerSettings {
    /// `broker.session.timeout.ms`.
    pub broker_session_timeout: Duration,
    /// `broker.heartbeat.interval.ms`.
    pub broker_heartbeat_interval: Duration,
    /// `auto.leader.rebalance.enable`.
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds`.
    pub leader_imbalance_check_interval: Duration,
    /// `controlled.shutdown.enable`.
    pub controlled_shutdown: bool,
}

/// How an internal topic is created (`offsets.topic.*`, `transaction.state.log.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InternalTopicSettings {
    pub partitions: i32,
    pub replication_factor: i16,
    pub segment_bytes: i64,
    /// `transaction.state.log.min.isr`; `None` for the offsets topic (the broker's
    /// `min.insync.replicas` applies).
    pub min_isr: Option<i64>,
}

/// The broker's static configuration, typed (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub listeners: ListenerSettings,
    pub network: NetworkSettings,
    pub quorum: QuorumSettings,
    pub controller: ControllerSettings,
    /// `__consumer_offsets`.
    pub offsets_topic: InternalTopicSettings,
    /// `__transaction_state`.
    pub transaction_topic: InternalTopicSettings,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// Whether `group.coordinator.rebalance.protocols` includes `consumer` (KIP-848).
    pub consumer_rebalance_protocol: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `transaction.partition.verification.enable` (KIP-890).
    pub transaction_partition_verification: bool,
    /// `max.incremental.fetch.session.cache.slots`.
    pub fetch_session_cache_slots: usize,
    /// `log.cleaner.enable`.
    pub log_cleaner_enable: bool,
    /// What a new topic gets when its request leaves it to the broker.
    pub topic_defaults: TopicDefaults,
    /// The broker's caps on a Fetch response.
    pub fetch: FetchLimits,
    /// `broker.rack`.
    pub rack: Option<String>,
    /// The authorizer (`authorizer.class.name`), `None` when requests are not authorized.
    pub authorizer: Option<sluice_metadata::acl::AuthorizerSettings>,
}

/// `num.partitions`, `default.replication.factor`, `auto.create.topics.enable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TopicDefaults {
    pub num_partitions: i32,
    pub replication_factor: i16,
    pub auto_create: bool,
}

/// `fetch.max.bytes` (a consumer's Fetch) and `replica.fetch.response.max.bytes` (a
/// follower's), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FetchLimits {
    pub max_bytes: i64,
    pub replica_response_max_bytes: i64,
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

fn millis(value: i64) -> Duration {
    Duration::from_millis(u64::try_from(value).unwrap_or(0))
}

impl Settings {
    /// Reads the sections from a loaded, validated configuration; refuses listener
    /// security settings Sluice cannot honour (rather than serve a listener with less
    /// security than configured).
    pub(super) fn parse(config: &BrokerConfig) -> Result<Settings, ConfigError> {
        let text = |key: &str| config.get(key).unwrap_or("");
        let int = |key: &str| config.int_value(key);
        let count = |key: &str| usize::try_from(int(key)).unwrap_or(0);
        let mut settings = Settings {
            listeners: ListenerSettings {
                controller_listener_names: list(text("controller.listener.names")),
                inter_broker_listener_name: config
                    .get("inter.broker.listener.name")
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .unwrap_or("PLAINTEXT")
                    .to_string(),
                security_protocols: list(text("listener.security.protocol.map"))
                    .iter()
                    .filter_map(|entry| {
                        let (listener, protocol) = entry.split_once(':')?;
                        Some((
                            listener.trim().to_string(),
                            SecurityProtocol::parse(protocol.trim())?,
                        ))
                    })
                    .collect(),
                sasl: BTreeMap::new(),
                tls: BTreeMap::new(),
                failed_authentication_delay: millis(int(
                    "connection.failed.authentication.delay.ms",
                )),
                sasl_max_receive_size: count("sasl.server.max.receive.size"),
            },
            network: NetworkSettings {
                socket_request_max_bytes: count("socket.request.max.bytes"),
                max_connections: count("max.connections"),
                max_connections_per_ip: count("max.connections.per.ip"),
                // Checked when the configuration was loaded.
                max_connections_per_ip_overrides:
                    crate::connection_quotas::ConnectionQuotas::parse_overrides(text(
                        "max.connections.per.ip.overrides",
                    ))
                    .unwrap_or_default(),
                connections_max_idle: millis(int("connections.max.idle.ms").max(1)),
                queued_max_requests: count("queued.max.requests").max(1),
                queued_max_request_bytes: usize::try_from(int("queued.max.request.bytes"))
                    .ok()
                    .filter(|bytes| *bytes > 0),
            },
            quorum: QuorumSettings {
                voters: text("controller.quorum.voters").trim().to_string(),
                bootstrap_servers: list(text("controller.quorum.bootstrap.servers")),
                election_timeout_ms: u64::try_from(int("controller.quorum.election.timeout.ms"))
                    .unwrap_or(0)
                    .max(20),
                fetch_timeout_ms: u64::try_from(int("controller.quorum.fetch.timeout.ms"))
                    .unwrap_or(0),
                entries_between_snapshots: u64::try_from(int(
                    "metadata.log.max.entries.between.snapshots",
                ))
                .unwrap_or(1)
                .max(1),
                startup_timeout: Duration::from_millis(
                    u64::try_from(int("initial.broker.registration.timeout.ms")).unwrap_or(1),
                ),
            },
            controller: ControllerSettings {
                broker_session_timeout: millis(int("broker.session.timeout.ms")),
                broker_heartbeat_interval: millis(int("broker.heartbeat.interval.ms")),
                auto_leader_rebalance: config.bool_value("auto.leader.rebalance.enable"),
                leader_imbalance_check_interval: Duration::from_secs(
                    u64::try_from(int("leader.imbalance.check.interval.seconds")).unwrap_or(1),
                ),
                controlled_shutdown: config.bool_value("controlled.shutdown.enable"),
            },
            offsets_topic: InternalTopicSettings {
                partitions: int("offsets.topic.num.partitions") as i32,
                replication_factor: int("offsets.topic.replication.factor") as i16,
                segment_bytes: int("offsets.topic.segment.bytes"),
                min_isr: None,
            },
            transaction_topic: InternalTopicSettings {
                partitions: int("transaction.state.log.num.partitions") as i32,
                replication_factor: int("transaction.state.log.replication.factor") as i16,
                segment_bytes: int("transaction.state.log.segment.bytes"),
                min_isr: Some(int("transaction.state.log.min.isr")),
            },
            offset_metadata_max_bytes: count("offset.metadata.max.bytes"),
            consumer_rebalance_protocol: list(text("group.coordinator.rebalance.protocols"))
                .iter()
                .any(|protocol| protocol == "consumer"),
            delete_topic_enable: config.bool_value("delete.topic.enable"),
            transaction_partition_verification: config
                .bool_value("transaction.partition.verification.enable"),
            fetch_session_cache_slots: count("max.incremental.fetch.session.cache.slots"),
            log_cleaner_enable: config.bool_value("log.cleaner.enable"),
            topic_defaults: TopicDefaults {
                num_partitions: i32::try_from(int("num.partitions")).unwrap_or(1),
                replication_factor: i16::try_from(int("default.replication.factor")).unwrap_or(1),
                auto_create: config.bool_value("auto.create.topics.enable"),
            },
            fetch: FetchLimits {
                max_bytes: int("fetch.max.bytes"),
                replica_response_max_bytes: int("replica.fetch.response.max.bytes"),
            },
            rack: config
                .get("broker.rack")
                .map(str::trim)
                .filter(|rack| !rack.is_empty())
                .map(str::to_string),
            authorizer: super::authorizer::authorizer(
                text("authorizer.class.name"),
                text("super.users"),
                config.bool_value("allow.everyone.if.no.acl.found"),
            )?,
        };
        for listener in config.listeners() {
            if let Some(sasl) = listener_security(config, &settings.listeners, &listener.name)? {
                settings
                    .listeners
                    .sasl
                    .insert(listener.name.clone(), Arc::new(sasl));
            }
            listener_tls(config, &mut settings.listeners, &listener.name)?;
        }
        Ok(settings)
    }
}

/// A TLS listener's settings ([`crate::tls::listener_tls`]) into `listeners.tls`; an
/// error when it carries the cluster's own traffic, whose connections do not speak TLS.
fn listener_tls(
    config: &BrokerConfig,
    listeners: &mut ListenerSettings,
    name: &str,
) -> Result<(), ConfigError> {
    let protocol = listeners.protocol_of(name);
    let Some(tls) = crate::tls::listener_tls(config, name, protocol)? else {
        return Ok(());
    };
    if listeners.is_controller_listener(name) || listeners.inter_broker_listener_name == name {
        return Err(ConfigError::Invalid {
            key: "listener.security.protocol.map".into(),
            value: name.to_string(),
            reason: format!(
                "listener {name} is {protocol:?} and carries the cluster's own traffic \
                 (inter-broker or controller), whose connections do not use TLS yet: give \
                 that traffic a PLAINTEXT listener"
            ),
        });
    }
    listeners.tls.insert(name.to_string(), Arc::new(tls));
    Ok(())
}

/// The security a listener's protocol asks for: its SASL settings for
/// `SASL_PLAINTEXT` and `SASL_SSL`, `None` for `PLAINTEXT` and `SSL` (TLS is read by
/// [`listener_tls`]); an error for what Sluice does not serve.
fn listener_security(
    config: &BrokerConfig,
    listeners: &ListenerSettings,
    name: &str,
) -> Result<Option<ListenerSasl>, ConfigError> {
    let refuse = |key: String, value: &str, reason: String| ConfigError::Invalid {
        key,
        value: value.to_string(),
        reason,
    };
    let protocol = listeners.protocol_of(name);
    match protocol {
        SecurityProtocol::Plaintext | SecurityProtocol::Ssl => return Ok(None),
        SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => {}
    }
    if listeners.is_controller_listener(name) || listeners.inter_broker_listener_name == name {
        return Err(refuse(
            "listener.security.protocol.map".into(),
            name,
            format!(
                "listener {name} is SASL_PLAINTEXT and carries the cluster's own traffic \
                 (inter-broker or controller), whose connections do not authenticate yet: \
                 give that traffic a PLAINTEXT listener"
            ),
        ));
    }
    let mechanisms_key = "sasl.enabled.mechanisms";
    let enabled = list(
        config
            .listener_or_broker(name, mechanisms_key)
            .unwrap_or(""),
    );
    if enabled.is_empty() {
        return Err(refuse(
            format!("listener.name.{}.{mechanisms_key}", name.to_lowercase()),
            "",
            format!("listener {name} is SASL_PLAINTEXT but enables no SASL mechanism"),
        ));
    }
    let mut sasl = ListenerSasl {
        enabled_mechanisms: enabled.clone(),
        plain_users: BTreeMap::new(),
    };
    for mechanism in &enabled {
        // SCRAM's users are the metadata log's credentials ([`crate::scram`]): no
        // server-side JAAS options to read (Kafka's ScramLoginModule has none).
        if scram_mechanism(mechanism) {
            continue;
        }
        if mechanism != "PLAIN" {
            return Err(refuse(
                mechanisms_key.into(),
                &enabled.join(","),
                format!(
                    "SASL mechanism {mechanism} is not served yet (PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 are)"
                ),
            ));
        }
        let jaas_key = format!(
            "listener.name.{}.plain.sasl.jaas.config",
            name.to_lowercase()
        );
        let text = config
            .listener_value(name, "plain.sasl.jaas.config")
            .ok_or_else(|| {
                refuse(
                    jaas_key.clone(),
                    "",
                    format!(
                        "PLAIN is enabled on listener {name}: set its PlainLoginModule with a \
                     user_<name>=\"<password>\" option per user"
                    ),
                )
            })?;
        let modules = super::parse_jaas(text)
            .map_err(|reason| refuse(jaas_key.clone(), "(hidden)", reason))?;
        if !modules
            .iter()
            .any(|m| m.class == "org.apache.kafka.common.security.plain.PlainLoginModule")
        {
            return Err(refuse(
                jaas_key,
                "(hidden)",
                "expected org.apache.kafka.common.security.plain.PlainLoginModule".into(),
            ));
        }
        sasl.plain_users = super::plain_users(&modules);
    }
    Ok(Some(sasl))
}

/// Whether `mechanism` is one of the SCRAM mechanisms Sluice serves.
fn scram_mechanism(mechanism: &str) -> bool {
    crate::scram::ScramMechanism::from_name(mechanism).is_some()
}

/// The log cleaner's keys that change without a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanerSettings {
    /// `log.cleaner.threads`.
    pub threads: usize,
    /// `log.cleaner.backoff.ms`.
    pub backoff: Duration,
    /// `log.cleaner.dedupe.buffer.size`, shared by the threads.
    pub dedupe_buffer_size: u64,
}

/// The broker keys Sluice applies without a restart, resolved from the most specific
/// layer that sets each: this node's dynamic config, the cluster-wide dynamic default,
/// the static configuration, Kafka's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DynamicSettings {
    pub cleaner: CleanerSettings,
    /// `unclean.leader.election.enable` (a topic's own value comes first).
    pub unclean_leader_election: bool,
}

impl DynamicSettings {
    /// The static configuration's values (no dynamic layer).
    pub fn of(config: &BrokerConfig) -> DynamicSettings {
        Self::resolve(config, None, None)
    }

    /// The values `image`'s broker config layers give over `config`.
    pub fn from_image(config: &BrokerConfig, image: &MetadataImage) -> DynamicSettings {
        Self::resolve(
            config,
            image.configs(
                sluice_metadata::BROKER_RESOURCE,
                &config.node_id().to_string(),
            ),
            image.configs(sluice_metadata::BROKER_RESOURCE, ""),
        )
    }

    fn resolve(
        config: &BrokerConfig,
        node: Option<&BTreeMap<String, String>>,
        cluster: Option<&BTreeMap<String, String>>,
    ) -> DynamicSettings {
        // A dynamic value was checked when it was written (`validate_value`); one that
        // does not parse (written by another implementation) falls back to the static.
        let int = |key: &str| -> i64 {
            [node, cluster]
                .into_iter()
                .flatten()
                .find_map(|layer| layer.get(key))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or_else(|| config.int_value(key))
        };
        let boolean = |key: &str| -> bool {
            [node, cluster]
                .into_iter()
                .flatten()
                .find_map(|layer| layer.get(key))
                .and_then(|value| value.trim().parse().ok())
                .unwrap_or_else(|| config.bool_value(key))
        };
        DynamicSettings {
            cleaner: CleanerSettings {
                threads: usize::try_from(int("log.cleaner.threads")).unwrap_or(0),
                backoff: millis(int("log.cleaner.backoff.ms").max(1)),
                dedupe_buffer_size: u64::try_from(int("log.cleaner.dedupe.buffer.size"))
                    .unwrap_or(0),
            },
            unclean_leader_election: boolean("unclean.leader.election.enable"),
        }
    }
}

/// The current [`DynamicSettings`], replaced whole when an applied metadata image
/// changes the broker config layers (a [`crate::image::MetadataPublisher`]).
pub struct DynamicConfig {
    config: BrokerConfig,
    current: watch::Sender<Arc<DynamicSettings>>,
}

impl DynamicConfig {
    pub fn new(config: BrokerConfig) -> DynamicConfig {
        let current = watch::Sender::new(Arc::new(DynamicSettings::of(&config)));
        DynamicConfig { config, current }
    }

    /// The settings in force now.
    pub fn current(&self) -> Arc<DynamicSettings> {
        self.current.borrow().clone()
    }

    /// Resolves the settings `image` gives; swaps them in if they changed.
    pub fn update(&self, image: &MetadataImage) {
        let next = DynamicSettings::from_image(&self.config, image);
        self.current.send_if_modified(|current| {
            if **current == next {
                return false;
            }
            tracing::info!(?next, "dynamic broker settings changed");
            *current = Arc::new(next);
            true
        });
    }
}

impl crate::image::MetadataPublisher for DynamicConfig {
    fn publish(&self, image: &Arc<MetadataImage>) {
        self.update(image);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_metadata::{ConfigRecord, MetadataRecord};

    fn config(extra: &str) -> BrokerConfig {
        let text = format!(
            "node.id=1\nprocess.roles=broker,controller\nlisteners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n{extra}"
        );
        BrokerConfig::load(&text, &[]).unwrap().config
    }

    #[test]
    fn defaults_come_from_the_key_definitions() {
        let settings = config("").settings().clone();
        assert_eq!(settings.quorum.election_timeout_ms, 1000);
        assert_eq!(settings.quorum.fetch_timeout_ms, 2000);
        assert_eq!(settings.quorum.entries_between_snapshots, 5000);
        assert_eq!(settings.quorum.startup_timeout, Duration::from_secs(60));
        assert_eq!(
            settings.topic_defaults,
            TopicDefaults {
                num_partitions: 1,
                replication_factor: 1,
                auto_create: true
            }
        );
        assert_eq!(
            settings.fetch,
            FetchLimits {
                max_bytes: 57_671_680,
                replica_response_max_bytes: 10_485_760
            }
        );
        assert_eq!(settings.offsets_topic.partitions, 50);
        assert_eq!(settings.offsets_topic.replication_factor, 3);
        assert_eq!(settings.transaction_topic.min_isr, Some(2));
        assert_eq!(settings.offset_metadata_max_bytes, 4096);
        assert_eq!(settings.fetch_session_cache_slots, 1000);
        assert_eq!(settings.network.queued_max_request_bytes, None);
        assert_eq!(settings.network.queued_max_requests, 500);
        assert_eq!(
            settings.controller.broker_session_timeout,
            Duration::from_millis(9000)
        );
        assert!(settings.consumer_rebalance_protocol);
        assert_eq!(settings.listeners.inter_broker_listener_name, "PLAINTEXT");
        assert!(settings.listeners.is_controller_listener("CONTROLLER"));
        assert!(!settings.listeners.is_controller_listener("PLAINTEXT"));
        assert_eq!(
            settings.listeners.protocol_of("CONTROLLER"),
            SecurityProtocol::Plaintext
        );
        assert_eq!(settings.rack, None);
        let dynamic = DynamicSettings::of(&config(""));
        assert_eq!(dynamic.cleaner.threads, 1);
        assert_eq!(dynamic.cleaner.backoff, Duration::from_millis(15_000));
        assert_eq!(dynamic.cleaner.dedupe_buffer_size, 128 << 20);
        assert!(!dynamic.unclean_leader_election);
    }

    #[test]
    fn explicit_values_are_typed_once() {
        let settings = config(
            "broker.rack=rack-a\ngroup.coordinator.rebalance.protocols=classic\n\
             listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL\n\
             inter.broker.listener.name=PLAINTEXT\nmax.connections.per.ip.overrides=127.0.0.1:5\n\
             queued.max.request.bytes=209715200",
        )
        .settings()
        .clone();
        assert_eq!(settings.rack.as_deref(), Some("rack-a"));
        assert!(!settings.consumer_rebalance_protocol);
        assert_eq!(
            settings.listeners.protocol_of("INTERNAL"),
            SecurityProtocol::SaslSsl
        );
        assert_eq!(settings.listeners.protocol_of("INTERNAL").id(), 3);
        assert_eq!(
            settings
                .network
                .max_connections_per_ip_overrides
                .get(&"127.0.0.1".parse::<IpAddr>().unwrap()),
            Some(&5)
        );
        assert_eq!(settings.network.queued_max_request_bytes, Some(209_715_200));
    }

    fn set(image: &mut MetadataImage, resource: &str, key: &str, value: Option<&str>) {
        image
            .apply(&MetadataRecord::Config(ConfigRecord {
                resource_type: sluice_metadata::BROKER_RESOURCE,
                resource_name: resource.into(),
                name: key.into(),
                value: value.map(str::to_string),
            }))
            .unwrap();
    }

    #[test]
    fn a_dynamic_change_swaps_the_whole_set_and_the_node_layer_wins() {
        let dynamic = DynamicConfig::new(config("log.cleaner.threads=2"));
        let mut changes = dynamic.current.subscribe();
        let before = dynamic.current();
        assert_eq!(before.cleaner.threads, 2);
        let mut image = MetadataImage::default();
        dynamic.update(&image);
        assert!(!changes.has_changed().unwrap(), "nothing changed");

        set(&mut image, "", "log.cleaner.threads", Some("3"));
        set(&mut image, "", "log.cleaner.backoff.ms", Some("250"));
        set(
            &mut image,
            "",
            "unclean.leader.election.enable",
            Some("true"),
        );
        dynamic.update(&image);
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        let cluster = dynamic.current();
        assert_eq!(cluster.cleaner.threads, 3);
        assert_eq!(cluster.cleaner.backoff, Duration::from_millis(250));
        assert!(cluster.unclean_leader_election);
        // The earlier snapshot is untouched: readers holding it see one whole set.
        assert_eq!(before.cleaner.threads, 2);

        set(&mut image, "1", "log.cleaner.threads", Some("4"));
        set(&mut image, "2", "log.cleaner.threads", Some("9"));
        dynamic.update(&image);
        assert_eq!(dynamic.current().cleaner.threads, 4, "node 1's own value");

        set(&mut image, "1", "log.cleaner.threads", None);
        set(&mut image, "", "log.cleaner.threads", None);
        dynamic.update(&image);
        assert_eq!(
            dynamic.current().cleaner.threads,
            2,
            "back to the static value"
        );
    }

    const SASL_LISTENERS: &str = "listeners=PLAINTEXT://:9092,SASL://:9094,CONTROLLER://:9093\n\
        listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n";

    fn load(text: &str) -> Result<BrokerConfig, ConfigError> {
        let text = format!(
            "node.id=1\nprocess.roles=broker,controller\ncontroller.listener.names=CONTROLLER\n{text}"
        );
        BrokerConfig::load(&text, &[]).map(|loaded| loaded.config)
    }

    #[test]
    fn scram_mechanisms_are_served_beside_plain() {
        let config = load(&format!(
            "{SASL_LISTENERS}listener.name.SASL.sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN,SCRAM-SHA-256\n\
             listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"a-secret\";\n"
        ))
        .unwrap();
        assert_eq!(
            config.settings().listeners.sasl["SASL"].enabled_mechanisms,
            ["SCRAM-SHA-512", "PLAIN", "SCRAM-SHA-256"]
        );
        // SCRAM alone needs no JAAS configuration.
        let config = load(&format!(
            "{SASL_LISTENERS}sasl.enabled.mechanisms=SCRAM-SHA-256\n"
        ))
        .unwrap();
        assert_eq!(
            config.settings().listeners.sasl["SASL"].enabled_mechanisms,
            ["SCRAM-SHA-256"]
        );
        let error = load(&format!(
            "{SASL_LISTENERS}sasl.enabled.mechanisms=SCRAM-SHA-1\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(error.contains("SCRAM-SHA-1 is not served yet"), "{error}");
    }

    #[test]
    fn a_sasl_plaintext_listener_reads_its_mechanisms_and_users() {
        let config = load(&format!(
            "{SASL_LISTENERS}listener.name.SASL.sasl.enabled.mechanisms=PLAIN\n\
             listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"a-secret\";\n"
        ))
        .unwrap();
        let sasl = &config.settings().listeners.sasl;
        assert_eq!(sasl.len(), 1, "only the SASL listener authenticates");
        assert_eq!(sasl["SASL"].enabled_mechanisms, ["PLAIN"]);
        assert_eq!(sasl["SASL"].plain_users["alice"], "a-secret");
        assert_eq!(
            config.settings().listeners.failed_authentication_delay,
            Duration::from_millis(100)
        );
        assert_eq!(config.settings().listeners.sasl_max_receive_size, 524_288);
    }

    #[test]
    fn listener_security_sluice_cannot_honour_is_refused_at_load() {
        let jaas = "listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"b\";\n";
        let refused = |text: String, needle: &str| {
            let error = load(&text).unwrap_err().to_string();
            assert!(error.contains(needle), "{error}");
            // A password never appears in the error.
            assert!(!error.contains("user_a"), "{error}");
        };
        // Kafka's default mechanism, GSSAPI (Kerberos), is not served.
        refused(
            format!("{SASL_LISTENERS}{jaas}"),
            "GSSAPI is not served yet",
        );
        refused(
            format!("{SASL_LISTENERS}sasl.enabled.mechanisms=PLAIN\n"),
            "PlainLoginModule",
        );
        refused(
            format!(
                "{SASL_LISTENERS}sasl.enabled.mechanisms=PLAIN\n\
                 listener.name.sasl.plain.sasl.jaas.config=Other required user_a=\"b\";\n"
            ),
            "expected org.apache.kafka.common.security.plain.PlainLoginModule",
        );
        refused(
            format!(
                "{SASL_LISTENERS}sasl.enabled.mechanisms=PLAIN\ninter.broker.listener.name=SASL\n{jaas}"
            ),
            "do not authenticate yet",
        );
        refused(
            "listeners=PLAINTEXT://:9092,SSL://:9094,CONTROLLER://:9093\n".into(),
            "set ssl.keystore.type=PEM with ssl.keystore.location",
        );
    }
}
