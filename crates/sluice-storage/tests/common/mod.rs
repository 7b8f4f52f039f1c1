//! Shared helpers for the log's integration tests.
#![allow(dead_code)]

use std::path::Path;

use bytes::Bytes;
use sluice_protocol::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions};

/// A batch of `count` records with timestamps `first_timestamp + i` and values of
/// `value_bytes` bytes each.
pub fn batch(
    count: usize,
    codec: Compression,
    first_timestamp: i64,
    value_bytes: usize,
) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(codec);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp: first_timestamp + i as i64,
                key: Some(Bytes::from(format!("key-{i}"))),
                value: Some(Bytes::from(vec![b'a' + (i % 26) as u8; value_bytes])),
                headers: vec![],
            })
            .unwrap();
    }
    builder.build().to_vec()
}

pub fn open(dir: &Path, config: LogConfig) -> Log {
    Log::open(dir, config, LogOpenOptions::default()).unwrap()
}

pub fn open_clean(dir: &Path, config: LogConfig) -> Log {
    let options = LogOpenOptions {
        clean_shutdown: true,
        ..LogOpenOptions::default()
    };
    Log::open(dir, config, options).unwrap()
}

/// Every batch of the log from its start, read in pieces of `max_bytes`.
pub fn read_batches(log: &Log, max_bytes: u64) -> Vec<RecordBatch> {
    let mut out: Vec<RecordBatch> = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log.read(offset, max_bytes, None, true).unwrap();
        assert!(
            !data.records.is_empty(),
            "read at {offset} returned nothing"
        );
        for batch in batches(data.records) {
            let batch = batch.unwrap();
            offset = batch.next_offset();
            out.push(batch);
        }
    }
    out
}

/// A config with small segments for tests.
pub fn small_segments(segment_bytes: u32) -> LogConfig {
    LogConfig {
        segment_bytes,
        index_interval_bytes: 256,
        ..LogConfig::default()
    }
}
