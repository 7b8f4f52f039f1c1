//! The transaction coordinator: transactional ids, their producer ids and epochs, and
//! the two-phase commit of their transactions.
//!
//! A transactional id belongs to one partition of `__transaction_state` (the id's Java
//! hash modulo `transaction.state.log.num.partitions`), and its coordinator is that
//! partition's leader; the partition's leader epoch is the coordinator epoch that
//! markers carry (a stale coordinator's markers are fenced by the partition leaders).
//! The state machine is [`sluice_txn`]'s (I/O-free); this module loads it, persists
//! its writes and delivers its markers:
//!
//! - A state change ([`TxnWrite`]) is appended to the shard's partition with acks=all
//!   under the shard's lock (so writes keep the order the state machine decided) and
//!   the request is answered once it is committed: an answered InitProducerId,
//!   AddPartitionsToTxn or EndTxn survives the coordinator's crash and a failover.
//! - Once PrepareCommit / PrepareAbort is committed, the markers ([`MarkerJob`]) go to
//!   the leader of every partition in the transaction: appended directly when this node
//!   leads it, else with WriteTxnMarkers; retried until each is written (acks=all) or
//!   the shard is unloaded (the next coordinator resends them after its load). Then the
//!   CompleteCommit / CompleteAbort state is written.
//! - Every `transaction.abort.timed.out.transaction.cleanup.interval.ms` the shards
//!   abort transactions past their timeout and drop expired transactional ids.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use sluice_metadata::MetadataImage;
use sluice_protocol::{Compression, ErrorCode, NewRecord, RecordBatchBuilder};
use sluice_txn::coordinator::{MarkerJob, Step, TxnConfig, TxnShard, TxnWrite};

use crate::config::BrokerConfig;
use crate::coordinator::{CoordinatorRuntime, Origin, PartitionWriter};
use crate::errors;
use crate::group::{GroupCoordinator, OFFSETS_TOPIC};
use crate::image::{ImageView, MetadataPublisher};
use crate::replication::LeaderConnection;
use crate::replication::ReplicaManager;

pub use sluice_txn::records::TRANSACTION_STATE_TOPIC;

/// How often the coordinator's timer runs (the abort interval is checked on it).
const TICK: Duration = Duration::from_millis(100);
/// Pause between rounds of marker delivery to partitions that failed.
const MARKER_RETRY: Duration = Duration::from_millis(100);

/// The transactions of one `__transaction_state` partition this node leads; its
/// leader epoch is the coordinator epoch.
pub type Shard = crate::coordinator::Shard<TxnShard>;

/// The coordinator's shards, one per led partition of `__transaction_state`.
#[derive(Debug)]
pub struct TransactionCoordinator {
    node_id: i32,
    runtime: Arc<CoordinatorRuntime<TxnShard>>,
    image: ImageView,
    settings: TxnSettings,
    /// Markers to partitions this node leads are appended here.
    replication: Arc<ReplicaManager>,
    /// `__consumer_offsets` partitions apply a transaction's offsets at its marker.
    groups: Arc<GroupCoordinator>,
    /// This coordinator, for the tasks it starts.
    me: std::sync::Weak<TransactionCoordinator>,
    /// The abort scan's period (monotonic: a wall-clock jump must not stall it).
    abort_scan: sluice_storage::clock::Period,
}

/// The transaction coordinator's settings, parsed once from the broker's config (none
/// of these keys is dynamic).
#[derive(Debug, Clone)]
pub struct TxnSettings {
    /// The state machine's: `transaction.max.timeout.ms`,
    /// `transactional.id.expiration.ms`.
    pub state: TxnConfig,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_interval: Duration,
    /// `offsets.commit.timeout.ms`: how long a write waits to commit.
    pub commit_timeout: Duration,
}

impl TxnSettings {
    pub fn from_config(config: &BrokerConfig) -> TxnSettings {
        TxnSettings {
            state: TxnConfig {
                max_timeout_ms: config
                    .int_value("transaction.max.timeout.ms")
                    .clamp(1, i64::from(i32::MAX)) as i32,
                transactional_id_expiration_ms: config.int_value("transactional.id.expiration.ms"),
            },
            abort_interval: Duration::from_millis(
                config
                    .int_value("transaction.abort.timed.out.transaction.cleanup.interval.ms")
                    .max(1) as u64,
            ),
            commit_timeout: Duration::from_millis(
                config.int_value("offsets.commit.timeout.ms").max(1) as u64,
            ),
        }
    }
}

impl TransactionCoordinator {
    /// The coordinator of `node_id`, writing its records through `writer` and its
    /// local markers through `replication`.
    pub fn new(
        node_id: i32,
        settings: TxnSettings,
        image: ImageView,
        writer: Arc<dyn PartitionWriter>,
        replication: Arc<ReplicaManager>,
        groups: Arc<GroupCoordinator>,
    ) -> Arc<TransactionCoordinator> {
        Arc::new_cyclic(|me| TransactionCoordinator {
            node_id,
            runtime: Arc::new(CoordinatorRuntime::new(
                TRANSACTION_STATE_TOPIC,
                node_id,
                writer,
            )),
            image,
            settings,
            replication,
            groups,
            me: me.clone(),
            abort_scan: Default::default(),
        })
    }

    /// The settings, parsed at start.
    pub fn settings(&self) -> &TxnSettings {
        &self.settings
    }

    /// The shard holding `transactional_id`, or NOT_COORDINATOR /
    /// COORDINATOR_LOAD_IN_PROGRESS.
    pub fn shard_for(&self, transactional_id: &str) -> Result<Arc<Shard>, ErrorCode> {
        self.runtime
            .shard_for(&self.image.current(), transactional_id)
    }

    /// Every loaded shard (ListTransactions, the timer).
    pub fn loaded_shards(&self) -> Vec<Arc<Shard>> {
        self.runtime.loaded_shards()
    }

    /// Whether `shard` is still this node's shard for its partition.
    fn is_current(&self, shard: &Arc<Shard>) -> bool {
        self.runtime.is_current(shard)
    }

    /// Follows leadership of `__transaction_state`: loads the partitions this node now
    /// leads, drops those it no longer leads (or leads under a new epoch).
    pub fn on_image_change(&self, image: &MetadataImage) {
        let level = crate::features::transaction_version(image);
        for shard in self.runtime.shards() {
            shard.lock().set_transaction_version_level(level);
        }
        let changes = self.runtime.on_image_change(image, |_, epoch| {
            TxnShard::new(epoch, self.settings.state).with_transaction_version_level(level)
        });
        for shard in changes.dropped {
            tracing::info!(
                partition = shard.partition,
                "no longer the transaction coordinator of __transaction_state-{}",
                shard.partition
            );
        }
        let Some(me) = self.me.upgrade() else {
            return;
        };
        for shard in changes.added {
            let txns = me.clone();
            tokio::spawn(async move { load(txns, shard).await });
        }
    }

    /// Aborts timed-out transactions and expires idle transactional ids, every
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub fn tick(self: &Arc<Self>) {
        let now = sluice_storage::now_ms();
        if !self.abort_scan.due(self.settings.abort_interval) {
            return;
        }
        for shard in self.loaded_shards() {
            let mut state = shard.lock();
            // A new producer id is needed only when a transactions v2 fence exhausts an
            // epoch; the timer cannot wait for an allocation, so that abort is retried
            // at the next run (InitProducerId's fence allocates one).
            let writes = state.expire(now, &mut || Err(ErrorCode::COORDINATOR_NOT_AVAILABLE));
            for write in writes {
                tracing::info!(transactional_id = %write.transactional_id, "transaction timed out or id expired");
                let appended = self.append(&shard, &write);
                let txns = self.clone();
                let shard = shard.clone();
                tokio::spawn(async move {
                    finish_write(&txns, &shard, write, appended).await;
                });
            }
        }
    }
}

/// The coordinator's timer.
pub async fn run(
    txns: Arc<TransactionCoordinator>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                if *shutdown.borrow() {
                    return;
                }
            }
            _ = tokio::time::sleep(TICK) => {}
        }
        txns.tick();
    }
}

/// Kafka's mapping of a failed `__transaction_state` write to the coordinator's answer.
fn write_error(code: i16) -> i16 {
    match code {
        errors::UNKNOWN_TOPIC_OR_PARTITION
        | errors::NOT_ENOUGH_REPLICAS
        | errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        | errors::REQUEST_TIMED_OUT => errors::COORDINATOR_NOT_AVAILABLE,
        // NOT_COORDINATOR: the runtime's own answer for a shard whose epoch no longer
        // leads the partition.
        errors::NOT_LEADER_OR_FOLLOWER | errors::KAFKA_STORAGE_ERROR | errors::NOT_COORDINATOR => {
            errors::NOT_COORDINATOR
        }
        errors::NONE => errors::NONE,
        _ => errors::UNKNOWN_SERVER_ERROR,
    }
}

/// Appends a write to the shard's partition as its leader (callers hold the shard's
/// lock, so writes keep their order). Returns the partition and the offset the high
/// watermark must reach.
impl MetadataPublisher for TransactionCoordinator {
    fn publish(&self, image: &Arc<MetadataImage>) {
        self.on_image_change(image);
    }
}

impl TransactionCoordinator {
    /// Appends a write to the shard's partition as its leader (callers hold the shard's
    /// lock, so writes keep their order): the write as a one-record batch, through the
    /// coordinator runtime. Returns the partition and the offset the high watermark
    /// must reach.
    pub fn append(&self, shard: &Shard, write: &TxnWrite) -> Result<(i32, i64), ErrorCode> {
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder
            .append(&NewRecord {
                timestamp: sluice_storage::now_ms(),
                key: Some(Bytes::copy_from_slice(&write.key)),
                value: write.value.as_ref().map(|v| Bytes::copy_from_slice(v)),
                headers: Vec::new(),
            })
            .map_err(|_| ErrorCode::UNKNOWN_SERVER_ERROR)?;
        let bytes = BytesMut::from(&builder.build()[..]);
        let required = self
            .runtime
            .append(shard, bytes, Origin::Coordinator)
            .map_err(|code| ErrorCode(write_error(code.0)))?;
        Ok((shard.partition, required))
    }
}

/// Waits for an appended write to commit, tells the shard the outcome, and starts the
/// markers it calls for. Returns the code to answer the client with.
pub async fn finish_write(
    txns: &Arc<TransactionCoordinator>,
    shard: &Arc<Shard>,
    write: TxnWrite,
    appended: Result<(i32, i64), ErrorCode>,
) -> i16 {
    let code = match appended {
        Err(code) => code.0,
        Ok((partition, required)) => {
            let wait =
                txns.runtime
                    .await_committed(partition, required, txns.settings.commit_timeout);
            write_error(wait.await)
        }
    };
    let job = shard.lock().write_completed(
        &write.transactional_id,
        write.write_id,
        code == errors::NONE,
    );
    if let Some(job) = job {
        spawn_markers(txns.clone(), shard.clone(), job);
    }
    code
}

/// Starts delivering a transaction's markers in the background. (A plain function, so
/// that the futures of [`finish_write`] and [`deliver_markers`], which start each
/// other, do not contain each other.)
fn spawn_markers(txns: Arc<TransactionCoordinator>, shard: Arc<Shard>, job: MarkerJob) {
    let delivery: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> =
        Box::pin(deliver_markers(txns, shard, job));
    tokio::spawn(delivery);
}

/// Runs a state machine step: answers at once, or persists its write first. Returns
/// the result and the write's code (NONE when nothing was written).
pub async fn run_step<T>(
    txns: &Arc<TransactionCoordinator>,
    shard: &Arc<Shard>,
    step: StepWithAppend<T>,
) -> (T, i16) {
    match step {
        StepWithAppend::Now(result) => (result, errors::NONE),
        StepWithAppend::Write(write, appended, result) => {
            let code = finish_write(txns, shard, write, appended).await;
            (result, code)
        }
    }
}

/// A step whose write (if any) has been appended under the shard's lock.
pub enum StepWithAppend<T> {
    Now(T),
    Write(TxnWrite, Result<(i32, i64), ErrorCode>, T),
}

/// Calls the state machine under the shard's lock and appends its write, if any,
/// before the lock is released.
pub fn step<T>(
    txns: &TransactionCoordinator,
    shard: &Shard,
    call: impl FnOnce(&mut TxnShard) -> Step<T>,
) -> StepWithAppend<T> {
    let mut state = shard.lock();
    match call(&mut state) {
        Step::Now(result) => StepWithAppend::Now(result),
        Step::Write(write, result) => {
            let appended = txns.append(shard, &write);
            StepWithAppend::Write(write, appended, result)
        }
    }
}

/// Writes a transaction's markers to every partition in it, then its Complete state.
async fn deliver_markers(txns: Arc<TransactionCoordinator>, shard: Arc<Shard>, job: MarkerJob) {
    let mut remaining: Vec<(String, i32)> = job.partitions.clone();
    tracing::debug!(transactional_id = %job.transactional_id, commit = job.commit, partitions = remaining.len(), "writing transaction markers");
    while !remaining.is_empty() {
        if !txns.is_current(&shard) {
            tracing::info!(transactional_id = %job.transactional_id, "coordinator unloaded: markers left to the next one");
            return;
        }
        let image = txns.image.current();
        let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
        let mut done = Vec::new();
        for (topic, partition) in &remaining {
            match image.topic(topic).and_then(|t| t.partitions.get(partition)) {
                // A deleted partition needs no marker (Kafka drops it too).
                None => done.push((topic.clone(), *partition)),
                Some(p) => by_leader
                    .entry(p.leader)
                    .or_default()
                    .push((topic.clone(), *partition)),
            }
        }
        for (leader, partitions) in by_leader {
            let results = if leader == txns.node_id {
                write_markers_locally(&txns, &job, &partitions).await
            } else if leader < 0 {
                Vec::new()
            } else {
                write_markers_remotely(&txns, &image, leader, &job, &partitions).await
            };
            for ((topic, partition), code) in results {
                match code {
                    errors::NONE => done.push((topic, partition)),
                    errors::INVALID_PRODUCER_EPOCH | errors::TRANSACTION_COORDINATOR_FENCED => {
                        // A newer epoch or coordinator owns the producer: this job is
                        // stale (Kafka's marker handler gives up the same way).
                        tracing::warn!(transactional_id = %job.transactional_id, %topic, partition, code, "transaction marker fenced; giving up this transaction's markers");
                        return;
                    }
                    errors::UNKNOWN_TOPIC_OR_PARTITION => done.push((topic, partition)),
                    code => {
                        tracing::debug!(%topic, partition, code, "transaction marker not written yet; retrying")
                    }
                }
            }
        }
        remaining.retain(|tp| !done.contains(tp));
        if !remaining.is_empty() {
            tokio::time::sleep(MARKER_RETRY).await;
        }
    }
    let complete = {
        let mut state = shard.lock();
        state
            .markers_written(&job.transactional_id, job.producer_id, job.producer_epoch)
            .map(|write| {
                let appended = txns.append(&shard, &write);
                (write, appended)
            })
    };
    if let Some((write, appended)) = complete {
        let code = finish_write(&txns, &shard, write, appended).await;
        if code != errors::NONE {
            tracing::warn!(transactional_id = %job.transactional_id, code, "could not write the transaction's completion");
        }
    }
}

/// Appends a marker to partitions this node leads and waits for each to commit;
/// `__consumer_offsets` partitions then apply or drop the transaction's offsets.
pub async fn write_markers_locally(
    txns: &Arc<TransactionCoordinator>,
    job: &MarkerJob,
    partitions: &[(String, i32)],
) -> Vec<((String, i32), i16)> {
    let marker = sluice_storage::TxnMarker {
        producer_id: job.producer_id,
        producer_epoch: job.producer_epoch,
        coordinator_epoch: job.coordinator_epoch,
        commit: job.commit,
    };
    write_marker_to(txns, marker, partitions).await
}

/// Writes one marker to each of `partitions` (this node must lead them).
pub async fn write_marker_to(
    txns: &Arc<TransactionCoordinator>,
    marker: sluice_storage::TxnMarker,
    partitions: &[(String, i32)],
) -> Vec<((String, i32), i16)> {
    let mut waits = Vec::new();
    let mut results = Vec::new();
    for (topic, partition) in partitions {
        let key = (topic.clone(), *partition);
        let Some(replica) = txns.replication.replica(topic, *partition) else {
            let known = txns
                .image
                .current()
                .topic(topic)
                .is_some_and(|t| t.partitions.contains_key(partition));
            let code = if known {
                errors::NOT_LEADER_OR_FOLLOWER
            } else {
                errors::UNKNOWN_TOPIC_OR_PARTITION
            };
            results.push((key, code));
            continue;
        };
        match txns.replication.append_marker(&replica, marker) {
            Ok(required) => waits.push((key, replica, required)),
            Err(code) => results.push((key, code.0)),
        }
    }
    let timeout = txns.settings.commit_timeout;
    for (key, replica, required) in waits {
        let code = crate::append::await_committed(&replica, required, timeout).await;
        if code == errors::NONE && key.0 == OFFSETS_TOPIC {
            txns.groups
                .complete_transaction(key.1, marker.producer_id, marker.commit);
        }
        results.push((key, code));
    }
    results
}

/// Sends WriteTxnMarkers for `partitions` to broker `leader`.
async fn write_markers_remotely(
    txns: &Arc<TransactionCoordinator>,
    image: &MetadataImage,
    leader: i32,
    job: &MarkerJob,
    partitions: &[(String, i32)],
) -> Vec<((String, i32), i16)> {
    let settings = txns.replication.settings();
    let failed = |code: i16| partitions.iter().map(|tp| (tp.clone(), code)).collect();
    let Some(endpoint) = crate::endpoint::endpoint_of(image, leader, &settings.listener) else {
        return failed(errors::NOT_LEADER_OR_FOLLOWER);
    };
    let timeout = Duration::from_millis(settings.socket_timeout_ms);
    let mut connection = match LeaderConnection::connect(
        &endpoint.host,
        endpoint.port,
        timeout,
        settings.frame_max_bytes,
        format!("broker-{}-txn-markers", txns.node_id),
    )
    .await
    {
        Ok(connection) => connection,
        Err(error) => {
            tracing::debug!(leader, %error, "cannot reach a partition leader for markers");
            return failed(errors::NOT_LEADER_OR_FOLLOWER);
        }
    };
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        topics.entry(topic).or_default().push(*partition);
    }
    let request = WriteTxnMarkersRequest::default().with_markers(vec![
        WritableTxnMarker::default()
            .with_producer_id(ProducerId(job.producer_id))
            .with_producer_epoch(job.producer_epoch)
            .with_transaction_result(job.commit)
            .with_coordinator_epoch(job.coordinator_epoch)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(topic, indexes)| {
                        WritableTxnMarkerTopic::default()
                            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
                            .with_partition_indexes(indexes)
                    })
                    .collect(),
            ),
    ]);
    match connection.call(&request, 1, timeout).await {
        Ok(response) => response
            .markers
            .into_iter()
            .flat_map(|m| m.topics)
            .flat_map(|t| {
                let name = t.name.0.to_string();
                t.partitions
                    .into_iter()
                    .map(move |p| ((name.clone(), p.partition_index), p.error_code))
            })
            .collect(),
        Err(error) => {
            tracing::debug!(leader, %error, "WriteTxnMarkers failed");
            failed(errors::REQUEST_TIMED_OUT)
        }
    }
}

/// Replays a partition of `__transaction_state` into its shard once this node's
/// replica leads it, then resends the markers of transactions left half-done.
async fn load(txns: Arc<TransactionCoordinator>, shard: Arc<Shard>) {
    let started = std::time::Instant::now();
    let runtime = txns.runtime.clone();
    let level = crate::features::transaction_version(&txns.image.current());
    let state = TxnShard::new(shard.leader_epoch, txns.settings.state)
        .with_transaction_version_level(level);
    let Some(mut state) = runtime.load(&shard, state, replay_batch).await else {
        return;
    };
    let jobs = state.finish_load();
    let count = state.list().count();
    runtime.install(&shard, state);
    tracing::info!(
        partition = shard.partition,
        transactions = count,
        resent = jobs.len(),
        ms = started.elapsed().as_millis() as u64,
        "loaded transactions of __transaction_state-{}",
        shard.partition
    );
    for job in jobs {
        spawn_markers(txns.clone(), shard.clone(), job);
    }
}

/// Applies one batch of `__transaction_state`, read back at load.
fn replay_batch(state: &mut TxnShard, batch: &sluice_protocol::RecordBatch) {
    if batch.is_control() {
        return;
    }
    let Ok(records) = batch.records() else {
        tracing::warn!(
            offset = batch.base_offset(),
            "skipping an unreadable batch of __transaction_state"
        );
        return;
    };
    for record in records {
        let Ok(record) = record else {
            break;
        };
        if let Some(key) = record.key
            && let Err(error) = state.replay(&key, record.value.as_deref())
        {
            tracing::warn!(offset = batch.base_offset(), %error, "skipping an unreadable __transaction_state record");
        }
    }
}

#[cfg(test)]
mod tests {
    use sluice_txn::coordinator::InitResult;

    use super::*;
    use crate::coordinator::testing::{MemoryWriter, topic_image};

    fn image(leader_epoch: i32) -> MetadataImage {
        topic_image(
            TRANSACTION_STATE_TOPIC,
            [9; 16],
            &[(0, &[1], 1, leader_epoch)],
        )
    }

    fn config_of() -> TxnConfig {
        TxnConfig {
            max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
        }
    }

    /// A transactional id's producer id survives a failover: the write goes through the
    /// runtime to the (in-memory) log, and a new coordinator epoch replays it.
    #[tokio::test]
    async fn an_initialized_producer_id_is_replayed_by_the_next_coordinator() {
        let writer = MemoryWriter::new();
        writer.set_leader(TRANSACTION_STATE_TOPIC, 0, Some(3));
        let config = BrokerConfig::load(crate::config::EMBEDDED_SERVER_PROPERTIES, &[])
            .unwrap()
            .config;
        // The test drives the runtime itself; the coordinator's marker paths (the
        // replica manager, the group coordinator) stay unused.
        let replication =
            ReplicaManager::new(1, config.clone(), ImageView::fixed(image(3)), Vec::new());
        let groups = Arc::new(GroupCoordinator::new(
            1,
            crate::group::GroupSettings::from_config(&config),
            ImageView::fixed(image(3)),
            writer.clone(),
        ));
        let coordinator = TransactionCoordinator::new(
            1,
            TxnSettings::from_config(&config),
            ImageView::fixed(image(3)),
            writer.clone(),
            replication,
            groups,
        );
        let changes = coordinator
            .runtime
            .on_image_change(&image(3), |_, epoch| TxnShard::new(epoch, config_of()));
        let shard = changes.added[0].clone();
        let state = coordinator
            .runtime
            .load(&shard, TxnShard::new(3, config_of()), replay_batch)
            .await
            .expect("leads at epoch 3");
        coordinator.runtime.install(&shard, state);
        let step = shard
            .lock()
            .init_producer_id("tx-1", 60_000, -1, -1, 2, 1_000, &mut || Ok(4_000));
        let Step::Write(write, InitResult { producer_id, .. }) = step else {
            panic!("a new transactional id is written before it is answered");
        };
        assert_eq!(producer_id, 4_000);
        let (partition, required) = coordinator.append(&shard, &write).unwrap();
        let code = coordinator
            .runtime
            .await_committed(partition, required, Duration::from_secs(5))
            .await;
        assert_eq!(code, errors::NONE);
        assert!(
            shard
                .lock()
                .write_completed("tx-1", write.write_id, true)
                .is_none()
        );

        // Failover: this node leads again under a new epoch; the old shard is dropped
        // and the new one reads the write back.
        writer.set_leader(TRANSACTION_STATE_TOPIC, 0, Some(4));
        let changes = coordinator
            .runtime
            .on_image_change(&image(4), |_, epoch| TxnShard::new(epoch, config_of()));
        assert_eq!(changes.dropped.len(), 1);
        assert!(coordinator.shard_for_partition_is_loading(0));
        let shard = changes.added[0].clone();
        let state = coordinator
            .runtime
            .load(&shard, TxnShard::new(4, config_of()), replay_batch)
            .await
            .unwrap();
        let found = state.describe("tx-1").expect("replayed");
        assert_eq!(found.producer_id, 4_000);
        // A write planned under the old epoch is refused.
        writer.set_leader(TRANSACTION_STATE_TOPIC, 0, Some(5));
        assert_eq!(
            coordinator.append(&shard, &write).unwrap_err(),
            ErrorCode::NOT_COORDINATOR
        );
    }

    impl TransactionCoordinator {
        fn shard_for_partition_is_loading(&self, partition: i32) -> bool {
            self.runtime
                .shard(partition)
                .is_some_and(|shard| !shard.is_loaded())
        }
    }
}
