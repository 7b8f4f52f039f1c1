//! The request handlers: each decodes its request with `kafka-protocol`, reads the
//! metadata image and the local replicas through [`Broker`], and answers as Kafka 4.1
//! does at the request's version.

mod cluster_admin;
mod common;
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
mod quotas;
mod scram;
mod topics;
mod txn;

use bytes::Bytes;
use kafka_protocol::messages::*;

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
        ApiKey::DescribeClientQuotas => {
            serve!(DescribeClientQuotasRequest, quotas::describe_client_quotas)
        }
        ApiKey::DescribeUserScramCredentials => serve!(
            DescribeUserScramCredentialsRequest,
            scram::describe_user_scram_credentials
        ),
        ApiKey::AlterUserScramCredentials => serve!(
            AlterUserScramCredentialsRequest,
            scram::alter_user_scram_credentials
        ),
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
