//! What a producer call or a record's delivery fails with, and the Java client's split of
//! transactional errors into fatal and abortable ones.
//!
//! The mapping (Kafka's `TransactionManager`):
//!
//! | error | kind |
//! |---|---|
//! | PRODUCER_FENCED, INVALID_PRODUCER_EPOCH (a newer producer took the transactional id) | fatal |
//! | TRANSACTIONAL_ID_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED | fatal |
//! | INVALID_PRODUCER_ID_MAPPING, INVALID_TXN_STATE, UNSUPPORTED_VERSION, UNSUPPORTED_FOR_MESSAGE_FORMAT | fatal |
//! | TRANSACTION_ABORTABLE, OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, a record's error, delivery timeout, any other non-retriable error in a transaction | abortable |
//! | retriable errors (NOT_LEADER_OR_FOLLOWER, COORDINATOR_*, CONCURRENT_TRANSACTIONS, ...) | retried until `delivery.timeout.ms` / `max.block.ms` |
//!
//! After a fatal error every call fails; the producer must be dropped. After an abortable
//! one, `abort_transaction` makes the producer usable again.

use std::sync::Arc;

use crate::error::{ApiError, Error, ErrorCode};

/// Why a producer call or a record's delivery failed. Cloneable: one batch's failure is
/// every record's in it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProducerError {
    /// A setting is unknown or invalid.
    #[error("invalid producer configuration {key}: {reason}")]
    Config { key: String, reason: String },
    /// The broker answered with an error code.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The connection, protocol or version negotiation failed.
    #[error(transparent)]
    Client(Arc<Error>),
    /// `max.block.ms`, `delivery.timeout.ms` or `transaction.timeout.ms` passed.
    #[error("{what} timed out after {setting}={timeout_ms}")]
    Timeout {
        what: String,
        setting: &'static str,
        timeout_ms: u64,
    },
    /// A record larger than `max.request.size` or `buffer.memory`.
    #[error("the record is {size_bytes} bytes, larger than {setting}={limit_bytes}")]
    RecordTooLarge {
        size_bytes: usize,
        setting: &'static str,
        limit_bytes: usize,
    },
    /// A record the batch format cannot hold, or a partition the topic does not have.
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// The producer cannot continue (fenced, not authorized, ...): drop it.
    #[error("fatal producer error, the producer must be closed: {0}")]
    Fatal(Box<ProducerError>),
    /// The transaction cannot commit; `abort_transaction` recovers.
    #[error("the transaction must be aborted: {0}")]
    Abortable(Box<ProducerError>),
    /// A call out of order (`send` outside a transaction, `commit` before `begin`, ...).
    #[error("invalid producer state: {0}")]
    InvalidState(String),
    /// The record was not sent: its transaction was aborted.
    #[error("the transaction was aborted before the record was sent")]
    TransactionAborted,
    /// The producer was closed.
    #[error("the producer is closed")]
    Closed,
}

impl From<Error> for ProducerError {
    fn from(error: Error) -> Self {
        match error {
            Error::Api(api) => ProducerError::Api(api),
            other => ProducerError::Client(Arc::new(other)),
        }
    }
}

impl ProducerError {
    /// The Kafka error code behind this error, if a broker sent one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ProducerError::Api(api) => Some(api.code),
            ProducerError::Fatal(inner) | ProducerError::Abortable(inner) => inner.code(),
            _ => None,
        }
    }

    /// Whether the producer must be dropped.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ProducerError::Fatal(_))
    }

    /// Whether the transaction must be aborted.
    pub fn is_abortable(&self) -> bool {
        matches!(self, ProducerError::Abortable(_))
    }

    /// Whether a retry may succeed: a retriable code or a connection failure.
    pub(crate) fn is_retriable(&self) -> bool {
        match self {
            ProducerError::Api(api) => api.code.is_retriable(),
            ProducerError::Client(error) => matches!(
                **error,
                Error::Connect { .. }
                    | Error::Disconnected { .. }
                    | Error::Timeout { .. }
                    | Error::UnknownNode { .. }
                    | Error::NoBrokerAvailable { .. }
            ),
            _ => false,
        }
    }

    pub(crate) fn api(code: ErrorCode, message: Option<&str>) -> ProducerError {
        ProducerError::Api(ApiError {
            code,
            message: message.map(str::to_string),
        })
    }
}

/// Whether `code` ends a transactional producer (Kafka's fatal errors), as the table in
/// this module's docs says.
pub(crate) fn is_fatal_code(code: ErrorCode) -> bool {
    [
        ErrorCode::PRODUCER_FENCED,
        ErrorCode::INVALID_PRODUCER_EPOCH,
        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        ErrorCode::INVALID_PRODUCER_ID_MAPPING,
        ErrorCode::INVALID_TXN_STATE,
        ErrorCode::UNSUPPORTED_VERSION,
        ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
    ]
    .contains(&code)
}

/// Classifies an error that ended a transactional operation: fatal or abortable.
pub(crate) fn classify(error: ProducerError) -> ProducerError {
    match error {
        ProducerError::Fatal(_) | ProducerError::Abortable(_) => error,
        ProducerError::Client(ref client)
            if matches!(**client, Error::UnsupportedVersion { .. }) =>
        {
            ProducerError::Fatal(Box::new(error))
        }
        _ if error.code().is_some_and(is_fatal_code) => ProducerError::Fatal(Box::new(error)),
        _ => ProducerError::Abortable(Box::new(error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactional_errors_split_as_in_the_java_client() {
        let cases = [
            (ErrorCode::PRODUCER_FENCED, true),
            (ErrorCode::INVALID_PRODUCER_EPOCH, true),
            (ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED, true),
            (ErrorCode::INVALID_TXN_STATE, true),
            (ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER, false),
            (ErrorCode::UNKNOWN_PRODUCER_ID, false),
            (ErrorCode(29), false),  // TOPIC_AUTHORIZATION_FAILED
            (ErrorCode(120), false), // TRANSACTION_ABORTABLE
        ];
        for (code, fatal) in cases {
            let error = classify(ProducerError::api(code, None));
            assert_eq!(error.is_fatal(), fatal, "{code}");
            assert_eq!(error.is_abortable(), !fatal, "{code}");
            assert_eq!(error.code(), Some(code));
        }
    }
}
