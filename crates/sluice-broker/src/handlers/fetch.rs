//! Fetch: whole batches from each partition's log, with Kafka's limits (`max_bytes` for
//! the response, capped by the broker's `fetch.max.bytes` for consumers and
//! `replica.fetch.response.max.bytes` for followers; `partition_max_bytes` per
//! partition; the first batch always whole),
//! long polling (`min_bytes` / `max_wait_ms`: the request parks until enough bytes are
//! available or the wait ends), and incremental fetch sessions (KIP-227,
//! [`crate::fetch_session`]). v13+ names topics by id.
//!
//! Two kinds of fetcher, told apart by the replica id (`replica_id` before v15,
//! `replica_state.replica_id` from v15):
//!
//! - a consumer (-1) reads below the high watermark only, and parks on the high
//!   watermark; from v11 (KIP-392) a follower replica serves it too, up to the
//!   follower's own high watermark; before v11 only the leader does;
//! - a follower (a broker id in the partition's replica set) reads up to the leader's
//!   log end and parks on it; its fetch offset is its log end offset, which the leader
//!   records (caught-up time, high watermark, ISR expansion).
//!
//! Either kind sends the epoch of its last fetched batch (v12+); when the leader's epoch
//! cache disagrees with it the answer is `diverging_epoch` {epoch, end offset} and no
//! records (KIP-320 for consumers, truncation on fetch for followers).
//!
//! The last stable offset is the high watermark, or the first offset of the earliest
//! open transaction when that is lower. A read_committed consumer (isolation level 1)
//! reads below it only, and gets the aborted transactions in the range it read, from
//! the segments' transaction indexes (`.txnindex`).

use std::collections::BTreeMap;
use std::time::Duration;

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint,
    PartitionData,
};
use kafka_protocol::messages::*;
use sluice_metadata::MetadataImage;
use sluice_protocol::record_batch;
use sluice_storage::{StorageError, TopicPartition};

use super::common::{from_uuid, str_bytes, to_uuid, topic_name};
use crate::broker::Broker;
use crate::fetch_session::{SessionPartition, SessionPartitions, SessionUse};
use crate::replica::{Role, end_offset_for_epoch, leader_epoch_entries};
use crate::request::RequestContext;
use crate::{errors, replication};

/// One partition's answer before it is put in the response.
struct Fetched {
    error_code: i16,
    high_watermark: i64,
    /// The last stable offset: the high watermark, or the first offset of the earliest
    /// open transaction below it.
    last_stable_offset: i64,
    log_start_offset: i64,
    records: Bytes,
    /// read_committed: the aborted transactions (producer id, first offset) overlapping
    /// the records returned.
    aborted: Vec<(i64, i64)>,
    /// The leader's (epoch, end offset) when the fetcher's log diverges from it.
    diverging_epoch: Option<(i32, i64)>,
}

impl Fetched {
    fn error(error_code: i16) -> Fetched {
        Fetched {
            error_code,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            records: Bytes::new(),
            aborted: Vec::new(),
            diverging_epoch: None,
        }
    }
}

/// Who is fetching.
#[derive(Debug, Clone, Copy)]
struct Fetcher {
    /// -1 for a consumer; a broker id for a follower.
    replica_id: i32,
    /// The follower's broker epoch (v15+; -1 when not sent).
    replica_epoch: i64,
    version: i16,
    /// A consumer with isolation.level=read_committed: reads stop at the last stable
    /// offset and the response lists aborted transactions.
    read_committed: bool,
}

impl Fetcher {
    fn is_follower(&self) -> bool {
        self.replica_id >= 0
    }
}

/// What the request says per partition beyond the session's state.
#[derive(Debug, Clone, Copy, Default)]
struct PartitionRequest {
    last_fetched_epoch: i32,
    log_start_offset: i64,
}

pub async fn fetch(context: &RequestContext, request: FetchRequest) -> FetchResponse {
    let version = context.version;
    let broker = &context.broker;
    let image = broker.image();
    let by_id = version >= 13;
    let fetcher = fetcher_of(version, &request);
    let Requested {
        extras,
        requested,
        unknown,
        forgotten,
    } = requested_partitions(&image, by_id, &request);
    let (session, partitions) =
        match begin_session(broker, version, &request, requested, &forgotten) {
            Ok(resolved) => resolved,
            Err(response) => return response,
        };
    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let min_bytes = request.min_bytes.max(0) as usize;
    let reads = Reads {
        broker,
        image: &image,
        fetcher,
        partitions: &partitions,
        extras: &extras,
        max_bytes: response_max_bytes(broker, fetcher, &request),
    };
    let results = long_poll(&reads, min_bytes, deadline, !unknown.is_empty()).await;
    let (mut responses, leaders) =
        topic_responses(context, &image, fetcher, &session, &partitions, &results);
    let served: usize = results.values().map(|f| f.records.len()).sum();
    broker
        .replication
        .traffic
        .bytes_out
        .fetch_add(served as u64, std::sync::atomic::Ordering::Relaxed);
    responses.extend(unknown_topic_responses(by_id, unknown));
    let session_id = match session {
        SessionUse::New { id } | SessionUse::Incremental { id } => id,
        SessionUse::Sessionless => 0,
    };
    FetchResponse::default()
        .with_session_id(session_id)
        .with_responses(responses)
        .with_node_endpoints(leader_endpoints(context, &image, leaders))
}

/// Who sends `request`: the replica id and epoch from `replica_state` from v15, the
/// replica id alone before.
fn fetcher_of(version: i16, request: &FetchRequest) -> Fetcher {
    Fetcher {
        replica_id: if version >= 15 {
            request.replica_state.replica_id.0
        } else {
            request.replica_id.0
        },
        replica_epoch: if version >= 15 {
            request.replica_state.replica_epoch
        } else {
            -1
        },
        version,
        read_committed: request.isolation_level == 1,
    }
}

/// The request's partitions, resolved against the image.
struct Requested {
    /// Per-partition fields the session does not keep (only this request's partitions
    /// have them; the others fetch without a divergence check).
    extras: BTreeMap<(String, i32), PartitionRequest>,
    /// Requested partitions, keyed by name.
    requested: SessionPartitions,
    /// Topics the image does not know (id, name, partition): answered with an error and
    /// kept out of the session.
    unknown: Vec<(uuid::Uuid, String, i32)>,
    /// The partitions the request removes from its session.
    forgotten: Vec<(String, i32)>,
}

/// Resolves the request's partitions and forgotten partitions by name.
fn requested_partitions(image: &MetadataImage, by_id: bool, request: &FetchRequest) -> Requested {
    let mut extras: BTreeMap<(String, i32), PartitionRequest> = BTreeMap::new();
    let mut requested = SessionPartitions::new();
    let mut unknown: Vec<(uuid::Uuid, String, i32)> = Vec::new();
    for topic in &request.topics {
        let name = resolve(image, by_id, &topic.topic, &topic.topic_id);
        for p in &topic.partitions {
            match &name {
                Some((name, id)) => {
                    extras.insert(
                        (name.clone(), p.partition),
                        PartitionRequest {
                            last_fetched_epoch: p.last_fetched_epoch,
                            log_start_offset: p.log_start_offset,
                        },
                    );
                    requested.insert(
                        (name.clone(), p.partition),
                        SessionPartition {
                            topic_id: *id,
                            fetch_offset: p.fetch_offset,
                            partition_max_bytes: p.partition_max_bytes,
                            current_leader_epoch: p.current_leader_epoch,
                            last_sent: None,
                        },
                    );
                }
                None => unknown.push((topic.topic_id, topic.topic.0.to_string(), p.partition)),
            }
        }
    }
    let forgotten: Vec<(String, i32)> = request
        .forgotten_topics_data
        .iter()
        .filter_map(|t| {
            resolve(image, by_id, &t.topic, &t.topic_id)
                .map(|(name, _)| (name, t.partitions.clone()))
        })
        .flat_map(|(name, partitions)| partitions.into_iter().map(move |p| (name.clone(), p)))
        .collect();
    Requested {
        extras,
        requested,
        unknown,
        forgotten,
    }
}

/// The fetch session the request uses (v7+) and the partitions to read; a session
/// error is the whole response.
fn begin_session(
    broker: &Broker,
    version: i16,
    request: &FetchRequest,
    requested: SessionPartitions,
    forgotten: &[(String, i32)],
) -> Result<(SessionUse, SessionPartitions), FetchResponse> {
    if version >= 7 {
        broker
            .fetch_sessions
            .begin(
                request.session_id,
                request.session_epoch,
                requested,
                forgotten,
            )
            .map_err(|code| {
                FetchResponse::default()
                    .with_error_code(code.0)
                    .with_session_id(request.session_id)
            })
    } else {
        Ok((SessionUse::Sessionless, requested))
    }
}

/// The response's bound: what the request asks, capped by the broker as Kafka caps it
/// (`fetch.max.bytes` for consumers, `replica.fetch.response.max.bytes` for
/// followers). A request asking for 0 or less gets the first batch only (it still
/// comes whole), never an unbounded response.
fn response_max_bytes(broker: &Broker, fetcher: Fetcher, request: &FetchRequest) -> usize {
    let limits = &broker.config.settings().fetch;
    let broker_max_bytes = if fetcher.is_follower() {
        limits.replica_response_max_bytes
    } else {
        limits.max_bytes
    };
    i64::from(request.max_bytes).clamp(0, broker_max_bytes.max(0)) as usize
}

/// What one pass of [`read_all`] reads, for [`long_poll`].
struct Reads<'a> {
    broker: &'a Arc<Broker>,
    image: &'a MetadataImage,
    fetcher: Fetcher,
    partitions: &'a SessionPartitions,
    extras: &'a BTreeMap<(String, i32), PartitionRequest>,
    max_bytes: usize,
}

impl Reads<'_> {
    fn read(&self, record_fetch: bool) -> BTreeMap<(String, i32), Fetched> {
        read_all(
            self.broker,
            self.image,
            self.fetcher,
            self.partitions,
            self.extras,
            self.max_bytes,
            record_fetch,
        )
    }
}

/// Reads the partitions, parking until at least `min_bytes` are there, a partition
/// answers with an error or a divergence (or `has_unknown`: the request named an
/// unknown topic), or `deadline` passes (then reads once more).
async fn long_poll(
    reads: &Reads<'_>,
    min_bytes: usize,
    deadline: tokio::time::Instant,
    has_unknown: bool,
) -> BTreeMap<(String, i32), Fetched> {
    let Reads {
        broker,
        image,
        fetcher,
        partitions,
        ..
    } = *reads;
    // A follower waits for its leader's log to grow; a consumer for the high watermark.
    let mut watches: Vec<_> = partitions
        .keys()
        .filter_map(|(topic, partition)| {
            let replica = broker.replica(topic, *partition)?;
            replication::ensure_current(&broker.replication, topic, *partition, &replica, image);
            Some(if fetcher.is_follower() {
                replica.subscribe()
            } else {
                replica.subscribe_high_watermark()
            })
        })
        .collect();
    let mut first_read = true;
    loop {
        for watch in &mut watches {
            watch.mark_unchanged();
        }
        let results = reads.read(std::mem::take(&mut first_read));
        let bytes: usize = results.values().map(|f| f.records.len()).sum();
        let has_error = results
            .values()
            .any(|f| f.error_code != errors::NONE || f.diverging_epoch.is_some())
            || has_unknown;
        if bytes >= min_bytes || has_error || watches.is_empty() {
            break results;
        }
        // Park until a partition grows or the wait ends.
        let changed = futures_any(&mut watches);
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break reads.read(false);
        }
    }
}

/// The response's topics for the read partitions, in request order per topic (BTreeMap
/// order by name), filtering unchanged partitions out of incremental responses; and the
/// leaders named in NOT_LEADER_OR_FOLLOWER answers (KIP-951, v16+).
fn topic_responses(
    context: &RequestContext,
    image: &MetadataImage,
    fetcher: Fetcher,
    session: &SessionUse,
    partitions: &SessionPartitions,
    results: &BTreeMap<(String, i32), Fetched>,
) -> (Vec<FetchableTopicResponse>, Vec<i32>) {
    let broker = &context.broker;
    let version = fetcher.version;
    let by_id = version >= 13;
    let read_committed = fetcher.read_committed;
    let mut leaders: Vec<i32> = Vec::new();
    let mut topics: BTreeMap<String, FetchableTopicResponse> = BTreeMap::new();
    for ((topic, partition), state) in partitions {
        let fetched = &results[&(topic.clone(), *partition)];
        if let SessionUse::Incremental { id } | SessionUse::New { id } = *session {
            let news = !fetched.records.is_empty() || fetched.error_code != errors::NONE;
            let include = broker.fetch_sessions.note_sent(
                id,
                &(topic.clone(), *partition),
                fetched.high_watermark,
                fetched.log_start_offset,
                news,
            );
            if matches!(session, SessionUse::Incremental { .. }) && !include {
                continue;
            }
        }
        let entry = topics.entry(topic.clone()).or_insert_with(|| {
            let response = FetchableTopicResponse::default();
            if by_id {
                response.with_topic_id(to_uuid(state.topic_id))
            } else {
                response.with_topic(topic_name(topic.clone()))
            }
        });
        let mut data = PartitionData::default()
            .with_partition_index(*partition)
            .with_error_code(fetched.error_code)
            .with_high_watermark(fetched.high_watermark)
            .with_last_stable_offset(fetched.last_stable_offset)
            .with_log_start_offset(fetched.log_start_offset)
            .with_aborted_transactions(read_committed.then(|| {
                fetched
                    .aborted
                    .iter()
                    .map(|(producer_id, first_offset)| {
                        AbortedTransaction::default()
                            .with_producer_id(ProducerId(*producer_id))
                            .with_first_offset(*first_offset)
                    })
                    .collect()
            }))
            .with_records(Some(fetched.records.clone()));
        if let Some((epoch, end_offset)) = fetched.diverging_epoch {
            data.diverging_epoch = EpochEndOffset::default()
                .with_epoch(epoch)
                .with_end_offset(end_offset);
        }
        if version >= 16
            && fetched.error_code == errors::NOT_LEADER_OR_FOLLOWER
            && let Some(p) = image.topic(topic).and_then(|t| t.partitions.get(partition))
        {
            data.current_leader = LeaderIdAndEpoch::default()
                .with_leader_id(p.leader.into())
                .with_leader_epoch(p.leader_epoch);
            if p.leader >= 0 && !leaders.contains(&p.leader) {
                leaders.push(p.leader);
            }
        }
        entry.partitions.push(data);
    }
    (topics.into_values().collect(), leaders)
}

/// The answers for partitions of topics the image does not know.
fn unknown_topic_responses(
    by_id: bool,
    unknown: Vec<(uuid::Uuid, String, i32)>,
) -> Vec<FetchableTopicResponse> {
    let mut responses = Vec::new();
    for (id, name, partition) in unknown {
        let code = if by_id {
            errors::UNKNOWN_TOPIC_ID
        } else {
            errors::UNKNOWN_TOPIC_OR_PARTITION
        };
        let data = PartitionData::default()
            .with_partition_index(partition)
            .with_error_code(code)
            .with_high_watermark(-1)
            .with_last_stable_offset(-1)
            .with_log_start_offset(-1)
            .with_records(Some(Bytes::new()));
        let response = if by_id {
            FetchableTopicResponse::default().with_topic_id(id)
        } else {
            FetchableTopicResponse::default().with_topic(topic_name(name))
        };
        responses.push(response.with_partitions(vec![data]));
    }
    responses
}

/// The endpoints of `leaders` on the request's listener (KIP-951).
fn leader_endpoints(
    context: &RequestContext,
    image: &MetadataImage,
    leaders: Vec<i32>,
) -> Vec<NodeEndpoint> {
    leaders
        .into_iter()
        .filter_map(|id| {
            let endpoint = Broker::endpoint_of(image, id, &context.listener)?;
            Some(
                NodeEndpoint::default()
                    .with_node_id(id.into())
                    .with_host(str_bytes(endpoint.host))
                    .with_port(i32::from(endpoint.port))
                    .with_rack(image.broker(id).and_then(|b| b.rack.clone()).map(str_bytes)),
            )
        })
        .collect()
}

/// The topic's name and id: by id for v13+, by name before.
fn resolve(
    image: &MetadataImage,
    by_id: bool,
    name: &TopicName,
    id: &uuid::Uuid,
) -> Option<(String, sluice_metadata::Uuid)> {
    let topic = if by_id {
        image.topic_by_id(&from_uuid(id))
    } else {
        image.topic(&name.0)
    }?;
    Some((topic.name.clone(), topic.topic_id))
}

/// Waits until any watched log end offset changes.
async fn futures_any(watches: &mut [tokio::sync::watch::Receiver<i64>]) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
    let mut tasks = Vec::with_capacity(watches.len());
    for watch in watches.iter() {
        let mut watch = watch.clone();
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            if watch.changed().await.is_ok() {
                let _ = tx.send(()).await;
            }
        }));
    }
    drop(tx);
    let _ = rx.recv().await;
    for task in tasks {
        task.abort();
    }
}

/// Reads every partition once, honouring the response and partition byte limits; the
/// first partition with data returns at least one whole batch. `record_fetch`: a
/// follower's first read of this request records its fetch on the leader (as Kafka's,
/// a re-read after parking does not).
fn read_all(
    broker: &Arc<Broker>,
    image: &MetadataImage,
    fetcher: Fetcher,
    partitions: &SessionPartitions,
    extras: &BTreeMap<(String, i32), PartitionRequest>,
    max_bytes: usize,
    record_fetch: bool,
) -> BTreeMap<(String, i32), Fetched> {
    let mut remaining = max_bytes;
    let mut first_with_data = true;
    partitions
        .iter()
        .map(|((topic, partition), state)| {
            let key = (topic.clone(), *partition);
            let extra = extras.get(&key).copied().unwrap_or(PartitionRequest {
                last_fetched_epoch: -1,
                log_start_offset: -1,
            });
            let read = ReadLimits {
                bytes: (state.partition_max_bytes.max(0) as usize).min(remaining) as u64,
                first_with_data,
            };
            let fetched = read_partition(
                broker,
                image,
                fetcher,
                topic,
                *partition,
                state,
                extra,
                read,
                record_fetch,
            );
            if !fetched.records.is_empty() {
                first_with_data = false;
                remaining = remaining.saturating_sub(fetched.records.len());
            }
            (key, fetched)
        })
        .collect()
}

#[derive(Debug, Clone, Copy)]
struct ReadLimits {
    bytes: u64,
    first_with_data: bool,
}

/// One partition's read (Kafka's `Partition.fetchRecords`): the epoch and role checks,
/// the divergence check, the read, and for a follower the leader's bookkeeping.
#[allow(clippy::too_many_arguments)]
fn read_partition(
    broker: &Arc<Broker>,
    image: &MetadataImage,
    fetcher: Fetcher,
    topic: &str,
    partition: i32,
    request: &SessionPartition,
    extra: PartitionRequest,
    limits: ReadLimits,
    record_fetch: bool,
) -> Fetched {
    let Some(replica) = broker.replica(topic, partition) else {
        return Fetched::error(errors::UNKNOWN_TOPIC_OR_PARTITION);
    };
    if request.partition_max_bytes < 0 {
        return Fetched::error(errors::INVALID_FETCH_SIZE);
    }
    let mut state = replica.state();
    let epoch = if state.role == Role::None {
        replica.leader_epoch()
    } else {
        state.leader_epoch
    };
    match request.current_leader_epoch {
        requested if requested < 0 || requested == epoch => {}
        requested if requested < epoch => return Fetched::error(errors::FENCED_LEADER_EPOCH),
        _ => return Fetched::error(errors::UNKNOWN_LEADER_EPOCH),
    }
    // Followers and old consumers fetch from the leader only; v11+ consumers from any
    // replica (KIP-392).
    let leader_only = fetcher.is_follower() || fetcher.version < 11;
    let serves = match state.role {
        Role::Leader => true,
        Role::Follower { .. } => !leader_only,
        Role::None => false,
    };
    if !serves {
        return Fetched::error(errors::NOT_LEADER_OR_FOLLOWER);
    }
    if fetcher.is_follower() {
        if !state.replicas.contains(&fetcher.replica_id) {
            return Fetched::error(if request.current_leader_epoch >= 0 {
                errors::UNKNOWN_LEADER_EPOCH
            } else {
                errors::NOT_LEADER_OR_FOLLOWER
            });
        }
        // A fetch from an older incarnation of the follower is fenced.
        let registered = image
            .broker(fetcher.replica_id)
            .map_or(-1, |b| b.broker_epoch);
        if fetcher.replica_epoch >= 0 && registered > fetcher.replica_epoch {
            return Fetched::error(errors::NOT_LEADER_OR_FOLLOWER);
        }
    }
    let high_watermark = state.high_watermark;
    let log = sluice_storage::lock(&replica.log);
    let log_end_offset = log.log_end_offset();
    let log_start_offset = log.log_start_offset();
    let last_stable_offset = log
        .first_unstable_offset()
        .map_or(high_watermark, |first| first.min(high_watermark));
    // An out-of-range fetch carries no offsets (-1), as Kafka's `createLogReadResult`
    // answers it: a client then asks ListOffsets where to go instead of trusting a log
    // start offset that retention may already have passed (librdkafka resets to a
    // "cached" offset when one is given, and loses the race with a fast retention).
    let answer = |error_code: i16, records: Bytes, diverging_epoch| Fetched {
        error_code,
        high_watermark: if error_code == errors::OFFSET_OUT_OF_RANGE {
            -1
        } else {
            high_watermark
        },
        last_stable_offset: if error_code == errors::OFFSET_OUT_OF_RANGE {
            -1
        } else {
            last_stable_offset
        },
        log_start_offset: if error_code == errors::OFFSET_OUT_OF_RANGE {
            -1
        } else {
            log_start_offset
        },
        records,
        aborted: Vec::new(),
        diverging_epoch,
    };
    if extra.last_fetched_epoch >= 0 {
        let entries = if state.is_leader() {
            leader_epoch_entries(
                log.leader_epochs().entries(),
                state.leader_epoch,
                state.leader_epoch_start_offset,
            )
        } else {
            log.leader_epochs().entries().to_vec()
        };
        match end_offset_for_epoch(&entries, extra.last_fetched_epoch, log_end_offset) {
            None => return answer(errors::OFFSET_OUT_OF_RANGE, Bytes::new(), None),
            Some(_) if request.fetch_offset < log_start_offset => {
                return answer(errors::OFFSET_OUT_OF_RANGE, Bytes::new(), None);
            }
            Some((found_epoch, end_offset))
                if found_epoch < extra.last_fetched_epoch || end_offset < request.fetch_offset =>
            {
                return answer(errors::NONE, Bytes::new(), Some((found_epoch, end_offset)));
            }
            Some(_) => {}
        }
    }
    let max_offset = if fetcher.is_follower() {
        None
    } else if fetcher.read_committed {
        Some(last_stable_offset)
    } else {
        Some(high_watermark)
    };
    let records = match log.read(
        request.fetch_offset,
        limits.bytes,
        max_offset,
        limits.first_with_data,
    ) {
        Ok(data) => data.records,
        Err(StorageError::OffsetOutOfRange { .. }) => {
            return answer(errors::OFFSET_OUT_OF_RANGE, Bytes::new(), None);
        }
        Err(error) => {
            tracing::error!(%error, partition = %topic, "fetch read failed");
            return answer(errors::KAFKA_STORAGE_ERROR, Bytes::new(), None);
        }
    };
    let aborted = if fetcher.read_committed && !records.is_empty() {
        let upper_bound = last_batch_end(&records).unwrap_or(last_stable_offset);
        match log.collect_aborted_transactions(request.fetch_offset, upper_bound) {
            Ok(list) => list
                .into_iter()
                .map(|txn| (txn.producer_id, txn.first_offset))
                .collect(),
            Err(error) => {
                tracing::error!(%error, partition = %topic, "reading the transaction index failed");
                return answer(errors::KAFKA_STORAGE_ERROR, Bytes::new(), None);
            }
        }
    } else {
        Vec::new()
    };
    drop(log);
    if fetcher.is_follower() && record_fetch {
        // Kafka's updateFollowerFetchState: the follower's log ends at its fetch
        // offset; the HW may move and the follower may join the ISR.
        let now = sluice_storage::now_ms();
        let lag_max_ms = broker.replication.settings().lag_time_max_ms;
        if let Some(follower) = state.follower_mut(fetcher.replica_id) {
            follower.update_fetch_state(
                request.fetch_offset,
                extra.log_start_offset,
                now,
                log_end_offset,
            );
        }
        let tp = TopicPartition::new(topic, partition);
        let expansion = replication::maybe_expand_isr(
            &broker.replication,
            &tp,
            &replica,
            &mut state,
            fetcher.replica_id,
        );
        if state.maybe_increment_high_watermark(log_end_offset, now, lag_max_ms) {
            replica.publish_high_watermark(&state);
        }
        drop(state);
        if let Some(proposal) = expansion {
            replication::submit_alter_partition(&broker.replication, &tp, &replica, proposal);
        }
    }
    Fetched {
        aborted,
        ..answer(errors::NONE, records, None)
    }
}

/// The offset after the last batch in `records` (whole batches, as read).
fn last_batch_end(records: &Bytes) -> Option<i64> {
    let mut position = 0usize;
    let mut end = None;
    while let Some(size) = record_batch::batch_size_at(&records[position..]) {
        if position + size > records.len() || size < record_batch::RECORD_BATCH_OVERHEAD {
            break;
        }
        let header = record_batch::BatchHeader::new(&records[position..position + size])?;
        end = Some(header.next_offset());
        position += size;
    }
    end
}
