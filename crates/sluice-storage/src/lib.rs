//! The Sluice partition log: Kafka's on-disk format, so the broker serves batches as they
//! lie on disk and an operator recognises every file.
//!
//! A [`Log`] is one partition: a directory `<topic>-<partition>/` of segments
//! (`{base_offset:020}.log` + `.index` + `.timeindex`, and `.txnindex` once a transaction
//! aborted in it), producer snapshots (`{offset:020}.snapshot`), a
//! `leader-epoch-checkpoint` and a `partition.metadata`. A [`LogManager`] owns one log directory: it opens every
//! partition in it, keeps the per-directory `recovery-point-offset-checkpoint` and
//! `log-start-offset-checkpoint`, and the clean-shutdown marker that decides whether the
//! next start must recover.
//!
//! This crate stores bytes; it does not decide who may write them. Replication, the
//! high watermark and producer-state checks belong to the broker, which calls
//! [`Log::append_as_leader`] / [`Log::append_as_follower`], [`Log::read`] and
//! [`Log::truncate_to`].

pub mod checkpoint;
pub mod cleaner;
pub mod clock;
pub mod config;
pub mod end_txn_marker;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
mod index;
pub mod leader_epoch;
pub mod log;
pub mod log_manager;
mod offset_index;
pub mod producer_state;
mod segment;
mod time_index;
pub mod transaction_index;

pub use checkpoint::TopicId;
pub use config::LogConfig;
pub use end_txn_marker::TxnMarker;
pub use error::{Result, StorageError};
pub use log::{FetchData, Log, LogAppendInfo, LogOpenOptions, SegmentInfo, now_ms};
pub use log_manager::{LogManager, SharedLog, TopicPartition, lock};
pub use segment::segment_file_name;
pub use transaction_index::AbortedTxn;
