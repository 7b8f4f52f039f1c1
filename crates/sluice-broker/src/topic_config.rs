//! Kafka 4.1's topic-level configuration keys: their types, validation, defaults and
//! broker synonyms, and how a topic's effective [`LogConfig`] is derived from the
//! broker's configuration layers ([`BrokerLayers`]) plus the topic's overrides (the
//! `ConfigRecord`s in the metadata image).
//!
//! A topic key's value comes from, in order: the topic's override (source TOPIC_CONFIG);
//! the broker synonym set dynamically for this node (DYNAMIC_BROKER_CONFIG), set
//! dynamically as the cluster-wide default (DYNAMIC_DEFAULT_BROKER_CONFIG) or set in the
//! static configuration (STATIC_BROKER_CONFIG); else Kafka's default (DEFAULT_CONFIG).

use std::collections::BTreeMap;

use sluice_protocol::TimestampType;
use sluice_storage::LogConfig;

use crate::config::BrokerConfig;

/// Kafka's internal topics.
pub fn is_internal(topic: &str) -> bool {
    topic == "__consumer_offsets"
        || topic == "__transaction_state"
        || topic == "__share_group_state"
}

pub use sluice_metadata::{BROKER_RESOURCE, TOPIC_RESOURCE};

/// Kafka's `ConfigEntry.ConfigType` ids (DescribeConfigs v3+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
}

/// Kafka's `DescribeConfigsResponse.ConfigSource` ids.
pub mod source {
    pub const TOPIC_CONFIG: i8 = 1;
    pub const DYNAMIC_BROKER_CONFIG: i8 = 2;
    pub const DYNAMIC_DEFAULT_BROKER_CONFIG: i8 = 3;
    pub const STATIC_BROKER_CONFIG: i8 = 4;
    pub const DEFAULT_CONFIG: i8 = 5;
}

#[derive(Debug, Clone, Copy)]
enum Check {
    /// An integer (i32) at least `min`.
    Int(i64),
    /// A long at least `min`.
    Long(i64),
    Double {
        min: f64,
        max: f64,
    },
    Bool,
    Choice(&'static [&'static str]),
    /// A non-empty comma-separated subset of these values.
    Subset(&'static [&'static str]),
    /// Any string (replica throttle lists and the like).
    Any,
}

/// One topic key.
pub struct TopicKey {
    pub name: &'static str,
    /// The broker key whose value is this key's default, when the broker sets it.
    pub synonym: Option<&'static str>,
    /// Kafka's default when neither the topic nor the broker sets it.
    pub default: &'static str,
    check: Check,
}

impl TopicKey {
    pub fn config_type(&self) -> ConfigType {
        match self.check {
            Check::Int(_) => ConfigType::Int,
            Check::Long(_) => ConfigType::Long,
            Check::Double { .. } => ConfigType::Double,
            Check::Bool => ConfigType::Boolean,
            Check::Choice(_) | Check::Any => ConfigType::String,
            Check::Subset(_) => ConfigType::List,
        }
    }

    /// Kafka's validation of a value for this key: `Err` is the reason, worded as
    /// Kafka's ConfigException is.
    pub fn validate(&self, value: &str) -> Result<(), String> {
        let value = value.trim();
        let bad = |expected: String| {
            Err(format!(
                "Invalid value {value} for configuration {}: {expected}",
                self.name
            ))
        };
        match self.check {
            Check::Int(min) => match value.parse::<i32>() {
                Ok(v) if i64::from(v) >= min => Ok(()),
                Ok(_) => bad(format!("Value must be at least {min}")),
                Err(_) => bad("Not a number of type INT".into()),
            },
            Check::Long(min) => match value.parse::<i64>() {
                Ok(v) if v >= min => Ok(()),
                Ok(_) => bad(format!("Value must be at least {min}")),
                Err(_) => bad("Not a number of type LONG".into()),
            },
            Check::Double { min, max } => match value.parse::<f64>() {
                Ok(v) if (min..=max).contains(&v) => Ok(()),
                Ok(_) => bad(format!("Value must be between {min} and {max}")),
                Err(_) => bad("Not a number of type DOUBLE".into()),
            },
            Check::Bool => match value.to_ascii_lowercase().as_str() {
                "true" | "false" => Ok(()),
                _ => bad("Expected value to be either true or false".into()),
            },
            Check::Choice(allowed) => {
                if allowed.contains(&value) {
                    Ok(())
                } else {
                    bad(format!("String must be one of: {}", allowed.join(", ")))
                }
            }
            Check::Subset(allowed) => {
                let items: Vec<&str> = value.split(',').map(str::trim).collect();
                if !items.is_empty() && items.iter().all(|item| allowed.contains(item)) {
                    Ok(())
                } else {
                    bad(format!("String must be one of: {}", allowed.join(", ")))
                }
            }
            Check::Any => Ok(()),
        }
    }
}

const fn key(
    name: &'static str,
    synonym: Option<&'static str>,
    default: &'static str,
    check: Check,
) -> TopicKey {
    TopicKey {
        name,
        synonym,
        default,
        check,
    }
}

const LONG_MAX: &str = "9223372036854775807";

/// Kafka 4.1's topic keys, in name order (as DescribeConfigs lists them).
pub const TOPIC_KEYS: &[TopicKey] = &[
    key(
        "cleanup.policy",
        Some("log.cleanup.policy"),
        "delete",
        Check::Subset(&["compact", "delete"]),
    ),
    key(
        "compression.gzip.level",
        Some("compression.gzip.level"),
        "-1",
        Check::Int(-1),
    ),
    key(
        "compression.lz4.level",
        Some("compression.lz4.level"),
        "9",
        Check::Int(1),
    ),
    key(
        "compression.type",
        Some("compression.type"),
        "producer",
        Check::Choice(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
    ),
    key(
        "compression.zstd.level",
        Some("compression.zstd.level"),
        "3",
        Check::Int(-131072),
    ),
    key(
        "delete.retention.ms",
        Some("log.cleaner.delete.retention.ms"),
        "86400000",
        Check::Long(0),
    ),
    key(
        "file.delete.delay.ms",
        Some("log.segment.delete.delay.ms"),
        "60000",
        Check::Long(0),
    ),
    key(
        "flush.messages",
        Some("log.flush.interval.messages"),
        LONG_MAX,
        Check::Long(1),
    ),
    key(
        "flush.ms",
        Some("log.flush.interval.ms"),
        LONG_MAX,
        Check::Long(0),
    ),
    key(
        "follower.replication.throttled.replicas",
        None,
        "",
        Check::Any,
    ),
    key(
        "index.interval.bytes",
        Some("log.index.interval.bytes"),
        "4096",
        Check::Int(0),
    ),
    key(
        "leader.replication.throttled.replicas",
        None,
        "",
        Check::Any,
    ),
    key(
        "local.retention.bytes",
        Some("log.local.retention.bytes"),
        "-2",
        Check::Long(-2),
    ),
    key(
        "local.retention.ms",
        Some("log.local.retention.ms"),
        "-2",
        Check::Long(-2),
    ),
    key(
        "max.compaction.lag.ms",
        Some("log.cleaner.max.compaction.lag.ms"),
        LONG_MAX,
        Check::Long(1),
    ),
    key(
        "max.message.bytes",
        Some("message.max.bytes"),
        "1048588",
        Check::Int(0),
    ),
    key(
        "message.timestamp.after.max.ms",
        Some("log.message.timestamp.after.max.ms"),
        "3600000",
        Check::Long(0),
    ),
    key(
        "message.timestamp.before.max.ms",
        Some("log.message.timestamp.before.max.ms"),
        LONG_MAX,
        Check::Long(0),
    ),
    key(
        "message.timestamp.type",
        Some("log.message.timestamp.type"),
        "CreateTime",
        Check::Choice(&["CreateTime", "LogAppendTime"]),
    ),
    key(
        "min.cleanable.dirty.ratio",
        Some("log.cleaner.min.cleanable.ratio"),
        "0.5",
        Check::Double { min: 0.0, max: 1.0 },
    ),
    key(
        "min.compaction.lag.ms",
        Some("log.cleaner.min.compaction.lag.ms"),
        "0",
        Check::Long(0),
    ),
    key(
        "min.insync.replicas",
        Some("min.insync.replicas"),
        "1",
        Check::Int(1),
    ),
    key("preallocate", Some("log.preallocate"), "false", Check::Bool),
    key("remote.log.copy.disable", None, "false", Check::Bool),
    key("remote.log.delete.on.disable", None, "false", Check::Bool),
    key("remote.storage.enable", None, "false", Check::Bool),
    key(
        "retention.bytes",
        Some("log.retention.bytes"),
        "-1",
        Check::Long(i64::MIN),
    ),
    key(
        "retention.ms",
        Some("log.retention.ms"),
        "604800000",
        Check::Long(-1),
    ),
    key(
        "segment.bytes",
        Some("log.segment.bytes"),
        "1073741824",
        Check::Int(1024 * 1024),
    ),
    key(
        "segment.index.bytes",
        Some("log.index.size.max.bytes"),
        "10485760",
        Check::Int(4),
    ),
    key(
        "segment.jitter.ms",
        Some("log.roll.jitter.ms"),
        "0",
        Check::Long(0),
    ),
    key(
        "segment.ms",
        Some("log.roll.ms"),
        "604800000",
        Check::Long(1),
    ),
    key(
        "unclean.leader.election.enable",
        Some("unclean.leader.election.enable"),
        "false",
        Check::Bool,
    ),
];

pub fn topic_key(name: &str) -> Option<&'static TopicKey> {
    TOPIC_KEYS.iter().find(|k| k.name == name)
}

/// Checks a set of topic overrides; `Err` names the first bad key (INVALID_CONFIG).
pub fn validate_overrides<'a>(
    overrides: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
) -> Result<(), String> {
    for (name, value) in overrides {
        let Some(key) = topic_key(name) else {
            return Err(format!("Unknown topic config name: {name}"));
        };
        if let Some(value) = value {
            key.validate(value)?;
        }
    }
    Ok(())
}

/// A topic key's effective value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub value: String,
    pub source: i8,
    /// (name, value, source) from the most to the least specific, as DescribeConfigs'
    /// synonyms list them.
    pub synonyms: Vec<(String, String, i8)>,
}

/// The broker-level layers under a topic's overrides: dynamic configs of this broker
/// (ConfigRecords for resource name = node id), dynamic cluster-wide defaults (resource
/// name ""), then the static configuration.
#[derive(Clone, Copy)]
pub struct BrokerLayers<'a> {
    pub config: &'a BrokerConfig,
    pub node: Option<&'a BTreeMap<String, String>>,
    pub cluster: Option<&'a BTreeMap<String, String>>,
}

impl<'a> BrokerLayers<'a> {
    pub fn new(config: &'a BrokerConfig, image: &'a sluice_metadata::MetadataImage) -> Self {
        BrokerLayers {
            config,
            node: image.configs(BROKER_RESOURCE, &config.node_id().to_string()),
            cluster: image.configs(BROKER_RESOURCE, ""),
        }
    }

    /// Only the static configuration (no dynamic layers).
    pub fn static_only(config: &'a BrokerConfig) -> Self {
        BrokerLayers {
            config,
            node: None,
            cluster: None,
        }
    }

    /// A broker key's value from the most specific layer that sets it:
    /// (value, source).
    pub fn get(&self, name: &str) -> Option<(String, i8)> {
        if let Some(value) = self.node.and_then(|m| m.get(name)) {
            return Some((value.clone(), source::DYNAMIC_BROKER_CONFIG));
        }
        if let Some(value) = self.cluster.and_then(|m| m.get(name)) {
            return Some((value.clone(), source::DYNAMIC_DEFAULT_BROKER_CONFIG));
        }
        if self.config.is_explicit(name) {
            return Some((
                self.config.get(name)?.to_string(),
                source::STATIC_BROKER_CONFIG,
            ));
        }
        None
    }
}

/// The broker's values for a topic key's synonyms, most specific first (retention and
/// roll times also come in minutes and hours forms, converted to ms as Kafka does).
fn broker_values(layers: &BrokerLayers, key: &TopicKey) -> Vec<(String, String, i8)> {
    let Some(synonym) = key.synonym else {
        return Vec::new();
    };
    let forms: &[(&str, i64)] = match synonym {
        "log.retention.ms" => &[
            ("log.retention.ms", 1),
            ("log.retention.minutes", 60_000),
            ("log.retention.hours", 3_600_000),
        ],
        "log.roll.ms" => &[("log.roll.ms", 1), ("log.roll.hours", 3_600_000)],
        _ => &[],
    };
    let mut found = Vec::new();
    if forms.is_empty() {
        if let Some((value, source)) = layers.get(synonym) {
            found.push((synonym.to_string(), value, source));
        }
    } else {
        for (name, factor) in forms {
            if let Some((value, source)) = layers.get(name) {
                let value = match value.trim().parse::<i64>() {
                    Ok(v) => v.saturating_mul(*factor).to_string(),
                    Err(_) => value,
                };
                found.push((name.to_string(), value, source));
            }
        }
        found.sort_by_key(|(_, _, source)| match *source {
            source::DYNAMIC_BROKER_CONFIG => 0,
            source::DYNAMIC_DEFAULT_BROKER_CONFIG => 1,
            _ => 2,
        });
    }
    found
}

/// Kafka's broker-level synonyms of a broker key, most specific first
/// (`DynamicBrokerConfig.brokerConfigSynonyms`).
fn broker_synonym_forms(primary: &'static str) -> Vec<&'static str> {
    match primary {
        "log.roll.ms" => vec!["log.roll.ms", "log.roll.hours"],
        "log.roll.jitter.ms" => vec!["log.roll.jitter.ms", "log.roll.jitter.hours"],
        "log.flush.interval.ms" => vec!["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
        "log.retention.ms" => vec![
            "log.retention.ms",
            "log.retention.minutes",
            "log.retention.hours",
        ],
        other => vec![other],
    }
}

/// DescribeConfigs' synonyms of a topic key at the broker levels, as Kafka lists them:
/// every form of the broker key from the dynamic per-broker, dynamic cluster-default,
/// static and default layers, with the value as written there; then, as Kafka does,
/// everything before the first entry named like the primary broker key is dropped (so
/// `retention.ms` on a broker that sets only `log.retention.hours` reports no synonyms
/// and source DEFAULT_CONFIG, exactly as Kafka 4.1 answers).
fn kafka_synonyms(layers: &BrokerLayers, key: &TopicKey) -> Vec<(String, String, i8)> {
    let Some(primary) = key.synonym else {
        return Vec::new();
    };
    let forms = broker_synonym_forms(primary);
    let mut all = Vec::new();
    for (map, source) in [
        (layers.node, source::DYNAMIC_BROKER_CONFIG),
        (layers.cluster, source::DYNAMIC_DEFAULT_BROKER_CONFIG),
    ] {
        for form in &forms {
            if let Some(value) = map.and_then(|m| m.get(*form)) {
                all.push((form.to_string(), value.clone(), source));
            }
        }
    }
    for form in &forms {
        if layers.config.is_explicit(form)
            && let Some(value) = layers.config.get(form)
        {
            all.push((
                form.to_string(),
                value.to_string(),
                source::STATIC_BROKER_CONFIG,
            ));
        }
    }
    for form in &forms {
        let default = match layers.config.definition_default(form) {
            Some(default) => default.map(str::to_string),
            None if *form == primary && !key.default.is_empty() => Some(key.default.to_string()),
            None => None,
        };
        if let Some(default) = default {
            all.push((form.to_string(), default, source::DEFAULT_CONFIG));
        }
    }
    let first = all
        .iter()
        .position(|(name, _, _)| name == primary)
        .unwrap_or(all.len());
    all.split_off(first)
}

/// The effective value of every topic key for a topic with these overrides.
pub fn effective(
    layers: &BrokerLayers,
    overrides: Option<&BTreeMap<String, String>>,
) -> Vec<(&'static TopicKey, Effective)> {
    TOPIC_KEYS
        .iter()
        .map(|key| {
            let topic_value = overrides.and_then(|o| o.get(key.name)).cloned();
            // The value: the override, else the broker's (in the topic key's unit),
            // else Kafka's default.
            let value = topic_value
                .clone()
                .or_else(|| {
                    broker_values(layers, key)
                        .into_iter()
                        .next()
                        .map(|(_, v, _)| v)
                })
                .unwrap_or_else(|| key.default.to_string());
            let mut synonyms = Vec::new();
            if let Some(topic_value) = topic_value {
                synonyms.push((key.name.to_string(), topic_value, source::TOPIC_CONFIG));
            }
            synonyms.extend(kafka_synonyms(layers, key));
            let source = synonyms
                .first()
                .map_or(source::DEFAULT_CONFIG, |(_, _, source)| *source);
            (
                key,
                Effective {
                    value,
                    source,
                    synonyms,
                },
            )
        })
        .collect()
}

/// The log configuration of a topic: every log key's effective value.
pub fn log_config(
    layers: &BrokerLayers,
    overrides: Option<&BTreeMap<String, String>>,
) -> LogConfig {
    let mut config = layers.config.log_config();
    for (key, effective) in effective(layers, overrides) {
        let value = effective.value.trim();
        let long = value.parse::<i64>().ok();
        match (key.name, long) {
            ("segment.bytes", Some(v)) => config.segment_bytes = v as u32,
            ("segment.ms", Some(v)) => config.segment_ms = v,
            ("segment.jitter.ms", Some(v)) => config.segment_jitter_ms = v,
            ("segment.index.bytes", Some(v)) => config.segment_index_bytes = v as u32,
            ("index.interval.bytes", Some(v)) => config.index_interval_bytes = v as u32,
            ("retention.ms", Some(v)) => config.retention_ms = if v < 0 { -1 } else { v },
            ("retention.bytes", Some(v)) => config.retention_bytes = v,
            ("flush.messages", Some(v)) => config.flush_messages = v,
            ("flush.ms", Some(v)) if effective.source != source::DEFAULT_CONFIG => {
                config.flush_ms = v
            }
            ("max.message.bytes", Some(v)) => config.max_message_bytes = v as u32,
            ("min.compaction.lag.ms", Some(v)) => config.min_compaction_lag_ms = v,
            ("max.compaction.lag.ms", Some(v)) => config.max_compaction_lag_ms = v,
            ("delete.retention.ms", Some(v)) => config.delete_retention_ms = v,
            ("min.cleanable.dirty.ratio", _) => {
                if let Ok(ratio) = value.parse::<f64>() {
                    config.min_cleanable_dirty_ratio = ratio;
                }
            }
            ("cleanup.policy", _) => {
                let policies: Vec<&str> = value.split(',').map(str::trim).collect();
                config.cleanup_delete = policies.contains(&"delete");
                config.cleanup_compact = policies.contains(&"compact");
            }
            ("message.timestamp.type", _) => {
                config.message_timestamp_type = if value == "LogAppendTime" {
                    TimestampType::LogAppendTime
                } else {
                    TimestampType::CreateTime
                }
            }
            _ => {}
        }
    }
    config
}

/// A topic's effective value for one key.
pub fn value_of(
    layers: &BrokerLayers,
    overrides: Option<&BTreeMap<String, String>>,
    name: &str,
) -> String {
    effective(layers, overrides)
        .into_iter()
        .find(|(key, _)| key.name == name)
        .map(|(_, e)| e.value)
        .unwrap_or_default()
}

/// A topic's `message.timestamp.before.max.ms` / `after.max.ms` (produce validation).
pub fn timestamp_bounds(
    layers: &BrokerLayers,
    overrides: Option<&BTreeMap<String, String>>,
) -> (i64, i64) {
    let parse = |name: &str| {
        value_of(layers, overrides, name)
            .trim()
            .parse::<i64>()
            .unwrap_or(i64::MAX)
    };
    (
        parse("message.timestamp.before.max.ms"),
        parse("message.timestamp.after.max.ms"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_in_name_order_and_defaults_validate() {
        for pair in TOPIC_KEYS.windows(2) {
            assert!(
                pair[0].name < pair[1].name,
                "{} before {}",
                pair[0].name,
                pair[1].name
            );
        }
        for key in TOPIC_KEYS {
            if !key.default.is_empty() {
                assert_eq!(key.validate(key.default), Ok(()), "{}", key.name);
            }
        }
    }

    #[test]
    fn validation_follows_kafka() {
        let retention = topic_key("retention.ms").unwrap();
        assert!(retention.validate("-1").is_ok());
        assert!(
            retention
                .validate("-2")
                .unwrap_err()
                .contains("at least -1")
        );
        assert!(retention.validate("soon").unwrap_err().contains("LONG"));
        let policy = topic_key("cleanup.policy").unwrap();
        assert!(policy.validate("compact,delete").is_ok());
        assert!(policy.validate("compress").is_err());
        let segment = topic_key("segment.bytes").unwrap();
        assert!(segment.validate("1000").is_err(), "below 1 MiB");
        assert!(validate_overrides([("no.such.key", Some("1"))]).is_err());
    }

    #[test]
    fn effective_values_come_from_topic_then_broker_then_default() {
        let broker = BrokerConfig::load(
            crate::config::EMBEDDED_SERVER_PROPERTIES,
            &[("log.retention.ms".into(), "1000".into())],
        )
        .unwrap()
        .config;
        let mut overrides = BTreeMap::new();
        overrides.insert("segment.ms".to_string(), "5000".to_string());
        let layers = BrokerLayers::static_only(&broker);
        let all = effective(&layers, Some(&overrides));
        let get = |name: &str| all.iter().find(|(k, _)| k.name == name).unwrap().1.clone();
        let segment = get("segment.ms");
        assert_eq!(
            (segment.value.as_str(), segment.source),
            ("5000", source::TOPIC_CONFIG)
        );
        let retention = get("retention.ms");
        assert_eq!(
            (retention.value.as_str(), retention.source),
            ("1000", source::STATIC_BROKER_CONFIG)
        );
        // log.retention.ms (set here), log.retention.hours (in the embedded file), default.
        assert_eq!(retention.synonyms.len(), 3);
        let delete = get("delete.retention.ms");
        assert_eq!(
            (delete.value.as_str(), delete.source),
            ("86400000", source::DEFAULT_CONFIG)
        );
        let config = log_config(&layers, Some(&overrides));
        assert_eq!((config.segment_ms, config.retention_ms), (5000, 1000));
    }
}
