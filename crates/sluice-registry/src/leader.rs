//! Which registry instance writes (Confluent's leader election). Several instances may
//! serve the same `_schemas`; exactly one writes, the others forward writes to it. They
//! elect it through a Kafka group (`schema.registry.group.id`, protocol type `sr`,
//! protocol `v0`), as Confluent's instances do: each member's metadata is its identity
//! (`{"version":1,"host":...,"port":...,"scheme":"http","leader_eligibility":true}`); the
//! group's leader member picks the registry leader among the eligible members (the current
//! one if it is still there, else the lowest member id) and hands every member the same
//! assignment (`{"version":1,"error":0,"leader":member,"leader_identity":{...}}`).
//!
//! Between a rebalance's start and its SyncGroup, the leader is [`Leader::Unknown`]: two
//! instances never both believe they lead within one generation. A new leader reads
//! `_schemas` to its end before its first write (the registry syncs before every write).

use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sluice_client::membership::{GroupMember, MemberConfig, leave_group};
use tokio::sync::watch;

/// Who takes writes, as this instance knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leader {
    /// This instance.
    Me,
    /// Another instance, by the base URL it serves (`http://host:port`).
    Remote(String),
    /// Between elections: writes get 50004 (unknown leader) until one is known.
    Unknown,
}

/// A member's identity in the group (Confluent's `SchemaRegistryIdentity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub version: i32,
    pub host: String,
    pub port: u16,
    pub scheme: String,
    pub leader_eligibility: bool,
}

impl Identity {
    pub fn url(&self) -> String {
        format!("{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// The assignment every member receives (Confluent's `SchemaRegistryProtocol.Assignment`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Assignment {
    version: i32,
    error: i16,
    leader: Option<String>,
    leader_identity: Option<Identity>,
}

/// How this instance takes part in the election.
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    pub bootstrap_servers: Vec<String>,
    pub group_id: String,
    pub identity: Identity,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub heartbeat_interval: Duration,
}

pub struct Leadership {
    group_id: String,
    state: watch::Receiver<Leader>,
    stop: std::sync::Mutex<Option<watch::Sender<bool>>>,
    task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    _single: Option<watch::Sender<Leader>>,
}

impl Leadership {
    /// An instance that always leads (a registry run alone, or forced).
    pub fn single(group_id: impl Into<String>) -> Leadership {
        Leadership::fixed(group_id, Leader::Me)
    }

    /// An instance that takes `leader` as given and never elects (an operator's fixed
    /// setup, and tests of forwarding).
    pub fn fixed(group_id: impl Into<String>, leader: Leader) -> Leadership {
        let (sender, state) = watch::channel(leader);
        Leadership {
            group_id: group_id.into(),
            state,
            stop: std::sync::Mutex::new(None),
            task: std::sync::Mutex::new(None),
            _single: Some(sender),
        }
    }

    /// Joins the election group; the leader becomes known after the first SyncGroup.
    pub fn elect(config: ElectionConfig) -> Leadership {
        let (sender, state) = watch::channel(Leader::Unknown);
        let (stop, stopped) = watch::channel(false);
        let group_id = config.group_id.clone();
        let task = tokio::spawn(run(config, sender, stopped));
        Leadership {
            group_id,
            state,
            stop: std::sync::Mutex::new(Some(stop)),
            task: std::sync::Mutex::new(Some(task)),
            _single: None,
        }
    }

    pub fn leader(&self) -> Leader {
        self.state.borrow().clone()
    }

    /// Waits until a leader is known (or `timeout` passes) and returns it.
    pub async fn wait_for_leader(&self, timeout: Duration) -> Leader {
        let mut state = self.state.clone();
        let _ = tokio::time::timeout(timeout, state.wait_for(|leader| *leader != Leader::Unknown))
            .await;
        self.leader()
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    /// Leaves the group (so another instance takes over at once, not after the session
    /// timeout) and stops.
    pub async fn shutdown(&self) {
        if let Some(stop) = self.stop.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = stop.send(true);
        }
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(task) = self.task.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            task.abort();
        }
    }
}

/// The member's loop: find the coordinator, join, sync, heartbeat; rejoin on a rebalance;
/// leave on stop.
async fn run(
    config: ElectionConfig,
    leader: watch::Sender<Leader>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut member_id = String::new();
    let mut current_leader: Option<String> = None;
    loop {
        if *stopped.borrow() {
            return;
        }
        leader.send_replace(Leader::Unknown);
        let outcome = tokio::select! {
            outcome = one_membership(&config, &mut member_id, &mut current_leader, &leader) => outcome,
            _ = stopped.changed() => Ok(()),
        };
        if *stopped.borrow() {
            leader.send_replace(Leader::Unknown);
            leave(&config, &member_id).await;
            return;
        }
        if let Err(e) = outcome {
            tracing::debug!("registry election in {}: {e}; rejoining", config.group_id);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

fn member_config(config: &ElectionConfig) -> MemberConfig {
    MemberConfig {
        bootstrap_servers: config.bootstrap_servers.clone(),
        client_id: "sluice-registry-election".to_string(),
        group_id: config.group_id.clone(),
        protocol_type: "sr".to_string(),
        session_timeout: config.session_timeout,
        rebalance_timeout: config.rebalance_timeout,
    }
}

/// Joins once and heartbeats until the generation ends (an error says why).
async fn one_membership(
    config: &ElectionConfig,
    member_id: &mut String,
    current_leader: &mut Option<String>,
    leader: &watch::Sender<Leader>,
) -> Result<(), String> {
    let mut member = GroupMember::connect(member_config(config), member_id.clone()).await?;
    let outcome = elect_in(config, &mut member, member_id, current_leader, leader).await;
    *member_id = member.member_id().to_string();
    outcome
}

async fn elect_in(
    config: &ElectionConfig,
    member: &mut GroupMember,
    member_id: &mut String,
    current_leader: &mut Option<String>,
    leader: &watch::Sender<Leader>,
) -> Result<(), String> {
    let metadata = Bytes::from(serde_json::to_vec(&config.identity).expect("serializes"));
    let generation = member.join(&[("v0", metadata)]).await;
    // Kept at once: a stop while this generation runs leaves with it.
    *member_id = member.member_id().to_string();
    let generation = generation?;
    let assignments = if generation.leading() {
        let members: Vec<(String, Option<Identity>)> = generation
            .members
            .iter()
            .map(|(id, metadata)| {
                (
                    id.clone(),
                    serde_json::from_slice::<Identity>(metadata).ok(),
                )
            })
            .collect();
        let assignment = choose(&members, current_leader.as_deref());
        let bytes = Bytes::from(serde_json::to_vec(&assignment).expect("serializes"));
        members
            .iter()
            .map(|(id, _)| (id.clone(), bytes.clone()))
            .collect()
    } else {
        Vec::new()
    };
    let bytes = member.sync(&generation, "v0", assignments).await?;
    let assignment: Assignment = serde_json::from_slice(&bytes)
        .map_err(|e| format!("the election assignment does not parse: {e}"))?;
    *current_leader = assignment.leader.clone();
    let now = match (&assignment.leader, &assignment.leader_identity) {
        (Some(id), _) if *id == generation.member_id => Leader::Me,
        (Some(_), Some(identity)) => Leader::Remote(identity.url()),
        _ => Leader::Unknown,
    };
    tracing::info!(
        "registry election in {} generation {}: leader {:?}",
        config.group_id,
        generation.generation_id,
        now
    );
    leader.send_replace(now);
    loop {
        tokio::time::sleep(config.heartbeat_interval).await;
        member.heartbeat(&generation).await?;
    }
}

/// The leader member's choice: the current leader while it is an eligible member, else
/// the eligible member with the lowest id; none when no member is eligible.
fn choose(members: &[(String, Option<Identity>)], current: Option<&str>) -> Assignment {
    let eligible = |(_, identity): &&(String, Option<Identity>)| {
        identity.as_ref().is_some_and(|i| i.leader_eligibility)
    };
    let chosen = members
        .iter()
        .filter(eligible)
        .find(|(id, _)| Some(id.as_str()) == current)
        .or_else(|| members.iter().filter(eligible).min_by(|a, b| a.0.cmp(&b.0)));
    Assignment {
        version: 1,
        error: 0,
        leader: chosen.map(|(id, _)| id.clone()),
        leader_identity: chosen.and_then(|(_, identity)| identity.clone()),
    }
}

async fn leave(config: &ElectionConfig, member_id: &str) {
    leave_group(&member_config(config), member_id).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(port: u16, eligible: bool) -> Option<Identity> {
        Some(Identity {
            version: 1,
            host: "127.0.0.1".into(),
            port,
            scheme: "http".into(),
            leader_eligibility: eligible,
        })
    }

    #[test]
    fn the_choice_keeps_the_current_leader_and_skips_ineligible_members() {
        let members = vec![
            ("a".to_string(), identity(1, false)),
            ("b".to_string(), identity(2, true)),
            ("c".to_string(), identity(3, true)),
            ("d".to_string(), None),
        ];
        assert_eq!(choose(&members, None).leader.as_deref(), Some("b"));
        assert_eq!(choose(&members, Some("c")).leader.as_deref(), Some("c"));
        assert_eq!(choose(&members, Some("a")).leader.as_deref(), Some("b"));
        assert_eq!(choose(&members[..1], None).leader, None);
        assert_eq!(
            choose(&members, None).leader_identity.unwrap().url(),
            "http://127.0.0.1:2"
        );
    }
}
