//! The `_schemas` topic as the registry's storage (Confluent's `KafkaStore`): one
//! partition, compacted; a reader task per instance replays it from the beginning into the
//! [`Store`] and keeps following it; the leader writes through a producer and waits until
//! its own reader has applied the write, so a response never runs ahead of the state.
//!
//! Durability: a write is acknowledged to the HTTP caller only after the broker
//! acknowledged it with `acks=all` (idempotent producer) and this instance's reader applied
//! it. What the broker acknowledged survives a registry restart: the state is rebuilt from
//! the topic, never kept anywhere else.

use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, ErrorCode, NewTopic, OffsetSpec, TopicPartition};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::records::{Key, Record};
use crate::store::Store;

/// Where and how the registry keeps its state (Confluent's `kafkastore.*` keys).
#[derive(Debug, Clone)]
pub struct KafkaStoreConfig {
    /// `kafkastore.bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    /// `kafkastore.topic` (default `_schemas`).
    pub topic: String,
    /// `kafkastore.topic.replication.factor` (default 3; capped at the number of brokers,
    /// with a warning, so a single-node cluster works).
    pub replication_factor: i16,
    /// `kafkastore.timeout.ms`: how long a write waits for the broker and then for this
    /// instance's reader (default 500 ms in Confluent; 10 s here, for loaded test machines).
    pub timeout: Duration,
    /// `kafkastore.init.timeout.ms`: how long start-up waits for the topic and for the
    /// reader to reach the end of the log (default 60 s).
    pub init_timeout: Duration,
}

impl KafkaStoreConfig {
    pub fn new(bootstrap_servers: Vec<String>) -> KafkaStoreConfig {
        KafkaStoreConfig {
            bootstrap_servers,
            topic: "_schemas".to_string(),
            replication_factor: 3,
            timeout: Duration::from_secs(10),
            init_timeout: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("error in the backend data store: {0}")]
    Kafka(String),
    #[error("write to the backend data store timed out after {0:?}")]
    Timeout(Duration),
    #[error("the _schemas topic {topic} is not usable: {reason}")]
    BadTopic { topic: String, reason: String },
}

pub struct KafkaStore {
    config: KafkaStoreConfig,
    admin: Admin,
    state: Arc<RwLock<Store>>,
    /// The next offset the reader will apply (everything below it is in `state`).
    applied: watch::Receiver<i64>,
    producer: tokio::sync::OnceCell<Producer>,
    reader: JoinHandle<()>,
}

impl Drop for KafkaStore {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl KafkaStore {
    /// Creates the topic if it is missing, starts the reader and waits until it has read
    /// the log up to its current end.
    pub async fn start(config: KafkaStoreConfig) -> Result<KafkaStore, StoreError> {
        let deadline = Instant::now() + config.init_timeout;
        let admin = Admin::connect(ClientConfig::new(config.bootstrap_servers.clone()))
            .await
            .map_err(|e| StoreError::Kafka(e.to_string()))?;
        ensure_topic(&admin, &config).await?;
        let end = log_end(&admin, &config.topic, deadline).await?;

        let state = Arc::new(RwLock::new(Store::new()));
        let (applied_tx, applied) = watch::channel(0i64);
        let mut consumer_config = ConsumerConfig::new(config.bootstrap_servers.clone());
        consumer_config
            .set("client.id", "sluice-registry-reader")
            .and_then(|()| consumer_config.set("enable.auto.commit", "false"))
            .and_then(|()| consumer_config.set("auto.offset.reset", "earliest"))
            .and_then(|()| consumer_config.set("fetch.max.wait.ms", "100"))
            .map_err(|e| StoreError::Kafka(e.to_string()))?;
        let mut consumer = Consumer::new(consumer_config)
            .await
            .map_err(|e| StoreError::Kafka(e.to_string()))?;
        let partition = TopicPartition::new(config.topic.clone(), 0);
        consumer
            .assign([partition.clone()])
            .and_then(|()| consumer.seek(&partition, 0))
            .map_err(|e| StoreError::Kafka(e.to_string()))?;
        let reader = tokio::spawn(read_loop(consumer, partition, state.clone(), applied_tx));
        let store = KafkaStore {
            config,
            admin,
            state,
            applied,
            producer: tokio::sync::OnceCell::new(),
            reader,
        };
        store
            .wait_applied(end, deadline)
            .await
            .map_err(|_| StoreError::Timeout(store.config.init_timeout))?;
        Ok(store)
    }

    /// The state as of the last record the reader applied.
    pub fn read(&self) -> RwLockReadGuard<'_, Store> {
        self.state
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// How long a write may take (`kafkastore.timeout.ms`).
    pub fn write_timeout(&self) -> Duration {
        self.config.timeout
    }

    /// The Kafka cluster's id, as its metadata reports it.
    pub fn cluster_id(&self) -> Option<String> {
        self.admin.client().cluster_id()
    }

    /// The next offset the reader will apply.
    pub fn applied_offset(&self) -> i64 {
        *self.applied.borrow()
    }

    /// Writes one record and returns once this instance's state includes it.
    pub async fn write(&self, key: &Key, value: Option<Vec<u8>>) -> Result<i64, StoreError> {
        let deadline = Instant::now() + self.config.timeout;
        let producer = self
            .producer
            .get_or_try_init(|| async {
                let config = ProducerConfig::builder(self.config.bootstrap_servers.clone())
                    .client_id("sluice-registry-writer")
                    .linger_ms(0)
                    .set(
                        "delivery.timeout.ms",
                        self.config.timeout.as_millis().max(1000),
                    )
                    .set(
                        "request.timeout.ms",
                        self.config.timeout.as_millis().clamp(500, 30_000),
                    )
                    .build()
                    .map_err(|e| StoreError::Kafka(e.to_string()))?;
                Producer::connect(config)
                    .await
                    .map_err(|e| StoreError::Kafka(e.to_string()))
            })
            .await?;
        let mut record = ProducerRecord::new(self.config.topic.clone(), Bytes::new())
            .with_key(Bytes::from(key.to_bytes()))
            .with_partition(0);
        record.value = value.map(Bytes::from);
        let delivery = producer
            .send(record)
            .await
            .map_err(|e| StoreError::Kafka(e.to_string()))?;
        let metadata = tokio::time::timeout_at(deadline.into(), delivery)
            .await
            .map_err(|_| StoreError::Timeout(self.config.timeout))?
            .map_err(|e| StoreError::Kafka(e.to_string()))?;
        if metadata.offset < 0 {
            return Err(StoreError::Kafka(
                "the broker did not report the offset of the write".to_string(),
            ));
        }
        self.wait_applied(metadata.offset + 1, deadline)
            .await
            .map_err(|_| StoreError::Timeout(self.config.timeout))?;
        Ok(metadata.offset)
    }

    /// Waits until the reader has applied everything below `offset`.
    async fn wait_applied(&self, offset: i64, deadline: Instant) -> Result<(), ()> {
        let mut applied = self.applied.clone();
        tokio::time::timeout_at(deadline.into(), applied.wait_for(|next| *next >= offset))
            .await
            .map_err(|_| ())?
            .map_err(|_| ())?;
        Ok(())
    }

    /// Waits until the reader has read the log to its current end (a follower's "read your
    /// writes" after the leader answered, or a new leader before its first write).
    pub async fn sync(&self) -> Result<(), StoreError> {
        let deadline = Instant::now() + self.config.timeout;
        let end = log_end(&self.admin, &self.config.topic, deadline).await?;
        self.wait_applied(end, deadline)
            .await
            .map_err(|_| StoreError::Timeout(self.config.timeout))
    }
}

async fn ensure_topic(admin: &Admin, config: &KafkaStoreConfig) -> Result<(), StoreError> {
    let brokers = admin
        .describe_cluster()
        .await
        .map_err(|e| StoreError::Kafka(e.to_string()))?
        .brokers
        .len()
        .max(1);
    let replication_factor = if brokers < config.replication_factor as usize {
        tracing::warn!(
            "kafkastore.topic.replication.factor is {} but the cluster has {} brokers; \
             creating {} with replication factor {}",
            config.replication_factor,
            brokers,
            config.topic,
            brokers
        );
        brokers as i16
    } else {
        config.replication_factor
    };
    let results = admin
        .create_topics(
            &[NewTopic {
                name: config.topic.clone(),
                num_partitions: Some(1),
                replication_factor: Some(replication_factor),
                configs: vec![("cleanup.policy".to_string(), "compact".to_string())],
            }],
            false,
        )
        .await
        .map_err(|e| StoreError::Kafka(e.to_string()))?;
    match results.get(&config.topic) {
        Some(Ok(_)) => return Ok(()),
        Some(Err(e)) if e.code == ErrorCode::TOPIC_ALREADY_EXISTS => {}
        Some(Err(e)) => return Err(StoreError::Kafka(e.to_string())),
        None => {
            return Err(StoreError::Kafka(
                "CreateTopics answered nothing".to_string(),
            ));
        }
    }
    // An existing topic must be what Confluent requires: one partition, compacted.
    let bad = |reason: String| StoreError::BadTopic {
        topic: config.topic.clone(),
        reason,
    };
    let descriptions = admin
        .describe_topics(std::slice::from_ref(&config.topic))
        .await
        .map_err(|e| StoreError::Kafka(e.to_string()))?;
    if let Some(Ok(description)) = descriptions.get(&config.topic)
        && description.partitions.len() != 1
    {
        return Err(bad(format!(
            "it has {} partitions; the registry needs exactly 1",
            description.partitions.len()
        )));
    }
    let configs = admin
        .describe_topic_configs(std::slice::from_ref(&config.topic))
        .await
        .map_err(|e| StoreError::Kafka(e.to_string()))?;
    if let Some(Ok(entries)) = configs.get(&config.topic)
        && let Some(policy) = entries.iter().find(|entry| entry.name == "cleanup.policy")
        && policy.value.as_deref() != Some("compact")
    {
        return Err(bad(format!(
            "its cleanup.policy is {:?}; the registry needs compact",
            policy.value
        )));
    }
    Ok(())
}

/// The topic's log end offset, retrying while its partition has no leader yet.
async fn log_end(admin: &Admin, topic: &str, deadline: Instant) -> Result<i64, StoreError> {
    let partition = TopicPartition::new(topic, 0);
    let specs = [(partition.clone(), OffsetSpec::Latest)]
        .into_iter()
        .collect();
    loop {
        let outcome = admin.list_offsets(&specs).await;
        let error = match outcome {
            Ok(mut results) => match results.remove(&partition) {
                Some(Ok(info)) => return Ok(info.offset),
                Some(Err(e)) => e.to_string(),
                None => "ListOffsets answered nothing".to_string(),
            },
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(StoreError::Kafka(format!(
                "could not read the end of {topic}: {error}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn read_loop(
    mut consumer: Consumer,
    partition: TopicPartition,
    state: Arc<RwLock<Store>>,
    applied: watch::Sender<i64>,
) {
    loop {
        let records = match consumer.poll(Duration::from_millis(500)).await {
            Ok(records) => records,
            Err(e) => {
                tracing::warn!("reading _schemas: {e}; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut next = *applied.borrow();
        if !records.is_empty() {
            let mut state = state
                .write()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            for record in records {
                match Record::decode(record.key.as_deref(), record.value.as_deref()) {
                    Ok(decoded) => state.apply(decoded),
                    Err(e) => {
                        state.skipped_records += 1;
                        tracing::warn!("skipping _schemas record at offset {}: {e}", record.offset);
                    }
                }
                next = next.max(record.offset + 1);
            }
        }
        // The position also moves past offsets without a record (compacted holes, control
        // batches), which the log end counts.
        if let Ok(position) = consumer.position(&partition).await {
            next = next.max(position);
        }
        if next != *applied.borrow() {
            applied.send_replace(next);
        }
    }
}
