//! Confluent's Elasticsearch Service Sink (`io.confluent.connect.elasticsearch.
//! ElasticsearchSinkConnector`): each record becomes a document in the index named after
//! its topic, written through the `_bulk` REST API of Elasticsearch or OpenSearch.
//!
//! What it follows from Confluent's connector (its `DataConverter`, `Mapping`,
//! `ElasticsearchClient` and `RetryUtil`):
//! - `_id` is the record key as a string (`key.ignore=false`; keys of an integer type or
//!   string only) or `topic+partition+offset` (`key.ignore=true`). With the key as id,
//!   index and delete requests carry the Kafka offset as an external version, so a record
//!   written again after a restart is a version conflict that is ignored, and the newest
//!   offset's value stays.
//! - The document is the value as Connect's `JsonConverter` with schemas disabled writes
//!   it, after Confluent's pre-processing when `schema.ignore=false`: a Decimal becomes a
//!   double, Date/Time/Timestamp stay their integers (days, milliseconds of the day,
//!   epoch milliseconds), a map with non-string keys (or any map with
//!   `compact.map.entries=false`) becomes an array of `{"key":..,"value":..}` objects.
//! - With `schema.ignore=false` the index's mapping is made from the value schema before
//!   the first write when the index has none (Connect types to Elasticsearch types, a
//!   string as `text` with a `keyword` sub-field, logical dates as `date`, a default value
//!   as `null_value`).
//! - `write.method=upsert` writes partial updates (`update` with `doc_as_upsert`); a null
//!   value is ignored, deleted (`delete`, needs a key) or fails the task per
//!   `behavior.on.null.values`.
//! - A document Elasticsearch refuses on its own merits (`mapper_parsing_exception` and
//!   its kin) is handled per `behavior.on.malformed.documents`; a record that cannot be
//!   converted, per `drop.invalid.message`. Either is also reported to Connect's errant
//!   record reporter, which Connect only gives a task whose connector has a dead letter
//!   queue topic or `errors.log.enable`: the task reports them as [`Errant`] under the
//!   same condition, so without one a skipped record does not fail the task.
//! - Requests that fail (connection refused, timeout, 429, 5xx, or bulk items refused
//!   with 429/5xx) are retried `max.retries` times with exponential backoff and full
//!   jitter from `retry.backoff.ms`; then the task fails (Confluent's `ConnectException`,
//!   not a retriable error).
//!
//! Where it differs: `put` returns once every bulk request of its records is
//! acknowledged (the trait reports errant records by their index in the batch, so they
//! must be known before `put` returns); `flush` therefore has nothing left to wait for,
//! and `linger.ms`, `flush.synchronously`, `flush.timeout.ms` and `bulk.size.bytes` are
//! accepted but change nothing. `max.in.flight.requests` bounds the bulk requests of one
//! `put` in flight at once. Only `http://` URLs: this build of the worker has no TLS.
//! A tombstone reaching an index with no mapping yet does not fail the task (Confluent's
//! "Cannot infer mapping without schema"): the mapping waits for a record with a value.
//!
//! Cost per record: one pre-processing pass over the value (a schema copy per record),
//! one JSON write, one action line; per `batch.size` records one HTTP request. Per index,
//! once per task: a HEAD, and with schemas a GET of the mapping (and a PUT if missing).

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Map, Value as Json, json};

use super::{
    BoxFuture, ConfigKeyDef, ConnectError, ConnectorPlugin, Errant, Kind, SinkError, SinkTask,
};
use crate::converters::{BigDecimal, BigInteger, Converter, JsonConverter, JsonConverterConfig};
use crate::data::{
    DATE, DECIMAL, DataError, Field, Record, Schema, SchemaRef, Struct, TIME, TIMESTAMP, Type,
    Value,
};
use crate::{ConfigError, Props};

const VERSION: &str = "15.0.0";

pub const CONNECTION_URL: &str = "connection.url";
pub const CONNECTION_USERNAME: &str = "connection.username";
pub const CONNECTION_PASSWORD: &str = "connection.password";
pub const BATCH_SIZE: &str = "batch.size";
pub const BULK_SIZE_BYTES: &str = "bulk.size.bytes";
pub const MAX_IN_FLIGHT_REQUESTS: &str = "max.in.flight.requests";
pub const MAX_BUFFERED_RECORDS: &str = "max.buffered.records";
pub const LINGER_MS: &str = "linger.ms";
pub const FLUSH_TIMEOUT_MS: &str = "flush.timeout.ms";
pub const FLUSH_SYNCHRONOUSLY: &str = "flush.synchronously";
pub const MAX_RETRIES: &str = "max.retries";
pub const RETRY_BACKOFF_MS: &str = "retry.backoff.ms";
pub const CONNECTION_TIMEOUT_MS: &str = "connection.timeout.ms";
pub const READ_TIMEOUT_MS: &str = "read.timeout.ms";
pub const KEY_IGNORE: &str = "key.ignore";
pub const TOPIC_KEY_IGNORE: &str = "topic.key.ignore";
pub const SCHEMA_IGNORE: &str = "schema.ignore";
pub const TOPIC_SCHEMA_IGNORE: &str = "topic.schema.ignore";
pub const COMPACT_MAP_ENTRIES: &str = "compact.map.entries";
pub const DROP_INVALID_MESSAGE: &str = "drop.invalid.message";
pub const BEHAVIOR_ON_NULL_VALUES: &str = "behavior.on.null.values";
pub const BEHAVIOR_ON_MALFORMED_DOCUMENTS: &str = "behavior.on.malformed.documents";
pub const WRITE_METHOD: &str = "write.method";
pub const TYPE_NAME: &str = "type.name";

/// Connect's keys that give a sink task an errant record reporter.
const DLQ_TOPIC: &str = "errors.deadletterqueue.topic.name";
const ERRORS_LOG_ENABLE: &str = "errors.log.enable";

/// Confluent's cap on one backoff (`MAX_RETRY_TIME_MS`, a day).
const MAX_RETRY_BACKOFF_MS: u64 = 24 * 60 * 60 * 1000;
/// Confluent's cap on `retry_on_conflict` for upserts.
const MAX_RETRY_ON_CONFLICT: usize = 5;
/// Elasticsearch's limit on an index name, in bytes.
const INDEX_NAME_BYTES_MAX: usize = 255;

/// Error types of a bulk item that mean the document itself is bad (Confluent's
/// `MALFORMED_DOC_ERRORS`, plus Elasticsearch 8's name for a mapping failure).
const MALFORMED_DOCUMENT_ERRORS: [&str; 5] = [
    "mapper_parse_exception",
    "mapper_parsing_exception",
    "document_parsing_exception",
    "illegal_argument_exception",
    "action_request_validation_exception",
];
const VERSION_CONFLICT: &str = "version_conflict_engine_exception";
const RESOURCE_ALREADY_EXISTS: &str = "resource_already_exists_exception";

/// `behavior.on.null.values`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NullValues {
    Ignore,
    Delete,
    Fail,
}

/// `behavior.on.malformed.documents`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MalformedDocuments {
    Ignore,
    Warn,
    Fail,
}

/// `write.method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteMethod {
    Insert,
    Upsert,
}

/// The connector's config, parsed once.
#[derive(Debug, Clone)]
struct Settings {
    urls: Vec<String>,
    /// Basic auth, only when both username and password are set.
    credentials: Option<(String, String)>,
    batch_size: usize,
    max_in_flight_requests: usize,
    max_retries: u32,
    retry_backoff_ms: u64,
    connection_timeout_ms: u64,
    read_timeout_ms: u64,
    key_ignore: bool,
    topic_key_ignore: Vec<String>,
    schema_ignore: bool,
    topic_schema_ignore: Vec<String>,
    compact_map_entries: bool,
    drop_invalid_message: bool,
    null_values: NullValues,
    malformed_documents: MalformedDocuments,
    write_method: WriteMethod,
    /// Whether Connect would give the task an errant record reporter.
    report_errant: bool,
}

/// One typed read of the config, collecting an error per bad key.
struct Parser<'a> {
    config: &'a Props,
    errors: ConfigError,
}

impl Parser<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.config.get(key).map(|v| v.trim())
    }

    fn boolean(&mut self, key: &str, default: bool) -> bool {
        match self.get(key) {
            None => default,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(v) => {
                let v = v.to_string();
                self.errors.push(ConfigError::invalid(
                    key,
                    &v,
                    "Expected value to be either true or false",
                ));
                default
            }
        }
    }

    /// An INT or LONG at least `min` (and at most `max`).
    fn number(&mut self, key: &str, default: i64, min: i64, max: i64, ty: &str) -> i64 {
        let Some(text) = self.get(key).map(str::to_string) else {
            return default;
        };
        let parsed = match ty {
            "INT" => text.parse::<i32>().map(i64::from).ok(),
            _ => text.parse::<i64>().ok(),
        };
        match parsed {
            None => {
                self.errors.push(ConfigError::invalid(
                    key,
                    &text,
                    &format!("Not a number of type {ty}"),
                ));
                default
            }
            Some(n) if n < min => {
                self.errors.push(ConfigError::invalid(
                    key,
                    &text,
                    &format!("Value must be at least {min}"),
                ));
                default
            }
            Some(n) if n > max => {
                self.errors.push(ConfigError::invalid(
                    key,
                    &text,
                    &format!("Value must be no more than {max}"),
                ));
                default
            }
            Some(n) => n,
        }
    }

    /// One of `choices`, any case (Confluent's `EnumRecommender`).
    fn choice<T: Copy>(&mut self, key: &str, default: T, choices: &[(&str, T)]) -> T {
        let Some(text) = self.get(key).map(str::to_string) else {
            return default;
        };
        if let Some((_, value)) = choices
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(&text))
        {
            return *value;
        }
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        self.errors.push(ConfigError::invalid(
            key,
            &text,
            &format!(
                "String must be one of (case insensitive): {}",
                names.join(", ")
            ),
        ));
        default
    }

    fn list(&self, key: &str) -> Vec<String> {
        self.get(key)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Settings {
    fn parse(config: &Props) -> Result<Settings, ConfigError> {
        let mut p = Parser {
            config,
            errors: ConfigError::default(),
        };
        let urls = p.list(CONNECTION_URL);
        if p.get(CONNECTION_URL).is_none() {
            p.errors.push(ConfigError::missing(CONNECTION_URL));
        } else if urls.is_empty() {
            p.errors.push(ConfigError::invalid(
                CONNECTION_URL,
                "",
                "Empty list: at least one Elasticsearch URL is needed",
            ));
        }
        let mut checked = Vec::new();
        for url in &urls {
            match check_url(url) {
                Ok(url) => checked.push(url),
                Err(reason) => p
                    .errors
                    .push(ConfigError::invalid(CONNECTION_URL, url, &reason)),
            }
        }
        let username = p.get(CONNECTION_USERNAME).map(str::to_string);
        let password = p.get(CONNECTION_PASSWORD).map(str::to_string);
        let settings = Settings {
            urls: checked,
            credentials: username.zip(password),
            batch_size: p.number(BATCH_SIZE, 2000, 1, 1_000_000, "INT") as usize,
            max_in_flight_requests: p.number(MAX_IN_FLIGHT_REQUESTS, 5, 1, 1000, "INT") as usize,
            max_retries: p.number(MAX_RETRIES, 5, 0, i64::from(i32::MAX), "INT") as u32,
            retry_backoff_ms: p.number(RETRY_BACKOFF_MS, 100, 0, i64::MAX, "LONG") as u64,
            connection_timeout_ms: p.number(
                CONNECTION_TIMEOUT_MS,
                1000,
                0,
                i64::from(i32::MAX),
                "INT",
            ) as u64,
            read_timeout_ms: p.number(READ_TIMEOUT_MS, 3000, 0, i64::from(i32::MAX), "INT") as u64,
            key_ignore: p.boolean(KEY_IGNORE, false),
            topic_key_ignore: p.list(TOPIC_KEY_IGNORE),
            schema_ignore: p.boolean(SCHEMA_IGNORE, false),
            topic_schema_ignore: p.list(TOPIC_SCHEMA_IGNORE),
            compact_map_entries: p.boolean(COMPACT_MAP_ENTRIES, true),
            drop_invalid_message: p.boolean(DROP_INVALID_MESSAGE, false),
            null_values: p.choice(
                BEHAVIOR_ON_NULL_VALUES,
                NullValues::Fail,
                &[
                    ("ignore", NullValues::Ignore),
                    ("delete", NullValues::Delete),
                    ("fail", NullValues::Fail),
                ],
            ),
            malformed_documents: p.choice(
                BEHAVIOR_ON_MALFORMED_DOCUMENTS,
                MalformedDocuments::Fail,
                &[
                    ("ignore", MalformedDocuments::Ignore),
                    ("warn", MalformedDocuments::Warn),
                    ("fail", MalformedDocuments::Fail),
                ],
            ),
            write_method: p.choice(
                WRITE_METHOD,
                WriteMethod::Insert,
                &[
                    ("insert", WriteMethod::Insert),
                    ("upsert", WriteMethod::Upsert),
                ],
            ),
            report_errant: p.get(DLQ_TOPIC).is_some_and(|t| !t.is_empty())
                || p.get(ERRORS_LOG_ENABLE)
                    .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        };
        // Checked for their type only: this task writes synchronously (module docs).
        p.number(BULK_SIZE_BYTES, 5 * 1024 * 1024, -1, i64::MAX, "LONG");
        p.number(MAX_BUFFERED_RECORDS, 20_000, 1, i64::from(i32::MAX), "INT");
        p.number(LINGER_MS, 1, 0, 604_800_000, "LONG");
        p.number(FLUSH_TIMEOUT_MS, 180_000, 1000, i64::MAX, "LONG");
        p.boolean(FLUSH_SYNCHRONOUSLY, false);
        if p.errors.is_empty() {
            Ok(settings)
        } else {
            Err(p.errors)
        }
    }

    fn ignores_key(&self, topic: &str) -> bool {
        self.key_ignore || self.topic_key_ignore.iter().any(|t| t == topic)
    }

    fn ignores_schema(&self, topic: &str) -> bool {
        self.schema_ignore || self.topic_schema_ignore.iter().any(|t| t == topic)
    }
}

/// A URL as Confluent takes it (no scheme: http), without a trailing slash.
fn check_url(url: &str) -> Result<String, String> {
    let full = if url.contains("://") {
        url.to_string()
    } else {
        format!("http://{url}")
    };
    let parsed = reqwest::Url::parse(&full).map_err(|e| format!("Not a valid URI: {e}"))?;
    match parsed.scheme() {
        "http" => {}
        "https" => {
            return Err(
                "https is not supported: this worker is built without TLS (use http)".into(),
            );
        }
        other => return Err(format!("Unsupported protocol {other}")),
    }
    if parsed.host_str().is_none() {
        return Err("Not a valid URI: no host".into());
    }
    if !parsed.username().is_empty() {
        return Err(format!(
            "Do not put credentials in the URL: use {CONNECTION_USERNAME} and {CONNECTION_PASSWORD}"
        ));
    }
    Ok(full.trim_end_matches('/').to_string())
}

pub struct ElasticsearchSink;

impl ConnectorPlugin for ElasticsearchSink {
    fn class(&self) -> &'static str {
        "io.confluent.connect.elasticsearch.ElasticsearchSinkConnector"
    }

    fn task_class(&self) -> &'static str {
        "io.confluent.connect.elasticsearch.ElasticsearchSinkTask"
    }

    fn kind(&self) -> Kind {
        Kind::Sink
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    fn config_keys(&self) -> Vec<ConfigKeyDef> {
        let key = |name, ty, default, importance, documentation| ConfigKeyDef {
            name,
            ty,
            default,
            required: default.is_none() && name == CONNECTION_URL,
            importance,
            documentation,
        };
        vec![
            key(
                CONNECTION_URL,
                "LIST",
                None,
                "HIGH",
                "List of Elasticsearch HTTP connection URLs, e.g. http://eshost1:9200,http://eshost2:9200. A URL with no protocol is treated as http.",
            ),
            key(
                CONNECTION_USERNAME,
                "STRING",
                None,
                "MEDIUM",
                "The username used to authenticate with Elasticsearch; authentication is performed only if both username and password are set.",
            ),
            key(
                CONNECTION_PASSWORD,
                "PASSWORD",
                None,
                "MEDIUM",
                "The password used to authenticate with Elasticsearch; authentication is performed only if both username and password are set.",
            ),
            key(
                BATCH_SIZE,
                "INT",
                Some("2000"),
                "MEDIUM",
                "The number of records to process as a batch when writing to Elasticsearch.",
            ),
            key(
                BULK_SIZE_BYTES,
                "LONG",
                Some("5242880"),
                "LOW",
                "The maximum size in bytes of a bulk request (accepted; batches are bounded by batch.size).",
            ),
            key(
                MAX_IN_FLIGHT_REQUESTS,
                "INT",
                Some("5"),
                "MEDIUM",
                "The maximum number of indexing requests that can be in-flight to Elasticsearch before blocking further requests.",
            ),
            key(
                MAX_BUFFERED_RECORDS,
                "INT",
                Some("20000"),
                "LOW",
                "The maximum number of records each task will buffer (accepted; records are written before put returns).",
            ),
            key(
                LINGER_MS,
                "LONG",
                Some("1"),
                "LOW",
                "Linger time in milliseconds for batching (accepted; records are written before put returns).",
            ),
            key(
                FLUSH_TIMEOUT_MS,
                "LONG",
                Some("180000"),
                "LOW",
                "The timeout in milliseconds to use for periodic flushing (accepted).",
            ),
            key(
                FLUSH_SYNCHRONOUSLY,
                "BOOLEAN",
                Some("false"),
                "LOW",
                "Whether flushes wait for every bulk request (this task always does).",
            ),
            key(
                MAX_RETRIES,
                "INT",
                Some("5"),
                "LOW",
                "The maximum number of retries that are allowed for failed indexing requests.",
            ),
            key(
                RETRY_BACKOFF_MS,
                "LONG",
                Some("100"),
                "LOW",
                "How long to wait in milliseconds before attempting the first retry of a failed indexing request; later retries back off exponentially with jitter.",
            ),
            key(
                CONNECTION_TIMEOUT_MS,
                "INT",
                Some("1000"),
                "LOW",
                "How long to wait in milliseconds when establishing a connection to the Elasticsearch server.",
            ),
            key(
                READ_TIMEOUT_MS,
                "INT",
                Some("3000"),
                "LOW",
                "How long to wait in milliseconds for the Elasticsearch server to send a response.",
            ),
            key(
                KEY_IGNORE,
                "BOOLEAN",
                Some("false"),
                "HIGH",
                "Whether to ignore the record key for the document ID; if true, the document ID is topic+partition+offset.",
            ),
            key(
                TOPIC_KEY_IGNORE,
                "LIST",
                Some(""),
                "LOW",
                "List of topics for which key.ignore is true.",
            ),
            key(
                SCHEMA_IGNORE,
                "BOOLEAN",
                Some("false"),
                "LOW",
                "Whether to ignore schemas during indexing; if false, the index mapping is made from the record value schema.",
            ),
            key(
                TOPIC_SCHEMA_IGNORE,
                "LIST",
                Some(""),
                "LOW",
                "List of topics for which schema.ignore is true.",
            ),
            key(
                COMPACT_MAP_ENTRIES,
                "BOOLEAN",
                Some("true"),
                "LOW",
                "Whether maps with string keys are written as JSON objects (true) or arrays of key/value documents (false).",
            ),
            key(
                DROP_INVALID_MESSAGE,
                "BOOLEAN",
                Some("false"),
                "LOW",
                "Whether to drop a record that cannot be converted to a document instead of failing the task.",
            ),
            key(
                BEHAVIOR_ON_NULL_VALUES,
                "STRING",
                Some("FAIL"),
                "LOW",
                "How to handle records with a null value: IGNORE, DELETE (the document with the record key as id) or FAIL.",
            ),
            key(
                BEHAVIOR_ON_MALFORMED_DOCUMENTS,
                "STRING",
                Some("FAIL"),
                "LOW",
                "How to handle documents Elasticsearch rejects as malformed: IGNORE, WARN or FAIL.",
            ),
            key(
                WRITE_METHOD,
                "STRING",
                Some("INSERT"),
                "LOW",
                "INSERT replaces a document; UPSERT updates it partially, creating it if absent.",
            ),
            key(
                TYPE_NAME,
                "STRING",
                Some(""),
                "LOW",
                "Ignored: mapping types are gone from Elasticsearch 7 and later.",
            ),
        ]
    }

    fn validate(&self, config: &Props) -> Result<(), ConfigError> {
        Settings::parse(config).map(|_| ())
    }

    fn task_configs(&self, config: &Props, max_tasks: u32) -> Vec<Props> {
        (0..max_tasks.max(1)).map(|_| config.clone()).collect()
    }

    fn sink_task(&self) -> Option<Box<dyn SinkTask>> {
        Some(Box::new(ElasticsearchSinkTask::default()))
    }
}

// ---------------------------------------------------------------------------------------
// Records to documents.

/// Confluent's index name for a topic: lowercase, at most 255 bytes, no leading `-` or
/// `_`, and not `.` or `..`.
fn index_name(topic: &str) -> String {
    let mut index = topic.to_lowercase();
    if index.len() > INDEX_NAME_BYTES_MAX {
        let mut end = INDEX_NAME_BYTES_MAX;
        while !index.is_char_boundary(end) {
            end -= 1;
        }
        index.truncate(end);
    }
    if index.starts_with('-') || index.starts_with('_') {
        index.remove(0);
    }
    match index.as_str() {
        "." => "dot".into(),
        ".." => "dotdot".into(),
        _ => index,
    }
}

/// The document id from the key (Confluent's `convertKey`).
fn key_id(key_schema: Option<&Schema>, key: &Value) -> Result<String, DataError> {
    if key.is_null() {
        return Err(DataError(
            "Key is used as document id and can not be null.".into(),
        ));
    }
    if matches!(key, Value::String(s) if s.is_empty()) {
        return Err(DataError(
            "Key is used as document id and can not be empty.".into(),
        ));
    }
    let ty = key_schema.map_or_else(|| value_type(key), |s| s.ty);
    match (ty, key) {
        (Type::Int8, Value::Int8(v)) => Ok(v.to_string()),
        (Type::Int16, Value::Int16(v)) => Ok(v.to_string()),
        (Type::Int32, Value::Int32(v)) => Ok(v.to_string()),
        (Type::Int64, Value::Int64(v)) => Ok(v.to_string()),
        (Type::String, Value::String(v)) => Ok(v.clone()),
        (Type::Int8 | Type::Int16 | Type::Int32 | Type::Int64 | Type::String, other) => {
            Err(DataError(format!(
                "Invalid key {other} for schema type {}",
                ty.java_name()
            )))
        }
        _ => Err(DataError(format!(
            "{} is not supported as the document id.",
            ty.java_name()
        ))),
    }
}

/// The Connect type a schemaless value has (Connect's `ConnectSchema.schemaType`).
fn value_type(value: &Value) -> Type {
    match value {
        Value::Int8(_) => Type::Int8,
        Value::Int16(_) => Type::Int16,
        Value::Int32(_) => Type::Int32,
        Value::Int64(_) => Type::Int64,
        Value::Float32(_) => Type::Float32,
        Value::Float64(_) => Type::Float64,
        Value::Boolean(_) => Type::Boolean,
        Value::String(_) | Value::Null => Type::String,
        Value::Bytes(_) => Type::Bytes,
        Value::Array(_) => Type::Array,
        Value::Map(_) => Type::Map,
        Value::Struct(_) => Type::Struct,
    }
}

/// A Decimal's bytes at `scale` as the nearest double (`BigDecimal.doubleValue`).
fn decimal_to_f64(bytes: &[u8], scale: i32) -> Result<f64, DataError> {
    let unscaled = BigInteger::from_twos_complement(bytes)
        .ok_or_else(|| DataError("Zero length BigInteger".into()))?;
    Ok(BigDecimal::new(unscaled, scale).to_f64())
}

fn decimal_scale(schema: &Schema) -> Result<i32, DataError> {
    schema
        .decimal_scale()
        .ok_or_else(|| DataError("Invalid Decimal schema: scale parameter not found.".into()))
}

/// Confluent's value pre-processing for documents: schemas and values as its
/// `JsonConverter` should print them for Elasticsearch.
struct Preprocessor {
    compact_map_entries: bool,
}

impl Preprocessor {
    fn schema(&self, schema: &SchemaRef) -> Result<SchemaRef, DataError> {
        match schema.name.as_deref() {
            Some(DECIMAL) => {
                return Ok(self.basics(schema, Schema::new(Type::Float64))?.into());
            }
            Some(DATE | TIME | TIMESTAMP) => return Ok(Arc::clone(schema)),
            _ => {}
        }
        Ok(match schema.ty {
            Type::Array => {
                let element = match &schema.value_schema {
                    Some(element) => self.schema(element)?,
                    None => return Err(DataError("Array schema without element schema".into())),
                };
                self.basics(schema, Schema::array(element))?.into()
            }
            Type::Map => {
                let (Some(key), Some(value)) = (&schema.key_schema, &schema.value_schema) else {
                    return Err(DataError("Map schema without key or value schema".into()));
                };
                let (new_key, new_value) = (self.schema(key)?, self.schema(value)?);
                if self.compact_map_entries && key.ty == Type::String {
                    self.basics(schema, Schema::map(new_key, new_value))?.into()
                } else {
                    let entry = map_entry_schema(key, value, new_key, new_value);
                    self.basics(schema, Schema::array(entry))?.into()
                }
            }
            Type::Struct => {
                let mut copy = Schema::new(Type::Struct);
                copy.name = schema.name.clone();
                for field in &schema.fields {
                    copy = copy.field(field.name.clone(), self.schema(&field.schema)?);
                }
                self.basics(schema, copy)?.into()
            }
            _ => Arc::clone(schema),
        })
    }

    /// `copySchemaBasics`: optional, and the default (pre-processed) unless a struct.
    fn basics(&self, source: &Schema, mut target: Schema) -> Result<Schema, DataError> {
        target.optional = source.optional;
        if let Some(default) = &source.default
            && source.ty != Type::Struct
        {
            let target_ref: SchemaRef = Arc::new(target.clone());
            target.default = Some(self.value(default, source, &target_ref)?);
        }
        Ok(target)
    }

    fn value(&self, value: &Value, schema: &Schema, new: &SchemaRef) -> Result<Value, DataError> {
        if value.is_null() {
            if let Some(default) = &schema.default {
                return self.value(default, schema, new);
            }
            if schema.optional {
                return Ok(Value::Null);
            }
            return Err(DataError(
                "null value for field that is required and has no default value".into(),
            ));
        }
        match schema.name.as_deref() {
            Some(DECIMAL) => {
                let Value::Bytes(bytes) = value else {
                    return Err(DataError(format!(
                        "Invalid type for Decimal: {}",
                        value.java_class()
                    )));
                };
                return Ok(Value::Float64(decimal_to_f64(
                    bytes,
                    decimal_scale(schema)?,
                )?));
            }
            Some(DATE | TIME | TIMESTAMP) => return Ok(value.clone()),
            _ => {}
        }
        match (schema.ty, value) {
            (Type::Array, Value::Array(items)) => {
                let (Some(element), Some(new_element)) = (&schema.value_schema, &new.value_schema)
                else {
                    return Ok(value.clone());
                };
                Ok(Value::Array(
                    items
                        .iter()
                        .map(|item| self.value(item, element, new_element))
                        .collect::<Result<_, _>>()?,
                ))
            }
            (Type::Map, Value::Map(entries)) => self.map_value(entries, schema, new),
            (Type::Struct, Value::Struct(s)) => {
                let mut out = Struct::new(Arc::clone(new));
                for field in &schema.fields {
                    let Some(new_field) = new.get_field(&field.name) else {
                        continue;
                    };
                    let raw = s.values.get(field.index).unwrap_or(&Value::Null);
                    out.values[new_field.index] =
                        self.value(raw, &field.schema, &new_field.schema)?;
                }
                Ok(Value::Struct(out))
            }
            _ => Ok(value.clone()),
        }
    }

    fn map_value(
        &self,
        entries: &[(Value, Value)],
        schema: &Schema,
        new: &SchemaRef,
    ) -> Result<Value, DataError> {
        let (Some(key), Some(value)) = (&schema.key_schema, &schema.value_schema) else {
            return Ok(Value::Map(entries.to_vec()));
        };
        if new.ty == Type::Map {
            let (Some(new_key), Some(new_value)) = (&new.key_schema, &new.value_schema) else {
                return Ok(Value::Map(entries.to_vec()));
            };
            return Ok(Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| {
                        Ok((
                            self.value(k, key, new_key)?,
                            self.value(v, value, new_value)?,
                        ))
                    })
                    .collect::<Result<_, DataError>>()?,
            ));
        }
        let Some(entry) = &new.value_schema else {
            return Ok(Value::Map(entries.to_vec()));
        };
        let (new_key, new_value) = (&entry.fields[0].schema, &entry.fields[1].schema);
        let mut items = Vec::with_capacity(entries.len());
        for (k, v) in entries {
            let mut s = Struct::new(Arc::clone(entry));
            s.values[0] = self.value(k, key, new_key)?;
            s.values[1] = self.value(v, value, new_value)?;
            items.push(Value::Struct(s));
        }
        Ok(Value::Array(items))
    }
}

/// The element of a non-compact map: `{"key":..,"value":..}`, named `KEY-VALUE` after
/// the key and value schemas' names or types.
fn map_entry_schema(
    key: &Schema,
    value: &Schema,
    new_key: SchemaRef,
    new_value: SchemaRef,
) -> Schema {
    let name = |s: &Schema| {
        s.name
            .clone()
            .unwrap_or_else(|| s.ty.java_name().to_string())
    };
    Schema::new(Type::Struct)
        .named(format!("{}-{}", name(key), name(value)))
        .field("key", new_key)
        .field("value", new_value)
}

/// The document JSON of a record's value.
fn document(
    preprocessor: &Preprocessor,
    ignore_schema: bool,
    schema: Option<&SchemaRef>,
    value: &Value,
) -> Result<String, DataError> {
    let converter = JsonConverter::new(JsonConverterConfig {
        schemas_enable: false,
        ..JsonConverterConfig::default()
    })
    .map_err(|e| DataError(e.to_string()))?;
    let (schema, value) = match schema {
        Some(schema) if !ignore_schema => {
            let new = preprocessor.schema(schema)?;
            let value = preprocessor.value(value, schema, &new)?;
            (Some(new), value)
        }
        _ => (schema.cloned(), value.clone()),
    };
    let bytes = converter
        .from_connect("", schema.as_ref(), &value)?
        .unwrap_or_else(|| b"null".to_vec());
    String::from_utf8(bytes).map_err(|e| DataError(e.to_string()))
}

/// Confluent's `Mapping.buildMapping`: an Elasticsearch mapping for a Connect schema.
fn mapping(schema: &Schema) -> Result<Json, DataError> {
    let mut out = Map::new();
    if let Some(ty) = logical_type(schema) {
        primitive_mapping(&mut out, ty, schema)?;
        return Ok(Json::Object(out));
    }
    match schema.ty {
        Type::Array => {
            return match &schema.value_schema {
                Some(element) => mapping(element),
                None => Err(DataError("Cannot infer mapping without schema.".into())),
            };
        }
        Type::Map => {
            let (Some(key), Some(value)) = (&schema.key_schema, &schema.value_schema) else {
                return Err(DataError("Cannot infer mapping without schema.".into()));
            };
            let mut properties = Map::new();
            properties.insert("key".into(), mapping(key)?);
            properties.insert("value".into(), mapping(value)?);
            out.insert("properties".into(), Json::Object(properties));
        }
        Type::Struct => {
            let mut properties = Map::new();
            for Field { name, schema, .. } in &schema.fields {
                properties.insert(name.clone(), mapping(schema)?);
            }
            out.insert("properties".into(), Json::Object(properties));
        }
        ty => primitive_mapping(&mut out, elasticsearch_type(ty), schema)?,
    }
    Ok(Json::Object(out))
}

fn logical_type(schema: &Schema) -> Option<&'static str> {
    match schema.name.as_deref()? {
        DATE | TIME | TIMESTAMP => Some("date"),
        DECIMAL => Some("double"),
        _ => None,
    }
}

fn elasticsearch_type(ty: Type) -> &'static str {
    match ty {
        Type::Boolean => "boolean",
        Type::Int8 => "byte",
        Type::Int16 => "short",
        Type::Int32 => "integer",
        Type::Int64 => "long",
        Type::Float32 => "float",
        Type::Float64 => "double",
        Type::String => "text",
        Type::Bytes => "binary",
        Type::Array | Type::Map | Type::Struct => "object",
    }
}

/// `inferPrimitive`: the type, a `keyword` sub-field for text, and the default as
/// `null_value` (not for text or binary, which Elasticsearch does not allow).
fn primitive_mapping(
    out: &mut Map<String, Json>,
    ty: &str,
    schema: &Schema,
) -> Result<(), DataError> {
    out.insert("type".into(), ty.into());
    if ty == "text" {
        out.insert(
            "fields".into(),
            json!({"keyword": {"type": "keyword", "ignore_above": 256}}),
        );
    }
    let Some(default) = &schema.default else {
        return Ok(());
    };
    let null_value = match (ty, default) {
        (_, Value::Int8(v)) => json!(v),
        (_, Value::Int16(v)) => json!(v),
        (_, Value::Boolean(v)) => json!(v),
        (_, Value::Float32(v)) => json!(v),
        (_, Value::Float64(v)) => json!(v),
        // Date: days since the epoch, as a Java Date's milliseconds.
        ("date", Value::Int32(v)) if schema.name.as_deref() == Some(DATE) => {
            json!(i64::from(*v) * 86_400_000)
        }
        (_, Value::Int32(v)) => json!(v),
        (_, Value::Int64(v)) => json!(v),
        ("double", Value::Bytes(bytes)) => json!(decimal_to_f64(bytes, decimal_scale(schema)?)?),
        _ => return Ok(()),
    };
    out.insert("null_value".into(), null_value);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Bulk actions and their results.

/// One bulk action: the action line and, but for a delete, the source line.
#[derive(Debug, Clone, PartialEq)]
struct Action {
    /// The record's index in the batch `put` got.
    record: usize,
    meta: String,
    source: Option<String>,
    /// Written with the Kafka offset as an external version: a version conflict means a
    /// newer offset is already there.
    external_version: bool,
}

/// What to do with a record: write it, or skip it (ignored null value).
fn action(
    settings: &Settings,
    preprocessor: &Preprocessor,
    index: &str,
    record_index: usize,
    record: &Record,
) -> Result<Option<Action>, DataError> {
    if record.value.is_null() {
        match settings.null_values {
            NullValues::Ignore => return Ok(None),
            NullValues::Delete if record.key.is_null() => return Ok(None),
            NullValues::Delete => {}
            NullValues::Fail => {
                return Err(DataError(format!(
                    "Sink record with key of {} and null value encountered for topic/partition/offset {}/{}/{} \
                     (to ignore future records like this change the configuration property '{BEHAVIOR_ON_NULL_VALUES}' \
                     from 'fail' to 'ignore')",
                    record.key,
                    record.topic,
                    record.partition.unwrap_or(-1),
                    record.kafka_offset.unwrap_or(-1),
                )));
            }
        }
    }
    let ignore_key = settings.ignores_key(&record.topic);
    let id = if ignore_key {
        format!(
            "{}+{}+{}",
            record.topic,
            record.partition.unwrap_or(-1),
            record.kafka_offset.unwrap_or(-1)
        )
    } else {
        key_id(record.key_schema.as_deref(), &record.key)?
    };
    let version = record.kafka_offset.filter(|_| !ignore_key);
    let mut meta = Map::new();
    meta.insert("_index".into(), index.into());
    meta.insert("_id".into(), id.into());
    let versioned = |meta: &mut Map<String, Json>| {
        if let Some(offset) = version {
            meta.insert("version".into(), offset.into());
            meta.insert("version_type".into(), "external".into());
        }
    };
    let (verb, source) = if record.value.is_null() {
        versioned(&mut meta);
        ("delete", None)
    } else {
        let document = document(
            preprocessor,
            settings.ignores_schema(&record.topic),
            record.value_schema.as_ref(),
            &record.value,
        )?;
        match settings.write_method {
            WriteMethod::Insert => {
                versioned(&mut meta);
                ("index", Some(document))
            }
            WriteMethod::Upsert => {
                let retries = settings.max_in_flight_requests.min(MAX_RETRY_ON_CONFLICT);
                meta.insert("retry_on_conflict".into(), retries.into());
                (
                    "update",
                    Some(format!("{{\"doc\":{document},\"doc_as_upsert\":true}}")),
                )
            }
        }
    };
    let external_version = version.is_some() && verb != "update";
    Ok(Some(Action {
        record: record_index,
        meta: json!({ verb: meta }).to_string(),
        source,
        external_version,
    }))
}

/// The `_bulk` body (NDJSON) of `actions`.
fn bulk_body(actions: &[Action]) -> String {
    let mut body = String::new();
    for action in actions {
        body.push_str(&action.meta);
        body.push('\n');
        if let Some(source) = &action.source {
            body.push_str(source);
            body.push('\n');
        }
    }
    body
}

/// The outcome of one bulk item.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Written,
    /// Refused with a 429 or 5xx: worth sending again.
    Transient(String),
    /// Refused as a bad document.
    Malformed(String),
    /// A version conflict not explained by the external version.
    Conflict(String),
    Failed(String),
}

/// Each item's outcome from a `_bulk` answer, in request order.
fn outcomes(response: &Json, actions: &[Action]) -> Result<Vec<Outcome>, String> {
    let items = response
        .get("items")
        .and_then(Json::as_array)
        .ok_or_else(|| {
            format!(
                "a bulk answer without items: {}",
                truncate(&response.to_string())
            )
        })?;
    if items.len() != actions.len() {
        return Err(format!(
            "a bulk answer with {} items for {} actions",
            items.len(),
            actions.len()
        ));
    }
    Ok(items
        .iter()
        .zip(actions)
        .map(|(item, action)| {
            // {"index": {...}} / {"update": {...}} / {"delete": {...}}
            let result = item.as_object().and_then(|o| o.values().next());
            let Some(error) = result.and_then(|r| r.get("error")) else {
                return Outcome::Written;
            };
            let status = result
                .and_then(|r| r.get("status"))
                .and_then(Json::as_u64)
                .unwrap_or(0);
            let message = error_text(error);
            let kind = error.get("type").and_then(Json::as_str).unwrap_or("");
            if status == 429 || status >= 500 {
                Outcome::Transient(message)
            } else if MALFORMED_DOCUMENT_ERRORS
                .iter()
                .any(|e| message.contains(e))
            {
                Outcome::Malformed(message)
            } else if kind == VERSION_CONFLICT && action.external_version {
                Outcome::Written
            } else if kind == VERSION_CONFLICT {
                Outcome::Conflict(message)
            } else {
                Outcome::Failed(message)
            }
        })
        .collect())
}

/// An Elasticsearch error object as one line: `type: reason (caused by type: reason)`.
fn error_text(error: &Json) -> String {
    let Some(kind) = error.get("type").and_then(Json::as_str) else {
        return truncate(&error.to_string());
    };
    let reason = error.get("reason").and_then(Json::as_str).unwrap_or("");
    let mut text = format!("{kind}: {reason}");
    if let Some(cause) = error.get("caused_by") {
        text.push_str(&format!(" (caused by {})", error_text(cause)));
    }
    text
}

fn truncate(text: &str) -> String {
    const MAX: usize = 2000;
    if text.len() <= MAX {
        return text.to_string();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

// ---------------------------------------------------------------------------------------
// HTTP with retries.

/// Confluent's `computeRandomRetryWaitTimeInMillis`: uniformly random in
/// `[0, min(initial << attempt, a day))`.
fn retry_backoff_ms(attempt: u32, initial_ms: u64, random: u64) -> u64 {
    let bound = if attempt > 32 {
        MAX_RETRY_BACKOFF_MS
    } else {
        initial_ms
            .checked_shl(attempt)
            .filter(|b| b >> attempt == initial_ms)
            .map_or(MAX_RETRY_BACKOFF_MS, |b| b.min(MAX_RETRY_BACKOFF_MS))
    };
    if bound == 0 { 0 } else { random % bound }
}

fn random_u64() -> u64 {
    RandomState::new().build_hasher().finish()
}

/// One try's failure.
enum Attempt {
    /// Connection refused, timeout, 429, 5xx: try again after a backoff.
    Transient(String),
    /// An answer no retry changes (a 400 on a request this task built, a 401).
    Permanent(String),
}

/// The cluster's URLs, tried in turn, with the task's client and retry settings.
#[derive(Clone)]
struct Cluster {
    http: reqwest::Client,
    urls: Arc<Vec<String>>,
    next_url: Arc<AtomicUsize>,
    credentials: Option<(String, String)>,
    max_retries: u32,
    retry_backoff_ms: u64,
}

impl Cluster {
    fn new(settings: &Settings) -> Result<Cluster, ConnectError> {
        let mut builder = reqwest::Client::builder();
        if settings.connection_timeout_ms > 0 {
            builder =
                builder.connect_timeout(Duration::from_millis(settings.connection_timeout_ms));
        }
        if settings.read_timeout_ms > 0 {
            builder = builder.read_timeout(Duration::from_millis(settings.read_timeout_ms));
        }
        let http = builder
            .build()
            .map_err(|e| ConnectError(format!("Could not make an HTTP client: {e}")))?;
        Ok(Cluster {
            http,
            urls: Arc::new(settings.urls.clone()),
            next_url: Arc::new(AtomicUsize::new(0)),
            credentials: settings.credentials.clone(),
            max_retries: settings.max_retries,
            retry_backoff_ms: settings.retry_backoff_ms,
        })
    }

    /// One HTTP request to the next URL: its status and body. Transport errors, 429 and
    /// 5xx are transient.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<(&'static str, String)>,
    ) -> Result<(u16, String), Attempt> {
        let urls = &self.urls;
        let base = &urls[self.next_url.fetch_add(1, Ordering::Relaxed) % urls.len()];
        let mut request = self.http.request(method, format!("{base}{path}"));
        if let Some((user, password)) = &self.credentials {
            request = request.basic_auth(user, Some(password));
        }
        if let Some((content_type, body)) = body {
            request = request.header("content-type", content_type).body(body);
        }
        let response = request
            .send()
            .await
            .map_err(|e| Attempt::Transient(format!("{base}: {e}")))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .map_err(|e| Attempt::Transient(format!("{base}: reading the answer: {e}")))?;
        if status == 429 || status >= 500 {
            return Err(Attempt::Transient(format!(
                "{base} answered {status}: {}",
                truncate(&text)
            )));
        }
        Ok((status, text))
    }

    /// Confluent's `callWithRetries`: `try_once(last)` up to `max.retries + 1` times;
    /// `last` tells the final try, which may then accept a partial result.
    async fn with_retries<T, F, Fut>(&self, description: &str, mut try_once: F) -> Result<T, String>
    where
        F: FnMut(bool) -> Fut,
        Fut: std::future::Future<Output = Result<T, Attempt>>,
    {
        let attempts = self.max_retries.saturating_add(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match try_once(attempt >= attempts).await {
                Ok(value) => return Ok(value),
                Err(Attempt::Permanent(e)) => return Err(format!("Failed to {description}: {e}")),
                Err(Attempt::Transient(e)) if attempt >= attempts => {
                    return Err(format!(
                        "Failed to {description} due to '{e}' after {attempt} attempt(s)"
                    ));
                }
                Err(Attempt::Transient(e)) => {
                    let backoff = retry_backoff_ms(attempt, self.retry_backoff_ms, random_u64());
                    tracing::warn!(
                        "Failed to {description} due to {e}. Retrying attempt ({attempt}/{attempts}) after backoff of {backoff} ms"
                    );
                    tokio::time::sleep(Duration::from_millis(backoff)).await;
                }
            }
        }
    }

    /// Sends one bulk request; items refused with 429/5xx send the whole request again
    /// (every action in it is idempotent: external versions, fixed ids, upserts).
    async fn bulk(&self, actions: Vec<Action>) -> Result<Vec<(Action, Outcome)>, String> {
        let body = bulk_body(&actions);
        let actions = &actions;
        let outcomes = self
            .with_retries("execute bulk request", |last| {
                let body = body.clone();
                async move {
                    let (status, text) = self
                        .send(
                            reqwest::Method::POST,
                            "/_bulk?refresh=false",
                            Some(("application/x-ndjson", body)),
                        )
                        .await?;
                    if !(200..300).contains(&status) {
                        return Err(Attempt::Permanent(format!(
                            "the bulk request was refused ({status}): {}",
                            truncate(&text)
                        )));
                    }
                    let response: Json = serde_json::from_str(&text).map_err(|e| {
                        Attempt::Transient(format!("an unreadable bulk answer: {e}"))
                    })?;
                    let outcomes = outcomes(&response, actions).map_err(Attempt::Transient)?;
                    if !last
                        && let Some(Outcome::Transient(e)) =
                            outcomes.iter().find(|o| matches!(o, Outcome::Transient(_)))
                    {
                        return Err(Attempt::Transient(e.clone()));
                    }
                    Ok(outcomes)
                }
            })
            .await?;
        Ok(actions.iter().cloned().zip(outcomes).collect())
    }
}

// ---------------------------------------------------------------------------------------
// The task.

#[derive(Default)]
struct ElasticsearchSinkTask {
    settings: Option<Settings>,
    cluster: Option<Cluster>,
    /// Indices known to exist.
    existing: HashSet<String>,
    /// Indices whose mapping is known to be there (or not wanted).
    mapped: HashSet<String>,
}

impl ElasticsearchSinkTask {
    /// Creates the index if it does not exist and, with schemas, its mapping if it has
    /// none (Confluent's `ensureIndexExists` and `checkMapping`).
    async fn ensure_index(
        &mut self,
        index: &str,
        record: &Record,
        settings: &Settings,
        cluster: &Cluster,
    ) -> Result<(), SinkError> {
        let wants_mapping = !settings.ignores_schema(&record.topic);
        if self.existing.contains(index) && (!wants_mapping || self.mapped.contains(index)) {
            return Ok(());
        }
        // A tombstone carries no schema: the mapping waits for a record with a value.
        let schema_mapping =
            if wants_mapping && !self.mapped.contains(index) && !record.value.is_null() {
                let schema = record
                    .value_schema
                    .as_ref()
                    .ok_or_else(|| ConnectError("Cannot infer mapping without schema.".into()))?;
                Some(mapping(schema).map_err(|e| ConnectError(e.0))?)
            } else {
                None
            };
        let path = format!("/{index}");
        if !self.existing.contains(index) {
            let exists = cluster
                .with_retries(&format!("check if index {index} exists"), |_| async {
                    match cluster.send(reqwest::Method::HEAD, &path, None).await? {
                        (200, _) => Ok(true),
                        (404, _) => Ok(false),
                        (status, text) => {
                            Err(Attempt::Permanent(format!("{status}: {}", truncate(&text))))
                        }
                    }
                })
                .await
                .map_err(ConnectError)?;
            if !exists {
                let body = match &schema_mapping {
                    Some(m) => json!({ "mappings": m }),
                    None => json!({}),
                }
                .to_string();
                let created = cluster
                    .with_retries(&format!("create index {index}"), |_| {
                        let body = body.clone();
                        let path = &path;
                        async move {
                            let (status, text) = cluster
                                .send(reqwest::Method::PUT, path, Some(("application/json", body)))
                                .await?;
                            if (200..300).contains(&status) {
                                Ok(true)
                            } else if text.contains(RESOURCE_ALREADY_EXISTS) {
                                Ok(false)
                            } else {
                                Err(Attempt::Permanent(format!("{status}: {}", truncate(&text))))
                            }
                        }
                    })
                    .await
                    .map_err(ConnectError)?;
                tracing::info!(index, created, "Elasticsearch index ready");
                if created && schema_mapping.is_some() {
                    self.mapped.insert(index.to_string());
                }
            }
            self.existing.insert(index.to_string());
            if !wants_mapping {
                self.mapped.insert(index.to_string());
            }
        }
        let Some(schema_mapping) = schema_mapping.filter(|_| !self.mapped.contains(index)) else {
            return Ok(());
        };
        let mapping_path = format!("/{index}/_mapping");
        let has_mapping = cluster
            .with_retries(&format!("get mapping for index {index}"), |_| async {
                match cluster
                    .send(reqwest::Method::GET, &mapping_path, None)
                    .await?
                {
                    (200, text) => {
                        let answer: Json = serde_json::from_str(&text).unwrap_or(Json::Null);
                        Ok(answer
                            .get(index)
                            .and_then(|i| i.get("mappings"))
                            .and_then(Json::as_object)
                            .is_some_and(|m| !m.is_empty()))
                    }
                    (status, text) => {
                        Err(Attempt::Permanent(format!("{status}: {}", truncate(&text))))
                    }
                }
            })
            .await
            .map_err(ConnectError)?;
        if !has_mapping {
            let body = schema_mapping.to_string();
            cluster
                .with_retries(&format!("create mapping for index {index}"), |_| {
                    let body = body.clone();
                    let mapping_path = &mapping_path;
                    async move {
                        match cluster
                            .send(
                                reqwest::Method::PUT,
                                mapping_path,
                                Some(("application/json", body)),
                            )
                            .await?
                        {
                            (200..=299, _) => Ok(()),
                            (status, text) => {
                                Err(Attempt::Permanent(format!("{status}: {}", truncate(&text))))
                            }
                        }
                    }
                })
                .await
                .map_err(ConnectError)?;
        }
        self.mapped.insert(index.to_string());
        Ok(())
    }

    async fn write(&mut self, records: &[Record]) -> Result<Vec<Errant>, SinkError> {
        let (Some(settings), Some(cluster)) = (self.settings.clone(), self.cluster.clone()) else {
            return Err(ConnectError("the Elasticsearch sink task was not started".into()).into());
        };
        let preprocessor = Preprocessor {
            compact_map_entries: settings.compact_map_entries,
        };
        let mut errant = Vec::new();
        let mut actions = Vec::new();
        for (i, record) in records.iter().enumerate() {
            if record.value.is_null() && settings.null_values == NullValues::Ignore {
                continue;
            }
            let index = index_name(&record.topic);
            self.ensure_index(&index, record, &settings, &cluster)
                .await?;
            match action(&settings, &preprocessor, &index, i, record) {
                Ok(Some(action)) => actions.push(action),
                Ok(None) => {}
                Err(e) if settings.drop_invalid_message => {
                    tracing::error!(topic = %record.topic, partition = ?record.partition, offset = ?record.kafka_offset, "Can't convert record: {e}");
                    if settings.report_errant {
                        errant.push(Errant {
                            index: i,
                            error: e.0,
                        });
                    }
                }
                Err(e) => return Err(ConnectError(e.0).into()),
            }
        }
        // At most max.in.flight.requests bulk requests at once, each of batch.size actions.
        let mut in_flight = tokio::task::JoinSet::new();
        let mut results = Vec::new();
        let mut chunks = actions.chunks(settings.batch_size).map(<[Action]>::to_vec);
        loop {
            while in_flight.len() < settings.max_in_flight_requests {
                let Some(chunk) = chunks.next() else { break };
                let cluster = cluster.clone();
                in_flight.spawn(async move { cluster.bulk(chunk).await });
            }
            let Some(done) = in_flight.join_next().await else {
                break;
            };
            let done = done.map_err(|e| ConnectError(format!("a bulk request failed: {e}")))?;
            results.extend(done.map_err(ConnectError)?);
        }
        let mut failure = None;
        for (action, outcome) in results {
            let record = &records[action.record];
            match outcome {
                Outcome::Written => {}
                Outcome::Malformed(message) => {
                    let text = format!(
                        "Encountered an illegal document error '{message}'. Ignoring and will not index record."
                    );
                    match settings.malformed_documents {
                        MalformedDocuments::Ignore => tracing::debug!("{text}"),
                        MalformedDocuments::Warn => tracing::warn!("{text}"),
                        MalformedDocuments::Fail => {
                            tracing::error!(
                                "Encountered an illegal document error '{message}'. To ignore future records like this, change the configuration '{BEHAVIOR_ON_MALFORMED_DOCUMENTS}' to 'ignore'."
                            );
                            failure.get_or_insert(format!("Indexing record failed -> {message}"));
                        }
                    }
                    if settings.report_errant {
                        errant.push(Errant {
                            index: action.record,
                            error: message,
                        });
                    }
                }
                Outcome::Conflict(message) => {
                    tracing::warn!(topic = %record.topic, offset = ?record.kafka_offset, "version conflict: {message}");
                    if settings.report_errant {
                        errant.push(Errant {
                            index: action.record,
                            error: message,
                        });
                    }
                }
                Outcome::Transient(message) | Outcome::Failed(message) => {
                    failure.get_or_insert(format!("Indexing record failed -> {message}"));
                }
            }
        }
        if let Some(failure) = failure {
            return Err(ConnectError(failure).into());
        }
        errant.sort_by_key(|e| e.index);
        Ok(errant)
    }
}

impl SinkTask for ElasticsearchSinkTask {
    fn start<'a>(&'a mut self, config: &'a Props) -> BoxFuture<'a, Result<(), ConnectError>> {
        Box::pin(async move {
            let settings = Settings::parse(config).map_err(|e| ConnectError(e.message()))?;
            self.cluster = Some(Cluster::new(&settings)?);
            self.settings = Some(settings);
            self.existing.clear();
            self.mapped.clear();
            Ok(())
        })
    }

    fn put<'a>(
        &'a mut self,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Vec<Errant>, SinkError>> {
        Box::pin(self.write(records))
    }

    fn flush(&mut self) -> BoxFuture<'_, Result<(), SinkError>> {
        // `put` returned only once Elasticsearch acknowledged every request.
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Props {
        let mut config: Props = [(CONNECTION_URL, "http://127.0.0.1:9200")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (k, v) in pairs {
            config.insert(k.to_string(), v.to_string());
        }
        config
    }

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        Settings::parse(&props(pairs)).unwrap()
    }

    fn person_schema() -> SchemaRef {
        Schema::new(Type::Struct)
            .named("person")
            .field("name", Schema::new(Type::String))
            .field("age", Schema::new(Type::Int32).optional())
            .field("price", Schema::decimal(2).optional())
            .field("born", Schema::date().optional())
            .field("seen", Schema::timestamp().optional())
            .field(
                "tags",
                Schema::map(Schema::new(Type::Int32), Schema::new(Type::String)).optional(),
            )
            .into()
    }

    fn person(name: &str, age: i32) -> Value {
        let s = Struct::new(person_schema())
            .with("name", Value::String(name.into()))
            .unwrap()
            .with("age", Value::Int32(age))
            .unwrap()
            // 12.34 at scale 2: unscaled 1234.
            .with("price", Value::Bytes(vec![0x04, 0xd2]))
            .unwrap()
            .with("born", Value::Int32(3))
            .unwrap()
            .with("seen", Value::Int64(1_700_000_000_000))
            .unwrap()
            .with(
                "tags",
                Value::Map(vec![(Value::Int32(1), Value::String("a".into()))]),
            )
            .unwrap();
        Value::Struct(s)
    }

    fn record(key: Value, value: Value, offset: i64) -> Record {
        let schema = (!value.is_null()).then(person_schema);
        let mut record = Record::new("People", schema, value)
            .with_key(Some(Schema::new(Type::String).into()), key);
        record.partition = Some(0);
        record.kafka_offset = Some(offset);
        record
    }

    #[test]
    fn validation_reports_each_bad_key() {
        assert!(settings(&[]).urls == vec!["http://127.0.0.1:9200".to_string()]);
        let mut bad = props(&[
            (BATCH_SIZE, "0"),
            (KEY_IGNORE, "maybe"),
            (BEHAVIOR_ON_NULL_VALUES, "drop"),
            (WRITE_METHOD, "UPSERT"),
            (MAX_RETRIES, "x"),
        ]);
        bad.insert(CONNECTION_URL.into(), "https://es:9200, ftp://x".into());
        let errors = ElasticsearchSink.validate(&bad).unwrap_err();
        let keys: Vec<&str> = errors.errors.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                CONNECTION_URL,
                CONNECTION_URL,
                BATCH_SIZE,
                MAX_RETRIES,
                KEY_IGNORE,
                BEHAVIOR_ON_NULL_VALUES
            ],
            "{errors:?}"
        );
        assert_eq!(
            errors.errors[2].1,
            "Invalid value 0 for configuration batch.size: Value must be at least 1"
        );
        assert!(errors.errors[5].1.contains("IGNORE") || errors.errors[5].1.contains("ignore"));
        let missing = ElasticsearchSink.validate(&Props::new()).unwrap_err();
        assert_eq!(missing.errors[0].0, CONNECTION_URL);
        // Case-insensitive choices, URLs without a scheme.
        let s = settings(&[
            (WRITE_METHOD, "UPSERT"),
            (CONNECTION_URL, "es1:9200/,es2:9200"),
        ]);
        assert_eq!(s.write_method, WriteMethod::Upsert);
        assert_eq!(s.urls, ["http://es1:9200", "http://es2:9200"]);
        assert!(!s.report_errant);
        assert!(settings(&[(DLQ_TOPIC, "dlq")]).report_errant);
        assert!(settings(&[(ERRORS_LOG_ENABLE, "true")]).report_errant);
        assert_eq!(
            settings(&[(CONNECTION_USERNAME, "u"), (CONNECTION_PASSWORD, "p")]).credentials,
            Some(("u".into(), "p".into()))
        );
        assert_eq!(settings(&[(CONNECTION_USERNAME, "u")]).credentials, None);
    }

    #[test]
    fn index_names_follow_elasticsearch_rules() {
        for (topic, index) in [
            ("People", "people"),
            ("_private", "private"),
            ("-dash", "dash"),
            (".", "dot"),
            ("..", "dotdot"),
            ("a.b-c_d", "a.b-c_d"),
        ] {
            assert_eq!(index_name(topic), index, "{topic}");
        }
        assert_eq!(index_name(&"x".repeat(300)).len(), 255);
    }

    #[test]
    fn document_ids_come_from_the_key_or_the_coordinates() {
        let string: SchemaRef = Schema::new(Type::String).into();
        assert_eq!(
            key_id(Some(&string), &Value::String("k1".into())).unwrap(),
            "k1"
        );
        assert_eq!(key_id(None, &Value::Int64(42)).unwrap(), "42");
        assert_eq!(key_id(None, &Value::Int8(-1)).unwrap(), "-1");
        for (key, error) in [
            (
                Value::Null,
                "Key is used as document id and can not be null.",
            ),
            (
                Value::String(String::new()),
                "Key is used as document id and can not be empty.",
            ),
            (
                Value::Float64(1.5),
                "FLOAT64 is not supported as the document id.",
            ),
            (
                Value::Map(vec![]),
                "MAP is not supported as the document id.",
            ),
        ] {
            assert_eq!(key_id(None, &key).unwrap_err().0, error);
        }
        let p = Preprocessor {
            compact_map_entries: true,
        };
        let r = record(Value::String("k1".into()), person("ann", 30), 7);
        let keyed = action(&settings(&[]), &p, "people", 0, &r)
            .unwrap()
            .unwrap();
        assert_eq!(
            keyed.meta,
            r#"{"index":{"_index":"people","_id":"k1","version":7,"version_type":"external"}}"#
        );
        assert!(keyed.external_version);
        let ignored = action(&settings(&[(KEY_IGNORE, "true")]), &p, "people", 0, &r)
            .unwrap()
            .unwrap();
        assert_eq!(
            ignored.meta,
            r#"{"index":{"_index":"people","_id":"People+0+7"}}"#
        );
        let per_topic = action(
            &settings(&[(TOPIC_KEY_IGNORE, "People")]),
            &p,
            "people",
            0,
            &r,
        )
        .unwrap()
        .unwrap();
        assert_eq!(per_topic.meta, ignored.meta);
    }

    #[test]
    fn bulk_bodies_hold_documents_as_confluent_writes_them() {
        let p = Preprocessor {
            compact_map_entries: true,
        };
        let s = settings(&[(BEHAVIOR_ON_NULL_VALUES, "delete")]);
        let put = action(
            &s,
            &p,
            "people",
            0,
            &record(Value::String("k1".into()), person("ann", 30), 1),
        )
        .unwrap()
        .unwrap();
        let delete = action(
            &s,
            &p,
            "people",
            1,
            &record(Value::String("k1".into()), Value::Null, 2),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            bulk_body(&[put, delete]),
            concat!(
                r#"{"index":{"_index":"people","_id":"k1","version":1,"version_type":"external"}}"#,
                "\n",
                r#"{"name":"ann","age":30,"price":12.34,"born":3,"seen":1700000000000,"tags":[{"key":1,"value":"a"}]}"#,
                "\n",
                r#"{"delete":{"_index":"people","_id":"k1","version":2,"version_type":"external"}}"#,
                "\n"
            )
        );
        // A null value without a key is skipped; fail names the setting.
        assert_eq!(
            action(&s, &p, "people", 0, &record(Value::Null, Value::Null, 3)).unwrap(),
            None
        );
        let fail = action(
            &settings(&[]),
            &p,
            "people",
            0,
            &record(Value::String("k".into()), Value::Null, 3),
        );
        assert!(fail.unwrap_err().0.contains(BEHAVIOR_ON_NULL_VALUES));
        assert_eq!(
            action(
                &settings(&[(BEHAVIOR_ON_NULL_VALUES, "ignore")]),
                &p,
                "people",
                0,
                &record(Value::String("k".into()), Value::Null, 3)
            )
            .unwrap(),
            None
        );
        // Upsert: a partial update that creates the document if absent.
        let upsert = action(
            &settings(&[(WRITE_METHOD, "upsert")]),
            &p,
            "people",
            0,
            &record(Value::String("k1".into()), person("bo", 5), 4),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            upsert.meta,
            r#"{"update":{"_index":"people","_id":"k1","retry_on_conflict":5}}"#
        );
        assert!(upsert.source.unwrap().ends_with(r#""doc_as_upsert":true}"#));
        // schema.ignore: the value as JsonConverter writes it (decimal as base64, the map
        // as pairs).
        let raw = action(
            &settings(&[(SCHEMA_IGNORE, "true")]),
            &p,
            "people",
            0,
            &record(Value::String("k1".into()), person("cy", 1), 5),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            raw.source.unwrap(),
            r#"{"name":"cy","age":1,"price":"BNI=","born":3,"seen":1700000000000,"tags":[[1,"a"]]}"#
        );
    }

    #[test]
    fn mappings_come_from_the_value_schema() {
        let schema = Schema::new(Type::Struct)
            .field("b", Schema::new(Type::Boolean))
            .field("i8", Schema::new(Type::Int8))
            .field("i16", Schema::new(Type::Int16))
            .field(
                "i32",
                Schema::new(Type::Int32).with_default(Value::Int32(7)),
            )
            .field("i64", Schema::new(Type::Int64))
            .field("f32", Schema::new(Type::Float32))
            .field("f64", Schema::new(Type::Float64))
            .field(
                "s",
                Schema::new(Type::String).with_default(Value::String("x".into())),
            )
            .field("bytes", Schema::new(Type::Bytes))
            .field("dec", Schema::decimal(2))
            .field("day", Schema::date())
            .field("ts", Schema::timestamp())
            .field("list", Schema::array(Schema::new(Type::Int64)))
            .field(
                "m",
                Schema::map(Schema::new(Type::String), Schema::new(Type::Int32)),
            );
        assert_eq!(
            mapping(&schema).unwrap(),
            json!({"properties": {
                "b": {"type": "boolean"},
                "i8": {"type": "byte"},
                "i16": {"type": "short"},
                "i32": {"type": "integer", "null_value": 7},
                "i64": {"type": "long"},
                "f32": {"type": "float"},
                "f64": {"type": "double"},
                "s": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
                "bytes": {"type": "binary"},
                "dec": {"type": "double"},
                "day": {"type": "date"},
                "ts": {"type": "date"},
                "list": {"type": "long"},
                "m": {"properties": {
                    "key": {"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}},
                    "value": {"type": "integer"}
                }}
            }})
        );
    }

    #[test]
    fn bulk_items_are_sorted_into_written_malformed_conflict_and_failed() {
        let p = Preprocessor {
            compact_map_entries: true,
        };
        let keyed = action(
            &settings(&[]),
            &p,
            "people",
            0,
            &record(Value::String("k".into()), person("a", 1), 1),
        )
        .unwrap()
        .unwrap();
        let mut unversioned = keyed.clone();
        unversioned.external_version = false;
        let actions = vec![
            keyed.clone(),
            keyed.clone(),
            keyed,
            unversioned.clone(),
            unversioned.clone(),
            unversioned,
        ];
        let answer = json!({"errors": true, "items": [
            {"index": {"status": 201, "result": "created"}},
            {"index": {"status": 400, "error": {"type": "mapper_parsing_exception", "reason": "failed to parse field [age]", "caused_by": {"type": "number_format_exception", "reason": "For input string: \"x\""}}}},
            {"index": {"status": 409, "error": {"type": "version_conflict_engine_exception", "reason": "current version [5] is higher"}}},
            {"update": {"status": 409, "error": {"type": "version_conflict_engine_exception", "reason": "conflict"}}},
            {"index": {"status": 429, "error": {"type": "es_rejected_execution_exception", "reason": "queue full"}}},
            {"index": {"status": 403, "error": {"type": "cluster_block_exception", "reason": "read-only"}}},
        ]});
        assert_eq!(
            outcomes(&answer, &actions).unwrap(),
            vec![
                Outcome::Written,
                Outcome::Malformed("mapper_parsing_exception: failed to parse field [age] (caused by number_format_exception: For input string: \"x\")".into()),
                Outcome::Written,
                Outcome::Conflict("version_conflict_engine_exception: conflict".into()),
                Outcome::Transient("es_rejected_execution_exception: queue full".into()),
                Outcome::Failed("cluster_block_exception: read-only".into()),
            ]
        );
        assert!(outcomes(&json!({"items": []}), &actions).is_err());
        assert!(outcomes(&json!("nonsense"), &actions).is_err());
    }

    #[test]
    fn backoff_is_exponential_with_full_jitter_and_capped() {
        for attempt in 1..6 {
            let bound = 100u64 << attempt;
            assert_eq!(retry_backoff_ms(attempt, 100, bound - 1), bound - 1);
            assert_eq!(retry_backoff_ms(attempt, 100, bound), 0);
        }
        assert_eq!(retry_backoff_ms(3, 0, 12345), 0);
        assert!(retry_backoff_ms(40, 100, u64::MAX) < MAX_RETRY_BACKOFF_MS);
        assert!(retry_backoff_ms(20, u64::MAX / 2, u64::MAX) < MAX_RETRY_BACKOFF_MS);
    }
}
