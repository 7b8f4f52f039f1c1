//! Kafka's error codes (the protocol guide's table; `org.apache.kafka.common.protocol.Errors`)
//! that the broker answers with. (The names and messages of all of them are in
//! `kafka_protocol::ResponseError`.)

pub const NONE: i16 = 0;
pub const UNKNOWN_SERVER_ERROR: i16 = -1;
pub const OFFSET_OUT_OF_RANGE: i16 = 1;
pub const CORRUPT_MESSAGE: i16 = 2;
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub const INVALID_FETCH_SIZE: i16 = 4;
pub const LEADER_NOT_AVAILABLE: i16 = 5;
pub const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub const REQUEST_TIMED_OUT: i16 = 7;
pub const MESSAGE_TOO_LARGE: i16 = 10;
pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub const RECORD_LIST_TOO_LARGE: i16 = 18;
pub const INVALID_REQUIRED_ACKS: i16 = 21;
pub const INVALID_TIMESTAMP: i16 = 32;
pub const UNSUPPORTED_VERSION: i16 = 35;
pub const TOPIC_ALREADY_EXISTS: i16 = 36;
pub const INVALID_PARTITIONS: i16 = 37;
pub const INVALID_REPLICATION_FACTOR: i16 = 38;
pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub const INVALID_CONFIG: i16 = 40;
pub const INVALID_REQUEST: i16 = 42;
pub const POLICY_VIOLATION: i16 = 44;
pub const KAFKA_STORAGE_ERROR: i16 = 56;
pub const FENCED_LEADER_EPOCH: i16 = 74;
pub const UNKNOWN_LEADER_EPOCH: i16 = 75;
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
pub const INVALID_RECORD: i16 = 87;
pub const TOPIC_DELETION_DISABLED: i16 = 73;
pub const UNKNOWN_TOPIC_ID: i16 = 100;
pub const INCONSISTENT_TOPIC_ID: i16 = 103;
pub const OFFSET_NOT_AVAILABLE: i16 = 78;
pub const THROTTLING_QUOTA_EXCEEDED: i16 = 89;
pub const MISMATCHED_ENDPOINT_TYPE: i16 = 114;
pub const UNSUPPORTED_ENDPOINT_TYPE: i16 = 115;
pub const NOT_ENOUGH_REPLICAS: i16 = 19;
pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = 20;
pub const NOT_CONTROLLER: i16 = 41;
pub const STALE_BROKER_EPOCH: i16 = 77;
pub const INVALID_UPDATE_VERSION: i16 = 95;
pub const INELIGIBLE_REPLICA: i16 = 107;
pub const NEW_LEADER_ELECTED: i16 = 108;
pub const OFFSET_MOVED_TO_TIERED_STORAGE: i16 = 109;
pub const BROKER_ID_NOT_REGISTERED: i16 = 102;
pub const DUPLICATE_BROKER_REGISTRATION: i16 = 101;
pub const ELECTION_NOT_NEEDED: i16 = 84;
pub const PREFERRED_LEADER_NOT_AVAILABLE: i16 = 80;
pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: i16 = 83;
pub const NO_REASSIGNMENT_IN_PROGRESS: i16 = 85;
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub const INVALID_PRODUCER_EPOCH: i16 = 47;
// Groups and committed offsets.
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub const NOT_COORDINATOR: i16 = 16;
pub const ILLEGAL_GENERATION: i16 = 22;
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub const INVALID_GROUP_ID: i16 = 24;
pub const UNKNOWN_MEMBER_ID: i16 = 25;
pub const INVALID_SESSION_TIMEOUT: i16 = 26;
pub const REBALANCE_IN_PROGRESS: i16 = 27;
pub const INVALID_COMMIT_OFFSET_SIZE: i16 = 28;
pub const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub const NON_EMPTY_GROUP: i16 = 68;
pub const GROUP_ID_NOT_FOUND: i16 = 69;
pub const MEMBER_ID_REQUIRED: i16 = 79;
pub const FENCED_INSTANCE_ID: i16 = 82;
pub const GROUP_MAX_SIZE_REACHED: i16 = 81;
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
pub const UNSTABLE_OFFSET_COMMIT: i16 = 88;
pub const STALE_MEMBER_EPOCH: i16 = 113;
pub const UNSUPPORTED_ASSIGNOR: i16 = 112;
pub const FENCED_MEMBER_EPOCH: i16 = 110;

// Transactions and features.
pub const INVALID_TXN_STATE: i16 = 48;
pub const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
pub const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
pub const CONCURRENT_TRANSACTIONS: i16 = 51;
pub const TRANSACTION_COORDINATOR_FENCED: i16 = 52;
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub const OPERATION_NOT_ATTEMPTED: i16 = 55;
pub const PRODUCER_FENCED: i16 = 90;
pub const FEATURE_UPDATE_FAILED: i16 = 96;
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;
pub const TRANSACTION_ABORTABLE: i16 = 120;
pub const INVALID_REGULAR_EXPRESSION: i16 = 128;

/// The error code of a failed controller write (for responses to admin requests and
/// heartbeats): NOT_CONTROLLER when this node lost or never had the controller role
/// (retriable: the client finds the new one), INVALID_UPDATE_VERSION when a partition
/// changed under the plan, REQUEST_TIMED_OUT when no majority answered.
pub fn of_controller_write(error: &crate::broker::BrokerError) -> i16 {
    use crate::broker::BrokerError;
    use crate::quorum::QuorumError;
    match error {
        BrokerError::Quorum(QuorumError::NotController) => NOT_CONTROLLER,
        BrokerError::Quorum(QuorumError::StalePartition(_)) => INVALID_UPDATE_VERSION,
        BrokerError::Quorum(QuorumError::NoLeader(_)) => REQUEST_TIMED_OUT,
        _ => UNKNOWN_SERVER_ERROR,
    }
}
