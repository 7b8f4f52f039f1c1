//! Transaction indexes and transaction markers: see `sluice_storage::fuzzing::txn_index`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_storage::fuzzing::txn_index(data));
