//! Where completed checkpoints are kept: the `CheckpointStorage` trait, a directory
//! (Flink's `FileSystemCheckpointStorage` on a local path) and memory (Flink's
//! `JobManagerCheckpointStorage`, for tests).
//!
//! Directory layout, as Flink's: one directory `chk-N` per checkpoint holding `state.json`
//! (every node's snapshot) and `_metadata`, written last: to `_metadata.inprogress`,
//! synced, then renamed. The rename is the commit point: a `chk-N` without `_metadata`
//! (a crash while writing) is ignored by restore and removed by the next store. The
//! metadata names the checkpoint id and the state file's length, checked on read so a
//! truncated or misplaced state file is an error rather than a silent partial restore.
//! The newest `retained_checkpoints` completed checkpoints are kept, older ones deleted.
//!
//! Object storage (S3 and what `object_store` reaches) is `ObjectStoreCheckpointStorage`
//! in `object_store.rs`: the same layout, with the metadata object's PUT as the commit
//! point.

use std::cell::RefCell;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use super::CompletedCheckpoint;
use crate::error::StreamError;

/// The file whose presence makes a checkpoint directory a completed checkpoint.
pub const METADATA_FILE_NAME: &str = "_metadata";
const METADATA_IN_PROGRESS_FILE_NAME: &str = "_metadata.inprogress";
const STATE_FILE_NAME: &str = "state.json";
const CHECKPOINT_DIRECTORY_PREFIX: &str = "chk-";

/// Keeps completed checkpoints; restore reads the latest.
pub trait CheckpointStorage {
    /// Persists a completed checkpoint; when this returns `Ok` the checkpoint is durable.
    fn store(&mut self, checkpoint: &CompletedCheckpoint) -> Result<(), StreamError>;
    /// The completed checkpoint with the highest id, if any.
    fn latest(&self) -> Result<Option<CompletedCheckpoint>, StreamError>;
}

/// Checkpoints in memory, shared by clones (keep one to inspect what a job stored).
#[derive(Debug, Clone)]
pub struct InMemoryCheckpointStorage {
    checkpoints: Rc<RefCell<Vec<CompletedCheckpoint>>>,
    retained_checkpoints: usize,
}

impl InMemoryCheckpointStorage {
    pub fn new(retained_checkpoints: usize) -> Self {
        Self {
            checkpoints: Rc::default(),
            retained_checkpoints: retained_checkpoints.max(1),
        }
    }

    /// Ids of the retained checkpoints, oldest first.
    pub fn checkpoint_ids(&self) -> Vec<u64> {
        self.checkpoints
            .borrow()
            .iter()
            .map(|checkpoint| checkpoint.checkpoint_id)
            .collect()
    }
}

impl CheckpointStorage for InMemoryCheckpointStorage {
    fn store(&mut self, checkpoint: &CompletedCheckpoint) -> Result<(), StreamError> {
        let mut checkpoints = self.checkpoints.borrow_mut();
        checkpoints.push(checkpoint.clone());
        let excess = checkpoints.len().saturating_sub(self.retained_checkpoints);
        checkpoints.drain(..excess);
        Ok(())
    }

    fn latest(&self) -> Result<Option<CompletedCheckpoint>, StreamError> {
        Ok(self
            .checkpoints
            .borrow()
            .iter()
            .max_by_key(|checkpoint| checkpoint.checkpoint_id)
            .cloned())
    }
}

/// What `_metadata` says about its checkpoint (the same JSON in every storage).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Metadata {
    pub(super) checkpoint_id: u64,
    pub(super) state_file: String,
    pub(super) state_bytes: u64,
}

/// Why a checkpoint's metadata or state failed its checks: the step (`decoding`,
/// `checking`) and the reason. Each storage names the file its own way.
pub(super) struct CheckFailure {
    pub(super) step: &'static str,
    pub(super) reason: String,
}

impl Metadata {
    /// Decodes `_metadata` and checks it names `checkpoint_id`.
    pub(super) fn decode(bytes: &[u8], checkpoint_id: u64) -> Result<Metadata, CheckFailure> {
        let fail = |step, reason: String| CheckFailure { step, reason };
        let metadata: Metadata =
            serde_json::from_slice(bytes).map_err(|error| fail("decoding", error.to_string()))?;
        if metadata.checkpoint_id != checkpoint_id {
            return Err(fail(
                "checking",
                format!("names checkpoint {}", metadata.checkpoint_id),
            ));
        }
        Ok(metadata)
    }

    /// Checks the state's length against this metadata, decodes it and checks it holds
    /// this checkpoint: a truncated or misplaced state is an error, never a partial restore.
    pub(super) fn decode_state(&self, bytes: &[u8]) -> Result<CompletedCheckpoint, CheckFailure> {
        let fail = |step, reason: String| CheckFailure { step, reason };
        if bytes.len() as u64 != self.state_bytes {
            return Err(fail(
                "checking",
                format!("{} bytes, metadata says {}", bytes.len(), self.state_bytes),
            ));
        }
        let checkpoint: CompletedCheckpoint =
            serde_json::from_slice(bytes).map_err(|error| fail("decoding", error.to_string()))?;
        if checkpoint.checkpoint_id != self.checkpoint_id {
            return Err(fail(
                "checking",
                format!("holds checkpoint {}", checkpoint.checkpoint_id),
            ));
        }
        Ok(checkpoint)
    }
}

/// Checkpoints as `chk-N` directories under a root directory.
#[derive(Debug, Clone)]
pub struct DirectoryCheckpointStorage {
    root: PathBuf,
    retained_checkpoints: usize,
}

fn io_error(context: &str, path: &Path, error: impl std::fmt::Display) -> StreamError {
    StreamError::Checkpoint(format!("{context} {}: {error}", path.display()))
}

impl DirectoryCheckpointStorage {
    /// Creates `root` if needed; keeps the newest `retained_checkpoints` (at least one).
    pub fn new(root: impl Into<PathBuf>, retained_checkpoints: usize) -> Result<Self, StreamError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|error| io_error("creating", &root, error))?;
        Ok(Self {
            root,
            retained_checkpoints: retained_checkpoints.max(1),
        })
    }

    /// The directory of checkpoint `checkpoint_id`.
    pub fn checkpoint_directory(&self, checkpoint_id: u64) -> PathBuf {
        self.root
            .join(format!("{CHECKPOINT_DIRECTORY_PREFIX}{checkpoint_id}"))
    }

    /// Every `chk-N` directory: (id, completed), by id.
    fn list(&self) -> Result<Vec<(u64, bool)>, StreamError> {
        let entries =
            fs::read_dir(&self.root).map_err(|error| io_error("listing", &self.root, error))?;
        let mut checkpoints = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|error| io_error("listing", &self.root, error))?;
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|name| name.strip_prefix(CHECKPOINT_DIRECTORY_PREFIX))
                .and_then(|id| id.parse::<u64>().ok())
            else {
                continue;
            };
            let completed = entry.path().join(METADATA_FILE_NAME).is_file();
            checkpoints.push((id, completed));
        }
        checkpoints.sort_unstable();
        Ok(checkpoints)
    }

    fn read(&self, checkpoint_id: u64) -> Result<CompletedCheckpoint, StreamError> {
        let directory = self.checkpoint_directory(checkpoint_id);
        let metadata_path = directory.join(METADATA_FILE_NAME);
        let metadata_bytes =
            fs::read(&metadata_path).map_err(|error| io_error("reading", &metadata_path, error))?;
        let metadata = Metadata::decode(&metadata_bytes, checkpoint_id)
            .map_err(|failure| io_error(failure.step, &metadata_path, failure.reason))?;
        let state_path = directory.join(&metadata.state_file);
        let state_bytes =
            fs::read(&state_path).map_err(|error| io_error("reading", &state_path, error))?;
        let checkpoint = metadata
            .decode_state(&state_bytes)
            .map_err(|failure| io_error(failure.step, &state_path, failure.reason))?;
        Ok(checkpoint)
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), StreamError> {
    let mut file = fs::File::create(path).map_err(|error| io_error("creating", path, error))?;
    file.write_all(bytes)
        .map_err(|error| io_error("writing", path, error))?;
    file.sync_all()
        .map_err(|error| io_error("syncing", path, error))
}

impl CheckpointStorage for DirectoryCheckpointStorage {
    fn store(&mut self, checkpoint: &CompletedCheckpoint) -> Result<(), StreamError> {
        let directory = self.checkpoint_directory(checkpoint.checkpoint_id);
        if directory.exists() {
            // Left by an attempt that crashed before its commit point: not a checkpoint.
            fs::remove_dir_all(&directory)
                .map_err(|error| io_error("removing", &directory, error))?;
        }
        fs::create_dir_all(&directory).map_err(|error| io_error("creating", &directory, error))?;
        let state_bytes = serde_json::to_vec(checkpoint)
            .map_err(|error| io_error("encoding", &directory, error))?;
        write_synced(&directory.join(STATE_FILE_NAME), &state_bytes)?;
        let metadata = Metadata {
            checkpoint_id: checkpoint.checkpoint_id,
            state_file: STATE_FILE_NAME.to_string(),
            state_bytes: state_bytes.len() as u64,
        };
        let metadata_bytes = serde_json::to_vec(&metadata)
            .map_err(|error| io_error("encoding", &directory, error))?;
        let in_progress = directory.join(METADATA_IN_PROGRESS_FILE_NAME);
        write_synced(&in_progress, &metadata_bytes)?;
        let committed = directory.join(METADATA_FILE_NAME);
        fs::rename(&in_progress, &committed)
            .map_err(|error| io_error("committing", &committed, error))?;

        // Retention: the newest completed ones stay; older completed ones and abandoned
        // attempts below this id go.
        let listed = self.list()?;
        let completed: Vec<u64> = listed
            .iter()
            .filter(|(_, completed)| *completed)
            .map(|(id, _)| *id)
            .collect();
        let excess = completed.len().saturating_sub(self.retained_checkpoints);
        let mut doomed: Vec<u64> = completed[..excess].to_vec();
        doomed.extend(
            listed
                .iter()
                .filter(|(id, completed)| !completed && *id < checkpoint.checkpoint_id)
                .map(|(id, _)| *id),
        );
        for id in doomed {
            let path = self.checkpoint_directory(id);
            fs::remove_dir_all(&path).map_err(|error| io_error("removing", &path, error))?;
        }
        Ok(())
    }

    fn latest(&self) -> Result<Option<CompletedCheckpoint>, StreamError> {
        let latest = self
            .list()?
            .into_iter()
            .filter(|(_, completed)| *completed)
            .map(|(id, _)| id)
            .max();
        latest.map(|id| self.read(id)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(checkpoint_id: u64) -> CompletedCheckpoint {
        CompletedCheckpoint {
            checkpoint_id,
            job_name: "job".into(),
            timestamp_ms: checkpoint_id as i64 * 100,
            max_parallelism: 128,
            nodes: Vec::new(),
        }
    }

    #[test]
    fn keeps_the_newest_and_ignores_directories_without_metadata() {
        let root = tempfile::tempdir().unwrap();
        let mut storage = DirectoryCheckpointStorage::new(root.path(), 2).unwrap();
        assert_eq!(storage.latest().unwrap(), None);
        for id in 1..=3 {
            storage.store(&checkpoint(id)).unwrap();
        }
        assert!(
            !storage.checkpoint_directory(1).exists(),
            "beyond retention"
        );
        assert!(
            storage
                .checkpoint_directory(2)
                .join(METADATA_FILE_NAME)
                .is_file()
        );
        assert_eq!(storage.latest().unwrap(), Some(checkpoint(3)));

        // A crash while writing checkpoint 4: its state is there, its metadata is not.
        let torn = storage.checkpoint_directory(4);
        fs::create_dir_all(&torn).unwrap();
        fs::write(torn.join(STATE_FILE_NAME), b"{").unwrap();
        assert_eq!(storage.latest().unwrap(), Some(checkpoint(3)));

        // The next attempt at id 4 replaces the torn directory.
        storage.store(&checkpoint(4)).unwrap();
        assert_eq!(storage.latest().unwrap(), Some(checkpoint(4)));
        assert!(!storage.checkpoint_directory(2).exists());
    }

    #[test]
    fn a_truncated_state_file_is_an_error() {
        let root = tempfile::tempdir().unwrap();
        let mut storage = DirectoryCheckpointStorage::new(root.path(), 1).unwrap();
        storage.store(&checkpoint(7)).unwrap();
        let state = storage.checkpoint_directory(7).join(STATE_FILE_NAME);
        let bytes = fs::read(&state).unwrap();
        fs::write(&state, &bytes[..bytes.len() - 1]).unwrap();
        assert!(matches!(
            storage.latest(),
            Err(StreamError::Checkpoint(message)) if message.contains("metadata says")
        ));
    }

    #[test]
    fn memory_storage_keeps_the_newest() {
        let mut storage = InMemoryCheckpointStorage::new(2);
        for id in 1..=3 {
            storage.store(&checkpoint(id)).unwrap();
        }
        assert_eq!(storage.checkpoint_ids(), vec![2, 3]);
        assert_eq!(storage.latest().unwrap(), Some(checkpoint(3)));
    }
}
