//! Segments written by Apache Kafka 4.1 from batches of the Java client and librdkafka
//! (captured by `compat/fixtures/capture.sh`): Sluice must read them, rebuild the same
//! files from the same batches, and its builder must reproduce the Java client's bytes.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use sluice_protocol::{Compression, Header, NewRecord, RecordBatch, RecordBatchBuilder, batches};
use sluice_storage::{Log, LogConfig, LogOpenOptions};

const CLIENTS: [&str; 2] = ["java", "librdkafka"];
const SEGMENT: &str = "00000000000000000000";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kafka")
}

#[derive(Debug, PartialEq)]
struct Expected {
    timestamp: i64,
    key: Option<String>,
    value: Option<String>,
    headers: Vec<(String, Option<String>)>,
}

fn expected() -> Vec<Expected> {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let string = |v: &serde_json::Value| v.as_str().map(str::to_string);
    json.as_array()
        .unwrap()
        .iter()
        .map(|r| Expected {
            timestamp: r["timestamp"].as_i64().unwrap(),
            key: string(&r["key"]),
            value: string(&r["value"]),
            headers: r["headers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| (h[0].as_str().unwrap().to_string(), string(&h[1])))
                .collect(),
        })
        .collect()
}

fn utf8(bytes: &Option<Bytes>) -> Option<String> {
    bytes
        .as_ref()
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
}

/// Every (client, codec) fixture directory.
fn cases() -> Vec<(String, Compression, PathBuf)> {
    let mut cases = Vec::new();
    for client in CLIENTS {
        for codec in Compression::ALL {
            let name = format!("{client}-{}", codec.name());
            cases.push((name.clone(), codec, fixtures().join(&name)));
        }
    }
    cases
}

/// Decodes all records of a log, checking offsets are contiguous from 0.
fn read_all(log: &Log) -> Vec<Expected> {
    let data = log.read(0, u64::MAX / 2, None, true).unwrap();
    let mut out = Vec::new();
    for batch in batches(data.records) {
        let batch = batch.unwrap();
        batch.validate().unwrap();
        for record in batch.records().unwrap() {
            let record = record.unwrap();
            assert_eq!(
                batch.base_offset() + i64::from(record.offset_delta),
                out.len() as i64,
                "offsets must be contiguous"
            );
            out.push(Expected {
                timestamp: batch.record_timestamp(&record),
                key: utf8(&record.key),
                value: utf8(&record.value),
                headers: record
                    .headers
                    .iter()
                    .map(|h| (String::from_utf8(h.key.to_vec()).unwrap(), utf8(&h.value)))
                    .collect(),
            });
        }
    }
    out
}

fn copy_segment(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for suffix in [".log", ".index", ".timeindex"] {
        let name = format!("{SEGMENT}{suffix}");
        std::fs::copy(from.join(&name), to.join(&name)).unwrap();
    }
}

#[test]
fn kafka_segments_read_back_with_every_codec_after_clean_and_unclean_opens() {
    let expected = expected();
    assert_eq!(expected.len(), 60);
    for (name, codec, dir) in cases() {
        for clean_shutdown in [true, false] {
            let temp = tempfile::tempdir().unwrap();
            let partition = temp.path().join(format!("{name}-0"));
            copy_segment(&dir, &partition);
            let options = LogOpenOptions {
                clean_shutdown,
                ..LogOpenOptions::default()
            };
            let log = Log::open(&partition, LogConfig::default(), options).unwrap();
            assert_eq!(log.log_end_offset(), 60, "{name}");
            let data = log.read(0, 1 << 20, None, true).unwrap();
            for batch in batches(data.records) {
                assert_eq!(batch.unwrap().compression().unwrap(), codec, "{name}");
            }
            assert_eq!(read_all(&log), expected, "{name} clean={clean_shutdown}");
        }
    }
}

#[test]
fn appending_kafkas_batches_rebuilds_kafkas_files_byte_for_byte() {
    for (name, _, dir) in cases() {
        let temp = tempfile::tempdir().unwrap();
        let partition = temp.path().join(format!("{name}-0"));
        let config = LogConfig {
            index_interval_bytes: 1,
            ..LogConfig::default()
        };
        let mut log = Log::open(&partition, config, LogOpenOptions::default()).unwrap();
        let kafka_log = std::fs::read(dir.join(format!("{SEGMENT}.log"))).unwrap();
        // One append per batch, as Kafka received them.
        for batch in batches(Bytes::from(kafka_log.clone())) {
            log.append_as_follower(batch.unwrap().bytes(), 0).unwrap();
        }
        log.close().unwrap();
        for suffix in [".log", ".index", ".timeindex"] {
            let file = format!("{SEGMENT}{suffix}");
            assert_eq!(
                std::fs::read(partition.join(&file)).unwrap(),
                std::fs::read(dir.join(&file)).unwrap(),
                "{name}: {file} differs from Kafka's"
            );
        }
    }
}

/// A builder with the header fields of `batch` (offsets, epoch, producer), no codec.
fn uncompressed_builder_like(batch: &RecordBatch) -> RecordBatchBuilder {
    RecordBatchBuilder::new(Compression::None)
        .base_offset(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
}

#[test]
fn builder_reproduces_the_java_clients_uncompressed_batches() {
    let kafka_log = std::fs::read(fixtures().join(format!("java-none/{SEGMENT}.log"))).unwrap();
    let mut compared = 0;
    for batch in batches(Bytes::from(kafka_log)) {
        let batch = batch.unwrap();
        let mut builder = uncompressed_builder_like(&batch);
        for record in batch.records().unwrap() {
            let record = record.unwrap();
            builder
                .append(&NewRecord {
                    timestamp: record.timestamp,
                    key: record.key,
                    value: record.value,
                    headers: record.headers,
                })
                .unwrap();
        }
        assert_eq!(
            builder.build(),
            batch.bytes(),
            "batch at {}",
            batch.base_offset()
        );
        compared += 1;
    }
    assert_eq!(compared, 3);
}

#[test]
fn builder_rebuilds_the_expected_records_as_the_java_client_batched_them() {
    // From expected.json alone (no bytes from the fixture but the producer fields), the
    // builder writes the Java client's batches: groups of 20, 23 and 17 records.
    let expected = expected();
    let kafka_log = std::fs::read(fixtures().join(format!("java-none/{SEGMENT}.log"))).unwrap();
    let java: Vec<RecordBatch> = batches(Bytes::from(kafka_log))
        .map(Result::unwrap)
        .collect();
    let mut next = 0usize;
    for batch in &java {
        let count = batch.record_count() as usize;
        let mut builder = uncompressed_builder_like(batch);
        for record in &expected[next..next + count] {
            builder
                .append(&NewRecord {
                    timestamp: record.timestamp,
                    key: record.key.clone().map(Bytes::from),
                    value: record.value.clone().map(Bytes::from),
                    headers: record
                        .headers
                        .iter()
                        .map(|(k, v)| Header {
                            key: Bytes::from(k.clone()),
                            value: v.clone().map(Bytes::from),
                        })
                        .collect(),
                })
                .unwrap();
        }
        assert_eq!(&builder.build(), batch.bytes());
        next += count;
    }
    assert_eq!(next, expected.len());
}

#[test]
fn timestamp_lookups_on_kafka_segments_agree_with_a_scan() {
    let expected = expected();
    for (name, _, dir) in cases() {
        let temp = tempfile::tempdir().unwrap();
        let partition = temp.path().join(format!("{name}-0"));
        copy_segment(&dir, &partition);
        let options = LogOpenOptions {
            clean_shutdown: true,
            ..LogOpenOptions::default()
        };
        let log = Log::open(&partition, LogConfig::default(), options).unwrap();
        let first = expected[0].timestamp;
        for target in (first - 5..first + 620).step_by(3) {
            let brute = expected
                .iter()
                .enumerate()
                .find(|(_, r)| r.timestamp >= target)
                .map(|(i, r)| (i as i64, r.timestamp));
            assert_eq!(
                log.offset_for_timestamp(target).unwrap(),
                brute,
                "{name} at {target}"
            );
        }
        let max = expected.iter().map(|r| r.timestamp).max().unwrap();
        let max_offset = expected.iter().position(|r| r.timestamp == max).unwrap() as i64;
        assert_eq!(log.max_timestamp_offset().unwrap(), Some((max_offset, max)));
    }
}
