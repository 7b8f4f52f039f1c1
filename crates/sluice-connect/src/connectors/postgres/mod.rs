//! Debezium's PostgreSQL connector (`io.debezium.connector.postgresql.PostgresConnector`),
//! native: a consistent snapshot of the captured tables (`op: r`), then logical
//! replication through a `pgoutput` slot, written as the change events Debezium 3.x
//! writes, with its offsets in the Connect offsets topic.
//!
//! - **Snapshot.** The slot is created on a replication connection with an exported
//!   snapshot, and the tables are read in one REPEATABLE READ transaction that imports it:
//!   the rows read are exactly the database as of the slot's consistent point, and the
//!   slot streams exactly what committed after it. Where the slot already existed (a
//!   snapshot that did not finish, `snapshot.mode=always`), the snapshot transaction's
//!   own visibility (`pg_current_snapshot()`) decides which streamed transactions it
//!   already saw, and those are skipped.
//! - **Streaming.** Transactions arrive whole, in commit order. Each event's offset is
//!   Debezium's (`lsn_proc`, `lsn_commit`, `lsn`, `txId`, `ts_usec`); a restarted task
//!   skips the transactions that committed at or before `lsn_commit` and, in the
//!   transaction of `txId`, the changes at or before `lsn_proc`.
//! - **The slot advances only behind Kafka.** The flushed LSN reported to the server is
//!   the end of the last transaction all of whose events the worker committed to the
//!   offsets topic (after Kafka acknowledged them), or, with nothing in flight, the
//!   server's own WAL end from its keepalives: no WAL is held forever, nothing
//!   acknowledged is skipped.

mod config;
pub mod pgoutput;
mod tables;
pub mod values;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgwire_replication::client::{ReplicationClient, ReplicationEvent};
use pgwire_replication::config::ReplicationConfig;
use pgwire_replication::error::PgWireError;
use pgwire_replication::lsn::Lsn;
use serde_json::{Map, Value as Json};
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use self::config::{PublicationMode, Settings, SnapshotMode};
use self::pgoutput::{Datum, Message};
use self::tables::{Column, Table, TableRef};
use self::values::PgType;
use super::debezium::{java_hash_map_order, struct_json, transaction_metadata};
use super::{
    BoxFuture, ConfigKeyDef, ConnectError, ConnectorPlugin, Kind, OffsetReader, SourceTask,
};
use crate::data::{Header, Record, SchemaRef, Struct, Value};
use crate::{ConfigError, Props};

pub struct PostgresConnector;

impl ConnectorPlugin for PostgresConnector {
    fn class(&self) -> &'static str {
        "io.debezium.connector.postgresql.PostgresConnector"
    }

    fn task_class(&self) -> &'static str {
        "io.debezium.connector.postgresql.PostgresConnectorTask"
    }

    fn kind(&self) -> Kind {
        Kind::Source
    }

    fn version(&self) -> &'static str {
        tables::DEBEZIUM_VERSION
    }

    fn config_keys(&self) -> Vec<ConfigKeyDef> {
        config::keys()
    }

    fn validate(&self, config: &Props) -> Result<(), ConfigError> {
        Settings::parse(config).map(|_| ())
    }

    fn task_configs(&self, config: &Props, _max_tasks: u32) -> Vec<Props> {
        // One slot, one stream: Debezium's Postgres connector runs a single task.
        vec![config.clone()]
    }

    fn exactly_once_support(&self) -> bool {
        // A restarted task replays from its committed offset and skips what that offset
        // covers, so records and offsets written in one transaction are exactly once.
        true
    }

    fn source_task(&self) -> Option<Box<dyn SourceTask>> {
        Some(Box::new(PostgresTask::default()))
    }
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// PostgreSQL timestamps count microseconds from 2000-01-01.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

/// An error with its causes (tokio-postgres says only "db error" and keeps the server's
/// message in its source).
fn error_text(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn connect_error(what: &str, e: impl std::error::Error) -> ConnectError {
    ConnectError(format!("{what}: {}", error_text(&e)))
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A transaction's visibility as a snapshot saw it (`pg_current_snapshot()`): which
/// streamed transactions a snapshot already contains.
#[derive(Debug, Clone)]
struct Visibility {
    xmin: u64,
    xmax: u64,
    in_progress: Vec<u64>,
}

impl Visibility {
    fn parse(text: &str) -> Option<Visibility> {
        let mut parts = text.split(':');
        let xmin = parts.next()?.parse().ok()?;
        let xmax = parts.next()?.parse().ok()?;
        let in_progress = match parts.next() {
            Some("") | None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?,
        };
        Some(Visibility {
            xmin,
            xmax,
            in_progress,
        })
    }

    /// Whether the 32-bit xid of a streamed transaction committed before the snapshot
    /// was taken (its full id is the one nearest `xmax`).
    fn saw(&self, xid: u32) -> bool {
        let base = self.xmax & !0xffff_ffff;
        let mut full = base | u64::from(xid);
        if full > self.xmax + (1 << 31) {
            full = full.saturating_sub(1 << 32);
        }
        full < self.xmin || (full < self.xmax && !self.in_progress.contains(&full))
    }
}

/// An event a change makes: table, op, Debezium's message type, before, after, and the
/// headers it carries beyond the context ones.
type Change = (
    TableRef,
    &'static str,
    &'static str,
    Option<Struct>,
    Option<Struct>,
    Vec<Header>,
);

/// A column as the catalog describes it.
struct CatalogColumn {
    name: String,
    type_oid: u32,
    modifier: i32,
    not_null: bool,
    key_position: Option<i32>,
    /// `pg_get_expr` of its default.
    default: Option<String>,
}

/// The transaction being streamed.
#[derive(Debug)]
struct Transaction {
    xid: u32,
    commit_micros: i64,
    /// Skipped whole: committed before the offset resumed from, or seen by the snapshot.
    skip: bool,
    /// Changes at or before this LSN were emitted before a restart.
    skip_through: Option<u64>,
    /// The LSN of its first emitted event (the BEGIN record's id).
    first_lsn: u64,
    /// The LSN of its last change handed out (a reconnect skips up to it).
    last_lsn: Option<u64>,
    /// Events emitted, in total and per table (`transaction` blocks, the END record).
    total: i64,
    per_table: Vec<(String, i64)>,
}

/// What streaming resumes after (from the offset, or from what this task emitted).
#[derive(Debug, Clone, Copy, Default)]
struct Resume {
    /// Transactions whose commit record starts before this LSN (the end of the last
    /// transaction done) are done.
    last_commit: u64,
    /// The transaction whose changes up to `lsn_proc` are done.
    xid: Option<u32>,
    lsn_proc: u64,
}

/// A snapshot in progress: the tables still to read and the row held back until the
/// next one tells whether it was the last.
struct SnapshotRun {
    tables: VecDeque<TableRef>,
    current: Option<TableRef>,
    /// The next row read is the first of its table.
    new_table: bool,
    held: Option<(TableRef, Struct)>,
    held_first_in_table: bool,
    first: bool,
    lsn: u64,
    xid: i64,
    started_micros: i64,
}

enum Phase {
    Snapshot(Box<SnapshotRun>),
    Streaming,
    Finished,
}

#[derive(Default)]
pub struct PostgresTask {
    settings: Option<Settings>,
    sql: Option<Client>,
    stream: Option<ReplicationClient>,
    phase: Option<Phase>,
    source_schema: Option<SchemaRef>,
    transaction_schema: Option<SchemaRef>,
    /// Relations by oid, as the stream last described them.
    relations: HashMap<u32, TableRef>,
    types: HashMap<u32, PgType>,
    transaction: Option<Transaction>,
    resume: Resume,
    visibility: Option<Visibility>,
    /// The end LSN of the last transaction streamed whole (`lsn_commit`; 0 before the
    /// first).
    last_commit: u64,
    /// Records handed to the worker whose offsets it has not committed yet, by
    /// `lsn_proc`, with the end LSN of the transaction they close (if they do).
    unconfirmed: VecDeque<(u64, Option<u64>)>,
    /// The highest LSN reported to the server as flushed.
    pending_flush: Option<u64>,
    /// `__debezium.context.runId`: new at every task start.
    run_id: String,
}

/// Rows of a query in text form.
async fn text_rows(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, ConnectError> {
    let messages = client
        .simple_query(sql)
        .await
        .map_err(|e| connect_error(&format!("query {sql:?} failed"), e))?;
    Ok(messages
        .into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_string))
                    .collect(),
            ),
            _ => None,
        })
        .collect())
}

/// The order Debezium snapshots tables in: as `table.include.list` names them, then by
/// name.
fn snapshot_order(settings: &Settings, mut tables: Vec<TableRef>) -> Vec<TableRef> {
    tables.sort_by_key(|t| (settings.tables.position(&t.id()), t.id()));
    tables
}

/// For the `connect_records` fuzz target: decodes a pgoutput message and reads the rows
/// it carries as a table whose columns cycle through the mapped types, so every text
/// reader sees what the fuzzer writes.
pub fn fuzz_message(bytes: &[u8]) {
    let Ok(message) = pgoutput::decode(bytes) else {
        return;
    };
    let tuples = match message {
        Message::Insert { new, .. } => vec![new],
        Message::Update { old, new, .. } => old.map(|(_, t)| t).into_iter().chain([new]).collect(),
        Message::Delete { old, .. } => vec![old.1],
        _ => Vec::new(),
    };
    const TYPES: &[(&str, i32)] = &[
        ("bool", -1),
        ("int2", -1),
        ("int4", -1),
        ("int8", -1),
        ("float4", -1),
        ("float8", -1),
        ("numeric", -1),
        ("numeric", (10 << 16 | 2) + 4),
        ("money", -1),
        ("text", -1),
        ("bytea", -1),
        ("date", -1),
        ("time", 3),
        ("time", -1),
        ("timestamp", 3),
        ("timestamp", -1),
        ("timestamptz", -1),
        ("timetz", -1),
        ("interval", -1),
        ("uuid", -1),
        ("jsonb", -1),
        ("_int4", -1),
        ("_text", -1),
        ("bit", 1),
    ];
    let modes = values::Modes::default();
    let source = tables::source_schema();
    let transaction = tables::transaction_block_schema();
    for tuple in tuples {
        let columns = (0..tuple.0.len())
            .map(|i| {
                let (name, modifier) = TYPES[i % TYPES.len()];
                let element = name.strip_prefix('_').map(|e| {
                    Box::new(PgType {
                        oid: 0,
                        modifier: -1,
                        name: e.to_string(),
                        enum_labels: None,
                        element: None,
                    })
                });
                let ty = PgType {
                    oid: 0,
                    modifier,
                    name: name.to_string(),
                    enum_labels: None,
                    element,
                };
                Column {
                    name: format!("c{i}"),
                    mapped: values::map(&ty, &modes),
                    optional: i % 2 == 0,
                    default: None,
                    key_position: (i == 0).then_some(1),
                }
            })
            .collect();
        let table = Table::new("fuzz", "public", "t", columns, &source, &transaction);
        if let Ok(row) = table.row(&tuple.0, &modes) {
            let _ = table.key(&row);
        }
    }
}

/// Whether a replication error is the connection breaking (worth connecting again) rather
/// than a refusal: I/O, and the server's shutdown and start-up states (SQLSTATE class 57:
/// `admin_shutdown`, `crash_shutdown`, `cannot_connect_now`).
fn retriable(e: &PgWireError) -> bool {
    if e.is_transient() {
        return true;
    }
    let text = e.to_string();
    matches!(e, PgWireError::Server(_))
        && [
            "57P01",
            "57P02",
            "57P03",
            "terminating connection",
            "the database system is",
        ]
        .iter()
        .any(|t| text.contains(t))
}

fn offset_number(offset: &Map<String, Json>, key: &str) -> Option<u64> {
    offset.get(key).and_then(Json::as_u64)
}

impl PostgresTask {
    fn settings(&self) -> &Settings {
        self.settings.as_ref().expect("started")
    }

    fn partition(&self) -> Map<String, Json> {
        let mut p = Map::new();
        p.insert(
            "server".into(),
            Json::String(self.settings().prefix.clone()),
        );
        p
    }

    async fn connect_sql(settings: &Settings) -> Result<Client, ConnectError> {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&settings.host)
            .port(settings.port)
            .user(&settings.user)
            .dbname(&settings.dbname)
            .connect_timeout(settings.connect_timeout)
            .application_name("sluice-debezium-postgres");
        if !settings.password.is_empty() {
            config.password(&settings.password);
        }
        let (client, connection) = config.connect(NoTls).await.map_err(|e| {
            ConnectError(format!(
                "Couldn't obtain database name: failed to connect to {}:{}/{} as {}: {}",
                settings.host,
                settings.port,
                settings.dbname,
                settings.user,
                error_text(&e)
            ))
        })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("postgres connection ended: {e}");
            }
        });
        let mut set = String::new();
        for (k, v) in values::SESSION_SETTINGS {
            set.push_str(&format!("SET {k} = {};", quote_literal(v)));
        }
        client
            .batch_execute(&set)
            .await
            .map_err(|e| connect_error("setting the session up failed", e))?;
        Ok(client)
    }

    fn replication_config(settings: &Settings) -> ReplicationConfig {
        let options: Vec<String> = values::SESSION_SETTINGS
            .iter()
            .map(|(k, v)| format!("-c {k}={}", v.replace(' ', "")))
            .collect();
        ReplicationConfig::new(
            settings.host.clone(),
            settings.user.clone(),
            settings.password.clone(),
            settings.dbname.clone(),
            settings.slot.clone(),
            settings.publication.clone(),
        )
        .with_port(settings.port)
        .with_status_interval(settings.status_update_interval)
        .with_wakeup_interval(Duration::from_secs(1))
        .with_options(options.join(" "))
        .with_application_name("sluice-debezium-postgres")
    }

    async fn pg_type(&mut self, oid: u32) -> Result<PgType, ConnectError> {
        if let Some(t) = self.types.get(&oid) {
            return Ok(t.clone());
        }
        let client = self.sql.as_ref().expect("connected");
        let sql = format!(
            "SELECT t.typname::text, t.typtype::text, t.typcategory::text, t.typelem, t.typbasetype, t.typtypmod, \
             (SELECT string_agg(e.enumlabel::text, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid) \
             FROM pg_type t WHERE t.oid = {oid}"
        );
        let rows = text_rows(client, &sql).await?;
        let Some(row) = rows.into_iter().next() else {
            return Err(ConnectError(format!("no type with oid {oid} in pg_type")));
        };
        let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
        let element_oid: u32 = get(3).parse().unwrap_or(0);
        let base_oid: u32 = get(4).parse().unwrap_or(0);
        let ty = if get(1) == "d" && base_oid != 0 {
            // A domain is its base type.
            let mut base = Box::pin(self.pg_type(base_oid)).await?;
            base.oid = oid;
            base
        } else {
            let element = if get(2) == "A" && element_oid != 0 {
                Some(Box::new(Box::pin(self.pg_type(element_oid)).await?))
            } else {
                None
            };
            PgType {
                oid,
                modifier: -1,
                name: get(0),
                enum_labels: (get(1) == "e").then(|| {
                    get(6)
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                }),
                element,
            }
        };
        self.types.insert(oid, ty.clone());
        Ok(ty)
    }

    /// A table's columns from the catalog: (name, type oid, modifier, not null, key
    /// position), in column order.
    async fn catalog_columns(&self, relation: &str) -> Result<Vec<CatalogColumn>, ConnectError> {
        let client = self.sql.as_ref().expect("connected");
        let sql = format!(
            "SELECT a.attname::text, a.atttypid, a.atttypmod, a.attnotnull, \
             array_position(i.indkey::int2[], a.attnum), pg_get_expr(d.adbin, d.adrelid) \
             FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary \
             LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = {relation} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
        );
        let rows = text_rows(client, &sql).await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let get = |i: usize| r.get(i).cloned().flatten();
                CatalogColumn {
                    name: get(0).unwrap_or_default(),
                    type_oid: get(1).and_then(|s| s.parse().ok()).unwrap_or(0),
                    modifier: get(2).and_then(|s| s.parse().ok()).unwrap_or(-1),
                    not_null: get(3).as_deref() == Some("t"),
                    key_position: get(4).and_then(|s| s.parse().ok()),
                    default: get(5),
                }
            })
            .collect())
    }

    /// Builds a table from its columns as the stream or the catalog lists them
    /// (name, type oid, modifier); nullability and the key come from the catalog.
    async fn build_table(
        &mut self,
        relation: &str,
        schema_name: &str,
        name: &str,
        columns: Vec<(String, u32, i32)>,
    ) -> Result<TableRef, ConnectError> {
        let catalog = self.catalog_columns(relation).await?;
        let modes = self.settings().modes;
        let mut out = Vec::with_capacity(columns.len());
        for (column, oid, modifier) in columns {
            let known = catalog.iter().find(|c| c.name == column);
            let mut ty = self.pg_type(oid).await?;
            if ty.modifier < 0 {
                ty.modifier = modifier;
            }
            let mapped = values::map(&ty, &modes);
            if mapped.is_none() {
                tracing::warn!(
                    "column {column} of {schema_name}.{name} has type {} that Debezium does not map; it is left out of the events",
                    ty.name
                );
            }
            let default = match (&mapped, known.and_then(|c| c.default.as_deref())) {
                (Some(m), Some(expression)) => {
                    values::default_literal(expression).and_then(|text| m.value(&text, &modes).ok())
                }
                _ => None,
            };
            out.push(Column {
                name: column,
                mapped,
                optional: known.is_none_or(|c| !c.not_null),
                default,
                key_position: known.and_then(|c| c.key_position),
            });
        }
        let settings = self.settings();
        Ok(Arc::new(Table::new(
            &settings.prefix,
            schema_name,
            name,
            out,
            self.source_schema.as_ref().expect("started"),
            self.transaction_schema.as_ref().expect("started"),
        )))
    }

    /// The captured tables, sorted by name (the snapshot reads them in this order).
    async fn captured_tables(&mut self) -> Result<Vec<TableRef>, ConnectError> {
        let client = self.sql.as_ref().expect("connected");
        let rows = text_rows(
            client,
            "SELECT c.oid, n.nspname::text, c.relname::text FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition \
             AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' \
             ORDER BY n.nspname, c.relname",
        )
        .await?;
        let mut tables = Vec::new();
        for row in rows {
            let get = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
            let (oid, schema_name, name) = (get(0), get(1), get(2));
            if !self.settings().captures(&schema_name, &name) {
                continue;
            }
            let columns = self
                .catalog_columns(&oid)
                .await?
                .into_iter()
                .map(|c| (c.name, c.type_oid, c.modifier))
                .collect();
            tables.push(self.build_table(&oid, &schema_name, &name, columns).await?);
        }
        Ok(tables)
    }

    /// Creates or updates the publication as `publication.autocreate.mode` says.
    async fn ensure_publication(&self, tables: &[TableRef]) -> Result<(), ConnectError> {
        let settings = self.settings();
        let client = self.sql.as_ref().expect("connected");
        let exists = !text_rows(
            client,
            &format!(
                "SELECT 1 FROM pg_publication WHERE pubname = {}",
                quote_literal(&settings.publication)
            ),
        )
        .await?
        .is_empty();
        let name = quote_ident(&settings.publication);
        let list = || {
            tables
                .iter()
                .map(|t| format!("{}.{}", quote_ident(&t.schema_name), quote_ident(&t.name)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let sql = match (settings.publication_mode, exists) {
            (_, true) if settings.publication_mode != PublicationMode::Filtered => return Ok(()),
            (PublicationMode::Disabled, false) => {
                return Err(ConnectError(format!(
                    "Publication autocreation is disabled, please create one and restart the connector: publication {} does not exist",
                    settings.publication
                )));
            }
            (PublicationMode::AllTables, false) => {
                format!("CREATE PUBLICATION {name} FOR ALL TABLES")
            }
            (PublicationMode::NoTables, false) => format!("CREATE PUBLICATION {name}"),
            (PublicationMode::Filtered, _) if tables.is_empty() => {
                return Err(ConnectError(
                    "No table filters found for filtered publication: table.include.list matches no table".into(),
                ));
            }
            (PublicationMode::Filtered, false) => {
                format!("CREATE PUBLICATION {name} FOR TABLE {}", list())
            }
            (PublicationMode::Filtered, true) => {
                format!("ALTER PUBLICATION {name} SET TABLE {}", list())
            }
            _ => return Ok(()),
        };
        client
            .batch_execute(&sql)
            .await
            .map_err(|e| connect_error(&format!("{sql} failed"), e))
    }

    /// Source block of an event.
    #[allow(clippy::too_many_arguments)]
    fn source(
        &self,
        table: &Table,
        ts_micros: i64,
        snapshot: &str,
        txid: Option<i64>,
        lsn: Option<u64>,
        sequence: Option<String>,
    ) -> Value {
        let settings = self.settings();
        let schema = self.source_schema.clone().expect("started");
        let mut s = Struct::new(schema);
        let v = &mut s.values;
        v[0] = Value::String(tables::DEBEZIUM_VERSION.into());
        v[1] = Value::String(tables::CONNECTOR.into());
        v[2] = Value::String(settings.prefix.clone());
        v[3] = Value::Int64(ts_micros.div_euclid(1000));
        v[4] = Value::String(snapshot.into());
        v[5] = Value::String(settings.dbname.clone());
        v[6] = sequence.map_or(Value::Null, Value::String);
        v[7] = Value::Int64(ts_micros);
        v[8] = Value::Int64(ts_micros.saturating_mul(1000));
        v[9] = Value::String(table.schema_name.clone());
        v[10] = Value::String(table.name.clone());
        v[11] = txid.map_or(Value::Null, Value::Int64);
        v[12] = lsn.map_or(Value::Null, |l| Value::Int64(l as i64));
        Value::Struct(s)
    }

    /// A change event: envelope, key, offsets.
    #[allow(clippy::too_many_arguments)]
    fn event(
        &self,
        table: &Table,
        op: &str,
        before: Option<Struct>,
        after: Option<Struct>,
        source: Value,
        transaction: Option<Struct>,
        offset: Map<String, Json>,
    ) -> Record {
        let key = after
            .as_ref()
            .or(before.as_ref())
            .and_then(|row| table.key(row));
        let now = now_micros();
        let mut envelope = Struct::new(table.envelope.clone());
        let v = &mut envelope.values;
        v[0] = before.map_or(Value::Null, Value::Struct);
        v[1] = after.map_or(Value::Null, Value::Struct);
        v[2] = source;
        v[3] = transaction.map_or(Value::Null, Value::Struct);
        v[4] = Value::String(op.into());
        v[5] = Value::Int64(now.div_euclid(1000));
        v[6] = Value::Int64(now);
        v[7] = Value::Int64(now.saturating_mul(1000));
        let mut record = Record::new(
            table.topic.clone(),
            Some(table.envelope.clone()),
            Value::Struct(envelope),
        );
        if let Some(key) = key {
            record = record.with_key(table.key_schema.clone(), Value::Struct(key));
        }
        record.headers = self.context_headers();
        record.source_partition = Some(self.partition());
        record.source_offset = Some(offset);
        record
    }

    /// The headers Debezium puts on every change event.
    fn context_headers(&self) -> Vec<Header> {
        let header = |k: &str, v: &str| Header {
            key: k.to_string(),
            value: Some(bytes::Bytes::from(v.to_string())),
        };
        vec![
            header(
                "__debezium.context.connectorLogicalName",
                &self.settings().prefix,
            ),
            header("__debezium.context.taskId", "0"),
            header("__debezium.context.connectorName", tables::CONNECTOR),
            header("__debezium.context.runId", &self.run_id),
        ]
    }

    fn tombstone(record: &Record) -> Record {
        let mut t = record.clone();
        t.value_schema = None;
        t.value = Value::Null;
        t
    }

    /// Decides whether to snapshot, creates the slot and the snapshot transaction.
    async fn begin(&mut self, offsets: &dyn OffsetReader) -> Result<(), ConnectError> {
        let settings = self.settings().clone();
        let client = self.sql.as_ref().expect("connected");
        let wal_level = text_rows(client, "SHOW wal_level").await?;
        let wal_level = wal_level
            .first()
            .and_then(|r| r.first().cloned().flatten())
            .unwrap_or_default();
        if wal_level != "logical" {
            return Err(ConnectError(format!(
                "Postgres server wal_level property must be 'logical' but is: '{wal_level}'"
            )));
        }
        let offset = offsets.offset(&self.partition());
        let snapshot_done = offset.as_ref().is_some_and(|o| {
            o.get("snapshot").is_none_or(|s| s == &Json::Bool(false))
                || o.get("snapshot_completed") == Some(&Json::Bool(true))
                || o.get("last_snapshot_record") == Some(&Json::Bool(true))
        });
        let tables = self.captured_tables().await?;
        self.ensure_publication(&tables).await?;
        let client = self.sql.as_ref().expect("connected");
        let slot = text_rows(
            client,
            &format!(
                "SELECT plugin::text, confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = {} AND database = current_database()",
                quote_literal(&settings.slot)
            ),
        )
        .await?;
        let slot_exists = !slot.is_empty();
        if let Some(row) = slot.first()
            && row.first().cloned().flatten().as_deref() != Some("pgoutput")
        {
            return Err(ConnectError(format!(
                "replication slot {} exists with plugin {:?}, not pgoutput",
                settings.slot,
                row.first().cloned().flatten()
            )));
        }
        let snapshot = match settings.snapshot {
            SnapshotMode::Always => true,
            SnapshotMode::NoData => false,
            SnapshotMode::Initial | SnapshotMode::InitialOnly => !snapshot_done,
            SnapshotMode::WhenNeeded => !snapshot_done || !slot_exists,
        };
        if let Some(o) = offset.as_ref().filter(|_| snapshot_done) {
            let lsn_proc = offset_number(o, "lsn_proc")
                .or_else(|| offset_number(o, "lsn"))
                .unwrap_or(0);
            self.resume = Resume {
                last_commit: offset_number(o, "lsn_commit").unwrap_or(0),
                xid: offset_number(o, "txId").and_then(|x| u32::try_from(x & 0xffff_ffff).ok()),
                // A BEGIN record was the last one in Kafka: its transaction's first event,
                // at the same LSN, was not.
                lsn_proc: if o.get("messageType").and_then(Json::as_str) == Some("BEGIN") {
                    lsn_proc.saturating_sub(1)
                } else {
                    lsn_proc
                },
            };
            self.last_commit = self.resume.last_commit;
        } else if offset.is_some() && !snapshot_done && !snapshot {
            tracing::warn!(
                "the previous snapshot did not finish and snapshot.mode does not snapshot again: streaming from the slot"
            );
        }
        if !slot_exists
            && offset.is_some()
            && snapshot_done
            && settings.snapshot != SnapshotMode::WhenNeeded
        {
            tracing::warn!(
                "replication slot {} does not exist although an offset was stored: it is created now and changes made while it was missing are not captured (snapshot.mode=when_needed snapshots again in that case)",
                settings.slot
            );
        }
        let mut stream = ReplicationClient::connect_gated(Self::replication_config(&settings))
            .await
            .map_err(|e| connect_error("opening the replication connection failed", e))?;
        let mut exported = None;
        let mut consistent = 0;
        if !slot_exists {
            let rows = stream
                .simple_query(&format!(
                    "CREATE_REPLICATION_SLOT {} LOGICAL pgoutput EXPORT_SNAPSHOT",
                    quote_ident(&settings.slot)
                ))
                .await
                .map_err(|e| {
                    connect_error(
                        &format!("creating replication slot {} failed", settings.slot),
                        e,
                    )
                })?;
            let row = rows.into_iter().next().unwrap_or_default();
            let text = |i: usize| {
                row.get(i)
                    .cloned()
                    .flatten()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            };
            consistent = text(1).and_then(|l| Lsn::parse(&l).ok()).map_or(0, |l| l.0);
            exported = text(2);
            tracing::info!(slot = %settings.slot, consistent_point = %Lsn(consistent), "created replication slot");
        }
        self.stream = Some(stream);
        if snapshot {
            let client = self.sql.as_ref().expect("connected");
            client
                .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                .await
                .map_err(|e| connect_error("starting the snapshot transaction failed", e))?;
            match &exported {
                Some(name) => client
                    .batch_execute(&format!("SET TRANSACTION SNAPSHOT {}", quote_literal(name)))
                    .await
                    .map_err(|e| connect_error("importing the slot's snapshot failed", e))?,
                None => {
                    // The slot existed: what the snapshot saw is skipped when streamed.
                    let rows = text_rows(client, "SELECT pg_current_snapshot()::text").await?;
                    self.visibility = rows
                        .first()
                        .and_then(|r| r.first().cloned().flatten())
                        .and_then(|t| Visibility::parse(&t));
                    self.resume = Resume::default();
                    self.last_commit = 0;
                }
            }
            // As Debezium: the snapshot's position and transaction, read inside it.
            let rows = text_rows(
                client,
                "SELECT pg_current_wal_lsn()::text, pg_current_xact_id()::text",
            )
            .await?;
            let row = rows.into_iter().next().unwrap_or_default();
            let lsn = row
                .first()
                .cloned()
                .flatten()
                .and_then(|l| Lsn::parse(&l).ok())
                .map_or(consistent, |l| l.0);
            let xid = row
                .get(1)
                .cloned()
                .flatten()
                .and_then(|x| x.parse().ok())
                .unwrap_or(0);
            self.phase = Some(Phase::Snapshot(Box::new(SnapshotRun {
                tables: snapshot_order(&settings, tables).into(),
                current: None,
                new_table: false,
                held: None,
                held_first_in_table: false,
                first: true,
                lsn,
                xid,
                started_micros: now_micros(),
            })));
        } else {
            self.start_streaming().await?;
        }
        Ok(())
    }

    async fn start_streaming(&mut self) -> Result<(), ConnectError> {
        if self.settings().snapshot == SnapshotMode::InitialOnly {
            self.phase = Some(Phase::Finished);
            return Ok(());
        }
        let stream = self.stream.as_mut().expect("opened");
        stream
            .start()
            .await
            .map_err(|e| connect_error("START_REPLICATION failed", e))?;
        stream.wait_started().await.map_err(|e| {
            ConnectError(format!(
                "Streaming from replication slot {} (publication {}) failed to start: {e}",
                self.settings.as_ref().expect("started").slot,
                self.settings.as_ref().expect("started").publication
            ))
        })?;
        self.phase = Some(Phase::Streaming);
        Ok(())
    }

    fn snapshot_offset(run: &SnapshotRun, last: bool) -> Map<String, Json> {
        let mut o = Map::new();
        o.insert("last_snapshot_record".into(), Json::Bool(last));
        o.insert("lsn".into(), Json::from(run.lsn));
        o.insert("txId".into(), Json::from(run.xid));
        o.insert("ts_usec".into(), Json::from(run.started_micros));
        o.insert("snapshot".into(), Json::String("INITIAL".into()));
        o.insert("snapshot_completed".into(), Json::Bool(last));
        o
    }

    fn snapshot_record(
        &self,
        run: &SnapshotRun,
        table: &Table,
        row: Struct,
        marker: &str,
    ) -> Record {
        let last = marker == "last";
        let source = self.source(
            table,
            run.started_micros,
            marker,
            Some(run.xid),
            Some(run.lsn),
            Some(format!("[null,\"{}\"]", run.lsn)),
        );
        self.event(
            table,
            "r",
            None,
            Some(row),
            source,
            None,
            Self::snapshot_offset(run, last),
        )
    }

    /// Emits the held row, now that what follows it is known: `next_table` is the table
    /// of the next row (`None`: the snapshot ended).
    fn release_held(
        &self,
        run: &mut SnapshotRun,
        next_table: Option<&TableRef>,
        out: &mut Vec<Record>,
    ) {
        let Some((table, row)) = run.held.take() else {
            return;
        };
        let marker = match next_table {
            None => "last",
            Some(next) if !Arc::ptr_eq(next, &table) => "last_in_data_collection",
            _ if run.first => "first",
            _ if run.held_first_in_table => "first_in_data_collection",
            _ => "true",
        };
        run.first = false;
        out.push(self.snapshot_record(run, &table, row, marker));
    }

    /// The next batch of snapshot records: the tables in turn through a cursor, one row
    /// held back until the next tells which of Debezium's markers it gets.
    async fn poll_snapshot(
        &mut self,
        mut run: Box<SnapshotRun>,
    ) -> Result<Vec<Record>, ConnectError> {
        let batch = self.settings().max_batch_size;
        let modes = self.settings().modes;
        let mut out = Vec::new();
        while out.len() < batch {
            let Some(table) = run.current.clone() else {
                let Some(next) = run.tables.pop_front() else {
                    self.release_held(&mut run, None, &mut out);
                    let client = self.sql.as_ref().expect("connected");
                    client.batch_execute("COMMIT").await.map_err(|e| {
                        connect_error("committing the snapshot transaction failed", e)
                    })?;
                    tracing::info!("snapshot done");
                    self.start_streaming().await?;
                    return Ok(out);
                };
                let client = self.sql.as_ref().expect("connected");
                let columns: Vec<String> =
                    next.columns.iter().map(|c| quote_ident(&c.name)).collect();
                client
                    .batch_execute(&format!(
                        "DECLARE sluice_snapshot NO SCROLL CURSOR FOR SELECT {} FROM {}.{}",
                        columns.join(", "),
                        quote_ident(&next.schema_name),
                        quote_ident(&next.name)
                    ))
                    .await
                    .map_err(|e| connect_error(&format!("reading {} failed", next.id()), e))?;
                run.new_table = true;
                run.current = Some(next);
                continue;
            };
            let client = self.sql.as_ref().expect("connected");
            let rows = text_rows(
                client,
                &format!("FETCH {} FROM sluice_snapshot", batch.max(256)),
            )
            .await?;
            if rows.is_empty() {
                client
                    .batch_execute("CLOSE sluice_snapshot")
                    .await
                    .map_err(|e| connect_error("closing the snapshot cursor failed", e))?;
                run.current = None;
                continue;
            }
            for texts in rows {
                let datums: Vec<Datum> = texts
                    .into_iter()
                    .map(|t| t.map_or(Datum::Null, Datum::Text))
                    .collect();
                let row = table.row(&datums, &modes).map_err(ConnectError)?;
                self.release_held(&mut run, Some(&table), &mut out);
                run.held_first_in_table = std::mem::take(&mut run.new_table);
                run.held = Some((table.clone(), row));
            }
        }
        self.phase = Some(Phase::Snapshot(run));
        Ok(out)
    }

    /// A streamed event's offset, in Debezium's shape: `lsn_proc` and `lsn` the event's
    /// LSN, `lsn_commit` the end of the last transaction done (for COMMIT, its own),
    /// `messageType`, the transaction and, with transaction metadata, its per-table
    /// counts.
    fn stream_offset(&self, lsn: u64, message_type: &str) -> Map<String, Json> {
        let tx = self.transaction.as_ref();
        let mut o = Map::new();
        if self.settings().transaction_metadata
            && let Some(tx) = tx
        {
            o.insert("transaction_id".into(), Json::String(tx.xid.to_string()));
            for (table, n) in &tx.per_table {
                o.insert(
                    format!("transaction_data_collection_order_{table}"),
                    Json::from(*n),
                );
            }
        }
        o.insert("lsn_proc".into(), Json::from(lsn));
        o.insert("messageType".into(), Json::String(message_type.into()));
        o.insert("lsn_commit".into(), Json::from(self.last_commit));
        o.insert("lsn".into(), Json::from(lsn));
        if let Some(tx) = tx {
            o.insert("txId".into(), Json::from(tx.xid));
            o.insert("ts_usec".into(), Json::from(tx.commit_micros));
        }
        o
    }

    async fn relation(&mut self, r: pgoutput::Relation) -> Result<(), ConnectError> {
        if !self.settings().captures(&r.namespace, &r.name) {
            self.relations.remove(&r.oid);
            return Ok(());
        }
        let columns = r
            .columns
            .iter()
            .map(|c| (c.name.clone(), c.type_oid, c.type_modifier))
            .collect();
        let table = self
            .build_table(&r.oid.to_string(), &r.namespace, &r.name, columns)
            .await?;
        self.relations.insert(r.oid, table);
        Ok(())
    }

    /// One change of the streamed transaction as records (none if skipped), preceded
    /// by the transaction's BEGIN record when it is its first event.
    fn change(
        &mut self,
        lsn: u64,
        message: Message,
        out: &mut Vec<Record>,
    ) -> Result<(), ConnectError> {
        let Some(tx) = self.transaction.as_ref() else {
            return Err(ConnectError("a change outside a transaction".into()));
        };
        if tx.skip || tx.skip_through.is_some_and(|through| lsn <= through) {
            return Ok(());
        }
        let (xid, commit_micros) = (tx.xid, tx.commit_micros);
        let settings = self.settings().clone();
        let modes = settings.modes;
        let skipped = &settings.skipped;
        let row = |table: &Table, datums: &[Datum]| table.row(datums, &modes).map_err(ConnectError);
        let mut emitted: Vec<Change> = Vec::new();
        let key_header = |name: &str, key: &Struct| Header {
            key: name.to_string(),
            value: Some(bytes::Bytes::from(struct_json(key).to_string())),
        };
        match message {
            Message::Insert { relation, new } => {
                let Some(table) = self.relations.get(&relation).cloned() else {
                    return Ok(());
                };
                if !skipped.contains(&'c') {
                    let after = row(&table, &new.0)?;
                    emitted.push((table, "c", "INSERT", None, Some(after), Vec::new()));
                }
            }
            Message::Update { relation, old, new } => {
                let Some(table) = self.relations.get(&relation).cloned() else {
                    return Ok(());
                };
                if !skipped.contains(&'u') {
                    let after = row(&table, &new.0)?;
                    let before = match &old {
                        Some((_, tuple)) => Some(row(&table, &tuple.0)?),
                        None => None,
                    };
                    let old_key = before.as_ref().and_then(|b| table.key(b));
                    let new_key = table.key(&after);
                    match (old_key, new_key) {
                        (Some(old_key), Some(new_key)) if old_key != new_key => {
                            // A changed primary key: a delete of the old key (and its
                            // tombstone), then a create of the new one, each naming the
                            // other key in a header.
                            let to_new = vec![key_header("__debezium.newkey", &new_key)];
                            let from_old = vec![key_header("__debezium.oldkey", &old_key)];
                            emitted.push((table.clone(), "d", "UPDATE", before, None, to_new));
                            emitted.push((table, "c", "UPDATE", None, Some(after), from_old));
                        }
                        _ => emitted.push((table, "u", "UPDATE", before, Some(after), Vec::new())),
                    }
                }
            }
            Message::Delete { relation, old } => {
                let Some(table) = self.relations.get(&relation).cloned() else {
                    return Ok(());
                };
                if !skipped.contains(&'d') {
                    let before = row(&table, &(old.1).0)?;
                    emitted.push((table, "d", "DELETE", Some(before), None, Vec::new()));
                }
            }
            Message::Truncate { relations, .. } if !skipped.contains(&'t') => {
                for oid in relations {
                    if let Some(table) = self.relations.get(&oid).cloned() {
                        emitted.push((table, "t", "TRUNCATE", None, None, Vec::new()));
                    }
                }
            }
            _ => {}
        }
        if !emitted.is_empty()
            && let Some(tx) = self.transaction.as_mut()
        {
            tx.last_lsn = Some(lsn);
        }
        for (table, op, message_type, before, after, headers) in emitted {
            if settings.transaction_metadata
                && let Some(tx) = self.transaction.as_mut()
                && tx.total == 0
            {
                tx.first_lsn = lsn;
                let offset = self.stream_offset(lsn, "BEGIN");
                let tx = self.transaction.as_ref().expect("in a transaction");
                let begin = self.transaction_record("BEGIN", tx, offset);
                self.unconfirmed.push_back((lsn, None));
                out.push(begin);
            }
            let block = self.transaction_block(&table, xid, lsn);
            let sequence = match self.last_commit {
                0 => format!("[null,\"{lsn}\"]"),
                commit => format!("[\"{commit}\",\"{lsn}\"]"),
            };
            let source = self.source(
                &table,
                commit_micros,
                "false",
                Some(i64::from(xid)),
                Some(lsn),
                Some(sequence),
            );
            let offset = self.stream_offset(lsn, message_type);
            let mut record = self.event(&table, op, before, after, source, block, offset);
            if op == "t" {
                record.key_schema = None;
                record.key = Value::Null;
            }
            let mut extra = headers;
            extra.append(&mut record.headers);
            record.headers = extra;
            self.unconfirmed.push_back((lsn, None));
            let tombstone =
                (op == "d" && settings.tombstones_on_delete).then(|| Self::tombstone(&record));
            out.push(record);
            if let Some(tombstone) = tombstone {
                self.unconfirmed.push_back((lsn, None));
                out.push(tombstone);
            }
        }
        Ok(())
    }

    /// The event's `transaction` block; counts the event in its transaction.
    fn transaction_block(&mut self, table: &Table, xid: u32, lsn: u64) -> Option<Struct> {
        if !self.settings().transaction_metadata {
            return None;
        }
        let tx = self.transaction.as_mut()?;
        tx.total += 1;
        let id = table.id();
        let count = match tx.per_table.iter_mut().find(|(t, _)| *t == id) {
            Some((_, n)) => {
                *n += 1;
                *n
            }
            None => {
                tx.per_table.push((id, 1));
                1
            }
        };
        let mut block = Struct::new(self.transaction_schema.clone().expect("started"));
        block.values[0] = Value::String(format!("{xid}:{lsn}"));
        block.values[1] = Value::Int64(tx.total);
        block.values[2] = Value::Int64(count);
        Some(block)
    }

    /// BEGIN / END records of the transaction metadata topic (BEGIN's id names the
    /// first event's LSN, END's the commit's).
    fn transaction_record(
        &self,
        status: &str,
        tx: &Transaction,
        offset: Map<String, Json>,
    ) -> Record {
        let prefix = &self.settings().prefix;
        let lsn = if status == "BEGIN" {
            tx.first_lsn
        } else {
            self.last_commit
        };
        let id = format!("{}:{lsn}", tx.xid);
        let end = (status == "END").then(|| {
            (
                tx.total,
                java_hash_map_order(&tx.per_table)
                    .into_iter()
                    .map(|(t, n)| (t.as_str(), *n))
                    .collect(),
            )
        });
        let ((key_schema, key), (value_schema, value)) =
            transaction_metadata(status, &id, end, tx.commit_micros.div_euclid(1000));
        let mut record = Record::new(
            format!("{prefix}.transaction"),
            Some(value_schema),
            Value::Struct(value),
        )
        .with_key(Some(key_schema), Value::Struct(key));
        record.source_partition = Some(self.partition());
        record.source_offset = Some(offset);
        record
    }

    /// The next batch of streamed records (waits up to `poll.interval.ms` for one).
    async fn poll_stream(&mut self) -> Result<Vec<Record>, ConnectError> {
        let batch = self.settings().max_batch_size;
        let poll_interval = self.settings().poll_interval;
        let transaction_metadata = self.settings().transaction_metadata;
        let mut out = Vec::new();
        let deadline = tokio::time::Instant::now() + poll_interval;
        loop {
            if out.len() >= batch {
                break;
            }
            let stream = self.stream.as_mut().expect("streaming");
            // Wait up to the poll interval for a first record; once some are in hand,
            // take only what is already there.
            let wait = if out.is_empty() {
                tokio::time::timeout_at(deadline, stream.recv()).await
            } else {
                tokio::time::timeout(Duration::from_millis(1), stream.recv()).await
            };
            let Ok(next) = wait else {
                break;
            };
            let event = match next {
                Ok(Some(e)) => e,
                Ok(None) => {
                    return Err(ConnectError("the replication stream ended".into()));
                }
                Err(e) if retriable(&e) => {
                    tracing::warn!(
                        "streaming from replication slot {} broke ({e}); reconnecting",
                        self.settings().slot
                    );
                    self.reconnect().await?;
                    continue;
                }
                Err(e) => return Err(self.stream_failure(&e)),
            };
            match event {
                ReplicationEvent::Begin {
                    final_lsn,
                    xid,
                    commit_time_micros,
                } => {
                    let final_lsn = final_lsn.0;
                    // Done before a restart: its commit precedes the end of the last
                    // transaction the offset names, or the snapshot already saw it.
                    let skip = final_lsn < self.resume.last_commit
                        || self.visibility.as_ref().is_some_and(|v| v.saw(xid));
                    let skip_through =
                        (self.resume.xid == Some(xid)).then_some(self.resume.lsn_proc);
                    self.transaction = Some(Transaction {
                        xid,
                        commit_micros: commit_time_micros + PG_EPOCH_MICROS,
                        skip,
                        skip_through,
                        first_lsn: 0,
                        last_lsn: None,
                        total: 0,
                        per_table: Vec::new(),
                    });
                }
                ReplicationEvent::XLogData {
                    wal_start, data, ..
                } => {
                    let message =
                        pgoutput::decode(&data).map_err(|e| ConnectError(e.to_string()))?;
                    match message {
                        Message::Relation(r) => self.relation(r).await?,
                        Message::Type { .. } | Message::Origin { .. } | Message::Other(_) => {}
                        change => self.change(wal_start.0, change, &mut out)?,
                    }
                }
                ReplicationEvent::Commit { end_lsn, .. } => {
                    let end = end_lsn.0;
                    self.last_commit = end.max(self.last_commit);
                    if let Some(tx) = self.transaction.as_ref()
                        && transaction_metadata
                        && !tx.skip
                        && tx.total > 0
                    {
                        let offset = self.stream_offset(end, "COMMIT");
                        out.push(self.transaction_record("END", tx, offset));
                        self.unconfirmed.push_back((end, None));
                    }
                    // The transaction a restart resumed inside is done; transactions
                    // replayed before it (the slot's position lags the offsets) leave the
                    // resume point alone.
                    if let Some(tx) = self.transaction.take()
                        && self.resume.xid == Some(tx.xid)
                    {
                        self.resume.xid = None;
                    }
                    // The transaction's end is flushed once everything handed out
                    // before it is confirmed (at once if nothing is in flight).
                    match self.unconfirmed.back_mut() {
                        Some(last) => last.1 = Some(end),
                        None => self.flush(end),
                    }
                }
                ReplicationEvent::KeepAlive { wal_end, .. } => {
                    // Nothing in flight and no transaction open: the server may let go
                    // of everything up to its WAL end.
                    if self.unconfirmed.is_empty() && self.transaction.is_none() {
                        self.flush(wal_end.0);
                    }
                }
                ReplicationEvent::Message { .. } | ReplicationEvent::StoppedAt { .. } => {}
            }
        }
        Ok(out)
    }

    fn stream_failure(&self, e: &PgWireError) -> ConnectError {
        let settings = self.settings();
        let text = e.to_string();
        let hint = if text.contains("does not exist") && text.contains("replication slot") {
            " (the slot was dropped: restarting the task creates it again, and changes made while it was missing are lost unless snapshot.mode=when_needed snapshots again)"
        } else {
            ""
        };
        ConnectError(format!(
            "Streaming from replication slot {} (publication {}) failed: {text}{hint}",
            settings.slot, settings.publication
        ))
    }

    /// After the connection to the server broke mid-stream (a restart of the database,
    /// say): connects again, as often as it takes with a backoff up to 10 s, and resumes
    /// from the slot, skipping what this task already handed out. Wrong credentials, a
    /// missing slot and other refusals are not retried.
    async fn reconnect(&mut self) -> Result<(), ConnectError> {
        if let Some(stream) = self.stream.take() {
            stream.stop();
        }
        // Resume after the transactions handed out whole and, in the open one, after
        // its last change handed out.
        self.resume = Resume {
            last_commit: self.last_commit,
            xid: self
                .transaction
                .as_ref()
                .filter(|t| t.last_lsn.is_some())
                .map(|t| t.xid),
            lsn_proc: self
                .transaction
                .as_ref()
                .and_then(|t| t.last_lsn)
                .unwrap_or(0),
        };
        self.transaction = None;
        self.relations.clear();
        let settings = self.settings().clone();
        let mut delay = Duration::from_millis(500);
        loop {
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
            if self.sql.as_ref().is_none_or(Client::is_closed) {
                match Self::connect_sql(&settings).await {
                    Ok(client) => self.sql = Some(client),
                    Err(e) if e.0.contains("password") || e.0.contains("authentication") => {
                        return Err(e);
                    }
                    Err(e) => {
                        tracing::warn!("reconnecting to PostgreSQL: {e}");
                        continue;
                    }
                }
            }
            let mut stream =
                match ReplicationClient::connect_gated(Self::replication_config(&settings)).await {
                    Ok(stream) => stream,
                    Err(e) if retriable(&e) => {
                        tracing::warn!("reconnecting the replication stream: {e}");
                        continue;
                    }
                    Err(e) => return Err(self.stream_failure(&e)),
                };
            let started = match stream.start().await {
                Ok(()) => stream.wait_started().await,
                Err(e) => Err(e),
            };
            match started {
                Ok(()) => {
                    tracing::info!(slot = %settings.slot, "replication stream reconnected");
                    self.stream = Some(stream);
                    return Ok(());
                }
                Err(e) if retriable(&e) => {
                    tracing::warn!("reconnecting the replication stream: {e}");
                }
                Err(e) => return Err(self.stream_failure(&e)),
            }
        }
    }

    fn flush(&mut self, lsn: u64) {
        if let Some(stream) = &self.stream
            && self.pending_flush.is_none_or(|p| lsn > p)
        {
            self.pending_flush = Some(lsn);
            stream.update_applied_lsn(Lsn(lsn));
        }
    }
}

impl SourceTask for PostgresTask {
    fn start<'a>(
        &'a mut self,
        config: &'a Props,
        offsets: &'a dyn OffsetReader,
    ) -> BoxFuture<'a, Result<(), ConnectError>> {
        Box::pin(async move {
            let settings = Settings::parse(config).map_err(|e| ConnectError(e.message()))?;
            self.sql = Some(Self::connect_sql(&settings).await?);
            self.run_id = uuid::Uuid::now_v7().to_string();
            self.settings = Some(settings);
            self.source_schema = Some(tables::source_schema());
            self.transaction_schema = Some(tables::transaction_block_schema());
            self.begin(offsets).await
        })
    }

    fn poll(&mut self) -> BoxFuture<'_, Result<Vec<Record>, ConnectError>> {
        Box::pin(async move {
            match self.phase.take() {
                Some(Phase::Snapshot(run)) => self.poll_snapshot(run).await,
                Some(Phase::Streaming) => {
                    self.phase = Some(Phase::Streaming);
                    self.poll_stream().await
                }
                Some(Phase::Finished) | None => {
                    self.phase = Some(Phase::Finished);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok(Vec::new())
                }
            }
        })
    }

    fn commit(&mut self, offsets: &[&Map<String, Json>]) {
        let Some(lsn_proc) = offsets
            .iter()
            .filter(|o| o.get("snapshot").is_none())
            .filter_map(|o| offset_number(o, "lsn_proc"))
            .max()
        else {
            return;
        };
        // Records are confirmed in the order they were handed out: everything up to the
        // last one at this position is.
        let Some(last) = self.unconfirmed.iter().rposition(|(l, _)| *l == lsn_proc) else {
            return;
        };
        let mut flush = None;
        for (_, end) in self.unconfirmed.drain(..=last) {
            if end.is_some() {
                flush = end;
            }
        }
        if let Some(lsn) = flush {
            self.flush(lsn);
        }
    }

    fn stop(&mut self) {
        if let Some(stream) = &self.stream {
            stream.stop();
        }
        // `slot.drop.on.stop`: once the walsender let go of the slot.
        if let (Some(settings), Some(client)) = (self.settings.as_ref(), self.sql.take())
            && settings.slot_drop_on_stop
        {
            let slot = settings.slot.clone();
            tokio::spawn(async move {
                for _ in 0..50 {
                    let dropped = client
                        .execute("SELECT pg_drop_replication_slot($1)", &[&slot])
                        .await;
                    match dropped {
                        Ok(_) => return,
                        Err(e) => tracing::debug!("dropping replication slot {slot}: {e}"),
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                tracing::warn!("replication slot {slot} was not dropped: it stayed active");
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_sees_what_committed_before_it_and_nothing_in_progress() {
        let v = Visibility::parse("100:105:101,103").unwrap();
        assert!(v.saw(99));
        assert!(v.saw(100));
        assert!(!v.saw(101));
        assert!(v.saw(102));
        assert!(!v.saw(103));
        assert!(v.saw(104));
        assert!(!v.saw(105));
        assert!(!v.saw(200));
        // Full ids past 2^32: the 32-bit xid is placed in the epoch nearest xmax.
        let big = (1u64 << 32) + 10;
        let v = Visibility::parse(&format!("{}:{}:", big - 20, big)).unwrap();
        assert!(v.saw(5));
        assert!(!v.saw(10));
        assert!(v.saw(u32::MAX - 3), "the previous epoch's xid is older");
    }
}
