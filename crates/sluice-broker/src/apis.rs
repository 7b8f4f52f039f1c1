//! The Kafka APIs this broker serves, their version ranges, and request dispatch.
//!
//! Apache Kafka 4.1 is the reference: each API is advertised from Kafka 4.1's minimum
//! version up to the highest version whose fields Sluice implements; an API Sluice does
//! not serve is absent from ApiVersions. Versions grow as later work adds fields.
//!
//! It also serves the quorum's private requests ([`serve_rpc`]: Raft messages, metadata
//! writes proposed to the leader, joining as a learner, broker heartbeats,
//! AlterPartition, the quorum's status, the cluster id) and, on the active controller,
//! the client requests other nodes forward to it ([`crate::forwarding`]). The request's
//! context and the helpers that decode and answer are in [`crate::request`]; Kafka's
//! error codes are in [`crate::errors`].

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::broker::Broker;
use crate::controller;
use crate::errors::{INVALID_REQUEST, UNSUPPORTED_VERSION};
use crate::handlers;
use crate::quorum::rpc::{Forwarded, ForwardedReply};
use crate::quorum::{RpcRequest, RpcResponse};
pub use crate::request::{Outcome, Principal, RequestContext, decode, respond};

/// The Apache Kafka release whose protocol, API version ranges and defaults Sluice
/// follows (`sluice --version` prints it).
pub const KAFKA_VERSION: &str = "4.1";

/// (API, Kafka 4.1's minimum version, the highest version Sluice implements), in api-key
/// order. Produce is advertised from v0 as Kafka 4.1 does (KAFKA-18659: librdkafka wants
/// to see v0 before it compresses) but v0-2 requests close the connection.
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 0, 13),
    (ApiKey::Fetch, 4, 18),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::WriteTxnMarkers, 1, 1),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::UpdateFeatures, 0, 2),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::UnregisterBroker, 0, 0),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::DescribeTopicPartitions, 0, 0),
];

/// The lowest Produce version a 4.1 broker accepts (below it: the connection closes).
const PRODUCE_MIN_ACCEPTED: i16 = 3;

/// The version range Sluice serves for `api_key`, if it serves it.
pub fn supported_versions(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|(_, min, max)| (*min, *max))
}

/// Decodes a request body of any served API without serving it: what the broker does
/// with a frame before a handler runs. The request-decoding fuzz target calls this; an
/// `Err` is a clean refusal (the connection would close), never a panic.
pub fn decode_request(api_key: ApiKey, version: i16, body: &mut Bytes) -> Result<(), String> {
    fn check<R: kafka_protocol::protocol::Decodable>(
        api_key: ApiKey,
        version: i16,
        body: &mut Bytes,
    ) -> Result<(), String> {
        decode::<R>(api_key, body, version)
            .map(|_| ())
            .map_err(|outcome| format!("{outcome:?}"))
    }
    check_version(api_key, version).map_err(|outcome| format!("{outcome:?}"))?;
    match api_key {
        ApiKey::Produce => check::<ProduceRequest>(api_key, version, body),
        ApiKey::Fetch => check::<FetchRequest>(api_key, version, body),
        ApiKey::ListOffsets => check::<ListOffsetsRequest>(api_key, version, body),
        ApiKey::Metadata => check::<MetadataRequest>(api_key, version, body),
        ApiKey::ApiVersions => check::<ApiVersionsRequest>(api_key, version, body),
        ApiKey::SaslHandshake => check::<SaslHandshakeRequest>(api_key, version, body),
        ApiKey::SaslAuthenticate => check::<SaslAuthenticateRequest>(api_key, version, body),
        ApiKey::CreateTopics => check::<CreateTopicsRequest>(api_key, version, body),
        ApiKey::DeleteTopics => check::<DeleteTopicsRequest>(api_key, version, body),
        ApiKey::CreatePartitions => check::<CreatePartitionsRequest>(api_key, version, body),
        ApiKey::DeleteRecords => check::<DeleteRecordsRequest>(api_key, version, body),
        ApiKey::InitProducerId => check::<InitProducerIdRequest>(api_key, version, body),
        ApiKey::OffsetForLeaderEpoch => {
            check::<OffsetForLeaderEpochRequest>(api_key, version, body)
        }
        ApiKey::DescribeConfigs => check::<DescribeConfigsRequest>(api_key, version, body),
        ApiKey::AlterConfigs => check::<AlterConfigsRequest>(api_key, version, body),
        ApiKey::IncrementalAlterConfigs => {
            check::<IncrementalAlterConfigsRequest>(api_key, version, body)
        }
        ApiKey::DescribeLogDirs => check::<DescribeLogDirsRequest>(api_key, version, body),
        ApiKey::DescribeCluster => check::<DescribeClusterRequest>(api_key, version, body),
        ApiKey::DescribeClientQuotas => {
            check::<DescribeClientQuotasRequest>(api_key, version, body)
        }
        ApiKey::DescribeUserScramCredentials => {
            check::<DescribeUserScramCredentialsRequest>(api_key, version, body)
        }
        ApiKey::AlterUserScramCredentials => {
            check::<AlterUserScramCredentialsRequest>(api_key, version, body)
        }
        ApiKey::DescribeQuorum => check::<DescribeQuorumRequest>(api_key, version, body),
        ApiKey::AlterPartitionReassignments => {
            check::<AlterPartitionReassignmentsRequest>(api_key, version, body)
        }
        ApiKey::ListPartitionReassignments => {
            check::<ListPartitionReassignmentsRequest>(api_key, version, body)
        }
        ApiKey::ElectLeaders => check::<ElectLeadersRequest>(api_key, version, body),
        ApiKey::UnregisterBroker => check::<UnregisterBrokerRequest>(api_key, version, body),
        ApiKey::DescribeTopicPartitions => {
            check::<DescribeTopicPartitionsRequest>(api_key, version, body)
        }
        ApiKey::FindCoordinator => check::<FindCoordinatorRequest>(api_key, version, body),
        ApiKey::DescribeProducers => check::<DescribeProducersRequest>(api_key, version, body),
        ApiKey::UpdateFeatures => check::<UpdateFeaturesRequest>(api_key, version, body),
        ApiKey::AddPartitionsToTxn => check::<AddPartitionsToTxnRequest>(api_key, version, body),
        ApiKey::AddOffsetsToTxn => check::<AddOffsetsToTxnRequest>(api_key, version, body),
        ApiKey::EndTxn => check::<EndTxnRequest>(api_key, version, body),
        ApiKey::WriteTxnMarkers => check::<WriteTxnMarkersRequest>(api_key, version, body),
        ApiKey::TxnOffsetCommit => check::<TxnOffsetCommitRequest>(api_key, version, body),
        ApiKey::ListTransactions => check::<ListTransactionsRequest>(api_key, version, body),
        ApiKey::DescribeTransactions => {
            check::<DescribeTransactionsRequest>(api_key, version, body)
        }
        ApiKey::JoinGroup => check::<JoinGroupRequest>(api_key, version, body),
        ApiKey::SyncGroup => check::<SyncGroupRequest>(api_key, version, body),
        ApiKey::Heartbeat => check::<HeartbeatRequest>(api_key, version, body),
        ApiKey::LeaveGroup => check::<LeaveGroupRequest>(api_key, version, body),
        ApiKey::OffsetCommit => check::<OffsetCommitRequest>(api_key, version, body),
        ApiKey::OffsetFetch => check::<OffsetFetchRequest>(api_key, version, body),
        ApiKey::OffsetDelete => check::<OffsetDeleteRequest>(api_key, version, body),
        ApiKey::ListGroups => check::<ListGroupsRequest>(api_key, version, body),
        ApiKey::DescribeGroups => check::<DescribeGroupsRequest>(api_key, version, body),
        ApiKey::DeleteGroups => check::<DeleteGroupsRequest>(api_key, version, body),
        ApiKey::ConsumerGroupHeartbeat => {
            check::<ConsumerGroupHeartbeatRequest>(api_key, version, body)
        }
        ApiKey::ConsumerGroupDescribe => {
            check::<ConsumerGroupDescribeRequest>(api_key, version, body)
        }
        other => Err(format!("{other:?} is not served")),
    }
}

/// Whether Sluice serves `version` of `api_key` (ApiVersions has its own rule).
pub fn check_version(api_key: ApiKey, version: i16) -> Result<(), Outcome> {
    let Some((min, max)) = supported_versions(api_key) else {
        return Err(Outcome::Close {
            reason: format!("unsupported API {api_key:?}"),
        });
    };
    let min = if api_key == ApiKey::Produce {
        PRODUCE_MIN_ACCEPTED
    } else {
        min
    };
    if version < min || version > max {
        return Err(Outcome::Close {
            reason: format!("unsupported version {version} of {api_key:?} (serving {min}..={max})"),
        });
    }
    Ok(())
}

/// Routes one decoded request to its handler.
///
/// The header is taken by value and dropped before the handler runs, and nothing else
/// keeps a reference to the frame, so a Produce request's records can be appended
/// without a copy when they are the frame's only remaining user.
pub async fn dispatch(
    broker: Arc<Broker>,
    listener: Arc<str>,
    client_host: Arc<str>,
    principal: Principal,
    api_key: ApiKey,
    header: RequestHeader,
    mut body: Bytes,
) -> Outcome {
    let version = header.request_api_version;
    let client_id = header.client_id.as_ref().map(|c| c.to_string());
    drop(header);
    if api_key == ApiKey::ApiVersions {
        let (min, max) = supported_versions(api_key).expect("ApiVersions is served");
        return api_versions(&broker, version, min, max, &mut body);
    }
    if let Err(outcome) = check_version(api_key, version) {
        return outcome;
    }
    // SASL requests reach here on a listener without SASL or once a connection has
    // authenticated ([`crate::sasl`] takes them before that): Kafka's KafkaApis answers
    // ILLEGAL_SASL_STATE (re-authentication, KIP-368, is not offered).
    if api_key == ApiKey::SaslHandshake {
        return respond(
            &SaslHandshakeResponse::default()
                .with_error_code(sluice_protocol::ErrorCode::ILLEGAL_SASL_STATE.code()),
            version,
        );
    }
    if api_key == ApiKey::SaslAuthenticate {
        return respond(
            &SaslAuthenticateResponse::default()
                .with_error_code(sluice_protocol::ErrorCode::ILLEGAL_SASL_STATE.code())
                .with_error_message(Some(kafka_protocol::protocol::StrBytes::from_static_str(
                    "SaslAuthenticate request received after successful authentication",
                ))),
            version,
        );
    }
    let context = RequestContext {
        broker,
        principal,
        listener,
        version,
        client_id,
        client_host,
        forwarded: false,
    };
    handlers::handle(context, api_key, body).await
}

/// Serves a quorum request that reached this node.
pub async fn serve_rpc(broker: &Arc<Broker>, request: RpcRequest) -> RpcResponse {
    let quorum = match broker.quorum() {
        Ok(quorum) => quorum.clone(),
        Err(error) => return RpcResponse::Refused(error.to_string()),
    };
    match request {
        RpcRequest::AppendEntries(rpc) => {
            RpcResponse::AppendEntries(quorum.raft.append_entries(rpc).await)
        }
        RpcRequest::Vote(rpc) => RpcResponse::Vote(quorum.raft.vote(rpc).await),
        RpcRequest::InstallSnapshot(rpc) => {
            RpcResponse::InstallSnapshot(quorum.raft.install_snapshot(rpc).await)
        }
        RpcRequest::Propose(proposal) => {
            RpcResponse::Propose(quorum.propose_as_leader(proposal).await)
        }
        RpcRequest::Join { node_id, address } => {
            RpcResponse::Join(quorum.add_learner(node_id, address).await)
        }
        RpcRequest::Heartbeat(heartbeat) => {
            RpcResponse::Heartbeat(controller::heartbeat_as_controller(broker, heartbeat).await)
        }
        RpcRequest::AlterPartition(change) => RpcResponse::AlterPartition(
            controller::alter_partition_as_controller(broker, change)
                .await
                .map_err(i16::from),
        ),
        RpcRequest::Status => RpcResponse::Status(quorum.status()),
        RpcRequest::ClusterId => RpcResponse::ClusterId(broker.cluster_id.clone()),
        RpcRequest::Forward(request) => {
            RpcResponse::Forwarded(serve_forwarded(broker, request).await)
        }
    }
}

/// Serves a request another node forwarded, when this node is the active controller.
async fn serve_forwarded(broker: &Arc<Broker>, request: Forwarded) -> ForwardedReply {
    let active = broker
        .quorum()
        .is_ok_and(|quorum| quorum.is_active_controller());
    let api_key = match ApiKey::try_from(request.api_key) {
        Ok(key) if crate::forwarding::served_by_controller(key) => key,
        _ => {
            return ForwardedReply::Close(format!(
                "API key {} is not forwarded to the controller",
                request.api_key
            ));
        }
    };
    if !active {
        return ForwardedReply::NotController;
    }
    if let Err(Outcome::Close { reason }) = check_version(api_key, request.version) {
        return ForwardedReply::Close(reason);
    }
    let context = RequestContext {
        broker: broker.clone(),
        // The forwarding node's principal travels with the request, as in Kafka's
        // envelope (KIP-590).
        principal: request.principal,
        listener: "CONTROLLER".into(),
        version: request.version,
        client_id: request.client_id,
        client_host: request.client_host.into(),
        forwarded: true,
    };
    match handlers::handle(context, api_key, Bytes::from(request.body)).await {
        Outcome::Respond { body, .. } => ForwardedReply::Respond(body.to_vec()),
        Outcome::Close { reason } => ForwardedReply::Close(reason),
        Outcome::NoResponse => ForwardedReply::Close("no response".into()),
    }
}

/// ApiVersions, as Kafka 4.1 answers it:
/// - a version Sluice does not serve gets a v0 response with UNSUPPORTED_VERSION that
///   lists only ApiVersions' own range, so the client retries with one it shares (KIP-511);
/// - v3+ checks the client software name and version (KIP-511's pattern) and answers
///   INVALID_REQUEST with no API list when they do not match;
/// - a body that does not decode closes the connection.
fn api_versions(broker: &Broker, version: i16, min: i16, max: i16, body: &mut Bytes) -> Outcome {
    let entry = |key: ApiKey, min: i16, max: i16| {
        let mut entry = ApiVersion::default();
        entry.api_key = key as i16;
        entry.min_version = min;
        entry.max_version = max;
        entry
    };
    let mut response = ApiVersionsResponse::default();
    let response_version = if version > max || version < min {
        response.error_code = UNSUPPORTED_VERSION;
        response.api_keys = vec![entry(ApiKey::ApiVersions, min, max)];
        0
    } else {
        let request = match ApiVersionsRequest::decode(body, version) {
            Ok(request) => request,
            Err(error) => {
                return Outcome::Close {
                    reason: format!("malformed ApiVersions v{version} request: {error}"),
                };
            }
        };
        if version >= 3
            && !(valid_client_software(&request.client_software_name)
                && valid_client_software(&request.client_software_version))
        {
            response.error_code = INVALID_REQUEST;
        } else {
            response.api_keys = SUPPORTED_APIS
                .iter()
                .map(|(key, min, max)| entry(*key, *min, *max))
                .collect();
            if version >= 3 {
                let epoch = broker
                    .quorum()
                    .map_or(-1, |quorum| quorum.applied_end_offset());
                crate::features::describe(&mut response, version, &broker.image(), epoch);
            }
        }
        version
    };
    let mut out = BytesMut::new();
    response
        .encode(&mut out, response_version)
        .expect("an ApiVersions response of supported fields encodes");
    Outcome::Respond {
        body: out.freeze(),
        response_version,
    }
}

/// Kafka's rule for ApiVersions v3+ client software names and versions:
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn valid_client_software(text: &str) -> bool {
    let bytes = text.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_software_names_follow_kafkas_pattern() {
        let cases = [
            ("librdkafka", true),
            ("apache-kafka-java", true),
            ("4.1.1", true),
            ("a", true),
            ("", false),
            ("-leading", false),
            ("trailing.", false),
            ("with space", false),
            ("under_score", false),
        ];
        for (text, valid) in cases {
            assert_eq!(valid_client_software(text), valid, "{text:?}");
        }
    }
}
