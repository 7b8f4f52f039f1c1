//! One segment of a partition log: `{base_offset:020}.log` with its `.index`,
//! `.timeindex` and, once a transaction aborts in it, `.txnindex` (Kafka's
//! `LogSegment`; the transaction index is described in [`crate::transaction_index`]).
//!
//! The `.log` file is record batches back to back, byte for byte as they were appended.
//! Only the active (last) segment is written; it keeps its file open and its indexes in
//! memory. An inactive segment holds no file handle and no index in memory: a read opens
//! its file, searches its index file with `pread` and closes both, so a partition with
//! thousands of segments holds a few handles and a few bytes per segment.
//!
//! Cost of the hot paths: an append is one `pwrite` of the bytes received plus, every
//! `index.interval.bytes`, one in-memory index entry (written to the index file at flush).
//! A read is an index binary search, a header scan of at most `index.interval.bytes` plus
//! one batch (61-byte `pread`s), and one `pread` of the bytes returned into one buffer
//! whose slices are handed out: one copy from the page cache, none per record.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use sluice_protocol::RecordBatch;
use sluice_protocol::record_batch::{
    self, LOG_OVERHEAD, MAGIC_V2, RECORD_BATCH_OVERHEAD, offsets_fit,
};

use crate::config::LogConfig;
use crate::error::{IoContext, Result, StorageError};
use crate::index::{self, Index, floor_in_file, floor_in_memory};
use crate::offset_index::{OffsetEntry, check_offset_entries};
use crate::time_index::{TimeEntry, check_time_entries};
use crate::transaction_index::{AbortedTxn, TXN_INDEX_SUFFIX, TransactionIndex};

/// `{offset:020}` + suffix, as Kafka names segment files.
pub fn segment_file_name(base_offset: i64, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}

pub const LOG_SUFFIX: &str = ".log";
pub const INDEX_SUFFIX: &str = ".index";
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";

/// The fields of a batch header the log needs, copied out of its first 61 bytes (read
/// through [`record_batch::BatchHeader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    pub base_offset: i64,
    pub size_bytes: u64,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
    transactional: bool,
    control: bool,
    delete_horizon: bool,
}

impl BatchHeader {
    /// Copies the fields out of the header at the front of `bytes`.
    ///
    /// # Panics
    ///
    /// If `bytes` holds fewer than 61 bytes; every caller reads or slices a whole header.
    pub fn parse(bytes: &[u8]) -> BatchHeader {
        let header = record_batch::BatchHeader::new(bytes).expect("a 61-byte batch header");
        BatchHeader {
            base_offset: header.base_offset(),
            size_bytes: (i64::from(header.batch_length()) + LOG_OVERHEAD as i64).max(0) as u64,
            partition_leader_epoch: header.partition_leader_epoch(),
            magic: header.magic(),
            last_offset_delta: header.last_offset_delta(),
            base_timestamp: header.base_timestamp(),
            max_timestamp: header.max_timestamp(),
            producer_id: header.producer_id(),
            producer_epoch: header.producer_epoch(),
            base_sequence: header.base_sequence(),
            record_count: header.record_count(),
            transactional: header.is_transactional(),
            control: header.is_control(),
            delete_horizon: header.has_delete_horizon(),
        }
    }

    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(i64::from(self.last_offset_delta))
    }

    /// Attribute bit 4: part of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.transactional
    }

    /// Attribute bit 5: a control batch (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.control
    }

    /// Attribute bit 6: `base_timestamp` holds the compaction delete horizon (KIP-534).
    pub fn has_delete_horizon(&self) -> bool {
        self.delete_horizon
    }

    /// Magic 2 and offsets a log can hold (see [`offsets_fit`]).
    pub fn is_plausible(&self) -> bool {
        self.magic == MAGIC_V2 && offsets_fit(self.base_offset, self.last_offset_delta)
    }
}

/// The placement of one batch of an append, for indexing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendedBatch {
    /// Position of the batch inside the bytes appended.
    pub offset_in_append: u64,
    pub size_bytes: u64,
    pub last_offset: i64,
    pub max_timestamp: i64,
}

/// The state only the active segment has.
#[derive(Debug)]
struct Active {
    file: File,
    offset_index: Index<OffsetEntry>,
    time_index: Index<TimeEntry>,
    bytes_since_last_index_entry: u64,
}

#[derive(Debug)]
pub(crate) struct LogSegment {
    base_offset: i64,
    log_path: PathBuf,
    index_path: PathBuf,
    time_index_path: PathBuf,
    txn_index: TransactionIndex,
    /// Whether the last full rescan ([`LogSegment::recover`]) met a control batch: only
    /// then can its transaction index have entries to rebuild.
    rescan_saw_control_batch: bool,
    size_bytes: u64,
    /// One past the last offset in the segment (`base_offset` when empty).
    next_offset: i64,
    /// The largest batch max timestamp (-1 when none), and the last offset of the first
    /// batch that reached it (Kafka's shallow offset of max timestamp).
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    /// Max timestamp of the first batch: `segment.ms` counts from it (Kafka's
    /// `rollingBasedTimestamp`).
    rolling_based_timestamp: Option<i64>,
    created_ms: i64,
    /// Bytes up to which the file is fsynced.
    flushed_bytes: u64,
    active: Option<Active>,
}

/// What a read returns: whole batches, sharing one buffer.
#[derive(Debug, Clone)]
pub(crate) struct SegmentRead {
    pub records: Bytes,
    pub first_batch_base_offset: i64,
}

fn open_for_append(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .at(path)
}

impl LogSegment {
    fn paths(dir: &Path, base_offset: i64) -> (PathBuf, PathBuf, PathBuf) {
        (
            dir.join(segment_file_name(base_offset, LOG_SUFFIX)),
            dir.join(segment_file_name(base_offset, INDEX_SUFFIX)),
            dir.join(segment_file_name(base_offset, TIME_INDEX_SUFFIX)),
        )
    }

    fn txn_index_file(dir: &Path, base_offset: i64) -> PathBuf {
        dir.join(segment_file_name(base_offset, TXN_INDEX_SUFFIX))
    }

    /// The four files of the segment at `base_offset` (log, offset index, time index,
    /// transaction index), each name followed by `suffix` (`""`, `".cleaned"`,
    /// `".swap"`, `".deleted"`).
    pub fn file_paths(dir: &Path, base_offset: i64, suffix: &str) -> [PathBuf; 4] {
        [
            LOG_SUFFIX,
            INDEX_SUFFIX,
            TIME_INDEX_SUFFIX,
            TXN_INDEX_SUFFIX,
        ]
        .map(|kind| dir.join(segment_file_name(base_offset, kind) + suffix))
    }

    /// Creates a new, empty, active segment (replacing stale files of that name).
    pub fn create(dir: &Path, base_offset: i64, config: &LogConfig, now_ms: i64) -> Result<Self> {
        Self::create_with_suffix(dir, base_offset, config, now_ms, "")
    }

    /// [`LogSegment::create`] with every file name followed by `suffix`: the log cleaner
    /// writes its output as `.cleaned` files this way.
    pub fn create_with_suffix(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        suffix: &str,
    ) -> Result<Self> {
        let [log_path, index_path, time_index_path, txn_index_path] =
            Self::file_paths(dir, base_offset, suffix);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&log_path)
            .at(&log_path)?;
        for path in [&index_path, &time_index_path] {
            File::create(path).at(path)?;
        }
        let txn_index = TransactionIndex::create(txn_index_path)?;
        Ok(LogSegment {
            txn_index,
            rescan_saw_control_batch: false,
            base_offset,
            size_bytes: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            flushed_bytes: 0,
            active: Some(Active {
                file,
                offset_index: Index::empty(index_path.clone(), config.max_offset_index_entries()),
                time_index: Index::empty(time_index_path.clone(), config.max_time_index_entries()),
                bytes_since_last_index_entry: 0,
            }),
            log_path,
            index_path,
            time_index_path,
        })
    }

    /// An existing segment as its file stands, before its end, timestamps and indexes
    /// are known (`open` and `recover` fill them in).
    fn existing(dir: &Path, base_offset: i64, now_ms: i64) -> Result<Self> {
        let (log_path, index_path, time_index_path) = Self::paths(dir, base_offset);
        let size_bytes = std::fs::metadata(&log_path).at(&log_path)?.len();
        // Loaded by `open_txn_index` once the segment's end is known.
        let txn_index = TransactionIndex::unloaded(Self::txn_index_file(dir, base_offset));
        Ok(LogSegment {
            txn_index,
            rescan_saw_control_batch: false,
            base_offset,
            log_path,
            index_path,
            time_index_path,
            size_bytes,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            rolling_based_timestamp: None,
            created_ms: now_ms,
            flushed_bytes: size_bytes,
            active: None,
        })
    }

    /// Opens an existing segment whose data is trusted (before the recovery point, or
    /// after a clean shutdown). Indexes that are missing or fail their checks are rebuilt
    /// from the log. Reads only the index files and the headers after the last index
    /// entry.
    pub fn open(dir: &Path, base_offset: i64, config: &LogConfig, now_ms: i64) -> Result<Self> {
        let mut segment = Self::existing(dir, base_offset, now_ms)?;
        let size_bytes = segment.size_bytes;
        let file = File::open(&segment.log_path).at(&segment.log_path)?;
        let offset_entries = index::read_entries::<OffsetEntry>(&segment.index_path)?;
        let time_entries = index::read_entries::<TimeEntry>(&segment.time_index_path)?;
        let indexes_valid = match (&offset_entries, &time_entries) {
            (Some(offsets), Some(times)) => {
                check_offset_entries(offsets, size_bytes, None).is_ok()
                    && check_time_entries(times, None).is_ok()
            }
            _ => false,
        };
        if !indexes_valid {
            tracing::warn!(segment = %segment.log_path.display(), "index missing or corrupt; rebuilding it");
            segment.rebuild(config, false)?;
            return Ok(segment);
        }
        let offsets = offset_entries.expect("checked above");
        let times = time_entries.expect("checked above");
        // Find the end: scan headers from the last index entry.
        let start = offsets.last().map_or(0, |e| u64::from(e.position));
        let mut max_timestamp = times.last().map_or(-1, |e| e.timestamp);
        let mut offset_of_max = times
            .last()
            .map_or(base_offset, |e| base_offset + i64::from(e.relative_offset));
        let mut next_offset = base_offset;
        let mut scanned_to = start;
        for item in HeaderScan::new(&file, start, size_bytes) {
            let (position, header) = item.at(&segment.log_path)?;
            if !header.is_plausible() || header.base_offset < next_offset.max(base_offset) {
                break; // not what a clean close leaves: recover below
            }
            if header.max_timestamp > max_timestamp {
                max_timestamp = header.max_timestamp;
                offset_of_max = header.last_offset();
            }
            next_offset = header.last_offset() + 1;
            scanned_to = position + header.size_bytes;
        }
        if scanned_to != size_bytes {
            // The tail is not whole batches: the data is not what a clean close leaves.
            tracing::warn!(segment = %segment.log_path.display(), "segment ends in a partial batch; recovering it");
            segment.rebuild(config, true)?;
            return Ok(segment);
        }
        let max_relative = u32::try_from((next_offset - 1 - base_offset).max(0)).ok();
        if check_offset_entries(&offsets, size_bytes, max_relative).is_err()
            || check_time_entries(&times, max_relative).is_err()
        {
            tracing::warn!(segment = %segment.log_path.display(), "index points past the log; rebuilding it");
            segment.rebuild(config, false)?;
            return Ok(segment);
        }
        segment.next_offset = next_offset;
        segment.max_timestamp = max_timestamp;
        segment.offset_of_max_timestamp = offset_of_max;
        Ok(segment)
    }

    /// Recovery (Kafka's `LogSegment.recover`): reads every batch, validates its header
    /// and CRC, rebuilds both indexes, and truncates the file at the first invalid byte.
    /// Returns the bytes truncated.
    pub fn recover(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<(Self, u64)> {
        let mut segment = Self::existing(dir, base_offset, now_ms)?;
        let truncated = segment.rebuild(config, true)?;
        // Rebuilt by the log from the markers, with the producer state (Kafka's recover
        // resets it too).
        segment.txn_index.reset()?;
        Ok((segment, truncated))
    }

    /// Rescans the whole log file, rewriting both indexes. With `validate`, every batch's
    /// CRC is checked and the file is cut at the first invalid batch.
    fn rebuild(&mut self, config: &LogConfig, validate: bool) -> Result<u64> {
        let file = open_for_append(&self.log_path)?;
        let file_size = file.metadata().at(&self.log_path)?.len();
        let offset_index =
            Index::<OffsetEntry>::empty(self.index_path.clone(), config.max_offset_index_entries());
        let time_index = Index::<TimeEntry>::empty(
            self.time_index_path.clone(),
            config.max_time_index_entries(),
        );
        self.size_bytes = 0;
        self.next_offset = self.base_offset;
        self.max_timestamp = -1;
        self.offset_of_max_timestamp = self.base_offset;
        self.rolling_based_timestamp = None;
        let scan_file = file.try_clone().at(&self.log_path)?;
        let mut active = Active {
            file,
            offset_index,
            time_index,
            bytes_since_last_index_entry: 0,
        };
        let mut valid_bytes = 0u64;
        let mut buffer = Vec::new();
        self.rescan_saw_control_batch = false;
        for item in HeaderScan::new(&scan_file, 0, file_size) {
            let (position, header) = item.at(&self.log_path)?;
            if let Err(reason) =
                self.check_batch(&scan_file, position, &header, validate, &mut buffer)
            {
                tracing::warn!(segment = %self.log_path.display(), position, %reason, "invalid batch; truncating the segment here");
                break;
            }
            self.index_batch(
                &mut active,
                config,
                position,
                header.size_bytes,
                header.last_offset(),
                header.max_timestamp,
            );
            self.next_offset = header.last_offset() + 1;
            self.rescan_saw_control_batch |= header.is_control();
            valid_bytes = position + header.size_bytes;
            self.size_bytes = valid_bytes;
        }
        let truncated = file_size - valid_bytes;
        if truncated > 0 {
            active.file.set_len(valid_bytes).at(&self.log_path)?;
        }
        active.file.sync_data().at(&self.log_path)?;
        self.flushed_bytes = valid_bytes;
        active.time_index.push_if_newer(
            self.max_timestamp,
            self.offset_of_max_timestamp - self.base_offset,
        );
        active.offset_index.persist(true)?;
        active.time_index.persist(true)?;
        Ok(truncated)
    }

    fn check_batch(
        &self,
        file: &File,
        position: u64,
        header: &BatchHeader,
        validate: bool,
        buffer: &mut Vec<u8>,
    ) -> std::result::Result<(), String> {
        if header.magic != MAGIC_V2 {
            return Err(format!("magic {}", header.magic));
        }
        if header.size_bytes < RECORD_BATCH_OVERHEAD as u64 {
            return Err(format!(
                "batch size {} is below the header size",
                header.size_bytes
            ));
        }
        if header.base_offset < self.next_offset {
            return Err(format!(
                "base offset {} does not follow {}",
                header.base_offset, self.next_offset
            ));
        }
        if !offsets_fit(header.base_offset, header.last_offset_delta)
            || header.last_offset() - self.base_offset > i64::from(i32::MAX)
        {
            return Err(format!("last offset delta {}", header.last_offset_delta));
        }
        if !validate {
            return Ok(());
        }
        buffer.resize(header.size_bytes as usize, 0);
        file.read_exact_at(buffer, position)
            .map_err(|error| format!("read failed: {error}"))?;
        let batch = RecordBatch::new(Bytes::copy_from_slice(buffer)).map_err(|e| e.to_string())?;
        batch.validate_header().map_err(|e| e.to_string())
    }

    /// Updates the max timestamp and, every `index.interval.bytes`, adds index entries,
    /// exactly as Kafka does on append and on recovery (so both build the same index).
    fn index_batch(
        &mut self,
        active: &mut Active,
        config: &LogConfig,
        position: u64,
        size_bytes: u64,
        last_offset: i64,
        max_timestamp: i64,
    ) {
        if max_timestamp > self.max_timestamp {
            self.max_timestamp = max_timestamp;
            self.offset_of_max_timestamp = last_offset;
        }
        if self.rolling_based_timestamp.is_none() {
            self.rolling_based_timestamp = Some(max_timestamp);
        }
        if active.bytes_since_last_index_entry > u64::from(config.index_interval_bytes) {
            active.offset_index.push(OffsetEntry {
                relative_offset: (last_offset - self.base_offset) as u32,
                position: position as u32,
            });
            active.time_index.push_if_newer(
                self.max_timestamp,
                self.offset_of_max_timestamp - self.base_offset,
            );
            active.bytes_since_last_index_entry = 0;
        }
        active.bytes_since_last_index_entry += size_bytes;
    }

    /// Makes this segment the one appended to: opens its file and loads its indexes.
    pub fn activate(&mut self, config: &LogConfig) -> Result<()> {
        if self.active.is_some() {
            return Ok(());
        }
        let file = open_for_append(&self.log_path)?;
        let max_relative = u32::try_from((self.next_offset - 1 - self.base_offset).max(0)).ok();
        let size = self.size_bytes;
        let offset_index = Index::load(
            self.index_path.clone(),
            config.max_offset_index_entries(),
            |e| check_offset_entries(e, size, max_relative),
        )?;
        let time_index = Index::load(
            self.time_index_path.clone(),
            config.max_time_index_entries(),
            |e| check_time_entries(e, max_relative),
        )?;
        let (Some(offset_index), Some(time_index)) = (offset_index, time_index) else {
            drop(file);
            self.rebuild(config, false)?;
            return self.activate(config);
        };
        let last_entry_position = offset_index.last().map_or(0, |e| u64::from(e.position));
        let mut first_header = [0u8; RECORD_BATCH_OVERHEAD];
        if self.size_bytes >= RECORD_BATCH_OVERHEAD as u64 {
            file.read_exact_at(&mut first_header, 0)
                .at(&self.log_path)?;
            self.rolling_based_timestamp = Some(BatchHeader::parse(&first_header).max_timestamp);
        }
        self.active = Some(Active {
            file,
            offset_index,
            time_index,
            // Approximate: the bytes since the last entry's batch began.
            bytes_since_last_index_entry: self.size_bytes - last_entry_position,
        });
        Ok(())
    }

    /// Leaves the active role: adds the final time-index entry, writes both indexes and
    /// drops the handles. With `sync` (a clean close) the log and indexes are fsynced
    /// first; without it (a roll) the fsync is left to [`LogSegment::sync_files`], so an
    /// append that rolls does not wait for the disk (Kafka schedules that flush too).
    pub fn deactivate(&mut self, sync: bool) -> Result<()> {
        if sync {
            self.flush()?;
        }
        if let Some(mut active) = self.active.take() {
            active.time_index.push_if_newer(
                self.max_timestamp,
                self.offset_of_max_timestamp - self.base_offset,
            );
            active.offset_index.persist(sync)?;
            active.time_index.persist(sync)?;
        }
        Ok(())
    }

    /// fsyncs the files of a segment that was rolled without a flush.
    pub fn sync_files(&mut self) -> Result<()> {
        for path in [&self.log_path, &self.index_path, &self.time_index_path] {
            File::open(path).and_then(|f| f.sync_data()).at(path)?;
        }
        self.txn_index.sync()?;
        self.flushed_bytes = self.size_bytes;
        Ok(())
    }

    /// Loads the transaction index of an opened segment, checking it against the
    /// segment's offsets. Returns false when it failed the checks: it is then empty and
    /// the caller rebuilds it.
    pub fn open_txn_index(&mut self) -> Result<bool> {
        let (index, valid) = TransactionIndex::open(
            self.txn_index.path().to_path_buf(),
            self.base_offset,
            self.next_offset,
        )?;
        self.txn_index = index;
        Ok(valid)
    }

    /// Whether the last full rescan of the log file met a control batch.
    pub fn rescan_saw_control_batch(&self) -> bool {
        self.rescan_saw_control_batch
    }

    /// Empties the transaction index before it is rebuilt.
    pub fn reset_txn_index(&mut self) -> Result<()> {
        self.txn_index.reset()
    }

    /// Records a transaction aborted by a marker in this segment.
    pub fn append_aborted_txn(&mut self, txn: &AbortedTxn) -> Result<()> {
        debug_assert!(
            (self.base_offset..self.next_offset.max(self.base_offset + 1))
                .contains(&txn.last_offset),
            "the marker must be in this segment"
        );
        self.txn_index.append(txn)
    }

    /// fsyncs the transaction index entries written since the last sync.
    pub fn sync_txn_index(&mut self) -> Result<()> {
        self.txn_index.sync()
    }

    /// See [`TransactionIndex::collect`].
    pub fn collect_aborted_txns(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<(Vec<AbortedTxn>, bool)> {
        if self.txn_index.is_empty() {
            return Ok((Vec::new(), false));
        }
        self.txn_index.collect(fetch_offset, upper_bound_offset)
    }

    /// Every aborted transaction indexed in this segment.
    pub fn aborted_txns(&self) -> Result<Vec<AbortedTxn>> {
        self.txn_index.entries()
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }
    pub fn is_active(&self) -> bool {
        self.active.is_some()
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }

    /// The time retention compares with `retention.ms`: the largest timestamp, or the
    /// file's modification time when no batch carried one (Kafka's `largestTimestamp`).
    pub fn largest_timestamp(&self) -> i64 {
        if self.max_timestamp >= 0 {
            return self.max_timestamp;
        }
        std::fs::metadata(&self.log_path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64)
    }

    /// Kafka's `LogSegment.shouldRoll`, except that an empty segment never rolls.
    pub fn should_roll(
        &self,
        config: &LogConfig,
        append_bytes: u64,
        append_max_timestamp: i64,
        append_last_offset: i64,
        now_ms: i64,
    ) -> bool {
        if self.size_bytes == 0 {
            return false;
        }
        let waited_ms = match self.rolling_based_timestamp {
            Some(first) if first >= 0 => append_max_timestamp.saturating_sub(first),
            _ => now_ms.saturating_sub(self.created_ms),
        };
        let active = self.active.as_ref();
        self.size_bytes + append_bytes > u64::from(config.segment_bytes)
            || waited_ms > config.segment_ms - config.segment_jitter_ms
            || active.is_some_and(|a| a.offset_index.is_full() || a.time_index.is_full())
            || append_last_offset - self.base_offset > i64::from(i32::MAX)
    }

    /// Appends whole batches (offsets already assigned) with one write.
    pub fn append(
        &mut self,
        config: &LogConfig,
        bytes: &[u8],
        batches: &[AppendedBatch],
    ) -> Result<()> {
        let mut active = self
            .active
            .take()
            .expect("only the active segment is appended to");
        let start = self.size_bytes;
        if let Err(error) = active.file.write_all_at(bytes, start) {
            // Leave no partial batch behind for a reader; recovery would cut it anyway.
            let _ = active.file.set_len(start);
            self.active = Some(active);
            return Err(StorageError::Io {
                path: self.log_path.clone(),
                source: error,
            });
        }
        for batch in batches {
            debug_assert!(batch.last_offset >= self.next_offset, "offsets must grow");
            self.index_batch(
                &mut active,
                config,
                start + batch.offset_in_append,
                batch.size_bytes,
                batch.last_offset,
                batch.max_timestamp,
            );
            self.next_offset = batch.last_offset + 1;
        }
        self.size_bytes += bytes.len() as u64;
        self.active = Some(active);
        Ok(())
    }

    /// fsyncs the log file and writes (and fsyncs) new index entries.
    pub fn flush(&mut self) -> Result<()> {
        let Some(active) = self.active.as_mut() else {
            return Ok(());
        };
        if self.flushed_bytes != self.size_bytes {
            active.file.sync_data().at(&self.log_path)?;
            self.flushed_bytes = self.size_bytes;
        }
        active.offset_index.persist(true)?;
        active.time_index.persist(true)?;
        self.txn_index.sync()?;
        Ok(())
    }

    /// Runs `f` with a readable handle on the log file: the open one for the active
    /// segment, a fresh one (closed afterwards) for an inactive segment.
    fn with_file<T>(&self, f: impl FnOnce(&File) -> Result<T>) -> Result<T> {
        match &self.active {
            Some(active) => f(&active.file),
            None => f(&File::open(&self.log_path).at(&self.log_path)?),
        }
    }

    /// The largest offset-index entry at or below `offset`.
    fn index_floor(&self, offset: i64) -> Result<Option<OffsetEntry>> {
        let relative = (offset - self.base_offset).clamp(0, i64::from(u32::MAX)) as u32;
        let at_or_below = |e: &OffsetEntry| e.relative_offset <= relative;
        Ok(match &self.active {
            Some(active) => floor_in_memory(active.offset_index.entries(), at_or_below),
            None => floor_in_file::<OffsetEntry>(&self.index_path, at_or_below)?,
        })
    }

    /// The first batch whose last offset is at least `offset`, scanning from the index
    /// entry below it (Kafka's `translateOffset`). An entry (offset O, position P) says
    /// the batch at P starts at or before O, so every batch before P ends before O (Sluice
    /// and Kafka's recovery write O = that batch's last offset; Kafka's append path may
    /// write the last offset of a multi-batch append). An entry that breaks this (a
    /// damaged index) is not trusted and the scan starts from the first batch instead.
    fn translate_offset(&self, file: &File, offset: i64) -> Result<Option<(u64, BatchHeader)>> {
        if let Some(entry) = self.index_floor(offset)? {
            let start = u64::from(entry.position);
            let entry_offset = self.base_offset + i64::from(entry.relative_offset);
            match HeaderScan::new(file, start, self.size_bytes).next() {
                Some(Ok((_, header)))
                    if header.is_plausible()
                        && (self.base_offset..=entry_offset).contains(&header.base_offset) =>
                {
                    return self.scan_for(file, start, offset);
                }
                Some(Err(error)) => return Err(error).at(&self.log_path),
                _ => {
                    tracing::warn!(segment = %self.log_path.display(), position = start, "index entry for offset {entry_offset} points at no batch starting at or before it; scanning from the start");
                }
            }
        }
        self.scan_for(file, 0, offset)
    }

    fn scan_for(&self, file: &File, start: u64, offset: i64) -> Result<Option<(u64, BatchHeader)>> {
        for item in HeaderScan::new(file, start, self.size_bytes) {
            let (position, header) = item.at(&self.log_path)?;
            if header.last_offset() >= offset {
                return Ok(Some((position, header)));
            }
        }
        Ok(None)
    }

    /// Reads whole batches starting with the one that contains `start_offset`: as many
    /// as fit in `max_bytes` and start below `max_offset`, or, when the first batch alone
    /// exceeds `max_bytes` and `min_one_batch` is set, exactly that batch.
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u64,
        max_offset: i64,
        min_one_batch: bool,
    ) -> Result<Option<SegmentRead>> {
        self.with_file(|file| {
            let Some((position, first)) = self.translate_offset(file, start_offset)? else {
                return Ok(None);
            };
            if first.base_offset >= max_offset {
                return Ok(Some(SegmentRead {
                    records: Bytes::new(),
                    first_batch_base_offset: first.base_offset,
                }));
            }
            let available = self.size_bytes - position;
            let length = if first.size_bytes > max_bytes {
                if !min_one_batch {
                    return Ok(Some(SegmentRead {
                        records: Bytes::new(),
                        first_batch_base_offset: first.base_offset,
                    }));
                }
                first.size_bytes.min(available)
            } else {
                max_bytes.min(available)
            };
            let bytes =
                Bytes::from(read_unzeroed(file, position, length as usize).at(&self.log_path)?);
            // Keep whole batches below `max_offset`.
            let mut end = 0usize;
            while end + RECORD_BATCH_OVERHEAD <= bytes.len() {
                let header = BatchHeader::parse(&bytes[end..end + RECORD_BATCH_OVERHEAD]);
                if header.base_offset >= max_offset
                    || header.size_bytes == 0
                    || end as u64 + header.size_bytes > bytes.len() as u64
                {
                    break;
                }
                end += header.size_bytes as usize;
            }
            Ok(Some(SegmentRead {
                records: bytes.slice(..end),
                first_batch_base_offset: first.base_offset,
            }))
        })
    }

    /// The earliest record at or after `min_offset` whose timestamp is at least
    /// `timestamp` (Kafka's `findOffsetByTimestamp`): time index, offset index, then the
    /// records of the batches whose max timestamp reaches it.
    pub fn find_offset_by_timestamp(
        &self,
        timestamp: i64,
        min_offset: i64,
    ) -> Result<Option<(i64, i64)>> {
        let floor = match &self.active {
            Some(active) => {
                floor_in_memory(active.time_index.entries(), |e| e.timestamp <= timestamp)
            }
            None => {
                floor_in_file::<TimeEntry>(&self.time_index_path, |e| e.timestamp <= timestamp)?
            }
        };
        let from_offset = match floor {
            Some(entry) if self.time_entry_holds(&entry)? => {
                self.base_offset + i64::from(entry.relative_offset)
            }
            Some(entry) => {
                tracing::warn!(segment = %self.log_path.display(), ?entry, "time index entry disagrees with the log; scanning from the start");
                self.base_offset
            }
            None => self.base_offset,
        }
        .max(min_offset);
        self.scan_records(from_offset, |batch, record_offset, record_timestamp| {
            (batch.max_timestamp() >= timestamp
                && record_offset >= min_offset
                && record_timestamp >= timestamp)
                .then_some((record_offset, record_timestamp))
        })
    }

    /// Whether a time-index entry (timestamp T, offset O) agrees with the log: the batch
    /// holding O has max timestamp T (the entry records where the max first reached T).
    /// A damaged index that passed the checks at open fails this and is not trusted.
    fn time_entry_holds(&self, entry: &TimeEntry) -> Result<bool> {
        let offset = self.base_offset + i64::from(entry.relative_offset);
        self.with_file(|file| {
            Ok(self
                .translate_offset(file, offset)?
                .is_some_and(|(_, header)| {
                    header.base_offset <= offset && header.max_timestamp == entry.timestamp
                }))
        })
    }

    /// The offset and timestamp of the first record carrying the segment's max timestamp.
    pub fn find_max_timestamp_record(&self) -> Result<Option<(i64, i64)>> {
        if self.max_timestamp < 0 {
            return Ok(None);
        }
        let max = self.max_timestamp;
        self.scan_records(self.offset_of_max_timestamp, |_, offset, timestamp| {
            (timestamp == max).then_some((offset, timestamp))
        })
    }

    /// Visits the records of the batches from the one containing `from_offset` until
    /// `visit` returns a value.
    fn scan_records(
        &self,
        from_offset: i64,
        mut visit: impl FnMut(&RecordBatch, i64, i64) -> Option<(i64, i64)>,
    ) -> Result<Option<(i64, i64)>> {
        self.with_file(|file| {
            let Some((start, _)) = self.translate_offset(file, from_offset)? else {
                return Ok(None);
            };
            for item in HeaderScan::new(file, start, self.size_bytes) {
                let (position, header) = item.at(&self.log_path)?;
                let mut buffer = vec![0u8; header.size_bytes as usize];
                file.read_exact_at(&mut buffer, position)
                    .at(&self.log_path)?;
                let batch = RecordBatch::new(Bytes::from(buffer))?;
                for record in batch.records()? {
                    let record = record?;
                    let offset = batch.base_offset() + i64::from(record.offset_delta);
                    if let Some(found) = visit(&batch, offset, batch.record_timestamp(&record)) {
                        return Ok(Some(found));
                    }
                }
            }
            Ok(None)
        })
    }

    /// Removes every batch whose last offset is at or past `offset` (a batch containing
    /// `offset` goes whole). Returns the bytes removed. The segment becomes active.
    pub fn truncate_to(&mut self, config: &LogConfig, offset: i64) -> Result<u64> {
        self.activate(config)?;
        self.txn_index.truncate_to(offset)?;
        let Some((cut, _)) = self.with_file(|file| self.translate_offset(file, offset))? else {
            return Ok(0);
        };
        let base = self.base_offset;
        let active = self.active.as_mut().expect("activated above");
        active.file.set_len(cut).at(&self.log_path)?;
        active
            .offset_index
            .truncate_while(|e| u64::from(e.position) >= cut);
        let removed = self.size_bytes - cut;
        self.size_bytes = cut;
        self.flushed_bytes = self.flushed_bytes.min(cut);
        // The new end and max timestamp: headers after the last remaining index entry,
        // and the time index up to there.
        let scan_from = active
            .offset_index
            .last()
            .map_or(0, |e| u64::from(e.position));
        let mut next_offset = base;
        let mut tail_max = (-1i64, base);
        for item in HeaderScan::new(&active.file, scan_from, cut) {
            let (_, header) = item.at(&self.log_path)?;
            next_offset = header.last_offset() + 1;
            if header.max_timestamp > tail_max.0 {
                tail_max = (header.max_timestamp, header.last_offset());
            }
        }
        active
            .time_index
            .truncate_while(|e| base + i64::from(e.relative_offset) >= next_offset);
        let indexed_max = active.time_index.last().map_or((-1, base), |e| {
            (e.timestamp, base + i64::from(e.relative_offset))
        });
        (self.max_timestamp, self.offset_of_max_timestamp) = if tail_max.0 > indexed_max.0 {
            tail_max
        } else {
            indexed_max
        };
        self.next_offset = next_offset;
        if cut == 0 {
            self.rolling_based_timestamp = None;
        }
        active.bytes_since_last_index_entry = 0;
        active.offset_index.persist(true)?;
        active.time_index.persist(true)?;
        active.file.sync_data().at(&self.log_path)?;
        Ok(removed)
    }

    /// Deletes the segment's files.
    pub fn delete(self) -> Result<()> {
        Self::delete_files(
            self.log_path.parent().unwrap_or(Path::new(".")),
            self.base_offset,
        )
    }

    /// Deletes the files of the segment at `base_offset` in `dir`, without reading them
    /// (they may be damaged).
    pub fn delete_files(dir: &Path, base_offset: i64) -> Result<()> {
        let (log_path, index_path, time_index_path) = Self::paths(dir, base_offset);
        let txn_index_path = Self::txn_index_file(dir, base_offset);
        for path in [&log_path, &index_path, &time_index_path, &txn_index_path] {
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
}

/// Reads `length` bytes at `position` into a new buffer without zeroing it first, with
/// `pread` into the buffer's spare capacity: one system call for the whole read (more
/// only when the kernel returns less), no file offset moved, so the segment's own
/// handle serves every reader at once. Every read needs a buffer of its own because the
/// bytes are handed out as shared `Bytes`.
fn read_unzeroed(file: &File, position: u64, length: usize) -> std::io::Result<Vec<u8>> {
    use std::os::fd::AsRawFd;
    let mut buffer: Vec<u8> = Vec::with_capacity(length);
    while buffer.len() < length {
        let filled = buffer.len();
        let offset = libc::off_t::try_from(position + filled as u64).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "read offset overflows")
        })?;
        // SAFETY: the destination is the vector's spare capacity, `length - filled`
        // bytes starting right after its initialized part; pread writes at most that
        // many bytes there and reports how many it wrote.
        let read = unsafe {
            libc::pread(
                file.as_raw_fd(),
                buffer.as_mut_ptr().add(filled).cast(),
                length - filled,
                offset,
            )
        };
        match read {
            0 => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("read {filled} of {length} bytes at {position}"),
                ));
            }
            n if n > 0 => {
                // SAFETY: pread initialized `n` more bytes after the first `filled`.
                unsafe { buffer.set_len(filled + n as usize) };
            }
            _ => {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
    Ok(buffer)
}

/// Walks batch headers from `position` to `end` with one 61-byte `pread` each. Stops at
/// the end or at a header that does not fit (a partial tail).
pub(crate) struct HeaderScan<'a> {
    file: &'a File,
    position: u64,
    end: u64,
}

impl<'a> HeaderScan<'a> {
    pub fn new(file: &'a File, position: u64, end: u64) -> Self {
        HeaderScan {
            file,
            position,
            end,
        }
    }
}

impl Iterator for HeaderScan<'_> {
    type Item = std::io::Result<(u64, BatchHeader)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.position + RECORD_BATCH_OVERHEAD as u64 > self.end {
            return None;
        }
        let mut buffer = [0u8; RECORD_BATCH_OVERHEAD];
        if let Err(error) = self.file.read_exact_at(&mut buffer, self.position) {
            self.position = self.end;
            return Some(Err(error));
        }
        let header = BatchHeader::parse(&buffer);
        if header.size_bytes < RECORD_BATCH_OVERHEAD as u64
            || self.position + header.size_bytes > self.end
        {
            self.position = self.end;
            return None;
        }
        let position = self.position;
        self.position += header.size_bytes;
        Some(Ok((position, header)))
    }
}
