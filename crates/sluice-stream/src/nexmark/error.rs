//! Errors of the Nexmark generator: a config that cannot generate a valid stream, or an
//! event that cannot be read back from its JSON form.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum NexmarkError {
    /// A `GeneratorConfig` field would make the generator divide by zero, draw from an
    /// empty range or overflow an id or a timestamp.
    #[error("invalid Nexmark generator config: {field} {reason}")]
    InvalidConfig {
        field: &'static str,
        reason: &'static str,
    },
    /// A partition index not below the partition count, or zero partitions.
    #[error("invalid Nexmark partition {index} of {count}")]
    InvalidPartition { index: u64, count: u64 },
    /// The bytes are not JSON of the event shape.
    #[error("malformed Nexmark event JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON has the shape but not a valid event (unknown type code, missing payload).
    #[error("malformed Nexmark event: {0}")]
    MalformedEvent(String),
}
