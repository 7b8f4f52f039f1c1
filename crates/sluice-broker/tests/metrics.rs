//! The Prometheus endpoint of a live node: what a scrape reports after topics are
//! created and records produced, the 404 of any other path, and `metrics.listener=`
//! (empty) turning it off.

mod common;

use std::net::SocketAddr;

use bytes::Bytes;
use common::{TestNode, Wire, get, sample};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::messages::{BrokerId, FetchRequest, fetch_request};
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.to_string()))
}

/// A loopback address with a port that was free a moment ago.
fn free_address() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

fn batch(count: usize) -> Bytes {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp: 1_700_000_000_000 + i as i64,
                key: None,
                value: Some(Bytes::from(format!("value-{i}"))),
                headers: Vec::new(),
            })
            .unwrap();
    }
    builder.build()
}

#[tokio::test]
async fn a_scrape_reports_partitions_leaders_logs_and_requests() {
    let metrics = free_address();
    let node = TestNode::start(&[("metrics.listener", &metrics.to_string())]).await;
    let mut wire = Wire::connect(node.address).await;
    let created = wire
        .call(
            &CreateTopicsRequest::default()
                .with_topics(vec![
                    CreatableTopic::default()
                        .with_name(name("metered"))
                        .with_num_partitions(3)
                        .with_replication_factor(1),
                ])
                .with_timeout_ms(5000),
            7,
        )
        .await;
    assert_eq!(created.topics[0].error_code, 0);
    let produced = 4;
    for _ in 0..produced {
        let response = wire
            .call(
                &ProduceRequest::default()
                    .with_acks(-1)
                    .with_timeout_ms(5000)
                    .with_topic_data(vec![
                        TopicProduceData::default()
                            .with_name(name("metered"))
                            .with_partition_data(vec![
                                PartitionProduceData::default()
                                    .with_index(1)
                                    .with_records(Some(batch(5))),
                            ]),
                    ]),
                11,
            )
            .await;
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
    }

    let (status, text) = get(metrics, "/metrics").await;
    assert_eq!(status, 200, "{text}");
    for (series, expected) in [
        ("kafka_server_replicamanager_partitioncount", 3.0),
        ("kafka_server_replicamanager_leadercount", 3.0),
        ("kafka_server_replicamanager_underreplicatedpartitions", 0.0),
        ("kafka_server_replicamanager_isrshrinks_total", 0.0),
        ("kafka_server_replicamanager_isrexpands_total", 0.0),
        (
            "kafka_controller_kafkacontroller_activecontrollercount",
            1.0,
        ),
        (
            "kafka_controller_kafkacontroller_offlinepartitionscount",
            0.0,
        ),
        ("kafka_controller_kafkacontroller_globaltopiccount", 1.0),
        // A quorum of one: this node (id 1) leads it.
        ("kafka_server_raft_metrics_current_leader", 1.0),
        ("kafka_controller_kafkacontroller_globalpartitioncount", 3.0),
        (
            r#"kafka_log_log_logendoffset{topic="metered",partition="1"}"#,
            20.0,
        ),
        (
            r#"kafka_log_log_logstartoffset{topic="metered",partition="1"}"#,
            0.0,
        ),
        (
            r#"kafka_log_log_logendoffset{topic="metered",partition="0"}"#,
            0.0,
        ),
        (
            r#"kafka_network_requestmetrics_requests_total{request="Produce",version="11"}"#,
            produced as f64,
        ),
        (
            r#"kafka_network_requestmetrics_requests_total{request="CreateTopics",version="7"}"#,
            1.0,
        ),
        ("kafka_server_brokertopicmetrics_messagesin_total", 20.0),
        ("kafka_server_brokertopicmetrics_bytesout_total", 0.0),
    ] {
        assert_eq!(sample(&text, series), Some(expected), "{series} in\n{text}");
    }
    let size = sample(
        &text,
        r#"kafka_log_log_size{topic="metered",partition="1"}"#,
    )
    .unwrap();
    assert!(size > 0.0, "{text}");
    assert_eq!(
        sample(&text, "kafka_server_brokertopicmetrics_bytesin_total"),
        Some(size),
        "bytes in are the batches appended"
    );
    assert_eq!(
        sample(
            &text,
            r#"kafka_log_log_size{topic="metered",partition="0"}"#
        ),
        Some(0.0)
    );
    for quantile in ["0.50", "0.75", "0.95", "0.98", "0.99", "0.999"] {
        let series = format!(
            r#"kafka_network_requestmetrics_totaltimems{{request="Produce",quantile="{quantile}"}}"#
        );
        let millis = sample(&text, &series).unwrap_or_else(|| panic!("{series} in\n{text}"));
        assert!(millis >= 0.0);
    }

    // A fetch of the whole partition: bytes out are what it served.
    let fetched = wire
        .call(
            &FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_bytes(1 << 20)
                .with_session_epoch(-1)
                .with_topics(vec![
                    fetch_request::FetchTopic::default()
                        .with_topic(name("metered"))
                        .with_partitions(vec![
                            fetch_request::FetchPartition::default()
                                .with_partition(1)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(1 << 20),
                        ]),
                ]),
            12,
        )
        .await;
    let served = fetched.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, |r| r.len());
    assert_eq!(served as f64, size, "the whole partition in one fetch");
    let (_, text) = get(metrics, "/metrics").await;
    assert_eq!(
        sample(&text, "kafka_server_brokertopicmetrics_bytesout_total"),
        Some(size)
    );

    let (status, _) = get(metrics, "/other").await;
    assert_eq!(status, 404);
    node.stop().await;
    assert!(
        tokio::net::TcpStream::connect(metrics).await.is_err(),
        "the endpoint closes with the node"
    );
}

#[tokio::test]
async fn an_empty_metrics_listener_binds_nothing() {
    // What address would be bound is `metrics::configured_address`'s unit test; here the
    // node starts without one and serves Kafka.
    let node = TestNode::start(&[("metrics.listener", "")]).await;
    let mut wire = Wire::connect(node.address).await;
    let response = wire.call(&ApiVersionsRequest::default(), 2).await;
    assert_eq!(response.error_code, 0);
    node.stop().await;
}

#[tokio::test]
async fn an_explicit_metrics_listener_that_cannot_bind_fails_the_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let config = sluice_broker::BrokerConfig::load(
        sluice_broker::EMBEDDED_SERVER_PROPERTIES,
        &[
            (
                "listeners".into(),
                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0".into(),
            ),
            ("log.dirs".into(), dir.path().display().to_string()),
            ("metrics.listener".into(), address.clone()),
        ],
    )
    .unwrap()
    .config;
    let (_stop, stopped) = tokio::sync::watch::channel(false);
    let error = sluice_broker::node::run(config, stopped, |_, _| {})
        .await
        .expect_err("the port is taken");
    assert!(error.to_string().contains("metrics.listener"), "{error}");
    assert!(error.to_string().contains(&address), "{error}");
}

/// FindCoordinator until the group's coordinator (this node) has loaded its partition.
async fn wait_for_coordinator(address: SocketAddr, group: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let mut wire = Wire::connect(address).await;
        let found = wire
            .call(
                &FindCoordinatorRequest::default()
                    .with_coordinator_keys(vec![StrBytes::from_string(group.into())]),
                6,
            )
            .await;
        let described = wire
            .call(
                &DescribeGroupsRequest::default()
                    .with_groups(vec![GroupId(StrBytes::from_string(group.into()))]),
                5,
            )
            .await;
        if found.coordinators[0].error_code == 0 && described.groups[0].error_code == 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the coordinator loads"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_scrape_reports_the_group_coordinators_groups_and_offsets() {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    let metrics = free_address();
    let node = TestNode::start(&[("metrics.listener", &metrics.to_string())]).await;
    let mut wire = Wire::connect(node.address).await;
    let created = wire
        .call(
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(name("grouped"))
                    .with_num_partitions(3)
                    .with_replication_factor(1),
            ]),
            7,
        )
        .await;
    assert_eq!(created.topics[0].error_code, 0);
    // Two groups with committed offsets (2 + 1), one a KIP-848 group with a member.
    for (group, partitions) in [("counted-a", vec![0, 1]), ("counted-b", vec![2])] {
        wait_for_coordinator(node.address, group).await;
        let committed = wire
            .call(
                &OffsetCommitRequest::default()
                    .with_group_id(GroupId(StrBytes::from_string(group.into())))
                    .with_generation_id_or_member_epoch(-1)
                    .with_topics(vec![
                        OffsetCommitRequestTopic::default()
                            .with_name(name("grouped"))
                            .with_partitions(
                                partitions
                                    .iter()
                                    .map(|p| {
                                        OffsetCommitRequestPartition::default()
                                            .with_partition_index(*p)
                                            .with_committed_offset(1)
                                    })
                                    .collect(),
                            ),
                    ]),
                9,
            )
            .await;
        assert!(
            committed.topics[0]
                .partitions
                .iter()
                .all(|p| p.error_code == 0)
        );
    }
    let joined = wire
        .call(
            &ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("counted-b")))
                .with_member_id(StrBytes::from_static_str("member-of-counted-b-0001"))
                .with_member_epoch(0)
                .with_rebalance_timeout_ms(10_000)
                .with_subscribed_topic_names(Some(vec![name("grouped")]))
                .with_topic_partitions(Some(vec![])),
            1,
        )
        .await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let (status, text) = get(metrics, "/metrics").await;
    assert_eq!(status, 200);
    for (series, expected) in [
        (
            "kafka_coordinator_group_groupmetadatamanager_numoffsets",
            3.0,
        ),
        (
            "kafka_coordinator_group_groupmetadatamanager_numgroups",
            1.0,
        ),
        (
            "kafka_coordinator_group_groupmetadatamanager_numgroupsempty",
            1.0,
        ),
        (
            "kafka_coordinator_group_groupmetadatamanager_numgroupsstable",
            0.0,
        ),
        (
            r#"kafka_server_group_coordinator_metrics_group_count{protocol="classic"}"#,
            1.0,
        ),
        (
            r#"kafka_server_group_coordinator_metrics_group_count{protocol="consumer"}"#,
            1.0,
        ),
        (
            r#"kafka_server_group_coordinator_metrics_consumer_group_count{state="stable"}"#,
            1.0,
        ),
    ] {
        assert_eq!(sample(&text, series), Some(expected), "{series} in\n{text}");
    }
    node.stop().await;
}
