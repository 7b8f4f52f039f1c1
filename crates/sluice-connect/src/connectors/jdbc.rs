//! Debezium's JDBC sink connector (`io.debezium.connector.jdbc.JdbcSinkConnector`) for a
//! PostgreSQL target: Debezium's config keys and defaults, its change-event envelope
//! (`before`/`after`/`op`) or a flat struct value, its primary key modes, insert, upsert
//! and update modes, deletes from tombstones and `op=d`, and `schema.evolution=basic`
//! (create missing tables, add missing columns). It is not a general JDBC layer: the only
//! dialect is PostgreSQL, spoken through `tokio-postgres` with typed, binary parameters.
//!
//! Each `put` is one transaction: rows are grouped, in order, into runs of the same table,
//! operation and columns (at most `batch.size` rows, and never the same key twice in an
//! upsert), and each run is one statement inside a savepoint. When Postgres refuses a run,
//! the run is rolled back to its savepoint and replayed row by row, each in its own
//! savepoint, so the rows Postgres refuses on their own merits are reported as errant
//! records (the worker's `errors.tolerance` and dead letter queue take them) and the rest
//! is committed. `put` commits before it returns, so `flush` has nothing left to do: the
//! worker commits consumer offsets only after `flush`, by then the rows are in Postgres.
//!
//! Cost per `put`: one round trip each for BEGIN, COMMIT, and per run a SAVEPOINT, a
//! prepare and an execute (RELEASE is sent with the next statement's round trip); values
//! are copied once, into the binary bind message. A refused run costs three round trips
//! per row on top.

use std::collections::{HashMap, HashSet};
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use tokio_postgres::types::{IsNull, ToSql, Type as PgType, to_sql_checked};
use tokio_postgres::{Client, NoTls};

use super::{
    BoxFuture, ConfigKeyDef, ConnectError, ConnectorPlugin, Errant, Kind, SinkError, SinkTask,
};
use crate::data::{self, Record, Schema, SchemaRef, Struct, Type, Value};
use crate::{ConfigError, Props};

/// The Debezium release whose behaviour this follows.
const VERSION: &str = "3.1.0.Final";

const CONNECTION_URL: &str = "connection.url";
const CONNECTION_USERNAME: &str = "connection.username";
const CONNECTION_PASSWORD: &str = "connection.password";
const INSERT_MODE: &str = "insert.mode";
const DELETE_ENABLED: &str = "delete.enabled";
const TRUNCATE_ENABLED: &str = "truncate.enabled";
const PRIMARY_KEY_MODE: &str = "primary.key.mode";
const PRIMARY_KEY_FIELDS: &str = "primary.key.fields";
const SCHEMA_EVOLUTION: &str = "schema.evolution";
const COLLECTION_NAME_FORMAT: &str = "collection.name.format";
/// The name `collection.name.format` had before Debezium 3.0; still read.
const TABLE_NAME_FORMAT: &str = "table.name.format";
const QUOTE_IDENTIFIERS: &str = "quote.identifiers";
const BATCH_SIZE: &str = "batch.size";
const USE_TIME_ZONE: &str = "use.time.zone";
const FLUSH_MAX_RETRIES: &str = "flush.max.retries";
const FLUSH_RETRY_DELAY_MS: &str = "flush.retry.delay.ms";
const FIELD_INCLUDE_LIST: &str = "field.include.list";
const FIELD_EXCLUDE_LIST: &str = "field.exclude.list";

/// Postgres takes at most this many bind parameters in one statement.
const PARAMETERS_MAX: usize = 65_535;
/// How long a connection attempt may take before it counts as a failure.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The columns `primary.key.mode=kafka` writes.
const KAFKA_TOPIC_COLUMN: &str = "__connect_topic";
const KAFKA_PARTITION_COLUMN: &str = "__connect_partition";
const KAFKA_OFFSET_COLUMN: &str = "__connect_offset";

// Debezium's temporal and data logical names.
const DBZ_DATE: &str = "io.debezium.time.Date";
const DBZ_TIME: &str = "io.debezium.time.Time";
const DBZ_MICRO_TIME: &str = "io.debezium.time.MicroTime";
const DBZ_NANO_TIME: &str = "io.debezium.time.NanoTime";
const DBZ_TIMESTAMP: &str = "io.debezium.time.Timestamp";
const DBZ_MICRO_TIMESTAMP: &str = "io.debezium.time.MicroTimestamp";
const DBZ_NANO_TIMESTAMP: &str = "io.debezium.time.NanoTimestamp";
const DBZ_ZONED_TIMESTAMP: &str = "io.debezium.time.ZonedTimestamp";
const DBZ_ZONED_TIME: &str = "io.debezium.time.ZonedTime";
const DBZ_JSON: &str = "io.debezium.data.Json";
const DBZ_UUID: &str = "io.debezium.data.Uuid";
const DBZ_VARIABLE_SCALE_DECIMAL: &str = "io.debezium.data.VariableScaleDecimal";

/// Days and microseconds between the Unix epoch and Postgres's (2000-01-01).
const POSTGRES_EPOCH_DAYS: i64 = 10_957;
const POSTGRES_EPOCH_MICROS: i64 = POSTGRES_EPOCH_DAYS * 86_400 * 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InsertMode {
    Insert,
    Upsert,
    Update,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PrimaryKeyMode {
    None,
    Kafka,
    RecordKey,
    RecordValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SchemaEvolution {
    None,
    Basic,
}

/// Where and as whom to connect, from a `jdbc:postgresql:` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ConnectionSettings {
    hosts: Vec<(String, u16)>,
    database: String,
    user: Option<String>,
    password: Option<String>,
    connect_timeout: Duration,
    application_name: Option<String>,
    current_schema: Option<String>,
}

/// Parses pgjdbc's URL forms: `jdbc:postgresql:db`, `jdbc:postgresql:/`,
/// `jdbc:postgresql://host[:port][,host[:port]...]/db?key=value&...`.
fn parse_connection_url(url: &str) -> Result<ConnectionSettings, String> {
    let rest = url.trim().strip_prefix("jdbc:postgresql:").ok_or_else(|| {
        format!("'{url}' is not a PostgreSQL JDBC URL (jdbc:postgresql://host:port/database)")
    })?;
    let (location, query) = match rest.split_once('?') {
        Some((l, q)) => (l, Some(q)),
        None => (rest, None),
    };
    let mut hosts = Vec::new();
    let database = if let Some(authority_and_path) = location.strip_prefix("//") {
        let (authority, path) = match authority_and_path.split_once('/') {
            Some((a, p)) => (a, p),
            None => (authority_and_path, ""),
        };
        for host in authority.split(',').filter(|h| !h.is_empty()) {
            hosts.push(parse_host(host)?);
        }
        percent_decode(path)?
    } else {
        percent_decode(location.trim_start_matches('/'))?
    };
    if hosts.is_empty() {
        hosts.push(("localhost".to_string(), 5432));
    }
    let mut settings = ConnectionSettings {
        hosts,
        database,
        user: None,
        password: None,
        connect_timeout: CONNECT_TIMEOUT,
        application_name: None,
        current_schema: None,
    };
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value)?;
        match key {
            "user" => settings.user = Some(value),
            "password" => settings.password = Some(value),
            "connectTimeout" | "loginTimeout" => {
                let seconds: u64 = value
                    .parse()
                    .map_err(|_| format!("{key}={value} is not a number of seconds"))?;
                if seconds > 0 {
                    settings.connect_timeout = Duration::from_secs(seconds);
                }
            }
            "ApplicationName" => settings.application_name = Some(value),
            "currentSchema" => settings.current_schema = Some(value),
            "sslmode" => match value.as_str() {
                "disable" | "allow" | "prefer" => {}
                other => {
                    return Err(format!(
                        "sslmode={other} is not supported: this worker connects without TLS"
                    ));
                }
            },
            "ssl" if value == "true" => {
                return Err("ssl=true is not supported: this worker connects without TLS".into());
            }
            // pgjdbc has many tuning parameters; none changes what is written.
            _ => {}
        }
    }
    Ok(settings)
}

fn parse_host(host: &str) -> Result<(String, u16), String> {
    let (name, port) = if let Some(bracketed) = host.strip_prefix('[') {
        let (name, after) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("unclosed '[' in host '{host}'"))?;
        (name, after.strip_prefix(':'))
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse()
            .map_err(|_| format!("'{p}' is not a port number"))?,
        None => 5432,
    };
    if name.is_empty() {
        return Err(format!("no host name in '{host}'"));
    }
    Ok((name.to_string(), port))
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad percent-encoding in '{text}'"))?;
                out.push(hex);
                i += 3;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{text}' does not decode to UTF-8"))
}

/// The connector's config, parsed once (`JdbcSinkConnectorConfig`).
#[derive(Debug, Clone)]
struct Settings {
    connection: ConnectionSettings,
    insert_mode: InsertMode,
    delete_enabled: bool,
    truncate_enabled: bool,
    primary_key_mode: PrimaryKeyMode,
    primary_key_fields: Vec<String>,
    schema_evolution: SchemaEvolution,
    collection_name_format: String,
    quote_identifiers: bool,
    batch_size: usize,
    time_zone: String,
    flush_max_retries: u32,
    flush_retry_delay: Duration,
    field_include_list: Vec<String>,
    field_exclude_list: Vec<String>,
}

/// Debezium's wording for a value its `Field` validation refuses.
fn invalid(key: &str, problem: &str) -> ConfigError {
    ConfigError::new(key, format!("The '{key}' value is invalid: {problem}"))
}

fn list(config: &Props, key: &str) -> Vec<String> {
    config
        .get(key)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Settings {
    fn parse(config: &Props) -> Result<Settings, ConfigError> {
        let mut errors = ConfigError::default();
        let get = |key: &str| config.get(key).map(|v| v.trim()).filter(|v| !v.is_empty());
        let mut choice = |key: &str, options: &[&str], default: &str| -> String {
            let value = get(key).unwrap_or(default).to_ascii_lowercase();
            if !options.contains(&value.as_str()) {
                errors.push(invalid(
                    key,
                    &format!("Value must be one of {}", options.join(", ")),
                ));
                return default.to_string();
            }
            value
        };
        let insert_mode =
            match choice(INSERT_MODE, &["insert", "upsert", "update"], "insert").as_str() {
                "upsert" => InsertMode::Upsert,
                "update" => InsertMode::Update,
                _ => InsertMode::Insert,
            };
        let primary_key_mode = match choice(
            PRIMARY_KEY_MODE,
            &["none", "kafka", "record_key", "record_value"],
            "none",
        )
        .as_str()
        {
            "kafka" => PrimaryKeyMode::Kafka,
            "record_key" => PrimaryKeyMode::RecordKey,
            "record_value" => PrimaryKeyMode::RecordValue,
            _ => PrimaryKeyMode::None,
        };
        let schema_evolution = match choice(SCHEMA_EVOLUTION, &["none", "basic"], "none").as_str() {
            "basic" => SchemaEvolution::Basic,
            _ => SchemaEvolution::None,
        };
        let mut boolean = |key: &str| -> bool {
            match get(key).map(str::to_ascii_lowercase).as_deref() {
                None | Some("false") => false,
                Some("true") => true,
                Some(_) => {
                    errors.push(ConfigError::invalid(
                        key,
                        config.get(key).map(String::as_str).unwrap_or(""),
                        "Expected value to be either true or false",
                    ));
                    false
                }
            }
        };
        let delete_enabled = boolean(DELETE_ENABLED);
        let truncate_enabled = boolean(TRUNCATE_ENABLED);
        let quote_identifiers = boolean(QUOTE_IDENTIFIERS);
        let mut number = |key: &str, default: i64, min: i64, java_type: &str| -> i64 {
            match get(key) {
                None => default,
                Some(v) => match v.parse::<i64>() {
                    Ok(n) if n >= min => n,
                    Ok(_) => {
                        errors.push(ConfigError::invalid(
                            key,
                            v,
                            &format!("Value must be at least {min}"),
                        ));
                        default
                    }
                    Err(_) => {
                        errors.push(ConfigError::invalid(
                            key,
                            v,
                            &format!("Not a number of type {java_type}"),
                        ));
                        default
                    }
                },
            }
        };
        let batch_size = number(BATCH_SIZE, 500, 1, "INT");
        let flush_max_retries = number(FLUSH_MAX_RETRIES, 5, 0, "INT");
        let flush_retry_delay_ms = number(FLUSH_RETRY_DELAY_MS, 1000, 0, "LONG");

        let mut connection = None;
        match get(CONNECTION_URL) {
            None => errors.push(invalid(CONNECTION_URL, "A value is required")),
            Some(url) => match parse_connection_url(url) {
                Ok(parsed) => connection = Some(parsed),
                Err(problem) => errors.push(invalid(CONNECTION_URL, &problem)),
            },
        }
        if let Some(connection) = connection.as_mut() {
            // As pgjdbc does, the URL's own parameters win over the separate properties.
            if connection.user.is_none() {
                connection.user = get(CONNECTION_USERNAME).map(str::to_string);
            }
            if connection.password.is_none() {
                connection.password = config.get(CONNECTION_PASSWORD).cloned();
            }
            if connection.user.is_none() {
                errors.push(invalid(CONNECTION_USERNAME, "A value is required"));
            }
        }
        if insert_mode == InsertMode::Upsert && primary_key_mode == PrimaryKeyMode::None {
            let message = if get(PRIMARY_KEY_FIELDS).is_none() {
                format!(
                    "When using UPSERT, please define '{PRIMARY_KEY_MODE}' and '{PRIMARY_KEY_FIELDS}'."
                )
            } else {
                format!("When using UPSERT, please define '{PRIMARY_KEY_MODE}'.")
            };
            errors.push(invalid(INSERT_MODE, &message));
        }
        if insert_mode == InsertMode::Update && primary_key_mode == PrimaryKeyMode::None {
            errors.push(invalid(
                INSERT_MODE,
                &format!("When using UPDATE, please define '{PRIMARY_KEY_MODE}': rows are found by their primary key."),
            ));
        }
        if delete_enabled && primary_key_mode != PrimaryKeyMode::RecordKey {
            errors.push(invalid(
                DELETE_ENABLED,
                &format!("When '{DELETE_ENABLED}' is set to 'true', the '{PRIMARY_KEY_MODE}' option must be set to 'record_key'."),
            ));
        }
        let field_include_list = list(config, FIELD_INCLUDE_LIST);
        let field_exclude_list = list(config, FIELD_EXCLUDE_LIST);
        if !field_include_list.is_empty() && !field_exclude_list.is_empty() {
            errors.push(invalid(
                FIELD_EXCLUDE_LIST,
                &format!("Cannot define both {FIELD_EXCLUDE_LIST} and {FIELD_INCLUDE_LIST}. Please specify only one."),
            ));
        }
        let collection_name_format = get(COLLECTION_NAME_FORMAT)
            .or_else(|| get(TABLE_NAME_FORMAT))
            .unwrap_or("${topic}")
            .to_string();
        let (Some(connection), true) = (connection, errors.is_empty()) else {
            return Err(errors);
        };
        Ok(Settings {
            connection,
            insert_mode,
            delete_enabled,
            truncate_enabled,
            primary_key_mode,
            primary_key_fields: list(config, PRIMARY_KEY_FIELDS),
            schema_evolution,
            collection_name_format,
            quote_identifiers,
            batch_size: batch_size as usize,
            time_zone: get(USE_TIME_ZONE).unwrap_or("UTC").to_string(),
            flush_max_retries: flush_max_retries.min(i64::from(u32::MAX)) as u32,
            flush_retry_delay: Duration::from_millis(flush_retry_delay_ms as u64),
            field_include_list,
            field_exclude_list,
        })
    }

    /// Whether a value field is written (`field.include.list` / `field.exclude.list`:
    /// `field` or `topic:field`, matched exactly).
    fn includes_field(&self, topic: &str, field: &str) -> bool {
        let matches = |entry: &String| {
            entry == field
                || entry
                    .split_once(':')
                    .is_some_and(|(t, f)| t == topic && f == field)
        };
        if !self.field_include_list.is_empty() {
            return self.field_include_list.iter().any(matches);
        }
        !self.field_exclude_list.iter().any(matches)
    }

    fn quote(&self, name: &str) -> Identifier {
        Identifier::new(name, self.quote_identifiers)
    }
}

/// PostgreSQL's reserved key words (SQL Key Words appendix, "reserved" and "reserved
/// (can be function or type)"): unquoted, these are not identifiers.
const RESERVED: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "binary",
    "both",
    "case",
    "cast",
    "check",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "false",
    "fetch",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "group",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "intersect",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "natural",
    "not",
    "notnull",
    "null",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "outer",
    "overlaps",
    "placing",
    "primary",
    "references",
    "returning",
    "right",
    "select",
    "session_user",
    "similar",
    "some",
    "symmetric",
    "system_user",
    "table",
    "tablesample",
    "then",
    "to",
    "trailing",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
];

/// A table or column name as it appears in SQL, and as Postgres's catalog stores it
/// (an unquoted name is folded to lower case).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Identifier {
    sql: String,
    catalog: String,
}

impl Identifier {
    fn new(name: &str, always_quote: bool) -> Identifier {
        if always_quote || needs_quotes(name) {
            Identifier {
                sql: format!("\"{}\"", name.replace('"', "\"\"")),
                catalog: name.to_string(),
            }
        } else {
            Identifier {
                sql: name.to_string(),
                catalog: name.to_ascii_lowercase(),
            }
        }
    }
}

fn needs_quotes(name: &str) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return true;
    };
    !(first.is_ascii_alphabetic() || first == '_')
        || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        || RESERVED.contains(&name.to_ascii_lowercase().as_str())
}

/// A table: `schema.table` when `collection.name.format` resolves to a dotted name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct TableName {
    schema: Option<Identifier>,
    table: Identifier,
}

impl TableName {
    fn sql(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{}.{}", schema.sql, self.table.sql),
            None => self.table.sql.clone(),
        }
    }
}

/// A column a record writes, with the Connect schema its type comes from.
#[derive(Debug, Clone)]
struct ColumnDef {
    name: Identifier,
    /// The field's name as the record has it (for messages).
    field: String,
    schema: SchemaRef,
    key: bool,
}

#[derive(Debug, Clone)]
enum Action {
    /// Insert, upsert or update (per `insert.mode`) `values`, one per column.
    Write {
        columns: Arc<Vec<ColumnDef>>,
        values: Vec<Value>,
    },
    /// Delete the row with these key values.
    Delete {
        columns: Arc<Vec<ColumnDef>>,
        values: Vec<Value>,
    },
    Truncate,
}

/// What one record asks of the database.
#[derive(Debug, Clone)]
struct Change {
    /// The record's index in the batch `put` was given.
    index: usize,
    table: TableName,
    action: Action,
}

/// Why a record cannot be turned into a change.
#[derive(Debug)]
enum RecordProblem {
    /// The record alone is at fault: report it, go on with the others.
    Errant(String),
    /// Nothing in this batch can be written as configured.
    Fatal(String),
}

fn record_place(record: &Record) -> String {
    format!(
        "topic '{}', partition {}, offset {}",
        record.topic,
        record.partition.map_or("?".to_string(), |p| p.to_string()),
        record
            .kafka_offset
            .map_or("?".to_string(), |o| o.to_string())
    )
}

/// A Debezium change event: a struct value with `op` and `after` (and `before`).
fn is_envelope(schema: &Schema) -> bool {
    schema.ty == Type::Struct
        && (schema
            .name
            .as_deref()
            .is_some_and(|n| n.ends_with(".Envelope"))
            || (schema.get_field("op").is_some()
                && schema.get_field("after").is_some()
                && schema.get_field("before").is_some()))
}

fn text_of(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

impl Settings {
    fn table_name(&self, record: &Record, source: Option<&Struct>) -> TableName {
        let mut name = self
            .collection_name_format
            .replace("${topic}", &record.topic.replace('.', "_"));
        for part in ["db", "schema", "table"] {
            let placeholder = format!("${{source.{part}}}");
            if name.contains(&placeholder) {
                let value = text_of(source.and_then(|s| s.get(part))).unwrap_or_default();
                name = name.replace(&placeholder, &value);
            }
        }
        match name.rsplit_once('.') {
            Some((schema, table)) if !schema.is_empty() && !table.is_empty() => TableName {
                schema: Some(self.quote(schema)),
                table: self.quote(table),
            },
            _ => TableName {
                schema: None,
                table: self.quote(&name),
            },
        }
    }

    /// The key columns and values the record's key gives (`primary.key.mode=record_key`).
    fn record_key_columns(
        &self,
        record: &Record,
    ) -> Result<Vec<(ColumnDef, Value)>, RecordProblem> {
        let Some(key_schema) = record.key_schema.as_ref() else {
            return Err(RecordProblem::Errant(format!(
                "primary.key.mode=record_key needs a record key with a schema; the record at {} has none",
                record_place(record)
            )));
        };
        if record.key.is_null() {
            return Err(RecordProblem::Errant(format!(
                "primary.key.mode=record_key needs a record key; the record at {} has a null key",
                record_place(record)
            )));
        }
        if key_schema.ty == Type::Struct {
            let Value::Struct(key) = &record.key else {
                return Err(RecordProblem::Errant(format!(
                    "the key of the record at {} does not match its struct schema",
                    record_place(record)
                )));
            };
            let names: Vec<&str> = if self.primary_key_fields.is_empty() {
                key_schema.fields.iter().map(|f| f.name.as_str()).collect()
            } else {
                self.primary_key_fields.iter().map(String::as_str).collect()
            };
            let mut columns = Vec::with_capacity(names.len());
            for name in names {
                let Some(field) = key_schema.get_field(name) else {
                    return Err(RecordProblem::Errant(format!(
                        "primary key field '{name}' is not in the key of the record at {}",
                        record_place(record)
                    )));
                };
                let value = key.get(name).cloned().unwrap_or(Value::Null);
                columns.push((
                    ColumnDef {
                        name: self.quote(name),
                        field: name.to_string(),
                        schema: field.schema.clone(),
                        key: true,
                    },
                    value,
                ));
            }
            if columns.is_empty() {
                return Err(RecordProblem::Errant(format!(
                    "the key of the record at {} has no fields to use as a primary key",
                    record_place(record)
                )));
            }
            return Ok(columns);
        }
        // A primitive key: its column is named by primary.key.fields.
        match self.primary_key_fields.as_slice() {
            [name] => Ok(vec![(
                ColumnDef {
                    name: self.quote(name),
                    field: name.clone(),
                    schema: key_schema.clone(),
                    key: true,
                },
                record.key.clone(),
            )]),
            _ => Err(RecordProblem::Errant(format!(
                "the key of the record at {} is a primitive ({}): primary.key.fields must name exactly one column for it",
                record_place(record),
                key_schema.ty.java_name()
            ))),
        }
    }

    /// Turns a record into what it asks of the database (`None`: nothing).
    fn change(&self, index: usize, record: &Record) -> Result<Option<Change>, RecordProblem> {
        if record.value.is_null() {
            // A tombstone.
            if !self.delete_enabled {
                return Ok(None);
            }
            return self.delete(index, record, None).map(Some);
        }
        let Some(value_schema) = record.value_schema.as_ref() else {
            return Err(RecordProblem::Fatal(format!(
                "The JDBC sink connector requires records with schemas, but the record at {} has none; \
                 use a converter that carries schemas (e.g. JsonConverter with value.converter.schemas.enable=true, or Avro)",
                record_place(record)
            )));
        };
        let Value::Struct(value) = &record.value else {
            return Err(RecordProblem::Errant(format!(
                "The JDBC sink connector writes struct values; the record at {} has a {} value",
                record_place(record),
                value_schema.ty.java_name()
            )));
        };
        let payload = if is_envelope(value_schema) {
            let source = value.get("source").and_then(Value::as_struct);
            match value.get("op").and_then(Value::as_str) {
                Some("c" | "r" | "u") => match value.get("after") {
                    Some(Value::Struct(after)) => after.clone(),
                    _ => {
                        return Err(RecordProblem::Errant(format!(
                            "the change event at {} has no 'after' state",
                            record_place(record)
                        )));
                    }
                },
                Some("d") if self.delete_enabled => {
                    return self.delete(index, record, source).map(Some);
                }
                Some("t") if self.truncate_enabled => {
                    return Ok(Some(Change {
                        index,
                        table: self.table_name(record, source),
                        action: Action::Truncate,
                    }));
                }
                // Deletes and truncates not enabled, schema messages ('m'): skipped.
                _ => return Ok(None),
            }
        } else {
            value.clone()
        };
        let source = if is_envelope(value_schema) {
            value.get("source").and_then(Value::as_struct)
        } else {
            None
        };
        let table = self.table_name(record, source);
        let mut row: Vec<(ColumnDef, Value)> = match self.primary_key_mode {
            PrimaryKeyMode::None | PrimaryKeyMode::RecordValue => Vec::new(),
            PrimaryKeyMode::RecordKey => self.record_key_columns(record)?,
            PrimaryKeyMode::Kafka => {
                let (Some(partition), Some(offset)) = (record.partition, record.kafka_offset)
                else {
                    return Err(RecordProblem::Errant(format!(
                        "primary.key.mode=kafka needs the record's partition and offset; the record at {} lacks them",
                        record_place(record)
                    )));
                };
                let column = |name: &str, ty: Type| ColumnDef {
                    name: self.quote(name),
                    field: name.to_string(),
                    schema: Arc::new(Schema::new(ty)),
                    key: true,
                };
                vec![
                    (
                        column(KAFKA_TOPIC_COLUMN, Type::String),
                        Value::String(record.topic.clone()),
                    ),
                    (
                        column(KAFKA_PARTITION_COLUMN, Type::Int32),
                        Value::Int32(partition),
                    ),
                    (
                        column(KAFKA_OFFSET_COLUMN, Type::Int64),
                        Value::Int64(offset),
                    ),
                ]
            }
        };
        let value_keys: Vec<&str> = if self.primary_key_mode == PrimaryKeyMode::RecordValue {
            if self.primary_key_fields.is_empty() {
                payload
                    .schema
                    .fields
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect()
            } else {
                for name in &self.primary_key_fields {
                    if payload.schema.get_field(name).is_none() {
                        return Err(RecordProblem::Errant(format!(
                            "primary key field '{name}' is not in the value of the record at {}",
                            record_place(record)
                        )));
                    }
                }
                self.primary_key_fields.iter().map(String::as_str).collect()
            }
        } else {
            Vec::new()
        };
        for field in &payload.schema.fields {
            let key = value_keys.contains(&field.name.as_str());
            if !key && !self.includes_field(&record.topic, &field.name) {
                continue;
            }
            let name = self.quote(&field.name);
            if row.iter().any(|(c, _)| c.name == name) {
                continue;
            }
            let value = payload.get(&field.name).cloned().unwrap_or(Value::Null);
            row.push((
                ColumnDef {
                    name,
                    field: field.name.clone(),
                    schema: field.schema.clone(),
                    key,
                },
                value,
            ));
        }
        let (columns, values): (Vec<ColumnDef>, Vec<Value>) = row.into_iter().unzip();
        Ok(Some(Change {
            index,
            table,
            action: Action::Write {
                columns: Arc::new(columns),
                values,
            },
        }))
    }

    fn delete(
        &self,
        index: usize,
        record: &Record,
        source: Option<&Struct>,
    ) -> Result<Change, RecordProblem> {
        let (columns, values): (Vec<ColumnDef>, Vec<Value>) =
            self.record_key_columns(record)?.into_iter().unzip();
        Ok(Change {
            index,
            table: self.table_name(record, source),
            action: Action::Delete {
                columns: Arc::new(columns),
                values,
            },
        })
    }
}

/// The Postgres column type for a Connect schema (Debezium's PostgreSQL dialect).
fn column_type(schema: &Schema) -> Result<String, String> {
    if let Some(name) = schema.name.as_deref() {
        let logical = match name {
            data::DECIMAL => Some(
                match (
                    schema.parameters.get("connect.decimal.precision"),
                    schema.decimal_scale(),
                ) {
                    (Some(precision), Some(scale)) if precision.parse::<u32>().is_ok() => {
                        format!("numeric({precision}, {scale})")
                    }
                    _ => "numeric".to_string(),
                },
            ),
            DBZ_VARIABLE_SCALE_DECIMAL => Some("numeric".to_string()),
            data::DATE | DBZ_DATE => Some("date".to_string()),
            data::TIME | DBZ_TIME | DBZ_MICRO_TIME | DBZ_NANO_TIME => Some("time".to_string()),
            data::TIMESTAMP | DBZ_TIMESTAMP | DBZ_MICRO_TIMESTAMP | DBZ_NANO_TIMESTAMP => {
                Some("timestamp".to_string())
            }
            DBZ_ZONED_TIMESTAMP => Some("timestamp with time zone".to_string()),
            DBZ_ZONED_TIME => Some("time with time zone".to_string()),
            DBZ_JSON => Some("json".to_string()),
            DBZ_UUID => Some("uuid".to_string()),
            _ => None,
        };
        if let Some(logical) = logical {
            return Ok(logical);
        }
    }
    Ok(match schema.ty {
        Type::Int8 | Type::Int16 => "smallint",
        Type::Int32 => "integer",
        Type::Int64 => "bigint",
        Type::Float32 => "real",
        Type::Float64 => "double precision",
        Type::Boolean => "boolean",
        Type::String => "text",
        Type::Bytes => "bytea",
        Type::Array | Type::Map | Type::Struct => {
            return Err(format!(
                "no PostgreSQL column type for a Connect {} schema{}",
                schema.ty.java_name(),
                schema
                    .name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ));
        }
    }
    .to_string())
}

/// The bind placeholder for a column: a text cast where Debezium sends text that
/// Postgres must parse (zoned times, JSON, UUIDs).
fn placeholder(column: &ColumnDef, number: usize) -> String {
    match column.schema.name.as_deref() {
        Some(DBZ_ZONED_TIMESTAMP) => format!("${number}::text::timestamptz"),
        Some(DBZ_ZONED_TIME) => format!("${number}::text::timetz"),
        Some(DBZ_JSON) => format!("${number}::text::json"),
        Some(DBZ_UUID) => format!("${number}::text::uuid"),
        _ => format!("${number}"),
    }
}

fn create_table_sql(table: &TableName, columns: &[ColumnDef]) -> Result<String, String> {
    let mut parts = Vec::with_capacity(columns.len() + 1);
    // Key columns first, as Debezium lays them out.
    for column in columns
        .iter()
        .filter(|c| c.key)
        .chain(columns.iter().filter(|c| !c.key))
    {
        let nullable = !column.key && (column.schema.optional || column.schema.default.is_some());
        parts.push(format!(
            "{} {} {}",
            column.name.sql,
            column_type(&column.schema).map_err(|e| format!("field '{}': {e}", column.field))?,
            if nullable { "NULL" } else { "NOT NULL" }
        ));
    }
    let keys: Vec<&str> = columns
        .iter()
        .filter(|c| c.key)
        .map(|c| c.name.sql.as_str())
        .collect();
    if !keys.is_empty() {
        parts.push(format!("PRIMARY KEY ({})", keys.join(", ")));
    }
    Ok(format!(
        "CREATE TABLE IF NOT EXISTS {} ({})",
        table.sql(),
        parts.join(", ")
    ))
}

/// `ALTER TABLE ... ADD COLUMN` for a field a later record has. A new column is always
/// nullable (rows already there have no value); a required field without a default
/// cannot be added, as in Debezium.
fn add_column_sql(table: &TableName, column: &ColumnDef) -> Result<String, String> {
    if !column.schema.optional && column.schema.default.is_none() {
        return Err(format!(
            "Cannot ALTER table '{}' because field '{}' is not optional but has no default value",
            table.table.catalog, column.field
        ));
    }
    Ok(format!(
        "ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {} NULL",
        table.sql(),
        column.name.sql,
        column_type(&column.schema).map_err(|e| format!("field '{}': {e}", column.field))?
    ))
}

/// What a run of rows is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunKind {
    Write,
    Delete,
    Truncate,
}

/// Consecutive changes to one table, of one kind, with the same columns: one statement.
struct Run {
    table: TableName,
    kind: RunKind,
    columns: Arc<Vec<ColumnDef>>,
    /// (record index, values)
    rows: Vec<(usize, Vec<Value>)>,
}

fn same_columns(a: &[ColumnDef], b: &[ColumnDef]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name == y.name && x.key == y.key && column_type(&x.schema) == column_type(&y.schema)
        })
}

/// Splits changes into runs, in order; a run ends at `batch_size` rows, at the bind
/// parameter limit, and (upsert) before a key it already has, which `ON CONFLICT DO
/// UPDATE` cannot touch twice in one statement.
fn runs(changes: Vec<Change>, batch_size: usize, insert_mode: InsertMode) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut keys_in_run: HashSet<String> = HashSet::new();
    for change in changes {
        let (kind, columns, values) = match change.action {
            Action::Write { columns, values } => (RunKind::Write, columns, values),
            Action::Delete { columns, values } => (RunKind::Delete, columns, values),
            Action::Truncate => (RunKind::Truncate, Arc::new(Vec::new()), Vec::new()),
        };
        let key: String = columns
            .iter()
            .zip(&values)
            .filter(|(c, _)| c.key)
            .map(|(_, v)| format!("{v:?}\u{0}"))
            .collect();
        let rows_max = (PARAMETERS_MAX / columns.len().max(1)).clamp(1, batch_size);
        let joins = runs.last().is_some_and(|run| {
            run.kind == kind
                && kind != RunKind::Truncate
                && run.table == change.table
                && run.rows.len() < rows_max
                && same_columns(&run.columns, &columns)
                && !(kind == RunKind::Write
                    && insert_mode == InsertMode::Upsert
                    && keys_in_run.contains(&key))
        });
        if !joins {
            keys_in_run.clear();
            runs.push(Run {
                table: change.table,
                kind,
                columns,
                rows: Vec::new(),
            });
        }
        keys_in_run.insert(key);
        if let Some(run) = runs.last_mut() {
            run.rows.push((change.index, values));
        }
    }
    runs
}

/// The statement for `rows` rows of a run (`None`: nothing to write, e.g. an update with
/// only key columns).
fn run_sql(run: &Run, rows: usize, insert_mode: InsertMode) -> Option<String> {
    let table = run.table.sql();
    let columns = &run.columns;
    match run.kind {
        RunKind::Truncate => Some(format!("TRUNCATE TABLE {table}")),
        RunKind::Delete => {
            let names: Vec<&str> = columns.iter().map(|c| c.name.sql.as_str()).collect();
            let tuples: Vec<String> = (0..rows)
                .map(|row| {
                    let marks: Vec<String> = columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| placeholder(c, row * columns.len() + i + 1))
                        .collect();
                    format!("({})", marks.join(", "))
                })
                .collect();
            Some(format!(
                "DELETE FROM {table} WHERE ({}) IN ({})",
                names.join(", "),
                tuples.join(", ")
            ))
        }
        RunKind::Write if insert_mode == InsertMode::Update => {
            // One row per statement: the caller runs it once per row.
            let sets: Vec<String> = columns
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.key)
                .map(|(i, c)| format!("{} = {}", c.name.sql, placeholder(c, i + 1)))
                .collect();
            if sets.is_empty() {
                return None;
            }
            let wheres: Vec<String> = columns
                .iter()
                .enumerate()
                .filter(|(_, c)| c.key)
                .map(|(i, c)| format!("{} = {}", c.name.sql, placeholder(c, i + 1)))
                .collect();
            Some(format!(
                "UPDATE {table} SET {} WHERE {}",
                sets.join(", "),
                wheres.join(" AND ")
            ))
        }
        RunKind::Write => {
            let names: Vec<&str> = columns.iter().map(|c| c.name.sql.as_str()).collect();
            let tuples: Vec<String> = (0..rows)
                .map(|row| {
                    let marks: Vec<String> = columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| placeholder(c, row * columns.len() + i + 1))
                        .collect();
                    format!("({})", marks.join(", "))
                })
                .collect();
            let mut sql = format!(
                "INSERT INTO {table} ({}) VALUES {}",
                names.join(", "),
                tuples.join(", ")
            );
            if insert_mode == InsertMode::Upsert {
                let keys: Vec<&str> = columns
                    .iter()
                    .filter(|c| c.key)
                    .map(|c| c.name.sql.as_str())
                    .collect();
                let updates: Vec<String> = columns
                    .iter()
                    .filter(|c| !c.key)
                    .map(|c| format!("{0} = EXCLUDED.{0}", c.name.sql))
                    .collect();
                if !keys.is_empty() {
                    if updates.is_empty() {
                        sql.push_str(&format!(" ON CONFLICT ({}) DO NOTHING", keys.join(", ")));
                    } else {
                        sql.push_str(&format!(
                            " ON CONFLICT ({}) DO UPDATE SET {}",
                            keys.join(", "),
                            updates.join(", ")
                        ));
                    }
                }
            }
            Some(sql)
        }
    }
}

/// A Connect value bound as a parameter, encoded for the type Postgres asks for.
#[derive(Debug)]
struct Param<'a> {
    value: &'a Value,
    schema: &'a Schema,
}

type EncodeError = Box<dyn StdError + Sync + Send>;

fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Int8(v) => Some(i64::from(*v)),
        Value::Int16(v) => Some(i64::from(*v)),
        Value::Int32(v) => Some(i64::from(*v)),
        Value::Int64(v) => Some(*v),
        _ => None,
    }
}

fn float(value: &Value) -> Option<f64> {
    match value {
        Value::Float32(v) => Some(f64::from(*v)),
        Value::Float64(v) => Some(*v),
        other => integer(other).map(|v| v as f64),
    }
}

/// An unscaled big-endian two's complement integer (Connect's Decimal) as decimal text
/// with `scale` digits after the point.
fn decimal_text(unscaled: &[u8], scale: i32) -> String {
    let negative = unscaled.first().is_some_and(|b| b & 0x80 != 0);
    let mut magnitude: Vec<u8> = unscaled.to_vec();
    if negative {
        // Two's complement: invert and add one.
        for b in magnitude.iter_mut() {
            *b = !*b;
        }
        for b in magnitude.iter_mut().rev() {
            let (sum, carry) = b.overflowing_add(1);
            *b = sum;
            if !carry {
                break;
            }
        }
    }
    let mut digits = Vec::new();
    while magnitude.iter().any(|b| *b != 0) {
        let mut remainder: u32 = 0;
        for b in magnitude.iter_mut() {
            let current = (remainder << 8) | u32::from(*b);
            *b = (current / 10) as u8;
            remainder = current % 10;
        }
        digits.push(b'0' + remainder as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    let mut text = String::from_utf8(digits).unwrap_or_default();
    if scale > 0 {
        let scale = scale as usize;
        if text.len() <= scale {
            text = format!("{}{text}", "0".repeat(scale - text.len() + 1));
        }
        text.insert(text.len() - scale, '.');
    } else if scale < 0 {
        text.push_str(&"0".repeat(scale.unsigned_abs() as usize));
    }
    if negative { format!("-{text}") } else { text }
}

/// Postgres's binary `numeric` from decimal text (`-12.345`): base-10000 digits around
/// the decimal point.
fn encode_numeric(text: &str, out: &mut BytesMut) -> Result<(), EncodeError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("nan") {
        out.put_i16(0);
        out.put_i16(0);
        out.put_u16(0xC000);
        out.put_u16(0);
        return Ok(());
    }
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (int_part, frac_part) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if int_part.is_empty() && frac_part.is_empty()
        || !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
    {
        return Err(format!("'{text}' is not a decimal number").into());
    }
    let int_part = int_part.trim_start_matches('0');
    let dscale = u16::try_from(frac_part.len()).map_err(|_| "too many decimal digits")?;
    let int_padded = format!("{}{int_part}", "0".repeat((4 - int_part.len() % 4) % 4));
    let frac_padded = format!("{frac_part}{}", "0".repeat((4 - frac_part.len() % 4) % 4));
    let group = |s: &str| -> Vec<i16> {
        s.as_bytes()
            .chunks(4)
            .map(|c| c.iter().fold(0i16, |acc, d| acc * 10 + i16::from(d - b'0')))
            .collect()
    };
    let int_groups = group(&int_padded);
    let mut weight = int_groups.len() as i32 - 1;
    let mut groups: Vec<i16> = int_groups;
    groups.extend(group(&frac_padded));
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i32;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    out.put_i16(i16::try_from(groups.len()).map_err(|_| "numeric too long")?);
    out.put_i16(i16::try_from(weight).map_err(|_| "numeric out of range")?);
    out.put_u16(if negative && !groups.is_empty() {
        0x4000
    } else {
        0
    });
    out.put_u16(dscale);
    for g in groups {
        out.put_i16(g);
    }
    Ok(())
}

impl Param<'_> {
    fn name(&self) -> Option<&str> {
        self.schema.name.as_deref()
    }

    fn decimal(&self) -> Result<String, EncodeError> {
        match (self.value, self.name()) {
            (Value::Bytes(unscaled), Some(data::DECIMAL)) => {
                let scale = self
                    .schema
                    .decimal_scale()
                    .ok_or("Decimal schema without a scale")?;
                Ok(decimal_text(unscaled, scale))
            }
            (Value::Struct(s), Some(DBZ_VARIABLE_SCALE_DECIMAL)) => {
                match (s.get("scale").and_then(integer), s.get("value")) {
                    (Some(scale), Some(Value::Bytes(unscaled))) => {
                        Ok(decimal_text(unscaled, i32::try_from(scale)?))
                    }
                    _ => Err("VariableScaleDecimal without scale and value".into()),
                }
            }
            (Value::String(s), _) => Ok(s.clone()),
            (Value::Float32(_) | Value::Float64(_), _) => {
                let v = float(self.value).unwrap_or(f64::NAN);
                if v.is_infinite() {
                    return Err("infinity cannot be stored in a numeric column".into());
                }
                Ok(if v.is_nan() {
                    "NaN".into()
                } else {
                    format!("{v}")
                })
            }
            (other, _) => integer(other)
                .map(|v| v.to_string())
                .ok_or_else(|| self.mismatch("numeric")),
        }
    }

    fn micros_of_day(&self) -> Result<i64, EncodeError> {
        let v = integer(self.value).ok_or_else(|| self.mismatch("time"))?;
        Ok(match self.name() {
            Some(DBZ_MICRO_TIME) => v,
            Some(DBZ_NANO_TIME) => v / 1000,
            _ => v * 1000,
        })
    }

    fn epoch_micros(&self) -> Result<i64, EncodeError> {
        let v = integer(self.value).ok_or_else(|| self.mismatch("timestamp"))?;
        let micros = match self.name() {
            Some(DBZ_MICRO_TIMESTAMP) => Some(v),
            Some(DBZ_NANO_TIMESTAMP) => Some(v / 1000),
            _ => v.checked_mul(1000),
        };
        micros
            .and_then(|m| m.checked_sub(POSTGRES_EPOCH_MICROS))
            .ok_or_else(|| "timestamp out of range".into())
    }

    fn mismatch(&self, target: &str) -> EncodeError {
        format!(
            "a {} value{} cannot be written to a {target} column",
            self.value.java_class(),
            self.name().map(|n| format!(" ({n})")).unwrap_or_default()
        )
        .into()
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &PgType, out: &mut BytesMut) -> Result<IsNull, EncodeError> {
        let value = self.value;
        if value.is_null() {
            return Ok(IsNull::Yes);
        }
        let ranged = |target: &str| -> Result<i64, EncodeError> {
            integer(value).ok_or_else(|| self.mismatch(target))
        };
        match *ty {
            PgType::BOOL => match value {
                Value::Boolean(b) => out.put_u8(u8::from(*b)),
                _ => return Err(self.mismatch("boolean")),
            },
            PgType::INT2 => out.put_i16(i16::try_from(ranged("smallint")?)?),
            PgType::INT4 => out.put_i32(i32::try_from(ranged("integer")?)?),
            PgType::INT8 => out.put_i64(ranged("bigint")?),
            PgType::FLOAT4 => {
                out.put_f32(float(value).ok_or_else(|| self.mismatch("real"))? as f32)
            }
            PgType::FLOAT8 => {
                out.put_f64(float(value).ok_or_else(|| self.mismatch("double precision"))?)
            }
            PgType::NUMERIC => encode_numeric(&self.decimal()?, out)?,
            PgType::BYTEA => match value {
                Value::Bytes(b) => out.put_slice(b),
                _ => return Err(self.mismatch("bytea")),
            },
            PgType::DATE => {
                let days = ranged("date")? - POSTGRES_EPOCH_DAYS;
                out.put_i32(i32::try_from(days)?);
            }
            PgType::TIME => out.put_i64(self.micros_of_day()?),
            PgType::TIMESTAMP | PgType::TIMESTAMPTZ => out.put_i64(self.epoch_micros()?),
            PgType::JSONB => match value {
                Value::String(s) => {
                    out.put_u8(1);
                    out.put_slice(s.as_bytes());
                }
                _ => return Err(self.mismatch("jsonb")),
            },
            PgType::UUID => {
                let hex: String = value
                    .as_str()
                    .ok_or_else(|| self.mismatch("uuid"))?
                    .chars()
                    .filter(|c| *c != '-')
                    .collect();
                // ASCII only: the slicing below is by byte.
                if hex.len() != 32 || !hex.is_ascii() {
                    return Err(format!("'{hex}' is not a UUID").into());
                }
                for i in (0..32).step_by(2) {
                    out.put_u8(u8::from_str_radix(&hex[i..i + 2], 16)?);
                }
            }
            // Text-like types, and anything Postgres reads from text.
            _ => match value {
                Value::String(s) => out.put_slice(s.as_bytes()),
                Value::Bytes(_) | Value::Array(_) | Value::Map(_) | Value::Struct(_) => {
                    return Err(self.mismatch(ty.name()));
                }
                other => out.put_slice(other.to_string().as_bytes()),
            },
        }
        Ok(IsNull::No)
    }

    fn accepts(ty: &PgType) -> bool {
        // The encoding is chosen per type in `to_sql`; refusals there name the value.
        matches!(
            *ty,
            PgType::BOOL
                | PgType::INT2
                | PgType::INT4
                | PgType::INT8
                | PgType::FLOAT4
                | PgType::FLOAT8
                | PgType::NUMERIC
                | PgType::BYTEA
                | PgType::DATE
                | PgType::TIME
                | PgType::TIMESTAMP
                | PgType::TIMESTAMPTZ
                | PgType::JSON
                | PgType::JSONB
                | PgType::UUID
                | PgType::TEXT
                | PgType::VARCHAR
                | PgType::BPCHAR
                | PgType::NAME
                | PgType::UNKNOWN
        )
    }

    to_sql_checked!();
}

/// How a write failed, for what the task does next.
#[derive(Debug)]
enum Failure {
    /// The database is unreachable or went away: retry the same records later.
    Connection(String),
    /// The statement's data was refused: a record's fault.
    Refused(String),
    /// Retrying cannot help (bad credentials, no such database, bad settings).
    Fatal(String),
}

fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            );
            if let Some(detail) = db.detail() {
                text.push_str(&format!("; {detail}"));
            }
            text
        }
        None => {
            let mut text = e.to_string();
            let mut source = e.source();
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    }
}

fn classify(e: &tokio_postgres::Error, client: &Client) -> Failure {
    let text = describe(e);
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return match code.get(..2) {
            // connection exception, transaction rollback (serialization, deadlock),
            // insufficient resources, operator intervention, system error.
            Some("08" | "40" | "53" | "57" | "58") => Failure::Connection(text),
            // invalid authorization, invalid catalog name (no such database).
            Some("28" | "3D") => Failure::Fatal(text),
            _ => Failure::Refused(text),
        };
    }
    if e.is_closed()
        || client.is_closed()
        || e.source()
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
    {
        return Failure::Connection(text);
    }
    // A value that cannot be encoded for its column (serialization happens before
    // anything is sent).
    Failure::Refused(text)
}

#[derive(Debug, Clone, Default)]
struct TableInfo {
    /// Column names as the catalog has them.
    columns: HashSet<String>,
}

pub struct JdbcSinkConnector;

fn key(
    name: &'static str,
    ty: &'static str,
    default: Option<&'static str>,
    importance: &'static str,
    documentation: &'static str,
) -> ConfigKeyDef {
    ConfigKeyDef {
        name,
        ty,
        default,
        required: false,
        importance,
        documentation,
    }
}

impl ConnectorPlugin for JdbcSinkConnector {
    fn class(&self) -> &'static str {
        "io.debezium.connector.jdbc.JdbcSinkConnector"
    }

    fn task_class(&self) -> &'static str {
        "io.debezium.connector.jdbc.JdbcSinkConnectorTask"
    }

    fn kind(&self) -> Kind {
        Kind::Sink
    }

    fn version(&self) -> &'static str {
        VERSION
    }

    fn config_keys(&self) -> Vec<ConfigKeyDef> {
        vec![
            key(CONNECTION_URL, "STRING", None, "HIGH", "Valid JDBC URL"),
            key(
                CONNECTION_USERNAME,
                "STRING",
                None,
                "HIGH",
                "Name of the database user to be used when connecting to the connection.",
            ),
            key(
                CONNECTION_PASSWORD,
                "PASSWORD",
                None,
                "HIGH",
                "Password of the database user to be used when connecting to the connection.",
            ),
            key(
                INSERT_MODE,
                "STRING",
                Some("insert"),
                "LOW",
                "The insertion mode to use. 'insert' - the default mode, uses standard SQL insert statements; 'upsert' - uses upsert semantics for the database if its supported and requires setting primary.key.mode and primary.key.fields;'update' - uses update semantics for the database if its supported.",
            ),
            key(
                DELETE_ENABLED,
                "BOOLEAN",
                Some("false"),
                "LOW",
                "Whether to treat `null` record values as deletes. Requires primary.key.mode to be `record_key`.",
            ),
            key(
                TRUNCATE_ENABLED,
                "BOOLEAN",
                Some("false"),
                "LOW",
                "Whether to process debezium event `t` as truncate statement.",
            ),
            key(
                COLLECTION_NAME_FORMAT,
                "STRING",
                Some("${topic}"),
                "MEDIUM",
                "A format string for the table, which may contain '${topic}' as a placeholder for the original topic name.",
            ),
            key(
                PRIMARY_KEY_MODE,
                "STRING",
                Some("none"),
                "MEDIUM",
                "The primary key mode: none, kafka, record_key or record_value.",
            ),
            key(
                PRIMARY_KEY_FIELDS,
                "STRING",
                None,
                "LOW",
                "A comma-separated list of primary key field names. This is interpreted differently depending on primary.key.mode.",
            ),
            key(
                SCHEMA_EVOLUTION,
                "STRING",
                Some("none"),
                "LOW",
                "Controls how schema evolution is handled by the sink connector",
            ),
            key(
                QUOTE_IDENTIFIERS,
                "BOOLEAN",
                Some("false"),
                "LOW",
                "When enabled, table, column, and other identifiers are quoted based on the database dialect. When disabled, only explicit cases where the dialect requires quoting will be used.",
            ),
            key(
                USE_TIME_ZONE,
                "STRING",
                Some("UTC"),
                "MEDIUM",
                "The timezone used when inserting temporal values.",
            ),
            key(
                BATCH_SIZE,
                "INT",
                Some("500"),
                "MEDIUM",
                "Specifies how many records to attempt to batch together into the destination table, when possible.",
            ),
            key(
                FIELD_INCLUDE_LIST,
                "STRING",
                None,
                "MEDIUM",
                "A comma-separated list of field names (field or topic:field) to include from the event value.",
            ),
            key(
                FIELD_EXCLUDE_LIST,
                "STRING",
                None,
                "MEDIUM",
                "A comma-separated list of field names (field or topic:field) to exclude from the event value.",
            ),
            key(
                FLUSH_MAX_RETRIES,
                "INT",
                Some("5"),
                "LOW",
                "Max retry count when fail to flush. In case of retriable exceptions, the flush will be retried for the defined max retry count. Default is 5.",
            ),
            key(
                FLUSH_RETRY_DELAY_MS,
                "LONG",
                Some("1000"),
                "LOW",
                "Delay to retry when fail to flush",
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
        Some(Box::new(JdbcSinkTask::default()))
    }
}

#[derive(Default)]
struct JdbcSinkTask {
    settings: Option<Settings>,
    client: Option<Client>,
    /// Tables as last read from (or written to) the catalog; emptied when a transaction
    /// does not commit, since its DDL did not either.
    tables: HashMap<TableName, TableInfo>,
    /// Writes that failed for want of a database since the last one that worked.
    failures: u32,
    last_failure: Option<Instant>,
}

impl JdbcSinkTask {
    async fn connect(settings: &Settings) -> Result<Client, Failure> {
        let connection = &settings.connection;
        let mut config = tokio_postgres::Config::new();
        for (host, port) in &connection.hosts {
            config.host(host).port(*port);
        }
        config
            .dbname(&connection.database)
            .connect_timeout(connection.connect_timeout)
            .application_name(
                connection
                    .application_name
                    .as_deref()
                    .unwrap_or("sluice-connect-jdbc"),
            );
        if let Some(user) = &connection.user {
            config.user(user);
        }
        if let Some(password) = &connection.password {
            config.password(password);
        }
        let hosts: Vec<String> = connection
            .hosts
            .iter()
            .map(|(h, p)| format!("{h}:{p}"))
            .collect();
        let (client, session) = config.connect(NoTls).await.map_err(|e| {
            let text = format!(
                "Cannot connect to PostgreSQL at {}: {}",
                hosts.join(","),
                describe(&e)
            );
            match e
                .as_db_error()
                .map(|db| db.code().code().get(..2).unwrap_or("").to_string())
            {
                Some(class) if class == "28" || class == "3D" => Failure::Fatal(text),
                _ => Failure::Connection(text),
            }
        })?;
        tokio::spawn(async move {
            if let Err(e) = session.await {
                tracing::warn!("PostgreSQL connection closed: {}", describe(&e));
            }
        });
        let set = |name: &'static str, value: String| {
            let client = &client;
            async move {
                client
                    .execute("SELECT set_config($1, $2, false)", &[&name, &value])
                    .await
                    .map_err(|e| match classify(&e, client) {
                        Failure::Connection(text) => Failure::Connection(text),
                        Failure::Refused(text) | Failure::Fatal(text) => {
                            Failure::Fatal(format!("Cannot set {name} to '{value}': {text}"))
                        }
                    })
            }
        };
        set("TimeZone", settings.time_zone.clone()).await?;
        if let Some(schema) = &connection.current_schema {
            set("search_path", schema.clone()).await?;
        }
        Ok(client)
    }

    async fn table_info(
        client: &Client,
        table: &TableName,
    ) -> Result<Option<TableInfo>, tokio_postgres::Error> {
        let schema = table.schema.as_ref().map(|s| s.catalog.as_str());
        let rows = client
            .query(
                "SELECT column_name::text FROM information_schema.columns \
                 WHERE table_schema = COALESCE($1::text, current_schema()) AND table_name = $2::text",
                &[&schema, &table.table.catalog.as_str()],
            )
            .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut columns = HashSet::new();
        for row in rows {
            columns.insert(row.try_get::<_, String>(0)?);
        }
        Ok(Some(TableInfo { columns }))
    }

    /// Makes the run's table and columns exist as `schema.evolution` allows. `Ok(false)`:
    /// the table does not exist and the run has nothing to do (a delete, a truncate).
    async fn prepare_table(
        &mut self,
        client: &Client,
        settings: &Settings,
        run: &Run,
    ) -> Result<bool, Failure> {
        let db = |e: tokio_postgres::Error| classify(&e, client);
        let info = match self.tables.get(&run.table) {
            Some(info) => Some(info.clone()),
            None => Self::table_info(client, &run.table).await.map_err(db)?,
        };
        let evolve = settings.schema_evolution == SchemaEvolution::Basic;
        let info = match info {
            Some(info) => info,
            None if run.kind != RunKind::Write => return Ok(false),
            None if !evolve => {
                return Err(Failure::Refused(format!(
                    "Could not find table '{}' and schema.evolution is 'none'",
                    run.table.sql()
                )));
            }
            None => {
                let sql = create_table_sql(&run.table, &run.columns).map_err(Failure::Refused)?;
                client.batch_execute(&sql).await.map_err(db)?;
                Self::table_info(client, &run.table)
                    .await
                    .map_err(db)?
                    .unwrap_or_default()
            }
        };
        let mut info = info;
        if evolve && run.kind == RunKind::Write {
            for column in run.columns.iter() {
                if !info.columns.contains(&column.name.catalog) {
                    let sql = add_column_sql(&run.table, column).map_err(Failure::Refused)?;
                    client.batch_execute(&sql).await.map_err(db)?;
                    info.columns.insert(column.name.catalog.clone());
                }
            }
        }
        self.tables.insert(run.table.clone(), info);
        Ok(true)
    }

    /// Runs `sql` with the given rows' values.
    async fn execute(
        client: &Client,
        sql: &str,
        run: &Run,
        rows: &[(usize, Vec<Value>)],
    ) -> Result<(), tokio_postgres::Error> {
        let params: Vec<Param<'_>> = rows
            .iter()
            .flat_map(|(_, values)| {
                values
                    .iter()
                    .zip(run.columns.iter())
                    .map(|(value, column)| Param {
                        value,
                        schema: &column.schema,
                    })
            })
            .collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        client.execute(sql, &refs).await.map(|_| ())
    }

    /// Writes one run inside savepoints; rows Postgres refuses are returned as errant.
    async fn write_run(
        &mut self,
        client: &Client,
        settings: &Settings,
        run: &Run,
    ) -> Result<Vec<Errant>, Failure> {
        let db = |e: tokio_postgres::Error| classify(&e, client);
        let all_errant = |error: String| -> Vec<Errant> {
            run.rows
                .iter()
                .map(|(index, _)| Errant {
                    index: *index,
                    error: error.clone(),
                })
                .collect()
        };
        client
            .batch_execute("SAVEPOINT sluice_table")
            .await
            .map_err(db)?;
        match self.prepare_table(client, settings, run).await {
            Ok(true) => client
                .batch_execute("RELEASE SAVEPOINT sluice_table")
                .await
                .map_err(db)?,
            Ok(false) => {
                client
                    .batch_execute("RELEASE SAVEPOINT sluice_table")
                    .await
                    .map_err(db)?;
                return Ok(Vec::new());
            }
            Err(Failure::Refused(error)) => {
                self.tables.remove(&run.table);
                client
                    .batch_execute("ROLLBACK TO SAVEPOINT sluice_table")
                    .await
                    .map_err(db)?;
                return Ok(all_errant(error));
            }
            Err(other) => return Err(other),
        }
        let per_row = run.kind == RunKind::Write && settings.insert_mode == InsertMode::Update;
        if !per_row {
            let Some(sql) = run_sql(run, run.rows.len(), settings.insert_mode) else {
                return Ok(Vec::new());
            };
            client
                .batch_execute("SAVEPOINT sluice_run")
                .await
                .map_err(db)?;
            match Self::execute(client, &sql, run, &run.rows).await {
                Ok(()) => {
                    client
                        .batch_execute("RELEASE SAVEPOINT sluice_run")
                        .await
                        .map_err(db)?;
                    return Ok(Vec::new());
                }
                Err(e) => match classify(&e, client) {
                    Failure::Refused(error) => {
                        client
                            .batch_execute("ROLLBACK TO SAVEPOINT sluice_run")
                            .await
                            .map_err(db)?;
                        if run.rows.len() == 1 {
                            return Ok(all_errant(error));
                        }
                        tracing::debug!(table = %run.table.sql(), "a batch was refused ({error}); writing its rows one by one");
                    }
                    other => return Err(other),
                },
            }
        }
        // Row by row: find the rows Postgres refuses, keep the others.
        let Some(sql) = run_sql(run, 1, settings.insert_mode) else {
            return Ok(Vec::new());
        };
        let mut errant = Vec::new();
        for row in &run.rows {
            let index = row.0;
            client
                .batch_execute("SAVEPOINT sluice_row")
                .await
                .map_err(db)?;
            match Self::execute(client, &sql, run, std::slice::from_ref(row)).await {
                Ok(()) => client
                    .batch_execute("RELEASE SAVEPOINT sluice_row")
                    .await
                    .map_err(db)?,
                Err(e) => match classify(&e, client) {
                    Failure::Refused(error) => {
                        client
                            .batch_execute("ROLLBACK TO SAVEPOINT sluice_row")
                            .await
                            .map_err(db)?;
                        errant.push(Errant { index, error });
                    }
                    other => return Err(other),
                },
            }
        }
        Ok(errant)
    }

    /// One transaction for the whole batch.
    async fn write(
        &mut self,
        settings: &Settings,
        changes: Vec<Change>,
    ) -> Result<Vec<Errant>, Failure> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = Some(Self::connect(settings).await?);
        }
        let client = self
            .client
            .take()
            .ok_or_else(|| Failure::Connection("no connection".into()))?;
        let outcome = self.write_with(&client, settings, changes).await;
        self.client = Some(client);
        outcome
    }

    async fn write_with(
        &mut self,
        client: &Client,
        settings: &Settings,
        changes: Vec<Change>,
    ) -> Result<Vec<Errant>, Failure> {
        let db = |e: tokio_postgres::Error| classify(&e, client);
        client.batch_execute("BEGIN").await.map_err(db)?;
        let mut errant = Vec::new();
        for run in runs(changes, settings.batch_size, settings.insert_mode) {
            match self.write_run(client, settings, &run).await {
                Ok(refused) => errant.extend(refused),
                Err(failure) => {
                    // Best effort: the connection may be gone already.
                    let _ = client.batch_execute("ROLLBACK").await;
                    return Err(failure);
                }
            }
        }
        client.batch_execute("COMMIT").await.map_err(db)?;
        Ok(errant)
    }
}

impl SinkTask for JdbcSinkTask {
    fn start<'a>(&'a mut self, config: &'a Props) -> BoxFuture<'a, Result<(), ConnectError>> {
        Box::pin(async move {
            let settings = Settings::parse(config).map_err(|e| {
                ConnectError(format!(
                    "Error configuring an instance of JdbcSinkConnectorConfig: {}",
                    e.message()
                ))
            })?;
            // The connection is made by the first put: a database that is down then
            // is retried as any later outage is.
            self.settings = Some(settings);
            Ok(())
        })
    }

    fn put<'a>(
        &'a mut self,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Vec<Errant>, SinkError>> {
        Box::pin(async move {
            let settings = self
                .settings
                .clone()
                .ok_or_else(|| ConnectError("the JDBC sink task was not started".into()))?;
            let mut errant = Vec::new();
            let mut changes = Vec::with_capacity(records.len());
            for (index, record) in records.iter().enumerate() {
                match settings.change(index, record) {
                    Ok(Some(change)) => changes.push(change),
                    Ok(None) => {}
                    Err(RecordProblem::Errant(error)) => errant.push(Errant { index, error }),
                    Err(RecordProblem::Fatal(error)) => {
                        return Err(SinkError::Fatal(ConnectError(error)));
                    }
                }
            }
            if changes.is_empty() {
                return Ok(errant);
            }
            // Space retries by flush.retry.delay.ms, whatever the worker's own backoff.
            if let Some(at) = self.last_failure {
                let wait = settings.flush_retry_delay.saturating_sub(at.elapsed());
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
            }
            match self.write(&settings, changes).await {
                Ok(refused) => {
                    self.failures = 0;
                    self.last_failure = None;
                    errant.extend(refused);
                    errant.sort_by_key(|e| e.index);
                    Ok(errant)
                }
                Err(failure) => {
                    self.tables.clear();
                    match failure {
                        Failure::Connection(text) => {
                            self.client = None;
                            self.failures += 1;
                            self.last_failure = Some(Instant::now());
                            if self.failures > settings.flush_max_retries {
                                Err(SinkError::Fatal(ConnectError(format!(
                                    "Exceeded max retries ({}) writing to the database: {text}",
                                    settings.flush_max_retries
                                ))))
                            } else {
                                Err(SinkError::Retriable(format!(
                                    "Failed to write to the database (attempt {} of {}), will retry: {text}",
                                    self.failures,
                                    settings.flush_max_retries + 1
                                )))
                            }
                        }
                        Failure::Refused(text) | Failure::Fatal(text) => {
                            self.client = None;
                            Err(SinkError::Fatal(ConnectError(text)))
                        }
                    }
                }
            }
        })
    }

    fn flush(&mut self) -> BoxFuture<'_, Result<(), SinkError>> {
        // Every put committed its transaction before it returned.
        Box::pin(async { Ok(()) })
    }

    fn stop(&mut self) {
        self.client = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Props {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn settings(pairs: &[(&str, &str)]) -> Settings {
        let mut all = props(&[("connection.url", "jdbc:postgresql://db:5432/app?user=u")]);
        all.extend(props(pairs));
        Settings::parse(&all).unwrap()
    }

    #[test]
    fn connection_urls_are_read_as_pgjdbc_reads_them() {
        /// (URL, Ok((hosts, database, user, password)) or Err(()) when refused)
        type Expected = Result<
            (
                &'static [(&'static str, u16)],
                &'static str,
                Option<&'static str>,
                Option<&'static str>,
            ),
            (),
        >;
        let cases: &[(&str, Expected)] = &[
            (
                "jdbc:postgresql://localhost:5433/inventory",
                Ok((&[("localhost", 5433)], "inventory", None, None)),
            ),
            (
                "jdbc:postgresql://db/app?user=ann&password=p%40ss",
                Ok((&[("db", 5432)], "app", Some("ann"), Some("p@ss"))),
            ),
            (
                "jdbc:postgresql://a:1,b:2/x",
                Ok((&[("a", 1), ("b", 2)], "x", None, None)),
            ),
            (
                "jdbc:postgresql://[::1]:6000/x",
                Ok((&[("::1", 6000)], "x", None, None)),
            ),
            (
                "jdbc:postgresql:app",
                Ok((&[("localhost", 5432)], "app", None, None)),
            ),
            ("jdbc:mysql://db/app", Err(())),
            ("jdbc:postgresql://db:port/app", Err(())),
            ("jdbc:postgresql://db/app?sslmode=require", Err(())),
        ];
        for (url, expected) in cases {
            let parsed = parse_connection_url(url);
            match expected {
                Ok((hosts, db, user, password)) => {
                    let parsed = parsed.unwrap_or_else(|e| panic!("{url}: {e}"));
                    let got: Vec<(&str, u16)> =
                        parsed.hosts.iter().map(|(h, p)| (h.as_str(), *p)).collect();
                    assert_eq!(got, *hosts, "{url}");
                    assert_eq!(parsed.database, *db, "{url}");
                    assert_eq!(parsed.user.as_deref(), *user, "{url}");
                    assert_eq!(parsed.password.as_deref(), *password, "{url}");
                }
                Err(()) => assert!(parsed.is_err(), "{url} should be refused"),
            }
        }
    }

    #[test]
    fn validation_names_the_key_at_fault() {
        let plugin = JdbcSinkConnector;
        let errors = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            plugin
                .validate(&props(pairs))
                .err()
                .map(|e| e.errors)
                .unwrap_or_default()
        };
        let url = ("connection.url", "jdbc:postgresql://db/app");
        let user = ("connection.username", "u");
        assert!(errors(&[url, user]).is_empty());
        assert_eq!(
            errors(&[user]),
            [(
                "connection.url".to_string(),
                "The 'connection.url' value is invalid: A value is required".to_string()
            )]
        );
        assert_eq!(
            errors(&[url, user, ("insert.mode", "merge")]),
            [(
                "insert.mode".to_string(),
                "The 'insert.mode' value is invalid: Value must be one of insert, upsert, update"
                    .to_string()
            )]
        );
        let keys = |pairs: &[(&str, &str)]| -> Vec<String> {
            errors(pairs).into_iter().map(|(k, _)| k).collect()
        };
        assert_eq!(
            keys(&[url, user, ("delete.enabled", "true")]),
            ["delete.enabled"]
        );
        assert_eq!(
            keys(&[
                url,
                user,
                ("delete.enabled", "true"),
                ("primary.key.mode", "record_key")
            ]),
            Vec::<String>::new()
        );
        assert_eq!(
            keys(&[url, user, ("insert.mode", "upsert")]),
            ["insert.mode"]
        );
        assert_eq!(
            keys(&[url, user, ("primary.key.mode", "record")]),
            ["primary.key.mode"]
        );
        assert_eq!(
            keys(&[url, user, ("schema.evolution", "advanced")]),
            ["schema.evolution"]
        );
        assert_eq!(keys(&[url, user, ("batch.size", "lots")]), ["batch.size"]);
        assert_eq!(keys(&[url]), ["connection.username"]);
        assert_eq!(
            keys(&[("connection.url", "jdbc:postgresql://db/app?user=u")]),
            Vec::<String>::new()
        );
        assert_eq!(
            keys(&[
                url,
                user,
                ("field.include.list", "a"),
                ("field.exclude.list", "b")
            ]),
            ["field.exclude.list"]
        );
    }

    #[test]
    fn connect_schemas_map_to_postgres_types() {
        let cases: Vec<(Schema, &str)> = vec![
            (Schema::new(Type::Int8), "smallint"),
            (Schema::new(Type::Int16), "smallint"),
            (Schema::new(Type::Int32), "integer"),
            (Schema::new(Type::Int64), "bigint"),
            (Schema::new(Type::Float32), "real"),
            (Schema::new(Type::Float64), "double precision"),
            (Schema::new(Type::Boolean), "boolean"),
            (Schema::new(Type::String), "text"),
            (Schema::new(Type::Bytes), "bytea"),
            (Schema::decimal(2), "numeric"),
            (
                Schema::decimal(2).with_parameter("connect.decimal.precision", "10"),
                "numeric(10, 2)",
            ),
            (Schema::date(), "date"),
            (Schema::time(), "time"),
            (Schema::timestamp(), "timestamp"),
            (
                Schema::new(Type::Int64).named(DBZ_MICRO_TIMESTAMP),
                "timestamp",
            ),
            (
                Schema::new(Type::String).named(DBZ_ZONED_TIMESTAMP),
                "timestamp with time zone",
            ),
            (Schema::new(Type::Int32).named(DBZ_DATE), "date"),
            (Schema::new(Type::String).named(DBZ_UUID), "uuid"),
        ];
        for (schema, expected) in cases {
            assert_eq!(column_type(&schema).as_deref(), Ok(expected), "{schema:?}");
        }
        assert!(column_type(&Schema::array(Schema::new(Type::Int32))).is_err());
    }

    fn column(name: &str, schema: Schema, key: bool) -> ColumnDef {
        ColumnDef {
            name: Identifier::new(name, false),
            field: name.to_string(),
            schema: Arc::new(schema),
            key,
        }
    }

    fn table(name: &str) -> TableName {
        TableName {
            schema: None,
            table: Identifier::new(name, false),
        }
    }

    #[test]
    fn ddl_puts_keys_first_and_quotes_what_needs_it() {
        let columns = vec![
            column("name", Schema::new(Type::String), false),
            column("id", Schema::new(Type::Int32), true),
            column("Order", Schema::new(Type::Int64).optional(), false),
            column("user", Schema::new(Type::Boolean).optional(), false),
        ];
        assert_eq!(
            create_table_sql(&table("people"), &columns).unwrap(),
            "CREATE TABLE IF NOT EXISTS people (id integer NOT NULL, name text NOT NULL, \
             \"Order\" bigint NULL, \"user\" boolean NULL, PRIMARY KEY (id))"
        );
        assert_eq!(
            add_column_sql(&table("people"), &columns[2]).unwrap(),
            "ALTER TABLE people ADD COLUMN IF NOT EXISTS \"Order\" bigint NULL"
        );
        assert!(add_column_sql(&table("people"), &columns[0]).is_err());
        assert_eq!(Identifier::new("CamelCase", false).sql, "CamelCase");
        assert_eq!(Identifier::new("CamelCase", false).catalog, "camelcase");
        assert_eq!(Identifier::new("plain", true).sql, "\"plain\"");
        assert_eq!(Identifier::new("1st", false).sql, "\"1st\"");
        assert_eq!(Identifier::new("a\"b", false).sql, "\"a\"\"b\"");
        assert_eq!(
            Identifier::new("__connect_topic", false).sql,
            "__connect_topic"
        );
    }

    fn run(kind: RunKind, columns: Vec<ColumnDef>, rows: usize) -> Run {
        Run {
            table: table("t"),
            kind,
            columns: Arc::new(columns),
            rows: (0..rows).map(|i| (i, Vec::new())).collect(),
        }
    }

    #[test]
    fn statements_for_each_mode() {
        let columns = || {
            vec![
                column("id", Schema::new(Type::Int32), true),
                column("name", Schema::new(Type::String), false),
                column(
                    "at",
                    Schema::new(Type::String).named(DBZ_ZONED_TIMESTAMP),
                    false,
                ),
            ]
        };
        let cases = [
            (
                RunKind::Write,
                InsertMode::Insert,
                2,
                "INSERT INTO t (id, name, at) VALUES ($1, $2, $3::text::timestamptz), ($4, $5, $6::text::timestamptz)",
            ),
            (
                RunKind::Write,
                InsertMode::Upsert,
                1,
                "INSERT INTO t (id, name, at) VALUES ($1, $2, $3::text::timestamptz) ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, at = EXCLUDED.at",
            ),
            (
                RunKind::Write,
                InsertMode::Update,
                1,
                "UPDATE t SET name = $2, at = $3::text::timestamptz WHERE id = $1",
            ),
        ];
        for (kind, mode, rows, expected) in cases {
            assert_eq!(
                run_sql(&run(kind, columns(), rows), rows, mode).as_deref(),
                Some(expected)
            );
        }
        let keys = vec![
            column("a", Schema::new(Type::Int32), true),
            column("b", Schema::new(Type::String), true),
        ];
        assert_eq!(
            run_sql(
                &run(RunKind::Delete, keys.clone(), 2),
                2,
                InsertMode::Insert
            )
            .as_deref(),
            Some("DELETE FROM t WHERE (a, b) IN (($1, $2), ($3, $4))")
        );
        assert_eq!(
            run_sql(&run(RunKind::Write, keys.clone(), 1), 1, InsertMode::Upsert).as_deref(),
            Some("INSERT INTO t (a, b) VALUES ($1, $2) ON CONFLICT (a, b) DO NOTHING")
        );
        assert_eq!(
            run_sql(&run(RunKind::Write, keys, 1), 1, InsertMode::Update),
            None
        );
    }

    #[test]
    fn upsert_runs_never_hold_a_key_twice() {
        let columns = Arc::new(vec![
            column("id", Schema::new(Type::Int32), true),
            column("v", Schema::new(Type::Int32), false),
        ]);
        let change = |index: usize, id: i32| Change {
            index,
            table: table("t"),
            action: Action::Write {
                columns: columns.clone(),
                values: vec![Value::Int32(id), Value::Int32(index as i32)],
            },
        };
        let changes = vec![change(0, 1), change(1, 2), change(2, 1), change(3, 3)];
        let sizes = |mode, batch| -> Vec<usize> {
            runs(changes.clone(), batch, mode)
                .iter()
                .map(|r| r.rows.len())
                .collect()
        };
        assert_eq!(sizes(InsertMode::Upsert, 500), [2, 2]);
        assert_eq!(sizes(InsertMode::Insert, 500), [4]);
        assert_eq!(sizes(InsertMode::Insert, 3), [3, 1]);
    }

    #[test]
    fn decimals_and_numerics_encode_exactly() {
        assert_eq!(decimal_text(&[0x30, 0x39], 2), "123.45");
        assert_eq!(decimal_text(&[0xCF, 0xC7], 2), "-123.45");
        assert_eq!(decimal_text(&[0x05], 3), "0.005");
        assert_eq!(decimal_text(&[0x00], 0), "0");
        assert_eq!(decimal_text(&[0x01], -2), "100");
        assert_eq!(decimal_text(&[0xFF], 1), "-0.1");
        let numeric = |text: &str| -> Vec<i16> {
            let mut out = BytesMut::new();
            encode_numeric(text, &mut out).unwrap();
            out.chunks(2)
                .map(|c| i16::from_be_bytes([c[0], c[1]]))
                .collect()
        };
        // ndigits, weight, sign, dscale, digits...
        assert_eq!(numeric("12345.678"), [3, 1, 0, 3, 1, 2345, 6780]);
        assert_eq!(numeric("-0.0001"), [1, -1, 0x4000, 4, 1]);
        assert_eq!(numeric("0.00000001"), [1, -2, 0, 8, 1]);
        assert_eq!(numeric("10000"), [1, 1, 0, 0, 1]);
        assert_eq!(numeric("0"), [0, 0, 0, 0]);
        assert!(encode_numeric("1e5", &mut BytesMut::new()).is_err());
    }

    #[test]
    fn temporal_values_are_bound_in_postgres_units() {
        let encode = |schema: Schema, value: Value, ty: PgType| -> Vec<u8> {
            let mut out = BytesMut::new();
            Param {
                value: &value,
                schema: &schema,
            }
            .to_sql(&ty, &mut out)
            .unwrap();
            out.to_vec()
        };
        // 2000-01-02 is day 10958 since 1970, day 1 since 2000.
        assert_eq!(
            encode(Schema::date(), Value::Int32(10_958), PgType::DATE),
            1i32.to_be_bytes()
        );
        assert_eq!(
            encode(Schema::time(), Value::Int32(1_500), PgType::TIME),
            1_500_000i64.to_be_bytes()
        );
        assert_eq!(
            encode(
                Schema::timestamp(),
                Value::Int64(946_684_800_001),
                PgType::TIMESTAMP
            ),
            1_000i64.to_be_bytes()
        );
        assert_eq!(
            encode(
                Schema::new(Type::Int64).named(DBZ_MICRO_TIMESTAMP),
                Value::Int64(946_684_800_000_002),
                PgType::TIMESTAMPTZ
            ),
            2i64.to_be_bytes()
        );
        let mut out = BytesMut::new();
        let too_big = Param {
            value: &Value::Int64(1 << 40),
            schema: &Schema::new(Type::Int64),
        };
        assert!(too_big.to_sql(&PgType::INT4, &mut out).is_err());
    }

    #[test]
    fn records_become_changes() {
        let key_schema: SchemaRef =
            Arc::new(Schema::new(Type::Struct).field("id", Schema::new(Type::Int32)));
        let row_schema: SchemaRef = Arc::new(
            Schema::new(Type::Struct)
                .field("id", Schema::new(Type::Int32))
                .field("name", Schema::new(Type::String).optional())
                .optional(),
        );
        let envelope_schema: SchemaRef = Arc::new(
            Schema::new(Type::Struct)
                .named("server.public.people.Envelope")
                .field("before", row_schema.clone())
                .field("after", row_schema.clone())
                .field("op", Schema::new(Type::String)),
        );
        let key = Struct::new(key_schema.clone())
            .with("id", Value::Int32(7))
            .unwrap();
        let row = Struct::new(row_schema.clone())
            .with("id", Value::Int32(7))
            .unwrap()
            .with("name", Value::String("Ann".into()))
            .unwrap();
        let envelope = |op: &str, after: Value| {
            Struct::new(envelope_schema.clone())
                .with("after", after)
                .unwrap()
                .with("op", Value::String(op.into()))
                .unwrap()
        };
        let record = |value_schema: Option<SchemaRef>, value: Value| {
            let mut r = Record::new("server.public.people", value_schema, value)
                .with_key(Some(key_schema.clone()), Value::Struct(key.clone()));
            r.partition = Some(0);
            r.kafka_offset = Some(5);
            r
        };
        let s = settings(&[
            ("primary.key.mode", "record_key"),
            ("delete.enabled", "true"),
        ]);
        let describe = |change: Option<Change>| -> String {
            match change {
                None => "skip".into(),
                Some(c) => match c.action {
                    Action::Write { columns, values } => format!(
                        "write {} {:?}",
                        c.table.sql(),
                        columns
                            .iter()
                            .zip(values)
                            .map(|(c, v)| format!(
                                "{}{}={v}",
                                c.name.sql,
                                if c.key { "*" } else { "" }
                            ))
                            .collect::<Vec<_>>()
                    ),
                    Action::Delete { values, .. } => format!("delete {} {values:?}", c.table.sql()),
                    Action::Truncate => "truncate".into(),
                },
            }
        };
        let flat = describe(
            s.change(
                0,
                &record(Some(row_schema.clone()), Value::Struct(row.clone())),
            )
            .unwrap(),
        );
        assert_eq!(flat, "write server_public_people [\"id*=7\", \"name=Ann\"]");
        let created = describe(
            s.change(
                0,
                &record(
                    Some(envelope_schema.clone()),
                    Value::Struct(envelope("c", Value::Struct(row.clone()))),
                ),
            )
            .unwrap(),
        );
        assert_eq!(created, flat);
        let deleted = describe(
            s.change(
                0,
                &record(
                    Some(envelope_schema.clone()),
                    Value::Struct(envelope("d", Value::Null)),
                ),
            )
            .unwrap(),
        );
        assert_eq!(deleted, "delete server_public_people [Int32(7)]");
        assert_eq!(
            describe(s.change(0, &record(None, Value::Null)).unwrap()),
            "delete server_public_people [Int32(7)]"
        );
        let without_deletes = settings(&[("primary.key.mode", "record_key")]);
        assert_eq!(
            describe(
                without_deletes
                    .change(0, &record(None, Value::Null))
                    .unwrap()
            ),
            "skip"
        );
        assert!(matches!(
            s.change(0, &record(None, Value::String("schemaless".into()))),
            Err(RecordProblem::Fatal(_))
        ));
        let kafka = settings(&[
            ("primary.key.mode", "kafka"),
            ("collection.name.format", "sink.${topic}"),
            ("field.exclude.list", "id"),
        ]);
        assert_eq!(
            describe(
                kafka
                    .change(
                        0,
                        &record(Some(row_schema.clone()), Value::Struct(row.clone()))
                    )
                    .unwrap()
            ),
            "write sink.server_public_people [\"__connect_topic*=server.public.people\", \"__connect_partition*=0\", \"__connect_offset*=5\", \"name=Ann\"]"
        );
    }
}
