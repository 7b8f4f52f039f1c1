//! Kafka's variable-length integers: zig-zag encoded, 7 bits per byte, least significant
//! group first (the protobuf encoding). A `varint` is an `i32` in at most 5 bytes, a
//! `varlong` an `i64` in at most 10. Record fields inside a v2 batch use them.
//!
//! Decoding never panics: a value that runs past the end of the input or past the
//! maximum width is an error the caller turns into its own typed error.

/// Why a varint could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The input ended before the last byte of the value (its high bit was still set).
    Truncated,
    /// More continuation bytes than the type can hold.
    TooLong,
}

/// Reads a zig-zag varint (`i32`) from the front of `input`; returns it and the bytes used.
pub fn read_varint(input: &[u8]) -> Result<(i32, usize), VarintError> {
    let (raw, used) = read_unsigned(input, 5)?;
    if raw > u64::from(u32::MAX) {
        return Err(VarintError::TooLong);
    }
    let raw = raw as u32;
    Ok((((raw >> 1) as i32) ^ -((raw & 1) as i32), used))
}

/// Reads a zig-zag varlong (`i64`) from the front of `input`; returns it and the bytes used.
pub fn read_varlong(input: &[u8]) -> Result<(i64, usize), VarintError> {
    let (raw, used) = read_unsigned(input, 10)?;
    Ok((((raw >> 1) as i64) ^ -((raw & 1) as i64), used))
}

fn read_unsigned(input: &[u8], max_bytes: usize) -> Result<(u64, usize), VarintError> {
    let mut value: u64 = 0;
    for (index, &byte) in input.iter().enumerate() {
        if index == max_bytes {
            return Err(VarintError::TooLong);
        }
        let shift = 7 * index as u32;
        let group = u64::from(byte & 0x7f);
        // The tenth byte of a varlong may only carry the top bit of the value.
        if shift == 63 && group > 1 {
            return Err(VarintError::TooLong);
        }
        value |= group << shift;
        if byte & 0x80 == 0 {
            return Ok((value, index + 1));
        }
    }
    if input.len() >= max_bytes {
        Err(VarintError::TooLong)
    } else {
        Err(VarintError::Truncated)
    }
}

/// Appends `value` as a zig-zag varint.
pub fn write_varint(out: &mut Vec<u8>, value: i32) {
    write_unsigned(out, ((value << 1) ^ (value >> 31)) as u32 as u64);
}

/// Appends `value` as a zig-zag varlong.
pub fn write_varlong(out: &mut Vec<u8>, value: i64) {
    write_unsigned(out, ((value << 1) ^ (value >> 63)) as u64);
}

fn write_unsigned(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// The encoded width of `value` as a varint, without writing it.
pub fn varint_size(value: i32) -> usize {
    unsigned_size(((value << 1) ^ (value >> 31)) as u32 as u64)
}

/// The encoded width of `value` as a varlong, without writing it.
pub fn varlong_size(value: i64) -> usize {
    unsigned_size(((value << 1) ^ (value >> 63)) as u64)
}

fn unsigned_size(value: u64) -> usize {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        // (value, bytes) pairs from Kafka's ByteUtils tests' zig-zag examples.
        let cases: &[(i32, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-2, &[0x03]),
            (63, &[0x7e]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (i32::MAX, &[0xfe, 0xff, 0xff, 0xff, 0x0f]),
            (i32::MIN, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for (value, bytes) in cases {
            let mut out = Vec::new();
            write_varint(&mut out, *value);
            assert_eq!(&out[..], *bytes, "encoding {value}");
            assert_eq!(read_varint(bytes), Ok((*value, bytes.len())));
            assert_eq!(varint_size(*value), bytes.len());
        }
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(read_varint(&[]), Err(VarintError::Truncated));
        assert_eq!(read_varint(&[0x80, 0x80]), Err(VarintError::Truncated));
        assert_eq!(
            read_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
            Err(VarintError::TooLong)
        );
        // Five bytes whose value exceeds 32 bits.
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f]),
            Err(VarintError::TooLong)
        );
        assert_eq!(read_varlong(&[0xff; 11]), Err(VarintError::TooLong));
        assert_eq!(
            read_varlong(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]),
            Err(VarintError::TooLong)
        );
    }

    proptest! {
        #[test]
        fn varint_round_trips(value: i32, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut out = Vec::new();
            write_varint(&mut out, value);
            prop_assert_eq!(out.len(), varint_size(value));
            let used = out.len();
            out.extend_from_slice(&tail);
            prop_assert_eq!(read_varint(&out), Ok((value, used)));
        }

        #[test]
        fn varlong_round_trips(value: i64) {
            let mut out = Vec::new();
            write_varlong(&mut out, value);
            prop_assert_eq!(out.len(), varlong_size(value));
            prop_assert_eq!(read_varlong(&out), Ok((value, out.len())));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let _ = read_varint(&bytes);
            let _ = read_varlong(&bytes);
        }
    }
}
