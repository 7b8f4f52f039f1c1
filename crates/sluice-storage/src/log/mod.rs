//! The log of one partition (Kafka's `UnifiedLog` + `LocalLog`): an ordered set of
//! segments in the directory `<topic>-<partition>/`, the offsets that bound it, its
//! leader-epoch cache and its flush state.
//!
//! Offsets: `log_start_offset` ≤ every readable offset < `log_end_offset`. Everything
//! below `recovery_point` is fsynced; on an unclean start the segments from the one
//! holding the recovery point onward are recovered (validated, re-indexed, cut at the
//! first invalid byte).
//!
//! Durability promised by [`Log::append_as_leader`]: when it returns, the bytes are in
//! the operating system's page cache: they survive the process being killed (SIGKILL),
//! not a machine crash. They survive a machine crash once [`Log::flush`] has returned (or
//! `flush.messages` / `flush.ms` triggered it): [`LogAppendInfo::flushed`] says which.
//! Kafka makes the same promise and relies on replication for the rest.
//!
//! Concurrency: appends, truncation and retention take `&mut self`; reads and lookups
//! take `&self`. The broker serializes them per partition.
//!
//! Producer snapshots (Kafka's `{offset:020}.snapshot`, format in
//! [`crate::producer_state`]):
//! - written at each roll, as of the new segment's base offset (not fsynced then: the
//!   deferred flush of the rolled segment fsyncs it), at a clean [`Log::close`] as of the
//!   log end offset, and after an open or truncation had to replay batches, as of the
//!   log end offset — each only when its offset is past the newest snapshot's;
//! - read on open and on truncation: the newest snapshot at or below the log end offset
//!   whose CRC and length hold (a corrupt one is logged, deleted, and the one before it
//!   tried; with none the state starts empty at the log start offset), then the batches
//!   from its offset to the log end are replayed;
//! - deleted when they fall below the log start offset (retention, DeleteRecords), above
//!   the log end (truncation), with every segment (a full truncation), and on open when
//!   they match no segment base offset — except the newest such, above the last segment
//!   base, which a clean close wrote (Kafka's `removeStraySnapshots`). So a partition
//!   keeps at most one snapshot per segment plus one.
//!
//! Transactions: the producer state tracks each producer's ongoing transaction (see
//! [`crate::producer_state`]); [`Log::first_unstable_offset`] is the first offset of the
//! earliest one, which bounds the last stable offset the broker serves to read_committed
//! consumers. [`Log::append_control_marker`] appends a commit or abort marker
//! ([`crate::end_txn_marker`]); an abort adds an entry to the `.txnindex` of the segment
//! holding the marker ([`crate::transaction_index`]), which
//! [`Log::collect_aborted_transactions`] reads for a read_committed fetch. Followers and
//! replays after a restart apply markers the same way. The transaction index goes with
//! its segment (retention, DeleteRecords, a full truncation), loses the entries at or
//! after a truncation offset, is fsynced with its segment, and is rebuilt on open for
//! every recovered segment holding a marker, and for every segment after it, as for one
//! whose index fails its checks:
//! the producer state is then rebuilt from the newest snapshot at or below the first such
//! segment, and each abort marker replayed from there is indexed again (Kafka's
//! `LogSegment.recover` with the producer state).
//!
//! Opening a log, with the recovery after an unclean shutdown, is the `loader` module's
//! (Kafka's `LogLoader`); time and size retention and DeleteRecords are in `retention`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use sluice_protocol::TimestampType;
use sluice_protocol::record_batch::{
    self, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, batch_size_at, set_base_offset, set_log_append_time,
    set_partition_leader_epoch,
};

use crate::checkpoint::{self, TopicId};
use crate::cleaner::{self, CleanPlan, CleanStats, Cleanable, Cleaned, PlannedSegment};
use crate::config::LogConfig;
use crate::end_txn_marker;
pub use crate::end_txn_marker::TxnMarker;
use crate::error::{IoContext, Result, StorageError};
use crate::leader_epoch::LeaderEpochCache;
use crate::producer_state::{
    self, AppendOrigin, BatchMetadata, CompletedTxn, CorruptSnapshot, ProducerAppend,
    ProducerStateManager, SNAPSHOT_SUFFIX, SequenceCheck,
};
use crate::segment::{AppendedBatch, BatchHeader, LogSegment, segment_file_name};
pub use crate::transaction_index::AbortedTxn;

mod loader;
mod retention;

use loader::LogLoader;

/// A stored batch's producer metadata.
fn producer_batch(header: &BatchHeader) -> BatchMetadata {
    BatchMetadata {
        first_sequence: header.base_sequence,
        last_sequence: producer_state::last_sequence(
            header.base_sequence,
            header.last_offset_delta,
        ),
        first_offset: header.base_offset,
        last_offset: header.last_offset(),
        timestamp: header.max_timestamp,
    }
}

/// File name of the topic id record in a partition directory.
pub const PARTITION_METADATA: &str = "partition.metadata";

/// How to open a log: what the log directory's checkpoints say about it.
#[derive(Debug, Clone)]
pub struct LogOpenOptions {
    /// From `recovery-point-offset-checkpoint` (0 when absent: recover everything).
    pub recovery_point: i64,
    /// From `log-start-offset-checkpoint` (0 when absent).
    pub log_start_offset: i64,
    /// Whether the log directory held the clean-shutdown marker.
    pub clean_shutdown: bool,
    /// The topic id to record in (or check against) `partition.metadata`.
    pub topic_id: Option<TopicId>,
    pub now_ms: i64,
}

impl Default for LogOpenOptions {
    fn default() -> Self {
        LogOpenOptions {
            recovery_point: 0,
            log_start_offset: 0,
            clean_shutdown: false,
            topic_id: None,
            now_ms: now_ms(),
        }
    }
}

pub use crate::clock::now_ms;

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppendInfo {
    pub first_offset: i64,
    pub last_offset: i64,
    /// Largest timestamp appended, and the offset of the batch that carried it.
    pub max_timestamp: i64,
    pub offset_of_max_timestamp: i64,
    /// The broker's time for LogAppendTime topics; -1 under CreateTime (the Produce
    /// response's `log_append_time_ms`).
    pub log_append_time_ms: i64,
    pub record_count: i64,
    pub size_bytes: u64,
    /// Whether the records were fsynced before the append returned.
    pub flushed: bool,
    /// The batch was a producer's retry of one already appended: nothing was written and
    /// the offsets are the original batch's.
    pub duplicate: bool,
}

/// What a read returns: whole batches, as stored, in one shared buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchData {
    pub records: Bytes,
    /// Base offset of the first batch returned (≤ the offset asked for), or the offset
    /// asked for when nothing is returned.
    pub first_batch_offset: i64,
}

/// A segment as `sluice dump-log` and tests see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    pub base_offset: i64,
    pub next_offset: i64,
    pub size_bytes: u64,
    pub max_timestamp: i64,
    pub path: PathBuf,
    pub active: bool,
}

#[derive(Debug)]
pub struct Log {
    dir: PathBuf,
    config: LogConfig,
    segments: BTreeMap<i64, LogSegment>,
    log_start_offset: i64,
    recovery_point: i64,
    leader_epochs: LeaderEpochCache,
    topic_id: Option<TopicId>,
    unflushed_records: i64,
    last_flush_ms: i64,
    /// Segments rolled but not yet fsynced (base offsets); the recovery point stays
    /// below them until [`Log::flush_rolled_segments`] or [`Log::flush`].
    rolled_unflushed: Vec<i64>,
    /// Idempotent producers' recent batches.
    producers: ProducerStateManager,
    /// Offsets of the producer snapshot files in `dir`.
    snapshots: BTreeSet<i64>,
    /// Snapshots written at roll and not yet fsynced.
    unflushed_snapshots: Vec<i64>,
    /// The latest delete horizon the last cleaner pass wrote or kept (KIP-534's
    /// `latestDeleteHorizon`): past it, a pass is due even without dirty bytes. Not
    /// persisted: after a restart, the next pass over new dirty bytes finds them again.
    latest_delete_horizon: Option<i64>,
}

impl Log {
    /// Opens (or creates) the log in `dir`. On an unclean start, recovers every segment
    /// from the one holding the recovery point; a recovered segment cut short removes the
    /// segments after it, as their offsets no longer follow.
    pub fn open(dir: &Path, config: LogConfig, options: LogOpenOptions) -> Result<Log> {
        LogLoader::new(dir, config, options).load()
    }

    fn snapshot_path(&self, offset: i64) -> PathBuf {
        self.dir.join(segment_file_name(offset, SNAPSHOT_SUFFIX))
    }

    /// Offsets of the producer snapshot files, oldest first.
    pub fn producer_snapshot_offsets(&self) -> Vec<i64> {
        self.snapshots.iter().copied().collect()
    }

    /// Whether a snapshot at `offset` would be newer than every snapshot kept (Kafka
    /// takes one only past the last, counting from the log start offset).
    fn snapshot_due(&self, offset: i64) -> bool {
        offset
            > self
                .snapshots
                .last()
                .copied()
                .unwrap_or(self.log_start_offset)
    }

    /// Writes the producer state as the snapshot at `offset`. Without `sync` it is
    /// fsynced by the next [`Log::flush_rolled_segments`].
    fn write_producer_snapshot(&mut self, offset: i64, sync: bool) -> Result<()> {
        let path = self.snapshot_path(offset);
        let bytes = self.producers.to_snapshot();
        {
            let mut file = std::fs::File::create(&path).at(&path)?;
            file.write_all(&bytes).at(&path)?;
            if sync {
                file.sync_all().at(&path)?;
            }
        }
        if sync {
            checkpoint::sync_dir(&self.dir)?;
        } else {
            self.unflushed_snapshots.push(offset);
        }
        self.snapshots.insert(offset);
        tracing::debug!(path = %path.display(), producers = self.producers.len(), "wrote a producer snapshot");
        Ok(())
    }

    fn delete_snapshot(&mut self, offset: i64) -> Result<()> {
        self.snapshots.remove(&offset);
        let path = self.snapshot_path(offset);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StorageError::Io { path, source }),
        }
    }

    /// Deletes the snapshots for which `doomed` holds.
    fn delete_snapshots_where(&mut self, doomed: impl Fn(i64) -> bool) -> Result<()> {
        let offsets: Vec<i64> = self
            .snapshots
            .iter()
            .copied()
            .filter(|o| doomed(*o))
            .collect();
        for offset in offsets {
            self.delete_snapshot(offset)?;
        }
        Ok(())
    }

    /// Rebuilds the producer state: the newest usable snapshot at or below the log end
    /// offset, then the batches after it (Kafka's `rebuildProducerState`). Snapshots out
    /// of the log's range, and corrupt ones, are deleted. With `take_snapshot`, a
    /// snapshot of the result is written at the log end when batches were replayed.
    ///
    /// With `txn_index_from`, the snapshot is taken at or below that offset (newer ones
    /// are kept), and every abort marker replayed at or after it is added to its
    /// segment's transaction index (emptied by the caller).
    fn rebuild_producer_state(
        &mut self,
        now_ms: i64,
        take_snapshot: bool,
        txn_index_from: Option<i64>,
    ) -> Result<()> {
        let (start, end) = (self.log_start_offset, self.log_end_offset());
        self.delete_snapshots_where(|offset| offset > end || offset < start)?;
        self.producers.clear();
        let limit = txn_index_from.map_or(end, |from| from.min(end));
        let mut loaded = None;
        while let Some(offset) = self.snapshots.range(..=limit).next_back().copied() {
            let path = self.snapshot_path(offset);
            let decoded = match std::fs::read(&path) {
                Ok(bytes) => producer_state::decode_snapshot(&bytes),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    Err(CorruptSnapshot("the file is gone".to_string()))
                }
                Err(source) => return Err(StorageError::Io { path, source }),
            };
            match decoded {
                Ok(entries) => {
                    self.producers.load_snapshot(
                        &entries,
                        now_ms,
                        self.config.producer_id_expiration_ms,
                    );
                    loaded = Some(offset);
                    break;
                }
                Err(error) => {
                    tracing::warn!(path = %path.display(), %error, "skipping a corrupt producer snapshot");
                    self.delete_snapshot(offset)?;
                }
            }
        }
        let from = loaded.unwrap_or(start).max(start);
        tracing::debug!(dir = %self.dir.display(), snapshot = ?loaded, from, to = end, "rebuilding producer state");
        self.replay_producer_batches(from, txn_index_from)?;
        if take_snapshot && end > from && self.snapshot_due(end) {
            self.write_producer_snapshot(end, true)?;
        }
        Ok(())
    }

    /// Applies the producer batches from `from` to the log end to the state (Kafka's
    /// `loadProducersFromRecords`, nothing refused); aborts whose marker is at or after
    /// `txn_index_from` are indexed.
    fn replay_producer_batches(&mut self, from: i64, txn_index_from: Option<i64>) -> Result<()> {
        let mut offset = from;
        let end = self.log_end_offset();
        while offset < end {
            let data = self.read(offset, 1 << 20, None, true)?;
            let bytes = &data.records[..];
            let mut position = 0usize;
            let mut advanced = false;
            while position + RECORD_BATCH_OVERHEAD <= bytes.len() {
                let header = BatchHeader::parse(&bytes[position..position + RECORD_BATCH_OVERHEAD]);
                if header.size_bytes == 0 || position + header.size_bytes as usize > bytes.len() {
                    break;
                }
                // The batch holding `from` may begin before it; one wholly before it is
                // in the snapshot already.
                if header.last_offset() >= from && header.producer_id >= 0 {
                    let batch = &bytes[position..position + header.size_bytes as usize];
                    let mut append = self.producers.begin_append(AppendOrigin::Replication);
                    self.check_producer_batch(&mut append, batch, &header)?;
                    let completed = self.producers.complete_append(append);
                    if let Some(index_from) = txn_index_from {
                        let to_index: Vec<CompletedTxn> = completed
                            .into_iter()
                            .filter(|txn| txn.last_offset >= index_from)
                            .collect();
                        self.index_aborted_txns(&to_index)?;
                    }
                }
                offset = header.last_offset() + 1;
                position += header.size_bytes as usize;
                advanced = true;
            }
            if !advanced {
                break;
            }
        }
        Ok(())
    }

    /// The idempotent producers' state (what the leader deduplicates with).
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }

    /// Checks one batch's producer effect into `append`: an end-transaction marker for a
    /// control batch, a data batch otherwise. Clients may not write control batches.
    fn check_producer_batch(
        &self,
        append: &mut ProducerAppend,
        batch: &[u8],
        header: &BatchHeader,
    ) -> Result<()> {
        if header.producer_id < 0 {
            return Ok(());
        }
        if !header.is_control() {
            self.producers.append_data(
                append,
                header.producer_id,
                header.producer_epoch,
                producer_batch(header),
                header.is_transactional(),
            )?;
            return Ok(());
        }
        if append.origin() == AppendOrigin::Client {
            return Err(record_batch::BatchError::InvalidRecord {
                index: 0,
                reason: "clients may not write control batches".to_string(),
            }
            .into());
        }
        match end_txn_marker::read_marker(batch) {
            Ok(Some((marker, timestamp))) => self.producers.append_marker(
                append,
                header.producer_id,
                header.producer_epoch,
                marker,
                header.base_offset,
                timestamp,
            )?,
            Ok(None) => {}
            Err(error) if append.origin() == AppendOrigin::Replication => {
                tracing::warn!(dir = %self.dir.display(), offset = header.base_offset, %error, "skipping an unreadable control batch");
            }
            Err(error) => return Err(error.into()),
        }
        Ok(())
    }

    /// Adds the aborted ones of `completed` to the transaction index of the segment
    /// holding each marker.
    fn index_aborted_txns(&mut self, completed: &[CompletedTxn]) -> Result<()> {
        for txn in completed.iter().filter(|txn| txn.aborted) {
            let aborted = AbortedTxn {
                producer_id: txn.producer_id,
                first_offset: txn.first_offset,
                last_offset: txn.last_offset,
                last_stable_offset: txn.last_stable_offset,
            };
            if let Some((_, segment)) = self.segments.range_mut(..=txn.last_offset).next_back() {
                segment.append_aborted_txn(&aborted)?;
            }
        }
        Ok(())
    }

    /// The first offset of the earliest ongoing transaction (Kafka's
    /// `firstUnstableOffset`); `None` when none is ongoing. The broker's last stable
    /// offset is the smaller of this and the high watermark.
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.producers.first_unstable_offset()
    }

    /// The aborted transactions a read_committed fetch of `[start_offset,
    /// upper_bound_offset)` must return: every one whose marker is at or after
    /// `start_offset` and whose first offset is before `upper_bound_offset`, read from
    /// the transaction indexes of the segment holding `start_offset` and the later ones,
    /// until an entry's last stable offset reaches the upper bound (Kafka's
    /// `collectAbortedTransactions` / `addAbortedTransactions`). Ordered by marker.
    pub fn collect_aborted_transactions(
        &self,
        start_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<Vec<AbortedTxn>> {
        let floor = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(i64::MIN, |(base, _)| *base);
        let mut aborted = Vec::new();
        for segment in self.segments.range(floor..).map(|(_, s)| s) {
            let (found, complete) =
                segment.collect_aborted_txns(start_offset, upper_bound_offset)?;
            aborted.extend(found);
            if complete {
                break;
            }
        }
        Ok(aborted)
    }

    /// The aborted transactions in the transaction index of the segment at
    /// `base_offset` (empty when there is no such segment), for tools and tests.
    pub fn segment_aborted_transactions(&self, base_offset: i64) -> Result<Vec<AbortedTxn>> {
        match self.segments.get(&base_offset) {
            Some(segment) => segment.aborted_txns(),
            None => Ok(Vec::new()),
        }
    }

    fn check_invariants(&self) {
        debug_assert!(self.log_start_offset <= self.log_end_offset());
        debug_assert!(self.recovery_point <= self.log_end_offset());
        debug_assert!(
            self.segments
                .values()
                .zip(self.segments.values().skip(1))
                .all(|(a, b)| a.next_offset() <= b.base_offset()),
            "segments must not overlap"
        );
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    /// Replaces the configuration (a topic config change); applies from the next append.
    pub fn set_config(&mut self, config: LogConfig) -> Result<()> {
        config.validate()?;
        self.config = config;
        Ok(())
    }
    pub fn topic_id(&self) -> Option<TopicId> {
        self.topic_id
    }
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }
    pub fn size_bytes(&self) -> u64 {
        self.segments.values().map(LogSegment::size_bytes).sum()
    }
    pub fn leader_epochs(&self) -> &LeaderEpochCache {
        &self.leader_epochs
    }

    pub fn segments(&self) -> Vec<SegmentInfo> {
        self.segments
            .values()
            .map(|s| SegmentInfo {
                base_offset: s.base_offset(),
                next_offset: s.next_offset(),
                size_bytes: s.size_bytes(),
                max_timestamp: s.max_timestamp(),
                path: s.log_path().to_path_buf(),
                active: s.is_active(),
            })
            .collect()
    }

    fn active(&self) -> &LogSegment {
        self.segments
            .values()
            .next_back()
            .expect("a log always has a segment")
    }

    fn active_mut(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a log always has a segment")
    }

    /// Appends producer batches as the leader: assigns consecutive offsets from the log
    /// end and the leader epoch in place (and, for LogAppendTime topics, the timestamp).
    /// `records` must be validated batches (the broker runs
    /// [`RecordBatch::validate`]); this re-checks each header and CRC. Producer epochs,
    /// sequences and transaction state are checked before anything is written.
    pub fn append_as_leader(
        &mut self,
        records: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo> {
        self.append_as(records, leader_epoch, now_ms, AppendOrigin::Client)
    }

    /// Appends batches the broker writes itself as the leader, such as a group
    /// coordinator's transactional offset commits (Kafka's `AppendOrigin.COORDINATOR`):
    /// as [`Log::append_as_leader`], but sequences are not checked (these batches have
    /// base sequence -1) and control batches are allowed; producer epochs and
    /// transactions are tracked and checked as for a client.
    pub fn append_as_coordinator(
        &mut self,
        records: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo> {
        self.append_as(records, leader_epoch, now_ms, AppendOrigin::Coordinator)
    }

    /// Appends a transaction marker as the leader (one entry of WriteTxnMarkers): a
    /// control batch timestamped `now_ms`, with the producer's id and epoch, base
    /// sequence -1. It ends the producer's transaction; an abort is added to the
    /// transaction index. Refused when the producer epoch is older than the producer's
    /// ([`SequenceError::StaleEpoch`], INVALID_PRODUCER_EPOCH) or the coordinator epoch
    /// older than its last marker's ([`SequenceError::TransactionCoordinatorFenced`],
    /// TRANSACTION_COORDINATOR_FENCED). A marker for a producer with no ongoing
    /// transaction is appended and ends nothing.
    ///
    /// [`SequenceError::StaleEpoch`]: crate::producer_state::SequenceError::StaleEpoch
    /// [`SequenceError::TransactionCoordinatorFenced`]: crate::producer_state::SequenceError::TransactionCoordinatorFenced
    pub fn append_control_marker(
        &mut self,
        marker: &TxnMarker,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<LogAppendInfo> {
        let mut batch = end_txn_marker::control_batch(marker, now_ms).to_vec();
        self.append_as(&mut batch, leader_epoch, now_ms, AppendOrigin::Coordinator)
    }

    fn append_as(
        &mut self,
        records: &mut [u8],
        leader_epoch: i32,
        now_ms: i64,
        origin: AppendOrigin,
    ) -> Result<LogAppendInfo> {
        let log_append_time_ms = match self.config.message_timestamp_type {
            TimestampType::LogAppendTime => now_ms,
            TimestampType::CreateTime => -1,
        };
        let mut next_offset = self.log_end_offset();
        let first_offset = next_offset;
        let mut position = 0usize;
        let mut producer_append = self.producers.begin_append(origin);
        let total = records.len();
        while position < total {
            let size = self.check_batch_at(records, position, origin)?;
            let batch = &mut records[position..position + size];
            let header = BatchHeader::parse(batch);
            let last_offset_delta = header.last_offset_delta;
            // An idempotent producer's batch: a retry is answered with the original
            // offsets (when it is the whole append, as producers send it), a gap or a
            // stale epoch is refused.
            if position == 0 && origin == AppendOrigin::Client {
                let first_sequence = header.base_sequence;
                let last = producer_state::last_sequence(first_sequence, last_offset_delta);
                if let SequenceCheck::Duplicate(original) = self.producers.check(
                    header.producer_id,
                    header.producer_epoch,
                    first_sequence,
                    last,
                )? && size == total
                {
                    return Ok(LogAppendInfo {
                        first_offset: original.first_offset,
                        last_offset: original.last_offset,
                        max_timestamp: -1,
                        offset_of_max_timestamp: original.first_offset,
                        log_append_time_ms,
                        record_count: 0,
                        size_bytes: 0,
                        flushed: false,
                        duplicate: true,
                    });
                }
            }
            if !record_batch::offsets_fit(next_offset, last_offset_delta) {
                return Err(record_batch::BatchError::OffsetOverflow {
                    base_offset: next_offset,
                    last_offset_delta,
                }
                .into());
            }
            set_base_offset(batch, next_offset);
            set_partition_leader_epoch(batch, leader_epoch);
            if log_append_time_ms >= 0 {
                set_log_append_time(batch, log_append_time_ms);
            }
            let mut placed = header;
            placed.base_offset = next_offset;
            if log_append_time_ms >= 0 {
                placed.max_timestamp = log_append_time_ms;
            }
            self.check_producer_batch(&mut producer_append, batch, &placed)?;
            next_offset += i64::from(last_offset_delta) + 1;
            position += size;
        }
        let info = self.append_batches(records, first_offset, log_append_time_ms, now_ms)?;
        debug_assert_eq!(info.last_offset + 1, next_offset);
        let completed = self.producers.complete_append(producer_append);
        self.index_aborted_txns(&completed)?;
        if leader_epoch >= 0 {
            self.leader_epochs.assign(leader_epoch, first_offset)?;
        }
        Ok(info)
    }

    /// Appends batches replicated from a leader, keeping their offsets and epochs. The
    /// first must start at the log end offset or later (a gap means the leader's log
    /// start moved past ours).
    pub fn append_as_follower(&mut self, records: &[u8], now_ms: i64) -> Result<LogAppendInfo> {
        let mut position = 0usize;
        let mut expected = self.log_end_offset();
        let mut first_offset = None;
        let mut epochs = Vec::new();
        let mut producer_append = self.producers.begin_append(AppendOrigin::Replication);
        while position < records.len() {
            let size = self.check_batch_at(records, position, AppendOrigin::Replication)?;
            let header = BatchHeader::parse(&records[position..position + RECORD_BATCH_OVERHEAD]);
            if !header.is_plausible() {
                return Err(record_batch::BatchError::OffsetOverflow {
                    base_offset: header.base_offset,
                    last_offset_delta: header.last_offset_delta,
                }
                .into());
            }
            if header.base_offset < expected {
                return Err(StorageError::UnexpectedAppendOffset {
                    first_offset: header.base_offset,
                    log_end_offset: expected,
                });
            }
            first_offset.get_or_insert(header.base_offset);
            self.check_producer_batch(
                &mut producer_append,
                &records[position..position + size],
                &header,
            )?;
            if header.partition_leader_epoch >= 0 {
                epochs.push((header.partition_leader_epoch, header.base_offset));
            }
            expected = header.last_offset() + 1;
            position += size;
        }
        let first_offset = first_offset.ok_or(record_batch::BatchError::Truncated {
            needed: RECORD_BATCH_OVERHEAD,
            available: 0,
        })?;
        let info = self.append_batches(records, first_offset, -1, now_ms)?;
        let completed = self.producers.complete_append(producer_append);
        self.index_aborted_txns(&completed)?;
        for (epoch, start_offset) in epochs {
            self.leader_epochs.assign(epoch, start_offset)?;
        }
        Ok(info)
    }

    /// Checks the batch at `position` and returns its size. Both origins get the header
    /// checks. A producer's batch (`Client`) must fit `max.message.bytes` and had its
    /// CRC checked by the broker's `RecordBatch::validate`, so only debug builds repeat
    /// that (a second pass costs a tenth of the append, docs/benchmarks.md). A replicated
    /// batch is CRC-checked here, as nothing else checked it, and is not held to
    /// `max.message.bytes`: the leader already accepted it (Kafka's
    /// `ignoreRecordSize` for followers; the fetch size bounds it).
    fn check_batch_at(
        &self,
        records: &[u8],
        position: usize,
        origin: AppendOrigin,
    ) -> Result<usize> {
        let rest = &records[position..];
        let size = batch_size_at(rest).ok_or(record_batch::BatchError::Truncated {
            needed: LOG_OVERHEAD,
            available: rest.len(),
        })?;
        if origin != AppendOrigin::Replication && size > self.config.max_message_bytes as usize {
            return Err(StorageError::BatchTooLarge {
                size_bytes: size,
                max_bytes: self.config.max_message_bytes as usize,
            });
        }
        if size > rest.len() {
            return Err(record_batch::BatchError::Truncated {
                needed: size,
                available: rest.len(),
            }
            .into());
        }
        let check_crc = match origin {
            AppendOrigin::Client | AppendOrigin::Coordinator => cfg!(debug_assertions),
            AppendOrigin::Replication => true,
        };
        BorrowedBatch(&rest[..size]).check(check_crc)?;
        Ok(size)
    }

    /// Writes batches whose offsets are set, rolling first when the active segment
    /// cannot take them.
    fn append_batches(
        &mut self,
        records: &[u8],
        first_offset: i64,
        log_append_time_ms: i64,
        now_ms: i64,
    ) -> Result<LogAppendInfo> {
        let mut batches = Vec::new();
        let mut position = 0usize;
        let mut record_count = 0i64;
        let mut max_timestamp = -1i64;
        let mut offset_of_max_timestamp = first_offset;
        while position < records.len() {
            let header = BatchHeader::parse(&records[position..position + RECORD_BATCH_OVERHEAD]);
            record_count += i64::from(header.record_count);
            if header.max_timestamp > max_timestamp {
                max_timestamp = header.max_timestamp;
                offset_of_max_timestamp = header.last_offset();
            }
            batches.push(AppendedBatch {
                offset_in_append: position as u64,
                size_bytes: header.size_bytes,
                last_offset: header.last_offset(),
                max_timestamp: header.max_timestamp,
            });
            position += header.size_bytes as usize;
        }
        let Some(last) = batches.last().copied() else {
            return Err(record_batch::BatchError::Truncated {
                needed: RECORD_BATCH_OVERHEAD,
                available: 0,
            }
            .into());
        };
        if self.active().should_roll(
            &self.config,
            records.len() as u64,
            max_timestamp,
            last.last_offset,
            now_ms,
        ) {
            self.roll(first_offset, now_ms)?;
        }
        let config = self.config.clone();
        self.active_mut().append(&config, records, &batches)?;
        self.unflushed_records += record_count;
        let flushed = self.unflushed_records >= self.config.flush_messages;
        if flushed {
            self.flush_at(now_ms)?;
        }
        self.check_invariants();
        Ok(LogAppendInfo {
            first_offset,
            last_offset: last.last_offset,
            max_timestamp,
            offset_of_max_timestamp,
            log_append_time_ms,
            record_count,
            size_bytes: records.len() as u64,
            flushed,
            duplicate: false,
        })
    }

    /// Closes the active segment and starts a new one at the log end offset (Kafka's
    /// `roll`). An empty active segment is kept rather than rolled.
    pub fn roll(&mut self, new_base_offset: i64, now_ms: i64) -> Result<()> {
        let new_base = new_base_offset.max(self.log_end_offset());
        if self.active().size_bytes() == 0 {
            return Ok(());
        }
        let old_base = self.active().base_offset();
        self.active_mut().deactivate(false)?;
        self.rolled_unflushed.push(old_base);
        let segment = LogSegment::create(&self.dir, new_base, &self.config, now_ms)?;
        self.segments.insert(new_base, segment);
        tracing::debug!(dir = %self.dir.display(), base_offset = new_base, "rolled a new segment");
        // The producer state as of the new segment's base, so that recovery can start
        // from it and replay this segment only.
        if self.snapshot_due(new_base) {
            self.write_producer_snapshot(new_base, false)?;
        }
        Ok(())
    }

    /// Reads whole batches from `start_offset`: the batch containing it first, then as
    /// many as fit in `max_bytes` and start below `max_offset` (the high watermark, or
    /// the log end when `None`). When the first batch alone is larger than `max_bytes`,
    /// it is returned whole if `min_one_batch` (Kafka's rule for fetch v3+).
    pub fn read(
        &self,
        start_offset: i64,
        max_bytes: u64,
        max_offset: Option<i64>,
        min_one_batch: bool,
    ) -> Result<FetchData> {
        let log_end_offset = self.log_end_offset();
        if start_offset < self.log_start_offset || start_offset > log_end_offset {
            return Err(StorageError::OffsetOutOfRange {
                offset: start_offset,
                log_start_offset: self.log_start_offset,
                log_end_offset,
            });
        }
        let max_offset = max_offset.unwrap_or(log_end_offset).min(log_end_offset);
        let empty = FetchData {
            records: Bytes::new(),
            first_batch_offset: start_offset,
        };
        if start_offset >= max_offset {
            return Ok(empty);
        }
        let floor = self
            .segments
            .range(..=start_offset)
            .next_back()
            .map_or(i64::MIN, |(base, _)| *base);
        for segment in self.segments.range(floor..).map(|(_, s)| s) {
            if segment.base_offset() >= max_offset {
                break;
            }
            if let Some(read) = segment.read(start_offset, max_bytes, max_offset, min_one_batch)? {
                return Ok(FetchData {
                    records: read.records,
                    first_batch_offset: read.first_batch_base_offset,
                });
            }
        }
        Ok(empty)
    }

    /// The earliest offset whose record timestamp is at least `timestamp`, with that
    /// timestamp (ListOffsets with a timestamp); `None` when no record is that late.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>> {
        for segment in self.segments.values() {
            if segment.max_timestamp() < timestamp || segment.next_offset() <= self.log_start_offset
            {
                continue;
            }
            if let Some(found) =
                segment.find_offset_by_timestamp(timestamp, self.log_start_offset)?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The offset and timestamp of the record with the largest timestamp (ListOffsets
    /// MAX_TIMESTAMP, KIP-734); the first such record when several share it.
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>> {
        let mut best: Option<&LogSegment> = None;
        for segment in self.segments.values() {
            if segment.next_offset() <= self.log_start_offset {
                continue;
            }
            if best.is_none_or(|b| segment.max_timestamp() > b.max_timestamp()) {
                best = Some(segment);
            }
        }
        match best {
            Some(segment) => segment.find_max_timestamp_record(),
            None => Ok(None),
        }
    }

    /// fsyncs everything appended so far and advances the recovery point.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_at(now_ms())
    }

    fn flush_at(&mut self, now_ms: i64) -> Result<()> {
        self.flush_rolled_segments()?;
        self.active_mut().flush()?;
        self.recovery_point = self.log_end_offset();
        self.unflushed_records = 0;
        self.last_flush_ms = now_ms;
        Ok(())
    }

    /// fsyncs the segments rolled since the last flush and advances the recovery point
    /// to the active segment (Kafka's flush scheduled at roll). Returns whether there
    /// was anything to flush. The log manager's scheduler calls this.
    pub fn flush_rolled_segments(&mut self) -> Result<bool> {
        if self.rolled_unflushed.is_empty() && self.unflushed_snapshots.is_empty() {
            return Ok(false);
        }
        for offset in std::mem::take(&mut self.unflushed_snapshots) {
            // A snapshot deleted since it was written needs nothing.
            if !self.snapshots.contains(&offset) {
                continue;
            }
            let path = self.snapshot_path(offset);
            match std::fs::File::open(&path).and_then(|file| file.sync_all()) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(StorageError::Io { path, source }),
            }
        }
        for base in std::mem::take(&mut self.rolled_unflushed) {
            // A segment deleted or truncated away since its roll needs nothing.
            if let Some(segment) = self.segments.get_mut(&base)
                && !segment.is_active()
            {
                segment.sync_files()?;
            }
        }
        checkpoint::sync_dir(&self.dir)?;
        self.recovery_point = self.recovery_point.max(self.active().base_offset());
        Ok(true)
    }

    /// Flushes when `flush.ms` has passed since the last flush and there is data to
    /// flush. Returns whether it flushed. The log manager's scheduler calls this.
    pub fn flush_if_due(&mut self, now_ms: i64) -> Result<bool> {
        if self.recovery_point < self.log_end_offset()
            && now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms
        {
            self.flush_at(now_ms)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Drops the idempotent producers whose last batch is older than
    /// `producer.id.expiration.ms` (Kafka's `removeExpiredProducers`, which it runs
    /// every `producer.id.expiration.check.interval.ms`). Returns how many were dropped.
    /// [`crate::LogManager::run_periodic_tasks`] calls it.
    pub fn remove_expired_producers(&mut self, now_ms: i64) -> usize {
        let expired = self
            .producers
            .remove_expired(now_ms, self.config.producer_id_expiration_ms);
        if expired > 0 {
            tracing::debug!(dir = %self.dir.display(), expired, "expired idle producers");
        }
        expired
    }

    /// Removes every record at or after `offset` (a follower diverged from its leader).
    /// A batch that contains `offset` goes whole, so the log end offset becomes the end
    /// of the last batch kept, at most `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if offset >= self.log_end_offset() {
            return Ok(());
        }
        let first_base = *self
            .segments
            .keys()
            .next()
            .expect("a log always has a segment");
        if offset <= first_base {
            return self.truncate_fully_and_start_at(offset.max(self.log_start_offset));
        }
        let doomed: Vec<i64> = self.segments.range(offset..).map(|(b, _)| *b).collect();
        for base in doomed {
            if let Some(segment) = self.segments.remove(&base) {
                segment.delete()?;
            }
        }
        let config = self.config.clone();
        self.active_mut().truncate_to(&config, offset)?;
        let log_end_offset = self.log_end_offset();
        self.recovery_point = self.recovery_point.min(log_end_offset);
        self.log_start_offset = self.log_start_offset.min(log_end_offset);
        self.leader_epochs.truncate_from_end(log_end_offset)?;
        // Kafka reloads the state from the newest snapshot left and replays after it.
        self.rebuild_producer_state(now_ms(), false, None)?;
        checkpoint::sync_dir(&self.dir)?;
        self.check_invariants();
        Ok(())
    }

    /// Deletes every segment and restarts the log, empty, at `offset`.
    pub fn truncate_fully_and_start_at(&mut self, offset: i64) -> Result<()> {
        for (_, segment) in std::mem::take(&mut self.segments) {
            segment.delete()?;
        }
        let segment = LogSegment::create(&self.dir, offset, &self.config, now_ms())?;
        self.segments.insert(offset, segment);
        self.log_start_offset = offset;
        self.recovery_point = offset;
        self.rolled_unflushed.clear();
        self.leader_epochs.clear()?;
        self.producers.clear();
        self.delete_snapshots_where(|_| true)?;
        self.unflushed_snapshots.clear();
        checkpoint::sync_dir(&self.dir)?;
        Ok(())
    }

    /// Flushes and closes the active segment's handles (a clean shutdown). The log
    /// stays usable for reads.
    pub fn close(&mut self) -> Result<()> {
        self.flush()?;
        let end = self.log_end_offset();
        if self.snapshot_due(end) {
            self.write_producer_snapshot(end, true)?;
        }
        self.active_mut().deactivate(true)?;
        let config = self.config.clone();
        self.active_mut().activate(&config)
    }

    /// How dirty this log is for the cleaner (`None` unless `cleanup.policy` contains
    /// `compact`). `first_dirty` is the cleaner's checkpoint (clamped to the log);
    /// `max_offset` (the high watermark) bounds the cleanable range, as do the active
    /// segment, the first unstable offset and `min.compaction.lag.ms`.
    pub fn cleanable(&self, first_dirty: i64, max_offset: i64, now_ms: i64) -> Option<Cleanable> {
        if !self.config.cleanup_compact {
            return None;
        }
        let first_dirty = if (self.log_start_offset..=self.log_end_offset()).contains(&first_dirty)
        {
            first_dirty
        } else {
            self.log_start_offset
        };
        let mut end = self
            .active()
            .base_offset()
            .min(max_offset)
            .min(self.first_unstable_offset().unwrap_or(i64::MAX));
        if self.config.min_compaction_lag_ms > 0 {
            let young = self.segments.values().find(|s| {
                !s.is_active()
                    && s.next_offset() > first_dirty
                    && now_ms.saturating_sub(s.largest_timestamp())
                        < self.config.min_compaction_lag_ms
            });
            if let Some(young) = young {
                end = end.min(young.base_offset());
            }
        }
        let end = end.max(first_dirty);
        let mut clean_bytes = 0;
        let mut dirty_bytes = 0;
        let mut overdue = false;
        for segment in self.segments.values().filter(|s| s.base_offset() < end) {
            if segment.next_offset() <= first_dirty {
                clean_bytes += segment.size_bytes();
            } else {
                if dirty_bytes == 0 && self.config.max_compaction_lag_ms < i64::MAX {
                    overdue = now_ms.saturating_sub(segment.largest_timestamp())
                        > self.config.max_compaction_lag_ms;
                }
                dirty_bytes += segment.size_bytes();
            }
        }
        Some(Cleanable {
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: end,
            clean_bytes,
            dirty_bytes,
            overdue,
            min_dirty_ratio: self.config.min_cleanable_dirty_ratio,
            tombstones_due: self.latest_delete_horizon.is_some_and(|h| h <= now_ms),
        })
    }

    /// Step 1 of a cleaner pass ([`crate::cleaner`]): what to rewrite.
    pub fn plan_clean(&self, cleanable: &Cleanable, now_ms: i64) -> Result<CleanPlan> {
        let end = cleanable.first_uncleanable_offset;
        let segments: Vec<PlannedSegment> = self
            .segments
            .values()
            .filter(|s| !s.is_active() && s.base_offset() < end)
            .map(|s| PlannedSegment {
                base_offset: s.base_offset(),
                next_offset: s.next_offset(),
                size_bytes: s.size_bytes(),
            })
            .collect();
        let mut aborted = Vec::new();
        for segment in self
            .segments
            .values()
            .filter(|s| !s.is_active() && s.base_offset() < end)
        {
            aborted.extend(segment.aborted_txns()?);
        }
        let producer_last_offsets = self
            .producers
            .snapshot_entries()
            .into_iter()
            .filter(|e| e.last_offset >= 0)
            .map(|e| (e.producer_id, e.last_offset))
            .collect();
        Ok(CleanPlan {
            dir: self.dir.clone(),
            config: self.config.clone(),
            segments,
            first_dirty: cleanable.first_dirty_offset,
            end,
            aborted,
            producer_last_offsets,
            now_ms,
        })
    }

    /// Step 3 of a cleaner pass: swaps the output in when the segments it replaces are
    /// still the ones planned; otherwise deletes the output and returns `None`.
    pub fn install_cleaned(&mut self, cleaned: Cleaned) -> Result<Option<CleanStats>> {
        let unchanged = cleaned.groups.iter().all(|group| {
            group.replaced.iter().all(|old| {
                self.segments.get(&old.base_offset).is_some_and(|s| {
                    !s.is_active()
                        && s.next_offset() == old.next_offset
                        && s.size_bytes() == old.size_bytes
                })
            })
        });
        if !unchanged {
            tracing::info!(dir = %self.dir.display(), "segments changed during cleaning; dropping the pass");
            cleaned.discard()?;
            return Ok(None);
        }
        let now = now_ms();
        for group in &cleaned.groups {
            cleaner::swap_in(&self.dir, group)?;
            for old in &group.replaced {
                self.segments.remove(&old.base_offset);
            }
            if !group.empty {
                let mut segment =
                    LogSegment::open(&self.dir, group.base_offset, &self.config, now)?;
                segment.open_txn_index()?;
                self.segments.insert(group.base_offset, segment);
            }
        }
        self.latest_delete_horizon = cleaned.stats.latest_delete_horizon;
        self.check_invariants();
        Ok(Some(cleaned.stats))
    }

    /// A whole cleaner pass while holding the log (tests and tools; the broker runs the
    /// steps apart so the log stays available). `None` when no pass was due.
    pub fn clean(
        &mut self,
        first_dirty: i64,
        max_offset: i64,
        now_ms: i64,
        map_bytes: usize,
    ) -> Result<Option<CleanStats>> {
        let Some(cleanable) = self.cleanable(first_dirty, max_offset, now_ms) else {
            return Ok(None);
        };
        if cleanable.dirty_bytes == 0 && !cleanable.tombstones_due {
            return Ok(None);
        }
        let plan = self.plan_clean(&cleanable, now_ms)?;
        let cleaned = cleaner::run(&plan, map_bytes)?;
        self.install_cleaned(cleaned)
    }
}

/// A header-level view of one batch in a mutable buffer, without copying it.
struct BorrowedBatch<'a>(&'a [u8]);

impl BorrowedBatch<'_> {
    fn check(&self, check_crc: bool) -> Result<()> {
        let Some(header) = record_batch::BatchHeader::new(self.0) else {
            return Err(record_batch::BatchError::Truncated {
                needed: RECORD_BATCH_OVERHEAD,
                available: self.0.len(),
            }
            .into());
        };
        let magic = header.magic();
        if magic != record_batch::MAGIC_V2 {
            return Err(record_batch::BatchError::WrongMagic(magic).into());
        }
        let stored = header.crc();
        let computed = if check_crc {
            header.compute_crc()
        } else {
            stored
        };
        if stored != computed {
            return Err(record_batch::BatchError::CrcMismatch { stored, computed }.into());
        }
        let last_offset_delta = header.last_offset_delta();
        let count = header.record_count();
        if last_offset_delta < 0 || count < 0 || i64::from(count) > i64::from(last_offset_delta) + 1
        {
            return Err(record_batch::BatchError::InvalidRecordCount {
                count,
                last_offset_delta,
            }
            .into());
        }
        Ok(())
    }
}
