//! The broker's periodic tasks run on the monotonic clock: a wall-clock jump (NTP
//! stepping the clock) must not stall them. Before the fix, the transaction
//! coordinator's abort scan remembered when it last ran in wall-clock time: after the
//! clock jumped forward and came back, "now - last run" stayed negative for as long as
//! the jump, so no timed-out transaction was aborted, and a transaction left open kept
//! every partition it wrote stuck at its last stable offset (read_committed consumers
//! saw nothing newer) for the whole jump. Found by the fault checker's clock-jump fault
//! (compat/cluster: `clock-jump` in the workload scenario, then the txn scenario's
//! abandoned transaction was never aborted); this test failed before the fix.
//!
//! The jump is made with the server's test hook (`SLUICE_TEST_CLOCK_SKEW_FILE`), so the
//! host's clock is untouched.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
mod process;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::Wire;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_client::ClientConfig;
use sluice_client::producer::{Producer, ProducerConfig, ProducerRecord};
use sluice_client::{Admin, NewTopic};

const TRANSACTION_TIMEOUT_MS: u64 = 2_000;
const ABORT_SCAN_MS: u64 = 300;
const JUMP_MS: i64 = 10 * 60 * 1000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_left_open_is_aborted_after_the_clock_jumped_and_came_back() {
    let dir = tempfile::tempdir().unwrap();
    let skew = dir.path().join("clock-skew-ms");
    let data = dir.path().join("data");
    let mut command = process::server_command(
        &data,
        &[],
        &[&format!(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms={ABORT_SCAN_MS}"
        )],
    );
    command.env(sluice_storage::clock::TEST_CLOCK_SKEW_FILE, &skew);
    let (mut child, address) = process::spawn(command);

    let admin = Admin::connect(ClientConfig::new([address.to_string()]))
        .await
        .unwrap();
    let created = admin
        .create_topics(
            &[NewTopic {
                name: "t".into(),
                num_partitions: Some(1),
                replication_factor: None,
                configs: vec![],
            }],
            false,
        )
        .await
        .unwrap();
    for (name, result) in created {
        result.unwrap_or_else(|e| panic!("topic {name}: {e}"));
    }
    // The coordinator is up (its shard loaded) before the clock moves: the scan runs
    // while the clock is 10 minutes ahead.
    let producer = Producer::connect(
        ProducerConfig::from_iter([
            ("bootstrap.servers", address.to_string()),
            ("transactional.id", "left-open".to_string()),
            ("transaction.timeout.ms", TRANSACTION_TIMEOUT_MS.to_string()),
        ])
        .unwrap(),
    )
    .await
    .unwrap();
    producer.init_transactions().await.unwrap();

    std::fs::write(&skew, JUMP_MS.to_string()).unwrap();
    tokio::time::sleep(Duration::from_millis(ABORT_SCAN_MS * 5)).await;
    std::fs::write(&skew, "0").unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A transaction begun with the clock back in step, written, and left open.
    producer.begin_transaction().unwrap();
    let delivery = producer
        .send(ProducerRecord::new("t", "never committed").with_partition(0))
        .await
        .unwrap();
    let offset = delivery.await.unwrap().offset;
    let left_at = Instant::now();

    // Its coordinator must abort it once the timeout passes: the last stable offset
    // moves past its record.
    let bound =
        Duration::from_millis(TRANSACTION_TIMEOUT_MS + ABORT_SCAN_MS) + Duration::from_secs(8);
    let mut last_stable = -1;
    while left_at.elapsed() < bound {
        last_stable = last_stable_offset(address).await;
        if last_stable > offset {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        last_stable > offset,
        "the transaction left open at offset {offset} was not aborted {bound:?} after its write \
         (timeout {TRANSACTION_TIMEOUT_MS} ms, scan every {ABORT_SCAN_MS} ms): the last stable \
         offset is still {last_stable}"
    );
}

/// The last stable offset of t-0 (a read_committed fetch).
async fn last_stable_offset(address: SocketAddr) -> i64 {
    let mut wire = Wire::connect(address).await;
    let response: FetchResponse = wire
        .call(
            &FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_max_bytes(1 << 20)
                .with_isolation_level(1)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_static_str("t")))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(0)
                                .with_fetch_offset(0)
                                .with_partition_max_bytes(1 << 20),
                        ]),
                ]),
            12,
        )
        .await;
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.error_code, 0, "fetch: {data:?}");
    data.last_stable_offset
}
