//! Consumer groups over the wire against a real node: the classic protocol (two-step
//! join, leader election, sync, heartbeats, rebalances, static members, session
//! expiry), committed offsets stored in `__consumer_offsets` (surviving a restart and a
//! coordinator failover), group administration (list, describe, delete, offset delete),
//! offsets retention, and a KIP-848 consumer group (ConsumerGroupHeartbeat).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{TestCluster, TestNode, Wire};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::ErrorCode;

const REBALANCE_IN_PROGRESS: i16 = ErrorCode::REBALANCE_IN_PROGRESS.0;
const MEMBER_ID_REQUIRED: i16 = ErrorCode::MEMBER_ID_REQUIRED.0;
const ILLEGAL_GENERATION: i16 = ErrorCode::ILLEGAL_GENERATION.0;
const UNKNOWN_MEMBER_ID: i16 = ErrorCode::UNKNOWN_MEMBER_ID.0;
const FENCED_INSTANCE_ID: i16 = ErrorCode::FENCED_INSTANCE_ID.0;
const NON_EMPTY_GROUP: i16 = ErrorCode::NON_EMPTY_GROUP.0;
const GROUP_ID_NOT_FOUND: i16 = ErrorCode::GROUP_ID_NOT_FOUND.0;
const GROUP_SUBSCRIBED_TO_TOPIC: i16 = ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC.0;
const INVALID_SESSION_TIMEOUT: i16 = ErrorCode::INVALID_SESSION_TIMEOUT.0;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

fn gid(text: &str) -> GroupId {
    GroupId(s(text))
}

/// Node settings for fast groups: no initial delay, short sessions allowed, frequent
/// retention checks.
const GROUP_SETTINGS: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("group.min.session.timeout.ms", "100"),
    ("offsets.retention.check.interval.ms", "200"),
];

async fn create_topic(address: SocketAddr, topic: &str, partitions: i32, replicas: i16) {
    let mut wire = Wire::connect(address).await;
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(s(topic)))
                .with_num_partitions(partitions)
                .with_replication_factor(replicas),
        ])
        .with_timeout_ms(10_000);
    assert_eq!(wire.call(&request, 7).await.topics[0].error_code, 0);
}

/// FindCoordinator until it names a node (the first call creates __consumer_offsets).
async fn coordinator(address: SocketAddr, group: &str) -> (i32, SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut wire = Wire::connect(address).await;
        let response = wire
            .call(
                &FindCoordinatorRequest::default()
                    .with_key_type(0)
                    .with_coordinator_keys(vec![s(group)]),
                6,
            )
            .await;
        let c = &response.coordinators[0];
        if c.error_code == 0 {
            let address: SocketAddr = format!("{}:{}", c.host, c.port).parse().unwrap();
            // The coordinator answers once it loaded the group's partition.
            let mut at = Wire::connect(address).await;
            let probe = at
                .call(
                    &DescribeGroupsRequest::default().with_groups(vec![gid(group)]),
                    5,
                )
                .await;
            if probe.groups[0].error_code == 0 {
                return (c.node_id.0, address);
            }
        }
        assert!(
            Instant::now() < deadline,
            "a coordinator for {group}: {response:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn join_request(
    group: &str,
    member_id: &str,
    instance: Option<&str>,
    session_ms: i32,
) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(gid(group))
        .with_session_timeout_ms(session_ms)
        .with_rebalance_timeout_ms(5_000)
        .with_member_id(s(member_id))
        .with_group_instance_id(instance.map(s))
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(s("range"))
                .with_metadata(Bytes::from_static(b"subscription")),
        ])
}

/// A dynamic member's two-step join (KIP-394); returns the JoinGroup response.
async fn join(wire: &mut Wire, group: &str, session_ms: i32) -> JoinGroupResponse {
    let first = wire
        .call(&join_request(group, "", None, session_ms), 9)
        .await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    assert!(!first.member_id.is_empty());
    wire.call(&join_request(group, &first.member_id, None, session_ms), 9)
        .await
}

async fn sync(
    wire: &mut Wire,
    group: &str,
    member: &str,
    generation: i32,
    assignments: &[(&str, &'static [u8])],
) -> SyncGroupResponse {
    wire.call(
        &SyncGroupRequest::default()
            .with_group_id(gid(group))
            .with_generation_id(generation)
            .with_member_id(s(member))
            .with_protocol_type(Some(s("consumer")))
            .with_protocol_name(Some(s("range")))
            .with_assignments(
                assignments
                    .iter()
                    .map(|(id, a)| {
                        SyncGroupRequestAssignment::default()
                            .with_member_id(s(id))
                            .with_assignment(Bytes::from_static(a))
                    })
                    .collect(),
            ),
        5,
    )
    .await
}

async fn heartbeat(wire: &mut Wire, group: &str, member: &str, generation: i32) -> i16 {
    wire.call(
        &HeartbeatRequest::default()
            .with_group_id(gid(group))
            .with_generation_id(generation)
            .with_member_id(s(member)),
        4,
    )
    .await
    .error_code
}

async fn describe(address: SocketAddr, group: &str) -> describe_groups_response::DescribedGroup {
    let mut wire = Wire::connect(address).await;
    let mut response = wire
        .call(
            &DescribeGroupsRequest::default().with_groups(vec![gid(group)]),
            6,
        )
        .await;
    response.groups.remove(0)
}

async fn commit(
    address: SocketAddr,
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    offsets: &[(i32, i64)],
) -> Vec<i16> {
    let mut wire = Wire::connect(address).await;
    let request = OffsetCommitRequest::default()
        .with_group_id(gid(group))
        .with_generation_id_or_member_epoch(generation)
        .with_member_id(s(member))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partitions(
                    offsets
                        .iter()
                        .map(|(p, o)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(*p)
                                .with_committed_offset(*o)
                                .with_committed_leader_epoch(0)
                                .with_committed_metadata(Some(s("meta")))
                        })
                        .collect(),
                ),
        ]);
    let response = wire.call(&request, 9).await;
    response.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// Committed offsets of a group (OffsetFetch v9, all topics): (topic, partition, offset).
async fn fetch_offsets(address: SocketAddr, group: &str) -> Result<Vec<(String, i32, i64)>, i16> {
    let mut wire = Wire::connect(address).await;
    let request = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(gid(group))
            .with_topics(None),
    ]);
    let response = wire.call(&request, 9).await;
    let group = &response.groups[0];
    if group.error_code != 0 {
        return Err(group.error_code);
    }
    let mut rows: Vec<(String, i32, i64)> = group
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    rows.sort();
    Ok(rows)
}

/// A KIP-848 ConsumerGroupHeartbeat; `subscribe` (a topic) makes it a full one (a join
/// or a changed subscription), else it only reports the member's epoch.
fn member_heartbeat(
    group: &str,
    member_id: &str,
    epoch: i32,
    subscribe: Option<&str>,
) -> ConsumerGroupHeartbeatRequest {
    let request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(gid(group))
        .with_member_id(s(member_id))
        .with_member_epoch(epoch);
    match subscribe {
        Some(topic) => request
            .with_rebalance_timeout_ms(5_000)
            .with_subscribed_topic_names(Some(vec![TopicName(s(topic))]))
            .with_topic_partitions(Some(vec![])),
        None => request,
    }
}

/// OffsetDelete of one partition's committed offset.
async fn offset_delete(
    wire: &mut Wire,
    group: &str,
    topic: &str,
    partition: i32,
) -> OffsetDeleteResponse {
    let request = OffsetDeleteRequest::default()
        .with_group_id(gid(group))
        .with_topics(vec![
            OffsetDeleteRequestTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partitions(vec![
                    OffsetDeleteRequestPartition::default().with_partition_index(partition),
                ]),
        ]);
    wire.call(&request, 0).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_group_joins_syncs_rebalances_and_expires() {
    let node = TestNode::start(GROUP_SETTINGS).await;
    create_topic(node.address, "events", 4, 1).await;
    let (_, address) = coordinator(node.address, "g1").await;

    // The first member joins alone: it leads generation 1.
    let mut a = Wire::connect(address).await;
    let joined = join(&mut a, "g1", 10_000).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, joined.member_id);
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(joined.members.len(), 1);
    let a_id = joined.member_id.to_string();
    let synced = sync(&mut a, "g1", &a_id, 1, &[(&a_id, b"all")]).await;
    assert_eq!(synced.error_code, 0);
    assert_eq!(&synced.assignment[..], b"all");
    assert_eq!(heartbeat(&mut a, "g1", &a_id, 1).await, 0);
    let described = describe(address, "g1").await;
    assert_eq!(described.group_state.as_str(), "Stable");
    assert_eq!(described.protocol_data.as_str(), "range");
    assert_eq!(described.members.len(), 1);
    assert_eq!(described.members[0].client_host.as_str(), "/127.0.0.1");
    assert_eq!(&described.members[0].member_assignment[..], b"all");

    // A second member: its join waits until the first rejoins (told by its heartbeat).
    let b_task = tokio::spawn(async move {
        let mut b = Wire::connect(address).await;
        let joined = join(&mut b, "g1", 10_000).await;
        (b, joined)
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while heartbeat(&mut a, "g1", &a_id, 1).await != REBALANCE_IN_PROGRESS {
        assert!(
            Instant::now() < deadline,
            "the leader hears of the rebalance"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        describe(address, "g1").await.group_state.as_str(),
        "PreparingRebalance"
    );
    let rejoined = a.call(&join_request("g1", &a_id, None, 10_000), 9).await;
    let (mut b, b_joined) = b_task.await.unwrap();
    assert_eq!(rejoined.generation_id, 2);
    assert_eq!(b_joined.generation_id, 2);
    assert_eq!(rejoined.leader.as_str(), a_id, "the leader stays");
    assert_eq!(rejoined.members.len(), 2);
    assert!(
        b_joined.members.is_empty(),
        "only the leader gets the members"
    );
    let b_id = b_joined.member_id.to_string();
    // The follower's sync waits for the leader's assignment.
    let b_sync = tokio::spawn(async move {
        let response = sync(&mut b, "g1", &b_id, 2, &[]).await;
        (b, b_id, response)
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let a_sync = sync(
        &mut a,
        "g1",
        &a_id,
        2,
        &[(&a_id, b"p0p1"), ("x", b"unused")],
    )
    .await;
    assert_eq!(&a_sync.assignment[..], b"p0p1");
    let (mut b, b_id, b_synced) = b_sync.await.unwrap();
    assert_eq!(b_synced.error_code, 0);
    assert!(
        b_synced.assignment.is_empty(),
        "no assignment for b: an empty one"
    );
    assert_eq!(heartbeat(&mut a, "g1", &a_id, 1).await, ILLEGAL_GENERATION);
    assert_eq!(
        heartbeat(&mut b, "g1", "nobody", 2).await,
        UNKNOWN_MEMBER_ID
    );

    // Offsets: a member of the generation commits; an old generation is refused.
    assert_eq!(
        commit(address, "g1", 2, &a_id, "events", &[(0, 5), (1, 7)]).await,
        vec![0, 0]
    );
    assert_eq!(
        commit(address, "g1", 1, &a_id, "events", &[(0, 9)]).await,
        vec![ILLEGAL_GENERATION]
    );
    assert_eq!(
        fetch_offsets(address, "g1").await.unwrap(),
        vec![("events".into(), 0, 5), ("events".into(), 1, 7)]
    );
    // A group with members cannot be deleted, nor the offsets of topics it may be
    // subscribed to (these subscriptions are not the consumer protocol's, so every
    // topic counts as subscribed, as in Kafka).
    let mut admin = Wire::connect(address).await;
    let deleted = admin
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![gid("g1")]),
            2,
        )
        .await;
    assert_eq!(deleted.results[0].error_code, NON_EMPTY_GROUP);
    let refused = offset_delete(&mut admin, "g1", "events", 0).await;
    assert_eq!(refused.error_code, 0);
    assert_eq!(
        refused.topics[0].partitions[0].error_code,
        GROUP_SUBSCRIBED_TO_TOPIC
    );

    // b leaves (v3+ batch); a stops heartbeating: its session expires, the group empties.
    let left = b
        .call(
            &LeaveGroupRequest::default()
                .with_group_id(gid("g1"))
                .with_members(vec![MemberIdentity::default().with_member_id(s(&b_id))]),
            5,
        )
        .await;
    assert_eq!(left.error_code, 0);
    assert_eq!(left.members[0].error_code, 0);
    let rejoin = a.call(&join_request("g1", &a_id, None, 10_000), 9).await;
    assert_eq!(rejoin.generation_id, 3);
    assert_eq!(rejoin.members.len(), 1);
    let mut short = Wire::connect(address).await;
    let c = join(&mut short, "g2", 300).await;
    assert_eq!(c.error_code, 0);
    assert_eq!(
        sync(&mut short, "g2", &c.member_id, 1, &[])
            .await
            .error_code,
        0
    );
    // Its commit keeps the group once it is empty (an empty group with no offsets is
    // forgotten at the next retention check, as in Kafka).
    assert_eq!(
        commit(address, "g2", 1, &c.member_id, "events", &[(3, 1)]).await,
        vec![0]
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = describe(address, "g2").await;
        if state.group_state.as_str() == "Empty" {
            assert!(state.members.is_empty());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the silent member's session expires: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        heartbeat(&mut short, "g2", &c.member_id, 1).await,
        UNKNOWN_MEMBER_ID
    );

    // Session timeouts outside group.min/max.session.timeout.ms are refused.
    let refused = short.call(&join_request("g3", "", None, 50), 9).await;
    assert_eq!(refused.error_code, INVALID_SESSION_TIMEOUT);

    // ListGroups with a states filter (v4+), and the group type (v5).
    let mut wire = Wire::connect(address).await;
    let listed = wire
        .call(
            &ListGroupsRequest::default().with_states_filter(vec![s("Empty")]),
            5,
        )
        .await;
    let names: Vec<String> = listed
        .groups
        .iter()
        .map(|g| g.group_id.to_string())
        .collect();
    assert_eq!(names, vec!["g2".to_string()]);
    assert_eq!(listed.groups[0].group_type.as_str(), "classic");
    assert_eq!(listed.groups[0].protocol_type.as_str(), "consumer");
    let all = wire.call(&ListGroupsRequest::default(), 5).await;
    assert_eq!(all.groups.len(), 2);

    // An empty group is deleted with its offsets.
    let deleted = wire
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![gid("g2"), gid("nope")]),
            2,
        )
        .await;
    assert_eq!(deleted.results[0].error_code, 0);
    assert_eq!(deleted.results[1].error_code, GROUP_ID_NOT_FOUND);
    assert_eq!(describe(address, "g2").await.error_code, GROUP_ID_NOT_FOUND);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_member_restart_keeps_its_assignment_without_a_rebalance() {
    let node = TestNode::start(GROUP_SETTINGS).await;
    let (_, address) = coordinator(node.address, "static").await;
    let mut a = Wire::connect(address).await;
    let first = a
        .call(&join_request("static", "", Some("instance-a"), 10_000), 9)
        .await;
    assert_eq!(first.error_code, 0, "a static member needs no second join");
    let old_id = first.member_id.to_string();
    assert_eq!(
        sync(&mut a, "static", &old_id, 1, &[(&old_id, b"p0")])
            .await
            .error_code,
        0
    );
    // The same instance restarts (no LeaveGroup): a new member id, same generation.
    let mut again = Wire::connect(address).await;
    let second = again
        .call(&join_request("static", "", Some("instance-a"), 10_000), 9)
        .await;
    assert_eq!(second.error_code, 0);
    assert_eq!(second.generation_id, 1, "no rebalance");
    assert_ne!(second.member_id.as_str(), old_id);
    assert!(
        second.skip_assignment,
        "the leader need not assign again (v9)"
    );
    let synced = sync(&mut again, "static", &second.member_id, 1, &[]).await;
    assert_eq!(&synced.assignment[..], b"p0");
    assert_eq!(
        describe(address, "static").await.group_state.as_str(),
        "Stable"
    );
    // The old incarnation is fenced.
    let fenced = a
        .call(
            &HeartbeatRequest::default()
                .with_group_id(gid("static"))
                .with_generation_id(1)
                .with_member_id(s(&old_id))
                .with_group_instance_id(Some(s("instance-a"))),
            4,
        )
        .await;
    assert_eq!(fenced.error_code, FENCED_INSTANCE_ID);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_and_groups_survive_a_restart_and_expire_when_retained_too_long() {
    let node = TestNode::start(GROUP_SETTINGS).await;
    create_topic(node.address, "orders", 3, 1).await;
    let (_, address) = coordinator(node.address, "keeper").await;
    // A simple consumer's commits (generation -1, no member) create an empty group.
    assert_eq!(
        commit(address, "keeper", -1, "", "orders", &[(0, 10), (2, 30)]).await,
        vec![0, 0]
    );
    assert_eq!(
        commit(address, "keeper", -1, "", "orders", &[(0, 11)]).await,
        vec![0]
    );
    assert_eq!(
        commit(address, "keeper", -1, "", "missing", &[(0, 1)]).await,
        vec![3],
        "UNKNOWN_TOPIC_OR_PARTITION"
    );
    // A group with a member, stored by its leader's SyncGroup.
    let mut member = Wire::connect(address).await;
    let joined = join(&mut member, "live", 30_000).await;
    assert_eq!(
        sync(
            &mut member,
            "live",
            &joined.member_id,
            1,
            &[(&joined.member_id, b"a")]
        )
        .await
        .error_code,
        0
    );
    // OffsetDelete of one partition.
    let mut wire = Wire::connect(address).await;
    let deleted = offset_delete(&mut wire, "keeper", "orders", 2).await;
    assert_eq!(deleted.error_code, 0);
    assert_eq!(deleted.topics[0].partitions[0].error_code, 0);
    drop(wire);
    drop(member);

    let dir = node.stop().await;
    let node = TestNode::start_in(dir, GROUP_SETTINGS).await;
    let (_, address) = coordinator(node.address, "keeper").await;
    assert_eq!(
        fetch_offsets(address, "keeper").await.unwrap(),
        vec![("orders".into(), 0, 11)]
    );
    let live = describe(address, "live").await;
    assert_eq!(
        live.group_state.as_str(),
        "Stable",
        "loaded with its member"
    );
    assert_eq!(live.members.len(), 1);
    assert_eq!(live.members[0].member_id, joined.member_id);
    assert_eq!(&live.members[0].member_assignment[..], b"a");

    // OffsetFetch v1-v7 (one group per request) reads the same offsets.
    let mut wire = Wire::connect(address).await;
    let old = wire
        .call(
            &OffsetFetchRequest::default()
                .with_group_id(gid("keeper"))
                .with_topics(Some(vec![
                    offset_fetch_request::OffsetFetchRequestTopic::default()
                        .with_name(TopicName(s("orders")))
                        .with_partition_indexes(vec![0, 1]),
                ])),
            7,
        )
        .await;
    let got: Vec<(i32, i64)> = old.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.committed_offset))
        .collect();
    assert_eq!(got, vec![(0, 11), (1, -1)]);

    // OffsetCommit v2-v4's retention time sets an expire timestamp: gone once passed.
    let request = OffsetCommitRequest::default()
        .with_group_id(gid("brief"))
        .with_generation_id_or_member_epoch(-1)
        .with_retention_time_ms(300)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(1)
                        .with_committed_offset(4),
                ]),
        ]);
    let (_, brief_address) = coordinator(node.address, "brief").await;
    let mut wire = Wire::connect(brief_address).await;
    assert_eq!(
        wire.call(&request, 2).await.topics[0].partitions[0].error_code,
        0
    );
    assert_eq!(
        fetch_offsets(brief_address, "brief").await.unwrap(),
        vec![("orders".into(), 1, 4)]
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = describe(brief_address, "brief").await;
        if state.error_code == GROUP_ID_NOT_FOUND {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the offsets expire and the group with them"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(fetch_offsets(brief_address, "brief").await.unwrap(), vec![]);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_survive_a_coordinator_failover() {
    let mut settings = GROUP_SETTINGS.to_vec();
    settings.push(("offsets.topic.replication.factor", "3"));
    settings.push(("offsets.topic.num.partitions", "3"));
    let mut cluster = TestCluster::start(3, &settings).await;
    let addresses = cluster.addresses();
    create_topic(addresses[0], "ledger", 2, 3).await;
    let (coordinator_id, address) = coordinator(addresses[0], "durable").await;
    assert_eq!(
        commit(address, "durable", -1, "", "ledger", &[(0, 42), (1, 43)]).await,
        vec![0, 0]
    );
    // The coordinator's node stops; another replica of its partition takes over.
    let index = cluster
        .nodes
        .iter()
        .position(|n| n.id == coordinator_id)
        .unwrap();
    cluster.stop(index).await;
    let survivor = addresses[(index + 1) % 3];
    let (new_id, new_address) = coordinator(survivor, "durable").await;
    assert_ne!(new_id, coordinator_id);
    assert_eq!(
        fetch_offsets(new_address, "durable").await.unwrap(),
        vec![("ledger".into(), 0, 42), ("ledger".into(), 1, 43)]
    );
    // The old coordinator, back, is not the coordinator any more until it leads again.
    cluster.restart(index).await;
    let (_, latest) = coordinator(cluster.addresses()[index], "durable").await;
    assert_eq!(fetch_offsets(latest, "durable").await.unwrap().len(), 2);
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_protocol_members_get_assignments_from_the_server() {
    let node = TestNode::start(GROUP_SETTINGS).await;
    create_topic(node.address, "stream", 4, 1).await;
    let (_, address) = coordinator(node.address, "modern").await;
    let mut wire = Wire::connect(address).await;
    let a_id = uuid::Uuid::from_bytes(rand::random()).to_string();
    let joined = wire
        .call(&member_heartbeat("modern", &a_id, 0, Some("stream")), 1)
        .await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(joined.member_id.as_deref(), Some(a_id.as_str()));
    assert!(joined.member_epoch >= 1);
    let assigned: usize = joined
        .assignment
        .as_ref()
        .map(|a| a.topic_partitions.iter().map(|t| t.partitions.len()).sum())
        .unwrap_or(0);
    assert_eq!(assigned, 4, "one member gets all four partitions");
    // OffsetCommit v9 with the member epoch.
    assert_eq!(
        commit(
            address,
            "modern",
            joined.member_epoch,
            &a_id,
            "stream",
            &[(0, 3)]
        )
        .await,
        vec![0]
    );
    assert_eq!(
        commit(
            address,
            "modern",
            joined.member_epoch + 5,
            &a_id,
            "stream",
            &[(0, 3)]
        )
        .await,
        vec![113],
        "STALE_MEMBER_EPOCH"
    );
    // ListGroups and ConsumerGroupDescribe see it; DescribeGroups says it is not classic.
    let listed = wire.call(&ListGroupsRequest::default(), 5).await;
    let modern = listed
        .groups
        .iter()
        .find(|g| g.group_id.as_str() == "modern")
        .unwrap();
    assert_eq!(modern.group_type.as_str(), "consumer");
    let described = wire
        .call(
            &ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid("modern")]),
            1,
        )
        .await;
    assert_eq!(described.groups[0].error_code, 0);
    assert_eq!(described.groups[0].members.len(), 1);
    assert_eq!(described.groups[0].assignor_name.as_str(), "uniform");
    assert_eq!(
        describe(address, "modern").await.error_code,
        GROUP_ID_NOT_FOUND
    );
    // A classic member of another protocol type (Connect's) cannot join it; a classic
    // consumer can (KIP-848's online migration: its first join asks for a member id).
    let connect = wire
        .call(
            &join_request("modern", "", None, 10_000).with_protocol_type(s("connect")),
            9,
        )
        .await;
    assert_eq!(connect.error_code, 23, "INCONSISTENT_GROUP_PROTOCOL");
    let classic = wire
        .call(&join_request("modern", "", None, 10_000), 9)
        .await;
    assert_eq!(classic.error_code, MEMBER_ID_REQUIRED);
    // Leaving (epoch -1) empties it; OffsetDelete of its topic then works.
    let left = wire
        .call(&member_heartbeat("modern", &a_id, -1, None), 1)
        .await;
    assert_eq!(left.error_code, 0);
    assert_eq!(left.member_epoch, -1);
    let deleted = offset_delete(&mut wire, "modern", "stream", 0).await;
    assert_eq!(deleted.topics[0].partitions[0].error_code, 0);
    node.stop().await;
}

/// A classic member's JoinGroup with a real consumer-protocol subscription.
fn consumer_join(group: &str, member_id: &str, topic: &str) -> JoinGroupRequest {
    use sluice_protocol::consumer_protocol::{Subscription, encode_subscription};
    let subscription = encode_subscription(&Subscription {
        version: 1,
        topics: vec![topic.to_string()],
        user_data: None,
        owned_partitions: Vec::new(),
        generation_id: -1,
        rack_id: None,
    });
    join_request(group, member_id, None, 10_000).with_protocols(vec![
        JoinGroupRequestProtocol::default()
            .with_name(s("range"))
            .with_metadata(Bytes::from(subscription)),
    ])
}

/// The partitions of `topic` in a classic assignment.
fn assigned(bytes: &[u8], topic: &str) -> Vec<i32> {
    let assignment = sluice_protocol::consumer_protocol::decode_assignment(bytes).unwrap();
    let mut partitions: Vec<i32> = assignment
        .partitions
        .into_iter()
        .filter(|(t, _)| t == topic)
        .flat_map(|(_, p)| p)
        .collect();
    partitions.sort();
    partitions
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_group_upgrades_online_and_downgrades_when_the_new_member_leaves() {
    use sluice_protocol::consumer_protocol::{Assignment, encode_assignment};
    let node = TestNode::start(GROUP_SETTINGS).await;
    create_topic(node.address, "migrate", 4, 1).await;
    let (_, address) = coordinator(node.address, "mixed").await;

    // A classic member owns every partition (generation 1).
    let mut a = Wire::connect(address).await;
    let first = a.call(&consumer_join("mixed", "", "migrate"), 9).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let a_id = first.member_id.to_string();
    let joined = a.call(&consumer_join("mixed", &a_id, "migrate"), 9).await;
    assert_eq!(joined.generation_id, 1);
    let all = encode_assignment(&Assignment {
        version: 0,
        partitions: vec![("migrate".to_string(), vec![0, 1, 2, 3])],
        user_data: None,
    });
    let synced = a
        .call(
            &SyncGroupRequest::default()
                .with_group_id(gid("mixed"))
                .with_generation_id(1)
                .with_member_id(s(&a_id))
                .with_assignments(vec![
                    SyncGroupRequestAssignment::default()
                        .with_member_id(s(&a_id))
                        .with_assignment(Bytes::from(all)),
                ]),
            4,
        )
        .await;
    assert_eq!(assigned(&synced.assignment, "migrate"), vec![0, 1, 2, 3]);

    // A consumer-protocol member joins: the group becomes a consumer group.
    let mut b = Wire::connect(address).await;
    let b_id = uuid::Uuid::from_bytes(rand::random()).to_string();
    let upgraded = b
        .call(&member_heartbeat("mixed", &b_id, 0, Some("migrate")), 1)
        .await;
    assert_eq!(upgraded.error_code, 0, "{upgraded:?}");
    let mut b_epoch = upgraded.member_epoch;
    assert!(
        b_epoch >= 2,
        "the group epoch continues the classic generation"
    );
    assert_eq!(
        describe(address, "mixed").await.error_code,
        GROUP_ID_NOT_FOUND,
        "no longer a classic group"
    );
    let mut wire = Wire::connect(address).await;
    let listed = wire.call(&ListGroupsRequest::default(), 5).await;
    let mixed = listed
        .groups
        .iter()
        .find(|g| g.group_id.as_str() == "mixed")
        .unwrap();
    assert_eq!(mixed.group_type.as_str(), "consumer");

    // The classic member is told to rejoin, gets its share with SyncGroup, and the new
    // member gets the rest once it is released.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut a_partitions = vec![0, 1, 2, 3];
    let mut b_partitions: Vec<i32> = Vec::new();
    let mut a_generation = 1;
    while a_partitions.len() + b_partitions.len() != 4
        || a_partitions.len() != 2
        || b_partitions.len() != 2
    {
        assert!(
            Instant::now() < deadline,
            "the partitions are split: a {a_partitions:?}, b {b_partitions:?}"
        );
        if heartbeat(&mut a, "mixed", &a_id, a_generation).await == REBALANCE_IN_PROGRESS {
            let rejoined = a.call(&consumer_join("mixed", &a_id, "migrate"), 9).await;
            assert_eq!(rejoined.error_code, 0, "{rejoined:?}");
            assert!(
                rejoined.members.is_empty(),
                "the server assigns: no leader work"
            );
            a_generation = rejoined.generation_id;
            let synced = a
                .call(
                    &SyncGroupRequest::default()
                        .with_group_id(gid("mixed"))
                        .with_generation_id(a_generation)
                        .with_member_id(s(&a_id)),
                    4,
                )
                .await;
            assert_eq!(synced.error_code, 0);
            a_partitions = assigned(&synced.assignment, "migrate");
        }
        let beat = b
            .call(&member_heartbeat("mixed", &b_id, b_epoch, None), 1)
            .await;
        assert_eq!(beat.error_code, 0, "{beat:?}");
        b_epoch = beat.member_epoch;
        if let Some(assignment) = beat.assignment {
            b_partitions = assignment
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.clone())
                .collect();
            b_partitions.sort();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut union: Vec<i32> = a_partitions.iter().chain(&b_partitions).copied().collect();
    union.sort();
    assert_eq!(union, vec![0, 1, 2, 3], "disjoint and complete");
    let described = wire
        .call(
            &ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid("mixed")]),
            1,
        )
        .await;
    let mut types: Vec<i8> = described.groups[0]
        .members
        .iter()
        .map(|m| m.member_type)
        .collect();
    types.sort();
    assert_eq!(
        types,
        vec![0, 1],
        "one classic, one consumer-protocol member"
    );

    // The consumer-protocol member leaves: back to a classic group, which rebalances.
    let left = b.call(&member_heartbeat("mixed", &b_id, -1, None), 1).await;
    assert_eq!(left.error_code, 0);
    let classic = describe(address, "mixed").await;
    assert_eq!(classic.error_code, 0, "a classic group again");
    assert_eq!(classic.group_state.as_str(), "PreparingRebalance");
    assert_eq!(classic.members.len(), 1);
    let rejoined = a.call(&consumer_join("mixed", &a_id, "migrate"), 9).await;
    assert_eq!(rejoined.error_code, 0);
    assert_eq!(
        rejoined.leader.as_str(),
        a_id,
        "the classic leader assigns again"
    );
    assert_eq!(rejoined.members.len(), 1);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_groups_are_stored_and_their_members_keep_their_epochs_across_a_restart() {
    let node = TestNode::start(GROUP_SETTINGS).await;
    create_topic(node.address, "kept", 4, 1).await;
    let (_, address) = coordinator(node.address, "stored").await;
    let member_id = uuid::Uuid::from_bytes(rand::random()).to_string();
    let mut wire = Wire::connect(address).await;
    let joined = wire
        .call(&member_heartbeat("stored", &member_id, 0, Some("kept")), 1)
        .await;
    assert_eq!(joined.error_code, 0, "{joined:?}");
    let epoch = joined.member_epoch;
    assert_eq!(
        joined
            .assignment
            .map(|a| a.topic_partitions[0].partitions.len()),
        Some(4)
    );
    drop(wire);

    let dir = node.stop().await;
    let node = TestNode::start_in(dir, GROUP_SETTINGS).await;
    let (_, address) = coordinator(node.address, "stored").await;
    let mut wire = Wire::connect(address).await;
    let described = wire
        .call(
            &ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid("stored")]),
            1,
        )
        .await;
    let group = &described.groups[0];
    assert_eq!(group.error_code, 0, "the group was loaded: {group:?}");
    assert_eq!(group.group_epoch, epoch);
    assert_eq!(group.members.len(), 1);
    assert_eq!(group.members[0].member_id.as_str(), member_id);
    assert_eq!(group.members[0].member_epoch, epoch);
    let mut owned: Vec<i32> = group.members[0].assignment.topic_partitions[0]
        .partitions
        .clone();
    owned.sort();
    assert_eq!(owned, vec![0, 1, 2, 3]);
    // The member goes on heartbeating with its epoch: no rejoin needed.
    let again = wire
        .call(&member_heartbeat("stored", &member_id, epoch, None), 1)
        .await;
    assert_eq!(again.error_code, 0, "{again:?}");
    assert_eq!(again.member_epoch, epoch);
    // Deleted once empty: its records are tombstoned, a restart does not bring it back.
    let left = wire
        .call(&member_heartbeat("stored", &member_id, -1, None), 1)
        .await;
    assert_eq!(left.error_code, 0);
    let deleted = wire
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![gid("stored")]),
            2,
        )
        .await;
    assert_eq!(deleted.results[0].error_code, 0);
    drop(wire);
    let dir = node.stop().await;
    let node = TestNode::start_in(dir, GROUP_SETTINGS).await;
    let (_, address) = coordinator(node.address, "stored").await;
    let mut wire = Wire::connect(address).await;
    let described = wire
        .call(
            &ConsumerGroupDescribeRequest::default().with_group_ids(vec![gid("stored")]),
            1,
        )
        .await;
    assert_eq!(described.groups[0].error_code, GROUP_ID_NOT_FOUND);
    node.stop().await;
}
