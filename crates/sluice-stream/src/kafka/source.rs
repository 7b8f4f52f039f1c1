//! `KafkaSource`: Flink's `KafkaSource` on the single-threaded executor.
//!
//! Subscription: a list of topics, or a pattern (`with_topic_pattern`, Java's regex subset
//! as the consumer's `subscribe(Pattern)` takes it) matched against the whole name of every
//! topic the cluster lists. The source assigns itself every partition it finds (the job
//! has one source instance; no group membership) and reads with
//! `isolation.level=read_committed`, so it never sees records of aborted or open
//! transactions. Each executor step hands on at most `RECORDS_PER_STEP_MAX` records from
//! what the consumer polled; when nothing is buffered the step polls for at most
//! `POLL_TIMEOUT_MS`, so checkpoints and processing-time timers are not held up by an
//! empty topic.
//!
//! Starting offsets (partitions without a checkpointed offset when the job starts):
//! earliest, latest, the group's committed offset with earliest as fallback, or the first
//! offset whose timestamp is at or after a time (`StartingOffsets::Timestamp`, Flink's
//! `OffsetsInitializer.timestamp`; a partition without such a record starts at its end).
//!
//! Partition discovery (Flink's `partition.discovery.interval.ms`, default 5 minutes for an
//! unbounded source, off for a bounded one; zero or negative turns it off): every interval
//! the source lists its topics again (the pattern picks up new topics) and starts reading
//! partitions it did not have from their earliest offset, as Flink does since FLIP-288 so
//! that nothing written to a new partition before it was discovered is skipped. A failed
//! discovery is logged and retried at the next interval. Partitions of a restored job that
//! the checkpoint does not know start from earliest too (they were created since).
//!
//! Bounded mode (`with_bounded(StoppingOffsets::Latest)`, Flink's
//! `setBounded(OffsetsInitializer.latest())`): when the source first connects it takes the
//! end of every partition (under read_committed the last stable offset) as that
//! partition's stopping offset; records at or after it are not handed on, a partition is
//! done once the consumer's position reaches it (past any transaction markers), and when
//! every partition is done the source emits the final watermark (`MAX_WATERMARK`, so every
//! window fires) and ends, as a bounded Flink source finishes. Stopping offsets are part of
//! the checkpointed position, so a restored bounded job stops where the first attempt
//! would have. Partitions discovered later are not read (discovery is off).
//!
//! Offsets committed to the group (Flink's `commit.offsets.on.checkpoint`, default true,
//! only with a group id): when a checkpoint completes, the source commits the offsets it
//! recorded in that checkpoint, with the consumer's standalone commit (no generation, as a
//! Flink source does: the group has no members). The committed offsets are for monitoring
//! and for `StartingOffsets::CommittedOrEarliest` of a job started without a checkpoint;
//! fault tolerance does not depend on them. A failed commit is logged and counted, not
//! fatal (the next checkpoint's commit covers it).
//!
//! Position (what a checkpoint stores): the next offset of every partition, counting only
//! records handed to the job, and the partition's watermark, as
//! `[[topic, partition, offset, watermark], ..]`, with a fifth element, the stopping
//! offset, in bounded mode. A restored source seeks every checkpointed partition to its
//! offset.
//!
//! The watermark in the position differs from Flink, which rebuilds watermarks from the
//! records read after a restore only: a job restored at the end of its input would then
//! not fire the windows the failed attempt fired after the checkpoint (their output died
//! with its transaction) until new input arrives. The stored watermark is what the
//! partition's generator would emit at the barrier (its periodic emission, which may come
//! at any moment, so one it could have emitted); re-emitting it after a restore fires
//! nothing twice (the restored window state is that of the barrier) and makes no record
//! late that the bounded out-of-orderness contract did not already make late.
//!
//! Watermarks, as Flink's per-split watermarks: one generator per partition (the
//! strategy's factory), fed with the timestamps of that partition's records; the
//! source's watermark is the minimum over its partitions' watermarks. With
//! `with_idleness(t)` a partition without records for `t` is left out of the minimum, and
//! when every partition is idle the source is idle. Without idleness a partition that
//! never gets a record holds the watermark back (Flink does the same), and so does a newly
//! discovered one until its first record.
//!
//! Ending an unbounded source: `with_stop_when_idle` ends it after a period without
//! records, like Flink's `stop` without `--drain`: no `MAX_WATERMARK` is emitted, so
//! windows still open stay in the state and fire when a restarted job sees more input.
//! With `wait_for_checkpoint` it also waits until a checkpoint covers everything it
//! emitted, so an exactly-once sink has committed it all through a checkpoint and a
//! restart with the same checkpoint directory repeats nothing.
//!
//! Parallel instances (`execute_parallel` with the source's `set_parallelism` above 1):
//! instance i reads the partitions `split_owner` gives it (Flink's assignment), discovers
//! only those, commits only those; an instance without partitions is idle. Restored, it
//! takes its partitions' entries from the checkpoint's position, whatever the parallelism
//! that wrote it.
//!
//! Not yet (issue 10): stopping offsets other than the latest, and a key deserializer (the
//! deserializer sees the whole `ConsumerRecord` though).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use sluice_client::consumer::{Consumer, ConsumerConfig, ConsumerRecord, TopicPattern};
use sluice_client::{Admin, ClientConfig, OffsetAndMetadata, OffsetSpec, TopicPartition};

use super::{connector_error, connector_runtime};
use crate::datastream::DataStream;
use crate::environment::StreamExecutionEnvironment;
use crate::error::StreamError;
use crate::executor::Event;
use crate::source::SourceRunner;
use crate::time::{Clock, MAX_WATERMARK, MIN_WATERMARK};
use crate::watermark::{WatermarkGenerator, WatermarkStrategy};

/// The most records one executor step hands to the job: a bound on the work queue and
/// on the time between two checkpoint-trigger checks.
pub const RECORDS_PER_STEP_MAX: usize = 500;
/// How long a step waits for records when none are buffered.
const POLL_TIMEOUT_MS: u64 = 50;
/// Flink's `partition.discovery.interval.ms` default for an unbounded source.
pub const PARTITION_DISCOVERY_INTERVAL_MS_DEFAULT: i64 = 300_000;
/// Source settings passed with `with_property` that are not the consumer's.
const PARTITION_DISCOVERY_INTERVAL_MS: &str = "partition.discovery.interval.ms";
const COMMIT_OFFSETS_ON_CHECKPOINT: &str = "commit.offsets.on.checkpoint";
/// Checkpoints whose offsets wait for completion; older ones are dropped (a checkpoint
/// that never completes must not keep its offsets forever).
const PENDING_COMMITS_MAX: usize = 16;

/// Where partitions without a checkpointed offset start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartingOffsets {
    /// The first offset of each partition (Flink's `OffsetsInitializer.earliest()`).
    #[default]
    Earliest,
    /// The end of each partition (`OffsetsInitializer.latest()`).
    Latest,
    /// The group's committed offset, else earliest
    /// (`OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST)`); needs a
    /// group id.
    CommittedOrEarliest,
    /// The first offset whose record timestamp is at or after this time (ms since the
    /// epoch), else the end of the partition (`OffsetsInitializer.timestamp(ms)`).
    Timestamp(i64),
}

/// Where a bounded source stops (Flink's `setBounded(OffsetsInitializer)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoppingOffsets {
    /// The end of each partition when the source first connects (the last stable offset,
    /// since the source reads committed records only).
    Latest,
}

/// What the source reads.
#[derive(Debug, Clone)]
enum Subscription {
    Topics(Vec<String>),
    /// Matched against whole topic names (`TopicPattern`).
    Pattern(String),
}

type Deserializer<T> = Rc<dyn Fn(&ConsumerRecord) -> Result<T, String>>;

/// Reads Kafka topics into a stream (Flink's `KafkaSource`).
pub struct KafkaSource<T> {
    bootstrap_servers: String,
    subscription: Subscription,
    group_id: Option<String>,
    starting_offsets: StartingOffsets,
    stopping_offsets: Option<StoppingOffsets>,
    deserializer: Deserializer<T>,
    properties: Vec<(String, String)>,
    stop_when_idle: Option<(Duration, bool)>,
}

impl<T> KafkaSource<T> {
    /// A source of `topics` whose records' values become `T` through `deserializer`
    /// (Flink's `setValueOnlyDeserializer`); an `Err` fails the job.
    pub fn new(
        bootstrap_servers: impl Into<String>,
        topics: impl IntoIterator<Item = impl Into<String>>,
        deserializer: impl Fn(&[u8]) -> Result<T, String> + 'static,
    ) -> Self {
        Self::with_record_deserializer(bootstrap_servers, topics, move |record| {
            deserializer(record.value.as_deref().unwrap_or_default())
        })
    }

    /// A source whose deserializer sees the whole record (key, headers, offset).
    pub fn with_record_deserializer(
        bootstrap_servers: impl Into<String>,
        topics: impl IntoIterator<Item = impl Into<String>>,
        deserializer: impl Fn(&ConsumerRecord) -> Result<T, String> + 'static,
    ) -> Self {
        Self {
            bootstrap_servers: bootstrap_servers.into(),
            subscription: Subscription::Topics(topics.into_iter().map(Into::into).collect()),
            group_id: None,
            starting_offsets: StartingOffsets::Earliest,
            stopping_offsets: None,
            deserializer: Rc::new(deserializer),
            properties: Vec::new(),
            stop_when_idle: None,
        }
    }

    /// Reads every topic whose whole name matches `pattern` (Flink's `setTopicPattern`)
    /// instead of the topics given to `new`; topics created later are picked up by
    /// partition discovery. An invalid pattern fails the job when it starts.
    pub fn with_topic_pattern(mut self, pattern: impl Into<String>) -> Self {
        self.subscription = Subscription::Pattern(pattern.into());
        self
    }

    pub fn with_group_id(mut self, group_id: impl Into<String>) -> Self {
        self.group_id = Some(group_id.into());
        self
    }

    pub fn with_starting_offsets(mut self, starting_offsets: StartingOffsets) -> Self {
        self.starting_offsets = starting_offsets;
        self
    }

    /// Makes the source bounded (Flink's `setBounded`): it ends at `stopping_offsets`
    /// with the final watermark (module docs).
    pub fn with_bounded(mut self, stopping_offsets: StoppingOffsets) -> Self {
        self.stopping_offsets = Some(stopping_offsets);
        self
    }

    /// A consumer setting (Kafka's keys, e.g. `max.poll.records`), or one of the source's
    /// own as Flink's `setProperty` takes them: `partition.discovery.interval.ms`,
    /// `commit.offsets.on.checkpoint`. `isolation.level`, `enable.auto.commit` and
    /// `auto.offset.reset` are the source's to set.
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.push((key.into(), value.into()));
        self
    }

    /// Ends the source once no record arrived for `idle` of processing time (and, with
    /// `wait_for_checkpoint`, once a checkpoint covers everything it emitted, which needs
    /// checkpointing enabled: without it the source never ends). No final watermark: see
    /// the module docs.
    pub fn with_stop_when_idle(mut self, idle: Duration, wait_for_checkpoint: bool) -> Self {
        self.stop_when_idle = Some((idle, wait_for_checkpoint));
        self
    }

    /// The last value set for a source-level property.
    fn property(&self, key: &str) -> Option<&str> {
        self.properties
            .iter()
            .rev()
            .find(|(candidate, _)| candidate == key)
            .map(|(_, value)| value.as_str())
    }

    /// `partition.discovery.interval.ms` (`None`: off).
    fn discovery_interval_ms(&self) -> Result<Option<i64>, StreamError> {
        if self.stopping_offsets.is_some() {
            return Ok(None);
        }
        let interval_ms = match self.property(PARTITION_DISCOVERY_INTERVAL_MS) {
            None => PARTITION_DISCOVERY_INTERVAL_MS_DEFAULT,
            Some(value) => value.trim().parse::<i64>().map_err(|_| {
                StreamError::InvalidConfiguration(format!(
                    "{PARTITION_DISCOVERY_INTERVAL_MS} must be an integer (ms), got {value:?}"
                ))
            })?,
        };
        Ok((interval_ms > 0).then_some(interval_ms))
    }

    /// Whether offsets go to the group when a checkpoint completes.
    fn commits_offsets(&self) -> Result<bool, StreamError> {
        let enabled = match self.property(COMMIT_OFFSETS_ON_CHECKPOINT) {
            None => true,
            Some(value) => match value.trim().to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => {
                    return Err(StreamError::InvalidConfiguration(format!(
                        "{COMMIT_OFFSETS_ON_CHECKPOINT} must be true or false, got {value:?}"
                    )));
                }
            },
        };
        Ok(enabled && self.group_id.is_some())
    }
}

impl StreamExecutionEnvironment {
    /// Flink's `fromSource(kafkaSource, watermarkStrategy, sourceName)`.
    pub fn from_kafka_source<T: Clone + 'static>(
        &self,
        source: KafkaSource<T>,
        strategy: WatermarkStrategy<T>,
        name: &str,
    ) -> DataStream<T> {
        let runner = KafkaSourceRunner::new(name, source, strategy);
        self.add_source_runner(name, Box::new(runner))
    }
}

struct Connection {
    // Field order: the consumer and admin go before the runtime they were created on.
    consumer: Consumer,
    admin: Admin,
    runtime: tokio::runtime::Runtime,
}

struct PartitionState {
    /// The offset after the last record handed to the job.
    next_offset: i64,
    /// Bounded mode: the offset the partition ends at.
    stopping_offset: Option<i64>,
    /// Bounded mode: the consumer's position reached the stopping offset.
    finished: bool,
    /// In a `RefCell` because taking a position (`&self`) asks it for its watermark.
    generator: Option<RefCell<Box<dyn WatermarkGenerator>>>,
    watermark: i64,
    last_activity_ms: i64,
    idle: bool,
}

/// A checkpointed partition: (next offset, watermark, stopping offset).
type RestoredPartition = (i64, i64, Option<i64>);

/// Counters of the offset commits (Flink's `commitsSucceeded` / `commitsFailed`).
#[derive(Debug, Default, Clone, Copy)]
struct CommitCounters {
    succeeded: u64,
    failed: u64,
}

struct KafkaSourceRunner<T> {
    name: String,
    source: KafkaSource<T>,
    strategy: WatermarkStrategy<T>,
    connection: Option<Connection>,
    /// From `restore_position`, applied when the consumer is created.
    restored_offsets: Option<BTreeMap<TopicPartition, RestoredPartition>>,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    buffered: VecDeque<ConsumerRecord>,
    current_watermark: i64,
    idle: bool,
    ended: bool,
    last_record_ms: i64,
    /// When partition discovery runs next (`None`: off).
    next_discovery_ms: Option<i64>,
    /// Offsets recorded per checkpoint, committed when it completes.
    pending_commits: RefCell<BTreeMap<u64, BTreeMap<TopicPartition, i64>>>,
    commits: CommitCounters,
    /// Something (a record, a watermark, idleness) went out since the last position
    /// snapshot: a checkpoint does not cover everything yet.
    emitted_since_snapshot: Cell<bool>,
    snapshots: Cell<u64>,
    /// This instance's index among the source's parallel instances, and their number:
    /// it reads the partitions `split_owner` gives it.
    subtask: u32,
    parallelism: u32,
}

/// The instance that reads a partition, as Flink's `KafkaSourceEnumerator.getSplitOwner`:
/// a topic's partitions go round robin from a start derived from the topic's Java
/// `hashCode`, so partitions spread evenly and topics do not all start at instance 0.
pub fn split_owner(partition: &TopicPartition, parallelism: u32) -> u32 {
    let hash = partition.topic.encode_utf16().fold(0_i32, |hash, unit| {
        hash.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    let parallelism = i64::from(parallelism.max(1));
    let start = (i64::from(hash.wrapping_mul(31)) & 0x7FFF_FFFF) % parallelism;
    ((start + i64::from(partition.partition)) % parallelism) as u32
}

impl<T: Clone + 'static> KafkaSourceRunner<T> {
    fn new(name: &str, source: KafkaSource<T>, strategy: WatermarkStrategy<T>) -> Self {
        Self {
            name: name.to_string(),
            source,
            strategy,
            connection: None,
            restored_offsets: None,
            partitions: BTreeMap::new(),
            buffered: VecDeque::new(),
            current_watermark: MIN_WATERMARK,
            idle: false,
            ended: false,
            last_record_ms: 0,
            next_discovery_ms: None,
            pending_commits: RefCell::new(BTreeMap::new()),
            commits: CommitCounters::default(),
            emitted_since_snapshot: Cell::new(false),
            snapshots: Cell::new(0),
            subtask: 0,
            parallelism: 1,
        }
    }

    fn owns(&self, partition: &TopicPartition) -> bool {
        split_owner(partition, self.parallelism) == self.subtask
    }

    fn partition_state(&self, next_offset: i64, watermark: i64, now_ms: i64) -> PartitionState {
        PartitionState {
            next_offset,
            stopping_offset: None,
            finished: false,
            generator: self
                .strategy
                .generator
                .as_ref()
                .map(|factory| RefCell::new(factory())),
            watermark,
            last_activity_ms: now_ms,
            idle: false,
        }
    }

    fn error(&self, error: impl std::fmt::Display) -> StreamError {
        connector_error(&self.name, error)
    }

    /// The consumer's settings: the source's own, then the user's consumer properties.
    fn consumer_config(&self) -> Result<ConsumerConfig, StreamError> {
        let mut settings: Vec<(String, String)> = vec![
            (
                "bootstrap.servers".into(),
                self.source.bootstrap_servers.clone(),
            ),
            ("isolation.level".into(), "read_committed".into()),
            ("enable.auto.commit".into(), "false".into()),
            ("auto.offset.reset".into(), "earliest".into()),
            ("fetch.max.wait.ms".into(), "100".into()),
        ];
        if let Some(group_id) = &self.source.group_id {
            settings.push(("group.id".into(), group_id.clone()));
        }
        let own = [
            "isolation.level",
            "enable.auto.commit",
            "auto.offset.reset",
            PARTITION_DISCOVERY_INTERVAL_MS,
            COMMIT_OFFSETS_ON_CHECKPOINT,
        ];
        settings.extend(
            self.source
                .properties
                .iter()
                .filter(|(key, _)| !own.contains(&key.as_str()))
                .cloned(),
        );
        ConsumerConfig::from_map(settings)
            .map_err(|error| StreamError::InvalidConfiguration(self.error(error).to_string()))
    }

    /// Every partition of the subscribed topics, as the cluster lists them now.
    async fn list_partitions(
        admin: &Admin,
        subscription: &Subscription,
        pattern: Option<&TopicPattern>,
    ) -> Result<BTreeSet<TopicPartition>, sluice_client::Error> {
        let names: Option<Vec<String>> = match subscription {
            Subscription::Topics(topics) => Some(topics.clone()),
            Subscription::Pattern(_) => None,
        };
        let metadata = admin.client().metadata(names.as_deref()).await?;
        let mut partitions = BTreeSet::new();
        for topic in &metadata.topics {
            let Some(name) = topic.name.as_ref().map(|name| name.0.to_string()) else {
                continue;
            };
            if let Some(pattern) = pattern
                && (topic.is_internal || !pattern.matches(&name))
            {
                continue;
            }
            sluice_client::ErrorCode(topic.error_code).check(None)?;
            for partition in &topic.partitions {
                partitions.insert(TopicPartition::new(name.clone(), partition.partition_index));
            }
        }
        Ok(partitions)
    }

    fn topic_pattern(&self) -> Result<Option<TopicPattern>, StreamError> {
        match &self.source.subscription {
            Subscription::Topics(_) => Ok(None),
            Subscription::Pattern(pattern) => {
                TopicPattern::new(pattern).map(Some).map_err(|error| {
                    StreamError::InvalidConfiguration(format!(
                        "source {}: topic pattern {pattern:?}: {error}",
                        self.name
                    ))
                })
            }
        }
    }

    /// Creates the consumer, assigns every partition and positions it: checkpointed
    /// offsets first, then the starting offsets; in bounded mode takes the stopping
    /// offsets.
    fn connect(&mut self, now_ms: i64) -> Result<(), StreamError> {
        let config = self.consumer_config()?;
        let pattern = self.topic_pattern()?;
        self.source.commits_offsets()?;
        let discovery_interval_ms = self.source.discovery_interval_ms()?;
        let runtime = connector_runtime(&self.name)?;
        let subscription = self.source.subscription.clone();
        let bootstrap = self.source.bootstrap_servers.clone();
        let admin_and_partitions: Result<(Admin, BTreeSet<TopicPartition>), sluice_client::Error> =
            runtime.block_on(async {
                let admin = Admin::connect(ClientConfig::new([bootstrap])).await?;
                let partitions =
                    Self::list_partitions(&admin, &subscription, pattern.as_ref()).await?;
                Ok((admin, partitions))
            });
        let (admin, mut discovered) = admin_and_partitions.map_err(|error| self.error(error))?;
        if discovered.is_empty() && matches!(subscription, Subscription::Topics(_)) {
            return Err(self.error(format!("topics {subscription:?} have no partitions")));
        }
        // A parallel instance reads its share; a checkpoint of any split names them all.
        discovered.retain(|partition| self.owns(partition));
        let restored = self.restored_offsets.take().map(|restored| {
            restored
                .into_iter()
                .filter(|(partition, _)| self.owns(partition))
                .collect::<BTreeMap<_, _>>()
        });
        if let Some(missing) = restored
            .iter()
            .flat_map(|restored| restored.keys())
            .find(|tp| !discovered.contains(tp))
        {
            return Err(StreamError::Checkpoint(format!(
                "source {}: checkpointed partition {missing} no longer exists",
                self.name
            )));
        }
        // Without a checkpoint the starting offsets apply to every partition; partitions
        // a checkpoint does not know were created since and start from earliest.
        let starting_offsets = match &restored {
            None => self.source.starting_offsets,
            Some(_) => StartingOffsets::Earliest,
        };
        let restored = restored.unwrap_or_default();
        let bounded = self.source.stopping_offsets.is_some();
        let all: Vec<TopicPartition> = discovered.iter().cloned().collect();
        let positioned: Result<_, sluice_client::Error> = runtime.block_on(async {
            let mut consumer = Consumer::new(config).await?;
            consumer.assign(all.iter().cloned())?;
            // Stopping offsets: the end now, unless the checkpoint recorded them.
            let mut stopping: BTreeMap<TopicPartition, i64> = BTreeMap::new();
            if bounded {
                let unknown: Vec<TopicPartition> = all
                    .iter()
                    .filter(|tp| !matches!(restored.get(*tp), Some((_, _, Some(_)))))
                    .cloned()
                    .collect();
                consumer.seek_to_end(&unknown)?;
                for tp in &unknown {
                    stopping.insert(tp.clone(), consumer.position(tp).await?);
                }
                for (tp, (_, _, stop)) in &restored {
                    if let Some(stop) = stop {
                        stopping.insert(tp.clone(), *stop);
                    }
                }
            }
            let fresh: Vec<TopicPartition> = all
                .iter()
                .filter(|tp| !restored.contains_key(tp))
                .cloned()
                .collect();
            for (tp, (offset, _, _)) in &restored {
                consumer.seek(tp, *offset)?;
            }
            Self::seek_to_start(&admin, &mut consumer, &fresh, starting_offsets).await?;
            let mut positions = Vec::with_capacity(all.len());
            for tp in &all {
                positions.push((tp.clone(), consumer.position(tp).await?));
            }
            Ok((consumer, positions, stopping))
        });
        let (consumer, positions, stopping) = positioned.map_err(|error| self.error(error))?;
        self.partitions = positions
            .into_iter()
            .map(|(tp, next_offset)| {
                let watermark = restored
                    .get(&tp)
                    .map_or(MIN_WATERMARK, |(_, watermark, _)| *watermark);
                let mut state = self.partition_state(next_offset, watermark, now_ms);
                state.stopping_offset = stopping.get(&tp).copied();
                (tp, state)
            })
            .collect();
        self.next_discovery_ms = discovery_interval_ms.map(|interval| now_ms + interval);
        self.connection = Some(Connection {
            consumer,
            admin,
            runtime,
        });
        self.update_finished()?;
        Ok(())
    }

    /// Positions `partitions` at the starting offsets.
    async fn seek_to_start(
        admin: &Admin,
        consumer: &mut Consumer,
        partitions: &[TopicPartition],
        starting_offsets: StartingOffsets,
    ) -> Result<(), sluice_client::Error> {
        if partitions.is_empty() {
            return Ok(());
        }
        match starting_offsets {
            StartingOffsets::Earliest => consumer.seek_to_beginning(partitions)?,
            StartingOffsets::Latest => consumer.seek_to_end(partitions)?,
            StartingOffsets::CommittedOrEarliest => {
                let committed = consumer.committed(partitions).await?;
                for tp in partitions {
                    match committed.get(tp) {
                        Some(offset) if offset.offset >= 0 => consumer.seek(tp, offset.offset)?,
                        _ => consumer.seek_to_beginning(std::slice::from_ref(tp))?,
                    }
                }
            }
            StartingOffsets::Timestamp(timestamp) => {
                let specs: BTreeMap<TopicPartition, OffsetSpec> = partitions
                    .iter()
                    .map(|tp| (tp.clone(), OffsetSpec::Timestamp(timestamp)))
                    .collect();
                let found = admin.list_offsets(&specs).await?;
                for tp in partitions {
                    let offset = match found.get(tp) {
                        Some(Ok(info)) => info.offset,
                        Some(Err(error)) => return Err(sluice_client::Error::Api(error.clone())),
                        None => -1,
                    };
                    if offset >= 0 {
                        consumer.seek(tp, offset)?;
                    } else {
                        consumer.seek_to_end(std::slice::from_ref(tp))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Partition discovery: lists the topics again and starts reading new partitions
    /// from their earliest offset. A failure is logged; the next interval retries.
    fn discover_partitions(&mut self, now_ms: i64) -> Result<(), StreamError> {
        let pattern = self.topic_pattern()?;
        let subscription = self.source.subscription.clone();
        let connection = self.connection.as_mut().expect("discovery runs connected");
        let known: BTreeSet<TopicPartition> = self.partitions.keys().cloned().collect();
        let (subtask, parallelism) = (self.subtask, self.parallelism);
        let result: Result<Vec<TopicPartition>, sluice_client::Error> =
            connection.runtime.block_on(async {
                let listed =
                    Self::list_partitions(&connection.admin, &subscription, pattern.as_ref())
                        .await?;
                let new: Vec<TopicPartition> = listed
                    .difference(&known)
                    .filter(|partition| split_owner(partition, parallelism) == subtask)
                    .cloned()
                    .collect();
                if !new.is_empty() {
                    connection
                        .consumer
                        .assign(known.iter().chain(&new).cloned())?;
                    connection.consumer.seek_to_beginning(&new)?;
                }
                Ok(new)
            });
        match result {
            Ok(new) => {
                for tp in new {
                    tracing::info!(source = %self.name, partition = %tp, "discovered a new partition; reading it from earliest");
                    // Its next offset is resolved by the consumer; the log start offset is
                    // where the first record comes from, so any value at or below it is
                    // right for the replay check in `emit_record`.
                    let state = self.partition_state(0, MIN_WATERMARK, now_ms);
                    self.partitions.insert(tp, state);
                }
            }
            Err(error) => {
                tracing::warn!(source = %self.name, %error, "partition discovery failed; retrying at the next interval");
            }
        }
        Ok(())
    }

    /// Bounded mode: marks partitions whose position reached the stopping offset done
    /// and pauses them.
    fn update_finished(&mut self) -> Result<(), StreamError> {
        let Some(connection) = self.connection.as_mut() else {
            return Ok(());
        };
        let mut done = Vec::new();
        for (tp, state) in &mut self.partitions {
            let Some(stop) = state.stopping_offset else {
                continue;
            };
            if state.finished {
                continue;
            }
            let position = if state.next_offset >= stop {
                state.next_offset
            } else {
                connection
                    .runtime
                    .block_on(connection.consumer.position(tp))
                    .map_err(|error| connector_error(&self.name, error))?
            };
            if position >= stop {
                state.finished = true;
                done.push(tp.clone());
            }
        }
        if !done.is_empty() {
            connection
                .consumer
                .pause(&done)
                .map_err(|error| connector_error(&self.name, error))?;
        }
        Ok(())
    }

    fn all_finished(&self) -> bool {
        self.source.stopping_offsets.is_some()
            && self.partitions.values().all(|partition| partition.finished)
    }

    fn emit(&self, event: Event, out: &mut Vec<Event>) {
        self.emitted_since_snapshot.set(true);
        out.push(event);
    }

    /// The minimum over the non-idle partitions' watermarks; emits it if it advanced,
    /// and idleness when every partition is idle.
    fn combine_watermarks(&mut self, out: &mut Vec<Event>) {
        let active = self.partitions.values().filter(|partition| !partition.idle);
        let combined = active.map(|partition| partition.watermark).min();
        match combined {
            None => {
                if !self.idle {
                    self.idle = true;
                    self.emit(Event::Idle(true), out);
                }
            }
            Some(watermark) => {
                if self.idle {
                    self.idle = false;
                    self.emit(Event::Idle(false), out);
                }
                if watermark > self.current_watermark {
                    self.current_watermark = watermark;
                    self.emit(Event::Watermark(watermark), out);
                }
            }
        }
    }

    fn emit_record(
        &mut self,
        record: ConsumerRecord,
        now_ms: i64,
        out: &mut Vec<Event>,
    ) -> Result<(), StreamError> {
        let tp = TopicPartition::new(record.topic.clone(), record.partition);
        let partition = self
            .partitions
            .get(&tp)
            .ok_or_else(|| connector_error(&self.name, format!("record of unassigned {tp}")))?;
        // Bounded mode: what lies at or after the stopping offset is not this job's.
        if partition
            .stopping_offset
            .is_some_and(|stop| record.offset >= stop)
        {
            return Ok(());
        }
        let value = (self.source.deserializer)(&record).map_err(|error| {
            self.error(format!(
                "cannot deserialize {tp} offset {}: {error}",
                record.offset
            ))
        })?;
        let timestamp = match &self.strategy.timestamp_assigner {
            Some(assigner) => assigner(&value, Some(record.timestamp)),
            None => record.timestamp,
        };
        let partition = self.partitions.get_mut(&tp).expect("looked up above");
        // Offsets only grow within a partition: a record below the position is a replay
        // the consumer should not have returned, and handing it on would duplicate it.
        if record.offset < partition.next_offset {
            return Err(connector_error(
                &self.name,
                format!(
                    "{tp}: the consumer returned offset {} below the position {}",
                    record.offset, partition.next_offset
                ),
            ));
        }
        partition.next_offset = record.offset + 1;
        partition.last_activity_ms = now_ms;
        partition.idle = false;
        let punctuated = partition
            .generator
            .as_mut()
            .and_then(|generator| generator.borrow_mut().on_event(timestamp));
        if let Some(watermark) = punctuated {
            partition.watermark = partition.watermark.max(watermark);
        }
        if self.idle {
            self.combine_watermarks(out);
        }
        self.emit(
            Event::Record(Box::new(value) as Box<dyn Any>, Some(timestamp)),
            out,
        );
        if punctuated.is_some() {
            self.combine_watermarks(out);
        }
        Ok(())
    }

    fn should_stop(&self, now_ms: i64) -> bool {
        let Some((idle, wait_for_checkpoint)) = self.source.stop_when_idle else {
            return false;
        };
        let idle_ms = crate::time::duration_ms(idle);
        if !self.buffered.is_empty() || now_ms.saturating_sub(self.last_record_ms) < idle_ms {
            return false;
        }
        !wait_for_checkpoint || (self.snapshots.get() > 0 && !self.emitted_since_snapshot.get())
    }
}

impl<T: Clone + 'static> SourceRunner for KafkaSourceRunner<T> {
    fn open(&mut self, clock: &dyn Clock) {
        // A restart reconnects: the consumer of a failed attempt may be broken.
        self.connection = None;
        self.restored_offsets = None;
        self.partitions.clear();
        self.buffered.clear();
        self.current_watermark = MIN_WATERMARK;
        self.idle = false;
        self.ended = false;
        self.last_record_ms = clock.now_ms();
        self.next_discovery_ms = None;
        self.pending_commits.borrow_mut().clear();
        self.emitted_since_snapshot.set(false);
        self.snapshots.set(0);
    }

    fn snapshot_position(&self, checkpoint_id: u64) -> serde_json::Value {
        self.snapshots.set(self.snapshots.get() + 1);
        self.emitted_since_snapshot.set(false);
        let entry = |tp: &TopicPartition, offset: i64, watermark: i64, stop: Option<i64>| match stop
        {
            Some(stop) => serde_json::json!([tp.topic, tp.partition, offset, watermark, stop]),
            None => serde_json::json!([tp.topic, tp.partition, offset, watermark]),
        };
        let mut offsets = BTreeMap::new();
        let positions: Vec<serde_json::Value> = match (&self.connection, &self.restored_offsets) {
            (Some(_), _) => self
                .partitions
                .iter()
                .map(|(tp, state)| {
                    // The watermark the partition could emit now (a periodic emission
                    // may come at any moment, so one it could have emitted).
                    let periodic = state
                        .generator
                        .as_ref()
                        .and_then(|generator| generator.borrow_mut().on_periodic_emit());
                    let watermark = state.watermark.max(periodic.unwrap_or(MIN_WATERMARK));
                    offsets.insert(tp.clone(), state.next_offset);
                    entry(tp, state.next_offset, watermark, state.stopping_offset)
                })
                .collect(),
            // Not connected yet: still where the restored checkpoint was.
            (None, Some(restored)) => restored
                .iter()
                .map(|(tp, (offset, watermark, stop))| {
                    offsets.insert(tp.clone(), *offset);
                    entry(tp, *offset, *watermark, *stop)
                })
                .collect(),
            (None, None) => Vec::new(),
        };
        if self.source.commits_offsets().unwrap_or(false) && !offsets.is_empty() {
            let mut pending = self.pending_commits.borrow_mut();
            pending.insert(checkpoint_id, offsets);
            while pending.len() > PENDING_COMMITS_MAX {
                pending.pop_first();
            }
        }
        serde_json::Value::Array(positions)
    }

    fn restore_position(&mut self, position: &serde_json::Value) -> Result<(), StreamError> {
        let invalid = || {
            StreamError::Checkpoint(format!(
                "source {}: position {position} is not a list of [topic, partition, offset, watermark(, stopping offset)]",
                self.name
            ))
        };
        let entries = position.as_array().ok_or_else(invalid)?;
        let mut offsets = BTreeMap::new();
        for entry in entries {
            let (Some(topic), Some(partition), Some(offset), Some(watermark)) = (
                entry.get(0).and_then(|v| v.as_str()),
                entry
                    .get(1)
                    .and_then(|v| v.as_i64())
                    .and_then(|p| i32::try_from(p).ok()),
                entry
                    .get(2)
                    .and_then(|v| v.as_i64())
                    .filter(|offset| *offset >= 0),
                entry.get(3).and_then(|v| v.as_i64()),
            ) else {
                return Err(invalid());
            };
            let stop = match entry.get(4) {
                None => None,
                Some(stop) => Some(
                    stop.as_i64()
                        .filter(|stop| *stop >= 0)
                        .ok_or_else(invalid)?,
                ),
            };
            if entry.as_array().is_some_and(|fields| fields.len() > 5) {
                return Err(invalid());
            }
            offsets.insert(
                TopicPartition::new(topic, partition),
                (offset, watermark, stop),
            );
        }
        self.restored_offsets = Some(offsets);
        Ok(())
    }

    fn step(&mut self, clock: &dyn Clock, out: &mut Vec<Event>) -> Result<bool, StreamError> {
        if self.ended {
            return Ok(false);
        }
        let now_ms = clock.now_ms();
        if self.connection.is_none() {
            self.connect(now_ms)?;
            // A restored source re-emits its checkpointed watermark first (module docs).
            self.combine_watermarks(out);
        }
        if self.next_discovery_ms.is_some_and(|due| now_ms >= due) {
            self.discover_partitions(now_ms)?;
            let interval = self.source.discovery_interval_ms()?;
            self.next_discovery_ms = interval.map(|interval| now_ms + interval);
        }
        if self.partitions.is_empty() && self.source.stopping_offsets.is_none() {
            // An instance without partitions (more instances than partitions) waits for
            // discovery; it reported itself idle when it connected.
            std::thread::sleep(Duration::from_millis(POLL_TIMEOUT_MS));
        } else if self.buffered.is_empty() && !self.all_finished() {
            let connection = self.connection.as_mut().expect("connected above");
            let polled = connection.runtime.block_on(
                connection
                    .consumer
                    .poll(Duration::from_millis(POLL_TIMEOUT_MS)),
            );
            let polled = polled.map_err(|error| connector_error(&self.name, error))?;
            self.buffered.extend(polled);
        }
        if self.buffered.is_empty() {
            if self.source.stopping_offsets.is_some() {
                // Everything polled was handed on: the positions say what is done.
                self.update_finished()?;
                if self.all_finished() {
                    // Bounded: the end of input, as Flink's bounded source finishes.
                    if self.idle {
                        self.idle = false;
                        self.emit(Event::Idle(false), out);
                    }
                    self.current_watermark = MAX_WATERMARK;
                    self.emit(Event::Watermark(MAX_WATERMARK), out);
                    self.ended = true;
                    out.push(Event::End);
                    return Ok(false);
                }
            }
            if self.should_stop(now_ms) {
                // No MAX_WATERMARK: a stop, not a drain (module docs).
                self.ended = true;
                out.push(Event::End);
                return Ok(false);
            }
            return Ok(true);
        }
        self.last_record_ms = now_ms;
        let count = self.buffered.len().min(RECORDS_PER_STEP_MAX);
        let records: Vec<ConsumerRecord> = self.buffered.drain(..count).collect();
        for record in records {
            self.emit_record(record, now_ms, out)?;
        }
        Ok(true)
    }

    fn periodic_emit(&mut self, now_ms: i64, out: &mut Vec<Event>) {
        if self.ended {
            return;
        }
        let idle_timeout_ms = self.strategy.idle_timeout_ms;
        for partition in self.partitions.values_mut() {
            if let Some(timeout_ms) = idle_timeout_ms
                && now_ms.saturating_sub(partition.last_activity_ms) >= timeout_ms
            {
                partition.idle = true;
                continue;
            }
            let periodic = partition
                .generator
                .as_mut()
                .and_then(|generator| generator.borrow_mut().on_periodic_emit());
            if let Some(watermark) = periodic {
                partition.watermark = partition.watermark.max(watermark);
            }
        }
        if !self.partitions.is_empty() {
            self.combine_watermarks(out);
        }
    }

    fn set_subtask(&mut self, subtask: u32, parallelism: u32) -> Result<(), StreamError> {
        self.subtask = subtask;
        self.parallelism = parallelism;
        Ok(())
    }

    fn notify_checkpoint_complete(&mut self, checkpoint_id: u64) -> Result<(), StreamError> {
        let offsets = {
            let mut pending = self.pending_commits.borrow_mut();
            let offsets = pending.remove(&checkpoint_id);
            // Older checkpoints are subsumed by this one.
            pending.retain(|id, _| *id > checkpoint_id);
            offsets
        };
        let (Some(offsets), Some(connection)) = (offsets, self.connection.as_mut()) else {
            return Ok(());
        };
        let offsets: BTreeMap<TopicPartition, OffsetAndMetadata> = offsets
            .into_iter()
            .map(|(tp, offset)| {
                let committed = OffsetAndMetadata {
                    offset,
                    leader_epoch: None,
                    metadata: String::new(),
                };
                (tp, committed)
            })
            .collect();
        let result = connection
            .runtime
            .block_on(connection.consumer.commit_sync_offsets(&offsets));
        match result {
            Ok(()) => self.commits.succeeded += 1,
            Err(error) => {
                self.commits.failed += 1;
                tracing::warn!(
                    source = %self.name,
                    checkpoint_id,
                    %error,
                    failed = self.commits.failed,
                    "committing the checkpoint's offsets to the group failed; the next checkpoint commits again"
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_protocol::TimestampType;

    /// One step of a script: a record of a partition at processing time `now_ms`, or a
    /// periodic emission; and what the source emits for it (`R<timestamp>`,
    /// `W<watermark>`, `idle`, `active`).
    enum Step {
        Record {
            partition: i32,
            timestamp: i64,
            now_ms: i64,
        },
        Periodic {
            now_ms: i64,
        },
    }

    fn describe(events: Vec<Event>) -> Vec<String> {
        events
            .into_iter()
            .map(|event| match event {
                Event::Record(_, timestamp) => format!("R{}", timestamp.unwrap_or(-1)),
                Event::Watermark(watermark) => format!("W{watermark}"),
                Event::Idle(true) => "idle".to_string(),
                Event::Idle(false) => "active".to_string(),
                Event::Barrier(_) | Event::End => "other".to_string(),
            })
            .collect()
    }

    fn run(strategy: WatermarkStrategy<String>, partitions: i32, script: &[(Step, &[&str])]) {
        let source = KafkaSource::new("127.0.0.1:9", ["t"], |value: &[u8]| {
            Ok(String::from_utf8_lossy(value).into_owned())
        });
        let mut runner = KafkaSourceRunner::new("test", source, strategy);
        runner.partitions = (0..partitions)
            .map(|partition| {
                let state = runner.partition_state(0, MIN_WATERMARK, 0);
                (TopicPartition::new("t", partition), state)
            })
            .collect();
        let mut offsets = vec![0_i64; partitions as usize];
        for (index, (step, expected)) in script.iter().enumerate() {
            let mut out = Vec::new();
            match step {
                Step::Record {
                    partition,
                    timestamp,
                    now_ms,
                } => {
                    let offset = &mut offsets[*partition as usize];
                    let record = ConsumerRecord {
                        topic: "t".to_string(),
                        partition: *partition,
                        offset: *offset,
                        timestamp: *timestamp,
                        timestamp_type: TimestampType::CreateTime,
                        key: None,
                        value: Some(bytes::Bytes::from_static(b"v")),
                        headers: Vec::new(),
                        leader_epoch: None,
                    };
                    *offset += 1;
                    runner.emit_record(record, *now_ms, &mut out).unwrap();
                }
                Step::Periodic { now_ms } => runner.periodic_emit(*now_ms, &mut out),
            }
            assert_eq!(describe(out), *expected, "step {index}");
        }
    }

    /// Monotonous timestamps (watermark = max − 1 per partition), idleness 100 ms, three
    /// partitions. Partition 2 is silent at first and holds the watermark back until it
    /// goes idle; when all are idle the source is idle; a record wakes its partition
    /// (and the source) only.
    #[test]
    fn the_watermark_is_the_minimum_over_active_partitions() {
        use Step::*;
        let strategy = WatermarkStrategy::for_monotonous_timestamps()
            .with_idleness(Duration::from_millis(100));
        let record = |partition, timestamp, now_ms| Record {
            partition,
            timestamp,
            now_ms,
        };
        run(
            strategy,
            3,
            &[
                (record(0, 10, 50), &["R10"]),
                (record(1, 20, 50), &["R20"]),
                // Partition 2 has no watermark yet: the minimum is MIN.
                (Periodic { now_ms: 60 }, &[]),
                // Partition 2 idle since 0: min(9, 19).
                (Periodic { now_ms: 100 }, &["W9"]),
                (record(2, 5, 120), &["R5"]),
                // Partition 2 is back with 4: the watermark does not go back.
                (Periodic { now_ms: 130 }, &[]),
                // Partitions 0 and 1 idle since 150: partition 2's 4 alone.
                (Periodic { now_ms: 150 }, &[]),
                (Periodic { now_ms: 220 }, &["idle"]),
                (record(1, 30, 300), &["active", "W19", "R30"]),
                (Periodic { now_ms: 310 }, &["W29"]),
            ],
        );
    }

    /// Without idleness a silent partition holds the watermark back for good.
    #[test]
    fn without_idleness_a_silent_partition_holds_the_watermark_back() {
        use Step::*;
        run(
            WatermarkStrategy::for_monotonous_timestamps(),
            2,
            &[
                (
                    Record {
                        partition: 0,
                        timestamp: 10,
                        now_ms: 0,
                    },
                    &["R10"],
                ),
                (Periodic { now_ms: 1_000_000 }, &[]),
            ],
        );
    }

    /// Partitions go to instances as Flink's enumerator assigns splits: round robin from
    /// `((topic.hashCode() * 31) & 0x7FFFFFFF) % parallelism` (expected values computed
    /// with Java's `String.hashCode`: "a" 97, "events" -1291329255).
    #[test]
    fn partitions_are_shared_out_as_flink_assigns_splits() {
        let owners = |topic: &str, parallelism| -> Vec<u32> {
            (0..6)
                .map(|partition| split_owner(&TopicPartition::new(topic, partition), parallelism))
                .collect()
        };
        assert_eq!(owners("a", 4), [3, 0, 1, 2, 3, 0]);
        assert_eq!(owners("a", 3), [1, 2, 0, 1, 2, 0]);
        assert_eq!(owners("events", 3), [2, 0, 1, 2, 0, 1]);
        assert_eq!(owners("events", 1), [0; 6]);
    }

    #[test]
    fn a_position_restores_to_the_same_position() {
        let source = KafkaSource::new("127.0.0.1:9", ["t"], |value: &[u8]| {
            Ok(String::from_utf8_lossy(value).into_owned())
        });
        let mut runner = KafkaSourceRunner::new("test", source, WatermarkStrategy::no_watermarks());
        // The fifth element: a bounded source's stopping offset.
        let position =
            serde_json::json!([["t", 0, 17, 99], ["t", 1, 0, i64::MIN], ["t", 2, 3, 5, 40]]);
        runner.restore_position(&position).unwrap();
        assert_eq!(runner.snapshot_position(1), position);
        for invalid in [
            serde_json::json!({"t": 1}),
            serde_json::json!([["t", 0, -1, 0]]),
            serde_json::json!([["t", 0, 5]]),
            serde_json::json!([["t", 0, 5, 0, -1]]),
            serde_json::json!([["t", 0, 5, 0, 9, 1]]),
        ] {
            assert!(
                matches!(
                    runner.restore_position(&invalid),
                    Err(StreamError::Checkpoint(_))
                ),
                "{invalid}"
            );
        }
    }
}
