//! Checkpoints: Flink's asynchronous barrier snapshotting, on the single-threaded executor.
//!
//! Follows Flink's checkpoint protocol:
//! - the `CheckpointCoordinator` decides when to trigger (every `interval` of processing
//!   time from the environment's clock, no sooner than `min_pause_between_checkpoints`
//!   after the last completed one, at most `max_concurrent_checkpoints` in flight, and a
//!   pending checkpoint is aborted after `checkpoint_timeout`);
//! - on a trigger every source records its position (a `CollectionSource`'s next script
//!   index) and emits a barrier into its stream; the barrier is an event on the edges
//!   (`executor::Event::Barrier`), behind every record the source emitted before it;
//! - an operator that has received the barrier on all its inputs (alignment) snapshots its
//!   keyed state and timers per key group and forwards the barrier; a sink acknowledges;
//! - when every sink acknowledged, the checkpoint is complete: it is written to the
//!   `CheckpointStorage` (its commit point) and every operator and sink gets
//!   `notify_checkpoint_complete` (where a two-phase-commit sink commits).
//!
//! Restore: `execute` starts from the latest completed checkpoint in the storage, if any:
//! sources resume at their positions, keyed operators get the key groups of their range
//! (`key_group::key_group_range_for_operator`), timers included. Watermarks are not part of
//! a checkpoint (as in Flink): they restart from `MIN_WATERMARK` and the sources' strategies
//! rebuild them from the replayed records.
//!
//! Differences from Flink, all because the executor is single-threaded: alignment is
//! trivial (the barrier of every input arrives before any later record, since sources
//! inject together and the work queue is FIFO), and a checkpoint completes within the
//! source step that triggered it, so `checkpoint_timeout` and `max_concurrent_checkpoints`
//! are enforced by the coordinator but never bite. Checkpoints are only triggered while
//! every source is still running (Flink before 1.14, without FLIP-147's checkpoints after
//! tasks finished); the end of a bounded input commits everything instead.
//!
//! Encoding: JSON (`serde_json::Value`) per key, cell and source position. It is readable
//! and needs no schema; a compact binary encoding is the obvious change when checkpoint
//! size is measured (issue 10's benchmark reports it).

mod object_store;
mod storage;

pub use self::object_store::{ObjectStoreCheckpointStorage, STATE_OBJECT_NAME};
pub use storage::{
    CheckpointStorage, DirectoryCheckpointStorage, InMemoryCheckpointStorage, METADATA_FILE_NAME,
};

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::StreamError;
use crate::functions::TimeDomain;
use crate::state::Namespace;
use crate::time::duration_ms;

/// Flink's `CheckpointConfig`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// Processing time between two triggers.
    pub interval: Duration,
    /// Processing time from the completion of one checkpoint to the next trigger.
    pub min_pause_between_checkpoints: Duration,
    /// A pending checkpoint older than this is aborted.
    pub checkpoint_timeout: Duration,
    /// The most checkpoints pending at once.
    pub max_concurrent_checkpoints: u32,
}

impl CheckpointConfig {
    /// Flink's defaults with the given interval: no minimum pause, a 10-minute timeout,
    /// one checkpoint at a time.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            min_pause_between_checkpoints: Duration::ZERO,
            checkpoint_timeout: Duration::from_secs(600),
            max_concurrent_checkpoints: 1,
        }
    }

    pub(crate) fn validate(&self) -> Result<(), StreamError> {
        if self.interval.is_zero() {
            return Err(StreamError::InvalidConfiguration(
                "the checkpoint interval must be positive".into(),
            ));
        }
        if self.checkpoint_timeout.is_zero() {
            return Err(StreamError::InvalidConfiguration(
                "the checkpoint timeout must be positive".into(),
            ));
        }
        if self.max_concurrent_checkpoints == 0 {
            return Err(StreamError::InvalidConfiguration(
                "max_concurrent_checkpoints must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// One cell of keyed state, encoded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSnapshot {
    pub key: serde_json::Value,
    /// The state's registered name (the descriptor's name, or an operator-internal name).
    pub state: String,
    pub namespace: Namespace,
    pub value: serde_json::Value,
}

/// One timer, encoded; `sequence` keeps the firing order of equal timestamps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimerSnapshot {
    pub domain: TimeDomain,
    pub key: serde_json::Value,
    pub namespace: Namespace,
    pub timestamp: i64,
    pub sequence: u64,
}

/// Everything of one key group: the unit of restore and rescale.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyGroupSnapshot {
    pub cells: Vec<CellSnapshot>,
    pub timers: Vec<TimerSnapshot>,
}

/// A keyed operator's state, by key group (empty groups left out).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyedStateSnapshot {
    pub key_groups: BTreeMap<u32, KeyGroupSnapshot>,
}

/// The snapshot of one node of the job graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSnapshot {
    /// The node's name, checked on restore (Flink matches operators by uid).
    pub name: String,
    /// A source's position (`None` for operators).
    pub source_position: Option<serde_json::Value>,
    /// A keyed operator's state (`None` for stateless nodes).
    pub keyed_state: Option<KeyedStateSnapshot>,
}

/// A completed checkpoint: what restore reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletedCheckpoint {
    pub checkpoint_id: u64,
    pub job_name: String,
    /// Processing time of the trigger.
    pub timestamp_ms: i64,
    /// The key-group count the keyed state was partitioned with; a restore needs the same.
    pub max_parallelism: u32,
    /// One entry per node, in graph order.
    pub nodes: Vec<NodeSnapshot>,
}

/// Decides when checkpoints are triggered and tracks the pending ones.
#[derive(Debug)]
pub(crate) struct CheckpointCoordinator {
    config: CheckpointConfig,
    next_checkpoint_id: u64,
    next_trigger_ms: i64,
    last_completed_ms: Option<i64>,
    /// Pending checkpoints and their trigger times.
    pending: BTreeMap<u64, i64>,
}

impl CheckpointCoordinator {
    /// `next_checkpoint_id` continues after a restored checkpoint, so ids never repeat.
    pub(crate) fn new(config: CheckpointConfig, next_checkpoint_id: u64, now_ms: i64) -> Self {
        Self {
            config,
            next_checkpoint_id,
            next_trigger_ms: now_ms.saturating_add(duration_ms(config.interval)),
            last_completed_ms: None,
            pending: BTreeMap::new(),
        }
    }

    /// Aborts pending checkpoints older than the timeout; returns their ids.
    pub(crate) fn expire(&mut self, now_ms: i64) -> Vec<u64> {
        let timeout_ms = duration_ms(self.config.checkpoint_timeout);
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, triggered_ms)| now_ms.saturating_sub(**triggered_ms) >= timeout_ms)
            .map(|(id, _)| *id)
            .collect();
        for id in &expired {
            self.pending.remove(id);
        }
        expired
    }

    /// The id of a checkpoint to trigger now, if one is due and allowed.
    pub(crate) fn try_trigger(&mut self, now_ms: i64) -> Option<u64> {
        if now_ms < self.next_trigger_ms {
            return None;
        }
        if self.pending.len() >= self.config.max_concurrent_checkpoints as usize {
            return None;
        }
        let min_pause_ms = duration_ms(self.config.min_pause_between_checkpoints);
        if let Some(completed_ms) = self.last_completed_ms
            && now_ms < completed_ms.saturating_add(min_pause_ms)
        {
            return None;
        }
        let id = self.next_checkpoint_id;
        self.next_checkpoint_id += 1;
        self.pending.insert(id, now_ms);
        self.next_trigger_ms = now_ms.saturating_add(duration_ms(self.config.interval));
        Some(id)
    }

    /// A pending checkpoint that cannot complete (a source ended before its barrier).
    pub(crate) fn abort(&mut self, id: u64) {
        self.pending.remove(&id);
    }

    pub(crate) fn complete(&mut self, id: u64, now_ms: i64) {
        let removed = self.pending.remove(&id);
        debug_assert!(removed.is_some(), "only pending checkpoints complete");
        self.last_completed_ms = Some(now_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A script of coordinator calls and the trigger each `Trigger` step expects.
    #[derive(Debug)]
    enum Step {
        Trigger { now_ms: i64, expect: Option<u64> },
        Complete { id: u64, now_ms: i64 },
        Expire { now_ms: i64, expect: Vec<u64> },
    }

    fn run(config: CheckpointConfig, steps: &[Step]) {
        let mut coordinator = CheckpointCoordinator::new(config, 1, 0);
        for (index, step) in steps.iter().enumerate() {
            match step {
                Step::Trigger { now_ms, expect } => {
                    assert_eq!(coordinator.try_trigger(*now_ms), *expect, "step {index}");
                }
                Step::Complete { id, now_ms } => coordinator.complete(*id, *now_ms),
                Step::Expire { now_ms, expect } => {
                    assert_eq!(&coordinator.expire(*now_ms), expect, "step {index}");
                }
            }
        }
    }

    fn config(interval_ms: u64) -> CheckpointConfig {
        CheckpointConfig::new(Duration::from_millis(interval_ms))
    }

    #[test]
    fn triggers_every_interval_one_at_a_time() {
        use Step::*;
        run(
            config(100),
            &[
                Trigger {
                    now_ms: 99,
                    expect: None,
                },
                Trigger {
                    now_ms: 100,
                    expect: Some(1),
                },
                // Due at 200, but checkpoint 1 is still pending (max concurrent 1).
                Trigger {
                    now_ms: 250,
                    expect: None,
                },
                Complete { id: 1, now_ms: 260 },
                Trigger {
                    now_ms: 260,
                    expect: Some(2),
                },
                Complete { id: 2, now_ms: 261 },
                Trigger {
                    now_ms: 300,
                    expect: None,
                },
                Trigger {
                    now_ms: 360,
                    expect: Some(3),
                },
            ],
        );
    }

    #[test]
    fn min_pause_counts_from_the_last_completion() {
        use Step::*;
        let config = CheckpointConfig {
            min_pause_between_checkpoints: Duration::from_millis(150),
            ..config(100)
        };
        run(
            config,
            &[
                Trigger {
                    now_ms: 100,
                    expect: Some(1),
                },
                Complete { id: 1, now_ms: 120 },
                Trigger {
                    now_ms: 200,
                    expect: None,
                },
                Trigger {
                    now_ms: 269,
                    expect: None,
                },
                Trigger {
                    now_ms: 270,
                    expect: Some(2),
                },
            ],
        );
    }

    #[test]
    fn concurrent_checkpoints_and_timeouts() {
        use Step::*;
        let config = CheckpointConfig {
            max_concurrent_checkpoints: 2,
            checkpoint_timeout: Duration::from_millis(250),
            ..config(100)
        };
        run(
            config,
            &[
                Trigger {
                    now_ms: 100,
                    expect: Some(1),
                },
                Trigger {
                    now_ms: 200,
                    expect: Some(2),
                },
                Trigger {
                    now_ms: 300,
                    expect: None,
                },
                Expire {
                    now_ms: 349,
                    expect: vec![],
                },
                Expire {
                    now_ms: 350,
                    expect: vec![1],
                },
                Trigger {
                    now_ms: 350,
                    expect: Some(3),
                },
                Expire {
                    now_ms: 600,
                    expect: vec![2, 3],
                },
            ],
        );
    }
}
