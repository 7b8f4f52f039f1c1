//! Builds a batch from arbitrary records (timestamps, nullable keys and values, headers)
//! with an arbitrary codec and producer fields, then reads it back: `RecordBatch::new`
//! and `validate` must accept it, and the header and every record must equal the input.
//!
//! The one input the reader rejects by contract is a header key that is not UTF-8
//! (Kafka's header keys are strings); then `validate` must fail with a typed error.
#![no_main]

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sluice_protocol::{
    Compression, Header, NewRecord, RecordBatch, RecordBatchBuilder, TimestampType,
};

#[derive(Debug, Arbitrary)]
struct Input {
    codec: u8,
    log_append_time: bool,
    producer: Option<(i64, i16, i32)>,
    transactional: bool,
    base_offset: i64,
    partition_leader_epoch: i32,
    records: Vec<InputRecord>,
}

#[derive(Debug, Arbitrary)]
struct InputRecord {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

fuzz_target!(|input: Input| {
    let codec = Compression::ALL[usize::from(input.codec) % Compression::ALL.len()];
    let timestamp_type = if input.log_append_time {
        TimestampType::LogAppendTime
    } else {
        TimestampType::CreateTime
    };
    // Offsets a log can hold: a batch at a negative base offset, or one whose offsets
    // run past i64::MAX, is refused by `validate` (BatchError::OffsetOverflow).
    let base_offset = input.base_offset.rem_euclid(1 << 62);
    let mut builder = RecordBatchBuilder::new(codec)
        .base_offset(base_offset)
        .partition_leader_epoch(input.partition_leader_epoch)
        .timestamp_type(timestamp_type)
        .transactional(input.transactional);
    if let Some((id, epoch, sequence)) = input.producer {
        builder = builder.producer(id, epoch, sequence);
    }
    let records: Vec<NewRecord> = input
        .records
        .iter()
        .map(|r| NewRecord {
            timestamp: r.timestamp,
            key: r.key.clone().map(Bytes::from),
            value: r.value.clone().map(Bytes::from),
            headers: r
                .headers
                .iter()
                .map(|(key, value)| Header {
                    key: Bytes::from(key.clone()),
                    value: value.clone().map(Bytes::from),
                })
                .collect(),
        })
        .collect();
    // The builder refuses what its reader would reject (timestamps more than i64::MAX
    // apart, non-UTF-8 header keys); the batch holds exactly the records it accepted.
    let mut accepted = Vec::new();
    for record in &records {
        let utf8_keys = record.headers.iter().all(|h| std::str::from_utf8(&h.key).is_ok());
        match builder.append(record) {
            Ok(()) => accepted.push(record.clone()),
            Err(_) => assert!(
                !utf8_keys
                    || accepted.first().is_some_and(|first: &NewRecord| {
                        record.timestamp.checked_sub(first.timestamp).is_none()
                    }),
                "the builder refused a record it can write"
            ),
        }
    }
    let records = accepted;
    assert_eq!(builder.record_count() as usize, records.len());
    let bytes = builder.build();

    let batch = RecordBatch::new(bytes).expect("RecordBatch::new rejected a built batch");
    if let Err(error) = batch.validate() {
        panic!("validate rejected a built batch: {error}");
    }

    // Header.
    assert_eq!(batch.compression().unwrap(), codec);
    assert_eq!(batch.timestamp_type(), timestamp_type);
    assert_eq!(batch.base_offset(), base_offset);
    assert_eq!(batch.partition_leader_epoch(), input.partition_leader_epoch);
    assert_eq!(batch.is_transactional(), input.transactional);
    assert!(!batch.is_control());
    assert_eq!(batch.record_count() as usize, records.len());
    assert_eq!(
        batch.last_offset_delta(),
        (records.len() as i32 - 1).max(0)
    );
    let (producer_id, producer_epoch, base_sequence) = input.producer.unwrap_or((-1, -1, -1));
    assert_eq!(batch.producer_id(), producer_id);
    assert_eq!(batch.producer_epoch(), producer_epoch);
    assert_eq!(batch.base_sequence(), base_sequence);
    assert_eq!(
        batch.base_timestamp(),
        records.first().map_or(-1, |r| r.timestamp)
    );
    assert_eq!(
        batch.max_timestamp(),
        records.iter().map(|r| r.timestamp).fold(-1, i64::max)
    );

    // Records.
    let read: Vec<_> = batch
        .records()
        .expect("records() of a validated batch")
        .map(|r| r.expect("record of a validated batch"))
        .collect();
    assert_eq!(read.len(), records.len());
    for (index, (got, want)) in read.iter().zip(&records).enumerate() {
        assert_eq!(got.offset_delta, index as i32);
        assert_eq!(got.timestamp, want.timestamp, "record {index} timestamp");
        assert_eq!(got.key, want.key, "record {index} key");
        assert_eq!(got.value, want.value, "record {index} value");
        assert_eq!(got.headers, want.headers, "record {index} headers");
        let expected_timestamp = match timestamp_type {
            TimestampType::CreateTime => want.timestamp,
            TimestampType::LogAppendTime => batch.max_timestamp(),
        };
        assert_eq!(batch.record_timestamp(got), expected_timestamp);
    }
});
