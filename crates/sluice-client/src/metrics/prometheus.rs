//! The clients' metrics in a `prometheus_client` registry, named as the JMX exporter's
//! common rule for Kafka clients names the Java client's MBeans
//! (`kafka.consumer<type=(.+), client-id=(.+)><>(.+)` → `kafka_consumer_$1_$3` with
//! `client_id="$2"`, lowercased, every other character outside `[a-zA-Z0-9:_]` an
//! underscore, runs of them one): `records-lag-max` of
//! `consumer-fetch-manager-metrics` for client `c1` is
//! `kafka_consumer_consumer_fetch_manager_metrics_records_lag_max{client_id="c1"}`; a
//! per-partition metric adds `topic` and `partition` labels.
//!
//! Every metric is a gauge, as the exporter exports these attributes: a `-total` is
//! Kafka's running double, not a Prometheus counter (which would add another
//! `_total`). NaN (no samples in the window) is exported as NaN, as the exporter does.
//!
//! One [`PrometheusCollector`] serves any number of clients, so clients of one kind
//! share each metric family (a family listed twice would be rejected by Prometheus).
//! A client that was dropped leaves the scrape.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use super::{MetricName, Metrics, Registry, lock};

/// Exports the metrics of the clients [`add`](PrometheusCollector::add)ed to it, computed
/// at each scrape. Clone it to add clients later; every clone feeds the same collector.
#[derive(Clone, Default)]
pub struct PrometheusCollector {
    clients: Arc<Mutex<Vec<Weak<Registry>>>>,
}

impl std::fmt::Debug for PrometheusCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrometheusCollector")
            .field("clients", &lock(&self.clients).len())
            .finish()
    }
}

impl PrometheusCollector {
    /// A collector registered with `registry`, exporting no client yet.
    pub fn register(registry: &mut prometheus_client::registry::Registry) -> PrometheusCollector {
        let collector = PrometheusCollector::default();
        registry.register_collector(Box::new(collector.clone()));
        collector
    }

    /// Exports `metrics` too (once, however often it is added).
    pub fn add(&self, metrics: &Metrics) {
        let weak = metrics.downgrade();
        let mut clients = lock(&self.clients);
        clients.retain(|client| client.strong_count() > 0);
        if !clients.iter().any(|client| client.ptr_eq(&weak)) {
            clients.push(weak);
        }
    }
}

/// Registers a collector exporting `metrics` with `registry`; add more clients to the
/// returned collector rather than registering again.
pub fn register_prometheus(
    registry: &mut prometheus_client::registry::Registry,
    metrics: &Metrics,
) -> PrometheusCollector {
    let collector = PrometheusCollector::register(registry);
    collector.add(metrics);
    collector
}

/// The Prometheus name of a client's metric, as the JMX exporter rule gives it:
/// `kafka_<client type>_<group>_<name>`, made safe and lowercased.
pub fn prometheus_name(client_type: &str, name: &MetricName) -> String {
    safe_name(&format!("kafka_{client_type}_{}_{}", name.group, name.name))
}

/// The JMX exporter's `safeName` then lowercase: characters outside `[a-zA-Z0-9:_]`
/// become `_`, a run of them (or of underscores) one `_`.
fn safe_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut previous_underscore = false;
    for character in name.chars() {
        if character.is_ascii_alphanumeric() || character == ':' {
            out.push(character.to_ascii_lowercase());
            previous_underscore = false;
        } else if !previous_underscore {
            out.push('_');
            previous_underscore = true;
        }
    }
    out
}

/// A label value in the text format: backslash, double quote and newline escaped.
fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            other => out.push(other),
        }
    }
    out
}

/// One family: its help and its (labels, value) series.
type Family = (&'static str, Vec<(Vec<(String, String)>, f64)>);

impl Collector for PrometheusCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let clients: Vec<Metrics> = {
            let mut clients = lock(&self.clients);
            clients.retain(|client| client.strong_count() > 0);
            clients
                .iter()
                .filter_map(Weak::upgrade)
                .map(Metrics::from_registry)
                .collect()
        };
        let mut families: BTreeMap<String, Family> = BTreeMap::new();
        for metrics in &clients {
            let client_type = metrics.client_type().name();
            for metric in metrics.snapshot() {
                let labels = metric
                    .name
                    .tags
                    .iter()
                    .map(|(key, value)| (safe_name(key), escape_label_value(value)))
                    .collect();
                families
                    .entry(prometheus_name(client_type, &metric.name))
                    .or_insert_with(|| (metric.description, Vec::new()))
                    .1
                    .push((labels, metric.value));
            }
        }
        for (name, (help, series)) in &families {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, value) in series {
                ConstGauge::new(*value).encode(family.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{ClientType, MetricConfig};

    #[test]
    fn names_follow_the_jmx_exporter_rule() {
        let cases = [
            (
                "consumer",
                "consumer-fetch-manager-metrics",
                "records-lag-max",
                "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max",
            ),
            (
                "producer",
                "producer-metrics",
                "record-send-rate",
                "kafka_producer_producer_metrics_record_send_rate",
            ),
            (
                "consumer",
                "consumer-coordinator-metrics",
                "commit-latency-avg",
                "kafka_consumer_consumer_coordinator_metrics_commit_latency_avg",
            ),
        ];
        for (client_type, group, name, expected) in cases {
            let metric = MetricName::new(name, group, [("client-id", "c")]);
            assert_eq!(prometheus_name(client_type, &metric), expected);
        }
        assert_eq!(safe_name("a--b..C"), "a_b_c");
    }

    #[test]
    fn clients_share_families_and_leave_when_dropped() {
        let first = Metrics::new(ClientType::Consumer, "c1", MetricConfig::default());
        let second = Metrics::new(ClientType::Consumer, "c\"2", MetricConfig::default());
        for metrics in [&first, &second] {
            metrics
                .sensor("records-lag", "consumer-fetch-manager-metrics", &[])
                .max("records-lag-max", "The maximum lag")
                .build()
                .record(5.0);
        }
        let mut registry = prometheus_client::registry::Registry::default();
        let collector = register_prometheus(&mut registry, &first);
        collector.add(&second);
        collector.add(&second);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let family = "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max";
        assert_eq!(
            text.matches(&format!("# TYPE {family} gauge")).count(),
            1,
            "{text}"
        );
        assert!(
            text.contains(&format!("{family}{{client_id=\"c1\"}} 5.0")),
            "{text}"
        );
        assert!(
            text.contains(&format!("{family}{{client_id=\"c\\\"2\"}} 5.0")),
            "{text}"
        );
        drop(second);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert_eq!(
            text.matches(family).count(),
            3,
            "HELP, TYPE, one series: {text}"
        );
    }
}
