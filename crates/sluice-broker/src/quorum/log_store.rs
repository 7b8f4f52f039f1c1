//! The Raft log of the metadata quorum, kept in `__cluster_metadata-0` in Kafka's
//! on-disk layout, one record batch per Raft entry:
//!
//! - a normal entry is a batch of metadata records (Kafka's framing, so Kafka's
//!   `DumpLogSegments --cluster-metadata-decoder` reads the log);
//! - a blank entry (a new leader's first entry) and a membership change are a batch of
//!   one NoOpRecord;
//! - the batch's partition leader epoch is the Raft term, and its first record carries
//!   a `sluice.raft` header: the entry's log id (term, leader, index), for a
//!   membership change the membership, and for a normal entry its write id and the
//!   partition epochs it was planned on, as JSON.
//!
//! Raft indexes are consecutive and Kafka offsets count records, so the store keeps an
//! index → offset map, rebuilt from the headers when the log is opened.
//!
//! The vote, the committed log id and the last purged log id live in `quorum-state`
//! beside the segments (written atomically and fsynced). Appends are fsynced before
//! openraft is told they are durable: an entry a follower acknowledged survives a
//! power loss, which is what lets the leader count it towards the quorum.

// openraft's trait methods return its `StorageError` (over 200 bytes); the helpers
// here return what those methods return.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, LogState, Membership, RaftLogReader, StorageError,
    StorageIOError, Vote,
};
use serde::{Deserialize, Serialize};
use sluice_metadata::{METADATA_LOG_DIR, MetadataRecord};
use sluice_protocol::{Compression, Header, NewRecord, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions};

use super::{NodeId, PlannedOn, Proposal, QuorumStartError, TypeConfig};

/// The record header naming a batch's Raft entry.
pub const RAFT_HEADER: &str = "sluice.raft";
const STATE_FILE: &str = "quorum-state";

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

/// What a batch's `sluice.raft` header holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct EntryMeta {
    log_id: LogId<NodeId>,
    /// "blank", "normal" or "membership".
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    membership: Option<Membership<NodeId, BasicNode>>,
    /// A normal entry's [`Proposal::write_id`].
    #[serde(default, skip_serializing_if = "is_zero")]
    write_id: u64,
    /// A normal entry's [`Proposal::planned_on`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    planned_on: Vec<PlannedOn>,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct QuorumState {
    vote: Option<Vote<NodeId>>,
    committed: Option<LogId<NodeId>>,
    purged: Option<LogId<NodeId>>,
}

struct Store {
    log: Log,
    dir: PathBuf,
    /// Raft index → (base offset of its batch, log id).
    index: BTreeMap<u64, (i64, LogId<NodeId>)>,
    state: QuorumState,
}

/// The log storage handed to openraft; clones share one store (openraft reads through
/// a clone while it appends through another).
#[derive(Clone)]
pub struct LogStore {
    store: Arc<Mutex<Store>>,
}

fn lock(store: &Mutex<Store>) -> MutexGuard<'_, Store> {
    store.lock().unwrap_or_else(PoisonError::into_inner)
}

fn vote_error(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_vote(&e).into()
}

fn read_error(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::read_logs(&e).into()
}

fn write_error(e: impl std::error::Error + 'static) -> StorageError<NodeId> {
    StorageIOError::write_logs(&e).into()
}

/// A metadata log entry that does not decode.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Malformed(String);

impl From<&str> for Malformed {
    fn from(reason: &str) -> Self {
        Malformed(reason.to_string())
    }
}

impl LogStore {
    /// Opens (or creates) the Raft log under `metadata_dir/__cluster_metadata-0`.
    pub fn open(
        metadata_dir: &Path,
        clean_shutdown: bool,
    ) -> std::result::Result<LogStore, QuorumStartError> {
        let dir = metadata_dir.join(METADATA_LOG_DIR);
        // Kafka's metadata log segments (`metadata.log.segment.bytes`, 1 GiB) and no
        // retention: snapshots bound the log. An entry may be large (a topic with
        // thousands of partitions is one entry), so the record size limit is generous.
        let config = LogConfig {
            max_message_bytes: 64 << 20,
            retention_ms: -1,
            retention_bytes: -1,
            ..LogConfig::default()
        };
        let log = Log::open(
            &dir,
            config,
            LogOpenOptions {
                clean_shutdown,
                ..LogOpenOptions::default()
            },
        )
        .map_err(|e| QuorumStartError::from_log(dir.clone(), e))?;
        let state_path = dir.join(STATE_FILE);
        let state = match std::fs::read(&state_path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| QuorumStartError::Corrupt {
                path: state_path.clone(),
                reason: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => QuorumState::default(),
            Err(source) => {
                return Err(QuorumStartError::Io {
                    path: state_path,
                    source,
                });
            }
        };
        let mut store = Store {
            log,
            dir,
            index: BTreeMap::new(),
            state,
        };
        store.rebuild_index()?;
        Ok(LogStore {
            store: Arc::new(Mutex::new(store)),
        })
    }

    /// The offset the next metadata record gets, and the epoch (term) of the last entry.
    pub fn end_offset_and_epoch(&self) -> (i64, i32) {
        let store = lock(&self.store);
        let epoch = store
            .index
            .values()
            .next_back()
            .map_or(0, |(_, id)| id.leader_id.term as i32);
        (store.log.log_end_offset(), epoch)
    }

    /// The metadata log offset where the entries after `index` begin (the log end when
    /// there are none): what "caught up to `index`" is in offsets.
    pub fn end_offset_after(&self, index: Option<u64>) -> i64 {
        let store = lock(&self.store);
        let from = index.map_or(0, |i| i + 1);
        store
            .index
            .range(from..)
            .next()
            .map_or(store.log.log_end_offset(), |(_, (offset, _))| *offset)
    }

    /// Flushes and closes the log.
    pub fn close(&self) {
        let mut store = lock(&self.store);
        if let Err(error) = store.log.close() {
            tracing::error!(%error, "closing the metadata log failed");
        }
    }
}

impl Store {
    fn rebuild_index(&mut self) -> std::result::Result<(), QuorumStartError> {
        let purged = self.state.purged.map(|id| id.index);
        let mut offset = self.log.log_start_offset();
        while offset < self.log.log_end_offset() {
            let data = self
                .log
                .read(offset, 1 << 20, None, true)
                .map_err(|e| QuorumStartError::from_log(self.dir.clone(), e))?;
            let mut advanced = false;
            for batch in batches(data.records) {
                let batch = batch.map_err(|e| QuorumStartError::Corrupt {
                    path: self.dir.clone(),
                    reason: format!("metadata log batch at offset {offset}: {e}"),
                })?;
                let (meta, _) = decode_meta(&batch).map_err(|e| QuorumStartError::Corrupt {
                    path: self.dir.clone(),
                    reason: format!(
                        "metadata log batch at offset {}: {e} (a log written by a Sluice older than the Raft quorum cannot be read: format the node again)",
                        batch.base_offset()
                    ),
                })?;
                if purged.is_none_or(|p| meta.log_id.index > p) {
                    self.index
                        .insert(meta.log_id.index, (batch.base_offset(), meta.log_id));
                }
                offset = batch.next_offset();
                advanced = true;
            }
            if !advanced {
                break;
            }
        }
        Ok(())
    }

    fn save_state(&self) -> Result<()> {
        let bytes = serde_json::to_vec(&self.state).map_err(vote_error)?;
        sluice_storage::checkpoint::write_atomically(&self.dir.join(STATE_FILE), &bytes)
            .map_err(vote_error)
    }

    fn entry_at(&self, offset: i64) -> Result<Entry<TypeConfig>> {
        let data = self
            .log
            .read(offset, 1 << 20, None, true)
            .map_err(read_error)?;
        let batch = batches(data.records)
            .next()
            .ok_or_else(|| read_error(Malformed(format!("no batch at offset {offset}"))))?
            .map_err(read_error)?;
        let (meta, values) = decode_meta(&batch).map_err(read_error)?;
        let payload = match meta.kind.as_str() {
            "blank" => EntryPayload::Blank,
            "membership" => EntryPayload::Membership(meta.membership.ok_or_else(|| {
                read_error(Malformed("a membership entry without membership".into()))
            })?),
            _ => EntryPayload::Normal(Proposal {
                records: values.into_iter().map(|v| v.to_vec()).collect(),
                write_id: meta.write_id,
                planned_on: meta.planned_on,
            }),
        };
        Ok(Entry {
            log_id: meta.log_id,
            payload,
        })
    }

    fn append_entry(&mut self, entry: &Entry<TypeConfig>) -> Result<()> {
        let (kind, membership, values) = match &entry.payload {
            EntryPayload::Blank => ("blank", None, vec![noop()]),
            EntryPayload::Membership(m) => ("membership", Some(m.clone()), vec![noop()]),
            EntryPayload::Normal(p) if p.records.is_empty() => ("normal", None, vec![noop()]),
            EntryPayload::Normal(p) => (
                "normal",
                None,
                p.records.iter().map(|r| Bytes::from(r.clone())).collect(),
            ),
        };
        let (write_id, planned_on) = match &entry.payload {
            EntryPayload::Normal(p) => (p.write_id, p.planned_on.clone()),
            _ => (0, Vec::new()),
        };
        let meta = EntryMeta {
            log_id: entry.log_id,
            kind: kind.into(),
            membership,
            write_id,
            planned_on,
        };
        let now = sluice_storage::now_ms();
        let mut builder = RecordBatchBuilder::new(Compression::None);
        for (i, value) in values.into_iter().enumerate() {
            let headers = if i == 0 {
                vec![Header {
                    key: Bytes::from_static(RAFT_HEADER.as_bytes()),
                    value: Some(Bytes::from(serde_json::to_vec(&meta).map_err(write_error)?)),
                }]
            } else {
                vec![]
            };
            builder
                .append(&NewRecord {
                    timestamp: now,
                    key: None,
                    value: Some(value),
                    headers,
                })
                .map_err(write_error)?;
        }
        let mut bytes = builder.build().to_vec();
        let info = self
            .log
            .append_as_leader(&mut bytes, entry.log_id.leader_id.term as i32, now)
            .map_err(write_error)?;
        self.index
            .insert(entry.log_id.index, (info.first_offset, entry.log_id));
        Ok(())
    }
}

fn noop() -> Bytes {
    Bytes::from(
        MetadataRecord::NoOp
            .encode(0)
            .expect("a NoOpRecord encodes"),
    )
}

/// The entry header of a batch, and its record values.
fn decode_meta(
    batch: &sluice_protocol::RecordBatch,
) -> std::result::Result<(EntryMeta, Vec<Bytes>), Malformed> {
    let mut meta = None;
    let mut values = Vec::new();
    for record in batch.records().map_err(|e| Malformed(e.to_string()))? {
        let record = record.map_err(|e| Malformed(e.to_string()))?;
        if meta.is_none() {
            let header = record
                .headers
                .iter()
                .find(|h| h.key.as_ref() == RAFT_HEADER.as_bytes())
                .and_then(|h| h.value.clone())
                .ok_or("no sluice.raft header")?;
            meta = Some(
                serde_json::from_slice::<EntryMeta>(&header)
                    .map_err(|e| Malformed(e.to_string()))?,
            );
        }
        values.push(record.value.unwrap_or_default());
    }
    Ok((meta.ok_or("an empty batch")?, values))
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>> {
        let store = lock(&self.store);
        let offsets: Vec<i64> = store.index.range(range).map(|(_, (o, _))| *o).collect();
        offsets.into_iter().map(|o| store.entry_at(o)).collect()
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>> {
        let store = lock(&self.store);
        let last_purged_log_id = store.state.purged;
        let last_log_id = store
            .index
            .values()
            .next_back()
            .map(|(_, id)| *id)
            .or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<NodeId>) -> Result<()> {
        let mut store = lock(&self.store);
        store.state.vote = Some(*vote);
        store.save_state()
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<NodeId>>> {
        Ok(lock(&self.store).state.vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId<NodeId>>) -> Result<()> {
        let mut store = lock(&self.store);
        store.state.committed = committed;
        store.save_state()
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<NodeId>>> {
        Ok(lock(&self.store).state.committed)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<()>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut store = lock(&self.store);
        for entry in entries {
            store.append_entry(&entry)?;
        }
        let flushed = store.log.flush();
        drop(store);
        match flushed {
            Ok(()) => {
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(error) => {
                let text = error.to_string();
                callback.log_io_completed(Err(std::io::Error::other(text)));
                Err(write_error(error))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        let mut store = lock(&self.store);
        let Some((offset, _)) = store.index.get(&log_id.index).copied() else {
            return Ok(());
        };
        store.log.truncate_to(offset).map_err(write_error)?;
        store.index.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<NodeId>) -> Result<()> {
        let mut store = lock(&self.store);
        store.state.purged = Some(log_id);
        store.save_state()?;
        let rest = store.index.split_off(&(log_id.index + 1));
        store.index = rest;
        let start = store
            .index
            .values()
            .next()
            .map_or(store.log.log_end_offset(), |(o, _)| *o);
        store.log.delete_records(start).map_err(write_error)?;
        Ok(())
    }
}
