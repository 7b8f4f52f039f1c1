//! Partition replication against live nodes: the high watermark a consumer sees, acks,
//! min.insync.replicas, follower fetch and divergence on one node; and on an
//! in-process cluster (`TestCluster`), records reaching every follower, ISR shrink and
//! expansion, and a leader change.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{TestCluster, TestNode, Wire, values};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, ErrorCode, NewRecord, RecordBatchBuilder};

const NONE: i16 = ErrorCode::NONE.0;
const OFFSET_OUT_OF_RANGE: i16 = ErrorCode::OFFSET_OUT_OF_RANGE.0;
const NOT_LEADER_OR_FOLLOWER: i16 = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
const NOT_ENOUGH_REPLICAS: i16 = ErrorCode::NOT_ENOUGH_REPLICAS.0;
const UNKNOWN_LEADER_EPOCH: i16 = ErrorCode::UNKNOWN_LEADER_EPOCH.0;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

fn name(text: &str) -> TopicName {
    TopicName(s(text))
}

fn batch(prefix: &str, count: usize) -> Bytes {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp: now,
                key: None,
                value: Some(Bytes::from(format!("{prefix}-{i}"))),
                headers: Vec::new(),
            })
            .unwrap();
    }
    builder.build()
}

fn expected(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i}")).collect()
}

async fn create(
    wire: &mut Wire,
    topic: &str,
    replication_factor: i16,
    configs: &[(&str, &str)],
) -> i16 {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(1)
                .with_replication_factor(replication_factor)
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
        .with_timeout_ms(10_000);
    let response: CreateTopicsResponse = wire.call(&request, 7).await;
    response.topics[0].error_code
}

/// Produce v11 (v10+ carries KIP-951's leader hints): the partition's answer.
async fn produce(
    wire: &mut Wire,
    topic: &str,
    records: Bytes,
    acks: i16,
) -> (ProduceResponse, produce_response::PartitionProduceResponse) {
    let request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(name(topic))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(records)),
                ]),
        ]);
    let response: ProduceResponse = wire.call(&request, 11).await;
    let partition = response.responses[0].partition_responses[0].clone();
    (response, partition)
}

/// [`produce`] to a node an observer already saw elected: it may not have applied its
/// election yet, and a produce it refuses with UNKNOWN_TOPIC_OR_PARTITION or
/// NOT_LEADER_OR_FOLLOWER appended nothing, so it is sent again (as clients do) for up to
/// 20 s.
async fn produce_to_leader(
    wire: &mut Wire,
    topic: &str,
    records: Bytes,
    acks: i16,
) -> produce_response::PartitionProduceResponse {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, p) = produce(wire, topic, records.clone(), acks).await;
        if ![3, 6].contains(&p.error_code) || Instant::now() > deadline {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A consumer's Fetch v12 of partition 0 (v11+ may be served by a follower).
fn consumer_fetch(topic: &str, offset: i64, last_fetched_epoch: i32) -> FetchRequest {
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
                        .with_partition(0)
                        .with_fetch_offset(offset)
                        .with_last_fetched_epoch(last_fetched_epoch)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ])
}

async fn fetch_partition(
    wire: &mut Wire,
    request: &FetchRequest,
    version: i16,
) -> fetch_response::PartitionData {
    let response: FetchResponse = wire.call(request, version).await;
    response.responses[0].partitions[0].clone()
}

async fn latest_offset(wire: &mut Wire, topic: &str) -> (i16, i64) {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1),
                ]),
        ]);
    let response: ListOffsetsResponse = wire.call(&request, 7).await;
    let p = &response.topics[0].partitions[0];
    (p.error_code, p.offset)
}

/// (leader, ISR) of partition 0 as `address` sees it; `None` while it has no leader.
async fn leader_and_isr(address: SocketAddr, topic: &str) -> Option<(i32, Vec<i32>)> {
    let mut wire = Wire::connect(address).await;
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name(topic))),
        ]))
        .with_allow_auto_topic_creation(false);
    let response: MetadataResponse = wire.try_call(&request, 12).await?;
    let partition = response.topics.first()?.partitions.first()?;
    (partition.error_code == NONE && partition.leader_id.0 >= 0).then(|| {
        let mut isr: Vec<i32> = partition.isr_nodes.iter().map(|id| id.0).collect();
        isr.sort();
        (partition.leader_id.0, isr)
    })
}

/// Evaluates `check` (which may `.await`) every 50 ms until it holds, for at most
/// `within`.
macro_rules! eventually {
    ($within:expr, $what:expr, $check:expr) => {{
        let deadline = Instant::now() + $within;
        loop {
            if $check {
                break;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {}", $what);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }};
}

/// One cluster at a time: three nodes each already load two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The node index of broker `id` in a cluster.
fn index_of(id: i32) -> usize {
    (id - 1) as usize
}

/// Creates a one-partition topic on the cluster and waits until every running node
/// knows its leader and the ISR holds every replica; returns the leader's id.
async fn create_replicated(
    cluster: &TestCluster,
    topic: &str,
    replication_factor: i16,
    configs: &[(&str, &str)],
) -> i32 {
    let mut wire = Wire::connect(cluster.addresses()[0]).await;
    assert_eq!(
        create(&mut wire, topic, replication_factor, configs).await,
        NONE
    );
    let mut leader = -1;
    for address in cluster.addresses() {
        eventually!(
            Duration::from_secs(20),
            "the partition's leader",
            match leader_and_isr(address, topic).await {
                Some((id, isr)) if isr.len() == replication_factor as usize => {
                    leader = id;
                    true
                }
                _ => false,
            }
        );
    }
    leader
}

// ---------------------------------------------------------------------------------------
// One node.

#[tokio::test]
async fn a_single_replica_commits_at_once() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    // min.insync.replicas above the replica count: Kafka's effective min ISR is the
    // replica count, so acks=all is accepted.
    assert_eq!(
        create(&mut wire, "single", 1, &[("min.insync.replicas", "2")]).await,
        NONE
    );
    let (_, p) = produce(&mut wire, "single", batch("a", 3), -1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 0));
    let (_, p) = produce(&mut wire, "single", batch("b", 2), 1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 3));
    let fetched = fetch_partition(&mut wire, &consumer_fetch("single", 0, -1), 12).await;
    assert_eq!(fetched.error_code, NONE);
    assert_eq!(fetched.high_watermark, 5, "HW = log end offset");
    let mut all = expected("a", 3);
    all.extend(expected("b", 2));
    assert_eq!(values(fetched.records.as_ref().unwrap()), all);
    assert_eq!(latest_offset(&mut wire, "single").await, (NONE, 5));
    node.stop().await;
}

#[tokio::test]
async fn a_high_watermark_survives_a_restart() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    assert_eq!(create(&mut wire, "kept", 1, &[]).await, NONE);
    produce(&mut wire, "kept", batch("a", 4), -1).await;
    drop(wire);
    let dir = node.stop().await;
    let checkpoint =
        std::fs::read_to_string(dir.path().join("replication-offset-checkpoint")).unwrap();
    assert!(checkpoint.contains("kept 0 4"), "{checkpoint}");
    let node = TestNode::start_in(dir, &[]).await;
    let mut wire = Wire::connect(node.address).await;
    let fetched = fetch_partition(&mut wire, &consumer_fetch("kept", 0, -1), 12).await;
    assert_eq!(fetched.high_watermark, 4);
    assert_eq!(values(fetched.records.as_ref().unwrap()), expected("a", 4));
    node.stop().await;
}

#[tokio::test]
async fn fetches_from_brokers_outside_the_replica_set_are_refused() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    assert_eq!(create(&mut wire, "closed", 1, &[]).await, NONE);
    produce(&mut wire, "closed", batch("a", 2), 1).await;
    // (version, replica id field, current leader epoch, expected)
    let cases = [
        (12, -1, NOT_LEADER_OR_FOLLOWER),
        (12, 0, UNKNOWN_LEADER_EPOCH),
        (15, -1, NOT_LEADER_OR_FOLLOWER),
        (15, 0, UNKNOWN_LEADER_EPOCH),
    ];
    let topic_id = {
        let request = MetadataRequest::default().with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name("closed"))),
        ]));
        let response: MetadataResponse = wire.call(&request, 12).await;
        response.topics[0].topic_id
    };
    for (version, epoch, code) in cases {
        let mut request = consumer_fetch("closed", 0, -1);
        request.topics[0].topic_id = topic_id;
        request.topics[0].partitions[0].current_leader_epoch = epoch;
        if version >= 15 {
            request.replica_state = ReplicaState::default().with_replica_id(BrokerId(7));
        } else {
            request.replica_id = BrokerId(7);
        }
        let fetched = fetch_partition(&mut wire, &request, version).await;
        assert_eq!(fetched.error_code, code, "v{version} epoch {epoch}");
    }
    node.stop().await;
}

#[tokio::test]
async fn a_fetch_past_its_epochs_end_gets_the_diverging_epoch() {
    let node = TestNode::start(&[]).await;
    let mut wire = Wire::connect(node.address).await;
    assert_eq!(create(&mut wire, "diverge", 1, &[]).await, NONE);
    produce(&mut wire, "diverge", batch("a", 3), 1).await;
    // Epoch 0 ends at 3 here; a fetcher claiming epoch 0 up to 5 diverged.
    let fetched = fetch_partition(&mut wire, &consumer_fetch("diverge", 5, 0), 12).await;
    assert_eq!(fetched.error_code, NONE);
    assert_eq!(
        (
            fetched.diverging_epoch.epoch,
            fetched.diverging_epoch.end_offset
        ),
        (0, 3)
    );
    assert!(fetched.records.unwrap_or_default().is_empty());
    // Consistent: an ordinary answer.
    let fetched = fetch_partition(&mut wire, &consumer_fetch("diverge", 3, 0), 12).await;
    assert_eq!(
        (fetched.error_code, fetched.diverging_epoch.epoch),
        (NONE, -1)
    );
    // An epoch newer than any here cannot be placed: out of range.
    let fetched = fetch_partition(&mut wire, &consumer_fetch("diverge", 3, 9), 12).await;
    assert_eq!(fetched.error_code, OFFSET_OUT_OF_RANGE);
    node.stop().await;
}

// ---------------------------------------------------------------------------------------
// A cluster.

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acks_all_reaches_every_follower() {
    let _serial = SERIAL.lock().await;
    let cluster = TestCluster::start(3, &[]).await;
    let leader = create_replicated(&cluster, "everywhere", 3, &[]).await;
    let leader_address = cluster.nodes[index_of(leader)].address();
    let mut wire = Wire::connect(leader_address).await;
    let (_, p) = produce(&mut wire, "everywhere", batch("a", 5), -1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 0));
    let fetched = fetch_partition(&mut wire, &consumer_fetch("everywhere", 0, -1), 12).await;
    assert_eq!(
        fetched.high_watermark, 5,
        "committed when acks=all answered"
    );
    for node in cluster.nodes.iter().filter(|n| n.id != leader) {
        let mut follower = Wire::connect(node.address()).await;
        eventually!(
            Duration::from_secs(10),
            "the follower's high watermark",
            fetch_partition(&mut follower, &consumer_fetch("everywhere", 0, -1), 12)
                .await
                .high_watermark
                == 5
        );
        // v11+: a follower serves consumers up to its own high watermark (KIP-392).
        let fetched =
            fetch_partition(&mut follower, &consumer_fetch("everywhere", 0, -1), 12).await;
        assert_eq!(values(fetched.records.as_ref().unwrap()), expected("a", 5));
        // Produce goes to the leader only; the answer names it (KIP-951).
        let (response, p) = produce(&mut follower, "everywhere", batch("x", 1), -1).await;
        assert_eq!(p.error_code, NOT_LEADER_OR_FOLLOWER);
        assert_eq!(p.current_leader.leader_id.0, leader);
        assert!(
            response
                .node_endpoints
                .iter()
                .any(|e| e.node_id.0 == leader)
        );
        // Before v11 consumers read from the leader only.
        let fetched =
            fetch_partition(&mut follower, &consumer_fetch("everywhere", 0, -1), 10).await;
        assert_eq!(fetched.error_code, NOT_LEADER_OR_FOLLOWER);
    }
    // Not `cluster.shutdown()`: the last node of a quorum cannot stop cleanly without
    // a majority; the runtime's end stops it.
    drop(cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stopped_follower_leaves_the_isr_and_rejoins_once_caught_up() {
    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::start(3, &[("replica.lag.time.max.ms", "1000")]).await;
    let leader = create_replicated(&cluster, "isr", 3, &[("min.insync.replicas", "3")]).await;
    let leader_address = cluster.nodes[index_of(leader)].address();
    let follower = cluster
        .nodes
        .iter()
        .find(|n| n.id != leader)
        .map(|n| n.id)
        .unwrap();
    let mut wire = Wire::connect(leader_address).await;
    let (_, p) = produce(&mut wire, "isr", batch("a", 2), -1).await;
    assert_eq!(p.error_code, NONE);

    cluster.stop(index_of(follower)).await;
    eventually!(
        Duration::from_secs(30),
        "the ISR to shrink",
        leader_and_isr(leader_address, "isr")
            .await
            .is_some_and(|(_, isr)| !isr.contains(&follower))
    );
    // Below min.insync.replicas: acks=all is refused before the append, acks=1 is not.
    let (_, p) = produce(&mut wire, "isr", batch("b", 2), -1).await;
    assert_eq!(p.error_code, NOT_ENOUGH_REPLICAS);
    let (_, p) = produce(&mut wire, "isr", batch("c", 3), 1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 2));

    cluster.restart(index_of(follower)).await;
    eventually!(
        Duration::from_secs(30),
        "the follower to rejoin the ISR",
        leader_and_isr(leader_address, "isr")
            .await
            .is_some_and(|(_, isr)| isr.len() == 3)
    );
    let (_, p) = produce(&mut wire, "isr", batch("d", 1), -1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 5));
    let mut rejoined = Wire::connect(cluster.nodes[index_of(follower)].address()).await;
    eventually!(
        Duration::from_secs(10),
        "the rejoined follower's log",
        fetch_partition(&mut rejoined, &consumer_fetch("isr", 0, -1), 12)
            .await
            .high_watermark
            == 6
    );
    let fetched = fetch_partition(&mut rejoined, &consumer_fetch("isr", 0, -1), 12).await;
    let mut all = expected("a", 2);
    all.extend(expected("c", 3));
    all.extend(expected("d", 1));
    assert_eq!(values(fetched.records.as_ref().unwrap()), all);
    drop((wire, rejoined));
    // Not `cluster.shutdown()`: the last node of a quorum cannot stop cleanly without
    // a majority; the runtime's end stops it.
    drop(cluster);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_leader_follows_its_successor() {
    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::start(3, &[]).await;
    let first = create_replicated(&cluster, "succession", 3, &[]).await;
    let mut wire = Wire::connect(cluster.nodes[index_of(first)].address()).await;
    let (_, p) = produce(&mut wire, "succession", batch("a", 3), -1).await;
    assert_eq!(p.error_code, NONE);
    drop(wire);

    cluster.stop(index_of(first)).await;
    let survivor = cluster.addresses()[0];
    let mut second = -1;
    eventually!(
        Duration::from_secs(30),
        "a new leader",
        match leader_and_isr(survivor, "succession").await {
            Some((id, _)) if id != first => {
                second = id;
                true
            }
            _ => false,
        }
    );
    let mut wire = Wire::connect(cluster.nodes[index_of(second)].address()).await;
    let mut appended;
    eventually!(Duration::from_secs(10), "the new leader to accept", {
        let (_, p) = produce(&mut wire, "succession", batch("b", 2), -1).await;
        appended = Some(p.base_offset);
        p.error_code == NONE
    });
    assert_eq!(
        appended,
        Some(3),
        "the new leader continues the committed log"
    );

    // The old leader comes back as a follower of the new one and converges on its log.
    cluster.restart(index_of(first)).await;
    let mut old = Wire::connect(cluster.nodes[index_of(first)].address()).await;
    eventually!(Duration::from_secs(30), "the old leader to catch up", {
        let fetched = fetch_partition(&mut old, &consumer_fetch("succession", 0, -1), 12).await;
        fetched.error_code == NONE && fetched.high_watermark == 5
    });
    let fetched = fetch_partition(&mut old, &consumer_fetch("succession", 0, -1), 12).await;
    let mut all = expected("a", 3);
    all.extend(expected("b", 2));
    assert_eq!(values(fetched.records.as_ref().unwrap()), all);
    drop((wire, old));
    // Not `cluster.shutdown()`: the last node of a quorum cannot stop cleanly without
    // a majority; the runtime's end stops it.
    drop(cluster);
}

/// Replicas and (sorted) ISR of partition 0 as `address` sees them.
async fn replicas_of(address: SocketAddr, topic: &str) -> Option<(Vec<i32>, Vec<i32>, i32)> {
    let mut wire = Wire::connect(address).await;
    let request = MetadataRequest::default()
        .with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name(topic))),
        ]))
        .with_allow_auto_topic_creation(false);
    let response: MetadataResponse = wire.try_call(&request, 12).await?;
    let partition = response.topics.first()?.partitions.first()?;
    let mut isr: Vec<i32> = partition.isr_nodes.iter().map(|id| id.0).collect();
    isr.sort();
    Some((
        partition.replica_nodes.iter().map(|id| id.0).collect(),
        isr,
        partition.leader_id.0,
    ))
}

async fn reassign(address: SocketAddr, topic: &str, target: Option<Vec<i32>>) -> i16 {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    let mut wire = Wire::connect(address).await;
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            ReassignableTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    ReassignablePartition::default()
                        .with_partition_index(0)
                        .with_replicas(target.map(|t| t.into_iter().map(BrokerId).collect())),
                ]),
        ]);
    let response: AlterPartitionReassignmentsResponse = wire.call(&request, 0).await;
    response.responses[0].partitions[0].error_code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reassignment_moves_the_data_then_drops_the_old_replica_and_a_gone_broker_is_unregistered()
 {
    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::start(3, &[]).await;
    let first = cluster.addresses()[0];
    // The partition on nodes 1 and 2, with data acknowledged by both.
    assert_eq!(
        common::create_assigned(first, "moving", &[1, 2], &[]).await,
        NONE
    );
    eventually!(
        Duration::from_secs(20),
        "both replicas in sync",
        replicas_of(first, "moving")
            .await
            .is_some_and(|(_, isr, leader)| isr == vec![1, 2] && leader == 1)
    );
    let mut leader = Wire::connect(cluster.nodes[0].address()).await;
    let (_, written) = produce(&mut leader, "moving", batch("moved", 20), -1).await;
    assert_eq!(written.error_code, NONE);
    // Nothing to cancel yet.
    const NO_REASSIGNMENT_IN_PROGRESS: i16 = ErrorCode::NO_REASSIGNMENT_IN_PROGRESS.0;
    assert_eq!(
        reassign(first, "moving", None).await,
        NO_REASSIGNMENT_IN_PROGRESS
    );
    // Unknown brokers and duplicates are refused.
    assert_eq!(reassign(first, "moving", Some(vec![3, 9])).await, 39);
    assert_eq!(reassign(first, "moving", Some(vec![3, 3])).await, 39);
    // Move it to nodes 3 and 2: node 3 copies the log, joins the ISR, node 1 leaves.
    assert_eq!(reassign(first, "moving", Some(vec![3, 2])).await, NONE);
    eventually!(
        Duration::from_secs(30),
        "the reassignment to complete",
        replicas_of(first, "moving")
            .await
            .is_some_and(|(replicas, isr, leader)| replicas == vec![3, 2]
                && isr == vec![2, 3]
                && (leader == 2 || leader == 3))
    );
    let mut list = Wire::connect(first).await;
    let ongoing: ListPartitionReassignmentsResponse = list
        .call(
            &ListPartitionReassignmentsRequest::default().with_topics(None),
            0,
        )
        .await;
    assert!(ongoing.topics.is_empty(), "{ongoing:?}");
    // The data moved with it: node 3 holds the 20 acknowledged records.
    let (_, _, new_leader) = replicas_of(first, "moving").await.unwrap();
    let mut wire = Wire::connect(cluster.nodes[index_of(new_leader)].address()).await;
    assert_eq!(latest_offset(&mut wire, "moving").await, (NONE, 20));
    // Node 1 deleted its replica.
    let node1_log = cluster.nodes[0].dir.join("moving-0");
    eventually!(
        Duration::from_secs(10),
        "node 1 to delete its replica",
        !node1_log.exists()
    );
    // Preferred leader election: node 3 is the first replica.
    let mut wire = Wire::connect(first).await;
    let elected: ElectLeadersResponse = wire
        .call(
            &ElectLeadersRequest::default()
                .with_election_type(0)
                .with_topic_partitions(Some(vec![
                    elect_leaders_request::TopicPartitions::default()
                        .with_topic(name("moving"))
                        .with_partitions(vec![0]),
                ])),
            2,
        )
        .await;
    let code = elected.replica_election_results[0].partition_result[0].error_code;
    assert!(code == NONE || code == 84, "preferred election: {code}");
    eventually!(
        Duration::from_secs(10),
        "node 3 to lead",
        replicas_of(first, "moving")
            .await
            .is_some_and(|(_, _, leader)| leader == 3)
    );
    // Removing a broker: an active one is refused; once stopped (fenced) it goes.
    let unregister = |id: i32| async move {
        let mut wire = Wire::connect(first).await;
        let response: UnregisterBrokerResponse = wire
            .call(
                &UnregisterBrokerRequest::default().with_broker_id(BrokerId(id)),
                0,
            )
            .await;
        response.error_code
    };
    assert_eq!(unregister(1).await, 42);
    cluster.stop(0).await;
    let second = cluster.addresses()[0];
    let fenced = |address: SocketAddr| async move {
        let mut wire = Wire::connect(address).await;
        let response: MetadataResponse = wire
            .call(&MetadataRequest::default().with_topics(None), 12)
            .await;
        response.brokers.len() == 2
    };
    eventually!(
        Duration::from_secs(20),
        "node 1 fenced",
        fenced(second).await
    );
    let mut wire = Wire::connect(second).await;
    let response: UnregisterBrokerResponse = wire
        .call(
            &UnregisterBrokerRequest::default().with_broker_id(BrokerId(1)),
            0,
        )
        .await;
    assert_eq!(response.error_code, NONE, "{response:?}");
    let response: UnregisterBrokerResponse = wire
        .call(
            &UnregisterBrokerRequest::default().with_broker_id(BrokerId(1)),
            0,
        )
        .await;
    assert_eq!(
        response.error_code, 102,
        "BROKER_ID_NOT_REGISTERED the second time"
    );
    cluster.shutdown().await;
}

/// The Jepsen 2013 history, made on purpose: a leader alone in the ISR appends records
/// its follower never gets, the follower is then elected uncleanly and takes other
/// writes at the same offsets. When the old leader comes back, it finds the divergence
/// (the Fetch diverging-epoch answer), truncates its tail and converges on the new
/// leader's log. Unclean election is allowed by the cluster-wide dynamic broker default
/// (`kafka-configs.sh --alter --entity-type brokers --entity-default`), not the topic:
/// the controller read only the static configuration before, and the partition stayed
/// offline (this test failed at "node 2 elected uncleanly"). The negative control of
/// the fault checker (compat/cluster) covers the topic-level setting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_divergent_tail_is_truncated_when_the_old_leader_returns() {
    let _serial = SERIAL.lock().await;
    // Five voters, so that two nodes down still leave a metadata majority.
    let mut cluster = TestCluster::start(5, &[]).await;
    let observer = cluster.nodes[4].address();
    let mut admin = Wire::connect(observer).await;
    let text = |t: &str| StrBytes::from_string(t.to_string());
    let alter = IncrementalAlterConfigsRequest::default().with_resources(vec![
        incremental_alter_configs_request::AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(text(""))
            .with_configs(vec![
                incremental_alter_configs_request::AlterableConfig::default()
                    .with_name(text("unclean.leader.election.enable"))
                    .with_config_operation(0)
                    .with_value(Some(text("true"))),
            ]),
    ]);
    let altered: IncrementalAlterConfigsResponse = admin.call(&alter, 1).await;
    assert_eq!(altered.responses[0].error_code, NONE, "{altered:?}");
    drop(admin);
    let configs = [("min.insync.replicas", "1")];
    assert_eq!(
        common::create_assigned(observer, "diverging", &[1, 2], &configs).await,
        NONE
    );
    eventually!(
        Duration::from_secs(20),
        "leader 1 with ISR [1, 2]",
        leader_and_isr(observer, "diverging").await == Some((1, vec![1, 2]))
    );
    let mut leader = Wire::connect(cluster.nodes[0].address()).await;
    let p = produce_to_leader(&mut leader, "diverging", batch("a", 3), -1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 0));
    // The follower stops; the ISR shrinks to the leader, which takes two more records.
    cluster.stop(1).await;
    eventually!(
        Duration::from_secs(20),
        "ISR [1]",
        leader_and_isr(observer, "diverging").await == Some((1, vec![1]))
    );
    let (_, p) = produce(&mut leader, "diverging", batch("x", 2), 1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 3));
    drop(leader);
    // The leader stops, the follower returns: out of sync, but elected (unclean), it
    // takes other records at offsets 3 and 4.
    cluster.stop(0).await;
    cluster.restart(1).await;
    eventually!(
        Duration::from_secs(20),
        "node 2 elected uncleanly",
        leader_and_isr(observer, "diverging").await == Some((2, vec![2]))
    );
    let mut new_leader = Wire::connect(cluster.nodes[1].address()).await;
    let mut appended;
    eventually!(Duration::from_secs(10), "the new leader to accept", {
        let (_, p) = produce(&mut new_leader, "diverging", batch("b", 2), -1).await;
        appended = p.base_offset;
        p.error_code == NONE
    });
    assert_eq!(appended, 3, "the new leader reuses offsets 3 and 4");
    // The old leader returns: it must drop x-0, x-1 and copy b-0, b-1.
    cluster.restart(0).await;
    let mut old = Wire::connect(cluster.nodes[0].address()).await;
    let mut all = expected("a", 3);
    all.extend(expected("b", 2));
    let mut seen: Vec<String>;
    eventually!(Duration::from_secs(30), "the old leader to converge", {
        let fetched = fetch_partition(&mut old, &consumer_fetch("diverging", 0, -1), 12).await;
        seen = fetched.records.as_ref().map(values).unwrap_or_default();
        fetched.error_code == NONE && seen == all
    });
    drop((new_leader, old));
    cluster.shutdown().await;
}

/// The eligible leader replicas of partition 0 (DescribeTopicPartitions v0, KIP-966).
async fn eligible_leader_replicas(address: SocketAddr, topic: &str) -> Vec<i32> {
    use kafka_protocol::messages::describe_topic_partitions_request::TopicRequest;
    let mut wire = Wire::connect(address).await;
    let request = DescribeTopicPartitionsRequest::default()
        .with_topics(vec![TopicRequest::default().with_name(name(topic))])
        .with_response_partition_limit(10);
    let response: DescribeTopicPartitionsResponse = wire.call(&request, 0).await;
    response.topics[0].partitions[0]
        .eligible_leader_replicas
        .iter()
        .flatten()
        .map(|id| id.0)
        .collect()
}

/// KIP-966: a replica that left the ISR while it was below `min.insync.replicas` holds
/// every acknowledged write (the high watermark cannot move then), so it is eligible to
/// lead when no ISR member can. The follower stops (ISR = [leader], ELR = [follower]),
/// the leader takes two acks=1 records that never reach the high watermark, then stops
/// too; the follower comes back alone and is elected from the ELR instead of leaving
/// the partition offline until the old leader returns (before ELR was used in
/// elections, the partition stayed offline: this test failed). The old leader then
/// rejoins, dropping its uncommitted tail, and every acks=all write is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_eligible_leader_replica_is_elected_when_no_isr_member_can_lead() {
    let _serial = SERIAL.lock().await;
    // Five voters, so that two nodes down still leave a metadata majority.
    let mut cluster = TestCluster::start(5, &[]).await;
    let observer = cluster.nodes[4].address();
    let configs = [
        ("unclean.leader.election.enable", "false"),
        ("min.insync.replicas", "2"),
    ];
    assert_eq!(
        common::create_assigned(observer, "eligible", &[1, 2], &configs).await,
        NONE
    );
    eventually!(
        Duration::from_secs(20),
        "leader 1 with ISR [1, 2]",
        leader_and_isr(observer, "eligible").await == Some((1, vec![1, 2]))
    );
    let mut leader = Wire::connect(cluster.nodes[0].address()).await;
    let p = produce_to_leader(&mut leader, "eligible", batch("a", 3), -1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 0));
    cluster.stop(1).await;
    eventually!(
        Duration::from_secs(20),
        "ISR [1], ELR [2]",
        leader_and_isr(observer, "eligible").await == Some((1, vec![1]))
            && eligible_leader_replicas(observer, "eligible").await == vec![2]
    );
    // Below min ISR: acks=all is refused, acks=1 appends past the high watermark.
    let (_, p) = produce(&mut leader, "eligible", batch("x", 2), -1).await;
    assert_eq!(p.error_code, NOT_ENOUGH_REPLICAS);
    let (_, p) = produce(&mut leader, "eligible", batch("x", 2), 1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 3));
    drop(leader);
    cluster.stop(0).await;
    eventually!(
        Duration::from_secs(20),
        "the partition offline",
        leader_and_isr(observer, "eligible").await.is_none()
    );
    cluster.restart(1).await;
    eventually!(
        Duration::from_secs(20),
        "node 2 elected from the ELR",
        leader_and_isr(observer, "eligible").await == Some((2, vec![2]))
    );
    assert_eq!(
        eligible_leader_replicas(observer, "eligible").await,
        vec![1]
    );
    // The old leader returns and catches up; with the ISR whole again the new leader
    // takes acks=all writes after the acknowledged ones (x-0 and x-1 were never
    // committed, and are gone).
    cluster.restart(0).await;
    eventually!(
        Duration::from_secs(30),
        "ISR [1, 2] under leader 2",
        leader_and_isr(observer, "eligible").await == Some((2, vec![1, 2]))
    );
    let mut new_leader = Wire::connect(cluster.nodes[1].address()).await;
    let p = produce_to_leader(&mut new_leader, "eligible", batch("b", 1), -1).await;
    assert_eq!((p.error_code, p.base_offset), (NONE, 3));
    let mut all = expected("a", 3);
    all.extend(expected("b", 1));
    let mut seen: Vec<String>;
    eventually!(Duration::from_secs(20), "every acknowledged write", {
        let fetched =
            fetch_partition(&mut new_leader, &consumer_fetch("eligible", 0, -1), 12).await;
        seen = fetched.records.as_ref().map(values).unwrap_or_default();
        fetched.error_code == NONE && seen == all
    });
    assert_eq!(
        eligible_leader_replicas(observer, "eligible").await,
        Vec::<i32>::new()
    );
    drop(new_leader);
    cluster.shutdown().await;
}
