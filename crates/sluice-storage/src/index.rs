//! What the two sparse indexes of a segment share ([`crate::offset_index`],
//! [`crate::time_index`]): Kafka's file formats,
//!
//! - `.index` (offset index): 8-byte entries, relative offset (u32 BE) → file position
//!   (u32 BE) of the batch whose *last* offset is that offset; an entry every
//!   `index.interval.bytes` of log.
//! - `.timeindex` (time index): 12-byte entries, timestamp (i64 BE) → relative offset
//!   (u32 BE) of the batch where the segment's max timestamp first reached that value;
//!   written beside an offset-index entry when the max timestamp has grown, and at roll.
//!
//! Both are sorted on both columns, so a lookup is a binary search. The active segment
//! keeps its entries in memory (at most `segment.index.bytes` worth) and appends the new
//! ones to the file at flush; an inactive segment's index is searched in its file with
//! `pread`, so a partition's memory does not grow with its number of segments.
//!
//! Unlike Kafka, Sluice does not preallocate or memory-map index files: a file holds
//! exactly its entries, which Kafka's tools read the same way.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result, StorageError};
#[cfg(test)]
use crate::offset_index::OffsetEntry;

pub(crate) trait IndexEntry: Copy + std::fmt::Debug {
    const SIZE: usize;
    fn decode(bytes: &[u8]) -> Self;
    fn encode(&self, out: &mut Vec<u8>);
    fn relative_offset(&self) -> u32;
}

/// The in-memory index of the active segment, mirrored to its file at flush.
#[derive(Debug)]
pub(crate) struct Index<E: IndexEntry> {
    path: PathBuf,
    entries: Vec<E>,
    /// Entries `..persisted` are in the file as they are in memory.
    persisted: usize,
    /// The file is fsynced as it is (`..persisted`, nothing truncated since), or holds
    /// nothing and never did: a flush with nothing new skips the fsync, so a clean
    /// shutdown of a node with many idle partitions does not wait on hundreds of them
    /// (under another process's heavy writes each fsync can take tens of milliseconds).
    synced: bool,
    max_entries: usize,
}

impl<E: IndexEntry> Index<E> {
    pub fn empty(path: PathBuf, max_entries: usize) -> Index<E> {
        Index {
            path,
            entries: Vec::new(),
            persisted: 0,
            synced: false,
            max_entries,
        }
    }

    /// Loads every entry of the file, or `None` when it is missing or fails `check`
    /// (the caller then rebuilds it from the log).
    pub fn load(
        path: PathBuf,
        max_entries: usize,
        check: impl Fn(&[E]) -> std::result::Result<(), String>,
    ) -> Result<Option<Index<E>>> {
        let entries = match read_entries::<E>(&path)? {
            Some(entries) => entries,
            None => return Ok(None),
        };
        if let Err(reason) = check(&entries) {
            tracing::warn!(path = %path.display(), %reason, "index is corrupt; rebuilding it");
            return Ok(None);
        }
        let persisted = entries.len();
        Ok(Some(Index {
            path,
            entries,
            persisted,
            // Read back, not known durable (the process may have stopped before an
            // fsync): the first flush syncs it.
            synced: false,
            max_entries: max_entries.max(persisted),
        }))
    }

    pub fn entries(&self) -> &[E] {
        &self.entries
    }

    pub fn last(&self) -> Option<E> {
        self.entries.last().copied()
    }

    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.max_entries
    }

    /// Appends an entry. Entries at or past its offset can only be stale (a damaged
    /// index file that passed the checks at open, or entries of data since truncated):
    /// they are dropped, so the index stays sorted and heals as the segment grows.
    pub fn push(&mut self, entry: E) {
        let offset = entry.relative_offset();
        if self
            .entries
            .last()
            .is_some_and(|last| last.relative_offset() >= offset)
        {
            tracing::warn!(path = %self.path.display(), offset, "dropping index entries at or past a new entry");
            self.truncate_while(|e| e.relative_offset() >= offset);
        }
        self.entries.push(entry);
    }

    /// Drops the entries `keep` rejects at the end of the index.
    pub fn truncate_while(&mut self, drop: impl Fn(&E) -> bool) {
        while self.entries.last().is_some_and(&drop) {
            self.entries.pop();
        }
        if self.entries.len() < self.persisted {
            self.persisted = self.entries.len();
            self.synced = false;
        }
    }

    /// Writes unpersisted entries (or the whole file after a truncation) and, with
    /// `sync`, fsyncs it.
    pub fn persist(&mut self, sync: bool) -> Result<()> {
        if self.synced && self.persisted == self.entries.len() {
            return Ok(());
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&self.path)
            .at(&self.path)?;
        let length = file.metadata().at(&self.path)?.len();
        let persisted_bytes = (self.persisted * E::SIZE) as u64;
        if length != persisted_bytes {
            file.set_len(persisted_bytes).at(&self.path)?;
        }
        if self.persisted < self.entries.len() {
            let mut out = Vec::with_capacity((self.entries.len() - self.persisted) * E::SIZE);
            for entry in &self.entries[self.persisted..] {
                entry.encode(&mut out);
            }
            file.write_all_at(&out, persisted_bytes).at(&self.path)?;
            self.persisted = self.entries.len();
        }
        // An index that never had an entry needs no fsync: lost, it is rebuilt (empty)
        // from its segment at open.
        let nothing = length == 0 && self.entries.is_empty();
        if sync && !nothing {
            file.sync_data().at(&self.path)?;
        }
        self.synced = sync || nothing;
        Ok(())
    }
}

/// Reads every entry of an index file; `None` when the file is missing or its size is
/// not a whole number of entries.
pub(crate) fn read_entries<E: IndexEntry>(path: &Path) -> Result<Option<Vec<E>>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StorageError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    if bytes.len() % E::SIZE != 0 {
        tracing::warn!(path = %path.display(), size = bytes.len(), "index size is not a multiple of its entry size");
        return Ok(None);
    }
    Ok(Some(bytes.chunks_exact(E::SIZE).map(E::decode).collect()))
}

/// The last entry of `entries` for which `at_or_before` holds (entries are sorted so that
/// it holds for a prefix), or `None` when it holds for none.
pub(crate) fn floor_in_memory<E: IndexEntry>(
    entries: &[E],
    at_or_before: impl Fn(&E) -> bool,
) -> Option<E> {
    let count = entries.partition_point(at_or_before);
    count.checked_sub(1).map(|index| entries[index])
}

/// [`floor_in_memory`] over an index file, with one `pread` per probe: log2(entries)
/// reads of 8 or 12 bytes. A file whose size is not a whole number of entries is searched
/// over its whole entries.
pub(crate) fn floor_in_file<E: IndexEntry>(
    path: &Path,
    at_or_before: impl Fn(&E) -> bool,
) -> Result<Option<E>> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StorageError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let count = (file.metadata().at(path)?.len() as usize) / E::SIZE;
    let mut buffer = [0u8; 16];
    let mut read = |index: usize| -> Result<E> {
        file.read_exact_at(&mut buffer[..E::SIZE], (index * E::SIZE) as u64)
            .at(path)?;
        Ok(E::decode(&buffer[..E::SIZE]))
    };
    // Invariant: entries below `low` satisfy the predicate, entries at or above `high`
    // do not.
    let (mut low, mut high) = (0usize, count);
    let mut best = None;
    while low < high {
        let middle = low + (high - low) / 2;
        let entry = read(middle)?;
        if at_or_before(&entry) {
            best = Some(entry);
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_and_memory_searches_agree() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let mut index = Index::<OffsetEntry>::empty(path.clone(), 1000);
        for i in 0..100u32 {
            index.push(OffsetEntry {
                relative_offset: i * 10 + 5,
                position: i * 4096,
            });
        }
        index.persist(true).unwrap();
        for target in 0..1100u32 {
            let in_memory = floor_in_memory(index.entries(), |e| e.relative_offset <= target);
            let in_file =
                floor_in_file::<OffsetEntry>(&path, |e| e.relative_offset <= target).unwrap();
            assert_eq!(in_memory, in_file, "target {target}");
        }
        index.truncate_while(|e| e.relative_offset >= 500);
        index.push(OffsetEntry {
            relative_offset: 600,
            position: 999_999,
        });
        index.persist(false).unwrap();
        let entries = read_entries::<OffsetEntry>(&path).unwrap().unwrap();
        assert_eq!(entries.len(), 51);
        assert_eq!(entries.last().unwrap().relative_offset, 600);
    }

    #[test]
    fn a_flush_with_nothing_new_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let mut index = Index::<OffsetEntry>::empty(path.clone(), 1000);
        // Created on the first flush, even empty (Kafka's tools expect the file).
        index.persist(true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        index.push(OffsetEntry {
            relative_offset: 5,
            position: 0,
        });
        index.persist(true).unwrap();
        assert_eq!(
            read_entries::<OffsetEntry>(&path).unwrap().unwrap().len(),
            1
        );
        // Synced and unchanged: the next flush does not open the file (a file removed
        // behind the index's back stays removed).
        std::fs::remove_file(&path).unwrap();
        index.persist(true).unwrap();
        assert!(!path.exists());
        // A new entry, or an unsynced write, is written again.
        index.push(OffsetEntry {
            relative_offset: 9,
            position: 100,
        });
        index.persist(false).unwrap();
        assert!(path.exists());
        index.persist(true).unwrap();
        // A truncation is written (and synced) even with no new entry.
        index.truncate_while(|e| e.relative_offset >= 9);
        index.persist(true).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 8);
    }
}
