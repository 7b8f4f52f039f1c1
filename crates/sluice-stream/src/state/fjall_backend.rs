//! Keyed state on disk: `FjallStateBackend`, Flink's `EmbeddedRocksDBStateBackend` with
//! fjall (an LSM tree) in place of RocksDB.
//!
//! Every cell is one fjall entry. The key is
//! `key group (u16 BE) | state id (u32 BE) | namespace | serialized key`, key group first
//! so a snapshot of one group is one prefix scan and a rescale hands over contiguous
//! ranges; the namespace is a tag byte (0 void, 1 window) and, for a window, its start and
//! end as big-endian i64 with the sign bit flipped (so they sort numerically). Values are
//! the cell encoded by its state's `CellCodec`.
//!
//! Access: the state layer works on live objects (`get_mut` hands out `&mut Box<dyn Any>`),
//! so `get_mut` decodes the cell into a one-cell cache and the cache is encoded and
//! written back before the next access to the backend (or read in place by a snapshot).
//! Cost per access: one fjall point read and one decode, plus one encode and one write for
//! the previous `get_mut`'s cell; a `put` is one encode and one write. Encoding is JSON
//! today (the checkpoint format), which is the first thing to replace once a benchmark
//! measures this backend.
//!
//! The directory is scratch space, as RocksDB's local directory in Flink: the checkpoint is
//! the durable copy. Opening clears what an earlier run left, and the directory is removed
//! when the backend is dropped.
//!
//! A job selects it with `StreamExecutionEnvironment::set_state_backend`; the state-store
//! tests, the keyed-state, FraudDetector and checkpoint/restart tests run against both
//! backends. Not yet: incremental checkpoints from the LSM files (a snapshot decodes and
//! re-encodes every cell), background TTL cleanup in compaction.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::path::Path;

use super::{CellCodec, CellVisitor, Namespace, StateBackend, StateId, StateKey};
use crate::error::StateError;
use crate::window::TimeWindow;

const PARTITION_NAME: &str = "keyed-state";
const NAMESPACE_VOID: u8 = 0;
const NAMESPACE_WINDOW: u8 = 1;
/// Key group and state id: the fixed-width part of a key.
const PREFIX_BYTES: usize = 2 + 4;

fn backend_error(error: impl fmt::Display) -> StateError {
    StateError::Backend {
        message: error.to_string(),
    }
}

/// The cell the last `get_mut` handed out, to be written back.
struct LoadedCell {
    disk_key: Vec<u8>,
    state: StateId,
    value: Box<dyn Any>,
}

/// Keyed state in a fjall partition.
pub struct FjallStateBackend<K> {
    // Held so the partition stays open; dropped after it.
    cells: ::fjall::PartitionHandle,
    _keyspace: ::fjall::Keyspace,
    codecs: HashMap<StateId, CellCodec>,
    loaded: Option<LoadedCell>,
    _key: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for FjallStateBackend<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FjallStateBackend")
            .field("states", &self.codecs.len())
            .finish()
    }
}

fn encode_namespace(namespace: Namespace, into: &mut Vec<u8>) {
    match namespace {
        Namespace::Void => into.push(NAMESPACE_VOID),
        Namespace::Window(window) => {
            into.push(NAMESPACE_WINDOW);
            for bound in [window.start, window.end] {
                into.extend_from_slice(&((bound as u64) ^ (1 << 63)).to_be_bytes());
            }
        }
    }
}

/// The cell's place in the partition.
fn disk_key<K: StateKey>(
    key_group: u32,
    key: &K,
    state: StateId,
    namespace: Namespace,
) -> Result<Vec<u8>, StateError> {
    let key_group = u16::try_from(key_group).expect("key groups are below 2^15");
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(&key_group.to_be_bytes());
    bytes.extend_from_slice(&state.to_be_bytes());
    encode_namespace(namespace, &mut bytes);
    serde_json::to_writer(&mut bytes, key).map_err(|error| StateError::Serialization {
        state: state.to_string(),
        message: format!("key: {error}"),
    })?;
    Ok(bytes)
}

/// (state, namespace, serialized key) of a disk key; checks what it reads.
fn parse_disk_key(bytes: &[u8]) -> Result<(StateId, Namespace, &[u8]), StateError> {
    let corrupt = || backend_error(format!("corrupt state key of {} bytes", bytes.len()));
    if bytes.len() <= PREFIX_BYTES {
        return Err(corrupt());
    }
    let state = StateId::from_be_bytes(bytes[2..6].try_into().map_err(|_| corrupt())?);
    let rest = &bytes[PREFIX_BYTES..];
    match rest[0] {
        NAMESPACE_VOID => Ok((state, Namespace::Void, &rest[1..])),
        NAMESPACE_WINDOW if rest.len() > 17 => {
            let bound = |at: usize| -> Result<i64, StateError> {
                let raw = u64::from_be_bytes(rest[at..at + 8].try_into().map_err(|_| corrupt())?);
                Ok((raw ^ (1 << 63)) as i64)
            };
            let window = TimeWindow {
                start: bound(1)?,
                end: bound(9)?,
            };
            Ok((state, Namespace::Window(window), &rest[17..]))
        }
        _ => Err(corrupt()),
    }
}

impl<K: StateKey> FjallStateBackend<K> {
    /// Opens (and empties) the backend's partition under `directory`.
    pub fn open(directory: &Path) -> Result<Self, StateError> {
        let keyspace = ::fjall::Config::new(directory)
            .temporary(true)
            .open()
            .map_err(backend_error)?;
        let cells = keyspace
            .open_partition(PARTITION_NAME, ::fjall::PartitionCreateOptions::default())
            .map_err(backend_error)?;
        // Left by an earlier run: the checkpoint, not this directory, is the state to use.
        let stale: Vec<::fjall::UserKey> = cells
            .keys()
            .collect::<Result<_, _>>()
            .map_err(backend_error)?;
        for key in stale {
            cells.remove(key).map_err(backend_error)?;
        }
        Ok(Self {
            cells,
            _keyspace: keyspace,
            codecs: HashMap::new(),
            loaded: None,
            _key: PhantomData,
        })
    }

    fn codec(&self, state: StateId) -> CellCodec {
        *self
            .codecs
            .get(&state)
            .expect("the store registers every state before using it")
    }

    fn encode(&self, state: StateId, value: &dyn Any) -> Result<Vec<u8>, StateError> {
        let encoded = (self.codec(state).encode)(value)
            .and_then(|value| serde_json::to_vec(&value))
            .map_err(|error| StateError::Serialization {
                state: state.to_string(),
                message: error.to_string(),
            })?;
        Ok(encoded)
    }

    fn decode(&self, state: StateId, bytes: &[u8]) -> Result<Box<dyn Any>, StateError> {
        serde_json::from_slice(bytes)
            .and_then(|value| (self.codec(state).decode)(value))
            .map_err(|error| StateError::Serialization {
                state: state.to_string(),
                message: error.to_string(),
            })
    }

    /// Writes the cached cell back unless it is `except` (about to be replaced).
    fn write_back(&mut self, except: Option<&[u8]>) -> Result<(), StateError> {
        let Some(loaded) = self.loaded.take() else {
            return Ok(());
        };
        if except == Some(loaded.disk_key.as_slice()) {
            return Ok(());
        }
        let bytes = self.encode(loaded.state, loaded.value.as_ref())?;
        self.cells
            .insert(loaded.disk_key, bytes)
            .map_err(backend_error)
    }
}

impl<K: StateKey> StateBackend<K> for FjallStateBackend<K> {
    fn register_state(&mut self, state: StateId, codec: CellCodec) {
        self.codecs.insert(state, codec);
    }

    fn get_mut(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<&mut Box<dyn Any>>, StateError> {
        let disk_key = disk_key(key_group, key, state, namespace)?;
        let cached = self
            .loaded
            .as_ref()
            .is_some_and(|loaded| loaded.disk_key == disk_key);
        if !cached {
            self.write_back(None)?;
            let Some(bytes) = self.cells.get(&disk_key).map_err(backend_error)? else {
                return Ok(None);
            };
            let value = self.decode(state, &bytes)?;
            self.loaded = Some(LoadedCell {
                disk_key,
                state,
                value,
            });
        }
        Ok(self.loaded.as_mut().map(|loaded| &mut loaded.value))
    }

    fn put(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
        value: Box<dyn Any>,
    ) -> Result<(), StateError> {
        let disk_key = disk_key(key_group, key, state, namespace)?;
        self.write_back(Some(&disk_key))?;
        let bytes = self.encode(state, value.as_ref())?;
        self.cells.insert(disk_key, bytes).map_err(backend_error)
    }

    fn remove(
        &mut self,
        key_group: u32,
        key: &K,
        state: StateId,
        namespace: Namespace,
    ) -> Result<Option<Box<dyn Any>>, StateError> {
        let disk_key = disk_key(key_group, key, state, namespace)?;
        let removed = match self.loaded.take() {
            Some(loaded) if loaded.disk_key == disk_key => Some(loaded.value),
            other => {
                self.loaded = other;
                self.write_back(None)?;
                match self.cells.get(&disk_key).map_err(backend_error)? {
                    Some(bytes) => Some(self.decode(state, &bytes)?),
                    None => None,
                }
            }
        };
        if removed.is_some() {
            self.cells.remove(disk_key).map_err(backend_error)?;
        }
        Ok(removed)
    }

    fn cell_count(&self, key_group: u32) -> Result<usize, StateError> {
        let key_group = u16::try_from(key_group).expect("key groups are below 2^15");
        let mut count = 0;
        for entry in self.cells.prefix(key_group.to_be_bytes()) {
            entry.map_err(backend_error)?;
            count += 1;
        }
        Ok(count)
    }

    fn for_each_cell(
        &self,
        key_group: u32,
        visit: &mut CellVisitor<'_, K>,
    ) -> Result<(), StateError> {
        let key_group = u16::try_from(key_group).expect("key groups are below 2^15");
        for entry in self.cells.prefix(key_group.to_be_bytes()) {
            let (disk_key, bytes) = entry.map_err(backend_error)?;
            let (state, namespace, key_bytes) = parse_disk_key(&disk_key)?;
            let key: K =
                serde_json::from_slice(key_bytes).map_err(|error| StateError::Serialization {
                    state: state.to_string(),
                    message: format!("key: {error}"),
                })?;
            // The cached cell may be newer than its bytes on disk.
            match &self.loaded {
                Some(loaded) if loaded.disk_key[..] == disk_key[..] => {
                    visit(&key, state, namespace, loaded.value.as_ref())?;
                }
                _ => {
                    let value = self.decode(state, &bytes)?;
                    visit(&key, state, namespace, value.as_ref())?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_keys_round_trip_and_sort_by_key_group_first() {
        let windows = [
            Namespace::Void,
            Namespace::Window(TimeWindow::new(-20, -10)),
            Namespace::Window(TimeWindow::new(i64::MIN, i64::MAX)),
        ];
        for namespace in windows {
            let bytes = disk_key(7, &"key".to_string(), 3, namespace).unwrap();
            let (state, parsed, key) = parse_disk_key(&bytes).unwrap();
            assert_eq!((state, parsed, key), (3, namespace, &b"\"key\""[..]));
        }
        let low = disk_key(1, &"z".to_string(), 9, Namespace::Void).unwrap();
        let high = disk_key(2, &"a".to_string(), 0, Namespace::Void).unwrap();
        assert!(low < high);
        let early = disk_key(1, &0, 0, Namespace::Window(TimeWindow::new(-5, 5))).unwrap();
        let late = disk_key(1, &0, 0, Namespace::Window(TimeWindow::new(3, 13))).unwrap();
        assert!(early < late, "windows sort by start, negative ones first");
        assert!(parse_disk_key(&low[..PREFIX_BYTES]).is_err());
    }
}
