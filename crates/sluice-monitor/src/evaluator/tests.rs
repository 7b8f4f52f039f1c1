//! Burrow's `core/internal/evaluator/caching_test.go` (Burrow commit
//! ced55ba90f6b833a45a124d411fd5eef63a70933): every case of its `tests` table with its
//! offsets, orders, timestamps, lags, broker offsets and expected rule results and
//! status; its requests against `storage.CoordinatorWithOffsets` (NOTFOUND, the single
//! requests with and without show-all, the incomplete group, the deleted topic). Burrow's
//! `timeNow` is in seconds; here it is `time_now_seconds * 1000` ms. Where Burrow's
//! fixture reads `time.Now()` these use the fixed [`NOW_MS`]. The cache cases follow
//! goswarm v1.10.0, the cache Burrow's go.mod pins, and are marked as such.

use super::*;
use crate::storage::{OffsetCommit, StorageConfig};

/// "Now" in every test: a whole second, as Burrow's `time.Now().Unix() * 1000`.
const NOW_MS: i64 = 1_700_000_000_000;
/// The fixture's `startTime := (time.Now().Unix() * 1000) - 100000`.
const START_MS: i64 = NOW_MS - 100_000;
const CLUSTER: &str = "testcluster";
const TOPIC: &str = "testtopic";

fn at(offset: i64, order: i64, timestamp: i64, lag: Option<u64>) -> ConsumerOffset {
    ConsumerOffset {
        offset,
        order,
        timestamp,
        observed_at: 0,
        lag,
    }
}

struct RuleCase {
    offsets: Vec<ConsumerOffset>,
    broker_offsets: Vec<i64>,
    current_lag: u64,
    time_now_seconds: i64,
    allowed_lag: u64,
    lag_always_not_zero: bool,
    /// Burrow's -1 is None.
    rewind_index: Option<usize>,
    stopped: bool,
    stalled: bool,
    lag_not_decreasing: bool,
    recent_lag_zero: bool,
    status: Status,
}

/// Burrow's test 9 and 10 window: fifteen commits a second apart, all with zero lag.
fn caught_up_window() -> Vec<ConsumerOffset> {
    let timestamps = [
        1512224618356,
        1512224619362,
        1512224620366,
        1512224621367,
        1512224622370,
        1512224623373,
        1512224624378,
        1512224625379,
        1512224626383,
        1512224627383,
        1512224628383,
        1512224629388,
        1512224630391,
        1512224631394,
        1512224632397,
    ];
    timestamps
        .iter()
        .zip(0..)
        .map(|(&timestamp, i)| at(792748079 + i, i + 1, timestamp, Some(0)))
        .collect()
}

fn rule_cases() -> Vec<RuleCase> {
    vec![
        // 0 - returns OK because there is zero lag somewhere
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(0)),
                at(2000, 2, 200000, Some(50)),
                at(3000, 3, 300000, Some(100)),
                at(4000, 4, 400000, Some(150)),
                at(5000, 5, 500000, Some(200)),
            ],
            broker_offsets: vec![5200],
            current_lag: 200,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: false,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 1 - same status. does not return true for stop because time since last commit
        // (400s) is equal to the difference (500-100), not greater than
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(0)),
                at(2000, 2, 200000, Some(50)),
                at(3000, 3, 300000, Some(100)),
                at(4000, 4, 400000, Some(150)),
                at(5000, 5, 500000, Some(200)),
            ],
            broker_offsets: vec![5200],
            current_lag: 200,
            time_now_seconds: 900,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: false,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 2 - status is now STOP because the time since last commit is great enough
        // (500s), even though lag is zero at the start (fixed due to #290)
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(0)),
                at(2000, 2, 200000, Some(50)),
                at(3000, 3, 300000, Some(100)),
                at(4000, 4, 400000, Some(150)),
                at(5000, 5, 500000, Some(200)),
            ],
            broker_offsets: vec![5200],
            current_lag: 200,
            time_now_seconds: 1000,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: true,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Stop,
        },
        // 3 - status is STOP when lag is always non-zero as well
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(50)),
                at(2000, 2, 200000, Some(100)),
                at(3000, 3, 300000, Some(150)),
                at(4000, 4, 400000, Some(200)),
                at(5000, 5, 500000, Some(250)),
            ],
            broker_offsets: vec![5250],
            current_lag: 250,
            time_now_seconds: 1000,
            allowed_lag: 0,
            lag_always_not_zero: true,
            rewind_index: None,
            stopped: true,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Stop,
        },
        // 4 - status is OK because of zero lag, but stall is true because the offset is
        // always the same and there is lag (another commit with turn this to stall)
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(0)),
                at(1000, 2, 200000, Some(50)),
                at(1000, 3, 300000, Some(100)),
                at(1000, 4, 400000, Some(150)),
                at(1000, 5, 500000, Some(200)),
            ],
            broker_offsets: vec![1200],
            current_lag: 200,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: false,
            stalled: true,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 5 - status is now STALL because the lag is always non-zero
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(100)),
                at(1000, 2, 200000, Some(150)),
                at(1000, 3, 300000, Some(200)),
                at(1000, 4, 400000, Some(250)),
                at(1000, 5, 500000, Some(300)),
            ],
            broker_offsets: vec![1300],
            current_lag: 300,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: true,
            rewind_index: None,
            stopped: false,
            stalled: true,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Stall,
        },
        // 6 - status is still STALL even when the lag stays the same
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(100)),
                at(1000, 2, 200000, Some(100)),
                at(1000, 3, 300000, Some(100)),
                at(1000, 4, 400000, Some(100)),
                at(1000, 5, 500000, Some(100)),
            ],
            broker_offsets: vec![1100],
            current_lag: 100,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: true,
            rewind_index: None,
            stopped: false,
            stalled: true,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Stall,
        },
        // 7 - status is OK because the offsets go backwards, but though the lag does
        // decrease within the window (caught up the rewind)
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(100)),
                at(2000, 2, 200000, Some(150)),
                at(3000, 3, 300000, Some(200)),
                at(2000, 4, 400000, Some(1250)),
                at(4000, 5, 500000, Some(300)),
            ],
            broker_offsets: vec![4300],
            current_lag: 300,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: true,
            rewind_index: Some(3),
            stopped: false,
            stalled: false,
            lag_not_decreasing: false,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 8 - status is OK because the current lag is 0 (even though the offsets show
        // lag), even though it would be considered stopped due to timestamps
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(50)),
                at(2000, 2, 200000, Some(100)),
                at(3000, 3, 300000, Some(150)),
                at(4000, 4, 400000, Some(200)),
                at(5000, 5, 500000, Some(250)),
            ],
            broker_offsets: vec![5250],
            current_lag: 0,
            time_now_seconds: 1000,
            allowed_lag: 0,
            lag_always_not_zero: true,
            rewind_index: None,
            stopped: true,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 9 - status is STOP due to timestamps because the current lag is non-zero, even
        // though lag is always zero in offsets, only because there is new data (#290)
        RuleCase {
            offsets: caught_up_window(),
            broker_offsets: vec![792749024, 792749000, 792748800, 792748600, 792748500],
            current_lag: 931,
            time_now_seconds: 1512224650,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: true,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Stop,
        },
        // 10 - status is OK, even though it would be stop due to timestamps, as within
        // the recent broker offset window the lag was zero (#303)
        RuleCase {
            offsets: caught_up_window(),
            broker_offsets: vec![792748094, 792748093, 792748093, 792748093],
            current_lag: 1,
            time_now_seconds: 1512224650,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: true,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: true,
            status: Status::Ok,
        },
        // 11 - same case as test 0 with additional nil lag entries which should not
        // affect results
        RuleCase {
            offsets: vec![
                at(1000, 10, 100000, Some(0)),
                at(1500, 15, 150000, None),
                at(2000, 20, 200000, Some(50)),
                at(2500, 25, 250000, None),
                at(3000, 30, 300000, Some(100)),
                at(3500, 35, 350000, None),
                at(4000, 40, 400000, Some(150)),
                at(4500, 45, 450000, None),
                at(5000, 50, 500000, Some(200)),
                at(5500, 55, 550000, None),
            ],
            broker_offsets: vec![5700],
            current_lag: 200,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: false,
            stalled: false,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 12 - status is OK despite the fact that the current lag is greater zero and the
        // time since last commit is great enough because of the configured allowed lag
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(2)),
                at(2000, 2, 200000, Some(1)),
                at(2000, 2, 300000, Some(1)),
            ],
            broker_offsets: vec![2001],
            current_lag: 1,
            time_now_seconds: 550,
            allowed_lag: 1,
            lag_always_not_zero: false,
            rewind_index: None,
            stopped: true,
            stalled: false,
            lag_not_decreasing: false,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 13 - same as 5 but with an allowed lag
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(100)),
                at(1000, 2, 200000, Some(150)),
                at(1000, 3, 300000, Some(200)),
                at(1000, 4, 400000, Some(250)),
                at(1000, 5, 500000, Some(300)),
            ],
            broker_offsets: vec![1300],
            current_lag: 300,
            time_now_seconds: 600,
            allowed_lag: 99,
            lag_always_not_zero: true,
            rewind_index: None,
            stopped: false,
            stalled: true,
            lag_not_decreasing: true,
            recent_lag_zero: false,
            status: Status::Stall,
        },
        // 14 - same as 7 but with an allowed lag
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(100)),
                at(2000, 2, 200000, Some(150)),
                at(3000, 3, 300000, Some(200)),
                at(2000, 4, 400000, Some(1250)),
                at(4000, 5, 500000, Some(300)),
            ],
            broker_offsets: vec![4300],
            current_lag: 300,
            time_now_seconds: 600,
            allowed_lag: 99,
            lag_always_not_zero: true,
            rewind_index: Some(3),
            stopped: false,
            stalled: false,
            lag_not_decreasing: false,
            recent_lag_zero: false,
            status: Status::Ok,
        },
        // 15 - Rewind, but we did not catch up to the previous point
        RuleCase {
            offsets: vec![
                at(1000, 1, 100000, Some(100)),
                at(2000, 2, 200000, Some(150)),
                at(3000, 3, 300000, Some(200)),
                at(2000, 4, 400000, Some(1250)),
                at(2500, 5, 500000, Some(300)),
            ],
            broker_offsets: vec![4300],
            current_lag: 300,
            time_now_seconds: 600,
            allowed_lag: 0,
            lag_always_not_zero: true,
            rewind_index: Some(3),
            stopped: false,
            stalled: false,
            lag_not_decreasing: false,
            recent_lag_zero: false,
            status: Status::Rewind,
        },
    ]
}

#[test]
fn check_rules() {
    // TestCachingEvaluator_CheckRules: each rule on its own, then the status.
    let cases = rule_cases();
    assert_eq!(cases.len(), 16, "every case of Burrow's table");
    for (index, case) in cases.iter().enumerate() {
        let now_ms = case.time_now_seconds * 1000;
        let offsets = &case.offsets;
        assert_eq!(
            lag_always_not_zero(offsets, case.allowed_lag),
            case.lag_always_not_zero,
            "TEST {index}: isLagAlwaysNotZero"
        );
        assert_eq!(
            rewind_index(offsets),
            case.rewind_index,
            "TEST {index}: checkIfOffsetsRewind"
        );
        assert_eq!(
            offsets_stopped(offsets, now_ms),
            case.stopped,
            "TEST {index}: checkIfOffsetsStopped"
        );
        assert_eq!(
            offsets_stalled(offsets),
            case.stalled,
            "TEST {index}: checkIfOffsetsStalled"
        );
        assert_eq!(
            lag_not_decreasing(offsets),
            case.lag_not_decreasing,
            "TEST {index}: checkIfLagNotDecreasing"
        );
        assert_eq!(
            recent_lag_zero(offsets, &case.broker_offsets),
            case.recent_lag_zero,
            "TEST {index}: checkIfRecentLagZero"
        );
        assert_eq!(
            partition_status(
                offsets,
                &case.broker_offsets,
                case.current_lag,
                now_ms,
                case.allowed_lag
            ),
            case.status,
            "TEST {index}: calculatePartitionStatus"
        );
    }
}

#[test]
fn now_is_read_in_whole_seconds() {
    // Burrow's time.Now().Unix(): case 1's silence equals its span at 900 s and at
    // 900.999 s; only at 901 s is it longer.
    let offsets = &rule_cases()[1].offsets;
    assert!(!offsets_stopped(offsets, 900_999));
    assert!(offsets_stopped(offsets, 901_000));
}

/// Burrow's `storage.CoordinatorWithOffsets`: intervals 10, min-distance 0, one partition
/// at 4321, `testgroup` with a full window (offsets 1000..1900, orders 10..19, ten
/// seconds apart) and `testgroup2` with half of it.
fn storage_with_offsets() -> Storage {
    let mut storage = Storage::new(StorageConfig {
        intervals: 10,
        min_distance_seconds: 0,
        group_allowlist: Some(String::new()),
        ..StorageConfig::default()
    })
    .expect("a valid config");
    storage.add_cluster(CLUSTER);
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 1, 4321, 9876)
        .expect("stored");
    for (group, commits) in [("testgroup", 10), ("testgroup2", 5)] {
        for i in 0..commits {
            let commit = OffsetCommit {
                offset: 1000 + i * 100,
                order: 10 + i,
                timestamp_ms: START_MS + i * 10_000,
                observed_ms: START_MS + i * 10_000,
            };
            storage
                .set_consumer_offset(CLUSTER, group, TOPIC, 0, commit)
                .expect("stored");
        }
    }
    storage
}

/// Burrow's `fixtureModule`: expire-cache 30.
fn burrow_evaluator() -> Evaluator {
    Evaluator::new(EvaluatorConfig {
        expire_cache_seconds: 30,
        ..EvaluatorConfig::default()
    })
    .expect("a valid config")
}

#[test]
fn group_requests() {
    struct Case {
        name: &'static str,
        cluster: &'static str,
        group: &'static str,
        show_all: bool,
        status: Status,
        complete: f32,
        total_partitions: usize,
        totallag: u64,
        /// The listed partitions' (status, complete).
        partitions: Vec<(Status, f32)>,
        /// Maxlag's start and end offsets.
        maxlag: Option<(i64, i64)>,
    }
    let cases = [
        Case {
            name: "Start (no such group)",
            cluster: CLUSTER,
            group: "nosuchgroup",
            show_all: false,
            status: Status::NotFound,
            complete: 1.0,
            total_partitions: 0,
            totallag: 0,
            partitions: vec![],
            maxlag: None,
        },
        Case {
            name: "no such cluster",
            cluster: "nocluster",
            group: "testgroup",
            show_all: true,
            status: Status::NotFound,
            complete: 1.0,
            total_partitions: 0,
            totallag: 0,
            partitions: vec![],
            maxlag: None,
        },
        Case {
            name: "SingleRequest_NoShowAll",
            cluster: CLUSTER,
            group: "testgroup",
            show_all: false,
            status: Status::Ok,
            complete: 1.0,
            total_partitions: 1,
            totallag: 2421,
            partitions: vec![],
            maxlag: Some((1000, 1900)),
        },
        Case {
            name: "SingleRequest_ShowAll",
            cluster: CLUSTER,
            group: "testgroup",
            show_all: true,
            status: Status::Ok,
            complete: 1.0,
            total_partitions: 1,
            totallag: 2421,
            partitions: vec![(Status::Ok, 1.0)],
            maxlag: Some((1000, 1900)),
        },
        Case {
            name: "SingleRequest_Incomplete",
            cluster: CLUSTER,
            group: "testgroup2",
            show_all: false,
            status: Status::Error,
            complete: 0.0,
            total_partitions: 1,
            totallag: 2921,
            partitions: vec![(Status::Stop, 0.5)],
            maxlag: Some((1000, 1400)),
        },
    ];
    for case in cases {
        let mut storage = storage_with_offsets();
        let status = burrow_evaluator().group_status(
            &mut storage,
            case.cluster,
            case.group,
            case.show_all,
            NOW_MS,
        );
        let name = case.name;
        assert_eq!(status.cluster, case.cluster, "{name}");
        assert_eq!(status.group, case.group, "{name}");
        assert_eq!(status.status, case.status, "{name}");
        assert_eq!(status.complete, case.complete, "{name}");
        assert_eq!(status.total_partitions, case.total_partitions, "{name}");
        assert_eq!(status.totallag, case.totallag, "{name}");
        let partitions: Vec<(Status, f32)> = status
            .partitions
            .iter()
            .map(|partition| (partition.status, partition.complete))
            .collect();
        assert_eq!(partitions, case.partitions, "{name}");
        let maxlag = status.maxlag.as_ref().map(|maxlag| {
            let offset = |end: &Option<ConsumerOffset>| end.as_ref().map_or(-1, |end| end.offset);
            (offset(&maxlag.start), offset(&maxlag.end))
        });
        assert_eq!(maxlag, case.maxlag, "{name}");
    }
}

#[test]
fn a_group_whose_topic_was_deleted_is_ok_with_no_partitions() {
    // TestCachingEvaluator_TopicDeleted (Burrow's TODO says a group should not outlive
    // its topics; it does, and this pins what Burrow answers).
    let mut storage = storage_with_offsets();
    storage.delete_topic(CLUSTER, TOPIC).expect("known cluster");
    let status = burrow_evaluator().group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS);
    assert_eq!(status.status, Status::Ok);
    assert!(status.partitions.is_empty());
    assert_eq!(status.complete, 0.0);
}

#[test]
fn partitions_below_minimum_complete_are_ok() {
    // Burrow's evaluatePartitionStatus: testgroup2's window is half full, so with
    // minimum-complete 0.6 its STOP is not reported.
    let mut storage = storage_with_offsets();
    let config = EvaluatorConfig {
        minimum_complete: 0.6,
        ..EvaluatorConfig::default()
    };
    let status = evaluate_group(&mut storage, CLUSTER, "testgroup2", &config, NOW_MS)
        .expect("the group is stored");
    assert_eq!(status.status, Status::Ok);
    assert_eq!(status.complete, 0.0);
    let partition = &status.partitions[0];
    assert_eq!((partition.status, partition.complete), (Status::Ok, 0.5));
    assert_eq!(
        partition.start.as_ref().map(|start| start.offset),
        Some(1000)
    );
    assert_eq!(partition.end.as_ref().map(|end| end.offset), Some(1400));
}

#[test]
fn partition_windows() {
    // Burrow's evaluatePartitionStatus on the shapes storage returns: no window, a window
    // of empty slots (an owner without commits), a partly and a fully filled window.
    let config = EvaluatorConfig::default();
    let filled = |count: usize| -> Vec<Option<ConsumerOffset>> {
        (0..10)
            .map(|slot| {
                (slot >= 10 - count).then(|| {
                    let i = slot as i64;
                    at(1000 + i * 100, i, NOW_MS - 100_000 + i * 10_000, Some(10))
                })
            })
            .collect()
    };
    struct Case {
        name: &'static str,
        offsets: Vec<Option<ConsumerOffset>>,
        current_lag: u64,
        status: Status,
        complete: f32,
        start: Option<i64>,
    }
    let cases = [
        Case {
            name: "no window",
            offsets: vec![],
            current_lag: 5,
            status: Status::Ok,
            complete: 0.0,
            start: None,
        },
        Case {
            name: "only empty slots: the last slot is kept, one tenth complete",
            offsets: vec![None; 10],
            current_lag: 0,
            status: Status::Ok,
            complete: 0.1,
            start: None,
        },
        Case {
            name: "one empty slot",
            offsets: vec![None],
            current_lag: 0,
            status: Status::Ok,
            complete: 1.0,
            start: None,
        },
        Case {
            name: "three of ten, lag never decreasing",
            offsets: filled(3),
            current_lag: 10,
            status: Status::Warning,
            complete: 0.3,
            start: Some(1700),
        },
        Case {
            name: "full, lag never decreasing",
            offsets: filled(10),
            current_lag: 10,
            status: Status::Warning,
            complete: 1.0,
            start: Some(1000),
        },
    ];
    for case in cases {
        let partition = ConsumerPartition {
            offsets: case.offsets,
            broker_offsets: vec![5000],
            owner: "host".to_string(),
            client_id: "client".to_string(),
            current_lag: case.current_lag,
        };
        let status = evaluate_partition(TOPIC, 3, &partition, &config, NOW_MS);
        let name = case.name;
        assert_eq!(status.status, case.status, "{name}");
        assert_eq!(status.complete, case.complete, "{name}");
        assert_eq!(status.start.map(|start| start.offset), case.start, "{name}");
        assert_eq!(
            (
                status.topic.as_str(),
                status.partition,
                status.owner.as_str()
            ),
            (TOPIC, 3, "host"),
            "{name}"
        );
        assert_eq!(status.current_lag, case.current_lag, "{name}");
    }
}

#[test]
fn group_status_is_the_worst_partition_capped_at_error() {
    // Burrow's evaluateConsumerStatus over two topics: a WARN partition and an OK one make
    // WARN; a STALL makes ERR. maxlag is the partition with the largest current lag,
    // totallag their sum, complete the share of complete partitions.
    let stalled = ConsumerPartition {
        offsets: (0..10)
            .map(|i| Some(at(1000, i, START_MS + i * 10_000, Some(50))))
            .collect(),
        broker_offsets: vec![1050],
        current_lag: 50,
        ..ConsumerPartition::default()
    };
    let warning = ConsumerPartition {
        offsets: (0..10)
            .map(|i| Some(at(1000 + i, i, START_MS + i * 10_000, Some(60 + i as u64))))
            .collect(),
        broker_offsets: vec![1070],
        current_lag: 61,
        ..ConsumerPartition::default()
    };
    let incomplete = ConsumerPartition {
        offsets: std::iter::once(None)
            .chain((1..10).map(|i| Some(at(1000 + i, i, START_MS + i * 10_000, Some(0)))))
            .collect(),
        broker_offsets: vec![1009],
        current_lag: 0,
        ..ConsumerPartition::default()
    };
    let cases = [
        (
            vec![warning.clone(), incomplete.clone()],
            Status::Warning,
            0.5,
            61,
            ("a", 0, 61),
        ),
        (
            vec![stalled, warning, incomplete],
            Status::Error,
            2.0 / 3.0,
            111,
            ("b", 0, 61),
        ),
    ];
    for (partitions, expected, complete, totallag, maxlag) in cases {
        let mut topics = ConsumerTopics::new();
        topics.insert("a".to_string(), partitions[..1].to_vec());
        topics.insert("b".to_string(), partitions[1..].to_vec());
        let status = evaluate_topics(CLUSTER, "g", &topics, &EvaluatorConfig::default(), NOW_MS);
        assert_eq!(status.status, expected);
        assert_eq!(status.complete, complete);
        assert_eq!(status.totallag, totallag);
        let largest = status.maxlag.expect("a partition");
        assert_eq!(
            (
                largest.topic.as_str(),
                largest.partition,
                largest.current_lag
            ),
            maxlag
        );
        let order: Vec<(&str, i32)> = status
            .partitions
            .iter()
            .map(|partition| (partition.topic.as_str(), partition.partition))
            .collect();
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "partitions listed in topic, partition order");
    }
}

#[test]
fn config_reads_burrows_keys_and_defaults() {
    // TestCachingEvaluator_Configure_DefaultExpireCache, and Burrow's other defaults.
    let empty: EvaluatorConfig =
        serde_json::from_value(serde_json::json!({})).expect("deserializes");
    assert_eq!(
        (
            empty.expire_cache_seconds,
            empty.minimum_complete,
            empty.allowed_lag
        ),
        (10, 0.0, 0)
    );
    let set: EvaluatorConfig = serde_json::from_value(serde_json::json!({
        "class-name": "caching", "expire-cache": 30, "minimum-complete": 0.5, "allowed-lag": 7
    }))
    .expect("deserializes");
    assert_eq!(
        (
            set.expire_cache_seconds,
            set.minimum_complete,
            set.allowed_lag
        ),
        (30, 0.5, 7)
    );
    Evaluator::new(set).expect("Burrow starts with it");
    let other = EvaluatorConfig {
        class_name: Some("other".to_string()),
        ..EvaluatorConfig::default()
    };
    assert!(Evaluator::new(other).is_err());
    let typo = serde_json::from_value::<EvaluatorConfig>(serde_json::json!({"expire-cach": 1}));
    assert!(typo.is_err(), "an unknown key is refused");
}

#[test]
fn results_are_cached_for_expire_cache() {
    // goswarm v1.10.0 as Burrow configures it: a result is served until now is after
    // its expiry (strictly), then evaluated again. A change in storage in between is not
    // seen, a deleted group included.
    let mut storage = storage_with_offsets();
    let mut evaluator = burrow_evaluator();
    let lag = |evaluator: &mut Evaluator, storage: &mut Storage, now_ms| {
        let status = evaluator.group_status(storage, CLUSTER, "testgroup", true, now_ms);
        (status.status, status.totallag)
    };
    assert_eq!(
        lag(&mut evaluator, &mut storage, NOW_MS),
        (Status::Ok, 2421)
    );
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 1, 5321, 9877)
        .expect("stored");
    assert_eq!(
        lag(&mut evaluator, &mut storage, NOW_MS + 30_000),
        (Status::Ok, 2421)
    );
    assert_eq!(
        lag(&mut evaluator, &mut storage, NOW_MS + 30_001),
        (Status::Ok, 3421)
    );

    storage
        .delete_group(CLUSTER, "testgroup")
        .expect("known cluster");
    assert_eq!(
        lag(&mut evaluator, &mut storage, NOW_MS + 60_001),
        (Status::Ok, 3421)
    );
    assert_eq!(
        lag(&mut evaluator, &mut storage, NOW_MS + 60_002),
        (Status::NotFound, 0)
    );

    // show-all is applied per request to the one cached result.
    let mut storage = storage_with_offsets();
    let mut evaluator = burrow_evaluator();
    let all = evaluator.group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS);
    let unhealthy = evaluator.group_status(&mut storage, CLUSTER, "testgroup", false, NOW_MS);
    assert_eq!((all.partitions.len(), unhealthy.partitions.len()), (1, 0));
    assert_eq!(unhealthy.total_partitions, 1);
}

#[test]
fn not_found_is_served_once_more_then_refreshed() {
    // goswarm v1.10.0: an error result is always stale; while unexpired it is served, and
    // serving it refreshes it, so the next request sees a group that appeared since.
    let mut storage = storage_with_offsets();
    let mut evaluator = burrow_evaluator();
    let status_of = |evaluator: &mut Evaluator, storage: &mut Storage, now_ms| {
        evaluator
            .group_status(storage, CLUSTER, "latergroup", true, now_ms)
            .status
    };
    assert_eq!(
        status_of(&mut evaluator, &mut storage, NOW_MS),
        Status::NotFound
    );
    storage
        .set_consumer_offset(
            CLUSTER,
            "latergroup",
            TOPIC,
            0,
            OffsetCommit {
                offset: 4321,
                order: 1,
                timestamp_ms: NOW_MS,
                observed_ms: NOW_MS,
            },
        )
        .expect("stored");
    assert_eq!(
        status_of(&mut evaluator, &mut storage, NOW_MS + 1000),
        Status::NotFound
    );
    assert_eq!(
        status_of(&mut evaluator, &mut storage, NOW_MS + 2000),
        Status::Ok
    );
}

#[test]
fn zero_expire_cache_evaluates_every_request() {
    // Not Burrow: there a zero expire-cache keeps each group's first result forever.
    let mut storage = storage_with_offsets();
    let mut evaluator = Evaluator::new(EvaluatorConfig {
        expire_cache_seconds: 0,
        ..EvaluatorConfig::default()
    })
    .expect("valid");
    let first = evaluator.group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS);
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 1, 5321, 9877)
        .expect("stored");
    let second = evaluator.group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS);
    assert_eq!((first.totallag, second.totallag), (2421, 3421));
}

#[test]
fn forgetting_a_deleted_group_ends_its_cached_answer() {
    // Not Burrow's behaviour (its cache answers for a deleted group until expire-cache):
    // the monitor forgets a group's evaluation when storage deletes it.
    let mut storage = storage_with_offsets();
    let mut evaluator = burrow_evaluator();
    let status = evaluator.group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS);
    assert_eq!(status.status, Status::Ok);
    storage
        .delete_group(CLUSTER, "testgroup")
        .expect("known cluster");
    evaluator.forget(CLUSTER, Some("testgroup"));
    let status = evaluator.group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS + 1);
    assert_eq!(status.status, Status::NotFound);
    // Forgetting a whole cluster (a topic deleted) drops every group's answer.
    evaluator.forget(CLUSTER, None);
    let status = evaluator.group_status(&mut storage, CLUSTER, "testgroup", true, NOW_MS + 2);
    assert_eq!(status.status, Status::NotFound);
}
