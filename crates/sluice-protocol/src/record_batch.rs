//! Kafka's v2 record batch (magic 2): a zero-copy view, its records, validation and a
//! builder.
//!
//! Layout (big-endian), as in Kafka's `DefaultRecordBatch`:
//!
//! ```text
//! offset  field
//!      0  baseOffset            int64
//!      8  batchLength           int32   bytes after this field
//!     12  partitionLeaderEpoch  int32
//!     16  magic                 int8    = 2
//!     17  crc                   uint32  CRC32C of bytes 21..end
//!     21  attributes            int16   codec (bits 0-2), timestamp type (3),
//!                                       transactional (4), control (5), delete horizon (6)
//!     23  lastOffsetDelta       int32
//!     27  baseTimestamp         int64
//!     35  maxTimestamp          int64
//!     43  producerId            int64
//!     51  producerEpoch         int16
//!     53  baseSequence          int32
//!     57  recordCount           int32
//!     61  records               (compressed as a whole when the codec is not none)
//! ```
//!
//! The CRC does not cover base offset, length, leader epoch or magic, so a broker assigns
//! base offset and leader epoch in place without touching the CRC ([`set_base_offset`],
//! [`set_partition_leader_epoch`]).
//!
//! [`BatchHeader`] is the one place that reads the header's fields; [`RecordBatch`] and
//! the storage and broker crates read them through it.
//!
//! What this costs: [`RecordBatch::new`] reads 61 bytes and copies nothing; header getters
//! read fixed offsets; [`RecordBatch::verify_crc`] is one CRC32C pass; only
//! [`RecordBatch::records`] and [`RecordBatch::validate`] look at records, and they
//! decompress once into one buffer that the records then share.

use bytes::Bytes;

use crate::compression::{self, Compression, CompressionError};
use crate::varint::{self, VarintError};

/// Bytes before the `batchLength` field ends: base offset and length (Kafka's LOG_OVERHEAD).
pub const LOG_OVERHEAD: usize = 12;
/// The fixed header of a v2 batch, up to and including the record count.
pub const RECORD_BATCH_OVERHEAD: usize = 61;
/// The only batch format Sluice reads and writes.
pub const MAGIC_V2: i8 = 2;
/// `producerId` of a batch from a producer without idempotence.
pub const NO_PRODUCER_ID: i64 = -1;
/// `producerEpoch` of a batch from a producer without idempotence.
pub const NO_PRODUCER_EPOCH: i16 = -1;
/// `baseSequence` of a batch from a producer without idempotence.
pub const NO_SEQUENCE: i32 = -1;
/// `partitionLeaderEpoch` as a producer writes it, before a leader assigns one.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Default bound on a batch's decompressed records section. Kafka has none; Sluice refuses
/// to inflate a batch past this unless the caller asks for more.
pub const DEFAULT_MAX_DECOMPRESSED_BYTES: usize = 256 * 1024 * 1024;

const BASE_OFFSET_AT: usize = 0;
const LENGTH_AT: usize = 8;
const PARTITION_LEADER_EPOCH_AT: usize = 12;
const MAGIC_AT: usize = 16;
const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
const LAST_OFFSET_DELTA_AT: usize = 23;
const BASE_TIMESTAMP_AT: usize = 27;
const MAX_TIMESTAMP_AT: usize = 35;
const PRODUCER_ID_AT: usize = 43;
const PRODUCER_EPOCH_AT: usize = 51;
const BASE_SEQUENCE_AT: usize = 53;
const RECORD_COUNT_AT: usize = 57;

const COMPRESSION_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_MASK: i16 = 0x08;
const TRANSACTIONAL_MASK: i16 = 0x10;
const CONTROL_MASK: i16 = 0x20;
const DELETE_HORIZON_MASK: i16 = 0x40;

/// The smallest possible record: length, attributes, timestamp delta, offset delta, key
/// length, value length and header count, one byte each.
const MIN_RECORD_BYTES: usize = 7;
/// The smallest possible header: key length and value length, one byte each.
const MIN_HEADER_BYTES: usize = 2;

/// Which clock the timestamps of a batch come from (attribute bit 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// Why bytes are not a valid v2 batch. Every malformed input maps to one of these; none
/// of the code in this module panics on input.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("batch has {available} bytes, fewer than the {needed} its header needs")]
    Truncated { needed: usize, available: usize },
    #[error("batch length field {length} disagrees with the {available} bytes present")]
    LengthMismatch { length: i64, available: usize },
    #[error("unsupported magic {0}: Sluice stores only v2 record batches (magic 2)")]
    WrongMagic(i8),
    #[error("CRC mismatch: batch says {stored:#010x}, bytes give {computed:#010x}")]
    CrcMismatch { stored: u32, computed: u32 },
    #[error("reserved compression codec id {0}")]
    UnknownCompression(u8),
    #[error(
        "record count {count} is invalid for a batch whose last offset delta is {last_offset_delta}"
    )]
    InvalidRecordCount { count: i32, last_offset_delta: i32 },
    #[error(
        "batch offsets {base_offset} + {last_offset_delta} leave the range of offsets (0..i64::MAX)"
    )]
    OffsetOverflow {
        base_offset: i64,
        last_offset_delta: i32,
    },
    #[error("batch claims {claimed} records but holds {found}")]
    RecordCountMismatch { claimed: i32, found: usize },
    #[error("record {index}: {reason}")]
    InvalidRecord { index: usize, reason: String },
    #[error("record {index}: truncated varint in {field}")]
    TruncatedVarint { index: usize, field: &'static str },
    #[error("{0}")]
    Compression(#[from] CompressionError),
}

/// A read-only view over exactly one v2 record batch, sharing the bytes it was made from.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordBatch {
    bytes: Bytes,
}

impl std::fmt::Debug for RecordBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBatch")
            .field("base_offset", &self.base_offset())
            .field("last_offset_delta", &self.last_offset_delta())
            .field("size_bytes", &self.bytes.len())
            .field("compression", &self.compression())
            .finish()
    }
}

fn read_i16(bytes: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([bytes[at], bytes[at + 1]])
}
fn read_i32(bytes: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}
fn read_i64(bytes: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

/// A read-only view over the 61-byte header at the front of a v2 batch: the one place that
/// knows the header's field offsets. It reads no more than the header, except
/// [`BatchHeader::compute_crc`], which covers everything from the attributes to the end of
/// the slice it was made from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader<'a>(&'a [u8]);

impl std::fmt::Debug for BatchHeader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchHeader")
            .field("base_offset", &self.base_offset())
            .field("batch_length", &self.batch_length())
            .field("magic", &self.magic())
            .field("attributes", &self.attributes())
            .field("last_offset_delta", &self.last_offset_delta())
            .field("record_count", &self.record_count())
            .finish()
    }
}

impl<'a> BatchHeader<'a> {
    /// Views the header at the front of `bytes`; `None` when fewer than 61 bytes are
    /// present. Checks nothing else (not the length field, magic or CRC).
    pub fn new(bytes: &'a [u8]) -> Option<BatchHeader<'a>> {
        (bytes.len() >= RECORD_BATCH_OVERHEAD).then_some(BatchHeader(bytes))
    }

    /// The slice the view was made from (the header, and whatever follows it).
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }

    pub fn base_offset(&self) -> i64 {
        read_i64(self.0, BASE_OFFSET_AT)
    }
    /// `batchLength`: the bytes after the length field, as the header claims.
    pub fn batch_length(&self) -> i32 {
        read_i32(self.0, LENGTH_AT)
    }
    pub fn partition_leader_epoch(&self) -> i32 {
        read_i32(self.0, PARTITION_LEADER_EPOCH_AT)
    }
    pub fn magic(&self) -> i8 {
        self.0[MAGIC_AT] as i8
    }
    /// The CRC stored in the header.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(self.0[CRC_AT..CRC_AT + 4].try_into().expect("4 bytes"))
    }
    pub fn attributes(&self) -> i16 {
        read_i16(self.0, ATTRIBUTES_AT)
    }
    /// The codec, or an error for the reserved ids 5-7.
    pub fn compression(&self) -> Result<Compression, BatchError> {
        let id = (self.attributes() & COMPRESSION_MASK) as u8;
        Compression::from_id(id).ok_or(BatchError::UnknownCompression(id))
    }
    /// Attribute bit 3.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_MASK != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }
    /// Attribute bit 4: part of a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_MASK != 0
    }
    /// Attribute bit 5: a control batch (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_MASK != 0
    }
    /// Attribute bit 6: `baseTimestamp` holds the compaction delete horizon (KIP-534).
    pub fn has_delete_horizon(&self) -> bool {
        self.attributes() & DELETE_HORIZON_MASK != 0
    }
    pub fn last_offset_delta(&self) -> i32 {
        read_i32(self.0, LAST_OFFSET_DELTA_AT)
    }
    /// `baseOffset + lastOffsetDelta`, saturating.
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .saturating_add(i64::from(self.last_offset_delta()))
    }
    /// The offset after the batch (`last_offset + 1`, saturating).
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
    pub fn base_timestamp(&self) -> i64 {
        read_i64(self.0, BASE_TIMESTAMP_AT)
    }
    pub fn max_timestamp(&self) -> i64 {
        read_i64(self.0, MAX_TIMESTAMP_AT)
    }
    pub fn producer_id(&self) -> i64 {
        read_i64(self.0, PRODUCER_ID_AT)
    }
    pub fn producer_epoch(&self) -> i16 {
        read_i16(self.0, PRODUCER_EPOCH_AT)
    }
    pub fn base_sequence(&self) -> i32 {
        read_i32(self.0, BASE_SEQUENCE_AT)
    }
    /// The record count the header claims.
    pub fn record_count(&self) -> i32 {
        read_i32(self.0, RECORD_COUNT_AT)
    }

    /// The CRC32C of the slice from the attributes to its end: the batch's CRC when the
    /// view was made from exactly one batch.
    pub fn compute_crc(&self) -> u32 {
        crc32c::crc32c(&self.0[ATTRIBUTES_AT..])
    }
}

/// The size of the batch at the front of `bytes` (`batchLength` + 12), read from its
/// length field alone; `None` when fewer than 12 bytes are present or the length is
/// negative. Used to split a byte stream into batches without reading them.
pub fn batch_size_at(bytes: &[u8]) -> Option<usize> {
    if bytes.len() < LOG_OVERHEAD {
        return None;
    }
    let length = read_i32(bytes, LENGTH_AT);
    usize::try_from(length)
        .ok()
        .map(|length| length + LOG_OVERHEAD)
}

/// Whether a batch at `base_offset` with `last_offset_delta` has offsets a log can hold:
/// non-negative, and its next offset (`last + 1`) still an `i64`.
pub fn offsets_fit(base_offset: i64, last_offset_delta: i32) -> bool {
    base_offset >= 0
        && last_offset_delta >= 0
        && base_offset
            .checked_add(i64::from(last_offset_delta) + 1)
            .is_some()
}

/// Writes the base offset of the batch at the front of `bytes` (not covered by the CRC).
pub fn set_base_offset(bytes: &mut [u8], base_offset: i64) {
    bytes[BASE_OFFSET_AT..BASE_OFFSET_AT + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Writes the partition leader epoch of the batch at the front of `bytes` (not covered by
/// the CRC).
pub fn set_partition_leader_epoch(bytes: &mut [u8], epoch: i32) {
    bytes[PARTITION_LEADER_EPOCH_AT..PARTITION_LEADER_EPOCH_AT + 4]
        .copy_from_slice(&epoch.to_be_bytes());
}

/// Marks the batch at the front of `bytes` as LogAppendTime with `timestamp_ms` as its max
/// timestamp, and recomputes its CRC, as a broker does for a topic with
/// `message.timestamp.type=LogAppendTime`.
pub fn set_log_append_time(bytes: &mut [u8], timestamp_ms: i64) {
    let attributes = read_i16(bytes, ATTRIBUTES_AT) | TIMESTAMP_TYPE_MASK;
    bytes[ATTRIBUTES_AT..ATTRIBUTES_AT + 2].copy_from_slice(&attributes.to_be_bytes());
    bytes[MAX_TIMESTAMP_AT..MAX_TIMESTAMP_AT + 8].copy_from_slice(&timestamp_ms.to_be_bytes());
    let crc = crc32c::crc32c(&bytes[ATTRIBUTES_AT..]);
    bytes[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

impl RecordBatch {
    /// Wraps `bytes`, which must hold exactly one batch: checks the header is present, the
    /// length field agrees with the bytes and the magic is 2. Reads nothing else.
    pub fn new(bytes: Bytes) -> Result<RecordBatch, BatchError> {
        let Some(header) = BatchHeader::new(&bytes) else {
            return Err(BatchError::Truncated {
                needed: RECORD_BATCH_OVERHEAD,
                available: bytes.len(),
            });
        };
        let length = i64::from(header.batch_length());
        if length + LOG_OVERHEAD as i64 != bytes.len() as i64 {
            return Err(BatchError::LengthMismatch {
                length,
                available: bytes.len(),
            });
        }
        let magic = header.magic();
        if magic != MAGIC_V2 {
            return Err(BatchError::WrongMagic(magic));
        }
        Ok(RecordBatch { bytes })
    }

    /// The batch's bytes, exactly as stored.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Total size in bytes (`batchLength` + 12).
    pub fn size_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The header view over this batch's first 61 bytes.
    pub fn header(&self) -> BatchHeader<'_> {
        BatchHeader(&self.bytes)
    }

    pub fn base_offset(&self) -> i64 {
        self.header().base_offset()
    }
    /// `batchLength`: the bytes after the length field.
    pub fn batch_length(&self) -> i32 {
        self.header().batch_length()
    }
    pub fn partition_leader_epoch(&self) -> i32 {
        self.header().partition_leader_epoch()
    }
    pub fn magic(&self) -> i8 {
        self.header().magic()
    }
    /// The CRC stored in the batch.
    pub fn crc(&self) -> u32 {
        self.header().crc()
    }
    pub fn attributes(&self) -> i16 {
        self.header().attributes()
    }
    /// The codec, or an error for the reserved ids 5-7.
    pub fn compression(&self) -> Result<Compression, BatchError> {
        self.header().compression()
    }
    pub fn timestamp_type(&self) -> TimestampType {
        self.header().timestamp_type()
    }
    pub fn is_transactional(&self) -> bool {
        self.header().is_transactional()
    }
    pub fn is_control(&self) -> bool {
        self.header().is_control()
    }
    /// Whether `baseTimestamp` holds the compaction delete horizon (KIP-534).
    pub fn has_delete_horizon(&self) -> bool {
        self.header().has_delete_horizon()
    }
    pub fn last_offset_delta(&self) -> i32 {
        self.header().last_offset_delta()
    }
    /// `baseOffset + lastOffsetDelta`.
    pub fn last_offset(&self) -> i64 {
        self.header().last_offset()
    }
    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.header().next_offset()
    }
    pub fn base_timestamp(&self) -> i64 {
        self.header().base_timestamp()
    }
    pub fn max_timestamp(&self) -> i64 {
        self.header().max_timestamp()
    }
    pub fn producer_id(&self) -> i64 {
        self.header().producer_id()
    }
    pub fn producer_epoch(&self) -> i16 {
        self.header().producer_epoch()
    }
    pub fn base_sequence(&self) -> i32 {
        self.header().base_sequence()
    }
    /// The record count the header claims (checked against the records by `validate`).
    pub fn record_count(&self) -> i32 {
        self.header().record_count()
    }

    /// The CRC32C of the bytes the CRC covers.
    pub fn compute_crc(&self) -> u32 {
        self.header().compute_crc()
    }

    /// Checks the stored CRC against the bytes.
    pub fn verify_crc(&self) -> Result<(), BatchError> {
        let stored = self.crc();
        let computed = self.compute_crc();
        if stored == computed {
            Ok(())
        } else {
            Err(BatchError::CrcMismatch { stored, computed })
        }
    }

    /// Checks the header-level invariants that need no record access: CRC, codec id and a
    /// record count that fits the last offset delta. This is what recovery checks for
    /// every batch after the recovery point, as Kafka's `ensureValid`.
    pub fn validate_header(&self) -> Result<(), BatchError> {
        self.verify_crc()?;
        self.compression()?;
        let count = self.record_count();
        let last_offset_delta = self.last_offset_delta();
        if count < 0 || last_offset_delta < 0 || i64::from(count) > i64::from(last_offset_delta) + 1
        {
            return Err(BatchError::InvalidRecordCount {
                count,
                last_offset_delta,
            });
        }
        if !offsets_fit(self.base_offset(), last_offset_delta) {
            return Err(BatchError::OffsetOverflow {
                base_offset: self.base_offset(),
                last_offset_delta,
            });
        }
        Ok(())
    }

    /// Full validation, as a broker does before it appends a producer's batch: the header
    /// checks, then every record parsed (decompressing with the default bound) and checked
    /// for truncation, negative or out-of-range offset deltas, overflowing timestamps, and a
    /// count that matches the header.
    pub fn validate(&self) -> Result<(), BatchError> {
        self.validate_with_limit(DEFAULT_MAX_DECOMPRESSED_BYTES)
    }

    /// [`RecordBatch::validate`] with an explicit bound on the decompressed size.
    pub fn validate_with_limit(&self, max_decompressed_bytes: usize) -> Result<(), BatchError> {
        self.validate_header()?;
        let mut found = 0usize;
        let mut previous_offset_delta: Option<i32> = None;
        for record in self.records_with_limit(max_decompressed_bytes)? {
            let record = record?;
            if let Some(previous) = previous_offset_delta
                && record.offset_delta <= previous
            {
                return Err(BatchError::InvalidRecord {
                    index: found,
                    reason: format!(
                        "offset delta {} does not follow {previous}",
                        record.offset_delta
                    ),
                });
            }
            if record.offset_delta > self.last_offset_delta() {
                return Err(BatchError::InvalidRecord {
                    index: found,
                    reason: format!(
                        "offset delta {} exceeds the batch's last offset delta {}",
                        record.offset_delta,
                        self.last_offset_delta()
                    ),
                });
            }
            previous_offset_delta = Some(record.offset_delta);
            found += 1;
        }
        if found as i64 != i64::from(self.record_count()) {
            return Err(BatchError::RecordCountMismatch {
                claimed: self.record_count(),
                found,
            });
        }
        Ok(())
    }

    /// The records, decompressed once with the default bound.
    pub fn records(&self) -> Result<Records, BatchError> {
        self.records_with_limit(DEFAULT_MAX_DECOMPRESSED_BYTES)
    }

    /// The records, refusing to decompress past `max_decompressed_bytes`.
    pub fn records_with_limit(&self, max_decompressed_bytes: usize) -> Result<Records, BatchError> {
        let section = self.bytes.slice(RECORD_BATCH_OVERHEAD..);
        let data = match self.compression()? {
            Compression::None => section,
            codec => Bytes::from(compression::decompress(
                codec,
                &section,
                max_decompressed_bytes,
            )?),
        };
        let claimed = self.record_count().max(0) as usize;
        Ok(Records {
            data,
            position: 0,
            index: 0,
            claimed,
            base_timestamp: self.base_timestamp(),
            failed: false,
        })
    }

    /// The timestamp a consumer sees for `record`: the batch's max timestamp under
    /// LogAppendTime, else base timestamp plus the record's delta.
    pub fn record_timestamp(&self, record: &Record) -> i64 {
        match self.timestamp_type() {
            TimestampType::LogAppendTime => self.max_timestamp(),
            TimestampType::CreateTime => record.timestamp,
        }
    }
}

/// One record of a batch. Key, value and header values share the batch's (decompressed)
/// bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub attributes: i8,
    pub timestamp_delta: i64,
    /// `baseTimestamp + timestamp_delta` (the CreateTime; see
    /// [`RecordBatch::record_timestamp`] for LogAppendTime batches).
    pub timestamp: i64,
    pub offset_delta: i32,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
}

/// A record header: a UTF-8 key (kept as bytes) and a nullable value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub key: Bytes,
    pub value: Option<Bytes>,
}

/// Iterator over the records of one batch. After the first error it yields nothing more.
pub struct Records {
    data: Bytes,
    position: usize,
    index: usize,
    claimed: usize,
    base_timestamp: i64,
    failed: bool,
}

impl Iterator for Records {
    type Item = Result<Record, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.position >= self.data.len() {
            return None;
        }
        let result = self.parse_one();
        match &result {
            Ok(_) => self.index += 1,
            Err(_) => self.failed = true,
        }
        Some(result)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let remaining = (self.data.len() - self.position.min(self.data.len())) / MIN_RECORD_BYTES;
        (
            0,
            Some(remaining.min(self.claimed.saturating_sub(self.index)) + 1),
        )
    }
}

impl Records {
    fn parse_one(&mut self) -> Result<Record, BatchError> {
        let index = self.index;
        let invalid = |reason: String| BatchError::InvalidRecord { index, reason };
        let mut cursor = Cursor {
            data: &self.data,
            position: self.position,
            index,
        };
        let length = cursor.varint("length")?;
        let length = usize::try_from(length)
            .map_err(|_| invalid(format!("negative record length {length}")))?;
        let body_start = cursor.position;
        let body_end = body_start
            .checked_add(length)
            .filter(|end| *end <= self.data.len())
            .ok_or_else(|| {
                invalid(format!(
                    "record length {length} exceeds the {} bytes left",
                    self.data.len() - body_start
                ))
            })?;
        let mut body = Cursor {
            data: &self.data[..body_end],
            position: body_start,
            index,
        };
        let attributes = body.byte("attributes")? as i8;
        let timestamp_delta = body.varlong("timestamp delta")?;
        let timestamp = self
            .base_timestamp
            .checked_add(timestamp_delta)
            .ok_or_else(|| invalid(format!("timestamp delta {timestamp_delta} overflows")))?;
        let offset_delta = body.varint("offset delta")?;
        if offset_delta < 0 {
            return Err(invalid(format!("negative offset delta {offset_delta}")));
        }
        let key = body.nullable_bytes(&self.data, "key")?;
        let value = body.nullable_bytes(&self.data, "value")?;
        let header_count = body.varint("header count")?;
        let header_count = usize::try_from(header_count)
            .map_err(|_| invalid(format!("negative header count {header_count}")))?;
        // Size the allocation from the bytes present, never from the count on the wire.
        let bytes_left = body_end - body.position;
        if header_count > bytes_left / MIN_HEADER_BYTES {
            return Err(invalid(format!(
                "header count {header_count} cannot fit in the {bytes_left} bytes left"
            )));
        }
        let mut headers = Vec::with_capacity(header_count);
        for _ in 0..header_count {
            let key = body
                .nullable_bytes(&self.data, "header key")?
                .ok_or_else(|| invalid("null header key".to_string()))?;
            if std::str::from_utf8(&key).is_err() {
                return Err(invalid("header key is not UTF-8".to_string()));
            }
            let value = body.nullable_bytes(&self.data, "header value")?;
            headers.push(Header { key, value });
        }
        if body.position != body_end {
            return Err(invalid(format!(
                "record length {length} disagrees with its fields ({} bytes)",
                body.position - body_start
            )));
        }
        self.position = body_end;
        Ok(Record {
            attributes,
            timestamp_delta,
            timestamp,
            offset_delta,
            key,
            value,
            headers,
        })
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    position: usize,
    index: usize,
}

impl Cursor<'_> {
    fn varint(&mut self, field: &'static str) -> Result<i32, BatchError> {
        let (value, used) = varint::read_varint(&self.data[self.position..])
            .map_err(|error| self.varint_error(error, field))?;
        self.position += used;
        Ok(value)
    }

    fn varlong(&mut self, field: &'static str) -> Result<i64, BatchError> {
        let (value, used) = varint::read_varlong(&self.data[self.position..])
            .map_err(|error| self.varint_error(error, field))?;
        self.position += used;
        Ok(value)
    }

    fn varint_error(&self, error: VarintError, field: &'static str) -> BatchError {
        match error {
            VarintError::Truncated => BatchError::TruncatedVarint {
                index: self.index,
                field,
            },
            VarintError::TooLong => BatchError::InvalidRecord {
                index: self.index,
                reason: format!("varint in {field} is longer than its type"),
            },
        }
    }

    fn byte(&mut self, field: &'static str) -> Result<u8, BatchError> {
        let byte = *self
            .data
            .get(self.position)
            .ok_or_else(|| BatchError::InvalidRecord {
                index: self.index,
                reason: format!("record ends before its {field}"),
            })?;
        self.position += 1;
        Ok(byte)
    }

    fn nullable_bytes(
        &mut self,
        shared: &Bytes,
        field: &'static str,
    ) -> Result<Option<Bytes>, BatchError> {
        let length = self.varint(field)?;
        if length == -1 {
            return Ok(None);
        }
        let length = usize::try_from(length).map_err(|_| BatchError::InvalidRecord {
            index: self.index,
            reason: format!("{field} length {length} is negative"),
        })?;
        let end = self
            .position
            .checked_add(length)
            .filter(|end| *end <= self.data.len())
            .ok_or_else(|| BatchError::InvalidRecord {
                index: self.index,
                reason: format!(
                    "{field} of {length} bytes runs past the record's end ({} bytes left)",
                    self.data.len() - self.position
                ),
            })?;
        let slice = shared.slice(self.position..end);
        self.position = end;
        Ok(Some(slice))
    }
}

/// Splits concatenated batches (a segment, a fetch response's records) into views. A
/// trailing partial batch (as a fetch may end with) yields one `Truncated` error and ends
/// the iteration.
pub struct Batches {
    bytes: Bytes,
    done: bool,
}

/// Iterates the batches in `bytes`.
pub fn batches(bytes: Bytes) -> Batches {
    Batches { bytes, done: false }
}

impl Iterator for Batches {
    type Item = Result<RecordBatch, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.bytes.is_empty() {
            return None;
        }
        let available = self.bytes.len();
        let size = match batch_size_at(&self.bytes) {
            Some(size) if size >= RECORD_BATCH_OVERHEAD && size <= available => size,
            Some(size) if size < RECORD_BATCH_OVERHEAD => {
                self.done = true;
                return Some(Err(BatchError::LengthMismatch {
                    length: size as i64 - LOG_OVERHEAD as i64,
                    available,
                }));
            }
            other => {
                self.done = true;
                return Some(Err(BatchError::Truncated {
                    needed: other.unwrap_or(LOG_OVERHEAD),
                    available,
                }));
            }
        };
        let batch = self.bytes.split_to(size);
        let result = RecordBatch::new(batch);
        if result.is_err() {
            self.done = true;
        }
        Some(result)
    }
}

/// One record for [`RecordBatchBuilder`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRecord {
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
}

/// Writes a v2 batch the way the Java client's `MemoryRecordsBuilder` does: base offset 0
/// (the leader assigns it), partition leader epoch -1, base timestamp = the first record's
/// timestamp, max timestamp = the largest, offset deltas 0, 1, 2, ... For the same
/// uncompressed records the bytes are identical to the Java client's.
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    compression: Compression,
    timestamp_type: TimestampType,
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    record_count: i32,
    records: Vec<u8>,
}

impl RecordBatchBuilder {
    pub fn new(compression: Compression) -> RecordBatchBuilder {
        RecordBatchBuilder {
            compression,
            timestamp_type: TimestampType::CreateTime,
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            base_timestamp: None,
            max_timestamp: -1,
            record_count: 0,
            records: Vec::new(),
        }
    }

    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }
    pub fn timestamp_type(mut self, timestamp_type: TimestampType) -> Self {
        self.timestamp_type = timestamp_type;
        self
    }
    /// Producer id, epoch and the sequence of the first record (idempotent producers).
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    /// Records appended so far.
    pub fn record_count(&self) -> i32 {
        self.record_count
    }

    /// Uncompressed bytes of the records appended so far.
    pub fn records_size_bytes(&self) -> usize {
        self.records.len()
    }

    /// Appends a record with the next offset delta. Refuses a record the batch format
    /// cannot hold, so the builder never writes a batch its reader rejects: a timestamp
    /// more than `i64::MAX` from the batch's first, the 2^31st record, or a batch past
    /// 2 GiB.
    pub fn append(&mut self, record: &NewRecord) -> Result<(), BatchError> {
        let index = self.record_count.max(0) as usize;
        let invalid = |reason: String| BatchError::InvalidRecord { index, reason };
        let base_timestamp = self.base_timestamp.unwrap_or(record.timestamp);
        let timestamp_delta = record
            .timestamp
            .checked_sub(base_timestamp)
            .ok_or_else(|| {
                invalid(format!(
                    "timestamp {} is too far from the batch's base timestamp {base_timestamp}",
                    record.timestamp
                ))
            })?;
        let offset_delta = self.record_count;
        if offset_delta == i32::MAX {
            return Err(invalid("a batch holds at most i32::MAX records".into()));
        }
        let body_size = record_body_size(timestamp_delta, offset_delta, record);
        let batch_size = RECORD_BATCH_OVERHEAD + self.records.len() + body_size + 5;
        if batch_size > i32::MAX as usize {
            return Err(invalid(format!(
                "a record of {body_size} bytes would take the batch past 2 GiB"
            )));
        }
        if let Some(header) = record
            .headers
            .iter()
            .find(|h| std::str::from_utf8(&h.key).is_err())
        {
            return Err(invalid(format!(
                "header key {:?} is not UTF-8",
                String::from_utf8_lossy(&header.key)
            )));
        }
        self.base_timestamp = Some(base_timestamp);
        self.max_timestamp = self.max_timestamp.max(record.timestamp);
        let out = &mut self.records;
        out.reserve(body_size + 5);
        varint::write_varint(out, body_size as i32);
        out.push(0); // record attributes: unused in v2
        varint::write_varlong(out, timestamp_delta);
        varint::write_varint(out, offset_delta);
        write_nullable(out, record.key.as_deref());
        write_nullable(out, record.value.as_deref());
        varint::write_varint(out, record.headers.len() as i32);
        for header in &record.headers {
            write_nullable(out, Some(&header.key));
            write_nullable(out, header.value.as_deref());
        }
        self.record_count += 1;
        Ok(())
    }

    /// Writes the batch: header, (compressed) records, CRC.
    pub fn build(&self) -> Bytes {
        let compressed;
        let section: &[u8] = match self.compression {
            Compression::None => &self.records,
            codec => {
                compressed = compression::compress(codec, &self.records);
                &compressed
            }
        };
        let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + section.len());
        let batch_length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + section.len()) as i32;
        let mut attributes = i16::from(self.compression.id());
        if self.timestamp_type == TimestampType::LogAppendTime {
            attributes |= TIMESTAMP_TYPE_MASK;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_MASK;
        }
        if self.control {
            attributes |= CONTROL_MASK;
        }
        let base_timestamp = self.base_timestamp.unwrap_or(-1);
        out.extend_from_slice(&self.base_offset.to_be_bytes());
        out.extend_from_slice(&batch_length.to_be_bytes());
        out.extend_from_slice(&self.partition_leader_epoch.to_be_bytes());
        out.push(MAGIC_V2 as u8);
        out.extend_from_slice(&[0; 4]); // CRC, written last
        out.extend_from_slice(&attributes.to_be_bytes());
        out.extend_from_slice(&(self.record_count - 1).max(0).to_be_bytes());
        out.extend_from_slice(&base_timestamp.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&self.producer_id.to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.to_be_bytes());
        out.extend_from_slice(&self.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.record_count.to_be_bytes());
        out.extend_from_slice(section);
        let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
        out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        Bytes::from(out)
    }
}

/// Rewrites `original` keeping only `retained` (a subset of its records, in order), as
/// Kafka's log cleaner does (`MemoryRecords.filterTo`): the base offset, last offset
/// delta, producer id, epoch, base sequence, partition leader epoch, codec, timestamp
/// type and transactional/control flags stay; each record keeps its offset delta and
/// timestamp. With `delete_horizon_ms` the batch carries the compaction delete horizon
/// (KIP-534: attribute bit 6, the horizon in `baseTimestamp`, record timestamps as deltas
/// from it). With no records left it is an empty batch (record count 0) that keeps its
/// header: the last batch of a producer is kept that way so its sequence survives.
pub fn rebuild_retained(
    original: &RecordBatch,
    retained: &[Record],
    delete_horizon_ms: Option<i64>,
) -> Bytes {
    let log_append_time = original.timestamp_type() == TimestampType::LogAppendTime;
    let (base_timestamp, max_timestamp) = match retained.first() {
        _ if log_append_time => (
            delete_horizon_ms.unwrap_or(original.base_timestamp()),
            original.max_timestamp(),
        ),
        None => (
            delete_horizon_ms.unwrap_or(original.max_timestamp()),
            original.max_timestamp(),
        ),
        Some(first) => (
            delete_horizon_ms.unwrap_or(first.timestamp),
            retained.iter().map(|r| r.timestamp).max().unwrap_or(-1),
        ),
    };
    let mut body = Vec::new();
    for record in retained {
        let new = NewRecord {
            timestamp: record.timestamp,
            key: record.key.clone(),
            value: record.value.clone(),
            headers: record.headers.clone(),
        };
        let timestamp_delta = record.timestamp.wrapping_sub(base_timestamp);
        let body_size = record_body_size(timestamp_delta, record.offset_delta, &new);
        varint::write_varint(&mut body, body_size as i32);
        body.push(record.attributes as u8);
        varint::write_varlong(&mut body, timestamp_delta);
        varint::write_varint(&mut body, record.offset_delta);
        write_nullable(&mut body, new.key.as_deref());
        write_nullable(&mut body, new.value.as_deref());
        varint::write_varint(&mut body, new.headers.len() as i32);
        for header in &new.headers {
            write_nullable(&mut body, Some(&header.key));
            write_nullable(&mut body, header.value.as_deref());
        }
    }
    let codec = original.compression().unwrap_or(Compression::None);
    let compressed;
    let section: &[u8] = match codec {
        _ if retained.is_empty() => &[],
        Compression::None => &body,
        codec => {
            compressed = compression::compress(codec, &body);
            &compressed
        }
    };
    let mut attributes = original.attributes() & !DELETE_HORIZON_MASK;
    if delete_horizon_ms.is_some() {
        attributes |= DELETE_HORIZON_MASK;
    }
    let mut out = Vec::with_capacity(RECORD_BATCH_OVERHEAD + section.len());
    let batch_length = (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD + section.len()) as i32;
    out.extend_from_slice(&original.base_offset().to_be_bytes());
    out.extend_from_slice(&batch_length.to_be_bytes());
    out.extend_from_slice(&original.partition_leader_epoch().to_be_bytes());
    out.push(MAGIC_V2 as u8);
    out.extend_from_slice(&[0; 4]); // CRC, written last
    out.extend_from_slice(&attributes.to_be_bytes());
    out.extend_from_slice(&original.last_offset_delta().to_be_bytes());
    out.extend_from_slice(&base_timestamp.to_be_bytes());
    out.extend_from_slice(&max_timestamp.to_be_bytes());
    out.extend_from_slice(&original.producer_id().to_be_bytes());
    out.extend_from_slice(&original.producer_epoch().to_be_bytes());
    out.extend_from_slice(&original.base_sequence().to_be_bytes());
    out.extend_from_slice(&(retained.len() as i32).to_be_bytes());
    out.extend_from_slice(section);
    let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
    out[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(out)
}

fn record_body_size(timestamp_delta: i64, offset_delta: i32, record: &NewRecord) -> usize {
    let mut size = 1 + varint::varlong_size(timestamp_delta) + varint::varint_size(offset_delta);
    size += nullable_size(record.key.as_deref());
    size += nullable_size(record.value.as_deref());
    size += varint::varint_size(record.headers.len() as i32);
    for header in &record.headers {
        size += nullable_size(Some(&header.key));
        size += nullable_size(header.value.as_deref());
    }
    size
}

fn nullable_size(bytes: Option<&[u8]>) -> usize {
    match bytes {
        None => 1,
        Some(bytes) => varint::varint_size(bytes.len() as i32) + bytes.len(),
    }
}

fn write_nullable(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => varint::write_varint(out, -1),
        Some(bytes) => {
            varint::write_varint(out, bytes.len() as i32);
            out.extend_from_slice(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn record(i: i64) -> NewRecord {
        NewRecord {
            timestamp: 1_700_000_000_000 + i * 10,
            key: (i % 3 != 0).then(|| Bytes::from(format!("key-{i}"))),
            value: (i % 5 != 0).then(|| Bytes::from(format!("value-{i}").repeat(4))),
            headers: if i % 2 == 0 {
                vec![Header {
                    key: Bytes::from_static(b"h"),
                    value: (i % 4 == 0).then(|| Bytes::from(format!("v{i}"))),
                }]
            } else {
                vec![]
            },
        }
    }

    fn build(codec: Compression, count: i64) -> (Vec<NewRecord>, Bytes) {
        let mut builder = RecordBatchBuilder::new(codec).producer(7, 1, 42);
        let records: Vec<_> = (0..count).map(record).collect();
        for r in &records {
            builder.append(r).unwrap();
        }
        (records, builder.build())
    }

    #[test]
    fn built_batches_read_back_with_every_codec() {
        for codec in Compression::ALL {
            let (records, bytes) = build(codec, 50);
            let batch = RecordBatch::new(bytes).unwrap();
            batch.validate().unwrap();
            assert_eq!(batch.compression().unwrap(), codec);
            assert_eq!(batch.record_count(), 50);
            assert_eq!(batch.last_offset_delta(), 49);
            assert_eq!(batch.producer_id(), 7);
            assert_eq!(batch.producer_epoch(), 1);
            assert_eq!(batch.base_sequence(), 42);
            assert_eq!(batch.base_timestamp(), 1_700_000_000_000);
            assert_eq!(batch.max_timestamp(), 1_700_000_000_490);
            let read: Vec<_> = batch.records().unwrap().map(Result::unwrap).collect();
            assert_eq!(read.len(), records.len());
            for (i, (got, want)) in read.iter().zip(&records).enumerate() {
                assert_eq!(got.offset_delta, i as i32);
                assert_eq!(got.timestamp, want.timestamp);
                assert_eq!(got.key, want.key);
                assert_eq!(got.value, want.value);
                assert_eq!(got.headers, want.headers);
            }
        }
    }

    #[test]
    fn header_view_reads_every_field_of_a_built_batch() {
        let mut builder = RecordBatchBuilder::new(Compression::Lz4)
            .base_offset(1_000)
            .partition_leader_epoch(9)
            .timestamp_type(TimestampType::LogAppendTime)
            .producer(7, 3, 42)
            .transactional(true);
        for i in 0..5 {
            builder.append(&record(i)).unwrap();
        }
        let bytes = builder.build();
        let header = BatchHeader::new(&bytes).unwrap();
        assert_eq!(header.bytes().len(), bytes.len());
        assert_eq!(header.base_offset(), 1_000);
        assert_eq!(header.batch_length() as usize, bytes.len() - LOG_OVERHEAD);
        assert_eq!(header.partition_leader_epoch(), 9);
        assert_eq!(header.magic(), MAGIC_V2);
        assert_eq!(header.crc(), header.compute_crc());
        assert_eq!(header.compression().unwrap(), Compression::Lz4);
        assert_eq!(header.timestamp_type(), TimestampType::LogAppendTime);
        assert!(header.is_transactional());
        assert!(!header.is_control());
        assert!(!header.has_delete_horizon());
        assert_eq!(
            header.attributes(),
            0x08 | 0x10 | i16::from(Compression::Lz4.id())
        );
        assert_eq!(header.last_offset_delta(), 4);
        assert_eq!(header.last_offset(), 1_004);
        assert_eq!(header.next_offset(), 1_005);
        assert_eq!(header.base_timestamp(), record(0).timestamp);
        assert_eq!(header.max_timestamp(), record(4).timestamp);
        assert_eq!(header.producer_id(), 7);
        assert_eq!(header.producer_epoch(), 3);
        assert_eq!(header.base_sequence(), 42);
        assert_eq!(header.record_count(), 5);

        // RecordBatch reads the same fields through the view.
        let batch = RecordBatch::new(bytes.clone()).unwrap();
        assert_eq!(batch.header(), header);
        assert_eq!(batch.next_offset(), header.next_offset());
        assert_eq!(batch.producer_epoch(), header.producer_epoch());

        let control = RecordBatchBuilder::new(Compression::None).control(true);
        let control = control.build();
        let control = BatchHeader::new(&control).unwrap();
        assert!(control.is_control());
        assert_eq!(control.producer_id(), NO_PRODUCER_ID);
        assert_eq!(control.base_sequence(), NO_SEQUENCE);

        let retained: Vec<Record> = batch.records().unwrap().map(Result::unwrap).collect();
        let rebuilt = rebuild_retained(&batch, &retained, Some(77));
        let rebuilt = BatchHeader::new(&rebuilt).unwrap();
        assert!(rebuilt.has_delete_horizon());
        assert_eq!(rebuilt.base_timestamp(), 77);
    }

    #[test]
    fn header_view_refuses_a_short_slice() {
        let (_, bytes) = build(Compression::None, 2);
        assert!(BatchHeader::new(&[]).is_none());
        assert!(BatchHeader::new(&bytes[..RECORD_BATCH_OVERHEAD - 1]).is_none());
        let exact = BatchHeader::new(&bytes[..RECORD_BATCH_OVERHEAD]).unwrap();
        assert_eq!(exact.record_count(), 2);
        assert_eq!(exact.next_offset(), 2);
    }

    #[test]
    fn in_place_fields_leave_the_crc_valid() {
        let (_, bytes) = build(Compression::Lz4, 3);
        let mut bytes = bytes.to_vec();
        set_base_offset(&mut bytes, 1234);
        set_partition_leader_epoch(&mut bytes, 9);
        let batch = RecordBatch::new(Bytes::from(bytes.clone())).unwrap();
        batch.validate().unwrap();
        assert_eq!(batch.base_offset(), 1234);
        assert_eq!(batch.last_offset(), 1236);
        assert_eq!(batch.partition_leader_epoch(), 9);
        set_log_append_time(&mut bytes, 99);
        let batch = RecordBatch::new(Bytes::from(bytes)).unwrap();
        batch.validate().unwrap();
        assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
        let first = batch.records().unwrap().next().unwrap().unwrap();
        assert_eq!(batch.record_timestamp(&first), 99);
    }

    /// Each malformation, applied to a valid uncompressed batch, and the error it must give.
    #[test]
    fn malformed_batches_give_typed_errors() {
        type Mutation = fn(&mut Vec<u8>);
        fn fix_crc(bytes: &mut [u8]) {
            let crc = crc32c::crc32c(&bytes[ATTRIBUTES_AT..]);
            bytes[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
        }
        type Check = fn(&BatchError) -> bool;
        let cases: &[(&str, Mutation, Check)] = &[
            (
                "wrong magic",
                |b| b[MAGIC_AT] = 1,
                |e| matches!(e, BatchError::WrongMagic(1)),
            ),
            (
                "flipped payload byte",
                |b| {
                    let last = b.len() - 1;
                    b[last] ^= 0xff
                },
                |e| matches!(e, BatchError::CrcMismatch { .. }),
            ),
            (
                "length too long",
                |b| {
                    let length = read_i32(b, LENGTH_AT) + 1;
                    b[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes())
                },
                |e| matches!(e, BatchError::LengthMismatch { .. }),
            ),
            (
                "bytes cut",
                |b| {
                    b.pop();
                },
                |e| matches!(e, BatchError::LengthMismatch { .. }),
            ),
            (
                "count too high",
                |b| {
                    b[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&4i32.to_be_bytes());
                    b[LAST_OFFSET_DELTA_AT..LAST_OFFSET_DELTA_AT + 4]
                        .copy_from_slice(&3i32.to_be_bytes());
                    fix_crc(b)
                },
                |e| {
                    matches!(
                        e,
                        BatchError::RecordCountMismatch {
                            claimed: 4,
                            found: 3
                        }
                    )
                },
            ),
            (
                "count above last offset delta",
                |b| {
                    b[RECORD_COUNT_AT..RECORD_COUNT_AT + 4].copy_from_slice(&9i32.to_be_bytes());
                    fix_crc(b)
                },
                |e| matches!(e, BatchError::InvalidRecordCount { count: 9, .. }),
            ),
            (
                "negative offset delta",
                |b| {
                    // First record: length varint, attributes, timestamp delta 0, offset delta.
                    let at = RECORD_BATCH_OVERHEAD + 3;
                    assert_eq!(b[at], 0);
                    b[at] = 0x01; // zig-zag -1
                    fix_crc(b)
                },
                |e| matches!(e, BatchError::InvalidRecord { index: 0, .. }),
            ),
            (
                "truncated varint",
                |b| {
                    // Cut the batch inside the last record's header count and fix lengths.
                    let total = b.len();
                    b.truncate(total - 1);
                    let last = b.len() - 1;
                    b[last] = 0x80;
                    let length = (b.len() - LOG_OVERHEAD) as i32;
                    b[LENGTH_AT..LENGTH_AT + 4].copy_from_slice(&length.to_be_bytes());
                    fix_crc(b)
                },
                |e| {
                    matches!(
                        e,
                        BatchError::InvalidRecord { index: 2, .. }
                            | BatchError::TruncatedVarint { index: 2, .. }
                    )
                },
            ),
            (
                "overflowing timestamp delta",
                |b| {
                    b[BASE_TIMESTAMP_AT..BASE_TIMESTAMP_AT + 8]
                        .copy_from_slice(&i64::MAX.to_be_bytes());
                    fix_crc(b)
                },
                |e| matches!(e, BatchError::InvalidRecord { index: 1, .. }),
            ),
            (
                "reserved codec",
                |b| {
                    b[ATTRIBUTES_AT + 1] |= 0x07;
                    fix_crc(b)
                },
                |e| matches!(e, BatchError::UnknownCompression(7)),
            ),
        ];
        for (name, mutate, expected) in cases {
            let mut builder = RecordBatchBuilder::new(Compression::None);
            for i in 0..3 {
                builder
                    .append(&NewRecord {
                        timestamp: 1000 + i,
                        key: None,
                        value: Some(Bytes::from_static(b"v")),
                        headers: vec![],
                    })
                    .unwrap();
            }
            let mut bytes = builder.build().to_vec();
            mutate(&mut bytes);
            let error = RecordBatch::new(Bytes::from(bytes)).and_then(|b| {
                b.validate()?;
                Ok(b)
            });
            let error = error.expect_err(name);
            assert!(expected(&error), "{name}: unexpected error {error:?}");
        }
    }

    #[test]
    fn builder_refuses_what_the_reader_would_reject() {
        // Found by fuzzing builder_roundtrip: timestamps more than i64::MAX apart.
        let record = |timestamp| NewRecord {
            timestamp,
            key: None,
            value: None,
            headers: vec![],
        };
        let mut builder = RecordBatchBuilder::new(Compression::None);
        builder.append(&record(-7_378_783_726_403_348_149)).unwrap();
        let error = builder
            .append(&record(5_425_598_726_066_405_378))
            .unwrap_err();
        assert!(
            matches!(error, BatchError::InvalidRecord { index: 1, .. }),
            "{error}"
        );
        // The refused record left no trace: the batch holds one record and validates.
        assert_eq!(builder.record_count(), 1);
        let batch = RecordBatch::new(builder.build()).unwrap();
        batch.validate().unwrap();
        // As the Java client: the max timestamp starts at -1 (no timestamp).
        assert_eq!(batch.max_timestamp(), -1);
        // Header keys are UTF-8 strings in Kafka.
        let mut with_bad_key = record(1);
        with_bad_key.headers.push(Header {
            key: Bytes::from_static(&[0xff, 0xfe]),
            value: None,
        });
        assert!(builder.append(&with_bad_key).is_err());
        assert_eq!(builder.record_count(), 1);
    }

    #[test]
    fn batches_splits_and_reports_a_partial_tail() {
        let (_, a) = build(Compression::None, 2);
        let (_, b) = build(Compression::Zstd, 5);
        let mut joined = a.to_vec();
        joined.extend_from_slice(&b);
        joined.extend_from_slice(&a[..20]);
        let all: Vec<_> = batches(Bytes::from(joined)).collect();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0].as_ref().unwrap().record_count(), 2);
        assert_eq!(all[1].as_ref().unwrap().record_count(), 5);
        assert!(matches!(all[2], Err(BatchError::Truncated { .. })));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            for batch in batches(Bytes::from(bytes)).flatten() {
                let _ = batch.validate();
                if let Ok(records) = batch.records() {
                    records.for_each(drop);
                }
            }
        }

        #[test]
        fn mutated_batches_never_panic(position in 0usize..400, value: u8, codec_id in 0u8..5) {
            let (_, bytes) = build(Compression::from_id(codec_id).unwrap(), 5);
            let mut bytes = bytes.to_vec();
            let position = position % bytes.len();
            bytes[position] = value;
            if let Ok(batch) = RecordBatch::new(Bytes::from(bytes)) {
                let _ = batch.validate();
                if let Ok(records) = batch.records() { records.for_each(drop); }
            }
        }
    }
}
