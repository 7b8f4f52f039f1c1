//! The metadata state machine: the metadata image the committed entries build, and its
//! snapshots.
//!
//! A normal entry is a batch of metadata records applied all or nothing: every node
//! applies the same entries to the same image, so an entry that does not replay (a
//! topic created twice by two brokers that both saw it missing) is refused the same way
//! everywhere and its proposer gets the reason.
//!
//! Two checks make a write safe to plan on one node and apply on all:
//!
//! - a partition change carries the partition epoch it was planned on
//!   ([`super::PlannedOn`]); an entry whose partition has moved on since is refused,
//!   so a change planned on a stale image (a deposed or paused controller's) is never
//!   merged over the changes made after it;
//! - an entry carries a write id; a write retried across a timeout or a leader change
//!   may be committed twice, and the repeat of an id among the last
//!   [`RECENT_WRITES`] is answered with the first outcome and applies nothing.
//!
//! A snapshot is the image written as the records that rebuild it
//! ([`MetadataImage::to_records`]) with the last applied log id and membership, kept in
//! `quorum-snapshot.json` beside the log. A restarted node loads it and replays the log
//! after it; a node too far behind is sent it (openraft's InstallSnapshot).

// openraft's trait methods return its `StorageError` (over 200 bytes); the helpers
// here return what those methods return.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, VecDeque};
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

use super::{NodeId, ProposalResult, QuorumStartError, TypeConfig};

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

/// What a snapshot holds: the records that rebuild the image, base64 each, and the
/// recent write ids with their outcomes (so a node restored from it refuses the same
/// repeats as the nodes that applied the log).
#[derive(Serialize, Deserialize)]
struct SnapshotData {
    records: Vec<String>,
    #[serde(default)]
    recent_writes: Vec<(u64, ProposalResult)>,
}

/// How many write ids the state machine remembers. A retry follows its first attempt
/// within the write deadline (15 s), far fewer entries than this.
pub const RECENT_WRITES: usize = 10_000;

/// The outcomes of the last [`RECENT_WRITES`] writes, by write id, oldest first.
#[derive(Debug, Clone, Default)]
struct RecentWrites {
    order: VecDeque<u64>,
    outcomes: HashMap<u64, ProposalResult>,
}

impl RecentWrites {
    fn get(&self, write_id: u64) -> Option<&ProposalResult> {
        self.outcomes.get(&write_id)
    }

    fn insert(&mut self, write_id: u64, outcome: ProposalResult) {
        if write_id == 0 || self.outcomes.insert(write_id, outcome).is_some() {
            return;
        }
        self.order.push_back(write_id);
        while self.order.len() > RECENT_WRITES {
            if let Some(old) = self.order.pop_front() {
                self.outcomes.remove(&old);
            }
        }
    }

    fn to_list(&self) -> Vec<(u64, ProposalResult)> {
        self.order
            .iter()
            .filter_map(|id| self.outcomes.get(id).map(|o| (*id, o.clone())))
            .collect()
    }

    fn from_list(list: Vec<(u64, ProposalResult)>) -> RecentWrites {
        let mut recent = RecentWrites::default();
        for (id, outcome) in list {
            recent.insert(id, outcome);
        }
        recent
    }
}

struct Machine {
    image: Arc<MetadataImage>,
    recent: RecentWrites,
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

/// A metadata snapshot that does not decode or apply.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct BadSnapshot(String);

fn image_from_snapshot(
    data: &[u8],
) -> std::result::Result<(MetadataImage, RecentWrites), BadSnapshot> {
    let bad = |e: &dyn std::fmt::Display| BadSnapshot(e.to_string());
    let content: SnapshotData = serde_json::from_slice(data).map_err(|e| bad(&e))?;
    let mut image = MetadataImage::default();
    for encoded in content.records {
        let bytes = b64().decode(encoded).map_err(|e| bad(&e))?;
        let (record, _) = MetadataRecord::decode(&bytes).map_err(|e| bad(&e))?;
        image.apply(&record).map_err(|e| bad(&e))?;
    }
    Ok((image, RecentWrites::from_list(content.recent_writes)))
}

/// Applies a normal entry's records to `image` after checking the partition epochs
/// they were planned on; on error `image` may be partly changed (the caller applies
/// to a copy).
fn apply_proposal(
    image: &mut MetadataImage,
    proposal: &super::Proposal,
    topic_exists: &mut Option<String>,
    stale_partition: &mut bool,
) -> std::result::Result<(), String> {
    for planned in &proposal.planned_on {
        image
            .check_partition_epoch(planned.topic_id, planned.partition, planned.partition_epoch)
            .map_err(|e| {
                *stale_partition = matches!(e, ApplyError::StalePartitionEpoch { .. });
                e.to_string()
            })?;
    }
    proposal.records.iter().try_for_each(|bytes| {
        let (record, _) = MetadataRecord::decode(bytes).map_err(|e| e.to_string())?;
        image.apply(&record).map_err(|e| {
            if let ApplyError::TopicExists { name } = &e {
                *topic_exists = Some(name.clone());
            }
            e.to_string()
        })
    })
}

impl StateMachine {
    /// Loads the last snapshot under `metadata_dir`, if any.
    pub fn open(
        metadata_dir: &Path,
        on_apply: OnApply,
    ) -> std::result::Result<StateMachine, QuorumStartError> {
        let dir = metadata_dir.join(METADATA_LOG_DIR);
        std::fs::create_dir_all(&dir).map_err(|source| QuorumStartError::Io {
            path: dir.clone(),
            source,
        })?;
        let path = dir.join(SNAPSHOT_FILE);
        let mut machine = Machine {
            image: Arc::new(MetadataImage::default()),
            recent: RecentWrites::default(),
            last_applied: None,
            membership: StoredMembership::default(),
            snapshot: None,
        };
        match std::fs::read(&path) {
            Ok(bytes) => {
                let corrupt = |e: &dyn std::fmt::Display| QuorumStartError::Corrupt {
                    path: path.clone(),
                    reason: e.to_string(),
                };
                let file: SnapshotFile = serde_json::from_slice(&bytes).map_err(|e| corrupt(&e))?;
                let data = b64().decode(&file.data).map_err(|e| corrupt(&e))?;
                let (image, recent) = image_from_snapshot(&data).map_err(|e| corrupt(&e))?;
                machine.image = Arc::new(image);
                machine.recent = recent;
                machine.last_applied = file.meta.last_log_id;
                machine.membership = file.meta.last_membership.clone();
                machine.snapshot = Some((file.meta, data));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(QuorumStartError::Io { path, source }),
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
        let (image, recent_writes, last_applied, membership) = {
            let machine = lock(&self.machine);
            (
                machine.image.clone(),
                machine.recent.to_list(),
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
        let data = serde_json::to_vec(&SnapshotData {
            records,
            recent_writes,
        })
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
                        if let Some(first) = machine.recent.get(proposal.write_id) {
                            tracing::debug!(
                                index = entry.log_id.index,
                                first = first.index,
                                "a repeated metadata write: answered with its first outcome"
                            );
                            results.push(first.clone());
                            continue;
                        }
                        let base = image.as_ref().unwrap_or(&machine.image);
                        let mut next = base.clone();
                        let mut topic_exists = None;
                        let mut stale_partition = false;
                        let outcome = apply_proposal(
                            &mut next,
                            &proposal,
                            &mut topic_exists,
                            &mut stale_partition,
                        );
                        let result = match outcome {
                            Ok(()) => {
                                image = Some(next);
                                ProposalResult {
                                    index: entry.log_id.index,
                                    ..ProposalResult::default()
                                }
                            }
                            Err(error) => {
                                tracing::debug!(index = entry.log_id.index, %error, "metadata entry refused");
                                ProposalResult {
                                    error: Some(error),
                                    topic_exists,
                                    stale_partition,
                                    index: entry.log_id.index,
                                }
                            }
                        };
                        machine.recent.insert(proposal.write_id, result.clone());
                        results.push(result);
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
        let (image, recent) = image_from_snapshot(&data).map_err(|e| {
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
            machine.recent = recent;
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

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};
    use sluice_metadata::{PartitionChangeRecord, PartitionRecord, TopicRecord};

    use super::*;
    use crate::quorum::{PlannedOn, Proposal};

    const TOPIC: sluice_metadata::Uuid = [5; 16];

    fn entry(index: u64, proposal: &Proposal) -> Entry<TypeConfig> {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(1, 1), index),
            payload: EntryPayload::Normal(proposal.clone()),
        }
    }

    fn open_machine(dir: &Path) -> StateMachine {
        StateMachine::open(dir, Arc::new(|_| {})).unwrap()
    }

    fn isr_change(isr: Vec<i32>) -> MetadataRecord {
        let mut change = PartitionChangeRecord::new(TOPIC, 0);
        change.isr = Some(isr);
        MetadataRecord::PartitionChange(change)
    }

    fn partition(machine: &StateMachine) -> sluice_metadata::PartitionImage {
        lock(&machine.machine).image.topic("t").unwrap().partitions[&0].clone()
    }

    /// A machine with topic "t", partition 0 on replicas 1, 2, 3 (partition epoch 0).
    async fn with_partition(dir: &Path) -> StateMachine {
        let mut machine = open_machine(dir);
        let create = Proposal::new(&[
            MetadataRecord::Topic(TopicRecord {
                name: "t".into(),
                topic_id: TOPIC,
            }),
            MetadataRecord::Partition(PartitionRecord::new_partition(
                TOPIC,
                0,
                vec![1, 2, 3],
                vec![[0; 16]; 3],
            )),
        ]);
        let results = machine.apply([entry(1, &create)]).await.unwrap();
        assert_eq!(results[0].error, None);
        machine
    }

    #[tokio::test]
    async fn a_change_planned_on_a_stale_partition_epoch_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut machine = with_partition(dir.path()).await;
        let planned_image = (*lock(&machine.machine).image).clone();
        // Two changes planned on the same image (epoch 0): the first applies, the
        // second (a deposed controller's, say) is refused instead of merged over it.
        let first = Proposal::planned(&[isr_change(vec![1, 2])], &planned_image);
        assert_eq!(
            first.planned_on,
            vec![PlannedOn {
                topic_id: TOPIC,
                partition: 0,
                partition_epoch: 0
            }]
        );
        let stale = Proposal::planned(&[isr_change(vec![3])], &planned_image);
        let results = machine
            .apply([entry(2, &first), entry(3, &stale)])
            .await
            .unwrap();
        assert_eq!(results[0].error, None);
        assert!(!results[0].stale_partition);
        let refusal = results[1].error.as_deref().unwrap();
        assert!(
            refusal.contains("partition epoch 1, not the 0"),
            "{refusal}"
        );
        // Typed, so the proposer answers INVALID_UPDATE_VERSION (and re-plans).
        assert!(results[1].stale_partition);
        let p = partition(&machine);
        assert_eq!((p.isr, p.partition_epoch), (vec![1, 2], 1));
    }

    #[tokio::test]
    async fn a_repeated_write_is_answered_with_its_first_outcome_and_applied_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut machine = with_partition(dir.path()).await;
        // A write without preconditions, retried after another change landed between:
        // applying it again would undo that change.
        let shrink = Proposal::new(&[isr_change(vec![1])]);
        let grow = Proposal::new(&[isr_change(vec![1, 2, 3])]);
        let results = machine
            .apply([entry(2, &shrink), entry(3, &grow), entry(4, &shrink)])
            .await
            .unwrap();
        assert_eq!(results[2], results[0]);
        assert_eq!(results[2].index, 2);
        let p = partition(&machine);
        assert_eq!((p.isr, p.partition_epoch), (vec![1, 2, 3], 2));

        // A node restored from a snapshot refuses the same repeat.
        let snapshot = machine.build_snapshot().await.unwrap();
        let other_dir = tempfile::tempdir().unwrap();
        let mut restored = open_machine(other_dir.path());
        restored
            .install_snapshot(&snapshot.meta, snapshot.snapshot)
            .await
            .unwrap();
        let results = restored.apply([entry(5, &shrink)]).await.unwrap();
        assert_eq!(results[0].index, 2);
        assert_eq!(partition(&restored).isr, vec![1, 2, 3]);
        // Without the write id the repeat would have applied.
        let mut anonymous = shrink.clone();
        anonymous.write_id = 0;
        restored.apply([entry(6, &anonymous)]).await.unwrap();
        assert_eq!(partition(&restored).isr, vec![1]);
    }

    #[test]
    fn recent_writes_forget_the_oldest_beyond_their_bound() {
        let mut recent = RecentWrites::default();
        for id in 1..=(RECENT_WRITES as u64 + 5) {
            recent.insert(id, ProposalResult::default());
        }
        assert!(recent.get(5).is_none());
        assert!(recent.get(6).is_some());
        assert_eq!(recent.to_list().len(), RECENT_WRITES);
    }
}
