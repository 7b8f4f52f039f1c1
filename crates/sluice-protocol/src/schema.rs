//! Reading and writing Kafka's schema types (the encodings of its message JSON files) in
//! a byte slice: fixed-width integers, unsigned varints, strings, byte strings, arrays and
//! tagged-field sections, in the classic (`i16`/`i32` length prefixes) or the flexible
//! (compact, varint length + 1) layout. Used for the formats Kafka embeds in other bytes:
//! the classic consumer protocol's subscriptions and assignments, the records of
//! `__consumer_offsets`.
//!
//! Reading never panics and never allocates from a length or count the input has not
//! backed with bytes. Writing cuts values too long for their length prefix (strings over
//! `i16::MAX` bytes, byte strings and arrays over `i32::MAX`) to what fits.

use bytes::Bytes;

/// Longest string a Kafka `string` can carry: its classic length prefix is an `i16`.
pub const MAX_STRING_LEN: usize = i16::MAX as usize;
/// Longest byte string a Kafka `bytes` can carry: its classic length prefix is an `i32`.
pub const MAX_BYTES_LEN: usize = i32::MAX as usize;

/// Why bytes could not be read as a schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
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
    /// An unsigned varint runs past five bytes or past `u32::MAX`.
    #[error("malformed unsigned varint in {field}")]
    BadVarint { field: &'static str },
    /// A version this codec cannot read (negative ones).
    #[error("unknown {record} version {version}")]
    UnknownVersion { record: &'static str, version: i16 },
    /// A string field holds bytes that are not UTF-8.
    #[error("{field} is not valid UTF-8")]
    InvalidUtf8 { field: &'static str },
}

type Result<T> = std::result::Result<T, SchemaError>;

/// Reads fields from a byte slice, never past it.
#[derive(Debug)]
pub struct SchemaReader<'a> {
    buf: &'a [u8],
    flexible: bool,
}

impl<'a> SchemaReader<'a> {
    /// A reader of the classic layout.
    pub fn new(buf: &'a [u8]) -> SchemaReader<'a> {
        SchemaReader {
            buf,
            flexible: false,
        }
    }

    /// Switches between the classic and the flexible layout (a version decides).
    pub fn set_flexible(&mut self, flexible: bool) {
        self.flexible = flexible;
    }

    /// Reads a non-negative `i16` version.
    pub fn version(&mut self, record: &'static str) -> Result<i16> {
        let version = self.i16("version")?;
        if version < 0 {
            return Err(SchemaError::UnknownVersion { record, version });
        }
        Ok(version)
    }

    pub fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(SchemaError::Truncated {
                field,
                needed: n,
                remaining: self.buf.len(),
            });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    pub fn i16(&mut self, field: &'static str) -> Result<i16> {
        self.fixed(field).map(i16::from_be_bytes)
    }

    pub fn i32(&mut self, field: &'static str) -> Result<i32> {
        self.fixed(field).map(i32::from_be_bytes)
    }

    pub fn i64(&mut self, field: &'static str) -> Result<i64> {
        self.fixed(field).map(i64::from_be_bytes)
    }

    pub fn uvarint(&mut self, field: &'static str) -> Result<u32> {
        let mut value: u64 = 0;
        for index in 0..5 {
            let [byte] = self.fixed(field)?;
            value |= u64::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                return u32::try_from(value).map_err(|_| SchemaError::BadVarint { field });
            }
        }
        Err(SchemaError::BadVarint { field })
    }

    /// Reads a length prefix (`i16` for classic strings, `i32` for classic bytes and
    /// arrays, unsigned varint of length + 1 when flexible); `None` is null.
    fn length(&mut self, field: &'static str, classic_i16: bool) -> Result<Option<usize>> {
        let length = if self.flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if classic_i16 {
            i64::from(self.i16(field)?)
        } else {
            i64::from(self.i32(field)?)
        };
        match length {
            -1 => Ok(None),
            _ => usize::try_from(length)
                .map(Some)
                .map_err(|_| SchemaError::BadLength { field, length }),
        }
    }

    pub fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>> {
        let Some(len) = self.length(field, true)? else {
            return Ok(None);
        };
        if len > MAX_STRING_LEN {
            return Err(SchemaError::BadLength {
                field,
                length: len as i64,
            });
        }
        let raw = self.take(len, field)?;
        String::from_utf8(raw.to_vec())
            .map(Some)
            .map_err(|_| SchemaError::InvalidUtf8 { field })
    }

    pub fn string(&mut self, field: &'static str) -> Result<String> {
        self.nullable_string(field)?
            .ok_or(SchemaError::UnexpectedNull { field })
    }

    pub fn nullable_bytes(&mut self, field: &'static str) -> Result<Option<Bytes>> {
        let Some(len) = self.length(field, false)? else {
            return Ok(None);
        };
        Ok(Some(Bytes::copy_from_slice(self.take(len, field)?)))
    }

    pub fn bytes(&mut self, field: &'static str) -> Result<Bytes> {
        self.nullable_bytes(field)?
            .ok_or(SchemaError::UnexpectedNull { field })
    }

    /// Reads a non-null array count whose elements take at least `min_element` bytes each,
    /// rejecting a count the remaining bytes cannot hold.
    pub fn array_len(&mut self, field: &'static str, min_element: usize) -> Result<usize> {
        let count = self
            .length(field, false)?
            .ok_or(SchemaError::UnexpectedNull { field })?;
        if count.saturating_mul(min_element) > self.buf.len() {
            return Err(SchemaError::BadLength {
                field,
                length: count as i64,
            });
        }
        Ok(count)
    }

    /// Skips a tagged-field section (flexible layout only): every tag is unknown to the
    /// formats read here.
    pub fn tagged_fields(&mut self) -> Result<()> {
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint("tagged field count")?;
        for _ in 0..count {
            self.uvarint("tag")?;
            let size = self.uvarint("tagged field size")?;
            self.take(size as usize, "tagged field")?;
        }
        Ok(())
    }

    /// Reads a classic consumer protocol `[]TopicPartition`: each a topic name and its
    /// `[]int32` partitions.
    pub fn topic_partitions(&mut self, field: &'static str) -> Result<Vec<(String, Vec<i32>)>> {
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

/// Writes fields in the classic or flexible layout.
#[derive(Debug, Default)]
pub struct SchemaWriter {
    out: Vec<u8>,
    flexible: bool,
}

impl SchemaWriter {
    pub fn new(flexible: bool) -> SchemaWriter {
        SchemaWriter {
            out: Vec::new(),
            flexible,
        }
    }

    /// The bytes written.
    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    pub fn i16(&mut self, v: i16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i32(&mut self, v: i32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    pub fn uvarint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    /// Writes a length prefix; `len` is already within its type's limit.
    fn length(&mut self, len: usize, classic_i16: bool) {
        if self.flexible {
            self.uvarint(len as u32 + 1);
        } else if classic_i16 {
            self.i16(len as i16);
        } else {
            self.i32(len as i32);
        }
    }

    pub fn string(&mut self, s: &str) {
        let s = &s[..s.floor_char_boundary(MAX_STRING_LEN)];
        self.length(s.len(), true);
        self.out.extend_from_slice(s.as_bytes());
    }

    pub fn nullable_string(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.string(s),
            None if self.flexible => self.uvarint(0),
            None => self.i16(-1),
        }
    }

    pub fn bytes(&mut self, b: &[u8]) {
        let b = &b[..b.len().min(MAX_BYTES_LEN)];
        self.length(b.len(), false);
        self.out.extend_from_slice(b);
    }

    pub fn nullable_bytes(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => self.bytes(b),
            None if self.flexible => self.uvarint(0),
            None => self.i32(-1),
        }
    }

    pub fn array_len(&mut self, len: usize) {
        self.length(len.min(MAX_BYTES_LEN), false);
    }

    /// An empty tagged-field section, present only in the flexible layout.
    pub fn tagged_fields(&mut self) {
        if self.flexible {
            self.uvarint(0);
        }
    }

    /// Writes a classic consumer protocol `[]TopicPartition`.
    pub fn topic_partitions(&mut self, topics: &[(String, Vec<i32>)]) {
        self.array_len(topics.len());
        for (topic, partitions) in topics.iter().take(MAX_BYTES_LEN) {
            self.string(topic);
            self.array_len(partitions.len());
            for partition in partitions.iter().take(MAX_BYTES_LEN) {
                self.i32(*partition);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_and_flexible_layouts_round_trip() {
        for flexible in [false, true] {
            let mut w = SchemaWriter::new(flexible);
            w.i16(3);
            w.string("group");
            w.nullable_string(None);
            w.bytes(b"\x01\x02");
            w.nullable_bytes(None);
            w.array_len(2);
            w.i64(-7);
            w.tagged_fields();
            let bytes = w.finish();
            let mut r = SchemaReader::new(&bytes);
            r.set_flexible(flexible);
            assert_eq!(r.version("test"), Ok(3));
            assert_eq!(r.string("s").unwrap(), "group");
            assert_eq!(r.nullable_string("n"), Ok(None));
            assert_eq!(&r.bytes("b").unwrap()[..], b"\x01\x02");
            assert_eq!(r.nullable_bytes("nb"), Ok(None));
            assert_eq!(r.array_len("a", 4), Ok(2));
            assert_eq!(r.i64("i"), Ok(-7));
            assert_eq!(r.tagged_fields(), Ok(()));
            assert!(matches!(r.i16("end"), Err(SchemaError::Truncated { .. })));
        }
    }

    #[test]
    fn counts_the_input_cannot_hold_are_refused() {
        let bytes = [0x7f, 0xff, 0xff, 0xff];
        let mut r = SchemaReader::new(&bytes);
        assert!(matches!(
            r.array_len("a", 1),
            Err(SchemaError::BadLength { .. })
        ));
        let mut r = SchemaReader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(matches!(r.uvarint("v"), Err(SchemaError::BadVarint { .. })));
        let mut r = SchemaReader::new(&[0xff, 0xfe]);
        assert!(matches!(
            r.version("v"),
            Err(SchemaError::UnknownVersion { version: -2, .. })
        ));
    }
}
