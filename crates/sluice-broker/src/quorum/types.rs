//! The types the quorum's stores, its RPCs and the quorum share: the node id, the Raft
//! type configuration, and a proposal (a metadata change) with its result. Kept apart
//! from `mod.rs` so that the stores and the RPCs depend on them and not on the quorum.

use std::io::Cursor;

use serde::{Deserialize, Serialize};
use sluice_metadata::{MetadataImage, MetadataRecord};

pub type NodeId = u64;

openraft::declare_raft_types!(
    /// The metadata quorum's types: an entry carries a batch of metadata records.
    pub TypeConfig:
        D = Proposal,
        R = ProposalResult,
);

/// A metadata change: records applied together or not at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// Each record encoded as Kafka frames a metadata record value.
    #[serde(with = "base64_list")]
    pub records: Vec<Vec<u8>>,
    /// Names this write across its retries (0: none). A write retried after a timeout
    /// or a leader change may be committed twice; the state machine answers the repeat
    /// with the first outcome and applies nothing (see [`StateMachine`]).
    #[serde(default)]
    pub write_id: u64,
    /// The partition epoch each changed partition had in the image the change was
    /// planned on: the entry is refused where a partition has moved on since.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned_on: Vec<PlannedOn>,
}

/// A partition change's precondition: the partition epoch it was planned against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedOn {
    pub topic_id: sluice_metadata::Uuid,
    pub partition: i32,
    pub partition_epoch: i32,
}

impl Proposal {
    /// A write of `records` with a new write id and no preconditions.
    pub fn new(records: &[MetadataRecord]) -> Proposal {
        Proposal {
            records: records
                .iter()
                .map(|r| {
                    r.encode(r.latest_version())
                        .expect("records Sluice builds encode at their latest version")
                })
                .collect(),
            write_id: rand::random::<u64>().max(1),
            planned_on: Vec::new(),
        }
    }

    /// A write of `records` planned on `image`: every partition change carries the
    /// partition epoch it had there (a partition the image does not have yet, created
    /// in the same write, has none).
    pub fn planned(records: &[MetadataRecord], image: &MetadataImage) -> Proposal {
        let mut proposal = Proposal::new(records);
        for record in records {
            let MetadataRecord::PartitionChange(change) = record else {
                continue;
            };
            let Some(partition) = image
                .topic_by_id(&change.topic_id)
                .and_then(|t| t.partitions.get(&change.partition_id))
            else {
                continue;
            };
            let planned = PlannedOn {
                topic_id: change.topic_id,
                partition: change.partition_id,
                partition_epoch: partition.partition_epoch,
            };
            if !proposal.planned_on.contains(&planned) {
                proposal.planned_on.push(planned);
            }
        }
        proposal
    }
}

/// What applying a proposal did: the Raft index it got and, when its records did not
/// replay on the image, why.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposalResult {
    pub error: Option<String>,
    /// Set when the refusal was a topic that already exists (its name).
    #[serde(default)]
    pub topic_exists: Option<String>,
    /// Set when the refusal was a partition that moved on from the epoch a change was
    /// planned on (the planner must plan again on a newer image).
    #[serde(default)]
    pub stale_partition: bool,
    pub index: u64,
}

mod base64_list {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(values: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        let engine = base64::engine::general_purpose::STANDARD;
        s.collect_seq(values.iter().map(|v| engine.encode(v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let engine = base64::engine::general_purpose::STANDARD;
        Vec::<String>::deserialize(d)?
            .into_iter()
            .map(|s| engine.decode(s).map_err(serde::de::Error::custom))
            .collect()
    }
}

/// The quorum as its leader sees it (what DescribeQuorum reports).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumStatus {
    pub leader: i32,
    pub epoch: i32,
    /// The metadata log offset below which entries are committed.
    pub high_watermark: i64,
    pub voters: Vec<ReplicaStatus>,
    pub observers: Vec<ReplicaStatus>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaStatus {
    pub id: i32,
    /// The metadata log offset up to which the leader knows this node's log matches.
    pub log_end_offset: i64,
}
