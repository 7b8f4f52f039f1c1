//! Confluent's `ProtobufConverter`: Connect data as Protobuf in Confluent's wire format
//! (magic byte 0, the schema's registry id as 4 big-endian bytes, the message indexes of
//! the record's message type in its file, the message's encoding), with the schema
//! registered in (or looked up from) a schema registry.
//!
//! [`ProtobufData`] is the half that needs no registry (Connect ↔ Protobuf schemas and
//! messages). The converter adds the registry, as Confluent's serializer uses it:
//!
//! - writing, the generated `.proto` text is registered under the subject with
//!   `auto.register.schemas` (default true); otherwise with `use.latest.version` the
//!   subject's latest schema's id is used (it must be PROTOBUF, hold the record's message,
//!   whose indexes in it frame the record, and, unless `latest.compatibility.strict=false`,
//!   read ours by the registry's compatibility rules); otherwise the text must already be
//!   registered. Imports of the files every registry knows (`confluent/meta.proto`,
//!   `google/protobuf/*.proto`, ...) are not registered as references, as Confluent's
//!   `skip.known.types` (default true) does.
//! - reading, the id's file is rebuilt from the registry (with its references), the
//!   message indexes pick the message type, and the schema's version under the subject
//!   becomes the Connect schema's version.
//! - the subject is `<topic>-key` / `<topic>-value`, or the message's full name
//!   (`RecordNameStrategy`), or both (`TopicRecordNameStrategy`).
//!
//! Blocking: as every registry-backed converter's (see [`super::registry`]). The registry
//! is asked once per schema: ids, files and versions are cached (bounded by
//! `max.schemas.per.subject`), and a record with the same Connect schema as the previous
//! one reuses its generated schema.

use std::sync::{Arc, Mutex};

use prost::Message as _;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use sluice_registry::client::{Schema as RegistrySchema, SchemaRegistryClient, SchemaType};
use sluice_registry::known_types;
use sluice_registry::protobuf::ProtobufSchema;
use sluice_registry::schema::{ParsedSchema as _, ResolvedReference};
use sluice_registry::serde::SerdeError;
use sluice_registry::serde::protobuf::{
    ProtobufDeserializer, message_at, message_indexes, serialized_file,
};
use sluice_registry::serde::wire::{
    read_header, read_message_indexes, write_header, write_message_indexes,
};

use super::protobuf_data::{GeneratedSchema, ProtobufData, ProtobufDataConfig};
use super::registry::{Format, RegistryConverterConfig, WriterSchema, lock, run_blocking};
use super::{BoundedCache, Converter, Settings, with_cause};
use crate::ConfigError;
use crate::data::{DataError, SchemaRef, Value};

/// The texts this converter fails with.
const FORMAT: Format = Format::Protobuf;

/// The Protobuf converter's settings (Confluent's `ProtobufConverterConfig`: the
/// serializer's, shared by every registry-backed converter, and `ProtobufDataConfig`'s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtobufConverterConfig {
    pub registry: RegistryConverterConfig,
    pub data: ProtobufDataConfig,
}

impl ProtobufConverterConfig {
    /// A configuration with Confluent's defaults for a registry at `urls`.
    pub fn new(urls: &str) -> ProtobufConverterConfig {
        ProtobufConverterConfig {
            registry: RegistryConverterConfig::new(urls),
            data: ProtobufDataConfig::default(),
        }
    }

    pub fn parse(settings: &Settings<'_>) -> Result<ProtobufConverterConfig, ConfigError> {
        RegistryConverterConfig::parse_with(settings, ProtobufDataConfig::parse)
            .map(|(registry, data)| ProtobufConverterConfig { registry, data })
    }
}

/// Frames an encoded message: header, message indexes, message.
pub fn encode_framed(schema_id: i32, indexes: &[i32], message: &DynamicMessage) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + message.encoded_len());
    write_header(&mut out, schema_id);
    write_message_indexes(&mut out, indexes);
    message
        .encode(&mut out)
        .expect("a Vec grows to hold any message");
    out
}

/// The Connect schema last written and what it became.
#[derive(Debug)]
struct LastWritten {
    schema: Option<SchemaRef>,
    generated: Arc<GeneratedSchema>,
}

/// A message type read by (topic, id, indexes): its descriptor and Connect schema.
#[derive(Debug)]
struct ReadType {
    message: MessageDescriptor,
    schema: SchemaRef,
}

/// (subject, schema text) → the id and message indexes to frame with.
type Writers = BoundedCache<(String, Arc<str>), (i32, Vec<i32>)>;

/// (topic, id, message indexes) → the message type and its Connect schema.
type Readers = BoundedCache<(String, i32, Vec<i32>), Arc<ReadType>>;

/// Confluent's `ProtobufConverter`.
#[derive(Debug)]
pub struct ProtobufConverter {
    config: ProtobufConverterConfig,
    is_key: bool,
    client: SchemaRegistryClient,
    data: ProtobufData,
    /// Writers' files by id (shared with the registry crate's deserializer).
    files: Arc<ProtobufDeserializer>,
    last_written: Mutex<Option<LastWritten>>,
    /// (subject, schema text) → the id and message indexes to frame with.
    writers: Mutex<Writers>,
    /// (topic, id) → the schema's version under the subject.
    versions: Mutex<BoundedCache<(String, i32), Option<i32>>>,
    /// (topic, id, indexes) → the message type and its Connect schema.
    readers: Mutex<Readers>,
}

impl ProtobufConverter {
    pub fn new(
        config: ProtobufConverterConfig,
        is_key: bool,
    ) -> Result<ProtobufConverter, ConfigError> {
        let client = config.registry.client()?;
        let capacity = config.registry.max_schemas_per_subject;
        Ok(ProtobufConverter {
            data: ProtobufData::new(config.data.clone()),
            files: Arc::new(ProtobufDeserializer::new(client.clone())),
            config,
            is_key,
            client,
            last_written: Mutex::new(None),
            writers: Mutex::new(BoundedCache::new(capacity)),
            versions: Mutex::new(BoundedCache::new(capacity)),
            readers: Mutex::new(BoundedCache::new(capacity)),
        })
    }

    pub fn data(&self) -> &ProtobufData {
        &self.data
    }

    /// The generated schema of a Connect schema, from the previous record's when it is the
    /// same schema.
    fn generated(&self, schema: &SchemaRef) -> Result<Arc<GeneratedSchema>, DataError> {
        let mut last = lock(&self.last_written);
        if let Some(last) = &*last
            && last
                .schema
                .as_ref()
                .is_some_and(|s| Arc::ptr_eq(s, schema) || **s == **schema)
        {
            return Ok(Arc::clone(&last.generated));
        }
        let generated = Arc::new(self.data.from_connect_schema(schema)?);
        *last = Some(LastWritten {
            schema: Some(Arc::clone(schema)),
            generated: Arc::clone(&generated),
        });
        Ok(generated)
    }

    /// The id and message indexes to frame with, by Confluent's serializer's rules.
    fn writer(
        &self,
        topic: &str,
        subject: &str,
        generated: &GeneratedSchema,
    ) -> Result<(i32, Vec<i32>), DataError> {
        let text: Arc<str> = Arc::from(generated.text.as_str());
        let key = (subject.to_string(), Arc::clone(&text));
        if let Some(found) = lock(&self.writers).get(&key) {
            return Ok(found);
        }
        let ours = RegistrySchema::new(SchemaType::Protobuf, text.to_string());
        let found = match self.config.registry.writer_schema(
            &self.client,
            FORMAT,
            topic,
            subject,
            ours,
        )? {
            WriterSchema::Ours(id) => (id, message_indexes(&generated.message)),
            WriterSchema::Latest(latest) => {
                let incompatible = || {
                    FORMAT.serialize_failure(
                        topic,
                        format_args!(
                            "Incompatible schema of type '{}'. Set latest.compatibility.strict=false to disable this check. See log file for more details.",
                            latest.schema.schema_type.name()
                        ),
                    )
                };
                if latest.schema.schema_type != SchemaType::Protobuf {
                    return Err(incompatible());
                }
                let file = self
                    .file(latest.id)
                    .map_err(|e| FORMAT.serialize_failure(topic, e))?;
                let full_name = generated.message.full_name();
                let message = file
                    .parent_pool()
                    .get_message_by_name(full_name)
                    .filter(|m| m.parent_file() == file)
                    .ok_or_else(|| {
                        FORMAT.serialize_failure(
                            topic,
                            format_args!(
                                "Error serializing Protobuf message: the latest schema of {subject} (id {}) has no message {full_name}",
                                latest.id
                            ),
                        )
                    })?;
                if self.config.registry.latest_compatibility_strict
                    && !latest_reads(&file, &generated.text)
                {
                    return Err(incompatible());
                }
                (latest.id, message_indexes(&message))
            }
        };
        lock(&self.writers).insert(key, found.clone());
        Ok(found)
    }

    /// The writer's file of schema `id`.
    fn file(&self, id: i32) -> Result<prost_reflect::FileDescriptor, DataError> {
        let files = Arc::clone(&self.files);
        run_blocking(async move { files.file(id).await })?.map_err(|e| match e {
            SerdeError::SchemaTypeMismatch { found, .. } => DataError(format!(
                "Error retrieving Protobuf schema for id {id}: the schema is {}",
                found.name()
            )),
            other => with_cause(
                &format!("Error retrieving Protobuf schema for id {id}"),
                other,
            ),
        })
    }

    /// The message type of `indexes` in schema `id`, with its Connect schema.
    fn reader(&self, topic: &str, id: i32, indexes: &[i32]) -> Result<Arc<ReadType>, DataError> {
        let key = (topic.to_string(), id, indexes.to_vec());
        if let Some(found) = lock(&self.readers).get(&key) {
            return Ok(found);
        }
        let file = self
            .file(id)
            .map_err(|e| FORMAT.deserialize_failure(topic, e))?;
        let message = message_at(&file, indexes).ok_or_else(|| {
            FORMAT.deserialize_failure(
                topic,
                format_args!(
                    "Error deserializing Protobuf message for id {id}: no message at indexes {indexes:?}"
                ),
            )
        })?;
        let version = self.version(topic, id, &message)?;
        let schema = self
            .data
            .to_connect_schema(&message, version)
            .map_err(|e| FORMAT.deserialize_failure(topic, e))?;
        let read = Arc::new(ReadType { message, schema });
        lock(&self.readers).insert(key, Arc::clone(&read));
        Ok(read)
    }

    /// The version of schema `id` under the subject its record goes to.
    fn version(
        &self,
        topic: &str,
        id: i32,
        message: &MessageDescriptor,
    ) -> Result<Option<i32>, DataError> {
        let key = (topic.to_string(), id);
        if let Some(found) = lock(&self.versions).get(&key) {
            return Ok(found);
        }
        let side = if self.is_key { "key" } else { "value" };
        let client = self.client.clone();
        let fetched =
            run_blocking(async move { client.get_schema_by_id(id).await })?.map_err(|e| {
                FORMAT.read_registry_failure(
                    topic,
                    &format!("Error retrieving Protobuf schema for id {id}"),
                    e,
                )
            })?;
        let record_name = message
            .parent_file()
            .messages()
            .next()
            .map(|m| m.full_name().to_string());
        let subject = self.config.registry.strategy(self.is_key).subject(
            topic,
            self.is_key,
            record_name.as_deref(),
        )?;
        let client = self.client.clone();
        let schema = (*fetched).clone();
        let version = run_blocking(async move { client.lookup(&subject, &schema, false).await })?
            .map_err(|e| {
                FORMAT.read_registry_failure(
                    topic,
                    &format!("Error retrieving Protobuf {side} schema version for id {id}"),
                    e,
                )
            })?
            .version;
        lock(&self.versions).insert(key, Some(version));
        Ok(Some(version))
    }
}

/// `latest.compatibility.strict`: whether the latest schema (`latest`, built with its
/// imports) reads what ours writes, by the registry's compatibility rules.
fn latest_reads(latest: &prost_reflect::FileDescriptor, ours: &str) -> bool {
    // Each import the registry does not know goes in as a reference, by its path.
    let mut references = Vec::new();
    let mut pending: Vec<prost_reflect::FileDescriptor> = latest.dependencies().collect();
    while let Some(file) = pending.pop() {
        if known_types::is_known(file.name())
            || references
                .iter()
                .any(|r: &ResolvedReference| r.name == file.name())
        {
            continue;
        }
        pending.extend(file.dependencies());
        references.push(ResolvedReference {
            name: file.name().to_string(),
            subject: file.name().to_string(),
            version: 1,
            schema: serialized_file(&file),
        });
    }
    let parsed = (
        ProtobufSchema::parse(&serialized_file(latest), &references),
        ProtobufSchema::parse(ours, &[]),
    );
    let (Ok(reader), Ok(writer)) = parsed else {
        return false;
    };
    let problems = reader.incompatibilities_as_reader(&writer, "new", "old");
    if !problems.is_empty() {
        tracing::error!(
            problems = %problems.join(","),
            "Incompatible schema of type 'PROTOBUF'. Set latest.compatibility.strict=false to disable this check."
        );
    }
    problems.is_empty()
}

impl Converter for ProtobufConverter {
    fn from_connect(
        &self,
        topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        if value.is_null() {
            return Ok(None);
        }
        let Some(schema) = schema else {
            return Err(FORMAT.serialize_failure(
                topic,
                format_args!("Unsupported object of class {}", value.java_class()),
            ));
        };
        let generated = self
            .generated(schema)
            .map_err(|e| FORMAT.serialize_failure(topic, e))?;
        let Some(message) = self
            .data
            .from_connect_data(schema, &generated.message, value)
            .map_err(|e| FORMAT.serialize_failure(topic, e))?
        else {
            return Ok(None);
        };
        let subject = self.config.registry.strategy(self.is_key).subject(
            topic,
            self.is_key,
            Some(generated.message.full_name()),
        )?;
        let (id, indexes) = self.writer(topic, &subject, &generated)?;
        Ok(Some(encode_framed(id, &indexes, &message)))
    }

    fn to_connect(
        &self,
        topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let Some(bytes) = bytes else {
            return Ok((None, Value::Null));
        };
        let (id, rest) = read_header(bytes)
            .map_err(|_| FORMAT.deserialize_failure(topic, "Unknown magic byte!"))?;
        let (indexes, payload) = read_message_indexes(rest).map_err(|e| {
            FORMAT.deserialize_failure(
                topic,
                with_cause(
                    &format!("Error deserializing Protobuf message for id {id}"),
                    e,
                ),
            )
        })?;
        let read = self.reader(topic, id, &indexes)?;
        let message = DynamicMessage::decode(read.message.clone(), payload).map_err(|e| {
            FORMAT.deserialize_failure(
                topic,
                with_cause(
                    &format!("Error deserializing Protobuf message for id {id}"),
                    e,
                ),
            )
        })?;
        let value = self
            .data
            .to_connect_data(&read.schema, &message)
            .map_err(|e| FORMAT.deserialize_failure(topic, e))?;
        Ok((Some(Arc::clone(&read.schema)), value))
    }
}

#[cfg(test)]
mod tests;
