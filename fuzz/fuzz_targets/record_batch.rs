//! v2 record batches read and validated: see `sluice_protocol::fuzzing::record_batch`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_protocol::fuzzing::record_batch(data));
