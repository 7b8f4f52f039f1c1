//! Classic-protocol members (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) inside a
//! consumer group, and the online upgrade and downgrade between classic and
//! consumer groups. The types and the protocol helpers are in [`crate::migration`],
//! which has the tests.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
use sluice_protocol::ErrorCode;
use sluice_protocol::consumer_protocol::{self, Assignment as ProtocolAssignment};

use crate::assignor::TopicPartitions;
use crate::migration::{
    self, CONSUMER_PROTOCOL_TYPE, ClassicJoin, ClassicJoinResult, ClassicMemberSnapshot,
    ClassicSnapshot,
};

use super::member::{ClassicMetadata, Member, MemberState};
use super::{ConsumerGroup, ConsumerGroupConfig, Topics};

/// Classic-protocol members inside a consumer group, and the online migration
/// between classic and consumer groups (KIP-848 "Upgrade & Downgrade", Kafka's
/// `group.consumer.migration.policy=bidirectional`). The types and the protocol
/// helpers are in [`crate::migration`].
impl ConsumerGroup {
    /// Kafka's `validateOnlineUpgrade`: whether the classic group `group_id` may
    /// become a consumer group when a ConsumerGroupHeartbeat joins it. Refused
    /// (GROUP_ID_NOT_FOUND, Kafka's messages) when it does not use the `consumer`
    /// protocol type or has more members than `group.consumer.max.size`. The
    /// migration policy (`group.consumer.migration.policy`) is the broker's; Kafka
    /// does not require the classic group to be Stable.
    pub fn validate_online_upgrade(
        group_id: &str,
        classic: &ClassicSnapshot,
        config: &ConsumerGroupConfig,
    ) -> Result<(), (i16, String)> {
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE {
            return Err(migration::upgrade_refusal(
                group_id,
                "the group does not use the consumer embedded protocol",
            ));
        }
        if classic.members.len() as i64 > i64::from(config.max_size) {
            return Err(migration::upgrade_refusal(
                group_id,
                "the group size exceeds the consumer group maximum size",
            ));
        }
        Ok(())
    }

    /// Online upgrade (Kafka's `ConsumerGroup.fromClassicGroup`): the consumer
    /// group a classic group becomes. Group epoch and target assignment epoch are
    /// the classic generation; every classic member keeps its id, instance id,
    /// client, timeouts and protocols, is Stable at epoch = generation, and its last
    /// assignment becomes both its current and its target assignment (topics
    /// missing from `topics` are dropped; empty assignment bytes mean none).
    ///
    /// Refused with GROUP_ID_NOT_FOUND when the protocol type is not `consumer`,
    /// when a subscription or assignment does not decode, or when an assignment has
    /// user data (a custom client-side assignor, whose data would be lost). The
    /// size check needs the config: see [`ConsumerGroup::validate_online_upgrade`].
    ///
    /// If the classic group's `protocol` is empty (no generation completed yet), a
    /// member's first protocol is used (Kafka would fail with an internal error).
    pub fn from_classic(
        group_id: String,
        classic: &ClassicSnapshot,
        topics: &Topics,
        now_ms: i64,
    ) -> Result<ConsumerGroup, (i16, String)> {
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE {
            return Err(migration::upgrade_refusal(
                &group_id,
                "the group does not use the consumer embedded protocol",
            ));
        }
        let malformed =
            || migration::upgrade_refusal(&group_id, "the embedded consumer protocol is malformed");
        let mut members = Vec::with_capacity(classic.members.len());
        for m in &classic.members {
            let assigned: TopicPartitions = if m.assignment.is_empty() {
                BTreeMap::new()
            } else {
                let assignment =
                    consumer_protocol::decode_assignment(&m.assignment).map_err(|_| malformed())?;
                if assignment.user_data.as_ref().is_some_and(|d| !d.is_empty()) {
                    return Err((
                        ResponseError::GroupIdNotFound.code(),
                        format!(
                            "Cannot upgrade classic group {group_id} to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade."
                        ),
                    ));
                }
                migration::to_topic_ids(&assignment.partitions, topics)
            };
            let metadata = m
                .protocols
                .iter()
                .find(|(name, _)| *name == classic.protocol)
                .or_else(|| {
                    classic
                        .protocol
                        .is_empty()
                        .then(|| m.protocols.first())
                        .flatten()
                })
                .ok_or_else(malformed)?;
            let subscription =
                consumer_protocol::decode_subscription(&metadata.1).map_err(|_| malformed())?;
            let mut member = Member::new(m.member_id.clone());
            member.instance_id = m.group_instance_id.clone();
            member.rack_id = subscription.rack_id.filter(|rack| !rack.is_empty());
            member.client_id = m.client_id.clone();
            member.client_host = m.client_host.clone();
            member.rebalance_timeout_ms = m.rebalance_timeout_ms;
            member.subscribed_topic_names = subscription.topics.into_iter().collect();
            member.member_epoch = classic.generation;
            member.previous_member_epoch = classic.generation;
            member.assigned = assigned;
            member.session_deadline_ms =
                now_ms.saturating_add(i64::from(m.session_timeout_ms.max(0)));
            member.classic = Some(ClassicMetadata {
                session_timeout_ms: m.session_timeout_ms,
                protocols: m.protocols.clone(),
            });
            members.push(member);
        }

        let mut group = ConsumerGroup::new(group_id);
        group.group_epoch = classic.generation;
        group.assignment_epoch = classic.generation;
        // Nothing of the new group is written yet (Kafka's `createConsumerGroupRecords`).
        group.written_epoch = None;
        group.written_assignment_epoch = None;
        for member in members {
            if let Some(instance_id) = &member.instance_id {
                group
                    .static_members
                    .insert(instance_id.clone(), member.member_id.clone());
            }
            group
                .target
                .insert(member.member_id.clone(), member.assigned.clone());
            group.changes.target.insert(member.member_id.clone());
            group.index(&member);
            group.put_member(member);
        }
        let metadata = group.compute_subscription_metadata(topics);
        group.update_subscription_metadata(metadata);
        group.refresh_topic_names(topics);
        tracing::info!(group = %group.group_id, epoch = group.group_epoch, members = group.members.len(), "converted the classic group to a consumer group");
        Ok(group)
    }

    /// Online downgrade (Kafka's `validateOnlineDowngrade*` + `ClassicGroup.fromConsumerGroup`):
    /// when the group still has members and all of them use the classic protocol
    /// (the last consumer-protocol member left, was fenced, or was replaced by a
    /// classic static member), the classic group it becomes: generation = group
    /// epoch, protocol type `consumer`, the protocol the members' votes select
    /// (among those all support), no leader, and each member with its protocols and
    /// its target assignment encoded as a ConsumerProtocolAssignment of the version
    /// of its subscription. `None` otherwise. The policy and the
    /// `group.classic.max.size` check are the broker's.
    pub fn to_classic(&self) -> Option<ClassicSnapshot> {
        if self.dead
            || self.members.is_empty()
            || self.members.values().any(|m| m.classic.is_none())
        {
            return None;
        }
        let protocol = migration::select_protocol(
            self.members
                .values()
                .filter_map(|m| m.classic.as_ref())
                .map(|c| c.protocols.as_slice()),
        )?;
        let empty = BTreeMap::new();
        let members = self
            .members
            .values()
            .filter_map(|m| {
                let classic = m.classic.as_ref()?;
                let metadata = classic
                    .protocols
                    .iter()
                    .find(|(name, _)| *name == protocol)
                    .map(|(_, metadata)| metadata.clone())
                    .unwrap_or_default();
                let target = self.target.get(&m.member_id).unwrap_or(&empty);
                Some(ClassicMemberSnapshot {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: classic.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    protocols: classic.protocols.clone(),
                    assignment: self.encode_assignment(target, &metadata),
                })
            })
            .collect();
        Some(ClassicSnapshot {
            generation: self.group_epoch,
            protocol_type: CONSUMER_PROTOCOL_TYPE.to_string(),
            protocol,
            leader: None,
            members,
        })
    }

    /// Serves a JoinGroup (protocol type `consumer`) sent to this consumer group
    /// (Kafka's `classicGroupJoinToConsumerGroup`). It is answered at once, never
    /// waiting for other members: the member is created or updated from its
    /// subscription, the group epoch bumped if its subscription changed, the target
    /// assignment recomputed, and the member reconciled with the owned partitions of
    /// its subscription. The answer: generation = the member's epoch (still the old
    /// one while it must revoke partitions), protocol type `consumer`, protocol name
    /// = the member's first protocol, leader `""` (every classic member is a
    /// follower: it sends SyncGroup without assignments), no member list.
    ///
    /// Errors (with generation -1 and the request's member id): GROUP_MAX_SIZE_REACHED,
    /// INCONSISTENT_GROUP_PROTOCOL (type not `consumer`, or none of its protocols
    /// supported by all classic members), MEMBER_ID_REQUIRED (v4+, no member id nor
    /// instance id; the answer carries the new member id), UNKNOWN_MEMBER_ID /
    /// FENCED_INSTANCE_ID (static member with a member id the group does not know
    /// under its instance id), UNKNOWN_SERVER_ERROR (undecodable subscription).
    /// The session timeout bounds (INVALID_SESSION_TIMEOUT) and the group id checks
    /// are the broker's, before calling this.
    ///
    /// Sets the member's session deadline (its own session timeout) and its sync
    /// deadline (its rebalance timeout). Afterwards the broker checks
    /// [`ConsumerGroup::to_classic`]: a classic static member replacing the last
    /// consumer-protocol member downgrades the group.
    pub fn classic_join(
        &mut self,
        join: &ClassicJoin,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> ClassicJoinResult {
        if let Some(default) = config.supported_assignors().first() {
            self.default_assignor = default.to_string();
        }
        let result = self.try_classic_join(join, topics, config, now_ms);
        self.refresh_topic_names(topics);
        match result {
            Ok(result) => result,
            Err((code, member_id)) => ClassicJoinResult {
                error: code,
                member_id,
                generation: -1,
                protocol_type: None,
                protocol_name: None,
                leader: String::new(),
                skip_assignment: false,
            },
        }
    }

    fn try_classic_join(
        &mut self,
        join: &ClassicJoin,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> Result<ClassicJoinResult, (i16, String)> {
        let refuse = |error: ResponseError| Err((error.code(), join.member_id.clone()));
        let unknown = join.member_id.is_empty();
        let member_id = if unknown {
            self.generate_member_id(now_ms)
        } else {
            join.member_id.clone()
        };
        if self.members.len() as i64 >= i64::from(config.max_size)
            && (unknown || !self.members.contains_key(&member_id))
        {
            return refuse(ResponseError::GroupMaxSizeReached);
        }
        if !self.supports_classic_protocols(&join.protocol_type, &join.protocols) {
            return refuse(ResponseError::InconsistentGroupProtocol);
        }
        if unknown && join.group_instance_id.is_none() && join.version >= 4 {
            tracing::info!(group = %self.group_id, member = %member_id, "classic member with unknown member id joins the consumer group: asking it to rejoin with a new id");
            return Err((ResponseError::MemberIdRequired.code(), member_id));
        }
        let Some((protocol_name, metadata)) = join.protocols.first() else {
            return refuse(ResponseError::InconsistentGroupProtocol);
        };
        let Ok(subscription) = consumer_protocol::decode_subscription(metadata) else {
            return refuse(ResponseError::UnknownServerError);
        };

        // Get or create the member.
        let mut replaced: Option<String> = None;
        let member: Member = match join.group_instance_id.as_deref() {
            None => self
                .members
                .get(&member_id)
                .cloned()
                .unwrap_or_else(|| Member::new(member_id.clone())),
            Some(instance_id) if unknown => {
                match self
                    .static_members
                    .get(instance_id)
                    .and_then(|id| self.members.get(id))
                {
                    None => Member::new(member_id.clone()),
                    Some(existing) => {
                        // A classic static member takes over the instance at once,
                        // whatever the previous one's state (as in Kafka).
                        let mut copy = existing.clone();
                        copy.member_id = member_id.clone();
                        copy.member_epoch = 0;
                        copy.previous_member_epoch = 0;
                        copy.rebalance_deadline_ms = None;
                        replaced = Some(existing.member_id.clone());
                        copy
                    }
                }
            }
            Some(instance_id) => {
                let existing = self
                    .static_member(instance_id, &member_id)
                    .map_err(|refusal| (refusal.code, join.member_id.clone()))?;
                self.members[&existing].clone()
            }
        };

        let mut updated = member.clone();
        if let Some(instance_id) = &join.group_instance_id {
            updated.instance_id = Some(instance_id.clone());
        }
        if let Some(rack_id) = subscription.rack_id.as_ref().filter(|r| !r.is_empty()) {
            updated.rack_id = Some(rack_id.clone());
        }
        if join.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = join.rebalance_timeout_ms;
        }
        updated.subscribed_topic_names = subscription.topics.iter().cloned().collect();
        updated.client_id = join.client_id.clone();
        updated.client_host = join.client_host.clone();
        updated.classic = Some(ClassicMetadata {
            session_timeout_ms: join.session_timeout_ms,
            protocols: join.protocols.clone(),
        });
        let subscription_changed = updated.subscribed_topic_names != member.subscribed_topic_names
            || updated.subscribed_topic_regex != member.subscribed_topic_regex;

        // Apply.
        self.apply_member(
            &member_id,
            replaced.as_deref(),
            updated,
            subscription_changed,
            topics,
        );

        // Reconcile with what the member says it owns.
        let owned: Vec<RequestTopicPartitions> =
            migration::to_topic_ids(&subscription.owned_partitions, topics)
                .into_iter()
                .map(|(topic_id, partitions)| {
                    let mut tp = RequestTopicPartitions::default();
                    tp.topic_id = topic_id;
                    tp.partitions = partitions.into_iter().collect();
                    tp
                })
                .collect();
        let current = self.members[&member_id].clone();
        let mut reconciled = if current.is_reconciled_to(self.assignment_epoch) {
            current
        } else {
            let target = self.target.get(&member_id).cloned().unwrap_or_default();
            self.reconcile(&current, self.assignment_epoch, &target, Some(&owned))
        };
        // Classic members have join and sync timeouts instead of the rebalance one.
        reconciled.rebalance_deadline_ms = None;
        reconciled.join_deadline_ms = None;
        reconciled.sync_deadline_ms =
            Some(now_ms.saturating_add(i64::from(join.rebalance_timeout_ms.max(0))));
        reconciled.session_deadline_ms =
            now_ms.saturating_add(i64::from(join.session_timeout_ms.max(0)));
        self.unindex(&member_id);
        self.index(&reconciled);
        let generation = reconciled.member_epoch;
        self.put_member(reconciled);

        Ok(ClassicJoinResult {
            error: 0,
            member_id,
            generation,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: Some(protocol_name.clone()),
            leader: String::new(),
            skip_assignment: false,
        })
    }

    /// Serves a SyncGroup from a classic member (Kafka's
    /// `classicGroupSyncToConsumerGroup`), at once: its current assignment (without
    /// the partitions it must revoke) as ConsumerProtocolAssignment bytes of the
    /// version of its subscription. Errors: UNKNOWN_MEMBER_ID (unknown member or
    /// instance, or a consumer-protocol member), FENCED_INSTANCE_ID,
    /// ILLEGAL_GENERATION (generation != member epoch), INCONSISTENT_GROUP_PROTOCOL
    /// (protocol type not `consumer` or name not the one its JoinGroup was answered),
    /// REBALANCE_IN_PROGRESS (the group epoch moved past the member's and it is not
    /// revoking: it must rejoin; its join deadline starts). On success the sync
    /// deadline is cleared and the session deadline renewed. The broker answers with
    /// the request's protocol type and name.
    pub fn classic_sync(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        now_ms: i64,
    ) -> Result<Bytes, ErrorCode> {
        let id = self.classic_member(member_id, instance)?;
        let group_epoch = self.group_epoch;
        let member = &self.members[&id];
        if member.member_epoch != generation {
            return Err(ErrorCode::ILLEGAL_GENERATION);
        }
        let (session_timeout_ms, first_protocol) = match &member.classic {
            Some(classic) => (
                classic.session_timeout_ms,
                classic.protocols.first().cloned(),
            ),
            None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
        };
        let (name, metadata) = first_protocol.unwrap_or_default();
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || protocol_name.is_some_and(|n| n != name)
        {
            return Err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
        }
        let must_rejoin =
            group_epoch > member.member_epoch && member.state != MemberState::UnrevokedPartitions;
        let assignment =
            (!must_rejoin).then(|| self.encode_assignment(&member.assigned, &metadata));
        let member = self
            .members
            .get_mut(&id)
            .expect("the member was looked up above");
        match assignment {
            None => {
                let rebalance_timeout_ms = member.rebalance_timeout_ms.max(0);
                member
                    .join_deadline_ms
                    .get_or_insert(now_ms.saturating_add(i64::from(rebalance_timeout_ms)));
                Err(ErrorCode::REBALANCE_IN_PROGRESS)
            }
            Some(assignment) => {
                member.sync_deadline_ms = None;
                member.session_deadline_ms =
                    now_ms.saturating_add(i64::from(session_timeout_ms.max(0)));
                Ok(assignment)
            }
        }
    }

    /// Serves a Heartbeat from a classic member (Kafka's
    /// `classicGroupHeartbeatToConsumerGroup`). Errors: UNKNOWN_MEMBER_ID,
    /// FENCED_INSTANCE_ID, ILLEGAL_GENERATION (generation != member epoch). Otherwise
    /// the session deadline is renewed and the answer is REBALANCE_IN_PROGRESS when
    /// the member must rejoin — its epoch is behind the group epoch, it must revoke
    /// partitions, or partitions it waited for are now free — (its join deadline
    /// starts unless already running), else NONE.
    pub fn classic_heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now_ms: i64,
    ) -> i16 {
        let id = match self.classic_member(member_id, instance) {
            Ok(id) => id,
            Err(code) => return code.0,
        };
        let group_epoch = self.group_epoch;
        let member = &self.members[&id];
        if member.member_epoch != generation {
            return ResponseError::IllegalGeneration.code();
        }
        let must_rejoin = member.member_epoch < group_epoch
            || member.state == MemberState::UnrevokedPartitions
            || (member.state == MemberState::UnreleasedPartitions
                && !self.waiting_on_unreleased_partition(member));
        let member = self
            .members
            .get_mut(&id)
            .expect("the member was looked up above");
        let session_timeout_ms = member.classic.as_ref().map_or(0, |c| c.session_timeout_ms);
        member.session_deadline_ms = now_ms.saturating_add(i64::from(session_timeout_ms.max(0)));
        if must_rejoin {
            let rebalance_timeout_ms = member.rebalance_timeout_ms.max(0);
            member
                .join_deadline_ms
                .get_or_insert(now_ms.saturating_add(i64::from(rebalance_timeout_ms)));
            ResponseError::RebalanceInProgress.code()
        } else {
            0
        }
    }

    /// Serves one member of a LeaveGroup (Kafka's `classicGroupLeaveToConsumerGroup`):
    /// the classic member is removed and the group epoch bumped. With an instance
    /// id, an empty member id is allowed (an admin removing a static member).
    /// Errors: UNKNOWN_MEMBER_ID (unknown member or instance, or a member of the
    /// consumer protocol), FENCED_INSTANCE_ID. No downgrade follows a classic
    /// member's leave in Kafka.
    pub fn classic_leave(&mut self, member_id: &str, instance: Option<&str>, now_ms: i64) -> i16 {
        let _ = now_ms;
        let id = match instance {
            None => member_id.to_string(),
            Some(instance_id) => match self.static_members.get(instance_id) {
                None => return ResponseError::UnknownMemberId.code(),
                Some(existing) if !member_id.is_empty() && existing != member_id => {
                    return ResponseError::FencedInstanceId.code();
                }
                Some(existing) => existing.clone(),
            },
        };
        match self.members.get(&id) {
            Some(member) if member.classic.is_some() => {
                tracing::info!(group = %self.group_id, member = %id, "classic member left the consumer group through LeaveGroup");
                self.fence(&id);
                0
            }
            _ => ResponseError::UnknownMemberId.code(),
        }
    }

    /// Kafka's `validateConsumerGroupMember` + `throwIfMemberDoesNotUseClassicProtocol`:
    /// the id of the classic member the request is about.
    fn classic_member(&self, member_id: &str, instance: Option<&str>) -> Result<String, ErrorCode> {
        let id = match instance {
            None => member_id.to_string(),
            Some(instance_id) => match self.static_members.get(instance_id) {
                None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
                Some(existing) if existing != member_id => {
                    return Err(ErrorCode::FENCED_INSTANCE_ID);
                }
                Some(existing) => existing.clone(),
            },
        };
        match self.members.get(&id) {
            Some(member) if member.classic.is_some() => Ok(id),
            _ => Err(ErrorCode::UNKNOWN_MEMBER_ID),
        }
    }

    /// Kafka's `ConsumerGroup.supportsClassicProtocols`: the type is `consumer` and
    /// (the group is empty and the member has protocols, or) one of its protocols is
    /// supported by every classic member.
    fn supports_classic_protocols(
        &self,
        protocol_type: &str,
        protocols: &[(String, Bytes)],
    ) -> bool {
        if protocol_type != CONSUMER_PROTOCOL_TYPE {
            return false;
        }
        if self.members.is_empty() {
            return !protocols.is_empty();
        }
        protocols.iter().any(|(name, _)| {
            self.members
                .values()
                .filter_map(|m| m.classic.as_ref())
                .all(|c| c.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// Kafka's `waitingOnUnreleasedPartition`: a partition of the member's target it
    /// does not have is still owned by another member.
    fn waiting_on_unreleased_partition(&self, member: &Member) -> bool {
        if member.state != MemberState::UnreleasedPartitions {
            return false;
        }
        let empty = BTreeSet::new();
        self.target
            .get(&member.member_id)
            .into_iter()
            .flatten()
            .any(|(topic_id, partitions)| {
                let assigned = member.assigned.get(topic_id).unwrap_or(&empty);
                partitions
                    .iter()
                    .any(|p| !assigned.contains(p) && self.owners.contains_key(&(*topic_id, *p)))
            })
    }

    /// `partitions` as ConsumerProtocolAssignment bytes (topics by name, sorted; no
    /// user data), in the version of `subscription` (its first two bytes).
    fn encode_assignment(&self, partitions: &TopicPartitions, subscription: &[u8]) -> Bytes {
        let mut by_name: Vec<(String, Vec<i32>)> = partitions
            .iter()
            .filter_map(|(topic_id, ps)| {
                self.topic_names
                    .get(topic_id)
                    .map(|name| (name.clone(), ps.iter().copied().collect()))
            })
            .collect();
        by_name.sort();
        Bytes::from(consumer_protocol::encode_assignment(&ProtocolAssignment {
            version: migration::protocol_version(subscription),
            partitions: by_name,
            user_data: None,
        }))
    }

    /// Remembers the names of the topics the members own or are assigned, while
    /// there are classic members (their assignments are encoded by name).
    pub(super) fn refresh_topic_names(&mut self, topics: &Topics) {
        if self.members.values().all(|m| m.classic.is_none()) {
            self.topic_names.clear();
            return;
        }
        let mut names = HashMap::new();
        let ids = self
            .members
            .values()
            .flat_map(|m| m.assigned.keys().chain(m.pending_revocation.keys()))
            .chain(self.target.values().flat_map(|t| t.keys()));
        for topic_id in ids {
            if !names.contains_key(topic_id)
                && let Some(name) = topics.name(topic_id)
            {
                names.insert(*topic_id, name.to_string());
            }
        }
        self.topic_names = names;
    }
}
