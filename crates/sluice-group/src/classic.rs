//! A classic group (JoinGroup/SyncGroup/Heartbeat/LeaveGroup): Kafka's group state
//! machine, protocol-agnostic (the assignors run in the group leader, a client).
//!
//! States: Empty → PreparingRebalance (members join; the join phase ends when every
//! known member has rejoined or the rebalance timeout passes) → CompletingRebalance (the
//! leader computes the assignment and sends it with SyncGroup) → Stable. A member that
//! stops heartbeating for its session timeout is removed and the group rebalances.
//! Static members (KIP-345, `group.instance.id`) keep their place across a restart: a
//! rejoin under the same instance id within the session timeout gets the current
//! assignment without a rebalance; the old incarnation is fenced (FENCED_INSTANCE_ID).
//!
//! The group is plain state (the broker's coordinator keeps it behind its shard's
//! mutex); requests that wait (JoinGroup until the join phase ends, SyncGroup until the
//! leader's assignment is stored) get a tokio oneshot receiver. Deadlines are checked by [`ClassicGroup::tick`], which the
//! coordinator calls every few tens of milliseconds.

use std::collections::{HashMap, HashSet};

use bytes::Bytes;
use sluice_protocol::ErrorCode;
use tokio::sync::oneshot;

use crate::migration::{ClassicMemberSnapshot, ClassicSnapshot};
use crate::records::{GroupMetadataValue, MemberMetadata};

/// The Kafka error codes the classic state machine answers with
/// (`org.apache.kafka.common.protocol.Errors`).
mod errors {
    pub const NONE: i16 = 0;
    pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub const UNKNOWN_MEMBER_ID: i16 = 25;
    pub const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub const REBALANCE_IN_PROGRESS: i16 = 27;
    pub const MEMBER_ID_REQUIRED: i16 = 79;
    pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
    pub const FENCED_INSTANCE_ID: i16 = 82;
}

/// Kafka's classic group states, named as DescribeGroups and ListGroups print them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassicState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl ClassicState {
    pub fn as_str(self) -> &'static str {
        match self {
            ClassicState::Empty => "Empty",
            ClassicState::PreparingRebalance => "PreparingRebalance",
            ClassicState::CompletingRebalance => "CompletingRebalance",
            ClassicState::Stable => "Stable",
            ClassicState::Dead => "Dead",
        }
    }
}

/// The group settings a request is checked against (broker configs).
#[derive(Debug, Clone)]
pub struct ClassicConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub max_size: usize,
    pub initial_rebalance_delay_ms: i32,
    /// `group.consumer.migration.policy` allows a classic group with members to become
    /// a consumer group when a consumer-protocol member joins (KIP-848's online upgrade).
    pub upgrade_allowed: bool,
    /// ... and a consumer group left with only classic members to become classic again.
    pub downgrade_allowed: bool,
}

/// A JoinGroup request as a group sees it (classic, or a consumer group's classic
/// member).
pub type JoinRequest = crate::migration::ClassicJoin;

/// What a JoinGroup is answered.
#[derive(Debug, Clone, Default)]
pub struct JoinResult {
    pub error: i16,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    pub skip_assignment: bool,
    /// For the leader: every member with its metadata for the chosen protocol.
    pub members: Vec<(String, Option<String>, Bytes)>,
}

impl JoinResult {
    fn error(error: i16, member_id: &str) -> JoinResult {
        JoinResult {
            error,
            generation: -1,
            member_id: member_id.to_string(),
            ..Default::default()
        }
    }
}

/// What a SyncGroup is answered.
#[derive(Debug, Clone, Default)]
pub struct SyncResult {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResult {
    fn error(error: i16) -> SyncResult {
        SyncResult {
            error,
            ..Default::default()
        }
    }
}

/// A request's answer now, or later.
pub enum Reply<T> {
    Now(T),
    Later(oneshot::Receiver<T>),
}

/// What a leader's SyncGroup asks of the coordinator: store this group metadata, then
/// call [`ClassicGroup::finish_sync`] with the outcome, then wait on `reply`.
pub struct StoreAssignment {
    pub generation: i32,
    pub value: GroupMetadataValue,
    pub reply: oneshot::Receiver<SyncResult>,
}

pub enum SyncOutcome {
    Reply(Reply<SyncResult>),
    Store(StoreAssignment),
}

/// A member of a classic group.
#[derive(Debug)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    awaiting_join: Option<oneshot::Sender<JoinResult>>,
    awaiting_sync: Option<oneshot::Sender<SyncResult>>,
    /// When the member is removed unless it heartbeats (ms).
    session_deadline: i64,
    /// Whether it joined in the current rebalance and has not completed one yet.
    is_new: bool,
}

impl Member {
    /// The member's metadata for `protocol` (its subscription).
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| name == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }
}

/// A classic group's membership and rebalance state.
#[derive(Debug)]
pub struct ClassicGroup {
    pub group_id: String,
    pub state: ClassicState,
    /// When the group entered its state (ms), stored with the group metadata.
    pub state_timestamp: i64,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    /// In join order: the first is the leader when one is needed.
    pub members: Vec<Member>,
    /// group.instance.id → member id.
    static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, awaiting their second join, with
    /// the deadline after which they are forgotten.
    pending_members: HashMap<String, i64>,
    /// Members that have not sent SyncGroup in this generation.
    pending_sync: HashSet<String>,
    join_deadline: Option<i64>,
    /// Kafka's InitialDelayedJoin: how much longer the join phase may be extended.
    initial_delay: Option<(i64, i64)>,
    new_member_added: bool,
    sync_deadline: Option<i64>,
    /// Set when the stored group metadata is out of date (the coordinator writes it).
    pub dirty: bool,
}

fn new_member_id(client_id: &str) -> String {
    format!("{client_id}-{}", uuid::Uuid::from_bytes(rand::random()))
}

impl ClassicGroup {
    pub fn new(group_id: String, now: i64) -> ClassicGroup {
        ClassicGroup {
            group_id,
            state: ClassicState::Empty,
            state_timestamp: now,
            protocol_type: None,
            protocol: None,
            generation: 0,
            leader: None,
            members: Vec::new(),
            static_members: HashMap::new(),
            pending_members: HashMap::new(),
            pending_sync: HashSet::new(),
            join_deadline: None,
            initial_delay: None,
            new_member_added: false,
            sync_deadline: None,
            dirty: false,
        }
    }

    /// A group as its stored metadata says, at load: members get a fresh session.
    pub fn from_stored(group_id: String, value: &GroupMetadataValue, now: i64) -> ClassicGroup {
        let mut group = ClassicGroup::new(group_id, now);
        group.protocol_type = Some(value.protocol_type.clone()).filter(|t| !t.is_empty());
        group.protocol = value.protocol.clone();
        group.generation = value.generation;
        group.leader = value.leader.clone();
        group.state_timestamp = value.current_state_timestamp;
        for m in &value.members {
            let protocol = value.protocol.clone().unwrap_or_default();
            if let Some(id) = &m.group_instance_id {
                group.static_members.insert(id.clone(), m.member_id.clone());
            }
            group.members.push(Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: value.protocol_type.clone(),
                protocols: vec![(protocol, m.subscription.clone())],
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                session_deadline: now + i64::from(m.session_timeout_ms),
                is_new: false,
            });
        }
        group.state = if group.members.is_empty() {
            ClassicState::Empty
        } else {
            ClassicState::Stable
        };
        group
    }

    /// The group as KIP-848's online upgrade reads it.
    pub fn snapshot(&self) -> ClassicSnapshot {
        ClassicSnapshot {
            generation: self.generation,
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol: self.protocol.clone().unwrap_or_default(),
            leader: self.leader.clone(),
            members: self
                .members
                .iter()
                .map(|m| ClassicMemberSnapshot {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: m.session_timeout_ms,
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    protocols: m.protocols.clone(),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// The classic group a consumer group downgrades to (KIP-848's online downgrade):
    /// its members with their assignments, Stable, then rebalancing at once so that they
    /// rejoin and the group elects a leader that assigns again.
    pub fn from_downgrade(
        group_id: String,
        snapshot: &ClassicSnapshot,
        config: &ClassicConfig,
        now: i64,
    ) -> ClassicGroup {
        let mut group = ClassicGroup::new(group_id, now);
        group.generation = snapshot.generation;
        group.protocol_type = Some(snapshot.protocol_type.clone());
        group.protocol = Some(snapshot.protocol.clone()).filter(|p| !p.is_empty());
        for m in &snapshot.members {
            if let Some(instance) = &m.group_instance_id {
                group
                    .static_members
                    .insert(instance.clone(), m.member_id.clone());
            }
            group.members.push(Member {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                protocol_type: snapshot.protocol_type.clone(),
                protocols: m.protocols.clone(),
                assignment: m.assignment.clone(),
                awaiting_join: None,
                awaiting_sync: None,
                session_deadline: now + i64::from(m.session_timeout_ms),
                is_new: false,
            });
        }
        group.leader = group.members.first().map(|m| m.member_id.clone());
        group.state = ClassicState::Stable;
        group.dirty = true;
        group.prepare_rebalance(config, now);
        group
    }

    /// The group's metadata record value (members with their assignments).
    pub fn stored_value(&self) -> GroupMetadataValue {
        let protocol = self.protocol.clone().unwrap_or_default();
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_timestamp,
            members: self
                .members
                .iter()
                .map(|m| MemberMetadata {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout_ms: m.rebalance_timeout_ms,
                    session_timeout_ms: m.session_timeout_ms,
                    subscription: m.metadata(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Empty, and no member is between the two steps of its join.
    pub fn is_idle(&self) -> bool {
        self.state == ClassicState::Empty && self.pending_members.is_empty()
    }

    fn member(&self, member_id: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.member_id == member_id)
    }

    fn member_mut(&mut self, member_id: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.member_id == member_id)
    }

    fn transition(&mut self, state: ClassicState, now: i64) {
        self.state = state;
        self.state_timestamp = now;
    }

    /// The protocols every member supports.
    fn candidate_protocols(&self) -> Vec<String> {
        let Some(first) = self.members.first() else {
            return Vec::new();
        };
        first
            .protocols
            .iter()
            .map(|(name, _)| name.clone())
            .filter(|name| {
                self.members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == name))
            })
            .collect()
    }

    /// Whether a member with these protocols can join (Kafka's supportsProtocols).
    fn supports(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        self.protocol_type.as_deref() == Some(protocol_type)
            && self
                .candidate_protocols()
                .iter()
                .any(|c| protocols.iter().any(|(n, _)| n == c))
    }

    /// The protocol with the most first-choice votes among those all members support.
    fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: Vec<(String, usize)> = candidates.iter().map(|c| (c.clone(), 0)).collect();
        for member in &self.members {
            if let Some(choice) = member
                .protocols
                .iter()
                .find(|(n, _)| candidates.contains(n))
                .map(|(n, _)| n)
                && let Some(entry) = votes.iter_mut().find(|(c, _)| c == choice)
            {
                entry.1 += 1;
            }
        }
        // Ties go to the earlier candidate (the first member's preference).
        let best = votes.iter().map(|(_, v)| *v).max()?;
        votes.into_iter().find(|(_, v)| *v == best).map(|(c, _)| c)
    }

    fn max_rebalance_timeout(&self) -> i64 {
        self.members
            .iter()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    /// Serves a JoinGroup.
    pub fn join(
        &mut self,
        request: JoinRequest,
        config: &ClassicConfig,
        now: i64,
    ) -> Reply<JoinResult> {
        let member_id = request.member_id.clone();
        if request.session_timeout_ms < config.min_session_timeout_ms
            || request.session_timeout_ms > config.max_session_timeout_ms
        {
            return Reply::Now(JoinResult::error(
                errors::INVALID_SESSION_TIMEOUT,
                &member_id,
            ));
        }
        if self.state == ClassicState::Dead {
            return Reply::Now(JoinResult::error(
                errors::COORDINATOR_NOT_AVAILABLE,
                &member_id,
            ));
        }
        if !self.supports(&request.protocol_type, &request.protocols) {
            return Reply::Now(JoinResult::error(
                errors::INCONSISTENT_GROUP_PROTOCOL,
                &member_id,
            ));
        }
        if member_id.is_empty() {
            self.join_unknown(request, config, now)
        } else {
            self.join_known(request, config, now)
        }
    }

    fn join_unknown(
        &mut self,
        request: JoinRequest,
        config: &ClassicConfig,
        now: i64,
    ) -> Reply<JoinResult> {
        let new_id = new_member_id(&request.client_id);
        if let Some(instance) = request.group_instance_id.clone() {
            if let Some(old_id) = self.static_members.get(&instance).cloned() {
                return self.rejoin_static(request, old_id, new_id, now);
            }
        } else if request.version >= 4 {
            // KIP-394: the member id is handed out first and required on the next join.
            if self.members.len() + self.pending_members.len() >= config.max_size {
                return Reply::Now(JoinResult::error(errors::GROUP_MAX_SIZE_REACHED, ""));
            }
            self.pending_members
                .insert(new_id.clone(), now + i64::from(request.session_timeout_ms));
            return Reply::Now(JoinResult::error(errors::MEMBER_ID_REQUIRED, &new_id));
        }
        if self.members.len() >= config.max_size {
            return Reply::Now(JoinResult::error(errors::GROUP_MAX_SIZE_REACHED, ""));
        }
        self.add_member(request, new_id, config, now)
    }

    fn join_known(
        &mut self,
        request: JoinRequest,
        config: &ClassicConfig,
        now: i64,
    ) -> Reply<JoinResult> {
        let member_id = request.member_id.clone();
        if self.pending_members.remove(&member_id).is_some() {
            if self.members.len() >= config.max_size {
                return Reply::Now(JoinResult::error(
                    errors::GROUP_MAX_SIZE_REACHED,
                    &member_id,
                ));
            }
            return self.add_member(request, member_id, config, now);
        }
        if let Err(code) = self.validate_member(&member_id, request.group_instance_id.as_deref()) {
            return Reply::Now(JoinResult::error(code.0, &member_id));
        }
        match self.state {
            ClassicState::Empty | ClassicState::Dead => {
                Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, &member_id))
            }
            ClassicState::PreparingRebalance => {
                let reply = self.update_member(&request, now);
                self.try_complete_join(now);
                reply
            }
            ClassicState::CompletingRebalance | ClassicState::Stable => {
                let unchanged = self
                    .member(&member_id)
                    .is_some_and(|m| m.protocols == request.protocols);
                let is_leader = self.leader.as_deref() == Some(member_id.as_str());
                if unchanged && (self.state == ClassicState::CompletingRebalance || !is_leader) {
                    // The member lost the answer to its last join: give it again.
                    if let Some(m) = self.member_mut(&member_id) {
                        m.session_deadline = now + i64::from(request.session_timeout_ms);
                    }
                    Reply::Now(self.join_result(&member_id, false))
                } else {
                    let reply = self.update_member(&request, now);
                    self.prepare_rebalance(config, now);
                    reply
                }
            }
        }
    }

    /// A static member rejoining with a new incarnation (KIP-345): its old member id is
    /// fenced and replaced; a stable group keeps its assignment.
    fn rejoin_static(
        &mut self,
        request: JoinRequest,
        old_id: String,
        new_id: String,
        now: i64,
    ) -> Reply<JoinResult> {
        let Some(index) = self.members.iter().position(|m| m.member_id == old_id) else {
            return Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, ""));
        };
        // As Kafka (`updateStaticMemberThenRebalanceOrCompleteJoin`): the member's
        // subscription is replaced, and a Stable group rebalances only when that changes
        // the protocol the group would select; new subscription bytes alone (a restarted
        // consumer's generation -1 in them) do not.
        let previous_protocols = self.members[index].protocols.clone();
        self.members[index].protocols = request.protocols.clone();
        let protocol_changed = self.select_protocol() != self.protocol;
        self.members[index].protocols = previous_protocols;
        {
            let member = &mut self.members[index];
            if let Some(sender) = member.awaiting_join.take() {
                let _ = sender.send(JoinResult::error(errors::FENCED_INSTANCE_ID, &old_id));
            }
            if let Some(sender) = member.awaiting_sync.take() {
                let _ = sender.send(SyncResult::error(errors::FENCED_INSTANCE_ID));
            }
            member.member_id = new_id.clone();
            member.client_id = request.client_id.clone();
            member.client_host = request.client_host.clone();
            member.session_timeout_ms = request.session_timeout_ms;
            member.rebalance_timeout_ms = request.rebalance_timeout_ms;
            member.session_deadline = now + i64::from(request.session_timeout_ms);
        }
        if let Some(instance) = &request.group_instance_id {
            self.static_members.insert(instance.clone(), new_id.clone());
        }
        if self.leader.as_deref() == Some(old_id.as_str()) {
            self.leader = Some(new_id.clone());
        }
        if self.pending_sync.remove(&old_id) {
            self.pending_sync.insert(new_id.clone());
        }
        match self.state {
            ClassicState::Stable if !protocol_changed => {
                self.members[index].protocols = request.protocols.clone();
                self.dirty = true;
                let is_leader = self.leader.as_deref() == Some(new_id.as_str());
                let mut result = self.join_result(&new_id, is_leader);
                // The leader need not assign again (v9+ says so; older ones' SyncGroup in
                // Stable just returns the current assignment).
                result.skip_assignment = is_leader;
                Reply::Now(result)
            }
            ClassicState::Stable | ClassicState::CompletingRebalance => {
                let reply = self.update_member(
                    &JoinRequest {
                        member_id: new_id,
                        ..request
                    },
                    now,
                );
                let config = ClassicConfig {
                    min_session_timeout_ms: 0,
                    max_session_timeout_ms: i32::MAX,
                    max_size: usize::MAX,
                    initial_rebalance_delay_ms: 0,
                    upgrade_allowed: false,
                    downgrade_allowed: false,
                };
                self.prepare_rebalance(&config, now);
                reply
            }
            ClassicState::PreparingRebalance => {
                let reply = self.update_member(
                    &JoinRequest {
                        member_id: new_id,
                        ..request
                    },
                    now,
                );
                self.try_complete_join(now);
                reply
            }
            ClassicState::Empty | ClassicState::Dead => {
                Reply::Now(JoinResult::error(errors::UNKNOWN_MEMBER_ID, ""))
            }
        }
    }

    fn add_member(
        &mut self,
        request: JoinRequest,
        member_id: String,
        config: &ClassicConfig,
        now: i64,
    ) -> Reply<JoinResult> {
        if self.members.is_empty() {
            self.protocol_type = Some(request.protocol_type.clone());
        }
        if let Some(instance) = &request.group_instance_id {
            self.static_members
                .insert(instance.clone(), member_id.clone());
        }
        let (sender, receiver) = oneshot::channel();
        self.members.push(Member {
            member_id: member_id.clone(),
            group_instance_id: request.group_instance_id.clone(),
            client_id: request.client_id,
            client_host: request.client_host,
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            session_timeout_ms: request.session_timeout_ms,
            protocol_type: request.protocol_type,
            protocols: request.protocols,
            assignment: Bytes::new(),
            awaiting_join: Some(sender),
            awaiting_sync: None,
            session_deadline: now + i64::from(request.session_timeout_ms),
            is_new: true,
        });
        if self.leader.is_none() {
            self.leader = Some(member_id);
        }
        self.new_member_added = true;
        match self.state {
            ClassicState::PreparingRebalance => self.try_complete_join(now),
            _ => self.prepare_rebalance(config, now),
        }
        Reply::Later(receiver)
    }

    /// Records a known member's new join and makes it wait for the join phase's end.
    fn update_member(&mut self, request: &JoinRequest, now: i64) -> Reply<JoinResult> {
        let (sender, receiver) = oneshot::channel();
        let Some(member) = self.member_mut(&request.member_id) else {
            return Reply::Now(JoinResult::error(
                errors::UNKNOWN_MEMBER_ID,
                &request.member_id,
            ));
        };
        if let Some(old) = member.awaiting_join.replace(sender) {
            // A second join while the first waits: the first is superseded.
            let _ = old.send(JoinResult::error(
                errors::REBALANCE_IN_PROGRESS,
                &request.member_id,
            ));
        }
        member.protocols = request.protocols.clone();
        member.client_id = request.client_id.clone();
        member.client_host = request.client_host.clone();
        member.session_timeout_ms = request.session_timeout_ms;
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.session_deadline = now + i64::from(request.session_timeout_ms);
        Reply::Later(receiver)
    }

    /// Starts a rebalance: every member must rejoin within the rebalance timeout.
    fn prepare_rebalance(&mut self, config: &ClassicConfig, now: i64) {
        if self.state == ClassicState::CompletingRebalance {
            for member in &mut self.members {
                if let Some(sender) = member.awaiting_sync.take() {
                    let _ = sender.send(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
                }
            }
        }
        self.pending_sync.clear();
        self.sync_deadline = None;
        let delay = i64::from(config.initial_rebalance_delay_ms);
        if self.state == ClassicState::Empty && delay > 0 {
            let remaining = (self.max_rebalance_timeout() - delay).max(0);
            self.join_deadline = Some(now + delay);
            self.initial_delay = Some((delay, remaining));
            self.new_member_added = false;
            self.transition(ClassicState::PreparingRebalance, now);
        } else {
            self.join_deadline = Some(now + self.max_rebalance_timeout());
            self.initial_delay = None;
            self.transition(ClassicState::PreparingRebalance, now);
            self.try_complete_join(now);
        }
    }

    /// Ends the join phase when every member has rejoined (not during the initial
    /// delay, which only its timer ends).
    fn try_complete_join(&mut self, now: i64) {
        if self.state != ClassicState::PreparingRebalance || self.initial_delay.is_some() {
            return;
        }
        let all_joined = self.members.iter().all(|m| m.awaiting_join.is_some())
            && self.pending_members.is_empty();
        if all_joined {
            self.complete_join(now);
        }
    }

    fn complete_join(&mut self, now: i64) {
        // Members that did not rejoin in time are out.
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.awaiting_join.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in gone {
            self.remove(&id);
        }
        self.join_deadline = None;
        self.initial_delay = None;
        self.generation += 1;
        if self.members.is_empty() {
            // Stored now; a group with members is stored with its leader's assignment.
            self.dirty = true;
            self.protocol = None;
            self.leader = None;
            self.transition(ClassicState::Empty, now);
            return;
        }
        self.protocol = self.select_protocol();
        if self
            .leader
            .as_ref()
            .is_none_or(|l| self.member(l).is_none())
        {
            self.leader = self.members.first().map(|m| m.member_id.clone());
        }
        self.transition(ClassicState::CompletingRebalance, now);
        self.pending_sync = self.members.iter().map(|m| m.member_id.clone()).collect();
        self.sync_deadline = Some(now + self.max_rebalance_timeout());
        let leader = self.leader.clone().unwrap_or_default();
        let ids: Vec<String> = self.members.iter().map(|m| m.member_id.clone()).collect();
        for id in ids {
            let result = self.join_result(&id, id == leader);
            if let Some(member) = self.member_mut(&id) {
                member.is_new = false;
                member.session_deadline = now + i64::from(member.session_timeout_ms);
                if let Some(sender) = member.awaiting_join.take() {
                    let _ = sender.send(result);
                }
            }
        }
    }

    /// The current generation's join answer for a member.
    fn join_result(&self, member_id: &str, with_members: bool) -> JoinResult {
        let protocol = self.protocol.clone().unwrap_or_default();
        JoinResult {
            error: errors::NONE,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            skip_assignment: false,
            members: if with_members {
                self.members
                    .iter()
                    .map(|m| {
                        (
                            m.member_id.clone(),
                            m.group_instance_id.clone(),
                            m.metadata(&protocol),
                        )
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    /// Checks that a member id (and its instance id, for a static member) is current.
    pub fn validate_member(
        &self,
        member_id: &str,
        instance: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance) = instance {
            return match self.static_members.get(instance) {
                Some(id) if id == member_id => Ok(()),
                Some(_) => Err(ErrorCode::FENCED_INSTANCE_ID),
                None => Err(ErrorCode::UNKNOWN_MEMBER_ID),
            };
        }
        if self.member(member_id).is_some() {
            Ok(())
        } else {
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        }
    }

    fn check_generation(
        &self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> Result<(), ErrorCode> {
        if self.state == ClassicState::Dead {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
        self.validate_member(member_id, instance)?;
        if generation != self.generation {
            return Err(ErrorCode::ILLEGAL_GENERATION);
        }
        Ok(())
    }

    /// Serves a SyncGroup. `protocol_type`/`protocol_name` are checked when given (v5+).
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
        now: i64,
    ) -> SyncOutcome {
        let now_reply = |code| SyncOutcome::Reply(Reply::Now(SyncResult::error(code)));
        if let Err(code) = self.check_generation(member_id, instance, generation) {
            return now_reply(code.0);
        }
        if protocol_type.is_some_and(|t| Some(t) != self.protocol_type.as_deref())
            || protocol_name.is_some_and(|n| Some(n) != self.protocol.as_deref())
        {
            return now_reply(errors::INCONSISTENT_GROUP_PROTOCOL);
        }
        self.pending_sync.remove(member_id);
        match self.state {
            ClassicState::Empty | ClassicState::Dead => now_reply(errors::UNKNOWN_MEMBER_ID),
            ClassicState::PreparingRebalance => now_reply(errors::REBALANCE_IN_PROGRESS),
            ClassicState::Stable => {
                let Some(member) = self.member_mut(member_id) else {
                    return now_reply(errors::UNKNOWN_MEMBER_ID);
                };
                member.session_deadline = now + i64::from(member.session_timeout_ms);
                let assignment = member.assignment.clone();
                SyncOutcome::Reply(Reply::Now(self.sync_result(assignment)))
            }
            ClassicState::CompletingRebalance => {
                let is_leader = self.leader.as_deref() == Some(member_id);
                let (sender, receiver) = oneshot::channel();
                let Some(member) = self.member_mut(member_id) else {
                    return now_reply(errors::UNKNOWN_MEMBER_ID);
                };
                member.session_deadline = now + i64::from(member.session_timeout_ms);
                if let Some(old) = member.awaiting_sync.replace(sender) {
                    let _ = old.send(SyncResult::error(errors::REBALANCE_IN_PROGRESS));
                }
                if !is_leader {
                    return SyncOutcome::Reply(Reply::Later(receiver));
                }
                // The leader's assignment: stored first, then handed out.
                let mut value = self.stored_value();
                for member in &mut value.members {
                    member.assignment = assignments
                        .iter()
                        .find(|(id, _)| *id == member.member_id)
                        .map(|(_, a)| a.clone())
                        .unwrap_or_default();
                }
                value.current_state_timestamp = now;
                SyncOutcome::Store(StoreAssignment {
                    generation: self.generation,
                    value,
                    reply: receiver,
                })
            }
        }
    }

    /// After the leader's assignment was written (`stored` = the write's outcome, Kafka's
    /// error code): hands every waiting member its assignment and makes the group
    /// Stable, or fails them all and rebalances.
    pub fn finish_sync(
        &mut self,
        store: &GroupMetadataValue,
        generation: i32,
        stored: i16,
        config: &ClassicConfig,
        now: i64,
    ) {
        if self.state != ClassicState::CompletingRebalance || self.generation != generation {
            return;
        }
        if stored != errors::NONE {
            for member in &mut self.members {
                if let Some(sender) = member.awaiting_sync.take() {
                    let _ = sender.send(SyncResult::error(stored));
                }
            }
            self.prepare_rebalance(config, now);
            return;
        }
        for member in &mut self.members {
            member.assignment = store
                .members
                .iter()
                .find(|m| m.member_id == member.member_id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default();
        }
        self.transition(ClassicState::Stable, now);
        let results: Vec<SyncResult> = self
            .members
            .iter()
            .map(|m| self.sync_result(m.assignment.clone()))
            .collect();
        for (member, result) in self.members.iter_mut().zip(results) {
            if let Some(sender) = member.awaiting_sync.take() {
                let _ = sender.send(result);
            }
        }
    }

    fn sync_result(&self, assignment: Bytes) -> SyncResult {
        SyncResult {
            error: errors::NONE,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            assignment,
        }
    }

    /// Serves a Heartbeat.
    pub fn heartbeat(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        now: i64,
    ) -> i16 {
        if let Err(code) = self.check_generation(member_id, instance, generation) {
            return code.0;
        }
        let state = self.state;
        let Some(member) = self.member_mut(member_id) else {
            return errors::UNKNOWN_MEMBER_ID;
        };
        member.session_deadline = now + i64::from(member.session_timeout_ms);
        match state {
            ClassicState::Empty | ClassicState::Dead => errors::UNKNOWN_MEMBER_ID,
            ClassicState::PreparingRebalance => errors::REBALANCE_IN_PROGRESS,
            ClassicState::CompletingRebalance | ClassicState::Stable => errors::NONE,
        }
    }

    /// Serves one member of a LeaveGroup: by member id, or by instance id (an empty
    /// member id with a group.instance.id is an admin removing a static member).
    pub fn leave(
        &mut self,
        member_id: &str,
        instance: Option<&str>,
        config: &ClassicConfig,
        now: i64,
    ) -> i16 {
        if self.state == ClassicState::Dead {
            return errors::COORDINATOR_NOT_AVAILABLE;
        }
        let id = match instance {
            Some(instance) => match self.static_members.get(instance) {
                Some(id) if member_id.is_empty() || id == member_id => id.clone(),
                Some(_) => return errors::FENCED_INSTANCE_ID,
                None => return errors::UNKNOWN_MEMBER_ID,
            },
            None => {
                if self.pending_members.remove(member_id).is_some() {
                    self.try_complete_join(now);
                    return errors::NONE;
                }
                member_id.to_string()
            }
        };
        if self.member(&id).is_none() {
            return errors::UNKNOWN_MEMBER_ID;
        }
        self.remove_and_rebalance(&id, config, now);
        errors::NONE
    }

    fn remove_and_rebalance(&mut self, member_id: &str, config: &ClassicConfig, now: i64) {
        self.remove(member_id);
        match self.state {
            ClassicState::Stable | ClassicState::CompletingRebalance => {
                self.prepare_rebalance(config, now)
            }
            ClassicState::PreparingRebalance => self.try_complete_join(now),
            ClassicState::Empty | ClassicState::Dead => {}
        }
    }

    fn remove(&mut self, member_id: &str) {
        let Some(index) = self.members.iter().position(|m| m.member_id == member_id) else {
            return;
        };
        let member = self.members.remove(index);
        if let Some(sender) = member.awaiting_join {
            let _ = sender.send(JoinResult::error(errors::UNKNOWN_MEMBER_ID, member_id));
        }
        if let Some(sender) = member.awaiting_sync {
            let _ = sender.send(SyncResult::error(errors::UNKNOWN_MEMBER_ID));
        }
        if let Some(instance) = &member.group_instance_id {
            self.static_members.remove(instance);
        }
        self.pending_sync.remove(member_id);
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.members.first().map(|m| m.member_id.clone());
        }
    }

    /// Removes every member (DeleteGroups of an empty group, or the group's unload).
    pub fn fail_all(&mut self, code: i16) {
        for member in &mut self.members {
            if let Some(sender) = member.awaiting_join.take() {
                let _ = sender.send(JoinResult::error(code, &member.member_id));
            }
            if let Some(sender) = member.awaiting_sync.take() {
                let _ = sender.send(SyncResult::error(code));
            }
        }
    }

    /// Deadlines: expired sessions, the end of the join phase, members that never
    /// synced. Returns whether anything changed.
    pub fn tick(&mut self, config: &ClassicConfig, now: i64) -> bool {
        let mut changed = false;
        let before = self.pending_members.len();
        self.pending_members.retain(|_, deadline| *deadline > now);
        if self.pending_members.len() != before {
            changed = true;
            self.try_complete_join(now);
        }
        // Sessions (a member waiting in a join or sync is kept alive by it).
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|m| {
                m.session_deadline <= now && m.awaiting_join.is_none() && m.awaiting_sync.is_none()
            })
            .map(|m| m.member_id.clone())
            .collect();
        for id in expired {
            tracing::info!(group = %self.group_id, member = %id, "session expired; removing member");
            self.remove_and_rebalance(&id, config, now);
            changed = true;
        }
        if self.state == ClassicState::PreparingRebalance
            && let Some(deadline) = self.join_deadline
            && deadline <= now
        {
            match self.initial_delay {
                Some((delay, remaining)) if self.new_member_added && remaining > 0 => {
                    let step = delay.min(remaining);
                    self.join_deadline = Some(now + step);
                    self.initial_delay = Some((delay, remaining - step));
                    self.new_member_added = false;
                }
                _ => self.complete_join(now),
            }
            changed = true;
        }
        if matches!(
            self.state,
            ClassicState::CompletingRebalance | ClassicState::Stable
        ) && let Some(deadline) = self.sync_deadline
            && deadline <= now
        {
            self.sync_deadline = None;
            let unsynced: Vec<String> = self.pending_sync.drain().collect();
            if !unsynced.is_empty() {
                for id in &unsynced {
                    tracing::info!(group = %self.group_id, member = %id, "no SyncGroup within the rebalance timeout; removing member");
                    self.remove(id);
                }
                self.prepare_rebalance(config, now);
                changed = true;
            }
        }
        changed
    }

    /// Kafka's offset-commit checks for a classic group.
    pub fn validate_offset_commit(
        &self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
    ) -> Result<(), ErrorCode> {
        if self.state == ClassicState::Dead {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
        if generation < 0 && self.state == ClassicState::Empty {
            // An admin's or a simple consumer's commit.
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            self.validate_member(member_id, instance)?;
            if generation != self.generation {
                return Err(ErrorCode::ILLEGAL_GENERATION);
            }
        } else if self.state != ClassicState::Empty {
            return Err(ErrorCode::UNKNOWN_MEMBER_ID);
        }
        if self.state == ClassicState::CompletingRebalance {
            return Err(ErrorCode::REBALANCE_IN_PROGRESS);
        }
        Ok(())
    }

    /// The topics the members subscribe to, when the group uses the consumer protocol.
    pub fn subscribed_topics(&self) -> Option<HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let protocol = self.protocol.clone()?;
        let mut topics = HashSet::new();
        for member in &self.members {
            let metadata = member.metadata(&protocol);
            match sluice_protocol::consumer_protocol::decode_subscription(&metadata) {
                Ok(subscription) => topics.extend(subscription.topics),
                Err(_) => return None,
            }
        }
        Some(topics)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_codes_are_kafkas() {
        use kafka_protocol::error::ResponseError as E;
        for (code, error) in [
            (
                errors::COORDINATOR_NOT_AVAILABLE,
                E::CoordinatorNotAvailable,
            ),
            (ErrorCode::ILLEGAL_GENERATION.0, E::IllegalGeneration),
            (
                errors::INCONSISTENT_GROUP_PROTOCOL,
                E::InconsistentGroupProtocol,
            ),
            (errors::UNKNOWN_MEMBER_ID, E::UnknownMemberId),
            (errors::INVALID_SESSION_TIMEOUT, E::InvalidSessionTimeout),
            (errors::REBALANCE_IN_PROGRESS, E::RebalanceInProgress),
            (errors::MEMBER_ID_REQUIRED, E::MemberIdRequired),
            (errors::GROUP_MAX_SIZE_REACHED, E::GroupMaxSizeReached),
            (errors::FENCED_INSTANCE_ID, E::FencedInstanceId),
        ] {
            assert_eq!(code, error.code(), "{error:?}");
        }
        assert_eq!(errors::NONE, 0);
    }

    fn config() -> ClassicConfig {
        ClassicConfig {
            min_session_timeout_ms: 10,
            max_session_timeout_ms: 100_000,
            max_size: 10,
            initial_rebalance_delay_ms: 0,
            upgrade_allowed: true,
            downgrade_allowed: true,
        }
    }

    fn request(member_id: &str, instance: Option<&str>, protocols: &[&str]) -> JoinRequest {
        JoinRequest {
            version: 9,
            member_id: member_id.into(),
            group_instance_id: instance.map(str::to_string),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 1000,
            rebalance_timeout_ms: 2000,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| (p.to_string(), Bytes::from(p.to_string())))
                .collect(),
        }
    }

    fn now_result(reply: Reply<JoinResult>) -> JoinResult {
        match reply {
            Reply::Now(result) => result,
            Reply::Later(mut receiver) => receiver.try_recv().expect("answered"),
        }
    }

    /// Joins a new dynamic member (two requests, KIP-394); returns its id and the
    /// pending join.
    fn join_new(
        group: &mut ClassicGroup,
        protocols: &[&str],
        now: i64,
    ) -> (String, Reply<JoinResult>) {
        let first = now_result(group.join(request("", None, protocols), &config(), now));
        assert_eq!(first.error, errors::MEMBER_ID_REQUIRED);
        let id = first.member_id.clone();
        let reply = group.join(request(&id, None, protocols), &config(), now);
        (id, reply)
    }

    #[test]
    fn first_member_becomes_leader_and_group_completes_at_once_without_delay() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let (id, reply) = join_new(&mut group, &["range", "roundrobin"], 0);
        let result = now_result(reply);
        assert_eq!(result.error, errors::NONE);
        assert_eq!(result.generation, 1);
        assert_eq!(result.leader, id);
        assert_eq!(result.protocol_name.as_deref(), Some("range"));
        assert_eq!(result.members.len(), 1);
        assert_eq!(group.state, ClassicState::CompletingRebalance);
        let SyncOutcome::Store(store) = group.sync(
            &id,
            None,
            1,
            None,
            None,
            vec![(id.clone(), Bytes::from_static(b"a"))],
            1,
        ) else {
            panic!("the leader's sync stores the assignment");
        };
        group.finish_sync(&store.value, store.generation, errors::NONE, &config(), 1);
        let mut reply = store.reply;
        let sync = reply.try_recv().unwrap();
        assert_eq!(sync.assignment, Bytes::from_static(b"a"));
        assert_eq!(group.state, ClassicState::Stable);
    }

    #[test]
    fn second_member_triggers_rebalance_and_common_protocol_wins() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let (a, reply) = join_new(&mut group, &["roundrobin", "range"], 0);
        now_result(reply);
        let SyncOutcome::Store(store) = group.sync(&a, None, 1, None, None, vec![], 1) else {
            panic!()
        };
        group.finish_sync(&store.value, 1, errors::NONE, &config(), 1);
        let (b, b_reply) = join_new(&mut group, &["range"], 2);
        assert_eq!(group.state, ClassicState::PreparingRebalance);
        assert_eq!(
            group.heartbeat(&a, None, 1, 3),
            errors::REBALANCE_IN_PROGRESS
        );
        let Reply::Later(mut b_reply) = b_reply else {
            panic!("b waits for a")
        };
        assert!(b_reply.try_recv().is_err());
        let a_result =
            now_result(group.join(request(&a, None, &["roundrobin", "range"]), &config(), 4));
        let b_result = b_reply.try_recv().unwrap();
        assert_eq!(a_result.generation, 2);
        assert_eq!(b_result.generation, 2);
        assert_eq!(a_result.protocol_name.as_deref(), Some("range"));
        assert_eq!(a_result.leader, a);
        assert_eq!(a_result.members.len(), 2);
        assert!(b_result.members.is_empty());
        assert_eq!(b_result.member_id, b);
        // An old generation's heartbeat is refused.
        assert_eq!(
            group.heartbeat(&a, None, 1, 5),
            ErrorCode::ILLEGAL_GENERATION.0
        );
        assert_eq!(group.heartbeat(&a, None, 2, 5), errors::NONE);
    }

    #[test]
    fn inconsistent_protocols_are_refused() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let (_, reply) = join_new(&mut group, &["range"], 0);
        now_result(reply);
        let result = now_result(group.join(request("", None, &["sticky"]), &config(), 1));
        assert_eq!(result.error, errors::INCONSISTENT_GROUP_PROTOCOL);
    }

    #[test]
    fn expired_session_removes_member_and_rebalances() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let (a, reply) = join_new(&mut group, &["range"], 0);
        now_result(reply);
        let SyncOutcome::Store(store) = group.sync(&a, None, 1, None, None, vec![], 0) else {
            panic!()
        };
        group.finish_sync(&store.value, 1, errors::NONE, &config(), 0);
        assert!(!group.tick(&config(), 999));
        assert!(group.tick(&config(), 1001));
        assert!(group.is_empty());
        assert_eq!(group.state, ClassicState::Empty);
        assert_eq!(group.generation, 2);
        assert!(group.dirty);
    }

    #[test]
    fn static_member_rejoin_keeps_assignment_and_fences_old_id() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let result = now_result(group.join(request("", Some("i1"), &["range"]), &config(), 0));
        assert_eq!(
            result.error,
            errors::NONE,
            "static members need no second join"
        );
        let old = result.member_id;
        let SyncOutcome::Store(store) = group.sync(
            &old,
            Some("i1"),
            1,
            None,
            None,
            vec![(old.clone(), Bytes::from_static(b"p0"))],
            0,
        ) else {
            panic!()
        };
        group.finish_sync(&store.value, 1, errors::NONE, &config(), 0);
        let again = now_result(group.join(request("", Some("i1"), &["range"]), &config(), 10));
        assert_eq!(again.error, errors::NONE);
        assert_eq!(again.generation, 1, "no rebalance");
        assert_ne!(again.member_id, old);
        assert_eq!(group.state, ClassicState::Stable);
        assert_eq!(
            group.heartbeat(&old, Some("i1"), 1, 11),
            errors::FENCED_INSTANCE_ID
        );
        let SyncOutcome::Reply(Reply::Now(sync)) =
            group.sync(&again.member_id, Some("i1"), 1, None, None, vec![], 12)
        else {
            panic!()
        };
        assert_eq!(sync.assignment, Bytes::from_static(b"p0"));
    }

    /// Kafka rebalances a Stable group on a static member's rejoin only when the
    /// protocol it would select changes, not for new subscription bytes.
    #[test]
    fn static_rejoin_rebalances_only_when_the_selected_protocol_changes() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let first = now_result(group.join(
            request("", Some("i1"), &["range", "roundrobin"]),
            &config(),
            0,
        ));
        let SyncOutcome::Store(store) = group.sync(
            &first.member_id,
            Some("i1"),
            1,
            None,
            None,
            vec![(first.member_id.clone(), Bytes::from_static(b"p0"))],
            0,
        ) else {
            panic!()
        };
        group.finish_sync(&store.value, 1, errors::NONE, &config(), 0);
        // Same protocol, other subscription bytes (a restarted consumer's generation -1).
        let mut changed_bytes = request("", Some("i1"), &["range", "roundrobin"]);
        changed_bytes.protocols[0].1 = Bytes::from_static(b"range with generation -1");
        let again = now_result(group.join(changed_bytes, &config(), 10));
        assert_eq!((again.error, again.generation), (errors::NONE, 1));
        assert_eq!(group.state, ClassicState::Stable);
        // The member's new subscription is what the group now holds.
        assert_eq!(
            group.members[0].protocols[0].1,
            Bytes::from_static(b"range with generation -1")
        );
        // Another first choice, so another selected protocol: the group rebalances.
        let other = group.join(
            request("", Some("i1"), &["roundrobin", "range"]),
            &config(),
            20,
        );
        drop(other);
        assert_ne!(group.state, ClassicState::Stable);
    }

    #[test]
    fn offset_commit_checks() {
        let mut group = ClassicGroup::new("g".into(), 0);
        assert_eq!(group.validate_offset_commit("", None, -1), Ok(()));
        let (a, reply) = join_new(&mut group, &["range"], 0);
        now_result(reply);
        assert_eq!(
            group.validate_offset_commit(&a, None, 1),
            Err(ErrorCode::REBALANCE_IN_PROGRESS)
        );
        let SyncOutcome::Store(store) = group.sync(&a, None, 1, None, None, vec![], 0) else {
            panic!()
        };
        group.finish_sync(&store.value, 1, errors::NONE, &config(), 0);
        assert_eq!(group.validate_offset_commit(&a, None, 1), Ok(()));
        assert_eq!(
            group.validate_offset_commit(&a, None, 0),
            Err(ErrorCode::ILLEGAL_GENERATION)
        );
        assert_eq!(
            group.validate_offset_commit("x", None, 1),
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        );
        assert_eq!(
            group.validate_offset_commit("", None, -1),
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        );
    }

    #[test]
    fn leave_of_last_member_empties_group() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let (a, reply) = join_new(&mut group, &["range"], 0);
        now_result(reply);
        assert_eq!(group.leave(&a, None, &config(), 1), errors::NONE);
        assert_eq!(group.state, ClassicState::Empty);
        assert_eq!(
            group.leave(&a, None, &config(), 2),
            errors::UNKNOWN_MEMBER_ID
        );
    }

    #[test]
    fn stored_group_round_trips_through_its_record() {
        let mut group = ClassicGroup::new("g".into(), 0);
        let (a, reply) = join_new(&mut group, &["range"], 0);
        now_result(reply);
        let SyncOutcome::Store(store) = group.sync(
            &a,
            None,
            1,
            None,
            None,
            vec![(a.clone(), Bytes::from_static(b"x"))],
            5,
        ) else {
            panic!()
        };
        group.finish_sync(&store.value, 1, errors::NONE, &config(), 5);
        let loaded = ClassicGroup::from_stored("g".into(), &group.stored_value(), 7);
        assert_eq!(loaded.state, ClassicState::Stable);
        assert_eq!(loaded.generation, 1);
        assert_eq!(loaded.leader.as_deref(), Some(a.as_str()));
        assert_eq!(loaded.members[0].assignment, Bytes::from_static(b"x"));
        assert_eq!(loaded.validate_member(&a, None), Ok(()));
    }
}
