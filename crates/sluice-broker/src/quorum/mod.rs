//! The metadata quorum: the metadata log replicated by Raft (openraft 0.9) among the
//! controllers (`controller.quorum.voters`), with broker-only nodes as learners that
//! receive every committed entry. A node with both roles and no other voter is a quorum
//! of one (Kafka's `kafka-storage format --standalone`).
//!
//! Raft's messages between nodes (AppendEntries, Vote, InstallSnapshot) and the
//! controller requests brokers make (a metadata write proposed to the leader, a
//! heartbeat, AlterPartition, joining as a learner) travel as JSON in Kafka-framed
//! requests with a private API key ([`RAFT_API_KEY`]) on the node's listeners; they
//! are Sluice's own, not KRaft's wire RPCs (openraft pushes entries, KRaft pulls them).
//! Kafka clients never see that key: ApiVersions does not list it.

pub mod error;
pub mod log_store;
pub mod rpc;
pub mod state_machine;

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{ClientWriteError, RaftError};
use openraft::{BasicNode, Config, Raft, ServerState};
use serde::{Deserialize, Serialize};
use sluice_metadata::{MetadataImage, MetadataRecord};

use crate::config::BrokerConfig;
pub use error::QuorumStartError;
pub use log_store::LogStore;
pub use rpc::{RAFT_API_KEY, RpcRequest, RpcResponse};
pub use state_machine::{OnApply, StateMachine};

pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The metadata quorum's types: an entry carries a batch of metadata records.
    pub TypeConfig:
        D = Proposal,
        R = ProposalResult,
);

/// A metadata change: records applied together or not at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// Each record encoded as Kafka frames a metadata record value.
    #[serde(with = "base64_list")]
    pub records: Vec<Vec<u8>>,
    /// Names this write across its retries (0: none). A write retried after a timeout
    /// or a leader change may be committed twice; the state machine answers the repeat
    /// with the first outcome and applies nothing (see [`StateMachine`]).
    #[serde(default)]
    pub write_id: u64,
    /// The partition epoch each changed partition had in the image the change was
    /// planned on: the entry is refused where a partition has moved on since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_on: Vec<PlannedOn>,
}

/// A partition change's precondition: the partition epoch it was planned against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedOn {
    pub topic_id: sluice_metadata::Uuid,
    pub partition: i32,
    pub partition_epoch: i32,
}

impl Proposal {
    /// A write of `records` with a new write id and no preconditions.
    pub fn new(records: &[MetadataRecord]) -> Proposal {
        Proposal {
            records: records
                .iter()
                .map(|r| {
                    r.encode(r.latest_version())
                        .expect("records Sluice builds encode at their latest version")
                })
                .collect(),
            write_id: rand::random::<u64>().max(1),
            planned_on: Vec::new(),
        }
    }

    /// A write of `records` planned on `image`: every partition change carries the
    /// partition epoch it had there (a partition the image does not have yet, created
    /// in the same write, has none).
    pub fn planned(records: &[MetadataRecord], image: &MetadataImage) -> Proposal {
        let mut proposal = Proposal::new(records);
        for record in records {
            let MetadataRecord::PartitionChange(change) = record else {
                continue;
            };
            let Some(partition) = image
                .topic_by_id(&change.topic_id)
                .and_then(|t| t.partitions.get(&change.partition_id))
            else {
                continue;
            };
            let planned = PlannedOn {
                topic_id: change.topic_id,
                partition: change.partition_id,
                partition_epoch: partition.partition_epoch,
            };
            if !proposal.planned_on.contains(&planned) {
                proposal.planned_on.push(planned);
            }
        }
        proposal
    }
}

/// What applying a proposal did: the Raft index it got and, when its records did not
/// replay on the image, why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalResult {
    pub error: Option<String>,
    /// Set when the refusal was a topic that already exists (its name).
    #[serde(default)]
    pub topic_exists: Option<String>,
    /// Set when the refusal was a partition that moved on from the epoch a change was
    /// planned on (the planner must plan again on a newer image).
    #[serde(default)]
    pub stale_partition: bool,
    pub index: u64,
}

mod base64_list {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(values: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let engine = base64::engine::general_purpose::STANDARD;
        s.collect_seq(values.iter().map(|v| engine.encode(v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let engine = base64::engine::general_purpose::STANDARD;
        Vec::<String>::deserialize(d)?
            .into_iter()
            .map(|s| engine.decode(s).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// The quorum as its leader sees it (what DescribeQuorum reports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumStatus {
    pub leader: i32,
    pub epoch: i32,
    /// The metadata log offset below which entries are committed.
    pub high_watermark: i64,
    pub voters: Vec<ReplicaStatus>,
    pub observers: Vec<ReplicaStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaStatus {
    pub id: i32,
    /// The metadata log offset up to which the leader knows this node's log matches.
    pub log_end_offset: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuorumError {
    #[error("the metadata change was refused: {0}")]
    Refused(String),
    #[error("topic {0} already exists")]
    TopicExists(String),
    /// A partition change planned on a partition epoch the partition has moved on
    /// from (Kafka's INVALID_UPDATE_VERSION): plan again on the current image.
    #[error("the metadata change was refused: {0}")]
    StalePartition(String),
    #[error("no active controller: {0}")]
    NoLeader(String),
    #[error("the metadata quorum is shut down")]
    Closed,
    #[error("this node is no longer the active controller")]
    NotController,
}

/// `controller.quorum.voters`: `id@host:port,...`.
pub fn parse_voters(text: &str) -> Result<BTreeMap<NodeId, String>, String> {
    let mut voters = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, address) = entry
            .split_once('@')
            .ok_or_else(|| format!("voter {entry:?} is not id@host:port"))?;
        let id: NodeId = id
            .parse()
            .map_err(|_| format!("voter {entry:?}: {id:?} is not a node id"))?;
        if address.rsplit_once(':').is_none() {
            return Err(format!("voter {entry:?}: {address:?} is not host:port"));
        }
        voters.insert(id, address.to_string());
    }
    Ok(voters)
}

/// A node's Raft instance and the stores under it.
pub struct Quorum {
    pub raft: Raft<TypeConfig>,
    pub node_id: NodeId,
    pub voters: BTreeMap<NodeId, String>,
    /// Where others reach this node's Raft endpoint.
    pub address: String,
    log: LogStore,
    /// How long one attempt of a write may wait to commit.
    attempt_timeout: Duration,
    /// A broker-only node's last leader vote confirmed with the leader itself
    /// ([`Self::admit_pushed`]).
    confirmed_vote: std::sync::Mutex<Option<openraft::Vote<NodeId>>>,
    /// `controller.quorum.bootstrap.servers`: where a broker-only node that knows no
    /// voter yet confirms a leadership.
    bootstrap_servers: Vec<String>,
}

impl std::fmt::Debug for Quorum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quorum")
            .field("node_id", &self.node_id)
            .field("voters", &self.voters)
            .finish_non_exhaustive()
    }
}

/// openraft's timers from Kafka's two quorum timeouts.
///
/// In KRaft a follower that hears nothing from the leader for
/// `controller.quorum.fetch.timeout.ms` (F) starts an election, and a candidate that
/// does not win within `controller.quorum.election.timeout.ms` (E) tries again. In
/// openraft 0.9 a follower of a committed leader elects once the leader's lease
/// (`election_timeout_max`) and then its own election timeout (fixed at start, drawn
/// from `[election_timeout_min, election_timeout_max]`) have passed without a message
/// from the leader, so it waits between `min + max` and `2 * max`; a candidate retries
/// after its election timeout. Mapping E to `[E, 2E]`, as before, made a follower wait
/// 3-4 s (E = 1000) where KRaft's waits 2 s (F = 2000): the active controller's loss
/// cost 1.5 s more than on Kafka. So the lease and timeout come from F: a follower
/// elects within `[3F/4, F]`, a candidate retries within `[F/4, F/2]`. Heartbeats go
/// every E/5 (Kafka's followers fetch continuously), at most a third of the shortest
/// election timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RaftTimers {
    election_min_ms: u64,
    election_max_ms: u64,
    heartbeat_ms: u64,
}

impl RaftTimers {
    fn from_kafka(election_timeout_ms: u64, fetch_timeout_ms: u64) -> RaftTimers {
        let election_max_ms = (fetch_timeout_ms / 2).max(40);
        let election_min_ms = (fetch_timeout_ms / 4).max(30);
        let heartbeat_ms = (election_timeout_ms / 5).min(election_min_ms / 3).max(10);
        RaftTimers {
            election_min_ms,
            election_max_ms,
            heartbeat_ms,
        }
    }

    /// The longest a follower of a live-then-silent leader waits before it elects.
    #[cfg(test)]
    fn longest_detection_ms(&self) -> u64 {
        2 * self.election_max_ms
    }
}

/// How long a write waits for a leader to appear or answer.
const WRITE_DEADLINE: Duration = Duration::from_secs(15);

impl Quorum {
    /// Opens the stores under `metadata_dir` and starts Raft. `voters` empty means this
    /// node alone (a controller with no configured voters). A voter whose log is empty
    /// initializes the quorum with the configured voters, as every voter may.
    pub async fn start(
        config: &BrokerConfig,
        metadata_dir: &Path,
        clean_shutdown: bool,
        address: String,
        voters: BTreeMap<NodeId, String>,
        on_apply: OnApply,
    ) -> Result<Quorum, QuorumStartError> {
        let node_id = NodeId::try_from(config.node_id()).map_err(|_| {
            QuorumStartError::Config(format!(
                "node.id {} is not a valid Raft node id (it must be 0 or more)",
                config.node_id()
            ))
        })?;
        let log = LogStore::open(metadata_dir, clean_shutdown)?;
        let machine = StateMachine::open(metadata_dir, on_apply)?;
        let settings = &config.settings().quorum;
        let election_ms = settings.election_timeout_ms;
        let timers = RaftTimers::from_kafka(election_ms, settings.fetch_timeout_ms);
        // Entries between snapshots (Kafka counts bytes,
        // `metadata.log.max.record.bytes.between.snapshots`; openraft counts entries).
        let snapshot_every = settings.entries_between_snapshots;
        let raft_config = Config {
            cluster_name: "sluice".into(),
            election_timeout_min: timers.election_min_ms,
            election_timeout_max: timers.election_max_ms,
            heartbeat_interval: timers.heartbeat_ms,
            install_snapshot_timeout: 10_000,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(snapshot_every),
            max_in_snapshot_log_to_keep: snapshot_every.min(100),
            ..Config::default()
        }
        .validate()
        .map_err(|e| QuorumStartError::Config(e.to_string()))?;
        let network = rpc::Network::new(Duration::from_millis(election_ms));
        let raft = Raft::new(
            node_id,
            Arc::new(raft_config),
            network,
            log.clone(),
            machine,
        )
        .await
        .map_err(|e| QuorumStartError::Raft(e.to_string()))?;
        let quorum = Quorum {
            raft,
            node_id,
            voters,
            address,
            log,
            attempt_timeout: Duration::from_millis(election_ms * 4).max(Duration::from_secs(2)),
            confirmed_vote: std::sync::Mutex::new(None),
            bootstrap_servers: settings.bootstrap_servers.clone(),
        };
        if quorum.is_voter() {
            let members: BTreeMap<NodeId, BasicNode> = quorum
                .voters
                .iter()
                .map(|(id, addr)| {
                    let addr = if *id == node_id {
                        quorum.address.clone()
                    } else {
                        addr.clone()
                    };
                    (*id, BasicNode { addr })
                })
                .collect();
            let initialized = quorum
                .raft
                .is_initialized()
                .await
                .map_err(|e| QuorumStartError::Raft(e.to_string()))?;
            if !initialized {
                match quorum.raft.initialize(members).await {
                    Ok(()) => {
                        tracing::info!(voters = ?quorum.voters, "initialized the metadata quorum")
                    }
                    Err(error) => tracing::debug!(%error, "quorum already initialized"),
                }
            } else if quorum.voters.len() == 1 {
                // A quorum of one need not wait an election timeout after a restart.
                let _ = quorum.raft.trigger().elect().await;
            }
        }
        Ok(quorum)
    }

    /// Whether this node votes (is among `controller.quorum.voters`).
    pub fn is_voter(&self) -> bool {
        self.voters.contains_key(&self.node_id)
    }

    /// The active controller (the Raft leader) and its address, if one is known.
    pub fn leader(&self) -> Option<(NodeId, String)> {
        let metrics = self.raft.metrics().borrow().clone();
        let leader = metrics.current_leader?;
        let addr = metrics
            .membership_config
            .membership()
            .get_node(&leader)
            .map(|n| n.addr.clone())
            .or_else(|| self.voters.get(&leader).cloned())?;
        Some((leader, addr))
    }

    pub fn is_leader(&self) -> bool {
        let metrics = self.raft.metrics().borrow().clone();
        metrics.state == ServerState::Leader
    }

    /// Whether this node is the active controller: it leads the quorum and has applied
    /// its own first entry of this term, so its image holds everything committed under
    /// earlier leaders (Kafka's new active controller replays the whole committed log
    /// before it acts). Between the election and that entry it answers
    /// NOT_CONTROLLER, as a Kafka controller still loading does.
    pub fn is_active_controller(&self) -> bool {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        metrics.state == ServerState::Leader
            && metrics
                .last_applied
                .is_some_and(|applied| applied.leader_id.term == metrics.current_term)
    }

    /// [`Self::is_active_controller`], confirmed with a majority of the voters, then
    /// every entry committed so far applied here. A controller that was paused or cut
    /// off still believes it leads; here it learns it was deposed before it plans
    /// anything on its image.
    pub async fn confirm_active_controller(&self, timeout: Duration) -> bool {
        self.is_active_controller()
            && matches!(
                tokio::time::timeout(timeout, self.raft.ensure_linearizable()).await,
                Ok(Ok(_))
            )
    }

    /// The quorum's state, when this node leads it.
    pub fn status(&self) -> Option<QuorumStatus> {
        let metrics = self.raft.metrics().borrow().clone();
        if metrics.state != ServerState::Leader {
            return None;
        }
        let replication = metrics.replication.clone().unwrap_or_default();
        let membership = metrics.membership_config.membership().clone();
        let replica = |id: NodeId| ReplicaStatus {
            id: id as i32,
            log_end_offset: if id == self.node_id {
                self.log.end_offset_and_epoch().0
            } else {
                self.log
                    .end_offset_after(replication.get(&id).copied().flatten().map(|l| l.index))
            },
        };
        Some(QuorumStatus {
            leader: self.node_id as i32,
            epoch: metrics.current_term as i32,
            high_watermark: self
                .log
                .end_offset_after(metrics.last_applied.map(|l| l.index)),
            voters: membership.voter_ids().map(replica).collect(),
            observers: membership.learner_ids().map(replica).collect(),
        })
    }

    /// The metadata log offset after the last entry applied here.
    pub fn applied_end_offset(&self) -> i64 {
        let applied = self.raft.metrics().borrow().last_applied.map(|l| l.index);
        self.log.end_offset_after(applied)
    }

    /// (end offset of the metadata log, epoch of its last entry).
    pub fn log_end(&self) -> (i64, i32) {
        self.log.end_offset_and_epoch()
    }

    /// Waits (bounded) until this node has applied `index`.
    pub async fn wait_applied(&self, index: u64, timeout: Duration) -> Result<(), QuorumError> {
        self.raft
            .wait(Some(timeout))
            .applied_index_at_least(Some(index), "a metadata write to be applied here")
            .await
            .map(|_| ())
            .map_err(|e| QuorumError::NoLeader(e.to_string()))
    }

    /// Waits (bounded) until a leader is known and this node has applied what it had
    /// committed at start: the image is then current enough to serve from.
    pub async fn wait_ready(&self, timeout: Duration) -> Result<(), QuorumError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut metrics = self.raft.metrics();
        loop {
            let ready = {
                let m = metrics.borrow();
                // A leader counts once a quorum acknowledged it (a node restarted
                // with a vote for itself claims to lead until it hears otherwise).
                m.current_leader.is_some()
                    && m.last_applied.is_some()
                    && (m.state != ServerState::Leader || m.millis_since_quorum_ack.is_some())
            };
            if ready {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, metrics.changed())
                .await
                .is_err()
            {
                return Err(QuorumError::NoLeader(format!(
                    "no leader elected within {} ms",
                    timeout.as_millis()
                )));
            }
        }
    }

    /// Writes `proposal` through the leader (here, or forwarded to it) and waits until
    /// this node has applied it. Returns the Raft index it got.
    ///
    /// For writes any node may make (a registration, a producer id block, a topic
    /// created from a request): what they check was checked where they are applied.
    /// A change the active controller planned goes through
    /// [`Self::propose_as_controller`] instead.
    pub async fn propose(&self, proposal: Proposal) -> Result<u64, QuorumError> {
        self.write(proposal, true).await
    }

    /// Writes a change this node planned as the active controller, here only: when
    /// this node no longer leads, the write fails with [`QuorumError::NotController`]
    /// and is not forwarded (the new controller plans from its own image; Kafka's
    /// controller never hands its plans to its successor). Retries after a timeout
    /// are safe: a repeat is answered with the first outcome.
    pub async fn propose_as_controller(&self, proposal: Proposal) -> Result<u64, QuorumError> {
        self.write(proposal, false).await
    }

    async fn write(&self, proposal: Proposal, forward: bool) -> Result<u64, QuorumError> {
        let deadline = tokio::time::Instant::now() + WRITE_DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(QuorumError::NoLeader(format!(
                    "the write was not committed within {} s (no majority of voters?)",
                    WRITE_DEADLINE.as_secs()
                )));
            }
            // Without a majority a leader's write never commits, and a leader deposed
            // while its write is pending may never answer it: each attempt is bounded
            // and the next goes to whoever leads then. (A retried write that the old
            // leader did commit is answered from the state machine's record of its
            // write id, not applied twice.)
            let attempt = left.min(self.attempt_timeout);
            let written =
                match tokio::time::timeout(attempt, self.raft.client_write(proposal.clone())).await
                {
                    Ok(written) => written,
                    Err(_) => {
                        tracing::debug!("metadata write not committed in time; retrying");
                        continue;
                    }
                };
            let outcome = match written {
                Ok(response) => Ok(response.data),
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(_))) if !forward => {
                    return Err(QuorumError::NotController);
                }
                Err(RaftError::APIError(ClientWriteError::ForwardToLeader(forward))) => {
                    match forward.leader_node {
                        Some(node) => match rpc::call(
                            &node.addr,
                            &RpcRequest::Propose(proposal.clone()),
                            WRITE_DEADLINE,
                        )
                        .await
                        {
                            Ok(RpcResponse::Propose(Ok(result))) => Ok(result),
                            Ok(RpcResponse::Propose(Err(reason))) => Err(reason),
                            Ok(other) => Err(format!("unexpected answer {other:?}")),
                            Err(error) => Err(error.to_string()),
                        },
                        None => Err("no leader known".into()),
                    }
                }
                Err(RaftError::Fatal(_)) => return Err(QuorumError::Closed),
                Err(error) => Err(error.to_string()),
            };
            match outcome {
                Ok(result) => {
                    if let Some(name) = result.topic_exists {
                        return Err(QuorumError::TopicExists(name));
                    }
                    if let Some(error) = result.error {
                        return Err(if result.stale_partition {
                            QuorumError::StalePartition(error)
                        } else {
                            QuorumError::Refused(error)
                        });
                    }
                    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                    self.wait_applied(result.index, left.max(Duration::from_secs(1)))
                        .await?;
                    return Ok(result.index);
                }
                Err(reason) => {
                    if tokio::time::Instant::now() >= deadline {
                        return Err(QuorumError::NoLeader(reason));
                    }
                    tracing::debug!(%reason, "metadata write not taken; retrying");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// Serves a write forwarded by another node: only the leader takes it.
    pub async fn propose_as_leader(&self, proposal: Proposal) -> Result<ProposalResult, String> {
        match tokio::time::timeout(WRITE_DEADLINE, self.raft.client_write(proposal)).await {
            Ok(written) => written
                .map(|response| response.data)
                .map_err(|e| e.to_string()),
            Err(_) => Err("the write was not committed in time (no majority of voters?)".into()),
        }
    }

    /// Whether a broker-only node takes `request`, which arrived on a listener its
    /// clients also reach (a learner is pushed the log there). Only the log's pushes
    /// (AppendEntries, InstallSnapshot) are taken, and only from the quorum's leader: a
    /// push claiming a leadership this node has not seen yet (a new term, a new
    /// leader) is taken once that voter, asked on its own controller endpoint,
    /// confirms it leads that term. A client cannot make the node adopt a forged term
    /// that would depose the real leader when the node answers it.
    pub async fn admit_pushed(&self, request: &RpcRequest) -> Result<(), String> {
        let vote = match request {
            RpcRequest::AppendEntries(rpc) => rpc.vote,
            RpcRequest::InstallSnapshot(rpc) => rpc.vote,
            other => {
                return Err(format!(
                    "quorum request {} is served only on a controller listener",
                    rpc::kind(other)
                ));
            }
        };
        let (term, leader) = (vote.leader_id().term, vote.leader_id().node_id);
        let (current_term, current_leader, mut addresses) = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            let membership = metrics.membership_config.membership();
            // The claimed leader's controller endpoint, as the log or the configured
            // voters know it.
            let mut addresses: Vec<String> = membership
                .voter_ids()
                .any(|id| id == leader)
                .then(|| membership.get_node(&leader).map(|n| n.addr.clone()))
                .flatten()
                .into_iter()
                .chain(self.voters.get(&leader).cloned())
                .collect();
            if membership.voter_ids().next().is_none() && self.voters.is_empty() {
                // Nothing known yet but the bootstrap servers: one of them leads.
                addresses.extend(self.bootstrap_servers.iter().cloned());
            }
            (metrics.current_term, metrics.current_leader, addresses)
        };
        addresses.dedup();
        // An older term is refused by Raft itself; the known leader's pushes pass.
        if term < current_term || (term == current_term && current_leader == Some(leader)) {
            return Ok(());
        }
        if *self
            .confirmed_vote
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            == Some(vote)
        {
            return Ok(());
        }
        if addresses.is_empty() {
            return Err(format!("a push from node {leader}, which is not a voter"));
        }
        let mut answers = Vec::new();
        for address in &addresses {
            match rpc::call(address, &RpcRequest::Status, Duration::from_secs(2)).await {
                Ok(RpcResponse::Status(Some(status)))
                    if status.leader as NodeId == leader && status.epoch as u64 == term =>
                {
                    *self
                        .confirmed_vote
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(vote);
                    return Ok(());
                }
                Ok(RpcResponse::Status(status)) => answers.push(format!(
                    "{address}: {}",
                    status.map_or("not the leader".to_string(), |s| format!(
                        "leader {} at epoch {}",
                        s.leader, s.epoch
                    ))
                )),
                Ok(other) => answers.push(format!("{address}: {other:?}")),
                Err(error) => answers.push(format!("{address}: {error}")),
            }
        }
        Err(format!(
            "a push claiming node {leader} leads term {term}, not confirmed ({})",
            answers.join("; ")
        ))
    }

    /// Adds a broker-only node as a learner (on the leader; forwarded otherwise).
    pub async fn add_learner(&self, node_id: NodeId, address: String) -> Result<(), String> {
        let members = self.raft.metrics().borrow().membership_config.clone();
        if members
            .membership()
            .get_node(&node_id)
            .is_some_and(|n| n.addr == address)
        {
            return Ok(());
        }
        self.raft
            .add_learner(node_id, BasicNode { addr: address }, false)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    pub async fn shutdown(&self) {
        if let Err(error) = self.raft.shutdown().await {
            tracing::error!(%error, "metadata quorum did not stop cleanly");
        }
        self.log.close();
    }
}

#[cfg(test)]
mod tests {
    use super::RaftTimers;

    #[test]
    fn a_follower_elects_within_the_fetch_timeout_as_in_kraft() {
        // Kafka's defaults: E = 1000, F = 2000. Before, the lease and timeout came from
        // E ([1000, 2000]) and a follower waited 3-4 s.
        let t = RaftTimers::from_kafka(1000, 2000);
        assert_eq!(
            t,
            RaftTimers {
                election_min_ms: 500,
                election_max_ms: 1000,
                heartbeat_ms: 166,
            }
        );
        assert!(t.election_min_ms + t.election_max_ms >= 1500);
        assert!(t.longest_detection_ms() <= 2000);
    }

    #[test]
    fn every_pair_of_kafka_timeouts_gives_timers_openraft_accepts() {
        for e in [0, 1, 20, 100, 1000, 5000, 60_000] {
            for f in [0, 1, 50, 500, 2000, 10_000, 120_000] {
                let t = RaftTimers::from_kafka(e, f);
                assert!(t.heartbeat_ms < t.election_min_ms, "{e} {f}: {t:?}");
                assert!(t.election_min_ms < t.election_max_ms, "{e} {f}: {t:?}");
                let config = openraft::Config {
                    election_timeout_min: t.election_min_ms,
                    election_timeout_max: t.election_max_ms,
                    heartbeat_interval: t.heartbeat_ms,
                    ..openraft::Config::default()
                };
                config
                    .validate()
                    .unwrap_or_else(|err| panic!("{e} {f}: {err}"));
            }
        }
    }
}
