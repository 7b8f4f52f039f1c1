//! Producer ids and transactions, as Kafka's `TransactionManager`: InitProducerId (with
//! or without a `transactional.id`), and for a transactional producer the coordinator
//! calls (FindCoordinator key type 1, AddPartitionsToTxn before the first send to a
//! partition in a transaction, AddOffsetsToTxn and TxnOffsetCommit for
//! `send_offsets_to_transaction`, EndTxn).
//!
//! States: Uninitialized → (init_transactions) Ready → (begin) InTransaction →
//! (commit/abort) Ready; an abortable error moves InTransaction to AbortableError, from
//! which only abort leads back to Ready; a fatal error is final. Which errors are which:
//! [`super::error`]. Retriable coordinator errors (NOT_COORDINATOR,
//! COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, CONCURRENT_TRANSACTIONS, a
//! lost connection) are retried after `retry.backoff.ms`, finding the coordinator again
//! when it may have moved, until `max.block.ms`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, FindCoordinatorRequest,
    GroupId, InitProducerIdRequest, ProducerId, TransactionalId, TxnOffsetCommitRequest,
};
use kafka_protocol::protocol::StrBytes;

type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

use super::error::classify;
use super::{ProducerError, Shared, sender};
use crate::client::{Target, topic_name};
use crate::error::ErrorCode;
use crate::{ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition};

const COORDINATOR_TYPE_GROUP: i8 = 0;
const COORDINATOR_TYPE_TRANSACTION: i8 = 1;

#[derive(Debug, Clone, Default)]
pub(crate) enum TxnState {
    #[default]
    Uninitialized,
    Ready,
    InTransaction,
    AbortableError(ProducerError),
    FatalError(ProducerError),
}

#[derive(Default)]
pub(crate) struct Transaction {
    pub(crate) transactional: bool,
    pub(crate) state: TxnState,
    /// Partitions added to the current transaction.
    pub(crate) partitions: HashMap<String, HashSet<i32>>,
    pub(crate) offsets_added: bool,
    /// The transaction coordinator, once found.
    pub(crate) coordinator: Option<i32>,
    /// A batch with a sequence failed: the next abort bumps the epoch (KIP-360).
    pub(crate) epoch_bump_needed: bool,
}

impl Transaction {
    /// Records an error that ended a batch or a call of the current transaction.
    pub(crate) fn fail(&mut self, error: ProducerError) {
        match (&self.state, &error) {
            (TxnState::FatalError(_), _) => {}
            (_, ProducerError::Fatal(_)) => self.state = TxnState::FatalError(error),
            (TxnState::InTransaction, _) => self.state = TxnState::AbortableError(error),
            _ => {}
        }
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

fn deadline_for(shared: &Shared) -> Instant {
    Instant::now() + Duration::from_millis(shared.config.max_block_ms)
}

fn timed_out(shared: &Shared, what: &str) -> ProducerError {
    ProducerError::Timeout {
        what: what.to_string(),
        setting: "max.block.ms",
        timeout_ms: shared.config.max_block_ms,
    }
}

/// The broker coordinating `key` (FindCoordinator; v4+ batches keys).
async fn find_coordinator(shared: &Shared, key: &str, key_type: i8) -> Result<i32, ProducerError> {
    let response = shared
        .client
        .send(Target::Any, |version| {
            let request = FindCoordinatorRequest::default().with_key_type(key_type);
            if version >= 4 {
                request.with_coordinator_keys(vec![text(key)])
            } else {
                request.with_key(text(key))
            }
        })
        .await?;
    let (code, message, node) = match response.coordinators.first() {
        Some(coordinator) => (
            coordinator.error_code,
            coordinator.error_message.clone(),
            coordinator.node_id.0,
        ),
        None => (
            response.error_code,
            response.error_message.clone(),
            response.node_id.0,
        ),
    };
    ErrorCode(code)
        .check(message.as_deref())
        .map_err(ProducerError::Api)?;
    if !shared.client.brokers().contains_key(&node) {
        shared.client.metadata(Some(&[])).await?;
    }
    Ok(node)
}

/// Whether a coordinator error means "ask FindCoordinator again".
fn coordinator_moved(error: &ProducerError) -> bool {
    matches!(error, ProducerError::Client(_))
        || error.code().is_some_and(|code| {
            code == ErrorCode::NOT_COORDINATOR || code == ErrorCode::COORDINATOR_NOT_AVAILABLE
        })
}

/// Runs `call` at the coordinator of `key`, retrying retriable errors until `deadline`.
async fn at_coordinator<'a, T>(
    shared: &'a Shared,
    key: &str,
    key_type: i8,
    deadline: Instant,
    what: &str,
    mut call: impl FnMut(i32) -> BoxFuture<'a, Result<T, ProducerError>>,
) -> Result<T, ProducerError> {
    let cached = |shared: &Shared| {
        (key_type == COORDINATOR_TYPE_TRANSACTION)
            .then(|| shared.lock().transaction.coordinator)
            .flatten()
    };
    loop {
        let attempt = async {
            let node = match cached(shared) {
                Some(node) => node,
                None => {
                    let node = find_coordinator(shared, key, key_type).await?;
                    if key_type == COORDINATOR_TYPE_TRANSACTION {
                        shared.lock().transaction.coordinator = Some(node);
                    }
                    node
                }
            };
            call(node).await
        }
        .await;
        match attempt {
            Ok(value) => return Ok(value),
            Err(error)
                if error.is_retriable()
                    || error.code() == Some(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS) =>
            {
                if coordinator_moved(&error) && key_type == COORDINATOR_TYPE_TRANSACTION {
                    shared.lock().transaction.coordinator = None;
                }
                if Instant::now() >= deadline {
                    tracing::debug!(%error, "giving up on {what}");
                    return Err(timed_out(shared, what));
                }
                tracing::debug!(%error, "retrying {what}");
                let backoff = Duration::from_millis(shared.config.retry_backoff_ms);
                tokio::time::sleep(backoff).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// InitProducerId: a new producer id, or (with `current`, InitProducerId v3+, KIP-360)
/// the next epoch of the current one.
pub(crate) async fn init_producer_id(
    shared: &Shared,
    current: Option<(i64, i16)>,
    deadline: Instant,
) -> Result<(i64, i16), ProducerError> {
    let (producer_id, epoch) = current.unwrap_or((-1, -1));
    match shared.config.transactional_id.as_deref() {
        Some(id) => {
            at_coordinator(
                shared,
                id,
                COORDINATOR_TYPE_TRANSACTION,
                deadline,
                "InitProducerId",
                move |node| {
                    Box::pin(async move {
                        init_producer_id_at(shared, Target::Node(node), producer_id, epoch).await
                    })
                },
            )
            .await
        }
        None => loop {
            match init_producer_id_at(shared, Target::Any, producer_id, epoch).await {
                Err(error) if error.is_retriable() && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(shared.config.retry_backoff_ms)).await;
                }
                other => return other,
            }
        },
    }
}

async fn init_producer_id_at(
    shared: &Shared,
    target: Target,
    producer_id: i64,
    epoch: i16,
) -> Result<(i64, i16), ProducerError> {
    let transactional_id = shared.config.transactional_id.as_deref();
    let timeout_ms = shared.config.transaction_timeout_ms;
    let response = shared
        .client
        .send(target, |version| {
            let request = InitProducerIdRequest::default()
                .with_transactional_id(transactional_id.map(|id| TransactionalId(text(id))))
                .with_transaction_timeout_ms(timeout_ms);
            if version >= 3 {
                request
                    .with_producer_id(ProducerId(producer_id))
                    .with_producer_epoch(epoch)
            } else {
                request
            }
        })
        .await?;
    ErrorCode(response.error_code)
        .check(None)
        .map_err(ProducerError::Api)?;
    Ok((response.producer_id.0, response.producer_epoch))
}

fn transactional_id(shared: &Shared) -> Result<String, ProducerError> {
    shared.config.transactional_id.clone().ok_or_else(|| {
        ProducerError::InvalidState("the producer has no transactional.id".to_string())
    })
}

/// Fails unless the transaction is open (and returns the producer id and epoch).
fn check_in_transaction(shared: &Shared) -> Result<(i64, i16), ProducerError> {
    let state = shared.lock();
    match &state.transaction.state {
        TxnState::InTransaction => Ok((state.producer_id, state.producer_epoch)),
        TxnState::AbortableError(error) | TxnState::FatalError(error) => Err(error.clone()),
        other => Err(ProducerError::InvalidState(format!(
            "no transaction is open ({other:?})"
        ))),
    }
}

/// Remembers a transactional call's error and returns it classified.
fn fail(shared: &Shared, error: ProducerError) -> ProducerError {
    let error = classify(error);
    shared.lock().transaction.fail(error.clone());
    error
}

pub(crate) async fn init_transactions(shared: &Shared) -> Result<(), ProducerError> {
    let id = transactional_id(shared)?;
    let id = id.as_str();
    match &shared.lock().transaction.state {
        TxnState::Uninitialized => {}
        TxnState::FatalError(error) => return Err(error.clone()),
        other => {
            return Err(ProducerError::InvalidState(format!(
                "init_transactions was already called ({other:?})"
            )));
        }
    }
    tracing::debug!(transactional_id = %id, "initializing transactions");
    let (producer_id, epoch) = init_producer_id(shared, None, deadline_for(shared))
        .await
        .map_err(|error| fail(shared, error))?;
    let mut state = shared.lock();
    state.producer_id = producer_id;
    state.producer_epoch = epoch;
    state.transaction.state = TxnState::Ready;
    sender::reset_sequences(&mut state);
    Ok(())
}

pub(crate) fn begin(shared: &Shared) -> Result<(), ProducerError> {
    transactional_id(shared)?;
    let mut state = shared.lock();
    match &state.transaction.state {
        TxnState::Ready => {}
        TxnState::FatalError(error) | TxnState::AbortableError(error) => return Err(error.clone()),
        other => {
            return Err(ProducerError::InvalidState(format!(
                "cannot begin a transaction in state {other:?}"
            )));
        }
    }
    let transaction = &mut state.transaction;
    transaction.state = TxnState::InTransaction;
    transaction.partitions.clear();
    transaction.offsets_added = false;
    Ok(())
}

/// AddPartitionsToTxn for a partition the transaction has not written to yet.
pub(crate) async fn add_partition(
    shared: &Shared,
    topic: &str,
    partition: i32,
    deadline: Instant,
) -> Result<(), ProducerError> {
    let (producer_id, epoch) = check_in_transaction(shared)?;
    let added = shared
        .lock()
        .transaction
        .partitions
        .get(topic)
        .is_some_and(|partitions| partitions.contains(&partition));
    if added {
        return Ok(());
    }
    let id = transactional_id(shared)?;
    let id = id.as_str();
    let result = at_coordinator(
        shared,
        id,
        COORDINATOR_TYPE_TRANSACTION,
        deadline,
        "AddPartitionsToTxn",
        move |node| {
            Box::pin(async move {
                let response = shared
                    .client
                    .send(Target::Node(node), |_version| {
                        AddPartitionsToTxnRequest::default()
                            .with_v3_and_below_transactional_id(TransactionalId(text(id)))
                            .with_v3_and_below_producer_id(ProducerId(producer_id))
                            .with_v3_and_below_producer_epoch(epoch)
                            .with_v3_and_below_topics(vec![
                                AddPartitionsToTxnTopic::default()
                                    .with_name(topic_name(topic))
                                    .with_partitions(vec![partition]),
                            ])
                    })
                    .await?;
                ErrorCode(response.error_code)
                    .check(None)
                    .map_err(ProducerError::Api)?;
                for result in response
                    .results_by_topic_v3_and_below
                    .iter()
                    .flat_map(|topic| topic.results_by_partition.iter())
                {
                    ErrorCode(result.partition_error_code)
                        .check(None)
                        .map_err(ProducerError::Api)?;
                }
                Ok(())
            })
        },
    )
    .await;
    match result {
        Ok(()) => {
            shared
                .lock()
                .transaction
                .partitions
                .entry(topic.to_string())
                .or_default()
                .insert(partition);
            Ok(())
        }
        Err(error) => Err(fail(shared, error)),
    }
}

pub(crate) async fn send_offsets(
    shared: &Shared,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    group: &ConsumerGroupMetadata,
) -> Result<(), ProducerError> {
    let (producer_id, epoch) = check_in_transaction(shared)?;
    let id = transactional_id(shared)?;
    let id = id.as_str();
    let deadline = deadline_for(shared);
    let result = async {
        at_coordinator(
            shared,
            id,
            COORDINATOR_TYPE_TRANSACTION,
            deadline,
            "AddOffsetsToTxn",
            move |node| {
                Box::pin(async move {
                    let response = shared
                        .client
                        .send(Target::Node(node), |_version| {
                            AddOffsetsToTxnRequest::default()
                                .with_transactional_id(TransactionalId(text(id)))
                                .with_producer_id(ProducerId(producer_id))
                                .with_producer_epoch(epoch)
                                .with_group_id(GroupId(text(&group.group_id)))
                        })
                        .await?;
                    ErrorCode(response.error_code)
                        .check(None)
                        .map_err(ProducerError::Api)
                })
            },
        )
        .await?;
        shared.lock().transaction.offsets_added = true;
        let mut topics: Vec<TxnOffsetCommitRequestTopic> = Vec::new();
        for (partition, offset) in offsets {
            let entry = TxnOffsetCommitRequestPartition::default()
                .with_partition_index(partition.partition)
                .with_committed_offset(offset.offset)
                .with_committed_leader_epoch(offset.leader_epoch.unwrap_or(-1))
                .with_committed_metadata(Some(text(&offset.metadata)));
            match topics
                .iter_mut()
                .find(|topic| topic.name.0.as_str() == partition.topic)
            {
                Some(topic) => topic.partitions.push(entry),
                None => topics.push(
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(topic_name(&partition.topic))
                        .with_partitions(vec![entry]),
                ),
            }
        }
        let topics = &topics;
        at_coordinator(
            shared,
            &group.group_id,
            COORDINATOR_TYPE_GROUP,
            deadline,
            "TxnOffsetCommit",
            move |node| {
                Box::pin(async move {
                    let topics = topics.clone();
                    let response = shared
                        .client
                        .send(Target::Node(node), |version| {
                            let request = TxnOffsetCommitRequest::default()
                                .with_transactional_id(TransactionalId(text(id)))
                                .with_group_id(GroupId(text(&group.group_id)))
                                .with_producer_id(ProducerId(producer_id))
                                .with_producer_epoch(epoch)
                                .with_topics(topics);
                            // v3+ (KIP-447): the coordinator fences zombies by member and generation.
                            if version >= 3 {
                                request
                                    .with_generation_id(group.generation_id)
                                    .with_member_id(text(&group.member_id))
                                    .with_group_instance_id(
                                        group.group_instance_id.as_deref().map(text),
                                    )
                            } else {
                                request
                            }
                        })
                        .await?;
                    for partition in response
                        .topics
                        .iter()
                        .flat_map(|topic| topic.partitions.iter())
                    {
                        ErrorCode(partition.error_code)
                            .check(None)
                            .map_err(ProducerError::Api)?;
                    }
                    Ok(())
                })
            },
        )
        .await
    }
    .await;
    result.map_err(|error| fail(shared, error))
}

pub(crate) fn check_can_abort(shared: &Shared) -> Result<(), ProducerError> {
    transactional_id(shared)?;
    match &shared.lock().transaction.state {
        TxnState::InTransaction | TxnState::AbortableError(_) => Ok(()),
        TxnState::FatalError(error) => Err(error.clone()),
        other => Err(ProducerError::InvalidState(format!(
            "no transaction to abort ({other:?})"
        ))),
    }
}

/// EndTxn (skipped when the transaction wrote nothing), then Ready again.
pub(crate) async fn end(shared: &Shared, commit: bool) -> Result<(), ProducerError> {
    let id = transactional_id(shared)?;
    let id = id.as_str();
    let (producer_id, epoch, wrote_something) = {
        let state = shared.lock();
        match &state.transaction.state {
            TxnState::InTransaction => {}
            TxnState::AbortableError(_) if !commit => {}
            TxnState::AbortableError(error) | TxnState::FatalError(error) => {
                return Err(error.clone());
            }
            other => {
                return Err(ProducerError::InvalidState(format!(
                    "no transaction to end ({other:?})"
                )));
            }
        }
        let transaction = &state.transaction;
        (
            state.producer_id,
            state.producer_epoch,
            transaction.offsets_added || transaction.partitions.values().any(|set| !set.is_empty()),
        )
    };
    let deadline = deadline_for(shared);
    if wrote_something {
        at_coordinator(
            shared,
            id,
            COORDINATOR_TYPE_TRANSACTION,
            deadline,
            "EndTxn",
            move |node| {
                Box::pin(async move {
                    let response = shared
                        .client
                        .send(Target::Node(node), |_version| {
                            EndTxnRequest::default()
                                .with_transactional_id(TransactionalId(text(id)))
                                .with_producer_id(ProducerId(producer_id))
                                .with_producer_epoch(epoch)
                                .with_committed(commit)
                        })
                        .await?;
                    ErrorCode(response.error_code)
                        .check(None)
                        .map_err(ProducerError::Api)
                })
            },
        )
        .await
        .map_err(|error| fail(shared, error))?;
    }
    let bump = {
        let mut state = shared.lock();
        let transaction = &mut state.transaction;
        transaction.state = TxnState::Ready;
        transaction.partitions.clear();
        transaction.offsets_added = false;
        std::mem::take(&mut transaction.epoch_bump_needed)
    };
    if bump {
        // KIP-360: a lost sequenced batch; the same producer id with the next epoch.
        let (producer_id, epoch) = init_producer_id(shared, Some((producer_id, epoch)), deadline)
            .await
            .map_err(|error| fail(shared, error))?;
        let mut state = shared.lock();
        state.producer_id = producer_id;
        state.producer_epoch = epoch;
        sender::reset_sequences(&mut state);
    }
    Ok(())
}
