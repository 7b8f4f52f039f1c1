//! The classic consumer protocol's subscriptions and assignments: see
//! `sluice_protocol::fuzzing::consumer_protocol`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_protocol::fuzzing::consumer_protocol(data));
