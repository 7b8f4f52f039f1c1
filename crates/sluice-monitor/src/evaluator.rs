//! Burrow's `caching` evaluator: Burrow's rules turning a group's stored windows into a
//! status per partition and for the group, and a short-lived cache of those results so
//! the HTTP API and every notifier asking about the same group share one evaluation.
//!
//! A partition is evaluated only when its window is at least `minimum-complete` full and
//! its current lag is above `allowed-lag` (otherwise it is OK). Then, in order, the first
//! rule that fires gives its status:
//! 1. STOP: the time since the newest commit is longer than the window spans, and the
//!    broker's recent log end offsets never came down to the newest commit (a consumer
//!    that was caught up minutes ago is not stopped yet);
//! 2. REWIND: a commit went below the one before it and no later commit got back to it;
//! 3. only if no commit in the window had a lag of `allowed-lag` or less:
//!    STALL when every commit is the same offset, WARN when the lag never decreased
//!    between two commits with a known lag.
//!
//! A group's status is its worst partition's, capped at ERR (STOP, STALL and REWIND are
//! partition states); a group storage does not have is NOTFOUND. Without `show-all` only
//! the partitions above OK are listed, but the counts, `maxlag` and `totallag` cover all.
//!
//! Every time comes in as `now_ms`, so the rules and the cache are deterministic. Burrow
//! reads its clock in whole seconds; the rules truncate `now_ms` the same way, so a
//! window exactly as long as its silence is still OK, as Burrow's tests require.

use std::collections::HashMap;

use serde::Deserialize;

use crate::storage::{ConsumerTopics, Storage, whole_seconds_ms};
use crate::types::{ConsumerOffset, ConsumerPartition, GroupStatus, PartitionStatus, Status};

#[cfg(test)]
mod tests;

/// Burrow's default `expire-cache`, seconds.
pub const DEFAULT_EXPIRE_CACHE_SECONDS: u64 = 10;

/// Most groups the cache holds. Burrow's cache never forgets a key, so every name ever
/// asked about (an HTTP client can invent them) stays; here expired entries are swept
/// when the cache is this full, and a result that still finds no room is served
/// uncached.
pub const CACHE_ENTRIES_MAX: usize = 100_000;

/// The `[evaluator.<name>]` section, with Burrow's keys and Burrow's defaults.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EvaluatorConfig {
    /// How long a group's evaluation is reused (seconds).
    #[serde(rename = "expire-cache")]
    pub expire_cache_seconds: u64,
    /// The fraction of a partition's window that must hold commits before the rules
    /// apply to it; below it the partition is OK.
    #[serde(rename = "minimum-complete")]
    pub minimum_complete: f32,
    /// A current lag at or below this is no lag: the partition is OK, and a commit at or
    /// below it counts as caught up for rule 3.
    #[serde(rename = "allowed-lag")]
    pub allowed_lag: u64,
    /// Burrow's module class; `caching` is the only one.
    #[serde(rename = "class-name")]
    pub class_name: Option<String>,
}

impl Default for EvaluatorConfig {
    fn default() -> Self {
        EvaluatorConfig {
            expire_cache_seconds: DEFAULT_EXPIRE_CACHE_SECONDS,
            minimum_complete: 0.0,
            allowed_lag: 0,
            class_name: None,
        }
    }
}

/// Burrow's caching evaluator over a [`Storage`].
#[derive(Debug)]
pub struct Evaluator {
    config: EvaluatorConfig,
    cache: HashMap<(String, String), CachedStatus>,
}

#[derive(Debug)]
struct CachedStatus {
    /// None: the group was not found.
    status: Option<GroupStatus>,
    expires_at_ms: i64,
}

/// An evaluator configuration Burrow would refuse to start with.
#[derive(Debug, thiserror::Error)]
pub enum EvaluatorConfigError {
    #[error("evaluator class-name {0:?} is not known; the only one is \"caching\"")]
    UnknownClass(String),
}

impl Evaluator {
    pub fn new(config: EvaluatorConfig) -> Result<Evaluator, EvaluatorConfigError> {
        if let Some(class) = config.class_name.as_deref()
            && class != "caching"
        {
            return Err(EvaluatorConfigError::UnknownClass(class.to_string()));
        }
        Ok(Evaluator {
            config,
            cache: HashMap::new(),
        })
    }

    pub fn config(&self) -> &EvaluatorConfig {
        &self.config
    }

    /// A group's status as Burrow's evaluator answers a request: from the cache when an
    /// evaluation of it is younger than `expire-cache`, freshly evaluated otherwise.
    ///
    /// Burrow's cache (goswarm) treats a not-found answer as always stale: it is served
    /// from the cache until it expires, but each time it is served a refresh runs in the
    /// background. Here that refresh runs before this returns, so the request after a
    /// group appears sees it, as in Burrow once the refresh is done.
    pub fn group_status(
        &mut self,
        storage: &mut Storage,
        cluster: &str,
        group: &str,
        show_all: bool,
        now_ms: i64,
    ) -> GroupStatus {
        let key = (cluster.to_string(), group.to_string());
        let status = match self.cache.get(&key) {
            Some(cached) if now_ms <= cached.expires_at_ms => {
                let status = cached.status.clone();
                if status.is_none() {
                    let refreshed = evaluate_group(storage, cluster, group, &self.config, now_ms);
                    self.store(key, refreshed, now_ms);
                }
                status
            }
            _ => {
                let fresh = evaluate_group(storage, cluster, group, &self.config, now_ms);
                self.store(key, fresh.clone(), now_ms);
                fresh
            }
        };
        match status {
            None => not_found(cluster, group),
            Some(status) if show_all => status,
            Some(status) => only_unhealthy(status),
        }
    }

    /// Drops the cached evaluations of `cluster` (of one `group`, or all of them): storage
    /// changed under them (a group or topic deleted). Burrow keeps serving the old answer
    /// until `expire-cache` passes; a deleted group that still answers with its last
    /// status would tell a script it exists.
    pub fn forget(&mut self, cluster: &str, group: Option<&str>) {
        self.cache.retain(|(cached_cluster, cached_group), _| {
            cached_cluster != cluster || group.is_some_and(|group| group != cached_group)
        });
    }

    fn store(&mut self, key: (String, String), status: Option<GroupStatus>, now_ms: i64) {
        // Burrow's zero expire-cache keeps a good result forever (goswarm reads a zero
        // expiry as "never"), freezing each group's first status; here zero means what
        // an operator setting it expects: no caching.
        if self.config.expire_cache_seconds == 0 {
            return;
        }
        if self.cache.len() >= CACHE_ENTRIES_MAX && !self.cache.contains_key(&key) {
            self.cache
                .retain(|_, cached| now_ms <= cached.expires_at_ms);
            if self.cache.len() >= CACHE_ENTRIES_MAX {
                return;
            }
        }
        let expire_ms = i64::try_from(self.config.expire_cache_seconds)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        self.cache.insert(
            key,
            CachedStatus {
                status,
                expires_at_ms: now_ms.saturating_add(expire_ms),
            },
        );
    }
}

/// Evaluates a group now, without the cache. None when storage has no such cluster or
/// group (including a group it just expired).
pub fn evaluate_group(
    storage: &mut Storage,
    cluster: &str,
    group: &str,
    config: &EvaluatorConfig,
    now_ms: i64,
) -> Option<GroupStatus> {
    let topics = storage.consumer(cluster, group, now_ms)?;
    Some(evaluate_topics(cluster, group, &topics, config, now_ms))
}

/// Evaluates a group's fetched state: every partition, in topic then partition order,
/// with all partitions listed (filtering is the request's business).
pub fn evaluate_topics(
    cluster: &str,
    group: &str,
    topics: &ConsumerTopics,
    config: &EvaluatorConfig,
    now_ms: i64,
) -> GroupStatus {
    let mut status = GroupStatus {
        cluster: cluster.to_string(),
        group: group.to_string(),
        status: Status::Ok,
        complete: 1.0,
        partitions: Vec::new(),
        total_partitions: 0,
        maxlag: None,
        totallag: 0,
    };
    let mut complete_partitions = 0usize;
    for (topic, partitions) in topics {
        for (index, partition) in partitions.iter().enumerate() {
            let partition_id = i32::try_from(index).expect("partition ids come from an i32");
            let evaluated = evaluate_partition(topic, partition_id, partition, config, now_ms);
            status.total_partitions += 1;
            status.totallag = status.totallag.saturating_add(partition.current_lag);
            if evaluated.status > status.status {
                status.status = evaluated.status.min(Status::Error);
            }
            // Strictly greater: on a tie the first partition in topic/partition order
            // stays. (Burrow walks a Go map, so its tie-break is random.)
            let larger = status
                .maxlag
                .as_ref()
                .is_none_or(|maxlag| evaluated.current_lag > maxlag.current_lag);
            if larger {
                status.maxlag = Some(evaluated.clone());
            }
            if evaluated.complete == 1.0 {
                complete_partitions += 1;
            }
            status.partitions.push(evaluated);
        }
    }
    status.complete = if status.total_partitions > 0 {
        complete_partitions as f32 / status.total_partitions as f32
    } else {
        0.0
    };
    status
}

/// Burrow's answer for a group it does not have.
pub fn not_found(cluster: &str, group: &str) -> GroupStatus {
    GroupStatus {
        cluster: cluster.to_string(),
        group: group.to_string(),
        status: Status::NotFound,
        complete: 1.0,
        partitions: Vec::new(),
        total_partitions: 0,
        maxlag: None,
        totallag: 0,
    }
}

/// The status without `show-all`: only partitions above OK listed; everything else kept.
fn only_unhealthy(mut status: GroupStatus) -> GroupStatus {
    status
        .partitions
        .retain(|partition| partition.status > Status::Ok);
    status
}

/// Evaluates one partition of a group. Its window's empty slots (at the front) make it
/// incomplete: `complete` is the filled fraction, and below `minimum-complete` the
/// partition is OK without the rules. A partition with no window at all (never
/// committed) is OK with `complete` 0.
pub fn evaluate_partition(
    topic: &str,
    partition_id: i32,
    partition: &ConsumerPartition,
    config: &EvaluatorConfig,
    now_ms: i64,
) -> PartitionStatus {
    let mut status = PartitionStatus {
        topic: topic.to_string(),
        partition: partition_id,
        owner: partition.owner.clone(),
        client_id: partition.client_id.clone(),
        status: Status::Ok,
        start: None,
        end: None,
        current_lag: partition.current_lag,
        complete: 0.0,
    };
    let slots = partition.offsets.len();
    if slots == 0 {
        return status;
    }
    // Burrow keeps everything from the first filled slot; a window of only empty slots
    // keeps its last slot, so it reads as one slot's worth complete.
    let first_filled = partition
        .offsets
        .iter()
        .position(Option::is_some)
        .unwrap_or(slots - 1);
    let kept = slots - first_filled;
    status.complete = if kept < slots {
        kept as f32 / slots as f32
    } else {
        1.0
    };
    let offsets: Vec<ConsumerOffset> = partition.offsets[first_filled..]
        .iter()
        .flatten()
        .cloned()
        .collect();
    let (Some(start), Some(end)) = (offsets.first(), offsets.last()) else {
        return status;
    };
    status.start = Some(start.clone());
    status.end = Some(end.clone());
    if status.complete >= config.minimum_complete {
        status.status = partition_status(
            &offsets,
            &partition.broker_offsets,
            partition.current_lag,
            now_ms,
            config.allowed_lag,
        );
    }
    status
}

/// Burrow's `calculatePartitionStatus`: the rules of the module docs, in order, over a
/// window of commits (oldest first, at least one) and the broker's recent log end offsets.
pub fn partition_status(
    offsets: &[ConsumerOffset],
    broker_offsets: &[i64],
    current_lag: u64,
    now_ms: i64,
    allowed_lag: u64,
) -> Status {
    if offsets.is_empty() || current_lag <= allowed_lag {
        return Status::Ok;
    }
    // Stopped first: it matters even when the consumer had zero lag somewhere in a window
    // that may be old, unless it was caught up within the broker offsets' recent history.
    if offsets_stopped(offsets, now_ms) && !recent_lag_zero(offsets, broker_offsets) {
        return Status::Stop;
    }
    // Rewind before the zero-lag check: a consumer with no lag that suddenly rewinds would
    // otherwise read OK while its zero-lag commits are still in the window.
    if let Some(index) = rewind_index(offsets)
        && !rewind_recovered(offsets, index)
    {
        return Status::Rewind;
    }
    if lag_always_not_zero(offsets, allowed_lag) {
        if offsets_stalled(offsets) {
            return Status::Stall;
        }
        if lag_not_decreasing(offsets) {
            return Status::Warning;
        }
    }
    Status::Ok
}

/// Rule 1: true unless some commit's known lag was at or below `allowed_lag` (the
/// consumer was caught up at some point in the window).
pub fn lag_always_not_zero(offsets: &[ConsumerOffset], allowed_lag: u64) -> bool {
    !offsets
        .iter()
        .any(|offset| offset.lag.is_some_and(|lag| lag <= allowed_lag))
}

/// Rule 2: the index of the first commit below the one before it, if any.
pub fn rewind_index(offsets: &[ConsumerOffset]) -> Option<usize> {
    (1..offsets.len()).find(|&index| offsets[index].offset < offsets[index - 1].offset)
}

/// Rule 2, part 2: whether a commit from the rewind on got back to the offset before
/// it (a rebalance re-committing old work, not a reset).
pub fn rewind_recovered(offsets: &[ConsumerOffset], rewind_index: usize) -> bool {
    let Some(before) = rewind_index
        .checked_sub(1)
        .and_then(|index| offsets.get(index))
    else {
        return false;
    };
    offsets[rewind_index..]
        .iter()
        .any(|offset| offset.offset >= before.offset)
}

/// Rule 3: the time since the newest commit is longer than the window spans, with now in
/// whole seconds as Burrow reads it.
pub fn offsets_stopped(offsets: &[ConsumerOffset], now_ms: i64) -> bool {
    let (Some(first), Some(last)) = (offsets.first(), offsets.last()) else {
        return false;
    };
    whole_seconds_ms(now_ms).saturating_sub(last.timestamp)
        > last.timestamp.saturating_sub(first.timestamp)
}

/// Rule 4: every commit in the window is the same offset.
pub fn offsets_stalled(offsets: &[ConsumerOffset]) -> bool {
    offsets
        .windows(2)
        .all(|pair| pair[0].offset == pair[1].offset)
}

/// Rule 5: the known lag never went down from one commit with a known lag to the next.
pub fn lag_not_decreasing(offsets: &[ConsumerOffset]) -> bool {
    let known: Vec<u64> = offsets.iter().filter_map(|offset| offset.lag).collect();
    known.windows(2).all(|pair| pair[1] >= pair[0])
}

/// Whether some recent log end offset was at or below the newest commit: the consumer
/// was caught up within the last few offset refreshes, too recently to call it stopped.
pub fn recent_lag_zero(offsets: &[ConsumerOffset], broker_offsets: &[i64]) -> bool {
    let Some(newest) = offsets.last() else {
        return false;
    };
    broker_offsets
        .iter()
        .any(|&log_end_offset| log_end_offset <= newest.offset)
}
