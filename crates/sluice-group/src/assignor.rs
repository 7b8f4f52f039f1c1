//! The server-side assignors of KIP-848: `uniform` (the default) and `range`.
//!
//! An assignor sees the members of a group (their subscribed topic ids and the
//! partitions the previous target assignment gave them) and the subscribed topics
//! (their partition counts), and returns the new target assignment: member id ->
//! topic id -> partitions. Both assignors are deterministic (same input, same
//! output) and sticky: a member keeps the partitions it already has as long as the
//! balance allows it.
//!
//! - `uniform` (Kafka's `UniformAssignor`): spreads all the subscribed partitions
//!   so that every member has the same number of partitions, within one. With
//!   heterogeneous subscriptions (members subscribed to different topics) it
//!   balances as far as the subscriptions permit: a partition only moves from a
//!   member to another that is subscribed to its topic and has at least two
//!   partitions less.
//! - `range` (Kafka's server-side `RangeAssignor`): topic by topic, the members
//!   subscribed to the topic (in member id order) get contiguous ranges of
//!   partitions, the first `partitions % members` members one more; topics with the
//!   same subscribers and partition counts are co-partitioned (member `i` gets the
//!   same partition numbers of each). Current partitions are kept up to a member's
//!   quota of the topic.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use uuid::Uuid;

/// The name of the uniform assignor (Kafka's default server-side assignor).
pub const UNIFORM: &str = "uniform";
/// The name of the range assignor.
pub const RANGE: &str = "range";
/// The assignors this module implements.
pub const SUPPORTED_ASSIGNORS: [&str; 2] = [UNIFORM, RANGE];

/// Partitions by topic id.
pub type TopicPartitions = BTreeMap<Uuid, BTreeSet<i32>>;

/// One member as an assignor sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentMember {
    /// The topics the member is subscribed to (resolved to ids).
    pub subscribed_topic_ids: BTreeSet<Uuid>,
    /// The member's current (previous target) assignment, used for stickiness.
    /// Partitions of topics it is no longer subscribed to, or that no longer exist,
    /// are ignored.
    pub current: TopicPartitions,
}

/// Whether `name` is an assignor this module implements.
pub fn is_supported(name: &str) -> bool {
    SUPPORTED_ASSIGNORS.contains(&name)
}

/// Runs the assignor called `name`; `None` if no such assignor.
///
/// `members` is keyed by member id; `topics` maps a topic id to its partition
/// count (counts below 1 count as no partitions). Every member of `members` is in
/// the result, possibly with an empty assignment.
pub fn assign(
    name: &str,
    members: &BTreeMap<String, AssignmentMember>,
    topics: &BTreeMap<Uuid, i32>,
) -> Option<BTreeMap<String, TopicPartitions>> {
    match name {
        UNIFORM => Some(uniform(members, topics)),
        RANGE => Some(range(members, topics)),
        _ => None,
    }
}

/// Indices of the members subscribed to each existing topic with partitions.
fn subscribers(
    members: &[(&String, &AssignmentMember)],
    topics: &BTreeMap<Uuid, i32>,
) -> BTreeMap<Uuid, (i32, Vec<usize>)> {
    let mut result: BTreeMap<Uuid, (i32, Vec<usize>)> = BTreeMap::new();
    for (index, (_, member)) in members.iter().enumerate() {
        for topic in &member.subscribed_topic_ids {
            if let Some(&count) = topics.get(topic)
                && count > 0
            {
                result
                    .entry(*topic)
                    .or_insert((count, Vec::new()))
                    .1
                    .push(index);
            }
        }
    }
    result
}

fn into_result(
    members: &[(&String, &AssignmentMember)],
    assignments: Vec<TopicPartitions>,
) -> BTreeMap<String, TopicPartitions> {
    members
        .iter()
        .zip(assignments)
        .map(|((id, _), assignment)| ((*id).clone(), assignment))
        .collect()
}

/// The uniform assignor: balanced (within one partition for homogeneous
/// subscriptions) and sticky. See the module documentation.
pub fn uniform(
    members: &BTreeMap<String, AssignmentMember>,
    topics: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, TopicPartitions> {
    let members: Vec<(&String, &AssignmentMember)> = members.iter().collect();
    let subs = subscribers(&members, topics);
    let mut assignments: Vec<TopicPartitions> = vec![BTreeMap::new(); members.len()];
    let mut counts = vec![0usize; members.len()];
    let mut taken: HashSet<(Uuid, i32)> = HashSet::new();

    // 1. Every member keeps its valid current partitions (the first claimant in
    //    member id order wins a partition claimed twice).
    for (index, (_, member)) in members.iter().enumerate() {
        for (topic, partitions) in &member.current {
            let Some((count, _)) = subs.get(topic) else {
                continue;
            };
            if !member.subscribed_topic_ids.contains(topic) {
                continue;
            }
            for &partition in partitions {
                if partition >= 0 && partition < *count && taken.insert((*topic, partition)) {
                    assignments[index]
                        .entry(*topic)
                        .or_default()
                        .insert(partition);
                    counts[index] += 1;
                }
            }
        }
    }

    // 2. The unassigned partitions go, one by one, to the least loaded subscriber;
    //    the topics with the fewest subscribers first as they have the least choice.
    let mut topic_order: Vec<(&Uuid, &(i32, Vec<usize>))> = subs.iter().collect();
    topic_order.sort_by_key(|(topic, (_, subscribers))| (subscribers.len(), **topic));
    for (topic, (count, subscribers)) in topic_order {
        for partition in 0..*count {
            if taken.contains(&(*topic, partition)) {
                continue;
            }
            if let Some(&index) = subscribers
                .iter()
                .min_by_key(|&&index| (counts[index], index))
            {
                taken.insert((*topic, partition));
                assignments[index]
                    .entry(*topic)
                    .or_default()
                    .insert(partition);
                counts[index] += 1;
            }
        }
    }

    // 3. Balance: move one partition at a time from a member to one that has at
    //    least two partitions less and is subscribed to the partition's topic. Each
    //    move lowers the sum of the squared counts, so this ends.
    loop {
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&index| (counts[index], index));
        let mut moved = None;
        'search: for &receiver in &order {
            for &donor in order.iter().rev() {
                if counts[donor] <= counts[receiver] + 1 {
                    break;
                }
                let receiver_topics = &members[receiver].1.subscribed_topic_ids;
                for (topic, partitions) in assignments[donor].iter().rev() {
                    if receiver_topics.contains(topic)
                        && let Some(&partition) = partitions.iter().next_back()
                    {
                        moved = Some((donor, receiver, *topic, partition));
                        break 'search;
                    }
                }
            }
        }
        let Some((donor, receiver, topic, partition)) = moved else {
            break;
        };
        if let Some(partitions) = assignments[donor].get_mut(&topic) {
            partitions.remove(&partition);
            if partitions.is_empty() {
                assignments[donor].remove(&topic);
            }
        }
        counts[donor] -= 1;
        assignments[receiver]
            .entry(topic)
            .or_default()
            .insert(partition);
        counts[receiver] += 1;
    }

    into_result(&members, assignments)
}

/// The range assignor: per topic, contiguous ranges in member id order,
/// co-partitioned, sticky within each member's quota. See the module
/// documentation.
pub fn range(
    members: &BTreeMap<String, AssignmentMember>,
    topics: &BTreeMap<Uuid, i32>,
) -> BTreeMap<String, TopicPartitions> {
    let members: Vec<(&String, &AssignmentMember)> = members.iter().collect();
    let subs = subscribers(&members, topics);
    let mut assignments: Vec<TopicPartitions> = vec![BTreeMap::new(); members.len()];

    for (topic, (count, subscribers)) in &subs {
        let count = *count as usize;
        let n = subscribers.len();
        let base = count / n;
        let extra = count % n;

        // The partitions each subscriber has now (a partition claimed twice goes to
        // the first claimant in member id order).
        let mut seen: HashSet<i32> = HashSet::new();
        let kept: Vec<Vec<i32>> = subscribers
            .iter()
            .map(|&index| {
                members[index]
                    .1
                    .current
                    .get(topic)
                    .map(|partitions| {
                        partitions
                            .iter()
                            .copied()
                            .filter(|&p| p >= 0 && (p as usize) < count && seen.insert(p))
                            .collect()
                    })
                    .unwrap_or_default()
            })
            .collect();

        // Quotas: `base` each, one more for `extra` members, first for those that
        // already hold more than `base` partitions, then in member id order.
        let mut by_claim: Vec<usize> = (0..n).collect();
        by_claim.sort_by_key(|&i| (kept[i].len() <= base, i));
        let mut quota = vec![base; n];
        for &i in by_claim.iter().take(extra) {
            quota[i] += 1;
        }

        let mut owned: Vec<BTreeSet<i32>> = vec![BTreeSet::new(); n];
        let mut assigned: HashSet<i32> = HashSet::new();
        for i in 0..n {
            for &p in kept[i].iter().take(quota[i]) {
                owned[i].insert(p);
                assigned.insert(p);
            }
        }
        // The remaining partitions, in order, fill the members in member id order.
        let mut free = (0..count as i32).filter(|p| !assigned.contains(p));
        for i in 0..n {
            while owned[i].len() < quota[i] {
                match free.next() {
                    Some(p) => {
                        owned[i].insert(p);
                    }
                    None => break,
                }
            }
        }
        for (i, partitions) in owned.into_iter().enumerate() {
            if !partitions.is_empty() {
                assignments[subscribers[i]].insert(*topic, partitions);
            }
        }
    }

    into_result(&members, assignments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn topic(n: u8) -> Uuid {
        Uuid::from_bytes([n; 16])
    }

    fn member(topics: &[Uuid], current: &[(Uuid, &[i32])]) -> AssignmentMember {
        AssignmentMember {
            subscribed_topic_ids: topics.iter().copied().collect(),
            current: current
                .iter()
                .map(|(t, ps)| (*t, ps.iter().copied().collect()))
                .collect(),
        }
    }

    fn count(assignment: &TopicPartitions) -> usize {
        assignment.values().map(BTreeSet::len).sum()
    }

    fn parts(assignment: &TopicPartitions, t: Uuid) -> Vec<i32> {
        assignment
            .get(&t)
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Every partition of a subscribed topic exactly once, to a subscriber.
    fn check_complete(
        members: &BTreeMap<String, AssignmentMember>,
        topics: &BTreeMap<Uuid, i32>,
        result: &BTreeMap<String, TopicPartitions>,
    ) {
        assert_eq!(result.len(), members.len());
        let mut seen = HashSet::new();
        for (id, assignment) in result {
            for (t, ps) in assignment {
                assert!(
                    members[id].subscribed_topic_ids.contains(t),
                    "{id} not subscribed"
                );
                for p in ps {
                    assert!(*p >= 0 && *p < topics[t]);
                    assert!(seen.insert((*t, *p)), "{t}-{p} assigned twice");
                }
            }
        }
        for (t, n) in topics {
            if members.values().any(|m| m.subscribed_topic_ids.contains(t)) {
                for p in 0..*n {
                    assert!(seen.contains(&(*t, p)), "{t}-{p} unassigned");
                }
            }
        }
    }

    #[test]
    fn uniform_single_member_gets_everything() {
        let members = BTreeMap::from([("a".to_string(), member(&[topic(1), topic(2)], &[]))]);
        let topics = BTreeMap::from([(topic(1), 3), (topic(2), 2)]);
        let result = uniform(&members, &topics);
        assert_eq!(parts(&result["a"], topic(1)), vec![0, 1, 2]);
        assert_eq!(parts(&result["a"], topic(2)), vec![0, 1]);
    }

    #[test]
    fn uniform_new_member_takes_only_what_is_needed() {
        let t = topic(1);
        let members = BTreeMap::from([
            ("a".to_string(), member(&[t], &[(t, &[0, 1, 2])])),
            ("b".to_string(), member(&[t], &[(t, &[3, 4, 5])])),
            ("c".to_string(), member(&[t], &[])),
        ]);
        let topics = BTreeMap::from([(t, 6)]);
        let result = uniform(&members, &topics);
        check_complete(&members, &topics, &result);
        assert_eq!(parts(&result["a"], t), vec![0, 1]);
        assert_eq!(parts(&result["b"], t), vec![3, 4]);
        assert_eq!(parts(&result["c"], t), vec![2, 5]);
    }

    #[test]
    fn uniform_fresh_assignment_is_balanced() {
        let (t1, t2) = (topic(1), topic(2));
        let members = BTreeMap::from([
            ("a".to_string(), member(&[t1, t2], &[])),
            ("b".to_string(), member(&[t1, t2], &[])),
        ]);
        let topics = BTreeMap::from([(t1, 3), (t2, 2)]);
        let result = uniform(&members, &topics);
        check_complete(&members, &topics, &result);
        assert_eq!(parts(&result["a"], t1), vec![0, 2]);
        assert_eq!(parts(&result["b"], t1), vec![1]);
        assert_eq!(parts(&result["a"], t2), vec![1]);
        assert_eq!(parts(&result["b"], t2), vec![0]);
    }

    #[test]
    fn uniform_heterogeneous() {
        let (t1, t2) = (topic(1), topic(2));
        let members = BTreeMap::from([
            ("a".to_string(), member(&[t1], &[])),
            ("b".to_string(), member(&[t1, t2], &[])),
        ]);
        let topics = BTreeMap::from([(t1, 4), (t2, 4)]);
        let result = uniform(&members, &topics);
        check_complete(&members, &topics, &result);
        // b must take all of t2, so a gets all of t1.
        assert_eq!(parts(&result["a"], t1), vec![0, 1, 2, 3]);
        assert_eq!(parts(&result["b"], t2), vec![0, 1, 2, 3]);
        assert_eq!(count(&result["b"]), 4);
    }

    #[test]
    fn uniform_drops_unsubscribed_and_deleted() {
        let (t1, t2) = (topic(1), topic(2));
        let members =
            BTreeMap::from([("a".to_string(), member(&[t1], &[(t1, &[0, 7]), (t2, &[0])]))]);
        let topics = BTreeMap::from([(t1, 2), (t2, 1)]);
        let result = uniform(&members, &topics);
        assert_eq!(result["a"], BTreeMap::from([(t1, BTreeSet::from([0, 1]))]));
    }

    #[test]
    fn range_co_partitions() {
        let (t1, t2) = (topic(1), topic(2));
        let members = BTreeMap::from([
            ("a".to_string(), member(&[t1, t2], &[])),
            ("b".to_string(), member(&[t1, t2], &[])),
        ]);
        let topics = BTreeMap::from([(t1, 3), (t2, 3)]);
        let result = range(&members, &topics);
        check_complete(&members, &topics, &result);
        assert_eq!(parts(&result["a"], t1), vec![0, 1]);
        assert_eq!(parts(&result["a"], t2), vec![0, 1]);
        assert_eq!(parts(&result["b"], t1), vec![2]);
        assert_eq!(parts(&result["b"], t2), vec![2]);
    }

    #[test]
    fn range_is_sticky() {
        let t = topic(1);
        // b holds 0..3, a holds 3..6; a third member joins.
        let members = BTreeMap::from([
            ("a".to_string(), member(&[t], &[(t, &[3, 4, 5])])),
            ("b".to_string(), member(&[t], &[(t, &[0, 1, 2])])),
            ("c".to_string(), member(&[t], &[])),
        ]);
        let topics = BTreeMap::from([(t, 6)]);
        let result = range(&members, &topics);
        check_complete(&members, &topics, &result);
        assert_eq!(parts(&result["a"], t), vec![3, 4]);
        assert_eq!(parts(&result["b"], t), vec![0, 1]);
        assert_eq!(parts(&result["c"], t), vec![2, 5]);
    }

    #[test]
    fn unknown_assignor() {
        assert!(assign("sticky", &BTreeMap::new(), &BTreeMap::new()).is_none());
        assert_eq!(
            assign(UNIFORM, &BTreeMap::new(), &BTreeMap::new()),
            Some(BTreeMap::new())
        );
    }

    fn arb_case() -> impl Strategy<Value = (BTreeMap<String, AssignmentMember>, BTreeMap<Uuid, i32>)>
    {
        (
            prop::collection::vec(0i32..12, 1..5),
            prop::collection::vec(
                (
                    prop::collection::vec(any::<bool>(), 5),
                    prop::collection::vec((0u8..5, 0i32..14), 0..8),
                ),
                1..8,
            ),
        )
            .prop_map(|(counts, members)| {
                let topics: BTreeMap<Uuid, i32> = counts
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (topic(i as u8 + 1), *c))
                    .collect();
                let members = members
                    .into_iter()
                    .enumerate()
                    .map(|(i, (subs, current))| {
                        let mut m = AssignmentMember::default();
                        for (t, on) in subs.iter().enumerate().take(counts.len()) {
                            if *on {
                                m.subscribed_topic_ids.insert(topic(t as u8 + 1));
                            }
                        }
                        for (t, p) in current {
                            m.current.entry(topic(t + 1)).or_default().insert(p);
                        }
                        (format!("m{i:02}"), m)
                    })
                    .collect();
                (members, topics)
            })
    }

    fn homogeneous(members: &mut BTreeMap<String, AssignmentMember>, topics: &BTreeMap<Uuid, i32>) {
        let all: BTreeSet<Uuid> = topics.keys().copied().collect();
        for m in members.values_mut() {
            m.subscribed_topic_ids = all.clone();
        }
    }

    proptest! {
        #[test]
        fn uniform_complete((members, topics) in arb_case()) {
            let result = uniform(&members, &topics);
            check_complete(&members, &topics, &result);
            prop_assert_eq!(result.clone(), uniform(&members, &topics));
        }

        #[test]
        fn range_complete((members, topics) in arb_case()) {
            let result = range(&members, &topics);
            check_complete(&members, &topics, &result);
        }

        #[test]
        fn uniform_homogeneous_balanced((mut members, topics) in arb_case()) {
            homogeneous(&mut members, &topics);
            let result = uniform(&members, &topics);
            check_complete(&members, &topics, &result);
            let counts: Vec<usize> = result.values().map(count).collect();
            let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
            prop_assert!(max - min <= 1, "{:?}", counts);
        }

        #[test]
        fn range_homogeneous_balanced_per_topic((mut members, topics) in arb_case()) {
            homogeneous(&mut members, &topics);
            let result = range(&members, &topics);
            for t in topics.keys() {
                let counts: Vec<usize> = result.values().map(|a| a.get(t).map_or(0, BTreeSet::len)).collect();
                let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
                prop_assert!(max - min <= 1, "{:?}", counts);
            }
        }

        /// Starting from a balanced assignment, a new member takes only what it
        /// needs: nobody else gains a partition and the number of partitions that
        /// move is the new member's share.
        #[test]
        fn uniform_sticky_on_join((mut members, topics) in arb_case()) {
            homogeneous(&mut members, &topics);
            for m in members.values_mut() { m.current.clear(); }
            let before = uniform(&members, &topics);
            for (id, m) in members.iter_mut() { m.current = before[id].clone(); }
            let joined = AssignmentMember {
                subscribed_topic_ids: topics.keys().copied().collect(),
                ..Default::default()
            };
            members.insert("zz-new".to_string(), joined);
            let after = uniform(&members, &topics);
            check_complete(&members, &topics, &after);
            let mut moved = 0;
            for (id, old) in &before {
                for (t, ps) in old {
                    for p in ps {
                        if !after[id].get(t).is_some_and(|n| n.contains(p)) { moved += 1; }
                    }
                }
                for (t, ps) in &after[id] {
                    for p in ps { prop_assert!(old.get(t).is_some_and(|o| o.contains(p)), "old member gained a partition"); }
                }
            }
            prop_assert_eq!(moved, count(&after["zz-new"]));
            let total: usize = topics.values().map(|c| (*c).max(0) as usize).sum();
            prop_assert_eq!(count(&after["zz-new"]), total / members.len());
        }
    }
}
