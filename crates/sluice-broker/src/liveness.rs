//! The active controller's view of broker liveness: when each broker last heartbeat,
//! by the registration it heartbeat for (see `controller.rs` for fencing). Time is a
//! parameter (`*_at`), as Kafka's heartbeat manager takes its `Time`: the controller
//! passes the monotonic clock, tests a clock of their own.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sluice_metadata::MetadataImage;

/// The active controller's record of when each broker last heartbeat, by the
/// registration (broker epoch) it heartbeat for.
#[derive(Debug, Default)]
pub struct Liveness {
    seen: Mutex<HashMap<i32, (i64, Instant)>>,
    /// The Raft term this node last led in: heartbeats are tracked from its start.
    term: Mutex<Option<u64>>,
}

impl Liveness {
    /// Every broker gets a full session from now: after this process did not run (a
    /// pause, a stall), silence it could not observe is not the brokers'.
    pub(crate) fn restart(&self) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    pub(crate) fn saw(&self, broker_id: i32, broker_epoch: i64) {
        self.saw_at(broker_id, broker_epoch, Instant::now());
    }

    /// A heartbeat of `broker_id` for its registration `broker_epoch`, at `now`.
    pub(crate) fn saw_at(&self, broker_id: i32, broker_epoch: i64, now: Instant) {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(broker_id, (broker_epoch, now));
    }

    /// Brokers silent for longer than `timeout`. A broker never heard from counts from
    /// when this node became the leader, and a new registration (a restarted broker's
    /// new epoch) from when this node first sees it, as Kafka's controller counts a
    /// registration as contact: the silence of the broker's previous incarnation is not
    /// the new one's (it was fenced again before its first heartbeat, a second metadata
    /// change right as it came back).
    pub(crate) fn silent(&self, image: &MetadataImage, timeout: Duration, term: u64) -> Vec<i32> {
        self.silent_at(image, timeout, term, Instant::now())
    }

    /// [`Liveness::silent`] at `now`.
    pub(crate) fn silent_at(
        &self,
        image: &MetadataImage,
        timeout: Duration,
        term: u64,
        now: Instant,
    ) -> Vec<i32> {
        let mut led = self.term.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if *led != Some(term) {
            // A new leadership: every broker gets a full session from now.
            *led = Some(term);
            seen.clear();
        }
        image
            .brokers()
            .filter(|b| !b.fenced)
            .filter(|b| {
                let entry = seen.entry(b.broker_id).or_insert((b.broker_epoch, now));
                if entry.0 != b.broker_epoch {
                    *entry = (b.broker_epoch, now);
                }
                now.duration_since(entry.1) > timeout
            })
            .map(|b| b.broker_id)
            .collect()
    }
}
