//! The errors of the partition log. Each names what a broker maps to a Kafka error code
//! (in one place, in the broker's produce/fetch handlers).

use std::path::PathBuf;

use sluice_protocol::BatchError;

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Kafka: CORRUPT_MESSAGE / INVALID_RECORD.
    #[error("invalid record batch: {0}")]
    InvalidBatch(#[from] BatchError),
    /// Kafka: MESSAGE_TOO_LARGE (RecordBatchTooLargeException).
    #[error("record batch of {size_bytes} bytes exceeds max.message.bytes={max_bytes}")]
    BatchTooLarge { size_bytes: usize, max_bytes: usize },
    /// Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER or INVALID_PRODUCER_EPOCH.
    #[error("{0}")]
    Sequence(#[from] crate::producer_state::SequenceError),
    /// Kafka: OFFSET_OUT_OF_RANGE.
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    /// A follower appended batches whose offsets do not continue the log (Kafka's
    /// UnexpectedAppendOffsetException).
    #[error(
        "append at offset {first_offset} does not continue the log end offset {log_end_offset}"
    )]
    UnexpectedAppendOffset {
        first_offset: i64,
        log_end_offset: i64,
    },
    /// Kafka: INCONSISTENT_TOPIC_ID.
    #[error("partition directory {dir} belongs to topic id {on_disk}, not {requested}")]
    InconsistentTopicId {
        dir: PathBuf,
        on_disk: String,
        requested: String,
    },
    #[error("invalid log configuration: {key}={value}: {reason}")]
    InvalidConfig {
        key: &'static str,
        value: String,
        reason: String,
    },
    #[error("{path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    /// Kafka: KAFKA_STORAGE_ERROR.
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// Attaches a path to an I/O error.
pub(crate) trait IoContext<T> {
    fn at(self, path: &std::path::Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &std::path::Path) -> Result<T> {
        self.map_err(|source| StorageError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
