//! Fetch: whole batches from each partition's log up to the high watermark, with Kafka's
//! limits (`max_bytes` for the response, `partition_max_bytes` per partition, the first
//! batch always whole), long polling (`min_bytes` / `max_wait_ms`: the request parks
//! until enough bytes are appended or the wait ends), and incremental fetch sessions
//! (KIP-227, [`crate::fetch_session`]). v13+ names topics by id.
//!
//! On a single node the high watermark is the log end offset (the ISR is the leader
//! alone), and with no transactions yet the last stable offset equals it.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::*;
use sluice_metadata::MetadataImage;
use sluice_storage::StorageError;

use super::{from_uuid, to_uuid, topic_name};
use crate::apis::RequestContext;
use crate::broker::Broker;
use crate::errors;
use crate::fetch_session::{SessionPartition, SessionPartitions, SessionUse};

/// One partition's answer before it is put in the response.
struct Fetched {
    error_code: i16,
    high_watermark: i64,
    log_start_offset: i64,
    records: Bytes,
}

pub async fn fetch(context: &RequestContext, request: FetchRequest) -> FetchResponse {
    let version = context.version;
    let broker = &context.broker;
    let image = broker.image();
    let by_id = version >= 13;
    let read_committed = request.isolation_level == 1;

    // Requested partitions, keyed by name; topics the image does not know are answered
    // with an error and kept out of the session.
    let mut requested = SessionPartitions::new();
    let mut unknown: Vec<(uuid::Uuid, String, i32)> = Vec::new();
    for topic in &request.topics {
        let name = resolve(&image, by_id, &topic.topic, &topic.topic_id);
        for p in &topic.partitions {
            match &name {
                Some((name, id)) => {
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
            resolve(&image, by_id, &t.topic, &t.topic_id)
                .map(|(name, _)| (name, t.partitions.clone()))
        })
        .flat_map(|(name, partitions)| partitions.into_iter().map(move |p| (name.clone(), p)))
        .collect();

    let (session, partitions) = if version >= 7 {
        match broker.fetch_sessions.begin(
            request.session_id,
            request.session_epoch,
            requested,
            &forgotten,
        ) {
            Ok(resolved) => resolved,
            Err(code) => {
                return FetchResponse::default()
                    .with_error_code(code)
                    .with_session_id(request.session_id);
            }
        }
    } else {
        (SessionUse::Sessionless, requested)
    };

    let deadline =
        tokio::time::Instant::now() + Duration::from_millis(request.max_wait_ms.max(0) as u64);
    let min_bytes = request.min_bytes.max(0) as usize;
    let max_bytes = if request.max_bytes <= 0 {
        i32::MAX as usize
    } else {
        request.max_bytes as usize
    };
    let mut watches: Vec<_> = partitions
        .keys()
        .filter_map(|(topic, partition)| broker.replica(topic, *partition))
        .map(|r| r.subscribe())
        .collect();
    let results = loop {
        for watch in &mut watches {
            watch.mark_unchanged();
        }
        let results = read_all(broker, &partitions, max_bytes);
        let bytes: usize = results.values().map(|f| f.records.len()).sum();
        let has_error =
            results.values().any(|f| f.error_code != errors::NONE) || !unknown.is_empty();
        if bytes >= min_bytes || has_error || watches.is_empty() {
            break results;
        }
        // Park until a partition grows or the wait ends.
        let changed = futures_any(&mut watches);
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            break read_all(broker, &partitions, max_bytes);
        }
    };

    // Assemble, in request order per topic (BTreeMap order by name), filtering unchanged
    // partitions out of incremental responses.
    let mut topics: BTreeMap<String, FetchableTopicResponse> = BTreeMap::new();
    for ((topic, partition), state) in &partitions {
        let fetched = &results[&(topic.clone(), *partition)];
        if let SessionUse::Incremental { id } | SessionUse::New { id } = session {
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
        let data = PartitionData::default()
            .with_partition_index(*partition)
            .with_error_code(fetched.error_code)
            .with_high_watermark(fetched.high_watermark)
            .with_last_stable_offset(fetched.high_watermark)
            .with_log_start_offset(fetched.log_start_offset)
            .with_aborted_transactions(read_committed.then(Vec::new))
            .with_records(Some(fetched.records.clone()));
        entry.partitions.push(data);
    }
    let mut responses: Vec<FetchableTopicResponse> = topics.into_values().collect();
    let served: usize = results.values().map(|f| f.records.len()).sum();
    broker
        .traffic
        .bytes_out
        .fetch_add(served as u64, std::sync::atomic::Ordering::Relaxed);
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
    let session_id = match session {
        SessionUse::New { id } | SessionUse::Incremental { id } => id,
        SessionUse::Sessionless => 0,
    };
    FetchResponse::default()
        .with_session_id(session_id)
        .with_responses(responses)
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
/// first partition with data returns at least one whole batch.
fn read_all(
    broker: &Broker,
    partitions: &SessionPartitions,
    max_bytes: usize,
) -> BTreeMap<(String, i32), Fetched> {
    let mut remaining = max_bytes;
    let mut first_with_data = true;
    partitions
        .iter()
        .map(|((topic, partition), state)| {
            let key = (topic.clone(), *partition);
            let Some(replica) = broker.replica(topic, *partition) else {
                return (
                    key,
                    Fetched {
                        error_code: errors::UNKNOWN_TOPIC_OR_PARTITION,
                        high_watermark: -1,
                        log_start_offset: -1,
                        records: Bytes::new(),
                    },
                );
            };
            let epoch = replica.leader_epoch();
            let log = sluice_storage::lock(&replica.log);
            let high_watermark = log.log_end_offset();
            let log_start_offset = log.log_start_offset();
            let fenced = match state.current_leader_epoch {
                requested if requested < 0 || requested == epoch => None,
                requested if requested < epoch => Some(errors::FENCED_LEADER_EPOCH),
                _ => Some(errors::UNKNOWN_LEADER_EPOCH),
            };
            let (error_code, records) = if let Some(code) = fenced {
                (code, Bytes::new())
            } else if state.partition_max_bytes < 0 {
                (errors::INVALID_FETCH_SIZE, Bytes::new())
            } else {
                let limit = (state.partition_max_bytes.max(0) as usize).min(remaining) as u64;
                match log.read(
                    state.fetch_offset,
                    limit,
                    Some(high_watermark),
                    first_with_data,
                ) {
                    Ok(data) => (errors::NONE, data.records),
                    Err(StorageError::OffsetOutOfRange { .. }) => {
                        (errors::OFFSET_OUT_OF_RANGE, Bytes::new())
                    }
                    Err(error) => {
                        tracing::error!(%error, partition = %topic, "fetch read failed");
                        (errors::KAFKA_STORAGE_ERROR, Bytes::new())
                    }
                }
            };
            if !records.is_empty() {
                first_with_data = false;
                remaining = remaining.saturating_sub(records.len());
            }
            (
                key,
                Fetched {
                    error_code,
                    high_watermark,
                    log_start_offset,
                    records,
                },
            )
        })
        .collect()
}
