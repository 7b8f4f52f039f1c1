//! Confluent's wire format, the frame around every serialized key or value:
//!
//! ```text
//! magic byte 0 | schema id: 4 bytes, big-endian | [Protobuf: message indexes] | payload
//! ```
//!
//! Protobuf's message indexes locate the message type in its `.proto` file: the index of
//! a top-level message, then of each nested message down to it (`[1, 0]` is the first
//! message nested in the file's second). They are written as a count then each index, all
//! zig-zag varints (Kafka's `ByteUtils.writeVarint`); `[0]`, the common case, is written as
//! the single byte 0 (a count of 0 reads as `[0]`).
//!
//! Reading never trusts the bytes: a wrong magic byte, a short frame, a varint longer than
//! 5 bytes, a negative count or index, or more indexes than [`MAX_MESSAGE_INDEXES`] is a
//! [`WireFormatError`].

/// The first byte of every framed record (Confluent has had no other).
pub const MAGIC_BYTE: u8 = 0;

/// Magic byte and id.
pub const HEADER_BYTES: usize = 5;

/// Message types nest at most this deep (protoc's own recursion limit is 100).
pub const MAX_MESSAGE_INDEXES: usize = 100;

/// The longest varint an `int` takes (Kafka refuses longer ones).
const MAX_VARINT_BYTES: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireFormatError {
    #[error("unknown magic byte {0} (Confluent's wire format starts with 0)")]
    UnknownMagicByte(u8),
    #[error("{needed} bytes needed, {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("a varint longer than {MAX_VARINT_BYTES} bytes")]
    VarintTooLong,
    #[error("message index count {0} is negative or above {MAX_MESSAGE_INDEXES}")]
    MessageIndexCount(i32),
    #[error("message index {0} is negative")]
    NegativeMessageIndex(i32),
}

/// Writes the magic byte and `schema_id`.
pub fn write_header(buffer: &mut Vec<u8>, schema_id: i32) {
    buffer.push(MAGIC_BYTE);
    buffer.extend_from_slice(&schema_id.to_be_bytes());
}

/// Reads the magic byte and schema id; answers the id and the bytes after them.
pub fn read_header(bytes: &[u8]) -> Result<(i32, &[u8]), WireFormatError> {
    let Some(&magic) = bytes.first() else {
        return Err(WireFormatError::Truncated {
            needed: HEADER_BYTES,
            available: 0,
        });
    };
    if magic != MAGIC_BYTE {
        return Err(WireFormatError::UnknownMagicByte(magic));
    }
    let Some(id) = bytes.get(1..HEADER_BYTES) else {
        return Err(WireFormatError::Truncated {
            needed: HEADER_BYTES,
            available: bytes.len(),
        });
    };
    let id = i32::from_be_bytes(id.try_into().expect("a 4-byte slice"));
    Ok((id, &bytes[HEADER_BYTES..]))
}

/// Writes Protobuf message indexes. `[0]` (and `[]`, which reads back as `[0]`) is the
/// single byte 0.
pub fn write_message_indexes(buffer: &mut Vec<u8>, indexes: &[i32]) {
    if indexes.is_empty() || indexes == [0] {
        buffer.push(0);
        return;
    }
    let count = i32::try_from(indexes.len()).expect("message nesting fits an i32");
    write_zigzag_varint(buffer, count);
    for &index in indexes {
        write_zigzag_varint(buffer, index);
    }
}

/// Reads Protobuf message indexes; answers them and the bytes after them.
pub fn read_message_indexes(bytes: &[u8]) -> Result<(Vec<i32>, &[u8]), WireFormatError> {
    let (count, mut rest) = read_zigzag_varint(bytes)?;
    if count == 0 {
        return Ok((vec![0], rest));
    }
    if count < 0 || count as usize > MAX_MESSAGE_INDEXES {
        return Err(WireFormatError::MessageIndexCount(count));
    }
    let mut indexes = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let (index, after) = read_zigzag_varint(rest)?;
        if index < 0 {
            return Err(WireFormatError::NegativeMessageIndex(index));
        }
        indexes.push(index);
        rest = after;
    }
    Ok((indexes, rest))
}

/// Kafka's `ByteUtils.writeVarint`: zig-zag, then 7 bits a byte, low bits first.
pub fn write_zigzag_varint(buffer: &mut Vec<u8>, value: i32) {
    let mut zigzag = ((value << 1) ^ (value >> 31)) as u32;
    while zigzag >= 0x80 {
        buffer.push((zigzag as u8 & 0x7f) | 0x80);
        zigzag >>= 7;
    }
    buffer.push(zigzag as u8);
}

/// Kafka's `ByteUtils.readVarint`: at most 5 bytes.
pub fn read_zigzag_varint(bytes: &[u8]) -> Result<(i32, &[u8]), WireFormatError> {
    let mut zigzag: u32 = 0;
    for (position, &byte) in bytes.iter().enumerate() {
        if position == MAX_VARINT_BYTES {
            return Err(WireFormatError::VarintTooLong);
        }
        zigzag |= u32::from(byte & 0x7f) << (7 * position);
        if byte & 0x80 == 0 {
            let value = ((zigzag >> 1) as i32) ^ -((zigzag & 1) as i32);
            return Ok((value, &bytes[position + 1..]));
        }
    }
    if bytes.len() >= MAX_VARINT_BYTES {
        return Err(WireFormatError::VarintTooLong);
    }
    Err(WireFormatError::Truncated {
        needed: bytes.len() + 1,
        available: bytes.len(),
    })
}
