//! Burrow's `core/internal/storage/inmemory_test.go` (Burrow commit
//! ced55ba90f6b833a45a124d411fd5eef63a70933), its cases as tables with its offsets,
//! orders, timestamps, lags and expectations. Where Burrow reads `time.Now()` the tables
//! use the fixed [`NOW_MS`]; where Burrow's test reads a private field (a ring, a
//! timestamp, `acceptConsumerGroup`) these read what a user of storage can see, through
//! the fetches. Cases Burrow's file lacks (its `TODO` for clearing owners, partition
//! growth, expiry bounds, a group's topic delete) follow Burrow's code and are marked.

use super::*;

/// "Now" in every test: a whole second, as Burrow's `time.Now().Unix() * 1000`.
const NOW_MS: i64 = 1_700_000_000_000;
/// Burrow's `startTime := (time.Now().Unix() * 1000) - 100000`.
const START_MS: i64 = NOW_MS - 100_000;
const CLUSTER: &str = "testcluster";
const TOPIC: &str = "testtopic";
const GROUP: &str = "testgroup";

/// Burrow's `fixtureModule`: min-distance 1, optional allowlist and denylist.
fn burrow_config(allowlist: &str, denylist: &str) -> StorageConfig {
    StorageConfig {
        min_distance_seconds: 1,
        group_allowlist: Some(allowlist.to_string()),
        group_denylist: Some(denylist.to_string()),
        ..StorageConfig::default()
    }
}

/// Burrow's `startWithTestCluster`.
fn with_test_cluster(allowlist: &str) -> Storage {
    let mut storage = Storage::new(burrow_config(allowlist, "")).expect("a valid config");
    storage.add_cluster(CLUSTER);
    storage
}

/// Burrow's `startWithTestBrokerOffsets`: one partition at 4321.
fn with_broker_offsets(allowlist: &str) -> Storage {
    let mut storage = with_test_cluster(allowlist);
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 1, 4321, 9876)
        .expect("the cluster is known");
    storage
}

/// Burrow's `startWithTestConsumerOffsets`: ten commits, offsets 1000..1900, orders
/// 500..509, ten seconds apart from `start_ms`. Commits Burrow drops are dropped here.
fn with_consumer_offsets(allowlist: &str, start_ms: i64) -> Storage {
    let mut storage = with_broker_offsets(allowlist);
    for i in 0..10 {
        let _ = storage.set_consumer_offset(
            CLUSTER,
            GROUP,
            TOPIC,
            0,
            commit(1000 + i * 100, 500 + i, start_ms + i * 10_000),
        );
    }
    storage
}

fn commit(offset: i64, order: i64, timestamp_ms: i64) -> OffsetCommit {
    OffsetCommit {
        offset,
        order,
        timestamp_ms,
        observed_ms: NOW_MS,
    }
}

fn stored(offset: i64, order: i64, timestamp: i64, lag: Option<u64>) -> ConsumerOffset {
    ConsumerOffset {
        offset,
        order,
        timestamp,
        observed_at: NOW_MS,
        lag,
    }
}

fn partition_of(storage: &mut Storage, group: &str, partition: usize) -> ConsumerPartition {
    let topics = storage
        .consumer(CLUSTER, group, NOW_MS)
        .expect("the group is stored");
    topics[TOPIC][partition].clone()
}

#[test]
fn config_reads_burrows_keys_and_defaults() {
    struct Case {
        name: &'static str,
        section: serde_json::Value,
        expected: StorageConfig,
    }
    let cases = [
        Case {
            // TestInMemoryStorage_Configure_DefaultIntervals, and Burrow's other defaults
            // (min-distance has none in Burrow's code, so 0).
            name: "empty section",
            section: serde_json::json!({}),
            expected: StorageConfig {
                intervals: 10,
                min_distance_seconds: 0,
                expire_group_seconds: 604_800,
                ..StorageConfig::default()
            },
        },
        Case {
            // Burrow's config/burrow.toml [storage.default].
            name: "burrow.toml",
            section: serde_json::json!({
                "class-name": "inmemory", "workers": 20, "intervals": 15,
                "expire-group": 604800, "min-distance": 1
            }),
            expected: StorageConfig {
                intervals: 15,
                min_distance_seconds: 1,
                class_name: Some("inmemory".to_string()),
                workers: Some(20),
                ..StorageConfig::default()
            },
        },
        Case {
            name: "lists",
            section: serde_json::json!({
                "group-allowlist": "^app-", "group-denylist": "^(console-consumer-|quick-)",
                "queue-depth": 1
            }),
            expected: StorageConfig {
                group_allowlist: Some("^app-".to_string()),
                group_denylist: Some("^(console-consumer-|quick-)".to_string()),
                queue_depth: Some(1),
                ..StorageConfig::default()
            },
        },
    ];
    for case in cases {
        let config: StorageConfig =
            serde_json::from_value(case.section).expect("Burrow's keys deserialize");
        assert_eq!(config, case.expected, "{}", case.name);
        Storage::new(config).expect("Burrow starts with it");
    }
    let typo = serde_json::from_value::<StorageConfig>(serde_json::json!({"intervls": 10}));
    assert!(typo.is_err(), "an unknown key is refused");
}

#[test]
fn configs_burrow_refuses_are_errors() {
    // TestInMemoryStorage_Configure_BadAllowlistRegexp / _BadDenylistRegexp, and
    // Configure's refusal of the old key names.
    let cases = [
        (burrow_config("[", ""), "group-allowlist"),
        (burrow_config("", "["), "group-denylist"),
        (
            StorageConfig {
                group_whitelist: Some(String::new()),
                ..StorageConfig::default()
            },
            "group-whitelist was renamed group-allowlist",
        ),
        (
            StorageConfig {
                group_blacklist: Some("x".to_string()),
                ..StorageConfig::default()
            },
            "group-blacklist was renamed group-denylist",
        ),
        (
            StorageConfig {
                intervals: 0,
                ..StorageConfig::default()
            },
            "intervals",
        ),
        (
            StorageConfig {
                class_name: Some("redis".to_string()),
                ..StorageConfig::default()
            },
            "class-name",
        ),
    ];
    for (config, message) in cases {
        let error = Storage::new(config).expect_err("Burrow refuses this config");
        assert!(
            error.to_string().contains(message),
            "{error} names {message}"
        );
    }
}

#[test]
fn broker_offsets_keep_the_last_intervals_per_partition() {
    struct Case {
        name: &'static str,
        /// (partition, topic partition count, offset, timestamp)
        steps: Vec<(i32, i32, i64, i64)>,
        topic: Vec<i64>,
        /// Per partition, the window oldest first as (offset, timestamp).
        windows: Vec<Vec<(i64, i64)>>,
    }
    let many: Vec<(i32, i32, i64, i64)> = std::iter::once((0, 1, 4321, 9876))
        .chain((1..=100).map(|i| (0, 1, 4321 + i, 9876 + i)))
        .collect();
    let cases = [
        Case {
            name: "addBrokerOffset",
            steps: vec![(0, 1, 4321, 9876)],
            topic: vec![4321],
            windows: vec![vec![(4321, 9876)]],
        },
        Case {
            name: "addBrokerOffset_ExistingTopic",
            steps: vec![(0, 2, 4321, 9876), (1, 2, 5432, 8765)],
            topic: vec![4321, 5432],
            windows: vec![vec![(4321, 9876)], vec![(5432, 8765)]],
        },
        Case {
            name: "addBrokerOffset_ExistingPartition",
            steps: vec![(0, 1, 4321, 9876), (0, 1, 5432, 8765)],
            topic: vec![5432],
            windows: vec![vec![(4321, 9876), (5432, 8765)]],
        },
        Case {
            name: "addBrokerOffset_AddMany",
            steps: many,
            topic: vec![4421],
            windows: vec![(91..=100).map(|i| (4321 + i, 9876 + i)).collect()],
        },
        Case {
            // Burrow's code: the partition count grows; a partition with no offset yet is
            // left out of the topic's offsets, not zero.
            name: "partition count grows",
            steps: vec![(0, 1, 4321, 9876), (2, 3, 7000, 9877)],
            topic: vec![4321, 7000],
            windows: vec![vec![(4321, 9876)], vec![], vec![(7000, 9877)]],
        },
        Case {
            // Burrow's code: a smaller count does not shrink the topic.
            name: "partition count never shrinks",
            steps: vec![(1, 2, 10, 1), (0, 1, 20, 2), (1, 1, 30, 3)],
            topic: vec![20, 30],
            windows: vec![vec![(20, 2)], vec![(10, 1), (30, 3)]],
        },
    ];
    for case in cases {
        let mut storage = with_test_cluster("");
        for (partition, count, offset, timestamp) in case.steps {
            storage
                .set_broker_offset(CLUSTER, TOPIC, partition, count, offset, timestamp)
                .expect("stored");
        }
        assert_eq!(
            storage.topic(CLUSTER, TOPIC),
            Some(case.topic),
            "{}",
            case.name
        );
        for (partition, expected) in case.windows.iter().enumerate() {
            let window: Vec<(i64, i64)> = storage
                .broker_offsets(CLUSTER, TOPIC, partition as i32)
                .expect("the partition exists")
                .iter()
                .map(|broker| (broker.offset, broker.timestamp_ms))
                .collect();
            assert_eq!(&window, expected, "{} partition {partition}", case.name);
        }
        assert_eq!(
            storage.broker_offsets(CLUSTER, TOPIC, case.windows.len() as i32),
            None,
            "{}",
            case.name
        );
    }
}

#[test]
fn broker_offsets_burrow_cannot_place_are_dropped() {
    // TestInMemoryStorage_addBrokerOffset_BadCluster; the partition cases are ones where
    // Burrow's code would index out of its slice.
    let cases = [
        ("nocluster", 0, 1, Dropped::UnknownCluster),
        (CLUSTER, -1, 1, Dropped::NegativePartition),
        (CLUSTER, 1, 1, Dropped::UnknownPartition),
    ];
    for (cluster, partition, count, expected) in cases {
        let mut storage = with_test_cluster("");
        assert_eq!(
            storage.set_broker_offset(cluster, TOPIC, partition, count, 4321, 9876),
            Err(expected)
        );
        assert_eq!(storage.clusters(), [CLUSTER], "no cluster is added");
        assert_eq!(storage.topics(CLUSTER), Some(vec![]), "no topic is created");
    }
}

#[test]
fn commits_burrow_drops_create_nothing() {
    struct Case {
        name: &'static str,
        allowlist: &'static str,
        cluster: &'static str,
        topic: &'static str,
        partition: i32,
        timestamp_ms: i64,
        expected: Result<(), Dropped>,
    }
    let case = |name, allowlist, cluster, topic, partition, timestamp_ms, expected| Case {
        name,
        allowlist,
        cluster,
        topic,
        partition,
        timestamp_ms,
        expected,
    };
    let cases = [
        // TestInMemoryStorage_getBrokerOffset, seen through a commit for each partition:
        // the topic has two partitions, only partition 0 has an offset.
        case(
            "getBrokerOffset p0",
            "",
            CLUSTER,
            TOPIC,
            0,
            START_MS,
            Ok(()),
        ),
        case(
            "getBrokerOffset notopic",
            "",
            CLUSTER,
            "notopic",
            0,
            START_MS,
            Err(Dropped::UnknownTopic),
        ),
        case(
            "getBrokerOffset p2",
            "",
            CLUSTER,
            TOPIC,
            2,
            START_MS,
            Err(Dropped::UnknownPartition),
        ),
        case(
            "getBrokerOffset p1",
            "",
            CLUSTER,
            TOPIC,
            1,
            START_MS,
            Err(Dropped::NoBrokerOffset),
        ),
        case(
            "getBrokerOffset p-1",
            "",
            CLUSTER,
            TOPIC,
            -1,
            START_MS,
            Err(Dropped::NegativePartition),
        ),
        // TestInMemoryStorage_addConsumerOffset_BadBrokerOffset (Burrow's timestamp 5677
        // is also too old; the topic is what this case is about).
        case(
            "addConsumerOffset_BadBrokerOffset",
            "",
            CLUSTER,
            "notopic",
            0,
            START_MS,
            Err(Dropped::UnknownTopic),
        ),
        case(
            "addConsumerOffset_BadCluster",
            "",
            "nocluster",
            TOPIC,
            0,
            START_MS,
            Err(Dropped::UnknownCluster),
        ),
        case(
            "addConsumerOffset_Allowlist",
            "allowlistedgroup",
            CLUSTER,
            TOPIC,
            0,
            START_MS,
            Err(Dropped::GroupNotAccepted),
        ),
        case(
            "addConsumerOffset_TooOld",
            "testgroup",
            CLUSTER,
            TOPIC,
            0,
            1_000_000,
            Err(Dropped::OffsetTooOld),
        ),
    ];
    for case in cases {
        let mut storage = with_test_cluster(case.allowlist);
        storage
            .set_broker_offset(CLUSTER, TOPIC, 0, 2, 4321, 9876)
            .expect("stored");
        let result = storage.set_consumer_offset(
            case.cluster,
            GROUP,
            case.topic,
            case.partition,
            commit(3434, 1, case.timestamp_ms),
        );
        assert_eq!(result, case.expected, "{}", case.name);
        let groups = if case.expected.is_ok() {
            vec![GROUP.to_string()]
        } else {
            vec![]
        };
        assert_eq!(storage.consumers(CLUSTER), Some(groups), "{}", case.name);
        assert_eq!(storage.clusters(), [CLUSTER], "{}", case.name);
    }
}

#[test]
fn commits_land_in_the_window_by_order() {
    struct Case {
        name: &'static str,
        min_distance_seconds: i64,
        log_end_offset: i64,
        /// (offset, order, timestamp relative to START_MS)
        inputs: Vec<(i64, i64, i64)>,
        /// The window's empty slots, then its commits oldest first as (offset, order,
        /// timestamp relative to START_MS, lag).
        empty_slots: usize,
        outputs: Vec<(i64, i64, i64, Option<u64>)>,
    }
    let ten_commits: Vec<(i64, i64, i64)> = (0..10)
        .map(|i| (1000 + i * 100, 500 + i, i * 10_000))
        .collect();
    let with_one_more = |extra: (i64, i64, i64)| {
        let mut inputs = ten_commits.clone();
        inputs.push(extra);
        inputs
    };
    let cases = [
        // consumerOffsetTests 0 - appending multiple offsets
        Case {
            name: "0 append",
            min_distance_seconds: 1,
            log_end_offset: 5000,
            inputs: vec![
                (1000, 1, 100000),
                (2000, 2, 200000),
                (3000, 3, 300000),
                (4000, 4, 400000),
                (5000, 5, 500000),
            ],
            empty_slots: 5,
            outputs: vec![
                (1000, 1, 100000, Some(4000)),
                (2000, 2, 200000, Some(3000)),
                (3000, 3, 300000, Some(2000)),
                (4000, 4, 400000, Some(1000)),
                (5000, 5, 500000, Some(0)),
            ],
        },
        // 1 - prepending offsets until the buffer is full; the last two are dropped
        // because their order is older than everything in the full window
        Case {
            name: "1 prepend until full",
            min_distance_seconds: 1,
            log_end_offset: 5000,
            inputs: vec![
                (1000, 20, 100000),
                (2000, 30, 200000),
                (3000, 15, 300000),
                (900, 14, 300000),
                (800, 13, 300000),
                (700, 12, 300000),
                (600, 11, 300000),
                (500, 10, 300000),
                (400, 9, 300000),
                (300, 8, 300000),
                (200, 7, 300000),
                (100, 6, 300000),
            ],
            empty_slots: 0,
            outputs: vec![
                (300, 8, 300000, None),
                (400, 9, 300000, None),
                (500, 10, 300000, None),
                (600, 11, 300000, None),
                (700, 12, 300000, None),
                (800, 13, 300000, None),
                (900, 14, 300000, None),
                (3000, 15, 300000, None),
                (1000, 20, 100000, Some(4000)),
                (2000, 30, 200000, Some(3000)),
            ],
        },
        // 2 - inserting offsets between existing entries
        Case {
            name: "2 insert between",
            min_distance_seconds: 1,
            log_end_offset: 5000,
            inputs: vec![
                (1000, 20, 100000),
                (2000, 30, 300000),
                (3000, 40, 400000),
                (1500, 25, 200000),
            ],
            empty_slots: 6,
            outputs: vec![
                (1000, 20, 100000, Some(4000)),
                (1500, 25, 200000, None),
                (2000, 30, 300000, Some(3000)),
                (3000, 40, 400000, Some(2000)),
            ],
        },
        // 3 - inserting an offset when the ring is full: the oldest goes
        Case {
            name: "3 insert into full",
            min_distance_seconds: 1,
            log_end_offset: 10000,
            inputs: vec![
                (1000, 10, 100000),
                (2000, 20, 200000),
                (3000, 30, 300000),
                (4000, 40, 400000),
                (5000, 50, 500000),
                (6000, 60, 600000),
                (7000, 70, 700000),
                (8000, 80, 800000),
                (9000, 90, 900000),
                (10000, 100, 1000000),
                (5500, 55, 550000),
            ],
            empty_slots: 0,
            outputs: vec![
                (2000, 20, 200000, Some(8000)),
                (3000, 30, 300000, Some(7000)),
                (4000, 40, 400000, Some(6000)),
                (5000, 50, 500000, Some(5000)),
                (5500, 55, 550000, None),
                (6000, 60, 600000, Some(4000)),
                (7000, 70, 700000, Some(3000)),
                (8000, 80, 800000, Some(2000)),
                (9000, 90, 900000, Some(1000)),
                (10000, 100, 1000000, Some(0)),
            ],
        },
        // 4 - replacing the oldest offset when the ring is full
        Case {
            name: "4 replace oldest",
            min_distance_seconds: 1,
            log_end_offset: 10000,
            inputs: vec![
                (1000, 10, 100000),
                (2000, 20, 200000),
                (3000, 30, 300000),
                (4000, 40, 400000),
                (5000, 50, 500000),
                (6000, 60, 600000),
                (7000, 70, 700000),
                (8000, 80, 800000),
                (9000, 90, 900000),
                (10000, 100, 1000000),
                (1500, 15, 150000),
            ],
            empty_slots: 0,
            outputs: vec![
                (1500, 15, 150000, None),
                (2000, 20, 200000, Some(8000)),
                (3000, 30, 300000, Some(7000)),
                (4000, 40, 400000, Some(6000)),
                (5000, 50, 500000, Some(5000)),
                (6000, 60, 600000, Some(4000)),
                (7000, 70, 700000, Some(3000)),
                (8000, 80, 800000, Some(2000)),
                (9000, 90, 900000, Some(1000)),
                (10000, 100, 1000000, Some(0)),
            ],
        },
        // 5 - replacing the most recent offset (frequent commit), keeping its timestamp
        Case {
            name: "5 merge into newest",
            min_distance_seconds: 1,
            log_end_offset: 10000,
            inputs: vec![
                (1000, 10, 100000),
                (2000, 20, 200000),
                (3000, 30, 300000),
                (4000, 40, 400000),
                (5000, 50, 500000),
                (6000, 60, 500001),
            ],
            empty_slots: 5,
            outputs: vec![
                (1000, 10, 100000, Some(9000)),
                (2000, 20, 200000, Some(8000)),
                (3000, 30, 300000, Some(7000)),
                (4000, 40, 400000, Some(6000)),
                (6000, 60, 500000, Some(4000)),
            ],
        },
        // 6 - replacing a previous offset (frequent commit)
        Case {
            name: "6 merge into previous",
            min_distance_seconds: 1,
            log_end_offset: 10000,
            inputs: vec![
                (1000, 10, 100000),
                (2000, 20, 200000),
                (3000, 30, 300000),
                (4000, 40, 400000),
                (5000, 50, 500000),
                (4500, 45, 400001),
            ],
            empty_slots: 5,
            outputs: vec![
                (1000, 10, 100000, Some(9000)),
                (2000, 20, 200000, Some(8000)),
                (3000, 30, 300000, Some(7000)),
                (4500, 45, 400000, None),
                (5000, 50, 500000, Some(5000)),
            ],
        },
        // TestInMemoryStorage_addConsumerOffset: an eleventh commit pushes the first out
        Case {
            name: "addConsumerOffset",
            min_distance_seconds: 1,
            log_end_offset: 4321,
            inputs: with_one_more((2000, 1000, 100_000)),
            empty_slots: 0,
            outputs: (0..10)
                .map(|i| {
                    let offset = 1100 + i * 100;
                    let order = if i == 9 { 1000 } else { 501 + i };
                    (
                        offset,
                        order,
                        10_000 + i * 10_000,
                        Some(4321 - offset as u64),
                    )
                })
                .collect(),
        },
        // TestInMemoryStorage_addConsumerOffset_MinDistance: a commit 1 ms less than
        // min-distance after the newest replaces it, keeping its timestamp
        Case {
            name: "addConsumerOffset_MinDistance",
            min_distance_seconds: 1,
            log_end_offset: 4321,
            inputs: with_one_more((2000, 1000, 90_001)),
            empty_slots: 0,
            outputs: (0..10)
                .map(|i| {
                    let (offset, order) = if i == 9 {
                        (2000, 1000)
                    } else {
                        (1000 + i * 100, 500 + i)
                    };
                    (offset, order, i * 10_000, Some(4321 - offset as u64))
                })
                .collect(),
        },
        // Burrow's code: with min-distance 0 (its default) only a commit timestamped
        // before the newest merges; the same timestamp is a new entry.
        Case {
            name: "min-distance 0",
            min_distance_seconds: 0,
            log_end_offset: 100,
            inputs: vec![(10, 1, 5000), (20, 2, 5000), (30, 3, 4000)],
            empty_slots: 8,
            outputs: vec![(10, 1, 5000, Some(90)), (30, 3, 5000, Some(70))],
        },
    ];
    for case in cases {
        let mut storage = Storage::new(StorageConfig {
            min_distance_seconds: case.min_distance_seconds,
            ..StorageConfig::default()
        })
        .expect("a valid config");
        storage.add_cluster(CLUSTER);
        storage
            .set_broker_offset(CLUSTER, TOPIC, 0, 1, case.log_end_offset, START_MS)
            .expect("stored");
        for (offset, order, timestamp) in case.inputs {
            let _ = storage.set_consumer_offset(
                CLUSTER,
                GROUP,
                TOPIC,
                0,
                commit(offset, order, START_MS + timestamp),
            );
        }
        let expected: Vec<Option<ConsumerOffset>> = std::iter::repeat_n(None, case.empty_slots)
            .chain(
                case.outputs
                    .into_iter()
                    .map(|(offset, order, timestamp, lag)| {
                        Some(stored(offset, order, START_MS + timestamp, lag))
                    }),
            )
            .collect();
        assert_eq!(
            partition_of(&mut storage, GROUP, 0).offsets,
            expected,
            "{}",
            case.name
        );
    }
}

#[test]
fn backfills_burrow_cannot_place_are_dropped() {
    // Burrow's findConsumerOffsetDestination: a full window drops a commit no newer than
    // its oldest; any window drops a second commit with an order it already holds.
    let mut storage = with_consumer_offsets("", START_MS);
    let cases = [
        (commit(1, 500, START_MS), Dropped::WindowFull),
        (commit(1, 499, START_MS), Dropped::WindowFull),
        (commit(1, 505, START_MS), Dropped::DuplicateOrder),
        (commit(1, 509, START_MS), Dropped::DuplicateOrder),
    ];
    let before = partition_of(&mut storage, GROUP, 0);
    for (commit, expected) in cases {
        assert_eq!(
            storage.set_consumer_offset(CLUSTER, GROUP, TOPIC, 0, commit),
            Err(expected),
            "order {}",
            commit.order
        );
    }
    assert_eq!(partition_of(&mut storage, GROUP, 0), before);
}

#[test]
fn group_allowlist_and_denylist() {
    // regexFilterTests: as an allowlist the match groups pass; as a denylist they fail.
    let cases: [(&str, &[&str], &[&str]); 4] = [
        (
            ".*",
            &["testgroup", "ok_group", "dash-group", "num02group"],
            &[],
        ),
        (
            "test.*",
            &["testgroup"],
            &["ok_group", "dash-group", "num02group"],
        ),
        (
            ".*[0-9]+.*",
            &["num02group"],
            &["ok_group", "dash-group", "testgroup"],
        ),
        (
            "onlygroup",
            &["onlygroup"],
            &["testgroup", "ok_group", "dash-group", "num02group"],
        ),
    ];
    for (pattern, matching, not_matching) in cases {
        let allowlist = Storage::new(burrow_config(pattern, "")).expect("valid");
        let denylist = Storage::new(burrow_config("", pattern)).expect("valid");
        for group in matching {
            assert!(allowlist.accepts_group(group), "{pattern} allows {group}");
            assert!(!denylist.accepts_group(group), "{pattern} denies {group}");
        }
        for group in not_matching {
            assert!(!allowlist.accepts_group(group), "{pattern} allows {group}");
            assert!(denylist.accepts_group(group), "{pattern} denies {group}");
        }
    }
}

#[test]
fn a_fetched_group_has_its_window_owner_and_current_lag() {
    // TestInMemoryStorage_fetchConsumer (with addConsumerOwner).
    let mut storage = with_consumer_offsets("", START_MS);
    storage
        .set_consumer_owner(
            CLUSTER,
            GROUP,
            TOPIC,
            0,
            "testhost.example.com",
            "test_client_id",
        )
        .expect("stored");
    let topics = storage
        .consumer(CLUSTER, GROUP, NOW_MS)
        .expect("the group is stored");
    assert_eq!(topics.keys().collect::<Vec<_>>(), [TOPIC]);
    let expected = ConsumerPartition {
        offsets: (0..10)
            .map(|i| {
                let offset = 1000 + i * 100;
                Some(stored(
                    offset,
                    500 + i,
                    START_MS + i * 10_000,
                    Some(4321 - offset as u64),
                ))
            })
            .collect(),
        broker_offsets: vec![4321],
        owner: "testhost.example.com".to_string(),
        client_id: "test_client_id".to_string(),
        current_lag: 2421,
    };
    assert_eq!(topics[TOPIC], [expected]);
}

#[test]
fn a_partition_count_change_reaches_the_group() {
    // Burrow's getConsumerPartition: a commit grows the group's topic to the brokers'
    // partition count; a partition never committed has no window, no lag.
    let mut storage = with_test_cluster("");
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 2, 500, 1)
        .expect("stored");
    storage
        .set_broker_offset(CLUSTER, TOPIC, 1, 2, 700, 1)
        .expect("stored");
    storage
        .set_consumer_offset(CLUSTER, GROUP, TOPIC, 0, commit(400, 1, START_MS))
        .expect("stored");
    let topics = storage.consumer(CLUSTER, GROUP, NOW_MS).expect("stored");
    let partitions = &topics[TOPIC];
    assert_eq!(partitions.len(), 2);
    assert_eq!(partitions[0].current_lag, 100);
    assert_eq!(partitions[0].offsets.len(), 10);
    assert_eq!(
        partitions[1],
        ConsumerPartition {
            broker_offsets: vec![700],
            ..ConsumerPartition::default()
        }
    );
    // The current lag is against the newest log end offset; a consumer ahead of it (the
    // broker offsets are read periodically) has zero lag.
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 2, 350, 2)
        .expect("stored");
    let topics = storage.consumer(CLUSTER, GROUP, NOW_MS).expect("stored");
    assert_eq!(topics[TOPIC][0].current_lag, 0);
    assert_eq!(topics[TOPIC][0].broker_offsets, [500, 350]);
}

#[test]
fn owners_are_set_and_cleared() {
    // TestInMemoryStorage_addConsumerOwner, and the clear Burrow's tests leave as a TODO.
    let mut storage = with_consumer_offsets("", START_MS);
    storage
        .set_consumer_owner(
            CLUSTER,
            GROUP,
            TOPIC,
            0,
            "testhost.example.com",
            "test_client_id",
        )
        .expect("stored");
    let partition = partition_of(&mut storage, GROUP, 0);
    assert_eq!(
        (partition.owner.as_str(), partition.client_id.as_str()),
        ("testhost.example.com", "test_client_id")
    );
    storage
        .clear_consumer_owners(CLUSTER, GROUP)
        .expect("the group exists");
    let partition = partition_of(&mut storage, GROUP, 0);
    assert_eq!(
        (partition.owner.as_str(), partition.client_id.as_str()),
        ("", "")
    );
    assert_eq!(partition.offsets.len(), 10, "commits stay");

    assert_eq!(
        storage.clear_consumer_owners(CLUSTER, "nogroup"),
        Err(Dropped::UnknownGroup)
    );
    assert_eq!(
        storage.clear_consumer_owners("nocluster", GROUP),
        Err(Dropped::UnknownCluster)
    );
    assert_eq!(storage.consumers(CLUSTER), Some(vec![GROUP.to_string()]));
}

#[test]
fn an_owner_alone_makes_a_group_with_empty_slots() {
    // Burrow's addConsumerOwner: the group is created first, the partition's window
    // too; a group with no commits has never committed, so its first fetch expires it.
    let mut storage = with_broker_offsets("");
    storage
        .set_consumer_owner(CLUSTER, "testgroup2", TOPIC, 0, "host", "client")
        .expect("stored");
    assert_eq!(
        storage.set_consumer_owner(CLUSTER, "testgroup3", "notopic", 0, "host", "client"),
        Err(Dropped::UnknownTopic)
    );
    assert_eq!(
        storage.consumers(CLUSTER),
        Some(vec!["testgroup2".to_string(), "testgroup3".to_string()])
    );
    assert_eq!(
        storage.consumers_for_topic(CLUSTER, TOPIC),
        Some(vec!["testgroup2".to_string()])
    );
    assert_eq!(storage.consumer(CLUSTER, "testgroup2", NOW_MS), None);
    assert_eq!(storage.consumer(CLUSTER, "testgroup3", NOW_MS), None);
    assert_eq!(storage.consumers(CLUSTER), Some(vec![]));

    // With a commit the owner's group stays, and its window shows the empty slots.
    let mut storage = with_consumer_offsets("", START_MS);
    storage
        .set_broker_offset(CLUSTER, TOPIC, 1, 2, 10, 1)
        .expect("stored");
    storage
        .set_consumer_owner(CLUSTER, GROUP, TOPIC, 1, "host", "client")
        .expect("stored");
    let partition = partition_of(&mut storage, GROUP, 1);
    assert_eq!(partition.offsets, vec![None; 10]);
    assert_eq!(
        (partition.owner.as_str(), partition.current_lag),
        ("host", 0)
    );
}

#[test]
fn groups_expire_after_expire_group() {
    struct Case {
        name: &'static str,
        expire_group_seconds: i64,
        /// The newest commit's timestamp, stored while it was recent.
        last_commit_ms: i64,
        /// When the group is fetched.
        fetch_ms: i64,
        kept: bool,
    }
    let cases = [
        // TestInMemoryStorage_fetchConsumer_Expired: commits from 1970 (timestamps
        // 1000000 + i*10000), fetched now.
        Case {
            name: "fetchConsumer_Expired",
            expire_group_seconds: 604_800,
            last_commit_ms: 1_090_000,
            fetch_ms: NOW_MS,
            kept: false,
        },
        // Burrow's code: expired when (now_s - expire-group) * 1000 > last commit.
        Case {
            name: "exactly expire-group old",
            expire_group_seconds: 60,
            last_commit_ms: NOW_MS - 60_000,
            fetch_ms: NOW_MS,
            kept: true,
        },
        Case {
            name: "a millisecond older",
            expire_group_seconds: 60,
            last_commit_ms: NOW_MS - 60_001,
            fetch_ms: NOW_MS,
            kept: false,
        },
        Case {
            name: "now read in whole seconds",
            expire_group_seconds: 60,
            last_commit_ms: NOW_MS - 60_000,
            fetch_ms: NOW_MS + 999,
            kept: true,
        },
    ];
    for case in cases {
        let mut storage = Storage::new(StorageConfig {
            expire_group_seconds: case.expire_group_seconds,
            ..StorageConfig::default()
        })
        .expect("valid");
        storage.add_cluster(CLUSTER);
        storage
            .set_broker_offset(CLUSTER, TOPIC, 0, 1, 4321, 9876)
            .expect("stored");
        let first = OffsetCommit {
            offset: 1000,
            order: 1,
            timestamp_ms: case.last_commit_ms - 10_000,
            observed_ms: case.last_commit_ms,
        };
        let last = OffsetCommit {
            offset: 1100,
            order: 2,
            timestamp_ms: case.last_commit_ms,
            observed_ms: case.last_commit_ms,
        };
        for commit in [first, last] {
            storage
                .set_consumer_offset(CLUSTER, GROUP, TOPIC, 0, commit)
                .expect("recent when observed");
        }
        assert_eq!(
            storage.consumer(CLUSTER, GROUP, case.fetch_ms).is_some(),
            case.kept,
            "{}",
            case.name
        );
        let listed = if case.kept {
            vec![GROUP.to_string()]
        } else {
            vec![]
        };
        assert_eq!(storage.consumers(CLUSTER), Some(listed), "{}", case.name);
    }
}

#[test]
fn commits_older_than_expire_group_are_dropped_when_seen() {
    // Burrow's code: a commit is dropped when its timestamp < (now_s - expire-group) * 1000.
    let cases = [
        (NOW_MS - 60_000, NOW_MS, Ok(())),
        (NOW_MS - 60_001, NOW_MS, Err(Dropped::OffsetTooOld)),
        (NOW_MS - 60_000, NOW_MS + 999, Ok(())),
        (NOW_MS - 60_000, NOW_MS + 1000, Err(Dropped::OffsetTooOld)),
    ];
    for (timestamp_ms, observed_ms, expected) in cases {
        let mut storage = Storage::new(StorageConfig {
            expire_group_seconds: 60,
            ..StorageConfig::default()
        })
        .expect("valid");
        storage.add_cluster(CLUSTER);
        storage
            .set_broker_offset(CLUSTER, TOPIC, 0, 1, 4321, 9876)
            .expect("stored");
        let commit = OffsetCommit {
            offset: 1,
            order: 1,
            timestamp_ms,
            observed_ms,
        };
        assert_eq!(
            storage.set_consumer_offset(CLUSTER, GROUP, TOPIC, 0, commit),
            expected,
            "commit at {timestamp_ms} seen at {observed_ms}"
        );
    }
}

#[test]
fn only_appends_refresh_a_group() {
    // Burrow's code: the group's last commit moves on an append, not on a backfill, so a
    // group fed only old commits expires.
    let mut storage = Storage::new(StorageConfig {
        expire_group_seconds: 60,
        ..StorageConfig::default()
    })
    .expect("valid");
    storage.add_cluster(CLUSTER);
    storage
        .set_broker_offset(CLUSTER, TOPIC, 0, 1, 4321, 9876)
        .expect("stored");
    let at = |order, timestamp_ms| OffsetCommit {
        offset: 10,
        order,
        timestamp_ms,
        observed_ms: NOW_MS,
    };
    storage
        .set_consumer_offset(CLUSTER, GROUP, TOPIC, 0, at(10, NOW_MS - 59_000))
        .expect("appended");
    storage
        .set_consumer_offset(CLUSTER, GROUP, TOPIC, 0, at(5, NOW_MS))
        .expect("backfilled");
    assert!(storage.consumer(CLUSTER, GROUP, NOW_MS + 1000).is_some());
    assert!(storage.consumer(CLUSTER, GROUP, NOW_MS + 2000).is_none());
}

#[test]
fn deletes() {
    struct Case {
        name: &'static str,
        delete: fn(&mut Storage),
        topics: Vec<&'static str>,
        groups: Vec<&'static str>,
        /// The topics `testgroup` has, when it is still there.
        group_topics: Vec<&'static str>,
    }
    let cases = [
        Case {
            name: "deleteTopic",
            delete: |storage| storage.delete_topic(CLUSTER, TOPIC).expect("known cluster"),
            topics: vec![],
            groups: vec![GROUP],
            group_topics: vec![],
        },
        Case {
            name: "deleteTopic_BadCluster",
            delete: |storage| {
                assert_eq!(
                    storage.delete_topic("nocluster", TOPIC),
                    Err(Dropped::UnknownCluster)
                )
            },
            topics: vec![TOPIC],
            groups: vec![GROUP],
            group_topics: vec![TOPIC],
        },
        Case {
            name: "deleteTopic_NoTopic",
            delete: |storage| {
                storage
                    .delete_topic(CLUSTER, "notopic")
                    .expect("known cluster")
            },
            topics: vec![TOPIC],
            groups: vec![GROUP],
            group_topics: vec![TOPIC],
        },
        Case {
            name: "deleteGroup",
            delete: |storage| storage.delete_group(CLUSTER, GROUP).expect("known cluster"),
            topics: vec![TOPIC],
            groups: vec![],
            group_topics: vec![],
        },
        Case {
            name: "deleteGroup_BadCluster",
            delete: |storage| {
                assert_eq!(
                    storage.delete_group("nocluster", GROUP),
                    Err(Dropped::UnknownCluster)
                )
            },
            topics: vec![TOPIC],
            groups: vec![GROUP],
            group_topics: vec![TOPIC],
        },
        Case {
            name: "deleteGroup_NoGroup",
            delete: |storage| {
                storage
                    .delete_group(CLUSTER, "nogroup")
                    .expect("known cluster")
            },
            topics: vec![TOPIC],
            groups: vec![GROUP],
            group_topics: vec![TOPIC],
        },
        // Burrow's deleteGroup with a topic (the HTTP API's delete): only that topic
        // goes while the group has others; the group goes with its last topic.
        Case {
            name: "delete a group's topic, others left",
            delete: |storage| {
                assert_eq!(
                    storage.delete_group_topic(CLUSTER, GROUP, TOPIC),
                    Ok(GroupDeletion::Topic)
                )
            },
            topics: vec!["othertopic", TOPIC],
            groups: vec![GROUP],
            group_topics: vec!["othertopic"],
        },
        Case {
            name: "delete a group's last topic",
            delete: |storage| {
                storage
                    .delete_topic(CLUSTER, "othertopic")
                    .expect("known cluster");
                assert_eq!(
                    storage.delete_group_topic(CLUSTER, GROUP, TOPIC),
                    Ok(GroupDeletion::Group)
                )
            },
            topics: vec![TOPIC],
            groups: vec![],
            group_topics: vec![],
        },
        Case {
            name: "delete a group's topic, no topic named",
            delete: |storage| {
                assert_eq!(
                    storage.delete_group_topic(CLUSTER, GROUP, ""),
                    Ok(GroupDeletion::Group)
                )
            },
            topics: vec!["othertopic", TOPIC],
            groups: vec![],
            group_topics: vec![],
        },
    ];
    for case in cases {
        let mut storage = with_consumer_offsets("", START_MS);
        if case.name.starts_with("delete a group's") {
            storage
                .set_broker_offset(CLUSTER, "othertopic", 0, 1, 10, 1)
                .expect("stored");
            storage
                .set_consumer_offset(CLUSTER, GROUP, "othertopic", 0, commit(5, 1, START_MS))
                .expect("stored");
        }
        (case.delete)(&mut storage);
        let strings = |names: &[&str]| names.iter().map(|name| name.to_string()).collect();
        assert_eq!(
            storage.topics(CLUSTER),
            Some(strings(&case.topics)),
            "{}",
            case.name
        );
        assert_eq!(
            storage.consumers(CLUSTER),
            Some(strings(&case.groups)),
            "{}",
            case.name
        );
        if !case.groups.is_empty() {
            let topics = storage.consumer(CLUSTER, GROUP, NOW_MS).expect("kept");
            let names: Vec<&str> = topics.keys().map(String::as_str).collect();
            assert_eq!(names, case.group_topics, "{}", case.name);
        }
    }
}

#[test]
fn list_fetches() {
    // fetchClusterList, fetchTopicList, fetchConsumerList, fetchTopic,
    // fetchConsumersForTopic (one, two and no consumers).
    let mut storage = with_consumer_offsets("", START_MS);
    assert_eq!(storage.clusters(), [CLUSTER]);
    assert_eq!(storage.topics(CLUSTER), Some(vec![TOPIC.to_string()]));
    assert_eq!(storage.consumers(CLUSTER), Some(vec![GROUP.to_string()]));
    assert_eq!(storage.topic(CLUSTER, TOPIC), Some(vec![4321]));
    assert_eq!(
        storage.consumers_for_topic(CLUSTER, TOPIC),
        Some(vec![GROUP.to_string()])
    );
    for group in [GROUP, "testgroup2"] {
        storage
            .set_consumer_owner(
                CLUSTER,
                group,
                TOPIC,
                0,
                "testhost.example.com",
                "test_client_id",
            )
            .expect("stored");
    }
    assert_eq!(
        storage.consumers_for_topic(CLUSTER, TOPIC),
        Some(vec![GROUP.to_string(), "testgroup2".to_string()])
    );
    assert_eq!(
        storage.consumers_for_topic(CLUSTER, "someNonExistentTopic"),
        Some(vec![])
    );
}

#[test]
fn fetches_for_unknown_names_are_not_found() {
    // The _BadCluster, _BadTopic and _BadGroup fetch cases: Burrow closes the reply
    // without a value.
    let mut storage = with_consumer_offsets("", START_MS);
    assert_eq!(storage.topics("nocluster"), None);
    assert_eq!(storage.consumers("nocluster"), None);
    assert_eq!(storage.topic("nocluster", TOPIC), None);
    assert_eq!(storage.topic(CLUSTER, "notopic"), None);
    assert_eq!(storage.consumer("nocluster", GROUP, NOW_MS), None);
    assert_eq!(storage.consumer(CLUSTER, "nogroup", NOW_MS), None);
    assert_eq!(
        storage.consumers_for_topic("nonExistentCluster", TOPIC),
        None
    );
    assert_eq!(storage.broker_offsets(CLUSTER, TOPIC, -1), None);
}
