//! The client's error type, and Kafka's error codes.
//!
//! [`ErrorCode`] and [`ApiError`] are `sluice_protocol`'s (one table of Kafka's codes for
//! the broker and the client), re-exported here. [`Error`] is what every client call
//! returns: a Kafka error code from the broker, or a failure of the connection, the
//! protocol or version negotiation.

use kafka_protocol::messages::ApiKey;

pub use sluice_protocol::error::{ApiError, ErrorCode};

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The broker answered with a Kafka error code.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The TCP connection could not be made.
    #[error("cannot connect to {address}: {reason}")]
    Connect { address: String, reason: String },
    /// The connection failed or was closed; requests in flight on it fail with this.
    #[error("connection to {address} closed: {reason}")]
    Disconnected { address: String, reason: String },
    /// No response within `request.timeout.ms`; the connection is closed, as Kafka's
    /// clients do, because its state is unknown.
    #[error("{api:?} request to {address} timed out after {timeout_ms} ms")]
    Timeout {
        api: ApiKey,
        address: String,
        timeout_ms: u64,
    },
    /// The client and the broker share no version of an API.
    #[error(
        "the broker at {address} does not support {api:?} at any version this client \
         implements (client: v{client_min}-{client_max}, broker: {broker})"
    )]
    UnsupportedVersion {
        api: ApiKey,
        address: String,
        client_min: i16,
        client_max: i16,
        /// The broker's range, `none` if it does not serve the API.
        broker: String,
    },
    /// Bytes from the broker that do not follow the protocol (a response that does not
    /// decode, an unknown correlation id, an oversized frame).
    #[error("protocol error from {address}: {reason}")]
    Protocol { address: String, reason: String },
    /// A request could not be encoded (a field not valid at the negotiated version).
    #[error("cannot encode {api:?} v{version}: {reason}")]
    Encode {
        api: ApiKey,
        version: i16,
        reason: String,
    },
    /// A setting the client cannot work with.
    #[error("invalid client configuration: {0}")]
    Config(String),
    /// A request was aimed at a broker id the cluster metadata does not list.
    #[error("broker {node_id} is not in the cluster metadata")]
    UnknownNode { node_id: i32 },
    /// None of the bootstrap servers or known brokers could be reached.
    #[error("no broker available (tried {tried}): {last}")]
    NoBrokerAvailable { tried: String, last: Box<Error> },
}

impl Error {
    /// The Kafka error code, if the broker sent one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Api(error) => Some(error.code),
            _ => None,
        }
    }
}
