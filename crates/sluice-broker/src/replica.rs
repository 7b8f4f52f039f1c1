//! A partition replica hosted by this node: its log and what the leader and followers
//! keep about it.
//!
//! The replication state ([`PartitionState`]) is Kafka's `Partition` with its remote
//! `Replica` objects: the role this node plays for the partition (leader, follower of
//! some broker, or none yet), the epochs it acts under, the ISR as the leader knows it
//! (committed, or with one AlterPartition in flight: KIP-497's "maximal" ISR), each
//! follower's log end offset and last caught-up time, and the high watermark.
//!
//! The rules are Kafka 4.1's (`Partition.scala`, `Replica.scala`) and live here as plain
//! methods on plain data, so they are unit-tested without a broker:
//!
//! - HW = the smallest log end offset over the leader and every follower in the maximal
//!   ISR or caught up and eligible to join it; it never moves backwards while this node
//!   leads, and it does not move at all while the committed ISR is smaller than the
//!   effective `min.insync.replicas` (min of the topic's value and the replica count).
//! - A follower is caught up when its log end offset equals the leader's, or when it was
//!   caught up less than `replica.lag.time.max.ms` ago; one in the ISR that is not is
//!   shrunk out; one out of the ISR whose log end offset reaches the HW and the start of
//!   the current leader epoch is expanded in.
//!
//! Locks: `state` first, then the log's mutex; neither is held across an `.await`. The
//! high watermark is also published on a watch so that long-polling consumer fetches and
//! acks=all produces wake when it moves (and when the role changes).

use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

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
    /// Leader and follower state (see the module documentation).
    pub(crate) replication: ReplicationState,
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

    /// Watches the log end offset (what follower fetches wait on).
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.end_offset.subscribe()
    }

    /// Watches the high watermark (what consumer fetches and acks=all produces wait
    /// on); it also fires when the replica's role changes.
    pub fn subscribe_high_watermark(&self) -> watch::Receiver<i64> {
        self.replication.high_watermark.subscribe()
    }

    /// The high watermark as last published.
    pub fn high_watermark(&self) -> i64 {
        *self.replication.high_watermark.borrow()
    }

    /// The replication state, locked (never across an `.await`).
    pub(crate) fn state(&self) -> MutexGuard<'_, PartitionState> {
        self.replication
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Publishes the state's high watermark (call with the state locked, after a change,
    /// so that publications follow the state's order).
    pub(crate) fn publish_high_watermark(&self, state: &PartitionState) {
        self.replication
            .high_watermark
            .send_replace(state.high_watermark);
    }
}

/// What a [`Replica`] keeps for replication.
#[derive(Debug)]
pub struct ReplicationState {
    pub(crate) state: Mutex<PartitionState>,
    pub(crate) high_watermark: watch::Sender<i64>,
}

impl Default for ReplicationState {
    fn default() -> Self {
        ReplicationState {
            state: Mutex::new(PartitionState::default()),
            high_watermark: watch::Sender::new(0),
        }
    }
}

/// The part this node plays for a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Role {
    /// Not yet told by the metadata image (or the partition has no leader and this node
    /// has never followed anyone).
    #[default]
    None,
    Leader,
    /// Following `leader` (-1: the partition has no leader; nothing to fetch from).
    Follower {
        leader: i32,
    },
}

/// The ISR as the leader knows it: the committed one (from the metadata image or the
/// controller's answer), or that with one AlterPartition in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsrState {
    Committed(Vec<i32>),
    /// `adding` counts for the high watermark at once (a larger ISR is only stricter).
    PendingExpand {
        committed: Vec<i32>,
        adding: i32,
        sequence: u64,
    },
    /// The shrink counts only once committed (until then the HW still waits for them).
    PendingShrink {
        committed: Vec<i32>,
        removing: Vec<i32>,
        sequence: u64,
    },
}

impl Default for IsrState {
    fn default() -> Self {
        IsrState::Committed(Vec::new())
    }
}

impl IsrState {
    /// The committed ISR.
    pub fn committed(&self) -> &[i32] {
        match self {
            IsrState::Committed(isr)
            | IsrState::PendingExpand { committed: isr, .. }
            | IsrState::PendingShrink { committed: isr, .. } => isr,
        }
    }

    /// Whether `id` is in the maximal ISR (committed, plus a pending expansion).
    pub fn in_maximal(&self, id: i32) -> bool {
        self.committed().contains(&id)
            || matches!(self, IsrState::PendingExpand { adding, .. } if *adding == id)
    }

    pub fn maximal_len(&self) -> usize {
        self.committed().len() + usize::from(matches!(self, IsrState::PendingExpand { .. }))
    }

    pub fn is_inflight(&self) -> bool {
        !matches!(self, IsrState::Committed(_))
    }

    /// The sequence number of the AlterPartition in flight.
    pub fn sequence(&self) -> Option<u64> {
        match self {
            IsrState::Committed(_) => None,
            IsrState::PendingExpand { sequence, .. } | IsrState::PendingShrink { sequence, .. } => {
                Some(*sequence)
            }
        }
    }
}

/// What the leader knows of one follower (Kafka's `ReplicaState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowerState {
    pub broker_id: i32,
    /// The follower's log end offset (its last fetch offset); -1 when unknown.
    pub log_end_offset: i64,
    pub log_start_offset: i64,
    /// The leader's log end offset at the follower's previous fetch.
    pub last_fetch_leader_log_end_offset: i64,
    pub last_fetch_time_ms: i64,
    pub last_caught_up_time_ms: i64,
    /// Registered, unfenced and not shutting down (from the metadata image): only such a
    /// replica may join the ISR.
    pub eligible: bool,
}

impl FollowerState {
    pub fn new(broker_id: i32) -> FollowerState {
        FollowerState {
            broker_id,
            log_end_offset: -1,
            log_start_offset: -1,
            last_fetch_leader_log_end_offset: -1,
            last_fetch_time_ms: 0,
            last_caught_up_time_ms: 0,
            eligible: true,
        }
    }

    /// Kafka's `isCaughtUp`: at the leader's log end, or caught up within the lag time.
    pub fn is_caught_up(&self, leader_end_offset: i64, now_ms: i64, lag_max_ms: i64) -> bool {
        leader_end_offset == self.log_end_offset
            || now_ms - self.last_caught_up_time_ms <= lag_max_ms
    }

    /// Kafka's `updateFetchStateOrThrow`: a fetch at `fetch_offset` says the follower's
    /// log ends there. It was caught up now if that reaches the leader's current end, or
    /// at its previous fetch if it reaches the leader's end as of that fetch.
    pub fn update_fetch_state(
        &mut self,
        fetch_offset: i64,
        log_start_offset: i64,
        now_ms: i64,
        leader_end_offset: i64,
    ) {
        if fetch_offset >= leader_end_offset {
            self.last_caught_up_time_ms = self.last_caught_up_time_ms.max(now_ms);
        } else if fetch_offset >= self.last_fetch_leader_log_end_offset {
            self.last_caught_up_time_ms = self.last_caught_up_time_ms.max(self.last_fetch_time_ms);
        }
        self.log_start_offset = log_start_offset;
        self.log_end_offset = fetch_offset;
        self.last_fetch_leader_log_end_offset =
            leader_end_offset.max(self.last_fetch_leader_log_end_offset);
        self.last_fetch_time_ms = now_ms;
    }

    /// Kafka's `resetReplicaState` at a new leader epoch: an ISR member counts as caught
    /// up now, others as never; a new leader forgets what an older leadership learned.
    pub fn reset(
        &mut self,
        now_ms: i64,
        leader_end_offset: i64,
        is_new_leader: bool,
        in_sync: bool,
    ) {
        let last_caught_up_time_ms = if in_sync { now_ms } else { 0 };
        if is_new_leader {
            *self = FollowerState {
                eligible: self.eligible,
                last_caught_up_time_ms,
                ..FollowerState::new(self.broker_id)
            };
        } else {
            self.last_fetch_leader_log_end_offset = leader_end_offset;
            self.last_fetch_time_ms = now_ms;
            self.last_caught_up_time_ms = last_caught_up_time_ms;
        }
    }
}

/// A partition's replication state on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionState {
    pub role: Role,
    /// The leader epoch and partition epoch last applied (-1 before any).
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub replicas: Vec<i32>,
    /// Leader only (a follower keeps the image's ISR for information).
    pub isr: IsrState,
    /// The leader's log end offset when it started leading at `leader_epoch`.
    pub leader_epoch_start_offset: Option<i64>,
    /// Leader only: every other replica.
    pub followers: Vec<FollowerState>,
    /// The topic's `min.insync.replicas`.
    pub min_insync_replicas: i32,
    pub high_watermark: i64,
    /// The next AlterPartition's sequence number (tells a stale answer from the current).
    pub next_sequence: u64,
}

impl Default for PartitionState {
    fn default() -> Self {
        PartitionState {
            role: Role::None,
            leader_epoch: -1,
            partition_epoch: -1,
            replicas: Vec::new(),
            isr: IsrState::default(),
            leader_epoch_start_offset: None,
            followers: Vec::new(),
            min_insync_replicas: 1,
            high_watermark: 0,
            next_sequence: 0,
        }
    }
}

impl PartitionState {
    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }

    pub fn follower(&self, broker_id: i32) -> Option<&FollowerState> {
        self.followers.iter().find(|f| f.broker_id == broker_id)
    }

    pub fn follower_mut(&mut self, broker_id: i32) -> Option<&mut FollowerState> {
        self.followers.iter_mut().find(|f| f.broker_id == broker_id)
    }

    /// `min.insync.replicas` capped at the replica count (Kafka's `effectiveMinIsr`:
    /// the setting may exceed the replication factor, which then decides).
    pub fn effective_min_isr(&self) -> usize {
        (self.min_insync_replicas.max(1) as usize).min(self.replicas.len().max(1))
    }

    /// Whether the committed ISR is below the effective `min.insync.replicas` (leader).
    pub fn is_under_min_isr(&self) -> bool {
        self.is_leader() && self.isr.committed().len() < self.effective_min_isr()
    }

    /// Kafka's `maybeIncrementLeaderHW`: the smallest log end offset over the leader and
    /// the followers in the maximal ISR or caught up and eligible; never backwards;
    /// frozen under min ISR. Returns whether the HW moved.
    pub fn maybe_increment_high_watermark(
        &mut self,
        leader_end_offset: i64,
        now_ms: i64,
        lag_max_ms: i64,
    ) -> bool {
        if !self.is_leader() || self.is_under_min_isr() {
            return false;
        }
        let mut candidate = leader_end_offset;
        for follower in &self.followers {
            let waits_for = self.isr.in_maximal(follower.broker_id)
                || (follower.eligible
                    && follower.is_caught_up(leader_end_offset, now_ms, lag_max_ms));
            if waits_for && follower.log_end_offset < candidate {
                candidate = follower.log_end_offset;
            }
        }
        if candidate > self.high_watermark {
            self.high_watermark = candidate;
            true
        } else {
            false
        }
    }

    /// Followers in the committed ISR that are no longer caught up (Kafka's
    /// `getOutOfSyncReplicas`); none while an AlterPartition is in flight.
    pub fn out_of_sync_replicas(
        &self,
        own_id: i32,
        leader_end_offset: i64,
        now_ms: i64,
        lag_max_ms: i64,
    ) -> Vec<i32> {
        if !self.is_leader() || self.isr.is_inflight() {
            return Vec::new();
        }
        self.isr
            .committed()
            .iter()
            .copied()
            .filter(|id| *id != own_id)
            .filter(|id| {
                self.follower(*id)
                    .is_none_or(|f| !f.is_caught_up(leader_end_offset, now_ms, lag_max_ms))
            })
            .collect()
    }

    /// Whether `broker_id` should join the ISR (Kafka's `needsExpandIsr`): not in it, no
    /// change in flight, eligible, and its log end offset at least the HW and the start
    /// of the current leader epoch (so it holds everything committed).
    pub fn needs_expand(&self, broker_id: i32) -> bool {
        if !self.is_leader() || self.isr.is_inflight() || self.isr.committed().contains(&broker_id)
        {
            return false;
        }
        self.follower(broker_id).is_some_and(|f| {
            f.eligible
                && f.log_end_offset >= self.high_watermark
                && self
                    .leader_epoch_start_offset
                    .is_some_and(|start| f.log_end_offset >= start)
        })
    }

    /// Starts an expansion: returns (sequence, the ISR to propose).
    pub fn prepare_expand(&mut self, broker_id: i32) -> (u64, Vec<i32>) {
        let committed = self.isr.committed().to_vec();
        let sequence = self.take_sequence();
        let mut proposed = committed.clone();
        proposed.push(broker_id);
        self.isr = IsrState::PendingExpand {
            committed,
            adding: broker_id,
            sequence,
        };
        (sequence, proposed)
    }

    /// Starts a shrink: returns (sequence, the ISR to propose).
    pub fn prepare_shrink(&mut self, removing: Vec<i32>) -> (u64, Vec<i32>) {
        let committed = self.isr.committed().to_vec();
        let sequence = self.take_sequence();
        let proposed = committed
            .iter()
            .copied()
            .filter(|id| !removing.contains(id))
            .collect();
        self.isr = IsrState::PendingShrink {
            committed,
            removing,
            sequence,
        };
        (sequence, proposed)
    }

    fn take_sequence(&mut self) -> u64 {
        self.next_sequence += 1;
        self.next_sequence
    }

    /// Kafka's `checkEnoughReplicasReachOffset` for an acks=all produce whose last
    /// offset is `required_offset - 1`: `None` while the HW is below it, else the error
    /// code to answer (NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR
    /// fell below min ISR meanwhile, or NOT_LEADER_OR_FOLLOWER when this node stopped
    /// leading).
    pub fn acks_all_outcome(&self, required_offset: i64) -> Option<i16> {
        if !self.is_leader() {
            return Some(crate::errors::NOT_LEADER_OR_FOLLOWER);
        }
        if self.high_watermark < required_offset {
            return None;
        }
        Some(if self.effective_min_isr() <= self.isr.maximal_len() {
            crate::errors::NONE
        } else {
            crate::errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        })
    }
}

/// Kafka's `LeaderEpochFileCache.endOffsetFor`: for `requested_epoch`, the largest
/// known epoch not above it and the offset where that epoch ended (the start of the
/// next one, or `log_end_offset` for the latest); `None` (Kafka's UNDEFINED) when the
/// requested epoch is -1 or above every known epoch. An epoch below every known one
/// answers (that epoch, the first known start offset): the data is gone, and the
/// follower should start from there. `entries` are (epoch, start offset), increasing.
pub fn end_offset_for_epoch(
    entries: &[(i32, i64)],
    requested_epoch: i32,
    log_end_offset: i64,
) -> Option<(i32, i64)> {
    if requested_epoch < 0 {
        return None;
    }
    let latest = entries.last()?;
    if latest.0 == requested_epoch {
        return Some((requested_epoch, log_end_offset));
    }
    let higher = entries.iter().find(|(epoch, _)| *epoch > requested_epoch)?;
    match entries
        .iter()
        .rev()
        .find(|(epoch, _)| *epoch <= requested_epoch)
    {
        None => Some((requested_epoch, higher.1)),
        Some(floor) => Some((floor.0, higher.1)),
    }
}

/// A leader's epoch entries as Kafka's would be: the current leader epoch starts at the
/// log end offset the leader had when it took over (Kafka writes that entry at
/// election; Sluice's log records an epoch at its first append), so followers holding a
/// newer epoch than any batch here still get an answer.
pub fn leader_epoch_entries(
    cached: &[(i32, i64)],
    leader_epoch: i32,
    leader_epoch_start_offset: Option<i64>,
) -> Vec<(i32, i64)> {
    let mut entries = cached.to_vec();
    if let Some(start) = leader_epoch_start_offset
        && entries
            .last()
            .is_none_or(|(epoch, _)| *epoch < leader_epoch)
    {
        entries.retain(|(_, offset)| *offset < start);
        entries.push((leader_epoch, start));
    }
    entries
}

/// What a follower truncates to when the leader says its log diverges (Kafka's
/// `getOffsetTruncationState`): `(offset, complete)`; when not complete the follower
/// fetches again from there with its new last epoch. `follower_end_for` is the
/// follower's own `end_offset_for_epoch` answer for the leader's epoch.
pub fn truncation_offset(
    leader_epoch: i32,
    leader_end_offset: i64,
    follower_end_for: Option<(i32, i64)>,
    follower_log_end_offset: i64,
    fetch_offset: i64,
) -> (i64, bool) {
    if leader_end_offset < 0 {
        return (fetch_offset, true);
    }
    if leader_epoch < 0 {
        return (leader_end_offset.min(follower_log_end_offset), true);
    }
    match follower_end_for {
        Some((follower_epoch, follower_end)) if follower_epoch != leader_epoch => {
            (follower_end.min(follower_log_end_offset), false)
        }
        Some((_, follower_end)) => (
            follower_end
                .min(leader_end_offset)
                .min(follower_log_end_offset),
            true,
        ),
        None => (leader_end_offset.min(follower_log_end_offset), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors;

    const LAG: i64 = 30_000;

    /// A leader (broker 1) of replicas [1, 2, 3] with the given committed ISR.
    fn leader(isr: &[i32], min_insync: i32) -> PartitionState {
        PartitionState {
            role: Role::Leader,
            leader_epoch: 5,
            partition_epoch: 7,
            replicas: vec![1, 2, 3],
            isr: IsrState::Committed(isr.to_vec()),
            leader_epoch_start_offset: Some(10),
            followers: vec![FollowerState::new(2), FollowerState::new(3)],
            min_insync_replicas: min_insync,
            high_watermark: 10,
            next_sequence: 0,
        }
    }

    fn set_end(state: &mut PartitionState, id: i32, end: i64, caught_up_ms: i64) {
        let follower = state.follower_mut(id).unwrap();
        follower.log_end_offset = end;
        follower.last_caught_up_time_ms = caught_up_ms;
    }

    #[test]
    fn high_watermark_is_the_smallest_end_offset_in_the_isr() {
        // (isr, follower 2 end, follower 3 end, leader end, expected HW)
        let now = 100_000;
        let stale = now - LAG - 1;
        let cases: &[(&[i32], i64, i64, i64, i64)] = &[
            (&[1, 2, 3], 15, 12, 20, 12),
            (&[1, 2, 3], 20, 20, 20, 20),
            // Out of the ISR and not caught up: not waited for.
            (&[1, 2], 15, 11, 20, 15),
            // Never backwards.
            (&[1, 2, 3], 15, 5, 20, 10),
        ];
        for (isr, end_2, end_3, leader_end, expected) in cases {
            let mut state = leader(isr, 1);
            set_end(&mut state, 2, *end_2, now);
            set_end(
                &mut state,
                3,
                *end_3,
                if isr.contains(&3) { now } else { stale },
            );
            state.maybe_increment_high_watermark(*leader_end, now, LAG);
            assert_eq!(state.high_watermark, *expected, "isr {isr:?}");
        }
    }

    #[test]
    fn a_caught_up_follower_outside_the_isr_holds_the_high_watermark() {
        // Kafka's shouldWaitForReplicaToJoinIsr: it would join soon, so the HW waits.
        let now = 100_000;
        let mut state = leader(&[1, 2], 1);
        set_end(&mut state, 2, 20, now);
        set_end(&mut state, 3, 14, now - 10);
        state.maybe_increment_high_watermark(20, now, LAG);
        assert_eq!(state.high_watermark, 14);
        state.follower_mut(3).unwrap().eligible = false;
        state.maybe_increment_high_watermark(20, now, LAG);
        assert_eq!(state.high_watermark, 20);
    }

    #[test]
    fn a_single_replica_high_watermark_is_its_log_end() {
        let mut state = PartitionState {
            role: Role::Leader,
            replicas: vec![1],
            isr: IsrState::Committed(vec![1]),
            min_insync_replicas: 2,
            ..PartitionState::default()
        };
        // min.insync.replicas=2 at one replica: the replica count decides.
        assert_eq!(state.effective_min_isr(), 1);
        assert!(state.maybe_increment_high_watermark(42, 0, LAG));
        assert_eq!(state.high_watermark, 42);
        assert_eq!(state.acks_all_outcome(42), Some(errors::NONE));
    }

    #[test]
    fn under_min_isr_the_high_watermark_stays() {
        let now = 100_000;
        let mut state = leader(&[1], 2);
        set_end(&mut state, 2, 20, 0);
        set_end(&mut state, 3, 20, 0);
        assert!(state.is_under_min_isr());
        assert!(!state.maybe_increment_high_watermark(20, now, LAG));
        assert_eq!(state.high_watermark, 10);
    }

    #[test]
    fn a_pending_expansion_counts_at_once_and_a_pending_shrink_only_when_committed() {
        let now = 100_000;
        let mut state = leader(&[1, 2], 1);
        set_end(&mut state, 2, 20, now);
        set_end(&mut state, 3, 15, 0);
        state.prepare_expand(3);
        state.maybe_increment_high_watermark(20, now, LAG);
        assert_eq!(state.high_watermark, 15, "expanded ISR holds the HW");

        let mut state = leader(&[1, 2, 3], 1);
        set_end(&mut state, 2, 20, now);
        set_end(&mut state, 3, 15, 0);
        let (_, proposed) = state.prepare_shrink(vec![3]);
        assert_eq!(proposed, vec![1, 2]);
        state.maybe_increment_high_watermark(20, now, LAG);
        assert_eq!(state.high_watermark, 15, "the shrink is not committed yet");
        state.isr = IsrState::Committed(proposed);
        state.maybe_increment_high_watermark(20, now, LAG);
        assert_eq!(state.high_watermark, 20);
    }

    #[test]
    fn followers_lagging_longer_than_the_lag_time_are_out_of_sync() {
        let now = 100_000;
        let mut state = leader(&[1, 2, 3], 1);
        // At the leader's end: in sync however long ago it caught up.
        set_end(&mut state, 2, 20, 0);
        // Behind, caught up exactly lag ago: still in sync; one ms more: out.
        set_end(&mut state, 3, 18, now - LAG);
        assert!(state.out_of_sync_replicas(1, 20, now, LAG).is_empty());
        assert_eq!(state.out_of_sync_replicas(1, 20, now + 1, LAG), vec![3]);
        // None while a change is in flight.
        state.prepare_expand(2);
        assert!(state.out_of_sync_replicas(1, 20, now + 1, LAG).is_empty());
    }

    #[test]
    fn caught_up_time_follows_kafkas_fetch_rule() {
        let mut follower = FollowerState::new(2);
        // Fetch at 5 while the leader ends at 10: not caught up.
        follower.update_fetch_state(5, 0, 1_000, 10);
        assert_eq!(follower.last_caught_up_time_ms, 0);
        // Fetch at 10 (the leader's end at the previous fetch) while it ends at 12:
        // caught up as of the previous fetch.
        follower.update_fetch_state(10, 0, 2_000, 12);
        assert_eq!(follower.last_caught_up_time_ms, 1_000);
        // Fetch at the leader's end: caught up now.
        follower.update_fetch_state(12, 0, 3_000, 12);
        assert_eq!(follower.last_caught_up_time_ms, 3_000);
        assert_eq!(follower.log_end_offset, 12);
    }

    #[test]
    fn expansion_needs_the_high_watermark_and_the_epoch_start() {
        let mut state = leader(&[1, 2], 1);
        state.high_watermark = 12;
        set_end(&mut state, 3, 11, 0);
        assert!(!state.needs_expand(3));
        set_end(&mut state, 3, 12, 0);
        assert!(state.needs_expand(3));
        state.leader_epoch_start_offset = Some(13);
        assert!(!state.needs_expand(3), "below the current epoch's start");
        state.leader_epoch_start_offset = Some(12);
        state.follower_mut(3).unwrap().eligible = false;
        assert!(!state.needs_expand(3), "fenced or shutting down");
        state.follower_mut(3).unwrap().eligible = true;
        state.prepare_shrink(vec![2]);
        assert!(!state.needs_expand(3), "one change at a time");
    }

    #[test]
    fn acks_all_completes_at_the_high_watermark() {
        let mut state = leader(&[1, 2, 3], 3);
        state.high_watermark = 20;
        assert_eq!(state.acks_all_outcome(21), None);
        assert_eq!(state.acks_all_outcome(20), Some(errors::NONE));
        state.isr = IsrState::Committed(vec![1, 2]);
        assert_eq!(
            state.acks_all_outcome(20),
            Some(errors::NOT_ENOUGH_REPLICAS_AFTER_APPEND)
        );
        state.role = Role::Follower { leader: 2 };
        assert_eq!(
            state.acks_all_outcome(20),
            Some(errors::NOT_LEADER_OR_FOLLOWER)
        );
    }

    #[test]
    fn end_offsets_for_epochs_follow_kafkas_cache() {
        let entries = [(1, 0), (3, 10), (4, 20)];
        let cases = [
            (-1, None),
            (0, Some((0, 0))),
            (1, Some((1, 10))),
            (2, Some((1, 10))),
            (3, Some((3, 20))),
            (4, Some((4, 30))),
            (5, None),
        ];
        for (epoch, expected) in cases {
            assert_eq!(
                end_offset_for_epoch(&entries, epoch, 30),
                expected,
                "{epoch}"
            );
        }
        assert_eq!(end_offset_for_epoch(&[], 1, 30), None);
        // A new leader at epoch 6 from offset 30 answers for epoch 5 up to 30.
        let led = leader_epoch_entries(&entries, 6, Some(30));
        assert_eq!(end_offset_for_epoch(&led, 5, 35), Some((4, 30)));
    }

    #[test]
    fn truncation_follows_kafkas_rule() {
        // The leader ended epoch 3 at 15; the follower has epoch 3 up to 18: cut at 15.
        assert_eq!(truncation_offset(3, 15, Some((3, 18)), 18, 18), (15, true));
        // The leader answers epoch 2 the follower never had (its floor is 1 ending at
        // 8): cut at 8 and ask again.
        assert_eq!(truncation_offset(2, 12, Some((1, 8)), 18, 18), (8, false));
        // The follower knows nothing that old.
        assert_eq!(truncation_offset(2, 12, None, 18, 18), (12, true));
        assert_eq!(truncation_offset(2, 30, None, 18, 18), (18, true));
    }
}
