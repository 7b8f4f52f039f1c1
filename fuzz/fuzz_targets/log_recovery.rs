//! A partition log opened from arbitrary segment files, read and appended to: see
//! `sluice_storage::fuzzing::log_recovery` (it describes the input layout).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_storage::fuzzing::log_recovery(data));
