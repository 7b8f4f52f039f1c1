//! The leader-epoch cache of a partition (Kafka's `LeaderEpochFileCache`): for each
//! leader epoch, the first offset written in it. Replication uses it to answer
//! OffsetsForLeaderEpoch, so that a follower truncates exactly the records a new leader
//! does not have (KIP-101). Persisted to `leader-epoch-checkpoint` on every change.

use std::path::PathBuf;

use crate::checkpoint;
use crate::error::Result;

/// File name in the partition directory.
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";

#[derive(Debug)]
pub struct LeaderEpochCache {
    path: PathBuf,
    /// (epoch, start offset), both strictly increasing.
    entries: Vec<(i32, i64)>,
}

impl LeaderEpochCache {
    /// Loads the cache; a corrupt file is logged and replaced by an empty cache (the
    /// epochs are re-learned from the batches a new leader writes).
    pub fn load(path: PathBuf) -> Result<LeaderEpochCache> {
        let entries = match checkpoint::read_leader_epoch_checkpoint(&path) {
            Ok(entries) => entries,
            Err(crate::StorageError::Corrupt { reason, .. }) => {
                tracing::warn!(path = %path.display(), %reason, "leader-epoch-checkpoint is corrupt; starting empty");
                Vec::new()
            }
            Err(error) => return Err(error),
        };
        let mut cache = LeaderEpochCache {
            path,
            entries: Vec::new(),
        };
        for (epoch, offset) in entries {
            cache.insert(epoch, offset);
        }
        Ok(cache)
    }

    pub fn entries(&self) -> &[(i32, i64)] {
        &self.entries
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|(epoch, _)| *epoch)
    }

    /// Records that `epoch` starts at `start_offset`. An epoch not newer than the latest
    /// is ignored, as Kafka does; entries whose start is at or past `start_offset` under
    /// an older epoch are replaced.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> Result<()> {
        if epoch < 0 || self.latest_epoch().is_some_and(|latest| epoch <= latest) {
            return Ok(());
        }
        self.insert(epoch, start_offset);
        self.persist()
    }

    fn insert(&mut self, epoch: i32, start_offset: i64) {
        self.entries
            .retain(|(e, offset)| *e < epoch && *offset < start_offset);
        self.entries.push((epoch, start_offset));
    }

    /// Removes epochs that start at or after `end_offset` (the log was truncated there).
    pub fn truncate_from_end(&mut self, end_offset: i64) -> Result<()> {
        let before = self.entries.len();
        self.entries.retain(|(_, offset)| *offset < end_offset);
        if self.entries.len() != before {
            self.persist()?;
        }
        Ok(())
    }

    /// The log start offset moved to `start_offset`: epochs that ended before it go, and
    /// the epoch containing it now starts there.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> Result<()> {
        let containing = self
            .entries
            .iter()
            .rposition(|(_, offset)| *offset <= start_offset);
        let Some(index) = containing else {
            return Ok(());
        };
        if index == 0 && self.entries[0].1 == start_offset {
            return Ok(());
        }
        self.entries.drain(..index);
        self.entries[0].1 = start_offset;
        self.persist()
    }

    /// Empties the cache (the log was deleted and restarted at a new offset).
    pub fn clear(&mut self) -> Result<()> {
        self.entries.clear();
        self.persist()
    }

    /// OffsetsForLeaderEpoch: the largest epoch ≤ `epoch` and the offset where it ended
    /// (the start of the next epoch, or `log_end_offset` for the latest). `None` when
    /// `epoch` is older than every epoch known (Kafka answers UNDEFINED_EPOCH).
    pub fn end_offset_for(&self, epoch: i32, log_end_offset: i64) -> Option<(i32, i64)> {
        let index = self.entries.iter().rposition(|(e, _)| *e <= epoch)?;
        let found = self.entries[index].0;
        let end = self
            .entries
            .get(index + 1)
            .map_or(log_end_offset, |(_, start)| *start);
        Some((found, end))
    }

    fn persist(&self) -> Result<()> {
        checkpoint::write_leader_epoch_checkpoint(&self.path, &self.entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_truncate_and_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        let mut cache = LeaderEpochCache::load(path.clone()).unwrap();
        cache.assign(0, 0).unwrap();
        cache.assign(0, 5).unwrap(); // same epoch: ignored
        cache.assign(2, 10).unwrap();
        cache.assign(5, 30).unwrap();
        assert_eq!(cache.entries(), &[(0, 0), (2, 10), (5, 30)]);
        // (requested epoch, expected answer) with log end offset 50.
        let cases = [
            (0, Some((0, 10))),
            (1, Some((0, 10))),
            (2, Some((2, 30))),
            (4, Some((2, 30))),
            (5, Some((5, 50))),
            (9, Some((5, 50))),
            (-1, None),
        ];
        for (epoch, expected) in cases {
            assert_eq!(cache.end_offset_for(epoch, 50), expected, "epoch {epoch}");
        }
        // Survives a reload.
        assert_eq!(
            LeaderEpochCache::load(path.clone()).unwrap().entries(),
            cache.entries()
        );
        cache.truncate_from_end(30).unwrap();
        assert_eq!(cache.entries(), &[(0, 0), (2, 10)]);
        cache.truncate_from_start(12).unwrap();
        assert_eq!(cache.entries(), &[(2, 12)]);
        assert_eq!(LeaderEpochCache::load(path).unwrap().entries(), &[(2, 12)]);
    }

    #[test]
    fn corrupt_file_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        std::fs::write(&path, "garbage").unwrap();
        assert!(LeaderEpochCache::load(path).unwrap().entries().is_empty());
    }
}
