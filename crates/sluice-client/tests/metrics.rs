//! The clients' Kafka metrics against a real in-process Sluice node: a producer's
//! `producer-metrics` after it sent N records; a consumer kept behind by a small
//! `max.poll.records`, whose `records-lag-max` is the lag a user computes from the high
//! watermark and its position; commits' latency; a group member's rebalance metrics;
//! and all of them in Prometheus's text format under the JMX exporter's names.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::TestNode;
use sluice_client::consumer::{Consumer, ConsumerConfig, ConsumerRecord};
use sluice_client::metrics::{MetricName, Metrics, PrometheusCollector};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, NewTopic, OffsetSpec, TopicPartition};

const SETTINGS: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("group.min.session.timeout.ms", "100"),
    ("offsets.topic.num.partitions", "3"),
];

const RECORDS: usize = 100;

async fn create_topic(admin: &Admin, name: &str) {
    let topic = NewTopic {
        name: name.to_string(),
        num_partitions: Some(1),
        replication_factor: Some(1),
        configs: Vec::new(),
    };
    for (_, result) in admin.create_topics(&[topic], false).await.unwrap() {
        result.unwrap();
    }
}

/// A client-wide metric (tagged `client-id` only) from a `metrics()` map.
fn metric(values: &BTreeMap<MetricName, f64>, group: &str, name: &str, client_id: &str) -> f64 {
    let key = MetricName::new(name, group, [("client-id", client_id)]);
    *values
        .get(&key)
        .unwrap_or_else(|| panic!("no metric {key} in {:?}", values.keys()))
}

/// The high watermark, as a user reads it (ListOffsets latest).
async fn high_watermark(admin: &Admin, partition: &TopicPartition) -> i64 {
    let specs = BTreeMap::from([(partition.clone(), OffsetSpec::Latest)]);
    let mut results = admin.list_offsets(&specs).await.unwrap();
    results.remove(partition).unwrap().unwrap().offset
}

async fn produce(address: SocketAddr, topic: &str) -> Producer {
    let config = ProducerConfig::from_iter([
        ("bootstrap.servers", address.to_string()),
        ("client.id", "p1".to_string()),
        ("linger.ms", "0".to_string()),
        // Small batches: several requests, so the per-request metrics have samples.
        ("batch.size", "1024".to_string()),
    ])
    .unwrap();
    let producer = Producer::connect(config).await.unwrap();
    let mut deliveries = Vec::new();
    for index in 0..RECORDS {
        let record = ProducerRecord::new(topic, format!("value-{index:04}")).with_partition(0);
        deliveries.push(producer.send(record).await.unwrap());
    }
    producer.flush().await.unwrap();
    for delivery in deliveries {
        delivery.await.unwrap();
    }
    producer
}

async fn poll_some(consumer: &mut Consumer) -> Vec<ConsumerRecord> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let records = consumer.poll(Duration::from_millis(500)).await.unwrap();
        if !records.is_empty() {
            return records;
        }
        assert!(Instant::now() < deadline, "no records within 20 s");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_and_consumer_report_kafkas_metrics() {
    let node = TestNode::start(SETTINGS).await;
    let address = node.address;
    let admin = Admin::connect(ClientConfig::new([address.to_string()]))
        .await
        .unwrap();
    let topic = "metrics-lag";
    create_topic(&admin, topic).await;
    let partition = TopicPartition::new(topic, 0);

    // The producer: N records sent, none failed, latencies measured.
    let producer = produce(address, topic).await;
    let values = producer.kafka_metrics();
    let produced = |name: &str| metric(&values, "producer-metrics", name, "p1");
    assert_eq!(produced("record-send-total"), RECORDS as f64);
    assert!(produced("record-send-rate") > 0.0);
    assert_eq!(produced("record-error-total"), 0.0);
    assert_eq!(produced("record-error-rate"), 0.0);
    let latency = produced("request-latency-avg");
    assert!(latency.is_finite() && latency > 0.0, "{latency}");
    assert!(produced("request-latency-max") >= latency);
    assert!(produced("outgoing-byte-total") > 0.0);
    assert!(produced("outgoing-byte-rate") > 0.0);
    assert!(produced("batch-size-avg") > 0.0);
    assert!(produced("batch-size-max") >= produced("batch-size-avg"));
    assert!(produced("records-per-request-avg") >= 1.0);
    assert!(produced("record-queue-time-max") >= produced("record-queue-time-avg"));
    assert_eq!(produced("record-retry-total"), 0.0);
    assert_eq!(produced("buffer-total-bytes"), 33_554_432.0);
    let topic_sends = MetricName::new(
        "record-send-total",
        "producer-topic-metrics",
        [("client-id", "p1"), ("topic", topic)],
    );
    assert_eq!(values[&topic_sends], RECORDS as f64);

    // The consumer: 10 records a poll, so it stays behind the high watermark.
    let config = ConsumerConfig::from_map([
        ("bootstrap.servers", address.to_string().as_str()),
        ("client.id", "c1"),
        ("group.id", "metrics-group"),
        ("enable.auto.commit", "false"),
        ("auto.offset.reset", "earliest"),
        ("max.poll.records", "10"),
        ("max.partition.fetch.bytes", "1024"),
    ])
    .unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    consumer.assign([partition.clone()]).unwrap();
    let mut consumed = poll_some(&mut consumer).await.len();
    let end = high_watermark(&admin, &partition).await;
    assert_eq!(end, RECORDS as i64);
    let first_lag = end - consumer.position(&partition).await.unwrap();
    assert_eq!(first_lag, (RECORDS - consumed) as i64);
    assert!(first_lag > 0, "the consumer must be behind");
    let values = consumer.kafka_metrics();
    let fetch = |values: &BTreeMap<MetricName, f64>, name: &str| {
        metric(values, "consumer-fetch-manager-metrics", name, "c1")
    };
    let partition_metric = |values: &BTreeMap<MetricName, f64>, name: &str| {
        let key = MetricName::new(
            name,
            "consumer-fetch-manager-metrics",
            [
                ("client-id", "c1"),
                ("topic", "metrics-lag"),
                ("partition", "0"),
            ],
        );
        values[&key]
    };
    assert_eq!(fetch(&values, "records-lag-max"), first_lag as f64);
    assert_eq!(partition_metric(&values, "records-lag"), first_lag as f64);
    let fetch_latency = fetch(&values, "fetch-latency-avg");
    assert!(
        fetch_latency.is_finite() && fetch_latency > 0.0,
        "{fetch_latency}"
    );
    assert!(fetch(&values, "fetch-total") >= 1.0);

    // Further polls: the partition's lag follows the position; the max over the
    // window stays at the first, largest lag.
    while consumed < RECORDS / 2 {
        consumed += poll_some(&mut consumer).await.len();
    }
    consumer.commit_sync().await.unwrap();
    let lag = end - consumer.position(&partition).await.unwrap();
    let values = consumer.kafka_metrics();
    assert_eq!(partition_metric(&values, "records-lag"), lag as f64);
    assert_eq!(
        partition_metric(&values, "records-lag-max"),
        first_lag as f64
    );
    assert_eq!(fetch(&values, "records-lag-max"), first_lag as f64);
    let average = partition_metric(&values, "records-lag-avg");
    assert!(
        average < first_lag as f64 && average > lag as f64,
        "{average}"
    );
    let commits = |values: &BTreeMap<MetricName, f64>, name: &str| {
        metric(values, "consumer-coordinator-metrics", name, "c1")
    };
    let commit_latency = commits(&values, "commit-latency-avg");
    assert!(
        commit_latency.is_finite() && commit_latency > 0.0,
        "{commit_latency}"
    );
    // One OffsetCommit answer, or more if the coordinator was still loading.
    let first_commits = commits(&values, "commit-total");
    assert!(first_commits >= 1.0);
    assert!(commits(&values, "commit-rate") > 0.0);

    // Everything consumed: every fetched response drained, so the totals are the
    // records handed out.
    while consumed < RECORDS {
        consumed += poll_some(&mut consumer).await.len();
    }
    consumer.commit_sync().await.unwrap();
    let values = consumer.kafka_metrics();
    assert_eq!(fetch(&values, "records-consumed-total"), consumed as f64);
    assert!(fetch(&values, "records-consumed-rate") > 0.0);
    assert!(fetch(&values, "bytes-consumed-total") > (RECORDS * "value-0000".len()) as f64);
    assert!(fetch(&values, "records-per-request-avg") >= 1.0);
    assert_eq!(partition_metric(&values, "records-lag"), 0.0);
    assert!(commits(&values, "commit-total") > first_commits);
    assert!(commits(&values, "commit-latency-max") >= commits(&values, "commit-latency-avg"));
    assert!(metric(&values, "consumer-metrics", "incoming-byte-total", "c1") > 0.0);

    // Both clients in one Prometheus registry, named by the JMX exporter's rule.
    let mut registry = prometheus_client::registry::Registry::default();
    let collector = PrometheusCollector::register(&mut registry);
    collector.add(&producer.metrics_registry());
    collector.add(&consumer.metrics_registry());
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for series in [
        "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max{client_id=\"c1\"}",
        "kafka_consumer_consumer_fetch_manager_metrics_records_consumed_rate{client_id=\"c1\"}",
        "kafka_consumer_consumer_fetch_manager_metrics_records_consumed_total{client_id=\"c1\"} 100.0",
        "kafka_consumer_consumer_fetch_manager_metrics_records_lag{client_id=\"c1\",partition=\"0\",topic=\"metrics-lag\"} 0.0",
        "kafka_consumer_consumer_coordinator_metrics_commit_latency_avg{client_id=\"c1\"}",
        "kafka_producer_producer_metrics_record_send_rate{client_id=\"p1\"}",
        "kafka_producer_producer_metrics_record_send_total{client_id=\"p1\"} 100.0",
        "kafka_producer_producer_metrics_request_latency_avg{client_id=\"p1\"}",
        "kafka_producer_producer_topic_metrics_record_send_total{client_id=\"p1\",topic=\"metrics-lag\"} 100.0",
    ] {
        assert!(text.contains(series), "{series} missing from:\n{text}");
    }
    assert_eq!(
        text.matches("# TYPE kafka_consumer_consumer_fetch_manager_metrics_records_lag_max gauge")
            .count(),
        1
    );
    // The lag the alert rule reads, as a number.
    let lag_line = text
        .lines()
        .find(|line| {
            line.starts_with(
                "kafka_consumer_consumer_fetch_manager_metrics_records_lag_max{client_id=\"c1\"}",
            )
        })
        .unwrap();
    let exported: f64 = lag_line.rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(exported, first_lag as f64);

    consumer.close().await.unwrap();
    producer.close().await.unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_member_reports_its_rebalances_and_heartbeats() {
    let node = TestNode::start(SETTINGS).await;
    let address = node.address;
    let admin = Admin::connect(ClientConfig::new([address.to_string()]))
        .await
        .unwrap();
    let topic = "metrics-group";
    create_topic(&admin, topic).await;
    let producer = produce(address, topic).await;
    let config = ConsumerConfig::from_map([
        ("bootstrap.servers", address.to_string().as_str()),
        ("client.id", "member"),
        ("group.id", "metrics-members"),
        ("auto.offset.reset", "earliest"),
        ("session.timeout.ms", "6000"),
        ("heartbeat.interval.ms", "100"),
        // Short windows, so a rate read right after shows what happened.
        ("metrics.sample.window.ms", "5000"),
        ("metrics.num.samples", "3"),
    ])
    .unwrap();
    let mut consumer = Consumer::new(config).await.unwrap();
    assert_eq!(consumer.metrics_registry().config().time_window_ms, 5000);
    assert_eq!(consumer.metrics_registry().config().samples, 3);
    consumer.subscribe([topic], None).unwrap();
    poll_some(&mut consumer).await;
    // The heartbeat task runs every 100 ms once the member is stable.
    let deadline = Instant::now() + Duration::from_secs(10);
    let metrics: Metrics = consumer.metrics_registry();
    let coordinator = |name: &str| {
        metrics
            .value("consumer-coordinator-metrics", name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    while coordinator("heartbeat-total") < 1.0 {
        assert!(Instant::now() < deadline, "no heartbeat within 10 s");
        consumer.poll(Duration::from_millis(100)).await.unwrap();
    }
    assert!(coordinator("join-total") >= 1.0);
    assert!(coordinator("sync-total") >= 1.0);
    assert!(coordinator("rebalance-total") >= 1.0);
    assert!(coordinator("rebalance-rate-per-hour") > 0.0);
    let rebalance = coordinator("rebalance-latency-avg");
    assert!(rebalance.is_finite() && rebalance > 0.0, "{rebalance}");
    assert!(coordinator("join-time-max") > 0.0);
    assert!(coordinator("heartbeat-response-time-max") > 0.0);
    assert_eq!(coordinator("assigned-partitions"), 1.0);
    assert!(coordinator("last-rebalance-seconds-ago") >= 0.0);
    assert!(coordinator("last-heartbeat-seconds-ago") >= 0.0);
    // Auto-commit is on, but nothing committed yet within its interval: NaN, as
    // Kafka's Avg with no samples, and a rate of 0.
    if coordinator("commit-total") == 0.0 {
        assert!(coordinator("commit-latency-avg").is_nan());
        assert_eq!(coordinator("commit-rate"), 0.0);
    }
    consumer.close().await.unwrap();
    producer.close().await.unwrap();
    node.stop().await;
}
