//! The transaction index of a segment (Kafka's `TransactionIndex`):
//! `{base_offset:020}.txnindex`, one entry per transaction aborted by a marker in that
//! segment, so a read_committed fetch learns which records to drop without reading
//! the log (Kafka's `collectAbortedTxns`).
//!
//! Format (Kafka's `AbortedTxn`), entries of 34 bytes back to back, big-endian, in the
//! order of their markers:
//!
//! ```text
//! version i16 = 0, producer_id i64, first_offset i64,
//! last_offset i64 (the marker's offset),
//! last_stable_offset i64 (the first offset of the earliest other transaction ongoing
//!                         when the marker was appended, else the marker's offset + 1)
//! ```
//!
//! As in Kafka, the file is created by the first abort in its segment: a segment with
//! none has no `.txnindex`. An entry is written when its marker is appended (one
//! open-write-close: aborts are rare) and is in the page cache then; it is fsynced with
//! its segment (flush, the flush after a roll, a clean close). Recovery rebuilds the
//! index of every recovered segment from its markers while replaying the producer
//! state, so an index cut short by a crash is rewritten, never trusted; an index that
//! fails its checks at open (length, version, offsets outside the segment, offsets not
//! increasing) is rebuilt the same way. A damaged file found while serving a fetch is
//! an error, not a panic.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result, StorageError};

/// Suffix of transaction index files.
pub const TXN_INDEX_SUFFIX: &str = ".txnindex";
/// The one entry version Kafka writes (`AbortedTxn.CURRENT_VERSION`).
pub const ABORTED_TXN_VERSION: i16 = 0;
/// Bytes per entry (`AbortedTxn.TOTAL_SIZE`).
pub const ABORTED_TXN_BYTES: usize = 2 + 8 + 8 + 8 + 8;

/// An aborted transaction, as the index stores it and a read_committed fetch returns
/// it (the fetch response needs the producer id and first offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of the ABORT marker.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; ABORTED_TXN_BYTES] {
        let mut out = [0u8; ABORTED_TXN_BYTES];
        out[0..2].copy_from_slice(&ABORTED_TXN_VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }
}

/// Decodes a whole `.txnindex` file. A length that is not a whole number of entries or
/// an unknown version is an error (Kafka stops at a partial entry and refuses a newer
/// version).
pub fn decode_transaction_index(bytes: &[u8]) -> std::result::Result<Vec<AbortedTxn>, String> {
    if !bytes.len().is_multiple_of(ABORTED_TXN_BYTES) {
        return Err(format!(
            "{} bytes is not a whole number of {ABORTED_TXN_BYTES}-byte entries",
            bytes.len()
        ));
    }
    let i64_at = |entry: &[u8], at: usize| {
        i64::from_be_bytes(
            entry[at..at + 8]
                .try_into()
                .expect("8 bytes of a whole entry"),
        )
    };
    bytes
        .chunks_exact(ABORTED_TXN_BYTES)
        .enumerate()
        .map(|(index, entry)| {
            let version = i16::from_be_bytes([entry[0], entry[1]]);
            if version != ABORTED_TXN_VERSION {
                return Err(format!("entry {index} has version {version}"));
            }
            Ok(AbortedTxn {
                producer_id: i64_at(entry, 2),
                first_offset: i64_at(entry, 10),
                last_offset: i64_at(entry, 18),
                last_stable_offset: i64_at(entry, 26),
            })
        })
        .collect()
}

/// Checks decoded entries against their segment `[base_offset, next_offset)`: each
/// marker inside it, after its transaction's first offset, in increasing order.
pub fn check_entries(
    entries: &[AbortedTxn],
    base_offset: i64,
    next_offset: i64,
) -> std::result::Result<(), String> {
    let mut previous: Option<i64> = None;
    for (index, txn) in entries.iter().enumerate() {
        if txn.last_offset < base_offset || txn.last_offset >= next_offset {
            return Err(format!(
                "entry {index}: marker offset {} is outside the segment [{base_offset}, {next_offset})",
                txn.last_offset
            ));
        }
        if txn.first_offset > txn.last_offset || txn.first_offset < 0 {
            return Err(format!(
                "entry {index}: first offset {} is not before its marker {}",
                txn.first_offset, txn.last_offset
            ));
        }
        if previous.is_some_and(|p| p >= txn.last_offset) {
            return Err(format!(
                "entry {index}: marker offset {} does not follow the previous entry's",
                txn.last_offset
            ));
        }
        previous = Some(txn.last_offset);
    }
    Ok(())
}

/// One segment's transaction index. Holds no file handle: aborts and read_committed
/// fetches open the file when they need it, and only when it has entries.
#[derive(Debug)]
pub(crate) struct TransactionIndex {
    path: PathBuf,
    /// Entries in the file (its length / 34), so that empty indexes cost no I/O.
    entries: u64,
    /// The last entry's marker offset: markers only grow.
    last_offset: Option<i64>,
    /// Written since the last fsync.
    dirty: bool,
}

impl TransactionIndex {
    /// An index with no entries, whose file (if any) is removed.
    pub fn create(path: PathBuf) -> Result<Self> {
        let mut index = TransactionIndex {
            path,
            entries: 0,
            last_offset: None,
            dirty: false,
        };
        index.reset()?;
        Ok(index)
    }

    /// The index of an existing segment before [`TransactionIndex::open`] read it.
    pub fn unloaded(path: PathBuf) -> Self {
        TransactionIndex {
            path,
            entries: 0,
            last_offset: None,
            dirty: false,
        }
    }

    /// Opens the index of an existing segment `[base_offset, next_offset)`. Returns the
    /// index and whether its file passed the checks; a failed one is emptied and must
    /// be rebuilt by the caller.
    pub fn open(path: PathBuf, base_offset: i64, next_offset: i64) -> Result<(Self, bool)> {
        let mut index = TransactionIndex {
            path,
            entries: 0,
            last_offset: None,
            dirty: false,
        };
        let checked = match std::fs::read(&index.path) {
            Ok(bytes) => decode_transaction_index(&bytes).and_then(|entries| {
                check_entries(&entries, base_offset, next_offset).map(|()| entries)
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => {
                return Err(StorageError::Io {
                    path: index.path,
                    source,
                });
            }
        };
        match checked {
            Ok(entries) => {
                index.entries = entries.len() as u64;
                index.last_offset = entries.last().map(|t| t.last_offset);
                Ok((index, true))
            }
            Err(reason) => {
                tracing::warn!(path = %index.path.display(), %reason, "corrupt transaction index; rebuilding it");
                index.reset()?;
                Ok((index, false))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Appends an entry (page cache; [`TransactionIndex::sync`] makes it durable).
    pub fn append(&mut self, txn: &AbortedTxn) -> Result<()> {
        if let Some(last) = self.last_offset
            && last >= txn.last_offset
        {
            return Err(StorageError::Corrupt {
                path: self.path.clone(),
                reason: format!(
                    "aborted transaction marker offset {} does not follow {last}",
                    txn.last_offset
                ),
            });
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .at(&self.path)?;
        file.write_all(&txn.encode()).at(&self.path)?;
        self.entries += 1;
        self.last_offset = Some(txn.last_offset);
        self.dirty = true;
        Ok(())
    }

    /// Every entry. A file that no longer decodes is an error.
    pub fn entries(&self) -> Result<Vec<AbortedTxn>> {
        if self.entries == 0 {
            return Ok(Vec::new());
        }
        let bytes = std::fs::read(&self.path).at(&self.path)?;
        decode_transaction_index(&bytes).map_err(|reason| StorageError::Corrupt {
            path: self.path.clone(),
            reason,
        })
    }

    /// The aborted transactions overlapping `[fetch_offset, upper_bound_offset)`, and
    /// whether the search is complete: an entry whose last stable offset reaches the
    /// upper bound means no later segment can hold one that overlaps (Kafka's
    /// `collectAbortedTxns`).
    pub fn collect(
        &self,
        fetch_offset: i64,
        upper_bound_offset: i64,
    ) -> Result<(Vec<AbortedTxn>, bool)> {
        let mut found = Vec::new();
        for txn in self.entries()? {
            if txn.last_offset >= fetch_offset && txn.first_offset < upper_bound_offset {
                found.push(txn);
            }
            if txn.last_stable_offset >= upper_bound_offset {
                return Ok((found, true));
            }
        }
        Ok((found, false))
    }

    /// Removes the entries whose marker is at or after `offset` (Kafka's `truncateTo`).
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        if self.entries == 0 || self.last_offset.is_some_and(|last| last < offset) {
            return Ok(());
        }
        let kept: Vec<AbortedTxn> = self
            .entries()?
            .into_iter()
            .take_while(|txn| txn.last_offset < offset)
            .collect();
        let file = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        file.set_len((kept.len() * ABORTED_TXN_BYTES) as u64)
            .at(&self.path)?;
        file.sync_all().at(&self.path)?;
        self.entries = kept.len() as u64;
        self.last_offset = kept.last().map(|t| t.last_offset);
        Ok(())
    }

    /// Removes every entry, and the file (Kafka's `reset`, before a rebuild).
    pub fn reset(&mut self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StorageError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        }
        self.entries = 0;
        self.last_offset = None;
        self.dirty = false;
        Ok(())
    }

    /// fsyncs the entries written since the last sync.
    pub fn sync(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        match std::fs::File::open(&self.path).and_then(|f| f.sync_data()) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(StorageError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        }
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn txn(producer_id: i64, first_offset: i64, last_offset: i64, lso: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id,
            first_offset,
            last_offset,
            last_stable_offset: lso,
        }
    }

    /// Kafka's `AbortedTxn` layout, field by field.
    #[test]
    fn entries_are_kafkas_34_bytes() {
        let entry = txn(0x0102, 5, 9, 10).encode();
        #[rustfmt::skip]
        let expected: Vec<u8> = [
            &[0u8, 0][..],                 // version 0
            &[0, 0, 0, 0, 0, 0, 1, 2],      // producer id
            &[0, 0, 0, 0, 0, 0, 0, 5],      // first offset
            &[0, 0, 0, 0, 0, 0, 0, 9],      // last offset
            &[0, 0, 0, 0, 0, 0, 0, 10],     // last stable offset
        ]
        .concat();
        assert_eq!(entry.to_vec(), expected);
        assert_eq!(
            decode_transaction_index(&expected).unwrap(),
            vec![txn(0x0102, 5, 9, 10)]
        );
    }

    #[test]
    fn damaged_files_are_refused_or_rebuilt_never_panicked_on() {
        let good = [txn(1, 0, 3, 4).encode(), txn(2, 2, 6, 7).encode()].concat();
        for len in 1..good.len() {
            let decoded = decode_transaction_index(&good[..len]);
            assert_eq!(decoded.is_ok(), len == ABORTED_TXN_BYTES, "length {len}");
        }
        let mut newer = good.clone();
        newer[1] = 1;
        assert!(decode_transaction_index(&newer).is_err());
        // Offsets outside the segment, or not increasing.
        let entries = decode_transaction_index(&good).unwrap();
        assert!(check_entries(&entries, 0, 7).is_ok());
        assert!(check_entries(&entries, 0, 6).is_err());
        assert!(check_entries(&entries, 4, 7).is_err());
        let reversed: Vec<AbortedTxn> = entries.iter().rev().copied().collect();
        assert!(check_entries(&reversed, 0, 7).is_err());

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        std::fs::write(&path, &good[..40]).unwrap();
        let (index, valid) = TransactionIndex::open(path.clone(), 0, 7).unwrap();
        assert!(!valid && index.is_empty() && !path.exists());
        std::fs::write(&path, &good).unwrap();
        let (index, valid) = TransactionIndex::open(path.clone(), 0, 7).unwrap();
        assert!(valid);
        assert_eq!(index.entries().unwrap(), entries);
        // Damaged behind its back: a read is an error.
        std::fs::write(&path, &good[..35]).unwrap();
        assert!(matches!(
            index.collect(0, 10),
            Err(StorageError::Corrupt { .. })
        ));
    }

    #[test]
    fn append_collect_truncate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000100.txnindex");
        let mut index = TransactionIndex::create(path.clone()).unwrap();
        assert!(!path.exists(), "created lazily");
        assert_eq!(index.collect(0, i64::MAX).unwrap(), (vec![], false));
        let entries = [
            txn(1, 90, 105, 100),
            txn(2, 100, 110, 111),
            txn(3, 112, 120, 121),
        ];
        for entry in &entries {
            index.append(entry).unwrap();
        }
        assert!(
            index.append(&txn(4, 100, 120, 121)).is_err(),
            "not after the last"
        );
        index.sync().unwrap();
        assert_eq!(std::fs::read(&path).unwrap().len(), 3 * ABORTED_TXN_BYTES);
        // Kafka's rule: overlap with [fetch, upper), stop at an entry whose LSO reaches
        // the upper bound.
        let cases: &[(i64, i64, &[usize], bool)] = &[
            (0, 95, &[0], true),
            (106, 112, &[1], true),
            (111, 200, &[2], false),
            (0, 200, &[0, 1, 2], false),
            (106, 111, &[1], true),
            (121, 130, &[], false),
        ];
        for (fetch, upper, expected, complete) in cases {
            let wanted: Vec<AbortedTxn> = expected.iter().map(|i| entries[*i]).collect();
            assert_eq!(
                index.collect(*fetch, *upper).unwrap(),
                (wanted, *complete),
                "[{fetch}, {upper})"
            );
        }
        index.truncate_to(110).unwrap();
        assert_eq!(index.entries().unwrap(), entries[..1].to_vec());
        index.append(&txn(5, 106, 108, 109)).unwrap();
        index.truncate_to(0).unwrap();
        assert!(index.is_empty());
        index.reset().unwrap();
        assert!(!path.exists());
    }
}
