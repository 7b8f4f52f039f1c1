//! The metadata quorum across real nodes (in-process, on 127.0.0.1): three voters elect
//! a leader, every node applies the same metadata whichever node took the write, a
//! stopped leader is replaced, a restarted node catches up (from a snapshot when the
//! log it missed was purged), silent brokers are fenced and lose their leaderships, and
//! DescribeQuorum reports the voters.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::{TestCluster, Wire};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_broker::quorum::{RpcRequest, rpc};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.into()))
}

async fn create(address: SocketAddr, topic: &str, partitions: i32, replicas: i16) -> i16 {
    let mut wire = Wire::connect(address).await;
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(replicas),
        ])
        .with_timeout_ms(10_000);
    wire.call(&request, 7).await.topics[0].error_code
}

async fn metadata(address: SocketAddr) -> MetadataResponse {
    let mut wire = Wire::connect(address).await;
    wire.call(&MetadataRequest::default().with_topics(None), 12)
        .await
}

async fn quorum(address: SocketAddr) -> describe_quorum_response::PartitionData {
    let mut wire = Wire::connect(address).await;
    let request = DescribeQuorumRequest::default().with_topics(vec![
        TopicData::default()
            .with_topic_name(name("__cluster_metadata"))
            .with_partitions(vec![PartitionData::default().with_partition_index(0)]),
    ]);
    let mut response = wire.call(&request, 2).await;
    response.topics.remove(0).partitions.remove(0)
}

/// Polls `check` every 100 ms until it holds or `limit` passes.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within {limit:?}");
}

fn topic<'a>(
    response: &'a MetadataResponse,
    topic: &str,
) -> Option<&'a metadata_response::MetadataResponseTopic> {
    response
        .topics
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
}

fn broker_ids(response: &MetadataResponse) -> Vec<i32> {
    let mut ids: Vec<i32> = response.brokers.iter().map(|b| b.node_id.0).collect();
    ids.sort();
    ids
}

/// One cluster at a time: three nodes each already load two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_voters_agree_on_metadata_written_through_any_node() {
    let _serial = SERIAL.lock().await;
    let cluster = TestCluster::start(3, &[]).await;
    let addresses = cluster.addresses();
    // DescribeQuorum, asked of any node: three voters, one leader among them.
    let state = quorum(addresses[0]).await;
    assert_eq!(state.error_code, 0);
    let mut voters: Vec<i32> = state
        .current_voters
        .iter()
        .map(|v| v.replica_id.0)
        .collect();
    voters.sort();
    assert_eq!(voters, vec![1, 2, 3]);
    assert!(voters.contains(&state.leader_id.0));
    assert!(state.leader_epoch >= 1);
    assert!(state.high_watermark > 0);
    for other in &addresses[1..] {
        assert_eq!(quorum(*other).await.leader_id, state.leader_id);
    }
    // v2 lists the voters' controller endpoints (KIP-853).
    let mut wire = Wire::connect(addresses[0]).await;
    let request = DescribeQuorumRequest::default().with_topics(vec![
        TopicData::default()
            .with_topic_name(name("__cluster_metadata"))
            .with_partitions(vec![PartitionData::default().with_partition_index(0)]),
    ]);
    let response = wire.call(&request, 2).await;
    let endpoints: Vec<(i32, String, u16)> = response
        .nodes
        .iter()
        .map(|n| {
            let l = &n.listeners[0];
            (n.node_id.0, l.name.to_string(), l.port)
        })
        .collect();
    let expected: Vec<(i32, String, u16)> = cluster
        .nodes
        .iter()
        .map(|n| (n.id, "CONTROLLER".to_string(), n.controller_port))
        .collect();
    assert_eq!(endpoints, expected);
    // A topic created through each node in turn (leader or not) reaches every node.
    for (i, address) in addresses.iter().enumerate() {
        let topic_name = format!("orders-{i}");
        assert_eq!(create(*address, &topic_name, 3, 3).await, 0);
    }
    for address in &addresses {
        let address = *address;
        eventually(
            Duration::from_secs(10),
            "every node applies every topic",
            || async move {
                let response = metadata(address).await;
                (0..3).all(|i| topic(&response, &format!("orders-{i}")).is_some())
            },
        )
        .await;
        let response = metadata(address).await;
        assert_eq!(broker_ids(&response), vec![1, 2, 3]);
        for i in 0..3 {
            let t = topic(&response, &format!("orders-{i}")).unwrap();
            assert_eq!(t.partitions.len(), 3);
            for p in &t.partitions {
                assert_eq!(p.replica_nodes.len(), 3);
                assert!(p.replica_nodes.contains(&p.leader_id));
            }
        }
    }
    // The same name through two nodes: one wins, the other gets TOPIC_ALREADY_EXISTS.
    let (a, b) = tokio::join!(
        create(addresses[1], "raced", 1, 3),
        create(addresses[2], "raced", 1, 3)
    );
    let mut codes = [a, b];
    codes.sort();
    assert_eq!(codes, [0, 36], "exactly one create wins");
    // Leadership of partitions is spread over the nodes.
    let response = metadata(addresses[0]).await;
    let mut leaders: Vec<i32> = (0..3)
        .flat_map(|i| {
            topic(&response, &format!("orders-{i}"))
                .unwrap()
                .partitions
                .iter()
                .map(|p| p.leader_id.0)
                .collect::<Vec<_>>()
        })
        .collect();
    leaders.sort();
    leaders.dedup();
    assert_eq!(leaders, vec![1, 2, 3]);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_leader_is_replaced_and_catches_up_from_a_snapshot_on_restart() {
    let _serial = SERIAL.lock().await;
    let mut cluster =
        TestCluster::start(3, &[("metadata.log.max.entries.between.snapshots", "4")]).await;
    let leader = quorum(cluster.addresses()[0]).await.leader_id.0;
    let index = (leader - 1) as usize;
    cluster.stop(index).await;
    let survivor = cluster.addresses()[0];
    // The two others elect a new leader and keep taking writes.
    eventually(
        Duration::from_secs(20),
        "a new quorum leader",
        || async move {
            let state = quorum(survivor).await;
            state.error_code == 0 && state.leader_id.0 != leader && state.leader_id.0 > 0
        },
    )
    .await;
    for i in 0..12 {
        assert_eq!(create(survivor, &format!("later-{i}"), 1, 2).await, 0);
    }
    // The stopped node missed more entries than the others keep after a snapshot: it
    // catches up from one, then from the log.
    cluster.restart(index).await;
    let restarted = cluster.nodes[index].address();
    eventually(
        Duration::from_secs(20),
        "the restarted node knows every topic",
        || async move {
            let response = metadata(restarted).await;
            (0..12).all(|i| topic(&response, &format!("later-{i}")).is_some())
        },
    )
    .await;
    let snapshot = cluster.nodes[0]
        .dir
        .join("__cluster_metadata-0")
        .join("quorum-snapshot.json");
    let any_snapshot = cluster.nodes.iter().any(|n| {
        n.dir
            .join("__cluster_metadata-0")
            .join("quorum-snapshot.json")
            .exists()
    });
    assert!(
        any_snapshot,
        "snapshots were taken (e.g. {})",
        snapshot.display()
    );
    // The restarted node votes again.
    let state = quorum(restarted).await;
    assert_eq!(state.current_voters.len(), 3);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_broker_is_fenced_loses_its_leaderships_and_comes_back() {
    let _serial = SERIAL.lock().await;
    let mut cluster =
        TestCluster::start(3, &[("leader.imbalance.check.interval.seconds", "1")]).await;
    let first = cluster.addresses()[0];
    assert_eq!(create(first, "fenced", 6, 3).await, 0);
    // Node 3 stops: controlled shutdown moves its leaderships first, then its
    // heartbeats stop and the controller fences it.
    cluster.stop(2).await;
    eventually(
        Duration::from_secs(20),
        "node 3 fenced and leading nothing",
        || async move {
            let response = metadata(first).await;
            let t = topic(&response, "fenced").unwrap();
            broker_ids(&response) == vec![1, 2]
                && t.partitions
                    .iter()
                    .all(|p| p.leader_id.0 != 3 && !p.isr_nodes.iter().any(|r| r.0 == 3))
        },
    )
    .await;
    cluster.restart(2).await;
    eventually(Duration::from_secs(20), "node 3 unfenced", || async move {
        broker_ids(&metadata(first).await) == vec![1, 2, 3]
    })
    .await;
    // Once back in sync, node 3 leads again where it is the preferred (first) replica
    // (auto.leader.rebalance.enable, checked every second here).
    eventually(
        Duration::from_secs(30),
        "preferred leaders restored",
        || async move {
            let response = metadata(first).await;
            topic(&response, "fenced")
                .unwrap()
                .partitions
                .iter()
                .all(|p| p.replica_nodes.first() == Some(&p.leader_id))
        },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_live_in_sync_replica_a_partition_goes_offline_not_unclean() {
    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::start(3, &[]).await;
    let first = cluster.addresses()[0];
    // One replica, on node 3 (an explicit assignment).
    assert_eq!(common::create_assigned(first, "single", &[3], &[]).await, 0);
    cluster.stop(2).await;
    eventually(
        Duration::from_secs(20),
        "the partition offline",
        || async move {
            let response = metadata(first).await;
            let p = &topic(&response, "single").unwrap().partitions[0];
            p.leader_id.0 == -1 && p.isr_nodes.iter().map(|r| r.0).collect::<Vec<_>>() == vec![3]
        },
    )
    .await;
    cluster.restart(2).await;
    eventually(
        Duration::from_secs(20),
        "node 3 leads again",
        || async move {
            let response = metadata(first).await;
            topic(&response, "single").unwrap().partitions[0]
                .leader_id
                .0
                == 3
        },
    )
    .await;
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_ids_are_unique_across_the_nodes() {
    let _serial = SERIAL.lock().await;
    let cluster = TestCluster::start(3, &[]).await;
    let mut ids = Vec::new();
    for round in 0..2 {
        // All three nodes take a block at once (the first round), then hand out more.
        let calls: Vec<_> = cluster
            .addresses()
            .into_iter()
            .map(|address| {
                tokio::spawn(async move {
                    let mut wire = Wire::connect(address).await;
                    let response: InitProducerIdResponse = wire
                        .call(
                            &InitProducerIdRequest::default()
                                .with_transactional_id(None)
                                .with_transaction_timeout_ms(60_000),
                            4,
                        )
                        .await;
                    assert_eq!(response.error_code, 0, "round {round}");
                    response.producer_id.0
                })
            })
            .collect();
        for call in calls {
            ids.push(call.await.unwrap());
        }
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_knows_only_the_bootstrap_servers_joins_as_an_observer() {
    let _serial = SERIAL.lock().await;
    let cluster = TestCluster::start(3, &[]).await;
    let first = cluster.addresses()[0];
    let bootstrap = cluster
        .nodes
        .iter()
        .map(|n| format!("127.0.0.1:{}", n.controller_port))
        .collect::<Vec<_>>()
        .join(",");
    let dir = tempfile::tempdir().unwrap();
    let port = common::free_port();
    let overrides: Vec<(String, String)> = [
        ("node.id", "4".to_string()),
        ("process.roles", "broker".to_string()),
        ("listeners", format!("PLAINTEXT://127.0.0.1:{port}")),
        (
            "advertised.listeners",
            format!("PLAINTEXT://127.0.0.1:{port}"),
        ),
        ("controller.quorum.bootstrap.servers", bootstrap),
        ("log.dirs", dir.path().display().to_string()),
        ("metrics.listener", "127.0.0.1:0".to_string()),
        ("broker.heartbeat.interval.ms", "100".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let config =
        sluice_broker::BrokerConfig::load(sluice_broker::EMBEDDED_SERVER_PROPERTIES, &overrides)
            .unwrap()
            .config;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let node = tokio::spawn(async move {
        sluice_broker::node::run(config, stopped, |_, _| {})
            .await
            .expect("the broker-only node runs");
    });
    // It joins: registered (listed by the others), an observer of the quorum, with the
    // cluster's id.
    eventually(
        Duration::from_secs(30),
        "broker 4 registered",
        || async move { broker_ids(&metadata(first).await) == vec![1, 2, 3, 4] },
    )
    .await;
    let state = quorum(first).await;
    let observers: Vec<i32> = state.observers.iter().map(|o| o.replica_id.0).collect();
    assert_eq!(observers, vec![4]);
    let joined = SocketAddr::from(([127, 0, 0, 1], port));
    assert_eq!(
        metadata(joined).await.cluster_id,
        metadata(first).await.cluster_id
    );
    // It gets the metadata from the quorum: a topic created through node 1 reaches it.
    assert_eq!(create(first, "seen-by-4", 1, 3).await, 0);
    eventually(
        Duration::from_secs(10),
        "the topic on broker 4",
        || async move { topic(&metadata(joined).await, "seen-by-4").is_some() },
    )
    .await;

    // A client on the broker-only node's listener cannot push a forged term into the
    // quorum (the node would answer the real leader with it and depose it), nor send
    // it other quorum requests: the connection is closed, the leader keeps its epoch.
    let before = quorum(first).await;
    let forged_vote = openraft::Vote::new_committed(1_000_000, before.leader_id.0 as u64);
    let forged = [
        RpcRequest::AppendEntries(openraft::raft::AppendEntriesRequest {
            vote: forged_vote,
            prev_log_id: None,
            entries: vec![],
            leader_commit: None,
        }),
        RpcRequest::Vote(openraft::raft::VoteRequest::new(forged_vote, None)),
        RpcRequest::Status,
    ];
    for request in forged {
        let mut socket = tokio::net::TcpStream::connect(joined).await.unwrap();
        socket
            .write_all(&rpc::encode_request(9, &request).unwrap())
            .await
            .unwrap();
        let mut reply = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut reply))
            .await
            .expect("the connection is closed, not left open");
        assert!(
            read.is_err() || reply.is_empty(),
            "{} answered on a broker listener: {} bytes",
            rpc::kind(&request),
            reply.len()
        );
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = quorum(first).await;
    assert_eq!(
        (after.leader_id, after.leader_epoch),
        (before.leader_id, before.leader_epoch),
        "the quorum's leader and epoch"
    );
    // The real leader's pushes still reach it.
    assert_eq!(create(first, "seen-by-4-later", 1, 3).await, 0);
    eventually(
        Duration::from_secs(10),
        "the later topic on broker 4",
        || async move { topic(&metadata(joined).await, "seen-by-4-later").is_some() },
    )
    .await;
    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), node)
        .await
        .expect("the broker-only node stops")
        .unwrap();
    cluster.shutdown().await;
}

/// ElectLeaders, AlterPartitionReassignments, CreatePartitions and UnregisterBroker
/// sent to a node that is not the active controller are relayed there and planned on
/// its image (Kafka's brokers forward them); a node that is not the active controller
/// refuses a relayed request (NOT_CONTROLLER to the relaying node), never plans it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_requests_through_any_node_are_planned_on_the_active_controller() {
    use kafka_protocol::messages::alter_partition_reassignments_request::{
        ReassignablePartition, ReassignableTopic,
    };
    use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use kafka_protocol::messages::elect_leaders_request::TopicPartitions;
    use sluice_broker::forwarding::{Forwarded, ForwardedReply};
    use sluice_broker::quorum::RpcResponse;

    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::start(3, &[("auto.leader.rebalance.enable", "false")]).await;
    let controller = quorum(cluster.addresses()[0]).await.leader_id.0;
    let others: Vec<usize> = (0..3)
        .filter(|i| cluster.nodes[*i].id != controller)
        .collect();
    let (via, follower_id) = (
        cluster.nodes[others[0]].address(),
        cluster.nodes[others[0]].id,
    );
    let (a, b) = (cluster.nodes[others[0]].id, cluster.nodes[others[1]].id);
    assert_eq!(common::create_assigned(via, "moved", &[a, b], &[]).await, 0);

    // A reassignment through a non-controller: replicas [b, a].
    let mut wire = Wire::connect(via).await;
    let request = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            ReassignableTopic::default()
                .with_name(name("moved"))
                .with_partitions(vec![
                    ReassignablePartition::default()
                        .with_partition_index(0)
                        .with_replicas(Some(vec![BrokerId(b), BrokerId(a)])),
                ]),
        ]);
    let response = wire.call(&request, 0).await;
    assert_eq!(response.error_code, 0);
    assert_eq!(response.responses[0].partitions[0].error_code, 0);
    eventually(
        Duration::from_secs(10),
        "replicas reordered",
        || async move {
            let response = metadata(via).await;
            let p = &topic(&response, "moved").unwrap().partitions[0];
            p.replica_nodes == vec![BrokerId(b), BrokerId(a)]
        },
    )
    .await;

    // A preferred election through it: b leads; a second one is not needed.
    let elect = ElectLeadersRequest::default()
        .with_election_type(0)
        .with_timeout_ms(10_000)
        .with_topic_partitions(Some(vec![
            TopicPartitions::default()
                .with_topic(name("moved"))
                .with_partitions(vec![0]),
        ]));
    let response = wire.call(&elect, 2).await;
    let code = response.replica_election_results[0].partition_result[0].error_code;
    assert_eq!(code, 0, "{response:?}");
    eventually(
        Duration::from_secs(10),
        "the preferred replica leads",
        || async move {
            let response = metadata(via).await;
            topic(&response, "moved").unwrap().partitions[0].leader_id == BrokerId(b)
        },
    )
    .await;
    let response = wire.call(&elect, 2).await;
    assert_eq!(
        response.replica_election_results[0].partition_result[0].error_code, 84,
        "ELECTION_NOT_NEEDED"
    );

    // CreatePartitions through it.
    let response = wire
        .call(
            &CreatePartitionsRequest::default()
                .with_timeout_ms(10_000)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(name("moved"))
                        .with_count(2)
                        .with_assignments(None),
                ]),
            3,
        )
        .await;
    assert_eq!(response.results[0].error_code, 0, "{response:?}");

    // A relayed request that reaches a node that is not the active controller is
    // refused there, not planned on its image.
    let mut body = bytes::BytesMut::new();
    kafka_protocol::protocol::Encodable::encode(&elect, &mut body, 2).unwrap();
    let follower_controller = format!("127.0.0.1:{}", cluster.nodes[others[0]].controller_port);
    let relayed = RpcRequest::Forward(Forwarded {
        api_key: ApiKey::ElectLeaders as i16,
        version: 2,
        client_id: None,
        client_host: "/127.0.0.1".into(),
        principal: Default::default(),
        body: body.to_vec(),
    });
    match rpc::call(&follower_controller, &relayed, Duration::from_secs(5)).await {
        Ok(RpcResponse::Forwarded(ForwardedReply::NotController)) => {}
        other => panic!("node {follower_id} answered {other:?}"),
    }

    // UnregisterBroker through a non-controller once the stopped node is fenced.
    let stopped = others[1];
    cluster.stop(stopped).await;
    eventually(Duration::from_secs(20), "node fenced", || async move {
        !broker_ids(&metadata(via).await).contains(&b)
    })
    .await;
    let response = wire
        .call(
            &UnregisterBrokerRequest::default().with_broker_id(BrokerId(b)),
            0,
        )
        .await;
    assert_eq!(response.error_code, 0, "{response:?}");
    cluster.shutdown().await;
}

/// A metadata write retried across an election (its first attempt committed, the
/// answer lost with the old leader) is answered with its first outcome by the new
/// leader, not applied a second time over what was written in between. Before write
/// ids, the retry below set the topic's retention back to the first value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_retried_across_an_election_is_applied_once() {
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    use sluice_broker::quorum::{Proposal, RpcResponse};
    use sluice_metadata::{ConfigRecord, MetadataRecord};

    let _serial = SERIAL.lock().await;
    let mut cluster = TestCluster::start(3, &[]).await;
    let first = cluster.addresses()[0];
    assert_eq!(create(first, "t", 1, 3).await, 0);
    let retention = |value: &str| {
        MetadataRecord::Config(ConfigRecord {
            resource_type: 2,
            resource_name: "t".into(),
            name: "retention.ms".into(),
            value: Some(value.into()),
        })
    };
    let propose = |address: String, proposal: Proposal| async move {
        match rpc::call(
            &address,
            &RpcRequest::Propose(proposal),
            Duration::from_secs(10),
        )
        .await
        {
            Ok(RpcResponse::Propose(Ok(result))) => result,
            other => panic!("{address} answered {other:?}"),
        }
    };
    let leader = quorum(first).await.leader_id.0;
    let leader_index = (leader - 1) as usize;
    let controller_ports: Vec<u16> = cluster.nodes.iter().map(|n| n.controller_port).collect();
    let controller = |i: usize| format!("127.0.0.1:{}", controller_ports[i]);
    let retried = Proposal::new(&[retention("1000")]);
    let outcome = propose(controller(leader_index), retried.clone()).await;
    assert_eq!(outcome.error, None);
    let later = propose(
        controller(leader_index),
        Proposal::new(&[retention("2000")]),
    )
    .await;
    assert_eq!(later.error, None);
    // The leader goes; the retry reaches its successor.
    cluster.stop(leader_index).await;
    let survivor = cluster.addresses()[0];
    eventually(Duration::from_secs(20), "a new leader", || async move {
        let state = quorum(survivor).await;
        state.error_code == 0 && state.leader_id.0 > 0 && state.leader_id.0 != leader
    })
    .await;
    let new_leader = quorum(survivor).await.leader_id.0;
    let again = propose(controller((new_leader - 1) as usize), retried).await;
    assert_eq!(again, outcome, "the retry gets the first attempt's outcome");
    let mut wire = Wire::connect(survivor).await;
    let response = wire
        .call(
            &DescribeConfigsRequest::default().with_resources(vec![
                DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("t"))
                    .with_configuration_keys(Some(vec![StrBytes::from_static_str("retention.ms")])),
            ]),
            4,
        )
        .await;
    let value = response.results[0].configs[0]
        .value
        .as_ref()
        .map(|v| v.to_string());
    assert_eq!(value.as_deref(), Some("2000"), "the later write stands");
    cluster.shutdown().await;
}
