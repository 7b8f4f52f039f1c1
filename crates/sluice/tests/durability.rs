//! What an acknowledged produce promises, checked by killing the process: a batch
//! answered with acks=1 or acks=-1 is in the segment file (the page cache) before the
//! answer leaves, so SIGKILL of `sluice server` at any moment loses none of them. The
//! test produces from a client while the server is killed at random moments, restarts
//! it on the same directory each time, and checks every acknowledged record is there,
//! at the offset it was acknowledged with.

#[path = "../../sluice-broker/tests/common/mod.rs"]
mod common;
mod process;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use bytes::Bytes;
use common::Wire;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};

fn start(dir: &Path) -> (Child, SocketAddr) {
    process::start(dir, &[])
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

/// Creates the one-partition topic "acked" the tests write to.
async fn create_acked(address: SocketAddr) {
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_produce() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, address) = start(dir.path());
    create_acked(address).await;
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

/// FindCoordinator (creating `__consumer_offsets`) until the group's coordinator has
/// loaded it; the single node is the coordinator.
async fn wait_for_coordinator(address: SocketAddr, group: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut wire = Wire::connect(address).await;
        let found: FindCoordinatorResponse = wire
            .call(
                &FindCoordinatorRequest::default()
                    .with_coordinator_keys(vec![StrBytes::from_string(group.to_string())]),
                6,
            )
            .await;
        let fetched = fetch_committed(address, group).await;
        if found.coordinators[0].error_code == 0 && fetched.is_ok() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the coordinator loads the group"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The committed offset of the group's partition 0 of "acked" (-1: none), or the
/// group's error code.
async fn fetch_committed(address: SocketAddr, group: &str) -> Result<i64, i16> {
    fetch_committed_offset(address, group, false).await
}

/// The group's committed offset of "acked" 0 as a read_committed consumer asks for it
/// (`require_stable`, KIP-447): an offset commit whose transaction is committed but
/// whose marker is not yet written in `__consumer_offsets` (EndTxn is answered once
/// PrepareCommit is durable; the markers follow) is UNSTABLE_OFFSET_COMMIT, retried.
async fn fetch_stable_committed(address: SocketAddr, group: &str) -> i64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match fetch_committed_offset(address, group, true).await {
            Ok(offset) => return offset,
            Err(88) => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the offset commit stays unstable"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(code) => panic!("OffsetFetch failed with error {code}"),
        }
    }
}

async fn fetch_committed_offset(
    address: SocketAddr,
    group: &str,
    require_stable: bool,
) -> Result<i64, i16> {
    use kafka_protocol::messages::offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopics,
    };
    let mut wire = Wire::connect(address).await;
    let response: OffsetFetchResponse = wire
        .call(
            &OffsetFetchRequest::default()
                .with_require_stable(require_stable)
                .with_groups(vec![
                    OffsetFetchRequestGroup::default()
                        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                        .with_topics(Some(vec![
                            OffsetFetchRequestTopics::default()
                                .with_name(name("acked"))
                                .with_partition_indexes(vec![0]),
                        ])),
                ]),
            9,
        )
        .await;
    let group = &response.groups[0];
    if group.error_code != 0 {
        return Err(group.error_code);
    }
    let partition = &group.topics[0].partitions[0];
    if partition.error_code != 0 {
        return Err(partition.error_code);
    }
    Ok(partition.committed_offset)
}

/// Commits consecutive offsets until the connection fails; returns the last
/// acknowledged one and the last one sent.
async fn commit_until_killed(
    address: SocketAddr,
    group: &str,
    next: i64,
    progress: tokio::sync::watch::Sender<usize>,
) -> (Option<i64>, i64) {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    let mut wire = Wire::connect(address).await;
    let mut acknowledged = None;
    let mut sent = next;
    for offset in next.. {
        sent = offset;
        let request = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(name("acked"))
                    .with_partitions(vec![
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(offset),
                    ]),
            ]);
        let Some(response) = wire.try_call(&request, 9).await else {
            break;
        };
        assert_eq!(response.topics[0].partitions[0].error_code, 0);
        acknowledged = Some(offset);
        progress.send_replace((offset - next + 1) as usize);
    }
    (acknowledged, sent)
}

/// An OffsetCommit is answered once its record is committed in `__consumer_offsets`
/// (in the coordinator's segment file, the page cache, with a single replica): SIGKILL
/// at any moment loses no acknowledged commit. After each restart the committed offset
/// is at least the last acknowledged one (and at most the last one sent).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_offset_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut address) = start(dir.path());
    create_acked(address).await;
    let group = "durable-group";
    let mut next = 0;
    for round in 0..3u64 {
        wait_for_coordinator(address, group).await;
        let (progress, mut count) = tokio::sync::watch::channel(0usize);
        let committer = tokio::spawn(commit_until_killed(address, group, next, progress));
        count
            .wait_for(|n| *n >= 10)
            .await
            .expect("commits are acknowledged before the kill");
        tokio::time::sleep(Duration::from_millis(15 + 30 * round)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (acknowledged, sent) = committer.await.unwrap();
        let acknowledged = acknowledged.expect("some commits were acknowledged");
        let (restarted, new_address) = start(dir.path());
        child = restarted;
        address = new_address;
        wait_for_coordinator(address, group).await;
        let committed = fetch_committed(address, group).await.unwrap();
        assert!(
            committed >= acknowledged && committed <= sent,
            "round {round}: committed {committed}, acknowledged up to {acknowledged}, sent up to {sent}"
        );
        next = sent + 1;
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A transactional producer's raw requests (transactions v1: AddPartitionsToTxn and
/// AddOffsetsToTxn, EndTxn v4).
struct Txn {
    id: TransactionalId,
    producer_id: ProducerId,
    epoch: i16,
    sequence: i32,
}

impl Txn {
    /// FindCoordinator (creating `__transaction_state`), then InitProducerId until the
    /// coordinator has loaded and nothing of an older epoch is in the way (which also
    /// aborts a transaction a killed run left open).
    async fn init(address: SocketAddr, id: &str) -> Txn {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut wire = Wire::connect(address).await;
            let _: FindCoordinatorResponse = wire
                .call(
                    &FindCoordinatorRequest::default()
                        .with_key_type(1)
                        .with_coordinator_keys(vec![StrBytes::from_string(id.to_string())]),
                    6,
                )
                .await;
            let response: InitProducerIdResponse = wire
                .call(
                    &InitProducerIdRequest::default()
                        .with_transactional_id(Some(TransactionalId(StrBytes::from_string(
                            id.to_string(),
                        ))))
                        .with_transaction_timeout_ms(60_000)
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1),
                    4,
                )
                .await;
            if response.error_code == 0 {
                return Txn {
                    id: TransactionalId(StrBytes::from_string(id.to_string())),
                    producer_id: response.producer_id,
                    epoch: response.producer_epoch,
                    sequence: 0,
                };
            }
            assert!(
                std::time::Instant::now() < deadline,
                "InitProducerId: {}",
                response.error_code
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// One transaction: record `value` in "acked" and the group's offset `value` + 1,
    /// then commit. `None` when the connection failed (the server died); an error code
    /// other than CONCURRENT_TRANSACTIONS fails the test.
    async fn commit_one(&mut self, wire: &mut Wire, group: &str, value: u64) -> Option<()> {
        use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
        use kafka_protocol::messages::txn_offset_commit_request::{
            TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        };
        loop {
            let added = wire
                .try_call(
                    &AddPartitionsToTxnRequest::default()
                        .with_v3_and_below_transactional_id(self.id.clone())
                        .with_v3_and_below_producer_id(self.producer_id)
                        .with_v3_and_below_producer_epoch(self.epoch)
                        .with_v3_and_below_topics(vec![
                            AddPartitionsToTxnTopic::default()
                                .with_name(name("acked"))
                                .with_partitions(vec![0]),
                        ]),
                    3,
                )
                .await?;
            let code =
                added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code;
            if code == 51 {
                // The previous transaction's markers are still being written.
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            assert_eq!(code, 0, "AddPartitionsToTxn");
            break;
        }
        let mut builder = RecordBatchBuilder::new(Compression::None)
            .producer(self.producer_id.0, self.epoch, self.sequence)
            .transactional(true);
        builder
            .append(&NewRecord {
                timestamp: sluice_storage::now_ms(),
                key: None,
                value: Some(Bytes::from(value.to_string())),
                headers: Vec::new(),
            })
            .unwrap();
        let produced = wire
            .try_call(
                &ProduceRequest::default()
                    .with_transactional_id(Some(self.id.clone()))
                    .with_acks(-1)
                    .with_timeout_ms(10_000)
                    .with_topic_data(vec![
                        TopicProduceData::default()
                            .with_name(name("acked"))
                            .with_partition_data(vec![
                                PartitionProduceData::default()
                                    .with_index(0)
                                    .with_records(Some(builder.build())),
                            ]),
                    ]),
                11,
            )
            .await?;
        assert_eq!(produced.responses[0].partition_responses[0].error_code, 0);
        self.sequence += 1;
        let group_id = GroupId(StrBytes::from_string(group.to_string()));
        let added: AddOffsetsToTxnResponse = wire
            .try_call(
                &AddOffsetsToTxnRequest::default()
                    .with_transactional_id(self.id.clone())
                    .with_producer_id(self.producer_id)
                    .with_producer_epoch(self.epoch)
                    .with_group_id(group_id.clone()),
                3,
            )
            .await?;
        assert_eq!(added.error_code, 0, "AddOffsetsToTxn");
        let committed: TxnOffsetCommitResponse = wire
            .try_call(
                &TxnOffsetCommitRequest::default()
                    .with_transactional_id(self.id.clone())
                    .with_group_id(group_id)
                    .with_producer_id(self.producer_id)
                    .with_producer_epoch(self.epoch)
                    .with_generation_id(-1)
                    .with_topics(vec![
                        TxnOffsetCommitRequestTopic::default()
                            .with_name(name("acked"))
                            .with_partitions(vec![
                                TxnOffsetCommitRequestPartition::default()
                                    .with_partition_index(0)
                                    .with_committed_offset(value as i64 + 1),
                            ]),
                    ]),
                3,
            )
            .await?;
        assert_eq!(committed.topics[0].partitions[0].error_code, 0);
        let ended: EndTxnResponse = wire
            .try_call(
                &EndTxnRequest::default()
                    .with_transactional_id(self.id.clone())
                    .with_producer_id(self.producer_id)
                    .with_producer_epoch(self.epoch)
                    .with_committed(true),
                4,
            )
            .await?;
        assert_eq!(ended.error_code, 0, "EndTxn");
        Some(())
    }
}

/// Commits transactions (a record and the group's offset each) until the connection
/// fails; returns the last acknowledged value and the last one sent.
async fn transactions_until_killed(
    address: SocketAddr,
    group: &str,
    next: u64,
    progress: tokio::sync::watch::Sender<usize>,
) -> (Option<u64>, u64) {
    let mut txn = Txn::init(address, "durable-txn").await;
    let mut wire = Wire::connect(address).await;
    let mut acknowledged = None;
    let mut sent = next;
    for value in next.. {
        sent = value;
        if txn.commit_one(&mut wire, group, value).await.is_none() {
            break;
        }
        acknowledged = Some(value);
        progress.send_replace((value - next + 1) as usize);
    }
    (acknowledged, sent)
}

/// The values a read_committed consumer of "acked" reads, once no transaction is open:
/// data of committed transactions only (aborted ones are skipped by their producer's
/// aborted range, as consumers do).
async fn read_committed(address: SocketAddr) -> Vec<u64> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    // Wait until no transaction is open (the LSO reaches the high watermark).
    let end = loop {
        let (hw, lso, _, _) = fetch_committed_from(address, 0).await;
        if hw >= 0 && hw == lso {
            break hw;
        }
        assert!(std::time::Instant::now() < deadline, "the LSO stays behind");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // A fetch returns one segment's batches at most: read on until the end.
    let mut values = Vec::new();
    let mut aborted: Vec<(i64, i64)> = Vec::new();
    let mut skipping = false;
    let mut offset = 0;
    while offset < end {
        let (_, _, more_aborted, records) = fetch_committed_from(address, offset).await;
        aborted.extend(more_aborted);
        let mut advanced = false;
        for batch in batches(records) {
            let batch = batch.unwrap();
            if batch.next_offset() <= offset {
                continue;
            }
            advanced = true;
            offset = batch.next_offset();
            if aborted
                .iter()
                .any(|(_, first)| *first == batch.base_offset())
            {
                skipping = true;
            }
            if batch.is_control() {
                skipping = false;
                continue;
            }
            if skipping {
                continue;
            }
            for record in batch.records().unwrap() {
                let value = record.unwrap().value.unwrap();
                values.push(std::str::from_utf8(&value).unwrap().parse().unwrap());
            }
        }
        assert!(advanced, "no progress reading at {offset} (end {end})");
    }
    values
}

/// A read_committed fetch of "acked" from `offset`: (high watermark, last stable
/// offset, aborted transactions, records).
async fn fetch_committed_from(
    address: SocketAddr,
    offset: i64,
) -> (i64, i64, Vec<(i64, i64)>, Bytes) {
    let mut wire = Wire::connect(address).await;
    let response: FetchResponse = wire
        .call(
            &FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(0)
                .with_max_bytes(16 << 20)
                .with_isolation_level(1)
                .with_topics(vec![
                    FetchTopic::default()
                        .with_topic(name("acked"))
                        .with_partitions(vec![
                            FetchPartition::default()
                                .with_partition(0)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(16 << 20),
                        ]),
                ]),
            12,
        )
        .await;
    let data = &response.responses[0].partitions[0];
    if data.error_code != 0 {
        return (-1, -1, Vec::new(), Bytes::new());
    }
    (
        data.high_watermark,
        data.last_stable_offset,
        data.aborted_transactions
            .iter()
            .flatten()
            .map(|a| (a.producer_id.0, a.first_offset))
            .collect(),
        data.records.clone().unwrap_or_default(),
    )
}

/// An EndTxn is answered once PrepareCommit is committed in `__transaction_state` (and
/// the transaction's records and offsets were acknowledged before it): SIGKILL at any
/// moment loses no acknowledged transaction. After each restart a new InitProducerId
/// (which aborts a transaction left open) lets the LSO reach the end; then every
/// acknowledged value is visible to read_committed, exactly once, nothing that was not
/// sent is, and the group's committed offset covers the last acknowledged transaction
/// (read as a read_committed consumer reads it, with `require_stable`: the marker that
/// makes the offset visible may still be on its way after the restart).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (mut child, mut address) = start(dir);
    create_acked(address).await;
    let group = "durable-txn-group";
    wait_for_coordinator(address, group).await;
    let mut next = 0;
    let mut all_acknowledged = Vec::new();
    for round in 0..3u64 {
        let (progress, mut count) = tokio::sync::watch::channel(0usize);
        let producer = tokio::spawn(transactions_until_killed(address, group, next, progress));
        count
            .wait_for(|n| *n >= 5)
            .await
            .expect("transactions are acknowledged before the kill");
        tokio::time::sleep(Duration::from_millis(10 + 25 * round)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (acknowledged, sent) = producer.await.unwrap();
        let acknowledged = acknowledged.expect("some transactions were acknowledged");
        all_acknowledged.extend(next..=acknowledged);
        let (restarted, new_address) = start(dir);
        child = restarted;
        address = new_address;
        // Aborts what the killed run left open (or sees it completed).
        Txn::init(address, "durable-txn").await;
        let values = read_committed(address).await;
        let mut unique = values.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            values.len(),
            "round {round}: a value twice: {values:?}"
        );
        for value in &all_acknowledged {
            assert!(
                values.contains(value),
                "round {round}: acknowledged {value} lost: read {values:?}"
            );
        }
        assert!(
            values.iter().all(|v| *v <= sent),
            "round {round}: a value never sent"
        );
        wait_for_coordinator(address, group).await;
        let committed = fetch_stable_committed(address, group).await;
        assert!(
            committed > acknowledged as i64 && committed <= sent as i64 + 1,
            "round {round}: committed offset {committed}, acknowledged up to {acknowledged}, sent up to {sent}"
        );
        next = sent + 1;
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
