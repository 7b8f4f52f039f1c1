//! The consumer's metrics, as the Java consumer records them (`FetchMetricsManager`,
//! `ConsumerCoordinator`, `AbstractCoordinator`): group
//! `consumer-fetch-manager-metrics` (tag `client-id`; per topic `topic`, per partition
//! `topic` and `partition`, with `.` in topic names as `_`, as Java tags them) and
//! `consumer-coordinator-metrics`.
//!
//! When each is recorded, as in Java:
//! - `fetch-latency-*`, `fetch-rate`, `fetch-throttle-time-*`: per successful Fetch
//!   response, in the task that sent it.
//! - `records-consumed-*`, `bytes-consumed-*`, `records-per-request-avg`,
//!   `fetch-size-*` (overall and per topic): once per Fetch response, when every
//!   partition in it has been drained (handed out by `poll`, or dropped by a seek or a
//!   revocation): records and bytes actually handed out, a record's bytes counted as
//!   its encoded size (Java's `Record.sizeInBytes`). Records still buffered are not
//!   counted yet.
//! - `records-lag` (partition: the last value, its window's max and avg; and the
//!   client's `records-lag-max` over every partition): each time `poll` hands out a
//!   partition's records, and when a response brings none for it, as the high
//!   watermark (last stable offset under read_committed) minus the position then.
//!   `records-lead` likewise: the position minus the log start offset.
//! - `commit-latency-*`, `commit-rate`, `commit-total`: per OffsetCommit response.
//! - classic groups: `join-time-*`, `sync-time-*` per successful JoinGroup/SyncGroup,
//!   `heartbeat-response-time-max`, `heartbeat-rate` per Heartbeat response (also per
//!   ConsumerGroupHeartbeat under `group.protocol=consumer`), `rebalance-latency-*`
//!   from the first JoinGroup of a rebalance to the SyncGroup that ends it,
//!   `failed-rebalance-*` per failed JoinGroup or SyncGroup.
//!
//! Cost: one or two sensor recordings per partition per poll and per response (see
//! [`crate::metrics`]); per-partition sensors are made when a partition is first seen
//! and dropped when it is no longer assigned.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::groups::TopicPartition;
use crate::metrics::network::NetworkSensors;
use crate::metrics::{Metrics, PER_HOUR, Sensor};

const FETCH_GROUP: &str = "consumer-fetch-manager-metrics";
const COORDINATOR_GROUP: &str = "consumer-coordinator-metrics";
const NETWORK_GROUP: &str = "consumer-metrics";

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Sensor maps: every update is one insert or remove.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `consumer-fetch-manager-metrics`.
pub(crate) struct FetchMetrics {
    pub(crate) metrics: Metrics,
    pub(crate) network: Arc<NetworkSensors>,
    bytes_fetched: Arc<Sensor>,
    records_fetched: Arc<Sensor>,
    fetch_latency: Arc<Sensor>,
    throttle_time: Arc<Sensor>,
    records_lag: Arc<Sensor>,
    records_lead: Arc<Sensor>,
    topics: Mutex<HashMap<String, TopicSensors>>,
    partitions: Mutex<HashMap<TopicPartition, PartitionSensors>>,
}

struct TopicSensors {
    bytes_fetched: Arc<Sensor>,
    records_fetched: Arc<Sensor>,
}

struct PartitionSensors {
    lag: Arc<Sensor>,
    lead: Arc<Sensor>,
}

impl FetchMetrics {
    pub(crate) fn new(metrics: Metrics) -> FetchMetrics {
        let sensor = |name: &str| metrics.sensor(name, FETCH_GROUP, &[]);
        FetchMetrics {
            network: Arc::new(NetworkSensors::new(&metrics, NETWORK_GROUP)),
            bytes_fetched: sensor("bytes-fetched")
                .avg(
                    "fetch-size-avg",
                    "The average number of bytes fetched per request",
                )
                .max(
                    "fetch-size-max",
                    "The maximum number of bytes fetched per request",
                )
                .meter(
                    (
                        "bytes-consumed-rate",
                        "The average number of bytes consumed per second",
                    ),
                    ("bytes-consumed-total", "The total number of bytes consumed"),
                )
                .build(),
            records_fetched: sensor("records-fetched")
                .avg(
                    "records-per-request-avg",
                    "The average number of records in each request",
                )
                .meter(
                    (
                        "records-consumed-rate",
                        "The average number of records consumed per second",
                    ),
                    (
                        "records-consumed-total",
                        "The total number of records consumed",
                    ),
                )
                .build(),
            fetch_latency: sensor("fetch-latency")
                .avg(
                    "fetch-latency-avg",
                    "The average time taken for a fetch request.",
                )
                .max(
                    "fetch-latency-max",
                    "The max time taken for any fetch request.",
                )
                .count_meter(
                    ("fetch-rate", "The number of fetch requests per second."),
                    ("fetch-total", "The total number of fetch requests."),
                )
                .build(),
            throttle_time: sensor("fetch-throttle-time")
                .avg("fetch-throttle-time-avg", "The average throttle time in ms")
                .max("fetch-throttle-time-max", "The maximum throttle time in ms")
                .build(),
            records_lag: sensor("records-lag")
                .max(
                    "records-lag-max",
                    "The maximum lag in terms of number of records for any partition in this \
                     window. NOTE: This is based on current offset and not committed offset",
                )
                .build(),
            records_lead: sensor("records-lead")
                .min(
                    "records-lead-min",
                    "The minimum lead in terms of number of records for any partition in this \
                     window",
                )
                .build(),
            topics: Mutex::new(HashMap::new()),
            partitions: Mutex::new(HashMap::new()),
            metrics,
        }
    }

    /// A Fetch response arrived after `latency`.
    pub(crate) fn fetch_response(&self, latency: Duration, throttle_time_ms: i32) {
        self.fetch_latency.record(latency.as_secs_f64() * 1_000.0);
        self.throttle_time.record(f64::from(throttle_time_ms));
    }

    /// `partition`'s lag (end − position) and lead (position − log start) after a poll
    /// or a response without records (Java's `recordPartitionLag`/`Lead`).
    pub(crate) fn partition_offsets(
        &self,
        partition: &TopicPartition,
        lag: Option<i64>,
        lead: Option<i64>,
    ) {
        if lag.is_none() && lead.is_none() {
            return;
        }
        let mut partitions = lock(&self.partitions);
        if !partitions.contains_key(partition) {
            let sensors = self.partition_sensors(partition);
            partitions.insert(partition.clone(), sensors);
        }
        let sensors = &partitions[partition];
        if let Some(lag) = lag {
            self.records_lag.record(lag as f64);
            sensors.lag.record(lag as f64);
        }
        if let Some(lead) = lead {
            self.records_lead.record(lead as f64);
            sensors.lead.record(lead as f64);
        }
    }

    fn partition_sensors(&self, partition: &TopicPartition) -> PartitionSensors {
        let topic = partition.topic.replace('.', "_");
        let index = partition.partition.to_string();
        let tags = [("topic", topic.as_str()), ("partition", index.as_str())];
        PartitionSensors {
            lag: self
                .metrics
                .sensor(&format!("{partition}.records-lag"), FETCH_GROUP, &tags)
                .value("records-lag", "The latest lag of the partition")
                .max("records-lag-max", "The max lag of the partition")
                .avg("records-lag-avg", "The average lag of the partition")
                .build(),
            lead: self
                .metrics
                .sensor(&format!("{partition}.records-lead"), FETCH_GROUP, &tags)
                .value("records-lead", "The latest lead of the partition")
                .min("records-lead-min", "The min lead of the partition")
                .avg("records-lead-avg", "The average lead of the partition")
                .build(),
        }
    }

    /// Drops the sensors of partitions no longer assigned (Java's
    /// `maybeUpdateAssignment`).
    pub(crate) fn retain_partitions(&self, assigned: impl Fn(&TopicPartition) -> bool) {
        lock(&self.partitions).retain(|partition, _| {
            let keep = assigned(partition);
            if !keep {
                self.metrics
                    .remove_sensor(&format!("{partition}.records-lag"));
                self.metrics
                    .remove_sensor(&format!("{partition}.records-lead"));
            }
            keep
        });
    }

    /// Records one response's consumed bytes and records (Java's
    /// `FetchMetricsAggregator` once every partition reported).
    fn response_consumed(&self, bytes: u64, records: u64, topics: &BTreeMap<String, (u64, u64)>) {
        self.bytes_fetched.record(bytes as f64);
        self.records_fetched.record(records as f64);
        let mut sensors = lock(&self.topics);
        for (topic, (bytes, records)) in topics {
            if !sensors.contains_key(topic) {
                let tag = topic.replace('.', "_");
                let tags = [("topic", tag.as_str())];
                let made = TopicSensors {
                    bytes_fetched: self
                        .metrics
                        .sensor(&format!("topic.{topic}.bytes-fetched"), FETCH_GROUP, &tags)
                        .avg(
                            "fetch-size-avg",
                            "The average number of bytes fetched per request for a topic",
                        )
                        .max(
                            "fetch-size-max",
                            "The maximum number of bytes fetched per request for a topic",
                        )
                        .meter(
                            (
                                "bytes-consumed-rate",
                                "The average number of bytes consumed per second for a topic",
                            ),
                            (
                                "bytes-consumed-total",
                                "The total number of bytes consumed for a topic",
                            ),
                        )
                        .build(),
                    records_fetched: self
                        .metrics
                        .sensor(
                            &format!("topic.{topic}.records-fetched"),
                            FETCH_GROUP,
                            &tags,
                        )
                        .avg(
                            "records-per-request-avg",
                            "The average number of records in each request for a topic",
                        )
                        .meter(
                            (
                                "records-consumed-rate",
                                "The average number of records consumed per second for a topic",
                            ),
                            (
                                "records-consumed-total",
                                "The total number of records consumed for a topic",
                            ),
                        )
                        .build(),
                };
                sensors.insert(topic.clone(), made);
            }
            if let Some(topic) = sensors.get(topic) {
                topic.bytes_fetched.record(*bytes as f64);
                topic.records_fetched.record(*records as f64);
            }
        }
    }
}

/// What one Fetch response's partitions consumed; recorded when the last of them is
/// drained, which is when the last [`ConsumedShare`] (and the response's own handle)
/// drops.
pub(crate) struct FetchAggregate {
    metrics: Arc<FetchMetrics>,
    totals: Mutex<Totals>,
}

#[derive(Default)]
struct Totals {
    bytes: u64,
    records: u64,
    /// Per topic: (bytes, records).
    topics: BTreeMap<String, (u64, u64)>,
}

impl FetchAggregate {
    pub(crate) fn new(metrics: Arc<FetchMetrics>) -> Arc<FetchAggregate> {
        Arc::new(FetchAggregate {
            metrics,
            totals: Mutex::new(Totals::default()),
        })
    }
}

impl Drop for FetchAggregate {
    fn drop(&mut self) {
        let totals = std::mem::take(&mut *lock(&self.totals));
        self.metrics
            .response_consumed(totals.bytes, totals.records, &totals.topics);
    }
}

/// One partition's part of a response: what `poll` handed out of it.
pub(crate) struct ConsumedShare {
    aggregate: Arc<FetchAggregate>,
    topic: String,
    bytes: u64,
    records: u64,
}

impl ConsumedShare {
    pub(crate) fn new(aggregate: &Arc<FetchAggregate>, topic: &str) -> ConsumedShare {
        ConsumedShare {
            aggregate: aggregate.clone(),
            topic: topic.to_string(),
            bytes: 0,
            records: 0,
        }
    }

    pub(crate) fn consumed(&mut self, bytes: u64) {
        self.bytes += bytes;
        self.records += 1;
    }
}

impl Drop for ConsumedShare {
    fn drop(&mut self) {
        let mut totals = lock(&self.aggregate.totals);
        totals.bytes += self.bytes;
        totals.records += self.records;
        let topic = totals
            .topics
            .entry(std::mem::take(&mut self.topic))
            .or_default();
        topic.0 += self.bytes;
        topic.1 += self.records;
    }
}

/// `consumer-coordinator-metrics`.
pub(crate) struct CoordinatorMetrics {
    commit: Arc<Sensor>,
    heartbeat: Arc<Sensor>,
    join: Arc<Sensor>,
    sync: Arc<Sensor>,
    successful_rebalance: Arc<Sensor>,
    failed_rebalance: Arc<Sensor>,
    times: Arc<Mutex<CoordinatorTimes>>,
    pub(crate) assigned_partitions: Arc<AtomicUsize>,
}

#[derive(Default)]
struct CoordinatorTimes {
    rebalance_started: Option<Instant>,
    last_rebalance_ended: Option<Instant>,
    last_heartbeat_sent: Option<Instant>,
}

/// Whole seconds since `at`, or -1 if never (Java's `TimeUnit.SECONDS.convert`).
fn seconds_ago(at: Option<Instant>) -> f64 {
    at.map_or(-1.0, |at| at.elapsed().as_secs() as f64)
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

impl CoordinatorMetrics {
    pub(crate) fn new(metrics: &Metrics) -> CoordinatorMetrics {
        let sensor = |name: &str| metrics.sensor(name, COORDINATOR_GROUP, &[]);
        let times = Arc::new(Mutex::new(CoordinatorTimes::default()));
        let assigned_partitions = Arc::new(AtomicUsize::new(0));
        let assigned = assigned_partitions.clone();
        metrics.add_gauge(
            "assigned-partitions",
            COORDINATOR_GROUP,
            "The number of partitions currently assigned to this consumer",
            move || assigned.load(Ordering::Relaxed) as f64,
        );
        let read = times.clone();
        metrics.add_gauge(
            "last-rebalance-seconds-ago",
            COORDINATOR_GROUP,
            "The number of seconds since the last successful rebalance event",
            move || seconds_ago(lock(&read).last_rebalance_ended),
        );
        let read = times.clone();
        metrics.add_gauge(
            "last-heartbeat-seconds-ago",
            COORDINATOR_GROUP,
            "The number of seconds since the last coordinator heartbeat was sent",
            move || seconds_ago(lock(&read).last_heartbeat_sent),
        );
        CoordinatorMetrics {
            commit: sensor("commit-latency")
                .avg(
                    "commit-latency-avg",
                    "The average time taken for a commit request",
                )
                .max(
                    "commit-latency-max",
                    "The max time taken for a commit request",
                )
                .count_meter(
                    ("commit-rate", "The number of commit calls per second"),
                    ("commit-total", "The total number of commit calls"),
                )
                .build(),
            heartbeat: sensor("heartbeat-latency")
                .max(
                    "heartbeat-response-time-max",
                    "The max time taken to receive a response to a heartbeat request",
                )
                .count_meter(
                    ("heartbeat-rate", "The number of heartbeats per second"),
                    ("heartbeat-total", "The total number of heartbeats"),
                )
                .build(),
            join: sensor("join-latency")
                .avg("join-time-avg", "The average time taken for a group rejoin")
                .max("join-time-max", "The max time taken for a group rejoin")
                .count_meter(
                    ("join-rate", "The number of group joins per second"),
                    ("join-total", "The total number of group joins"),
                )
                .build(),
            sync: sensor("sync-latency")
                .avg("sync-time-avg", "The average time taken for a group sync")
                .max("sync-time-max", "The max time taken for a group sync")
                .count_meter(
                    ("sync-rate", "The number of group syncs per second"),
                    ("sync-total", "The total number of group syncs"),
                )
                .build(),
            successful_rebalance: sensor("rebalance-latency")
                .avg(
                    "rebalance-latency-avg",
                    "The average time taken for a group to complete a successful rebalance, \
                     which may be composed of several failed re-trials until it succeeded",
                )
                .max(
                    "rebalance-latency-max",
                    "The max time taken for a group to complete a successful rebalance, which \
                     may be composed of several failed re-trials until it succeeded",
                )
                .cumulative_sum(
                    "rebalance-latency-total",
                    "The total number of milliseconds this consumer has spent in successful \
                     rebalances since creation",
                )
                .cumulative_count(
                    "rebalance-total",
                    "The total number of successful rebalance events, each event is composed \
                     of several failed re-trials until it succeeded",
                )
                .count_rate(
                    "rebalance-rate-per-hour",
                    "The number of successful rebalance events per hour, each event is \
                     composed of several failed re-trials until it succeeded",
                    PER_HOUR,
                )
                .build(),
            failed_rebalance: sensor("failed-rebalance")
                .cumulative_count(
                    "failed-rebalance-total",
                    "The total number of failed rebalance events",
                )
                .count_rate(
                    "failed-rebalance-rate-per-hour",
                    "The number of failed rebalance events per hour",
                    PER_HOUR,
                )
                .build(),
            times,
            assigned_partitions,
        }
    }

    /// An OffsetCommit response after `latency`.
    pub(crate) fn commit_response(&self, latency: Duration) {
        self.commit.record(millis(latency));
    }

    pub(crate) fn heartbeat_sent(&self) {
        lock(&self.times).last_heartbeat_sent = Some(Instant::now());
    }

    /// A heartbeat response after `latency`.
    pub(crate) fn heartbeat_response(&self, latency: Duration) {
        self.heartbeat.record(millis(latency));
    }

    /// A JoinGroup is about to go out: a rebalance starts unless one is under way.
    pub(crate) fn rebalance_started(&self) {
        lock(&self.times)
            .rebalance_started
            .get_or_insert_with(Instant::now);
    }

    pub(crate) fn joined(&self, latency: Duration) {
        self.join.record(millis(latency));
    }

    pub(crate) fn synced(&self, latency: Duration) {
        self.sync.record(millis(latency));
    }

    /// The rebalance completed (SyncGroup succeeded).
    pub(crate) fn rebalance_completed(&self) {
        let now = Instant::now();
        let started = {
            let mut times = lock(&self.times);
            times.last_rebalance_ended = Some(now);
            times.rebalance_started.take()
        };
        if let Some(started) = started {
            self.successful_rebalance
                .record(millis(now.saturating_duration_since(started)));
        }
    }

    /// A JoinGroup or SyncGroup failed; the rebalance goes on.
    pub(crate) fn rebalance_failed(&self) {
        self.failed_rebalance.record(1.0);
    }
}
