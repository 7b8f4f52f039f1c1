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
    /// The largest record's size estimate (the `record-size` metrics).
    pub(crate) max_record_bytes: usize,
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

/// One partition's batches, oldest first (so in sequence order).
///
/// The drain rule for an idempotent producer ([`PartitionQueue::take_next`]), which keeps
/// a partition's records in order on the broker:
///
/// - Until the broker has acknowledged a batch of the current producer epoch on the
///   partition (`last_acked_sequence` is -1), one batch at a time. A broker without state
///   for this producer on the partition accepts any first sequence (KIP-360), so a later
///   batch pipelined behind the first could be written before it (Kafka answers
///   NOT_LEADER_OR_FOLLOWER for a moment on a freshly created partition, then accepts the
///   next request), and the first could never follow.
/// - Once a batch failed retriably (`retrying`), nothing more until every batch in flight
///   is answered; then the failed batches go again one at a time, in sequence order, each
///   once it is acknowledged; no new batch until all of them are (the Java client's
///   `shouldStopDrainBatchesForPartition`, stricter: it allows one batch in flight).
/// - A retry after a retriable broker or connection error waits for a metadata refresh
///   begun after the error (`metadata_wait`): the leader may have moved.
/// - Otherwise up to `max.in.flight.requests.per.connection` batches in flight.
#[derive(Default)]
pub(crate) struct PartitionQueue {
    pub(crate) batches: VecDeque<ProducerBatch>,
    pub(crate) in_flight: usize,
    /// The next sequence an idempotent producer gives this partition.
    pub(crate) next_sequence: i32,
    /// The last sequence the broker acknowledged (-1: none in this producer epoch).
    pub(crate) last_acked_sequence: i32,
    /// An idempotent batch failed retriably: resend in order, one at a time, until the
    /// retried batches are acknowledged.
    pub(crate) retrying: bool,
    /// A batch failed retriably at this instant: no retry until the metadata was
    /// refreshed by a request begun since.
    pub(crate) metadata_wait: Option<Instant>,
}

/// Where a batch's base sequence stands against what its partition acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SequencePosition {
    /// Right after the last acknowledged sequence.
    Next,
    /// Further on: an earlier batch is not acknowledged yet.
    Ahead,
    /// At or before the last acknowledged sequence: the broker already holds later
    /// records of the partition, so this batch can never be written in order (the Java
    /// client's "unresolved sequence").
    Behind,
}

/// Kafka's `DefaultRecordBatch.incrementSequence`: sequences wrap at `i32::MAX` to 0.
pub(crate) fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// `sequence` against `last_acked` (-1: nothing acknowledged), modulo the wrap at
/// `i32::MAX`.
pub(crate) fn sequence_position(sequence: i32, last_acked: i32) -> SequencePosition {
    const MODULUS: i64 = 1 << 31;
    let expected = if last_acked < 0 {
        0
    } else {
        increment_sequence(last_acked, 1)
    };
    let distance = (i64::from(sequence) - i64::from(expected)).rem_euclid(MODULUS);
    if distance == 0 {
        SequencePosition::Next
    } else if distance < MODULUS / 2 {
        SequencePosition::Ahead
    } else {
        SequencePosition::Behind
    }
}

/// How [`PartitionQueue::take_next`] decides.
pub(crate) struct DrainRules {
    pub(crate) now: Instant,
    pub(crate) linger: std::time::Duration,
    /// Flushing or closing: open batches go without waiting for `linger.ms`.
    pub(crate) send_now: bool,
    pub(crate) max_in_flight: usize,
    pub(crate) idempotent: bool,
    /// When the last successful metadata refresh began.
    pub(crate) metadata_refresh_started: Instant,
}

impl PartitionQueue {
    /// How many batches of this partition may be in flight now (see the type's docs).
    pub(crate) fn in_flight_limit(&self, max_in_flight: usize, idempotent: bool) -> usize {
        if idempotent && (self.retrying || self.last_acked_sequence < 0) {
            1
        } else {
            max_in_flight
        }
    }

    /// The index of the batch to send next, if one may go now (not yet marked sent);
    /// otherwise `None`, telling `due` when to look again if it is a matter of time. A
    /// pending metadata wait sets `*wants_metadata`.
    pub(crate) fn take_next(
        &mut self,
        rules: &DrainRules,
        wants_metadata: &mut bool,
        due: &mut dyn FnMut(Instant),
    ) -> Option<usize> {
        if let Some(since) = self.metadata_wait {
            if rules.metadata_refresh_started >= since {
                self.metadata_wait = None;
            } else {
                *wants_metadata = true;
                return None;
            }
        }
        if self.in_flight >= self.in_flight_limit(rules.max_in_flight, rules.idempotent) {
            return None;
        }
        // The first batch not in flight: with `retrying`, nothing is in flight here, so
        // it is the oldest retried one; otherwise batches are never retried while later
        // ones wait, so it is the oldest unsent one.
        let index = self
            .batches
            .iter()
            .position(|batch| batch.state != BatchState::InFlight)?;
        let batch = &mut self.batches[index];
        let ready_at = match batch.state {
            BatchState::Open if !rules.send_now => batch.created + rules.linger,
            BatchState::Retry(after) => after,
            _ => rules.now,
        };
        if ready_at > rules.now {
            due(ready_at);
            return None;
        }
        if batch.state == BatchState::Open {
            // It leaves now: later records go to a new batch.
            batch.state = BatchState::Closed;
        }
        Some(index)
    }

    /// Marks the batch at `index` sent, first giving it the partition's next sequence if
    /// `identity` (producer id, epoch, transactional) is given and it has none; returns
    /// its bytes.
    pub(crate) fn mark_sent(&mut self, index: usize, identity: Option<(i64, i16, bool)>) -> Bytes {
        let batch = &mut self.batches[index];
        if let Some((producer_id, epoch, transactional)) = identity
            && batch.sequence.is_none()
        {
            let sequence = self.next_sequence;
            self.next_sequence = increment_sequence(sequence, batch.record_count());
            batch.assign_sequence(producer_id, epoch, sequence, transactional);
        }
        batch.state = BatchState::InFlight;
        batch.attempts += 1;
        self.in_flight += 1;
        batch.bytes()
    }

    /// The batch at `position` failed retriably: it goes again at `at` (after a metadata
    /// refresh begun after `metadata_since`, if given).
    pub(crate) fn retry(
        &mut self,
        position: usize,
        at: Instant,
        idempotent: bool,
        metadata_since: Option<Instant>,
    ) {
        self.in_flight = self.in_flight.saturating_sub(1);
        self.batches[position].state = BatchState::Retry(at);
        if idempotent {
            self.retrying = true;
        }
        if metadata_since.is_some() {
            self.metadata_wait = metadata_since;
        }
    }

    /// The batch at `position` was acknowledged: removed, its last sequence recorded.
    pub(crate) fn acknowledged(&mut self, position: usize) -> ProducerBatch {
        self.in_flight = self.in_flight.saturating_sub(1);
        let batch = self.batches.remove(position).expect("a batch at position");
        if let Some((_, _, sequence)) = batch.sequence {
            self.last_acked_sequence = increment_sequence(sequence, batch.record_count() - 1);
        }
        self.end_retrying_if_done();
        batch
    }

    /// The batch at `position` failed for good: removed.
    pub(crate) fn failed(&mut self, position: usize) -> ProducerBatch {
        self.in_flight = self.in_flight.saturating_sub(1);
        let batch = self.batches.remove(position).expect("a batch at position");
        self.end_retrying_if_done();
        batch
    }

    fn end_retrying_if_done(&mut self) {
        if self.retrying
            && !self
                .batches
                .iter()
                .any(|batch| matches!(batch.state, BatchState::Retry(_)))
            && self.in_flight == 0
        {
            self.retrying = false;
        }
    }
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
                max_record_bytes: 0,
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
        batch.max_record_bytes = batch.max_record_bytes.max(memory_bytes);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A partition's queue of `count` closed batches of one record each (sequences 0, 1,
    /// ... once sent).
    fn queue_of(count: usize) -> PartitionQueue {
        let mut accumulator = Accumulator::new();
        let record = NewRecord {
            timestamp: 0,
            key: None,
            value: Some(Bytes::from(vec![b'x'; 1024])),
            headers: Vec::new(),
        };
        for _ in 0..count {
            // batch.size 1: every record fills a batch of its own.
            accumulator
                .append("t", 0, 1, &record, 1060, 1, Compression::None, false)
                .expect("appended");
        }
        let mut queues = accumulator.topics.remove("t").expect("the topic");
        let queue = queues.partitions.remove(0);
        assert!(queue.batches.iter().all(|b| b.state == BatchState::Closed));
        queue
    }

    struct Drainer {
        start: Instant,
        idempotent: bool,
        refreshed_at: Instant,
    }

    impl Drainer {
        /// Drains the queue as repeated sender passes at `at_ms` would: the base
        /// sequences sent; whether a metadata refresh is wanted.
        fn drain(&self, queue: &mut PartitionQueue, at_ms: u64) -> (Vec<i32>, bool) {
            let rules = DrainRules {
                now: self.start + Duration::from_millis(at_ms),
                linger: Duration::ZERO,
                send_now: false,
                max_in_flight: 5,
                idempotent: self.idempotent,
                metadata_refresh_started: self.refreshed_at,
            };
            let mut sent = Vec::new();
            let mut wants_metadata = false;
            while let Some(index) = queue.take_next(&rules, &mut wants_metadata, &mut |_| {}) {
                let identity = self.idempotent.then_some((7, 0, false));
                queue.mark_sent(index, identity);
                sent.push(queue.batches[index].sequence.map_or(-1, |(_, _, s)| s));
            }
            (sent, wants_metadata)
        }
    }

    /// The position of the batch with base sequence `sequence`.
    fn at(queue: &PartitionQueue, sequence: i32) -> usize {
        queue
            .batches
            .iter()
            .position(|b| b.sequence.is_some_and(|(_, _, s)| s == sequence))
            .expect("a batch with that sequence")
    }

    #[test]
    fn a_partition_holds_back_behind_a_batch_in_retry() {
        let start = Instant::now();
        let mut drainer = Drainer {
            start,
            idempotent: true,
            refreshed_at: start,
        };
        let mut queue = queue_of(8);
        // Nothing acknowledged on the partition yet: the first batch goes alone (a broker
        // without producer state would take a later one first).
        assert_eq!(drainer.drain(&mut queue, 0), (vec![0], false));
        assert_eq!(drainer.drain(&mut queue, 0), (vec![], false));

        // NOT_LEADER_OR_FOLLOWER at 1 ms: retried after the backoff and a metadata refresh.
        let failed_at = start + Duration::from_millis(1);
        queue.retry(
            at(&queue, 0),
            start + Duration::from_millis(100),
            true,
            Some(failed_at),
        );
        assert_eq!(
            drainer.drain(&mut queue, 200),
            (vec![], true),
            "no refresh yet"
        );
        drainer.refreshed_at = start + Duration::from_millis(2);
        assert_eq!(
            drainer.drain(&mut queue, 50),
            (vec![], false),
            "backing off"
        );
        assert_eq!(
            drainer.drain(&mut queue, 200),
            (vec![0], false),
            "the same batch"
        );
        assert_eq!(queue.batches[0].attempts, 2);
        assert_eq!(drainer.drain(&mut queue, 200), (vec![], false));
        queue.acknowledged(at(&queue, 0));
        assert_eq!(queue.last_acked_sequence, 0);
        assert!(!queue.retrying);

        // Acknowledged: pipelined up to max.in.flight.
        assert_eq!(drainer.drain(&mut queue, 200), (vec![1, 2, 3, 4, 5], false));
        // Sequence 1 fails retriably: nothing new goes, though batches wait.
        queue.retry(
            at(&queue, 1),
            start + Duration::from_millis(300),
            true,
            None,
        );
        assert!(queue.retrying);
        assert_eq!(drainer.drain(&mut queue, 400), (vec![], false));
        // The broker turns the later ones away (OUT_OF_ORDER_SEQUENCE_NUMBER, an earlier
        // sequence missing): retried too.
        for sequence in [2, 3, 4, 5] {
            assert_eq!(
                sequence_position(sequence, queue.last_acked_sequence),
                SequencePosition::Ahead
            );
            queue.retry(at(&queue, sequence), start, true, None);
        }
        // Then one at a time, in sequence order, each once its predecessor is
        // acknowledged; new batches only after all of them.
        for sequence in [1, 2, 3, 4, 5] {
            assert_eq!(drainer.drain(&mut queue, 400), (vec![sequence], false));
            assert_eq!(drainer.drain(&mut queue, 400), (vec![], false));
            queue.acknowledged(at(&queue, sequence));
        }
        assert!(!queue.retrying);
        assert_eq!(drainer.drain(&mut queue, 400), (vec![6, 7], false));
    }

    #[test]
    fn without_idempotence_batches_are_not_held_back() {
        let start = Instant::now();
        let drainer = Drainer {
            start,
            idempotent: false,
            refreshed_at: start,
        };
        let mut queue = queue_of(7);
        assert_eq!(drainer.drain(&mut queue, 0).0.len(), 5);
    }

    #[test]
    fn sequences_below_the_acknowledged_ones_are_unresolved() {
        use SequencePosition::{Ahead, Behind, Next};
        // The bug's case: sequence 0 retried after 15..=74 were acknowledged.
        assert_eq!(sequence_position(0, 74), Behind);
        assert_eq!(sequence_position(60, 74), Behind);
        assert_eq!(sequence_position(74, 74), Behind);
        assert_eq!(sequence_position(75, 74), Next);
        assert_eq!(sequence_position(90, 74), Ahead);
        assert_eq!(sequence_position(0, -1), Next);
        assert_eq!(sequence_position(15, -1), Ahead);
        // Across the wrap at i32::MAX.
        assert_eq!(sequence_position(0, i32::MAX), Next);
        assert_eq!(sequence_position(3, i32::MAX - 2), Ahead);
        assert_eq!(sequence_position(i32::MAX, 5), Behind);
    }
}
