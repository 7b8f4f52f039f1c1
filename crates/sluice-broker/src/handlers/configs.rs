//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics and brokers.
//!
//! Topic configs are `ConfigRecord`s (resource type 2) in the metadata log, validated as
//! Kafka validates them. Broker configs set here are dynamic (resource type 4; name = a
//! node id, or "" for the cluster-wide default) and limited to the keys Kafka lets change
//! without a restart that Sluice applies: the log keys that are topic defaults
//! (`log.retention.ms`, `log.segment.bytes`, ...), which take effect on every log at
//! once, and the log cleaner's (`log.cleaner.threads`, ...), read at its next pass.

use std::collections::BTreeMap;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::*;
use sluice_metadata::{ConfigRecord, MetadataImage, MetadataRecord};

use super::common::str_bytes;
use crate::broker::{BROKER_RESOURCE, Broker, TOPIC_RESOURCE};
use crate::errors;
use crate::request::RequestContext;
use crate::topic_config::{self, BrokerLayers, ConfigType, TOPIC_KEYS, source};

type Refusal = (i16, String);

/// Broker keys that can be changed dynamically: the synonyms of topic keys.
fn dynamic_broker_key(name: &str) -> Option<&'static topic_config::TopicKey> {
    let base = match name {
        "log.retention.minutes" | "log.retention.hours" => "log.retention.ms",
        "log.roll.hours" => "log.roll.ms",
        other => other,
    };
    TOPIC_KEYS.iter().find(|k| k.synonym == Some(base))
}

/// The log cleaner's broker keys that Kafka updates without a restart (cluster-wide or
/// per broker); the cleaner reads them at each pass ([`crate::log_cleaner`]).
const DYNAMIC_CLEANER_KEYS: &[&str] = &[
    "log.cleaner.threads",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.max.bytes.per.second",
];

fn check_broker_name(broker: &Broker, name: &str) -> Result<(), Refusal> {
    if name.is_empty() || name == broker.node_id.to_string() {
        Ok(())
    } else {
        Err((
            errors::INVALID_REQUEST,
            format!(
                "Unexpected broker id, expected {} or empty string, but received {name}",
                broker.node_id
            ),
        ))
    }
}

pub async fn describe_configs(
    context: &RequestContext,
    request: DescribeConfigsRequest,
) -> DescribeConfigsResponse {
    let version = context.version;
    let broker = &context.broker;
    let image = broker.image();
    let layers = BrokerLayers::new(&broker.config, &image);
    let results = request
        .resources
        .iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let wanted = |key: &str| {
                resource
                    .configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| k.as_str() == key))
            };
            let entry = |key: &str,
                         value: Option<String>,
                         source: i8,
                         config_type: ConfigType,
                         synonyms: Vec<(String, String, i8)>| {
                let mut entry = DescribeConfigsResourceResult::default()
                    .with_name(str_bytes(key))
                    .with_value(value.map(str_bytes))
                    .with_config_source(source);
                if request.include_synonyms {
                    entry = entry.with_synonyms(
                        synonyms
                            .into_iter()
                            .map(|(name, value, source)| {
                                DescribeConfigsSynonym::default()
                                    .with_name(str_bytes(name))
                                    .with_value(Some(str_bytes(value)))
                                    .with_source(source)
                            })
                            .collect(),
                    );
                }
                if version >= 3 {
                    entry = entry.with_config_type(config_type as i8);
                }
                entry
            };
            match resource.resource_type {
                TOPIC_RESOURCE => match image.topic(&name) {
                    None => result
                        .with_error_code(errors::UNKNOWN_TOPIC_OR_PARTITION)
                        .with_error_message(Some(str_bytes(format!(
                            "The topic '{name}' does not exist."
                        )))),
                    Some(_) => {
                        let overrides = image.configs(TOPIC_RESOURCE, &name);
                        let configs = topic_config::effective(&layers, overrides)
                            .into_iter()
                            .filter(|(key, _)| wanted(key.name))
                            .map(|(key, e)| {
                                entry(
                                    key.name,
                                    Some(e.value),
                                    e.source,
                                    key.config_type(),
                                    e.synonyms,
                                )
                            })
                            .collect();
                        result.with_configs(configs)
                    }
                },
                BROKER_RESOURCE => match check_broker_name(broker, &name) {
                    Err((code, message)) => result
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(message))),
                    Ok(()) if name.is_empty() => {
                        // The cluster-wide default resource: only its dynamic configs.
                        let configs = layers
                            .cluster
                            .into_iter()
                            .flatten()
                            .filter(|(key, _)| wanted(key))
                            .map(|(key, value)| {
                                let synonyms = vec![(
                                    key.clone(),
                                    value.clone(),
                                    source::DYNAMIC_DEFAULT_BROKER_CONFIG,
                                )];
                                entry(
                                    key,
                                    Some(value.clone()),
                                    source::DYNAMIC_DEFAULT_BROKER_CONFIG,
                                    ConfigType::String,
                                    synonyms,
                                )
                            })
                            .collect();
                        result.with_configs(configs)
                    }
                    Ok(()) => {
                        let configs = broker
                            .config
                            .entries()
                            .filter(|(key, _)| wanted(key))
                            .map(|(key, value)| {
                                let (value, source) = layers
                                    .get(key)
                                    .map(|(v, s)| (Some(v), s))
                                    .unwrap_or((value.map(str::to_string), source::DEFAULT_CONFIG));
                                let synonyms = value
                                    .clone()
                                    .map(|v| vec![(key.to_string(), v, source)])
                                    .unwrap_or_default();
                                entry(key, value, source, ConfigType::String, synonyms)
                            })
                            .collect::<Vec<_>>();
                        // KRaft's `broker.id` is the node id, reported as Kafka does.
                        let mut configs = configs;
                        if wanted("broker.id") {
                            let id = broker.node_id.to_string();
                            configs.push(entry(
                                "broker.id",
                                Some(id.clone()),
                                source::STATIC_BROKER_CONFIG,
                                ConfigType::Int,
                                vec![("broker.id".into(), id, source::STATIC_BROKER_CONFIG)],
                            ));
                        }
                        result.with_configs(configs)
                    }
                },
                other => result
                    .with_error_code(errors::INVALID_REQUEST)
                    .with_error_message(Some(str_bytes(format!(
                        "Sluice does not describe configs of resource type {other}"
                    )))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// The new explicit configs of a resource after an alteration, checked; the records that
/// make the change.
fn plan(
    broker: &Broker,
    image: &MetadataImage,
    resource_type: i8,
    name: &str,
    next: BTreeMap<String, String>,
) -> Result<Vec<MetadataRecord>, Refusal> {
    let current = image
        .configs(resource_type, name)
        .cloned()
        .unwrap_or_default();
    match resource_type {
        TOPIC_RESOURCE => {
            if image.topic(name).is_none() {
                return Err((
                    errors::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("The topic '{name}' does not exist."),
                ));
            }
            topic_config::validate_overrides(
                next.iter().map(|(k, v)| (k.as_str(), Some(v.as_str()))),
            )
            .map_err(|m| (errors::INVALID_CONFIG, m))?;
        }
        BROKER_RESOURCE => {
            check_broker_name(broker, name)?;
            // A TLS listener's key store and trust store (reloaded when applied).
            if next
                .keys()
                .any(|key| crate::tls_reload::dynamic_ssl_key(key).is_some())
            {
                if name.is_empty() {
                    let keys: Vec<&str> = next
                        .keys()
                        .filter(|key| crate::tls_reload::dynamic_ssl_key(key).is_some())
                        .map(String::as_str)
                        .collect();
                    return Err((
                        errors::INVALID_CONFIG,
                        format!(
                            "Cannot update these configs at default cluster level, broker id must be specified: {}",
                            keys.join(", ")
                        ),
                    ));
                }
                if name == broker.node_id.to_string() {
                    crate::tls_reload::validate_dynamic(&broker.config, &next)
                        .map_err(|m| (errors::INVALID_CONFIG, m))?;
                }
            }
            for (key, value) in &next {
                if crate::tls_reload::dynamic_ssl_key(key).is_some() {
                    continue;
                }
                if DYNAMIC_CLEANER_KEYS.contains(&key.as_str()) {
                    crate::config::BrokerConfig::validate_value(key, value)
                        .map_err(|e| (errors::INVALID_CONFIG, e.to_string()))?;
                    continue;
                }
                let Some(topic_key) = dynamic_broker_key(key) else {
                    return Err((
                        errors::INVALID_CONFIG,
                        format!("Cannot update these configs dynamically: Set({key})"),
                    ));
                };
                if key.ends_with(".minutes") || key.ends_with(".hours") {
                    value.trim().parse::<i32>().map_err(|_| {
                        (
                            errors::INVALID_CONFIG,
                            format!("Invalid value {value} for configuration {key}: Not a number of type INT"),
                        )
                    })?;
                } else {
                    topic_key
                        .validate(value)
                        .map_err(|m| (errors::INVALID_CONFIG, m.replace(topic_key.name, key)))?;
                }
            }
        }
        other => {
            return Err((
                errors::INVALID_REQUEST,
                format!("Sluice does not alter configs of resource type {other}"),
            ));
        }
    }
    let record = |key: &str, value: Option<String>| {
        MetadataRecord::Config(ConfigRecord {
            resource_type,
            resource_name: name.to_string(),
            name: key.to_string(),
            value,
        })
    };
    let mut records: Vec<MetadataRecord> = current
        .keys()
        .filter(|k| !next.contains_key(*k))
        .map(|k| record(k, None))
        .collect();
    records.extend(
        next.iter()
            .filter(|(k, v)| current.get(*k) != Some(v))
            .map(|(k, v)| record(k, Some(v.clone()))),
    );
    Ok(records)
}

/// The records a config change writes (none when `validate_only`).
fn plan_change(
    broker: &Broker,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&mut BTreeMap<String, String>) -> Result<(), Refusal>,
) -> Result<Vec<MetadataRecord>, Refusal> {
    let image = broker.image();
    let mut next = image
        .configs(resource_type, name)
        .cloned()
        .unwrap_or_default();
    change(&mut next)?;
    let records = plan(broker, &image, resource_type, name, next)?;
    if validate_only {
        return Ok(Vec::new());
    }
    Ok(records)
}

/// Writes a planned config change.
async fn write(
    broker: &Broker,
    records: Result<Vec<MetadataRecord>, Refusal>,
) -> Result<(), Refusal> {
    let records = records?;
    if records.is_empty() {
        return Ok(());
    }
    broker.write_metadata(&records).await.map_err(|error| {
        tracing::error!(%error, "config write failed");
        (errors::UNKNOWN_SERVER_ERROR, error.to_string())
    })
}

pub async fn alter_configs(
    context: &RequestContext,
    request: AlterConfigsRequest,
) -> AlterConfigsResponse {
    let broker = &context.broker;
    let _controller = broker.controller_lock().await;
    let planned: Vec<_> = request
        .resources
        .iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let outcome = plan_change(
                broker,
                resource.resource_type,
                &name,
                request.validate_only,
                |next| {
                    // AlterConfigs replaces the resource's whole explicit config.
                    next.clear();
                    for config in &resource.configs {
                        if let Some(value) = &config.value {
                            next.insert(config.name.to_string(), value.to_string());
                        }
                    }
                    Ok(())
                },
            );
            let response = alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            (response, outcome)
        })
        .collect();
    let mut responses = Vec::new();
    for (response, outcome) in planned {
        responses.push(match write(broker, outcome).await {
            Ok(()) => response,
            Err((code, message)) => response
                .with_error_code(code)
                .with_error_message(Some(str_bytes(message))),
        });
    }
    AlterConfigsResponse::default().with_responses(responses)
}

pub async fn incremental_alter_configs(
    context: &RequestContext,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let broker = &context.broker;
    let _controller = broker.controller_lock().await;
    let image = broker.image();
    let layers = BrokerLayers::new(&broker.config, &image);
    let planned: Vec<_> = request
        .resources
        .iter()
        .map(|resource| {
            let name = resource.resource_name.to_string();
            let overrides = image.configs(resource.resource_type, &name).cloned();
            let outcome = plan_change(broker, resource.resource_type, &name, request.validate_only, |next| {
                for config in &resource.configs {
                    let key = config.name.to_string();
                    let value = config.value.as_ref().map(|v| v.to_string());
                    match config.config_operation {
                        // SET
                        0 => {
                            let value = value.ok_or_else(|| {
                                (
                                    errors::INVALID_REQUEST,
                                    format!("Null value not supported for : {key}"),
                                )
                            })?;
                            next.insert(key, value);
                        }
                        // DELETE
                        1 => {
                            next.remove(&key);
                        }
                        // APPEND / SUBTRACT: list-typed keys only.
                        op @ (2 | 3) => {
                            let is_list = resource.resource_type == TOPIC_RESOURCE
                                && topic_config::topic_key(&key)
                                    .is_some_and(|k| k.config_type() == ConfigType::List);
                            if !is_list {
                                return Err((
                                    errors::INVALID_CONFIG,
                                    format!("Config value append is not allowed for config key: {key}"),
                                ));
                            }
                            let current = next.get(&key).cloned().unwrap_or_else(|| {
                                topic_config::value_of(&layers, overrides.as_ref(), &key)
                            });
                            let mut items: Vec<String> = current
                                .split(',')
                                .map(|s| s.trim().to_string())
                                .filter(|s| !s.is_empty())
                                .collect();
                            for item in value.unwrap_or_default().split(',').map(str::trim) {
                                if item.is_empty() {
                                    continue;
                                }
                                if op == 2 {
                                    if !items.iter().any(|i| i == item) {
                                        items.push(item.to_string());
                                    }
                                } else {
                                    items.retain(|i| i != item);
                                }
                            }
                            next.insert(key, items.join(","));
                        }
                        other => {
                            return Err((
                                errors::INVALID_REQUEST,
                                format!("Unknown config operation {other}"),
                            ));
                        }
                    }
                }
                Ok(())
            });
            let response = incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            (response, outcome)
        })
        .collect();
    let mut responses = Vec::new();
    for (response, outcome) in planned {
        responses.push(match write(broker, outcome).await {
            Ok(()) => response,
            Err((code, message)) => response
                .with_error_code(code)
                .with_error_message(Some(str_bytes(message))),
        });
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}
