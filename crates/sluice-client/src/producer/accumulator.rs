//! The record accumulator: per-partition queues of batches being filled, waiting to be
//! sent, in flight or waiting to be retried, bounded by `buffer.memory`.
//!
//! Cost per record (the hot path, under one mutex): a hash lookup of the topic, an index
//! into its partitions, and `RecordBatchBuilder::append` encoding the record straight
//! into the batch's buffer (amortized growth, no allocation per record); no per-record
//! channel: every record of a batch shares the batch's [`Completion`], and a record's
//! [`DeliveryFuture`] is that `Arc` plus its offset delta. Compression happens once per
//! batch when the sender first takes it.
//!
//! A batch keeps its builder until it is acknowledged, so an idempotent producer can
//! rebuild it under a new epoch and sequence after an epoch bump; otherwise the bytes
//! built for the first attempt are sent again unchanged.

use std::collections::{HashMap, VecDeque};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};
use tokio::sync::Notify;

use super::ProducerError;
use super::partitioner::SmallRandom;

/// A batch's v2 header and the records' length prefix, beyond the records' bytes.
pub(crate) const BATCH_OVERHEAD_BYTES: usize = 61;

/// Where a record landed, once its batch was acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMetadata {
    pub partition: i32,
    /// -1 when unknown (a batch the broker recognised as a duplicate of an earlier send).
    pub offset: i64,
    /// The record's timestamp, or the broker's append time for LogAppendTime topics.
    pub timestamp: i64,
}

/// The outcome of one batch, shared by its records.
#[derive(Debug, Default)]
pub(crate) struct Completion {
    /// (base offset, log append time or -1).
    result: OnceLock<Result<(i64, i64), ProducerError>>,
    done: Notify,
}

impl Completion {
    pub(crate) fn complete(&self, result: Result<(i64, i64), ProducerError>) {
        if self.result.set(result).is_ok() {
            self.done.notify_waiters();
        }
    }
}

/// A record's delivery: await it (or call [`DeliveryFuture::wait`]) for its partition,
/// offset and timestamp, or the error that ended its batch.
#[derive(Debug)]
pub struct DeliveryFuture {
    completion: Arc<Completion>,
    partition: i32,
    offset_delta: i32,
    timestamp: i64,
}

impl DeliveryFuture {
    /// The partition the record was appended to.
    pub fn partition(&self) -> i32 {
        self.partition
    }

    /// The outcome if it is already known.
    pub fn try_result(&self) -> Option<Result<RecordMetadata, ProducerError>> {
        self.completion
            .result
            .get()
            .map(|result| self.metadata(result))
    }

    /// Waits for the record's batch to be acknowledged or to fail.
    pub async fn wait(self) -> Result<RecordMetadata, ProducerError> {
        loop {
            let notified = self.completion.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(result) = self.completion.result.get() {
                return self.metadata(result);
            }
            notified.await;
        }
    }

    fn metadata(
        &self,
        result: &Result<(i64, i64), ProducerError>,
    ) -> Result<RecordMetadata, ProducerError> {
        let (base_offset, log_append_time) = result.clone()?;
        Ok(RecordMetadata {
            partition: self.partition,
            offset: if base_offset < 0 {
                -1
            } else {
                base_offset + i64::from(self.offset_delta)
            },
            timestamp: if log_append_time >= 0 {
                log_append_time
            } else {
                self.timestamp
            },
        })
    }
}

impl IntoFuture for DeliveryFuture {
    type Output = Result<RecordMetadata, ProducerError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.wait())
    }
}

/// Where a batch is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchState {
    /// Taking records (the last batch of its partition, not full yet).
    Open,
    /// Full or lingered long enough; waiting for the sender.
    Closed,
    InFlight,
    /// Failed with a retriable error; may go again after this instant.
    Retry(Instant),
}

pub(crate) struct ProducerBatch {
    pub(crate) id: u64,
    pub(crate) builder: RecordBatchBuilder,
    pub(crate) state: BatchState,
    pub(crate) created: Instant,
    /// `buffer.memory` bytes this batch holds, given back when it completes.
    pub(crate) memory_bytes: usize,
    pub(crate) completion: Arc<Completion>,
    pub(crate) attempts: u32,
    /// (producer id, epoch, base sequence) once an idempotent producer assigned them.
    pub(crate) sequence: Option<(i64, i16, i32)>,
    /// The bytes sent, built at the first send (and again after a new sequence).
    pub(crate) built: Option<Bytes>,
}

impl ProducerBatch {
    pub(crate) fn size_bytes(&self) -> usize {
        BATCH_OVERHEAD_BYTES + self.builder.records_size_bytes()
    }

    pub(crate) fn record_count(&self) -> i32 {
        self.builder.record_count()
    }

    /// Sets producer id, epoch and base sequence (dropping bytes built with others).
    pub(crate) fn assign_sequence(
        &mut self,
        producer_id: i64,
        epoch: i16,
        sequence: i32,
        transactional: bool,
    ) {
        let builder = std::mem::replace(
            &mut self.builder,
            RecordBatchBuilder::new(Compression::None),
        );
        self.builder = builder
            .producer(producer_id, epoch, sequence)
            .transactional(transactional);
        self.sequence = Some((producer_id, epoch, sequence));
        self.built = None;
    }

    /// The batch's bytes, building (and compressing) them on first use.
    pub(crate) fn bytes(&mut self) -> Bytes {
        self.built
            .get_or_insert_with(|| self.builder.build())
            .clone()
    }
}

/// One partition's batches, oldest first.
#[derive(Default)]
pub(crate) struct PartitionQueue {
    pub(crate) batches: VecDeque<ProducerBatch>,
    pub(crate) in_flight: usize,
    /// The next sequence an idempotent producer gives this partition.
    pub(crate) next_sequence: i32,
    /// The last sequence the broker acknowledged (-1: none).
    pub(crate) last_acked_sequence: i32,
    /// An idempotent batch failed retriably: resend in order, one at a time, until the
    /// retried batches are acknowledged (the Java client's rule).
    pub(crate) retrying: bool,
}

/// A topic's partitions and its sticky partition.
#[derive(Default)]
pub(crate) struct TopicQueues {
    pub(crate) partitions: Vec<PartitionQueue>,
    sticky_partition: Option<i32>,
    sticky_bytes: usize,
}

pub(crate) struct Accumulator {
    pub(crate) topics: HashMap<String, TopicQueues>,
    next_batch_id: u64,
    /// Batches not yet completed, for `flush` and `close`.
    pub(crate) incomplete_batches: usize,
    random: SmallRandom,
}

/// What an append did.
pub(crate) struct Appended {
    pub(crate) future: DeliveryFuture,
    /// A batch was created or filled: the sender has something new to schedule.
    pub(crate) wake_sender: bool,
}

impl Accumulator {
    pub(crate) fn new() -> Accumulator {
        Accumulator {
            topics: HashMap::new(),
            next_batch_id: 0,
            incomplete_batches: 0,
            random: SmallRandom::new(),
        }
    }

    /// The uniform sticky partitioner's current partition for `topic` (KIP-794).
    pub(crate) fn sticky_partition(&mut self, topic: &str, partition_count: i32) -> i32 {
        let queues = self.topic(topic, partition_count);
        match queues.sticky_partition {
            Some(partition) if partition < partition_count => partition,
            _ => {
                let partition = self.random.below(partition_count as u32) as i32;
                let queues = self.topic(topic, partition_count);
                queues.sticky_partition = Some(partition);
                queues.sticky_bytes = 0;
                partition
            }
        }
    }

    fn topic(&mut self, topic: &str, partition_count: i32) -> &mut TopicQueues {
        if !self.topics.contains_key(topic) {
            self.topics
                .insert(topic.to_string(), TopicQueues::default());
        }
        let queues = self.topics.get_mut(topic).expect("inserted above");
        let count = partition_count.max(0) as usize;
        if queues.partitions.len() < count {
            queues.partitions.resize_with(count, || PartitionQueue {
                last_acked_sequence: -1,
                ..PartitionQueue::default()
            });
        }
        queues
    }

    /// Appends `record` to the partition's open batch, or a new one when it would not
    /// fit in `batch_size` (a record larger than `batch_size` gets a batch of its own).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append(
        &mut self,
        topic: &str,
        partition: i32,
        partition_count: i32,
        record: &NewRecord,
        memory_bytes: usize,
        batch_size: usize,
        compression: Compression,
        sticky: bool,
    ) -> Result<Appended, ProducerError> {
        let next_batch_id = self.next_batch_id;
        let queues = self.topic(topic, partition_count);
        let queue = &mut queues.partitions[partition as usize];
        let mut wake_sender = false;
        let fits = queue.batches.back().is_some_and(|batch| {
            batch.state == BatchState::Open
                && (batch.record_count() == 0 || batch.size_bytes() + memory_bytes <= batch_size)
        });
        if !fits {
            if let Some(last) = queue
                .batches
                .back_mut()
                .filter(|batch| batch.state == BatchState::Open)
            {
                last.state = BatchState::Closed;
            }
            queue.batches.push_back(ProducerBatch {
                id: next_batch_id,
                builder: RecordBatchBuilder::new(compression),
                state: BatchState::Open,
                created: Instant::now(),
                memory_bytes: 0,
                completion: Arc::new(Completion::default()),
                attempts: 0,
                sequence: None,
                built: None,
            });
            wake_sender = true;
        }
        let batch = queue.batches.back_mut().expect("a batch is open");
        let offset_delta = batch.record_count();
        if let Err(error) = batch.builder.append(record) {
            if !fits {
                queue.batches.pop_back();
            }
            return Err(ProducerError::InvalidRecord(error.to_string()));
        }
        batch.memory_bytes += memory_bytes;
        if batch.size_bytes() >= batch_size {
            batch.state = BatchState::Closed;
            wake_sender = true;
        }
        let future = DeliveryFuture {
            completion: batch.completion.clone(),
            partition,
            offset_delta,
            timestamp: record.timestamp,
        };
        let created = !fits;
        if sticky && queues.sticky_partition == Some(partition) {
            queues.sticky_bytes += memory_bytes;
            if queues.sticky_bytes >= batch_size {
                // KIP-794: switch after batch.size bytes, to another partition if any.
                let next = if partition_count > 1 {
                    let step = 1 + self.random.below(partition_count as u32 - 1) as i32;
                    (partition + step) % partition_count
                } else {
                    partition
                };
                let queues = self.topics.get_mut(topic).expect("present");
                queues.sticky_partition = Some(next);
                queues.sticky_bytes = 0;
            }
        }
        if created {
            self.next_batch_id += 1;
            self.incomplete_batches += 1;
        }
        Ok(Appended {
            future,
            wake_sender,
        })
    }
}
