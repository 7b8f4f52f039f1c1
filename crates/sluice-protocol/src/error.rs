//! Kafka's error codes: one table for the broker, the client and the coordinators.
//!
//! [`ErrorCode`] is a code as it travels in responses (`0` is no error). It has an
//! associated constant for every code Apache Kafka 4.1 defines (its `Errors` enum), named
//! as there, and knows each code's name (`TOPIC_ALREADY_EXISTS`), whether a client may
//! retry, and Kafka's default description. [`ApiError`] is a code a broker returned with
//! its error message.

use std::fmt;

/// A Kafka error code as it travels in responses (`0` is no error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i16);

/// Kafka's codes, named as in `org.apache.kafka.common.protocol.Errors`, with the values
/// of Kafka's protocol guide.
impl ErrorCode {
    pub const NONE: ErrorCode = ErrorCode(0);
    pub const UNKNOWN_SERVER_ERROR: ErrorCode = ErrorCode(-1);
    pub const OFFSET_OUT_OF_RANGE: ErrorCode = ErrorCode(1);
    pub const CORRUPT_MESSAGE: ErrorCode = ErrorCode(2);
    pub const UNKNOWN_TOPIC_OR_PARTITION: ErrorCode = ErrorCode(3);
    pub const INVALID_FETCH_SIZE: ErrorCode = ErrorCode(4);
    pub const LEADER_NOT_AVAILABLE: ErrorCode = ErrorCode(5);
    pub const NOT_LEADER_OR_FOLLOWER: ErrorCode = ErrorCode(6);
    pub const REQUEST_TIMED_OUT: ErrorCode = ErrorCode(7);
    pub const BROKER_NOT_AVAILABLE: ErrorCode = ErrorCode(8);
    pub const REPLICA_NOT_AVAILABLE: ErrorCode = ErrorCode(9);
    pub const MESSAGE_TOO_LARGE: ErrorCode = ErrorCode(10);
    pub const STALE_CONTROLLER_EPOCH: ErrorCode = ErrorCode(11);
    pub const OFFSET_METADATA_TOO_LARGE: ErrorCode = ErrorCode(12);
    pub const NETWORK_EXCEPTION: ErrorCode = ErrorCode(13);
    pub const COORDINATOR_LOAD_IN_PROGRESS: ErrorCode = ErrorCode(14);
    pub const COORDINATOR_NOT_AVAILABLE: ErrorCode = ErrorCode(15);
    pub const NOT_COORDINATOR: ErrorCode = ErrorCode(16);
    pub const INVALID_TOPIC_EXCEPTION: ErrorCode = ErrorCode(17);
    pub const RECORD_LIST_TOO_LARGE: ErrorCode = ErrorCode(18);
    pub const NOT_ENOUGH_REPLICAS: ErrorCode = ErrorCode(19);
    pub const NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode = ErrorCode(20);
    pub const INVALID_REQUIRED_ACKS: ErrorCode = ErrorCode(21);
    pub const ILLEGAL_GENERATION: ErrorCode = ErrorCode(22);
    pub const INCONSISTENT_GROUP_PROTOCOL: ErrorCode = ErrorCode(23);
    pub const INVALID_GROUP_ID: ErrorCode = ErrorCode(24);
    pub const UNKNOWN_MEMBER_ID: ErrorCode = ErrorCode(25);
    pub const INVALID_SESSION_TIMEOUT: ErrorCode = ErrorCode(26);
    pub const REBALANCE_IN_PROGRESS: ErrorCode = ErrorCode(27);
    pub const INVALID_COMMIT_OFFSET_SIZE: ErrorCode = ErrorCode(28);
    pub const TOPIC_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(29);
    pub const GROUP_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(30);
    pub const CLUSTER_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(31);
    pub const INVALID_TIMESTAMP: ErrorCode = ErrorCode(32);
    pub const UNSUPPORTED_SASL_MECHANISM: ErrorCode = ErrorCode(33);
    pub const ILLEGAL_SASL_STATE: ErrorCode = ErrorCode(34);
    pub const UNSUPPORTED_VERSION: ErrorCode = ErrorCode(35);
    pub const TOPIC_ALREADY_EXISTS: ErrorCode = ErrorCode(36);
    pub const INVALID_PARTITIONS: ErrorCode = ErrorCode(37);
    pub const INVALID_REPLICATION_FACTOR: ErrorCode = ErrorCode(38);
    pub const INVALID_REPLICA_ASSIGNMENT: ErrorCode = ErrorCode(39);
    pub const INVALID_CONFIG: ErrorCode = ErrorCode(40);
    pub const NOT_CONTROLLER: ErrorCode = ErrorCode(41);
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(42);
    pub const UNSUPPORTED_FOR_MESSAGE_FORMAT: ErrorCode = ErrorCode(43);
    pub const POLICY_VIOLATION: ErrorCode = ErrorCode(44);
    pub const OUT_OF_ORDER_SEQUENCE_NUMBER: ErrorCode = ErrorCode(45);
    pub const DUPLICATE_SEQUENCE_NUMBER: ErrorCode = ErrorCode(46);
    pub const INVALID_PRODUCER_EPOCH: ErrorCode = ErrorCode(47);
    pub const INVALID_TXN_STATE: ErrorCode = ErrorCode(48);
    pub const INVALID_PRODUCER_ID_MAPPING: ErrorCode = ErrorCode(49);
    pub const INVALID_TRANSACTION_TIMEOUT: ErrorCode = ErrorCode(50);
    pub const CONCURRENT_TRANSACTIONS: ErrorCode = ErrorCode(51);
    pub const TRANSACTION_COORDINATOR_FENCED: ErrorCode = ErrorCode(52);
    pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(53);
    pub const SECURITY_DISABLED: ErrorCode = ErrorCode(54);
    pub const OPERATION_NOT_ATTEMPTED: ErrorCode = ErrorCode(55);
    pub const KAFKA_STORAGE_ERROR: ErrorCode = ErrorCode(56);
    pub const LOG_DIR_NOT_FOUND: ErrorCode = ErrorCode(57);
    pub const SASL_AUTHENTICATION_FAILED: ErrorCode = ErrorCode(58);
    pub const UNKNOWN_PRODUCER_ID: ErrorCode = ErrorCode(59);
    pub const REASSIGNMENT_IN_PROGRESS: ErrorCode = ErrorCode(60);
    pub const DELEGATION_TOKEN_AUTH_DISABLED: ErrorCode = ErrorCode(61);
    pub const DELEGATION_TOKEN_NOT_FOUND: ErrorCode = ErrorCode(62);
    pub const DELEGATION_TOKEN_OWNER_MISMATCH: ErrorCode = ErrorCode(63);
    pub const DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: ErrorCode = ErrorCode(64);
    pub const DELEGATION_TOKEN_AUTHORIZATION_FAILED: ErrorCode = ErrorCode(65);
    pub const DELEGATION_TOKEN_EXPIRED: ErrorCode = ErrorCode(66);
    pub const INVALID_PRINCIPAL_TYPE: ErrorCode = ErrorCode(67);
    pub const NON_EMPTY_GROUP: ErrorCode = ErrorCode(68);
    pub const GROUP_ID_NOT_FOUND: ErrorCode = ErrorCode(69);
    pub const FETCH_SESSION_ID_NOT_FOUND: ErrorCode = ErrorCode(70);
    pub const INVALID_FETCH_SESSION_EPOCH: ErrorCode = ErrorCode(71);
    pub const LISTENER_NOT_FOUND: ErrorCode = ErrorCode(72);
    pub const TOPIC_DELETION_DISABLED: ErrorCode = ErrorCode(73);
    pub const FENCED_LEADER_EPOCH: ErrorCode = ErrorCode(74);
    pub const UNKNOWN_LEADER_EPOCH: ErrorCode = ErrorCode(75);
    pub const UNSUPPORTED_COMPRESSION_TYPE: ErrorCode = ErrorCode(76);
    pub const STALE_BROKER_EPOCH: ErrorCode = ErrorCode(77);
    pub const OFFSET_NOT_AVAILABLE: ErrorCode = ErrorCode(78);
    pub const MEMBER_ID_REQUIRED: ErrorCode = ErrorCode(79);
    pub const PREFERRED_LEADER_NOT_AVAILABLE: ErrorCode = ErrorCode(80);
    pub const GROUP_MAX_SIZE_REACHED: ErrorCode = ErrorCode(81);
    pub const FENCED_INSTANCE_ID: ErrorCode = ErrorCode(82);
    pub const ELIGIBLE_LEADERS_NOT_AVAILABLE: ErrorCode = ErrorCode(83);
    pub const ELECTION_NOT_NEEDED: ErrorCode = ErrorCode(84);
    pub const NO_REASSIGNMENT_IN_PROGRESS: ErrorCode = ErrorCode(85);
    pub const GROUP_SUBSCRIBED_TO_TOPIC: ErrorCode = ErrorCode(86);
    pub const INVALID_RECORD: ErrorCode = ErrorCode(87);
    pub const UNSTABLE_OFFSET_COMMIT: ErrorCode = ErrorCode(88);
    pub const THROTTLING_QUOTA_EXCEEDED: ErrorCode = ErrorCode(89);
    pub const PRODUCER_FENCED: ErrorCode = ErrorCode(90);
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(91);
    pub const DUPLICATE_RESOURCE: ErrorCode = ErrorCode(92);
    pub const UNACCEPTABLE_CREDENTIAL: ErrorCode = ErrorCode(93);
    pub const INCONSISTENT_VOTER_SET: ErrorCode = ErrorCode(94);
    pub const INVALID_UPDATE_VERSION: ErrorCode = ErrorCode(95);
    pub const FEATURE_UPDATE_FAILED: ErrorCode = ErrorCode(96);
    pub const PRINCIPAL_DESERIALIZATION_FAILURE: ErrorCode = ErrorCode(97);
    pub const SNAPSHOT_NOT_FOUND: ErrorCode = ErrorCode(98);
    pub const POSITION_OUT_OF_RANGE: ErrorCode = ErrorCode(99);
    pub const UNKNOWN_TOPIC_ID: ErrorCode = ErrorCode(100);
    pub const DUPLICATE_BROKER_REGISTRATION: ErrorCode = ErrorCode(101);
    pub const BROKER_ID_NOT_REGISTERED: ErrorCode = ErrorCode(102);
    pub const INCONSISTENT_TOPIC_ID: ErrorCode = ErrorCode(103);
    pub const INCONSISTENT_CLUSTER_ID: ErrorCode = ErrorCode(104);
    pub const TRANSACTIONAL_ID_NOT_FOUND: ErrorCode = ErrorCode(105);
    pub const FETCH_SESSION_TOPIC_ID_ERROR: ErrorCode = ErrorCode(106);
    pub const INELIGIBLE_REPLICA: ErrorCode = ErrorCode(107);
    pub const NEW_LEADER_ELECTED: ErrorCode = ErrorCode(108);
    pub const OFFSET_MOVED_TO_TIERED_STORAGE: ErrorCode = ErrorCode(109);
    pub const FENCED_MEMBER_EPOCH: ErrorCode = ErrorCode(110);
    pub const UNRELEASED_INSTANCE_ID: ErrorCode = ErrorCode(111);
    pub const UNSUPPORTED_ASSIGNOR: ErrorCode = ErrorCode(112);
    pub const STALE_MEMBER_EPOCH: ErrorCode = ErrorCode(113);
    pub const MISMATCHED_ENDPOINT_TYPE: ErrorCode = ErrorCode(114);
    pub const UNSUPPORTED_ENDPOINT_TYPE: ErrorCode = ErrorCode(115);
    pub const UNKNOWN_CONTROLLER_ID: ErrorCode = ErrorCode(116);
    pub const UNKNOWN_SUBSCRIPTION_ID: ErrorCode = ErrorCode(117);
    pub const TELEMETRY_TOO_LARGE: ErrorCode = ErrorCode(118);
    pub const INVALID_REGISTRATION: ErrorCode = ErrorCode(119);
    pub const TRANSACTION_ABORTABLE: ErrorCode = ErrorCode(120);
    pub const INVALID_RECORD_STATE: ErrorCode = ErrorCode(121);
    pub const SHARE_SESSION_NOT_FOUND: ErrorCode = ErrorCode(122);
    pub const INVALID_SHARE_SESSION_EPOCH: ErrorCode = ErrorCode(123);
    pub const FENCED_STATE_EPOCH: ErrorCode = ErrorCode(124);
    pub const INVALID_VOTER_KEY: ErrorCode = ErrorCode(125);
    pub const DUPLICATE_VOTER: ErrorCode = ErrorCode(126);
    pub const VOTER_NOT_FOUND: ErrorCode = ErrorCode(127);
    pub const INVALID_REGULAR_EXPRESSION: ErrorCode = ErrorCode(128);
    pub const REBOOTSTRAP_REQUIRED: ErrorCode = ErrorCode(129);
    pub const STREAMS_INVALID_TOPOLOGY: ErrorCode = ErrorCode(130);
    pub const STREAMS_INVALID_TOPOLOGY_EPOCH: ErrorCode = ErrorCode(131);
    pub const STREAMS_TOPOLOGY_FENCED: ErrorCode = ErrorCode(132);
    pub const SHARE_SESSION_LIMIT_REACHED: ErrorCode = ErrorCode(133);
}

impl ErrorCode {
    /// The code as it is written in a response.
    pub const fn code(self) -> i16 {
        self.0
    }

    /// Kafka's name for the code (`TOPIC_ALREADY_EXISTS`), or `UNKNOWN_ERROR_CODE_<n>` for
    /// a code this table does not know (a newer broker's).
    pub fn name(self) -> String {
        match self.entry() {
            Some((_, name, _, _)) => name.to_string(),
            None if self.0 == 0 => "NONE".to_string(),
            None => format!("UNKNOWN_ERROR_CODE_{}", self.0),
        }
    }

    /// Whether the operation may succeed if retried (Kafka's `RetriableException`). An
    /// unknown code is not retriable, as in Kafka's clients.
    pub fn is_retriable(self) -> bool {
        self.entry().is_some_and(|(_, _, retriable, _)| *retriable)
    }

    /// Kafka's default description of the error.
    pub fn description(self) -> &'static str {
        self.entry()
            .map_or("Unknown error code.", |(_, _, _, description)| description)
    }

    /// `Ok(())` for `NONE`, otherwise the error with the broker's message, if any.
    pub fn check(self, message: Option<&str>) -> Result<(), ApiError> {
        if self == ErrorCode::NONE {
            return Ok(());
        }
        Err(ApiError {
            code: self,
            message: message.map(str::to_string),
        })
    }

    fn entry(self) -> Option<&'static (i16, &'static str, bool, &'static str)> {
        ERRORS.iter().find(|(code, ..)| *code == self.0)
    }
}

impl From<i16> for ErrorCode {
    fn from(code: i16) -> Self {
        ErrorCode(code)
    }
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// An error code a broker returned, with its error message if it sent one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: Option<String>,
}

impl ApiError {
    /// The broker's message, or Kafka's description of the code when it sent none.
    pub fn message(&self) -> &str {
        self.message
            .as_deref()
            .filter(|message| !message.is_empty())
            .unwrap_or(self.code.description())
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message(), self.code)
    }
}

impl std::error::Error for ApiError {}

/// (code, Kafka's name, retriable, Kafka's description), from Apache Kafka 4.1.1's
/// `org.apache.kafka.common.protocol.Errors` (retriable: the exception is a
/// `RetriableException`). Code 0, NONE, is not an error and is not listed.
#[rustfmt::skip]
const ERRORS: &[(i16, &str, bool, &str)] = &[
    (-1, "UNKNOWN_SERVER_ERROR", false, "The server experienced an unexpected error when processing the request."),
    (1, "OFFSET_OUT_OF_RANGE", false, "The requested offset is not within the range of offsets maintained by the server."),
    (2, "CORRUPT_MESSAGE", true, "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", true, "This server does not host this topic-partition."),
    (4, "INVALID_FETCH_SIZE", false, "The requested fetch size is invalid."),
    (5, "LEADER_NOT_AVAILABLE", true, "There is no leader for this topic-partition as we are in the middle of a leadership election."),
    (6, "NOT_LEADER_OR_FOLLOWER", true, "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition."),
    (7, "REQUEST_TIMED_OUT", true, "The request timed out."),
    (8, "BROKER_NOT_AVAILABLE", false, "The broker is not available."),
    (9, "REPLICA_NOT_AVAILABLE", true, "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition."),
    (10, "MESSAGE_TOO_LARGE", false, "The request included a message larger than the max message size the server will accept."),
    (11, "STALE_CONTROLLER_EPOCH", false, "The controller moved to another broker."),
    (12, "OFFSET_METADATA_TOO_LARGE", false, "The metadata field of the offset request was too large."),
    (13, "NETWORK_EXCEPTION", true, "The server disconnected before a response was received."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", true, "The coordinator is loading and hence can't process requests."),
    (15, "COORDINATOR_NOT_AVAILABLE", true, "The coordinator is not available."),
    (16, "NOT_COORDINATOR", true, "This is not the correct coordinator."),
    (17, "INVALID_TOPIC_EXCEPTION", false, "The request attempted to perform an operation on an invalid topic."),
    (18, "RECORD_LIST_TOO_LARGE", false, "The request included message batch larger than the configured segment size on the server."),
    (19, "NOT_ENOUGH_REPLICAS", true, "Messages are rejected since there are fewer in-sync replicas than required."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", true, "Messages are written to the log, but to fewer in-sync replicas than required."),
    (21, "INVALID_REQUIRED_ACKS", false, "Produce request specified an invalid value for required acks."),
    (22, "ILLEGAL_GENERATION", false, "Specified group generation id is not valid."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", false, "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list."),
    (24, "INVALID_GROUP_ID", false, "The group id is invalid."),
    (25, "UNKNOWN_MEMBER_ID", false, "The coordinator is not aware of this member."),
    (26, "INVALID_SESSION_TIMEOUT", false, "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms)."),
    (27, "REBALANCE_IN_PROGRESS", false, "The group is rebalancing, so a rejoin is needed."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", false, "The committing offset data size is not valid."),
    (29, "TOPIC_AUTHORIZATION_FAILED", false, "Topic authorization failed."),
    (30, "GROUP_AUTHORIZATION_FAILED", false, "Group authorization failed."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", false, "Cluster authorization failed."),
    (32, "INVALID_TIMESTAMP", false, "The timestamp of the message is out of acceptable range."),
    (33, "UNSUPPORTED_SASL_MECHANISM", false, "The broker does not support the requested SASL mechanism."),
    (34, "ILLEGAL_SASL_STATE", false, "Request is not valid given the current SASL state."),
    (35, "UNSUPPORTED_VERSION", false, "The version of API is not supported."),
    (36, "TOPIC_ALREADY_EXISTS", false, "Topic with this name already exists."),
    (37, "INVALID_PARTITIONS", false, "Number of partitions is below 1."),
    (38, "INVALID_REPLICATION_FACTOR", false, "Replication factor is below 1 or larger than the number of available brokers."),
    (39, "INVALID_REPLICA_ASSIGNMENT", false, "Replica assignment is invalid."),
    (40, "INVALID_CONFIG", false, "Configuration is invalid."),
    (41, "NOT_CONTROLLER", true, "This is not the correct controller for this cluster."),
    (42, "INVALID_REQUEST", false, "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", false, "The message format version on the broker does not support the request."),
    (44, "POLICY_VIOLATION", false, "Request parameters do not satisfy the configured policy."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", false, "The broker received an out of order sequence number."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", false, "The broker received a duplicate sequence number."),
    (47, "INVALID_PRODUCER_EPOCH", false, "Producer attempted to produce with an old epoch."),
    (48, "INVALID_TXN_STATE", false, "The producer attempted a transactional operation in an invalid state."),
    (49, "INVALID_PRODUCER_ID_MAPPING", false, "The producer attempted to use a producer id which is not currently assigned to its transactional id."),
    (50, "INVALID_TRANSACTION_TIMEOUT", false, "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms)."),
    (51, "CONCURRENT_TRANSACTIONS", true, "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing."),
    (52, "TRANSACTION_COORDINATOR_FENCED", false, "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", false, "Transactional Id authorization failed."),
    (54, "SECURITY_DISABLED", false, "Security features are disabled."),
    (55, "OPERATION_NOT_ATTEMPTED", false, "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest."),
    (56, "KAFKA_STORAGE_ERROR", true, "Disk error when trying to access log file on the disk."),
    (57, "LOG_DIR_NOT_FOUND", false, "The user-specified log directory is not found in the broker config."),
    (58, "SASL_AUTHENTICATION_FAILED", false, "SASL Authentication failed."),
    (59, "UNKNOWN_PRODUCER_ID", false, "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception."),
    (60, "REASSIGNMENT_IN_PROGRESS", false, "A partition reassignment is in progress."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", false, "Delegation Token feature is not enabled."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", false, "Delegation Token is not found on server."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", false, "Specified Principal is not valid Owner/Renewer."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", false, "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", false, "Delegation Token authorization failed."),
    (66, "DELEGATION_TOKEN_EXPIRED", false, "Delegation Token is expired."),
    (67, "INVALID_PRINCIPAL_TYPE", false, "Supplied principalType is not supported."),
    (68, "NON_EMPTY_GROUP", false, "The group is not empty."),
    (69, "GROUP_ID_NOT_FOUND", false, "The group id does not exist."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", true, "The fetch session ID was not found."),
    (71, "INVALID_FETCH_SESSION_EPOCH", true, "The fetch session epoch is invalid."),
    (72, "LISTENER_NOT_FOUND", true, "There is no listener on the leader broker that matches the listener on which metadata request was processed."),
    (73, "TOPIC_DELETION_DISABLED", false, "Topic deletion is disabled."),
    (74, "FENCED_LEADER_EPOCH", true, "The leader epoch in the request is older than the epoch on the broker."),
    (75, "UNKNOWN_LEADER_EPOCH", true, "The leader epoch in the request is newer than the epoch on the broker."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", false, "The requesting client does not support the compression type of given partition."),
    (77, "STALE_BROKER_EPOCH", false, "Broker epoch has changed."),
    (78, "OFFSET_NOT_AVAILABLE", true, "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing."),
    (79, "MEMBER_ID_REQUIRED", false, "The group member needs to have a valid member id before actually entering a consumer group."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", true, "The preferred leader was not available."),
    (81, "GROUP_MAX_SIZE_REACHED", false, "The group has reached its maximum size."),
    (82, "FENCED_INSTANCE_ID", false, "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", true, "Eligible topic partition leaders are not available."),
    (84, "ELECTION_NOT_NEEDED", true, "Leader election not needed for topic partition."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", false, "No partition reassignment is in progress."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", false, "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."),
    (87, "INVALID_RECORD", false, "This record has failed the validation on broker and hence will be rejected."),
    (88, "UNSTABLE_OFFSET_COMMIT", true, "There are unstable offsets that need to be cleared."),
    (89, "THROTTLING_QUOTA_EXCEEDED", true, "The throttling quota has been exceeded."),
    (90, "PRODUCER_FENCED", false, "There is a newer producer with the same transactionalId which fences the current one."),
    (91, "RESOURCE_NOT_FOUND", false, "A request illegally referred to a resource that does not exist."),
    (92, "DUPLICATE_RESOURCE", false, "A request illegally referred to the same resource twice."),
    (93, "UNACCEPTABLE_CREDENTIAL", false, "Requested credential would not meet criteria for acceptability."),
    (94, "INCONSISTENT_VOTER_SET", false, "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters."),
    (95, "INVALID_UPDATE_VERSION", false, "The given update version was invalid."),
    (96, "FEATURE_UPDATE_FAILED", false, "Unable to update finalized features due to an unexpected server error."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", false, "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup."),
    (98, "SNAPSHOT_NOT_FOUND", false, "Requested snapshot was not found."),
    (99, "POSITION_OUT_OF_RANGE", false, "Requested position is not greater than or equal to zero, and less than the size of the snapshot."),
    (100, "UNKNOWN_TOPIC_ID", true, "This server does not host this topic ID."),
    (101, "DUPLICATE_BROKER_REGISTRATION", false, "This broker ID is already in use."),
    (102, "BROKER_ID_NOT_REGISTERED", false, "The given broker ID was not registered."),
    (103, "INCONSISTENT_TOPIC_ID", true, "The log's topic ID did not match the topic ID in the request."),
    (104, "INCONSISTENT_CLUSTER_ID", false, "The clusterId in the request does not match that found on the server."),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", false, "The transactionalId could not be found."),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", true, "The fetch session encountered inconsistent topic ID usage."),
    (107, "INELIGIBLE_REPLICA", false, "The new ISR contains at least one ineligible replica."),
    (108, "NEW_LEADER_ELECTED", false, "The AlterPartition request successfully updated the partition state but the leader has changed."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", false, "The requested offset is moved to tiered storage."),
    (110, "FENCED_MEMBER_EPOCH", false, "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin."),
    (111, "UNRELEASED_INSTANCE_ID", false, "The instance ID is still used by another member in the consumer group. That member must leave first."),
    (112, "UNSUPPORTED_ASSIGNOR", false, "The assignor or its version range is not supported by the consumer group."),
    (113, "STALE_MEMBER_EPOCH", false, "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API."),
    (114, "MISMATCHED_ENDPOINT_TYPE", false, "The request was sent to an endpoint of the wrong type."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", false, "This endpoint type is not supported yet."),
    (116, "UNKNOWN_CONTROLLER_ID", false, "This controller ID is not known."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", false, "Client sent a push telemetry request with an invalid or outdated subscription ID."),
    (118, "TELEMETRY_TOO_LARGE", false, "Client sent a push telemetry request larger than the maximum size the broker will accept."),
    (119, "INVALID_REGISTRATION", false, "The controller has considered the broker registration to be invalid."),
    (120, "TRANSACTION_ABORTABLE", false, "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID."),
    (121, "INVALID_RECORD_STATE", false, "The record state is invalid. The acknowledgement of delivery could not be completed."),
    (122, "SHARE_SESSION_NOT_FOUND", true, "The share session was not found."),
    (123, "INVALID_SHARE_SESSION_EPOCH", true, "The share session epoch is invalid."),
    (124, "FENCED_STATE_EPOCH", false, "The share coordinator rejected the request because the share-group state epoch did not match."),
    (125, "INVALID_VOTER_KEY", false, "The voter key doesn't match the receiving replica's key."),
    (126, "DUPLICATE_VOTER", false, "The voter is already part of the set of voters."),
    (127, "VOTER_NOT_FOUND", false, "The voter is not part of the set of voters."),
    (128, "INVALID_REGULAR_EXPRESSION", false, "The regular expression is not valid."),
    (129, "REBOOTSTRAP_REQUIRED", false, "Client metadata is stale. The client should rebootstrap to obtain new metadata."),
    (130, "STREAMS_INVALID_TOPOLOGY", false, "The supplied topology is invalid."),
    (131, "STREAMS_INVALID_TOPOLOGY_EPOCH", false, "The supplied topology epoch is invalid."),
    (132, "STREAMS_TOPOLOGY_FENCED", false, "The supplied topology epoch is outdated."),
    (133, "SHARE_SESSION_LIMIT_REACHED", true, "The limit of share sessions has been reached."),
];
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_kafkas_names_and_retriable_flags() {
        let cases = [
            (-1, "UNKNOWN_SERVER_ERROR", false),
            (0, "NONE", false),
            (3, "UNKNOWN_TOPIC_OR_PARTITION", true),
            (17, "INVALID_TOPIC_EXCEPTION", false),
            (35, "UNSUPPORTED_VERSION", false),
            (36, "TOPIC_ALREADY_EXISTS", false),
            (37, "INVALID_PARTITIONS", false),
            (38, "INVALID_REPLICATION_FACTOR", false),
            (40, "INVALID_CONFIG", false),
            (41, "NOT_CONTROLLER", true),
            (51, "CONCURRENT_TRANSACTIONS", true),
            (133, "SHARE_SESSION_LIMIT_REACHED", true),
            (999, "UNKNOWN_ERROR_CODE_999", false),
        ];
        for (code, name, retriable) in cases {
            assert_eq!(ErrorCode(code).name(), name);
            assert_eq!(ErrorCode(code).is_retriable(), retriable, "{name}");
        }
    }

    #[test]
    fn table_is_sorted_without_duplicates() {
        assert!(ERRORS.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert_eq!(ERRORS.len(), 134);
    }

    #[test]
    fn api_errors_show_the_brokers_message_or_kafkas_description() {
        let error = ErrorCode::TOPIC_ALREADY_EXISTS.check(Some("Topic 'x' already exists."));
        assert_eq!(
            error.unwrap_err().to_string(),
            "Topic 'x' already exists. (TOPIC_ALREADY_EXISTS)"
        );
        let error = ErrorCode::INVALID_PARTITIONS.check(None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "Number of partitions is below 1. (INVALID_PARTITIONS)"
        );
        assert!(ErrorCode::NONE.check(Some("ignored")).is_ok());
    }

    #[test]
    fn every_constant_has_its_own_name_and_code() {
        #[rustfmt::skip]
        let constants = [
            (ErrorCode::NONE, "NONE"),
            (ErrorCode::UNKNOWN_SERVER_ERROR, "UNKNOWN_SERVER_ERROR"),
            (ErrorCode::OFFSET_OUT_OF_RANGE, "OFFSET_OUT_OF_RANGE"),
            (ErrorCode::CORRUPT_MESSAGE, "CORRUPT_MESSAGE"),
            (ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "UNKNOWN_TOPIC_OR_PARTITION"),
            (ErrorCode::INVALID_FETCH_SIZE, "INVALID_FETCH_SIZE"),
            (ErrorCode::LEADER_NOT_AVAILABLE, "LEADER_NOT_AVAILABLE"),
            (ErrorCode::NOT_LEADER_OR_FOLLOWER, "NOT_LEADER_OR_FOLLOWER"),
            (ErrorCode::REQUEST_TIMED_OUT, "REQUEST_TIMED_OUT"),
            (ErrorCode::BROKER_NOT_AVAILABLE, "BROKER_NOT_AVAILABLE"),
            (ErrorCode::REPLICA_NOT_AVAILABLE, "REPLICA_NOT_AVAILABLE"),
            (ErrorCode::MESSAGE_TOO_LARGE, "MESSAGE_TOO_LARGE"),
            (ErrorCode::STALE_CONTROLLER_EPOCH, "STALE_CONTROLLER_EPOCH"),
            (ErrorCode::OFFSET_METADATA_TOO_LARGE, "OFFSET_METADATA_TOO_LARGE"),
            (ErrorCode::NETWORK_EXCEPTION, "NETWORK_EXCEPTION"),
            (ErrorCode::COORDINATOR_LOAD_IN_PROGRESS, "COORDINATOR_LOAD_IN_PROGRESS"),
            (ErrorCode::COORDINATOR_NOT_AVAILABLE, "COORDINATOR_NOT_AVAILABLE"),
            (ErrorCode::NOT_COORDINATOR, "NOT_COORDINATOR"),
            (ErrorCode::INVALID_TOPIC_EXCEPTION, "INVALID_TOPIC_EXCEPTION"),
            (ErrorCode::RECORD_LIST_TOO_LARGE, "RECORD_LIST_TOO_LARGE"),
            (ErrorCode::NOT_ENOUGH_REPLICAS, "NOT_ENOUGH_REPLICAS"),
            (ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND, "NOT_ENOUGH_REPLICAS_AFTER_APPEND"),
            (ErrorCode::INVALID_REQUIRED_ACKS, "INVALID_REQUIRED_ACKS"),
            (ErrorCode::ILLEGAL_GENERATION, "ILLEGAL_GENERATION"),
            (ErrorCode::INCONSISTENT_GROUP_PROTOCOL, "INCONSISTENT_GROUP_PROTOCOL"),
            (ErrorCode::INVALID_GROUP_ID, "INVALID_GROUP_ID"),
            (ErrorCode::UNKNOWN_MEMBER_ID, "UNKNOWN_MEMBER_ID"),
            (ErrorCode::INVALID_SESSION_TIMEOUT, "INVALID_SESSION_TIMEOUT"),
            (ErrorCode::REBALANCE_IN_PROGRESS, "REBALANCE_IN_PROGRESS"),
            (ErrorCode::INVALID_COMMIT_OFFSET_SIZE, "INVALID_COMMIT_OFFSET_SIZE"),
            (ErrorCode::TOPIC_AUTHORIZATION_FAILED, "TOPIC_AUTHORIZATION_FAILED"),
            (ErrorCode::GROUP_AUTHORIZATION_FAILED, "GROUP_AUTHORIZATION_FAILED"),
            (ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "CLUSTER_AUTHORIZATION_FAILED"),
            (ErrorCode::INVALID_TIMESTAMP, "INVALID_TIMESTAMP"),
            (ErrorCode::UNSUPPORTED_SASL_MECHANISM, "UNSUPPORTED_SASL_MECHANISM"),
            (ErrorCode::ILLEGAL_SASL_STATE, "ILLEGAL_SASL_STATE"),
            (ErrorCode::UNSUPPORTED_VERSION, "UNSUPPORTED_VERSION"),
            (ErrorCode::TOPIC_ALREADY_EXISTS, "TOPIC_ALREADY_EXISTS"),
            (ErrorCode::INVALID_PARTITIONS, "INVALID_PARTITIONS"),
            (ErrorCode::INVALID_REPLICATION_FACTOR, "INVALID_REPLICATION_FACTOR"),
            (ErrorCode::INVALID_REPLICA_ASSIGNMENT, "INVALID_REPLICA_ASSIGNMENT"),
            (ErrorCode::INVALID_CONFIG, "INVALID_CONFIG"),
            (ErrorCode::NOT_CONTROLLER, "NOT_CONTROLLER"),
            (ErrorCode::INVALID_REQUEST, "INVALID_REQUEST"),
            (ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT, "UNSUPPORTED_FOR_MESSAGE_FORMAT"),
            (ErrorCode::POLICY_VIOLATION, "POLICY_VIOLATION"),
            (ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER, "OUT_OF_ORDER_SEQUENCE_NUMBER"),
            (ErrorCode::DUPLICATE_SEQUENCE_NUMBER, "DUPLICATE_SEQUENCE_NUMBER"),
            (ErrorCode::INVALID_PRODUCER_EPOCH, "INVALID_PRODUCER_EPOCH"),
            (ErrorCode::INVALID_TXN_STATE, "INVALID_TXN_STATE"),
            (ErrorCode::INVALID_PRODUCER_ID_MAPPING, "INVALID_PRODUCER_ID_MAPPING"),
            (ErrorCode::INVALID_TRANSACTION_TIMEOUT, "INVALID_TRANSACTION_TIMEOUT"),
            (ErrorCode::CONCURRENT_TRANSACTIONS, "CONCURRENT_TRANSACTIONS"),
            (ErrorCode::TRANSACTION_COORDINATOR_FENCED, "TRANSACTION_COORDINATOR_FENCED"),
            (ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"),
            (ErrorCode::SECURITY_DISABLED, "SECURITY_DISABLED"),
            (ErrorCode::OPERATION_NOT_ATTEMPTED, "OPERATION_NOT_ATTEMPTED"),
            (ErrorCode::KAFKA_STORAGE_ERROR, "KAFKA_STORAGE_ERROR"),
            (ErrorCode::LOG_DIR_NOT_FOUND, "LOG_DIR_NOT_FOUND"),
            (ErrorCode::SASL_AUTHENTICATION_FAILED, "SASL_AUTHENTICATION_FAILED"),
            (ErrorCode::UNKNOWN_PRODUCER_ID, "UNKNOWN_PRODUCER_ID"),
            (ErrorCode::REASSIGNMENT_IN_PROGRESS, "REASSIGNMENT_IN_PROGRESS"),
            (ErrorCode::DELEGATION_TOKEN_AUTH_DISABLED, "DELEGATION_TOKEN_AUTH_DISABLED"),
            (ErrorCode::DELEGATION_TOKEN_NOT_FOUND, "DELEGATION_TOKEN_NOT_FOUND"),
            (ErrorCode::DELEGATION_TOKEN_OWNER_MISMATCH, "DELEGATION_TOKEN_OWNER_MISMATCH"),
            (ErrorCode::DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED"),
            (ErrorCode::DELEGATION_TOKEN_AUTHORIZATION_FAILED, "DELEGATION_TOKEN_AUTHORIZATION_FAILED"),
            (ErrorCode::DELEGATION_TOKEN_EXPIRED, "DELEGATION_TOKEN_EXPIRED"),
            (ErrorCode::INVALID_PRINCIPAL_TYPE, "INVALID_PRINCIPAL_TYPE"),
            (ErrorCode::NON_EMPTY_GROUP, "NON_EMPTY_GROUP"),
            (ErrorCode::GROUP_ID_NOT_FOUND, "GROUP_ID_NOT_FOUND"),
            (ErrorCode::FETCH_SESSION_ID_NOT_FOUND, "FETCH_SESSION_ID_NOT_FOUND"),
            (ErrorCode::INVALID_FETCH_SESSION_EPOCH, "INVALID_FETCH_SESSION_EPOCH"),
            (ErrorCode::LISTENER_NOT_FOUND, "LISTENER_NOT_FOUND"),
            (ErrorCode::TOPIC_DELETION_DISABLED, "TOPIC_DELETION_DISABLED"),
            (ErrorCode::FENCED_LEADER_EPOCH, "FENCED_LEADER_EPOCH"),
            (ErrorCode::UNKNOWN_LEADER_EPOCH, "UNKNOWN_LEADER_EPOCH"),
            (ErrorCode::UNSUPPORTED_COMPRESSION_TYPE, "UNSUPPORTED_COMPRESSION_TYPE"),
            (ErrorCode::STALE_BROKER_EPOCH, "STALE_BROKER_EPOCH"),
            (ErrorCode::OFFSET_NOT_AVAILABLE, "OFFSET_NOT_AVAILABLE"),
            (ErrorCode::MEMBER_ID_REQUIRED, "MEMBER_ID_REQUIRED"),
            (ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE, "PREFERRED_LEADER_NOT_AVAILABLE"),
            (ErrorCode::GROUP_MAX_SIZE_REACHED, "GROUP_MAX_SIZE_REACHED"),
            (ErrorCode::FENCED_INSTANCE_ID, "FENCED_INSTANCE_ID"),
            (ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE, "ELIGIBLE_LEADERS_NOT_AVAILABLE"),
            (ErrorCode::ELECTION_NOT_NEEDED, "ELECTION_NOT_NEEDED"),
            (ErrorCode::NO_REASSIGNMENT_IN_PROGRESS, "NO_REASSIGNMENT_IN_PROGRESS"),
            (ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC, "GROUP_SUBSCRIBED_TO_TOPIC"),
            (ErrorCode::INVALID_RECORD, "INVALID_RECORD"),
            (ErrorCode::UNSTABLE_OFFSET_COMMIT, "UNSTABLE_OFFSET_COMMIT"),
            (ErrorCode::THROTTLING_QUOTA_EXCEEDED, "THROTTLING_QUOTA_EXCEEDED"),
            (ErrorCode::PRODUCER_FENCED, "PRODUCER_FENCED"),
            (ErrorCode::RESOURCE_NOT_FOUND, "RESOURCE_NOT_FOUND"),
            (ErrorCode::DUPLICATE_RESOURCE, "DUPLICATE_RESOURCE"),
            (ErrorCode::UNACCEPTABLE_CREDENTIAL, "UNACCEPTABLE_CREDENTIAL"),
            (ErrorCode::INCONSISTENT_VOTER_SET, "INCONSISTENT_VOTER_SET"),
            (ErrorCode::INVALID_UPDATE_VERSION, "INVALID_UPDATE_VERSION"),
            (ErrorCode::FEATURE_UPDATE_FAILED, "FEATURE_UPDATE_FAILED"),
            (ErrorCode::PRINCIPAL_DESERIALIZATION_FAILURE, "PRINCIPAL_DESERIALIZATION_FAILURE"),
            (ErrorCode::SNAPSHOT_NOT_FOUND, "SNAPSHOT_NOT_FOUND"),
            (ErrorCode::POSITION_OUT_OF_RANGE, "POSITION_OUT_OF_RANGE"),
            (ErrorCode::UNKNOWN_TOPIC_ID, "UNKNOWN_TOPIC_ID"),
            (ErrorCode::DUPLICATE_BROKER_REGISTRATION, "DUPLICATE_BROKER_REGISTRATION"),
            (ErrorCode::BROKER_ID_NOT_REGISTERED, "BROKER_ID_NOT_REGISTERED"),
            (ErrorCode::INCONSISTENT_TOPIC_ID, "INCONSISTENT_TOPIC_ID"),
            (ErrorCode::INCONSISTENT_CLUSTER_ID, "INCONSISTENT_CLUSTER_ID"),
            (ErrorCode::TRANSACTIONAL_ID_NOT_FOUND, "TRANSACTIONAL_ID_NOT_FOUND"),
            (ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR, "FETCH_SESSION_TOPIC_ID_ERROR"),
            (ErrorCode::INELIGIBLE_REPLICA, "INELIGIBLE_REPLICA"),
            (ErrorCode::NEW_LEADER_ELECTED, "NEW_LEADER_ELECTED"),
            (ErrorCode::OFFSET_MOVED_TO_TIERED_STORAGE, "OFFSET_MOVED_TO_TIERED_STORAGE"),
            (ErrorCode::FENCED_MEMBER_EPOCH, "FENCED_MEMBER_EPOCH"),
            (ErrorCode::UNRELEASED_INSTANCE_ID, "UNRELEASED_INSTANCE_ID"),
            (ErrorCode::UNSUPPORTED_ASSIGNOR, "UNSUPPORTED_ASSIGNOR"),
            (ErrorCode::STALE_MEMBER_EPOCH, "STALE_MEMBER_EPOCH"),
            (ErrorCode::MISMATCHED_ENDPOINT_TYPE, "MISMATCHED_ENDPOINT_TYPE"),
            (ErrorCode::UNSUPPORTED_ENDPOINT_TYPE, "UNSUPPORTED_ENDPOINT_TYPE"),
            (ErrorCode::UNKNOWN_CONTROLLER_ID, "UNKNOWN_CONTROLLER_ID"),
            (ErrorCode::UNKNOWN_SUBSCRIPTION_ID, "UNKNOWN_SUBSCRIPTION_ID"),
            (ErrorCode::TELEMETRY_TOO_LARGE, "TELEMETRY_TOO_LARGE"),
            (ErrorCode::INVALID_REGISTRATION, "INVALID_REGISTRATION"),
            (ErrorCode::TRANSACTION_ABORTABLE, "TRANSACTION_ABORTABLE"),
            (ErrorCode::INVALID_RECORD_STATE, "INVALID_RECORD_STATE"),
            (ErrorCode::SHARE_SESSION_NOT_FOUND, "SHARE_SESSION_NOT_FOUND"),
            (ErrorCode::INVALID_SHARE_SESSION_EPOCH, "INVALID_SHARE_SESSION_EPOCH"),
            (ErrorCode::FENCED_STATE_EPOCH, "FENCED_STATE_EPOCH"),
            (ErrorCode::INVALID_VOTER_KEY, "INVALID_VOTER_KEY"),
            (ErrorCode::DUPLICATE_VOTER, "DUPLICATE_VOTER"),
            (ErrorCode::VOTER_NOT_FOUND, "VOTER_NOT_FOUND"),
            (ErrorCode::INVALID_REGULAR_EXPRESSION, "INVALID_REGULAR_EXPRESSION"),
            (ErrorCode::REBOOTSTRAP_REQUIRED, "REBOOTSTRAP_REQUIRED"),
            (ErrorCode::STREAMS_INVALID_TOPOLOGY, "STREAMS_INVALID_TOPOLOGY"),
            (ErrorCode::STREAMS_INVALID_TOPOLOGY_EPOCH, "STREAMS_INVALID_TOPOLOGY_EPOCH"),
            (ErrorCode::STREAMS_TOPOLOGY_FENCED, "STREAMS_TOPOLOGY_FENCED"),
            (ErrorCode::SHARE_SESSION_LIMIT_REACHED, "SHARE_SESSION_LIMIT_REACHED"),
        ];
        let mut codes = std::collections::HashSet::new();
        for (code, name) in constants {
            assert_eq!(code.name(), name);
            assert_eq!(code.to_string(), name);
            assert_eq!(ErrorCode::from(code.code()), code);
            assert_eq!(i16::from(code), code.0);
            assert!(codes.insert(code), "{name} shares its code");
        }
        assert_eq!(codes.len(), ERRORS.len() + 1);
    }
}
