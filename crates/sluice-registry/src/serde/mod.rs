//! Serializers and deserializers that put Confluent's wire format on record keys and
//! values, for the Rust client: Avro ([`avro`]), Protobuf ([`protobuf`]) and JSON Schema
//! ([`json`]). A record written by Confluent's Java, Python or Go serializers reads here,
//! and the other way round.
//!
//! The wire format ([`wire`]): magic byte 0, the schema's id (4 bytes, big-endian), for
//! Protobuf the message indexes, then the payload in the schema's encoding. The subject a
//! schema is registered under comes from a [`SubjectNameStrategy`] (topic, record or
//! topic-record name); [`SerializerConfig`] carries Confluent's `auto.register.schemas`,
//! `use.latest.version`, `normalize.schemas` and `skip.known.types`.
//!
//! What this is not: a schema registry (that is [`crate::registry`]) nor a Kafka client —
//! it turns values into bytes and back, and a caller hands the bytes to
//! `sluice_client`'s producer or takes them from its consumer.
//!
//! Cost per record, warm caches: no registry request (ids, schemas and parsed schemas are
//! cached by [`crate::client`] and here); 5 header bytes (plus one index byte for the usual
//! Protobuf first message) copied before the payload; one allocation for the output
//! buffer besides what the encoder allocates. A cold cache costs one HTTP request per
//! schema (plus one per reference), once.

pub mod avro;
pub mod json;
pub mod protobuf;
pub mod strategy;
pub mod wire;

use std::collections::HashSet;

use crate::client::{
    ClientError, RegisteredSchema, Schema, SchemaReference, SchemaRegistryClient, SchemaType,
    VersionSelector,
};

pub use strategy::{
    RecordNameStrategy, SubjectNameStrategy, TopicNameStrategy, TopicRecordNameStrategy,
};
pub use wire::WireFormatError;

/// How deep references may nest (a reference's references ...), and how many one schema
/// may pull in: a bound on the requests one schema costs, and a guard against cycles.
pub const MAX_REFERENCE_DEPTH: usize = 32;
pub const MAX_REFERENCES: usize = 1000;

/// Parsed schemas a serializer or deserializer keeps (by id or by subject): enough for
/// every schema a topic sees in practice, bounded so a stream of ids cannot grow it.
pub const PARSED_SCHEMA_CACHE_CAPACITY: usize = 1000;

/// What can go wrong serializing or deserializing a record.
#[derive(Debug, thiserror::Error)]
pub enum SerdeError {
    #[error(transparent)]
    Registry(#[from] ClientError),
    #[error("malformed record: {0}")]
    WireFormat(#[from] WireFormatError),
    #[error("schema {id} is {found}, not {expected}")]
    SchemaTypeMismatch {
        id: i32,
        expected: SchemaType,
        found: SchemaType,
    },
    #[error("invalid schema: {0}")]
    InvalidSchema(String),
    /// The strategy needs a record name and the schema has none (an Avro primitive, a JSON
    /// Schema without `title`).
    #[error("{strategy} needs a record name and the schema has none")]
    NoRecordName { strategy: &'static str },
    #[error("Avro: {0}")]
    Avro(#[from] apache_avro::Error),
    #[error("Avro: the datum does not match the writer's schema (truncated or corrupt)")]
    CorruptAvroDatum,
    #[error("Protobuf: {0}")]
    Protobuf(String),
    #[error("schema {id} has no message at indexes {indexes:?}")]
    UnknownMessage { id: i32, indexes: Vec<i32> },
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("value does not match the JSON schema: {0}")]
    JsonValidation(String),
    #[error("references: {0}")]
    References(String),
    #[error("serializer configuration: {0}")]
    Config(String),
}

/// A serializer's settings, with Confluent's names and defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SerializerConfig {
    /// `auto.register.schemas` (default true): register the schema under the subject if it
    /// is not there; when false, it must already be registered (a lookup finds its id).
    pub auto_register_schemas: bool,
    /// `use.latest.version` (default false): write with the subject's latest version
    /// instead of the serializer's own schema. Excludes `auto.register.schemas`.
    pub use_latest_version: bool,
    /// `normalize.schemas` (default false): register and look up with `normalize=true`.
    pub normalize_schemas: bool,
    /// `skip.known.types` (default true, Protobuf only): do not register Google's
    /// well-known types (`google/protobuf/*.proto`) as references; every reader has them.
    pub skip_known_types: bool,
}

impl Default for SerializerConfig {
    fn default() -> SerializerConfig {
        SerializerConfig {
            auto_register_schemas: true,
            use_latest_version: false,
            normalize_schemas: false,
            skip_known_types: true,
        }
    }
}

impl SerializerConfig {
    /// Reads Confluent's keys; other keys are refused.
    pub fn from_map<K, V>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<SerializerConfig, SerdeError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut config = SerializerConfig::default();
        for (key, value) in entries {
            let (key, value) = (key.as_ref(), value.as_ref().trim());
            let flag = value
                .parse::<bool>()
                .map_err(|_| SerdeError::Config(format!("{key}: {value} is not true or false")))?;
            match key {
                "auto.register.schemas" => config.auto_register_schemas = flag,
                "use.latest.version" => config.use_latest_version = flag,
                "normalize.schemas" => config.normalize_schemas = flag,
                "skip.known.types" => config.skip_known_types = flag,
                other => return Err(SerdeError::Config(format!("unknown key {other}"))),
            }
        }
        config.validate()?;
        Ok(config)
    }

    /// As Confluent's Python serializers: the latest version is used as is, so registering
    /// the serializer's own schema as well would be contradictory.
    pub fn validate(&self) -> Result<(), SerdeError> {
        if self.use_latest_version && self.auto_register_schemas {
            return Err(SerdeError::Config(
                "use.latest.version and auto.register.schemas cannot both be true".into(),
            ));
        }
        Ok(())
    }
}

/// The id `schema` has under `subject`: registered there when `auto.register.schemas`,
/// else looked up (the shared path of the three serializers when not
/// `use.latest.version`).
pub(crate) async fn schema_id(
    client: &SchemaRegistryClient,
    config: &SerializerConfig,
    subject: &str,
    schema: &Schema,
) -> Result<i32, SerdeError> {
    if config.auto_register_schemas {
        Ok(client
            .register(subject, schema, config.normalize_schemas)
            .await?)
    } else {
        Ok(client
            .lookup(subject, schema, config.normalize_schemas)
            .await?
            .id)
    }
}

/// A reference resolved to the version it names.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedReference {
    /// The name the referring schema uses (an Avro full name, an import path, a `$ref`).
    pub name: String,
    pub version: RegisteredSchema,
}

/// Every schema `references` reach, transitively, dependencies before dependents, each
/// (subject, version) once.
pub(crate) async fn resolve_references(
    client: &SchemaRegistryClient,
    references: &[SchemaReference],
) -> Result<Vec<ResolvedReference>, SerdeError> {
    let mut resolved = Vec::new();
    let mut seen = HashSet::new();
    // Depth-first with an explicit stack (no async recursion): (reference, depth, whether
    // its own references were pushed already).
    let mut stack: Vec<(SchemaReference, usize, Option<RegisteredSchema>)> = references
        .iter()
        .rev()
        .map(|reference| (reference.clone(), 1, None))
        .collect();
    while let Some((reference, depth, fetched)) = stack.pop() {
        if depth > MAX_REFERENCE_DEPTH {
            return Err(SerdeError::References(format!(
                "nested deeper than {MAX_REFERENCE_DEPTH} (a cycle?) at {}",
                reference.subject
            )));
        }
        let key = (reference.subject.clone(), reference.version);
        if seen.contains(&key) {
            continue;
        }
        match fetched {
            None => {
                let version = client
                    .get_version(
                        &reference.subject,
                        VersionSelector::Number(reference.version),
                    )
                    .await?;
                let children = version.schema.references.clone();
                stack.push((reference, depth, Some(version)));
                for child in children.into_iter().rev() {
                    stack.push((child, depth + 1, None));
                }
            }
            Some(version) => {
                seen.insert(key);
                if resolved.len() >= MAX_REFERENCES {
                    return Err(SerdeError::References(format!(
                        "more than {MAX_REFERENCES} references"
                    )));
                }
                resolved.push(ResolvedReference {
                    name: reference.name,
                    version,
                });
            }
        }
    }
    Ok(resolved)
}

/// Checks the schema behind an id is of the type a deserializer reads.
pub(crate) fn expect_type(
    id: i32,
    schema: &Schema,
    expected: SchemaType,
) -> Result<(), SerdeError> {
    if schema.schema_type != expected {
        return Err(SerdeError::SchemaTypeMismatch {
            id,
            expected,
            found: schema.schema_type,
        });
    }
    Ok(())
}

/// Locks a cache; a poisoned lock is still usable (entries are whole values).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
