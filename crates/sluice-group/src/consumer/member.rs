//! One member of a consumer group (Kafka's `ConsumerGroupMember`): its metadata,
//! its epochs, its current assignment and where it is in its reconciliation
//! ([`MemberState`]); and the read-only [`MemberView`] the group hands out.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use crate::assignor::TopicPartitions;

/// Where a member is in its reconciliation (Kafka's `MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemberState {
    /// The member has its target assignment at the target epoch.
    Stable,
    /// The member must revoke partitions before it advances.
    UnrevokedPartitions,
    /// The member waits for partitions other members have not released yet.
    UnreleasedPartitions,
}

impl MemberState {
    /// Kafka's names: `STABLE`, `UNREVOKED_PARTITIONS`, `UNRELEASED_PARTITIONS`.
    pub fn as_str(&self) -> &'static str {
        match self {
            MemberState::Stable => "STABLE",
            MemberState::UnrevokedPartitions => "UNREVOKED_PARTITIONS",
            MemberState::UnreleasedPartitions => "UNRELEASED_PARTITIONS",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    pub(super) member_id: String,
    pub(super) instance_id: Option<String>,
    pub(super) rack_id: Option<String>,
    pub(super) client_id: String,
    pub(super) client_host: String,
    pub(super) rebalance_timeout_ms: i32,
    pub(super) subscribed_topic_names: BTreeSet<String>,
    pub(super) subscribed_topic_regex: Option<String>,
    pub(super) server_assignor: Option<String>,
    pub(super) member_epoch: i32,
    pub(super) previous_member_epoch: i32,
    pub(super) state: MemberState,
    pub(super) assigned: TopicPartitions,
    pub(super) pending_revocation: TopicPartitions,
    pub(super) session_deadline_ms: i64,
    pub(super) rebalance_deadline_ms: Option<i64>,
    /// Set for a member that uses the classic protocol (JoinGroup/SyncGroup/
    /// Heartbeat) in this consumer group (Kafka's `classicMemberMetadata`).
    pub(super) classic: Option<ClassicMetadata>,
    /// Classic members: fenced unless they rejoin by then (set when they are told
    /// REBALANCE_IN_PROGRESS; Kafka's join timeout).
    pub(super) join_deadline_ms: Option<i64>,
    /// Classic members: fenced unless they send SyncGroup by then (set by their
    /// JoinGroup; Kafka's sync timeout).
    pub(super) sync_deadline_ms: Option<i64>,
}

/// What a classic member sent in its last JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ClassicMetadata {
    pub(super) session_timeout_ms: i32,
    /// Its protocols (name, ConsumerProtocolSubscription bytes), in its order.
    pub(super) protocols: Vec<(String, Bytes)>,
}

impl Member {
    pub(super) fn new(member_id: String) -> Member {
        Member {
            member_id,
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout_ms: -1,
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: None,
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: 0,
            state: MemberState::Stable,
            assigned: BTreeMap::new(),
            pending_revocation: BTreeMap::new(),
            session_deadline_ms: i64::MAX,
            rebalance_deadline_ms: None,
            classic: None,
            join_deadline_ms: None,
            sync_deadline_ms: None,
        }
    }

    pub(super) fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }

    pub(super) fn update_member_epoch(&mut self, epoch: i32) {
        self.previous_member_epoch = self.member_epoch;
        self.member_epoch = epoch;
    }
}

/// A read-only view of one member, for DescribeGroups, ListGroups and the CLI.
#[derive(Debug, Clone, Copy)]
pub struct MemberView<'a> {
    pub member_id: &'a str,
    pub instance_id: Option<&'a str>,
    pub rack_id: Option<&'a str>,
    pub client_id: &'a str,
    pub client_host: &'a str,
    pub member_epoch: i32,
    pub state: MemberState,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<&'a str>,
    /// The subscribed topic names (sorted).
    pub subscribed_topic_names: &'a BTreeSet<String>,
    pub subscribed_topic_regex: Option<&'a str>,
    /// The partitions the member owns now, by topic id.
    pub assigned: &'a TopicPartitions,
    /// The partitions the member has been asked to revoke and still owns.
    pub pending_revocation: &'a TopicPartitions,
    /// The member's target assignment, by topic id.
    pub target: Option<&'a TopicPartitions>,
    /// Whether the member uses the classic protocol (JoinGroup/SyncGroup/Heartbeat)
    /// inside this consumer group. Such a member may commit offsets with
    /// OffsetCommit versions below 9, and its generation is its member epoch.
    pub uses_classic_protocol: bool,
    /// A classic member's session timeout (from its JoinGroup).
    pub classic_session_timeout_ms: Option<i32>,
    /// A classic member's protocols (name, ConsumerProtocolSubscription bytes).
    pub classic_protocols: Option<&'a [(String, Bytes)]>,
}
