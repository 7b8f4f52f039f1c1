//! The log cleaner under SIGKILL: `sluice server` is killed while its cleaner has
//! `.cleaned` files on disk (between writing its output and swapping it in), and the
//! restarted server must read back a consistent log: offsets increasing, no cleaner file
//! left, and for every key the latest acknowledged value (or a later one whose answer
//! the kill swallowed).

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
mod process;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::Wire;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};

const KEYS: u64 = 500;
const PER_BATCH: u64 = 200;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// The server with a cleaner that looks for work every millisecond.
fn start(dir: &Path) -> (Child, SocketAddr) {
    process::start(dir, &["log.cleaner.backoff.ms=1"])
}

/// The server with no cleaner: what recovery alone left is what it serves.
fn start_without_cleaner(dir: &Path) -> (Child, SocketAddr) {
    process::start(dir, &["log.cleaner.threads=0"])
}

fn cleaner_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
                .collect()
        })
        .unwrap_or_default()
}

/// One batch of `PER_BATCH` records from sequence number `first`: key `k<seq % KEYS>`,
/// value the sequence number padded to 200 bytes.
fn batch(first: u64) -> Bytes {
    let mut builder = RecordBatchBuilder::new(Compression::None);
    for seq in first..first + PER_BATCH {
        builder
            .append(&NewRecord {
                timestamp: 1_700_000_000_000,
                key: Some(Bytes::from(format!("k{}", seq % KEYS))),
                value: Some(Bytes::from(format!("{seq:0>200}"))),
                headers: Vec::new(),
            })
            .unwrap();
    }
    builder.build()
}

/// Produces batches until the connection fails; records the acknowledged sequences.
async fn produce_until_killed(
    address: SocketAddr,
    first: u64,
    acked: &mut BTreeMap<u64, u64>,
) -> u64 {
    let mut wire = Wire::connect(address).await;
    let mut next = first;
    loop {
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(TopicName(s("compacted")))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(batch(next))),
                    ]),
            ]);
        let Some(response) = wire.try_call(&request, 11).await else {
            return next + PER_BATCH;
        };
        assert_eq!(response.responses[0].partition_responses[0].error_code, 0);
        for seq in next..next + PER_BATCH {
            acked.insert(seq % KEYS, seq);
        }
        next += PER_BATCH;
    }
}

/// Every (offset, key, sequence) from the start of the log.
async fn read_all(address: SocketAddr) -> Vec<(i64, u64, u64)> {
    let mut wire = Wire::connect(address).await;
    let mut found = Vec::new();
    let mut offset = 0;
    loop {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_bytes(4 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(TopicName(s("compacted")))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(4 << 20),
                    ]),
            ]);
        let response: FetchResponse = wire.call(&request, 12).await;
        let partition = &response.responses[0].partitions[0];
        assert_eq!(partition.error_code, 0, "{partition:?}");
        let records = partition.records.clone().unwrap_or_default();
        if records.is_empty() {
            return found;
        }
        for batch in batches(records) {
            let batch = batch.unwrap();
            for record in batch.records().unwrap() {
                let record = record.unwrap();
                let key: u64 = std::str::from_utf8(&record.key.unwrap()[1..])
                    .unwrap()
                    .parse()
                    .unwrap();
                let seq: u64 = std::str::from_utf8(&record.value.unwrap())
                    .unwrap()
                    .parse()
                    .unwrap();
                found.push((
                    batch.base_offset() + i64::from(record.offset_delta),
                    key,
                    seq,
                ));
            }
            offset = batch.next_offset();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_cleaning_recovers_a_consistent_log() {
    let dir = tempfile::tempdir().unwrap();
    let partition_dir: PathBuf = dir.path().join("compacted-0");
    let (mut child, address) = start(dir.path());
    let mut wire = Wire::connect(address).await;
    let config = |k: &str, v: &str| {
        CreatableTopicConfig::default()
            .with_name(s(k))
            .with_value(Some(s(v)))
    };
    let created: CreateTopicsResponse = wire
        .call(
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(TopicName(s("compacted")))
                    .with_num_partitions(1)
                    .with_replication_factor(1)
                    .with_configs(vec![
                        config("cleanup.policy", "compact"),
                        config("segment.bytes", "1048576"),
                        config("min.cleanable.dirty.ratio", "0.01"),
                    ]),
            ]),
            7,
        )
        .await;
    assert_eq!(created.topics[0].error_code, 0);
    let mut acked: BTreeMap<u64, u64> = BTreeMap::new();
    let mut next = 0;
    let mut address = address;
    let mut caught = false;
    for _attempt in 0..10 {
        // Kill the server the moment its cleaner has output on disk.
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let stop = stop.clone();
            let partition_dir = partition_dir.clone();
            let pid = child.id() as libc::pid_t;
            std::thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    if cleaner_files(&partition_dir)
                        .iter()
                        .any(|n| n.ends_with(".log.cleaned"))
                    {
                        // SAFETY: kill(2) of our own child, which has not been reaped.
                        unsafe { libc::kill(pid, libc::SIGKILL) };
                        return true;
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                false
            })
        };
        next = produce_until_killed(address, next, &mut acked).await;
        stop.store(true, Ordering::Relaxed);
        let fired = watcher.join().unwrap();
        let _ = child.kill();
        child.wait().unwrap();
        assert!(fired, "the cleaner never wrote output within a minute");
        // The kill landed inside the window if the output is still there.
        caught = cleaner_files(&partition_dir)
            .iter()
            .any(|n| n.ends_with(".cleaned"));
        eprintln!(
            "killed after {} sent records; cleaner files then: {:?}",
            next,
            cleaner_files(&partition_dir)
        );
        // Recovery (no cleaner running to write new files) drops the pass's output.
        let (mut checker, checked) = start_without_cleaner(dir.path());
        assert!(
            cleaner_files(&partition_dir).is_empty(),
            "left: {:?}",
            cleaner_files(&partition_dir)
        );
        let log = read_all(checked).await;
        eprintln!("read back {} records", log.len());
        check(&log, &acked);
        let _ = checker.kill();
        checker.wait().unwrap();
        if caught {
            break;
        }
        (child, address) = start(dir.path());
    }
    assert!(
        caught,
        "no kill landed while the cleaner had output on disk"
    );
    let _ = child.kill();
    child.wait().unwrap();
}

/// Offsets increase; each key's value is a sequence of that key; its last value is at
/// least the last acknowledged one.
fn check(log: &[(i64, u64, u64)], acked: &BTreeMap<u64, u64>) {
    assert!(!log.is_empty());
    let mut latest: BTreeMap<u64, u64> = BTreeMap::new();
    let mut previous = -1;
    for (offset, key, seq) in log {
        assert!(
            *offset > previous,
            "offsets must increase: {previous} then {offset}"
        );
        previous = *offset;
        assert_eq!(
            seq % KEYS,
            *key,
            "record {offset} mixes key {key} and value {seq}"
        );
        latest.insert(*key, *seq);
    }
    for (key, seq) in acked {
        let found = latest.get(key).copied();
        assert!(
            found.is_some_and(|f| f >= *seq),
            "key {key}: acknowledged {seq}, the log's latest is {found:?}"
        );
    }
}
