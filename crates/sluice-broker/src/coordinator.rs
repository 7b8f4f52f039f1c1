//! The coordinator runtime under the group and transaction coordinators (Kafka's
//! `coordinator-common` `CoordinatorRuntime`): what both do with their internal topic
//! (`__consumer_offsets`, `__transaction_state`), once.
//!
//! - **Shards by leadership.** A key (group id, transactional id) belongs to partition
//!   `abs(javaHash(key)) % partitions` of the topic, and the partition's leader is its
//!   coordinator. [`CoordinatorRuntime::on_image_change`] keeps one [`Shard`] per
//!   partition this node leads (at its leader epoch): new ones are loaded, those it no
//!   longer leads (or leads under a new epoch) are dropped.
//! - **Load.** [`CoordinatorRuntime::load`] waits until this node's replica leads the
//!   partition at the shard's epoch — woken by the [`PartitionWriter`]'s role-change
//!   signal, not by polling — then replays the partition from its log start to its end
//!   into the shard's state. Until [`CoordinatorRuntime::install`] marks it loaded,
//!   requests get COORDINATOR_LOAD_IN_PROGRESS; for a partition without a shard here,
//!   NOT_COORDINATOR.
//! - **Write, then apply.** A coordinator appends its records through
//!   [`CoordinatorRuntime::append`] under the shard's lock (so records keep the order
//!   the state machine decided), checked against the shard's leader epoch, and answers
//!   its client once [`CoordinatorRuntime::await_committed`] says the records are
//!   committed (acks=all: in every in-sync replica's log).
//!
//! The runtime reaches the log only through [`PartitionWriter`]: the broker's
//! `ReplicaManager` on a node, an in-memory log in the tests below.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use sluice_metadata::MetadataImage;
use sluice_protocol::{ErrorCode, RecordBatch};
use tokio::sync::watch;

/// How long a shard waits for its replica to lead the partition it was given.
pub const LEADERSHIP_WAIT: Duration = Duration::from_secs(30);

/// A wait for a write to commit: NONE, or Kafka's error code for the partition.
pub type CommitWait = Pin<Box<dyn Future<Output = i16> + Send>>;

/// Who wrote a coordinator's batch, for the log's producer-state checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A plain batch of the coordinator's records.
    Coordinator,
    /// A transactional batch the coordinator writes for a producer (TxnOffsetCommit):
    /// the log skips sequence checks (Kafka's `AppendOrigin.COORDINATOR`) and still
    /// tracks the transaction.
    CoordinatorTransactional,
}

/// How a coordinator reaches the log of its topic's partitions on this node.
pub trait PartitionWriter: Send + Sync + 'static {
    /// Whether this node's replica of `topic`-`partition` leads it at `leader_epoch`.
    fn leads(&self, topic: &str, partition: i32, leader_epoch: i32) -> bool;

    /// A signal that changes after replicas on this node change role.
    fn role_changes(&self) -> watch::Receiver<u64>;

    /// Appends `batch` as the partition's leader at `leader_epoch` (acks=all). Returns
    /// the offset the high watermark must reach for the batch to be committed, or
    /// Kafka's error code for the partition.
    fn append(
        &self,
        topic: &str,
        partition: i32,
        leader_epoch: i32,
        batch: BytesMut,
        origin: Origin,
    ) -> Result<i64, ErrorCode>;

    /// Resolves once the high watermark reaches `required_offset` (NONE), or with the
    /// error code (REQUEST_TIMED_OUT after `timeout`).
    fn await_committed(
        &self,
        topic: &str,
        partition: i32,
        required_offset: i64,
        timeout: Duration,
    ) -> CommitWait;

    /// Reads the partition from its log start to its end, calling `apply` with every
    /// batch once, in offset order.
    fn replay(
        &self,
        topic: &str,
        partition: i32,
        apply: &mut dyn FnMut(&RecordBatch),
    ) -> Result<(), String>;
}

fn guard<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The state of one partition this node leads.
#[derive(Debug)]
pub struct Shard<S> {
    pub partition: i32,
    /// The partition's leader epoch when the shard was made (the coordinator epoch).
    pub leader_epoch: i32,
    loaded: AtomicBool,
    state: Mutex<S>,
}

impl<S> Shard<S> {
    /// The shard's state, locked (never across an `.await`).
    pub fn lock(&self) -> MutexGuard<'_, S> {
        guard(&self.state)
    }

    pub fn is_loaded(&self) -> bool {
        self.loaded.load(Ordering::Acquire)
    }
}

/// What changed in the shards after a metadata image.
#[derive(Debug)]
pub struct ShardChanges<S> {
    /// Shards no longer this node's (their state answers NOT_COORDINATOR from now on).
    pub dropped: Vec<Arc<Shard<S>>>,
    /// New shards, to be loaded ([`CoordinatorRuntime::load`]).
    pub added: Vec<Arc<Shard<S>>>,
}

/// The shards of one internal topic on this node, and its writer.
pub struct CoordinatorRuntime<S> {
    topic: &'static str,
    node_id: i32,
    writer: Arc<dyn PartitionWriter>,
    shards: Mutex<HashMap<i32, Arc<Shard<S>>>>,
}

impl<S> std::fmt::Debug for CoordinatorRuntime<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorRuntime")
            .field("topic", &self.topic)
            .field("node_id", &self.node_id)
            .finish_non_exhaustive()
    }
}

/// The partitions of `topic` that `node_id` leads, with their leader epochs.
pub fn led_partitions(image: &MetadataImage, topic: &str, node_id: i32) -> HashMap<i32, i32> {
    image
        .topic(topic)
        .map(|t| {
            t.partitions
                .iter()
                .filter(|(_, p)| p.leader == node_id)
                .map(|(index, p)| (*index, p.leader_epoch))
                .collect()
        })
        .unwrap_or_default()
}

/// The partition of `topic` a coordinator key (a group id, a transactional id) belongs
/// to: Kafka's `abs(javaHash(key)) % partitions`. None while the topic does not exist.
pub fn partition_of(image: &MetadataImage, topic: &str, key: &str) -> Option<i32> {
    let partitions = image.topic(topic).map_or(0, |t| t.partitions.len() as i32);
    (partitions > 0).then(|| sluice_group::records::partition_for(key, partitions))
}

impl<S: Send + 'static> CoordinatorRuntime<S> {
    pub fn new(
        topic: &'static str,
        node_id: i32,
        writer: Arc<dyn PartitionWriter>,
    ) -> CoordinatorRuntime<S> {
        CoordinatorRuntime {
            topic,
            node_id,
            writer,
            shards: Mutex::new(HashMap::new()),
        }
    }

    pub fn topic(&self) -> &'static str {
        self.topic
    }

    /// The shard holding `key`, or why this node cannot serve it: NOT_COORDINATOR
    /// (another node leads its partition, or the topic does not exist yet) or
    /// COORDINATOR_LOAD_IN_PROGRESS.
    pub fn shard_for(&self, image: &MetadataImage, key: &str) -> Result<Arc<Shard<S>>, ErrorCode> {
        let partition = partition_of(image, self.topic, key).ok_or(ErrorCode::NOT_COORDINATOR)?;
        let shard = self.shard(partition).ok_or(ErrorCode::NOT_COORDINATOR)?;
        if !shard.is_loaded() {
            return Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
        }
        Ok(shard)
    }

    /// The shard of `partition`, loaded or not.
    pub fn shard(&self, partition: i32) -> Option<Arc<Shard<S>>> {
        guard(&self.shards).get(&partition).cloned()
    }

    /// Every loaded shard.
    pub fn loaded_shards(&self) -> Vec<Arc<Shard<S>>> {
        guard(&self.shards)
            .values()
            .filter(|s| s.is_loaded())
            .cloned()
            .collect()
    }

    /// Every shard, loaded or not.
    pub fn shards(&self) -> Vec<Arc<Shard<S>>> {
        guard(&self.shards).values().cloned().collect()
    }

    /// Whether `shard` is still this node's shard for its partition.
    pub fn is_current(&self, shard: &Arc<Shard<S>>) -> bool {
        guard(&self.shards)
            .get(&shard.partition)
            .is_some_and(|s| Arc::ptr_eq(s, shard))
    }

    /// Follows leadership of the topic in `image`: drops the shards of partitions this
    /// node no longer leads at their epoch and makes one (with `new_state`) for each
    /// partition it now leads. The caller loads the added shards.
    pub fn on_image_change(
        &self,
        image: &MetadataImage,
        mut new_state: impl FnMut(i32, i32) -> S,
    ) -> ShardChanges<S> {
        let led = led_partitions(image, self.topic, self.node_id);
        let mut shards = guard(&self.shards);
        let gone: Vec<i32> = shards
            .iter()
            .filter(|(p, s)| led.get(p) != Some(&s.leader_epoch))
            .map(|(p, _)| *p)
            .collect();
        let dropped = gone
            .into_iter()
            .filter_map(|partition| shards.remove(&partition))
            .collect();
        let mut added = Vec::new();
        for (partition, epoch) in led {
            if shards.contains_key(&partition) {
                continue;
            }
            let shard = Arc::new(Shard {
                partition,
                leader_epoch: epoch,
                loaded: AtomicBool::new(false),
                state: Mutex::new(new_state(partition, epoch)),
            });
            shards.insert(partition, shard.clone());
            added.push(shard);
        }
        ShardChanges { dropped, added }
    }

    /// Waits until this node's replica leads the shard's partition at the shard's
    /// epoch (the image is applied before the replica's role changes), while the shard
    /// is still current. False when it stops being current, or after `wait`.
    pub async fn await_leadership(&self, shard: &Arc<Shard<S>>, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        // Subscribed before the check, so a change after it is not missed.
        let mut roles = self.writer.role_changes();
        loop {
            if !self.is_current(shard) {
                return false;
            }
            if self
                .writer
                .leads(self.topic, shard.partition, shard.leader_epoch)
            {
                return true;
            }
            match tokio::time::timeout_at(deadline, roles.changed()).await {
                Ok(Ok(())) => {}
                // The writer is gone (the node stops) or the time is up.
                Ok(Err(_)) | Err(_) => {
                    tracing::warn!(
                        topic = self.topic,
                        partition = shard.partition,
                        "gave up loading a coordinator partition: the replica did not become leader"
                    );
                    return false;
                }
            }
        }
    }

    /// Loads a shard: waits for leadership, then replays the partition into `state`
    /// with `replay` (on a blocking thread: it reads the log). None when the shard is
    /// no longer current or the log could not be read; the caller then drops the load.
    pub async fn load<R>(self: &Arc<Self>, shard: &Arc<Shard<S>>, state: S, replay: R) -> Option<S>
    where
        R: FnMut(&mut S, &RecordBatch) + Send + 'static,
    {
        if !self.await_leadership(shard, LEADERSHIP_WAIT).await {
            return None;
        }
        let writer = self.writer.clone();
        let (topic, partition) = (self.topic, shard.partition);
        let mut replay = replay;
        let loaded = tokio::task::spawn_blocking(move || {
            let mut state = state;
            writer
                .replay(topic, partition, &mut |batch| replay(&mut state, batch))
                .map(|()| state)
        })
        .await;
        match loaded {
            Ok(Ok(state)) => Some(state),
            Ok(Err(error)) => {
                tracing::error!(topic, partition, %error, "could not load a coordinator partition");
                None
            }
            Err(error) => {
                tracing::error!(topic, partition, %error, "coordinator load task failed");
                None
            }
        }
    }

    /// Puts a loaded state in its shard and opens the shard to requests.
    pub fn install(&self, shard: &Shard<S>, state: S) {
        *shard.lock() = state;
        shard.loaded.store(true, Ordering::Release);
    }

    /// Appends `batch` to the shard's partition as its leader (callers hold the shard's
    /// lock, so writes keep their order). NOT_COORDINATOR when this node's replica no
    /// longer leads at the shard's epoch; otherwise the writer's answer.
    pub fn append(
        &self,
        shard: &Shard<S>,
        batch: BytesMut,
        origin: Origin,
    ) -> Result<i64, ErrorCode> {
        if !self
            .writer
            .leads(self.topic, shard.partition, shard.leader_epoch)
        {
            return Err(ErrorCode::NOT_COORDINATOR);
        }
        self.writer.append(
            self.topic,
            shard.partition,
            shard.leader_epoch,
            batch,
            origin,
        )
    }

    /// Waits until an append to `partition` is committed: NONE, or the code.
    pub fn await_committed(
        &self,
        partition: i32,
        required_offset: i64,
        timeout: Duration,
    ) -> CommitWait {
        self.writer
            .await_committed(self.topic, partition, required_offset, timeout)
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! An in-memory [`PartitionWriter`] for coordinator tests: leadership set by the
    //! test, batches kept in a vector per partition, the high watermark moved by hand.

    use std::collections::HashMap;
    use std::sync::Mutex;

    use crate::errors;

    use super::*;

    /// An image with one topic: `name` with id `topic_id` and its `partitions` as
    /// (index, replicas, leader, leader epoch), the ISR being every replica.
    pub fn topic_image(
        name: &str,
        topic_id: [u8; 16],
        partitions: &[(i32, &[i32], i32, i32)],
    ) -> MetadataImage {
        use sluice_metadata::{MetadataRecord, PartitionRecord, TopicRecord};
        let mut image = MetadataImage::default();
        image
            .apply(&MetadataRecord::Topic(TopicRecord {
                name: name.into(),
                topic_id,
            }))
            .expect("a new topic applies");
        for &(index, replicas, leader, leader_epoch) in partitions {
            let mut partition = PartitionRecord::new_partition(
                topic_id,
                index,
                replicas.to_vec(),
                vec![[0; 16]; replicas.len()],
            );
            partition.leader = leader;
            partition.leader_epoch = leader_epoch;
            image
                .apply(&MetadataRecord::Partition(partition))
                .expect("a partition of the topic applies");
        }
        image
    }

    /// One uncompressed batch of records with key `k` and `values`, stamped now.
    pub fn batch(values: &[&str]) -> BytesMut {
        use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};
        let mut builder = RecordBatchBuilder::new(Compression::None);
        for value in values {
            builder
                .append(&NewRecord {
                    timestamp: sluice_storage::now_ms(),
                    key: Some(bytes::Bytes::from_static(b"k")),
                    value: Some(bytes::Bytes::copy_from_slice(value.as_bytes())),
                    headers: Vec::new(),
                })
                .expect("a small record fits a batch");
        }
        BytesMut::from(&builder.build()[..])
    }

    #[derive(Default)]
    struct Log {
        batches: Vec<bytes::Bytes>,
        end_offset: i64,
        high_watermark: i64,
    }

    type Logs = Arc<Mutex<HashMap<(String, i32), Log>>>;

    /// The in-memory writer.
    pub struct MemoryWriter {
        leaders: Mutex<HashMap<(String, i32), i32>>,
        logs: Logs,
        roles: watch::Sender<u64>,
        high_watermarks: watch::Sender<u64>,
        /// Commit every append at once (a sole in-sync replica).
        pub auto_commit: AtomicBool,
    }

    fn high_watermark(logs: &Logs, topic: &str, partition: i32) -> i64 {
        guard(logs)
            .get(&(topic.to_string(), partition))
            .map_or(0, |l| l.high_watermark)
    }

    impl MemoryWriter {
        pub fn new() -> Arc<MemoryWriter> {
            Arc::new(MemoryWriter {
                leaders: Mutex::default(),
                logs: Logs::default(),
                roles: watch::Sender::new(0),
                high_watermarks: watch::Sender::new(0),
                auto_commit: AtomicBool::new(true),
            })
        }

        /// This node leads `topic`-`partition` at `epoch` from now on (None: it follows).
        pub fn set_leader(&self, topic: &str, partition: i32, epoch: Option<i32>) {
            let mut leaders = guard(&self.leaders);
            match epoch {
                Some(epoch) => leaders.insert((topic.to_string(), partition), epoch),
                None => leaders.remove(&(topic.to_string(), partition)),
            };
            drop(leaders);
            self.roles.send_modify(|n| *n += 1);
        }

        /// The high watermark of a partition reaches its log end.
        pub fn commit_all(&self, topic: &str, partition: i32) {
            if let Some(log) = guard(&self.logs).get_mut(&(topic.to_string(), partition)) {
                log.high_watermark = log.end_offset;
            }
            self.high_watermarks.send_modify(|n| *n += 1);
        }

        /// The batches appended to a partition so far.
        pub fn batches(&self, topic: &str, partition: i32) -> Vec<bytes::Bytes> {
            guard(&self.logs)
                .get(&(topic.to_string(), partition))
                .map(|l| l.batches.clone())
                .unwrap_or_default()
        }
    }

    impl PartitionWriter for MemoryWriter {
        fn leads(&self, topic: &str, partition: i32, leader_epoch: i32) -> bool {
            guard(&self.leaders).get(&(topic.to_string(), partition)) == Some(&leader_epoch)
        }

        fn role_changes(&self) -> watch::Receiver<u64> {
            self.roles.subscribe()
        }

        fn append(
            &self,
            topic: &str,
            partition: i32,
            leader_epoch: i32,
            mut batch: BytesMut,
            _origin: Origin,
        ) -> Result<i64, ErrorCode> {
            if !self.leads(topic, partition, leader_epoch) {
                return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
            }
            let mut logs = guard(&self.logs);
            let log = logs.entry((topic.to_string(), partition)).or_default();
            let records = RecordBatch::new(batch.clone().freeze())
                .map_err(|_| ErrorCode::CORRUPT_MESSAGE)?
                .record_count();
            sluice_protocol::record_batch::set_base_offset(&mut batch, log.end_offset);
            log.end_offset += i64::from(records);
            log.batches.push(batch.freeze());
            if self.auto_commit.load(Ordering::Acquire) {
                log.high_watermark = log.end_offset;
            }
            Ok(log.end_offset)
        }

        fn await_committed(
            &self,
            topic: &str,
            partition: i32,
            required_offset: i64,
            timeout: Duration,
        ) -> CommitWait {
            let mut changes = self.high_watermarks.subscribe();
            let logs = self.logs.clone();
            let topic = topic.to_string();
            Box::pin(async move {
                let deadline = tokio::time::Instant::now() + timeout;
                loop {
                    if high_watermark(&logs, &topic, partition) >= required_offset {
                        return errors::NONE;
                    }
                    match tokio::time::timeout_at(deadline, changes.changed()).await {
                        Err(_) => return errors::REQUEST_TIMED_OUT,
                        Ok(Err(_)) => return errors::NOT_LEADER_OR_FOLLOWER,
                        Ok(Ok(())) => {}
                    }
                }
            })
        }

        fn replay(
            &self,
            topic: &str,
            partition: i32,
            apply: &mut dyn FnMut(&RecordBatch),
        ) -> Result<(), String> {
            for bytes in self.batches(topic, partition) {
                let batch = RecordBatch::new(bytes).map_err(|e| e.to_string())?;
                apply(&batch);
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{MemoryWriter, batch, topic_image};
    use super::*;
    use crate::errors;

    const TOPIC: &str = "__consumer_offsets";

    /// `__consumer_offsets` with two partitions: node 1 leads partition 0 at
    /// `epoch`, node 2 leads partition 1.
    fn image(epoch: i32) -> MetadataImage {
        topic_image(
            TOPIC,
            [3; 16],
            &[(0, &[1, 2], 1, epoch), (1, &[1, 2], 2, 0)],
        )
    }

    /// A key whose partition is `partition`.
    fn key_of(image: &MetadataImage, partition: i32) -> String {
        (0..)
            .map(|i| format!("group-{i}"))
            .find(|key| partition_of(image, TOPIC, key) == Some(partition))
            .unwrap()
    }

    fn values(state: &mut Vec<String>, batch: &RecordBatch) {
        for record in batch.records().unwrap() {
            let value = record.unwrap().value.unwrap();
            state.push(String::from_utf8(value.to_vec()).unwrap());
        }
    }

    #[tokio::test]
    async fn a_shard_loads_once_its_replica_leads_and_then_serves() {
        let writer = MemoryWriter::new();
        // What an earlier leader (epoch 2) wrote.
        writer.set_leader(TOPIC, 0, Some(2));
        writer
            .append(TOPIC, 0, 2, batch(&["a", "b"]), Origin::Coordinator)
            .unwrap();
        writer
            .append(TOPIC, 0, 2, batch(&["c"]), Origin::Coordinator)
            .unwrap();
        writer.set_leader(TOPIC, 0, None);
        let runtime = Arc::new(CoordinatorRuntime::<Vec<String>>::new(
            TOPIC,
            1,
            writer.clone(),
        ));
        let image = image(3);
        let changes = runtime.on_image_change(&image, |_, _| Vec::new());
        assert_eq!(changes.added.len(), 1, "only partition 0 is led here");
        assert!(changes.dropped.is_empty());
        let shard = changes.added[0].clone();
        assert_eq!((shard.partition, shard.leader_epoch), (0, 3));
        let here = key_of(&image, 0);
        let elsewhere = key_of(&image, 1);
        assert_eq!(
            runtime.shard_for(&image, &here).unwrap_err(),
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        );
        assert_eq!(
            runtime.shard_for(&image, &elsewhere).unwrap_err(),
            ErrorCode::NOT_COORDINATOR
        );

        // The load waits for the replica's role change, not for a timer.
        let load = tokio::spawn({
            let runtime = runtime.clone();
            let shard = shard.clone();
            async move { runtime.load(&shard, Vec::new(), values).await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !load.is_finished(),
            "loaded before this node led the partition"
        );
        writer.set_leader(TOPIC, 0, Some(3));
        let state = tokio::time::timeout(Duration::from_secs(5), load)
            .await
            .expect("woken by the role change")
            .unwrap()
            .expect("loaded");
        assert_eq!(state, ["a", "b", "c"]);
        runtime.install(&shard, state);
        let served = runtime.shard_for(&image, &here).unwrap();
        assert!(Arc::ptr_eq(&served, &shard));
        assert_eq!(runtime.loaded_shards().len(), 1);
    }

    #[tokio::test]
    async fn a_load_stops_when_its_shard_is_replaced() {
        let writer = MemoryWriter::new();
        let runtime = Arc::new(CoordinatorRuntime::<Vec<String>>::new(
            TOPIC,
            1,
            writer.clone(),
        ));
        let first = runtime.on_image_change(&image(3), |_, _| Vec::new()).added[0].clone();
        let load = tokio::spawn({
            let runtime = runtime.clone();
            let first = first.clone();
            async move { runtime.load(&first, Vec::new(), values).await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        // A newer leader epoch replaces the shard before the replica led at epoch 3.
        let changes = runtime.on_image_change(&image(4), |_, _| Vec::new());
        assert!(Arc::ptr_eq(&changes.dropped[0], &first));
        assert!(!runtime.is_current(&first));
        writer.set_leader(TOPIC, 0, Some(4));
        let loaded = tokio::time::timeout(Duration::from_secs(5), load)
            .await
            .unwrap()
            .unwrap();
        assert!(loaded.is_none(), "a replaced shard must not load");
    }

    #[tokio::test]
    async fn writes_are_fenced_by_the_leader_epoch_and_answered_once_committed() {
        let writer = MemoryWriter::new();
        writer.auto_commit.store(false, Ordering::Release);
        writer.set_leader(TOPIC, 0, Some(3));
        let runtime = Arc::new(CoordinatorRuntime::<Vec<String>>::new(
            TOPIC,
            1,
            writer.clone(),
        ));
        let shard = runtime.on_image_change(&image(3), |_, _| Vec::new()).added[0].clone();
        runtime.install(&shard, Vec::new());
        let required = runtime
            .append(&shard, batch(&["x", "y"]), Origin::Coordinator)
            .unwrap();
        assert_eq!(required, 2);
        assert_eq!(
            runtime
                .await_committed(0, required, Duration::from_millis(30))
                .await,
            errors::REQUEST_TIMED_OUT,
            "not committed until the high watermark passes it"
        );
        let wait = tokio::spawn(runtime.await_committed(0, required, Duration::from_secs(5)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!wait.is_finished());
        writer.commit_all(TOPIC, 0);
        assert_eq!(wait.await.unwrap(), errors::NONE);
        // Another leader epoch: the shard's writes are refused, nothing is appended.
        writer.set_leader(TOPIC, 0, Some(4));
        assert_eq!(
            runtime
                .append(&shard, batch(&["z"]), Origin::Coordinator)
                .unwrap_err(),
            ErrorCode::NOT_COORDINATOR
        );
        assert_eq!(writer.batches(TOPIC, 0).len(), 1);
    }
}
