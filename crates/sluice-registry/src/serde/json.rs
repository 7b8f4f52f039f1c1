//! JSON Schema in Confluent's wire format: [`JsonSerializer`] validates a
//! `serde_json::Value` against its schema and writes the frame and the value's JSON text;
//! [`JsonDeserializer`] reads the frame, parses the JSON and (unless told not to) validates
//! it against the writer's schema fetched by id.
//!
//! The record name the record name strategies use is the schema's `title`, as in
//! Confluent's clients. References (`$ref` to schemas registered under other subjects) are
//! fetched and offered to the validator under their reference names, resolved against
//! [`REFERENCE_BASE_URI`] and against the schema's own `$id`.
//!
//! Cost: a compiled validator is kept per schema (own, latest per subject, or per id);
//! each record is validated once and written or parsed once.

use std::sync::{Arc, Mutex};

use jsonschema::Validator;
use reqwest::Url;
use serde_json::Value;

use super::strategy::SubjectNameStrategy;
use super::wire::{HEADER_BYTES, read_header, write_header};
use super::{
    PARSED_SCHEMA_CACHE_CAPACITY, SerdeError, SerializerConfig, expect_type, lock,
    resolve_references, schema_id,
};
use crate::client::{BoundedCache, Schema, SchemaReference, SchemaRegistryClient, SchemaType};

/// The base a relative reference name resolves against (a schema without `$id` has no
/// base of its own).
pub const REFERENCE_BASE_URI: &str = "https://schema-registry.invalid/";

/// At most this many validation failures are reported in one error.
const MAX_REPORTED_ERRORS: usize = 5;

/// A JSON Schema compiled for validation.
#[derive(Debug)]
pub struct CompiledJsonSchema {
    validator: Validator,
    record_name: Option<String>,
}

impl CompiledJsonSchema {
    /// Compiles `schema` with `references` (reference name, schema text).
    pub fn compile(
        schema: &str,
        references: &[(String, String)],
    ) -> Result<CompiledJsonSchema, SerdeError> {
        let invalid = |detail: String| SerdeError::InvalidSchema(detail);
        let root: Value = serde_json::from_str(schema).map_err(|e| invalid(e.to_string()))?;
        let record_name = root
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_string);
        let validator = if references.is_empty() {
            jsonschema::validator_for(&root).map_err(|e| invalid(e.to_string()))?
        } else {
            let mut bases = vec![Url::parse(REFERENCE_BASE_URI).expect("a valid URL")];
            if let Some(id) = root.get("$id").and_then(Value::as_str)
                && let Ok(own) = Url::parse(id)
            {
                bases.push(own);
            }
            let mut resources = Vec::new();
            for (name, text) in references {
                let document: Value =
                    serde_json::from_str(text).map_err(|e| invalid(format!("{name}: {e}")))?;
                if Url::parse(name).is_ok() {
                    resources.push((name.clone(), document));
                    continue;
                }
                for base in &bases {
                    if let Ok(uri) = base.join(name) {
                        resources.push((uri.to_string(), document.clone()));
                    }
                }
            }
            let registry = jsonschema::Registry::new()
                .extend(resources)
                .and_then(|builder| builder.prepare())
                .map_err(|e| invalid(e.to_string()))?;
            jsonschema::options()
                .with_registry(&registry)
                .with_base_uri(REFERENCE_BASE_URI)
                .build(&root)
                .map_err(|e| invalid(e.to_string()))?
        };
        Ok(CompiledJsonSchema {
            validator,
            record_name,
        })
    }

    /// Compiles a registered schema, fetching what its references name.
    pub async fn compile_registered(
        client: &SchemaRegistryClient,
        schema: &Schema,
    ) -> Result<CompiledJsonSchema, SerdeError> {
        let resolved = resolve_references(client, &schema.references).await?;
        let mut references = Vec::with_capacity(resolved.len());
        for reference in resolved {
            expect_type(
                reference.version.id,
                &reference.version.schema,
                SchemaType::Json,
            )?;
            references.push((reference.name, reference.version.schema.schema));
        }
        CompiledJsonSchema::compile(&schema.schema, &references)
    }

    /// The schema's `title`.
    pub fn record_name(&self) -> Option<&str> {
        self.record_name.as_deref()
    }

    /// Why `value` does not match (the first few failures), if it does not.
    pub fn validate(&self, value: &Value) -> Result<(), SerdeError> {
        let failures: Vec<String> = self
            .validator
            .iter_errors(value)
            .take(MAX_REPORTED_ERRORS)
            .map(|error| format!("{error} (at '{}')", error.instance_path()))
            .collect();
        if failures.is_empty() {
            Ok(())
        } else {
            Err(SerdeError::JsonValidation(failures.join("; ")))
        }
    }
}

/// Writes JSON values in Confluent's wire format.
#[derive(Debug)]
pub struct JsonSerializer {
    client: SchemaRegistryClient,
    schema: Schema,
    compiled: Arc<CompiledJsonSchema>,
    strategy: Box<dyn SubjectNameStrategy>,
    is_key: bool,
    config: SerializerConfig,
    /// `use.latest.version`: subject → its latest version's id and schema, fetched once.
    latest: Mutex<BoundedCache<String, (i32, Arc<CompiledJsonSchema>)>>,
}

impl JsonSerializer {
    /// A serializer of values of `schema` (JSON Schema), for keys when `is_key`.
    pub fn new(
        client: SchemaRegistryClient,
        schema: &str,
        strategy: impl SubjectNameStrategy + 'static,
        is_key: bool,
    ) -> Result<JsonSerializer, SerdeError> {
        let compiled = CompiledJsonSchema::compile(schema, &[])?;
        Ok(JsonSerializer::from_compiled(
            client,
            Schema::new(SchemaType::Json, schema),
            compiled,
            Box::new(strategy),
            is_key,
        ))
    }

    /// A serializer of a schema that `$ref`s schemas registered under other subjects.
    pub async fn with_references(
        client: SchemaRegistryClient,
        schema: &str,
        references: Vec<SchemaReference>,
        strategy: impl SubjectNameStrategy + 'static,
        is_key: bool,
    ) -> Result<JsonSerializer, SerdeError> {
        let schema = Schema::new(SchemaType::Json, schema).with_references(references);
        let compiled = CompiledJsonSchema::compile_registered(&client, &schema).await?;
        Ok(JsonSerializer::from_compiled(
            client,
            schema,
            compiled,
            Box::new(strategy),
            is_key,
        ))
    }

    fn from_compiled(
        client: SchemaRegistryClient,
        schema: Schema,
        compiled: CompiledJsonSchema,
        strategy: Box<dyn SubjectNameStrategy>,
        is_key: bool,
    ) -> JsonSerializer {
        JsonSerializer {
            client,
            schema,
            compiled: Arc::new(compiled),
            strategy,
            is_key,
            config: SerializerConfig::default(),
            latest: Mutex::new(BoundedCache::new(PARSED_SCHEMA_CACHE_CAPACITY)),
        }
    }

    pub fn with_config(mut self, config: SerializerConfig) -> Result<JsonSerializer, SerdeError> {
        config.validate()?;
        self.config = config;
        Ok(self)
    }

    /// The subject a record of `topic` is registered under.
    pub fn subject(&self, topic: &str) -> Result<String, SerdeError> {
        self.strategy
            .subject(topic, self.is_key, self.compiled.record_name())
    }

    /// `value`, validated, framed for `topic`; an invalid value is an error and nothing
    /// is registered for it.
    pub async fn serialize(&self, topic: &str, value: &Value) -> Result<Vec<u8>, SerdeError> {
        // Validate against the serializer's own schema before any registry call, so an
        // invalid value costs no request.
        if !self.config.use_latest_version {
            self.compiled.validate(value)?;
        }
        let (id, compiled) = self.writer_schema(topic).await?;
        if self.config.use_latest_version {
            compiled.validate(value)?;
        }
        let mut buffer = Vec::with_capacity(HEADER_BYTES + 64);
        write_header(&mut buffer, id);
        serde_json::to_writer(&mut buffer, value)?;
        Ok(buffer)
    }

    /// A `serde::Serialize` value, as its JSON.
    pub async fn serialize_serde<T: ::serde::Serialize>(
        &self,
        topic: &str,
        value: &T,
    ) -> Result<Vec<u8>, SerdeError> {
        self.serialize(topic, &serde_json::to_value(value)?).await
    }

    async fn writer_schema(
        &self,
        topic: &str,
    ) -> Result<(i32, Arc<CompiledJsonSchema>), SerdeError> {
        let subject = self.subject(topic)?;
        if !self.config.use_latest_version {
            let id = schema_id(&self.client, &self.config, &subject, &self.schema).await?;
            return Ok((id, Arc::clone(&self.compiled)));
        }
        if let Some(cached) = lock(&self.latest).get(&subject) {
            return Ok(cached);
        }
        let latest = self.client.get_latest(&subject).await?;
        expect_type(latest.id, &latest.schema, SchemaType::Json)?;
        let compiled =
            Arc::new(CompiledJsonSchema::compile_registered(&self.client, &latest.schema).await?);
        lock(&self.latest).insert(subject, (latest.id, Arc::clone(&compiled)));
        Ok((latest.id, compiled))
    }
}

/// Reads JSON values in Confluent's wire format.
#[derive(Debug)]
pub struct JsonDeserializer {
    client: SchemaRegistryClient,
    validate: bool,
    /// Writer schemas by id (only when validating).
    schemas: Mutex<BoundedCache<i32, Arc<CompiledJsonSchema>>>,
}

impl JsonDeserializer {
    /// Validates each record against its writer's schema.
    pub fn new(client: SchemaRegistryClient) -> JsonDeserializer {
        JsonDeserializer {
            client,
            validate: true,
            schemas: Mutex::new(BoundedCache::new(PARSED_SCHEMA_CACHE_CAPACITY)),
        }
    }

    /// Skips validation: records are parsed as JSON and the registry is not asked.
    pub fn without_validation(mut self) -> JsonDeserializer {
        self.validate = false;
        self
    }

    /// Decodes a framed record.
    pub async fn deserialize(&self, payload: &[u8]) -> Result<Value, SerdeError> {
        let (id, text) = read_header(payload)?;
        let value: Value = serde_json::from_slice(text)?;
        if self.validate {
            self.schema(id).await?.validate(&value)?;
        }
        Ok(value)
    }

    /// Decodes a framed record into a `serde::Deserialize` type.
    pub async fn deserialize_into<T: ::serde::de::DeserializeOwned>(
        &self,
        payload: &[u8],
    ) -> Result<T, SerdeError> {
        Ok(serde_json::from_value(self.deserialize(payload).await?)?)
    }

    async fn schema(&self, id: i32) -> Result<Arc<CompiledJsonSchema>, SerdeError> {
        if let Some(compiled) = lock(&self.schemas).get(&id) {
            return Ok(compiled);
        }
        let schema = self.client.get_schema_by_id(id).await?;
        expect_type(id, &schema, SchemaType::Json)?;
        let compiled =
            Arc::new(CompiledJsonSchema::compile_registered(&self.client, &schema).await?);
        lock(&self.schemas).insert(id, Arc::clone(&compiled));
        Ok(compiled)
    }
}
