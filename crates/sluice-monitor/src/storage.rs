//! Burrow's `inmemory` storage module: everything the monitor knows about a cluster, kept
//! in memory, with Burrow's rules for what is kept and what is dropped.
//!
//! Per cluster it holds, for each topic partition, a window of the last `intervals` log
//! end offsets the cluster module read from the brokers, and for each consumer group, for
//! each partition it committed, a window of its last `intervals` commits. A commit's lag is
//! taken at the moment it is stored, against the newest log end offset then known; a
//! partition's current lag is taken when the group is fetched. The evaluator turns those
//! windows into statuses; the HTTP API serves them.
//!
//! Burrow's rules, carried over:
//! - a commit for a topic or partition the brokers have not reported yet is dropped, as is
//!   one older than `expire-group` and one from a group `group-allowlist` does not match
//!   or `group-denylist` matches;
//! - commits are ordered by their `order`, the offset of the commit record in
//!   `__consumer_offsets`, not by arrival: a late one (a backfill) is slotted into its
//!   place in the window, and only a commit newer than all stored ones is an append;
//! - only an append gets a lag (a backfilled commit's lag is unknown, Burrow's nil) and
//!   only an append refreshes the group's last commit time;
//! - a commit less than `min-distance` seconds after the one before it replaces that one,
//!   keeping the earlier timestamp, so a consumer committing every few milliseconds does
//!   not push its whole history out of the window;
//! - a group whose newest appended commit is older than `expire-group` is dropped the
//!   next time it is fetched, and reads as not found.
//!
//! This is not Burrow's code: Burrow keeps `container/ring` rings with a cursor; here a
//! window is a deque of the stored commits, oldest first, sorted by order (asserted), and
//! the fetch pads it with `None` to `intervals` slots, which is what Burrow's ring walk
//! returns. There is no I/O, no clock and no lock inside: every time comes in as a
//! `now_ms`/`observed_ms` argument, so a test is deterministic, and the caller owns the
//! one `Storage` (Burrow's per-group worker hashing exists to serialise a group's
//! requests, which a single owner gives for free).
//!
//! Cost: an append is O(1) (a deque push and at most one pop); a backfill is
//! O(`intervals`); fetching a group copies its windows, O(partitions × `intervals`).
//! Memory is bounded by `intervals` per partition and by `expire-group` for groups.

use std::collections::{BTreeMap, VecDeque};

use regex::Regex;
use serde::Deserialize;

use crate::types::{ConsumerOffset, ConsumerPartition};

#[cfg(test)]
mod tests;

/// Burrow's default window size, commits and log end offsets kept per partition.
pub const DEFAULT_INTERVALS: usize = 10;
/// Burrow's default `expire-group`: seven days, in seconds.
pub const DEFAULT_EXPIRE_GROUP_SECONDS: i64 = 604_800;

/// The `[storage.<name>]` section, with Burrow's keys and Burrow's defaults.
///
/// Burrow's `class-name`, `workers` and `queue-depth` are accepted and have no effect:
/// there is one storage class, and requests reach it in order without worker queues.
/// Burrow's old `group-whitelist`/`group-blacklist` are refused by [`Storage::new`], as
/// Burrow refuses them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// How many commits and log end offsets are kept per partition.
    pub intervals: usize,
    /// Commits closer than this to the previous one replace it (seconds). Burrow's code
    /// default is 0 (no merging); its sample `burrow.toml` sets 1.
    #[serde(rename = "min-distance")]
    pub min_distance_seconds: i64,
    /// A group with no appended commit for this long is dropped (seconds).
    #[serde(rename = "expire-group")]
    pub expire_group_seconds: i64,
    /// When set and not empty, only groups this regex matches (anywhere in the name) are
    /// stored.
    #[serde(rename = "group-allowlist")]
    pub group_allowlist: Option<String>,
    /// When set and not empty, groups this regex matches are not stored.
    #[serde(rename = "group-denylist")]
    pub group_denylist: Option<String>,
    /// Burrow's module class; `inmemory` is the only one.
    #[serde(rename = "class-name")]
    pub class_name: Option<String>,
    /// Burrow's worker count; without worker queues it has no effect.
    pub workers: Option<i64>,
    /// Burrow's request queue depth; without worker queues it has no effect.
    #[serde(rename = "queue-depth")]
    pub queue_depth: Option<i64>,
    /// Burrow's old name for `group-allowlist`, refused.
    #[serde(rename = "group-whitelist")]
    pub group_whitelist: Option<String>,
    /// Burrow's old name for `group-denylist`, refused.
    #[serde(rename = "group-blacklist")]
    pub group_blacklist: Option<String>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            intervals: DEFAULT_INTERVALS,
            min_distance_seconds: 0,
            expire_group_seconds: DEFAULT_EXPIRE_GROUP_SECONDS,
            group_allowlist: None,
            group_denylist: None,
            class_name: None,
            workers: None,
            queue_depth: None,
            group_whitelist: None,
            group_blacklist: None,
        }
    }
}

/// A storage configuration Burrow would refuse to start with.
#[derive(Debug, thiserror::Error)]
pub enum StorageConfigError {
    #[error("storage intervals must be at least 1")]
    NoIntervals,
    #[error("storage class-name {0:?} is not known; the only one is \"inmemory\"")]
    UnknownClass(String),
    #[error("storage {old} was renamed {new}; change the configuration")]
    RenamedKey {
        old: &'static str,
        new: &'static str,
    },
    #[error("storage {key} is not a valid regular expression: {source}")]
    BadRegex {
        key: &'static str,
        source: Box<regex::Error>,
    },
}

/// Why a request changed nothing. Burrow logs these at debug level and carries on; the
/// caller may do the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Dropped {
    #[error("unknown cluster")]
    UnknownCluster,
    #[error("offset older than expire-group")]
    OffsetTooOld,
    #[error("group not allowed by group-allowlist/group-denylist")]
    GroupNotAccepted,
    #[error("no broker offsets for the topic yet")]
    UnknownTopic,
    #[error("negative partition")]
    NegativePartition,
    #[error("partition beyond the topic's partition count")]
    UnknownPartition,
    #[error("no broker offset for the partition yet")]
    NoBrokerOffset,
    #[error("backfill older than every commit in a full window")]
    WindowFull,
    #[error("a commit with the same order is already stored")]
    DuplicateOrder,
    #[error("unknown group")]
    UnknownGroup,
}

/// One committed offset as the consumer module reads it from `__consumer_offsets`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OffsetCommit {
    /// The committed offset.
    pub offset: i64,
    /// The commit record's own offset in `__consumer_offsets`: commits are ordered by it.
    pub order: i64,
    /// The commit's timestamp, milliseconds since the epoch.
    pub timestamp_ms: i64,
    /// When the monitor read it, milliseconds since the epoch; also the "now" that
    /// `expire-group` is measured from. Stored as `observedAt` in whole seconds, as Burrow
    /// stores it.
    pub observed_ms: i64,
}

/// One log end offset as the cluster module read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrokerOffset {
    pub offset: i64,
    /// When it was read, milliseconds since the epoch.
    pub timestamp_ms: i64,
}

/// What [`Storage::delete_group_topic`] removed, so the caller can drop the matching
/// metrics as Burrow does: the group's, or only the group's for that topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupDeletion {
    Group,
    Topic,
}

/// A group's fetched state: per topic, per partition (the index is the partition id).
pub type ConsumerTopics = BTreeMap<String, Vec<ConsumerPartition>>;

/// Burrow's in-memory storage. See the module docs for its rules.
#[derive(Debug)]
pub struct Storage {
    intervals: usize,
    min_distance_ms: i64,
    expire_group_ms: i64,
    group_allowlist: Option<Regex>,
    group_denylist: Option<Regex>,
    clusters: BTreeMap<String, ClusterState>,
}

#[derive(Debug, Default)]
struct ClusterState {
    /// Per topic, per partition, the last log end offsets, newest at the back.
    broker: BTreeMap<String, Vec<VecDeque<BrokerOffset>>>,
    consumers: BTreeMap<String, GroupState>,
}

#[derive(Debug, Default)]
struct GroupState {
    /// Per topic, per partition. A partition the group never committed or was assigned
    /// has no window (Burrow's nil ring) and fetches with no offsets at all.
    topics: BTreeMap<String, Vec<PartitionState>>,
    /// Timestamp of the newest appended commit; 0 for a group created by an owner alone,
    /// which therefore expires on its first fetch, as in Burrow.
    last_commit_ms: i64,
}

#[derive(Debug, Default)]
struct PartitionState {
    window: Option<VecDeque<ConsumerOffset>>,
    owner: String,
    client_id: String,
}

/// Where a commit went, of interest only to the group's last commit time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    Appended,
    Backfilled,
}

impl Storage {
    /// A storage with no clusters yet; add each configured cluster with
    /// [`Storage::add_cluster`]. Fails where Burrow refuses to start: no intervals, a
    /// regex that does not compile, the old whitelist/blacklist keys.
    pub fn new(config: StorageConfig) -> Result<Storage, StorageConfigError> {
        if config.group_whitelist.is_some() {
            return Err(StorageConfigError::RenamedKey {
                old: "group-whitelist",
                new: "group-allowlist",
            });
        }
        if config.group_blacklist.is_some() {
            return Err(StorageConfigError::RenamedKey {
                old: "group-blacklist",
                new: "group-denylist",
            });
        }
        if let Some(class) = config.class_name.as_deref()
            && class != "inmemory"
        {
            return Err(StorageConfigError::UnknownClass(class.to_string()));
        }
        if config.intervals == 0 {
            return Err(StorageConfigError::NoIntervals);
        }
        Ok(Storage {
            intervals: config.intervals,
            min_distance_ms: config.min_distance_seconds.saturating_mul(1000),
            expire_group_ms: config.expire_group_seconds.saturating_mul(1000),
            group_allowlist: compile("group-allowlist", config.group_allowlist.as_deref())?,
            group_denylist: compile("group-denylist", config.group_denylist.as_deref())?,
            clusters: BTreeMap::new(),
        })
    }

    /// Starts keeping offsets for a cluster. Burrow creates one per configured cluster at
    /// start; requests naming any other cluster are dropped. Adding one twice keeps what
    /// it holds.
    pub fn add_cluster(&mut self, cluster: &str) {
        self.clusters.entry(cluster.to_string()).or_default();
    }

    /// The number of commits and log end offsets kept per partition.
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// Whether a group passes `group-allowlist` (must match, when set) and
    /// `group-denylist` (must not match, when set). Matching is a search anywhere in the
    /// name, as Go's `MatchString`.
    pub fn accepts_group(&self, group: &str) -> bool {
        if let Some(allowlist) = &self.group_allowlist
            && !allowlist.is_match(group)
        {
            return false;
        }
        if let Some(denylist) = &self.group_denylist
            && denylist.is_match(group)
        {
            return false;
        }
        true
    }

    /// Records a partition's log end offset. `topic_partition_count` grows the topic's
    /// partition list when it is larger (partitions are never removed but by
    /// [`Storage::delete_topic`]).
    pub fn set_broker_offset(
        &mut self,
        cluster: &str,
        topic: &str,
        partition: i32,
        topic_partition_count: i32,
        offset: i64,
        timestamp_ms: i64,
    ) -> Result<(), Dropped> {
        let intervals = self.intervals;
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        let index = usize::try_from(partition).map_err(|_| Dropped::NegativePartition)?;
        let count = usize::try_from(topic_partition_count).unwrap_or(0);
        let known = state.broker.get(topic).map_or(0, Vec::len);
        // Burrow indexes its slice here and would panic; refuse before changing anything.
        if index >= count.max(known) {
            return Err(Dropped::UnknownPartition);
        }
        let partitions = state.broker.entry(topic.to_string()).or_default();
        if count > partitions.len() {
            // Empty until the partition's first offset: a topic announced with many
            // partitions costs no window memory before they are read.
            partitions.resize_with(count, VecDeque::new);
        }
        let window = &mut partitions[index];
        window.push_back(BrokerOffset {
            offset,
            timestamp_ms,
        });
        if window.len() > intervals {
            window.pop_front();
        }
        Ok(())
    }

    /// Records a group's committed offset for a partition (see the module docs for what
    /// is kept). `commit.observed_ms` is the "now" for `expire-group`.
    pub fn set_consumer_offset(
        &mut self,
        cluster: &str,
        group: &str,
        topic: &str,
        partition: i32,
        commit: OffsetCommit,
    ) -> Result<(), Dropped> {
        let intervals = self.intervals;
        let min_distance_ms = self.min_distance_ms;
        let oldest_kept_ms = self.oldest_kept_ms(commit.observed_ms);
        let accepted = self.accepts_group(group);
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        if commit.timestamp_ms < oldest_kept_ms {
            return Err(Dropped::OffsetTooOld);
        }
        if !accepted {
            return Err(Dropped::GroupNotAccepted);
        }
        let (log_end_offset, partition_count) = state.latest_broker_offset(topic, partition)?;
        let group_state = state.consumers.entry(group.to_string()).or_default();
        let window = group_state
            .partition(topic, partition, partition_count)
            .window
            .get_or_insert_with(|| VecDeque::with_capacity(intervals));
        let placement = place_commit(window, intervals, min_distance_ms, commit, log_end_offset)?;
        if placement == Placement::Appended {
            group_state.last_commit_ms = commit.timestamp_ms;
        }
        Ok(())
    }

    /// Records which consumer owns a partition. As in Burrow the group is created before
    /// the topic is checked, so an owner for an unknown topic leaves an empty group
    /// behind (it expires on its first fetch).
    pub fn set_consumer_owner(
        &mut self,
        cluster: &str,
        group: &str,
        topic: &str,
        partition: i32,
        owner: &str,
        client_id: &str,
    ) -> Result<(), Dropped> {
        let intervals = self.intervals;
        let accepted = self.accepts_group(group);
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        if !accepted {
            return Err(Dropped::GroupNotAccepted);
        }
        let broker = state.latest_broker_offset(topic, partition);
        let group_state = state.consumers.entry(group.to_string()).or_default();
        let (_, partition_count) = broker?;
        let partition_state = group_state.partition(topic, partition, partition_count);
        // Burrow creates the window here too, so the partition fetches as empty slots.
        partition_state
            .window
            .get_or_insert_with(|| VecDeque::with_capacity(intervals));
        partition_state.owner = owner.to_string();
        partition_state.client_id = client_id.to_string();
        Ok(())
    }

    /// Forgets every partition's owner in a group (its members all left).
    pub fn clear_consumer_owners(&mut self, cluster: &str, group: &str) -> Result<(), Dropped> {
        let accepted = self.accepts_group(group);
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        if !accepted {
            return Err(Dropped::GroupNotAccepted);
        }
        let group_state = state
            .consumers
            .get_mut(group)
            .ok_or(Dropped::UnknownGroup)?;
        for partition in group_state.topics.values_mut().flatten() {
            partition.owner.clear();
            partition.client_id.clear();
        }
        Ok(())
    }

    /// Forgets a topic: its log end offsets and every group's commits for it. Groups left
    /// with no topics stay (and evaluate as OK with no partitions), as in Burrow.
    pub fn delete_topic(&mut self, cluster: &str, topic: &str) -> Result<(), Dropped> {
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        for group in state.consumers.values_mut() {
            group.topics.remove(topic);
        }
        state.broker.remove(topic);
        Ok(())
    }

    /// Forgets a group (a tombstone in `__consumer_offsets`, or the API's delete). A group
    /// that does not exist is not an error.
    pub fn delete_group(&mut self, cluster: &str, group: &str) -> Result<(), Dropped> {
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        state.consumers.remove(group);
        Ok(())
    }

    /// Forgets one topic of a group, and the group itself when that leaves it with no
    /// topics. An empty `topic` (or an unknown group) forgets the whole group, as Burrow's
    /// delete request does.
    pub fn delete_group_topic(
        &mut self,
        cluster: &str,
        group: &str,
        topic: &str,
    ) -> Result<GroupDeletion, Dropped> {
        let state = self
            .clusters
            .get_mut(cluster)
            .ok_or(Dropped::UnknownCluster)?;
        if let Some(group_state) = state.consumers.get_mut(group)
            && !topic.is_empty()
        {
            group_state.topics.remove(topic);
            if !group_state.topics.is_empty() {
                return Ok(GroupDeletion::Topic);
            }
        }
        state.consumers.remove(group);
        Ok(GroupDeletion::Group)
    }

    /// The clusters storage keeps, sorted.
    pub fn clusters(&self) -> Vec<String> {
        self.clusters.keys().cloned().collect()
    }

    /// The topics the brokers reported for a cluster, sorted; None for an unknown
    /// cluster.
    pub fn topics(&self, cluster: &str) -> Option<Vec<String>> {
        let state = self.clusters.get(cluster)?;
        Some(state.broker.keys().cloned().collect())
    }

    /// The newest log end offset of each partition of a topic, in partition order.
    /// As in Burrow, a partition with no offset yet is skipped, not given a placeholder.
    pub fn topic(&self, cluster: &str, topic: &str) -> Option<Vec<i64>> {
        let partitions = self.clusters.get(cluster)?.broker.get(topic)?;
        Some(
            partitions
                .iter()
                .filter_map(|window| window.back().map(|latest| latest.offset))
                .collect(),
        )
    }

    /// The last log end offsets of one partition, oldest first.
    pub fn broker_offsets(
        &self,
        cluster: &str,
        topic: &str,
        partition: i32,
    ) -> Option<Vec<BrokerOffset>> {
        let partitions = self.clusters.get(cluster)?.broker.get(topic)?;
        let window = partitions.get(usize::try_from(partition).ok()?)?;
        Some(window.iter().copied().collect())
    }

    /// The groups of a cluster, sorted; None for an unknown cluster. Expired groups are
    /// listed until a fetch drops them, as in Burrow.
    pub fn consumers(&self, cluster: &str) -> Option<Vec<String>> {
        let state = self.clusters.get(cluster)?;
        Some(state.consumers.keys().cloned().collect())
    }

    /// A group's windows, owners and current lags. None for an unknown cluster or group,
    /// and for a group whose newest appended commit is older than `expire-group` at
    /// `now_ms`, which this drops.
    pub fn consumer(&mut self, cluster: &str, group: &str, now_ms: i64) -> Option<ConsumerTopics> {
        let intervals = self.intervals;
        let oldest_kept_ms = self.oldest_kept_ms(now_ms);
        let state = self.clusters.get_mut(cluster)?;
        let group_state = state.consumers.get(group)?;
        if oldest_kept_ms > group_state.last_commit_ms {
            state.consumers.remove(group);
            return None;
        }
        let mut topics = ConsumerTopics::new();
        for (topic, partitions) in &group_state.topics {
            let broker = state.broker.get(topic);
            let fetched = partitions
                .iter()
                .enumerate()
                .map(|(index, partition)| {
                    let broker_window = broker.and_then(|broker| broker.get(index));
                    fetch_partition(partition, broker_window, intervals)
                })
                .collect();
            topics.insert(topic.clone(), fetched);
        }
        Some(topics)
    }

    /// The groups that have a topic (with or without commits for it), sorted; None for
    /// an unknown cluster.
    pub fn consumers_for_topic(&self, cluster: &str, topic: &str) -> Option<Vec<String>> {
        let state = self.clusters.get(cluster)?;
        Some(
            state
                .consumers
                .iter()
                .filter(|(_, group)| group.topics.contains_key(topic))
                .map(|(name, _)| name.clone())
                .collect(),
        )
    }

    /// Commits (and groups last committing) before this are expired at `now_ms`. Burrow
    /// measures from whole seconds, `(now_s - expire-group) * 1000`; so does this.
    fn oldest_kept_ms(&self, now_ms: i64) -> i64 {
        whole_seconds_ms(now_ms).saturating_sub(self.expire_group_ms)
    }
}

impl ClusterState {
    /// Burrow's `getBrokerOffset`: the partition's newest log end offset and the topic's
    /// partition count, or why a consumer request for it is dropped.
    fn latest_broker_offset(&self, topic: &str, partition: i32) -> Result<(i64, usize), Dropped> {
        let partitions = self.broker.get(topic).ok_or(Dropped::UnknownTopic)?;
        let index = usize::try_from(partition).map_err(|_| Dropped::NegativePartition)?;
        let window = partitions.get(index).ok_or(Dropped::UnknownPartition)?;
        let latest = window.back().ok_or(Dropped::NoBrokerOffset)?;
        Ok((latest.offset, partitions.len()))
    }
}

impl GroupState {
    /// Burrow's `getConsumerPartition`: the topic's partition list grown to
    /// `partition_count` when `partition` is beyond it. The caller has checked the
    /// partition against the brokers, so it is non-negative and below the count.
    fn partition(
        &mut self,
        topic: &str,
        partition: i32,
        partition_count: usize,
    ) -> &mut PartitionState {
        let index = usize::try_from(partition).expect("checked against the broker partitions");
        let partitions = self.topics.entry(topic.to_string()).or_default();
        if index >= partitions.len() {
            partitions.resize_with(partition_count.max(index + 1), PartitionState::default);
        }
        &mut partitions[index]
    }
}

/// Puts a commit into its window, by order, with Burrow's rules (module docs). Returns
/// whether it was an append, or why it was dropped.
fn place_commit(
    window: &mut VecDeque<ConsumerOffset>,
    intervals: usize,
    min_distance_ms: i64,
    commit: OffsetCommit,
    log_end_offset: i64,
) -> Result<Placement, Dropped> {
    let mut stored = ConsumerOffset {
        offset: commit.offset,
        order: commit.order,
        timestamp: commit.timestamp_ms,
        // Burrow stamps `observedAt` from `time.Now().Unix() * 1000`: whole seconds.
        observed_at: whole_seconds_ms(commit.observed_ms),
        lag: None,
    };
    let full = window.len() >= intervals;
    if let (Some(oldest), Some(newest)) = (window.front(), window.back()) {
        if full && oldest.order >= commit.order {
            return Err(Dropped::WindowFull);
        }
        if newest.order >= commit.order {
            backfill(window, intervals, min_distance_ms, stored)?;
            debug_assert!(is_sorted_by_order(window));
            return Ok(Placement::Backfilled);
        }
    }
    // An append: the lag against the newest log end offset known. The broker's offset is
    // read periodically, so a consumer may appear ahead of it; that is zero lag.
    stored.lag = Some(lag_behind(log_end_offset, commit.offset));
    if let Some(newest) = window.back_mut()
        && too_close(commit.timestamp_ms, newest.timestamp, min_distance_ms)
    {
        // Keep the earlier timestamp: taking the new one would let a consumer that
        // commits more often than min-distance never add a new entry.
        stored.timestamp = newest.timestamp;
        *newest = stored;
    } else {
        window.push_back(stored);
        if window.len() > intervals {
            window.pop_front();
        }
    }
    debug_assert!(is_sorted_by_order(window));
    Ok(Placement::Appended)
}

/// A commit older than the newest stored one: slotted in by order, with no lag.
fn backfill(
    window: &mut VecDeque<ConsumerOffset>,
    intervals: usize,
    min_distance_ms: i64,
    mut stored: ConsumerOffset,
) -> Result<(), Dropped> {
    let full = window.len() >= intervals;
    if window.iter().any(|existing| existing.order == stored.order) {
        return Err(Dropped::DuplicateOrder);
    }
    let position = window.partition_point(|existing| existing.order < stored.order);
    if position == 0 {
        // Older than everything stored, in a window with room: the oldest entry now.
        window.push_front(stored);
        return Ok(());
    }
    if full && position == 1 {
        // Between the oldest and the second oldest of a full window: Burrow overwrites the
        // oldest slot, without a min-distance check (the slot before it in its ring is the
        // newest commit).
        window[0] = stored;
        return Ok(());
    }
    let previous = &mut window[position - 1];
    if too_close(stored.timestamp, previous.timestamp, min_distance_ms) {
        stored.timestamp = previous.timestamp;
        *previous = stored;
        return Ok(());
    }
    window.insert(position, stored);
    if window.len() > intervals {
        window.pop_front();
    }
    Ok(())
}

/// Burrow's min-distance test, `new - previous < min-distance`; a negative gap (a
/// commit timestamped before the one it follows) counts as close.
fn too_close(timestamp_ms: i64, previous_timestamp_ms: i64, min_distance_ms: i64) -> bool {
    timestamp_ms.saturating_sub(previous_timestamp_ms) < min_distance_ms
}

fn lag_behind(log_end_offset: i64, offset: i64) -> u64 {
    u64::try_from(i128::from(log_end_offset) - i128::from(offset)).unwrap_or(0)
}

fn is_sorted_by_order(window: &VecDeque<ConsumerOffset>) -> bool {
    window
        .iter()
        .zip(window.iter().skip(1))
        .all(|(earlier, later)| earlier.order < later.order)
}

/// A partition as a fetch returns it: the window padded at the front with empty slots to
/// `intervals` (none at all when there is no window), the broker's last log end offsets,
/// and the lag of the newest commit against the newest of those.
fn fetch_partition(
    partition: &PartitionState,
    broker_window: Option<&VecDeque<BrokerOffset>>,
    intervals: usize,
) -> ConsumerPartition {
    let offsets: Vec<Option<ConsumerOffset>> = match &partition.window {
        None => Vec::new(),
        Some(window) => std::iter::repeat_n(None, intervals.saturating_sub(window.len()))
            .chain(window.iter().cloned().map(Some))
            .collect(),
    };
    let broker_offsets: Vec<i64> = broker_window
        .map(|window| window.iter().map(|broker| broker.offset).collect())
        .unwrap_or_default();
    let current_lag = match (offsets.last(), broker_offsets.last()) {
        (Some(Some(newest)), Some(&log_end_offset)) => lag_behind(log_end_offset, newest.offset),
        _ => 0,
    };
    ConsumerPartition {
        offsets,
        broker_offsets,
        owner: partition.owner.clone(),
        client_id: partition.client_id.clone(),
        current_lag,
    }
}

/// `now_ms` truncated to whole seconds, as Burrow's `time.Now().Unix() * 1000`.
pub(crate) fn whole_seconds_ms(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(1000)
}

fn compile(key: &'static str, pattern: Option<&str>) -> Result<Option<Regex>, StorageConfigError> {
    match pattern {
        None | Some("") => Ok(None),
        Some(pattern) => {
            Regex::new(pattern)
                .map(Some)
                .map_err(|source| StorageConfigError::BadRegex {
                    key,
                    source: Box::new(source),
                })
        }
    }
}
