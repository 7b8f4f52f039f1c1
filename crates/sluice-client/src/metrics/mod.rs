//! Client metrics with Kafka's model and names (`org.apache.kafka.common.metrics`): a
//! [`Metrics`] registry per producer or consumer holds sensors; a sensor is recorded
//! with one value at a time and feeds its statistics (`Avg`, `Max`, `Rate`,
//! `CumulativeSum`, ... in `stats`), each published under a [`MetricName`] (name,
//! group, tags) exactly as the Java client names it, so dashboards and alerts written
//! for Java clients (`records-lag-max`, `record-send-rate`, ...) read these unchanged.
//!
//! Windows follow `metrics.sample.window.ms` (default 30 000) and `metrics.num.samples`
//! (default 2), read from the client's configuration like its other keys. Values are
//! computed when read ([`Metrics::values`], Java's `metrics()`) or scraped through
//! [`PrometheusCollector`], which names them as the common JMX exporter rule names the
//! Java client's MBeans: `kafka_<consumer|producer>_<group>_<name>` in snake case, each
//! tag a label (`client_id`, `topic`, `partition`).
//!
//! Latencies and times are milliseconds, with a fraction: Java reads a millisecond
//! clock, so a request answered within a millisecond shows 0 there and its true time
//! here.
//!
//! Not here: metric reporters (`metric.reporters`, JMX); `metrics.recording.level` is
//! read and checked, but every metric here is recorded at INFO, the default, so it
//! changes nothing (Kafka's DEBUG metrics, the per-node ones, are not implemented).
//!
//! Cost of recording (the hot path): a sensor is recorded once per batch, request,
//! response, commit or drained partition, never per record. One recording reads the
//! monotonic clock (a vDSO call, ~25 ns), takes the sensor's own mutex (uncontended but
//! for a concurrent read of the values, which holds it for a few float operations), and
//! updates each statistic in place: a few float operations and, when a window
//! completes, recycling a sample. Samples live in a ring allocated when the sensor is
//! made (`samples + 1` entries), so recording never allocates. Per-partition and
//! per-topic sensors are made (allocated) when a partition or topic is first seen.

pub(crate) mod network;
mod prometheus;
pub(crate) mod stats;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

pub use prometheus::{PrometheusCollector, prometheus_name, register_prometheus};
use stats::{Rate, SampledKind, SampledStat, Stat};

/// How sampled statistics window their samples (Kafka's `MetricConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricConfig {
    /// `metrics.num.samples`: the samples a statistic spans (at least 1).
    pub samples: usize,
    /// `metrics.sample.window.ms`: how long one sample lasts (at least 1).
    pub time_window_ms: i64,
    /// Events after which a sample is complete whatever its age (Kafka's
    /// `eventWindow`; not configurable in the clients: unbounded).
    pub event_window: u64,
}

impl Default for MetricConfig {
    fn default() -> Self {
        MetricConfig {
            samples: 2,
            time_window_ms: 30_000,
            event_window: u64::MAX,
        }
    }
}

/// The keys the clients read for their metrics, with Kafka's defaults.
pub(crate) const SAMPLE_WINDOW_KEY: &str = "metrics.sample.window.ms";
pub(crate) const NUM_SAMPLES_KEY: &str = "metrics.num.samples";
pub(crate) const RECORDING_LEVEL_KEY: &str = "metrics.recording.level";

/// `metrics.recording.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecordingLevel {
    #[default]
    Info,
    Debug,
    Trace,
}

impl RecordingLevel {
    /// Kafka's names: `INFO`, `DEBUG`, `TRACE` (Kafka compares them as given; case is
    /// ignored here).
    pub fn from_name(name: &str) -> Option<RecordingLevel> {
        match name.to_ascii_uppercase().as_str() {
            "INFO" => Some(RecordingLevel::Info),
            "DEBUG" => Some(RecordingLevel::Debug),
            "TRACE" => Some(RecordingLevel::Trace),
            _ => None,
        }
    }
}

impl MetricConfig {
    /// Checks a sample window and count from configuration. Kafka accepts a window of
    /// 0 and then divides by it when measuring a rate; here it is refused up front.
    pub(crate) fn from_settings(
        time_window_ms: u64,
        samples: u64,
    ) -> Result<MetricConfig, (&'static str, String)> {
        if time_window_ms == 0 || time_window_ms > i64::MAX as u64 / 1024 {
            return Err((
                SAMPLE_WINDOW_KEY,
                format!("value {time_window_ms} must be at least 1 (a rate divides by it)"),
            ));
        }
        if samples == 0 || samples > 1024 {
            return Err((
                NUM_SAMPLES_KEY,
                format!("value {samples} is out of range [1, 1024]"),
            ));
        }
        Ok(MetricConfig {
            samples: samples as usize,
            time_window_ms: time_window_ms as i64,
            event_window: u64::MAX,
        })
    }
}

/// A metric's identity, as Kafka's `MetricName`: its name, its group, and its tags
/// (`client-id`, and `topic`/`partition` for per-topic and per-partition metrics).
/// Ordered by group, then name, then tags.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MetricName {
    pub name: String,
    pub group: String,
    pub tags: BTreeMap<String, String>,
}

impl MetricName {
    pub fn new<K: Into<String>, V: Into<String>>(
        name: impl Into<String>,
        group: impl Into<String>,
        tags: impl IntoIterator<Item = (K, V)>,
    ) -> MetricName {
        MetricName {
            name: name.into(),
            group: group.into(),
            tags: tags
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
        }
    }
}

impl Ord for MetricName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.group, &self.name, &self.tags).cmp(&(&other.group, &other.name, &other.tags))
    }
}

impl PartialOrd for MetricName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Display for MetricName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.group, self.name)?;
        let mut separator = '{';
        for (key, value) in &self.tags {
            write!(f, "{separator}{key}={value}")?;
            separator = ',';
        }
        if !self.tags.is_empty() {
            write!(f, "}}")?;
        }
        Ok(())
    }
}

/// One metric's current value, with Kafka's description of it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    pub name: MetricName,
    pub description: &'static str,
    /// NaN where Kafka reports NaN (an average or maximum with no samples in the
    /// window).
    pub value: f64,
}

/// Which Java client's MBean domain the metrics belong to (`kafka.consumer`,
/// `kafka.producer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientType {
    Consumer,
    Producer,
}

impl ClientType {
    pub fn name(self) -> &'static str {
        match self {
            ClientType::Consumer => "consumer",
            ClientType::Producer => "producer",
        }
    }
}

/// One client's metrics (Kafka's `Metrics`); cheap to clone (a shared handle).
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
}

pub(crate) struct Registry {
    config: MetricConfig,
    client_type: ClientType,
    client_id: String,
    /// The clock's zero: times are milliseconds since, monotonic.
    epoch: Instant,
    /// By sensor name (Kafka's sensor names: `records-lag`, `t-0.records-lag`, ...).
    sensors: Mutex<BTreeMap<String, Arc<Sensor>>>,
    gauges: Mutex<Vec<Gauge>>,
}

/// A metric computed when read (Kafka's `Gauge`/`Measurable` added with `addMetric`).
struct Gauge {
    name: MetricName,
    description: &'static str,
    measure: Box<dyn Fn() -> f64 + Send + Sync>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("client_type", &self.registry.client_type)
            .field("client_id", &self.registry.client_id)
            .field("config", &self.registry.config)
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves its data whole (plain stores and float updates).
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Metrics {
    /// An empty registry for one client, tagging every metric `client-id`.
    pub fn new(client_type: ClientType, client_id: &str, config: MetricConfig) -> Metrics {
        Metrics {
            registry: Arc::new(Registry {
                config,
                client_type,
                client_id: client_id.to_string(),
                epoch: Instant::now(),
                sensors: Mutex::new(BTreeMap::new()),
                gauges: Mutex::new(Vec::new()),
            }),
        }
    }

    pub fn config(&self) -> MetricConfig {
        self.registry.config
    }

    pub fn client_type(&self) -> ClientType {
        self.registry.client_type
    }

    pub fn client_id(&self) -> &str {
        &self.registry.client_id
    }

    /// Every metric's current value (Java's `metrics()`, with each metric's
    /// `metricValue()`).
    pub fn values(&self) -> BTreeMap<MetricName, f64> {
        self.snapshot()
            .into_iter()
            .map(|metric| (metric.name, metric.value))
            .collect()
    }

    /// The current value of `name` in `group` with no tags but `client-id` (the
    /// client-wide metrics), if there is such a metric.
    pub fn value(&self, group: &str, name: &str) -> Option<f64> {
        let wanted = self.metric_name(name, group, &[]);
        self.snapshot()
            .into_iter()
            .find(|metric| metric.name == wanted)
            .map(|metric| metric.value)
    }

    /// Every metric with its description and current value, in [`MetricName`] order.
    pub fn snapshot(&self) -> Vec<MetricValue> {
        let now_ms = self.registry.now_ms();
        let sensors: Vec<Arc<Sensor>> = lock(&self.registry.sensors).values().cloned().collect();
        let mut out = Vec::new();
        for sensor in sensors {
            sensor.measure_into(now_ms, &mut out);
        }
        for gauge in lock(&self.registry.gauges).iter() {
            out.push(MetricValue {
                name: gauge.name.clone(),
                description: gauge.description,
                value: (gauge.measure)(),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Registers these metrics with a Prometheus registry (see [`register_prometheus`]).
    pub fn register_prometheus(
        &self,
        registry: &mut prometheus_client::registry::Registry,
    ) -> PrometheusCollector {
        register_prometheus(registry, self)
    }

    /// The name of a metric of this client: `client-id` plus `tags`.
    pub(crate) fn metric_name(&self, name: &str, group: &str, tags: &[(&str, &str)]) -> MetricName {
        let mut all = BTreeMap::new();
        all.insert("client-id".to_string(), self.registry.client_id.clone());
        for (key, value) in tags {
            all.insert((*key).to_string(), (*value).to_string());
        }
        MetricName {
            name: name.to_string(),
            group: group.to_string(),
            tags: all,
        }
    }

    /// Starts a sensor named `sensor` whose metrics are in `group` with `tags` (besides
    /// `client-id`).
    pub(crate) fn sensor(&self, sensor: &str, group: &str, tags: &[(&str, &str)]) -> SensorBuilder {
        SensorBuilder {
            metrics: self.clone(),
            key: sensor.to_string(),
            group: group.to_string(),
            tags: tags
                .iter()
                .map(|(key, value)| ((*key).to_string(), (*value).to_string()))
                .collect(),
            names: Vec::new(),
            stats: Vec::new(),
        }
    }

    /// Drops a sensor and its metrics (Kafka's `removeSensor`), as for a partition no
    /// longer assigned.
    pub(crate) fn remove_sensor(&self, sensor: &str) {
        lock(&self.registry.sensors).remove(sensor);
    }

    /// Adds a metric computed when read.
    pub(crate) fn add_gauge(
        &self,
        name: &str,
        group: &str,
        description: &'static str,
        measure: impl Fn() -> f64 + Send + Sync + 'static,
    ) {
        let name = self.metric_name(name, group, &[]);
        let mut gauges = lock(&self.registry.gauges);
        gauges.retain(|gauge| gauge.name != name);
        gauges.push(Gauge {
            name,
            description,
            measure: Box::new(measure),
        });
    }

    pub(crate) fn downgrade(&self) -> std::sync::Weak<Registry> {
        Arc::downgrade(&self.registry)
    }

    pub(crate) fn from_registry(registry: Arc<Registry>) -> Metrics {
        Metrics { registry }
    }
}

impl Registry {
    fn now_ms(&self) -> i64 {
        i64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(i64::MAX)
    }
}

/// A sensor: one recorded quantity feeding several statistics (Kafka's `Sensor`).
pub(crate) struct Sensor {
    config: MetricConfig,
    epoch: Instant,
    names: Vec<(MetricName, &'static str)>,
    /// One per name, in the same order.
    stats: Mutex<Vec<Stat>>,
}

impl Sensor {
    /// Records `value` now.
    pub(crate) fn record(&self, value: f64) {
        let now_ms = i64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(i64::MAX);
        self.record_at(value, now_ms);
    }

    /// Records `value` at `now_ms` (milliseconds on the registry's clock).
    pub(crate) fn record_at(&self, value: f64, now_ms: i64) {
        for stat in lock(&self.stats).iter_mut() {
            stat.record(&self.config, value, now_ms);
        }
    }

    fn measure_into(&self, now_ms: i64, out: &mut Vec<MetricValue>) {
        let mut stats = lock(&self.stats);
        for ((name, description), stat) in self.names.iter().zip(stats.iter_mut()) {
            out.push(MetricValue {
                name: name.clone(),
                description,
                value: stat.measure(&self.config, now_ms),
            });
        }
    }
}

/// Builds a sensor's statistics (Kafka's `sensor.add(...)` calls).
pub(crate) struct SensorBuilder {
    metrics: Metrics,
    key: String,
    group: String,
    tags: Vec<(String, String)>,
    names: Vec<(MetricName, &'static str)>,
    stats: Vec<Stat>,
}

/// Milliseconds per unit of a rate.
pub(crate) const PER_SECOND: f64 = 1_000.0;
pub(crate) const PER_HOUR: f64 = 3_600_000.0;

impl SensorBuilder {
    fn add(mut self, name: &str, description: &'static str, stat: Stat) -> Self {
        let tags: Vec<(&str, &str)> = self
            .tags
            .iter()
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        let name = self.metrics.metric_name(name, &self.group, &tags);
        self.names.push((name, description));
        self.stats.push(stat);
        self
    }

    fn sampled(self, name: &str, description: &'static str, kind: SampledKind) -> Self {
        let stat = SampledStat::new(kind, &self.metrics.registry.config);
        self.add(name, description, Stat::Sampled(stat))
    }

    pub(crate) fn avg(self, name: &str, description: &'static str) -> Self {
        self.sampled(name, description, SampledKind::Avg)
    }

    pub(crate) fn max(self, name: &str, description: &'static str) -> Self {
        self.sampled(name, description, SampledKind::Max)
    }

    pub(crate) fn min(self, name: &str, description: &'static str) -> Self {
        self.sampled(name, description, SampledKind::Min)
    }

    /// The last recorded value (Kafka's `Value`).
    pub(crate) fn value(self, name: &str, description: &'static str) -> Self {
        self.add(name, description, Stat::Value(0.0))
    }

    pub(crate) fn cumulative_sum(self, name: &str, description: &'static str) -> Self {
        self.add(name, description, Stat::CumulativeSum(0.0))
    }

    pub(crate) fn cumulative_count(self, name: &str, description: &'static str) -> Self {
        self.add(name, description, Stat::CumulativeCount(0.0))
    }

    /// The rate of recordings per `unit_ms` (Kafka's `Rate` over a `WindowedCount`).
    pub(crate) fn count_rate(self, name: &str, description: &'static str, unit_ms: f64) -> Self {
        let rate = Rate::new(SampledKind::Count, unit_ms, &self.metrics.registry.config);
        self.add(name, description, Stat::Rate(rate))
    }

    /// Kafka's `Meter` over a `WindowedSum`: `<base>-rate` (recorded values per second)
    /// and `<base>-total` (their sum).
    pub(crate) fn meter(self, rate: (&str, &'static str), total: (&str, &'static str)) -> Self {
        let stat = Rate::new(SampledKind::Sum, PER_SECOND, &self.metrics.registry.config);
        self.add(total.0, total.1, Stat::CumulativeSum(0.0))
            .add(rate.0, rate.1, Stat::Rate(stat))
    }

    /// Kafka's `Meter` over a `WindowedCount`: recordings per second and their count.
    pub(crate) fn count_meter(
        self,
        rate: (&str, &'static str),
        total: (&str, &'static str),
    ) -> Self {
        self.cumulative_count(total.0, total.1)
            .count_rate(rate.0, rate.1, PER_SECOND)
    }

    /// Registers the sensor, or returns the one already registered under its name.
    pub(crate) fn build(self) -> Arc<Sensor> {
        let registry = &self.metrics.registry;
        let mut sensors = lock(&registry.sensors);
        sensors
            .entry(self.key)
            .or_insert_with(|| {
                Arc::new(Sensor {
                    config: registry.config,
                    epoch: registry.epoch,
                    names: self.names,
                    stats: Mutex::new(self.stats),
                })
            })
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sensor_publishes_each_statistic_under_its_kafka_name() {
        let metrics = Metrics::new(ClientType::Consumer, "c1", MetricConfig::default());
        let sensor = metrics
            .sensor("fetch-latency", "consumer-fetch-manager-metrics", &[])
            .avg("fetch-latency-avg", "avg")
            .max("fetch-latency-max", "max")
            .count_meter(("fetch-rate", "rate"), ("fetch-total", "total"))
            .build();
        let values = metrics.values();
        let get = |name: &str| {
            values[&MetricName::new(
                name,
                "consumer-fetch-manager-metrics",
                [("client-id", "c1")],
            )]
        };
        assert!(get("fetch-latency-avg").is_nan());
        assert!(get("fetch-latency-max").is_nan());
        assert_eq!(get("fetch-rate"), 0.0);
        assert_eq!(get("fetch-total"), 0.0);
        sensor.record_at(10.0, 0);
        sensor.record_at(30.0, 1_000);
        let value = |name: &str| metrics.value("consumer-fetch-manager-metrics", name);
        assert_eq!(value("fetch-latency-avg"), Some(20.0));
        assert_eq!(value("fetch-latency-max"), Some(30.0));
        assert_eq!(value("fetch-total"), Some(2.0));
        assert!(value("fetch-rate").is_some_and(|rate| rate > 0.0));
        assert_eq!(value("no-such-metric"), None);
        // The same sensor name returns the same sensor.
        let again = metrics
            .sensor("fetch-latency", "consumer-fetch-manager-metrics", &[])
            .build();
        assert!(Arc::ptr_eq(&sensor, &again));
    }

    #[test]
    fn tagged_sensors_and_gauges_come_and_go() {
        let metrics = Metrics::new(ClientType::Consumer, "c1", MetricConfig::default());
        let partition = metrics
            .sensor(
                "t-0.records-lag",
                "consumer-fetch-manager-metrics",
                &[("topic", "t"), ("partition", "0")],
            )
            .value("records-lag", "lag")
            .build();
        partition.record(7.0);
        metrics.add_gauge(
            "assigned-partitions",
            "consumer-coordinator-metrics",
            "n",
            || 3.0,
        );
        let names: Vec<String> = metrics.values().keys().map(ToString::to_string).collect();
        assert_eq!(
            names,
            vec![
                "consumer-coordinator-metrics:assigned-partitions{client-id=c1}",
                "consumer-fetch-manager-metrics:records-lag{client-id=c1,partition=0,topic=t}",
            ]
        );
        metrics.remove_sensor("t-0.records-lag");
        assert_eq!(metrics.values().len(), 1);
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(
            MetricConfig::from_settings(30_000, 2),
            Ok(MetricConfig::default())
        );
        assert_eq!(
            MetricConfig::from_settings(0, 2).map_err(|error| error.0),
            Err(SAMPLE_WINDOW_KEY)
        );
        assert_eq!(
            MetricConfig::from_settings(1_000, 0).map_err(|error| error.0),
            Err(NUM_SAMPLES_KEY)
        );
        assert_eq!(
            RecordingLevel::from_name("debug"),
            Some(RecordingLevel::Debug)
        );
        assert_eq!(RecordingLevel::from_name("verbose"), None);
    }
}
