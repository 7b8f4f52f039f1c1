//! A member of a classic group with a protocol type of its own (what Kafka's
//! `AbstractCoordinator` does for groups that are not consumer groups): the schema
//! registry's `sr` election and Kafka Connect's `connect` workers. JoinGroup (learning
//! the member id from MEMBER_ID_REQUIRED, KIP-394), SyncGroup, Heartbeat and LeaveGroup
//! against the group's coordinator; what the protocol's metadata and assignments mean is
//! the caller's.
//!
//! One [`GroupMember`] serves one generation: a caller joins, syncs, heartbeats until an
//! error ends the generation, then connects again with the member id it kept
//! ([`GroupMember::member_id`]; cleared when the coordinator no longer knows it).

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::{Admin, ClientConfig, ErrorCode, Target};

/// How a member takes part in its group.
#[derive(Debug, Clone)]
pub struct MemberConfig {
    pub bootstrap_servers: Vec<String>,
    pub client_id: String,
    pub group_id: String,
    pub protocol_type: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
}

/// A generation as JoinGroup answered it.
#[derive(Debug, Clone)]
pub struct Generation {
    pub generation_id: i32,
    pub member_id: String,
    pub leader: String,
    /// The protocol the coordinator chose among those every member offered (JoinGroup
    /// v7+; empty before, when only one can have been offered in common).
    pub protocol: String,
    /// Every member's id and metadata (the leader's answer only; empty for followers).
    pub members: Vec<(String, Bytes)>,
}

impl Generation {
    pub fn leading(&self) -> bool {
        self.leader == self.member_id
    }
}

pub struct GroupMember {
    config: MemberConfig,
    admin: Admin,
    node: i32,
    member_id: String,
}

fn admin_config(config: &MemberConfig) -> ClientConfig {
    let mut client = ClientConfig::new(config.bootstrap_servers.clone());
    client.client_id = config.client_id.clone();
    // JoinGroup may wait for the whole rebalance.
    client.request_timeout_ms =
        (config.rebalance_timeout + Duration::from_secs(5)).as_millis() as u64;
    client
}

impl GroupMember {
    /// Finds the group's coordinator; `member_id` is the one kept from an earlier
    /// generation ("" for a first join).
    pub async fn connect(config: MemberConfig, member_id: String) -> Result<GroupMember, String> {
        let admin = Admin::connect(admin_config(&config))
            .await
            .map_err(|e| e.to_string())?;
        let node = admin
            .find_coordinator(&config.group_id, 0)
            .await
            .map_err(|e| e.to_string())?
            .node_id;
        Ok(GroupMember {
            config,
            admin,
            node,
            member_id,
        })
    }

    /// The member id to keep for the next generation.
    pub fn member_id(&self) -> &str {
        &self.member_id
    }

    fn group(&self) -> GroupId {
        GroupId(StrBytes::from_string(self.config.group_id.clone()))
    }

    /// Clears the member id when the coordinator no longer knows it, then turns the
    /// code into an error naming the request.
    fn check(&mut self, request: &str, code: ErrorCode) -> Result<(), String> {
        if code == ErrorCode::UNKNOWN_MEMBER_ID {
            self.member_id.clear();
        }
        code.check(None).map_err(|e| format!("{request}: {e}"))
    }

    /// JoinGroup with `protocols` (name, metadata), in preference order.
    pub async fn join(&mut self, protocols: &[(&str, Bytes)]) -> Result<Generation, String> {
        let protocols: Vec<JoinGroupRequestProtocol> = protocols
            .iter()
            .map(|(name, metadata)| {
                JoinGroupRequestProtocol::default()
                    .with_name(StrBytes::from_string(name.to_string()))
                    .with_metadata(metadata.clone())
            })
            .collect();
        loop {
            let member_id = self.member_id.clone();
            let response = self
                .admin
                .client()
                .send(Target::Node(self.node), |_| {
                    JoinGroupRequest::default()
                        .with_group_id(self.group())
                        .with_session_timeout_ms(self.config.session_timeout.as_millis() as i32)
                        .with_rebalance_timeout_ms(self.config.rebalance_timeout.as_millis() as i32)
                        .with_member_id(StrBytes::from_string(member_id.clone()))
                        .with_protocol_type(StrBytes::from_string(
                            self.config.protocol_type.clone(),
                        ))
                        .with_protocols(protocols.clone())
                })
                .await
                .map_err(|e| e.to_string())?;
            let code = ErrorCode(response.error_code);
            if code == ErrorCode::MEMBER_ID_REQUIRED {
                self.member_id = response.member_id.to_string();
                continue;
            }
            self.check("JoinGroup", code)?;
            self.member_id = response.member_id.to_string();
            return Ok(Generation {
                generation_id: response.generation_id,
                member_id: self.member_id.clone(),
                leader: response.leader.to_string(),
                protocol: response
                    .protocol_name
                    .as_ref()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                members: response
                    .members
                    .iter()
                    .map(|m| (m.member_id.to_string(), m.metadata.clone()))
                    .collect(),
            });
        }
    }

    /// SyncGroup: the leader hands every member its assignment (member id, bytes); a
    /// follower sends none. Returns this member's assignment.
    pub async fn sync(
        &mut self,
        generation: &Generation,
        protocol: &str,
        assignments: Vec<(String, Bytes)>,
    ) -> Result<Bytes, String> {
        let assignments: Vec<SyncGroupRequestAssignment> = assignments
            .into_iter()
            .map(|(member, bytes)| {
                SyncGroupRequestAssignment::default()
                    .with_member_id(StrBytes::from_string(member))
                    .with_assignment(bytes)
            })
            .collect();
        let response = self
            .admin
            .client()
            .send(Target::Node(self.node), |_| {
                SyncGroupRequest::default()
                    .with_group_id(self.group())
                    .with_generation_id(generation.generation_id)
                    .with_member_id(StrBytes::from_string(self.member_id.clone()))
                    .with_protocol_type(Some(StrBytes::from_string(
                        self.config.protocol_type.clone(),
                    )))
                    .with_protocol_name(Some(StrBytes::from_string(protocol.to_string())))
                    .with_assignments(assignments.clone())
            })
            .await
            .map_err(|e| e.to_string())?;
        self.check("SyncGroup", ErrorCode(response.error_code))?;
        Ok(response.assignment)
    }

    /// One Heartbeat; an error (REBALANCE_IN_PROGRESS among them) ends the generation.
    pub async fn heartbeat(&mut self, generation: &Generation) -> Result<(), String> {
        let response = self
            .admin
            .client()
            .send(Target::Node(self.node), |_| {
                HeartbeatRequest::default()
                    .with_group_id(self.group())
                    .with_generation_id(generation.generation_id)
                    .with_member_id(StrBytes::from_string(self.member_id.clone()))
            })
            .await
            .map_err(|e| e.to_string())?;
        let code = ErrorCode(response.error_code);
        if code == ErrorCode::NONE {
            return Ok(());
        }
        if code == ErrorCode::UNKNOWN_MEMBER_ID {
            self.member_id.clear();
        }
        Err(format!("Heartbeat: {code}"))
    }
}

/// Leaves the group (so the others rebalance at once, not after the session timeout).
/// Best effort: a member that cannot reach its coordinator is removed at its session's
/// end.
pub async fn leave_group(config: &MemberConfig, member_id: &str) {
    if member_id.is_empty() {
        return;
    }
    let Ok(admin) = Admin::connect(admin_config(config)).await else {
        return;
    };
    let Ok(coordinator) = admin.find_coordinator(&config.group_id, 0).await else {
        return;
    };
    let _ = admin
        .client()
        .send(Target::Node(coordinator.node_id), |version| {
            let request = LeaveGroupRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(config.group_id.clone())));
            if version >= 3 {
                request.with_members(vec![
                    MemberIdentity::default()
                        .with_member_id(StrBytes::from_string(member_id.to_string())),
                ])
            } else {
                request.with_member_id(StrBytes::from_string(member_id.to_string()))
            }
        })
        .await;
}
