//! Opening a partition's log (Kafka's `LogLoader`): the scan of its directory (leftover
//! files of interrupted work removed, swaps completed, the topic id checked), the
//! recovery after an unclean shutdown (every segment from the one holding the recovery
//! point is validated and re-indexed, and cut at its first invalid byte; the segments
//! after a cut one go), the transaction indexes and producer state rebuilt, and stray
//! producer snapshots removed.

use std::collections::BTreeMap;
use std::path::Path;

use crate::checkpoint::{self, TopicId};
use crate::cleaner;
use crate::config::LogConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::leader_epoch::{LEADER_EPOCH_CHECKPOINT, LeaderEpochCache};
use crate::producer_state::ProducerStateManager;
use crate::segment::LogSegment;

use super::{Log, LogOpenOptions, PARTITION_METADATA};

/// Loads a partition's log directory into a [`Log`] (Kafka's `LogLoader`):
/// [`Log::open`] builds one and calls [`LogLoader::load`].
pub(super) struct LogLoader<'a> {
    dir: &'a Path,
    config: LogConfig,
    options: LogOpenOptions,
}

impl<'a> LogLoader<'a> {
    /// A loader of the log in `dir`, with what the log directory's checkpoints say
    /// about it.
    pub(super) fn new(dir: &'a Path, config: LogConfig, options: LogOpenOptions) -> Self {
        LogLoader {
            dir,
            config,
            options,
        }
    }

    /// Opens (or creates) the log. On an unclean start, recovers every segment from the
    /// one holding the recovery point; a recovered segment cut short removes the
    /// segments after it, as their offsets no longer follow.
    pub(super) fn load(self) -> Result<Log> {
        let dir = self.dir;
        self.config.validate()?;
        std::fs::create_dir_all(dir).at(dir)?;
        let now = self.options.now_ms;
        let topic_id = check_topic_id(dir, self.options.topic_id)?;
        cleaner::complete_swaps(dir)?;
        let (base_offsets, snapshots) = list_segments(dir)?;
        let (mut segments, txn_rebuild_from) = self.load_segments(&base_offsets, now)?;
        let config = self.config;
        let options = self.options;
        let first_base = *segments.keys().next().expect("at least one segment");
        let (_, active) = segments
            .iter_mut()
            .next_back()
            .expect("at least one segment");
        active.activate(&config)?;
        let log_end_offset = active.next_offset();
        let log_start_offset = options.log_start_offset.max(first_base).min(log_end_offset);
        let mut leader_epochs = LeaderEpochCache::load(dir.join(LEADER_EPOCH_CHECKPOINT))?;
        leader_epochs.truncate_from_end(log_end_offset)?;
        leader_epochs.truncate_from_start(log_start_offset)?;
        checkpoint::sync_dir(dir)?;
        let mut log = Log {
            dir: dir.to_path_buf(),
            config,
            segments,
            log_start_offset,
            // Recovered segments were fsynced by recovery; clean ones were at shutdown.
            recovery_point: log_end_offset,
            leader_epochs,
            topic_id,
            unflushed_records: 0,
            last_flush_ms: now,
            rolled_unflushed: Vec::new(),
            producers: ProducerStateManager::default(),
            snapshots: snapshots.into_iter().collect(),
            unflushed_snapshots: Vec::new(),
            latest_delete_horizon: None,
        };
        log.remove_stray_snapshots()?;
        if let Some(from) = txn_rebuild_from {
            for segment in log.segments.range_mut(from..).map(|(_, s)| s) {
                segment.reset_txn_index()?;
            }
        }
        log.rebuild_producer_state(now, true, txn_rebuild_from)?;
        // The rebuilt indexes are as durable as the recovered segments.
        for segment in log.segments.values_mut() {
            segment.sync_txn_index()?;
        }
        log.check_invariants();
        Ok(log)
    }

    /// The segments at `base_offsets`, opened; after an unclean shutdown, those from
    /// the one holding the recovery point on are recovered instead. The segments after
    /// one that recovery cut short are deleted, and so is an empty segment in the
    /// middle; with no segment left, an empty one is created at the log start offset.
    /// Returns them with the base offset of the first segment whose transaction index
    /// must be rebuilt, if any.
    fn load_segments(
        &self,
        base_offsets: &[i64],
        now: i64,
    ) -> Result<(BTreeMap<i64, LogSegment>, Option<i64>)> {
        let (dir, config, options) = (self.dir, &self.config, &self.options);
        let mut segments = BTreeMap::new();
        let recover_from = if options.clean_shutdown {
            i64::MAX
        } else {
            // The segment holding the recovery point, and everything after it.
            base_offsets
                .iter()
                .rev()
                .find(|base| **base <= options.recovery_point)
                .copied()
                .unwrap_or(i64::MIN)
        };
        let mut cut_at = None;
        // The first segment whose transaction index must be rebuilt (recovered with a
        // control batch in it, or its index failed the checks): it and every later one
        // are rebuilt. A recovered segment without markers has nothing to index, and
        // skipping it keeps the replay starting at the newest snapshot.
        let mut txn_rebuild_from: Option<i64> = None;
        for base in base_offsets {
            let base = *base;
            if let Some(cut) = cut_at {
                tracing::warn!(dir = %dir.display(), segment = base, after = cut, "deleting a segment after a truncated one");
                LogSegment::delete_files(dir, base)?;
                continue;
            }
            let segment = if base >= recover_from {
                let (segment, truncated) = LogSegment::recover(dir, base, config, now)?;
                if segment.rescan_saw_control_batch() {
                    txn_rebuild_from.get_or_insert(base);
                }
                if truncated > 0 {
                    tracing::warn!(dir = %dir.display(), segment = base, truncated_bytes = truncated, "recovery truncated a segment");
                    cut_at = Some(base);
                }
                segment
            } else {
                let mut segment = LogSegment::open(dir, base, config, now)?;
                if !segment.open_txn_index()? {
                    txn_rebuild_from.get_or_insert(base);
                }
                segment
            };
            segments.insert(base, segment);
        }
        // An empty segment in the middle (a crash during roll) is dropped.
        let empty_inner: Vec<i64> = segments
            .iter()
            .rev()
            .skip(1)
            .filter(|(_, s)| s.size_bytes() == 0)
            .map(|(base, _)| *base)
            .collect();
        for base in empty_inner {
            if let Some(segment) = segments.remove(&base) {
                segment.delete()?;
            }
        }
        if segments.is_empty() {
            let start = options.log_start_offset.max(0);
            segments.insert(start, LogSegment::create(dir, start, config, now)?);
        }
        Ok((segments, txn_rebuild_from))
    }
}

impl Log {
    /// Kafka's `removeStraySnapshots`: snapshots at no segment's base offset go, except
    /// the newest of them when it is above the last segment's base (a clean close's).
    fn remove_stray_snapshots(&mut self) -> Result<()> {
        let last_base = *self
            .segments
            .keys()
            .next_back()
            .expect("a log always has a segment");
        let strays: Vec<i64> = self
            .snapshots
            .iter()
            .copied()
            .filter(|offset| !self.segments.contains_key(offset))
            .collect();
        if let Some((&newest, older)) = strays.split_last() {
            for offset in older {
                self.delete_snapshot(*offset)?;
            }
            if newest < last_base {
                self.delete_snapshot(newest)?;
            }
        }
        Ok(())
    }
}

fn check_topic_id(dir: &Path, requested: Option<TopicId>) -> Result<Option<TopicId>> {
    let path = dir.join(PARTITION_METADATA);
    let on_disk = checkpoint::read_partition_metadata(&path)?;
    match (on_disk, requested) {
        (Some(found), Some(wanted)) if found != wanted => Err(StorageError::InconsistentTopicId {
            dir: dir.to_path_buf(),
            on_disk: found.to_string(),
            requested: wanted.to_string(),
        }),
        (None, Some(wanted)) => {
            checkpoint::write_partition_metadata(&path, wanted)?;
            Ok(Some(wanted))
        }
        (found, _) => Ok(found),
    }
}

/// Base offsets of the segments in `dir`, sorted, and the offsets of its producer
/// snapshots. Leftovers of interrupted work (`.tmp`, `.cleaned`, `.deleted` files) are
/// removed; index files without a log go too.
fn list_segments(dir: &Path) -> Result<(Vec<i64>, Vec<i64>)> {
    let mut bases = Vec::new();
    let mut snapshots = Vec::new();
    let mut indexes = Vec::new();
    for entry in std::fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let path = entry.path();
        if name.ends_with(".tmp") || name.ends_with(".cleaned") || name.ends_with(".deleted") {
            tracing::info!(path = %path.display(), "removing a leftover file");
            std::fs::remove_file(&path).at(&path)?;
            continue;
        }
        let Some((stem, suffix)) = name.split_once('.') else {
            continue;
        };
        if stem.len() != 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(base) = stem.parse::<i64>() else {
            continue;
        };
        match suffix {
            "log" => bases.push(base),
            "index" | "timeindex" | "txnindex" => indexes.push((base, path)),
            "snapshot" => snapshots.push(base),
            _ => {}
        }
    }
    bases.sort_unstable();
    for (base, path) in indexes {
        if bases.binary_search(&base).is_err() {
            tracing::info!(path = %path.display(), "removing an index without its log");
            std::fs::remove_file(&path).at(&path)?;
        }
    }
    Ok((bases, snapshots))
}
