//! Transactions over the wire against a real node, as a transactional producer and
//! read_committed consumers drive them, at `transaction.version` 1 (the client adds
//! partitions with AddPartitionsToTxn, the leader verifies them: KIP-890 part 1) and 2
//! (Produce v12 adds them, EndTxn v5 bumps the epoch: KIP-890 part 2):
//! commit and abort with the last stable offset and the aborted-transaction list,
//! ListOffsets by isolation level, zombie fencing, transactional offset commits with
//! OffsetFetch's require_stable, the timeout abort of a hanging transaction, the
//! coordinator's state across a restart, ListTransactions / DescribeTransactions, and
//! the `transaction.version` feature through UpdateFeatures and ApiVersions.

mod common;

use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{TestNode, Wire};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use sluice_protocol::{Compression, ErrorCode, NewRecord, RecordBatchBuilder, batches};

const NONE: i16 = ErrorCode::NONE.0;
const INVALID_PRODUCER_EPOCH: i16 = ErrorCode::INVALID_PRODUCER_EPOCH.0;
const INVALID_TXN_STATE: i16 = ErrorCode::INVALID_TXN_STATE.0;
const CONCURRENT_TRANSACTIONS: i16 = ErrorCode::CONCURRENT_TRANSACTIONS.0;
const UNSTABLE_OFFSET_COMMIT: i16 = ErrorCode::UNSTABLE_OFFSET_COMMIT.0;
const PRODUCER_FENCED: i16 = ErrorCode::PRODUCER_FENCED.0;
const COORDINATOR_LOAD_IN_PROGRESS: i16 = ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.0;
const NOT_COORDINATOR: i16 = ErrorCode::NOT_COORDINATOR.0;

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

/// Fast transactions: a small state topic, timeouts checked every 100 ms.
const SETTINGS: &[(&str, &str)] = &[
    ("transaction.state.log.num.partitions", "3"),
    ("offsets.topic.num.partitions", "3"),
    (
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "100",
    ),
    ("group.initial.rebalance.delay.ms", "0"),
];

async fn create_topic(wire: &mut Wire, topic: &str, partitions: i32) {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(TopicName(s(topic)))
                .with_num_partitions(partitions)
                .with_replication_factor(1),
        ])
        .with_timeout_ms(10_000);
    assert_eq!(wire.call(&request, 7).await.topics[0].error_code, NONE);
}

/// Sets the cluster's `transaction.version` with UpdateFeatures, as
/// `kafka-features.sh upgrade|downgrade` does.
async fn set_transaction_version(wire: &mut Wire, level: i16) {
    let request = UpdateFeaturesRequest::default()
        .with_timeout_ms(10_000)
        .with_feature_updates(vec![
            FeatureUpdateKey::default()
                .with_feature(s("transaction.version"))
                .with_max_version_level(level)
                .with_upgrade_type(2),
        ]);
    let response = wire.call(&request, 1).await;
    assert_eq!(response.error_code, NONE, "{response:?}");
    assert!(
        response.results.iter().all(|r| r.error_code == NONE),
        "{response:?}"
    );
}

/// The finalized `transaction.version` ApiVersions v3 reports.
async fn finalized_transaction_version(wire: &mut Wire) -> Option<i16> {
    let request = ApiVersionsRequest::default()
        .with_client_software_name(s("sluice-test"))
        .with_client_software_version(s("1"));
    // v3 leaves out features supported from level 0 (KAFKA-17011), v4 lists them.
    let v3 = wire.call(&request, 3).await;
    assert!(
        v3.supported_features
            .iter()
            .all(|f| f.name.as_str() == "metadata.version"),
        "{v3:?}"
    );
    let response = wire.call(&request, 4).await;
    assert!(
        response
            .supported_features
            .iter()
            .any(|f| f.name.as_str() == "transaction.version" && f.max_version == 2),
        "{response:?}"
    );
    // Both list the same finalized features (levels may change between the calls).
    let names = |r: &ApiVersionsResponse| -> Vec<String> {
        r.finalized_features
            .iter()
            .map(|f| f.name.to_string())
            .collect()
    };
    assert_eq!(names(&v3), names(&response));
    response
        .finalized_features
        .iter()
        .find(|f| f.name.as_str() == "transaction.version")
        .map(|f| f.max_version_level)
}

/// A raw transactional producer.
struct Producer {
    id: String,
    producer_id: i64,
    epoch: i16,
    /// Next sequence per partition.
    sequences: std::collections::HashMap<(String, i32), i32>,
    /// Transactions v2: Produce v12 and EndTxn v5, no AddPartitionsToTxn.
    v2: bool,
}

impl Producer {
    /// FindCoordinator (creates `__transaction_state`), then InitProducerId until the
    /// coordinator is loaded and no transaction of an older epoch is in the way.
    async fn init(wire: &mut Wire, id: &str, timeout_ms: i32, v2: bool) -> Producer {
        let find = FindCoordinatorRequest::default()
            .with_key_type(1)
            .with_coordinator_keys(vec![s(id)]);
        let found = wire.call(&find, 4).await;
        assert_eq!(found.coordinators[0].error_code, NONE, "{found:?}");
        let request = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(s(id))))
            .with_transaction_timeout_ms(timeout_ms)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let response = wire.call(&request, 5).await;
            match response.error_code {
                NONE => {
                    return Producer {
                        id: id.to_string(),
                        producer_id: response.producer_id.0,
                        epoch: response.producer_epoch,
                        sequences: Default::default(),
                        v2,
                    };
                }
                COORDINATOR_LOAD_IN_PROGRESS | NOT_COORDINATOR | CONCURRENT_TRANSACTIONS
                    if Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                code => panic!("InitProducerId: error {code}"),
            }
        }
    }

    fn tid(&self) -> TransactionalId {
        TransactionalId(s(&self.id))
    }

    /// AddPartitionsToTxn v3 (transactions v1 only).
    async fn add(&self, wire: &mut Wire, topic: &str, partitions: &[i32]) -> i16 {
        let request = AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(self.tid())
            .with_v3_and_below_producer_id(ProducerId(self.producer_id))
            .with_v3_and_below_producer_epoch(self.epoch)
            .with_v3_and_below_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(TopicName(s(topic)))
                    .with_partitions(partitions.to_vec()),
            ]);
        // The previous transaction's markers may still be on their way: clients retry
        // CONCURRENT_TRANSACTIONS.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let response = wire.call(&request, 3).await;
            let code = response.results_by_topic_v3_and_below[0].results_by_partition[0]
                .partition_error_code;
            if code != CONCURRENT_TRANSACTIONS || Instant::now() > deadline {
                return code;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Produces `values` in one transactional batch; the partition's error code.
    async fn send(&mut self, wire: &mut Wire, topic: &str, partition: i32, values: &[&str]) -> i16 {
        if !self.v2 {
            let code = self.add(wire, topic, &[partition]).await;
            if code != NONE {
                return code;
            }
        }
        let key = (topic.to_string(), partition);
        let sequence = *self.sequences.get(&key).unwrap_or(&0);
        let code = produce(
            wire,
            Some(&self.id),
            topic,
            partition,
            (self.producer_id, self.epoch, sequence),
            true,
            values,
            if self.v2 { 12 } else { 11 },
        )
        .await;
        if code == NONE {
            self.sequences.insert(key, sequence + values.len() as i32);
        }
        code
    }

    /// EndTxn (v5 under transactions v2, which returns the bumped epoch).
    async fn end(&mut self, wire: &mut Wire, commit: bool) -> i16 {
        let request = EndTxnRequest::default()
            .with_transactional_id(self.tid())
            .with_producer_id(ProducerId(self.producer_id))
            .with_producer_epoch(self.epoch)
            .with_committed(commit);
        let version = if self.v2 { 5 } else { 4 };
        let response = wire.call(&request, version).await;
        if response.error_code == NONE && self.v2 {
            assert_eq!(
                response.producer_epoch,
                self.epoch + 1,
                "transactions v2 bump the epoch per transaction"
            );
            self.producer_id = response.producer_id.0;
            self.epoch = response.producer_epoch;
            self.sequences.clear();
        }
        response.error_code
    }
}

#[allow(clippy::too_many_arguments)]
async fn produce(
    wire: &mut Wire,
    transactional_id: Option<&str>,
    topic: &str,
    partition: i32,
    (producer_id, epoch, sequence): (i64, i16, i32),
    transactional: bool,
    values: &[&str],
    version: i16,
) -> i16 {
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(producer_id, epoch, sequence)
        .transactional(transactional);
    for value in values {
        builder
            .append(&NewRecord {
                timestamp: sluice_storage::now_ms(),
                key: None,
                value: Some(Bytes::copy_from_slice(value.as_bytes())),
                headers: Vec::new(),
            })
            .unwrap();
    }
    let request = ProduceRequest::default()
        .with_transactional_id(transactional_id.map(|t| TransactionalId(s(t))))
        .with_acks(-1)
        .with_timeout_ms(5_000)
        .with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(s(topic)))
                .with_partition_data(vec![
                    PartitionProduceData::default()
                        .with_index(partition)
                        .with_records(Some(builder.build())),
                ]),
        ]);
    let response = wire.call(&request, version).await;
    response.responses[0].partition_responses[0].error_code
}

/// What a consumer's fetch of one partition sees.
#[derive(Debug)]
struct Fetched {
    high_watermark: i64,
    last_stable_offset: i64,
    aborted: Vec<(i64, i64)>,
    /// (offset, value) of data records; control batches are counted apart.
    records: Vec<(i64, String)>,
    control_batches: usize,
    /// Every batch in offset order: (base offset, producer id, control, values).
    batches: Vec<(i64, i64, bool, Vec<String>)>,
}

async fn fetch(
    wire: &mut Wire,
    topic: &str,
    partition: i32,
    offset: i64,
    read_committed: bool,
) -> Fetched {
    let offset_asked = offset;
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_isolation_level(i8::from(read_committed))
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(s(topic)))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(1 << 20),
                ]),
        ]);
    let response = wire.call(&request, 12).await;
    let data = &response.responses[0].partitions[0];
    assert_eq!(data.error_code, NONE, "{data:?}");
    let mut records = Vec::new();
    let mut control_batches = 0;
    let mut all = Vec::new();
    for batch in batches(data.records.clone().unwrap_or_default()) {
        let batch = batch.unwrap();
        if batch.is_control() {
            control_batches += 1;
            all.push((batch.base_offset(), batch.producer_id(), true, Vec::new()));
            continue;
        }
        let mut values = Vec::new();
        for record in batch.records().unwrap() {
            let record = record.unwrap();
            let offset = batch.base_offset() + i64::from(record.offset_delta);
            let value = String::from_utf8(record.value.unwrap().to_vec()).unwrap();
            if offset >= offset_asked {
                values.push(value.clone());
                records.push((offset, value));
            }
        }
        all.push((batch.base_offset(), batch.producer_id(), false, values));
    }
    Fetched {
        high_watermark: data.high_watermark,
        last_stable_offset: data.last_stable_offset,
        aborted: data
            .aborted_transactions
            .iter()
            .flatten()
            .map(|a| (a.producer_id.0, a.first_offset))
            .collect(),
        records,
        control_batches,
        batches: all,
    }
}

/// What a read_committed consumer keeps, by the Java consumer's rule: a producer's
/// batches from the first offset of one of its aborted transactions up to its next
/// control batch are skipped.
fn committed_values(fetched: &Fetched) -> Vec<String> {
    let mut aborted: Vec<(i64, i64)> = fetched.aborted.clone();
    aborted.sort_by_key(|(_, first)| *first);
    let mut skipping: std::collections::HashSet<i64> = Default::default();
    let mut kept = Vec::new();
    for (base, producer_id, control, values) in &fetched.batches {
        aborted.retain(|(pid, first)| {
            if first <= base {
                skipping.insert(*pid);
                false
            } else {
                true
            }
        });
        if *control {
            skipping.remove(producer_id);
        } else if !skipping.contains(producer_id) {
            kept.extend(values.iter().cloned());
        }
    }
    kept
}

async fn latest_offset(wire: &mut Wire, topic: &str, partition: i32, read_committed: bool) -> i64 {
    let request = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_isolation_level(i8::from(read_committed))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(TopicName(s(topic)))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(-1),
                ]),
        ]);
    let response = wire.call(&request, 5).await;
    response.topics[0].partitions[0].offset
}

/// Waits until the partition's last stable offset reaches `offset` (markers written).
async fn await_stable(wire: &mut Wire, topic: &str, partition: i32, offset: i64) -> Fetched {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let fetched = fetch(wire, topic, partition, 0, true).await;
        if fetched.last_stable_offset >= offset {
            return fetched;
        }
        assert!(Instant::now() < deadline, "LSO stuck: {fetched:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn describe(wire: &mut Wire, id: &str) -> describe_transactions_response::TransactionState {
    let request =
        DescribeTransactionsRequest::default().with_transactional_ids(vec![TransactionalId(s(id))]);
    wire.call(&request, 0).await.transaction_states.remove(0)
}

/// Commit and abort at one transaction version: LSO, aborted list, ListOffsets.
async fn commit_and_abort(v2: bool) {
    let node = TestNode::start(SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    set_transaction_version(&mut wire, if v2 { 2 } else { 1 }).await;
    assert_eq!(
        finalized_transaction_version(&mut wire).await,
        Some(if v2 { 2 } else { 1 })
    );
    create_topic(&mut wire, "orders", 1).await;
    let mut producer = Producer::init(&mut wire, "txn-a", 60_000, v2).await;
    let pid = producer.producer_id;

    // An open transaction holds the LSO at its first offset.
    assert_eq!(
        producer.send(&mut wire, "orders", 0, &["a1", "a2"]).await,
        NONE
    );
    let open = fetch(&mut wire, "orders", 0, 0, true).await;
    assert_eq!((open.high_watermark, open.last_stable_offset), (2, 0));
    assert!(
        open.records.is_empty(),
        "read_committed stops at the LSO: {open:?}"
    );
    let uncommitted = fetch(&mut wire, "orders", 0, 0, false).await;
    assert_eq!(uncommitted.records.len(), 2);
    assert_eq!(latest_offset(&mut wire, "orders", 0, true).await, 0);
    assert_eq!(latest_offset(&mut wire, "orders", 0, false).await, 2);
    assert_eq!(
        describe(&mut wire, "txn-a")
            .await
            .transaction_state
            .as_str(),
        "Ongoing"
    );

    // Abort: the marker at 2, LSO 3, the transaction listed as aborted.
    assert_eq!(producer.end(&mut wire, false).await, NONE);
    let aborted = await_stable(&mut wire, "orders", 0, 3).await;
    assert_eq!(aborted.aborted, vec![(pid, 0)]);
    assert_eq!(
        aborted.records.len(),
        2,
        "the data is returned, with its abort"
    );
    assert_eq!(aborted.control_batches, 1);
    assert!(committed_values(&aborted).is_empty());

    // Commit: visible, not in the aborted list.
    assert_eq!(producer.send(&mut wire, "orders", 0, &["b1"]).await, NONE);
    assert_eq!(producer.end(&mut wire, true).await, NONE);
    let committed = await_stable(&mut wire, "orders", 0, 5).await;
    assert_eq!(committed_values(&committed), vec!["b1"]);
    assert_eq!(latest_offset(&mut wire, "orders", 0, true).await, 5);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let state = describe(&mut wire, "txn-a").await;
        if state.transaction_state.as_str() == "CompleteCommit" {
            assert!(state.topics.is_empty() || state.topics[0].topic.as_str() == "orders");
            break;
        }
        assert!(Instant::now() < deadline, "{state:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A fetch from inside the aborted range still gets the abort.
    let from_one = fetch(&mut wire, "orders", 0, 1, true).await;
    assert_eq!(from_one.aborted, vec![(pid, 0)]);
    node.stop().await;
}

/// Under transactions v2 every transaction starts at sequence 0: a first batch with
/// another sequence from a producer the partition does not know is refused (a batch
/// before it was lost), where an idempotent producer would be taken as new (KIP-360).
#[tokio::test]
async fn a_transaction_v2_first_batch_must_start_at_sequence_0() {
    let node = TestNode::start(SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    create_topic(&mut wire, "t", 1).await;
    let producer = Producer::init(&mut wire, "txn-s", 60_000, true).await;
    let late = (producer.producer_id, producer.epoch, 5);
    let code = produce(&mut wire, Some("txn-s"), "t", 0, late, true, &["late"], 12).await;
    assert_eq!(code, 45, "OUT_OF_ORDER_SEQUENCE_NUMBER");
    let first = (producer.producer_id, producer.epoch, 0);
    let code = produce(
        &mut wire,
        Some("txn-s"),
        "t",
        0,
        first,
        true,
        &["first"],
        12,
    )
    .await;
    assert_eq!(code, NONE);
    node.stop().await;
}

#[tokio::test]
async fn commit_and_abort_at_transaction_version_1() {
    commit_and_abort(false).await;
}

#[tokio::test]
async fn commit_and_abort_at_transaction_version_2() {
    commit_and_abort(true).await;
}

/// KIP-890 part 1: at transaction version 1 a transactional batch for a partition the
/// producer did not add is refused by the leader (no hanging transaction).
#[tokio::test]
async fn a_partition_not_added_is_refused_by_the_leader() {
    let node = TestNode::start(SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    set_transaction_version(&mut wire, 1).await;
    create_topic(&mut wire, "t", 1).await;
    let producer = Producer::init(&mut wire, "txn-v", 60_000, false).await;
    let code = produce(
        &mut wire,
        Some("txn-v"),
        "t",
        0,
        (producer.producer_id, producer.epoch, 0),
        true,
        &["stray"],
        11,
    )
    .await;
    assert_eq!(code, INVALID_TXN_STATE);
    let fetched = fetch(&mut wire, "t", 0, 0, false).await;
    assert!(fetched.records.is_empty());
    node.stop().await;
}

/// Zombie fencing: a second InitProducerId bumps the epoch and aborts the first
/// producer's open transaction; the first one's writes and EndTxn are refused.
#[tokio::test]
async fn a_second_producer_fences_the_first() {
    for v2 in [false, true] {
        let node = TestNode::start(SETTINGS).await;
        let mut wire = Wire::connect(node.address).await;
        set_transaction_version(&mut wire, if v2 { 2 } else { 1 }).await;
        create_topic(&mut wire, "t", 1).await;
        let mut zombie = Producer::init(&mut wire, "txn-z", 60_000, v2).await;
        assert_eq!(zombie.send(&mut wire, "t", 0, &["zombie-1"]).await, NONE);
        let mut fresh = Producer::init(&mut wire, "txn-z", 60_000, v2).await;
        assert_eq!(fresh.producer_id, zombie.producer_id);
        assert!(
            fresh.epoch > zombie.epoch + 1,
            "fence bump, then the new epoch"
        );
        // The zombie's open transaction was aborted.
        let fetched = await_stable(&mut wire, "t", 0, 2).await;
        assert_eq!(fetched.aborted, vec![(zombie.producer_id, 0)]);
        // Its later writes and its EndTxn are refused.
        let code = zombie.send(&mut wire, "t", 0, &["zombie-2"]).await;
        assert!(
            matches!(code, INVALID_PRODUCER_EPOCH | PRODUCER_FENCED),
            "v2={v2}: {code}"
        );
        let code = zombie.end(&mut wire, true).await;
        assert!(
            matches!(code, INVALID_PRODUCER_EPOCH | PRODUCER_FENCED),
            "{code}"
        );
        // The new producer commits.
        assert_eq!(fresh.send(&mut wire, "t", 0, &["fresh"]).await, NONE);
        let end = fetch(&mut wire, "t", 0, 0, false).await.high_watermark;
        assert_eq!(fresh.end(&mut wire, true).await, NONE);
        let fetched = await_stable(&mut wire, "t", 0, end + 1).await;
        assert_eq!(committed_values(&fetched), vec!["fresh"]);
        node.stop().await;
    }
}

/// A transaction that outlives its timeout is aborted by the coordinator and
/// unblocks read_committed consumers.
#[tokio::test]
async fn a_hanging_transaction_is_aborted_after_its_timeout() {
    let node = TestNode::start(SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    set_transaction_version(&mut wire, 1).await;
    create_topic(&mut wire, "t", 1).await;
    let mut producer = Producer::init(&mut wire, "txn-h", 300, false).await;
    assert_eq!(producer.send(&mut wire, "t", 0, &["hung"]).await, NONE);
    // A non-transactional record after it is held back by the LSO.
    assert_eq!(
        produce(&mut wire, None, "t", 0, (-1, -1, -1), false, &["later"], 11).await,
        NONE
    );
    let blocked = fetch(&mut wire, "t", 0, 0, true).await;
    assert_eq!(blocked.last_stable_offset, 0);
    assert!(blocked.records.is_empty());
    let fetched = await_stable(&mut wire, "t", 0, 3).await;
    let pid = producer.producer_id;
    assert_eq!(fetched.aborted, vec![(pid, 0)]);
    assert_eq!(committed_values(&fetched), vec!["later"]);
    let state = describe(&mut wire, "txn-h").await;
    assert!(
        state.producer_epoch > producer.epoch,
        "the abort fenced the epoch: {state:?}"
    );
    node.stop().await;
}

/// Offsets committed in a transaction count once it commits; meanwhile a fetch with
/// require_stable answers UNSTABLE_OFFSET_COMMIT. Aborted ones never count.
#[tokio::test]
async fn transactional_offsets_count_when_the_transaction_commits() {
    let node = TestNode::start(SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    set_transaction_version(&mut wire, 1).await;
    create_topic(&mut wire, "in", 1).await;
    let find = FindCoordinatorRequest::default()
        .with_key_type(0)
        .with_coordinator_keys(vec![s("eos-group")]);
    assert_eq!(wire.call(&find, 4).await.coordinators[0].error_code, NONE);
    let mut producer = Producer::init(&mut wire, "txn-o", 60_000, false).await;
    for (offset, commit) in [(7, false), (9, true)] {
        let add = AddOffsetsToTxnRequest::default()
            .with_transactional_id(producer.tid())
            .with_producer_id(ProducerId(producer.producer_id))
            .with_producer_epoch(producer.epoch)
            .with_group_id(GroupId(s("eos-group")));
        assert_eq!(wire.call(&add, 3).await.error_code, NONE);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let commit_offsets = TxnOffsetCommitRequest::default()
                .with_transactional_id(producer.tid())
                .with_group_id(GroupId(s("eos-group")))
                .with_producer_id(ProducerId(producer.producer_id))
                .with_producer_epoch(producer.epoch)
                .with_generation_id(-1)
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(TopicName(s("in")))
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(offset)
                                .with_committed_leader_epoch(-1),
                        ]),
                ]);
            let code = wire.call(&commit_offsets, 3).await.topics[0].partitions[0].error_code;
            if code == NONE {
                break;
            }
            assert!(
                matches!(code, COORDINATOR_LOAD_IN_PROGRESS | NOT_COORDINATOR)
                    && Instant::now() < deadline,
                "{code}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let fetch_offsets = OffsetFetchRequest::default()
            .with_group_id(GroupId(s("eos-group")))
            .with_topics(Some(vec![
                OffsetFetchRequestTopic::default()
                    .with_name(TopicName(s("in")))
                    .with_partition_indexes(vec![0]),
            ]))
            .with_require_stable(true);
        let pending = wire.call(&fetch_offsets, 7).await;
        assert_eq!(
            pending.topics[0].partitions[0].error_code,
            UNSTABLE_OFFSET_COMMIT
        );
        assert_eq!(producer.end(&mut wire, commit).await, NONE);
        let expected = if commit { 9 } else { -1 };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let fetched = wire.call(&fetch_offsets, 7).await;
            let p = &fetched.topics[0].partitions[0];
            if p.error_code == NONE {
                assert_eq!(p.committed_offset, expected, "commit={commit}");
                break;
            }
            assert!(Instant::now() < deadline, "{fetched:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // The committed offset survives a restart (replayed with its marker).
    let dir = node.stop().await;
    let node = TestNode::start_in(dir, SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    let fetch_offsets = OffsetFetchRequest::default()
        .with_group_id(GroupId(s("eos-group")))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(TopicName(s("in")))
                .with_partition_indexes(vec![0]),
        ]))
        .with_require_stable(true);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let fetched = wire.call(&fetch_offsets, 7).await;
        if fetched.error_code == NONE && fetched.topics[0].partitions[0].error_code == NONE {
            assert_eq!(fetched.topics[0].partitions[0].committed_offset, 9);
            break;
        }
        assert!(Instant::now() < deadline, "{fetched:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    node.stop().await;
}

/// The coordinator's state is in `__transaction_state`: after a restart the id keeps
/// its producer id, the next InitProducerId bumps its epoch, and an open transaction
/// of the old epoch is aborted.
#[tokio::test]
async fn transactions_survive_a_restart() {
    let node = TestNode::start(SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    set_transaction_version(&mut wire, 1).await;
    create_topic(&mut wire, "t", 1).await;
    let mut producer = Producer::init(&mut wire, "txn-r", 60_000, false).await;
    assert_eq!(producer.send(&mut wire, "t", 0, &["c"]).await, NONE);
    assert_eq!(producer.end(&mut wire, true).await, NONE);
    await_stable(&mut wire, "t", 0, 2).await;
    assert_eq!(producer.send(&mut wire, "t", 0, &["open"]).await, NONE);
    let dir = node.stop().await;
    let node = TestNode::start_in(dir, SETTINGS).await;
    let mut wire = Wire::connect(node.address).await;
    let list = ListTransactionsRequest::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listed = wire.call(&list, 1).await;
        if listed.error_code == NONE
            && listed
                .transaction_states
                .iter()
                .any(|t| t.transactional_id.0.as_str() == "txn-r")
        {
            let ours = listed
                .transaction_states
                .iter()
                .find(|t| t.transactional_id.0.as_str() == "txn-r")
                .unwrap();
            assert_eq!(ours.transaction_state.as_str(), "Ongoing");
            assert_eq!(ours.producer_id.0, producer.producer_id);
            break;
        }
        assert!(Instant::now() < deadline, "{listed:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = Producer::init(&mut wire, "txn-r", 60_000, false).await;
    assert_eq!(again.producer_id, producer.producer_id);
    assert!(again.epoch > producer.epoch);
    let fetched = await_stable(&mut wire, "t", 0, 4).await;
    assert_eq!(fetched.aborted, vec![(producer.producer_id, 2)]);
    assert_eq!(committed_values(&fetched), vec!["c"]);
    let filtered = wire
        .call(
            &ListTransactionsRequest::default().with_state_filters(vec![s("Ongoing")]),
            1,
        )
        .await;
    assert!(filtered.transaction_states.is_empty(), "{filtered:?}");
    // v2's transactional id pattern matches whole ids (KIP-1152).
    for (pattern, listed, code) in [
        ("txn-r", 1, NONE),
        ("txn", 0, NONE),
        ("t.*", 1, NONE),
        ("(", 0, 128),
    ] {
        let response = wire
            .call(
                &ListTransactionsRequest::default().with_transactional_id_pattern(Some(s(pattern))),
                2,
            )
            .await;
        assert_eq!(response.error_code, code, "{pattern}");
        assert_eq!(
            response.transaction_states.len(),
            listed,
            "{pattern}: {response:?}"
        );
    }
    node.stop().await;
}

/// The node id and address FindCoordinator names for a transactional id.
async fn txn_coordinator(address: std::net::SocketAddr, id: &str) -> (i32, std::net::SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut wire = Wire::connect(address).await;
        let find = FindCoordinatorRequest::default()
            .with_key_type(1)
            .with_coordinator_keys(vec![s(id)]);
        let found = wire.call(&find, 4).await.coordinators.remove(0);
        if found.error_code == NONE {
            let port = u16::try_from(found.port).unwrap();
            return (
                found.node_id.0,
                std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            );
        }
        assert!(Instant::now() < deadline, "{found:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Across a cluster: the coordinator and the partitions' leaders are different nodes,
/// so leaders verify (v1) or add (v2) partitions at a remote coordinator and markers
/// travel as WriteTxnMarkers; when the coordinator's node stops, the new coordinator
/// (another replica of its `__transaction_state` partition) loads the open transaction
/// and a new producer's InitProducerId aborts it on every partition.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_span_the_nodes_of_a_cluster() {
    let settings = [
        ("transaction.state.log.num.partitions", "1"),
        ("transaction.state.log.replication.factor", "3"),
        ("transaction.state.log.min.isr", "2"),
        ("offsets.topic.num.partitions", "1"),
        ("offsets.topic.replication.factor", "3"),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "100",
        ),
    ];
    let mut cluster = common::TestCluster::start(3, &settings).await;
    let addresses = cluster.addresses();
    let (coordinator_id, coordinator) = txn_coordinator(addresses[0], "spread").await;
    let others: Vec<i32> = cluster
        .nodes
        .iter()
        .map(|n| n.id)
        .filter(|id| *id != coordinator_id)
        .collect();
    let address_of = |cluster: &common::TestCluster, id: i32| {
        cluster.nodes.iter().find(|n| n.id == id).unwrap().address()
    };
    // One partition on each other node, replicated to the third, so they survive the
    // coordinator's node stopping.
    let placements = [
        ("left", vec![others[0], others[1]]),
        ("right", vec![others[1], others[0]]),
    ];
    for (topic, replicas) in &placements {
        assert_eq!(
            common::create_assigned(addresses[0], topic, replicas, &[]).await,
            NONE
        );
    }
    let mut coordinator_wire = Wire::connect(coordinator).await;
    let mut leader_wires = Vec::new();
    for (_, replicas) in &placements {
        leader_wires.push(Wire::connect(address_of(&cluster, replicas[0])).await);
    }
    for (round, v2) in [false, true].into_iter().enumerate() {
        let level = if v2 { 2 } else { 1 };
        set_transaction_version(&mut coordinator_wire, level).await;
        // Every leader must see the new level before a client acts on it (it decides
        // whether a leader verifies or adds partitions).
        for wire in leader_wires.iter_mut() {
            let deadline = Instant::now() + Duration::from_secs(10);
            while finalized_transaction_version(wire).await != Some(level) {
                assert!(
                    Instant::now() < deadline,
                    "the level did not reach every node"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        let mut producer = Producer::init(&mut coordinator_wire, "spread", 60_000, v2).await;
        for commit in [false, true] {
            let mut ends = Vec::new();
            for ((topic, _), wire) in placements.iter().zip(leader_wires.iter_mut()) {
                if !v2 {
                    assert_eq!(producer.add(&mut coordinator_wire, topic, &[0]).await, NONE);
                }
                ends.push(fetch(wire, topic, 0, 0, false).await.high_watermark);
                let value = format!("{topic}-{round}-{commit}");
                let deadline = Instant::now() + Duration::from_secs(10);
                let key = (topic.to_string(), 0);
                let sequence = *producer.sequences.get(&key).unwrap_or(&0);
                producer.sequences.insert(key, sequence + 1);
                loop {
                    let code = produce(
                        wire,
                        Some("spread"),
                        topic,
                        0,
                        (producer.producer_id, producer.epoch, sequence),
                        true,
                        &[&value],
                        if v2 { 12 } else { 11 },
                    )
                    .await;
                    if code == NONE {
                        break;
                    }
                    // NOT_ENOUGH_REPLICAS: the leader could not reach the coordinator yet.
                    assert!(code == 19 && Instant::now() < deadline, "{topic}: {code}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
            assert_eq!(producer.end(&mut coordinator_wire, commit).await, NONE);
            for (((topic, _), wire), end) in
                placements.iter().zip(leader_wires.iter_mut()).zip(ends)
            {
                let fetched = await_stable(wire, topic, 0, end + 2).await;
                let visible =
                    committed_values(&fetched).contains(&format!("{topic}-{round}-{commit}"));
                assert_eq!(visible, commit, "{topic}: {fetched:?}");
            }
        }
    }
    // An open transaction survives its coordinator's node stopping.
    let mut producer = Producer::init(&mut coordinator_wire, "spread", 60_000, true).await;
    let ((topic, _), wire) = (&placements[0], &mut leader_wires[0]);
    let end = fetch(wire, topic, 0, 0, false).await.high_watermark;
    assert_eq!(producer.send(wire, topic, 0, &["orphan"]).await, NONE);
    drop(coordinator_wire);
    let index = cluster
        .nodes
        .iter()
        .position(|n| n.id == coordinator_id)
        .unwrap();
    cluster.stop(index).await;
    let survivor = address_of(&cluster, others[0]);
    let (new_id, new_coordinator) = txn_coordinator(survivor, "spread").await;
    assert_ne!(new_id, coordinator_id);
    let mut wire_to_new = Wire::connect(new_coordinator).await;
    let fresh = Producer::init(&mut wire_to_new, "spread", 60_000, true).await;
    assert_eq!(fresh.producer_id, producer.producer_id);
    assert!(fresh.epoch > producer.epoch);
    let fetched = await_stable(&mut leader_wires[0], topic, 0, end + 2).await;
    assert!(
        !committed_values(&fetched).contains(&"orphan".to_string()),
        "{fetched:?}"
    );
    assert!(
        fetched.aborted.contains(&(producer.producer_id, end)),
        "{fetched:?}"
    );
    cluster.shutdown().await;
}
