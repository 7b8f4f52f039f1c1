//! The topics the members subscribe to: the subscription regexes (compiled once,
//! matched in full), the subscribed topics' metadata (ids and partition counts) and
//! its hash. A change of that metadata moves the group epoch on.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error::ResponseError;
use regex::Regex;
use uuid::Uuid;

use super::heartbeat::{Refusal, refuse};
use super::{ConsumerGroup, Topics};

impl ConsumerGroup {
    pub(super) fn compute_subscription_metadata(
        &self,
        topics: &Topics,
    ) -> BTreeMap<String, (Uuid, i32)> {
        let mut names: BTreeSet<String> = BTreeSet::new();
        let mut regexes: BTreeSet<&str> = BTreeSet::new();
        for member in self.members.values() {
            names.extend(member.subscribed_topic_names.iter().cloned());
            if let Some(regex) = &member.subscribed_topic_regex {
                regexes.insert(regex);
            }
        }
        let compiled: Vec<&Regex> = regexes
            .iter()
            .filter_map(|r| self.regexes.get(*r))
            .collect();
        if !compiled.is_empty() {
            for (name, _, _) in topics.iter() {
                if compiled.iter().any(|regex| regex.is_match(name)) {
                    names.insert(name.to_string());
                }
            }
        }
        names
            .into_iter()
            .filter_map(|name| topics.get(&name).map(|metadata| (name, metadata)))
            .collect()
    }

    /// Compiles `regex` (RE2 syntax like Kafka's RE2/J; a topic must match it in
    /// full) or answers INVALID_REGULAR_EXPRESSION.
    pub(super) fn compile_regex(&mut self, regex: &str) -> Result<(), Refusal> {
        if self.regexes.contains_key(regex) {
            return Ok(());
        }
        if let Err(error) = Regex::new(regex) {
            return refuse(
                ResponseError::InvalidRegularExpression,
                format!(
                    "SubscribedTopicRegex `{regex}` is not a valid regular expression: {error}."
                ),
            );
        }
        match Regex::new(&format!("^(?:{regex})$")) {
            Ok(anchored) => {
                self.regexes.insert(regex.to_string(), anchored);
                Ok(())
            }
            Err(error) => refuse(
                ResponseError::InvalidRegularExpression,
                format!(
                    "SubscribedTopicRegex `{regex}` is not a valid regular expression: {error}."
                ),
            ),
        }
    }

    /// Drops the compiled regexes no member uses any more.
    pub(super) fn prune_regexes(&mut self) {
        if self.regexes.is_empty() {
            return;
        }
        let used: BTreeSet<&String> = self
            .members
            .values()
            .filter_map(|m| m.subscribed_topic_regex.as_ref())
            .collect();
        self.regexes.retain(|regex, _| used.contains(regex));
    }

    /// Stores the subscribed topics' metadata; true if it changed. After a load, the
    /// first computation is compared through the replayed hash.
    pub(super) fn update_subscription_metadata(
        &mut self,
        metadata: BTreeMap<String, (Uuid, i32)>,
    ) -> bool {
        let hash = metadata_hash(&metadata);
        let changed = if self.metadata_known {
            metadata != self.subscription_metadata
        } else {
            self.metadata_known = true;
            hash != self.metadata_hash
        };
        self.subscription_metadata = metadata;
        self.metadata_hash = hash;
        changed
    }
}

/// The hash of the subscribed topics' metadata written as the group metadata's
/// `metadataHash`: 64-bit FNV-1a over each topic's name, id and partition count, in
/// name order; 0 when there are none (as Kafka). It is not Kafka's hash (which covers
/// partition racks Sluice does not know), so a Kafka coordinator loading it would
/// only bump the group epoch once, and vice versa.
pub(super) fn metadata_hash(metadata: &BTreeMap<String, (Uuid, i32)>) -> i64 {
    if metadata.is_empty() {
        return 0;
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for (name, (id, partitions)) in metadata {
        feed(&(name.len() as u32).to_be_bytes());
        feed(name.as_bytes());
        feed(id.as_bytes());
        feed(&partitions.to_be_bytes());
    }
    match hash as i64 {
        0 => 1,
        hash => hash,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::test_support::*;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn new_partitions_and_topics_are_assigned() {
        let mut g = ConsumerGroup::new("g".into());
        let r = hb(&mut g, &join("a", None, &["foo", "baz"]), &topics(2), 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
        // foo grows to 3 partitions.
        let r = hb(
            &mut g,
            &beat("a", 1, Some(&[(T1, &[0, 1])])),
            &topics(3),
            10,
        );
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1, 2])]));
        // baz is created.
        let t3 = Uuid::from_bytes([3; 16]);
        let mut t = topics(3);
        t = Topics::new(t.iter().map(|(n, id, c)| (n.to_string(), id, c)).chain([(
            "baz".to_string(),
            t3,
            1,
        )]));
        let r = hb(&mut g, &beat("a", 2, Some(&[(T1, &[0, 1, 2])])), &t, 20);
        assert_eq!(r.member_epoch, 3);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1, 2]), (t3, vec![0])]));
    }

    #[test]
    fn regex_subscription() {
        let mut g = ConsumerGroup::new("g".into());
        let mut req = join("a", None, &[]);
        req.subscribed_topic_names = None;
        req.subscribed_topic_regex = Some(StrBytes::from_static_str("fo+"));
        let r = hb(&mut g, &req, &topics(2), 0);
        assert_eq!(r.error_code, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
        assert_eq!(g.group_epoch(), 1);
        // A new topic matching the regex (in full) is picked up; a partial match is not.
        let t3 = Uuid::from_bytes([3; 16]);
        let t = Topics::new([
            ("foo".to_string(), T1, 2),
            ("bar".to_string(), T2, 2),
            ("fooo".to_string(), t3, 1),
            ("foobar".to_string(), Uuid::from_bytes([4; 16]), 1),
        ]);
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 10);
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1]), (t3, vec![0])]));
        let d = g.describe(&t);
        assert_eq!(d.members[0].subscribed_topic_regex.as_deref(), Some("fo+"));
    }
}
