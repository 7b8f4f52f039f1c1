//! The sampler: every `console.sample.interval.ms` it reads the cluster once (metadata,
//! each broker's log directories, every partition's end offset, every group's committed
//! offsets) and keeps a bounded history, so pages render from memory in a few
//! milliseconds however many topics there are, and show rates and lag over time.
//!
//! A page that must show a change it just made (a created topic) calls
//! [`refresh`] first.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sluice_client::{ListGroupsFilter, OffsetSpec, TopicPartition};
use sluice_client::{LogDirDescription, PartitionInfo};
use tokio::sync::Mutex as AsyncMutex;

use super::state::Console;

/// A broker as the metadata describes it.
#[derive(Clone, Debug)]
pub struct BrokerInfo {
    pub id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

/// A topic in a snapshot.
#[derive(Clone, Debug)]
pub struct TopicInfo {
    pub name: String,
    pub internal: bool,
    pub partitions: Vec<PartitionInfo>,
}

impl TopicInfo {
    /// The replication factor: the replica count of its first partition.
    pub fn replication_factor(&self) -> usize {
        self.partitions.first().map_or(0, |p| p.replicas.len())
    }
}

/// The cluster as read at one instant.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub taken_ms: i64,
    pub cluster_id: Option<String>,
    pub controller_id: Option<i32>,
    pub brokers: Vec<BrokerInfo>,
    /// By name.
    pub topics: Vec<TopicInfo>,
    /// Each broker's log directories (absent for a broker that did not answer).
    pub log_dirs: BTreeMap<i32, Vec<LogDirDescription>>,
    /// Each partition's high watermark.
    pub end_offsets: HashMap<(String, i32), i64>,
    /// Each group's committed offsets.
    pub committed: BTreeMap<String, HashMap<(String, i32), i64>>,
    /// What could not be read this time, for the Overview page.
    pub problems: Vec<String>,
}

impl Snapshot {
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.topics[i])
    }

    /// A partition's size: the leader's copy when it reported one, else the largest.
    pub fn partition_size(&self, topic: &str, partition: &PartitionInfo) -> Option<u64> {
        let key = (topic.to_string(), partition.partition);
        let size_on = |broker: i32| {
            self.log_dirs.get(&broker).and_then(|dirs| {
                dirs.iter()
                    .find_map(|dir| dir.partition_sizes.get(&key).copied())
            })
        };
        partition
            .leader
            .and_then(size_on)
            .or_else(|| partition.replicas.iter().filter_map(|b| size_on(*b)).max())
            .map(|size| size.max(0) as u64)
    }

    /// A topic's size (each partition counted once, not once per replica).
    pub fn topic_size(&self, topic: &TopicInfo) -> Option<u64> {
        let sizes: Vec<u64> = topic
            .partitions
            .iter()
            .filter_map(|p| self.partition_size(&topic.name, p))
            .collect();
        (!sizes.is_empty()).then(|| sizes.iter().sum())
    }

    /// The bytes of every partition replica a broker holds.
    pub fn broker_disk_use(&self, broker: i32) -> Option<u64> {
        self.log_dirs.get(&broker).map(|dirs| {
            dirs.iter()
                .flat_map(|dir| dir.partition_sizes.values())
                .map(|size| (*size).max(0) as u64)
                .sum()
        })
    }

    /// How many partitions each broker leads.
    pub fn leader_counts(&self) -> BTreeMap<i32, usize> {
        let mut counts = BTreeMap::new();
        for partition in self.topics.iter().flat_map(|t| &t.partitions) {
            if let Some(leader) = partition.leader {
                *counts.entry(leader).or_insert(0) += 1;
            }
        }
        counts
    }

    /// Partitions whose ISR is smaller than their replica set (the guide's
    /// UnderReplicatedPartitions).
    pub fn under_replicated(&self) -> usize {
        self.topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.isr.len() < p.replicas.len())
            .count()
    }

    /// Partitions without a leader (OfflinePartitionsCount).
    pub fn offline(&self) -> usize {
        self.topics
            .iter()
            .flat_map(|t| &t.partitions)
            .filter(|p| p.leader.is_none())
            .count()
    }

    pub fn partition_count(&self) -> usize {
        self.topics.iter().map(|t| t.partitions.len()).sum()
    }
}

/// The history the sampler keeps: (time in ms, value) per series.
type Series = VecDeque<(i64, i64)>;

#[derive(Default)]
struct History {
    snapshot: Option<Arc<Snapshot>>,
    /// Each partition's end offset over time.
    end_offsets: HashMap<(String, i32), Series>,
    /// Each group's committed offset per partition over time.
    committed: HashMap<String, HashMap<(String, i32), Series>>,
    /// Each group's total lag over time.
    group_lag: HashMap<String, Series>,
}

/// The samples, behind one lock (held only to copy in or out, never across I/O).
pub struct Sampler {
    history: Mutex<History>,
    capacity: usize,
    /// One refresh at a time.
    refreshing: AsyncMutex<()>,
}

/// The window rates are computed over.
const RATE_WINDOW_MS: i64 = 60_000;

impl Sampler {
    pub fn new(capacity: usize) -> Sampler {
        Sampler {
            history: Mutex::new(History::default()),
            capacity: capacity.max(2),
            refreshing: AsyncMutex::new(()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The latest snapshot, if one was taken.
    pub fn snapshot(&self) -> Option<Arc<Snapshot>> {
        self.lock().snapshot.clone()
    }

    fn record(&self, snapshot: Snapshot) -> Arc<Snapshot> {
        let snapshot = Arc::new(snapshot);
        let mut history = self.lock();
        let now = snapshot.taken_ms;
        let capacity = self.capacity;
        // Group lag keeps `console.sample.history` samples (its chart); the per-partition
        // series only feed rates, which read the last RATE_WINDOW_MS, so they keep no
        // more (at 10,000 partitions a full history was ~200 MiB).
        let push = |series: &mut Series, value: i64, keep_ms: Option<i64>| {
            if series.back().is_some_and(|(t, _)| *t >= now) {
                return;
            }
            series.push_back((now, value));
            while series.len() > capacity
                || keep_ms.is_some_and(|keep| series.front().is_some_and(|(t, _)| now - *t > keep))
            {
                series.pop_front();
            }
        };
        let window = Some(RATE_WINDOW_MS);
        for (key, offset) in &snapshot.end_offsets {
            push(
                history.end_offsets.entry(key.clone()).or_default(),
                *offset,
                window,
            );
        }
        history
            .end_offsets
            .retain(|key, _| snapshot.end_offsets.contains_key(key));
        for (group, offsets) in &snapshot.committed {
            let mut lag = 0;
            let series = history.committed.entry(group.clone()).or_default();
            for (key, offset) in offsets {
                push(series.entry(key.clone()).or_default(), *offset, window);
                if let Some(end) = snapshot.end_offsets.get(key) {
                    lag += (end - offset).max(0);
                }
            }
            series.retain(|key, _| offsets.contains_key(key));
            push(
                history.group_lag.entry(group.clone()).or_default(),
                lag,
                None,
            );
        }
        history
            .committed
            .retain(|group, _| snapshot.committed.contains_key(group));
        history
            .group_lag
            .retain(|group, _| snapshot.committed.contains_key(group));
        history.snapshot = Some(snapshot.clone());
        snapshot
    }

    /// Records per second appended to a partition over the last minute of samples.
    pub fn partition_rate(&self, topic: &str, partition: i32) -> Option<f64> {
        let history = self.lock();
        rate(history.end_offsets.get(&(topic.to_string(), partition))?)
    }

    /// Records per second appended to a topic (the sum over its partitions).
    pub fn topic_rate(&self, topic: &TopicInfo) -> Option<f64> {
        let history = self.lock();
        let rates: Vec<f64> = topic
            .partitions
            .iter()
            .filter_map(|p| {
                rate(
                    history
                        .end_offsets
                        .get(&(topic.name.clone(), p.partition))?,
                )
            })
            .collect();
        (!rates.is_empty()).then(|| rates.iter().sum())
    }

    /// Records per second a group's committed offset advanced on a partition over the
    /// last minute of samples.
    pub fn consume_rate(&self, group: &str, topic: &str, partition: i32) -> Option<f64> {
        let history = self.lock();
        rate(
            history
                .committed
                .get(group)?
                .get(&(topic.to_string(), partition))?,
        )
    }

    /// A group's total lag over time, (ms, records).
    pub fn group_lag_history(&self, group: &str) -> Vec<(i64, f64)> {
        self.lock()
            .group_lag
            .get(group)
            .map(|series| series.iter().map(|(t, v)| (*t, *v as f64)).collect())
            .unwrap_or_default()
    }
}

/// The rate of a series over its last [`RATE_WINDOW_MS`]: `None` with fewer than two
/// samples.
fn rate(series: &Series) -> Option<f64> {
    let &(t1, v1) = series.back()?;
    // From the newest back, so the cost is the window's samples, not the whole history.
    let &(t0, v0) = series
        .iter()
        .rev()
        .take_while(|(t, _)| t1 - *t <= RATE_WINDOW_MS)
        .last()
        .filter(|(t, _)| *t < t1)?;
    Some(((v1 - v0).max(0) as f64) * 1000.0 / (t1 - t0) as f64)
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Starts sampling every `console.sample.interval.ms` until the console stops.
pub fn start(console: Arc<Console>) {
    tokio::spawn(async move {
        let mut stop = console.stop.clone();
        loop {
            if let Err(error) = refresh(&console).await {
                tracing::debug!("the console's sampler: {error:#}");
            }
            tokio::select! {
                _ = tokio::time::sleep(console.config.sample_interval) => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
        }
    });
}

/// The latest snapshot, or (before the first sample) one read now.
pub async fn current(console: &Console) -> anyhow::Result<Arc<Snapshot>> {
    match console.sampler.snapshot() {
        Some(snapshot) => Ok(snapshot),
        None => refresh(console).await,
    }
}

/// Reads the cluster now and records a sample; pages call this after a change so they
/// show it. A failure of one part (a broker's log dirs, a group's offsets) is listed in
/// the snapshot's `problems`; only a failed metadata request fails the refresh.
pub async fn refresh(console: &Console) -> anyhow::Result<Arc<Snapshot>> {
    let _one_at_a_time = console.sampler.refreshing.lock().await;
    let admin = &console.admin;
    let metadata = admin.client().metadata(None).await?;
    let mut snapshot = Snapshot {
        taken_ms: now_ms(),
        cluster_id: metadata.cluster_id.as_ref().map(|id| id.to_string()),
        controller_id: (metadata.controller_id.0 >= 0).then_some(metadata.controller_id.0),
        ..Snapshot::default()
    };
    snapshot.brokers = metadata
        .brokers
        .iter()
        .map(|b| BrokerInfo {
            id: b.node_id.0,
            host: b.host.to_string(),
            port: b.port,
            rack: b.rack.as_ref().map(|r| r.to_string()),
        })
        .collect();
    snapshot.brokers.sort_by_key(|b| b.id);
    for topic in &metadata.topics {
        let Some(name) = topic.name.as_ref().map(|n| n.to_string()) else {
            continue;
        };
        if topic.error_code != 0 {
            continue;
        }
        let mut partitions: Vec<PartitionInfo> = topic
            .partitions
            .iter()
            .map(|p| PartitionInfo {
                partition: p.partition_index,
                leader: (p.leader_id.0 >= 0).then_some(p.leader_id.0),
                leader_epoch: p.leader_epoch,
                replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
                isr: p.isr_nodes.iter().map(|b| b.0).collect(),
                offline_replicas: p.offline_replicas.iter().map(|b| b.0).collect(),
            })
            .collect();
        partitions.sort_by_key(|p| p.partition);
        snapshot.topics.push(TopicInfo {
            name,
            internal: topic.is_internal,
            partitions,
        });
    }
    snapshot.topics.sort_by(|a, b| a.name.cmp(&b.name));
    for broker in &snapshot.brokers {
        match tokio::time::timeout(Duration::from_secs(10), admin.describe_log_dirs(broker.id))
            .await
        {
            Ok(Ok(dirs)) => {
                snapshot.log_dirs.insert(broker.id, dirs);
            }
            Ok(Err(error)) => snapshot
                .problems
                .push(format!("broker {}: log dirs: {error}", broker.id)),
            Err(_) => snapshot
                .problems
                .push(format!("broker {}: log dirs: no answer in 10 s", broker.id)),
        }
    }
    let specs: BTreeMap<TopicPartition, OffsetSpec> = snapshot
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().filter(|p| p.leader.is_some()).map(|p| {
                (
                    TopicPartition::new(t.name.clone(), p.partition),
                    OffsetSpec::Latest,
                )
            })
        })
        .collect();
    if !specs.is_empty() {
        match admin.list_offsets(&specs).await {
            Ok(results) => {
                for (tp, result) in results {
                    if let Ok(info) = result {
                        snapshot
                            .end_offsets
                            .insert((tp.topic, tp.partition), info.offset);
                    }
                }
            }
            Err(error) => snapshot.problems.push(format!("end offsets: {error}")),
        }
    }
    match admin
        .list_groups(&ListGroupsFilter::consumer_groups())
        .await
    {
        Ok(groups) => {
            for group in groups {
                match admin.list_group_offsets(&group.group_id).await {
                    Ok(offsets) => {
                        snapshot.committed.insert(
                            group.group_id,
                            offsets
                                .into_iter()
                                .map(|(tp, o)| ((tp.topic, tp.partition), o.offset))
                                .collect(),
                        );
                    }
                    Err(error) => snapshot
                        .problems
                        .push(format!("group {}: offsets: {error}", group.group_id)),
                }
            }
        }
        Err(error) => snapshot.problems.push(format!("groups: {error}")),
    }
    Ok(console.sampler.record(snapshot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_series_keep_the_rate_window_and_group_lag_its_history() {
        let sampler = Sampler::new(720);
        for i in 0..200_i64 {
            let mut snapshot = Snapshot {
                taken_ms: i * 1000,
                ..Snapshot::default()
            };
            snapshot.end_offsets.insert(("t".into(), 0), i * 10);
            snapshot
                .committed
                .insert("g".into(), HashMap::from([(("t".to_string(), 0), i * 5)]));
            sampler.record(snapshot);
        }
        let history = sampler.lock();
        let ends = &history.end_offsets[&("t".to_string(), 0)];
        assert_eq!(ends.len(), 61, "the samples of the last 60 s");
        assert_eq!(ends.front(), Some(&(139_000, 1390)));
        assert_eq!(history.committed["g"][&("t".to_string(), 0)].len(), 61);
        assert_eq!(
            history.group_lag["g"].len(),
            200,
            "the chart's whole history"
        );
        drop(history);
        assert_eq!(sampler.partition_rate("t", 0), Some(10.0));
        assert_eq!(sampler.consume_rate("g", "t", 0), Some(5.0));
    }

    #[test]
    fn rates_use_the_last_minute_of_samples() {
        let mut series = Series::new();
        assert_eq!(rate(&series), None);
        series.push_back((0, 0));
        assert_eq!(rate(&series), None);
        series.push_back((10_000, 100));
        assert_eq!(rate(&series), Some(10.0));
        // A sample older than a minute before the last is left out.
        series.push_back((70_000, 700));
        assert_eq!(rate(&series), Some(10.0));
        series.push_back((80_000, 700));
        assert_eq!(rate(&series), Some(0.0));
        series.push_back((130_000, 1300));
        assert_eq!(rate(&series), Some(10.0));
    }
}
