//! Producer snapshot files (`{offset:020}.snapshot`): written at roll and clean close,
//! loaded on open (skipping corrupt ones) with the batches after them replayed, kept in
//! step with retention and truncation; and producer expiry.

mod common;

use std::path::{Path, PathBuf};

use common::{open, open_clean, small_segments};
use sluice_protocol::{Compression, NewRecord, RecordBatchBuilder};
use sluice_storage::producer_state::{
    SequenceError, SnapshotEntry, decode_snapshot, encode_snapshot,
};
use sluice_storage::{Log, LogConfig, LogManager, StorageError, TopicPartition, lock, now_ms};

fn producer_batch_at(
    producer_id: i64,
    epoch: i16,
    sequence: i32,
    count: usize,
    timestamp: i64,
) -> Vec<u8> {
    let mut builder =
        RecordBatchBuilder::new(Compression::None).producer(producer_id, epoch, sequence);
    for i in 0..count {
        builder
            .append(&NewRecord {
                timestamp: timestamp + i as i64,
                key: None,
                value: Some(bytes::Bytes::from(vec![b'x'; 40])),
                headers: vec![],
            })
            .unwrap();
    }
    builder.build().to_vec()
}

fn producer_batch(producer_id: i64, epoch: i16, sequence: i32, count: usize) -> Vec<u8> {
    producer_batch_at(producer_id, epoch, sequence, count, now_ms())
}

/// Small enough that every batch of these tests rolls a new segment.
fn one_batch_per_segment() -> LogConfig {
    small_segments(150)
}

fn snapshot_path(dir: &Path, offset: i64) -> PathBuf {
    dir.join(format!("{offset:020}.snapshot"))
}

/// The snapshot offsets on disk, sorted.
fn snapshot_files(dir: &Path) -> Vec<i64> {
    let mut offsets: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".snapshot")
                .map(|stem| stem.parse().unwrap())
        })
        .collect();
    offsets.sort_unstable();
    offsets
}

fn append(log: &mut Log, mut batch: Vec<u8>) -> sluice_storage::LogAppendInfo {
    log.append_as_leader(&mut batch, 0, now_ms()).unwrap()
}

/// Producer 42's batch at offsets 0..=2, in the first segment; then producer 7's
/// batches, one segment each, up to offset 8; the active segment holds producer 7's
/// last batch (offsets 9..=9).
fn write_several_segments(dir: &Path) -> Log {
    let mut log = open(dir, one_batch_per_segment());
    let first = append(&mut log, producer_batch(42, 0, 0, 3));
    assert_eq!((first.first_offset, first.last_offset), (0, 2));
    for sequence in 0..7 {
        append(&mut log, producer_batch(7, 3, sequence, 1));
    }
    assert_eq!(log.log_end_offset(), 10);
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, 3, 4, 5, 6, 7, 8, 9]);
    // One snapshot per roll, as of the new segment's base offset.
    assert_eq!(snapshot_files(dir), vec![3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(log.producer_snapshot_offsets(), vec![3, 4, 5, 6, 7, 8, 9]);
    log
}

fn assert_duplicate(log: &mut Log, batch: Vec<u8>, offsets: (i64, i64)) {
    let end = log.log_end_offset();
    let info = append(log, batch);
    assert!(
        info.duplicate,
        "expected a duplicate of {offsets:?}: {info:?}"
    );
    assert_eq!((info.first_offset, info.last_offset), offsets);
    assert_eq!(log.log_end_offset(), end, "a duplicate appends nothing");
}

#[test]
fn snapshots_are_kafkas_files_at_each_roll_and_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_several_segments(dir.path());
    // The snapshot at 3 (taken when the second segment rolled) holds producer 42 only.
    let at_3 = decode_snapshot(&std::fs::read(snapshot_path(dir.path(), 3)).unwrap()).unwrap();
    assert_eq!(at_3.len(), 1);
    let entry = at_3[0];
    assert_eq!(
        (
            entry.producer_id,
            entry.epoch,
            entry.last_sequence,
            entry.last_offset,
            entry.offset_delta,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
        ),
        (42, 0, 2, 2, 2, -1, -1)
    );
    // The one at 9: both producers, in producer id order; producer 7's last batch is
    // sequence 5 at offset 8.
    let at_9 = decode_snapshot(&std::fs::read(snapshot_path(dir.path(), 9)).unwrap()).unwrap();
    let summary: Vec<(i64, i16, i32, i64)> = at_9
        .iter()
        .map(|e| (e.producer_id, e.epoch, e.last_sequence, e.last_offset))
        .collect();
    assert_eq!(summary, vec![(7, 3, 5, 8), (42, 0, 2, 2)]);
    // A clean close adds one at the log end offset, holding the whole state.
    log.close().unwrap();
    assert_eq!(snapshot_files(dir.path()), vec![3, 4, 5, 6, 7, 8, 9, 10]);
    let at_end = std::fs::read(snapshot_path(dir.path(), 10)).unwrap();
    assert_eq!(at_end, log.producer_state().to_snapshot());
    assert_eq!(at_end.len(), 10 + 2 * 46);
    // A second close with nothing appended writes nothing new.
    log.close().unwrap();
    assert_eq!(snapshot_files(dir.path()).len(), 8);
}

/// Failed before snapshots: the state was rebuilt from the active segment only.
#[test]
fn a_restarted_log_deduplicates_a_retry_whose_batch_is_in_an_old_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_several_segments(dir.path());
    log.close().unwrap();
    drop(log);

    let mut log = open_clean(dir.path(), one_batch_per_segment());
    assert_eq!(log.log_end_offset(), 10);
    assert!(log.producer_state().contains(42));
    assert!(!log.segments()[0].active);
    // Producer 42's batch is in the first of eight segments: its retry gets offsets 0..=2.
    assert_duplicate(&mut log, producer_batch(42, 0, 0, 3), (0, 2));
    // Its next sequence is 3, and a gap is still refused.
    assert!(matches!(
        log.append_as_leader(&mut producer_batch(42, 0, 5, 1), 0, now_ms()),
        Err(StorageError::Sequence(SequenceError::OutOfOrder {
            expected: 3,
            ..
        }))
    ));
    let next = append(&mut log, producer_batch(42, 0, 3, 1));
    assert!(!next.duplicate);
    assert_eq!(next.first_offset, 10);
    // Producer 7's last batch (sequence 6, offset 9) is a duplicate too.
    assert_duplicate(&mut log, producer_batch(7, 3, 6, 1), (9, 9));
    // An unclean restart (no close, so no snapshot at the end) keeps it as well.
    drop(log);
    let mut log = open(dir.path(), one_batch_per_segment());
    assert_duplicate(&mut log, producer_batch(42, 0, 3, 1), (10, 10));
}

#[test]
fn an_unclean_open_loads_the_newest_snapshot_below_the_end_and_replays_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_several_segments(dir.path());
    // Two more batches in the active segment (offsets 9 and 10 stay in it once the
    // segment is big enough: use a bigger config from here).
    drop(log);
    let config = small_segments(1 << 20);
    log = open(dir.path(), config.clone());
    append(&mut log, producer_batch(7, 3, 7, 1));
    append(&mut log, producer_batch(99, 1, 0, 2));
    assert_eq!(log.log_end_offset(), 13);
    // Mark the snapshot at 9 (the active segment's base): add a producer that is in no
    // batch. If the state has it after the open, the snapshot was loaded.
    let path = snapshot_path(dir.path(), 9);
    let mut entries = decode_snapshot(&std::fs::read(&path).unwrap()).unwrap();
    entries.push(SnapshotEntry {
        producer_id: 5_000,
        epoch: 0,
        last_sequence: 10,
        last_offset: 1,
        offset_delta: 0,
        timestamp: now_ms(),
        coordinator_epoch: -1,
        current_txn_first_offset: -1,
    });
    std::fs::write(&path, encode_snapshot(&entries)).unwrap();
    // The first unclean open wrote a snapshot at 10; remove it so that 9 is newest.
    let newest = *snapshot_files(dir.path()).last().unwrap();
    assert_eq!(newest, 10);
    std::fs::remove_file(snapshot_path(dir.path(), 10)).unwrap();
    drop(log); // a crash: no close, no snapshot at 13

    let mut log = open(dir.path(), config);
    let state = log.producer_state();
    assert!(state.contains(5_000), "the snapshot at 9 was loaded");
    assert!(state.contains(99), "the batches after it were replayed");
    assert_eq!(state.len(), 4);
    assert_duplicate(&mut log, producer_batch(99, 1, 0, 2), (11, 12));
    assert_duplicate(&mut log, producer_batch(7, 3, 7, 1), (10, 10));
    assert_duplicate(&mut log, producer_batch(42, 0, 0, 3), (0, 2));
    // Having replayed, the open wrote a snapshot at the log end for next time.
    assert_eq!(*snapshot_files(dir.path()).last().unwrap(), 13);
    let at_end = decode_snapshot(&std::fs::read(snapshot_path(dir.path(), 13)).unwrap()).unwrap();
    assert_eq!(at_end.len(), 4);
}

#[test]
fn a_corrupt_snapshot_is_skipped_for_the_one_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_several_segments(dir.path());
    log.close().unwrap();
    drop(log);
    // The close's snapshot (10) gets a flipped byte, the last roll's (9) is cut short.
    let path = snapshot_path(dir.path(), 10);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[20] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let path = snapshot_path(dir.path(), 9);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();

    let mut log = open_clean(dir.path(), one_batch_per_segment());
    // 8 was loaded; 9 and 10 were deleted, and a good one written at 10 after replaying.
    assert_eq!(snapshot_files(dir.path()), vec![3, 4, 5, 6, 7, 8, 10]);
    let rewritten = std::fs::read(snapshot_path(dir.path(), 10)).unwrap();
    assert_eq!(decode_snapshot(&rewritten).unwrap().len(), 2);
    assert_duplicate(&mut log, producer_batch(42, 0, 0, 3), (0, 2));
    assert_duplicate(&mut log, producer_batch(7, 3, 6, 1), (9, 9));
    log.close().unwrap();
    drop(log);

    // Every snapshot unreadable (empty, garbage, wrong version): the state starts
    // empty at the log start and all the batches are replayed.
    for (i, offset) in snapshot_files(dir.path()).into_iter().enumerate() {
        let contents: &[u8] = match i % 3 {
            0 => b"",
            1 => b"not a snapshot at all",
            _ => &[0, 2, 0, 0, 0, 0, 0, 0, 0, 0],
        };
        std::fs::write(snapshot_path(dir.path(), offset), contents).unwrap();
    }
    let mut log = open_clean(dir.path(), one_batch_per_segment());
    assert_eq!(snapshot_files(dir.path()), vec![10]);
    assert_duplicate(&mut log, producer_batch(42, 0, 0, 3), (0, 2));
    assert_duplicate(&mut log, producer_batch(7, 3, 6, 1), (9, 9));
}

#[test]
fn expiry_drops_producers_idle_past_producer_id_expiration_ms() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        producer_id_expiration_ms: 60_000,
        ..LogConfig::default()
    };
    let now = now_ms();
    let mut log = open(dir.path(), config.clone());
    append(&mut log, producer_batch_at(1, 0, 0, 2, now - 120_000));
    append(&mut log, producer_batch_at(2, 0, 0, 2, now - 1_000));
    assert_eq!(log.producer_state().len(), 2);
    assert_eq!(log.remove_expired_producers(now), 1);
    assert!(!log.producer_state().contains(1));
    assert!(log.producer_state().contains(2));
    // Producer 1 is unknown now: its retry is appended afresh, not deduplicated.
    let again = append(&mut log, producer_batch_at(1, 0, 0, 2, now - 120_000));
    assert!(!again.duplicate);
    assert_eq!(again.first_offset, 4);
    assert_duplicate(&mut log, producer_batch_at(2, 0, 0, 2, now - 1_000), (2, 3));
    // Loading a snapshot leaves out producers expired by then, too.
    log.close().unwrap();
    drop(log);
    let log = open_clean(dir.path(), config);
    assert!(!log.producer_state().contains(1));
    assert!(log.producer_state().contains(2));
    drop(log);

    // The log manager's periodic tasks run the expiry.
    let manager_dir = tempfile::tempdir().unwrap();
    let mut manager = LogManager::open(manager_dir.path(), LogConfig::default()).unwrap();
    let shared = manager
        .get_or_create(&TopicPartition::new("t", 0), None, None)
        .unwrap();
    append(
        &mut lock(&shared),
        producer_batch_at(3, 0, 0, 1, now - 2 * 86_400_000),
    );
    append(&mut lock(&shared), producer_batch_at(4, 0, 0, 1, now));
    manager.run_periodic_tasks(now, |_| i64::MAX).unwrap();
    let state: Vec<bool> = [3, 4]
        .iter()
        .map(|id| lock(&shared).producer_state().contains(*id))
        .collect();
    assert_eq!(state, vec![false, true]);
}

#[test]
fn snapshots_follow_retention_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_several_segments(dir.path());
    // DeleteRecords to 6 removes the segments below it and the snapshots below 6.
    log.delete_records(6).unwrap();
    assert_eq!(log.log_start_offset(), 6);
    assert_eq!(snapshot_files(dir.path()), vec![6, 7, 8, 9]);
    assert_eq!(log.producer_snapshot_offsets(), vec![6, 7, 8, 9]);
    // Producer 42's batch is gone from the log, but its state is kept (as Kafka keeps
    // it) and the snapshots written after its batch still carry it.
    assert!(log.producer_state().contains(42));

    // Truncation to 7 deletes the snapshots above 7 and reloads from the one at 7:
    // producer 7's batches at 7..=9 are forgotten, the one at 6 is its last.
    log.truncate_to(7).unwrap();
    assert_eq!(log.log_end_offset(), 7);
    assert_eq!(snapshot_files(dir.path()), vec![6, 7]);
    assert!(matches!(
        log.append_as_leader(&mut producer_batch(7, 3, 6, 1), 0, now_ms()),
        Err(StorageError::Sequence(SequenceError::OutOfOrder {
            expected: 4,
            ..
        }))
    ));
    assert_duplicate(&mut log, producer_batch(7, 3, 3, 1), (6, 6));
    assert_duplicate(&mut log, producer_batch(42, 0, 0, 3), (0, 2));

    // A new batch rolls a segment at 7 (its snapshot is there already); time retention
    // then deletes the segment at 6 and its snapshot (a high watermark at 7 keeps the
    // expired active segment).
    append(&mut log, producer_batch(7, 3, 4, 1));
    assert_eq!(log.segments().len(), 2);
    assert_eq!(
        log.delete_old_segments_below(now_ms() + 30 * 86_400_000, 7)
            .unwrap(),
        1
    );
    assert_eq!(log.log_start_offset(), 7);
    assert_eq!(snapshot_files(dir.path()), vec![7]);

    // A full truncation removes them all.
    log.truncate_fully_and_start_at(100).unwrap();
    assert!(snapshot_files(dir.path()).is_empty());
    assert!(log.producer_state().is_empty());
}

#[test]
fn open_removes_stray_snapshots_but_keeps_the_close_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = write_several_segments(dir.path());
    log.close().unwrap();
    drop(log);
    // Strays: one between segment bases, one past the log end, one below the newest
    // base that matches no segment.
    for offset in [2, 5_000] {
        std::fs::copy(
            snapshot_path(dir.path(), 10),
            snapshot_path(dir.path(), offset),
        )
        .unwrap();
    }
    let log = open_clean(dir.path(), one_batch_per_segment());
    // 2 is a stray below the last base; 5000 is past the log end; 10 (the close's) stays.
    assert_eq!(snapshot_files(dir.path()), vec![3, 4, 5, 6, 7, 8, 9, 10]);
    assert_eq!(log.producer_snapshot_offsets(), snapshot_files(dir.path()));
    assert!(log.producer_state().contains(42));
}
