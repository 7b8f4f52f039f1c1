//! The producer's configuration: Kafka's `ProducerConfig` keys, defaults and validation,
//! so a `producer.properties` written for the Java client configures this one.
//!
//! One validation path: [`ProducerConfig::from_map`] parses and checks the string form;
//! the typed [`ProducerConfigBuilder`] writes the same strings and calls it, so a setting
//! is checked the same way whichever door it came through. Cross-key rules are Kafka's
//! (`ProducerConfig.postProcessAndValidateIdempotenceConfigs`): idempotence needs
//! `acks=all`, `retries > 0` and at most 5 requests in flight; when the user did not ask
//! for idempotence explicitly, a conflicting setting turns it off instead of failing; a
//! `transactional.id` needs idempotence; `delivery.timeout.ms >= linger.ms +
//! request.timeout.ms`.

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_protocol::Compression;

use super::error::ProducerError;
use super::partitioner::Partitioner;
use crate::config::ClientConfig;
use crate::metrics::{self, MetricConfig, RecordingLevel};

/// `acks`: how many replicas must have a batch before the leader answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// `acks=0`: the broker does not answer; a record counts as sent once its request
    /// is written, and its offset is reported as -1 (as in the Java client).
    None,
    /// `acks=1`: the leader wrote it.
    Leader,
    /// `acks=all` (`-1`): every in-sync replica has it.
    All,
}

impl Acks {
    /// The value Produce carries.
    pub fn wire_value(self) -> i16 {
        match self {
            Acks::None => 0,
            Acks::Leader => 1,
            Acks::All => -1,
        }
    }
}

/// Every key this producer understands, with Kafka's default (`None`: no default).
const KEYS: &[(&str, Option<&str>)] = &[
    ("bootstrap.servers", None),
    ("client.id", Some("")),
    ("acks", Some("all")),
    ("linger.ms", Some("5")),
    ("batch.size", Some("16384")),
    ("buffer.memory", Some("33554432")),
    ("compression.type", Some("none")),
    ("enable.idempotence", Some("true")),
    ("max.in.flight.requests.per.connection", Some("5")),
    ("retries", Some("2147483647")),
    ("delivery.timeout.ms", Some("120000")),
    ("request.timeout.ms", Some("30000")),
    ("max.block.ms", Some("60000")),
    ("transactional.id", None),
    ("transaction.timeout.ms", Some("60000")),
    ("partitioner.class", Some("default")),
    ("partitioner.ignore.keys", Some("false")),
    ("max.request.size", Some("1048576")),
    ("retry.backoff.ms", Some("100")),
    ("retry.backoff.max.ms", Some("1000")),
    ("metadata.max.age.ms", Some("300000")),
    ("socket.connection.setup.timeout.ms", Some("10000")),
    (metrics::SAMPLE_WINDOW_KEY, Some("30000")),
    (metrics::NUM_SAMPLES_KEY, Some("2")),
    (metrics::RECORDING_LEVEL_KEY, Some("INFO")),
];

/// The producer's settings. Build with [`ProducerConfig::from_map`], [`from_iter`]
/// (ProducerConfig::from_iter) or [`ProducerConfig::builder`].
#[derive(Clone)]
pub struct ProducerConfig {
    /// `bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    /// `client.id` (default: `producer-N`, as the Java client names it).
    pub client_id: String,
    /// `acks` (default `all`).
    pub acks: Acks,
    /// `linger.ms`: how long a batch waits for more records before it is sent.
    pub linger_ms: u64,
    /// `batch.size`: bytes of records per partition batch before it is sent at once.
    pub batch_size: usize,
    /// `buffer.memory`: bytes of records waiting in the producer; `send` waits for room.
    pub buffer_memory: usize,
    /// `compression.type`.
    pub compression: Compression,
    /// `enable.idempotence`, after Kafka's rules (may be off when the user did not ask).
    pub enable_idempotence: bool,
    /// `max.in.flight.requests.per.connection`: also the bound per partition.
    pub max_in_flight_requests_per_connection: usize,
    /// `retries`.
    pub retries: i32,
    /// `delivery.timeout.ms`: a record's whole time from `send` to its answer.
    pub delivery_timeout_ms: u64,
    /// `request.timeout.ms`.
    pub request_timeout_ms: u64,
    /// `max.block.ms`: how long `send` (metadata, buffer space) and the transaction
    /// calls may wait.
    pub max_block_ms: u64,
    /// `transactional.id`.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms`.
    pub transaction_timeout_ms: i32,
    /// `partitioner.ignore.keys`: keyed records are spread by the sticky partitioner too.
    pub partitioner_ignore_keys: bool,
    /// A custom partitioner (the typed builder's `partitioner`, Kafka's `partitioner.class`).
    pub partitioner: Option<Arc<dyn Partitioner>>,
    /// `max.request.size`: the largest Produce request, and so the largest record.
    pub max_request_size: usize,
    /// `retry.backoff.ms`.
    pub retry_backoff_ms: u64,
    /// `retry.backoff.max.ms`: the cap of the exponential backoff.
    pub retry_backoff_max_ms: u64,
    /// `metadata.max.age.ms`: metadata is refreshed at least this often.
    pub metadata_max_age_ms: u64,
    /// `socket.connection.setup.timeout.ms`.
    pub socket_connection_setup_timeout_ms: u64,
    /// `metrics.sample.window.ms` and `metrics.num.samples`: the metrics' windows.
    pub metric_config: MetricConfig,
    /// `metrics.recording.level` (every metric here is INFO: see [`crate::metrics`]).
    pub metrics_recording_level: RecordingLevel,
}

impl std::fmt::Debug for ProducerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerConfig")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("client_id", &self.client_id)
            .field("acks", &self.acks)
            .field("linger_ms", &self.linger_ms)
            .field("batch_size", &self.batch_size)
            .field("buffer_memory", &self.buffer_memory)
            .field("compression", &self.compression)
            .field("enable_idempotence", &self.enable_idempotence)
            .field("transactional_id", &self.transactional_id)
            .field("custom_partitioner", &self.partitioner.is_some())
            .finish_non_exhaustive()
    }
}

static NEXT_CLIENT_NUMBER: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

impl ProducerConfig {
    /// Parses Kafka's keys; unknown keys and invalid values are errors naming the key.
    pub fn from_map(settings: &BTreeMap<String, String>) -> Result<ProducerConfig, ProducerError> {
        if let Some(unknown) = settings
            .keys()
            .find(|key| !KEYS.iter().any(|(known, _)| known == key))
        {
            return Err(config_error(unknown, "unknown producer configuration key"));
        }
        let value = |key: &str| -> Option<&str> {
            settings.get(key).map(|value| value.trim()).or_else(|| {
                KEYS.iter()
                    .find(|(known, _)| *known == key)
                    .and_then(|(_, default)| *default)
            })
        };
        let bootstrap_servers: Vec<String> = value("bootstrap.servers")
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|server| !server.is_empty())
            .map(str::to_string)
            .collect();
        if bootstrap_servers.is_empty() {
            return Err(config_error(
                "bootstrap.servers",
                "must list at least one host:port",
            ));
        }
        let acks = match value("acks").unwrap_or("all").to_ascii_lowercase().as_str() {
            "all" | "-1" => Acks::All,
            "1" => Acks::Leader,
            "0" => Acks::None,
            other => {
                return Err(config_error(
                    "acks",
                    &format!("invalid value {other:?}; expected one of all, -1, 0, 1"),
                ));
            }
        };
        let compression_name = value("compression.type").unwrap_or("none");
        let compression = Compression::from_name(&compression_name.to_ascii_lowercase())
            .ok_or_else(|| {
                config_error(
                    "compression.type",
                    &format!(
                        "invalid value {compression_name:?}; expected one of none, gzip, snappy, lz4, zstd"
                    ),
                )
            })?;
        let idempotence_explicit = settings.contains_key("enable.idempotence");
        let mut enable_idempotence = parse_bool(value, "enable.idempotence")?;
        let max_in_flight = parse_int(
            value,
            "max.in.flight.requests.per.connection",
            1,
            i64::from(i32::MAX),
        )? as usize;
        let retries = parse_int(value, "retries", 0, i64::from(i32::MAX))? as i32;
        let transactional_id = settings
            .get("transactional.id")
            .map(|id| id.trim().to_string())
            .filter(|id| !id.is_empty());
        // Kafka's rules: explicit idempotence conflicts are errors, implicit ones turn
        // idempotence off.
        let conflicts = [
            (
                acks != Acks::All,
                "acks",
                "must be all (-1) for the idempotent producer",
            ),
            (
                max_in_flight > 5,
                "max.in.flight.requests.per.connection",
                "must be at most 5 for the idempotent producer",
            ),
            (
                retries == 0,
                "retries",
                "must be greater than 0 for the idempotent producer",
            ),
        ];
        for (conflicting, key, reason) in conflicts {
            if conflicting && enable_idempotence {
                if idempotence_explicit || transactional_id.is_some() {
                    return Err(config_error(key, reason));
                }
                enable_idempotence = false;
            }
        }
        if transactional_id.is_some() && !enable_idempotence {
            return Err(config_error(
                "enable.idempotence",
                "cannot be false when transactional.id is set",
            ));
        }
        let linger_ms = parse_int(value, "linger.ms", 0, i64::MAX)? as u64;
        let request_timeout_ms =
            parse_int(value, "request.timeout.ms", 0, i64::from(i32::MAX))? as u64;
        let delivery_timeout_ms =
            parse_int(value, "delivery.timeout.ms", 0, i64::from(i32::MAX))? as u64;
        if delivery_timeout_ms < linger_ms + request_timeout_ms {
            return Err(config_error(
                "delivery.timeout.ms",
                &format!(
                    "should be equal to or larger than linger.ms + request.timeout.ms ({})",
                    linger_ms + request_timeout_ms
                ),
            ));
        }
        let partitioner_class = value("partitioner.class").unwrap_or("default");
        let partitioner_ignore_keys = match partitioner_class {
            "" | "default" => parse_bool(value, "partitioner.ignore.keys")?,
            "uniform_sticky" => true,
            other => {
                return Err(config_error(
                    "partitioner.class",
                    &format!(
                        "unknown partitioner {other:?}; expected default or uniform_sticky \
                         (a custom partitioner is set with ProducerConfigBuilder::partitioner)"
                    ),
                ));
            }
        };
        let metric_config = MetricConfig::from_settings(
            parse_int(value, metrics::SAMPLE_WINDOW_KEY, 1, i64::MAX)? as u64,
            parse_int(value, metrics::NUM_SAMPLES_KEY, 1, i64::from(i32::MAX))? as u64,
        )
        .map_err(|(key, reason)| config_error(key, &reason))?;
        let level = value(metrics::RECORDING_LEVEL_KEY).unwrap_or("INFO");
        let metrics_recording_level = RecordingLevel::from_name(level).ok_or_else(|| {
            config_error(
                metrics::RECORDING_LEVEL_KEY,
                &format!("invalid value {level:?}; expected one of INFO, DEBUG, TRACE"),
            )
        })?;
        let client_id = match value("client.id").unwrap_or("") {
            "" => format!(
                "producer-{}",
                NEXT_CLIENT_NUMBER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
            id => id.to_string(),
        };
        Ok(ProducerConfig {
            bootstrap_servers,
            client_id,
            acks,
            linger_ms,
            batch_size: parse_int(value, "batch.size", 0, i64::from(i32::MAX))? as usize,
            buffer_memory: parse_int(value, "buffer.memory", 0, i64::from(u32::MAX))? as usize,
            compression,
            enable_idempotence,
            max_in_flight_requests_per_connection: max_in_flight,
            retries,
            delivery_timeout_ms,
            request_timeout_ms,
            max_block_ms: parse_int(value, "max.block.ms", 0, i64::MAX)? as u64,
            transactional_id,
            transaction_timeout_ms: parse_int(
                value,
                "transaction.timeout.ms",
                1,
                i64::from(i32::MAX),
            )? as i32,
            partitioner_ignore_keys,
            partitioner: None,
            max_request_size: parse_int(value, "max.request.size", 0, i64::from(i32::MAX))?
                as usize,
            retry_backoff_ms: parse_int(value, "retry.backoff.ms", 0, i64::MAX)? as u64,
            retry_backoff_max_ms: parse_int(value, "retry.backoff.max.ms", 0, i64::MAX)? as u64,
            metadata_max_age_ms: parse_int(value, "metadata.max.age.ms", 0, i64::MAX)? as u64,
            socket_connection_setup_timeout_ms: parse_int(
                value,
                "socket.connection.setup.timeout.ms",
                0,
                i64::MAX,
            )? as u64,
            metric_config,
            metrics_recording_level,
        })
    }

    /// [`from_map`](ProducerConfig::from_map) over `(key, value)` pairs.
    // Not `FromIterator`: building a config can fail, and `from_iter` there cannot.
    #[allow(clippy::should_implement_trait)]
    pub fn from_iter<K: Into<String>, V: Into<String>>(
        settings: impl IntoIterator<Item = (K, V)>,
    ) -> Result<ProducerConfig, ProducerError> {
        let map: BTreeMap<String, String> = settings
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .collect();
        ProducerConfig::from_map(&map)
    }

    /// A typed builder, starting from Kafka's defaults.
    pub fn builder(
        bootstrap_servers: impl IntoIterator<Item = impl Into<String>>,
    ) -> ProducerConfigBuilder {
        let servers: Vec<String> = bootstrap_servers.into_iter().map(Into::into).collect();
        let mut settings = BTreeMap::new();
        settings.insert("bootstrap.servers".to_string(), servers.join(","));
        ProducerConfigBuilder {
            settings,
            partitioner: None,
        }
    }

    /// The settings of the connections the producer opens.
    pub(crate) fn client_config(&self) -> ClientConfig {
        ClientConfig {
            bootstrap_servers: self.bootstrap_servers.clone(),
            client_id: self.client_id.clone(),
            request_timeout_ms: self.request_timeout_ms,
            socket_connection_setup_timeout_ms: self.socket_connection_setup_timeout_ms,
            max_in_flight_requests_per_connection: self.max_in_flight_requests_per_connection,
            ..ClientConfig::default()
        }
    }
}

/// Typed settings, checked by [`ProducerConfig::from_map`] when built.
#[derive(Clone)]
pub struct ProducerConfigBuilder {
    settings: BTreeMap<String, String>,
    partitioner: Option<Arc<dyn Partitioner>>,
}

impl ProducerConfigBuilder {
    /// Any key by its Kafka name.
    pub fn set(mut self, key: &str, value: impl ToString) -> Self {
        self.settings.insert(key.to_string(), value.to_string());
        self
    }
    pub fn client_id(self, id: &str) -> Self {
        self.set("client.id", id)
    }
    pub fn acks(self, acks: Acks) -> Self {
        self.set("acks", acks.wire_value())
    }
    pub fn linger_ms(self, linger_ms: u64) -> Self {
        self.set("linger.ms", linger_ms)
    }
    pub fn batch_size(self, bytes: usize) -> Self {
        self.set("batch.size", bytes)
    }
    pub fn buffer_memory(self, bytes: usize) -> Self {
        self.set("buffer.memory", bytes)
    }
    pub fn compression(self, compression: Compression) -> Self {
        self.set("compression.type", compression.name())
    }
    pub fn enable_idempotence(self, enable: bool) -> Self {
        self.set("enable.idempotence", enable)
    }
    pub fn max_in_flight_requests_per_connection(self, requests: usize) -> Self {
        self.set("max.in.flight.requests.per.connection", requests)
    }
    pub fn retries(self, retries: i32) -> Self {
        self.set("retries", retries)
    }
    pub fn delivery_timeout_ms(self, timeout_ms: u64) -> Self {
        self.set("delivery.timeout.ms", timeout_ms)
    }
    pub fn request_timeout_ms(self, timeout_ms: u64) -> Self {
        self.set("request.timeout.ms", timeout_ms)
    }
    pub fn max_block_ms(self, timeout_ms: u64) -> Self {
        self.set("max.block.ms", timeout_ms)
    }
    pub fn transactional_id(self, id: &str) -> Self {
        self.set("transactional.id", id)
    }
    pub fn transaction_timeout_ms(self, timeout_ms: i32) -> Self {
        self.set("transaction.timeout.ms", timeout_ms)
    }
    pub fn max_request_size(self, bytes: usize) -> Self {
        self.set("max.request.size", bytes)
    }
    pub fn retry_backoff_ms(self, backoff_ms: u64) -> Self {
        self.set("retry.backoff.ms", backoff_ms)
    }
    pub fn metadata_max_age_ms(self, age_ms: u64) -> Self {
        self.set("metadata.max.age.ms", age_ms)
    }
    /// `metrics.sample.window.ms`: how long one sample of a windowed metric lasts.
    pub fn metrics_sample_window_ms(self, window_ms: u64) -> Self {
        self.set(metrics::SAMPLE_WINDOW_KEY, window_ms)
    }
    /// `metrics.num.samples`: the samples a windowed metric spans.
    pub fn metrics_num_samples(self, samples: u32) -> Self {
        self.set(metrics::NUM_SAMPLES_KEY, samples)
    }
    /// A custom partitioner (what `partitioner.class` names in the Java client).
    pub fn partitioner(mut self, partitioner: Arc<dyn Partitioner>) -> Self {
        self.partitioner = Some(partitioner);
        self
    }
    /// Validates the settings.
    pub fn build(self) -> Result<ProducerConfig, ProducerError> {
        let mut config = ProducerConfig::from_map(&self.settings)?;
        config.partitioner = self.partitioner;
        Ok(config)
    }
}

fn config_error(key: &str, reason: &str) -> ProducerError {
    ProducerError::Config {
        key: key.to_string(),
        reason: reason.to_string(),
    }
}

fn parse_bool<'a>(
    value: impl Fn(&str) -> Option<&'a str>,
    key: &str,
) -> Result<bool, ProducerError> {
    match value(key).map(str::to_ascii_lowercase).as_deref() {
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        other => Err(config_error(
            key,
            &format!("invalid value {other:?}; expected true or false"),
        )),
    }
}

fn parse_int<'a>(
    value: impl Fn(&str) -> Option<&'a str>,
    key: &str,
    min: i64,
    max: i64,
) -> Result<i64, ProducerError> {
    let text = value(key).unwrap_or("");
    let number: i64 = text
        .parse()
        .map_err(|_| config_error(key, &format!("invalid value {text:?}; expected an integer")))?;
    if number < min || number > max {
        return Err(config_error(
            key,
            &format!("value {number} is out of range [{min}, {max}]"),
        ));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<ProducerConfig, ProducerError> {
        let mut all = vec![("bootstrap.servers", "127.0.0.1:9092")];
        all.extend_from_slice(pairs);
        ProducerConfig::from_iter(all)
    }

    #[test]
    fn defaults_are_kafkas() {
        let config = config(&[]).unwrap();
        assert_eq!(config.acks, Acks::All);
        assert_eq!(config.linger_ms, 5);
        assert_eq!(config.batch_size, 16384);
        assert_eq!(config.buffer_memory, 33554432);
        assert_eq!(config.compression, Compression::None);
        assert!(config.enable_idempotence);
        assert_eq!(config.max_in_flight_requests_per_connection, 5);
        assert_eq!(config.retries, i32::MAX);
        assert_eq!(config.delivery_timeout_ms, 120_000);
        assert_eq!(config.request_timeout_ms, 30_000);
        assert_eq!(config.max_block_ms, 60_000);
        assert_eq!(config.transaction_timeout_ms, 60_000);
        assert_eq!(config.max_request_size, 1_048_576);
        assert_eq!(config.retry_backoff_ms, 100);
        assert_eq!(config.metadata_max_age_ms, 300_000);
        assert!(config.client_id.starts_with("producer-"));
        assert_eq!(config.metric_config, MetricConfig::default());
        assert_eq!(config.metrics_recording_level, RecordingLevel::Info);
    }

    #[test]
    fn invalid_settings_name_their_key() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[("no.such.key", "1")], "no.such.key"),
            (&[("acks", "2")], "acks"),
            (&[("compression.type", "brotli")], "compression.type"),
            (&[("linger.ms", "soon")], "linger.ms"),
            (&[("batch.size", "-1")], "batch.size"),
            (
                &[("metrics.sample.window.ms", "0")],
                "metrics.sample.window.ms",
            ),
            (&[("metrics.num.samples", "0")], "metrics.num.samples"),
            (
                &[("metrics.recording.level", "LOUD")],
                "metrics.recording.level",
            ),
            (&[("enable.idempotence", "true"), ("acks", "1")], "acks"),
            (
                &[
                    ("enable.idempotence", "true"),
                    ("max.in.flight.requests.per.connection", "6"),
                ],
                "max.in.flight.requests.per.connection",
            ),
            (
                &[("transactional.id", "t"), ("enable.idempotence", "false")],
                "enable.idempotence",
            ),
            (&[("transactional.id", "t"), ("retries", "0")], "retries"),
            (&[("delivery.timeout.ms", "1000")], "delivery.timeout.ms"),
            (
                &[("partitioner.class", "com.example.Mine")],
                "partitioner.class",
            ),
        ];
        for (pairs, key) in cases {
            match config(pairs) {
                Err(ProducerError::Config { key: named, .. }) => {
                    assert_eq!(&named, key, "{pairs:?}")
                }
                other => panic!("{pairs:?}: {other:?}"),
            }
        }
        assert!(matches!(
            ProducerConfig::from_iter([("acks", "all")]),
            Err(ProducerError::Config { key, .. }) if key == "bootstrap.servers"
        ));
    }

    #[test]
    fn implicit_idempotence_yields_to_conflicting_settings() {
        let config = config(&[("acks", "1")]).unwrap();
        assert!(!config.enable_idempotence);
        assert_eq!(config.acks, Acks::Leader);
    }

    #[test]
    fn builder_goes_through_the_same_validation() {
        let config = ProducerConfig::builder(["127.0.0.1:9092"])
            .linger_ms(50)
            .compression(Compression::Zstd)
            .transactional_id("tx")
            .build()
            .unwrap();
        assert_eq!(config.linger_ms, 50);
        assert_eq!(config.compression, Compression::Zstd);
        assert_eq!(config.transactional_id.as_deref(), Some("tx"));
        let error = ProducerConfig::builder(["127.0.0.1:9092"])
            .acks(Acks::Leader)
            .enable_idempotence(true)
            .build()
            .unwrap_err();
        assert!(error.to_string().contains("acks"), "{error}");
    }
}
