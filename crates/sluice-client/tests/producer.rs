//! The producer against a real in-process Sluice node: round trips per codec, batching,
//! the partitioners (murmur2 against the Java client's table), idempotent retries across
//! a broker restart, buffer and delivery timeouts, and transactions.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;

use common::{TestNode, Wire};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use sluice_client::producer::{
    Producer, ProducerConfig, ProducerError, ProducerRecord, partition_for_key,
};
use sluice_client::{
    Admin, ClientConfig, ConsumerGroupMetadata, NewTopic, OffsetAndMetadata, TopicPartition,
};
use sluice_protocol::Compression;

const SETTINGS: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("transaction.state.log.num.partitions", "3"),
    ("offsets.topic.num.partitions", "3"),
];

async fn create_topic(address: SocketAddr, name: &str, partitions: i32) {
    let admin = Admin::connect(ClientConfig::new([address.to_string()]))
        .await
        .unwrap();
    let topic = NewTopic {
        name: name.to_string(),
        num_partitions: Some(partitions),
        replication_factor: Some(1),
        configs: Vec::new(),
    };
    let results = admin.create_topics(&[topic], false).await.unwrap();
    for (_, result) in results {
        result.unwrap();
    }
}

fn config(address: SocketAddr, extra: &[(&str, &str)]) -> ProducerConfig {
    let mut settings = vec![("bootstrap.servers".to_string(), address.to_string())];
    settings.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    ProducerConfig::from_iter(settings).unwrap()
}

/// A fetched record: offset, key, value, headers, and its batch's base offset.
#[derive(Debug, Clone, PartialEq)]
struct Fetched {
    offset: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<(Bytes, Option<Bytes>)>,
    batch_base_offset: i64,
    compression: Compression,
}

/// Every record of a partition from offset 0 (data batches only), following batches.
async fn fetch_all(
    address: SocketAddr,
    topic: &str,
    partition: i32,
    read_committed: bool,
) -> Vec<Fetched> {
    let mut wire = Wire::connect(address).await;
    let mut offset = 0;
    let mut out = Vec::new();
    loop {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(0)
            .with_max_bytes(8 << 20)
            .with_isolation_level(i8::from(read_committed))
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(partition)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(8 << 20),
                    ]),
            ]);
        let response = wire.call(&request, 12).await;
        let data = &response.responses[0].partitions[0];
        assert_eq!(data.error_code, 0, "{data:?}");
        // The Java consumer's rule: a producer's batches from the first offset of one of
        // its aborted transactions up to its next control batch are skipped.
        let mut aborted: Vec<(i64, i64)> = data
            .aborted_transactions
            .iter()
            .flatten()
            .map(|aborted| (aborted.producer_id.0, aborted.first_offset))
            .collect();
        aborted.sort_by_key(|(_, first)| *first);
        let mut skipping = std::collections::HashSet::new();
        let mut progressed = false;
        for batch in sluice_protocol::batches(data.records.clone().unwrap_or_default()) {
            let batch = batch.unwrap();
            offset = batch.next_offset();
            progressed = true;
            aborted.retain(|(producer_id, first)| {
                let started = *first <= batch.base_offset();
                if started {
                    skipping.insert(*producer_id);
                }
                !started
            });
            if batch.is_control() {
                skipping.remove(&batch.producer_id());
                continue;
            }
            if read_committed && skipping.contains(&batch.producer_id()) {
                continue;
            }
            for record in batch.records().unwrap() {
                let record = record.unwrap();
                out.push(Fetched {
                    offset: batch.base_offset() + i64::from(record.offset_delta),
                    key: record.key,
                    value: record.value,
                    headers: record
                        .headers
                        .into_iter()
                        .map(|h| (h.key, h.value))
                        .collect(),
                    batch_base_offset: batch.base_offset(),
                    compression: batch.compression().unwrap(),
                });
            }
        }
        if !progressed {
            return out;
        }
    }
}

fn values(records: &[Fetched]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap())
        .collect()
}

#[test]
fn murmur2_partitions_match_the_java_client() {
    let table = include_str!("fixtures/murmur2_partitions.tsv");
    let mut rows = 0;
    for line in table.lines().filter(|line| !line.starts_with('#')) {
        let fields: Vec<&str> = line.split('\t').collect();
        let key: Vec<u8> = (0..fields[0].len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&fields[0][i..i + 2], 16).unwrap())
            .collect();
        let count: i32 = fields[1].parse().unwrap();
        let expected: i32 = fields[2].parse().unwrap();
        let hash = u32::from_str_radix(fields[3], 16).unwrap() as i32;
        assert_eq!(
            sluice_client::producer::murmur2(&key),
            hash,
            "murmur2 of {}",
            fields[0]
        );
        assert_eq!(
            partition_for_key(&key, count),
            expected,
            "key {} over {count}",
            fields[0]
        );
        rows += 1;
    }
    assert!(rows >= 400, "{rows} rows");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_round_trip_with_every_codec() {
    let node = TestNode::start(SETTINGS).await;
    for codec in Compression::ALL {
        let topic = format!("codec-{}", codec.name());
        create_topic(node.address, &topic, 1).await;
        let producer =
            Producer::connect(config(node.address, &[("compression.type", codec.name())]))
                .await
                .unwrap();
        let mut deliveries = Vec::new();
        for i in 0..50 {
            let record = ProducerRecord::new(&topic, format!("value-{i}"))
                .with_key(format!("key-{i}"))
                .with_header("h", Some(Bytes::from(format!("header-{i}"))));
            deliveries.push(producer.send(record).await.unwrap());
        }
        let mut offsets = Vec::new();
        for delivery in deliveries {
            let metadata = delivery.await.unwrap();
            assert_eq!(metadata.partition, 0);
            offsets.push(metadata.offset);
        }
        assert_eq!(offsets, (0..50).collect::<Vec<i64>>(), "{codec:?}");
        producer.close().await.unwrap();
        let fetched = fetch_all(node.address, &topic, 0, false).await;
        assert_eq!(fetched.len(), 50, "{codec:?}");
        for (i, record) in fetched.iter().enumerate() {
            assert_eq!(record.offset, i as i64);
            assert_eq!(record.key.as_deref(), Some(format!("key-{i}").as_bytes()));
            assert_eq!(
                record.value.as_deref(),
                Some(format!("value-{i}").as_bytes())
            );
            assert_eq!(
                record.headers,
                vec![(Bytes::from("h"), Some(Bytes::from(format!("header-{i}"))))]
            );
            assert_eq!(record.compression, codec);
        }
    }
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lingering_sends_share_few_batches() {
    let node = TestNode::start(SETTINGS).await;
    create_topic(node.address, "linger", 1).await;
    let producer = Producer::connect(config(node.address, &[("linger.ms", "500")]))
        .await
        .unwrap();
    let mut deliveries = Vec::new();
    for i in 0..200 {
        deliveries.push(
            producer
                .send(ProducerRecord::new("linger", format!("v{i}")))
                .await
                .unwrap(),
        );
    }
    for delivery in deliveries {
        delivery.await.unwrap();
    }
    let fetched = fetch_all(node.address, "linger", 0, false).await;
    assert_eq!(
        values(&fetched),
        (0..200).map(|i| format!("v{i}")).collect::<Vec<_>>()
    );
    let mut batches: Vec<i64> = fetched.iter().map(|r| r.batch_base_offset).collect();
    batches.dedup();
    assert!(
        batches.len() <= 2,
        "200 small records in {} batches",
        batches.len()
    );
    producer.close().await.unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_records_stick_then_spread_and_keys_follow_murmur2() {
    let node = TestNode::start(SETTINGS).await;
    create_topic(node.address, "sticky", 4).await;
    let producer = Producer::connect(config(
        node.address,
        &[("batch.size", "2000"), ("linger.ms", "1000")],
    ))
    .await
    .unwrap();
    let mut deliveries = Vec::new();
    for i in 0..400 {
        deliveries.push(
            producer
                .send(ProducerRecord::new("sticky", format!("{i:0>100}")))
                .await
                .unwrap(),
        );
    }
    let mut partitions = Vec::new();
    for delivery in deliveries {
        partitions.push(delivery.await.unwrap().partition);
    }
    let mut runs = partitions.clone();
    runs.dedup();
    // ~40 KB in 2 KB stints: many switches, each stint a run of consecutive records.
    assert!(runs.len() >= 10, "{} runs", runs.len());
    let used: std::collections::BTreeSet<i32> = partitions.iter().copied().collect();
    assert!(used.len() >= 3, "{used:?}");
    // Keyed records land where the Java client puts them.
    for key in ["a", "order-17", "日本"] {
        let delivery = producer
            .send(ProducerRecord::new("sticky", "x").with_key(key))
            .await
            .unwrap();
        assert_eq!(
            delivery.await.unwrap().partition,
            partition_for_key(key.as_bytes(), 4)
        );
    }
    producer.close().await.unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_retries_across_a_restart_neither_lose_nor_duplicate() {
    let port = common::free_port();
    let listeners = format!("PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:0");
    let advertised = format!("PLAINTEXT://127.0.0.1:{port}");
    let mut settings: Vec<(&str, &str)> = SETTINGS.to_vec();
    settings.push(("listeners", &listeners));
    settings.push(("advertised.listeners", &advertised));
    let node = TestNode::start(&settings).await;
    let address = node.address;
    create_topic(address, "restart", 2).await;
    let producer = Producer::connect(config(
        address,
        &[
            ("linger.ms", "2"),
            ("batch.size", "500"),
            ("request.timeout.ms", "3000"),
            ("retry.backoff.ms", "50"),
        ],
    ))
    .await
    .unwrap();
    let mut deliveries = Vec::new();
    for i in 0..300 {
        let record = ProducerRecord::new("restart", format!("{i}")).with_key(format!("k{}", i % 7));
        deliveries.push(producer.send(record).await.unwrap());
    }
    let dir = node.stop().await;
    for i in 300..600 {
        let record = ProducerRecord::new("restart", format!("{i}")).with_key(format!("k{}", i % 7));
        deliveries.push(producer.send(record).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let node = TestNode::start_in(dir, &settings).await;
    for delivery in deliveries {
        delivery.await.unwrap();
    }
    for partition in 0..2 {
        let fetched = fetch_all(address, "restart", partition, false).await;
        let got: Vec<i64> = values(&fetched)
            .iter()
            .map(|v| v.parse().unwrap())
            .collect();
        let expected: Vec<i64> = (0..600)
            .filter(|i| partition_for_key(format!("k{}", i % 7).as_bytes(), 2) == partition)
            .collect();
        assert_eq!(
            got, expected,
            "partition {partition}: every record once, in order"
        );
    }
    producer.close().await.unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_buffer_blocks_then_fails_and_records_time_out() {
    let node = TestNode::start(SETTINGS).await;
    let address = node.address;
    create_topic(address, "stuck", 1).await;
    let producer = Producer::connect(config(
        address,
        &[
            ("buffer.memory", "2000"),
            ("max.block.ms", "300"),
            ("linger.ms", "0"),
            ("request.timeout.ms", "500"),
            ("delivery.timeout.ms", "1500"),
            ("retry.backoff.ms", "50"),
        ],
    ))
    .await
    .unwrap();
    assert_eq!(producer.partitions_for("stuck").await.unwrap(), 1);
    node.stop().await;
    let mut deliveries = Vec::new();
    let error = loop {
        match producer
            .send(ProducerRecord::new("stuck", vec![7u8; 200]))
            .await
        {
            Ok(delivery) => deliveries.push(delivery),
            Err(error) => break error,
        }
        assert!(
            deliveries.len() < 20,
            "buffer.memory=2000 holds fewer than 20 records of 200 bytes"
        );
    };
    assert!(
        matches!(
            &error,
            ProducerError::Timeout {
                setting: "max.block.ms",
                ..
            }
        ),
        "{error}"
    );
    assert!(!deliveries.is_empty());
    for delivery in deliveries {
        let error = delivery.await.unwrap_err();
        assert!(
            matches!(
                &error,
                ProducerError::Timeout {
                    setting: "delivery.timeout.ms",
                    ..
                }
            ),
            "{error}"
        );
    }
    // The expired records gave their memory back.
    assert!(
        producer
            .send(ProducerRecord::new("stuck", vec![7u8; 200]))
            .await
            .is_ok()
    );
}

async fn transactional(address: SocketAddr, id: &str) -> Producer {
    let producer = Producer::connect(config(address, &[("transactional.id", id)]))
        .await
        .unwrap();
    producer.init_transactions().await.unwrap();
    producer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_transactions_are_read_and_aborted_ones_are_not() {
    let node = TestNode::start(SETTINGS).await;
    create_topic(node.address, "txn", 2).await;
    let producer = transactional(node.address, "txn-1").await;
    producer.begin_transaction().unwrap();
    for i in 0..10 {
        producer
            .send(ProducerRecord::new("txn", format!("committed-{i}")).with_partition(i % 2))
            .await
            .unwrap();
    }
    producer.commit_transaction().await.unwrap();
    producer.begin_transaction().unwrap();
    for i in 0..10 {
        producer
            .send(ProducerRecord::new("txn", format!("aborted-{i}")).with_partition(i % 2))
            .await
            .unwrap();
    }
    producer.flush().await.unwrap();
    producer.abort_transaction().await.unwrap();
    producer.begin_transaction().unwrap();
    producer
        .send(ProducerRecord::new("txn", "last").with_partition(0))
        .await
        .unwrap();
    producer.commit_transaction().await.unwrap();
    let mut committed = Vec::new();
    for _ in 0..100 {
        committed = values(&fetch_all(node.address, "txn", 0, true).await);
        if committed.last().map(String::as_str) == Some("last") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let expected: Vec<String> = [0, 2, 4, 6, 8]
        .iter()
        .map(|i| format!("committed-{i}"))
        .chain(["last".to_string()])
        .collect();
    assert_eq!(committed, expected);
    let read_uncommitted = values(&fetch_all(node.address, "txn", 0, false).await);
    assert!(read_uncommitted.iter().any(|v| v.starts_with("aborted-")));
    producer.close().await.unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_sent_to_a_transaction_commit_with_it() {
    let node = TestNode::start(SETTINGS).await;
    create_topic(node.address, "in", 1).await;
    create_topic(node.address, "out", 1).await;
    let producer = transactional(node.address, "txn-offsets").await;
    producer.begin_transaction().unwrap();
    producer
        .send(ProducerRecord::new("out", "transformed"))
        .await
        .unwrap();
    let offsets = BTreeMap::from([(
        TopicPartition::new("in", 0),
        OffsetAndMetadata {
            offset: 42,
            leader_epoch: None,
            metadata: "m".to_string(),
        },
    )]);
    producer
        .send_offsets_to_transaction(&offsets, &ConsumerGroupMetadata::new("processors"))
        .await
        .unwrap();
    producer.commit_transaction().await.unwrap();
    let admin = Admin::connect(ClientConfig::new([node.address.to_string()]))
        .await
        .unwrap();
    let mut committed = BTreeMap::new();
    for _ in 0..100 {
        committed = admin.list_group_offsets("processors").await.unwrap();
        if !committed.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let offset = &committed[&TopicPartition::new("in", 0)];
    assert_eq!((offset.offset, offset.metadata.as_str()), (42, "m"));
    producer.close().await.unwrap();
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_producer_with_the_same_transactional_id_fences_the_old_one() {
    let node = TestNode::start(SETTINGS).await;
    create_topic(node.address, "fenced", 1).await;
    let old = transactional(node.address, "txn-zombie").await;
    old.begin_transaction().unwrap();
    old.send(ProducerRecord::new("fenced", "zombie-1"))
        .await
        .unwrap()
        .await
        .unwrap();
    let new = transactional(node.address, "txn-zombie").await;
    new.begin_transaction().unwrap();
    new.send(ProducerRecord::new("fenced", "new"))
        .await
        .unwrap();
    new.commit_transaction().await.unwrap();
    // The old producer's next write or its commit fails fatally.
    let error = match old.send(ProducerRecord::new("fenced", "zombie-2")).await {
        Ok(delivery) => match delivery.await {
            Ok(_) => old.commit_transaction().await.unwrap_err(),
            Err(error) => error,
        },
        Err(error) => error,
    };
    let error = if error.is_fatal() {
        error
    } else {
        old.commit_transaction().await.unwrap_err()
    };
    assert!(error.is_fatal(), "{error}");
    let code = error.code().map(|code| code.name());
    assert!(
        matches!(
            code.as_deref(),
            Some("PRODUCER_FENCED" | "INVALID_PRODUCER_EPOCH")
        ),
        "{error}"
    );
    assert!(old.begin_transaction().is_err());
    let committed = values(&fetch_all(node.address, "fenced", 0, true).await);
    assert_eq!(committed, vec!["new".to_string()]);
    node.stop().await;
}

/// `acks=0`: the broker sends no answer; every record is reported sent at offset -1 (as
/// the Java client does) once its request is written, and all of them reach the log. The
/// producer is not idempotent then (Kafka's rule: idempotence needs acks=all).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_zero_sends_without_answers() {
    let node = TestNode::start(SETTINGS).await;
    create_topic(node.address, "fire", 1).await;
    let producer = Producer::connect(config(node.address, &[("acks", "0"), ("linger.ms", "5")]))
        .await
        .unwrap();
    assert!(!producer.config().enable_idempotence);
    let mut deliveries = Vec::new();
    for i in 0..100 {
        deliveries.push(
            producer
                .send(ProducerRecord::new("fire", format!("v{i}")))
                .await
                .unwrap(),
        );
    }
    for delivery in deliveries {
        assert_eq!(delivery.await.unwrap().offset, -1);
    }
    producer.flush().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let fetched = fetch_all(node.address, "fire", 0, false).await;
        if fetched.len() == 100 {
            assert_eq!(
                values(&fetched),
                (0..100).map(|i| format!("v{i}")).collect::<Vec<_>>()
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of 100",
            fetched.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // With idempotence asked for explicitly, acks=0 is a configuration error.
    let refused = ProducerConfig::from_iter([
        ("bootstrap.servers", node.address.to_string()),
        ("acks", "0".to_string()),
        ("enable.idempotence", "true".to_string()),
    ]);
    assert!(refused.is_err());
    producer.close().await.unwrap();
    node.stop().await;
}
