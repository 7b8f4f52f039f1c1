//! Splits arbitrary bytes into v2 record batches (as a fetch response or a segment file
//! is split) and reads every batch that parses: every header getter, `validate`, and the
//! records iterated to the end. Nothing may panic.
//!
//! Also checks what `validate` promises: a batch it accepts yields exactly
//! `record_count` records, with offset deltas strictly increasing and at most
//! `last_offset_delta`.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sluice_protocol::{RecordBatch, batches};

fuzz_target!(|data: &[u8]| {
    for batch in batches(Bytes::copy_from_slice(data)) {
        match batch {
            Ok(batch) => exercise(&batch),
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
});

fn exercise(batch: &RecordBatch) {
    let _ = format!("{batch:?}");
    assert_eq!(batch.bytes().len(), batch.size_bytes());
    assert_eq!(i64::from(batch.batch_length()) + 12, batch.size_bytes() as i64);
    assert_eq!(batch.magic(), 2);
    let _ = batch.base_offset();
    let _ = batch.partition_leader_epoch();
    let _ = batch.crc();
    let _ = batch.attributes();
    let compression = batch.compression();
    let _ = batch.timestamp_type();
    let _ = batch.is_transactional();
    let _ = batch.is_control();
    let _ = batch.has_delete_horizon();
    let _ = batch.last_offset_delta();
    let _ = batch.last_offset();
    let _ = batch.next_offset();
    let _ = batch.base_timestamp();
    let _ = batch.max_timestamp();
    let _ = batch.producer_id();
    let _ = batch.producer_epoch();
    let _ = batch.base_sequence();
    let _ = batch.record_count();
    let _ = batch.compute_crc();
    let crc_ok = batch.verify_crc().is_ok();
    let header_ok = batch.validate_header().is_ok();
    assert!(!header_ok || (crc_ok && compression.is_ok()));

    let valid = batch.validate().is_ok();
    assert!(!valid || header_ok, "validate passed where validate_header failed");

    let Ok(records) = batch.records() else {
        assert!(!valid, "validate passed but records() failed");
        return;
    };
    let mut count = 0usize;
    let mut previous: Option<i32> = None;
    for record in records {
        match record {
            Ok(record) => {
                let _ = batch.record_timestamp(&record);
                if valid {
                    assert!(record.offset_delta <= batch.last_offset_delta());
                    assert!(previous.is_none_or(|p| p < record.offset_delta));
                    previous = Some(record.offset_delta);
                }
                count += 1;
            }
            Err(error) => {
                assert!(!valid, "validate passed but record {count} failed: {error}");
                let _ = error.to_string();
            }
        }
    }
    if valid {
        assert_eq!(count as i64, i64::from(batch.record_count()));
    }
}
