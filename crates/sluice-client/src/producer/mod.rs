//! The producer: Kafka's `KafkaProducer` for Sluice and Apache Kafka alike.
//!
//! `send` picks a partition ([`partitioner`]), waits for `buffer.memory` room (at most
//! `max.block.ms`) and appends the record to its partition's open batch in the
//! [`accumulator`]; it returns a [`DeliveryFuture`] at once. One sender task per producer
//! ([`sender`]) takes batches that are full (`batch.size`) or lingered (`linger.ms`), and
//! sends one Produce request per broker carrying one batch of every ready partition it
//! leads, with up to `max.in.flight.requests.per.connection` requests in flight per
//! broker and per partition. Retriable errors are retried after `retry.backoff.ms` (and a
//! metadata refresh) until `retries` or `delivery.timeout.ms` runs out; an idempotent
//! producer (the default) stamps each batch with its producer id, epoch and sequence so
//! retries neither duplicate nor reorder records: a partition sends one batch at a time
//! until it acknowledged one of the producer's epoch and holds back behind a batch in
//! retry (the drain rule in [`accumulator`]), a batch the broker can no longer take in
//! order fails at once, and the producer bumps its epoch (KIP-360) when a batch is lost for
//! good. A `transactional.id` makes it transactional ([`transaction`]). The Java
//! producer's metrics (`record-send-rate`, `request-latency-avg`, ...) are kept by
//! `metrics` and read with [`Producer::kafka_metrics`].
//!
//! `acks=0` sends without waiting (the broker does not answer; offsets are reported as -1).
//! Not here: splitting a batch the broker finds too large (MESSAGE_TOO_LARGE fails the batch), adaptive
//! partitioning (`partitioner.adaptive.partitioning.enable`), transactions v2 (KIP-890
//! part 2: Produce v12, EndTxn v5; this client speaks v1, which Kafka 4.1 brokers serve).

mod accumulator;
mod config;
mod error;
mod metadata;
mod metrics;
pub mod partitioner;
mod sender;
mod transaction;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::{Header, NewRecord};
use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;

pub use accumulator::{DeliveryFuture, RecordMetadata};
pub use config::{Acks, ProducerConfig, ProducerConfigBuilder};
pub use error::ProducerError;
pub use partitioner::{Partitioner, murmur2, partition_for_key, to_positive};

use crate::client::Client;
use crate::metrics::{ClientType, MetricName, Metrics};
use crate::{ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition};
use accumulator::Accumulator;
use transaction::{Transaction, TxnState};

/// A record to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerRecord {
    pub topic: String,
    /// `None`: the partitioner chooses.
    pub partition: Option<i32>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    /// Milliseconds since the epoch; `None`: now.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a value and nothing else.
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> ProducerRecord {
        ProducerRecord {
            topic: topic.into(),
            partition: None,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
            timestamp: None,
        }
    }
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }
    pub fn with_partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }
    pub fn with_timestamp(mut self, timestamp_ms: i64) -> Self {
        self.timestamp = Some(timestamp_ms);
        self
    }
    pub fn with_header(mut self, key: impl Into<Bytes>, value: Option<Bytes>) -> Self {
        self.headers.push(Header {
            key: key.into(),
            value,
        });
        self
    }
}

/// What the producer's calls and its sender task share.
pub(crate) struct Shared {
    pub(crate) config: ProducerConfig,
    pub(crate) client: Client,
    /// Kafka's producer metrics (`producer-metrics`, `producer-topic-metrics`).
    pub(crate) metrics: metrics::ProducerMetrics,
    state: Mutex<State>,
    /// `buffer.memory`, in bytes: a record takes its size, its batch gives it back.
    memory: Semaphore,
    /// Wakes the sender: a batch was created or filled, a flush or close began.
    pub(crate) wake: Notify,
    /// Signalled whenever batches complete (for `flush`).
    pub(crate) progress: Notify,
    /// One transactional call at a time.
    txn_calls: tokio::sync::Mutex<()>,
}

pub(crate) struct State {
    pub(crate) accumulator: Accumulator,
    pub(crate) metadata: metadata::Metadata,
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    /// A sequence gap (a batch lost for good): bump the epoch before sending more.
    pub(crate) epoch_bump_needed: bool,
    pub(crate) transaction: Transaction,
    /// Callers waiting in `flush`: linger is ignored meanwhile.
    pub(crate) flushing: usize,
    pub(crate) closing: bool,
    /// Produce requests in flight per broker.
    pub(crate) requests_in_flight: BTreeMap<i32, usize>,
}

impl Shared {
    pub(crate) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every critical section leaves the state consistent before it can panic.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn release_memory(&self, bytes: usize) {
        self.memory.add_permits(bytes);
    }

    pub(crate) fn transactional(&self) -> bool {
        self.config.transactional_id.is_some()
    }
}

/// A producer: `send` records, `flush`, `close`; and transactions with a
/// `transactional.id`.
pub struct Producer {
    shared: Arc<Shared>,
    sender: Mutex<Option<JoinHandle<()>>>,
}

impl Producer {
    /// Connects to the cluster and starts the sender task. An idempotent producer that is
    /// not transactional gets its producer id here; a transactional one in
    /// [`Producer::init_transactions`].
    pub async fn connect(config: ProducerConfig) -> Result<Producer, ProducerError> {
        let metrics = metrics::ProducerMetrics::new(Metrics::new(
            ClientType::Producer,
            &config.client_id,
            config.metric_config,
        ));
        let client =
            Client::connect_observed(config.client_config(), Some(metrics.network.clone())).await?;
        let memory = Semaphore::new(config.buffer_memory);
        let shared = Arc::new(Shared {
            client,
            metrics,
            state: Mutex::new(State {
                accumulator: Accumulator::new(),
                metadata: metadata::Metadata::new(),
                producer_id: -1,
                producer_epoch: -1,
                epoch_bump_needed: false,
                transaction: Transaction {
                    transactional: config.transactional_id.is_some(),
                    ..Transaction::default()
                },
                flushing: 0,
                closing: false,
                requests_in_flight: BTreeMap::new(),
            }),
            memory,
            wake: Notify::new(),
            progress: Notify::new(),
            txn_calls: tokio::sync::Mutex::new(()),
            config,
        });
        shared
            .metrics
            .add_gauges(Arc::downgrade(&shared), shared.config.buffer_memory);
        if shared.config.enable_idempotence && !shared.transactional() {
            let deadline = Instant::now() + Duration::from_millis(shared.config.max_block_ms);
            let (producer_id, epoch) =
                transaction::init_producer_id(&shared, None, deadline).await?;
            let mut state = shared.lock();
            state.producer_id = producer_id;
            state.producer_epoch = epoch;
        }
        let sender = tokio::spawn(sender::run(shared.clone()));
        Ok(Producer {
            shared,
            sender: Mutex::new(Some(sender)),
        })
    }

    /// The configuration this producer was made with.
    pub fn config(&self) -> &ProducerConfig {
        &self.shared.config
    }

    /// Every metric's current value, named as the Java producer's (its `metrics()`):
    /// `producer-metrics` (`record-send-rate`, `request-latency-avg`, ...) and
    /// `producer-topic-metrics`, tagged `client-id` (see [`crate::metrics`]).
    pub fn kafka_metrics(&self) -> BTreeMap<MetricName, f64> {
        self.shared.metrics.metrics.values()
    }

    /// The producer's metrics registry: a handle that reads them from anywhere, or
    /// exports them to Prometheus ([`Metrics::register_prometheus`]). It outlives
    /// nothing: once the producer is dropped its values stop changing.
    pub fn metrics_registry(&self) -> Metrics {
        self.shared.metrics.metrics.clone()
    }

    /// Appends `record` to its partition's batch and returns its delivery future. Waits
    /// at most `max.block.ms` for the topic's metadata and for `buffer.memory` room.
    pub async fn send(&self, record: ProducerRecord) -> Result<DeliveryFuture, ProducerError> {
        let shared = &self.shared;
        let config = &shared.config;
        let deadline = Instant::now() + Duration::from_millis(config.max_block_ms);
        self.check_can_send()?;
        let partition_count = self.partition_count(&record.topic, deadline).await?;
        let key = if config.partitioner_ignore_keys {
            None
        } else {
            record.key.as_deref()
        };
        let chosen = match record.partition {
            Some(partition) if partition < 0 || partition >= partition_count => {
                return Err(ProducerError::InvalidRecord(format!(
                    "partition {partition} is not in topic {} ({partition_count} partitions)",
                    record.topic
                )));
            }
            Some(partition) => Some(partition),
            None => config
                .partitioner
                .as_ref()
                .and_then(|custom| {
                    custom.partition(
                        &record.topic,
                        record.key.as_deref(),
                        record.value.as_deref(),
                        partition_count,
                    )
                })
                .map(|partition| partition.rem_euclid(partition_count))
                .or_else(|| key.map(|key| partition_for_key(key, partition_count))),
        };
        let size_bytes = record_size_bytes(&record);
        if size_bytes + accumulator::BATCH_OVERHEAD_BYTES > config.max_request_size {
            return Err(ProducerError::RecordTooLarge {
                size_bytes,
                setting: "max.request.size",
                limit_bytes: config.max_request_size,
            });
        }
        if size_bytes > config.buffer_memory {
            return Err(ProducerError::RecordTooLarge {
                size_bytes,
                setting: "buffer.memory",
                limit_bytes: config.buffer_memory,
            });
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(wait, shared.memory.acquire_many(size_bytes as u32)).await {
            Ok(Ok(permit)) => permit.forget(),
            Ok(Err(_)) => return Err(ProducerError::Closed),
            Err(_) => {
                return Err(ProducerError::Timeout {
                    what: format!("waiting for {size_bytes} bytes of buffer.memory"),
                    setting: "max.block.ms",
                    timeout_ms: config.max_block_ms,
                });
            }
        }
        let result = self
            .append(record, chosen, partition_count, size_bytes, deadline)
            .await;
        if result.is_err() {
            shared.release_memory(size_bytes);
        }
        result
    }

    async fn append(
        &self,
        record: ProducerRecord,
        chosen: Option<i32>,
        partition_count: i32,
        size_bytes: usize,
        deadline: Instant,
    ) -> Result<DeliveryFuture, ProducerError> {
        let shared = &self.shared;
        let partition = match chosen {
            Some(partition) => partition,
            None => shared
                .lock()
                .accumulator
                .sticky_partition(&record.topic, partition_count),
        };
        if shared.transactional() {
            transaction::add_partition(shared, &record.topic, partition, deadline).await?;
        }
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let new_record = NewRecord {
            timestamp,
            key: record.key,
            value: record.value,
            headers: record.headers,
        };
        let appended = {
            let mut state = shared.lock();
            if state.closing {
                return Err(ProducerError::Closed);
            }
            state.accumulator.append(
                &record.topic,
                partition,
                partition_count,
                &new_record,
                size_bytes,
                shared.config.batch_size,
                shared.config.compression,
                chosen.is_none(),
            )?
        };
        if appended.wake_sender || shared.config.linger_ms == 0 {
            shared.wake.notify_one();
        }
        Ok(appended.future)
    }

    fn check_can_send(&self) -> Result<(), ProducerError> {
        let state = self.shared.lock();
        if state.closing {
            return Err(ProducerError::Closed);
        }
        if self.shared.transactional() {
            return match &state.transaction.state {
                TxnState::InTransaction => Ok(()),
                TxnState::FatalError(error) | TxnState::AbortableError(error) => Err(error.clone()),
                other => Err(ProducerError::InvalidState(format!(
                    "send needs an open transaction (begin_transaction); the producer is {other:?}"
                ))),
            };
        }
        Ok(())
    }

    /// The topic's partition count, asking for metadata until `deadline` if unknown.
    async fn partition_count(&self, topic: &str, deadline: Instant) -> Result<i32, ProducerError> {
        loop {
            let (count, error) = {
                let state = self.shared.lock();
                (
                    state.metadata.partition_count(topic),
                    state.metadata.topics.get(topic).map(|info| info.error),
                )
            };
            if let Some(count) = count {
                return Ok(count);
            }
            if let Some(code) = error.filter(|code| code.0 != 0 && !code.is_retriable()) {
                return Err(ProducerError::api(code, Some(&format!("topic {topic}"))));
            }
            if Instant::now() >= deadline {
                return Err(ProducerError::Timeout {
                    what: format!("waiting for the metadata of topic {topic}"),
                    setting: "max.block.ms",
                    timeout_ms: self.shared.config.max_block_ms,
                });
            }
            if error.is_some() {
                tokio::time::sleep(Duration::from_millis(self.shared.config.retry_backoff_ms))
                    .await;
            }
            if let Err(error) = metadata::refresh(&self.shared, vec![topic.to_string()]).await {
                if !error.is_retriable() {
                    return Err(error);
                }
                tokio::time::sleep(Duration::from_millis(self.shared.config.retry_backoff_ms))
                    .await;
            }
        }
    }

    /// The number of partitions of `topic` (Kafka's `partitionsFor(topic).size()`).
    pub async fn partitions_for(&self, topic: &str) -> Result<i32, ProducerError> {
        let deadline = Instant::now() + Duration::from_millis(self.shared.config.max_block_ms);
        self.partition_count(topic, deadline).await
    }

    /// Sends every batch now (ignoring `linger.ms`) and waits until each record sent
    /// before the call has its answer.
    pub async fn flush(&self) -> Result<(), ProducerError> {
        self.shared.lock().flushing += 1;
        self.shared.wake.notify_one();
        self.wait_for_completion().await;
        self.shared.lock().flushing -= 1;
        Ok(())
    }

    async fn wait_for_completion(&self) {
        loop {
            let progress = self.shared.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            if self.shared.lock().accumulator.incomplete_batches == 0 {
                return;
            }
            let sender_finished = self
                .sender
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .as_ref()
                .is_none_or(|task| task.is_finished());
            if sender_finished {
                return;
            }
            // The timeout guards against a missed wake-up only.
            let _ = tokio::time::timeout(Duration::from_millis(100), progress).await;
        }
    }

    /// Sends what is buffered, waits for every record's answer, and stops the sender.
    /// Later calls fail with [`ProducerError::Closed`].
    pub async fn close(&self) -> Result<(), ProducerError> {
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        self.wait_for_completion().await;
        let task = self
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(task) = task {
            let _ = task.await;
        }
        self.shared.memory.close();
        Ok(())
    }

    /// Finds the transaction coordinator and gets this `transactional.id`'s producer id
    /// and epoch, fencing older producers with the same id and aborting their open
    /// transaction. Once per producer, before any transaction.
    pub async fn init_transactions(&self) -> Result<(), ProducerError> {
        let _calls = self.shared.txn_calls.lock().await;
        transaction::init_transactions(&self.shared).await
    }

    /// Starts a transaction: records sent from now until commit or abort belong to it.
    pub fn begin_transaction(&self) -> Result<(), ProducerError> {
        transaction::begin(&self.shared)
    }

    /// Adds a consumer's offsets to the transaction (AddOffsetsToTxn, then
    /// TxnOffsetCommit to the group coordinator): they are committed with it.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
        group: &ConsumerGroupMetadata,
    ) -> Result<(), ProducerError> {
        let _calls = self.shared.txn_calls.lock().await;
        transaction::send_offsets(&self.shared, offsets, group).await
    }

    /// Flushes and commits the transaction. An abortable error leaves the transaction to
    /// be aborted; a fatal one ends the producer.
    pub async fn commit_transaction(&self) -> Result<(), ProducerError> {
        let _calls = self.shared.txn_calls.lock().await;
        self.flush().await?;
        transaction::end(&self.shared, true).await
    }

    /// Drops the records not yet sent, waits for those in flight, and aborts the
    /// transaction.
    pub async fn abort_transaction(&self) -> Result<(), ProducerError> {
        let _calls = self.shared.txn_calls.lock().await;
        transaction::check_can_abort(&self.shared)?;
        sender::abort_unsent(&self.shared);
        self.flush().await?;
        transaction::end(&self.shared, false).await
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        if let Some(task) = self
            .sender
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take()
        {
            task.abort();
        }
    }
}

/// Bytes a record takes in `buffer.memory` and counts toward `batch.size`: its encoded
/// size, an upper bound on the varints.
fn record_size_bytes(record: &ProducerRecord) -> usize {
    let field = |bytes: &Option<Bytes>| 5 + bytes.as_ref().map_or(0, Bytes::len);
    let headers: usize = record
        .headers
        .iter()
        .map(|header| 5 + header.key.len() + field(&header.value))
        .sum();
    // length, attributes, timestamp delta, offset delta, header count
    5 + 1 + 10 + 5 + 5 + field(&record.key) + field(&record.value) + headers
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as i64)
}
