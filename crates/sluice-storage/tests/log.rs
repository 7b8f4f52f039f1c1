//! The partition log's behaviour as a broker sees it: offsets, reads, rolls, retention,
//! truncation, leader epochs, checkpoints and recovery of damaged indexes.

mod common;

use std::path::Path;

use common::{batch, open, open_clean, read_batches, small_segments};
use sluice_protocol::{Compression, RecordBatch, TimestampType, batches};
use sluice_storage::log_manager::{
    CLEAN_SHUTDOWN_MARKER, LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT,
};
use sluice_storage::{LogConfig, LogManager, StorageError, TopicId, TopicPartition};

const T0: i64 = 1_700_000_000_000;

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn append_assigns_offsets_and_leader_epoch_in_place_and_keeps_other_bytes() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), LogConfig::default());
    let original = batch(5, Compression::Zstd, T0, 100);
    let mut first = original.clone();
    let info = log.append_as_leader(&mut first, 3, T0).unwrap();
    assert_eq!(
        (info.first_offset, info.last_offset, info.record_count),
        (0, 4, 5)
    );
    assert_eq!(info.log_append_time_ms, -1);
    assert_eq!(info.max_timestamp, T0 + 4);
    let mut second = batch(2, Compression::None, T0 + 10, 10);
    let info = log.append_as_leader(&mut second, 3, T0).unwrap();
    assert_eq!((info.first_offset, info.last_offset), (5, 6));
    assert_eq!(log.log_end_offset(), 7);

    let stored = read_batches(&log, 1 << 20);
    assert_eq!(stored.len(), 2);
    let batch = &stored[0];
    batch.validate().unwrap();
    assert_eq!(batch.base_offset(), 0);
    assert_eq!(batch.partition_leader_epoch(), 3);
    // Only base offset (0..8) and leader epoch (12..16) differ from the bytes received.
    assert_eq!(&batch.bytes()[8..12], &original[8..12]);
    assert_eq!(&batch.bytes()[16..], &original[16..]);
    assert_eq!(stored[1].base_offset(), 5);
    assert_eq!(log.leader_epochs().entries(), &[(3, 0)]);
}

#[test]
fn reads_return_whole_batches_within_the_limits() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), LogConfig::default());
    let mut sizes = Vec::new();
    for i in 0..10 {
        let mut b = batch(4, Compression::None, T0 + i * 10, 200);
        sizes.push(b.len() as u64);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    let size = sizes[0];
    // (start offset, max bytes, max offset, min one batch) → (first batch offset, batches)
    /// (start offset, max bytes, max offset, min one batch, first batch offset, batches)
    type ReadCase = (i64, u64, Option<i64>, bool, i64, usize);
    let cases: &[ReadCase] = &[
        (0, size, None, true, 0, 1),
        (2, size, None, true, 0, 1), // the batch containing offset 2
        (4, size * 3 + 10, None, true, 4, 3), // whole batches only
        (4, size - 1, None, true, 4, 1), // first batch larger than max: whole
        (4, size - 1, None, false, 4, 0), // ... unless min_one_batch is off
        (0, 1 << 20, Some(12), true, 0, 3), // stop at the high watermark
        (0, 1 << 20, Some(13), true, 0, 4), // a batch starting below it is whole
        (12, 1 << 20, Some(12), true, 12, 0), // at the high watermark: nothing
        (39, 1 << 20, None, true, 36, 1),
        (40, 1 << 20, None, true, 40, 0), // at the log end: nothing
    ];
    for &(start, max_bytes, max_offset, min_one, first, count) in cases {
        let data = log.read(start, max_bytes, max_offset, min_one).unwrap();
        let got: Vec<RecordBatch> = batches(data.records.clone()).map(Result::unwrap).collect();
        assert_eq!(
            got.len(),
            count,
            "read({start}, {max_bytes}, {max_offset:?}, {min_one})"
        );
        if count > 0 {
            assert_eq!(data.first_batch_offset, first);
            assert_eq!(got[0].base_offset(), first);
        }
    }
    for offset in [-1, 41, 1000] {
        assert!(matches!(
            log.read(offset, 100, None, true),
            Err(StorageError::OffsetOutOfRange { .. })
        ));
    }
}

#[test]
fn segments_roll_on_size_with_kafkas_file_names() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), small_segments(4096));
    for _ in 0..20 {
        let mut b = batch(3, Compression::None, T0, 300); // ~1 KiB
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    let segments = log.segments();
    assert!(segments.len() >= 5, "{segments:?}");
    for pair in segments.windows(2) {
        assert_eq!(
            pair[0].next_offset, pair[1].base_offset,
            "segments are contiguous"
        );
        assert!(pair[0].size_bytes <= 4096);
        assert!(!pair[0].active);
    }
    assert!(segments.last().unwrap().active);
    let names = file_names(temp.path());
    for segment in &segments {
        for suffix in [".log", ".index", ".timeindex"] {
            let name = format!("{:020}{suffix}", segment.base_offset);
            assert!(names.contains(&name), "{name} missing from {names:?}");
        }
    }
    assert!(names.contains(&"00000000000000000000.log".to_string()));
    assert_eq!(read_batches(&log, 1000).len(), 20);
    // Reading across segments in one pass over small limits sees every offset once.
    let offsets: Vec<i64> = read_batches(&log, 1)
        .iter()
        .flat_map(|b| b.base_offset()..=b.last_offset())
        .collect();
    assert_eq!(offsets, (0..60).collect::<Vec<_>>());
}

#[test]
fn segments_roll_on_time_index_fullness_and_offset_overflow() {
    // segment.ms counts from the first batch's max timestamp.
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config);
    for (i, timestamp) in [T0, T0 + 500, T0 + 1000, T0 + 1001, T0 + 1500]
        .iter()
        .enumerate()
    {
        let mut b = batch(1, Compression::None, *timestamp, 10);
        log.append_as_leader(&mut b, 0, T0 + i as i64).unwrap();
    }
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(
        bases,
        vec![0, 3],
        "roll when a batch is more than segment.ms after the first"
    );

    // A full offset index (segment.index.bytes=24: three entries) rolls.
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_index_bytes: 24,
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config);
    for _ in 0..10 {
        let mut b = batch(1, Compression::None, T0, 10);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    assert!(log.segments().len() >= 3, "{:?}", log.segments());
    assert_eq!(read_batches(&log, 1 << 20).len(), 10);

    // Offsets that no longer fit a relative u32 (Kafka: i32) start a new segment.
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), LogConfig::default());
    let mut first = batch(1, Compression::None, T0, 10);
    log.append_as_follower(&first, T0).unwrap();
    let far = i64::from(i32::MAX) + 10;
    sluice_protocol::record_batch::set_base_offset(&mut first, far);
    log.append_as_follower(&first, T0).unwrap();
    let bases: Vec<i64> = log.segments().iter().map(|s| s.base_offset).collect();
    assert_eq!(bases, vec![0, far]);
    assert_eq!(log.log_end_offset(), far + 1);
    let data = log.read(far, 1 << 20, None, true).unwrap();
    assert_eq!(
        batches(data.records).next().unwrap().unwrap().base_offset(),
        far
    );
}

#[test]
fn follower_appends_keep_offsets_and_reject_going_back() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), LogConfig::default());
    let mut b = batch(3, Compression::Lz4, T0, 10);
    sluice_protocol::record_batch::set_base_offset(&mut b, 0);
    sluice_protocol::record_batch::set_partition_leader_epoch(&mut b, 5);
    log.append_as_follower(&b, T0).unwrap();
    assert_eq!(log.log_end_offset(), 3);
    assert_eq!(log.leader_epochs().entries(), &[(5, 0)]);
    let error = log.append_as_follower(&b, T0).unwrap_err();
    assert!(matches!(
        error,
        StorageError::UnexpectedAppendOffset {
            first_offset: 0,
            log_end_offset: 3
        }
    ));
}

#[test]
fn bad_batches_are_refused_and_leave_the_log_unchanged() {
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        max_message_bytes: 2000,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config);
    let mut good = batch(2, Compression::None, T0, 10);
    log.append_as_leader(&mut good, 0, T0).unwrap();
    let before = std::fs::read(temp.path().join("00000000000000000000.log")).unwrap();

    let mut too_large = batch(10, Compression::None, T0, 300);
    assert!(matches!(
        log.append_as_leader(&mut too_large, 0, T0),
        Err(StorageError::BatchTooLarge {
            max_bytes: 2000,
            ..
        })
    ));
    let mut corrupt = batch(2, Compression::None, T0, 10);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    // The broker checks producer CRCs (`RecordBatch::validate`); the log repeats the
    // check on that path only in debug builds, which are what the tests run.
    if cfg!(debug_assertions) {
        assert!(matches!(
            log.append_as_leader(&mut corrupt, 0, T0),
            Err(StorageError::InvalidBatch(_))
        ));
    }
    // A valid batch followed by a cut one: nothing of the request is appended.
    let mut partial = batch(2, Compression::None, T0, 10);
    partial.extend_from_slice(&batch(2, Compression::None, T0, 10)[..30]);
    assert!(log.append_as_leader(&mut partial, 0, T0).is_err());
    let mut wrong_magic = batch(2, Compression::None, T0, 10);
    wrong_magic[16] = 1;
    assert!(log.append_as_leader(&mut wrong_magic, 0, T0).is_err());

    assert_eq!(log.log_end_offset(), 2);
    assert_eq!(
        std::fs::read(temp.path().join("00000000000000000000.log")).unwrap(),
        before
    );
}

#[test]
fn log_append_time_topics_stamp_the_batch() {
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config);
    let mut b = batch(3, Compression::Snappy, 5, 10);
    let info = log.append_as_leader(&mut b, 0, T0 + 77).unwrap();
    assert_eq!(info.log_append_time_ms, T0 + 77);
    let stored = &read_batches(&log, 1 << 20)[0];
    stored.validate().unwrap();
    assert_eq!(stored.timestamp_type(), TimestampType::LogAppendTime);
    for record in stored.records().unwrap() {
        assert_eq!(stored.record_timestamp(&record.unwrap()), T0 + 77);
    }
}

#[test]
fn time_and_size_retention_delete_old_segments_but_never_the_active_one() {
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_ms: 10_000,
        ..small_segments(2048)
    };
    let mut log = open(temp.path(), config);
    // Ten segments, segment i holding timestamps around T0 + i * 1000.
    for i in 0..20i64 {
        let mut b = batch(2, Compression::None, T0 + (i / 2) * 1000, 400);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    let before = log.segments();
    assert!(before.len() >= 8, "{before:?}");
    // At T0 + 14.5 s, segments whose max timestamp is older than T0 + 4.5 s go.
    let deleted = log.delete_old_segments(T0 + 14_500).unwrap();
    let after = log.segments();
    assert_eq!(after.len(), before.len() - deleted);
    assert!(deleted > 0);
    assert!(
        after
            .iter()
            .all(|s| s.max_timestamp >= T0 + 4_500 || s.active)
    );
    assert_eq!(log.log_start_offset(), after[0].base_offset);
    assert!(matches!(
        log.read(0, 100, None, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    // Far in the future everything but the active segment goes.
    log.delete_old_segments(T0 + 1_000_000).unwrap();
    assert_eq!(log.segments().len(), 1);
    assert!(log.segments()[0].active);
    assert_eq!(log.log_end_offset(), 40);

    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_bytes: 5000,
        ..small_segments(2048)
    };
    let mut log = open(temp.path(), config);
    for _ in 0..20 {
        let mut b = batch(2, Compression::None, T0, 400);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    log.delete_old_segments(T0).unwrap();
    let total: u64 = log.segments().iter().map(|s| s.size_bytes).sum();
    assert!(
        total <= 5000 + 2048,
        "size retention keeps at most retention.bytes + one segment: {total}"
    );
    assert!(
        total >= 5000 - 2048,
        "but deletes no more than needed: {total}"
    );
    assert_eq!(log.log_start_offset(), log.segments()[0].base_offset);
}

#[test]
fn delete_records_advances_the_log_start_offset() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), small_segments(2048));
    for _ in 0..10 {
        let mut b = batch(2, Compression::None, T0, 400);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    let segments_before = log.segments().len();
    assert_eq!(log.delete_records(9).unwrap(), 9);
    assert!(
        log.segments().len() < segments_before,
        "segments wholly below 9 are deleted"
    );
    assert!(matches!(
        log.read(8, 100, None, true),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    // Reading at the new start returns the batch holding it (from offset 8).
    let data = log.read(9, 1 << 20, None, true).unwrap();
    assert_eq!(data.first_batch_offset, 8);
    assert_eq!(log.delete_records(3).unwrap(), 9, "never moves back");
    assert!(matches!(
        log.delete_records(21),
        Err(StorageError::OffsetOutOfRange { .. })
    ));
    assert_eq!(log.delete_records(20).unwrap(), 20);
    assert_eq!(log.read(20, 100, None, true).unwrap().records.len(), 0);
}

#[test]
fn truncation_removes_the_tail_and_the_log_accepts_appends_again() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), small_segments(2048));
    for epoch in 0..4 {
        for _ in 0..5 {
            let mut b = batch(2, Compression::None, T0 + i64::from(epoch) * 10, 300);
            log.append_as_leader(&mut b, epoch, T0).unwrap();
        }
    }
    assert_eq!(log.log_end_offset(), 40);
    assert_eq!(
        log.leader_epochs().entries(),
        &[(0, 0), (1, 10), (2, 20), (3, 30)]
    );
    assert_eq!(log.leader_epochs().end_offset_for(1, 40), Some((1, 20)));
    // Truncate inside a batch: the batch containing 25 goes whole.
    log.truncate_to(25).unwrap();
    assert_eq!(log.log_end_offset(), 24);
    assert_eq!(log.leader_epochs().entries(), &[(0, 0), (1, 10), (2, 20)]);
    assert!(log.segments().iter().all(|s| s.next_offset <= 24));
    let last = read_batches(&log, 1 << 20).pop().unwrap();
    assert_eq!(last.last_offset(), 23);
    // Timestamp lookups only see what remains.
    assert_eq!(log.offset_for_timestamp(T0 + 30).unwrap(), None);
    assert_eq!(
        log.offset_for_timestamp(T0 + 20).unwrap(),
        Some((20, T0 + 20))
    );
    let mut b = batch(2, Compression::Gzip, T0 + 9, 10);
    let info = log.append_as_leader(&mut b, 7, T0).unwrap();
    assert_eq!(info.first_offset, 24);
    assert_eq!(
        log.leader_epochs().entries(),
        &[(0, 0), (1, 10), (2, 20), (7, 24)]
    );
    // Truncating below the first segment restarts the log there.
    log.truncate_to(0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 0));
    assert!(log.leader_epochs().entries().is_empty());
    log.truncate_fully_and_start_at(500).unwrap();
    let mut b = batch(1, Compression::None, T0, 10);
    assert_eq!(
        log.append_as_leader(&mut b, 1, T0).unwrap().first_offset,
        500
    );
    assert_eq!(
        file_names(temp.path())
            .iter()
            .filter(|n| n.ends_with(".log"))
            .count(),
        1
    );
}

#[test]
fn log_manager_checkpoints_marker_and_clean_restart() {
    let temp = tempfile::tempdir().unwrap();
    let partition = TopicPartition::new("orders", 3);
    let topic_id = TopicId([7; 16]);
    {
        let mut manager = LogManager::open(temp.path(), small_segments(2048)).unwrap();
        assert!(!manager.was_clean_start());
        let log = manager
            .get_or_create(&partition, Some(topic_id), None)
            .unwrap();
        let mut log = sluice_storage::lock(&log);
        for _ in 0..10 {
            let mut b = batch(2, Compression::None, T0, 400);
            log.append_as_leader(&mut b, 0, T0).unwrap();
        }
        log.delete_records(5).unwrap();
        drop(log);
        manager.shutdown().unwrap();
    }
    let names = file_names(temp.path());
    assert!(
        names.contains(&CLEAN_SHUTDOWN_MARKER.to_string()),
        "{names:?}"
    );
    assert_eq!(
        std::fs::read_to_string(temp.path().join(RECOVERY_POINT_CHECKPOINT)).unwrap(),
        "0\n1\norders 3 20\n"
    );
    assert_eq!(
        std::fs::read_to_string(temp.path().join(LOG_START_OFFSET_CHECKPOINT)).unwrap(),
        "0\n1\norders 3 5\n"
    );
    let partition_dir = temp.path().join("orders-3");
    assert_eq!(
        std::fs::read_to_string(partition_dir.join("partition.metadata")).unwrap(),
        format!("version: 0\ntopic_id: {topic_id}\n")
    );
    assert_eq!(
        std::fs::read_to_string(partition_dir.join("leader-epoch-checkpoint")).unwrap(),
        "0\n1\n0 5\n"
    );

    let manager = LogManager::open(temp.path(), small_segments(2048)).unwrap();
    assert!(manager.was_clean_start());
    assert!(
        !temp.path().join(CLEAN_SHUTDOWN_MARKER).exists(),
        "the marker is consumed at start"
    );
    let log = manager.get(&partition).unwrap();
    let log = sluice_storage::lock(&log);
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (5, 20));
    assert_eq!(log.topic_id(), Some(topic_id));
    assert_eq!(read_batches(&log, 1 << 20).len(), 8);
    drop(log);
    drop(manager);

    // A different topic id for the same directory is refused.
    let mut manager = LogManager::open(temp.path(), small_segments(2048)).unwrap();
    let wrong = manager.get_or_create(
        &TopicPartition::new("orders", 3),
        Some(TopicId([8; 16])),
        None,
    );
    assert!(wrong.is_ok(), "an open log is returned as is");
    drop(manager);
    let error = sluice_storage::Log::open(
        &partition_dir,
        LogConfig::default(),
        sluice_storage::LogOpenOptions {
            topic_id: Some(TopicId([8; 16])),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert!(matches!(error, StorageError::InconsistentTopicId { .. }));
}

#[test]
fn missing_or_corrupt_indexes_are_rebuilt() {
    let temp = tempfile::tempdir().unwrap();
    let config = small_segments(4096);
    let mut log = open(temp.path(), config.clone());
    for i in 0..40i64 {
        let mut b = batch(2, Compression::None, T0 + i * 10, 200);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    log.close().unwrap();
    let expected_batches = read_batches(&log, 1 << 20);
    let expected_lookups: Vec<_> = (0..420)
        .step_by(7)
        .map(|d| log.offset_for_timestamp(T0 + d).unwrap())
        .collect();
    let segments = log.segments();
    drop(log);
    let index = |base: i64, suffix: &str| temp.path().join(format!("{base:020}{suffix}"));
    // Damage: a missing index, a torn index, garbage entries, a time index pointing back.
    std::fs::remove_file(index(segments[0].base_offset, ".index")).unwrap();
    std::fs::write(index(segments[1].base_offset, ".index"), [1, 2, 3]).unwrap();
    std::fs::write(index(segments[2].base_offset, ".index"), [0xff; 16]).unwrap();
    std::fs::write(index(segments[3].base_offset, ".timeindex"), [0x7f; 24]).unwrap();
    let active = segments.last().unwrap().base_offset;
    std::fs::write(index(active, ".index"), [0x10; 24]).unwrap();
    for clean in [true, false] {
        let log = if clean {
            open_clean(temp.path(), config.clone())
        } else {
            open(temp.path(), config.clone())
        };
        assert_eq!(
            read_batches(&log, 1 << 20),
            expected_batches,
            "clean={clean}"
        );
        assert_eq!(read_batches(&log, 1), expected_batches, "clean={clean}");
        let lookups: Vec<_> = (0..420)
            .step_by(7)
            .map(|d| log.offset_for_timestamp(T0 + d).unwrap())
            .collect();
        assert_eq!(lookups, expected_lookups, "clean={clean}");
    }
    // The rebuilt files hold whole, ordered entries again.
    for segment in &segments {
        let bytes = std::fs::read(index(segment.base_offset, ".index")).unwrap();
        assert_eq!(bytes.len() % 8, 0);
    }
}

#[test]
fn file_handles_stay_bounded_however_many_segments() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), small_segments(1024));
    for i in 0..300i64 {
        let mut b = batch(1, Compression::None, T0 + i, 700);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    assert!(log.segments().len() >= 250);
    // Reads and lookups across every segment.
    assert_eq!(read_batches(&log, 1).len(), 300);
    assert_eq!(
        log.offset_for_timestamp(T0 + 150).unwrap(),
        Some((150, T0 + 150))
    );
    let open_in_dir = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
        .filter(|target| target.starts_with(temp.path()))
        .count();
    assert!(
        open_in_dir <= 3,
        "{open_in_dir} files open in the log directory"
    );
}

#[test]
fn invalid_configs_name_the_key() {
    let temp = tempfile::tempdir().unwrap();
    let cases: &[(LogConfig, &str)] = &[
        (
            LogConfig {
                segment_bytes: 10,
                ..LogConfig::default()
            },
            "segment.bytes",
        ),
        (
            LogConfig {
                retention_ms: -2,
                ..LogConfig::default()
            },
            "retention.ms",
        ),
        (
            LogConfig {
                flush_messages: 0,
                ..LogConfig::default()
            },
            "flush.messages",
        ),
        (
            LogConfig {
                segment_index_bytes: 4,
                ..LogConfig::default()
            },
            "segment.index.bytes",
        ),
    ];
    for (config, key) in cases {
        let error =
            sluice_storage::Log::open(temp.path(), config.clone(), Default::default()).unwrap_err();
        assert!(error.to_string().contains(key), "{error}");
    }
}

#[test]
fn flush_policy_by_message_count_and_time() {
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_messages: 5,
        flush_ms: 1000,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config);
    let mut b = batch(3, Compression::None, T0, 10);
    assert!(!log.append_as_leader(&mut b, 0, T0).unwrap().flushed);
    assert_eq!(log.recovery_point(), 0);
    let mut b = batch(3, Compression::None, T0, 10);
    assert!(log.append_as_leader(&mut b, 0, T0).unwrap().flushed);
    assert_eq!(log.recovery_point(), 6);
    let mut b = batch(1, Compression::None, T0, 10);
    log.append_as_leader(&mut b, 0, T0).unwrap();
    // The last flush was at T0 (the append that reached flush.messages).
    assert!(!log.flush_if_due(T0 + 999).unwrap());
    assert!(log.flush_if_due(T0 + 1000).unwrap());
    assert_eq!(log.recovery_point(), 7);
}

#[test]
fn a_roll_defers_its_fsync_to_the_scheduled_flush() {
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), small_segments(2048));
    for _ in 0..10 {
        let mut b = batch(2, Compression::None, T0, 400);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    let segments = log.segments();
    assert!(segments.len() >= 3);
    // Rolls wrote the indexes but did not fsync: the recovery point has not moved.
    assert_eq!(log.recovery_point(), 0);
    assert!(log.flush_rolled_segments().unwrap());
    let active_base = segments.last().unwrap().base_offset;
    assert_eq!(log.recovery_point(), active_base);
    assert!(
        !log.flush_rolled_segments().unwrap(),
        "nothing left to flush"
    );
    log.flush().unwrap();
    assert_eq!(log.recovery_point(), 20);
}

/// Offsets at the edge of `i64` (found by fuzzing `log_recovery`): a segment or batch
/// whose offsets cannot continue is refused or cut, never a panic or a wrapped offset.
#[test]
fn offsets_at_the_end_of_the_range_are_refused_not_wrapped() {
    // An empty segment at i64::MAX: the log opens, appends are refused.
    let temp = tempfile::tempdir().unwrap();
    std::fs::write(temp.path().join(format!("{:020}.log", i64::MAX)), []).unwrap();
    let mut log = open_clean(temp.path(), LogConfig::default());
    assert_eq!(log.log_end_offset(), i64::MAX);
    let mut b = batch(2, Compression::None, T0, 10);
    assert!(matches!(
        log.append_as_leader(&mut b, 0, T0),
        Err(StorageError::InvalidBatch(
            sluice_protocol::BatchError::OffsetOverflow { .. }
        ))
    ));
    assert_eq!(log.log_end_offset(), i64::MAX);

    // A batch whose offsets run past i64::MAX, after a clean or an unclean shutdown, is
    // cut by recovery; a follower may not append one either.
    for clean in [true, false] {
        let temp = tempfile::tempdir().unwrap();
        let mut log = open(temp.path(), LogConfig::default());
        let mut good = batch(2, Compression::None, T0, 10);
        log.append_as_leader(&mut good, 0, T0).unwrap();
        log.close().unwrap();
        drop(log);
        let mut bad = batch(20, Compression::None, T0, 10);
        sluice_protocol::record_batch::set_base_offset(&mut bad, i64::MAX - 5);
        let segment = temp.path().join("00000000000000000000.log");
        let mut bytes = std::fs::read(&segment).unwrap();
        bytes.extend_from_slice(&bad);
        std::fs::write(&segment, bytes).unwrap();
        let mut log = if clean {
            open_clean(temp.path(), LogConfig::default())
        } else {
            open(temp.path(), LogConfig::default())
        };
        assert_eq!(log.log_end_offset(), 2, "clean={clean}");
        assert_eq!(read_batches(&log, 1 << 20).len(), 1);
        assert!(log.append_as_follower(&bad, T0).is_err());
        let mut next = batch(1, Compression::None, T0, 10);
        assert_eq!(
            log.append_as_leader(&mut next, 0, T0).unwrap().first_offset,
            2
        );
    }
}

#[test]
fn large_reads_return_the_same_bytes_as_small_ones() {
    // Reads of 256 KiB and more take the unzeroed path; both paths must agree.
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), LogConfig::default());
    for i in 0..40i64 {
        let mut b = batch(16, Compression::None, T0 + i, 1000);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    assert!(log.size_bytes() > 600 * 1024);
    let large = read_batches(&log, 1 << 20);
    let small = read_batches(&log, 20_000);
    assert_eq!(large, small);
    assert_eq!(large.len(), 40);
    let whole = log.read(0, 1 << 20, None, true).unwrap();
    assert_eq!(whole.records.len() as u64, log.size_bytes());
}

#[test]
fn followers_take_batches_over_max_message_bytes_that_producers_may_not_send() {
    // The leader accepted the batch under its config; a follower must store it even if
    // its own config is smaller (Kafka ignores the record size for replication).
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        max_message_bytes: 1000,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config);
    let mut large = batch(5, Compression::None, T0, 400);
    assert!(matches!(
        log.append_as_leader(&mut large.clone(), 0, T0),
        Err(StorageError::BatchTooLarge { .. })
    ));
    sluice_protocol::record_batch::set_base_offset(&mut large, 0);
    log.append_as_follower(&large, T0).unwrap();
    assert_eq!(log.log_end_offset(), 5);
    // A replicated batch with a bad CRC is refused.
    let mut corrupt = batch(1, Compression::None, T0, 10);
    sluice_protocol::record_batch::set_base_offset(&mut corrupt, 5);
    let last = corrupt.len() - 1;
    corrupt[last] ^= 1;
    assert!(matches!(
        log.append_as_follower(&corrupt, T0),
        Err(StorageError::InvalidBatch(_))
    ));
}

#[test]
fn an_index_that_points_at_later_batches_is_not_trusted() {
    // Entries in order and inside the file (so they pass the checks at open) but each
    // pointing one batch too far: a read must still start at the batch holding its offset.
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        index_interval_bytes: 1,
        ..LogConfig::default()
    };
    let mut log = open(temp.path(), config.clone());
    for i in 0..10i64 {
        let mut b = batch(3, Compression::None, T0 + i, 100);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    log.close().unwrap();
    let expected = read_batches(&log, 1);
    drop(log);
    let index_path = temp.path().join("00000000000000000000.index");
    let mut index = std::fs::read(&index_path).unwrap();
    assert_eq!(index.len(), 9 * 8);
    // Shift every position to the next entry's position (dropping the last entry).
    let positions: Vec<[u8; 4]> = index
        .chunks(8)
        .map(|e| e[4..8].try_into().unwrap())
        .collect();
    for (i, entry) in index.chunks_mut(8).enumerate().take(8) {
        entry[4..8].copy_from_slice(&positions[i + 1]);
    }
    index.truncate(8 * 8);
    std::fs::write(&index_path, index).unwrap();
    let log = open_clean(temp.path(), config);
    assert_eq!(read_batches(&log, 1), expected);
    for offset in 0..30 {
        let data = log.read(offset, 1, None, true).unwrap();
        let first = batches(data.records).next().unwrap().unwrap();
        assert!(
            first.base_offset() <= offset && offset <= first.last_offset(),
            "offset {offset}"
        );
    }
}

#[test]
fn a_time_index_that_disagrees_with_the_log_does_not_break_appends_or_close() {
    // Found by fuzzing `log_recovery`: a `.timeindex` whose entry claims a later offset
    // than the batch that really holds the max timestamp passes the checks at open; the
    // final entry written at close or roll must not unsort the index (a debug assertion
    // fired; release builds wrote an unsorted index).
    let temp = tempfile::tempdir().unwrap();
    let mut log = open(temp.path(), LogConfig::default());
    for i in 0..10i64 {
        let timestamp = if i == 1 { T0 + 100 } else { T0 + i };
        let mut b = batch(3, Compression::None, timestamp, 10);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    log.close().unwrap();
    drop(log);
    std::fs::write(temp.path().join("00000000000000000000.index"), []).unwrap();
    let mut entry = (T0 + 5).to_be_bytes().to_vec();
    entry.extend_from_slice(&29u32.to_be_bytes());
    std::fs::write(temp.path().join("00000000000000000000.timeindex"), &entry).unwrap();
    let mut log = open_clean(temp.path(), LogConfig::default());
    let mut b = batch(1, Compression::None, T0 + 200, 10);
    log.append_as_leader(&mut b, 0, T0).unwrap();
    log.roll(log.log_end_offset(), T0).unwrap();
    log.close().unwrap();
    let times = std::fs::read(temp.path().join("00000000000000000000.timeindex")).unwrap();
    let entries: Vec<(i64, u32)> = times
        .chunks(12)
        .map(|e| {
            (
                i64::from_be_bytes(e[..8].try_into().unwrap()),
                u32::from_be_bytes(e[8..].try_into().unwrap()),
            )
        })
        .collect();
    assert!(
        entries
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
        "{entries:?}"
    );
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((30, T0 + 200)));
    assert_eq!(
        log.offset_for_timestamp(T0 + 100).unwrap(),
        Some((3, T0 + 100))
    );
}

/// A producer's batch stamped with the current time: a producer snapshot loaded on open
/// leaves out producers idle for `producer.id.expiration.ms` (one day).
fn producer_batch(producer_id: i64, epoch: i16, sequence: i32, count: usize) -> Vec<u8> {
    let now = sluice_storage::now_ms();
    let mut builder = sluice_protocol::RecordBatchBuilder::new(Compression::None).producer(
        producer_id,
        epoch,
        sequence,
    );
    for i in 0..count {
        builder
            .append(&sluice_protocol::NewRecord {
                timestamp: now + i as i64,
                key: None,
                value: Some(bytes::Bytes::from(format!("v{sequence}-{i}"))),
                headers: vec![],
            })
            .unwrap();
    }
    builder.build().to_vec()
}

#[test]
fn an_idempotent_producers_retry_gets_its_original_offsets_on_the_leader_and_after_failover() {
    let dir = tempfile::tempdir().unwrap();
    let mut leader = open(&dir.path().join("leader"), LogConfig::default());
    let first = leader
        .append_as_leader(&mut producer_batch(42, 0, 0, 3), 0, 1_000)
        .unwrap();
    let second = leader
        .append_as_leader(&mut producer_batch(42, 0, 3, 2), 0, 1_000)
        .unwrap();
    assert_eq!((first.first_offset, second.first_offset), (0, 3));
    // The retry of the first batch: nothing appended, its offsets answered.
    let retry = leader
        .append_as_leader(&mut producer_batch(42, 0, 0, 3), 0, 1_000)
        .unwrap();
    assert!(retry.duplicate);
    assert_eq!((retry.first_offset, retry.last_offset), (0, 2));
    assert_eq!(leader.log_end_offset(), 5);
    // A gap, and an old epoch, are refused.
    assert!(matches!(
        leader.append_as_leader(&mut producer_batch(42, 0, 9, 1), 0, 1_000),
        Err(StorageError::Sequence(
            sluice_storage::producer_state::SequenceError::OutOfOrder { expected: 5, .. }
        ))
    ));
    leader
        .append_as_leader(&mut producer_batch(42, 1, 0, 1), 0, 1_000)
        .unwrap();
    assert!(matches!(
        leader.append_as_leader(&mut producer_batch(42, 0, 5, 1), 0, 1_000),
        Err(StorageError::Sequence(
            sluice_storage::producer_state::SequenceError::StaleEpoch { current: 1, .. }
        ))
    ));
    // A follower that replicated the batches deduplicates the same retry once it leads.
    let data = leader.read(0, u64::MAX, None, true).unwrap();
    let mut follower = open(&dir.path().join("follower"), LogConfig::default());
    follower.append_as_follower(&data.records, 1_000).unwrap();
    let retry = follower
        .append_as_leader(&mut producer_batch(42, 1, 0, 1), 1, 1_000)
        .unwrap();
    assert!(retry.duplicate);
    assert_eq!(retry.first_offset, 5);
    // ... and so does the leader after a restart (state rebuilt from the log).
    leader.close().unwrap();
    drop(leader);
    let mut reopened = open_clean(&dir.path().join("leader"), LogConfig::default());
    let retry = reopened
        .append_as_leader(&mut producer_batch(42, 1, 0, 1), 0, 1_000)
        .unwrap();
    assert!(retry.duplicate);
    // Truncation forgets the batches it cut: the producer is accepted afresh.
    reopened.truncate_to(3).unwrap();
    let again = reopened
        .append_as_leader(&mut producer_batch(42, 1, 0, 1), 0, 1_000)
        .unwrap();
    assert!(!again.duplicate);
    assert_eq!(again.first_offset, 3);
}

/// `cleanup.policy=compact` alone (the coordinators' internal topics): neither time nor
/// size retention deletes segments (until the cleaner exists, they are all kept).
#[test]
fn retention_leaves_compact_only_logs_alone() {
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_ms: 10_000,
        retention_bytes: 100,
        cleanup_delete: false,
        cleanup_compact: true,
        ..small_segments(2048)
    };
    let mut log = open(temp.path(), config);
    for i in 0..20i64 {
        let mut b = batch(2, Compression::None, T0 + (i / 2) * 1000, 400);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    let before = log.segments();
    assert!(before.len() >= 8, "{before:?}");
    assert_eq!(log.delete_old_segments(T0 + 1_000_000).unwrap(), 0);
    assert_eq!(log.segments(), before);
    assert_eq!(log.log_start_offset(), 0);
}

/// Kafka deletes an expired active segment too (rolling first, so the log keeps an
/// empty active segment at its end), but never past the high watermark.
#[test]
fn retention_deletes_an_expired_active_segment_up_to_the_high_watermark() {
    let temp = tempfile::tempdir().unwrap();
    let config = LogConfig {
        retention_ms: 10_000,
        ..small_segments(1 << 20)
    };
    let mut log = open(temp.path(), config);
    for i in 0..4i64 {
        let mut b = batch(2, Compression::None, T0 + i, 100);
        log.append_as_leader(&mut b, 0, T0).unwrap();
    }
    assert_eq!(log.segments().len(), 1);
    let later = T0 + 60_000;
    // The high watermark below the log end keeps the segment.
    assert_eq!(log.delete_old_segments_below(later, 6).unwrap(), 0);
    assert_eq!(log.log_start_offset(), 0);
    assert_eq!(log.delete_old_segments_below(later, 8).unwrap(), 1);
    let segments = log.segments();
    assert_eq!(segments.len(), 1, "{segments:?}");
    assert!(segments[0].active);
    assert_eq!((segments[0].base_offset, segments[0].size_bytes), (8, 0));
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (8, 8));
    // An empty active segment is never deleted; appends go on at the old end.
    assert_eq!(log.delete_old_segments(later).unwrap(), 0);
    let mut b = batch(1, Compression::None, later, 100);
    assert_eq!(
        log.append_as_leader(&mut b, 0, later).unwrap().first_offset,
        8
    );
    // And a restart keeps the new start.
    log.close().unwrap();
    drop(log);
    let log = open_clean(temp.path(), small_segments(1 << 20));
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (8, 9));
}
