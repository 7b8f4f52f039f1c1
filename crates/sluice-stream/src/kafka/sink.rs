//! `KafkaSink`: Flink's `KafkaSink` with its three delivery guarantees.
//!
//! - `None`: records are sent and never waited for; a crash loses what was buffered.
//! - `AtLeastOnce`: on every checkpoint barrier the producer is flushed and every record's
//!   acknowledgement checked, so what a checkpoint covers is in Kafka before the
//!   checkpoint completes; a restart replays the rest (duplicates, never loss).
//! - `ExactlyOnce`: Flink's two-phase commit. The records written between two barriers go
//!   into one Kafka transaction whose transactional id is `{prefix}-{subtask}-{checkpoint
//!   id}` (the subtask: the sink instance's index, 0 on the single-threaded executor; the
//!   id of the checkpoint that will pre-commit it; Flink's `prefix-subtask-checkpointId`).
//!   On the barrier the transaction is flushed and every record's
//!   acknowledgement checked (a failed record fails the checkpoint: a recovery's EndTxn
//!   would otherwise commit the transaction without it), then its
//!   `(transactional id, producer id, epoch)` goes into the checkpoint
//!   (`Sink::checkpoint_state`). The producer does not expose its id and epoch, so they
//!   are asked of the coordinator with DescribeTransactions, on a direct `Connection` at
//!   v0 (the client's table of implemented versions leaves that API out, so
//!   `Client::send` refuses it). When the checkpoint completes the transaction is
//!   committed. A new transaction (a new producer, whose InitProducerId
//!   also aborts whatever a failed run left open under that id) starts at the next write.
//!
//! The window between "checkpoint N stored" and "transaction N committed": a crash there
//! leaves transaction N open with its records, and checkpoint N says they are done
//! (the source will not replay them). A restored sink therefore commits it first, as
//! Flink's `KafkaCommitter` does: FindCoordinator for the transactional id, then EndTxn
//! (commit) with the stored producer id and epoch, before any new transaction. If the
//! coordinator answers that the epoch is stale or the transaction is not ongoing, the
//! transaction was already completed: committed by the notify that ran before the crash
//! or by an earlier recovery (fine), or aborted because the job stayed down longer than
//! `transaction.timeout.ms` (its records are lost: Flink has the same limit, hence its
//! advice to set the timeout well above the expected downtime). Both cases are logged.
//!
//! `transaction.timeout.ms` defaults to 900 000 (15 minutes, Kafka brokers' default
//! `transaction.max.timeout.ms`) rather than the producer's 60 s: it bounds the downtime
//! the crash window survives. The price, as in Flink: a job killed and not restarted
//! leaves its open transaction holding back read_committed readers of the output until
//! then.
//!
//! Two exactly-once sinks (or jobs) writing at once need different prefixes. Parallel
//! instances (`execute_parallel`) differ by subtask; each keeps its state in its own key
//! group, so after a rescale an instance may restore the states of several former ones:
//! it commits their pre-committed transactions and aborts what they may have left open
//! under their next ids (InitProducerId on those ids), as Flink's sink aborts the
//! lingering transactions of former subtasks.
//!
//! Lingering transactions: a crash after pre-commit N+1 but before checkpoint N+1 was
//! stored leaves `{prefix}-{subtask}-{N+1}` open; a job restored from N reuses that id for its
//! first transaction, and starts that transaction's producer right at restore, whose
//! InitProducerId aborts it, so read_committed readers are not held up (their last stable
//! offset) until the transaction timeout.
//!
//! At the end of a bounded input, `finish` commits what is open (the role of Flink's final
//! checkpoint); what it commits is not covered by a checkpoint, so use
//! `KafkaSource::with_stop_when_idle(.., true)`, which ends only when a checkpoint covers
//! everything, when a job must be restartable after it ended.
//!
//! Costs: one producer (a connection, FindCoordinator, InitProducerId) per checkpoint
//! interval that has output, plus DescribeTransactions and EndTxn per checkpoint; records
//! are batched by the producer (`linger.ms` 5 by default here).
//!
//! A `transaction.timeout.ms` above the broker's `transaction.max.timeout.ms` fails the job
//! at its first transaction with `StreamError::InvalidConfiguration` naming both settings
//! (the broker's INVALID_TRANSACTION_TIMEOUT; not restarted, since a restart cannot help).
//!
//! Not yet: a per-record topic (one topic per sink).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use kafka_protocol::messages::{
    DescribeTransactionsRequest, EndTxnRequest, FindCoordinatorRequest, ProducerId, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};
use sluice_client::kafka_protocol;
use sluice_client::producer::{DeliveryFuture, Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Client, ClientConfig, Connection, ErrorCode, Target};

use super::{connector_error, connector_runtime};
use crate::error::StreamError;
use crate::sink::Sink;

/// Flink's `DeliveryGuarantee`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryGuarantee {
    None,
    AtLeastOnce,
    /// Transactions named `{transactional_id_prefix}-{subtask}-{checkpoint id}`. Needs
    /// checkpointing: without it everything is committed at the end of the input only.
    ExactlyOnce {
        transactional_id_prefix: String,
    },
}

/// Kafka's error codes the recovery commit interprets (Kafka's `Errors`).
const INVALID_PRODUCER_EPOCH: i16 = ErrorCode::INVALID_PRODUCER_EPOCH.0;
const INVALID_TXN_STATE: i16 = ErrorCode::INVALID_TXN_STATE.0;
const PRODUCER_FENCED: i16 = ErrorCode::PRODUCER_FENCED.0;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = ErrorCode::TRANSACTIONAL_ID_NOT_FOUND.0;
/// The sink's `transaction.timeout.ms` unless set (module docs).
const TRANSACTION_TIMEOUT_MS_DEFAULT: u32 = 900_000;
/// How long the recovery commit retries retriable coordinator errors.
const RECOVERY_COMMIT_TIMEOUT: Duration = Duration::from_secs(30);
const COORDINATOR_TYPE_TRANSACTION: i8 = 1;

/// (key, value) of a record; a `None` value is a tombstone.
type Serializer<T> = Box<dyn Fn(&T) -> (Option<Vec<u8>>, Option<Vec<u8>>)>;

/// Writes a stream to a Kafka topic (Flink's `KafkaSink`).
pub struct KafkaSink<T> {
    name: String,
    bootstrap_servers: String,
    topic: String,
    serializer: Serializer<T>,
    guarantee: DeliveryGuarantee,
    properties: Vec<(String, String)>,
    runtime: Option<tokio::runtime::Runtime>,
    /// `None` and `AtLeastOnce`: the one producer; `ExactlyOnce`: the producer of the
    /// open transaction.
    producer: Option<Producer>,
    /// `AtLeastOnce` and `ExactlyOnce`: acknowledgements to check at the next barrier,
    /// one per record written since (the memory this takes grows with the records per
    /// checkpoint interval).
    deliveries: Vec<DeliveryFuture>,
    /// `ExactlyOnce`: the id of the checkpoint that will pre-commit the open (or next)
    /// transaction.
    next_checkpoint_id: u64,
    /// `ExactlyOnce`: pre-committed and waiting for their checkpoints to complete, oldest
    /// first (on parallel tasks records after a barrier may arrive before the checkpoint
    /// completes, so more than one can wait; bounded by the checkpoints in flight).
    pre_committed: Vec<PreCommitted>,
    /// This instance's index among the sink's parallel instances (in its transactional
    /// ids, as Flink's `{prefix}-{subtask}-{checkpoint}`).
    subtask: u32,
}

struct PreCommitted {
    checkpoint_id: u64,
    producer: Producer,
    transaction: TransactionHandle,
}

/// What a checkpoint stores about a pre-committed transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct TransactionHandle {
    transactional_id: String,
    producer_id: i64,
    producer_epoch: i16,
}

/// `checkpoint_state` of an exactly-once sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SinkCheckpoint {
    next_checkpoint_id: u64,
    /// The transactions pre-committed and not known to be committed, oldest first.
    #[serde(default)]
    pending: Vec<TransactionHandle>,
    /// The one pre-committed transaction, in checkpoints of earlier versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pre_committed: Option<TransactionHandle>,
    /// The instance that wrote it: after a rescale another instance may restore it, and
    /// then aborts what that one may have left open.
    #[serde(default)]
    subtask: u32,
}

impl<T> KafkaSink<T> {
    /// A sink writing each record's `serializer(record)` = (key, value) to `topic`.
    pub fn new(
        bootstrap_servers: impl Into<String>,
        topic: impl Into<String>,
        serializer: impl Fn(&T) -> (Option<Vec<u8>>, Vec<u8>) + 'static,
        guarantee: DeliveryGuarantee,
    ) -> Self {
        Self::with_tombstones(
            bootstrap_servers,
            topic,
            move |record| {
                let (key, value) = serializer(record);
                (key, Some(value))
            },
            guarantee,
        )
    }

    /// A sink whose `serializer` may also write tombstones (a `None` value), as Flink's
    /// `KafkaRecordSerializationSchema` may return a record with a null value: the way a
    /// changelog deletes a key for a compacted topic and for sinks downstream (the
    /// Elasticsearch sink's `behavior.on.null.values=delete`, the JDBC sink's
    /// `delete.enabled`).
    pub fn with_tombstones(
        bootstrap_servers: impl Into<String>,
        topic: impl Into<String>,
        serializer: impl Fn(&T) -> (Option<Vec<u8>>, Option<Vec<u8>>) + 'static,
        guarantee: DeliveryGuarantee,
    ) -> Self {
        let topic = topic.into();
        Self {
            name: format!("sink to {topic}"),
            bootstrap_servers: bootstrap_servers.into(),
            topic,
            serializer: Box::new(serializer),
            guarantee,
            properties: Vec::new(),
            runtime: None,
            producer: None,
            deliveries: Vec::new(),
            next_checkpoint_id: 1,
            pre_committed: Vec::new(),
            subtask: 0,
        }
    }

    /// A producer setting (Kafka's keys, e.g. `transaction.timeout.ms`, `linger.ms`);
    /// `transactional.id` is the sink's own.
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }

    fn error(&self, error: impl std::fmt::Display) -> StreamError {
        connector_error(&self.name, error)
    }

    fn runtime(&mut self) -> Result<&tokio::runtime::Runtime, StreamError> {
        if self.runtime.is_none() {
            self.runtime = Some(connector_runtime("kafka-sink")?);
        }
        Ok(self.runtime.as_ref().expect("created above"))
    }

    fn prefix(&self) -> Option<&str> {
        match &self.guarantee {
            DeliveryGuarantee::ExactlyOnce {
                transactional_id_prefix,
            } => Some(transactional_id_prefix),
            _ => None,
        }
    }

    /// A producer; transactional (initialised, in a transaction) with `transactional_id`.
    fn start_producer(
        &mut self,
        transactional_id: Option<String>,
    ) -> Result<Producer, StreamError> {
        let mut settings: BTreeMap<String, String> = BTreeMap::new();
        settings.insert("bootstrap.servers".into(), self.bootstrap_servers.clone());
        settings.insert("linger.ms".into(), "5".into());
        settings.insert(
            "transaction.timeout.ms".into(),
            TRANSACTION_TIMEOUT_MS_DEFAULT.to_string(),
        );
        if self.guarantee == DeliveryGuarantee::None {
            settings.insert("acks".into(), "1".into());
            settings.insert("enable.idempotence".into(), "false".into());
        }
        for (key, value) in &self.properties {
            settings.insert(key.clone(), value.clone());
        }
        settings.remove("transactional.id");
        if let Some(id) = &transactional_id {
            settings.insert("transactional.id".into(), id.clone());
        }
        let config = ProducerConfig::from_map(&settings).map_err(|error| self.error(error))?;
        let runtime = self.runtime()?;
        let started = runtime.block_on(async {
            let producer = Producer::connect(config).await?;
            if transactional_id.is_some() {
                producer.init_transactions().await?;
                producer.begin_transaction()?;
            }
            Ok::<_, sluice_client::producer::ProducerError>(producer)
        });
        started.map_err(|error| match error {
            // Restarting cannot help: a configuration error, with what to change.
            error
                if error.code() == Some(sluice_client::ErrorCode::INVALID_TRANSACTION_TIMEOUT) =>
            {
                StreamError::InvalidConfiguration(format!(
                    "kafka connector {}: transaction.timeout.ms={} is larger than the broker's \
                     transaction.max.timeout.ms (INVALID_TRANSACTION_TIMEOUT); set the sink's \
                     transaction.timeout.ms (with_property) to at most the broker's maximum, \
                     or raise transaction.max.timeout.ms on the brokers",
                    self.name,
                    settings
                        .get("transaction.timeout.ms")
                        .map_or("?", String::as_str),
                ))
            }
            error => self.error(error),
        })
    }

    fn transactional_id(&self, checkpoint_id: u64) -> Option<String> {
        self.transactional_id_of(self.subtask, checkpoint_id)
    }

    fn transactional_id_of(&self, subtask: u32, checkpoint_id: u64) -> Option<String> {
        self.prefix()
            .map(|prefix| format!("{prefix}-{subtask}-{checkpoint_id}"))
    }

    /// Aborts whatever is open under `transactional_id` (InitProducerId does), for the
    /// ids of instances that no longer exist after a rescale.
    fn abort_lingering(&mut self, transactional_id: String) -> Result<(), StreamError> {
        let producer = self.start_producer(Some(transactional_id))?;
        let runtime = self.runtime()?;
        let closed = runtime.block_on(async {
            producer.abort_transaction().await?;
            producer.close().await
        });
        closed.map_err(|error| self.error(error))
    }

    fn ensure_producer(&mut self) -> Result<(), StreamError> {
        if self.producer.is_some() {
            return Ok(());
        }
        let transactional_id = self.transactional_id(self.next_checkpoint_id);
        self.producer = Some(self.start_producer(transactional_id)?);
        Ok(())
    }

    /// Commits the pre-committed transactions of checkpoints up to `checkpoint_id`.
    fn commit_pre_committed(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        while self
            .pre_committed
            .first()
            .is_some_and(|pre_committed| pre_committed.checkpoint_id <= checkpoint_id)
        {
            let pre_committed = self.pre_committed.remove(0);
            let runtime = self.runtime()?;
            let committed = runtime.block_on(async {
                pre_committed.producer.commit_transaction().await?;
                pre_committed.producer.close().await
            });
            committed.map_err(|error| {
                self.error(format!(
                    "committing {}: {error}",
                    pre_committed.transaction.transactional_id
                ))
            })?;
        }
        Ok(())
    }

    /// Commits a transaction a crashed run pre-committed, by its handle (module docs).
    fn commit_recovered(&mut self, handle: &TransactionHandle) -> Result<(), StreamError> {
        let bootstrap = self.bootstrap_servers.clone();
        let runtime = self.runtime()?;
        let outcome = runtime.block_on(recover_commit(bootstrap, handle.clone()));
        match outcome {
            Ok(code) if code == ErrorCode::NONE.0 => {
                tracing::info!(transactional_id = %handle.transactional_id, "committed the transaction of the restored checkpoint");
                Ok(())
            }
            Ok(code) => {
                tracing::warn!(
                    transactional_id = %handle.transactional_id,
                    error_code = code,
                    "the transaction of the restored checkpoint was already completed \
                     (committed before the crash, or aborted by transaction.timeout.ms)"
                );
                Ok(())
            }
            Err(error) => Err(self.error(format!(
                "committing recovered {}: {error}",
                handle.transactional_id
            ))),
        }
    }
}

/// EndTxn(commit) for `handle` at its coordinator; the final error code (NONE or one of
/// the "already completed" codes). Retries retriable errors until
/// `RECOVERY_COMMIT_TIMEOUT`.
async fn recover_commit(
    bootstrap: String,
    handle: TransactionHandle,
) -> Result<i16, sluice_client::Error> {
    let client = Client::connect(ClientConfig::new([bootstrap])).await?;
    let deadline = Instant::now() + RECOVERY_COMMIT_TIMEOUT;
    let id = StrBytes::from_string(handle.transactional_id.clone());
    loop {
        let coordinator = find_transaction_coordinator(&client, &id).await;
        let code = match coordinator {
            Ok(node) => {
                let response = client
                    .send(Target::Node(node), |_version| {
                        EndTxnRequest::default()
                            .with_transactional_id(TransactionalId(id.clone()))
                            .with_producer_id(ProducerId(handle.producer_id))
                            .with_producer_epoch(handle.producer_epoch)
                            .with_committed(true)
                    })
                    .await;
                match response {
                    Ok(response) => response.error_code,
                    Err(error) if Instant::now() < deadline => {
                        tracing::debug!(%error, "recovery commit: retrying");
                        -1
                    }
                    Err(error) => return Err(error),
                }
            }
            Err(error) if Instant::now() < deadline => {
                tracing::debug!(%error, "recovery commit: finding the coordinator again");
                -1
            }
            Err(error) => return Err(error),
        };
        if code == ErrorCode::NONE.0
            || [
                INVALID_PRODUCER_EPOCH,
                INVALID_TXN_STATE,
                PRODUCER_FENCED,
                TRANSACTIONAL_ID_NOT_FOUND,
            ]
            .contains(&code)
        {
            return Ok(code);
        }
        if code != -1 {
            let retriable = ErrorCode(code).is_retriable();
            if !retriable || Instant::now() >= deadline {
                ErrorCode(code).check(None)?;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn find_transaction_coordinator(
    client: &Client,
    id: &StrBytes,
) -> Result<i32, sluice_client::Error> {
    let response = client
        .send(Target::Any, |version| {
            let request =
                FindCoordinatorRequest::default().with_key_type(COORDINATOR_TYPE_TRANSACTION);
            if version >= 4 {
                request.with_coordinator_keys(vec![id.clone()])
            } else {
                request.with_key(id.clone())
            }
        })
        .await?;
    let (code, node) = match response.coordinators.first() {
        Some(coordinator) => (coordinator.error_code, coordinator.node_id.0),
        None => (response.error_code, response.node_id.0),
    };
    ErrorCode(code).check(None)?;
    if !client.brokers().contains_key(&node) {
        client.metadata(Some(&[])).await?;
    }
    Ok(node)
}

/// The producer id and epoch of `transactional_id`'s current producer.
async fn describe_transaction(
    bootstrap: String,
    transactional_id: String,
) -> Result<TransactionHandle, sluice_client::Error> {
    let client = Client::connect(ClientConfig::new([bootstrap])).await?;
    let id = StrBytes::from_string(transactional_id.clone());
    let node = find_transaction_coordinator(&client, &id).await?;
    let address = client.brokers().get(&node).cloned().ok_or_else(|| {
        sluice_client::Error::Config(format!(
            "transaction coordinator {node} is not a known broker"
        ))
    })?;
    // The client's table of implemented versions leaves DescribeTransactions out (its
    // admin does not use it), so `Client::send` refuses it: ask the coordinator directly
    // at v0, which every broker with the API serves.
    let connection = Connection::connect(&address, client.config()).await?;
    if connection
        .broker_versions(ApiKey::DescribeTransactions)
        .is_none_or(|(min, _)| min > 0)
    {
        return Err(sluice_client::Error::Config(format!(
            "broker {address} does not serve DescribeTransactions v0"
        )));
    }
    let request = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![TransactionalId(id.clone())]);
    let response = connection.send(0, &request).await?;
    let described = response.transaction_states.first().ok_or_else(|| {
        sluice_client::Error::Config(format!(
            "DescribeTransactions returned nothing for {transactional_id}"
        ))
    })?;
    ErrorCode(described.error_code).check(None)?;
    Ok(TransactionHandle {
        transactional_id,
        producer_id: described.producer_id.0,
        producer_epoch: described.producer_epoch,
    })
}

impl<T: 'static> Sink<T> for KafkaSink<T> {
    fn open(&mut self) -> Result<(), StreamError> {
        // A restart: drop the failed attempt's producers. Their open transactions are
        // aborted by the InitProducerId of the next producer with the same id (or by
        // the transaction timeout); a pre-committed one is committed by
        // `restore_checkpoint_state` if its checkpoint completed.
        self.producer = None;
        self.pre_committed.clear();
        self.deliveries.clear();
        self.next_checkpoint_id = 1;
        Ok(())
    }

    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError> {
        self.ensure_producer()?;
        let (key, payload) = (self.serializer)(&value);
        let mut record = ProducerRecord::new(self.topic.clone(), Bytes::new());
        record.value = payload.map(Bytes::from);
        if let Some(key) = key {
            record = record.with_key(Bytes::from(key));
        }
        if let Some(timestamp) = timestamp {
            record = record.with_timestamp(timestamp);
        }
        let producer = self.producer.as_ref().expect("ensured above");
        let runtime = self
            .runtime
            .as_ref()
            .expect("a producer runs on the runtime");
        let delivery = runtime
            .block_on(producer.send(record))
            .map_err(|error| connector_error(&self.name, error))?;
        if self.guarantee != DeliveryGuarantee::None {
            self.deliveries.push(delivery);
        }
        Ok(())
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        match self.guarantee.clone() {
            DeliveryGuarantee::None => Ok(()),
            DeliveryGuarantee::AtLeastOnce => self.flush_and_check(),
            DeliveryGuarantee::ExactlyOnce { .. } => {
                self.next_checkpoint_id = checkpoint_id + 1;
                let Some(producer) = self.producer.take() else {
                    return Ok(());
                };
                if self.deliveries.is_empty() {
                    // Started at restore but nothing written: an empty transaction holds
                    // no partition, so nothing to pre-commit and nothing left open.
                    let runtime = self.runtime()?;
                    return runtime
                        .block_on(producer.close())
                        .map_err(|error| self.error(error));
                }
                // Named for the checkpoint expected when it began; a checkpoint that
                // expired in between does not rename it.
                let transactional_id = producer
                    .config()
                    .transactional_id
                    .clone()
                    .expect("an exactly-once producer is transactional");
                let bootstrap = self.bootstrap_servers.clone();
                let deliveries = std::mem::take(&mut self.deliveries);
                let runtime = self.runtime()?;
                let pre_committed = runtime.block_on(async {
                    producer.flush().await?;
                    // A record that failed leaves a transaction the producer would refuse
                    // to commit, but a recovery's EndTxn would commit it without that
                    // record: fail the checkpoint instead.
                    for delivery in deliveries {
                        delivery.await?;
                    }
                    describe_transaction(bootstrap, transactional_id)
                        .await
                        .map_err(sluice_client::producer::ProducerError::from)
                });
                let transaction = pre_committed.map_err(|error| self.error(error))?;
                self.pre_committed.push(PreCommitted {
                    checkpoint_id,
                    producer,
                    transaction,
                });
                Ok(())
            }
        }
    }

    fn checkpoint_state(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        if self.prefix().is_none() {
            return Ok(None);
        }
        let state = SinkCheckpoint {
            next_checkpoint_id: self.next_checkpoint_id,
            pending: self
                .pre_committed
                .iter()
                .map(|pre_committed| pre_committed.transaction.clone())
                .collect(),
            pre_committed: None,
            subtask: self.subtask,
        };
        serde_json::to_value(&state)
            .map(Some)
            .map_err(|error| self.error(error))
    }

    fn restore_checkpoint_state(&mut self, state: &serde_json::Value) -> Result<(), StreamError> {
        if self.prefix().is_none() {
            return Ok(());
        }
        let state: SinkCheckpoint = serde_json::from_value(state.clone()).map_err(|error| {
            StreamError::Checkpoint(format!("{}: invalid sink state: {error}", self.name))
        })?;
        for handle in state.pre_committed.iter().chain(&state.pending) {
            self.commit_recovered(handle)?;
        }
        // Several states after a rescale: continue after the newest.
        self.next_checkpoint_id = self.next_checkpoint_id.max(state.next_checkpoint_id);
        if state.subtask != self.subtask {
            // Another instance's state (a rescale): abort what it may have left open
            // under its next id; nobody else will use that id.
            let lingering = self
                .transactional_id_of(state.subtask, state.next_checkpoint_id)
                .expect("exactly-once checked above");
            return self.abort_lingering(lingering);
        }
        // Abort what a crashed run may have left open under the next id at once (the
        // new producer's InitProducerId does), and keep that producer for the first
        // transaction.
        self.ensure_producer()
    }

    fn set_subtask(&mut self, subtask: u32, _parallelism: u32) {
        self.subtask = subtask;
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.commit_pre_committed(checkpoint_id)
    }

    fn finish(&mut self) -> Result<(), StreamError> {
        self.commit_pre_committed(u64::MAX)?;
        self.flush_and_check()?;
        let Some(producer) = self.producer.take() else {
            return Ok(());
        };
        let transactional = self.prefix().is_some();
        let runtime = self.runtime()?;
        let finished = runtime.block_on(async {
            if transactional {
                producer.commit_transaction().await?;
            } else {
                producer.flush().await?;
            }
            producer.close().await
        });
        finished.map_err(|error| self.error(error))
    }
}

impl<T> KafkaSink<T> {
    /// At-least-once: every record written so far is acknowledged.
    fn flush_and_check(&mut self) -> Result<(), StreamError> {
        let deliveries = std::mem::take(&mut self.deliveries);
        let Some(producer) = self.producer.as_ref() else {
            return Ok(());
        };
        let runtime = self
            .runtime
            .as_ref()
            .expect("a producer runs on the runtime");
        let flushed = runtime.block_on(async {
            producer.flush().await?;
            for delivery in deliveries {
                delivery.await?;
            }
            Ok::<_, sluice_client::producer::ProducerError>(())
        });
        flushed.map_err(|error| connector_error(&self.name, error))
    }
}
