//! Connect's group formats, internal topics' records and JSON converter input: see
//! `sluice_connect::fuzzing::records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_connect::fuzzing::records(data));
