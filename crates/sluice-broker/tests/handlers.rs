//! The request handlers against a live node, request by request, at the versions real
//! clients send: topic administration and its errors, produce and its per-partition
//! errors, fetch (limits, long poll, sessions, topic ids), offsets, configs, log dirs,
//! producer ids, and what survives a restart.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{TestNode, Wire, values};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.to_string()))
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One batch of `count` records `prefix-i`, timestamps from `timestamp`.
fn batch(prefix: &str, count: usize, timestamp: i64, compression: Compression) -> Bytes {
    let mut builder = RecordBatchBuilder::new(compression);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp: timestamp + i as i64,
                key: Some(Bytes::from(format!("k{i}"))),
                value: Some(Bytes::from(format!("{prefix}-{i}"))),
                headers: Vec::new(),
            })
            .unwrap();
    }
    builder.build()
}

async fn create(
    wire: &mut Wire,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> CreateTopicsResponse {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            CreatableTopicConfig::default()
                                .with_name(s(k))
                                .with_value(Some(s(v)))
                        })
                        .collect(),
                ),
        ])
        .with_timeout_ms(5000);
    wire.call(&request, 7).await
}

fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(5000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(records)),
                ]),
        ])
}

async fn produce(wire: &mut Wire, topic: &str, partition: i32, records: Bytes) -> (i16, i64) {
    let response = wire
        .call(&produce_request(topic, partition, records, -1), 11)
        .await;
    let p = &response.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

fn fetch_request(topic: &str, partition: i32, offset: i64) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name(topic))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ])
}

async fn list_offset(
    wire: &mut Wire,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> (i16, i64, i64) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ]),
        ]);
    let response = wire.call(&request, 9).await;
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.offset, p.timestamp)
}

#[tokio::test]
async fn topics_are_created_described_and_deleted_with_kafkas_errors() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    let created = create(&mut wire, "orders", 3, &[("retention.ms", "3600000")]).await;
    let result = &created.topics[0];
    assert_eq!(result.error_code, 0, "{:?}", result.error_message);
    assert_eq!((result.num_partitions, result.replication_factor), (3, 1));
    assert!(!result.topic_id.is_nil(), "v7 returns the topic id");
    let configs = result.configs.as_ref().unwrap();
    let retention = configs
        .iter()
        .find(|c| c.name.as_str() == "retention.ms")
        .unwrap();
    assert_eq!(retention.value.as_deref(), Some("3600000"));
    assert_eq!(retention.config_source, 1, "TOPIC_CONFIG");

    let error_of = |response: &CreateTopicsResponse| response.topics[0].error_code;
    assert_eq!(
        error_of(&create(&mut wire, "orders", 1, &[]).await),
        36,
        "TOPIC_ALREADY_EXISTS"
    );
    assert_eq!(
        error_of(&create(&mut wire, "bad/name", 1, &[]).await),
        17,
        "INVALID_TOPIC_EXCEPTION"
    );
    assert_eq!(
        error_of(&create(&mut wire, "zero", 0, &[]).await),
        37,
        "INVALID_PARTITIONS"
    );
    assert_eq!(
        error_of(&create(&mut wire, "c", 1, &[("retention.ms", "soon")]).await),
        40,
        "INVALID_CONFIG"
    );
    assert_eq!(
        error_of(&create(&mut wire, "c", 1, &[("no.such.key", "1")]).await),
        40,
        "INVALID_CONFIG for an unknown key"
    );
    let three_replicas = CreateTopicsRequest::default().with_topics(vec![
        CreatableTopic::default()
            .with_name(name("rf3"))
            .with_num_partitions(1)
            .with_replication_factor(3),
    ]);
    let response: CreateTopicsResponse = wire.call(&three_replicas, 7).await;
    assert_eq!(
        response.topics[0].error_code, 38,
        "INVALID_REPLICATION_FACTOR on one node"
    );
    let validate_only = CreateTopicsRequest::default()
        .with_validate_only(true)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name("dry"))
                .with_num_partitions(2)
                .with_replication_factor(-1),
        ]);
    let response: CreateTopicsResponse = wire.call(&validate_only, 7).await;
    assert_eq!(
        (
            response.topics[0].error_code,
            response.topics[0].num_partitions
        ),
        (0, 2)
    );

    // Metadata lists exactly the created topic, with leaders on this node.
    let metadata: MetadataResponse = wire
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    let names: Vec<_> = metadata
        .topics
        .iter()
        .map(|t| t.name.as_ref().unwrap().as_str())
        .collect();
    assert_eq!(
        names,
        vec!["orders"],
        "validate_only and refused topics were not created"
    );
    let orders = &metadata.topics[0];
    assert_eq!(orders.partitions.len(), 3);
    assert!(
        orders
            .partitions
            .iter()
            .all(|p| p.leader_id.0 == 1 && p.isr_nodes == vec![BrokerId(1)])
    );
    assert_eq!(metadata.brokers[0].port, i32::from(node.address.port()));

    // By id (v12+).
    let by_id = MetadataRequest::default().with_topics(Some(vec![
        metadata_request::MetadataRequestTopic::default()
            .with_name(None)
            .with_topic_id(orders.topic_id),
    ]));
    let response: MetadataResponse = wire.call(&by_id, 12).await;
    assert_eq!(response.topics[0].name.as_ref().unwrap().as_str(), "orders");

    // CreatePartitions grows it; shrinking is refused.
    let grow = CreatePartitionsRequest::default().with_topics(vec![
        create_partitions_request::CreatePartitionsTopic::default()
            .with_name(name("orders"))
            .with_count(5)
            .with_assignments(None),
    ]);
    let response: CreatePartitionsResponse = wire.call(&grow, 3).await;
    assert_eq!(response.results[0].error_code, 0);
    let shrink = CreatePartitionsRequest::default().with_topics(vec![
        create_partitions_request::CreatePartitionsTopic::default()
            .with_name(name("orders"))
            .with_count(2)
            .with_assignments(None),
    ]);
    let response: CreatePartitionsResponse = wire.call(&shrink, 3).await;
    assert_eq!(response.results[0].error_code, 37);
    let (error, offset) = produce(
        &mut wire,
        "orders",
        4,
        batch("p4", 2, now_ms(), Compression::None),
    )
    .await;
    assert_eq!((error, offset), (0, 0), "a new partition takes writes");

    // Delete, then the name is free again with a new id and an empty log.
    let delete = DeleteTopicsRequest::default().with_topic_names(vec![name("orders")]);
    let response: DeleteTopicsResponse = wire.call(&delete, 5).await;
    assert_eq!(response.responses[0].error_code, 0);
    let response: DeleteTopicsResponse = wire.call(&delete, 5).await;
    assert_eq!(
        response.responses[0].error_code, 3,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    let recreated = create(&mut wire, "orders", 5, &[]).await;
    assert_ne!(recreated.topics[0].topic_id, orders.topic_id);
    assert_eq!(
        list_offset(&mut wire, "orders", 4, -1).await,
        (0, 0, -1),
        "empty after re-creation"
    );
    node.stop().await;
}

#[tokio::test]
async fn produce_then_fetch_returns_the_same_batches_at_every_version() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    let topic_id = create(&mut wire, "events", 1, &[]).await.topics[0].topic_id;
    let t0 = now_ms();
    let mut sent = Vec::new();
    for (i, codec) in Compression::ALL.into_iter().enumerate() {
        let records = batch(&format!("b{i}"), 3, t0 + 10 * i as i64, codec);
        let (error, offset) = produce(&mut wire, "events", 0, records.clone()).await;
        assert_eq!((error, offset), (0, 3 * i as i64), "{codec:?}");
        sent.extend(values(&records));
    }
    // Produce v13 names the topic by id.
    let by_id = ProduceRequest::default().with_acks(1).with_topic_data(vec![
        TopicProduceData::default()
            .with_topic_id(topic_id)
            .with_partition_data(vec![
                PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(batch("v13", 1, t0 + 100, Compression::None))),
            ]),
    ]);
    let response: ProduceResponse = wire.call(&by_id, 13).await;
    assert_eq!(response.responses[0].topic_id, topic_id);
    assert_eq!(response.responses[0].partition_responses[0].base_offset, 15);
    sent.push("v13-0".into());

    for version in [4, 11, 12] {
        let response: FetchResponse = wire.call(&fetch_request("events", 0, 0), version).await;
        let p = &response.responses[0].partitions[0];
        // LogStartOffset is in the response from v5.
        let log_start = if version >= 5 { 0 } else { -1 };
        assert_eq!(
            (p.error_code, p.high_watermark, p.log_start_offset),
            (0, 16, log_start)
        );
        assert_eq!(
            values(p.records.as_ref().unwrap()),
            sent,
            "fetch v{version}"
        );
    }
    let mut by_id = fetch_request("events", 0, 3);
    by_id.topics[0].topic = TopicName::default();
    by_id.topics[0].topic_id = topic_id;
    for version in [13, 18] {
        let response: FetchResponse = wire.call(&by_id, version).await;
        assert_eq!(response.responses[0].topic_id, topic_id);
        let p = &response.responses[0].partitions[0];
        assert_eq!(
            values(p.records.as_ref().unwrap()),
            sent[3..],
            "fetch v{version} by id"
        );
    }
    // The first batch comes whole even when larger than the limits.
    let mut tiny = fetch_request("events", 0, 0);
    tiny.topics[0].partitions[0].partition_max_bytes = 1;
    let response: FetchResponse = wire.call(&tiny, 12).await;
    assert_eq!(
        values(
            response.responses[0].partitions[0]
                .records
                .as_ref()
                .unwrap()
        ),
        sent[..3]
    );
    // Out of range.
    let response: FetchResponse = wire.call(&fetch_request("events", 0, 99), 12).await;
    let out_of_range = &response.responses[0].partitions[0];
    assert_eq!(out_of_range.error_code, 1, "OFFSET_OUT_OF_RANGE");
    // No offsets with the error, as Kafka answers: the client asks ListOffsets.
    assert_eq!(
        (
            out_of_range.high_watermark,
            out_of_range.last_stable_offset,
            out_of_range.log_start_offset
        ),
        (-1, -1, -1)
    );

    // ListOffsets: earliest, latest, by timestamp, max timestamp.
    assert_eq!(list_offset(&mut wire, "events", 0, -2).await.1, 0);
    assert_eq!(list_offset(&mut wire, "events", 0, -1).await.1, 16);
    assert_eq!(
        list_offset(&mut wire, "events", 0, t0 + 21).await,
        (0, 7, t0 + 21)
    );
    assert_eq!(
        list_offset(&mut wire, "events", 0, -3).await,
        (0, 15, t0 + 100)
    );
    assert_eq!(
        list_offset(&mut wire, "events", 0, t0 + 1_000_000).await.1,
        -1
    );
    node.stop().await;
}

/// A consumer cannot ask for more than the broker's `fetch.max.bytes` in one response,
/// and `max_bytes <= 0` is not unbounded: before the cap, both requests below got all
/// 20 batches.
#[tokio::test]
async fn fetch_responses_are_capped_by_the_brokers_fetch_max_bytes() {
    let node = TestNode::start(&[("fetch.max.bytes", "4096")]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "wide", 1, &[]).await;
    let t0 = now_ms();
    let mut batch_bytes = 0;
    for i in 0..20 {
        let records = batch(
            &format!("b{i}-{}", "x".repeat(40)),
            20,
            t0,
            Compression::None,
        );
        batch_bytes = records.len();
        assert_eq!(produce(&mut wire, "wide", 0, records).await.0, 0);
    }
    assert!(
        20 * batch_bytes > 4 * 4096,
        "the log holds far more than the cap"
    );
    for asked in [i32::MAX, 0, -1] {
        let mut request = fetch_request("wide", 0, 0);
        request.max_bytes = asked;
        request.topics[0].partitions[0].partition_max_bytes = i32::MAX;
        let response: FetchResponse = wire.call(&request, 12).await;
        let records = response.responses[0].partitions[0].records.clone().unwrap();
        let expected_max = if asked > 0 { 4096 } else { batch_bytes };
        assert!(
            !records.is_empty() && records.len() <= expected_max,
            "max_bytes {asked}: {} bytes returned (at most {expected_max} expected)",
            records.len()
        );
    }
    node.stop().await;
}

#[tokio::test]
async fn produce_refuses_bad_batches_per_partition() {
    let node = TestNode::start(&[("message.max.bytes", "2000")]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "strict", 1, &[]).await;
    let good = batch("ok", 2, now_ms(), Compression::None);
    let code = |response: ProduceResponse| response.responses[0].partition_responses[0].error_code;

    let mut corrupt = good.to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let response = wire
        .call(&produce_request("strict", 0, Bytes::from(corrupt), 1), 11)
        .await;
    assert_eq!(code(response), 2, "CORRUPT_MESSAGE");

    let two = [good.clone(), good.clone()].concat();
    let response = wire
        .call(&produce_request("strict", 0, Bytes::from(two), 1), 11)
        .await;
    assert_eq!(code(response), 87, "INVALID_RECORD: two batches");

    let big = {
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder
            .append(&NewRecord {
                timestamp: now_ms(),
                key: None,
                value: Some(Bytes::from(vec![7u8; 5000])),
                headers: Vec::new(),
            })
            .unwrap();
        builder.build()
    };
    let response = wire.call(&produce_request("strict", 0, big, 1), 11).await;
    assert_eq!(code(response), 10, "MESSAGE_TOO_LARGE");

    let future = batch("future", 1, now_ms() + 2 * 3_600_000, Compression::None);
    let response = wire
        .call(&produce_request("strict", 0, future, 1), 11)
        .await;
    assert_eq!(code(response), 32, "INVALID_TIMESTAMP");

    let response = wire
        .call(&produce_request("strict", 0, good.clone(), 2), 11)
        .await;
    assert_eq!(code(response), 21, "INVALID_REQUIRED_ACKS");

    let response = wire
        .call(&produce_request("nope", 0, good.clone(), 1), 11)
        .await;
    assert_eq!(code(response), 3, "UNKNOWN_TOPIC_OR_PARTITION");
    let response = wire
        .call(&produce_request("strict", 7, good.clone(), 1), 11)
        .await;
    assert_eq!(code(response), 3, "no such partition");

    let zstd = batch("z", 1, now_ms(), Compression::Zstd);
    let response = wire.call(&produce_request("strict", 0, zstd, 1), 6).await;
    assert_eq!(code(response), 76, "UNSUPPORTED_COMPRESSION_TYPE below v7");

    // acks=0: no response; the next request's answer is the next frame.
    wire.send(&produce_request("strict", 0, good.clone(), 0), 11)
        .await;
    let response: ProduceResponse = wire.call(&produce_request("strict", 0, good, 1), 11).await;
    assert_eq!(
        response.responses[0].partition_responses[0].base_offset, 2,
        "nothing refused was appended; the acks=0 batch was"
    );
    node.stop().await;
}

#[tokio::test]
async fn fetch_long_polls_until_data_arrives_or_the_wait_ends() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "poll", 1, &[]).await;
    let mut waiting = fetch_request("poll", 0, 0);
    waiting.max_wait_ms = 300;
    waiting.min_bytes = 1;
    let started = Instant::now();
    let response: FetchResponse = wire.call(&waiting, 12).await;
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "waited for max_wait_ms"
    );
    assert!(
        response.responses[0].partitions[0]
            .records
            .as_ref()
            .unwrap()
            .is_empty()
    );

    waiting.max_wait_ms = 20_000;
    let address = node.address;
    let producer = tokio::spawn(async move {
        // Not a wait for an event: a head start for the fetch so that it is usually
        // parked when the record arrives (the wake-up path). If the produce wins the
        // race, the fetch returns the record at once and the assertions still hold.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut wire = Wire::connect(address).await;
        produce(
            &mut wire,
            "poll",
            0,
            batch("late", 1, now_ms(), Compression::None),
        )
        .await
    });
    let started = Instant::now();
    let response: FetchResponse = wire.call(&waiting, 12).await;
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "answered when data came"
    );
    assert_eq!(
        values(
            response.responses[0].partitions[0]
                .records
                .as_ref()
                .unwrap()
        ),
        vec!["late-0"]
    );
    assert_eq!(producer.await.unwrap(), (0, 0));
    node.stop().await;
}

#[tokio::test]
async fn incremental_fetch_sessions_send_only_what_changed() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "session", 2, &[]).await;
    let mut full = fetch_request("session", 0, 0);
    full.session_epoch = 0;
    full.topics[0].partitions.push(
        FetchPartition::default()
            .with_partition(1)
            .with_fetch_offset(0)
            .with_partition_max_bytes(1 << 20),
    );
    let response: FetchResponse = wire.call(&full, 12).await;
    let session = response.session_id;
    assert_ne!(session, 0, "epoch 0 opens a session");
    assert_eq!(response.responses[0].partitions.len(), 2, "a full response");

    let incremental = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_bytes(1 << 20)
        .with_session_id(session)
        .with_session_epoch(1);
    let response: FetchResponse = wire.call(&incremental, 12).await;
    assert_eq!(
        (response.error_code, response.responses.len()),
        (0, 0),
        "nothing changed"
    );

    produce(
        &mut wire,
        "session",
        1,
        batch("new", 1, now_ms(), Compression::None),
    )
    .await;
    let response: FetchResponse = wire
        .call(&incremental.clone().with_session_epoch(2), 12)
        .await;
    assert_eq!(response.responses.len(), 1);
    let p = &response.responses[0].partitions[0];
    assert_eq!(
        (p.partition_index, p.high_watermark),
        (1, 1),
        "only the partition that grew"
    );
    assert_eq!(values(p.records.as_ref().unwrap()), vec!["new-0"]);

    let response: FetchResponse = wire
        .call(&incremental.clone().with_session_epoch(2), 12)
        .await;
    assert_eq!(response.error_code, 71, "INVALID_FETCH_SESSION_EPOCH");
    let response: FetchResponse = wire
        .call(
            &incremental
                .with_session_id(session + 1)
                .with_session_epoch(1),
            12,
        )
        .await;
    assert_eq!(response.error_code, 70, "FETCH_SESSION_ID_NOT_FOUND");
    node.stop().await;
}

#[tokio::test]
async fn metadata_auto_creates_topics_only_when_allowed() {
    let node = TestNode::start(&[("num.partitions", "2")]).await;
    let mut wire = Wire::connect(node.address).await;
    let ask = |topic: &str, allow: bool| {
        MetadataRequest::default()
            .with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(name(topic))),
            ]))
            .with_allow_auto_topic_creation(allow)
    };
    let response: MetadataResponse = wire.call(&ask("manual", false), 9).await;
    assert_eq!(response.topics[0].error_code, 3);
    let response: MetadataResponse = wire.call(&ask("auto", true), 9).await;
    assert_eq!(response.topics[0].error_code, 0);
    assert_eq!(response.topics[0].partitions.len(), 2, "num.partitions");
    let response: MetadataResponse = wire.call(&ask("bad name!", true), 9).await;
    assert_eq!(response.topics[0].error_code, 17);
    node.stop().await;

    let node = TestNode::start(&[("auto.create.topics.enable", "false")]).await;
    let mut wire = Wire::connect(node.address).await;
    let response: MetadataResponse = wire.call(&ask("auto", true), 9).await;
    assert_eq!(
        response.topics[0].error_code, 3,
        "auto.create.topics.enable=false"
    );
    node.stop().await;
}

#[tokio::test]
async fn configs_are_described_with_sources_and_altered() {
    let node = TestNode::start(&[("log.retention.ms", "7200000")]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "conf", 1, &[("cleanup.policy", "compact")]).await;
    let describe = |keys: Option<Vec<&str>>| {
        DescribeConfigsRequest::default()
            .with_include_synonyms(true)
            .with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s("conf"))
                    .with_configuration_keys(keys.map(|k| k.into_iter().map(s).collect())),
            ])
    };
    let lookup = |response: &DescribeConfigsResponse, key: &str| {
        let entry = response.results[0]
            .configs
            .iter()
            .find(|c| c.name.as_str() == key)
            .unwrap_or_else(|| panic!("{key} described"));
        (
            entry.value.as_ref().unwrap().to_string(),
            entry.config_source,
        )
    };
    let response: DescribeConfigsResponse = wire.call(&describe(None), 4).await;
    assert!(response.results[0].configs.len() >= 30, "every topic key");
    assert_eq!(lookup(&response, "cleanup.policy"), ("compact".into(), 1));
    assert_eq!(
        lookup(&response, "retention.ms"),
        ("7200000".into(), 4),
        "STATIC_BROKER_CONFIG"
    );
    assert_eq!(
        lookup(&response, "segment.ms"),
        ("604800000".into(), 5),
        "DEFAULT_CONFIG"
    );
    let response: DescribeConfigsResponse =
        wire.call(&describe(Some(vec!["segment.bytes"])), 4).await;
    assert_eq!(
        response.results[0].configs.len(),
        1,
        "only the keys asked for"
    );

    let alter = |op: i8, key: &str, value: Option<&str>| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("conf"))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(s(key))
                        .with_config_operation(op)
                        .with_value(value.map(s)),
                ]),
        ])
    };
    let response: IncrementalAlterConfigsResponse =
        wire.call(&alter(0, "retention.ms", Some("1000")), 1).await;
    assert_eq!(response.responses[0].error_code, 0);
    let response: IncrementalAlterConfigsResponse =
        wire.call(&alter(0, "retention.ms", Some("-5")), 1).await;
    assert_eq!(response.responses[0].error_code, 40, "INVALID_CONFIG");
    let response: IncrementalAlterConfigsResponse = wire
        .call(&alter(2, "cleanup.policy", Some("delete")), 1)
        .await;
    assert_eq!(response.responses[0].error_code, 0, "APPEND to a list");
    let response: DescribeConfigsResponse = wire.call(&describe(None), 4).await;
    assert_eq!(lookup(&response, "retention.ms"), ("1000".into(), 1));
    assert_eq!(
        lookup(&response, "cleanup.policy"),
        ("compact,delete".into(), 1)
    );
    let response: IncrementalAlterConfigsResponse =
        wire.call(&alter(1, "retention.ms", None), 1).await;
    assert_eq!(response.responses[0].error_code, 0);
    let response: DescribeConfigsResponse = wire.call(&describe(None), 4).await;
    assert_eq!(
        lookup(&response, "retention.ms").1,
        4,
        "DELETE falls back to the broker value"
    );

    // A dynamic cluster-wide broker default applies to topics without an override.
    let broker_default = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(s(""))
            .with_configs(vec![
                incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(s("log.segment.bytes"))
                    .with_config_operation(0)
                    .with_value(Some(s("2097152"))),
            ]),
    ]);
    let response: IncrementalAlterConfigsResponse = wire.call(&broker_default, 1).await;
    assert_eq!(
        response.responses[0].error_code, 0,
        "{:?}",
        response.responses[0].error_message
    );
    let response: DescribeConfigsResponse = wire.call(&describe(None), 4).await;
    assert_eq!(
        lookup(&response, "segment.bytes"),
        ("2097152".into(), 3),
        "DYNAMIC_DEFAULT_BROKER_CONFIG"
    );

    // The legacy AlterConfigs replaces the whole set.
    let replace = AlterConfigsRequest::default().with_resources(vec![
        alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(s("conf"))
            .with_configs(vec![
                alter_configs_request::AlterableConfig::default()
                    .with_name(s("segment.ms"))
                    .with_value(Some(s("60000"))),
            ]),
    ]);
    let response: AlterConfigsResponse = wire.call(&replace, 2).await;
    assert_eq!(response.responses[0].error_code, 0);
    let response: DescribeConfigsResponse = wire.call(&describe(None), 4).await;
    assert_eq!(lookup(&response, "segment.ms"), ("60000".into(), 1));
    assert_eq!(
        lookup(&response, "cleanup.policy"),
        ("delete".into(), 5),
        "others removed"
    );
    node.stop().await;
}

#[tokio::test]
async fn delete_records_moves_the_log_start() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "trim", 1, &[]).await;
    for i in 0..4 {
        produce(
            &mut wire,
            "trim",
            0,
            batch(&format!("b{i}"), 5, now_ms(), Compression::None),
        )
        .await;
    }
    let request = DeleteRecordsRequest::default().with_topics(vec![
        delete_records_request::DeleteRecordsTopic::default()
            .with_name(name("trim"))
            .with_partitions(vec![
                delete_records_request::DeleteRecordsPartition::default()
                    .with_partition_index(0)
                    .with_offset(12),
            ]),
    ]);
    let response: DeleteRecordsResponse = wire.call(&request, 2).await;
    assert_eq!(response.topics[0].partitions[0].low_watermark, 12);
    assert_eq!(list_offset(&mut wire, "trim", 0, -2).await.1, 12);
    let response: FetchResponse = wire.call(&fetch_request("trim", 0, 5), 12).await;
    assert_eq!(response.responses[0].partitions[0].error_code, 1);
    let mut beyond = request.clone();
    beyond.topics[0].partitions[0].offset = 100;
    let response: DeleteRecordsResponse = wire.call(&beyond, 2).await;
    assert_eq!(
        response.topics[0].partitions[0].error_code, 1,
        "OFFSET_OUT_OF_RANGE"
    );
    node.stop().await;
}

#[tokio::test]
async fn state_survives_a_restart_and_producer_ids_stay_unique() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    let topic_id = create(
        &mut wire,
        "durable",
        2,
        &[("message.timestamp.type", "LogAppendTime")],
    )
    .await
    .topics[0]
        .topic_id;
    let response: ProduceResponse = wire
        .call(
            &produce_request("durable", 1, batch("x", 3, 5, Compression::Lz4), -1),
            11,
        )
        .await;
    let appended_at = response.responses[0].partition_responses[0].log_append_time_ms;
    assert!(
        appended_at >= now_ms() - 60_000,
        "LogAppendTime topics report the append time"
    );
    let first: InitProducerIdResponse = wire
        .call(
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000),
            4,
        )
        .await;
    assert_eq!(first.error_code, 0);
    let dir = node.stop().await;

    let node = TestNode::start_in(dir, &[]).await;
    let mut wire = Wire::connect(node.address).await;
    let metadata: MetadataResponse = wire
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    assert_eq!(metadata.topics[0].topic_id, topic_id);
    assert_eq!(metadata.topics[0].partitions.len(), 2);
    let response: FetchResponse = wire.call(&fetch_request("durable", 1, 0), 12).await;
    let records = response.responses[0].partitions[0].records.clone().unwrap();
    assert_eq!(values(&records), vec!["x-0", "x-1", "x-2"]);
    let fetched = batches(records).next().unwrap().unwrap();
    assert_eq!(
        fetched.max_timestamp(),
        appended_at,
        "the broker's time was stored"
    );
    let second: InitProducerIdResponse = wire
        .call(
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000),
            4,
        )
        .await;
    assert!(
        second.producer_id.0 > first.producer_id.0,
        "no id is handed out twice"
    );
    let response: OffsetForLeaderEpochResponse = wire
        .call(
            &OffsetForLeaderEpochRequest::default().with_topics(vec![
                offset_for_leader_epoch_request::OffsetForLeaderTopic::default()
                    .with_topic(name("durable"))
                    .with_partitions(vec![
                        offset_for_leader_epoch_request::OffsetForLeaderPartition::default()
                            .with_partition(1)
                            .with_current_leader_epoch(-1)
                            .with_leader_epoch(0),
                    ]),
            ]),
            4,
        )
        .await;
    let p = &response.topics[0].partitions[0];
    assert_eq!((p.error_code, p.leader_epoch, p.end_offset), (0, 0, 3));
    let response: DescribeLogDirsResponse = wire
        .call(&DescribeLogDirsRequest::default().with_topics(None), 4)
        .await;
    let dir = &response.results[0];
    let partitions: Vec<_> = dir
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .collect();
    assert_eq!(partitions.len(), 2);
    assert!(partitions.iter().any(|p| p.partition_size > 0));
    assert!(dir.total_bytes > 0 && dir.usable_bytes > 0);
    let cluster: DescribeClusterResponse = wire.call(&DescribeClusterRequest::default(), 1).await;
    assert_eq!((cluster.error_code, cluster.brokers.len()), (0, 1));
    assert_eq!(
        cluster.cluster_id,
        metadata.cluster_id.unwrap(),
        "one cluster id everywhere"
    );
    node.stop().await;
}

#[tokio::test]
async fn describe_topic_partitions_pages_with_a_cursor() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "a", 3, &[]).await;
    create(&mut wire, "b", 2, &[]).await;
    let mut request = DescribeTopicPartitionsRequest::default().with_response_partition_limit(2);
    let mut seen = Vec::new();
    loop {
        let response: DescribeTopicPartitionsResponse = wire.call(&request, 0).await;
        for topic in &response.topics {
            for p in &topic.partitions {
                seen.push(format!(
                    "{}-{}",
                    topic.name.as_ref().unwrap().as_str(),
                    p.partition_index
                ));
            }
        }
        match response.next_cursor {
            Some(cursor) => {
                request = request.with_cursor(Some(
                    describe_topic_partitions_request::Cursor::default()
                        .with_topic_name(cursor.topic_name)
                        .with_partition_index(cursor.partition_index),
                ));
            }
            None => break,
        }
    }
    assert_eq!(seen, vec!["a-0", "a-1", "a-2", "b-0", "b-1"]);
    node.stop().await;
}

/// Sends a request and reads its response; (sent, received) correlation ids.
async fn round_trip<Q: kafka_protocol::protocol::Request>(
    wire: &mut Wire,
    request: &Q,
    version: i16,
) -> (i32, i32) {
    let sent = wire.send(request, version).await;
    let api_key = ApiKey::try_from(Q::KEY).unwrap();
    let (received, _) = wire.receive::<Q::Response>(api_key, version).await;
    (sent, received)
}

/// Every served API answers at every version it advertises (Produce from v3): a handler
/// that sets a field its version cannot carry would close the connection instead.
#[tokio::test]
async fn every_api_answers_at_every_advertised_version() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "any", 1, &[]).await;
    macro_rules! each_version {
        ($key:expr, $request:expr) => {{
            let (min, max) = sluice_broker::apis::supported_versions($key).unwrap();
            let min = if $key == ApiKey::Produce { 3 } else { min };
            for version in min..=max {
                let (sent, received) = round_trip(&mut wire, &$request, version).await;
                assert_eq!(received, sent, "{:?} v{version}", $key);
            }
        }};
    }
    let topic = || metadata_request::MetadataRequestTopic::default().with_name(Some(name("any")));
    each_version!(
        ApiKey::Metadata,
        MetadataRequest::default().with_topics(Some(vec![topic()]))
    );
    each_version!(
        ApiKey::Produce,
        produce_request("any", 0, batch("v", 1, now_ms(), Compression::None), 1)
    );
    each_version!(ApiKey::Fetch, fetch_request("any", 0, 0));
    each_version!(
        ApiKey::ListOffsets,
        ListOffsetsRequest::default().with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(name("any"))
                .with_partitions(vec![ListOffsetsPartition::default().with_timestamp(-1)]),
        ])
    );
    each_version!(ApiKey::CreateTopics, CreateTopicsRequest::default());
    each_version!(ApiKey::DeleteTopics, DeleteTopicsRequest::default());
    each_version!(ApiKey::CreatePartitions, CreatePartitionsRequest::default());
    each_version!(ApiKey::DeleteRecords, DeleteRecordsRequest::default());
    each_version!(
        ApiKey::InitProducerId,
        InitProducerIdRequest::default().with_transactional_id(None)
    );
    each_version!(
        ApiKey::OffsetForLeaderEpoch,
        OffsetForLeaderEpochRequest::default()
    );
    each_version!(
        ApiKey::DescribeConfigs,
        DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(s("any"))
                .with_configuration_keys(None),
        ])
    );
    each_version!(ApiKey::AlterConfigs, AlterConfigsRequest::default());
    each_version!(
        ApiKey::IncrementalAlterConfigs,
        IncrementalAlterConfigsRequest::default()
    );
    each_version!(
        ApiKey::DescribeLogDirs,
        DescribeLogDirsRequest::default().with_topics(None)
    );
    each_version!(ApiKey::DescribeCluster, DescribeClusterRequest::default());
    each_version!(ApiKey::DescribeQuorum, quorum_request("__cluster_metadata"));
    each_version!(
        ApiKey::DescribeTopicPartitions,
        DescribeTopicPartitionsRequest::default()
    );
    each_version!(
        ApiKey::AlterPartitionReassignments,
        AlterPartitionReassignmentsRequest::default()
    );
    each_version!(
        ApiKey::ListPartitionReassignments,
        ListPartitionReassignmentsRequest::default().with_topics(None)
    );
    each_version!(
        ApiKey::ElectLeaders,
        ElectLeadersRequest::default().with_topic_partitions(None)
    );
    each_version!(
        ApiKey::UnregisterBroker,
        UnregisterBrokerRequest::default().with_broker_id(BrokerId(7))
    );
    // The group APIs that answer at once (JoinGroup and SyncGroup wait for a rebalance;
    // tests/groups.rs drives them).
    each_version!(ApiKey::FindCoordinator, FindCoordinatorRequest::default());
    each_version!(ApiKey::Heartbeat, HeartbeatRequest::default());
    each_version!(ApiKey::LeaveGroup, LeaveGroupRequest::default());
    each_version!(ApiKey::OffsetCommit, OffsetCommitRequest::default());
    each_version!(ApiKey::OffsetFetch, OffsetFetchRequest::default());
    each_version!(ApiKey::OffsetDelete, OffsetDeleteRequest::default());
    each_version!(ApiKey::ListGroups, ListGroupsRequest::default());
    each_version!(ApiKey::DescribeGroups, DescribeGroupsRequest::default());
    each_version!(ApiKey::DeleteGroups, DeleteGroupsRequest::default());
    each_version!(
        ApiKey::ConsumerGroupDescribe,
        ConsumerGroupDescribeRequest::default()
    );
    each_version!(
        ApiKey::DescribeProducers,
        DescribeProducersRequest::default()
    );
    node.stop().await;
}

/// DescribeProducers (`kafka-transactions.sh describe-producers`): the idempotent
/// producers the leader has state for, with their epoch and last sequence; the
/// partitions it cannot answer for get Kafka's errors.
#[tokio::test]
async fn describe_producers_lists_the_idempotent_producers_of_a_partition() {
    use kafka_protocol::messages::describe_producers_request::TopicRequest;
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "produced", 1, &[]).await;
    let init: InitProducerIdResponse = wire
        .call(
            &InitProducerIdRequest::default().with_transactional_id(None),
            4,
        )
        .await;
    assert_eq!(init.error_code, 0);
    let mut builder = RecordBatchBuilder::new(Compression::None).producer(
        init.producer_id.0,
        init.producer_epoch,
        0,
    );
    for i in 0..3 {
        builder
            .append(&NewRecord {
                timestamp: now_ms(),
                key: None,
                value: Some(Bytes::from(format!("v{i}"))),
                headers: Vec::new(),
            })
            .unwrap();
    }
    let (code, _) = produce(&mut wire, "produced", 0, builder.build()).await;
    assert_eq!(code, 0);
    let response: DescribeProducersResponse = wire
        .call(
            &DescribeProducersRequest::default().with_topics(vec![
                TopicRequest::default()
                    .with_name(name("produced"))
                    .with_partition_indexes(vec![0, 5]),
            ]),
            0,
        )
        .await;
    let partitions = &response.topics[0].partitions;
    assert_eq!(partitions[0].error_code, 0);
    assert_eq!(partitions[0].active_producers.len(), 1);
    let producer = &partitions[0].active_producers[0];
    assert_eq!(producer.producer_id, init.producer_id);
    assert_eq!(producer.producer_epoch, i32::from(init.producer_epoch));
    assert_eq!(producer.last_sequence, 2);
    assert_eq!(producer.current_txn_start_offset, -1);
    assert_eq!(partitions[1].error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    node.stop().await;
}

/// Produce requests pipelined on one connection are appended in the order they were
/// sent (a producer with several requests in flight relies on it).
#[tokio::test]
async fn pipelined_produce_requests_are_appended_in_order() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "ordered", 1, &[]).await;
    let mut sent = Vec::new();
    for i in 0..100 {
        let records = batch(
            &format!("r{i}"),
            1 + i % 7,
            now_ms(),
            Compression::ALL[i % 5],
        );
        sent.extend(values(&records));
        wire.send(&produce_request("ordered", 0, records, 1), 11)
            .await;
    }
    let mut next_offset = 0;
    for i in 0..100 {
        let (_, response) = wire.receive::<ProduceResponse>(ApiKey::Produce, 11).await;
        let p = &response.responses[0].partition_responses[0];
        assert_eq!(
            (p.error_code, p.base_offset),
            (0, next_offset),
            "request {i}"
        );
        next_offset += (1 + i % 7) as i64;
    }
    let response: FetchResponse = wire.call(&fetch_request("ordered", 0, 0), 12).await;
    assert_eq!(
        values(
            response.responses[0].partitions[0]
                .records
                .as_ref()
                .unwrap()
        ),
        sent
    );
    node.stop().await;
}

fn quorum_request(topic: &str) -> DescribeQuorumRequest {
    DescribeQuorumRequest::default().with_topics(vec![
        describe_quorum_request::TopicData::default()
            .with_topic_name(name(topic))
            .with_partitions(vec![
                describe_quorum_request::PartitionData::default().with_partition_index(0),
            ]),
    ])
}

/// DescribeQuorum: the single node leads a quorum of one; the high watermark follows
/// each metadata write.
#[tokio::test]
async fn describe_quorum_reports_the_single_voter() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    let before: DescribeQuorumResponse = wire.call(&quorum_request("__cluster_metadata"), 2).await;
    let p = &before.topics[0].partitions[0];
    assert_eq!(
        (
            before.error_code,
            p.error_code,
            p.leader_id.0,
            p.leader_epoch
        ),
        (0, 0, 1, 1)
    );
    assert_eq!(p.current_voters.len(), 1);
    assert_eq!(p.current_voters[0].replica_id.0, 1);
    assert_eq!(p.current_voters[0].log_end_offset, p.high_watermark);
    assert!(
        !p.current_voters[0].replica_directory_id.is_nil(),
        "v2 names the directory"
    );
    assert!(p.observers.is_empty());
    create(&mut wire, "q", 2, &[]).await;
    let after: DescribeQuorumResponse = wire.call(&quorum_request("__cluster_metadata"), 2).await;
    assert_eq!(
        after.topics[0].partitions[0].high_watermark,
        p.high_watermark + 3,
        "a topic and its two partitions are three records"
    );
    let wrong: DescribeQuorumResponse = wire.call(&quorum_request("orders"), 1).await;
    assert_eq!(
        wrong.topics[0].partitions[0].error_code, 3,
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    node.stop().await;
}

/// An idempotent producer's retry over the wire, as after a lost response: the same
/// batch (same producer id, epoch and sequence) is answered with its first offset and
/// stored once; a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER and an older epoch
/// INVALID_PRODUCER_EPOCH, with nothing appended.
#[tokio::test]
async fn a_retried_idempotent_batch_is_stored_once_and_answered_with_its_first_offset() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    create(&mut wire, "retried", 1, &[]).await;
    let init: InitProducerIdResponse = wire
        .call(
            &InitProducerIdRequest::default().with_transactional_id(None),
            4,
        )
        .await;
    assert_eq!(init.error_code, 0);
    let (id, epoch) = (init.producer_id.0, init.producer_epoch);
    let batch = |epoch: i16, sequence: i32, prefix: &str| {
        let mut builder = RecordBatchBuilder::new(Compression::None).producer(id, epoch, sequence);
        for i in 0..3 {
            builder
                .append(&NewRecord {
                    timestamp: now_ms(),
                    key: None,
                    value: Some(Bytes::from(format!("{prefix}-{i}"))),
                    headers: Vec::new(),
                })
                .unwrap();
        }
        builder.build()
    };
    // Another producer's records first, so the batch does not start at offset 0.
    assert_eq!(
        produce(&mut wire, "retried", 0, batch_of_plain()).await.0,
        0
    );
    let first = batch(epoch, 0, "a");
    let (code, offset) = produce(&mut wire, "retried", 0, first.clone()).await;
    assert_eq!((code, offset), (0, 2));
    // The response was "lost": the producer sends the same batch again.
    assert_eq!(produce(&mut wire, "retried", 0, first).await, (0, 2));
    let (code, offset) = produce(&mut wire, "retried", 0, batch(epoch, 3, "b")).await;
    assert_eq!((code, offset), (0, 5), "the next batch follows");
    let (code, _) = produce(&mut wire, "retried", 0, batch(epoch, 9, "gap")).await;
    assert_eq!(code, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    // A bumped epoch starts again at sequence 0; the old epoch is then refused.
    let (code, offset) = produce(&mut wire, "retried", 0, batch(epoch + 1, 0, "c")).await;
    assert_eq!((code, offset), (0, 8));
    let (code, _) = produce(&mut wire, "retried", 0, batch(epoch, 6, "old")).await;
    assert_eq!(code, 47, "INVALID_PRODUCER_EPOCH");
    let response: FetchResponse = wire.call(&fetch_request("retried", 0, 0), 12).await;
    let records = response.responses[0].partitions[0].records.clone().unwrap();
    assert_eq!(
        values(&records),
        vec![
            "p-0", "p-1", "a-0", "a-1", "a-2", "b-0", "b-1", "b-2", "c-0", "c-1", "c-2"
        ],
        "the retried batch is in the log once; refused batches are not"
    );
    node.stop().await;
}

/// Two records of no producer.
fn batch_of_plain() -> Bytes {
    batch("p", 2, now_ms(), Compression::None)
}

/// `broker.rack` is registered and reaches clients in Metadata, as rack-aware clients
/// (follower fetching, KIP-392) and assignors read it. It was not a known key before:
/// the value was ignored with an "unknown configuration" warning and Metadata said
/// `rack: null` (this test failed).
#[tokio::test]
async fn the_broker_rack_is_registered_and_described() {
    let node = TestNode::start(&[("broker.rack", "rack-a")]).await;
    let mut wire = Wire::connect(node.address).await;
    let metadata: MetadataResponse = wire
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    assert_eq!(metadata.brokers.len(), 1);
    assert_eq!(
        metadata.brokers[0].rack.as_ref().map(|r| r.as_str()),
        Some("rack-a")
    );
}
