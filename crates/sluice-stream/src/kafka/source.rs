//! `KafkaSource`: Flink's `KafkaSource` on the single-threaded executor.
//!
//! The source assigns itself every partition of its topics (the job has one source
//! instance) and reads with `isolation.level=read_committed`, so it never sees records of
//! aborted or open transactions. Each executor step hands on at most
//! `RECORDS_PER_STEP_MAX` records from what the consumer polled; when nothing is buffered
//! the step polls for at most `POLL_TIMEOUT_MS`, so checkpoints and processing-time
//! timers are not held up by an empty topic.
//!
//! Position (what a checkpoint stores): the next offset of every partition, counting only
//! records handed to the job, and the partition's watermark, as
//! `[[topic, partition, offset, watermark], ..]`. A restored source seeks every
//! checkpointed partition to its offset; a partition the checkpoint does not know (added
//! since) starts from the starting offsets.
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
//! never gets a record holds the watermark back (Flink does the same).
//!
//! Ending: a Kafka source is unbounded. `with_stop_when_idle` ends it after a period
//! without records, like Flink's `stop` without `--drain`: no `MAX_WATERMARK` is emitted,
//! so windows still open stay in the state and fire when a restarted job sees more input.
//! With `wait_for_checkpoint` it also waits until a checkpoint covers everything it
//! emitted, so an exactly-once sink has committed it all through a checkpoint and a
//! restart with the same checkpoint directory repeats nothing.
//!
//! Not yet (issue 10): topic patterns, starting from a timestamp, committing offsets back
//! to the group when a checkpoint completes (the executor has no completion hook for
//! sources; the offsets live in the checkpoint only), partition discovery while running,
//! and a key deserializer (the deserializer sees the whole `ConsumerRecord` though).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;
use std::time::Duration;

use sluice_client::consumer::{Consumer, ConsumerConfig, ConsumerRecord};
use sluice_client::{Client, ClientConfig, TopicPartition};

use super::{connector_error, connector_runtime};
use crate::datastream::DataStream;
use crate::environment::StreamExecutionEnvironment;
use crate::error::StreamError;
use crate::executor::Event;
use crate::source::SourceRunner;
use crate::time::{Clock, MIN_WATERMARK};
use crate::watermark::{WatermarkGenerator, WatermarkStrategy};

/// The most records one executor step hands to the job: a bound on the work queue and
/// on the time between two checkpoint-trigger checks.
pub const RECORDS_PER_STEP_MAX: usize = 500;
/// How long a step waits for records when none are buffered.
const POLL_TIMEOUT_MS: u64 = 50;

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
}

type Deserializer<T> = Rc<dyn Fn(&ConsumerRecord) -> Result<T, String>>;

/// Reads Kafka topics into a stream (Flink's `KafkaSource`).
pub struct KafkaSource<T> {
    bootstrap_servers: String,
    topics: Vec<String>,
    group_id: Option<String>,
    starting_offsets: StartingOffsets,
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
            topics: topics.into_iter().map(Into::into).collect(),
            group_id: None,
            starting_offsets: StartingOffsets::Earliest,
            deserializer: Rc::new(deserializer),
            properties: Vec::new(),
            stop_when_idle: None,
        }
    }

    pub fn with_group_id(mut self, group_id: impl Into<String>) -> Self {
        self.group_id = Some(group_id.into());
        self
    }

    pub fn with_starting_offsets(mut self, starting_offsets: StartingOffsets) -> Self {
        self.starting_offsets = starting_offsets;
        self
    }

    /// A consumer setting (Kafka's keys, e.g. `max.poll.records`); `isolation.level`,
    /// `enable.auto.commit` and `auto.offset.reset` are the source's own.
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
    // Field order: the consumer goes before the runtime it was created on.
    consumer: Consumer,
    runtime: tokio::runtime::Runtime,
}

struct PartitionState {
    /// The offset after the last record handed to the job.
    next_offset: i64,
    /// In a `RefCell` because taking a position (`&self`) asks it for its watermark.
    generator: Option<RefCell<Box<dyn WatermarkGenerator>>>,
    watermark: i64,
    last_activity_ms: i64,
    idle: bool,
}

struct KafkaSourceRunner<T> {
    name: String,
    source: KafkaSource<T>,
    strategy: WatermarkStrategy<T>,
    connection: Option<Connection>,
    /// From `restore_position`, applied when the consumer is created.
    /// (next offset, watermark) per partition.
    restored_offsets: Option<BTreeMap<TopicPartition, (i64, i64)>>,
    partitions: BTreeMap<TopicPartition, PartitionState>,
    buffered: VecDeque<ConsumerRecord>,
    current_watermark: i64,
    idle: bool,
    ended: bool,
    last_record_ms: i64,
    /// Something (a record, a watermark, idleness) went out since the last position
    /// snapshot: a checkpoint does not cover everything yet.
    emitted_since_snapshot: Cell<bool>,
    snapshots: Cell<u64>,
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
            emitted_since_snapshot: Cell::new(false),
            snapshots: Cell::new(0),
        }
    }

    fn partition_state(&self, next_offset: i64, watermark: i64, now_ms: i64) -> PartitionState {
        PartitionState {
            next_offset,
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

    /// Creates the consumer, assigns every partition and positions it: checkpointed
    /// offsets first, then the starting offsets.
    fn connect(&mut self, now_ms: i64) -> Result<(), StreamError> {
        let runtime = connector_runtime(&self.name)?;
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
        let own = ["isolation.level", "enable.auto.commit", "auto.offset.reset"];
        settings.extend(
            self.source
                .properties
                .iter()
                .filter(|(key, _)| !own.contains(&key.as_str()))
                .cloned(),
        );
        let config = ConsumerConfig::from_map(settings).map_err(|error| self.error(error))?;
        let topics = self.source.topics.clone();
        let bootstrap = self.source.bootstrap_servers.clone();
        let discovered: Result<Vec<TopicPartition>, sluice_client::Error> =
            runtime.block_on(async {
                let client = Client::connect(ClientConfig::new([bootstrap])).await?;
                let metadata = client.metadata(Some(&topics)).await?;
                let mut partitions = Vec::new();
                for topic in &metadata.topics {
                    sluice_client::ErrorCode(topic.error_code).check(None)?;
                    let name = topic.name.as_ref().map(|name| name.0.to_string());
                    for partition in &topic.partitions {
                        if let Some(name) = &name {
                            partitions
                                .push(TopicPartition::new(name.clone(), partition.partition_index));
                        }
                    }
                }
                Ok(partitions)
            });
        let discovered = discovered.map_err(|error| self.error(error))?;
        if discovered.is_empty() {
            return Err(self.error(format!("topics {topics:?} have no partitions")));
        }
        let restored = self.restored_offsets.take().unwrap_or_default();
        if let Some(missing) = restored.keys().find(|tp| !discovered.contains(tp)) {
            return Err(StreamError::Checkpoint(format!(
                "source {}: checkpointed partition {missing} no longer exists",
                self.name
            )));
        }
        let starting_offsets = self.source.starting_offsets;
        let positioned: Result<(Consumer, Vec<(TopicPartition, i64)>), sluice_client::Error> =
            runtime.block_on(async {
                let mut consumer = Consumer::new(config).await?;
                consumer.assign(discovered.iter().cloned())?;
                let fresh: Vec<TopicPartition> = discovered
                    .iter()
                    .filter(|tp| !restored.contains_key(tp))
                    .cloned()
                    .collect();
                for (tp, (offset, _)) in &restored {
                    consumer.seek(tp, *offset)?;
                }
                match starting_offsets {
                    StartingOffsets::Earliest => consumer.seek_to_beginning(&fresh)?,
                    StartingOffsets::Latest => consumer.seek_to_end(&fresh)?,
                    StartingOffsets::CommittedOrEarliest => {
                        let committed = consumer.committed(&fresh).await?;
                        for tp in &fresh {
                            match committed.get(tp) {
                                Some(offset) if offset.offset >= 0 => {
                                    consumer.seek(tp, offset.offset)?
                                }
                                _ => consumer.seek_to_beginning(std::slice::from_ref(tp))?,
                            }
                        }
                    }
                }
                let mut positions = Vec::with_capacity(discovered.len());
                for tp in &discovered {
                    positions.push((tp.clone(), consumer.position(tp).await?));
                }
                Ok((consumer, positions))
            });
        let (consumer, positions) = positioned.map_err(|error| self.error(error))?;
        self.partitions = positions
            .into_iter()
            .map(|(tp, next_offset)| {
                let watermark = restored
                    .get(&tp)
                    .map_or(MIN_WATERMARK, |(_, watermark)| *watermark);
                let state = self.partition_state(next_offset, watermark, now_ms);
                (tp, state)
            })
            .collect();
        self.connection = Some(Connection { consumer, runtime });
        Ok(())
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
        let partition = self
            .partitions
            .get_mut(&tp)
            .ok_or_else(|| connector_error(&self.name, format!("record of unassigned {tp}")))?;
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
        self.emitted_since_snapshot.set(false);
        self.snapshots.set(0);
    }

    fn snapshot_position(&self) -> serde_json::Value {
        self.snapshots.set(self.snapshots.get() + 1);
        self.emitted_since_snapshot.set(false);
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
                    serde_json::json!([tp.topic, tp.partition, state.next_offset, watermark])
                })
                .collect(),
            // Not connected yet: still where the restored checkpoint was.
            (None, Some(restored)) => restored
                .iter()
                .map(|(tp, (offset, watermark))| {
                    serde_json::json!([tp.topic, tp.partition, offset, watermark])
                })
                .collect(),
            (None, None) => Vec::new(),
        };
        serde_json::Value::Array(positions)
    }

    fn restore_position(&mut self, position: &serde_json::Value) -> Result<(), StreamError> {
        let invalid = || {
            StreamError::Checkpoint(format!(
                "source {}: position {position} is not a list of [topic, partition, offset, watermark]",
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
            offsets.insert(TopicPartition::new(topic, partition), (offset, watermark));
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
        if self.buffered.is_empty() {
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

    #[test]
    fn a_position_restores_to_the_same_position() {
        let source = KafkaSource::new("127.0.0.1:9", ["t"], |value: &[u8]| {
            Ok(String::from_utf8_lossy(value).into_owned())
        });
        let mut runner = KafkaSourceRunner::new("test", source, WatermarkStrategy::no_watermarks());
        let position = serde_json::json!([["t", 0, 17, 99], ["t", 1, 0, i64::MIN]]);
        runner.restore_position(&position).unwrap();
        assert_eq!(runner.snapshot_position(), position);
        for invalid in [
            serde_json::json!({"t": 1}),
            serde_json::json!([["t", 0, -1, 0]]),
            serde_json::json!([["t", 0, 5]]),
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
