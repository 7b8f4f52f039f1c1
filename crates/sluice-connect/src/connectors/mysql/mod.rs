//! Debezium's MySQL/MariaDB connector (`io.debezium.connector.mysql.MySqlConnector`,
//! and `io.debezium.connector.mariadb.MariaDbConnector`), native: a consistent snapshot
//! of the captured tables (`op: r`), then the binlog read as a replica
//! (`database.server.id`), written as the change events, schema change events, schema
//! history and offsets Debezium writes.
//!
//! - **Snapshot.** `FLUSH TABLES WITH READ LOCK`, then a `START TRANSACTION WITH
//!   CONSISTENT SNAPSHOT` in REPEATABLE READ, the binlog position (`SHOW MASTER STATUS`,
//!   MariaDB's `@@gtid_binlog_pos`) and every table definition of the included
//!   databases (`SHOW CREATE TABLE`, into the DDL model `ddl`), `UNLOCK TABLES`, then
//!   the rows of each captured table read in that transaction: exactly the database as
//!   of the position streaming starts from. The lock is held only while the position
//!   and the definitions are read.
//! - **Streaming.** `COM_BINLOG_DUMP` through `mysql_async` as replica `server.id`,
//!   announcing MariaDB's GTID capability; on MariaDB the position is a GTID set
//!   (`@slave_connect_state`), elsewhere a file and position. Rows events are mapped
//!   through the DDL model, which DDL in the binlog keeps current.
//! - **Schema history.** Every DDL of an included database is written to
//!   `schema.history.internal.kafka.topic` (acknowledged by the broker before anything
//!   after it is emitted) and, with `include.schema.changes`, to the `<prefix>` topic.
//!   A restarted task rebuilds its DDL model from the history up to its offset.
//! - **Offsets** are Debezium 2.6's (MariaDB adapter): `file`/`pos` of the current
//!   transaction's start, `gtids` completed before it, `event` events of it already
//!   handled, `row` rows of the current rows event already emitted. A restarted task
//!   skips exactly those: nothing acknowledged is emitted again except the last
//!   uncommitted window (at-least-once), nothing is skipped.

pub mod binlog;
pub mod config;
pub mod ddl;
pub mod history;
mod tables;
pub mod values;

use std::collections::{BTreeMap, HashMap};
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use mysql_async::binlog::events::{Event, EventData, RowsEventData};
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStream, BinlogStreamRequest, Conn, Opts, OptsBuilder, Row};
use serde_json::{Map, Value as Json};
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, ErrorCode, NewTopic, OffsetSpec, TopicPartition};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use self::binlog::{Gtid, GtidSet};
use self::config::{Settings, SnapshotMode};
use self::history::{ChangeType, TableChange};
use self::tables::{Captured, quote_ident};
use super::debezium::{java_hash_map_order, struct_json, transaction_metadata};
use super::{
    BoxFuture, ConfigKeyDef, ConnectError, ConnectorPlugin, Kind, OffsetReader, SourceTask,
};
use crate::data::{Header, Record, SchemaRef, Struct, Value};
use crate::{ConfigError, Props};

/// `io.debezium.connector.mysql.MySqlConnector`.
pub struct MySqlConnector;
/// `io.debezium.connector.mariadb.MariaDbConnector` (Debezium 3.x's MariaDB
/// connector; the same source, `source.connector` = `mariadb`).
pub struct MariaDbConnector;

macro_rules! plugin {
    ($ty:ty, $class:expr, $task:expr) => {
        impl ConnectorPlugin for $ty {
            fn class(&self) -> &'static str {
                $class
            }

            fn task_class(&self) -> &'static str {
                $task
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
                // One binlog, one reader: Debezium's MySQL connector runs one task.
                vec![config.clone()]
            }

            fn exactly_once_support(&self) -> bool {
                true
            }

            fn source_task(&self) -> Option<Box<dyn SourceTask>> {
                Some(Box::new(MySqlTask::default()))
            }
        }
    };
}

plugin!(
    MySqlConnector,
    "io.debezium.connector.mysql.MySqlConnector",
    "io.debezium.connector.mysql.MySqlConnectorTask"
);
plugin!(
    MariaDbConnector,
    "io.debezium.connector.mariadb.MariaDbConnector",
    "io.debezium.connector.mariadb.MariaDbConnectorTask"
);

type Batch = Result<Vec<Record>, ConnectError>;

/// The task: the capture runs in its own tokio task and hands batches over a bounded
/// channel, so a slow Kafka holds the binlog reader back instead of growing memory.
#[derive(Default)]
pub struct MySqlTask {
    batches: Option<mpsc::Receiver<Batch>>,
    capture: Option<JoinHandle<()>>,
    poll_interval: Duration,
    max_batch_size: usize,
}

impl Drop for MySqlTask {
    fn drop(&mut self) {
        if let Some(capture) = self.capture.take() {
            capture.abort();
        }
    }
}

fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

fn connect_error(what: &str, e: impl std::fmt::Display) -> ConnectError {
    ConnectError(format!("{what}: {e}"))
}

/// A database failure the task cannot get past by reconnecting (refused credentials,
/// missing privileges, a position the server no longer has).
fn fatal_server_error(e: &mysql_async::Error) -> bool {
    match e {
        mysql_async::Error::Server(s) => matches!(
            s.code,
            // Access denied, unknown database, no privilege, binlog position/GTID gone.
            1044 | 1045 | 1049 | 1142 | 1227 | 1236 | 1698 | 1950 | 1951
        ),
        _ => false,
    }
}

fn server_message(e: &mysql_async::Error) -> String {
    match e {
        mysql_async::Error::Server(s) => format!("{} (error {})", s.message, s.code),
        other => other.to_string(),
    }
}

fn opts(settings: &Settings) -> Opts {
    OptsBuilder::default()
        .ip_or_hostname(settings.host.clone())
        .tcp_port(settings.port)
        .user(Some(settings.user.clone()))
        .pass(Some(settings.password.clone()))
        .prefer_socket(false)
        .init(vec!["SET time_zone = '+00:00'", "SET NAMES utf8mb4"])
        .into()
}

async fn connect(settings: &Settings) -> Result<Conn, ConnectError> {
    match tokio::time::timeout(settings.connect_timeout, Conn::new(opts(settings))).await {
        Err(_) => Err(ConnectError(format!(
            "Unable to connect to {}:{} within connect.timeout.ms={}",
            settings.host,
            settings.port,
            settings.connect_timeout.as_millis()
        ))),
        Ok(Err(e)) => Err(ConnectError(format!(
            "Unable to connect to {}:{} as {}: {}",
            settings.host,
            settings.port,
            settings.user,
            server_message(&e)
        ))),
        Ok(Ok(conn)) => Ok(conn),
    }
}

/// The text of each column of each row of a query (None: NULL).
async fn text_rows(conn: &mut Conn, sql: &str) -> Result<Vec<Vec<Option<String>>>, ConnectError> {
    let rows: Vec<Row> = conn
        .query(sql)
        .await
        .map_err(|e| connect_error(&format!("{sql} failed"), server_message(&e)))?;
    Ok(rows
        .into_iter()
        .map(|row| {
            row.unwrap_raw()
                .into_iter()
                .map(|v| v.unwrap_or(mysql_async::Value::NULL))
                .map(|v| match v {
                    mysql_async::Value::NULL => None,
                    mysql_async::Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    other => Some(other.as_sql(true).trim_matches('\'').to_string()),
                })
                .collect()
        })
        .collect())
}

async fn one_value(conn: &mut Conn, sql: &str) -> Result<Option<String>, ConnectError> {
    Ok(text_rows(conn, sql)
        .await?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten()))
}

/// A binlog position as Debezium's offsets carry it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Position {
    file: String,
    pos: u64,
    /// MariaDB: the GTID set completed before `pos`.
    gtids: Option<GtidSet>,
}

impl Position {
    /// Whether a history record at `self` (snapshot records at the snapshot position
    /// included) lies before `offset`, so its DDL is part of the offset's schema.
    fn history_before(&self, snapshot: bool, offset: &Position) -> bool {
        let a = (binlog::file_number(&self.file), self.pos);
        let b = (binlog::file_number(&offset.file), offset.pos);
        a < b || (a == b && snapshot)
    }
}

/// Where a restarted (or reconnected) reader resumes: the transaction at `position`,
/// skipping its first `events` events and `rows` rows of the rows event after them.
#[derive(Debug, Clone, Default)]
struct Resume {
    position: Position,
    events: u64,
    rows: u64,
}

fn offset_u64(offset: &Map<String, Json>, key: &str) -> u64 {
    offset.get(key).and_then(Json::as_u64).unwrap_or(0)
}

fn parse_offset(offset: &Map<String, Json>) -> Result<(Resume, bool), ConnectError> {
    let gtids =
        match offset.get("gtids").and_then(Json::as_str) {
            Some(text) => Some(GtidSet::parse(text).map_err(|e| {
                ConnectError(format!("the stored offset's gtids cannot be read: {e}"))
            })?),
            None => None,
        };
    let resume = Resume {
        position: Position {
            file: offset
                .get("file")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            pos: offset_u64(offset, "pos"),
            gtids,
        },
        events: offset_u64(offset, "event"),
        rows: offset_u64(offset, "row"),
    };
    let snapshot_running = offset.get("snapshot") == Some(&Json::Bool(true));
    Ok((resume, snapshot_running))
}

/// The schema history topic: Debezium's `KafkaSchemaHistory` (one partition, never
/// deleted, each record a JSON document acknowledged before the capture goes on).
struct HistoryTopic {
    topic: String,
    bootstrap: Vec<String>,
    producer: Producer,
}

impl HistoryTopic {
    async fn open(settings: &Settings) -> Result<HistoryTopic, ConnectError> {
        let kafka = |e: sluice_client::Error| connect_error("schema history topic", e);
        let admin = Admin::connect(ClientConfig::new(settings.history_bootstrap.clone()))
            .await
            .map_err(kafka)?;
        let results = admin
            .create_topics(
                &[NewTopic {
                    name: settings.history_topic.clone(),
                    num_partitions: Some(1),
                    replication_factor: None,
                    configs: vec![
                        ("cleanup.policy".into(), "delete".into()),
                        ("retention.ms".into(), i64::MAX.to_string()),
                        ("retention.bytes".into(), "-1".into()),
                    ],
                }],
                false,
            )
            .await
            .map_err(kafka)?;
        match results.get(&settings.history_topic) {
            Some(Ok(_)) | None => {}
            Some(Err(e)) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => {}
            Some(Err(e)) => return Err(connect_error("creating the schema history topic", e)),
        }
        let producer = Producer::connect(
            ProducerConfig::builder(settings.history_bootstrap.clone())
                .client_id(&format!("{}-schemahistory", settings.prefix))
                .linger_ms(0)
                .build()
                .map_err(|e| connect_error("schema history producer", e))?,
        )
        .await
        .map_err(|e| connect_error("schema history producer", e))?;
        Ok(HistoryTopic {
            topic: settings.history_topic.clone(),
            bootstrap: settings.history_bootstrap.clone(),
            producer,
        })
    }

    /// Writes one history document and waits for the broker's acknowledgement.
    async fn write(&self, document: String) -> Result<(), ConnectError> {
        let delivery = self
            .producer
            .send(ProducerRecord::new(
                self.topic.clone(),
                Bytes::from(document),
            ))
            .await
            .map_err(|e| connect_error("writing the schema history", e))?;
        tokio::time::timeout(Duration::from_secs(60), delivery)
            .await
            .map_err(|_| ConnectError("writing the schema history timed out".into()))?
            .map_err(|e| connect_error("writing the schema history", e))?;
        Ok(())
    }

    /// Every document in the topic, oldest first.
    async fn read_all(&self) -> Result<Vec<Json>, ConnectError> {
        let kafka = |e: sluice_client::Error| connect_error("reading the schema history", e);
        let admin = Admin::connect(ClientConfig::new(self.bootstrap.clone()))
            .await
            .map_err(kafka)?;
        let tp = TopicPartition::new(self.topic.clone(), 0);
        let mut specs = BTreeMap::new();
        specs.insert(tp.clone(), OffsetSpec::Latest);
        let deadline = Instant::now() + Duration::from_secs(30);
        let end = loop {
            let ends = admin.list_offsets(&specs).await.map_err(kafka)?;
            match ends.get(&tp) {
                Some(Ok(info)) => break info.offset,
                _ if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => {
                    return Err(ConnectError(format!(
                        "the end of the schema history topic {} cannot be read: {other:?}",
                        self.topic
                    )));
                }
            }
        };
        let mut documents = Vec::new();
        if end <= 0 {
            return Ok(documents);
        }
        let mut config = ConsumerConfig::new(self.bootstrap.clone());
        for (k, v) in [
            ("enable.auto.commit", "false"),
            ("auto.offset.reset", "earliest"),
            ("fetch.max.wait.ms", "100"),
        ] {
            config.set(k, v).map_err(kafka)?;
        }
        let mut consumer = Consumer::new(config).await.map_err(kafka)?;
        consumer.assign([tp.clone()]).map_err(kafka)?;
        consumer.seek(&tp, 0).map_err(kafka)?;
        let mut next = 0;
        while next < end {
            if Instant::now() > deadline + Duration::from_secs(60) {
                return Err(ConnectError(format!(
                    "reading the schema history topic {} to offset {end} timed out at {next}",
                    self.topic
                )));
            }
            for record in consumer
                .poll(Duration::from_millis(500))
                .await
                .map_err(kafka)?
            {
                next = record.offset + 1;
                let Some(value) = record.value else { continue };
                let document: Json = serde_json::from_slice(&value).map_err(|e| {
                    ConnectError(format!(
                        "schema history record at offset {} is not JSON: {e}",
                        record.offset
                    ))
                })?;
                documents.push(document);
            }
        }
        let _ = consumer.close().await;
        Ok(documents)
    }
}

/// The transaction being read from the binlog.
#[derive(Debug, Clone)]
struct Transaction {
    /// MariaDB's GTID of the event group (None without GTIDs).
    gtid: Option<Gtid>,
    /// Where it starts (its GTID or BEGIN event) and the GTIDs completed before it.
    start: Position,
    /// Events of it handled (the GTID event counts).
    events: u64,
    thread: Option<u32>,
    /// Change events emitted, and per table in first-seen order.
    total: i64,
    per_table: Vec<(String, i64)>,
}

/// Everything the capture keeps while it runs.
struct Capture {
    settings: Settings,
    batches: mpsc::Sender<Batch>,
    mariadb: bool,
    tables: ddl::Tables,
    captured: HashMap<ddl::TableId, Arc<Captured>>,
    source_schema: SchemaRef,
    transaction_schema: SchemaRef,
    change_key_schema: SchemaRef,
    change_value_schema: SchemaRef,
    history: HistoryTopic,
    /// The last BEGIN/commit timestamp seen, for transaction records' `ts_ms`.
    last_event_ts: i64,
    /// Each database's default character set (`information_schema.schemata`): a table
    /// created without one has its database's, as Debezium records it.
    db_charsets: HashMap<String, String>,
    /// The row index of the last change event: Debezium's schema change events carry
    /// it as their `source.row` (its source info keeps the last row number).
    last_row: i32,
}

/// A snapshot's outcome: where streaming starts.
struct Snapshot {
    position: Position,
}

impl Capture {
    fn partition(&self) -> Map<String, Json> {
        let mut p = Map::new();
        p.insert("server".into(), Json::String(self.settings.prefix.clone()));
        p
    }

    async fn send(&self, records: Vec<Record>) -> Result<(), ConnectError> {
        if records.is_empty() {
            return Ok(());
        }
        self.batches
            .send(Ok(records))
            .await
            .map_err(|_| ConnectError("the task stopped".into()))
    }

    fn captured_table(&mut self, id: &ddl::TableId) -> Option<Arc<Captured>> {
        if !self.settings.captured(&id.database, &id.name) {
            return None;
        }
        if let Some(c) = self.captured.get(id) {
            return Some(c.clone());
        }
        let table = self.tables.get(id)?;
        let c = Arc::new(Captured::new(
            &self.settings.prefix,
            table,
            &self.settings.modes,
            &self.source_schema,
            &self.transaction_schema,
        ));
        self.captured.insert(id.clone(), c.clone());
        Some(c)
    }

    #[allow(clippy::too_many_arguments)]
    fn source(
        &self,
        ts_ms: i64,
        snapshot: &str,
        database: &str,
        table: Option<&str>,
        server_id: u32,
        gtid: Option<&Gtid>,
        file: &str,
        pos: u64,
        row: i32,
        thread: Option<u32>,
    ) -> Struct {
        let mut s = Struct::new(self.source_schema.clone());
        let v = &mut s.values;
        v[0] = Value::String(tables::DEBEZIUM_VERSION.into());
        v[1] = Value::String(
            if self.settings.mariadb_class {
                "mariadb"
            } else {
                "mysql"
            }
            .into(),
        );
        v[2] = Value::String(self.settings.prefix.clone());
        v[3] = Value::Int64(ts_ms);
        v[4] = Value::String(snapshot.into());
        v[5] = Value::String(database.into());
        v[6] = Value::Null;
        v[7] = Value::Int64(ts_ms.saturating_mul(1000));
        v[8] = Value::Int64(ts_ms.saturating_mul(1_000_000));
        v[9] = table.map_or(Value::Null, |t| Value::String(t.into()));
        v[10] = Value::Int64(i64::from(server_id));
        v[11] = gtid.map_or(Value::Null, |g| Value::String(g.to_string()));
        v[12] = Value::String(file.into());
        v[13] = Value::Int64(pos as i64);
        v[14] = Value::Int32(row);
        v[15] = thread.map_or(Value::Null, |t| Value::Int64(i64::from(t)));
        v[16] = Value::Null;
        s
    }

    /// A change event of `table`: envelope, key, offset.
    #[allow(clippy::too_many_arguments)]
    fn event(
        &self,
        table: &Captured,
        op: &str,
        before: Option<Struct>,
        after: Option<Struct>,
        source: Struct,
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
        v[2] = Value::Struct(source);
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
        record.source_partition = Some(self.partition());
        record.source_offset = Some(offset);
        record
    }

    fn tombstone(record: &Record) -> Record {
        let mut t = record.clone();
        t.value_schema = None;
        t.value = Value::Null;
        t
    }

    /// A DDL statement: the history record (written and acknowledged now) and, with
    /// `include.schema.changes`, the schema change event.
    #[allow(clippy::too_many_arguments)]
    async fn schema_change(
        &self,
        source: Struct,
        history_position: Map<String, Json>,
        offset: Map<String, Json>,
        database: &str,
        ddl: &str,
        changes: &[TableChange],
        out: &mut Vec<Record>,
    ) -> Result<(), ConnectError> {
        let ts_ms = now_micros().div_euclid(1000);
        let document = history::document(
            &self.settings.prefix,
            &history_position,
            ts_ms,
            database,
            ddl,
            changes,
        );
        self.history.write(document).await?;
        if self.settings.include_schema_changes {
            let value = history::value(
                &self.change_value_schema,
                source,
                ts_ms,
                database,
                ddl,
                changes,
            );
            let mut key = Struct::new(self.change_key_schema.clone());
            key.values[0] = Value::String(database.into());
            let mut record = Record::new(
                self.settings.prefix.clone(),
                Some(self.change_value_schema.clone()),
                Value::Struct(value),
            )
            .with_key(Some(self.change_key_schema.clone()), Value::Struct(key));
            record.source_partition = Some(self.partition());
            record.source_offset = Some(offset);
            out.push(record);
        }
        Ok(())
    }

    /// Rebuilds the DDL model from the history topic, up to `offset`.
    async fn recover(&mut self, offset: &Position) -> Result<usize, ConnectError> {
        let documents = self.history.read_all().await?;
        let mut applied = 0;
        for document in &documents {
            let position = document.get("position").and_then(Json::as_object);
            let (Some(position), Some(ddl)) =
                (position, document.get("ddl").and_then(Json::as_str))
            else {
                continue;
            };
            let at = Position {
                file: position
                    .get("file")
                    .and_then(Json::as_str)
                    .unwrap_or_default()
                    .to_string(),
                pos: offset_u64(position, "pos"),
                gtids: None,
            };
            let snapshot = position.get("snapshot") == Some(&Json::Bool(true));
            if !at.history_before(snapshot, offset) {
                continue;
            }
            let database = document
                .get("databaseName")
                .and_then(Json::as_str)
                .filter(|d| !d.is_empty());
            self.tables.apply(database, ddl).map_err(|e| {
                ConnectError(format!(
                    "the schema history holds DDL that cannot be read: {e}"
                ))
            })?;
            applied += 1;
        }
        if applied == 0 {
            return Err(ConnectError(format!(
                "The db history topic {} is missing or empty while an offset exists. You may \
                 attempt to recover it by reconfiguring the connector to snapshot.mode=recovery",
                self.history.topic
            )));
        }
        self.captured.clear();
        Ok(applied)
    }

    /// The included databases and their base tables, sorted.
    async fn list_tables(
        &self,
        conn: &mut Conn,
    ) -> Result<BTreeMap<String, Vec<String>>, ConnectError> {
        let mut out = BTreeMap::new();
        for row in text_rows(conn, "SHOW DATABASES").await? {
            let Some(Some(db)) = row.into_iter().next() else {
                continue;
            };
            if !self.settings.database_included(&db) {
                continue;
            }
            let mut names: Vec<String> = text_rows(
                conn,
                &format!(
                    "SHOW FULL TABLES IN {} WHERE Table_Type = 'BASE TABLE'",
                    quote_ident(&db)
                ),
            )
            .await?
            .into_iter()
            .filter_map(|r| r.into_iter().next().flatten())
            .collect();
            names.sort();
            out.insert(db, names);
        }
        Ok(out)
    }

    /// The schema part of a snapshot (or a recovery): every table definition of the
    /// included databases into the model, and Debezium's snapshot DDL records.
    async fn snapshot_schema(
        &mut self,
        conn: &mut Conn,
        position: &Position,
        tables: &BTreeMap<String, Vec<String>>,
        out: &mut Vec<Record>,
    ) -> Result<(), ConnectError> {
        let mut created = Vec::new();
        for (db, names) in tables {
            for name in names {
                let sql = format!(
                    "SHOW CREATE TABLE {}.{}",
                    quote_ident(db),
                    quote_ident(name)
                );
                let rows = text_rows(conn, &sql).await?;
                let Some(text) = rows
                    .into_iter()
                    .next()
                    .and_then(|r| r.into_iter().nth(1).flatten())
                else {
                    continue;
                };
                created.push((db.clone(), name.clone(), text));
            }
        }
        let charsets: HashMap<String, String> = text_rows(
            conn,
            "SHOW VARIABLES WHERE Variable_name IN ('character_set_server','collation_server')",
        )
        .await?
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            Some((r.next()??, r.next()??))
        })
        .collect();
        let schemata: HashMap<String, (String, String)> = text_rows(
            conn,
            "SELECT schema_name, default_character_set_name, default_collation_name FROM information_schema.schemata",
        )
        .await?
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            Some((r.next()??, (r.next()??, r.next()??)))
        })
        .collect();
        self.db_charsets = schemata
            .iter()
            .map(|(db, (charset, _))| (db.clone(), charset.clone()))
            .collect();
        self.tables = ddl::Tables::default();
        self.captured.clear();
        let ts_ms = now_micros().div_euclid(1_000_000) * 1000;
        let mut history_position = Map::new();
        history_position.insert("ts_sec".into(), Json::from(ts_ms / 1000));
        history_position.insert("file".into(), Json::String(position.file.clone()));
        history_position.insert("pos".into(), Json::from(position.pos));
        if let Some(gtids) = &position.gtids {
            history_position.insert("gtids".into(), Json::String(gtids.to_string()));
        }
        history_position.insert("snapshot".into(), Json::Bool(true));
        let offset = history_position.clone();
        let mut statements: Vec<(String, Option<String>, String, Vec<TableChange>)> = Vec::new();
        statements.push((
            String::new(),
            None,
            format!(
                "SET character_set_server={}, collation_server={}",
                charsets
                    .get("character_set_server")
                    .map_or("utf8mb4", String::as_str),
                charsets
                    .get("collation_server")
                    .map_or("utf8mb4_general_ci", String::as_str)
            ),
            vec![],
        ));
        for (db, names) in tables {
            for name in names {
                statements.push((
                    db.clone(),
                    Some(name.clone()),
                    format!(
                        "DROP TABLE IF EXISTS {}.{}",
                        quote_ident(db),
                        quote_ident(name)
                    ),
                    vec![TableChange {
                        kind: ChangeType::Drop,
                        id: ddl::TableId {
                            database: db.clone(),
                            name: name.clone(),
                        },
                        table: None,
                    }],
                ));
            }
        }
        for db in tables.keys() {
            let (charset, collation) = schemata
                .get(db)
                .cloned()
                .unwrap_or_else(|| ("utf8mb4".into(), "utf8mb4_general_ci".into()));
            statements.push((
                db.clone(),
                None,
                format!("DROP DATABASE IF EXISTS {}", quote_ident(db)),
                vec![],
            ));
            statements.push((
                db.clone(),
                None,
                format!(
                    "CREATE DATABASE {} CHARSET {charset} COLLATE {collation}",
                    quote_ident(db)
                ),
                vec![],
            ));
            statements.push((db.clone(), None, format!("USE {}", quote_ident(db)), vec![]));
            for (table_db, name, text) in created.iter().filter(|(d, _, _)| d == db) {
                self.tables.apply(Some(table_db), text).map_err(|e| {
                    ConnectError(format!("SHOW CREATE TABLE of {table_db}.{name}: {e}"))
                })?;
                let id = ddl::TableId {
                    database: table_db.clone(),
                    name: name.clone(),
                };
                let table = self.tables.get(&id).cloned();
                statements.push((
                    table_db.clone(),
                    Some(name.clone()),
                    text.clone(),
                    vec![TableChange {
                        kind: ChangeType::Create,
                        id,
                        table,
                    }],
                ));
            }
        }
        for (db, table, ddl, changes) in statements {
            let source = self.source(
                ts_ms,
                "true",
                &db,
                table.as_deref(),
                0,
                None,
                &position.file,
                position.pos,
                0,
                None,
            );
            self.schema_change(
                source,
                history_position.clone(),
                offset.clone(),
                &db,
                &ddl,
                &changes,
                out,
            )
            .await?;
        }
        Ok(())
    }

    /// Snapshot: lock, position, definitions, unlock, rows.
    async fn snapshot(&mut self, with_data: bool) -> Result<Snapshot, ConnectError> {
        let mut conn = connect(&self.settings).await?;
        let sql = |what: &'static str| {
            move |e: mysql_async::Error| connect_error(what, server_message(&e))
        };
        conn.query_drop("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .await
            .map_err(sql("setting REPEATABLE READ"))?;
        conn.query_drop("FLUSH TABLES WITH READ LOCK")
            .await
            .map_err(|e| {
                connect_error(
                    "FLUSH TABLES WITH READ LOCK (the connector's user needs the RELOAD privilege)",
                    server_message(&e),
                )
            })?;
        conn.query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
            .await
            .map_err(sql("starting the snapshot transaction"))?;
        let status = text_rows(&mut conn, "SHOW MASTER STATUS").await?;
        let Some(row) = status.into_iter().next() else {
            return Err(ConnectError(
                "SHOW MASTER STATUS returned nothing: the server must run with the binlog on (log_bin)".into(),
            ));
        };
        let mut row = row.into_iter();
        let file = row.next().flatten().unwrap_or_default();
        let pos: u64 = row
            .next()
            .flatten()
            .and_then(|p| p.parse().ok())
            .unwrap_or(4);
        let gtids = if self.mariadb {
            Some(
                GtidSet::parse(
                    &one_value(&mut conn, "SELECT @@global.gtid_binlog_pos")
                        .await?
                        .unwrap_or_default(),
                )
                .map_err(ConnectError)?,
            )
        } else {
            None
        };
        let position = Position { file, pos, gtids };
        let tables = self.list_tables(&mut conn).await?;
        let mut schema_records = Vec::new();
        self.snapshot_schema(&mut conn, &position, &tables, &mut schema_records)
            .await?;
        conn.query_drop("UNLOCK TABLES")
            .await
            .map_err(sql("UNLOCK TABLES"))?;
        self.send(schema_records).await?;
        if with_data {
            self.snapshot_rows(&mut conn, &position, &tables).await?;
        }
        conn.query_drop("COMMIT").await.map_err(sql("COMMIT"))?;
        let _ = conn.disconnect().await;
        Ok(Snapshot { position })
    }

    fn snapshot_offset(position: &Position, ts_sec: i64, done: bool) -> Map<String, Json> {
        let mut o = Map::new();
        o.insert("ts_sec".into(), Json::from(ts_sec));
        o.insert("file".into(), Json::String(position.file.clone()));
        o.insert("pos".into(), Json::from(position.pos));
        if let Some(gtids) = &position.gtids {
            o.insert("gtids".into(), Json::String(gtids.to_string()));
        }
        if !done {
            o.insert("snapshot".into(), Json::Bool(true));
        }
        o
    }

    /// The rows of every captured table, with Debezium's snapshot markers.
    async fn snapshot_rows(
        &mut self,
        conn: &mut Conn,
        position: &Position,
        tables: &BTreeMap<String, Vec<String>>,
    ) -> Result<(), ConnectError> {
        let mut order: Vec<ddl::TableId> = tables
            .iter()
            .flat_map(|(db, names)| {
                names.iter().map(|n| ddl::TableId {
                    database: db.clone(),
                    name: n.clone(),
                })
            })
            .filter(|id| self.settings.captured(&id.database, &id.name))
            .collect();
        order.sort_by_key(|id| (self.settings.tables.position(&id.to_string()), id.clone()));
        let batch_size = self.settings.max_batch_size;
        let modes = self.settings.modes;
        let mut batch = Vec::new();
        let count = order.len();
        for (index, id) in order.iter().enumerate() {
            let Some(table) = self.captured_table(id) else {
                continue;
            };
            let first_table = index == 0;
            let last_table = index + 1 == count;
            let ts_ms = now_micros().div_euclid(1_000_000) * 1000;
            let ts_sec = ts_ms / 1000;
            let sql = format!(
                "SELECT {} FROM {}.{}",
                table.select_list(),
                quote_ident(&id.database),
                quote_ident(&id.name)
            );
            let mut result = conn
                .query_iter(sql.as_str())
                .await
                .map_err(|e| connect_error(&format!("{sql} failed"), server_message(&e)))?;
            let mut pending: Option<Struct> = None;
            let mut first_in_table = true;
            loop {
                let next = result
                    .next()
                    .await
                    .map_err(|e| connect_error(&format!("reading {id}"), server_message(&e)))?;
                let row = match next {
                    Some(row) => {
                        let values: Vec<Option<Vec<u8>>> = row
                            .unwrap_raw()
                            .into_iter()
                            .map(|v| match v.unwrap_or(mysql_async::Value::NULL) {
                                mysql_async::Value::NULL => None,
                                mysql_async::Value::Bytes(b) => Some(b),
                                other => Some(other.as_sql(true).into_bytes()),
                            })
                            .collect();
                        Some(
                            table
                                .row_text(&values, &modes)
                                .map_err(|e| ConnectError(format!("snapshot of {id}: {e}")))?,
                        )
                    }
                    None => None,
                };
                let last_in_table = row.is_none();
                if let Some(previous) = pending.take() {
                    let marker = if last_in_table && last_table {
                        "last"
                    } else if first_in_table && first_table {
                        "first"
                    } else if last_in_table {
                        "last_in_data_collection"
                    } else if first_in_table {
                        "first_in_data_collection"
                    } else {
                        "true"
                    };
                    first_in_table = false;
                    let done = marker == "last";
                    let source = self.source(
                        ts_ms,
                        marker,
                        &id.database,
                        Some(&id.name),
                        0,
                        None,
                        &position.file,
                        position.pos,
                        0,
                        None,
                    );
                    batch.push(self.event(
                        &table,
                        "r",
                        None,
                        Some(previous),
                        source,
                        None,
                        Self::snapshot_offset(position, ts_sec, done),
                    ));
                    if batch.len() >= batch_size {
                        self.send(std::mem::take(&mut batch)).await?;
                    }
                }
                match row {
                    Some(row) => pending = Some(row),
                    None => break,
                }
            }
        }
        self.send(batch).await
    }

    fn stream_offset(
        &self,
        tx: &Transaction,
        events: u64,
        row: u64,
        server_id: u32,
        ts_sec: i64,
    ) -> Map<String, Json> {
        let mut o = Map::new();
        if self.settings.transaction_metadata
            && let Some(gtid) = &tx.gtid
        {
            o.insert("transaction_id".into(), Json::String(gtid.to_string()));
        }
        o.insert("ts_sec".into(), Json::from(ts_sec));
        o.insert("file".into(), Json::String(tx.start.file.clone()));
        o.insert("pos".into(), Json::from(tx.start.pos));
        if let Some(gtids) = &tx.start.gtids {
            o.insert("gtids".into(), Json::String(gtids.to_string()));
        }
        // Debezium leaves out the counts that are zero.
        if row > 0 {
            o.insert("row".into(), Json::from(row));
        }
        o.insert("server_id".into(), Json::from(server_id));
        if events > 0 {
            o.insert("event".into(), Json::from(events));
        }
        if self.settings.transaction_metadata {
            for (table, n) in &tx.per_table {
                o.insert(
                    format!("transaction_data_collection_order_{table}"),
                    Json::from(*n),
                );
            }
        }
        o
    }

    fn transaction_record(
        &self,
        status: &str,
        tx: &Transaction,
        offset: Map<String, Json>,
    ) -> Option<Record> {
        let id = tx.gtid?.to_string();
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
            transaction_metadata(status, &id, end, self.last_event_ts);
        let mut record = Record::new(
            format!("{}.transaction", self.settings.prefix),
            Some(value_schema),
            Value::Struct(value),
        )
        .with_key(Some(key_schema), Value::Struct(key));
        record.source_partition = Some(self.partition());
        record.source_offset = Some(offset);
        Some(record)
    }

    /// Opens the binlog stream at `resume`; answers it and whether the server's events
    /// carry checksums.
    async fn open_stream(&self, resume: &Resume) -> Result<(BinlogStream, bool), ConnectError> {
        let mut conn = connect(&self.settings).await?;
        let checksums = !one_value(&mut conn, "SELECT @@global.binlog_checksum")
            .await?
            .unwrap_or_default()
            .eq_ignore_ascii_case("NONE");
        let setup = |e: mysql_async::Error| {
            connect_error("preparing the binlog connection", server_message(&e))
        };
        conn.query_drop("SET @master_heartbeat_period = 10000000000")
            .await
            .map_err(setup)?;
        if self.mariadb {
            conn.query_drop("SET @mariadb_slave_capability = 4")
                .await
                .map_err(setup)?;
        }
        let gtid_mode = self.mariadb && resume.position.gtids.is_some();
        if let Some(gtids) = resume.position.gtids.as_ref().filter(|_| gtid_mode) {
            conn.query_drop(format!("SET @slave_connect_state = '{gtids}'"))
                .await
                .map_err(setup)?;
            conn.query_drop("SET @slave_gtid_strict_mode = 0")
                .await
                .map_err(setup)?;
            conn.query_drop("SET @slave_gtid_ignore_duplicates = 0")
                .await
                .map_err(setup)?;
        }
        let file = resume.position.file.clone().into_bytes();
        let request = if gtid_mode {
            BinlogStreamRequest::new(self.settings.server_id)
                .with_filename(b"")
                .with_pos(4u64)
        } else {
            BinlogStreamRequest::new(self.settings.server_id)
                .with_filename(&file)
                .with_pos(resume.position.pos.max(4))
        };
        let stream = conn
            .get_binlog_stream(request)
            .await
            .map_err(|e| binlog_error(&e))?;
        Ok((stream, checksums))
    }

    /// Reads the binlog from `resume` until the task stops or fails; reconnects after
    /// connection failures, from the last event handed over.
    async fn stream(&mut self, mut resume: Resume) -> Result<(), ConnectError> {
        let mut failures = 0u32;
        loop {
            let result = self.stream_once(&mut resume).await;
            match result {
                Ok(()) => return Ok(()),
                Err(StreamError::Fatal(e)) => return Err(e),
                Err(StreamError::Retriable(e)) => {
                    failures += 1;
                    let wait = Duration::from_millis((500u64 << failures.min(5)).min(10_000));
                    tracing::warn!(
                        error = %e,
                        ?wait,
                        "binlog connection lost; reconnecting from {}:{}",
                        resume.position.file,
                        resume.position.pos
                    );
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn stream_once(&mut self, resume: &mut Resume) -> Result<(), StreamError> {
        let (mut stream, checksums) = match self.open_stream(resume).await {
            Ok(s) => s,
            Err(e) if e.0.contains("(error 1236)") || e.0.contains("Access denied") => {
                return Err(StreamError::Fatal(e));
            }
            Err(e) => return Err(StreamError::Retriable(e)),
        };
        let mut file = resume.position.file.clone();
        let mut gtids = resume.position.gtids.clone();
        let mut skip_events = resume.events;
        let mut skip_rows = resume.rows;
        let mut tx: Option<Transaction> = None;
        let mut seen_format = false;
        loop {
            let next = std::future::poll_fn(|cx| {
                futures_core::Stream::poll_next(Pin::new(&mut stream), cx)
            })
            .await;
            let event = match next {
                None => {
                    return Err(StreamError::Retriable(ConnectError(
                        "the binlog stream ended".into(),
                    )));
                }
                Some(Err(e)) => {
                    let error = binlog_error(&e);
                    return Err(if fatal_server_error(&e) {
                        StreamError::Fatal(error)
                    } else {
                        StreamError::Retriable(error)
                    });
                }
                Some(Ok(event)) => event,
            };
            let header = event.header();
            let event_type = header.event_type_raw();
            let end = u64::from(header.log_pos());
            let start = end.saturating_sub(u64::from(header.event_size()));
            let ts_sec = i64::from(header.timestamp());
            let server_id = header.server_id();
            if event_type == 15 {
                seen_format = true;
            }
            if event_type == 4 {
                // ROTATE: the file the next events come from. The one the server sends
                // first comes before its FORMAT_DESCRIPTION, so mysql_common has not
                // cut its checksum off yet.
                if let Ok(Some(EventData::RotateEvent(r))) = event.read_data() {
                    let mut name = r.name_raw();
                    if !seen_format && checksums {
                        name = &name[..name.len().saturating_sub(4)];
                    }
                    file = String::from_utf8_lossy(name).into_owned();
                }
                continue;
            }
            // Events a transaction's offset counts (Debezium counts what it handles;
            // MariaDB sends no ANNOTATE_ROWS unless asked).
            let counted = !matches!(
                event_type,
                15 | 27
                    | binlog::ANNOTATE_ROWS_EVENT
                    | binlog::BINLOG_CHECKPOINT_EVENT
                    | binlog::GTID_LIST_EVENT
            );
            if !counted {
                continue;
            }
            let query = match event_type {
                2 => match event.read_data() {
                    Ok(Some(EventData::QueryEvent(q))) => Some((
                        q.query().into_owned(),
                        q.schema().into_owned(),
                        q.thread_id(),
                    )),
                    _ => None,
                },
                _ => None,
            };
            let query_kind = query.as_ref().map(|(sql, _, _)| {
                let upper = sql.trim_start().to_ascii_uppercase();
                if upper.starts_with("BEGIN") {
                    QueryKind::Begin
                } else if upper.starts_with("COMMIT") {
                    QueryKind::Commit
                } else {
                    QueryKind::Other
                }
            });
            let new_transaction = |gtid: Option<Gtid>,
                                   thread: Option<u32>,
                                   gtids: &Option<GtidSet>,
                                   file: &str| Transaction {
                gtid,
                start: Position {
                    file: file.to_string(),
                    pos: start,
                    gtids: gtids.clone(),
                },
                events: 1,
                thread,
                total: 0,
                per_table: Vec::new(),
            };
            let gtid_event = if event_type == binlog::GTID_EVENT {
                Some(
                    binlog::gtid_event(server_id, event.data())
                        .map_err(|e| StreamError::Fatal(ConnectError(e)))?,
                )
            } else {
                None
            };
            if skip_events > 0 {
                // Resuming inside a transaction: these events were handled before.
                skip_events -= 1;
                match (gtid_event, &query_kind) {
                    (Some(g), _) => {
                        let t = new_transaction(Some(g.gtid), None, &gtids, &file);
                        // Debezium announces the transaction again when it resumes in
                        // it (its END then counts only what follows).
                        if self.settings.transaction_metadata {
                            let offset = self.stream_offset(&t, 1, 0, server_id, ts_sec);
                            if let Some(begin) = self.transaction_record("BEGIN", &t, offset)
                                && self.batches.send(Ok(vec![begin])).await.is_err()
                            {
                                return Ok(());
                            }
                        }
                        tx = Some(t);
                    }
                    (None, Some(QueryKind::Begin)) if tx.is_none() => {
                        tx = Some(new_transaction(
                            None,
                            query.as_ref().map(|q| q.2),
                            &gtids,
                            &file,
                        ));
                    }
                    _ => {
                        if let Some(t) = tx.as_mut() {
                            t.events += 1;
                        }
                    }
                }
                continue;
            }
            let mut records = Vec::new();
            if let Some(g) = gtid_event {
                let t = new_transaction(Some(g.gtid), None, &gtids, &file);
                if self.settings.transaction_metadata {
                    let offset = self.stream_offset(&t, 1, 0, server_id, ts_sec);
                    records.extend(self.transaction_record("BEGIN", &t, offset));
                }
                tx = Some(t);
            } else if let Some((sql, schema, thread)) = query {
                match query_kind {
                    Some(QueryKind::Begin) => match tx.as_mut() {
                        Some(t) => {
                            t.thread = Some(thread);
                            t.events += 1;
                        }
                        None => tx = Some(new_transaction(None, Some(thread), &gtids, &file)),
                    },
                    Some(QueryKind::Commit) => {
                        self.last_event_ts = ts_sec * 1000;
                        self.commit(&mut tx, &mut gtids, server_id, ts_sec, &mut records);
                    }
                    _ => {
                        let t = tx
                            .take()
                            .unwrap_or_else(|| new_transaction(None, Some(thread), &gtids, &file));
                        self.ddl(
                            &t,
                            &schema,
                            &sql,
                            start,
                            end,
                            &file,
                            server_id,
                            ts_sec,
                            &mut records,
                        )
                        .await
                        .map_err(StreamError::Fatal)?;
                        // A DDL is an event group of its own: done with it.
                        if let (Some(g), Some(set)) = (t.gtid, gtids.as_mut()) {
                            set.add(g);
                        }
                    }
                }
            } else if event_type == 16 {
                // XID: the transaction committed.
                self.last_event_ts = ts_sec * 1000;
                self.commit(&mut tx, &mut gtids, server_id, ts_sec, &mut records);
            } else if matches!(event_type, 23..=25 | 30..=32) {
                let rows_skip = std::mem::take(&mut skip_rows);
                self.rows(
                    &event,
                    &stream,
                    tx.as_mut(),
                    &file,
                    start,
                    server_id,
                    ts_sec,
                    rows_skip,
                    &mut records,
                )
                .map_err(StreamError::Fatal)?;
                if let Some(t) = tx.as_mut() {
                    t.events += 1;
                }
            } else if let Some(t) = tx.as_mut() {
                // TABLE_MAP (mysql_common keeps it for the rows events), INTVAR, ...
                t.events += 1;
            }
            // Where a reconnect resumes: right after this event.
            resume.position = match &tx {
                Some(t) => t.start.clone(),
                None => Position {
                    file: file.clone(),
                    pos: end,
                    gtids: gtids.clone(),
                },
            };
            resume.events = tx.as_ref().map_or(0, |t| t.events);
            resume.rows = 0;
            if !records.is_empty() && self.batches.send(Ok(records)).await.is_err() {
                return Ok(());
            }
        }
    }

    fn commit(
        &mut self,
        tx: &mut Option<Transaction>,
        gtids: &mut Option<GtidSet>,
        server_id: u32,
        ts_sec: i64,
        records: &mut Vec<Record>,
    ) {
        let Some(t) = tx.take() else {
            return;
        };
        if self.settings.transaction_metadata && t.gtid.is_some() {
            let offset = self.stream_offset(&t, t.events, 0, server_id, ts_sec);
            records.extend(self.transaction_record("END", &t, offset));
        }
        if let (Some(g), Some(set)) = (t.gtid, gtids.as_mut()) {
            set.add(g);
        }
    }

    /// One rows event: its change events.
    #[allow(clippy::too_many_arguments)]
    fn rows(
        &mut self,
        event: &Event,
        stream: &BinlogStream,
        tx: Option<&mut Transaction>,
        file: &str,
        start: u64,
        server_id: u32,
        ts_sec: i64,
        skip_rows: u64,
        records: &mut Vec<Record>,
    ) -> Result<(), ConnectError> {
        let data = match event.read_data() {
            Ok(Some(EventData::RowsEvent(r))) => r,
            Ok(_) => return Ok(()),
            Err(e) => {
                return Err(ConnectError(format!(
                    "a rows event at {file}:{start} cannot be read: {e}"
                )));
            }
        };
        let Some(tme) = stream.get_tme(data.table_id()) else {
            return Err(ConnectError(format!(
                "a rows event at {file}:{start} for table id {} without its table map",
                data.table_id()
            )));
        };
        let id = ddl::TableId {
            database: tme.database_name().into_owned(),
            name: tme.table_name().into_owned(),
        };
        let Some(table) = self.captured_table(&id) else {
            return Ok(());
        };
        let (op, skipped) = match &data {
            RowsEventData::WriteRowsEventV1(_) | RowsEventData::WriteRowsEvent(_) => ("c", 'c'),
            RowsEventData::UpdateRowsEventV1(_)
            | RowsEventData::UpdateRowsEvent(_)
            | RowsEventData::PartialUpdateRowsEvent(_) => ("u", 'u'),
            RowsEventData::DeleteRowsEventV1(_) | RowsEventData::DeleteRowsEvent(_) => ("d", 'd'),
        };
        let mut fallback = Transaction {
            gtid: None,
            start: Position {
                file: file.to_string(),
                pos: start,
                gtids: None,
            },
            events: 0,
            thread: None,
            total: 0,
            per_table: Vec::new(),
        };
        let tx = match tx {
            Some(t) => t,
            None => &mut fallback,
        };
        let modes = self.settings.modes;
        let collection = id.to_string();
        for (i, row) in data.rows(tme).enumerate() {
            let (before, after) =
                row.map_err(|e| ConnectError(format!("a row of {id} at {file}:{start}: {e}")))?;
            if (i as u64) < skip_rows || self.settings.skipped.contains(&skipped) {
                continue;
            }
            let before = before
                .map(|r| table.row_binlog(r, &modes))
                .transpose()
                .map_err(ConnectError)?;
            let after = after
                .map(|r| table.row_binlog(r, &modes))
                .transpose()
                .map_err(ConnectError)?;
            let (gtid, thread) = (tx.gtid, tx.thread);
            self.last_row = i as i32;
            let source = |c: &Capture| {
                c.source(
                    ts_sec * 1000,
                    "false",
                    &id.database,
                    Some(&id.name),
                    server_id,
                    gtid.as_ref(),
                    file,
                    start,
                    i as i32,
                    thread,
                )
            };
            let key_before = before.as_ref().and_then(|r| table.key(r));
            let key_after = after.as_ref().and_then(|r| table.key(r));
            let key_changed = op == "u" && key_before != key_after;
            let block = |tx: &mut Transaction| -> Option<Struct> {
                tx.total += 1;
                let n = match tx.per_table.iter_mut().find(|(t, _)| *t == collection) {
                    Some((_, n)) => {
                        *n += 1;
                        *n
                    }
                    None => {
                        tx.per_table.push((collection.clone(), 1));
                        1
                    }
                };
                let gtid = tx.gtid?;
                if !self.settings.transaction_metadata {
                    return None;
                }
                let mut b = Struct::new(self.transaction_schema.clone());
                b.values[0] = Value::String(gtid.to_string());
                b.values[1] = Value::Int64(tx.total);
                b.values[2] = Value::Int64(n);
                Some(b)
            };
            if key_changed {
                let t = block(tx);
                let offset = self.stream_offset(tx, tx.events, i as u64 + 1, server_id, ts_sec);
                let header = |name: &str, key: &Option<Struct>| Header {
                    key: name.into(),
                    value: key
                        .as_ref()
                        .map(|k| Bytes::from(struct_json(k).to_string())),
                };
                let mut delete =
                    self.event(&table, "d", before, None, source(self), t, offset.clone());
                delete.headers = vec![header("__debezium.newkey", &key_after)];
                let tombstone = Self::tombstone(&delete);
                records.push(delete);
                if self.settings.tombstones_on_delete {
                    records.push(tombstone);
                }
                let t = block(tx);
                let offset = self.stream_offset(tx, tx.events, i as u64 + 1, server_id, ts_sec);
                let mut create = self.event(&table, "c", None, after, source(self), t, offset);
                create.headers = vec![header("__debezium.oldkey", &key_before)];
                records.push(create);
                continue;
            }
            let t = block(tx);
            let offset = self.stream_offset(tx, tx.events, i as u64 + 1, server_id, ts_sec);
            let record = self.event(&table, op, before, after, source(self), t, offset);
            if op == "d" && self.settings.tombstones_on_delete {
                let tombstone = Self::tombstone(&record);
                records.push(record);
                records.push(tombstone);
            } else {
                records.push(record);
            }
        }
        Ok(())
    }

    /// A DDL statement from the binlog: the model, the history, the schema change
    /// event, and TRUNCATE's `t` events.
    #[allow(clippy::too_many_arguments)]
    async fn ddl(
        &mut self,
        tx: &Transaction,
        schema: &str,
        sql: &str,
        start: u64,
        end: u64,
        file: &str,
        server_id: u32,
        ts_sec: i64,
        records: &mut Vec<Record>,
    ) -> Result<(), ConnectError> {
        let statement = sql.trim();
        let upper = statement.to_ascii_uppercase();
        if [
            "SAVEPOINT",
            "ROLLBACK",
            "XA ",
            "GRANT",
            "REVOKE",
            "CREATE USER",
            "DROP USER",
            "ALTER USER",
            "SET PASSWORD",
            "FLUSH",
            "ANALYZE",
            "OPTIMIZE",
        ]
        .iter()
        .any(|p| upper.starts_with(p))
        {
            return Ok(());
        }
        let default_db = (!schema.is_empty()).then_some(schema);
        let target = statement_table(statement, default_db);
        let truncated = if upper.starts_with("TRUNCATE") {
            target.clone()
        } else {
            None
        };
        let changes = self
            .tables
            .apply(default_db, statement)
            .map_err(|e| ConnectError(format!("the DDL at {file}:{start} cannot be read: {e}")))?;
        let mut table_changes = Vec::new();
        let mut dropped = Vec::new();
        let mut database = schema.to_string();
        let mut table_name: Option<String> = None;
        for change in &changes {
            match change {
                ddl::Change::Create(id) | ddl::Change::Alter(id) => {
                    self.captured.remove(id);
                    let charset = self.db_charsets.get(&id.database).cloned();
                    if let Some(table) = self.tables.get_mut(id)
                        && table.default_charset.is_none()
                    {
                        table.default_charset = charset;
                    }
                    database = id.database.clone();
                    table_name = Some(id.name.clone());
                    table_changes.push(TableChange {
                        kind: if matches!(change, ddl::Change::Create(_)) {
                            ChangeType::Create
                        } else {
                            ChangeType::Alter
                        },
                        id: id.clone(),
                        table: self.tables.get(id).cloned(),
                    });
                }
                ddl::Change::Rename(old, new) => {
                    self.captured.remove(old);
                    self.captured.remove(new);
                    database = new.database.clone();
                    table_name = Some(new.name.clone());
                    table_changes.push(TableChange {
                        kind: ChangeType::Alter,
                        id: new.clone(),
                        table: self.tables.get(new).cloned(),
                    });
                }
                ddl::Change::Drop(id) => {
                    self.captured.remove(id);
                    dropped.push(id.clone());
                }
                ddl::Change::CreateDatabase(db)
                | ddl::Change::DropDatabase(db)
                | ddl::Change::UseDatabase(db) => {
                    database = db.clone();
                }
            }
        }
        if let Some(id) = &target {
            database = id.database.clone();
            if table_name.is_none() {
                table_name = Some(id.name.clone());
            }
        }
        let ts_ms = ts_sec * 1000;
        let mut history_position = Map::new();
        if self.settings.transaction_metadata
            && let Some(g) = &tx.gtid
        {
            history_position.insert("transaction_id".into(), Json::String(g.to_string()));
        }
        history_position.insert("ts_sec".into(), Json::from(ts_sec));
        history_position.insert("file".into(), Json::String(tx.start.file.clone()));
        history_position.insert("pos".into(), Json::from(tx.start.pos));
        if let Some(g) = &tx.start.gtids {
            history_position.insert("gtids".into(), Json::String(g.to_string()));
        }
        history_position.insert("server_id".into(), Json::from(server_id));
        history_position.insert("event".into(), Json::from(tx.events.max(1)));
        // The offset of the schema change event: after the statement.
        let mut after = Map::new();
        after.insert("ts_sec".into(), Json::from(ts_sec));
        after.insert("file".into(), Json::String(file.to_string()));
        after.insert("pos".into(), Json::from(end));
        if let Some(g) = &tx.start.gtids {
            let mut set = g.clone();
            if let Some(gtid) = tx.gtid {
                set.add(gtid);
            }
            after.insert("gtids".into(), Json::String(set.to_string()));
        }
        after.insert("server_id".into(), Json::from(server_id));
        let source = |c: &Capture, db: &str, table: Option<&str>| {
            c.source(
                ts_ms,
                "false",
                db,
                table,
                server_id,
                tx.gtid.as_ref(),
                file,
                start,
                c.last_row,
                tx.thread,
            )
        };
        if !dropped.is_empty() {
            // Debezium records each dropped table as its own qualified statement.
            for id in &dropped {
                if !self.settings.database_included(&id.database) {
                    continue;
                }
                let text = format!(
                    "DROP TABLE {}.{}",
                    quote_ident(&id.database),
                    quote_ident(&id.name)
                );
                let changes = vec![TableChange {
                    kind: ChangeType::Drop,
                    id: id.clone(),
                    table: None,
                }];
                let s = source(self, &id.database, Some(&id.name));
                self.schema_change(
                    s,
                    history_position.clone(),
                    after.clone(),
                    &id.database,
                    &text,
                    &changes,
                    records,
                )
                .await?;
            }
            return Ok(());
        }
        if !self.settings.database_included(&database) {
            return Ok(());
        }
        let s = source(self, &database, table_name.as_deref());
        self.schema_change(
            s,
            history_position,
            after.clone(),
            &database,
            statement,
            &table_changes,
            records,
        )
        .await?;
        if let Some(id) = truncated
            && !self.settings.skipped.contains(&'t')
            && let Some(table) = self.captured_table(&id)
        {
            let block = match (self.settings.transaction_metadata, tx.gtid) {
                (true, Some(gtid)) => {
                    let mut b = Struct::new(self.transaction_schema.clone());
                    b.values[0] = Value::String(gtid.to_string());
                    b.values[1] = Value::Int64(1);
                    b.values[2] = Value::Int64(1);
                    Some(b)
                }
                _ => None,
            };
            let mut t = self.event(
                &table,
                "t",
                None,
                None,
                source(self, &id.database, Some(&id.name)),
                block,
                after,
            );
            t.key_schema = None;
            t.key = Value::Null;
            records.push(t);
        }
        Ok(())
    }
}

/// The table a DDL statement names first (`ALTER TABLE x`, `TRUNCATE [TABLE] x`,
/// `CREATE TABLE [IF NOT EXISTS] x (...)`, `DROP TABLE [IF EXISTS] x`, `RENAME TABLE x`),
/// qualified by `default_db` when it is not.
fn statement_table(statement: &str, default_db: Option<&str>) -> Option<ddl::TableId> {
    let words: Vec<&str> = statement.split_whitespace().take(8).collect();
    let first = words.first()?.to_ascii_uppercase();
    let mut at = match words.iter().position(|w| w.eq_ignore_ascii_case("TABLE")) {
        Some(i) if i <= 3 => i + 1,
        _ if first == "TRUNCATE" => 1,
        _ => return None,
    };
    while words.get(at).is_some_and(|w| {
        ["IF", "NOT", "EXISTS"]
            .iter()
            .any(|k| w.eq_ignore_ascii_case(k))
    }) {
        at += 1;
    }
    let name = words.get(at)?;
    let name = name.split('(').next()?.trim_end_matches([';', ',']);
    if name.is_empty() {
        return None;
    }
    let unquote = |s: &str| s.trim_matches('`').replace("``", "`");
    let parts: Vec<&str> = name.splitn(2, '.').collect();
    Some(match parts.as_slice() {
        [db, t] => ddl::TableId {
            database: unquote(db),
            name: unquote(t),
        },
        [t] => ddl::TableId {
            database: default_db?.to_string(),
            name: unquote(t),
        },
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QueryKind {
    Begin,
    Commit,
    Other,
}

enum StreamError {
    /// Reconnect and go on.
    Retriable(ConnectError),
    /// The task fails.
    Fatal(ConnectError),
}

fn binlog_error(e: &mysql_async::Error) -> ConnectError {
    let message = server_message(e);
    if let mysql_async::Error::Server(s) = e
        && s.code == 1236
    {
        return ConnectError(format!(
            "The connector is trying to read binlog starting at a position the server no \
             longer has: {message}. The binlog may have been purged; set \
             snapshot.mode=when_needed to take a new snapshot, or restart from scratch"
        ));
    }
    ConnectError(format!("reading the binlog: {message}"))
}

/// Runs the whole capture; sends its failure (if any) to the task.
async fn run(mut capture: Capture, offset: Option<Map<String, Json>>) {
    let batches = capture.batches.clone();
    if let Err(e) = run_inner(&mut capture, offset).await {
        let _ = batches.send(Err(e)).await;
    }
}

async fn run_inner(
    capture: &mut Capture,
    offset: Option<Map<String, Json>>,
) -> Result<(), ConnectError> {
    let mode = capture.settings.snapshot;
    let parsed = offset.as_ref().map(parse_offset).transpose()?;
    let snapshot_unfinished = parsed.as_ref().is_some_and(|(_, running)| *running);
    let binlog_has = match &parsed {
        Some((resume, false)) => {
            let mut conn = connect(&capture.settings).await?;
            let files: Vec<String> = text_rows(&mut conn, "SHOW BINARY LOGS")
                .await?
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten())
                .collect();
            let _ = conn.disconnect().await;
            resume.position.file.is_empty() || files.contains(&resume.position.file)
        }
        _ => true,
    };
    let snapshot = match mode {
        SnapshotMode::Always => Some(true),
        SnapshotMode::Initial | SnapshotMode::InitialOnly => {
            (parsed.is_none() || snapshot_unfinished).then_some(true)
        }
        SnapshotMode::WhenNeeded => {
            (parsed.is_none() || snapshot_unfinished || !binlog_has).then_some(true)
        }
        SnapshotMode::NoData => (parsed.is_none() || snapshot_unfinished).then_some(false),
        SnapshotMode::Recovery => None,
    };
    if snapshot.is_none() && !binlog_has {
        return Err(ConnectError(format!(
            "The connector is trying to read binlog file {} that is no longer available on the \
             server (purged). Set snapshot.mode=when_needed to take a new snapshot instead",
            parsed
                .as_ref()
                .map(|(r, _)| r.position.file.clone())
                .unwrap_or_default()
        )));
    }
    let resume = match (snapshot, parsed) {
        (Some(with_data), _) => {
            let done = capture.snapshot(with_data).await?;
            if !with_data {
                // A schema-only snapshot: its position is the offset streaming starts from.
                let record_offset =
                    Capture::snapshot_offset(&done.position, now_micros() / 1_000_000, true);
                tracing::info!(?record_offset, "schema snapshot done");
            }
            if mode == SnapshotMode::InitialOnly {
                return Ok(());
            }
            Resume {
                position: done.position,
                events: 0,
                rows: 0,
            }
        }
        (None, Some((resume, _))) => {
            if mode == SnapshotMode::Recovery {
                let mut conn = connect(&capture.settings).await?;
                let tables = capture.list_tables(&mut conn).await?;
                let mut records = Vec::new();
                capture
                    .snapshot_schema(&mut conn, &resume.position, &tables, &mut records)
                    .await?;
                let _ = conn.disconnect().await;
                capture.send(records).await?;
            } else {
                let mut conn = connect(&capture.settings).await?;
                capture.db_charsets = text_rows(
                    &mut conn,
                    "SELECT schema_name, default_character_set_name FROM information_schema.schemata",
                )
                .await?
                .into_iter()
                .filter_map(|r| {
                    let mut r = r.into_iter();
                    Some((r.next()??, r.next()??))
                })
                .collect();
                let _ = conn.disconnect().await;
                let applied = capture.recover(&resume.position).await?;
                tracing::info!(applied, "schema recovered from the history topic");
            }
            resume
        }
        (None, None) => {
            return Err(ConnectError(
                "snapshot.mode=recovery needs a stored offset to recover the schema history for"
                    .into(),
            ));
        }
    };
    capture.stream(resume).await
}

impl MySqlTask {
    async fn begin(
        &mut self,
        config: &Props,
        offsets: &dyn OffsetReader,
    ) -> Result<(), ConnectError> {
        let settings = Settings::parse(config).map_err(|e| ConnectError(e.message()))?;
        // Fail the task at start, as Debezium does, when the server cannot be reached or
        // is not set up for capture.
        let mut conn = connect(&settings).await?;
        let version = one_value(&mut conn, "SELECT VERSION()")
            .await?
            .unwrap_or_default();
        let mariadb = version.to_ascii_lowercase().contains("mariadb");
        let format = text_rows(&mut conn, "SHOW GLOBAL VARIABLES LIKE 'binlog_format'").await?;
        let format = format
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().nth(1).flatten())
            .unwrap_or_default();
        if !format.eq_ignore_ascii_case("ROW") {
            return Err(ConnectError(format!(
                "The MySQL server is not configured to use a ROW binlog_format, which is required for this connector to work properly. Change the MySQL configuration to use a binlog_format=ROW and restart the connector (binlog_format is '{format}')"
            )));
        }
        let image = text_rows(&mut conn, "SHOW GLOBAL VARIABLES LIKE 'binlog_row_image'").await?;
        let image = image
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().nth(1).flatten())
            .unwrap_or_else(|| "FULL".into());
        if !image.eq_ignore_ascii_case("FULL") {
            return Err(ConnectError(format!(
                "The MySQL server is not configured to use a FULL binlog_row_image, which is required for this connector to work properly. Change the MySQL configuration to use a binlog_row_image=FULL and restart the connector (binlog_row_image is '{image}')"
            )));
        }
        let _ = conn.disconnect().await;
        let history = HistoryTopic::open(&settings).await?;
        let source_schema = tables::source_schema(settings.mariadb_class);
        let mut partition = Map::new();
        partition.insert("server".into(), Json::String(settings.prefix.clone()));
        let offset = offsets.offset(&partition);
        let (tx, rx) = mpsc::channel(4);
        self.poll_interval = settings.poll_interval;
        self.max_batch_size = settings.max_batch_size;
        let capture = Capture {
            change_key_schema: history::key_schema(),
            change_value_schema: history::value_schema(&source_schema),
            source_schema,
            transaction_schema: tables::transaction_block_schema(),
            settings,
            batches: tx,
            mariadb,
            tables: ddl::Tables::default(),
            captured: HashMap::new(),
            history,
            last_event_ts: now_micros() / 1000,
            last_row: 0,
            db_charsets: HashMap::new(),
        };
        self.capture = Some(tokio::spawn(run(capture, offset)));
        self.batches = Some(rx);
        Ok(())
    }
}

impl SourceTask for MySqlTask {
    fn start<'a>(
        &'a mut self,
        config: &'a Props,
        offsets: &'a dyn OffsetReader,
    ) -> BoxFuture<'a, Result<(), ConnectError>> {
        Box::pin(self.begin(config, offsets))
    }

    fn poll(&mut self) -> BoxFuture<'_, Result<Vec<Record>, ConnectError>> {
        Box::pin(async move {
            let Some(batches) = self.batches.as_mut() else {
                return Err(ConnectError("the task was not started".into()));
            };
            let first = match tokio::time::timeout(self.poll_interval, batches.recv()).await {
                Err(_) => return Ok(Vec::new()),
                // The capture ended: finished (snapshot.mode=initial_only, nothing more
                // comes) or panicked on something it read (the task fails with it).
                Ok(None) => {
                    if let Some(capture) = self.capture.take()
                        && let Err(e) = capture.await
                        && e.is_panic()
                    {
                        let panic = e.into_panic();
                        let message = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        return Err(ConnectError(format!("the capture failed: {message}")));
                    }
                    tokio::time::sleep(self.poll_interval).await;
                    return Ok(Vec::new());
                }
                Ok(Some(batch)) => batch?,
            };
            let mut records = first;
            while records.len() < self.max_batch_size {
                match batches.try_recv() {
                    Ok(batch) => records.extend(batch?),
                    Err(_) => break,
                }
            }
            Ok(records)
        })
    }

    fn stop(&mut self) {
        if let Some(capture) = self.capture.take() {
            capture.abort();
        }
        self.batches = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_statements_name_their_table() {
        assert_eq!(
            statement_table("TRUNCATE TABLE events_nopk", Some("shop")),
            Some(ddl::TableId {
                database: "shop".into(),
                name: "events_nopk".into()
            })
        );
        assert_eq!(
            statement_table("truncate `a`.`b`", None),
            Some(ddl::TableId {
                database: "a".into(),
                name: "b".into()
            })
        );
        assert_eq!(statement_table("TRUNCATE t", None), None);
        assert_eq!(
            statement_table("ALTER TABLE other_db.t ADD COLUMN w INT", Some("shop")),
            Some(ddl::TableId {
                database: "other_db".into(),
                name: "t".into()
            })
        );
        assert_eq!(
            statement_table("CREATE TABLE IF NOT EXISTS later(id INT)", Some("shop")),
            Some(ddl::TableId {
                database: "shop".into(),
                name: "later".into()
            })
        );
        assert_eq!(
            statement_table("CREATE INDEX i ON t (a)", Some("shop")),
            None
        );
    }

    #[test]
    fn history_records_apply_up_to_the_offset() {
        let at = |file: &str, pos: u64| Position {
            file: file.into(),
            pos,
            gtids: None,
        };
        let offset = at("binlog.000002", 500);
        assert!(at("binlog.000001", 9000).history_before(false, &offset));
        assert!(at("binlog.000002", 499).history_before(false, &offset));
        assert!(!at("binlog.000002", 500).history_before(false, &offset));
        assert!(at("binlog.000002", 500).history_before(true, &offset));
        assert!(!at("binlog.000003", 4).history_before(true, &offset));
    }

    #[test]
    fn offsets_are_read_back() {
        let offset: Map<String, Json> = serde_json::from_str(
            r#"{"ts_sec":1,"file":"binlog.000001","pos":8233,"gtids":"0-1-19","row":1,"server_id":1,"event":2}"#,
        )
        .unwrap();
        let (resume, snapshot) = parse_offset(&offset).unwrap();
        assert!(!snapshot);
        assert_eq!(
            (resume.events, resume.rows, resume.position.pos),
            (2, 1, 8233)
        );
        assert_eq!(resume.position.gtids.unwrap().to_string(), "0-1-19");
        let bad: Map<String, Json> = serde_json::from_str(r#"{"gtids":"x"}"#).unwrap();
        assert!(parse_offset(&bad).is_err());
    }
}
