//! The values Burrow's storage keeps and its evaluator returns, with Burrow's JSON shapes
//! (`core/protocol/storage.go` and `evaluator.go`): dashboards and scripts written against
//! Burrow's HTTP API read these unchanged.

use serde::{Serialize, Serializer};

/// A partition's or group's health, ordered by severity as Burrow orders it: a group's
/// status is the worst of its partitions', capped at [`Status::Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    NotFound = 0,
    Ok = 1,
    Warning = 2,
    Error = 3,
    Stop = 4,
    Stall = 5,
    Rewind = 6,
}

impl Status {
    /// Burrow's name for the status, as its API and templates print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::NotFound => "NOTFOUND",
            Status::Ok => "OK",
            Status::Warning => "WARN",
            Status::Error => "ERR",
            Status::Stop => "STOP",
            Status::Stall => "STALL",
            Status::Rewind => "REWIND",
        }
    }

    /// The number Burrow gives the status (its Prometheus gauge exports this).
    pub fn code(self) -> i64 {
        self as i64
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl Serialize for Status {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One committed offset as storage keeps it: when it was committed, when the monitor saw
/// it, and the lag at that moment (None when no log end offset was known yet, Burrow's
/// nil lag).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConsumerOffset {
    pub offset: i64,
    /// Commit order within the partition; not serialized, as in Burrow.
    #[serde(skip)]
    pub order: i64,
    /// The commit's timestamp, milliseconds since the epoch.
    pub timestamp: i64,
    /// When the monitor observed the commit, milliseconds since the epoch.
    #[serde(rename = "observedAt")]
    pub observed_at: i64,
    pub lag: Option<u64>,
}

/// A group's view of one partition: its window of commits (oldest first; `None` for a
/// slot not yet filled), the broker's recent log end offsets, and who owns it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ConsumerPartition {
    pub offsets: Vec<Option<ConsumerOffset>>,
    #[serde(skip)]
    pub broker_offsets: Vec<i64>,
    pub owner: String,
    pub client_id: String,
    #[serde(rename = "current-lag")]
    pub current_lag: u64,
}

/// The evaluation of one partition of a group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionStatus {
    pub topic: String,
    pub partition: i32,
    pub owner: String,
    pub client_id: String,
    pub status: Status,
    pub start: Option<ConsumerOffset>,
    pub end: Option<ConsumerOffset>,
    pub current_lag: u64,
    pub complete: f32,
}

/// The evaluation of a whole group, Burrow's `ConsumerGroupStatus`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupStatus {
    pub cluster: String,
    pub group: String,
    pub status: Status,
    pub complete: f32,
    pub partitions: Vec<PartitionStatus>,
    #[serde(rename = "partition_count")]
    pub total_partitions: usize,
    pub maxlag: Option<PartitionStatus>,
    pub totallag: u64,
}

/// What the cluster and consumer modules tell storage, Burrow's storage requests: the
/// only way observations reach it, so storage sees them in one order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageRequest {
    /// A partition's log end offset, read by ListOffsets at `offset-refresh`.
    SetBrokerOffset {
        cluster: String,
        topic: String,
        partition: i32,
        topic_partition_count: i32,
        offset: i64,
        timestamp_ms: i64,
    },
    /// A committed offset read from `__consumer_offsets`; `order` is the record's offset
    /// there, which orders one group's commits (they share a partition).
    SetConsumerOffset {
        cluster: String,
        group: String,
        topic: String,
        partition: i32,
        offset: i64,
        order: i64,
        timestamp_ms: i64,
        observed_ms: i64,
    },
    /// Who consumes a partition, from the group's membership records.
    SetConsumerOwner {
        cluster: String,
        group: String,
        topic: String,
        partition: i32,
        owner: String,
        client_id: String,
    },
    /// A group's membership changed: forget its owners before the new ones arrive.
    ClearConsumerOwners { cluster: String, group: String },
    /// A topic no longer exists.
    DeleteTopic { cluster: String, topic: String },
    /// A group was deleted (its metadata tombstone) or removed through the API.
    DeleteGroup { cluster: String, group: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_serialize_as_burrow_names_them() {
        let names: Vec<String> = [
            Status::NotFound,
            Status::Ok,
            Status::Warning,
            Status::Error,
            Status::Stop,
            Status::Stall,
            Status::Rewind,
        ]
        .iter()
        .map(|status| serde_json::to_string(status).expect("a status serializes"))
        .collect();
        assert_eq!(
            names,
            [
                "\"NOTFOUND\"",
                "\"OK\"",
                "\"WARN\"",
                "\"ERR\"",
                "\"STOP\"",
                "\"STALL\"",
                "\"REWIND\""
            ]
        );
        assert!(Status::Rewind > Status::Error && Status::Warning < Status::Error);
    }

    #[test]
    fn an_offset_serializes_with_burrows_keys() {
        let offset = ConsumerOffset {
            offset: 10,
            order: 3,
            timestamp: 1000,
            observed_at: 1001,
            lag: None,
        };
        assert_eq!(
            serde_json::to_value(&offset).expect("serializes"),
            serde_json::json!({"offset": 10, "timestamp": 1000, "observedAt": 1001, "lag": null})
        );
    }
}
