//! The worker's configuration: Kafka Connect's `connect-distributed.properties` keys and
//! defaults (`DistributedConfig`, `WorkerConfig`), read from the same file
//! `connect-distributed.sh` takes.

use std::time::Duration;

use crate::{ConfigError, Props};

#[derive(Debug, Clone)]
pub struct WorkerConfig {
    pub bootstrap_servers: Vec<String>,
    /// `group.id`: the Connect cluster this worker belongs to (required).
    pub group_id: String,
    pub config_storage_topic: String,
    pub config_storage_replication_factor: i16,
    pub offset_storage_topic: String,
    pub offset_storage_partitions: i32,
    pub offset_storage_replication_factor: i16,
    pub status_storage_topic: String,
    pub status_storage_partitions: i32,
    pub status_storage_replication_factor: i16,
    pub key_converter: String,
    pub value_converter: String,
    /// `key.converter.*` / `value.converter.*`, the prefix stripped.
    pub key_converter_props: Props,
    pub value_converter_props: Props,
    /// `offset.flush.interval.ms` (60000): how often tasks commit offsets.
    pub offset_flush_interval: Duration,
    /// The REST listener, from `listeners` (default `http://:8083`).
    pub rest_host: String,
    pub rest_port: u16,
    /// `rest.advertised.host.name` / `rest.advertised.port`: this worker's id and URL.
    pub advertised_host: String,
    pub advertised_port: u16,
    /// `session.timeout.ms` (10000), `heartbeat.interval.ms` (3000),
    /// `rebalance.timeout.ms` (60000): the worker's group membership, Connect's defaults.
    pub session_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub rebalance_timeout: Duration,
    /// `connect.protocol`: `compatible` (incremental cooperative; Kafka's default
    /// `sessioned` is served as it) or `eager`.
    pub protocol: crate::group::Protocol,
    /// `exactly.once.source.support=enabled` (KIP-618; default `disabled`, and
    /// `preparing` runs sources as disabled does): each source task writes its records
    /// and their source offsets in one transaction.
    pub exactly_once_source: bool,
    /// `topic.tracking.enable` (true) and `topic.tracking.allow.reset` (true), KIP-558.
    pub topic_tracking: bool,
    pub topic_tracking_allow_reset: bool,
    /// `scheduled.rebalance.max.delay.ms` (300000): how long a departed worker's work
    /// waits for it to come back before it is reassigned.
    pub scheduled_rebalance_max_delay: Duration,
    /// Every key as given (connector defaults such as `producer.*`, `consumer.*`).
    pub props: Props,
}

const REQUIRED: [&str; 6] = [
    "bootstrap.servers",
    "group.id",
    "config.storage.topic",
    "offset.storage.topic",
    "status.storage.topic",
    "key.converter",
];

impl WorkerConfig {
    /// Parses Java properties text (`key=value` or `key: value`, `#`/`!` comments).
    pub fn parse_properties(text: &str) -> Props {
        let mut props = Props::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let split = line
                .find(['=', ':'])
                .map(|i| (line[..i].trim(), line[i + 1..].trim()));
            if let Some((key, value)) = split {
                props.insert(key.to_string(), value.to_string());
            }
        }
        props
    }

    /// Connect's checks and defaults; a missing required key or a bad value is a
    /// [`ConfigError`] naming it.
    pub fn from_props(props: Props) -> Result<WorkerConfig, ConfigError> {
        let mut errors = ConfigError::default();
        for key in REQUIRED.iter().chain(["value.converter"].iter()) {
            if !props.contains_key(*key) {
                errors.push(ConfigError::missing(key));
            }
        }
        let text = |key: &str, default: &str| props.get(key).cloned().unwrap_or(default.into());
        let mut number = |key: &str, default: i64, min: i64| -> i64 {
            match props.get(key) {
                None => default,
                Some(v) => match v.trim().parse::<i64>() {
                    Ok(n) if n >= min => n,
                    Ok(_) => {
                        errors.push(ConfigError::invalid(
                            key,
                            v,
                            &format!("Value must be at least {min}"),
                        ));
                        default
                    }
                    Err(_) => {
                        errors.push(ConfigError::invalid(key, v, "Not a number of type INT"));
                        default
                    }
                },
            }
        };
        let config_rf = number("config.storage.replication.factor", 3, -1);
        let offset_partitions = number("offset.storage.partitions", 25, 1);
        let offset_rf = number("offset.storage.replication.factor", 3, -1);
        let status_partitions = number("status.storage.partitions", 5, 1);
        let status_rf = number("status.storage.replication.factor", 3, -1);
        let flush_ms = number("offset.flush.interval.ms", 60_000, 0);
        let session_ms = number("session.timeout.ms", 10_000, 1);
        let heartbeat_ms = number("heartbeat.interval.ms", 3_000, 1);
        let rebalance_ms = number("rebalance.timeout.ms", 60_000, 1);
        let scheduled_delay_ms = number("scheduled.rebalance.max.delay.ms", 300_000, 0);
        let exactly_once_source = match props
            .get("exactly.once.source.support")
            .map(|v| v.trim().to_ascii_lowercase())
        {
            None => false,
            Some(v) if v == "enabled" => true,
            Some(v) if v == "disabled" || v == "preparing" => false,
            Some(v) => {
                errors.push(ConfigError::invalid(
                    "exactly.once.source.support",
                    &v,
                    "String must be one of (case insensitive): DISABLED, PREPARING, ENABLED",
                ));
                false
            }
        };
        let mut flag = |key: &str| match props.get(key).map(|v| v.trim().to_ascii_lowercase()) {
            None => true,
            Some(v) if v == "true" => true,
            Some(v) if v == "false" => false,
            Some(v) => {
                errors.push(ConfigError::invalid(
                    key,
                    &v,
                    "Expected value to be either true or false",
                ));
                true
            }
        };
        let topic_tracking = flag("topic.tracking.enable");
        let topic_tracking_allow_reset = flag("topic.tracking.allow.reset");
        let protocol = match props.get("connect.protocol") {
            None => crate::group::Protocol::Compatible,
            Some(v) => crate::group::Protocol::from_config(v).unwrap_or_else(|| {
                errors.push(ConfigError::invalid(
                    "connect.protocol",
                    v,
                    "String must be one of (case insensitive): EAGER, COMPATIBLE, SESSIONED",
                ));
                crate::group::Protocol::Compatible
            }),
        };
        let listeners = text("listeners", "http://:8083");
        let first = listeners.split(',').next().unwrap_or("").trim().to_string();
        let (rest_host, rest_port) = match parse_listener(&first) {
            Some(hp) => hp,
            None => {
                errors.push(ConfigError::invalid(
                    "listeners",
                    &listeners,
                    "expected http://host:port",
                ));
                (String::new(), 8083)
            }
        };
        let advertised_port = match props.get("rest.advertised.port") {
            Some(p) => p.trim().parse().unwrap_or(rest_port),
            None => rest_port,
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        let prefixed = |prefix: &str| -> Props {
            props
                .iter()
                .filter_map(|(k, v)| k.strip_prefix(prefix).map(|k| (k.to_string(), v.clone())))
                .collect()
        };
        let advertised_host = props
            .get("rest.advertised.host.name")
            .cloned()
            .unwrap_or_else(|| {
                if rest_host.is_empty() || rest_host == "0.0.0.0" {
                    "127.0.0.1".to_string()
                } else {
                    rest_host.clone()
                }
            });
        Ok(WorkerConfig {
            bootstrap_servers: props["bootstrap.servers"]
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
            group_id: props["group.id"].clone(),
            config_storage_topic: props["config.storage.topic"].clone(),
            config_storage_replication_factor: config_rf as i16,
            offset_storage_topic: props["offset.storage.topic"].clone(),
            offset_storage_partitions: offset_partitions as i32,
            offset_storage_replication_factor: offset_rf as i16,
            status_storage_topic: props["status.storage.topic"].clone(),
            status_storage_partitions: status_partitions as i32,
            status_storage_replication_factor: status_rf as i16,
            key_converter: props["key.converter"].clone(),
            value_converter: props["value.converter"].clone(),
            key_converter_props: prefixed("key.converter."),
            value_converter_props: prefixed("value.converter."),
            offset_flush_interval: Duration::from_millis(flush_ms as u64),
            session_timeout: Duration::from_millis(session_ms as u64),
            heartbeat_interval: Duration::from_millis(heartbeat_ms as u64),
            rebalance_timeout: Duration::from_millis(rebalance_ms as u64),
            protocol,
            exactly_once_source,
            topic_tracking,
            topic_tracking_allow_reset,
            scheduled_rebalance_max_delay: Duration::from_millis(scheduled_delay_ms as u64),
            rest_host,
            rest_port,
            advertised_host,
            advertised_port,
            props,
        })
    }

    /// This worker's id in statuses (`host:port` of its advertised REST URL).
    pub fn worker_id(&self) -> String {
        format!("{}:{}", self.advertised_host, self.advertised_port)
    }

    pub fn rest_url(&self) -> String {
        format!("http://{}:{}/", self.advertised_host, self.advertised_port)
    }
}

/// `http://host:port` (host may be empty: every interface).
fn parse_listener(listener: &str) -> Option<(String, u16)> {
    let rest = listener
        .strip_prefix("http://")
        .or_else(|| listener.strip_prefix("HTTP://"))?;
    let (host, port) = rest.rsplit_once(':')?;
    Some((host.to_string(), port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISTRIBUTED: &str = "\
# as in Kafka's config/connect-distributed.properties
bootstrap.servers=localhost:9092
group.id=connect-cluster
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.topic=connect-offsets
offset.storage.replication.factor=1
config.storage.topic=connect-configs
config.storage.replication.factor=1
status.storage.topic=connect-status
status.storage.replication.factor=1
offset.flush.interval.ms=10000
listeners=HTTP://:8083
";

    #[test]
    fn kafkas_sample_file_is_read_with_connects_defaults() {
        let config = WorkerConfig::from_props(WorkerConfig::parse_properties(DISTRIBUTED)).unwrap();
        assert_eq!(config.group_id, "connect-cluster");
        assert_eq!(config.offset_storage_partitions, 25);
        assert_eq!(config.status_storage_partitions, 5);
        assert_eq!(config.offset_storage_replication_factor, 1);
        assert_eq!(config.offset_flush_interval, Duration::from_secs(10));
        assert_eq!((config.rest_host.as_str(), config.rest_port), ("", 8083));
        assert_eq!(config.worker_id(), "127.0.0.1:8083");
        assert_eq!(config.value_converter_props["schemas.enable"], "true");
    }

    #[test]
    fn missing_and_bad_keys_are_named() {
        let mut props = WorkerConfig::parse_properties(DISTRIBUTED);
        props.remove("group.id");
        props.insert("offset.storage.partitions".into(), "zero".into());
        let error = WorkerConfig::from_props(props).unwrap_err();
        let keys: Vec<&str> = error.errors.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["group.id", "offset.storage.partitions"]);
        assert_eq!(
            error.errors[0].1,
            "Missing required configuration \"group.id\" which has no default value."
        );
    }
}
