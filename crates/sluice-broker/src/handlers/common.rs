//! What the handlers share: Kafka's string and id types from Sluice's, topic-name
//! validation and the live brokers a listener advertises. Kept apart from `mod.rs`
//! (the dispatch) so that the handlers depend on it and not on their dispatcher.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::broker::Broker;

pub(crate) fn str_bytes(text: impl Into<String>) -> StrBytes {
    StrBytes::from_string(text.into())
}

pub(crate) fn topic_name(text: impl Into<String>) -> TopicName {
    TopicName(str_bytes(text))
}

pub(crate) fn to_uuid(id: sluice_metadata::Uuid) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}

pub(crate) fn from_uuid(id: &uuid::Uuid) -> sluice_metadata::Uuid {
    *id.as_bytes()
}

/// Whether `name` is a legal topic name (Kafka's `Topic.validate`): 1-249 characters of
/// ASCII letters, digits, '.', '_' and '-', and not "." or "..".
pub(crate) fn valid_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > 249 {
        return Err(format!(
            "Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(format!(
            "Topic name is invalid: '{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

pub(crate) use crate::topic_config::is_internal;

/// The registered, unfenced brokers with an endpoint on `listener`: (id, host, port,
/// rack), from the metadata image.
pub(crate) fn live_brokers(
    image: &sluice_metadata::MetadataImage,
    listener: &str,
) -> Vec<(i32, String, i32, Option<String>)> {
    image
        .brokers()
        .filter_map(|b| {
            let endpoint = Broker::endpoint_of(image, b.broker_id, listener)?;
            Some((
                b.broker_id,
                endpoint.host,
                i32::from(endpoint.port),
                b.rack.clone(),
            ))
        })
        .collect()
}
