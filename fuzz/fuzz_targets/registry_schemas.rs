//! Schema texts of the three types: see `sluice_registry::fuzzing::schemas`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_registry::fuzzing::schemas(data));
