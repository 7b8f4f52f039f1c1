//! The sender task: drains ready batches into one Produce request per broker, sends them
//! pipelined, and settles each batch from its partition's answer.
//!
//! Requests are futures this one task owns and polls in the order they were made: the
//! first poll of each queues its frame on the broker's connection (whose in-flight
//! slots are handed out first come, first served), so batches of one partition leave in
//! sequence order. Which batches of a partition may go is the accumulator's drain rule
//! ([`PartitionQueue`](super::accumulator::PartitionQueue)): one at a time until the
//! partition acknowledged one of this epoch, and none past a batch being retried.
//! Answers can still come back reordered across a reconnect; an
//! OUT_OF_ORDER_SEQUENCE_NUMBER for a batch whose predecessor is not yet acknowledged is
//! therefore retried, as the Java client does, while one for a batch at or below the
//! partition's last acknowledged sequence fails at once (it can never be written in order).

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TransactionalId};
use kafka_protocol::protocol::StrBytes;

use super::accumulator::{
    BatchState, DrainRules, SequencePosition, increment_sequence, sequence_position,
};
use super::error::classify;
use super::metrics::DrainedBatch;
use super::{ProducerError, Shared, State, metadata, transaction};
use crate::client::{Target, topic_name};
use crate::error::ErrorCode;

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One batch in a Produce request.
struct Sent {
    topic: String,
    partition: i32,
    batch_id: u64,
    bytes: Bytes,
    /// For the metrics: records, their uncompressed bytes, the largest record, and the
    /// time since the batch was created.
    record_count: i32,
    uncompressed_bytes: usize,
    max_record_bytes: usize,
    queue_time: Duration,
}

/// The longest the sender sleeps with nothing due (a bound, so a missed wake-up costs
/// no more than this).
const IDLE_WAKE: Duration = Duration::from_millis(250);

pub(crate) async fn run(shared: Arc<Shared>) {
    let mut tasks: Vec<Task> = Vec::new();
    let mut metadata_in_flight = false;
    let (metadata_done_sender, mut metadata_done) = tokio::sync::mpsc::unbounded_channel::<()>();
    loop {
        while metadata_done.try_recv().is_ok() {
            metadata_in_flight = false;
        }
        if needs_epoch_bump(&shared) {
            bump_epoch(&shared).await;
        }
        let now = Instant::now();
        let (requests, next_due, want_metadata, finished) = {
            let mut state = shared.lock();
            let drained = drain(&shared, &mut state, now);
            let max_age = Duration::from_millis(shared.config.metadata_max_age_ms);
            let want = state.metadata.refresh_requested
                || (now.duration_since(state.metadata.last_refresh) >= max_age
                    && !state.metadata.topics.is_empty());
            let finished = state.closing
                && state.accumulator.incomplete_batches == 0
                && state.requests_in_flight.values().all(|count| *count == 0);
            (drained.0, drained.1, want, finished)
        };
        if finished && tasks.is_empty() {
            shared.progress.notify_waiters();
            return;
        }
        if want_metadata && !metadata_in_flight {
            metadata_in_flight = true;
            let shared = shared.clone();
            let done = metadata_done_sender.clone();
            tasks.push(Box::pin(async move {
                let topics: Vec<String> = shared.lock().metadata.topics.keys().cloned().collect();
                if let Err(error) = metadata::refresh(&shared, topics).await {
                    tracing::debug!(%error, "metadata refresh failed");
                    tokio::time::sleep(Duration::from_millis(shared.config.retry_backoff_ms)).await;
                }
                let _ = done.send(());
                shared.wake.notify_one();
            }));
        }
        for (node, batches) in requests {
            tasks.push(Box::pin(produce(shared.clone(), node, batches)));
        }
        let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(
            next_due.unwrap_or(now + IDLE_WAKE).min(now + IDLE_WAKE),
        ));
        tokio::pin!(sleep);
        let notified = shared.wake.notified();
        tokio::pin!(notified);
        std::future::poll_fn(|cx| {
            let before = tasks.len();
            tasks.retain_mut(|task| task.as_mut().poll(cx).is_pending());
            if tasks.len() < before
                || notified.as_mut().poll(cx).is_ready()
                || sleep.as_mut().poll(cx).is_ready()
            {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

fn needs_epoch_bump(shared: &Shared) -> bool {
    let state = shared.lock();
    state.epoch_bump_needed
        && !shared.transactional()
        && state.requests_in_flight.values().all(|count| *count == 0)
}

/// KIP-360: a new epoch for the same producer id (a new id from brokers before
/// InitProducerId v3), then every partition's sequences start again at 0.
async fn bump_epoch(shared: &Shared) {
    let current = {
        let state = shared.lock();
        (state.producer_id, state.producer_epoch)
    };
    let deadline = Instant::now() + Duration::from_millis(shared.config.max_block_ms);
    match transaction::init_producer_id(shared, Some(current), deadline).await {
        Ok((producer_id, epoch)) => {
            let mut state = shared.lock();
            state.producer_id = producer_id;
            state.producer_epoch = epoch;
            reset_sequences(&mut state);
            tracing::debug!(producer_id, epoch, "bumped the producer epoch");
        }
        Err(error) => {
            tracing::warn!(%error, "cannot bump the producer epoch");
            tokio::time::sleep(Duration::from_millis(shared.config.retry_backoff_ms)).await;
        }
    }
}

/// After a new epoch: sequences from 0, batches not yet acknowledged re-stamped.
pub(crate) fn reset_sequences(state: &mut State) {
    state.epoch_bump_needed = false;
    for queues in state.accumulator.topics.values_mut() {
        for queue in &mut queues.partitions {
            queue.next_sequence = 0;
            queue.last_acked_sequence = -1;
            queue.retrying = false;
            for batch in &mut queue.batches {
                batch.sequence = None;
                batch.built = None;
            }
        }
    }
}

/// Takes the ready batches (at most one per partition per request, as brokers want),
/// grouped by leader; fails expired ones. Returns the requests, when the next batch is
/// due, under the state lock.
#[allow(clippy::type_complexity)]
fn drain(
    shared: &Shared,
    state: &mut State,
    now: Instant,
) -> (BTreeMap<i32, Vec<Sent>>, Option<Instant>) {
    let config = &shared.config;
    let linger = Duration::from_millis(config.linger_ms);
    let delivery_timeout = Duration::from_millis(config.delivery_timeout_ms);
    let max_in_flight = config.max_in_flight_requests_per_connection;
    let idempotent = config.enable_idempotence;
    let send_now = state.flushing > 0 || state.closing;
    let identity_ready = !idempotent || (state.producer_id >= 0 && !state.epoch_bump_needed);
    let mut requests: BTreeMap<i32, Vec<Sent>> = BTreeMap::new();
    let mut request_bytes: BTreeMap<i32, usize> = BTreeMap::new();
    let mut next_due: Option<Instant> = None;
    let mut due =
        |at: Instant| next_due = Some(next_due.map_or(at, |current: Instant| current.min(at)));
    let State {
        accumulator,
        metadata,
        producer_id,
        producer_epoch,
        epoch_bump_needed,
        transaction,
        requests_in_flight,
        ..
    } = state;
    let rules = DrainRules {
        now,
        linger,
        send_now,
        max_in_flight,
        idempotent,
        metadata_refresh_started: metadata.last_refresh_started,
    };
    let mut expired = Vec::new();
    for (topic, queues) in accumulator.topics.iter_mut() {
        for (index, queue) in queues.partitions.iter_mut().enumerate() {
            let partition = index as i32;
            // delivery.timeout.ms: batches not in flight whose time is up.
            while let Some(position) = queue.batches.iter().position(|batch| {
                batch.state != BatchState::InFlight && batch.created + delivery_timeout <= now
            }) {
                let batch = queue.batches.remove(position).expect("found above");
                shared.metrics.failed(topic, batch.record_count());
                if batch.sequence.is_some() {
                    // A sequence gap the broker will never see filled.
                    *epoch_bump_needed = true;
                }
                expired.push(batch);
            }
            if let Some(first) = queue.batches.front() {
                due(first.created + delivery_timeout);
            }
            if queue.batches.is_empty() || !identity_ready {
                continue;
            }
            if queue.in_flight >= queue.in_flight_limit(max_in_flight, idempotent) {
                continue;
            }
            let Some(leader) = metadata.leader(topic, partition) else {
                metadata.refresh_requested = true;
                continue;
            };
            if requests.get(&leader).is_none_or(Vec::is_empty)
                && requests_in_flight.get(&leader).copied().unwrap_or(0) >= max_in_flight
            {
                continue;
            }
            let mut wants_metadata = false;
            let index = queue.take_next(&rules, &mut wants_metadata, &mut due);
            if wants_metadata {
                metadata.refresh_requested = true;
            }
            let Some(index) = index else {
                continue;
            };
            let size = queue.batches[index].size_bytes();
            let bytes_so_far = request_bytes.get(&leader).copied().unwrap_or(0);
            if bytes_so_far > 0 && bytes_so_far + size > config.max_request_size {
                due(now);
                continue;
            }
            let identity =
                idempotent.then_some((*producer_id, *producer_epoch, transaction.transactional));
            let bytes = queue.mark_sent(index, identity);
            let batch = &queue.batches[index];
            *request_bytes.entry(leader).or_default() += bytes.len();
            requests.entry(leader).or_default().push(Sent {
                topic: topic.clone(),
                partition,
                batch_id: batch.id,
                record_count: batch.record_count(),
                uncompressed_bytes: batch.builder.records_size_bytes(),
                max_record_bytes: batch.max_record_bytes,
                queue_time: now.saturating_duration_since(batch.created),
                bytes,
            });
        }
    }
    for (node, batches) in &requests {
        *requests_in_flight.entry(*node).or_default() += 1;
        shared
            .metrics
            .request_drained(batches.iter().map(|sent| DrainedBatch {
                topic: &sent.topic,
                size_bytes: sent.bytes.len(),
                uncompressed_bytes: sent.uncompressed_bytes,
                record_count: sent.record_count,
                max_record_bytes: sent.max_record_bytes,
                queue_time: sent.queue_time,
            }));
    }
    let expired_count = expired.len();
    for batch in expired {
        let error = ProducerError::Timeout {
            what: format!("delivering a batch of {} records", batch.record_count()),
            setting: "delivery.timeout.ms",
            timeout_ms: config.delivery_timeout_ms,
        };
        fail_batch_completion(shared, state_fail_target(transaction), batch, error);
    }
    if expired_count > 0 {
        state.accumulator.incomplete_batches -= expired_count;
        shared.progress.notify_waiters();
    }
    (requests, next_due)
}

/// For expired batches in a transaction, the transaction can no longer commit.
fn state_fail_target(
    transaction: &mut transaction::Transaction,
) -> Option<&mut transaction::Transaction> {
    transaction.transactional.then_some(transaction)
}

fn fail_batch_completion(
    shared: &Shared,
    transaction: Option<&mut transaction::Transaction>,
    batch: super::accumulator::ProducerBatch,
    error: ProducerError,
) {
    let error = match transaction {
        Some(transaction) => {
            let classified = classify(error);
            transaction.fail(classified.clone());
            classified
        }
        None => error,
    };
    shared.release_memory(batch.memory_bytes);
    batch.completion.complete(Err(error));
}

/// Sends one Produce request and settles its batches.
async fn produce(shared: Arc<Shared>, node: i32, batches: Vec<Sent>) {
    let mut topics: Vec<TopicProduceData> = Vec::new();
    for sent in &batches {
        let data = PartitionProduceData::default()
            .with_index(sent.partition)
            .with_records(Some(sent.bytes.clone()));
        match topics
            .iter_mut()
            .find(|topic| topic.name.0.as_str() == sent.topic)
        {
            Some(topic) => topic.partition_data.push(data),
            None => topics.push(
                TopicProduceData::default()
                    .with_name(topic_name(&sent.topic))
                    .with_partition_data(vec![data]),
            ),
        }
    }
    let transactional_id = shared
        .config
        .transactional_id
        .as_ref()
        .map(|id| TransactionalId(StrBytes::from_string(id.clone())));
    let acks = shared.config.acks.wire_value();
    let timeout_ms = shared.config.request_timeout_ms.min(i32::MAX as u64) as i32;
    let result = if acks == 0 {
        // No answer comes: every partition of the request is done once it is written,
        // at offset -1.
        let answered: Vec<TopicProduceResponse> = topics
            .iter()
            .map(|topic| {
                TopicProduceResponse::default()
                    .with_name(topic.name.clone())
                    .with_partition_responses(
                        topic
                            .partition_data
                            .iter()
                            .map(|p| {
                                PartitionProduceResponse::default()
                                    .with_index(p.index)
                                    .with_base_offset(-1)
                                    .with_log_append_time_ms(-1)
                            })
                            .collect(),
                    )
            })
            .collect();
        shared
            .client
            .send_without_response(Target::Node(node), |_version| {
                ProduceRequest::default()
                    .with_transactional_id(transactional_id)
                    .with_acks(acks)
                    .with_timeout_ms(timeout_ms)
                    .with_topic_data(topics)
            })
            .await
            .map(|()| ProduceResponse::default().with_responses(answered))
    } else {
        let started = Instant::now();
        let answer = shared
            .client
            .send(Target::Node(node), |_version| {
                ProduceRequest::default()
                    .with_transactional_id(transactional_id)
                    .with_acks(acks)
                    .with_timeout_ms(timeout_ms)
                    .with_topic_data(topics)
            })
            .await;
        if let Ok(response) = &answer {
            shared
                .metrics
                .response(started.elapsed(), response.throttle_time_ms);
        }
        answer
    };
    settle(&shared, node, batches, result.map_err(ProducerError::from));
    shared.progress.notify_waiters();
    shared.wake.notify_one();
}

/// What happens to a batch after an answer.
enum Outcome {
    Done(i64, i64),
    /// Retry; `true`: after a metadata refresh.
    Retry(ProducerError, bool),
    Fail(ProducerError),
}

fn settle(
    shared: &Shared,
    node: i32,
    batches: Vec<Sent>,
    result: Result<ProduceResponse, ProducerError>,
) {
    let now = Instant::now();
    let config = &shared.config;
    let mut state = shared.lock();
    if let Some(count) = state.requests_in_flight.get_mut(&node) {
        *count = count.saturating_sub(1);
    }
    let mut completed = 0;
    for sent in batches {
        let answer: Result<(ErrorCode, i64, i64, Option<String>), ProducerError> = match &result {
            Err(error) => Err(error.clone()),
            Ok(response) => Ok(response
                .responses
                .iter()
                .filter(|topic| topic.name.0.as_str() == sent.topic)
                .flat_map(|topic| topic.partition_responses.iter())
                .find(|partition| partition.index == sent.partition)
                .map_or(
                    (
                        ErrorCode::UNKNOWN_SERVER_ERROR,
                        -1,
                        -1,
                        Some("no answer for the partition".to_string()),
                    ),
                    |partition| {
                        (
                            ErrorCode(partition.error_code),
                            partition.base_offset,
                            partition.log_append_time_ms,
                            partition
                                .error_message
                                .as_ref()
                                .map(|message| message.to_string()),
                        )
                    },
                )),
        };
        let State {
            accumulator,
            metadata,
            epoch_bump_needed,
            transaction,
            ..
        } = &mut *state;
        let Some(queue) = accumulator
            .topics
            .get_mut(&sent.topic)
            .and_then(|queues| queues.partitions.get_mut(sent.partition as usize))
        else {
            continue;
        };
        let Some(position) = queue
            .batches
            .iter()
            .position(|batch| batch.id == sent.batch_id)
        else {
            queue.in_flight = queue.in_flight.saturating_sub(1);
            continue;
        };
        let batch = &queue.batches[position];
        let position_of_sequence = batch
            .sequence
            .map(|(_, _, sequence)| sequence_position(sequence, queue.last_acked_sequence));
        let outcome = match answer {
            Ok((code, base_offset, append_time, _)) if code == ErrorCode::NONE => {
                Outcome::Done(base_offset, append_time)
            }
            // The broker already has this batch (an earlier attempt's answer was lost).
            Ok((code, ..)) if code == ErrorCode::DUPLICATE_SEQUENCE_NUMBER => Outcome::Done(-1, -1),
            // The broker holds later sequences of this partition than this batch's: it can
            // never be written in order, and retrying would only wait for
            // delivery.timeout.ms. Fail it now; an idempotent producer then bumps its epoch
            // (KIP-360) and a transaction must be aborted, as with the Java client.
            Ok((code, _, _, message))
                if code == ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
                    && position_of_sequence == Some(SequencePosition::Behind) =>
            {
                let (_, _, sequence) = batch.sequence.expect("a sequence");
                let last = increment_sequence(sequence, batch.record_count() - 1);
                Outcome::Fail(ProducerError::api(
                    code,
                    Some(&format!(
                        "{}; the batch of {}-{} with sequences {sequence}..={last} cannot be \
                         written: the broker already acknowledged the partition up to \
                         sequence {} (later batches were written before it), so its {} \
                         records are failed rather than retried",
                        message.as_deref().unwrap_or("out of order sequence number"),
                        sent.topic,
                        sent.partition,
                        queue.last_acked_sequence,
                        batch.record_count(),
                    )),
                ))
            }
            Ok((code, _, _, message)) => {
                let error = ProducerError::api(code, message.as_deref());
                let sequence_error = code == ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
                    || code == ErrorCode::UNKNOWN_PRODUCER_ID;
                if code.is_retriable() {
                    // The leader may have moved (certainly so for Kafka's
                    // InvalidMetadataException family): refresh before the retry.
                    metadata.refresh_requested = true;
                    Outcome::Retry(error, true)
                } else if sequence_error && position_of_sequence == Some(SequencePosition::Ahead) {
                    // The Java client's rule: a sequence error for a batch that does not
                    // directly follow the last acknowledged one means an earlier batch is
                    // being retried.
                    Outcome::Retry(error, false)
                } else {
                    Outcome::Fail(error)
                }
            }
            Err(error) if error.is_retriable() => {
                metadata.refresh_requested = true;
                Outcome::Retry(error, true)
            }
            Err(error) => Outcome::Fail(error),
        };
        let outcome = match outcome {
            Outcome::Retry(error, _)
                if batch.attempts > config.retries as u32
                    || batch.created + Duration::from_millis(config.delivery_timeout_ms) <= now =>
            {
                Outcome::Fail(error)
            }
            other => other,
        };
        match outcome {
            Outcome::Retry(error, refresh) => {
                shared.metrics.retried(&sent.topic, batch.record_count());
                tracing::debug!(topic = %sent.topic, partition = sent.partition, %error, "retrying a batch");
                let backoff = retry_backoff(
                    config.retry_backoff_ms,
                    config.retry_backoff_max_ms,
                    batch.attempts,
                );
                queue.retry(
                    position,
                    now + backoff,
                    config.enable_idempotence,
                    refresh.then_some(now),
                );
            }
            Outcome::Done(base_offset, append_time) => {
                let batch = queue.acknowledged(position);
                shared.release_memory(batch.memory_bytes);
                batch.completion.complete(Ok((base_offset, append_time)));
                completed += 1;
            }
            Outcome::Fail(error) => {
                let batch = queue.failed(position);
                shared.metrics.failed(&sent.topic, batch.record_count());
                tracing::debug!(topic = %sent.topic, partition = sent.partition, %error, "a batch failed");
                if batch.sequence.is_some() && !transaction.transactional {
                    // The partition's sequence has a gap now (KIP-360: bump the epoch).
                    *epoch_bump_needed = true;
                }
                if batch.sequence.is_some() && transaction.transactional {
                    transaction.epoch_bump_needed = true;
                }
                fail_batch_completion(shared, state_fail_target(transaction), batch, error);
                completed += 1;
            }
        }
    }
    state.accumulator.incomplete_batches -= completed;
}

/// Exponential backoff from `retry.backoff.ms` up to `retry.backoff.max.ms` (KIP-580).
fn retry_backoff(base_ms: u64, max_ms: u64, attempts: u32) -> Duration {
    let factor = 1u64 << attempts.saturating_sub(1).min(16);
    Duration::from_millis(base_ms.saturating_mul(factor).min(max_ms.max(base_ms)))
}

/// `abort_transaction`: batches never sent fail; those sent before stay (their answer
/// decides, and the abort marker covers them).
pub(crate) fn abort_unsent(shared: &Shared) {
    let mut state = shared.lock();
    let mut aborted = Vec::new();
    for queues in state.accumulator.topics.values_mut() {
        for queue in &mut queues.partitions {
            let mut index = 0;
            while index < queue.batches.len() {
                let batch = &queue.batches[index];
                if batch.state != BatchState::InFlight && batch.attempts == 0 {
                    aborted.push(queue.batches.remove(index).expect("in range"));
                } else {
                    index += 1;
                }
            }
        }
    }
    state.accumulator.incomplete_batches -= aborted.len();
    drop(state);
    for batch in aborted {
        fail_batch_completion(shared, None, batch, ProducerError::TransactionAborted);
    }
    shared.progress.notify_waiters();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_wrap_as_kafkas() {
        assert_eq!(increment_sequence(0, 5), 5);
        assert_eq!(increment_sequence(i32::MAX - 1, 1), i32::MAX);
        assert_eq!(increment_sequence(i32::MAX, 1), 0);
        assert_eq!(increment_sequence(i32::MAX - 2, 5), 2);
    }

    #[test]
    fn backoff_grows_to_its_cap() {
        assert_eq!(retry_backoff(100, 1000, 1), Duration::from_millis(100));
        assert_eq!(retry_backoff(100, 1000, 2), Duration::from_millis(200));
        assert_eq!(retry_backoff(100, 1000, 9), Duration::from_millis(1000));
    }
}
