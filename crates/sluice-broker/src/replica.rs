//! A partition replica hosted by this node: its log and what the leader and followers
//! keep about it.

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};

use sluice_metadata::Uuid;
use sluice_storage::SharedLog;
use tokio::sync::watch;

/// A partition replica hosted by this node.
#[derive(Debug)]
pub struct Replica {
    pub topic_id: Uuid,
    pub log: SharedLog,
    /// The index of the log directory holding it.
    pub dir_index: usize,
    pub(crate) leader_epoch: AtomicI32,
    /// The topic's `message.timestamp.before.max.ms` and `after.max.ms`, kept here so
    /// produce does not derive them from the configs on every request.
    pub(crate) timestamp_before_max_ms: AtomicI64,
    pub(crate) timestamp_after_max_ms: AtomicI64,
    /// The log end offset, published after each append so long-polling fetches wake.
    pub(crate) end_offset: watch::Sender<i64>,
}

impl Replica {
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    /// (`message.timestamp.before.max.ms`, `message.timestamp.after.max.ms`).
    pub fn timestamp_bounds(&self) -> (i64, i64) {
        (
            self.timestamp_before_max_ms.load(Ordering::Relaxed),
            self.timestamp_after_max_ms.load(Ordering::Relaxed),
        )
    }

    /// Publishes a new log end offset to waiting fetches.
    pub fn appended(&self, end_offset: i64) {
        self.end_offset.send_replace(end_offset);
    }

    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.end_offset.subscribe()
    }
}

