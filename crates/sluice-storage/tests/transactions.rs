//! Transactions in the partition log: transactional batches open a producer's
//! transaction, markers end it, the first unstable offset follows the earliest open one,
//! aborts are indexed in `.txnindex` files in Kafka's layout, and all of it survives
//! clean and unclean restarts, truncation, retention and replication.

mod common;

use std::path::{Path, PathBuf};

use common::{open, open_clean, small_segments};
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder, batches};
use sluice_storage::producer_state::{SequenceError, decode_snapshot};
use sluice_storage::transaction_index::decode_transaction_index;
use sluice_storage::{AbortedTxn, Log, LogConfig, StorageError, TxnMarker, now_ms};

const LEADER_EPOCH: i32 = 3;

/// A batch of `count` records from `producer_id`, transactional or not.
fn batch(
    producer_id: i64,
    epoch: i16,
    sequence: i32,
    count: usize,
    transactional: bool,
) -> Vec<u8> {
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(producer_id, epoch, sequence)
        .transactional(transactional);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp: now_ms() + i as i64,
                key: None,
                value: Some(bytes::Bytes::from(vec![b't'; 30])),
                headers: vec![],
            })
            .unwrap();
    }
    builder.build().to_vec()
}

/// A producer that numbers its batches.
struct Producer {
    id: i64,
    epoch: i16,
    sequence: i32,
}

impl Producer {
    fn new(id: i64) -> Producer {
        Producer {
            id,
            epoch: 0,
            sequence: 0,
        }
    }

    /// Appends a transactional batch; returns its first offset.
    fn send(&mut self, log: &mut Log, count: usize) -> i64 {
        let mut bytes = batch(self.id, self.epoch, self.sequence, count, true);
        self.sequence += count as i32;
        log.append_as_leader(&mut bytes, LEADER_EPOCH, now_ms())
            .unwrap()
            .first_offset
    }

    fn marker(&self, coordinator_epoch: i32, commit: bool) -> TxnMarker {
        TxnMarker {
            producer_id: self.id,
            producer_epoch: self.epoch,
            coordinator_epoch,
            commit,
        }
    }

    /// Ends the transaction; returns the marker's offset.
    fn end(&self, log: &mut Log, commit: bool) -> i64 {
        let info = log
            .append_control_marker(&self.marker(0, commit), LEADER_EPOCH, now_ms())
            .unwrap();
        assert_eq!(
            info.first_offset, info.last_offset,
            "a marker is one record"
        );
        info.first_offset
    }
}

fn aborted(producer_id: i64, first_offset: i64, last_offset: i64, lso: i64) -> AbortedTxn {
    AbortedTxn {
        producer_id,
        first_offset,
        last_offset,
        last_stable_offset: lso,
    }
}

fn txn_index_path(dir: &Path, base_offset: i64) -> PathBuf {
    dir.join(format!("{base_offset:020}.txnindex"))
}

/// Every `.txnindex` in `dir` with its bytes, by base offset.
fn txn_index_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txnindex"))
        .map(|path| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&path).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

fn all_aborted(log: &Log) -> Vec<AbortedTxn> {
    log.collect_aborted_transactions(log.log_start_offset(), i64::MAX)
        .unwrap()
}

#[test]
fn interleaved_commits_and_aborts_move_the_lso_and_index_the_aborts() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let (mut one, mut two, mut three) = (Producer::new(1), Producer::new(2), Producer::new(3));
    assert_eq!(log.first_unstable_offset(), None);

    assert_eq!(one.send(&mut log, 2), 0); // 0..=1
    assert_eq!(log.first_unstable_offset(), Some(0));
    assert_eq!(two.send(&mut log, 1), 2);
    assert_eq!(one.send(&mut log, 1), 3);
    // A non-transactional idempotent producer does not hold the LSO.
    let mut plain = batch(3, 0, 0, 1, false);
    three.sequence = 1;
    assert_eq!(
        log.append_as_leader(&mut plain, LEADER_EPOCH, now_ms())
            .unwrap()
            .first_offset,
        4
    );
    assert_eq!(log.first_unstable_offset(), Some(0));
    assert_eq!(one.end(&mut log, true), 5);
    assert_eq!(log.first_unstable_offset(), Some(2), "producer 2's is left");
    assert_eq!(two.end(&mut log, false), 6);
    assert_eq!(log.first_unstable_offset(), None);
    // Only the abort is indexed; no other transaction was open: LSO = marker + 1.
    assert_eq!(all_aborted(&log), vec![aborted(2, 2, 6, 7)]);

    // Producer 1 aborts while producer 2's next transaction is open: LSO = its start.
    assert_eq!(one.send(&mut log, 1), 7);
    assert_eq!(two.send(&mut log, 2), 8); // 8..=9
    assert_eq!(one.end(&mut log, false), 10);
    assert_eq!(log.first_unstable_offset(), Some(8));
    assert_eq!(two.end(&mut log, true), 11);
    assert_eq!(log.first_unstable_offset(), None);
    // A marker for a producer with no open transaction is appended and ends nothing.
    assert_eq!(three.end(&mut log, false), 12);
    assert_eq!(
        all_aborted(&log),
        vec![aborted(2, 2, 6, 7), aborted(1, 7, 10, 8)]
    );

    // Kafka's rule for a read_committed fetch of [start, upper).
    let cases: &[(i64, i64, &[AbortedTxn])] = &[
        (0, 2, &[]),
        (0, 3, &[aborted(2, 2, 6, 7)]),
        (0, 7, &[aborted(2, 2, 6, 7)]),
        (6, 8, &[aborted(2, 2, 6, 7), aborted(1, 7, 10, 8)]),
        (7, 13, &[aborted(1, 7, 10, 8)]),
        (10, 11, &[aborted(1, 7, 10, 8)]),
        (11, 13, &[]),
    ];
    for (start, upper, expected) in cases {
        assert_eq!(
            log.collect_aborted_transactions(*start, *upper).unwrap(),
            expected.to_vec(),
            "[{start}, {upper})"
        );
    }

    // The index file holds Kafka's 34-byte entries, big-endian.
    #[rustfmt::skip]
    let expected: Vec<u8> = [
        &[0u8, 0][..], &[0, 0, 0, 0, 0, 0, 0, 2], &[0, 0, 0, 0, 0, 0, 0, 2],
        &[0, 0, 0, 0, 0, 0, 0, 6], &[0, 0, 0, 0, 0, 0, 0, 7],
        &[0, 0], &[0, 0, 0, 0, 0, 0, 0, 1], &[0, 0, 0, 0, 0, 0, 0, 7],
        &[0, 0, 0, 0, 0, 0, 0, 10], &[0, 0, 0, 0, 0, 0, 0, 8],
    ]
    .concat();
    assert_eq!(
        std::fs::read(txn_index_path(dir.path(), 0)).unwrap(),
        expected
    );

    // The markers are control batches in Kafka's format.
    let data = log.read(5, 1 << 20, Some(6), true).unwrap();
    let marker = batches(data.records).next().unwrap().unwrap();
    assert!(marker.is_control() && marker.is_transactional());
    assert_eq!(
        (
            marker.producer_id(),
            marker.base_sequence(),
            marker.partition_leader_epoch()
        ),
        (1, -1, LEADER_EPOCH)
    );
    let record = marker.records().unwrap().next().unwrap().unwrap();
    assert_eq!(record.key.as_deref(), Some(&[0, 0, 0, 1][..]));
    assert_eq!(record.value.as_deref(), Some(&[0, 0, 0, 0, 0, 0][..]));
}

#[test]
fn a_log_without_aborts_has_no_txnindex() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_segments(300));
    let mut one = Producer::new(1);
    for _ in 0..5 {
        one.send(&mut log, 2);
        one.end(&mut log, true);
    }
    assert!(log.segments().len() > 1);
    assert!(txn_index_files(dir.path()).is_empty());
    assert!(all_aborted(&log).is_empty());
}

/// A log of several segments with transactions that span segments, aborts in several
/// of them, and one transaction left open.
fn write_spanning_transactions(dir: &Path) -> Log {
    let mut log = open(dir, small_segments(400));
    let mut producers: Vec<Producer> = (1..=3).map(Producer::new).collect();
    for round in 0..6 {
        for producer in producers.iter_mut() {
            producer.send(&mut log, 1 + (round % 2));
        }
        // Producer (round % 3) ends its transaction: aborts on even rounds.
        let ending = &producers[round % 3];
        ending.end(&mut log, round % 2 == 1);
    }
    // Producer 3 ends, producer 1 stays open.
    producers[2].end(&mut log, false);
    producers[1].end(&mut log, false);
    log
}

#[test]
fn restarts_rebuild_ongoing_transactions_and_the_index_identically() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_spanning_transactions(dir.path());
    assert!(log.segments().len() >= 3, "{:?}", log.segments());
    let lso = log.first_unstable_offset();
    assert!(lso.is_some());
    let aborted_before = all_aborted(&log);
    let files_before = txn_index_files(dir.path());
    assert!(files_before.len() >= 2, "aborts in several segments");
    let ongoing = log.producer_state().ongoing_transactions();
    assert_eq!(ongoing.len(), 1);
    // Clean restart. The close's snapshot carries the open transaction and the
    // coordinator epoch of the producers' last markers.
    log.close().unwrap();
    let end = log.log_end_offset();
    drop(log);
    let entries = decode_snapshot(&std::fs::read(dir.path().join_snapshot(end)).unwrap()).unwrap();
    for entry in &entries {
        let open = (entry.current_txn_first_offset, entry.producer_id) == ongoing[0];
        assert!(open || entry.current_txn_first_offset == -1, "{entry:?}");
        assert_eq!(entry.coordinator_epoch, 0, "{entry:?}");
    }
    assert!(entries.iter().any(|e| e.current_txn_first_offset >= 0));
    let log = open_clean(dir.path(), small_segments(400));
    assert_eq!(log.first_unstable_offset(), lso);
    assert_eq!(log.producer_state().ongoing_transactions(), ongoing);
    assert_eq!(all_aborted(&log), aborted_before);
    assert_eq!(txn_index_files(dir.path()), files_before);
    drop(log);

    // Unclean restart, recovering everything (recovery point 0), with the index files
    // lost or damaged: rebuilt byte for byte.
    std::fs::remove_file(dir.path().join(&files_before[0].0)).unwrap();
    let last = dir.path().join(&files_before.last().unwrap().0);
    let bytes = std::fs::read(&last).unwrap();
    std::fs::write(&last, &bytes[..bytes.len() - 5]).unwrap();
    let log = open(dir.path(), small_segments(400));
    assert_eq!(log.first_unstable_offset(), lso);
    assert_eq!(log.producer_state().ongoing_transactions(), ongoing);
    assert_eq!(txn_index_files(dir.path()), files_before);
    assert_eq!(all_aborted(&log), aborted_before);
    drop(log);

    // A clean open with a damaged index rebuilds it too.
    std::fs::write(&last, [0xffu8; 34]).unwrap();
    let log = open_clean(dir.path(), small_segments(400));
    assert_eq!(txn_index_files(dir.path()), files_before);
    assert_eq!(log.first_unstable_offset(), lso);
}

trait SnapshotPath {
    fn join_snapshot(&self, offset: i64) -> PathBuf;
}

impl SnapshotPath for Path {
    fn join_snapshot(&self, offset: i64) -> PathBuf {
        self.join(format!("{offset:020}.snapshot"))
    }
}

#[test]
fn truncation_drops_index_entries_and_reopens_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let (mut one, mut two) = (Producer::new(1), Producer::new(2));
    one.send(&mut log, 1); // 0
    two.send(&mut log, 1); // 1
    assert_eq!(one.end(&mut log, false), 2);
    assert_eq!(two.end(&mut log, false), 3);
    assert_eq!(
        all_aborted(&log),
        vec![aborted(1, 0, 2, 1), aborted(2, 1, 3, 4)]
    );
    assert_eq!(log.first_unstable_offset(), None);
    // Cut producer 2's marker: its transaction is open again, its entry gone.
    log.truncate_to(3).unwrap();
    assert_eq!(all_aborted(&log), vec![aborted(1, 0, 2, 1)]);
    assert_eq!(log.first_unstable_offset(), Some(1));
    assert_eq!(
        std::fs::read(txn_index_path(dir.path(), 0)).unwrap().len(),
        34
    );
    // And the marker can be appended again.
    assert_eq!(two.end(&mut log, true), 3);
    assert_eq!(log.first_unstable_offset(), None);
    // A full truncation removes the index.
    log.truncate_to(0).unwrap();
    assert!(txn_index_files(dir.path()).is_empty());
    assert_eq!(log.first_unstable_offset(), None);
    assert!(all_aborted(&log).is_empty());
}

#[test]
fn retention_and_delete_records_delete_the_index_with_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_segments(300));
    let mut one = Producer::new(1);
    while log.segments().len() < 4 {
        one.send(&mut log, 1);
        one.end(&mut log, false);
    }
    let segments = log.segments();
    assert!(txn_index_path(dir.path(), segments[0].base_offset).exists());
    assert!(txn_index_path(dir.path(), segments[1].base_offset).exists());
    log.delete_records(segments[1].base_offset).unwrap();
    assert!(!txn_index_path(dir.path(), segments[0].base_offset).exists());
    assert!(txn_index_path(dir.path(), segments[1].base_offset).exists());
    let mut config = small_segments(300);
    config.retention_ms = 0;
    log.set_config(config).unwrap();
    log.delete_old_segments(now_ms() + 1_000).unwrap();
    for segment in &segments[..segments.len() - 1] {
        assert!(!txn_index_path(dir.path(), segment.base_offset).exists());
    }
    // Entries of the deleted segments are no longer returned.
    assert!(
        all_aborted(&log)
            .iter()
            .all(|txn| txn.last_offset >= log.log_start_offset())
    );
}

#[test]
fn markers_are_fenced_by_producer_and_coordinator_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let mut one = Producer::new(1);
    one.epoch = 4;
    one.send(&mut log, 1);
    let marker = |epoch: i16, coordinator_epoch: i32, commit: bool| TxnMarker {
        producer_id: 1,
        producer_epoch: epoch,
        coordinator_epoch,
        commit,
    };
    log.append_control_marker(&marker(4, 5, false), LEADER_EPOCH, now_ms())
        .unwrap();
    let end = log.log_end_offset();
    // An older producer epoch, an older coordinator epoch: refused, nothing written.
    assert!(matches!(
        log.append_control_marker(&marker(3, 5, true), LEADER_EPOCH, now_ms()),
        Err(StorageError::Sequence(SequenceError::StaleEpoch {
            current: 4,
            ..
        }))
    ));
    assert!(matches!(
        log.append_control_marker(&marker(4, 4, true), LEADER_EPOCH, now_ms()),
        Err(StorageError::Sequence(
            SequenceError::TransactionCoordinatorFenced {
                coordinator_epoch: 4,
                current: 5,
                ..
            }
        ))
    ));
    assert_eq!(log.log_end_offset(), end);
    // KIP-890: the coordinator bumps the epoch in the marker; the producer's next
    // transaction starts at sequence 0 of the new epoch.
    one.send(&mut log, 1);
    log.append_control_marker(&marker(5, 5, true), LEADER_EPOCH, now_ms())
        .unwrap();
    assert_eq!(log.first_unstable_offset(), None);
    let mut continuing = batch(1, 5, one.sequence, 1, true);
    assert!(matches!(
        log.append_as_leader(&mut continuing, LEADER_EPOCH, now_ms()),
        Err(StorageError::Sequence(SequenceError::OutOfOrder {
            expected: 0,
            ..
        }))
    ));
    let mut old_epoch = batch(1, 4, one.sequence, 1, true);
    assert!(matches!(
        log.append_as_leader(&mut old_epoch, LEADER_EPOCH, now_ms()),
        Err(StorageError::Sequence(SequenceError::StaleEpoch {
            current: 5,
            ..
        }))
    ));
    let mut fresh = batch(1, 5, 0, 1, true);
    let first = log
        .append_as_leader(&mut fresh, LEADER_EPOCH, now_ms())
        .unwrap()
        .first_offset;
    assert_eq!(log.first_unstable_offset(), Some(first));
}

#[test]
fn a_non_transactional_batch_during_a_transaction_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let mut one = Producer::new(1);
    one.send(&mut log, 2);
    let end = log.log_end_offset();
    let mut plain = batch(1, 0, one.sequence, 1, false);
    assert!(matches!(
        log.append_as_leader(&mut plain, LEADER_EPOCH, now_ms()),
        Err(StorageError::Sequence(SequenceError::InvalidTxnState {
            producer_id: 1,
            txn_first_offset: 0
        }))
    ));
    assert_eq!(log.log_end_offset(), end, "nothing was written");
    // The refused batch left no state: the sequence continues where it was.
    one.send(&mut log, 1);
    one.end(&mut log, true);
    let mut plain = batch(1, 0, one.sequence, 1, false);
    log.append_as_leader(&mut plain, LEADER_EPOCH, now_ms())
        .unwrap();
    // Clients may not write markers themselves.
    let mut control =
        sluice_storage::end_txn_marker::control_batch(&one.marker(0, true), 1).to_vec();
    assert!(matches!(
        log.append_as_leader(&mut control, LEADER_EPOCH, now_ms()),
        Err(StorageError::InvalidBatch(_))
    ));
}

#[test]
fn coordinator_appends_skip_sequences_but_track_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    // A group coordinator's transactional offset commits: base sequence -1.
    for _ in 0..2 {
        let mut commit = batch(9, 2, -1, 1, true);
        log.append_as_coordinator(&mut commit, LEADER_EPOCH, now_ms())
            .unwrap();
    }
    assert_eq!(log.first_unstable_offset(), Some(0));
    let mut stale = batch(9, 1, -1, 1, true);
    assert!(matches!(
        log.append_as_coordinator(&mut stale, LEADER_EPOCH, now_ms()),
        Err(StorageError::Sequence(SequenceError::StaleEpoch { .. }))
    ));
    let abort = TxnMarker {
        producer_id: 9,
        producer_epoch: 2,
        coordinator_epoch: 1,
        commit: false,
    };
    log.append_control_marker(&abort, LEADER_EPOCH, now_ms())
        .unwrap();
    assert_eq!(log.first_unstable_offset(), None);
    assert_eq!(all_aborted(&log), vec![aborted(9, 0, 2, 3)]);
}

#[test]
fn followers_replicate_transactions_and_their_index() {
    let leader_dir = tempfile::tempdir().unwrap();
    let leader = write_spanning_transactions(leader_dir.path());
    let follower_dir = tempfile::tempdir().unwrap();
    let mut follower = open(follower_dir.path(), small_segments(400));
    let mut offset = 0;
    while offset < leader.log_end_offset() {
        let data = leader.read(offset, 500, None, true).unwrap();
        follower
            .append_as_follower(&data.records, now_ms())
            .unwrap();
        offset = follower.log_end_offset();
    }
    assert_eq!(
        follower.first_unstable_offset(),
        leader.first_unstable_offset()
    );
    assert_eq!(
        follower.producer_state().ongoing_transactions(),
        leader.producer_state().ongoing_transactions()
    );
    assert_eq!(all_aborted(&follower), all_aborted(&leader));
    // Each entry is in the index of the segment holding its marker.
    for (name, bytes) in txn_index_files(follower_dir.path()) {
        let base: i64 = name.split('.').next().unwrap().parse().unwrap();
        for txn in decode_transaction_index(&bytes).unwrap() {
            let data = follower.read(txn.last_offset, 1, None, true).unwrap();
            let marker = batches(data.records).next().unwrap().unwrap();
            assert!(marker.is_control());
            assert!(follower.segments().iter().any(|s| s.base_offset == base
                && (s.base_offset..s.next_offset).contains(&txn.last_offset)));
        }
    }
}

/// Every batch written reads back after an unclean restart (recovery point 0): data and
/// markers, in one read.
#[test]
fn an_unclean_restart_reads_back_every_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    let mut producer = Producer::new(7);
    for i in 0..20 {
        producer.send(&mut log, 1);
        producer.end(&mut log, i % 3 != 0);
    }
    let end = log.log_end_offset();
    let before = log.read(0, 1 << 20, None, true).unwrap().records;
    assert_eq!(batches(before.clone()).count(), 40);
    drop(log);
    let log = open(dir.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), end);
    let after = log.read(0, 1 << 20, Some(end), true).unwrap().records;
    assert_eq!(
        batches(after.clone()).count(),
        40,
        "{} bytes read",
        after.len()
    );
    assert_eq!(after, before);
}
