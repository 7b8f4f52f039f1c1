//! The classic consumer protocol's embedded formats: the subscription a member sends as
//! its JoinGroup protocol metadata and the assignment the leader hands out in SyncGroup
//! (Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment, versions 0..=3).
//!
//! Both start with a big-endian `i16` version and use Kafka's classic (non-flexible)
//! encoding. As in Kafka, a reader takes a version newer than it knows by reading the
//! fields it knows and ignoring the rest, so bytes after the last known field are
//! ignored. Decoding never panics and never allocates from an unbacked count.

use bytes::Bytes;

use crate::schema::{SchemaReader, SchemaWriter};

/// Highest version of both formats this codec knows; newer ones are read and written as it.
const HIGHEST_VERSION: i16 = 3;

/// Why a subscription or assignment could not be decoded.
pub type ConsumerProtocolError = crate::schema::SchemaError;

/// A member's subscription (ConsumerProtocolSubscription).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscription {
    /// The version on the wire; a newer version than 3 keeps its number but only the
    /// fields of version 3.
    pub version: i16,
    pub topics: Vec<String>,
    pub user_data: Option<Bytes>,
    /// Partitions the member owns, by topic (versions 1+).
    pub owned_partitions: Vec<(String, Vec<i32>)>,
    /// Generation of the owned partitions (versions 2+); -1 when unknown.
    pub generation_id: i32,
    /// The member's rack (versions 3+). Kept as sent: Kafka's client turns `""` into none.
    pub rack_id: Option<String>,
}

/// A member's assignment (ConsumerProtocolAssignment); versions 0..=3 share one layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The version on the wire.
    pub version: i16,
    /// Assigned partitions, by topic.
    pub partitions: Vec<(String, Vec<i32>)>,
    pub user_data: Option<Bytes>,
}

/// Decodes a subscription of any version from 0 up.
pub fn decode_subscription(bytes: &[u8]) -> Result<Subscription, ConsumerProtocolError> {
    let mut r = SchemaReader::new(bytes);
    let version = r.version("consumer protocol")?;
    let count = r.array_len("topics", 2)?;
    let mut topics = Vec::with_capacity(count);
    for _ in 0..count {
        topics.push(r.string("topics")?);
    }
    let user_data = r.nullable_bytes("userData")?;
    let owned_partitions = if version >= 1 {
        r.topic_partitions("ownedPartitions")?
    } else {
        Vec::new()
    };
    let generation_id = if version >= 2 {
        r.i32("generationId")?
    } else {
        -1
    };
    let rack_id = if version >= 3 {
        r.nullable_string("rackId")?
    } else {
        None
    };
    Ok(Subscription {
        version,
        topics,
        user_data,
        owned_partitions,
        generation_id,
        rack_id,
    })
}

/// Encodes a subscription at `s.version`, clamped to 0..=3 as Kafka clamps a newer one;
/// fields the version lacks are left out.
pub fn encode_subscription(s: &Subscription) -> Vec<u8> {
    let version = s.version.clamp(0, HIGHEST_VERSION);
    let mut w = SchemaWriter::new(false);
    w.i16(version);
    w.array_len(s.topics.len());
    for topic in &s.topics {
        w.string(topic);
    }
    w.nullable_bytes(s.user_data.as_deref());
    if version >= 1 {
        w.topic_partitions(&s.owned_partitions);
    }
    if version >= 2 {
        w.i32(s.generation_id);
    }
    if version >= 3 {
        w.nullable_string(s.rack_id.as_deref());
    }
    w.finish()
}

/// Decodes an assignment of any version from 0 up.
pub fn decode_assignment(bytes: &[u8]) -> Result<Assignment, ConsumerProtocolError> {
    let mut r = SchemaReader::new(bytes);
    let version = r.version("consumer protocol")?;
    let partitions = r.topic_partitions("assignedPartitions")?;
    let user_data = r.nullable_bytes("userData")?;
    Ok(Assignment {
        version,
        partitions,
        user_data,
    })
}

/// Encodes an assignment at `a.version`, clamped to 0..=3 as Kafka clamps a newer one.
pub fn encode_assignment(a: &Assignment) -> Vec<u8> {
    let mut w = SchemaWriter::new(false);
    w.i16(a.version.clamp(0, HIGHEST_VERSION));
    w.topic_partitions(&a.partitions);
    w.nullable_bytes(a.user_data.as_deref());
    w.finish()
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

    fn sample_v3() -> Subscription {
        Subscription {
            version: 3,
            topics: vec!["a".into(), "b".into()],
            user_data: None,
            owned_partitions: vec![("a".into(), vec![0, 1])],
            generation_id: 7,
            rack_id: Some("r1".into()),
        }
    }

    const SAMPLE_V3: &str = "0003 00000002 0001 61 0001 62 ffffffff
        00000001 0001 61 00000002 00000000 00000001
        00000007 0002 7231";

    #[test]
    fn subscription_v3_bytes() {
        let bytes = hex(SAMPLE_V3);
        assert_eq!(encode_subscription(&sample_v3()), bytes);
        assert_eq!(decode_subscription(&bytes).unwrap(), sample_v3());
    }

    #[test]
    fn subscription_v0_bytes() {
        let subscription = Subscription {
            version: 0,
            topics: vec!["t".into()],
            user_data: Some(Bytes::from_static(&[0xab])),
            owned_partitions: vec![],
            generation_id: -1,
            rack_id: None,
        };
        let bytes = hex("0000 00000001 0001 74 00000001 ab");
        assert_eq!(encode_subscription(&subscription), bytes);
        assert_eq!(decode_subscription(&bytes).unwrap(), subscription);
    }

    #[test]
    fn newer_subscription_reads_known_fields() {
        // A v4 subscription: v3's fields then a field this codec does not know.
        let mut bytes = hex(SAMPLE_V3);
        bytes[1] = 4;
        bytes.extend_from_slice(&hex("0005 68656c6c6f"));
        let decoded = decode_subscription(&bytes).unwrap();
        assert_eq!(
            decoded,
            Subscription {
                version: 4,
                ..sample_v3()
            }
        );
        // Written back, it is clamped to v3 as Kafka does.
        assert_eq!(encode_subscription(&decoded), hex(SAMPLE_V3));
    }

    #[test]
    fn assignment_bytes() {
        let assignment = Assignment {
            version: 0,
            partitions: vec![("t".into(), vec![0, 2])],
            user_data: None,
        };
        let bytes = hex("0000 00000001 0001 74 00000002 00000000 00000002 ffffffff");
        assert_eq!(encode_assignment(&assignment), bytes);
        assert_eq!(decode_assignment(&bytes).unwrap(), assignment);
        // Versions 1..=3 share the layout; a newer one is read the same way.
        let mut v7 = bytes.clone();
        v7[1] = 7;
        assert_eq!(
            decode_assignment(&v7).unwrap(),
            Assignment {
                version: 7,
                ..assignment.clone()
            }
        );
        let mut v3 = bytes;
        v3[1] = 3;
        assert_eq!(
            encode_assignment(&Assignment {
                version: 7,
                ..assignment
            }),
            v3
        );
    }

    #[test]
    fn truncations_and_garbage_fail() {
        let subscription = hex(SAMPLE_V3);
        for len in 0..subscription.len() {
            assert!(
                decode_subscription(&subscription[..len]).is_err(),
                "cut at {len}"
            );
        }
        let assignment = hex("0001 00000001 0001 74 00000001 00000000 00000001 ab");
        for len in 0..assignment.len() {
            assert!(
                decode_assignment(&assignment[..len]).is_err(),
                "cut at {len}"
            );
        }
        assert_eq!(
            decode_assignment(&hex("ffff 00000000 ffffffff")),
            Err(ConsumerProtocolError::UnknownVersion {
                record: "consumer protocol",
                version: -1
            })
        );
        assert!(matches!(
            decode_subscription(&hex("0000 ffffffff ffffffff")),
            Err(ConsumerProtocolError::UnexpectedNull { field: "topics" })
        ));
        assert!(matches!(
            decode_subscription(&hex("0000 7fffffff")),
            Err(ConsumerProtocolError::BadLength {
                field: "topics",
                ..
            })
        ));
        assert!(matches!(
            decode_subscription(&hex("0000 00000001 0002 c328 ffffffff")),
            Err(ConsumerProtocolError::InvalidUtf8 { .. })
        ));
        assert!(matches!(
            decode_assignment(&hex("0000 00000000 fffffffe")),
            Err(ConsumerProtocolError::BadLength { length: -2, .. })
        ));
    }

    fn topic_partitions() -> impl Strategy<Value = Vec<(String, Vec<i32>)>> {
        proptest::collection::vec(
            ("\\PC{0,8}", proptest::collection::vec(any::<i32>(), 0..5)),
            0..4,
        )
    }

    fn user_data() -> impl Strategy<Value = Option<Bytes>> {
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..16).prop_map(Bytes::from))
    }

    fn subscription() -> impl Strategy<Value = Subscription> {
        (
            0i16..=3,
            proptest::collection::vec("\\PC{0,8}", 0..4),
            user_data(),
            topic_partitions(),
            any::<i32>(),
            proptest::option::of("\\PC{0,8}"),
        )
            .prop_map(
                |(version, topics, user_data, owned_partitions, generation_id, rack_id)| {
                    // Fields the version lacks read back as their defaults.
                    Subscription {
                        version,
                        topics,
                        user_data,
                        owned_partitions: if version >= 1 {
                            owned_partitions
                        } else {
                            vec![]
                        },
                        generation_id: if version >= 2 { generation_id } else { -1 },
                        rack_id: if version >= 3 { rack_id } else { None },
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn subscriptions_round_trip(s in subscription()) {
            prop_assert_eq!(decode_subscription(&encode_subscription(&s)).unwrap(), s);
        }

        #[test]
        fn assignments_round_trip(version in 0i16..=3, partitions in topic_partitions(), user_data in user_data()) {
            let a = Assignment { version, partitions, user_data };
            prop_assert_eq!(decode_assignment(&encode_assignment(&a)).unwrap(), a);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_subscription(&bytes);
            let _ = decode_assignment(&bytes);
        }

        #[test]
        fn mutated_subscriptions_never_panic(s in subscription(), position: usize, byte: u8) {
            let mut bytes = encode_subscription(&s);
            let position = position % bytes.len();
            bytes[position] = byte;
            let _ = decode_subscription(&bytes);
        }
    }
}
