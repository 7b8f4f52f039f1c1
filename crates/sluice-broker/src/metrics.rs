//! The broker's metrics, served as Prometheus text on `GET /metrics` at
//! `metrics.listener` (default `127.0.0.1:9404`; an empty value turns it off).
//!
//! Names follow what the common jmx_exporter rules (`kafka-2_0_0.yml`, lowercased)
//! make of Kafka's MBeans, so dashboards built for Kafka work unchanged:
//! `kafka.server<type=ReplicaManager, name=LeaderCount><>Value` is
//! `kafka_server_replicamanager_leadercount`; a `...PerSec` meter's `Count` is a counter
//! without the `PerSec`, ending `_total` (`kafka_server_replicamanager_isrshrinks_total`,
//! `kafka_network_requestmetrics_requests_total{request,version}`); a histogram's
//! `NthPercentile` is a gauge with a `quantile` label
//! (`kafka_network_requestmetrics_totaltimems{request,quantile="0.99"}`).
//!
//! What it is not: a general metrics registry. Gauges are computed at scrape time from
//! the [`Broker`] (metadata image and local replicas), so they cannot drift from the
//! state they describe; only per-request counts and latencies are recorded as requests
//! are handled, and the broker-wide `BrokerTopicMetrics` (messages and bytes in, bytes
//! out) are counters the leader append and the Fetch handler add to
//! (`ReplicaManager::traffic`).
//!
//! What it costs on the hot path, per request: one `Instant::now()` pair, two relaxed
//! atomic adds (the request count, the latency window's cursor) and one relaxed atomic
//! store (the latency sample). No lock, no allocation: the per-API slots exist from the
//! start, and an API's latency window (4 KiB) is allocated on its first request.
//!
//! Latency percentiles: Kafka's histograms use a Yammer exponentially decaying
//! reservoir of 1028 samples biased to the last five minutes. Here each API keeps the
//! latest [`LATENCY_WINDOW`] samples in a ring (a sample overwrites the oldest); a
//! scrape copies the ring, sorts it and reads the nearest-rank percentiles. Both
//! describe recent requests; ours forgets by count rather than by time. The time
//! measured is from a request's header decode to its encoded response (Kafka's
//! `TotalTimeMs` also counts queueing and the socket write).

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use kafka_protocol::messages::ApiKey;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::broker::Broker;

/// API keys with a slot (Kafka's keys are below 100).
const API_KEY_SLOTS: usize = 128;
/// Versions counted per API (Kafka's highest is below 20).
const VERSION_SLOTS: usize = 32;
/// Latency samples kept per API (Kafka's reservoir holds 1028).
pub const LATENCY_WINDOW: usize = 1024;
/// The percentiles Kafka's histograms expose, as jmx_exporter labels them.
const QUANTILES: [(f64, &str); 6] = [
    (0.50, "0.50"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.98, "0.98"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];
/// The content type of prometheus-client's text encoding.
const OPENMETRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The latest latency samples of one API, in microseconds.
struct LatencyWindow {
    /// How many samples were ever recorded; the next one goes to `recorded % WINDOW`.
    recorded: AtomicU64,
    samples_us: [AtomicU32; LATENCY_WINDOW],
}

impl LatencyWindow {
    fn new() -> Box<LatencyWindow> {
        Box::new(LatencyWindow {
            recorded: AtomicU64::new(0),
            samples_us: std::array::from_fn(|_| AtomicU32::new(0)),
        })
    }

    fn record(&self, elapsed: Duration) {
        let micros = u32::try_from(elapsed.as_micros()).unwrap_or(u32::MAX);
        let slot = self.recorded.fetch_add(1, Ordering::Relaxed) as usize % LATENCY_WINDOW;
        self.samples_us[slot].store(micros, Ordering::Relaxed);
    }

    /// The window's samples, sorted. A sample being written during the copy may be
    /// the old or the new value: either is a real recent latency.
    fn sorted_samples_us(&self) -> Vec<u32> {
        let filled = (self.recorded.load(Ordering::Relaxed) as usize).min(LATENCY_WINDOW);
        let mut samples: Vec<u32> = self.samples_us[..filled]
            .iter()
            .map(|sample| sample.load(Ordering::Relaxed))
            .collect();
        samples.sort_unstable();
        samples
    }
}

/// The nearest-rank `quantile` of sorted samples.
fn percentile(sorted: &[u32], quantile: f64) -> u32 {
    debug_assert!(!sorted.is_empty());
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

struct ApiMetrics {
    requests_by_version: [AtomicU64; VERSION_SLOTS],
    latency: OnceLock<Box<LatencyWindow>>,
}

/// Per-API request counts and latencies, shared by every connection of a node.
pub struct RequestMetrics {
    apis: Box<[ApiMetrics]>,
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMetrics").finish_non_exhaustive()
    }
}

impl Default for RequestMetrics {
    fn default() -> Self {
        RequestMetrics {
            apis: (0..API_KEY_SLOTS)
                .map(|_| ApiMetrics {
                    requests_by_version: std::array::from_fn(|_| AtomicU64::new(0)),
                    latency: OnceLock::new(),
                })
                .collect(),
        }
    }
}

impl RequestMetrics {
    /// Counts one handled request and its time.
    pub fn record(&self, api_key: ApiKey, version: i16, elapsed: Duration) {
        let Some(api) = self.apis.get(api_key as usize) else {
            return;
        };
        if let Some(count) = api.requests_by_version.get(version as usize) {
            count.fetch_add(1, Ordering::Relaxed);
        }
        api.latency.get_or_init(LatencyWindow::new).record(elapsed);
    }

    /// Requests of `api_key` handled so far, all versions.
    pub fn requests(&self, api_key: ApiKey) -> u64 {
        self.apis.get(api_key as usize).map_or(0, |api| {
            api.requests_by_version
                .iter()
                .map(|count| count.load(Ordering::Relaxed))
                .sum()
        })
    }

    /// The APIs seen so far, with their Kafka request name.
    fn seen(&self) -> impl Iterator<Item = (&'static str, &ApiMetrics)> {
        self.apis.iter().enumerate().filter_map(|(key, api)| {
            api.latency.get()?;
            let name = ApiKey::try_from(key as i16).ok().map(api_name)?;
            Some((name, api))
        })
    }
}

/// Kafka's name of an API (`ApiKeys.name`), as the `request` label carries it.
fn api_name(api_key: ApiKey) -> &'static str {
    // kafka-protocol's variant names are Kafka's API names; leaked once per API key
    // (at most API_KEY_SLOTS strings) so scrapes do not format them again.
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (0..API_KEY_SLOTS as i16)
            .map(|key| match ApiKey::try_from(key) {
                Ok(api) => &*format!("{api:?}").leak(),
                Err(_) => "",
            })
            .collect()
    });
    names.get(api_key as usize).copied().unwrap_or("")
}

/// The address `metrics.listener` names; `None` when it is empty (metrics off).
pub fn configured_address(value: &str) -> Result<Option<SocketAddr>, String> {
    let value = value.trim();
    if value.is_empty() {
        return Ok(None);
    }
    value
        .to_socket_addrs()
        .map_err(|error| format!("cannot resolve {value}: {error}"))?
        .next()
        .map(Some)
        .ok_or_else(|| format!("{value} resolves to no address"))
}

/// Computes every metric at scrape time.
#[derive(Debug)]
struct BrokerCollector {
    broker: Arc<Broker>,
    requests: Arc<RequestMetrics>,
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: i64,
) -> Result<(), std::fmt::Error> {
    let gauge = ConstGauge::new(value);
    gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), std::fmt::Error> {
    let counter = ConstCounter::new(value);
    counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)
}

/// Counts over the metadata image, for this node and for the cluster.
#[derive(Debug, Default, PartialEq, Eq)]
struct PartitionCounts {
    hosted: i64,
    led: i64,
    under_replicated: i64,
    offline: i64,
    topics: i64,
    partitions: i64,
}

fn partition_counts(image: &sluice_metadata::MetadataImage, node_id: i32) -> PartitionCounts {
    let mut counts = PartitionCounts::default();
    for topic in image.topics() {
        counts.topics += 1;
        for partition in topic.partitions.values() {
            counts.partitions += 1;
            counts.hosted += i64::from(partition.replicas.contains(&node_id));
            counts.offline += i64::from(partition.leader < 0);
            if partition.leader == node_id {
                counts.led += 1;
                counts.under_replicated +=
                    i64::from(partition.isr.len() < partition.replicas.len());
            }
        }
    }
    counts
}

impl Collector for BrokerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let image = self.broker.image();
        let counts = partition_counts(&image, self.broker.node_id);
        let e = &mut encoder;
        gauge(
            e,
            "kafka_server_replicamanager_partitioncount",
            "Partitions with a replica on this broker.",
            counts.hosted,
        )?;
        gauge(
            e,
            "kafka_server_replicamanager_leadercount",
            "Partitions this broker leads.",
            counts.led,
        )?;
        gauge(
            e,
            "kafka_server_replicamanager_underreplicatedpartitions",
            "Partitions led here whose ISR is smaller than their replica set.",
            counts.under_replicated,
        )?;
        let traffic = &self.broker.replication.traffic;
        counter(
            e,
            "kafka_server_brokertopicmetrics_messagesin",
            "Records appended by produce requests, all topics.",
            traffic.messages_in.load(Ordering::Relaxed),
        )?;
        counter(
            e,
            "kafka_server_brokertopicmetrics_bytesin",
            "Record batch bytes appended by produce requests, all topics.",
            traffic.bytes_in.load(Ordering::Relaxed),
        )?;
        counter(
            e,
            "kafka_server_brokertopicmetrics_bytesout",
            "Record batch bytes served by fetch requests, all topics.",
            traffic.bytes_out.load(Ordering::Relaxed),
        )?;
        let replication = &self.broker.replication;
        counter(
            e,
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks on partitions led here.",
            replication.isr_shrinks.load(Ordering::Relaxed),
        )?;
        counter(
            e,
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions on partitions led here.",
            replication.isr_expands.load(Ordering::Relaxed),
        )?;
        counter(
            e,
            "kafka_server_replicamanager_failedisrupdates",
            "ISR changes the controller refused or that failed, on partitions led here.",
            replication.failed_isr_updates.load(Ordering::Relaxed),
        )?;
        // Kafka's UnderMinIsrPartitionCount: led partitions whose ISR is below the
        // effective min.insync.replicas.
        let under_min_isr = self
            .broker
            .replicas()
            .iter()
            .filter(|(_, replica)| replica.state().is_under_min_isr())
            .count();
        gauge(
            e,
            "kafka_server_replicamanager_underminisrpartitioncount",
            "Partitions led here whose ISR is below min.insync.replicas.",
            under_min_isr as i64,
        )?;
        // The active controller is the metadata quorum's leader.
        let quorum = self.broker.quorum().ok();
        gauge(
            e,
            "kafka_controller_kafkacontroller_activecontrollercount",
            "1 on the active controller.",
            i64::from(quorum.is_some_and(|q| q.is_leader())),
        )?;
        if let Some(quorum) = quorum {
            let metrics = quorum.raft.metrics().borrow().clone();
            let (end_offset, _) = quorum.log_end();
            // Kafka's kafka.server<type=raft-metrics> (KafkaRaftClient).
            gauge(
                e,
                "kafka_server_raft_metrics_current_leader",
                "The metadata quorum's leader, -1 when none is known.",
                metrics.current_leader.map_or(-1, |l| l as i64),
            )?;
            gauge(
                e,
                "kafka_server_raft_metrics_current_epoch",
                "The metadata quorum's epoch (Raft term).",
                metrics.current_term as i64,
            )?;
            gauge(
                e,
                "kafka_server_raft_metrics_log_end_offset",
                "The end offset of this node's metadata log.",
                end_offset,
            )?;
            gauge(
                e,
                "kafka_server_raft_metrics_high_watermark",
                "The offset of the first metadata record not applied here.",
                quorum.applied_end_offset(),
            )?;
        }
        gauge(
            e,
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            "Partitions without a leader.",
            counts.offline,
        )?;
        gauge(
            e,
            "kafka_controller_kafkacontroller_globaltopiccount",
            "Topics in the cluster.",
            counts.topics,
        )?;
        gauge(
            e,
            "kafka_controller_kafkacontroller_globalpartitioncount",
            "Partitions in the cluster.",
            counts.partitions,
        )?;
        self.encode_groups(e)?;
        self.encode_logs(e)?;
        self.encode_cleaner(e)?;
        self.encode_requests(e)
    }
}

impl BrokerCollector {
    /// The group coordinator's gauges, as Kafka 4.1 names them: the classic groups and
    /// committed offsets of `kafka.coordinator.group<type=GroupMetadataManager>`
    /// (`NumGroups`, `NumGroups<State>`, `NumOffsets`), and the per-protocol and
    /// per-state counts of `kafka.server<type=group-coordinator-metrics>` — for the
    /// partitions of `__consumer_offsets` this node leads.
    fn encode_groups(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.broker.groups.counts();
        gauge(
            encoder,
            "kafka_coordinator_group_groupmetadatamanager_numoffsets",
            "Committed offsets held by this coordinator.",
            counts.offsets,
        )?;
        gauge(
            encoder,
            "kafka_coordinator_group_groupmetadatamanager_numgroups",
            "Classic groups held by this coordinator.",
            counts.groups("classic", None),
        )?;
        for state in [
            "PreparingRebalance",
            "CompletingRebalance",
            "Stable",
            "Dead",
            "Empty",
        ] {
            gauge(
                encoder,
                &format!(
                    "kafka_coordinator_group_groupmetadatamanager_numgroups{}",
                    state.to_lowercase()
                ),
                "Classic groups in this state.",
                counts.groups("classic", Some(state)),
            )?;
        }
        let mut family = encoder.encode_descriptor(
            "kafka_server_group_coordinator_metrics_group_count",
            "Groups held by this coordinator, by protocol.",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for protocol in ["classic", "consumer"] {
            ConstGauge::new(counts.groups(protocol, None))
                .encode(family.encode_family(&[("protocol", protocol)])?)?;
        }
        let mut family = encoder.encode_descriptor(
            "kafka_server_group_coordinator_metrics_consumer_group_count",
            "Consumer (KIP-848) groups held by this coordinator, by state.",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for state in ["Empty", "Assigning", "Reconciling", "Stable", "Dead"] {
            ConstGauge::new(counts.groups("consumer", Some(state)))
                .encode(family.encode_family(&[("state", state.to_lowercase())])?)?;
        }
        Ok(())
    }
}

impl BrokerCollector {
    /// `kafka.log<type=LogCleaner, name=...>` and `kafka.log<type=LogCleanerManager,
    /// name=...>`, from the cleaner's last pass ([`crate::broker::CleanerMetrics`]).
    fn encode_cleaner(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let metrics = crate::broker::lock_cleaner_metrics(&self.broker);
        let since_last_run = if metrics.last_run_ms > 0 {
            (sluice_storage::now_ms() - metrics.last_run_ms).max(0)
        } else {
            0
        };
        for (name, help, value) in [
            (
                "kafka_log_logcleaner_max_buffer_utilization_percent",
                "How full the last cleaner pass's offset map got.",
                metrics.max_buffer_utilization_percent,
            ),
            (
                "kafka_log_logcleaner_cleaner_recopy_percent",
                "Bytes the last cleaner pass wrote, in percent of those it read.",
                metrics.cleaner_recopy_percent,
            ),
            (
                "kafka_log_logcleaner_max_clean_time_secs",
                "Seconds the last cleaner pass took.",
                metrics.max_clean_time_secs,
            ),
            (
                "kafka_log_logcleanermanager_max_dirty_percent",
                "The highest dirty ratio of a compacted log at the last scan, in percent.",
                metrics.max_dirty_percent,
            ),
            (
                "kafka_log_logcleanermanager_time_since_last_run_ms",
                "Milliseconds since the last cleaner pass ended.",
                since_last_run,
            ),
            (
                "kafka_log_logcleanermanager_uncleanable_partitions_count",
                "Partitions whose last cleaner pass failed.",
                metrics.uncleanable_partitions.len() as i64,
            ),
        ] {
            gauge(encoder, name, help, value)?;
        }
        Ok(())
    }
}

/// `topic` and `partition`, as jmx_exporter labels a `kafka.log` MBean.
type PartitionLabels = [(&'static str, String); 2];

impl BrokerCollector {
    /// `kafka.log<type=Log, name=Size|LogEndOffset|LogStartOffset, topic, partition>`.
    fn encode_logs(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let logs: Vec<(PartitionLabels, [i64; 3])> = self
            .broker
            .replicas()
            .into_iter()
            .map(|(tp, replica)| {
                let log = sluice_storage::lock(&replica.log);
                let values = [
                    i64::try_from(log.size_bytes()).unwrap_or(i64::MAX),
                    log.log_end_offset(),
                    log.log_start_offset(),
                ];
                (
                    [
                        ("topic", tp.topic.to_string()),
                        ("partition", tp.partition.to_string()),
                    ],
                    values,
                )
            })
            .collect();
        let families = [
            ("kafka_log_log_size", "Bytes of a partition's log."),
            (
                "kafka_log_log_logendoffset",
                "A partition's log end offset.",
            ),
            (
                "kafka_log_log_logstartoffset",
                "A partition's log start offset.",
            ),
        ];
        for (index, (name, help)) in families.into_iter().enumerate() {
            let mut family = encoder.encode_descriptor(
                name,
                help,
                None,
                prometheus_client::metrics::MetricType::Gauge,
            )?;
            for (labels, values) in &logs {
                ConstGauge::new(values[index]).encode(family.encode_family(labels)?)?;
            }
        }
        Ok(())
    }

    /// `kafka.network<type=RequestMetrics, name=RequestsPerSec|TotalTimeMs, request, ...>`.
    fn encode_requests(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_descriptor(
            "kafka_network_requestmetrics_requests",
            "Requests handled, by API and version.",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (name, api) in self.requests.seen() {
            for (version, count) in api.requests_by_version.iter().enumerate() {
                let count = count.load(Ordering::Relaxed);
                if count > 0 {
                    let labels = [
                        ("request", name.to_string()),
                        ("version", version.to_string()),
                    ];
                    ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
                }
            }
        }
        let mut family = encoder.encode_descriptor(
            "kafka_network_requestmetrics_totaltimems",
            "Request time in milliseconds, percentiles over the latest requests of each API.",
            None,
            prometheus_client::metrics::MetricType::Gauge,
        )?;
        for (name, api) in self.requests.seen() {
            let Some(window) = api.latency.get() else {
                continue;
            };
            let samples = window.sorted_samples_us();
            if samples.is_empty() {
                continue;
            }
            for (quantile, label) in QUANTILES {
                let labels = [("request", name), ("quantile", label)];
                let millis = f64::from(percentile(&samples, quantile)) / 1000.0;
                ConstGauge::new(millis).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// The `/metrics` endpoint of one node.
pub struct MetricsServer {
    listener: TcpListener,
    registry: Arc<Registry>,
}

impl MetricsServer {
    pub async fn bind(
        address: SocketAddr,
        broker: Arc<Broker>,
        requests: Arc<RequestMetrics>,
        extra_collectors: Vec<Box<dyn Collector>>,
    ) -> std::io::Result<MetricsServer> {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(BrokerCollector { broker, requests }));
        for collector in extra_collectors {
            registry.register_collector(collector);
        }
        Ok(MetricsServer {
            listener: TcpListener::bind(address).await?,
            registry: Arc::new(registry),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves `GET /metrics` (anything else is 404) until `shutdown` turns true.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let router = axum::Router::new()
            .route("/metrics", axum::routing::get(scrape))
            .with_state(self.registry);
        let stopped = async move {
            while !*shutdown.borrow_and_update() {
                if shutdown.changed().await.is_err() {
                    break;
                }
            }
        };
        if let Err(error) = axum::serve(self.listener, router)
            .with_graceful_shutdown(stopped)
            .await
        {
            tracing::error!(%error, "metrics server failed");
        }
    }
}

async fn scrape(State(registry): State<Arc<Registry>>) -> impl IntoResponse {
    let mut text = String::new();
    match prometheus_client::encoding::text::encode(&mut text, &registry) {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, OPENMETRICS_CONTENT_TYPE)],
            text,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "metrics encoding failed\n".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<u32> = (1..=1000).collect();
        for (quantile, expected) in [
            (0.50, 500),
            (0.75, 750),
            (0.95, 950),
            (0.99, 990),
            (0.999, 999),
        ] {
            assert_eq!(percentile(&samples, quantile), expected, "{quantile}");
        }
        assert_eq!(percentile(&[7], 0.999), 7);
    }

    #[test]
    fn the_window_keeps_the_latest_samples() {
        let window = LatencyWindow::new();
        for micros in 0..(LATENCY_WINDOW as u64 + 10) {
            window.record(Duration::from_micros(micros));
        }
        let samples = window.sorted_samples_us();
        assert_eq!(samples.len(), LATENCY_WINDOW);
        assert_eq!(samples[0], 10);
        assert_eq!(*samples.last().unwrap(), LATENCY_WINDOW as u32 + 9);
    }

    #[test]
    fn requests_are_counted_by_api_and_version() {
        let metrics = RequestMetrics::default();
        metrics.record(ApiKey::Produce, 9, Duration::from_millis(2));
        metrics.record(ApiKey::Produce, 3, Duration::from_millis(1));
        metrics.record(ApiKey::Fetch, 12, Duration::from_millis(1));
        assert_eq!(metrics.requests(ApiKey::Produce), 2);
        assert_eq!(metrics.requests(ApiKey::Fetch), 1);
        assert_eq!(metrics.requests(ApiKey::Metadata), 0);
        let seen: Vec<&str> = metrics.seen().map(|(name, _)| name).collect();
        assert_eq!(seen, ["Produce", "Fetch"]);
    }

    #[test]
    fn the_listener_is_optional() {
        for (value, expected) in [
            ("", Ok(None)),
            ("  ", Ok(None)),
            (
                "127.0.0.1:9404",
                Ok(Some("127.0.0.1:9404".parse().unwrap())),
            ),
        ] {
            assert_eq!(configured_address(value), expected, "{value:?}");
        }
        assert!(configured_address("no-port").is_err());
    }
}
