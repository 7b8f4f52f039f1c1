//! Confluent's `AvroConverter`: Connect data as Avro in Confluent's wire format (magic
//! byte 0, the schema's registry id as 4 big-endian bytes, the Avro binary datum), with
//! the schema registered in (or looked up from) a schema registry.
//!
//! [`AvroCodec`] is the half that needs no registry: the Avro schema of a Connect schema
//! (the text Confluent's converter registers) and the frame for a given id and schema.
//! [`AvroConverter`] adds the registry, as Confluent's serializer uses it:
//!
//! - writing, with `auto.register.schemas` (default true) the schema is registered under
//!   the subject and its id used; otherwise with `use.latest.version` the subject's latest
//!   schema is used (checked to read ours unless `latest.compatibility.strict=false`);
//!   otherwise the schema must already be registered under the subject.
//! - reading, the id's schema is fetched, and its version under the subject becomes the
//!   Connect schema's version when the schema carries none.
//! - the subject is `<topic>-key` / `<topic>-value` (`TopicNameStrategy`), or the record's
//!   name (`RecordNameStrategy`), or both (`TopicRecordNameStrategy`).
//!
//! As in Confluent's serializer, a top-level `bytes` schema is written as the raw bytes
//! after the frame, not as an Avro `bytes` datum.
//!
//! Blocking: as every registry-backed converter's (see [`super::registry`]). The
//! registry is asked once per schema: ids,
//! schemas and versions are cached (bounded by `max.schemas.per.subject`), and a record
//! with the same Connect schema as the previous one reuses its Avro schema.

use std::sync::{Arc, Mutex};

use sluice_registry::client::{
    RegisteredSchema, Schema as RegistrySchema, SchemaRegistryClient, SchemaType,
};
use sluice_registry::schema::ParsedSchema as _;
use sluice_registry::serde::wire::{read_header, write_header};

use super::avro_binary::{self, AvroValue};
use super::avro_data::{AvroData, AvroDataConfig};
use super::avro_schema::{AvroKind, AvroSchema};
use super::registry::{Format, RegistryConverterConfig, WriterSchema, lock, run_blocking};
use super::{BoundedCache, Converter, Settings, with_cause};
use crate::ConfigError;
use crate::data::{DataError, Schema, SchemaRef, Value};

/// The texts this converter fails with.
const FORMAT: Format = Format::Avro;

/// The Avro converter's settings (Confluent's `AvroConverterConfig`: the serializer's,
/// shared by every registry-backed converter, and `AvroDataConfig`'s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AvroConverterConfig {
    pub registry: RegistryConverterConfig,
    pub data: AvroDataConfig,
}

impl AvroConverterConfig {
    /// A configuration with Confluent's defaults for a registry at `urls`.
    pub fn new(urls: &str) -> AvroConverterConfig {
        AvroConverterConfig {
            registry: RegistryConverterConfig::new(urls),
            data: AvroDataConfig::default(),
        }
    }

    pub fn parse(settings: &Settings<'_>) -> Result<AvroConverterConfig, ConfigError> {
        RegistryConverterConfig::parse_with(settings, AvroDataConfig::parse)
            .map(|(registry, data)| AvroConverterConfig { registry, data })
    }
}

/// The registry-free half of the Avro converter: Connect ↔ Avro schemas and data, and
/// Confluent's frame around the datum for a given schema id.
#[derive(Debug)]
pub struct AvroCodec {
    data: AvroData,
}

impl AvroCodec {
    pub fn new(config: AvroDataConfig) -> AvroCodec {
        AvroCodec {
            data: AvroData::new(config),
        }
    }

    pub fn data(&self) -> &AvroData {
        &self.data
    }

    /// The Avro schema of a Connect schema (`Anything` for none); its
    /// [`to_json`](AvroSchema::to_json) is the text Confluent's converter registers.
    pub fn avro_schema(&self, schema: Option<&Schema>) -> Result<AvroSchema, DataError> {
        self.data.from_connect_schema(schema)
    }

    /// `value` framed with `schema_id` and written as `writer` (the schema registered
    /// under that id, normally [`avro_schema`](Self::avro_schema) of `schema`); none for a
    /// null value.
    pub fn encode(
        &self,
        schema_id: i32,
        writer: &AvroSchema,
        schema: Option<&Schema>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        let generated = self.avro_schema(schema)?;
        let Some(datum) = self.data.from_connect_data(schema, &generated, value)? else {
            return Ok(None);
        };
        encode_datum(schema_id, writer, &datum).map(Some)
    }

    /// The schema id in a record's frame.
    pub fn schema_id(bytes: &[u8]) -> Result<i32, DataError> {
        read_header(bytes)
            .map(|(id, _)| id)
            .map_err(|_| DataError("Unknown magic byte!".into()))
    }

    /// A framed record written as `writer` (its id's schema) as Connect data; `version` is
    /// the registry's version of the schema, the Connect version when it carries none.
    pub fn decode(
        &self,
        bytes: &[u8],
        writer: &AvroSchema,
        version: Option<i32>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let (id, payload) =
            read_header(bytes).map_err(|_| DataError("Unknown magic byte!".into()))?;
        let datum = decode_datum(writer, payload)
            .map_err(|e| with_cause(&format!("Error deserializing Avro message for id {id}"), e))?;
        let schema = self.data.to_connect_schema(writer, version)?;
        let value = self.data.to_connect_data(schema.as_ref(), writer, &datum)?;
        Ok((schema, value))
    }
}

/// The frame and the datum; a top-level `bytes` schema's value goes raw, as Confluent's
/// serializer writes it.
fn encode_datum(
    schema_id: i32,
    writer: &AvroSchema,
    datum: &AvroValue,
) -> Result<Vec<u8>, DataError> {
    let mut out = Vec::new();
    write_header(&mut out, schema_id);
    if matches!(writer.root.kind, AvroKind::Bytes) {
        match datum.unwrap_union() {
            AvroValue::Bytes(bytes) | AvroValue::Fixed { bytes, .. } => {
                out.extend_from_slice(bytes)
            }
            other => {
                return Err(with_cause(
                    "Error serializing Avro message",
                    format_args!("Unrecognized bytes object of type: {other:?}"),
                ));
            }
        }
        return Ok(out);
    }
    avro_binary::encode(writer, datum, &mut out)
        .map_err(|e| with_cause("Error serializing Avro message", e))?;
    Ok(out)
}

/// The datum after the frame (the whole rest for a top-level `bytes` schema; bytes after
/// a datum are not read, as Confluent's deserializer does not by default).
fn decode_datum(writer: &AvroSchema, payload: &[u8]) -> Result<AvroValue, String> {
    if matches!(writer.root.kind, AvroKind::Bytes) {
        return Ok(AvroValue::Bytes(payload.to_vec()));
    }
    avro_binary::decode(writer, payload).map(|(datum, _)| datum)
}

/// A schema read by id: the writer's Avro schema and its version under the subject.
#[derive(Debug)]
struct ReadSchema {
    avro: AvroSchema,
    version: Option<i32>,
}

/// The id to write with and the schema to write as.
type Writer = (i32, Arc<AvroSchema>);

/// The Connect schema last written and what it became.
#[derive(Debug)]
struct LastWritten {
    schema: Option<SchemaRef>,
    avro: Arc<AvroSchema>,
    text: Arc<str>,
}

/// Confluent's `AvroConverter`.
#[derive(Debug)]
pub struct AvroConverter {
    config: AvroConverterConfig,
    is_key: bool,
    client: SchemaRegistryClient,
    codec: AvroCodec,
    last_written: Mutex<Option<LastWritten>>,
    /// (subject, schema text) → the id to write with and the schema to write as.
    writers: Mutex<BoundedCache<(String, Arc<str>), Writer>>,
    /// (topic, id) → the schema read (the subject follows from both).
    readers: Mutex<BoundedCache<(String, i32), Arc<ReadSchema>>>,
}

impl AvroConverter {
    pub fn new(config: AvroConverterConfig, is_key: bool) -> Result<AvroConverter, ConfigError> {
        let client = config.registry.client()?;
        let capacity = config.registry.max_schemas_per_subject;
        Ok(AvroConverter {
            codec: AvroCodec::new(config.data.clone()),
            config,
            is_key,
            client,
            last_written: Mutex::new(None),
            writers: Mutex::new(BoundedCache::new(capacity)),
            readers: Mutex::new(BoundedCache::new(capacity)),
        })
    }

    fn key_or_value(&self) -> &'static str {
        if self.is_key { "key" } else { "value" }
    }

    fn subject(&self, topic: &str, avro: &AvroSchema) -> Result<String, DataError> {
        let strategy = self.config.registry.strategy(self.is_key);
        let record_name = match &avro.root.kind {
            AvroKind::Record(record) => Some(record.name.full()),
            _ => None,
        };
        strategy.subject(topic, self.is_key, record_name.as_deref())
    }

    /// The Avro schema of a Connect schema, from the previous record's when it is the
    /// same schema.
    fn generated(
        &self,
        schema: Option<&SchemaRef>,
    ) -> Result<(Arc<AvroSchema>, Arc<str>), DataError> {
        let mut last = lock(&self.last_written);
        if let Some(last) = &*last {
            let same = match (&last.schema, schema) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if same {
                return Ok((Arc::clone(&last.avro), Arc::clone(&last.text)));
            }
        }
        let avro = Arc::new(self.codec.avro_schema(schema.map(|s| &**s))?);
        let text: Arc<str> = Arc::from(avro.to_json()?);
        *last = Some(LastWritten {
            schema: schema.cloned(),
            avro: Arc::clone(&avro),
            text: Arc::clone(&text),
        });
        Ok((avro, text))
    }

    /// The id to write with and the schema to write as, by Confluent's serializer's rules.
    fn writer(
        &self,
        topic: &str,
        subject: &str,
        generated: &Arc<AvroSchema>,
        text: &Arc<str>,
    ) -> Result<(i32, Arc<AvroSchema>), DataError> {
        let key = (subject.to_string(), Arc::clone(text));
        if let Some(found) = lock(&self.writers).get(&key) {
            return Ok(found);
        }
        let ours = RegistrySchema::new(SchemaType::Avro, text.to_string());
        let found =
            match self
                .config
                .registry
                .writer_schema(&self.client, FORMAT, topic, subject, ours)?
            {
                WriterSchema::Ours(id) => (id, Arc::clone(generated)),
                WriterSchema::Latest(latest) => {
                    let writer = AvroSchema::parse(&latest.schema.schema)
                        .map_err(|e| FORMAT.serialize_failure(topic, e))?;
                    if self.config.registry.latest_compatibility_strict {
                        self.check_latest_reads(&latest, text)
                            .map_err(|e| FORMAT.serialize_failure(topic, e))?;
                    }
                    (latest.id, Arc::new(writer))
                }
            };
        lock(&self.writers).insert(key, found.clone());
        Ok(found)
    }

    /// `latest.compatibility.strict`: the latest schema must read data written with ours.
    fn check_latest_reads(&self, latest: &RegisteredSchema, ours: &str) -> Result<(), DataError> {
        let incompatible = || {
            DataError(format!(
                "Incompatible schema of type '{}'. Set latest.compatibility.strict=false to disable this check. See log file for more details.",
                latest.schema.schema_type.name()
            ))
        };
        if latest.schema.schema_type != SchemaType::Avro {
            return Err(incompatible());
        }
        let reader = sluice_registry::avro::AvroSchema::parse(&latest.schema.schema, &[])
            .map_err(|e| DataError(e.to_string()))?;
        let writer = sluice_registry::avro::AvroSchema::parse(ours, &[])
            .map_err(|e| DataError(e.to_string()))?;
        let problems = reader.incompatibilities_as_reader(&writer, "new", "old");
        if problems.is_empty() {
            return Ok(());
        }
        tracing::error!(
            latest = %reader.canonical(),
            problems = %problems.join(","),
            "Incompatible schema of type 'AVRO'. Set latest.compatibility.strict=false to disable this check."
        );
        Err(incompatible())
    }

    /// The schema of `id` and its version under the subject.
    fn reader(&self, topic: &str, id: i32) -> Result<Arc<ReadSchema>, DataError> {
        let key = (topic.to_string(), id);
        if let Some(found) = lock(&self.readers).get(&key) {
            return Ok(found);
        }
        let side = self.key_or_value();
        let client = self.client.clone();
        let fetched =
            run_blocking(async move { client.get_schema_by_id(id).await })?.map_err(|e| {
                FORMAT.read_registry_failure(
                    topic,
                    &format!("Error retrieving Avro {side} schema for id {id}"),
                    e,
                )
            })?;
        if fetched.schema_type != SchemaType::Avro {
            return Err(FORMAT.deserialize_failure(
                topic,
                DataError(format!(
                    "Error retrieving Avro {side} schema for id {id}: the schema is {}",
                    fetched.schema_type.name()
                )),
            ));
        }
        let avro =
            AvroSchema::parse(&fetched.schema).map_err(|e| FORMAT.deserialize_failure(topic, e))?;
        let subject = self.subject(topic, &avro)?;
        let client = self.client.clone();
        let schema = (*fetched).clone();
        let version = run_blocking(async move { client.lookup(&subject, &schema, false).await })?
            .map_err(|e| {
                FORMAT.read_registry_failure(
                    topic,
                    &format!("Error retrieving Avro {side} schema version for id {id}"),
                    e,
                )
            })?
            .version;
        let read = Arc::new(ReadSchema {
            avro,
            version: Some(version),
        });
        lock(&self.readers).insert(key, Arc::clone(&read));
        Ok(read)
    }
}

impl Converter for AvroConverter {
    fn from_connect(
        &self,
        topic: &str,
        schema: Option<&SchemaRef>,
        value: &Value,
    ) -> Result<Option<Vec<u8>>, DataError> {
        let (generated, text) = self.generated(schema)?;
        let Some(datum) =
            self.codec
                .data
                .from_connect_data(schema.map(|s| &**s), &generated, value)?
        else {
            return Ok(None);
        };
        let subject = self.subject(topic, &generated)?;
        let (id, writer) = self.writer(topic, &subject, &generated, &text)?;
        encode_datum(id, &writer, &datum)
            .map(Some)
            .map_err(|e| FORMAT.serialize_failure(topic, e))
    }

    fn to_connect(
        &self,
        topic: &str,
        bytes: Option<&[u8]>,
    ) -> Result<(Option<SchemaRef>, Value), DataError> {
        let Some(bytes) = bytes else {
            return Ok((None, Value::Null));
        };
        let id = AvroCodec::schema_id(bytes).map_err(|e| FORMAT.deserialize_failure(topic, e))?;
        let read = self.reader(topic, id)?;
        let (_, payload) = read_header(bytes).expect("the header was read above");
        let datum = decode_datum(&read.avro, payload).map_err(|e| {
            FORMAT.deserialize_failure(
                topic,
                with_cause(&format!("Error deserializing Avro message for id {id}"), e),
            )
        })?;
        let schema = self
            .codec
            .data
            .to_connect_schema(&read.avro, read.version)?;
        let value = self
            .codec
            .data
            .to_connect_data(schema.as_ref(), &read.avro, &datum)?;
        Ok((schema, value))
    }
}

#[cfg(test)]
mod tests;
