//! Avro in Confluent's wire format: [`AvroSerializer`] writes `apache_avro` values (or
//! anything `serde::Serialize`, or JSON shaped like the schema) as the frame and the
//! binary datum; [`AvroDeserializer`] reads the writer's schema by the frame's id and
//! decodes, resolving to a reader schema when given one (Avro schema resolution: added
//! fields take their defaults, removed ones are skipped, ints widen, ...).
//!
//! References: a schema registered with references (named types defined under other
//! subjects) is parsed with those subjects' versions, fetched transitively, so its named
//! types resolve. The serializer takes its references at construction
//! ([`AvroSerializer::with_references`]).
//!
//! Cost: a parsed schema is kept per id (deserializer) and per subject (serializer with
//! `use.latest.version`); each record resolves the schema's names (a walk over the schema,
//! no I/O) and encodes or decodes once.

use std::iter;
use std::sync::{Arc, Mutex};

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::schema::ResolvedSchema;
use apache_avro::types::Value;
use apache_avro::writer::datum::GenericDatumWriter;

use super::strategy::SubjectNameStrategy;
use super::wire::{HEADER_BYTES, read_header, write_header};
use super::{
    PARSED_SCHEMA_CACHE_CAPACITY, SerdeError, SerializerConfig, expect_type, lock,
    resolve_references, schema_id,
};
use crate::client::{BoundedCache, Schema, SchemaReference, SchemaRegistryClient, SchemaType};

/// An Avro schema with the named schemas its references define.
#[derive(Debug)]
pub struct ParsedAvroSchema {
    root: apache_avro::Schema,
    /// Named types of the references, dependencies first.
    named: Vec<apache_avro::Schema>,
}

impl ParsedAvroSchema {
    /// Parses `schema`; `named_schemas` (JSON text of named types, dependencies first)
    /// define the names it uses but does not define.
    pub fn parse(schema: &str, named_schemas: &[&str]) -> Result<ParsedAvroSchema, SerdeError> {
        let invalid = |e: apache_avro::Error| SerdeError::InvalidSchema(e.to_string());
        if named_schemas.is_empty() {
            return Ok(ParsedAvroSchema {
                root: apache_avro::Schema::parse_str(schema).map_err(invalid)?,
                named: Vec::new(),
            });
        }
        let (root, named) =
            apache_avro::Schema::parse_str_with_list(schema, named_schemas).map_err(invalid)?;
        Ok(ParsedAvroSchema { root, named })
    }

    /// Parses a registered schema, fetching what its references name.
    pub async fn parse_registered(
        client: &SchemaRegistryClient,
        schema: &Schema,
    ) -> Result<ParsedAvroSchema, SerdeError> {
        let references = resolve_references(client, &schema.references).await?;
        for reference in &references {
            expect_type(
                reference.version.id,
                &reference.version.schema,
                SchemaType::Avro,
            )?;
        }
        let named: Vec<&str> = references
            .iter()
            .map(|reference| reference.version.schema.schema.as_str())
            .collect();
        ParsedAvroSchema::parse(&schema.schema, &named)
    }

    pub fn root(&self) -> &apache_avro::Schema {
        &self.root
    }

    /// The full name of a named root (record, enum, fixed): what the record name
    /// strategies use.
    pub fn record_name(&self) -> Option<String> {
        self.root.name().map(|name| name.fullname(None))
    }

    /// Every schema that defines names, dependencies before the root (apache-avro resolves
    /// names in list order).
    fn schemata(&self) -> Vec<&apache_avro::Schema> {
        self.named.iter().chain(iter::once(&self.root)).collect()
    }

    fn resolved(&self) -> Result<ResolvedSchema<'_>, SerdeError> {
        Ok(ResolvedSchema::new_with_schemata(self.schemata())?)
    }

    /// Encodes `value` (validated against the schema first) onto `buffer`.
    pub fn encode(&self, value: &Value, buffer: &mut Vec<u8>) -> Result<(), SerdeError> {
        let writer = GenericDatumWriter::builder(&self.root)
            .resolved_schemata(self.resolved()?)
            .build()?;
        writer.write_value_ref(buffer, value)?;
        Ok(())
    }

    /// Resolves a value of a looser shape (a map for a record, a bare value for a union,
    /// an int for a long) to this schema, as Avro's schema resolution does.
    pub fn conform(&self, value: Value) -> Result<Value, SerdeError> {
        Ok(value.resolve_with_names(&self.root, self.resolved()?.get_names())?)
    }

    /// Decodes one datum written with this schema; resolved to `reader` when given.
    pub fn decode(
        &self,
        mut bytes: &[u8],
        reader: Option<&ParsedAvroSchema>,
    ) -> Result<Value, SerdeError> {
        let resolved = self.resolved()?;
        let value = GenericDatumReader::builder(&self.root)
            .resolved_writer_schemata(resolved.clone())
            .build()?
            .read_value(&mut bytes)?;
        // apache-avro reads a string cut short by the end of the input as null (its file
        // reader's end-of-data signal) rather than failing: a datum that does not match the
        // schema it was decoded with was truncated or corrupt.
        if !value.validate_with_names(&self.root, resolved.get_names()) {
            return Err(SerdeError::CorruptAvroDatum);
        }
        match reader {
            None => Ok(value),
            Some(reader) => {
                Ok(value.resolve_with_names(&reader.root, reader.resolved()?.get_names())?)
            }
        }
    }
}

/// Writes Avro values in Confluent's wire format.
#[derive(Debug)]
pub struct AvroSerializer {
    client: SchemaRegistryClient,
    schema: Schema,
    parsed: Arc<ParsedAvroSchema>,
    record_name: Option<String>,
    strategy: Box<dyn SubjectNameStrategy>,
    is_key: bool,
    config: SerializerConfig,
    /// `use.latest.version`: subject → its latest version's id and schema, fetched once.
    latest: Mutex<BoundedCache<String, (i32, Arc<ParsedAvroSchema>)>>,
}

impl AvroSerializer {
    /// A serializer of values of `schema` (Avro's JSON), for keys when `is_key`.
    pub fn new(
        client: SchemaRegistryClient,
        schema: &str,
        strategy: impl SubjectNameStrategy + 'static,
        is_key: bool,
    ) -> Result<AvroSerializer, SerdeError> {
        let parsed = ParsedAvroSchema::parse(schema, &[])?;
        Ok(AvroSerializer::from_parsed(
            client,
            Schema::new(SchemaType::Avro, schema),
            parsed,
            Box::new(strategy),
            is_key,
        ))
    }

    /// A serializer of a schema that uses named types registered under other subjects
    /// (`references`, fetched from the registry now, transitively).
    pub async fn with_references(
        client: SchemaRegistryClient,
        schema: &str,
        references: Vec<SchemaReference>,
        strategy: impl SubjectNameStrategy + 'static,
        is_key: bool,
    ) -> Result<AvroSerializer, SerdeError> {
        let schema = Schema::new(SchemaType::Avro, schema).with_references(references);
        let parsed = ParsedAvroSchema::parse_registered(&client, &schema).await?;
        Ok(AvroSerializer::from_parsed(
            client,
            schema,
            parsed,
            Box::new(strategy),
            is_key,
        ))
    }

    fn from_parsed(
        client: SchemaRegistryClient,
        schema: Schema,
        parsed: ParsedAvroSchema,
        strategy: Box<dyn SubjectNameStrategy>,
        is_key: bool,
    ) -> AvroSerializer {
        AvroSerializer {
            client,
            record_name: parsed.record_name(),
            schema,
            parsed: Arc::new(parsed),
            strategy,
            is_key,
            config: SerializerConfig::default(),
            latest: Mutex::new(BoundedCache::new(PARSED_SCHEMA_CACHE_CAPACITY)),
        }
    }

    pub fn with_config(mut self, config: SerializerConfig) -> Result<AvroSerializer, SerdeError> {
        config.validate()?;
        self.config = config;
        Ok(self)
    }

    /// The subject a record of `topic` is registered under.
    pub fn subject(&self, topic: &str) -> Result<String, SerdeError> {
        self.strategy
            .subject(topic, self.is_key, self.record_name.as_deref())
    }

    /// `value` framed for `topic`: registers (or looks up) the schema on first use.
    pub async fn serialize(&self, topic: &str, value: &Value) -> Result<Vec<u8>, SerdeError> {
        let (id, schema) = self.writer_schema(topic).await?;
        let mut buffer = Vec::with_capacity(HEADER_BYTES + 64);
        write_header(&mut buffer, id);
        schema.encode(value, &mut buffer)?;
        Ok(buffer)
    }

    /// A `serde::Serialize` value (converted with `apache_avro::to_value`, then resolved
    /// to the schema: `Option` to a union, a struct to a record).
    pub async fn serialize_serde<T: ::serde::Serialize>(
        &self,
        topic: &str,
        value: &T,
    ) -> Result<Vec<u8>, SerdeError> {
        let (id, schema) = self.writer_schema(topic).await?;
        let value = schema.conform(apache_avro::to_value(value)?)?;
        let mut buffer = Vec::with_capacity(HEADER_BYTES + 64);
        write_header(&mut buffer, id);
        schema.encode(&value, &mut buffer)?;
        Ok(buffer)
    }

    /// A JSON value shaped like the schema (objects for records and maps, bare values for
    /// unions — the shape Confluent's Python serializer takes as dicts).
    pub async fn serialize_json(
        &self,
        topic: &str,
        value: &serde_json::Value,
    ) -> Result<Vec<u8>, SerdeError> {
        let (id, schema) = self.writer_schema(topic).await?;
        let value = schema.conform(Value::try_from(value.clone())?)?;
        let mut buffer = Vec::with_capacity(HEADER_BYTES + 64);
        write_header(&mut buffer, id);
        schema.encode(&value, &mut buffer)?;
        Ok(buffer)
    }

    /// The id to frame with and the schema to write with.
    async fn writer_schema(&self, topic: &str) -> Result<(i32, Arc<ParsedAvroSchema>), SerdeError> {
        let subject = self.subject(topic)?;
        if !self.config.use_latest_version {
            let id = schema_id(&self.client, &self.config, &subject, &self.schema).await?;
            return Ok((id, Arc::clone(&self.parsed)));
        }
        if let Some(cached) = lock(&self.latest).get(&subject) {
            return Ok(cached);
        }
        let latest = self.client.get_latest(&subject).await?;
        expect_type(latest.id, &latest.schema, SchemaType::Avro)?;
        let parsed =
            Arc::new(ParsedAvroSchema::parse_registered(&self.client, &latest.schema).await?);
        lock(&self.latest).insert(subject, (latest.id, Arc::clone(&parsed)));
        Ok((latest.id, parsed))
    }
}

/// Reads Avro values in Confluent's wire format.
#[derive(Debug)]
pub struct AvroDeserializer {
    client: SchemaRegistryClient,
    reader: Option<Arc<ParsedAvroSchema>>,
    /// Writer schemas by id.
    writers: Mutex<BoundedCache<i32, Arc<ParsedAvroSchema>>>,
}

impl AvroDeserializer {
    /// Decodes with each record's writer schema (no resolution).
    pub fn new(client: SchemaRegistryClient) -> AvroDeserializer {
        AvroDeserializer {
            client,
            reader: None,
            writers: Mutex::new(BoundedCache::new(PARSED_SCHEMA_CACHE_CAPACITY)),
        }
    }

    /// Resolves every record to `schema` (Avro's JSON; `named_schemas` define the named
    /// types it uses but does not define, dependencies first).
    pub fn with_reader_schema(
        mut self,
        schema: &str,
        named_schemas: &[&str],
    ) -> Result<AvroDeserializer, SerdeError> {
        self.reader = Some(Arc::new(ParsedAvroSchema::parse(schema, named_schemas)?));
        Ok(self)
    }

    /// Decodes a framed record.
    pub async fn deserialize(&self, payload: &[u8]) -> Result<Value, SerdeError> {
        let (id, datum) = read_header(payload)?;
        let writer = self.writer_schema(id).await?;
        writer.decode(datum, self.reader.as_deref())
    }

    /// Decodes a framed record into a `serde::Deserialize` type.
    pub async fn deserialize_into<T: ::serde::de::DeserializeOwned>(
        &self,
        payload: &[u8],
    ) -> Result<T, SerdeError> {
        let value = self.deserialize(payload).await?;
        Ok(apache_avro::from_value(&value)?)
    }

    /// Decodes a framed record to JSON (unions unwrapped, bytes as arrays of numbers).
    pub async fn deserialize_json(&self, payload: &[u8]) -> Result<serde_json::Value, SerdeError> {
        let value = self.deserialize(payload).await?;
        Ok(serde_json::Value::try_from(value)?)
    }

    async fn writer_schema(&self, id: i32) -> Result<Arc<ParsedAvroSchema>, SerdeError> {
        if let Some(parsed) = lock(&self.writers).get(&id) {
            return Ok(parsed);
        }
        let schema = self.client.get_schema_by_id(id).await?;
        expect_type(id, &schema, SchemaType::Avro)?;
        let parsed = Arc::new(ParsedAvroSchema::parse_registered(&self.client, &schema).await?);
        lock(&self.writers).insert(id, Arc::clone(&parsed));
        Ok(parsed)
    }
}
