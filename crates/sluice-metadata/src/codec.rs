//! Kafka's "flexible" (KIP-482) field encoding, as metadata records use it: unsigned
//! varints, compact strings and arrays (length + 1, 0 for null), 16-byte UUIDs, and a
//! tagged-field section closing every struct.
//!
//! Reading never panics and never allocates from a count on the wire: an array's
//! length is checked against the bytes left before anything is reserved.

use crate::MetadataError;

/// A topic or directory id (Kafka's `Uuid`: most significant 64 bits first).
pub type Uuid = [u8; 16];

pub(crate) struct Writer {
    pub out: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer { out: Vec::new() }
    }
    pub fn uvarint(&mut self, mut value: u32) {
        while value >= 0x80 {
            self.out.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.out.push(value as u8);
    }
    pub fn i8(&mut self, value: i8) {
        self.out.push(value as u8);
    }
    pub fn bool(&mut self, value: bool) {
        self.out.push(u8::from(value));
    }
    pub fn u16(&mut self, value: u16) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }
    pub fn i16(&mut self, value: i16) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }
    pub fn i32(&mut self, value: i32) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }
    pub fn i64(&mut self, value: i64) {
        self.out.extend_from_slice(&value.to_be_bytes());
    }
    pub fn uuid(&mut self, value: &Uuid) {
        self.out.extend_from_slice(value);
    }
    pub fn string(&mut self, value: &str) {
        self.uvarint(value.len() as u32 + 1);
        self.out.extend_from_slice(value.as_bytes());
    }
    pub fn nullable_string(&mut self, value: Option<&str>) {
        match value {
            Some(value) => self.string(value),
            None => self.uvarint(0),
        }
    }
    /// Compact bytes (length + 1, then the bytes).
    pub fn bytes(&mut self, value: &[u8]) {
        self.uvarint(value.len() as u32 + 1);
        self.out.extend_from_slice(value);
    }
    pub fn i32_array(&mut self, values: &[i32]) {
        self.uvarint(values.len() as u32 + 1);
        values.iter().for_each(|v| self.i32(*v));
    }
    pub fn uuid_array(&mut self, values: &[Uuid]) {
        self.uvarint(values.len() as u32 + 1);
        values.iter().for_each(|v| self.uuid(v));
    }
    /// Writes a tagged-field section: (tag, encoded value) pairs in ascending tag order.
    pub fn tagged_fields(&mut self, fields: &[(u32, Vec<u8>)]) {
        self.uvarint(fields.len() as u32);
        for (tag, value) in fields {
            self.uvarint(*tag);
            self.uvarint(value.len() as u32);
            self.out.extend_from_slice(value);
        }
    }
}

/// Encodes one value alone, for a tagged field.
pub(crate) fn encoded(write: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut writer = Writer::new();
    write(&mut writer);
    writer.out
}

pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, position: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.position >= self.bytes.len()
    }

    fn remaining(&self) -> usize {
        self.bytes.len() - self.position
    }

    fn take(&mut self, count: usize, what: &'static str) -> Result<&'a [u8], MetadataError> {
        if count > self.remaining() {
            return Err(MetadataError::Truncated(what));
        }
        let slice = &self.bytes[self.position..self.position + count];
        self.position += count;
        Ok(slice)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let rest = &self.bytes[self.position..];
        self.position = self.bytes.len();
        rest
    }

    pub fn uvarint(&mut self, what: &'static str) -> Result<u32, MetadataError> {
        let mut value: u32 = 0;
        for index in 0..5 {
            let byte = self.take(1, what)?[0];
            if index == 4 && byte > 0x0f {
                return Err(MetadataError::Malformed(format!("{what}: varint too long")));
            }
            value |= u32::from(byte & 0x7f) << (7 * index);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(MetadataError::Malformed(format!("{what}: varint too long")))
    }

    pub fn i8(&mut self, what: &'static str) -> Result<i8, MetadataError> {
        Ok(self.take(1, what)?[0] as i8)
    }
    pub fn bool(&mut self, what: &'static str) -> Result<bool, MetadataError> {
        // Kafka reads any non-zero byte as true.
        Ok(self.take(1, what)?[0] != 0)
    }
    pub fn u16(&mut self, what: &'static str) -> Result<u16, MetadataError> {
        let bytes = self.take(2, what)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }
    pub fn i16(&mut self, what: &'static str) -> Result<i16, MetadataError> {
        let bytes = self.take(2, what)?;
        Ok(i16::from_be_bytes([bytes[0], bytes[1]]))
    }
    pub fn i32(&mut self, what: &'static str) -> Result<i32, MetadataError> {
        let bytes = self.take(4, what)?;
        Ok(i32::from_be_bytes(bytes.try_into().expect("4 bytes")))
    }
    pub fn i64(&mut self, what: &'static str) -> Result<i64, MetadataError> {
        let bytes = self.take(8, what)?;
        Ok(i64::from_be_bytes(bytes.try_into().expect("8 bytes")))
    }
    pub fn uuid(&mut self, what: &'static str) -> Result<Uuid, MetadataError> {
        Ok(self.take(16, what)?.try_into().expect("16 bytes"))
    }

    pub fn nullable_string(&mut self, what: &'static str) -> Result<Option<String>, MetadataError> {
        let length = self.uvarint(what)?;
        if length == 0 {
            return Ok(None);
        }
        let bytes = self.take(length as usize - 1, what)?;
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| MetadataError::Malformed(format!("{what}: not UTF-8")))
    }

    /// Compact non-null bytes.
    pub fn bytes(&mut self, what: &'static str) -> Result<Vec<u8>, MetadataError> {
        let length = self.uvarint(what)?;
        if length == 0 {
            return Err(MetadataError::Malformed(format!(
                "{what}: null where bytes are required"
            )));
        }
        Ok(self.take(length as usize - 1, what)?.to_vec())
    }

    pub fn string(&mut self, what: &'static str) -> Result<String, MetadataError> {
        self.nullable_string(what)?.ok_or_else(|| {
            MetadataError::Malformed(format!("{what}: null where a string is required"))
        })
    }

    /// A nullable compact array of `element_bytes`-byte elements; the count is checked
    /// against the bytes left before anything is allocated.
    fn array_length(
        &mut self,
        element_bytes: usize,
        what: &'static str,
    ) -> Result<Option<usize>, MetadataError> {
        let length = self.uvarint(what)?;
        if length == 0 {
            return Ok(None);
        }
        let count = length as usize - 1;
        if count.saturating_mul(element_bytes) > self.remaining() {
            return Err(MetadataError::Truncated(what));
        }
        Ok(Some(count))
    }

    pub fn nullable_i32_array(
        &mut self,
        what: &'static str,
    ) -> Result<Option<Vec<i32>>, MetadataError> {
        let Some(count) = self.array_length(4, what)? else {
            return Ok(None);
        };
        (0..count)
            .map(|_| self.i32(what))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    pub fn i32_array(&mut self, what: &'static str) -> Result<Vec<i32>, MetadataError> {
        self.nullable_i32_array(what)?.ok_or_else(|| {
            MetadataError::Malformed(format!("{what}: null where an array is required"))
        })
    }

    pub fn nullable_uuid_array(
        &mut self,
        what: &'static str,
    ) -> Result<Option<Vec<Uuid>>, MetadataError> {
        let Some(count) = self.array_length(16, what)? else {
            return Ok(None);
        };
        (0..count)
            .map(|_| self.uuid(what))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Reads a tagged-field section; returns (tag, value bytes) pairs.
    pub fn tagged_fields(&mut self) -> Result<Vec<(u32, &'a [u8])>, MetadataError> {
        let count = self.uvarint("tagged field count")? as usize;
        // Each tagged field takes at least two bytes (tag and size).
        if count > self.remaining() / 2 {
            return Err(MetadataError::Truncated("tagged fields"));
        }
        let mut fields = Vec::with_capacity(count);
        for _ in 0..count {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tagged field size")? as usize;
            fields.push((tag, self.take(size, "tagged field")?));
        }
        Ok(fields)
    }
}
