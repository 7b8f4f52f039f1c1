//! The Kafka wire protocol as Sluice speaks it.
//!
//! This crate holds what both ends of a Kafka connection share: the v2 record batch
//! (a zero-copy view, its records, validation and a builder whose bytes match the Java
//! client's), Kafka's compression codecs, its variable-length integers, and its schema
//! encodings for the formats Kafka embeds in other bytes (the classic consumer
//! protocol's subscriptions and assignments, the records of `__consumer_offsets`), and
//! Kafka's error codes ([`ErrorCode`]), for the broker and the client alike. It
//! is not a broker or a client: it has no I/O. The request and response types are the
//! vendored `kafka-protocol` crate's; framing is in the broker (`sluice-broker`'s
//! `network` module) and the client (`sluice-client`'s `connection` module).

pub mod compression;
pub mod consumer_protocol;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod record_batch;
pub mod schema;
pub mod varint;

pub use compression::{Compression, CompressionError};
pub use error::{ApiError, ErrorCode};
pub use record_batch::{
    BatchError, BatchHeader, Header, NewRecord, Record, RecordBatch, RecordBatchBuilder,
    TimestampType, batches,
};
