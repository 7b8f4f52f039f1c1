//! Requests the active controller serves: ElectLeaders, AlterPartitionReassignments,
//! CreatePartitions, UnregisterBroker and AlterUserScramCredentials are planned from the
//! controller's image, as
//! Kafka's brokers forward them to the controller (KIP-590) instead of deciding on
//! their own possibly stale view of the cluster.
//!
//! A node that is not the active controller sends the request, as it arrived, to the
//! quorum's leader over the quorum's private API ([`RpcRequest::Forward`]) and relays
//! the answer. When the leader changes on the way (NOT_CONTROLLER) or cannot be
//! reached, it tries the next leader until [`FORWARD_DEADLINE`]; after that it serves
//! the request itself, and its writes, refused because it is not the controller,
//! answer NOT_CONTROLLER, which Kafka's clients retry.

use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;

pub use crate::quorum::rpc::{Forwarded, ForwardedReply};
use crate::quorum::{RpcRequest, RpcResponse};
use crate::request::{Outcome, RequestContext};

/// How long a node keeps looking for the active controller for a forwarded request.
pub const FORWARD_DEADLINE: Duration = Duration::from_secs(10);

/// Whether `api_key` is planned on the active controller.
pub fn served_by_controller(api_key: ApiKey) -> bool {
    matches!(
        api_key,
        ApiKey::ElectLeaders
            | ApiKey::AlterPartitionReassignments
            | ApiKey::CreatePartitions
            | ApiKey::UnregisterBroker
            | ApiKey::AlterUserScramCredentials
    )
}

/// Relays a request to the active controller. `None`: this node is the active
/// controller, or none answered in time; the caller serves the request itself.
pub async fn forward(context: &RequestContext, api_key: ApiKey, body: &Bytes) -> Option<Outcome> {
    let quorum = context.broker.quorum().ok()?.clone();
    let request = RpcRequest::Forward(Forwarded {
        api_key: api_key as i16,
        version: context.version,
        client_id: context.client_id.clone(),
        client_host: context.client_host.to_string(),
        principal: context.principal.clone(),
        body: body.to_vec(),
    });
    let deadline = tokio::time::Instant::now() + FORWARD_DEADLINE;
    loop {
        if quorum.is_active_controller() {
            return None;
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            tracing::warn!(
                ?api_key,
                "no active controller answered a forwarded request"
            );
            return None;
        }
        if let Some((leader, address)) = quorum.leader()
            && leader != quorum.node_id
        {
            match crate::quorum::rpc::call(&address, &request, left).await {
                Ok(RpcResponse::Forwarded(ForwardedReply::Respond(body))) => {
                    return Some(Outcome::Respond {
                        body: Bytes::from(body),
                        response_version: context.version,
                    });
                }
                Ok(RpcResponse::Forwarded(ForwardedReply::Close(reason))) => {
                    return Some(Outcome::Close { reason });
                }
                Ok(other) => {
                    tracing::debug!(?api_key, leader, ?other, "forwarded request not taken")
                }
                Err(error) => {
                    tracing::debug!(?api_key, leader, %error, "forwarded request not answered")
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
