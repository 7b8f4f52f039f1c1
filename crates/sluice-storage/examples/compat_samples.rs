//! Writes what the compat suite (`compat/run.sh`) hands to third-party code:
//!
//! - `<out>/batches/<codec>.batches` + `expected.json`: the fixture records (plus a few
//!   large ones that cross the codecs' block sizes) as v2 batches from Sluice's builder,
//!   for `compat/batches/check.py` (Java client decode, Kafka broker validation,
//!   librdkafka and Java consumers).
//! - `<out>/log/`: a log directory written by Sluice's storage (several segments per
//!   partition, dense indexes, a LogAppendTime partition), cleanly shut down, for
//!   Kafka's DumpLogSegments to read and check against `sluice dump-log`.
//!
//! Usage: `cargo run -p sluice-storage --example compat_samples -- <expected.json> <out>`

use std::path::Path;

use bytes::Bytes;
use sluice_protocol::{Compression, Header, NewRecord, RecordBatchBuilder, TimestampType};
use sluice_storage::{LogConfig, LogManager, TopicPartition};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: compat_samples <expected.json> <out dir>");
        std::process::exit(2);
    }
    let mut records = read_records(Path::new(&args[1]));
    let first = records.len();
    // Large values cross snappy's 32 KiB and lz4's 64 KiB blocks.
    for (i, size) in [70_000usize, 150_000, 33_000].iter().enumerate() {
        let offset = first + i;
        let text: String = (0..*size)
            .map(|j| (b'a' + ((j * 7 + j / 13 + offset) % 26) as u8) as char)
            .collect();
        records.push(NewRecord {
            timestamp: 1_700_000_100_000 + i as i64,
            key: Some(Bytes::from(format!("big-{offset}"))),
            value: Some(Bytes::from(text)),
            headers: vec![Header {
                key: Bytes::from_static(b"size"),
                value: Some(Bytes::from(size.to_string())),
            }],
        });
    }
    let out = Path::new(&args[2]);
    let batches_dir = out.join("batches");
    std::fs::create_dir_all(&batches_dir).expect("create the batches dir");
    write_expected(&batches_dir.join("expected.json"), &records);
    // Batches of 20, 23, 17 records (as the Java client batched the fixtures), then 3.
    let groups = [20usize, 23, 17, 3];
    for codec in Compression::ALL {
        let bytes = build_batches(codec, &records, &groups);
        let path = batches_dir.join(format!("{}.batches", codec.name()));
        std::fs::write(&path, bytes).expect("write batches");
    }

    let log_dir = out.join("log");
    let config = LogConfig {
        segment_bytes: 4 * 1024,
        index_interval_bytes: 512,
        ..LogConfig::default()
    };
    let mut manager = LogManager::open(&log_dir, config.clone()).expect("open the log dir");
    let partition = TopicPartition::new("sample", 0);
    let log = manager
        .get_or_create(
            &partition,
            Some(sluice_storage::TopicId(*b"sluice-sample-id")),
            None,
        )
        .expect("create the log");
    {
        let mut log = sluice_storage::lock(&log);
        for (round, codec) in Compression::ALL.into_iter().enumerate() {
            let small = &records[..first];
            let mut bytes = build_batches(codec, small, &[20, 23, 17]);
            log.append_as_leader(&mut bytes, round as i32, 1_700_000_200_000)
                .expect("append");
        }
    }
    let append_time = TopicPartition::new("sample-append-time", 0);
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..config
    };
    let log = manager
        .get_or_create(&append_time, None, Some(config))
        .expect("create the log");
    let mut log = sluice_storage::lock(&log);
    let mut bytes = build_batches(Compression::Lz4, &records[..first], &[20, 23, 17]);
    log.append_as_leader(&mut bytes, 0, 1_700_000_300_000)
        .expect("append");
    drop(log);
    manager.shutdown().expect("clean shutdown");
}

fn build_batches(codec: Compression, records: &[NewRecord], groups: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = 0usize;
    for &size in groups {
        let end = (next + size).min(records.len());
        if next == end {
            break;
        }
        let mut builder = RecordBatchBuilder::new(codec).base_offset(next as i64);
        for record in &records[next..end] {
            builder
                .append(record)
                .expect("fixture timestamps are close together");
        }
        out.extend_from_slice(&builder.build());
        next = end;
    }
    out
}

fn read_records(path: &Path) -> Vec<NewRecord> {
    let text = std::fs::read_to_string(path).expect("read expected.json");
    let json: serde_json::Value = serde_json::from_str(&text).expect("parse expected.json");
    let bytes = |v: &serde_json::Value| v.as_str().map(|s| Bytes::from(s.to_string()));
    json.as_array()
        .expect("a list of records")
        .iter()
        .map(|r| NewRecord {
            timestamp: r["timestamp"].as_i64().expect("timestamp"),
            key: bytes(&r["key"]),
            value: bytes(&r["value"]),
            headers: r["headers"]
                .as_array()
                .expect("headers")
                .iter()
                .map(|h| Header {
                    key: bytes(&h[0]).expect("header key"),
                    value: bytes(&h[1]),
                })
                .collect(),
        })
        .collect()
}

fn write_expected(path: &Path, records: &[NewRecord]) {
    let text = |b: &Option<Bytes>| match b {
        Some(b) => serde_json::Value::String(String::from_utf8(b.to_vec()).expect("UTF-8")),
        None => serde_json::Value::Null,
    };
    let list: Vec<serde_json::Value> = records
        .iter()
        .map(|r| {
            serde_json::json!({
                "timestamp": r.timestamp,
                "key": text(&r.key),
                "value": text(&r.value),
                "headers": r.headers.iter().map(|h| serde_json::json!([text(&Some(h.key.clone())), text(&h.value)])).collect::<Vec<_>>(),
            })
        })
        .collect();
    std::fs::write(
        path,
        serde_json::to_string_pretty(&list).expect("serialize"),
    )
    .expect("write expected.json");
}
