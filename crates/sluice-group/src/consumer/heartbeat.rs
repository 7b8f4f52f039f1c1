//! ConsumerGroupHeartbeat (Kafka's `GroupMetadataManager.consumerGroupHeartbeat`):
//! the request checks, joining, leaving (for good, or for a while as a static
//! member), the member epoch checks, and the answer with the member's reconciled
//! assignment.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions as RequestTopicPartitions;
use kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment as ResponseAssignment, TopicPartitions as ResponseTopicPartitions,
};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::protocol::StrBytes;

use crate::assignor::TopicPartitions;

use super::member::{Member, MemberState};
use super::{
    CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION, ConsumerGroup, ConsumerGroupConfig,
    LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, Topics,
};

/// A heartbeat error: the Kafka error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(super) code: i16,
    pub(super) message: String,
}

pub(super) fn refuse<T>(error: ResponseError, message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        code: error.code(),
        message: message.into(),
    })
}

/// Java's `String.trim().isEmpty()`: every character at or below U+0020.
fn is_blank(value: &str) -> bool {
    value.chars().all(|c| c <= ' ')
}

impl ConsumerGroup {
    /// Serves one ConsumerGroupHeartbeat. `version` is the request version;
    /// `client_id` and `client_host` come from the request header and the
    /// connection (Kafka shows the host as `/a.b.c.d`). Errors are in the
    /// response's `error_code`/`error_message`, with the rest of the response at
    /// its defaults; a refused request changes nothing.
    #[allow(clippy::too_many_arguments)]
    pub fn heartbeat(
        &mut self,
        version: i16,
        request: &ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> ConsumerGroupHeartbeatResponse {
        if let Some(default) = config.supported_assignors().first() {
            self.default_assignor = default.to_string();
        }
        let result = validate_request(version, request, config).and_then(|()| {
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
                || request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
            {
                self.leave(request, config, now_ms)
            } else {
                self.regular_heartbeat(request, client_id, client_host, topics, config, now_ms)
            }
        });
        self.refresh_topic_names(topics);
        match result {
            Ok(response) => response,
            Err(refusal) => {
                let mut response = ConsumerGroupHeartbeatResponse::default();
                response.error_code = refusal.code;
                response.error_message = Some(StrBytes::from_string(refusal.message));
                response
            }
        }
    }

    fn leave(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let member_id = request.member_id.as_str();
        match request.instance_id.as_deref() {
            None => {
                if !self.members.contains_key(member_id) {
                    return self.unknown_member(member_id);
                }
                tracing::info!(group = %self.group_id, member = %member_id, "member left the consumer group");
                self.fence(member_id);
            }
            Some(instance_id) => {
                let existing = self.static_member(instance_id, member_id)?;
                if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                    // The static member keeps its assignment (and its target) until
                    // it comes back or its session expires.
                    tracing::info!(group = %self.group_id, member = %member_id, instance = %instance_id, "static member temporarily left the consumer group");
                    self.unindex(&existing);
                    let mut member = self
                        .members
                        .get(&existing)
                        .cloned()
                        .unwrap_or_else(|| Member::new(existing.clone()));
                    member.update_member_epoch(LEAVE_GROUP_STATIC_MEMBER_EPOCH);
                    member.pending_revocation.clear();
                    member.state = MemberState::Stable;
                    member.rebalance_deadline_ms = None;
                    member.session_deadline_ms =
                        now_ms.saturating_add(i64::from(config.session_timeout_ms));
                    self.index(&member);
                    self.put_member(member);
                } else {
                    tracing::info!(group = %self.group_id, member = %member_id, instance = %instance_id, "static member left the consumer group");
                    self.fence(&existing);
                }
            }
        }
        let mut response = ConsumerGroupHeartbeatResponse::default();
        response.member_id = Some(request.member_id.clone());
        response.member_epoch = request.member_epoch;
        Ok(response)
    }

    fn unknown_member<T>(&self, member_id: &str) -> Result<T, Refusal> {
        refuse(
            ResponseError::UnknownMemberId,
            format!(
                "Member {member_id} is not a member of group {}.",
                self.group_id
            ),
        )
    }

    /// The member id of the static member `instance_id`, which must be
    /// `member_id` (Kafka's `throwIfStaticMemberIsUnknown` and
    /// `throwIfInstanceIdIsFenced`).
    pub(super) fn static_member(
        &self,
        instance_id: &str,
        member_id: &str,
    ) -> Result<String, Refusal> {
        let Some(existing) = self.static_members.get(instance_id) else {
            return refuse(
                ResponseError::UnknownMemberId,
                format!("Instance id {instance_id} is unknown."),
            );
        };
        if existing != member_id {
            return refuse(
                ResponseError::FencedInstanceId,
                format!(
                    "Static member {member_id} with instance id {instance_id} was fenced by member {existing}."
                ),
            );
        }
        Ok(existing.clone())
    }

    fn regular_heartbeat(
        &mut self,
        request: &ConsumerGroupHeartbeatRequest,
        client_id: &str,
        client_host: &str,
        topics: &Topics,
        config: &ConsumerGroupConfig,
        now_ms: i64,
    ) -> Result<ConsumerGroupHeartbeatResponse, Refusal> {
        let member_epoch = request.member_epoch;
        let owned = request.topic_partitions.as_deref();
        let joining = member_epoch == 0;

        // The group's capacity.
        let requested_id = request.member_id.as_str();
        if self.members.len() as i64 >= i64::from(config.max_size)
            && (requested_id.is_empty() || !self.members.contains_key(requested_id))
        {
            return refuse(
                ResponseError::GroupMaxSizeReached,
                format!(
                    "The consumer group has reached its maximum capacity of {} members.",
                    config.max_size
                ),
            );
        }

        // Get or create the member; nothing changes until every check passed.
        let member_id = if requested_id.is_empty() {
            self.generate_member_id(now_ms)
        } else {
            requested_id.to_string()
        };
        let mut replaced: Option<String> = None;
        let member: Member = match request.instance_id.as_deref() {
            None => match self.members.get(&member_id) {
                Some(existing) => {
                    check_member_epoch(existing, member_epoch, owned)?;
                    existing.clone()
                }
                None if joining => Member::new(member_id.clone()),
                None => return self.unknown_member(&member_id),
            },
            Some(instance_id) => {
                let existing = self
                    .static_members
                    .get(instance_id)
                    .and_then(|id| self.members.get(id));
                if joining {
                    match existing {
                        None => self
                            .members
                            .get(&member_id)
                            .cloned()
                            .unwrap_or_else(|| Member::new(member_id.clone())),
                        Some(existing) => {
                            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH {
                                return refuse(
                                    ResponseError::UnreleasedInstanceId,
                                    format!(
                                        "Static member {member_id} with instance id {instance_id} cannot join the group because the instance id is owned by {} member.",
                                        existing.member_id
                                    ),
                                );
                            }
                            // The member comes back: it takes over the previous
                            // instance's assignment under its new member id.
                            let mut copy = existing.clone();
                            copy.member_id = member_id.clone();
                            copy.member_epoch = 0;
                            copy.previous_member_epoch = 0;
                            copy.state = MemberState::Stable;
                            copy.rebalance_deadline_ms = None;
                            if existing.member_id != member_id {
                                replaced = Some(existing.member_id.clone());
                            }
                            copy
                        }
                    }
                } else {
                    let existing_id = self.static_member(instance_id, &member_id)?;
                    let existing = &self.members[&existing_id];
                    check_member_epoch(existing, member_epoch, owned)?;
                    existing.clone()
                }
            }
        };

        // The member with the request's fields.
        let mut updated = member.clone();
        if let Some(instance_id) = &request.instance_id {
            updated.instance_id = Some(instance_id.to_string());
        }
        if let Some(rack_id) = &request.rack_id {
            updated.rack_id = Some(rack_id.to_string());
        }
        if request.rebalance_timeout_ms != -1 {
            updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
        }
        if let Some(name) = &request.server_assignor {
            updated.server_assignor = Some(name.to_string());
        }
        if let Some(names) = &request.subscribed_topic_names {
            updated.subscribed_topic_names = names.iter().map(|name| name.to_string()).collect();
        }
        if let Some(regex) = &request.subscribed_topic_regex {
            updated.subscribed_topic_regex = (!regex.is_empty()).then(|| regex.to_string());
        }
        updated.client_id = client_id.to_string();
        updated.client_host = client_host.to_string();
        // A ConsumerGroupHeartbeat makes the member a consumer-protocol member.
        updated.classic = None;
        updated.join_deadline_ms = None;
        updated.sync_deadline_ms = None;

        let regex_changed = updated.subscribed_topic_regex != member.subscribed_topic_regex;
        if regex_changed && let Some(regex) = &updated.subscribed_topic_regex {
            self.compile_regex(regex)?;
        }
        let subscription_changed =
            updated.subscribed_topic_names != member.subscribed_topic_names || regex_changed;

        // Every check passed: apply.
        self.apply_member(
            &member_id,
            replaced.as_deref(),
            updated,
            subscription_changed,
            topics,
        );

        // Reconcile the member toward its target.
        let current = self.members[&member_id].clone();
        let mut reconciled = if current.is_reconciled_to(self.assignment_epoch) {
            current.clone()
        } else {
            let target = self.target.get(&member_id).cloned().unwrap_or_default();
            self.reconcile(&current, self.assignment_epoch, &target, owned)
        };
        if reconciled != current {
            if reconciled.state == MemberState::UnrevokedPartitions {
                reconciled.rebalance_deadline_ms =
                    Some(now_ms.saturating_add(i64::from(reconciled.rebalance_timeout_ms.max(0))));
            } else {
                reconciled.rebalance_deadline_ms = None;
            }
        }
        reconciled.session_deadline_ms =
            now_ms.saturating_add(i64::from(config.session_timeout_ms));
        self.unindex(&member_id);
        self.index(&reconciled);

        let full_request = request.rebalance_timeout_ms != -1
            && (request.subscribed_topic_names.is_some()
                || request.subscribed_topic_regex.is_some())
            && request.topic_partitions.is_some();
        let assignment =
            (joining || full_request || reconciled.assigned != member.assigned).then(|| {
                let mut assignment = ResponseAssignment::default();
                assignment.topic_partitions = reconciled
                    .assigned
                    .iter()
                    .map(|(id, partitions)| {
                        let mut tp = ResponseTopicPartitions::default();
                        tp.topic_id = *id;
                        tp.partitions = partitions.iter().copied().collect();
                        tp
                    })
                    .collect();
                assignment
            });
        let mut response = ConsumerGroupHeartbeatResponse::default();
        response.member_id = Some(StrBytes::from_string(member_id.clone()));
        response.member_epoch = reconciled.member_epoch;
        response.heartbeat_interval_ms = config.heartbeat_interval_ms;
        response.assignment = assignment;
        self.put_member(reconciled);
        Ok(response)
    }
}

/// Kafka's `throwIfConsumerGroupMemberEpochIsInvalid`: an epoch ahead of the
/// member's is fenced; one behind is fenced unless it is the previous epoch and the
/// member owns only partitions of its current assignment (a lost response).
fn check_member_epoch(
    member: &Member,
    received: i32,
    owned: Option<&[RequestTopicPartitions]>,
) -> Result<(), Refusal> {
    if received > member.member_epoch {
        return refuse(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a greater member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        );
    }
    if received < member.member_epoch
        && (received != member.previous_member_epoch || !is_subset(owned, &member.assigned))
    {
        return refuse(
            ResponseError::FencedMemberEpoch,
            format!(
                "The consumer group member has a smaller member epoch ({received}) than the one known by the group coordinator ({}). The member must abandon all its partitions and rejoin.",
                member.member_epoch
            ),
        );
    }
    Ok(())
}

/// Whether the owned partitions (null = unknown = no) are all in `assigned`.
fn is_subset(owned: Option<&[RequestTopicPartitions]>, assigned: &TopicPartitions) -> bool {
    let Some(owned) = owned else { return false };
    owned.iter().all(|tp| {
        tp.partitions.is_empty()
            || assigned
                .get(&tp.topic_id)
                .is_some_and(|set| tp.partitions.iter().all(|p| set.contains(p)))
    })
}

/// Kafka's `GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid`.
fn validate_request(
    version: i16,
    request: &ConsumerGroupHeartbeatRequest,
    config: &ConsumerGroupConfig,
) -> Result<(), Refusal> {
    let invalid = |message: &str| refuse(ResponseError::InvalidRequest, message);
    let epoch = request.member_epoch;
    if (version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION
        || epoch > 0
        || epoch == LEAVE_GROUP_MEMBER_EPOCH)
        && is_blank(&request.member_id)
    {
        return invalid("MemberId can't be empty.");
    }
    if is_blank(&request.group_id) {
        return invalid("GroupId can't be empty.");
    }
    if request.instance_id.as_deref().is_some_and(is_blank) {
        return invalid("InstanceId can't be empty.");
    }
    if request.rack_id.as_deref().is_some_and(is_blank) {
        return invalid("RackId can't be empty.");
    }
    if epoch == 0 {
        if request.rebalance_timeout_ms == -1 {
            return invalid("RebalanceTimeoutMs must be provided in first request.");
        }
        if request
            .topic_partitions
            .as_ref()
            .is_none_or(|tps| !tps.is_empty())
        {
            return invalid("TopicPartitions must be empty when (re-)joining.");
        }
        if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none() {
            return invalid(
                "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
            );
        }
    } else if epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        if request.instance_id.is_none() {
            return invalid("InstanceId can't be null.");
        }
    } else if epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH {
        return invalid("MemberEpoch is invalid.");
    }
    if let Some(name) = request.server_assignor.as_deref() {
        let supported = config.supported_assignors();
        if !supported.contains(&name) {
            return refuse(
                ResponseError::UnsupportedAssignor,
                format!(
                    "ServerAssignor {name} is not supported. Supported assignors: {}.",
                    supported.join(", ")
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::ConsumerGroupState;
    use crate::consumer::test_support::*;

    #[test]
    fn one_member_gets_everything() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(4);
        let r = hb(&mut g, &join("m1", None, &["foo", "bar"]), &t, 0);
        assert_eq!(r.error_code, 0);
        assert_eq!(r.member_id.as_deref(), Some("m1"));
        assert_eq!(r.member_epoch, 1);
        assert_eq!(r.heartbeat_interval_ms, 5_000);
        assert_eq!(
            assigned(&r),
            Some(vec![(T1, vec![0, 1, 2, 3]), (T2, vec![0, 1])])
        );
        assert_eq!(g.group_epoch(), 1);
        assert_eq!(g.assignment_epoch(), 1);
        assert_eq!(g.state(), ConsumerGroupState::Stable);
        // A plain heartbeat: no change, no assignment in the response.
        let r = hb(&mut g, &beat("m1", 1, None), &t, 1000);
        assert_eq!(
            (r.error_code, r.member_epoch, r.assignment.is_none()),
            (0, 1, true)
        );
        assert_eq!(g.group_epoch(), 1);
    }

    #[test]
    fn v0_generates_member_id_and_v1_requires_one() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(1);
        let r = g.heartbeat(0, &join("", None, &["foo"]), "c", "/h", &t, &config(), 0);
        assert_eq!(r.error_code, 0);
        let id = r.member_id.unwrap().to_string();
        assert_eq!(id.len(), 22);
        assert!(g.members().any(|m| m.member_id == id));
        let r = g.heartbeat(1, &join("", None, &["foo"]), "c", "/h", &t, &config(), 0);
        assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
        assert_eq!(r.error_message.as_deref(), Some("MemberId can't be empty."));
    }

    #[test]
    fn leave_bumps_epoch_and_frees_partitions() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        hb(&mut g, &join("b", None, &["foo"]), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0])])), &t, 0);
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![1])]));

        let r = hb(&mut g, &beat("b", -1, None), &t, 0);
        assert_eq!(
            (r.error_code, r.member_epoch, r.member_id.as_deref()),
            (0, -1, Some("b"))
        );
        assert_eq!(g.group_epoch(), 3);
        assert_eq!(g.state(), ConsumerGroupState::Assigning);
        let r = hb(&mut g, &beat("a", 2, Some(&[(T1, &[0])])), &t, 0);
        assert_eq!(r.member_epoch, 3);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![0, 1])]));
        let r = hb(&mut g, &beat("a", -1, None), &t, 0);
        assert_eq!(r.error_code, 0);
        assert!(g.is_empty());
        assert_eq!(g.state(), ConsumerGroupState::Empty);
        assert_eq!(g.group_epoch(), 4);
    }

    #[test]
    fn static_member_rejoins_with_same_partitions() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", Some("i-a"), &["foo"]), &t, 0);
        hb(&mut g, &join("b", Some("i-b"), &["foo"]), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        hb(&mut g, &beat("a", 1, Some(&[(T1, &[0])])), &t, 0);
        let r = hb(&mut g, &beat("b", 2, Some(&[])), &t, 0);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![1])]));
        assert_eq!(g.group_epoch(), 2);

        // b leaves temporarily.
        let mut leave = beat("b", -2, None);
        leave.instance_id = Some(StrBytes::from_static_str("i-b"));
        let r = hb(&mut g, &leave, &t, 1_000);
        assert_eq!((r.error_code, r.member_epoch), (0, -2));
        assert_eq!(g.group_epoch(), 2);

        // Another member can't take the instance id of an active member.
        let r = hb(&mut g, &join("x", Some("i-a"), &["foo"]), &t, 2_000);
        assert_eq!(r.error_code, ResponseError::UnreleasedInstanceId.code());

        // b comes back with a new member id: same partitions, same group epoch.
        let r = hb(&mut g, &join("b2", Some("i-b"), &["foo"]), &t, 2_000);
        assert_eq!(r.error_code, 0);
        assert_eq!(r.member_epoch, 2);
        assert_eq!(assigned(&r), Some(vec![(T1, vec![1])]));
        assert_eq!(g.group_epoch(), 2);
        assert_eq!(
            g.members()
                .map(|m| m.member_id.to_string())
                .collect::<Vec<_>>(),
            vec!["a", "b2"]
        );

        // The old member id is fenced by the new one.
        let mut old = beat("b", 2, None);
        old.instance_id = Some(StrBytes::from_static_str("i-b"));
        let r = hb(&mut g, &old, &t, 3_000);
        assert_eq!(r.error_code, ResponseError::FencedInstanceId.code());
    }

    #[test]
    fn fenced_member_epoch() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        hb(&mut g, &join("a", None, &["foo"]), &t, 0);
        let r = hb(&mut g, &beat("a", 5, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
        assert_eq!(
            r.error_message.as_deref(),
            Some(
                "The consumer group member has a greater member epoch (5) than the one known by the group coordinator (1). The member must abandon all its partitions and rejoin."
            )
        );
        hb(&mut g, &join("b", None, &["bar"]), &t, 0);
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0, 1])])), &t, 0);
        assert_eq!(r.member_epoch, 2);
        // The previous epoch with a subset of the assignment is accepted (lost response)...
        let r = hb(&mut g, &beat("a", 1, Some(&[(T1, &[0])])), &t, 0);
        assert_eq!((r.error_code, r.member_epoch), (0, 2));
        // ... but not without the owned partitions, nor an older one.
        let r = hb(&mut g, &beat("a", 1, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::FencedMemberEpoch.code());
        let r = hb(&mut g, &beat("a", 0, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
    }

    #[test]
    fn unknown_member_and_invalid_requests() {
        let mut g = ConsumerGroup::new("g".into());
        let t = topics(2);
        let r = hb(&mut g, &beat("ghost", 3, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());
        assert_eq!(
            r.error_message.as_deref(),
            Some("Member ghost is not a member of group g.")
        );
        let r = hb(&mut g, &beat("ghost", -1, None), &t, 0);
        assert_eq!(r.error_code, ResponseError::UnknownMemberId.code());

        let mut bad = join("a", None, &["foo"]);
        bad.server_assignor = Some(StrBytes::from_static_str("sticky"));
        let r = hb(&mut g, &bad, &t, 0);
        assert_eq!(r.error_code, ResponseError::UnsupportedAssignor.code());
        assert_eq!(
            r.error_message.as_deref(),
            Some("ServerAssignor sticky is not supported. Supported assignors: uniform, range.")
        );
        let mut bad = join("a", None, &["foo"]);
        bad.rebalance_timeout_ms = -1;
        let r = hb(&mut g, &bad, &t, 0);
        assert_eq!(r.error_code, ResponseError::InvalidRequest.code());
        let mut bad = join("a", None, &["foo"]);
        bad.subscribed_topic_regex = Some(StrBytes::from_static_str("foo("));
        let r = hb(&mut g, &bad, &t, 0);
        assert_eq!(r.error_code, ResponseError::InvalidRegularExpression.code());
        assert!(g.is_empty());
        assert_eq!(g.group_epoch(), 0);

        let limited = ConsumerGroupConfig {
            max_size: 1,
            ..config()
        };
        g.heartbeat(1, &join("a", None, &["foo"]), "c", "/h", &t, &limited, 0);
        let r = g.heartbeat(1, &join("b", None, &["foo"]), "c", "/h", &t, &limited, 0);
        assert_eq!(r.error_code, ResponseError::GroupMaxSizeReached.code());
    }
}
