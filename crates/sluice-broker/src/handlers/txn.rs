//! The transaction APIs: InitProducerId with a transactional id, AddPartitionsToTxn
//! (every version Kafka 4.1 accepts: the client's v0-3 and the brokers' batched v4-5,
//! verify-only included), AddOffsetsToTxn, EndTxn, WriteTxnMarkers, TxnOffsetCommit,
//! ListTransactions and DescribeTransactions. The state machine is
//! [`sluice_txn`]'s; [`crate::txn`] persists its writes and delivers its markers.
//!
//! KIP-890 on the data path lives here too ([`add_or_verify`]): a partition leader
//! about to append a producer's first transactional batch asks the coordinator whether
//! the partition is in the transaction (part 1, verify-only, for transactions v1
//! clients) or adds it (part 2, transactions v2: clients no longer send
//! AddPartitionsToTxn, and TxnOffsetCommit v5 adds the offsets partition itself).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedTransaction,
};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedTransaction;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::*;
use sluice_group::records::OffsetValue;
use sluice_protocol::ErrorCode;

use super::common::{str_bytes, topic_name};
use crate::broker::Broker;
use crate::errors;
use crate::features;
use crate::group::{OFFSETS_TOPIC, OffsetsRecord, offset_record};
use crate::replication::LeaderConnection;
use crate::request::RequestContext;
use crate::txn::{self, TRANSACTION_STATE_TOPIC};

type Partitions = Vec<(String, i32)>;

fn opt_string(text: &Option<kafka_protocol::protocol::StrBytes>) -> Option<String> {
    text.as_ref().map(|t| t.to_string())
}

/// The transaction version a client request runs under: the cluster's finalized
/// `transaction.version`, capped at 1 for requests older than the v2 protocol.
fn transaction_version(broker: &Broker, v2_request: bool) -> i16 {
    let finalized = features::transaction_version(&broker.image());
    if v2_request {
        finalized.max(2)
    } else {
        finalized.min(1)
    }
}

// -- InitProducerId ----------------------------------------------------------------------

/// InitProducerId with a transactional id (the idempotent case is in `producer_id`).
pub async fn init_transactional(
    context: &RequestContext,
    request: &InitProducerIdRequest,
    transactional_id: String,
) -> InitProducerIdResponse {
    let broker = &context.broker;
    let failed = |code: i16| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    // An id must fit the state record's key (a 16-bit length), as any Kafka string.
    if transactional_id.is_empty() || transactional_id.len() > i16::MAX as usize {
        return failed(errors::INVALID_REQUEST);
    }
    let shard = match broker.transactions.shard_for(&transactional_id) {
        Ok(shard) => shard,
        Err(code) => return failed(code.0),
    };
    // Allocated before the shard is locked (allocation may wait for the metadata
    // quorum); used only when the state machine needs a new id, else wasted as Kafka
    // may waste one.
    let spare = match broker.allocate_producer_id().await {
        Ok(id) => id,
        Err(error) => {
            tracing::error!(%error, "producer id allocation failed");
            return failed(errors::COORDINATOR_NOT_AVAILABLE);
        }
    };
    let mut spare = Some(spare);
    let mut allocate = move || spare.take().ok_or(ErrorCode::CONCURRENT_TRANSACTIONS);
    let tv = transaction_version(broker, false);
    let now = sluice_storage::now_ms();
    let step = txn::step(&broker.transactions, &shard, |state| {
        state.init_producer_id(
            &transactional_id,
            request.transaction_timeout_ms,
            request.producer_id.0,
            request.producer_epoch,
            tv,
            now,
            &mut allocate,
        )
    });
    let (result, code) = txn::run_step(&broker.transactions, &shard, step).await;
    if code != errors::NONE {
        return failed(code);
    }
    if result.error != errors::NONE {
        return failed(sluice_txn::errors::init_producer_id_error_for_version(
            result.error,
            context.version,
        ));
    }
    InitProducerIdResponse::default()
        .with_producer_id(ProducerId(result.producer_id))
        .with_producer_epoch(result.producer_epoch)
}

// -- AddPartitionsToTxn ------------------------------------------------------------------

/// Adds partitions to (or, verify-only, checks them against) a transaction this node
/// coordinates: per partition NONE or the error code.
async fn add_local(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer: (i64, i16),
    partitions: &[(String, i32)],
    verify_only: bool,
    api_version: i16,
) -> Vec<((String, i32), i16)> {
    let all = |code: i16| partitions.iter().map(|tp| (tp.clone(), code)).collect();
    let shard = match broker.transactions.shard_for(transactional_id) {
        Ok(shard) => shard,
        Err(code) => return all(code.0),
    };
    if verify_only {
        return shard.lock().verify_partitions(
            transactional_id,
            producer.0,
            producer.1,
            partitions,
        );
    }
    let now = sluice_storage::now_ms();
    let step = txn::step(&broker.transactions, &shard, |state| {
        state.add_partitions(
            transactional_id,
            producer.0,
            producer.1,
            partitions,
            api_version,
            now,
        )
    });
    let (code, write_code) = txn::run_step(&broker.transactions, &shard, step).await;
    all(if write_code != errors::NONE {
        write_code
    } else {
        code
    })
}

/// Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION and the others
/// OPERATION_NOT_ATTEMPTED, as Kafka answers a request naming one it does not know.
fn check_partitions(
    broker: &Broker,
    partitions: &[(String, i32)],
) -> Option<Vec<((String, i32), i16)>> {
    let image = broker.image();
    let unknown = |(topic, partition): &(String, i32)| {
        image
            .topic(topic)
            .is_none_or(|t| !t.partitions.contains_key(partition))
    };
    if !partitions.iter().any(unknown) {
        return None;
    }
    Some(
        partitions
            .iter()
            .map(|tp| {
                let code = if unknown(tp) {
                    errors::UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    errors::OPERATION_NOT_ATTEMPTED
                };
                (tp.clone(), code)
            })
            .collect(),
    )
}

fn partitions_of(topics: &[AddPartitionsToTxnTopic]) -> Partitions {
    topics
        .iter()
        .flat_map(|t| {
            let name = t.name.0.to_string();
            t.partitions.iter().map(move |p| (name.clone(), *p))
        })
        .collect()
}

fn topic_results(results: Vec<((String, i32), i16)>) -> Vec<AddPartitionsToTxnTopicResult> {
    let mut by_topic: BTreeMap<String, Vec<AddPartitionsToTxnPartitionResult>> = BTreeMap::new();
    for ((topic, partition), code) in results {
        by_topic.entry(topic).or_default().push(
            AddPartitionsToTxnPartitionResult::default()
                .with_partition_index(partition)
                .with_partition_error_code(code),
        );
    }
    by_topic
        .into_iter()
        .map(|(topic, partitions)| {
            AddPartitionsToTxnTopicResult::default()
                .with_name(topic_name(topic))
                .with_results_by_partition(partitions)
        })
        .collect()
}

pub async fn add_partitions_to_txn(
    context: &RequestContext,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let broker = &context.broker;
    let version = context.version;
    if version <= 3 {
        let partitions = partitions_of(&request.v3_and_below_topics);
        let results = match check_partitions(broker, &partitions) {
            Some(results) => results,
            None => {
                add_local(
                    broker,
                    &request.v3_and_below_transactional_id.0,
                    (
                        request.v3_and_below_producer_id.0,
                        request.v3_and_below_producer_epoch,
                    ),
                    &partitions,
                    false,
                    version,
                )
                .await
            }
        };
        return AddPartitionsToTxnResponse::default()
            .with_results_by_topic_v3_and_below(topic_results(results));
    }
    // v4+: brokers (partition leaders, group coordinators) batch transactions.
    let mut results = Vec::with_capacity(request.transactions.len());
    for transaction in &request.transactions {
        let partitions = partitions_of(&transaction.topics);
        let outcome = match check_partitions(broker, &partitions) {
            Some(results) => results,
            None => {
                add_local(
                    broker,
                    &transaction.transactional_id.0,
                    (transaction.producer_id.0, transaction.producer_epoch),
                    &partitions,
                    transaction.verify_only,
                    version,
                )
                .await
            }
        };
        results.push(
            AddPartitionsToTxnResult::default()
                .with_transactional_id(transaction.transactional_id.clone())
                .with_topic_results(topic_results(outcome)),
        );
    }
    AddPartitionsToTxnResponse::default().with_results_by_transaction(results)
}

/// KIP-890 on the data path: adds `partitions` to the transaction (transactions v2) or
/// verifies they are in it (v1), at the transaction's coordinator, wherever it is.
/// Returns NONE when the append may go ahead, else the code to answer with.
pub async fn add_or_verify(
    broker: &Arc<Broker>,
    transactional_id: &str,
    producer: (i64, i16),
    partitions: &[(String, i32)],
    verify_only: bool,
) -> i16 {
    let image = broker.image();
    let Some(topic) = image.topic(TRANSACTION_STATE_TOPIC) else {
        return errors::COORDINATOR_NOT_AVAILABLE;
    };
    let partition =
        sluice_txn::records::partition_for(transactional_id, topic.partitions.len() as i32);
    let leader = topic.partitions.get(&partition).map_or(-1, |p| p.leader);
    let results = if leader == broker.node_id {
        add_local(
            broker,
            transactional_id,
            producer,
            partitions,
            verify_only,
            5,
        )
        .await
    } else if leader < 0 {
        return errors::COORDINATOR_NOT_AVAILABLE;
    } else {
        match add_remote(
            broker,
            leader,
            transactional_id,
            producer,
            partitions,
            verify_only,
        )
        .await
        {
            Ok(results) => results,
            Err(code) => return code.0,
        }
    };
    results
        .into_iter()
        .map(|(_, code)| code)
        .find(|code| *code != errors::NONE)
        .unwrap_or(errors::NONE)
}

/// AddPartitionsToTxn v5 (verify-only or not) to the coordinator on broker `leader`.
async fn add_remote(
    broker: &Arc<Broker>,
    leader: i32,
    transactional_id: &str,
    producer: (i64, i16),
    partitions: &[(String, i32)],
    verify_only: bool,
) -> Result<Vec<((String, i32), i16)>, ErrorCode> {
    let settings = broker.replication.settings();
    let endpoint = Broker::endpoint_of(&broker.image(), leader, &settings.listener)
        .ok_or(ErrorCode::COORDINATOR_NOT_AVAILABLE)?;
    let timeout = Duration::from_millis(settings.socket_timeout_ms);
    let mut connection = LeaderConnection::connect(
        &endpoint.host,
        endpoint.port,
        timeout,
        settings.frame_max_bytes,
        format!("broker-{}-txn-verification", broker.node_id),
    )
    .await
    .map_err(|_| ErrorCode::COORDINATOR_NOT_AVAILABLE)?;
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (topic, partition) in partitions {
        topics.entry(topic).or_default().push(*partition);
    }
    let request = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(str_bytes(transactional_id)))
            .with_producer_id(ProducerId(producer.0))
            .with_producer_epoch(producer.1)
            .with_verify_only(verify_only)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(topic, indexes)| {
                        AddPartitionsToTxnTopic::default()
                            .with_name(topic_name(topic.to_string()))
                            .with_partitions(indexes)
                    })
                    .collect(),
            ),
    ]);
    let response = connection
        .call(&request, 5, timeout)
        .await
        .map_err(|_| ErrorCode::COORDINATOR_NOT_AVAILABLE)?;
    if response.error_code != errors::NONE {
        return Err(ErrorCode(response.error_code));
    }
    Ok(response
        .results_by_transaction
        .into_iter()
        .flat_map(|t| t.topic_results)
        .flat_map(|t| {
            let name = t.name.0.to_string();
            t.results_by_partition
                .into_iter()
                .map(move |p| ((name.clone(), p.partition_index), p.partition_error_code))
        })
        .collect())
}

// -- AddOffsetsToTxn ---------------------------------------------------------------------

/// The `__consumer_offsets` partition of a group (the topic is created if needed).
async fn offsets_partition(broker: &Broker, group_id: &str) -> Result<i32, ErrorCode> {
    super::groups::ensure_offsets_topic(broker)
        .await
        .map_err(|_| ErrorCode::COORDINATOR_NOT_AVAILABLE)?;
    let partitions = broker
        .image()
        .topic(OFFSETS_TOPIC)
        .map_or(0, |t| t.partitions.len() as i32);
    if partitions == 0 {
        return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    Ok(sluice_group::records::partition_for(group_id, partitions))
}

pub async fn add_offsets_to_txn(
    context: &RequestContext,
    request: AddOffsetsToTxnRequest,
) -> AddOffsetsToTxnResponse {
    let broker = &context.broker;
    let partition = match offsets_partition(broker, &request.group_id.0).await {
        Ok(partition) => partition,
        Err(code) => return AddOffsetsToTxnResponse::default().with_error_code(code.0),
    };
    let results = add_local(
        broker,
        &request.transactional_id.0,
        (request.producer_id.0, request.producer_epoch),
        &[(OFFSETS_TOPIC.to_string(), partition)],
        false,
        context.version,
    )
    .await;
    let code = results.first().map_or(errors::NONE, |(_, code)| *code);
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

// -- EndTxn ------------------------------------------------------------------------------

pub async fn end_txn(context: &RequestContext, request: EndTxnRequest) -> EndTxnResponse {
    let broker = &context.broker;
    let transactional_id = request.transactional_id.0.to_string();
    let failed = |code: i16| {
        EndTxnResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    let shard = match broker.transactions.shard_for(&transactional_id) {
        Ok(shard) => shard,
        Err(code) => return failed(code.0),
    };
    // Kafka's transactionVersionForEndTxn: EndTxn v5+ runs transactions v2, older
    // versions TV_0 (whatever the cluster's level: the client did not bump epochs).
    let tv = if context.version >= 5 { 2 } else { 0 };
    let spare = if tv >= 2 {
        broker.allocate_producer_id().await.ok()
    } else {
        None
    };
    let mut spare = spare;
    let mut allocate = move || spare.take().ok_or(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    let now = sluice_storage::now_ms();
    let step = txn::step(&broker.transactions, &shard, |state| {
        state.end_txn(
            &transactional_id,
            request.producer_id.0,
            request.producer_epoch,
            request.committed,
            context.version,
            tv,
            now,
            &mut allocate,
        )
    });
    let (result, code) = txn::run_step(&broker.transactions, &shard, step).await;
    if code != errors::NONE {
        return failed(code);
    }
    EndTxnResponse::default()
        .with_error_code(result.error)
        .with_producer_id(ProducerId(result.producer_id))
        .with_producer_epoch(result.producer_epoch)
}

// -- WriteTxnMarkers (from a coordinator on another broker) -------------------------------

pub async fn write_txn_markers(
    context: &RequestContext,
    request: WriteTxnMarkersRequest,
) -> WriteTxnMarkersResponse {
    let broker = &context.broker;
    let mut markers = Vec::with_capacity(request.markers.len());
    for marker in &request.markers {
        let partitions: Partitions = marker
            .topics
            .iter()
            .flat_map(|t| {
                let name = t.name.0.to_string();
                t.partition_indexes.iter().map(move |p| (name.clone(), *p))
            })
            .collect();
        let written = txn::write_marker_to(
            &broker.transactions,
            sluice_storage::TxnMarker {
                producer_id: marker.producer_id.0,
                producer_epoch: marker.producer_epoch,
                coordinator_epoch: marker.coordinator_epoch,
                commit: marker.transaction_result,
            },
            &partitions,
        )
        .await;
        let mut by_topic: BTreeMap<String, Vec<WritableTxnMarkerPartitionResult>> = BTreeMap::new();
        for ((topic, partition), code) in written {
            by_topic.entry(topic).or_default().push(
                WritableTxnMarkerPartitionResult::default()
                    .with_partition_index(partition)
                    .with_error_code(code),
            );
        }
        markers.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(marker.producer_id)
                .with_topics(
                    by_topic
                        .into_iter()
                        .map(|(topic, partitions)| {
                            WritableTxnMarkerTopicResult::default()
                                .with_name(topic_name(topic))
                                .with_partitions(partitions)
                        })
                        .collect(),
                ),
        );
    }
    WriteTxnMarkersResponse::default().with_markers(markers)
}

// -- TxnOffsetCommit ---------------------------------------------------------------------

pub async fn txn_offset_commit(
    context: &RequestContext,
    request: TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
    let version = context.version;
    let broker = &context.broker;
    let group_id = request.group_id.0.to_string();
    let respond = |codes: &dyn Fn(&str, i32) -> i16| {
        TxnOffsetCommitResponse::default().with_topics(
            request
                .topics
                .iter()
                .map(|t| {
                    TxnOffsetCommitResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    TxnOffsetCommitResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(codes(&t.name.0, p.partition_index))
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    };
    if group_id.is_empty() {
        return respond(&|_, _| errors::INVALID_GROUP_ID);
    }
    let shard = match broker.groups.shard_for(&group_id) {
        Ok(shard) => shard,
        Err(code) => return respond(&|_, _| code.0),
    };
    let producer = (request.producer_id.0, request.producer_epoch);
    // Transactions v2 (v5): the group coordinator adds its partition to the
    // transaction itself (the client sent no AddOffsetsToTxn).
    if version >= 5 {
        let partition = shard.partition;
        let code = add_or_verify(
            broker,
            &request.transactional_id.0,
            producer,
            &[(OFFSETS_TOPIC.to_string(), partition)],
            false,
        )
        .await;
        if code != errors::NONE {
            let code = if code == errors::PRODUCER_FENCED || code == errors::INVALID_PRODUCER_EPOCH
            {
                errors::INVALID_PRODUCER_EPOCH
            } else {
                code
            };
            return respond(&|_, _| code);
        }
    }
    let image = broker.image();
    let max_metadata = broker.config.settings().offset_metadata_max_bytes;
    let now = sluice_storage::now_ms();
    let mut codes: BTreeMap<(String, i32), i16> = BTreeMap::new();
    let mut values: Vec<((String, i32), OffsetValue)> = Vec::new();
    for topic in &request.topics {
        let name = topic.name.0.to_string();
        let known = image.topic(&name);
        for p in &topic.partitions {
            let metadata = opt_string(&p.committed_metadata).unwrap_or_default();
            let code = if known.is_none_or(|t| !t.partitions.contains_key(&p.partition_index)) {
                errors::UNKNOWN_TOPIC_OR_PARTITION
            } else if metadata.len() > max_metadata {
                errors::OFFSET_METADATA_TOO_LARGE
            } else {
                values.push((
                    (name.clone(), p.partition_index),
                    OffsetValue {
                        offset: p.committed_offset,
                        leader_epoch: if version >= 2 {
                            p.committed_leader_epoch
                        } else {
                            -1
                        },
                        metadata,
                        commit_timestamp: now,
                        expire_timestamp: None,
                    },
                ));
                errors::NONE
            };
            codes.insert((name.clone(), p.partition_index), code);
        }
    }
    let member_id = request.member_id.to_string();
    let instance = opt_string(&request.group_instance_id);
    let generation = request.generation_id;
    let written = {
        let state = shard.lock();
        // v3+ carry the member: Kafka checks it as for OffsetCommit when given.
        let check = match state.groups.get(&group_id) {
            Some(g) if version >= 3 && (generation >= 0 || !member_id.is_empty()) => {
                g.validate_offset_commit(&member_id, instance.as_deref(), generation)
            }
            None if version >= 3 && generation >= 0 => Err(ErrorCode::ILLEGAL_GENERATION),
            _ => Ok(()),
        };
        if let Err(code) = check {
            drop(state);
            return respond(&|_, _| code.0);
        }
        if values.is_empty() {
            None
        } else {
            let records: Vec<OffsetsRecord> = values
                .iter()
                .map(|((topic, partition), value)| {
                    offset_record(&group_id, topic, *partition, Some(value))
                })
                .collect();
            Some(
                broker
                    .groups
                    .append_transactional(&shard, &records, producer),
            )
        }
    };
    let write_code = match written {
        None => errors::NONE,
        Some(Err(code)) => code.0,
        Some(Ok((log_partition, required))) => {
            let code = broker.groups.await_commit(log_partition, required).await;
            if code == errors::NONE {
                shard
                    .lock()
                    .add_pending_txn(producer.0, group_id.clone(), values, required - 1);
            }
            code
        }
    };
    let write_code = match write_code {
        errors::INVALID_PRODUCER_EPOCH | errors::PRODUCER_FENCED => errors::INVALID_PRODUCER_EPOCH,
        other => other,
    };
    respond(
        &|topic, partition| match codes.get(&(topic.to_string(), partition)) {
            Some(&errors::NONE) | None => write_code,
            Some(code) => *code,
        },
    )
}

// -- ListTransactions / DescribeTransactions ----------------------------------------------

pub async fn list_transactions(
    context: &RequestContext,
    request: ListTransactionsRequest,
) -> ListTransactionsResponse {
    let broker = &context.broker;
    let states: Vec<String> = request
        .state_filters
        .iter()
        .map(|s| s.to_string())
        .collect();
    let unknown: Vec<_> = request
        .state_filters
        .iter()
        .filter(|s| sluice_txn::state::TxnState::from_name(s).is_none())
        .cloned()
        .collect();
    let producer_ids: Vec<i64> = request.producer_id_filters.iter().map(|p| p.0).collect();
    let duration = if context.version >= 1 {
        request.duration_filter
    } else {
        -1
    };
    // v2: a transactional id pattern (KIP-1152), matched against the whole id.
    let pattern = match request
        .transactional_id_pattern
        .as_ref()
        .filter(|p| context.version >= 2 && !p.is_empty())
    {
        None => None,
        Some(pattern) => match regex::Regex::new(&format!("^(?:{})$", pattern.as_str())) {
            Ok(regex) => Some(regex),
            Err(_) => {
                return ListTransactionsResponse::default()
                    .with_error_code(errors::INVALID_REGULAR_EXPRESSION);
            }
        },
    };
    let now = sluice_storage::now_ms();
    let mut listed = Vec::new();
    let mut loading = false;
    if broker
        .image()
        .topic(TRANSACTION_STATE_TOPIC)
        .is_some_and(|t| t.partitions.values().any(|p| p.leader == broker.node_id))
        && broker.transactions.loaded_shards().is_empty()
    {
        loading = true;
    }
    for shard in broker.transactions.loaded_shards() {
        let state = shard.lock();
        let matches = |id: &str| pattern.as_ref().is_none_or(|p| p.is_match(id));
        for meta in state.list_filtered_matching(&states, &producer_ids, duration, now, &matches) {
            listed.push(
                ListedTransaction::default()
                    .with_transactional_id(TransactionalId(str_bytes(&meta.transactional_id)))
                    .with_producer_id(ProducerId(meta.producer_id))
                    .with_transaction_state(str_bytes(meta.state.name())),
            );
        }
    }
    ListTransactionsResponse::default()
        .with_error_code(if loading {
            errors::COORDINATOR_LOAD_IN_PROGRESS
        } else {
            errors::NONE
        })
        .with_unknown_state_filters(unknown)
        .with_transaction_states(listed)
}

pub async fn describe_transactions(
    context: &RequestContext,
    request: DescribeTransactionsRequest,
) -> DescribeTransactionsResponse {
    let broker = &context.broker;
    let described = request
        .transactional_ids
        .iter()
        .map(|id| {
            let transactional_id = id.0.to_string();
            let response = DescribedTransaction::default()
                .with_transactional_id(id.clone())
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1)
                .with_transaction_start_time_ms(-1);
            let shard = match broker.transactions.shard_for(&transactional_id) {
                Ok(shard) => shard,
                Err(code) => return response.with_error_code(code.0),
            };
            let state = shard.lock();
            let Some(meta) = state.describe(&transactional_id) else {
                return response.with_error_code(errors::TRANSACTIONAL_ID_NOT_FOUND);
            };
            let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for (topic, partition) in &meta.partitions {
                topics.entry(topic).or_default().push(*partition);
            }
            response
                .with_transaction_state(str_bytes(meta.state.name()))
                .with_transaction_timeout_ms(meta.timeout_ms)
                .with_transaction_start_time_ms(meta.txn_start_ms)
                .with_producer_id(ProducerId(meta.producer_id))
                .with_producer_epoch(meta.producer_epoch)
                .with_topics(
                    topics
                        .into_iter()
                        .map(|(topic, partitions)| {
                            TopicData::default()
                                .with_topic(topic_name(topic.to_string()))
                                .with_partitions(partitions)
                        })
                        .collect(),
                )
        })
        .collect();
    DescribeTransactionsResponse::default().with_transaction_states(described)
}
