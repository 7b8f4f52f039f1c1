//! Kafka's compression codecs for the records section of a v2 batch: gzip, snappy, lz4
//! and zstd, in the framings the Java client writes and librdkafka reads.
//!
//! - gzip: an RFC 1952 stream (Java's `GZIPOutputStream`), level 6 by default as Kafka.
//! - snappy: the xerial `SnappyOutputStream` framing the Java client writes (an 16-byte
//!   header, then length-prefixed raw snappy blocks of at most 32 KiB input). Decoding
//!   also takes plain raw snappy, as librdkafka and the Java client do.
//! - lz4: the LZ4 frame format with independent 64 KiB blocks and no checksums but the
//!   header's, as Kafka's `Lz4BlockOutputStream`. Decoding takes any valid frame.
//! - zstd: a standard zstd frame, level 3 (Kafka's default).
//!
//! Decompression is always bounded: the caller passes the most bytes it will accept, so
//! a small batch cannot expand into an unbounded allocation (a "zip bomb").

use std::io::{Read, Write};

/// The codec of a batch: bits 0-2 of its attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    /// All codecs, in attribute order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec id stored in the batch attributes.
    pub fn id(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec for an attribute id; `None` for the reserved ids 5-7.
    pub fn from_id(id: u8) -> Option<Compression> {
        Some(match id {
            0 => Compression::None,
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            4 => Compression::Zstd,
            _ => return None,
        })
    }

    /// Kafka's name for the codec (`compression.type` values).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// Parses Kafka's name for a codec.
    pub fn from_name(name: &str) -> Option<Compression> {
        Compression::ALL
            .into_iter()
            .find(|codec| codec.name() == name)
    }
}

/// Why a records section could not be decompressed.
#[derive(Debug, thiserror::Error)]
pub enum CompressionError {
    #[error("{codec} data is corrupt: {reason}")]
    Corrupt { codec: &'static str, reason: String },
    #[error("decompressed {codec} data exceeds the limit of {limit_bytes} bytes")]
    TooLarge {
        codec: &'static str,
        limit_bytes: usize,
    },
}

/// The xerial snappy-java stream header: a magic, then version 1 and compatible version 1.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const XERIAL_HEADER_BYTES: usize = 16;
/// snappy-java's default block size, which the Java client uses.
const XERIAL_BLOCK_BYTES: usize = 32 * 1024;

/// Compresses `input` with `codec`. `Compression::None` copies it.
pub fn compress(codec: Compression, input: &[u8]) -> Vec<u8> {
    match codec {
        Compression::None => input.to_vec(),
        Compression::Gzip => {
            let mut encoder = flate2::write::GzEncoder::new(
                Vec::with_capacity(input.len() / 2 + 32),
                flate2::Compression::new(6),
            );
            encoder
                .write_all(input)
                .expect("writing to a Vec cannot fail");
            encoder.finish().expect("writing to a Vec cannot fail")
        }
        Compression::Snappy => {
            let mut out = Vec::with_capacity(XERIAL_HEADER_BYTES + input.len() / 2 + 32);
            out.extend_from_slice(&XERIAL_MAGIC);
            out.extend_from_slice(&1i32.to_be_bytes());
            out.extend_from_slice(&1i32.to_be_bytes());
            let mut encoder = snap::raw::Encoder::new();
            for block in input.chunks(XERIAL_BLOCK_BYTES) {
                let compressed = encoder
                    .compress_vec(block)
                    .expect("a 32 KiB block is within snappy's limits");
                out.extend_from_slice(&(compressed.len() as i32).to_be_bytes());
                out.extend_from_slice(&compressed);
            }
            out
        }
        Compression::Lz4 => {
            let mut info = lz4_flex::frame::FrameInfo::new();
            info.block_size = lz4_flex::frame::BlockSize::Max64KB;
            info.block_mode = lz4_flex::frame::BlockMode::Independent;
            info.block_checksums = false;
            info.content_checksum = false;
            let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(
                info,
                Vec::with_capacity(input.len() / 2 + 32),
            );
            encoder
                .write_all(input)
                .expect("writing to a Vec cannot fail");
            encoder.finish().expect("writing to a Vec cannot fail")
        }
        Compression::Zstd => zstd::bulk::compress(input, 3).expect("zstd level 3 is valid"),
    }
}

/// Decompresses `input` written with `codec`, refusing to produce more than `limit_bytes`.
pub fn decompress(
    codec: Compression,
    input: &[u8],
    limit_bytes: usize,
) -> Result<Vec<u8>, CompressionError> {
    match codec {
        Compression::None => {
            if input.len() > limit_bytes {
                return Err(CompressionError::TooLarge {
                    codec: codec.name(),
                    limit_bytes,
                });
            }
            Ok(input.to_vec())
        }
        Compression::Gzip => read_bounded(
            codec,
            flate2::read::MultiGzDecoder::new(input),
            limit_bytes,
            input.len(),
        ),
        Compression::Snappy => decompress_snappy(input, limit_bytes),
        Compression::Lz4 => read_bounded(
            codec,
            lz4_flex::frame::FrameDecoder::new(input),
            limit_bytes,
            input.len(),
        ),
        Compression::Zstd => {
            let decoder = zstd::stream::read::Decoder::with_buffer(input).map_err(|error| {
                CompressionError::Corrupt {
                    codec: codec.name(),
                    reason: error.to_string(),
                }
            })?;
            read_bounded(codec, decoder, limit_bytes, input.len())
        }
    }
}

fn read_bounded(
    codec: Compression,
    reader: impl Read,
    limit_bytes: usize,
    input_bytes: usize,
) -> Result<Vec<u8>, CompressionError> {
    // Start from a guess of the ratio, never from a size the input claims.
    let mut out = Vec::with_capacity((input_bytes * 4).min(limit_bytes));
    let mut limited = reader.take(limit_bytes as u64 + 1);
    limited
        .read_to_end(&mut out)
        .map_err(|error| CompressionError::Corrupt {
            codec: codec.name(),
            reason: error.to_string(),
        })?;
    if out.len() > limit_bytes {
        return Err(CompressionError::TooLarge {
            codec: codec.name(),
            limit_bytes,
        });
    }
    Ok(out)
}

fn decompress_snappy(input: &[u8], limit_bytes: usize) -> Result<Vec<u8>, CompressionError> {
    let corrupt = |reason: String| CompressionError::Corrupt {
        codec: "snappy",
        reason,
    };
    let too_large = CompressionError::TooLarge {
        codec: "snappy",
        limit_bytes,
    };
    let mut decoder = snap::raw::Decoder::new();
    if !input.starts_with(&XERIAL_MAGIC) {
        let length = snap::raw::decompress_len(input).map_err(|e| corrupt(e.to_string()))?;
        if length > limit_bytes {
            return Err(too_large);
        }
        return decoder
            .decompress_vec(input)
            .map_err(|e| corrupt(e.to_string()));
    }
    if input.len() < XERIAL_HEADER_BYTES {
        return Err(corrupt("xerial header is truncated".into()));
    }
    let mut out = Vec::new();
    let mut rest = &input[XERIAL_HEADER_BYTES..];
    while !rest.is_empty() {
        let Some((length_bytes, tail)) = rest.split_first_chunk::<4>() else {
            return Err(corrupt("xerial block length is truncated".into()));
        };
        let block_length = i32::from_be_bytes(*length_bytes);
        let block_length = usize::try_from(block_length)
            .map_err(|_| corrupt(format!("negative xerial block length {block_length}")))?;
        if block_length > tail.len() {
            return Err(corrupt(format!(
                "xerial block of {block_length} bytes exceeds the {} bytes left",
                tail.len()
            )));
        }
        let (block, next) = tail.split_at(block_length);
        let decoded_length =
            snap::raw::decompress_len(block).map_err(|e| corrupt(e.to_string()))?;
        if out.len() + decoded_length > limit_bytes {
            return Err(too_large);
        }
        let start = out.len();
        out.resize(start + decoded_length, 0);
        decoder
            .decompress(block, &mut out[start..])
            .map_err(|e| corrupt(e.to_string()))?;
        rest = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips_across_block_boundaries() {
        for codec in Compression::ALL {
            for len in [0, 1, 100, 32 * 1024, 32 * 1024 + 1, 200_000] {
                let input = sample(len);
                let compressed = compress(codec, &input);
                let output = decompress(codec, &compressed, len.max(1)).unwrap();
                assert_eq!(output, input, "{} with {len} bytes", codec.name());
            }
        }
    }

    #[test]
    fn decompression_is_bounded() {
        let input = vec![0u8; 1 << 20];
        for codec in Compression::ALL {
            let compressed = compress(codec, &input);
            let error = decompress(codec, &compressed, 1000).unwrap_err();
            assert!(
                matches!(
                    error,
                    CompressionError::TooLarge {
                        limit_bytes: 1000,
                        ..
                    }
                ),
                "{}: {error}",
                codec.name()
            );
        }
    }

    #[test]
    fn snappy_decodes_raw_blocks_as_librdkafka_may_send() {
        let input = sample(5000);
        let raw = snap::raw::Encoder::new().compress_vec(&input).unwrap();
        assert_eq!(
            decompress(Compression::Snappy, &raw, 10_000).unwrap(),
            input
        );
    }

    #[test]
    fn codec_names_and_ids_round_trip() {
        for codec in Compression::ALL {
            assert_eq!(Compression::from_id(codec.id()), Some(codec));
            assert_eq!(Compression::from_name(codec.name()), Some(codec));
        }
        assert_eq!(Compression::from_id(5), None);
        assert_eq!(Compression::from_name("brotli"), None);
    }

    proptest! {
        #[test]
        fn garbage_never_panics(codec_id in 1u8..5, bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let codec = Compression::from_id(codec_id).unwrap();
            let _ = decompress(codec, &bytes, 1 << 16);
        }
    }
}
