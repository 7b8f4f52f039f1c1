//! The keys and values of `__transaction_state`, byte for byte as Kafka 4.1 writes them
//! (`TransactionLogKey.json`, `TransactionLogValue.json`, `TransactionLog.java`), so
//! Kafka's tools read what Sluice writes and Sluice loads what Kafka wrote.
//!
//! Key: `i16` version 0, then the transactional id as a classic `i16`-length string.
//! Other key versions are not transaction records; Kafka skips them ([`decode_key`]
//! answers `None`).
//!
//! Value: `i16` version, then `ProducerId i64, ProducerEpoch i16, TransactionTimeoutMs
//! i32, TransactionStatus i8, TransactionPartitions [Topic string, PartitionIds []i32]
//! (nullable), TransactionLastUpdateTimestampMs i64, TransactionStartTimestampMs i64`.
//! Version 0 is classic (`i16` string lengths, `i32` array lengths, -1 for null); version
//! 1 is flexible (unsigned-varint lengths plus one, 0 for null; a tagged-field section
//! after each partition entry and after the value) and carries three tagged fields:
//! tag 0 `PreviousProducerId` (default -1), tag 1 `NextProducerId` (default -1), tag 2
//! `ClientTransactionVersion` (default 0), each written only when not its default. Kafka
//! writes version 1 when the cluster's `transaction.version` feature is at least 1
//! (`TransactionVersion.transactionLogValueVersion`), else version 0. The partitions are
//! null in the Empty state. `last_producer_epoch` is not persisted.
//!
//! As KIP-915 provides, a value version above 1 is read as the version-1 layout with its
//! unknown tagged fields skipped. Readers ignore bytes after the last field, as Kafka's do.
//! Decoding never panics and never allocates from a count the input has not backed with
//! bytes.

use std::collections::BTreeSet;

use crate::state::{NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TxnMetadata, TxnState};

pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// The key version Kafka writes (and the only one it reads).
const KEY_VERSION: i16 = 0;
/// Tags of the value's tagged fields (version 1+).
const TAG_PREVIOUS_PRODUCER_ID: u32 = 0;
const TAG_NEXT_PRODUCER_ID: u32 = 1;
const TAG_CLIENT_TRANSACTION_VERSION: u32 = 2;

/// Why a `__transaction_state` key or value could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid __transaction_state record: {0}")]
pub struct RecordError(pub String);

fn error(message: impl Into<String>) -> RecordError {
    RecordError(message.into())
}

/// The `__transaction_state` partition that owns `transactional_id`: Kafka's
/// `Utils.abs(transactionalId.hashCode()) % partitions`, with Java's `String.hashCode`
/// over UTF-16 code units and `Utils.abs(n) = n & 0x7fffffff`. Returns 0 when
/// `partitions` is not positive.
pub fn partition_for(transactional_id: &str, partitions: i32) -> i32 {
    if partitions <= 0 {
        return 0;
    }
    let hash = transactional_id.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    });
    (hash & 0x7fff_ffff) % partitions
}

/// The key of `transactional_id`'s record (key version 0).
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut w = Writer::default();
    w.i16(KEY_VERSION);
    w.classic_string(transactional_id);
    w.bytes
}

/// The transactional id of a key; `None` for a key version Kafka does not read as a
/// transaction record (it skips those on load).
pub fn decode_key(bytes: &[u8]) -> Result<Option<String>, RecordError> {
    let mut r = Reader::new(bytes);
    let version = r.i16("key version")?;
    if version != KEY_VERSION {
        return Ok(None);
    }
    Ok(Some(r.classic_string("TransactionalId")?))
}

/// The value version Kafka writes when the cluster's `transaction.version` feature is at
/// `transaction_version_level`.
pub fn value_version_for(transaction_version_level: i16) -> i16 {
    if transaction_version_level >= 1 { 1 } else { 0 }
}

/// `meta` as the value Kafka 4.1 writes on a cluster at `transaction.version` 2 (the
/// default of a new 4.x cluster): version 1. Like Kafka 4.1.1's `TransactionLog.valueToBytes`
/// it leaves out PreviousProducerId and NextProducerId (tags 0 and 1: read, never
/// written), so the bytes are Kafka's (checked by `compat/run.sh`'s txn-files section).
pub fn encode_value(meta: &TxnMetadata) -> Vec<u8> {
    encode_stored_value(meta, 1)
}

/// What the coordinator stores for `meta` at value `version`: Kafka 4.1.1's fields (see
/// [`encode_value`]).
pub fn encode_stored_value(meta: &TxnMetadata, version: i16) -> Vec<u8> {
    let stored = TxnMetadata {
        previous_producer_id: NO_PRODUCER_ID,
        next_producer_id: NO_PRODUCER_ID,
        ..meta.clone()
    };
    encode_value_version(&stored, version)
}

/// `meta` as a value of `version` (0: classic, without the tagged fields; 1: flexible).
pub fn encode_value_version(meta: &TxnMetadata, version: i16) -> Vec<u8> {
    debug_assert!(
        meta.state != TxnState::Empty || meta.partitions.is_empty(),
        "an Empty transaction has no partitions"
    );
    let flexible = version >= 1;
    let mut w = Writer::default();
    w.i16(version);
    w.i64(meta.producer_id);
    w.i16(meta.producer_epoch);
    w.i32(meta.timeout_ms);
    w.i8(meta.state.id());
    if meta.state == TxnState::Empty {
        w.null_array(flexible);
    } else {
        let topics = group_by_topic(&meta.partitions);
        w.array_len(topics.len(), flexible);
        for (topic, partitions) in topics {
            w.string(topic, flexible);
            w.array_len(partitions.len(), flexible);
            for partition in partitions {
                w.i32(partition);
            }
            if flexible {
                w.uvarint(0);
            }
        }
    }
    w.i64(meta.last_update_ms);
    w.i64(meta.txn_start_ms);
    if flexible {
        let mut tagged: Vec<(u32, Vec<u8>)> = Vec::new();
        if meta.previous_producer_id != NO_PRODUCER_ID {
            tagged.push((
                TAG_PREVIOUS_PRODUCER_ID,
                meta.previous_producer_id.to_be_bytes().to_vec(),
            ));
        }
        if meta.next_producer_id != NO_PRODUCER_ID {
            tagged.push((
                TAG_NEXT_PRODUCER_ID,
                meta.next_producer_id.to_be_bytes().to_vec(),
            ));
        }
        if meta.client_transaction_version != 0 {
            tagged.push((
                TAG_CLIENT_TRANSACTION_VERSION,
                meta.client_transaction_version.to_be_bytes().to_vec(),
            ));
        }
        w.uvarint(tagged.len() as u32);
        for (tag, data) in tagged {
            w.uvarint(tag);
            w.uvarint(data.len() as u32);
            w.bytes.extend_from_slice(&data);
        }
    }
    w.bytes
}

fn group_by_topic(partitions: &BTreeSet<(String, i32)>) -> Vec<(&str, Vec<i32>)> {
    let mut topics: Vec<(&str, Vec<i32>)> = Vec::new();
    for (topic, partition) in partitions {
        match topics.last_mut() {
            Some((last, ids)) if *last == topic.as_str() => ids.push(*partition),
            _ => topics.push((topic.as_str(), vec![*partition])),
        }
    }
    topics
}

/// The metadata a value holds for `transactional_id` (versions 0 and 1, higher versions
/// as 1). `last_producer_epoch` is -1: Kafka does not persist it.
pub fn decode_value(transactional_id: &str, bytes: &[u8]) -> Result<TxnMetadata, RecordError> {
    let mut r = Reader::new(bytes);
    let version = r.i16("value version")?;
    if version < 0 {
        return Err(error(format!("negative value version {version}")));
    }
    let flexible = version >= 1;
    let producer_id = r.i64("ProducerId")?;
    let producer_epoch = r.i16("ProducerEpoch")?;
    let timeout_ms = r.i32("TransactionTimeoutMs")?;
    let status = r.i8("TransactionStatus")?;
    let state = TxnState::from_id(status)
        .ok_or_else(|| error(format!("unknown transaction status {status}")))?;
    let mut partitions = BTreeSet::new();
    // Each topic entry takes at least a string length and an array length.
    let min_topic_len = if flexible { 3 } else { 6 };
    if let Some(topics) = r.array_len("TransactionPartitions", flexible, min_topic_len)? {
        for _ in 0..topics {
            let topic = r.string("Topic", flexible)?;
            let ids = r
                .array_len("PartitionIds", flexible, 4)?
                .ok_or_else(|| error("null PartitionIds"))?;
            for _ in 0..ids {
                partitions.insert((topic.clone(), r.i32("PartitionId")?));
            }
            if flexible {
                r.skip_tagged_fields()?;
            }
        }
    }
    let last_update_ms = r.i64("TransactionLastUpdateTimestampMs")?;
    let txn_start_ms = r.i64("TransactionStartTimestampMs")?;
    let mut previous_producer_id = NO_PRODUCER_ID;
    let mut next_producer_id = NO_PRODUCER_ID;
    let mut client_transaction_version = 0;
    if flexible {
        let count = r.uvarint("tagged field count")?;
        for _ in 0..count {
            let tag = r.uvarint("tag")?;
            let size = r.uvarint("tagged field size")? as usize;
            let data = r.take(size, "tagged field")?;
            let exact = |n: usize| {
                if size == n {
                    Ok(())
                } else {
                    Err(error(format!(
                        "tagged field {tag} has {size} bytes, expected {n}"
                    )))
                }
            };
            match tag {
                TAG_PREVIOUS_PRODUCER_ID => {
                    exact(8)?;
                    previous_producer_id =
                        i64::from_be_bytes(data.try_into().expect("8 bytes checked"));
                }
                TAG_NEXT_PRODUCER_ID => {
                    exact(8)?;
                    next_producer_id =
                        i64::from_be_bytes(data.try_into().expect("8 bytes checked"));
                }
                TAG_CLIENT_TRANSACTION_VERSION => {
                    exact(2)?;
                    client_transaction_version =
                        i16::from_be_bytes(data.try_into().expect("2 bytes checked"));
                }
                _ => {}
            }
        }
    }
    if state == TxnState::Empty {
        // Kafka ignores the partitions of an Empty transaction.
        partitions.clear();
    }
    Ok(TxnMetadata {
        transactional_id: transactional_id.to_string(),
        producer_id,
        previous_producer_id,
        next_producer_id,
        producer_epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        timeout_ms,
        state,
        partitions,
        txn_start_ms,
        last_update_ms,
        client_transaction_version,
    })
}

#[derive(Default)]
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn i8(&mut self, v: i8) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn i16(&mut self, v: i16) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.bytes.extend_from_slice(&v.to_be_bytes());
    }
    fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.bytes.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.bytes.push(v as u8);
    }
    fn classic_string(&mut self, s: &str) {
        // Kafka refuses strings longer than i16::MAX bytes; a transactional id that long
        // cannot reach the coordinator (the request decoder has the same bound).
        let len = i16::try_from(s.len()).expect("string longer than 32767 bytes");
        self.i16(len);
        self.bytes.extend_from_slice(s.as_bytes());
    }
    fn string(&mut self, s: &str, flexible: bool) {
        if flexible {
            self.uvarint(u32::try_from(s.len() + 1).expect("string length fits u32"));
            self.bytes.extend_from_slice(s.as_bytes());
        } else {
            self.classic_string(s);
        }
    }
    fn array_len(&mut self, len: usize, flexible: bool) {
        if flexible {
            self.uvarint(u32::try_from(len + 1).expect("array length fits u32"));
        } else {
            self.i32(i32::try_from(len).expect("array length fits i32"));
        }
    }
    fn null_array(&mut self, flexible: bool) {
        if flexible {
            self.uvarint(0);
        } else {
            self.i32(-1);
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8], RecordError> {
        if self.bytes.len() < n {
            return Err(error(format!(
                "{field}: needs {n} bytes, {} left",
                self.bytes.len()
            )));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N], RecordError> {
        Ok(self.take(N, field)?.try_into().expect("took N bytes"))
    }
    fn i8(&mut self, field: &str) -> Result<i8, RecordError> {
        Ok(i8::from_be_bytes(self.array(field)?))
    }
    fn i16(&mut self, field: &str) -> Result<i16, RecordError> {
        Ok(i16::from_be_bytes(self.array(field)?))
    }
    fn i32(&mut self, field: &str) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }
    fn i64(&mut self, field: &str) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    /// Kafka's `readUnsignedVarint`: at most five bytes.
    fn uvarint(&mut self, field: &str) -> Result<u32, RecordError> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let byte = self.array::<1>(field)?[0];
            value |= u32::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(error(format!("{field}: varint longer than 5 bytes")))
    }

    fn utf8(&mut self, len: usize, field: &str) -> Result<String, RecordError> {
        let raw = self.take(len, field)?;
        String::from_utf8(raw.to_vec()).map_err(|_| error(format!("{field}: invalid UTF-8")))
    }

    fn classic_string(&mut self, field: &str) -> Result<String, RecordError> {
        let len = self.i16(field)?;
        let len = usize::try_from(len)
            .map_err(|_| error(format!("{field}: null or negative length {len}")))?;
        self.utf8(len, field)
    }

    fn string(&mut self, field: &str, flexible: bool) -> Result<String, RecordError> {
        if !flexible {
            return self.classic_string(field);
        }
        let len = self.uvarint(field)?;
        if len == 0 {
            return Err(error(format!("{field}: null")));
        }
        self.utf8((len - 1) as usize, field)
    }

    /// An array's element count, `None` when null; refuses counts the remaining bytes
    /// cannot hold at `min_element_len` bytes each.
    fn array_len(
        &mut self,
        field: &str,
        flexible: bool,
        min_element_len: usize,
    ) -> Result<Option<usize>, RecordError> {
        let len = if flexible {
            match self.uvarint(field)? {
                0 => return Ok(None),
                n => (n - 1) as usize,
            }
        } else {
            match self.i32(field)? {
                -1 => return Ok(None),
                n if n < 0 => return Err(error(format!("{field}: negative length {n}"))),
                n => n as usize,
            }
        };
        if len.saturating_mul(min_element_len) > self.bytes.len() {
            return Err(error(format!(
                "{field}: {len} elements but {} bytes left",
                self.bytes.len()
            )));
        }
        Ok(Some(len))
    }

    fn skip_tagged_fields(&mut self) -> Result<(), RecordError> {
        let count = self.uvarint("tagged field count")?;
        for _ in 0..count {
            self.uvarint("tag")?;
            let size = self.uvarint("tagged field size")? as usize;
            self.take(size, "tagged field")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn meta(state: TxnState, partitions: &[(&str, i32)]) -> TxnMetadata {
        TxnMetadata {
            transactional_id: "tx".to_string(),
            producer_id: 1000,
            previous_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: 5,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms: 60_000,
            state,
            partitions: partitions
                .iter()
                .map(|(t, p)| (t.to_string(), *p))
                .collect(),
            txn_start_ms: 1_700_000_000_000,
            last_update_ms: 1_700_000_000_500,
            client_transaction_version: 0,
        }
    }

    #[test]
    fn partition_for_matches_java_hash_code() {
        // Java: "hello".hashCode() == 99162322; "Aa" and "BB" both hash to 2112.
        assert_eq!(partition_for("hello", 50), 99_162_322 % 50);
        assert_eq!(partition_for("Aa", 50), 2112 % 50);
        assert_eq!(partition_for("BB", 50), 2112 % 50);
        assert_eq!(partition_for("", 50), 0);
        // "grüppe-😀".hashCode() == -1039948164: Utils.abs masks the sign bit.
        assert_eq!(partition_for("grüppe-\u{1F600}", 50), 34);
        assert_eq!(partition_for("x", 0), 0);
    }

    #[test]
    fn key_layout_is_version_then_classic_string() {
        assert_eq!(encode_key("tx-1"), vec![0, 0, 0, 4, b't', b'x', b'-', b'1']);
        assert_eq!(
            decode_key(&encode_key("tx-1")).unwrap(),
            Some("tx-1".to_string())
        );
        assert_eq!(decode_key(&encode_key("")).unwrap(), Some(String::new()));
        // Other key versions are not transaction records.
        assert_eq!(decode_key(&[0, 1, 0, 0]).unwrap(), None);
        assert!(decode_key(&[0]).is_err());
        assert!(decode_key(&[0, 0, 0xff, 0xff]).is_err());
        assert!(decode_key(&[0, 0, 0, 2, 0xc3]).is_err());
    }

    fn v0_bytes() -> Vec<u8> {
        let mut b = vec![0, 0]; // version 0
        b.extend_from_slice(&1000i64.to_be_bytes()); // ProducerId
        b.extend_from_slice(&5i16.to_be_bytes()); // ProducerEpoch
        b.extend_from_slice(&60_000i32.to_be_bytes()); // TransactionTimeoutMs
        b.push(1); // TransactionStatus: Ongoing
        b.extend_from_slice(&2i32.to_be_bytes()); // two topics
        b.extend_from_slice(&[0, 1, b'a']); // Topic "a"
        b.extend_from_slice(&2i32.to_be_bytes()); // two partitions
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&3i32.to_be_bytes());
        b.extend_from_slice(&[0, 2, b'b', b'c']); // Topic "bc"
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&7i32.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_500i64.to_be_bytes()); // LastUpdate
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes()); // Start
        b
    }

    #[test]
    fn value_v0_layout() {
        let m = meta(TxnState::Ongoing, &[("a", 0), ("a", 3), ("bc", 7)]);
        assert_eq!(encode_value_version(&m, 0), v0_bytes());
        assert_eq!(decode_value("tx", &v0_bytes()).unwrap(), m);
    }

    #[test]
    fn value_v1_layout_with_tagged_fields() {
        let mut m = meta(TxnState::PrepareCommit, &[("a", 0), ("a", 3), ("bc", 7)]);
        m.previous_producer_id = 999;
        m.next_producer_id = 1001;
        m.client_transaction_version = 2;
        let mut b = vec![0, 1]; // version 1
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&5i16.to_be_bytes());
        b.extend_from_slice(&60_000i32.to_be_bytes());
        b.push(2); // PrepareCommit
        b.push(3); // compact array: 2 topics
        b.extend_from_slice(&[2, b'a']); // compact string "a"
        b.push(3); // 2 partitions
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&3i32.to_be_bytes());
        b.push(0); // no tagged fields in the entry
        b.extend_from_slice(&[3, b'b', b'c']);
        b.push(2);
        b.extend_from_slice(&7i32.to_be_bytes());
        b.push(0);
        b.extend_from_slice(&1_700_000_000_500i64.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.push(3); // three tagged fields
        b.extend_from_slice(&[0, 8]);
        b.extend_from_slice(&999i64.to_be_bytes());
        b.extend_from_slice(&[1, 8]);
        b.extend_from_slice(&1001i64.to_be_bytes());
        b.extend_from_slice(&[2, 2, 0, 2]);
        assert_eq!(encode_value_version(&m, 1), b);
        assert_eq!(decode_value("tx", &b).unwrap(), m);
        // What the coordinator writes: Kafka 4.1.1 leaves tags 0 and 1 out.
        let mut stored = b[..b.len() - 25].to_vec();
        stored.push(1); // one tagged field
        stored.extend_from_slice(&[2, 2, 0, 2]);
        assert_eq!(encode_value(&m), stored);
    }

    #[test]
    fn value_v1_defaults_are_not_written_and_empty_has_null_partitions() {
        let m = meta(TxnState::Empty, &[]);
        let mut b = vec![0, 1];
        b.extend_from_slice(&1000i64.to_be_bytes());
        b.extend_from_slice(&5i16.to_be_bytes());
        b.extend_from_slice(&60_000i32.to_be_bytes());
        b.push(0); // Empty
        b.push(0); // null partitions
        b.extend_from_slice(&1_700_000_000_500i64.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.push(0); // no tagged fields
        assert_eq!(encode_value(&m), b);
        assert_eq!(decode_value("tx", &b).unwrap(), m);
        // Version 0 writes null as -1.
        let v0 = encode_value_version(&m, 0);
        assert_eq!(&v0[17..21], &(-1i32).to_be_bytes());
        assert_eq!(decode_value("tx", &v0).unwrap(), m);
    }

    #[test]
    fn unknown_tags_and_higher_versions_are_read() {
        let mut m = meta(TxnState::CompleteAbort, &[]);
        m.client_transaction_version = 2;
        let mut b = encode_value(&m);
        // Replace the tagged section (1 field: tag 2) by two fields, the first unknown.
        let section = b.len() - 5;
        b.truncate(section);
        b.extend_from_slice(&[2, 9, 3, 0xaa, 0xbb, 0xcc, 2, 2, 0, 2]);
        assert_eq!(decode_value("tx", &b).unwrap(), m);
        b[1] = 7; // a future version is read as version 1
        assert_eq!(decode_value("tx", &b).unwrap(), m);
    }

    #[test]
    fn bad_values_are_errors() {
        let good = v0_bytes();
        for cut in 0..good.len() {
            assert!(decode_value("tx", &good[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad_state = good.clone();
        bad_state[16] = 9;
        assert!(decode_value("tx", &bad_state).is_err());
        let mut huge_count = good.clone();
        huge_count[17..21].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_value("tx", &huge_count).is_err());
        assert!(decode_value("tx", &[0xff, 0xff]).is_err());
        // A known tag with the wrong size.
        let mut m = meta(TxnState::Empty, &[]);
        m.client_transaction_version = 2;
        let mut b = encode_value(&m);
        let n = b.len();
        b[n - 3] = 1; // size 1 instead of 2
        b.truncate(n - 1);
        assert!(decode_value("tx", &b).is_err());
    }

    fn arb_meta() -> impl Strategy<Value = TxnMetadata> {
        (
            any::<i64>(),
            any::<i64>(),
            any::<i64>(),
            any::<i16>(),
            any::<i32>(),
            0i8..8,
            proptest::collection::btree_set(("[a-z]{0,4}", any::<i32>()), 0..6),
            any::<i64>(),
            any::<i64>(),
            any::<i16>(),
        )
            .prop_map(
                |(pid, prev, next, epoch, timeout, state, parts, start, update, tv)| {
                    let state = TxnState::from_id(state).unwrap();
                    TxnMetadata {
                        transactional_id: "p".to_string(),
                        producer_id: pid,
                        previous_producer_id: prev,
                        next_producer_id: next,
                        producer_epoch: epoch,
                        last_producer_epoch: NO_PRODUCER_EPOCH,
                        timeout_ms: timeout,
                        state,
                        partitions: if state == TxnState::Empty {
                            BTreeSet::new()
                        } else {
                            parts
                        },
                        txn_start_ms: start,
                        last_update_ms: update,
                        client_transaction_version: tv,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn v1_round_trips(m in arb_meta()) {
            prop_assert_eq!(decode_value("p", &encode_value_version(&m, 1)).unwrap(), m);
        }

        #[test]
        fn v0_round_trips_without_tagged_fields(m in arb_meta()) {
            let decoded = decode_value("p", &encode_value_version(&m, 0)).unwrap();
            let expected = TxnMetadata {
                previous_producer_id: NO_PRODUCER_ID,
                next_producer_id: NO_PRODUCER_ID,
                client_transaction_version: 0,
                ..m
            };
            prop_assert_eq!(decoded, expected);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_key(&bytes);
            if let Ok(m) = decode_value("g", &bytes) {
                // What decodes re-encodes to something that decodes to the same.
                prop_assert_eq!(decode_value("g", &encode_value(&m)).unwrap(), m);
            }
        }

        #[test]
        fn keys_round_trip(id in "\\PC{0,40}") {
            prop_assert_eq!(decode_key(&encode_key(&id)).unwrap(), Some(id));
        }
    }
}
