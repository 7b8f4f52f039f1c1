//! Admin calls the issue lists beside topics and configs, against a real in-process node:
//! describe the cluster, and delete a group's committed offsets (OffsetDelete), refused
//! for a topic a member is consuming.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::TestNode;
use sluice_client::consumer::{Consumer, ConsumerConfig};
use sluice_client::{Admin, ClientConfig, ErrorCode, NewTopic, TopicPartition};

const SETTINGS: &[(&str, &str)] = &[("group.initial.rebalance.delay.ms", "0")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_cluster_and_delete_group_offsets() {
    let node = TestNode::start(SETTINGS).await;
    let bootstrap = node.address.to_string();
    let admin = Admin::connect(ClientConfig::new([bootstrap.clone()]))
        .await
        .unwrap();
    let cluster = admin.describe_cluster().await.unwrap();
    assert!(cluster.cluster_id.is_some_and(|id| !id.is_empty()));
    assert_eq!(cluster.brokers.len(), 1);
    assert_eq!(cluster.brokers[&1], bootstrap);
    assert_eq!(cluster.controller_id, Some(1));

    admin
        .create_topics(
            &[NewTopic {
                name: "orders".into(),
                num_partitions: Some(2),
                replication_factor: Some(1),
                configs: Vec::new(),
            }],
            false,
        )
        .await
        .unwrap();
    let p0 = TopicPartition::new("orders", 0);
    let p1 = TopicPartition::new("orders", 1);
    let committed = admin
        .alter_group_offsets("idle", &BTreeMap::from([(p0.clone(), 5), (p1.clone(), 7)]))
        .await
        .unwrap();
    assert!(committed.values().all(Result::is_ok), "{committed:?}");
    let deleted = admin
        .delete_group_offsets("idle", std::slice::from_ref(&p0))
        .await
        .unwrap();
    assert!(deleted[&p0].is_ok(), "{deleted:?}");
    let left = admin.list_group_offsets("idle").await.unwrap();
    assert_eq!(left.keys().cloned().collect::<Vec<_>>(), vec![p1.clone()]);
    assert_eq!(left[&p1].offset, 7);

    // A group whose member consumes the topic keeps its offsets.
    let mut consumer = Consumer::new(
        ConsumerConfig::new([bootstrap.clone()])
            .group_id("busy".to_string())
            .session_timeout_ms(6_000)
            .heartbeat_interval_ms(500),
    )
    .await
    .unwrap();
    consumer.subscribe(["orders"], None).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while consumer.assignment().is_empty() {
        assert!(Instant::now() < deadline, "never assigned");
        consumer.poll(Duration::from_millis(100)).await.unwrap();
    }
    consumer.commit_sync().await.unwrap();
    let refused = admin
        .delete_group_offsets("busy", std::slice::from_ref(&p0))
        .await
        .unwrap();
    assert_eq!(
        refused[&p0].as_ref().unwrap_err().code,
        ErrorCode(86),
        "GROUP_SUBSCRIBED_TO_TOPIC"
    );
    consumer.close().await.unwrap();
    node.stop().await;
}
