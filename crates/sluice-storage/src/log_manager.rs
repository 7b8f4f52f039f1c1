//! One log directory and every partition log in it (Kafka's `LogManager`, for one
//! `log.dirs` entry).
//!
//! The directory holds a `<topic>-<partition>` directory per log, plus:
//! - `recovery-point-offset-checkpoint`: per partition, the offset below which all data
//!   is fsynced; recovery starts there.
//! - `log-start-offset-checkpoint`: per partition, the log start offset (retention and
//!   DeleteRecords move it; it must survive restarts).
//! - `.kafka_cleanshutdown`: written last by a clean shutdown and removed at start, so
//!   its absence at start means the previous run crashed and logs must be recovered.
//! - `cleaner-offset-checkpoint`: per compacted partition, the first offset the log
//!   cleaner has not yet deduplicated ([`crate::cleaner`]); the next pass starts there.
//!
//! The broker calls [`LogManager::run_periodic_tasks`] from its scheduler
//! (`log.retention.check.interval.ms`, `log.flush.scheduler.interval.ms`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::checkpoint::{self, TopicId};
use crate::config::LogConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::log::{Log, LogOpenOptions};

pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";
/// The metadata log's topic: its directory lives in a log dir but is not a data log.
pub const METADATA_TOPIC: &str = "__cluster_metadata";

/// A topic name and partition number.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopicPartition {
    pub topic: String,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<String>, partition: i32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// Kafka's directory name: `<topic>-<partition>`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    /// Parses a directory name; `None` for anything else in a log dir.
    pub fn from_dir_name(name: &str) -> Option<TopicPartition> {
        let (topic, partition) = name.rsplit_once('-')?;
        if topic.is_empty() {
            return None;
        }
        Some(TopicPartition::new(topic, partition.parse().ok()?))
    }
}

impl std::fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

/// A log shared between the tasks that append to it and read from it.
pub type SharedLog = Arc<Mutex<Log>>;

/// Locks a shared log. A panic while it was held does not poison it for everyone else:
/// every `Log` operation leaves the log consistent or returns an error before changing
/// it, so the state is usable.
pub fn lock(log: &SharedLog) -> MutexGuard<'_, Log> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug)]
pub struct LogManager {
    dir: PathBuf,
    default_config: LogConfig,
    logs: BTreeMap<TopicPartition, SharedLog>,
    /// Whether this start followed a clean shutdown.
    clean_start: bool,
    /// The cleaner's first dirty offset per partition.
    cleaner_offsets: BTreeMap<TopicPartition, i64>,
}

impl LogManager {
    /// Opens the log directory, recovering every log when the last run did not shut down
    /// cleanly. A corrupt checkpoint is logged and treated as absent (full recovery,
    /// log start from the first segment), so nothing on disk is lost to it.
    pub fn open(dir: &Path, default_config: LogConfig) -> Result<LogManager> {
        default_config.validate()?;
        std::fs::create_dir_all(dir).at(dir)?;
        let marker = dir.join(CLEAN_SHUTDOWN_MARKER);
        let clean_start = marker.exists();
        let recovery_points = read_checkpoint_or_empty(&dir.join(RECOVERY_POINT_CHECKPOINT))?;
        let log_start_offsets = read_checkpoint_or_empty(&dir.join(LOG_START_OFFSET_CHECKPOINT))?;
        let cleaner_offsets =
            read_checkpoint_or_empty(&dir.join(crate::cleaner::CLEANER_OFFSET_CHECKPOINT))?;
        let now = crate::log::now_ms();
        let mut logs = BTreeMap::new();
        for entry in std::fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            if !entry.file_type().at(&entry.path())?.is_dir() {
                continue;
            }
            let Some(partition) = entry
                .file_name()
                .to_str()
                .and_then(TopicPartition::from_dir_name)
            else {
                continue;
            };
            // The metadata log has its own owner (sluice-metadata), as in Kafka.
            if partition.topic == METADATA_TOPIC {
                continue;
            }
            let options = LogOpenOptions {
                recovery_point: recovery_points.get(&partition).copied().unwrap_or(0),
                log_start_offset: log_start_offsets.get(&partition).copied().unwrap_or(0),
                clean_shutdown: clean_start,
                topic_id: None,
                now_ms: now,
            };
            let log = Log::open(&entry.path(), default_config.clone(), options)?;
            logs.insert(partition, Arc::new(Mutex::new(log)));
        }
        // From here on a crash must be detected at the next start.
        if clean_start {
            std::fs::remove_file(&marker).at(&marker)?;
            checkpoint::sync_dir(dir)?;
        }
        let cleaner_offsets = cleaner_offsets
            .into_iter()
            .filter(|(tp, _)| logs.contains_key(tp))
            .collect();
        let manager = LogManager {
            dir: dir.to_path_buf(),
            default_config,
            logs,
            clean_start,
            cleaner_offsets,
        };
        manager.checkpoint()?;
        Ok(manager)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn was_clean_start(&self) -> bool {
        self.clean_start
    }

    pub fn partitions(&self) -> impl Iterator<Item = &TopicPartition> {
        self.logs.keys()
    }

    /// The log of `partition`, shared: lock it with [`lock`].
    pub fn get(&self, partition: &TopicPartition) -> Option<SharedLog> {
        self.logs.get(partition).cloned()
    }

    /// The log of `partition`, created with `config` (or the default) when absent.
    pub fn get_or_create(
        &mut self,
        partition: &TopicPartition,
        topic_id: Option<TopicId>,
        config: Option<LogConfig>,
    ) -> Result<SharedLog> {
        if !self.logs.contains_key(partition) {
            let dir = self.dir.join(partition.dir_name());
            let options = LogOpenOptions {
                clean_shutdown: true,
                topic_id,
                ..LogOpenOptions::default()
            };
            let log = Log::open(
                &dir,
                config.unwrap_or_else(|| self.default_config.clone()),
                options,
            )?;
            checkpoint::sync_dir(&self.dir)?;
            self.logs
                .insert(partition.clone(), Arc::new(Mutex::new(log)));
        }
        Ok(self.logs[partition].clone())
    }

    /// The log cleaner's first dirty offset of `partition` (0 when it has none: the
    /// log is clamped to its start).
    pub fn cleaner_offset(&self, partition: &TopicPartition) -> i64 {
        self.cleaner_offsets.get(partition).copied().unwrap_or(0)
    }

    /// Records a cleaner pass's end; written with the next checkpoint.
    pub fn set_cleaner_offset(&mut self, partition: &TopicPartition, offset: i64) {
        if self.logs.contains_key(partition) {
            self.cleaner_offsets.insert(partition.clone(), offset);
        }
    }

    /// Deletes a partition's log and its directory.
    pub fn delete(&mut self, partition: &TopicPartition) -> Result<()> {
        self.cleaner_offsets.remove(partition);
        if let Some(log) = self.logs.remove(partition) {
            let dir = lock(&log).dir().to_path_buf();
            drop(log);
            std::fs::remove_dir_all(&dir).at(&dir)?;
            checkpoint::sync_dir(&self.dir)?;
            self.checkpoint()?;
        }
        Ok(())
    }

    /// Writes both per-directory checkpoints from the logs' current state.
    pub fn checkpoint(&self) -> Result<()> {
        let collect = |value: fn(&Log) -> i64| -> Vec<(String, i32, i64)> {
            self.logs
                .iter()
                .map(|(tp, log)| (tp.topic.clone(), tp.partition, value(&lock(log))))
                .collect()
        };
        checkpoint::write_offset_checkpoint(
            &self.dir.join(RECOVERY_POINT_CHECKPOINT),
            &collect(Log::recovery_point),
        )?;
        checkpoint::write_offset_checkpoint(
            &self.dir.join(LOG_START_OFFSET_CHECKPOINT),
            &collect(Log::log_start_offset),
        )?;
        let cleaned: Vec<(String, i32, i64)> = self
            .cleaner_offsets
            .iter()
            .map(|(tp, offset)| (tp.topic.clone(), tp.partition, *offset))
            .collect();
        checkpoint::write_offset_checkpoint(
            &self.dir.join(crate::cleaner::CLEANER_OFFSET_CHECKPOINT),
            &cleaned,
        )
    }

    /// Retention, producer expiry (`producer.id.expiration.ms`; Kafka checks it every
    /// `producer.id.expiration.check.interval.ms`, 10 minutes, this at the retention
    /// check's pace) and time-based flushes for every log, then the checkpoints. Returns
    /// the number of segments deleted.
    /// `high_watermark` gives each partition's high watermark (retention deletes nothing
    /// above it; `i64::MAX` for no bound).
    pub fn run_periodic_tasks(
        &mut self,
        now_ms: i64,
        high_watermark: impl Fn(&TopicPartition) -> i64,
    ) -> Result<usize> {
        let mut deleted = 0;
        for (partition, log) in &self.logs {
            let mut log = lock(log);
            deleted += log.delete_old_segments_below(now_ms, high_watermark(partition))?;
            log.remove_expired_producers(now_ms);
            log.flush_rolled_segments()?;
            log.flush_if_due(now_ms)?;
        }
        self.checkpoint()?;
        Ok(deleted)
    }

    /// Clean shutdown: flush and close every log, write the checkpoints, then the marker.
    pub fn shutdown(self) -> Result<()> {
        for log in self.logs.values() {
            lock(log).close()?;
        }
        self.checkpoint()?;
        let marker = self.dir.join(CLEAN_SHUTDOWN_MARKER);
        checkpoint::write_atomically(&marker, b"{\"version\":0,\"brokerEpoch\":-1}")?;
        Ok(())
    }
}

fn read_checkpoint_or_empty(path: &Path) -> Result<BTreeMap<TopicPartition, i64>> {
    match checkpoint::read_offset_checkpoint(path) {
        Ok(entries) => Ok(entries
            .into_iter()
            .map(|(topic, partition, offset)| (TopicPartition::new(topic, partition), offset))
            .collect()),
        Err(StorageError::Corrupt { path, reason }) => {
            tracing::warn!(path = %path.display(), %reason, "checkpoint is corrupt; ignoring it");
            Ok(BTreeMap::new())
        }
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_dir_names() {
        let cases = [
            ("orders-0", Some(("orders", 0))),
            ("my-topic-12", Some(("my-topic", 12))),
            ("__consumer_offsets-49", Some(("__consumer_offsets", 49))),
            ("orders", None),
            ("-1", None),
            ("orders-x", None),
        ];
        for (name, expected) in cases {
            let parsed = TopicPartition::from_dir_name(name);
            assert_eq!(
                parsed,
                expected.map(|(t, p)| TopicPartition::new(t, p)),
                "{name}"
            );
            if let Some(tp) = parsed {
                assert_eq!(tp.dir_name(), name);
            }
        }
    }
}
