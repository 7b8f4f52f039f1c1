//! Errors of the stream library: one typed enum for job building and execution.
//!
//! Flink throws exceptions from `execute()` and from user functions; here every fallible
//! path returns `StreamError`. Programming mistakes that Flink reports when the job graph is
//! built (a window size of zero, an offset not smaller than the size) are collected while the
//! graph is built and returned by `execute`, so building a pipeline never panics.

use thiserror::Error;

/// Why a job could not be built or failed while running.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StreamError {
    /// The job graph is invalid (Flink: `IllegalArgumentException` at graph build time).
    #[error("invalid job configuration: {0}")]
    InvalidConfiguration(String),
    /// An event-time operator received a record without a timestamp (Flink: "Record has
    /// Long.MIN_VALUE timestamp (= no timestamp marker)"). Assign a `WatermarkStrategy` with a
    /// timestamp assigner at the source.
    #[error("operator {operator} needs event-time timestamps but a record has none")]
    MissingTimestamp { operator: String },
    /// A source script moved processing time but the environment does not use a
    /// `ManualClock`.
    #[error(
        "source {source_name} sets processing time but the environment's clock is not a ManualClock"
    )]
    ManualClockRequired { source_name: String },
    /// A source script moved processing time backwards.
    #[error("source {source_name} moves processing time backwards: {from_ms} -> {to_ms}")]
    ProcessingTimeBackwards {
        source_name: String,
        from_ms: i64,
        to_ms: i64,
    },
    /// One source step produced more in-flight events than the executor holds.
    #[error("more than {events_max} events in flight after one source step")]
    WorkQueueFull { events_max: usize },
    /// Keyed state was used incorrectly.
    #[error(transparent)]
    State(#[from] StateError),
    /// A user function failed.
    #[error("user function failed: {0}")]
    Function(String),
    /// Writing or reading a checkpoint failed, or a checkpoint does not fit the job.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
}

/// Misuse of keyed state.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StateError {
    /// Keyed state is only accessible while a keyed operator processes a record or a timer
    /// (Flink: "No key set. This method should not be called outside of a keyed context.").
    #[error("state {state} accessed outside of a keyed context")]
    NoKeyContext { state: String },
    /// Two descriptors with the same name but different kinds or types.
    #[error("state {state} is registered twice with different types")]
    TypeMismatch { state: String },
    /// A state value or key could not be (de)serialized for a checkpoint or a restore.
    #[error("state {state} could not be (de)serialized: {message}")]
    Serialization { state: String, message: String },
    /// The state backend's storage failed (a disk backend's I/O).
    #[error("state backend: {message}")]
    Backend { message: String },
    /// A restored cell or timer's key does not hash to the key group it was stored under:
    /// the snapshot is corrupt or was taken with another `max_parallelism`.
    #[error("state {state}: a restored key belongs to key group {actual}, not {expected}")]
    KeyGroupMismatch {
        state: String,
        expected: u32,
        actual: u32,
    },
}
