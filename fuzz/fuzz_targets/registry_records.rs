//! `_schemas` records and wire-format headers: see `sluice_registry::fuzzing::records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_registry::fuzzing::records(data));
