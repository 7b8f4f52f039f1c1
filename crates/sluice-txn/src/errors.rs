//! Kafka's error codes (`org.apache.kafka.common.protocol.Errors`) that the transaction
//! coordinator answers, and the one place where a request's version changes which code
//! a client is sent. The codes are defined from [`sluice_protocol::ErrorCode`], the one
//! table of Kafka's codes.

use sluice_protocol::ErrorCode;

pub const UNKNOWN_SERVER_ERROR: i16 = ErrorCode::UNKNOWN_SERVER_ERROR.0;
pub const NONE: i16 = ErrorCode::NONE.0;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.0;
pub const COORDINATOR_NOT_AVAILABLE: i16 = ErrorCode::COORDINATOR_NOT_AVAILABLE.0;
pub const NOT_COORDINATOR: i16 = ErrorCode::NOT_COORDINATOR.0;
pub const INVALID_REQUEST: i16 = ErrorCode::INVALID_REQUEST.0;
pub const INVALID_PRODUCER_EPOCH: i16 = ErrorCode::INVALID_PRODUCER_EPOCH.0;
pub const INVALID_TXN_STATE: i16 = ErrorCode::INVALID_TXN_STATE.0;
pub const INVALID_PRODUCER_ID_MAPPING: i16 = ErrorCode::INVALID_PRODUCER_ID_MAPPING.0;
pub const INVALID_TRANSACTION_TIMEOUT: i16 = ErrorCode::INVALID_TRANSACTION_TIMEOUT.0;
pub const CONCURRENT_TRANSACTIONS: i16 = ErrorCode::CONCURRENT_TRANSACTIONS.0;
pub const TRANSACTION_COORDINATOR_FENCED: i16 = ErrorCode::TRANSACTION_COORDINATOR_FENCED.0;
pub const OPERATION_NOT_ATTEMPTED: i16 = ErrorCode::OPERATION_NOT_ATTEMPTED.0;
pub const UNKNOWN_PRODUCER_ID: i16 = ErrorCode::UNKNOWN_PRODUCER_ID.0;
pub const PRODUCER_FENCED: i16 = ErrorCode::PRODUCER_FENCED.0;
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = ErrorCode::TRANSACTIONAL_ID_NOT_FOUND.0;
pub const TRANSACTION_ABORTABLE: i16 = ErrorCode::TRANSACTION_ABORTABLE.0;

/// Clients older than the version that introduced PRODUCER_FENCED do not know it; Kafka's
/// `KafkaApis` sends them INVALID_PRODUCER_EPOCH instead. `first_version_knowing_fenced`
/// is 2 for AddPartitionsToTxn, AddOffsetsToTxn and EndTxn, and 4 for InitProducerId.
pub fn producer_fenced_for_version(
    error: i16,
    api_version: i16,
    first_version_knowing_fenced: i16,
) -> i16 {
    if error == PRODUCER_FENCED && api_version < first_version_knowing_fenced {
        INVALID_PRODUCER_EPOCH
    } else {
        error
    }
}

/// InitProducerId versions below 4 get INVALID_PRODUCER_EPOCH for PRODUCER_FENCED
/// (`TxnShard::init_producer_id` has no request version, so the broker applies this).
pub fn init_producer_id_error_for_version(error: i16, api_version: i16) -> i16 {
    producer_fenced_for_version(error, api_version, 4)
}

/// The coordinator error Kafka's `TransactionStateManager.appendTransactionToLog` answers
/// when the append of a `__transaction_state` record failed with `append_error`.
pub fn coordinator_error_for_append_error(append_error: i16) -> i16 {
    const UNKNOWN_TOPIC_OR_PARTITION: i16 = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
    const REQUEST_TIMED_OUT: i16 = ErrorCode::REQUEST_TIMED_OUT.0;
    const NOT_LEADER_OR_FOLLOWER: i16 = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
    const MESSAGE_TOO_LARGE: i16 = ErrorCode::MESSAGE_TOO_LARGE.0;
    const RECORD_LIST_TOO_LARGE: i16 = ErrorCode::RECORD_LIST_TOO_LARGE.0;
    const NOT_ENOUGH_REPLICAS: i16 = ErrorCode::NOT_ENOUGH_REPLICAS.0;
    const NOT_ENOUGH_REPLICAS_AFTER_APPEND: i16 = ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND.0;
    const KAFKA_STORAGE_ERROR: i16 = ErrorCode::KAFKA_STORAGE_ERROR.0;
    match append_error {
        UNKNOWN_TOPIC_OR_PARTITION
        | NOT_ENOUGH_REPLICAS
        | NOT_ENOUGH_REPLICAS_AFTER_APPEND
        | REQUEST_TIMED_OUT => COORDINATOR_NOT_AVAILABLE,
        NOT_LEADER_OR_FOLLOWER | KAFKA_STORAGE_ERROR => NOT_COORDINATOR,
        MESSAGE_TOO_LARGE | RECORD_LIST_TOO_LARGE => UNKNOWN_SERVER_ERROR,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_is_mapped_only_for_old_versions() {
        let cases = [
            (PRODUCER_FENCED, 0, 2, INVALID_PRODUCER_EPOCH),
            (PRODUCER_FENCED, 1, 2, INVALID_PRODUCER_EPOCH),
            (PRODUCER_FENCED, 2, 2, PRODUCER_FENCED),
            (CONCURRENT_TRANSACTIONS, 0, 2, CONCURRENT_TRANSACTIONS),
        ];
        for (error, version, first, expected) in cases {
            assert_eq!(producer_fenced_for_version(error, version, first), expected);
        }
        assert_eq!(
            init_producer_id_error_for_version(PRODUCER_FENCED, 3),
            INVALID_PRODUCER_EPOCH
        );
        assert_eq!(
            init_producer_id_error_for_version(PRODUCER_FENCED, 4),
            PRODUCER_FENCED
        );
    }

    #[test]
    fn append_errors_map_like_kafka() {
        assert_eq!(
            coordinator_error_for_append_error(19),
            COORDINATOR_NOT_AVAILABLE
        );
        assert_eq!(
            coordinator_error_for_append_error(7),
            COORDINATOR_NOT_AVAILABLE
        );
        assert_eq!(coordinator_error_for_append_error(6), NOT_COORDINATOR);
        assert_eq!(coordinator_error_for_append_error(10), UNKNOWN_SERVER_ERROR);
        assert_eq!(coordinator_error_for_append_error(NONE), NONE);
    }
}
