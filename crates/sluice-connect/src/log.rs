//! A compacted internal topic read from the beginning and followed (Kafka Connect's
//! `KafkaBasedLog`): the config, offset and status topics. Every record read is handed
//! to the owner's apply function in partition order; [`TopicLog::sync`] waits until
//! everything written before it was called has been applied, so a worker reads its own
//! writes and a new leader acts on the whole config log.
//!
//! Durability: [`TopicLog::write`] returns once the broker acknowledged the record with
//! `acks=all` (idempotent producer); [`TopicLog::write_and_apply`] also waits until this
//! worker's reader has applied it. Nothing is kept anywhere but the topic.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, ErrorCode, NewTopic, OffsetSpec, TopicPartition};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// What a worker's internal topic must be.
#[derive(Debug, Clone)]
pub struct TopicSpec {
    pub name: String,
    pub partitions: i32,
    /// -1: the broker's `default.replication.factor` (Connect's default for its topics).
    pub replication_factor: i16,
    /// Extra topic configs (`cleanup.policy=compact` is always set).
    pub configs: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{0}")]
    Kafka(String),
    #[error("timed out after {0:?} {1}")]
    Timeout(Duration, &'static str),
    #[error("topic {topic} is not usable: {reason}")]
    BadTopic { topic: String, reason: String },
}

/// One record as read: key, value (None: a tombstone), partition and offset.
#[derive(Debug, Clone)]
pub struct LogRecord {
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
}

type Apply = Box<dyn FnMut(LogRecord) + Send>;

pub struct TopicLog {
    topic: String,
    partitions: i32,
    admin: Admin,
    producer: Producer,
    /// Per partition, the next offset the reader will apply.
    applied: watch::Receiver<BTreeMap<i32, i64>>,
    reader: JoinHandle<()>,
    timeout: Duration,
}

impl Drop for TopicLog {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl TopicLog {
    /// Creates the topic if missing (checks an existing one is compacted), starts the
    /// reader and waits until it has applied the log up to its current end.
    pub async fn start(
        bootstrap: &[String],
        client_id: &str,
        spec: &TopicSpec,
        timeout: Duration,
        apply: Apply,
    ) -> Result<TopicLog, LogError> {
        let kafka = |e: sluice_client::Error| LogError::Kafka(e.to_string());
        let deadline = Instant::now() + timeout;
        let admin = Admin::connect(ClientConfig::new(bootstrap.to_vec()))
            .await
            .map_err(kafka)?;
        let partitions = ensure_topic(&admin, spec).await?;
        let mut consumer_config = ConsumerConfig::new(bootstrap.to_vec());
        for (key, value) in [
            ("client.id", client_id),
            ("enable.auto.commit", "false"),
            ("auto.offset.reset", "earliest"),
            ("fetch.max.wait.ms", "100"),
            ("isolation.level", "read_committed"),
        ] {
            consumer_config.set(key, value).map_err(kafka)?;
        }
        let mut consumer = Consumer::new(consumer_config).await.map_err(kafka)?;
        let all: Vec<TopicPartition> = (0..partitions)
            .map(|p| TopicPartition::new(spec.name.clone(), p))
            .collect();
        consumer.assign(all.iter().cloned()).map_err(kafka)?;
        for tp in &all {
            consumer.seek(tp, 0).map_err(kafka)?;
        }
        let producer = Producer::connect(
            ProducerConfig::builder(bootstrap.to_vec())
                .client_id(&format!("{client_id}-writer"))
                .linger_ms(0)
                .set("delivery.timeout.ms", timeout.as_millis().max(1000))
                .set("request.timeout.ms", timeout.as_millis().clamp(500, 30_000))
                .build()
                .map_err(|e| LogError::Kafka(e.to_string()))?,
        )
        .await
        .map_err(|e| LogError::Kafka(e.to_string()))?;
        let (applied_tx, applied) = watch::channel(
            (0..partitions)
                .map(|p| (p, 0i64))
                .collect::<BTreeMap<_, _>>(),
        );
        let reader = tokio::spawn(read_loop(consumer, all, apply, applied_tx));
        let log = TopicLog {
            topic: spec.name.clone(),
            partitions,
            admin,
            producer,
            applied,
            reader,
            timeout,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        log.sync_within(left.max(Duration::from_secs(1))).await?;
        Ok(log)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }

    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    pub fn admin(&self) -> &Admin {
        &self.admin
    }

    /// Writes a record (None value: a tombstone) to `partition` (None: by key, with
    /// Kafka's default partitioner) and returns its (partition, offset) once the broker
    /// acknowledged it.
    pub async fn write(
        &self,
        key: &[u8],
        value: Option<Vec<u8>>,
        partition: Option<i32>,
    ) -> Result<(i32, i64), LogError> {
        let mut record = ProducerRecord::new(self.topic.clone(), Bytes::new())
            .with_key(Bytes::from(key.to_vec()));
        if let Some(partition) = partition {
            record = record.with_partition(partition);
        }
        record.value = value.map(Bytes::from);
        let delivery = self
            .producer
            .send(record)
            .await
            .map_err(|e| LogError::Kafka(e.to_string()))?;
        let metadata = tokio::time::timeout(self.timeout, delivery)
            .await
            .map_err(|_| LogError::Timeout(self.timeout, "writing to an internal topic"))?
            .map_err(|e| LogError::Kafka(e.to_string()))?;
        Ok((metadata.partition, metadata.offset))
    }

    /// [`TopicLog::write`], then waits until this worker's reader applied it.
    pub async fn write_and_apply(
        &self,
        key: &[u8],
        value: Option<Vec<u8>>,
        partition: Option<i32>,
    ) -> Result<(), LogError> {
        let (partition, offset) = self.write(key, value, partition).await?;
        if offset < 0 {
            // A retry the broker recognised as a duplicate: no offset to wait for.
            return self.sync().await;
        }
        let mut target = BTreeMap::new();
        target.insert(partition, offset + 1);
        self.wait_applied(&target, self.timeout).await
    }

    /// Waits until the reader has applied the log up to its end as of now.
    pub async fn sync(&self) -> Result<(), LogError> {
        self.sync_within(self.timeout).await
    }

    async fn sync_within(&self, timeout: Duration) -> Result<(), LogError> {
        let deadline = Instant::now() + timeout;
        let ends = log_ends(&self.admin, &self.topic, self.partitions, deadline).await?;
        let left = deadline.saturating_duration_since(Instant::now());
        self.wait_applied(&ends, left).await
    }

    async fn wait_applied(
        &self,
        target: &BTreeMap<i32, i64>,
        timeout: Duration,
    ) -> Result<(), LogError> {
        let mut applied = self.applied.clone();
        tokio::time::timeout(
            timeout,
            applied.wait_for(|now| {
                target
                    .iter()
                    .all(|(p, end)| now.get(p).is_some_and(|at| at >= end))
            }),
        )
        .await
        .map_err(|_| LogError::Timeout(timeout, "reading an internal topic to its end"))?
        .map_err(|_| LogError::Kafka("the reader stopped".into()))?;
        Ok(())
    }
}

/// Creates the topic (compacted) or checks the existing one; returns its partition
/// count.
async fn ensure_topic(admin: &Admin, spec: &TopicSpec) -> Result<i32, LogError> {
    let kafka = |e: sluice_client::Error| LogError::Kafka(e.to_string());
    let mut configs = vec![("cleanup.policy".to_string(), "compact".to_string())];
    configs.extend(spec.configs.iter().cloned());
    let results = admin
        .create_topics(
            &[NewTopic {
                name: spec.name.clone(),
                num_partitions: Some(spec.partitions),
                replication_factor: (spec.replication_factor > 0)
                    .then_some(spec.replication_factor),
                configs,
            }],
            false,
        )
        .await
        .map_err(kafka)?;
    match results.get(&spec.name) {
        Some(Ok(_)) => {}
        Some(Err(e)) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => {}
        Some(Err(e)) => return Err(LogError::Kafka(e.to_string())),
        None => return Err(LogError::Kafka("CreateTopics answered nothing".into())),
    }
    let bad = |reason: String| LogError::BadTopic {
        topic: spec.name.clone(),
        reason,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let descriptions = admin
            .describe_topics(std::slice::from_ref(&spec.name))
            .await
            .map_err(kafka)?;
        match descriptions.get(&spec.name) {
            Some(Ok(description)) if !description.partitions.is_empty() => {
                let configs = admin
                    .describe_topic_configs(std::slice::from_ref(&spec.name))
                    .await
                    .map_err(kafka)?;
                if let Some(Ok(entries)) = configs.get(&spec.name)
                    && let Some(policy) = entries.iter().find(|e| e.name == "cleanup.policy")
                    && policy.value.as_deref() != Some("compact")
                {
                    // Connect's own check (`TopicAdmin.verifyTopicCleanupPolicyOnlyCompact`).
                    return Err(bad(format!(
                        "Topic '{}' supplied via the '{}' property is required to have \
                         'cleanup.policy=compact' to guarantee consistency and durability \
                         of source connector offsets, but found the topic currently has \
                         'cleanup.policy={}'",
                        spec.name,
                        "storage.topic",
                        policy.value.clone().unwrap_or_default()
                    )));
                }
                return Ok(description.partitions.len() as i32);
            }
            _ if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => return Err(bad(format!("it could not be described: {other:?}"))),
        }
    }
}

/// Every partition's log end offset, retrying while a partition has no leader.
async fn log_ends(
    admin: &Admin,
    topic: &str,
    partitions: i32,
    deadline: Instant,
) -> Result<BTreeMap<i32, i64>, LogError> {
    let specs = (0..partitions)
        .map(|p| (TopicPartition::new(topic, p), OffsetSpec::Latest))
        .collect();
    loop {
        // The reader is read_committed: its end is the last stable offset (an open
        // transaction of a killed EOS source task must not hold a sync up).
        let error = match admin.list_offsets_isolated(&specs, true).await {
            Ok(results) => {
                let mut ends = BTreeMap::new();
                let mut error = None;
                for (tp, result) in results {
                    match result {
                        Ok(info) => {
                            ends.insert(tp.partition, info.offset);
                        }
                        Err(e) => error = Some(e.to_string()),
                    }
                }
                match error {
                    None if ends.len() == partitions as usize => return Ok(ends),
                    None => "ListOffsets left out partitions".to_string(),
                    Some(error) => error,
                }
            }
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(LogError::Kafka(format!(
                "could not read the end of {topic}: {error}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn read_loop(
    mut consumer: Consumer,
    partitions: Vec<TopicPartition>,
    mut apply: Apply,
    applied: watch::Sender<BTreeMap<i32, i64>>,
) {
    loop {
        let records = match consumer.poll(Duration::from_millis(500)).await {
            Ok(records) => records,
            Err(e) => {
                tracing::warn!("reading an internal topic: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut next = applied.borrow().clone();
        for record in records {
            let at = next.entry(record.partition).or_insert(0);
            *at = (*at).max(record.offset + 1);
            apply(LogRecord {
                partition: record.partition,
                offset: record.offset,
                key: record.key,
                value: record.value,
            });
        }
        // Positions move past offsets without a record (compacted holes, control
        // batches), which the log end counts.
        for tp in &partitions {
            if let Ok(position) = consumer.position(tp).await {
                let at = next.entry(tp.partition).or_insert(0);
                *at = (*at).max(position);
            }
        }
        if next != *applied.borrow() {
            applied.send_replace(next);
        }
    }
}
