//! The keys and values of `__consumer_offsets`, byte for byte as Kafka writes them, so
//! Kafka's tools (`DumpLogSegments --offsets-decoder`, the console consumer's
//! `OffsetsMessageFormatter`) read what Sluice writes and Sluice loads what Kafka wrote.
//!
//! A key is a big-endian `i16` record type (Kafka calls it the key "version") followed by
//! the key's fields; a value is an `i16` version followed by its fields. Types 0 and 1 are
//! committed offsets ([`OffsetsKey::Offset`]), 2 is classic group metadata
//! ([`OffsetsKey::GroupMetadata`]), 3 to 8 are the records of KIP-848 consumer groups
//! ([`OffsetsKey::ConsumerGroupMetadata`] and the other `ConsumerGroup*` variants); every
//! other type (share and streams groups, regular expressions) decodes to
//! [`OffsetsKey::Other`], which a loader skips. Tombstones (null values) are the caller's
//! concern.
//!
//! Offset and classic group values are read at any version from 0 up; versions from 4 are
//! flexible (compact lengths, tagged fields) and, as KIP-915 specifies, a version above
//! the highest known is read as that flexible layout, its unknown tagged fields skipped.
//! The KIP-848 values are flexible from version 0 (the only one) and read likewise. Like
//! Kafka, readers ignore bytes after the last field. Writers use the versions Kafka 4.1
//! writes.
//!
//! Kafka 4.1 no longer writes `ConsumerGroupPartitionMetadata` (type 4) values, only their
//! tombstones: it replaced the subscribed topics' metadata by the `MetadataHash` of the
//! group metadata value. Older logs still hold such values; they are decoded
//! ([`decode_consumer_group_partition_metadata_value`]) but a group only notes their
//! presence, to tombstone them later as Kafka does.
//!
//! Decoding never panics and never allocates from a count the input has not backed with
//! bytes.

use bytes::Bytes;
use sluice_protocol::schema::{MAX_BYTES_LEN, SchemaError, SchemaReader, SchemaWriter};
use uuid::Uuid;

/// Key type (version) Kafka 4.1 writes for committed offsets; 0 is the older, identical form.
const OFFSET_KEY_VERSION: i16 = 1;
/// Key type of classic group metadata.
const GROUP_KEY_VERSION: i16 = 2;
/// Key types of the KIP-848 consumer group records.
const CONSUMER_GROUP_METADATA_KEY: i16 = 3;
const CONSUMER_GROUP_PARTITION_METADATA_KEY: i16 = 4;
const CONSUMER_GROUP_MEMBER_METADATA_KEY: i16 = 5;
const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: i16 = 6;
const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: i16 = 7;
const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: i16 = 8;
/// The version Kafka 4.1 writes of every KIP-848 value (flexible).
const CONSUMER_GROUP_VALUE_VERSION: i16 = 0;
/// First flexible version of both value records.
const FIRST_FLEXIBLE_VERSION: i16 = 4;
/// Fewest bytes a member takes in any version (lengths of its five strings and byte
/// strings plus its session timeout); bounds a member count by the bytes left.
const MIN_MEMBER_LEN: usize = 12;

/// Why a `__consumer_offsets` key or value could not be decoded.
pub type RecordError = SchemaError;

/// The key of a `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OffsetsKey {
    /// A committed offset (OffsetCommitKey, types 0 and 1).
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    /// The metadata of a classic group (GroupMetadataKey, type 2).
    GroupMetadata { group: String },
    /// The epoch (and metadata hash) of a consumer group (ConsumerGroupMetadataKey, type
    /// 3); value [`ConsumerGroupMetadataValue`]. Its tombstone deletes the group.
    ConsumerGroupMetadata { group: String },
    /// The subscribed topics' metadata of a consumer group (ConsumerGroupPartitionMetadataKey,
    /// type 4), deprecated: Kafka 4.1 writes only its tombstone; value
    /// [`ConsumerGroupPartitionMetadataValue`].
    ConsumerGroupPartitionMetadata { group: String },
    /// A consumer group member's metadata and subscription (ConsumerGroupMemberMetadataKey,
    /// type 5); value [`ConsumerGroupMemberMetadataValue`].
    ConsumerGroupMemberMetadata { group: String, member: String },
    /// The epoch of a consumer group's target assignment
    /// (ConsumerGroupTargetAssignmentMetadataKey, type 6); value
    /// [`ConsumerGroupTargetAssignmentMetadataValue`].
    ConsumerGroupTargetAssignmentMetadata { group: String },
    /// One member's target assignment (ConsumerGroupTargetAssignmentMemberKey, type 7);
    /// value [`ConsumerGroupTargetAssignmentMemberValue`].
    ConsumerGroupTargetAssignmentMember { group: String, member: String },
    /// One member's current assignment and epochs (ConsumerGroupCurrentMemberAssignmentKey,
    /// type 8); value [`ConsumerGroupCurrentMemberAssignmentValue`].
    ConsumerGroupCurrentMemberAssignment { group: String, member: String },
    /// Any other record type (share or streams groups, regular expressions): not decoded,
    /// skipped by the loader. Encodes as the bare type (types 0..=8 do not decode back to
    /// `Other`).
    Other { version: i16 },
}

impl OffsetsKey {
    /// The group the record belongs to; `None` for [`OffsetsKey::Other`].
    pub fn group_id(&self) -> Option<&str> {
        match self {
            OffsetsKey::Offset { group, .. }
            | OffsetsKey::GroupMetadata { group }
            | OffsetsKey::ConsumerGroupMetadata { group }
            | OffsetsKey::ConsumerGroupPartitionMetadata { group }
            | OffsetsKey::ConsumerGroupMemberMetadata { group, .. }
            | OffsetsKey::ConsumerGroupTargetAssignmentMetadata { group }
            | OffsetsKey::ConsumerGroupTargetAssignmentMember { group, .. }
            | OffsetsKey::ConsumerGroupCurrentMemberAssignment { group, .. } => Some(group),
            OffsetsKey::Other { .. } => None,
        }
    }

    /// Whether the record is one of a KIP-848 consumer group's (types 3 to 8), to be
    /// replayed with [`crate::consumer::ConsumerGroup::replay`].
    pub fn is_consumer_group_record(&self) -> bool {
        matches!(
            self,
            OffsetsKey::ConsumerGroupMetadata { .. }
                | OffsetsKey::ConsumerGroupPartitionMetadata { .. }
                | OffsetsKey::ConsumerGroupMemberMetadata { .. }
                | OffsetsKey::ConsumerGroupTargetAssignmentMetadata { .. }
                | OffsetsKey::ConsumerGroupTargetAssignmentMember { .. }
                | OffsetsKey::ConsumerGroupCurrentMemberAssignment { .. }
        )
    }
}

/// A committed offset (OffsetCommitValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    /// Leader epoch of the last consumed record; -1 when unknown (and in versions 0..=2).
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Explicit expiry (only version 1 carries it). `Some(-1)` reads back as `None`, as in
    /// Kafka, where -1 means "no expiry timestamp".
    pub expire_timestamp: Option<i64>,
}

/// One member of a classic group (GroupMetadataValue.MemberMetadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadata {
    pub member_id: String,
    /// Static membership id (versions 3+).
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Versions 1+; version 0 reads as -1, for which Kafka's loader uses the session timeout.
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// The member's protocol metadata for the group's chosen protocol.
    pub subscription: Bytes,
    /// The member's assignment as the leader sent it in SyncGroup.
    pub assignment: Bytes,
}

/// The state of a classic group (GroupMetadataValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// Versions 2+; -1 when absent.
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadata>,
}

/// Encodes a key: offsets as type 1, group metadata as type 2 and the consumer group
/// records as types 3 to 8, as Kafka 4.1 does.
pub fn encode_key(key: &OffsetsKey) -> Vec<u8> {
    let mut w = SchemaWriter::new(false);
    match key {
        OffsetsKey::Offset {
            group,
            topic,
            partition,
        } => {
            w.i16(OFFSET_KEY_VERSION);
            w.string(group);
            w.string(topic);
            w.i32(*partition);
        }
        OffsetsKey::GroupMetadata { group } => {
            w.i16(GROUP_KEY_VERSION);
            w.string(group);
        }
        OffsetsKey::ConsumerGroupMetadata { group } => {
            w.i16(CONSUMER_GROUP_METADATA_KEY);
            w.string(group);
        }
        OffsetsKey::ConsumerGroupPartitionMetadata { group } => {
            w.i16(CONSUMER_GROUP_PARTITION_METADATA_KEY);
            w.string(group);
        }
        OffsetsKey::ConsumerGroupMemberMetadata { group, member } => {
            w.i16(CONSUMER_GROUP_MEMBER_METADATA_KEY);
            w.string(group);
            w.string(member);
        }
        OffsetsKey::ConsumerGroupTargetAssignmentMetadata { group } => {
            w.i16(CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY);
            w.string(group);
        }
        OffsetsKey::ConsumerGroupTargetAssignmentMember { group, member } => {
            w.i16(CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY);
            w.string(group);
            w.string(member);
        }
        OffsetsKey::ConsumerGroupCurrentMemberAssignment { group, member } => {
            w.i16(CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY);
            w.string(group);
            w.string(member);
        }
        OffsetsKey::Other { version } => w.i16(*version),
    }
    w.finish()
}

/// Decodes a key; record types other than 0..=8 become [`OffsetsKey::Other`].
pub fn decode_key(bytes: &[u8]) -> Result<OffsetsKey, RecordError> {
    let mut r = SchemaReader::new(bytes);
    let version = r.i16("key version")?;
    match version {
        0 | 1 => Ok(OffsetsKey::Offset {
            group: r.string("group")?,
            topic: r.string("topic")?,
            partition: r.i32("partition")?,
        }),
        GROUP_KEY_VERSION => Ok(OffsetsKey::GroupMetadata {
            group: r.string("group")?,
        }),
        CONSUMER_GROUP_METADATA_KEY => Ok(OffsetsKey::ConsumerGroupMetadata {
            group: r.string("group")?,
        }),
        CONSUMER_GROUP_PARTITION_METADATA_KEY => Ok(OffsetsKey::ConsumerGroupPartitionMetadata {
            group: r.string("group")?,
        }),
        CONSUMER_GROUP_MEMBER_METADATA_KEY => Ok(OffsetsKey::ConsumerGroupMemberMetadata {
            group: r.string("group")?,
            member: r.string("member")?,
        }),
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY => {
            Ok(OffsetsKey::ConsumerGroupTargetAssignmentMetadata {
                group: r.string("group")?,
            })
        }
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY => {
            Ok(OffsetsKey::ConsumerGroupTargetAssignmentMember {
                group: r.string("group")?,
                member: r.string("member")?,
            })
        }
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY => {
            Ok(OffsetsKey::ConsumerGroupCurrentMemberAssignment {
                group: r.string("group")?,
                member: r.string("member")?,
            })
        }
        _ => Ok(OffsetsKey::Other { version }),
    }
}

/// Encodes a committed offset at the version Kafka 4.1 picks: 1 when an expiry timestamp
/// is set (version 1 has no leader epoch, so it is dropped, as in Kafka), 3 otherwise.
pub fn encode_offset_value(value: &OffsetValue) -> Vec<u8> {
    // Kafka 4.1 writes v1 when there is an expire timestamp (OffsetCommit v2-4's
    // retention), else v4 (flexible).
    let version = if value.expire_timestamp.is_some() {
        1
    } else {
        4
    };
    write_offset_value(value, version)
}

fn write_offset_value(value: &OffsetValue, version: i16) -> Vec<u8> {
    let mut w = SchemaWriter::new(version >= FIRST_FLEXIBLE_VERSION);
    w.i16(version);
    w.i64(value.offset);
    if version >= 3 {
        w.i32(value.leader_epoch);
    }
    w.string(&value.metadata);
    w.i64(value.commit_timestamp);
    if version == 1 {
        w.i64(value.expire_timestamp.unwrap_or(-1));
    }
    w.tagged_fields();
    w.finish()
}

/// Decodes a committed offset of any version.
pub fn decode_offset_value(bytes: &[u8]) -> Result<OffsetValue, RecordError> {
    let mut r = SchemaReader::new(bytes);
    let version = value_version(&mut r, "OffsetCommitValue")?;
    let offset = r.i64("offset")?;
    let leader_epoch = if version >= 3 {
        r.i32("leaderEpoch")?
    } else {
        -1
    };
    let metadata = r.string("metadata")?;
    let commit_timestamp = r.i64("commitTimestamp")?;
    let expire_timestamp = if version == 1 {
        Some(r.i64("expireTimestamp")?).filter(|&t| t != -1)
    } else {
        None
    };
    r.tagged_fields()?;
    Ok(OffsetValue {
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp,
    })
}

/// Encodes a classic group's metadata at version 3, the version Kafka 4.1 writes.
pub fn encode_group_value(value: &GroupMetadataValue) -> Vec<u8> {
    write_group_value(value, 3)
}

fn write_group_value(value: &GroupMetadataValue, version: i16) -> Vec<u8> {
    let mut w = SchemaWriter::new(version >= FIRST_FLEXIBLE_VERSION);
    w.i16(version);
    w.string(&value.protocol_type);
    w.i32(value.generation);
    w.nullable_string(value.protocol.as_deref());
    w.nullable_string(value.leader.as_deref());
    if version >= 2 {
        w.i64(value.current_state_timestamp);
    }
    let members = &value.members[..value.members.len().min(MAX_BYTES_LEN)];
    w.array_len(members.len());
    for member in members {
        w.string(&member.member_id);
        if version >= 3 {
            w.nullable_string(member.group_instance_id.as_deref());
        }
        w.string(&member.client_id);
        w.string(&member.client_host);
        if version >= 1 {
            w.i32(member.rebalance_timeout_ms);
        }
        w.i32(member.session_timeout_ms);
        w.bytes(&member.subscription);
        w.bytes(&member.assignment);
        w.tagged_fields();
    }
    w.tagged_fields();
    w.finish()
}

/// Decodes a classic group's metadata of any version.
pub fn decode_group_value(bytes: &[u8]) -> Result<GroupMetadataValue, RecordError> {
    let mut r = SchemaReader::new(bytes);
    let version = value_version(&mut r, "GroupMetadataValue")?;
    let protocol_type = r.string("protocolType")?;
    let generation = r.i32("generation")?;
    let protocol = r.nullable_string("protocol")?;
    let leader = r.nullable_string("leader")?;
    let current_state_timestamp = if version >= 2 {
        r.i64("currentStateTimestamp")?
    } else {
        -1
    };
    let count = r.array_len("members", MIN_MEMBER_LEN)?;
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let member_id = r.string("memberId")?;
        let group_instance_id = if version >= 3 {
            r.nullable_string("groupInstanceId")?
        } else {
            None
        };
        let client_id = r.string("clientId")?;
        let client_host = r.string("clientHost")?;
        let rebalance_timeout_ms = if version >= 1 {
            r.i32("rebalanceTimeout")?
        } else {
            -1
        };
        let session_timeout_ms = r.i32("sessionTimeout")?;
        let subscription = r.bytes("subscription")?;
        let assignment = r.bytes("assignment")?;
        r.tagged_fields()?;
        members.push(MemberMetadata {
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout_ms,
            session_timeout_ms,
            subscription,
            assignment,
        });
    }
    r.tagged_fields()?;
    Ok(GroupMetadataValue {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

/// A consumer group's epoch (ConsumerGroupMetadataValue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsumerGroupMetadataValue {
    /// The group epoch.
    pub epoch: i32,
    /// Kafka 4.1's hash of the subscribed topics' metadata (tagged field 0, default 0,
    /// written only when not 0). A reader comparing it with its own computation only
    /// learns whether the topics changed; 0 means unknown.
    pub metadata_hash: i64,
}

/// One topic of a [`ConsumerGroupPartitionMetadataValue`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMetadataTopic {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub num_partitions: i32,
    /// (partition, racks); deprecated since Kafka 4.0, usually empty.
    pub partition_metadata: Vec<(i32, Vec<String>)>,
}

/// The subscribed topics' metadata of a consumer group (ConsumerGroupPartitionMetadataValue),
/// which Kafka 4.1 no longer writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupPartitionMetadataValue {
    pub topics: Vec<PartitionMetadataTopic>,
}

/// What a member using the classic protocol inside a consumer group sent in its last
/// JoinGroup (ConsumerGroupMemberMetadataValue.ClassicMemberMetadata).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberMetadata {
    pub session_timeout_ms: i32,
    /// (protocol name, ConsumerProtocolSubscription bytes), in the member's order.
    pub supported_protocols: Vec<(String, Bytes)>,
}

/// A consumer group member's metadata (ConsumerGroupMemberMetadataValue).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMemberMetadataValue {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub subscribed_topic_regex: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// Tagged field 0; set for a member of the classic protocol.
    pub classic_member_metadata: Option<ClassicMemberMetadata>,
}

/// The epoch of a consumer group's target assignment
/// (ConsumerGroupTargetAssignmentMetadataValue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConsumerGroupTargetAssignmentMetadataValue {
    pub assignment_epoch: i32,
}

/// One member's target assignment (ConsumerGroupTargetAssignmentMemberValue): partitions
/// by topic id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupTargetAssignmentMemberValue {
    pub topic_partitions: Vec<(Uuid, Vec<i32>)>,
}

/// One member's current assignment (ConsumerGroupCurrentMemberAssignmentValue).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroupCurrentMemberAssignmentValue {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    /// Kafka's `MemberState` byte: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2
    /// UNRELEASED_PARTITIONS (127 UNKNOWN).
    pub state: i8,
    pub assigned_partitions: Vec<(Uuid, Vec<i32>)>,
    pub partitions_pending_revocation: Vec<(Uuid, Vec<i32>)>,
}

/// Fewest bytes a topic's partitions take in the flexible layout: a uuid, a compact
/// array length and a tagged-field count.
const MIN_TOPIC_PARTITIONS_LEN: usize = 18;

/// A writer of a KIP-848 value: its version, flexible.
fn consumer_group_value_writer() -> SchemaWriter {
    let mut w = SchemaWriter::new(true);
    w.i16(CONSUMER_GROUP_VALUE_VERSION);
    w
}

/// A reader of a KIP-848 value after its version (any non-negative one, read as the
/// flexible layout of version 0).
fn consumer_group_value_reader<'a>(
    bytes: &'a [u8],
    record: &'static str,
) -> Result<SchemaReader<'a>, RecordError> {
    let mut r = SchemaReader::new(bytes);
    r.version(record)?;
    r.set_flexible(true);
    Ok(r)
}

fn write_uuid(w: &mut SchemaWriter, id: &Uuid) {
    let (msb, lsb) = id.as_u64_pair();
    w.i64(msb as i64);
    w.i64(lsb as i64);
}

fn read_uuid(r: &mut SchemaReader<'_>, field: &'static str) -> Result<Uuid, RecordError> {
    let msb = r.i64(field)? as u64;
    let lsb = r.i64(field)? as u64;
    Ok(Uuid::from_u64_pair(msb, lsb))
}

fn write_string_array(w: &mut SchemaWriter, strings: &[String]) {
    let strings = &strings[..strings.len().min(MAX_BYTES_LEN)];
    w.array_len(strings.len());
    for s in strings {
        w.string(s);
    }
}

fn read_string_array(
    r: &mut SchemaReader<'_>,
    field: &'static str,
) -> Result<Vec<String>, RecordError> {
    let count = r.array_len(field, 1)?;
    let mut strings = Vec::with_capacity(count);
    for _ in 0..count {
        strings.push(r.string(field)?);
    }
    Ok(strings)
}

/// Writes a flexible `[]TopicPartitions` ({topicId uuid, partitions []int32}).
fn write_topic_partitions(w: &mut SchemaWriter, topics: &[(Uuid, Vec<i32>)]) {
    let topics = &topics[..topics.len().min(MAX_BYTES_LEN)];
    w.array_len(topics.len());
    for (topic_id, partitions) in topics {
        write_uuid(w, topic_id);
        let partitions = &partitions[..partitions.len().min(MAX_BYTES_LEN)];
        w.array_len(partitions.len());
        for partition in partitions {
            w.i32(*partition);
        }
        w.tagged_fields();
    }
}

fn read_topic_partitions(
    r: &mut SchemaReader<'_>,
    field: &'static str,
) -> Result<Vec<(Uuid, Vec<i32>)>, RecordError> {
    let count = r.array_len(field, MIN_TOPIC_PARTITIONS_LEN)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let topic_id = read_uuid(r, field)?;
        let partition_count = r.array_len(field, 4)?;
        let mut partitions = Vec::with_capacity(partition_count);
        for _ in 0..partition_count {
            partitions.push(r.i32(field)?);
        }
        r.tagged_fields()?;
        topics.push((topic_id, partitions));
    }
    Ok(topics)
}

/// Appends a tagged-field section holding `fields` (tag, already encoded data), in
/// increasing tag order.
fn append_tagged_fields(out: &mut Vec<u8>, fields: &[(u32, Vec<u8>)]) {
    let mut w = SchemaWriter::new(true);
    w.uvarint(fields.len() as u32);
    let mut header = w.finish();
    out.append(&mut header);
    for (tag, data) in fields {
        let mut w = SchemaWriter::new(true);
        w.uvarint(*tag);
        w.uvarint(u32::try_from(data.len()).unwrap_or(u32::MAX));
        out.append(&mut w.finish());
        out.extend_from_slice(data);
    }
}

/// Reads a tagged-field section, handing each field's tag and data to `field`.
fn read_tagged_fields<'a>(
    r: &mut SchemaReader<'a>,
    mut field: impl FnMut(u32, &'a [u8]) -> Result<(), RecordError>,
) -> Result<(), RecordError> {
    let count = r.uvarint("tagged field count")?;
    for _ in 0..count {
        let tag = r.uvarint("tag")?;
        let size = r.uvarint("tagged field size")?;
        let data = r.take(size as usize, "tagged field")?;
        field(tag, data)?;
    }
    Ok(())
}

/// Encodes a ConsumerGroupMetadataValue at version 0.
pub fn encode_consumer_group_metadata_value(value: &ConsumerGroupMetadataValue) -> Vec<u8> {
    let mut w = consumer_group_value_writer();
    w.i32(value.epoch);
    let mut out = w.finish();
    let mut tagged = Vec::new();
    if value.metadata_hash != 0 {
        tagged.push((0, value.metadata_hash.to_be_bytes().to_vec()));
    }
    append_tagged_fields(&mut out, &tagged);
    out
}

/// Decodes a ConsumerGroupMetadataValue.
pub fn decode_consumer_group_metadata_value(
    bytes: &[u8],
) -> Result<ConsumerGroupMetadataValue, RecordError> {
    let mut r = consumer_group_value_reader(bytes, "ConsumerGroupMetadataValue")?;
    let epoch = r.i32("epoch")?;
    let mut metadata_hash = 0;
    read_tagged_fields(&mut r, |tag, data| {
        if tag == 0 {
            metadata_hash = SchemaReader::new(data).i64("metadataHash")?;
        }
        Ok(())
    })?;
    Ok(ConsumerGroupMetadataValue {
        epoch,
        metadata_hash,
    })
}

/// Encodes a ConsumerGroupPartitionMetadataValue at version 0 (Kafka 4.1 writes none;
/// for tests and tools).
pub fn encode_consumer_group_partition_metadata_value(
    value: &ConsumerGroupPartitionMetadataValue,
) -> Vec<u8> {
    let mut w = consumer_group_value_writer();
    let topics = &value.topics[..value.topics.len().min(MAX_BYTES_LEN)];
    w.array_len(topics.len());
    for topic in topics {
        write_uuid(&mut w, &topic.topic_id);
        w.string(&topic.topic_name);
        w.i32(topic.num_partitions);
        let partitions =
            &topic.partition_metadata[..topic.partition_metadata.len().min(MAX_BYTES_LEN)];
        w.array_len(partitions.len());
        for (partition, racks) in partitions {
            w.i32(*partition);
            write_string_array(&mut w, racks);
            w.tagged_fields();
        }
        w.tagged_fields();
    }
    w.tagged_fields();
    w.finish()
}

/// Decodes a ConsumerGroupPartitionMetadataValue.
pub fn decode_consumer_group_partition_metadata_value(
    bytes: &[u8],
) -> Result<ConsumerGroupPartitionMetadataValue, RecordError> {
    let mut r = consumer_group_value_reader(bytes, "ConsumerGroupPartitionMetadataValue")?;
    // A topic takes at least its uuid, name, partition count, array length and tags.
    let count = r.array_len("topics", 23)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        let topic_id = read_uuid(&mut r, "topicId")?;
        let topic_name = r.string("topicName")?;
        let num_partitions = r.i32("numPartitions")?;
        let partition_count = r.array_len("partitionMetadata", 6)?;
        let mut partition_metadata = Vec::with_capacity(partition_count);
        for _ in 0..partition_count {
            let partition = r.i32("partition")?;
            let racks = read_string_array(&mut r, "racks")?;
            r.tagged_fields()?;
            partition_metadata.push((partition, racks));
        }
        r.tagged_fields()?;
        topics.push(PartitionMetadataTopic {
            topic_id,
            topic_name,
            num_partitions,
            partition_metadata,
        });
    }
    r.tagged_fields()?;
    Ok(ConsumerGroupPartitionMetadataValue { topics })
}

/// Encodes a ConsumerGroupMemberMetadataValue at version 0; the classic member metadata,
/// when set, as tagged field 0.
pub fn encode_consumer_group_member_metadata_value(
    value: &ConsumerGroupMemberMetadataValue,
) -> Vec<u8> {
    let mut w = consumer_group_value_writer();
    w.nullable_string(value.instance_id.as_deref());
    w.nullable_string(value.rack_id.as_deref());
    w.string(&value.client_id);
    w.string(&value.client_host);
    write_string_array(&mut w, &value.subscribed_topic_names);
    w.nullable_string(value.subscribed_topic_regex.as_deref());
    w.i32(value.rebalance_timeout_ms);
    w.nullable_string(value.server_assignor.as_deref());
    let mut out = w.finish();
    // Tagged field 0 is a nullable struct: Kafka's generated writer always writes it (its
    // default is an empty struct, not null) behind a presence marker, a varint 0 for null
    // and 1 before the fields.
    let mut c = SchemaWriter::new(true);
    match &value.classic_member_metadata {
        None => c.uvarint(0),
        Some(_) => c.uvarint(1),
    }
    if let Some(classic) = &value.classic_member_metadata {
        c.i32(classic.session_timeout_ms);
        let protocols =
            &classic.supported_protocols[..classic.supported_protocols.len().min(MAX_BYTES_LEN)];
        c.array_len(protocols.len());
        for (name, metadata) in protocols {
            c.string(name);
            c.bytes(metadata);
            c.tagged_fields();
        }
        c.tagged_fields();
    }
    append_tagged_fields(&mut out, &[(0, c.finish())]);
    out
}

/// Tagged field 0 of a member's metadata: a presence marker (0 null, 1 present) and the
/// struct, as Kafka writes it. Sluice before 2026-12-07 wrote the struct alone and nothing
/// for null; such a field starts with the session timeout's top byte, 0 for any timeout
/// below 4.6 hours, and is still read.
fn decode_classic_member_metadata(
    data: &[u8],
) -> Result<Option<ClassicMemberMetadata>, RecordError> {
    let fields = match data {
        [0] => return Ok(None),
        [1, fields @ ..] => fields,
        _ => data,
    };
    decode_classic_member_metadata_fields(fields).map(Some)
}

fn decode_classic_member_metadata_fields(
    data: &[u8],
) -> Result<ClassicMemberMetadata, RecordError> {
    let mut r = SchemaReader::new(data);
    r.set_flexible(true);
    let session_timeout_ms = r.i32("sessionTimeoutMs")?;
    // A protocol takes at least its name's and metadata's lengths and its tags.
    let count = r.array_len("supportedProtocols", 3)?;
    let mut supported_protocols = Vec::with_capacity(count);
    for _ in 0..count {
        let name = r.string("name")?;
        let metadata = r.bytes("metadata")?;
        r.tagged_fields()?;
        supported_protocols.push((name, metadata));
    }
    r.tagged_fields()?;
    Ok(ClassicMemberMetadata {
        session_timeout_ms,
        supported_protocols,
    })
}

/// Decodes a ConsumerGroupMemberMetadataValue.
pub fn decode_consumer_group_member_metadata_value(
    bytes: &[u8],
) -> Result<ConsumerGroupMemberMetadataValue, RecordError> {
    let mut r = consumer_group_value_reader(bytes, "ConsumerGroupMemberMetadataValue")?;
    let instance_id = r.nullable_string("instanceId")?;
    let rack_id = r.nullable_string("rackId")?;
    let client_id = r.string("clientId")?;
    let client_host = r.string("clientHost")?;
    let subscribed_topic_names = read_string_array(&mut r, "subscribedTopicNames")?;
    let subscribed_topic_regex = r.nullable_string("subscribedTopicRegex")?;
    let rebalance_timeout_ms = r.i32("rebalanceTimeoutMs")?;
    let server_assignor = r.nullable_string("serverAssignor")?;
    let mut classic_member_metadata = None;
    read_tagged_fields(&mut r, |tag, data| {
        if tag == 0 {
            classic_member_metadata = decode_classic_member_metadata(data)?;
        }
        Ok(())
    })?;
    Ok(ConsumerGroupMemberMetadataValue {
        instance_id,
        rack_id,
        client_id,
        client_host,
        subscribed_topic_names,
        subscribed_topic_regex,
        rebalance_timeout_ms,
        server_assignor,
        classic_member_metadata,
    })
}

/// Encodes a ConsumerGroupTargetAssignmentMetadataValue at version 0.
pub fn encode_consumer_group_target_assignment_metadata_value(
    value: &ConsumerGroupTargetAssignmentMetadataValue,
) -> Vec<u8> {
    let mut w = consumer_group_value_writer();
    w.i32(value.assignment_epoch);
    w.tagged_fields();
    w.finish()
}

/// Decodes a ConsumerGroupTargetAssignmentMetadataValue.
pub fn decode_consumer_group_target_assignment_metadata_value(
    bytes: &[u8],
) -> Result<ConsumerGroupTargetAssignmentMetadataValue, RecordError> {
    let mut r = consumer_group_value_reader(bytes, "ConsumerGroupTargetAssignmentMetadataValue")?;
    let assignment_epoch = r.i32("assignmentEpoch")?;
    r.tagged_fields()?;
    Ok(ConsumerGroupTargetAssignmentMetadataValue { assignment_epoch })
}

/// Encodes a ConsumerGroupTargetAssignmentMemberValue at version 0.
pub fn encode_consumer_group_target_assignment_member_value(
    value: &ConsumerGroupTargetAssignmentMemberValue,
) -> Vec<u8> {
    let mut w = consumer_group_value_writer();
    write_topic_partitions(&mut w, &value.topic_partitions);
    w.tagged_fields();
    w.finish()
}

/// Decodes a ConsumerGroupTargetAssignmentMemberValue.
pub fn decode_consumer_group_target_assignment_member_value(
    bytes: &[u8],
) -> Result<ConsumerGroupTargetAssignmentMemberValue, RecordError> {
    let mut r = consumer_group_value_reader(bytes, "ConsumerGroupTargetAssignmentMemberValue")?;
    let topic_partitions = read_topic_partitions(&mut r, "topicPartitions")?;
    r.tagged_fields()?;
    Ok(ConsumerGroupTargetAssignmentMemberValue { topic_partitions })
}

/// Encodes a ConsumerGroupCurrentMemberAssignmentValue at version 0.
pub fn encode_consumer_group_current_member_assignment_value(
    value: &ConsumerGroupCurrentMemberAssignmentValue,
) -> Vec<u8> {
    let mut w = consumer_group_value_writer();
    w.i32(value.member_epoch);
    w.i32(value.previous_member_epoch);
    let mut out = w.finish();
    out.push(value.state as u8);
    let mut w = SchemaWriter::new(true);
    write_topic_partitions(&mut w, &value.assigned_partitions);
    write_topic_partitions(&mut w, &value.partitions_pending_revocation);
    w.tagged_fields();
    out.append(&mut w.finish());
    out
}

/// Decodes a ConsumerGroupCurrentMemberAssignmentValue.
pub fn decode_consumer_group_current_member_assignment_value(
    bytes: &[u8],
) -> Result<ConsumerGroupCurrentMemberAssignmentValue, RecordError> {
    let mut r = consumer_group_value_reader(bytes, "ConsumerGroupCurrentMemberAssignmentValue")?;
    let member_epoch = r.i32("memberEpoch")?;
    let previous_member_epoch = r.i32("previousMemberEpoch")?;
    let state = r.take(1, "state")?.first().map_or(0, |byte| *byte as i8);
    let assigned_partitions = read_topic_partitions(&mut r, "assignedPartitions")?;
    let partitions_pending_revocation =
        read_topic_partitions(&mut r, "partitionsPendingRevocation")?;
    r.tagged_fields()?;
    Ok(ConsumerGroupCurrentMemberAssignmentValue {
        member_epoch,
        previous_member_epoch,
        state,
        assigned_partitions,
        partitions_pending_revocation,
    })
}

/// The `__consumer_offsets` partition that owns `group`: Kafka's
/// `Utils.abs(groupId.hashCode()) % partitions`, with Java's `String.hashCode` over UTF-16
/// code units and `Utils.abs(n) = n & 0x7fffffff`. Returns 0 when `partitions` is 0.
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let hash = group.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    (hash & 0x7fff_ffff).checked_rem(partitions).unwrap_or(0)
}

/// Appends fields in Kafka's classic or flexible encoding.
///
/// Reads a value's version and switches to the flexible layout from version 4.
fn value_version(r: &mut SchemaReader<'_>, record: &'static str) -> Result<i16, RecordError> {
    let version = r.version(record)?;
    r.set_flexible(version >= FIRST_FLEXIBLE_VERSION);
    Ok(version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(s: &str) -> Vec<u8> {
        let digits: Vec<u8> = s.bytes().filter(u8::is_ascii_hexdigit).collect();
        digits
            .chunks(2)
            .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).unwrap(), 16).unwrap())
            .collect()
    }

    fn sample_offset() -> OffsetValue {
        OffsetValue {
            offset: 100,
            leader_epoch: 5,
            metadata: "m".into(),
            commit_timestamp: 1_700_000_000_000,
            expire_timestamp: None,
        }
    }

    fn sample_group() -> GroupMetadataValue {
        GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 1,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            current_state_timestamp: 1000,
            members: vec![MemberMetadata {
                member_id: "m1".into(),
                group_instance_id: None,
                client_id: "c".into(),
                client_host: "/h".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 45_000,
                subscription: Bytes::from_static(&[1, 2]),
                assignment: Bytes::new(),
            }],
        }
    }

    #[test]
    fn offset_key_bytes() {
        let key = OffsetsKey::Offset {
            group: "g1".into(),
            topic: "t".into(),
            partition: 3,
        };
        let bytes = hex("0001 0002 6731 0001 74 00000003");
        assert_eq!(encode_key(&key), bytes);
        assert_eq!(decode_key(&bytes).unwrap(), key);
        // Type 0 is the same layout.
        assert_eq!(
            decode_key(&hex("0000 0002 6731 0001 74 00000003")).unwrap(),
            key
        );
    }

    #[test]
    fn group_key_bytes() {
        let key = OffsetsKey::GroupMetadata {
            group: "test-group".into(),
        };
        let bytes = hex("0002 000a 746573742d67726f7570");
        assert_eq!(encode_key(&key), bytes);
        assert_eq!(decode_key(&bytes).unwrap(), key);
    }

    #[test]
    fn newer_record_types_are_other() {
        // ConsumerGroupRegularExpressionKey (type 16, group "g", regex "a.*"), and
        // share and streams group types.
        assert_eq!(
            decode_key(&hex("0010 0001 67 0003 612e2a")).unwrap(),
            OffsetsKey::Other { version: 16 }
        );
        for version in [9i16, 15, 200] {
            let key = OffsetsKey::Other { version };
            assert_eq!(decode_key(&encode_key(&key)).unwrap(), key);
        }
    }

    #[test]
    fn offset_value_v3_bytes() {
        let bytes = hex("0003 0000000000000064 00000005 0001 6d 0000018bcfe56800");
        assert_eq!(write_offset_value(&sample_offset(), 3), bytes);
        assert_eq!(decode_offset_value(&bytes).unwrap(), sample_offset());
    }

    #[test]
    fn offset_values_are_written_as_kafka_4_1_writes_them() {
        let v4 = hex("0004 0000000000000064 00000005 026d 0000018bcfe56800 00");
        assert_eq!(encode_offset_value(&sample_offset()), v4);
    }

    #[test]
    fn offset_value_v1_bytes() {
        let value = OffsetValue {
            offset: 100,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 1000,
            expire_timestamp: Some(2000),
        };
        let bytes = hex("0001 0000000000000064 0000 00000000000003e8 00000000000007d0");
        assert_eq!(encode_offset_value(&value), bytes);
        assert_eq!(decode_offset_value(&bytes).unwrap(), value);
    }

    #[test]
    fn offset_value_v0_v2_and_expire_default() {
        let v0 = hex("0000 0000000000000064 0001 6d 00000000000003e8");
        let expected = OffsetValue {
            offset: 100,
            leader_epoch: -1,
            metadata: "m".into(),
            commit_timestamp: 1000,
            expire_timestamp: None,
        };
        assert_eq!(decode_offset_value(&v0).unwrap(), expected);
        let mut v2 = v0.clone();
        v2[1] = 2;
        assert_eq!(decode_offset_value(&v2).unwrap(), expected);
        // Version 1 with expireTimestamp -1 means no expiry.
        let v1 = hex("0001 0000000000000064 0001 6d 00000000000003e8 ffffffffffffffff");
        assert_eq!(decode_offset_value(&v1).unwrap(), expected);
    }

    #[test]
    fn offset_value_flexible_versions() {
        // v4: compact string "m" (02 6d) and an empty tagged-field section.
        let v4 = hex("0004 0000000000000064 00000005 026d 0000018bcfe56800 00");
        assert_eq!(write_offset_value(&sample_offset(), 4), v4);
        assert_eq!(decode_offset_value(&v4).unwrap(), sample_offset());
        // A future v5 with an unknown tagged field (tag 0, two bytes) reads as v4 (KIP-915).
        let v5 = hex("0005 0000000000000064 00000005 026d 0000018bcfe56800 01 00 02 abcd");
        assert_eq!(decode_offset_value(&v5).unwrap(), sample_offset());
    }

    #[test]
    fn group_value_v3_bytes() {
        let bytes = hex(
            "0003 0008 636f6e73756d6572 00000001 0005 72616e6765 0002 6d31 00000000000003e8
             00000001
               0002 6d31  ffff  0001 63  0002 2f68  000493e0  0000afc8  00000002 0102  00000000",
        );
        assert_eq!(encode_group_value(&sample_group()), bytes);
        assert_eq!(decode_group_value(&bytes).unwrap(), sample_group());
    }

    #[test]
    fn group_value_v4_bytes() {
        let bytes = hex(
            "0004 09 636f6e73756d6572 00000001 06 72616e6765 03 6d31 00000000000003e8
             02
               03 6d31  00  02 63  03 2f68  000493e0  0000afc8  03 0102  01  00
             00",
        );
        assert_eq!(write_group_value(&sample_group(), 4), bytes);
        assert_eq!(decode_group_value(&bytes).unwrap(), sample_group());
    }

    #[test]
    fn group_value_v0_defaults() {
        // An empty group: protocol and leader null, no members.
        let bytes = hex("0000 0008 636f6e73756d6572 00000000 ffff ffff 00000000");
        let value = decode_group_value(&bytes).unwrap();
        assert_eq!(
            value,
            GroupMetadataValue {
                protocol_type: "consumer".into(),
                generation: 0,
                protocol: None,
                leader: None,
                current_state_timestamp: -1,
                members: vec![],
            }
        );
        let mut group = sample_group();
        group.members[0].group_instance_id = Some("static".into());
        let member = &decode_group_value(&write_group_value(&group, 0))
            .unwrap()
            .members[0];
        assert_eq!(member.rebalance_timeout_ms, -1);
        assert_eq!(member.group_instance_id, None);
    }

    #[test]
    fn partition_for_matches_java_hash_code() {
        // Java: "test-group".hashCode() == 627841412; "hello".hashCode() == 99162322.
        assert_eq!(partition_for("test-group", 50), 627_841_412 % 50);
        assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
        assert_eq!(partition_for("", 50), 0);
        // "Aa" and "BB" collide in Java (2112).
        assert_eq!(partition_for("Aa", 50), 2112 % 50);
        assert_eq!(partition_for("BB", 50), 2112 % 50);
        // U+1F600 is the surrogate pair D83D DE00: 0xD83D * 31 + 0xDE00 == 1772899.
        assert_eq!(partition_for("\u{1F600}", 50), 1_772_899 % 50);
        // "grüppe-😀".hashCode() == -1039948164: negative, so Utils.abs masks the sign bit.
        assert_eq!(
            partition_for("grüppe-\u{1F600}", 50),
            (-1_039_948_164i32 & 0x7fff_ffff) % 50
        );
        assert_eq!(partition_for("grüppe-\u{1F600}", 50), 34);
        assert_eq!(partition_for("x", 0), 0);
    }

    #[test]
    fn truncations_fail() {
        let key = encode_key(&OffsetsKey::Offset {
            group: "g1".into(),
            topic: "t".into(),
            partition: 3,
        });
        let offset = encode_offset_value(&sample_offset());
        let group = encode_group_value(&sample_group());
        let flexible = write_group_value(&sample_group(), 4);
        for len in 0..key.len() {
            assert!(decode_key(&key[..len]).is_err(), "key cut at {len}");
        }
        for len in 0..offset.len() {
            assert!(
                decode_offset_value(&offset[..len]).is_err(),
                "offset cut at {len}"
            );
        }
        for bytes in [&group, &flexible] {
            for len in 0..bytes.len() {
                assert!(
                    decode_group_value(&bytes[..len]).is_err(),
                    "group cut at {len}"
                );
            }
        }
    }

    #[test]
    fn malformed_inputs_fail() {
        assert!(matches!(
            decode_offset_value(&hex("ffff 0000000000000064")),
            Err(RecordError::UnknownVersion { version: -1, .. })
        ));
        // Metadata string with a null length.
        assert!(matches!(
            decode_offset_value(&hex("0000 0000000000000064 ffff 00000000000003e8")),
            Err(RecordError::UnexpectedNull { field: "metadata" })
        ));
        // Length -2.
        assert!(matches!(
            decode_key(&hex("0002 fffe")),
            Err(RecordError::BadLength { length: -2, .. })
        ));
        // Invalid UTF-8 group id.
        assert!(matches!(
            decode_key(&hex("0002 0002 c328")),
            Err(RecordError::InvalidUtf8 { field: "group" })
        ));
        // A member count the bytes cannot hold is refused before allocating.
        assert!(matches!(
            decode_group_value(&hex(
                "0003 0000 00000000 ffff ffff 0000000000000000 7fffffff"
            )),
            Err(RecordError::BadLength {
                field: "members",
                ..
            })
        ));
        // A varint longer than five bytes.
        assert!(matches!(
            decode_offset_value(&hex("0004 0000000000000064 00000005 ffffffffff01")),
            Err(RecordError::BadVarint { .. })
        ));
    }

    fn string() -> impl Strategy<Value = String> {
        "\\PC{0,12}"
    }

    fn offset_value() -> impl Strategy<Value = OffsetValue> {
        (
            any::<i64>(),
            any::<i32>(),
            string(),
            any::<i64>(),
            proptest::option::of(any::<i64>().prop_filter("-1 means none", |t| *t != -1)),
        )
            .prop_map(
                |(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)| {
                    OffsetValue {
                        offset,
                        leader_epoch,
                        metadata,
                        commit_timestamp,
                        expire_timestamp,
                    }
                },
            )
    }

    fn member() -> impl Strategy<Value = MemberMetadata> {
        (
            (string(), proptest::option::of(string()), string(), string()),
            (
                any::<i32>(),
                any::<i32>(),
                proptest::collection::vec(any::<u8>(), 0..16),
                proptest::collection::vec(any::<u8>(), 0..16),
            ),
        )
            .prop_map(
                |(
                    (member_id, group_instance_id, client_id, client_host),
                    (rebalance_timeout_ms, session_timeout_ms, subscription, assignment),
                )| MemberMetadata {
                    member_id,
                    group_instance_id,
                    client_id,
                    client_host,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    subscription: subscription.into(),
                    assignment: assignment.into(),
                },
            )
    }

    fn group_value() -> impl Strategy<Value = GroupMetadataValue> {
        (
            string(),
            any::<i32>(),
            proptest::option::of(string()),
            proptest::option::of(string()),
            any::<i64>(),
            proptest::collection::vec(member(), 0..4),
        )
            .prop_map(
                |(
                    protocol_type,
                    generation,
                    protocol,
                    leader,
                    current_state_timestamp,
                    members,
                )| {
                    GroupMetadataValue {
                        protocol_type,
                        generation,
                        protocol,
                        leader,
                        current_state_timestamp,
                        members,
                    }
                },
            )
    }

    /// What survives a trip through `version`: fields it lacks read back as defaults.
    fn offset_at_version(mut value: OffsetValue, version: i16) -> OffsetValue {
        if version < 3 {
            value.leader_epoch = -1;
        }
        if version != 1 {
            value.expire_timestamp = None;
        }
        value
    }

    fn group_at_version(mut value: GroupMetadataValue, version: i16) -> GroupMetadataValue {
        if version < 2 {
            value.current_state_timestamp = -1;
        }
        for member in &mut value.members {
            if version < 3 {
                member.group_instance_id = None;
            }
            if version < 1 {
                member.rebalance_timeout_ms = -1;
            }
        }
        value
    }

    proptest! {
        #[test]
        fn keys_round_trip(group in string(), topic in string(), partition: i32, other in 9i16..) {
            for key in [
                OffsetsKey::Offset { group: group.clone(), topic, partition },
                OffsetsKey::GroupMetadata { group },
                OffsetsKey::Other { version: other },
            ] {
                prop_assert_eq!(decode_key(&encode_key(&key)).unwrap(), key);
            }
        }

        #[test]
        fn offset_values_round_trip(value in offset_value(), version in 0i16..=4) {
            let written = if value.expire_timestamp.is_some() { 1 } else { 3 };
            prop_assert_eq!(
                decode_offset_value(&encode_offset_value(&value)).unwrap(),
                offset_at_version(value.clone(), written)
            );
            prop_assert_eq!(
                decode_offset_value(&write_offset_value(&value, version)).unwrap(),
                offset_at_version(value, version)
            );
        }

        #[test]
        fn group_values_round_trip(value in group_value(), version in 0i16..=4) {
            prop_assert_eq!(decode_group_value(&encode_group_value(&value)).unwrap(), value.clone());
            prop_assert_eq!(
                decode_group_value(&write_group_value(&value, version)).unwrap(),
                group_at_version(value, version)
            );
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_key(&bytes);
            let _ = decode_offset_value(&bytes);
            let _ = decode_group_value(&bytes);
        }

        #[test]
        fn mutated_group_values_never_panic(value in group_value(), version in 0i16..=4, position: usize, byte: u8) {
            let mut bytes = write_group_value(&value, version);
            let position = position % bytes.len();
            bytes[position] = byte;
            let _ = decode_group_value(&bytes);
        }
    }

    // ---- KIP-848 consumer group records ----

    const U1: Uuid = Uuid::from_bytes([1; 16]);
    const U2: Uuid = Uuid::from_bytes([2; 16]);

    fn sample_member(classic: bool) -> ConsumerGroupMemberMetadataValue {
        ConsumerGroupMemberMetadataValue {
            instance_id: None,
            rack_id: None,
            client_id: "c".into(),
            client_host: "/h".into(),
            subscribed_topic_names: vec!["foo".into()],
            subscribed_topic_regex: None,
            rebalance_timeout_ms: 30_000,
            server_assignor: Some("uniform".into()),
            classic_member_metadata: classic.then(|| ClassicMemberMetadata {
                session_timeout_ms: 45_000,
                supported_protocols: vec![("range".into(), Bytes::from_static(&[1, 2]))],
            }),
        }
    }

    #[test]
    fn consumer_group_key_bytes() {
        let cases = [
            (
                OffsetsKey::ConsumerGroupMetadata { group: "g".into() },
                "0003 0001 67",
            ),
            (
                OffsetsKey::ConsumerGroupPartitionMetadata { group: "g".into() },
                "0004 0001 67",
            ),
            (
                OffsetsKey::ConsumerGroupMemberMetadata {
                    group: "g".into(),
                    member: "m".into(),
                },
                "0005 0001 67 0001 6d",
            ),
            (
                OffsetsKey::ConsumerGroupTargetAssignmentMetadata { group: "g".into() },
                "0006 0001 67",
            ),
            (
                OffsetsKey::ConsumerGroupTargetAssignmentMember {
                    group: "g".into(),
                    member: "m".into(),
                },
                "0007 0001 67 0001 6d",
            ),
            (
                OffsetsKey::ConsumerGroupCurrentMemberAssignment {
                    group: "g".into(),
                    member: "m".into(),
                },
                "0008 0001 67 0001 6d",
            ),
        ];
        for (key, bytes) in cases {
            assert_eq!(encode_key(&key), hex(bytes), "{key:?}");
            assert_eq!(decode_key(&hex(bytes)).unwrap(), key);
            assert_eq!(key.group_id(), Some("g"));
            assert!(key.is_consumer_group_record());
        }
        let offset = OffsetsKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 0,
        };
        assert_eq!(offset.group_id(), Some("g"));
        assert!(!offset.is_consumer_group_record());
        assert!(!OffsetsKey::GroupMetadata { group: "g".into() }.is_consumer_group_record());
        assert_eq!(OffsetsKey::Other { version: 9 }.group_id(), None);
    }

    #[test]
    fn consumer_group_metadata_value_bytes() {
        let plain = ConsumerGroupMetadataValue {
            epoch: 5,
            metadata_hash: 0,
        };
        let bytes = hex("0000 00000005 00");
        assert_eq!(encode_consumer_group_metadata_value(&plain), bytes);
        assert_eq!(decode_consumer_group_metadata_value(&bytes).unwrap(), plain);
        // Kafka 4.1's MetadataHash: tagged field 0, an int64, written when not 0.
        let hashed = ConsumerGroupMetadataValue {
            epoch: 5,
            metadata_hash: 0x0102_0304_0506_0708,
        };
        let bytes = hex("0000 00000005 01 00 08 0102030405060708");
        assert_eq!(encode_consumer_group_metadata_value(&hashed), bytes);
        assert_eq!(
            decode_consumer_group_metadata_value(&bytes).unwrap(),
            hashed
        );
        // An unknown tag (1, two bytes) before it is skipped.
        let bytes = hex("0000 00000005 02 01 02 abcd 00 08 0102030405060708");
        assert_eq!(
            decode_consumer_group_metadata_value(&bytes).unwrap(),
            hashed
        );
    }

    #[test]
    fn consumer_group_member_metadata_value_bytes() {
        // ClassicMemberMetadata is tagged field 0, a nullable struct Kafka 4.1 always
        // writes behind a presence marker: null is one byte, 00 (as Kafka's generated
        // ConsumerGroupMemberMetadataValue.write does; a Kafka-written record of a
        // consumer-protocol member failed to decode before this).
        let bytes = hex("0000  00  00  02 63  03 2f68  02 04 666f6f  00  00007530
             08 756e69666f726d  01 00 01 00");
        assert_eq!(
            encode_consumer_group_member_metadata_value(&sample_member(false)),
            bytes
        );
        assert_eq!(
            decode_consumer_group_member_metadata_value(&bytes).unwrap(),
            sample_member(false)
        );
        // Present: marker 01, then the 16-byte struct.
        let bytes = hex("0000  00  00  02 63  03 2f68  02 04 666f6f  00  00007530
             08 756e69666f726d
             01 00 11  01 0000afc8 02 06 72616e6765 03 0102 00 00");
        assert_eq!(
            encode_consumer_group_member_metadata_value(&sample_member(true)),
            bytes
        );
        assert_eq!(
            decode_consumer_group_member_metadata_value(&bytes).unwrap(),
            sample_member(true)
        );
        // What Sluice wrote before: no field for null, the struct without its marker.
        for (legacy, classic) in [
            (
                "0000  00  00  02 63  03 2f68  02 04 666f6f  00  00007530
                 08 756e69666f726d  00",
                false,
            ),
            (
                "0000  00  00  02 63  03 2f68  02 04 666f6f  00  00007530
                 08 756e69666f726d
                 01 00 10  0000afc8 02 06 72616e6765 03 0102 00 00",
                true,
            ),
        ] {
            assert_eq!(
                decode_consumer_group_member_metadata_value(&hex(legacy)).unwrap(),
                sample_member(classic)
            );
        }
    }

    #[test]
    fn consumer_group_assignment_value_bytes() {
        let current = ConsumerGroupCurrentMemberAssignmentValue {
            member_epoch: 3,
            previous_member_epoch: 2,
            state: 1,
            assigned_partitions: vec![(U1, vec![0, 1])],
            partitions_pending_revocation: vec![(U2, vec![2])],
        };
        let bytes = hex("0000 00000003 00000002 01
             02 01010101010101010101010101010101 03 00000000 00000001 00
             02 02020202020202020202020202020202 02 00000002 00
             00");
        assert_eq!(
            encode_consumer_group_current_member_assignment_value(&current),
            bytes
        );
        assert_eq!(
            decode_consumer_group_current_member_assignment_value(&bytes).unwrap(),
            current
        );

        let target = ConsumerGroupTargetAssignmentMemberValue {
            topic_partitions: vec![(U1, vec![5])],
        };
        let bytes = hex("0000 02 01010101010101010101010101010101 02 00000005 00 00");
        assert_eq!(
            encode_consumer_group_target_assignment_member_value(&target),
            bytes
        );
        assert_eq!(
            decode_consumer_group_target_assignment_member_value(&bytes).unwrap(),
            target
        );

        let epoch = ConsumerGroupTargetAssignmentMetadataValue {
            assignment_epoch: 7,
        };
        let bytes = hex("0000 00000007 00");
        assert_eq!(
            encode_consumer_group_target_assignment_metadata_value(&epoch),
            bytes
        );
        assert_eq!(
            decode_consumer_group_target_assignment_metadata_value(&bytes).unwrap(),
            epoch
        );
    }

    #[test]
    fn consumer_group_partition_metadata_value_bytes() {
        let value = ConsumerGroupPartitionMetadataValue {
            topics: vec![PartitionMetadataTopic {
                topic_id: U1,
                topic_name: "foo".into(),
                num_partitions: 2,
                partition_metadata: vec![(0, vec!["r".into()])],
            }],
        };
        let bytes = hex("0000 02 01010101010101010101010101010101 04 666f6f 00000002
             02 00000000 02 02 72 00
             00
             00");
        assert_eq!(
            encode_consumer_group_partition_metadata_value(&value),
            bytes
        );
        assert_eq!(
            decode_consumer_group_partition_metadata_value(&bytes).unwrap(),
            value
        );
    }

    #[test]
    fn consumer_group_value_truncations_fail() {
        let values = [
            encode_consumer_group_metadata_value(&ConsumerGroupMetadataValue {
                epoch: 1,
                metadata_hash: 9,
            }),
            encode_consumer_group_member_metadata_value(&sample_member(true)),
            encode_consumer_group_current_member_assignment_value(
                &ConsumerGroupCurrentMemberAssignmentValue {
                    member_epoch: 1,
                    previous_member_epoch: 0,
                    state: 0,
                    assigned_partitions: vec![(U1, vec![0])],
                    partitions_pending_revocation: vec![],
                },
            ),
        ];
        for len in 0..values[0].len() {
            assert!(decode_consumer_group_metadata_value(&values[0][..len]).is_err());
        }
        for len in 0..values[1].len() {
            assert!(decode_consumer_group_member_metadata_value(&values[1][..len]).is_err());
        }
        for len in 0..values[2].len() {
            assert!(
                decode_consumer_group_current_member_assignment_value(&values[2][..len]).is_err()
            );
        }
        // A partition count the bytes cannot hold is refused before allocating.
        assert!(matches!(
            decode_consumer_group_target_assignment_member_value(&hex("0000 ffffffff0f")),
            Err(RecordError::BadLength { .. })
        ));
        assert!(matches!(
            decode_consumer_group_metadata_value(&hex("ffff 00000001 00")),
            Err(RecordError::UnknownVersion { .. })
        ));
    }

    fn pairs() -> impl Strategy<Value = Vec<(Uuid, Vec<i32>)>> {
        proptest::collection::vec(
            (
                any::<u128>().prop_map(Uuid::from_u128),
                proptest::collection::vec(any::<i32>(), 0..5),
            ),
            0..4,
        )
    }

    fn member_value() -> impl Strategy<Value = ConsumerGroupMemberMetadataValue> {
        (
            (
                proptest::option::of(string()),
                proptest::option::of(string()),
                string(),
                string(),
                proptest::collection::vec(string(), 0..4),
            ),
            (
                proptest::option::of(string()),
                any::<i32>(),
                proptest::option::of(string()),
                proptest::option::of((
                    any::<i32>(),
                    proptest::collection::vec(
                        (string(), proptest::collection::vec(any::<u8>(), 0..8)),
                        0..3,
                    ),
                )),
            ),
        )
            .prop_map(
                |(
                    (instance_id, rack_id, client_id, client_host, subscribed_topic_names),
                    (subscribed_topic_regex, rebalance_timeout_ms, server_assignor, classic),
                )| ConsumerGroupMemberMetadataValue {
                    instance_id,
                    rack_id,
                    client_id,
                    client_host,
                    subscribed_topic_names,
                    subscribed_topic_regex,
                    rebalance_timeout_ms,
                    server_assignor,
                    classic_member_metadata: classic.map(|(session_timeout_ms, protocols)| {
                        ClassicMemberMetadata {
                            session_timeout_ms,
                            supported_protocols: protocols
                                .into_iter()
                                .map(|(name, metadata)| (name, Bytes::from(metadata)))
                                .collect(),
                        }
                    }),
                },
            )
    }

    proptest! {
        #[test]
        fn consumer_group_keys_round_trip(group in string(), member in string()) {
            for key in [
                OffsetsKey::ConsumerGroupMetadata { group: group.clone() },
                OffsetsKey::ConsumerGroupPartitionMetadata { group: group.clone() },
                OffsetsKey::ConsumerGroupMemberMetadata { group: group.clone(), member: member.clone() },
                OffsetsKey::ConsumerGroupTargetAssignmentMetadata { group: group.clone() },
                OffsetsKey::ConsumerGroupTargetAssignmentMember { group: group.clone(), member: member.clone() },
                OffsetsKey::ConsumerGroupCurrentMemberAssignment { group: group.clone(), member: member.clone() },
            ] {
                prop_assert_eq!(decode_key(&encode_key(&key)).unwrap(), key);
            }
        }

        #[test]
        fn consumer_group_values_round_trip(
            epoch: i32,
            hash: i64,
            member in member_value(),
            (assigned, pending) in (pairs(), pairs()),
            previous: i32,
            state: i8,
        ) {
            let metadata = ConsumerGroupMetadataValue { epoch, metadata_hash: hash };
            prop_assert_eq!(
                decode_consumer_group_metadata_value(&encode_consumer_group_metadata_value(&metadata)).unwrap(),
                metadata
            );
            prop_assert_eq!(
                decode_consumer_group_member_metadata_value(&encode_consumer_group_member_metadata_value(&member)).unwrap(),
                member
            );
            let current = ConsumerGroupCurrentMemberAssignmentValue {
                member_epoch: epoch,
                previous_member_epoch: previous,
                state,
                assigned_partitions: assigned.clone(),
                partitions_pending_revocation: pending,
            };
            prop_assert_eq!(
                decode_consumer_group_current_member_assignment_value(&encode_consumer_group_current_member_assignment_value(&current)).unwrap(),
                current
            );
            let target = ConsumerGroupTargetAssignmentMemberValue { topic_partitions: assigned };
            prop_assert_eq!(
                decode_consumer_group_target_assignment_member_value(&encode_consumer_group_target_assignment_member_value(&target)).unwrap(),
                target
            );
            let assignment_epoch = ConsumerGroupTargetAssignmentMetadataValue { assignment_epoch: epoch };
            prop_assert_eq!(
                decode_consumer_group_target_assignment_metadata_value(&encode_consumer_group_target_assignment_metadata_value(&assignment_epoch)).unwrap(),
                assignment_epoch
            );
        }

        #[test]
        fn consumer_group_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_consumer_group_metadata_value(&bytes);
            let _ = decode_consumer_group_partition_metadata_value(&bytes);
            let _ = decode_consumer_group_member_metadata_value(&bytes);
            let _ = decode_consumer_group_target_assignment_metadata_value(&bytes);
            let _ = decode_consumer_group_target_assignment_member_value(&bytes);
            let _ = decode_consumer_group_current_member_assignment_value(&bytes);
        }

        #[test]
        fn mutated_consumer_group_values_never_panic(member in member_value(), position: usize, byte: u8) {
            let mut bytes = encode_consumer_group_member_metadata_value(&member);
            let position = position % bytes.len();
            bytes[position] = byte;
            let _ = decode_consumer_group_member_metadata_value(&bytes);
        }
    }
}
