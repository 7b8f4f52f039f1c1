//! The classic consumer protocol's embedded formats: the subscription a member sends as
//! its JoinGroup protocol metadata and the assignment the leader hands out in SyncGroup
//! (Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment, versions 0..=3).
//!
//! Both start with a big-endian `i16` version and use Kafka's classic (non-flexible)
//! encoding. As in Kafka, a reader takes a version newer than it knows by reading the
//! fields it knows and ignoring the rest, so bytes after the last known field are
//! ignored. Decoding never panics and never allocates from an unbacked count.

use bytes::Bytes;

/// Highest version of both formats this codec knows; newer ones are read and written as it.
const HIGHEST_VERSION: i16 = 3;

/// Why a subscription or assignment could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsumerProtocolError {
    /// The input ended inside a field.
    #[error("truncated {field}: needs {needed} bytes, {remaining} left")]
    Truncated {
        field: &'static str,
        needed: usize,
        remaining: usize,
    },
    /// A length or count prefix is negative (other than null) or larger than the input.
    #[error("invalid length {length} for {field}")]
    BadLength { field: &'static str, length: i64 },
    /// A field that may not be null was written as null.
    #[error("{field} is null but may not be")]
    UnexpectedNull { field: &'static str },
    /// A negative version.
    #[error("unsupported consumer protocol version {0}")]
    UnsupportedVersion(i16),
    /// A string field holds bytes that are not UTF-8.
    #[error("{field} is not valid UTF-8")]
    InvalidUtf8 { field: &'static str },
}

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
    let mut r = Reader { buf: bytes };
    let version = r.version()?;
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
    let mut w = Writer::default();
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
    w.out
}

/// Decodes an assignment of any version from 0 up.
pub fn decode_assignment(bytes: &[u8]) -> Result<Assignment, ConsumerProtocolError> {
    let mut r = Reader { buf: bytes };
    let version = r.version()?;
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
    let mut w = Writer::default();
    w.i16(a.version.clamp(0, HIGHEST_VERSION));
    w.topic_partitions(&a.partitions);
    w.nullable_bytes(a.user_data.as_deref());
    w.out
}

/// Appends fields in Kafka's classic encoding. Values too long for their length prefix
/// (strings over `i16::MAX` bytes, byte strings and arrays over `i32::MAX`) are cut to
/// what fits rather than panicking; Kafka's own limits keep real values far below.
#[derive(Default)]
struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn i16(&mut self, v: i16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn string(&mut self, s: &str) {
        let s = &s[..s.floor_char_boundary(i16::MAX as usize)];
        self.i16(s.len() as i16);
        self.out.extend_from_slice(s.as_bytes());
    }

    fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.string(s),
            None => self.i16(-1),
        }
    }

    fn nullable_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => {
                let b = &b[..b.len().min(i32::MAX as usize)];
                self.i32(b.len() as i32);
                self.out.extend_from_slice(b);
            }
            None => self.i32(-1),
        }
    }

    fn array_len(&mut self, len: usize) {
        self.i32(len.min(i32::MAX as usize) as i32);
    }

    fn topic_partitions(&mut self, topics: &[(String, Vec<i32>)]) {
        let topics = &topics[..topics.len().min(i32::MAX as usize)];
        self.array_len(topics.len());
        for (topic, partitions) in topics {
            self.string(topic);
            let partitions = &partitions[..partitions.len().min(i32::MAX as usize)];
            self.array_len(partitions.len());
            for &partition in partitions {
                self.i32(partition);
            }
        }
    }
}

/// Reads fields in Kafka's classic encoding from a byte slice, never past it.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn version(&mut self) -> Result<i16, ConsumerProtocolError> {
        let version = self.i16("version")?;
        if version < 0 {
            return Err(ConsumerProtocolError::UnsupportedVersion(version));
        }
        Ok(version)
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ConsumerProtocolError> {
        if n > self.buf.len() {
            return Err(ConsumerProtocolError::Truncated {
                field,
                needed: n,
                remaining: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn fixed<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], ConsumerProtocolError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    fn i16(&mut self, field: &'static str) -> Result<i16, ConsumerProtocolError> {
        self.fixed(field).map(i16::from_be_bytes)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, ConsumerProtocolError> {
        self.fixed(field).map(i32::from_be_bytes)
    }

    /// Turns a length prefix into `None` for null (-1) or a length.
    fn length(length: i64, field: &'static str) -> Result<Option<usize>, ConsumerProtocolError> {
        match length {
            -1 => Ok(None),
            _ => usize::try_from(length)
                .map(Some)
                .map_err(|_| ConsumerProtocolError::BadLength { field, length }),
        }
    }

    fn nullable_string(
        &mut self,
        field: &'static str,
    ) -> Result<Option<String>, ConsumerProtocolError> {
        let Some(len) = Self::length(i64::from(self.i16(field)?), field)? else {
            return Ok(None);
        };
        String::from_utf8(self.take(len, field)?.to_vec())
            .map(Some)
            .map_err(|_| ConsumerProtocolError::InvalidUtf8 { field })
    }

    fn string(&mut self, field: &'static str) -> Result<String, ConsumerProtocolError> {
        self.nullable_string(field)?
            .ok_or(ConsumerProtocolError::UnexpectedNull { field })
    }

    fn nullable_bytes(
        &mut self,
        field: &'static str,
    ) -> Result<Option<Bytes>, ConsumerProtocolError> {
        let Some(len) = Self::length(i64::from(self.i32(field)?), field)? else {
            return Ok(None);
        };
        Ok(Some(Bytes::copy_from_slice(self.take(len, field)?)))
    }

    /// Reads a non-null array count whose elements take at least `min_element` bytes,
    /// rejecting a count the remaining bytes cannot hold.
    fn array_len(
        &mut self,
        field: &'static str,
        min_element: usize,
    ) -> Result<usize, ConsumerProtocolError> {
        let count = Self::length(i64::from(self.i32(field)?), field)?
            .ok_or(ConsumerProtocolError::UnexpectedNull { field })?;
        if count.saturating_mul(min_element) > self.buf.len() {
            return Err(ConsumerProtocolError::BadLength {
                field,
                length: count as i64,
            });
        }
        Ok(count)
    }

    /// Reads a `[]TopicPartition`: each a topic name and its `[]int32` partitions.
    fn topic_partitions(
        &mut self,
        field: &'static str,
    ) -> Result<Vec<(String, Vec<i32>)>, ConsumerProtocolError> {
        // A topic takes at least its name's length (2) and its partition count (4).
        let count = self.array_len(field, 6)?;
        let mut topics = Vec::with_capacity(count);
        for _ in 0..count {
            let topic = self.string(field)?;
            let partitions_count = self.array_len(field, 4)?;
            let mut partitions = Vec::with_capacity(partitions_count);
            for _ in 0..partitions_count {
                partitions.push(self.i32(field)?);
            }
            topics.push((topic, partitions));
        }
        Ok(topics)
    }
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
            Err(ConsumerProtocolError::UnsupportedVersion(-1))
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
