//! Varints and varlongs: see `sluice_protocol::fuzzing::varint`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_protocol::fuzzing::varint(data));
