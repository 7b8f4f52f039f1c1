//! Connector plugins, named as Kafka Connect's users know them: a connector validates
//! its config and splits it into task configs; a source task polls records from outside,
//! a sink task puts records outside and flushes them.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value as Json};

use crate::data::Record;
use crate::{ConfigError, Props};

pub mod debezium;
pub mod elasticsearch;
pub mod file;
pub mod jdbc;
pub mod mysql;
pub mod postgres;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Connect's `ConnectException`: a task's failure, with the text its status shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConnectError(pub String);

/// Whether a plugin reads from outside into Kafka or writes Kafka's records outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Source,
    Sink,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Source => "source",
            Kind::Sink => "sink",
        }
    }
}

/// A config key a plugin takes, for `config/validate` (`ConfigDef.ConfigKey`).
#[derive(Debug, Clone)]
pub struct ConfigKeyDef {
    pub name: &'static str,
    /// Connect's type names: STRING, INT, LONG, BOOLEAN, LIST, CLASS, PASSWORD.
    pub ty: &'static str,
    pub default: Option<&'static str>,
    pub required: bool,
    pub importance: &'static str,
    pub documentation: &'static str,
}

/// A connector plugin: the class users name in `connector.class`.
pub trait ConnectorPlugin: Send + Sync {
    fn class(&self) -> &'static str;
    /// The Java task class Connect names in each task config (`task.class`).
    fn task_class(&self) -> &'static str;
    fn kind(&self) -> Kind;
    fn version(&self) -> &'static str;
    fn config_keys(&self) -> Vec<ConfigKeyDef>;
    /// The connector's own checks of its config, per key.
    fn validate(&self, config: &Props) -> Result<(), ConfigError>;
    /// Task configs for at most `max_tasks` tasks.
    fn task_configs(&self, config: &Props, max_tasks: u32) -> Vec<Props>;
    fn source_task(&self) -> Option<Box<dyn SourceTask>> {
        None
    }
    /// `SourceConnector.exactlyOnceSupport`: whether its tasks' records and offsets can
    /// be written in one transaction (KIP-618).
    fn exactly_once_support(&self) -> bool {
        false
    }
    fn sink_task(&self) -> Option<Box<dyn SinkTask>> {
        None
    }
}

/// Reads from outside (`SourceTask`). The worker commits a record's source offset once
/// Kafka acknowledged it.
pub trait SourceTask: Send {
    /// `offset` is the last committed offset of the task's source partition(s), looked
    /// up by the worker from the offsets topic through `offsets`.
    fn start<'a>(
        &'a mut self,
        config: &'a Props,
        offsets: &'a dyn OffsetReader,
    ) -> BoxFuture<'a, Result<(), ConnectError>>;
    /// The next records (empty: none yet; the worker calls again).
    fn poll(&mut self) -> BoxFuture<'_, Result<Vec<Record>, ConnectError>>;
    /// The worker wrote these offsets (the last of each source partition) to the
    /// offsets topic, after Kafka acknowledged every record up to them (Connect's
    /// `SourceTask.commit`): a source may now let go of what they cover (a database's
    /// replication slot advances, say).
    fn commit(&mut self, _offsets: &[&Map<String, Json>]) {}
    fn stop(&mut self) {}
}

/// A sink task's view of the source offsets a source task resumes from.
pub trait OffsetReader: Send + Sync {
    fn offset(&self, partition: &Map<String, Json>) -> Option<Map<String, Json>>;
}

/// Writes records outside (`SinkTask`). The worker commits the consumer's offsets only
/// after `flush` returned.
pub trait SinkTask: Send {
    fn start<'a>(&'a mut self, config: &'a Props) -> BoxFuture<'a, Result<(), ConnectError>>;
    /// Writes (or buffers) `records`. A record the target refused on its own merits (a
    /// constraint, a malformed document) is reported back by its index in `records`, as
    /// Connect's `ErrantRecordReporter` does: the worker then applies `errors.tolerance`
    /// (fail the task, or log it and send it to the dead letter queue). A
    /// [`SinkError::Retriable`] makes the worker offer the same records again after a
    /// backoff, so a target that is down loses and skips nothing.
    fn put<'a>(
        &'a mut self,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<Vec<Errant>, SinkError>>;
    /// Makes everything put so far durable outside.
    fn flush(&mut self) -> BoxFuture<'_, Result<(), SinkError>>;
    fn stop(&mut self) {}
}

/// A record a sink task could not write: its index in the batch and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Errant {
    pub index: usize,
    pub error: String,
}

/// How a sink task's `put` or `flush` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SinkError {
    /// Connect's `RetriableException`: the target is unavailable for now; the worker
    /// retries the same records after a backoff, without committing anything past them.
    #[error("{0}")]
    Retriable(String),
    /// Anything else: the task fails, restartable from its last committed offsets.
    #[error("{0}")]
    Fatal(ConnectError),
}

impl From<ConnectError> for SinkError {
    fn from(e: ConnectError) -> SinkError {
        SinkError::Fatal(e)
    }
}

/// Every plugin this worker has.
pub fn plugins() -> Vec<Box<dyn ConnectorPlugin>> {
    vec![
        Box::new(file::FileStreamSource),
        Box::new(file::FileStreamSink),
        Box::new(jdbc::JdbcSinkConnector),
        Box::new(elasticsearch::ElasticsearchSink),
        Box::new(postgres::PostgresConnector),
        Box::new(mysql::MySqlConnector),
        Box::new(mysql::MariaDbConnector),
    ]
}

/// A plugin by `connector.class`: its full class name, its simple name, or the simple
/// name without `Connector` (Connect's aliases).
pub fn plugin(class: &str) -> Option<Box<dyn ConnectorPlugin>> {
    plugins().into_iter().find(|p| {
        let full = p.class();
        let simple = full.rsplit('.').next().unwrap_or(full);
        class == full || class == simple || Some(class) == simple.strip_suffix("Connector")
    })
}
