//! The consumer: Kafka's `KafkaConsumer` for Sluice and Apache Kafka alike.
//!
//! A [`Consumer`] either joins a group ([`Consumer::subscribe`],
//! [`Consumer::subscribe_pattern`]) and shares it with Java consumers (the same
//! assignors, the same ConsumerProtocol bytes; or `group.protocol=consumer`, KIP-848),
//! or reads partitions it was given ([`Consumer::assign`]). [`Consumer::poll`] returns
//! records; positions, commits, seeks, pauses and lag work as in Java.
//!
//! How it is built:
//! - `config`: the Java consumer's keys and defaults.
//! - `assignor`: range, roundrobin, sticky and cooperative-sticky, pure functions.
//! - `coordinator`: the classic group protocol and its background heartbeat task.
//! - `consumer_membership`: the KIP-848 protocol (ConsumerGroupHeartbeat).
//! - `membership`: the group membership as `poll` drives it, for both protocols: joining
//!   and syncing (the leader's assignment), reconciling a KIP-848 target assignment,
//!   leaving, and the rebalance listener's calls.
//! - `fetcher`: Fetch and ListOffsets requests and record decoding.
//! - `metrics`: Kafka's consumer metrics (`records-lag-max`, `commit-latency-avg`, ...).
//! - `pattern`: topic patterns for `subscribe_pattern`.
//!
//! `poll` runs the classic group protocol when a rebalance is due (rebalance listeners
//! run there, in the caller's task; a rebalance may keep `poll` past its timeout, until
//! every member rejoined), resolves missing positions (the committed offset, else
//! `auto.offset.reset`), hands out buffered records (at most `max.poll.records`), and
//! keeps one Fetch in flight per leader broker: before `poll` returns, the next fetch
//! for partitions with nothing buffered is already sent (prefetch), and a response is
//! used only if its partition's position did not move meanwhile (a `seek`). With
//! `group.protocol=consumer` the coordinator assigns and `poll` only reconciles; it
//! never waits for other members then.
//!
//! Bounds: at most one Fetch in flight per broker and one decoded response buffered per
//! partition, so memory is bounded by `fetch.max.bytes` per broker and
//! `max.partition.fetch.bytes` per partition (times the decompression ratio). A poll
//! that returns records costs no request when data is buffered; records are not copied
//! after decompression (keys, values and headers share the batch's buffer).
//!
//! Not here (yet): fetch sessions (every Fetch is sessionless, which is valid and costs
//! the broker a little more per request); rack-aware assignment; `offsetsForTimes`;
//! Java's `wakeup()`.

mod assignor;
mod config;
mod consumer_membership;
mod coordinator;
mod fetcher;
mod membership;
mod metrics;
mod pattern;

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use sluice_protocol::{Header, TimestampType};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use assignor::{Assignor, GroupAssignment, MemberSubscription, RebalanceProtocol};
pub use config::{AutoOffsetReset, ConsumerConfig, GroupProtocol, IsolationLevel};
pub use pattern::TopicPattern;

use crate::ConsumerGroupMetadata;
use crate::client::Client;
use crate::error::{ApiError, Error, ErrorCode};
use crate::groups::{OffsetAndMetadata, TopicPartition};
use crate::metrics::{ClientType, MetricName, Metrics};
use coordinator::Group;
use fetcher::{EARLIEST_TIMESTAMP, FetchPlan, LATEST_TIMESTAMP, PartitionData};
use metrics::{ConsumedShare, CoordinatorMetrics, FetchAggregate, FetchMetrics};

/// The longest wait between metadata lookups of a subscribed topic that does not exist
/// (Java's `retry.backoff.max.ms` default).
const UNKNOWN_TOPIC_BACKOFF_MAX_MS: u64 = 1000;

/// One record as `poll` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: TimestampType,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    /// The partition leader epoch the record was written in, if the broker set one.
    pub leader_epoch: Option<i32>,
}

/// Called when the group moves partitions (Java's `ConsumerRebalanceListener`). All
/// three run inside `poll` (or `close`/`unsubscribe`), in the caller's task.
pub trait RebalanceListener: Send {
    /// Partitions taken away in an orderly rebalance: commit their progress here.
    /// Under the cooperative protocol only the partitions that move are listed.
    fn on_partitions_revoked(&mut self, partitions: &BTreeSet<TopicPartition>);
    /// Partitions added by a rebalance (called after every rebalance, possibly empty).
    fn on_partitions_assigned(&mut self, partitions: &BTreeSet<TopicPartition>);
    /// Partitions lost without a rebalance (the session expired, the member was
    /// fenced or exceeded `max.poll.interval.ms`): others may already own them.
    fn on_partitions_lost(&mut self, partitions: &BTreeSet<TopicPartition>) {
        self.on_partitions_revoked(partitions);
    }
}

/// Offsets and lag of one assigned partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionMetrics {
    pub position: Option<i64>,
    pub high_watermark: Option<i64>,
    pub last_stable_offset: Option<i64>,
    pub log_start_offset: Option<i64>,
    /// Records between the position and the end the consumer can read (the high
    /// watermark, or the last stable offset under read_committed).
    pub lag_records: Option<i64>,
}

/// What `commit_async`'s callback receives.
pub type CommitResult = Result<BTreeMap<TopicPartition, OffsetAndMetadata>, Error>;

/// What the consumer reads.
enum SubscriptionKind {
    None,
    Topics(BTreeSet<String>),
    Pattern(TopicPattern),
    Assigned,
}

/// The consumer's view of one assigned partition.
#[derive(Debug, Clone, Default)]
struct PartitionState {
    position: Option<i64>,
    /// The leader epoch of the last record handed out (committed with the offset).
    leader_epoch: Option<i32>,
    paused: bool,
    /// A reset asked for (seek_to_beginning/end or an out-of-range fetch).
    reset: Option<AutoOffsetReset>,
    high_watermark: Option<i64>,
    last_stable_offset: Option<i64>,
    log_start_offset: Option<i64>,
}

/// A partition's leader from the last metadata.
#[derive(Debug, Clone, Copy)]
struct Leader {
    node: i32,
    epoch: i32,
}

/// One partition's records from a Fetch response, not yet all handed out.
struct BufferedFetch {
    records: VecDeque<ConsumerRecord>,
    /// Each record's encoded size, in step with `records` (for `bytes-consumed`).
    record_sizes: VecDeque<u32>,
    /// Where the next fetch starts once `records` are handed out.
    next_offset: i64,
    /// What was handed out, for the response's metrics (reported when dropped).
    consumed: ConsumedShare,
}

type FetchOutcome = (
    FetchPlan,
    Result<kafka_protocol::messages::FetchResponse, Error>,
);

/// A Kafka consumer.
pub struct Consumer {
    config: Arc<ConsumerConfig>,
    client: Arc<Client>,
    group: Option<Arc<Group>>,
    heartbeat: Option<JoinHandle<()>>,
    subscription: SubscriptionKind,
    listener: Option<Box<dyn RebalanceListener>>,
    assignment: BTreeMap<TopicPartition, PartitionState>,
    /// Decoded records not yet handed out, per partition.
    buffered: BTreeMap<TopicPartition, BufferedFetch>,
    /// Kafka's `consumer-fetch-manager-metrics` (and the network's `consumer-metrics`).
    fetch_metrics: Arc<FetchMetrics>,
    /// Kafka's `consumer-coordinator-metrics`, with a group.
    coordinator_metrics: Option<Arc<CoordinatorMetrics>>,
    /// Leaders of the partitions of interest, and every known topic's partition count.
    leaders: BTreeMap<TopicPartition, Leader>,
    partition_counts: BTreeMap<String, i32>,
    metadata_refreshed: Option<Instant>,
    metadata_stale: bool,
    /// As the group's leader: every subscribed topic's partition count (None: it did not
    /// exist) when it assigned. Metadata that says otherwise later (a topic created or
    /// grown since) makes it rejoin, as Java's `assignmentSnapshot` does.
    assignment_snapshot: Option<BTreeMap<String, Option<i32>>>,
    /// Refreshes in a row that found a subscribed topic missing (it is asked for again
    /// after `retry.backoff.ms` doubling per miss up to 1 s, as Java's metadata backoff).
    unknown_topic_refreshes: u32,
    /// Nodes with a Fetch in flight, and where their responses arrive.
    in_flight: HashSet<i32>,
    fetch_results: mpsc::UnboundedReceiver<FetchOutcome>,
    fetch_sender: mpsc::UnboundedSender<FetchOutcome>,
    /// The assignment and generation last received (the sticky assignor's user data).
    previous_assignment: Vec<TopicPartition>,
    previous_generation: i32,
    next_auto_commit: Instant,
    /// Topics the group's subscription was last sent with.
    joined_topics: BTreeSet<String>,
    /// Topic ids from the metadata (group.protocol=consumer names topics by id).
    topic_ids: BTreeMap<[u8; 16], String>,
    topic_templates: BTreeMap<String, ConsumerHeartbeatTopic>,
    /// Topics the metadata marks internal (`__consumer_offsets`, ...), left out of
    /// pattern subscriptions with `exclude.internal.topics`.
    internal_topics: BTreeSet<String>,
}

type ConsumerHeartbeatTopic =
    kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;

impl Consumer {
    /// Connects to the cluster; joins nothing until `subscribe` and `poll`.
    pub async fn new(config: ConsumerConfig) -> Result<Consumer, Error> {
        config.validate()?;
        let registry = Metrics::new(
            ClientType::Consumer,
            &config.client_id,
            config.metric_config(),
        );
        let fetch_metrics = Arc::new(FetchMetrics::new(registry.clone()));
        let network = Some(fetch_metrics.network.clone());
        let client =
            Arc::new(Client::connect_observed(config.client_config(0), network.clone()).await?);
        let coordinator_metrics = config
            .group_id
            .as_ref()
            .map(|_| Arc::new(CoordinatorMetrics::new(&registry)));
        let group = match (&config.group_id, &coordinator_metrics) {
            (Some(group_id), Some(metrics)) => {
                Some(membership::connect_group(&config, group_id, metrics, network).await?)
            }
            _ => None,
        };
        let (fetch_sender, fetch_results) = mpsc::unbounded_channel();
        let next_auto_commit =
            Instant::now() + Duration::from_millis(config.auto_commit_interval_ms);
        Ok(Consumer {
            config: Arc::new(config),
            client,
            group,
            heartbeat: None,
            subscription: SubscriptionKind::None,
            listener: None,
            assignment: BTreeMap::new(),
            buffered: BTreeMap::new(),
            fetch_metrics,
            coordinator_metrics,
            leaders: BTreeMap::new(),
            partition_counts: BTreeMap::new(),
            metadata_refreshed: None,
            unknown_topic_refreshes: 0,
            assignment_snapshot: None,
            metadata_stale: true,
            in_flight: HashSet::new(),
            fetch_results,
            fetch_sender,
            previous_assignment: Vec::new(),
            previous_generation: -1,
            next_auto_commit,
            joined_topics: BTreeSet::new(),
            topic_ids: BTreeMap::new(),
            topic_templates: BTreeMap::new(),
            internal_topics: BTreeSet::new(),
        })
    }

    /// The configuration this consumer was made with.
    pub fn config(&self) -> &ConsumerConfig {
        &self.config
    }

    /// Joins the group for `topics` (the rebalance happens in the next `poll`).
    pub fn subscribe(
        &mut self,
        topics: impl IntoIterator<Item = impl Into<String>>,
        listener: Option<Box<dyn RebalanceListener>>,
    ) -> Result<(), Error> {
        let topics: BTreeSet<String> = topics.into_iter().map(Into::into).collect();
        self.start_subscription(SubscriptionKind::Topics(topics), listener)
    }

    /// Joins the group for every topic whose whole name matches `pattern` (Java's
    /// regex subset, see [`TopicPattern`]); topics created later join at the next
    /// metadata refresh (`metadata.max.age.ms`).
    pub fn subscribe_pattern(
        &mut self,
        pattern: &str,
        listener: Option<Box<dyn RebalanceListener>>,
    ) -> Result<(), Error> {
        let pattern = TopicPattern::new(pattern)?;
        self.start_subscription(SubscriptionKind::Pattern(pattern), listener)
    }

    fn start_subscription(
        &mut self,
        kind: SubscriptionKind,
        listener: Option<Box<dyn RebalanceListener>>,
    ) -> Result<(), Error> {
        let Some(group) = &self.group else {
            return Err(Error::Config("subscribe needs a group.id".to_string()));
        };
        if matches!(self.subscription, SubscriptionKind::Assigned) {
            return Err(Error::Config(
                "subscribe after assign: call unsubscribe first (Kafka forbids mixing them)"
                    .to_string(),
            ));
        }
        self.subscription = kind;
        self.listener = listener;
        self.metadata_stale = true;
        group.lock().rejoin_needed = true;
        Ok(())
    }

    /// Reads exactly `partitions`, without a group (replaces an earlier `assign`).
    pub fn assign(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<(), Error> {
        if matches!(
            self.subscription,
            SubscriptionKind::Topics(_) | SubscriptionKind::Pattern(_)
        ) {
            return Err(Error::Config(
                "assign after subscribe: call unsubscribe first (Kafka forbids mixing them)"
                    .to_string(),
            ));
        }
        let partitions: BTreeSet<TopicPartition> = partitions.into_iter().collect();
        self.assignment
            .retain(|partition, _| partitions.contains(partition));
        self.buffered
            .retain(|partition, _| partitions.contains(partition));
        for partition in partitions {
            self.assignment.entry(partition).or_default();
        }
        self.assignment_changed();
        self.subscription = SubscriptionKind::Assigned;
        self.metadata_stale = true;
        Ok(())
    }

    /// Leaves the group (revoking through the listener) or drops the manual assignment.
    pub async fn unsubscribe(&mut self) -> Result<(), Error> {
        if let Some(group) = self.group.clone()
            && matches!(
                self.subscription,
                SubscriptionKind::Topics(_) | SubscriptionKind::Pattern(_)
            )
        {
            self.revoke_all_for_leave().await;
            match self.config.group_protocol {
                GroupProtocol::Classic => group.leave("the consumer unsubscribed").await,
                GroupProtocol::Consumer => group.leave_consumer_group().await,
            }
        }
        self.assignment.clear();
        self.buffered.clear();
        self.assignment_changed();
        self.subscription = SubscriptionKind::None;
        Ok(())
    }

    /// The partitions currently assigned.
    pub fn assignment(&self) -> BTreeSet<TopicPartition> {
        self.assignment.keys().cloned().collect()
    }

    /// The group membership, for a transactional producer's `send_offsets_to_transaction`.
    pub fn group_metadata(&self) -> Option<ConsumerGroupMetadata> {
        let group = self.group.as_ref()?;
        let state = group.lock();
        Some(ConsumerGroupMetadata {
            group_id: group.group_id.clone(),
            generation_id: state.generation,
            member_id: state.member_id.clone(),
            group_instance_id: group.group_instance_id.clone(),
        })
    }

    /// Fetches records: at most `max.poll.records`, waiting up to `timeout` for some.
    /// A rebalance due runs first and may take longer than `timeout` (until every
    /// member rejoined, bounded by the rebalance timeout).
    pub async fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>, Error> {
        if matches!(self.subscription, SubscriptionKind::None) {
            return Err(Error::Config(
                "the consumer is not subscribed to any topics or assigned any partitions"
                    .to_string(),
            ));
        }
        let deadline = Instant::now() + timeout;
        loop {
            self.touch_poll_timer();
            if self.is_group_member() {
                match self.config.group_protocol {
                    GroupProtocol::Classic => self.ensure_group().await?,
                    GroupProtocol::Consumer => self.reconcile_consumer_group().await?,
                }
            }
            self.maybe_auto_commit();
            self.refresh_metadata_if_needed().await?;
            self.update_positions().await?;
            let records = self.drain_buffered();
            if !records.is_empty() {
                self.send_fetches();
                return Ok(records);
            }
            self.send_fetches();
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            // Wake up at least every heartbeat interval to notice a rebalance.
            let slice = (deadline - now).min(Duration::from_millis(
                self.config.heartbeat_interval_ms.max(10),
            ));
            if let Ok(Some(outcome)) = tokio::time::timeout(slice, self.fetch_results.recv()).await
            {
                self.handle_fetch(outcome)?;
                // Take every other response that is already here.
                while let Ok(outcome) = self.fetch_results.try_recv() {
                    self.handle_fetch(outcome)?;
                }
            }
            if Instant::now() >= deadline && self.buffered.is_empty() {
                return Ok(Vec::new());
            }
        }
    }

    /// Moves the position of `partition` (assigned) to `offset`.
    pub fn seek(&mut self, partition: &TopicPartition, offset: i64) -> Result<(), Error> {
        let state = self.assigned_mut(partition)?;
        state.position = Some(offset);
        state.reset = None;
        state.leader_epoch = None;
        self.buffered.remove(partition);
        Ok(())
    }

    /// Moves the positions to the log start (resolved at the next `poll` or `position`).
    pub fn seek_to_beginning(&mut self, partitions: &[TopicPartition]) -> Result<(), Error> {
        self.seek_to(partitions, AutoOffsetReset::Earliest)
    }

    /// Moves the positions to the log end (resolved at the next `poll` or `position`).
    pub fn seek_to_end(&mut self, partitions: &[TopicPartition]) -> Result<(), Error> {
        self.seek_to(partitions, AutoOffsetReset::Latest)
    }

    fn seek_to(
        &mut self,
        partitions: &[TopicPartition],
        reset: AutoOffsetReset,
    ) -> Result<(), Error> {
        for partition in partitions {
            let state = self.assigned_mut(partition)?;
            state.position = None;
            state.reset = Some(reset);
            self.buffered.remove(partition);
        }
        Ok(())
    }

    /// Stops fetching `partitions` until `resume`; `poll` returns none of their records.
    pub fn pause(&mut self, partitions: &[TopicPartition]) -> Result<(), Error> {
        for partition in partitions {
            self.assigned_mut(partition)?.paused = true;
        }
        Ok(())
    }

    /// Fetches paused partitions again.
    pub fn resume(&mut self, partitions: &[TopicPartition]) -> Result<(), Error> {
        for partition in partitions {
            self.assigned_mut(partition)?.paused = false;
        }
        Ok(())
    }

    /// The paused partitions.
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.assignment
            .iter()
            .filter(|(_, state)| state.paused)
            .map(|(partition, _)| partition.clone())
            .collect()
    }

    /// The offset of the next record `poll` returns for `partition`, resolving it
    /// (committed offset, else `auto.offset.reset`) if not known yet.
    pub async fn position(&mut self, partition: &TopicPartition) -> Result<i64, Error> {
        self.assigned_mut(partition)?;
        if self.assignment[partition].position.is_none() {
            self.refresh_metadata_if_needed().await?;
            self.update_positions().await?;
        }
        self.assignment[partition]
            .position
            .ok_or_else(|| Error::Config(format!("no position for {partition}")))
    }

    /// The group's committed offsets for `partitions` (absent: none committed).
    pub async fn committed(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, OffsetAndMetadata>, Error> {
        let group = self.group_for_commits()?;
        group
            .committed(
                partitions,
                self.config.isolation_level == IsolationLevel::ReadCommitted,
            )
            .await
    }

    /// Commits the positions of every assigned partition.
    pub async fn commit_sync(&mut self) -> Result<(), Error> {
        let offsets = self.consumed_offsets();
        self.commit_sync_offsets(&offsets).await
    }

    /// Commits `offsets` (the next offset to read, as in Java).
    pub async fn commit_sync_offsets(
        &mut self,
        offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<(), Error> {
        let group = self.group_for_commits()?.clone();
        group.commit(offsets, self.is_group_member()).await
    }

    /// Commits the current positions in the background; `callback` gets the result
    /// (it runs in the commit's task, not inside `poll` as in Java).
    pub fn commit_async(
        &mut self,
        callback: Option<Box<dyn FnOnce(CommitResult) + Send>>,
    ) -> Result<(), Error> {
        let offsets = self.consumed_offsets();
        self.commit_async_offsets(offsets, callback)
    }

    /// Commits `offsets` in the background.
    pub fn commit_async_offsets(
        &mut self,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
        callback: Option<Box<dyn FnOnce(CommitResult) + Send>>,
    ) -> Result<(), Error> {
        let group = self.group_for_commits()?.clone();
        let as_member = self.is_group_member();
        tokio::spawn(async move {
            let result = group.commit(&offsets, as_member).await.map(|()| offsets);
            match callback {
                Some(callback) => callback(result),
                None => {
                    if let Err(error) = result {
                        tracing::warn!(group = %group.group_id, %error, "asynchronous commit failed");
                    }
                }
            }
        });
        Ok(())
    }

    /// Records between the position and the readable end of `partition`, from the
    /// last fetch response (`None` before one arrived).
    pub fn lag(&self, partition: &TopicPartition) -> Option<i64> {
        self.metrics()
            .get(partition)
            .and_then(|metrics| metrics.lag_records)
    }

    /// Offsets and lag of every assigned partition.
    pub fn metrics(&self) -> BTreeMap<TopicPartition, PartitionMetrics> {
        let read_committed = self.config.isolation_level == IsolationLevel::ReadCommitted;
        self.assignment
            .iter()
            .map(|(partition, state)| {
                let end = if read_committed {
                    state.last_stable_offset
                } else {
                    state.high_watermark
                };
                let lag_records = match (end, state.position) {
                    (Some(end), Some(position)) => Some((end - position).max(0)),
                    _ => None,
                };
                let metrics = PartitionMetrics {
                    position: state.position,
                    high_watermark: state.high_watermark,
                    last_stable_offset: state.last_stable_offset,
                    log_start_offset: state.log_start_offset,
                    lag_records,
                };
                (partition.clone(), metrics)
            })
            .collect()
    }

    /// Every metric's current value, named as the Java consumer's (its `metrics()`;
    /// [`Consumer::metrics`] is this client's per-partition offsets):
    /// `consumer-fetch-manager-metrics` (`records-lag-max`, `records-consumed-rate`,
    /// ...), `consumer-coordinator-metrics` (`commit-latency-avg`, ...) and
    /// `consumer-metrics`, tagged `client-id` (see [`crate::metrics`]).
    pub fn kafka_metrics(&self) -> BTreeMap<MetricName, f64> {
        self.fetch_metrics.metrics.values()
    }

    /// The consumer's metrics registry: a handle that reads them from any task, or
    /// exports them to Prometheus ([`Metrics::register_prometheus`]).
    pub fn metrics_registry(&self) -> Metrics {
        self.fetch_metrics.metrics.clone()
    }

    /// Commits (with auto-commit on), revokes through the listener and leaves the group.
    pub async fn close(mut self) -> Result<(), Error> {
        let mut result = Ok(());
        if let Some(group) = self.group.clone()
            && self.is_group_member()
        {
            self.revoke_all_for_leave().await;
            match self.config.group_protocol {
                GroupProtocol::Classic => group.leave("the consumer is being closed").await,
                GroupProtocol::Consumer => group.leave_consumer_group().await,
            }
        } else if self.config.enable_auto_commit && self.group.is_some() {
            result = self.commit_sync().await;
        }
        if let Some(heartbeat) = self.heartbeat.take() {
            heartbeat.abort();
        }
        result
    }

    // Subscription, assignment and commits (the group membership is in `membership`).

    fn group_for_commits(&self) -> Result<&Arc<Group>, Error> {
        self.group
            .as_ref()
            .ok_or_else(|| Error::Config("committing offsets needs a group.id".to_string()))
    }

    /// The topics the subscription covers now.
    fn subscribed_topics(&self) -> BTreeSet<String> {
        match &self.subscription {
            SubscriptionKind::Topics(topics) => topics.clone(),
            SubscriptionKind::Pattern(pattern) => self
                .partition_counts
                .keys()
                .filter(|topic| {
                    !(self.config.exclude_internal_topics && self.internal_topics.contains(*topic))
                        && pattern.matches(topic)
                })
                .cloned()
                .collect(),
            _ => BTreeSet::new(),
        }
    }

    /// Keeps the metrics in step with the assignment: `assigned-partitions`, and no
    /// per-partition sensors for partitions gone.
    fn assignment_changed(&self) {
        if let Some(metrics) = &self.coordinator_metrics {
            metrics
                .assigned_partitions
                .store(self.assignment.len(), std::sync::atomic::Ordering::Relaxed);
        }
        self.fetch_metrics
            .retain_partitions(|partition| self.assignment.contains_key(partition));
    }

    fn maybe_auto_commit(&mut self) {
        if !self.config.enable_auto_commit || self.group.is_none() {
            return;
        }
        let now = Instant::now();
        if now < self.next_auto_commit {
            return;
        }
        self.next_auto_commit = now + Duration::from_millis(self.config.auto_commit_interval_ms);
        let offsets = self.consumed_offsets();
        if !offsets.is_empty() {
            let _ = self.commit_async_offsets(offsets, None);
        }
    }

    /// Each assigned partition's position, as an offset to commit.
    fn consumed_offsets(&self) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        self.assignment
            .iter()
            .filter_map(|(partition, state)| {
                state.position.map(|offset| {
                    (
                        partition.clone(),
                        OffsetAndMetadata {
                            offset,
                            leader_epoch: state.leader_epoch,
                            metadata: String::new(),
                        },
                    )
                })
            })
            .collect()
    }

    fn assigned_mut(&mut self, partition: &TopicPartition) -> Result<&mut PartitionState, Error> {
        self.assignment
            .get_mut(partition)
            .ok_or_else(|| Error::Config(format!("{partition} is not assigned to this consumer")))
    }

    // Metadata and positions.

    async fn refresh_metadata_if_needed(&mut self) -> Result<(), Error> {
        let aged = self.metadata_refreshed.is_none_or(|at| {
            at.elapsed() >= Duration::from_millis(self.config.metadata_max_age_ms)
        });
        let missing = self
            .assignment
            .keys()
            .any(|partition| !self.leaders.contains_key(partition));
        // A subscribed topic that does not exist yet is looked up again soon, so its
        // creation reaches the group's assignment without waiting for
        // `metadata.max.age.ms` (Java's consumer does the same).
        let unknown = self.unknown_subscribed_topic()
            && self.metadata_refreshed.is_none_or(|at| {
                let backoff = self
                    .config
                    .retry_backoff_ms
                    .saturating_mul(1 << self.unknown_topic_refreshes.min(10))
                    .min(UNKNOWN_TOPIC_BACKOFF_MAX_MS);
                at.elapsed() >= Duration::from_millis(backoff)
            });
        if self.metadata_stale || aged || missing || unknown {
            self.refresh_metadata().await?;
            self.unknown_topic_refreshes = if self.unknown_subscribed_topic() {
                self.unknown_topic_refreshes.saturating_add(1)
            } else {
                0
            };
        }
        Ok(())
    }

    fn unknown_subscribed_topic(&self) -> bool {
        match &self.subscription {
            SubscriptionKind::Topics(topics) => topics
                .iter()
                .any(|t| !self.partition_counts.contains_key(t)),
            _ => false,
        }
    }

    async fn refresh_metadata(&mut self) -> Result<(), Error> {
        let response = match &self.subscription {
            SubscriptionKind::Pattern(_) => self.client.metadata(None).await?,
            _ => {
                let mut topics: BTreeSet<String> = self.subscribed_topics();
                topics.extend(self.assignment.keys().map(|p| p.topic.clone()));
                let topics: Vec<String> = topics.into_iter().collect();
                self.client.metadata(Some(&topics)).await?
            }
        };
        let mut counts_changed = false;
        for topic in response.topics {
            let Some(name) = topic.name.map(|name| name.to_string()) else {
                continue;
            };
            if topic.error_code != 0 {
                self.partition_counts.remove(&name);
                continue;
            }
            if topic.is_internal {
                self.internal_topics.insert(name.clone());
            }
            let count = topic.partitions.len() as i32;
            if !topic.topic_id.is_nil() {
                self.topic_ids
                    .insert(*topic.topic_id.as_bytes(), name.clone());
                self.topic_templates.insert(
                    name.clone(),
                    ConsumerHeartbeatTopic::default().with_topic_id(topic.topic_id),
                );
            }
            let previous = self.partition_counts.insert(name.clone(), count);
            // A subscribed topic created since the group last assigned (it was missing
            // from an earlier refresh) needs an assignment as much as new partitions do.
            let created = previous.is_none()
                && self.unknown_topic_refreshes > 0
                && matches!(&self.subscription, SubscriptionKind::Topics(t) if t.contains(&name));
            if created || previous.is_some_and(|previous| previous != count) {
                counts_changed = true;
            }
            for partition in topic.partitions {
                let key = TopicPartition::new(name.clone(), partition.partition_index);
                if partition.leader_id.0 >= 0 {
                    self.leaders.insert(
                        key,
                        Leader {
                            node: partition.leader_id.0,
                            epoch: partition.leader_epoch,
                        },
                    );
                } else {
                    self.leaders.remove(&key);
                }
            }
        }
        // Only the topics this member's own metadata covers (its subscription): others'
        // topics are not refreshed here.
        let subscribed = self.subscribed_topics();
        if let Some(snapshot) = &self.assignment_snapshot
            && snapshot.iter().any(|(topic, count)| {
                subscribed.contains(topic) && self.partition_counts.get(topic).copied() != *count
            })
        {
            counts_changed = true;
        }
        if counts_changed
            && self.is_group_member()
            && let Some(group) = &self.group
        {
            // New partitions of a subscribed topic: the group must assign them.
            group.lock().rejoin_needed = true;
        }
        self.metadata_refreshed = Some(Instant::now());
        self.metadata_stale = false;
        Ok(())
    }

    /// Gives every assigned partition without a position one: the committed offset,
    /// else the reset policy; a requested reset (seek_to_*) uses ListOffsets.
    async fn update_positions(&mut self) -> Result<(), Error> {
        let needs_committed: Vec<TopicPartition> = self
            .assignment
            .iter()
            .filter(|(_, state)| state.position.is_none() && state.reset.is_none())
            .map(|(partition, _)| partition.clone())
            .collect();
        if !needs_committed.is_empty() {
            let committed = match &self.group {
                Some(group) => {
                    group
                        .committed(
                            &needs_committed,
                            self.config.isolation_level == IsolationLevel::ReadCommitted,
                        )
                        .await?
                }
                None => BTreeMap::new(),
            };
            for partition in needs_committed {
                let Some(state) = self.assignment.get_mut(&partition) else {
                    continue;
                };
                match committed.get(&partition) {
                    Some(offset) => {
                        state.position = Some(offset.offset);
                        state.leader_epoch = offset.leader_epoch;
                    }
                    None => {
                        if self.config.auto_offset_reset == AutoOffsetReset::None {
                            return Err(Error::Api(ApiError {
                                code: ErrorCode(1),
                                message: Some(format!(
                                    "no committed offset for {partition} and auto.offset.reset=none \
                                     (Java's NoOffsetForPartitionException)"
                                )),
                            }));
                        }
                        state.reset = Some(self.config.auto_offset_reset);
                    }
                }
            }
        }
        let mut requests: BTreeMap<i32, Vec<(TopicPartition, i64, i32)>> = BTreeMap::new();
        for (partition, state) in &self.assignment {
            let timestamp = match state.reset {
                Some(AutoOffsetReset::Earliest) => EARLIEST_TIMESTAMP,
                Some(AutoOffsetReset::Latest) => LATEST_TIMESTAMP,
                Some(AutoOffsetReset::None) | None => continue,
            };
            match self.leaders.get(partition) {
                Some(leader) => requests.entry(leader.node).or_default().push((
                    partition.clone(),
                    timestamp,
                    leader.epoch,
                )),
                None => self.metadata_stale = true,
            }
        }
        if requests.is_empty() {
            return Ok(());
        }
        let results = fetcher::list_offsets(
            &self.client,
            &requests,
            self.config.isolation_level,
            self.config.request_timeout_ms,
        )
        .await;
        for (partition, result) in results {
            let Some(state) = self.assignment.get_mut(&partition) else {
                continue;
            };
            match result {
                Ok((offset, _)) => {
                    state.position = Some(offset);
                    state.reset = None;
                    state.leader_epoch = None;
                }
                Err(error) => {
                    tracing::debug!(%partition, %error, "offset reset failed; retrying");
                    self.metadata_stale = true;
                }
            }
        }
        Ok(())
    }

    // Fetching.

    /// Sends a Fetch to every leader with fetchable partitions and none in flight.
    fn send_fetches(&mut self) {
        let mut plans: BTreeMap<i32, Vec<(TopicPartition, i64, i32)>> = BTreeMap::new();
        for (partition, state) in &self.assignment {
            let Some(position) = state.position else {
                continue;
            };
            if state.paused || self.buffered.contains_key(partition) {
                continue;
            }
            let Some(leader) = self.leaders.get(partition) else {
                continue;
            };
            if self.in_flight.contains(&leader.node) {
                continue;
            }
            plans
                .entry(leader.node)
                .or_default()
                .push((partition.clone(), position, leader.epoch));
        }
        for (node, partitions) in plans {
            self.in_flight.insert(node);
            let plan = FetchPlan { node, partitions };
            let client = self.client.clone();
            let config = self.config.clone();
            let sender = self.fetch_sender.clone();
            let metrics = self.fetch_metrics.clone();
            tokio::spawn(async move {
                let started = Instant::now();
                let result = fetcher::fetch(&client, &plan, &config).await;
                if let Ok(response) = &result {
                    metrics.fetch_response(started.elapsed(), response.throttle_time_ms);
                }
                // The consumer may be gone; its responses then go nowhere.
                let _ = sender.send((plan, result));
            });
        }
    }

    /// Takes one Fetch response in: buffers records of partitions whose position did
    /// not move, resets or refreshes metadata on partition errors.
    fn handle_fetch(&mut self, (plan, result): FetchOutcome) -> Result<(), Error> {
        self.in_flight.remove(&plan.node);
        let response = match result {
            Ok(response) => response,
            Err(error) => {
                tracing::debug!(node = plan.node, %error, "fetch failed");
                self.metadata_stale = true;
                return Ok(());
            }
        };
        let parsed = fetcher::parse_response(
            &plan,
            response,
            self.config.isolation_level,
            self.config.check_crcs,
        );
        // Each partition's share reports when it is drained; the response's metrics
        // are recorded once every share (and this handle) is gone.
        let aggregate = FetchAggregate::new(self.fetch_metrics.clone());
        for item in parsed {
            let data: PartitionData = match item {
                Ok(data) => data,
                Err((partition, error)) => {
                    let still_here = self.assignment.contains_key(&partition);
                    if still_here {
                        return Err(error);
                    }
                    continue;
                }
            };
            let Some(state) = self.assignment.get_mut(&data.partition) else {
                continue;
            };
            if state.position != Some(data.fetch_offset) {
                continue;
            }
            match data.error {
                ErrorCode::NONE => {
                    state.high_watermark = Some(data.high_watermark);
                    if data.last_stable_offset >= 0 {
                        state.last_stable_offset = Some(data.last_stable_offset);
                    }
                    if data.log_start_offset >= 0 {
                        state.log_start_offset = Some(data.log_start_offset);
                    }
                    if data.records.is_empty() {
                        // Only control or aborted batches: move past them.
                        if data.next_offset > data.fetch_offset {
                            state.position = Some(data.next_offset);
                        }
                        // Nothing to hand out: the lag is known now (Java records it
                        // when it drains this empty fetch in the next poll).
                        let (lag, lead) = lag_and_lead(state, self.config.isolation_level);
                        self.fetch_metrics
                            .partition_offsets(&data.partition, lag, lead);
                    } else {
                        let consumed = ConsumedShare::new(&aggregate, &data.partition.topic);
                        self.buffered.insert(
                            data.partition.clone(),
                            BufferedFetch {
                                records: data.records.into(),
                                record_sizes: data.record_sizes.into(),
                                next_offset: data.next_offset,
                                consumed,
                            },
                        );
                    }
                }
                ErrorCode(1) => {
                    // OFFSET_OUT_OF_RANGE: reset per auto.offset.reset.
                    if self.config.auto_offset_reset == AutoOffsetReset::None {
                        return Err(Error::Api(ApiError {
                            code: ErrorCode(1),
                            message: Some(format!(
                                "fetch offset {} is out of range for {} and auto.offset.reset=none",
                                data.fetch_offset, data.partition
                            )),
                        }));
                    }
                    state.position = None;
                    state.reset = Some(self.config.auto_offset_reset);
                }
                code => {
                    // NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, FENCED and
                    // UNKNOWN_LEADER_EPOCH, and the like: learn the leaders again.
                    tracing::debug!(partition = %data.partition, %code, "fetch error");
                    self.metadata_stale = true;
                }
            }
        }
        Ok(())
    }

    /// Up to `max.poll.records` buffered records of unpaused partitions; advances
    /// their positions past what is handed out.
    fn drain_buffered(&mut self) -> Vec<ConsumerRecord> {
        let mut budget = self.config.max_poll_records;
        let mut out = Vec::new();
        let partitions: Vec<TopicPartition> = self.buffered.keys().cloned().collect();
        for partition in partitions {
            if budget == 0 {
                break;
            }
            let Some(state) = self.assignment.get_mut(&partition) else {
                self.buffered.remove(&partition);
                continue;
            };
            if state.paused {
                continue;
            }
            let Some(fetch) = self.buffered.get_mut(&partition) else {
                continue;
            };
            while budget > 0 {
                let Some(record) = fetch.records.pop_front() else {
                    break;
                };
                let size_bytes = fetch.record_sizes.pop_front().unwrap_or(0);
                fetch.consumed.consumed(u64::from(size_bytes));
                state.position = Some(record.offset + 1);
                state.leader_epoch = record.leader_epoch.or(state.leader_epoch);
                out.push(record);
                budget -= 1;
            }
            if fetch.records.is_empty() {
                let next_offset = fetch.next_offset;
                state.position = Some(state.position.unwrap_or(next_offset).max(next_offset));
                self.buffered.remove(&partition);
            }
            let (lag, lead) = lag_and_lead(state, self.config.isolation_level);
            self.fetch_metrics.partition_offsets(&partition, lag, lead);
        }
        out
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if let Some(heartbeat) = self.heartbeat.take() {
            heartbeat.abort();
        }
    }
}

/// A partition's lag (the readable end − the position) and lead (the position − the log
/// start), as Java's `SubscriptionState.partitionLag`/`partitionLead`: not clamped.
fn lag_and_lead(
    state: &PartitionState,
    isolation_level: IsolationLevel,
) -> (Option<i64>, Option<i64>) {
    let end = match isolation_level {
        IsolationLevel::ReadCommitted => state.last_stable_offset,
        IsolationLevel::ReadUncommitted => state.high_watermark,
    };
    let lag = end
        .zip(state.position)
        .map(|(end, position)| end - position);
    let lead = state
        .position
        .zip(state.log_start_offset)
        .map(|(position, start)| position - start);
    (lag, lead)
}
