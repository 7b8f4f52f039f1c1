//! The request handlers: each decodes its request with `kafka-protocol`, reads the
//! metadata image and the local replicas through [`Broker`], and answers as Kafka 4.1
//! does at the request's version.

mod cluster_admin;
mod configs;
mod features;
mod fetch;
mod groups;
mod log_dirs;
mod metadata;
mod offsets;
pub(crate) mod produce;
mod producer_id;
mod quorum;
mod topics;
mod txn;

use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::broker::Broker;
use crate::request::{Outcome, RequestContext, decode, respond};

/// Decodes and serves one request of a supported version.
pub async fn handle(context: RequestContext, api_key: ApiKey, mut body: Bytes) -> Outcome {
    let version = context.version;
    if crate::forwarding::served_by_controller(api_key)
        && !context.forwarded
        && let Some(outcome) = crate::forwarding::forward(&context, api_key, &body).await
    {
        return outcome;
    }
    macro_rules! serve {
        ($request:ty, $handler:expr) => {{
            let request: $request = match decode(api_key, &mut body, version) {
                Ok(request) => request,
                Err(outcome) => return outcome,
            };
            let response = $handler(&context, request).await;
            respond(&response, version)
        }};
    }
    match api_key {
        ApiKey::Produce => {
            let request: ProduceRequest = match decode(api_key, &mut body, version) {
                Ok(request) => request,
                Err(outcome) => return outcome,
            };
            // What is left of the frame (nothing) must not keep it shared.
            drop(body);
            match produce::produce(&context, request).await {
                Some(response) => respond(&response, version),
                None => Outcome::NoResponse,
            }
        }
        ApiKey::Fetch => serve!(FetchRequest, fetch::fetch),
        ApiKey::ListOffsets => serve!(ListOffsetsRequest, offsets::list_offsets),
        ApiKey::Metadata => serve!(MetadataRequest, metadata::metadata),
        ApiKey::CreateTopics => serve!(CreateTopicsRequest, topics::create_topics),
        ApiKey::DeleteTopics => serve!(DeleteTopicsRequest, topics::delete_topics),
        ApiKey::CreatePartitions => serve!(CreatePartitionsRequest, topics::create_partitions),
        ApiKey::DeleteRecords => serve!(DeleteRecordsRequest, offsets::delete_records),
        ApiKey::InitProducerId => serve!(InitProducerIdRequest, producer_id::init_producer_id),
        ApiKey::OffsetForLeaderEpoch => {
            serve!(
                OffsetForLeaderEpochRequest,
                offsets::offset_for_leader_epoch
            )
        }
        ApiKey::DescribeConfigs => serve!(DescribeConfigsRequest, configs::describe_configs),
        ApiKey::AlterConfigs => serve!(AlterConfigsRequest, configs::alter_configs),
        ApiKey::IncrementalAlterConfigs => {
            serve!(
                IncrementalAlterConfigsRequest,
                configs::incremental_alter_configs
            )
        }
        ApiKey::DescribeLogDirs => serve!(DescribeLogDirsRequest, log_dirs::describe_log_dirs),
        ApiKey::DescribeCluster => serve!(DescribeClusterRequest, metadata::describe_cluster),
        ApiKey::DescribeQuorum => serve!(DescribeQuorumRequest, quorum::describe_quorum),
        ApiKey::AlterPartitionReassignments => serve!(
            AlterPartitionReassignmentsRequest,
            cluster_admin::alter_partition_reassignments
        ),
        ApiKey::ListPartitionReassignments => serve!(
            ListPartitionReassignmentsRequest,
            cluster_admin::list_partition_reassignments
        ),
        ApiKey::ElectLeaders => serve!(ElectLeadersRequest, cluster_admin::elect_leaders),
        ApiKey::UnregisterBroker => {
            serve!(UnregisterBrokerRequest, cluster_admin::unregister_broker)
        }
        ApiKey::DescribeTopicPartitions => serve!(
            DescribeTopicPartitionsRequest,
            metadata::describe_topic_partitions
        ),
        ApiKey::FindCoordinator => serve!(FindCoordinatorRequest, groups::find_coordinator),
        ApiKey::UpdateFeatures => serve!(UpdateFeaturesRequest, features::update_features),
        ApiKey::AddPartitionsToTxn => {
            serve!(AddPartitionsToTxnRequest, txn::add_partitions_to_txn)
        }
        ApiKey::AddOffsetsToTxn => serve!(AddOffsetsToTxnRequest, txn::add_offsets_to_txn),
        ApiKey::EndTxn => serve!(EndTxnRequest, txn::end_txn),
        ApiKey::WriteTxnMarkers => serve!(WriteTxnMarkersRequest, txn::write_txn_markers),
        ApiKey::TxnOffsetCommit => serve!(TxnOffsetCommitRequest, txn::txn_offset_commit),
        ApiKey::ListTransactions => serve!(ListTransactionsRequest, txn::list_transactions),
        ApiKey::DescribeTransactions => {
            serve!(DescribeTransactionsRequest, txn::describe_transactions)
        }
        ApiKey::DescribeProducers => {
            serve!(DescribeProducersRequest, producer_id::describe_producers)
        }
        ApiKey::JoinGroup => serve!(JoinGroupRequest, groups::join_group),
        ApiKey::SyncGroup => serve!(SyncGroupRequest, groups::sync_group),
        ApiKey::Heartbeat => serve!(HeartbeatRequest, groups::heartbeat),
        ApiKey::LeaveGroup => serve!(LeaveGroupRequest, groups::leave_group),
        ApiKey::OffsetCommit => serve!(OffsetCommitRequest, groups::offset_commit),
        ApiKey::OffsetFetch => serve!(OffsetFetchRequest, groups::offset_fetch),
        ApiKey::OffsetDelete => serve!(OffsetDeleteRequest, groups::offset_delete),
        ApiKey::ListGroups => serve!(ListGroupsRequest, groups::list_groups),
        ApiKey::DescribeGroups => serve!(DescribeGroupsRequest, groups::describe_groups),
        ApiKey::DeleteGroups => serve!(DeleteGroupsRequest, groups::delete_groups),
        ApiKey::ConsumerGroupHeartbeat => serve!(
            ConsumerGroupHeartbeatRequest,
            groups::consumer_group_heartbeat
        ),
        ApiKey::ConsumerGroupDescribe => serve!(
            ConsumerGroupDescribeRequest,
            groups::consumer_group_describe
        ),
        other => Outcome::Close {
            reason: format!("{other:?} has no handler"),
        },
    }
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
    crate::apis::check_version(api_key, version).map_err(|outcome| format!("{outcome:?}"))?;
    match api_key {
        ApiKey::Produce => check::<ProduceRequest>(api_key, version, body),
        ApiKey::Fetch => check::<FetchRequest>(api_key, version, body),
        ApiKey::ListOffsets => check::<ListOffsetsRequest>(api_key, version, body),
        ApiKey::Metadata => check::<MetadataRequest>(api_key, version, body),
        ApiKey::ApiVersions => check::<ApiVersionsRequest>(api_key, version, body),
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

pub(crate) fn str_bytes(text: impl Into<String>) -> StrBytes {
    StrBytes::from_string(text.into())
}

pub(crate) fn topic_name(text: impl Into<String>) -> TopicName {
    TopicName(str_bytes(text))
}

pub(crate) fn to_uuid(id: sluice_metadata::Uuid) -> uuid::Uuid {
    uuid::Uuid::from_bytes(id)
}

pub(crate) fn from_uuid(id: &uuid::Uuid) -> sluice_metadata::Uuid {
    *id.as_bytes()
}

/// Whether `name` is a legal topic name (Kafka's `Topic.validate`): 1-249 characters of
/// ASCII letters, digits, '.', '_' and '-', and not "." or "..".
pub(crate) fn valid_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("Topic name is illegal, it can't be empty".into());
    }
    if name == "." || name == ".." {
        return Err("Topic name cannot be \".\" or \"..\"".into());
    }
    if name.len() > 249 {
        return Err(format!(
            "Topic name is illegal, it can't be longer than 249 characters, topic name: {name}"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
    {
        return Err(format!(
            "Topic name is invalid: '{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
        ));
    }
    Ok(())
}

/// Kafka's internal topics.
pub(crate) fn is_internal(topic: &str) -> bool {
    topic == "__consumer_offsets"
        || topic == "__transaction_state"
        || topic == "__share_group_state"
}

/// The registered, unfenced brokers with an endpoint on `listener`: (id, host, port,
/// rack), from the metadata image.
pub(crate) fn live_brokers(
    image: &sluice_metadata::MetadataImage,
    listener: &str,
) -> Vec<(i32, String, i32, Option<String>)> {
    image
        .brokers()
        .filter_map(|b| {
            let endpoint = Broker::endpoint_of(image, b.broker_id, listener)?;
            Some((
                b.broker_id,
                endpoint.host,
                i32::from(endpoint.port),
                b.rack.clone(),
            ))
        })
        .collect()
}
