//! A real Sluice node started in-process for the Kafka connector tests, with helpers to
//! create topics, write input and read output.

#![allow(dead_code)]

#[path = "../../../sluice-broker/tests/common/mod.rs"]
mod common;

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, ClientConfig, NewTopic, TopicPartition};
use sluice_stream::{Sink, StreamError};

pub struct Broker {
    pub runtime: tokio::runtime::Runtime,
    node: Option<common::TestNode>,
    address: SocketAddr,
}

impl Broker {
    pub fn start() -> Broker {
        Self::start_with(&[])
    }

    /// A node with broker settings added to the test defaults.
    pub fn start_with(settings: &[(&str, &str)]) -> Broker {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut overrides = vec![
            ("group.initial.rebalance.delay.ms", "0"),
            ("transaction.state.log.num.partitions", "3"),
            ("offsets.topic.num.partitions", "3"),
        ];
        overrides.extend_from_slice(settings);
        let node = runtime.block_on(common::TestNode::start(&overrides));
        let address = node.address;
        Broker {
            runtime,
            node: Some(node),
            address,
        }
    }

    pub fn bootstrap(&self) -> String {
        self.address.to_string()
    }

    pub fn create_topic(&self, name: &str, partitions: i32) {
        self.runtime.block_on(async {
            let admin = Admin::connect(ClientConfig::new([self.bootstrap()]))
                .await
                .unwrap();
            let topic = NewTopic {
                name: name.to_string(),
                num_partitions: Some(partitions),
                replication_factor: Some(1),
                configs: Vec::new(),
            };
            admin.create_topics(&[topic], false).await.unwrap();
        });
    }

    /// Writes `records` ((partition, timestamp, value)) in committed transactions of
    /// `per_transaction`, and after each committed one an aborted transaction of
    /// `poison`, which read_committed readers must never see.
    pub fn produce(
        &self,
        topic: &str,
        records: &[(i32, i64, String)],
        per_transaction: usize,
        poison: &str,
    ) {
        self.runtime.block_on(async {
            let producer = Producer::connect(
                ProducerConfig::from_iter([
                    ("bootstrap.servers", self.bootstrap().as_str()),
                    ("transactional.id", "test-input"),
                    ("linger.ms", "5"),
                ])
                .unwrap(),
            )
            .await
            .unwrap();
            producer.init_transactions().await.unwrap();
            for chunk in records.chunks(per_transaction) {
                producer.begin_transaction().unwrap();
                for (partition, timestamp, value) in chunk {
                    let record = ProducerRecord::new(topic, value.clone())
                        .with_partition(*partition)
                        .with_timestamp(*timestamp);
                    drop(producer.send(record).await.unwrap());
                }
                producer.commit_transaction().await.unwrap();
                producer.begin_transaction().unwrap();
                for partition in 0..3 {
                    let record =
                        ProducerRecord::new(topic, poison.to_string()).with_partition(partition);
                    drop(producer.send(record).await.unwrap());
                }
                producer.abort_transaction().await.unwrap();
            }
            producer.close().await.unwrap();
        });
    }

    /// Every value a read_committed reader sees in `topic`, once nothing more arrives; a
    /// tombstone reads as [`TOMBSTONE`].
    pub fn read_committed(&self, topic: &str, partitions: i32) -> Vec<String> {
        self.runtime.block_on(async {
            let mut consumer = Consumer::new(
                ConsumerConfig::from_map([
                    ("bootstrap.servers", self.bootstrap().as_str()),
                    ("isolation.level", "read_committed"),
                    ("fetch.max.wait.ms", "50"),
                ])
                .unwrap(),
            )
            .await
            .unwrap();
            let assigned: Vec<TopicPartition> = (0..partitions)
                .map(|partition| TopicPartition::new(topic, partition))
                .collect();
            consumer.assign(assigned.clone()).unwrap();
            consumer.seek_to_beginning(&assigned).unwrap();
            let mut values = Vec::new();
            let mut empty_polls = 0;
            while empty_polls < 5 {
                let records = consumer.poll(Duration::from_millis(100)).await.unwrap();
                if records.is_empty() {
                    empty_polls += 1;
                }
                for record in records {
                    values.push(match record.value {
                        Some(value) => String::from_utf8(value.to_vec()).unwrap(),
                        None => TOMBSTONE.to_string(),
                    });
                }
            }
            values
        })
    }
}

/// What [`Broker::read_committed`] reads for a record without a value.
pub const TOMBSTONE: &str = "(tombstone)";

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(node) = self.node.take() {
            self.runtime.block_on(node.stop());
        }
    }
}

impl Broker {
    /// Writes `records` ((partition, timestamp, value)) with an idempotent producer, no
    /// transactions: offsets are 0, 1, 2, .. per partition.
    pub fn produce_plain(&self, topic: &str, records: &[(i32, i64, String)]) {
        self.runtime.block_on(async {
            let producer = Producer::connect(
                ProducerConfig::from_iter([
                    ("bootstrap.servers", self.bootstrap().as_str()),
                    ("linger.ms", "5"),
                ])
                .unwrap(),
            )
            .await
            .unwrap();
            for (partition, timestamp, value) in records {
                let record = ProducerRecord::new(topic, value.clone())
                    .with_partition(*partition)
                    .with_timestamp(*timestamp);
                drop(producer.send(record).await.unwrap());
            }
            producer.close().await.unwrap();
        });
    }

    /// Grows `topic` to `total` partitions.
    pub fn add_partitions(&self, topic: &str, total: i32) {
        self.runtime.block_on(async {
            let admin = Admin::connect(ClientConfig::new([self.bootstrap()]))
                .await
                .unwrap();
            let counts = BTreeMap::from([(topic.to_string(), total)]);
            let results = admin.create_partitions(&counts, false).await.unwrap();
            for (name, result) in results {
                result.unwrap_or_else(|error| panic!("create_partitions {name}: {error:?}"));
            }
        });
    }

    /// The offsets `group` committed for `partitions` (absent: none).
    pub fn committed(
        &self,
        group: &str,
        partitions: &[TopicPartition],
    ) -> BTreeMap<TopicPartition, i64> {
        self.runtime.block_on(async {
            let consumer = Consumer::new(
                ConsumerConfig::from_map([
                    ("bootstrap.servers", self.bootstrap().as_str()),
                    ("group.id", group),
                ])
                .unwrap(),
            )
            .await
            .unwrap();
            consumer
                .committed(partitions)
                .await
                .unwrap()
                .into_iter()
                .map(|(partition, offset)| (partition, offset.offset))
                .collect()
        })
    }
}

/// How long `FailingSink` takes per record, so checkpoints fall between its writes.
pub const WRITE_DELAY: Duration = Duration::from_millis(3);

#[derive(Debug, Clone, Copy)]
pub enum Failure {
    /// At the n-th write after the previous failure: a transaction half written.
    AtWrite(u32),
    /// In `notify_checkpoint_complete` of the next checkpoint with output: after the
    /// checkpoint was stored, before its transaction is committed.
    BeforeCommit,
}

/// A sink that fails on a schedule, then writes through `inner`.
pub struct FailingSink<S> {
    inner: S,
    failures: Rc<RefCell<VecDeque<Failure>>>,
    writes_since_failure: u32,
    writes_since_commit: u32,
}

impl<S> FailingSink<S> {
    pub fn new(inner: S, failures: Vec<Failure>) -> Self {
        Self {
            inner,
            failures: Rc::new(RefCell::new(failures.into())),
            writes_since_failure: 0,
            writes_since_commit: 0,
        }
    }

    /// Failures still to come (shared by clones of the schedule).
    pub fn failures_left(&self) -> Rc<RefCell<VecDeque<Failure>>> {
        self.failures.clone()
    }

    fn fail(&mut self, what: &str) -> Result<(), StreamError> {
        self.failures.borrow_mut().pop_front();
        self.writes_since_failure = 0;
        Err(StreamError::Function(format!("injected failure {what}")))
    }
}

impl<T: 'static, S: Sink<T>> Sink<T> for FailingSink<S> {
    fn set_subtask(&mut self, subtask: u32, parallelism: u32) {
        self.inner.set_subtask(subtask, parallelism);
    }
    fn open(&mut self) -> Result<(), StreamError> {
        self.writes_since_commit = 0;
        self.inner.open()
    }
    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError> {
        self.writes_since_failure += 1;
        self.writes_since_commit += 1;
        std::thread::sleep(WRITE_DELAY);
        let next = self.failures.borrow().front().copied();
        if let Some(Failure::AtWrite(n)) = next
            && self.writes_since_failure >= n
        {
            return self.fail("in a write");
        }
        self.inner.write(value, timestamp)
    }
    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.inner.snapshot_state(checkpoint_id)
    }
    fn checkpoint_state(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        self.inner.checkpoint_state()
    }
    fn restore_checkpoint_state(&mut self, state: &serde_json::Value) -> Result<(), StreamError> {
        self.inner.restore_checkpoint_state(state)
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let next = self.failures.borrow().front().copied();
        if matches!(next, Some(Failure::BeforeCommit)) && self.writes_since_commit > 0 {
            return self.fail("before a commit");
        }
        self.writes_since_commit = 0;
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> Result<(), StreamError> {
        self.inner.finish()
    }
}

/// A sink that fails one write, once, after `after` writes over all its clones and once
/// a checkpoint completed (so the restart restores one), then writes through: the
/// failure injection of parallel jobs, whose every task gets a clone.
pub struct FailOnceAfterCheckpoint<S> {
    pub inner: S,
    pub after: u64,
    pub writes: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub completed: std::sync::Arc<std::sync::atomic::AtomicU64>,
    pub failed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<S> FailOnceAfterCheckpoint<S> {
    /// Shares `counters_of`'s counters (a clone for another task) around `inner`.
    pub fn sharing<O>(inner: S, counters_of: &FailOnceAfterCheckpoint<O>) -> Self {
        Self {
            inner,
            after: counters_of.after,
            writes: counters_of.writes.clone(),
            completed: counters_of.completed.clone(),
            failed: counters_of.failed.clone(),
        }
    }
}

impl<T: 'static, S: Sink<T>> Sink<T> for FailOnceAfterCheckpoint<S> {
    fn set_subtask(&mut self, subtask: u32, parallelism: u32) {
        self.inner.set_subtask(subtask, parallelism);
    }
    fn open(&mut self) -> Result<(), StreamError> {
        self.inner.open()
    }
    fn write(&mut self, value: T, timestamp: Option<i64>) -> Result<(), StreamError> {
        use std::sync::atomic::Ordering;
        if self.writes.fetch_add(1, Ordering::SeqCst) >= self.after
            && self.completed.load(Ordering::SeqCst) > 0
            && !self.failed.swap(true, Ordering::SeqCst)
        {
            return Err(StreamError::Function("injected failure".into()));
        }
        self.inner.write(value, timestamp)
    }
    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.inner.snapshot_state(checkpoint_id)
    }
    fn checkpoint_state(&mut self) -> Result<Option<serde_json::Value>, StreamError> {
        self.inner.checkpoint_state()
    }
    fn restore_checkpoint_state(&mut self, state: &serde_json::Value) -> Result<(), StreamError> {
        self.inner.restore_checkpoint_state(state)
    }
    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        self.completed
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.notify_checkpoint_complete(checkpoint_id)
    }
    fn finish(&mut self) -> Result<(), StreamError> {
        self.inner.finish()
    }
}
