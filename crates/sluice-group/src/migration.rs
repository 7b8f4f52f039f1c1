//! Online migration between classic groups and KIP-848 consumer groups (KIP-848
//! "Upgrade & Downgrade"; Kafka's `group.consumer.migration.policy=bidirectional`).
//!
//! A consumer group may hold members of the classic protocol (JoinGroup, SyncGroup,
//! Heartbeat, LeaveGroup with protocol type `consumer`) next to ConsumerGroupHeartbeat
//! members: [`ConsumerGroup::classic_join`], [`ConsumerGroup::classic_sync`],
//! [`ConsumerGroup::classic_heartbeat`] and [`ConsumerGroup::classic_leave`] serve
//! them, as Kafka's `GroupMetadataManager.classicGroup*ToConsumerGroup` do. Their
//! subscriptions and assignments are the classic consumer protocol's bytes
//! (ConsumerProtocolSubscription / ConsumerProtocolAssignment).
//!
//! - Upgrade: a ConsumerGroupHeartbeat joining a non-empty classic group converts it
//!   ([`ConsumerGroup::validate_online_upgrade`], [`ConsumerGroup::from_classic`]);
//!   the broker then serves the heartbeat on the new group.
//! - Downgrade: when the last consumer-protocol member leaves (or is fenced, or is
//!   replaced by a classic static member) and classic members remain,
//!   [`ConsumerGroup::to_classic`] gives the classic group to become.
//!
//! Every classic request is answered at once, as in Kafka: a JoinGroup does not wait
//! for other members, nor for a revocation to complete. A member that must revoke
//! partitions gets its old generation with its reduced assignment, revokes, and
//! rejoins (the cooperative client does so by itself; the coordinator also answers
//! its Heartbeats with REBALANCE_IN_PROGRESS until it has).
//!
//! [`ConsumerGroup::classic_join`]: crate::consumer::ConsumerGroup::classic_join
//! [`ConsumerGroup::classic_sync`]: crate::consumer::ConsumerGroup::classic_sync
//! [`ConsumerGroup::classic_heartbeat`]: crate::consumer::ConsumerGroup::classic_heartbeat
//! [`ConsumerGroup::classic_leave`]: crate::consumer::ConsumerGroup::classic_leave
//! [`ConsumerGroup::validate_online_upgrade`]: crate::consumer::ConsumerGroup::validate_online_upgrade
//! [`ConsumerGroup::from_classic`]: crate::consumer::ConsumerGroup::from_classic
//! [`ConsumerGroup::to_classic`]: crate::consumer::ConsumerGroup::to_classic

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;

use crate::assignor::TopicPartitions;
use crate::consumer::Topics;

/// The protocol type of the classic consumer protocol.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A JoinGroup request as the consumer group sees it. `client_host` as Kafka shows
/// it (`/a.b.c.d`); `rebalance_timeout_ms` is the session timeout for JoinGroup v0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicJoin {
    pub version: i16,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// (protocol name, ConsumerProtocolSubscription bytes), in the member's order.
    pub protocols: Vec<(String, Bytes)>,
}

/// The JoinGroup answer for a classic member of a consumer group. The response's
/// member list is always empty (no member is the leader).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicJoinResult {
    pub error: i16,
    /// The member's id; on MEMBER_ID_REQUIRED the id to rejoin with; on other
    /// errors the request's.
    pub member_id: String,
    /// The member epoch; -1 on errors.
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// Always `""`: the member is a follower and sends SyncGroup with no assignments.
    pub leader: String,
    /// Always false (Kafka leaves it unset).
    pub skip_assignment: bool,
}

/// One member of a classic group, for the conversions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberSnapshot {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    /// (protocol name, ConsumerProtocolSubscription bytes).
    pub protocols: Vec<(String, Bytes)>,
    /// ConsumerProtocolAssignment bytes; empty when the member has none.
    pub assignment: Bytes,
}

/// A classic group, for the conversions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicSnapshot {
    pub generation: i32,
    pub protocol_type: String,
    /// The selected protocol (empty when none was selected yet).
    pub protocol: String,
    pub leader: Option<String>,
    pub members: Vec<ClassicMemberSnapshot>,
}

/// GROUP_ID_NOT_FOUND with Kafka's upgrade refusal message.
pub(crate) fn upgrade_refusal(group_id: &str, reason: &str) -> (i16, String) {
    (
        ResponseError::GroupIdNotFound.code(),
        format!("Cannot upgrade classic group {group_id} to consumer group because {reason}."),
    )
}

/// Partitions by topic name -> by topic id; topics `topics` lacks are dropped, as
/// are topics without partitions.
pub(crate) fn to_topic_ids(partitions: &[(String, Vec<i32>)], topics: &Topics) -> TopicPartitions {
    let mut result: TopicPartitions = BTreeMap::new();
    for (name, ps) in partitions {
        if let Some((topic_id, _)) = topics.get(name)
            && !ps.is_empty()
        {
            result
                .entry(topic_id)
                .or_default()
                .extend(ps.iter().copied());
        }
    }
    result
}

/// The version of a ConsumerProtocolSubscription (its first two bytes, big-endian);
/// 0 when it is too short.
pub(crate) fn protocol_version(subscription: &[u8]) -> i16 {
    match subscription {
        [a, b, ..] => i16::from_be_bytes([*a, *b]),
        _ => 0,
    }
}

/// Kafka's `ClassicGroup.selectProtocol`: among the protocols every member
/// supports, the one most members list first among them; ties go to the earliest
/// in the first member's order. `None` when the members share no protocol.
pub(crate) fn select_protocol<'a>(
    members: impl Iterator<Item = &'a [(String, Bytes)]> + Clone,
) -> Option<String> {
    let first = members.clone().next()?;
    let candidates: Vec<&str> = first
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| {
            members
                .clone()
                .all(|protocols| protocols.iter().any(|(n, _)| n == name))
        })
        .collect();
    let mut votes = vec![0usize; candidates.len()];
    for protocols in members {
        if let Some(index) = protocols
            .iter()
            .find_map(|(n, _)| candidates.iter().position(|c| c == n))
        {
            votes[index] += 1;
        }
    }
    let best = *votes.iter().max()?;
    candidates
        .iter()
        .zip(votes)
        .find(|(_, v)| *v == best)
        .map(|(c, _)| c.to_string())
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
    use kafka_protocol::messages::{
        ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, GroupId, TopicName,
    };
    use kafka_protocol::protocol::StrBytes;
    use sluice_protocol::ErrorCode;
    use sluice_protocol::consumer_protocol::{
        Assignment, Subscription, decode_assignment, encode_assignment, encode_subscription,
    };
    use uuid::Uuid;

    use super::*;
    use crate::consumer::{ConsumerGroup, ConsumerGroupConfig, ConsumerGroupState, MemberState};

    const FOO: Uuid = Uuid::from_bytes([1; 16]);
    const BAR: Uuid = Uuid::from_bytes([2; 16]);
    const PROTOCOL: &str = "cooperative-sticky";

    const NONE: i16 = ErrorCode::NONE.0;
    const ILLEGAL_GENERATION: i16 = ErrorCode::ILLEGAL_GENERATION.0;
    const INCONSISTENT_GROUP_PROTOCOL: i16 = ErrorCode::INCONSISTENT_GROUP_PROTOCOL.0;
    const UNKNOWN_MEMBER_ID: i16 = ErrorCode::UNKNOWN_MEMBER_ID.0;
    const REBALANCE_IN_PROGRESS: i16 = ErrorCode::REBALANCE_IN_PROGRESS.0;
    const GROUP_ID_NOT_FOUND: i16 = ErrorCode::GROUP_ID_NOT_FOUND.0;
    const MEMBER_ID_REQUIRED: i16 = ErrorCode::MEMBER_ID_REQUIRED.0;
    const GROUP_MAX_SIZE_REACHED: i16 = ErrorCode::GROUP_MAX_SIZE_REACHED.0;
    const FENCED_INSTANCE_ID: i16 = ErrorCode::FENCED_INSTANCE_ID.0;

    fn topics() -> Topics {
        Topics::new([("foo".to_string(), FOO, 4), ("bar".to_string(), BAR, 2)])
    }

    fn config() -> ConsumerGroupConfig {
        ConsumerGroupConfig::default()
    }

    fn subscription(version: i16, owned: &[i32], generation: i32) -> Bytes {
        Bytes::from(encode_subscription(&Subscription {
            version,
            topics: vec!["foo".to_string()],
            user_data: None,
            owned_partitions: if owned.is_empty() {
                vec![]
            } else {
                vec![("foo".to_string(), owned.to_vec())]
            },
            generation_id: generation,
            rack_id: None,
        }))
    }

    fn assignment(partitions: &[i32]) -> Bytes {
        Bytes::from(encode_assignment(&Assignment {
            version: 3,
            partitions: vec![("foo".to_string(), partitions.to_vec())],
            user_data: None,
        }))
    }

    /// The partitions of ConsumerProtocolAssignment bytes.
    fn partitions(bytes: &[u8]) -> Vec<(String, Vec<i32>)> {
        decode_assignment(bytes).unwrap().partitions
    }

    fn classic_member(id: &str, instance: Option<&str>, owned: &[i32]) -> ClassicMemberSnapshot {
        ClassicMemberSnapshot {
            member_id: id.to_string(),
            group_instance_id: instance.map(str::to_string),
            client_id: format!("client-{id}"),
            client_host: "/10.0.0.1".to_string(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocols: vec![
                (PROTOCOL.to_string(), subscription(3, owned, 5)),
                ("range".to_string(), subscription(3, owned, 5)),
            ],
            assignment: assignment(owned),
        }
    }

    /// A Stable classic group at generation 5: a owns foo-0,1 and b foo-2,3.
    fn stable_classic() -> ClassicSnapshot {
        ClassicSnapshot {
            generation: 5,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            protocol: PROTOCOL.to_string(),
            leader: Some("a".to_string()),
            members: vec![
                classic_member("a", None, &[0, 1]),
                classic_member("b", None, &[2, 3]),
            ],
        }
    }

    fn join(id: &str, owned: &[i32], generation: i32) -> ClassicJoin {
        ClassicJoin {
            version: 9,
            member_id: id.to_string(),
            group_instance_id: None,
            client_id: format!("client-{id}"),
            client_host: "/10.0.0.1".to_string(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 30_000,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            protocols: vec![
                (PROTOCOL.to_string(), subscription(3, owned, generation)),
                ("range".to_string(), subscription(3, owned, generation)),
            ],
        }
    }

    fn cg_join(id: &str) -> ConsumerGroupHeartbeatRequest {
        let mut r = ConsumerGroupHeartbeatRequest::default();
        r.group_id = GroupId(StrBytes::from_static_str("g"));
        r.member_id = StrBytes::from_string(id.to_string());
        r.member_epoch = 0;
        r.rebalance_timeout_ms = 30_000;
        r.subscribed_topic_names = Some(vec![TopicName(StrBytes::from_static_str("foo"))]);
        r.topic_partitions = Some(vec![]);
        r
    }

    fn cg_beat(id: &str, epoch: i32, owned: &[i32]) -> ConsumerGroupHeartbeatRequest {
        let mut r = ConsumerGroupHeartbeatRequest::default();
        r.group_id = GroupId(StrBytes::from_static_str("g"));
        r.member_id = StrBytes::from_string(id.to_string());
        r.member_epoch = epoch;
        let mut tp = RequestTopicPartitions::default();
        tp.topic_id = FOO;
        tp.partitions = owned.to_vec();
        r.topic_partitions = Some(if owned.is_empty() { vec![] } else { vec![tp] });
        r
    }

    fn hb(
        g: &mut ConsumerGroup,
        r: &ConsumerGroupHeartbeatRequest,
        now: i64,
    ) -> ConsumerGroupHeartbeatResponse {
        g.heartbeat(1, r, "client-c", "/10.0.0.2", &topics(), &config(), now)
    }

    fn hb_assigned(r: &ConsumerGroupHeartbeatResponse) -> Option<Vec<i32>> {
        r.assignment.as_ref().map(|a| {
            let mut v: Vec<i32> = a
                .topic_partitions
                .iter()
                .flat_map(|tp| tp.partitions.iter().copied())
                .collect();
            v.sort();
            v
        })
    }

    fn targets(g: &ConsumerGroup) -> Vec<(String, Vec<i32>)> {
        g.members()
            .map(|m| {
                let t = m
                    .target
                    .and_then(|t| t.get(&FOO))
                    .map(|s| s.iter().copied().collect())
                    .unwrap_or_default();
                (m.member_id.to_string(), t)
            })
            .collect()
    }

    /// The upgraded group with consumer-protocol member c joined at t=100.
    fn upgraded() -> ConsumerGroup {
        let classic = stable_classic();
        ConsumerGroup::validate_online_upgrade("g", &classic, &config()).unwrap();
        let mut g = ConsumerGroup::from_classic("g".into(), &classic, &topics(), 0).unwrap();
        let r = hb(&mut g, &cg_join("c"), 100);
        assert_eq!(r.error_code, 0);
        g
    }

    #[test]
    fn upgrade_keeps_members_and_assignments() {
        let classic = stable_classic();
        let g = ConsumerGroup::from_classic("g".into(), &classic, &topics(), 0).unwrap();
        assert_eq!((g.group_epoch(), g.assignment_epoch()), (5, 5));
        assert_eq!(g.state(), ConsumerGroupState::Stable);
        let members: Vec<_> = g.members().collect();
        assert_eq!(members.len(), 2);
        assert_eq!(members[0].member_id, "a");
        assert_eq!(members[0].member_epoch, 5);
        assert_eq!(members[0].state, MemberState::Stable);
        assert!(members[0].uses_classic_protocol);
        assert_eq!(members[0].classic_session_timeout_ms, Some(10_000));
        assert_eq!(members[0].classic_protocols.map(|p| p.len()), Some(2));
        assert_eq!(members[0].client_id, "client-a");
        assert_eq!(members[0].rebalance_timeout_ms, 30_000);
        assert_eq!(
            members[0].subscribed_topic_names.iter().collect::<Vec<_>>(),
            vec!["foo"]
        );
        assert_eq!(
            targets(&g),
            vec![("a".into(), vec![0, 1]), ("b".into(), vec![2, 3])]
        );
        assert_eq!(
            members[1]
                .assigned
                .get(&FOO)
                .map(|s| s.iter().copied().collect::<Vec<_>>()),
            Some(vec![2, 3])
        );
        let d = g.describe(&topics());
        assert_eq!(
            d.members.iter().map(|m| m.member_type).collect::<Vec<_>>(),
            vec![0, 0]
        );
        // Sessions use the classic session timeout.
        assert_eq!(g.next_deadline_ms(), Some(10_000));
        // Every member is classic: no downgrade check may fire before the joining
        // member's heartbeat is served, but to_classic says what it would be.
        assert!(g.to_classic().is_some());
    }

    #[test]
    fn consumer_member_gets_partitions_after_classic_members_give_them_up() {
        let mut g = upgraded();
        assert_eq!(g.group_epoch(), 6);
        assert_eq!(
            targets(&g),
            vec![
                ("a".into(), vec![0, 1]),
                ("b".into(), vec![2]),
                ("c".into(), vec![3]),
            ]
        );
        assert_eq!(g.state(), ConsumerGroupState::Reconciling);
        let c = g.members().find(|m| m.member_id == "c").unwrap();
        assert_eq!(
            (
                c.member_epoch,
                c.assigned.is_empty(),
                c.uses_classic_protocol
            ),
            (6, true, false)
        );

        // a: its heartbeat tells it to rejoin; so does a SyncGroup at the old generation.
        assert_eq!(g.classic_heartbeat("a", None, 4, 200), ILLEGAL_GENERATION);
        assert_eq!(
            g.classic_heartbeat("a", None, 5, 200),
            REBALANCE_IN_PROGRESS
        );
        assert_eq!(
            g.classic_sync("a", None, 5, Some("consumer"), Some(PROTOCOL), 200),
            Err(ErrorCode(REBALANCE_IN_PROGRESS))
        );
        // a rejoins with what it owns: it keeps everything, so it moves to epoch 6 at once.
        let r = g.classic_join(&join("a", &[0, 1], 5), &topics(), &config(), 300);
        assert_eq!(
            r,
            ClassicJoinResult {
                error: NONE,
                member_id: "a".into(),
                generation: 6,
                protocol_type: Some("consumer".into()),
                protocol_name: Some(PROTOCOL.into()),
                leader: String::new(),
                skip_assignment: false,
            }
        );
        let bytes = g
            .classic_sync("a", None, 6, Some("consumer"), Some(PROTOCOL), 310)
            .unwrap();
        assert_eq!(decode_assignment(&bytes).unwrap().version, 3);
        assert_eq!(partitions(&bytes), vec![("foo".to_string(), vec![0, 1])]);
        assert_eq!(g.classic_heartbeat("a", None, 6, 320), NONE);

        // b must give up foo-3: it stays at generation 5 with the reduced assignment.
        assert_eq!(
            g.classic_heartbeat("b", None, 5, 400),
            REBALANCE_IN_PROGRESS
        );
        let r = g.classic_join(&join("b", &[2, 3], 5), &topics(), &config(), 410);
        assert_eq!((r.error, r.generation), (NONE, 5));
        let b = g.members().find(|m| m.member_id == "b").unwrap();
        assert_eq!(b.state, MemberState::UnrevokedPartitions);
        assert_eq!(
            b.pending_revocation
                .get(&FOO)
                .map(|s| s.iter().copied().collect::<Vec<_>>()),
            Some(vec![3])
        );
        let bytes = g
            .classic_sync("b", None, 5, Some("consumer"), Some(PROTOCOL), 420)
            .unwrap();
        assert_eq!(partitions(&bytes), vec![("foo".to_string(), vec![2])]);
        // Until it has revoked, its heartbeats ask it to rejoin.
        assert_eq!(
            g.classic_heartbeat("b", None, 5, 430),
            REBALANCE_IN_PROGRESS
        );
        // c still waits for foo-3.
        let r = hb(&mut g, &cg_beat("c", 6, &[]), 440);
        assert_eq!(
            (r.error_code, r.member_epoch, hb_assigned(&r)),
            (0, 6, None)
        );

        // b revoked foo-3 and rejoins: epoch 6.
        let r = g.classic_join(&join("b", &[2], 5), &topics(), &config(), 450);
        assert_eq!((r.error, r.generation), (NONE, 6));
        let bytes = g.classic_sync("b", None, 6, None, None, 460).unwrap();
        assert_eq!(partitions(&bytes), vec![("foo".to_string(), vec![2])]);
        assert_eq!(g.classic_heartbeat("b", None, 6, 470), NONE);

        // c gets foo-3.
        let r = hb(&mut g, &cg_beat("c", 6, &[]), 480);
        assert_eq!((r.member_epoch, hb_assigned(&r)), (6, Some(vec![3])));
        assert_eq!(g.state(), ConsumerGroupState::Stable);

        // Offsets: a classic member commits with its generation = member epoch.
        assert_eq!(
            g.validate_offset_commit("a", None, 5),
            Err(ErrorCode::ILLEGAL_GENERATION)
        );
        assert_eq!(g.validate_offset_commit("a", None, 6), Ok(()));
        assert_eq!(
            g.validate_offset_commit("c", None, 5),
            Err(ErrorCode::STALE_MEMBER_EPOCH)
        );
        let d = g.describe(&topics());
        assert_eq!(
            d.members
                .iter()
                .map(|m| (m.member_id.to_string(), m.member_type))
                .collect::<Vec<_>>(),
            vec![("a".into(), 0), ("b".into(), 0), ("c".into(), 1)]
        );
        assert!(g.to_classic().is_none());
    }

    #[test]
    fn eager_member_rejoins_without_owned_partitions() {
        let mut g = upgraded();
        // A v0 subscription has no owned partitions: the member revoked everything.
        let mut j = join("b", &[], 5);
        j.protocols = vec![(PROTOCOL.to_string(), subscription(0, &[], -1))];
        let r = g.classic_join(&j, &topics(), &config(), 200);
        assert_eq!((r.error, r.generation), (NONE, 6));
        let bytes = g
            .classic_sync("b", None, 6, None, Some(PROTOCOL), 210)
            .unwrap();
        // The assignment is encoded in the version of the member's subscription.
        let decoded = decode_assignment(&bytes).unwrap();
        assert_eq!((decoded.version, decoded.user_data), (0, None));
        assert_eq!(decoded.partitions, vec![("foo".to_string(), vec![2])]);
        let r = hb(&mut g, &cg_beat("c", 6, &[]), 220);
        assert_eq!(hb_assigned(&r), Some(vec![3]));
    }

    #[test]
    fn classic_member_joins_a_consumer_group() {
        let mut g = ConsumerGroup::new("g".into());
        let r = hb(&mut g, &cg_join("c"), 0);
        assert_eq!(hb_assigned(&r), Some(vec![0, 1, 2, 3]));

        // v4+ without a member id: MEMBER_ID_REQUIRED with the id to use.
        let r = g.classic_join(&join("", &[], -1), &topics(), &config(), 10);
        assert_eq!((r.error, r.generation), (MEMBER_ID_REQUIRED, -1));
        let id = r.member_id.clone();
        assert_eq!(id.len(), 22);
        assert_eq!(g.members().count(), 1);

        let r = g.classic_join(&join(&id, &[], -1), &topics(), &config(), 20);
        assert_eq!(
            (r.error, r.generation, r.member_id.as_str()),
            (NONE, 2, id.as_str())
        );
        assert_eq!(r.protocol_name.as_deref(), Some(PROTOCOL));
        // Its partitions are still c's.
        let bytes = g
            .classic_sync(&id, None, 2, Some("consumer"), Some(PROTOCOL), 30)
            .unwrap();
        assert_eq!(partitions(&bytes), Vec::<(String, Vec<i32>)>::new());
        assert_eq!(g.classic_heartbeat(&id, None, 2, 40), NONE);
        // c revokes two partitions.
        let r = hb(&mut g, &cg_beat("c", 1, &[0, 1, 2, 3]), 50);
        assert_eq!((r.member_epoch, hb_assigned(&r)), (1, Some(vec![0, 1])));
        let r = hb(&mut g, &cg_beat("c", 1, &[0, 1]), 60);
        assert_eq!(r.member_epoch, 2);
        // The classic member is told to rejoin now that its partitions are free.
        assert_eq!(g.classic_heartbeat(&id, None, 2, 70), REBALANCE_IN_PROGRESS);
        let r = g.classic_join(&join(&id, &[], 2), &topics(), &config(), 80);
        assert_eq!((r.error, r.generation), (NONE, 2));
        let bytes = g.classic_sync(&id, None, 2, None, None, 90).unwrap();
        assert_eq!(partitions(&bytes), vec![("foo".to_string(), vec![2, 3])]);
        assert_eq!(g.classic_heartbeat(&id, None, 2, 100), NONE);
        assert_eq!(g.state(), ConsumerGroupState::Stable);

        // Before v4 the member id is generated at once.
        let mut j = join("", &[], -1);
        j.version = 3;
        j.protocols.reverse();
        let r = g.classic_join(&j, &topics(), &config(), 110);
        assert_eq!((r.error, r.generation), (NONE, 3));
        assert_eq!(r.protocol_name.as_deref(), Some("range"));
        assert_eq!(g.members().count(), 3);

        // Protocols: the type must be "consumer" and one protocol shared by all
        // classic members.
        let mut j = join("x", &[], -1);
        j.protocol_type = "connect".into();
        let r = g.classic_join(&j, &topics(), &config(), 120);
        assert_eq!(
            (r.error, r.member_id.as_str(), r.generation),
            (INCONSISTENT_GROUP_PROTOCOL, "x", -1)
        );
        let mut j = join("x", &[], -1);
        j.protocols = vec![("roundrobin".into(), subscription(3, &[], -1))];
        let r = g.classic_join(&j, &topics(), &config(), 120);
        assert_eq!(r.error, INCONSISTENT_GROUP_PROTOCOL);
        let limited = ConsumerGroupConfig {
            max_size: 3,
            ..config()
        };
        let r = g.classic_join(&join("x", &[], -1), &topics(), &limited, 120);
        assert_eq!(r.error, GROUP_MAX_SIZE_REACHED);
        assert_eq!(g.members().count(), 3);
    }

    #[test]
    fn sync_and_heartbeat_errors() {
        let mut g = upgraded();
        assert_eq!(g.classic_heartbeat("zz", None, 5, 0), UNKNOWN_MEMBER_ID);
        // A consumer-protocol member cannot use the classic APIs.
        assert_eq!(g.classic_heartbeat("c", None, 6, 0), UNKNOWN_MEMBER_ID);
        assert_eq!(
            g.classic_sync("c", None, 6, None, None, 0),
            Err(ErrorCode(UNKNOWN_MEMBER_ID))
        );
        assert_eq!(
            g.classic_join(&join("a", &[0, 1], 5), &topics(), &config(), 0)
                .generation,
            6
        );
        assert_eq!(
            g.classic_sync("a", None, 5, None, None, 0),
            Err(ErrorCode(ILLEGAL_GENERATION))
        );
        assert_eq!(
            g.classic_sync("a", None, 6, Some("connect"), None, 0),
            Err(ErrorCode(INCONSISTENT_GROUP_PROTOCOL))
        );
        // The protocol name must be the one the JoinGroup answered.
        assert_eq!(
            g.classic_sync("a", None, 6, None, Some("range"), 0),
            Err(ErrorCode(INCONSISTENT_GROUP_PROTOCOL))
        );
        assert_eq!(
            g.classic_heartbeat("a", Some("i-zz"), 6, 0),
            UNKNOWN_MEMBER_ID
        );
    }

    #[test]
    fn static_classic_members() {
        let mut classic = stable_classic();
        classic.members[0].group_instance_id = Some("i-a".into());
        classic.members[1].group_instance_id = Some("i-b".into());
        let mut g = ConsumerGroup::from_classic("g".into(), &classic, &topics(), 0).unwrap();
        hb(&mut g, &cg_join("c"), 100);
        assert_eq!(
            g.classic_heartbeat("a", Some("i-a"), 5, 200),
            REBALANCE_IN_PROGRESS
        );
        assert_eq!(
            g.classic_heartbeat("x", Some("i-a"), 5, 200),
            FENCED_INSTANCE_ID
        );
        assert_eq!(
            g.classic_sync("x", Some("i-a"), 5, None, None, 200),
            Err(ErrorCode(FENCED_INSTANCE_ID))
        );
        // A known member id under an unknown instance.
        let mut j = join("a", &[0, 1], 5);
        j.group_instance_id = Some("i-zz".into());
        assert_eq!(
            g.classic_join(&j, &topics(), &config(), 200).error,
            UNKNOWN_MEMBER_ID
        );
        // The instance restarts (no member id): it replaces the old member and its partitions.
        let mut j = join("", &[], -1);
        j.group_instance_id = Some("i-a".into());
        let r = g.classic_join(&j, &topics(), &config(), 300);
        assert_eq!((r.error, r.generation), (NONE, 6));
        assert_ne!(r.member_id, "a");
        let ids: Vec<String> = g.members().map(|m| m.member_id.to_string()).collect();
        assert!(!ids.contains(&"a".to_string()) && ids.contains(&r.member_id));
        let bytes = g
            .classic_sync(&r.member_id, Some("i-a"), 6, None, None, 310)
            .unwrap();
        assert_eq!(partitions(&bytes), vec![("foo".to_string(), vec![0, 1])]);
        // The old incarnation is fenced.
        assert_eq!(
            g.classic_heartbeat("a", Some("i-a"), 5, 320),
            FENCED_INSTANCE_ID
        );
    }

    #[test]
    fn classic_member_leaves() {
        let mut g = upgraded();
        assert_eq!(g.classic_leave("b", None, 200), NONE);
        assert_eq!(g.group_epoch(), 7);
        assert_eq!(
            g.members()
                .map(|m| m.member_id.to_string())
                .collect::<Vec<_>>(),
            vec!["a", "c"]
        );
        assert_eq!(g.classic_leave("b", None, 200), UNKNOWN_MEMBER_ID);
        // Not for consumer-protocol members.
        assert_eq!(g.classic_leave("c", None, 200), UNKNOWN_MEMBER_ID);
        // No downgrade: c is still there.
        assert!(g.to_classic().is_none());
        // b's partitions go to c once a has rejoined (a keeps its own).
        let r = hb(&mut g, &cg_beat("c", 6, &[]), 210);
        assert_eq!((r.member_epoch, hb_assigned(&r)), (7, Some(vec![2, 3])));

        // Static members: by instance id, with or without the member id.
        let mut classic = stable_classic();
        classic.members[0].group_instance_id = Some("i-a".into());
        classic.members[1].group_instance_id = Some("i-b".into());
        let mut g = ConsumerGroup::from_classic("g".into(), &classic, &topics(), 0).unwrap();
        hb(&mut g, &cg_join("c"), 100);
        assert_eq!(g.classic_leave("x", Some("i-a"), 200), FENCED_INSTANCE_ID);
        assert_eq!(g.classic_leave("", Some("i-zz"), 200), UNKNOWN_MEMBER_ID);
        assert_eq!(g.classic_leave("a", Some("i-a"), 200), NONE);
        assert_eq!(g.classic_leave("", Some("i-b"), 200), NONE);
        assert_eq!(
            g.members()
                .map(|m| m.member_id.to_string())
                .collect::<Vec<_>>(),
            vec!["c"]
        );
        assert_eq!(g.group_epoch(), 8);
    }

    #[test]
    fn classic_session_join_and_sync_timeouts() {
        let mut g = upgraded();
        // Both classic sessions (10 s) started at the conversion (t=0).
        assert_eq!(g.next_deadline_ms(), Some(10_000));
        assert_eq!(
            g.classic_heartbeat("a", None, 5, 5_000),
            REBALANCE_IN_PROGRESS
        );
        assert_eq!(g.expire(9_999), Vec::<String>::new());
        assert_eq!(g.expire(10_000), vec!["b".to_string()]);
        assert_eq!(g.group_epoch(), 7);
        assert_eq!(g.classic_heartbeat("b", None, 5, 10_001), UNKNOWN_MEMBER_ID);

        // a keeps heartbeating but never rejoins: fenced at 5 000 + its 30 s
        // rebalance timeout.
        for now in [14_000, 23_000, 32_000] {
            assert_eq!(
                g.classic_heartbeat("a", None, 5, now),
                REBALANCE_IN_PROGRESS
            );
        }
        assert_eq!(g.next_deadline_ms(), Some(35_000));
        assert_eq!(g.expire(34_999), Vec::<String>::new());
        assert_eq!(g.expire(35_000), vec!["a".to_string()]);
        assert!(g.to_classic().is_none());

        // A member that joins but never syncs is fenced after its rebalance timeout.
        let mut g = upgraded();
        let r = g.classic_join(&join("a", &[0, 1], 5), &topics(), &config(), 1_000);
        assert_eq!(r.generation, 6);
        for now in [9_000, 18_000, 27_000] {
            assert_eq!(g.classic_heartbeat("a", None, 6, now), NONE);
        }
        assert_eq!(g.expire(30_999), vec!["b".to_string()]);
        assert_eq!(g.expire(31_000), vec!["a".to_string()]);
        // A SyncGroup in time clears the deadline.
        let mut g = upgraded();
        g.classic_join(&join("a", &[0, 1], 5), &topics(), &config(), 1_000);
        g.classic_sync("a", None, 6, None, None, 2_000).unwrap();
        g.classic_heartbeat("a", None, 6, 11_000);
        g.classic_heartbeat("a", None, 6, 20_000);
        g.classic_heartbeat("a", None, 6, 29_000);
        assert_eq!(g.expire(31_000), vec!["b".to_string()]);
        // Classic members are not fenced for a slow revocation (only by the
        // join/sync deadlines): b must revoke foo-3.
        let mut g = upgraded();
        g.classic_join(&join("b", &[2, 3], 5), &topics(), &config(), 1_000);
        g.classic_sync("b", None, 5, None, None, 2_000).unwrap();
        for now in [9_000, 18_000, 27_000, 36_000] {
            assert_eq!(
                g.classic_heartbeat("b", None, 5, now),
                REBALANCE_IN_PROGRESS
            );
        }
        // The join deadline started at the first REBALANCE_IN_PROGRESS (t=9 000).
        assert_eq!(g.expire(38_999), vec!["a".to_string()]);
        assert_eq!(g.expire(39_000), vec!["b".to_string()]);
    }

    #[test]
    fn downgrade_when_the_consumer_member_leaves() {
        let mut g = upgraded();
        assert!(g.to_classic().is_none());
        let r = hb(&mut g, &cg_beat("c", -1, &[]), 200);
        assert_eq!((r.error_code, r.member_epoch), (0, -1));
        assert_eq!(g.group_epoch(), 7);
        let snapshot = g.to_classic().unwrap();
        assert_eq!(snapshot.generation, 7);
        assert_eq!(snapshot.protocol_type, "consumer");
        assert_eq!(snapshot.protocol, PROTOCOL);
        assert_eq!(snapshot.leader, None);
        assert_eq!(snapshot.members.len(), 2);
        let a = &snapshot.members[0];
        assert_eq!(a.member_id, "a");
        assert_eq!(
            (a.session_timeout_ms, a.rebalance_timeout_ms),
            (10_000, 30_000)
        );
        assert_eq!(
            (a.client_id.as_str(), a.client_host.as_str()),
            ("client-a", "/10.0.0.1")
        );
        assert_eq!(a.protocols, classic_member("a", None, &[0, 1]).protocols);
        // Each member gets its target assignment, in its subscription's version.
        assert_eq!(decode_assignment(&a.assignment).unwrap().version, 3);
        assert_eq!(
            partitions(&a.assignment),
            vec![("foo".to_string(), vec![0, 1])]
        );
        assert_eq!(
            partitions(&snapshot.members[1].assignment),
            vec![("foo".to_string(), vec![2])]
        );

        // The same when the consumer member's session expires.
        let mut g = upgraded();
        g.classic_heartbeat("a", None, 5, 9_000);
        g.classic_heartbeat("b", None, 5, 9_000);
        g.classic_heartbeat("a", None, 5, 18_000);
        g.classic_heartbeat("b", None, 5, 18_000);
        g.classic_join(&join("a", &[0, 1], 5), &topics(), &config(), 20_000);
        g.classic_join(&join("b", &[2], 5), &topics(), &config(), 20_000);
        g.classic_sync("a", None, 6, None, None, 21_000).unwrap();
        g.classic_sync("b", None, 6, None, None, 21_000).unwrap();
        for now in [28_000, 37_000] {
            assert_eq!(g.classic_heartbeat("a", None, 6, now), NONE);
            assert_eq!(g.classic_heartbeat("b", None, 6, now), NONE);
        }
        assert_eq!(g.expire(45_100), vec!["c".to_string()]);
        let snapshot = g.to_classic().unwrap();
        assert_eq!(
            snapshot
                .members
                .iter()
                .map(|m| m.member_id.as_str())
                .collect::<Vec<_>>(),
            vec!["a", "b"]
        );
    }

    #[test]
    fn downgrade_when_a_classic_static_member_replaces_the_last_consumer_member() {
        let mut g = upgraded();
        let mut s = cg_join("s");
        s.instance_id = Some(StrBytes::from_static_str("i-s"));
        hb(&mut g, &s, 200);
        // c leaves: s is still a consumer-protocol member.
        hb(&mut g, &cg_beat("c", -1, &[]), 300);
        assert!(g.to_classic().is_none());
        // s restarts with the classic protocol.
        let mut j = join("", &[], -1);
        j.group_instance_id = Some("i-s".into());
        let r = g.classic_join(&j, &topics(), &config(), 400);
        assert_eq!(r.error, NONE);
        let snapshot = g.to_classic().unwrap();
        let mut ids: Vec<&str> = snapshot
            .members
            .iter()
            .map(|m| m.member_id.as_str())
            .collect();
        ids.sort();
        let mut expected = vec!["a", "b", r.member_id.as_str()];
        expected.sort();
        assert_eq!(ids, expected);
        let new = snapshot
            .members
            .iter()
            .find(|m| m.member_id == r.member_id)
            .unwrap();
        assert_eq!(new.group_instance_id.as_deref(), Some("i-s"));
    }

    #[test]
    fn upgrade_refusals() {
        let check = |classic: &ClassicSnapshot, reason: &str| {
            let message =
                format!("Cannot upgrade classic group g to consumer group because {reason}.");
            assert_eq!(
                ConsumerGroup::from_classic("g".into(), classic, &topics(), 0).err(),
                Some((GROUP_ID_NOT_FOUND, message))
            );
        };
        let mut classic = stable_classic();
        classic.protocol_type = "connect".into();
        check(
            &classic,
            "the group does not use the consumer embedded protocol",
        );
        assert_eq!(
            ConsumerGroup::validate_online_upgrade("g", &classic, &config()),
            Err((
                GROUP_ID_NOT_FOUND,
                "Cannot upgrade classic group g to consumer group because the group does not use the consumer embedded protocol.".to_string()
            ))
        );

        let limited = ConsumerGroupConfig {
            max_size: 1,
            ..config()
        };
        assert_eq!(
            ConsumerGroup::validate_online_upgrade("g", &stable_classic(), &limited),
            Err((
                GROUP_ID_NOT_FOUND,
                "Cannot upgrade classic group g to consumer group because the group size exceeds the consumer group maximum size.".to_string()
            ))
        );
        let two = ConsumerGroupConfig {
            max_size: 2,
            ..config()
        };
        assert_eq!(
            ConsumerGroup::validate_online_upgrade("g", &stable_classic(), &two),
            Ok(())
        );

        let mut classic = stable_classic();
        classic.members[1].protocols[0].1 = Bytes::from_static(&[0, 3, 0]);
        check(&classic, "the embedded consumer protocol is malformed");
        let mut classic = stable_classic();
        classic.members[1].assignment = Bytes::from_static(&[0, 3, 0, 0, 0, 9]);
        check(&classic, "the embedded consumer protocol is malformed");
        let mut classic = stable_classic();
        classic.protocol = "roundrobin".into();
        check(&classic, "the embedded consumer protocol is malformed");

        let mut classic = stable_classic();
        classic.members[0].assignment = Bytes::from(encode_assignment(&Assignment {
            version: 3,
            partitions: vec![("foo".to_string(), vec![0, 1])],
            user_data: Some(Bytes::from_static(b"custom")),
        }));
        check(
            &classic,
            "an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade",
        );

        // A member that never synced (empty assignment) is accepted, as is empty
        // user data; unknown topics are dropped.
        let mut classic = stable_classic();
        classic.members[0].assignment = Bytes::new();
        classic.members[1].assignment = Bytes::from(encode_assignment(&Assignment {
            version: 1,
            partitions: vec![
                ("foo".to_string(), vec![2, 3]),
                ("gone".to_string(), vec![0]),
            ],
            user_data: Some(Bytes::new()),
        }));
        let g = ConsumerGroup::from_classic("g".into(), &classic, &topics(), 0).unwrap();
        assert_eq!(
            targets(&g),
            vec![("a".into(), vec![]), ("b".into(), vec![2, 3])]
        );
        assert_eq!(g.members().next().unwrap().assigned.len(), 0);
    }

    #[test]
    fn protocol_selection() {
        let p = |names: &[&str]| -> Vec<(String, Bytes)> {
            names
                .iter()
                .map(|n| (n.to_string(), Bytes::new()))
                .collect()
        };
        let a = p(&["cooperative-sticky", "range"]);
        let b = p(&["range", "cooperative-sticky"]);
        let c = p(&["range"]);
        let members = [a.as_slice(), b.as_slice(), c.as_slice()];
        assert_eq!(
            select_protocol(members.iter().copied()),
            Some("range".into())
        );
        let members = [a.as_slice(), b.as_slice()];
        assert_eq!(
            select_protocol(members.iter().copied()),
            Some("cooperative-sticky".into())
        );
        let d = p(&["roundrobin"]);
        let members = [a.as_slice(), d.as_slice()];
        assert_eq!(select_protocol(members.iter().copied()), None);
        assert_eq!(protocol_version(&[0, 2, 9]), 2);
        assert_eq!(protocol_version(&[1]), 0);
    }

    #[test]
    fn classic_members_persist_through_their_member_metadata() {
        use crate::records::{self, OffsetsKey};
        let classic = stable_classic();
        let mut g = ConsumerGroup::from_classic("g".into(), &classic, &topics(), 0).unwrap();
        let mut log = g.take_records();
        // Kafka's createConsumerGroupRecords: metadata, epoch, targets, assignment
        // epoch, current assignments.
        let types: Vec<i16> = log
            .iter()
            .map(|(k, _)| match records::decode_key(k).unwrap() {
                OffsetsKey::ConsumerGroupMemberMetadata { .. } => 5,
                OffsetsKey::ConsumerGroupMetadata { .. } => 3,
                OffsetsKey::ConsumerGroupTargetAssignmentMember { .. } => 7,
                OffsetsKey::ConsumerGroupTargetAssignmentMetadata { .. } => 6,
                OffsetsKey::ConsumerGroupCurrentMemberAssignment { .. } => 8,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(types, vec![5, 5, 3, 7, 7, 6, 8, 8]);
        // The classic metadata is in the member metadata value.
        let value =
            records::decode_consumer_group_member_metadata_value(log[0].1.as_deref().unwrap())
                .unwrap();
        let metadata = value.classic_member_metadata.unwrap();
        assert_eq!(metadata.session_timeout_ms, 10_000);
        assert_eq!(
            metadata.supported_protocols,
            classic_member("a", None, &[0, 1]).protocols
        );

        // A consumer member joins, a classic member rejoins; then replay.
        hb(&mut g, &cg_join("c"), 100);
        g.classic_join(&join("a", &[0, 1], 5), &topics(), &config(), 200);
        log.extend(g.take_records());
        let mut replayed = ConsumerGroup::replayed("g", &log, 200);
        assert_eq!(replayed.persisted_state(), g.persisted_state());
        assert_eq!(replayed.describe(&topics()), g.describe(&topics()));
        // Classic sessions restart with the members' own session timeout.
        assert_eq!(replayed.next_deadline_ms(), Some(200 + 10_000));
        // The classic members carry on against the replayed group.
        replayed.refresh_topics(&topics());
        let epoch_a = g
            .members()
            .find(|m| m.member_id == "a")
            .unwrap()
            .member_epoch;
        assert_eq!(
            replayed.classic_sync("a", None, epoch_a, None, None, 300),
            g.classic_sync("a", None, epoch_a, None, None, 300)
        );
        assert_eq!(
            replayed.classic_heartbeat("b", None, 5, 300),
            g.classic_heartbeat("b", None, 5, 300)
        );
        // The consumer member leaves: both downgrade to the same classic group.
        hb(&mut g, &cg_beat("c", -1, &[]), 400);
        hb(&mut replayed, &cg_beat("c", -1, &[]), 400);
        assert_eq!(replayed.take_records(), g.take_records());
        assert!(g.to_classic().is_some());
        assert_eq!(replayed.to_classic(), g.to_classic());
    }
}
