//! Kafka's codecs under a size limit: see `sluice_protocol::fuzzing::decompress`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_protocol::fuzzing::decompress(data));
