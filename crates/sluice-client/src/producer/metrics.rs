//! The producer's metrics, as the Java producer's `Sender.SenderMetrics` records them:
//! group `producer-metrics` (tag `client-id`) and, per topic, `producer-topic-metrics`
//! (tags `client-id`, `topic`).
//!
//! When each is recorded, as in Java: when the sender drains a request, per batch its
//! size (`batch-size`), time since it was created (`record-queue-time`), compressed size
//! over uncompressed size (`compression-rate`) and largest record (`record-size`), and per
//! request its record count (`record-send-*`, `records-per-request-avg`; a retried batch
//! counts again, as in Java); per Produce answer its latency (`request-latency`, not
//! with `acks=0`, which has no answer) and throttle time; per batch retried or failed
//! its records (`record-retry-*`, `record-error-*`). The network metrics
//! (`outgoing-byte-rate`, ...) are recorded by the connections. Gauges
//! (`buffer-available-bytes`, `requests-in-flight`, `metadata-age`) are read from the
//! producer's state when the metrics are read.
//!
//! Cost: under the state lock the sender already holds, a handful of sensor recordings
//! per batch and one per request (see [`crate::metrics`]); a topic's sensors are made
//! when its first batch is sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::Shared;
use crate::metrics::network::NetworkSensors;
use crate::metrics::{Metrics, Sensor};

const GROUP: &str = "producer-metrics";
const TOPIC_GROUP: &str = "producer-topic-metrics";

/// What the sender records into.
pub(crate) struct ProducerMetrics {
    pub(crate) metrics: Metrics,
    pub(crate) network: Arc<NetworkSensors>,
    batch_size: Arc<Sensor>,
    compression_rate: Arc<Sensor>,
    queue_time: Arc<Sensor>,
    request_time: Arc<Sensor>,
    records_per_request: Arc<Sensor>,
    retries: Arc<Sensor>,
    errors: Arc<Sensor>,
    record_size: Arc<Sensor>,
    throttle_time: Arc<Sensor>,
    topics: Mutex<HashMap<String, TopicSensors>>,
}

struct TopicSensors {
    records: Arc<Sensor>,
    bytes: Arc<Sensor>,
    compression_rate: Arc<Sensor>,
    retries: Arc<Sensor>,
    errors: Arc<Sensor>,
}

/// One batch as the sender drains it.
pub(crate) struct DrainedBatch<'a> {
    pub(crate) topic: &'a str,
    pub(crate) size_bytes: usize,
    pub(crate) uncompressed_bytes: usize,
    pub(crate) record_count: i32,
    pub(crate) max_record_bytes: usize,
    pub(crate) queue_time: Duration,
}

impl ProducerMetrics {
    pub(crate) fn new(metrics: Metrics) -> ProducerMetrics {
        let sensor = |name: &str| metrics.sensor(name, GROUP, &[]);
        ProducerMetrics {
            network: Arc::new(NetworkSensors::new(&metrics, GROUP)),
            batch_size: sensor("batch-size")
                .avg(
                    "batch-size-avg",
                    "The average number of bytes sent per partition per-request.",
                )
                .max(
                    "batch-size-max",
                    "The max number of bytes sent per partition per-request.",
                )
                .build(),
            compression_rate: sensor("compression-rate")
                .avg(
                    "compression-rate-avg",
                    "The average compression rate of record batches, defined as the average \
                     ratio of the compressed batch size over the uncompressed size.",
                )
                .build(),
            queue_time: sensor("queue-time")
                .avg(
                    "record-queue-time-avg",
                    "The average time in ms record batches spent in the send buffer.",
                )
                .max(
                    "record-queue-time-max",
                    "The maximum time in ms record batches spent in the send buffer.",
                )
                .build(),
            request_time: sensor("request-time")
                .avg("request-latency-avg", "The average request latency in ms")
                .max("request-latency-max", "The maximum request latency in ms")
                .build(),
            records_per_request: sensor("records-per-request")
                .meter(
                    (
                        "record-send-rate",
                        "The average number of records sent per second.",
                    ),
                    ("record-send-total", "The total number of records sent."),
                )
                .avg(
                    "records-per-request-avg",
                    "The average number of records per request.",
                )
                .build(),
            retries: sensor("record-retries")
                .meter(
                    (
                        "record-retry-rate",
                        "The average per-second number of retried record sends",
                    ),
                    (
                        "record-retry-total",
                        "The total number of retried record sends",
                    ),
                )
                .build(),
            errors: sensor("errors")
                .meter(
                    (
                        "record-error-rate",
                        "The average per-second number of record sends that resulted in errors",
                    ),
                    (
                        "record-error-total",
                        "The total number of record sends that resulted in errors",
                    ),
                )
                .build(),
            record_size: sensor("record-size")
                .max("record-size-max", "The maximum record size")
                .avg("record-size-avg", "The average record size")
                .build(),
            throttle_time: sensor("produce-throttle-time")
                .avg(
                    "produce-throttle-time-avg",
                    "The average time in ms a request was throttled by a broker",
                )
                .max(
                    "produce-throttle-time-max",
                    "The maximum time in ms a request was throttled by a broker",
                )
                .build(),
            topics: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// The gauges read from the producer's state (held weakly: the state holds these
    /// metrics).
    pub(crate) fn add_gauges(&self, shared: Weak<Shared>, buffer_memory: usize) {
        let metrics = &self.metrics;
        metrics.add_gauge(
            "buffer-total-bytes",
            GROUP,
            "The maximum amount of buffer memory the client can use (whether or not it is \
             currently used).",
            move || buffer_memory as f64,
        );
        let weak = shared.clone();
        metrics.add_gauge(
            "buffer-available-bytes",
            GROUP,
            "The total amount of buffer memory that is not being used (either unallocated or \
             in the free list).",
            move || {
                weak.upgrade()
                    .map_or(f64::NAN, |shared| shared.memory.available_permits() as f64)
            },
        );
        let weak = shared.clone();
        metrics.add_gauge(
            "requests-in-flight",
            GROUP,
            "The current number of in-flight requests awaiting a response.",
            move || {
                weak.upgrade().map_or(f64::NAN, |shared| {
                    shared.lock().requests_in_flight.values().sum::<usize>() as f64
                })
            },
        );
        metrics.add_gauge(
            "metadata-age",
            GROUP,
            "The age in seconds of the current producer metadata being used.",
            move || {
                shared.upgrade().map_or(f64::NAN, |shared| {
                    shared.lock().metadata.last_refresh.elapsed().as_secs_f64()
                })
            },
        );
    }

    /// One Produce request drained: its batches (Java's `updateProduceRequestMetrics`).
    pub(crate) fn request_drained<'a>(&self, batches: impl IntoIterator<Item = DrainedBatch<'a>>) {
        let mut records = 0;
        let mut topics = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        for batch in batches {
            let compression_rate = if batch.uncompressed_bytes == 0 {
                1.0
            } else {
                batch.size_bytes as f64 / batch.uncompressed_bytes as f64
            };
            let topic = self.topic(&mut topics, batch.topic);
            topic.records.record(f64::from(batch.record_count));
            topic.bytes.record(batch.size_bytes as f64);
            topic.compression_rate.record(compression_rate);
            self.batch_size.record(batch.size_bytes as f64);
            self.queue_time
                .record(batch.queue_time.as_secs_f64() * 1_000.0);
            self.compression_rate.record(compression_rate);
            self.record_size.record(batch.max_record_bytes as f64);
            records += batch.record_count;
        }
        self.records_per_request.record(f64::from(records));
    }

    /// A Produce answer after `latency` (Java's `recordLatency`), throttled for
    /// `throttle_time_ms`.
    pub(crate) fn response(&self, latency: Duration, throttle_time_ms: i32) {
        self.request_time.record(latency.as_secs_f64() * 1_000.0);
        self.throttle_time.record(f64::from(throttle_time_ms));
    }

    /// A batch of `records` goes again.
    pub(crate) fn retried(&self, topic: &str, records: i32) {
        self.retries.record(f64::from(records));
        if let Some(sensors) = self
            .topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(topic)
        {
            sensors.retries.record(f64::from(records));
        }
    }

    /// A batch of `records` failed for good.
    pub(crate) fn failed(&self, topic: &str, records: i32) {
        self.errors.record(f64::from(records));
        if let Some(sensors) = self
            .topics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(topic)
        {
            sensors.errors.record(f64::from(records));
        }
    }

    fn topic<'m>(
        &self,
        topics: &'m mut HashMap<String, TopicSensors>,
        topic: &str,
    ) -> &'m TopicSensors {
        if !topics.contains_key(topic) {
            let sensor = |kind: &str| {
                self.metrics.sensor(
                    &format!("topic.{topic}.{kind}"),
                    TOPIC_GROUP,
                    &[("topic", topic)],
                )
            };
            let sensors = TopicSensors {
                records: sensor("records-per-batch")
                    .meter(
                        (
                            "record-send-rate",
                            "The average number of records sent per second for a topic.",
                        ),
                        (
                            "record-send-total",
                            "The total number of records sent for a topic.",
                        ),
                    )
                    .build(),
                bytes: sensor("bytes")
                    .meter(
                        (
                            "byte-rate",
                            "The average number of bytes sent per second for a topic.",
                        ),
                        ("byte-total", "The total number of bytes sent for a topic."),
                    )
                    .build(),
                compression_rate: sensor("compression-rate")
                    .avg(
                        "compression-rate",
                        "The average compression rate of record batches for a topic, defined as \
                         the average ratio of the compressed batch size over the uncompressed \
                         size.",
                    )
                    .build(),
                retries: sensor("record-retries")
                    .meter(
                        (
                            "record-retry-rate",
                            "The average per-second number of retried record sends for a topic",
                        ),
                        (
                            "record-retry-total",
                            "The total number of retried record sends for a topic",
                        ),
                    )
                    .build(),
                errors: sensor("record-errors")
                    .meter(
                        (
                            "record-error-rate",
                            "The average per-second number of record sends that resulted in \
                             errors for a topic",
                        ),
                        (
                            "record-error-total",
                            "The total number of record sends that resulted in errors for a \
                             topic",
                        ),
                    )
                    .build(),
            };
            topics.insert(topic.to_string(), sensors);
        }
        topics.get(topic).expect("inserted above")
    }
}
