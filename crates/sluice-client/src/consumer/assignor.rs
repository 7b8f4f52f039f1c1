//! The classic protocol's client-side partition assignors, as the Java client implements
//! them, so that Sluice consumers and Java consumers can share one group: whichever
//! member the coordinator makes leader computes the same kind of assignment.
//!
//! - `range` (Java's `RangeAssignor`): per topic, the subscribed members sorted, each a
//!   contiguous range; the first `partitions % members` get one more.
//! - `roundrobin` (`RoundRobinAssignor`): every partition sorted by topic and partition,
//!   dealt in turn to the sorted members, skipping members not subscribed to its topic.
//! - `sticky` (`StickyAssignor`, eager) and `cooperative-sticky`
//!   (`CooperativeStickyAssignor`): Java's `AbstractStickyAssignor` rules. Balanced
//!   (partition counts differ by at most one when subscriptions are equal) and sticky
//!   (a member keeps what it owned, up to its quota). Ownership claims come from the
//!   members of the highest generation; a partition two members claim in the same
//!   generation has no previous owner. `sticky` reads owned partitions and generation
//!   from its user data (`previous_assignment`, `generation`), as eager members revoke
//!   everything before joining; `cooperative-sticky` from the subscription's own
//!   fields (v1+/v2+). The cooperative assignor then leaves out every partition that
//!   moves to another member: its owner revokes it in this generation and it is
//!   assigned in the next (KIP-429).
//!
//! Members are ordered as Java's `MemberInfo`: members with a `group.instance.id` first,
//! by instance id, then the others by member id. Not here: rack-aware assignment.
//!
//! These are pure functions of (partition counts, subscriptions); the leader's cost is
//! O(partitions × log partitions) for range, round robin and the equal-subscription
//! sticky case, and O(partitions² ) in the worst case of the general sticky balance.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use bytes::Bytes;
use sluice_protocol::schema::{SchemaReader, SchemaWriter};

use crate::groups::TopicPartition;

/// A partition assignment strategy (`partition.assignment.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Assignor {
    Range,
    RoundRobin,
    Sticky,
    CooperativeSticky,
}

/// How a member gives up partitions in a rebalance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebalanceProtocol {
    /// Every partition is revoked before joining (range, roundrobin, sticky).
    Eager,
    /// Only partitions that move are revoked, after the assignment (KIP-429).
    Cooperative,
}

/// What the leader knows of one member from its JoinGroup metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSubscription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub topics: Vec<String>,
    /// Partitions the member owned before this rebalance (as the assignor reads them).
    pub owned_partitions: Vec<TopicPartition>,
    /// The generation of `owned_partitions`, if the member sent one.
    pub generation: Option<i32>,
}

/// Member id → its assigned partitions.
pub type GroupAssignment = BTreeMap<String, Vec<TopicPartition>>;

/// The generation Java's sticky assignors use when a member sent none.
const DEFAULT_GENERATION: i32 = -1;

impl Assignor {
    /// The protocol name in JoinGroup, Kafka's.
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Range => "range",
            Assignor::RoundRobin => "roundrobin",
            Assignor::Sticky => "sticky",
            Assignor::CooperativeSticky => "cooperative-sticky",
        }
    }

    /// An assignor by protocol name or Java class name.
    pub fn from_name(name: &str) -> Option<Assignor> {
        let short = name
            .strip_prefix("org.apache.kafka.clients.consumer.")
            .unwrap_or(name);
        match short {
            "range" | "RangeAssignor" => Some(Assignor::Range),
            "roundrobin" | "RoundRobinAssignor" => Some(Assignor::RoundRobin),
            "sticky" | "StickyAssignor" => Some(Assignor::Sticky),
            "cooperative-sticky" | "CooperativeStickyAssignor" => Some(Assignor::CooperativeSticky),
            _ => None,
        }
    }

    pub fn rebalance_protocol(self) -> RebalanceProtocol {
        match self {
            Assignor::CooperativeSticky => RebalanceProtocol::Cooperative,
            _ => RebalanceProtocol::Eager,
        }
    }

    /// The user data this assignor puts in a member's subscription: Java's
    /// `StickyAssignor` sends its previous assignment and generation
    /// (`STICKY_ASSIGNOR_USER_DATA_V1`), `CooperativeStickyAssignor` its generation.
    pub fn subscription_user_data(
        self,
        owned: &[TopicPartition],
        generation: i32,
    ) -> Option<Bytes> {
        match self {
            Assignor::Range | Assignor::RoundRobin => None,
            // Java sends no user data before the member's first assignment.
            Assignor::Sticky if generation < 0 && owned.is_empty() => None,
            Assignor::Sticky => {
                let mut writer = SchemaWriter::new(false);
                writer.topic_partitions(&by_topic(owned));
                writer.i32(generation);
                Some(Bytes::from(writer.finish()))
            }
            Assignor::CooperativeSticky => {
                let mut writer = SchemaWriter::new(false);
                writer.i32(generation);
                Some(Bytes::from(writer.finish()))
            }
        }
    }

    /// The owned partitions and generation the assignor reads from a subscription
    /// (Java's `memberData`).
    pub fn member_data(
        self,
        subscription: &sluice_protocol::consumer_protocol::Subscription,
    ) -> (Vec<TopicPartition>, Option<i32>) {
        let owned = |topics: &[(String, Vec<i32>)]| -> Vec<TopicPartition> {
            topics
                .iter()
                .flat_map(|(topic, partitions)| {
                    partitions
                        .iter()
                        .map(|p| TopicPartition::new(topic.clone(), *p))
                })
                .collect()
        };
        match self {
            Assignor::Range | Assignor::RoundRobin => (owned(&subscription.owned_partitions), None),
            Assignor::Sticky => {
                // Eager: the owned partitions were revoked before the join; the previous
                // assignment travels in the user data.
                let Some(data) = subscription.user_data.as_deref().filter(|d| !d.is_empty()) else {
                    return (Vec::new(), None);
                };
                let mut reader = SchemaReader::new(data);
                match reader.topic_partitions("previous_assignment") {
                    Ok(topics) => {
                        // V0 user data has no generation.
                        let generation = reader.i32("generation").ok();
                        (owned(&topics), generation)
                    }
                    Err(_) => (Vec::new(), None),
                }
            }
            Assignor::CooperativeSticky => {
                let generation = if subscription.version >= 2 {
                    Some(subscription.generation_id)
                } else {
                    subscription.user_data.as_deref().map(|data| {
                        SchemaReader::new(data)
                            .i32("generation")
                            .unwrap_or(DEFAULT_GENERATION)
                    })
                };
                (owned(&subscription.owned_partitions), generation)
            }
        }
    }

    /// Assigns the partitions of `partitions_per_topic` (topic → partition count) to
    /// `members`. Every member gets an entry, possibly empty; topics missing from
    /// `partitions_per_topic` are skipped.
    pub fn assign(
        self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[MemberSubscription],
    ) -> GroupAssignment {
        let mut sorted: Vec<&MemberSubscription> = members.iter().collect();
        sorted.sort_by(|a, b| member_order(a, b));
        let mut assignment: GroupAssignment = members
            .iter()
            .map(|member| (member.member_id.clone(), Vec::new()))
            .collect();
        match self {
            Assignor::Range => range(partitions_per_topic, &sorted, &mut assignment),
            Assignor::RoundRobin => round_robin(partitions_per_topic, &sorted, &mut assignment),
            Assignor::Sticky => {
                sticky(partitions_per_topic, &sorted, &mut assignment);
            }
            Assignor::CooperativeSticky => {
                let previous = sticky(partitions_per_topic, &sorted, &mut assignment);
                // A partition moving between members is revoked first: leave it out of
                // its new owner's assignment for this generation. So is one that two
                // members claimed in one generation, as Java does.
                let (previous, contested) = previous;
                for (member, partitions) in assignment.iter_mut() {
                    partitions.retain(|partition| {
                        !contested.contains(partition)
                            && previous
                                .get(partition)
                                .is_none_or(|previous_owner| previous_owner == member)
                    });
                }
            }
        }
        assignment
    }
}

/// Java's `MemberInfo` order: static members first by instance id, then member id.
fn member_order(a: &MemberSubscription, b: &MemberSubscription) -> std::cmp::Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.member_id.cmp(&b.member_id),
    }
}

/// Partitions grouped by topic, in topic then partition order.
pub(crate) fn by_topic(partitions: &[TopicPartition]) -> Vec<(String, Vec<i32>)> {
    let mut grouped: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for partition in partitions {
        grouped
            .entry(&partition.topic)
            .or_default()
            .push(partition.partition);
    }
    grouped
        .into_iter()
        .map(|(topic, mut partitions)| {
            partitions.sort_unstable();
            (topic.to_string(), partitions)
        })
        .collect()
}

fn range(
    partitions_per_topic: &BTreeMap<String, i32>,
    sorted: &[&MemberSubscription],
    assignment: &mut GroupAssignment,
) {
    for (topic, &count) in partitions_per_topic {
        let consumers: Vec<&&MemberSubscription> = sorted
            .iter()
            .filter(|member| member.topics.contains(topic))
            .collect();
        if consumers.is_empty() || count <= 0 {
            continue;
        }
        let per_consumer = count as usize / consumers.len();
        let extra = count as usize % consumers.len();
        for (index, member) in consumers.iter().enumerate() {
            let start = per_consumer * index + index.min(extra);
            let length = per_consumer + usize::from(index < extra);
            let partitions = assignment
                .get_mut(&member.member_id)
                .expect("every member has an entry");
            partitions.extend(
                (start..start + length)
                    .map(|partition| TopicPartition::new(topic, partition as i32)),
            );
        }
    }
}

fn round_robin(
    partitions_per_topic: &BTreeMap<String, i32>,
    sorted: &[&MemberSubscription],
    assignment: &mut GroupAssignment,
) {
    if sorted.is_empty() {
        return;
    }
    let subscribed: BTreeSet<&String> = sorted.iter().flat_map(|m| m.topics.iter()).collect();
    let mut next = 0;
    for (topic, &count) in partitions_per_topic {
        if !subscribed.contains(topic) {
            continue;
        }
        for partition in 0..count {
            while !sorted[next % sorted.len()].topics.contains(topic) {
                next += 1;
            }
            let member = sorted[next % sorted.len()];
            next += 1;
            assignment
                .get_mut(&member.member_id)
                .expect("every member has an entry")
                .push(TopicPartition::new(topic, partition));
        }
    }
}

/// The sticky assignment; returns each partition's valid previous owner, and the
/// partitions two members claimed in the same generation.
fn sticky(
    partitions_per_topic: &BTreeMap<String, i32>,
    sorted: &[&MemberSubscription],
    assignment: &mut GroupAssignment,
) -> (HashMap<TopicPartition, String>, BTreeSet<TopicPartition>) {
    if sorted.is_empty() {
        return (HashMap::new(), BTreeSet::new());
    }
    let exists = |partition: &TopicPartition| {
        partitions_per_topic
            .get(&partition.topic)
            .is_some_and(|&count| partition.partition >= 0 && partition.partition < count)
    };
    // Claims of the highest generation win; equal claims in one generation cancel out;
    // members of an older generation than the newest keep nothing.
    let max_generation = sorted
        .iter()
        .map(|m| m.generation.unwrap_or(DEFAULT_GENERATION))
        .max()
        .unwrap_or(DEFAULT_GENERATION);
    let mut claims: HashMap<TopicPartition, (i32, Option<String>)> = HashMap::new();
    for member in sorted {
        let generation = member.generation.unwrap_or(DEFAULT_GENERATION);
        if generation < max_generation {
            continue;
        }
        for partition in &member.owned_partitions {
            if !exists(partition) || !member.topics.contains(&partition.topic) {
                continue;
            }
            match claims.get_mut(partition) {
                None => {
                    claims.insert(
                        partition.clone(),
                        (generation, Some(member.member_id.clone())),
                    );
                }
                Some(claim) if claim.0 == generation => claim.1 = None,
                Some(claim) if claim.0 < generation => {
                    *claim = (generation, Some(member.member_id.clone()))
                }
                Some(_) => {}
            }
        }
    }
    let contested: BTreeSet<TopicPartition> = claims
        .iter()
        .filter(|(_, (_, owner))| owner.is_none())
        .map(|(partition, _)| partition.clone())
        .collect();
    let previous: HashMap<TopicPartition, String> = claims
        .into_iter()
        .filter_map(|(partition, (_, owner))| owner.map(|owner| (partition, owner)))
        .collect();
    // Each member's valid owned partitions, in topic then partition order.
    let mut owned: BTreeMap<String, Vec<TopicPartition>> = sorted
        .iter()
        .map(|member| (member.member_id.clone(), Vec::new()))
        .collect();
    for (partition, owner) in &previous {
        owned
            .get_mut(owner)
            .expect("owners are members")
            .push(partition.clone());
    }
    for partitions in owned.values_mut() {
        partitions.sort();
    }
    let first_topics = &sorted[0].topics;
    let all_equal = sorted.iter().all(|member| {
        let a: BTreeSet<&String> = member.topics.iter().collect();
        let b: BTreeSet<&String> = first_topics.iter().collect();
        a == b
    });
    if all_equal {
        constrained_assign(partitions_per_topic, first_topics, owned, assignment);
    } else {
        general_assign(partitions_per_topic, sorted, owned, assignment);
    }
    (previous, contested)
}

/// Java's `constrainedAssign`: every member subscribes to the same topics.
fn constrained_assign(
    partitions_per_topic: &BTreeMap<String, i32>,
    topics: &[String],
    owned: BTreeMap<String, Vec<TopicPartition>>,
    assignment: &mut GroupAssignment,
) {
    let all: Vec<TopicPartition> = partitions_per_topic
        .iter()
        .filter(|(topic, _)| topics.contains(topic))
        .flat_map(|(topic, &count)| (0..count).map(move |p| TopicPartition::new(topic, p)))
        .collect();
    let members = owned.len();
    let total = all.len();
    let min_quota = total / members;
    let max_quota = total.div_ceil(members);
    let expected_over_min = total % members;
    let mut current_over_min = 0;
    let mut under_min: Vec<String> = Vec::new();
    let mut exactly_min: VecDeque<String> = VecDeque::new();
    let mut assigned: BTreeSet<TopicPartition> = BTreeSet::new();
    for (member, partitions) in owned {
        let target = assignment
            .get_mut(&member)
            .expect("every member has an entry");
        if partitions.len() < min_quota {
            assigned.extend(partitions.iter().cloned());
            target.extend(partitions);
            under_min.push(member);
        } else if partitions.len() >= max_quota && current_over_min < expected_over_min {
            current_over_min += 1;
            if current_over_min == expected_over_min {
                exactly_min.clear();
            }
            assigned.extend(partitions[..max_quota].iter().cloned());
            target.extend_from_slice(&partitions[..max_quota]);
        } else {
            assigned.extend(partitions[..min_quota].iter().cloned());
            target.extend_from_slice(&partitions[..min_quota]);
            if current_over_min < expected_over_min {
                exactly_min.push_back(member);
            }
        }
    }
    under_min.sort();
    exactly_min.make_contiguous().sort();
    let mut cursor = 0;
    for partition in all.into_iter().filter(|p| !assigned.contains(p)) {
        if !under_min.is_empty() {
            if cursor >= under_min.len() {
                cursor = 0;
            }
            let member = under_min[cursor].clone();
            let target = assignment
                .get_mut(&member)
                .expect("every member has an entry");
            target.push(partition);
            if target.len() == min_quota {
                under_min.remove(cursor);
                exactly_min.push_back(member);
            } else {
                cursor += 1;
            }
        } else if let Some(member) = exactly_min.pop_front() {
            assignment
                .get_mut(&member)
                .expect("every member has an entry")
                .push(partition);
        } else {
            // The quotas add up to the partition count, so this cannot happen; give the
            // partition to the least loaded member rather than lose it.
            let member = assignment
                .iter()
                .min_by_key(|(_, partitions)| partitions.len())
                .map(|(member, _)| member.clone())
                .expect("there is a member");
            assignment
                .get_mut(&member)
                .expect("every member has an entry")
                .push(partition);
        }
    }
}

/// The general case (subscriptions differ): keep valid owned partitions, give each
/// unassigned partition to the least loaded member subscribed to its topic, then move
/// partitions from more loaded to less loaded eligible members until no move narrows
/// the gap, as Java's `generalAssign` balances.
fn general_assign(
    partitions_per_topic: &BTreeMap<String, i32>,
    sorted: &[&MemberSubscription],
    owned: BTreeMap<String, Vec<TopicPartition>>,
    assignment: &mut GroupAssignment,
) {
    let subscribers = |topic: &str| -> Vec<&str> {
        sorted
            .iter()
            .filter(|m| m.topics.iter().any(|t| t == topic))
            .map(|m| m.member_id.as_str())
            .collect()
    };
    let mut assigned: BTreeSet<TopicPartition> = BTreeSet::new();
    for (member, partitions) in owned {
        assigned.extend(partitions.iter().cloned());
        assignment
            .get_mut(&member)
            .expect("every member has an entry")
            .extend(partitions);
    }
    // Partitions with fewer candidate members first, as Java sorts them.
    let mut unassigned: Vec<(usize, TopicPartition)> = partitions_per_topic
        .iter()
        .flat_map(|(topic, &count)| (0..count).map(move |p| TopicPartition::new(topic, p)))
        .filter(|p| !assigned.contains(p))
        .map(|p| (subscribers(&p.topic).len(), p))
        .filter(|(candidates, _)| *candidates > 0)
        .collect();
    unassigned.sort();
    for (_, partition) in unassigned {
        let member = subscribers(&partition.topic)
            .into_iter()
            .min_by_key(|member| (assignment[*member].len(), *member))
            .expect("filtered to topics with subscribers")
            .to_string();
        assignment
            .get_mut(&member)
            .expect("every member has an entry")
            .push(partition);
    }
    // Balance: bounded by the partition count squared (each move strictly lowers the
    // sum of squared loads).
    let bound = assigned.len().max(1)
        * partitions_per_topic
            .values()
            .map(|c| *c as usize)
            .sum::<usize>()
            .max(1);
    for _ in 0..bound {
        let mut best: Option<(usize, String, String, TopicPartition)> = None;
        for (from, partitions) in assignment.iter() {
            for partition in partitions.iter().rev() {
                for to in subscribers(&partition.topic) {
                    let gap = partitions.len() as i64 - assignment[to].len() as i64;
                    if gap > 1 && best.as_ref().is_none_or(|b| gap as usize > b.0) {
                        best = Some((
                            gap as usize,
                            from.clone(),
                            to.to_string(),
                            partition.clone(),
                        ));
                    }
                }
            }
        }
        let Some((_, from, to, partition)) = best else {
            break;
        };
        assignment
            .get_mut(&from)
            .expect("a member")
            .retain(|p| *p != partition);
        assignment.get_mut(&to).expect("a member").push(partition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(topic: &str, partition: i32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    fn member(
        id: &str,
        topics: &[&str],
        owned: &[TopicPartition],
        generation: Option<i32>,
    ) -> MemberSubscription {
        MemberSubscription {
            member_id: id.to_string(),
            group_instance_id: None,
            topics: topics.iter().map(|t| t.to_string()).collect(),
            owned_partitions: owned.to_vec(),
            generation,
        }
    }

    fn topics(entries: &[(&str, i32)]) -> BTreeMap<String, i32> {
        entries.iter().map(|(t, c)| (t.to_string(), *c)).collect()
    }

    fn set(partitions: &[TopicPartition]) -> BTreeSet<TopicPartition> {
        partitions.iter().cloned().collect()
    }

    /// Every partition of a subscribed topic assigned exactly once, to a subscriber.
    fn check_complete_and_disjoint(
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[MemberSubscription],
        assignment: &GroupAssignment,
    ) {
        let mut seen = BTreeSet::new();
        for (member, partitions) in assignment {
            let subscription = members.iter().find(|m| &m.member_id == member).unwrap();
            for partition in partitions {
                assert!(
                    subscription.topics.contains(&partition.topic),
                    "{assignment:?}"
                );
                assert!(
                    seen.insert(partition.clone()),
                    "twice: {partition} in {assignment:?}"
                );
            }
        }
        let subscribed: BTreeSet<&String> = members.iter().flat_map(|m| m.topics.iter()).collect();
        let expected: usize = partitions_per_topic
            .iter()
            .filter(|(t, _)| subscribed.contains(t))
            .map(|(_, c)| *c as usize)
            .sum();
        assert_eq!(seen.len(), expected, "{assignment:?}");
    }

    fn spread(assignment: &GroupAssignment) -> usize {
        let sizes: Vec<usize> = assignment.values().map(Vec::len).collect();
        sizes.iter().max().unwrap() - sizes.iter().min().unwrap()
    }

    #[test]
    fn range_assigns_contiguous_ranges_per_topic() {
        let members = [
            member("c1", &["t1", "t2"], &[], None),
            member("c2", &["t1", "t2"], &[], None),
        ];
        let result = Assignor::Range.assign(&topics(&[("t1", 3), ("t2", 3)]), &members);
        assert_eq!(
            result["c1"],
            vec![tp("t1", 0), tp("t1", 1), tp("t2", 0), tp("t2", 1)]
        );
        assert_eq!(result["c2"], vec![tp("t1", 2), tp("t2", 2)]);
    }

    #[test]
    fn round_robin_deals_sorted_partitions() {
        let members = [
            member("c1", &["t1", "t2"], &[], None),
            member("c2", &["t1", "t2"], &[], None),
        ];
        let result = Assignor::RoundRobin.assign(&topics(&[("t1", 3), ("t2", 3)]), &members);
        assert_eq!(result["c1"], vec![tp("t1", 0), tp("t1", 2), tp("t2", 1)]);
        assert_eq!(result["c2"], vec![tp("t1", 1), tp("t2", 0), tp("t2", 2)]);
        // Java's case: c0 on t0, c1 on t0+t1, c2 on t0+t1+t2 (one partition each... ).
        let members = [
            member("c0", &["t0"], &[], None),
            member("c1", &["t0", "t1"], &[], None),
            member("c2", &["t0", "t1", "t2"], &[], None),
        ];
        let result =
            Assignor::RoundRobin.assign(&topics(&[("t0", 1), ("t1", 2), ("t2", 3)]), &members);
        assert_eq!(result["c0"], vec![tp("t0", 0)]);
        assert_eq!(result["c1"], vec![tp("t1", 0)]);
        assert_eq!(
            result["c2"],
            vec![tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)]
        );
    }

    #[test]
    fn static_members_sort_first_by_instance_id() {
        let mut a = member("a", &["t"], &[], None);
        let mut z = member("z", &["t"], &[], None);
        z.group_instance_id = Some("i1".into());
        a.group_instance_id = Some("i2".into());
        let result = Assignor::Range.assign(&topics(&[("t", 3)]), &[a, z]);
        assert_eq!(result["z"], vec![tp("t", 0), tp("t", 1)]);
        assert_eq!(result["a"], vec![tp("t", 2)]);
    }

    /// Java's `testAddRemoveConsumerOneTopic`, for both sticky assignors.
    #[test]
    fn sticky_add_then_remove_a_consumer() {
        let t = topics(&[("topic", 3)]);
        let first = Assignor::Sticky.assign(&t, &[member("consumer1", &["topic"], &[], None)]);
        assert_eq!(
            first["consumer1"],
            vec![tp("topic", 0), tp("topic", 1), tp("topic", 2)]
        );
        let owned = first["consumer1"].clone();
        let members = [
            member("consumer1", &["topic"], &owned, Some(1)),
            member("consumer2", &["topic"], &[], Some(1)),
        ];
        let second = Assignor::Sticky.assign(&t, &members);
        assert_eq!(
            set(&second["consumer1"]),
            set(&[tp("topic", 0), tp("topic", 1)])
        );
        assert_eq!(second["consumer2"], vec![tp("topic", 2)]);
        // Cooperative: the moving partition is revoked first, assigned a generation later.
        let cooperative = Assignor::CooperativeSticky.assign(&t, &members);
        assert_eq!(
            set(&cooperative["consumer1"]),
            set(&[tp("topic", 0), tp("topic", 1)])
        );
        assert!(cooperative["consumer2"].is_empty());
        let members = [
            member("consumer1", &["topic"], &cooperative["consumer1"], Some(2)),
            member("consumer2", &["topic"], &[], Some(2)),
        ];
        let next = Assignor::CooperativeSticky.assign(&t, &members);
        assert_eq!(next["consumer2"], vec![tp("topic", 2)]);
        // consumer1 leaves: consumer2 keeps its partition and takes the rest.
        let members = [member("consumer2", &["topic"], &[tp("topic", 2)], Some(3))];
        let last = Assignor::Sticky.assign(&t, &members);
        assert_eq!(
            set(&last["consumer2"]),
            set(&[tp("topic", 0), tp("topic", 1), tp("topic", 2)])
        );
    }

    /// Java's stickiness case: when a member leaves, the others keep every partition
    /// they had and only the departed member's partitions move.
    #[test]
    fn sticky_members_keep_their_partitions_when_one_leaves() {
        for assignor in [Assignor::Sticky, Assignor::CooperativeSticky] {
            let t = topics(&[("t1", 5), ("t2", 4)]);
            let ids = ["c1", "c2", "c3", "c4"];
            let initial: Vec<_> = ids
                .iter()
                .map(|id| member(id, &["t1", "t2"], &[], None))
                .collect();
            let first = assignor.assign(&t, &initial);
            check_complete_and_disjoint(&t, &initial, &first);
            assert!(spread(&first) <= 1);
            let remaining: Vec<_> = ids[1..]
                .iter()
                .map(|id| member(id, &["t1", "t2"], &first[*id], Some(1)))
                .collect();
            let second = assignor.assign(&t, &remaining);
            for id in &ids[1..] {
                assert!(
                    set(&first[*id]).is_subset(&set(&second[*id])),
                    "{assignor:?} {id}"
                );
            }
            check_complete_and_disjoint(&t, &remaining, &second);
            assert!(spread(&second) <= 1);
        }
    }

    /// A member that owned partitions in an older generation loses its claims to the
    /// newest generation (Java's `testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration`).
    #[test]
    fn claims_of_a_stale_generation_are_ignored() {
        let t = topics(&[("topic", 3), ("topic2", 3)]);
        let members = [
            member(
                "consumer1",
                &["topic", "topic2"],
                &[tp("topic", 0), tp("topic", 2), tp("topic2", 1)],
                Some(10),
            ),
            member(
                "consumer2",
                &["topic", "topic2"],
                &[tp("topic", 0), tp("topic", 2), tp("topic2", 1)],
                Some(9),
            ),
        ];
        let result = Assignor::CooperativeSticky.assign(&t, &members);
        assert_eq!(
            set(&result["consumer1"]),
            set(&[tp("topic", 0), tp("topic", 2), tp("topic2", 1)])
        );
        assert_eq!(
            set(&result["consumer2"]),
            set(&[tp("topic", 1), tp("topic2", 0), tp("topic2", 2)])
        );
        // Two claims in the same generation cancel out: nobody owned the partition.
        let members = [
            member(
                "consumer1",
                &["topic"],
                &[tp("topic", 0), tp("topic", 1)],
                Some(5),
            ),
            member(
                "consumer2",
                &["topic"],
                &[tp("topic", 1), tp("topic", 2)],
                Some(5),
            ),
        ];
        let eager = Assignor::Sticky.assign(&topics(&[("topic", 3)]), &members);
        assert!(
            eager.values().flatten().any(|p| *p == tp("topic", 1)),
            "{eager:?}"
        );
        // Cooperative: both may still hold it, so nobody gets it this generation.
        let result = Assignor::CooperativeSticky.assign(&topics(&[("topic", 3)]), &members);
        assert!(
            !result.values().flatten().any(|p| *p == tp("topic", 1)),
            "{result:?}"
        );
        assert_eq!(result["consumer1"], vec![tp("topic", 0)]);
        assert_eq!(result["consumer2"], vec![tp("topic", 2)]);
    }

    /// The cooperative case of the integration test: 6 partitions, 2 members with 3
    /// each, a third joins: each keeps 2, gives up 1, and the newcomer gets nothing yet.
    #[test]
    fn cooperative_third_member_waits_for_revocation() {
        let t = topics(&[("t", 6)]);
        let members = [
            member("a", &["t"], &[tp("t", 0), tp("t", 1), tp("t", 2)], Some(3)),
            member("b", &["t"], &[tp("t", 3), tp("t", 4), tp("t", 5)], Some(3)),
            member("c", &["t"], &[], Some(-1)),
        ];
        let result = Assignor::CooperativeSticky.assign(&t, &members);
        assert_eq!(result["a"], vec![tp("t", 0), tp("t", 1)]);
        assert_eq!(result["b"], vec![tp("t", 3), tp("t", 4)]);
        assert!(result["c"].is_empty());
        let members = [
            member("a", &["t"], &result["a"], Some(4)),
            member("b", &["t"], &result["b"], Some(4)),
            member("c", &["t"], &[], Some(4)),
        ];
        let result = Assignor::CooperativeSticky.assign(&t, &members);
        assert_eq!(result["c"], vec![tp("t", 2), tp("t", 5)]);
    }

    /// Balanced, complete and disjoint for many shapes; sticky under equal subscriptions.
    #[test]
    fn every_assignor_is_complete_disjoint_and_balanced() {
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut next = |bound: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % bound
        };
        for _ in 0..200 {
            let topic_count = 1 + next(4) as usize;
            let t: BTreeMap<String, i32> = (0..topic_count)
                .map(|i| (format!("t{i}"), 1 + next(8) as i32))
                .collect();
            let names: Vec<String> = t.keys().cloned().collect();
            let member_count = 1 + next(6) as usize;
            let equal = next(2) == 0;
            let members: Vec<MemberSubscription> = (0..member_count)
                .map(|i| {
                    let topics: Vec<&str> = if equal {
                        names.iter().map(String::as_str).collect()
                    } else {
                        let mut chosen: Vec<&str> = names
                            .iter()
                            .filter(|_| next(2) == 0)
                            .map(String::as_str)
                            .collect();
                        if chosen.is_empty() {
                            chosen.push(&names[0]);
                        }
                        chosen
                    };
                    member(&format!("m{i}"), &topics, &[], None)
                })
                .collect();
            for assignor in [
                Assignor::Range,
                Assignor::RoundRobin,
                Assignor::Sticky,
                Assignor::CooperativeSticky,
            ] {
                let result = assignor.assign(&t, &members);
                check_complete_and_disjoint(&t, &members, &result);
                if equal
                    && matches!(
                        assignor,
                        Assignor::Sticky | Assignor::CooperativeSticky | Assignor::RoundRobin
                    )
                {
                    assert!(spread(&result) <= 1, "{assignor:?} {result:?}");
                }
            }
            if equal {
                // A rebalance with one member more keeps each member's partitions up to
                // its quota, and stays balanced.
                let first = Assignor::Sticky.assign(&t, &members);
                let mut next_members: Vec<MemberSubscription> = members
                    .iter()
                    .map(|m| MemberSubscription {
                        owned_partitions: first[&m.member_id].clone(),
                        generation: Some(1),
                        ..m.clone()
                    })
                    .collect();
                next_members.push(member(
                    "zz",
                    &names.iter().map(String::as_str).collect::<Vec<_>>(),
                    &[],
                    Some(1),
                ));
                let second = Assignor::Sticky.assign(&t, &next_members);
                check_complete_and_disjoint(&t, &next_members, &second);
                assert!(spread(&second) <= 1);
                let total: usize = t.values().map(|c| *c as usize).sum();
                let min_quota = total / next_members.len();
                for m in &members {
                    let kept = set(&first[&m.member_id])
                        .intersection(&set(&second[&m.member_id]))
                        .count();
                    assert!(
                        kept >= min_quota.min(first[&m.member_id].len()),
                        "{first:?} {second:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn sticky_user_data_round_trips_in_javas_layout() {
        let owned = [tp("a", 1), tp("a", 0), tp("b", 2)];
        let data = Assignor::Sticky.subscription_user_data(&owned, 7).unwrap();
        // previous_assignment: [("a", [0, 1]), ("b", [2])], generation 7.
        let expected: Vec<u8> = [
            &[0, 0, 0, 2][..],
            &[0, 1, b'a', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1],
            &[0, 1, b'b', 0, 0, 0, 1, 0, 0, 0, 2],
            &[0, 0, 0, 7],
        ]
        .concat();
        assert_eq!(data.as_ref(), expected.as_slice());
        let subscription = sluice_protocol::consumer_protocol::Subscription {
            version: 3,
            topics: vec!["a".into(), "b".into()],
            user_data: Some(data),
            owned_partitions: Vec::new(),
            generation_id: 7,
            rack_id: None,
        };
        let (partitions, generation) = Assignor::Sticky.member_data(&subscription);
        assert_eq!(set(&partitions), set(&owned));
        assert_eq!(generation, Some(7));
        let data = Assignor::CooperativeSticky
            .subscription_user_data(&owned, 4)
            .unwrap();
        assert_eq!(data.as_ref(), &[0, 0, 0, 4]);
    }
}
