//! Consumer lag as Prometheus metrics, computed at scrape time from storage and the
//! evaluator, under two sets of names users already query:
//! - kafka_exporter's (danielqsj/kafka-exporter, the exporter most Kafka dashboards use):
//!   `kafka_consumergroup_lag{consumergroup,topic,partition}`,
//!   `kafka_consumergroup_lag_sum{consumergroup,topic}`,
//!   `kafka_consumergroup_current_offset{consumergroup,topic,partition}`;
//! - Burrow's own (`core/internal/httpserver/prometheus.go`):
//!   `burrow_kafka_consumer_status` (the group status as Burrow numbers it: 0 NOTFOUND,
//!   1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND), `burrow_kafka_consumer_lag_total`,
//!   `burrow_kafka_topic_partition_status`, `burrow_kafka_consumer_current_offset`,
//!   `burrow_kafka_consumer_partition_lag`, `burrow_kafka_topic_partition_offset`.
//!
//! Every series also carries `cluster`, the Burrow cluster name. A scrape evaluates each
//! group through the evaluator's cache, so it costs one evaluation per group per
//! `expire-cache` at most.

use std::collections::BTreeMap;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use std::sync::{Arc, OnceLock};

use crate::monitor::Monitor;

/// Adds the lag metrics of `monitor` to `registry` (the node's own, with
/// `sluice server --with-monitor`, or the monitor's `/metrics`).
pub fn register(registry: &mut Registry, monitor: Monitor) {
    let slot = OnceLock::new();
    let _ = slot.set(monitor);
    registry.register_collector(collector(Arc::new(slot)));
}

/// A collector of the lag of the monitor `slot` will hold: nothing until it does (a node
/// builds its registry before its in-process monitor can connect to it).
pub fn collector(slot: Arc<OnceLock<Monitor>>) -> Box<dyn Collector> {
    Box::new(LagCollector { slot })
}

struct LagCollector {
    slot: Arc<OnceLock<Monitor>>,
}

impl std::fmt::Debug for LagCollector {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("LagCollector")
    }
}

type Labels = Vec<(&'static str, String)>;

/// One family's series, gathered before encoding (a family is written in one piece).
#[derive(Default)]
struct Families {
    series: BTreeMap<&'static str, Vec<(Labels, i64)>>,
}

impl Families {
    fn push(&mut self, name: &'static str, labels: Labels, value: i64) {
        self.series.entry(name).or_default().push((labels, value));
    }
}

const HELP: &[(&str, &str)] = &[
    (
        "kafka_consumergroup_lag",
        "Log end offset minus committed offset, per partition (kafka_exporter's name).",
    ),
    (
        "kafka_consumergroup_lag_sum",
        "A group's lag summed over a topic's partitions (kafka_exporter's name).",
    ),
    (
        "kafka_consumergroup_current_offset",
        "A group's committed offset, per partition (kafka_exporter's name).",
    ),
    (
        "burrow_kafka_consumer_status",
        "A group's Burrow status: 0 NOTFOUND, 1 OK, 2 WARN, 3 ERR, 4 STOP, 5 STALL, 6 REWIND.",
    ),
    (
        "burrow_kafka_consumer_lag_total",
        "The sum of a group's partitions' current lag.",
    ),
    (
        "burrow_kafka_topic_partition_status",
        "A partition's Burrow status for a group: 1 OK, 2 WARN, 4 STOP, 5 STALL, 6 REWIND.",
    ),
    (
        "burrow_kafka_consumer_current_offset",
        "The latest committed offset stored for a group's partition.",
    ),
    (
        "burrow_kafka_consumer_partition_lag",
        "How far a group's partition is behind, as Burrow reports it.",
    ),
    (
        "burrow_kafka_topic_partition_offset",
        "The latest log end offset stored for a partition.",
    ),
];

impl Collector for LagCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(monitor) = self.slot.get() else {
            return Ok(());
        };
        let families = gather(monitor);
        for (name, help) in HELP {
            let Some(series) = families.series.get(name) else {
                continue;
            };
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (labels, value) in series {
                ConstGauge::new(*value).encode(family.encode_family(labels)?)?;
            }
        }
        Ok(())
    }
}

fn gather(monitor: &Monitor) -> Families {
    let mut families = Families::default();
    for cluster in monitor.clusters() {
        for topic in monitor.topics(&cluster).unwrap_or_default() {
            for (partition, offset) in monitor
                .topic(&cluster, &topic)
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                families.push(
                    "burrow_kafka_topic_partition_offset",
                    vec![
                        ("cluster", cluster.clone()),
                        ("topic", topic.clone()),
                        ("partition", partition.to_string()),
                    ],
                    offset,
                );
            }
        }
        for group in monitor.groups(&cluster) {
            gather_group(monitor, &mut families, &cluster, &group);
        }
    }
    families
}

fn gather_group(monitor: &Monitor, families: &mut Families, cluster: &str, group: &str) {
    let status = monitor.group_status(cluster, group, true);
    let group_labels = || {
        vec![
            ("cluster", cluster.to_string()),
            ("consumer_group", group.to_string()),
        ]
    };
    families.push(
        "burrow_kafka_consumer_status",
        group_labels(),
        status.status.code(),
    );
    families.push(
        "burrow_kafka_consumer_lag_total",
        group_labels(),
        saturating(status.totallag),
    );
    let mut topic_sums: BTreeMap<&str, i64> = BTreeMap::new();
    for partition in &status.partitions {
        let lag = saturating(partition.current_lag);
        let offset = partition.end.as_ref().map(|end| end.offset);
        let burrow = || {
            vec![
                ("cluster", cluster.to_string()),
                ("consumer_group", group.to_string()),
                ("topic", partition.topic.clone()),
                ("partition", partition.partition.to_string()),
            ]
        };
        let exporter = || {
            vec![
                ("cluster", cluster.to_string()),
                ("consumergroup", group.to_string()),
                ("topic", partition.topic.clone()),
                ("partition", partition.partition.to_string()),
            ]
        };
        families.push(
            "burrow_kafka_topic_partition_status",
            burrow(),
            partition.status.code(),
        );
        families.push("burrow_kafka_consumer_partition_lag", burrow(), lag);
        families.push("kafka_consumergroup_lag", exporter(), lag);
        if let Some(offset) = offset {
            families.push("burrow_kafka_consumer_current_offset", burrow(), offset);
            families.push("kafka_consumergroup_current_offset", exporter(), offset);
        }
        let sum = topic_sums.entry(&partition.topic).or_default();
        *sum = sum.saturating_add(lag);
    }
    for (topic, sum) in topic_sums {
        families.push(
            "kafka_consumergroup_lag_sum",
            vec![
                ("cluster", cluster.to_string()),
                ("consumergroup", group.to_string()),
                ("topic", topic.to_string()),
            ],
            sum,
        );
    }
}

fn saturating(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
