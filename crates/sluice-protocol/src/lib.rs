//! The Kafka wire protocol as Sluice speaks it.
//!
//! This crate holds what both ends of a Kafka connection share: the v2 record batch
//! (a zero-copy view, its records, validation and a builder whose bytes match the Java
//! client's), Kafka's compression codecs, its variable-length integers, and its schema
//! encodings for the formats Kafka embeds in other bytes (the classic consumer
//! protocol's subscriptions and assignments, the records of `__consumer_offsets`), and
//! Kafka's error codes ([`ErrorCode`]), for the broker and the client alike.
//!
//! It also holds Kafka's framing ([`frame`]: size-prefixed frames read under a limit,
//! their buffer growing only as bytes arrive) and the one client-side connection built on
//! it ([`connection::FrameConnection`]: correlation ids, timeouts, close on any error),
//! which the client's `Connection`, the broker's connections to other brokers and the
//! Raft quorum's RPCs share, so a fix in framing is made once. It sits here, at the
//! bottom, rather than in `sluice-client` because the broker must not depend on the
//! client (the client's tests run the broker) and the quorum's frames are not Kafka
//! APIs; the codecs above stay free of I/O. The request and response types are the
//! vendored `kafka-protocol` crate's; the broker's listener side is its `network`
//! module.

pub mod compression;
pub mod connection;
pub mod consumer_protocol;
pub mod error;
pub mod frame;
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
