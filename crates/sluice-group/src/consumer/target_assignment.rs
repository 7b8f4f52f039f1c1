//! The target assignment (Kafka's `TargetAssignmentBuilder`): the group's assignor
//! (the one most members ask for, else the configured default) and the assignment
//! it computes from the members' subscribed topics at the group epoch.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::assignor::{self, AssignmentMember};

use super::member::Member;
use super::{ConsumerGroup, Topics};

impl ConsumerGroup {
    /// The assignor the group uses: the supported one most members ask for (ties
    /// go to the earlier one in the config), else the configured default.
    pub fn assignor_name(&self) -> &str {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for member in self.members.values() {
            if let Some(name) = member.server_assignor.as_deref()
                && assignor::is_supported(name)
            {
                *counts.entry(name).or_default() += 1;
            }
        }
        let rank = |name: &str| {
            if name == self.default_assignor {
                0
            } else if name == assignor::UNIFORM {
                1
            } else {
                2
            }
        };
        counts
            .into_iter()
            .max_by(|(a, ca), (b, cb)| ca.cmp(cb).then(rank(b).cmp(&rank(a))))
            .map(|(name, _)| name)
            .unwrap_or(&self.default_assignor)
    }

    /// Recomputes the target assignment at the group epoch.
    pub(super) fn update_target_assignment(&mut self, topics: &Topics) {
        let name = self.assignor_name().to_string();
        let mut inputs: BTreeMap<String, AssignmentMember> = BTreeMap::new();
        let mut counts: BTreeMap<Uuid, i32> = BTreeMap::new();
        for member in self.members.values() {
            let subscribed = self.member_topics(member, topics);
            let mut ids = BTreeSet::new();
            for name in subscribed {
                if let Some((id, count)) = topics.get(&name) {
                    ids.insert(id);
                    counts.insert(id, count);
                }
            }
            inputs.insert(
                member.member_id.clone(),
                AssignmentMember {
                    subscribed_topic_ids: ids,
                    current: self
                        .target
                        .get(&member.member_id)
                        .cloned()
                        .unwrap_or_default(),
                },
            );
        }
        let result = assignor::assign(&name, &inputs, &counts)
            .unwrap_or_else(|| assignor::uniform(&inputs, &counts));
        for (member_id, partitions) in &result {
            if self.target.get(member_id) != Some(partitions) {
                self.changes.target.insert(member_id.clone());
            }
        }
        self.target = result;
        self.assignment_epoch = self.group_epoch;
        tracing::debug!(group = %self.group_id, epoch = self.group_epoch, assignor = %name, "computed target assignment");
    }

    /// The topic names a member subscribes to: its names and the topics its regex
    /// matches.
    fn member_topics(&self, member: &Member, topics: &Topics) -> BTreeSet<String> {
        let mut names = member.subscribed_topic_names.clone();
        if let Some(regex) = member
            .subscribed_topic_regex
            .as_ref()
            .and_then(|r| self.regexes.get(r))
        {
            for (name, _, _) in topics.iter() {
                if regex.is_match(name) {
                    names.insert(name.to_string());
                }
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::test_support::*;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn range_assignor_when_members_ask_for_it() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(3);
        let mut req = join("a", None, &["foo", "bar"]);
        req.server_assignor = Some(StrBytes::from_static_str("range"));
        let r = hb(&mut g, &req, &t, 0);
        assert_eq!(g.assignor_name(), "range");
        assert_eq!(
            assigned(&r),
            Some(vec![(T1, vec![0, 1, 2]), (T2, vec![0, 1])])
        );
        let mut req = join("b", None, &["foo", "bar"]);
        req.server_assignor = Some(StrBytes::from_static_str("range"));
        hb(&mut g, &req, &t, 0);
        let targets: Vec<Vec<(Uuid, Vec<i32>)>> = g
            .members()
            .map(|m| {
                m.target
                    .unwrap()
                    .iter()
                    .map(|(id, ps)| (*id, ps.iter().copied().collect()))
                    .collect()
            })
            .collect();
        assert_eq!(targets[0], vec![(T1, vec![0, 1]), (T2, vec![0])]);
        assert_eq!(targets[1], vec![(T1, vec![2]), (T2, vec![1])]);
    }
}
