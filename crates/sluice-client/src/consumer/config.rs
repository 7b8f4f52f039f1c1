//! The consumer's configuration: the Java consumer's keys and defaults
//! (`ConsumerConfig`), read from a string map ([`ConsumerConfig::from_map`]) or built in
//! code with typed setters. An unknown key or a value that does not parse is an error
//! naming the key, never silently ignored: a typo in a config file must not turn into
//! a default.

use crate::config::ClientConfig;
use crate::consumer::assignor::Assignor;
use crate::error::Error;
use crate::metrics::{self, MetricConfig, RecordingLevel};

/// `auto.offset.reset`: where a partition without a committed offset (or whose offset
/// left the log) starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoOffsetReset {
    /// The log start offset.
    Earliest,
    /// The log end (the high watermark, or the last stable offset under read_committed).
    Latest,
    /// No reset: `poll` fails for the partition.
    None,
}

/// `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationLevel {
    /// Every record up to the high watermark, including open and aborted transactions.
    ReadUncommitted,
    /// Records up to the last stable offset; aborted transactions are filtered out.
    ReadCommitted,
}

impl IsolationLevel {
    /// The byte Fetch and ListOffsets carry.
    pub(crate) fn wire(self) -> i8 {
        match self {
            IsolationLevel::ReadUncommitted => 0,
            IsolationLevel::ReadCommitted => 1,
        }
    }
}

/// `group.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupProtocol {
    /// JoinGroup/SyncGroup/Heartbeat with a client-side assignor (Kafka's default).
    Classic,
    /// KIP-848's ConsumerGroupHeartbeat with a server-side assignor.
    Consumer,
}

/// Every setting of a consumer, with Kafka 4.1's defaults.
#[derive(Debug, Clone)]
pub struct ConsumerConfig {
    pub bootstrap_servers: Vec<String>,
    pub client_id: String,
    /// `group.id`: needed by `subscribe` and by commits; `None` for a consumer that only
    /// assigns partitions by hand and never commits.
    pub group_id: Option<String>,
    /// `group.instance.id`: static membership (KIP-345).
    pub group_instance_id: Option<String>,
    pub group_protocol: GroupProtocol,
    /// `group.remote.assignor`: the coordinator's assignor for `group.protocol=consumer`
    /// (`uniform`, `range`); `None` lets the coordinator choose.
    pub group_remote_assignor: Option<String>,
    /// `partition.assignment.strategy`, in preference order.
    pub partition_assignment_strategy: Vec<Assignor>,
    pub enable_auto_commit: bool,
    pub auto_commit_interval_ms: u64,
    pub auto_offset_reset: AutoOffsetReset,
    pub isolation_level: IsolationLevel,
    pub max_poll_records: usize,
    pub max_poll_interval_ms: u64,
    pub session_timeout_ms: u64,
    pub heartbeat_interval_ms: u64,
    pub fetch_min_bytes: i32,
    pub fetch_max_bytes: i32,
    pub fetch_max_wait_ms: i32,
    pub max_partition_fetch_bytes: i32,
    pub request_timeout_ms: u64,
    pub default_api_timeout_ms: u64,
    pub retry_backoff_ms: u64,
    pub metadata_max_age_ms: u64,
    pub socket_connection_setup_timeout_ms: u64,
    pub check_crcs: bool,
    pub exclude_internal_topics: bool,
    /// `client.rack`: sent in Fetch and in the subscription (v3).
    pub client_rack: String,
    /// `metrics.sample.window.ms`: how long one sample of a windowed metric lasts.
    pub metrics_sample_window_ms: u64,
    /// `metrics.num.samples`: the samples a windowed metric spans.
    pub metrics_num_samples: u64,
    /// `metrics.recording.level` (every metric here is INFO: see [`crate::metrics`]).
    pub metrics_recording_level: RecordingLevel,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            bootstrap_servers: Vec::new(),
            client_id: "sluice-consumer".to_string(),
            group_id: None,
            group_instance_id: None,
            group_protocol: GroupProtocol::Classic,
            group_remote_assignor: None,
            partition_assignment_strategy: vec![Assignor::Range, Assignor::CooperativeSticky],
            enable_auto_commit: true,
            auto_commit_interval_ms: 5_000,
            auto_offset_reset: AutoOffsetReset::Latest,
            isolation_level: IsolationLevel::ReadUncommitted,
            max_poll_records: 500,
            max_poll_interval_ms: 300_000,
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 3_000,
            fetch_min_bytes: 1,
            fetch_max_bytes: 52_428_800,
            fetch_max_wait_ms: 500,
            max_partition_fetch_bytes: 1_048_576,
            request_timeout_ms: 30_000,
            default_api_timeout_ms: 60_000,
            retry_backoff_ms: 100,
            metadata_max_age_ms: 300_000,
            socket_connection_setup_timeout_ms: 10_000,
            check_crcs: true,
            exclude_internal_topics: true,
            client_rack: String::new(),
            metrics_sample_window_ms: 30_000,
            metrics_num_samples: 2,
            metrics_recording_level: RecordingLevel::Info,
        }
    }
}

/// Keys the Java consumer takes that name Java classes; accepted so that a Java
/// consumer's properties file loads, and ignored: this consumer hands out bytes.
const IGNORED_JAVA_KEYS: &[&str] = &["key.deserializer", "value.deserializer"];

impl ConsumerConfig {
    /// Kafka's defaults with the given `bootstrap.servers`.
    pub fn new(bootstrap_servers: impl IntoIterator<Item = impl Into<String>>) -> ConsumerConfig {
        ConsumerConfig {
            bootstrap_servers: bootstrap_servers.into_iter().map(Into::into).collect(),
            ..ConsumerConfig::default()
        }
    }

    /// Reads Kafka's keys (`group.id`, `enable.auto.commit`, ...); unknown keys and
    /// values that do not parse are errors naming the key.
    pub fn from_map<K: AsRef<str>, V: AsRef<str>>(
        entries: impl IntoIterator<Item = (K, V)>,
    ) -> Result<ConsumerConfig, Error> {
        let mut config = ConsumerConfig::default();
        for (key, value) in entries {
            config.set(key.as_ref(), value.as_ref())?;
        }
        config.validate()?;
        Ok(config)
    }

    /// Sets one key from its string form.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        let value = value.trim();
        match key {
            "bootstrap.servers" => {
                self.bootstrap_servers = list(value);
            }
            "client.id" => self.client_id = value.to_string(),
            "group.id" => self.group_id = Some(value.to_string()).filter(|id| !id.is_empty()),
            "group.instance.id" => {
                self.group_instance_id = Some(value.to_string()).filter(|id| !id.is_empty())
            }
            "group.protocol" => {
                self.group_protocol = match value.to_lowercase().as_str() {
                    "classic" => GroupProtocol::Classic,
                    "consumer" => GroupProtocol::Consumer,
                    _ => return Err(invalid(key, value, "classic or consumer")),
                }
            }
            "group.remote.assignor" => {
                self.group_remote_assignor = Some(value.to_string()).filter(|name| !name.is_empty())
            }
            "partition.assignment.strategy" => {
                let mut strategies = Vec::new();
                for name in list(value) {
                    strategies.push(Assignor::from_name(&name).ok_or_else(|| {
                        invalid(
                            key,
                            &name,
                            "range, roundrobin, sticky, cooperative-sticky or their Java class names",
                        )
                    })?);
                }
                self.partition_assignment_strategy = strategies;
            }
            "enable.auto.commit" => self.enable_auto_commit = boolean(key, value)?,
            "auto.commit.interval.ms" => self.auto_commit_interval_ms = number(key, value)?,
            "auto.offset.reset" => {
                self.auto_offset_reset = match value {
                    "earliest" => AutoOffsetReset::Earliest,
                    "latest" => AutoOffsetReset::Latest,
                    "none" => AutoOffsetReset::None,
                    _ => return Err(invalid(key, value, "earliest, latest or none")),
                }
            }
            "isolation.level" => {
                self.isolation_level = match value {
                    "read_uncommitted" => IsolationLevel::ReadUncommitted,
                    "read_committed" => IsolationLevel::ReadCommitted,
                    _ => return Err(invalid(key, value, "read_uncommitted or read_committed")),
                }
            }
            "max.poll.records" => self.max_poll_records = number(key, value)?,
            "max.poll.interval.ms" => self.max_poll_interval_ms = number(key, value)?,
            "session.timeout.ms" => self.session_timeout_ms = number(key, value)?,
            "heartbeat.interval.ms" => self.heartbeat_interval_ms = number(key, value)?,
            "fetch.min.bytes" => self.fetch_min_bytes = number(key, value)?,
            "fetch.max.bytes" => self.fetch_max_bytes = number(key, value)?,
            "fetch.max.wait.ms" => self.fetch_max_wait_ms = number(key, value)?,
            "max.partition.fetch.bytes" => self.max_partition_fetch_bytes = number(key, value)?,
            "request.timeout.ms" => self.request_timeout_ms = number(key, value)?,
            "default.api.timeout.ms" => self.default_api_timeout_ms = number(key, value)?,
            "retry.backoff.ms" => self.retry_backoff_ms = number(key, value)?,
            "metadata.max.age.ms" => self.metadata_max_age_ms = number(key, value)?,
            "socket.connection.setup.timeout.ms" => {
                self.socket_connection_setup_timeout_ms = number(key, value)?
            }
            "check.crcs" => self.check_crcs = boolean(key, value)?,
            "exclude.internal.topics" => self.exclude_internal_topics = boolean(key, value)?,
            "client.rack" => self.client_rack = value.to_string(),
            metrics::SAMPLE_WINDOW_KEY => self.metrics_sample_window_ms = number(key, value)?,
            metrics::NUM_SAMPLES_KEY => self.metrics_num_samples = number(key, value)?,
            metrics::RECORDING_LEVEL_KEY => {
                self.metrics_recording_level = RecordingLevel::from_name(value)
                    .ok_or_else(|| invalid(key, value, "INFO, DEBUG or TRACE"))?
            }
            key if IGNORED_JAVA_KEYS.contains(&key) => {}
            _ => {
                return Err(Error::Config(format!(
                    "unknown consumer configuration key {key:?}"
                )));
            }
        }
        Ok(())
    }

    /// Checks the settings against each other, as the Java consumer does at startup.
    pub fn validate(&self) -> Result<(), Error> {
        let fail = |reason: String| Err(Error::Config(reason));
        if self.bootstrap_servers.is_empty() {
            return fail("bootstrap.servers is empty".to_string());
        }
        if self.max_poll_records == 0 {
            return fail("max.poll.records must be at least 1".to_string());
        }
        if self.heartbeat_interval_ms >= self.session_timeout_ms {
            return fail(format!(
                "heartbeat.interval.ms ({}) must be lower than session.timeout.ms ({})",
                self.heartbeat_interval_ms, self.session_timeout_ms
            ));
        }
        if self.partition_assignment_strategy.is_empty() {
            return fail("partition.assignment.strategy is empty".to_string());
        }
        if self.fetch_min_bytes < 0 || self.fetch_max_bytes < 0 || self.fetch_max_wait_ms < 0 {
            return fail(
                "fetch.min.bytes, fetch.max.bytes and fetch.max.wait.ms must not be negative"
                    .to_string(),
            );
        }
        if self.max_partition_fetch_bytes <= 0 {
            return fail("max.partition.fetch.bytes must be positive".to_string());
        }
        if self.group_instance_id.is_some() && self.group_id.is_none() {
            return fail("group.instance.id needs a group.id".to_string());
        }
        if let Err((key, reason)) = self.try_metric_config() {
            return fail(format!("{key}: {reason}"));
        }
        Ok(())
    }

    /// The settings of the connections the consumer opens, with a request timeout of
    /// at least `minimum_request_timeout_ms` (JoinGroup waits up to the rebalance
    /// timeout, as in Java's consumer).
    pub(crate) fn client_config(&self, minimum_request_timeout_ms: u64) -> ClientConfig {
        ClientConfig {
            bootstrap_servers: self.bootstrap_servers.clone(),
            client_id: self.client_id.clone(),
            request_timeout_ms: self.request_timeout_ms.max(minimum_request_timeout_ms),
            socket_connection_setup_timeout_ms: self.socket_connection_setup_timeout_ms,
            ..ClientConfig::default()
        }
    }

    /// The metrics' windows, from `metrics.sample.window.ms` and `metrics.num.samples`.
    pub(crate) fn metric_config(&self) -> MetricConfig {
        // `validate` checked them; Kafka's defaults otherwise.
        self.try_metric_config().unwrap_or_default()
    }

    fn try_metric_config(&self) -> Result<MetricConfig, (&'static str, String)> {
        MetricConfig::from_settings(self.metrics_sample_window_ms, self.metrics_num_samples)
    }

    // Typed builder setters.

    pub fn group_id(mut self, group_id: impl Into<String>) -> Self {
        self.group_id = Some(group_id.into());
        self
    }
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = client_id.into();
        self
    }
    pub fn group_instance_id(mut self, id: impl Into<String>) -> Self {
        self.group_instance_id = Some(id.into());
        self
    }
    pub fn partition_assignment_strategy(mut self, assignors: Vec<Assignor>) -> Self {
        self.partition_assignment_strategy = assignors;
        self
    }
    pub fn enable_auto_commit(mut self, enable: bool) -> Self {
        self.enable_auto_commit = enable;
        self
    }
    pub fn auto_commit_interval_ms(mut self, interval_ms: u64) -> Self {
        self.auto_commit_interval_ms = interval_ms;
        self
    }
    pub fn auto_offset_reset(mut self, reset: AutoOffsetReset) -> Self {
        self.auto_offset_reset = reset;
        self
    }
    pub fn isolation_level(mut self, level: IsolationLevel) -> Self {
        self.isolation_level = level;
        self
    }
    pub fn max_poll_records(mut self, records: usize) -> Self {
        self.max_poll_records = records;
        self
    }
    pub fn max_poll_interval_ms(mut self, interval_ms: u64) -> Self {
        self.max_poll_interval_ms = interval_ms;
        self
    }
    pub fn session_timeout_ms(mut self, timeout_ms: u64) -> Self {
        self.session_timeout_ms = timeout_ms;
        self
    }
    pub fn heartbeat_interval_ms(mut self, interval_ms: u64) -> Self {
        self.heartbeat_interval_ms = interval_ms;
        self
    }
    pub fn fetch_min_bytes(mut self, bytes: i32) -> Self {
        self.fetch_min_bytes = bytes;
        self
    }
    pub fn fetch_max_wait_ms(mut self, wait_ms: i32) -> Self {
        self.fetch_max_wait_ms = wait_ms;
        self
    }
    pub fn fetch_max_bytes(mut self, bytes: i32) -> Self {
        self.fetch_max_bytes = bytes;
        self
    }
    pub fn max_partition_fetch_bytes(mut self, bytes: i32) -> Self {
        self.max_partition_fetch_bytes = bytes;
        self
    }
    pub fn group_remote_assignor(mut self, assignor: impl Into<String>) -> Self {
        self.group_remote_assignor = Some(assignor.into());
        self
    }
    pub fn group_protocol(mut self, protocol: GroupProtocol) -> Self {
        self.group_protocol = protocol;
        self
    }
    pub fn metrics_sample_window_ms(mut self, window_ms: u64) -> Self {
        self.metrics_sample_window_ms = window_ms;
        self
    }
    pub fn metrics_num_samples(mut self, samples: u64) -> Self {
        self.metrics_num_samples = samples;
        self
    }
}

fn list(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect()
}

fn invalid(key: &str, value: &str, expected: &str) -> Error {
    Error::Config(format!(
        "invalid value {value:?} for {key}: expected {expected}"
    ))
}

fn boolean(key: &str, value: &str) -> Result<bool, Error> {
    match value.to_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, value, "true or false")),
    }
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, Error> {
    value
        .parse()
        .map_err(|_| invalid(key, value, "a non-negative number in range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_kafkas() {
        let config = ConsumerConfig::from_map([("bootstrap.servers", "a:9092")]).unwrap();
        assert_eq!(config.auto_offset_reset, AutoOffsetReset::Latest);
        assert_eq!(config.isolation_level, IsolationLevel::ReadUncommitted);
        assert_eq!(config.max_poll_records, 500);
        assert_eq!(config.session_timeout_ms, 45_000);
        assert_eq!(config.heartbeat_interval_ms, 3_000);
        assert_eq!(config.max_poll_interval_ms, 300_000);
        assert_eq!(config.max_partition_fetch_bytes, 1_048_576);
        assert_eq!(config.fetch_max_wait_ms, 500);
        assert_eq!(config.auto_commit_interval_ms, 5_000);
        assert!(config.enable_auto_commit);
        assert_eq!(config.metric_config(), MetricConfig::default());
        assert_eq!(config.metrics_recording_level, RecordingLevel::Info);
        assert_eq!(
            config.partition_assignment_strategy,
            vec![Assignor::Range, Assignor::CooperativeSticky]
        );
    }

    #[test]
    fn keys_parse_and_mistakes_are_named() {
        let config = ConsumerConfig::from_map([
            ("bootstrap.servers", "a:1, b:2"),
            ("group.id", "g"),
            (
                "partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.StickyAssignor,roundrobin",
            ),
            ("isolation.level", "read_committed"),
            ("auto.offset.reset", "none"),
            ("key.deserializer", "x"),
        ])
        .unwrap();
        assert_eq!(config.bootstrap_servers, vec!["a:1", "b:2"]);
        assert_eq!(
            config.partition_assignment_strategy,
            vec![Assignor::Sticky, Assignor::RoundRobin]
        );
        let cases: [(&[(&str, &str)], &str); 8] = [
            (
                &[("metrics.sample.window.ms", "0")],
                "metrics.sample.window.ms",
            ),
            (&[("metrics.num.samples", "0")], "metrics.num.samples"),
            (
                &[("metrics.recording.level", "LOUD")],
                "metrics.recording.level",
            ),
            (
                &[("no.such.key", "1")],
                "unknown consumer configuration key \"no.such.key\"",
            ),
            (&[("max.poll.records", "many")], "max.poll.records"),
            (&[("auto.offset.reset", "smallest")], "auto.offset.reset"),
            (&[("enable.auto.commit", "yes")], "enable.auto.commit"),
            (
                &[
                    ("session.timeout.ms", "1000"),
                    ("heartbeat.interval.ms", "1000"),
                ],
                "heartbeat.interval.ms",
            ),
        ];
        for (entries, expected) in cases {
            let mut all = vec![("bootstrap.servers", "a:1")];
            all.extend_from_slice(entries);
            let error = ConsumerConfig::from_map(all).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
