//! The log cleaner: the guide's compaction example, tombstones and their delete
//! horizon, transactions (aborted data, markers), the last batch of each producer,
//! merged segments, a bounded offset map, `min.compaction.lag.ms`, and crashes between
//! writing the cleaned files and swapping them in.

mod common;

use std::path::Path;

use bytes::Bytes;
use common::{open, open_clean};
use sluice_protocol::{Compression, NewRecord, RecordBatch, RecordBatchBuilder, batches};
use sluice_storage::cleaner::{self, CLEANED_SUFFIX};
use sluice_storage::{Log, LogConfig, TxnMarker, now_ms};

const EPOCH: i32 = 1;
const MAP: usize = 1 << 20;

fn compacted() -> LogConfig {
    LogConfig {
        cleanup_compact: true,
        cleanup_delete: false,
        min_cleanable_dirty_ratio: 0.0,
        index_interval_bytes: 64,
        ..LogConfig::default()
    }
}

fn record(key: &str, value: Option<&str>, timestamp: i64) -> NewRecord {
    NewRecord {
        timestamp,
        key: Some(Bytes::from(key.to_string())),
        value: value.map(|v| Bytes::from(v.to_string())),
        headers: vec![],
    }
}

/// Appends one batch of `(key, value)` records; returns its first offset.
fn put_all(log: &mut Log, records: &[(&str, Option<&str>)], codec: Compression) -> i64 {
    let mut builder = RecordBatchBuilder::new(codec);
    for (key, value) in records {
        builder.append(&record(key, *value, now_ms())).unwrap();
    }
    let mut bytes = builder.build().to_vec();
    log.append_as_leader(&mut bytes, EPOCH, now_ms())
        .unwrap()
        .first_offset
}

fn put(log: &mut Log, key: &str, value: Option<&str>) -> i64 {
    put_all(log, &[(key, value)], Compression::None)
}

/// Appends a producer's batch (idempotent, or transactional).
fn put_producer(
    log: &mut Log,
    producer: (i64, i16, i32),
    transactional: bool,
    records: &[(&str, Option<&str>)],
) -> i64 {
    let mut builder = RecordBatchBuilder::new(Compression::None)
        .producer(producer.0, producer.1, producer.2)
        .transactional(transactional);
    for (key, value) in records {
        builder.append(&record(key, *value, now_ms())).unwrap();
    }
    let mut bytes = builder.build().to_vec();
    log.append_as_leader(&mut bytes, EPOCH, now_ms())
        .unwrap()
        .first_offset
}

fn end_txn(log: &mut Log, producer_id: i64, commit: bool) -> i64 {
    let marker = TxnMarker {
        producer_id,
        producer_epoch: 0,
        coordinator_epoch: 0,
        commit,
    };
    log.append_control_marker(&marker, EPOCH, now_ms())
        .unwrap()
        .first_offset
}

fn roll(log: &mut Log) {
    let end = log.log_end_offset();
    log.roll(end, now_ms()).unwrap();
}

/// Every batch from the log start.
fn all_batches(log: &Log) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let data = log.read(offset, 1 << 20, None, true).unwrap();
        if data.records.is_empty() {
            break;
        }
        for batch in batches(data.records) {
            let batch = batch.unwrap();
            offset = batch.next_offset();
            out.push(batch);
        }
    }
    out
}

/// (offset, key, value) of every data record from the log start.
fn contents(log: &Log) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    for batch in all_batches(log) {
        if batch.is_control() {
            continue;
        }
        for record in batch.records().unwrap() {
            let record = record.unwrap();
            let text = |b: Option<Bytes>| b.map(|b| String::from_utf8(b.to_vec()).unwrap());
            out.push((
                batch.base_offset() + i64::from(record.offset_delta),
                text(record.key).unwrap_or_default(),
                text(record.value),
            ));
        }
    }
    out
}

fn row(offset: i64, key: &str, value: Option<&str>) -> (i64, String, Option<String>) {
    (offset, key.to_string(), value.map(str::to_string))
}

fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

/// The guide's example, exactly: A v1, B v1, A v2, C v1, B v2, A v3 at offsets 0–5, a
/// later record rolls the segment (the active segment is never cleaned); after cleaning,
/// of offsets 0–5 a reader from the beginning sees only 3 C=v1, 4 B=v2, 5 A=v3.
#[test]
fn the_guides_example() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted());
    for (i, (key, value)) in [
        ("A", "v1"),
        ("B", "v1"),
        ("A", "v2"),
        ("C", "v1"),
        ("B", "v2"),
        ("A", "v3"),
    ]
    .iter()
    .enumerate()
    {
        assert_eq!(put(&mut log, key, Some(value)), i as i64);
    }
    roll(&mut log);
    assert_eq!(put(&mut log, "D", Some("v1")), 6);
    let stats = log
        .clean(0, log.log_end_offset(), now_ms(), MAP)
        .unwrap()
        .expect("a pass ran");
    assert_eq!(stats.next_dirty_offset, 6);
    assert_eq!(stats.map_keys, 3);
    assert_eq!(stats.records_kept, 3);
    assert_eq!(
        contents(&log),
        vec![
            row(3, "C", Some("v1")),
            row(4, "B", Some("v2")),
            row(5, "A", Some("v3")),
            row(6, "D", Some("v1")),
        ]
    );
    // Offsets are kept, not renumbered; the log still ends where it did.
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.log_end_offset(), 7);
    // Nothing is dirty any more: a second pass finds nothing to do.
    assert!(log.clean(6, 7, now_ms(), MAP).unwrap().is_none());
    // The cleaned segment is what a restart reads back.
    drop(log);
    let log = open(dir.path(), compacted());
    assert_eq!(
        contents(&log).iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![3, 4, 5, 6]
    );
    assert!(files_with_suffix(dir.path(), CLEANED_SUFFIX).is_empty());
}

#[test]
fn the_active_segment_and_the_high_watermark_bound_cleaning() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted());
    put(&mut log, "A", Some("v1"));
    put(&mut log, "A", Some("v2"));
    // Everything is in the active segment: nothing to clean.
    assert!(log.clean(0, 2, now_ms(), MAP).unwrap().is_none());
    roll(&mut log);
    put(&mut log, "A", Some("v3"));
    // The high watermark at 0 leaves nothing cleanable either.
    assert!(log.clean(0, 0, now_ms(), MAP).unwrap().is_none());
    let stats = log.clean(0, 3, now_ms(), MAP).unwrap().unwrap();
    assert_eq!(stats.next_dirty_offset, 2);
    // A v3 lives in the active segment, so the map (built up to offset 2) keeps A v2.
    assert_eq!(
        contents(&log),
        vec![row(1, "A", Some("v2")), row(2, "A", Some("v3"))]
    );
}

#[test]
fn a_compacted_log_is_only_cleaned_when_its_dirty_ratio_is_reached() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_cleanable_dirty_ratio: 0.6,
        ..compacted()
    };
    let mut log = open(dir.path(), config.clone());
    for i in 0..10 {
        put(&mut log, &format!("k{i}"), Some("x"));
    }
    roll(&mut log);
    put(&mut log, "k0", Some("y"));
    let cleanable = log.cleanable(0, log.log_end_offset(), now_ms()).unwrap();
    assert_eq!(cleanable.clean_bytes, 0);
    assert!(cleanable.dirty_bytes > 0);
    assert!((cleanable.dirty_ratio() - 1.0).abs() < f64::EPSILON);
    assert!(cleanable.is_due());
    log.clean(0, log.log_end_offset(), now_ms(), MAP)
        .unwrap()
        .unwrap();
    // 10 clean records, then 2 dirty ones in a rolled segment: ratio ~ 2/12 < 0.6.
    put(&mut log, "k1", Some("y"));
    roll(&mut log);
    put(&mut log, "k2", Some("y"));
    let cleanable = log.cleanable(10, log.log_end_offset(), now_ms()).unwrap();
    assert!(cleanable.dirty_ratio() < 0.6, "{cleanable:?}");
    assert!(!cleanable.is_due());
    // A delete-only topic is not the cleaner's.
    let plain = tempfile::tempdir().unwrap();
    let plain = open(plain.path(), LogConfig::default());
    assert!(plain.cleanable(0, 0, now_ms()).is_none());
}

#[test]
fn tombstones_stay_until_their_delete_horizon_then_go() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        delete_retention_ms: 60_000,
        ..compacted()
    };
    let mut log = open(dir.path(), config);
    put(&mut log, "X", Some("v1"));
    put(&mut log, "Y", Some("v1"));
    put(&mut log, "X", None);
    roll(&mut log);
    put(&mut log, "Z", Some("v1"));
    let now = now_ms();
    let stats = log
        .clean(0, log.log_end_offset(), now, MAP)
        .unwrap()
        .unwrap();
    assert_eq!(stats.tombstones_removed, 0);
    assert_eq!(stats.latest_delete_horizon, Some(now + 60_000));
    assert_eq!(
        contents(&log),
        vec![
            row(1, "Y", Some("v1")),
            row(2, "X", None),
            row(3, "Z", Some("v1"))
        ]
    );
    // The tombstone's batch now carries its delete horizon (KIP-534), its record keeps
    // its own timestamp.
    let tombstone = all_batches(&log)
        .into_iter()
        .find(|b| b.base_offset() == 2)
        .unwrap();
    assert!(tombstone.has_delete_horizon());
    assert_eq!(tombstone.base_timestamp(), now + 60_000);
    let record = tombstone.records().unwrap().next().unwrap().unwrap();
    assert!(record.timestamp <= now && record.timestamp > now - 60_000);
    // Before the horizon a pass keeps it; the log is not yet due.
    assert!(!log.cleanable(3, 4, now + 59_999).unwrap().is_due());
    // Past the horizon the log is due without new dirty bytes, and the pass drops it.
    let later = now + 60_000;
    assert!(log.cleanable(3, 4, later).unwrap().is_due());
    let stats = log.clean(3, 4, later, MAP).unwrap().unwrap();
    assert_eq!(stats.tombstones_removed, 1);
    assert_eq!(
        contents(&log),
        vec![row(1, "Y", Some("v1")), row(3, "Z", Some("v1"))]
    );
    assert!(!log.cleanable(3, 4, later).unwrap().is_due());
}

#[test]
fn aborted_data_goes_and_markers_follow_kafkas_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted_with_retention(1_000));
    // Producer 7 aborts K1, K2; producer 8 commits K3; producer 9 commits K4, later
    // superseded by a plain write, so its commit has nothing left to mark.
    put_producer(
        &mut log,
        (7, 0, 0),
        true,
        &[("K1", Some("a")), ("K2", Some("a"))],
    );
    put_producer(&mut log, (8, 0, 0), true, &[("K3", Some("c"))]);
    put_producer(&mut log, (9, 0, 0), true, &[("K4", Some("c"))]);
    let abort = end_txn(&mut log, 7, false);
    let commit_8 = end_txn(&mut log, 8, true);
    let commit_9 = end_txn(&mut log, 9, true);
    put(&mut log, "K4", Some("plain"));
    put(&mut log, "K1", Some("plain"));
    roll(&mut log);
    put(&mut log, "tail", Some("t"));
    let aborted_before = log
        .collect_aborted_transactions(0, log.log_end_offset())
        .unwrap();
    assert_eq!(aborted_before.len(), 1);
    let now = now_ms();
    let stats = log
        .clean(0, log.log_end_offset(), now, MAP)
        .unwrap()
        .unwrap();
    assert_eq!(stats.aborted_batches_removed, 1);
    // The aborted records are gone (the batch stays, empty, as producer 7's last batch);
    // K4's transactional value is superseded.
    assert_eq!(
        contents(&log),
        vec![
            row(2, "K3", Some("c")),
            row(7, "K4", Some("plain")),
            row(8, "K1", Some("plain")),
            row(9, "tail", Some("t")),
        ]
    );
    let batches = all_batches(&log);
    let empty = batches.iter().find(|b| b.base_offset() == 0).unwrap();
    assert_eq!(empty.record_count(), 0);
    assert_eq!(empty.producer_id(), 7);
    assert_eq!(empty.last_offset(), 1);
    // Every marker survives the first pass: the abort closes producer 7's empty batch,
    // the commit of 8 marks K3, the commit of 9 closes its batch, kept empty as that
    // producer's last.
    let markers = |log: &Log| -> Vec<(i64, bool)> {
        all_batches(log)
            .iter()
            .filter(|b| b.is_control())
            .map(|b| (b.base_offset(), b.has_delete_horizon()))
            .collect()
    };
    assert_eq!(
        markers(&log),
        vec![(abort, false), (commit_8, false), (commit_9, false)]
    );
    assert_eq!(
        log.collect_aborted_transactions(0, log.log_end_offset())
            .unwrap(),
        aborted_before
    );
    // Producers 7 and 9 write again: their old batches are no longer their last, so
    // they go, and their markers, with nothing left to mark, become tombstones.
    put_producer(&mut log, (7, 0, 2), false, &[("K7", Some("again"))]);
    put_producer(&mut log, (9, 0, 1), false, &[("K8", Some("again"))]);
    roll(&mut log);
    put(&mut log, "tail2", Some("t"));
    let stats = log
        .clean(9, log.log_end_offset(), now, MAP)
        .unwrap()
        .unwrap();
    assert_eq!(stats.aborted_batches_removed, 1);
    assert!(
        all_batches(&log)
            .iter()
            .all(|b| b.base_offset() != 0 && b.base_offset() != 3)
    );
    assert_eq!(
        markers(&log),
        vec![(abort, true), (commit_8, false), (commit_9, true)]
    );
    // Past the horizon both go, the abort's index entry with it.
    let end = log.log_end_offset();
    let stats = log.clean(12, end, now + 1_000, MAP).unwrap().unwrap();
    assert_eq!(stats.markers_removed, 2);
    assert_eq!(markers(&log), vec![(commit_8, false)]);
    assert!(log.collect_aborted_transactions(0, end).unwrap().is_empty());
    // A restart replays the cleaned log: no transaction is left open.
    drop(log);
    let log = open(dir.path(), compacted_with_retention(1_000));
    assert_eq!(log.first_unstable_offset(), None);
}

fn compacted_with_retention(delete_retention_ms: i64) -> LogConfig {
    LogConfig {
        delete_retention_ms,
        ..compacted()
    }
}

#[test]
fn an_open_transaction_stops_the_cleaner_at_its_first_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted());
    put(&mut log, "A", Some("v1"));
    put_producer(&mut log, (5, 0, 0), true, &[("A", Some("txn"))]);
    put(&mut log, "A", Some("v2"));
    roll(&mut log);
    put(&mut log, "B", Some("v1"));
    let cleanable = log.cleanable(0, log.log_end_offset(), now_ms()).unwrap();
    assert_eq!(cleanable.first_uncleanable_offset, 1);
    log.clean(0, log.log_end_offset(), now_ms(), MAP).unwrap();
    // Nothing at or after the open transaction was deduplicated.
    assert_eq!(
        contents(&log),
        vec![
            row(0, "A", Some("v1")),
            row(1, "A", Some("txn")),
            row(2, "A", Some("v2")),
            row(3, "B", Some("v1")),
        ]
    );
}

#[test]
fn the_last_batch_of_a_producer_survives_empty_and_keeps_its_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted());
    put_producer(&mut log, (42, 3, 0), false, &[("K", Some("v1"))]);
    put_producer(
        &mut log,
        (42, 3, 1),
        false,
        &[("K", Some("v2")), ("J", Some("v1"))],
    );
    put(&mut log, "K", Some("v3"));
    put(&mut log, "J", Some("v2"));
    roll(&mut log);
    put(&mut log, "tail", Some("t"));
    log.clean(0, log.log_end_offset(), now_ms(), MAP)
        .unwrap()
        .unwrap();
    let batches = all_batches(&log);
    // The first batch is gone; the producer's last one is kept with no records.
    assert_eq!(batches[0].base_offset(), 1);
    assert_eq!(batches[0].record_count(), 0);
    assert_eq!(batches[0].producer_id(), 42);
    assert_eq!(batches[0].producer_epoch(), 3);
    assert_eq!(batches[0].base_sequence(), 1);
    assert_eq!(batches[0].last_offset(), 2);
    batches[0].verify_crc().unwrap();
    // A restart that rebuilds producer state from the log alone (no snapshots) still
    // knows the producer's last sequence.
    log.close().unwrap();
    drop(log);
    for name in files_with_suffix(dir.path(), ".snapshot") {
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
    let log = open(dir.path(), compacted());
    let entry = log
        .producer_state()
        .snapshot_entries()
        .into_iter()
        .find(|e| e.producer_id == 42)
        .expect("producer 42 is known");
    assert_eq!((entry.epoch, entry.last_sequence), (3, 2));
}

#[test]
fn small_segments_are_merged_and_compressed_batches_keep_their_codec() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted());
    for round in 0..5 {
        let value = format!("r{round}");
        put_all(
            &mut log,
            &[
                ("a", Some(value.as_str())),
                ("b", Some(value.as_str())),
                ("c", Some("same")),
            ],
            Compression::Gzip,
        );
        roll(&mut log);
    }
    put(&mut log, "tail", Some("t"));
    assert_eq!(log.segments().len(), 6);
    let stats = log
        .clean(0, log.log_end_offset(), now_ms(), MAP)
        .unwrap()
        .unwrap();
    assert_eq!(stats.segments_before, 5);
    assert_eq!(stats.segments_after, 1);
    assert_eq!(log.segments().len(), 2);
    assert_eq!(
        contents(&log),
        vec![
            row(12, "a", Some("r4")),
            row(13, "b", Some("r4")),
            row(14, "c", Some("same")),
            row(15, "tail", Some("t")),
        ]
    );
    for batch in all_batches(&log) {
        batch.verify_crc().unwrap();
        if batch.base_offset() < 15 {
            assert_eq!(batch.compression().unwrap(), Compression::Gzip);
        }
    }
    // Offsets can still be found by timestamp and index lookups land on whole batches.
    let data = log.read(13, 1 << 20, None, true).unwrap();
    let first = batches(data.records).next().unwrap().unwrap();
    assert_eq!(first.base_offset(), 12);
}

#[test]
fn a_full_offset_map_cleans_in_several_passes() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), compacted());
    for round in 0..3 {
        for key in 0..20 {
            put(
                &mut log,
                &format!("key-{key:02}"),
                Some(&format!("r{round}")),
            );
        }
        roll(&mut log);
    }
    put(&mut log, "tail", Some("t"));
    // Room for about 8 keys: the first pass stops early.
    let map_bytes = 8 * (6 + 48);
    let stats = log
        .clean(0, log.log_end_offset(), now_ms(), map_bytes)
        .unwrap()
        .unwrap();
    assert!(stats.next_dirty_offset < 60, "{stats:?}");
    assert!(stats.map_keys <= 8);
    let mut dirty = stats.next_dirty_offset;
    let mut passes = 1;
    while let Some(stats) = log
        .clean(dirty, log.log_end_offset(), now_ms(), map_bytes)
        .unwrap()
    {
        assert!(stats.next_dirty_offset > dirty, "each pass makes progress");
        dirty = stats.next_dirty_offset;
        passes += 1;
        assert!(passes < 20);
    }
    assert_eq!(dirty, 60);
    let expected: Vec<_> = (0..20)
        .map(|key| row(40 + key, &format!("key-{key:02}"), Some("r2")))
        .chain([row(60, "tail", Some("t"))])
        .collect();
    assert_eq!(contents(&log), expected);
}

#[test]
fn young_segments_wait_for_min_compaction_lag() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        min_compaction_lag_ms: 3_600_000,
        ..compacted()
    };
    let mut log = open(dir.path(), config);
    put(&mut log, "A", Some("v1"));
    put(&mut log, "A", Some("v2"));
    roll(&mut log);
    put(&mut log, "B", Some("v1"));
    let cleanable = log.cleanable(0, log.log_end_offset(), now_ms()).unwrap();
    assert_eq!(cleanable.first_uncleanable_offset, 0);
    assert!(!cleanable.is_due());
    // An hour later the segment may be cleaned.
    let later = now_ms() + 3_600_001;
    let stats = log
        .clean(0, log.log_end_offset(), later, MAP)
        .unwrap()
        .unwrap();
    assert_eq!(stats.next_dirty_offset, 2);
    assert_eq!(
        contents(&log),
        vec![row(1, "A", Some("v2")), row(2, "B", Some("v1"))]
    );
}

/// Builds the log for the crash tests: 3 segments of overwritten keys.
fn crash_fixture(dir: &Path) -> Log {
    let mut log = open(dir, compacted());
    for round in 0..3 {
        for key in ["a", "b", "c"] {
            put(&mut log, key, Some(&format!("{key}{round}")));
        }
        roll(&mut log);
    }
    put(&mut log, "tail", Some("t"));
    log
}

/// Runs a pass up to its output on disk, then "crashes": neither the log nor the output
/// is closed or installed.
fn crash_after_writing_output(log: Log) {
    let cleanable = log.cleanable(0, log.log_end_offset(), now_ms()).unwrap();
    let plan = log.plan_clean(&cleanable, now_ms()).unwrap();
    let cleaned = cleaner::run(&plan, MAP).unwrap();
    std::mem::forget(cleaned);
    std::mem::forget(log);
}

fn renamed(dir: &Path, from: &str, to: &str) {
    for name in files_with_suffix(dir, from) {
        let target = name.strip_suffix(from).unwrap().to_string() + to;
        std::fs::rename(dir.join(&name), dir.join(target)).unwrap();
    }
}

#[test]
fn a_crash_before_the_swap_leaves_the_log_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let log = crash_fixture(dir.path());
    let before = contents(&log);
    // Killed with the cleaned files written, before the swap.
    crash_after_writing_output(log);
    assert!(!files_with_suffix(dir.path(), ".log.cleaned").is_empty());
    let log = open(dir.path(), compacted());
    assert_eq!(contents(&log), before);
    assert!(files_with_suffix(dir.path(), CLEANED_SUFFIX).is_empty());
}

#[test]
fn a_crash_after_the_commit_point_finishes_the_swap() {
    let dir = tempfile::tempdir().unwrap();
    let log = crash_fixture(dir.path());
    crash_after_writing_output(log);
    // Killed after the commit point (every `.cleaned` renamed `.swap`) and after one of
    // the replaced segments went `.deleted`, before the `.swap` files took their names.
    renamed(dir.path(), ".cleaned", ".swap");
    std::fs::rename(
        dir.path().join("00000000000000000003.log"),
        dir.path().join("00000000000000000003.log.deleted"),
    )
    .unwrap();
    let log = open(dir.path(), compacted());
    assert_eq!(
        contents(&log),
        vec![
            row(6, "a", Some("a2")),
            row(7, "b", Some("b2")),
            row(8, "c", Some("c2")),
            row(9, "tail", Some("t")),
        ]
    );
    assert_eq!(log.segments().len(), 2);
    assert!(files_with_suffix(dir.path(), ".swap").is_empty());
    assert!(files_with_suffix(dir.path(), ".deleted").is_empty());
}

#[test]
fn a_crash_halfway_through_the_commit_leaves_the_log_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let log = crash_fixture(dir.path());
    let before = contents(&log);
    crash_after_writing_output(log);
    // Only the index files reached `.swap`: the log file's rename is the commit point.
    renamed(dir.path(), ".index.cleaned", ".index.swap");
    renamed(dir.path(), ".timeindex.cleaned", ".timeindex.swap");
    let log = open_clean(dir.path(), compacted());
    assert_eq!(contents(&log), before);
    assert!(files_with_suffix(dir.path(), ".swap").is_empty());
    assert!(files_with_suffix(dir.path(), CLEANED_SUFFIX).is_empty());
}

#[test]
fn segments_that_change_during_a_pass_drop_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        cleanup_delete: true,
        retention_ms: 1,
        ..compacted()
    };
    let mut log = open(dir.path(), config);
    put(&mut log, "a", Some("1"));
    put(&mut log, "a", Some("2"));
    roll(&mut log);
    put(&mut log, "b", Some("1"));
    let cleanable = log.cleanable(0, log.log_end_offset(), now_ms()).unwrap();
    let plan = log.plan_clean(&cleanable, now_ms()).unwrap();
    let cleaned = cleaner::run(&plan, MAP).unwrap();
    // Retention deletes the segment the pass rewrote before it is installed (the high
    // watermark at 2 keeps the expired active segment).
    assert_eq!(log.delete_old_segments_below(now_ms() + 10, 2).unwrap(), 1);
    assert!(log.install_cleaned(cleaned).unwrap().is_none());
    assert!(files_with_suffix(dir.path(), CLEANED_SUFFIX).is_empty());
    assert_eq!(contents(&log), vec![row(2, "b", Some("1"))]);
}
