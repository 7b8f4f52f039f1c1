//! Batches built and read back: see `sluice_protocol::fuzzing::builder_roundtrip` (the
//! input layout is `sluice_protocol::fuzzing::BuilderInput`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_protocol::fuzzing::builder_roundtrip(data));
