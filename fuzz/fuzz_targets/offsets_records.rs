//! The keys and values of `__consumer_offsets`: see `sluice_group::fuzzing::offsets_records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_group::fuzzing::offsets_records(data));
