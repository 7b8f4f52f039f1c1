//! Producers' state per partition (Kafka's `ProducerStateManager`): for each producer id,
//! its epoch, the sequence ranges and offsets of its last five batches
//! (`max.in.flight.requests.per.connection` at most 5), its coordinator epoch and the
//! first offset of its ongoing transaction. The batches let a retried batch get its
//! original offsets back instead of being appended twice, and let a gap in the sequence
//! be refused. The transactions give the partition's first unstable offset (the last
//! stable offset's bound) and the entries of the transaction index.
//!
//! The leader checks and updates it on append; followers update it from the batches
//! they replicate, so a new leader deduplicates retries sent before the failover and
//! knows which transactions are open.
//!
//! Transactions (Kafka's `ProducerAppendInfo`): a transactional data batch from a
//! producer with no ongoing transaction starts one at the batch's first offset; a
//! non-transactional batch from a producer in a transaction is refused
//! ([`SequenceError::InvalidTxnState`]); a control batch holding an end-transaction
//! marker (see [`crate::end_txn_marker`]) completes it. A marker whose producer epoch is
//! older than the producer's is refused ([`SequenceError::StaleEpoch`]), one whose
//! coordinator epoch is older than the last marker's too
//! ([`SequenceError::TransactionCoordinatorFenced`]); a newer producer epoch (KIP-890's
//! bumped epoch) replaces the producer's and forgets its batches, so the next
//! transaction starts at sequence 0. Replicated batches are never refused: the leader
//! checked them, and a follower must hold what the leader holds (Kafka only logs there,
//! except for the transaction-state check, which Sluice also only logs).
//!
//! An append is checked batch by batch against the state as the earlier batches of the
//! same append left it ([`ProducerAppend`], the entries it touches, copied), and applied
//! only once the bytes are written ([`ProducerStateManager::complete_append`]), so a
//! refused append changes nothing.
//!
//! Producer snapshots: the log writes the state to `{offset:020}.snapshot` in the
//! partition directory, in Kafka's format (so `kafka-dump-log.sh` prints them), at each
//! segment roll (the state as of the new segment's base offset) and at a clean close
//! (the log end offset). On open it loads the newest readable snapshot at or below the
//! log end and replays the batches after it; see [`crate::log`]. A snapshot keeps only
//! each producer's last batch, as Kafka's does, so after a restart a retry of that
//! batch is deduplicated and older in-flight retries are refused as out of order.
//!
//! The format (`ProducerSnapshot.json`, version 1, big-endian, not flexible):
//!
//! ```text
//! version: i16 = 1
//! crc: u32           CRC-32C of every byte after it
//! entries: i32 count, then per producer (46 bytes):
//!     producer_id i64, epoch i16, last_sequence i32, last_offset i64,
//!     offset_delta i32 (last offset − first offset of the last batch),
//!     timestamp i64 (the last batch's or marker's timestamp),
//!     coordinator_epoch i32 (of the last marker, -1 when none),
//!     current_txn_first_offset i64 (-1 when no transaction is ongoing)
//! ```
//!
//! Loading a snapshot restores the ongoing transactions from
//! `current_txn_first_offset`. Entries are written in producer id order (Kafka's
//! follows its hash map), so a state has one encoding.
//!
//! Producers idle for `producer.id.expiration.ms` (by their last batch's timestamp)
//! are dropped by [`ProducerStateManager::remove_expired`] and when a snapshot loads,
//! unless a transaction of theirs is ongoing (Kafka's `isProducerExpired`).

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::end_txn_marker::EndTxnMarker;

/// Kafka keeps the metadata of this many batches per producer.
pub const BATCHES_PER_PRODUCER: usize = 5;

/// One appended batch of a producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchMetadata {
    pub first_sequence: i32,
    pub last_sequence: i32,
    pub first_offset: i64,
    pub last_offset: i64,
    /// The batch's max timestamp (its log append time on LogAppendTime topics).
    pub timestamp: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ProducerEntry {
    epoch: i16,
    batches: VecDeque<BatchMetadata>,
    /// The last batch's or marker's timestamp (-1 when none): expiry counts from it.
    last_timestamp: i64,
    /// The coordinator epoch of the last marker (-1 when none).
    coordinator_epoch: i32,
    /// First offset of the producer's ongoing transaction.
    current_txn_first_offset: Option<i64>,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: 0,
            batches: VecDeque::new(),
            last_timestamp: NO_TIMESTAMP,
            coordinator_epoch: NO_COORDINATOR_EPOCH,
            current_txn_first_offset: None,
        }
    }
}

impl ProducerEntry {
    /// Kafka's `maybeUpdateProducerEpoch`: a new epoch forgets the old epoch's batches.
    fn update_epoch(&mut self, epoch: i16) {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.batches.clear();
        }
    }

    fn push_batch(&mut self, batch: BatchMetadata) {
        self.batches.push_back(batch);
        while self.batches.len() > BATCHES_PER_PRODUCER {
            self.batches.pop_front();
        }
    }

    fn is_expired(&self, now_ms: i64, expiration_ms: i64) -> bool {
        self.current_txn_first_offset.is_none()
            && now_ms.saturating_sub(self.last_timestamp) >= expiration_ms
    }
}

/// Kafka's `producer.id.expiration.ms` default: one day.
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 24 * 60 * 60 * 1000;

/// Kafka's `producer.id.expiration.check.interval.ms` default: ten minutes.
pub const DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: i64 = 10 * 60 * 1000;

/// Suffix of producer snapshot files (`{offset:020}.snapshot`).
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";

/// The one snapshot version Kafka writes and reads.
pub const SNAPSHOT_VERSION: i16 = 1;

const NO_SEQUENCE: i32 = -1;
const NO_TIMESTAMP: i64 = -1;
const NO_COORDINATOR_EPOCH: i32 = -1;
/// `current_txn_first_offset` of a producer outside a transaction, in a snapshot.
const NO_TXN_FIRST_OFFSET: i64 = -1;
/// Bytes before the entries array: version (2) and CRC (4). The CRC covers the rest.
const CRC_START: usize = 6;
/// Version, CRC and the entry count.
const SNAPSHOT_HEADER_BYTES: usize = 10;
const SNAPSHOT_ENTRY_BYTES: usize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/// One producer in a snapshot file, field for field as Kafka stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotEntry {
    pub producer_id: i64,
    pub epoch: i16,
    /// -1 when the producer has no batch.
    pub last_sequence: i32,
    /// -1 when the producer has no batch.
    pub last_offset: i64,
    /// Last offset − first offset of the last batch (0 when none).
    pub offset_delta: i32,
    pub timestamp: i64,
    /// The coordinator epoch of the producer's last transaction marker (-1 when none).
    pub coordinator_epoch: i32,
    /// First offset of the producer's ongoing transaction (-1 when none).
    pub current_txn_first_offset: i64,
}
/// Why a snapshot file cannot be used (Kafka's `CorruptSnapshotException`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("corrupt producer snapshot: {0}")]
pub struct CorruptSnapshot(pub String);

/// Encodes snapshot entries in Kafka's format (see the module documentation).
pub fn encode_snapshot(entries: &[SnapshotEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SNAPSHOT_HEADER_BYTES + entries.len() * SNAPSHOT_ENTRY_BYTES);
    out.extend_from_slice(&SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as i32).to_be_bytes());
    for entry in entries {
        out.extend_from_slice(&entry.producer_id.to_be_bytes());
        out.extend_from_slice(&entry.epoch.to_be_bytes());
        out.extend_from_slice(&entry.last_sequence.to_be_bytes());
        out.extend_from_slice(&entry.last_offset.to_be_bytes());
        out.extend_from_slice(&entry.offset_delta.to_be_bytes());
        out.extend_from_slice(&entry.timestamp.to_be_bytes());
        out.extend_from_slice(&entry.coordinator_epoch.to_be_bytes());
        out.extend_from_slice(&entry.current_txn_first_offset.to_be_bytes());
    }
    let crc = crc32c::crc32c(&out[CRC_START..]);
    out[2..CRC_START].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Big-endian reads that fail instead of panicking past the end.
struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], CorruptSnapshot> {
        let field = self
            .bytes
            .get(self.position..self.position + N)
            .and_then(|slice| <[u8; N]>::try_from(slice).ok())
            .ok_or_else(|| {
                CorruptSnapshot(format!(
                    "truncated: {N} bytes needed at position {}, {} bytes long",
                    self.position,
                    self.bytes.len()
                ))
            })?;
        self.position += N;
        Ok(field)
    }
    fn i16(&mut self) -> Result<i16, CorruptSnapshot> {
        self.take().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Result<i32, CorruptSnapshot> {
        self.take().map(i32::from_be_bytes)
    }
    fn u32(&mut self) -> Result<u32, CorruptSnapshot> {
        self.take().map(u32::from_be_bytes)
    }
    fn i64(&mut self) -> Result<i64, CorruptSnapshot> {
        self.take().map(i64::from_be_bytes)
    }
}

/// Decodes a snapshot file's bytes: an unknown version, a CRC mismatch or a length that
/// does not match the entry count is corrupt. (Kafka ignores bytes after the entries
/// when the CRC, which covers them, matches; Sluice refuses them.)
pub fn decode_snapshot(bytes: &[u8]) -> Result<Vec<SnapshotEntry>, CorruptSnapshot> {
    let mut reader = Reader { bytes, position: 0 };
    let version = reader.i16()?;
    if version != SNAPSHOT_VERSION {
        return Err(CorruptSnapshot(format!("unknown version {version}")));
    }
    let stored = reader.u32()?;
    let computed = crc32c::crc32c(bytes.get(CRC_START..).unwrap_or_default());
    if stored != computed {
        return Err(CorruptSnapshot(format!(
            "CRC mismatch: stored {stored}, computed {computed}"
        )));
    }
    let count = reader.i32()?;
    let expected_len = usize::try_from(count)
        .ok()
        .and_then(|count| count.checked_mul(SNAPSHOT_ENTRY_BYTES))
        .and_then(|entries| entries.checked_add(SNAPSHOT_HEADER_BYTES));
    if expected_len != Some(bytes.len()) {
        return Err(CorruptSnapshot(format!(
            "{count} entries do not fit a file of {} bytes",
            bytes.len()
        )));
    }
    let mut entries = Vec::with_capacity(count as usize);
    for _ in 0..count {
        entries.push(SnapshotEntry {
            producer_id: reader.i64()?,
            epoch: reader.i16()?,
            last_sequence: reader.i32()?,
            last_offset: reader.i64()?,
            offset_delta: reader.i32()?,
            timestamp: reader.i64()?,
            coordinator_epoch: reader.i32()?,
            current_txn_first_offset: reader.i64()?,
        });
    }
    Ok(entries)
}

/// The sequence `decrement` before `sequence`, wrapping below 0 to `i32::MAX`
/// (Kafka's `DefaultRecordBatch.decrementSequence`).
/// Computed in i64 so that nonsense from a file cannot overflow.
fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    let first = i64::from(sequence) - i64::from(decrement);
    if first < 0 {
        (first + i64::from(i32::MAX) + 1) as i32
    } else {
        first as i32
    }
}

/// What the state says about a producer batch about to be appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceCheck {
    /// Append it.
    Append,
    /// Already appended, at these offsets: answer with them, append nothing.
    Duplicate(BatchMetadata),
}

/// Why a producer batch is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    /// Kafka: OUT_OF_ORDER_SEQUENCE_NUMBER.
    #[error(
        "out of order sequence number for producer {producer_id} at epoch {epoch}: {found} (incoming batch), {expected} expected"
    )]
    OutOfOrder {
        producer_id: i64,
        epoch: i16,
        found: i32,
        expected: i32,
    },
    /// Kafka: INVALID_PRODUCER_EPOCH.
    #[error("producer {producer_id}'s epoch {epoch} is older than its current epoch {current}")]
    StaleEpoch {
        producer_id: i64,
        epoch: i16,
        current: i16,
    },
    /// A non-transactional batch from a producer whose transaction is ongoing.
    /// Kafka: INVALID_TXN_STATE.
    #[error(
        "expected a transactional write from producer {producer_id}: its transaction is ongoing since offset {txn_first_offset}"
    )]
    InvalidTxnState {
        producer_id: i64,
        txn_first_offset: i64,
    },
    /// A marker from a transaction coordinator older than the one that wrote the
    /// producer's last marker (a zombie). Kafka: TRANSACTION_COORDINATOR_FENCED.
    #[error(
        "invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} (zombie), {current} (current)"
    )]
    TransactionCoordinatorFenced {
        producer_id: i64,
        coordinator_epoch: i32,
        current: i32,
    },
}

/// The sequence after `sequence` (sequences wrap from `i32::MAX` to 0).
pub fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}

/// The last sequence of a batch that starts at `first` and holds `last_offset_delta + 1`
/// records.
pub fn last_sequence(first: i32, last_offset_delta: i32) -> i32 {
    ((i64::from(first) + i64::from(last_offset_delta)) % (i64::from(i32::MAX) + 1)) as i32
}

/// Where appended bytes come from, which decides what is checked (Kafka's
/// `AppendOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer's batches, validated by the broker, appended by the leader: epochs,
    /// sequences and transaction state are checked.
    Client,
    /// Batches the broker writes itself as the leader (transaction markers, a group
    /// coordinator's offset commits): epochs and transaction state are checked, not
    /// sequences (these batches have none).
    Coordinator,
    /// Batches fetched from the leader by a follower, or replayed from the log: nothing
    /// is refused.
    Replication,
}

/// A transaction ended by a marker (Kafka's `CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompletedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub aborted: bool,
    /// Kafka's rule: the first offset of the earliest other ongoing transaction when the
    /// marker was appended, else the marker's offset + 1.
    pub last_stable_offset: i64,
}

/// The effect of one append on the producers it touches, checked but not yet applied
/// (Kafka's `ProducerAppendInfo`, for every producer of the append at once).
#[derive(Debug)]
pub struct ProducerAppend {
    origin: AppendOrigin,
    /// The touched producers' entries as the append leaves them.
    updated: HashMap<i64, ProducerEntry>,
    /// Transactions begun: (first offset, producer id).
    started: Vec<(i64, i64)>,
    /// Transactions ended by a marker, in offset order (last stable offset still 0).
    completed: Vec<CompletedTxn>,
}

impl ProducerAppend {
    pub fn origin(&self) -> AppendOrigin {
        self.origin
    }
}

/// The sequence check of Kafka's `ProducerAppendInfo.checkSequence`, plus duplicate
/// detection, against `entry` (`None`: a producer with no state).
fn check_sequence(
    entry: Option<&ProducerEntry>,
    producer_id: i64,
    epoch: i16,
    first_sequence: i32,
    last_sequence: i32,
) -> Result<SequenceCheck, SequenceError> {
    let Some(entry) = entry else {
        return Ok(SequenceCheck::Append);
    };
    if epoch < entry.epoch {
        return Err(SequenceError::StaleEpoch {
            producer_id,
            epoch,
            current: entry.epoch,
        });
    }
    if epoch > entry.epoch {
        // A bumped epoch starts its sequence again.
        return if first_sequence == 0 {
            Ok(SequenceCheck::Append)
        } else {
            Err(SequenceError::OutOfOrder {
                producer_id,
                epoch,
                found: first_sequence,
                expected: 0,
            })
        };
    }
    if let Some(batch) = entry
        .batches
        .iter()
        .find(|b| b.first_sequence == first_sequence && b.last_sequence == last_sequence)
    {
        return Ok(SequenceCheck::Duplicate(*batch));
    }
    // A producer known at this epoch but with no batch (a marker bumped its epoch, or
    // only a snapshot entry without batches is left) starts at sequence 0, as in Kafka.
    let expected = entry
        .batches
        .back()
        .map_or(0, |last| next_sequence(last.last_sequence));
    if first_sequence != expected {
        return Err(SequenceError::OutOfOrder {
            producer_id,
            epoch,
            found: first_sequence,
            expected,
        });
    }
    Ok(SequenceCheck::Append)
}

#[derive(Debug, Default, Clone)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
    /// Ongoing transactions: first offset → producer id (Kafka's `ongoingTxns`).
    ongoing: BTreeMap<i64, i64>,
}

impl ProducerStateManager {
    /// Checks a batch of an idempotent producer (`producer_id` ≥ 0, `first_sequence` ≥
    /// 0; anything else is always appended). A producer with no state (new, or whose
    /// batches left the log) is accepted at any sequence, as Kafka 4.1 accepts it
    /// (KIP-360).
    pub fn check(
        &self,
        producer_id: i64,
        epoch: i16,
        first_sequence: i32,
        last_sequence: i32,
    ) -> Result<SequenceCheck, SequenceError> {
        if producer_id < 0 || first_sequence < 0 {
            return Ok(SequenceCheck::Append);
        }
        check_sequence(
            self.producers.get(&producer_id),
            producer_id,
            epoch,
            first_sequence,
            last_sequence,
        )
    }

    /// Records an appended non-transactional batch without checking it (a shorthand for
    /// a one-batch replicated append). Batches without a producer id or sequence leave
    /// no state.
    pub fn update(&mut self, producer_id: i64, epoch: i16, batch: BatchMetadata) {
        if producer_id < 0 || batch.first_sequence < 0 {
            return;
        }
        let entry = self.producers.entry(producer_id).or_default();
        entry.update_epoch(epoch);
        entry.last_timestamp = batch.timestamp;
        entry.push_batch(batch);
    }

    /// Starts checking an append.
    pub fn begin_append(&self, origin: AppendOrigin) -> ProducerAppend {
        ProducerAppend {
            origin,
            updated: HashMap::new(),
            started: Vec::new(),
            completed: Vec::new(),
        }
    }

    /// The producer's entry as the append so far leaves it, copied into the append.
    fn entry_in<'a>(
        &self,
        append: &'a mut ProducerAppend,
        producer_id: i64,
    ) -> &'a mut ProducerEntry {
        append.updated.entry(producer_id).or_insert_with(|| {
            self.producers
                .get(&producer_id)
                .cloned()
                .unwrap_or_default()
        })
    }

    fn known_entry<'a>(
        &'a self,
        append: &'a ProducerAppend,
        producer_id: i64,
    ) -> Option<&'a ProducerEntry> {
        append
            .updated
            .get(&producer_id)
            .or_else(|| self.producers.get(&producer_id))
    }

    /// Checks a data batch and adds its effect to `append` (Kafka's `appendDataBatch`).
    pub fn append_data(
        &self,
        append: &mut ProducerAppend,
        producer_id: i64,
        epoch: i16,
        batch: BatchMetadata,
        transactional: bool,
    ) -> Result<(), SequenceError> {
        if producer_id < 0 {
            return Ok(());
        }
        let known = self.known_entry(append, producer_id);
        if known.is_none() && batch.first_sequence < 0 && !transactional {
            // Nothing to remember: no sequence, no transaction.
            return Ok(());
        }
        match append.origin {
            AppendOrigin::Client if batch.first_sequence >= 0 => {
                // A duplicate inside a larger append is appended again, as before.
                check_sequence(
                    known,
                    producer_id,
                    epoch,
                    batch.first_sequence,
                    batch.last_sequence,
                )?;
            }
            AppendOrigin::Client | AppendOrigin::Coordinator => {
                if let Some(entry) = known
                    && epoch < entry.epoch
                {
                    return Err(SequenceError::StaleEpoch {
                        producer_id,
                        epoch,
                        current: entry.epoch,
                    });
                }
            }
            AppendOrigin::Replication => {}
        }
        let origin = append.origin;
        let entry = self.entry_in(append, producer_id);
        match entry.current_txn_first_offset {
            Some(txn_first_offset) if !transactional => {
                if origin != AppendOrigin::Replication {
                    return Err(SequenceError::InvalidTxnState {
                        producer_id,
                        txn_first_offset,
                    });
                }
                tracing::warn!(
                    producer_id,
                    txn_first_offset,
                    offset = batch.first_offset,
                    "a replicated non-transactional batch inside an ongoing transaction"
                );
            }
            None if transactional => {
                entry.current_txn_first_offset = Some(batch.first_offset);
                append.started.push((batch.first_offset, producer_id));
            }
            _ => {}
        }
        let entry = self.entry_in(append, producer_id);
        entry.update_epoch(epoch);
        if batch.first_sequence >= 0 {
            entry.push_batch(batch);
        }
        entry.last_timestamp = batch.timestamp;
        Ok(())
    }

    /// Checks an end-transaction marker at `offset` and adds its effect to `append`
    /// (Kafka's `appendEndTxnMarker`). A marker for a producer with no ongoing
    /// transaction is accepted and completes nothing.
    pub fn append_marker(
        &self,
        append: &mut ProducerAppend,
        producer_id: i64,
        epoch: i16,
        marker: EndTxnMarker,
        offset: i64,
        timestamp: i64,
    ) -> Result<(), SequenceError> {
        if producer_id < 0 {
            tracing::warn!(
                offset,
                "a transaction marker without a producer id; ignored"
            );
            return Ok(());
        }
        let origin = append.origin;
        let known = self.known_entry(append, producer_id).is_some();
        let entry = self.entry_in(append, producer_id);
        if known && epoch < entry.epoch {
            if origin != AppendOrigin::Replication {
                return Err(SequenceError::StaleEpoch {
                    producer_id,
                    epoch,
                    current: entry.epoch,
                });
            }
            tracing::warn!(
                producer_id,
                epoch,
                current = entry.epoch,
                offset,
                "a replicated marker with an older producer epoch"
            );
        }
        if entry.coordinator_epoch > marker.coordinator_epoch {
            if origin != AppendOrigin::Replication {
                return Err(SequenceError::TransactionCoordinatorFenced {
                    producer_id,
                    coordinator_epoch: marker.coordinator_epoch,
                    current: entry.coordinator_epoch,
                });
            }
            tracing::info!(
                producer_id,
                coordinator_epoch = marker.coordinator_epoch,
                current = entry.coordinator_epoch,
                offset,
                "a replicated marker from an older coordinator"
            );
        }
        let completed = entry
            .current_txn_first_offset
            .map(|first_offset| CompletedTxn {
                producer_id,
                first_offset,
                last_offset: offset,
                aborted: !marker.commit,
                last_stable_offset: 0,
            });
        entry.update_epoch(epoch);
        entry.coordinator_epoch = marker.coordinator_epoch;
        entry.current_txn_first_offset = None;
        entry.last_timestamp = timestamp;
        append.completed.extend(completed);
        Ok(())
    }

    /// Applies a checked append whose bytes are now in the log. Returns the transactions
    /// it completed, each with its last stable offset (Kafka's `update`, then
    /// `lastStableOffset` and `completeTxn` per completed transaction).
    pub fn complete_append(&mut self, append: ProducerAppend) -> Vec<CompletedTxn> {
        self.producers.extend(append.updated);
        for (first_offset, producer_id) in append.started {
            self.ongoing.insert(first_offset, producer_id);
        }
        let mut completed = append.completed;
        for txn in &mut completed {
            txn.last_stable_offset = self
                .ongoing
                .iter()
                .find(|(_, producer_id)| **producer_id != txn.producer_id)
                .map_or(txn.last_offset + 1, |(first_offset, _)| *first_offset);
            if self.ongoing.get(&txn.first_offset) == Some(&txn.producer_id) {
                self.ongoing.remove(&txn.first_offset);
            }
        }
        completed
    }

    /// The first offset of the earliest ongoing transaction: records from there on are
    /// not yet stable (Kafka's `firstUnstableOffset`, without the completed transactions
    /// whose markers are not yet replicated: the high watermark is the broker's).
    pub fn first_unstable_offset(&self) -> Option<i64> {
        self.ongoing.keys().next().copied()
    }

    /// The ongoing transactions as (first offset, producer id), oldest first.
    pub fn ongoing_transactions(&self) -> Vec<(i64, i64)> {
        self.ongoing.iter().map(|(o, p)| (*o, *p)).collect()
    }

    /// First offset of `producer_id`'s ongoing transaction when it runs under `epoch`
    /// (Kafka's `hasOngoingTransaction(producerId, epoch)`): under transactions v2 a
    /// batch of the next epoch may arrive before the previous transaction's marker, and
    /// is not part of that transaction.
    pub fn ongoing_transaction_at(&self, producer_id: i64, epoch: i16) -> Option<i64> {
        self.producers
            .get(&producer_id)
            .filter(|e| e.epoch == epoch)
            .and_then(|e| e.current_txn_first_offset)
    }

    /// First offset of `producer_id`'s ongoing transaction.
    pub fn current_txn_first_offset(&self, producer_id: i64) -> Option<i64> {
        self.producers
            .get(&producer_id)
            .and_then(|e| e.current_txn_first_offset)
    }

    /// Forgets batches and transactions at or after `end_offset` (the log was truncated
    /// there). A producer left with no batch and no transaction is forgotten (and
    /// accepted afresh).
    pub fn truncate(&mut self, end_offset: i64) {
        self.ongoing
            .retain(|first_offset, _| *first_offset < end_offset);
        self.producers.retain(|_, entry| {
            entry.batches.retain(|b| b.last_offset < end_offset);
            if entry
                .current_txn_first_offset
                .is_some_and(|first| first >= end_offset)
            {
                entry.current_txn_first_offset = None;
            }
            !entry.batches.is_empty() || entry.current_txn_first_offset.is_some()
        });
    }

    pub fn clear(&mut self) {
        self.producers.clear();
        self.ongoing.clear();
    }

    /// Drops the producers whose last batch is `expiration_ms` or more older than
    /// `now_ms` and that have no ongoing transaction (Kafka's `removeExpiredProducers`
    /// for `producer.id.expiration.ms`). Returns how many were dropped.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, entry| !entry.is_expired(now_ms, expiration_ms));
        before - self.producers.len()
    }

    /// The state as snapshot entries, in producer id order: each producer's last batch.
    pub fn snapshot_entries(&self) -> Vec<SnapshotEntry> {
        let mut entries: Vec<SnapshotEntry> = self
            .producers
            .iter()
            .map(|(producer_id, entry)| {
                let last = entry.batches.back();
                SnapshotEntry {
                    producer_id: *producer_id,
                    epoch: entry.epoch,
                    last_sequence: last.map_or(NO_SEQUENCE, |b| b.last_sequence),
                    last_offset: last.map_or(-1, |b| b.last_offset),
                    offset_delta: last.map_or(0, |b| (b.last_offset - b.first_offset) as i32),
                    timestamp: entry.last_timestamp,
                    coordinator_epoch: entry.coordinator_epoch,
                    current_txn_first_offset: entry
                        .current_txn_first_offset
                        .unwrap_or(NO_TXN_FIRST_OFFSET),
                }
            })
            .collect();
        entries.sort_unstable_by_key(|e| e.producer_id);
        entries
    }

    /// The state encoded as a snapshot file.
    pub fn to_snapshot(&self) -> Vec<u8> {
        encode_snapshot(&self.snapshot_entries())
    }

    /// Replaces the state with a snapshot's entries, leaving out those expired at
    /// `now_ms` (Kafka's `loadFromSnapshot`). Each producer gets its last batch and its
    /// ongoing transaction back.
    pub fn load_snapshot(&mut self, entries: &[SnapshotEntry], now_ms: i64, expiration_ms: i64) {
        self.clear();
        for e in entries {
            let mut batches = VecDeque::new();
            if e.last_offset >= 0 {
                batches.push_back(BatchMetadata {
                    first_sequence: decrement_sequence(e.last_sequence, e.offset_delta),
                    last_sequence: e.last_sequence,
                    first_offset: e.last_offset.saturating_sub(i64::from(e.offset_delta)),
                    last_offset: e.last_offset,
                    timestamp: e.timestamp,
                });
            }
            let entry = ProducerEntry {
                epoch: e.epoch,
                batches,
                last_timestamp: e.timestamp,
                coordinator_epoch: e.coordinator_epoch,
                current_txn_first_offset: (e.current_txn_first_offset >= 0)
                    .then_some(e.current_txn_first_offset),
            };
            if entry.is_expired(now_ms, expiration_ms) {
                continue;
            }
            if let Some(first_offset) = entry.current_txn_first_offset {
                self.ongoing.insert(first_offset, e.producer_id);
            }
            self.producers.insert(e.producer_id, entry);
        }
    }

    /// Whether `producer_id` has state.
    pub fn contains(&self, producer_id: i64) -> bool {
        self.producers.contains_key(&producer_id)
    }

    /// How many producers have state.
    pub fn len(&self) -> usize {
        self.producers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(first_sequence: i32, count: i32, first_offset: i64) -> BatchMetadata {
        BatchMetadata {
            first_sequence,
            last_sequence: last_sequence(first_sequence, count - 1),
            first_offset,
            last_offset: first_offset + i64::from(count) - 1,
            timestamp: 1_000 + first_offset,
        }
    }

    #[test]
    fn retries_are_duplicates_and_gaps_are_refused() {
        let mut state = ProducerStateManager::default();
        assert_eq!(
            state.check(7, 0, 5, 9),
            Ok(SequenceCheck::Append),
            "unknown producer"
        );
        state.update(7, 0, batch(0, 5, 100));
        state.update(7, 0, batch(5, 5, 110));
        assert_eq!(
            state.check(7, 0, 0, 4),
            Ok(SequenceCheck::Duplicate(batch(0, 5, 100)))
        );
        assert_eq!(state.check(7, 0, 10, 12), Ok(SequenceCheck::Append));
        assert!(matches!(
            state.check(7, 0, 11, 12),
            Err(SequenceError::OutOfOrder { expected: 10, .. })
        ));
        state.update(7, 2, batch(0, 1, 120));
        assert!(matches!(
            state.check(7, 1, 1, 1),
            Err(SequenceError::StaleEpoch { current: 2, .. })
        ));
        assert!(matches!(
            state.check(7, 3, 4, 4),
            Err(SequenceError::OutOfOrder { expected: 0, .. })
        ));
        assert_eq!(state.check(7, 3, 0, 0), Ok(SequenceCheck::Append));
        // Only the last five batches are remembered.
        for i in 1..=6 {
            state.update(7, 2, batch(i, 1, 120 + i64::from(i)));
        }
        assert_eq!(
            state.check(7, 2, 1, 1),
            Err(SequenceError::OutOfOrder {
                producer_id: 7,
                epoch: 2,
                found: 1,
                expected: 7
            })
        );
        assert!(matches!(
            state.check(7, 2, 6, 6),
            Ok(SequenceCheck::Duplicate(_))
        ));
        // Truncation forgets what was cut, and a producer with nothing left.
        state.truncate(125);
        assert_eq!(state.check(7, 2, 5, 5), Ok(SequenceCheck::Append));
        state.truncate(0);
        assert!(state.is_empty());
    }

    /// Two producers, written in producer id order. The bytes follow Kafka's
    /// `ProducerSnapshot` schema field by field; the CRC-32C was computed independently
    /// (a bitwise CRC-32C over bytes 6..).
    #[test]
    fn snapshot_encoding_is_kafkas_byte_for_byte() {
        let mut state = ProducerStateManager::default();
        state.update(7, 2, batch(0, 5, 100));
        let mut last = batch(5, 5, 110);
        last.timestamp = 6_000;
        state.update(7, 2, last);
        let mut only = batch(0, 1, 50);
        only.timestamp = 4_000;
        state.update(3, 0, only);
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0x00, 0x01][..],                                    // version 1
            &[0x69, 0xc0, 0xb2, 0xe7],                            // crc32c
            &[0x00, 0x00, 0x00, 0x02],                            // 2 entries
            // producer 3
            &[0, 0, 0, 0, 0, 0, 0, 3],                            // producer id
            &[0, 0],                                              // epoch 0
            &[0, 0, 0, 0],                                        // last sequence 0
            &[0, 0, 0, 0, 0, 0, 0, 50],                           // last offset 50
            &[0, 0, 0, 0],                                        // offset delta 0
            &[0, 0, 0, 0, 0, 0, 0x0f, 0xa0],                      // timestamp 4000
            &[0xff; 4],                                           // coordinator epoch -1
            &[0xff; 8],                                           // no transaction
            // producer 7
            &[0, 0, 0, 0, 0, 0, 0, 7],
            &[0, 2],                                              // epoch 2
            &[0, 0, 0, 9],                                        // last sequence 9
            &[0, 0, 0, 0, 0, 0, 0, 114],                          // last offset 114
            &[0, 0, 0, 4],                                        // offset delta 4
            &[0, 0, 0, 0, 0, 0, 0x17, 0x70],                      // timestamp 6000
            &[0xff; 4],
            &[0xff; 8],
        ]
        .concat();
        let encoded = state.to_snapshot();
        assert_eq!(encoded.len(), 102);
        assert_eq!(encoded, expected);

        // Read back: each producer has its last batch, so its retry is a duplicate and
        // the next sequence is expected.
        let entries = decode_snapshot(&encoded).unwrap();
        assert_eq!(entries, state.snapshot_entries());
        let mut loaded = ProducerStateManager::default();
        loaded.load_snapshot(&entries, 6_000, DEFAULT_PRODUCER_ID_EXPIRATION_MS);
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded.check(7, 2, 5, 9), Ok(SequenceCheck::Duplicate(last)));
        assert_eq!(loaded.check(3, 0, 0, 0), Ok(SequenceCheck::Duplicate(only)));
        assert_eq!(loaded.check(7, 2, 10, 10), Ok(SequenceCheck::Append));
        assert!(matches!(
            loaded.check(7, 2, 0, 4),
            Err(SequenceError::OutOfOrder { expected: 10, .. })
        ));
        assert_eq!(loaded.to_snapshot(), encoded);
        // Loading leaves out producers expired by then.
        loaded.load_snapshot(
            &entries,
            4_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS,
            DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        );
        assert!(!loaded.contains(3) && loaded.contains(7));

        // An empty state is the 10-byte header.
        let empty = ProducerStateManager::default().to_snapshot();
        assert_eq!(&empty[..2], &[0, 1]);
        assert_eq!(&empty[2..6], &crc32c::crc32c(&[0, 0, 0, 0]).to_be_bytes());
        assert_eq!(&empty[6..], &[0, 0, 0, 0]);
    }

    #[test]
    fn corrupt_snapshots_are_refused_not_panicked_on() {
        let mut state = ProducerStateManager::default();
        state.update(1, 0, batch(0, 3, 0));
        let good = state.to_snapshot();
        assert!(decode_snapshot(&good).is_ok());
        // Every truncation, a flipped byte anywhere, an extra byte, another version.
        for len in 0..good.len() {
            assert!(decode_snapshot(&good[..len]).is_err(), "truncated to {len}");
        }
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            assert!(decode_snapshot(&bad).is_err(), "flipped byte {at}");
        }
        let mut longer = good.clone();
        longer.push(0);
        assert!(decode_snapshot(&longer).is_err());
        // A count that does not match the length, with a valid CRC.
        let mut lying = good.clone();
        lying[6..10].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&lying[6..]);
        lying[2..6].copy_from_slice(&crc.to_be_bytes());
        assert!(decode_snapshot(&lying).unwrap_err().0.contains("entries"));
        // Nonsense values with a valid CRC load without panicking.
        let weird = encode_snapshot(&[SnapshotEntry {
            producer_id: 5,
            epoch: -7,
            last_sequence: i32::MIN,
            last_offset: i64::MAX,
            offset_delta: i32::MIN,
            timestamp: i64::MIN,
            coordinator_epoch: 0,
            current_txn_first_offset: 0,
        }]);
        let mut loaded = ProducerStateManager::default();
        loaded.load_snapshot(&decode_snapshot(&weird).unwrap(), i64::MAX, 1);
        loaded.load_snapshot(&decode_snapshot(&weird).unwrap(), i64::MIN, i64::MAX);
        assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
        assert_eq!(decrement_sequence(9, 4), 5);
    }

    #[test]
    fn expiry_drops_idle_producers() {
        let mut state = ProducerStateManager::default();
        let mut old = batch(0, 1, 0);
        old.timestamp = 1_000;
        let mut recent = batch(0, 1, 1);
        recent.timestamp = 50_000;
        state.update(1, 0, old);
        state.update(2, 0, recent);
        assert_eq!(state.remove_expired(1_000 + 49_999, 50_000), 0);
        assert_eq!(state.remove_expired(1_000 + 50_000, 50_000), 1);
        assert!(!state.contains(1) && state.contains(2));
        assert_eq!(state.check(1, 0, 7, 7), Ok(SequenceCheck::Append));
    }

    #[test]
    fn sequences_wrap() {
        assert_eq!(next_sequence(i32::MAX), 0);
        assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
        let mut state = ProducerStateManager::default();
        state.update(1, 0, batch(i32::MAX - 1, 2, 0));
        assert_eq!(state.check(1, 0, 0, 0), Ok(SequenceCheck::Append));
    }

    fn apply_data(
        state: &mut ProducerStateManager,
        origin: AppendOrigin,
        producer_id: i64,
        epoch: i16,
        batch: BatchMetadata,
        transactional: bool,
    ) -> Result<Vec<CompletedTxn>, SequenceError> {
        let mut append = state.begin_append(origin);
        state.append_data(&mut append, producer_id, epoch, batch, transactional)?;
        Ok(state.complete_append(append))
    }

    fn apply_marker(
        state: &mut ProducerStateManager,
        origin: AppendOrigin,
        producer_id: i64,
        epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        offset: i64,
    ) -> Result<Vec<CompletedTxn>, SequenceError> {
        let mut append = state.begin_append(origin);
        let marker = EndTxnMarker {
            commit,
            coordinator_epoch,
        };
        state.append_marker(&mut append, producer_id, epoch, marker, offset, 9_000)?;
        Ok(state.complete_append(append))
    }

    #[test]
    fn transactions_start_complete_and_bound_the_first_unstable_offset() {
        let mut state = ProducerStateManager::default();
        let client = AppendOrigin::Client;
        apply_data(&mut state, client, 1, 0, batch(0, 2, 10), true).unwrap();
        apply_data(&mut state, client, 2, 0, batch(0, 1, 12), true).unwrap();
        apply_data(&mut state, client, 1, 0, batch(2, 1, 13), true).unwrap();
        assert_eq!(state.first_unstable_offset(), Some(10));
        assert_eq!(state.ongoing_transactions(), vec![(10, 1), (12, 2)]);
        // Non-transactional while in a transaction: refused, nothing changes.
        assert_eq!(
            apply_data(&mut state, client, 1, 0, batch(3, 1, 14), false),
            Err(SequenceError::InvalidTxnState {
                producer_id: 1,
                txn_first_offset: 10
            })
        );
        assert_eq!(state.check(1, 0, 3, 3), Ok(SequenceCheck::Append));
        // Producer 1 aborts: the other open transaction bounds its LSO.
        let completed =
            apply_marker(&mut state, AppendOrigin::Coordinator, 1, 0, 3, false, 14).unwrap();
        assert_eq!(
            completed,
            vec![CompletedTxn {
                producer_id: 1,
                first_offset: 10,
                last_offset: 14,
                aborted: true,
                last_stable_offset: 12
            }]
        );
        assert_eq!(state.first_unstable_offset(), Some(12));
        // Producer 2 commits: nothing else open, LSO = marker + 1.
        let completed =
            apply_marker(&mut state, AppendOrigin::Coordinator, 2, 0, 3, true, 15).unwrap();
        assert_eq!(completed[0].last_stable_offset, 16);
        assert!(!completed[0].aborted);
        assert_eq!(state.first_unstable_offset(), None);
        // A marker with no transaction open completes nothing.
        let none = apply_marker(&mut state, AppendOrigin::Coordinator, 2, 0, 3, false, 16);
        assert_eq!(none, Ok(vec![]));
    }

    #[test]
    fn markers_are_checked_like_kafkas_append_end_txn_marker() {
        let mut state = ProducerStateManager::default();
        let coordinator = AppendOrigin::Coordinator;
        apply_data(&mut state, AppendOrigin::Client, 1, 2, batch(0, 1, 0), true).unwrap();
        apply_marker(&mut state, coordinator, 1, 2, 5, true, 1).unwrap();
        // (epoch, coordinator epoch) → expected outcome.
        let cases: &[(i16, i32, Option<SequenceError>)] = &[
            (
                1,
                5,
                Some(SequenceError::StaleEpoch {
                    producer_id: 1,
                    epoch: 1,
                    current: 2,
                }),
            ),
            (
                2,
                4,
                Some(SequenceError::TransactionCoordinatorFenced {
                    producer_id: 1,
                    coordinator_epoch: 4,
                    current: 5,
                }),
            ),
            (2, 5, None),
            (2, 6, None),
        ];
        for (epoch, coordinator_epoch, expected) in cases {
            let mut trial = state.clone();
            let result = apply_marker(
                &mut trial,
                coordinator,
                1,
                *epoch,
                *coordinator_epoch,
                false,
                2,
            );
            assert_eq!(
                result.err(),
                expected.clone(),
                "{epoch} {coordinator_epoch}"
            );
            // Replicated markers are never refused.
            let mut trial = state.clone();
            apply_marker(
                &mut trial,
                AppendOrigin::Replication,
                1,
                *epoch,
                *coordinator_epoch,
                false,
                2,
            )
            .unwrap();
        }
        // A bumped epoch (KIP-890) forgets the batches: the next starts at 0.
        apply_marker(&mut state, coordinator, 1, 3, 5, false, 2).unwrap();
        assert!(matches!(
            state.check(1, 3, 1, 1),
            Err(SequenceError::OutOfOrder { expected: 0, .. })
        ));
        assert_eq!(state.check(1, 3, 0, 0), Ok(SequenceCheck::Append));
        // Coordinator batches have no sequence, but their epoch is checked.
        let mut no_sequence = batch(0, 1, 3);
        no_sequence.first_sequence = -1;
        no_sequence.last_sequence = -1;
        assert!(matches!(
            apply_data(&mut state, coordinator, 1, 2, no_sequence, true),
            Err(SequenceError::StaleEpoch { .. })
        ));
        apply_data(&mut state, coordinator, 1, 3, no_sequence, true).unwrap();
        assert_eq!(state.first_unstable_offset(), Some(3));
    }

    #[test]
    fn snapshots_carry_transactions_and_open_ones_never_expire() {
        let mut state = ProducerStateManager::default();
        let mut open = batch(0, 1, 20);
        open.timestamp = 1_000;
        apply_data(&mut state, AppendOrigin::Client, 4, 1, open, true).unwrap();
        apply_data(
            &mut state,
            AppendOrigin::Client,
            5,
            0,
            batch(0, 1, 21),
            true,
        )
        .unwrap();
        apply_marker(&mut state, AppendOrigin::Coordinator, 5, 0, 7, true, 22).unwrap();
        let entries = state.snapshot_entries();
        assert_eq!(
            entries
                .iter()
                .map(|e| (
                    e.producer_id,
                    e.coordinator_epoch,
                    e.current_txn_first_offset,
                    e.timestamp
                ))
                .collect::<Vec<_>>(),
            vec![(4, -1, 20, 1_000), (5, 7, -1, 9_000)]
        );
        let encoded = state.to_snapshot();
        let mut loaded = ProducerStateManager::default();
        let far_future = 1_000 + DEFAULT_PRODUCER_ID_EXPIRATION_MS * 10;
        loaded.load_snapshot(
            &decode_snapshot(&encoded).unwrap(),
            far_future,
            DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        );
        // Producer 5 expired; producer 4's open transaction keeps it.
        assert!(loaded.contains(4) && !loaded.contains(5));
        assert_eq!(loaded.first_unstable_offset(), Some(20));
        assert_eq!(loaded.current_txn_first_offset(4), Some(20));
        assert_eq!(
            state.remove_expired(far_future, DEFAULT_PRODUCER_ID_EXPIRATION_MS),
            1
        );
        assert!(state.contains(4));
        // Truncating below the transaction's start forgets it.
        state.truncate(20);
        assert_eq!(state.first_unstable_offset(), None);
        assert!(state.is_empty());
    }
}
