//! Opens a partition log whose only segment is arbitrary bytes, as after a crash or a
//! damaged disk, then reads it all and appends to it. Nothing may panic; an `Err` is fine.
//!
//! Input layout:
//! - byte 0: flags. Bit 0: `clean_shutdown`. Bit 1: also write `.index` and
//!   `.timeindex` files. Bit 2: the segment's base offset (its file name) follows.
//! - with bit 2: a big-endian u64 whose low 63 bits are the base offset (else 0);
//! - with bit 1: a big-endian u16 `.index` length, a u16 `.timeindex` length, then that
//!   many bytes of each (cut to what is there);
//! - the rest: the `.log` file, `{base offset:020}.log` (`00000000000000000000.log`
//!   unless bit 2 is set).
//!
//! After an unclean open (recovery), stricter checks hold: every batch read back passes
//! its header and CRC checks with base offsets increasing, and a valid batch appended as
//! leader lands at the old log end offset and reads back unchanged. After a "clean"
//! open the segment is trusted as it is, so only the absence of panics is checked.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use sluice_protocol::{Compression, Header, NewRecord, RecordBatch, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions, segment_file_name};

const NOW_MS: i64 = 1_700_000_000_000;

fn scratch_root() -> &'static std::path::Path {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() { shm } else { std::path::Path::new("/tmp") }
}

struct Layout<'a> {
    clean_shutdown: bool,
    base_offset: i64,
    indexes: Option<(&'a [u8], &'a [u8])>,
    log: &'a [u8],
}

fn split(data: &[u8]) -> Option<Layout<'_>> {
    let (&flags, mut rest) = data.split_first()?;
    let mut base_offset = 0;
    if flags & 0x04 != 0 {
        let (bytes, tail) = rest.split_first_chunk::<8>()?;
        base_offset = (u64::from_be_bytes(*bytes) & i64::MAX as u64) as i64;
        rest = tail;
    }
    let mut indexes = None;
    if flags & 0x02 != 0 {
        let (lengths, tail) = rest.split_first_chunk::<4>()?;
        let index_length = usize::from(u16::from_be_bytes([lengths[0], lengths[1]])).min(tail.len());
        let (index, tail) = tail.split_at(index_length);
        let time_length = usize::from(u16::from_be_bytes([lengths[2], lengths[3]])).min(tail.len());
        let (time_index, tail) = tail.split_at(time_length);
        indexes = Some((index, time_index));
        rest = tail;
    }
    Some(Layout {
        clean_shutdown: flags & 0x01 != 0,
        base_offset,
        indexes,
        log: rest,
    })
}

fuzz_target!(|data: &[u8]| {
    let Some(Layout { clean_shutdown, base_offset, indexes, log: log_bytes }) = split(data) else {
        return;
    };
    let dir = tempfile::tempdir_in(scratch_root()).expect("a scratch directory");
    let partition = dir.path().join("topic-0");
    std::fs::create_dir(&partition).unwrap();
    std::fs::write(partition.join(segment_file_name(base_offset, ".log")), log_bytes).unwrap();
    if let Some((index, time_index)) = indexes {
        std::fs::write(partition.join(segment_file_name(base_offset, ".index")), index).unwrap();
        std::fs::write(partition.join(segment_file_name(base_offset, ".timeindex")), time_index)
            .unwrap();
    }

    let options = LogOpenOptions {
        clean_shutdown,
        now_ms: NOW_MS,
        ..Default::default()
    };
    let Ok(mut log) = Log::open(&partition, LogConfig::default(), options) else {
        return;
    };
    let strict = !clean_shutdown;
    let start = log.log_start_offset();
    let end = log.log_end_offset();
    assert!(start <= end, "log start {start} is past log end {end}");

    // Read everything and walk the batches.
    match log.read(start, 1 << 20, None, true) {
        Ok(fetch) => {
            let mut previous_last: Option<i64> = None;
            for batch in batches(fetch.records) {
                let batch = match batch {
                    Ok(batch) => batch,
                    Err(error) => {
                        assert!(!strict, "recovered log returned an unparseable batch: {error}");
                        break;
                    }
                };
                let header = batch.validate_header();
                let _ = batch.validate();
                if let Ok(records) = batch.records() {
                    records.for_each(drop);
                }
                if strict {
                    header.unwrap_or_else(|e| panic!("recovered batch fails its checks: {e}"));
                    assert!(
                        previous_last.is_none_or(|p| batch.base_offset() > p),
                        "recovered batches out of order"
                    );
                    assert!(batch.last_offset() < end, "batch past the log end offset");
                    previous_last = Some(batch.last_offset());
                }
            }
        }
        Err(error) => {
            assert!(!strict, "reading a recovered log failed: {error}");
        }
    }

    // Append a valid batch as leader and read it back.
    let records: Vec<NewRecord> = (0..3i64)
        .map(|i| NewRecord {
            timestamp: NOW_MS + i,
            key: Some(Bytes::from(format!("key-{i}"))),
            value: (i != 1).then(|| Bytes::from_static(b"value")),
            headers: vec![Header {
                key: Bytes::from_static(b"h"),
                value: None,
            }],
        })
        .collect();
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for record in &records {
        builder
            .append(record)
            .expect("records one millisecond apart with UTF-8 header keys are accepted");
    }
    let mut appended = builder.build().to_vec();
    let info = match log.append_as_leader(&mut appended, 0, NOW_MS) {
        Ok(info) => info,
        Err(error) => {
            // With no room left for three more offsets, refusing the append is right.
            assert!(
                !strict || end > i64::MAX - 3,
                "appending to a recovered log failed: {error}"
            );
            return;
        }
    };
    let fetch = log.read(info.first_offset, 1 << 20, None, true);
    if !strict {
        if let Ok(fetch) = fetch {
            for batch in batches(fetch.records).flatten() {
                let _ = batch.validate();
            }
        }
        return;
    }
    assert_eq!(info.first_offset, end, "append did not start at the log end offset");
    assert_eq!(info.last_offset, end + 2);
    assert_eq!(log.log_end_offset(), end + 3);
    let fetch = fetch.unwrap_or_else(|e| panic!("reading the appended batch failed: {e}"));
    let batch: RecordBatch = batches(fetch.records)
        .next()
        .expect("the appended batch is read back")
        .expect("the appended batch parses");
    batch.validate().expect("the appended batch validates");
    assert_eq!(batch.base_offset(), end);
    assert_eq!(batch.partition_leader_epoch(), 0);
    let read: Vec<_> = batch.records().unwrap().map(Result::unwrap).collect();
    assert_eq!(read.len(), records.len());
    for (got, want) in read.iter().zip(&records) {
        assert_eq!((&got.key, &got.value, &got.headers), (&want.key, &want.value, &want.headers));
        assert_eq!(got.timestamp, want.timestamp);
    }
});
