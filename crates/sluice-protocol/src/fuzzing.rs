//! The bodies of the fuzz targets on this crate's decoders, one public function per
//! target, so `fuzz/` (cargo-fuzz, libFuzzer) and the replay test
//! `crates/sluice-broker/tests/fuzz_corpus.rs` run the same checks on the same bytes.
//!
//! Not an API: nothing in Sluice calls these. Each takes arbitrary bytes and panics only
//! when a decoder breaks its contract (a panic inside it, an invariant the check states),
//! never because the input is malformed. `docs/fuzzing.md` says what each one checks.

use bytes::Bytes;

use crate::compression::{self, Compression};
use crate::varint::{
    read_varint, read_varlong, varint_size, varlong_size, write_varint, write_varlong,
};
use crate::{Header, NewRecord, RecordBatch, RecordBatchBuilder, TimestampType, batches};

/// Target `varint`: reads a varint and a varlong from arbitrary bytes. Neither may
/// panic; a value read re-encodes (canonically, in at most the bytes it was read from)
/// to bytes that read back to the same value, and `*_size` agrees with the encoding.
pub fn varint(data: &[u8]) {
    if let Ok((value, used)) = read_varint(data) {
        assert!(
            (1..=5).contains(&used) && used <= data.len(),
            "varint used {used}"
        );
        let mut out = Vec::new();
        write_varint(&mut out, value);
        assert_eq!(out.len(), varint_size(value));
        assert!(
            out.len() <= used,
            "canonical varint longer than the input's"
        );
        assert_eq!(read_varint(&out), Ok((value, out.len())));
    }
    if let Ok((value, used)) = read_varlong(data) {
        assert!(
            (1..=10).contains(&used) && used <= data.len(),
            "varlong used {used}"
        );
        let mut out = Vec::new();
        write_varlong(&mut out, value);
        assert_eq!(out.len(), varlong_size(value));
        assert!(
            out.len() <= used,
            "canonical varlong longer than the input's"
        );
        assert_eq!(read_varlong(&out), Ok((value, out.len())));
    }
}

/// The most `decompress` may return in the `decompress` target.
pub const DECOMPRESS_LIMIT_BYTES: usize = 1 << 20;

/// Target `decompress`: decompresses arbitrary bytes with each of Kafka's codecs under a
/// 1 MiB limit: never a panic, never more than the limit. The first byte picks the codec
/// (low 3 bits, modulo the five codecs); when its top bit is set the rest is instead
/// compressed and must decompress back to itself.
pub fn decompress(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let codec = Compression::ALL[usize::from(selector & 0x07) % Compression::ALL.len()];
    if selector & 0x80 != 0 {
        let compressed = compression::compress(codec, input);
        let output =
            compression::decompress(codec, &compressed, DECOMPRESS_LIMIT_BYTES.max(input.len()))
                .unwrap_or_else(|error| panic!("{} round trip failed: {error}", codec.name()));
        assert_eq!(
            output,
            input,
            "{} round trip changed the data",
            codec.name()
        );
        return;
    }
    match compression::decompress(codec, input, DECOMPRESS_LIMIT_BYTES) {
        Ok(output) => assert!(
            output.len() <= DECOMPRESS_LIMIT_BYTES,
            "{} returned {} bytes, over the {DECOMPRESS_LIMIT_BYTES} limit",
            codec.name(),
            output.len()
        ),
        Err(error) => {
            let _ = error.to_string();
        }
    }
}

/// Target `record_batch`: splits arbitrary bytes into v2 record batches (as a fetch
/// response or a segment file is split) and reads every batch that parses: every header
/// getter, `validate`, and the records iterated to the end. Nothing may panic.
///
/// Also checks what `validate` promises: a batch it accepts yields exactly
/// `record_count` records, with offset deltas strictly increasing and at most
/// `last_offset_delta`.
pub fn record_batch(data: &[u8]) {
    for batch in batches(Bytes::copy_from_slice(data)) {
        match batch {
            Ok(batch) => exercise_batch(&batch),
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
}

fn exercise_batch(batch: &RecordBatch) {
    let _ = format!("{batch:?}");
    assert_eq!(batch.bytes().len(), batch.size_bytes());
    assert_eq!(
        i64::from(batch.batch_length()) + 12,
        batch.size_bytes() as i64
    );
    assert_eq!(batch.magic(), 2);
    let _ = batch.base_offset();
    let _ = batch.partition_leader_epoch();
    let _ = batch.crc();
    let _ = batch.attributes();
    let compression = batch.compression();
    let _ = batch.timestamp_type();
    let _ = batch.is_transactional();
    let _ = batch.is_control();
    let _ = batch.has_delete_horizon();
    let _ = batch.last_offset_delta();
    let _ = batch.last_offset();
    let _ = batch.next_offset();
    let _ = batch.base_timestamp();
    let _ = batch.max_timestamp();
    let _ = batch.producer_id();
    let _ = batch.producer_epoch();
    let _ = batch.base_sequence();
    let _ = batch.record_count();
    let _ = batch.compute_crc();
    let crc_ok = batch.verify_crc().is_ok();
    let header_ok = batch.validate_header().is_ok();
    assert!(!header_ok || (crc_ok && compression.is_ok()));

    let valid = batch.validate().is_ok();
    assert!(
        !valid || header_ok,
        "validate passed where validate_header failed"
    );

    let Ok(records) = batch.records() else {
        assert!(!valid, "validate passed but records() failed");
        return;
    };
    let mut count = 0usize;
    let mut previous: Option<i32> = None;
    for record in records {
        match record {
            Ok(record) => {
                let _ = batch.record_timestamp(&record);
                if valid {
                    assert!(record.offset_delta <= batch.last_offset_delta());
                    assert!(previous.is_none_or(|p| p < record.offset_delta));
                    previous = Some(record.offset_delta);
                }
                count += 1;
            }
            Err(error) => {
                assert!(!valid, "validate passed but record {count} failed: {error}");
                let _ = error.to_string();
            }
        }
    }
    if valid {
        assert_eq!(count as i64, i64::from(batch.record_count()));
    }
}

/// What the `builder_roundtrip` target builds a batch from.
///
/// Read from the fuzzer's bytes by [`BuilderInput::parse`], written by
/// [`BuilderInput::to_bytes`]. Layout (integers big-endian; a read past the end gives
/// zeros, a length past the end is cut to what is there, so every input parses):
///
/// - `u8` codec (modulo the five codecs);
/// - `u8` flags: bit 0 LogAppendTime, bit 1 transactional, bit 2 a producer follows;
/// - with bit 2: producer id `i64`, producer epoch `i16`, base sequence `i32`;
/// - base offset `i64`, partition leader epoch `i32`;
/// - then records until the input ends, each: `u8` flags (bit 0 a key follows, bit 1 a
///   value follows, bits 4-7 the header count), timestamp `i64`, key and value as a
///   `u16` length and that many bytes, then each header: `u8` flags (bit 0 a value
///   follows), key as `u16` length + bytes, value likewise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuilderInput {
    pub codec: u8,
    pub log_append_time: bool,
    /// Producer id, epoch and base sequence; none gives -1, -1, -1.
    pub producer: Option<(i64, i16, i32)>,
    pub transactional: bool,
    pub base_offset: i64,
    pub partition_leader_epoch: i32,
    pub records: Vec<BuilderRecord>,
}

/// One record of a [`BuilderInput`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuilderRecord {
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    /// (key, value); at most 15 headers are written by [`BuilderInput::to_bytes`].
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

const FLAG_LOG_APPEND_TIME: u8 = 0x01;
const FLAG_TRANSACTIONAL: u8 = 0x02;
const FLAG_PRODUCER: u8 = 0x04;
const RECORD_KEY: u8 = 0x01;
const RECORD_VALUE: u8 = 0x02;
const HEADER_VALUE: u8 = 0x01;
const HEADERS_PER_RECORD_MAX: usize = 15;

/// Reads fixed-width big-endian fields; past the end it reads zeros and empty slices.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, length: usize) -> &'a [u8] {
        let (taken, rest) = self.data.split_at(length.min(self.data.len()));
        self.data = rest;
        taken
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let taken = self.take(N);
        out[..taken.len()].copy_from_slice(taken);
        out
    }

    fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }

    fn i16(&mut self) -> i16 {
        i16::from_be_bytes(self.array())
    }

    fn i32(&mut self) -> i32 {
        i32::from_be_bytes(self.array())
    }

    fn i64(&mut self) -> i64 {
        i64::from_be_bytes(self.array())
    }

    fn bytes(&mut self) -> Vec<u8> {
        let length = usize::from(self.u16());
        self.take(length).to_vec()
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let length = u16::try_from(bytes.len()).expect("a builder input field of at most 64 KiB");
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(bytes);
}

impl BuilderInput {
    /// Reads an input from the fuzzer's bytes; every byte string is some input.
    pub fn parse(data: &[u8]) -> BuilderInput {
        let mut reader = Reader { data };
        let codec = reader.u8();
        let flags = reader.u8();
        let producer =
            (flags & FLAG_PRODUCER != 0).then(|| (reader.i64(), reader.i16(), reader.i32()));
        let base_offset = reader.i64();
        let partition_leader_epoch = reader.i32();
        let mut records = Vec::new();
        while !reader.data.is_empty() {
            let record_flags = reader.u8();
            let timestamp = reader.i64();
            let key = (record_flags & RECORD_KEY != 0).then(|| reader.bytes());
            let value = (record_flags & RECORD_VALUE != 0).then(|| reader.bytes());
            let headers = (0..record_flags >> 4)
                .map(|_| {
                    let header_flags = reader.u8();
                    let key = reader.bytes();
                    let value = (header_flags & HEADER_VALUE != 0).then(|| reader.bytes());
                    (key, value)
                })
                .collect();
            records.push(BuilderRecord {
                timestamp,
                key,
                value,
                headers,
            });
        }
        BuilderInput {
            codec,
            log_append_time: flags & FLAG_LOG_APPEND_TIME != 0,
            producer,
            transactional: flags & FLAG_TRANSACTIONAL != 0,
            base_offset,
            partition_leader_epoch,
            records,
        }
    }

    /// The bytes [`BuilderInput::parse`] reads back as `self`, for seeds and
    /// regressions. Panics on a field longer than 64 KiB or more than 15 headers.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![self.codec];
        let mut flags = 0;
        if self.log_append_time {
            flags |= FLAG_LOG_APPEND_TIME;
        }
        if self.transactional {
            flags |= FLAG_TRANSACTIONAL;
        }
        if self.producer.is_some() {
            flags |= FLAG_PRODUCER;
        }
        out.push(flags);
        if let Some((id, epoch, sequence)) = self.producer {
            out.extend_from_slice(&id.to_be_bytes());
            out.extend_from_slice(&epoch.to_be_bytes());
            out.extend_from_slice(&sequence.to_be_bytes());
        }
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        for record in &self.records {
            assert!(
                record.headers.len() <= HEADERS_PER_RECORD_MAX,
                "at most {HEADERS_PER_RECORD_MAX} headers per record"
            );
            let mut record_flags = (record.headers.len() as u8) << 4;
            if record.key.is_some() {
                record_flags |= RECORD_KEY;
            }
            if record.value.is_some() {
                record_flags |= RECORD_VALUE;
            }
            out.push(record_flags);
            out.extend_from_slice(&record.timestamp.to_be_bytes());
            for field in [&record.key, &record.value].into_iter().flatten() {
                put_bytes(&mut out, field);
            }
            for (key, value) in &record.headers {
                out.push(if value.is_some() { HEADER_VALUE } else { 0 });
                put_bytes(&mut out, key);
                if let Some(value) = value {
                    put_bytes(&mut out, value);
                }
            }
        }
        out
    }
}

/// Target `builder_roundtrip`: builds a batch from arbitrary records (timestamps,
/// nullable keys and values, headers) with an arbitrary codec and producer fields (the
/// bytes read by [`BuilderInput::parse`]), then reads it back: `RecordBatch::new` and
/// `validate` must accept it, and the header and every record must equal the input.
///
/// The inputs the builder refuses by contract are a header key that is not UTF-8
/// (Kafka's header keys are strings) and a timestamp more than `i64::MAX` from the
/// first record's; it must refuse nothing else.
pub fn builder_roundtrip(data: &[u8]) {
    builder_roundtrip_input(&BuilderInput::parse(data));
}

/// [`builder_roundtrip`] on an input already parsed.
pub fn builder_roundtrip_input(input: &BuilderInput) {
    let codec = Compression::ALL[usize::from(input.codec) % Compression::ALL.len()];
    let timestamp_type = if input.log_append_time {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    // Offsets a log can hold: a batch at a negative base offset, or one whose offsets
    // run past i64::MAX, is refused by `validate` (BatchError::OffsetOverflow).
    let base_offset = input.base_offset.rem_euclid(1 << 62);
    let mut builder = RecordBatchBuilder::new(codec)
        .base_offset(base_offset)
        .partition_leader_epoch(input.partition_leader_epoch)
        .timestamp_type(timestamp_type)
        .transactional(input.transactional);
    if let Some((id, epoch, sequence)) = input.producer {
        builder = builder.producer(id, epoch, sequence);
    }
    let records: Vec<NewRecord> = input
        .records
        .iter()
        .map(|r| NewRecord {
            timestamp: r.timestamp,
            key: r.key.clone().map(Bytes::from),
            value: r.value.clone().map(Bytes::from),
            headers: r
                .headers
                .iter()
                .map(|(key, value)| Header {
                    key: Bytes::from(key.clone()),
                    value: value.clone().map(Bytes::from),
                })
                .collect(),
        })
        .collect();
    // The builder refuses what its reader would reject (timestamps more than i64::MAX
    // apart, non-UTF-8 header keys); the batch holds exactly the records it accepted.
    let mut accepted = Vec::new();
    for record in &records {
        let utf8_keys = record
            .headers
            .iter()
            .all(|h| std::str::from_utf8(&h.key).is_ok());
        match builder.append(record) {
            Ok(()) => accepted.push(record.clone()),
            Err(_) => assert!(
                !utf8_keys
                    || accepted.first().is_some_and(|first: &NewRecord| {
                        record.timestamp.checked_sub(first.timestamp).is_none()
                    }),
                "the builder refused a record it can write"
            ),
        }
    }
    let records = accepted;
    assert_eq!(builder.record_count() as usize, records.len());
    let bytes = builder.build();

    let batch = RecordBatch::new(bytes).expect("RecordBatch::new rejected a built batch");
    if let Err(error) = batch.validate() {
        panic!("validate rejected a built batch: {error}");
    }

    // Header.
    assert_eq!(batch.compression().unwrap(), codec);
    assert_eq!(batch.timestamp_type(), timestamp_type);
    assert_eq!(batch.base_offset(), base_offset);
    assert_eq!(batch.partition_leader_epoch(), input.partition_leader_epoch);
    assert_eq!(batch.is_transactional(), input.transactional);
    assert!(!batch.is_control());
    assert_eq!(batch.record_count() as usize, records.len());
    assert_eq!(batch.last_offset_delta(), (records.len() as i32 - 1).max(0));
    let (producer_id, producer_epoch, base_sequence) = input.producer.unwrap_or((-1, -1, -1));
    assert_eq!(batch.producer_id(), producer_id);
    assert_eq!(batch.producer_epoch(), producer_epoch);
    assert_eq!(batch.base_sequence(), base_sequence);
    assert_eq!(
        batch.base_timestamp(),
        records.first().map_or(-1, |r| r.timestamp)
    );
    assert_eq!(
        batch.max_timestamp(),
        records.iter().map(|r| r.timestamp).fold(-1, i64::max)
    );

    // Records.
    let read: Vec<_> = batch
        .records()
        .expect("records() of a validated batch")
        .map(|r| r.expect("record of a validated batch"))
        .collect();
    assert_eq!(read.len(), records.len());
    for (index, (got, want)) in read.iter().zip(&records).enumerate() {
        assert_eq!(got.offset_delta, index as i32);
        assert_eq!(got.timestamp, want.timestamp, "record {index} timestamp");
        assert_eq!(got.key, want.key, "record {index} key");
        assert_eq!(got.value, want.value, "record {index} value");
        assert_eq!(got.headers, want.headers, "record {index} headers");
        let expected_timestamp = match timestamp_type {
            TimestampType::CreateTime => want.timestamp,
            TimestampType::LogAppendTime => batch.max_timestamp(),
        };
        assert_eq!(batch.record_timestamp(got), expected_timestamp);
    }
}

/// Target `consumer_protocol`: byte 0 picks the format (even: a subscription, odd: an
/// assignment), the rest is decoded. Decoding never panics; what decodes re-encodes to
/// bytes that decode and re-encode to the same bytes (the encoding is a fixed point).
pub fn consumer_protocol(data: &[u8]) {
    use crate::consumer_protocol::{
        decode_assignment, decode_subscription, encode_assignment, encode_subscription,
    };
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    if selector % 2 == 0 {
        if let Ok(subscription) = decode_subscription(input) {
            let encoded = encode_subscription(&subscription);
            let again = decode_subscription(&encoded).expect("an encoded subscription decodes");
            assert_eq!(encode_subscription(&again), encoded);
        }
    } else if let Ok(assignment) = decode_assignment(input) {
        let encoded = encode_assignment(&assignment);
        let again = decode_assignment(&encoded).expect("an encoded assignment decodes");
        assert_eq!(encode_assignment(&again), encoded);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed `consumer_protocol` seeds are inputs the decoders accept.
    #[test]
    fn consumer_protocol_seeds_decode() {
        use crate::consumer_protocol::{decode_assignment, decode_subscription};
        let seed = |name: &str| {
            let path = format!(
                "{}/../../fuzz/seeds/consumer_protocol/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
        };
        let v1 = decode_subscription(&seed("subscription-v1")[1..]).unwrap();
        assert_eq!(
            v1.owned_partitions,
            vec![("orders".to_string(), vec![0, 1])]
        );
        let v3 = decode_subscription(&seed("subscription-v3")[1..]).unwrap();
        assert_eq!(v3.rack_id.as_deref(), Some("rack-a"));
        let assignment = decode_assignment(&seed("assignment-v0")[1..]).unwrap();
        assert_eq!(
            assignment.partitions,
            vec![("orders".to_string(), vec![0, 2, 4])]
        );
        for name in ["subscription-v1", "subscription-v3", "assignment-v0"] {
            consumer_protocol(&seed(name));
        }
    }

    #[test]
    fn builder_input_bytes_read_back_as_written() {
        let inputs = [
            BuilderInput::default(),
            BuilderInput {
                codec: 3,
                log_append_time: true,
                producer: Some((7, 2, 40)),
                transactional: true,
                base_offset: -5,
                partition_leader_epoch: 9,
                records: vec![
                    BuilderRecord {
                        timestamp: i64::MIN,
                        key: Some(b"k".to_vec()),
                        value: None,
                        headers: vec![(b"h".to_vec(), None), (vec![0xff], Some(vec![]))],
                    },
                    BuilderRecord {
                        timestamp: 1,
                        key: None,
                        value: Some(vec![1; 300]),
                        headers: vec![],
                    },
                ],
            },
        ];
        for input in inputs {
            assert_eq!(BuilderInput::parse(&input.to_bytes()), input);
        }
    }

    #[test]
    fn every_byte_string_is_a_builder_input() {
        // Cut short anywhere, the header reads zeros and the last record keeps what is
        // there.
        let input = BuilderInput::parse(&[1, 0x04, 0xff]);
        assert_eq!(input.codec, 1);
        assert_eq!(
            input.producer,
            Some((i64::from_be_bytes([0xff, 0, 0, 0, 0, 0, 0, 0]), 0, 0))
        );
        assert!(input.records.is_empty());
        let input = BuilderInput::parse(&[0; 15]);
        assert_eq!(input.records.len(), 1);
        assert_eq!(input.records[0], BuilderRecord::default());
    }
}
