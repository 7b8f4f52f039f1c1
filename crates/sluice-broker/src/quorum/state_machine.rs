//! The metadata state machine: the metadata image the committed entries build, and its
//! snapshots.
//!
//! A normal entry is a batch of metadata records applied all or nothing: every node
//! applies the same entries to the same image, so an entry that does not replay (a
//! topic created twice by two brokers that both saw it missing) is refused the same way
//! everywhere and its proposer gets the reason.
//!
//! A snapshot is the image written as the records that rebuild it
//! ([`MetadataImage::to_records`]) with the last applied log id and membership, kept in
//! `quorum-snapshot.json` beside the log. A restarted node loads it and replays the log
//! after it; a node too far behind is sent it (openraft's InstallSnapshot).

// openraft's trait methods return its `StorageError` (over 200 bytes); the helpers
// here return what those methods return.
#![allow(clippy::result_large_err)]

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use base64::Engine;
use openraft::storage::{RaftStateMachine, Snapshot, SnapshotMeta};
use openraft::{
    AnyError, BasicNode, Entry, EntryPayload, LogId, RaftSnapshotBuilder, StorageError,
    StorageIOError, StoredMembership,
};
use serde::{Deserialize, Serialize};
use sluice_metadata::{ApplyError, METADATA_LOG_DIR, MetadataImage, MetadataRecord};

use super::{NodeId, ProposalResult, TypeConfig};

const SNAPSHOT_FILE: &str = "quorum-snapshot.json";

type Result<T> = std::result::Result<T, StorageError<NodeId>>;

/// Told the new image after each applied change (on every node, in log order).
pub type OnApply = Arc<dyn Fn(Arc<MetadataImage>) + Send + Sync>;

#[derive(Serialize, Deserialize)]
struct SnapshotFile {
    meta: SnapshotMeta<NodeId, BasicNode>,
    /// The snapshot data: base64 of [`SnapshotData`]'s JSON.
    data: String,
}

/// What a snapshot holds: the records that rebuild the image, base64 each.
#[derive(Serialize, Deserialize)]
struct SnapshotData {
    records: Vec<String>,
}

struct Machine {
    image: Arc<MetadataImage>,
    last_applied: Option<LogId<NodeId>>,
    membership: StoredMembership<NodeId, BasicNode>,
    /// Metadata records applied (what a Kafka metadata log's offsets count).
    snapshot: Option<(SnapshotMeta<NodeId, BasicNode>, Vec<u8>)>,
}

/// The state machine handed to openraft; clones share it.
#[derive(Clone)]
pub struct StateMachine {
    machine: Arc<Mutex<Machine>>,
    dir: PathBuf,
    on_apply: OnApply,
}

fn lock(machine: &Mutex<Machine>) -> MutexGuard<'_, Machine> {
    machine.lock().unwrap_or_else(PoisonError::into_inner)
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

fn image_from_snapshot(data: &[u8]) -> std::result::Result<MetadataImage, String> {
    let content: SnapshotData = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let mut image = MetadataImage::default();
    for encoded in content.records {
        let bytes = b64().decode(encoded).map_err(|e| e.to_string())?;
        let (record, _) = MetadataRecord::decode(&bytes).map_err(|e| e.to_string())?;
        image.apply(&record).map_err(|e| e.to_string())?;
    }
    Ok(image)
}

impl StateMachine {
    /// Loads the last snapshot under `metadata_dir`, if any.
    pub fn open(
        metadata_dir: &Path,
        on_apply: OnApply,
    ) -> std::result::Result<StateMachine, String> {
        let dir = metadata_dir.join(METADATA_LOG_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join(SNAPSHOT_FILE);
        let mut machine = Machine {
            image: Arc::new(MetadataImage::default()),
            last_applied: None,
            membership: StoredMembership::default(),
            snapshot: None,
        };
        match std::fs::read(&path) {
            Ok(bytes) => {
                let file: SnapshotFile = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let data = b64()
                    .decode(&file.data)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                let image =
                    image_from_snapshot(&data).map_err(|e| format!("{}: {e}", path.display()))?;
                machine.image = Arc::new(image);
                machine.last_applied = file.meta.last_log_id;
                machine.membership = file.meta.last_membership.clone();
                machine.snapshot = Some((file.meta, data));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
        Ok(StateMachine {
            machine: Arc::new(Mutex::new(machine)),
            dir,
            on_apply,
        })
    }

    fn save_snapshot(&self, meta: &SnapshotMeta<NodeId, BasicNode>, data: &[u8]) -> Result<()> {
        let file = SnapshotFile {
            meta: meta.clone(),
            data: b64().encode(data),
        };
        let signature = Some(meta.signature());
        let bytes = serde_json::to_vec(&file)
            .map_err(|e| StorageIOError::write_snapshot(signature.clone(), &e))?;
        sluice_storage::checkpoint::write_atomically(&self.dir.join(SNAPSHOT_FILE), &bytes)
            .map_err(|e| StorageIOError::write_snapshot(signature, &e).into())
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>> {
        let (image, last_applied, membership) = {
            let machine = lock(&self.machine);
            (
                machine.image.clone(),
                machine.last_applied,
                machine.membership.clone(),
            )
        };
        let records = image
            .to_records()
            .iter()
            .map(|r| {
                r.encode(r.latest_version())
                    .map(|bytes| b64().encode(bytes))
                    .map_err(|e| StorageIOError::read_state_machine(&e))
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let data = serde_json::to_vec(&SnapshotData { records })
            .map_err(|e| StorageIOError::read_state_machine(&e))?;
        let snapshot_id = last_applied.map_or("0-0".to_string(), |id| {
            format!("{}-{}", id.leader_id.term, id.index)
        });
        let meta = SnapshotMeta {
            last_log_id: last_applied,
            last_membership: membership,
            snapshot_id,
        };
        self.save_snapshot(&meta, &data)?;
        lock(&self.machine).snapshot = Some((meta.clone(), data.clone()));
        tracing::info!(last = ?last_applied, bytes = data.len(), "metadata snapshot written");
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = StateMachine;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<NodeId>>, StoredMembership<NodeId, BasicNode>)> {
        let machine = lock(&self.machine);
        Ok((machine.last_applied, machine.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<ProposalResult>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + Send,
        I::IntoIter: Send,
    {
        let mut results = Vec::new();
        let changed = {
            let mut machine = lock(&self.machine);
            let mut image: Option<MetadataImage> = None;
            for entry in entries {
                machine.last_applied = Some(entry.log_id);
                match entry.payload {
                    EntryPayload::Blank => results.push(ProposalResult::default()),
                    EntryPayload::Membership(membership) => {
                        machine.membership = StoredMembership::new(Some(entry.log_id), membership);
                        results.push(ProposalResult::default());
                    }
                    EntryPayload::Normal(proposal) => {
                        let base = image.as_ref().unwrap_or(&machine.image);
                        let mut next = base.clone();
                        let mut topic_exists = None;
                        let outcome = proposal.records.iter().try_for_each(|bytes| {
                            let (record, _) =
                                MetadataRecord::decode(bytes).map_err(|e| e.to_string())?;
                            next.apply(&record).map_err(|e| {
                                if let ApplyError::TopicExists { name } = &e {
                                    topic_exists = Some(name.clone());
                                }
                                e.to_string()
                            })
                        });
                        match outcome {
                            Ok(()) => {
                                image = Some(next);
                                results.push(ProposalResult {
                                    index: entry.log_id.index,
                                    ..ProposalResult::default()
                                });
                            }
                            Err(error) => {
                                tracing::debug!(index = entry.log_id.index, %error, "metadata entry refused");
                                results.push(ProposalResult {
                                    error: Some(error),
                                    topic_exists,
                                    index: entry.log_id.index,
                                });
                            }
                        }
                    }
                }
            }
            image.map(|image| {
                let image = Arc::new(image);
                machine.image = image.clone();
                image
            })
        };
        if let Some(image) = changed {
            (self.on_apply)(image);
        }
        Ok(results)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<NodeId, BasicNode>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<()> {
        let data = snapshot.into_inner();
        let image = image_from_snapshot(&data).map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(
                Some(meta.signature()),
                AnyError::error(e),
            ))
        })?;
        self.save_snapshot(meta, &data)?;
        let image = Arc::new(image);
        {
            let mut machine = lock(&self.machine);
            machine.image = image.clone();
            machine.last_applied = meta.last_log_id;
            machine.membership = meta.last_membership.clone();
            machine.snapshot = Some((meta.clone(), data));
        }
        tracing::info!(last = ?meta.last_log_id, "installed a metadata snapshot");
        (self.on_apply)(image);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>> {
        Ok(lock(&self.machine)
            .snapshot
            .clone()
            .map(|(meta, data)| Snapshot {
                meta,
                snapshot: Box::new(Cursor::new(data)),
            }))
    }
}
