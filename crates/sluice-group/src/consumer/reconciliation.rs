//! A member's reconciliation (Kafka's `CurrentAssignmentBuilder`): the member's
//! current assignment moves toward its target one step at a time. It first revokes
//! what it must give up (and stays in its epoch until it says it has), then gets
//! the target epoch and the partitions no other member owns any more.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
use uuid::Uuid;

use crate::assignor::TopicPartitions;

use super::ConsumerGroup;
use super::member::{Member, MemberState};

impl ConsumerGroup {
    /// Kafka's `CurrentAssignmentBuilder.build`.
    pub(super) fn reconcile(
        &self,
        member: &Member,
        target_epoch: i32,
        target: &TopicPartitions,
        owned: Option<&[RequestTopicPartitions]>,
    ) -> Member {
        match member.state {
            MemberState::UnrevokedPartitions => {
                if owns_any(owned, &member.pending_revocation) {
                    return member.clone();
                }
                let epoch = member.member_epoch.saturating_add(1).min(target_epoch);
                self.compute_next_assignment(member, epoch, target_epoch, target, owned)
            }
            MemberState::UnreleasedPartitions | MemberState::Stable => {
                if member.is_reconciled_to(target_epoch) {
                    return member.clone();
                }
                self.compute_next_assignment(
                    member,
                    member.member_epoch,
                    target_epoch,
                    target,
                    owned,
                )
            }
        }
    }

    /// Kafka's `CurrentAssignmentBuilder.computeNextAssignment`.
    fn compute_next_assignment(
        &self,
        member: &Member,
        member_epoch: i32,
        target_epoch: i32,
        target: &TopicPartitions,
        owned: Option<&[RequestTopicPartitions]>,
    ) -> Member {
        let mut has_unreleased = false;
        let mut new_assigned: TopicPartitions = BTreeMap::new();
        let mut new_revocation: TopicPartitions = BTreeMap::new();
        let mut new_pending_assignment: TopicPartitions = BTreeMap::new();
        let empty = BTreeSet::new();
        let topic_ids: BTreeSet<Uuid> = target
            .keys()
            .chain(member.assigned.keys())
            .copied()
            .collect();
        for topic_id in topic_ids {
            let target_partitions = target.get(&topic_id).unwrap_or(&empty);
            let current = member.assigned.get(&topic_id).unwrap_or(&empty);
            let own_revocation = member.pending_revocation.get(&topic_id).unwrap_or(&empty);
            let kept: BTreeSet<i32> = current.intersection(target_partitions).copied().collect();
            let revoke: BTreeSet<i32> = current.difference(&kept).copied().collect();
            let mut pending: BTreeSet<i32> = target_partitions.difference(&kept).copied().collect();
            let before = pending.len();
            pending.retain(|p| {
                !self.owners.contains_key(&(topic_id, *p)) || own_revocation.contains(p)
            });
            has_unreleased |= pending.len() != before;
            if !kept.is_empty() {
                new_assigned.insert(topic_id, kept);
            }
            if !revoke.is_empty() {
                new_revocation.insert(topic_id, revoke);
            }
            if !pending.is_empty() {
                new_pending_assignment.insert(topic_id, pending);
            }
        }

        let mut next = member.clone();
        if !new_revocation.is_empty() && owns_any(owned, &new_revocation) {
            // Revoke first: the member stays in its epoch until it acknowledges.
            next.state = MemberState::UnrevokedPartitions;
            next.update_member_epoch(member_epoch);
            next.assigned = new_assigned;
            next.pending_revocation = new_revocation;
        } else {
            for (topic_id, partitions) in new_pending_assignment {
                new_assigned.entry(topic_id).or_default().extend(partitions);
            }
            next.state = if has_unreleased {
                MemberState::UnreleasedPartitions
            } else {
                MemberState::Stable
            };
            next.update_member_epoch(target_epoch);
            next.assigned = new_assigned;
            next.pending_revocation = BTreeMap::new();
        }
        next
    }
}

/// Whether the member still owns any of `partitions` (Kafka's
/// `ownsRevokedPartitions`): a request without owned partitions is assumed to.
fn owns_any(owned: Option<&[RequestTopicPartitions]>, partitions: &TopicPartitions) -> bool {
    let Some(owned) = owned else { return true };
    owned.iter().any(|tp| {
        partitions
            .get(&tp.topic_id)
            .is_some_and(|set| tp.partitions.iter().any(|p| set.contains(p)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::ConsumerGroupState;
    use crate::consumer::test_support::*;

    #[test]
    fn second_member_waits_for_revocation() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(4);
        let r = hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1, 2, 3])]));

        // b joins: epoch 2, but its partitions are still a's.
        let r = hb(&mut g, &join("b", None, &["foo"]), &t, 10);
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![]));
        assert_eq!(g.state(), ConsumerGroupState::Reconciling);

        // a is asked to revoke two partitions and stays at epoch 1.
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1, 2, 3])])), &t, 20);
        assert_eq!(r.member_epoch, 1);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));

        // b still waits.
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 30);
        assert_eq!((r.member_epoch, r.assignment.is_none()), (2, true));

        // a acknowledges the revocation: epoch 2.
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 40);
        assert_eq!((r.member_epoch, r.assignment.is_none()), (2, true));

        // b now gets the released partitions.
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 50);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![2, 3])]));
        assert_eq!(g.state(), ConsumerGroupState::Stable);
    }
}
