//! Kafka's checkpoint and partition.metadata files: see
//! `sluice_storage::fuzzing::checkpoints`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_storage::fuzzing::checkpoints(data));
