//! Node-to-node requests of the quorum: JSON bodies in Kafka request frames with a
//! private API key, so they share the listeners, the framing and the size limit of
//! Kafka requests.
//!
//! Request frame: size, API key [`RAFT_API_KEY`], version 0, correlation id, a null
//! client id (request header v1), then the JSON of an [`RpcRequest`]. Response frame:
//! size, correlation id (response header v0), then the JSON of an [`RpcResponse`].
//! The calling side ([`Connection`]) sends them over `sluice-protocol`'s
//! `FrameConnection`, the frame layer of every Sluice client connection; the answering
//! side is the broker's listener (`network.rs`).

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use openraft::BasicNode;
use openraft::error::{
    InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use serde::{Deserialize, Serialize};
use sluice_protocol::connection::{ConnectionError, ConnectionSettings, FrameConnection};
use sluice_protocol::frame::{self, FrameError};

use super::types::{NodeId, Proposal, ProposalResult, TypeConfig};

/// A client request relayed to the active controller.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Forwarded {
    pub api_key: i16,
    pub version: i16,
    pub client_id: Option<String>,
    pub client_host: String,
    /// Who the request acts as on the node that received it.
    #[serde(default)]
    pub principal: crate::principal::Principal,
    /// The request body after its header.
    pub body: Vec<u8>,
}

/// The controller's answer to a [`Forwarded`] request.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ForwardedReply {
    /// The response body, at the request's version.
    Respond(Vec<u8>),
    /// The request could not be served (malformed): the client's connection closes.
    Close(String),
    /// This node is not the active controller.
    NotController,
}

/// The API key of quorum requests: outside Kafka's range, never advertised.
pub const RAFT_API_KEY: i16 = 32_100;
/// Responses larger than this are refused (a snapshot chunk is far smaller).
const MAX_RESPONSE_BYTES: usize = 256 << 20;

/// A broker's liveness report to the active controller (Kafka's BrokerHeartbeat).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Heartbeat {
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The broker is stopping: move its leaderships away (controlled shutdown).
    pub want_shutdown: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HeartbeatReply {
    /// Kafka's error code (NONE, NOT_CONTROLLER, STALE_BROKER_EPOCH, ...).
    pub error: i16,
    pub fenced: bool,
    /// The controller has moved every leadership away: the broker may stop.
    pub should_shut_down: bool,
}

/// A partition leader's ISR change (Kafka's AlterPartition).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AlterPartition {
    pub broker_id: i32,
    pub topic_id: [u8; 16],
    pub partition: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<i32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum RpcRequest {
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    Vote(VoteRequest<NodeId>),
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// A metadata write for the leader.
    Propose(Proposal),
    /// A broker-only node asks to receive the log (as a learner) at this address.
    Join {
        node_id: NodeId,
        address: String,
    },
    Heartbeat(Heartbeat),
    /// Answered with the Raft index of the change, or Kafka's error code.
    AlterPartition(AlterPartition),
    /// The leader's view of the quorum (DescribeQuorum on another node).
    Status,
    /// The cluster id (a broker-only node that knows only the bootstrap servers asks it
    /// before stamping its log directories).
    ClusterId,
    /// A client request for the active controller ([`crate::forwarding`]).
    Forward(Forwarded),
}

#[derive(Debug, Serialize, Deserialize)]
#[allow(clippy::large_enum_variant)]
pub enum RpcResponse {
    AppendEntries(Result<AppendEntriesResponse<NodeId>, RaftError<NodeId>>),
    Vote(Result<VoteResponse<NodeId>, RaftError<NodeId>>),
    InstallSnapshot(
        Result<InstallSnapshotResponse<NodeId>, RaftError<NodeId, InstallSnapshotError>>,
    ),
    Propose(Result<ProposalResult, String>),
    Join(Result<(), String>),
    Heartbeat(HeartbeatReply),
    AlterPartition(Result<u64, i16>),
    Status(Option<super::types::QuorumStatus>),
    ClusterId(String),
    Forwarded(ForwardedReply),
    /// The request did not decode or is not served here.
    Refused(String),
}

/// A request's name, for logs and refusals.
pub fn kind(request: &RpcRequest) -> &'static str {
    match request {
        RpcRequest::AppendEntries(_) => "AppendEntries",
        RpcRequest::Vote(_) => "Vote",
        RpcRequest::InstallSnapshot(_) => "InstallSnapshot",
        RpcRequest::Propose(_) => "Propose",
        RpcRequest::Join { .. } => "Join",
        RpcRequest::Heartbeat(_) => "Heartbeat",
        RpcRequest::AlterPartition(_) => "AlterPartition",
        RpcRequest::Status => "Status",
        RpcRequest::ClusterId => "ClusterId",
        RpcRequest::Forward(_) => "Forward",
    }
}

/// Encodes a request frame.
pub fn encode_request(correlation_id: i32, request: &RpcRequest) -> Result<Bytes, FrameError> {
    let body = serde_json::to_vec(request).expect("quorum requests serialize");
    let mut out = frame::size_prefix(10 + body.len());
    out.put_i16(RAFT_API_KEY);
    out.put_i16(0);
    out.put_i32(correlation_id);
    out.put_i16(-1);
    out.extend_from_slice(&body);
    frame::finish_frame(out)
}

/// Decodes the body of a request frame (after the size), returning the correlation id
/// and the request.
pub fn decode_request(mut frame: Bytes) -> Result<(i32, RpcRequest), String> {
    if frame.len() < 10 {
        return Err("a quorum request shorter than its header".into());
    }
    frame.advance(4); // API key, version
    let correlation_id = frame.get_i32();
    let client_id_len = frame.get_i16();
    if client_id_len > 0 {
        let len = client_id_len as usize;
        if frame.len() < len {
            return Err("a quorum request's client id runs past its end".into());
        }
        frame.advance(len);
    }
    let request = serde_json::from_slice(&frame).map_err(|e| format!("quorum request: {e}"))?;
    Ok((correlation_id, request))
}

/// Encodes a response frame.
pub fn encode_response(correlation_id: i32, response: &RpcResponse) -> Result<Bytes, FrameError> {
    let body = serde_json::to_vec(response).expect("quorum responses serialize");
    let mut out = frame::size_prefix(4 + body.len());
    out.put_i32(correlation_id);
    out.extend_from_slice(&body);
    frame::finish_frame(out)
}

/// A connection to one node, opened on first use and again after an error (any error
/// closes it), over `sluice-protocol`'s [`FrameConnection`]: the frame layer the client
/// and the broker-to-broker calls use too.
pub struct Connection {
    address: String,
    open: Option<FrameConnection>,
}

impl Connection {
    pub fn new(address: String) -> Connection {
        Connection {
            address,
            open: None,
        }
    }

    /// Sends `request` and waits for its response; `timeout` bounds the whole call,
    /// connecting included.
    pub async fn call(
        &mut self,
        request: &RpcRequest,
        timeout: Duration,
    ) -> Result<RpcResponse, ConnectionError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let result = self.exchange(request, deadline).await;
        if result.is_err() {
            self.open = None;
        }
        result
    }

    async fn exchange(
        &mut self,
        request: &RpcRequest,
        deadline: tokio::time::Instant,
    ) -> Result<RpcResponse, ConnectionError> {
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let connection = match &mut self.open {
            Some(open) if !open.is_closed() => open,
            slot => {
                let settings = ConnectionSettings {
                    response_max_bytes: MAX_RESPONSE_BYTES,
                    max_in_flight_requests: 1,
                };
                let opened =
                    FrameConnection::connect(&self.address, left(), settings, None).await?;
                slot.insert(opened)
            }
        };
        let correlation_id = connection.next_correlation_id();
        let frame = encode_request(correlation_id, request).map_err(|error| {
            ConnectionError::Disconnected {
                address: self.address.clone(),
                reason: format!("{} request: {error}", kind(request)),
            }
        })?;
        let mut body = connection.request(correlation_id, frame, left()).await?;
        body.advance(4); // the correlation id, which the frame layer matched
        serde_json::from_slice(&body).map_err(|error| {
            let reason = format!("{} response does not decode: {error}", kind(request));
            connection.close(reason.clone());
            ConnectionError::Disconnected {
                address: self.address.clone(),
                reason,
            }
        })
    }
}

/// One request on a fresh connection.
pub async fn call(
    address: &str,
    request: &RpcRequest,
    timeout: Duration,
) -> Result<RpcResponse, ConnectionError> {
    Connection::new(address.to_string())
        .call(request, timeout)
        .await
}

/// openraft's view of the network: one [`Connection`] per peer.
pub struct Network {
    timeout: Duration,
}

impl Network {
    pub fn new(timeout: Duration) -> Network {
        Network { timeout }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = Peer;

    async fn new_client(&mut self, target: NodeId, node: &BasicNode) -> Peer {
        Peer {
            target,
            connection: Connection::new(node.addr.clone()),
            timeout: self.timeout,
        }
    }
}

pub struct Peer {
    target: NodeId,
    connection: Connection,
    timeout: Duration,
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl Peer {
    async fn send(
        &mut self,
        request: RpcRequest,
        option: &RPCOption,
    ) -> Result<RpcResponse, Unreachable> {
        // openraft's hard TTL for a heartbeat is its interval (a fifth of the election
        // timeout here): too tight for two busy cores, where an answer 200 ms late is
        // not a dead peer. Wait up to the election timeout, as KRaft waits up to
        // `controller.quorum.fetch.timeout.ms`.
        let timeout = option
            .hard_ttl()
            .max(self.timeout)
            .max(Duration::from_millis(50));
        self.connection
            .call(&request, timeout)
            .await
            .map_err(|e| Unreachable::new(&e))
    }

    fn unexpected<E: std::error::Error>(
        &self,
        response: RpcResponse,
    ) -> RPCError<NodeId, BasicNode, RaftError<NodeId, E>> {
        let error = std::io::Error::other(format!(
            "unexpected answer from node {}: {response:?}",
            self.target
        ));
        RPCError::Network(NetworkError::new(&error))
    }
}

impl RaftNetwork<TypeConfig> for Peer {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        match self.send(RpcRequest::AppendEntries(rpc), &option).await? {
            RpcResponse::AppendEntries(Ok(response)) => Ok(response),
            RpcResponse::AppendEntries(Err(error)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, error)))
            }
            other => Err(self.unexpected(other)),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        match self.send(RpcRequest::InstallSnapshot(rpc), &option).await? {
            RpcResponse::InstallSnapshot(Ok(response)) => Ok(response),
            RpcResponse::InstallSnapshot(Err(error)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, error)))
            }
            other => Err(self.unexpected(other)),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        match self.send(RpcRequest::Vote(rpc), &option).await? {
            RpcResponse::Vote(Ok(response)) => Ok(response),
            RpcResponse::Vote(Err(error)) => {
                Err(RPCError::RemoteError(RemoteError::new(self.target, error)))
            }
            other => Err(self.unexpected(other)),
        }
    }
}
