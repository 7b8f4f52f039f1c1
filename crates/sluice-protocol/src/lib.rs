//! The Kafka wire protocol as Sluice speaks it.
//!
//! This crate holds what both ends of a Kafka connection share: the v2 record batch
//! (a zero-copy view, its records, validation and a builder whose bytes match the Java
//! client's), Kafka's compression codecs and its variable-length integers. It is not a
//! broker or a client: it has no I/O. Request and response framing joins it with the
//! broker (issue 3).

pub mod compression;
pub mod consumer_protocol;
#[doc(hidden)]
pub mod fuzzing;
pub mod record_batch;
pub mod schema;
pub mod varint;

pub use compression::{Compression, CompressionError};
pub use record_batch::{
    BatchError, Header, NewRecord, Record, RecordBatch, RecordBatchBuilder, TimestampType, batches,
};
