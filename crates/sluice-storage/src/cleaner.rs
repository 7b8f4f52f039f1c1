//! Log compaction (Kafka's `LogCleaner`): for a log with `cleanup.policy` containing
//! `compact`, keep only the latest record of each key.
//!
//! A pass over one log has three steps, so appends and fetches wait only for the first
//! and the last:
//! 1. [`Log::plan_clean`], under the log's lock: which segments to rewrite, the range to
//!    deduplicate (from the first dirty offset, which the cleaner checkpoints per
//!    partition in `cleaner-offset-checkpoint`, to the first uncleanable offset: the
//!    active segment, the first unstable offset of an open transaction, the high
//!    watermark, and segments younger than `min.compaction.lag.ms` are never cleaned),
//!    the aborted transactions and each producer's last batch.
//! 2. [`run`], without the lock: builds the offset map, key → latest offset, over the
//!    dirty range (bounded by `log.cleaner.dedupe.buffer.size`; a map that fills ends
//!    the range early and the next pass goes on from there), then rewrites every
//!    segment from the start of the log up to the end of that range, grouped so that a
//!    group stays under `segment.bytes`, into `<base>.log.cleaned` files (with their
//!    indexes) named after the group's first segment. Only closed segments are read, and
//!    nothing appends to them.
//! 3. [`Log::install_cleaned`], under the lock: checks that the segments are still the
//!    ones planned (retention or a follower's truncation may have changed them; then the
//!    output is dropped), renames the output `.cleaned` → `.swap` (the commit point:
//!    index files first, the log file last), the replaced segments to `.deleted`, the
//!    `.swap` files to their final names, and deletes the `.deleted` ones.
//!
//! Offsets never change: a batch keeps its base offset, last offset delta, producer and
//! sequence fields, and each record its offset delta (so compaction leaves holes).
//!
//! What a pass keeps (Kafka's rules):
//! - a record whose key has no later record in the offset map;
//! - a tombstone (null value) until `delete.retention.ms` after the pass that first
//!   kept it: that pass writes the delete horizon into its batch (KIP-534: attribute
//!   bit 6, the horizon in the base timestamp); a later pass past the horizon drops it;
//! - no data of an aborted transaction (from the transaction indexes);
//! - a marker while any batch of its transaction remains (a COMMIT's records, or the
//!   producer's last batch kept empty); a marker with nothing left to mark is treated as
//!   a tombstone: kept until its delete horizon has passed;
//! - the last batch of each producer, emptied of its records if none remain, so the
//!   producer's sequence and epoch survive a rebuild of the producer state;
//! - a batch that ends at or after the end of the deduplicated range as it is.
//!
//! Crash safety: `.cleaned` files are fsynced before the commit point; on open,
//! [`complete_swaps`] deletes `.cleaned` files (a pass that never committed), and for a
//! `<base>.log.swap` (a committed pass) deletes the old segments whose base offsets lie
//! in the swap's offset range and renames the `.swap` files into place. As in Kafka, a
//! replaced segment that lost every record and lies past the last offset the swap holds
//! cannot be told apart from a later segment, and stays: its records are older versions
//! of keys, which compaction may keep.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use sluice_protocol::record_batch::{self, RecordBatch};

use crate::checkpoint;
use crate::config::LogConfig;
use crate::end_txn_marker;
use crate::error::{IoContext, Result, StorageError};
use crate::segment::{AppendedBatch, BatchHeader, HeaderScan, LOG_SUFFIX, LogSegment};
use crate::transaction_index::AbortedTxn;

/// Per log directory: each compacted partition's first dirty offset.
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
/// The cleaner's output before the commit point.
pub const CLEANED_SUFFIX: &str = ".cleaned";
/// The cleaner's output after the commit point, before it replaces the old segments.
pub const SWAP_SUFFIX: &str = ".swap";
/// Replaced segment files about to be deleted.
pub const DELETED_SUFFIX: &str = ".deleted";

/// What an offset-map entry costs beyond its key's bytes (the key is stored whole, so
/// there are no hash collisions; Kafka stores a 16-byte MD5 of it plus the offset).
const MAP_ENTRY_OVERHEAD: usize = 48;

/// How dirty a log is (Kafka's `LogToClean`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cleanable {
    /// Where the dirty range starts (the checkpoint, clamped to the log).
    pub first_dirty_offset: i64,
    /// Where cleaning must stop.
    pub first_uncleanable_offset: i64,
    /// Bytes of the segments before the dirty range.
    pub clean_bytes: u64,
    /// Bytes of the segments in the dirty range.
    pub dirty_bytes: u64,
    /// The oldest dirty segment is older than `max.compaction.lag.ms`.
    pub overdue: bool,
    /// `min.cleanable.dirty.ratio` of the log.
    pub min_dirty_ratio: f64,
    /// A tombstone or marker kept by an earlier pass has reached its delete horizon: a
    /// pass is due to remove it even without dirty bytes (KIP-534).
    pub tombstones_due: bool,
}

impl Cleanable {
    /// Dirty bytes over all cleanable bytes.
    pub fn dirty_ratio(&self) -> f64 {
        let total = self.clean_bytes + self.dirty_bytes;
        if total == 0 {
            0.0
        } else {
            self.dirty_bytes as f64 / total as f64
        }
    }

    /// Whether a pass is due: some dirty bytes, and the ratio reached or the log overdue.
    pub fn is_due(&self) -> bool {
        (self.dirty_bytes > 0 && (self.overdue || self.dirty_ratio() >= self.min_dirty_ratio))
            || self.tombstones_due
    }
}

/// A segment as the plan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlannedSegment {
    pub base_offset: i64,
    pub next_offset: i64,
    pub size_bytes: u64,
}

/// Everything [`run`] needs, taken under the log's lock.
#[derive(Debug, Clone)]
pub struct CleanPlan {
    pub(crate) dir: PathBuf,
    pub(crate) config: LogConfig,
    /// Closed segments from the first one, in order, up to the last one that starts
    /// before `end`.
    pub(crate) segments: Vec<PlannedSegment>,
    pub(crate) first_dirty: i64,
    pub(crate) end: i64,
    /// Aborted transactions whose markers lie in the planned segments.
    pub(crate) aborted: Vec<AbortedTxn>,
    /// Producer id → last offset of its last batch.
    pub(crate) producer_last_offsets: HashMap<i64, i64>,
    pub(crate) now_ms: i64,
}

impl CleanPlan {
    /// The first offset the pass deduplicates.
    pub fn first_dirty_offset(&self) -> i64 {
        self.first_dirty
    }
}

/// One rewritten group: the `.cleaned` files at `base_offset` replace `replaced`.
#[derive(Debug)]
pub(crate) struct CleanedGroup {
    pub base_offset: i64,
    pub replaced: Vec<PlannedSegment>,
    /// No batch survived: the group is deleted, not replaced.
    pub empty: bool,
}

/// The output of [`run`], for [`Log::install_cleaned`].
#[derive(Debug)]
pub struct Cleaned {
    pub(crate) dir: PathBuf,
    pub(crate) groups: Vec<CleanedGroup>,
    pub stats: CleanStats,
}

impl Cleaned {
    /// Deletes the output files (the pass is abandoned).
    pub fn discard(self) -> Result<()> {
        for group in &self.groups {
            remove_files(&LogSegment::file_paths(
                &self.dir,
                group.base_offset,
                CLEANED_SUFFIX,
            ))?;
        }
        Ok(())
    }
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanStats {
    /// The first dirty offset after the pass: the next pass deduplicates from here.
    pub next_dirty_offset: i64,
    pub segments_before: usize,
    pub segments_after: usize,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_read: u64,
    pub records_kept: u64,
    /// Keys in the offset map, and the bytes of its budget they took.
    pub map_keys: usize,
    pub map_bytes_used: usize,
    pub tombstones_removed: u64,
    pub markers_removed: u64,
    pub aborted_batches_removed: u64,
    /// The latest delete horizon of a tombstone or marker the pass kept (`None`: none
    /// kept): once it passes, the log is due for another pass.
    pub latest_delete_horizon: Option<i64>,
}

/// Runs the pass `plan` describes: builds the offset map and writes the `.cleaned`
/// segments. `map_bytes` bounds the offset map. Reads only closed segments; the log's
/// lock is not needed. On error nothing of the log has changed (the partial output is
/// deleted).
pub fn run(plan: &CleanPlan, map_bytes: usize) -> Result<Cleaned> {
    let mut stats = CleanStats {
        segments_before: plan.segments.len(),
        ..CleanStats::default()
    };
    let (map, map_end) = build_offset_map(plan, map_bytes, &mut stats)?;
    stats.map_keys = map.len();
    stats.next_dirty_offset = map_end;
    let mut groups = Vec::new();
    let to_clean: Vec<PlannedSegment> = plan
        .segments
        .iter()
        .copied()
        .filter(|s| s.base_offset < map_end)
        .collect();
    let mut txns = TxnTracker::default();
    for group in group_by_size(&to_clean, &plan.config) {
        let base_offset = group[0].base_offset;
        let result = clean_group(plan, &group, &map, map_end, &mut txns, &mut stats);
        match result {
            Ok(empty) => groups.push(CleanedGroup {
                base_offset,
                replaced: group,
                empty,
            }),
            Err(error) => {
                remove_files(&LogSegment::file_paths(
                    &plan.dir,
                    base_offset,
                    CLEANED_SUFFIX,
                ))?;
                Cleaned {
                    dir: plan.dir.clone(),
                    groups,
                    stats,
                }
                .discard()?;
                return Err(error);
            }
        }
    }
    stats.segments_after = groups.iter().filter(|g| !g.empty).count();
    Ok(Cleaned {
        dir: plan.dir.clone(),
        groups,
        stats,
    })
}

/// The batches of a closed segment file, whole, in order, read one at a time (a pass
/// holds one batch of a segment in memory, not the segment).
fn read_batches(dir: &Path, segment: &PlannedSegment) -> Result<SegmentBatches> {
    let path = dir.join(crate::segment::segment_file_name(
        segment.base_offset,
        LOG_SUFFIX,
    ));
    let file = File::open(&path).at(&path)?;
    Ok(SegmentBatches {
        file,
        path,
        position: 0,
        end: segment.size_bytes,
    })
}

struct SegmentBatches {
    file: File,
    path: PathBuf,
    position: u64,
    end: u64,
}

impl Iterator for SegmentBatches {
    type Item = Result<(BatchHeader, Bytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.position >= self.end {
            return None;
        }
        let header = HeaderScan::new(&self.file, self.position, self.end)
            .next()
            .map(|item| item.at(&self.path));
        let (position, header) = match header {
            Some(Ok(found)) => found,
            Some(Err(error)) => {
                self.position = self.end;
                return Some(Err(error));
            }
            None => {
                let at = self.position;
                self.position = self.end;
                return Some(Err(StorageError::Corrupt {
                    path: self.path.clone(),
                    reason: format!(
                        "the cleaner found a partial batch at byte {at} of {}",
                        self.end
                    ),
                }));
            }
        };
        let mut bytes = vec![0u8; header.size_bytes as usize];
        if let Err(error) = self.file.read_exact_at(&mut bytes, position).at(&self.path) {
            self.position = self.end;
            return Some(Err(error));
        }
        self.position = position + header.size_bytes;
        Some(Ok((header, Bytes::from(bytes))))
    }
}

fn corrupt(dir: &Path, base_offset: i64, reason: String) -> StorageError {
    StorageError::Corrupt {
        path: dir.join(crate::segment::segment_file_name(base_offset, LOG_SUFFIX)),
        reason,
    }
}

/// Whether a data batch belongs to an aborted transaction.
fn is_aborted(plan: &CleanPlan, header: &BatchHeader) -> bool {
    header.is_transactional()
        && plan.aborted.iter().any(|txn| {
            txn.producer_id == header.producer_id
                && txn.first_offset <= header.base_offset
                && header.base_offset < txn.last_offset
        })
}

/// Key → offset of its latest record in `[first_dirty, end)`, and where the map ends
/// (`end`, or earlier when `map_bytes` ran out: at a batch boundary, after at least one
/// batch).
fn build_offset_map(
    plan: &CleanPlan,
    map_bytes: usize,
    stats: &mut CleanStats,
) -> Result<(HashMap<Bytes, i64>, i64)> {
    let mut map: HashMap<Bytes, i64> = HashMap::new();
    let mut used = 0usize;
    let mut mapped_any = false;
    for segment in &plan.segments {
        if segment.next_offset <= plan.first_dirty {
            continue;
        }
        for item in read_batches(&plan.dir, segment)? {
            let (header, bytes) = item?;
            if header.last_offset() < plan.first_dirty {
                continue;
            }
            if header.base_offset >= plan.end || header.last_offset() >= plan.end {
                return Ok((map, header.base_offset.min(plan.end).max(plan.first_dirty)));
            }
            if header.is_control() || is_aborted(plan, &header) {
                continue;
            }
            let batch = RecordBatch::new(bytes)
                .map_err(|e| corrupt(&plan.dir, segment.base_offset, e.to_string()))?;
            let records = batch
                .records()
                .map_err(|e| corrupt(&plan.dir, segment.base_offset, e.to_string()))?;
            let mut added = Vec::new();
            let mut added_bytes = 0usize;
            for record in records {
                let record =
                    record.map_err(|e| corrupt(&plan.dir, segment.base_offset, e.to_string()))?;
                if let Some(key) = record.key {
                    let offset = header.base_offset + i64::from(record.offset_delta);
                    if !map.contains_key(&key) {
                        added_bytes += key.len() + MAP_ENTRY_OVERHEAD;
                    }
                    added.push((key, offset));
                }
            }
            if mapped_any && used + added_bytes > map_bytes {
                tracing::info!(dir = %plan.dir.display(), keys = map.len(), at = header.base_offset, "the cleaner's offset map is full; cleaning up to here");
                return Ok((map, header.base_offset));
            }
            used += added_bytes;
            stats.map_bytes_used = used;
            for (key, offset) in added {
                match map.get_mut(&key) {
                    Some(latest) => *latest = offset,
                    // A copy: the record's key shares its whole (decompressed) batch.
                    None => {
                        map.insert(Bytes::copy_from_slice(&key), offset);
                    }
                }
            }
            mapped_any = true;
            stats.records_read += u64::from(header.record_count.max(0) as u32);
        }
    }
    Ok((map, plan.end))
}

/// Consecutive segments whose total size stays within `segment.bytes` and whose
/// offsets fit one segment's 32-bit relative offsets (Kafka's `groupSegmentsBySize`).
fn group_by_size(segments: &[PlannedSegment], config: &LogConfig) -> Vec<Vec<PlannedSegment>> {
    let mut groups: Vec<Vec<PlannedSegment>> = Vec::new();
    for segment in segments {
        if let Some(group) = groups.last_mut() {
            let size: u64 = group.iter().map(|s| s.size_bytes).sum();
            let fits_size = size + segment.size_bytes <= u64::from(config.segment_bytes);
            let fits_offsets =
                segment.next_offset - 1 - group[0].base_offset <= i64::from(i32::MAX);
            if fits_size && fits_offsets {
                group.push(*segment);
                continue;
            }
        }
        groups.push(vec![*segment]);
    }
    groups
}

/// Per producer, whether its open transaction (as the pass reads it, in offset order)
/// kept any batch.
#[derive(Default)]
struct TxnTracker {
    kept: BTreeMap<i64, bool>,
}

/// What to do with one batch.
enum Decision {
    Drop,
    Keep,
    Rewrite(Bytes),
}

/// Rewrites one group into `<base>.*.cleaned`; returns whether nothing survived (the
/// files are then deleted).
fn clean_group(
    plan: &CleanPlan,
    group: &[PlannedSegment],
    map: &HashMap<Bytes, i64>,
    map_end: i64,
    txns: &mut TxnTracker,
    stats: &mut CleanStats,
) -> Result<bool> {
    let base_offset = group[0].base_offset;
    let mut out = LogSegment::create_with_suffix(
        &plan.dir,
        base_offset,
        &plan.config,
        plan.now_ms,
        CLEANED_SUFFIX,
    )?;
    let horizon = plan.now_ms.saturating_add(plan.config.delete_retention_ms);
    for segment in group {
        for item in read_batches(&plan.dir, segment)? {
            let (header, bytes) = item?;
            stats.bytes_read += header.size_bytes;
            let decision = if header.last_offset() >= map_end {
                Decision::Keep
            } else {
                decide(plan, &header, bytes.clone(), map, horizon, txns, stats)
                    .map_err(|reason| corrupt(&plan.dir, segment.base_offset, reason))?
            };
            let kept = match decision {
                Decision::Drop => continue,
                Decision::Keep => bytes,
                Decision::Rewrite(rewritten) => rewritten,
            };
            let kept_header = BatchHeader::parse(&kept);
            if kept_header.has_delete_horizon() {
                let horizon = kept_header.base_timestamp;
                stats.latest_delete_horizon = Some(
                    stats
                        .latest_delete_horizon
                        .map_or(horizon, |h| h.max(horizon)),
                );
            }
            out.append(
                &plan.config,
                &kept,
                &[AppendedBatch {
                    offset_in_append: 0,
                    size_bytes: kept.len() as u64,
                    last_offset: kept_header.last_offset(),
                    max_timestamp: kept_header.max_timestamp,
                }],
            )?;
            stats.bytes_written += kept.len() as u64;
            if kept_header.is_control()
                && let Some(txn) = plan
                    .aborted
                    .iter()
                    .find(|t| t.last_offset == kept_header.base_offset)
            {
                out.append_aborted_txn(txn)?;
            }
        }
    }
    let empty = out.size_bytes() == 0;
    out.deactivate(true)?;
    out.sync_txn_index()?;
    if empty {
        remove_files(&LogSegment::file_paths(
            &plan.dir,
            base_offset,
            CLEANED_SUFFIX,
        ))?;
    }
    Ok(empty)
}

/// Kafka's retention decision for one batch below the end of the offset map.
fn decide(
    plan: &CleanPlan,
    header: &BatchHeader,
    bytes: Bytes,
    map: &HashMap<Bytes, i64>,
    horizon: i64,
    txns: &mut TxnTracker,
    stats: &mut CleanStats,
) -> std::result::Result<Decision, String> {
    let batch = RecordBatch::new(bytes).map_err(|e| e.to_string())?;
    let horizon_passed = batch.has_delete_horizon() && plan.now_ms >= batch.base_timestamp();
    let last_of_producer = header.producer_id >= 0
        && plan.producer_last_offsets.get(&header.producer_id) == Some(&header.last_offset());
    if header.is_control() {
        let marker = end_txn_marker::read_marker(batch.bytes()).map_err(|e| e.to_string())?;
        let records_kept = txns.kept.remove(&header.producer_id).unwrap_or(false);
        if marker.is_none() {
            // An empty control batch: nothing to mark.
            return Ok(Decision::Drop);
        }
        if records_kept {
            // A batch of the transaction remains (for an abort, only ever the producer's
            // last batch, kept empty): the marker must stay to close it.
            return Ok(Decision::Keep);
        }
        // Nothing left to mark: a tombstone of the transaction.
        if horizon_passed {
            stats.markers_removed += 1;
            return Ok(Decision::Drop);
        }
        if batch.has_delete_horizon() {
            return Ok(Decision::Keep);
        }
        let records: Vec<_> = batch
            .records()
            .map_err(|e| e.to_string())?
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| e.to_string())?;
        return Ok(Decision::Rewrite(record_batch::rebuild_retained(
            &batch,
            &records,
            Some(horizon),
        )));
    }
    if is_aborted(plan, header) {
        if !last_of_producer {
            stats.aborted_batches_removed += 1;
            return Ok(Decision::Drop);
        }
        // Kept empty: its abort marker must stay while it does.
        txns.kept.insert(header.producer_id, true);
        return Ok(if header.record_count == 0 {
            Decision::Keep
        } else {
            stats.aborted_batches_removed += 1;
            Decision::Rewrite(record_batch::rebuild_retained(&batch, &[], None))
        });
    }
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut tombstones_kept = false;
    for record in batch.records().map_err(|e| e.to_string())? {
        let record = record.map_err(|e| e.to_string())?;
        total += 1;
        let offset = header.base_offset + i64::from(record.offset_delta);
        let superseded = record
            .key
            .as_ref()
            .and_then(|key| map.get(key))
            .is_some_and(|latest| *latest > offset);
        if superseded {
            continue;
        }
        if record.value.is_none() {
            if horizon_passed {
                stats.tombstones_removed += 1;
                continue;
            }
            tombstones_kept = true;
        }
        kept.push(record);
    }
    stats.records_kept += kept.len() as u64;
    if header.is_transactional() {
        *txns.kept.entry(header.producer_id).or_default() |= !kept.is_empty() || last_of_producer;
    }
    let new_horizon = if batch.has_delete_horizon() && tombstones_kept {
        Some(batch.base_timestamp())
    } else if tombstones_kept {
        Some(horizon)
    } else {
        None
    };
    if kept.is_empty() {
        return Ok(if last_of_producer {
            Decision::Rewrite(record_batch::rebuild_retained(&batch, &[], None))
        } else {
            Decision::Drop
        });
    }
    if kept.len() == total && new_horizon.is_some() == batch.has_delete_horizon() {
        return Ok(Decision::Keep);
    }
    Ok(Decision::Rewrite(record_batch::rebuild_retained(
        &batch,
        &kept,
        new_horizon,
    )))
}

fn remove_files(paths: &[PathBuf]) -> Result<()> {
    for path in paths {
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StorageError::Io {
                    path: path.clone(),
                    source,
                });
            }
        }
    }
    Ok(())
}

fn rename_if_present(from: &Path, to: &Path) -> Result<()> {
    match std::fs::rename(from, to) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StorageError::Io {
            path: from.to_path_buf(),
            source,
        }),
    }
}

/// Renames the `from`-suffixed files of the segment at `base_offset` to `to`-suffixed
/// ones: the indexes first, the log last (so the log file's rename is the commit point).
pub(crate) fn rename_segment_files(
    dir: &Path,
    base_offset: i64,
    from: &str,
    to: &str,
) -> Result<()> {
    let sources = LogSegment::file_paths(dir, base_offset, from);
    let targets = LogSegment::file_paths(dir, base_offset, to);
    for i in [1, 2, 3, 0] {
        rename_if_present(&sources[i], &targets[i])?;
    }
    Ok(())
}

/// Replaces `group.replaced` by the `.cleaned` output at `group.base_offset` on disk (the
/// caller holds the log's lock and has checked the replaced segments are unchanged).
pub(crate) fn swap_in(dir: &Path, group: &CleanedGroup) -> Result<()> {
    if !group.empty {
        rename_segment_files(dir, group.base_offset, CLEANED_SUFFIX, SWAP_SUFFIX)?;
        checkpoint::sync_dir(dir)?;
    }
    for old in &group.replaced {
        rename_segment_files(dir, old.base_offset, "", DELETED_SUFFIX)?;
    }
    if !group.empty {
        rename_segment_files(dir, group.base_offset, SWAP_SUFFIX, "")?;
    }
    checkpoint::sync_dir(dir)?;
    for old in &group.replaced {
        remove_files(&LogSegment::file_paths(
            dir,
            old.base_offset,
            DELETED_SUFFIX,
        ))?;
    }
    Ok(())
}

/// Finishes or undoes a cleaner pass a crash interrupted, before a log is opened: a
/// `<base>.log.swap` replaces the segments whose base offsets lie in its offset range;
/// `.swap` index files without their log were written by a pass that had not committed
/// (or whose log file is already in place: the segment then rebuilds its indexes) and
/// are deleted, as are `.cleaned` files.
pub fn complete_swaps(dir: &Path) -> Result<()> {
    let mut swaps = Vec::new();
    let mut strays = Vec::new();
    for entry in std::fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(stem) = name.strip_suffix(".log.swap")
            && let Ok(base) = stem.parse::<i64>()
        {
            swaps.push(base);
        } else if name.ends_with(SWAP_SUFFIX) || name.ends_with(CLEANED_SUFFIX) {
            strays.push(entry.path());
        }
    }
    if swaps.is_empty() && strays.is_empty() {
        return Ok(());
    }
    swaps.sort_unstable();
    let mut bases = Vec::new();
    for entry in std::fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let name = entry.file_name();
        if let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(LOG_SUFFIX))
            && let Ok(base) = stem.parse::<i64>()
        {
            bases.push(base);
        }
    }
    for swap in &swaps {
        let swap_path = LogSegment::file_paths(dir, *swap, SWAP_SUFFIX)[0].clone();
        let file = File::open(&swap_path).at(&swap_path)?;
        let size = file.metadata().at(&swap_path)?.len();
        let mut next_offset = *swap;
        for item in HeaderScan::new(&file, 0, size) {
            let (_, header) = item.at(&swap_path)?;
            if !header.is_plausible() {
                break;
            }
            next_offset = next_offset.max(header.last_offset() + 1);
        }
        for base in bases
            .iter()
            .filter(|b| (*swap..next_offset.max(*swap + 1)).contains(*b))
        {
            tracing::warn!(dir = %dir.display(), segment = base, swap, "completing an interrupted cleaner swap: deleting a replaced segment");
            remove_files(&LogSegment::file_paths(dir, *base, ""))?;
        }
        tracing::warn!(dir = %dir.display(), swap, "completing an interrupted cleaner swap");
        rename_segment_files(dir, *swap, SWAP_SUFFIX, "")?;
    }
    for path in strays {
        if path.exists() {
            tracing::info!(path = %path.display(), "removing an unfinished cleaner file");
            remove_files(std::slice::from_ref(&path))?;
        }
    }
    checkpoint::sync_dir(dir)
}
