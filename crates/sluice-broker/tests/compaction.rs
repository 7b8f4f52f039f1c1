//! Compacted topics (`cleanup.policy=compact`) over the wire: a record without a key is
//! refused with INVALID_RECORD and the index of the first keyless record, as Kafka's
//! LogValidator does; keyed records are appended; the broker's log cleaner compacts the
//! guide's example, and keeps `__consumer_offsets` and `__transaction_state` bounded
//! under repeated commits.

mod common;

use bytes::Bytes;
use common::{TestNode, Wire};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, ErrorCode, NewRecord, RecordBatchBuilder};

const INVALID_RECORD: i16 = ErrorCode::INVALID_RECORD.0;

async fn produce(
    wire: &mut Wire,
    keys: &[Option<&str>],
) -> produce_response::PartitionProduceResponse {
    let records: Vec<(Option<&str>, &str)> = keys.iter().map(|k| (*k, "v")).collect();
    produce_values(wire, &records).await
}

async fn produce_values(
    wire: &mut Wire,
    records: &[(Option<&str>, &str)],
) -> produce_response::PartitionProduceResponse {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for (key, value) in records {
        builder
            .append(&NewRecord {
                timestamp: sluice_storage::now_ms(),
                key: key.map(|k| Bytes::copy_from_slice(k.as_bytes())),
                value: Some(Bytes::copy_from_slice(value.as_bytes())),
                headers: Vec::new(),
            })
            .unwrap();
    }
    let request = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("compacted")))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(builder.build())),
                ]),
        ]);
    wire.call(&request, 9).await.responses[0].partition_responses[0].clone()
}

#[tokio::test]
async fn a_compacted_topic_refuses_records_without_a_key() {
    let node = TestNode::start(&[]).await;
    assert_eq!(
        common::create_assigned(
            node.address,
            "compacted",
            &[1],
            &[("cleanup.policy", "compact")]
        )
        .await,
        0
    );
    let mut wire = Wire::connect(node.address).await;
    let keyed = produce(&mut wire, &[Some("a"), Some("b")]).await;
    assert_eq!((keyed.error_code, keyed.base_offset), (0, 0));
    let refused = produce(&mut wire, &[Some("a"), None, None]).await;
    assert_eq!(refused.error_code, INVALID_RECORD);
    assert_eq!(refused.record_errors.len(), 1, "{refused:?}");
    assert_eq!(refused.record_errors[0].batch_index, 1);
    assert_eq!(
        refused.error_message.as_deref(),
        Some("Compacted topic cannot accept message without key in topic partition compacted-0.")
    );
    // Nothing of the refused batch was written.
    let next = produce(&mut wire, &[Some("c")]).await;
    assert_eq!((next.error_code, next.base_offset), (0, 2));
    node.stop().await;
}

/// Node settings for a cleaner that runs often.
const CLEANER: &[(&str, &str)] = &[
    ("log.cleaner.backoff.ms", "50"),
    ("group.initial.rebalance.delay.ms", "0"),
];

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

/// (offset, key, value) of every record of compacted-0 from the beginning (a fetch
/// returns one segment's batches at most, so it takes several).
async fn read_all(wire: &mut Wire) -> Vec<(i64, String, String)> {
    let mut out: Vec<(i64, String, String)> = Vec::new();
    let mut offset = 0;
    loop {
        let (records, next) = fetch_from(wire, offset).await;
        if records.is_empty() {
            return out;
        }
        out.extend(records);
        offset = next;
    }
}

/// The records of one fetch at `offset`, and the offset after its last batch.
async fn fetch_from(wire: &mut Wire, offset: i64) -> (Vec<(i64, String, String)>, i64) {
    let request = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_max_bytes(1 << 20)
        .with_topics(vec![
            fetch_request::FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("compacted")))
                .with_partitions(vec![
                    fetch_request::FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let response = wire.call(&request, 11).await;
    let partition = &response.responses[0].partitions[0];
    assert_eq!(partition.error_code, 0, "{partition:?}");
    let mut out = Vec::new();
    let mut next = offset;
    for batch in sluice_protocol::batches(partition.records.clone().unwrap_or_default()) {
        let batch = batch.unwrap();
        next = batch.next_offset();
        for record in batch.records().unwrap() {
            let record = record.unwrap();
            let text =
                |b: Option<Bytes>| String::from_utf8(b.unwrap_or_default().to_vec()).unwrap();
            out.push((
                batch.base_offset() + i64::from(record.offset_delta),
                text(record.key),
                text(record.value),
            ));
        }
    }
    (out, next)
}

/// The guide's example through the broker: A v1, B v1, A v2, C v1, B v2, A v3 at
/// offsets 0–5; a later record rolls the segment (`segment.ms`); the cleaner then
/// leaves, of offsets 0–5, only 3 C=v1, 4 B=v2, 5 A=v3 for a consumer from the start.
#[tokio::test]
async fn the_cleaner_compacts_the_guides_example() {
    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], common::free_port()));
    let mut settings = CLEANER.to_vec();
    let metrics_listener = metrics.to_string();
    settings.push(("metrics.listener", &metrics_listener));
    let node = TestNode::start(&settings).await;
    assert_eq!(
        common::create_assigned(
            node.address,
            "compacted",
            &[1],
            &[
                ("cleanup.policy", "compact"),
                ("segment.ms", "100"),
                ("min.cleanable.dirty.ratio", "0.01"),
            ]
        )
        .await,
        0
    );
    let mut wire = Wire::connect(node.address).await;
    for (i, (key, value)) in [
        ("A", "v1"),
        ("B", "v1"),
        ("A", "v2"),
        ("C", "v1"),
        ("B", "v2"),
        ("A", "v3"),
    ]
    .into_iter()
    .enumerate()
    {
        let response = produce_values(&mut wire, &[(Some(key), value)]).await;
        assert_eq!((response.error_code, response.base_offset), (0, i as i64));
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let rolled = produce_values(&mut wire, &[(Some("D"), "v1")]).await;
    assert_eq!((rolled.error_code, rolled.base_offset), (0, 6));
    let row = |o: i64, k: &str, v: &str| (o, k.to_string(), v.to_string());
    let expected = vec![
        row(3, "C", "v1"),
        row(4, "B", "v2"),
        row(5, "A", "v3"),
        row(6, "D", "v1"),
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut seen = read_all(&mut wire).await;
    while seen != expected {
        assert!(
            std::time::Instant::now() < deadline,
            "the cleaner did not compact the log: {seen:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        seen = read_all(&mut wire).await;
    }
    // Kafka's LogCleaner gauges describe the pass: it rewrote less than it read, used
    // some of its offset map, and no partition is uncleanable.
    let (status, text) = common::get(metrics, "/metrics").await;
    assert_eq!(status, 200);
    let gauge =
        |name: &str| common::sample(&text, name).unwrap_or_else(|| panic!("{name}: {text}"));
    let recopy = gauge("kafka_log_logcleaner_cleaner_recopy_percent");
    assert!(recopy > 0.0 && recopy < 100.0, "{recopy}");
    assert!(gauge("kafka_log_logcleaner_max_buffer_utilization_percent") >= 0.0);
    assert_eq!(
        gauge("kafka_log_logcleanermanager_uncleanable_partitions_count"),
        0.0
    );
    assert!(gauge("kafka_log_logcleanermanager_time_since_last_run_ms") >= 0.0);
    // The cleaner checkpoints where it stopped, and a restart reads the cleaned log.
    let dir = node.stop().await;
    let checkpoint = std::fs::read_to_string(dir.path().join("cleaner-offset-checkpoint")).unwrap();
    assert!(checkpoint.contains("compacted 0 6"), "{checkpoint}");
    let node = TestNode::start_in(dir, CLEANER).await;
    let mut wire = Wire::connect(node.address).await;
    assert_eq!(read_all(&mut wire).await, expected);
    node.stop().await;
}

/// Bytes of a partition's segment files.
fn partition_bytes(dir: &std::path::Path, partition: &str) -> u64 {
    std::fs::read_dir(dir.join(partition))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

/// Repeated offset commits and transactional-id re-initialisations rewrite the same
/// keys of `__consumer_offsets` and `__transaction_state`; with small segments the
/// cleaner keeps both partitions to a few segments, and the latest values survive it
/// and a restart.
#[tokio::test]
async fn internal_topics_stay_bounded_under_repeated_commits() {
    let mut settings = CLEANER.to_vec();
    settings.extend([
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.segment.bytes", "8192"),
        ("transaction.state.log.num.partitions", "1"),
        ("transaction.state.log.segment.bytes", "8192"),
    ]);
    let node = TestNode::start(&settings).await;
    assert_eq!(
        common::create_assigned(node.address, "input", &[1], &[]).await,
        0
    );
    let mut wire = Wire::connect(node.address).await;
    let find = |key: &str, key_type: i8| {
        FindCoordinatorRequest::default()
            .with_key_type(key_type)
            .with_coordinator_keys(vec![s(key)])
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for (key, key_type) in [("bounded", 0), ("bounded-txn", 1)] {
        while wire.call(&find(key, key_type), 4).await.coordinators[0].error_code != 0 {
            assert!(std::time::Instant::now() < deadline);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
    let rounds = 1_500i64;
    let mut producer_epoch = -1;
    for round in 0..rounds {
        let commit = OffsetCommitRequest::default()
            .with_group_id(GroupId(s("bounded")))
            .with_generation_id_or_member_epoch(-1)
            .with_member_id(s(""))
            .with_topics(vec![
                offset_commit_request::OffsetCommitRequestTopic::default()
                    .with_name(TopicName(s("input")))
                    .with_partitions(vec![
                        offset_commit_request::OffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(round * 10),
                    ]),
            ]);
        // A coordinator still loading (COORDINATOR_LOAD_IN_PROGRESS) or moving
        // (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) is retried, as clients do.
        let retry_until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let response = loop {
            let response = wire.call(&commit, 8).await;
            let retriable = response.topics[0]
                .partitions
                .iter()
                .any(|p| [14, 15, 16].contains(&p.error_code));
            if !retriable || std::time::Instant::now() > retry_until {
                break response;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        };
        assert!(
            response.topics[0]
                .partitions
                .iter()
                .all(|p| p.error_code == 0),
            "{response:?}"
        );
        if round % 3 == 0 {
            let init = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(s("bounded-txn"))))
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1);
            // COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE and
            // CONCURRENT_TRANSACTIONS are retriable: a client asks again.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let response = loop {
                let response = wire.call(&init, 4).await;
                if ![14, 15, 51].contains(&response.error_code)
                    || std::time::Instant::now() > deadline
                {
                    break response;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            };
            assert_eq!(response.error_code, 0, "{response:?}");
            producer_epoch = response.producer_epoch;
        }
    }
    // Uncompacted, the commits alone take more than 1,500 batch headers (61 bytes each):
    // over 89 KiB.
    let bound = 48 * 1024;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let offsets = partition_bytes(node.dir.path(), "__consumer_offsets-0");
        let txns = partition_bytes(node.dir.path(), "__transaction_state-0");
        if offsets < bound && txns < bound {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not compacted: __consumer_offsets-0 {offsets} bytes, __transaction_state-0 {txns} bytes"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The latest values survive the cleaning, and a restart that replays the cleaned logs.
    let dir = node.stop().await;
    let checkpoint = std::fs::read_to_string(dir.path().join("cleaner-offset-checkpoint")).unwrap();
    for partition in ["__consumer_offsets 0 ", "__transaction_state 0 "] {
        assert!(checkpoint.contains(partition), "{checkpoint}");
    }
    let node = TestNode::start_in(dir, &settings).await;
    let mut wire = Wire::connect(node.address).await;
    let fetch = OffsetFetchRequest::default().with_groups(vec![
        offset_fetch_request::OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s("bounded")))
            .with_topics(None),
    ]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let committed = loop {
        let response = wire.call(&fetch, 9).await;
        let group = &response.groups[0];
        if group.error_code == 0 && !group.topics.is_empty() {
            break group.topics[0]
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset))
                .collect::<Vec<_>>();
        }
        assert!(std::time::Instant::now() < deadline, "{response:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let last = (rounds - 1) * 10;
    assert_eq!(committed, vec![(0, last)]);
    let describe = DescribeTransactionsRequest::default()
        .with_transactional_ids(vec![TransactionalId(s("bounded-txn"))]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let response = wire.call(&describe, 0).await;
        let state = &response.transaction_states[0];
        if state.error_code == 0 {
            assert_eq!(state.producer_epoch, producer_epoch);
            assert_eq!(state.transaction_state.as_str(), "Empty");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{response:?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    node.stop().await;
}

/// The cleaner's broker keys are dynamic, as in Kafka: a node started with
/// `log.cleaner.threads=0` cleans nothing until IncrementalAlterConfigs sets the
/// cluster-wide default to 1; a bad value is INVALID_CONFIG and changes nothing.
#[tokio::test]
async fn cleaner_threads_change_without_a_restart() {
    let mut settings = CLEANER.to_vec();
    settings.push(("log.cleaner.threads", "0"));
    let node = TestNode::start(&settings).await;
    assert_eq!(
        common::create_assigned(
            node.address,
            "compacted",
            &[1],
            &[
                ("cleanup.policy", "compact"),
                ("segment.ms", "100"),
                ("min.cleanable.dirty.ratio", "0.01"),
            ]
        )
        .await,
        0
    );
    let mut wire = Wire::connect(node.address).await;
    for value in ["v1", "v2", "v3"] {
        assert_eq!(
            produce_values(&mut wire, &[(Some("K"), value)])
                .await
                .error_code,
            0
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert_eq!(
        produce_values(&mut wire, &[(Some("L"), "v1")])
            .await
            .error_code,
        0
    );
    // Several backoffs later nothing is cleaned.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(read_all(&mut wire).await.len(), 4);
    let alter = |value: &str| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(4)
                .with_resource_name(s(""))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(s("log.cleaner.threads"))
                        .with_config_operation(0)
                        .with_value(Some(s(value))),
                ]),
        ])
    };
    let refused = wire.call(&alter("many"), 1).await;
    assert_eq!(refused.responses[0].error_code, 40, "{refused:?}");
    let accepted = wire.call(&alter("1"), 1).await;
    assert_eq!(accepted.responses[0].error_code, 0, "{accepted:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let offsets: Vec<i64> = read_all(&mut wire).await.iter().map(|r| r.0).collect();
        if offsets == [2, 3] {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not cleaned: {offsets:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    node.stop().await;
}
