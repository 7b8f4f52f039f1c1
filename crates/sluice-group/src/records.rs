//! The keys and values of `__consumer_offsets`, byte for byte as Kafka writes them, so
//! Kafka's tools (`DumpLogSegments --offsets-decoder`, the console consumer's
//! `OffsetsMessageFormatter`) read what Sluice writes and Sluice loads what Kafka wrote.
//!
//! A key is a big-endian `i16` record type (Kafka calls it the key "version") followed by
//! the key's fields; a value is an `i16` version followed by its fields. Types 0 and 1 are
//! committed offsets ([`OffsetsKey::Offset`]), 2 is classic group metadata
//! ([`OffsetsKey::GroupMetadata`]); every other type (KIP-848 consumer groups from 3, share
//! and streams groups above) decodes to [`OffsetsKey::Other`], which a loader skips as
//! Kafka's does. Tombstones (null values) are the caller's concern.
//!
//! Values are read at any version from 0 up; versions from 4 are flexible (compact
//! lengths, tagged fields) and, as KIP-915 specifies, a version above the highest known is
//! read as that flexible layout, its unknown tagged fields skipped. Like Kafka, readers
//! ignore bytes after the last field. Writers use the versions Kafka 4.1 writes.
//!
//! Decoding never panics and never allocates from a count the input has not backed with
//! bytes.

use bytes::Bytes;
use sluice_protocol::schema::{MAX_BYTES_LEN, SchemaError, SchemaReader, SchemaWriter};

/// Key type (version) Kafka 4.1 writes for committed offsets; 0 is the older, identical form.
const OFFSET_KEY_VERSION: i16 = 1;
/// Key type of classic group metadata.
const GROUP_KEY_VERSION: i16 = 2;
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
    /// Any other record type (KIP-848, share or streams groups): not decoded, skipped by
    /// the loader. Encodes as the bare type.
    Other { version: i16 },
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

/// Encodes a key: offsets as type 1 and group metadata as type 2, as Kafka 4.1 does.
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
        OffsetsKey::Other { version } => w.i16(*version),
    }
    w.finish()
}

/// Decodes a key; record types other than 0..=2 become [`OffsetsKey::Other`].
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
        _ => Ok(OffsetsKey::Other { version }),
    }
}

/// Encodes a committed offset at the version Kafka 4.1 picks: 1 when an expiry timestamp
/// is set (version 1 has no leader epoch, so it is dropped, as in Kafka), 3 otherwise.
pub fn encode_offset_value(value: &OffsetValue) -> Vec<u8> {
    let version = if value.expire_timestamp.is_some() {
        1
    } else {
        3
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
        // A ConsumerGroupMetadataKey (type 3, group "g") and types beyond KIP-848.
        assert_eq!(
            decode_key(&hex("0003 0001 67")).unwrap(),
            OffsetsKey::Other { version: 3 }
        );
        for version in [8i16, 15, 200] {
            let key = OffsetsKey::Other { version };
            assert_eq!(decode_key(&encode_key(&key)).unwrap(), key);
        }
    }

    #[test]
    fn offset_value_v3_bytes() {
        let bytes = hex("0003 0000000000000064 00000005 0001 6d 0000018bcfe56800");
        assert_eq!(encode_offset_value(&sample_offset()), bytes);
        assert_eq!(decode_offset_value(&bytes).unwrap(), sample_offset());
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
        fn keys_round_trip(group in string(), topic in string(), partition: i32, other in 3i16..) {
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
}
