//! The keys and values of `__transaction_state`: see `sluice_txn::fuzzing::txn_records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sluice_txn::fuzzing::txn_records(data));
