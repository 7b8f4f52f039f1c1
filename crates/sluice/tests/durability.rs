//! What an acknowledged produce promises, checked by killing the process: a batch
//! answered with acks=1 or acks=-1 is in the segment file (the page cache) before the
//! answer leaves, so SIGKILL of `sluice server` at any moment loses none of them. The
//! test produces from a client while the server is killed at random moments, restarts
//! it on the same directory each time, and checks every acknowledged record is there,
//! at the offset it was acknowledged with.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use common::Wire;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Starts `sluice server` on `dir` with a free port; returns it and its address.
fn start(dir: &std::path::Path) -> (Child, SocketAddr) {
    let mut child = Command::new(SLUICE)
        .args(["server", "--set"])
        .arg(format!("log.dirs={}", dir.display()))
        .args([
            "--set",
            "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
            "--set",
            "advertised.listeners=PLAINTEXT://127.0.0.1:0",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let address = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the server exited before listening"
        );
        if let Some(address) = line
            .trim()
            .strip_prefix("sluice: listening on PLAINTEXT://")
        {
            break address.parse().unwrap();
        }
    };
    // Keep draining its log so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    (child, address)
}

fn name(text: &str) -> TopicName {
    TopicName(StrBytes::from_string(text.to_string()))
}

fn one_record(value: u64) -> Bytes {
    let mut builder = RecordBatchBuilder::new(if value.is_multiple_of(3) {
        Compression::Lz4
    } else {
        Compression::None
    });
    builder
        .append(&NewRecord {
            timestamp: 1_700_000_000_000 + value as i64,
            key: None,
            value: Some(Bytes::from(value.to_string())),
            headers: Vec::new(),
        })
        .unwrap();
    builder.build()
}

/// Produces consecutive values from `next` until the connection fails; returns the
/// acknowledged (value, offset) pairs.
async fn produce_until_killed(
    address: SocketAddr,
    next: u64,
    acks: i16,
    progress: tokio::sync::watch::Sender<usize>,
) -> Vec<(u64, i64)> {
    let mut acked = Vec::new();
    let mut wire = Wire::connect(address).await;
    for value in next.. {
        let request = ProduceRequest::default()
            .with_acks(acks)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(name("acked"))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(one_record(value))),
                    ]),
            ]);
        let Some(response) = wire.try_call(&request, 11).await else {
            break;
        };
        let p = &response.responses[0].partition_responses[0];
        assert_eq!(p.error_code, 0);
        acked.push((value, p.base_offset));
        progress.send_replace(acked.len());
    }
    acked
}

async fn read_all(address: SocketAddr) -> Vec<(i64, u64)> {
    let mut wire = Wire::connect(address).await;
    let mut found = Vec::new();
    let mut offset = 0;
    loop {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_bytes(1 << 20)
            .with_session_epoch(-1)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(name("acked"))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_partition(0)
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(1 << 20),
                    ]),
            ]);
        let response: FetchResponse = wire.call(&request, 12).await;
        let records = response.responses[0].partitions[0].records.clone().unwrap();
        if records.is_empty() {
            return found;
        }
        for batch in batches(records) {
            let batch = batch.unwrap();
            for record in batch.records().unwrap() {
                let record = record.unwrap();
                let value = std::str::from_utf8(record.value.as_ref().unwrap())
                    .unwrap()
                    .parse()
                    .unwrap();
                found.push((batch.base_offset() + i64::from(record.offset_delta), value));
            }
            offset = batch.next_offset();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_produce() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, address) = start(dir.path());
    let mut wire = Wire::connect(address).await;
    let created: CreateTopicsResponse = wire
        .call(
            &CreateTopicsRequest::default().with_topics(vec![
                CreatableTopic::default()
                    .with_name(name("acked"))
                    .with_num_partitions(1)
                    .with_replication_factor(1),
            ]),
            7,
        )
        .await;
    assert_eq!(created.topics[0].error_code, 0);
    let mut all_acked: Vec<(u64, i64)> = Vec::new();
    let mut next = 0u64;
    let mut address = address;
    for round in 0..4u64 {
        let acks = if round % 2 == 0 { 1 } else { -1 };
        let (progress, mut acknowledged) = tokio::sync::watch::channel(0usize);
        let producer = tokio::spawn(produce_until_killed(address, next, acks, progress));
        // Kill only once produces are being acknowledged (an event, not a guess at how
        // long start-up takes), then a different moment into the stream each round.
        // Kill at a different moment each round, while batches are in flight.
        acknowledged
            .wait_for(|count| *count >= 10)
            .await
            .expect("the producer acknowledges produces before it is killed");
        tokio::time::sleep(Duration::from_millis(20 + 40 * round)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acked = producer.await.unwrap();
        assert!(
            !acked.is_empty(),
            "round {round}: some produces were acknowledged"
        );
        next = acked.last().unwrap().0 + 1;
        all_acked.extend(acked);
        let (restarted, new_address) = start(dir.path());
        child = restarted;
        let found = read_all(new_address).await;
        for (value, offset) in &all_acked {
            assert!(
                found.contains(&(*offset, *value)),
                "round {round}: acknowledged value {value} at offset {offset} is lost"
            );
        }
        // Offsets stay dense and unique: each offset holds one value.
        let mut offsets: Vec<i64> = found.iter().map(|(o, _)| *o).collect();
        offsets.dedup();
        assert_eq!(offsets.len(), found.len());
        address = new_address;
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
