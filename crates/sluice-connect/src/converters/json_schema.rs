//! Confluent's `JsonSchemaConverter`: Connect data as JSON in Confluent's wire format
//! (magic byte 0, the schema's registry id as 4 big-endian bytes, the JSON text in
//! UTF-8), with the JSON Schema registered in (or looked up from) a schema registry.
//!
//! [`JsonSchemaData`] is the half that needs no registry (the schema text Confluent's
//! converter registers, and data both ways). [`JsonSchemaConverter`] adds the registry as
//! the converter configures Confluent's `KafkaJsonSchemaSerializer`/`Deserializer`:
//!
//! - writing, with `auto.register.schemas` (default true) the schema is registered under
//!   the subject; otherwise with `use.latest.version` the subject's latest schema's id is
//!   used (checked to read ours unless `latest.compatibility.strict=false`); otherwise the
//!   schema must already be registered under the subject.
//! - reading, the id's schema is fetched, and its version under the subject becomes the
//!   Connect schema's version when the schema carries no `connect.version`.
//! - the subject is `<topic>-key` / `<topic>-value`, or the schema's `title`
//!   (`RecordNameStrategy`), or both (`TopicRecordNameStrategy`).
//! - values are not checked against the schema unless `json.fail.invalid.schema=true`
//!   (Confluent's default is false on both sides).
//!
//! Errors are Confluent's converter's: `Converting Kafka Connect data to byte[] failed due
//! to serialization error of topic T: ` and `Converting byte[] to Kafka Connect data failed
//! due to serialization error of topic T: ` followed by the serializer's message and its
//! cause; an unreachable registry is `Network connection error while ...`.
//!
//! Blocking: as every registry-backed converter's (see [`super::registry`]). The registry
//! is asked once per schema: ids and read schemas are cached (bounded by
//! `max.schemas.per.subject` and `schemas.cache.config`), and a record with the same
//! Connect schema as the previous one reuses its generated text.
//!
//! Cost per record, once the caches are warm: writing, one JSON tree of the value built
//! and printed (allocations in proportion to the value), plus the schema's text generated
//! again when the record's schema is not the previous record's `Arc`; reading, the
//! payload parsed into a tree and converted. No registry call, and no validation unless
//! `json.fail.invalid.schema` asks for it (then the value is printed and re-read as
//! `serde_json` for the validator: a second pass over the bytes).

use std::sync::{Arc, Mutex};

use sluice_registry::client::{Schema as RegistrySchema, SchemaRegistryClient, SchemaType};
use sluice_registry::json_schema::JsonSchema as RegistryJsonSchema;
use sluice_registry::serde::wire::{WireFormatError, read_header, write_header};

use super::jackson::{self, JsonNode};
use super::json_schema_data::{JsonSchemaData, JsonSchemaDataConfig};
use super::registry::{Format, RegistryConverterConfig, WriterSchema, lock, run_blocking};
use super::{BoundedCache, Converter, Settings, with_cause};
use crate::ConfigError;
use crate::data::{DataError, SchemaRef, Value};

/// The texts this converter fails with.
const FORMAT: Format = Format::JsonSchema;

pub const FAIL_INVALID_SCHEMA_CONFIG: &str = "json.fail.invalid.schema";
pub const FAIL_UNKNOWN_PROPERTIES_CONFIG: &str = "json.fail.unknown.properties";

/// The JSON Schema converter's settings: the serializer's (shared by every
/// registry-backed converter), `json.fail.invalid.schema`, and `JsonSchemaDataConfig`'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonSchemaConverterConfig {
    pub registry: RegistryConverterConfig,
    pub data: JsonSchemaDataConfig,
    /// `json.fail.invalid.schema`: check each value against its schema, writing and
    /// reading.
    pub fail_invalid_schema: bool,
}

impl JsonSchemaConverterConfig {
    /// A configuration with Confluent's defaults for a registry at `urls`.
    pub fn new(urls: &str) -> JsonSchemaConverterConfig {
        JsonSchemaConverterConfig {
            registry: RegistryConverterConfig::new(urls),
            data: JsonSchemaDataConfig::default(),
            fail_invalid_schema: false,
        }
    }

    pub fn parse(settings: &Settings<'_>) -> Result<JsonSchemaConverterConfig, ConfigError> {
        let registry = RegistryConverterConfig::parse(settings);
        let data = JsonSchemaDataConfig::parse(settings);
        let fail_invalid_schema = settings.boolean(FAIL_INVALID_SCHEMA_CONFIG, false);
        // Only a typed (POJO) deserializer has unknown properties to fail on; the
        // converter reads JSON trees, so the setting is checked and has no effect, as in
        // Confluent's converter.
        let fail_unknown_properties = settings.boolean(FAIL_UNKNOWN_PROPERTIES_CONFIG, true);
        match (registry, data, fail_invalid_schema, fail_unknown_properties) {
            (Ok(registry), Ok(data), Ok(fail_invalid_schema), Ok(_)) => {
                Ok(JsonSchemaConverterConfig {
                    registry,
                    data,
                    fail_invalid_schema,
                })
            }
            (registry, data, fail_invalid_schema, fail_unknown_properties) => {
                let mut errors = ConfigError::default();
                for e in [
                    registry.err(),
                    data.err(),
                    fail_invalid_schema.err(),
                    fail_unknown_properties.err(),
                ]
                .into_iter()
                .flatten()
                {
                    errors.push(e);
                }
                Err(errors)
            }
        }
    }
}

/// The id to write with, and the schema to check values against (when they are checked).
#[derive(Debug, Clone)]
struct Writer {
    id: i32,
    validator: Option<Arc<RegistryJsonSchema>>,
}

/// A schema read by id: the Connect schema, and the schema to check values against.
#[derive(Debug)]
struct ReadSchema {
    schema: SchemaRef,
    validator: Option<RegistryJsonSchema>,
}

/// The Connect schema last written and its generated text and title.
#[derive(Debug)]
struct LastWritten {
    schema: SchemaRef,
    text: Arc<str>,
    title: Option<String>,
}

/// Confluent's `JsonSchemaConverter`.
#[derive(Debug)]
pub struct JsonSchemaConverter {
    config: JsonSchemaConverterConfig,
    is_key: bool,
    client: SchemaRegistryClient,
    data: JsonSchemaData,
    last_written: Mutex<Option<LastWritten>>,
    /// (subject, schema text) → the id to write with.
    writers: Mutex<BoundedCache<(String, Arc<str>), Writer>>,
    /// (topic, id) → the schema read (the subject follows from both).
    readers: Mutex<BoundedCache<(String, i32), Arc<ReadSchema>>>,
}

impl JsonSchemaConverter {
    pub fn new(
        config: JsonSchemaConverterConfig,
        is_key: bool,
    ) -> Result<JsonSchemaConverter, ConfigError> {
        let client = config.registry.client()?;
        Ok(JsonSchemaConverter {
            data: JsonSchemaData::new(config.data.clone()),
            writers: Mutex::new(BoundedCache::new(config.registry.max_schemas_per_subject)),
            readers: Mutex::new(BoundedCache::new(config.data.schemas_cache_size)),
            config,
            is_key,
            client,
            last_written: Mutex::new(None),
        })
    }

    /// The generated schema's text and title, from the previous record's when it is the
    /// same schema.
    fn generated(&self, schema: &SchemaRef) -> Result<(Arc<str>, Option<String>), DataError> {
        let mut last = lock(&self.last_written);
        if let Some(last) = &*last
            && Arc::ptr_eq(&last.schema, schema)
        {
            return Ok((Arc::clone(&last.text), last.title.clone()));
        }
        let tree = self.data.from_connect_schema(schema)?;
        let title = title_of(&tree);
        let text: Arc<str> = Arc::from(jackson::write_string(&tree));
        *last = Some(LastWritten {
            schema: Arc::clone(schema),
            text: Arc::clone(&text),
            title: title.clone(),
        });
        Ok((text, title))
    }

    /// The id to write with, by Confluent's serializer's rules.
    fn writer(&self, topic: &str, subject: &str, text: &Arc<str>) -> Result<Writer, DataError> {
        let key = (subject.to_string(), Arc::clone(text));
        if let Some(found) = lock(&self.writers).get(&key) {
            return Ok(found);
        }
        let ours = RegistrySchema::new(SchemaType::Json, text.to_string());
        let (id, written_as) =
            match self
                .config
                .registry
                .writer_schema(&self.client, FORMAT, topic, subject, ours)?
            {
                WriterSchema::Ours(id) => (id, text.to_string()),
                WriterSchema::Latest(latest) => {
                    if self.config.registry.latest_compatibility_strict {
                        check_latest_reads(&latest.schema, text)
                            .map_err(|e| FORMAT.serialize_failure(topic, e))?;
                    }
                    (latest.id, latest.schema.schema)
                }
            };
        let validator = if self.config.fail_invalid_schema {
            let parsed = RegistryJsonSchema::parse(&written_as, &[]).map_err(|e| {
                FORMAT.serialize_failure(topic, with_cause("Invalid JSON schema", e))
            })?;
            Some(Arc::new(parsed))
        } else {
            None
        };
        let writer = Writer { id, validator };
        lock(&self.writers).insert(key, writer.clone());
        Ok(writer)
    }

    /// The schema of `id`, as Connect reads it with its version under the subject.
    fn reader(&self, topic: &str, id: i32) -> Result<Arc<ReadSchema>, DataError> {
        let key = (topic.to_string(), id);
        if let Some(found) = lock(&self.readers).get(&key) {
            return Ok(found);
        }
        let client = self.client.clone();
        let fetched =
            run_blocking(async move { client.get_schema_by_id(id).await })?.map_err(|e| {
                FORMAT.read_registry_failure(
                    topic,
                    &format!("Error retrieving JSON schema for id {id}"),
                    e,
                )
            })?;
        let failure = |cause: String| {
            FORMAT.deserialize_failure(
                topic,
                with_cause(
                    &format!("Error deserializing JSON message for id {id}"),
                    cause,
                ),
            )
        };
        if fetched.schema_type != SchemaType::Json {
            return Err(failure(format!(
                "the schema with id {id} is of type {}, not JSON",
                fetched.schema_type.name()
            )));
        }
        let tree =
            jackson::read_tree(fetched.schema.as_bytes()).map_err(|e| failure(e.0.clone()))?;
        let subject = self.config.registry.strategy(self.is_key).subject(
            topic,
            self.is_key,
            title_of(&tree).as_deref(),
        )?;
        let client = self.client.clone();
        let schema = (*fetched).clone();
        let version = run_blocking(async move { client.lookup(&subject, &schema, false).await })?
            .map_err(|e| {
                FORMAT.read_registry_failure(
                    topic,
                    &format!("Error retrieving JSON schema version for id {id}"),
                    e,
                )
            })?
            .version;
        let connect = self
            .data
            .to_connect_schema(&fetched.schema, Some(version))?;
        let validator = if self.config.fail_invalid_schema {
            Some(
                RegistryJsonSchema::parse(&fetched.schema, &[])
                    .map_err(|e| failure(e.to_string()))?,
            )
        } else {
            None
        };
        let read = Arc::new(ReadSchema {
            schema: connect,
            validator,
        });
        lock(&self.readers).insert(key, Arc::clone(&read));
        Ok(read)
    }
}

/// A schema's `title` (the record name the subject strategies use).
fn title_of(tree: &JsonNode) -> Option<String> {
    tree.get("title")
        .and_then(JsonNode::text_value)
        .map(str::to_string)
}

/// `latest.compatibility.strict`: the latest schema must read data written with ours.
fn check_latest_reads(latest: &RegistrySchema, ours: &str) -> Result<(), DataError> {
    let incompatible = || {
        DataError(format!(
            "Incompatible schema of type '{}'. Set latest.compatibility.strict=false to disable \
             this check. See log file for more details.",
            latest.schema_type.name()
        ))
    };
    if latest.schema_type != SchemaType::Json {
        return Err(incompatible());
    }
    let reader =
        RegistryJsonSchema::parse(&latest.schema, &[]).map_err(|e| DataError(e.to_string()))?;
    let writer = RegistryJsonSchema::parse(ours, &[]).map_err(|e| DataError(e.to_string()))?;
    let problems = reader.incompatibilities_with_labels(&writer, "new", "old");
    if problems.is_empty() {
        return Ok(());
    }
    tracing::error!(
        problems = %problems.join(","),
        "Incompatible schema of type 'JSON'. Set latest.compatibility.strict=false to disable this check."
    );
    Err(incompatible())
}

/// Checks a value against a schema (`json.fail.invalid.schema`).
fn validate(validator: &RegistryJsonSchema, node: &JsonNode) -> Result<(), String> {
    let value: serde_json::Value = serde_json::from_str(&jackson::write_string(node))
        .map_err(|e| format!("the value is not JSON the validator reads: {e}"))?;
    validator.validate(&value)
}

impl Converter for JsonSchemaConverter {
    fn from_connect(
        &self,
        topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        let Some(schema) = schema else {
            if value.is_null() {
                return Ok(None);
            }
            // Confluent's serializer fails on a value without a schema.
            return Err(FORMAT.serialize_failure(
                topic,
                "Error serializing JSON message: a Connect schema is required to write JSON \
                 Schema data",
            ));
        };
        let (text, title) = self.generated(schema)?;
        let Some(node) = self.data.from_connect_data(Some(schema), value)? else {
            return Ok(None);
        };
        let subject = self
            .config
            .registry
            .strategy(self.is_key)
            .subject(topic, self.is_key, title.as_deref())
            .map_err(|e| FORMAT.serialize_failure(topic, e))?;
        let writer = self.writer(topic, &subject, &text)?;
        if let Some(validator) = &writer.validator {
            validate(validator, &node).map_err(|e| {
                FORMAT.serialize_failure(
                    topic,
                    with_cause(
                        "Error serializing JSON message",
                        format_args!("Validation error in JSON, Error report:\n{e}"),
                    ),
                )
            })?;
        }
        let mut out = Vec::new();
        write_header(&mut out, writer.id);
        out.extend_from_slice(&jackson::write_bytes(&node));
        Ok(Some(out))
    }

    fn to_connect(
        &self,
        topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let Some(bytes) = bytes else {
            return Ok((None, Value::Null));
        };
        let (id, payload) = read_header(bytes).map_err(|e| {
            // The frame is read inside the deserializer's try, before an id is known
            // (Confluent 7's deserializer; 8's also takes magic byte 1 with a schema
            // GUID, which this converter does not).
            let cause = match e {
                WireFormatError::UnknownMagicByte(_) => "Unknown magic byte!",
                _ => "java.nio.BufferUnderflowException",
            };
            FORMAT.deserialize_failure(
                topic,
                with_cause("Error deserializing JSON message for id -1", cause),
            )
        })?;
        let read = self.reader(topic, id)?;
        let failure = |cause: String| {
            FORMAT.deserialize_failure(
                topic,
                with_cause(
                    &format!("Error deserializing JSON message for id {id}"),
                    cause,
                ),
            )
        };
        let node = match jackson::read_tree(payload) {
            Ok(JsonNode::Missing) => {
                return Err(failure("No content to map due to end-of-input".into()));
            }
            Ok(node) => node,
            Err(e) => return Err(failure(e.0)),
        };
        if let Some(validator) = &read.validator {
            validate(validator, &node)
                .map_err(|e| failure(format!("JSON does not match schema of type JSON: {e}")))?;
        }
        // A JSON null keeps its schema, as Confluent's converter answers it.
        let value = self.data.to_connect_data(Some(&read.schema), Some(&node))?;
        Ok((Some(Arc::clone(&read.schema)), value))
    }
}

#[cfg(test)]
mod tests;
