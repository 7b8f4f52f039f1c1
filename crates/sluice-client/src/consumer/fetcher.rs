//! Fetch requests and what their responses hold (Java's `Fetcher` and
//! `CompletedFetch`): one sessionless Fetch per leader broker for the partitions it
//! leads (session id 0, epoch -1: the broker answers for every partition asked), the
//! decoding of record batches into [`ConsumerRecord`]s, and ListOffsets for resets.
//!
//! Decoding follows Java's rules: batches wholly before the fetch offset are skipped
//! and so are records below it inside a batch (a compressed batch is returned whole);
//! a trailing partial batch ends the data; control batches are never returned; under
//! `read_committed` a transactional batch is dropped while its producer is in the
//! aborted list (entered when the batch reaches the aborted transaction's first offset,
//! left at the producer's ABORT marker). The next fetch offset is the end of the last
//! batch looked at, so a response of only control or aborted batches still moves the
//! position forward.
//!
//! Cost per batch: one CRC32C pass (`check.crcs`), one decompression into one buffer
//! that the records' keys, values and headers share (no copy per record).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::{AbortedTransaction, FetchResponse};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, ListOffsetsRequest};
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::batches;
use sluice_protocol::varint::{varint_size, varlong_size};

use crate::client::{Client, Target, topic_name};
use crate::consumer::ConsumerRecord;
use crate::consumer::config::{ConsumerConfig, IsolationLevel};
use crate::error::{ApiError, Error, ErrorCode};
use crate::groups::TopicPartition;

/// ListOffsets' special timestamps.
pub(crate) const EARLIEST_TIMESTAMP: i64 = -2;
pub(crate) const LATEST_TIMESTAMP: i64 = -1;

/// The control record type of an abort marker (key: version i16, type i16).
const ABORT_MARKER: i16 = 0;

/// One Fetch to one broker: (partition, fetch offset, leader epoch or -1).
#[derive(Debug, Clone)]
pub(crate) struct FetchPlan {
    pub node: i32,
    pub partitions: Vec<(TopicPartition, i64, i32)>,
}

/// What a fetch returned for one partition.
#[derive(Debug)]
pub(crate) struct PartitionData {
    pub partition: TopicPartition,
    pub fetch_offset: i64,
    pub error: ErrorCode,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub records: Vec<ConsumerRecord>,
    /// Each record's encoded size, as Kafka counts consumed bytes.
    pub record_sizes: Vec<u32>,
    /// Where the next fetch starts once `records` are consumed.
    pub next_offset: i64,
}

/// Sends `plan` and returns the response (run in a task of its own).
pub(crate) async fn fetch(
    client: &Client,
    plan: &FetchPlan,
    config: &ConsumerConfig,
) -> Result<FetchResponse, Error> {
    let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
    for (partition, offset, epoch) in &plan.partitions {
        topics.entry(&partition.topic).or_default().push(
            FetchPartition::default()
                .with_partition(partition.partition)
                .with_fetch_offset(*offset)
                .with_current_leader_epoch(*epoch)
                .with_partition_max_bytes(config.max_partition_fetch_bytes),
        );
    }
    client
        .send(Target::Node(plan.node), |version| {
            let topics = topics
                .iter()
                .map(|(name, partitions)| {
                    let partitions = partitions
                        .iter()
                        .map(|p| {
                            if version >= 9 {
                                p.clone()
                            } else {
                                p.clone().with_current_leader_epoch(-1)
                            }
                        })
                        .collect();
                    FetchTopic::default()
                        .with_topic(topic_name(name))
                        .with_partitions(partitions)
                })
                .collect();
            let request = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(config.fetch_max_wait_ms)
                .with_min_bytes(config.fetch_min_bytes)
                .with_max_bytes(config.fetch_max_bytes)
                .with_isolation_level(config.isolation_level.wire())
                .with_session_id(0)
                .with_session_epoch(-1)
                .with_topics(topics);
            if version >= 11 {
                request.with_rack_id(StrBytes::from_string(config.client_rack.clone()))
            } else {
                request
            }
        })
        .await
}

/// Splits a Fetch response into per-partition results, decoding records.
pub(crate) fn parse_response(
    plan: &FetchPlan,
    response: FetchResponse,
    isolation_level: IsolationLevel,
    check_crcs: bool,
) -> Vec<Result<PartitionData, (TopicPartition, Error)>> {
    let offsets: BTreeMap<&TopicPartition, i64> = plan
        .partitions
        .iter()
        .map(|(p, offset, _)| (p, *offset))
        .collect();
    let mut results = Vec::new();
    let top_level = ErrorCode(response.error_code);
    for topic in response.responses {
        for data in topic.partitions {
            let partition = TopicPartition::new(topic.topic.to_string(), data.partition_index);
            let Some(&fetch_offset) = offsets.get(&partition) else {
                continue;
            };
            let error = if top_level != ErrorCode::NONE {
                top_level
            } else {
                ErrorCode(data.error_code)
            };
            let mut result = PartitionData {
                partition: partition.clone(),
                fetch_offset,
                error,
                high_watermark: data.high_watermark,
                last_stable_offset: data.last_stable_offset,
                log_start_offset: data.log_start_offset,
                records: Vec::new(),
                record_sizes: Vec::new(),
                next_offset: fetch_offset,
            };
            if error == ErrorCode::NONE {
                let aborted = if isolation_level == IsolationLevel::ReadCommitted {
                    data.aborted_transactions.unwrap_or_default()
                } else {
                    Vec::new()
                };
                match decode_sized(
                    &partition,
                    fetch_offset,
                    data.records.unwrap_or_default(),
                    aborted,
                    isolation_level,
                    check_crcs,
                ) {
                    Ok((records, record_sizes, next_offset)) => {
                        result.records = records;
                        result.record_sizes = record_sizes;
                        result.next_offset = next_offset;
                    }
                    Err(error) => {
                        results.push(Err((partition, error)));
                        continue;
                    }
                }
            }
            results.push(Ok(result));
        }
    }
    results
}

/// The records at or after `fetch_offset` in `bytes`, and the next fetch offset.
#[cfg(test)]
pub(crate) fn decode(
    partition: &TopicPartition,
    fetch_offset: i64,
    bytes: Bytes,
    aborted: Vec<AbortedTransaction>,
    isolation_level: IsolationLevel,
    check_crcs: bool,
) -> Result<(Vec<ConsumerRecord>, i64), Error> {
    let (records, sizes, next_offset) = decode_sized(
        partition,
        fetch_offset,
        bytes,
        aborted,
        isolation_level,
        check_crcs,
    )?;
    assert_eq!(records.len(), sizes.len());
    Ok((records, next_offset))
}

/// The records at or after `fetch_offset` in `bytes`, each record's encoded size, and
/// the next fetch offset.
pub(crate) fn decode_sized(
    partition: &TopicPartition,
    fetch_offset: i64,
    bytes: Bytes,
    mut aborted: Vec<AbortedTransaction>,
    isolation_level: IsolationLevel,
    check_crcs: bool,
) -> Result<(Vec<ConsumerRecord>, Vec<u32>, i64), Error> {
    let corrupt = |reason: String| Error::Protocol {
        address: format!("the leader of {partition}"),
        reason,
    };
    // Aborted transactions in first-offset order; entered as batches reach them.
    aborted.sort_by_key(|transaction| std::cmp::Reverse(transaction.first_offset));
    let mut aborted_producers: HashSet<i64> = HashSet::new();
    let mut records = Vec::new();
    let mut record_sizes = Vec::new();
    let mut next_offset = fetch_offset;
    for batch in batches(bytes) {
        let batch = match batch {
            Ok(batch) => batch,
            // A fetch may end inside a batch (the size limits cut it): stop there.
            Err(sluice_protocol::BatchError::Truncated { .. }) => break,
            Err(error) if records.is_empty() && next_offset == fetch_offset => {
                return Err(corrupt(format!(
                    "record batch at offset {fetch_offset}: {error}"
                )));
            }
            Err(_) => break,
        };
        if batch.next_offset() <= fetch_offset {
            continue;
        }
        if check_crcs {
            batch
                .verify_crc()
                .map_err(|error| corrupt(format!("batch at {}: {error}", batch.base_offset())))?;
        }
        if isolation_level == IsolationLevel::ReadCommitted {
            while aborted
                .last()
                .is_some_and(|transaction| transaction.first_offset <= batch.last_offset())
            {
                let transaction = aborted.pop().expect("checked by last()");
                aborted_producers.insert(transaction.producer_id.0);
            }
        }
        if batch.is_control() {
            if is_abort_marker(&batch) {
                aborted_producers.remove(&batch.producer_id());
            }
            next_offset = batch.next_offset();
            continue;
        }
        if isolation_level == IsolationLevel::ReadCommitted
            && batch.is_transactional()
            && aborted_producers.contains(&batch.producer_id())
        {
            next_offset = batch.next_offset();
            continue;
        }
        let leader_epoch =
            (batch.partition_leader_epoch() >= 0).then_some(batch.partition_leader_epoch());
        let decoded = batch
            .records()
            .map_err(|error| corrupt(format!("batch at {}: {error}", batch.base_offset())))?;
        for record in decoded {
            let record = record
                .map_err(|error| corrupt(format!("batch at {}: {error}", batch.base_offset())))?;
            let offset = batch.base_offset() + i64::from(record.offset_delta);
            if offset < fetch_offset {
                continue;
            }
            record_sizes.push(record_size_bytes(&record));
            records.push(ConsumerRecord {
                topic: partition.topic.clone(),
                partition: partition.partition,
                offset,
                timestamp: batch.record_timestamp(&record),
                timestamp_type: batch.timestamp_type(),
                key: record.key,
                value: record.value,
                headers: record.headers,
                leader_epoch,
            });
        }
        next_offset = batch.next_offset();
    }
    debug_assert!(
        records
            .windows(2)
            .all(|pair| pair[0].offset < pair[1].offset)
    );
    Ok((records, record_sizes, next_offset))
}

/// A record's encoded size in its batch (Kafka's `DefaultRecord.sizeInBytes`: the
/// length varint and the body), what Kafka counts as consumed bytes.
fn record_size_bytes(record: &sluice_protocol::Record) -> u32 {
    let nullable = |bytes: Option<&[u8]>| {
        bytes.map_or(1, |bytes| {
            varint_size(i32::try_from(bytes.len()).unwrap_or(i32::MAX)) + bytes.len()
        })
    };
    let headers: usize = record
        .headers
        .iter()
        .map(|header| nullable(Some(&header.key)) + nullable(header.value.as_deref()))
        .sum();
    let body = 1
        + varlong_size(record.timestamp_delta)
        + varint_size(record.offset_delta)
        + nullable(record.key.as_deref())
        + nullable(record.value.as_deref())
        + varint_size(i32::try_from(record.headers.len()).unwrap_or(i32::MAX))
        + headers;
    let total = varint_size(i32::try_from(body).unwrap_or(i32::MAX)) + body;
    u32::try_from(total).unwrap_or(u32::MAX)
}

/// Whether a control batch is an abort marker (its one record's key: version, type).
fn is_abort_marker(batch: &sluice_protocol::RecordBatch) -> bool {
    let Ok(mut records) = batch.records() else {
        return false;
    };
    match records.next() {
        Some(Ok(record)) => record
            .key
            .as_deref()
            .filter(|key| key.len() >= 4)
            .is_some_and(|key| i16::from_be_bytes([key[2], key[3]]) == ABORT_MARKER),
        _ => false,
    }
}

/// ListOffsets to each leader: (partition → offset) for `timestamps`, or the error.
pub(crate) async fn list_offsets(
    client: &Client,
    requests: &BTreeMap<i32, Vec<(TopicPartition, i64, i32)>>,
    isolation_level: IsolationLevel,
    timeout_ms: u64,
) -> BTreeMap<TopicPartition, Result<(i64, Option<i32>), Error>> {
    let mut results = BTreeMap::new();
    for (node, partitions) in requests {
        let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
        for (partition, timestamp, epoch) in partitions {
            topics.entry(&partition.topic).or_default().push(
                ListOffsetsPartition::default()
                    .with_partition_index(partition.partition)
                    .with_timestamp(*timestamp)
                    .with_current_leader_epoch(*epoch),
            );
        }
        let response = client
            .send(Target::Node(*node), |version| {
                let topics = topics
                    .iter()
                    .map(|(name, list)| {
                        let list = list
                            .iter()
                            .map(|p| {
                                if version >= 4 {
                                    p.clone()
                                } else {
                                    p.clone().with_current_leader_epoch(-1)
                                }
                            })
                            .collect();
                        ListOffsetsTopic::default()
                            .with_name(topic_name(name))
                            .with_partitions(list)
                    })
                    .collect();
                let mut request = ListOffsetsRequest::default()
                    .with_replica_id(BrokerId(-1))
                    .with_topics(topics);
                if version >= 2 {
                    request = request.with_isolation_level(isolation_level.wire());
                }
                if version >= 10 {
                    request =
                        request.with_timeout_ms(i32::try_from(timeout_ms).unwrap_or(i32::MAX));
                }
                request
            })
            .await;
        let asked: BTreeSet<&TopicPartition> = partitions.iter().map(|(p, _, _)| p).collect();
        match response {
            Ok(response) => {
                for topic in response.topics {
                    for p in topic.partitions {
                        let partition =
                            TopicPartition::new(topic.name.to_string(), p.partition_index);
                        if !asked.contains(&partition) {
                            continue;
                        }
                        let result = match ErrorCode(p.error_code) {
                            ErrorCode::NONE => {
                                Ok((p.offset, (p.leader_epoch >= 0).then_some(p.leader_epoch)))
                            }
                            code => Err(Error::Api(ApiError {
                                code,
                                message: None,
                            })),
                        };
                        results.insert(partition, result);
                    }
                }
            }
            Err(error) => {
                let reason = error.to_string();
                for partition in asked {
                    results.insert(
                        partition.clone(),
                        Err(Error::Disconnected {
                            address: format!("node {node}"),
                            reason: reason.clone(),
                        }),
                    );
                }
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::ProducerId;
    use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};

    fn batch(
        base_offset: i64,
        values: &[&str],
        producer: Option<i64>,
        control_abort: Option<bool>,
    ) -> Vec<u8> {
        let mut builder = RecordBatchBuilder::new(Compression::Gzip).base_offset(base_offset);
        if let Some(producer_id) = producer {
            builder = builder.producer(producer_id, 0, 0).transactional(true);
        }
        if let Some(abort) = control_abort {
            builder = builder.control(true);
            let key = [0u8, 0, 0, if abort { 0 } else { 1 }];
            builder
                .append(&NewRecord {
                    timestamp: 1,
                    key: Some(Bytes::copy_from_slice(&key)),
                    value: Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0])),
                    headers: Vec::new(),
                })
                .unwrap();
        } else {
            for value in values {
                builder
                    .append(&NewRecord {
                        timestamp: 1_000,
                        key: None,
                        value: Some(Bytes::copy_from_slice(value.as_bytes())),
                        headers: Vec::new(),
                    })
                    .unwrap();
            }
        }
        builder.build().to_vec()
    }

    fn values(records: &[ConsumerRecord]) -> Vec<(i64, String)> {
        records
            .iter()
            .map(|r| {
                (
                    r.offset,
                    String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn record_sizes_are_the_encoded_sizes_kafka_counts_as_consumed_bytes() {
        // Keys, values, headers of every length class (null, empty, one- and two-byte
        // varint lengths) and timestamps far from the batch's first.
        let mut builder = RecordBatchBuilder::new(Compression::Lz4);
        let records = [
            (0, None, None, vec![]),
            (1, Some(""), Some("v"), vec![("h", None)]),
            (
                -5_000_000,
                Some("key"),
                Some(&*"x".repeat(200)),
                vec![("h", Some("1"))],
            ),
            (
                1 << 40,
                None,
                Some(&*"y".repeat(20_000)),
                vec![("a", Some("")), ("b", None)],
            ),
        ];
        for (timestamp, key, value, headers) in &records {
            builder
                .append(&NewRecord {
                    timestamp: *timestamp,
                    key: key.map(|key| Bytes::copy_from_slice(key.as_bytes())),
                    value: value.map(|value| Bytes::copy_from_slice(value.as_bytes())),
                    headers: headers
                        .iter()
                        .map(|(key, value)| sluice_protocol::Header {
                            key: Bytes::copy_from_slice(key.as_bytes()),
                            value: value.map(|value| Bytes::copy_from_slice(value.as_bytes())),
                        })
                        .collect(),
                })
                .unwrap();
        }
        let (decoded, sizes, _) = decode_sized(
            &TopicPartition::new("t", 0),
            0,
            builder.build(),
            Vec::new(),
            IsolationLevel::ReadUncommitted,
            true,
        )
        .unwrap();
        assert_eq!(decoded.len(), records.len());
        let total: usize = sizes.iter().map(|size| *size as usize).sum();
        assert_eq!(total, builder.records_size_bytes());
    }

    #[test]
    fn records_below_the_fetch_offset_are_skipped_and_partial_batches_end_the_data() {
        let tp = TopicPartition::new("t", 0);
        let mut bytes = batch(0, &["a", "b", "c"], None, None);
        bytes.extend(batch(3, &["d"], None, None));
        let partial = batch(4, &["e"], None, None);
        bytes.extend_from_slice(&partial[..partial.len() - 3]);
        let (records, next) = decode(
            &tp,
            1,
            Bytes::from(bytes),
            Vec::new(),
            IsolationLevel::ReadUncommitted,
            true,
        )
        .unwrap();
        assert_eq!(
            values(&records),
            vec![(1, "b".into()), (2, "c".into()), (3, "d".into())]
        );
        assert_eq!(next, 4);
    }

    #[test]
    fn read_committed_drops_aborted_transactions_and_control_batches() {
        let tp = TopicPartition::new("t", 0);
        let mut bytes = batch(0, &["aborted1", "aborted2"], Some(7), None);
        bytes.extend(batch(2, &["plain"], None, None));
        bytes.extend(batch(3, &[], Some(7), Some(true)));
        bytes.extend(batch(4, &["committed"], Some(7), None));
        bytes.extend(batch(5, &[], Some(7), Some(false)));
        let aborted = vec![
            AbortedTransaction::default()
                .with_producer_id(ProducerId(7))
                .with_first_offset(0),
        ];
        let bytes = Bytes::from(bytes);
        let (records, next) = decode(
            &tp,
            0,
            bytes.clone(),
            aborted,
            IsolationLevel::ReadCommitted,
            true,
        )
        .unwrap();
        assert_eq!(
            values(&records),
            vec![(2, "plain".into()), (4, "committed".into())]
        );
        assert_eq!(next, 6);
        let (records, _) = decode(
            &tp,
            0,
            bytes,
            Vec::new(),
            IsolationLevel::ReadUncommitted,
            true,
        )
        .unwrap();
        assert_eq!(records.len(), 4, "read_uncommitted sees every data record");
    }
}
