//! Decompresses arbitrary bytes with each of Kafka's codecs under a 1 MiB limit: never
//! a panic, never more than the limit. The first byte picks the codec (low 3 bits,
//! modulo the five codecs); when its top bit is set the rest is instead compressed and
//! must decompress back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_protocol::compression::{Compression, compress, decompress};

const LIMIT: usize = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let codec = Compression::ALL[usize::from(selector & 0x07) % Compression::ALL.len()];
    if selector & 0x80 != 0 {
        let compressed = compress(codec, input);
        let output = decompress(codec, &compressed, LIMIT.max(input.len()))
            .unwrap_or_else(|error| panic!("{} round trip failed: {error}", codec.name()));
        assert_eq!(output, input, "{} round trip changed the data", codec.name());
        return;
    }
    match decompress(codec, input, LIMIT) {
        Ok(output) => assert!(
            output.len() <= LIMIT,
            "{} returned {} bytes, over the {LIMIT} limit",
            codec.name(),
            output.len()
        ),
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
