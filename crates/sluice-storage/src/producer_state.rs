//! Idempotent producers' state per partition (Kafka's `ProducerStateManager`): for each
//! producer id, its epoch and the sequence ranges and offsets of its last five batches
//! (`max.in.flight.requests.per.connection` at most 5), so that a retried batch gets its
//! original offsets back instead of being appended twice, and a gap in the sequence is
//! refused.
//!
//! The leader checks and updates it on append; followers update it from the batches
//! they replicate, so a new leader deduplicates retries sent before the failover.
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
//!     timestamp i64 (the last batch's max timestamp),
//!     coordinator_epoch i32, current_txn_first_offset i64
//! ```
//!
//! Sluice has no transactions yet: it writes `coordinator_epoch` -1 and
//! `current_txn_first_offset` -1 (Kafka's values for a producer outside a transaction)
//! and ignores them when reading. Entries are written in producer id order (Kafka's
//! follows its hash map), so a state has one encoding.
//!
//! Producers idle for `producer.id.expiration.ms` (by their last batch's timestamp)
//! are dropped by [`ProducerStateManager::remove_expired`] and when a snapshot loads.

use std::collections::{HashMap, VecDeque};

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
    /// The last batch's timestamp (-1 when none): expiry counts from it.
    last_timestamp: i64,
}

impl Default for ProducerEntry {
    fn default() -> Self {
        ProducerEntry {
            epoch: 0,
            batches: VecDeque::new(),
            last_timestamp: NO_TIMESTAMP,
        }
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
    /// Transactions: -1 until Sluice has them.
    pub coordinator_epoch: i32,
    /// Transactions: -1 (no ongoing transaction) until Sluice has them.
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

#[derive(Debug, Default, Clone)]
pub struct ProducerStateManager {
    producers: HashMap<i64, ProducerEntry>,
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
        let Some(entry) = self.producers.get(&producer_id) else {
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
        match entry.batches.back() {
            Some(last) if first_sequence != next_sequence(last.last_sequence) => {
                Err(SequenceError::OutOfOrder {
                    producer_id,
                    epoch,
                    found: first_sequence,
                    expected: next_sequence(last.last_sequence),
                })
            }
            _ => Ok(SequenceCheck::Append),
        }
    }

    /// Records an appended batch (leader or follower).
    pub fn update(&mut self, producer_id: i64, epoch: i16, batch: BatchMetadata) {
        if producer_id < 0 || batch.first_sequence < 0 {
            return;
        }
        let entry = self.producers.entry(producer_id).or_default();
        if epoch != entry.epoch {
            entry.epoch = epoch;
            entry.batches.clear();
        }
        entry.last_timestamp = batch.timestamp;
        entry.batches.push_back(batch);
        while entry.batches.len() > BATCHES_PER_PRODUCER {
            entry.batches.pop_front();
        }
    }

    /// Forgets batches at or after `end_offset` (the log was truncated there). A
    /// producer left with none is forgotten (and accepted afresh).
    pub fn truncate(&mut self, end_offset: i64) {
        self.producers.retain(|_, entry| {
            entry.batches.retain(|b| b.last_offset < end_offset);
            !entry.batches.is_empty()
        });
    }

    pub fn clear(&mut self) {
        self.producers.clear();
    }

    /// Drops the producers whose last batch is `expiration_ms` or more older than
    /// `now_ms` (Kafka's `removeExpiredProducers` for `producer.id.expiration.ms`).
    /// Returns how many were dropped.
    pub fn remove_expired(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.producers.len();
        self.producers
            .retain(|_, entry| now_ms.saturating_sub(entry.last_timestamp) < expiration_ms);
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
                    coordinator_epoch: -1,
                    current_txn_first_offset: -1,
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
    /// `now_ms` (Kafka's `loadFromSnapshot`). Each producer gets its last batch back.
    pub fn load_snapshot(&mut self, entries: &[SnapshotEntry], now_ms: i64, expiration_ms: i64) {
        self.producers.clear();
        for e in entries {
            if now_ms.saturating_sub(e.timestamp) >= expiration_ms {
                continue;
            }
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
            self.producers.insert(
                e.producer_id,
                ProducerEntry {
                    epoch: e.epoch,
                    batches,
                    last_timestamp: e.timestamp,
                },
            );
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
}
